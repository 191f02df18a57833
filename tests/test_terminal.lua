-- terminal/*: Neovim jobs in their own process group; output in arrival
-- order within a byte limit; kill, release during wait, exit status.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local function create(params, extra)
  return H.req('terminal/create', params, extra)
end
local function call(method, id, extra)
  return H.req('terminal/' .. method, { terminalId = id }, extra)
end

local function project()
  local dir = H.project()
  vim.fn.mkdir(dir .. '/sub', 'p')
  return dir
end

-- These cases test the terminal mechanics: the confirmation before an
-- unrequested terminal is tested in test_trust.
local function start(dir, steps, config)
  config = vim.tbl_deep_extend('force', { terminal = { confirm = 'never' } }, config or {})
  local child, paths = H.start({ cwd = dir, turns = { { match = 'go', steps = steps } }, config = config })
  H.open(child)
  H.turn(child, 'go', 15000)
  return child, paths, H.responses(paths)
end

local function alive(pid)
  return H.pid_alive(pid)
end

--- Pids of the running processes of group `pgid` (from /proc).
local function group_of(pgid)
  local out = {}
  for name in vim.fs.dir('/proc') do
    local stat = tonumber(name) and T.read_file('/proc/' .. name .. '/stat')
    local rest = stat and stat:match('^.*%)%s+(.*)$')
    if rest then
      local f = vim.split(rest, ' ', { trimempty = true })
      if tonumber(f[3]) == pgid and f[1] ~= 'Z' and f[1] ~= 'X' then
        out[#out + 1] = tonumber(name)
      end
    end
  end
  return out
end

-- A double fork: the command's shell starts a shell in the background and
-- exits; that shell starts `sleep 300` only once the first one was reaped,
-- then exits too. The grandchild is an orphan nobody waits for, still in
-- the terminal's process group. `marker` gets the leader's pid (the group
-- id), then the grandchild's.
local function double_fork(marker)
  return ("echo $$ > %s; sh -c 'sleep 0.3; sleep 300 & echo $! >> %s' &"):format(marker, marker)
end

--- The leader's and the grandchild's pids, once both are known; asserts
--- the grandchild runs with its parent gone.
local function double_forked(marker)
  T.wait(function()
    return #vim.tbl_keys({ (T.read_file(marker) or ''):match('(%d+)%s+(%d+)') }) == 2
  end, 5000, 'the grandchild started')
  local leader, grandchild = T.read_file(marker):match('(%d+)%s+(%d+)')
  return tonumber(leader), tonumber(grandchild)
end

return {
  { 'a shell line runs through sh; output in order; exit code', function()
    local _, _, r = start(project(), {
      create({ command = 'printf "a\\n"; echo err >&2; sleep 0.05; printf b; exit 3' }),
      call('wait_for_exit', 'term-1'),
      call('output', 'term-1'),
    })
    T.eq(r[1].result, { terminalId = 'term-1' })
    T.eq(r[2].result, { exitCode = 3 })
    T.eq(r[3].result.output, 'a\nerr\nb')
    T.eq(r[3].result.truncated, false)
    T.eq(r[3].result.exitStatus, { exitCode = 3 })
  end },

  { 'with args the program runs directly (no shell)', function()
    local _, _, r = start(project(), {
      create({ command = 'printf', args = { '%s|%s', 'x y', '$HOME' } }),
      call('wait_for_exit', 'term-1'),
      call('output', 'term-1'),
    })
    T.eq(r[3].result.output, 'x y|$HOME')
  end },

  { 'env and cwd are honoured; a missing cwd means the session cwd', function()
    local dir = project()
    local _, _, r = start(dir, {
      create({ command = 'echo "$FOO"; pwd', env = { { name = 'FOO', value = 'bar baz' } }, cwd = dir .. '/sub' }),
      call('wait_for_exit', 'term-1'),
      call('output', 'term-1'),
      create({ command = 'pwd' }),
      call('wait_for_exit', 'term-2'),
      call('output', 'term-2'),
    })
    T.eq(r[3].result.output, 'bar baz\n' .. dir .. '/sub\n')
    T.eq(r[6].result.output, dir .. '\n')
  end },

  { 'output over the byte limit drops from the start on a character boundary', function()
    local _, _, r = start(project(), {
      create({ command = "printf 'ééééé'", outputByteLimit = 5 }),
      call('wait_for_exit', 'term-1'),
      call('output', 'term-1'),
    })
    -- 10 bytes; keeping the last 5 would start inside an é: only 4 are kept.
    T.eq(r[3].result.output, 'éé')
    T.eq(r[3].result.truncated, true)
  end },

  { 'terminal.output_max_bytes caps the kept output without outputByteLimit; the agent\'s own limit applies instead; bad values fail setup', function()
    local child, _, r = start(project(), {
      create({ command = 'printf 0123456789abcdefghij' }),
      call('wait_for_exit', 'term-1'),
      call('output', 'term-1'),
      create({ command = 'printf 0123456789abcdefghij', outputByteLimit = 15 }),
      call('wait_for_exit', 'term-2'),
      call('output', 'term-2'),
    }, { terminal = { output_max_bytes = 8 } })
    T.eq({ r[3].result.output, r[3].result.truncated }, { 'cdefghij', true })
    T.eq({ r[6].result.output, r[6].result.truncated }, { '56789abcdefghij', true })
    for _, bad in ipairs({ 0, 1.5, 64 * 1024 * 1024 + 1, '1M' }) do
      local res = child:lua([[return { pcall(require('acp.config').setup, { terminal = { output_max_bytes = ... } }) }]], { bad })
      T.eq(res[1], false, vim.inspect(bad))
      T.match(res[2], '`terminal%.output_max_bytes` must be a whole number of bytes from 1 to 64 MiB')
    end
  end },

  { 'kill ends the whole process group; the exit reports the signal', function()
    local dir = project()
    local marker = dir .. '/pids'
    local _, _, r = start(dir, {
      create({ command = ('sleep 30 & echo $! > %s; echo $$ >> %s; wait'):format(marker, marker) }),
      { sleep_ms = 300 },
      call('kill', 'term-1'),
      call('wait_for_exit', 'term-1'),
      call('output', 'term-1'),
    })
    T.eq(r[2].result, vim.empty_dict())
    T.eq(r[3].result, { signal = 'SIGTERM' })
    T.eq(r[4].result.exitStatus, { signal = 'SIGTERM' })
    for pid in T.read_file(marker):gmatch('%d+') do
      T.wait(function()
        return not alive(tonumber(pid))
      end, 2000, 'process ' .. pid .. ' is gone')
    end
  end },

  { 'a process that ignores SIGTERM gets SIGKILL after the grace period', function()
    local _, _, r = start(project(), {
      create({ command = "trap '' TERM; echo ready; sleep 30 & wait; sleep 30" }),
      { sleep_ms = 200 },
      call('kill', 'term-1'),
      call('wait_for_exit', 'term-1'),
    }, { terminal = { kill_grace_ms = 300 } })
    T.eq(r[3].result, { signal = 'SIGKILL' })
  end },

  { 'release while wait_for_exit is pending answers the wait and frees the id', function()
    local dir = project()
    local marker = dir .. '/pid'
    local child, paths, r = start(dir, {
      create({ command = ('echo $$ > %s; exec sleep 30'):format(marker) }),
      call('wait_for_exit', 'term-1', { background = true }),
      { sleep_ms = 200 },
      call('release', 'term-1'),
      { sleep_ms = 200 },
      call('output', 'term-1'),
    })
    T.eq(r[1].result.terminalId, 'term-1')
    -- Order of answers: release, then the pending wait, then output's error.
    local by = {}
    for _, x in ipairs(r) do
      by[x.method] = x
    end
    T.eq(by['terminal/release'].result, vim.empty_dict())
    T.eq(by['terminal/wait_for_exit'].result, { signal = 'SIGTERM' })
    T.match(by['terminal/output'].error.message, 'unknown terminal id `term%-1`')
    local pid = tonumber(T.read_file(marker))
    T.wait(function()
      return not alive(pid)
    end, 3000, 'the released process is killed')
    T.eq(#H.events_of(paths, 'check_failed'), 0)
    T.eq(child:lua('return 1'), 1)
  end },

  { 'unknown ids, bad commands and a cwd outside the roots are errors', function()
    local dir = project()
    local _, _, r = start(dir, {
      call('output', 'nope'),
      call('wait_for_exit', 'nope'),
      call('kill', 'nope'),
      call('release', 'nope'),
      create({ command = 'definitely-not-a-program-xyz', args = { 'a' } }),
      create({ command = 'pwd', cwd = '/' }),
      create({ command = 'pwd', cwd = 'relative' }),
    })
    for i = 1, 4 do
      T.match(r[i].error.message, 'unknown terminal id `nope`')
    end
    T.match(r[5].error.message, 'cannot run `definitely%-not%-a%-program%-xyz a`')
    T.match(r[6].error.message, "outside the session's roots")
    T.match(r[7].error.message, 'must be absolute')
  end },

  { 'terminal output shows live in the tool card and opens in a buffer', function()
    local dir = project()
    local child = start(dir, {
      { update = { sessionUpdate = 'tool_call', toolCallId = 'c1', title = 'Run tests', kind = 'execute', status = 'in_progress' } },
      create({ command = 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo line$i; done; exit 2' }),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'c1', content = { { type = 'terminal', terminalId = 'term-1' } } } },
      call('wait_for_exit', 'term-1'),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'c1', status = 'failed' } },
    })
    child:wait_for([[return require('acp').current():lines()[#require('acp').current():lines()]:match('exit code 2')]])
    local text = H.transcript_text(child)
    T.match(text, 'run · Run tests · failed')
    T.match(text, '… 3 more lines %(:AcpTerminal term%-1%)')
    T.match(text, '  line4\n')
    T.match(text, '  line15\n')
    T.no_match(text, '  line3\n')
    T.match(text, '\n  exit code 2 · term%-1$')
    child:cmd('AcpTerminal term-1')
    local buf = child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]])
    T.eq(buf[1], 'line1')
    T.eq(buf[15], 'line15')
  end },

  { "the agent's own display terminal (_meta.terminal_*) renders the same way", function()
    local child = start(project(), {
      { update = { sessionUpdate = 'tool_call', toolCallId = 'b1', title = 'ls', kind = 'execute', status = 'in_progress',
        _meta = { terminal_info = { terminal_id = 'b1' } } } },
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'b1', _meta = { terminal_output = { terminal_id = 'b1', data = 'README.md\n' } } } },
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'b1', _meta = { terminal_output = { terminal_id = 'b1', data = 'src\n' } } } },
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'b1', status = 'completed',
        _meta = { terminal_exit = { terminal_id = 'b1', exit_code = 0, signal = vim.NIL } } } },
    })
    local text = H.transcript_text(child)
    T.match(text, '```console\n  README%.md\n  src\n  ```\n  exit code 0 · b1')
    child:cmd('AcpTerminal b1')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, 2, false)]]), { 'README.md', 'src' })
  end },

  { 'a double-forked grandchild ends with terminal/release', function()
    local dir = project()
    local marker = dir .. '/pids'
    start(dir, {
      create({ command = double_fork(marker) }),
      call('wait_for_exit', 'term-1'),
      { sleep_ms = 700 },
      call('release', 'term-1'),
    })
    local leader, grandchild = double_forked(marker)
    T.wait(function()
      return not alive(grandchild)
    end, 2000, 'the grandchild is gone after release')
    T.wait(function()
      return #group_of(leader) == 0
    end, 2000, 'no process of the group is left')
  end },

  { 'a double-forked grandchild ends with terminal/kill, after its command exited', function()
    local dir = project()
    local marker = dir .. '/pids'
    local _, _, r = start(dir, {
      create({ command = double_fork(marker) }),
      call('wait_for_exit', 'term-1'),
      { sleep_ms = 700 },
      call('kill', 'term-1'),
      call('wait_for_exit', 'term-1'),
    })
    -- The command itself exited 0 before the kill: its status stays.
    T.eq(r[2].result, { exitCode = 0 })
    T.eq(r[3].result, vim.empty_dict())
    T.eq(r[4].result, { exitCode = 0 })
    local _, grandchild = double_forked(marker)
    T.wait(function()
      return not alive(grandchild)
    end, 2000, 'the grandchild is gone after kill')
  end },

  { 'a double-forked grandchild ends with :qa!', function()
    local dir = project()
    local marker = dir .. '/pids'
    local child = H.start({ cwd = dir, config = { terminal = { confirm = 'never' } }, turns = { { match = 'go', steps = {
      create({ command = double_fork(marker) }),
      call('wait_for_exit', 'term-1'),
      { hang = true },
    } } } })
    H.open(child)
    child:lua([[require('acp').send('go')]])
    local leader, grandchild = double_forked(marker)
    -- Its command and the middle shell have been reaped by now.
    vim.wait(300)
    T.truthy(alive(grandchild), 'the grandchild runs before :qa!')
    T.eq(alive(leader), false)
    child:stop()
    T.wait(function()
      return not alive(grandchild)
    end, 2000, 'the grandchild is gone after :qa!')
    T.wait(function()
      return #group_of(leader) == 0
    end, 2000, 'no process of the group is left')
  end },

  { 'a group is forgotten once only its anchor is left: no process of it stays', function()
    local dir = project()
    local marker = dir .. '/pid'
    local child, _, r = start(dir, {
      -- A background child that ends by itself after its shell.
      create({ command = ('echo $$ > %s; sleep 0.4 &'):format(marker) }),
      call('wait_for_exit', 'term-1'),
      create({ command = 'true' }),
      call('wait_for_exit', 'term-2'),
    })
    T.eq({ r[2].result, r[4].result }, { { exitCode = 0 }, { exitCode = 0 } })
    local leader = tonumber(T.read_file(marker))
    -- While the background child runs, the group has it and the anchor.
    T.truthy(#group_of(leader) >= 1)
    T.wait(function()
      return #group_of(leader) == 0
    end, 3000, 'the anchor ends with the rest of its group')
    child:wait_for([[return next(require('acp.editor.terminal').groups) == nil]], 3000)
  end },

  { "the anchor is no child of the command: the kernel lists only the command's own children", function()
    local _, _, r = start(project(), {
      -- The shell's children, as the kernel sees them: only `cat` itself.
      create({ command = 'cat /proc/$$/task/$$/children; echo; echo $$' }),
      call('wait_for_exit', 'term-1'),
      call('output', 'term-1'),
    })
    T.eq(r[2].result, { exitCode = 0 })
    local children, shell = r[3].result.output:match('^(.-)\n(%d+)\n$')
    T.eq(#vim.split(vim.trim(children), ' '), 1, r[3].result.output)
    T.neq(tonumber(vim.trim(children)), tonumber(shell))
  end },

  { 'running terminals are killed when Neovim quits', function()
    local dir = project()
    local marker = dir .. '/pid'
    local child = H.start({ cwd = dir, config = { terminal = { confirm = 'never' } }, turns = { { match = 'go', steps = {
      create({ command = ('echo $$ > %s; exec sleep 60'):format(marker) }),
      { hang = true },
    } } } })
    H.open(child)
    child:lua([[require('acp').send('go')]])
    T.wait(function()
      return vim.uv.fs_stat(marker) ~= nil and T.read_file(marker):match('%d+')
    end, 5000)
    local pid = tonumber(T.read_file(marker))
    T.truthy(alive(pid))
    child:stop()
    T.wait(function()
      return not alive(pid)
    end, 2000, 'the job is gone after quit')
  end },
}
