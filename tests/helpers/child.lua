-- A child Neovim driven over msgpack-RPC (stdio of `nvim --embed`).
--
--   local Child = require('tests.helpers.child')
--   local child = Child.new({ env = { FOO = '1' }, args = { 'file.txt' } })
--   child:lua('return vim.fn.getpid()')
--   child:wait_for('vim.g.done == true', 2000)
--   child:stop()                             -- the runner also stops every child after each case
--
-- Every RPC request has a watchdog: a child that does not answer within `rpc_timeout` ms
-- (default 10000, or env ACP_TEST_RPC_TIMEOUT) is killed and the call raises. A child that died
-- makes every call raise at once, with its exit code and the tail of its stderr.

local T = require('tests.helpers.expect')

local uv = vim.uv or vim.loop

local Child = {}
Child.__index = Child

--- Every child started since the last `Child.cleanup()`.
Child.registry = {}

local DEFAULT_RPC_TIMEOUT = tonumber(vim.env.ACP_TEST_RPC_TIMEOUT or '') or 10000
local DEFAULT_WAIT_TIMEOUT = tonumber(vim.env.ACP_TEST_WAIT_TIMEOUT or '') or 5000
local STDERR_KEEP = 200 -- lines

local counter = 0

local function root()
  return vim.env.ACP_ROOT or vim.fn.getcwd()
end

local function truthy(v)
  return v ~= nil and v ~= false and v ~= vim.NIL
end

-- Descendants of `pid` (Linux /proc), deepest first. Best effort; empty elsewhere.
local function descendants(pid, acc)
  acc = acc or {}
  local kids = {}
  local tasks = uv.fs_scandir('/proc/' .. pid .. '/task')
  if tasks then
    while true do
      local tid = uv.fs_scandir_next(tasks)
      if not tid then
        break
      end
      local f = io.open('/proc/' .. pid .. '/task/' .. tid .. '/children', 'r')
      if f then
        for k in (f:read('*a') or ''):gmatch('%d+') do
          table.insert(kids, tonumber(k))
        end
        f:close()
      end
    end
  end
  for _, k in ipairs(kids) do
    descendants(k, acc)
    table.insert(acc, k)
  end
  return acc
end

-- ---------------------------------------------------------------------------
-- Construction
-- ---------------------------------------------------------------------------

--- Start a child Neovim.
--- opts:
---   env          table of extra environment variables (a value `false` removes the variable)
---   args         list of extra command-line arguments (appended)
---   cwd          working directory (default ACP_ROOT)
---   init         init file (default tests/minimal_init.lua); 'NONE' for none
---   nvim         binary (default env ACP_NVIM, else this Neovim)
---   rpc_timeout  ms before an unanswered request kills the child (default 10000)
---   isolate      give the child private XDG_{CONFIG,DATA,STATE,CACHE}_HOME dirs (default true)
---   allow_startup_errors  do not raise when v:errmsg is set after startup
function Child.new(opts)
  opts = opts or {}
  counter = counter + 1
  local self = setmetatable({}, Child)
  self.id = counter
  self.rpc_timeout = opts.rpc_timeout or DEFAULT_RPC_TIMEOUT
  self.stderr_lines = {}
  self.exit_code = nil -- set once the process is known to have exited
  self.stopped = false -- stop() was called
  self.observed = false -- the test saw the exit (stop, wait_exit, or an error we raised)

  local nvim = opts.nvim or vim.env.ACP_NVIM
  if not nvim or nvim == '' then
    nvim = vim.v.progpath
  end
  local init = opts.init or (root() .. '/tests/minimal_init.lua')
  local cmd = { nvim, '--clean', '--embed', '--headless', '-u', init }
  vim.list_extend(cmd, opts.args or {})
  self.argv = cmd

  local env = {}
  if opts.isolate ~= false then
    local base = string.format('%s/child-%d', T.tmp_root(), counter)
    self.xdg = base
    for _, k in ipairs({ 'CONFIG', 'DATA', 'STATE', 'CACHE' }) do
      local dir = base .. '/' .. k:lower()
      vim.fn.mkdir(dir, 'p')
      env['XDG_' .. k .. '_HOME'] = dir
    end
  end
  local remove = {}
  for k, v in pairs(opts.env or {}) do
    if v == false then
      remove[k] = true
      env[k] = nil
    else
      env[k] = tostring(v)
    end
  end

  local job_opts = {
    rpc = true,
    cwd = opts.cwd or root(),
    on_stderr = function(_, data)
      if not data then
        return
      end
      local lines = self.stderr_lines
      -- jobstart splits on newlines; the first item continues the previous partial line
      if #lines > 0 and data[1] then
        lines[#lines] = lines[#lines] .. data[1]
      elseif data[1] then
        table.insert(lines, data[1])
      end
      for i = 2, #data do
        table.insert(lines, data[i])
      end
      while #lines > STDERR_KEEP do
        table.remove(lines, 1)
      end
    end,
    on_exit = function(_, code)
      self.exit_code = code
    end,
  }
  if next(remove) then
    local full = vim.fn.environ()
    for k in pairs(remove) do
      full[k] = nil
    end
    job_opts.env = vim.tbl_extend('force', full, env)
    job_opts.clear_env = true
  elseif next(env) then
    job_opts.env = env
  end

  local ok, chan = pcall(vim.fn.jobstart, cmd, job_opts)
  if not ok or type(chan) ~= 'number' or chan <= 0 then
    error('failed to start child nvim (' .. table.concat(cmd, ' ') .. '): ' .. tostring(chan), 2)
  end
  self.chan = chan
  self._pid = vim.fn.jobpid(chan)
  table.insert(Child.registry, self)

  -- Handshake: proves the child is up and surfaces init/plugin errors right away.
  local info = self:lua('return { pid = vim.fn.getpid(), errmsg = vim.v.errmsg }')
  if not opts.allow_startup_errors and info.errmsg ~= '' then
    local msg = 'child nvim reported an error during startup: ' .. info.errmsg
    local err = self:stderr()
    if err ~= '' then
      msg = msg .. '\nchild stderr:\n' .. err
    end
    self:stop()
    error(msg, 2)
  end
  return self
end

-- ---------------------------------------------------------------------------
-- Liveness
-- ---------------------------------------------------------------------------

--- Exit code if the child has exited, else nil. Does not block.
function Child:poll()
  if self.exit_code ~= nil then
    return self.exit_code
  end
  local r = vim.fn.jobwait({ self.chan }, 0)[1]
  if r >= 0 then
    self.exit_code = r
  elseif r == -3 then -- job id no longer valid: exited and reaped, on_exit pending
    self.exit_code = self.exit_code or -1
  end
  return self.exit_code
end

function Child:is_alive()
  return self:poll() == nil
end

function Child:pid()
  return self._pid
end

--- Last lines the child wrote to stderr, as one string.
function Child:stderr()
  return vim.trim(table.concat(self.stderr_lines, '\n'))
end

function Child:_death_message(what)
  self.observed = true
  local code = self.exit_code
  local desc
  if code == nil then
    desc = 'is not running'
  elseif code == -1 then
    desc = 'has exited'
  elseif code >= 128 then
    desc = string.format('was killed (exit code %d, signal %d)', code, code - 128)
  else
    desc = string.format('has exited with code %d', code)
  end
  local msg = string.format('child nvim #%d (pid %s) %s%s', self.id, tostring(self._pid), desc, what and (' ' .. what) or '')
  local err = self:stderr()
  if err ~= '' then
    msg = msg .. '\nchild stderr (tail):\n' .. err
  end
  return msg
end

-- Kill the child and everything it started (SIGKILL), then reap it.
function Child:_kill()
  local pid = self._pid
  if not pid or self:poll() ~= nil then
    return self.exit_code
  end
  for _, d in ipairs(descendants(pid)) do
    pcall(uv.kill, d, 'sigkill')
  end
  pcall(uv.kill, pid, 'sigkill')
  pcall(vim.fn.jobstop, self.chan)
  local r = vim.fn.jobwait({ self.chan }, 2000)[1]
  if r >= 0 then
    self.exit_code = r
  else
    self:poll()
  end
  return self.exit_code
end

-- ---------------------------------------------------------------------------
-- RPC
-- ---------------------------------------------------------------------------

--- Raw RPC request with a watchdog. Returns the result (vim.NIL for nil at top level is
--- converted to nil).
function Child:rpc(method, ...)
  if self:poll() ~= nil then
    error(self:_death_message('(before ' .. method .. ')'), 0)
  end
  local timeout, capped = T.remaining(self.rpc_timeout)
  local pid = self._pid
  local fired = false
  local timer = uv.new_timer()
  -- Runs inside the blocked rpcrequest's event loop: only uv calls are allowed here.
  timer:start(math.max(timeout, 1), 0, function()
    fired = true
    for _, d in ipairs(descendants(pid)) do
      pcall(uv.kill, d, 'sigkill')
    end
    pcall(uv.kill, pid, 'sigkill')
  end)
  local ok, res = pcall(vim.rpcrequest, self.chan, method, ...)
  timer:stop()
  timer:close()
  if ok then
    if res == vim.NIL then
      return nil
    end
    return res
  end
  if fired then
    self.observed = true
    self:_kill()
    error(
      string.format(
        'child nvim #%d did not answer %s within %d ms%s; it was killed%s',
        self.id,
        method,
        timeout,
        capped and ' (case deadline reached)' or '',
        self:stderr() ~= '' and ('\nchild stderr (tail):\n' .. self:stderr()) or ''
      ),
      0
    )
  end
  -- Channel closed under us? Give the exit a moment to be reaped.
  if type(res) == 'string' and (res:find('Invalid channel') or res:find('closed')) then
    local r = vim.fn.jobwait({ self.chan }, 500)[1]
    if r >= 0 then
      self.exit_code = r
    end
    if self:poll() ~= nil then
      error(self:_death_message('(during ' .. method .. ')'), 0)
    end
  end
  -- An error raised inside the child: strip the RPC wrapper, keep the child's traceback.
  local msg = type(res) == 'string' and res or vim.inspect(res)
  msg = msg:gsub('^Lua: ', ''):gsub('^Error executing lua: ', '')
  error('error in child nvim: ' .. msg, 0)
end

--- Fire-and-forget RPC notification.
function Child:notify(method, ...)
  if self:poll() ~= nil then
    error(self:_death_message('(before ' .. method .. ')'), 0)
  end
  vim.rpcnotify(self.chan, method, ...)
end

--- Run a Lua chunk in the child and return its (first) result. `args` are available as `...`.
--- Use `return` to get a value: child:lua('return vim.bo.filetype').
function Child:lua(code, args)
  return self:rpc('nvim_exec_lua', code, args or {})
end

--- Run a Lua chunk in the child without waiting for it (use for code that blocks, e.g. a
--- prompt waiting for input).
function Child:lua_notify(code, args)
  self:notify('nvim_exec_lua', code, args or {})
end

--- Run a parent-side function in the child (its bytecode is shipped; upvalues are NOT
--- transferred, so pass everything it needs as arguments). Returns its first result.
function Child:lua_func(fn, ...)
  local bc = string.dump(fn)
  return self:lua(
    'local f = assert(load((...), "=lua_func", "b")); return (f(select(2, ...)))',
    { bc, ... }
  )
end

--- Run an Ex command; returns its output (what :echo etc. printed), as a string.
function Child:cmd(ex)
  local res = self:rpc('nvim_exec2', ex, { output = true })
  return res and res.output or ''
end

--- Send keys (with <> notation) through the child's input queue, like typing them.
function Child:feed(keys)
  self:rpc('nvim_input', keys)
end

--- Waits until the child has run what it had scheduled (two rounds of vim.schedule, for
--- callbacks that schedule again). Before typing <C-c>: a <C-c> that arrives while the child is
--- busy is taken as an interrupt and flushes the typeahead (as it does for a user), so a test
--- types it when the child is idle.
function Child:settle()
  for _ = 1, 2 do
    self:lua([[_G.__settled = false; vim.schedule(function() _G.__settled = true end)]])
    self:wait_for([[return _G.__settled]])
  end
end

--- Lines of buffer `buf` (default 0 = current), optionally a [start, end) range.
function Child:buf_lines(buf, start, end_)
  return self:rpc('nvim_buf_get_lines', buf or 0, start or 0, end_ or -1, false)
end

--- Replace the lines of buffer `buf` (default 0).
function Child:set_lines(buf, lines)
  self:rpc('nvim_buf_set_lines', buf or 0, 0, -1, false, lines)
end

--- :messages output of the child.
function Child:messages()
  return self:cmd('messages')
end

--- Poll the child every 10 ms until `code` yields a truthy value; return that value.
--- `code` is a Lua expression ('vim.g.x == 1'), a chunk with `return`, or a function
--- (shipped like lua_func, called with `args`). Errors raised by `code` in the child count as
--- "not yet" (the last one is shown on timeout); a dead child raises at once.
--- timeout_ms defaults to 5000 (env ACP_TEST_WAIT_TIMEOUT) and is capped by the case deadline.
function Child:wait_for(code, timeout_ms, args)
  local chunk, call_args
  if type(code) == 'function' then
    chunk = 'local f = assert(load((...), "=wait_for", "b")); return (f(select(2, ...)))'
    call_args = { string.dump(code), unpack(args or {}) }
  else
    chunk = code
    if loadstring('return ' .. code) then
      chunk = 'return ' .. code
    end
    call_args = args or {}
  end
  local timeout, capped = T.remaining(timeout_ms or DEFAULT_WAIT_TIMEOUT)
  local start = T.now_ms()
  local last, last_err
  while true do
    local ok, res = pcall(self.lua, self, chunk, call_args)
    if ok then
      last, last_err = res, nil
      if truthy(res) then
        return res
      end
    else
      if self:poll() ~= nil then
        error(res, 0)
      end
      last_err = res
    end
    if T.now_ms() - start >= timeout then
      break
    end
    vim.wait(10)
  end
  local what = type(code) == 'function' and '<function>' or code
  local msg = string.format(
    'wait_for timed out after %d ms%s: %s\n  last value: %s',
    timeout,
    capped and ' (case deadline reached)' or '',
    what,
    T.show(last)
  )
  if last_err then
    msg = msg .. '\n  last error: ' .. tostring(last_err)
  end
  error(msg, 2)
end

--- Wait until the child exits by itself; returns its exit code (raises on timeout).
function Child:wait_exit(timeout_ms)
  self.observed = true
  local timeout = T.remaining(timeout_ms or DEFAULT_WAIT_TIMEOUT)
  if self:poll() ~= nil then
    return self.exit_code
  end
  local r = vim.fn.jobwait({ self.chan }, timeout)[1]
  if r >= 0 then
    self.exit_code = r
    return r
  end
  if self:poll() ~= nil then
    return self.exit_code
  end
  error(string.format('child nvim #%d did not exit within %d ms', self.id, timeout), 2)
end

--- Quit the child (`:qa!`), kill it if it has not exited after `timeout_ms` (default 2000).
--- Returns the exit code (0 for a clean quit; >= 128 when it had to be killed or crashed).
--- Idempotent.
function Child:stop(timeout_ms)
  if self.stopped then
    return self.exit_code
  end
  self.stopped = true
  self.observed = true
  if self:poll() ~= nil then
    return self.exit_code
  end
  pcall(vim.rpcnotify, self.chan, 'nvim_command', 'qa!')
  local r = vim.fn.jobwait({ self.chan }, timeout_ms or 2000)[1]
  if r >= 0 then
    self.exit_code = r
  elseif self:poll() == nil then
    self.killed = true
    self:_kill()
  end
  return self.exit_code
end

-- ---------------------------------------------------------------------------
-- Registry
-- ---------------------------------------------------------------------------

--- Stop every registered child (the runner calls this after each case) and empty the registry.
--- Returns a list of problem strings: children that died on their own with a non-zero status
--- that the test never looked at (a crash the case would otherwise hide).
function Child.cleanup()
  local problems = {}
  local list = Child.registry
  Child.registry = {}
  for _, c in ipairs(list) do
    local died_alone = not c.stopped and not c.observed and c:poll() ~= nil
    local ok, code = pcall(c.stop, c, 1000)
    if not ok then
      pcall(c._kill, c)
    end
    if died_alone and code ~= 0 then
      table.insert(problems, c:_death_message('unexpectedly during the case'))
    end
  end
  return problems
end

return Child
