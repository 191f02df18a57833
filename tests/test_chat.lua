-- The foundation's vertical slice: open a chat, stream a turn, cancel,
-- crash, quit. Each case runs a real child Neovim with the plugin and the
-- scripted test agent.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

-- Records vim.notify calls in the child in _G.notes.
local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end
]]

local STREAM = 'alpha beta gamma delta epsilon zeta eta theta iota kappa'

return {
  { 'open chat, send, the transcript holds exactly the streamed text', function()
    local child = H.start()
    H.open(child)
    local info = child:lua([[
      local v = require('acp').current()
      return { ft = vim.bo[v.buf].filetype, cur = vim.api.nvim_get_current_buf() == v.input,
               mode = vim.api.nvim_get_mode().mode }
    ]])
    T.eq(info.ft, 'acpchat')
    T.eq(info.cur, true, 'the cursor is in the input area')
    H.turn(child, 'stream please')
    T.eq(H.transcript(child), { '## You', '', 'stream please', '', '## test', '', STREAM })
    -- The core's own markdown export is the same text.
    T.eq(child:lua([[return require('acp').export()]]), H.transcript_text(child))
  end },

  { 'the agent receives the prompt, initialize and session/new as sent', function()
    local child, paths = H.start()
    H.open(child)
    H.turn(child, 'stream it')
    local init = H.events_of(paths, 'initialize')[1].params
    T.eq(init.protocolVersion, 1)
    T.eq(init.clientInfo.name, 'acp.nvim')
    -- What the default config turns on is advertised.
    T.eq(init.clientCapabilities.fs, { readTextFile = true, writeTextFile = true })
    T.eq(init.clientCapabilities.terminal, true)
    local new = H.events_of(paths, 'session/new')[1].params
    T.eq(new.cwd, H.root)
    T.eq(new.mcpServers, {})
    local prompt = H.events_of(paths, 'prompt')[1]
    T.eq(prompt.prompt, { { type = 'text', text = 'stream it' } })
  end },

  { 'typing in the input and <C-s> (insert) or <CR> (normal) sends', function()
    local child = H.start()
    H.open(child)
    child:feed('hello there<C-s>')
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    child:wait_for([[return vim.tbl_contains(require('acp').current():lines(), 'echo: hello there')]])
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { '' })
    child:feed('second<Esc><CR>')
    child:wait_for([[return vim.tbl_contains(require('acp').current():lines(), 'echo: second')]])
  end },

  { 'thoughts are folded by default, markdown renders as the agent sent it', function()
    local child = H.start()
    H.open(child)
    H.turn(child, 'markdown')
    local lines = H.transcript(child)
    T.eq(lines[7], '> **Thinking**')
    T.eq(lines[8], '> The user wants markdown.')
    T.eq(lines[9], '> Let me write some.')
    T.contains(lines, '```lua')
    local folded = child:lua([[
      local v = require('acp').current()
      return vim.api.nvim_win_call(v.win, function()
        return { vim.fn.foldclosed(7), vim.fn.foldclosedend(7), vim.fn.foldclosed(11) }
      end)
    ]])
    T.eq(folded[1], 7, 'the thought starts a closed fold')
    T.truthy(folded[2] >= 9, 'the fold covers the thought')
    T.eq(folded[3], -1, 'the answer is not folded')
  end },

  { 'cancel mid-stream ends the turn cancelled and late chunks are not appended', function()
    local child, paths = H.start()
    H.open(child)
    child:lua([[require('acp').send('slow')]])
    child:wait_for([[return require('acp').current():lines()[7] ~= nil]], 3000)
    child:cmd('AcpCancel')
    child:wait_for([[return require('acp').current().state == 'idle']])
    local at_cancel = H.transcript(child)
    T.eq(at_cancel[#at_cancel], '⚠ Cancelled')
    -- The scripted agent keeps streaming after the cancel: none of it shows.
    vim.wait(500)
    T.eq(H.transcript(child), at_cancel)
    T.wait(function()
      return #H.events_of(paths, 'turn_end') == 1
    end, 3000, 'the agent ended its turn')
    T.eq(H.events_of(paths, 'cancel')[1].sessionId, H.events_of(paths, 'prompt')[1].sessionId)
    T.eq(H.events_of(paths, 'turn_end')[1].stopReason, 'cancelled')
    -- A new turn works normally.
    H.turn(child, 'stream')
    T.eq(H.transcript(child)[#H.transcript(child)], STREAM)
  end },

  { '<C-c> in the chat cancels too', function()
    local child = H.start()
    H.open(child)
    child:lua([[require('acp').send('slow')]])
    child:wait_for([[return require('acp').current().state == 'running']])
    child:settle()
    child:feed('<C-c>')
    child:wait_for([[local l = require('acp').current():lines(); return l[#l] == '⚠ Cancelled']])
  end },

  { 'the agent crashing mid-turn shows exit code and stderr, Neovim stays up', function()
    local child = H.start()
    H.open(child)
    local pid = child:lua([[return require('acp.core').thread_info(require('acp').current().thread).pid]])
    H.turn(child, 'crash now')
    local text = H.transcript_text(child)
    T.match(text, 'about to fail')
    T.match(text, '✖ Agent `test` exited with code 3%.')
    T.match(text, 'Last stderr lines:\npanic: the scripted agent blew up\nboom')
    T.eq(child:lua([[return require('acp').current().state]]), 'disconnected')
    T.falsy(H.pid_alive(pid), 'the agent process is gone')
    -- Neovim is alive and a new prompt restarts the agent with a new session.
    H.turn(child, 'stream again')
    text = H.transcript_text(child)
    T.match(text, 'ℹ Restarted `test` with a new session')
    T.match(text, STREAM .. '$')
    T.neq(child:lua([[return require('acp.core').thread_info(require('acp').current().thread).pid]]), pid)
  end },

  { 'quitting Neovim mid-turn leaves no agent process behind', function()
    -- The agent runs under a shell that also starts a grandchild: the whole
    -- process group must go.
    local dir = T.tmpdir('quit')
    local marker = dir .. '/sleeper.pid'
    local script = ('sleep 300 & echo $! > %s; exec %s --scenario %s'):format(marker, H.agent_bin, H.scenario('chat'))
    local child = H.start({ agent = { cmd = 'sh', args = { '-c', script } } })
    H.open(child)
    child:lua([[require('acp').send('hang')]])
    child:wait_for([[return vim.tbl_contains(require('acp').current():lines(), 'working on it')]])
    local pid = child:lua([[return require('acp.core').thread_info(require('acp').current().thread).pid]])
    local sleeper = tonumber(T.read_file(marker))
    T.truthy(H.pid_alive(pid) and H.pid_alive(sleeper))
    local t0 = T.now_ms()
    local code = child:stop()
    local took = T.now_ms() - t0
    T.eq(code, 0)
    T.truthy(took < 1500, ('quit took %d ms'):format(took))
    T.wait(function()
      return not H.pid_alive(pid) and not H.pid_alive(sleeper)
    end, 1000, 'agent and its children are gone')
  end },

  { 'stop reasons other than end_turn and prompt errors are shown', function()
    local child = H.start()
    H.open(child)
    H.turn(child, 'maxtokens')
    T.eq(H.transcript(child)[#H.transcript(child)], '⚠ Stopped: max_tokens')
    H.turn(child, 'fail')
    T.match(H.transcript_text(child), '✖ Error: .*model overloaded')
    H.turn(child, 'stream')
    T.no_match(H.transcript_text(child), 'Stopped: end_turn')
  end },

  { 'unknown agent requests get -32601; unknown updates and _ notifications are ignored', function()
    local child, paths = H.start()
    H.open(child)
    H.turn(child, 'unknown-method')
    T.eq(#H.events_of(paths, 'check_failed'), 0)
    local resp = H.events_of(paths, 'client_response')[1]
    T.eq(resp.method, 'x/not_a_method')
    T.eq(resp.error.code, -32601)
    H.turn(child, 'extras')
    T.match(H.transcript_text(child), 'still fine$')
    T.eq(child:lua([[return require('acp').current().info.title]]), 'Scripted title')
    T.match(child:lua([[return vim.wo[require('acp').current().win].winbar]]), 'Scripted title')
  end },

  { 'a flood of chunks arrives in few drains, as few buffer edits', function()
    local child = H.start()
    H.open(child)
    child:lua([[
      local v = require('acp').current()
      _G.edits = 0
      vim.api.nvim_buf_attach(v.buf, false, { on_bytes = function() _G.edits = _G.edits + 1 end })
      _G.stats0 = require('acp.core').stats()
    ]])
    H.turn(child, 'flood', 10000)
    local lines = H.transcript(child)
    -- 5000 chunks of "NNNNNN:xxx...\n" (40 bytes): 5000 lines plus the last empty one.
    T.eq(#lines, 6 + 5000 + 1)
    for _, i in ipairs({ 0, 1, 2499, 4999 }) do
      T.eq(lines[7 + i], ('%06d:'):format(i) .. ('x'):rep(32))
    end
    local r = child:lua([[
      local s = require('acp.core').stats()
      return { edits = _G.edits, drains = s.drains - _G.stats0.drains }
    ]])
    T.truthy(r.edits < 500, ('%d buffer edits for 5000 chunks'):format(r.edits))
    T.truthy(r.drains < 500, ('%d drains for 5000 chunks'):format(r.drains))
  end },

  { 'one agent process serves the chats of two tabs, routed by session', function()
    local child = H.start()
    H.open(child)
    H.turn(child, 'first tab')
    child:cmd('tabnew')
    H.open(child)
    H.turn(child, 'second tab')
    local r = child:lua([[
      local core, out = require('acp.core'), {}
      for tab, v in pairs(require('acp.chat').by_tab) do
        local i = core.thread_info(v.thread)
        out[#out + 1] = { pid = i.pid, sid = i.session_id, last = v:lines()[#v:lines()] }
      end
      table.sort(out, function(a, b) return a.sid < b.sid end)
      return out
    ]])
    T.eq(#r, 2)
    T.eq(r[1].pid, r[2].pid)
    T.neq(r[1].sid, r[2].sid)
    T.eq(r[1].last, 'echo: first tab')
    T.eq(r[2].last, 'echo: second tab')
  end },

  { 'permission request: the float lists options, a key answers it', function()
    local child, paths = H.start()
    H.open(child)
    child:lua([[require('acp').send('permission')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    local float = child:lua([[
      local p = require('acp.ask.permission')
      return vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)
    ]])
    T.contains(float, '[execute] rm build/')
    T.contains(float, '  $ rm -r build/')
    T.contains(float, '  1/y  Allow  [allow once]')
    T.contains(float, '  2/n  Reject  [reject once]')
    -- The user was typing in the input: the float did not take focus.
    T.eq(child:lua([[return vim.api.nvim_get_current_win() == require('acp').current().input_win]]), true)
    child:feed('<Esc>')
    H.enter_permission(child)
    T.eq(child:lua([[return vim.api.nvim_get_current_win() == require('acp.ask.permission').win]]), true)
    child:feed('y')
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    T.eq(#H.events_of(paths, 'check_ok'), 1)
    T.match(H.transcript_text(child), 'permission granted$')
  end },

  { 'cancel answers a pending permission request with cancelled', function()
    local child, paths = H.start()
    H.open(child)
    child:lua([[require('acp').send('permission')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    child:cmd('AcpCancel')
    child:wait_for([[return #require('acp.ask.permission').queue == 0]])
    T.wait(function()
      return #H.events_of(paths, 'client_response') == 1
    end, 3000)
    T.eq(H.events_of(paths, 'client_response')[1].result, { outcome = { outcome = 'cancelled' } })
  end },

  { 'slash commands announced by the agent complete at the start of the input', function()
    local child, paths = H.start({ turns = {
      { match = 'hi', steps = {
        { update = { sessionUpdate = 'available_commands_update', availableCommands = {
          { name = 'review', description = 'Review the current changes' },
          { name = 'init', description = 'Create AGENTS.md', input = { hint = 'project name' } },
          { name = 'release', description = 'Cut a release' } } } },
        { message = 'ready' } } },
    } })
    H.open(child)
    H.turn(child, 'hi')
    child:feed('/re')
    child:wait_for([[return vim.fn.pumvisible() == 1]])
    local items = child:lua([[
      local out = {}
      for _, it in ipairs(vim.fn.complete_info({ 'items' }).items) do out[#out + 1] = { it.abbr, it.menu } end
      return out
    ]])
    T.eq(items, { { '/release', 'Cut a release' }, { '/review', 'Review the current changes' } })
    child:feed('<C-n><C-n><C-y>now<C-s>')
    child:wait_for([[return require('acp').current().turns_ended == 2]])
    T.eq(H.events_of(paths, 'prompt')[2].prompt, { { type = 'text', text = '/review now' } })
  end },

  { 'session modes: shown in the winbar, switched with :AcpMode', function()
    local child, paths = H.start({ agent_info = { modes = {
      currentModeId = 'ask',
      availableModes = {
        { id = 'ask', name = 'Ask', description = 'Ask before edits' },
        { id = 'code', name = 'Code', description = 'Edit freely' } } } },
      turns = { { match = 'x', steps = { { message = 'y' } } } } })
    H.open(child)
    local winbar = [[return vim.wo[require('acp').current().win].winbar]]
    T.match(child:lua(winbar), '%[Ask%]')
    child:cmd('AcpMode code')
    child:wait_for([[return require('acp').current().info.mode == 'code']])
    T.match(child:lua(winbar), '%[Code%]')
    T.eq(H.events_of(paths, 'set_mode')[1].params.modeId, 'code')
    child:lua(RECORD_NOTIFY)
    child:cmd('AcpMode warp')
    T.match(child:lua('return _G.notes[1].msg'), 'unknown mode "warp" %(modes: ask, code%)')
    T.eq(#H.events_of(paths, 'set_mode'), 1, 'nothing sent for an unknown mode')
  end },

  { 'an agent that needs sign-in: the chat lists its methods, :AcpAuth signs in and opens the session', function()
    local child, paths = H.start({ agent_info = { auth_methods = {
      { id = 'api-key', name = 'API key', description = 'Use GEMINI_API_KEY' },
      { id = 'oauth', name = 'Browser sign-in' } } },
      turns = { { match = 'hello', steps = { { message = 'signed in and answering' } } } } })
    child:cmd('AcpChat')
    child:wait_for([[return require('acp').current().state == 'disconnected']])
    local text = H.transcript_text(child)
    T.match(text, 'Agent `test` needs you to sign in: run :AcpAuth {method}%. Methods:\n  api%-key: API key %(Use GEMINI_API_KEY%)\n  oauth: Browser sign%-in')
    child:cmd('AcpAuth api-key')
    child:wait_for([[return require('acp').current().state == 'idle']])
    T.eq(H.events_of(paths, 'authenticate')[1].params, { methodId = 'api-key' })
    T.match(H.transcript_text(child), 'ℹ Signed in with `api%-key`')
    H.turn(child, 'hello')
    T.match(H.transcript_text(child), 'signed in and answering$')
  end },
}
