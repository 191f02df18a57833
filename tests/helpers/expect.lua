-- Assertions and per-case utilities for the acp.nvim test harness.
--
--   local T = require('tests.helpers.expect')
--   T.eq(actual, expected, 'optional message')
--   T.skip('reason')                      -- ends the case, reported as skipped
--
-- The runner (tests/run.lua) also exposes this module as the global `T`.

local M = {}

local uv = vim.uv or vim.loop

local function now_ms()
  return uv.hrtime() / 1e6
end
M.now_ms = now_ms

-- ---------------------------------------------------------------------------
-- Skipping
-- ---------------------------------------------------------------------------

local Skip = {}
Skip.__index = Skip
Skip.__tostring = function(s)
  return 'skipped: ' .. tostring(s.reason)
end

--- End the current case and report it as skipped with `reason`.
function M.skip(reason)
  error(setmetatable({ reason = reason or 'skipped' }, Skip), 0)
end

--- Skip unless `cond` is truthy.
function M.skip_unless(cond, reason)
  if not cond then
    M.skip(reason)
  end
end

function M.is_skip(err)
  return getmetatable(err) == Skip
end

-- ---------------------------------------------------------------------------
-- Case deadline (set by the runner; every wait helper is capped by it)
-- ---------------------------------------------------------------------------

M._deadline = nil -- absolute, in ms (hrtime based); nil outside a case

--- Clamp `timeout_ms` to the time left before the current case's deadline.
--- Returns the clamped timeout and true when the case deadline was the limit.
function M.remaining(timeout_ms)
  timeout_ms = timeout_ms or math.huge
  if not M._deadline then
    return timeout_ms, false
  end
  local left = math.max(0, math.floor(M._deadline - now_ms()))
  if left < timeout_ms then
    return left, true
  end
  return timeout_ms, false
end

-- ---------------------------------------------------------------------------
-- Formatting
-- ---------------------------------------------------------------------------

local function show(v)
  if type(v) == 'string' then
    if v:find('\n') and not v:find(']]', 1, true) then
      return '[[\n' .. v .. ']]' -- multi-line: readable as is
    end
    return (string.format('%q', v):gsub('\\\n', '\\n'))
  end
  return vim.inspect(v)
end
M.show = show

local function prefix(msg)
  if msg == nil or msg == '' then
    return ''
  end
  return tostring(msg) .. '\n'
end

local function diff(a, b)
  local sa, sb = show(a), show(b)
  if not (sa:find('\n') or sb:find('\n')) then
    return nil
  end
  local difffn = (vim.text and vim.text.diff) or vim.diff
  if not difffn then
    return nil
  end
  local ok, d = pcall(difffn, sa .. '\n', sb .. '\n', { ctxlen = 2 })
  if ok and type(d) == 'string' and d ~= '' then
    return d
  end
  return nil
end

-- ---------------------------------------------------------------------------
-- Assertions. All raise with level 2, so the error points at the test line.
-- ---------------------------------------------------------------------------

function M.eq(actual, expected, msg)
  if vim.deep_equal(actual, expected) then
    return actual
  end
  local lines = {
    prefix(msg) .. 'expected equal values',
    '  actual:   ' .. show(actual):gsub('\n', '\n            '),
    '  expected: ' .. show(expected):gsub('\n', '\n            '),
  }
  local d = diff(expected, actual)
  if d then
    table.insert(lines, '  diff (- expected, + actual):')
    table.insert(lines, (d:gsub('\n$', ''):gsub('\n', '\n    ')))
  end
  error(table.concat(lines, '\n'), 2)
end

function M.neq(actual, unexpected, msg)
  if not vim.deep_equal(actual, unexpected) then
    return actual
  end
  error(prefix(msg) .. 'expected a value different from ' .. show(unexpected), 2)
end

--- Lua pattern match (use `T.contains` for plain substrings).
function M.match(str, pattern, msg)
  if type(str) ~= 'string' then
    error(prefix(msg) .. 'expected a string to match ' .. show(pattern) .. ', got ' .. show(str), 2)
  end
  if str:find(pattern) then
    return str
  end
  error(prefix(msg) .. 'expected ' .. show(str) .. '\n  to match pattern ' .. show(pattern), 2)
end

function M.no_match(str, pattern, msg)
  if type(str) == 'string' and str:find(pattern) then
    error(prefix(msg) .. 'expected ' .. show(str) .. '\n  not to match pattern ' .. show(pattern), 2)
  end
  return str
end

--- Plain substring for strings, element membership (deep equality) for lists.
function M.contains(haystack, needle, msg)
  if type(haystack) == 'string' and type(needle) == 'string' then
    if haystack:find(needle, 1, true) then
      return haystack
    end
  elseif type(haystack) == 'table' then
    for _, v in ipairs(haystack) do
      if vim.deep_equal(v, needle) then
        return haystack
      end
    end
  end
  error(prefix(msg) .. 'expected ' .. show(haystack) .. '\n  to contain ' .. show(needle), 2)
end

local function is_truthy(v)
  return v ~= nil and v ~= false and v ~= vim.NIL
end
M.is_truthy = is_truthy

function M.truthy(v, msg)
  if is_truthy(v) then
    return v
  end
  error(prefix(msg) .. 'expected a truthy value, got ' .. show(v), 2)
end

function M.falsy(v, msg)
  if not is_truthy(v) then
    return v
  end
  error(prefix(msg) .. 'expected a falsy value, got ' .. show(v), 2)
end

--- Call `fn(...)`, expect it to raise; if `pattern` is given the message must match it.
--- Returns the error message.
function M.errors(fn, pattern, ...)
  local ok, err = pcall(fn, ...)
  if ok then
    error('expected an error' .. (pattern and (' matching ' .. show(pattern)) or '') .. ', got none', 2)
  end
  if M.is_skip(err) then
    error(err, 0)
  end
  local s = type(err) == 'string' and err or vim.inspect(err)
  if pattern and not s:find(pattern) then
    error('expected an error matching ' .. show(pattern) .. ', got:\n  ' .. s, 2)
  end
  return s
end

--- Poll `fn()` in this (parent) process every `interval` ms until it returns a truthy value,
--- and return that value. Raises after `timeout_ms` (default 5000, capped by the case deadline).
function M.wait(fn, timeout_ms, msg, interval)
  local timeout, capped = M.remaining(timeout_ms or 5000)
  local start = now_ms()
  local last
  while true do
    last = fn()
    if is_truthy(last) then
      return last
    end
    if now_ms() - start >= timeout then
      break
    end
    vim.wait(interval or 10)
  end
  error(
    string.format(
      '%swait timed out after %d ms%s; last value: %s',
      prefix(msg),
      timeout,
      capped and ' (case deadline)' or '',
      show(last)
    ),
    2
  )
end

-- ---------------------------------------------------------------------------
-- Temporary directories (under tests/.tmp/, removed by the runner when the run passes)
-- ---------------------------------------------------------------------------

local tmp_counter = 0

--- Root of this run's temporary files (created on demand).
function M.tmp_root()
  local dir = vim.env.ACP_TEST_TMP
  if not dir or dir == '' then
    local root = vim.env.ACP_ROOT or vim.fn.getcwd()
    dir = root .. '/tests/.tmp/run-' .. uv.os_getpid()
    vim.env.ACP_TEST_TMP = dir
  end
  vim.fn.mkdir(dir, 'p')
  return dir
end

--- A fresh empty directory; `name` is an optional readable suffix.
function M.tmpdir(name)
  tmp_counter = tmp_counter + 1
  local safe = (name or 'tmp'):gsub('[^%w_.-]', '_')
  local dir = string.format('%s/%03d-%s', M.tmp_root(), tmp_counter, safe)
  vim.fn.delete(dir, 'rf')
  vim.fn.mkdir(dir, 'p')
  return dir
end

--- Write `content` (string or list of lines) to `path`, creating parent dirs. Returns path.
function M.write_file(path, content)
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  if type(content) == 'table' then
    content = table.concat(content, '\n') .. '\n'
  end
  local f = assert(io.open(path, 'wb'))
  f:write(content)
  f:close()
  return path
end

function M.read_file(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

return M
