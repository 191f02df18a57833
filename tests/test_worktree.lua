-- A git worktree per chat: :AcpWorktree / :AcpChat {agent} worktree={name}
-- make a worktree on a new branch beside the repository (with the files
-- .worktreeinclude names copied in) and run a chat in a tab whose cwd it is;
-- closing the chat (:AcpClose, or its tab) keeps, merges or removes it.
-- Real git in temporary folders.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

--- Runs git in `dir`; its stdout (trimmed). Fails the test when git fails,
--- unless `may_fail`.
local function git(dir, args, may_fail)
  local cmd = { 'git', '-C', dir }
  vim.list_extend(cmd, args)
  local r = vim.system(cmd, { text = true }):wait()
  if r.code ~= 0 and not may_fail then
    error(('git %s: %s'):format(table.concat(args, ' '), r.stderr), 2)
  end
  return vim.trim(r.stdout or ''), r.code
end

--- A repository on branch `main` with `files` committed (and `extra`
--- written, not committed); its real path. It sits alone in its own
--- temporary folder, so its worktrees go to <tmp>/repo.worktrees.
local function repo(files, extra)
  local dir = vim.fn.resolve(T.tmpdir('wt')) .. '/repo'
  vim.fn.mkdir(dir, 'p')
  git(dir, { 'init', '-q', '-b', 'main' })
  git(dir, { 'config', 'user.name', 'Test' })
  git(dir, { 'config', 'user.email', 'test@example.invalid' })
  git(dir, { 'config', 'commit.gpgsign', 'false' })
  for name, content in pairs(files or { ['README'] = 'hello\n' }) do
    T.write_file(dir .. '/' .. name, content)
  end
  git(dir, { 'add', '-A' })
  git(dir, { 'commit', '-q', '-m', 'first' })
  for name, content in pairs(extra or {}) do
    T.write_file(dir .. '/' .. name, content)
  end
  return dir
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
}
