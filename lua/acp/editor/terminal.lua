--- Client terminals (`terminal/*`) as processes started with `vim.uv.spawn`.
--- Each runs in its own process group (a new session), and every group a
--- terminal started stays registered until it is empty, so a release, a
--- kill, a session's end and Neovim's exit end background children too,
--- double forks included: an anchor process (see `WRAP`) holds the group's
--- id for as long as the group is registered. Output is read through
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
--- Every process group a terminal started, while it is known to be ours:
--- pgid -> { thread, reaped, members, anchor, sock }. A group is signalled
--- only while its leader is not reaped (our unreaped child keeps its pid),
--- while its anchor runs (a process of the group whose pid and start time
--- we know, alive until `sock` closes), or while a member recorded when
--- the leader was reaped still runs with the same start time (a live
--- member keeps the group id from being reused). A stored pid alone could
--- name another process once it is reused.
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

--- `/proc/<pid>/stat` fields after the command name (state is [1], the
--- group [3], the start time [20]); nil for a missing or zombie process.
local function stat_of(pid)
  local f = io.open('/proc/' .. pid .. '/stat', 'r')
  if not f then
    return nil
  end
  local s = f:read('*a') or ''
  f:close()
  local rest = s:match('^.*%)%s+(.*)$')
  if not rest then
    return nil
  end
  local fields = {}
  for w in rest:gmatch('%S+') do
    fields[#fields + 1] = w
  end
  if fields[1] == 'Z' or fields[1] == 'X' then
    return nil
  end
  return fields
end

--- The running processes of the groups in `pgids` (a set), in one pass
--- over /proc: pgid -> list of { pid, start }.
local function members_by_group(pgids)
  local out = {}
  for pgid in pairs(pgids) do
    out[pgid] = {}
  end
  local dir = uv.fs_scandir('/proc')
  while dir do
    local name = uv.fs_scandir_next(dir)
    if not name then
      break
    end
    local pid = tonumber(name)
    local f = pid and stat_of(pid)
    local list = f and out[tonumber(f[3])]
    if list then
      list[#list + 1] = { pid = pid, start = f[20] }
    end
  end
  return out
end

--- The running processes of group `pgid`: { pid, start } each.
local function members_of(pgid)
  return members_by_group({ [pgid] = true })[pgid]
end

--- Whether process `p` ({ pid, start }) still runs.
local function still_running(p)
  local f = stat_of(p.pid)
  return f ~= nil and f[20] == p.start
end

--- Whether the anchor of group `g` is known and runs.
local function anchored(g)
  return g.anchor ~= nil and still_running(g.anchor)
end

--- True while group `pgid` is known to be ours and not empty.
local function group_alive(pgid)
  local g = M.groups[pgid]
  if not g then
    return false
  end
  if not g.reaped then
    return uv.kill(-pgid, 0) == 0
  end
  if anchored(g) then
    return true
  end
  for _, m in ipairs(g.members) do
    if still_running(m) then
      return true
    end
  end
  return false
end

--- `list` ({ pid, start } each) without the anchor of `g`.
local function without_anchor(g, list)
  local out = {}
  for _, m in ipairs(list) do
    if not (g.anchor and m.pid == g.anchor.pid) then
      out[#out + 1] = m
    end
  end
  return out
end

--- Forgets group `pgid`: closing its socket ends its anchor.
local function forget(pgid)
  local g = M.groups[pgid]
  if not g then
    return
  end
  M.groups[pgid] = nil
  if g.sock and not g.sock:is_closing() then
    g.sock:close()
  end
end

--- True while group `pgid` is ours and has a running process other than
--- its anchor (a zombie leader does not count).
--- `found`: the members of `pgid` if already read (one pass over /proc
--- serves many groups).
local function busy(pgid, found)
  local g = M.groups[pgid]
  if not (g and group_alive(pgid)) then
    return false
  end
  return #without_anchor(g, found or members_of(pgid)) > 0
end

-- Groups whose leader was reaped are looked at again after a while, and
-- then less and less often: a group left with only its anchor is
-- forgotten (which ends the anchor); otherwise its members are recorded
-- again while the anchor shows that the group is still the same.
local watch_timer
local WATCH_FIRST_MS, WATCH_MAX_MS = 200, 5000

local function watch_groups()
  local pgids = {}
  for pgid, g in pairs(M.groups) do
    if g.reaped then
      pgids[pgid] = true
    end
  end
  if next(pgids) == nil then
    return false
  end
  local found = members_by_group(pgids)
  for pgid in pairs(pgids) do
    local g = M.groups[pgid]
    -- The scan counts only if the anchor ran throughout it.
    if g and anchored(g) then
      local others = without_anchor(g, found[pgid])
      if #others == 0 then
        forget(pgid)
      else
        g.members = others
      end
    elseif g and not group_alive(pgid) then
      forget(pgid)
    end
  end
  for _, g in pairs(M.groups) do
    if g.reaped then
      return true
    end
  end
  return false
end

--- (Re)starts looking at reaped groups, first soon. Safe in a libuv callback.
local function watch_soon()
  if not watch_timer then
    watch_timer = uv.new_timer()
  end
  local delay = WATCH_FIRST_MS
  local function tick()
    local ok, more = pcall(watch_groups)
    if ok and more then
      delay = math.min(delay * 2, WATCH_MAX_MS)
      watch_timer:start(delay, 0, tick)
    end
  end
  watch_timer:stop()
  watch_timer:start(delay, 0, tick)
end

--- The leader of group `pgid` was reaped: what is left of the group is
--- recorded (a group left empty is forgotten). Safe in a libuv callback.
local function reaped(pgid)
  local g = M.groups[pgid]
  if not g then
    return
  end
  g.reaped = true
  g.members = without_anchor(g, members_of(pgid))
  if #g.members == 0 then
    -- Nothing left but the anchor, if that.
    forget(pgid)
    return
  end
  watch_soon()
end

--- Signals group `pgid` if it is known to be ours.
local function signal(pgid, sig)
  if group_alive(pgid) then
    uv.kill(-pgid, sig)
  end
end

-- The anchor ---------------------------------------------------------------

-- Every command runs through this: `sh -c WRAP sh argv...`. Its first line
-- starts the anchor and tells its pid on fd 3 (a socket whose other end
-- Neovim holds), then the shell becomes the command itself (same pid, so
-- the leader, the exit status and the output are the command's). The
-- anchor is started by a subshell that exits at once: it is no child of
-- the command (a command that waits for all its children still ends). It
-- ignores the signals a group is asked to stop with, writes nowhere, and
-- waits for the end of the socket: Neovim closes it once the group is
-- empty or killed, or by exiting (even when it crashes). While it runs,
-- the group id cannot be given to another group, so the whole group can
-- be signalled safely after its leader and the processes recorded with it
-- are gone: a double-forked grandchild stays in the group and ends with it.
local WRAP = "( ( trap '' HUP INT QUIT TERM; exec <&3 >/dev/null 2>&1 3>&-; read _ ) & echo $! >&3 ); exec \"$@\" 3>&-"

--- Where the program `name` would be found (execvp's rules, with the
--- command's own PATH and cwd), or nil: the wrapper cannot report a
--- missing program the way a failed spawn does.
local function find_program(name, env, cwd)
  local function runnable(path)
    local st = uv.fs_stat(path)
    return st ~= nil and st.type ~= 'directory' and uv.fs_access(path, 'X') == true
  end
  if type(name) ~= 'string' or name == '' then
    return nil
  end
  if name:find('/', 1, true) then
    local path = name:sub(1, 1) == '/' and name or ((cwd or uv.cwd()) .. '/' .. name)
    return runnable(path) and path or nil
  end
  for dir in ((env.PATH or '/usr/local/bin:/usr/bin:/bin') .. ':'):gmatch('([^:]*):') do
    if dir == '' then
      dir = cwd or uv.cwd()
    elseif dir:sub(1, 1) ~= '/' then
      dir = (cwd or uv.cwd()) .. '/' .. dir
    end
    if runnable(dir .. '/' .. name) then
      return dir .. '/' .. name
    end
  end
  return nil
end

--- Reads the anchor's pid from the socket of group `pgid`. Safe in a
--- libuv callback.
local function read_anchor(pgid, sock)
  local got = ''
  sock:read_start(function(_, data)
    local g = M.groups[pgid]
    if data and g and not g.anchor then
      got = got .. data
      local pid = tonumber(got:match('^(%d+)\n'))
      local f = pid and stat_of(pid)
      -- Still in the group: the anchor and no other process.
      if f and tonumber(f[3]) == pgid then
        g.anchor = { pid = pid, start = f[20] }
      end
    elseif not data then
      -- The anchor ended (or never started): the socket is of no more use.
      sock:read_stop()
      if not sock:is_closing() then
        sock:close()
      end
    end
  end)
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
      forget(pgid)
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
--- of it is left; then the group is forgotten (its anchor ends).
local function terminate(pgid)
  if not group_alive(pgid) then
    forget(pgid)
    return
  end
  uv.kill(-pgid, 'sigterm')
  vim.defer_fn(function()
    if busy(pgid) then
      signal(pgid, 'sigkill')
    end
    forget(pgid)
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
        require('acp.core.dispatch').log_error(('terminal %s output: %s'):format(id, tostring(err)))
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

  local env = M.env(p.env)
  local program = find_program(argv[1], env, p.cwd)
  -- `sh -c WRAP sh argv...` (see WRAP); a name that exec would take for
  -- an option is given as the path found.
  local rest = { '-c', WRAP, 'sh', (tostring(argv[1]):sub(1, 1) == '-') and program or argv[1] }
  for i = 2, #argv do
    rest[#rest + 1] = argv[i]
  end
  local function on_exit(exit_code, sig)
    exited, code = true, job_code(exit_code, sig)
    reaped(pid)
    wake(false)
    local timer = uv.new_timer()
    timer:start(DRAIN_MS, 0, function()
      timer:close()
      wake(true)
    end)
  end
  local sock = uv.new_pipe(false)
  local ok, h, spawned = true, nil, 'ENOENT: no such file or directory'
  if program then
    ok, h, spawned = pcall(uv.spawn, '/bin/sh', {
      args = rest,
      env = env_list(env),
      cwd = p.cwd,
      -- fd 3: the anchor's socket.
      stdio = { nil, stdout, stderr, sock },
      -- A new session: the process leads its own group.
      detached = true,
    }, on_exit)
  end
  handle, pid = ok and h or nil, spawned
  if not handle then
    for _, pipe in ipairs({ stdout, stderr, sock }) do
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
  M.groups[pid] = { thread = thread, reaped = false, members = {}, sock = sock }
  read_anchor(pid, sock)
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
  for pgid, g in pairs(M.groups) do
    if g.thread == thread then
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
    local set = {}
    for _, pgid in ipairs(live) do
      set[pgid] = true
    end
    local found = members_by_group(set)
    live = vim.tbl_filter(function(pgid)
      return busy(pgid, found[pgid])
    end, live)
  end
  for _, pgid in ipairs(live) do
    signal(pgid, 'sigkill')
  end
  -- Every anchor ends with its socket (they would at Neovim's exit too).
  for pgid in pairs(M.groups) do
    forget(pgid)
  end
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
      require('acp.util.escape').notify(('acp.nvim: no terminal `%s` in this chat'):format(id), vim.log.levels.WARN)
      return
    end
    buf = api.nvim_create_buf(true, true)
    api.nvim_buf_set_name(buf, ('acp://terminal/%d/%s'):format(view.thread, id))
    vim.bo[buf].bufhidden = 'hide'
    api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(t.output:gsub('\r', ''), '\n', { plain = true }))
    vim.bo[buf].modifiable = false
    -- A read-only view of the output: `q` closes it (Normal mode; there is
    -- no terminal to type into).
    vim.keymap.set('n', 'q', require('acp.util.window').close_or_previous, { buffer = buf, nowait = true, desc = 'Close the terminal output' })
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
  -- Its own bar (a split of the chat would keep the chat's header).
  local bar = '%#AcpInputTitle# Terminal %* ' .. require('acp.util.escape').statusline(id, 60) .. ' %#Comment#· q closes%*%<'
  api.nvim_set_option_value('winbar', bar, { scope = 'local', win = 0 })
  return buf
end

return M
