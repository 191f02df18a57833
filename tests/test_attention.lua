-- Every chat's state in sight: tab labels that name each chat (agent and number) and mark
-- the chats that wait for the user or finished a turn while out of sight; the same in
-- require('acp').status() / chats(); `User AcpStateChanged` when it changes.
local H = require('tests.helpers.acp')
local T = require('tests.helpers.expect')
local Screen = require('tests.helpers.screen')

local W, HEIGHT = 80, 24

local OPTIONS = {
  { optionId = 'allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'reject', name = 'Reject', kind = 'reject_once' },
}

local TURNS = {
  { match = 'edit', steps = {
    { message = 'I will fix the greeting.\n' },
    { update = { sessionUpdate = 'tool_call', toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit', status = 'pending' } },
    H.req('session/request_permission', {
      toolCall = { toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit' }, options = OPTIONS }),
  } },
  { match = 'slow', steps = { { sleep_ms = 400 }, { message = 'finished' } } },
}

-- Records the User AcpStateChanged autocmds.
local RECORD = [[
  _G.changes = {}
  vim.api.nvim_create_autocmd('User', { pattern = 'AcpStateChanged', callback = function(ev)
    table.insert(_G.changes, ev.data)
  end })
]]

--- Two chats of the same agent: chat 1 in tab 1, chat 2 in tab 2 (current).
local function two_tabs(child)
  H.open(child)
  child:cmd('tabnew')
  H.open(child)
  T.eq(child:lua([[return require('acp').current().thread ~= require('acp').chats()[1].thread]]), true, 'two chats')
end

local function tabline(child)
  return child:lua([[return vim.api.nvim_eval_statusline(vim.o.tabline, { use_tabline = true }).str]])
end

--- The status of the chat with `thread`, as require('acp').chats() gives it.
local function status_of(child, thread)
  return child:lua([[
    for _, s in ipairs(require('acp').chats()) do
      if s.thread == ... then return s end
    end
  ]], { thread })
end

return {
  { 'a second tab\'s chat waiting for permission, seen from the first tab: labels differ, the mark shows', function()
    local child = H.start({ turns = TURNS, config = { chat = { width = 44 } } })
    local screen = Screen.attach(child, W, HEIGHT)
    child:lua(RECORD)
    two_tabs(child)
    local second = child:lua([[return require('acp').current().thread]])
    child:lua([[require('acp').send('edit')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    child:cmd('tabfirst')
    child:wait_for(([[return vim.api.nvim_eval_statusline(vim.o.tabline, { use_tabline = true }).str:find('● %%d* ?ACP test %d') ~= nil]]):format(second))
    local line = tabline(child)
    T.match(line, 'ACP test 1')
    T.match(line, '● %d* ?ACP test 2')
    T.no_match(line, '● %d* ?ACP test 1', 'the idle chat has no mark')
    local st = status_of(child, second)
    T.eq({ st.waiting, st.waiting_for, st.done_unseen, st.label }, { true, 'permission', false, 'ACP test 2' })
    T.eq(child:lua([[local s = require('acp').status(); return { s.thread, s.waiting }]]), { 1, false }, 'this tab\'s chat waits for nothing')
    child:wait_for([[for _, c in ipairs(_G.changes) do if c.waiting then return true end end]])
    local fired = child:lua([[for _, c in ipairs(_G.changes) do if c.waiting then return c end end]])
    T.eq({ fired.thread, fired.agent, fired.waiting_for, fired.state }, { second, 'test', 'permission', 'running' })
    local shot = screen:shot()
    T.match(shot.text[1], '● %d* ?ACP test 2')
    Screen.expect(shot, 'tab-waiting')
  end },

  { 'done while you were away: marked when a turn ends out of sight, cleared when the user looks', function()
    local child = H.start({ turns = TURNS })
    child:lua(RECORD)
    two_tabs(child)
    local second = child:lua([[return require('acp').current().thread]])
    child:lua([[require('acp').send('slow')]])
    child:cmd('tabfirst')
    child:wait_for(([[return require('acp.chat').by_thread[%d].turns_ended == 1]]):format(second), 5000)
    child:wait_for(([[local s = require('acp').chats()
      for _, c in ipairs(s) do if c.thread == %d then return c.done_unseen end end]]):format(second))
    local st = status_of(child, second)
    T.eq({ st.state, st.waiting, st.done_unseen }, { 'idle', false, true })
    T.eq(child:lua([[return { select(2, require('acp.chat.layout').tab_label(vim.api.nvim_list_tabpages()[2])) }]]), { 'done' })
    child:wait_for([[return vim.api.nvim_eval_statusline(vim.o.tabline, { use_tabline = true }).str:find('✓ %d* ?ACP test 2') ~= nil]])
    child:wait_for([[for _, c in ipairs(_G.changes) do if c.done_unseen then return true end end]])
    -- The user looks: the mark goes, and the change is announced.
    local before = child:lua([[return #_G.changes]])
    child:cmd('tablast')
    child:wait_for(([[local s = require('acp').status(); return s.thread == %d and not s.done_unseen]]):format(second))
    child:wait_for(([[local c = _G.changes[#_G.changes]; return #_G.changes > %d and c.done_unseen == false]]):format(before))
    T.no_match(tabline(child), '✓')
    T.eq(child:lua([[return _G.changes[#_G.changes].thread]]), second)
    -- A turn that ends in sight leaves no mark.
    H.turn(child, 'slow')
    T.eq(child:lua([[return require('acp').status().done_unseen]]), false)
  end },

  { 'an agent whose words speak of signing in does not make the chat wait for a sign-in', function()
    local words = 'Agent `test` needs you to sign in: run :AcpAuth {method}. It needs authentication.'
    local child = H.start({ turns = { { match = 'talk', steps = {
      { message = words .. '\n' },
      -- A prompt error whose message says the same (not ACP's "auth required").
      { error = { code = -32603, message = words } },
    } } } })
    H.open(child)
    child:lua(RECORD)
    H.turn(child, 'talk')
    local text = H.transcript_text(child)
    T.match(text, 'Error: .*needs you to sign in', 'the error is shown with the agent\'s words')
    local st = child:lua([[return require('acp').status()]])
    T.eq({ st.state, st.waiting, st.waiting_for }, { 'idle', false, nil })
    T.no_match(tabline(child), '●')
    T.eq(child:lua([[return vim.tbl_filter(function(c) return c.waiting end, _G.changes)]]), {})
  end },

  { 'an agent that refuses to open a session until the user signs in: the chat waits for the sign-in until it is done', function()
    local child = H.start({ agent_info = { auth_methods = { { id = 'api-key', name = 'API key' } } },
      turns = { { match = 'hello', steps = { { message = 'signed in' } } } } })
    child:lua(RECORD)
    child:cmd('AcpChat')
    child:wait_for([[return require('acp').status().waiting_for == 'sign-in']])
    local st = child:lua([[return require('acp').status()]])
    T.eq({ st.state, st.waiting, st.waiting_for }, { 'disconnected', true, 'sign-in' })
    T.match(tabline(child), '● %d* ?ACP test 1')
    local fired = child:lua([[for _, c in ipairs(_G.changes) do if c.waiting then return c end end]])
    T.eq({ fired.waiting_for, fired.state }, { 'sign-in', 'disconnected' })
    child:cmd('AcpAuth api-key')
    child:wait_for([[return require('acp').current().state == 'idle']])
    st = child:lua([[return require('acp').status()]])
    T.eq({ st.waiting, st.waiting_for }, { false, nil })
    T.no_match(tabline(child), '●')
  end },
}
