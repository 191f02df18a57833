-- Hostile displays in the floats that ask the user: option labels that read
-- as the opposite of their kind, keys typed in the review tab, commands
-- padded to hide their tail, and elicitation forms that cannot be drawn as
-- sent.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

local OPTIONS = {
  { optionId = 'o-allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'o-always', name = 'Always allow', kind = 'allow_always' },
  { optionId = 'o-reject', name = 'Reject', kind = 'reject_once' },
  { optionId = 'o-never', name = 'Never', kind = 'reject_always' },
}

--- Starts a chat whose "go" turn runs `steps`, and sends "go".
local function start(steps, opts)
  opts = opts or {}
  local child, paths = H.start({ cwd = opts.cwd, turns = { { match = 'go', steps = steps } }, config = opts.config })
  H.open(child)
  local screen = opts.screen and Screen.attach(child, opts.screen[1], opts.screen[2])
  child:lua([[require('acp').send('go')]])
  return child, paths, screen
end

local function float_lines(child)
  return child:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.permission').buf, 0, -1, false)]])
end

local permission_answers = H.permission_answers

--- The rows of the float as the screen shows them (a screenshot cut to the
--- float's cells), so text the window hides does not count.
local function float_on_screen(child, screen)
  local shot = screen:shot()
  local pos = child:lua([[
    local w = require('acp.ask.permission').win
    local p = vim.fn.win_screenpos(w)
    return { p[1], p[2], vim.api.nvim_win_get_width(w), vim.api.nvim_win_get_height(w) }
  ]])
  local out = {}
  for r = pos[1], pos[1] + pos[4] - 1 do
    out[#out + 1] = vim.fn.strcharpart(shot.text[r], pos[2] - 1, pos[3])
  end
  return table.concat(out, '\n')
end

local function elicitation_shown(child, message)
  child:wait_for([[local s = require('acp.ask.elicitation').shown
    return s ~= nil and s.payload.message == ... and require('acp.ask.elicitation').win ~= nil]], 3000, { message })
end

return {
  -- Option labels and kinds -------------------------------------------------------
  { 'an option labelled "Reject" of kind allow_once shows its kind and a warning; keys answer by kind', function()
    local swapped = {
      { optionId = 'o-rejectish', name = 'Reject', kind = 'allow_once' },
      { optionId = 'o-allowish', name = "Allow (don't worry)", kind = 'reject_once' },
      { optionId = 'o-plain', name = 'Never', kind = 'reject_always' },
    }
    local req = function(id)
      return H.req('session/request_permission', {
        toolCall = { toolCallId = id, title = 'rm -rf ~', kind = 'execute', rawInput = { command = 'rm -rf ~' } },
        options = swapped }, { background = true })
    end
    local child, paths = start({ req('s1'), req('s2'), { sleep_ms = 5000 } }, { config = { permissions = { auto_allow = {} } } })
    child:wait_for([[return #require('acp.ask.permission').queue == 2]])
    local lines = float_lines(child)
    T.contains(lines, '  1/y  Reject  [allow once]')
    T.contains(lines, '       ⚠ label and kind disagree: this answers "allow once"')
    T.contains(lines, "  2/n  Allow (don't worry)  [reject once]")
    T.contains(lines, '       ⚠ label and kind disagree: this answers "reject once"')
    T.contains(lines, '  3/N  Never  [reject always]')
    local warnings = vim.tbl_filter(function(l)
      return l:find('disagree', 1, true) ~= nil
    end, lines)
    T.eq(#warnings, 2, 'a label that agrees with its kind gets no warning')
    -- The warnings are highlighted.
    local marked = child:lua([[
      local p = require('acp.ask.permission')
      local out = {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(p.buf, -1, 0, -1, { details = true })) do
        if m[4].hl_group == 'AcpPermissionMismatch' then
          out[#out + 1] = vim.api.nvim_buf_get_lines(p.buf, m[2], m[2] + 1, false)[1]
        end
      end
      return out
    ]])
    T.eq(marked, warnings)
    -- `y` (the allow key) answers the option of kind allow_once, whatever its label.
    child:feed('<Esc>')
    H.enter_permission(child)
    child:feed('y')
    T.eq(H.wait_permission_answer(paths, 1), 'o-rejectish')
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    H.enter_permission(child)
    child:feed('n')
    T.eq(H.wait_permission_answer(paths, 2), 'o-allowish')
  end },

  -- Review tab -------------------------------------------------------------------
  { 'reading keys in the review tab opened with d answer nothing; q goes back to the question', function()
    local child, paths = start({
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'e', title = 'Edit cfg.json', kind = 'edit',
          content = { { type = 'diff', path = '/p/cfg.json', oldText = '{"a": 1}\n', newText = '{"a": 2}\n' } } },
        options = OPTIONS }),
    }, { config = { permissions = { grace_ms = 50 } } })
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    child:feed('<Esc>')
    H.enter_permission(child)
    child:feed('d')
    T.eq(child:lua('return #vim.api.nvim_list_tabpages()'), 2)
    T.eq(child:lua('return vim.wo.diff'), true)
    -- Well past the grace period, in both windows of the review.
    vim.wait(200)
    for _, keys in ipairs({ '2j', 'yy', 'y', '1', 'a', 'n', 'N', '<C-w>w', '2j', 'yy', 'y', '1', 'a' }) do
      child:feed(keys)
      child:feed('<Esc>') -- ends an operator left pending (`y` alone)
    end
    vim.wait(300)
    T.eq(permission_answers(paths), {}, 'no key of the review tab answered')
    T.eq(child:lua([[return #require('acp.ask.permission').queue]]), 1)
    T.eq(child:lua('return #vim.api.nvim_list_tabpages()'), 2, 'still reviewing')
    local bars = child:lua([[
      local out = {}
      for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do out[#out + 1] = vim.wo[w].winbar end
      return table.concat(out, '\n')
    ]])
    T.match(bars, 'q close %(back to the question%)')
    -- q closes the review and puts the cursor back in the float.
    child:feed('q')
    T.eq(child:lua('return #vim.api.nvim_list_tabpages()'), 1)
    child:wait_for([[local p = require('acp.ask.permission')
      return p.armed and vim.api.nvim_get_current_win() == p.win]], 3000)
    child:feed('y')
    T.wait(function()
      return #permission_answers(paths) == 1
    end, 3000)
    T.eq(permission_answers(paths)[1].result, { outcome = { outcome = 'selected', optionId = 'o-allow' } })
  end },

  -- Long commands ----------------------------------------------------------------
  { 'a command padded with 3,000 spaces: the float shows its tail and every option; K shows it all', function()
    local command = 'echo start' .. (' '):rep(3000) .. '; touch /tmp/hidden-TAIL'
    local child, paths, screen = start({
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'pad', title = command, kind = 'execute', rawInput = { command = command } },
        options = OPTIONS }),
    }, { screen = { 100, 40 } })
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    local lines = float_lines(child)
    T.eq(#vim.tbl_filter(function(l)
      return vim.endswith(l, ' echo start␠×3000; touch /tmp/hidden-TAIL')
    end, lines), 2, 'the title and the command, each on one row')
    -- (No room beside its card: the request shows inline there; the float opens on demand.)
    H.enter_permission(child)
    local shown = float_on_screen(child, screen)
    for _, want in ipairs({ 'hidden-TAIL', '1/y  Allow', '2/a  Always allow', '3/n  Reject', '4/N  Never', 'K  show all' }) do
      T.contains(shown, want, 'visible in the float')
    end
    -- K opens the whole request in a split; its keys answer nothing.
    child:feed('<Esc>')
    H.enter_permission(child)
    child:feed('K')
    T.neq(child:lua([[return vim.api.nvim_get_current_win()]]), child:lua([[return require('acp.ask.permission').win]]))
    T.contains(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]), '  ' .. command)
    child:feed('y1a')
    vim.wait(200)
    T.eq(permission_answers(paths), {})
    screen:detach()
  end },

  { 'a terminal confirmation of a padded command shows its tail, cwd, every env var and the options', function()
    local dir = H.project()
    local marker = dir .. '/TAIL-ran'
    local command = 'git status' .. (' '):rep(3000) .. '&& touch ' .. marker
    local env = {
      { name = 'GIT_CONFIG_COUNT', value = '1' },
      { name = 'GIT_CONFIG_KEY_0', value = 'core.pager' },
      { name = 'GIT_CONFIG_VALUE_0', value = 'touch ' .. dir .. '/pager-ran' },
    }
    local child, paths, screen = start({
      H.req('terminal/create', { command = command, cwd = dir, env = env }),
    }, { cwd = dir, screen = { 110, 40 }, config = { terminal = { confirm = 'always' } } })
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    local shown = float_on_screen(child, screen)
    for _, want in ipairs({ 'TAIL-ran', 'in ' .. dir, 'GIT_CONFIG_COUNT=1', 'GIT_CONFIG_KEY_0=core.pager',
      'GIT_CONFIG_VALUE_0=touch ' .. dir .. '/pager-ran', '1/y  Run', "2/n  Don't run" }) do
      T.contains(shown, want, 'visible in the float')
    end
    child:feed('<Esc>')
    H.enter_permission(child)
    child:feed('n')
    T.wait(function()
      return #H.responses(paths) == 1
    end, 3000)
    T.match(H.responses(paths)[1].error.message, 'declined')
    T.eq(vim.uv.fs_stat(marker), nil)
    screen:detach()
  end },

  { 'a command of 3,000 lines keeps the options in view', function()
    local command = ('echo x\n'):rep(3000) .. 'rm -rf LAST-LINE'
    local child, _, screen = start({
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'many', title = 'script', kind = 'execute', rawInput = { command = command } },
        options = OPTIONS }),
    }, { screen = { 100, 40 } })
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    local shown = float_on_screen(child, screen)
    for _, want in ipairs({ 'rm -rf LAST-LINE', '1/y  Allow', '4/N  Never', 'K  show all' }) do
      T.contains(shown, want, 'visible in the float')
    end
    T.truthy(#float_lines(child) < 30, 'the float stays small')
    screen:detach()
  end },

  -- Elicitation ------------------------------------------------------------------
  { 'elicitation: a title and keys with newlines are shown on one line; the forms after it still show', function()
    local schema = { type = 'object', properties = { name = { type = 'string' } } }
    local bad = { type = 'object', title = 'Deploy\nsettings\27[31m',
      properties = { ['two\nlines'] = { type = 'string', description = 'a\nb' }, plain = { type = 'string' } } }
    local child, paths = start({
      H.req('elicitation/create', { mode = 'form', message = 'First', requestedSchema = schema },
        { background = true, expect = { action = 'accept', content = { name = 'one' } } }),
      H.req('elicitation/create', { mode = 'form', message = 'Bad', requestedSchema = bad },
        { background = true, expect = { action = 'accept', content = { ['two\nlines'] = 'x', plain = 'y' } } }),
      H.req('elicitation/create', { mode = 'form', message = 'Third', requestedSchema = schema },
        { expect = { action = 'accept', content = { name = 'three' } } }),
      { message = 'done' },
    })
    elicitation_shown(child, 'First')
    child:cmd('AcpElicitation')
    child:lua([[vim.api.nvim_buf_set_lines(0, -2, -1, false, { 'name: one' })]])
    child:feed('<C-s>')
    elicitation_shown(child, 'Bad')
    local lines = child:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.elicitation').buf, 0, -1, false)]])
    T.eq(lines[1], '# Deploy⏎settings␛[31m')
    T.contains(lines, 'two⏎lines: ')
    child:cmd('AcpElicitation')
    child:lua([[
      local l = vim.api.nvim_buf_get_lines(0, 0, -1, false)
      for i, s in ipairs(l) do
        if s == 'two⏎lines: ' then l[i] = 'two⏎lines: x' elseif s == 'plain: ' then l[i] = 'plain: y' end
      end
      vim.api.nvim_buf_set_lines(0, 0, -1, false, l)
    ]])
    child:feed('<C-s>')
    elicitation_shown(child, 'Third')
    child:cmd('AcpElicitation')
    child:lua([[vim.api.nvim_buf_set_lines(0, -2, -1, false, { 'name: three' })]])
    child:feed('<C-s>')
    H.wait_idle(child)
    T.eq(#H.events_of(paths, 'check_failed'), 0)
    T.eq(#H.events_of(paths, 'check_ok'), 3)
  end },

  { 'elicitation: a form that cannot be drawn is answered cancel with a line in the chat; the next form shows', function()
    local schema = { type = 'object', properties = { name = { type = 'string' } } }
    local child, paths = start({
      H.req('elicitation/create', { mode = 'form', message = 'First', requestedSchema = schema },
        { background = true, expect = { action = 'accept', content = { name = 'one' } } }),
      H.req('elicitation/create', { mode = 'form', message = 'Undrawable', requestedSchema = schema },
        { background = true, expect = { action = 'cancel' } }),
      H.req('elicitation/create', { mode = 'form', message = 'Third', requestedSchema = schema },
        { expect = { action = 'accept', content = { name = 'three' } } }),
      { message = 'done' },
    })
    -- Drawing the second form fails (any failure: here its window).
    child:lua([[
      local open = vim.api.nvim_open_win
      vim.api.nvim_open_win = function(buf, enter, cfg)
        if vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == '# Undrawable' then error('no room for this window') end
        return open(buf, enter, cfg)
      end
    ]])
    elicitation_shown(child, 'First')
    child:cmd('AcpElicitation')
    child:lua([[vim.api.nvim_buf_set_lines(0, -2, -1, false, { 'name: one' })]])
    child:feed('<C-s>')
    elicitation_shown(child, 'Third')
    child:wait_for([[return table.concat(require('acp').current():lines(), '\n'):find('could not be shown', 1, true) ~= nil]], 3000)
    T.match(H.transcript_text(child), 'request for input could not be shown %(no room for this window%); it was answered "cancel"')
    child:cmd('AcpElicitation')
    child:lua([[vim.api.nvim_buf_set_lines(0, -2, -1, false, { 'name: three' })]])
    child:feed('<C-s>')
    H.wait_idle(child)
    T.eq(#H.events_of(paths, 'check_failed'), 0)
    T.eq(#H.events_of(paths, 'check_ok'), 3)
    T.eq(child:lua([[return #require('acp.ask.elicitation').queue]]), 0)
  end },
}
