--- `User` autocmds for other plugins and user config (`:h acp-events`).
--- Each fires once per occurrence, with its payload in `data`, and never
--- while a chat buffer is being edited: a drain's events are read after
--- `ChatView:apply` and the autocmds run from the next loop iteration.
---
---   AcpSessionStart       { agent, thread, session_id, cwd }
---   AcpTurnStart          { agent, thread, session_id, turn }
---   AcpTurnEnd            { agent, thread, session_id, turn, stop_reason, duration_ms, usage? }
---   AcpToolCall           { agent, thread, id, kind, status, title, locations }
---   AcpPermissionRequest  { agent, thread, request, id, title, kind, options }
---   AcpFileChanged        { path, bufnr?, by = 'agent'|'sync', how, thread? , agent? }
---   AcpError              { message, agent?, thread?, source }
local M = {}

local api = vim.api

--- The names, in the order of the docs.
M.names = {
  'AcpSessionStart',
  'AcpTurnStart',
  'AcpTurnEnd',
  'AcpToolCall',
  'AcpPermissionRequest',
  'AcpFileChanged',
  'AcpError',
}

local queue = {}
local scheduled = false

--- Runs the queued autocmds (in order). An error in a user's handler is
--- reported by Neovim and does not stop the others.
function M.flush()
  scheduled = false
  local list = queue
  queue = {}
  for _, e in ipairs(list) do
    local ok, err = pcall(api.nvim_exec_autocmds, 'User', { pattern = e.name, data = e.data, modeline = false })
    if not ok then
      vim.notify(('acp.nvim: a %s handler failed: %s'):format(e.name, tostring(err)), vim.log.levels.ERROR)
    end
  end
end

--- Queues `User {name}` with `data`; it fires on the next loop iteration.
---@param name string
---@param data table
function M.emit(name, data)
  queue[#queue + 1] = { name = name, data = data }
  if not scheduled then
    scheduled = true
    vim.schedule(M.flush)
  end
end

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
        M.emit('AcpFileChanged', {
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
  -- The chat's own wording of an error: the notice entry shown with it.
  local notice
  for _, ev in ipairs(events) do
    local t = ev.type
    if t == 'added' and ev.kind == 'notice' and type(ev.lines) == 'table' then
      notice = vim.trim(table.concat(ev.lines, ' '))
    elseif t == 'session' and ev.session_id ~= s.session then
      s.session = ev.session_id
      M.emit('AcpSessionStart', { agent = view.agent, thread = view.thread, session_id = ev.session_id, cwd = view.root })
    elseif t == 'turn_started' then
      M.emit('AcpTurnStart', { agent = view.agent, thread = view.thread, session_id = s.session, turn = ev.turn })
    elseif t == 'turn_ended' then
      writes_due = true
      M.emit('AcpTurnEnd', {
        agent = view.agent,
        thread = view.thread,
        session_id = s.session,
        turn = ev.turn,
        stop_reason = ev.stop_reason,
        duration_ms = ev.duration_ms,
        usage = view.info.usage,
      })
      if ev.stop_reason == 'error' then
        M.emit('AcpError', {
          agent = view.agent,
          thread = view.thread,
          source = 'turn',
          message = notice or 'the prompt failed',
        })
      end
    elseif t == 'card' and type(ev.card) == 'table' then
      local c = ev.card
      local key = card_key(c)
      if s.cards[ev.index] ~= key then
        s.cards[ev.index] = key
        writes_due = writes_due or finished[c.status] == true
        M.emit('AcpToolCall', {
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
      local call = type(ev.payload) == 'table' and ev.payload.toolCall or {}
      local options = {}
      for _, o in ipairs(type(ev.payload) == 'table' and ev.payload.options or {}) do
        options[#options + 1] = { id = o.optionId, name = o.name, kind = o.kind }
      end
      local kind = call.kind
      if not kind then
        for _, c in pairs(view.cards) do
          if c.id == call.toolCallId then
            kind = c.kind
          end
        end
      end
      M.emit('AcpPermissionRequest', {
        agent = view.agent,
        thread = view.thread,
        request = ev.request,
        id = call.toolCallId,
        title = call.title,
        kind = kind,
        options = options,
      })
    elseif t == 'status' and ev.state == 'disconnected' then
      M.emit('AcpError', {
        agent = view.agent,
        thread = view.thread,
        source = 'agent',
        message = notice or 'the agent disconnected',
      })
    end
  end
  if writes_due then
    disk_writes(view, s)
  end
end

--- A buffer's text changed because of an agent: its write through
--- `fs/write_text_file` (`by = 'agent'`), or the buffer sync that took the
--- file's new disk text (`by = 'sync'`).
---@param info { path: string, bufnr?: integer, by: 'agent'|'sync', how: string, thread?: integer }
function M.file_changed(info)
  local view = info.thread and require('acp.core.dispatch').handlers[info.thread]
  info.agent = view and view.agent or nil
  M.emit('AcpFileChanged', info)
end

--- An error the user should know about that is not tied to a turn: a
--- core message of level error, or a view error.
function M.error(message, source, thread)
  local view = thread and require('acp.core.dispatch').handlers[thread]
  M.emit('AcpError', { message = message, source = source, thread = thread, agent = view and view.agent or nil })
end

return M
