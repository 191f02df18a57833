-- Helpers for tests that run the plugin in a child Neovim against the
-- scripted test agent (target/release/acp-test-agent).
local Child = require('tests.helpers.child')
local T = require('tests.helpers.expect')

local H = {}

H.root = vim.env.ACP_ROOT
H.agent_bin = vim.env.ACP_TEST_AGENT

function H.scenario(name)
  return H.root .. '/tests/scenarios/' .. name .. '.json'
end

--- A project directory (the session root: it has a .git marker) holding
--- `files` ({ [relative path] = content }), its real path.
function H.project(files)
  local dir = vim.fn.resolve(T.tmpdir('proj'))
  for name, content in pairs(files or {}) do
    T.write_file(dir .. '/' .. name, content)
  end
  vim.fn.mkdir(dir .. '/.git', 'p')
  return dir
end

--- Starts a child with acp configured: agent `test` plays `opts.scenario`.
--- Returns the child and the paths of the core's log and the agent's log.
function H.start(opts)
  opts = opts or {}
  local dir = T.tmpdir('acp')
  local paths = { log = dir .. '/acp.log', agent_log = dir .. '/agent.jsonl', dir = dir }
  local child = Child.new({ env = opts.env, cwd = opts.cwd })
  local scenario = H.scenario(opts.scenario or 'chat')
  if opts.turns then
    -- A scenario written by the test (paths known only at run time).
    scenario = dir .. '/scenario.json'
    T.write_file(scenario, vim.json.encode({ agent = opts.agent_info or vim.empty_dict(), turns = opts.turns }))
  end
  paths.scenario = scenario
  local agent = opts.agent
    or {
      cmd = H.agent_bin,
      args = { '--scenario', scenario },
      env = { ACP_TEST_AGENT_LOG = paths.agent_log },
    }
  child:lua(
    [[
    local agent, log, extra = ...
    vim.o.columns, vim.o.lines = 160, 50
    local cfg = { default_agent = 'test', agents = { test = agent }, log_file = log }
    for k, v in pairs(extra or {}) do cfg[k] = v end
    assert(require('acp').setup(cfg))
  ]],
    { agent, paths.log, opts.config }
  )
  return child, paths
end

--- Opens the chat and waits until its session is ready.
function H.open(child, agent)
  child:cmd('AcpChat' .. (agent and (' ' .. agent) or ''))
  child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']], 5000)
end

--- Transcript lines of the current tab's chat.
function H.transcript(child)
  return child:lua([[return require('acp').current():lines()]])
end

function H.transcript_text(child)
  return table.concat(H.transcript(child), '\n')
end

--- Waits until the chat of the current tab is idle again after a turn.
function H.wait_idle(child, timeout)
  child:wait_for([[local v = require('acp').current(); return v.state == 'idle' or v.state == 'disconnected']], timeout or 5000)
end

--- Sends `text` and waits for the turn to end.
function H.turn(child, text, timeout)
  local before = child:lua([[return require('acp').current().turns_ended]])
  child:lua([[assert(require('acp').send(...))]], { text })
  child:wait_for(([[return require('acp').current().turns_ended > %d]]):format(before), timeout or 5000)
end

--- Moves into the permission float with `:AcpPermission` and waits until
--- its grace period is over (its keys answer from then on).
function H.enter_permission(child)
  child:cmd('AcpPermission')
  child:wait_for([[local p = require('acp.ask.permission')
    return p.armed and vim.api.nvim_get_current_win() == p.win]], 3000)
end

--- The agent's JSONL log as a list of tables: its complete lines only (the agent may be
--- writing the last one while the test reads; a large event is written in several pieces).
function H.agent_events(paths)
  local out = {}
  local f = io.open(paths.agent_log, 'rb')
  if not f then
    return out
  end
  local data = f:read('*a')
  f:close()
  for line in data:gmatch('([^\n]*)\n') do
    if line ~= '' then
      out[#out + 1] = vim.json.decode(line)
    end
  end
  return out
end

--- The answers the agent got from the client, in order: { method, result | error }.
function H.responses(paths)
  return H.events_of(paths, 'client_response')
end

--- The client's answers to `session/request_permission`, in order.
function H.permission_answers(paths)
  return vim.tbl_filter(function(r)
    return r.method == 'session/request_permission'
  end, H.responses(paths))
end

--- Waits until the agent got exactly `n` permission answers; the option id of
--- the `n`th.
function H.wait_permission_answer(paths, n, timeout)
  T.wait(function()
    return #H.permission_answers(paths) == n
  end, timeout or 3000)
  return H.permission_answers(paths)[n].result.outcome.optionId
end

--- One request step for a scenario.
function H.req(method, params, extra)
  local r = { method = method, params = params }
  for k, v in pairs(extra or {}) do
    r[k] = v
  end
  return { request = r }
end

function H.events_of(paths, name)
  return vim.tbl_filter(function(e)
    return e.event == name
  end, H.agent_events(paths))
end

--- True while `pid` runs. Zombies count as gone: an exited process whose
--- parent is gone may wait for a reaper that a container does not have.
function H.pid_alive(pid)
  local f = io.open('/proc/' .. pid .. '/stat', 'r')
  if not f then
    return false
  end
  local stat = f:read('*a')
  f:close()
  local state = stat:match('^%d+ %b() (%a)')
  return state ~= nil and state ~= 'Z' and state ~= 'X'
end

--- Lua for a child: replaces vim.ui.select, records each call's items (as
--- the user reads them) in `_G.asked` and picks the first item whose text
--- contains the next entry of `_G.pick`.
H.STUB_SELECT = [[
  _G.asked, _G.pick = {}, _G.pick or {}
  vim.ui.select = function(items, opts, on_choice)
    local shown = {}
    for i, it in ipairs(items) do
      shown[i] = opts.format_item and opts.format_item(it) or tostring(it)
    end
    table.insert(_G.asked, { prompt = opts.prompt, items = shown })
    local want = table.remove(_G.pick, 1)
    for i, text in ipairs(shown) do
      if want and text:find(want, 1, true) then
        return on_choice(items[i], i)
      end
    end
    on_choice(nil)
  end
]]

return H
