--- A git worktree per chat (`:AcpWorktree`, `:h acp-worktree`): creating
--- one on a new branch beside the repository (with the files its
--- `.worktreeinclude` names copied in), listing what changed in it since
--- it was made, merging its branch into the base branch and removing it.
--- Every function runs git with `vim.system` and answers its callback on
--- the main loop: nothing here waits for git. Knows nothing of chats.
---
--- A worktree (`acp.Worktree`) is `{ name, branch, path, base_branch,
--- base_commit, repo, included }`: `repo` is the top folder of the
--- repository it came from (where merges happen), `base_branch` the branch
--- checked out there when it was made (nil on a detached HEAD),
--- `base_commit` the commit it started from, `included` the files copied
--- from `.worktreeinclude` (paths relative to the worktree).

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

local M = {}

local function options()
  return require('acp.config').options.worktree
end

--- Runs `git -C dir args...`; `cb(result)` on the main loop with
--- `{ code, stdout, stderr }` (code -1 when git could not start).
local function git(dir, args, cb)
  local cmd = { 'git', '-C', dir }
  vim.list_extend(cmd, args)
  require('acp.util.job').run(cmd, {
    env = { GIT_TERMINAL_PROMPT = '0', GIT_MERGE_AUTOEDIT = 'no', GIT_EDITOR = 'true', NVIM = '' },
  }, cb)
end
M._git = git

--- git's own words for a failure, on one line.
local function said(r)
  local text = vim.trim(r.stderr ~= '' and r.stderr or r.stdout)
  text = text:gsub('^fatal:%s*', ''):gsub('^error:%s*', ''):gsub('%s*\n%s*', '; ')
  return text ~= '' and text or ('git exited with ' .. tostring(r.code))
end

--- Runs the steps in order: each is `function(next, fail)`; `done(err)`
--- once, with the first failure's message or nil.
local function chain(steps, done)
  local i = 0
  local function next_step()
    i = i + 1
    local step = steps[i]
    if not step then
      return done(nil)
    end
    step(next_step, function(err)
      done(err)
    end)
  end
  next_step()
end

--- Whether `name` may name a worktree (its folder and, after the prefix,
--- its branch): nil, or why not. git's own check-ref-format comes after.
function M.check_name(name)
  if type(name) ~= 'string' or name == '' then
    return 'a worktree needs a name, e.g. :AcpWorktree fix-login'
  end
  local shown = require('acp.util.escape').line(name, 60)
  if name:find('[%s%c]') then
    return ('worktree name `%s` has a space or a control character'):format(shown)
  elseif name:sub(1, 1) == '-' then
    return ('worktree name `%s` starts with -'):format(shown)
  elseif name:find('..', 1, true) then
    return ('worktree name `%s` has ..'):format(shown)
  elseif name:find('[/\\]') then
    return ('worktree name `%s` has a / or \\ (one folder name, e.g. fix-login)'):format(shown)
  elseif name:find('[~^:?*%[@{]') or name:sub(-1) == '.' or name:sub(-5) == '.lock' or name == '.' then
    return ('worktree name `%s` is no branch name (no ~ ^ : ? * [ @{, no trailing . or .lock)'):format(shown)
  end
  return nil
end

local function normalize(dir)
  return (vim.fn.fnamemodify(dir, ':p'):gsub('(.)/+$', '%1'))
end

--- The folder the worktrees of `repo` go in: `worktree.dir` (relative to
--- the repository's folder when not absolute) or `<repo>/../<repo name>.worktrees`.
function M.dir_of(repo)
  local dir = options().dir
  if type(dir) == 'string' and dir ~= '' then
    dir = require('acp.util.escape').home(dir)
    if dir:sub(1, 1) ~= '/' then
      dir = repo .. '/' .. dir
    end
    return normalize(dir)
  end
  return vim.fs.dirname(repo) .. '/' .. vim.fs.basename(repo) .. '.worktrees'
end

--- Whether `path` (a real path) is `root` or under it.
local function inside(path, root)
  return path == root or path:sub(1, #root + 1) == root .. '/'
end

--- Copies the files of `repo` its `.worktreeinclude` names (gitignore
--- patterns, or plain paths) that git does not track into `wt.path`: only
--- regular files whose real path is inside the repository (a symlink, or a
--- file under a symlinked folder pointing out, is skipped). `cb(copied,
--- skipped)`, paths relative to the repository.
function M.copy_included(wt, cb)
  local list = wt.repo .. '/.worktreeinclude'
  if not vim.uv.fs_stat(list) then
    return vim.schedule(function()
      cb({}, {})
    end)
  end
  git(wt.repo, { 'ls-files', '-z', '--others', '--ignored', '--exclude-from=' .. list }, function(r)
    if r.code ~= 0 then
      return cb({}, { '.worktreeinclude: ' .. said(r) })
    end
    local real_repo = vim.uv.fs_realpath(wt.repo) or wt.repo
    local files, skipped = {}, {}
    for rel in r.stdout:gmatch('([^%z]+)') do
      local src = wt.repo .. '/' .. rel
      local st = vim.uv.fs_lstat(src)
      local real = vim.uv.fs_realpath(src)
      if st and st.type == 'file' and real and inside(real, real_repo) and not rel:find('%.%.') then
        files[#files + 1] = rel
      else
        skipped[#skipped + 1] = rel
      end
    end
    local copied, pending = {}, #files
    if pending == 0 then
      return cb(copied, skipped)
    end
    for _, rel in ipairs(files) do
      local dst = wt.path .. '/' .. rel
      vim.fn.mkdir(vim.fs.dirname(dst), 'p')
      vim.uv.fs_copyfile(wt.repo .. '/' .. rel, dst, { excl = true }, function(err)
        vim.schedule(function()
          if err then
            skipped[#skipped + 1] = rel
          else
            copied[#copied + 1] = rel
          end
          pending = pending - 1
          if pending == 0 then
            table.sort(copied)
            cb(copied, skipped)
          end
        end)
      end)
    end
  end)
end

--- Creates the worktree `name` of the repository holding `opts.cwd`
--- (default: the current directory): `git worktree add -b <prefix><name>
--- <dir>/<name>` from its HEAD, then the `.worktreeinclude` files.
--- `cb(wt, err)` on the main loop: the worktree, or nil and a message for
--- the user.
---@param name string
---@param opts? { cwd?: string, branch?: string }
---@param cb fun(wt: table?, err: string?)
function M.create(name, opts, cb)
  opts = opts or {}
  local err = M.check_name(name)
  if err then
    return vim.schedule(function()
      cb(nil, err)
    end)
  end
  local cwd = normalize(opts.cwd or vim.fn.getcwd())
  local wt = { name = name, branch = opts.branch or (options().branch_prefix .. name) }
  chain({
    function(next, fail)
      git(cwd, { 'check-ref-format', '--branch', wt.branch }, function(r)
        if r.code ~= 0 then
          return fail(('`%s` is no valid branch name'):format(require('acp.util.escape').line(wt.branch, 60)))
        end
        next()
      end)
    end,
    function(next, fail)
      git(cwd, { 'rev-parse', '--show-toplevel' }, function(r)
        if r.code == -1 then
          return fail('git is not installed (a worktree needs it): ' .. said(r))
        elseif r.code ~= 0 then
          return fail(('a worktree needs a git repository, and %s is in none'):format(require('acp.util.escape').line(cwd, 80, true)))
        end
        wt.repo = normalize(vim.trim(r.stdout))
        next()
      end)
    end,
    function(next, fail)
      git(wt.repo, { 'rev-parse', '--verify', '--quiet', 'HEAD^{commit}' }, function(r)
        if r.code ~= 0 then
          return fail('the repository has no commit yet: a worktree starts from one')
        end
        wt.base_commit = vim.trim(r.stdout)
        next()
      end)
    end,
    function(next)
      git(wt.repo, { 'symbolic-ref', '--quiet', '--short', 'HEAD' }, function(r)
        wt.base_branch = r.code == 0 and vim.trim(r.stdout) or nil
        next()
      end)
    end,
    function(next, fail)
      wt.path = M.dir_of(wt.repo) .. '/' .. name
      if vim.uv.fs_lstat(wt.path) then
        return fail(('%s exists already: pick another name'):format(require('acp.util.escape').line(wt.path, 80, true)))
      end
      vim.fn.mkdir(vim.fs.dirname(wt.path), 'p')
      git(wt.repo, { 'worktree', 'add', '-b', wt.branch, '--', wt.path, wt.base_commit }, function(r)
        if r.code ~= 0 then
          return fail('git worktree add: ' .. said(r))
        end
        next()
      end)
    end,
    function(next)
      M.copy_included(wt, function(copied, skipped)
        wt.included = copied
        wt.skipped = skipped
        next()
      end)
    end,
  }, function(e)
    if e then
      return cb(nil, e)
    end
    cb(wt, nil)
  end)
end

--- The files changed in the worktree since `base_commit`: committed on
--- its branch, changed and not committed, and new (not ignored, not the
--- copied `.worktreeinclude` files). `cb(files, err)`: a sorted list of
--- `{ path = <relative>, status = 'A'|'M'|'D'|'R'|'T'|'?' }`.
function M.changed_files(wt, cb)
  git(wt.path, { 'diff', '--name-status', '-z', '--no-renames', wt.base_commit }, function(r)
    if r.code ~= 0 then
      return cb(nil, said(r))
    end
    local out, seen = {}, {}
    local fields = vim.split(r.stdout, '\0', { plain = true })
    local i = 1
    while i < #fields do
      local status, path = fields[i], fields[i + 1]
      if status ~= '' and path and path ~= '' then
        out[#out + 1] = { path = path, status = status:sub(1, 1) }
        seen[path] = true
      end
      i = i + 2
    end
    git(wt.path, { 'ls-files', '-z', '--others', '--exclude-standard' }, function(u)
      if u.code ~= 0 then
        return cb(nil, said(u))
      end
      local copied = {}
      for _, p in ipairs(wt.included or {}) do
        copied[p] = true
      end
      for path in u.stdout:gmatch('([^%z]+)') do
        if not seen[path] and not copied[path] then
          out[#out + 1] = { path = path, status = '?' }
        end
      end
      table.sort(out, function(a, b)
        return a.path < b.path
      end)
      cb(out, nil)
    end)
  end)
end

--- What the worktree holds that its removal would lose: the commits of its
--- branch not in the base branch, and its changes not committed (the
--- copied `.worktreeinclude` files do not count). `cb({ commits, changes }, err)`.
function M.unmerged(wt, cb)
  local base = wt.base_branch or wt.base_commit
  git(wt.repo, { 'rev-list', '--count', base .. '..' .. wt.branch }, function(r)
    if r.code ~= 0 then
      return cb(nil, said(r))
    end
    local commits = tonumber(vim.trim(r.stdout)) or 0
    if not vim.uv.fs_stat(wt.path) then
      return cb({ commits = commits, changes = 0 })
    end
    git(wt.path, { 'status', '--porcelain', '-z', '--untracked-files=all', '--no-renames' }, function(s)
      if s.code ~= 0 then
        return cb(nil, said(s))
      end
      local copied, changes = {}, 0
      for _, p in ipairs(wt.included or {}) do
        copied[p] = true
      end
      -- Each entry is `XY path`.
      for entry in s.stdout:gmatch('([^%z]+)') do
        if not copied[entry:sub(4)] then
          changes = changes + 1
        end
      end
      cb({ commits = commits, changes = changes })
    end)
  end)
end

--- Removes the worktree and deletes its branch. Refused (`cb(false, msg,
--- 'unmerged')`) while the branch has commits the base branch lacks or the
--- worktree has changes not committed, unless `opts.force`. `cb(true)` when
--- both are gone.
---@param wt table
---@param opts? { force?: boolean }|fun(ok: boolean, err: string?, why: string?)
---@param cb? fun(ok: boolean, err: string?, why: string?)
function M.remove(wt, opts, cb)
  if type(opts) == 'function' then
    opts, cb = {}, opts
  end
  opts = opts or {}
  chain({
    function(next, fail)
      if opts.force then
        return next()
      end
      M.unmerged(wt, function(u, err)
        if not u then
          return fail(err)
        end
        if u.commits > 0 or u.changes > 0 then
          local what = {}
          if u.commits > 0 then
            what[#what + 1] = ('%d commit%s not in %s'):format(u.commits, u.commits == 1 and '' or 's', wt.base_branch or 'the base commit')
          end
          if u.changes > 0 then
            what[#what + 1] = ('%d file%s changed and not committed'):format(u.changes, u.changes == 1 and '' or 's')
          end
          wt.unmerged_reason = table.concat(what, ' and ')
          return fail('unmerged')
        end
        next()
      end)
    end,
    function(next, fail)
      if not vim.uv.fs_stat(wt.path) then
        -- Removed by hand: only git's record of it is left.
        return git(wt.repo, { 'worktree', 'prune' }, function()
          next()
        end)
      end
      git(wt.repo, { 'worktree', 'remove', '--force', '--', wt.path }, function(r)
        if r.code ~= 0 then
          return fail('git worktree remove: ' .. said(r))
        end
        next()
      end)
    end,
    function(next, fail)
      git(wt.repo, { 'branch', '-D', '--', wt.branch }, function(r)
        if r.code ~= 0 then
          return fail('git branch -D: ' .. said(r))
        end
        next()
      end)
    end,
  }, function(err)
    if err == 'unmerged' then
      return cb(false, ('branch %s has %s'):format(wt.branch, wt.unmerged_reason), 'unmerged')
    elseif err then
      return cb(false, err)
    end
    cb(true)
  end)
end

--- Merges the worktree's branch into the base branch, in the repository's
--- own worktree: its changes not committed are committed on its branch
--- first ("<name>: changes of the chat"), then `git merge --no-ff`. Refused
--- while the repository is not on the base branch or has changes not
--- committed (tracked files). A merge that stops at conflicts is left to
--- the user (never aborted). `cb(result, err)`: `result` is `{ merged =
--- true }`, `{ conflicts = { paths... } }` or `{ up_to_date = true }`.
function M.merge(wt, cb)
  local result = {}
  chain({
    function(next, fail)
      if not wt.base_branch then
        return fail('the repository was on no branch (detached HEAD) when the worktree was made: merge ' .. wt.branch .. ' by hand')
      end
      git(wt.repo, { 'symbolic-ref', '--quiet', '--short', 'HEAD' }, function(r)
        local now = vim.trim(r.stdout)
        if r.code ~= 0 or now ~= wt.base_branch then
          return fail(('the repository is on %s now, not on %s: switch back to %s to merge %s'):format(r.code == 0 and now or 'no branch', wt.base_branch, wt.base_branch, wt.branch))
        end
        next()
      end)
    end,
    function(next, fail)
      git(wt.repo, { 'status', '--porcelain', '--untracked-files=no' }, function(r)
        if r.code ~= 0 then
          return fail(said(r))
        elseif vim.trim(r.stdout) ~= '' then
          local n = #vim.split(vim.trim(r.stdout), '\n', { plain = true })
          return fail(('%s has %d file%s changed and not committed: commit or stash them, then merge %s'):format(
            require('acp.util.escape').line(wt.repo, 60, true), n, n == 1 and '' or 's', wt.branch))
        end
        next()
      end)
    end,
    function(next, fail)
      if not vim.uv.fs_stat(wt.path) then
        return next()
      end
      git(wt.path, { 'add', '-A', '--', '.' }, function(r)
        if r.code ~= 0 then
          return fail('git add: ' .. said(r))
        end
        -- The copied .worktreeinclude files stay out of the commit.
        local unstage = { 'reset', '-q', '--' }
        for _, p in ipairs(wt.included or {}) do
          unstage[#unstage + 1] = ':(literal)' .. p
        end
        local function commit()
          git(wt.path, { 'diff', '--cached', '--quiet' }, function(d)
            if d.code == 0 then
              return next()
            end
            git(wt.path, { 'commit', '-q', '--no-verify', '-m', wt.name .. ': changes of the chat' }, function(c)
              if c.code ~= 0 then
                return fail('git commit in the worktree: ' .. said(c))
              end
              result.committed = true
              next()
            end)
          end)
        end
        if #unstage > 3 then
          git(wt.path, unstage, commit)
        else
          commit()
        end
      end)
    end,
    function(next, fail)
      git(wt.repo, { 'merge', '--no-ff', '--no-edit', '-m', ('Merge branch %s'):format(wt.branch), wt.branch }, function(r)
        if r.code == 0 then
          if r.stdout:find('Already up to date', 1, true) then
            result.up_to_date = true
          else
            result.merged = true
          end
          return next()
        end
        git(wt.repo, { 'diff', '--name-only', '-z', '--diff-filter=U' }, function(u)
          local files = {}
          for p in u.stdout:gmatch('([^%z]+)') do
            files[#files + 1] = p
          end
          if #files == 0 then
            return fail('git merge: ' .. said(r))
          end
          result.conflicts = files
          next()
        end)
      end)
    end,
  }, function(err)
    if err then
      return cb(nil, err)
    end
    cb(result, nil)
  end)
end

--- Tells the user how a merge went; conflicted files go to the quickfix
--- list (the merge is left to the user's tools).
function M.report_merge(wt, result, err)
  local esc = require('acp.util.escape')
  if err then
    return notify('acp.nvim: not merged: ' .. err, vim.log.levels.WARN)
  end
  if result.conflicts then
    local items = {}
    for _, p in ipairs(result.conflicts) do
      items[#items + 1] = { filename = wt.repo .. '/' .. p, lnum = 1, text = 'merge conflict (' .. wt.branch .. ')' }
    end
    vim.fn.setqflist({}, ' ', { title = 'acp.nvim: merge conflicts of ' .. wt.branch, items = items })
    return notify(
      ('acp.nvim: merging %s into %s stopped at conflicts in %d file%s (quickfix list): resolve them with your tools and commit, or git merge --abort'):format(
        wt.branch,
        wt.base_branch,
        #result.conflicts,
        #result.conflicts == 1 and '' or 's'
      ),
      vim.log.levels.WARN
    )
  end
  if result.up_to_date then
    return notify(('acp.nvim: %s has nothing to merge into %s'):format(wt.branch, wt.base_branch))
  end
  notify(('acp.nvim: merged %s into %s; the worktree %s and its branch stay'):format(wt.branch, wt.base_branch, esc.line(wt.path, 80, true)))
end

return M
