-- Real git for the tests that need a repository (worktrees, fan-out, the threads view): no
-- mocks of git, a repository per case in a temporary folder of its own.
local T = require('tests.helpers.expect')

local M = {}

--- Runs git in `dir`; its stdout (trimmed) and exit code. Fails the test when git fails,
--- unless `may_fail`.
function M.git(dir, args, may_fail)
  local cmd = { 'git', '-C', dir }
  vim.list_extend(cmd, args)
  local r = vim.system(cmd, { text = true }):wait()
  if r.code ~= 0 and not may_fail then
    error(('git %s: %s'):format(table.concat(args, ' '), r.stderr), 2)
  end
  return vim.trim(r.stdout or ''), r.code
end

--- A repository on branch `main` with `files` committed (name -> text; default a README)
--- and `extra` written but not committed; its real path, `<tmp>/repo`, alone in its own
--- temporary folder (named after `tag`), so its worktrees go to `<tmp>/repo.worktrees`.
--- `opts.date` fixes the commit's dates, so its id is the same every run.
function M.repo(tag, files, extra, opts)
  local dir = vim.fn.resolve(T.tmpdir(tag or 'git')) .. '/repo'
  vim.fn.mkdir(dir, 'p')
  M.git(dir, { 'init', '-q', '-b', 'main' })
  M.git(dir, { 'config', 'user.name', 'Test' })
  M.git(dir, { 'config', 'user.email', 'test@example.invalid' })
  M.git(dir, { 'config', 'commit.gpgsign', 'false' })
  for name, content in pairs(files or { ['README'] = 'hello\n' }) do
    T.write_file(dir .. '/' .. name, content)
  end
  M.git(dir, { 'add', '-A' })
  local date = opts and opts.date
  if date then
    local r = vim.system({ 'git', '-C', dir, 'commit', '-q', '-m', 'first', '--date=' .. date }, {
      env = { GIT_COMMITTER_DATE = date },
    }):wait()
    assert(r.code == 0, r.stderr)
  else
    M.git(dir, { 'commit', '-q', '-m', 'first' })
  end
  for name, content in pairs(extra or {}) do
    T.write_file(dir .. '/' .. name, content)
  end
  return dir
end

return M
