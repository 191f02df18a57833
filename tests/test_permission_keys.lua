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
}
