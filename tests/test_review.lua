-- Agent writes that must not go through as they are (protected paths,
-- unsaved edits the agent never read) and :AcpReview: only this client's
-- own records can make a file "new", review reverts only the agent's
-- hunks (the user's own edits are kept, and never shown as the agent's), k
-- and A last until the session ends.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local function write(path, content)
  return H.req('fs/write_text_file', { path = path, content = content })
end

local function tc(fields)
  fields.sessionUpdate = 'tool_call'
  return { update = fields }
end

--- A chat in `dir` whose turns are `turns`; the cursor ends in the window
--- left of the chat, in normal mode (where the user edits files).
--- A turn in which the agent asks to edit `file` (an edit card and a
--- permission request), then, once allowed, makes the edit with `steps`:
--- claude-code-acp and Gemini CLI write through fs/write_text_file, and
--- claude-agent-acp edits the disk itself.
local function ask_then(match, file, steps, first)
  local out = vim.list_extend(vim.deepcopy(first or {}), {
    { update = { sessionUpdate = 'tool_call', toolCallId = 'w-' .. match, title = 'Edit ' .. vim.fs.basename(file),
      kind = 'edit', status = 'pending', locations = { { path = file } } } },
    H.req('session/request_permission', {
      toolCall = { toolCallId = 'w-' .. match, title = 'Edit ' .. vim.fs.basename(file), kind = 'edit' },
      options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' }, { optionId = 'no', name = 'Reject', kind = 'reject_once' } },
    }),
  })
  vim.list_extend(out, steps)
  vim.list_extend(out, {
    { update = { sessionUpdate = 'tool_call_update', toolCallId = 'w-' .. match, status = 'completed' } },
    { message = 'done' },
  })
  return { match = match, steps = out }
end

--- Sends `match`; while its permission waits, `edit` runs (the user's
--- edit); then allows and waits for the turn to end.
local function during_permission(child, match, edit)
  local before = child:lua([[return require('acp').current().turns_ended]])
  child:lua([[assert(require('acp').send(...))]], { match })
  child:wait_for([[return #require('acp.ask.permission').queue == 1]], 5000)
  edit()
  H.enter_permission(child)
  child:lua([[require('acp.ask.permission').choose(1)]])
  child:wait_for(([[return require('acp').current().turns_ended > %d]]):format(before), 5000)
  child:cmd('wincmd t')
end

--- Captures vim.notify's messages in the child (read with `notes`).
local function capture_notes(child)
  child:lua([[_G.notes = {}
    vim.notify = function(msg) table.insert(_G.notes, msg) end]])
end

local function notes(child)
  return child:lua('return _G.notes')
end

local function start(dir, turns, config)
  local child, paths = H.start({ cwd = dir, turns = turns, config = config })
  H.open(child)
  child:cmd('stopinsert')
  child:cmd('wincmd t')
  return child, paths
end

local function lines(child, path)
  return child:lua([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)]], { path })
end

local function close_undo_block(child)
  child:lua([[vim.cmd('let &undolevels = &undolevels')]])
end

--- The review's files as { name, new_file, unknown }.
local function review_files(child)
  return child:lua([[
    local out = {}
    for _, f in ipairs(require('acp.editor.review').last.files) do
      out[#out + 1] = { vim.fn.fnamemodify(f.path, ':t'), f.new_file, f.unknown }
    end
    return out
  ]])
end

--- Lines of the review's left (before) and right (file) windows.
local function review_sides(child)
  return child:lua([[
    local wins = vim.api.nvim_tabpage_list_wins(0)
    local get = function(w) return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false) end
    return { left = get(wins[1]), right = get(wins[2]) }
  ]])
end

return {
  -- Protected paths -------------------------------------------------------------
  { 'a write under .git is refused with an error naming fs.protected; fs.protected = {} allows it', function()
    local dir = H.project()
    local config_text = '[core]\n\tbare = false\n'
    T.write_file(dir .. '/.git/config', config_text)
    local hostile = '[core]\n\tfsmonitor = "touch pwned"\n'
    local turns = { { match = 'go', steps = {
      write(dir .. '/.git/config', hostile),
      write(dir .. '/sub/.git/hooks/pre-commit', '#!/bin/sh\ntouch pwned\n'),
      write(dir .. '/.gitignore', 'target/\n'),
    } } }
    local child, paths = start(dir, turns)
    H.turn(child, 'go')
    local r = H.responses(paths)
    T.eq(#r, 3)
    T.eq(r[1].result, nil)
    T.match(r[1].error.message, vim.pesc(dir .. '/.git/config') .. '.*fs%.protected')
    T.eq(r[2].result, nil)
    T.match(r[2].error.message, 'fs%.protected')
    T.eq(r[3].result, vim.empty_dict(), 'a name that only starts with .git is not protected')
    T.eq(T.read_file(dir .. '/.git/config'), config_text, '.git/config is unchanged')
    T.eq(vim.uv.fs_stat(dir .. '/sub/.git'), nil, 'nothing was created under sub/.git')
    T.eq(child:lua([[
      return vim.tbl_map(function(w) return vim.fn.fnamemodify(w.path, ':t') end, require('acp').writes())
    ]]), { '.gitignore' }, 'only the allowed write is recorded')

    -- The user allows such writes.
    local child2, paths2 = start(dir, { turns[1] }, { fs = { protected = {} } })
    H.turn(child2, 'go')
    local r2 = H.responses(paths2)
    T.eq(r2[1].result, vim.empty_dict())
    T.eq(r2[2].result, vim.empty_dict())
    T.eq(T.read_file(dir .. '/.git/config'), hostile)
    T.eq(T.read_file(dir .. '/sub/.git/hooks/pre-commit'), '#!/bin/sh\ntouch pwned\n')
  end },

  -- Writes the agent never read ---------------------------------------------------
  { 'an unread write into unsaved edits is merged: both kept, still modified, one u removes the agent part', function()
    local dir = H.project({ ['m.txt'] = 'one\ntwo\nthree\nfour\nfive\nsix\n' })
    local file = dir .. '/m.txt'
    local child, paths = start(dir, {
      { match = 'write', steps = { write(file, 'one\nTWO (agent)\nthree\nfour\nfive\nsix\n') } },
    })
    child:cmd('edit ' .. file)
    child:lua([[vim.api.nvim_buf_set_lines(0, 4, 5, false, { 'FIVE (user)' })]])
    close_undo_block(child)
    H.turn(child, 'write')
    T.eq(H.responses(paths)[1].result, vim.empty_dict())
    T.eq(lines(child, file), { 'one', 'TWO (agent)', 'three', 'four', 'FIVE (user)', 'six' })
    T.eq(child:lua('return vim.bo.modified'), true, 'the unsaved edits stay unsaved')
    T.eq(T.read_file(file), 'one\ntwo\nthree\nfour\nfive\nsix\n', 'the disk is untouched')
    child:feed('u')
    T.eq(lines(child, file), { 'one', 'two', 'three', 'four', 'FIVE (user)', 'six' },
      'one undo step takes back exactly the agent part')
  end },

  { 'an unread write overlapping unsaved edits is an error to the agent; the buffer is untouched', function()
    local dir = H.project({ ['c.txt'] = 'a\nb\nc\n' })
    local file = dir .. '/c.txt'
    local child, paths = start(dir, {
      { match = 'write', steps = { write(file, 'a\nAGENT\nc\n') } },
    })
    child:cmd('edit ' .. file)
    child:lua([[vim.api.nvim_buf_set_lines(0, 1, 2, false, { 'USER' })]])
    close_undo_block(child)
    local tick = child:lua('return vim.b.changedtick')
    H.turn(child, 'write')
    local r = H.responses(paths)[1]
    T.eq(r.result, nil)
    T.match(r.error.message, vim.pesc(file) .. ': lines 2%-2 changed')
    T.eq(lines(child, file), { 'a', 'USER', 'c' })
    T.eq(child:lua('return vim.b.changedtick'), tick, 'the buffer was not edited at all')
    T.eq(child:lua('return vim.bo.modified'), true)
    T.eq(T.read_file(file), 'a\nb\nc\n')
    T.eq(child:lua([[return require('acp').writes()]]), {}, 'nothing recorded')
  end },

  -- Review ----------------------------------------------------------------------
  { 'R refuses a file a card claims is new (outside the roots); it deletes a file this client created', function()
    local dir = H.project()
    local outside = vim.fn.resolve(T.tmpdir('outside'))
    local claimed = outside .. '/keep.txt'
    T.write_file(claimed, 'precious\n')
    local created = dir .. '/made.txt'
    local child = start(dir, { { match = 'go', steps = {
      tc({ toolCallId = 'n', title = 'Create keep.txt', kind = 'edit', status = 'completed', content = {
        { type = 'diff', path = claimed, newText = 'precious\nplus the agent\n' } } }),
      write(created, 'made by the agent\n'),
    } } })
    H.turn(child, 'go')
    T.eq(child:lua([[return require('acp').writes()[1].created]]), true)
    child:cmd('AcpReview')
    T.eq(review_files(child), { { 'made.txt', true, false }, { 'keep.txt', false, true } })
    -- The client's own record: R deletes the file.
    T.eq(child:lua([[return require('acp.editor.review').last.idx]]), 1)
    child:feed('R')
    T.wait(function()
      return vim.uv.fs_stat(created) == nil
    end, 3000, 'R deleted the file this client created')
    -- The card's claim: R refuses and says why.
    child:wait_for([[return require('acp.editor.review').last.idx == 2]], 2000)
    T.match(child:lua('return vim.wo.winbar'), 'keep%.txt %(before unknown%)')
    -- Outside the roots, the file is not even opened (acp.editor.open).
    child:feed('R')
    child:wait_for([[return vim.v.errmsg ~= '' or vim.fn.execute('messages'):find('nothing to revert') ~= nil]], 2000)
    T.match(child:messages(), vim.pesc(claimed) .. " is not opened %(outside the session's roots%): nothing to revert")
    T.eq(T.read_file(claimed), 'precious\n', 'the claimed file still exists, unchanged')
    T.eq(child:lua([[return vim.fn.bufnr(...)]], { claimed }), -1, 'no buffer was made for it')
  end },

  { 'a snippet Edit card (oldText/newText fragments) is undone in the file for review: R restores the file, never the snippet', function()
    local original = 'alpha\nbeta\ngamma\ndelta\n'
    local edited = 'alpha\nBETA (agent)\nbeta two\ngamma\ndelta\n'
    local dir = H.project({ ['e.txt'] = original, ['t.txt'] = 'x = 0\ny = 1\n' })
    local file, twice = dir .. '/e.txt', dir .. '/t.txt'
    local function edit_card(id, path, old, new)
      return tc({ toolCallId = id, title = 'Edit', kind = 'edit', status = 'completed', locations = { { path = path } },
        content = { { type = 'diff', path = path, oldText = old, newText = new } } })
    end
    local child = start(dir, { { match = 'go', steps = {
      -- The agent writes the disk itself (as claude-agent-acp does), then
      -- reports the replaced fragment and its replacement.
      H.req('terminal/create', { command = ('printf %%s %s > %s'):format(vim.fn.shellescape(edited), vim.fn.shellescape(file)) }),
      H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
      edit_card('e', file, 'beta\n', 'BETA (agent)\nbeta two\n'),
      -- Its newText is then found twice in the file: no telling which.
      H.req('terminal/create', { command = ('printf %%s %s > %s'):format(vim.fn.shellescape('y = 1\ny = 1\n'), vim.fn.shellescape(twice)) }),
      H.req('terminal/wait_for_exit', { terminalId = 'term-2' }),
      edit_card('t', twice, 'x = 0\n', 'y = 1\n'),
    } } }, { terminal = { confirm = 'never' } })
    H.turn(child, 'go')
    T.eq(T.read_file(file), edited)
    child:cmd('AcpReview')
    T.eq(review_files(child), { { 'e.txt', false, false }, { 't.txt', false, true } })
    T.eq(review_sides(child), {
      left = { 'alpha', 'beta', 'gamma', 'delta' },
      right = { 'alpha', 'BETA (agent)', 'beta two', 'gamma', 'delta' },
    }, 'the whole file before | the file, not the snippet')
    child:feed('R')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 1, 2, false)[1] == 'beta']], 2000, { file })
    T.eq(lines(child, file), { 'alpha', 'beta', 'gamma', 'delta' })
    child:lua([[vim.api.nvim_buf_call(vim.fn.bufnr(...), function() vim.cmd('write') end)]], { file })
    T.eq(T.read_file(file), original, 'R restored the exact original file')
    -- The ambiguous card: R refuses and the file stays as the agent left it.
    child:feed(']f')
    child:wait_for([[return require('acp.editor.review').last.idx == 2]], 2000)
    T.match(child:lua('return vim.wo.winbar'), 't%.txt %(before unknown%)')
    child:feed('R')
    child:wait_for([[return vim.fn.execute('messages'):find('not known') ~= nil]], 2000)
    T.match(child:messages(), vim.pesc(twice) .. ' before the change is not known')
    T.eq(lines(child, twice), { 'y = 1', 'y = 1' }, 'the buffer is untouched')
    T.eq(T.read_file(twice), 'y = 1\ny = 1\n')
  end },

  { 'a file no buffer holds, rewritten by the agent itself between pending and completed: listed with its text from before, R restores it', function()
    local original = 'keep\nthis\ntext\n'
    local dir = H.project({ ['u.txt'] = original, ['same.txt'] = 'untouched\n' })
    local file = dir .. '/u.txt'
    local child = start(dir, { { match = 'go', steps = {
      -- No fs request and no diff on the card: only its locations.
      tc({ toolCallId = 'w', title = 'Write', kind = 'edit', status = 'pending',
        locations = { { path = file }, { path = dir .. '/same.txt' } } }),
      { sleep_ms = 300 },
      H.req('terminal/create', { command = ('printf %%s %s > %s'):format(vim.fn.shellescape('rewritten\n'), vim.fn.shellescape(file)) }),
      H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'w', status = 'completed' } },
      { message = 'done' },
    } } }, { terminal = { confirm = 'never' } })
    H.turn(child, 'go')
    T.eq(T.read_file(file), 'rewritten\n')
    T.eq(child:lua([[return vim.fn.bufloaded(...)]], { file }), 0, 'the file is in no buffer')
    local w = child:lua([[return require('acp').writes()]])
    T.eq(#w, 1, 'the unchanged file the card named is not listed')
    T.eq({ w[1].path, w[1].target, w[1].original }, { file, 'agent', original })
    child:cmd('AcpReview')
    T.eq(review_files(child), { { 'u.txt', false, false } })
    T.eq(review_sides(child), { left = { 'keep', 'this', 'text' }, right = { 'rewritten' } })
    child:feed('R')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, 1, false)[1] == 'keep']], 2000, { file })
    child:lua([[vim.api.nvim_buf_call(vim.fn.bufnr(...), function() vim.cmd('write') end)]], { file })
    T.eq(T.read_file(file), original, 'R restored the file')
  end },

  { 'k keeps the hunk under the cursor: R then reverts only the others', function()
    local dir = H.project({ ['a.txt'] = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n' })
    local file = dir .. '/a.txt'
    local child = start(dir, { { match = 'go', steps = {
      write(file, 'ONE\ntwo\nthree\nfour\nfive\nsix\nseven\nEIGHT\n'),
    } } })
    H.turn(child, 'go')
    child:cmd('AcpReview')
    T.eq(review_sides(child), {
      left = { 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight' },
      right = { 'ONE', 'two', 'three', 'four', 'five', 'six', 'seven', 'EIGHT' },
    })
    T.eq(child:lua('return vim.api.nvim_win_get_cursor(0)[1]'), 1, 'on the first hunk')
    child:feed('k')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_list_wins(0)[1]), 0, 1, false)[1] == 'ONE']], 2000)
    T.eq(review_sides(child), {
      left = { 'ONE', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight' },
      right = { 'ONE', 'two', 'three', 'four', 'five', 'six', 'seven', 'EIGHT' },
    }, 'the kept hunk is no longer a change; the file is untouched')
    child:feed('R')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 7, 8, false)[1] == 'eight']], 2000, { file })
    T.eq(lines(child, file), { 'ONE', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight' },
      'R reverted the other hunk and kept the kept one')
  end },

  { 'A accepts everything: a second :AcpReview says the agent changed 2 files, all accepted (the records stay, accepted)', function()
    -- b.txt holds the card's newText: the agent wrote it itself.
    local dir = H.project({ ['a.txt'] = 'a\n', ['b.txt'] = 'BEE\n' })
    local child = start(dir, { { match = 'go', steps = {
      write(dir .. '/a.txt', 'A\n'),
      tc({ toolCallId = 'd', title = 'Edit b', kind = 'edit', status = 'completed', content = {
        { type = 'diff', path = dir .. '/b.txt', oldText = 'bee\n', newText = 'BEE\n' } } }),
    } } })
    H.turn(child, 'go')
    child:cmd('AcpReview')
    T.eq(review_files(child), { { 'a.txt', false, false }, { 'b.txt', false, false } })
    T.eq(child:lua('return #vim.api.nvim_list_tabpages()'), 2)
    capture_notes(child)
    child:feed('A')
    child:wait_for([[return #vim.api.nvim_list_tabpages() == 1]], 2000)
    T.eq(notes(child), { 'acp.nvim: all changes accepted (2 files)' })
    T.eq(child:lua([[return vim.tbl_map(function(w) return { vim.fn.fnamemodify(w.path, ':t'), w.accepted } end, require('acp').writes())]]),
      { { 'a.txt', true }, { 'b.txt', true } }, 'both files stay known as changed, and accepted')
    T.eq(T.read_file(dir .. '/a.txt'), 'A\n', 'accepting changes nothing on disk')
    child:lua([[require('acp.editor.review').last = nil]])
    capture_notes(child)
    child:cmd('AcpReview')
    T.eq(child:lua('return #vim.api.nvim_list_tabpages()'), 1, 'no review tab opened')
    T.eq(child:lua([[return require('acp.editor.review').last]]), nil)
    T.eq(notes(child), { 'acp.nvim: the agent changed 2 files; all accepted' })
  end },

  -- Only the agent's hunks ---------------------------------------------------------
  { "a line the user adds while the agent's fs write waits for permission is kept: review shows only the agent's hunks, R reverts only them", function()
    local dir = H.project({ ['p.txt'] = 'one\ntwo\nthree\nfour\nfive\n' })
    local file = dir .. '/p.txt'
    local child = start(dir, {
      { match = 'first', steps = { write(file, 'one\ntwo\nthree\nfour\nFIVE (agent)\n') } },
      -- The agent read the file before it asked.
      ask_then('go', file, {
        write(file, 'ONE (agent)\ntwo\nthree\nfour\nFIVE (agent)\n'),
      }, { H.req('fs/read_text_file', { path = file }) }),
    })
    child:cmd('edit ' .. file)
    H.turn(child, 'first')
    child:cmd('wincmd t')
    during_permission(child, 'go', function()
      child:lua([[vim.api.nvim_buf_set_lines(vim.fn.bufnr(...), 3, 3, false, { 'mine (user)' })]], { file })
      close_undo_block(child)
    end)
    local merged = { 'ONE (agent)', 'two', 'three', 'mine (user)', 'four', 'FIVE (agent)' }
    T.eq(lines(child, file), merged, 'the merge kept both')
    T.eq(child:lua([[return vim.bo[vim.fn.bufnr(...)].modified]], { file }), true)
    child:cmd('AcpReview')
    T.eq(review_files(child), { { 'p.txt', false, false } })
    T.eq(review_sides(child), {
      left = { 'one', 'two', 'three', 'mine (user)', 'four', 'five' },
      right = merged,
    }, "the user's line is on both sides: only the agent's hunk is a change")
    capture_notes(child)
    child:feed('R')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, 1, false)[1] == 'one']], 2000, { file })
    T.eq(lines(child, file), { 'one', 'two', 'three', 'mine (user)', 'four', 'five' }, "R took back the agent's hunks and kept the user's line")
    T.eq(child:lua([[return vim.bo[vim.fn.bufnr(...)].modified]], { file }), true, 'the buffer is still modified')
    T.match(table.concat(notes(child), '\n'), 'reverted p%.txt: 2 hunks ')
  end },

  { 'the same when the agent edits the disk itself after the permission (claude-agent-acp): the sync merges, review shows only the agent hunk, R keeps the user line', function()
    local dir = H.project({ ['q.txt'] = 'one\ntwo\nthree\nfour\nfive\n' })
    local file = dir .. '/q.txt'
    local child = start(dir, { ask_then('go', file, {
      H.req('terminal/create', { command = 'sed -i s/^one$/ONE-agent/ ' .. vim.fn.shellescape(file) }),
      H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
    }) }, { terminal = { confirm = 'never' } })
    child:cmd('edit ' .. file)
    during_permission(child, 'go', function()
      child:lua([[vim.api.nvim_buf_set_lines(vim.fn.bufnr(...), 3, 3, false, { 'mine (user)' })]], { file })
      close_undo_block(child)
    end)
    T.eq(T.read_file(file), 'ONE-agent\ntwo\nthree\nfour\nfive\n')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, 1, false)[1] == 'ONE-agent']], 3000, { file })
    T.eq(lines(child, file), { 'ONE-agent', 'two', 'three', 'mine (user)', 'four', 'five' }, 'the sync merged both')
    child:cmd('AcpReview')
    T.eq(review_sides(child), {
      left = { 'one', 'two', 'three', 'mine (user)', 'four', 'five' },
      right = { 'ONE-agent', 'two', 'three', 'mine (user)', 'four', 'five' },
    })
    child:feed('R')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, 1, false)[1] == 'one']], 2000, { file })
    T.eq(lines(child, file), { 'one', 'two', 'three', 'mine (user)', 'four', 'five' })
    T.eq(child:lua([[return vim.bo[vim.fn.bufnr(...)].modified]], { file }), true)
  end },

  { "R keeps a user edit made over one of the agent's hunks and says so; the other hunk is reverted", function()
    local dir = H.project({ ['u.txt'] = 'a\nb\nc\nd\ne\n' })
    local file = dir .. '/u.txt'
    local child = start(dir, { { match = 'go', steps = { write(file, 'a\nB\nc\nD\ne\n') } } })
    child:cmd('edit ' .. file)
    H.turn(child, 'go')
    T.eq(lines(child, file), { 'a', 'B', 'c', 'D', 'e' })
    -- The user rewrites the agent's B.
    child:lua([[vim.api.nvim_buf_set_lines(vim.fn.bufnr(...), 1, 2, false, { 'B (user)' })]], { file })
    capture_notes(child)
    child:cmd('AcpReview')
    T.eq(review_sides(child), {
      left = { 'a', 'B (user)', 'c', 'd', 'e' },
      right = { 'a', 'B (user)', 'c', 'D', 'e' },
    }, "the user's line is not the agent's change")
    child:feed('R')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 3, 4, false)[1] == 'd']], 2000, { file })
    T.eq(lines(child, file), { 'a', 'B (user)', 'c', 'd', 'e' })
    local said = table.concat(notes(child), '\n')
    T.match(said, "1 hunk of the agent's changes you edited since")
    T.match(said, 'reverted u%.txt: 1 hunk; 1 hunk you edited kept')
  end },

  { 'a file the agent created and the user then changed is not deleted by R', function()
    local dir = H.project()
    local file = dir .. '/new.txt'
    local child = start(dir, { { match = 'go', steps = { write(file, 'made\n') } } })
    H.turn(child, 'go')
    child:cmd('edit ' .. file)
    child:lua([[vim.api.nvim_buf_set_lines(0, 1, 1, false, { 'mine' })]])
    child:cmd('silent write')
    child:cmd('AcpReview')
    capture_notes(child)
    child:feed('R')
    child:wait_for([[return #_G.notes > 0]], 2000)
    T.match(table.concat(notes(child), '\n'), 'not deleting .*new%.txt: it changed since the agent created it')
    T.eq(T.read_file(file), 'made\nmine\n', 'the file is still there')
  end },

  { 'each of the agent own disk edits of a file no buffer holds is a step: R takes both back, also after an accept', function()
    local original = 'one\ntwo\nthree\nfour\n'
    local dir = H.project({ ['s.txt'] = original })
    local file = dir .. '/s.txt'
    local function edit(id, term, sed)
      return {
        tc({ toolCallId = id, title = 'Edit', kind = 'edit', status = 'pending', locations = { { path = file } } }),
        H.req('terminal/create', { command = 'sed -i ' .. sed .. ' ' .. vim.fn.shellescape(file) }),
        H.req('terminal/wait_for_exit', { terminalId = term }),
        { update = { sessionUpdate = 'tool_call_update', toolCallId = id, status = 'completed' } },
        { sleep_ms = 200 },
      }
    end
    local steps = vim.list_extend(edit('e1', 'term-1', 's/^one$/ONE/'), edit('e2', 'term-2', 's/^four$/FOUR/'))
    table.insert(steps, { message = 'done' })
    local child = start(dir, {
      { match = 'go', steps = steps },
      { match = 'more', steps = vim.list_extend(edit('e3', 'term-3', 's/^two$/TWO/'), { { message = 'done' } }) },
    }, { terminal = { confirm = 'never' } })
    H.turn(child, 'go')
    T.eq(T.read_file(file), 'ONE\ntwo\nthree\nFOUR\n')
    T.eq(child:lua([[return require('acp').writes()[1].changes]]), 2, 'two steps recorded')
    child:cmd('AcpReview')
    T.eq(review_sides(child), { left = { 'one', 'two', 'three', 'four' }, right = { 'ONE', 'two', 'three', 'FOUR' } })
    child:feed('A')
    child:wait_for([[return #vim.api.nvim_list_tabpages() == 1]], 2000)
    -- The review opened a buffer for the file: close it, so the next edit
    -- again reaches a file no buffer holds.
    child:lua([[vim.api.nvim_buf_delete(vim.fn.bufnr(...), { force = true })]], { file })
    H.turn(child, 'more')
    T.eq(T.read_file(file), 'ONE\nTWO\nthree\nFOUR\n')
    child:cmd('AcpReview')
    T.eq(review_sides(child), { left = { 'ONE', 'two', 'three', 'FOUR' }, right = { 'ONE', 'TWO', 'three', 'FOUR' } },
      'after the accept, only the later step is a change')
  end },

  -- Decisions last ------------------------------------------------------------------
  { 'k lasts: after closing and reopening the review the kept hunk is no longer a change', function()
    local dir = H.project({ ['k.txt'] = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n' })
    local file = dir .. '/k.txt'
    local child = start(dir, { { match = 'go', steps = {
      write(file, 'ONE\ntwo\nthree\nfour\nfive\nsix\nseven\nEIGHT\n'),
    } } })
    H.turn(child, 'go')
    child:cmd('AcpReview')
    capture_notes(child)
    child:feed('k')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_list_wins(0)[1]), 0, 1, false)[1] == 'ONE']], 2000)
    T.eq(notes(child), { 'acp.nvim: kept 1 hunk of k.txt' })
    child:feed('q')
    child:wait_for([[return #vim.api.nvim_list_tabpages() == 1]], 2000)
    child:cmd('AcpReview')
    T.eq(review_sides(child), {
      left = { 'ONE', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight' },
      right = { 'ONE', 'two', 'three', 'four', 'five', 'six', 'seven', 'EIGHT' },
    }, 'the reopened review shows the kept hunk as no change')
  end },
}
