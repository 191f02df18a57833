-- :AcpThreads: a side view of every chat of this Neovim with its agent, state (working /
-- waiting for you / done since you last looked / error / idle), elapsed time, changed files;
-- <CR> goes to the chat's tab, d closes, r renames, / filters; live while open, nothing while
-- closed; require('acp').status().threads counts the chats per state.
local H = require('tests.helpers.acp')
local T = require('tests.helpers.expect')
local Screen = require('tests.helpers.screen')

local W, HEIGHT = 120, 30

local OPTIONS = {
  { optionId = 'allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'reject', name = 'Reject', kind = 'reject_once' },
}

local function turns(dir)
  return {
    { match = 'edit', steps = {
      { update = { sessionUpdate = 'session_info_update', title = 'Fix the greeting in hello.lua, which says hello wrongly' } },
      { update = { sessionUpdate = 'tool_call', toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit', status = 'pending' } },
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit' }, options = OPTIONS }),
      { message = 'edited' },
    } },
    { match = 'slow', steps = {
      { update = { sessionUpdate = 'session_info_update', title = 'Write notes.txt' } },
      H.req('fs/write_text_file', { path = dir .. '/notes.txt', content = 'notes\n' }),
      { sleep_ms = 700 },
      { message = 'finished' },
    } },
    { match = 'fail', steps = { { error = { code = -32603, message = 'the model is overloaded' } } } },
    { match = 'quick', steps = { { message = 'ok' } } },
  }
end

--- A child with two scripted agents, `test` and `other`, in a project of its own.
local function start(opts)
  opts = opts or {}
  local dir = H.project({ ['hello.lua'] = 'print("helo")\n' })
  local tmp = T.tmpdir('threads')
  local agents = {}
  for _, name in ipairs({ 'test', 'other' }) do
    local scenario = tmp .. '/' .. name .. '.json'
    T.write_file(scenario, vim.json.encode({ agent = vim.empty_dict(), turns = turns(dir) }))
    agents[name] = { cmd = H.agent_bin, args = { '--scenario', scenario } }
  end
  local child = H.start({ cwd = dir, config = vim.tbl_extend('force', { agents = agents }, opts.config or {}) })
  return child, dir
end

--- Three chats in two tabs: test 1 (hidden) and other 2 in tab 1, other 3 in tab 2.
local function three_chats(child)
  H.open(child, 'test')
  H.open(child, 'other')
  child:cmd('tabnew')
  H.open(child, 'other')
  child:cmd('stopinsert')
  T.eq(child:lua([[local out = {}
    for n, v in pairs(require('acp.chat').by_thread) do out[#out + 1] = n .. v.agent end
    table.sort(out); return out]]), { '1test', '2other', '3other' })
end

--- Sends `text` to chat `n` (any tab).
local function send(child, n, text)
  child:lua([[require('acp.chat').by_thread[...]:send(select(2, ...))]], { n, text })
end

local function view_text(child)
  return child:lua([[
    local buf = require('acp.chat.threads').buf() or -1
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  ]])
end

--- Waits until the threads buffer holds a line matching `pattern`.
local function wait_row(child, pattern, timeout)
  child:wait_for([[
    local buf = require('acp.chat.threads').buf() or -1
    if buf < 0 then return false end
    for _, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
      if l:find(...) then return true end
    end
  ]], timeout or 5000, { pattern })
end

--- Puts the cursor of the threads window on chat `n`'s row.
local function cursor_on(child, n)
  child:lua([[
    local buf = require('acp.chat.threads').buf() or -1
    for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
      if l:match('^ [^%w%s]+ %a+ (%d+) ') == tostring(...) then
        vim.api.nvim_win_set_cursor(vim.fn.bufwinid(buf), { i, 0 })
        return
      end
    end
    error('no row of chat ' .. ...)
  ]], { n })
end

return {
  { 'three chats in two tabs: their states as they change (working, waiting for you, done), a screenshot', function()
    local child = start()
    local screen = Screen.attach(child, W, HEIGHT)
    three_chats(child)
    child:cmd('tabfirst')
    child:cmd('AcpThreads')
    T.eq(child:lua([[return vim.bo.filetype]]), 'acpthreads', 'the cursor is in the view')
    wait_row(child, '○ test 1 .*idle')
    T.match(view_text(child), 'Threads · 3 chats')
    -- Chat 3 (tab 2, out of sight) works, then is done; chat 1 waits for a permission.
    send(child, 3, 'slow')
    wait_row(child, '▸ other 3 .*working…')
    send(child, 1, 'edit')
    wait_row(child, '● test 1 .*waiting for you')
    wait_row(child, 'Fix the greeting')
    wait_row(child, '✓ other 3 .*done', 8000)
    local text = view_text(child)
    T.match(text, 'Write notes.txt · tab 2 · 1 file', 'chat 3: its title, tab and changed file')
    T.match(text, '○ other 2 .*idle')
    T.match(text, 'Fix the greeting.* · this tab')
    -- A fixed clock for the picture: chat 1's turn runs for 12 s, chat 3 ended 3 minutes ago.
    child:lua([[
      local threads = require('acp.chat.threads')
      local now = vim.uv.now()
      threads.clock = function() return now end
      local by = require('acp.chat').by_thread
      by[1].turn_at, by[2].turn_at, by[3].turn_at = now - 12000, now - 3600000 * 2, now - 180000
      threads.render()
    ]])
    wait_row(child, 'waiting for you · 12s')
    -- The picture is of the view: the notifications' messages cleared.
    child:cmd('echo ""')
    local shot = screen:shot()
    local rows = table.concat(shot.text, '\n')
    T.match(rows, '● test 1 +waiting for you · 12s')
    T.match(rows, '✓ other 3 +done · 3m ago')
    Screen.expect(shot, 'threads-view')
  end, timeout = 30000 },

  { '<CR> goes to the chat: its tab, its input (a hidden chat becomes its tab\'s chat)', function()
    local child = start()
    three_chats(child)
    child:cmd('tabfirst')
    child:cmd('AcpThreads')
    wait_row(child, 'other 3')
    cursor_on(child, 3)
    child:feed('<CR>')
    child:wait_for([[return vim.api.nvim_get_current_win() == require('acp.chat').by_thread[3].input_win]])
    T.eq(child:lua([[return vim.api.nvim_tabpage_get_number(0)]]), 2)
    child:feed('<Esc>')
    -- Back in tab 1: chat 1 is hidden there behind chat 2.
    child:cmd('tabfirst')
    child:lua([[vim.api.nvim_set_current_win(vim.fn.bufwinid(require('acp.chat.threads').buf()))]])
    cursor_on(child, 1)
    child:feed('<CR>')
    child:wait_for([[return vim.api.nvim_get_current_win() == require('acp.chat').by_thread[1].input_win]])
    T.eq(child:lua([[return { vim.api.nvim_tabpage_get_number(0), require('acp').current().thread }]]), { 1, 1 })
  end, timeout = 30000 },

  { 'r renames (threads view and tab labels), / filters by agent or title, <Esc> clears', function()
    local child = start()
    three_chats(child)
    child:cmd('AcpThreads')
    wait_row(child, 'other 3')
    child:lua([[
      _G.answers = { 'Login bug', 'oth' }
      vim.ui.input = function(opts, cb) _G.asked = opts.prompt; cb(table.remove(_G.answers, 1)) end
    ]])
    cursor_on(child, 3)
    child:feed('r')
    wait_row(child, 'Login bug · this tab')
    T.match(child:lua([[return vim.api.nvim_eval_statusline(vim.o.tabline, { use_tabline = true }).str]]), 'ACP other 3: Login bug')
    child:feed('/')
    wait_row(child, 'Threads · 3 chats · /oth')
    local text = view_text(child)
    T.no_match(text, 'test 1', 'the filter hides the chat of another agent')
    T.match(text, 'other 2')
    T.match(text, 'other 3')
    child:feed('<Esc>')
    wait_row(child, 'test 1')
    T.no_match(view_text(child), '/oth')
    -- Filtering by title; an empty answer clears.
    child:lua([[_G.answers = { 'login' }]])
    child:feed('/')
    wait_row(child, '· /login')
    T.no_match(view_text(child), 'other 2')
    child:lua([[_G.answers = { '' }]])
    child:feed('/')
    wait_row(child, 'other 2')
    -- An empty name gives the chat back its title.
    child:lua([[_G.answers = { '' }]])
    cursor_on(child, 3)
    child:feed('r')
    wait_row(child, 'untitled · this tab')
  end, timeout = 30000 },

  { 'an error shows, and status().threads counts the chats per state', function()
    local child = start()
    three_chats(child)
    T.eq(child:lua([[return require('acp').status().threads]]), { working = 0, waiting = 0, done_unseen = 0, error = 0, idle = 3 })
    send(child, 2, 'fail')
    send(child, 1, 'edit')
    send(child, 3, 'slow')
    child:wait_for([[local t = require('acp').status().threads
      return t.error == 1 and t.waiting == 1 and t.working == 1]], 5000)
    child:cmd('AcpThreads')
    wait_row(child, '✗ other 2 .*error')
    child:wait_for([[return require('acp.chat').by_thread[3].state == 'idle']], 8000)
    -- Chat 3 ended in sight (tab 2 is current): idle, not done.
    T.eq(child:lua([[return require('acp').status().threads]]), { working = 0, waiting = 1, done_unseen = 0, error = 1, idle = 1 })
  end, timeout = 30000 },

  { 'd closes a chat: an idle one at once, a working one after the user confirms (Keep it keeps it)', function()
    local child = start()
    three_chats(child)
    child:cmd('AcpThreads')
    wait_row(child, 'other 3')
    child:lua([[
      _G.picks = {}
      vim.ui.select = function(items, opts, cb) table.insert(_G.picks, opts.prompt); cb(items[_G.choose]) end
    ]])
    cursor_on(child, 2)
    child:feed('d')
    child:wait_for([[return require('acp.chat').by_thread[2] == nil]])
    wait_row(child, 'Threads · 2 chats')
    T.no_match(view_text(child), 'other 2')
    T.eq(child:lua([[return #_G.picks]]), 0, 'an idle chat closes without a question')
    -- A working chat: asked; "Keep it" keeps it, "Close it" closes it.
    send(child, 3, 'slow')
    wait_row(child, '▸ other 3 .*working')
    child:lua([[_G.choose = 2]])
    cursor_on(child, 3)
    child:feed('d')
    child:wait_for([[return #_G.picks == 1]])
    T.match(child:lua([[return _G.picks[1] ]]), 'other 3 is working…: close it%?')
    T.eq(child:lua([[return require('acp.chat').by_thread[3] ~= nil]]), true, '"Keep it" keeps it')
    child:lua([[_G.choose = 1]])
    child:feed('d')
    child:wait_for([[return require('acp.chat').by_thread[3] == nil]])
    wait_row(child, 'Threads · 1 chat$')
    T.no_match(view_text(child), 'other 3')
    T.match(view_text(child), 'test 1')
  end, timeout = 30000 },

  { 'a chat in a git worktree shows its branch', function()
    local dir = require('tests.helpers.git').repo('wt')
    local child = H.start({ cwd = dir, env = { GIT_CEILING_DIRECTORIES = T.tmp_root() } })
    child:cmd('AcpWorktree login-fix')
    child:wait_for([[local v = require('acp').current(); return v and v.worktree ~= nil and v.state == 'idle']], 10000)
    local branch = child:lua([[return require('acp').current().worktree.branch]])
    T.match(branch, 'login%-fix')
    child:cmd('AcpThreads')
    wait_row(child, '⎇ ' .. vim.pesc(branch))
  end, timeout = 30000 },

  { ':AcpThreads! and p list the past chats of the agent for this project; <CR> opens one', function()
    local child = start()
    H.open(child, 'test')
    H.turn(child, 'quick')
    -- A new session in the chat; the first chat, closed, stays kept on disk.
    child:cmd('AcpNew')
    child:wait_for([[local v = require('acp').current(); return v.thread == 2 and v.state == 'idle']], 5000)
    child:lua([[require('acp.chat.lifecycle').close(require('acp.chat').by_thread[1])]])
    child:cmd('AcpThreads!')
    wait_row(child, 'Past sessions of test')
    wait_row(child, '^   quick ')
    child:feed('p')
    child:wait_for([[return not table.concat(vim.api.nvim_buf_get_lines(require('acp.chat.threads').buf(), 0, -1, false), '\n'):find('Past')]])
    child:feed('p')
    wait_row(child, '^   quick ')
    child:lua([[
      local buf = require('acp.chat.threads').buf()
      for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
        if l:find('^   quick ') then vim.api.nvim_win_set_cursor(0, { i, 0 }) end
      end
    ]])
    child:feed('<CR>')
    child:wait_for([[local v = require('acp').current(); return v.thread == 3 and v.history_of ~= nil]], 5000)
    child:wait_for([[return table.concat(require('acp').current():lines(), '\n'):find('quick') ~= nil]], 5000)
  end, timeout = 30000 },

  { 'nothing runs while no threads window is open: no redraw, no autocmd, no timer', function()
    local child = start()
    H.open(child, 'test')
    local function live()
      return child:lua([[
        local ok, list = pcall(vim.api.nvim_get_autocmds, { group = 'acp_threads' })
        return { require('acp.chat.threads').is_live(), ok and #list or 0 }
      ]])
    end
    T.eq(live(), { false, 0 })
    child:cmd('AcpThreads')
    T.eq(live()[1], true)
    T.truthy(live()[2] > 0, 'autocmds while open')
    H.open(child)
    H.turn(child, 'quick')
    wait_row(child, 'test 1')
    T.truthy(child:lua([[return require('acp.chat.threads').redraws]]) > 0, 'redrawn while open')
    -- Closed (toggled): the chats keep working, the view does nothing.
    child:lua([[vim.api.nvim_set_current_win(vim.fn.bufwinid(require('acp.chat.threads').buf()))]])
    child:feed('<Esc>q')
    child:wait_for([[return not require('acp.chat.threads').is_open()]])
    child:wait_for([[return not require('acp.chat.threads').is_live()]])
    T.eq(live(), { false, 0 })
    local before = child:lua([[return require('acp.chat.threads').redraws]])
    H.turn(child, 'slow', 8000)
    H.turn(child, 'quick')
    child:lua([[vim.wait(1300)]])
    T.eq(child:lua([[return require('acp.chat.threads').redraws]]), before, 'no redraw while closed')
    -- :AcpThreads toggles: open again, closed again.
    child:cmd('AcpThreads')
    T.eq(child:lua([[return require('acp.chat.threads').is_open()]]), true)
    child:cmd('AcpThreads')
    T.eq(child:lua([[return require('acp.chat.threads').is_open()]]), false)
  end, timeout = 30000 },
}
