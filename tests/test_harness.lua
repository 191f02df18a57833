-- Self-test of the test harness: tests/run.lua, tests/helpers/{child,expect}.lua and
-- tests/minimal_init.lua. Every case asserts real behaviour against real child Neovims.

local T = require('tests.helpers.expect')
local Child = require('tests.helpers.child')

local uv = vim.uv or vim.loop
local root = vim.env.ACP_ROOT

local function pid_alive(pid)
  local ok = uv.kill(pid, 0)
  return ok == 0 or ok == true
end

local function elapsed_since(t0)
  return T.now_ms() - t0
end

return {
  { 'child starts with minimal_init: repo first on rtp, no swap, no shada', function()
    local child = Child.new()
    local info = child:lua([[return {
      pid = vim.fn.getpid(),
      rtp1 = vim.opt.runtimepath:get()[1],
      swapfile = vim.o.swapfile,
      shadafile = vim.o.shadafile,
      root = vim.env.ACP_ROOT,
      cwd = vim.fn.getcwd(),
    }]])
    T.eq(info.pid, child:pid())
    T.truthy(pid_alive(child:pid()))
    T.eq(info.rtp1, root)
    T.eq(info.root, root)
    T.eq(info.cwd, root)
    T.eq(info.swapfile, false)
    T.eq(info.shadafile, 'NONE')
  end },

  { 'env, removed env, args and isolated XDG dirs reach the child', function()
    vim.env.ACP_HARNESS_REMOVE_ME = 'present'
    local child = Child.new({
      env = { ACP_HARNESS_PROBE = 42, ACP_HARNESS_REMOVE_ME = false },
      args = { '+let g:from_args = 7' },
    })
    vim.env.ACP_HARNESS_REMOVE_ME = nil
    local info = child:lua([[return {
      probe = vim.env.ACP_HARNESS_PROBE,
      removed = vim.env.ACP_HARNESS_REMOVE_ME == nil,
      from_args = vim.g.from_args,
      state = vim.fn.stdpath('state'),
      nvim = vim.v.progpath,
    }]])
    T.eq(info.probe, '42')
    T.eq(info.removed, true)
    T.eq(info.from_args, 7)
    T.eq(info.state:sub(1, #T.tmp_root()), T.tmp_root(), 'XDG_STATE_HOME is under the run tmp dir')
    T.eq(vim.fn.resolve(info.nvim), vim.fn.resolve(vim.env.ACP_NVIM))
  end },

  { 'plugin/ scripts on the rtp are sourced once in the child (--clean -u)', function()
    local fake = T.tmpdir('fake-root')
    T.write_file(fake .. '/plugin/probe.lua', {
      'vim.g.probe_count = (vim.g.probe_count or 0) + 1',
      'vim.api.nvim_create_user_command("HarnessProbe", function() vim.g.probed = true end, {})',
    })
    local child = Child.new({ env = { ACP_ROOT = fake } })
    T.eq(child:lua('return vim.opt.runtimepath:get()[1]'), fake)
    T.eq(child:lua('return vim.g.probe_count'), 1)
    T.eq(child:lua('return vim.fn.exists(":HarnessProbe")'), 2)
    child:cmd('HarnessProbe')
    T.eq(child:lua('return vim.g.probed'), true)
  end },

  { "the repository's own plugin/ files are sourced in the child", function()
    local files = vim.fn.glob(root .. '/plugin/*.{lua,vim}', false, true)
    if #files == 0 then
      T.skip('no plugin/ files in the repository yet')
    end
    local child = Child.new()
    local sourced = child:lua([[
      local names = {}
      for _, s in ipairs(vim.fn.getscriptinfo()) do names[vim.fn.resolve(s.name)] = true end
      return names
    ]])
    for _, f in ipairs(files) do
      T.truthy(sourced[vim.fn.resolve(f)], 'not sourced: ' .. f)
    end
  end },

  { 'buffer lines set in the child read back; set_lines and buf_lines ranges', function()
    local child = Child.new()
    child:lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)', { { 'alpha', 'beta', 'gamma' } })
    T.eq(child:buf_lines(), { 'alpha', 'beta', 'gamma' })
    T.eq(child:buf_lines(0, 1, 2), { 'beta' })
    local buf = child:lua('return vim.api.nvim_create_buf(false, true)')
    child:set_lines(buf, { 'x', '', 'ÿ unicode' })
    T.eq(child:buf_lines(buf), { 'x', '', 'ÿ unicode' })
    T.eq(child:buf_lines(), { 'alpha', 'beta', 'gamma' }, 'current buffer untouched')
  end },

  { 'feed types keys; cmd returns output; lua_func ships a function', function()
    local child = Child.new()
    child:feed('ihello<Esc>yyp')
    T.eq(child:buf_lines(), { 'hello', 'hello' })
    T.eq(child:lua('return vim.api.nvim_get_mode().mode'), 'n')
    T.eq(child:cmd('echo "hi" .. 1'), 'hi1')
    T.eq(child:cmd('let g:quiet = 1'), '')
    T.eq(child:lua_func(function(a, b)
      return { a * b, vim.g.quiet }
    end, 6, 7), { 42, 1 })
    T.eq(child:lua('return nil'), nil, 'a nil result is nil, not vim.NIL')
  end },

  { 'a Lua error in the child is raised in the parent and the child survives', function()
    local child = Child.new()
    local err = T.errors(function()
      child:lua('error("boom from child")')
    end, 'boom from child')
    T.match(err, '^error in child nvim: ')
    T.eq(child:lua('return 1 + 1'), 2)
  end },

  { 'wait_for returns once the condition holds (expression, chunk, function)', function()
    local child = Child.new()
    child:lua('vim.defer_fn(function() vim.g.ready = "yes" end, 60)')
    local t0 = T.now_ms()
    T.eq(child:wait_for('vim.g.ready', 2000), 'yes')
    local waited = elapsed_since(t0)
    T.truthy(waited >= 40 and waited < 1500, 'waited ' .. waited .. ' ms')
    T.eq(child:wait_for('local v = vim.g.ready; return v == "yes" and v .. "!"'), 'yes!')
    T.eq(child:wait_for(function(want)
      return vim.g.ready == want
    end, 500, { 'yes' }), true)
  end },

  { 'wait_for times out with an error showing the last value and error', function()
    local child = Child.new()
    child:lua('vim.g.counter = 0; vim.g.never = false')
    local t0 = T.now_ms()
    local err = T.errors(function()
      child:wait_for('vim.g.never', 150)
    end, 'wait_for timed out after 150 ms: vim.g.never')
    local waited = elapsed_since(t0)
    T.truthy(waited >= 145 and waited < 1500, 'waited ' .. waited .. ' ms')
    T.contains(err, 'last value: false')
    err = T.errors(function()
      child:wait_for('vim.g.missing.field', 50)
    end, 'timed out')
    T.match(err, "last error: .*attempt to index field 'missing'")
    T.truthy(child:is_alive())
  end },

  { 'stop quits the child with exit code 0 and it is gone', function()
    local child = Child.new()
    local pid = child:pid()
    T.truthy(child:is_alive())
    T.eq(child:stop(), 0)
    T.eq(child:is_alive(), false)
    T.eq(pid_alive(pid), false, 'process ' .. pid .. ' still exists')
    T.eq(child:stop(), 0, 'stop is idempotent')
    T.errors(function()
      child:lua('return 1')
    end, 'has exited with code 0')
  end },

  { 'wait_exit returns the code of a child that quits by itself (:cq 3)', function()
    local child = Child.new()
    child:lua_notify('vim.cmd("cquit 3")')
    T.eq(child:wait_exit(2000), 3)
    T.eq(child:stop(), 3)
  end },

  { 'a child that dies gives a clear error, not a hang', function()
    local child = Child.new()
    local t0 = T.now_ms()
    -- dies while the request is in flight
    local err = T.errors(function()
      child:lua('vim.uv.kill(vim.fn.getpid(), "sigkill"); vim.wait(5000)')
    end, 'child nvim #%d+ %(pid %d+%) was killed %(exit code 137, signal 9%)')
    T.contains(err, 'during nvim_exec_lua')
    -- and every later call fails at once
    T.errors(function()
      child:lua('return 1')
    end, 'was killed')
    T.errors(function()
      child:wait_for('true', 1000)
    end, 'was killed')
    T.truthy(elapsed_since(t0) < 2000)
  end },

  { 'a crash shows the tail of the child stderr', function()
    local child = Child.new()
    child:lua_notify('io.stderr:write("last words\\n"); vim.uv.kill(vim.fn.getpid(), "sigabrt")')
    T.wait(function()
      return not child:is_alive()
    end, 2000)
    local err = T.errors(function()
      child:lua('return 1')
    end, 'signal 6')
    T.contains(err, 'last words')
  end },

  { 'a hung child: rpc watchdog kills it, stop() kills it', function()
    local child = Child.new({ rpc_timeout = 300 })
    local t0 = T.now_ms()
    local err = T.errors(function()
      child:lua('while true do end')
    end, 'did not answer nvim_exec_lua within 300 ms; it was killed')
    T.truthy(elapsed_since(t0) < 3000)
    T.eq(child:is_alive(), false)
    T.truthy(err)

    local hung = Child.new()
    hung:lua_notify('while true do end')
    t0 = T.now_ms()
    T.eq(hung:stop(200), 137, 'killed with SIGKILL')
    T.truthy(elapsed_since(t0) < 3000)
  end },

  { 'the runner: list and map files, hooks, skip, failures, crash detection, cleanup', function()
    local dir = T.tmpdir('runner')
    local pidfile = dir .. '/leaked.pid'
    T.write_file(dir .. '/test_a_list.lua', [[
local T = require('tests.helpers.expect')
local Child = require('tests.helpers.child')
return {
  before_each = function(name) return name .. '!' end,
  { 'zz passes first', function(x) T.eq(x, 'zz passes first!') end },
  { 'fails and leaks a child', function()
      local c = Child.new()
      T.write_file(os.getenv('FIXTURE_PIDFILE'), tostring(c:pid()))
      T.eq({ 1 }, { 2 }, 'deliberate failure')
    end },
  { 'skips', function() _G.T.skip('not today') end },
  { 'crash nobody looked at', function()
      local c = Child.new()
      c:lua_notify('vim.uv.kill(vim.fn.getpid(), "sigabrt")')
      vim.wait(2000, function() return vim.fn.jobwait({ c.chan }, 0)[1] ~= -1 end)
    end },
  { 'case deadline caps waits', function()
      Child.new():wait_for('false', 60000)
    end, timeout = 1000 },
}
]])
    T.write_file(dir .. '/test_b_map.lua', [[
return {
  ['b second'] = function() end,
  ['a first'] = function() end,
}
]])
    T.write_file(dir .. '/test_c_broken.lua', 'return {{ "x" }}')
    local function run(pattern)
      local t0 = T.now_ms()
      local res = vim
        .system({ vim.env.ACP_NVIM, '-l', root .. '/tests/run.lua', pattern }, {
          env = {
            ACP_TEST_DIR = dir,
            ACP_TEST_TMP = dir .. '/tmp',
            FIXTURE_PIDFILE = pidfile,
            TEST = '',
          },
          text = true,
        })
        :wait(20000)
      return res, elapsed_since(t0)
    end

    local res, ms = run(nil)
    local lines = vim.split(vim.trim(res.stdout), '\n')
    local ctx = 'runner output:\n' .. res.stdout .. '\nstderr:\n' .. res.stderr
    T.eq(res.code, 1, ctx)
    T.eq(lines[#lines], '3 passed, 4 failed, 1 skipped', ctx)
    T.match(lines[1], '^ok   test_a_list › zz passes first %(%d+ ms%)$', ctx)
    T.eq(lines[2]:match('^FAIL test_a_list › fails and leaks a child'), 'FAIL test_a_list › fails and leaks a child', ctx)
    T.contains(res.stdout, 'test_a_list.lua:9: deliberate failure\n    expected equal values', ctx)
    T.contains(res.stdout, 'test_a_list.lua:9', ctx) -- the traceback names the failing line
    T.contains(res.stdout, 'skip test_a_list › skips: not today\n', ctx)
    T.match(res.stdout, 'FAIL test_a_list › crash nobody looked at[^\n]*\n    child nvim #%d+ %(pid %d+%) was killed %(exit code 134, signal 6%) unexpectedly during the case', ctx)
    -- The deadline ends the wait between two polls or inside one, and both messages say the
    -- case deadline was reached. On a loaded machine the child may not have started yet: the
    -- deadline then kills it, and the case fails with that (seen in CI).
    local deadline = res.stdout:match('FAIL test_a_list › case deadline caps waits[^\n]*\n    ([^\n]*)')
    T.truthy(deadline, ctx)
    local killed_starting = deadline:match('was killed %(exit code 137, signal 9%) %(before nvim_exec_lua%)')
    T.truthy(killed_starting or deadline:find('case deadline reached', 1, true), ctx)
    T.truthy(killed_starting
      or deadline:match('test_a_list%.lua:18: wait_for timed out after %d+ ms')
      or deadline:match('did not answer nvim_exec_lua within %d+ ms'), ctx)
    T.match(res.stdout, 'ok   test_b_map › a first[^\n]*\nok   test_b_map › b second', ctx)
    T.match(res.stdout, 'FAIL test_c_broken › <load>[^\n]*\n    case #1 must be', ctx)
    T.truthy(ms < 15000, 'runner took ' .. ms .. ' ms')
    local pid = tonumber(T.read_file(pidfile))
    T.truthy(pid, 'fixture wrote the pid of its child')
    T.eq(pid_alive(pid), false, 'child of a failed case was not stopped')

    -- Filtering: a file-name pattern selects a file, a case pattern selects cases.
    res = run('b_map')
    T.eq(res.code, 0, res.stdout)
    T.eq(vim.split(vim.trim(res.stdout), '\n')[3], '-- 2 cases from 3 files in ' .. res.stdout:match('in ([%d.]+ s)'))
    T.match(res.stdout, '\n2 passed, 0 failed, 0 skipped\n$')
    res = run('test_b_map › b sec')
    T.match(res.stdout, '^ok   test_b_map › b second[^\n]*\n')
    T.match(res.stdout, '\n1 passed, 0 failed, 0 skipped\n$')
    res = run('no such case')
    T.eq(res.code, 0)
    T.match(res.stdout, 'no test case matched no such case\n0 passed, 0 failed, 0 skipped\n$')
  end, timeout = 60000 },
}
