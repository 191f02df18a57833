-- Fitting the user's setup: no global keymaps unless asked, the loader and
-- its stale check, build():wait(), a headless bootstrap through a
-- lazy.nvim-style loader, the completion sources, :AcpInstall, health,
-- and a tag in the docs for every public name.
local T = require('tests.helpers.expect')
local Child = require('tests.helpers.child')
local H = require('tests.helpers.acp')

local ROOT = H.root
local uv = vim.uv or vim.loop

local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level, opts)
    table.insert(_G.notes, { msg = msg, level = level, id = opts and opts.id })
  end
]]

local function lib_path()
  return ROOT .. '/target/release/libacp_core.so'
end

--- A directory holding a stub `cargo` that writes cargo-like output and
--- exits with `code`; with `copy_to_target`, it "builds" by copying the
--- real library into $CARGO_TARGET_DIR/release (or ./target/release).
local function stub_cargo(code, copy_to_target)
  local dir = T.tmpdir('stub-cargo')
  local script = {
    '#!/bin/sh',
    'echo "   Compiling libc v0.2.0" >&2',
    'echo "   Compiling acp-nvim v0.1.0" >&2',
    'sleep 0.3',
  }
  if code == 0 then
    if copy_to_target then
      table.insert(script, 'out="${CARGO_TARGET_DIR:-$PWD/target}/release"')
      table.insert(script, 'mkdir -p "$out" && cp "' .. lib_path() .. '" "$out/libacp_core.so"')
    end
    table.insert(script, 'echo "    Finished \\`release\\` profile [optimized] target(s) in 0.30s" >&2')
  else
    table.insert(script, 'echo "error: could not compile \\`acp-nvim\\` (lib) due to 2 previous errors" >&2')
  end
  table.insert(script, 'exit ' .. code)
  T.write_file(dir .. '/cargo', table.concat(script, '\n') .. '\n')
  uv.fs_chmod(dir .. '/cargo', tonumber('755', 8))
  return dir
end

--- Global (not buffer-local) mappings whose lhs is not a <Plug> mapping.
local GLOBAL_KEYS = [[
  local out = {}
  for _, mode in ipairs({ 'n', 'x', 's', 'o', 'i', 'c', 't' }) do
    for _, m in ipairs(vim.api.nvim_get_keymap(mode)) do
      if not m.lhs:find('^<Plug>') then out[#out + 1] = mode .. ' ' .. m.lhs end
    end
  end
  table.sort(out)
  return out
]]

return {
  -- Keymaps ---------------------------------------------------------------------------

  { 'no global keymaps without opt-in; a <Plug> mapping for every command', function()
    local child, paths = H.start({ turns = {} })
    -- H.start ran setup() without `keymaps`: compare with a child that
    -- never loaded the plugin's Lua.
    local bare = Child.new()
    local before = bare:lua(GLOBAL_KEYS)
    H.open(child)
    H.turn(child, 'hello')
    T.eq(child:lua(GLOBAL_KEYS), before, 'global mappings after setup() and a chat')
    T.truthy(paths.log)
    -- Opting in installs them.
    local on = Child.new()
    on:lua([[require('acp').setup({ keymaps = true })]])
    T.eq(on:lua([[return vim.fn.maparg('<leader>ac', 'n')]]), '<Plug>(AcpChat)')
    -- Each command has its <Plug> mapping.
    local r = child:lua([[
      local missing = {}
      for name in pairs(vim.api.nvim_get_commands({})) do
        if name:match('^Acp') and name ~= 'AcpAdd' then
          local plug = '<Plug>(' .. name .. ')'
          if vim.fn.maparg(plug, 'n') == '' and vim.fn.maparg(plug, 'x') == '' then missing[#missing + 1] = name end
        end
      end
      return { missing = missing, add = vim.fn.maparg('<Plug>(AcpAddBuffer)', 'n') ~= '' }
    ]])
    T.eq(r.missing, {})
    T.eq(r.add, true)
    -- <Plug>(AcpToggle) hides and shows the chat.
    child:lua([[vim.api.nvim_feedkeys(vim.keycode('<Plug>(AcpToggle)'), 'x', false)]])
    T.eq(child:lua([[return require('acp').current():is_visible()]]), false)
    child:lua([[vim.api.nvim_feedkeys(vim.keycode('<Plug>(AcpToggle)'), 'x', false)]])
    T.eq(child:lua([[return require('acp').current():is_visible()]]), true)
  end },

  -- Loader ------------------------------------------------------------------------------

  { 'the loader finds the library under CARGO_TARGET_DIR and a cargo config target-dir', function()
    local target = T.tmpdir('target')
    vim.fn.mkdir(target .. '/release', 'p')
    uv.fs_symlink(lib_path(), target .. '/release/libacp_core.so')
    local child = Child.new({ env = { CARGO_TARGET_DIR = target } })
    local r = child:lua([[
      local core = require('acp.core')
      local loaded, err = core.load()
      return { first = core.candidates()[1], ok = loaded ~= nil, err = err, path = core.path }
    ]])
    T.eq(r.first, target .. '/release/libacp_core.so')
    T.eq(r.err, nil)
    T.eq(r.ok, true)
    T.eq(r.path, target .. '/release/libacp_core.so')
    -- Not there: the message names the build command.
    local empty = T.tmpdir('empty-target')
    local none = Child.new({ env = { CARGO_TARGET_DIR = empty } })
    T.match(none:lua([[return select(2, require('acp.core').load())]]), 'the Rust core is not built; run :AcpBuild')
    -- `build.target-dir` of $CARGO_HOME/config.toml, relative to its parent.
    local home = T.tmpdir('cargo-home')
    T.write_file(home .. '/.cargo/config.toml', '[net]\nretry = 2\n\n[build]\ntarget-dir = "shared-target"\n')
    local viaconfig = Child.new({ env = { CARGO_TARGET_DIR = false, CARGO_HOME = home .. '/.cargo' } })
    T.eq(viaconfig:lua([[return require('acp.core').target_dir()]]), home .. '/shared-target')
    -- Neither: the checkout's target/.
    local default = Child.new({ env = { CARGO_TARGET_DIR = false, CARGO_HOME = T.tmpdir('no-config') } })
    T.eq(default:lua([[return require('acp.core').target_dir()]]), ROOT .. '/target')
  end },

  { 'the stale check: version, then the record of the last verification; the sources hashed only when it cannot vouch', function()
    local cache = T.tmpdir('stale-cache')
    local child = Child.new({ env = { ACP_VERIFY_SOURCES = false, XDG_CACHE_HOME = cache } })
    local r = child:lua([[
      local core = require('acp.core')
      -- A copy of the core's sources and library, so times can change without touching the
      -- checkout (cargo watches those times).
      local copy = ...
      -- The library's own stamp.
      local info = assert(core.load()).build_info()
      for _, f in ipairs(core.source_files()) do
        vim.fn.mkdir(vim.fs.dirname(copy .. '/' .. f), 'p')
        assert(vim.uv.fs_copyfile(core.root() .. '/' .. f, copy .. '/' .. f))
      end
      local lib = copy .. '/libacp_core.so'
      assert(vim.uv.fs_copyfile(assert(core.candidates()[1]), lib))
      core.root = function() return copy end
      local hashed = 0
      local real = core.source_stamp
      core.source_stamp = function() hashed = hashed + 1; return real() end
      local good = real()
      local out = {}
      local function check(name, given, path)
        local before = hashed
        out[name] = { why = core.stale_reason(given, path) or false, hashed = hashed - before }
      end
      check('first', { version = core.VERSION, source_stamp = good }, lib)
      check('again', { version = core.VERSION, source_stamp = good }, lib)
      -- A library with another stamp: hashed, and refused.
      check('bogus_recorded', { version = core.VERSION, source_stamp = 'bogus' }, lib)
      check('no_path', { version = core.VERSION, source_stamp = good })
      check('version', { version = '0.0.1', source_stamp = good }, lib)
      -- A source edit (a newer time on one file) makes the record stale.
      local src = copy .. '/src/lib.rs'
      local st = vim.uv.fs_stat(src)
      vim.uv.fs_utime(src, st.atime.sec, st.mtime.sec + 1)
      check('after_edit', { version = core.VERSION, source_stamp = good }, lib)
      check('after_edit_again', { version = core.VERSION, source_stamp = good }, lib)
      -- A rebuilt library (a new time on it).
      st = vim.uv.fs_stat(lib)
      vim.uv.fs_utime(lib, st.atime.sec, st.mtime.sec + 1)
      check('after_rebuild', { version = core.VERSION, source_stamp = good }, lib)
      out.info = { version = info.version, stamp = #info.source_stamp, keys = vim.tbl_count(info) }
      out.record = vim.fn.filereadable(core.verified_record(lib))
      return out
    ]], { T.tmpdir('core-copy') })
    T.eq(r.first, { why = false, hashed = 1 }, 'the first load hashes the sources once')
    T.eq(r.again, { why = false, hashed = 0 }, 'the record vouches for the library: no hashing')
    T.eq(r.bogus_recorded, { why = 'was built from other sources', hashed = 1 }, 'a library with another stamp is hashed and refused')
    T.eq(r.no_path, { why = false, hashed = 1 })
    T.eq(r.version, { why = 'is version 0.0.1, the plugin is 0.1.0', hashed = 0 })
    T.eq(r.after_edit, { why = false, hashed = 1 }, 'an edited source file is hashed again')
    T.eq(r.after_edit_again, { why = false, hashed = 0 })
    T.eq(r.after_rebuild, { why = false, hashed = 1 }, 'a rebuilt library is hashed again')
    T.eq(r.info, { version = '0.1.0', stamp = 64, keys = 2 })
    T.eq(r.record, 1)
    -- With ACP_VERIFY_SOURCES set (the tests), every load hashes.
    local strict = Child.new({ env = { ACP_VERIFY_SOURCES = '1', XDG_CACHE_HOME = cache } })
    T.eq(strict:lua([[
      local core = require('acp.core')
      local n, real = 0, core.source_stamp
      core.source_stamp = function() n = n + 1; return real() end
      core.stale_reason({ version = core.VERSION, source_stamp = real() }, core.candidates()[1])
      return n
    ]]), 1)
    local old = Child.new()
    old:lua(RECORD_NOTIFY)
    old:lua([[require('acp.core').VERSION = '9.9.9']])
    T.match(old:lua([[return select(2, require('acp.core').load())]]),
      'is version 0%.1%.0, the plugin is 9%.9%.9; rebuild with :AcpBuild %(or `cargo build %-%-release` in .+%), then restart Neovim')
    -- The Lua version follows Cargo.toml.
    T.match(T.read_file(ROOT .. '/Cargo.toml'), '\nversion = "0%.1%.0"\n')
  end },

  -- build():wait() ---------------------------------------------------------------------------

  { 'build() returns a handle: wait(), progress, a clear end message, the log', function()
    local child = Child.new({ env = { PATH = stub_cargo(0) .. ':' .. vim.env.PATH } })
    local log = T.tmpdir('build') .. '/build.log'
    child:lua(RECORD_NOTIFY)
    -- (cargo's path: no prebuilt core is looked for, tests/test_prebuilt.lua has those)
    local r = child:lua([[
      require('acp').setup({ prebuilt = { enabled = false } })
      require('acp.core').build_log = ...
      local h = require('acp').build()
      local running = h.done
      local ok, msg = h:wait(20000)
      return { running = running, ok = ok, msg = msg, code = h.code, crates = h.crates, notes = _G.notes }
    ]], { log })
    T.eq(r.running, false, 'build() returned before cargo ended')
    T.eq(r.ok, true)
    T.eq(r.code, 0)
    T.eq(r.crates, 2)
    T.match(r.msg, '^acp%.nvim: core built in %d+ s$')
    -- One notification line, updated in place (same id), ending with the result.
    T.match(r.notes[1].msg, 'building the core')
    T.eq(r.notes[#r.notes].msg, r.msg)
    for _, n in ipairs(r.notes) do
      T.eq(n.id, 'acp.build')
    end
    local text = T.read_file(log)
    T.match(text, 'Compiling acp%-nvim')
    T.match(text, 'exit code 0')
    -- :help acp works: build() generated the tags.
    child:cmd('help acp')
    T.match(child:lua([[return vim.api.nvim_buf_get_name(0)]]), 'doc/acp%.txt$')

    local failing = Child.new({ env = { PATH = stub_cargo(101) .. ':' .. vim.env.PATH } })
    failing:lua(RECORD_NOTIFY)
    local f = failing:lua([[
      require('acp').setup({ prebuilt = { enabled = false } })
      require('acp.core').build_log = ...
      local done_arg
      local h = require('acp').build(function(ok) done_arg = ok end)
      local ok, msg = h:wait(20000)
      return { ok = ok, msg = msg, done_arg = done_arg, level = _G.notes[#_G.notes].level }
    ]], { log })
    T.eq(f.ok, false)
    T.eq(f.done_arg, false)
    T.eq(f.level, vim.log.levels.ERROR)
    T.match(f.msg, 'build failed %(exit 101%): error: could not compile `acp%-nvim`')
    T.match(f.msg, ':AcpLog build')
    -- Timeout: nil and 'timeout', the build goes on.
    local slow = Child.new({ env = { PATH = stub_cargo(0) .. ':' .. vim.env.PATH } })
    slow:lua(RECORD_NOTIFY)
    T.eq(slow:lua([[require('acp.core').build_log = ...; return { require('acp').build({ from = 'source' }):wait(10) }]], { log }), { vim.NIL, 'timeout' })
  end },

  { 'a headless bootstrap (lazy.nvim-style loader, `+Lazy! sync` +qa) ends with a built library', function()
    local target = T.tmpdir('bootstrap-target')
    local tmp = T.tmpdir('bootstrap')
    -- What lazy.nvim does for `:Lazy! sync` with the README's spec: put the
    -- plugin on the runtimepath, run its `build` function, and (with the
    -- bang) return only when the tasks are done; then +qa quits.
    T.write_file(tmp .. '/init.lua', ([[
      local spec = {
        dir = %q,
        build = function()
          -- (this checkout is no release: build with cargo at once)
          require('acp').setup({ prebuilt = { enabled = false } })
          assert(require('acp').build():wait())
        end,
      }
      vim.api.nvim_create_user_command('Lazy', function(o)
        assert(o.bang and o.args == 'sync')
        vim.opt.runtimepath:prepend(spec.dir)
        vim.cmd('runtime! plugin/acp.lua')
        spec.build(spec)
      end, { bang = true, nargs = '*' })
    ]]):format(ROOT))
    local env = { CARGO_TARGET_DIR = target, PATH = stub_cargo(0, true) .. ':' .. vim.env.PATH }
    for _, k in ipairs({ 'CONFIG', 'DATA', 'STATE', 'CACHE' }) do
      env['XDG_' .. k .. '_HOME'] = tmp .. '/' .. k:lower()
    end
    local res = vim.system({ vim.env.ACP_NVIM, '--clean', '--headless', '-u', tmp .. '/init.lua', '+Lazy! sync', '+qa' },
      { env = env, text = true, stdin = false }):wait(60000)
    T.eq(res.code, 0, res.stderr)
    T.truthy(uv.fs_stat(target .. '/release/libacp_core.so'), 'the library exists when Neovim quits')
    T.match(res.stderr, 'core built')
    -- The next start loads it from there.
    local child = Child.new({ env = { CARGO_TARGET_DIR = target } })
    T.eq(child:lua([[local c = require('acp.core'); return { c.load() ~= nil, c.path }]]),
      { true, target .. '/release/libacp_core.so' })
    -- A failed build is an error of the build step (the README's assert),
    -- with cargo's reason, not only a notification.
    env.PATH = stub_cargo(101) .. ':' .. vim.env.PATH
    env.CARGO_TARGET_DIR = T.tmpdir('bootstrap-failed')
    res = vim.system({ vim.env.ACP_NVIM, '--clean', '--headless', '-u', tmp .. '/init.lua', '+Lazy! sync', '+qa' },
      { env = env, text = true, stdin = false }):wait(60000)
    T.match(res.stderr, 'init%.lua:%d+: acp%.nvim: build failed %(exit 101%)')
  end, timeout = 60000 },

  -- Completion -----------------------------------------------------------------------------

  { 'blink.cmp source: called as blink calls it; the built-in popup steps aside', function()
    local dir = H.project({ ['alpha.lua'] = 'x\n', ['beta.lua'] = 'y\n' })
    local child = H.start({ cwd = dir, turns = {}, agent_info = { session_updates = {
      { sessionUpdate = 'available_commands_update', availableCommands = {
        { name = 'review', description = 'Review the changes' } } },
    } } })
    -- blink.cmp as configured by the user (the documented provider spec).
    child:lua([[
      package.loaded['blink.cmp'] = {}
      package.loaded['blink.cmp.config'] = { sources = {
        default = { 'lsp', 'buffer' },
        per_filetype = { acpchat_input = { 'acp' } },
        providers = { acp = { name = 'ACP', module = 'blink-cmp-acp' } },
      } }
    ]])
    H.open(child)
    child:wait_for([[return require('acp').current().info.commands ~= nil]])
    T.eq(child:lua([[return require('acp.prompt.popup').builtin_popup()]]), false)
    child:lua([[require('acp.prompt.mention').refresh(require('acp').current().root, function() _G.listed = true end)]])
    child:wait_for('return _G.listed')
    -- Typing `@al` opens no built-in menu.
    child:feed('@al')
    child:wait_for([[return vim.api.nvim_get_current_line() == '@al']])
    vim.wait(100)
    T.eq(child:lua('return vim.fn.pumvisible()'), 0)
    -- blink: `new(provider config)`, `enabled()`, trigger characters, then
    -- `get_completions(context, callback)` with its Context (bufnr,
    -- cursor = nvim_win_get_cursor, line); the item's textEdit is applied.
    local r = child:lua([[
      local Source = require(package.loaded['blink.cmp.config'].sources.providers.acp.module)
      local src = Source.new({})
      local ctx = { bufnr = vim.api.nvim_get_current_buf(), cursor = vim.api.nvim_win_get_cursor(0),
                    line = vim.api.nvim_get_current_line(), trigger = { kind = 1 } }
      local got
      local cancel = src:get_completions(ctx, function(res) got = res end)
      local item
      for _, it in ipairs(got.items) do if it.label == '@alpha.lua' then item = it end end
      local e = item.textEdit
      vim.api.nvim_buf_set_text(0, e.range.start.line, e.range.start.character, e.range['end'].line, e.range['end'].character, { e.newText })
      return { enabled = src:enabled(), triggers = src:get_trigger_characters(), cancel = type(cancel),
               incomplete = got.is_incomplete_forward, kind = item.kind, line = vim.api.nvim_get_current_line() }
    ]])
    T.eq(r.enabled, true)
    T.eq(r.triggers, { '@', '/' })
    T.eq(r.cancel, 'function')
    T.eq(r.kind, 17)
    T.eq(r.line, '@alpha.lua')
    -- `/` commands at the start of the input.
    local c = child:lua([[
      vim.api.nvim_buf_set_lines(0, 0, -1, false, { '/re' })
      vim.api.nvim_win_set_cursor(0, { 1, 3 })
      local src = require('blink-cmp-acp').new({})
      local got
      src:get_completions({ bufnr = 0 + vim.api.nvim_get_current_buf(), cursor = vim.api.nvim_win_get_cursor(0),
                            line = vim.api.nvim_get_current_line(), trigger = { kind = 1 } }, function(res) got = res end)
      return got.items
    ]])
    T.eq(#c, 1)
    T.eq(c[1].label, '/review')
    T.eq(c[1].textEdit.newText, '/review ')
    T.eq(c[1].textEdit.range.start.character, 0)
    -- With completion = 'builtin' the built-in popup stays.
    child:lua([[require('acp.config').options.completion = 'builtin']])
    T.eq(child:lua([[return require('acp.prompt.popup').builtin_popup()]]), true)
    -- The omnifunc stays in every mode.
    T.eq(child:lua([[return vim.bo.omnifunc]]), "v:lua.require'acp.prompt.mention'.omnifunc")
  end },

  { 'nvim-cmp source: registered when cmp is loaded, called as cmp calls it', function()
    local dir = H.project({ ['alpha.lua'] = 'x\n' })
    local child = H.start({ cwd = dir, turns = {}, agent_info = { session_updates = {
      { sessionUpdate = 'available_commands_update', availableCommands = {
        { name = 'init', description = 'Create AGENTS.md', input = { hint = 'project name' } } } },
    } } })
    child:lua([[
      _G.registered = {}
      package.loaded.cmp = {
        register_source = function(name, src) _G.registered[name] = src; return 1 end,
        get_config = function() return { sources = { { name = 'acp' } } } end,
      }
    ]])
    H.open(child)
    child:wait_for([[return require('acp').current().info.commands ~= nil]])
    T.eq(child:lua([[return require('acp.prompt.popup').builtin_popup()]]), false)
    child:feed('/in')
    child:wait_for([[return vim.api.nvim_get_current_line() == '/in']])
    vim.wait(100)
    T.eq(child:lua('return vim.fn.pumvisible()'), 0)
    -- cmp: is_available(), get_keyword_pattern(), then complete(params,
    -- callback) with params.context as cmp.Context builds it.
    local r = child:lua([[
      local src = _G.registered.acp
      local cursor = vim.api.nvim_win_get_cursor(0)
      local line = vim.api.nvim_get_current_line()
      local ctx = { bufnr = vim.api.nvim_get_current_buf(), cursor_line = line,
                    cursor = { row = cursor[1], col = cursor[2] + 1, line = cursor[1] - 1, character = cursor[2] },
                    cursor_before_line = line:sub(1, cursor[2]) }
      local pattern = src:get_keyword_pattern()
      local offset = vim.fn.matchstrpos(ctx.cursor_before_line, '\\%(' .. pattern .. '\\)\\m$')[2] + 1
      local got
      src:complete({ offset = offset, context = ctx, option = {},
                     completion_context = { triggerKind = 1 } }, function(res) got = res end)
      -- The documentation comes when cmp resolves the entry.
      local resolved
      src:resolve(got.items[1], function(item) resolved = item end)
      return { available = src:is_available(), name = src:get_debug_name(), offset = offset, items = got.items,
               doc = resolved and resolved.documentation }
    ]])
    T.eq(r.available, true)
    T.eq(r.name, 'acp')
    T.eq(r.offset, 1)
    T.eq(#r.items, 1)
    T.eq(r.items[1].label, '/init')
    T.eq(r.doc.kind, 'markdown')
    T.match(r.doc.value, 'input: `project name`', 'the input hint')
    T.eq(r.items[1].textEdit.range['end'].character, 3)
  end },

  -- Agents from the registry -----------------------------------------------------------------

  { ':AcpInstall installs an npm entry of a registry; the agent then runs a turn', function()
    local js = vim.env.ACP_SDK_AGENT_JS
    if vim.fn.executable('node') ~= 1 or vim.fn.executable('npm') ~= 1 then
      T.skip('node/npm are not installed')
    end
    if not js or vim.fn.filereadable(js) ~= 1 then
      T.skip('@agentclientprotocol/sdk is not installed (make deps needs npm)')
    end
    local modules = vim.fn.fnamemodify(js, ':h:h:h:h:h')
    -- Offline: the package and its peer dependency as local tarballs.
    local packs = T.tmpdir('packs')
    for _, pkg in ipairs({ '@agentclientprotocol/sdk', 'zod' }) do
      local res = vim.system({ 'npm', 'pack', '--silent', '--pack-destination', packs, modules .. '/' .. pkg },
        { text = true, env = { npm_config_offline = 'true' } }):wait(60000)
      T.eq(res.code, 0, res.stderr)
    end
    local tarballs = vim.fn.glob(packs .. '/*.tgz', false, true)
    table.sort(tarballs)
    T.eq(#tarballs, 2)
    local registry = T.tmpdir('registry') .. '/registry.json'
    T.write_file(registry, vim.json.encode({ version = '1.0.0', agents = {
      { id = 'sdk-example', name = 'SDK example', version = '0.14.1', description = 'The ACP SDK example agent',
        distribution = { npx = { package = '@agentclientprotocol/sdk@0.14.1', bin = 'dist/examples/agent.js' } } },
    } }))
    local install_dir = T.tmpdir('agents')
    local child = H.start({
      env = { npm_config_offline = 'true', npm_config_cache = T.tmpdir('npm-cache'),
              HTTP_PROXY = 'http://127.0.0.1:9', HTTPS_PROXY = 'http://127.0.0.1:9', NO_PROXY = '127.0.0.1,localhost' },
      config = { install = { registry = registry, dir = install_dir,
                             sources = { ['@agentclientprotocol/sdk'] = tarballs } } },
    })
    child:lua(RECORD_NOTIFY)
    T.eq(child:lua([[return vim.fn.getcompletion('AcpInstall sd', 'cmdline')]]), { 'sdk-example' })
    T.contains(child:lua([[return vim.fn.getcompletion('AcpChat ', 'cmdline')]]), 'sdk-example')
    child:cmd('AcpInstall sdk-example')
    child:wait_for([[return require('acp.agents.install').installed('sdk-example') ~= nil
      or vim.iter(_G.notes):any(function(n) return n.msg:find('failed') ~= nil end)]], 60000)
    local notes = child:lua('return _G.notes')
    T.match(notes[#notes].msg, 'installed sdk%-example 0%.14%.1', vim.inspect(notes))
    T.match(notes[1].msg, 'installing sdk%-example: npm install @agentclientprotocol/sdk@0%.14%.1')
    local info = child:lua([[return require('acp.agents.install').installed('sdk-example')]])
    T.eq(info.version, '0.14.1')
    T.eq(info.args, { install_dir .. '/sdk-example/node_modules/@agentclientprotocol/sdk/dist/examples/agent.js' })
    -- It runs from its own prefix: :AcpChat sdk-example.
    child:cmd('AcpChat sdk-example')
    child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']], 15000)
    child:lua([[require('acp').send('hello')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]], 15000)
    H.enter_permission(child)
    child:lua([[
      local p = require('acp.ask.permission')
      for i, o in ipairs(p.queue[1].payload.options) do
        if o.id == 'allow' then p.choose(i) end
      end
    ]])
    child:wait_for([[return require('acp').current().turns_ended == 1]], 15000)
    T.match(H.transcript_text(child), "Perfect! I've successfully updated the configuration%.")
    -- Health lists it; :AcpUpdate says it is current.
    child:cmd('checkhealth acp')
    T.match(table.concat(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]), '\n'),
      'OK sdk%-example 0%.14%.1 %(npx%)')
  end, timeout = 120000 },

  { ':AcpInstall of a binary entry: archive checked against its sha256, extracted, run', function()
    local work = T.tmpdir('binary')
    vim.fn.mkdir(work .. '/pkg/bin', 'p')
    T.write_file(work .. '/pkg/bin/agent', '#!/bin/sh\nexec "' .. H.agent_bin .. '" "$@"\n')
    uv.fs_chmod(work .. '/pkg/bin/agent', tonumber('755', 8))
    local res = vim.system({ 'tar', '-czf', work .. '/agent.tar.gz', '-C', work .. '/pkg', 'bin' }):wait()
    T.eq(res.code, 0)
    local sum = vim.system({ 'sha256sum', work .. '/agent.tar.gz' }, { text = true }):wait().stdout:match('^%x+')
    local child = Child.new()
    local platform = child:lua([[return require('acp.agents.install').platform()]])
    local function registry(sha)
      local path = work .. '/registry-' .. sha:sub(1, 6) .. '.json'
      T.write_file(path, vim.json.encode({ agents = {
        { id = 'bin-agent', name = 'Binary agent', version = '1.2.3', description = 'x',
          distribution = { binary = { [platform] = { archive = 'file://' .. work .. '/agent.tar.gz', cmd = './bin/agent',
            args = { '--scenario', H.scenario('chat') }, sha256 = sha } } } },
      } }))
      return path
    end
    child:lua(RECORD_NOTIFY)
    child:lua([[require('acp').setup({ install = { registry = ..., dir = select(2, ...) } })]],
      { registry(('0'):rep(64)), work .. '/agents' })
    local bad = child:lua([[local job = require('acp.agents.install').install('bin-agent'); job:wait(10000); return { ok = job.ok, msg = job.message }]])
    T.eq(bad.ok, false)
    T.match(bad.msg, 'checksum mismatch')
    T.eq(child:lua([[return require('acp.agents.install').installed('bin-agent') == nil]]), true)
    child:lua([[require('acp').setup({ default_agent = 'bin-agent', install = { registry = ..., dir = select(2, ...) } })]],
      { registry(sum), work .. '/agents' })
    local good = child:lua([[local job = require('acp.agents.install').install('bin-agent'); job:wait(10000); return { ok = job.ok, msg = job.message }]])
    T.eq(good.ok, true, good.msg)
    T.eq(child:lua([[return require('acp.agents.install').installed('bin-agent').cmd]]), work .. '/agents/bin-agent/bin/agent')
    child:cmd('AcpChat')
    child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']])
    child:lua([[require('acp').send('stream')]])
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    T.match(table.concat(child:lua([[return require('acp').current():lines()]]), '\n'), 'alpha beta gamma')
  end },

  { ':AcpUpdate: a failed update keeps the installed version working; a good one moves to the new one', function()
    local work = T.tmpdir('update')
    -- Two archives: each version's agent script says which it is in a file.
    local function archive(version)
      local pkg = work .. '/pkg-' .. version
      vim.fn.mkdir(pkg .. '/bin', 'p')
      T.write_file(pkg .. '/bin/agent', ('#!/bin/sh\necho %s > "%s/ran"\nexec "%s" "$@"\n'):format(version, work, H.agent_bin))
      uv.fs_chmod(pkg .. '/bin/agent', tonumber('755', 8))
      local file = work .. '/agent-' .. version .. '.tar.gz'
      T.eq(vim.system({ 'tar', '-czf', file, '-C', pkg, 'bin' }):wait().code, 0)
      return 'file://' .. file
    end
    local child = Child.new()
    local platform = child:lua([[return require('acp.agents.install').platform()]])
    local function setup(version, url)
      local path = work .. '/registry-' .. version .. '-' .. #url .. '.json'
      T.write_file(path, vim.json.encode({ agents = {
        { id = 'bin-agent', name = 'Binary agent', version = version, description = 'x',
          distribution = { binary = { [platform] = { archive = url, cmd = './bin/agent', args = { '--scenario', H.scenario('chat') } } } } },
      } }))
      child:lua([[require('acp').setup({ default_agent = 'bin-agent', install = { registry = ..., dir = select(2, ...) } })]],
        { path, work .. '/agents' })
    end
    -- Which version the installed command is (it runs, notes it, and the
    -- test agent exits on the closed stdin).
    local function runs()
      vim.fn.delete(work .. '/ran')
      local info = child:lua([[return require('acp.agents.install').installed('bin-agent')]])
      vim.system(vim.list_extend({ info.cmd }, info.args), { stdin = '' }):wait(5000)
      return vim.trim(T.read_file(work .. '/ran') or '')
    end
    child:lua(RECORD_NOTIFY)
    setup('1.0.0', archive('1.0.0'))
    T.eq(child:lua([[local job = require('acp.agents.install').install('bin-agent'); job:wait(10000); return job.ok]]), true)
    -- 2.0.0 whose archive is missing: the install fails, 1.0.0 stays.
    setup('2.0.0', 'file://' .. work .. '/missing.tar.gz')
    child:cmd('AcpUpdate bin-agent')
    child:wait_for([[return vim.iter(_G.notes):any(function(n) return n.msg:find('failed') ~= nil end)]], 10000)
    T.match(child:lua([[return _G.notes[#_G.notes].msg]]), '^acp%.nvim: updating bin%-agent failed: `cp` failed %(exit 1%); bin%-agent 1%.0%.0 is kept; log: ')
    T.eq(child:lua([[return require('acp.agents.install').installed('bin-agent').version]]), '1.0.0')
    T.eq(runs(), '1.0.0', 'the old version still runs')
    child:cmd('AcpChat')
    child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']])
    child:lua([[require('acp').send('stream')]])
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    T.match(table.concat(child:lua([[return require('acp').current():lines()]]), '\n'), 'alpha beta gamma')
    -- 2.0.0 with its archive: the update moves to it, in the same prefix.
    setup('2.0.0', archive('2.0.0'))
    child:cmd('AcpUpdate')
    child:wait_for([[return require('acp.agents.install').installed('bin-agent').version == '2.0.0']], 10000)
    T.eq(child:lua([[return require('acp.agents.install').installed('bin-agent').cmd]]), work .. '/agents/bin-agent/bin/agent')
    T.eq(runs(), '2.0.0')
    T.eq(vim.fn.readdir(work .. '/agents'), { 'bin-agent' }, 'no staging folder left')
    -- An agent that is not installed: said so, nothing started.
    child:lua([[_G.notes = {}]])
    child:cmd('AcpUpdate other')
    T.eq(child:lua([[return _G.notes[1].msg]]), 'acp.nvim: other is not installed: nothing to update (:AcpInstall other)')
  end },

  { 'registry ids are presets; user config overrides them, false removes one', function()
    local child = Child.new()
    local r = child:lua([[
      local agents = require('acp.agents')
      local before = agents.names()
      require('acp').setup({ agents = { opencode = false, ['qwen-code'] = { env = { X = '1' } } } })
      local after = agents.names()
      local _, err = agents.resolve('auggie')
      return { before = vim.tbl_contains(before, 'auggie') and vim.tbl_contains(before, 'claude'),
               opencode = vim.tbl_contains(after, 'opencode'), err = err,
               chat = vim.fn.getcompletion('AcpChat aug', 'cmdline') }
    ]])
    T.eq(r.before, true)
    T.eq(r.opencode, false)
    T.eq(r.err, 'acp.nvim: agent `auggie` is not installed: run :AcpInstall auggie')
    T.eq(r.chat, { 'auggie' })
    T.match(child:lua([[return select(2, pcall(require('acp.config').setup, { default_agent = 'nope' }))]]), 'not in `agents`')
  end },

  -- Health ------------------------------------------------------------------------------------

  { ':checkhealth acp with one present and one missing agent', function()
    local child = Child.new()
    child:lua([[require('acp').setup({
      default_agent = 'present',
      agents = {
        present = { cmd = ..., args = { '--scenario', select(2, ...) } },
        missing = { cmd = 'no-such-agent-acp', install = 'npm install -g no-such-agent-acp' },
      },
      mcp_servers = { { name = 'files', command = 'no-such-mcp-server', args = {}, env = {} } },
      health = { handshake = true },
    })]], { H.agent_bin, H.scenario('chat') })
    child:cmd('checkhealth acp')
    local text = table.concat(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]), '\n')
    T.match(text, 'OK present %(default%): ' .. vim.pesc(H.agent_bin))
    T.match(text, 'present answers initialize: scripted')
    T.match(text, 'ERROR missing: `no%-such%-agent%-acp` is not in PATH')
    T.match(text, 'Install: npm install %-g no%-such%-agent%-acp')
    T.match(text, 'Tree%-sitter markdown parser: ')
    T.match(text, 'for :AcpPasteImage')
    T.match(text, 'ERROR MCP server files: command `no%-such%-mcp%-server` is not in PATH')
    T.match(text, 'agents installed from the ACP registry')
    T.match(text, 'Node%.js %(for claude')
  end, timeout = 30000 },

  -- Docs ----------------------------------------------------------------------------------------

  { 'every command, option, <Plug> mapping, highlight group, event and API function has a doc tag', function()
    local doc = T.read_file(ROOT .. '/doc/acp.txt')
    local tags = {}
    for tag in doc:gmatch('%*([^%s*]+)%*') do
      tags[tag] = true
    end
    local missing = {}
    local function need(tag)
      if not tags[tag] then
        missing[#missing + 1] = tag
      end
    end
    local plugin = T.read_file(ROOT .. '/plugin/acp.lua')
    for name in plugin:gmatch("cmd%('(Acp%w+)'") do
      need(':' .. name)
    end
    for name in plugin:gmatch("plug%([^,]+, '(Acp%w+)'") do
      need('<Plug>(' .. name .. ')')
    end
    for _, f in ipairs(vim.fn.globpath(ROOT, 'lua/**/*.lua', false, true)) do
      for name in T.read_file(f):gmatch("nvim_set_hl%(0, '(Acp%w+)'") do
        need('hl-' .. name)
      end
    end
    local child = Child.new()
    local r = child:lua([[
      local paths = {}
      local function walk(t, prefix)
        for k, v in pairs(t) do
          local p = prefix .. k
          paths[#paths + 1] = p
          if type(v) == 'table' and not vim.islist(v) and p ~= 'agents' and p ~= 'install.sources' and p ~= 'terminal.inert_env' then
            walk(v, p .. '.')
          end
        end
      end
      walk(require('acp.config').defaults, '')
      local api = {}
      for k, v in pairs(require('acp')) do
        if type(v) == 'function' and not k:match('^_') then api[#api + 1] = k end
      end
      -- What exists once every module is loaded, however it was defined (a
      -- table of groups in a loop, a list of modes), which reading the
      -- sources for one call per name misses.
      local root = ...
      for _, f in ipairs(vim.fn.globpath(root, 'lua/acp/**/*.lua', false, true)) do
        local mod = f:sub(#root + 6, -5):gsub('/init$', ''):gsub('/', '.')
        pcall(require, mod)
      end
      local hl = {}
      for name in pairs(vim.api.nvim_get_hl(0, {})) do
        if name:match('^Acp') then hl[#hl + 1] = name end
      end
      local plugs = {}
      for _, mode in ipairs({ 'n', 'x', 's', 'o', 'i', 'c', 't' }) do
        for _, m in ipairs(vim.api.nvim_get_keymap(mode)) do
          local name = m.lhs:match('^<Plug>%((Acp%w+)%)$')
          if name then plugs[name] = true end
        end
      end
      return { options = paths, events = require('acp.events').names, api = api, hl = hl, plugs = vim.tbl_keys(plugs) }
    ]], { ROOT })
    for _, p in ipairs(r.options) do
      need('acp-config-' .. p)
    end
    for _, e in ipairs(r.events) do
      need(e)
    end
    for _, f in ipairs(r.api) do
      need('acp.' .. f .. '()')
    end
    T.truthy(#r.hl > 10 and #r.plugs > 10, 'the loaded modules define the groups and mappings')
    for _, name in ipairs(r.hl) do
      need('hl-' .. name)
    end
    for _, name in ipairs(r.plugs) do
      need('<Plug>(' .. name .. ')')
    end
    table.sort(missing)
    T.eq(missing, {}, 'names without a tag in doc/acp.txt')
  end },
}
