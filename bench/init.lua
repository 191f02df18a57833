-- Init file of the Neovim the benchmark measures (`nvim --clean --embed -u bench/init.lua`):
-- the repository on 'runtimepath' (so plugin/acp.lua is sourced as in a real setup) and on
-- package.path (for bench/driver.lua). No swap or shada files.
local root = assert(vim.env.ACP_ROOT, 'ACP_ROOT is not set')
vim.opt.runtimepath:prepend(root)
package.path = root .. '/?.lua;' .. package.path
vim.o.swapfile = false
vim.o.shadafile = 'NONE'
