-- `make demo`: Neovim with acp.nvim and the bundled offline demo agent (the
-- scripted test agent playing tests/scenarios/demo.json).
local root = vim.env.ACP_ROOT or vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.runtimepath:prepend(root)
vim.o.swapfile = false
vim.o.termguicolors = true

local agent = vim.env.ACP_TEST_AGENT or (root .. '/target/release/acp-test-agent')
require('acp').setup({
  default_agent = 'demo',
  agents = {
    demo = { cmd = agent, args = { '--scenario', root .. '/tests/scenarios/demo.json' } },
  },
})

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    vim.cmd('AcpChat')
    vim.notify('acp.nvim demo: type hello, then <C-s> (or <Esc> and <CR>). Also try: edit, run, permission, slow, crash.')
  end,
})
