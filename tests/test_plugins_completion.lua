-- Completion plugins as users run them: blink.cmp and nvim-cmp, driven
-- through stand-ins that call acp.nvim's sources as those plugins do
-- (tests/fixtures/plugins/*: each says which documented behaviour it
-- follows), and the built-in popup's keys.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local FIXTURES = vim.env.ACP_ROOT .. '/tests/fixtures/plugins/'

local COMMANDS = { session_updates = {
  { sessionUpdate = 'available_commands_update', availableCommands = {
    { name = 'review', description = 'Review the changes' } } },
} }

--- A chat whose agent announces `/review`, in a project with alpha.lua;
--- the cursor in the input, Insert mode.
local function chat(opts)
  local dir = H.project({ ['alpha.lua'] = 'x\n' })
  local child = H.start({ cwd = dir, turns = {}, agent_info = COMMANDS, config = opts and opts.config })
  if opts and opts.before_open then
    child:lua(opts.before_open, { FIXTURES })
  end
  H.open(child)
  child:wait_for([[return require('acp').current().info.commands ~= nil]])
  child:lua([[require('acp.prompt.mention').refresh(require('acp').current().root, function() _G.listed = true end)]])
  child:wait_for('return _G.listed')
  T.eq(child:lua([[return vim.bo.filetype .. ' ' .. vim.api.nvim_get_mode().mode]]), 'acpchat_input i')
  return child
end

local function line(child)
  return child:lua('return vim.api.nvim_get_current_line()')
end

--- Empties the input (Insert mode stays).
local function clear(child)
  child:lua([[vim.api.nvim_buf_set_lines(0, 0, -1, false, { '' }); vim.api.nvim_win_set_cursor(0, { 1, 0 })]])
end

return {
  { 'blink.cmp: accepting a / command or an @ mention adds no brackets (its auto_brackets default)', function()
    local child = chat({ before_open = [[
      vim.opt.rtp:append((...) .. 'blink')
      require('blink.cmp').setup({ sources = {
        per_filetype = { acpchat_input = { 'acp' } },
        providers = { acp = { name = 'ACP', module = 'blink-cmp-acp' } },
      } })
    ]] })
    T.eq(child:lua([[return require('acp.prompt.popup').builtin_popup()]]), false)
    child:feed('/re')
    child:wait_for([[return #require('blink.cmp').get_items() == 1]])
    local item = child:lua([[local it = require('blink.cmp').get_items()[1]
      return { label = it.label, kind = it.kind, format = it.insertTextFormat }]])
    T.eq(item.label, '/review')
    child:lua([[require('blink.cmp').accept()]])
    T.eq(line(child), '/review ')
    T.truthy(item.kind ~= 2 and item.kind ~= 3, 'a command is no Function/Method item')
    T.eq(item.format, 1)
    T.eq(child:lua('return vim.fn.pumvisible()'), 0)
    -- A mention: a File item, plain text.
    clear(child)
    child:feed('@alp')
    child:wait_for([[for _, it in ipairs(require('blink.cmp').get_items()) do
      if it.label == '@alpha.lua' then return true end end]])
    child:lua([[for i, it in ipairs(require('blink.cmp').get_items()) do
      if it.label == '@alpha.lua' then require('blink.cmp').accept({ index = i }) end end]])
    T.eq(line(child), '@alpha.lua')
  end },

  { 'nvim-cmp loaded on InsertEnter after the chat opened (lazy.nvim recipe): / and @ complete through it', function()
    -- lazy.nvim's `event = 'InsertEnter'`: its handler, defined at startup,
    -- loads the plugin (plugin files, then the user's config) on the first
    -- InsertEnter, which comes after the chat exists.
    local child = chat({ before_open = [[
      local dir = (...) .. 'cmp'
      vim.api.nvim_create_autocmd('InsertEnter', { once = true, callback = function()
        vim.opt.rtp:append(dir)
        vim.cmd('runtime plugin/cmp.lua')
        require('cmp').setup({ sources = { { name = 'buffer' } } })
        require('cmp').setup.filetype('acpchat_input', { sources = { { name = 'acp' } } })
        _G.cmp_loaded_with_chat = require('acp').current() ~= nil
      end })
    ]] })
    T.eq(child:lua('return _G.cmp_loaded_with_chat'), true)
    child:feed('/re')
    child:wait_for([[return #require('cmp').get_entries() > 0]], 3000)
    local labels = child:lua([[return vim.tbl_map(function(e) return e.completion_item.label end, require('cmp').get_entries())]])
    T.eq(labels, { '/review' })
    -- nvim-cmp serves the buffer: the built-in popup stays away.
    T.eq(child:lua([[return require('acp.prompt.popup').builtin_popup()]]), false)
    T.eq(child:lua('return vim.fn.pumvisible()'), 0)
    clear(child)
    child:feed('@alp')
    child:wait_for([[for _, e in ipairs(require('cmp').get_entries()) do
      if e.completion_item.label == '@alpha.lua' then return true end end]], 3000)
  end },

  { 'nvim-cmp: registered by hand and by acp.nvim, every item shows once; autopairs adds no brackets', function()
    local child = chat({ before_open = [[
      vim.opt.rtp:append((...) .. 'cmp')
      vim.cmd('runtime plugin/cmp.lua')
      local cmp = require('cmp')
      cmp.setup.filetype('acpchat_input', { sources = { { name = 'acp' } } })
      -- nvim-autopairs' cmp recipe: `(` after a confirmed Function/Method item.
      cmp.event:on('confirm_done', function(ev)
        local kind = ev.entry:get_completion_item().kind
        if kind == cmp.lsp.CompletionItemKind.Function or kind == cmp.lsp.CompletionItemKind.Method then
          vim.api.nvim_put({ '()' }, 'c', false, true)
        end
      end)
    ]] })
    -- The user's config registers it by hand as well (after the chat opened,
    -- when acp.nvim's own registration is in).
    child:lua([[require('cmp').register_source('acp', require('cmp_acp').new())]])
    local acp_sources = child:lua([[local n = 0
      for _, s in pairs(require('cmp').get_registered_sources()) do if s.name == 'acp' then n = n + 1 end end
      return n]])
    T.eq(acp_sources, 2)
    child:feed('/re')
    child:wait_for([[return #require('cmp').get_entries() > 0]], 3000)
    local labels = child:lua([[return vim.tbl_map(function(e) return e.completion_item.label end, require('cmp').get_entries())]])
    T.eq(labels, { '/review' })
    child:lua([[require('cmp').confirm({ select = true })]])
    T.eq(line(child), '/review ')
    -- Registered by hand before the first chat: acp.nvim adds no second one.
    local child2 = chat({ before_open = [[
      vim.opt.rtp:append((...) .. 'cmp')
      vim.cmd('runtime plugin/cmp.lua')
      require('cmp').register_source('acp', require('cmp_acp').new())
      require('cmp').setup.filetype('acpchat_input', { sources = { { name = 'acp' } } })
    ]] })
    T.eq(child2:lua([[local n = 0
      for _, s in pairs(require('cmp').get_registered_sources()) do if s.name == 'acp' then n = n + 1 end end
      return n]]), 1)
  end },

  { 'built-in popup: <C-y> accepts a single match', function()
    local child = chat()
    child:feed('/re')
    child:wait_for('return vim.fn.pumvisible() == 1')
    T.eq(child:lua([[return vim.fn.complete_info({ 'selected' }).selected]]), -1)
    child:feed('<C-y>')
    child:wait_for('return vim.fn.pumvisible() == 0')
    T.eq(line(child), '/review ')
    T.eq(child:lua('return vim.api.nvim_get_mode().mode'), 'i')
  end },

  { 'built-in popup: <Tab> accepts the entry; without a popup it inserts a tab', function()
    local child = chat()
    child:lua('vim.bo.expandtab = false')
    child:feed('/re')
    child:wait_for('return vim.fn.pumvisible() == 1')
    child:feed('<Tab>')
    child:wait_for('return vim.fn.pumvisible() == 0')
    T.eq(line(child), '/review ')
    -- No popup: a tab.
    clear(child)
    child:feed('a<Tab>b')
    child:wait_for([[return vim.api.nvim_get_current_line():sub(-1) == 'b']])
    T.eq(line(child), 'a\tb')
    -- A mention among several: the first entry.
    clear(child)
    child:feed('@alp')
    child:wait_for('return vim.fn.pumvisible() == 1')
    child:feed('<Tab>')
    child:wait_for('return vim.fn.pumvisible() == 0')
    T.eq(line(child), '@alpha.lua')
  end },
}
