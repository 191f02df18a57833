--- The one door to the Rust core (`libacp_core.so`): finds, checks, loads
--- and builds it, and forwards every call of the rest of the plugin to it.
--- No other module touches the native module (tests/test_contract.lua
--- checks that). Loading happens on first use, never at startup; a missing
--- or stale core gives one message naming :AcpBuild. The native functions
--- and the events the core sends are declared in `lua/acp/types.lua`.
---@class acp.core
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
--- build command. Never raises. Returns the native module itself: only the
--- health check and the forwarders below use it.
---@return acp.Native? core
---@return string? err
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

--- Like load(), but reports a failure with vim.notify and returns nil; on
--- success the facade itself (this module).
---@return acp.core?
function M.get()
  local core, err = M.load()
  if not core then
    vim.notify(err, vim.log.levels.ERROR)
    return nil
  end
  return M
end

--- True once the core is loaded (and current); never tries to load it.
---@return boolean
function M.is_loaded()
  return loaded ~= nil
end

local building

--- Runs `cargo build --release` asynchronously; output goes to the build log.
--- `on_done(ok)` is called on the main loop when it ends.
--- Generates doc/tags, so that `:help acp` works in a clone (plugin
--- managers do this themselves; `build()`, `make build` and `make demo`
--- do it here). Returns true when it worked.
function M.helptags()
  local doc = M.root() .. '/doc'
  return (pcall(vim.cmd.helptags, vim.fn.fnameescape(doc)))
end

function M.build(on_done)
  M.helptags()
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
    vim.notify('acp.nvim: cannot start cargo: ' .. require('acp.text').error(err), vim.log.levels.ERROR)
  end
end

-- The native functions ---------------------------------------------------------
-- Each forwards to the native function of the same name (declared with its
-- arguments in `acp.Native`, lua/acp/types.lua), loading the core on first
-- use; a core that cannot be loaded raises the load message (:AcpBuild).

---@return acp.Native
local function native()
  local core, err = M.load()
  if not core then
    error(err, 0)
  end
  return core
end

local function forward(name)
  return function(...)
    return native()[name](...)
  end
end

--- Starts the core: its log, the dispatcher of drained batches, the wake-up.
---@type fun(opts: acp.InitOpts)
M.init = forward('init')
--- The stamp the library was built with (`M.source_stamp()` is the one of
--- the sources on disk; `load()` refuses a library whose stamp differs).
---@type fun(): string
M.built_stamp = forward('source_stamp')
---@type fun(): string
M.version = forward('version')
---@type fun(): string?
M.log_path = forward('log_path')
M.log = forward('log')
M.notice = forward('notice')
M.disk_edit = forward('disk_edit')
M.accept_changes = forward('accept_changes')

-- Chats.
---@type fun(spec: acp.AgentSpec): integer
M.open_thread = forward('open_thread')
---@type fun(thread: integer, prompt: string|acp.ContentBlock[])
M.prompt = forward('prompt')
---@type fun(thread: integer, method_id: string)
M.authenticate = forward('authenticate')
---@type fun(thread: integer): acp.AuthMethod[]
M.auth_methods = forward('auth_methods')
---@type fun(thread: integer, mode_id: string)
M.set_mode = forward('set_mode')
--- True when a running turn was cancelled.
---@type fun(thread: integer): boolean
M.cancel = forward('cancel')
--- Answers a `permission` event: an option id, or nil for "cancelled".
---@type fun(thread: integer, request: integer, option_id: string?)
M.answer_permission = forward('answer_permission')
---@type fun(thread: integer)
M.close_thread = forward('close_thread')
---@type fun(thread: integer): string
M.markdown = forward('markdown')
---@type fun(thread: integer): acp.ThreadInfo
M.thread_info = forward('thread_info')
---@type fun(thread: integer, index: integer): acp.Entry?
M.entry = forward('entry')
---@type fun(thread: integer): table<string, acp.PermissionOptionKind>
M.decisions = forward('decisions')
---@type fun(thread: integer)
M.forget_decisions = forward('forget_decisions')
---@type fun(thread: integer): acp.WriteRecord[]
M.writes = forward('writes')
---@type fun(thread: integer): string[]
M.roots = forward('roots')
---@type fun(): integer[]
M.agent_pids = forward('agent_pids')

-- Files under a root (`@` completion): the answer is a `files` event.
---@type fun(root: string, max: integer?, request: integer)
M.list_files = forward('list_files')
---@type fun(root: string, query: string, limit: integer?): string[]?
M.match_files = forward('match_files')

-- Answers to `call` events (main-thread services).
---@type fun(call: integer, text: string)
M.call_part = forward('call_part')
---@type fun(call: integer, value: acp.Reply?)
M.call_done = forward('call_done')
---@type fun(call: integer, message: string)
M.call_fail = forward('call_fail')

-- Client terminals (jobs run by lua/acp/terminal.lua).
---@type fun(thread: integer, terminal: string, data: string)
M.terminal_output = forward('terminal_output')
---@type fun(thread: integer, terminal: string, code: integer)
M.terminal_exit = forward('terminal_exit')
---@type fun(thread: integer, terminal: string): acp.TerminalText?
M.terminal_text = forward('terminal_text')
M.watch_terminal = forward('watch_terminal')

--- Three-way merge of line lists: the merged lines, or nil and the 1-based
--- { first, last } lines of `base` that both sides changed.
---@type fun(base: string[], ours: string[], theirs: string[]): string[]?, integer[]?
M.merge3 = forward('merge3')
---@type fun(): acp.BridgeStats
M.stats = forward('stats')
--- Ends every agent and the runtime (bounded: under a second).
---@type fun()
M.shutdown = forward('shutdown')

return M
