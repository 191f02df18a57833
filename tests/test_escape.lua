-- Agent text is data: the escaping helpers (lua/acp/escape.lua) over hostile
-- inputs, then hostile paths, titles, names and mentions from a scripted
-- agent reaching the winbar, the tab labels, status(), pickers, completion
-- and the mention resolver without running anything.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local E = require('acp.escape')

local X100K = ('x'):rep(100 * 1024)

--- The marker file a `%{system('touch …')}` or a backtick command would
--- create; it must never exist.
local function marker(name)
  return T.tmpdir('marker') .. '/' .. (name or 'PWNED')
end

local function exists(path)
  return vim.uv.fs_stat(path) ~= nil
end

return {
  -- The helpers -----------------------------------------------------------------
  { 'statusline(): % doubled, one line, control characters replaced, capped with …', function()
    local cases = {
      { "%{system('touch M')}", "%%{system('touch M')}" },
      { '%!v:lua.evil()', '%%!v:lua.evil()' },
      { 'left%=right', 'left%%=right' },
      { '%#Error#red%*', '%%#Error#red%%*' },
      { '`touch M`', '`touch M`' },
      { 'term://sh -c "touch M"', 'term://sh -c "touch M"' },
      { 'a\nb', 'a⏎b' },
      { 'a\r\nb', 'a⏎b' },
      { 'a\rb', 'a⏎b' },
      { 'a\0b', 'a�b' },
      { 'a\tb', 'a b' },
      { '\27[31mred\27[0m', '�[31mred�[0m' },
      { '\194\155' .. '2J', '�2J' }, -- C1 CSI
      { 'abc\226\128\174fed', 'abc�fed' }, -- right-to-left override
      { 'x\226\128\168y', 'x�y' }, -- line separator
      { X100K, ('x'):rep(199) .. '…' },
      { ('%'):rep(100 * 1024), ('%%'):rep(199) .. '…' },
      -- Cut right after a `%`: the kept `%` is doubled, never left single.
      { ('a'):rep(198) .. '%%%', ('a'):rep(198) .. '%%…' },
      -- Exactly the limit: not cut.
      { ('a'):rep(200), ('a'):rep(200) },
      { ('é'):rep(300), ('é'):rep(199) .. '…' },
      { 42, '42' },
      { nil, '' },
      { { 'git', 'status' }, 'git status' },
    }
    for _, c in ipairs(cases) do
      T.eq(E.statusline(c[1]), c[2], vim.inspect(c[1]):sub(1, 60))
    end
    -- Wide characters are never split and the result fits the width.
    T.eq(E.statusline(('字'):rep(10), 8), '字字字…')
    T.eq(E.statusline(('字'):rep(10), 7), '字字字…')
    T.eq(E.statusline(('字'):rep(3), 6), '字字字')
    T.eq(E.statusline('%%%', 2), '%%…')
    T.eq(E.statusline('abc', 1), '…')
    T.eq(E.statusline('abc', 0), '')
    -- A 30 MB title costs next to nothing.
    local big = ('t'):rep(30 * 1024 * 1024)
    local t0 = vim.uv.hrtime()
    T.eq(#E.statusline(big), 199 + #'…')
    T.truthy((vim.uv.hrtime() - t0) / 1e6 < 50, 'a 30 MB string is cut first')
  end },

  { 'statusline() output evaluated as a winbar shows the literal text and runs nothing', function()
    local m = marker()
    local hostile = {
      ("%%{system('touch %s')}"):format(m),
      ("%%{%%system('touch %s')%%}"):format(m),
      ("%%!system('touch %s')"):format(m),
      ("%%{luaeval('vim.fn.writefile({}, \"%s\")')}"):format(m),
      ("a%%=b%%<c%%#Error#d%%*%%@v:lua.f@e%%X%%T"),
      ('tab\tnew\nline\0nul\27[31m'),
      (('%{'):rep(5000)),
    }
    for _, s in ipairs(hostile) do
      local out = E.statusline(s)
      local shown = vim.api.nvim_eval_statusline(out, { maxwidth = 1000, use_winbar = true }).str
      T.eq(shown, E.line(s), vim.inspect(s):sub(1, 60))
    end
    T.falsy(exists(m), 'no statusline expression ran')
  end },

  { 'line(): one display row for pickers, no % doubling; fname(), home(), arg_path()', function()
    local cases = {
      { '%{x}', '%{x}' },
      { 'title\n3: spoofed row', 'title⏎3: spoofed row' },
      { '\27]0;title\7', '�]0;title�' },
      { X100K, ('x'):rep(199) .. '…' },
    }
    for _, c in ipairs(cases) do
      T.eq(E.line(c[1]), c[2], vim.inspect(c[1]):sub(1, 60))
    end
    T.eq(E.line(('é'):rep(50), 10), ('é'):rep(9) .. '…')

    local fnames = {
      { 'a b', [[a\ b]] },
      { '`touch M`', [[\`touch\ M\`]] },
      { '%', [[\%]] },
      { '#', [[\#]] },
      { 'a|b', [[a\|b]] },
      { '$HOME', [[\$HOME]] },
      { '*.lua', [[\*.lua]] },
      { 'a\nb', 'a\\\nb' },
    }
    for _, c in ipairs(fnames) do
      T.eq(E.fname(c[1]), c[2], vim.inspect(c[1]))
    end

    local home = E.homedir()
    T.eq(home:sub(-1) ~= '/' or home == '/', true)
    local homes = {
      { '~', home },
      { '~/x', home .. '/x' },
      { '~/`touch M`', home .. '/`touch M`' },
      { '~/$(touch M)', home .. '/$(touch M)' },
      { '~root/x', '~root/x' },
      { '$HOME/x', '$HOME/x' },
      { 'a/~/b', 'a/~/b' },
      { '`touch M`', '`touch M`' },
      { '~/*', home .. '/*' },
    }
    for _, c in ipairs(homes) do
      T.eq(E.home(c[1]), c[2], c[1])
      T.eq(E.arg_path(c[1]), c[2], c[1])
    end
    -- The current buffer's name with `%` and modifiers; a backtick never.
    local m = marker()
    local file = T.tmpdir('cur') .. '/cur.txt'
    vim.cmd('silent edit ' .. vim.fn.fnameescape(file))
    T.eq(E.arg_path('%'), file)
    T.eq(E.arg_path('%:t'), 'cur.txt')
    T.eq(E.arg_path('%:p:h'), vim.fs.dirname(file))
    T.eq(E.arg_path(('`touch %s`'):format(m)), ('`touch %s`'):format(m))
    T.eq(E.arg_path(('%%:s?x?`touch %s`?'):format(m)), ('%%:s?x?`touch %s`?'):format(m))
    vim.cmd('silent bwipeout!')
    T.falsy(exists(m), 'no backtick command ran')
  end },

  { 'url(): the real host, userinfo apart; select(): rows and prompt on one line', function()
    local urls = {
      { 'https://accounts.google.com@evil.example/', { scheme = 'https', host = 'evil.example', userinfo = 'accounts.google.com' } },
      { 'https://u:pw@Host.example:8443/p?q#f', { scheme = 'https', host = 'host.example', userinfo = 'u:pw' } },
      { 'https://example.com/a@b', { scheme = 'https', host = 'example.com' } },
      { 'https://a@b@c.example/', { scheme = 'https', host = 'c.example', userinfo = 'a@b' } },
      { 'https://evil.example\\@good.example/', { scheme = 'https', host = 'evil.example' } },
      { 'https://[::1]:80/', { scheme = 'https', host = '[::1]' } },
      { 'HTTP://EXAMPLE.COM', { scheme = 'http', host = 'example.com' } },
    }
    for _, c in ipairs(urls) do
      T.eq(E.url(c[1]), c[2], c[1])
    end
    T.eq(E.url('javascript:alert(1)'), nil)
    T.eq(E.url_target('https://accounts.google.com@evil.example/'),
      'evil.example  ⚠ the text before "@" (accounts.google.com) is not the site')
    T.eq(E.url_target('https://example.com/x'), 'example.com')

    local seen
    local orig = vim.ui.select
    vim.ui.select = function(items, opts, on_choice)
      local rows = {}
      for i, it in ipairs(items) do
        rows[i] = opts.format_item(it)
      end
      seen = { prompt = opts.prompt, rows = rows }
      on_choice(items[2], 2)
    end
    local picked
    local ok, err = pcall(E.select, { 'one\n2: fake', { t = 'two' } }, {
      prompt = 'Pick\nnow',
      format_item = function(it)
        return type(it) == 'table' and it.t or it
      end,
    }, function(it)
      picked = it
    end)
    vim.ui.select = orig
    assert(ok, err)
    T.eq(seen, { prompt = 'Pick⏎now', rows = { 'one⏎2: fake', 'two' } })
    T.eq(picked, { t = 'two' })
  end },
}
