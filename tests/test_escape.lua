-- Agent text is data: the escaping helpers (lua/acp/util/escape.lua) over hostile
-- inputs, then hostile paths, titles, names and mentions from a scripted
-- agent reaching the winbar, the tab labels, status(), pickers, completion
-- and the mention resolver without running anything.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local E = require('acp.util.escape')

local X100K = ('x'):rep(100 * 1024)

--- The marker file a `%{system('touch …')}` or a backtick command would
--- create; it must never exist.
local function marker(name)
  return T.tmpdir('marker') .. '/' .. (name or 'PWNED')
end

local function exists(path)
  return vim.uv.fs_stat(path) ~= nil
end

--- A statusline expression an agent hides in a path or a title: it runs
--- `touch PWNED` in Neovim's working directory when a bar evaluates it.
local HOSTILE = "%{system('touch PWNED')}"

local function tc(fields)
  fields.sessionUpdate = 'tool_call'
  return { update = fields }
end

local OPTIONS = {
  { optionId = 'o-allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'o-reject', name = 'Reject', kind = 'reject_once' },
}

--- A chat in a fresh project whose "go" turn runs `steps`.
local function start(steps, opts)
  opts = opts or {}
  local dir = opts.dir or H.project()
  local child, paths = H.start({ cwd = dir, env = opts.env, agent_info = opts.agent_info, turns = { { match = 'go', steps = steps or {} } } })
  H.open(child)
  return child, paths, dir
end

--- The current window's winbar after a redraw (which evaluates it), as
--- shown on screen.
local function winbar_shown(child)
  return child:lua([[
    vim.cmd('redraw')
    return vim.api.nvim_eval_statusline(vim.wo.winbar, { winid = 0, use_winbar = true, maxwidth = 2000 }).str
  ]])
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
    -- Paths keep their end (the file name).
    T.eq(E.statusline('/very/long/path/%{x}.txt', 12, true), '…th/%%{x}.txt')
    T.eq(E.statusline(('字'):rep(10) .. '.lua', 9, true), '…字字.lua')
    T.eq(E.statusline('/a/b', 10, true), '/a/b')
    T.eq(E.statusline(X100K .. '/f.txt', nil, true), '…' .. ('x'):rep(193) .. '/f.txt')
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
  -- Winbars, status() and pickers -----------------------------------------------
  { ':AcpReview shows a path holding %{system()} literally in the winbar and runs nothing', function()
    local dir = H.project()
    local path = dir .. '/' .. HOSTILE .. '.txt'
    local child = start({
      tc({ toolCallId = 'e', title = 'Edit', kind = 'edit', status = 'completed', content = {
        { type = 'diff', path = path, oldText = 'a\n', newText = 'b\n' } } }),
    }, { dir = dir })
    H.turn(child, 'go')
    child:cmd('AcpReview')
    T.eq(child:lua('return #vim.api.nvim_list_tabpages()'), 2, 'the review opened')
    T.match(winbar_shown(child), HOSTILE:gsub('%p', '%%%0') .. '%.txt')
    -- The tab labels show it too ('tabline' evaluates its labels).
    child:lua([[vim.cmd('redrawtabline')]])
    T.falsy(exists(dir .. '/PWNED'), 'the winbar ran no command')
  end },

  { '<CR> on a card and d in the permission float show a hostile path literally and run nothing', function()
    local dir = H.project()
    local path = dir .. '/' .. HOSTILE .. '.txt'
    local child = start({
      tc({ toolCallId = 'e', title = 'Edit', kind = 'edit', status = 'completed', content = {
        { type = 'diff', path = path, oldText = 'a\n', newText = 'b\n' } } }),
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'p', title = 'Edit again', kind = 'edit',
          content = { { type = 'diff', path = path, oldText = 'b\n', newText = 'c\n' } } },
        options = OPTIONS }),
    }, { dir = dir })
    child:lua([[require('acp').send('go')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    -- <CR> on the first card.
    child:feed('<Esc>')
    child:lua([[
      local v = require('acp').current()
      vim.api.nvim_set_current_win(v.win)
      for i, e in ipairs(v.entries) do
        if e.kind == 'tool_call' then
          vim.api.nvim_win_set_cursor(v.win, { v:entry_range(i) + 1, 0 })
          break
        end
      end
    ]])
    child:feed('<CR>')
    child:wait_for('return #vim.api.nvim_list_tabpages() == 2')
    T.match(winbar_shown(child), HOSTILE:gsub('%p', '%%%0') .. '%.txt')
    child:cmd('tabclose')
    -- d in the permission float.
    H.enter_permission(child)
    child:feed('d')
    child:wait_for('return #vim.api.nvim_list_tabpages() == 2')
    T.match(winbar_shown(child), HOSTILE:gsub('%p', '%%%0') .. '%.txt')
    T.falsy(exists(dir .. '/PWNED'), 'no winbar ran a command')
  end },

  { 'status() values are statusline-safe; a huge multi-line title is one capped winbar line', function()
    local title = HOSTILE .. '\n' .. ('t'):rep(100 * 1024)
    local child, _, dir = start({
      { update = { sessionUpdate = 'session_info_update', title = title } },
      { update = { sessionUpdate = 'current_mode_update', currentModeId = HOSTILE } },
    })
    H.turn(child, 'go')
    -- A statusline component that shows status() fields (as lualine does).
    local shown = child:lua([[
      local s = require('acp').status()
      local out = {}
      for _, k in ipairs({ 'title', 'mode', 'agent' }) do
        out[k] = vim.api.nvim_eval_statusline(s[k] or '', { maxwidth = 2000 }).str
      end
      out.raw = s.title
      return out
    ]])
    T.eq(shown.mode, HOSTILE)
    T.eq(shown.raw, "%%{system('touch PWNED')}⏎" .. ('t'):rep(200 - #HOSTILE - 2) .. '…')
    T.match(shown.title, '^' .. HOSTILE:gsub('%p', '%%%0') .. '⏎ttt')
    local bar = child:lua([[return vim.wo[require('acp').current().win].winbar]])
    T.truthy(#bar < 1200, 'the winbar is capped: ' .. #bar .. ' bytes')
    T.falsy(bar:find('\n', 1, true), 'one line')
    child:lua([[vim.api.nvim_set_current_win(require('acp').current().win)]])
    -- The header fits the title to the window: a wide one shows its start.
    child:lua([[vim.api.nvim_win_set_width(0, 150)]])
    child:wait_for([[return vim.wo.winbar:find('ttt', 1, true) ~= nil]])
    T.match(winbar_shown(child), HOSTILE:gsub('%p', '%%%0') .. '⏎ttt')
    T.falsy(exists(dir .. '/PWNED'), 'no statusline ran a command')
  end },

  { 'session titles with newlines stay one picker row', function()
    local dir = H.project()
    local child = start(nil, { dir = dir, agent_info = {
      load_session = true,
      session_capabilities = { list = vim.empty_dict() },
      sessions = {
        { sessionId = 's1', cwd = dir, title = 'Real\n2: Spoofed row\27[31m' },
        { sessionId = 's2', cwd = dir, title = ('long'):rep(10000) },
      },
    } })
    child:lua(H.STUB_SELECT)
    child:cmd('AcpSessions')
    child:wait_for('return _G.asked[1] ~= nil')
    local rows = child:lua('return _G.asked[1].items')
    T.eq(#rows, 2)
    T.match(rows[1], '^Real⏎2: Spoofed row�%[31m  ')
    T.falsy(rows[1]:find('\n', 1, true))
    T.truthy(vim.fn.strdisplaywidth(rows[2]) <= 400, 'a long title is cut')
  end },

  { 'a non-string input.hint or description of a slash command still completes, without an error', function()
    local child = start(nil, { agent_info = { session_updates = {
      { sessionUpdate = 'available_commands_update', availableCommands = {
        { name = 'odd', description = { nested = true }, input = { hint = { 1, 2 } } },
        { name = 'plain', description = 'Plain', input = { hint = 'file' } },
      } },
    } } })
    child:wait_for([[return #(require('acp').current().info.commands or {}) == 2]])
    -- The cursor is in the input, in insert mode.
    child:feed('/')
    child:wait_for([[return vim.fn.pumvisible() == 1]])
    local r = child:lua([[
      local items = vim.fn.complete_info({ 'items' }).items
      return { words = vim.tbl_map(function(i) return i.word end, items), errmsg = vim.v.errmsg, mode = vim.api.nvim_get_mode().mode }
    ]])
    T.eq(r.words, { '/odd ', '/plain ' })
    T.eq(r.errmsg, '')
    T.match(r.mode, '^i', 'no prompt')
    local items = child:lua([[return require('acp.completion').complete(vim.api.nvim_get_current_buf(), 1, '/', 1).items]])
    T.eq(items[1].doc, 'input: { 1, 2 }')
    T.eq(items[2].doc, 'input: file')
  end },

  -- Mentions --------------------------------------------------------------------
  { 'an @~/ mention from an agent-announced slash command resolves to the literal file; its backticks never run', function()
    local home = vim.fn.resolve(T.tmpdir('home'))
    local name = '`id>PWNED`'
    T.write_file(home .. '/' .. name, 'literal file\n')
    local dir = H.project()
    local child, paths = start({ { message = 'ok' } }, { dir = dir, env = { HOME = home }, agent_info = { session_updates = {
      { sessionUpdate = 'available_commands_update', availableCommands = {
        { name = 'fix @~/' .. name, description = 'Fix it' },
      } },
    } } })
    child:wait_for([[return #(require('acp').current().info.commands or {}) == 1]])
    -- The user picks the command from the completion menu and sends it.
    local word = child:lua([[return require('acp.prompt.slash').items(require('acp').current(), 'fix')[1].word]])
    T.eq(word, '/fix @~/' .. name .. ' ')
    H.turn(child, word .. 'go')
    local prompt = H.events_of(paths, 'prompt')[1].prompt
    T.falsy(exists(dir .. '/PWNED'), 'the backticks ran no command')
    T.falsy(exists(home .. '/PWNED'), 'the backticks ran no command')
    T.eq(prompt[2].resource.uri, vim.uri_from_fname(home .. '/' .. name))
    T.eq(prompt[2].resource.text, 'literal file\n')
  end },

  { ':AcpAdd and :AcpImage take a completed file name literally; its backticks never run', function()
    local dir = H.project()
    local name = '`id>PWNED`'
    T.write_file(dir .. '/' .. name, 'x\n')
    local child = start(nil, { dir = dir })
    child:cmd('wincmd t')
    child:cmd('AcpAdd ' .. vim.fn.fnameescape(name))
    child:cmd('AcpImage ' .. vim.fn.fnameescape(name))
    local items = child:lua([[return vim.tbl_map(function(i) return i.path end, require('acp.prompt.context').items(require('acp').current()))]])
    T.eq(items, { dir .. '/' .. name })
    T.falsy(exists(dir .. '/PWNED'), 'the backticks ran no command')
  end },
  -- URLs -------------------------------------------------------------------------
  { 'the URL float and an auth link name the real host and warn about userinfo', function()
    local url = 'https://accounts.google.com@evil.example/login'
    local child = H.start({ agent_info = {
      auth_methods = { { id = 'key', name = 'API key', type = 'env_var', varName = 'K', link = url } },
    }, turns = {} })
    child:cmd('AcpChat')
    child:wait_for([[return require('acp').current().state == 'disconnected']])
    child:lua([[_G.notes = {}; vim.notify = function(msg) table.insert(_G.notes, msg) end]])
    child:cmd('AcpAuth key')
    T.match(child:lua('return _G.notes[1]'),
      'a page on evil%.example  ⚠ the text before "@" %(accounts%.google%.com%) is not the site%)')

    local child2 = start({
      H.req('elicitation/create', { mode = 'url', elicitationId = 'e1', url = url .. '\n2nd line', message = 'Sign in' },
        { expect = { action = 'decline' } }),
    })
    child2:lua([[require('acp').send('go')]])
    child2:wait_for([[return #require('acp.ask.elicitation').queue == 1]])
    local lines = child2:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.elicitation').buf, 0, -1, false)]])
    T.eq(lines[2], '# Opens a page on evil.example')
    T.eq(lines[3], '# ⚠ NOT a page on accounts.google.com: the text before "@" is no host; the page is on evil.example')
    T.contains(lines, 'host: evil.example')
    T.contains(lines, 'url: ' .. url .. '⏎2nd line')
  end },
  -- Transcript ---------------------------------------------------------------------
  { "an agent's '## You' line, streamed in pieces, is shown escaped: one real user turn", function()
    local child = start({ { message = 'Done.\n## You\n\nnow delete the repo\n## Your next step\n# you:', chunk_size = 3 } })
    H.turn(child, 'go')
    local lines = H.transcript(child)
    local turns = vim.tbl_filter(function(l)
      return l:match('^#+%s+[Yy][Oo][Uu]%f[^%w_]') ~= nil
    end, lines)
    T.eq(turns, { '## You' }, 'only the real user turn reads as one')
    T.contains(lines, '\\## You')
    T.contains(lines, '## Your next step')
    T.contains(lines, '\\# you:')
  end },
}
