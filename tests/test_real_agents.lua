-- Real agents that do their own file I/O, run offline: the agent's model is
-- tests/peers/mock_llm.py on 127.0.0.1, playing a scenario from
-- tests/peers/scenarios/. Every other host the agent tries goes through a
-- proxy that refuses it (the mock itself), so nothing leaves the machine.
--
-- codex-acp (`make deps` installs it into .deps/npm-codex, or set
-- ACP_CODEX_ACP to its binary) applies patches to the disk itself, after
-- asking for permission: the plugin has to notice, bring the buffer up to
-- date without a prompt, and record the change for review.
--
-- Kimi CLI, Mistral Vibe, fast-agent and Cline (`make peer-deps` installs
-- them into .deps/peers; tests/helpers/peers.lua has their profiles) each run
-- both turns of tests/peers/scenarios/read_edit_shell_more.json, the user
-- answering every float with allow once.
--
-- Claude Code (claude-agent-acp) and Gemini CLI (`make peer-deps`) each run
-- tests/peers/scenarios/explain_read_edit.json with the user typing in the
-- chat's input: what the chat shows while the edit waits for permission, and
-- one chord from Insert mode answering it. Claude Code also streams the slow
-- answer of tests/peers/scenarios/steer_slow_answer.json while the user
-- steers it from the input (<M-s>, `_session/steering`).
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local P = require('tests.helpers.peers')
local Screen = require('tests.helpers.screen')

local uv = vim.uv or vim.loop

local PEERS = H.root .. '/tests/peers'
local PROMPT = "Please change 'two' to 'TWO (codex)' in notes.txt."
local ORIGINAL = 'one\ntwo\nthree\nfour\nfive\n'

--- The codex-acp binary, or a skip saying why there is none.
local function codex_bin()
  local bin = vim.env.ACP_CODEX_ACP
  if not bin or bin == '' then
    -- The platform package npm picked (@zed-industries/codex-acp-<os>-<arch>).
    local found = vim.fn.glob(H.root .. '/.deps/npm-codex/node_modules/@zed-industries/codex-acp-*/bin/codex-acp', false, true)
    bin = found[1]
  end
  if not bin or vim.fn.executable(bin) ~= 1 then
    T.skip('codex-acp is not installed (make deps installs it with npm)')
  end
  return bin
end

local function python()
  for _, name in ipairs({ 'python3', 'python' }) do
    if vim.fn.executable(name) == 1 then
      return name
    end
  end
  T.skip('python3 is not installed (the mock LLM server needs it)')
end

-- Mock servers started by the current case (stopped in after_each).
local mocks = {}

--- Starts the mock LLM server on a free port of 127.0.0.1 playing
--- `scenario` ({cwd} is `dir`). Returns its URL and request log path.
local function start_mock(scenario, dir)
  local log = T.tmpdir('mock') .. '/requests.jsonl'
  local url, out = nil, ''
  local proc = vim.system({
    python(), PEERS .. '/mock_llm.py',
    '--scenario', PEERS .. '/scenarios/' .. scenario .. '.json',
    '--port', '0', '--var', 'cwd=' .. dir, '--log', log,
  }, {
    stdout = function(_, data)
      out = out .. (data or '')
      url = url or out:match('MOCK_LLM_LISTENING (http://127%.0%.0%.1:%d+)')
    end,
  })
  table.insert(mocks, proc)
  T.truthy(vim.wait(T.remaining(10000), function()
    return url ~= nil or proc:is_closing()
  end, 10) and url, 'the mock LLM server did not start')
  return url, log
end

--- The mock's request log: one table per request it got.
local function mock_requests(log)
  local out = {}
  for _, line in ipairs(vim.fn.filereadable(log) == 1 and vim.fn.readfile(log) or {}) do
    out[#out + 1] = vim.json.decode(line)
  end
  return out
end

--- A child with codex-acp as the agent `test`, its model served by the
--- mock, its state in fresh temporary folders; the chat open and idle.
local function start_codex(dir)
  local bin = codex_bin()
  local url, mock_log = start_mock('codex_apply_patch', dir)
  local state = T.tmpdir('codex-state')
  local codex_home, home = state .. '/codex', state .. '/home'
  vim.fn.mkdir(codex_home, 'p')
  vim.fn.mkdir(home, 'p')
  -- Patches and commands are asked about ("untrusted"); the sandbox is off
  -- because a container may lack what it needs.
  T.write_file(codex_home .. '/config.toml', table.concat({
    'model = "gpt-5.3-codex"',
    'model_provider = "mock"',
    'approval_policy = "untrusted"',
    'sandbox_mode = "danger-full-access"',
    '',
    '[model_providers.mock]',
    'name = "Mock"',
    ('base_url = "%s/v1"'):format(url),
    'env_key = "MOCK_API_KEY"',
    'wire_api = "responses"',
    '',
  }, '\n'))
  local env = {
    CODEX_HOME = codex_home,
    HOME = home,
    MOCK_API_KEY = 'mock-key',
    RUST_LOG = 'warn',
    NO_PROXY = '127.0.0.1,localhost',
    no_proxy = '127.0.0.1,localhost',
  }
  for _, k in ipairs({ 'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy' }) do
    env[k] = url
  end
  local child, paths = H.start({
    cwd = dir,
    agent = { cmd = bin, args = {}, env = env },
    -- Credentials and endpoints of the user's own setup never reach the agent.
    env = { OPENAI_API_KEY = false, CODEX_API_KEY = false, OPENAI_BASE_URL = false, CODEX_HOME = false },
  })
  child:cmd('AcpChat')
  child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']], 20000)
  -- Edit files in the window left of the chat, in normal mode.
  child:cmd('stopinsert')
  child:cmd('wincmd t')
  -- Each sync after a drain, as seen right after it: was the turn still
  -- running, and what did the file's buffer hold?
  child:lua([[
    local sync = require('acp.editor.sync')
    local orig = sync.after_apply
    _G.syncs = {}
    sync.after_apply = function(view)
      orig(view)
      local buf = vim.fn.bufnr(vim.g.watched_file or '')
      table.insert(_G.syncs, {
        turns_ended = view.turns_ended,
        line2 = buf > 0 and vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] or vim.NIL,
      })
    end
  ]])
  paths.mock_log = mock_log
  return child, paths
end

--- No prompt waits for the user and none was shown (without a UI the
--- W11/W12 dialogs leave their text in v:warningmsg).
local function no_prompt(child)
  T.eq(child:rpc('nvim_get_mode').blocking, false, 'Neovim is not blocked by a prompt')
  local msgs = child:messages() .. '\n' .. child:lua('return vim.v.warningmsg')
  T.no_match(msgs, 'W1[123]')
  T.no_match(msgs, 'changed since')
  T.no_match(msgs, 'has changed')
end

--- Sends the prompt, answers codex's permission request for the patch like
--- a user (allow once), and waits for the turn to end.
local function run_patch_turn(child, file)
  child:lua([[assert(require('acp').send(...))]], { PROMPT })
  child:wait_for([[return #require('acp.ask.permission').queue == 1]], 20000)
  local request = child:lua([[
    local p = require('acp.ask.permission')
    return { lines = p.lines(p.queue[1]), options = p.queue[1].payload.options }
  ]])
  T.match(table.concat(request.lines, '\n'), 'notes%.txt', 'the request names the file')
  local allow
  for i, o in ipairs(request.options) do
    if o.kind == 'allow_once' then
      allow = allow or i
    end
  end
  T.truthy(allow, 'an allow-once option: ' .. vim.inspect(request.options))
  T.eq(T.read_file(file), ORIGINAL, 'nothing is applied before the answer')
  H.enter_permission(child)
  child:lua([[require('acp.ask.permission').choose(...)]], { allow })
  child:wait_for([[return require('acp').current().turns_ended == 1]], 20000)
end

--- What a codex turn that patched `file` must leave behind, whatever the
--- buffer held: the agent wrote the disk itself, the sync saw it when the
--- tool call completed, and review lists it as the agent's change.
--- `before`: the text the buffer held right before the agent's change
--- (review takes the change back to it, keeping the user's unsaved edits).
local function check_agent_edit(child, paths, file, before)
  T.eq(T.read_file(file), 'one\nTWO (codex)\nthree\nfour\nfive\n', 'codex patched the file on disk')
  local log = T.read_file(paths.log)
  T.match(log, 'request session/request_permission', 'codex asked before patching')
  T.no_match(log, 'request fs/write_text_file', 'codex wrote the disk itself')
  local text = H.transcript_text(child)
  T.match(text, "I'll patch notes%.txt%.")
  T.match(text, 'edit · Edit [^\n]*notes%.txt · completed', 'the tool card completed')
  T.match(text, '\n  %-two\n  %+TWO %(codex%)\n', "the card shows codex's diff")
  T.match(text, 'Done: notes%.txt now says TWO %(codex%)%.')
  T.no_match(text, 'Stopped:')
  -- Synced in a drain before the turn ended: the tool call's completion.
  local early = vim.tbl_filter(function(s)
    return s.turns_ended == 0 and s.line2 == 'TWO (codex)'
  end, child:lua('return _G.syncs'))
  T.truthy(#early > 0, 'the buffer was synced when the tool call completed: ' .. vim.inspect(child:lua('return _G.syncs')))
  local writes = child:lua([[return require('acp').writes()]])
  local mine = vim.tbl_filter(function(w)
    return w.path == file
  end, writes)
  T.eq(#mine, 1, 'one change recorded for the file: ' .. vim.inspect(writes))
  T.eq(mine[1].target, 'agent')
  T.eq(mine[1].original, before or ORIGINAL, 'review can restore the text from before the patch')
  -- Nothing tried to leave the machine (the proxy refuses and logs it),
  -- and the model was asked through the Responses API.
  local reqs = mock_requests(paths.mock_log)
  local refused = vim.tbl_filter(function(r)
    return r.choice == 'proxy-refused'
  end, reqs)
  T.eq(#refused, 0, 'requests to other hosts: ' .. vim.inspect(refused))
  T.truthy(#vim.tbl_filter(function(r)
    return r.path:find('/v1/responses', 1, true) ~= nil and r.choice:find('^prompt0/') ~= nil
  end, reqs) >= 2, 'the scenario was played over /v1/responses')
end

local function lines(child)
  return child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]])
end

local function open_file(child, file)
  -- In the first window: the chat's windows keep their buffers.
  child:cmd('wincmd t')
  child:cmd('edit ' .. vim.fn.fnameescape(file))
  child:lua([[vim.g.watched_file = ...]], { file })
end

-- The read-edit-shell task of read_edit_shell_more.json.
local TASK = {
  prompt1 = "Please read hello.txt, change 'world' to 'ACP', write a notes.txt saying what you did, then run `cat hello.txt notes.txt | tee result.txt` to show the result.",
  prompt2 = 'Thanks. Now list the files here with ls.',
  command1 = 'cat hello.txt notes.txt | tee result.txt',
  command2 = 'ls',
  done1 = 'Done. hello.txt now greets ACP, and notes.txt records the change.',
  done2 = 'Second turn done: the files are listed above.',
  hello = 'Hello, world!\nThis file is used by the ACP acceptance tests.\n',
  hello_after = 'Hello, ACP!\nThis file is used by the ACP acceptance tests.\n',
  notes = "Replaced 'world' with 'ACP' in hello.txt.\n",
}

--- Installs in the child `_G.real_shown(seen)`: the float on screen, as
--- rendered, when it shows a request not in `seen`; false otherwise.
local function install_shown(child)
  child:lua([[
    _G.real_shown = function(seen)
      local p = require('acp.ask.permission')
      local item = p.shown
      if not (item and p.win and vim.api.nvim_win_is_valid(p.win) and p.buf) then
        return false
      end
      if seen[tostring(item.request)] then
        return false
      end
      return {
        request = tostring(item.request),
        lines = vim.api.nvim_buf_get_lines(p.buf, 0, -1, false),
        kinds = vim.tbl_map(function(o) return o.kind end, item.payload.options or {}),
      }
    end
  ]])
end

--- Sends `text` and, until turn `n` has ended, answers each float like a
--- user: moves into it and presses `y` (allow once). Returns the floats as
--- they were shown ({ request, lines, text, kinds }).
local function drive_turn(child, text, n)
  child:lua([[assert(require('acp').send(...))]], { text })
  local floats, seen = {}, {}
  while true do
    child:wait_for(([[
      local seen = ...
      return require('acp').current().turns_ended >= %d or _G.real_shown(seen) ~= false
    ]]):format(n), 90000, { seen })
    local f = child:lua([[return _G.real_shown(...)]], { seen })
    if not f then
      break
    end
    f.text = table.concat(f.lines, '\n')
    floats[#floats + 1] = f
    T.truthy(#floats <= 12, 'asked more than 12 times in one turn: ' .. vim.inspect(floats))
    seen[f.request] = true
    T.contains(f.kinds, 'allow_once', 'an allow-once option in: ' .. f.text)
    H.enter_permission(child)
    child:feed('y')
    child:wait_for([[
      local r = ...
      for _, it in ipairs(require('acp.ask.permission').queue) do
        if tostring(it.request) == r then return false end
      end
      return true
    ]], 10000, { f.request })
  end
  T.eq(child:lua([[return require('acp').current().turns_ended]]), n, 'turn ' .. n .. ' ended')
  return floats
end

--- The floats whose rendered text holds `s` (plainly).
local function naming(floats, s)
  return vim.tbl_filter(function(f)
    return f.text:find(s, 1, true) ~= nil
  end, floats)
end

local function texts(floats)
  return table.concat(vim.tbl_map(function(f)
    return f.text
  end, floats), '\n----\n')
end

--- What every float of a turn must show: each names what it asks (a file
--- of the task or the turn's command), an edit names its file, none says
--- the agent did not say what it does; the turn's shell step is asked
--- about once, with its command line shown (`unasked`: the agent runs it
--- without asking, by its own policy).
local function check_floats(floats, command, turn, unasked)
  local all = texts(floats)
  for _, f in ipairs(floats) do
    T.no_match(f.text, 'did not say what this does', 'turn ' .. turn .. ': a float that names nothing')
    T.truthy(f.text:find('hello.txt', 1, true) or f.text:find('notes.txt', 1, true) or f.text:find(command, 1, true),
      'turn ' .. turn .. ': the float names what it asks:\n' .. f.text)
    if f.lines[3] and f.lines[3]:match('^%[edit%]') then
      T.truthy(f.text:find('hello.txt', 1, true) or f.text:find('notes.txt', 1, true), 'an edit float names its file:\n' .. f.text)
    end
  end
  local shell = vim.tbl_filter(function(f)
    return f.text:find('$ ' .. command, 1, true) ~= nil or f.text:find(': ' .. command, 1, true) ~= nil
      or f.text:find('"' .. command .. '"', 1, true) ~= nil
  end, floats)
  T.eq(#shell, unasked and 0 or 1, ('turn %d: %s float shows the command `%s`:\n%s'):format(turn, unasked and 'no' or 'one', command, all))
end

--- Stops the child with :qa! and fails, naming them, if processes of the
--- agent's run remain (they are killed first): those seen just before the
--- quit (see P.tracked) and any carrying the mark afterwards.
local function check_nothing_left(child, mark, dirs)
  local before = P.tracked(mark, dirs, child:pid())
  T.truthy(#vim.tbl_filter(function(p)
    return p.pid ~= child:pid()
  end, before) > 0, 'the agent runs')
  child:stop(5000)
  local function left()
    local out = P.still_running(before)
    local pids = {}
    for _, p in ipairs(out) do
      pids[p.pid] = true
    end
    for _, p in ipairs(P.tracked(mark, dirs, nil)) do
      if not pids[p.pid] then
        out[#out + 1] = p
      end
    end
    return out
  end
  local ok = pcall(T.wait, function()
    return #left() == 0
  end, 3000)
  local rest = left()
  for _, p in ipairs(rest) do
    uv.kill(p.pid, 'sigkill')
  end
  io.write(('  %d processes ran (%s); %d left after :qa!\n'):format(#before, table.concat(vim.tbl_map(function(p)
    return p.comm
  end, before), ' '), #rest))
  T.truthy(ok and #rest == 0, ('%d of %d processes left after :qa!: %s'):format(#rest, #before, vim.inspect(rest)))
end

--- Runs both turns of the task with the real agent `name`, checks floats,
--- files, the open buffer, the transcript, and that nothing runs after :qa!.
local function real_task(name)
  local prof = P.profile(name)
  local dir = H.project({ ['hello.txt'] = TASK.hello })
  local url, mock_log = start_mock('read_edit_shell_more', dir)
  local mark = ('%s-%d-%d'):format(name, vim.fn.getpid(), uv.hrtime())
  local agent, unset, state = P.agent(prof, url, mark)
  local child, paths = H.start({ cwd = dir, agent = agent, env = unset })
  child:cmd('AcpChat')
  child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']], 90000)
  child:cmd('stopinsert')
  install_shown(child)
  local hello = dir .. '/hello.txt'
  open_file(child, hello)
  local buf = child:lua([[return vim.api.nvim_get_current_buf()]])
  -- Each check runs even when an earlier one failed (a real agent's run
  -- is slow to repeat): the case fails with all of them at the end.
  local problems = {}
  local function check(fn, ...)
    local ok, err = pcall(fn, ...)
    if not ok then
      problems[#problems + 1] = tostring(err)
    end
  end
  local ok, err = pcall(function()
    local floats1 = drive_turn(child, TASK.prompt1, 1)
    check(check_floats, floats1, TASK.command1, 1)
    check(function()
      T.eq(T.read_file(hello), TASK.hello_after, 'hello.txt on disk')
      local notes = prof.no_final_newline and TASK.notes:gsub('\n$', '') or TASK.notes
      T.eq(T.read_file(dir .. '/notes.txt'), notes, 'notes.txt on disk')
      T.eq(T.read_file(dir .. '/result.txt'), TASK.hello_after .. notes, 'result.txt on disk')
    end)
    check(function()
      local want = vim.split(TASK.hello_after, '\n', { trimempty = true })
      local synced = pcall(child.wait_for, child, [[
        local buf, want = ...
        return vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), want)
      ]], 5000, { buf, want })
      T.eq(child:buf_lines(buf), want, 'the open buffer of hello.txt follows the disk' .. (synced and '' or ' (not within 5 s)'))
      T.eq(child:lua([[return vim.bo[...].modified]], { buf }), false, 'the buffer still matches its file')
      no_prompt(child)
    end)

    local floats2 = drive_turn(child, TASK.prompt2, 2)
    check(check_floats, floats2, TASK.command2, 2, vim.tbl_contains(prof.unasked or {}, TASK.command2))

    check(function()
      local text = H.transcript_text(child)
      for _, s in ipairs({ TASK.prompt1, TASK.prompt2 }) do
        local _, count = text:gsub(vim.pesc(s), '')
        T.eq(count, 1, 'the prompt shows once in the transcript: ' .. s)
      end
      T.match(text, vim.pesc(TASK.done1), 'turn 1 answered')
      T.match(text, vim.pesc(TASK.done2), 'turn 2 answered')
      T.no_match(text, 'Stopped:')
      -- The ls output, wherever the agent put it (terminal, content or rawOutput).
      T.match(text, '\n[^\n]-%f[%w]result%.txt%s*\n', 'the ls output shows in the chat')
    end)
    local refused = vim.tbl_filter(function(r)
      return r.choice == 'proxy-refused'
    end, mock_requests(mock_log))
    io.write(('  %s: %d + %d floats; %d requests to other hosts refused\n'):format(prof.version, #floats1, #floats2, #refused))
  end)
  if not ok then
    problems[#problems + 1] = tostring(err)
  end
  local transcript = select(2, pcall(H.transcript_text, child))
  check(check_nothing_left, child, mark, { dir, state })
  if #problems > 0 then
    -- What the agent and the core said, to tell a real agent's trouble from ours.
    local log = vim.fn.filereadable(paths.log) == 1 and vim.fn.readfile(paths.log) or {}
    log = vim.tbl_filter(function(l)
      return not l:find(' AGENT ', 1, true)
    end, log)
    local tail = table.concat(vim.list_slice(log, math.max(1, #log - 20)), '\n')
    error(table.concat(problems, '\n----\n') .. '\n--- transcript:\n' .. tostring(transcript) .. '\n--- core log tail:\n' .. tail, 0)
  end
end

-- The explain-read-edit task (explain_read_edit.json): Claude makes the
-- whole prompt the session's title.
local GREET = {
  prompt = "Please fix the misspelled greeting in hello.lua and let greet take the name of the person to greet, keeping the module's shape as it is, and tell me what you changed and why",
  before = "local M = {}\nfunction M.greet()\n  print('helo')\nend\nreturn M\n",
  after = "local M = {}\nfunction M.greet(name)\n  print('hello, ' .. name)\nend\nreturn M\n",
  explain = {
    'The greeting in hello.lua is misspelled,',
    'and greet takes no name to greet.',
    'I will read the module first, then fix',
    'both in one small edit.',
  },
  done = "Done: greet(name) now prints 'hello, ' and the name.",
}

--- The real agent `name` runs the explain-read-edit task in a child with a
--- screen, the user typing in the chat's input (Insert mode): checks what
--- the screen shows while the edit waits (`want.header`: patterns the
--- header row matches), that <M-y> answers only after the grace period and
--- Insert mode continues, and that the edit lands.
local function real_chord(name, want)
  local prof = P.profile(name)
  local dir = H.project({ ['hello.lua'] = GREET.before })
  local url = start_mock('explain_read_edit', dir)
  local mark = ('%s-%d-%d'):format(name, vim.fn.getpid(), uv.hrtime())
  local agent, unset, state = P.agent(prof, url, mark)
  local child, paths = H.start({ cwd = dir, agent = agent, env = unset })
  local screen = Screen.attach(child, 120, 64)
  local problems = {}
  local ok, err = pcall(function()
    child:cmd('AcpChat')
    child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']], 90000)
    child:cmd('startinsert')
    child:lua([[
      _G.notes = {}
      local notify = vim.notify
      vim.notify = function(msg, level, o) table.insert(_G.notes, msg) return notify(msg, level, o) end
    ]])
    -- The user types the prompt and sends it, staying in Insert mode.
    child:feed(GREET.prompt .. '<C-s>')
    child:wait_for([[local p = require('acp.ask.permission')
      return p.shown ~= nil and p.win ~= nil and p.in_view()]], 90000)
    T.eq(child:lua([[return vim.api.nvim_get_mode().mode]]), 'i', 'still typing in the input')
    T.eq(child:lua([[return vim.api.nvim_get_current_win() == require('acp').current().input_win]]), true)
    -- A chord within the grace period (the clock held at the moment the
    -- request came into view) answers nothing and says wait.
    child:lua([[
      local p = require('acp.ask.permission')
      _G.real_now, p.now = p.now, function() return p.visible_since end
    ]])
    child:feed('<M-y>')
    T.eq(child:lua([[return #require('acp.ask.permission').queue]]), 1, 'an early chord answers nothing')
    T.match(table.concat(child:lua('return _G.notes'), '\n'), 'wait:')
    child:lua([[require('acp.ask.permission').now = _G.real_now]])
    child:wait_for([[return require('acp.ask.permission').chords_ready()]], 5000)
    -- What the user sees while the edit waits.
    child:lua('return 1')
    local shot = screen:shot()
    local text = table.concat(shot.text, '\n')
    -- The header: the chat window's top row, from its first column.
    local win = child:lua([[local v = require('acp').current()
      return { pos = vim.api.nvim_win_get_position(v.win), width = vim.api.nvim_win_get_width(v.win) }]])
    io.write('  ' .. prof.version .. ' while the edit waits:\n' .. Screen.format(shot):gsub('\n%-%-|.*$', '') .. '\n')
    local row = vim.fn.strcharpart(shot.text[win.pos[1] + 1], win.pos[2], win.width)
    for _, pat in ipairs(want.header) do
      T.match(row, pat, 'the header keeps it')
    end
    T.no_match(row, '>$', 'the header is not cut by Neovim')
    local float = child:lua([[
      local v, p = require('acp').current(), require('acp.ask.permission')
      local last = ({ v:entry_range(v.last_index) })[2]
      return { card_end = vim.fn.screenpos(v.win, last + 1, 1).row, top = vim.fn.win_screenpos(p.win)[1],
        left = vim.fn.win_screenpos(p.win)[2], height = vim.api.nvim_win_get_height(p.win) }
    ]])
    -- In view, not under the float: the explanation, the card's title and
    -- its diff.
    local above = table.concat(vim.list_slice(shot.text, 1, float.top - 1), '\n')
    for _, s in ipairs(vim.list_extend(vim.deepcopy(GREET.explain), { "+  print('hello, ' .. name)", "-  print('helo')" })) do
      T.contains(above, s, 'in view above the float')
    end
    T.truthy(float.top > float.card_end, 'the float is under the card: ' .. vim.inspect(float))
    -- The one deliberate key, from Insert mode in the input.
    child:feed('<M-y>')
    child:wait_for([[return #require('acp.ask.permission').queue == 0]], 10000)
    T.eq(child:lua([[return vim.api.nvim_get_mode().mode]]), 'i', 'Insert mode continues')
    child:feed('next question')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { 'next question' },
      'what is typed next is text in the input')
    child:wait_for([[return require('acp').current().turns_ended == 1]], 90000)
    T.eq(T.read_file(dir .. '/hello.lua'), GREET.after, 'the edit landed on disk')
    local transcript = H.transcript_text(child)
    T.match(transcript, vim.pesc(GREET.done), 'the turn ended with its answer')
    T.no_match(transcript, 'Stopped:')
    if want.title then
      -- The title may come after the turn's answer (session_info_update).
      child:wait_for([[return require('acp').current().info.title ~= nil]], 10000)
      T.eq(child:lua([[return require('acp').current().info.title]]), GREET.prompt, 'the whole prompt is the title')
    end
    child:lua('return 1')
    row = vim.fn.strcharpart(screen:shot().text[win.pos[1] + 1], win.pos[2], win.width)
    for _, pat in ipairs(want.header) do
      T.match(row, (pat:gsub('waiting for you', 'ready')), 'after the turn, the header keeps it')
    end
    T.no_match(row, '>$', 'the header is not cut by Neovim')
  end)
  if not ok then
    problems[#problems + 1] = tostring(err)
  end
  screen:detach()
  local ok2, err2 = pcall(check_nothing_left, child, mark, { dir, state })
  if not ok2 then
    problems[#problems + 1] = tostring(err2)
  end
  if #problems > 0 then
    local log = vim.fn.filereadable(paths.log) == 1 and vim.fn.readfile(paths.log) or {}
    local tail = table.concat(vim.list_slice(log, math.max(1, #log - 30)), '\n')
    error(table.concat(problems, '\n----\n') .. '\n--- core log tail:\n' .. tail, 0)
  end
end

-- The steering tasks: a message steered into a slow answer while it
-- streams (steer_slow_answer.json), and one steered while an edit waits for
-- permission (steer_during_permission.json). `moment`: what the chat shows
-- when the user steers; `before`: the answer that was running (cut short
-- when the agent interrupts it); `answer`: the model's answer to the
-- steered message.
local STEER = {
  scenario = 'steer_slow_answer',
  files = { ['README.md'] = '# demo\n' },
  prompt = 'Please give me a slow overview of this project, section by section.',
  steer = 'Also say where the tests live, in one line.',
  moment = 'Section 1, the layout:',
  before = 'Section 1, the layout:',
  answer = 'Steered: the tests live in tests/, as you asked.',
}
local STEER_ASKING = {
  scenario = 'steer_during_permission',
  files = { ['hello.lua'] = "print('helo')\n" },
  prompt = 'Please fix the greeting in hello.lua.',
  steer = 'Also keep the old spelling in a comment.',
  asking = true,
  before = 'Edit done, first answer.',
  answer = 'Steered: the old spelling stays in a comment.',
}

--- The messages of the chat's protocol trace (`:AcpTraceSave`), decoded:
--- { dir = 'out'|'in', msg = <the JSON-RPC message> }.
local function trace_messages(child)
  local path = T.tmpdir('trace') .. '/trace.jsonl'
  child:cmd('AcpTraceSave ' .. vim.fn.fnameescape(path))
  local out = {}
  for line in T.read_file(path):gmatch('[^\n]+') do
    local e = vim.json.decode(line)
    if type(e.msg) == 'table' then
      out[#out + 1] = { dir = e.dir, msg = e.msg }
    end
  end
  return out
end

--- Requests the client sent with `method`.
local function sent(trace, method)
  return vim.tbl_filter(function(e)
    return e.dir == 'out' and e.msg.method == method
  end, trace)
end

--- The real agent `name` runs the steering task `task` (STEER or
--- STEER_ASKING): while its turn runs, the user types a message in the
--- chat's input and presses the steer key (<M-s>) from Insert mode.
--- Checks the wire (one `_session/steering`, no second `session/prompt`),
--- the outcome the agent answers, that the model got the message, and
--- that the transcript shows it once, with the answer to it.
local function real_steer(name, task)
  local prof = P.profile(name)
  local dir = H.project(task.files)
  local url, mock_log = start_mock(task.scenario, dir)
  local mark = ('%s-%d-%d'):format(name, vim.fn.getpid(), uv.hrtime())
  local agent, unset, state = P.agent(prof, url, mark)
  local child, paths = H.start({ cwd = dir, agent = agent, env = unset })
  local problems, trace = {}, {}
  local ok, err = pcall(function()
    child:cmd('AcpChat')
    child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']], 90000)
    T.eq(child:lua([[return require('acp').current().steering]]), true, 'the agent offers steering')
    child:cmd('startinsert')
    child:feed(task.prompt .. '<C-s>')
    -- The answer streams, or an edit waits for permission: the user types
    -- the next message and steers.
    if task.asking then
      child:wait_for([[local p = require('acp.ask.permission')
        return p.shown ~= nil and p.win ~= nil and vim.api.nvim_win_is_valid(p.win)]], 90000)
    else
      child:wait_for(([[local v = require('acp').current()
        return v.state == 'running' and table.concat(v:lines(), '\n'):find(%q, 1, true) ~= nil]]):format(task.moment), 90000)
    end
    child:feed(task.steer)
    child:feed('<M-s>')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { '' }, 'the input is cleared')
    T.eq(child:lua([[return vim.api.nvim_get_mode().mode]]), 'i', 'Insert mode continues')
    child:wait_for([[return table.concat(require('acp').current():lines(), '\n'):find('↪', 1, true) ~= nil]], 10000)
    if task.asking then
      -- The agent holds the message until the user has answered: the
      -- request stays, and answering it goes on with the turn.
      T.eq(child:lua([[local p = require('acp.ask.permission')
        return { #p.queue, p.win ~= nil and vim.api.nvim_win_is_valid(p.win) }]]), { 1, true }, 'the request still waits, its float open')
      H.enter_permission(child)
      child:feed('y')
      child:wait_for([[return #require('acp.ask.permission').queue == 0]], 10000)
    end
    child:wait_for(([[local v = require('acp').current()
      return v.state == 'idle' and table.concat(v:lines(), '\n'):find(%q, 1, true) ~= nil]]):format(task.answer), 90000)
    trace = trace_messages(child)
    local steers = sent(trace, '_session/steering')
    T.eq(#steers, 1, 'one _session/steering')
    T.eq(steers[1].msg.params.prompt, { { type = 'text', text = task.steer } })
    local prompts = sent(trace, 'session/prompt')
    T.eq(#prompts, 1, 'no second session/prompt')
    local answer
    for _, e in ipairs(trace) do
      if e.dir == 'in' and e.msg.method == nil and e.msg.id == steers[1].msg.id then
        answer = e.msg
      end
    end
    T.truthy(answer, 'the agent answered the steering request')
    -- A turn runs: the agent injects the message into it.
    T.eq(answer.result and answer.result.outcome, 'injected', 'the outcome: ' .. vim.inspect(answer))
    T.eq(child:lua([[return require('acp').current().turns_ended]]), 1, 'one turn')
    -- With notices and compaction advertised, the turn ends normally.
    local caps = sent(trace, 'initialize')[1].msg.params.clientCapabilities.session
    T.truthy(caps.notices and caps.compaction, 'notices and compaction advertised: ' .. vim.inspect(caps))
    for _, e in ipairs(trace) do
      if e.dir == 'in' and e.msg.method == nil and e.msg.id == prompts[1].msg.id then
        T.eq(e.msg.result and e.msg.result.stopReason, 'end_turn', 'the turn ended normally')
      end
    end
    -- The model got the steered message, and answered it.
    local reqs = mock_requests(mock_log)
    local got = vim.tbl_filter(function(r)
      return r.body and vim.json.encode(r.body):find(task.steer, 1, true) ~= nil
    end, reqs)
    T.truthy(#got > 0, 'the steered text reached the model: ' .. vim.inspect(vim.tbl_map(function(r) return r.choice end, reqs)))
    T.truthy(#vim.tbl_filter(function(r)
      return r.choice:find('^prompt1/') ~= nil
    end, reqs) > 0, 'the model answered the steered message')
    local refused = vim.tbl_filter(function(r)
      return r.choice == 'proxy-refused'
    end, reqs)
    T.eq(#refused, 0, 'requests to other hosts: ' .. vim.inspect(refused))
    -- The transcript: each message once, the steered one marked so.
    local text = H.transcript_text(child)
    for _, s in ipairs({ task.prompt, task.steer }) do
      local _, count = text:gsub(vim.pesc(s), '')
      T.eq(count, 1, 'shown once in the transcript: ' .. s)
    end
    T.match(text, vim.pesc(task.steer) .. '\n*ℹ ↪ steered into the running turn', 'shown as steered')
    T.match(text, vim.pesc(task.before), 'the answer it steered')
    if task.asking then
      T.match(text, 'edit · Edit hello%.lua · completed', 'the edit went on once allowed')
      T.eq(T.read_file(dir .. '/hello.lua'), "print('hello')\n", 'the edit landed on disk')
    end
    T.no_match(text, 'steering failed')
    T.eq(child:lua([[return #require('acp').current().queue]]), 0, 'nothing left queued')
    io.write(('  %s: steering %s answered %s\n'):format(prof.version, task.scenario, answer.result.outcome))
  end)
  if not ok then
    problems[#problems + 1] = tostring(err)
  end
  local transcript = select(2, pcall(H.transcript_text, child))
  local ok2, err2 = pcall(check_nothing_left, child, mark, { dir, state })
  if not ok2 then
    problems[#problems + 1] = tostring(err2)
  end
  if #problems > 0 then
    local wire = vim.tbl_map(function(e)
      return e.dir .. ' ' .. (e.msg.method or ('answer ' .. tostring(e.msg.id))) .. (e.msg.method == 'session/update'
        and (' ' .. tostring(vim.tbl_get(e.msg, 'params', 'update', 'sessionUpdate'))) or '')
    end, trace)
    error(table.concat(problems, '\n----\n') .. '\n--- transcript:\n' .. tostring(transcript)
      .. '\n--- wire:\n' .. table.concat(wire, '\n'), 0)
  end
end

return {
  after_each = function()
    for _, proc in ipairs(mocks) do
      if not proc:is_closing() then
        proc:kill('sigterm')
      end
      proc:wait(2000)
    end
    mocks = {}
  end,

  { 'codex-acp patches an open, unmodified file itself: the buffer reloads without a prompt, review lists it', function()
    local dir = H.project({ ['notes.txt'] = ORIGINAL })
    local file = dir .. '/notes.txt'
    local child, paths = start_codex(dir)
    open_file(child, file)
    run_patch_turn(child, file)
    check_agent_edit(child, paths, file)
    T.eq(lines(child), { 'one', 'TWO (codex)', 'three', 'four', 'five' })
    T.eq(child:lua('return vim.bo.modified'), false, 'the buffer still matches its file')
    no_prompt(child)
    child:cmd('checktime')
    no_prompt(child)
  end, timeout = 60000 },

  { 'codex-acp patches a file with unsaved edits elsewhere: merged into the buffer, nothing lost, no prompt', function()
    local dir = H.project({ ['notes.txt'] = ORIGINAL })
    local file = dir .. '/notes.txt'
    local child, paths = start_codex(dir)
    open_file(child, file)
    child:lua([[vim.api.nvim_buf_set_lines(0, 4, 5, false, { 'FIVE (user)' })]])
    run_patch_turn(child, file)
    check_agent_edit(child, paths, file, 'one\ntwo\nthree\nfour\nFIVE (user)\n')
    T.eq(lines(child), { 'one', 'TWO (codex)', 'three', 'four', 'FIVE (user)' })
    -- Review takes back codex's hunk only: the user's unsaved line stays.
    local base = child:lua([[
      local v = require('acp').current()
      return require('acp.core').review_base(v.thread, ..., table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n') .. '\n')
    ]], { file })
    T.eq(base.text, 'one\ntwo\nthree\nfour\nFIVE (user)\n', 'review takes back only the agent hunk')
    T.eq(child:lua('return vim.bo.modified'), true, 'the user edit is still unsaved')
    no_prompt(child)
    child:cmd('checktime')
    no_prompt(child)
    child:cmd('write')
    no_prompt(child)
    T.eq(T.read_file(file), 'one\nTWO (codex)\nthree\nfour\nFIVE (user)\n', 'both edits written')
  end, timeout = 60000 },

  { 'codex-acp patches a file on disk itself; :AcpRestore to before that turn puts the file back', function()
    local dir = H.project({ ['notes.txt'] = ORIGINAL })
    local file = dir .. '/notes.txt'
    local child = start_codex(dir)
    run_patch_turn(child, file)
    T.eq(T.read_file(file), 'one\nTWO (codex)\nthree\nfour\nfive\n', 'codex patched the file on disk')
    child:lua(H.STUB_SELECT)
    child:lua([[_G.pick = { 'Restore' }]])
    child:cmd('AcpRestore 1')
    T.wait(function()
      return T.read_file(file) == ORIGINAL
    end, 5000, 'the file is back to its text before the turn')
    T.match(child:lua([[return _G.asked[1].prompt]]), 'notes%.txt', 'the file was named before the restore')
    child:wait_for([[return table.concat(require('acp').current():lines(), '\n'):find('1 file put back to before turn 1', 1, true) ~= nil]], 3000)
    no_prompt(child)
  end, timeout = 60000 },

  { 'Claude Code (claude-agent-acp): with its long title the header keeps agent, state, mode and model; the edit\'s float hides neither the explanation nor the card; <M-y> from Insert mode answers after the grace period, Insert continues, the edit lands', function()
    real_chord('claude', { title = true, header = { '^ ACP  test · waiting for you · %[Manual%] · Default' } })
  end, timeout = 240000 },

  { 'Claude Code (claude-agent-acp): <M-s> from Insert mode while an answer streams steers it: one _session/steering (injected), no second session/prompt, the model gets the message, the transcript shows it once', function()
    real_steer('claude', STEER)
  end, timeout = 240000 },

  { 'Claude Code (claude-agent-acp): <M-s> while an edit waits for permission steers the turn (injected); the float stays until answered, the turn goes on, the model answers the message after the edit, one turn, shown once', function()
    real_steer('claude', STEER_ASKING)
  end, timeout = 240000 },

  { 'Gemini CLI: the edit\'s float hides neither the explanation nor the card; <M-y> from Insert mode answers after the grace period, Insert continues, the edit lands', function()
    real_chord('gemini', { header = { '^ ACP  test · waiting for you · %[Default%] · Auto' } })
  end, timeout = 240000 },

  { 'Kimi CLI runs both turns of the read-edit-shell task: floats name what they ask, files and the open buffer right, nothing left after :qa!', function()
    real_task('kimi')
  end, timeout = 240000 },

  { 'Mistral Vibe runs both turns of the read-edit-shell task: floats name what they ask, files and the open buffer right, nothing left after :qa!', function()
    real_task('vibe')
  end, timeout = 240000 },

  { 'fast-agent runs both turns of the read-edit-shell task: floats name what they ask, files and the open buffer right, nothing left after :qa!', function()
    real_task('fast-agent')
  end, timeout = 240000 },

  { 'Cline runs both turns of the read-edit-shell task: floats name what they ask, files and the open buffer right, nothing left after :qa!', function()
    real_task('cline')
  end, timeout = 240000 },
}
