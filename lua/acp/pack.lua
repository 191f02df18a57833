--- The `PackChanged` hook for Neovim's built-in plugin manager (vim.pack):
--- builds the core once per change of the plugin's directory, whatever the
--- directory is called (a fork, a renamed clone). vim.pack fires the event
--- while the plugin is not yet on the 'runtimepath', and on a first install
--- it fires twice (`update`, then `install`) for the same checkout, so the
--- user's autocmd loads this file by its path and calls `changed()`:
---
---   local hook = ev.data.path .. '/lua/acp/pack.lua'
---   if vim.uv.fs_stat(hook) then dofile(hook).changed(ev.data) end
---
--- Loaded by path any number of times, it is one module: the builds it
--- started are remembered across calls.
-- May use: init, core.
local M = package.loaded['acp.pack'] or {}
package.loaded['acp.pack'] = M
if M.changed then
  return M
end

local uv = vim.uv or vim.loop

--- Builds started, by plugin directory and checked-out commit.
M.seen = {}

local function read_line(path)
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  local line = f:read('*l')
  f:close()
  return line
end

--- The commit checked out in `dir` (vim.pack keeps a detached HEAD), or ''
--- when it cannot be read.
local function head(dir)
  local line = read_line(dir .. '/.git/HEAD') or ''
  local ref = line:match('^ref:%s*(%S+)')
  if ref then
    return read_line(dir .. '/.git/' .. ref) or line
  end
  return line
end

--- Handles one `PackChanged` event's data ({ kind, spec, path }): builds
--- the core of the plugin at `data.path` with `build():wait()`, once per
--- checkout (a first install's `update` + `install` build once, and a failed
--- build is reported once). Returns the build's `ok` and message, or nil
--- when nothing was built.
---@param data { kind: 'install'|'update'|'delete', path: string }
---@return boolean? ok
---@return string? message
function M.changed(data)
  if type(data) ~= 'table' or data.kind == 'delete' or type(data.path) ~= 'string' then
    return nil
  end
  local root = vim.fs.normalize(data.path)
  if not uv.fs_stat(root .. '/lua/acp/pack.lua') then
    return nil
  end
  local key = root .. '\n' .. head(root)
  if M.seen[key] then
    return nil
  end
  M.seen[key] = true
  -- vim.pack adds the plugin to the 'runtimepath' only after the event.
  if not package.loaded['acp.core'] and not vim.tbl_contains(vim.api.nvim_list_runtime_paths(), root) then
    vim.opt.runtimepath:prepend(root)
  end
  local core = require('acp.core')
  if vim.fs.normalize(core.root()) ~= root then
    local msg = ('acp.nvim: not building %s: another copy of the plugin is loaded (%s); run :AcpBuild after a restart'):format(
      root,
      core.root()
    )
    vim.notify(msg, vim.log.levels.WARN)
    return false, msg
  end
  -- The build (a prebuilt core, else cargo) reports its own end: one
  -- message, also on failure.
  return require('acp').build():wait()
end

return M
