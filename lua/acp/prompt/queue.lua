--- The prompt queue: a message sent while a turn runs (or while a session
--- loads) waits here, listed at the top of the live status area (below
--- the transcript when none is shown), and is sent when the turn ends.
--- Each has an id: `:AcpQueue` edits (back into the input area) or drops
--- the one picked, wherever the turn's end moved it. With `queue = 'agent'`, agents that queue prompts themselves
--- (`_meta.claudeCode.promptQueueing`) get it at once. Steering (a message
--- into the running turn) is acp.prompt.steer.
local config = require('acp.config')

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

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
  -- `_meta.steering` is not this: such an agent takes a message into the
  -- running turn through `_session/steering` (acp.prompt.steer), and a
  -- second `session/prompt` would only wait or be refused.
  return claude.promptQueueing == true
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

-- Ids of queued messages: one counter for every chat, never reused.
local last_id = 0

--- Adds a message (its text and the context pending with it) to the queue,
--- with an id of its own: its position shifts when the turn ends and the
--- first one goes, its id does not.
function M.add(view, text, opts)
  local context = require('acp.prompt.context')
  local items = vim.list_extend(vim.list_extend({}, context.items(view)), (opts or {}).context or {})
  last_id = last_id + 1
  view.queue[#view.queue + 1] = { id = last_id, text = text, context = items }
  context.sent(view)
  M.render(view)
  return true
end

--- The queued message with id `id`, and its position.
function M.find(view, id)
  for i, q in ipairs(view.queue) do
    if q.id == id then
      return q, i
    end
  end
end

--- One line per queued message, `⏳ {position} · {first line}` (what the
--- status area shows above its own lines while a turn runs).
function M.summary(view)
  local out = {}
  for i, q in ipairs(view.queue) do
    local label = type(q.text) == 'string' and first_line(q.text) or '(content blocks)'
    out[#out + 1] = ('⏳ queued %d: %s'):format(i, label)
  end
  return out
end

--- Shows the queue: in the status area while one is shown (the last lines
--- of a long transcript are under it), else as virtual lines below the
--- transcript's end; and counts it in the input area's title.
function M.render(view)
  if not api.nvim_buf_is_valid(view.buf) then
    return
  end
  api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  -- The status area lists the queue itself (it redraws now).
  local in_area = view:show_queue_in_status()
  if #view.queue > 0 and not in_area then
    local virt = { { { '', 'AcpQueued' } } }
    for _, l in ipairs(M.summary(view)) do
      virt[#virt + 1] = { { l, 'AcpQueued' } }
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

--- The pending lines as shown (for tests): the status area's list while
--- it shows the queue, else the lines below the transcript.
function M.lines(view)
  if #view.queue > 0 and view:status_height() > 0 then
    return M.summary(view)
  end
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

local function label_of(q)
  return type(q.text) == 'string' and first_line(q.text) or '(content blocks)'
end

--- The queued message `which` means, and its position: `which` is a
--- position (as the list shows it now) or a message picked earlier (found
--- by its id wherever it moved). Nil, after saying so, when it is gone.
local function resolve(view, which)
  if type(which) == 'table' then
    local q, i = M.find(view, which.id)
    if not q then
      -- Within the command line's room (more would wait for Enter).
      local msg = 'acp.nvim: queued message "%s" was already sent (or dropped)'
      notify(
        msg:format(require('acp.util.escape').line(label_of(which), math.max(8, vim.v.echospace - #msg + 1))),
        vim.log.levels.WARN
      )
    end
    return q, i
  end
  if not view.queue[which] then
    notify(('acp.nvim: no queued message %s'):format(tostring(which)), vim.log.levels.WARN)
    return nil
  end
  return view.queue[which], which
end

--- Drops a queued message: position `which` (a number) or the message
--- `which` picked earlier (by its id).
function M.drop(view, which)
  local q, n = resolve(view, which)
  if not q then
    return
  end
  table.remove(view.queue, n)
  M.render(view)
  return true
end

--- Takes a queued message (position or message, as for `drop`) back into
--- the input area (above what is typed there, nothing is lost) with its
--- context.
function M.edit(view, which)
  local q, n = resolve(view, which)
  if not q then
    return
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
--- and what to do with it. The pick holds the message itself: if the turn
--- ends meanwhile and the first one goes, the action still finds the one
--- picked (by its id), and one that went says so and changes nothing.
function M.command(view, args)
  local verb, n = (args or ''):match('^%s*(%a*)%s*(%d*)')
  n = tonumber(n)
  if verb == 'clear' then
    view.queue = {}
    return M.render(view)
  elseif (verb == 'edit' or verb == 'drop') and n then
    return M[verb](view, n)
  elseif verb ~= '' then
    return notify('acp.nvim: :AcpQueue [edit {n} | drop {n} | clear]', vim.log.levels.WARN)
  end
  if #view.queue == 0 then
    return notify('acp.nvim: no message is queued')
  end
  local esc = require('acp.util.escape')
  -- vim.ui.select numbers the entries itself.
  esc.select(vim.list_extend({}, view.queue), {
    prompt = 'Queued message',
    format_item = label_of,
  }, function(q)
    if not q then
      return
    end
    esc.select({ 'edit', 'drop' }, { prompt = 'Queued message: ' .. label_of(q) }, function(action)
      if action then
        M[action](view, q)
      end
    end)
  end)
end

return M
