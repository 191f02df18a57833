-- Edit and resend: `e` on an earlier message of yours copies it into the
-- input ("Editing turn N" in its winbar, <C-c> drops the edit); sending it
-- restores the files to before that turn and continues from there: in a
-- fork of the session at the agent's message before it (`session/fork`
-- with `messageId`, when advertised), else in a new session whose first
-- prompt carries the conversation so far as an embedded resource.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

local function write(path, content)
  return H.req('fs/write_text_file', { path = path, content = content })
end

--- The agent's answer, one message with its `messageId`.
local function say(id, text)
  return { update = { sessionUpdate = 'agent_message_chunk', messageId = id, content = { type = 'text', text = text } } }
end

--- Three turns, each writing f.txt (v1, v2, v3) through fs/write_text_file
--- and answering with a message of its own id; then the edited turn.
local function turns(file)
  return {
    { match = 'EDITED', steps = { say('m4', 'answer to the edit') } },
    { match = 'alpha', steps = { write(file, 'v1\n'), say('m1', 'answer one') } },
    { match = 'beta', steps = { write(file, 'v2\n'), say('m2', 'answer two') } },
    { match = 'gamma', steps = { write(file, 'v3\n'), say('m3', 'answer three') } },
  }
end

local function start(agent_info, screen)
  local dir = H.project({ ['f.txt'] = 'v0\n' })
  local file = dir .. '/f.txt'
  local config = screen and { chat = { width = 52, min_code_width = 20 } }
  local child, paths = H.start({ cwd = dir, turns = turns(file), agent_info = agent_info, config = config })
  if screen then
    paths.screen = Screen.attach(child, 80, 30)
  end
  H.open(child)
  for _, text in ipairs({ 'alpha', 'beta', 'gamma' }) do
    H.turn(child, text)
  end
  T.eq(T.read_file(file), 'v3\n')
  return child, paths, file
end

--- Puts the cursor of the transcript window on the text of turn `n`'s
--- message and presses `e`.
local function edit_turn(child, n)
  child:feed('<Esc>')
  child:lua([[
    local n = ...
    local v = require('acp').current()
    local users = require('acp.chat.resend').user_entries(v)
    local first = v:entry_range(users[n])
    vim.api.nvim_set_current_win(v.win)
    vim.api.nvim_win_set_cursor(v.win, { first + 3, 0 })
  ]], { n })
  child:feed('e')
  child:wait_for([[return require('acp').current().editing ~= nil]], 2000)
end

local function input_state(child)
  return child:lua([[
    local v = require('acp').current()
    local bar = vim.api.nvim_eval_statusline(vim.wo[v.input_win].winbar, { winid = v.input_win, use_winbar = true }).str
    return { lines = vim.api.nvim_buf_get_lines(v.input, 0, -1, false), winbar = bar,
      current = vim.api.nvim_get_current_win() == v.input_win, editing = v.editing }
  ]])
end

--- Replaces the input's text with `text` and sends it with <CR>.
local function resend(child, text)
  local before = child:lua([[return require('acp').current().turns_ended]])
  child:lua(H.STUB_SELECT)
  child:lua([[_G.pick = { 'Restore' }]])
  child:lua([[
    local v = require('acp').current()
    vim.api.nvim_buf_set_lines(v.input, 0, -1, false, { ... })
    vim.api.nvim_set_current_win(v.input_win)
  ]], { text })
  child:feed('<Esc><CR>')
  child:wait_for(([[return require('acp').current().turns_ended > %d]]):format(before), 5000)
end

return {
  { 'e on an earlier message copies it into the input, marked "Editing turn N"; <C-c> drops the edit; elsewhere e moves', function()
    local child = start()
    edit_turn(child, 2)
    local s = input_state(child)
    T.eq(s.lines, { 'beta' })
    T.match(s.winbar, 'Editing turn 2')
    T.truthy(s.current, 'the cursor is in the input')
    T.eq(s.editing.turn, 2)
    child:feed('<C-c>')
    s = input_state(child)
    T.eq(s.editing, nil)
    T.match(s.winbar, '^ Message ')
    T.eq(s.lines, { 'beta' }, 'the input keeps its text')
    -- On the agent's text `e` is the motion it always was.
    local moved = child:lua([[
      local v = require('acp').current()
      vim.api.nvim_set_current_win(v.win)
      for row, l in ipairs(vim.api.nvim_buf_get_lines(v.buf, 0, -1, false)) do
        if l == 'answer one' then vim.api.nvim_win_set_cursor(v.win, { row, 0 }) break end
      end
      vim.cmd('normal e')
      return { vim.api.nvim_win_get_cursor(v.win)[2], v.editing }
    ]])
    T.eq(moved, { 5 }, 'e moved to the end of the word, no edit started')
  end },

  { 'on screen: the input holds the message and its winbar says "Editing turn 2"', function()
    local child, paths = start({ name = 'demo' }, true)
    edit_turn(child, 2)
    Screen.expect(paths.screen:shot(), 'resend_editing')
  end },

  { 'resending turn 2 to an agent that forks at a message: session/fork at the answer before it, files back to before turn 2', function()
    local child, paths, file = start({ session_capabilities = { fork = { atMessageId = true } } })
    edit_turn(child, 2)
    resend(child, 'EDITED beta')
    local forks = H.events_of(paths, 'session/fork')
    T.eq(#forks, 1)
    T.eq(forks[1].params.sessionId, 'sess-1')
    T.eq(forks[1].params.messageId, 'm1', 'the fork keeps turn 1 up to its answer')
    T.eq(forks[1].params.cwd, vim.fn.fnamemodify(file, ':h'))
    local prompts = H.events_of(paths, 'prompt')
    T.eq(#prompts, 4)
    T.eq(prompts[4].sessionId, 'sess-2', 'the edited message goes to the fork')
    T.eq(prompts[4].prompt, { { type = 'text', text = 'EDITED beta' } })
    T.eq(#H.events_of(paths, 'session/new'), 1, 'no new session')
    T.eq(T.read_file(file), 'v1\n', "turn 2 and 3's writes are undone")
    T.match(child:lua([[return _G.asked[1].prompt]]), 'Restore to before turn 2: f%.txt', 'the files were shown first')
    local text = H.transcript_text(child)
    T.match(text, 'Edited turn 2: the agent forked the session')
    T.match(text, 'answer to the edit')
    T.eq(child:lua([[return require('acp').current().info.session]]), 'sess-2')
  end },

  { 'resending turn 2 to an agent without fork: a new session whose first prompt carries turn 1 as a resource', function()
    local child, paths, file = start()
    edit_turn(child, 2)
    resend(child, 'EDITED beta')
    T.eq(#H.events_of(paths, 'session/fork'), 0)
    T.eq(#H.events_of(paths, 'session/new'), 2, 'a new session')
    local prompts = H.events_of(paths, 'prompt')
    T.eq(#prompts, 4)
    local p = prompts[4]
    T.eq(p.sessionId, 'sess-2')
    T.eq(#p.prompt, 2)
    local r = p.prompt[1]
    T.eq(r.type, 'resource')
    T.eq(r.resource.uri, 'acp-transcript:///turns-1-1.md')
    T.eq(r.resource.mimeType, 'text/markdown')
    T.match(r.resource.text, '## You\n\nalpha')
    T.match(r.resource.text, 'answer one')
    T.eq(r.resource.text:find('beta', 1, true), nil, 'nothing of turn 2 on')
    T.eq(p.prompt[2], { type = 'text', text = 'EDITED beta' })
    T.eq(T.read_file(file), 'v1\n', "turn 2 and 3's writes are undone")
    local text = H.transcript_text(child)
    T.match(text, 'a new session: the agent gets the conversation up to turn 1 as context')
    T.match(text, 'answer to the edit')
  end },
}
