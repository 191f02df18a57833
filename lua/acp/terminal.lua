--- Client terminals (`terminal/*`) as processes started with `vim.uv.spawn`.
--- Each runs in its own process group (a new session), and every group a
--- terminal started stays registered until it is empty, so a session's end
--- and Neovim's exit kill background children too. Output is read through
--- pipes and handed to the core on the main loop in batches, in order
--- (Neovim's job callbacks would queue a flood in memory). Commands get
--- the user's environment without Neovim's own variables and the
--- `terminal.env_deny` names. `:AcpTerminal {id}` opens the whole output.
local api = vim.api
local uv = vim.uv or vim.loop
local config = require('acp.config')

local M = {}

--- Running processes: key "thread:id" -> { pid, handle, thread, id }
M.jobs = {}
--- Every process group a terminal started, until it is empty:
--- pgid -> thread id.
M.groups = {}
--- Open output buffers: key "thread:id" -> bufnr
M.buffers = {}

-- Output read but not yet given to the core, per terminal; reading pauses
-- above this many bytes until the main loop has taken them.
local MAX_QUEUED = 1024 * 1024
-- After the process exits, output still in the pipes is read for this
-- long before the exit is reported (background children may hold the
-- pipes open for much longer).
local DRAIN_MS = 100

local function key(thread, id)
  return thread .. ':' .. id
end

local function core()
  return require('acp.core')
end

--- True while any process of group `pgid` exists.
local function group_alive(pgid)
  return uv.kill(-pgid, 0) == 0
end

-- Environment ---------------------------------------------------------------

--- `pattern` (`*` any characters, `?` one) as an anchored Lua pattern.
local function glob_to_pattern(glob)
  local p = glob:upper():gsub('[%^%$%(%)%%%.%[%]%+%-]', '%%%0'):gsub('%*', '.*'):gsub('%?', '.')
  return '^' .. p .. '$'
end

--- Whether the variable `name` is in the deny list.
function M.denied(name, deny)
  local upper = name:upper()
  for _, glob in ipairs(deny or config.options.terminal.env_deny) do
    if upper:match(glob_to_pattern(glob)) then
      return true
    end
  end
  return false
end

--- The addresses through which this Neovim can be driven.
local function server_addresses()
  local out = {}
  for _, a in ipairs(vim.fn.serverlist()) do
    out[#out + 1] = a
  end
  if vim.v.servername ~= '' then
    out[#out + 1] = vim.v.servername
  end
  return out
end

--- The environment of a command: the user's, minus Neovim's own variables
--- (`NVIM`, `NVIM_LISTEN_ADDRESS`, any holding one of this Neovim's server
--- addresses) and the denied names, plus `agent_env` (name -> value) on top.
--- `opts.keep_secrets`: keep the denied names (a sign-in command the user
--- runs may need them); Neovim's own variables are removed in any case.
function M.env(agent_env, opts)
  local keep_secrets = opts and opts.keep_secrets
  local env = vim.fn.environ()
  local servers = server_addresses()
  for name, value in pairs(env) do
    local drop = name == 'NVIM' or name == 'NVIM_LISTEN_ADDRESS' or (not keep_secrets and M.denied(name))
    for _, addr in ipairs(servers) do
      if drop then
        break
      end
      drop = value == addr or (#addr > 3 and value:find(addr, 1, true) ~= nil)
    end
    if drop then
      env[name] = nil
    end
  end
  if type(agent_env) == 'table' then
    for name, value in pairs(agent_env) do
      if type(name) == 'string' then
        env[name] = tostring(value)
      end
    end
  end
  return env
end

local function env_list(env)
  local out = {}
  for name, value in pairs(env) do
    out[#out + 1] = name .. '=' .. value
  end
  table.sort(out)
  return out
end

-- Process groups ------------------------------------------------------------

--- Forgets groups that are empty.
local function prune()
  for pgid in pairs(M.groups) do
    if not group_alive(pgid) then
      M.groups[pgid] = nil
    end
  end
end

local hooked = false
local function hook_exit()
  if hooked then
    return
  end
  hooked = true
  api.nvim_create_autocmd('VimLeavePre', {
    group = api.nvim_create_augroup('acp_terminals', { clear = true }),
    callback = function()
      M.kill_all()
    end,
  })
end

--- SIGTERM to group `pgid`, SIGKILL after the grace period if any process
--- of it is left.
local function terminate(pgid)
  if not group_alive(pgid) then
    return
  end
  uv.kill(-pgid, 'sigterm')
  vim.defer_fn(function()
    if group_alive(pgid) then
      uv.kill(-pgid, 'sigkill')
    end
  end, config.options.terminal.kill_grace_ms)
end

-- Starting ------------------------------------------------------------------

--- The exit as the core expects it: the exit code, or 128 + N for a
--- process killed by signal N.
local function job_code(code, signal)
  if signal and signal ~= 0 then
    return 128 + signal
  end
  return code
end

--- terminal_start: { id, argv, env, cwd } -> { pid } or { error }
---@param ev acp.Event.call payload acp.Call.terminal_start, reply acp.Reply.terminal_start
function M.start(ev)
  local c, p, thread = core(), ev.payload, ev.thread
  local id = p.id
  local k = key(thread, id)
  local argv = p.argv
  local stdout, stderr = uv.new_pipe(false), uv.new_pipe(false)
  local pipes = { stdout, stderr }
  -- Output read from either pipe, in arrival order, until the main loop
  -- hands it to the core.
  local parts, queued, scheduled, paused = {}, 0, false, false
  local eof, exited, reported, code = 0, false, false, nil
  local handle, pid

  local read_start -- defined below: reading and delivery refer to each other

  -- Main loop: output first, then the exit once every pipe ended or the
  -- drain time after the exit passed.
  local function deliver(final)
    scheduled = false
    if #parts > 0 then
      local data = table.concat(parts)
      parts, queued = {}, 0
      local ok, err = pcall(c.terminal_output, thread, id, data)
      if not ok and not reported then
        require('acp.bridge').log_error(('terminal %s output: %s'):format(id, tostring(err)))
      end
    end
    if paused then
      paused = false
      read_start()
      if final then
        -- Output is still waiting in the pipes: it goes before the exit.
        final = false
        vim.defer_fn(function()
          deliver(true)
        end, DRAIN_MS)
      end
    end
    if exited and not reported and (final or eof >= #pipes) then
      reported = true
      M.jobs[k] = nil
      if handle and not handle:is_closing() then
        handle:close()
      end
      pcall(c.terminal_exit, thread, id, code)
    end
  end

  -- Called from uv callbacks: only schedules work for the main loop.
  local function wake(final)
    if final then
      vim.schedule(function()
        deliver(true)
      end)
    elseif not scheduled then
      scheduled = true
      vim.schedule(function()
        deliver(false)
      end)
    end
  end

  read_start = function()
    for _, pipe in ipairs(pipes) do
      if not pipe:is_closing() then
        pipe:read_start(function(_, data)
          if data then
            parts[#parts + 1] = data
            queued = queued + #data
            if queued > MAX_QUEUED and not paused then
              paused = true
              for _, q in ipairs(pipes) do
                if not q:is_closing() then
                  q:read_stop()
                end
              end
            end
          else
            -- End of file (or a read error `err`, which ends it too).
            pipe:read_stop()
            pipe:close()
            eof = eof + 1
          end
          wake(false)
        end)
      end
    end
  end

  local rest = {}
  for i = 2, #argv do
    rest[#rest + 1] = argv[i]
  end
  local ok, h, spawned = pcall(uv.spawn, argv[1], {
    args = rest,
    env = env_list(M.env(p.env)),
    cwd = p.cwd,
    stdio = { nil, stdout, stderr },
    -- A new session: the process leads its own group.
    detached = true,
  }, function(exit_code, signal)
    exited, code = true, job_code(exit_code, signal)
    wake(false)
    local timer = uv.new_timer()
    timer:start(DRAIN_MS, 0, function()
      timer:close()
      wake(true)
    end)
  end)
  handle, pid = ok and h or nil, spawned
  if not handle then
    for _, pipe in ipairs(pipes) do
      pipe:close()
    end
    local why = ok and tostring(spawned) or tostring(h)
    if why:match('^ENOENT') or why:match('^EACCES') then
      why = ('`%s` is not executable (%s)'):format(argv[1], why)
    end
    return c.call_done(ev.call, { error = why })
  end
  M.jobs[k] = { pid = pid, handle = handle, thread = thread, id = id }
  prune()
  M.groups[pid] = thread
  hook_exit()
  read_start()
  c.call_done(ev.call, { pid = pid })
end

--- terminal_kill: { id, pid }: SIGTERM to the group, SIGKILL after a grace.
---@param ev acp.Event.call payload acp.Call.terminal_kill (no reply)
function M.kill(ev)
  local pid = ev.payload.pid
  if pid then
    terminate(pid)
  end
end

--- Kills every process group the terminals of `thread` started (its
--- session ended).
function M.kill_thread(thread)
  for pgid, t in pairs(M.groups) do
    if t == thread then
      terminate(pgid)
    end
  end
end

--- Neovim exits: SIGTERM to every group, a short bounded wait, then
--- SIGKILL to what is left. Never holds the exit longer than ~200 ms.
function M.kill_all()
  local live = {}
  for pgid in pairs(M.groups) do
    if group_alive(pgid) then
      uv.kill(-pgid, 'sigterm')
      live[#live + 1] = pgid
    end
  end
  local deadline = uv.hrtime() + 200 * 1e6
  while #live > 0 and uv.hrtime() < deadline do
    uv.sleep(10)
    live = vim.tbl_filter(group_alive, live)
  end
  for _, pgid in ipairs(live) do
    uv.kill(-pgid, 'sigkill')
  end
  M.groups = {}
end

--- Live output for an open terminal buffer.
function M.append(thread, id, data)
  local buf = M.buffers[key(thread, id)]
  if not (buf and api.nvim_buf_is_valid(buf)) then
    return
  end
  local n = api.nvim_buf_line_count(buf)
  local last = api.nvim_buf_get_lines(buf, n - 1, n, false)[1]
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_text(buf, n - 1, #last, n - 1, #last, vim.split(data:gsub('\r', ''), '\n', { plain = true }))
  vim.bo[buf].modifiable = false
end

--- Opens a terminal's output (a client terminal or an agent's display
--- terminal) in a normal buffer that follows new output.
function M.open(view, id)
  local c = core()
  local k = key(view.thread, id)
  local buf = M.buffers[k]
  if not (buf and api.nvim_buf_is_valid(buf)) then
    -- The output so far, and from now on its increments as events (only
    -- terminals open in a buffer get them).
    local t = c.is_loaded() and c.terminal_text(view.thread, id) and c.watch_terminal(view.thread, id, true)
    if not t then
      vim.notify(('acp.nvim: no terminal `%s` in this chat'):format(id), vim.log.levels.WARN)
      return
    end
    buf = api.nvim_create_buf(true, true)
    api.nvim_buf_set_name(buf, ('acp://terminal/%d/%s'):format(view.thread, id))
    vim.bo[buf].bufhidden = 'hide'
    api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(t.output:gsub('\r', ''), '\n', { plain = true }))
    vim.bo[buf].modifiable = false
    M.buffers[k] = buf
    local thread = view.thread
    api.nvim_create_autocmd('BufWipeout', {
      buffer = buf,
      once = true,
      callback = function()
        M.buffers[k] = nil
        pcall(c.watch_terminal, thread, id, false)
      end,
    })
  end
  vim.cmd('split')
  api.nvim_win_set_buf(0, buf)
  return buf
end

return M
