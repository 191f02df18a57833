--- Building the Rust core: `cargo build --release` in the background, with
--- a progress line that updates, a clear end message, the whole output in
--- the build log (`:AcpLog build`), and a handle that plugin managers (and
--- headless bootstraps) can wait on. It asks the facade (`acp.core`) where
--- the plugin and its build log are; the facade never calls it back:
--- `acp.build()` starts it directly.
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

local NOTE = { id = 'acp.build', title = 'acp.nvim' }

--- Shows `msg` as the build's one notification line: notifiers that know
--- `id` (snacks, fidget, mini.notify) or `replace` (nvim-notify) update it
--- in place.
local function note(h, msg, level)
  local opts = vim.tbl_extend('force', NOTE, { replace = h._note })
  local ok, rec = pcall(vim.notify, msg, level or vim.log.levels.INFO, opts)
  if ok and (type(rec) == 'table' or type(rec) == 'number') then
    h._note = rec
  end
end

local function finish(h, ok, code, message)
  h.done, h.ok, h.code, h.message = true, ok, code, message
  note(h, message, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
  for _, fn in ipairs(h.callbacks) do
    local cok, err = pcall(fn, ok)
    if not cok then
      vim.notify('acp.nvim: ' .. tostring(err), vim.log.levels.ERROR)
    end
  end
end

--- The last `error...` line of cargo's output (the reason, for the message).
local function last_error(lines)
  for i = #lines, 1, -1 do
    if lines[i]:match('^error') then
      return lines[i]
    end
  end
end

--- Starts `cargo build --release` in the plugin's directory (or joins the
--- running build). `on_done(ok)` runs on the main loop when it ends.
---@param on_done? fun(ok: boolean)
---@return acp.BuildHandle
function M.run(on_done)
  if current and not current.done then
    if on_done then
      table.insert(current.callbacks, on_done)
    end
    vim.notify('acp.nvim: a build is already running (:AcpLog build)', vim.log.levels.WARN)
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
        local restart = core.is_loaded() and '; restart Neovim to use it' or ''
        finish(h, true, 0, ('acp.nvim: core built in %d s%s'):format(secs, restart))
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

return M
