-- Init file of every child Neovim started by tests/helpers/child.lua:
--   nvim --clean --embed --headless -u tests/minimal_init.lua
--
-- It only puts the repository on 'runtimepath'; tests `require('acp')` themselves.
-- plugin/*.lua of the repository is sourced by Neovim's normal startup ("load plugin scripts"
-- runs after the -u file even with --clean, which only drops the *user* directories from
-- 'runtimepath'), so commands defined there exist in the child. tests/test_harness.lua checks it.

local root = vim.env.ACP_ROOT
if not root or root == '' then
  local src = debug.getinfo(1, 'S').source:gsub('^@', '')
  root = vim.fn.fnamemodify(src, ':p:h:h')
  vim.env.ACP_ROOT = root
end

vim.opt.runtimepath:prepend(root)
if vim.fn.isdirectory(root .. '/after') == 1 then
  vim.opt.runtimepath:append(root .. '/after')
end

vim.o.swapfile = false
vim.o.shadafile = 'NONE'
