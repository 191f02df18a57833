-- Refreshes lua/acp/registry.json, the snapshot of the ACP agent registry
-- (https://github.com/agentclientprotocol/registry, format in its FORMAT.md)
-- that `:AcpInstall` and the agent presets use.
--
--   nvim -l scripts/refresh_registry.lua              (downloads the published registry.json with curl)
--   nvim -l scripts/refresh_registry.lua URL
--   nvim -l scripts/refresh_registry.lua DIR          (a checkout of the registry repository:
--                                                      its <id>/agent.json files, as its build does)
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
local source = _G.arg[1] or 'https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json'
local registry

--- Why `entry` (read from directory `dir`) is not an agent entry, or nil.
local function invalid(entry, dir)
  if type(entry) ~= 'table' then
    return 'not a JSON object'
  end
  for _, key in ipairs({ 'id', 'name', 'version' }) do
    if type(entry[key]) ~= 'string' or entry[key] == '' then
      return 'no ' .. key
    end
  end
  if entry.id ~= dir then
    return ('id %s is not its directory'):format(entry.id)
  end
  if type(entry.distribution) ~= 'table' or next(entry.distribution) == nil then
    return 'no distribution'
  end
end

if vim.fn.isdirectory(source) == 1 then
  local agents = {}
  -- Directories starting with _ or . (_not_yet_unsupported, .protocol-matrix)
  -- are not agents, as in the registry's build.
  for _, file in ipairs(vim.fn.glob(source .. '/*/agent.json', false, true)) do
    local dir = vim.fn.fnamemodify(file, ':h:t')
    if not dir:match('^[_.]') then
      local ok, entry = pcall(vim.json.decode, table.concat(vim.fn.readfile(file), '\n'))
      local why = not ok and 'not JSON' or invalid(entry, dir)
      if why then
        io.stderr:write(('refresh_registry: skipped %s: %s\n'):format(file, why))
      else
        if entry.icon then
          entry.icon = 'https://cdn.agentclientprotocol.com/registry/v1/latest/' .. entry.id .. '.svg'
        end
        agents[#agents + 1] = entry
      end
    end
  end
  registry = { version = '1.0.0', agents = agents, extensions = {} }
else
  local res = vim.system({ 'curl', '-fsSL', '--max-time', '60', source }, { text = true }):wait()
  if res.code ~= 0 then
    io.stderr:write('refresh_registry: curl failed: ' .. (res.stderr or '') .. '\n')
    os.exit(1)
  end
  registry = vim.json.decode(res.stdout)
end

assert(type(registry.agents) == 'table' and #registry.agents > 0, 'no agents in ' .. source)
table.sort(registry.agents, function(a, b)
  return a.id < b.id
end)
registry.snapshot = os.date('!%Y-%m-%d')
registry.source = source:match('^https?://') and source or 'https://github.com/agentclientprotocol/registry'

--- `value` as JSON with the keys of every object in sorted order
--- (vim.json.encode follows the table's hash order, which changes from run
--- to run). An empty object decoded by vim.json stays `{}`, an empty list `[]`.
local function encode(value)
  if type(value) ~= 'table' then
    return vim.json.encode(value)
  end
  local parts = {}
  if getmetatable(value) ~= getmetatable(vim.empty_dict()) and vim.islist(value) then
    for _, v in ipairs(value) do
      parts[#parts + 1] = encode(v)
    end
    return '[' .. table.concat(parts, ',') .. ']'
  end
  local keys = vim.tbl_keys(value)
  table.sort(keys)
  for _, k in ipairs(keys) do
    parts[#parts + 1] = vim.json.encode(tostring(k)) .. ':' .. encode(value[k])
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

-- One agent per line and every object's keys sorted (the top level's too):
-- small diffs when the snapshot is refreshed.
local lines = { '{' }
lines[#lines + 1] = '  "agents": ['
for i, a in ipairs(registry.agents) do
  lines[#lines + 1] = '    ' .. encode(a) .. (i < #registry.agents and ',' or '')
end
lines[#lines + 1] = '  ],'
lines[#lines + 1] = ('  "snapshot": %s,'):format(vim.json.encode(registry.snapshot))
lines[#lines + 1] = ('  "source": %s,'):format(vim.json.encode(registry.source))
lines[#lines + 1] = ('  "version": %s'):format(vim.json.encode(registry.version or '1.0.0'))
lines[#lines + 1] = '}'
local out = root .. '/lua/acp/registry.json'
vim.fn.writefile(lines, out)
print(('wrote %s: %d agents'):format(out, #registry.agents))
