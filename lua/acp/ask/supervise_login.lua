--- The supervisor of a sign-in command (`:AcpAuth`'s terminal logins). Run
--- by the terminal job as `<nvim> --clean -l supervise_login.lua [--keep
--- NAME]... --parent PID -- CMD ARGS...`, it is not part of the plugin
--- loaded in the editor: it runs in a Neovim of its own, on the job's PTY.
---
--- It starts CMD on the same terminal (stdio inherited, same process
--- group: the login reads the keyboard and gets Ctrl-C), waits, and exits
--- with the login's status. When the login exits, or when it is told to
--- stop (SIGHUP when the editor closes the PTY, SIGTERM, SIGQUIT), or when
--- the editor dies, it sends SIGTERM to every process the login started,
--- waits at most 200 ms, sends SIGKILL to what is left, then exits.
--- Processes whose executable is named by `--keep` (the agent's
--- `keep_daemons`) are left running, with their own descendants.
---
--- - Linux: the supervisor is a child subreaper (`PR_SET_CHILD_SUBREAPER`),
---   so a daemon the login starts in its own session (setsid) or by a
---   double fork stays its descendant: a walk of /proc finds it. The
---   editor's death reaches it as SIGTERM (`PR_SET_PDEATHSIG`).
--- - macOS has neither: descendants are found by a `ps` walk of the parent
---   chain plus the members of the supervisor's process group (the PTY's
---   session); a process that left both and whose parent already exited is
---   not found. The editor's death is seen as a change of the parent pid
---   (polled every 100 ms). Written beside the Linux path, not run on CI.
---
--- Signals are blocked and taken synchronously (sigtimedwait on Linux,
--- sigpending polling on macOS), so Neovim's own handlers never run; the
--- process ends with `_exit`, without Neovim's teardown.
-- Required as a module (a plugin manager or a test loading every file):
-- nothing runs; only `nvim -l` runs it.
if (...) == 'acp.ask.supervise_login' then
  return {}
end

local ffi = require('ffi')
local uv = vim.uv or vim.loop

local linux = ffi.os == 'Linux'
local GRACE_MS = 200

ffi.cdef([[
int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5);
int getpid(void);
int getppid(void);
int kill(int pid, int sig);
int waitpid(int pid, int *status, int options);
void _exit(int status);
typedef struct { unsigned long val[32]; } acp_sigset;
int sigemptyset(acp_sigset *set);
int sigaddset(acp_sigset *set, int sig);
int sigismember(const acp_sigset *set, int sig);
int sigprocmask(int how, const acp_sigset *set, acp_sigset *old);
int sigpending(acp_sigset *set);
int sigwait(const acp_sigset *set, int *sig);
struct acp_timespec { long tv_sec; long tv_nsec; };
int nanosleep(const struct acp_timespec *req, struct acp_timespec *rem);
]])
if linux then
  ffi.cdef('int sigtimedwait(const acp_sigset *set, void *info, const struct acp_timespec *timeout);')
end

local SIG = { HUP = 1, INT = 2, QUIT = 3, KILL = 9, TERM = 15, CHLD = linux and 17 or 20 }
local SIG_BLOCK = linux and 0 or 1
local WNOHANG = 1

-- Arguments.
local keep, parent, cmd = {}, nil, {}
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == '--' then
      for j = i + 1, #arg do
        cmd[#cmd + 1] = arg[j]
      end
      break
    elseif a == '--keep' then
      keep[arg[i + 1] or ''] = true
      i = i + 1
    elseif a == '--parent' then
      parent = tonumber(arg[i + 1])
      i = i + 1
    end
    i = i + 1
  end
end
if #cmd == 0 then
  io.stderr:write('supervise_login: no command\n')
  ffi.C._exit(2)
end

-- No RPC socket of this helper Neovim is left behind (nor offered).
pcall(vim.fn.serverstop, vim.v.servername)

local me = ffi.C.getpid()
local stops = ffi.new('acp_sigset')
ffi.C.sigemptyset(stops)
for _, s in ipairs({ SIG.HUP, SIG.INT, SIG.QUIT, SIG.TERM, SIG.CHLD }) do
  ffi.C.sigaddset(stops, s)
end
ffi.C.sigprocmask(SIG_BLOCK, stops, nil)
if linux then
  ffi.C.prctl(36, 1, 0, 0, 0) -- PR_SET_CHILD_SUBREAPER
  ffi.C.prctl(1, SIG.TERM, 0, 0, 0) -- PR_SET_PDEATHSIG
end

local function sleep_ms(ms)
  local ts = ffi.new('struct acp_timespec', { math.floor(ms / 1000), (ms % 1000) * 1000000 })
  ffi.C.nanosleep(ts, nil)
end

--- Whether the editor that started us is gone.
local function orphaned()
  return parent ~= nil and ffi.C.getppid() ~= parent
end

-- Its own small helpers: under `--clean -l` none of the plugin is loaded
-- (and a supervisor should depend on as little as it can).
local function read(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

local function base(p)
  return (p or ''):match('([^/]*)$')
end

--- Whether `pid` runs a kept executable: by its executable file, its
--- argv[0], or its command name (cut at 15 bytes on Linux).
local function kept(pid, comm)
  if next(keep) == nil then
    return false
  end
  if linux then
    local exe = uv.fs_readlink('/proc/' .. pid .. '/exe')
    local argv0 = (read('/proc/' .. pid .. '/cmdline') or ''):match('^[^%z]*')
    if (exe and keep[base(exe)]) or keep[base(argv0)] then
      return true
    end
    for k in pairs(keep) do
      if k ~= '' and k:sub(1, 15) == comm then
        return true
      end
    end
    return false
  end
  return keep[base(comm)] == true
end

--- Every process: { pid, ppid, pgid, comm }.
local function processes()
  local out = {}
  if linux then
    for name in vim.fs.dir('/proc') do
      local pid = tonumber(name)
      local stat = pid and read('/proc/' .. name .. '/stat')
      if stat then
        local comm, rest = stat:match('^%d+ %((.*)%) (.*)$')
        local state, ppid, pgid = (rest or ''):match('^(%S) (%d+) (%d+)')
        if state and state ~= 'Z' then
          out[#out + 1] = { pid = pid, ppid = tonumber(ppid), pgid = tonumber(pgid), comm = comm }
        end
      end
    end
  else
    local ps = io.popen('ps -A -o pid= -o ppid= -o pgid= -o stat= -o comm= 2>/dev/null')
    for line in (ps and ps:read('*a') or ''):gmatch('[^\n]+') do
      local pid, ppid, pgid, st, comm = line:match('^%s*(%d+)%s+(%d+)%s+(%d+)%s+(%S+)%s+(.*)$')
      if pid and not st:find('Z', 1, true) then
        out[#out + 1] = { pid = tonumber(pid), ppid = tonumber(ppid), pgid = tonumber(pgid), comm = comm }
      end
    end
    if ps then
      ps:close()
    end
  end
  return out
end

--- Pids of our descendants (and, on macOS, of our process group), the
--- kept ones and theirs left out.
local function descendants()
  local all = processes()
  local known, list = { [me] = true }, {}
  local grew = true
  while grew do
    grew = false
    for _, p in ipairs(all) do
      local ours = known[p.ppid] or (not linux and p.pgid == me)
      if ours and not known[p.pid] and p.pid ~= me then
        known[p.pid] = true
        grew = true
        if kept(p.pid, p.comm) then
          -- Neither it nor its descendants.
          known[p.pid] = 'kept'
        else
          list[#list + 1] = p.pid
        end
      end
    end
    -- A kept process's children are not ours to end.
    for _, p in ipairs(all) do
      if known[p.ppid] == 'kept' and not known[p.pid] then
        known[p.pid] = 'kept'
        grew = true
      end
    end
  end
  return list
end

local login, status -- the login's pid, and its wait status once reaped

local function reap()
  local st = ffi.new('int[1]')
  while true do
    local pid = ffi.C.waitpid(-1, st, WNOHANG)
    if pid <= 0 then
      return
    end
    if pid == login then
      status = st[0]
    end
  end
end

--- SIGTERM to every descendant, SIGKILL after GRACE_MS to what is left.
local function end_tree()
  local t0 = uv.hrtime()
  local signalled = {}
  while true do
    reap()
    local left = descendants()
    if #left == 0 then
      return
    end
    local late = (uv.hrtime() - t0) / 1e6 >= GRACE_MS
    for _, pid in ipairs(left) do
      if late then
        ffi.C.kill(pid, SIG.KILL)
      elseif not signalled[pid] then
        signalled[pid] = true
        ffi.C.kill(pid, SIG.TERM)
      end
    end
    if late then
      sleep_ms(10)
      reap()
      return
    end
    sleep_ms(10)
  end
end

local function exit_code()
  if not status then
    return 129
  end
  local sig = bit.band(status, 0x7f)
  if sig == 0 then
    return bit.band(bit.rshift(status, 8), 0xff)
  end
  return 128 + sig
end

if orphaned() then
  ffi.C._exit(129)
end

local handle, err = uv.spawn(cmd[1], {
  args = { unpack(cmd, 2) },
  stdio = { 0, 1, 2 },
}, function() end)
if not handle then
  io.stderr:write(('cannot run %s: %s\n'):format(cmd[1], tostring(err)))
  ffi.C._exit(127)
end
login = handle:get_pid()

-- Wait for the login's exit or a stop signal.
local got = ffi.new('acp_sigset')
local timeout = ffi.new('struct acp_timespec', { 0, 100 * 1000000 })
local signo = ffi.new('int[1]')
while true do
  local sig = 0
  if linux then
    sig = ffi.C.sigtimedwait(stops, nil, timeout)
  else
    ffi.C.sigpending(got)
    for _, s in ipairs({ SIG.TERM, SIG.HUP, SIG.QUIT, SIG.CHLD, SIG.INT }) do
      if ffi.C.sigismember(got, s) == 1 then
        local one = ffi.new('acp_sigset')
        ffi.C.sigemptyset(one)
        ffi.C.sigaddset(one, s)
        ffi.C.sigwait(one, signo)
        sig = s
        break
      end
    end
    if sig == 0 then
      sleep_ms(100)
    end
  end
  reap()
  if status or sig == SIG.TERM or sig == SIG.HUP or sig == SIG.QUIT or orphaned() then
    break
  end
  -- SIGINT (Ctrl-C) reached the login too: it decides.
end

end_tree()
ffi.C._exit(exit_code())
