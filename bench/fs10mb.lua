-- fs10mb: `fs/read_text_file` of a 10 MB file that is loaded in a buffer
-- (with an unsaved edit, so it must come from the buffer, not the disk).
-- Round trip as the scripted agent measures it, and the main loop's worst
-- lateness (a 5 ms repeating timer) while the reads are served.
local M = {}

local uv = vim.uv

function M.run(nvim, root, agent, tmp, runs)
  local Rpc = require('bench.rpc')
  local dir = tmp .. '/fs10mb'
  vim.fn.mkdir(dir .. '/.git', 'p')
  local line = ('x'):rep(99)
  local lines = {}
  for i = 1, 100000 do
    lines[i] = line
  end
  local path = dir .. '/big.txt'
  vim.fn.writefile(lines, path)
  local steps = {}
  for _ = 1, runs do
    steps[#steps + 1] = { request = { method = 'fs/read_text_file', params = { path = path } } }
  end
  local scenario = dir .. '/scenario.json'
  vim.fn.writefile({ vim.json.encode({ turns = { { match = 'read', steps = steps } } }) }, scenario)
  local log = dir .. '/agent.jsonl'
  local c = Rpc.spawn(nvim, { '--clean', '--embed', '--headless', '-u', root .. '/bench/init.lua' },
    { env = { ACP_ROOT = root }, cwd = dir })
  c:lua([[
    local agent, scenario, log, path = ...
    assert(require('acp').setup({ default_agent = 'a', log_file = vim.fn.tempname(),
      agents = { a = { cmd = agent, args = { '--scenario', scenario }, env = { ACP_TEST_AGENT_LOG = log } } } }))
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'unsaved edit' })
    vim.cmd('AcpChat')
    return true
  ]], agent, scenario, log, path)
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
  for l in io.lines(log) do
    local e = vim.json.decode(l)
    if e.event == 'client_response' then
      rt[#rt + 1] = e.elapsed_ms
      ok = ok and e.result ~= nil and e.result.content:sub(1, 13) == 'unsaved edit\n' and #e.result.content == 100000 * 100 - 100 + 13
    end
  end
  assert(ok and #rt == runs, 'fs10mb: the agent did not get the buffer text')
  local worst = 0
  for _, x in ipairs(late) do
    worst = math.max(worst, x)
  end
  return { round_trips_ms = rt, lateness_max_ms = worst }
end

return M
