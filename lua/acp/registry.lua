--- The ACP registry (https://github.com/agentclientprotocol/registry) as
--- this plugin reads it: the snapshot shipped next to this file
--- (registry.json, refreshed with scripts/refresh_registry.lua), or a
--- registry file the user names (`install.registry`). Each file is read
--- once. It requires nothing of the plugin: `acp.config` checks agent names
--- against it and the agents layer (presets, `:AcpInstall`) reads its
--- entries, so it sits below both.
-- May use: nothing.
local M = {}

--- The shipped snapshot.
M.snapshot = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/registry.json'

--- The JSON value in file `path`, or nil when it cannot be read or parsed.
function M.read_json(path)
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  local ok, data = pcall(vim.json.decode, f:read('*a'))
  f:close()
  return ok and data or nil
end

local cache = {}

--- The registry in file `path` (nil or false: the snapshot); an unreadable
--- file reads as a registry without agents.
---@param path? string|false
function M.read(path)
  path = path or M.snapshot
  if not cache[path] then
    cache[path] = M.read_json(path) or { agents = {} }
  end
  return cache[path]
end

--- An entry of the ACP registry (FORMAT.md of the registry).
---@class acp.RegistryEntry
---@field id string
---@field name string
---@field version string
---@field description string
---@field distribution { npx?: acp.RegistryPackage, uvx?: acp.RegistryPackage, binary?: table<string, acp.RegistryBinary> }

---@class acp.RegistryPackage
---@field package string `name@version`
---@field args? string[]
---@field env? table<string, string>
---@field bin? string The script to run (a bin name or a path in the package), when not its default bin.

---@class acp.RegistryBinary
---@field archive string
---@field cmd string
---@field args? string[]
---@field env? table<string, string>
---@field sha256? string

--- The entry `id` of the registry in file `path` (nil or false: the snapshot).
---@param id string
---@param path? string|false
---@return acp.RegistryEntry?
function M.entry(id, path)
  for _, e in ipairs(M.read(path).agents or {}) do
    if e.id == id then
      return e
    end
  end
end

return M
