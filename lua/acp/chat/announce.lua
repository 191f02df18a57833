--- What a drain's events mean for the `User` autocmds (acp.events): read
--- once per `ChatView:apply`, after the buffer edits, with what each chat
--- already announced (its session, its cards, its disk writes) so that
--- each occurrence fires once.
local autocmds = require('acp.events')

local M = {}

-- What was already announced, per chat (weak: a closed chat is forgotten).
local seen = setmetatable({}, { __mode = 'k' })

local function seen_of(view)
  local s = seen[view]
  if not s then
    s = { session = nil, cards = {}, writes = {} }
    seen[view] = s
  end
  return s
end

local function card_key(c)
  local locs = {}
  for _, l in ipairs(c.locations or {}) do
    locs[#locs + 1] = tostring(l.path) .. ':' .. tostring(l.line or '')
  end
  return table.concat({ tostring(c.kind), tostring(c.status), tostring(c.client_state), tostring(c.title), table.concat(locs, ',') }, '\0')
end

local function locations(c)
  local out = {}
  for _, l in ipairs(c.locations or {}) do
    out[#out + 1] = { path = l.path, line = l.line }
  end
  return out
end

local finished = { completed = true, failed = true }

--- Files this chat's agent wrote to disk through `fs/write_text_file`
--- (not in a buffer: buffer writes are announced where they happen).
local function disk_writes(view, s)
  local core = require('acp.core')
  if not core.is_loaded() then
    return
  end
  local ok, records = pcall(core.writes, view.thread)
  if not ok then
    return
  end
  for _, r in ipairs(records or {}) do
    local before = s.writes[r.path] or 0
    if r.changes > before then
      s.writes[r.path] = r.changes
      if r.target == 'disk' then
        local buf = vim.fn.bufnr(r.path)
        autocmds.emit('AcpFileChanged', {
          path = r.path,
          bufnr = buf > 0 and buf or nil,
          by = 'agent',
          how = 'disk',
          agent = view.agent,
          thread = view.thread,
        })
      end
    end
  end
end

--- Reads one drain's events of `view` after they were applied, and queues
--- the autocmds they mean. Called once per `ChatView:apply`.
---@param view acp.ChatView
---@param events acp.Event[]
function M.observe(view, events)
  local s = seen_of(view)
  local writes_due = false
  local tool_calls_heard -- asked at the first card
  -- The chat's own wording of an error: the notice entry shown with it (in
  -- this drain or an earlier one of the turn: a drain may end between them).
  for _, ev in ipairs(events) do
    local t = ev.type
    if t == 'added' and ev.kind == 'notice' and type(ev.lines) == 'table' then
      s.notice = vim.trim(table.concat(ev.lines, ' '))
    elseif t == 'session' and ev.session_id ~= s.session then
      s.session = ev.session_id
      autocmds.emit('AcpSessionStart', { agent = view.agent, thread = view.thread, session_id = ev.session_id, cwd = view.root })
    elseif t == 'turn_started' then
      s.notice = nil
      autocmds.emit('AcpTurnStart', { agent = view.agent, thread = view.thread, session_id = s.session, turn = ev.turn })
    elseif t == 'turn_ended' then
      writes_due = true
      autocmds.emit('AcpTurnEnd', {
        agent = view.agent,
        thread = view.thread,
        session_id = s.session,
        turn = ev.turn,
        stop_reason = ev.stop_reason,
        duration_ms = ev.duration_ms,
        usage = view.info.usage,
      })
      if ev.stop_reason == 'error' then
        autocmds.emit('AcpError', {
          agent = view.agent,
          thread = view.thread,
          source = 'turn',
          message = s.notice or 'the prompt failed',
        })
      end
      s.notice = nil
    elseif t == 'card' and type(ev.card) == 'table' then
      local c = ev.card
      writes_due = writes_due or finished[c.status] == true
      -- A burst of a hundred cards is 200 of these: no key or payload is
      -- built while nobody listens (a listener added later hears the
      -- cards' next changes).
      if tool_calls_heard == nil then
        tool_calls_heard = autocmds.heard('AcpToolCall')
      end
      local key = tool_calls_heard and card_key(c)
      if key and s.cards[ev.index] ~= key then
        s.cards[ev.index] = key
        autocmds.emit('AcpToolCall', {
          agent = view.agent,
          thread = view.thread,
          index = ev.index,
          id = c.id,
          kind = c.kind,
          status = c.status,
          client_state = c.client_state,
          title = c.title,
          locations = locations(c),
        })
      end
    elseif t == 'permission' then
      local p = ev.payload
      local options = {}
      for _, o in ipairs(p.options) do
        options[#options + 1] = { id = o.id, name = o.name, kind = o.kind }
      end
      autocmds.emit('AcpPermissionRequest', {
        agent = view.agent,
        thread = view.thread,
        request = ev.request,
        id = p.tool_call_id,
        title = p.title,
        kind = p.kind,
        options = options,
      })
    elseif t == 'status' and ev.state == 'disconnected' then
      autocmds.emit('AcpError', {
        agent = view.agent,
        thread = view.thread,
        source = 'agent',
        message = s.notice or 'the agent disconnected',
      })
      s.notice = nil
    end
  end
  if writes_due then
    disk_writes(view, s)
  end
end

return M
