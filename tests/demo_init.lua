-- `make demo`: Neovim with acp.nvim and the bundled offline demo agent (the
-- scripted test agent playing tests/scenarios/demo.json), in a scratch
-- project of its own: the demo's edit really changes its hello.lua.
local root = vim.env.ACP_ROOT or vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.runtimepath:prepend(root)
vim.o.swapfile = false
vim.o.termguicolors = true

-- The scratch project: hello.lua (with the bug the demo fixes) and the
-- scenario with its paths filled in.
local dir = vim.fn.resolve(vim.fn.tempname() .. '-acp-demo')
vim.fn.mkdir(dir .. '/.git', 'p')
vim.fn.writefile({ 'local M = {}', 'function M.greet()', "  print('helo')", 'end', 'return M' }, dir .. '/hello.lua')
local scenario = table.concat(vim.fn.readfile(root .. '/tests/scenarios/demo.json'), '\n')
scenario = scenario:gsub('%${DEMO_DIR}', (vim.json.encode(dir):sub(2, -2):gsub('%%', '%%%%')))
local scenario_path = dir .. '-scenario.json'
vim.fn.writefile(vim.split(scenario, '\n'), scenario_path)
vim.cmd.cd(vim.fn.fnameescape(dir))

local agent = vim.env.ACP_TEST_AGENT or (root .. '/target/release/acp-test-agent')
require('acp').setup({
  default_agent = 'demo',
  agents = {
    demo = { cmd = agent, args = { '--scenario', scenario_path } },
  },
})
-- `:help acp` works in a fresh clone.
require('acp.core').helptags()

local HINT = {
  'acp.nvim demo (offline). Type hello, then <C-s> (or <Esc> and <CR>).',
  'Also try: edit, run, permission, slow, crash, or / for the commands; :AcpMode switches modes, :help acp has the rest.',
}

--- `text` cut into lines of at most `width` cells, at spaces.
local function wrap(text, width)
  local lines, line = {}, ''
  for word in text:gmatch('%S+') do
    if line ~= '' and vim.fn.strdisplaywidth(line .. ' ' .. word) > width then
      lines[#lines + 1] = line
      line = word
    else
      line = line == '' and word or (line .. ' ' .. word)
    end
  end
  lines[#lines + 1] = line
  return lines
end

--- The hint, inside the chat until the first prompt, wrapped to the chat's
--- width (again when the chat is resized).
local function show_hint(view)
  local ns = vim.api.nvim_create_namespace('acp_demo_hint')
  local group = vim.api.nvim_create_augroup('acp_demo_hint', { clear = true })
  local function draw()
    local win = view.win
    if not (win and vim.api.nvim_win_is_valid(win)) then
      return
    end
    local virt = {}
    for _, paragraph in ipairs(HINT) do
      for _, l in ipairs(wrap(paragraph, vim.api.nvim_win_get_width(win) - 1)) do
        virt[#virt + 1] = { { l, 'Comment' } }
      end
    end
    vim.api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
    vim.api.nvim_buf_set_extmark(view.buf, ns, 0, 0, { virt_lines = virt })
  end
  draw()
  vim.api.nvim_create_autocmd({ 'WinResized', 'BufWinEnter' }, { group = group, callback = draw })
  vim.api.nvim_buf_attach(view.buf, false, {
    on_lines = function(_, buf)
      vim.schedule(function()
        pcall(vim.api.nvim_del_augroup_by_id, group)
        pcall(vim.api.nvim_buf_clear_namespace, buf, ns, 0, -1)
      end)
      return true
    end,
  })
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = vim.schedule_wrap(function()
    -- After startup is done with the windows.
    vim.cmd('AcpChat')
    local view = require('acp').current()
    if view then
      show_hint(view)
    end
  end),
})
