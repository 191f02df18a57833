-- Buffers follow files an agent changes on disk itself: in-place reloads,
-- three-way merges with unsaved edits, conflicts in the chat, and never
-- one of Neovim's "file changed" prompts.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local function read(path)
  return H.req('fs/read_text_file', { path = path })
end
local function write(path, content)
  return H.req('fs/write_text_file', { path = path, content = content })
end

--- A turn in which a tool call of kind edit rewrites `file` with a shell
--- command (as agents that do their own I/O do), completes, and the turn
--- then stays running for a while.
local function disk_edit_turn(match, file, content, linger_ms)
  return {
    match = match,
    steps = {
      { update = { sessionUpdate = 'tool_call', toolCallId = 'e-' .. match, title = 'Edit', kind = 'edit',
        status = 'in_progress', locations = { { path = file } } } },
      H.req('terminal/create', { command = ('printf %%s %s > %s'):format(vim.fn.shellescape(content), vim.fn.shellescape(file)) }),
      H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'e-' .. match, status = 'completed' } },
      { sleep_ms = linger_ms or 1500 },
      { message = 'done' },
    },
  }
end

-- Commands that edit files run unconfirmed here (the confirmation is
-- tested in test_policy).
local NO_CONFIRM = { terminal = { confirm = 'never' } }

local function start(dir, turns)
  local child, paths = H.start({ cwd = dir, turns = turns, config = NO_CONFIRM })
  H.open(child)
  -- Edit files in the window left of the chat, in normal mode.
  child:cmd('stopinsert')
  child:cmd('wincmd t')
  return child, paths
end

local function lines(child)
  return child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]])
end

--- No prompt waits for the user and none was shown. (Without a UI the
--- W11/W12 dialogs do not wait: they leave their text in v:warningmsg.)
local function no_prompt(child)
  T.eq(child:rpc('nvim_get_mode').blocking, false, 'Neovim is not blocked by a prompt')
  local msgs = child:messages() .. '\n' .. child:lua('return vim.v.warningmsg')
  T.no_match(msgs, 'W1[123]')
  T.no_match(msgs, 'changed since')
  T.no_match(msgs, 'has changed')
end

local function close_undo_block(child)
  child:lua([[vim.cmd('let &undolevels = &undolevels')]])
end

--- The sync's notices in the transcript (notice entries of the core).
local function chat_notices(child)
  return child:lua([[
    local out = {}
    for _, l in ipairs(require('acp').current():lines()) do
      if l:find('changed on disk', 1, true) or l:find('could not sync', 1, true) then
        out[#out + 1] = l
      end
    end
    return out
  ]])
end

--- A turn in which the agent asks to edit `file` (an edit card and a
--- permission request, as claude-code-acp and Gemini CLI do), then writes
--- it through fs/write_text_file with `content` once allowed.
local function ask_then_write(match, file, content, expect)
  return {
    match = match,
    steps = {
      { update = { sessionUpdate = 'tool_call', toolCallId = 'w-' .. match, title = 'Write ' .. vim.fs.basename(file),
        kind = 'edit', status = 'pending', locations = { { path = file } } } },
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'w-' .. match, title = 'Write ' .. vim.fs.basename(file), kind = 'edit' },
        options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' }, { optionId = 'no', name = 'Reject', kind = 'reject_once' } },
      }),
      H.req('fs/write_text_file', { path = file, content = content }, expect),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'w-' .. match, status = 'completed' } },
      { message = 'done' },
    },
  }
end

--- A project holding the one file `name` (`text`), the chat started with a
--- turn `edit` in which the agent asks and then writes `agent` to it, and
--- the file open in the window left of the chat.
local function editing_with_write(name, text, agent)
  local dir = H.project({ [name] = text })
  local file = dir .. '/' .. name
  local child, paths = start(dir, { ask_then_write('edit', file, agent) })
  child:cmd('edit ' .. file)
  return child, paths, file
end

--- Sends `match`; while its permission waits, another program writes
--- `outside` into `file`; then allows and waits for the turn to end.
local function outside_change_during(child, match, file, outside)
  local before = child:lua([[return require('acp').current().turns_ended]])
  child:lua([[assert(require('acp').send(...))]], { match })
  child:wait_for([[return #require('acp.ask.permission').queue == 1]], 5000)
  T.write_file(file, outside)
  H.enter_permission(child)
  child:lua([[require('acp.ask.permission').choose(1)]])
  child:wait_for(([[return require('acp').current().turns_ended > %d]]):format(before), 5000)
  child:cmd('wincmd t')
end

--- The agent's answers to its fs/write_text_file requests.
local function write_answers(paths)
  return vim.tbl_filter(function(r)
    return r.method == 'fs/write_text_file'
  end, H.responses(paths))
end

return {
  { 'a disk edit reloads the unmodified buffer in place when the tool call completes; u undoes it', function()
    local dir = H.project({ ['f.txt'] = 'one\ntwo\nthree\nfour\n' })
    local file = dir .. '/f.txt'
    local child, paths = start(dir, {
      disk_edit_turn('edit', file, 'zero\none\nTWO\nthree\nfour\n'),
      { match = 'read', steps = { read(file) } },
    })
    child:cmd('edit ' .. file)
    child:lua([[
      vim.api.nvim_win_set_cursor(0, { 3, 2 })
      vim.api.nvim_buf_set_mark(0, 'a', 4, 1, {})
      vim.wo.foldmethod = 'manual'
      vim.cmd('3,4fold')
    ]])
    child:lua([[assert(require('acp').send('edit'))]])
    child:wait_for([[return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == 'zero']], 3000)
    T.eq(child:lua([[return require('acp').current().state]]), 'running', 'synced when the tool call completed, before the turn ended')
    T.eq(lines(child), { 'zero', 'one', 'TWO', 'three', 'four' })
    T.eq(child:lua('return vim.bo.modified'), false)
    T.eq(child:lua([[return vim.api.nvim_win_get_cursor(0)]]), { 4, 2 }, 'the cursor stays on its text')
    T.eq(child:lua([[return vim.api.nvim_buf_get_mark(0, 'a')]]), { 5, 1 }, 'the mark stays on its text')
    T.eq(child:lua([[return { vim.fn.foldclosed(4), vim.fn.foldclosedend(4) }]]), { 4, 5 }, 'the fold stays')
    no_prompt(child)
    H.wait_idle(child)
    -- One `u` takes back the whole reload; the buffer then differs from the disk.
    child:feed('u')
    child:wait_for([[return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == 'one']])
    T.eq(lines(child), { 'one', 'two', 'three', 'four' })
    T.eq(child:lua('return vim.bo.modified'), true)
    child:feed('<C-r>')
    child:wait_for([[return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == 'zero']])
    T.eq(child:lua('return vim.bo.modified'), false)
    -- Changed on disk again with no tool call: the agent's next read gets
    -- the disk text, and the buffer follows.
    T.write_file(file, 'disk\ntext\n')
    H.turn(child, 'read')
    T.eq(H.responses(paths)[3].result, { content = 'disk\ntext\n' })
    T.eq(lines(child), { 'disk', 'text' })
    T.eq(child:lua('return vim.bo.modified'), false)
    -- Neovim's own check finds nothing to ask about, and the user's next
    -- write is not a "changed since reading" question.
    child:cmd('checktime')
    no_prompt(child)
    T.eq(lines(child), { 'disk', 'text' })
    child:lua([[vim.api.nvim_buf_set_lines(0, 2, 2, false, { 'user' })]])
    child:cmd('write')
    no_prompt(child)
    T.eq(T.read_file(file), 'disk\ntext\nuser\n')
    T.eq(child:lua('return vim.bo.modified'), false)
  end },

  { 'a disk edit merges cleanly into unsaved edits: both kept, one undo step, no prompt', function()
    local dir = H.project({ ['m.txt'] = 'a\nb\nc\nd\ne\n' })
    local file = dir .. '/m.txt'
    local child = start(dir, { disk_edit_turn('edit', file, 'a\nb\nc\nd\nE (agent)\n', 0) })
    child:cmd('edit ' .. file)
    child:lua([[vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'A (user)' })]])
    close_undo_block(child)
    H.turn(child, 'edit')
    T.eq(lines(child), { 'A (user)', 'b', 'c', 'd', 'E (agent)' })
    T.eq(child:lua('return vim.bo.modified'), true, 'the user edit is still unsaved')
    T.eq(T.read_file(file), 'a\nb\nc\nd\nE (agent)\n', 'the disk is not written')
    no_prompt(child)
    child:cmd('checktime')
    no_prompt(child)
    child:feed('u')
    child:wait_for([[return vim.api.nvim_buf_get_lines(0, 4, 5, false)[1] == 'e']])
    T.eq(lines(child), { 'A (user)', 'b', 'c', 'd', 'e' }, 'one u takes back the merge only')
    -- Writing the merged text is not a "changed since reading" question.
    child:feed('<C-r>')
    child:wait_for([[return vim.api.nvim_buf_get_lines(0, 4, 5, false)[1] == 'E (agent)']])
    child:cmd('write')
    no_prompt(child)
    T.eq(T.read_file(file), 'A (user)\nb\nc\nd\nE (agent)\n')
  end },

  { 'overlapping disk and buffer edits: a notice in the chat, the buffer untouched, :AcpConflict compares', function()
    local dir = H.project({ ['c.txt'] = 'a\nb\nc\n' })
    local file = dir .. '/c.txt'
    local child = start(dir, { disk_edit_turn('edit', file, 'a\nAGENT\nc\n', 0) })
    child:cmd('edit ' .. file)
    local file_buf = child:lua('return vim.api.nvim_get_current_buf()')
    child:lua([[vim.api.nvim_buf_set_lines(0, 1, 2, false, { 'USER' })]])
    H.turn(child, 'edit')
    T.eq(lines(child), { 'a', 'USER', 'c' })
    T.eq(child:lua('return vim.bo.modified'), true)
    child:wait_for([[return #vim.tbl_filter(function(l) return l:find('changed on disk', 1, true) end,
      require('acp').current():lines()) > 0]], 3000)
    T.eq(chat_notices(child), { '⚠ c.txt changed on disk and in your buffer: :AcpConflict c.txt to compare' })
    no_prompt(child)
    -- Neovim's own check (e.g. on focus) is answered here: no W12, no second notice.
    child:cmd('checktime')
    child:wait_for([[return true]])
    no_prompt(child)
    T.eq(lines(child), { 'a', 'USER', 'c' })
    T.eq(#chat_notices(child), 1)
    -- A plain :w does not ask, and does not write over the disk version.
    local written, err = pcall(child.cmd, child, 'write')
    T.eq(written, false)
    T.match(err, 'c%.txt not written: it changed on disk and in this buffer')
    no_prompt(child)
    T.eq(T.read_file(file), 'a\nAGENT\nc\n')
    T.eq(child:lua('return vim.bo.modified'), true)
    T.eq(child:lua([[return vim.fn.getcompletion('AcpConflict ', 'cmdline')]]), { 'c.txt' })
    child:cmd('AcpConflict c.txt')
    local tab = child:lua([[
      local wins = vim.api.nvim_tabpage_list_wins(0)
      local out = {}
      for _, w in ipairs(wins) do
        local b = vim.api.nvim_win_get_buf(w)
        out[#out + 1] = { buf = b, diff = vim.wo[w].diff, lines = vim.api.nvim_buf_get_lines(b, 0, -1, false) }
      end
      return { count = #vim.api.nvim_list_tabpages(), wins = out }
    ]])
    T.eq(tab.count, 2, 'a new tab page')
    T.eq(#tab.wins, 2)
    T.eq(tab.wins[1].lines, { 'a', 'AGENT', 'c' }, 'the disk text')
    T.eq(tab.wins[2].buf, file_buf, 'the buffer itself')
    T.eq({ tab.wins[1].diff, tab.wins[2].diff }, { true, true })
    -- Seen: writing the buffer over the disk version asks nothing.
    child:cmd('write')
    no_prompt(child)
    T.eq(T.read_file(file), 'a\nUSER\nc\n')
  end },

  { 'an agent write to a buffer whose file changed on disk after it was loaded: no prompt, the disk change kept', function()
    local dir = H.project({ ['w.txt'] = 'one\ntwo\nthree\nfour\nfive\n' })
    local file = dir .. '/w.txt'
    local child, paths = start(dir, {
      { match = 'read', steps = { read(file) } },
      { match = 'write', steps = { write(file, 'ONE (agent)\ntwo\nthree\nfour\nfive\n') } },
    })
    child:cmd('edit ' .. file)
    H.turn(child, 'read')
    -- Another process changes the file; nothing checks the disk before the write.
    T.write_file(file, 'one\ntwo\nthree\nfour\nFIVE (disk)\n')
    H.turn(child, 'write')
    no_prompt(child)
    T.eq(H.responses(paths)[2].result, vim.empty_dict())
    T.eq(lines(child), { 'ONE (agent)', 'two', 'three', 'four', 'FIVE (disk)' })
    T.eq(T.read_file(file), 'ONE (agent)\ntwo\nthree\nfour\nFIVE (disk)\n', 'saved, with the disk change')
    T.eq(child:lua('return vim.bo.modified'), false)
  end },

  { 'at the end of a turn, files changed by a command (no edit card) are synced', function()
    local dir = H.project({ ['s.txt'] = 'old\n' })
    local file = dir .. '/s.txt'
    local child = start(dir, {
      { match = 'run', steps = {
        H.req('terminal/create', { command = 'printf "new\\n" > ' .. vim.fn.shellescape(file) }),
        H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
      } },
    })
    child:cmd('edit ' .. file)
    H.turn(child, 'run')
    T.eq(lines(child), { 'new' })
    T.eq(child:lua('return vim.bo.modified'), false)
    no_prompt(child)
  end },

  { "files outside the session's roots keep Neovim's own question", function()
    local dir = H.project({ ['in.txt'] = 'in\n' })
    local outside = vim.fn.resolve(T.tmpdir('outside'))
    local file = outside .. '/o.txt'
    T.write_file(file, 'a\nb\n')
    local child = start(dir, { { match = 'go', steps = {} } })
    child:cmd('edit ' .. file)
    child:lua([[vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'user' })]])
    T.write_file(file, 'a\nb\nmore\n')
    -- A newer modification time whatever the file system's granularity
    -- (no sleep between the two writes).
    local now = os.time() + 5
    vim.uv.fs_utime(file, now, now)
    child:cmd('checktime')
    T.match(child:lua('return vim.v.warningmsg'), '^W12: ')
    T.eq(lines(child), { 'user', 'b' })
  end },

  { 'an unmodified buffer loaded before the chat opened: a disk edit reloads it and is recorded for review with the old text', function()
    local dir = H.project({ ['p.txt'] = 'one\ntwo\nthree\n' })
    local file = dir .. '/p.txt'
    local child = H.start({ cwd = dir, config = NO_CONFIRM, turns = {
      disk_edit_turn('edit', file, 'one\nTWO (agent)\nthree\n', 0),
    } })
    child:cmd('edit ' .. file)
    H.open(child)
    child:cmd('stopinsert')
    child:cmd('wincmd t')
    H.turn(child, 'edit')
    T.eq(lines(child), { 'one', 'TWO (agent)', 'three' }, 'the buffer follows the disk')
    T.eq(child:lua('return vim.bo.modified'), false)
    local w = child:lua([[return require('acp').writes()]])
    T.eq(#w, 1)
    T.eq({ w[1].path, w[1].target, w[1].original }, { file, 'agent', 'one\ntwo\nthree\n' })
    child:cmd('AcpReview')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_list_wins(0)[1]), 0, -1, false)]]),
      { 'one', 'two', 'three' }, 'the review shows the text from before the edit')
    no_prompt(child)
  end },

  { 'buffers loaded before the chat opened: unsaved edits are no conflict, later disk edits merge', function()
    local dir = H.project({ ['b.txt'] = 'a\nb\nc\nd\n' })
    local file = dir .. '/b.txt'
    local child, paths = H.start({ cwd = dir, config = NO_CONFIRM, turns = {
      { match = 'read', steps = { read(file) } },
      disk_edit_turn('edit', file, 'a\nb\nc\nD (agent)\n', 0),
    } })
    child:cmd('edit ' .. file)
    child:lua([[vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'A (user)' })]])
    close_undo_block(child)
    H.open(child)
    child:cmd('stopinsert')
    child:cmd('wincmd t')
    H.turn(child, 'read')
    T.eq(H.responses(paths)[1].result, { content = 'A (user)\nb\nc\nd\n' })
    T.eq(chat_notices(child), {})
    H.turn(child, 'edit')
    T.eq(lines(child), { 'A (user)', 'b', 'c', 'D (agent)' })
    T.eq(chat_notices(child), {})
    no_prompt(child)
  end },

  { 'a file with a BOM and CRLF syncs from disk and merges; the agent reads the file text minus the BOM; :w keeps both', function()
    local BOM = '\239\187\191'
    local dir = H.project({ ['bom.txt'] = BOM .. 'one\r\ntwo\r\nthree\r\n', ['mac.txt'] = 'a\rb\r' })
    local file, mac = dir .. '/bom.txt', dir .. '/mac.txt'
    local child, paths = start(dir, {
      { match = 'read', steps = { read(file), read(mac) } },
      disk_edit_turn('edit', file, BOM .. 'one\r\nTWO (agent)\r\nthree\r\n', 0),
      { match = 'again', steps = { read(file) } },
    })
    child:cmd('edit ++ff=mac ' .. mac)
    child:cmd('edit ' .. file)
    T.eq(child:lua('return { vim.bo.bomb, vim.bo.fileformat, vim.bo.fileencoding }'), { true, 'dos', 'utf-8' })
    T.eq(lines(child), { 'one', 'two', 'three' })
    H.turn(child, 'read')
    T.eq(H.responses(paths)[1].result, { content = 'one\r\ntwo\r\nthree\r\n' }, 'the file text, without the BOM')
    T.eq(H.responses(paths)[2].result, { content = 'a\rb\r' }, "a mac buffer's text has its line breaks")
    -- The core holds what the buffer and the disk agreed on; the sync keeps no text.
    local real = vim.uv.fs_realpath(file)
    T.eq(child:lua([[return require('acp.core').agreed_get(...)]], { real }), BOM .. 'one\r\ntwo\r\nthree\r\n')
    T.eq(child:lua([[
      local rec = require('acp.editor.sync').records[vim.api.nvim_get_current_buf()]
      return rec.base == nil and rec.text == nil
    ]]), true)
    -- An unsaved edit, then the agent changes another line on disk: merged.
    child:lua([[vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'ONE (user)' })]])
    close_undo_block(child)
    H.turn(child, 'edit')
    T.eq(lines(child), { 'ONE (user)', 'TWO (agent)', 'three' })
    T.eq(child:lua('return { vim.bo.modified, vim.bo.bomb, vim.bo.fileformat }'), { true, true, 'dos' })
    T.eq(chat_notices(child), {})
    T.eq(child:lua([[return require('acp.core').agreed_get(...)]], { real }), BOM .. 'one\r\nTWO (agent)\r\nthree\r\n',
      'the disk text is the new common text')
    H.turn(child, 'again')
    T.eq(H.responses(paths)[5].result, { content = 'ONE (user)\r\nTWO (agent)\r\nthree\r\n' })
    child:cmd('write')
    no_prompt(child)
    T.eq(T.read_file(file), BOM .. 'ONE (user)\r\nTWO (agent)\r\nthree\r\n', 'written with its BOM and CRLF')
    T.eq(child:lua([[return require('acp.core').agreed_get(...)]], { real }), T.read_file(file))
    -- Unloaded: the core forgets it.
    child:cmd('bwipeout')
    T.eq(child:lua([[return require('acp.core').agreed_get(...) == nil]], { real }), true)
  end },
  { 'a disk change during the turn, then an agent write based on the old text: both changes in the unmodified buffer and on disk, no prompt', function()
    local child, paths, file = editing_with_write('d.txt', 'one\ntwo\nthree\nfour\nfive\n', 'ONE (agent)\ntwo\nthree\nfour\nfive\n')
    outside_change_during(child, 'edit', file, 'one\ntwo\nthree\nfour\nFIVE (outside)\n')
    T.eq(write_answers(paths)[1].result, vim.empty_dict(), 'the write succeeded')
    T.eq(lines(child), { 'ONE (agent)', 'two', 'three', 'four', 'FIVE (outside)' })
    T.eq(T.read_file(file), 'ONE (agent)\ntwo\nthree\nfour\nFIVE (outside)\n', 'saved with both changes')
    T.eq(child:lua('return vim.bo.modified'), false)
    T.eq(child:lua([[return vim.fn.mode()]]), 'n')
    no_prompt(child)
    -- The sync's record follows the new disk text: nothing merged twice, no question.
    T.eq(child:lua([[return require('acp.core').agreed_get(...)]], { file }), T.read_file(file))
    child:cmd('checktime')
    no_prompt(child)
    T.eq(lines(child), { 'ONE (agent)', 'two', 'three', 'four', 'FIVE (outside)' })
    T.eq(chat_notices(child), {})
  end },

  { 'the same when the agreed text is not known (dropped under the cap): the unmodified buffer as it was is the base', function()
    local child, paths, file = editing_with_write('g.txt', 'one\ntwo\nthree\n', 'ONE (agent)\ntwo\nthree\n')
    child:lua([[require('acp.core').agreed_forget(...)]], { file })
    outside_change_during(child, 'edit', file, 'one\ntwo\nTHREE (outside)\n')
    T.eq(write_answers(paths)[1].result, vim.empty_dict())
    T.eq(lines(child), { 'ONE (agent)', 'two', 'THREE (outside)' })
    T.eq(T.read_file(file), 'ONE (agent)\ntwo\nTHREE (outside)\n')
    T.eq(child:lua('return vim.bo.modified'), false)
    no_prompt(child)
  end },

  { 'an agent write that overlaps a disk change made during the turn is refused: the agent gets the lines, the chat the conflict, the disk keeps its change', function()
    local child, paths, file = editing_with_write('o.txt', 'a\nb\nc\nd\n', 'a\nB (agent)\nc\nd\n')
    outside_change_during(child, 'edit', file, 'a\nB (outside)\nc\nd\n')
    local answer = write_answers(paths)[1]
    T.eq(answer.result, nil, 'refused')
    T.match(answer.error.message, 'lines 2%-2')
    T.match(answer.error.message, 'changed on disk')
    T.eq(T.read_file(file), 'a\nB (outside)\nc\nd\n', 'the disk keeps the outside change')
    T.eq(lines(child), { 'a', 'B (outside)', 'c', 'd' }, 'the buffer follows the disk')
    T.eq(child:lua('return vim.bo.modified'), false)
    no_prompt(child)
    child:wait_for([[return #vim.tbl_filter(function(l) return l:find('changed on disk while the agent worked', 1, true) end,
      require('acp').current():lines()) > 0]], 3000)
    T.eq(chat_notices(child), {
      '⚠ o.txt changed on disk while the agent worked: its write (lines 2-2) was not made, the disk keeps the change: :AcpConflict o.txt to compare',
    })
    -- :AcpConflict compares the agent's text with the file's buffer.
    T.eq(child:lua([[return vim.fn.getcompletion('AcpConflict ', 'cmdline')]]), { 'o.txt' })
    local file_buf = child:lua('return vim.api.nvim_get_current_buf()')
    child:cmd('AcpConflict o.txt')
    local tab = child:lua([[
      local out = {}
      for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
        local b = vim.api.nvim_win_get_buf(w)
        out[#out + 1] = { buf = b, diff = vim.wo[w].diff, lines = vim.api.nvim_buf_get_lines(b, 0, -1, false) }
      end
      return out
    ]])
    T.eq(#tab, 2)
    T.eq(tab[1].lines, { 'a', 'B (agent)', 'c', 'd' }, "the agent's text")
    T.eq(tab[2].buf, file_buf, 'the buffer itself')
    T.eq({ tab[1].diff, tab[2].diff }, { true, true })
    no_prompt(child)
  end },

  { 'a disk change during the turn, unsaved user edits and the agent write: all three kept in the buffer, nothing lost on :w', function()
    local child, paths, file = editing_with_write('u.txt', '1\n2\n3\n4\n5\n', '1 (agent)\n2\n3\n4\n5\n')
    child:lua([[vim.api.nvim_buf_set_lines(0, 2, 3, false, { '3 (user)' })]])
    close_undo_block(child)
    outside_change_during(child, 'edit', file, '1\n2\n3\n4\n5 (outside)\n')
    T.eq(write_answers(paths)[1].result, vim.empty_dict())
    T.eq(lines(child), { '1 (agent)', '2', '3 (user)', '4', '5 (outside)' })
    T.eq(child:lua('return vim.bo.modified'), true, 'the user edit is still unsaved')
    T.eq(T.read_file(file), '1\n2\n3\n4\n5 (outside)\n', 'not written under unsaved edits')
    no_prompt(child)
    T.eq(chat_notices(child), {})
    child:cmd('write')
    no_prompt(child)
    T.eq(T.read_file(file), '1 (agent)\n2\n3 (user)\n4\n5 (outside)\n')
  end },

  { 'a file without a buffer: a disk change since the agent read it is merged into its write, an overlapping one refused', function()
    local dir = H.project({ ['n.txt'] = 'a\nb\nc\n', ['k.txt'] = 'x\ny\n' })
    local file, other = dir .. '/n.txt', dir .. '/k.txt'
    local child, paths = start(dir, {
      { match = 'read', steps = { read(file), read(other) } },
      { match = 'write', steps = {
        write(file, 'A (agent)\nb\nc\n'),
        H.req('fs/write_text_file', { path = other, content = 'X (agent)\ny\n' }),
      } },
    })
    H.turn(child, 'read')
    T.write_file(file, 'a\nb\nC (outside)\n')
    T.write_file(other, 'X (outside)\ny\n')
    H.turn(child, 'write')
    local answers = write_answers(paths)
    T.eq(answers[1].result, vim.empty_dict())
    T.eq(T.read_file(file), 'A (agent)\nb\nC (outside)\n', 'merged')
    T.match(answers[2].error.message, 'lines 1%-1')
    T.eq(T.read_file(other), 'X (outside)\ny\n', 'refused: the disk keeps its change')
    no_prompt(child)
  end },

  { 'an unmodified buffer whose file changes twice during the turn (another program, then the agent on disk) ends with the disk text', function()
    local dir = H.project({ ['t.txt'] = 'a\nb\nc\n' })
    local file = dir .. '/t.txt'
    local child = start(dir, {
      { match = 'edit', steps = {
        { update = { sessionUpdate = 'tool_call', toolCallId = 'e1', title = 'Edit t.txt', kind = 'edit', status = 'pending',
          locations = { { path = file } } } },
        H.req('session/request_permission', {
          toolCall = { toolCallId = 'e1', title = 'Edit t.txt', kind = 'edit' },
          options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' } },
        }),
        -- claude-agent-acp edits the disk itself once allowed.
        H.req('terminal/create', { command = 'sed -i s/^a$/A-agent/ ' .. vim.fn.shellescape(file) }),
        H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
        { update = { sessionUpdate = 'tool_call_update', toolCallId = 'e1', status = 'completed' } },
        { message = 'done' },
      } },
    })
    child:cmd('edit ' .. file)
    outside_change_during(child, 'edit', file, 'a\nb\nC (outside)\n')
    T.eq(T.read_file(file), 'A-agent\nb\nC (outside)\n')
    T.eq(lines(child), { 'A-agent', 'b', 'C (outside)' })
    T.eq(child:lua('return vim.bo.modified'), false)
    no_prompt(child)
    T.eq(chat_notices(child), {})
  end },
}
