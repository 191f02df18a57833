-- Context in prompts: selections, @-mentions and images. The scripted agent
-- logs the exact content blocks of every prompt; these cases assert them.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end
]]

-- 1x1 transparent PNG.
local PNG = vim.base64.decode(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII='
)

--- A project directory (a `.git` marks its root) with `files` (path -> text).
local function project(files)
  local dir = T.tmpdir('proj')
  vim.fn.mkdir(dir .. '/.git', 'p')
  for path, text in pairs(files or {}) do
    T.write_file(dir .. '/' .. path, text)
  end
  return dir
end

local A_LUA = 'local a = 1\nlocal b = 2\nreturn a + b\n'

--- A child whose cwd is `dir`, editing `file`, with the chat open (unless
--- opts.no_chat) and the cursor back in the file's window.
local function start(dir, scenario, opts)
  opts = opts or {}
  local config = vim.tbl_deep_extend('force', { chat = { start_insert = false } }, opts.config or {})
  local child, paths = H.start({ scenario = scenario, cwd = dir, config = config, env = opts.env })
  child:lua(RECORD_NOTIFY)
  if opts.file ~= false then
    child:cmd('edit ' .. (opts.file or 'a.lua'))
  end
  if not opts.no_chat then
    H.open(child)
    child:cmd('wincmd t')
  end
  return child, paths
end

local function file_uri(dir, path)
  return vim.uri_from_fname(dir .. '/' .. path)
end

--- Sends `text` from the chat and returns the content blocks the agent got.
local function send(child, paths, text)
  local n = #H.events_of(paths, 'prompt')
  H.turn(child, text)
  local prompts = H.events_of(paths, 'prompt')
  T.eq(#prompts, n + 1, 'one prompt was sent')
  return prompts[#prompts].prompt
end

local function pending(child)
  return child:lua([[return require('acp.prompt.context').lines(require('acp').current())]])
end

local function wait_pending(child, n)
  child:wait_for(([[local v = require('acp').current(); return v and #(v.context or {}) == %d]]):format(n))
end

local function notes(child)
  return child:lua([[return vim.tbl_map(function(n) return n.msg end, _G.notes)]])
end

local function resource(uri, text, mime)
  return { type = 'resource', resource = { uri = uri, text = text, mimeType = mime } }
end

return {
  -- Selections ---------------------------------------------------------------

  { "line-wise :'<,'>AcpAdd: an embedded resource with the line range; the transcript names it", function()
    local dir = project({ ['a.lua'] = A_LUA })
    local child, paths = start(dir, 'context')
    child:feed('2GVj:AcpAdd<CR>')
    wait_pending(child, 1)
    T.eq(pending(child), { '1 @a.lua#L2-L3  2 lines' })
    local blocks = send(child, paths, 'explain')
    T.eq(blocks, {
      { type = 'text', text = 'explain' },
      resource(file_uri(dir, 'a.lua') .. '#L2-L3', 'local b = 2\nreturn a + b\n', 'text/x-lua'),
    })
    T.eq(H.transcript(child), { '## You', '', 'explain', '@a.lua#L2-L3', '', '## test', '', 'echo: explain' })
    T.eq(pending(child), {}, 'the context went with the prompt')
  end },

  { 'character-wise selection (<Plug>(AcpAddSelection) via the opt-in keymap): exactly the characters', function()
    local dir = project({ ['a.lua'] = 'local alpha = 1\nlocal beta = 2\nreturn alpha\n' })
    local child, paths = start(dir, 'context', { config = { keymaps = true } })
    -- From "alpha" on line 1 to the "local" of line 2.
    child:feed('1G06lvj04l\\aa')
    wait_pending(child, 1)
    T.eq(child:lua([[return vim.api.nvim_get_mode().mode]]), 'n', 'visual mode ended')
    local blocks = send(child, paths, 'what')
    T.eq(blocks[2], resource(file_uri(dir, 'a.lua') .. '#L1-L2', 'alpha = 1\nlocal', 'text/x-lua'))
    T.eq(#blocks, 2)
  end },

  { 'block-wise selection: exactly the block', function()
    local dir = project({ ['t.txt'] = 'abcdef\nghijkl\nmnopqr\nstuvwx\n' })
    local child, paths = start(dir, 'context', { file = 't.txt' })
    child:feed('1G02l<C-v>2j2l:AcpAdd<CR>')
    wait_pending(child, 1)
    T.eq(pending(child), { '1 @t.txt#L1-L3  3 lines, block' })
    local blocks = send(child, paths, 'block')
    T.eq(blocks[2], resource(file_uri(dir, 't.txt') .. '#L1-L3', 'cde\nijk\nopq', 'text/plain'))
  end },

  { 'without embeddedContext a selection is a resource_link plus its text', function()
    local dir = project({ ['a.lua'] = A_LUA })
    local child, paths = start(dir, 'context_plain')
    child:feed('2GVj:AcpAdd<CR>')
    wait_pending(child, 1)
    local blocks = send(child, paths, 'explain')
    T.eq(blocks, {
      { type = 'text', text = 'explain' },
      { type = 'resource_link', uri = file_uri(dir, 'a.lua') .. '#L2-L3', name = 'a.lua#L2-L3', mimeType = 'text/x-lua' },
      { type = 'text', text = 'a.lua#L2-L3:\n```lua\nlocal b = 2\nreturn a + b\n```' },
    })
    T.match(H.transcript_text(child), '%[a%.lua#L2%-L3%]%(file://')
  end },

  { 'a scratch buffer gets a stable untitled: URI and its text is always sent', function()
    for _, scenario in ipairs({ 'context', 'context_plain' }) do
      local dir = project({})
      local child, paths = start(dir, scenario, { file = false })
      child:cmd('enew')
      child:lua([[vim.bo.buftype = 'nofile'; vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'scratch one', 'scratch two' })]])
      local buf = child:lua([[return vim.api.nvim_get_current_buf()]])
      child:cmd('%AcpAdd')
      wait_pending(child, 1)
      local id = ('untitled:buffer-%d'):format(buf)
      T.eq(pending(child), { ('1 @%s#L1-L2  2 lines'):format(id) })
      local blocks = send(child, paths, 'scratch')
      if scenario == 'context' then
        T.eq(blocks[2], resource(id .. '#L1-L2', 'scratch one\nscratch two\n', 'text/plain'))
        T.match(H.transcript_text(child), '@untitled:buffer%-%d+#L1%-L2')
      else
        T.eq(blocks[2], { type = 'text', text = id .. '#L1-L2:\n```\nscratch one\nscratch two\n```' })
      end
      T.eq(#blocks, 2)
      child:stop()
    end
  end },

  { ":'<,'>AcpSend {text} sends at once with the selection, even before the chat is open", function()
    local dir = project({ ['a.lua'] = A_LUA })
    local child, paths = start(dir, 'context', { no_chat = true })
    child:feed('1GVj:AcpSend what is this<CR>')
    T.wait(function()
      return #H.events_of(paths, 'prompt') == 1
    end, 5000, 'the prompt reached the agent')
    -- The capabilities were awaited: the selection is embedded.
    T.eq(H.events_of(paths, 'prompt')[1].prompt, {
      { type = 'text', text = 'what is this' },
      resource(file_uri(dir, 'a.lua') .. '#L1-L2', 'local a = 1\nlocal b = 2\n', 'text/x-lua'),
    })
    T.eq(child:lua([[return vim.api.nvim_buf_get_name(0)]]), dir .. '/a.lua', 'the cursor stayed in the file')
    T.eq(pending(child), {}, 'nothing left pending')
  end },

  { 'pending context: one line per item above the input; <BS>, :AcpContext remove/clear; bad input explained', function()
    local dir = project({ ['a.lua'] = A_LUA, ['sub/c.txt'] = 'see\n' })
    local child, paths = start(dir, 'context')
    child:feed('1GV:AcpAdd<CR>')
    wait_pending(child, 1)
    child:feed('3GV:AcpAdd<CR>')
    wait_pending(child, 2)
    child:cmd('AcpAdd sub/c.txt')
    wait_pending(child, 3)
    local shown = child:lua([[
      local v = require('acp').current()
      local ns = vim.api.nvim_get_namespaces().acp_context
      local marks = vim.api.nvim_buf_get_extmarks(v.input, ns, 0, -1, { details = true })
      local out = {}
      for _, m in ipairs(marks) do
        for _, vl in ipairs(m[4].virt_lines) do
          local s = ''
          for _, chunk in ipairs(vl) do s = s .. chunk[1] end
          out[#out + 1] = { row = m[2], above = m[4].virt_lines_above, text = s }
        end
      end
      return { lines = out, height = vim.api.nvim_win_get_height(v.input_win) }
    ]])
    T.eq(shown.lines, {
      { row = 0, above = true, text = '1 @a.lua#L1  1 line' },
      { row = 0, above = true, text = '2 @a.lua#L3  1 line' },
      { row = 0, above = true, text = '3 @sub/c.txt' },
    })
    T.eq(shown.height, 6 + 3, 'the input area grew by one line per item')
    -- In the input area, 2<BS> drops item 2.
    child:lua([[vim.api.nvim_set_current_win(require('acp').current().input_win)]])
    child:feed('2<BS>')
    wait_pending(child, 2)
    T.eq(pending(child), { '1 @a.lua#L1  1 line', '2 @sub/c.txt' })
    child:cmd('AcpContext remove 9')
    child:cmd('AcpContext remove x')
    child:cmd('AcpContext frob')
    T.eq(notes(child), {
      'acp.nvim: no context item 9 (there are 2)',
      'acp.nvim: :AcpContext remove takes an item number, got x',
      'acp.nvim: unknown :AcpContext subcommand "frob" (list, clear, remove {n})',
    })
    local blocks = send(child, paths, 'two left')
    T.eq(blocks, {
      { type = 'text', text = 'two left' },
      resource(file_uri(dir, 'a.lua') .. '#L1', 'local a = 1\n', 'text/x-lua'),
      resource(file_uri(dir, 'sub/c.txt'), 'see\n', 'text/plain'),
    })
    child:cmd('wincmd t')
    child:feed('2GV:AcpAdd<CR>')
    wait_pending(child, 1)
    child:cmd('AcpContext clear')
    wait_pending(child, 0)
    T.eq(child:lua([[
      local v = require('acp').current()
      return #vim.api.nvim_buf_get_extmarks(v.input, vim.api.nvim_get_namespaces().acp_context, 0, -1, {})
    ]]), 0)
    T.eq(send(child, paths, 'plain'), { { type = 'text', text = 'plain' } })
    -- A selection in the chat itself is refused.
    child:lua([[vim.api.nvim_set_current_win(require('acp').current().win)]])
    child:feed('ggV:AcpAdd<CR>')
    child:wait_for([[return #_G.notes == 4]])
    T.eq(notes(child)[4], 'acp.nvim: select text in a file or buffer, not in the chat')
  end },

  -- Mentions ------------------------------------------------------------------

  { 'mentions: a file, a buffer with unsaved edits, diagnostics; a file over the limit is a link', function()
    local big = ('x'):rep(299) .. '\n'
    local dir = project({ ['a.lua'] = A_LUA, ['small.lua'] = 'return 1\n', ['big.txt'] = big })
    local child, paths = start(dir, 'context', { config = { context = { embed_max_bytes = 200 } } })
    -- Unsaved edits in a.lua, and one diagnostic on it.
    child:lua([[
      vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'local a = 42 -- unsaved' })
      local ns = vim.api.nvim_create_namespace('test_diag')
      vim.diagnostic.set(ns, 0, {
        { lnum = 1, col = 6, message = 'unused local `b`', severity = vim.diagnostic.severity.WARN, source = 'lint' },
        { lnum = 0, col = 0, message = 'first\nline', severity = vim.diagnostic.severity.ERROR },
      })
    ]])
    local blocks = send(child, paths, 'see @small.lua, @a.lua and @diagnostics; also @big.txt and @nobody')
    T.eq(blocks, {
      { type = 'text', text = 'see @small.lua, @a.lua and @diagnostics; also @big.txt and @nobody' },
      resource(file_uri(dir, 'small.lua'), 'return 1\n', 'text/x-lua'),
      resource(file_uri(dir, 'a.lua'), 'local a = 42 -- unsaved\nlocal b = 2\nreturn a + b\n', 'text/x-lua'),
      resource(
        'diagnostics' .. file_uri(dir, 'a.lua'):sub(5),
        'a.lua:1:1: error: first line\na.lua:2:7: warning: unused local `b` [lint]\n',
        'text/plain'
      ),
      { type = 'resource_link', uri = file_uri(dir, 'big.txt'), name = 'big.txt', mimeType = 'text/plain', size = 300 },
    })
    local text = H.transcript_text(child)
    T.match(text, '@small%.lua\n@a%.lua\n@diagnostics:a%.lua\n%[big%.txt%]%(file://')
  end },

  { 'mentions without embeddedContext: links; unsaved text and diagnostics go as text', function()
    local dir = project({ ['a.lua'] = A_LUA, ['small.lua'] = 'return 1\n' })
    local child, paths = start(dir, 'context_plain')
    child:lua([[vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'local a = 42' })]])
    local blocks = send(child, paths, '@small.lua @a.lua @diagnostics')
    T.eq(blocks, {
      { type = 'text', text = '@small.lua @a.lua @diagnostics' },
      { type = 'resource_link', uri = file_uri(dir, 'small.lua'), name = 'small.lua', mimeType = 'text/x-lua', size = 9 },
      { type = 'resource_link', uri = file_uri(dir, 'a.lua'), name = 'a.lua', mimeType = 'text/x-lua', size = #A_LUA },
      { type = 'text', text = 'a.lua:\n```lua\nlocal a = 42\nlocal b = 2\nreturn a + b\n```' },
      { type = 'text', text = 'Diagnostics of a.lua:\nNo diagnostics.\n' },
    })
  end },

  { '@selection mentions the last visual selection', function()
    local dir = project({ ['a.lua'] = A_LUA })
    local child, paths = start(dir, 'context')
    child:feed('2G0wv<Esc>')
    child:wait_for([[return vim.fn.getpos("'>")[2] == 2]])
    local blocks = send(child, paths, 'rename @selection')
    T.eq(blocks[2], resource(file_uri(dir, 'a.lua') .. '#L2', 'b', 'text/x-lua'))
  end },

  { '@ in the input completes special mentions, buffers and files from the walk (.gitignore respected)', function()
    local dir = project({
      ['a.lua'] = A_LUA,
      ['.gitignore'] = 'ignored/\n',
      ['ignored/x.lua'] = 'x\n',
      ['sub/c.txt'] = 'c\n',
      ['sub/deep/notes.md'] = '# n\n',
    })
    local child = start(dir, 'context')
    child:lua([[vim.api.nvim_set_current_win(require('acp').current().input_win)]])
    child:feed('iask @')
    -- The first `@` starts the walk; the menu is updated when it arrives.
    child:wait_for([[
      local words = vim.tbl_map(function(i) return i.word end, vim.fn.complete_info({ 'items' }).items)
      return vim.tbl_contains(words, '@sub/deep/notes.md') and words
    ]])
    local words = child:lua([[return vim.tbl_map(function(i) return i.word end, vim.fn.complete_info({ 'items' }).items)]])
    T.eq(words, { '@diagnostics', '@selection', '@a.lua', '@.gitignore', '@sub/c.txt', '@sub/deep/notes.md' })
    -- Typing narrows: file names that start with the text come first.
    child:feed('note')
    child:wait_for([[return #vim.fn.complete_info({ 'items' }).items == 1]])
    T.eq(child:lua([[return vim.fn.complete_info({ 'items' }).items[1].word]]), '@sub/deep/notes.md')
    child:feed('<C-n><C-y>')
    child:wait_for([[return vim.api.nvim_get_current_line() == 'ask @sub/deep/notes.md']])
    -- The core's walk and its queries, called directly.
    local listed = child:lua(
      [[
      local dir = ...
      local core = require('acp.core')
      _G.listed = nil
      local id = require('acp.core.dispatch').request(function(ev) _G.listed = ev end)
      core.list_files(dir, 100, id)
      vim.wait(3000, function() return _G.listed ~= nil end)
      return { count = _G.listed.count, truncated = _G.listed.truncated, all = core.match_files(dir, '', 10),
               c = core.match_files(dir, 'C', 10), never = core.match_files(dir .. '/sub', '', 10) }
    ]],
      { dir }
    )
    T.eq(listed, {
      count = 4,
      truncated = false,
      all = { '.gitignore', 'a.lua', 'sub/c.txt', 'sub/deep/notes.md' },
      c = {},
    })
  end },

  -- Images ----------------------------------------------------------------------

  { ':AcpImage attaches a PNG as base64 with its mimeType; bad files are explained', function()
    local dir = project({ ['a.lua'] = A_LUA })
    T.write_file(dir .. '/shot.png', PNG)
    T.write_file(dir .. '/fake.png', 'not an image')
    local child, paths = start(dir, 'context')
    child:cmd('AcpImage shot.png')
    wait_pending(child, 1)
    T.eq(pending(child), { ('1 @shot.png  image/png, %d B'):format(#PNG) })
    child:cmd('AcpImage fake.png')
    child:cmd('AcpImage missing.png')
    T.eq(notes(child), {
      'acp.nvim: fake.png is not a PNG, JPEG, GIF or WebP image',
      'acp.nvim: missing.png: no such file',
    })
    local blocks = send(child, paths, 'look')
    T.eq(blocks, {
      { type = 'text', text = 'look' },
      { type = 'image', data = vim.base64.encode(PNG), mimeType = 'image/png', uri = file_uri(dir, 'shot.png') },
    })
    T.match(H.transcript_text(child), 'look\n%[image image/png%]')
  end },

  { 'an agent without image support is refused when the image is attached, not after sending', function()
    local dir = project({ ['a.lua'] = A_LUA })
    T.write_file(dir .. '/shot.png', PNG)
    local child, paths = start(dir, 'context_plain')
    child:cmd('AcpImage shot.png')
    child:wait_for([[return #_G.notes == 1]])
    T.eq(
      notes(child)[1],
      'acp.nvim: agent `test` does not accept images (its promptCapabilities.image is false): shot.png not attached'
    )
    T.eq(child:lua([[return _G.notes[1].level]]), vim.log.levels.ERROR)
    T.eq(pending(child), {})
    T.eq(#H.events_of(paths, 'prompt'), 0, 'nothing was sent')
  end },

  { ':AcpPasteImage reads the clipboard through wl-paste; without a tool it says what to install', function()
    local dir = project({ ['a.lua'] = A_LUA })
    local bin = dir .. '/bin'
    T.write_file(dir .. '/clip.png', PNG)
    T.write_file(
      bin .. '/wl-paste',
      ('#!/bin/sh\ncase "$1" in\n  --list-types) printf "text/plain\\nimage/png\\n" ;;\n  *) cat %q ;;\nesac\n'):format(
        dir .. '/clip.png'
      )
    )
    vim.uv.fs_chmod(bin .. '/wl-paste', 493)
    local child, paths = start(dir, 'context', {
      env = { PATH = bin .. ':' .. vim.env.PATH, WAYLAND_DISPLAY = 'wayland-test', DISPLAY = false },
    })
    child:cmd('AcpPasteImage')
    wait_pending(child, 1)
    local blocks = send(child, paths, 'pasted')
    T.eq(blocks[2], { type = 'image', data = vim.base64.encode(PNG), mimeType = 'image/png' })
    child:stop()

    local bare = start(dir, 'context', { env = { PATH = '/nonexistent', WAYLAND_DISPLAY = false, DISPLAY = false } })
    bare:cmd('AcpPasteImage')
    T.match(notes(bare)[1], '^acp%.nvim: no clipboard image tool found: install wl%-clipboard')
  end },

  -- Keymaps -----------------------------------------------------------------------

  { 'setup({ keymaps = true }) installs the suggested keymaps, keeping user mappings', function()
    local child = T.Child.new()
    local r = child:lua([[
      vim.keymap.set('n', '<leader>ac', ':echo "mine"<CR>')
      require('acp').setup({ keymaps = true })
      return { ac = vim.fn.maparg('<leader>ac', 'n'), aa = vim.fn.maparg('<leader>aa', 'x'),
               as = vim.fn.maparg('<leader>as', 'x'), plug = vim.fn.maparg('<Plug>(AcpAddSelection)', 'x') ~= '' }
    ]])
    T.eq(r, { ac = ':echo "mine"<CR>', aa = '<Plug>(AcpAddSelection)', as = ':AcpSend ', plug = true })
    local off = T.Child.new()
    T.eq(off:lua([[require('acp').setup({}); return vim.fn.maparg('<leader>aa', 'x')]]), '')
  end },
}
