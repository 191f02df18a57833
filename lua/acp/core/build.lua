--- Building the Rust core: `cargo build --release` in the background, with
--- a progress line that updates, a clear end message, the whole output in
--- the build log (`:AcpLog build`), and a handle that plugin managers (and
--- headless bootstraps) can wait on. It asks the facade (`acp.core`) where
--- the plugin and its build log are; the facade never calls it back:
--- `acp.build()` starts it directly.

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

local M = {}

local uv = vim.uv or vim.loop

--- A running or finished build.
---@class acp.BuildHandle
---@field done boolean The build ended.
---@field ok? boolean It succeeded (nil while it runs).
---@field code? integer cargo's exit code (nil when cargo could not start).
---@field message? string The end message shown to the user.
---@field log string Path of the build log.
---@field crates integer Crates compiled so far.
---@field outcome? string A successful cargo run's end message, short.
---@field callbacks fun(ok: boolean)[]
---@field started integer uv.now() at the start.
local Handle = {}
Handle.__index = Handle

--- Waits until the build ends, processing events meanwhile (so progress
--- shows and the callbacks run); `timeout_ms` defaults to 15 minutes.
--- Returns `ok` and the end message, or nil and "timeout".
---@param timeout_ms? integer
---@return boolean? ok
---@return string message
function Handle:wait(timeout_ms)
  vim.wait(timeout_ms or 15 * 60 * 1000, function()
    return self.done
  end, 50)
  if not self.done then
    return nil, 'timeout'
  end
  return self.ok, self.message
end

local current ---@type acp.BuildHandle?

local NOTE = { id = 'acp.build', key = 'acp.build', title = 'acp.nvim' }

--- Whether `vim.notify` is Neovim's own (an echo kept in `:messages`)
--- rather than a notifier plugin's.
local function plain_notify()
  local info = debug.getinfo(vim.notify, 'S')
  return info ~= nil and info.source:find('vim/_editor.lua', 1, true) ~= nil
end

--- `msg` on one line that fits the echo area.
local function one_line(msg)
  msg = msg:gsub('[%c]', ' ')
  local room = math.max(vim.v.echospace, 10)
  if vim.fn.strdisplaywidth(msg) <= room then
    return msg
  end
  local n = room - 1
  repeat
    local cut = vim.fn.strcharpart(msg, 0, n)
    if vim.fn.strdisplaywidth(cut) < room then
      return cut .. '…'
    end
    n = n - 1
  until n <= 0
  return ''
end

--- Shows `msg` as the build's one progress line. Notifiers that know `id`
--- (snacks, noice, mini.notify), `key` (fidget) or `replace` (nvim-notify)
--- update one notification in place. Without a notifier the line goes to
--- the echo area, cut to fit and kept out of `:messages`: fifty progress
--- notes never pile up into a hit-enter prompt that stops an install.
local function note(h, msg, level)
  if plain_notify() then
    pcall(vim.api.nvim_echo, { { one_line(msg) } }, false, {})
    -- Shown at once, also while a plugin manager waits on the build.
    pcall(vim.api.nvim__redraw, { flush = true })
    return
  end
  local opts = vim.tbl_extend('force', NOTE, { replace = h._note })
  local ok, rec = pcall(notify, msg, level or vim.log.levels.INFO, opts)
  if ok and (type(rec) == 'table' or type(rec) == 'number') then
    h._note = rec
  end
end

local function finish(h, ok, code, message)
  h.done, h.ok, h.code, h.message = true, ok, code, message
  if plain_notify() then
    -- The end message alone goes to `:messages`. A success stays on one
    -- line (a longer one would stop at a hit-enter prompt): its outcome,
    -- with the details in the build log.
    if ok and vim.fn.strdisplaywidth(message) > math.max(vim.v.echospace, 10) then
      message = one_line((h.outcome or message) .. ' (:AcpLog build)')
    end
    notify(message, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
  else
    note(h, message, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
  end
  for _, fn in ipairs(h.callbacks) do
    local cok, err = pcall(fn, ok)
    if not cok then
      notify('acp.nvim: ' .. tostring(err), vim.log.levels.ERROR)
    end
  end
end

local function same_file(a, b)
  return a ~= nil
    and b ~= nil
    and a.ino == b.ino
    and a.size == b.size
    and a.mtime.sec == b.mtime.sec
    and a.mtime.nsec == b.mtime.nsec
end

--- The end message of a cargo run that succeeded after compiling `crates`
--- crates in `secs` s: "already built" when there was nothing to rebuild;
--- a restart only when the library on disk is not the one loaded.
local function built_message(core, crates, secs)
  local replaced = false
  if core.is_loaded() then
    local lib = core.candidates()[1]
    replaced = crates > 0
      or (lib ~= core.path and uv.fs_stat(lib) ~= nil)
      or not same_file(uv.fs_stat(core.path), core.loaded_stat)
  end
  local restart = replaced and '; restart Neovim to use it' or ''
  if crates == 0 then
    return ('acp.nvim: the core is already built%s'):format(replaced and restart or ' (nothing to rebuild)')
  end
  return ('acp.nvim: core built in %d s%s'):format(secs, restart)
end

--- The last `error...` line of cargo's output (the reason, for the message).
local function last_error(lines)
  for i = #lines, 1, -1 do
    if lines[i]:match('^error') then
      return lines[i]
    end
  end
end

--- Runs `cargo build --release` for build handle `h` (its log open as
--- `log`); `why` says why no prebuilt core was installed (it prefixes the
--- end message). A successful build records the core's origin (health).
local function cargo(h, log, core, why)
  local finish = function(h2, ok, code, message)
    if ok then
      pcall(require('acp.core.prebuilt').record, core.candidates()[1], { from = 'source' })
    end
    if why then
      message = message:gsub('^acp%.nvim: ', function()
        return ('acp.nvim: no prebuilt core (%s); '):format(why)
      end, 1)
    end
    return finish(h2, ok, code, message)
  end
  if why then
    log:write(('no prebuilt core: %s\n\n'):format(why))
  end
  log:write(('$ cargo build --release  (in %s)\n'):format(core.root()))
  log:flush()
  if vim.fn.executable('cargo') ~= 1 then
    log:write('cargo was not found in PATH\n')
    log:close()
    finish(h, false, nil, 'acp.nvim: building needs cargo (Rust, https://rustup.rs); it is not in PATH')
    return h
  end
  local tail, partial, last_note = {}, '', 0
  local function output(_, data)
    if not data then
      return
    end
    log:write(data)
    log:flush()
    local text = partial .. data
    local lines = vim.split(text, '\n', { plain = true })
    partial = table.remove(lines)
    local crate
    for _, l in ipairs(lines) do
      local name = l:match('^%s*Compiling (%S+)')
      if name then
        h.crates = h.crates + 1
        crate = name
      end
      tail[#tail + 1] = l
      if #tail > 50 then
        table.remove(tail, 1)
      end
    end
    local now = uv.now()
    if crate and now - last_note >= 1000 then
      last_note = now
      local msg = ('acp.nvim: building the core: %d crates compiled (%s)'):format(h.crates, crate)
      vim.schedule(function()
        if not h.done then
          note(h, msg)
        end
      end)
    end
  end
  note(h, 'acp.nvim: building the core (cargo build --release; :AcpLog build to follow)')
  local ok, err = pcall(vim.system, { 'cargo', 'build', '--release' }, {
    cwd = core.root(),
    stdout = output,
    stderr = output,
  }, function(res)
    if partial ~= '' then
      tail[#tail + 1] = partial
    end
    log:write(('\nexit code %d\n'):format(res.code))
    log:close()
    local secs = math.floor((uv.now() - h.started) / 1000 + 0.5)
    vim.schedule(function()
      if res.code == 0 then
        h.outcome = built_message(core, h.crates, secs)
        finish(h, true, 0, h.outcome)
      else
        local why = last_error(tail)
        finish(
          h,
          false,
          res.code,
          ('acp.nvim: build failed (exit %d)%s; log: :AcpLog build (%s)'):format(
            res.code,
            why and (': ' .. why) or '',
            h.log
          )
        )
      end
    end)
  end)
  if not ok then
    log:write(tostring(err) .. '\n')
    log:close()
    finish(h, false, nil, 'acp.nvim: cannot start cargo: ' .. tostring(err))
  end
  return h
end

--- Builds the core (or joins the running build): first the prebuilt core
--- of this version for the platform (lua/acp/core/prebuilt.lua), unless
--- `opts.from == 'source'` or `opts.prebuilt.enabled == false`, then
--- `cargo build --release` in the plugin's directory when there is none.
--- `on_done(ok)` runs on the main loop when it ends. `opts` may be left out.
---@param opts? { from?: 'source'|'prebuilt', prebuilt?: { enabled: boolean, url: string } }|fun(ok: boolean)
---@param on_done? fun(ok: boolean)
---@return acp.BuildHandle
function M.run(opts, on_done)
  if type(opts) == 'function' then
    opts, on_done = {}, opts
  end
  opts = opts or {}
  if current and not current.done then
    if on_done then
      table.insert(current.callbacks, on_done)
    end
    notify('acp.nvim: a build is already running (:AcpLog build)', vim.log.levels.WARN)
    return current
  end
  local core = require('acp.core')
  local h = setmetatable({
    done = false,
    log = core.build_log,
    crates = 0,
    callbacks = { on_done },
    started = uv.now(),
  }, Handle)
  current = h
  -- `:help acp` works whatever the plugin manager does about help tags.
  core.helptags()
  vim.fn.mkdir(vim.fn.fnamemodify(h.log, ':h'), 'p')
  local log = io.open(h.log, 'w')
  if not log then
    finish(h, false, nil, 'acp.nvim: cannot write the build log ' .. h.log)
    return h
  end
  local pre = opts.prebuilt
  if opts.from ~= 'source' and pre and pre.enabled ~= false and pre.url then
    require('acp.core.prebuilt').install(h, log, pre.url, function(ok, message)
      if ok then
        log:close()
        finish(h, true, 0, message)
      else
        note(h, ('acp.nvim: no prebuilt core (%s); building with cargo'):format(message))
        cargo(h, log, core, message)
      end
    end)
    return h
  end
  return cargo(h, log, core)
end

return M
