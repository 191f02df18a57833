-- A session's life beyond its turns: the client's system prompt (only to
-- agents that take one), per-agent defaults set before the first prompt,
-- session/close when a chat is closed for good, an idle session closed and
-- resumed by the next prompt, and updates that arrive while no turn runs.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end
]]

-- The schema's example (SystemPrompt: mode append, text content).
local PROMPT = 'Answer in French.'
local SENT = { mode = 'append', content = { { type = 'text', text = PROMPT } } }

local CLOSE_RESUME = { close = vim.empty_dict(), resume = vim.empty_dict() }

local function config_options()
  return {
    { id = 'model', name = 'Model', category = 'model', type = 'select', currentValue = 'sonnet',
      options = {
        { group = 'anthropic', name = 'Anthropic', options = { { value = 'sonnet', name = 'Sonnet' }, { value = 'opus', name = 'Opus' } } },
      } },
    { id = 'effort', name = 'Effort', category = 'thought_level', type = 'select', currentValue = 'low',
      options = { { value = 'low', name = 'Low' }, { value = 'high', name = 'High' } } },
    { id = 'web', name = 'Web search', type = 'boolean', currentValue = false },
  }
end

--- The agent's log events whose name is one of `names`, as names, in order.
local function order(paths, names)
  local out = {}
  for _, e in ipairs(H.agent_events(paths)) do
    if vim.tbl_contains(names, e.event) then
      out[#out + 1] = e.event
    end
  end
  return out
end

--- The chat's notice lines (the transcript's `ℹ` lines).
local function notices(child)
  local out = {}
  for _, l in ipairs(H.transcript(child)) do
    if l:find('^ℹ') then
      out[#out + 1] = l
    end
  end
  return table.concat(out, '\n')
end


--- An agent entry of the child's config: the scripted agent with `extra` fields.
local function agent(paths_dir, extra)
  local a = {
    cmd = H.agent_bin,
    args = { '--scenario', paths_dir .. '/scenario.json' },
    env = { ACP_TEST_AGENT_LOG = paths_dir .. '/agent.jsonl' },
  }
  for k, v in pairs(extra or {}) do
    a[k] = v
  end
  return a
end

--- Sets up the child again with agent `test` (and `others`) carrying `extra`.
local function setup_agents(child, paths, extra, global, others)
  local cfg = vim.tbl_extend('force', { default_agent = 'test', log_file = paths.log,
    agents = { test = agent(paths.dir, extra) } }, global or {})
  for name, e in pairs(others or {}) do
    cfg.agents[name] = agent(paths.dir, e)
  end
  T.eq(child:lua([[return require('acp').setup(...)]], { cfg }), true)
end

return {
  { 'system_prompt goes with session/new and session/resume to an agent that advertises sessionCapabilities.systemPrompt', function()
    local dir = H.project()
    local child, paths = H.start({ cwd = dir, config = { system_prompt = PROMPT },
      agent_info = { session_capabilities = { systemPrompt = vim.empty_dict(), resume = vim.empty_dict(),
        list = vim.empty_dict() }, sessions = { { sessionId = 's-old', cwd = dir, title = 'Old' } } },
      turns = { { steps = { { message = 'ok' } } } } })
    H.open(child)
    T.eq(H.events_of(paths, 'session/new')[1].params.systemPrompt, SENT)
    T.no_match(notices(child), 'system_prompt')
    child:lua(H.STUB_SELECT .. [[ _G.pick = { 'Old' } ]])
    child:cmd('AcpSessions')
    child:wait_for([[local v = require('acp').current(); return v.history_of == 's-old' and v.state == 'idle']], 5000)
    local resume = H.events_of(paths, 'session/resume')[1].params
    T.eq({ resume.sessionId, resume.systemPrompt }, { 's-old', SENT })
  end },

  { 'system_prompt is not sent to an agent without the capability (the chat says so); an agent\'s own replaces the global one', function()
    local child, paths = H.start({ config = { system_prompt = PROMPT }, turns = { { steps = { { message = 'ok' } } } } })
    H.open(child)
    T.eq(H.events_of(paths, 'session/new')[1].params.systemPrompt, nil)
    T.match(notices(child), 'system_prompt not sent: `test` does not take a client system prompt')
    -- Per agent: its own text, and false turns the global one off.
    local child2, paths2 = H.start({ turns = { { steps = { { message = 'ok' } } } },
      agent_info = { session_capabilities = { systemPrompt = vim.empty_dict() } } })
    setup_agents(child2, paths2, { system_prompt = 'Be terse.' }, { system_prompt = PROMPT },
      { other = { system_prompt = false } })
    H.open(child2)
    T.eq(H.events_of(paths2, 'session/new')[1].params.systemPrompt.content[1].text, 'Be terse.')
    H.open(child2, 'other')
    T.eq(#H.events_of(paths2, 'session/new'), 2)
    T.eq(H.events_of(paths2, 'session/new')[2].params.systemPrompt, nil, 'false: none')
  end },

  { 'setup() refuses an empty or blank system_prompt and malformed defaults with a clear message', function()
    local child = H.start()
    child:lua(RECORD_NOTIFY)
    T.eq(child:lua([[return require('acp').setup({ system_prompt = '  ' })]]), false)
    T.eq(child:lua([[return require('acp').setup({ agents = { test = { system_prompt = '' } } })]]), false)
    T.eq(child:lua([[return require('acp').setup({ agents = { test = { defaults = { model = 3 } } } })]]), false)
    local notes = child:lua([[return _G.notes]])
    T.match(notes[1].msg, 'system_prompt.*must not be empty')
    T.match(notes[2].msg, 'agents%.test%.system_prompt.*must not be empty')
    T.match(notes[3].msg, 'agents%.test%.defaults%.model.*string')
  end },

  { 'defaults are set right after session/new, before the first prompt, by config option, legacy mode and legacy model; again after :AcpNew', function()
    local child, paths = H.start({ agent_info = {
      config_options = config_options(),
      modes = { currentModeId = 'ask', availableModes = { { id = 'ask', name = 'Ask' }, { id = 'code', name = 'Code' } } },
    }, turns = { { steps = { { message = 'ok' } } } } })
    setup_agents(child, paths, { defaults = { model = 'Opus', mode = 'code', effort = 'high', web = true } })
    -- Sent at once: the prompt waits for the defaults.
    child:cmd('AcpChat')
    child:lua([[assert(require('acp').send('hi'))]])
    H.wait_idle(child)
    child:wait_for([[return require('acp').current().turns_ended > 0]])
    T.eq(order(paths, { 'session/new', 'set_config_option', 'set_mode', 'prompt' }),
      { 'session/new', 'set_config_option', 'set_mode', 'set_config_option', 'set_config_option', 'prompt' })
    local sets = H.events_of(paths, 'set_config_option')
    T.eq({ sets[1].params.configId, sets[1].params.value }, { 'model', 'opus' })
    T.eq({ sets[2].params.configId, sets[2].params.value }, { 'effort', 'high' })
    T.eq({ sets[3].params.configId, sets[3].params.value, sets[3].params.type }, { 'web', true, 'boolean' })
    T.eq(H.events_of(paths, 'set_mode')[1].params.modeId, 'code')
    child:wait_for([[return vim.wo[require('acp').current().win].winbar:find('Opus') ~= nil]])
    child:cmd('AcpNew')
    child:wait_for([[return require('acp').current().info.session == 'sess-2']])
    T.wait(function()
      return #H.events_of(paths, 'set_config_option') == 6
    end, 3000, ':AcpNew sets them again')
  end },

  { 'a default the agent does not offer is one line in the chat naming it and what is offered (no prompt, no popup); legacy set_model', function()
    local child, paths = H.start({ agent_info = {
      models = { currentModelId = 'm1', availableModels = { { modelId = 'm1', name = 'One' }, { modelId = 'm2', name = 'Two' } } },
    }, turns = { { steps = { { message = 'ok' } } } } })
    setup_agents(child, paths, { defaults = { model = 'Two', mode = 'plan' } })
    child:lua(RECORD_NOTIFY)
    H.open(child)
    H.turn(child, 'hi')
    T.eq(H.events_of(paths, 'set_model')[1].params.modelId, 'm2')
    T.eq(order(paths, { 'set_model', 'prompt' }), { 'set_model', 'prompt' })
    T.match(notices(child), 'Default `mode` not set: `test` has no such option')
    T.eq(child:lua([[return #_G.notes]]), 0, 'no popup')
    local child2, paths2 = H.start({ agent_info = { config_options = config_options() }, turns = {} })
    setup_agents(child2, paths2, { defaults = { model = 'gpt-9' } })
    H.open(child2)
    child2:wait_for([[return table.concat(require('acp').current():lines(), '\n'):find('gpt%-9') ~= nil]])
    T.match(notices(child2), 'Default `model` = `gpt%-9` not set: `test` does not offer it %(offered: `sonnet`, `opus`%)')
  end },

  { ':AcpClose and closing its tab send session/close when advertised (before the agent ends); hiding with :AcpChat does not', function()
    local child, paths = H.start({ agent_info = { session_capabilities = { close = vim.empty_dict() } }, turns = {} })
    H.open(child)
    child:cmd('AcpChat') -- hides it (from inside)
    child:cmd('AcpChat')
    vim.uv.sleep(200)
    T.eq(#H.events_of(paths, 'session/close'), 0, 'hiding is not closing')
    child:cmd('tabnew')
    H.open(child)
    local pid = child:lua([[return require('acp.core').thread_info(require('acp').current().thread).pid]])
    T.eq(#H.events_of(paths, 'session/new'), 2, 'a chat of its own in the new tab')
    child:cmd('tabclose')
    T.wait(function()
      return #H.events_of(paths, 'session/close') == 1
    end, 3000, 'closing the tab closes its session')
    T.eq(H.events_of(paths, 'session/close')[1].params, { sessionId = 'sess-2' })
    child:cmd('AcpClose')
    T.wait(function()
      return #H.events_of(paths, 'session/close') == 2
    end, 3000, ':AcpClose closes the session')
    T.eq(H.events_of(paths, 'session/close')[2].params, { sessionId = 'sess-1' })
    T.wait(function()
      return not H.pid_alive(pid)
    end, 5000, 'the last chat closed: the agent ended after session/close')
    -- Without the capability: no session/close.
    local child2, paths2 = H.start({ turns = {} })
    H.open(child2)
    child2:cmd('AcpClose')
    vim.uv.sleep(300)
    T.eq(#H.events_of(paths2, 'session/close'), 0)
  end },

  { 'an idle session is closed in the agent and resumed quietly by the next prompt (same cwd, MCP servers, system prompt)', function()
    local dir = H.project()
    local child, paths = H.start({ cwd = dir, config = { system_prompt = PROMPT, timeouts = { idle_close = 300 },
      mcp_servers = { { name = 'files', command = '/bin/true' } } },
      agent_info = { session_capabilities = vim.tbl_extend('force', CLOSE_RESUME, { systemPrompt = vim.empty_dict() }) },
      turns = { { steps = { { message = 'answer' } } } } })
    H.open(child)
    H.turn(child, 'first')
    T.wait(function()
      return #H.events_of(paths, 'session/close') == 1
    end, 3000, 'the idle session was closed')
    T.eq(H.events_of(paths, 'session/close')[1].params, { sessionId = 'sess-1' })
    local before = H.transcript_text(child)
    H.turn(child, 'second')
    T.eq(order(paths, { 'session/new', 'prompt', 'session/close', 'session/resume' }),
      { 'session/new', 'prompt', 'session/close', 'session/resume', 'prompt' })
    local resume = H.events_of(paths, 'session/resume')[1].params
    T.eq({ resume.sessionId, resume.cwd, resume.mcpServers[1].name, resume.systemPrompt }, { 'sess-1', dir, 'files', SENT })
    T.eq(H.events_of(paths, 'prompt')[2].sessionId, 'sess-1')
    T.eq(#H.events_of(paths, 'session/new'), 1)
    local text = H.transcript_text(child)
    T.eq(text:sub(1, #before), before)
    T.eq(notices(child), '', 'nothing said about it')
    T.match(text, 'second\n\n## test\n\nanswer$')
  end },

  { 'no idle close without close and resume advertised, or with idle_close = 0', function()
    local child, paths = H.start({ config = { timeouts = { idle_close = 200 } },
      agent_info = { session_capabilities = { close = vim.empty_dict() } }, turns = {} })
    H.open(child)
    H.turn(child, 'hi')
    local child2, paths2 = H.start({ config = { timeouts = { idle_close = 0 } },
      agent_info = { session_capabilities = CLOSE_RESUME }, turns = {} })
    H.open(child2)
    H.turn(child2, 'hi')
    vim.uv.sleep(600)
    T.eq(#H.events_of(paths, 'session/close'), 0)
    T.eq(#H.events_of(paths2, 'session/close'), 0)
  end },

  { 'updates that arrive while no turn runs (after the answer, between turns, after an idle close) are shown, not dropped', function()
    local child = H.start({ config = { timeouts = { idle_close = 300 } },
      agent_info = { session_capabilities = CLOSE_RESUME },
      turns = { { steps = { { message = 'answer' } }, after = {
        { sleep_ms = 100 },
        { update = { sessionUpdate = 'agent_message_chunk', content = { type = 'text', text = 'a note after the turn' } } },
        { update = { sessionUpdate = 'tool_call', toolCallId = 'bg1', title = 'Background index', kind = 'other', status = 'completed' } },
        { update = { sessionUpdate = 'session_info_update', title = 'Indexed project' } },
        { sleep_ms = 700 },
        { update = { sessionUpdate = 'agent_message_chunk', content = { type = 'text', text = 'after the idle close' } } },
      } } } })
    H.open(child)
    H.turn(child, 'go')
    child:wait_for([[return table.concat(require('acp').current():lines(), '\n'):find('after the idle close') ~= nil]], 3000)
    local text = H.transcript_text(child)
    T.match(text, 'a note after the turn')
    T.match(text, 'Background index')
    T.eq(child:lua([[return require('acp').current().info.title]]), 'Indexed project')
  end },

  { 'a turn the agent ended itself with "cancelled" (a rejected permission): what it sends after that answer is shown', function()
    local child = H.start({ turns = { { match = 'edit', steps = { { message = 'I wanted to edit' }, { stop = 'cancelled' } },
      after = {
        { sleep_ms = 100 },
        { update = { sessionUpdate = 'agent_message_chunk', content = { type = 'text', text = 'Fine, I left the file alone.' } } },
      } } } })
    H.open(child)
    H.turn(child, 'edit it')
    child:wait_for([[return table.concat(require('acp').current():lines(), '\n'):find('left the file alone') ~= nil]], 3000)
    local lines = H.transcript(child)
    T.eq(lines[#lines], 'Fine, I left the file alone.')
    T.match(H.transcript_text(child), 'Cancelled by the agent')
  end },
}
