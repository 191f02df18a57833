--- `User` autocmds for other plugins and user config (`:h acp-events`).
--- Each fires once per occurrence, with its payload in `data`, and never
--- while a chat buffer is being edited: a drain's events are read after
--- `ChatView:apply` (acp.chat.announce) and the autocmds run from the next
--- loop iteration. This module requires nothing of the plugin: whoever
--- emits says which chat and agent it is about.
---
---   AcpSessionStart       { agent, thread, session_id, cwd }
---   AcpTurnStart          { agent, thread, session_id, turn }
---   AcpTurnEnd            { agent, thread, session_id, turn, stop_reason, duration_ms, usage? }
---   AcpToolCall           { agent, thread, id, kind, status, title, locations }
---   AcpPermissionRequest  { agent, thread, request, id, title, kind, options }
---   AcpFileChanged        { path, bufnr?, by = 'agent'|'sync', how, thread? , agent? }
---   AcpError              { message, agent?, thread?, source }
---   AcpStateChanged       { agent, thread, state, waiting, waiting_for?, done_unseen }
---   AcpAttention          { reason, agent, thread, title?, message? }
-- May use: nothing.
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
  'AcpStateChanged',
  'AcpAttention',
}

local queue = {}
local scheduled = false

--- Whether a `User` autocmd matches `name` (its patterns are file
--- patterns: `Acp*` listens to all of them).
---@param name string
---@return boolean
local function heard_by_someone(name)
  local ok, cmds = pcall(api.nvim_get_autocmds, { event = 'User' })
  if not ok then
    return true
  end
  for _, c in ipairs(cmds) do
    local pat = c.pattern
    if pat == name or pat == '*' then
      return true
    end
    if pat and pat:find('[*?%[{\\]') then
      local rok, re = pcall(vim.regex, vim.fn.glob2regpat(pat))
      if not rok or re:match_str(name) then
        return true
      end
    end
  end
  return false
end

--- Runs the queued autocmds (in order). An error in a user's handler is
--- reported by Neovim and does not stop the others.
function M.flush()
  scheduled = false
  local list = queue
  queue = {}
  -- Whether anyone listens (a burst of a hundred tool cards is 200
  -- AcpToolCall, each an autocmd call with its data): asked once per name
  -- until a handler runs (it may add or remove handlers).
  local heard = {}
  for _, e in ipairs(list) do
    if heard[e.name] == nil then
      heard[e.name] = heard_by_someone(e.name)
    end
    local ok, err = true, nil
    if heard[e.name] then
      ok, err = pcall(api.nvim_exec_autocmds, 'User', { pattern = e.name, data = e.data, modeline = false })
      heard = {}
    end
    if not ok then
      vim.notify(('acp.nvim: a %s handler failed: %s'):format(e.name, tostring(err)), vim.log.levels.ERROR)
    end
  end
end

--- Whether a `User` autocmd listens to `name` now: an emitter of many
--- occurrences may skip building payloads nobody reads.
---@param name string
---@return boolean
function M.heard(name)
  return heard_by_someone(name)
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

--- A buffer's text changed because of an agent: its write through
--- `fs/write_text_file` (`by = 'agent'`), or the buffer sync that took the
--- file's new disk text (`by = 'sync'`).
---@param info { path: string, bufnr?: integer, by: 'agent'|'sync', how: string, thread?: integer, agent?: string }
function M.file_changed(info)
  M.emit('AcpFileChanged', info)
end

--- An error the user should know about that is not tied to a turn: a
--- core message of level error, or a view error.
---@param message string
---@param source string
---@param thread? integer
---@param agent? string
function M.error(message, source, thread, agent)
  M.emit('AcpError', { message = message, source = source, thread = thread, agent = agent })
end

return M
