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

  { 'the demo: its hint in the chat, :help acp, commands and modes, an edit that really edits', function()
    local child = Child.new({ init = vim.env.ACP_ROOT .. '/tests/demo_init.lua' })
    child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle' and v.info.commands ~= nil]], 5000)
    local r = child:lua([[
      local v = require('acp').current()
      local ns = vim.api.nvim_get_namespaces().acp_demo_hint
      local hint = {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(v.buf, ns, 0, -1, { details = true })) do
        for _, vl in ipairs(m[4].virt_lines) do hint[#hint + 1] = vl[1][1] end
      end
      local names = vim.tbl_map(function(c) return c.name end, v.info.commands)
      return { hint = hint, commands = names, mode = v:mode_name() }
    ]])
    T.match(r.hint[1], 'Type hello', 'the hint is inside the chat')
    T.eq(r.commands, { 'hello', 'edit', 'run', 'permission', 'slow', 'crash' })
    T.eq(r.mode, 'Code')
    local help = child:lua([[
      local ok, err = pcall(vim.cmd, 'help acp')
      return { ok = ok, err = err, file = vim.fn.expand('%:t') }
    ]])
    T.eq({ help.ok, help.file }, { true, 'acp.txt' }, ':help acp works: ' .. tostring(help.err))
    child:cmd('close')
    local file = child:lua([[return vim.fn.getcwd() .. '/hello.lua']])
    child:lua([[require('acp').send('edit')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]], 5000)
    child:cmd('AcpPermission')
    child:wait_for([[return require('acp.ask.permission').armed]], 3000)
    child:feed('1')
    child:wait_for([[return require('acp').current().turns_ended == 1]], 10000)
    T.eq(vim.fn.readfile(file), { 'local M = {}', 'function M.greet(name)', "  print('hello, ' .. name)", 'end', 'return M' })
    -- No phantom buffer for another hello.lua.
    T.eq(child:lua([[
      local out = {}
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        local name = vim.api.nvim_buf_get_name(b)
        if name:match('hello%.lua$') and name ~= ... then out[#out + 1] = name end
      end
      return out
    ]], { file }), {})
    T.match(table.concat(child:lua([[return require('acp').current():lines()]]), '\n'), 'Done: hello%.lua changed on disk')
    child:cmd('AcpReview')
    local review = child:lua([=[
      local wins = vim.api.nvim_tabpage_list_wins(0)
      local first, last = wins[1], wins[#wins]
      return { winbar = vim.wo[first].winbar, left = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(first), 0, -1, false),
        right = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(last), 0, -1, false) }
    ]=])
    T.match(review.winbar, 'hello%.lua')
    T.eq(review.left[3], "  print('helo')", 'the text before the edit')
    T.eq(review.right[3], "  print('hello, ' .. name)", 'the file as it is now')
  end },
}
