--- The ACP registry (https://github.com/agentclientprotocol/registry) as
--- this plugin reads it: the snapshot shipped next to this file
--- (registry.json, refreshed with scripts/refresh_registry.lua), the copy
--- `:AcpInstall` fetched into stdpath('cache') (`install.registry_url`),
--- which replaces the snapshot once it is there, or a registry file the
--- user names (`install.registry`). Each file is read once. It requires nothing of the plugin: `acp.config` checks agent names
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

--- Where `:AcpInstall` keeps the registry it fetched (`install.registry_url`).
function M.cached()
  return vim.fn.stdpath('cache') .. '/acp/registry.json'
end

--- Why `data` is not a registry this plugin can use, or nil: a table whose
--- `agents` is a non-empty list of entries, each with a string `id`.
function M.invalid(data)
  if type(data) ~= 'table' or type(data.agents) ~= 'table' or not vim.islist(data.agents) or #data.agents == 0 then
    return 'it holds no list of agents'
  end
  for i, e in ipairs(data.agents) do
    if type(e) ~= 'table' or type(e.id) ~= 'string' or e.id == '' then
      return ('agent %d has no id'):format(i)
    end
  end
end

--- The registry in file `path`; nil or false: the copy `:AcpInstall`
--- fetched last when it reads as a registry, else the snapshot. An
--- unreadable file reads as a registry without agents.
---@param path? string|false
function M.read(path)
  if not path then
    local fetched = M.cached()
    if cache[fetched] == nil then
      local data = M.read_json(fetched)
      cache[fetched] = not M.invalid(data) and data or false
    end
    if cache[fetched] then
      return cache[fetched]
    end
    path = M.snapshot
  end
  if not cache[path] then
    cache[path] = M.read_json(path) or { agents = {} }
  end
  return cache[path]
end

--- Forgets what was read from `path` (nil: the fetched copy), so that the
--- next read sees the file again.
function M.forget(path)
  cache[path or M.cached()] = nil
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
