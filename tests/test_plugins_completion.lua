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
  local dir = H.project(vim.tbl_extend('force', { ['alpha.lua'] = 'x\n' }, opts and opts.files or {}))
  local child = H.start({ cwd = dir, turns = {}, agent_info = opts and opts.agent_info or COMMANDS, config = opts and opts.config })
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

-- Documentation (the sources' `resolve`) -------------------------------------------------

--- Agent text that a markdown renderer or a format string would change.
local TRICKY = '**Review** the [changes](http://x) <b>%s</b> `a` ``` not a fence end'

local DOC_COMMANDS = { session_updates = {
  { sessionUpdate = 'available_commands_update', availableCommands = {
    { name = 'review', description = TRICKY .. '\nsecond line', input = { hint = 'branch *name*' } } } },
} }

--- `n` numbered lines ("line 1\n"...).
local function numbered(n)
  local t = {}
  for i = 1, n do
    t[i] = ('line %d'):format(i)
  end
  return table.concat(t, '\n') .. '\n'
end

--- The index (1-based) of the line equal to `want` in `lines`, or nil.
local function find(lines, want)
  for i, l in ipairs(lines or {}) do
    if l == want then
      return i
    end
  end
end

--- Types `text` in an empty input and waits until `plugin`'s items hold
--- `label`; selects it (the plugin's own way) and returns the lines its
--- documentation window shows.
local function docs_of(child, plugin, text, label)
  clear(child)
  child:feed(text)
  local get = plugin == 'cmp'
      and [[return vim.tbl_map(function(e) return e.completion_item.label end, require('cmp').get_entries())]]
    or [[return vim.tbl_map(function(it) return it.label end, require('blink.cmp').get_items())]]
  child:wait_for(function(g, l)
    return vim.tbl_contains(assert(loadstring(g))(), l)
  end, 3000, { get, label })
  local labels = child:lua(get)
  local index = find(labels, label)
  local select = plugin == 'cmp' and [[require('cmp').select_next_item()]] or [[require('blink.cmp').select_next()]]
  for _ = 1, index do
    child:lua(select)
  end
  local lines = plugin == 'cmp' and [[return require('cmp').get_documentation_lines()]]
    or [[return require('blink.cmp').get_documentation_lines()]]
  child:wait_for(lines, 3000)
  return child:lua(lines)
end

local function cmp_chat(opts)
  opts.before_open = [[
    vim.opt.rtp:append((...) .. 'cmp')
    vim.cmd('runtime plugin/cmp.lua')
    require('cmp').setup.filetype('acpchat_input', { sources = { { name = 'acp' } } })
  ]]
  return chat(opts)
end

local function blink_chat(opts)
  opts.before_open = [[
    vim.opt.rtp:append((...) .. 'blink')
    require('blink.cmp').setup({
      sources = {
        per_filetype = { acpchat_input = { 'acp' } },
        providers = { acp = { name = 'ACP', module = 'blink-cmp-acp' } },
      },
      completion = { documentation = { auto_show = true, auto_show_delay_ms = 0 } },
    })
  ]]
  return chat(opts)
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
    -- blink resolves the item before it accepts it (a file is read
    -- asynchronously).
    child:wait_for([[return vim.api.nvim_get_current_line() == '@alpha.lua']])
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

  { 'nvim-cmp: selecting an entry resolves its documentation (a command as the agent wrote it, a file, a buffer)', function()
    local child = cmp_chat({ agent_info = DOC_COMMANDS, files = { ['long.lua'] = numbered(30), ['notes.md'] = 'one\ntwo\nthree\n' } })
    -- The agent's description and hint: literal text, inside a fence that
    -- its own backticks cannot close, never rendered as markdown.
    local lines = docs_of(child, 'cmp', '/re', '/review')
    local at = find(lines, TRICKY)
    T.truthy(at, 'the description line as sent: ' .. vim.inspect(lines))
    T.eq(lines[at + 1], 'second line')
    T.match(lines[at - 1], '^````+text$')
    T.truthy(lines[at + 2]:match('^````+$'), 'the fence closes after the description')
    T.truthy(find(lines, 'input: `branch *name*`'), vim.inspect(lines))
    -- A file: its path, its size and its first lines.
    lines = docs_of(child, 'cmp', '@long', '@long.lua')
    T.truthy(find(lines, '`long.lua` · 231 bytes · first 20 lines'), vim.inspect(lines))
    T.truthy(find(lines, 'line 1') and find(lines, 'line 20'), vim.inspect(lines))
    T.falsy(find(lines, 'line 21'), 'no more than 20 lines')
    T.truthy(find(lines, '```lua'), 'in a fence of its filetype: ' .. vim.inspect(lines))
    -- A buffer with unsaved changes: its name and line count, from the
    -- buffer (not the file).
    child:lua([[local b = vim.fn.bufadd(require('acp').current().root .. '/notes.md')
      vim.fn.bufload(b); vim.bo[b].buflisted = true
      vim.api.nvim_buf_set_lines(b, 0, 1, false, { 'ONE (edited)' })
      _G.notes = b]])
    local buf = child:lua('return _G.notes')
    lines = docs_of(child, 'cmp', '@notes', '@notes.md')
    T.truthy(find(lines, ('`notes.md` · buffer %d · 3 lines · unsaved changes'):format(buf)), vim.inspect(lines))
    T.truthy(find(lines, 'ONE (edited)'), vim.inspect(lines))
    -- Confirming still inserts plain text.
    child:lua([[require('cmp').confirm()]])
    T.eq(line(child), '@notes.md')
  end },

  { 'blink.cmp: documentation auto_show resolves the selected item; a huge, binary, missing file or a FIFO is described without blocking', function()
    local big = {}
    for i = 1, 300000 do
      big[i] = ('line %d'):format(i)
    end
    local child = blink_chat({ agent_info = DOC_COMMANDS, files = {
      ['big.txt'] = table.concat(big, '\n') .. '\n',
      ['blob.bin'] = 'ab\0cd\n',
      ['gone.txt'] = 'soon gone\n',
    } })
    local lines = docs_of(child, 'blink', '/re', '/review')
    T.truthy(find(lines, TRICKY), vim.inspect(lines))
    -- A huge file: its size, and only its first lines (a few KiB read).
    lines = docs_of(child, 'blink', '@big', '@big.txt')
    T.truthy(vim.iter(lines):any(function(l) return l:match('^`big%.txt` · [%d.]+ MiB · first 20 lines$') end), vim.inspect(lines))
    T.truthy(find(lines, 'line 20') and not find(lines, 'line 21'), vim.inspect(lines))
    -- A binary file says so.
    lines = docs_of(child, 'blink', '@blob', '@blob.bin')
    T.truthy(find(lines, '`blob.bin` · 6 bytes · binary file, not shown'), vim.inspect(lines))
    -- A file gone since the list was made.
    clear(child)
    child:feed('@gone')
    child:wait_for([[for _, it in ipairs(require('blink.cmp').get_items()) do
      if it.label == '@gone.txt' then return true end end]])
    child:lua([[os.remove(require('acp').current().root .. '/gone.txt')]])
    child:lua([[require('blink.cmp').select_next()]])
    child:wait_for([[return require('blink.cmp').get_documentation_lines()]])
    lines = child:lua([[return require('blink.cmp').get_documentation_lines()]])
    T.truthy(find(lines, '`gone.txt` · no such file (anymore)'), vim.inspect(lines))
    -- A FIFO with no writer is never waited on.
    local fifo = child:lua([[local p = require('acp').current().root .. '/pipe'
      vim.fn.system({ 'mkfifo', p }); return p]])
    T.skip_unless(vim.uv.fs_stat(fifo), 'no mkfifo')
    child:lua([[require('blink-cmp-acp').new():resolve({ label = '@pipe', data = { acp = { kind = 'file', name = 'pipe', path = ... } } },
      function(item) _G.pipe_doc = item.documentation.value end)]], { fifo })
    child:wait_for('return _G.pipe_doc')
    T.eq(child:lua('return _G.pipe_doc'), '`pipe` · not shown: a named pipe (FIFO)')
    -- Accepting (blink resolves first): plain text, no brackets.
    clear(child)
    child:feed('/re')
    child:wait_for([[return #require('blink.cmp').get_items() == 1]])
    child:lua([[require('blink.cmp').select_next(); require('blink.cmp').accept()]])
    child:wait_for([[return vim.api.nvim_get_current_line() == '/review ']])
    T.eq(line(child), '/review ')
  end },
}
