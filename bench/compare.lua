-- `make bench-compare BEFORE=<rev>`: the benchmarks of two trees side by side, in one run.
--
--   nvim -l bench/compare.lua      (env ACP_NVIM, BENCH_BEFORE=<dir>, BENCH_AFTER=<dir>)
--   BENCH_ROUNDS=5                 rounds; each round runs every benchmark once per tree
--   BENCH_ONLY=...                 passed on to bench/run.lua
--   BENCH_OUT=path                 also write the report there
--
-- Each tree benchmarks itself with its own bench/run.lua, core and test agent
-- (<dir>/target/release). The trees alternate round by round (before, after, after, before, ...)
-- so that a slow minute of the machine falls on both. A row's value is the median over the
-- rounds of each round's result; the ratio is after / before, and a row is flagged when the
-- after tree is more than 10% worse in the row's direction (times, sizes and lateness: lower is
-- better).
local nvim = vim.env.ACP_NVIM or vim.v.progpath
local before = assert(vim.env.BENCH_BEFORE, 'BENCH_BEFORE: the tree to compare against')
local after = vim.env.BENCH_AFTER or vim.fn.getcwd()
local ROUNDS = math.max(1, tonumber(vim.env.BENCH_ROUNDS or '') or 5)
local tmp = vim.fn.tempname()
vim.fn.mkdir(tmp, 'p')

local function log(fmt, ...)
  io.stderr:write(('bench-compare: ' .. fmt .. '\n'):format(...))
end

--- The rows of a bench/run.lua report: name -> { value, unit }, and their order.
local function parse(path)
  local rows, order = {}, {}
  for _, line in ipairs(vim.fn.readfile(path)) do
    local name, median = line:match('^| (.-)%s*| +(.-) |')
    local value, unit = (median or ''):match('^([%d.]+) (%S+)$')
    if name and value then
      rows[name] = { value = tonumber(value), unit = unit }
      order[#order + 1] = name
    end
  end
  return rows, order
end

local function run_tree(root, out)
  local env = {
    ACP_NVIM = nvim,
    ACP_ROOT = root,
    ACP_TEST_AGENT = root .. '/target/release/acp-test-agent',
    BENCH_RUNS = '1',
    BENCH_OUT = out,
    BENCH_ONLY = vim.env.BENCH_ONLY,
  }
  local res = vim.system({ nvim, '-l', root .. '/bench/run.lua' }, { cwd = root, env = env, text = true }):wait()
  if res.code ~= 0 then
    error(('bench/run.lua in %s failed (%d):\n%s'):format(root, res.code, res.stderr or ''))
  end
  return parse(out)
end

local function median(xs)
  table.sort(xs)
  local n = #xs
  return n % 2 == 1 and xs[(n + 1) / 2] or (xs[n / 2] + xs[n / 2 + 1]) / 2
end

local samples = { before = {}, after = {} }
local order
for round = 1, ROUNDS do
  local sides = round % 2 == 1 and { 'before', 'after' } or { 'after', 'before' }
  for _, side in ipairs(sides) do
    local root = side == 'before' and before or after
    local rows, o = run_tree(root, ('%s/%s-%d.md'):format(tmp, side, round))
    if side == 'after' then
      order = order or o
    end
    for name, r in pairs(rows) do
      samples[side][name] = samples[side][name] or { unit = r.unit, values = {} }
      table.insert(samples[side][name].values, r.value)
    end
    log('round %d/%d: %s done', round, ROUNDS, side)
  end
end

--- Rows where a larger number is better (none today: every row is a time, size or lateness).
local HIGHER_IS_BETTER = {}

local out = {}
local function emit(line)
  out[#out + 1] = line
  io.stdout:write(line, '\n')
end
local function describe(root)
  local res = vim.system({ 'git', 'describe', '--always', '--dirty' }, { cwd = root, text = true }):wait()
  return vim.trim(res.stdout or '?')
end
emit(('before: %s (%s)'):format(before, describe(before)))
emit(('after:  %s (%s)'):format(after, describe(after)))
emit(('rounds: %d, trees alternating; each value is the median of the rounds'):format(ROUNDS))
emit('')
local hdr = '| %-44s | %12s | %12s | %7s | %-10s |'
emit(hdr:format('benchmark', 'before', 'after', 'ratio', 'regression'))
emit(('|%s|%s|%s|%s|%s|'):format(('-'):rep(46), ('-'):rep(14), ('-'):rep(14), ('-'):rep(9), ('-'):rep(12)))
local worse = {}
for _, name in ipairs(order or {}) do
  local b, a = samples.before[name], samples.after[name]
  if b and a then
    local mb, ma = median(b.values), median(a.values)
    local ratio = mb > 0 and ma / mb or (ma == 0 and 1 or math.huge)
    local bad = HIGHER_IS_BETTER[name] and ratio < 1 / 1.1 or (not HIGHER_IS_BETTER[name] and ratio > 1.1)
    -- Sub-millisecond rows move by more than 10% from noise alone; flag only a visible change.
    if bad and a.unit == 'ms' and math.abs(ma - mb) < 1 then
      bad = false
    end
    if bad then
      worse[#worse + 1] = name
    end
    emit(hdr:format(name, ('%.2f %s'):format(mb, b.unit), ('%.2f %s'):format(ma, a.unit), ('%.2f'):format(ratio),
      bad and 'YES' or ''))
  end
end
emit('')
emit(#worse == 0 and 'No row is more than 10% worse.' or ('More than 10% worse: ' .. table.concat(worse, '; ')))
if vim.env.BENCH_OUT and vim.env.BENCH_OUT ~= '' then
  vim.fn.writefile(out, vim.env.BENCH_OUT)
end
