-- The chat's header and the review's bars keep what matters: the header
-- shows agent, state, mode, model and usage first and the agent's title
-- last, cut at the right with "…" to the window's width (again after a
-- resize); both review panes have a bar (rows line up) that never hides
-- "Review i/n <file>"; the header and the status area say the same state.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

--- An agent-set title of about 200 characters with a `%` in it (Claude
--- uses the whole prompt as the title).
local TITLE = 'Refactor the expression parser so that 100% of the tests in tests/parser pass again, '
  .. 'then update the documentation of every public function in src/parser and explain the '
  .. 'changes in the changelog entry'

local function config_options()
  return {
    { id = 'mode', name = 'Mode', category = 'mode', type = 'select', currentValue = 'ask',
      options = { { value = 'ask', name = 'Ask' }, { value = 'auto', name = 'Auto' } } },
    { id = 'model', name = 'Model', category = 'model', type = 'select', currentValue = 'sonnet',
      options = { { value = 'sonnet', name = 'Sonnet 4.5' }, { value = 'opus', name = 'Opus 4.1' } } },
  }
end

--- The header as drawn in the chat's window (its width, evaluated).
local SHOWN = [[
  local v = require('acp').current()
  vim.cmd('redraw')
  return vim.api.nvim_eval_statusline(vim.wo[v.win].winbar,
    { winid = v.win, use_winbar = true, maxwidth = vim.api.nvim_win_get_width(v.win) }).str
]]

--- The chat's header row on the screen (the chat is a 'bottom' chat: the
--- row of its transcript window's top).
local function header_row(child, shot)
  local row = child:lua([[local v = require('acp').current(); return vim.api.nvim_win_get_position(v.win)[1] ]])
  return shot.text[row + 1]
end

return {
  { 'a long agent title is cut at the right with "…" after agent, state, mode, model and usage, at 160 and 80 columns', function()
    local child = H.start({
      agent_info = { config_options = config_options() },
      config = { chat = { position = 'bottom' } },
      turns = { { match = 'go', steps = {
        { update = { sessionUpdate = 'usage_update', used = 50000, size = 200000 } },
        { update = { sessionUpdate = 'session_info_update', title = TITLE } },
        { message = 'On it.' },
      } } },
    })
    local screen = Screen.attach(child, 160, 18)
    H.open(child)
    child:cmd('AcpModel opus')
    child:wait_for([[return require('acp').status().model == 'Opus 4.1']])
    H.turn(child, 'go')
    child:cmd('stopinsert')
    local shot = screen:shot()
    local row = header_row(child, shot)
    T.match(row, '^ ACP  test · ready · %[Ask%] · Opus 4%.1 · ctx 25%% · Refactor the expression parser so that 100%% of')
    T.match(row, '…$', 'the title is cut at the right edge with "…"')
    Screen.expect(shot, 'header-160')
    -- `%` in the title is text, never a statusline item.
    local bar = child:lua([[return vim.wo[require('acp').current().win].winbar]])
    T.match(bar, '100%%%%')
    T.match(child:lua(SHOWN), '100%% of')
    -- The screen narrows: the header is fitted again.
    screen:request('nvim_ui_try_resize', 80, 18)
    child:wait_for([[local v = require('acp').current(); return vim.api.nvim_win_get_width(v.win) == 80]])
    shot = screen:shot()
    row = header_row(child, shot)
    T.match(row, '^ ACP  test · ready · %[Ask%] · Opus 4%.1 · ctx 25%% · Refactor the exp')
    T.match(row, '…$', 'the title is cut at the right edge with "…"')
    Screen.expect(shot, 'header-80')
  end },

  { 'a header narrower than agent, state, mode and model is cut at the right, never the left', function()
    local child = H.start({
      agent_info = { config_options = config_options() },
      turns = { { match = 'go', steps = { { update = { sessionUpdate = 'session_info_update', title = TITLE } } } } },
    })
    H.open(child)
    H.turn(child, 'go')
    child:lua([[vim.api.nvim_win_set_width(require('acp').current().win, 30)]])
    child:wait_for([[return vim.api.nvim_win_get_width(require('acp').current().win) == 30]])
    local shown = child:lua(SHOWN)
    T.match(shown, '^ ACP  test · ready · %[Ask%]')
    T.no_match(shown, 'Refactor', 'no title when even the parts before it do not fit')
  end },

  { 'Claude\'s names at a third of the screen: usage and effort give way, the model is cut with "…", never by Neovim', function()
    -- The shapes claude-agent-acp sends: mode, model and effort as config options.
    local function select(id, category, value)
      return { id = id, name = id, category = category, type = 'select', currentValue = value,
        options = { { value = value, name = value } } }
    end
    local child = H.start({
      agent_info = { config_options = {
        select('mode', 'mode', 'Manual'), select('model', 'model', 'Default (recommended)'), select('effort', 'thought_level', 'Default'),
      } },
      config = { chat = { width = 50 } },
      turns = { { match = 'go', steps = {
        { update = { sessionUpdate = 'usage_update', used = 0, size = 200000 } },
        { message = 'On it.' },
        { update = { sessionUpdate = 'session_info_update', title = TITLE } },
      } } },
    })
    H.open(child)
    H.turn(child, 'go')
    child:wait_for([[return vim.api.nvim_win_get_width(require('acp').current().win) == 50]])
    T.eq(child:lua(SHOWN), ' ACP  test · ready · [Manual] · Default (recommen…')
    child:lua([[vim.api.nvim_win_set_width(require('acp').current().win, 90)]])
    child:wait_for([[return vim.api.nvim_win_get_width(require('acp').current().win) == 90]])
    T.match(child:lua(SHOWN), '^ ACP  test · ready · %[Manual%] · Default %(recommended%) · Default · ctx 0%% · Refactor')
  end },

  { 'the review: both panes have a bar (rows line up); a long path is shortened from its left, the file name kept', function()
    local dir = H.project({ ['src/components/editor/expression_parser_module/parser.lua'] = 'local a = 1\nreturn a\n',
      ['README.md'] = '# title\n' })
    local long = dir .. '/src/components/editor/expression_parser_module/parser.lua'
    local child = H.start({ cwd = dir, turns = { { match = 'go', steps = {
      H.req('fs/write_text_file', { path = long, content = 'local a = 2\nreturn a\n' }),
      H.req('fs/write_text_file', { path = dir .. '/README.md', content = '# Title\n' }),
      { message = 'done' },
    } } } })
    local screen = Screen.attach(child, 80, 12)
    -- No tab line: the tab labels are not what this screenshot is about.
    child:lua([[vim.o.showtabline = 0]])
    H.open(child)
    H.turn(child, 'go')
    child:cmd('AcpReview')
    child:wait_for([[return require('acp.editor.review').last ~= nil and #vim.api.nvim_tabpage_list_wins(0) == 2]])
    local shot = screen:shot()
    local rows = shot.text
    -- Both bars are on row 1, the first lines on row 2.
    local wins = child:lua([[
      local out = {}
      for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
        out[#out + 1] = { bar = vim.wo[w].winbar ~= '', row = vim.fn.win_screenpos(w)[1] }
      end
      return out
    ]])
    T.eq(wins, { { bar = true, row = 1 }, { bar = true, row = 1 } })
    T.match(rows[1], '^ Review 1/2  …[^ ]*/parser%.lua')
    T.match(rows[1], '│ File  …[^ ]*/parser%.lua')
    Screen.expect(shot, 'review-winbars')
  end },

  { 'while cancelling, the header and the status area both say cancelling…', function()
    local child = H.start({ turns = { { match = 'long', ignore_cancel = true, steps = {
      { message = 'working' }, { wait_cancel = true }, { sleep_ms = 3000 },
    } } } })
    H.open(child)
    child:lua([[require('acp').send('long')]])
    child:wait_for([[local v = require('acp').current()
      return vim.tbl_contains(v:lines(), 'working') and require('acp.chat.status').win(v) ~= nil]])
    child:lua([[require('acp').cancel()]])
    child:wait_for([[return require('acp').current().status_detail == 'cancelling']])
    local header = child:lua(SHOWN)
    local area = child:lua([[
      local v = require('acp').current()
      require('acp.chat.status').update(v)
      return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(require('acp.chat.status').win(v)), 0, -1, false)
    ]])
    T.match(header, 'cancelling…')
    T.match(area[1], '^cancelling… · ')
    T.no_match(table.concat(area, '\n'), 'working…')
  end },
}
