-- Nothing the agent started outlives Neovim: not a daemon that starts its
-- own session (setsid, as Cline's hub does), not one that double-forks into
-- its own process group, unless `agents.<name>.keep_daemons` names it.
-- Processes are found by a marker in their environment (/proc/<pid>/environ).
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

--- Pids of running processes whose environment holds `ACP_PROCS_MARK=<mark>`,
--- each with its command name.
local function marked(mark)
  local out = {}
  local want = 'ACP_PROCS_MARK=' .. mark
  for name in vim.fs.dir('/proc') do
    local pid = tonumber(name)
    local f = pid and io.open('/proc/' .. name .. '/environ', 'rb')
    if f then
      local env = f:read('*a') or ''
      f:close()
      local st = io.open('/proc/' .. name .. '/stat', 'r')
      local stat = st and st:read('*a') or ''
      if st then
        st:close()
      end
      local comm, state = stat:match('%((.*)%)%s+(%S)')
      if (env .. '\0'):find(want .. '\0', 1, true) and state ~= 'Z' then
        out[#out + 1] = { pid = pid, comm = comm }
      end
    end
  end
  table.sort(out, function(a, b)
    return a.comm < b.comm
  end)
  return out
end

local function comms(list)
  return vim.tbl_map(function(p)
    return p.comm
  end, list)
end

--- An agent (a shell that then execs the scripted agent) that first starts
--- a setsid'ed daemon (`sleep`) and a double-forked child (`tail`, orphaned
--- when the subshell that started it exits, in a session of its own), both
--- with no stdio of the agent's.
local function start(mark, config)
  local script = table.concat({
    'export ACP_PROCS_MARK=' .. mark,
    'setsid -f sleep 311 </dev/null >/dev/null 2>&1',
    '( setsid tail -f /dev/null </dev/null >/dev/null 2>&1 & )',
    'unset ACP_PROCS_MARK',
    'exec ' .. H.agent_bin .. ' --scenario ' .. H.scenario('chat'),
  }, '\n')
  local agent = { cmd = 'sh', args = { '-c', script } }
  for k, v in pairs(config or {}) do
    agent[k] = v
  end
  local child = H.start({ agent = agent })
  H.open(child)
  local procs = T.wait(function()
    local m = marked(mark)
    return #m == 2 and m
  end, 5000, 'the daemon and the double-forked child run')
  T.eq(comms(procs), { 'sleep', 'tail' })
  -- Neither is in the agent's process group any more.
  local pgid = child:lua([[return require('acp.core').thread_info(require('acp').current().thread).pid]])
  for _, p in ipairs(procs) do
    local stat = T.read_file('/proc/' .. p.pid .. '/stat')
    local pg = tonumber(stat:match('%)%s+%S+%s+%d+%s+(%d+)'))
    T.neq(pg, pgid, p.comm .. ' left the agent group')
  end
  return child, procs
end

--- A sign-in run by `:AcpAuth` (a `terminal` method: the agent's command
--- with the method's args, as Qoder runs `qodercli --acp login`) that
--- starts a setsid'ed daemon (`sleep 311`) and a double-forked child
--- (`tail`), then runs `sleep <last>` and exits 3. Returns the child once
--- all of them run.
local function login(mark, last, keep)
  local dir = T.tmpdir('login')
  local method = { id = 'login', name = 'Login', type = 'terminal', args = { 'login' }, env = { ACP_PROCS_MARK = mark } }
  local scenario = dir .. '/scenario.json'
  T.write_file(scenario, vim.json.encode({ agent = { auth_methods = { method } }, turns = {} }))
  -- `sh -c SCRIPT login`: $0 is the method's argument.
  local script = table.concat({
    'if [ "$0" != login ]; then exec ' .. H.agent_bin .. ' --scenario ' .. scenario .. '; fi',
    'setsid -f sleep 311 </dev/null >/dev/null 2>&1',
    '( setsid tail -f /dev/null </dev/null >/dev/null 2>&1 & )',
    'sleep ' .. last,
    'exit 3',
  }, '\n')
  local child = H.start({ agent = { cmd = 'sh', args = { '-c', script }, keep_daemons = keep } })
  child:cmd('AcpChat')
  child:wait_for([[return require('acp').current().state == 'disconnected']])
  child:cmd('AcpAuth login')
  T.wait(function()
    local c = vim.tbl_filter(function(n)
      return n == 'sleep' or n == 'tail'
    end, comms(marked(mark)))
    return vim.deep_equal(c, { 'sleep', 'sleep', 'tail' })
  end, 5000, 'the login, its daemon and its double-forked child run')
  return child
end

local function none_left(mark, ms, what)
  local ok = pcall(T.wait, function()
    return #marked(mark) == 0
  end, ms)
  local left = marked(mark)
  for _, p in ipairs(left) do
    vim.uv.kill(p.pid, 'sigkill')
  end
  T.truthy(ok, 'nothing left ' .. what .. ': ' .. vim.inspect(comms(left)))
end

return {
  { 'a login :AcpAuth runs is ended at :qa! with the setsid daemon and the double-forked child it started; quitting stays fast', function()
    local mark = 'login-' .. vim.fn.getpid() .. '-' .. vim.uv.hrtime()
    local child = login(mark, 312)
    local t0 = T.now_ms()
    T.eq(child:stop(), 0)
    local took = T.now_ms() - t0
    io.write(('  :qa! with a running login, its setsid daemon and double-forked child took %d ms\n'):format(took))
    T.truthy(took < 1500, ('quit took %d ms'):format(took))
    none_left(mark, 1000, 'after :qa!')
  end, timeout = 15000 },

  { 'a login that exits ends what it started while Neovim runs, and its exit status is the job\'s', function()
    local mark = 'login-exit-' .. vim.fn.getpid() .. '-' .. vim.uv.hrtime()
    local child = login(mark, 1)
    none_left(mark, 3000, 'after the login exited')
    child:wait_for([[return require('acp.ask.auth').last_exit ~= nil]])
    T.eq(child:lua([[return require('acp.ask.auth').last_exit]]), 3)
  end, timeout = 15000 },

  { 'keep_daemons applies to the agent\'s logins: the named executable stays after :qa!', function()
    local mark = 'login-kept-' .. vim.fn.getpid() .. '-' .. vim.uv.hrtime()
    local child = login(mark, 312, { 'tail' })
    T.eq(child:stop(), 0)
    local ok = pcall(T.wait, function()
      return vim.deep_equal(comms(marked(mark)), { 'tail' })
    end, 1500)
    vim.wait(300)
    local left = marked(mark)
    for _, p in ipairs(left) do
      vim.uv.kill(p.pid, 'sigkill')
    end
    T.truthy(ok, 'only tail is left: ' .. vim.inspect(comms(left)))
    T.eq(comms(left), { 'tail' })
  end, timeout = 15000 },

  { 'after :qa! no process the agent started runs: a setsid daemon and a double-forked child are ended, and quitting stays fast', function()
    local mark = 'gone-' .. vim.fn.getpid() .. '-' .. vim.uv.hrtime()
    local child, procs = start(mark)
    local t0 = T.now_ms()
    T.eq(child:stop(), 0)
    local took = T.now_ms() - t0
    io.write(('  :qa! with a setsid daemon and a double-forked child took %d ms\n'):format(took))
    T.truthy(took < 1500, ('quit took %d ms'):format(took))
    local ok = pcall(T.wait, function()
      return #marked(mark) == 0
    end, 1000)
    local left = marked(mark)
    for _, p in ipairs(left) do
      vim.uv.kill(p.pid, 'sigkill')
    end
    T.truthy(ok, 'nothing left after :qa!: ' .. vim.inspect(comms(left)))
    T.eq(#procs, 2)
  end },

  { 'keep_daemons lets the named executable stay after :qa!; the others still end', function()
    local mark = 'kept-' .. vim.fn.getpid() .. '-' .. vim.uv.hrtime()
    local child = start(mark, { keep_daemons = { 'tail' } })
    T.eq(child:stop(), 0)
    local ok = pcall(T.wait, function()
      return vim.deep_equal(comms(marked(mark)), { 'tail' })
    end, 1500)
    local left = marked(mark)
    -- Give the kept process time to be ended wrongly, then look again.
    vim.wait(300)
    left = marked(mark)
    for _, p in ipairs(left) do
      vim.uv.kill(p.pid, 'sigkill')
    end
    T.truthy(ok, 'only tail is left: ' .. vim.inspect(comms(left)))
    T.eq(comms(left), { 'tail' })
  end },

  { 'after :qa! a daemon whose parent is a zombie with live threads (Cline\'s Bun binary exiting) is ended too, and so is that parent', function()
    -- The agent's child (python, standing for Cline's Bun binary) starts a
    -- setsid'ed daemon, then its main thread exits while another thread
    -- runs: /proc shows it as a zombie (Zl) that still has the daemon as
    -- its child. Both ignore SIGTERM, as a slow shutdown would.
    local python = vim.fn.exepath('python3')
    T.skip_unless(python ~= '', 'needs python3')
    local mark = 'zl-' .. vim.fn.getpid() .. '-' .. vim.uv.hrtime()
    local code = table.concat({
      'import os, signal, threading, time, ctypes',
      'signal.signal(signal.SIGTERM, signal.SIG_IGN)',
      'if os.fork() == 0:',
      '    os.setsid(); os.execvp("sleep", ["sleep", "313"])',
      'threading.Thread(target=time.sleep, args=(313,)).start()',
      'ctypes.CDLL(None).pthread_exit(None)',
    }, '\n')
    local script = table.concat({
      'export ACP_PROCS_MARK=' .. mark,
      vim.fn.shellescape(python) .. ' -c ' .. vim.fn.shellescape(code) .. ' </dev/null >/dev/null 2>&1 &',
      'unset ACP_PROCS_MARK',
      'exec ' .. H.agent_bin .. ' --scenario ' .. H.scenario('chat'),
    }, '\n')
    local child = H.start({ agent = { cmd = 'sh', args = { '-c', script } } })
    H.open(child)
    -- A zombie's environment cannot be read: the parent is found as the
    -- daemon's, by pid and start time.
    local function stat(pid)
      local f = io.open('/proc/' .. pid .. '/stat', 'r')
      local text = f and f:read('*a') or ''
      if f then
        f:close()
      end
      local state, ppid = text:match('%)%s+(%S)%s+(%d+)')
      local start = text:match('%)' .. ('%s+%S+'):rep(19) .. '%s+(%d+)')
      return state, tonumber(ppid), start
    end
    local parent
    T.wait(function()
      local m = marked(mark)
      if #m ~= 1 or m[1].comm ~= 'sleep' then
        return false
      end
      local _, ppid = stat(m[1].pid)
      if not ppid or stat(ppid) ~= 'Z' then
        return false
      end
      parent = { pid = ppid, start = select(3, stat(ppid)) }
      return true
    end, 5000, 'the zombie with a live thread and its setsid daemon run')
    local function parent_runs()
      return select(3, stat(parent.pid)) == parent.start
    end
    local t0 = T.now_ms()
    T.eq(child:stop(), 0)
    local took = T.now_ms() - t0
    io.write(('  :qa! with a daemon below a zombie took %d ms\n'):format(took))
    T.truthy(took < 1500, ('quit took %d ms'):format(took))
    local ok = pcall(T.wait, function()
      return #marked(mark) == 0 and not parent_runs()
    end, 1000)
    local left = comms(marked(mark))
    if parent_runs() then
      left[#left + 1] = 'the zombie parent'
      vim.uv.kill(parent.pid, 'sigkill')
    end
    for _, p in ipairs(marked(mark)) do
      vim.uv.kill(p.pid, 'sigkill')
    end
    T.truthy(ok, 'nothing left after :qa!: ' .. vim.inspect(left))
  end },

  { 'an agent that exits ends what it started while Neovim runs', function()
    local mark = 'exit-' .. vim.fn.getpid() .. '-' .. vim.uv.hrtime()
    local child = start(mark)
    local pid = child:lua([[return require('acp.core').thread_info(require('acp').current().thread).pid]])
    -- The agent itself (the supervisor's child, or the spawned process
    -- when there is no supervisor) is ended from outside.
    local agent
    for name in vim.fs.dir('/proc') do
      local st = tonumber(name) and io.open('/proc/' .. name .. '/stat', 'r')
      if st then
        local s = st:read('*a') or ''
        st:close()
        local comm, ppid = s:match('%((.*)%)%s+%S+%s+(%d+)')
        if (tonumber(ppid) == pid or tonumber(name) == pid) and comm == 'acp-test-agent' then
          agent = tonumber(name)
        end
      end
    end
    T.truthy(agent, 'the agent runs')
    vim.uv.kill(agent, 'sigkill')
    local ok = pcall(T.wait, function()
      return #marked(mark) == 0
    end, 3000)
    local left = marked(mark)
    for _, p in ipairs(left) do
      vim.uv.kill(p.pid, 'sigkill')
    end
    T.truthy(ok, 'nothing left after the agent died: ' .. vim.inspect(comms(left)))
    T.eq(child:lua('return 1'), 1)
  end },

  { 'keep_daemons is validated: a list of executable names', function()
    local child = require('tests.helpers.child').new()
    local errs = child:lua([[
      local out = {}
      for _, v in ipairs({ 'tail', { 1 }, { '/usr/bin/tail' }, { 'tail' } }) do
        local ok, err = pcall(require('acp.config').setup, { agents = { x = { cmd = 'x', keep_daemons = v } } })
        out[#out + 1] = ok and 'accepted' or err
      end
      return out
    ]])
    T.eq(errs[1], 'acp.nvim: setup: `agents.x.keep_daemons` must be a table, got string')
    T.eq(errs[2], 'acp.nvim: setup: `agents.x.keep_daemons[1]` must be a string, got number')
    T.eq(errs[3], 'acp.nvim: setup: `agents.x.keep_daemons[1]` must be an executable name (no path)')
    T.eq(errs[4], 'accepted')
  end },
}
