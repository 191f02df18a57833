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

if vim.fn.isdirectory(source) == 1 then
  local agents = {}
  for _, file in ipairs(vim.fn.glob(source .. '/*/agent.json', false, true)) do
    local dir = vim.fn.fnamemodify(file, ':h:t')
    if not dir:match('^[_.]') then
      local entry = vim.json.decode(table.concat(vim.fn.readfile(file), '\n'))
      if entry.icon then
        entry.icon = 'https://cdn.agentclientprotocol.com/registry/v1/latest/' .. entry.id .. '.svg'
      end
      agents[#agents + 1] = entry
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

-- One agent per line: small diffs when the snapshot is refreshed.
local lines = { '{' }
lines[#lines + 1] = ('  "version": %s,'):format(vim.json.encode(registry.version or '1.0.0'))
lines[#lines + 1] = ('  "snapshot": %s,'):format(vim.json.encode(registry.snapshot))
lines[#lines + 1] = ('  "source": %s,'):format(vim.json.encode(registry.source))
lines[#lines + 1] = '  "agents": ['
for i, a in ipairs(registry.agents) do
  lines[#lines + 1] = '    ' .. vim.json.encode(a) .. (i < #registry.agents and ',' or '')
end
lines[#lines + 1] = '  ]'
lines[#lines + 1] = '}'
local out = root .. '/lua/acp/registry.json'
vim.fn.writefile(lines, out)
print(('wrote %s: %d agents'):format(out, #registry.agents))
