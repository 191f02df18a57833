-- Checkpoints and :AcpRestore: the files every turn changed (through
-- fs/write_text_file, the agent's own disk edits, a command it ran) go back
-- to before a turn, the user's edits since kept, one `u` undoing it in a
-- buffer; the restored turns folded in the transcript under a line saying
-- so; across a restart of Neovim for a kept chat; a cap that drops the
-- oldest checkpoints says so.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local G = require('tests.helpers.git')
local Screen = require('tests.helpers.screen')

local function write(path, content)
  return H.req('fs/write_text_file', { path = path, content = content })
end

local function tc(fields)
  fields.sessionUpdate = 'tool_call'
  return { update = fields }
end

local function done(id)
  return { update = { sessionUpdate = 'tool_call_update', toolCallId = id, status = 'completed' } }
end

--- Three turns in repository `dir`: a.txt through fs/write_text_file, b.txt
--- on disk by the agent itself (claude-agent-acp: an edit card, then the
--- disk), c.txt by a command the agent runs.
local function three_turns(dir)
  local a, b, c = dir .. '/a.txt', dir .. '/b.txt', dir .. '/c.txt'
  return {
    { match = 'one', steps = { write(a, 'A1\n'), { message = 'wrote a' } } },
    { match = 'two', steps = {
      tc({ toolCallId = 'e2', title = 'Edit b.txt', kind = 'edit', status = 'pending', locations = { { path = b } } }),
      H.req('terminal/create', { command = 'sed -i s/^two$/TWO/ ' .. vim.fn.shellescape(b) }),
      H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
      done('e2'),
      { sleep_ms = 200 },
      { message = 'edited b' },
    } },
    { match = 'three', steps = {
      tc({ toolCallId = 'x3', title = 'Run the generator', kind = 'execute', status = 'pending' }),
      H.req('terminal/create', { command = 'printf "C3\\n" > ' .. vim.fn.shellescape(c) }),
      H.req('terminal/wait_for_exit', { terminalId = 'term-2' }),
      done('x3'),
      { message = 'generated c' },
    } },
  }
end

local FILES = { ['a.txt'] = 'a\n', ['b.txt'] = 'one\ntwo\nthree\n', ['c.txt'] = 'c\n' }

local function buf_lines(child, path)
  return child:lua([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)]], { path })
end

--- Puts the cursor of the chat's transcript on user message `n` (1-based).
local function on_user_header(child, n)
  child:lua([[
    local n = ...
    local v = require('acp').current()
    vim.api.nvim_set_current_win(v.win)
    local users = {}
    for index, e in pairs(v.entries) do if e.kind == 'user' then users[#users + 1] = index end end
    table.sort(users)
    local first = v:entry_range(users[n])
    vim.api.nvim_win_set_cursor(v.win, { first + 1, 0 })
  ]], { n })
end

return {
  { 'restore to before turn 2 (key R on its ## You): turn 1 stays, turns 2 and 3 go, an unsaved edit is kept, one u undoes it, the turns show undone', function()
    local dir = G.repo('ckpt', FILES)
    local a, b, c = dir .. '/a.txt', dir .. '/b.txt', dir .. '/c.txt'
    local child = H.start({ cwd = dir, turns = three_turns(dir), config = { terminal = { confirm = 'never' } } })
    H.open(child)
    child:cmd('stopinsert')
    child:cmd('wincmd t')
    H.turn(child, 'one')
    T.eq(T.read_file(a), 'A1\n')
    -- The user has b.txt open.
    child:cmd('edit ' .. vim.fn.fnameescape(b))
    H.turn(child, 'two')
    T.eq(T.read_file(b), 'one\nTWO\nthree\n')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 1, 2, false)[1] == 'TWO']], 3000, { b })
    -- Then edits it (unsaved) before the next turn.
    child:lua([[vim.api.nvim_buf_set_lines(vim.fn.bufnr(...), -1, -1, false, { 'mine' })]], { b })
    child:lua([[vim.cmd('let &undolevels = &undolevels')]])
    H.turn(child, 'three')
    T.eq(T.read_file(c), 'C3\n')

    child:lua(H.STUB_SELECT .. [[ _G.pick = { 'Restore 2 files' } ]])
    on_user_header(child, 2)
    child:feed('R')
    child:wait_for([[return require('acp').current():lines()[#require('acp').current():lines()]:find('undone by :AcpRestore') ~= nil]], 3000)
    local asked = child:lua('return _G.asked[1]')
    T.eq(asked.items, { 'Restore 2 files', 'Cancel' })
    T.match(asked.prompt, '^Restore to before turn 2: b%.txt, c%.txt$')
    T.eq(T.read_file(a), 'A1\n', "turn 1's change stays")
    T.eq(T.read_file(c), 'c\n', "turn 3's command output is taken back")
    T.eq(buf_lines(child, b), { 'one', 'two', 'three', 'mine' }, "turn 2's change goes, the user's line stays")
    T.eq(child:lua([[return vim.bo[vim.fn.bufnr(...)].modified]], { b }), true, 'still unsaved, as the user left it')
    T.match(H.transcript_text(child), 'Turns 2–3 undone by :AcpRestore: 2 files put back to before turn 2')

    -- What the user sees: turns 2 and 3 folded under a line saying so.
    -- (b.txt out of sight: its path names the test's temporary folder.)
    child:cmd('wincmd t')
    child:cmd('enew')
    local screen = Screen.attach(child, 100, 30)
    child:lua([[vim.api.nvim_set_current_win(require('acp').current().win); vim.cmd('normal! gg')]])
    Screen.expect(screen:shot(), 'checkpoint_undone_turns')
    local shot = table.concat(screen:shot().text, '\n')
    T.match(shot, 'turn 2 undone by :AcpRestore')
    T.match(shot, 'turn 3 undone by :AcpRestore')

    -- One u in the restored buffer undoes the restore.
    child:cmd('wincmd t')
    child:cmd('buffer ' .. child:lua([[return vim.fn.bufnr(...)]], { b }))
    child:feed('u')
    child:wait_for([[return vim.api.nvim_buf_get_lines(0, 1, 2, false)[1] == 'TWO']], 2000)
    T.eq(buf_lines(child, b), { 'one', 'TWO', 'three', 'mine' })
    child:stop()
  end },

  { ':AcpRestore lists the turns; nothing is touched on Cancel; a bad turn is a clear error', function()
    local dir = G.repo('ckpt-pick', FILES)
    local a = dir .. '/a.txt'
    local child = H.start({ cwd = dir, turns = three_turns(dir), config = { terminal = { confirm = 'never' } } })
    H.open(child)
    H.turn(child, 'one')
    child:lua(H.STUB_SELECT .. [[ _G.pick = { '1  one', 'Cancel' }
      _G.notes = {}
      vim.notify = function(msg, level) table.insert(_G.notes, { msg, level }) end ]])
    child:cmd('AcpRestore')
    T.eq(child:lua('return _G.asked[1].items'), { '1  one  [a.txt]' })
    T.eq(child:lua('return _G.asked[2].prompt'), 'Restore to before turn 1: a.txt')
    T.eq(T.read_file(a), 'A1\n', 'cancelled: unchanged')
    child:cmd('AcpRestore x')
    T.eq(child:lua('return _G.notes[1]'), { 'acp.nvim: :AcpRestore takes a turn number, not "x"', vim.log.levels.ERROR })
    child:cmd('AcpRestore 7')
    T.match(child:lua('return _G.notes[2][1]'), 'no checkpoint of turn 7')
    child:stop()
  end },

  { 'a kept chat reopened after a restart of Neovim restores its turns', function()
    local state = T.tmpdir('ckpt-state')
    local dir = G.repo('ckpt-kept', FILES)
    local a = dir .. '/a.txt'
    local turns = {
      { match = 'one', steps = { write(a, 'A1\n'), { message = 'wrote a' } } },
      { match = 'two', steps = { write(a, 'A1\nA2\n'), { message = 'wrote a again' } } },
    }
    local one = H.start({ cwd = dir, turns = turns, env = { XDG_STATE_HOME = state } })
    H.open(one)
    H.turn(one, 'one')
    H.turn(one, 'two')
    T.eq(T.read_file(a), 'A1\nA2\n')
    T.wait(function()
      return #vim.fn.glob(state .. '/nvim/acp/chats/*/*.jsonl', false, true) >= 1
    end, 3000, 'a kept chat file was written')
    vim.wait(300)
    one:stop()
    local two = H.start({ cwd = dir, turns = turns, env = { XDG_STATE_HOME = state } })
    H.open(two)
    two:lua(H.STUB_SELECT .. [[ _G.pick = { 'one' } ]])
    two:cmd('AcpSessions')
    two:wait_for([[local v = require('acp').current(); return v.history_of ~= nil and v.state == 'idle']], 5000)
    two:lua(H.STUB_SELECT .. [[ _G.pick = { 'Restore 1 file' } ]])
    two:cmd('AcpRestore 2')
    T.wait(function()
      return T.read_file(a) == 'A1\n'
    end, 3000, 'turn 2 taken back after the restart')
    two:wait_for([[return table.concat(require('acp').current():lines(), '\n'):find('Turn 2 undone by :AcpRestore', 1, true) ~= nil]], 3000)
    two:stop()
  end },

  { 'a cap that drops the oldest checkpoint says so in the chat', function()
    local dir = G.repo('ckpt-cap', FILES)
    local a = dir .. '/a.txt'
    local turns = {
      { match = 'one', steps = { write(a, string.rep('x', 200) .. '\n'), { message = 'big' } } },
      { match = 'two', steps = { { message = 'nothing' } } },
    }
    local child = H.start({ cwd = dir, turns = turns, config = { checkpoints = { max_bytes = 100, git = false } } })
    H.open(child)
    H.turn(child, 'one')
    H.turn(child, 'two')
    T.match(H.transcript_text(child), 'Checkpoints passed checkpoints%.max_bytes: the oldest were dropped %(turn 1%); :AcpRestore cannot go back before turn 2')
    child:lua([[_G.notes = {}; vim.notify = function(msg) table.insert(_G.notes, msg) end]])
    child:cmd('AcpRestore 1')
    T.match(child:lua('return _G.notes[1]'), 'no checkpoint of turn 1')
    child:stop()
  end },
}
