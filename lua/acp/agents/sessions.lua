--- Sessions of the agent: `:AcpSessions` lists them (`session/list`,
--- every page) with the chats of this agent kept for the project (the
--- core's `kept_chats`, also for agents without `session/list`); picking
--- one opens it in the chat: a kept chat with its kept transcript (then
--- its session resumed when the agent can), another session with
--- `session/load` when advertised (its replayed history fills a fresh
--- transcript), else `session/resume`; close and delete when advertised,
--- after a confirmation. `:AcpNew` starts a fresh session, `:AcpResume`
--- opens the chat's last session again (after the agent stopped).
local M = {}

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.INFO)
end

--- Most pages read for one listing (a guard against a cursor that loops).
M.max_pages = 50

local function session_caps(view)
  local caps = type(view.capabilities) == 'table' and view.capabilities or {}
  return type(caps.sessionCapabilities) == 'table' and caps.sessionCapabilities or {}, caps
end

local function advertised(v)
  return v ~= nil and v ~= false and v ~= vim.NIL
end

--- The agent can open a stored session (resume or load).
function M.can_open(view)
  local sc, caps = session_caps(view)
  return advertised(sc.resume) or caps.loadSession == true
end

--- Reads every page of `session/list` for the chat's project, then
--- `done(sessions)` (or `done(nil, err)`).
function M.list(view, done)
  local sessions, pages = {}, 0
  local controls = require('acp.agents.controls')
  local function page(cursor)
    pages = pages + 1
    local params = { cwd = view.root }
    if cursor then
      params.cursor = cursor
    end
    controls.request(view, 'session/list', params, function(ev)
      if ev.error then
        return done(nil, ev.error)
      end
      local result = type(ev.result) == 'table' and ev.result or {}
      for _, s in ipairs(type(result.sessions) == 'table' and result.sessions or {}) do
        if type(s) == 'table' and type(s.sessionId) == 'string' then
          sessions[#sessions + 1] = s
        end
      end
      local nxt = result.nextCursor
      if type(nxt) == 'string' and nxt ~= '' and nxt ~= cursor and pages < M.max_pages then
        return page(nxt)
      end
      done(sessions)
    end)
  end
  page(nil)
end

--- How a session reads in the picker: title and time (the live ones for
--- the chat's own session), cwd.
function M.format(view, s)
  local title = s.title
  if s.sessionId == view.info.session and view.info.title then
    title = view.info.title
  end
  -- The live session's last activity, as its `session_info_update` said.
  local updated = s.sessionId == view.info.session and view.info.updated_at or s.updatedAt
  local time = type(updated) == 'string' and updated:gsub('T', ' '):gsub('%.%d+', ''):gsub('Z$', '') or ''
  local cwd = type(s.cwd) == 'string' and vim.fn.fnamemodify(s.cwd, ':~') or ''
  local here = s.sessionId == view.info.session and ' (this chat)' or ''
  -- The agent's text: one line (a title with newlines would show as
  -- several rows of the list), capped so that time and folder stay visible.
  local esc = require('acp.util.escape')
  return ('%s%s  %s  %s'):format(esc.line(title or s.sessionId, 120), here, esc.line(time, 40), esc.line(cwd, 120))
end

--- Opens `session_id` in the chat (a fresh transcript for its history)
--- with `reopen(view, { resume = session_id })`: the chat layer's, passed
--- down by the caller (a chat is replaced above this layer).
function M.open(view, session_id, reopen)
  if not M.can_open(view) then
    return notify(('%s cannot load sessions'):format(view.agent), vim.log.levels.WARN)
  end
  return reopen(view, { resume = session_id })
end

--- The chats of `view`'s agent kept for its project, newest first, one
--- per session, without `view`'s own; a file that could not be read is
--- named in a notice (and skipped).
function M.kept(view)
  local core = require('acp.core')
  local ok, res = pcall(core.kept_chats, view.root)
  if not ok then
    notify('kept chats could not be listed: ' .. require('acp.util.text').error(res), vim.log.levels.WARN)
    return {}
  end
  local esc = require('acp.util.escape')
  local problems = type(res.problems) == 'table' and res.problems or {}
  if #problems > 0 then
    notify(
      ('%d kept chat file(s) could not be read and are not listed (delete them to be rid of this notice): %s'):format(
        #problems,
        esc.line(problems[1], 300)
      ),
      vim.log.levels.WARN
    )
  end
  local own_ok, info = pcall(core.thread_info, view.thread)
  local own = own_ok and info.kept_id or nil
  local out, sessions = {}, {}
  for _, h in ipairs(type(res.chats) == 'table' and res.chats or {}) do
    local sid = type(h.session_id) == 'string' and h.session_id or nil
    if h.agent == view.agent and h.id ~= own and not (sid and sessions[sid]) then
      if sid then
        sessions[sid] = true
      end
      out[#out + 1] = h
    end
  end
  return out
end

--- How a kept chat reads in the picker: title, time, "kept".
function M.format_kept(h)
  local esc = require('acp.util.escape')
  local time = type(h.updated) == 'number' and os.date('%Y-%m-%d %H:%M', h.updated) or ''
  local title = type(h.title) == 'string' and h.title ~= '' and h.title or 'untitled chat'
  return ('%s  %s  (kept)'):format(esc.line(title, 120), esc.line(time, 40))
end

--- Opens kept chat `h` in the chat: its kept transcript, then its session
--- when the agent can open it (else a new one); `reopen` as for `M.open`.
function M.open_kept(view, h, reopen)
  return reopen(view, { resume = type(h.session_id) == 'string' and h.session_id or nil, kept = h.id })
end

local function confirm(prompt, yes)
  require('acp.util.escape').select({ 'No', 'Yes' }, { prompt = prompt }, function(choice)
    if choice == 'Yes' then
      yes()
    end
  end)
end

--- Closes or deletes a listed session (after the user confirmed).
function M.act(view, s, action)
  local method = 'session/' .. action
  local label = require('acp.util.escape').line(s.title or s.sessionId, 120)
  confirm(('%s session %q?'):format(action == 'close' and 'Close' or 'Delete', label), function()
    require('acp.agents.controls').request(view, method, { sessionId = s.sessionId }, function(ev)
      if ev.error then
        return notify(('%s of %q failed: %s'):format(method, label, ev.error), vim.log.levels.ERROR)
      end
      notify(('session %q %s'):format(label, action == 'close' and 'closed' or 'deleted'))
    end)
  end)
end

--- `:AcpSessions`: pick a session, then resume it (or close / delete it
--- when the agent supports that); `reopen` as for `M.open`.
function M.pick(view, reopen)
  if view.capabilities == nil then
    return notify('the agent is still starting; try again in a moment')
  end
  local sc = session_caps(view)
  local kept = M.kept(view)
  if not advertised(sc.list) then
    if #kept > 0 then
      return M.pick_from(view, {}, kept, sc, reopen)
    end
    local hint = M.can_open(view) and view.info.session and ' (:AcpResume opens this chat\'s last session)' or ''
    return notify(('%s does not list its sessions%s'):format(view.agent, hint), vim.log.levels.WARN)
  end
  M.list(view, function(sessions, err)
    if not sessions then
      if #kept > 0 then
        notify('session/list failed: ' .. tostring(err) .. ' (the kept chats are listed)', vim.log.levels.WARN)
        return M.pick_from(view, {}, kept, sc, reopen)
      end
      return notify('session/list failed: ' .. tostring(err), vim.log.levels.ERROR)
    end
    if #sessions == 0 and #kept == 0 then
      return notify(('%s has no sessions for %s'):format(view.agent, view.root))
    end
    M.pick_from(view, sessions, kept, sc, reopen)
  end)
end

--- The picker of `:AcpSessions`: the agent's `sessions`, each opened with
--- its kept transcript when one is kept, then the other `kept` chats.
function M.pick_from(view, sessions, kept, sc, reopen)
  local by_session, items = {}, {}
  for _, h in ipairs(kept) do
    if h.session_id then
      by_session[h.session_id] = h
    end
  end
  local listed = {}
  for _, s in ipairs(sessions) do
    items[#items + 1] = { session = s, kept = by_session[s.sessionId] }
    listed[s.sessionId] = true
  end
  for _, h in ipairs(kept) do
    if not (h.session_id and listed[h.session_id]) then
      items[#items + 1] = { kept = h }
    end
  end
  require('acp.util.escape').select(items, {
    prompt = 'Session',
    format_item = function(it)
      return it.session and M.format(view, it.session) or M.format_kept(it.kept)
    end,
  }, function(it)
    if not it then
      return
    end
    if not it.session then
      return M.open_kept(view, it.kept, reopen)
    end
    local s = it.session
    do
      local actions = {}
      if M.can_open(view) then
        actions[#actions + 1] = 'resume'
      end
      if advertised(sc.close) then
        actions[#actions + 1] = 'close'
      end
      if advertised(sc.delete) then
        actions[#actions + 1] = 'delete'
      end
      local function open()
        if it.kept then
          return M.open_kept(view, it.kept, reopen)
        end
        return M.open(view, s.sessionId, reopen)
      end
      if #actions == 1 and actions[1] == 'resume' then
        return open()
      elseif #actions == 0 then
        if it.kept then
          return open()
        end
        return notify(('%s cannot open sessions'):format(view.agent), vim.log.levels.WARN)
      end
      require('acp.util.escape').select(actions, { prompt = M.format(view, s) }, function(action)
        if action == 'resume' then
          open()
        elseif action then
          M.act(view, s, action)
        end
      end)
    end
  end)
end

--- `:AcpResume [id]`: opens session `id`, or the chat's last one;
--- `reopen` as for `M.open`.
function M.resume(view, id, reopen)
  id = (id and id ~= '') and id or view.info.session or view.history_of
  if not id then
    return notify('this chat has no session to resume yet', vim.log.levels.WARN)
  end
  return M.open(view, id, reopen)
end

--- After the agent stopped: says how to get the conversation back.
function M.offer_after_exit(view)
  local sid = view.info.session
  if sid and M.can_open(view) then
    view:notice({
      ('The agent stopped. :AcpResume opens session %s again; a new message starts a new session.'):format(sid),
    }, 'WarningMsg')
  end
end

return M
