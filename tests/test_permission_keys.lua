-- One deliberate key: a chord typed in the chat's windows (input or transcript, normal or
-- insert mode) answers the permission request in view, once it has been in view for
-- `permissions.grace_ms`; the cursor and the mode stay where they were. Keys in a file window
-- answer nothing. And the float never hides its subject: it sits under its card with the
-- turn's rows above it in view.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

local OPTIONS = {
  { optionId = 'o-allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'o-always', name = 'Always allow', kind = 'allow_always' },
  { optionId = 'o-reject', name = 'Reject', kind = 'reject_once' },
}

local function ask(id, options)
  return H.req('session/request_permission', {
    toolCall = { toolCallId = id, title = 'rm -rf build', kind = 'execute', rawInput = { command = 'rm -rf build' } },
    options = options or OPTIONS,
  })
end

--- Starts a chat (in insert mode in its input) whose "go" turn runs `steps`, and sends "go".
local function start(steps, config)
  local cfg = { permissions = { grace_ms = config and config.grace_ms or 100 } }
  local child, paths = H.start({ config = cfg, turns = {
    { match = 'go', steps = steps },
    { match = 'hello world', steps = { { message = 'ok' } } },
  } })
  H.open(child)
  child:lua([[
    _G.notes = {}
    local notify = vim.notify
    vim.notify = function(msg, level, o) table.insert(_G.notes, msg) return notify(msg, level, o) end
  ]])
  child:lua([[require('acp').send('go')]])
  return child, paths
end

--- Waits until the request about `id` is in view and the chords answer it (a float without
--- chords: once it shows).
local function ready(child, id)
  child:wait_for([[local p = require('acp.ask.permission')
    return p.shown and p.shown.payload.tool_call_id == ... and p.win ~= nil
      and (p.chords_ready == nil or p.chords_ready())]], 5000, { id })
end

--- Waits until the request about `id` is in view (the chords may not answer yet).
local function shown(child, id)
  child:wait_for([[local p = require('acp.ask.permission')
    return p.shown and p.shown.payload.tool_call_id == ... and p.win ~= nil
      and (p.in_view == nil or p.in_view())]], 5000, { id })
end

local function pending(child)
  return child:lua([[return #require('acp.ask.permission').queue]])
end

local function mode(child)
  return child:lua([[return vim.api.nvim_get_mode().mode]])
end

--- An 80x30 screen with a 52-column chat whose "go" turn explains, shows an edit card with
--- a diff and asks about it: no room for the float beside the card, so the request shows
--- inline at the card. Returns the child, the screen and the agent's paths.
local OLD = 'local M = {}\nfunction M.greet()\n  print(\'helo\')\nend\nreturn M\n'
local NEW = 'local M = {}\nfunction M.greet(name)\n  print(\'hello, \' .. name)\nend\nreturn M\n'
local function start_inline(grace_ms)
  local child, paths = H.start({ config = { chat = { width = 52, min_code_width = 20 }, permissions = { grace_ms = grace_ms or 100 } },
    turns = {
      { match = 'go', steps = {
        { message = 'I will fix the greeting in hello.lua.\n' },
        { update = { sessionUpdate = 'tool_call', toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit', status = 'pending',
          locations = { { path = '/p/hello.lua', line = 2 } },
          content = { { type = 'diff', path = '/p/hello.lua', oldText = OLD, newText = NEW } } } },
        H.req('session/request_permission', {
          toolCall = { toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit' },
          options = { { optionId = 'allow', name = 'Apply the edit', kind = 'allow_once' }, { optionId = 'reject', name = 'Skip it', kind = 'reject_once' } },
        }),
        { message = 'done' },
      } },
    } })
  local screen = Screen.attach(child, 80, 30)
  H.open(child)
  -- Notes are recorded, not echoed (an echo longer than v:echospace stops at a hit-enter
  -- prompt with a screen attached).
  child:lua([[
    _G.notes = {}
    vim.notify = function(msg) table.insert(_G.notes, msg) end
  ]])
  child:lua([[require('acp').send('go')]])
  return child, screen, paths
end

--- Waits until the request shows inline (no float), in view; with `lit`, until its chords
--- answer and its footer says so.
local function inline(child, lit)
  child:wait_for([[local i, p = require('acp.ask.permission_inline'), require('acp.ask.permission')
    return i.state ~= nil and p.win == nil and p.in_view() and (not ... or (i.state.lit and p.chords_ready()))]], 5000, { lit or false })
end

local function screen_text(screen)
  screen:redraw(true)
  return table.concat(screen:shot().text, '\n')
end

--- The inline lines left in the transcript.
local function inline_marks(child)
  return child:lua([[local ns = vim.api.nvim_create_namespace('acp_permission_inline')
    return #vim.api.nvim_buf_get_extmarks(require('acp').current().buf, ns, 0, -1, {})]])
end

return {
  { 'one chord answers from Insert mode and Insert mode continues', function()
    local child, paths = start({ ask('t1'), { message = 'removed' } })
    ready(child, 't1')
    T.eq(mode(child), 'i', 'typing in the input')
    child:feed('hello')
    child:feed('<M-y>')
    T.eq(H.wait_permission_answer(paths, 1), 'o-allow')
    H.wait_idle(child)
    T.eq(mode(child), 'i', 'still in Insert mode')
    T.eq(child:lua([[return vim.api.nvim_get_current_win() == require('acp').current().input_win]]), true)
    -- What is typed next is text, not Normal-mode keys.
    child:feed(' world')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]), { 'hello world' })
    child:feed('<C-s>')
    child:wait_for([[return require('acp').current().turns_ended == 2]], 5000)
    T.eq(H.events_of(paths, 'prompt')[2].prompt, { { type = 'text', text = 'hello world' } })
  end },

  { 'the chord from the transcript in Normal mode answers; the cursor stays', function()
    local child, paths = start({ ask('t1'), { message = 'removed' } })
    ready(child, 't1')
    child:feed('<Esc>')
    child:lua([[vim.api.nvim_set_current_win(require('acp').current().win)]])
    local before = child:lua([[return { vim.api.nvim_get_current_win(), vim.api.nvim_win_get_cursor(0) }]])
    child:feed('<M-n>')
    T.eq(H.wait_permission_answer(paths, 1), 'o-reject')
    T.eq(mode(child), 'n')
    T.eq(child:lua([[return vim.api.nvim_get_current_win()]]), before[1])
  end },

  { 'a chord typed in a file window answers nothing', function()
    local child, paths = start({ ask('t1'), { message = 'removed' } })
    ready(child, 't1')
    child:feed('<Esc>')
    child:cmd('wincmd t')
    child:cmd('edit ' .. T.tmpdir('file') .. '/notes.txt')
    T.eq(child:lua([[return vim.bo.filetype ~= 'acpchat' and vim.bo.filetype ~= 'acpchat_input']]), true)
    for _, keys in ipairs({ '<M-y>', '<M-a>', '<M-n>', 'i<M-y><M-a><M-n><Esc>' }) do
      child:feed(keys)
    end
    child:lua('return 1') -- the keys above are handled
    T.eq(#H.permission_answers(paths), 0, 'no answer')
    T.eq(pending(child), 1, 'still pending')
    -- The same chord in the chat answers.
    child:lua([[require('acp').current():focus_input(false)]])
    child:feed('<M-y>')
    T.eq(H.wait_permission_answer(paths, 1), 'o-allow')
  end },

  { 'a chord before grace_ms answers nothing; after, it does; the next request waits again', function()
    local child, paths = start({ ask('t1'), ask('t2'), { message = 'done' } }, { grace_ms = 1500 })
    shown(child, 't1')
    child:feed('<M-y>')
    T.match(child:lua([[return _G.notes[#_G.notes] or '']]), 'wait', 'the chord says wait')
    T.eq(#H.permission_answers(paths), 0)
    T.eq(pending(child), 1)
    ready(child, 't1')
    child:feed('<M-y>')
    T.eq(H.wait_permission_answer(paths, 1), 'o-allow')
    -- The second request replaces the first in view: its own wait starts.
    shown(child, 't2')
    child:feed('<M-y>')
    T.match(child:lua([[return _G.notes[#_G.notes] or '']]), 'wait')
    T.eq(#H.permission_answers(paths), 1)
    ready(child, 't2')
    child:feed('<M-n>')
    T.eq(H.wait_permission_answer(paths, 2), 'o-reject')
  end },

  { 'a chord whose kind the request does not offer says so and answers nothing', function()
    local child, paths = start({
      ask('t1', { { optionId = 'o-allow', name = 'Allow', kind = 'allow_once' }, { optionId = 'o-reject', name = 'Reject', kind = 'reject_once' } }),
      { message = 'done' },
    })
    ready(child, 't1')
    local footer = child:lua([[local c = vim.api.nvim_win_get_config(require('acp.ask.permission').win)
      return c.footer[1][1] ]])
    T.eq(footer, ' <M-y> allow once · <M-n> reject ', 'the footer offers only what answers')
    child:feed('<M-a>')
    T.match(child:lua([[return _G.notes[#_G.notes] or '']]), 'no "allow always" option')
    T.eq(#H.permission_answers(paths), 0)
    child:feed('<M-y>')
    T.eq(H.wait_permission_answer(paths, 1), 'o-allow')
  end },

  { 'answering in the float (<C-a>, then y) goes back to the input in Insert mode', function()
    local child, paths = start({ ask('t1'), { message = 'done' } })
    ready(child, 't1')
    child:feed('abc')
    child:feed('<C-a>')
    child:wait_for([[local p = require('acp.ask.permission')
      return p.armed and vim.api.nvim_get_current_win() == p.win]], 3000)
    child:feed('y')
    T.eq(H.wait_permission_answer(paths, 1), 'o-allow')
    child:wait_for([[return vim.api.nvim_get_current_win() == require('acp').current().input_win]], 3000)
    T.eq(mode(child), 'i')
    child:feed('d')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]), { 'abcd' })
  end },

  { 'the float sits beside its card with the turn\'s text in view', function()
    local OLD = 'local M = {}\nfunction M.greet()\n  print(\'helo\')\nend\nreturn M\n'
    local NEW = 'local M = {}\nfunction M.greet(name)\n  print(\'hello, \' .. name)\nend\nreturn M\n'
    local explanation = {
      'The greeting is misspelled in hello.lua and it',
      'takes no name. I read the module first, then',
      'I will fix both in one edit:',
    }
    local child = H.start({ config = { chat = { width = 52 }, permissions = { grace_ms = 0 } }, agent_info = { name = 'demo' },
      turns = { { match = 'fix', steps = {
        { message = 'Reading the module first.\n' },
        { update = { sessionUpdate = 'tool_call', toolCallId = 'r1', title = 'Read hello.lua', kind = 'read', status = 'completed',
          locations = { { path = '/p/hello.lua', line = 1 } } } },
        { message = table.concat(explanation, '\n') .. '\n' },
        { update = { sessionUpdate = 'tool_call', toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit', status = 'pending',
          locations = { { path = '/p/hello.lua', line = 2 } },
          content = { { type = 'diff', path = '/p/hello.lua', oldText = OLD, newText = NEW } } } },
        H.req('session/request_permission', {
          toolCall = { toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit' },
          options = { { optionId = 'allow', name = 'Apply the edit', kind = 'allow_once' }, { optionId = 'reject', name = 'Skip it', kind = 'reject_once' } },
        }),
      } } } })
    local screen = Screen.attach(child, 80, 54)
    child:lua([[
      local frozen = vim.uv.now()
      vim.uv.now = function() return frozen end
    ]])
    H.open(child)
    child:lua([[require('acp').send('fix the greeting')]])
    ready(child, 'e1')
    child:lua('return 1')
    local shot = screen:shot()
    local text = table.concat(shot.text, '\n')
    for _, want in ipairs({ 'fix the greeting', 'Reading the module first.', 'Read hello.lua', explanation[1], explanation[3], 'Edit hello.lua',
      "+  print('hello, ' .. name)", '<M-y> allow once · <M-n> reject' }) do
      T.contains(text, want, 'in view')
    end
    -- The float starts below the card's last row.
    local rows = child:lua([[
      local v, p = require('acp').current(), require('acp.ask.permission')
      local last = ({ v:entry_range(v.last_index) })[2]
      return { vim.fn.screenpos(v.win, last + 1, 1).row, vim.fn.win_screenpos(p.win)[1] }
    ]])
    T.truthy(rows[2] > rows[1], 'the float is under the card')
    Screen.expect(shot, 'permission-beside-card')
    screen:detach()
  end },
  { 'a request the float cannot show beside its card shows inline at the card; one chord answers it from Insert mode', function()
    local child, screen, paths = start_inline(1500)
    inline(child)
    local text = screen_text(screen)
    for _, want in ipairs({ 'edit · Edit hello.lua', "+  print('hello, ' .. name)", 'test asks for permission · [edit] Edit hello.lua',
      'edit /p/hello.lua: +2 -2', '· Apply the edit  [allow once]', '· Skip it  [reject once]',
      '<M-y> allow once · <M-n> reject · <C-a> more' }) do
      T.contains(text, want, 'in view')
    end
    -- `d` reviews in the float only: the inline lines do not promise it.
    T.eq(text:find('(d: review)', 1, true), nil, 'no d hint inline')
    T.eq(mode(child), 'i', 'typing in the input')
    -- Too early: the chord says wait and answers nothing.
    child:feed('<M-y>')
    T.match(child:lua([[return _G.notes[#_G.notes] or '']]), 'wait')
    T.eq(#H.permission_answers(paths), 0)
    inline(child, true)
    child:feed('abc')
    child:feed('<M-y>')
    T.eq(H.wait_permission_answer(paths, 1), 'allow')
    H.wait_idle(child)
    T.eq(mode(child), 'i', 'still in Insert mode')
    child:feed('d')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]), { 'abcd' })
    T.eq(inline_marks(child), 0, 'the inline request is gone')
    T.eq(child:lua([[return require('acp.ask.permission_inline').state == nil]]), true)
  end },

  { '<C-a> opens the float over the inline request; q goes back to it and a chord still answers', function()
    local child, _, paths = start_inline()
    inline(child, true)
    child:feed('<C-a>')
    child:wait_for([[local p = require('acp.ask.permission')
      return p.win ~= nil and vim.api.nvim_get_current_win() == p.win and p.armed]], 3000)
    T.eq(inline_marks(child), 0, 'the float replaces the inline lines')
    child:feed('q')
    inline(child, true)
    T.eq(child:lua([[return vim.api.nvim_get_current_win() == require('acp').current().input_win]]), true)
    T.eq(mode(child), 'i')
    child:feed('<M-n>')
    T.eq(H.wait_permission_answer(paths, 1), 'reject')
  end },

  { 'a resize to a larger screen moves the inline request into the float, off its card', function()
    local child, screen, paths = start_inline()
    inline(child, true)
    screen:request('nvim_ui_try_resize', 160, 50)
    screen:redraw(true)
    child:wait_for([[local p = require('acp.ask.permission')
      return p.win ~= nil and require('acp.ask.permission_inline').state == nil and p.chords_ready()]], 5000)
    T.eq(inline_marks(child), 0)
    -- The float covers neither the card nor the turn's text: no row of the chat from the
    -- explanation to the card's last line is under it.
    local r = child:lua([[
      local v, p = require('acp').current(), require('acp.ask.permission')
      local last = ({ v:entry_range(v.last_index) })[2]
      local pos, cfg = vim.fn.win_screenpos(p.win), vim.api.nvim_win_get_config(p.win)
      local chat = vim.fn.win_screenpos(v.win)
      return { float_top = pos[1], float_left = pos[2], float_right = pos[2] + cfg.width + 1,
        card_end = vim.fn.screenpos(v.win, last + 1, 1).row, chat_left = chat[2] }
    ]])
    T.truthy(r.float_top > r.card_end or r.float_right < r.chat_left, 'under the card or beside the chat')
    T.contains(screen_text(screen), 'I will fix the greeting in hello.lua.', 'the explanation in view')
    child:feed('<M-y>')
    T.eq(H.wait_permission_answer(paths, 1), 'allow')
  end },

  { "a chord's answer typed in Insert mode never stops at a hit-enter prompt (Neovim's own notify, 80 columns)", function()
    local child = H.start({ config = { permissions = { grace_ms = 60000 } }, turns = {
      { match = 'go', steps = { ask('t1'), { message = 'done' } } },
    } })
    local screen = Screen.attach(child, 80, 24)
    H.open(child)
    child:lua([[require('acp').send('go')]])
    child:wait_for([[local p = require('acp.ask.permission') return p.shown ~= nil and p.in_view()]])
    child:lua([[require('acp').current():focus_input(true)]])
    child:wait_for([[return vim.api.nvim_get_mode().mode == 'i']])
    -- Too early (grace 60 s), the request of another kind, a kind it lacks: each says so.
    for _, key in ipairs({ '<M-y>', '<M-a>', '<M-n>' }) do
      child:feed(key)
      child:lua('return 1')
      screen:redraw(true)
      local text = table.concat(screen:shot().text, '\n')
      T.no_match(text, 'Press ENTER', 'no hit-enter prompt after ' .. key)
      T.eq(mode(child), 'i', 'still in Insert mode after ' .. key)
    end
    T.match(child:cmd('messages'), 'acp%.nvim: wait')
    T.eq(pending(child), 1)
  end },
}
