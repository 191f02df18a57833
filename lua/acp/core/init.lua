--- The core layer: the Rust core as the rest of the plugin sees it. This
--- file is the facade; build.lua builds the library with cargo,
--- dispatch.lua takes each drained batch of events on the main thread and
--- routes it, types.lua declares the contract (every event, main-thread
--- call and native function).
-- May use: util, events.
---
--- The facade is the one door to the Rust core (`libacp_core.so`): it
--- finds, checks and loads it, and forwards every call of the rest of the
--- plugin to it. No other module touches the native module (tests/test_contract.lua
--- checks that). Loading happens on first use, never at startup; a missing
--- or stale core gives one message naming :AcpBuild. The native functions
--- and the events the core sends are declared in `lua/acp/core/types.lua`.
---@class acp.core
local M = {}

local uv = vim.uv or vim.loop

--- The plugin's root directory (the one holding Cargo.toml).
function M.root()
  local src = debug.getinfo(1, 'S').source:sub(2)
  return vim.fn.fnamemodify(src, ':p:h:h:h:h')
end

--- The plugin's version; the library must have been built for it.
M.VERSION = '0.1.0'

local function lib_name()
  if jit and jit.os == 'OSX' then
    return 'libacp_core.dylib'
  elseif jit and jit.os == 'Windows' then
    return 'acp_core.dll'
  end
  return 'libacp_core.so'
end

local function read_file(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

local function absolute(path, base)
  path = require('acp.util.escape').home(path)
  if path:sub(1, 1) ~= '/' then
    path = base .. '/' .. path
  end
  return vim.fs.normalize(path)
end

--- `target-dir` of a cargo config file (`[build] target-dir = "..."` or
--- `build.target-dir = "..."`), made absolute against the directory that
--- holds `.cargo`.
local function config_target_dir(file)
  local text = read_file(file)
  if not text then
    return nil
  end
  local section = ''
  for line in text:gmatch('[^\n]+') do
    line = line:gsub('^%s+', '')
    local name = line:match('^%[%s*([%w%.%-_]+)%s*%]')
    if name then
      section = name
    else
      local key, value = line:match('^([%w%.%-_]+)%s*=%s*["\']([^"\']+)["\']')
      if (section == 'build' and key == 'target-dir') or (section == '' and key == 'build.target-dir') then
        return absolute(value, vim.fn.fnamemodify(file, ':h:h'))
      end
    end
  end
end

--- Where cargo puts its output for this checkout, as cargo decides it:
--- `CARGO_TARGET_DIR`, else `build.target-dir` of the nearest cargo config
--- (the checkout and its parents, then `$CARGO_HOME`), else `<root>/target`.
---@return string
function M.target_dir()
  local root = M.root()
  local env = vim.env.CARGO_TARGET_DIR
  if env and env ~= '' then
    return absolute(env, root)
  end
  local dirs = { root }
  for dir in vim.fs.parents(root) do
    dirs[#dirs + 1] = dir
  end
  local files = {}
  for _, dir in ipairs(dirs) do
    files[#files + 1] = dir .. '/.cargo/config.toml'
    files[#files + 1] = dir .. '/.cargo/config'
  end
  local home = vim.env.CARGO_HOME
  home = (home and home ~= '') and home or (vim.env.HOME and (vim.env.HOME .. '/.cargo'))
  if home then
    files[#files + 1] = home .. '/config.toml'
    files[#files + 1] = home .. '/config'
  end
  for _, f in ipairs(files) do
    local dir = uv.fs_stat(f) and config_target_dir(f)
    if dir then
      return dir
    end
  end
  return root .. '/target'
end

--- Candidate library paths: release build first, then debug.
function M.candidates()
  local dir = M.target_dir()
  return { dir .. '/release/' .. lib_name(), dir .. '/debug/' .. lib_name() }
end

M.build_log = vim.fn.stdpath('log') .. '/acp-build.log'

local function build_hint()
  return ('run :AcpBuild (or `cargo build --release` in %s)'):format(M.root())
end

local function rebuild_hint()
  return ('rebuild with :AcpBuild (or `cargo build --release` in %s), then restart Neovim'):format(M.root())
end

--- The core's source files, relative to the root and sorted: Cargo.toml,
--- Cargo.lock, build.rs and src/**/*.rs.
function M.source_files()
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
  return files
end

--- The same hash the build script stamps into the library: sha256 over
--- "<relpath>\n<len>\n<content>" of the source files, sorted by path.
--- About 10 ms: computed only when the verification record below cannot
--- vouch for the library.
function M.source_stamp()
  local root = M.root()
  local parts = {}
  for _, f in ipairs(M.source_files()) do
    local content = assert(read_file(root .. '/' .. f))
    parts[#parts + 1] = ('%s\n%d\n%s'):format(f, #content, content)
  end
  return vim.fn.sha256(table.concat(parts))
end

--- What a verification vouches for: the library file and every source file
--- as they are on disk (path, size, modification time). Any edit, checkout
--- or rebuild changes it; computing it is a few dozen stats.
---@param lib string
---@return string?
function M.sources_key(lib)
  local root = M.root()
  local parts = {}
  for _, f in ipairs(vim.list_extend({ lib }, M.source_files())) do
    local st = uv.fs_stat(f:sub(1, 1) == '/' and f or root .. '/' .. f)
    if not st then
      return nil
    end
    parts[#parts + 1] = ('%s %d %d.%d'):format(f, st.size, st.mtime.sec, st.mtime.nsec)
  end
  return vim.fn.sha256(table.concat(parts, '\n'))
end

--- Where the record of the last successful verification of library `lib`
--- is kept (one small file per library path).
---@param lib string
function M.verified_record(lib)
  return ('%s/acp/verified-core-%s'):format(vim.fn.stdpath('cache'), vim.fn.sha256(lib):sub(1, 16))
end

local function write_record(path, text)
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local tmp = path .. '.' .. uv.os_getpid()
  local f = io.open(tmp, 'wb')
  if not f then
    return
  end
  f:write(text)
  f:close()
  uv.fs_rename(tmp, path)
end

--- Why the library `info` (its `build_info()`) does not fit this plugin,
--- or nil when it does. Cheap first: the version, then the record of the
--- last verification of library `lib` (it holds `sources_key(lib)`); the
--- sources are hashed only when that record cannot vouch for the library
--- (first load, a rebuild, any source edit or checkout) or when
--- `ACP_VERIFY_SOURCES` is set, and a match is recorded for next time.
--- (The library carries no git revision: a commit that leaves the sources
--- alone must not make cargo rebuild it.)
---@param info acp.BuildInfo
---@param lib? string The library's path.
---@return string?
function M.stale_reason(info, lib)
  if info.version ~= M.VERSION then
    return ('is version %s, the plugin is %s'):format(tostring(info.version), M.VERSION)
  end
  local verify = vim.env.ACP_VERIFY_SOURCES
  local trust = verify == nil or verify == '' or verify == '0'
  local key = lib and M.sources_key(lib)
  local record = key and (key .. ' ' .. tostring(info.source_stamp))
  if trust and record and read_file(M.verified_record(lib)) == record then
    return nil
  end
  if info.source_stamp ~= M.source_stamp() then
    return 'was built from other sources'
  end
  if record then
    pcall(write_record, M.verified_record(lib), record)
  end
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
  local info = core.build_info and core.build_info()
    or { version = core.version(), source_stamp = core.source_stamp() }
  local why = M.stale_reason(info, path)
  if why then
    -- A library can't be unloaded from the process, so a stale one stays
    -- refused until Neovim restarts after a rebuild.
    load_error = ('acp.nvim: the core at %s %s; %s'):format(path, why, rebuild_hint())
    return nil, load_error
  end
  M.path = path
  -- What the loaded file was: a build that replaces it needs a restart.
  M.loaded_stat = uv.fs_stat(path)
  loaded = core
  return core
end

--- Like load(), but reports a failure with vim.notify and returns nil; on
--- success the facade itself (this module).
---@return acp.core?
function M.get()
  local core, err = M.load()
  if not core then
    require('acp.util.escape').notify(err, vim.log.levels.ERROR)
    return nil
  end
  return M
end

--- True once the core is loaded (and current); never tries to load it.
---@return boolean
function M.is_loaded()
  return loaded ~= nil
end

--- Generates doc/tags so that `:help acp` works (plugin managers that do
--- not run `:helptags` themselves). Never raises.
function M.helptags()
  local doc = M.root() .. '/doc'
  if vim.fn.isdirectory(doc) == 1 and vim.fn.filewritable(doc) == 2 then
    pcall(vim.cmd.helptags, vim.fn.fnameescape(doc))
  end
end

-- The native functions ---------------------------------------------------------
-- Each forwards to the native function of the same name (declared with its
-- arguments in `acp.Native`, lua/acp/core/types.lua), loading the core on first
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
--- What the library was built from (checked by `load()`).
---@type fun(): acp.BuildInfo
M.build_info = forward('build_info')
---@type fun(): string?
M.log_path = forward('log_path')
M.log = forward('log')
M.notice = forward('notice')
M.disk_edit = forward('disk_edit')
M.accept_changes = forward('accept_changes')
--- Review's records: what a file is compared with, keep, and the records
--- as JSON (to keep a chat's review across a restart).
---@type fun(thread: integer, path: string, now: string?): acp.ReviewBase?
M.review_base = forward('review_base')
---@type fun(thread: integer, path: string, before: string, after: string)
M.review_keep = forward('review_keep')
---@type fun(thread: integer): string
M.review_export = forward('review_export')
--- Where the agent's images and audio are saved (acp.chat.media).
---@type fun(): string
M.media_root = forward('media_root')
---@type fun(thread: integer, json: string): integer
M.review_import = forward('review_import')
--- Checkpoints: one per turn, the agent's steps on each file it changed.
---@type fun(thread: integer): acp.Checkpoint[]
M.checkpoints = forward('checkpoints')
---@type fun(thread: integer, turn: integer): string[]?
M.checkpoint_paths = forward('checkpoint_paths')
---@type fun(thread: integer, turn: integer, path: string, now: string?): acp.ReviewBase?
M.checkpoint_base = forward('checkpoint_base')
---@type fun(thread: integer, turn: integer): integer[]
M.checkpoint_undone = forward('checkpoint_undone')

-- Chats.
---@type fun(spec: acp.AgentSpec): integer
M.open_thread = forward('open_thread')
---@type fun(thread: integer, prompt: string|acp.ContentBlock[], opts: { queued_by_agent?: boolean }?)
M.prompt = forward('prompt')
--- A request to the agent for the view (config options, models, session
--- list/close/delete, logout); the answer is a `reply` event for `reply`.
---@type fun(thread: integer, method: string, params: table?, reply: integer)
M.request = forward('request')
--- Opens the session again after a sign-in outside the connection.
---@type fun(thread: integer)
M.reconnect = forward('reconnect')
--- Answers an `elicitation` event: `{ action = 'accept', content = {...} }`,
--- `{ action = 'decline' }` or `{ action = 'cancel' }`.
---@type fun(request: integer, response: acp.ElicitationResponse)
M.answer_elicitation = forward('answer_elicitation')
---@type fun(thread: integer, method_id: string)
M.authenticate = forward('authenticate')
---@type fun(thread: integer): acp.AuthMethod[]
M.auth_methods = forward('auth_methods')
---@type fun(thread: integer, mode_id: string)
M.set_mode = forward('set_mode')
--- True when a running turn was cancelled.
---@type fun(thread: integer): boolean
M.cancel = forward('cancel')
--- Cancels one subagent's work (when the agent offers it): true, or
--- false and why not.
---@type fun(thread: integer, session_id: string): boolean, string?
M.cancel_subagent = forward('cancel_subagent')
--- Answers a `permission` event: an option id, or nil for "cancelled".
---@type fun(thread: integer, request: integer, option_id: string?)
M.answer_permission = forward('answer_permission')
---@type fun(thread: integer)
M.close_thread = forward('close_thread')
---@type fun(thread: integer, before: integer?): string
M.markdown = forward('markdown')
--- Edit and resend: the chat goes on in a fork of its session or a new one.
---@type fun(thread: integer, opts: { fork?: boolean, message_id?: string, note: string }, reply: integer)
M.branch = forward('branch')
--- The protocol trace of the chat's agent, one readable line per message.
---@type fun(thread: integer, width: integer?): string[]
M.trace_lines = forward('trace_lines')
--- Writes the trace as JSONL with secrets redacted; returns the count.
---@type fun(thread: integer, path: string): integer
M.trace_save = forward('trace_save')
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
--- File texts kept in the core under one cap for all chats
--- (`fs.kept_text_max_bytes`): an id, or nil when not kept; `kept_text`
--- gives nil once the text was dropped (oldest first) or released.
---@type fun(thread: integer, label: string, text: string): integer?
M.keep_text = forward('keep_text')
---@type fun(id: integer): string?
M.kept_text = forward('kept_text')
---@type fun(id: integer)
M.release_text = forward('release_text')
---@type fun(): integer
M.kept_bytes = forward('kept_bytes')
---@type fun(): integer[]
M.agent_pids = forward('agent_pids')
-- Kept chats of a project (`history` in the options).
---@type fun(root: string): { chats: acp.KeptChat[], problems: string[] }
M.kept_chats = forward('kept_chats')
---@type fun(root: string, id: string)
M.kept_delete = forward('kept_delete')

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

-- Client terminals (jobs run by lua/acp/editor/terminal.lua).
---@type fun(thread: integer, terminal: string, data: string)
M.terminal_output = forward('terminal_output')
---@type fun(thread: integer, terminal: string, code: integer)
M.terminal_exit = forward('terminal_exit')
---@type fun(thread: integer, terminal: string): acp.TerminalText?
M.terminal_text = forward('terminal_text')
M.watch_terminal = forward('watch_terminal')

-- File texts (the buffer sync's): lines go as a list, or as one string of
-- the lines joined with "\n" (cheaper for a large buffer).
--- A file's text as a buffer with `format` holds it: its lines and whether
--- it ended with a line break.
---@type fun(text: string, format: acp.TextFormat?): string[], boolean
M.decode = forward('decode')
--- What a `:write` of a buffer holding `lines` with `format` puts in its file.
---@type fun(lines: string[]|string, format: acp.TextFormat?): string
M.encode = forward('encode')
--- The minimal edits that turn lines `old` into lines `new`.
---@type fun(old: string[]|string, new: string[]|string): acp.Hunk[]
M.hunks = forward('hunks')
--- The edits that make a buffer holding `lines` hold file text `text` read
--- with `format`, and the 'eol' it then has.
---@type fun(lines: string[]|string, text: string, format: acp.TextFormat?): acp.Hunk[], boolean
M.file_hunks = forward('file_hunks')
--- The text the buffer of `path` and its file agree on now (nil: unknown).
---@type fun(path: string, text: string?)
M.agreed_set = forward('agreed_set')
---@type fun(path: string): string?
M.agreed_get = forward('agreed_get')
---@type fun(path: string)
M.agreed_forget = forward('agreed_forget')
--- A disk change of `path` merged into its buffer's unsaved `lines` from
--- the agreed text.
---@type fun(path: string, lines: string[]|string, text: string, format: acp.TextFormat?): acp.DiskMerge, (acp.Hunk[]|integer[])?
M.merge_disk = forward('merge_disk')
---@type fun(): acp.BridgeStats
M.stats = forward('stats')
--- Events wait for the next drain (the last one's budget left some, or
--- more came since): work that can wait (freezing highlights) lets the
--- text in first.
---@type fun(): boolean
M.events_wait = forward('events_wait')
--- Ends every agent and the runtime (bounded: under a second).
---@type fun()
M.shutdown = forward('shutdown')

return M
