--- Agents from the ACP registry (https://github.com/agentclientprotocol/registry):
--- the registry in use (the snapshot `acp.registry` reads, or
--- `install.registry`), its entries as agent presets, and
--- `:AcpInstall` / `:AcpUpdate`, which install an agent into a prefix of
--- its own under stdpath('data') (`install.dir`):
--- - `npx` entries: `npm install --prefix <dir>` at the pinned version;
--- - `uvx` entries: a venv (uv when present, else `python3 -m venv` + pip);
--- - `binary` entries: the platform's archive, downloaded with curl, its
---   `sha256` checked when the entry gives one, then extracted.
--- Every step runs in the background; a notification line shows progress.
local M = {}

local uv = vim.uv or vim.loop

local function config()
  return require('acp.config').options.install
end

local registry = require('acp.registry')

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

local read_json = registry.read_json

--- The registry in use: `install.registry` (a path) or the snapshot.
---@param path? string A registry file (default: `install.registry`, else the snapshot).
function M.registry(path)
  return registry.read(path or config().registry)
end

--- The registry entry `id` (see `acp.registry`).
---@param id string
---@return acp.RegistryEntry?
---@param path? string A registry file (default: `install.registry`, else the snapshot).
function M.entry(id, path)
  return registry.entry(id, path or config().registry)
end

--- The platform key of binary distributions (`linux-x86_64`, ...).
function M.platform()
  local os_name = (jit and jit.os or ''):lower()
  os_name = ({ osx = 'darwin', linux = 'linux', windows = 'windows' })[os_name] or os_name
  local arch = (jit and jit.arch or ''):lower()
  arch = ({ x64 = 'x86_64', arm64 = 'aarch64' })[arch] or arch
  return os_name .. '-' .. arch
end

--- How this plugin installs `entry` here: 'npx', 'uvx', 'binary' or nil.
function M.method(entry)
  local d = entry.distribution or {}
  if d.binary and d.binary[M.platform()] then
    return 'binary'
  elseif d.npx then
    return 'npx'
  elseif d.uvx then
    return 'uvx'
  end
end

--- `@scope/name@1.2.3` -> `@scope/name`, `1.2.3`.
function M.split_package(spec)
  local name, version = spec:match('^(@?[^@]+)@(.+)$')
  return name or spec, version
end

function M.dir(id)
  return vim.fs.normalize(config().dir) .. '/' .. id
end

--- The installed agent `id`: { id, version, method, cmd, args, env }, or nil.
function M.installed(id)
  local info = read_json(M.dir(id) .. '/acp-install.json')
  if info and info.cmd and uv.fs_stat(info.cmd) then
    return info
  end
end

--- Every installed agent, sorted by id.
function M.list_installed()
  local out = {}
  local dir = vim.fs.normalize(config().dir)
  for name, kind in vim.fs.dir(dir) do
    if kind == 'directory' then
      local info = M.installed(name)
      if info then
        out[#out + 1] = info
      end
    end
  end
  table.sort(out, function(a, b)
    return a.id < b.id
  end)
  return out
end

--- Agent presets of the registry entries (`agents` config), by id: the
--- installed command when installed, else `cmd = false` with the hint.
function M.presets()
  local out = {}
  for _, e in ipairs(M.registry().agents or {}) do
    if type(e.id) == 'string' and M.method(e) then
      out[e.id] = { registry = e.id }
    end
  end
  return out
end

--- The command of an installed registry agent, or nil and the message.
function M.command(id)
  local info = M.installed(id)
  if info then
    return { cmd = info.cmd, args = info.args or {}, env = info.env or {} }
  end
  return nil, ('acp.nvim: agent `%s` is not installed: run :AcpInstall %s'):format(id, id)
end

-- Installing --------------------------------------------------------------------

local running = {}

local function note(job, msg, level)
  local ok, rec = pcall(notify, msg, level or vim.log.levels.INFO, { id = 'acp.install.' .. job.id, title = 'acp.nvim', replace = job.note })
  if ok and (type(rec) == 'table' or type(rec) == 'number') then
    job.note = rec
  end
end

--- Runs `argv` (in the background), appending its output to the job's log;
--- then `next(ok)` on the main loop.
local function step(job, what, argv, opts, next)
  note(job, ('acp.nvim: installing %s: %s'):format(job.id, what))
  job.log:write(('$ %s\n'):format(table.concat(argv, ' ')))
  job.log:flush()
  local function out(_, data)
    if data then
      job.log:write(data)
      job.log:flush()
    end
  end
  local ok, err = pcall(vim.system, argv, vim.tbl_extend('force', { stdout = out, stderr = out }, opts or {}), function(res)
    job.log:write(('exit code %d\n'):format(res.code))
    vim.schedule(function()
      next(res.code == 0, ('`%s` failed (exit %d)'):format(argv[1], res.code))
    end)
  end)
  if not ok then
    next(false, tostring(err))
  end
end

--- `v` with the paths under `from` moved under `to` (strings, lists, maps).
local function relocate(v, from, to)
  if type(v) == 'string' then
    return v:sub(1, #from + 1) == from .. '/' and to .. v:sub(#from + 1) or v
  elseif type(v) == 'table' then
    local out = {}
    for k, x in pairs(v) do
      out[k] = relocate(x, from, to)
    end
    return out
  end
  return v
end

--- Puts the finished install (`job.dir`, a sibling folder) in place of the
--- agent's prefix; the old one is removed only once the new one is there.
local function swap_in(job)
  local old = vim.fs.dirname(job.final) .. '/.' .. job.id .. '.old'
  vim.fn.delete(old, 'rf')
  local had = uv.fs_stat(job.final) ~= nil
  if had and not uv.fs_rename(job.final, old) then
    return false, 'cannot move the old install aside'
  end
  local ok, err = uv.fs_rename(job.dir, job.final)
  if not ok then
    if had then
      uv.fs_rename(old, job.final)
    end
    return false, 'cannot move the new install into place: ' .. tostring(err)
  end
  vim.fn.delete(old, 'rf')
  job.dir, job.log_path = job.final, job.final .. '/install.log'
  return true
end

local function finish(job, ok, why)
  running[job.id] = nil
  if ok then
    -- Written with the paths it will have once swapped in.
    job.result = relocate(job.result, job.dir, job.final)
    local f = assert(io.open(job.dir .. '/acp-install.json', 'w'))
    f:write(vim.json.encode(job.result))
    f:close()
    ok, why = swap_in(job)
  end
  job.done, job.ok = true, ok
  if ok then
    job.message = ('acp.nvim: installed %s %s (:AcpChat %s)'):format(job.id, job.result.version, job.id)
  elseif job.previous then
    job.message = ('acp.nvim: updating %s failed: %s; %s %s is kept; log: %s'):format(job.id, why or '?', job.id, job.previous, job.log_path)
  else
    job.message = ('acp.nvim: installing %s failed: %s; log: %s'):format(job.id, why or '?', job.log_path)
  end
  job.log:write(job.message .. '\n')
  job.log:close()
  note(job, job.message, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
  if job.on_done then
    job.on_done(ok)
  end
end

--- `rel`, a path from a registry entry, under `dir`; or nil and why. An
--- absolute path or a `..` component would reach outside the agent's
--- install folder (a `cmd` of `../../x` replaced and chmodded a file
--- there), so both are refused.
local function inside(dir, rel, what)
  if type(rel) ~= 'string' or rel == '' then
    return nil, ("the entry's %s is missing"):format(what)
  end
  if rel:find('[%z\1-\31\127\\]') then
    return nil, ("the entry's %s (%s) holds control characters or backslashes"):format(what, vim.fn.strtrans(rel))
  end
  local parts = {}
  for part in rel:gmatch('[^/]+') do
    if part == '..' then
      parts = nil
      break
    elseif part ~= '.' then
      parts[#parts + 1] = part
    end
  end
  if rel:sub(1, 1) == '/' or rel:sub(1, 1) == '~' or not parts then
    return nil, ("the entry's %s (%s) leaves the install folder (an absolute path or `..`)"):format(what, rel)
  end
  if #parts == 0 then
    return nil, ("the entry's %s (%s) names no file"):format(what, rel)
  end
  return dir .. '/' .. table.concat(parts, '/')
end

--- True when the real path of `path` is inside the real path of `dir`
--- (a symlink from an archive that leads out is not).
local function really_inside(dir, path)
  local real, root = uv.fs_realpath(path), uv.fs_realpath(dir)
  return real ~= nil and root ~= nil and real:sub(1, #root + 1) == root .. '/'
end

local function npm_bin(dir, name, bin)
  local pkg_dir = dir .. '/node_modules/' .. name
  local pkg = read_json(pkg_dir .. '/package.json') or {}
  if bin and bin:find('/') then
    local script, why = inside(pkg_dir, bin, 'bin')
    if not script then
      return nil, why
    end
    return { cmd = vim.fn.exepath('node'), args = { script } }
  end
  local bins = pkg.bin
  if type(bins) == 'string' then
    bins = { [name:match('[^/]+$')] = bins }
  end
  local pick = bin or name:match('[^/]+$')
  if type(bins) == 'table' and not bins[pick] then
    local names = vim.tbl_keys(bins)
    pick = #names == 1 and names[1] or pick
  end
  local cmd, why = inside(dir .. '/node_modules/.bin', pick, 'bin')
  if not cmd then
    return nil, why
  end
  if type(bins) == 'table' and bins[pick] and uv.fs_stat(cmd) then
    return { cmd = cmd, args = {} }
  end
end

local installers = {}

function installers.npx(job, entry)
  local d = entry.distribution.npx
  local name, version = M.split_package(d.package)
  if vim.fn.executable('npm') ~= 1 then
    return finish(job, false, 'npm is not in PATH (install Node.js)')
  end
  local source = config().sources[name]
  local specs = type(source) == 'table' and vim.deepcopy(source) or { source or (name .. '@' .. (version or entry.version)) }
  local argv = { 'npm', 'install', '--prefix', job.dir, '--save-exact', '--no-audit', '--no-fund', '--no-update-notifier', '--loglevel=error' }
  vim.list_extend(argv, specs)
  step(job, 'npm install ' .. name .. '@' .. (version or entry.version), argv, { stdin = false }, function(ok, why)
    if not ok then
      return finish(job, false, why)
    end
    local run, bad = npm_bin(job.dir, name, d.bin)
    if not run then
      return finish(job, false, bad or ('%s has no command to run (package.json `bin`)'):format(name))
    end
    vim.list_extend(run.args, d.args or {})
    job.result = { id = entry.id, version = entry.version, method = 'npx', package = d.package, cmd = run.cmd, args = run.args, env = d.env or {} }
    finish(job, true)
  end)
end

function installers.uvx(job, entry)
  local d = entry.distribution.uvx
  local name, version = M.split_package(d.package)
  local spec = name .. '==' .. (version or entry.version)
  local venv = job.dir .. '/venv'
  local function installed(ok, why)
    if not ok then
      return finish(job, false, why)
    end
    local script, bad = inside(venv .. '/bin', d.bin or (name:gsub('%[.*$', '')), 'bin')
    if not script then
      return finish(job, false, bad)
    end
    if not uv.fs_stat(script) then
      return finish(job, false, 'the package installed no command ' .. script)
    end
    -- A script's #! line names the venv where it was installed, a folder
    -- that is moved once the install succeeds: the venv's python runs it.
    local cmd, args = script, vim.deepcopy(d.args or {})
    local f = io.open(script, 'rb')
    local head = f and f:read(2)
    if f then
      f:close()
    end
    if head == '#!' then
      cmd = venv .. '/bin/python'
      table.insert(args, 1, script)
    end
    job.result = { id = entry.id, version = entry.version, method = 'uvx', package = d.package, cmd = cmd, args = args, env = d.env or {} }
    finish(job, true)
  end
  if vim.fn.executable('uv') == 1 then
    step(job, 'uv venv', { 'uv', 'venv', '--quiet', venv }, nil, function(ok, why)
      if not ok then
        return finish(job, false, why)
      end
      step(job, 'uv pip install ' .. spec, { 'uv', 'pip', 'install', '--python', venv .. '/bin/python', spec }, nil, installed)
    end)
  elseif vim.fn.executable('python3') == 1 then
    step(job, 'python3 -m venv', { 'python3', '-m', 'venv', venv }, nil, function(ok, why)
      if not ok then
        return finish(job, false, why)
      end
      step(job, 'pip install ' .. spec, { venv .. '/bin/pip', 'install', '--disable-pip-version-check', spec }, nil, installed)
    end)
  else
    finish(job, false, 'neither uv nor python3 is in PATH')
  end
end

function installers.binary(job, entry)
  local target = entry.distribution.binary[M.platform()]
  local url = target.archive
  if type(url) ~= 'string' or url == '' then
    return finish(job, false, "the entry's archive is missing")
  end
  -- Every path the entry names stays inside the install folder.
  local file, bad = inside(job.dir, url:match('[^/]+$') or 'archive', 'archive name')
  if not file then
    return finish(job, false, bad)
  end
  local cmd
  cmd, bad = inside(job.dir, target.cmd, 'cmd')
  if not cmd then
    return finish(job, false, bad)
  end
  local function extract()
    local argv
    if file:match('%.zip$') then
      argv = { 'unzip', '-o', '-q', file, '-d', job.dir }
    elseif file:match('%.tar%.[gbx]z2?$') or file:match('%.tgz$') or file:match('%.tar$') then
      argv = { 'tar', '-xf', file, '-C', job.dir }
    end
    local function done(ok, why)
      if not ok then
        return finish(job, false, why)
      end
      local st = uv.fs_stat(cmd)
      if not st then
        return finish(job, false, 'the archive has no ' .. target.cmd)
      end
      -- A symlink in the archive may lead out of the folder: never chmod there.
      if st.type ~= 'file' or not really_inside(job.dir, cmd) then
        return finish(job, false, ("the entry's cmd (%s) is not a file inside the install folder"):format(target.cmd))
      end
      uv.fs_chmod(cmd, tonumber('755', 8))
      job.result = { id = entry.id, version = entry.version, method = 'binary', archive = url, cmd = cmd, args = target.args or {}, env = target.env or {} }
      finish(job, true)
    end
    if argv then
      step(job, 'extracting', argv, nil, done)
    else
      -- A bare executable.
      vim.fn.mkdir(vim.fs.dirname(cmd), 'p')
      uv.fs_rename(file, cmd)
      done(true)
    end
  end
  local function downloaded(ok, why)
    if not ok then
      return finish(job, false, why)
    end
    if not target.sha256 then
      return extract()
    end
    -- Off the main loop: archives can be large.
    local tool = vim.fn.executable('sha256sum') == 1 and { 'sha256sum', file }
      or vim.fn.executable('shasum') == 1 and { 'shasum', '-a', '256', file }
    if not tool then
      return finish(job, false, 'the entry has a sha256 but neither sha256sum nor shasum is in PATH')
    end
    vim.system(tool, { text = true }, function(res)
      vim.schedule(function()
        local sum = (res.stdout or ''):match('^(%x+)')
        if res.code ~= 0 or not sum then
          return finish(job, false, 'cannot compute the checksum of ' .. file)
        elseif sum:lower() ~= target.sha256:lower() then
          return finish(job, false, ('checksum mismatch for %s (expected %s, got %s)'):format(url, target.sha256, sum))
        end
        job.log:write(('sha256 %s: ok\n'):format(sum))
        extract()
      end)
    end)
  end
  if url:match('^file://') then
    return step(job, 'copying', { 'cp', url:sub(8), file }, nil, downloaded)
  end
  if vim.fn.executable('curl') ~= 1 then
    return finish(job, false, 'curl is not in PATH')
  end
  step(job, 'downloading ' .. url, { 'curl', '-fsSL', '--retry', '2', '-o', file, url }, nil, downloaded)
end

--- A running or finished install.
---@class acp.InstallJob
---@field id string
---@field done boolean
---@field ok? boolean
---@field message? string
---@field log_path string
local Job = {}
Job.__index = Job

--- Waits (processing events) until the install ends; returns ok.
function Job:wait(timeout_ms)
  vim.wait(timeout_ms or 10 * 60 * 1000, function()
    return self.done
  end, 50)
  return self.done and self.ok or nil
end

--- Installs (or reinstalls at the snapshot's version) the registry agent
--- `id` in the background. Returns the job, or nil after telling the user.
---@param id string
---@param on_done? fun(ok: boolean)
---@return acp.InstallJob?
function M.install(id, on_done)
  local entry = M.entry(id)
  if not entry then
    notify(('acp.nvim: %q is not in the ACP registry snapshot (:AcpInstall lists it)'):format(tostring(id)), vim.log.levels.ERROR)
    return nil
  end
  if running[id] then
    notify(('acp.nvim: %s is already being installed'):format(id), vim.log.levels.WARN)
    return running[id]
  end
  -- The id names the install folder: no `/`, no `..`.
  if type(entry.id) ~= 'string' or not entry.id:match('^[%w][%w._-]*$') then
    notify(('acp.nvim: registry id %q cannot name an install folder (letters, digits, `.`, `_`, `-`)'):format(tostring(entry.id)), vim.log.levels.ERROR)
    return nil
  end
  local method = M.method(entry)
  if not method then
    notify(('acp.nvim: %s has no distribution for %s'):format(id, M.platform()), vim.log.levels.ERROR)
    return nil
  end
  -- Into a fresh sibling folder, swapped in for the agent's prefix only when
  -- it succeeds: a failed reinstall (:AcpUpdate) keeps the installed agent.
  -- Its name is no registry id (a leading dot), so it is never listed.
  local final = M.dir(id)
  local dir = vim.fs.dirname(final) .. '/.' .. id .. '.new'
  vim.fn.delete(dir, 'rf')
  vim.fn.mkdir(dir, 'p')
  local log_path = dir .. '/install.log'
  local previous = M.installed(id)
  local job = setmetatable({ id = id, dir = dir, final = final, previous = previous and previous.version,
    done = false, log_path = log_path, on_done = on_done }, Job)
  job.log = assert(io.open(log_path, 'w'))
  running[id] = job
  installers[method](job, entry)
  return job
end

--- `:AcpUpdate [id]`: installed agents whose version differs from the
--- snapshot's are installed again at the snapshot's version.
function M.update(id)
  local jobs = {}
  if id and id ~= '' and not M.installed(id) then
    notify(('acp.nvim: %s is not installed: nothing to update (:AcpInstall %s)'):format(id, id), vim.log.levels.WARN)
    return jobs
  end
  for _, info in ipairs(M.list_installed()) do
    if not id or id == '' or info.id == id then
      local e = M.entry(info.id)
      if e and e.version ~= info.version then
        jobs[#jobs + 1] = M.install(info.id)
      elseif e and id == info.id then
        notify(('acp.nvim: %s %s is the snapshot\'s version'):format(info.id, info.version))
      end
    end
  end
  if #jobs == 0 and (not id or id == '') then
    notify('acp.nvim: every installed agent is at the snapshot\'s version')
  end
  return jobs
end

--- What the registry in use is, for notices: the user's file, the fetched
--- copy or the snapshot, with its date when it has one.
local function registry_name()
  if config().registry then
    return 'the registry file ' .. config().registry
  end
  local reg = M.registry()
  local date = reg.snapshot and (' of ' .. reg.snapshot) or ''
  return (reg == registry.read(registry.snapshot) and 'the shipped snapshot' or 'the copy fetched before') .. date
end

local refreshing

--- A notice that fits the command line (`v:echospace`): it comes right
--- before the picker, and a longer one stops at a hit-enter prompt there.
local function one_line(msg, level)
  require('acp.util.escape').notice(msg, level)
end

--- `msg` in the log (`:AcpLog`), when the core runs; whether it went there.
local function logged(level, msg)
  local core = require('acp.core')
  return core.is_loaded() and pcall(core.log, level, msg) or false
end

--- Fetches the registry at `install.registry_url` (curl in the background,
--- `install.registry_timeout_ms`) into stdpath('cache'), where it replaces
--- the snapshot; then `on_done(ok)` on the main loop. Without a URL, or
--- with a registry file of the user's (`install.registry`), nothing is
--- fetched. A failure is told and keeps the registry in use.
---@param on_done? fun(ok: boolean)
function M.refresh(on_done)
  on_done = on_done or function() end
  local url = config().registry_url
  if config().registry or not url then
    return on_done(false)
  end
  if refreshing then
    table.insert(refreshing, on_done)
    return
  end
  refreshing = { on_done }
  local function done(ok, why)
    if ok then
      registry.forget()
      local n = #(M.registry().agents or {})
      one_line(('acp.nvim: the ACP registry is refreshed: %d agents (%s)'):format(n, url))
    else
      -- One line (what is used, then why); the whole story in the log.
      local used = registry_name()
      local log = logged('warn', ('cannot refresh the ACP registry from %s: %s; %s is used'):format(url, why, used))
      local short = used:match('^the shipped snapshot') and 'the snapshot' or 'the fetched copy'
      one_line(('acp.nvim: registry not refreshed, %s is used%s: %s'):format(short, log and ' (:AcpLog)' or '', why), vim.log.levels.WARN)
    end
    local waiting = refreshing
    refreshing = nil
    for _, f in ipairs(waiting) do
      f(ok)
    end
  end
  if vim.fn.executable('curl') ~= 1 then
    return done(false, 'curl is not in PATH')
  end
  local target = registry.cached()
  vim.fn.mkdir(vim.fs.dirname(target), 'p')
  local tmp = ('%s.%d.part'):format(target, uv.os_getpid())
  local timeout = config().registry_timeout_ms
  local argv = { 'curl', '-fsSL', '--max-time', tostring(math.max(1, math.ceil(timeout / 1000))), '-o', tmp, '--', url }
  local ok, err = pcall(vim.system, argv, { text = true, stdin = false, timeout = timeout + 1000 }, function(res)
    vim.schedule(function()
      if res.code ~= 0 then
        os.remove(tmp)
        local msg = vim.trim(res.stderr or ''):gsub('\n.*', '')
        return done(false, res.code == 124 and 'timed out' or (msg ~= '' and msg or ('curl exit ' .. res.code)))
      end
      local bad = registry.invalid(read_json(tmp))
      if bad then
        os.remove(tmp)
        return done(false, 'what it serves is no registry (' .. bad .. ')')
      end
      local moved, why = uv.fs_rename(tmp, target)
      if not moved then
        os.remove(tmp)
        return done(false, 'cannot write ' .. target .. ': ' .. tostring(why))
      end
      done(true)
    end)
  end)
  if not ok then
    done(false, tostring(err))
  end
end

--- The registry id that `:AcpInstall name` means: `name` itself when the
--- registry has it, else the `registry` id of the agent preset `name`.
function M.resolve_id(name)
  if M.entry(name) then
    return name
  end
  local a = require('acp.config').options.agents[name]
  if type(a) == 'table' and type(a.registry) == 'string' and M.entry(a.registry) then
    return a.registry
  end
  return name
end

--- `:AcpInstall [id]`: refreshes the registry (`install.registry_url`),
--- then installs `id` (a registry id, or an agent preset's name such as
--- `claude`), or picks one: the presets' agents first.
function M.command_install(id)
  M.refresh(function()
    M.pick_or_install(id)
  end)
end

--- The preset names that run registry id `id` (`claude` for `claude-acp`).
local function presets_of(id)
  local out = {}
  for name, a in pairs(require('acp.config').options.agents) do
    if type(a) == 'table' and (a.registry == id or (name == id and not a.registry)) then
      out[#out + 1] = name
    end
  end
  table.sort(out)
  return out
end

function M.pick_or_install(id)
  if id and id ~= '' then
    return M.install(M.resolve_id(id))
  end
  local items = vim.tbl_filter(M.method, M.registry().agents or {})
  local rank = {}
  for i, e in ipairs(items) do
    rank[e] = (#presets_of(e.id) > 0 and 0 or 1e6) + i
  end
  table.sort(items, function(a, b)
    return rank[a] < rank[b]
  end)
  -- One screen line per row (the built-in picker puts "138: " before it):
  -- id · version · how · preset · installed · the description, cut.
  local width = math.max(20, vim.o.columns - #tostring(#items) - 3)
  require('acp.util.escape').select(items, {
    prompt = 'Install an agent',
    format_item = function(e)
      local inst = M.installed(e.id)
      local names = presets_of(e.id)
      local parts = { e.id, e.version, M.method(e) }
      if #names > 0 then
        parts[#parts + 1] = 'agent ' .. table.concat(names, ', ')
      end
      if inst then
        parts[#parts + 1] = 'installed ' .. inst.version
      end
      if e.description and e.description ~= '' then
        parts[#parts + 1] = e.description
      end
      return require('acp.util.escape').line(table.concat(vim.tbl_map(tostring, parts), ' · '), width)
    end,
  }, function(e)
    if e then
      M.install(e.id)
    end
  end)
end

--- Completion of registry ids.
function M.complete(lead)
  local out = {}
  for _, e in ipairs(M.registry().agents or {}) do
    if vim.startswith(e.id, lead or '') and M.method(e) then
      out[#out + 1] = e.id
    end
  end
  table.sort(out)
  return out
end

return M
