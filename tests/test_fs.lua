-- fs/read_text_file and fs/write_text_file: served from live buffers,
-- undoable minimal edits, atomic disk writes, roots policy.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local read = function(path, extra)
  local p = { path = path }
  for k, v in pairs(extra or {}) do
    p[k] = v
  end
  return H.req('fs/read_text_file', p)
end
local write = function(path, content)
  return H.req('fs/write_text_file', { path = path, content = content })
end

local project = H.project

local function start(dir, turns, config)
  local child, paths = H.start({ cwd = dir, turns = turns, config = config })
  H.open(child)
  -- Files open in the first window (the chat's windows keep their buffers).
  child:cmd('wincmd t')
  return child, paths
end

return {
  { 'a read of a modified, unsaved buffer returns the unsaved text', function()
    local dir = project({ ['a.txt'] = 'on disk\n' })
    local child, paths = start(dir, { { match = 'go', steps = { read(dir .. '/a.txt') } } })
    child:cmd('edit ' .. dir .. '/a.txt')
    child:lua([[vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'unsaved', 'edits' })]])
    H.turn(child, 'go')
    T.eq(H.responses(paths)[1].result, { content = 'unsaved\nedits\n' })
    T.eq(T.read_file(dir .. '/a.txt'), 'on disk\n', 'the file on disk is untouched')
  end },

  { 'line/limit edges, empty file, no trailing newline, CRLF and multibyte', function()
    local dir = project({
      ['three.txt'] = 'l1\nl2\nl3',
      ['empty.txt'] = '',
      ['dos.txt'] = 'a\r\nb\r\n',
      ['utf8.txt'] = 'é\n漢字\n🎉\n',
    })
    local child, paths = start(dir, {
      { match = 'go', steps = {
        read(dir .. '/three.txt', { line = 2, limit = 1 }),
        read(dir .. '/three.txt', { line = 2 }),
        read(dir .. '/three.txt', { line = 9, limit = 2 }),
        read(dir .. '/three.txt', { limit = 0 }),
        read(dir .. '/empty.txt'),
        read(dir .. '/empty.txt', { line = 1, limit = 5 }),
        read(dir .. '/dos.txt'),
        read(dir .. '/utf8.txt', { line = 2, limit = 2 }),
        read(dir .. '/dos.txt', { line = 2 }),
      } },
    })
    -- dos.txt is also open in a buffer ('fileformat' dos): same answer.
    child:cmd('edit ' .. dir .. '/dos.txt')
    T.eq(child:lua('return vim.bo.fileformat'), 'dos')
    H.turn(child, 'go')
    local got = vim.tbl_map(function(r)
      return r.result and r.result.content or r.error
    end, H.responses(paths))
    T.eq(got, { 'l2\n', 'l2\nl3', '', '', '', '', 'a\r\nb\r\n', '漢字\n🎉\n', 'b\r\n' })
  end },

  { 'missing file, directory, binary, invalid UTF-8 and relative paths are errors', function()
    local dir = project()
    T.write_file(dir .. '/bin.dat', 'a\0b')
    T.write_file(dir .. '/latin1.txt', 'caf\233')
    local child, paths = start(dir, {
      { match = 'go', steps = {
        read(dir .. '/missing.txt'),
        read(dir),
        read(dir .. '/bin.dat'),
        read(dir .. '/latin1.txt'),
        read('relative.txt'),
      } },
    })
    H.turn(child, 'go')
    local r = H.responses(paths)
    T.eq(r[1].error.code, -32002)
    T.match(r[1].error.message, vim.pesc(dir .. '/missing.txt') .. ': no such file')
    T.match(r[2].error.message, 'is a directory')
    T.match(r[3].error.message, 'bin%.dat: binary file')
    T.match(r[4].error.message, 'latin1%.txt: not valid UTF%-8')
    T.match(r[5].error.message, 'must be absolute')
    for i = 1, 5 do
      T.eq(r[i].result, nil)
    end
  end },

  { 'a 10 MB loaded buffer is served in slices, unsaved edit included', function()
    local dir = project()
    local line = ('x'):rep(99)
    local lines = {}
    for i = 1, 100000 do
      lines[i] = line
    end
    T.write_file(dir .. '/big.txt', table.concat(lines, '\n') .. '\n')
    local edited = vim.deepcopy(lines)
    edited[50000] = 'EDITED'
    edited[70000] = 'AGENT'
    local child, paths = start(dir, {
      { match = 'go', steps = { read(dir .. '/big.txt', { line = 50000, limit = 2 }), read(dir .. '/big.txt') } },
      { match = 'write', steps = { write(dir .. '/big.txt', table.concat(edited, '\n') .. '\n') } },
    })
    child:cmd('edit ' .. dir .. '/big.txt')
    child:lua([[
      vim.api.nvim_buf_set_lines(0, 49999, 50000, false, { 'EDITED' })
      local core = require('acp.core')
      _G.parts = 0
      local orig = core.call_part
      core.call_part = function(...) _G.parts = _G.parts + 1; return orig(...) end
      -- Main-loop lateness while the agent reads: a 1 ms repeating timer.
      _G.worst = 0
      local last = vim.uv.hrtime()
      _G.timer = vim.uv.new_timer()
      _G.timer:start(1, 1, function()
        local now = vim.uv.hrtime(); _G.worst = math.max(_G.worst, (now - last) / 1e6); last = now
      end)
    ]])
    H.turn(child, 'go', 20000)
    local r = H.responses(paths)
    T.eq(r[1].result.content, 'EDITED\n' .. line .. '\n')
    local full = r[2].result.content
    T.eq(#full, 100000 * 100 - 100 + 7)
    T.truthy(child:lua('return _G.parts') > 20, 'handed over in many slices')
    local worst = child:lua('local w = _G.worst; _G.worst = 0; return w')
    -- The agent writes the whole 10 MB back with one more line changed:
    -- only that line is edited in the buffer.
    child:lua([[_G.edits = 0; vim.api.nvim_buf_attach(0, false, { on_lines = function() _G.edits = _G.edits + 1 end })]])
    H.turn(child, 'write', 20000)
    T.eq(H.responses(paths)[3].result, vim.empty_dict())
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(0, 69999, 70000, true)[1] ]]), 'AGENT')
    T.eq(child:lua('return _G.edits'), 1, 'one minimal edit')
    local worst_write = child:lua('_G.timer:stop(); return _G.worst')
    print(('    (10 MB buffer: longest main-loop gap %.1f ms while read, %.1f ms while written)'):format(worst, worst_write))
  end, timeout = 60000 },

  { 'a buffer edited between the slices of an agent read is read again, never taken from disk', function()
    local dir = project({ ['s.txt'] = 'one\ntwo\nthree\nfour\n' })
    local child, paths = start(dir, {
      { match = 'read', steps = { read(dir .. '/s.txt') } },
      { match = 'write', steps = { write(dir .. '/s.txt', 'one!\ntwo\nthree\nfour\nagent\n') } },
    })
    child:cmd('edit ' .. dir .. '/s.txt')
    -- One line per slice, one slice per tick; while `_G.edits` > 0 the user
    -- types into line 1 right after the slice of line 2 is handed over.
    child:lua([[
      local fs, core = require('acp.editor.fs'), require('acp.core')
      fs.slice_lines, fs.budget_ns = 1, 0
      _G.edits = 0
      local orig = core.call_part
      local b = vim.fn.bufnr(...)
      core.call_part = function(call, text)
        if _G.edits > 0 and text == 'two' then
          _G.edits = _G.edits - 1
          vim.schedule(function()
            vim.api.nvim_buf_set_lines(b, 0, 1, false, { vim.api.nvim_buf_get_lines(b, 0, 1, true)[1] .. '!' })
          end)
        end
        return orig(call, text)
      end
    ]], { dir .. '/s.txt' })
    -- A read that goes stale once is read again: the answer is the buffer
    -- with the user's edit.
    child:lua('_G.edits = 1')
    H.turn(child, 'read')
    T.eq(H.responses(paths)[1].result, { content = 'one!\ntwo\nthree\nfour\n' })
    T.eq(child:lua('return _G.edits'), 0, 'the edit happened during the read')
    -- A write whose reads keep going stale (more often than sliced reads are
    -- tried) lands in the buffer, merged, never on disk under it.
    child:lua('_G.edits = 8')
    H.turn(child, 'write')
    T.eq(H.responses(paths)[2].result, vim.empty_dict())
    T.eq(child:lua('return _G.edits'), 0, 'the edits happened during the write')
    local lines = child:lua([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)]], { dir .. '/s.txt' })
    T.eq(lines, { 'one!' .. ('!'):rep(8), 'two', 'three', 'four', 'agent' }, "the agent's line and the user's edits")
    T.eq(T.read_file(dir .. '/s.txt'), 'one\ntwo\nthree\nfour\n', 'the disk under the modified buffer is untouched')
    T.eq(child:lua('return vim.bo.modified'), true)
  end },

  { 'a write merges with the user edit made after the read; u undoes it in one step', function()
    local dir = project({ ['m.txt'] = 'one\ntwo\nthree\nfour\nfive\nsix\n' })
    local child, paths = start(dir, {
      { match = 'read', steps = { read(dir .. '/m.txt') } },
      { match = 'write', steps = { write(dir .. '/m.txt', 'one\nTWO\ninserted\nthree\nfour\nfive\nsix\n') } },
    })
    child:cmd('edit ' .. dir .. '/m.txt')
    H.turn(child, 'read')
    -- The user edits line 5 (unsaved) and sets a mark on "six".
    child:lua([[
      vim.api.nvim_buf_set_lines(0, 4, 5, false, { 'FIVE (user)' })
      vim.api.nvim_buf_set_mark(0, 'a', 6, 1, {})
      vim.wo.foldmethod = 'manual'
      vim.cmd('5,6fold')
      vim.api.nvim_win_set_cursor(0, { 6, 2 })
    ]])
    child:lua([[vim.cmd('let &undolevels = &undolevels')]]) -- close the user's undo block
    H.turn(child, 'write')
    T.eq(H.responses(paths)[2].result, vim.empty_dict())
    local buf = child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]])
    T.eq(buf, { 'one', 'TWO', 'inserted', 'three', 'four', 'FIVE (user)', 'six' })
    -- The mark and the cursor moved with their text.
    T.eq(child:lua([[return vim.api.nvim_buf_get_mark(0, 'a')]]), { 7, 1 })
    T.eq(child:lua([[return vim.api.nvim_win_get_cursor(0)]]), { 7, 2 })
    T.eq(child:lua([[return { vim.fn.foldclosed(6), vim.fn.foldclosedend(6) }]]), { 6, 7 }, 'the fold moved with its lines')
    -- Modified before the write: left unsaved, and the card says so.
    T.eq(child:lua('return vim.bo.modified'), true)
    T.eq(T.read_file(dir .. '/m.txt'), 'one\ntwo\nthree\nfour\nfive\nsix\n')
    local writes = child:lua([[return require('acp').writes()]])
    T.eq(#writes, 1)
    T.eq(writes[1].path, dir .. '/m.txt')
    T.eq(writes[1].saved, false)
    T.eq(writes[1].target, 'buffer')
    -- One `u` takes back exactly the agent's write.
    child:feed('<Esc>u')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]),
      { 'one', 'two', 'three', 'four', 'FIVE (user)', 'six' })
  end },

  { 'overlapping user and agent edits are refused, the buffer is untouched', function()
    local dir = project({ ['c.txt'] = 'a\nb\nc\n' })
    local child, paths = start(dir, {
      { match = 'read', steps = { read(dir .. '/c.txt') } },
      { match = 'write', steps = { write(dir .. '/c.txt', 'a\nAGENT\nc\n') } },
    })
    child:cmd('edit ' .. dir .. '/c.txt')
    H.turn(child, 'read')
    child:lua([[vim.api.nvim_buf_set_lines(0, 1, 2, false, { 'USER' })]])
    H.turn(child, 'write')
    local e = H.responses(paths)[2].error
    T.match(e.message, 'lines 2%-2 changed %(in the buffer or on disk%) since you read the file')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]), { 'a', 'USER', 'c' })
  end },

  { 'a write to an unmodified loaded buffer saves it; the tool card notes the write', function()
    local dir = project({ ['s.txt'] = 'old\n' })
    local child, paths = start(dir, {
      { match = 'go', steps = {
        { update = { sessionUpdate = 'tool_call', toolCallId = 'e1', title = 'Edit s.txt', kind = 'edit',
          status = 'in_progress', locations = { { path = dir .. '/s.txt' } } } },
        write(dir .. '/s.txt', 'new\n'),
      } },
    })
    child:cmd('edit ' .. dir .. '/s.txt')
    H.turn(child, 'go')
    T.eq(H.responses(paths)[1].result, vim.empty_dict())
    T.eq(child:lua('return vim.bo.modified'), false)
    T.eq(T.read_file(dir .. '/s.txt'), 'new\n')
    T.match(H.transcript_text(child), '✎ wrote `' .. vim.pesc(dir) .. '/s%.txt` %(buffer saved%)')
    T.eq(child:lua([[return require('acp').writes()[1].tool_call_id]]), 'e1')
  end },

  { 'writes to files not loaded are atomic, create directories, keep the mode', function()
    local dir = project({ ['run.sh'] = '#!/bin/sh\necho old\n' })
    vim.uv.fs_chmod(dir .. '/run.sh', tonumber('751', 8))
    local child, paths = start(dir, {
      { match = 'go', steps = {
        write(dir .. '/run.sh', '#!/bin/sh\necho new\n'),
        write(dir .. '/deep/new/dir/file.txt', 'created'),
      } },
    })
    H.turn(child, 'go')
    local r = H.responses(paths)
    T.eq(r[1].result, vim.empty_dict())
    T.eq(r[2].result, vim.empty_dict())
    T.eq(T.read_file(dir .. '/run.sh'), '#!/bin/sh\necho new\n')
    T.eq(vim.uv.fs_stat(dir .. '/run.sh').mode % 512, tonumber('751', 8))
    T.eq(T.read_file(dir .. '/deep/new/dir/file.txt'), 'created')
    T.eq(vim.fn.glob(dir .. '/.*.tmp', false, true), {}, 'no temporary file left')
    local writes = child:lua([[return require('acp').writes()]])
    T.eq(writes[1].original, '#!/bin/sh\necho old\n')
    T.eq(writes[2].original, nil)
  end },

  { 'reads and writes outside the roots are refused, symlink escapes included', function()
    local dir = project({ ['in.txt'] = 'inside\n' })
    local outside = vim.fn.resolve(T.tmpdir('outside'))
    T.write_file(outside .. '/secret.txt', 'secret\n')
    vim.uv.fs_symlink(outside, dir .. '/link')
    local child, paths = start(dir, {
      { match = 'go', steps = {
        read(outside .. '/secret.txt'),
        read(dir .. '/link/secret.txt'),
        write(dir .. '/link/planted.txt', 'x'),
        read(dir .. '/../' .. vim.fn.fnamemodify(outside, ':t') .. '/secret.txt'),
        read(dir .. '/in.txt'),
      } },
    })
    H.turn(child, 'go')
    local r = H.responses(paths)
    T.match(r[1].error.message, "outside the session's roots")
    T.match(r[2].error.message, "outside the session's roots %(through a symlink%)")
    T.match(r[3].error.message, "outside the session's roots")
    T.match(r[4].error.message, "outside the session's roots")
    T.eq(r[5].result.content, 'inside\n')
    T.eq(vim.uv.fs_stat(outside .. '/planted.txt'), nil)
  end },

  { 'the config can allow outside paths and add roots', function()
    local dir = project()
    local extra = vim.fn.resolve(T.tmpdir('extra'))
    T.write_file(extra .. '/e.txt', 'extra\n')
    local other = vim.fn.resolve(T.tmpdir('other'))
    T.write_file(other .. '/o.txt', 'other\n')
    local child, paths = start(dir, { { match = 'go', steps = { read(extra .. '/e.txt'), read(other .. '/o.txt') } } },
      { roots = { extra } })
    H.turn(child, 'go')
    local r = H.responses(paths)
    T.eq(r[1].result.content, 'extra\n')
    T.truthy(r[2].error)
    -- The extra roots confine fs/* here; the agent hears of them only when
    -- it advertises `sessionCapabilities.additionalDirectories`.
    T.eq(H.events_of(paths, 'session/new')[1].params.additionalDirectories, nil)
    local told, told_paths = H.start({ cwd = dir, turns = {}, config = { roots = { extra } },
      agent_info = { session_capabilities = { additionalDirectories = vim.empty_dict() } } })
    H.open(told)
    T.eq(H.events_of(told_paths, 'session/new')[1].params.additionalDirectories, { extra })
    -- allow_outside_roots opens everything.
    local child2, paths2 = start(dir, { { match = 'go', steps = { read(other .. '/o.txt') } } },
      { fs = { allow_outside_roots = true } })
    H.turn(child2, 'go')
    T.eq(H.responses(paths2)[1].result.content, 'other\n')
  end },

  { 'fs and terminal can be turned off: not advertised, answered -32601', function()
    local dir = project({ ['a.txt'] = 'a\n' })
    local child, paths = start(dir, { { match = 'go', steps = {
      read(dir .. '/a.txt'), write(dir .. '/a.txt', 'b\n'), H.req('terminal/create', { command = 'true' }) } } },
      { fs = { read = false, write = false }, terminal = { enabled = false } })
    H.turn(child, 'go')
    local caps = H.events_of(paths, 'initialize')[1].params.clientCapabilities
    T.eq(caps.fs, { readTextFile = false, writeTextFile = false })
    T.eq(caps.terminal, false)
    for _, r in ipairs(H.responses(paths)) do
      T.eq(r.error.code, -32601)
    end
    T.eq(T.read_file(dir .. '/a.txt'), 'a\n')
    -- Default config advertises all three, plus the display-terminal meta.
    local child2, paths2 = start(dir, { { match = 'go', steps = {} } })
    local caps2 = H.events_of(paths2, 'initialize')[1].params.clientCapabilities
    T.eq(caps2.fs, { readTextFile = true, writeTextFile = true })
    T.eq(caps2.terminal, true)
    T.eq(caps2._meta, { terminal_output = true })
  end },
}
