--- Finds, checks and loads the Rust core (`libacp_core.so`), and builds it.
--- Loading happens on first use, never at startup.
local M = {}

local uv = vim.uv or vim.loop

--- The plugin's root directory (the one holding Cargo.toml).
function M.root()
  local src = debug.getinfo(1, 'S').source:sub(2)
  return vim.fn.fnamemodify(src, ':p:h:h:h')
end

local function lib_name()
  if jit and jit.os == 'OSX' then
    return 'libacp_core.dylib'
  elseif jit and jit.os == 'Windows' then
    return 'acp_core.dll'
  end
  return 'libacp_core.so'
end

--- Candidate library paths: release build first, then debug.
function M.candidates()
  local root = M.root()
  return {
    root .. '/target/release/' .. lib_name(),
    root .. '/target/debug/' .. lib_name(),
  }
end

M.build_log = vim.fn.stdpath('log') .. '/acp-build.log'

local function build_hint()
  return ('run :AcpBuild (or `cargo build --release` in %s)'):format(M.root())
end

--- The same hash the build script stamps into the library: sha256 over
--- "<relpath>\n<len>\n<content>" of Cargo.toml, Cargo.lock, build.rs and
--- src/**/*.rs, sorted by path.
function M.source_stamp()
  local root = M.root()
  local files = {}
  for _, f in ipairs({ 'Cargo.toml', 'Cargo.lock', 'build.rs' }) do
    if uv.fs_stat(root .. '/' .. f) then
      files[#files + 1] = f
    end
  end
  for _, f in ipairs(vim.fn.globpath(root, 'src/**/*.rs', false, true)) do
    files[#files + 1] = f:sub(#root + 2)
  end
  table.sort(files)
  local parts = {}
  for _, f in ipairs(files) do
    local fd = assert(io.open(root .. '/' .. f, 'rb'))
    local content = fd:read('*a')
    fd:close()
    parts[#parts + 1] = ('%s\n%d\n%s'):format(f, #content, content)
  end
  return vim.fn.sha256(table.concat(parts))
end

local loaded, load_error

--- Loads the core, or returns nil and a message for the user that names the
--- build command. Never raises.
function M.load()
  if loaded then
    return loaded
  end
  if load_error then
    return nil, load_error
  end
  local path
  for _, p in ipairs(M.candidates()) do
    if uv.fs_stat(p) then
      path = p
      break
    end
  end
  if not path then
    return nil, 'acp.nvim: the Rust core is not built; ' .. build_hint()
  end
  local opener, err = package.loadlib(path, 'luaopen_acp_core')
  if not opener then
    load_error = ('acp.nvim: cannot load %s (%s); %s'):format(path, err, build_hint())
    return nil, load_error
  end
  local ok, res = pcall(opener)
  if not ok or not package.loaded.acp_core then
    load_error = ('acp.nvim: the core failed to initialise (%s); %s'):format(tostring(res), build_hint())
    return nil, load_error
  end
  local core = package.loaded.acp_core
  local want = M.source_stamp()
  if core.source_stamp() ~= want then
    -- A library can't be unloaded from the process, so a stale one stays
    -- refused until Neovim restarts after a rebuild.
    load_error = ('acp.nvim: the core at %s was built from other sources; %s, then restart Neovim'):format(
      path,
      build_hint()
    )
    return nil, load_error
  end
  loaded = core
  return core
end

--- Like load(), but reports a failure with vim.notify and returns nil.
function M.get()
  local core, err = M.load()
  if not core then
    vim.notify(err, vim.log.levels.ERROR)
  end
  return core
end

local building

--- Runs `cargo build --release` asynchronously; output goes to the build log.
--- `on_done(ok)` is called on the main loop when it ends.
function M.build(on_done)
  if building then
    vim.notify('acp.nvim: a build is already running (:AcpLog build)', vim.log.levels.WARN)
    return
  end
  vim.fn.mkdir(vim.fn.fnamemodify(M.build_log, ':h'), 'p')
  local log = assert(io.open(M.build_log, 'w'))
  log:write(('$ cargo build --release  (in %s)\n'):format(M.root()))
  local function write(_, data)
    if data then
      log:write(data)
      log:flush()
    end
  end
  if vim.fn.executable('cargo') ~= 1 then
    log:write('cargo was not found in PATH\n')
    log:close()
    vim.notify('acp.nvim: building needs cargo (Rust); it is not in PATH', vim.log.levels.ERROR)
    if on_done then
      on_done(false)
    end
    return
  end
  building = true
  vim.notify('acp.nvim: building the core (:AcpLog build to follow)')
  local ok, err = pcall(vim.system, { 'cargo', 'build', '--release' }, {
    cwd = M.root(),
    stdout = write,
    stderr = write,
  }, function(res)
    building = false
    log:write(('\nexit code %d\n'):format(res.code))
    log:close()
    vim.schedule(function()
      if res.code == 0 then
        vim.notify('acp.nvim: core built')
      else
        vim.notify(('acp.nvim: build failed (exit %d), see :AcpLog build'):format(res.code), vim.log.levels.ERROR)
      end
      if on_done then
        on_done(res.code == 0)
      end
    end)
  end)
  if not ok then
    building = false
    log:write(tostring(err) .. '\n')
    log:close()
    vim.notify('acp.nvim: cannot start cargo: ' .. tostring(err), vim.log.levels.ERROR)
  end
end

return M
