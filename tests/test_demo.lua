-- `make demo`: Neovim started with tests/demo_init.lua opens the chat with
-- the bundled demo agent, the cursor in the input area; hello + <C-s>
-- streams an answer.
local T = require('tests.helpers.expect')
local Child = require('tests.helpers.child')

return {
  { 'the demo opens a chat in insert mode in the input; hello streams an answer', function()
    local child = Child.new({ init = vim.env.ACP_ROOT .. '/tests/demo_init.lua' })
    child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']], 5000)
    local r = child:lua([[
      local v = require('acp').current()
      return { input = vim.api.nvim_get_current_win() == v.input_win, mode = vim.api.nvim_get_mode().mode, agent = v.agent }
    ]])
    T.eq(r, { input = true, mode = 'i', agent = 'demo' })
    child:feed('hello<C-s>')
    child:wait_for([[return require('acp').current().turns_ended == 1]], 10000)
    local text = table.concat(child:lua([[return require('acp').current():lines()]]), '\n')
    T.match(text, '^## You\n\nhello\n\n## demo\n')
    T.match(text, 'Hello! I am the %*%*offline demo agent%*%* bundled with acp%.nvim%.')
    T.match(text, 'Plan · %d/%d done\n%- %[x%] Read the README %(high%)')
  end },
}
