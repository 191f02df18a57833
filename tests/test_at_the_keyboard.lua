-- What a user reads and types in the chat's smaller places: a command that
-- waits for a permission, the pickers' entries, `:AcpTerminal`'s buffer,
-- `:AcpSend` during a turn.
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

--- The rows of `screen` now, as text.
local function rows(screen)
  return screen:shot().text
end

--- The first row holding `s` (plain), or nil.
local function row_with(lines, s)
  for i, l in ipairs(lines) do
    if l:find(s, 1, true) then
      return i, l
    end
  end
end

--- The screen's text, for a failure message.
local function dump(lines)
  return '\n' .. table.concat(lines, '\n')
end

return {
  { 'a command waiting for the user reads "waiting for you" until allowed, then it runs', function()
    -- claude-agent-acp shows the command's display terminal first, then asks.
    local child = H.start({ turns = { { match = 'go', steps = {
      { message = 'I will clean the build.\n' },
      { update = { sessionUpdate = 'tool_call', toolCallId = 'toolu_1', title = 'Terminal', kind = 'execute', status = 'pending',
        content = { { type = 'terminal', terminalId = 'toolu_1' } }, _meta = { terminal_info = { terminal_id = 'toolu_1' } } } },
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'toolu_1', title = 'rm -rf build', rawInput = { command = 'rm -rf build' } } },
      H.req('session/request_permission', { toolCall = { toolCallId = 'toolu_1', title = 'rm -rf build', rawInput = { command = 'rm -rf build' } },
        options = { { optionId = 'allow', name = 'Allow', kind = 'allow_once' }, { optionId = 'reject', name = 'Reject', kind = 'reject_once' } } }),
      { wait_cancel = true },
    } } }, config = { chat = { width = 60 } } })
    local screen = Screen.attach(child, 100, 30)
    H.open(child)
    child:lua([[require('acp').send('go')]])
    child:wait_for([[return require('acp.ask.permission').win ~= nil]])
    local lines
    T.wait(function()
      lines = rows(screen)
      return row_with(lines, 'waiting for you · toolu_1') ~= nil and row_with(lines, 'working…') == nil
    end, 3000)
    -- The card's terminal, the header and the status area: nothing runs yet.
    T.truthy(row_with(lines, 'run · rm -rf build · waiting for you'), dump(lines))
    T.eq(row_with(lines, 'running'), nil, dump(lines))
    T.eq(row_with(lines, 'in progress'), nil, dump(lines))
    T.truthy(row_with(lines, 'ACP  test · waiting for you'), dump(lines))

    H.enter_permission(child)
    child:feed('y')
    T.wait(function()
      lines = rows(screen)
      return row_with(lines, 'running… · toolu_1') ~= nil and row_with(lines, 'running · rm -rf build') ~= nil
    end, 3000)
    T.eq(row_with(lines, 'waiting for you'), nil, dump(lines))
    T.truthy(row_with(lines, 'ACP  test · working…'), dump(lines))
    child:cmd('AcpCancel')
    H.wait_idle(child)
  end },

  { ':AcpChats lists the chats as the built-in picker numbers them: one number per row', function()
    local child = H.start({ turns = { { match = 'first', steps = { { message = 'first answer' } } } } })
    local screen = Screen.attach(child, 100, 30)
    H.open(child)
    H.turn(child, 'first question')
    child:cmd('AcpNew')
    child:wait_for([[return require('acp').current().info.session == 'sess-2']])
    child:feed('<Esc>:AcpChats<CR>')
    local lines
    -- What the UI got: a child at the picker's prompt draws nothing more, so a forced redraw
    -- that reaches it there waits for a screen update that never comes.
    T.wait(function()
      lines = screen:drawn()
      return row_with(lines, 'Type number') ~= nil
    end, 3000)
    local first = row_with(lines, 'Chats')
    T.truthy(first, dump(lines))
    -- One number per row (the picker's), then the chat's name as its tab
    -- label says it, its state in words, which one is this tab's.
    T.match(lines[first + 1], '^1: test 1 · ready%s*$', dump(lines))
    T.match(lines[first + 2], '^2: test 2 · ready %(this tab%)%s*$', dump(lines))
    for _, l in ipairs(lines) do
      T.no_match(l, '^%d+: %d+:', dump(lines))
    end
    child:feed('1<CR>')
    child:wait_for([[return require('acp').current().thread == 1]])
  end },

  { ':AcpTerminal opens the output with its own bar; q in Normal mode closes its window', function()
    local child = H.start({ turns = { { match = 'run', steps = {
      { update = { sessionUpdate = 'tool_call', toolCallId = 'r1', title = 'make test', kind = 'execute', status = 'in_progress' } },
      H.req('terminal/create', { command = 'printf "compiling\\nall passed\\n"' }),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'r1', content = { { type = 'terminal', terminalId = 'term-1' } } } },
      H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'r1', status = 'completed' } },
    } } }, config = { terminal = { confirm = 'never' } } })
    local screen = Screen.attach(child, 100, 30)
    H.open(child)
    H.turn(child, 'run')
    local wins = child:lua('return #vim.api.nvim_tabpage_list_wins(0)')
    child:feed('<Esc>:AcpTerminal term-1<CR>')
    local lines
    T.wait(function()
      lines = rows(screen)
      return row_with(lines, 'all passed') ~= nil
    end, 3000)
    T.eq(child:lua('return #vim.api.nvim_tabpage_list_wins(0)'), wins + 1)
    local bar = row_with(lines, ' Terminal  term-1 · q closes')
    T.truthy(bar, dump(lines))
    -- Not the chat's header: the split has a bar of its own.
    T.eq(#vim.tbl_filter(function(l)
      return l:find('ACP  test', 1, true) ~= nil
    end, lines), 1, dump(lines))
    child:feed('q')
    T.wait(function()
      return child:lua('return #vim.api.nvim_tabpage_list_wins(0)') == wins
    end, 3000)
    T.eq(child:lua([[return vim.api.nvim_buf_get_name(0):match('acp://terminal') ~= nil]]), false)
  end },

  { ':AcpSend during a turn queues the message (as :help :AcpSend says); it goes when the turn ends', function()
    local child = H.start({ turns = { { match = 'long', steps = { { message = 'working on it' }, { wait_cancel = true } } } } })
    H.open(child)
    child:lua([[require('acp').send('long')]])
    child:wait_for([[local v = require('acp').current()
      return v.state == 'running' and vim.tbl_contains(v:lines(), 'working on it')]])
    child:lua([[_G.notes = {}
      vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end]])
    child:cmd('AcpSend and then this')
    T.eq(child:lua([[return vim.tbl_map(function(q) return q.text end, require('acp').current().queue)]]), { 'and then this' })
    T.eq(child:lua([[return vim.tbl_filter(function(n) return (n.level or 0) >= vim.log.levels.WARN end, _G.notes)]]), {})
    child:cmd('AcpCancel')
    child:wait_for([[return vim.tbl_contains(require('acp').current():lines(), 'echo: and then this')]])
    T.eq(child:lua([[return #require('acp').current().queue]]), 0)
    -- And the help says so.
    local help = table.concat(vim.fn.readfile(H.root .. '/doc/acp.txt'), '\n')
    local send = help:match('%*:AcpSend%*(.-)%*:AcpSend%-range%*')
    T.no_match(send, 'is refused')
    T.match(send, 'waits in the chat.s queue')
  end },
  { 'after a permission and the turn end, the chat that follows its end is filled to its last row (no empty rows under the answer)', function()
    local long = {}
    for i = 1, 30 do
      long[#long + 1] = ('line %d of the explanation'):format(i)
    end
    local child = H.start({ turns = { { match = 'go', steps = {
      { message = table.concat(long, '\n') .. '\nI need to run a command first.\n' },
      { update = { sessionUpdate = 'tool_call', toolCallId = 'rm1', title = 'rm -rf build/', kind = 'execute', status = 'pending', rawInput = { command = 'rm -rf build/' } } },
      H.req('session/request_permission', { toolCall = { toolCallId = 'rm1', title = 'rm -rf build/', kind = 'execute', rawInput = { command = 'rm -rf build/' } },
        options = { { optionId = 'allow', name = 'Allow', kind = 'allow_once' }, { optionId = 'reject', name = 'Reject', kind = 'reject_once' } } }),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'rm1', status = 'completed' } },
      { message = '\nDone: the last line of the answer.' },
    } } } })
    local screen = Screen.attach(child, 80, 24)
    H.open(child)
    child:lua([[require('acp').send('go')]])
    child:wait_for([[return #require('acp.ask.permission').queue > 0]])
    H.enter_permission(child)
    child:feed('y')
    H.wait_idle(child)
    local lines
    vim.wait(3000, function()
      lines = rows(screen)
      return row_with(lines, 'Done: the last line of the answer.') ~= nil
    end, 20)
    -- The transcript's rows: between the chat's winbar and its status line.
    local top = row_with(lines, 'ACP  test')
    local bottom = row_with(lines, 'acp://chat/')
    T.truthy(top and bottom, dump(lines))
    local last = row_with(lines, 'Done: the last line of the answer.')
    T.eq(last, bottom - 1, dump(lines))
    for r = top + 1, bottom - 1 do
      T.no_match(lines[r], '│~%s*$', dump(lines))
    end
  end },

  { 'a picker whose choice leads to a message never stops at a hit-enter prompt (:AcpQueue on a message sent meanwhile)', function()
    local child = H.start({ turns = { { match = 'long', steps = { { message = 'working on it' }, { wait_cancel = true } } } } })
    local screen = Screen.attach(child, 80, 24)
    H.open(child)
    child:lua([[require('acp').send('long')]])
    child:wait_for([[local v = require('acp').current()
      return v.state == 'running' and vim.tbl_contains(v:lines(), 'working on it')]])
    child:cmd('AcpSend and then this')
    child:feed('<Esc>:AcpQueue<CR>')
    T.wait(function()
      return row_with(screen:drawn(), 'Queued message') ~= nil
    end, 3000)
    child:feed('1<CR>')
    T.wait(function()
      return row_with(screen:drawn(), '1: edit') ~= nil
    end, 3000)
    -- Meanwhile the message went (the turn ended and it was sent).
    child:lua([[require('acp').current().queue = {}]])
    child:feed('1<CR>')
    local lines
    T.wait(function()
      lines = screen:drawn()
      return row_with(lines, 'was already sent') ~= nil
    end, 3000)
    T.eq(row_with(lines, 'Press ENTER'), nil, dump(lines))
    T.eq(child:lua('return vim.api.nvim_get_mode().mode'), 'n', dump(lines))
    child:cmd('AcpCancel')
    H.wait_idle(child)
  end },

  { ':AcpInstall offline: one warning line, no hit-enter prompt, one screen row per registry agent', function()
    -- Nothing listens on port 9: the refresh fails at once (as offline).
    local child, paths = H.start({ config = { install = { registry_url = 'http://127.0.0.1:9/registry.json' } } })
    local screen = Screen.attach(child, 80, 24)
    H.open(child)
    child:feed('<Esc>:AcpInstall<CR>')
    local lines
    T.wait(function()
      lines = screen:drawn()
      return row_with(lines, 'Press ENTER') ~= nil or lines[#lines]:match('^%-%- More') ~= nil
    end, 5000)
    T.eq(row_with(lines, 'Press ENTER'), nil, dump(lines))
    T.neq(child:rpc('nvim_get_mode').mode, 'r', dump(lines))
    -- Each agent one row: "n: id · version · how · … description…".
    local first = row_with(lines, '1: ')
    T.truthy(first, dump(lines))
    local n = 0
    for r = first, #lines do
      if lines[r]:match('^%-%- More') then
        break
      end
      n = n + 1
      T.match(lines[r], '^' .. n .. ': [%w._-]+ · [^ ]+ · %a+ · ', dump(lines))
    end
    T.truthy(n >= 10, dump(lines))
    T.match(lines[#lines], '^%-%- More %-%-', dump(lines))
    child:feed('G')
    T.wait(function()
      return row_with(screen:drawn(), 'Type number') ~= nil
    end, 3000)
    child:feed('<CR>')
    T.wait(function()
      return child:rpc('nvim_get_mode').mode == 'n'
    end, 3000)
    -- The warning was one line that fits the command line (what is used,
    -- then why; scrolled off by the list, it stays in :messages).
    local warn = vim.tbl_filter(function(l)
      return l:find('registry not refreshed', 1, true) ~= nil
    end, vim.split(child:lua([[return vim.fn.execute('messages')]]), '\n'))
    T.eq(#warn, 1)
    T.match(warn[1], '^acp%.nvim: registry not refreshed, the snapshot is used')
    T.truthy(vim.api.nvim_strwidth(warn[1]) <= child:lua('return vim.v.echospace'), warn[1])
    -- The detail (the URL, curl's words) went to the log.
    local log = table.concat(vim.fn.readfile(paths.log), '\n')
    T.match(log, 'cannot refresh the ACP registry from http://127%.0%.0%.1:9/registry%.json: .*the shipped snapshot')
  end },

  { 'the review at 120 columns: each pane\'s bar shows q close first after the file, then the other keys by importance', function()
    local dir = H.project({ ['src/components/editor/expression_parser_module/parser.lua'] = 'local a = 1\nreturn a\n' })
    local long = dir .. '/src/components/editor/expression_parser_module/parser.lua'
    local child = H.start({ cwd = dir, turns = { { match = 'go', steps = {
      H.req('fs/write_text_file', { path = long, content = 'local a = 2\nreturn a\n' }),
      { message = 'done' },
    } } } })
    local screen = Screen.attach(child, 120, 20)
    child:lua([[vim.o.showtabline = 0]])
    H.open(child)
    H.turn(child, 'go')
    child:cmd('AcpReview')
    child:wait_for([[return require('acp.editor.review').last ~= nil and #vim.api.nvim_tabpage_list_wins(0) == 2]])
    local lines = rows(screen)
    local left = lines[1]:match('^(.-)│')
    T.truthy(left, dump(lines))
    T.match(left, '^ Review 1/1  …[^ ]*parser%.lua · q close · r revert / k keep hunk', dump(lines))
    -- The card's review: q close comes before the hunk keys too.
    child:cmd('tabclose')
    child:lua([[require('acp.editor.review').open_diff(..., 'local a = 1\n', 'local a = 2\n')]], { long })
    lines = rows(screen)
    local right = lines[1]:match('│(.*)$')
    T.truthy(right, dump(lines))
    T.match(right, '^ Review  …[^ ]*parser%.lua %(proposed%) · q close · %]c/%[c hunks', dump(lines))
  end },

  { ':AcpLog opens the log read-only; q closes its window (in the only window, the buffer before comes back)', function()
    local child = H.start({})
    H.open(child)
    child:feed('<Esc>')
    local wins = child:lua('return #vim.api.nvim_tabpage_list_wins(0)')
    child:cmd('AcpLog')
    T.eq(child:lua('return #vim.api.nvim_tabpage_list_wins(0)'), wins + 1)
    T.eq(child:lua([[return { vim.bo.modifiable, vim.bo.readonly }]]), { false, true })
    -- Typing in it changes nothing.
    local before = child:lua('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')
    child:feed('ggdd')
    T.eq(child:lua('return vim.api.nvim_buf_get_lines(0, 0, -1, false)'), before)
    T.eq(child:lua('return vim.bo.modified'), false)
    child:feed('q')
    T.eq(child:lua('return #vim.api.nvim_tabpage_list_wins(0)'), wins)
    T.eq(child:lua([[return vim.api.nvim_buf_get_name(0):match('acp%.log$') == nil]]), true)
    -- The only window: q shows the buffer that was there before.
    child:cmd('new')
    child:cmd('only')
    local other = child:lua('return vim.api.nvim_get_current_buf()')
    child:cmd('AcpLog')
    child:cmd('only')
    child:feed('q')
    T.eq(child:lua('return #vim.api.nvim_tabpage_list_wins(0)'), 1)
    T.eq(child:lua('return vim.api.nvim_get_current_buf()'), other)
  end },

  { ':AcpMode / :AcpModel / :AcpConfig pickers name the agent and the current value in their title and mark its row', function()
    -- Legacy modes and models (the demo's agent), then config options.
    local child = H.start({ agent_info = {
      modes = { currentModeId = 'ask', availableModes = {
        { id = 'ask', name = 'Ask', description = 'Ask before edits' }, { id = 'code', name = 'Code' } } },
      models = { currentModelId = 'm2', availableModels = { { modelId = 'm1', name = 'Model One' }, { modelId = 'm2', name = 'Model Two' } } },
    }, turns = {} })
    local screen = Screen.attach(child, 80, 24)
    H.open(child)
    child:feed('<Esc>:AcpMode<CR>')
    local lines
    T.wait(function()
      lines = screen:drawn()
      return row_with(lines, 'Type number') ~= nil
    end, 3000)
    local title = row_with(lines, 'Mode of test (current: Ask)')
    T.truthy(title, dump(lines))
    T.match(lines[title + 1], '^1: Ask: Ask before edits  %(current%)%s*$', dump(lines))
    T.match(lines[title + 2], '^2: Code%s*$', dump(lines))
    child:feed('<CR>')
    child:feed('<Esc>:AcpModel<CR>')
    T.wait(function()
      lines = screen:drawn()
      return row_with(lines, 'Model of test') ~= nil and row_with(lines, 'Type number') ~= nil
    end, 3000)
    title = row_with(lines, 'Model of test (current: Model Two)')
    T.truthy(title, dump(lines))
    T.match(lines[title + 2], '^2: Model Two  %(current%)%s*$', dump(lines))
    child:feed('<CR>')
    -- A config option (the agent's `mode`): the same title.
    child:lua(H.STUB_SELECT)
    child:lua([[require('acp.agents.controls').choose_value(require('acp').current(), { id = 'mode', name = 'Mode', type = 'select',
      currentValue = 'auto', options = { { value = 'ask', name = 'Ask' }, { value = 'auto', name = 'Auto' } } })]])
    T.eq(child:lua('return _G.asked[1]'), { prompt = 'Mode of test (current: Auto)', items = { 'Ask', 'Auto  (current)' } })
  end },

  { "a core notification carrying an agent's long error over several lines never stops at a hit-enter prompt while the user types", function()
    local child = H.start({})
    local screen = Screen.attach(child, 80, 24)
    H.open(child)
    child:lua([[require('acp').current():focus_input(true)]])
    child:wait_for([[return vim.api.nvim_get_mode().mode == 'i']])
    child:lua([[
      local long = ('the model backend said no; '):rep(8)
      require('acp.core.dispatch').dispatch({ { type = 'notify', level = 'error',
        message = 'acp.nvim: the agent refused mode `plan`: ' .. long .. '\nsecond line\nthird line' } })
    ]])
    child:lua('return 1')
    screen:redraw(true)
    local lines = rows(screen)
    T.eq(row_with(lines, 'Press ENTER'), nil, dump(lines))
    T.eq(child:lua([[return vim.api.nvim_get_mode().mode]]), 'i')
    T.match(child:cmd('messages'), 'acp%.nvim: the agent refused mode `plan`: the model.*%(:AcpLog%)')
    -- The whole text is in the log.
    local log = table.concat(vim.fn.readfile(child:lua([[return require('acp.config').options.log_file]])), '\n')
    T.match(log, 'third line')
  end },
}
