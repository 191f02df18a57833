-- `make bench`: benchmarks that run against a real Neovim. Prints a table;
-- numbers are recorded in doc/benchmarks.md with the command that made them.
local root = vim.env.ACP_ROOT or vim.fn.getcwd()
package.path = root .. '/?.lua;' .. package.path
local nvim = vim.env.ACP_NVIM or vim.v.progpath

local rows = {}
local s = require('bench.startup').run(nvim, root)
rows[#rows + 1] = { 'startup without plugin (median ms)', ('%.2f'):format(s.base_ms) }
rows[#rows + 1] = { 'startup with plugin (median ms)', ('%.2f'):format(s.plugin_ms) }
rows[#rows + 1] = { 'startup delta (ms, target < 5)', ('%.2f'):format(s.delta_ms) }

print(('nvim: %s'):format(vim.trim(vim.fn.system({ nvim, '--version' }):match('[^\n]+'))))
print(('machine: %s cores, %s'):format(#vim.uv.cpu_info(), vim.uv.os_uname().machine))
print('')
print(('| %-40s | %10s |'):format('benchmark', 'result'))
print(('|%s|%s|'):format(('-'):rep(42), ('-'):rep(12)))
for _, r in ipairs(rows) do
  print(('| %-40s | %10s |'):format(r[1], r[2]))
end
