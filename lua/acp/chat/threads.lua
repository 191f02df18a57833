--- `:AcpThreads`: a side view (filetype `acpthreads`) of every chat of this
--- Neovim: agent and number, state (waiting for you / working / error /
--- done since you last looked / idle), the time of the running turn or
--- since the last one, its name or title, its tab, the files it changed
--- (the review's records) and the branch of its worktree; with `p` (or
--- `:AcpThreads!`) the agent's past sessions and kept chats of the
--- project too. Keys: <CR> goes to the chat (its tab, its input), `d`
--- closes it, `r` renames it, `/` filters, `<Esc>` clears the filter, `q`
--- closes the view.
---
--- Live while a threads window is open (the chats' `User` events and a
--- one-second tick for the clock, redrawn at most once per 100 ms); while
--- none is open there is no autocmd, no timer, nothing runs.
local api = vim.api
local chats = require('acp.chat')

local M = {}

--- Redraws done (tests: none while no threads window is open).
M.redraws = 0

--- The clock of the elapsed times (ms, as `vim.uv.now()`; tests set it).
M.clock = function()
  return vim.uv.now()
end

--- Most time between a change and its redraw.
M.DELAY_MS = 100

local ns = api.nvim_create_namespace('acp_threads')

api.nvim_set_hl(0, 'AcpThreadsWaiting', { link = 'WarningMsg', default = true })
api.nvim_set_hl(0, 'AcpThreadsWorking', { link = 'DiagnosticInfo', default = true })
api.nvim_set_hl(0, 'AcpThreadsDone', { link = 'DiagnosticOk', default = true })
api.nvim_set_hl(0, 'AcpThreadsError', { link = 'ErrorMsg', default = true })
api.nvim_set_hl(0, 'AcpThreadsIdle', { link = 'Comment', default = true })
api.nvim_set_hl(0, 'AcpThreadsHeader', { link = 'Title', default = true })

--- The states, in the order of the counts; mark, word and highlight.
M.STATES = {
  waiting = { '●', 'waiting for you', 'AcpThreadsWaiting' },
  working = { '▸', 'working…', 'AcpThreadsWorking' },
  error = { '✗', 'error', 'AcpThreadsError' },
  done_unseen = { '✓', 'done', 'AcpThreadsDone' },
  idle = { '○', 'idle', 'AcpThreadsIdle' },
}

-- The view's state: its buffer, the open windows (a set), the filter, the
-- past sessions when shown, what each row is, the changed-file counts by
-- chat (weak), the autocmds' group and the tick while open.
local S = {
  buf = nil,
  wins = {},
  filter = nil,
  past = nil,
  rows = {},
  files = setmetatable({}, { __mode = 'k' }),
  group = nil,
  timer = nil,
  due = false,
  last = nil,
}

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.INFO)
end

local function valid(win)
  return win ~= nil and api.nvim_win_is_valid(win)
end

--- A chat's state in the threads view and in `status().threads`:
--- 'waiting' (a permission request, a request for input or a sign-in
--- waits), 'working' (a turn runs, or the agent starts), 'error' (the
--- agent stopped, or the last turn failed), 'done_unseen' (a turn ended
--- while the chat was out of sight), else 'idle'.
---@param view acp.ChatView
---@return 'waiting'|'working'|'error'|'done_unseen'|'idle'
function M.state_of(view)
  local att = require('acp.chat.attention').of(view)
  if att.waiting then
    return 'waiting'
  elseif view.state == 'running' or view.state == 'connecting' then
    return 'working'
  elseif view.state == 'disconnected' or view.stop_reason == 'error' then
    return 'error'
  elseif att.done_unseen then
    return 'done_unseen'
  end
  return 'idle'
end

--- How many chats are in each state (`status().threads`).
---@return { working: integer, waiting: integer, done_unseen: integer, error: integer, idle: integer }
function M.counts()
  local c = { working = 0, waiting = 0, done_unseen = 0, error = 0, idle = 0 }
  for _, view in pairs(chats.by_thread) do
    local ok, s = pcall(M.state_of, view)
    s = ok and s or 'idle'
    c[s] = c[s] + 1
  end
  return c
end

--- `ms` as a short duration: 12s, 3m05s (a running turn) or 3m, 2h05m, 4d.
local function duration(ms, seconds)
  local s = math.max(0, math.floor(ms / 1000))
  if s < 60 then
    return s .. 's'
  elseif s < 3600 then
    return seconds and ('%dm%02ds'):format(math.floor(s / 60), s % 60) or (math.floor(s / 60) .. 'm')
  elseif s < 86400 then
    return ('%dh%02dm'):format(math.floor(s / 3600), math.floor(s % 3600 / 60))
  end
  return math.floor(s / 86400) .. 'd'
end

--- The running turn's time, or the time since the last one ended.
local function elapsed(view)
  if not view.turn_at then
    return nil
  end
  local ms = M.clock() - view.turn_at
  if view.state == 'running' then
    return duration(ms, true)
  end
  return duration(ms) .. ' ago'
end

--- Files the chat changed (the review's list), counted again only after
--- its cards or files changed.
local function files_of(view)
  local n = S.files[view]
  if n == nil then
    local ok, files = pcall(require('acp.editor.review').changed_files, view)
    n = ok and type(files) == 'table' and #files or 0
    S.files[view] = n
  end
  return n
end

--- The branch of a chat that runs in a git worktree.
local function branch_of(view)
  local wt = rawget(view, 'worktree')
  return type(wt) == 'table' and type(wt.branch) == 'string' and wt.branch ~= '' and wt.branch or nil
end

--- The chat's name: the user's (`r`), else the agent's title.
local function title_of(view)
  local t = view.name or require('acp.util.text').of(view.info.title)
  return type(t) == 'string' and t ~= '' and t or nil
end

local function matches(filter, ...)
  if not filter then
    return true
  end
  local f = filter:lower()
  for _, s in ipairs({ ... }) do
    if type(s) == 'string' and s:lower():find(f, 1, true) then
      return true
    end
  end
  return false
end

--- The chats, by tab number then number.
local function ordered()
  local list = require('acp.chat.layout').list()
  local function tabnr(view)
    return (view.tab and api.nvim_tabpage_is_valid(view.tab)) and api.nvim_tabpage_get_number(view.tab) or math.huge
  end
  table.sort(list, function(a, b)
    local ta, tb = tabnr(a), tabnr(b)
    if ta ~= tb then
      return ta < tb
    end
    return a.thread < b.thread
  end)
  return list
end

--- `left` and `right` on one row of `width` cells (left cut with "…").
local function spread(left, right, width)
  local esc = require('acp.util.escape')
  local room = width - api.nvim_strwidth(right) - 1
  left = esc.line(left, math.max(room, 4))
  local gap = math.max(1, width - api.nvim_strwidth(left) - api.nvim_strwidth(right))
  return left .. (' '):rep(gap) .. right
end

--- The lines, their highlights ({ row, col, end_col, group }) and what
--- each row is, for a window `width` cells wide.
function M.build(width)
  local esc = require('acp.util.escape')
  local lines, hls, rows = {}, {}, {}
  local function add(line, item)
    lines[#lines + 1] = line
    rows[#lines] = item
    return #lines - 1
  end
  local function hl(row, col, end_col, group)
    hls[#hls + 1] = { row, col, end_col, group }
  end
  local list = ordered()
  local current = chats.current()
  local shown = 0
  local head = (' Threads · %d chat%s'):format(#list, #list == 1 and '' or 's')
  if S.filter then
    head = head .. ' · /' .. esc.line(S.filter, 20)
  end
  hl(add(esc.line(head, width)), 0, -1, 'AcpThreadsHeader')
  add('')
  for _, view in ipairs(list) do
    local title = title_of(view)
    if matches(S.filter, view.agent, title) then
      shown = shown + 1
      local state = M.state_of(view)
      local st = M.STATES[state]
      local word = st[2]
      if state == 'working' or (state == 'error' and view.state == 'disconnected') then
        word = require('acp.chat.header').state_word(view)
      end
      local time = elapsed(view)
      local right = word .. (time and (' · ' .. time) or '')
      local line = spread((' %s %s %d'):format(st[1], esc.line(view.agent, 40), view.thread), right, width)
      local row = add(line, { view = view })
      hl(row, 1, 1 + #st[1], st[3])
      hl(row, #line - #right, #line, st[3])
      -- Second row: name, tab, changed files, branch.
      local tail = {}
      local tab = (view.tab and api.nvim_tabpage_is_valid(view.tab)) and api.nvim_tabpage_get_number(view.tab)
      tail[#tail + 1] = view == current and 'this tab' or tab and ('tab ' .. tab) or 'no tab'
      local n = files_of(view)
      if n > 0 then
        tail[#tail + 1] = ('%d file%s'):format(n, n == 1 and '' or 's')
      end
      local branch = branch_of(view)
      if branch then
        tail[#tail + 1] = '⎇ ' .. esc.line(branch, 24)
      end
      local rest = ' · ' .. table.concat(tail, ' · ')
      local room = width - 3 - api.nvim_strwidth(rest)
      local name = title and esc.line(title, math.max(room, 6)) or 'untitled'
      local second = esc.line('   ' .. name .. rest, width)
      local r2 = add(second, { view = view })
      hl(r2, 3 + #name, -1, 'Comment')
      if not title then
        hl(r2, 3, 3 + #name, 'Comment')
      end
    end
  end
  if #list == 0 then
    hl(add(' No chat yet (:AcpChat opens one)'), 0, -1, 'Comment')
  elseif shown == 0 then
    hl(add(' Nothing matches (<Esc> clears the filter)'), 0, -1, 'Comment')
  end
  if S.past then
    add('')
    local base = S.past.view
    hl(add(esc.line((' Past sessions of %s'):format(base.agent), width)), 0, -1, 'AcpThreadsHeader')
    local n = 0
    for _, item in ipairs(S.past.items) do
      if matches(S.filter, item.title, base.agent) then
        n = n + 1
        local line = spread('   ' .. esc.line(item.title, width), item.time or '', width)
        local row = add(line, { past = item, view = base })
        hl(row, #line - #(item.time or ''), -1, 'Comment')
      end
    end
    if n == 0 then
      hl(add(S.past.loading and '   (listing…)' or '   (none)'), 0, -1, 'Comment')
    end
  end
  -- The keys, wrapped to the width.
  add('')
  local line = ''
  for _, k in ipairs({ '<CR> go', 'd close', 'r rename', '/ filter', 'p past', 'q quit' }) do
    local more = line == '' and (' ' .. k) or (line .. ' · ' .. k)
    if line ~= '' and api.nvim_strwidth(more) > width then
      hl(add(line), 0, -1, 'Comment')
      more = ' ' .. k
    end
    line = more
  end
  hl(add(line), 0, -1, 'Comment')
  return lines, hls, rows
end

--- What a row shows, as a key that outlives a redraw.
local function key_of(item)
  return item and (item.past and ('p' .. tostring(item.past.id)) or item.view and ('v' .. item.view.thread)) or nil
end

--- Draws the view now (every open threads window shows the one buffer).
function M.render()
  local width
  for win in pairs(S.wins) do
    if valid(win) then
      width = math.max(width or 0, api.nvim_win_get_width(win))
    else
      S.wins[win] = nil
    end
  end
  if not width or not (S.buf and api.nvim_buf_is_valid(S.buf)) then
    return
  end
  M.redraws = M.redraws + 1
  local lines, hls, rows = M.build(width)
  -- Each window keeps its cursor on the same chat.
  local at = {}
  for win in pairs(S.wins) do
    at[win] = key_of(S.rows[api.nvim_win_get_cursor(win)[1]])
  end
  S.rows = rows
  local text = table.concat(lines, '\n')
  if text ~= S.last then
    S.last = text
    vim.bo[S.buf].modifiable = true
    api.nvim_buf_set_lines(S.buf, 0, -1, false, lines)
    vim.bo[S.buf].modifiable = false
  end
  api.nvim_buf_clear_namespace(S.buf, ns, 0, -1)
  for _, h in ipairs(hls) do
    local row, col, end_col, group = h[1], h[2], h[3], h[4]
    local len = #lines[row + 1]
    end_col = end_col < 0 and len or math.min(end_col, len)
    if col < end_col then
      api.nvim_buf_set_extmark(S.buf, ns, row, col, { end_col = end_col, hl_group = group })
    end
  end
  for win, key in pairs(at) do
    for r, item in pairs(rows) do
      if key and key_of(item) == key then
        pcall(api.nvim_win_set_cursor, win, { r, 0 })
        break
      end
    end
  end
end

--- Asks for a redraw: at most one per `DELAY_MS`, none when no threads
--- window is open.
function M.schedule()
  if S.due or not S.group then
    return
  end
  S.due = true
  vim.defer_fn(function()
    S.due = false
    M.render()
  end, M.DELAY_MS)
end

local function stop()
  if S.group then
    pcall(api.nvim_del_augroup_by_id, S.group)
    S.group = nil
  end
  if S.timer then
    S.timer:stop()
    S.timer:close()
    S.timer = nil
  end
  S.past = nil
end

local function any_open()
  for win in pairs(S.wins) do
    if valid(win) then
      return true
    end
    S.wins[win] = nil
  end
  return false
end

--- Starts the live updates (the first threads window opened).
local function start()
  if S.group then
    return
  end
  local group = api.nvim_create_augroup('acp_threads', { clear = true })
  S.group = group
  api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'AcpStateChanged', 'AcpTurnStart', 'AcpSessionStart' },
    callback = M.schedule,
  })
  -- The changed files of a chat are counted again after a card finished,
  -- a turn ended or a file changed.
  api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'AcpToolCall', 'AcpTurnEnd', 'AcpFileChanged' },
    callback = function(ev)
      local data = type(ev.data) == 'table' and ev.data or {}
      if ev.match == 'AcpToolCall' and data.status ~= 'completed' and data.status ~= 'failed' then
        return M.schedule()
      end
      local view = data.thread and chats.by_thread[data.thread]
      if view then
        S.files[view] = nil
      else
        S.files = setmetatable({}, { __mode = 'k' })
      end
      M.schedule()
    end,
  })
  api.nvim_create_autocmd({ 'TabEnter', 'TabClosed', 'VimResized' }, { group = group, callback = M.schedule })
  api.nvim_create_autocmd('WinClosed', {
    group = group,
    callback = function(ev)
      local win = tonumber(ev.match)
      if win and S.wins[win] then
        S.wins[win] = nil
        vim.schedule(function()
          if not any_open() then
            stop()
          end
        end)
      end
    end,
  })
  -- The clock of the running turns, and titles the agent changed.
  S.timer = vim.uv.new_timer()
  S.timer:start(1000, 1000, function()
    vim.schedule(M.schedule)
  end)
end

--- The threads window of the current tab.
local function here()
  for win in pairs(S.wins) do
    if valid(win) and api.nvim_win_get_tabpage(win) == api.nvim_get_current_tabpage() then
      return win
    end
  end
end

--- The item under the cursor, or nil after saying so.
local function item_here()
  local item = S.rows[api.nvim_win_get_cursor(0)[1]]
  if not item then
    notify('no chat on this line')
  end
  return item
end

--- Goes to `view`: its tab, its windows, its input.
function M.jump(view)
  if chats.by_thread[view.thread] ~= view then
    return notify('that chat is closed')
  end
  if view.tab and api.nvim_tabpage_is_valid(view.tab) then
    api.nvim_set_current_tabpage(view.tab)
  end
  if chats.current() ~= view then
    require('acp.chat.layout').switch(view)
  else
    view:show(true)
  end
end

--- Opens a past session or kept chat in the chat `view` (its tab).
local function open_past(view, item)
  if chats.by_thread[view.thread] ~= view then
    return notify('the chat that listed it is closed')
  end
  M.jump(view)
  local sessions = require('acp.agents.sessions')
  local reopen = require('acp.chat.lifecycle').reopen
  if item.kept then
    sessions.open_kept(view, item.kept, reopen)
  else
    sessions.open(view, item.session, reopen)
  end
end

--- Closes the chat `view` (a working chat after the user confirms).
function M.close_chat(view)
  local lifecycle = require('acp.chat.lifecycle')
  if type(lifecycle.close) ~= 'function' then
    return notify('closing a chat is not available in this version', vim.log.levels.WARN)
  end
  local state = M.state_of(view)
  if state ~= 'working' and state ~= 'waiting' then
    lifecycle.close(view)
    return M.schedule()
  end
  local esc = require('acp.util.escape')
  local yes = 'Close it (its turn is cancelled)'
  esc.select({ yes, 'Keep it' }, {
    prompt = ('%s %d is %s: close it?'):format(esc.line(view.agent, 40), view.thread, M.STATES[state][2]),
  }, function(choice)
    if choice == yes and chats.by_thread[view.thread] == view then
      lifecycle.close(view)
      M.schedule()
    end
  end)
end

--- Names the chat `view` (asked with `vim.ui.input`; empty: the agent's
--- title again).
function M.rename(view)
  vim.ui.input({ prompt = 'Name of the chat: ', default = view.name or title_of(view) or '' }, function(text)
    if text == nil or chats.by_thread[view.thread] ~= view then
      return
    end
    text = vim.trim((text:gsub('[%c]+', ' ')))
    view.name = text ~= '' and text or nil
    pcall(vim.cmd, 'redrawtabline')
    M.render()
  end)
end

--- Asks for the filter (agent or title substring; empty clears it).
function M.ask_filter()
  vim.ui.input({ prompt = 'Filter threads (agent or title): ', default = S.filter or '' }, function(text)
    if text == nil then
      return
    end
    text = vim.trim((text:gsub('[%c]+', ' ')))
    S.filter = text ~= '' and text or nil
    M.render()
  end)
end

--- Shows or hides the past sessions and kept chats of the current tab's
--- chat (else the first chat): its agent, its project.
function M.toggle_past(show)
  if S.past and not show then
    S.past = nil
    return M.render()
  end
  if S.past then
    return
  end
  local base = chats.current() or require('acp.chat.layout').list()[1]
  if not base then
    return notify('no chat yet: the past sessions are listed for an open chat\'s agent')
  end
  local sessions = require('acp.agents.sessions')
  local past = { view = base, items = {}, loading = false }
  S.past = past
  local open_ids = {}
  for _, v in pairs(chats.by_thread) do
    if v.info.session then
      open_ids[v.info.session] = true
    end
  end
  for _, h in ipairs(sessions.kept(base)) do
    if not (h.session_id and open_ids[h.session_id]) then
      past.items[#past.items + 1] = {
        id = 'kept:' .. tostring(h.id),
        kept = h,
        title = type(h.title) == 'string' and h.title ~= '' and h.title or 'untitled chat',
        time = type(h.updated) == 'number' and os.date('%Y-%m-%d %H:%M', h.updated) or nil,
      }
      if h.session_id then
        open_ids[h.session_id] = true
      end
    end
  end
  local caps = type(base.capabilities) == 'table' and base.capabilities or {}
  local sc = type(caps.sessionCapabilities) == 'table' and caps.sessionCapabilities or {}
  if sc.list ~= nil and sc.list ~= false and sc.list ~= vim.NIL then
    past.loading = true
    sessions.list(base, function(list, err)
      past.loading = false
      if S.past ~= past then
        return
      end
      if not list then
        notify('session/list failed: ' .. require('acp.util.escape').line(err, 200), vim.log.levels.WARN)
      end
      for _, s in ipairs(list or {}) do
        if not open_ids[s.sessionId] then
          past.items[#past.items + 1] = {
            id = 'session:' .. s.sessionId,
            session = s.sessionId,
            title = type(s.title) == 'string' and s.title ~= '' and s.title or s.sessionId,
            time = type(s.updatedAt) == 'string' and (s.updatedAt:gsub('T', ' '):gsub('%.%d+', ''):gsub('Z$', ''):sub(1, 16)) or nil,
          }
        end
      end
      M.render()
    end)
  end
  M.render()
end

local function map(lhs, fn, desc)
  vim.keymap.set('n', lhs, fn, { buffer = S.buf, nowait = true, silent = true, desc = desc })
end

local function ensure_buf()
  if S.buf and api.nvim_buf_is_valid(S.buf) then
    return S.buf
  end
  S.buf = api.nvim_create_buf(false, true)
  S.last = nil
  api.nvim_buf_set_name(S.buf, 'acp://threads/')
  for k, v in pairs({ buftype = 'nofile', bufhidden = 'hide', swapfile = false, modifiable = false }) do
    vim.bo[S.buf][k] = v
  end
  vim.bo[S.buf].filetype = 'acpthreads'
  map('<CR>', function()
    local item = item_here()
    if item and item.past then
      open_past(item.view, item.past)
    elseif item then
      M.jump(item.view)
    end
  end, 'Go to the chat')
  -- A key that acts on an open chat (a past session has none yet).
  local function on_open_chat(act)
    return function()
      local item = item_here()
      if item and item.past then
        notify('a past session is not open: <CR> opens it')
      elseif item then
        act(item.view)
      end
    end
  end
  map('d', on_open_chat(M.close_chat), 'Close the chat')
  map('r', on_open_chat(M.rename), 'Rename the chat')
  map('/', M.ask_filter, 'Filter the chats')
  map('<Esc>', function()
    if S.filter then
      S.filter = nil
      M.render()
    end
  end, 'Clear the filter')
  map('p', function()
    M.toggle_past()
  end, 'Show or hide the past sessions')
  map('q', function()
    M.close()
  end, 'Close the threads view')
  return S.buf
end

--- Width of the view on this screen.
function M.width()
  return math.max(28, math.min(48, math.floor(vim.o.columns * 0.3)))
end

--- Opens the view in the current tab (at the edge the chat is not at),
--- or moves into it.
function M.open()
  -- A list to move in: Normal mode (the chat's input may have left Insert).
  vim.cmd('stopinsert')
  local win = here()
  if win then
    api.nvim_set_current_win(win)
    return win
  end
  local buf = ensure_buf()
  local side = require('acp.config').options.chat.position == 'left' and 'botright' or 'topleft'
  vim.cmd(('%s %dvsplit'):format(side, M.width()))
  win = api.nvim_get_current_win()
  api.nvim_win_set_buf(win, buf)
  local wo = vim.wo[win]
  wo.number, wo.relativenumber, wo.signcolumn, wo.foldcolumn = false, false, 'no', '0'
  wo.wrap, wo.list, wo.spell, wo.cursorline, wo.winfixwidth = false, false, false, true, true
  require('acp.chat.layout').fix_buffer(win)
  S.wins[win] = true
  start()
  M.render()
  -- On the first chat.
  local first
  for r, item in pairs(S.rows) do
    if item.view and (not first or r < first) then
      first = r
    end
  end
  if first then
    api.nvim_win_set_cursor(win, { first, 0 })
  end
  return win
end

--- Closes the view of the current tab.
function M.close()
  local win = here()
  if not win then
    return
  end
  if #api.nvim_tabpage_list_wins(0) == 1 and #api.nvim_list_tabpages() == 1 then
    if vim.fn.exists('+winfixbuf') == 1 then
      vim.wo[win].winfixbuf = false
    end
    api.nvim_win_call(win, function()
      vim.cmd('enew')
    end)
  else
    api.nvim_win_close(win, true)
  end
end

--- `:AcpThreads[!]`: toggles the view of the current tab; with `!` opens
--- it with the past sessions shown.
---@param opts? { past?: boolean }
function M.toggle(opts)
  opts = opts or {}
  if here() and not opts.past then
    return M.close()
  end
  M.open()
  if opts.past then
    M.toggle_past(true)
  end
end

--- The view's buffer, once made.
function M.buf()
  return S.buf and api.nvim_buf_is_valid(S.buf) and S.buf or nil
end

--- Whether a threads window is open (tests, health).
function M.is_open()
  return any_open()
end

--- Whether the live updates run (an autocmd group and a timer).
function M.is_live()
  return S.group ~= nil or S.timer ~= nil
end

return M
