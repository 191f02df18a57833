-- Paths an agent names are data: a `term://cmd` location or diff path never
-- runs its command, a FIFO never freezes the editor (opening one waits for
-- a writer), a path outside the roots is not opened, from follow mode,
-- :AcpLocations (and :cc in its list), :AcpReview and a card's <CR>; a
-- mentioned FIFO is refused unopened and the `@` walk lists regular files
-- only; an install entry's paths stay inside its folder.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Child = require('tests.helpers.child')

local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end
]]

local function tc(fields)
  fields.sessionUpdate = 'tool_call'
  return { update = fields }
end

--- A project with a FIFO `pipe`, a marker path only `touch` would create,
--- and a regular file outside the project.
local function hostile_project(files)
  local dir = H.project(files)
  local fifo = dir .. '/pipe'
  T.eq(vim.fn.system({ 'mkfifo', fifo }), '')
  local elsewhere = T.tmpdir('elsewhere')
  local marker = elsewhere .. '/pwned'
  local outside = T.write_file(elsewhere .. '/outside.txt', 'outside\n')
  return dir, fifo, marker, outside
end

--- Neovim answers within 2 s (a child blocked in openat() on a FIFO does
--- not: the watchdog kills it and the call raises).
local function responsive(child)
  child.rpc_timeout = 2000
  T.eq(child:lua('return 1'), 1, 'Neovim answers')
end

local function notes(child)
  return table.concat(child:lua([[return vim.tbl_map(function(n) return n.msg end, _G.notes)]]), '\n')
end

return {
  { 'follow = true: a term:// location, a FIFO and a file outside the roots are not opened; the chat says so', function()
    local dir, fifo, marker, outside = hostile_project({ ['g.txt'] = 'g\n' })
    local child = H.start({ cwd = dir, config = { follow = true, follow_debounce_ms = 20 }, turns = { { match = 'go', steps = {
      tc({ toolCallId = 't', title = 'Read', kind = 'read', status = 'in_progress', locations = { { path = 'term://touch ' .. marker, line = 1 } } }),
      { sleep_ms = 250 },
      tc({ toolCallId = 'f', title = 'Read', kind = 'read', status = 'in_progress', locations = { { path = fifo, line = 1 } } }),
      { sleep_ms = 250 },
      tc({ toolCallId = 'o', title = 'Read', kind = 'read', status = 'in_progress', locations = { { path = outside, line = 1 } } }),
      { sleep_ms = 250 },
      { message = 'done' },
    } } } })
    child:lua(RECORD_NOTIFY)
    child:cmd('edit ' .. dir .. '/g.txt')
    H.open(child)
    child.rpc_timeout = 2000
    H.turn(child, 'go')
    vim.wait(300)
    responsive(child)
    T.eq(vim.uv.fs_stat(marker), nil, 'the term:// command never ran')
    -- In the chat, not as messages (a long one would wait for Enter).
    local text = H.transcript_text(child)
    T.match(text, 'follow mode: not opening term://touch .*: a URL%-like name')
    T.match(text, 'follow mode: not opening ' .. vim.pesc(fifo) .. ': a named pipe %(FIFO%), not a regular file')
    T.match(text, 'follow mode: not opening ' .. vim.pesc(outside) .. ": outside the session's roots")
    T.no_match(notes(child), 'not opening')
    T.eq(child:lua([[return vim.fn.fnamemodify(vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(vim.fn.win_getid(1))), ':t')]]),
      'g.txt', 'the file window still shows the file')
  end },

  { 'follow = true still opens a regular file inside the roots, and one the agent is about to create once it exists', function()
    local dir = H.project({ ['f.txt'] = 'a\nb\nc\n', ['g.txt'] = 'g\n' })
    local child = H.start({ cwd = dir, config = { follow = true, follow_debounce_ms = 20 }, turns = { { match = 'go', steps = {
      tc({ toolCallId = 'r', title = 'Read', kind = 'read', status = 'in_progress', locations = { { path = dir .. '/f.txt', line = 2 } } }),
      { sleep_ms = 250 },
    } }, { match = 'new', steps = {
      tc({ toolCallId = 'n', title = 'Create', kind = 'edit', status = 'in_progress', locations = { { path = dir .. '/sub/../new.txt' } } }),
      { sleep_ms = 1500 },
    } } } })
    child:cmd('edit ' .. dir .. '/g.txt')
    H.open(child)
    H.turn(child, 'go')
    child:wait_for([[return require('acp.chat.follow').last ~= nil]], 3000)
    local function shown()
      return child:lua([[
        local f = require('acp.chat.follow').last
        return { vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(f.win)), vim.api.nvim_win_get_cursor(f.win)[1] }
      ]])
    end
    T.eq(shown(), { dir .. '/f.txt', 2 })
    child:lua([[assert(require('acp').send('new'))]])
    -- Not loaded before it exists (Neovim would ask W13 once it is created).
    child:wait_for([[return require('acp.chat.follow').waiting ~= nil]], 3000)
    T.eq(child:lua([[return require('acp.chat.follow').waiting.path]]), dir .. '/new.txt')
    T.eq(shown(), { dir .. '/f.txt', 2 })
    T.write_file(dir .. '/new.txt', 'new\n')
    child:wait_for([[return require('acp.chat.follow').last.path:find('new.txt') ~= nil]], 3000)
    T.eq(shown(), { dir .. '/new.txt', 1 })
  end },

  { ':AcpLocations: term:// and FIFO locations are text without a file; :cc on every entry runs nothing, never blocks', function()
    local dir, fifo, marker = hostile_project({ ['a.txt'] = 'a\n' })
    local child = H.start({ cwd = dir, turns = { { match = 'go', steps = {
      tc({ toolCallId = 't', title = 'Read', kind = 'read', status = 'completed', locations = { { path = 'term://touch ' .. marker, line = 1 } } }),
      tc({ toolCallId = 'f', title = 'Read', kind = 'read', status = 'completed', locations = { { path = fifo, line = 1 } } }),
      tc({ toolCallId = 'a', title = 'Read a', kind = 'read', status = 'completed', locations = { { path = dir .. '/a.txt', line = 1 } } }),
    } } } })
    child:lua(RECORD_NOTIFY)
    H.open(child)
    child.rpc_timeout = 2000
    H.turn(child, 'go')
    child:wait_for([[return require('acp').current().qf_id ~= nil and not require('acp').current().qf_dirty]], 3000)
    child:cmd('AcpLocations')
    local items = child:lua([[
      local out = {}
      for _, it in ipairs(vim.fn.getqflist()) do
        out[#out + 1] = { it.bufnr ~= 0 and vim.api.nvim_buf_get_name(it.bufnr) or '', it.text }
      end
      return out
    ]])
    T.eq(#items, 3)
    T.eq(items[1][1], '', 'no buffer for the term:// location')
    T.match(items[1][2], 'term://touch')
    T.eq(items[2][1], '', 'no buffer for the FIFO')
    T.match(items[2][2], 'named pipe')
    T.eq(items[3][1], dir .. '/a.txt')
    T.match(notes(child), '2 locations in this list are not opened')
    for i = 1, 3 do
      child:lua(('pcall(vim.cmd, "cc %d")'):format(i))
      responsive(child)
    end
    vim.wait(300)
    responsive(child)
    T.eq(vim.uv.fs_stat(marker), nil, 'the term:// command never ran')
    T.eq(child:lua([[return vim.api.nvim_buf_get_name(0)]]), dir .. '/a.txt', ':cc 3 opened the regular file')
  end },

  { ':AcpReview of term://, FIFO and outside diff paths opens none of them; <CR> on such a card runs nothing', function()
    local dir, fifo, marker, outside = hostile_project({ ['a.txt'] = 'a\n' })
    local function diff(id, path)
      return tc({ toolCallId = id, title = 'Edit', kind = 'edit', status = 'completed',
        content = { { type = 'diff', path = path, oldText = 'x\n', newText = 'y\n' } } })
    end
    local child = H.start({ cwd = dir, turns = { { match = 'go', steps = {
      diff('t', 'term://touch ' .. marker),
      diff('f', fifo),
      diff('o', outside),
      H.req('fs/write_text_file', { path = dir .. '/a.txt', content = 'A\n' }),
    } } } })
    child:lua(RECORD_NOTIFY)
    H.open(child)
    child.rpc_timeout = 2000
    H.turn(child, 'go')
    child:cmd('AcpReview')
    responsive(child)
    local n = child:lua([[return #require('acp.editor.review').last.files]])
    T.eq(n, 4)
    for i = 1, n do
      child:lua([[local r = require('acp.editor.review'); r.show_file(r.last, ...)]], { i })
      responsive(child)
    end
    -- The file this client wrote (listed first) still opens as itself.
    child:lua([[local r = require('acp.editor.review'); r.show_file(r.last, 1)]])
    T.eq(child:lua([[return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_list_wins(0)[2]))]]),
      dir .. '/a.txt')
    -- <CR> on the term:// card (and `d` in a float) shows the proposed text only.
    T.eq(child:lua([[
      local core, thread = require('acp.core'), require('acp.editor.review').last.thread
      for i = 0, 20 do
        local e = core.entry(thread, i)
        if e and e.entry == 'tool_call' and e.id == 't' then
          require('acp.editor.review').open_entry(e)
          return true
        end
      end
    ]]), true)
    vim.wait(300)
    responsive(child)
    T.eq(vim.uv.fs_stat(marker), nil, 'the term:// command never ran')
    local text = notes(child)
    T.match(text, 'not opening term://touch .*: a URL%-like name')
    T.match(text, 'not opening ' .. vim.pesc(fifo) .. ': a named pipe')
    T.match(text, 'not opening ' .. vim.pesc(outside) .. ": outside the session's roots")
  end },

  { 'a mentioned @fifo is refused unopened (Neovim answers); the other mention goes; the walk lists neither FIFO nor outside links', function()
    local dir = H.project({ ['ok.txt'] = 'ok\n' })
    T.eq(vim.fn.system({ 'mkfifo', dir .. '/pipe' }), '')
    local elsewhere = T.tmpdir('elsewhere')
    T.write_file(elsewhere .. '/secret.txt', 'secret\n')
    vim.uv.fs_symlink(elsewhere .. '/secret.txt', dir .. '/leak.txt')
    vim.uv.fs_symlink(dir .. '/ok.txt', dir .. '/alias.txt')
    local child, paths = H.start({ scenario = 'context', cwd = dir, config = { chat = { start_insert = false } } })
    child:lua(RECORD_NOTIFY)
    H.open(child)
    child.rpc_timeout = 2000
    H.turn(child, 'see @pipe and @ok.txt')
    responsive(child)
    local prompts = H.events_of(paths, 'prompt')
    T.eq(prompts[#prompts].prompt, {
      { type = 'text', text = 'see @pipe and @ok.txt' },
      { type = 'resource', resource = { uri = vim.uri_from_fname(dir .. '/ok.txt'), text = 'ok\n', mimeType = 'text/plain' } },
    })
    T.match(notes(child), 'pipe: a named pipe %(FIFO%), not a regular file')
    local listed = child:lua([[
      local dir = ...
      local core = require('acp.core')
      _G.listed = nil
      local id = require('acp.core.dispatch').request(function(ev) _G.listed = ev end)
      core.list_files(dir, 100, id)
      vim.wait(3000, function() return _G.listed ~= nil end)
      return core.match_files(dir, '', 10)
    ]], { dir })
    T.eq(listed, { 'alias.txt', 'ok.txt' })
  end },

  { ':AcpInstall refuses an entry whose cmd or archive name leaves its folder; nothing outside is replaced or chmodded', function()
    local work = T.tmpdir('install')
    local victim = T.write_file(work .. '/victim', 'keep\n')
    vim.uv.fs_chmod(victim, tonumber('600', 8))
    T.write_file(work .. '/payload', '#!/bin/sh\necho replaced\n')
    -- An archive whose cmd is a symlink out of the folder.
    vim.fn.mkdir(work .. '/pkg/bin', 'p')
    vim.uv.fs_symlink(victim, work .. '/pkg/bin/agent')
    T.eq(vim.system({ 'tar', '-czf', work .. '/link.tar.gz', '-C', work .. '/pkg', 'bin' }):wait().code, 0)
    local child = Child.new()
    child:lua(RECORD_NOTIFY)
    local platform = child:lua([[return require('acp.agents.install').platform()]])
    local function entry(id, cmd, archive)
      return { id = id, name = id, version = '1.0.0', description = 'x',
        distribution = { binary = { [platform] = { archive = archive or ('file://' .. work .. '/payload'), cmd = cmd } } } }
    end
    local registry = T.write_file(work .. '/registry.json', vim.json.encode({ agents = {
      entry('up', '../../victim'),
      entry('abs', victim),
      entry('link', 'bin/agent', 'file://' .. work .. '/link.tar.gz'),
      entry('../escape', 'agent'),
      entry('ok', 'bin/agent'),
    } }))
    local before = vim.fn.readdir(work)
    child:lua([[require('acp').setup({ install = { registry = ..., dir = select(2, ...) } })]], { registry, work .. '/agents' })
    local function install(id)
      return child:lua([[local job = require('acp.agents.install').install(...); if not job then return { none = true } end
        job:wait(10000); return { ok = job.ok, msg = job.message }]], { id })
    end
    for _, id in ipairs({ 'up', 'abs' }) do
      local r = install(id)
      T.eq(r.ok, false, id)
      T.match(r.msg, "the entry's cmd %(.*%) leaves the install folder", id)
    end
    local r = install('link')
    T.eq(r.ok, false)
    T.match(r.msg, "the entry's cmd %(bin/agent%) is not a file inside the install folder")
    T.eq(install('../escape'), { none = true })
    T.match(notes(child), 'registry id "%.%./escape" cannot name an install folder')
    T.eq(vim.fn.readdir(work), vim.list_extend({ 'agents' }, before), 'nothing made beside the install folder')
    T.eq(T.read_file(victim), 'keep\n', 'the file outside is not replaced')
    T.eq(vim.uv.fs_stat(victim).mode % 512, tonumber('600', 8), 'nor chmodded')
    local ok = child:lua([[local job = require('acp.agents.install').install('ok'); job:wait(10000); return { ok = job.ok, msg = job.message }]])
    T.eq(ok.ok, true, ok.msg)
    T.eq(child:lua([[return require('acp.agents.install').installed('ok').cmd]]), work .. '/agents/ok/bin/agent')
  end },
}
