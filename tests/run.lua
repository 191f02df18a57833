-- Tiny test runner for acp.nvim.
--
--   nvim -l tests/run.lua [pattern ...]        (or: make test TEST=pattern)
--
-- Discovers tests/test_*.lua (sorted by name; env ACP_TEST_DIR overrides the directory).
-- A test file returns its cases, preferably as an ordered list (declaration order is kept):
--
--   local T = require('tests.helpers.expect')      -- also available as the global `T`
--   local Child = require('tests.helpers.child')
--   return {
--     { 'buffer round trip', function()
--         local child = Child.new()
--         child:set_lines(0, { 'a', 'b' })
--         T.eq(child:buf_lines(0), { 'a', 'b' })
--       end },
--     { 'slow one', function() ... end, timeout = 60000 },   -- per-case timeout, ms
--     before_each = function(case_name) return Child.new() end, -- results are passed to the case
--     after_each = function(...) end,                            -- gets the same values
--     setup = function() end, teardown = function() end,         -- once per file
--   }
--
-- A map `{ ['case name'] = fn, ... }` is accepted too (cases then run sorted by name; the keys
-- before_each/after_each/setup/teardown are hooks, not cases).
--
-- Filtering: a pattern selects a whole file when it matches the file name
-- ("test_harness.lua"), otherwise the cases whose id "test_harness › case name" it matches
-- (plain substring or Lua pattern). Several patterns (args, env TEST) are OR-ed.
--
-- Every child Neovim a case starts (tests/helpers/child.lua) is stopped after the case, pass
-- or fail. A child that died on its own with a non-zero status the test never looked at fails
-- the case. The case timeout (default 30000 ms, env ACP_TEST_CASE_TIMEOUT) caps every wait
-- helper; a case running past it fails.
--
-- Output: one line per case, then exactly one summary line "N passed, N failed, N skipped".
-- Exit code 1 when anything failed.

local uv = vim.uv or vim.loop

local script = debug.getinfo(1, 'S').source:gsub('^@', '')
local root = vim.env.ACP_ROOT
if not root or root == '' then
  root = vim.fn.fnamemodify(script, ':p:h:h')
end
root = vim.fn.fnamemodify(root, ':p'):gsub('/$', '')

-- Environment shared with the tests and inherited by every child process.
vim.env.ACP_ROOT = root
-- The loader checks the library against the sources themselves (not only
-- its version and git revision): a core not rebuilt after an edit of src/
-- fails every test instead of running old code.
vim.env.ACP_VERIFY_SOURCES = '1'
if not vim.env.ACP_NVIM or vim.env.ACP_NVIM == '' then
  vim.env.ACP_NVIM = vim.v.progpath
end
if not vim.env.ACP_TEST_AGENT or vim.env.ACP_TEST_AGENT == '' then
  vim.env.ACP_TEST_AGENT = root .. '/target/release/acp-test-agent'
end
if not vim.env.ACP_SDK_AGENT_JS or vim.env.ACP_SDK_AGENT_JS == '' then
  local js = root .. '/.deps/npm/node_modules/@agentclientprotocol/sdk/dist/examples/agent.js'
  if uv.fs_stat(js) then
    vim.env.ACP_SDK_AGENT_JS = js
  end
end

package.path = table.concat({
  root .. '/?.lua',
  root .. '/?/init.lua',
  root .. '/lua/?.lua',
  root .. '/lua/?/init.lua',
  package.path,
}, ';')

local T = require('tests.helpers.expect')
local Child = require('tests.helpers.child')
T.Child = Child
_G.T = T

local own_tmp = not vim.env.ACP_TEST_TMP or vim.env.ACP_TEST_TMP == ''
local DEFAULT_CASE_TIMEOUT = tonumber(vim.env.ACP_TEST_CASE_TIMEOUT or '') or 30000
local test_dir = vim.env.ACP_TEST_DIR
if not test_dir or test_dir == '' then
  test_dir = root .. '/tests'
end

local function out(s)
  io.stdout:write(s, '\n')
  io.stdout:flush()
end

local function now_ms()
  return uv.hrtime() / 1e6
end

-- ---------------------------------------------------------------------------
-- Patterns
-- ---------------------------------------------------------------------------

local patterns = {}
for _, a in ipairs(_G.arg or {}) do
  if a ~= '' then
    table.insert(patterns, a)
  end
end
if vim.env.TEST and vim.env.TEST ~= '' then
  table.insert(patterns, vim.env.TEST)
end

local function matches(s)
  for _, p in ipairs(patterns) do
    if s:find(p, 1, true) then
      return true
    end
    local ok, found = pcall(string.find, s, p)
    if ok and found then
      return true
    end
  end
  return false
end

-- ---------------------------------------------------------------------------
-- Errors
-- ---------------------------------------------------------------------------

-- Errors caught by the runner become Formatted { msg = message + traceback }, once.
local Formatted = {}
Formatted.__tostring = function(f)
  return f.msg
end

local function handler(e)
  if T.is_skip(e) or getmetatable(e) == Formatted then
    return e
  end
  local msg = type(e) == 'string' and e or vim.inspect(e)
  local tb = {}
  for line in debug.traceback('', 2):gmatch('[^\n]+') do
    if
      line ~= 'stack traceback:'
      and not line:find('tests/run.lua', 1, true)
      and not line:find("[C]: in function 'xpcall'", 1, true)
      and not line:find("[C]: in function 'error'", 1, true)
    then
      table.insert(tb, line)
    end
  end
  if #tb > 0 then
    msg = msg .. '\nstack traceback:\n' .. table.concat(tb, '\n')
  end
  return setmetatable({ msg = msg }, Formatted)
end

local function indent(s)
  return '    ' .. tostring(s):gsub('\n', '\n    ')
end

-- ---------------------------------------------------------------------------
-- Loading
-- ---------------------------------------------------------------------------

local HOOKS = { before_each = true, after_each = true, setup = true, teardown = true }

-- Returns cases, hooks; or nil, error message.
local function load_file(path)
  local chunk, lerr = loadfile(path)
  if not chunk then
    return nil, lerr
  end
  local ok, mod = xpcall(chunk, handler)
  if not ok then
    return nil, tostring(mod)
  end
  if type(mod) ~= 'table' then
    return nil, 'test file must return a table of cases, got ' .. type(mod)
  end
  local cases, hooks = {}, {}
  for k in pairs(HOOKS) do
    if mod[k] ~= nil and type(mod[k]) ~= 'function' then
      return nil, k .. ' must be a function'
    end
    hooks[k] = mod[k]
  end
  if #mod > 0 then
    for i, e in ipairs(mod) do
      if type(e) ~= 'table' or type(e[1]) ~= 'string' or type(e[2]) ~= 'function' then
        return nil, string.format('case #%d must be { "name", function, timeout = ms? }', i)
      end
      local o = type(e[3]) == 'table' and e[3] or e
      table.insert(cases, { name = e[1], fn = e[2], timeout = o.timeout })
    end
  else
    local names = {}
    for k, v in pairs(mod) do
      if not HOOKS[k] then
        if type(k) ~= 'string' or (type(v) ~= 'function' and not (type(v) == 'table' and type(v[1]) == 'function')) then
          return nil, 'case ' .. tostring(k) .. ' must map a name to a function'
        end
        table.insert(names, k)
      end
    end
    table.sort(names)
    for _, k in ipairs(names) do
      local v = mod[k]
      if type(v) == 'function' then
        table.insert(cases, { name = k, fn = v })
      else
        table.insert(cases, { name = k, fn = v[1], timeout = v.timeout })
      end
    end
  end
  return cases, hooks
end

-- ---------------------------------------------------------------------------
-- Running
-- ---------------------------------------------------------------------------

local counts = { passed = 0, failed = 0, skipped = 0 }

local function report(status, id, ms, detail)
  if status == 'ok' then
    counts.passed = counts.passed + 1
    out(string.format('ok   %s (%d ms)', id, ms))
  elseif status == 'skip' then
    counts.skipped = counts.skipped + 1
    out(string.format('skip %s: %s', id, detail))
  else
    counts.failed = counts.failed + 1
    out(string.format('FAIL %s (%d ms)', id, ms))
    out(indent(detail))
  end
end

-- Runs `fn` as a "case" (with deadline, error capture and child cleanup).
-- Returns status ('ok'|'skip'|'fail'), elapsed ms, detail.
local function guarded(fn, timeout, keep_children)
  local t0 = now_ms()
  T._deadline = t0 + timeout
  local ok, err = xpcall(fn, handler)
  T._deadline = nil
  local kept = {}
  if keep_children then
    kept = Child.registry
    Child.registry = {}
  end
  local errors = {}
  local skip
  if not ok then
    if T.is_skip(err) then
      skip = err.reason
    else
      table.insert(errors, tostring(err))
    end
  end
  local elapsed = now_ms() - t0
  local cok, problems = pcall(Child.cleanup)
  if not cok then
    table.insert(errors, 'child cleanup failed: ' .. tostring(problems))
  else
    vim.list_extend(errors, problems)
  end
  if #errors == 0 and elapsed > timeout then
    table.insert(errors, string.format('case exceeded its timeout of %d ms', timeout))
  end
  if keep_children then
    Child.registry = kept
  end
  if #errors > 0 then
    return 'fail', elapsed, table.concat(errors, '\n')
  elseif skip then
    return 'skip', elapsed, tostring(skip)
  end
  return 'ok', elapsed
end

local function run_file(path)
  local fname = vim.fn.fnamemodify(path, ':t')
  local label = fname:gsub('%.lua$', '')
  local whole = #patterns == 0 or matches(fname)

  local cases, hooks = load_file(path)
  if not cases then
    if whole or matches(label) then
      report('fail', label .. ' › <load>', 0, hooks)
    end
    pcall(Child.cleanup)
    return
  end

  local selected = {}
  for _, c in ipairs(cases) do
    if whole or matches(label .. ' › ' .. c.name) then
      table.insert(selected, c)
    end
  end
  if #selected == 0 then
    return
  end

  -- Children started in setup are file-scoped: kept out of per-case cleanup, stopped after
  -- teardown.
  local file_children = {}
  if hooks.setup then
    local status, ms, detail = guarded(hooks.setup, DEFAULT_CASE_TIMEOUT, true)
    file_children = Child.registry
    Child.registry = {}
    if status ~= 'ok' then
      Child.registry = file_children
      pcall(Child.cleanup)
      if status == 'skip' then
        for _, c in ipairs(selected) do
          report('skip', label .. ' › ' .. c.name, 0, detail)
        end
      else
        report('fail', label .. ' › <setup>', ms, detail)
      end
      return
    end
  end

  for _, c in ipairs(selected) do
    local id = label .. ' › ' .. c.name
    local status, ms, detail = guarded(function()
      local ctx = { n = 0 }
      if hooks.before_each then
        ctx = vim.F.pack_len(hooks.before_each(c.name))
      end
      local ok, err = xpcall(function()
        c.fn(unpack(ctx, 1, ctx.n))
      end, handler)
      if hooks.after_each then
        local aok, aerr = xpcall(function()
          hooks.after_each(unpack(ctx, 1, ctx.n))
        end, handler)
        if not aok and ok then
          ok, err = false, T.is_skip(aerr) and aerr or ('in after_each: ' .. tostring(aerr))
        end
      end
      if not ok then
        error(err, 0)
      end
    end, c.timeout or DEFAULT_CASE_TIMEOUT)
    report(status, id, ms, detail)
  end

  if hooks.teardown then
    local status, ms, detail = guarded(hooks.teardown, DEFAULT_CASE_TIMEOUT)
    if status == 'fail' then
      report('fail', label .. ' › <teardown>', ms, detail)
    end
  end
  Child.registry = file_children
  pcall(Child.cleanup)
end

local function main()
  local files = vim.fn.glob(test_dir .. '/test_*.lua', false, true)
  table.sort(files)
  local t0 = now_ms()
  for _, f in ipairs(files) do
    run_file(f)
  end
  local total = counts.passed + counts.failed + counts.skipped
  if total == 0 then
    out(
      #patterns > 0 and ('no test case matched ' .. table.concat(patterns, ', '))
        or ('no test files found in ' .. test_dir)
    )
  else
    out(string.format('-- %d cases from %d files in %.1f s', total, #files, (now_ms() - t0) / 1000))
  end
end

local ok, err = xpcall(main, handler)
pcall(Child.cleanup)
if not ok then
  out('runner error: ' .. (T.is_skip(err) and 'T.skip() outside a case' or tostring(err)))
  counts.failed = counts.failed + 1
end

local tmp = vim.env.ACP_TEST_TMP
if own_tmp and tmp and tmp ~= '' and uv.fs_stat(tmp) then
  if counts.failed == 0 then
    vim.fn.delete(tmp, 'rf')
    pcall(uv.fs_rmdir, vim.fs.dirname(tmp)) -- tests/.tmp, when empty
  else
    out('-- temporary files kept in ' .. tmp)
  end
end

out(string.format('%d passed, %d failed, %d skipped', counts.passed, counts.failed, counts.skipped))
io.stdout:flush()
os.exit(counts.failed > 0 and 1 or 0)
