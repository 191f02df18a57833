-- A minimal msgpack-RPC client for `nvim --embed`, on libuv pipes, for the benchmark.
--
-- Unlike jobstart(..., {rpc = true}) it sees every notification the child sends, so it can be
-- attached as a UI (nvim_ui_attach) and timestamp each `flush` of the `redraw` events: a flush
-- is the moment the child hands a finished screen update to its UI.
--
--   local c = Rpc.spawn(nvim, { '--clean', '--embed', '--headless' }, { env = {...} })
--   c:request('nvim_ui_attach', 200, 50, { ext_linegrid = true })
--   c:request('nvim_exec_lua', 'return 1', {})
--   c:wait_notification('bench_done', 60000)
--   c:stop()
local uv = vim.uv
local mpack = vim.mpack

local Rpc = {}
Rpc.__index = Rpc

-- Buffer, Window and Tabpage handles arrive as EXT types; decode them to their integer.
local function ext_handle(_, data)
  return mpack.decode(data)
end

local function env_list(extra)
  local env = vim.fn.environ()
  for k, v in pairs(extra or {}) do
    env[k] = v
  end
  local out = {}
  for k, v in pairs(env) do
    if v ~= false then
      out[#out + 1] = k .. '=' .. tostring(v)
    end
  end
  return out
end

function Rpc.spawn(cmd, args, opts)
  opts = opts or {}
  local self = setmetatable({}, Rpc)
  self.flushes = {} -- hrtime (ns) of every `flush` redraw event
  self.redraw_bytes = 0
  self.notifications = {} -- method -> list of args
  self.stderr = {}
  self.session = mpack.Session({ unpack = mpack.Unpacker({ ext = { [0] = ext_handle, [1] = ext_handle, [2] = ext_handle } }) })
  self.stdin, self.stdout, self.stderr_pipe = uv.new_pipe(), uv.new_pipe(), uv.new_pipe()
  local handle, pid = uv.spawn(cmd, {
    args = args,
    stdio = { self.stdin, self.stdout, self.stderr_pipe },
    env = env_list(opts.env),
    cwd = opts.cwd,
  }, function(code, signal)
    self.exit_code, self.exit_signal = code, signal
  end)
  assert(handle, 'cannot start ' .. cmd .. ': ' .. tostring(pid))
  self.handle, self.pid = handle, pid
  self.stdout:read_start(function(err, data)
    if err or not data then
      self.eof = true
      return
    end
    local now = uv.hrtime()
    local pos, len = 1, #data
    while pos <= len do
      local kind, id_or_cb, method_or_err, args_or_result
      kind, id_or_cb, method_or_err, args_or_result, pos = self.session:receive(data, pos)
      if kind == 'response' then
        id_or_cb(method_or_err, args_or_result)
      elseif kind == 'notification' then
        if method_or_err == 'redraw' then
          for _, batch in ipairs(args_or_result) do
            local name = batch[1]
            if name == 'flush' then
              self.flushes[#self.flushes + 1] = now
            elseif name == 'grid_line' then
              self.grid_lines = (self.grid_lines or 0) + #batch - 1
            end
          end
        else
          local list = self.notifications[method_or_err] or {}
          list[#list + 1] = args_or_result
          self.notifications[method_or_err] = list
        end
      elseif kind == 'request' then
        -- The child never asks us anything in the benchmark; answer with an error.
        self.stdin:write(self.session:reply(id_or_cb) .. mpack.encode('not supported') .. mpack.encode(mpack.NIL))
      end
    end
  end)
  self.stderr_pipe:read_start(function(_, data)
    if data then
      self.stderr[#self.stderr + 1] = data
    end
  end)
  return self
end

--- Sends a request and waits for its answer (raises on an error answer or a timeout).
function Rpc:request(method, ...)
  local args = { ... }
  local done, err, result = false, nil, nil
  local data = self.session:request(function(e, r)
    done, err, result = true, e, r
  end)
  self.stdin:write(data .. mpack.encode(method) .. mpack.encode(args))
  local ok = vim.wait(self.timeout or 60000, function()
    return done or self.exit_code ~= nil
  end, 1)
  if not done then
    error(('%s: %s (child stderr: %s)'):format(method, ok and 'child exited' or 'timed out', table.concat(self.stderr)), 2)
  end
  if err ~= nil and err ~= mpack.NIL then
    error(('%s failed in the child: %s'):format(method, vim.inspect(err)), 2)
  end
  if result == mpack.NIL then
    return nil
  end
  return result
end

function Rpc:notify(method, ...)
  self.stdin:write(self.session:notify() .. mpack.encode(method) .. mpack.encode({ ... }))
end

function Rpc:lua(code, ...)
  return self:request('nvim_exec_lua', code, { ... })
end

--- Waits for the child to send `vim.rpcnotify(chan, method, ...)`; returns its arguments.
function Rpc:wait_notification(method, timeout_ms)
  local ok = vim.wait(timeout_ms, function()
    local list = self.notifications[method]
    return (list and #list > 0) or self.exit_code ~= nil
  end, 5)
  local list = self.notifications[method]
  if not (list and #list > 0) then
    error(('no %s from the child (%s; stderr: %s)'):format(method, ok and 'it exited' or 'timed out', table.concat(self.stderr)), 2)
  end
  return table.remove(list, 1)
end

--- Polls `code` (a Lua chunk run in the child) every 10 ms until it returns a truthy value.
function Rpc:wait_for(code, timeout_ms)
  local deadline = uv.hrtime() + timeout_ms * 1e6
  while true do
    local v = self:lua(code)
    if v then
      return v
    end
    if uv.hrtime() > deadline then
      error('timed out waiting for: ' .. code, 2)
    end
    vim.wait(10)
  end
end

function Rpc:stop()
  if self.exit_code == nil then
    pcall(self.notify, self, 'nvim_command', 'qa!')
    if not vim.wait(3000, function()
      return self.exit_code ~= nil
    end, 5) then
      pcall(uv.kill, self.pid, 'sigkill')
      vim.wait(1000, function()
        return self.exit_code ~= nil
      end, 5)
    end
  end
  for _, h in ipairs({ self.stdin, self.stdout, self.stderr_pipe, self.handle }) do
    if not h:is_closing() then
      h:close()
    end
  end
end

return Rpc
