-- fs10mb: `fs/read_text_file` of a 10 MB file that is loaded in a buffer
-- (with an unsaved edit, so it must come from the buffer, not the disk).
-- Round trip as the agent measures it, and the main loop's worst lateness
-- (a 5 ms repeating timer) while the reads are served. Two agents:
-- * `plain`: tests/helpers/raw_agent.py, which reads each answer with one
--   plain json.loads (no SDK): the client's round trip, the target's row;
-- * `sdk`: the scripted test agent, whose ACP SDK parses every message
--   several times (its own cost shows in this row).
local M = {}

local uv = vim.uv

local LINES, LINE = 100000, ('x'):rep(99)

--- One Neovim with the file loaded and edited, a chat on `agent_spec`;
--- the agent makes `runs` reads when it gets the prompt 'read'.
local function measure(nvim, root, dir, path, agent_spec, log, runs)
  local Rpc = require('bench.rpc')
  local c = Rpc.spawn(nvim, { '--clean', '--embed', '--headless', '-u', root .. '/bench/init.lua' },
    { env = { ACP_ROOT = root }, cwd = dir })
  c:lua([[
    local spec, path, core_log = ...
    assert(require('acp').setup({ default_agent = 'a', log_file = core_log, agents = { a = spec } }))
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'unsaved edit' })
    vim.cmd('AcpChat')
    return true
  ]], agent_spec, path, log .. '.core.log')
  c:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']], 10000)
  c:lua([[
    _G.late = {}
    local last = vim.uv.hrtime()
    _G.tick = vim.uv.new_timer()
    _G.tick:start(5, 5, function()
      local now = vim.uv.hrtime()
      _G.late[#_G.late + 1] = (now - last) / 1e6 - 5
      last = now
    end)
    require('acp').send('read')
    return true
  ]])
  c:wait_for([[return require('acp').current().turns_ended == 1]], 60000)
  local late = c:lua([[_G.tick:stop(); return _G.late]])
  c:stop()
  local rt, ok = {}, true
  local want_len = LINES * (#LINE + 1) - (#LINE + 1) + #'unsaved edit\n'
  for l in io.lines(log) do
    local e = vim.json.decode(l)
    if e.event == 'client_response' then
      rt[#rt + 1] = e.elapsed_ms
      ok = ok and e.result ~= nil and e.result.content:sub(1, 13) == 'unsaved edit\n' and #e.result.content == want_len
    end
  end
  assert(ok and #rt == runs, 'fs10mb: the agent did not get the buffer text')
  local worst = 0
  for _, x in ipairs(late) do
    worst = math.max(worst, x)
  end
  return rt, worst
end

function M.run(nvim, root, agent, tmp, runs)
  local dir = tmp .. '/fs10mb'
  vim.fn.mkdir(dir .. '/.git', 'p')
  local lines = {}
  for i = 1, LINES do
    lines[i] = LINE
  end
  local path = dir .. '/big.txt'
  vim.fn.writefile(lines, path)
  local read = { method = 'fs/read_text_file', params = { path = path } }

  -- The scripted test agent (SDK).
  local steps = {}
  for _ = 1, runs do
    steps[#steps + 1] = { request = read }
  end
  local scenario = dir .. '/scenario.json'
  vim.fn.writefile({ vim.json.encode({ turns = { { match = 'read', steps = steps } } }) }, scenario)
  local sdk_log = dir .. '/sdk-agent.jsonl'
  local sdk_rt, sdk_late = measure(nvim, root, dir, path,
    { cmd = agent, args = { '--scenario', scenario }, env = { ACP_TEST_AGENT_LOG = sdk_log } }, sdk_log, runs)

  -- The plain JSON reader.
  local plan_steps = {}
  for _ = 1, runs do
    plan_steps[#plan_steps + 1] = { request = read.method, params = read.params }
  end
  local plan = dir .. '/plan.json'
  vim.fn.writefile({ vim.json.encode({ steps = plan_steps }) }, plan)
  local plain_log = dir .. '/plain-agent.jsonl'
  local python = vim.fn.exepath('python3')
  assert(python ~= '', 'fs10mb: needs python3 for the plain JSON reader agent')
  local plain_rt, plain_late = measure(nvim, root, dir, path,
    { cmd = python, args = { root .. '/tests/helpers/raw_agent.py', plan, plain_log } }, plain_log, runs)

  return {
    round_trips_ms = plain_rt,
    lateness_max_ms = math.max(plain_late, sdk_late),
    sdk_round_trips_ms = sdk_rt,
  }
end

return M
