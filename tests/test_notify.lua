-- Notifications: a turn ending, a permission request waiting or an agent failing in a chat out
-- of sight (another tab, or Neovim without focus) is told once, with `vim.notify`, a
-- `User AcpAttention` and, when asked for, a desktop notification (a fake notify-send here).
local H = require('tests.helpers.acp')
local T = require('tests.helpers.expect')
local Screen = require('tests.helpers.screen')

local OPTIONS = {
  { optionId = 'allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'reject', name = 'Reject', kind = 'reject_once' },
}

-- A title with a command substitution, quotes, a backquote and a line break: data.
local TITLE = [[Fix "it" $(touch /tmp/acp-notify-pwned) `id` it's
second line]]

local TURNS = {
  { match = 'edit', steps = {
    { sleep_ms = 400 },
    { update = { sessionUpdate = 'tool_call', toolCallId = 'e1', title = 'Edit "x" 100%{y}', kind = 'edit', status = 'pending' } },
    H.req('session/request_permission', {
      toolCall = { toolCallId = 'e1', title = 'Edit "x" 100%{y}', kind = 'edit' }, options = OPTIONS }),
  } },
  { match = 'slow', steps = { { sleep_ms = 400 }, { message = 'finished' } } },
  { match = 'titled', steps = { { sleep_ms = 400 }, { update = { sessionUpdate = 'session_info_update', title = TITLE } },
    { message = 'done' } } },
  { match = 'crash', steps = { { sleep_ms = 400 }, { crash = { code = 3 } } } },
}

-- Records this plugin's notifications and the User AcpAttention autocmds.
local RECORD = [[
  _G.notes, _G.attn = {}, {}
  local notify = vim.notify
  vim.notify = function(msg, level, opts)
    if type(msg) == 'string' and msg:find('^acp%.nvim: ACP ') then
      table.insert(_G.notes, { msg = msg, level = level })
    end
    return notify(msg, level, opts)
  end
  vim.api.nvim_create_autocmd('User', { pattern = 'AcpAttention', callback = function(ev)
    table.insert(_G.attn, ev.data)
  end })
]]

--- Two chats of the same agent: chat 1 in tab 1, chat 2 in tab 2 (current). Returns chat 2's thread.
local function two_tabs(child)
  H.open(child)
  child:cmd('tabnew')
  H.open(child)
  return child:lua([[return require('acp').current().thread]])
end

local function turns_ended(child, thread, n)
  child:wait_for(([[return require('acp.chat').by_thread[%d].turns_ended == %d]]):format(thread, n), 5000)
  -- The autocmds fire on the next loop iteration.
  child:lua('vim.wait(50)')
end

return {
  { 'a turn ending in a chat in another tab: one notification on the command line and User AcpAttention; none in sight', function()
    local child = H.start({ turns = TURNS })
    local screen = Screen.attach(child, 80, 24)
    child:lua([[
      _G.attn = {}
      vim.api.nvim_create_autocmd('User', { pattern = 'AcpAttention', callback = function(ev)
        table.insert(_G.attn, ev.data)
      end })
    ]])
    local second = two_tabs(child)
    child:lua([[require('acp').send('slow')]])
    child:feed('<Esc>')
    child:cmd('tabfirst')
    turns_ended(child, second, 1)
    child:wait_for('return #_G.attn == 1')
    local shot = screen:shot()
    T.match(shot.text[24], '^acp%.nvim: ACP test ' .. second .. ' finished its turn %(tab 2%)')
    local a = child:lua('return _G.attn[1]')
    T.eq({ a.reason, a.agent, a.thread }, { 'turn_end', 'test', second })
    T.match(child:messages(), 'ACP test ' .. second .. ' finished its turn')
    -- The same chat, in sight: no notification.
    child:cmd('tablast')
    child:cmd('messages clear')
    H.turn(child, 'slow')
    child:lua('vim.wait(100)')
    T.eq(child:lua('return #_G.attn'), 1, 'a turn ending in sight is not told')
    T.no_match(child:messages(), 'finished its turn')
  end },

  { 'a permission waiting in a hidden chat is told once, however often the screen changes; one that came in sight is not', function()
    local child = H.start({ turns = TURNS })
    child:lua(RECORD)
    local second = two_tabs(child)
    child:lua([[require('acp').send('edit')]])
    child:cmd('tabfirst')
    child:wait_for([[return #require('acp.ask.permission').queue == 1]], 5000)
    child:wait_for('return #_G.attn == 1')
    for _ = 1, 3 do
      child:cmd('tabnew')
      child:cmd('tabprevious')
      child:cmd('redraw')
      child:cmd('doautocmd WinEnter')
      child:cmd('tabclose')
    end
    child:lua('vim.wait(100)')
    T.eq(#child:lua('return _G.attn'), 1, 'told once')
    local a = child:lua('return _G.attn[1]')
    T.eq({ a.reason, a.agent, a.thread, a.message }, { 'permission', 'test', second, 'Edit "x" 100%{y}' })
    local notes = child:lua('return _G.notes')
    T.eq(#notes, 1)
    T.match(notes[1].msg, 'ACP test ' .. second .. ' asks for permission: Edit "x" 100%%{y} %(tab 2%)')
    T.eq(notes[1].level, vim.log.levels.WARN)
    -- This tab's chat asks in sight: not told, then or later.
    child:lua([[require('acp').send('edit')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 2]], 5000)
    child:cmd('tablast')
    child:cmd('tabfirst')
    child:lua('vim.wait(100)')
    T.eq(#child:lua('return _G.attn'), 1, 'a request that came in sight is not told')
  end },

  { 'an agent that exits in a hidden chat: an error notification with the reason', function()
    local child = H.start({ turns = TURNS })
    child:lua(RECORD)
    local second = two_tabs(child)
    child:lua([[require('acp').send('crash')]])
    child:cmd('tabfirst')
    child:wait_for(([[return require('acp.chat').by_thread[%d].state == 'disconnected']]):format(second), 5000)
    child:wait_for('return #_G.attn >= 1')
    child:lua('vim.wait(100)')
    local attn = child:lua('return _G.attn')
    T.eq(#attn, 1, 'one notification, not one for the turn and one for the exit')
    T.eq({ attn[1].reason, attn[1].thread }, { 'error', second })
    local notes = child:lua('return _G.notes')
    T.eq(#notes, 1)
    T.match(notes[1].msg, '^acp%.nvim: ACP test ' .. second .. ' failed')
    T.eq(notes[1].level, vim.log.levels.ERROR)
  end },

  { 'desktop = true runs notify-send with the summary and the agent\'s title as argv elements, literally', function()
    local bin = T.tmpdir('notify-bin')
    local out = bin .. '/args'
    -- Each argument followed by a NUL.
    T.write_file(bin .. '/notify-send', ('#!/bin/sh\nfor a in "$@"; do printf \'%%s\\000\' "$a"; done >> %s\n'):format(out))
    vim.fn.setfperm(bin .. '/notify-send', 'rwxr-xr-x')
    os.remove('/tmp/acp-notify-pwned')
    local child = H.start({ turns = TURNS, env = { PATH = bin .. ':' .. vim.env.PATH },
      config = { notify = { desktop = true } } })
    child:lua(RECORD)
    local second = two_tabs(child)
    child:lua([[require('acp').send('titled')]])
    child:cmd('tabfirst')
    turns_ended(child, second, 1)
    T.wait(function()
      return vim.uv.fs_stat(out) ~= nil and #T.read_file(out) > 0
    end, 5000, 'notify-send ran')
    vim.wait(200)
    local args = vim.split(T.read_file(out), '\0', { plain = true })
    table.remove(args) -- after the last NUL
    T.eq(args, { '--app-name=acp.nvim', '--', 'acp.nvim: ACP test ' .. second .. ' finished its turn', TITLE })
    T.falsy(vim.uv.fs_stat('/tmp/acp-notify-pwned'), 'nothing in the title ran')
    -- In Neovim the title is one escaped line.
    local notes = child:lua('return _G.notes')
    T.eq(#notes, 1)
    T.no_match(notes[1].msg, '\n')
    T.match(notes[1].msg, 'finished its turn: Fix "it" %$%(touch')
    T.eq(child:lua('return _G.attn[1].title'), TITLE)
  end },

  { 'Neovim without focus (the terminal reports FocusLost): a turn ending in sight is told, a cancelled one not; with focus none', function()
    local child = H.start({ turns = TURNS })
    child:lua(RECORD)
    H.open(child)
    child:cmd('doautocmd FocusLost')
    H.turn(child, 'slow')
    child:wait_for('return #_G.attn == 1')
    T.eq(child:lua('return _G.attn[1].reason'), 'turn_end')
    -- A turn the user cancelled is not told.
    child:lua([[require('acp').send('slow')]])
    child:wait_for([[return require('acp').current().state == 'running']])
    child:lua([[require('acp.chat').cancel()]])
    H.wait_idle(child)
    child:lua('vim.wait(100)')
    T.eq(child:lua('return #_G.attn'), 1, 'a cancelled turn is not told')
    child:cmd('doautocmd FocusGained')
    H.turn(child, 'slow')
    child:lua('vim.wait(100)')
    T.eq(child:lua('return #_G.attn'), 1)
  end },

  { 'notify.enabled = false: nothing is told; a bad notify option is a clear setup error', function()
    local child = H.start({ turns = TURNS, config = { notify = { enabled = false } } })
    child:lua(RECORD)
    local second = two_tabs(child)
    child:lua([[require('acp').send('slow')]])
    child:cmd('tabfirst')
    turns_ended(child, second, 1)
    child:cmd('tablast')
    child:lua([[require('acp').send('crash')]])
    child:cmd('tabfirst')
    child:wait_for(([[return require('acp.chat').by_thread[%d].state == 'disconnected']]):format(second), 5000)
    child:lua('vim.wait(100)')
    T.eq(child:lua('return { #_G.attn, #_G.notes }'), { 0, 0 })
    -- The marks still work.
    T.eq(child:lua(([[for _, c in ipairs(require('acp').chats()) do if c.thread == %d then return c.done_unseen end end]]):format(second)), true)
    local err = child:lua([[local ok, e = pcall(require('acp.config').setup, { notify = { events = { turn_end = 'yes' } } }); return e]])
    T.match(err, 'notify%.events%.turn_end')
    err = child:lua([[local ok, e = pcall(require('acp.config').setup, { notify = { events = { finished = true } } }); return e]])
    T.match(err, 'notify%.events%.finished.*not a known option')
  end },
}
