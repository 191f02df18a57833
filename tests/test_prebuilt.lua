-- Prebuilt cores: `build()` installs the release's core for the platform
-- (checked against SHA256SUMS and this checkout's sources, renamed into
-- place) and falls back to cargo when there is none; `:checkhealth acp`
-- says where the core came from. A local HTTP server on 127.0.0.1 serves
-- release layouts; the plugin runs from a temporary copy (its own target/),
-- with a fake cargo on PATH, so no real compile happens and this
-- checkout's own library is never replaced.
local T = require('tests.helpers.expect')
local Child = require('tests.helpers.child')

local uv = vim.uv or vim.loop
local ROOT = vim.env.ACP_ROOT
local VERSION = '0.1.0'

local S = {} -- state shared by the cases (set up once)

local function sha256(path)
  return (vim.fn.system({ 'sha256sum', path }):match('^(%x+)'))
end

local function copy(from, to)
  vim.fn.mkdir(vim.fs.dirname(to), 'p')
  T.write_file(to, assert(T.read_file(from)))
end

--- A release `name` under the server root: `files` maps asset names to
--- their contents, `sums` is the SHA256SUMS text (nil: none).
local function release(name, files, sums, cut)
  local dir = ('%s/%s/v%s'):format(S.www, name, VERSION)
  vim.fn.mkdir(dir, 'p')
  for asset, data in pairs(files) do
    T.write_file(dir .. '/' .. asset, data)
  end
  if sums then
    T.write_file(dir .. '/SHA256SUMS', sums)
  end
  if cut then
    T.write_file(dir .. '/' .. cut .. '.cut', '')
  end
  return ('http://127.0.0.1:%d/%s'):format(S.port, name)
end

--- `s` as a Lua pattern that matches it literally.
local function esc(s)
  return (s:gsub('%p', '%%%0'))
end

local function requests()
  return vim.split(T.read_file(S.www .. '/requests.log') or '', '\n', { trimempty = true })
end

--- A child Neovim running the plugin copy, its library replaced by
--- `old` (nil: none) and its cargo a fake one (which copies the real core
--- into place when `cargo_copies`).
local function core_files()
  local out = {}
  for _, name in ipairs(vim.fn.readdir(S.release_dir)) do
    if name:find('acp_core', 1, true) then
      out[#out + 1] = S.release_dir .. '/' .. name
    end
  end
  return out
end

local function start(opts)
  opts = opts or {}
  for _, f in ipairs(core_files()) do
    os.remove(f)
  end
  if opts.old then
    T.write_file(S.lib, opts.old)
  end
  os.remove(S.cargo_log)
  local child = Child.new({
    cwd = S.plugin,
    env = {
      ACP_ROOT = S.plugin,
      PATH = S.plugin .. '/fakebin:' .. vim.env.PATH,
      CARGO_TARGET_DIR = false,
      ACP_FAKE_CARGO_LOG = S.cargo_log,
      ACP_FAKE_CARGO_COPY = opts.cargo_copies and S.real or '',
    },
  })
  child:lua([[
    _G.notes, _G.renames, _G.outputs = {}, {}, {}
    vim.notify = function(msg) table.insert(_G.notes, msg) end
    local rename = vim.uv.fs_rename
    vim.uv.fs_rename = function(a, b, ...)
      table.insert(_G.renames, { a, b })
      return rename(a, b, ...)
    end
    local system = vim.system
    vim.system = function(cmd, ...)
      for i, a in ipairs(cmd) do
        if a == '--output' then table.insert(_G.outputs, cmd[i + 1]) end
      end
      return system(cmd, ...)
    end
    require('acp.core').build_log = ...
  ]], { S.build_log })
  return child
end

--- Runs build() with release base `url` (and build options `opts`);
--- returns what the handle says at the end.
local function build(child, url, opts)
  child:lua([[
    local url, opts = ...
    require('acp').setup({ prebuilt = { url = url } })
    _G.done = nil
    _G.h = require('acp').build(opts, function(ok) _G.done = ok end)
  ]], { url, opts or vim.empty_dict() })
  child:wait_for('_G.done ~= nil', 20000)
  return child:lua('return { ok = _G.h.ok, message = _G.h.message, done = _G.done }')
end

local function health(child)
  child:cmd('checkhealth acp')
  return table.concat(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]), '\n')
end

--- Nothing but the library itself (no download left half-written) in its
--- directory, and the library holds `want`.
local function only_library(want)
  local left = {}
  for _, f in ipairs(core_files()) do
    if f ~= S.lib and f ~= S.lib .. '.origin' then
      left[#left + 1] = f
    end
  end
  T.eq(left, {})
  T.eq(T.read_file(S.lib) == want, true, 'the library holds what it should')
end

local function fell_back_to_cargo(res, why)
  T.eq(res.ok, true)
  T.match(res.message, '^acp%.nvim: no prebuilt core %(' .. why)
  T.match(T.read_file(S.build_log), 'prebuilt core: ' .. why)
  T.match(T.read_file(S.build_log), '%$ cargo build %-%-release')
  T.match(T.read_file(S.cargo_log) or '', 'fake cargo build %-%-release')
end

return {
  setup = function()
    S.real = ROOT .. '/target/release/libacp_core.so'
    S.core = assert(T.read_file(S.real), 'no built core: make build')
    -- The plugin's files, as a plugin manager checks them out.
    S.plugin = T.tmpdir('plugin')
    for _, d in ipairs({ 'lua', 'plugin', 'src', 'doc' }) do
      vim.fn.system({ 'cp', '-R', ROOT .. '/' .. d, S.plugin .. '/' .. d })
    end
    for _, f in ipairs({ 'Cargo.toml', 'Cargo.lock', 'build.rs' }) do
      copy(ROOT .. '/' .. f, S.plugin .. '/' .. f)
    end
    vim.fn.delete(S.plugin .. '/doc/tags')
    T.write_file(S.plugin .. '/fakebin/cargo', {
      '#!/bin/sh',
      'echo "fake cargo $*" >> "$ACP_FAKE_CARGO_LOG"',
      'if [ -n "$ACP_FAKE_CARGO_COPY" ]; then',
      '  mkdir -p target/release && cp "$ACP_FAKE_CARGO_COPY" target/release/libacp_core.so',
      'fi',
      'echo "    Finished release [optimized] target(s)"',
    })
    vim.fn.setfperm(S.plugin .. '/fakebin/cargo', 'rwxr-xr-x')
    S.release_dir = S.plugin .. '/target/release'
    S.lib = S.release_dir .. '/libacp_core.so'
    vim.fn.mkdir(S.release_dir, 'p')
    local logs = T.tmpdir('prebuilt-logs')
    S.build_log, S.cargo_log = logs .. '/build.log', logs .. '/cargo.log'
    -- The stamp of the copied sources is the one built into the core.
    -- (the runner's acp.core hashes this checkout's sources: the same files)
    local stamp = require('acp.core').source_stamp()
    T.eq(#stamp, 64, stamp)
    T.eq(S.core:find(stamp, 1, true) ~= nil, true, 'target/release/libacp_core.so is stale: make build')
    S.other = S.core:gsub(stamp, ('0'):rep(64))
    -- The server.
    S.www = T.tmpdir('www')
    S.server = vim.system({ 'python3', ROOT .. '/tests/helpers/release_server.py', S.www }, {
      stdout = function(_, data)
        S.port = S.port or tonumber((data or ''):match('(%d+)'))
      end,
    })
    vim.wait(5000, function()
      return S.port ~= nil
    end, 20)
    assert(S.port, 'the release server did not start')
    -- The release's names (.github/workflows/release.yml): linux-x86_64, ...
    local u = uv.os_uname()
    local arch = ({ x86_64 = 'x86_64', aarch64 = 'aarch64', arm64 = 'aarch64' })[u.machine]
    S.platform = ({ Linux = 'linux', Darwin = 'macos' })[u.sysname] .. '-' .. arch
    S.asset = ('libacp_core-v%s-%s.%s'):format(VERSION, S.platform, u.sysname == 'Darwin' and 'dylib' or 'so')
    local function sums(lines)
      return table.concat(lines, '\n') .. '\n'
    end
    local tmp = T.tmpdir('hash') .. '/x'
    local function hash_of(data)
      T.write_file(tmp, data)
      return sha256(tmp)
    end
    local good = hash_of(S.core)
    local elsewhere = ('%s  libacp_core-v%s-macos-riscv.dylib'):format(('a'):rep(64), VERSION)
    S.url = {
      good = release('good', { [S.asset] = S.core, SOURCE_STAMP = stamp .. '\n' }, sums({ elsewhere, good .. '  ' .. S.asset })),
      badsum = release('badsum', { [S.asset] = S.core }, sums({ ('b'):rep(64) .. '  ' .. S.asset })),
      noplat = release('noplat', {}, sums({ elsewhere })),
      cut = release('cut', { [S.asset] = S.core }, sums({ good .. '  ' .. S.asset }), S.asset),
      -- A release of other sources that says so (SOURCE_STAMP), and an
      -- older one that does not.
      other = release('other', { [S.asset] = S.other, SOURCE_STAMP = ('0'):rep(64) .. '\n' }, sums({ hash_of(S.other) .. ' *' .. S.asset })),
      other_unsaid = release('other_unsaid', { [S.asset] = S.other }, sums({ hash_of(S.other) .. ' *' .. S.asset })),
      none = ('http://127.0.0.1:%d/none'):format(S.port),
    }
  end,

  teardown = function()
    if S.server then
      S.server:kill(9)
    end
  end,

  { "a release's core for this checkout is installed, loads, and health says it came prebuilt", function()
    local child = start({ old = 'OLD CORE' })
    local res = build(child, S.url.good)
    T.eq(res.ok, true)
    T.match(res.message, '^' .. esc(('acp.nvim: prebuilt core v%s (%s) installed in '):format(VERSION, S.platform)) .. '%d+ s$')
    -- curl wrote elsewhere in the same directory; one rename put it in place.
    local r = child:lua('return { renames = _G.renames, outputs = _G.outputs }')
    T.eq(#r.outputs, 1)
    T.eq(vim.fs.dirname(r.outputs[1]), S.release_dir)
    T.eq(r.outputs[1] ~= S.lib, true)
    T.eq(r.renames[1], { r.outputs[1], S.lib })
    only_library(S.core)
    T.eq(T.read_file(S.cargo_log), nil)
    -- The loader takes it (it checks the stamp against these sources).
    T.eq(child:lua([[local c, err = require('acp.core').load(); return c and require('acp.core').path or err]]), S.lib)
    T.match(health(child), esc(('core %s: prebuilt for %s, downloaded from %s/v%s/%s'):format(VERSION, S.platform, S.url.good, VERSION, S.asset)))
    -- Again: SHA256SUMS says it is the same file, nothing is downloaded.
    local before = #requests()
    res = build(child, S.url.good)
    T.eq(res.message, ('acp.nvim: the prebuilt core v%s (%s) is already installed'):format(VERSION, S.platform))
    T.eq(vim.list_slice(requests(), before + 1), { ('/good/v%s/SHA256SUMS'):format(VERSION) })
  end, timeout = 60000 },

  { 'a checksum mismatch is refused: the old library stays, cargo builds', function()
    local child = start({ old = 'OLD CORE' })
    local res = build(child, S.url.badsum)
    fell_back_to_cargo(res, esc('checksum mismatch for ' .. S.asset))
    only_library('OLD CORE')
  end, timeout = 60000 },

  { 'a download cut short is refused: the old library stays, cargo builds', function()
    local child = start({ old = 'OLD CORE' })
    local res = build(child, S.url.cut)
    fell_back_to_cargo(res, esc(('the download of %s was cut short'):format(S.asset)))
    only_library('OLD CORE')
  end, timeout = 60000 },

  { 'a core built from other sources is refused with the reason, cargo builds', function()
    local child = start({ old = 'OLD CORE' })
    local res = build(child, S.url.other_unsaid)
    fell_back_to_cargo(res, esc(S.asset .. ' was built from other sources than this checkout'))
    only_library('OLD CORE')
  end, timeout = 60000 },

  { "a release whose SOURCE_STAMP is not this checkout's: nothing is downloaded, cargo builds", function()
    local child = start({ old = 'OLD CORE' })
    local before = #requests()
    local res = build(child, S.url.other)
    fell_back_to_cargo(res, esc(('release v%s was built from other sources than this checkout (its SOURCE_STAMP is %s'):format(VERSION, ('0'):rep(64))))
    T.eq(vim.list_slice(requests(), before + 1), { ('/other/v%s/SHA256SUMS'):format(VERSION), ('/other/v%s/SOURCE_STAMP'):format(VERSION) })
    only_library('OLD CORE')
  end, timeout = 60000 },

  { 'scripts/source_stamp.py (the release publishes its output) computes the stamp the loader checks', function()
    local res = vim.system({ 'python3', ROOT .. '/scripts/source_stamp.py', ROOT }, { text = true }):wait()
    T.eq(res.code, 0, res.stderr)
    T.eq(vim.trim(res.stdout), require('acp.core').source_stamp())
  end },

  { 'no core for the platform: nothing is downloaded, cargo builds, health says built here', function()
    local child = start({ cargo_copies = true })
    local before = #requests()
    local res = build(child, S.url.noplat)
    fell_back_to_cargo(res, esc(('release v%s has no core for %s'):format(VERSION, S.platform)))
    T.eq(vim.list_slice(requests(), before + 1), { ('/noplat/v%s/SHA256SUMS'):format(VERSION) })
    T.eq(child:lua([[local c, err = require('acp.core').load(); return c and require('acp.core').path or err]]), S.lib)
    T.match(health(child), esc(('core %s: built here with cargo ('):format(VERSION)))
  end, timeout = 60000 },

  { 'no release at the URL: cargo builds, and the message says why', function()
    local child = start()
    local res = build(child, S.url.none)
    fell_back_to_cargo(res, esc(('no release v%s at '):format(VERSION)))
    T.match(res.message, '404')
  end, timeout = 60000 },

  { "build({ from = 'source' }) builds with cargo and downloads nothing", function()
    local child = start()
    local before = #requests()
    local res = build(child, S.url.good, { from = 'source' })
    T.eq(res.ok, true)
    T.match(res.message, '^acp%.nvim: ')
    T.no_match(res.message, 'prebuilt')
    T.no_match(T.read_file(S.build_log), 'prebuilt')
    T.eq(#requests(), before)
    T.match(T.read_file(S.cargo_log), 'fake cargo build %-%-release')
    -- Bad input is a clear error, not a traceback.
    T.eq(child:lua([[_G.notes = {}; return require('acp').build({ from = 'elsewhere' }, function() end) == nil]]), true)
    T.match(child:lua('return _G.notes[1]'), esc('acp.nvim: build(): `from` must be "source" or "prebuilt", got "elsewhere"'))
  end, timeout = 60000 },

  { 'the prebuilt option is validated', function()
    local child = Child.new()
    local errs = child:lua([[
      local out = {}
      for _, o in ipairs({ { prebuilt = { url = 'ftp://example' } }, { prebuilt = { enabled = 'yes' } }, { prebuilt = { mirror = 1 } } }) do
        local ok, err = pcall(require('acp.config').setup, o)
        out[#out + 1] = ok and 'accepted' or err
      end
      return out
    ]])
    T.match(errs[1], '`prebuilt.url` must be an http:// or https:// URL')
    T.match(errs[2], '`prebuilt.enabled` must be a boolean')
    T.match(errs[3], '`prebuilt.mirror` is not a known option')
  end },

  { 'the release workflow parses and publishes the four platforms with SHA256SUMS', function()
    local res = vim.system({
      'python3',
      '-c',
      'import json, sys, yaml; d = yaml.safe_load(open(sys.argv[1])); d["on"] = d.get("on", d.get(True)); d.pop(True, None); print(json.dumps(d))',
      ROOT .. '/.github/workflows/release.yml',
    }, { text = true }):wait()
    T.eq(res.code, 0, res.stderr)
    local wf = vim.json.decode(res.stdout)
    T.eq(wf.on.push.tags, { 'v*' })
    local prebuilt = require('acp.core.prebuilt')
    local platforms = {}
    for _, m in ipairs(wf.jobs.build.strategy.matrix.include) do
      platforms[#platforms + 1] = m.platform
      T.eq(prebuilt.asset(VERSION, m.platform), ('libacp_core-v%s-%s.%s'):format(VERSION, m.platform, m.ext))
    end
    table.sort(platforms)
    T.eq(platforms, { 'linux-aarch64', 'linux-x86_64', 'macos-aarch64', 'macos-x86_64' })
    local text = T.read_file(ROOT .. '/.github/workflows/release.yml')
    T.match(text, 'libacp_core%-%${GITHUB_REF_NAME}%-%${{ matrix%.platform }}%.%${{ matrix%.ext }}')
    T.match(text, 'sha256sum libacp_core%-%* > SHA256SUMS')
    T.match(text, 'python3 scripts/source_stamp%.py > dist/SOURCE_STAMP')
    T.eq(wf.jobs.publish.permissions.contents, 'write')
    T.eq(wf.jobs.publish.needs, 'build')
  end },
}
