--- Prebuilt cores: `build()` first installs the core a release publishes
--- for this platform and version, so that no Rust toolchain is needed.
---
--- A release (`.github/workflows/release.yml`, on a tag `v<version>`)
--- publishes `libacp_core-v<version>-<os>-<arch>.<so|dylib>` for
--- linux-x86_64, linux-aarch64, macos-x86_64 and macos-aarch64, and a
--- `SHA256SUMS` file, under `<url>/v<version>/` (the `prebuilt.url`
--- option). Installing one: fetch SHA256SUMS, find this platform's asset,
--- download it (curl) to a temporary file beside the library, check its
--- SHA-256 against SHA256SUMS and that it carries the source stamp of this
--- checkout (the stamp the loader checks, lua/acp/core/init.lua: a release
--- core fits only the sources of its own tag), then rename it into place.
--- The library the loader reads is never half-written: a failed step
--- removes the temporary file and leaves the old library alone. Every step
--- runs as a job or a libuv request; the main loop never waits.
---
--- Each install (prebuilt or cargo) writes a small origin record beside
--- the library (`<library>.origin`), which `:checkhealth acp` reads.
local M = {}

local uv = vim.uv or vim.loop

--- The release platform name of this machine (`linux-x86_64`, ...), or nil
--- and a description of the machine when releases have none for it.
---@return string? platform
---@return string? machine
function M.platform()
  local u = uv.os_uname()
  local os = ({ Linux = 'linux', Darwin = 'macos' })[u.sysname]
  local arch = ({ x86_64 = 'x86_64', amd64 = 'x86_64', aarch64 = 'aarch64', arm64 = 'aarch64' })[u.machine]
  if os and arch then
    return os .. '-' .. arch
  end
  return nil, ('%s %s'):format(u.sysname, u.machine)
end

--- The release asset name of the core for `version` and `platform`.
---@param version string e.g. "0.1.0"
---@param platform string e.g. "linux-x86_64"
function M.asset(version, platform)
  local ext = platform:match('^macos') and 'dylib' or 'so'
  return ('libacp_core-v%s-%s.%s'):format(version, platform, ext)
end

--- Where the origin record of library `lib` is kept.
function M.origin_path(lib)
  return lib .. '.origin'
end

local function lib_id(lib)
  local st = uv.fs_stat(lib)
  return st and ('%d %d.%d'):format(st.size, st.mtime.sec, st.mtime.nsec) or nil
end

--- Records where library `lib` came from: `{ from = 'prebuilt', url =,
--- version =, platform =, sha256 = }` or `{ from = 'source' }`. The record
--- holds the library's size and time, so a library replaced later (a
--- `cargo build` by hand) is not described by an old record.
---@param lib string
---@param info table
function M.record(lib, info)
  local rec = vim.tbl_extend('force', info, { file = lib_id(lib), at = os.date('!%Y-%m-%dT%H:%M:%SZ') })
  local path = M.origin_path(lib)
  local tmp = path .. '.' .. uv.os_getpid()
  local f = assert(io.open(tmp, 'wb'))
  f:write(vim.json.encode(rec))
  f:close()
  assert(uv.fs_rename(tmp, path))
end

--- The origin record of library `lib`, or nil when there is none or it
--- describes another file than the one there now.
---@param lib string
---@return table?
function M.origin(lib)
  local f = io.open(M.origin_path(lib), 'rb')
  if not f then
    return nil
  end
  local text = f:read('*a')
  f:close()
  local ok, rec = pcall(vim.json.decode, text)
  if not ok or type(rec) ~= 'table' or rec.file == nil or rec.file ~= lib_id(lib) then
    return nil
  end
  return rec
end

--- The first line of a job's error output, or its exit code.
local function reason(res)
  local line = vim.trim(((res.stderr or '') ~= '' and res.stderr or res.stdout or ''):match('^[^\n]*') or '')
  return line ~= '' and line or ('exit code ' .. tostring(res.code))
end

--- Runs `cmd` as a job; `cb(res)` runs on the main loop.
local function job(cmd, cb)
  require('acp.util.job').run(cmd, nil, cb)
end

--- Reads file `path` with libuv requests; `cb(data_or_nil, err)` runs on
--- the main loop.
local function read_async(path, cb)
  local function done(data, err)
    vim.schedule(function()
      cb(data, err)
    end)
  end
  uv.fs_open(path, 'r', 438, function(oerr, fd)
    if not fd then
      return done(nil, oerr)
    end
    uv.fs_fstat(fd, function(serr, st)
      if not st then
        uv.fs_close(fd)
        return done(nil, serr)
      end
      uv.fs_read(fd, st.size, 0, function(rerr, data)
        uv.fs_close(fd)
        done(data, rerr)
      end)
    end)
  end)
end

--- The SHA-256 of file `path` (`sha256sum`, `shasum -a 256` or `openssl
--- dgst`, as a job; vim.fn.sha256 cannot hash a binary: it refuses a Lua
--- string holding NUL); `cb(hex_or_nil, err)`.
local function sha256_file(path, cb)
  local cmd
  if vim.fn.executable('sha256sum') == 1 then
    cmd = { 'sha256sum', path }
  elseif vim.fn.executable('shasum') == 1 then
    cmd = { 'shasum', '-a', '256', path }
  elseif vim.fn.executable('openssl') == 1 then
    cmd = { 'openssl', 'dgst', '-sha256', '-r', path }
  end
  if not cmd then
    return cb(nil, 'no SHA-256 tool (sha256sum, shasum or openssl) in PATH to check it')
  end
  job(cmd, function(res)
    local hex = res.code == 0 and res.stdout:match('^(%x+)')
    if hex and #hex == 64 then
      cb(hex:lower())
    else
      cb(nil, reason(res))
    end
  end)
end

--- Installs the prebuilt core for this platform and version from release
--- base URL `url`, writing each step to the open build `log`.
--- `on_done(true, message)` when it is in place, `on_done(false, why)`
--- when not (the caller then builds with cargo). Never raises.
---@param h acp.BuildHandle
---@param log file*
---@param url string
---@param on_done fun(ok: boolean, message: string)
function M.install(h, log, url, on_done)
  local core = require('acp.core')
  local version = core.VERSION
  local tag = 'v' .. version
  local lib = core.candidates()[1]
  local tmp
  local function say(line)
    pcall(function()
      log:write(line .. '\n')
      log:flush()
    end)
  end
  local function fail(why)
    if tmp then
      pcall(os.remove, tmp)
    end
    say('prebuilt core: ' .. why)
    on_done(false, why)
  end
  local platform, machine = M.platform()
  if not platform then
    return vim.schedule(function()
      fail(('releases have no prebuilt core for %s'):format(machine))
    end)
  end
  if vim.fn.executable('curl') ~= 1 then
    return vim.schedule(function()
      fail('curl is not in PATH')
    end)
  end
  local asset = M.asset(version, platform)
  local base = url:gsub('/+$', '') .. '/' .. tag .. '/'
  local curl = { 'curl', '--fail', '--silent', '--show-error', '--location', '--connect-timeout', '15' }
  say(('$ prebuilt core %s for %s from %s'):format(tag, platform, base))
  job(vim.list_extend(vim.deepcopy(curl), { '--max-time', '60', base .. 'SHA256SUMS' }), function(res)
    if res.code ~= 0 then
      return fail(('no release %s at %s (%s)'):format(tag, base .. 'SHA256SUMS', reason(res)))
    end
    local want
    for line in res.stdout:gmatch('[^\r\n]+') do
      local hex, name = line:match('^(%x+)%s+%*?(%S+)%s*$')
      if name == asset and #hex == 64 then
        want = hex:lower()
      end
    end
    if not want then
      return fail(('release %s has no core for %s (%s is not in SHA256SUMS)'):format(tag, platform, asset))
    end
    local had = M.origin(lib)
    if had and had.from == 'prebuilt' and had.sha256 == want then
      say('already installed: ' .. lib)
      return on_done(true, ('acp.nvim: the prebuilt core %s (%s) is already installed'):format(tag, platform))
    end
    -- The release's SOURCE_STAMP (scripts/source_stamp.py) says which
    -- sources its cores were built from: a checkout between releases learns
    -- that before it downloads a core it would refuse. A release without
    -- one is checked after the download (below).
    local function download()
      local dir = vim.fs.dirname(lib)
      vim.fn.mkdir(dir, 'p')
      -- Beside the library (the same file system, so the rename is atomic),
      -- under a name the loader never reads.
      tmp = ('%s/.%s.download-%d'):format(dir, vim.fs.basename(lib), uv.os_getpid())
      say(('downloading %s to %s'):format(base .. asset, tmp))
      job(vim.list_extend(vim.deepcopy(curl), { '--max-time', '900', '--output', tmp, base .. asset }), function(dres)
        if dres.code == 18 then
          return fail(('the download of %s was cut short (%s)'):format(asset, reason(dres)))
        elseif dres.code ~= 0 then
          return fail(('the download of %s failed (%s)'):format(asset, reason(dres)))
        end
        read_async(tmp, function(data, rerr)
          if not data then
            return fail(('cannot read the download %s: %s'):format(tmp, tostring(rerr)))
          end
          sha256_file(tmp, function(have, herr)
            if not have then
              return fail(('cannot compute the SHA-256 of %s: %s'):format(tmp, tostring(herr)))
            elseif have ~= want then
              return fail(('checksum mismatch for %s (SHA256SUMS says %s, the download is %s)'):format(asset, want, have))
            end
            say('sha256 ' .. have .. ' matches SHA256SUMS')
            local stamp = core.source_stamp()
            if not data:find(stamp, 1, true) then
              return fail(
                ('%s was built from other sources than this checkout (a release core fits only its tag %s; '
                  .. 'check out that tag, or build from source)'):format(asset, tag)
              )
            end
            say('source stamp ' .. stamp .. ' matches this checkout')
            uv.fs_chmod(tmp, tonumber('755', 8))
            local ok, err = uv.fs_rename(tmp, lib)
            if not ok then
              return fail(('cannot move the download into place (%s)'):format(tostring(err)))
            end
            tmp = nil
            pcall(M.record, lib, { from = 'prebuilt', url = base .. asset, version = version, platform = platform, sha256 = have })
            say('installed ' .. lib)
            local restart = core.is_loaded() and '; restart Neovim to use it' or ''
            local secs = math.floor((uv.now() - h.started) / 1000 + 0.5)
            on_done(true, ('acp.nvim: prebuilt core %s (%s) installed in %d s%s'):format(tag, platform, secs, restart))
          end)
        end)
      end)
    end
    job(vim.list_extend(vim.deepcopy(curl), { '--max-time', '60', base .. 'SOURCE_STAMP' }), function(sres)
      local published = sres.code == 0 and sres.stdout:match('^%s*(%x+)%s*$') or nil
      local stamp = core.source_stamp()
      if published and #published == 64 and published:lower() ~= stamp then
        return fail(
          ('release %s was built from other sources than this checkout (its SOURCE_STAMP is %s, this checkout %s; '
            .. 'a release core fits only its tag: check out %s, or build from source)'):format(tag, published:lower(), stamp, tag)
        )
      end
      download()
    end)
  end)
end

return M
