-- The child half of the benchmark: runs inside the measured Neovim (`nvim --embed`), driven by
-- bench/run.lua over msgpack-RPC. Every measurement is taken here, on the child's own clock
-- (vim.uv.hrtime is CLOCK_MONOTONIC, so the parent can compare it with its flush timestamps),
-- and sent back with vim.rpcnotify(chan, 'bench_done', result) once the turn has ended.
local M = {}

local uv = vim.uv
local api = vim.api

local function ms(ns)
  return ns / 1e6
end

local function read_file(path)
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

-- Read when this module loads (Neovim's setup, before any measurement): the first
-- `vim.fn.system` of a measured turn ran the loop inside the measurement (a timer callback
-- that fired in it once failed, and its error message held the next redraw for a second).
local clk_tck = tonumber(vim.trim(vim.fn.system({ 'getconf', 'CLK_TCK' }))) or 100

--- CPU seconds (user + system, all threads) of this process, from /proc/self/stat.
function M.cpu_seconds()
  local stat = read_file('/proc/self/stat') or ''
  local rest = stat:match('^%d+ %b() (.*)$') or ''
  local f = vim.split(rest, ' ', { plain = true })
  -- rest starts at field 3 (state); utime and stime are fields 14 and 15.
  return ((tonumber(f[12]) or 0) + (tonumber(f[13]) or 0)) / clk_tck
end

--- CPU seconds per thread name (main thread: "nvim"), from /proc/self/task/*/stat.
function M.thread_cpu()
  local out = {}
  for name in vim.fs.dir('/proc/self/task') do
    local stat = read_file('/proc/self/task/' .. name .. '/stat') or ''
    local comm, rest = stat:match('^%d+ %((.-)%) (.*)$')
    if comm then
      -- schedstat's run time is in nanoseconds (stat's in clock ticks, 10 ms).
      local run_ns = tonumber((read_file('/proc/self/task/' .. name .. '/schedstat') or ''):match('^(%d+)'))
      local f = vim.split(rest, ' ', { plain = true })
      out[comm] = (out[comm] or 0)
        + (run_ns and run_ns / 1e9 or ((tonumber(f[12]) or 0) + (tonumber(f[13]) or 0)) / clk_tck)
    end
  end
  return out
end

--- CPU seconds of the agent processes.
local function agents_cpu()
  local total = 0
  for _, pid in ipairs(package.loaded.acp_core.agent_pids()) do
    local stat = read_file('/proc/' .. pid .. '/stat') or ''
    local rest = stat:match('^%d+ %b() (.*)$') or ''
    local f = vim.split(rest, ' ', { plain = true })
    total = total + ((tonumber(f[12]) or 0) + (tonumber(f[13]) or 0)) / clk_tck
  end
  return total
end

--- VmRSS and VmHWM in KiB.
function M.memory()
  local s = read_file('/proc/self/status') or ''
  return tonumber(s:match('VmRSS:%s*(%d+)')) or 0, tonumber(s:match('VmHWM:%s*(%d+)')) or 0
end

--- Resets VmHWM to the current RSS (Linux clear_refs "5"); false when not permitted.
local function reset_peak()
  local f = io.open('/proc/self/clear_refs', 'w')
  if not f then
    return false
  end
  local ok = f:write('5')
  f:close()
  return ok ~= nil
end

local function percentile(xs, p)
  if #xs == 0 then
    return 0
  end
  local s = vim.deepcopy(xs)
  table.sort(s)
  return s[math.max(1, math.ceil(#s * p))]
end

--- Opens the chat with the bench agent (the window layout of a real session: editor on the left,
--- chat on the right, input below it).
function M.setup(agent, scenario, log, columns, lines)
  if columns then
    vim.o.columns, vim.o.lines = columns, lines
  end
  vim.o.swapfile = false
  vim.o.shadafile = 'NONE'
  assert(require('acp').setup({
    default_agent = 'bench',
    agents = { bench = { cmd = agent, args = { '--scenario', scenario } } },
    log_file = log,
  }))
  -- Something to look at in the editor window, like a real session.
  api.nvim_buf_set_lines(0, 0, -1, false, vim.fn.readfile(vim.env.ACP_ROOT .. '/lua/acp/chat/view.lua'))
  vim.bo.filetype = 'lua'
  vim.cmd('AcpChat')
  return true
end

function M.view()
  return require('acp').current()
end

function M.idle(turns)
  local v = M.view()
  return v ~= nil and v.state == 'idle' and v.turns_ended >= (turns or 0)
end

--- Appends `lines` (a turn's transcript) to a fresh scratch buffer with nvim_buf_set_text, in
--- batches of about `batch_bytes`: the buffer floor of a client (no view logic, no highlighting).
local function settext_floor(lines, batch_bytes)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].undolevels = -1
  local t0 = uv.hrtime()
  local row, i, n = 0, 1, #lines
  while i <= n do
    local batch, bytes = {}, 0
    while i <= n and bytes < batch_bytes do
      batch[#batch + 1] = lines[i]
      bytes = bytes + #lines[i] + 1
      i = i + 1
    end
    batch[#batch + 1] = ''
    -- The buffer's last line is empty: the batch's first line goes there.
    api.nvim_buf_set_text(buf, row, 0, row, 0, batch)
    row = row + #batch - 1
  end
  local dt = uv.hrtime() - t0
  api.nvim_buf_delete(buf, { force = true })
  return ms(dt)
end

--- BENCH_PHASES=1: where the main thread's time goes between two drains, measured with
--- hrtime: each screen update (a decoration provider's on_start .. on_end, which holds the
--- Tree-sitter highlighter's work for that redraw), Tree-sitter parsing (LanguageTree:parse,
--- also outside redraws) and the drains themselves (view.apply, in `start`). Adds
--- redraw_ms_{total,max,n} and parse_ms_{total,max,n} to the result.
function M.phases(t0)
  local ns = api.nvim_create_namespace('bench_phases')
  local acc = { redraw = { total = 0, max = 0, n = 0 }, parse = { total = 0, max = 0, n = 0 } }
  local wins, slow = {}, {}
  local function add(k, dt)
    local a = acc[k]
    a.total, a.n = a.total + dt, a.n + 1
    a.max = math.max(a.max, dt)
  end
  local t_start
  local on = true
  api.nvim_set_decoration_provider(ns, {
    on_start = function()
      if on then
        t_start = uv.hrtime()
      end
    end,
    on_win = function(_, win, buf)
      if on then
        local key = 'win_' .. (vim.bo[buf].filetype ~= '' and vim.bo[buf].filetype or tostring(buf))
        wins[key] = (wins[key] or 0) + 1
      end
    end,
    on_line = function(_, win, buf)
      if on then
        local key = 'line_' .. (vim.bo[buf].filetype ~= '' and vim.bo[buf].filetype or tostring(buf))
        wins[key] = (wins[key] or 0) + 1
      end
    end,
    on_end = function()
      if on and t_start then
        local dt = ms(uv.hrtime() - t_start)
        if dt > 5 and t0 then
          slow[#slow + 1] = ('%.1f+%.1f'):format(ms(t_start - t0), dt)
        end
        add('redraw', dt)
        t_start = nil
      end
    end,
  })
  local LT = require('vim.treesitter.languagetree')
  local parse = LT.parse
  local depth = 0
  LT.parse = function(self, ...)
    depth = depth + 1
    local t = uv.hrtime()
    local res = { parse(self, ...) }
    depth = depth - 1
    if depth == 0 and on then
      add('parse', ms(uv.hrtime() - t))
    end
    return unpack(res)
  end
  return {
    stop = function(r)
      on = false
      LT.parse = parse
      api.nvim_set_decoration_provider(ns, {})
      for k, a in pairs(acc) do
        r[k .. '_ms_total'], r[k .. '_ms_max'], r[k .. '_n'] = a.total, a.max, a.n
      end
      r.redrawn = wins
      r.slow_redraws = slow
    end,
  }
end

--- Starts one measured turn and returns at once; sends 'bench_done' with the results later.
--- opts: chan (the parent's channel), prompt, tail (expected last lines of the buffer when the
--- text is complete), lateness (run the 5 ms timer), floor_batch (bytes per set_text batch).
function M.start(opts)
  local view = M.view()
  local core = package.loaded.acp_core
  local buf = view.buf
  local r = { prompt = opts.prompt, drains = 0, apply_ms_max = 0, apply_ms_total = 0 }
  local n0 = api.nvim_buf_line_count(buf)
  local turns0 = view.turns_ended
  local threads0
  local stats0 = core.stats()

  -- Main-loop lateness: a one-shot 5 ms libuv timer, re-armed from its own callback.
  local late, timer, expected = {}, nil, 0
  local measuring = true
  local function arm()
    expected = uv.hrtime() + 5e6
    timer:start(5, 0, function()
      late[#late + 1] = ms(uv.hrtime() - expected)
      -- Where the turn's worst waits fell (`BENCH_VERBOSE`: `late_at`, ms
      -- after submit + ms late), to line them up with `apply_at`.
      if late[#late] > 6 then
        r.late_at = r.late_at or {}
        table.insert(r.late_at, ('%.1f+%.1f'):format(ms(uv.hrtime() - r.t0), late[#late]))
      end
      if measuring then
        arm()
      end
    end)
  end

  local finish, measured, phases

  local tail = opts.tail
  view.apply = function(self, events)
    local t = uv.hrtime()
    -- BENCH_PROFILE_LAST: the drain that ends the turn, profiled (`<jit.p mode>:<file>`) or
    -- timed per function of the loaded acp.* modules (`time:<file>`, inclusive hrtime and
    -- calls; BENCH_WHO=<module.function> also counts that function's callers). `%p` in the
    -- file name: the pid and the drain's start. With BENCH_PROFILE_EVENTS=<n>: every drain
    -- of at least n events instead. BENCH_KB=1 with `time:`: KB allocated instead of time
    -- (the collector stopped during the drain).
    local prof = vim.env.BENCH_PROFILE_LAST
    if prof then
      local min_events = tonumber(vim.env.BENCH_PROFILE_EVENTS)
      prof = min_events and #events >= min_events and prof or nil
      for _, ev in ipairs(min_events and {} or events) do
        if ev.type == 'turn_ended' then
          prof = vim.env.BENCH_PROFILE_LAST
        end
      end
      local tfile = prof and prof:match('^time:(.+)$')
      if tfile then
        -- Inclusive hrtime of every function of the loaded acp.* modules in this drain.
        local acc, saved = {}, {}
        for name, mod in pairs(package.loaded) do
          if type(mod) == 'table' and name:match('^acp%.') then
            for k, f in pairs(mod) do
              if type(f) == 'function' then
                saved[#saved + 1] = { mod, k, f }
                local key = name .. '.' .. k
                mod[k] = function(...)
                  if vim.env.BENCH_WHO == key then
                    local w = debug.getinfo(2, 'Sl')
                    local wk = 'caller ' .. w.short_src .. ':' .. w.currentline
                    acc[wk] = acc[wk] or { 0, 0 }
                    acc[wk][2] = acc[wk][2] + 1
                  end
                  local kbm = vim.env.BENCH_KB
                  local t1 = kbm and collectgarbage('count') * 1e6 or uv.hrtime()
                  local res = { f(...) }
                  local a = acc[key] or { 0, 0 }
                  a[1], a[2] = a[1] + ((kbm and collectgarbage('count') * 1e6 or uv.hrtime()) - t1), a[2] + 1
                  acc[key] = a
                  return unpack(res, 1, table.maxn(res))
                end
              end
            end
          end
        end
        if vim.env.BENCH_KB then collectgarbage('stop') end
        getmetatable(self).apply(self, events)
        if vim.env.BENCH_KB then collectgarbage('restart') end
        for _, sv in ipairs(saved) do
          sv[1][sv[2]] = sv[3]
        end
        local rows = {}
        for k, a in pairs(acc) do
          rows[#rows + 1] = { k, a[1] / 1e6, a[2] }
        end
        table.sort(rows, function(x, y) return x[2] > y[2] end)
        local out = { ('drain %.2f ms, %d events'):format((uv.hrtime() - t) / 1e6, #events) }
        for i = 1, #rows do
          out[#out + 1] = ('%8.2f %s %5d  %s'):format(rows[i][2], vim.env.BENCH_KB and 'KB' or 'ms', rows[i][3], rows[i][1])
        end
        vim.fn.writefile(out, (tfile:gsub('%%p', tostring(vim.fn.getpid()) .. '-' .. tostring(t))))
        prof = nil
        goto measured
      end
      if prof then
        local mode, file = prof:match('^([^:]*):(.+)$')
        require('jit.p').start(mode, (file:gsub('%%p', tostring(vim.fn.getpid()) .. '-' .. tostring(t))))
      end
    end
    getmetatable(self).apply(self, events)
    if prof then
      require('jit.p').stop()
    end
    ::measured::
    local now = uv.hrtime()
    local dt = ms(now - t)
    r.drains = r.drains + 1
    if opts.trace then
      r.apply_at = r.apply_at or {}
      r.apply_at[#r.apply_at + 1] = ('%.1f+%.1f'):format(ms(t - r.t0), dt)
    end
    r.apply_ms_total = r.apply_ms_total + dt
    r.apply_ms_max = math.max(r.apply_ms_max, dt)
    if tail and not r.t_text then
      local n = api.nvim_buf_line_count(self.buf)
      if n >= #tail and vim.deep_equal(api.nvim_buf_get_lines(self.buf, n - #tail, n, false), tail) then
        r.t_text = now
      end
    end
    if self.turns_ended > turns0 and not r.t_done then
      r.t_done = now
      measuring = false
      measured()
      -- The checks below read and compare the whole transcript: they run once the turn's
      -- last frame is on the screen (the parent measures the gap until that flush).
      vim.defer_fn(finish, 100)
    end
  end

  -- The turn's costs, read as its last drain ends.
  measured = function()
    view.apply = nil
    if phases then
      phases.stop(r)
    end
    if timer then
      timer:stop()
      timer:close()
    end
    local cpu1 = M.cpu_seconds()
    local rss1, hwm1 = M.memory()
    r.t_text = r.t_text or r.t_done
    r.text_ms = ms(r.t_text - r.t0)
    r.done_ms = ms(r.t_done - r.t0)
    r.cpu_s = cpu1 - r.cpu0
    r.agent_cpu_s = agents_cpu() - r.agent_cpu0
    r.thread_cpu_s = {}
    for name, v in pairs(M.thread_cpu()) do
      r.thread_cpu_s[name] = v - (threads0[name] or 0)
    end
    r.rss_kb_after, r.hwm_kb = rss1, hwm1
    r.peak_growth_mb = (hwm1 - r.rss_kb_before) / 1024
    r.late_n = #late
    r.late_max_ms = 0
    for _, l in ipairs(late) do
      r.late_max_ms = math.max(r.late_max_ms, l)
    end
    r.late_p99_ms = percentile(late, 0.99)
    local stats1 = core.stats()
    r.core_drains = stats1.drains - stats0.drains
    r.core_waits = stats1.waits - stats0.waits
  end

  finish = function()
    if vim.env.BENCH_PROFILE then
      require('jit.p').stop()
    end
    -- Checks: the buffer is exactly the core's own rendering of the thread, and the turn's
    -- text is complete.
    local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
    r.text_ok = table.concat(lines, '\n') == core.markdown(view.thread)
    if tail then
      r.text_ok = r.text_ok and vim.deep_equal(vim.list_slice(lines, #lines - #tail + 1), tail)
    end
    r.lines = #lines
    r.bytes = api.nvim_buf_get_offset(buf, #lines)
    r.highlight_on = require('acp.chat.markdown').highlighted(buf)
    if opts.check_lines then
      r.text_ok = r.text_ok and #lines - n0 == opts.check_lines
    end
    -- Floor: the same text appended with batched nvim_buf_set_text in a plain loop.
    if opts.floor_batch then
      r.floor_settext_ms = settext_floor(vim.list_slice(lines, n0 + 1), opts.floor_batch)
    end
    -- An error message in the measured Neovim invalidates the run (in Insert mode the
    -- next redraw waits a second for it to be read).
    r.errmsg = vim.v.errmsg
    vim.rpcnotify(opts.chan, 'bench_done', r)
  end

  r.peak_reset = reset_peak()
  r.rss_kb_before = (M.memory())
  r.cpu0 = M.cpu_seconds()
  threads0 = M.thread_cpu()
  r.agent_cpu0 = agents_cpu()
  if vim.env.BENCH_PHASES then
    phases = M.phases(uv.hrtime())
  end
  if vim.env.BENCH_PROFILE then
    -- LuaJIT's sampling profiler over the measured turn (BENCH_PROFILE=<mode>:<file>, e.g.
    -- 'Fi1:/tmp/p.txt'): where the main thread spends its time.
    local mode, file = vim.env.BENCH_PROFILE:match('^([^:]*):(.+)$')
    require('jit.p').start(mode, (file:gsub('%%p', tostring(vim.fn.getpid()))))
  end
  r.t0 = uv.hrtime()
  -- Armed at the submit: its callbacks read r.t0.
  if opts.lateness then
    timer = uv.new_timer()
    arm()
  end
  assert(require('acp').send(opts.prompt))
  return true
end

--- The floor of the paced run: the same chunks, arriving at the same times, appended by a plain
--- loop once per 16 ms frame with nvim_buf_set_text into a buffer with the chat's Tree-sitter
--- markdown highlighting, shown in the chat window and followed to its end. Reports CPU seconds.
function M.paced_floor(opts)
  local view = M.view()
  local text, size = opts.text, opts.chunk_size
  local chunks = {}
  for i = 1, #text, size do
    chunks[#chunks + 1] = text:sub(i, i + size - 1)
  end
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].undolevels = -1
  -- The chat's own highlighting (see lua/acp/chat/markdown.lua), in the chat's window.
  assert(require('acp.chat.markdown').start(buf))
  vim.wo[view.win].winfixbuf = false
  api.nvim_win_set_buf(view.win, buf)
  local r = {}
  local sent = 0
  local frame = uv.new_timer()
  r.cpu0 = M.cpu_seconds()
  r.t0 = uv.hrtime()
  frame:start(opts.frame_ms, opts.frame_ms, vim.schedule_wrap(function()
    if frame:is_closing() then
      return
    end
    local due = math.min(#chunks, math.floor(ms(uv.hrtime() - r.t0) / opts.interval_ms) + 1)
    if due > sent then
      r.frames = (r.frames or 0) + 1
      local add = table.concat(chunks, '', sent + 1, due)
      sent = due
      local row = api.nvim_buf_line_count(buf) - 1
      local col = #api.nvim_buf_get_lines(buf, row, row + 1, true)[1]
      api.nvim_buf_set_text(buf, row, col, row, col, vim.split(add, '\n', { plain = true }))
      api.nvim_win_set_cursor(view.win, { api.nvim_buf_line_count(buf), 0 })
    end
    if sent == #chunks then
      frame:stop()
      frame:close()
      r.cpu_s = M.cpu_seconds() - r.cpu0
      r.wall_ms = ms(uv.hrtime() - r.t0)
      r.text_ok = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n') == text
      api.nvim_win_set_buf(view.win, view.buf)
      -- An error message in the measured Neovim invalidates the run (in Insert mode the
      -- next redraw waits a second for it to be read).
      r.errmsg = vim.v.errmsg
      vim.rpcnotify(opts.chan, 'bench_done', r)
    end
  end))
  return true
end

return M
