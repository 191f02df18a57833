--- The prompt queue: a message sent while a turn runs (or while a session
--- loads) waits here, shown below the transcript as pending, and is sent
--- when the turn ends. `:AcpQueue` edits (back into the input area) or
--- drops one. With `queue = 'agent'`, agents that queue prompts themselves
--- (`_meta.claudeCode.promptQueueing`, `_meta.steering`) get it at once.
local config = require('acp.config')

local api = vim.api
local ns = api.nvim_create_namespace('acp_queue')

api.nvim_set_hl(0, 'AcpQueued', { link = 'Comment', default = true })

local M = {}

--- The agent queues prompts itself (advertised in its capabilities' `_meta`).
function M.agent_queues(view)
  local meta = type(view.capabilities) == 'table' and view.capabilities._meta or nil
  if type(meta) ~= 'table' then
    return false
  end
  local claude = type(meta.claudeCode) == 'table' and meta.claudeCode or {}
  return claude.promptQueueing == true or meta.steering == true
    or (type(meta.steering) == 'table')
end

--- Whether a message sent now must wait: a turn runs, or a session loads.
function M.busy(view)
  return view.state == 'running' or (view.state == 'connecting' and view.status_detail == 'loading session')
end

--- How a message sent now goes: 'queue' (waits here), 'agent' (sent now,
--- the agent queues it), or 'send'.
function M.route(view)
  if not M.busy(view) then
    return 'send'
  end
  if config.options.queue == 'agent' and view.state == 'running' and M.agent_queues(view) then
    return 'agent'
  end
  return 'queue'
end

local function first_line(text)
  local line = (text or ''):match('^[^\n]*') or ''
  if #line > 80 then
    line = line:sub(1, 79) .. '…'
  end
  if (text or ''):find('\n') then
    line = line .. ' …'
  end
  return line
end

--- Adds a message (its text and the context pending with it) to the queue.
function M.add(view, text, opts)
  local context = require('acp.prompt.context')
  local items = vim.list_extend(vim.list_extend({}, context.items(view)), (opts or {}).context or {})
  view.queue[#view.queue + 1] = { text = text, context = items }
  context.sent(view)
  M.render(view)
  return true
end

--- Shows the queue as virtual lines below the transcript's end and counts
--- it in the input area's title.
function M.render(view)
  if not api.nvim_buf_is_valid(view.buf) then
    return
  end
  api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  if #view.queue > 0 then
    local virt = { { { '', 'AcpQueued' } } }
    for i, q in ipairs(view.queue) do
      local label = type(q.text) == 'string' and first_line(q.text) or '(content blocks)'
      virt[#virt + 1] = { { ('⏳ queued %d: %s'):format(i, label), 'AcpQueued' } }
    end
    virt[#virt + 1] = { { '   sent when the turn ends · :AcpQueue edits or drops', 'AcpQueued' } }
    local row = api.nvim_buf_line_count(view.buf) - 1
    pcall(api.nvim_buf_set_extmark, view.buf, ns, row, 0, { virt_lines = virt })
  end
  if view.input_win and api.nvim_win_is_valid(view.input_win) then
    local extra = #view.queue > 0 and (' · %d queued (:AcpQueue)'):format(#view.queue) or ''
    vim.wo[view.input_win].winbar = '%#AcpInputTitle# Message %*%#Comment# <C-s> send · <C-c> cancel · @ mention'
      .. extra
      .. '%<%*'
  end
end

--- The pending lines as shown (for tests).
function M.lines(view)
  local out = {}
  for _, m in ipairs(api.nvim_buf_get_extmarks(view.buf, ns, 0, -1, { details = true })) do
    for _, vl in ipairs(m[4].virt_lines or {}) do
      out[#out + 1] = vl[1][1]
    end
  end
  return out
end

--- Sends the first queued message (the turn ended). A refused send puts
--- it back and says why.
function M.flush(view)
  if #view.queue == 0 or M.busy(view) or view.state ~= 'idle' then
    return
  end
  local q = table.remove(view.queue, 1)
  local ok = view:send(q.text, { context = q.context, from_queue = true })
  if not ok then
    table.insert(view.queue, 1, q)
  end
  M.render(view)
end

--- Drops queued message `n`.
function M.drop(view, n)
  if not view.queue[n] then
    return vim.notify(('acp.nvim: no queued message %s'):format(tostring(n)), vim.log.levels.WARN)
  end
  table.remove(view.queue, n)
  M.render(view)
  return true
end

--- Takes queued message `n` back into the input area (above what is
--- typed there, nothing is lost) with its context.
function M.edit(view, n)
  local q = view.queue[n]
  if not q then
    return vim.notify(('acp.nvim: no queued message %s'):format(tostring(n)), vim.log.levels.WARN)
  end
  table.remove(view.queue, n)
  if type(q.text) == 'string' then
    local typed = api.nvim_buf_get_lines(view.input, 0, -1, false)
    local lines = vim.split(q.text, '\n', { plain = true })
    if not (#typed == 1 and typed[1] == '') then
      vim.list_extend(lines, typed)
    end
    api.nvim_buf_set_lines(view.input, 0, -1, false, lines)
  end
  for _, item in ipairs(q.context or {}) do
    require('acp.prompt.context').add(view, item)
  end
  M.render(view)
  view:show(true)
  return true
end

--- `:AcpQueue [edit|drop {n}|clear]`: without arguments, pick a message
--- and what to do with it.
function M.command(view, args)
  local verb, n = (args or ''):match('^%s*(%a*)%s*(%d*)')
  n = tonumber(n)
  if verb == 'clear' then
    view.queue = {}
    return M.render(view)
  elseif (verb == 'edit' or verb == 'drop') and n then
    return M[verb](view, n)
  elseif verb ~= '' then
    return vim.notify('acp.nvim: :AcpQueue [edit {n} | drop {n} | clear]', vim.log.levels.WARN)
  end
  if #view.queue == 0 then
    return vim.notify('acp.nvim: no message is queued')
  end
  local idx = {}
  for i = 1, #view.queue do
    idx[i] = i
  end
  require('acp.util.escape').select(idx, {
    prompt = 'Queued message',
    format_item = function(i)
      return ('%d: %s'):format(i, first_line(view.queue[i].text))
    end,
  }, function(i)
    if not i then
      return
    end
    require('acp.util.escape').select({ 'edit', 'drop' }, { prompt = 'Queued message ' .. i }, function(action)
      if action then
        M[action](view, i)
      end
    end)
  end)
end

return M
