-- `make bench`: benchmarks that run against a real Neovim. Prints a table; numbers are recorded
-- in doc/benchmarks.md with the command that made them.
--
--   nvim -l bench/run.lua         (env ACP_NVIM, ACP_ROOT, ACP_TEST_AGENT; `make bench` sets them)
--   BENCH_RUNS=5                  runs per benchmark (medians are reported; at least 5 by default)
--   BENCH_ONLY=stream50k,paced    run only these (startup, stream50k, ui, paced, paced_hist, big5mb, tools, bigdiff, fs10mb)
--   BENCH_OUT=path                also write the report there
--   BENCH_VERBOSE=1               print every run's raw measurements (stderr)
--   BENCH_KEEP=dir                work in dir and keep its files (agent and core logs)
--   BENCH_PROFILE=mode:file       LuaJIT's profiler (jit.p) over each measured turn, e.g.
--                                 '-3Fi1:/tmp/prof-%p.txt' (%p: the measured Neovim's pid)
--   BENCH_PHASES=1                with BENCH_VERBOSE: redraw, parse and drain times of each turn
--   BENCH_PROFILE_LAST=mode:file  the same profiler over the drain that ends the turn only;
--                                 'time:/tmp/last-%p.txt': inclusive time and calls of every
--                                 acp.* module function in that drain (BENCH_WHO=acp.m.fn:
--                                 also that function's callers)
--
-- Each workload is also played by the minimal client (bench/thin.lua) in the same kind of
-- Neovim; every row prints its ratio to that client.
--
-- Every run starts a fresh `nvim --embed` with the plugin, opens the chat against the scripted
-- test agent (bench/scenarios/bench.json), plays one warm-up turn, then the measured turn.
-- bench/driver.lua takes the measurements inside that Neovim; bench/rpc.lua is the msgpack-RPC
-- client that also acts as the attached UI (200x50) for the rows that need one.
local root = vim.env.ACP_ROOT or vim.fn.getcwd()
package.path = root .. '/?.lua;' .. package.path
local nvim = vim.env.ACP_NVIM or vim.v.progpath
local agent = vim.env.ACP_TEST_AGENT or (root .. '/target/release/acp-test-agent')
local scenario = root .. '/bench/scenarios/bench.json'
local RUNS = math.max(1, tonumber(vim.env.BENCH_RUNS or '') or 5)
local only = {}
for name in (vim.env.BENCH_ONLY or ''):gmatch('[^,%s]+') do
  only[name] = true
end
local function want(name)
  return next(only) == nil or only[name]
end

local Rpc = require('bench.rpc')
local uv = vim.uv

local tmp = vim.env.BENCH_KEEP or vim.fn.tempname()
vim.fn.mkdir(tmp, 'p')

local function median(xs)
  local s = vim.deepcopy(xs)
  table.sort(s)
  local n = #s
  if n == 0 then
    return nil
  end
  return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
end

local function log(fmt, ...)
  io.stderr:write(('bench: ' .. fmt .. '\n'):format(...))
end

-- Measured-turn parameters ------------------------------------------------------------------

local FLOOD_LINE = function(i)
  return ('%06d:%s'):format(i, ('x'):rep(32))
end

local TURNS = {
  stream50k = {
    prompt = 'stream50k',
    tail = { FLOOD_LINE(49999), '' },
    -- separator, "## You" "" prompt, separator, "## bench", separator, 50,000 lines and ""
    check_lines = 1 + 3 + 1 + 1 + 1 + 50001,
    floor_batch = 64 * 1024,
  },
  big5mb = {
    prompt = 'big5mb',
    tail = { ('y'):rep(79), '' },
    check_lines = 1 + 3 + 1 + 1 + 1 + 62501,
    floor_batch = 64 * 1024,
  },
  tools = {
    prompt = 'tools',
    -- Text and tool calls interleave; complete means the turn ended (the last update is a
    -- tool_call_update of an entry above the last text).
    floor_batch = 64 * 1024,
  },
  paced = { prompt = 'paced' },
  bigdiff = { prompt = 'bigdiff', tail = { 'step 5', '' }, floor_batch = 64 * 1024 },
}

-- Children ------------------------------------------------------------------------------------

local function start_child(ui, history)
  local args = { '--clean', '--embed', '-u', root .. '/bench/init.lua' }
  if not ui then
    args[#args + 1] = '--headless'
  end
  local c = Rpc.spawn(nvim, args, { env = { ACP_ROOT = root }, cwd = tmp })
  if ui then
    c:request('nvim_ui_attach', 200, 50, { ext_linegrid = true, rgb = true })
  end
  c.chan = c:request('nvim_get_api_info')[1]
  c:lua([[return require('bench.driver').setup(...)]], agent, scenario, tmp .. '/acp.log',
    (not ui) and 200 or nil, (not ui) and 50 or nil)
  c:wait_for([[return require('bench.driver').idle(0)]], 10000)
  -- A warm-up turn: the measured turn is not the first thing this Neovim ever rendered.
  c:lua([[return require('acp').send('hello')]])
  c:wait_for([[return require('bench.driver').idle(1)]], 10000)
  if history then
    -- A long chat: a first turn that leaves `history` in the transcript.
    c:lua([[return require('acp').send(...)]], history)
    c:wait_for([[return require('bench.driver').idle(2)]], 60000)
    -- and its highlights are in place (acp.chat.markdown.freeze works in slices).
    c:wait_for([[return require('acp.chat.markdown').pending == 0]], 60000)
  end
  -- The measured turn starts from a quiet chat, as when a user types the next prompt.
  vim.wait(100)
  return c
end

--- Longest interval without a screen update between t0 and the first flush at/after t_end.
local function longest_gap(flushes, t0, t_end)
  local prev, worst = t0, 0
  for _, f in ipairs(flushes) do
    if f > t0 then
      worst = math.max(worst, f - prev)
      prev = f
      if f >= t_end then
        return worst / 1e6
      end
    end
  end
  return math.max(worst, t_end - prev) / 1e6
end

--- The screen updates of a UI child during a turn: the longest gap, and how many.
local function ui_result(c, r)
  r.flush_gap_ms = longest_gap(c.flushes, r.t0, r.t_text)
  r.flushes = 0
  r.grid_lines = c.grid_lines
  for _, f in ipairs(c.flushes) do
    if f > r.t0 and f <= r.t_text then
      r.flushes = r.flushes + 1
    end
  end
  if vim.env.BENCH_VERBOSE then
    local rel = {}
    for _, f in ipairs(c.flushes) do
      if f > r.t0 and f < r.t_text + 50e6 then
        rel[#rel + 1] = ('%.0f'):format((f - r.t0) / 1e6)
      end
    end
    r.flush_at = table.concat(rel, ' ')
  end
end

local function measured_turn(name, ui, extra)
  local c = start_child(ui, extra and extra.history)
  local opts = vim.tbl_extend('force', TURNS[name], extra or {}, { chan = c.chan, trace = vim.env.BENCH_VERBOSE ~= nil })
  c.flushes = {}
  c:lua([[return require('bench.driver').start(...)]], opts)
  local r = c:wait_notification('bench_done', 120000)[1]
  if ui then
    ui_result(c, r)
  end
  c:stop()
  if vim.env.BENCH_VERBOSE then
    log('%s', vim.inspect(r))
  end
  assert(r.text_ok, name .. ': the transcript is not the expected text')
  assert(r.errmsg == '', name .. ': an error message in the measured Neovim: ' .. tostring(r.errmsg))
  return r
end

--- The same turn played by the minimal client (bench/thin.lua) in the same kind of Neovim
--- (started as for the plugin, so Tree-sitter's queries are loaded), in the chat's window.
--- extra: history (a turn played first), lateness, highlight.
local function thin_turn(name, ui, extra)
  extra = extra or {}
  local t = TURNS[name]
  local c = start_child(ui)
  c.flushes = {}
  c:lua([[return require('bench.thin').run(...)]], {
    chan = c.chan,
    agent = agent,
    args = { '--scenario', scenario },
    cwd = tmp,
    prompts = extra.history and { extra.history, t.prompt } or { t.prompt },
    tail = t.tail,
    lateness = extra.lateness,
    highlight = extra.highlight,
  })
  local r = c:wait_notification('bench_done', 120000)[1]
  if ui then
    ui_result(c, r)
  end
  c:stop()
  if vim.env.BENCH_VERBOSE then
    log('minimal client %s: %s', name, vim.inspect(r))
  end
  assert(r.text_ok, name .. ': the minimal client did not get the expected text')
  assert(r.errmsg == '', name .. ': an error message in the minimal client: ' .. tostring(r.errmsg))
  return r
end

local function runs(name, n, fn)
  local out = {}
  for i = 1, n do
    out[i] = fn(i)
    log('%s run %d/%d done', name, i, n)
  end
  return out
end

local function med(list, key)
  local xs = {}
  for _, r in ipairs(list) do
    xs[#xs + 1] = r[key]
  end
  return median(xs)
end

--- Median CPU seconds of the threads called `name` ("nvim" is the main thread).
local function thread(list, name)
  local xs = {}
  for _, x in ipairs(list) do
    xs[#xs + 1] = x.thread_cpu_s[name] or 0
  end
  return median(xs)
end

-- Floors ----------------------------------------------------------------------------------

--- Plays `prompt` on the test agent directly (handshake written by hand) and records its
--- stdout: the exact byte stream the client receives for that turn. Also returns the turn's
--- time alone: from the prompt's write (after the session was answered) to its answer, read
--- by a bare pipe. The agent's start (reading its scenario) and the handshake are not in it.
local function record_stream(prompt)
  local stdin, stdout = uv.new_pipe(), uv.new_pipe()
  local chunks, done, session = {}, false, false
  local handle = uv.spawn(agent, { args = { '--scenario', scenario }, stdio = { stdin, stdout, nil } }, function() end)
  assert(handle, 'cannot start ' .. agent)
  local tail = ''
  stdout:read_start(function(_, data)
    if data then
      chunks[#chunks + 1] = data
      tail = (tail .. data):sub(-200)
      -- The session/new answer ({"sessionId": ...} for request 1).
      session = session or table.concat(chunks):find('"id":1,', 1, true) ~= nil
      if tail:find('"stopReason"', 1, true) then
        done = true
      end
    end
  end)
  local msgs = {
    { jsonrpc = '2.0', id = 0, method = 'initialize', params = { protocolVersion = 1, clientCapabilities = vim.empty_dict() } },
    { jsonrpc = '2.0', id = 1, method = 'session/new', params = { cwd = tmp, mcpServers = {} } },
    { jsonrpc = '2.0', id = 2, method = 'session/prompt',
      params = { sessionId = 'sess-1', prompt = { { type = 'text', text = prompt } } } },
  }
  for i = 1, 2 do
    stdin:write(vim.json.encode(msgs[i]) .. '\n')
  end
  assert(vim.wait(10000, function()
    return session
  end, 1), 'the agent did not answer session/new')
  local t0 = uv.hrtime()
  stdin:write(vim.json.encode(msgs[3]) .. '\n')
  assert(vim.wait(60000, function()
    return done
  end, 1), 'the agent did not finish ' .. prompt)
  local agent_ms = (uv.hrtime() - t0) / 1e6
  stdin:close()
  stdout:read_stop()
  stdout:close()
  handle:kill('sigterm')
  handle:close()
  return table.concat(chunks), agent_ms
end

--- Time to pipe `bytes` through `cat` into /dev/null (spawn to exit).
local function pipe_floor(bytes)
  local null = assert(uv.fs_open('/dev/null', 'w', 438))
  local stdin = uv.new_pipe()
  local exited = false
  local t0 = uv.hrtime()
  local handle = uv.spawn('cat', { stdio = { stdin, null, nil } }, function()
    exited = true
  end)
  stdin:write(bytes)
  stdin:shutdown()
  assert(vim.wait(30000, function()
    return exited
  end, 0))
  local dt = (uv.hrtime() - t0) / 1e6
  stdin:close()
  handle:close()
  uv.fs_close(null)
  return dt
end

local pipe = {}
local function pipe_row(name)
  if not pipe[name] then
    local bytes, agent_ms = record_stream(TURNS[name].prompt)
    local times, agents = {}, { agent_ms }
    for i = 1, RUNS do
      times[i] = pipe_floor(bytes)
      if i < 3 then
        local _, a = record_stream(TURNS[name].prompt)
        agents[#agents + 1] = a
      end
    end
    pipe[name] = { ms = median(times), bytes = #bytes, agent_ms = median(agents) }
  end
  return pipe[name]
end

-- Benchmarks ------------------------------------------------------------------------------

local results = {}

if want('startup') then
  results.startup = require('bench.startup').run(nvim, root)
  log('startup done')
end

if want('stream50k') then
  local rs = runs('stream50k', RUNS, function()
    return measured_turn('stream50k', false, { lateness = true })
  end)
  results.stream50k = {
    main_cpu_s = thread(rs, 'nvim'),
    core_cpu_s = thread(rs, 'acp-core'),
    agent_cpu_s = med(rs, 'agent_cpu_s'),
    text_ms = med(rs, 'text_ms'),
    late_max_ms = med(rs, 'late_max_ms'),
    late_p99_ms = med(rs, 'late_p99_ms'),
    drains = med(rs, 'drains'),
    apply_ms_max = med(rs, 'apply_ms_max'),
    floor_settext_ms = med(rs, 'floor_settext_ms'),
    pipe = pipe_row('stream50k'),
  }
  local thin = runs('stream50k minimal client', RUNS, function()
    return thin_turn('stream50k', false, { lateness = true })
  end)
  results.stream50k.thin_text_ms = med(thin, 'text_ms')
  results.stream50k.thin_late_max_ms = med(thin, 'late_max_ms')
end

if want('paced_hist') then
  -- The same paced turn in a long chat: after a first turn of 400 KiB of chat markdown.
  local rs = runs('paced_hist', RUNS, function()
    return measured_turn('paced', true, { history = 'hist400k' })
  end)
  local on = 0
  for _, x in ipairs(rs) do
    on = on + (x.highlight_on and 1 or 0)
  end
  results.paced_hist = {
    cpu_s = med(rs, 'cpu_s'),
    main_cpu_s = thread(rs, 'nvim'),
    flush_gap_ms = med(rs, 'flush_gap_ms'),
    flushes = med(rs, 'flushes'),
    done_ms = med(rs, 'done_ms'),
    drains = med(rs, 'drains'),
    bytes = med(rs, 'bytes'),
    highlight_on = on,
    runs = #rs,
  }
  local thin = runs('paced_hist minimal client', RUNS, function()
    return thin_turn('paced', true, { history = 'hist400k' })
  end)
  results.paced_hist.thin_gap_ms = med(thin, 'flush_gap_ms')
  results.paced_hist.thin_cpu_s = med(thin, 'cpu_s')
end

if want('ui') then
  local rs = runs('stream50k+ui', RUNS, function()
    return measured_turn('stream50k', true, {})
  end)
  results.ui = {
    flush_gap_ms = med(rs, 'flush_gap_ms'),
    text_ms = med(rs, 'text_ms'),
    flushes = med(rs, 'flushes'),
    drains = med(rs, 'drains'),
  }
  local thin = runs('stream50k+ui minimal client', RUNS, function()
    return thin_turn('stream50k', true, {})
  end)
  results.ui.thin_gap_ms = med(thin, 'flush_gap_ms')
end

if want('paced') then
  local text = vim.json.decode(table.concat(vim.fn.readfile(scenario), '\n')).turns[3].steps[1]
  assert(text.chunk_size == 24 and text.delay_ms == 4, 'bench.json: unexpected paced turn')
  local rs = runs('paced', RUNS, function()
    return measured_turn('paced', true, {})
  end)
  -- The same turn headless (no UI attached: no redraws to pay for).
  local headless = runs('paced headless', RUNS, function()
    return measured_turn('paced', false, {})
  end)
  -- The floor loop gets the chunks at the rate the agent really sent them.
  local interval_ms = med(rs, 'done_ms') / math.ceil(#text.message / text.chunk_size)
  local floors = runs('paced floor', RUNS, function()
    local c = start_child(true)
    c:lua([[return require('bench.driver').paced_floor(...)]],
      { chan = c.chan, text = text.message, chunk_size = text.chunk_size, interval_ms = interval_ms, frame_ms = 16 })
    local r = c:wait_notification('bench_done', 60000)[1]
    c:stop()
    assert(r.text_ok, 'paced floor: wrong text')
    assert(r.errmsg == '', 'paced floor: an error message: ' .. tostring(r.errmsg))
    return r
  end)
  results.paced = {
    flush_gap_ms = med(rs, 'flush_gap_ms'),
    main_cpu_s = thread(rs, 'nvim'),
    core_cpu_s = thread(rs, 'acp-core'),
    cpu_s = med(rs, 'cpu_s'),
    headless_cpu_s = med(headless, 'cpu_s'),
    done_ms = med(rs, 'done_ms'),
    drains = med(rs, 'drains'),
    floor_cpu_s = med(floors, 'cpu_s'),
    floor_wall_ms = med(floors, 'wall_ms'),
    floor_frames = med(floors, 'frames'),
  }
  -- The minimal client, without and with the chat's highlighting.
  local thin = runs('paced minimal client', RUNS, function()
    return thin_turn('paced', true, {})
  end)
  local thin_hl = runs('paced minimal client, highlighted', RUNS, function()
    return thin_turn('paced', true, { highlight = true })
  end)
  local p = results.paced
  p.thin_cpu_s, p.thin_gap_ms = med(thin, 'cpu_s'), med(thin, 'flush_gap_ms')
  p.thin_hl_cpu_s, p.thin_hl_gap_ms = med(thin_hl, 'cpu_s'), med(thin_hl, 'flush_gap_ms')
end

if want('big5mb') then
  local rs = runs('big5mb', RUNS, function()
    return measured_turn('big5mb', false, { lateness = true })
  end)
  results.big5mb = {
    text_ms = med(rs, 'text_ms'),
    late_max_ms = med(rs, 'late_max_ms'),
    late_p99_ms = med(rs, 'late_p99_ms'),
    peak_growth_mb = med(rs, 'peak_growth_mb'),
    peak_reset = rs[1].peak_reset,
    drains = med(rs, 'drains'),
    floor_settext_ms = med(rs, 'floor_settext_ms'),
    pipe = pipe_row('big5mb'),
  }
  local thin = runs('big5mb minimal client', RUNS, function()
    return thin_turn('big5mb', false, { lateness = true })
  end)
  results.big5mb.thin_text_ms = med(thin, 'text_ms')
  results.big5mb.thin_late_max_ms = med(thin, 'late_max_ms')
end

if want('tools') then
  local rs = runs('tools', RUNS, function()
    return measured_turn('tools', false, { lateness = true })
  end)
  results.tools = {
    text_ms = med(rs, 'text_ms'),
    late_max_ms = med(rs, 'late_max_ms'),
    drains = med(rs, 'drains'),
    floor_settext_ms = med(rs, 'floor_settext_ms'),
    pipe = pipe_row('tools'),
  }
  local thin = runs('tools minimal client', RUNS, function()
    return thin_turn('tools', false, {})
  end)
  results.tools.thin_text_ms = med(thin, 'text_ms')
end

if want('bigdiff') then
  local rs = runs('bigdiff', RUNS, function()
    return measured_turn('bigdiff', false, { lateness = true })
  end)
  results.bigdiff = { text_ms = med(rs, 'text_ms'), late_max_ms = med(rs, 'late_max_ms') }
end

if want('fs10mb') then
  local r = require('bench.fs10mb').run(nvim, root, agent, tmp, math.max(RUNS, 5))
  results.fs10mb = { rt_ms = median(r.round_trips_ms), sdk_rt_ms = median(r.sdk_round_trips_ms),
    late_max_ms = r.lateness_max_ms }
  log('fs10mb done')
end

if vim.env.BENCH_KEEP then log('files kept in %s', tmp) else vim.fn.delete(tmp, 'rf') end

-- Report ------------------------------------------------------------------------------------

local rows = {}
local function row(name, value, unit, floor, floor_name, target, met, thin)
  rows[#rows + 1] = { name = name, value = value, unit = unit, floor = floor, floor_name = floor_name,
    target = target, met = met, thin = thin }
end
local function f1(x)
  return x and ('%.1f'):format(x) or '-'
end
local function f2(x)
  return x and ('%.2f'):format(x) or '-'
end

-- Targets (doc/benchmarks.md keeps each round's numbers). `thin` is the minimal client's value
-- for the same row (bench/thin.lua), printed with the ratio result / minimal client.
local s = results.startup
if s then
  row('startup without plugin', f2(s.base_ms), 'ms')
  row('startup with plugin', f2(s.plugin_ms), 'ms')
  row('startup delta', f2(s.delta_ms), 'ms', nil, nil, '< 5', s.delta_ms < 5)
end
local r = results.stream50k
if r then
  row('stream50k: submit to complete text', f1(r.text_ms), 'ms',
    { { r.pipe.ms, 'pipe' }, { r.floor_settext_ms, 'set_text' } }, nil, '<= 130', r.text_ms <= 130, r.thin_text_ms)
  row('stream50k: 5 ms timer lateness max', f1(r.late_max_ms), 'ms', nil, nil, '<= 16', r.late_max_ms <= 16,
    r.thin_late_max_ms)
  row('stream50k: 5 ms timer lateness p99', f1(r.late_p99_ms), 'ms')
end
r = results.ui
if r then
  row('stream50k+UI: longest gap between flushes', f1(r.flush_gap_ms), 'ms', nil, nil, '<= 33', r.flush_gap_ms <= 33,
    r.thin_gap_ms)
  row('stream50k+UI: submit to complete text', f1(r.text_ms), 'ms')
end
r = results.paced
if r then
  row('paced+UI: longest gap between flushes', f1(r.flush_gap_ms), 'ms', nil, nil, '<= 33', r.flush_gap_ms <= 33,
    r.thin_hl_gap_ms)
  row('paced+UI: Neovim CPU for the turn', f2(r.cpu_s), 's', { { r.floor_cpu_s, 'frame loop' } }, nil,
    '<= 1.3x min', r.cpu_s <= 1.3 * r.thin_hl_cpu_s, r.thin_hl_cpu_s)
  row('paced: Neovim CPU for the turn, headless', f2(r.headless_cpu_s), 's', nil, nil, '<= 0.40',
    r.headless_cpu_s <= 0.4)
  row('minimal client paced+UI: CPU, highlighted', f2(r.thin_hl_cpu_s), 's')
  row('minimal client paced+UI: gap, highlighted', f1(r.thin_hl_gap_ms), 'ms')
  row('minimal client paced+UI: CPU, plain', f2(r.thin_cpu_s), 's')
  row('minimal client paced+UI: gap, plain', f1(r.thin_gap_ms), 'ms')
end
r = results.paced_hist
if r then
  local paced = results.paced and results.paced.cpu_s
  local met
  if paced then
    met = r.cpu_s <= 1.2 * paced
  end
  row('paced_hist: Neovim CPU after 400 KiB', f2(r.cpu_s), 's', paced and { { paced, 'paced' } } or nil, nil,
    '<= 1.2x', met, r.thin_cpu_s)
  row('paced_hist+UI: longest gap between flushes', f1(r.flush_gap_ms), 'ms', nil, nil, '<= 33', r.flush_gap_ms <= 33,
    r.thin_gap_ms)
  row('paced_hist: highlighting on at the end', ('%d/%d'):format(r.highlight_on, r.runs), 'runs', nil, nil, 'all',
    r.highlight_on == r.runs)
end
r = results.big5mb
if r then
  row('big5mb: submit to complete text', f1(r.text_ms), 'ms',
    { { r.pipe.ms, 'pipe' }, { r.floor_settext_ms, 'set_text' } }, nil, nil, nil, r.thin_text_ms)
  row('big5mb: 5 ms timer lateness max', f1(r.late_max_ms), 'ms', nil, nil, '<= 16', r.late_max_ms <= 16,
    r.thin_late_max_ms)
  row('big5mb: peak RSS growth', f1(r.peak_growth_mb), 'MB', nil, nil, '<= 60', r.peak_growth_mb <= 60)
end
r = results.tools
if r then
  row('tools: submit to complete text', f1(r.text_ms), 'ms',
    { { r.pipe.ms, 'pipe' }, { r.floor_settext_ms, 'set_text' } }, nil, '<= 20', r.text_ms <= 20, r.thin_text_ms)
end

r = results.bigdiff
if r then
  row('bigdiff: submit to complete text', f1(r.text_ms), 'ms')
  row('bigdiff: 5 ms timer lateness max', f1(r.late_max_ms), 'ms', nil, nil, '<= 50', r.late_max_ms <= 50)
end

r = results.fs10mb
if r then
  row('fs10mb: read round trip (loaded buffer)', f1(r.rt_ms), 'ms', nil, nil, '<= 100', r.rt_ms <= 100)
  row('fs10mb: the same, SDK test agent', f1(r.sdk_rt_ms), 'ms')
  row('fs10mb: 5 ms timer lateness max', f1(r.late_max_ms), 'ms', nil, nil, '<= 16', r.late_max_ms <= 16)
end

local out = {}
local function emit(line)
  out[#out + 1] = line
  io.stdout:write(line, '\n')
end

local function version_of(crate)
  local lock = table.concat(vim.fn.readfile(root .. '/Cargo.lock'), '\n')
  return lock:match('name = "' .. crate:gsub('%-', '%%-') .. '"\nversion = "([^"]+)"') or '?'
end
local function first_line(cmd)
  local res = vim.system(cmd, { cwd = root }):wait()
  return res.code == 0 and vim.trim((res.stdout or ''):match('[^\n]*')) or '?'
end
local cpu = uv.cpu_info()
emit(('nvim: %s'):format(first_line({ nvim, '--version' })))
emit(('rustc: %s; agent-client-protocol %s, nvim-oxi %s, mlua %s, tokio %s'):format(first_line({ 'rustc', '--version' }),
  version_of('agent-client-protocol'), version_of('nvim-oxi'), version_of('mlua'), version_of('tokio')))
emit(('machine: %d cores, %s, %s %s %s'):format(#cpu, cpu[1].model, uv.os_uname().sysname, uv.os_uname().release,
  uv.os_uname().machine))
emit(('source: %s'):format(first_line({ 'git', 'describe', '--always', '--dirty' })))
emit(('runs per benchmark: %d (medians); ratios are result / floor and result / minimal client (bench/thin.lua)'):format(RUNS))
emit('')
local hdr = '| %-44s | %10s | %-22s | %-26s | %-26s | %-11s | %-4s |'
emit(hdr:format('benchmark', 'median', 'minimal client (ratio)', 'floor 1 (ratio)', 'floor 2 (ratio)', 'target', 'met'))
emit(('|%s|%s|%s|%s|%s|%s|%s|'):format(('-'):rep(46), ('-'):rep(12), ('-'):rep(24), ('-'):rep(28), ('-'):rep(28),
  ('-'):rep(13), ('-'):rep(6)))
for _, x in ipairs(rows) do
  local v = tonumber(x.value)
  local fl = { '', '' }
  for i, f in ipairs(x.floor or {}) do
    fl[i] = ('%s %s %s (x%.1f)'):format(f[2], (f[1] < 10 and f2 or f1)(f[1]), x.unit, v / f[1])
  end
  local thin = ''
  if x.thin then
    thin = ('%s %s (x%.2f)'):format((x.unit == 's' and f2 or f1)(x.thin), x.unit, v / math.max(x.thin, 1e-3))
  end
  local met = x.met == nil and '' or (x.met and 'yes' or 'NO')
  emit(hdr:format(x.name, x.value .. ' ' .. x.unit, thin, fl[1], fl[2], x.target or '', met))
end
emit('')
local notes = {}
if results.stream50k then
  local p = results.stream50k.pipe
  notes[#notes + 1] = ("stream50k: %d drains, slowest drain %.1f ms; wire bytes %.1f MB; the test agent's turn alone (prompt to answer, read by a bare pipe) %.1f ms")
    :format(results.stream50k.drains, results.stream50k.apply_ms_max, p.bytes / 1e6, p.agent_ms)
  notes[#notes + 1] = ('stream50k CPU: main thread %.2f s, core runtime threads %.2f s, agent process %.2f s')
    :format(results.stream50k.main_cpu_s, results.stream50k.core_cpu_s, results.stream50k.agent_cpu_s)
end
if results.ui then
  notes[#notes + 1] = ('stream50k+UI: %d flushes, %d drains'):format(results.ui.flushes, results.ui.drains)
end
if results.paced then
  notes[#notes + 1] = ('paced: turn %.0f ms, %d drains (frames); CPU: main thread %.2f s, core runtime threads %.2f s; floor loop %.0f ms, %d frames')
    :format(results.paced.done_ms, results.paced.drains, results.paced.main_cpu_s, results.paced.core_cpu_s,
      results.paced.floor_wall_ms, results.paced.floor_frames or 0)
end
if results.paced_hist then
  notes[#notes + 1] = ('paced_hist: turn %.0f ms, %d drains, %d flushes; CPU: main thread %.2f s; transcript %.0f KiB')
    :format(results.paced_hist.done_ms, results.paced_hist.drains, results.paced_hist.flushes,
      results.paced_hist.main_cpu_s, results.paced_hist.bytes / 1024)
end
if results.big5mb then
  notes[#notes + 1] = ("big5mb: %d drains; the test agent's turn alone %.1f ms"):format(results.big5mb.drains,
    results.big5mb.pipe.agent_ms)
end
if results.tools then
  notes[#notes + 1] = ("tools: %d drains; the test agent's turn alone %.1f ms"):format(results.tools.drains,
    results.tools.pipe.agent_ms)
end
if results.big5mb and not results.big5mb.peak_reset then
  notes[#notes + 1] = 'big5mb: /proc/self/clear_refs was not writable, so the peak includes earlier peaks'
end
for _, n in ipairs(notes) do
  emit('- ' .. n)
end
if vim.env.BENCH_OUT and vim.env.BENCH_OUT ~= '' then
  vim.fn.writefile(out, vim.env.BENCH_OUT)
end
