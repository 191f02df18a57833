-- Protocol trace and replay: `:AcpTrace` shows each agent's traffic,
-- `:AcpTraceSave` writes it as JSONL with secrets redacted, and the test
-- agent's replay mode plays a saved trace back as the agent side. The
-- traces in tests/traces/ have the recorded shapes of Claude Code
-- (claude-code-acp 0.16), Gemini CLI 0.61 and Codex (codex-acp 0.16)
-- sessions; each replays against this client with no mismatch.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local function trace_path(name)
  return H.root .. '/tests/traces/' .. name .. '.jsonl'
end

--- A child whose agent `test` replays `trace`, in a project holding `files`.
local function replay(trace, files, config)
  local dir = H.project(files)
  local tmp = T.tmpdir('replay')
  local paths = { agent_log = tmp .. '/agent.jsonl' }
  local child = H.start({
    cwd = dir,
    config = config,
    agent = { cmd = H.agent_bin, args = { '--replay', trace }, env = { ACP_TEST_AGENT_LOG = paths.agent_log } },
  })
  return child, paths, dir
end

--- Answers the pending permission request with `key` (y: allow once, n: reject).
local function answer(child, key)
  child:wait_for([[return #require('acp.ask.permission').queue == 1]], 5000)
  H.enter_permission(child)
  child:feed(key)
  child:wait_for([[return #require('acp.ask.permission').queue == 0]], 3000)
end

--- The turn is sent; returns once it ended.
local function send(child, text)
  local before = child:lua([[return require('acp').current().turns_ended]])
  child:lua([[assert(require('acp').send(...))]], { text })
  return before
end

local function wait_turn(child, before, timeout)
  child:wait_for(([[return require('acp').current().turns_ended > %d]]):format(before), timeout or 10000)
end

--- Every client request of the trace was matched and answered in kind.
local function no_mismatch(paths)
  T.eq(vim.tbl_map(function(e)
    return e.detail
  end, H.events_of(paths, 'replay_mismatch')), {})
end

local function live_answer(paths, method_of)
  for _, e in ipairs(H.events_of(paths, 'replay_answer')) do
    if method_of(e) then
      return e.live
    end
  end
end

return {
  { 'Claude Code trace: fs read/write, permission, a terminal run by the client; no mismatch', function()
    local child, paths, dir = replay(trace_path('claude-code'), { ['hello.py'] = "print('helo')\n" }, { terminal = { confirm = 'never' } })
    H.open(child)
    local before = send(child, 'Fix the greeting in hello.py and run it')
    answer(child, 'y')
    wait_turn(child, before)
    T.eq(T.read_file(dir .. '/hello.py'), "print('hello')\n", 'the recorded edit was applied')
    local text = H.transcript_text(child)
    T.contains(text, "I'll read the file first.")
    T.contains(text, 'Fixed the typo: the script now prints `hello`.')
    local _, reads = text:gsub('Read hello%.py', '')
    T.eq(reads, 1, 'the duplicate tool_call updated its card')
    local out = live_answer(paths, function(e)
      return e.recorded.result and e.recorded.result.output ~= nil
    end)
    T.eq(out.result.output, 'hello from the terminal\n', 'the terminal ran for real')
    no_mismatch(paths)
    T.eq(#H.events_of(paths, 'replay_done'), 1)
    T.eq(child:lua([[return require('acp').current().state]]), 'idle')
  end },

  { 'Gemini CLI trace: thoughts, fs through ACP, an id first seen in a permission request; no mismatch', function()
    local child, paths, dir = replay(trace_path('gemini-cli'), { ['hello.py'] = "print('hello')\n" })
    H.open(child)
    local before = send(child, 'Add a farewell line to hello.py')
    answer(child, 'y')
    wait_turn(child, before)
    T.eq(T.read_file(dir .. '/hello.py'), "print('hello')\nprint('bye')\n")
    local text = H.transcript_text(child)
    T.contains(text, 'Planning the edit')
    T.contains(text, 'python3 hello.py', 'a card for an id never announced')
    T.contains(text, 'Added the farewell line')
    no_mismatch(paths)
  end },

  { 'Codex trace: UUID request ids, output in rawOutput, a rejected permission ends the turn cancelled; no mismatch', function()
    local child, paths = replay(trace_path('codex'), { ['test_x.py'] = 'def test_a(): pass\n' })
    H.open(child)
    local before = send(child, 'Run the tests')
    answer(child, 'y')
    wait_turn(child, before)
    T.contains(H.transcript_text(child), 'All 2 tests pass.')
    T.contains(H.transcript_text(child), '2 passed in 0.01s')
    child:wait_for([[return require('acp').current().info.title == 'Run the tests']], 3000)
    before = send(child, 'Delete the build folder')
    answer(child, 'n')
    wait_turn(child, before)
    T.contains(H.transcript_text(child), '⚠ Cancelled by the agent')
    local answers = H.events_of(paths, 'replay_answer')
    T.eq(#answers, 2)
    T.eq(answers[1].live.id, '5b0d3c9e-4f7a-4c1d-9a2e-7f1b6c8d2e01', 'the UUID id came back')
    T.eq(answers[2].live.result.outcome.optionId, 'abort')
    no_mismatch(paths)
  end },

  { ':AcpTraceSave redacts a message over 256 KiB (cut, then redacted) and writes a new 0600 file over an existing 0644 one', function()
    local dir = H.project()
    local child = H.start({ cwd = dir, turns = { { match = 'go', steps = { { message = 'ok' } } } }, config = {
      -- session/new carries these; the last server's argument makes it
      -- longer than the 256 KiB the trace keeps of a message.
      mcp_servers = {
        { name = 'db', command = 'srv', args = { '--api-key', 'sk-ARG-0451' }, env = { { name = 'DB_URL', value = 'postgres://u:pw-0451@h/db' } } },
        { name = 'big', command = 'c', args = { string.rep('a', 300 * 1024) }, env = {} },
      },
    } })
    H.open(child)
    local saved = dir .. '/trace.jsonl'
    T.write_file(saved, 'an older file\n')
    vim.uv.fs_chmod(saved, tonumber('644', 8))
    child:cmd('AcpTraceSave ' .. saved)
    local text = T.read_file(saved)
    T.no_match(text, '0451', 'no byte of a secret is saved')
    T.no_match(text, 'an older file')
    local new
    for line in text:gmatch('[^\n]+') do
      local e = vim.json.decode(line)
      if e.raw and e.raw:find('"method":"session/new"', 1, true) then
        new = e
      end
    end
    T.truthy(new, 'session/new is in the trace, cut')
    T.truthy(new.cut > 0)
    T.match(new.raw, '"env":%[{"name":"DB_URL","value":"%[redacted%]"}%]')
    T.match(new.raw, '"args":%["%-%-api%-key","%[redacted%]"%]')
    T.eq(vim.uv.fs_stat(saved).mode % 512, tonumber('600', 8), 'the file is private')
  end },

  { ':AcpTrace shows one line per message in both directions and stderr; :AcpTraceSave writes redacted JSONL (0600) that replays to the same transcript', function()
    local dir = H.project({ ['a.txt'] = 'alpha\n' })
    local turns = { { match = 'go', steps = {
      { stderr = 'debug: OPENAI_API_KEY=sk-live-123 loaded' },
      { message = 'Reading.' },
      { update = { sessionUpdate = 'tool_call', toolCallId = 't1', title = 'Read a.txt', kind = 'read', status = 'pending' } },
      H.req('fs/read_text_file', { path = dir .. '/a.txt' }),
      H.req('session/request_permission', {
        toolCall = { toolCallId = 't2', title = 'Write b.txt', kind = 'edit' },
        options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' }, { optionId = 'no', name = 'Reject', kind = 'reject_once' } },
      }),
      H.req('fs/write_text_file', { path = dir .. '/b.txt', content = 'beta\n' }),
      H.req('terminal/create', { command = 'true', env = { { name = 'MY_PASSWORD', value = 'hunter2' } } }),
      { raw = { text = 'oops, not json' } },
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 't1', status = 'completed' } },
      { message = 'Done.' },
    } } }
    local child = H.start({ cwd = dir, turns = turns, config = { terminal = { confirm = 'never' } } })
    H.open(child)
    local before = send(child, 'go')
    answer(child, 'y')
    wait_turn(child, before)
    local original = H.transcript(child)
    T.contains(table.concat(original, '\n'), 'Done.')

    child:cmd('AcpTrace')
    local lines = child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]])
    T.eq(child:lua([[return vim.api.nvim_buf_get_name(0)]]):match('acp://trace/%d+$') ~= nil, true)
    local joined = table.concat(lines, '\n')
    T.match(joined, '%d%d:%d%d:%d%d%.%d%d%d → initialize #"[%w%-]+" {')
    T.match(joined, '← result #"[%w%-]+" {"protocolVersion":1')
    T.match(joined, '→ session/prompt #"[%w%-]+" {')
    T.match(joined, '← fs/read_text_file #"[%w%-]+" {')
    T.match(joined, '→ result #"[%w%-]+" {"content":"alpha\\n"}')
    T.match(joined, '! debug: OPENAI_API_KEY=%[redacted%] loaded')
    T.match(joined, '← %(not JSON%) oops, not json')
    T.no_match(joined, 'sk%-live%-123')
    T.no_match(joined, 'hunter2')
    for _, l in ipairs(lines) do
      T.falsy(l:find('\n'), 'one line per message')
    end

    local saved = dir .. '/bug-report.jsonl'
    child:cmd('AcpTraceSave ' .. saved)
    local text = T.read_file(saved)
    T.no_match(text, 'sk%-live%-123')
    T.no_match(text, 'hunter2')
    T.match(text, '"value":"%[redacted%]"')
    T.eq(vim.uv.fs_stat(saved).mode % 512, tonumber('600', 8), 'the file is private')
    for line in text:gmatch('[^\n]+') do
      local e = vim.json.decode(line)
      T.truthy(e.t and e.ms and (e.dir == 'in' or e.dir == 'out' or e.dir == 'stderr'), line)
    end
    child:stop()

    -- The bug report, replayed in a fresh Neovim, gives the same transcript.
    local again, paths = replay(saved, {}, { terminal = { confirm = 'never' } })
    -- The replayed session runs in another project: the recorded paths
    -- are mapped to it, so the files it reads must exist there too.
    local root = again:lua([[return require('acp').project_root()]])
    T.write_file(root .. '/a.txt', 'alpha\n')
    H.open(again)
    before = send(again, 'go')
    answer(again, 'y')
    wait_turn(again, before)
    local replayed = H.transcript(again)
    T.eq(#replayed, #original)
    for i = 1, #original do
      T.eq(replayed[i]:gsub(vim.pesc(root), '<root>'), (original[i]:gsub(vim.pesc(dir), '<root>')), 'line ' .. i)
    end
    no_mismatch(paths)
    T.eq(T.read_file(root .. '/b.txt'), 'beta\n')
  end },
}
