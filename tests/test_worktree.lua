-- A git worktree per chat: :AcpWorktree / :AcpChat {agent} worktree={name}
-- make a worktree on a new branch beside the repository (with the files
-- .worktreeinclude names copied in) and run a chat in a tab whose cwd it is;
-- closing the chat (:AcpClose, or its tab) keeps, merges or removes it.
-- Real git in temporary folders.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local G = require('tests.helpers.git')
local git = G.git

--- A repository on branch `main` with `files` committed (and `extra` written, not
--- committed); its worktrees go to <tmp>/repo.worktrees.
local function repo(files, extra)
  return G.repo('wt', files, extra)
end

local function exists(path)
  return vim.uv.fs_lstat(path) ~= nil
end

local function branches(dir)
  return vim.split(git(dir, { 'branch', '--format=%(refname:short)' }), '\n', { plain = true })
end

--- Runs the module's `fn(args..., cb)` in the child; what cb got.
local function call(child, fn, ...)
  child:lua(
    [[
    local fn, args = ...
    _G.got = nil
    table.insert(args, function(...) _G.got = { ... } end)
    require('acp.editor.worktree')[fn](unpack(args))
  ]],
    { fn, { ... } }
  )
  child:wait_for([[return _G.got ~= nil]], 10000)
  local got = child:lua([[return _G.got]])
  for i = 1, 3 do
    if got[i] == vim.NIL then
      got[i] = nil
    end
  end
  return got
end

--- A child in `dir` whose agent writes `content` to `<worktree>/<file>`
--- (and, with `outside`, to that path too) on the prompt `write`.
local function start_writing(dir, name, file, outside)
  local wt = vim.fs.dirname(dir) .. '/repo.worktrees/' .. name
  local steps = { H.req('fs/write_text_file', { path = wt .. '/' .. file, content = 'by the agent\n' }) }
  if outside then
    steps[#steps + 1] = H.req('fs/write_text_file', { path = outside, content = 'leaked\n' })
  end
  local child, paths = H.start({ cwd = dir, turns = { { match = 'write', steps = steps } } })
  child:lua(H.STUB_SELECT .. [[ _G.notes = {}
    local notify = vim.notify
    vim.notify = function(msg, level) table.insert(_G.notes, msg); return notify(msg, level) end ]])
  return child, paths, wt
end

--- Runs `:AcpWorktree name` and waits for the chat in its tab to be ready.
local function open_worktree(child, name)
  child:cmd('AcpWorktree ' .. name)
  child:wait_for([[local v = require('acp').current(); return v and v.worktree ~= nil and v.state == 'idle']], 10000)
end

--- Picks `choice` (a text of the item) in the next pickers, closes the
--- chat with :AcpClose, and waits for the note that starts with `note`.
local function close_with(child, picks, note)
  child:lua([[_G.pick = ...; _G.notes = {}; _G.asked = {}]], { picks })
  child:cmd('AcpClose')
  child:wait_for([[for _, m in ipairs(_G.notes) do if m:find(..., 1, true) then return true end end]], 10000, { note })
end

local function notes(child)
  return table.concat(child:lua([[return _G.notes]]), '\n')
end

return {
  { 'worktree.create: a new branch acp/<name> in <repo>/../repo.worktrees/<name> from HEAD, with the .worktreeinclude files copied (never a symlink out)', function()
    local outside = vim.fn.resolve(T.tmpdir('outside')) .. '/secret'
    T.write_file(outside, 'secret\n')
    local dir = repo({ ['README'] = 'hello\n', ['.gitignore'] = '.env\nconfig/local.json\nlink.env\n', ['.worktreeinclude'] = '.env\nconfig/local.json\nlink.env\n' }, {
      ['.env'] = 'TOKEN=1\n',
      ['config/local.json'] = '{}\n',
      ['other.env'] = 'not listed\n',
    })
    vim.uv.fs_symlink(outside, dir .. '/link.env')
    local child = H.start({ cwd = dir })
    local got = call(child, 'create', 'fix-login', vim.empty_dict())
    local wt, err = got[1], got[2]
    T.eq(err, nil)
    local path = vim.fs.dirname(dir) .. '/repo.worktrees/fix-login'
    T.eq(wt.path, path)
    T.eq(wt.branch, 'acp/fix-login')
    T.eq(wt.base_branch, 'main')
    T.eq(wt.repo, dir)
    T.eq(wt.base_commit, git(dir, { 'rev-parse', 'HEAD' }))
    T.eq(git(path, { 'symbolic-ref', '--short', 'HEAD' }), 'acp/fix-login')
    T.eq(T.read_file(path .. '/.env'), 'TOKEN=1\n')
    T.eq(T.read_file(path .. '/config/local.json'), '{}\n')
    T.falsy(exists(path .. '/other.env'), 'a file .worktreeinclude does not name is not copied')
    T.falsy(exists(path .. '/link.env'), 'a symlink is not copied')
    T.eq(wt.included, { '.env', 'config/local.json' })
    -- Nothing changed yet: the copied files are no change of the chat.
    T.eq(call(child, 'changed_files', wt), { {} })
  end },

  { 'worktree.create: a bad name, a folder outside any repository, an existing branch are clear errors', function()
    local dir = repo()
    -- The temporary folders are inside this plugin's own repository: git
    -- looks no further up than their root.
    local child = H.start({ cwd = dir, env = { GIT_CEILING_DIRECTORIES = T.tmp_root() } })
    for _, case in ipairs({
      { 'has space', 'space' },
      { '-rf', 'starts with %-' },
      { 'a..b', 'has %.%.' },
      { 'a/b', 'has a /' },
      { 'x.lock', 'no branch name' },
      { '', 'needs a name' },
    }) do
      local got = call(child, 'create', case[1], vim.empty_dict())
      T.eq(got[1], nil)
      T.match(got[2], case[2])
    end
    local plain = vim.fn.resolve(T.tmpdir('norepo'))
    local got = call(child, 'create', 'x', { cwd = plain })
    T.match(got[2], 'needs a git repository, and .* is in none')
    git(dir, { 'branch', 'acp/taken' })
    got = call(child, 'create', 'taken', vim.empty_dict())
    T.match(got[2], 'git worktree add: .*already exists')
    T.falsy(exists(vim.fs.dirname(dir) .. '/repo.worktrees/taken'))
  end },

  { ':AcpWorktree: the chat runs in a new tab whose cwd is the worktree; its agent writes a file that appears only there (a write into the repository is refused)', function()
    local dir = repo()
    local child, paths, wt = start_writing(dir, 'feat', 'new.txt', dir .. '/leak.txt')
    local tabs = child:lua([[return #vim.api.nvim_list_tabpages()]])
    open_worktree(child, 'feat')
    T.eq(child:lua([[return #vim.api.nvim_list_tabpages()]]), tabs + 1)
    T.eq(child:lua([[return vim.fn.getcwd(-1, 0)]]), wt, "the tab's directory is the worktree")
    T.eq(child:lua([[return vim.fn.getcwd(-1, 1)]]), dir, 'the first tab stays in the repository')
    T.eq(H.events_of(paths, 'session/new')[1].params.cwd, wt, "the session's cwd is the worktree")
    local view = child:lua([[local v = require('acp').current(); return { root = v.root, wt = v.worktree }]])
    T.eq(view.root, wt)
    T.eq(view.wt.branch, 'acp/feat')
    T.eq(view.wt.base_branch, 'main')
    H.turn(child, 'write')
    T.eq(T.read_file(wt .. '/new.txt'), 'by the agent\n')
    T.falsy(exists(dir .. '/new.txt'), 'not in the repository')
    T.falsy(exists(dir .. '/leak.txt'), 'a write outside the worktree is refused')
    local answers = H.responses(paths)
    T.eq(answers[1].error, nil)
    T.truthy(answers[2].error, 'the write outside the worktree got an error')
    T.eq(call(child, 'changed_files', view.wt), { { { path = 'new.txt', status = '?' } } })
    -- :AcpChat {agent} worktree={name} does the same.
    child:cmd('tabfirst')
    child:cmd('AcpChat test worktree=second')
    child:wait_for([[local v = require('acp').current(); return v and v.worktree ~= nil and v.worktree.name == 'second' and v.state == 'idle']], 10000)
    T.eq(child:lua([[return vim.fn.getcwd(-1, 0)]]), vim.fs.dirname(dir) .. '/repo.worktrees/second')
  end },

  { ':AcpClose in a worktree chat: keep leaves worktree and branch; the chat, its tab and its thread are gone', function()
    local dir = repo()
    local child, _, wt = start_writing(dir, 'k', 'new.txt')
    open_worktree(child, 'k')
    H.turn(child, 'write')
    local thread = child:lua([[return require('acp').current().thread]])
    close_with(child, { 'Keep the worktree' }, 'kept the worktree')
    T.match(child:lua([[return _G.asked[1].prompt]]), 'Close the chat with test in worktree k')
    T.eq(#child:lua([[return _G.asked[1].items]]), 3)
    T.eq(child:lua([[return #vim.api.nvim_list_tabpages()]]), 1, 'its tab closed')
    T.eq(child:lua([[return require('acp.chat').by_thread[...] == nil]], { thread }), true)
    T.eq(child:lua([[return #require('acp').chats()]]), 0)
    T.eq(T.read_file(wt .. '/new.txt'), 'by the agent\n')
    T.contains(branches(dir), 'acp/k')
  end },

  { ":AcpClose, merge: the worktree's changes are committed on its branch and merged with --no-ff into main", function()
    local dir = repo()
    local child, _, wt = start_writing(dir, 'm', 'new.txt')
    open_worktree(child, 'm')
    H.turn(child, 'write')
    close_with(child, { 'Merge acp/m into main' }, 'merged acp/m into main')
    T.eq(T.read_file(dir .. '/new.txt'), 'by the agent\n', 'the file is in the repository now')
    T.eq(git(dir, { 'log', '-1', '--format=%s' }), 'Merge branch acp/m')
    T.eq(#vim.split(git(dir, { 'log', '-1', '--format=%P' }), ' '), 2, 'a merge commit (two parents)')
    T.eq(git(dir, { 'status', '--porcelain' }), '')
    T.truthy(exists(wt), 'the worktree stays')
  end },

  { ':AcpClose, remove: refused while work is not merged until "remove anyway"; then worktree and branch are gone', function()
    local dir = repo()
    local child, _, wt = start_writing(dir, 'r', 'new.txt')
    open_worktree(child, 'r')
    H.turn(child, 'write')
    close_with(child, { 'Remove the worktree', 'Keep the worktree' }, 'kept the worktree')
    T.match(child:lua([[return _G.asked[2].prompt]]), 'branch acp/r has 1 file changed and not committed')
    T.truthy(exists(wt .. '/new.txt'))
    T.contains(branches(dir), 'acp/r')
    -- Again, from a worktree nothing was done in: removed without a question.
    local clean = vim.fs.dirname(dir) .. '/repo.worktrees/clean'
    child:cmd('tabfirst')
    open_worktree(child, 'clean')
    close_with(child, { 'Remove the worktree' }, 'removed the worktree')
    T.eq(#child:lua([[return _G.asked]]), 1)
    T.falsy(exists(clean))
    T.falsy(vim.tbl_contains(branches(dir), 'acp/clean'))
    T.falsy(git(dir, { 'worktree', 'list' }):find('clean', 1, true))
    -- The kept one, through the API, with "remove anyway".
    child:lua([[_G.pick = { 'Remove anyway' }; _G.notes = {}
      require('acp.chat.worktree').finish(..., 'remove')]], { {
        name = 'r', branch = 'acp/r', path = wt, repo = dir, base_branch = 'main', base_commit = git(dir, { 'rev-parse', 'HEAD' }), included = {} } })
    child:wait_for([[for _, m in ipairs(_G.notes) do if m:find('removed the worktree', 1, true) then return true end end]], 10000)
    T.falsy(exists(wt))
    T.falsy(vim.tbl_contains(branches(dir), 'acp/r'))
  end },

  { "closing a worktree chat's tab asks too; a dirty repository is not merged, a conflict is left to the user (quickfix)", function()
    local dir = repo({ ['a.txt'] = 'one\n' })
    local child, _, wt = start_writing(dir, 'c', 'a.txt')
    open_worktree(child, 'c')
    H.turn(child, 'write')
    -- The repository has a change not committed: said, not merged.
    T.write_file(dir .. '/a.txt', 'mine\n')
    child:lua([[_G.pick = { 'Merge acp/c' }; _G.notes = {}]])
    child:cmd('tabclose')
    child:wait_for([[for _, m in ipairs(_G.notes) do if m:find('not merged', 1, true) then return true end end]], 10000)
    T.match(notes(child), 'not merged: .*has 1 file changed and not committed: commit or stash them')
    T.match(child:lua([[return _G.asked[1].prompt]]), 'The chat in worktree c closed')
    T.eq(child:lua([[return #require('acp').chats()]]), 0)
    T.eq(git(dir, { 'log', '-1', '--format=%s' }), 'first')
    -- Committed on main: both sides changed a.txt.
    git(dir, { 'commit', '-qam', 'mine' })
    child:lua([[_G.pick = {}; _G.notes = {}
      require('acp.chat.worktree').finish(..., 'merge')]], { {
        name = 'c', branch = 'acp/c', path = wt, repo = dir, base_branch = 'main', included = {} } })
    child:wait_for([[for _, m in ipairs(_G.notes) do if m:find('conflicts', 1, true) then return true end end]], 10000)
    T.match(notes(child), 'merging acp/c into main stopped at conflicts in 1 file %(quickfix list%)')
    local qf = child:lua([[local l = vim.fn.getqflist({ items = 1, title = 1 })
      return { title = l.title, file = vim.api.nvim_buf_get_name(l.items[1].bufnr) }]])
    T.eq(qf.file, dir .. '/a.txt')
    T.match(qf.title, 'merge conflicts of acp/c')
    T.truthy(exists(dir .. '/.git/MERGE_HEAD'), 'the merge is left in progress for the user')
  end },

  { ':AcpClose in a plain chat ends it without a question (windows, buffers, thread gone; the core forgets the thread); with no chat it says so', function()
    local dir = repo()
    local child = H.start({ cwd = dir })
    child:lua(H.STUB_SELECT .. [[ _G.notes = {}
      vim.notify = function(msg) table.insert(_G.notes, msg) end ]])
    child:cmd('AcpClose')
    T.match(notes(child), 'no chat in this tab to close')
    H.open(child)
    local v = child:lua([[local v = require('acp').current(); return { thread = v.thread, buf = v.buf, input = v.input }]])
    child:cmd('AcpClose')
    T.eq(#child:lua([[return _G.asked]]), 0)
    T.eq(child:lua([[return require('acp').current() == nil]]), true)
    T.eq(child:lua([[return #require('acp').chats()]]), 0)
    T.eq(child:lua([[return vim.api.nvim_buf_is_valid(...)]], { v.buf }), false)
    T.eq(child:lua([[return #vim.api.nvim_tabpage_list_wins(0)]]), 1)
    T.falsy(child:lua([[return pcall(require('acp.core').thread_info, ...)]], { v.thread }), 'the core has closed the thread')
    -- A new chat opens as usual afterwards.
    H.open(child)
  end },

  { ":AcpClose ends the agent's process with the last chat using it; one still used by another chat runs on", function()
    local dir = repo()
    local child = H.start({ cwd = dir })
    local function alive(pid)
      return vim.uv.kill(pid, 0) == 0
    end
    H.open(child)
    local pid = child:lua([[return require('acp.core').thread_info(require('acp').current().thread).pid]])
    T.truthy(pid and alive(pid), 'the agent runs')
    -- A second chat of the same agent in the same folder (its own tab) shares the process.
    child:cmd('tabnew')
    H.open(child)
    T.eq(child:lua([[return require('acp.core').thread_info(require('acp').current().thread).pid]]), pid, 'one process for both')
    child:cmd('AcpClose')
    child:lua('return 1')
    vim.wait(300)
    T.truthy(alive(pid), 'still used by the first chat')
    child:cmd('tabfirst')
    child:cmd('AcpClose')
    T.truthy(vim.wait(5000, function() return not alive(pid) end, 20), 'the agent process ended with its last chat')
    -- The next chat starts a new one.
    H.open(child)
    local again = child:lua([[return require('acp.core').thread_info(require('acp').current().thread).pid]])
    T.truthy(again ~= pid and alive(again), 'a new agent process')
  end },
}
