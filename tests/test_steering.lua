-- Steering: claude-agent-acp (and the TypeScript Codex adapter) advertise
-- `_meta.steering`; a message typed during a turn can go into that turn with
-- `_session/steering` (`:AcpSend! {text}`, `chat.keys.steer`), not as a second
-- `session/prompt`. The three outcomes: `injected` (shown as steered into the
-- running turn), `startedNewTurn`, `promptRequired` (a normal prompt); an
-- error is a chat line and the message is queued. Without the capability the
-- queue works as before and `:AcpSend!` says steering is not offered.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

-- claude-agent-acp 0.100's `initialize` answer carries this top-level `_meta`.
local CLAUDE_META = { steering = { supported = true } }

local SLOW_TURN = {
  match = 'go',
  steps = { { message = 'working on it\n' }, { sleep_ms = 1500 }, { message = 'finished\n' } },
}

local function start(agent_info, config)
  local child, paths = H.start({ turns = { SLOW_TURN }, agent_info = agent_info, config = config })
  H.open(child)
  child:lua([[_G.notes = {}
    local orig = vim.notify
    vim.notify = function(msg, level, o) table.insert(_G.notes, { msg = msg, level = level }) end]])
  return child, paths
end

local function running(child)
  child:lua([[assert(require('acp').send('go'))]])
  child:wait_for([[local v = require('acp').current()
    return v.state == 'running' and table.concat(v:lines(), '\n'):find('working on it') ~= nil]], 5000)
end

local function prompts(paths)
  return vim.tbl_map(function(e)
    return e.prompt[1].text
  end, H.events_of(paths, 'prompt'))
end

local function notes(child)
  return table.concat(child:lua([[return vim.tbl_map(function(n) return n.msg end, _G.notes)]]), '\n')
end

return {
  { ':AcpSend! during a turn steers it: one _session/steering, shown as steered into the running turn, no second prompt', function()
    local child, paths = start({ init_meta = CLAUDE_META })
    local screen = Screen.attach(child, 90, 40)
    running(child)
    child:cmd('AcpSend! also check the docs')
    H.wait_idle(child)
    local steers = H.events_of(paths, 'steering')
    T.eq(#steers, 1)
    T.eq(steers[1].params.prompt, { { type = 'text', text = 'also check the docs' } })
    T.eq(steers[1].params._meta, { steering = { idleBehavior = 'promptRequired' } })
    T.eq(prompts(paths), { 'go' }, 'no second session/prompt')
    local text = H.transcript_text(child)
    T.match(text, 'also check the docs\n*ℹ ↪ steered into the running turn')
    T.match(text, 'steered: also check the docs')
    T.eq(child:lua([[return #require('acp').current().queue]]), 0)
    T.wait(function()
      return table.concat(screen:shot().text, '\n'):find('↪ steered into the running turn', 1, true) ~= nil
    end, 3000)
  end },

  { 'the chat key steers from the input; startedNewTurn is shown as a new turn of the agent', function()
    local child, paths = start({ init_meta = CLAUDE_META, steering_outcome = 'startedNewTurn' })
    running(child)
    child:lua([[local v = require('acp').current()
      vim.api.nvim_set_current_win(v.input_win)
      vim.api.nvim_buf_set_lines(v.input, 0, -1, false, { 'and the tests' })]])
    child:feed('<M-s>')
    child:wait_for([[return #vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)[1] == 0]], 3000)
    H.wait_idle(child)
    T.eq(#H.events_of(paths, 'steering'), 1)
    T.eq(prompts(paths), { 'go' })
    T.match(H.transcript_text(child), 'and the tests\n*ℹ ↪ the agent started a new turn with this message')
  end },

  { 'promptRequired: the message goes as a normal prompt when the turn ends', function()
    local child, paths = start({ init_meta = CLAUDE_META, steering_outcome = 'promptRequired' })
    running(child)
    child:cmd('AcpSend! then the changelog')
    child:wait_for([[return #require('acp').current().queue == 1]], 3000)
    T.wait(function()
      return #prompts(paths) == 2
    end, 6000)
    H.wait_idle(child)
    T.eq(prompts(paths), { 'go', 'then the changelog' })
    T.no_match(H.transcript_text(child), 'steered')
  end },

  { 'a steering error is a line in the chat and the message is queued, not lost', function()
    local child, paths = start({ init_meta = CLAUDE_META, steering_error = 'turn is closing' })
    running(child)
    child:cmd('AcpSend! one more thing')
    child:wait_for([[return table.concat(require('acp').current():lines(), '\n'):find('steering failed', 1, true) ~= nil]], 3000)
    T.match(H.transcript_text(child), 'steering failed %(.*turn is closing.*%): the message is queued')
    T.wait(function()
      return #prompts(paths) == 2
    end, 6000)
    T.eq(prompts(paths), { 'go', 'one more thing' })
  end },

  { 'without steering, :AcpSend! says it is not offered and queues', function()
    local child, paths = start(nil)
    running(child)
    child:cmd('AcpSend! later please')
    T.match(notes(child), 'does not offer steering: the message is queued')
    T.eq(child:lua([[return #require('acp').current().queue]]), 1)
    T.eq(#H.events_of(paths, 'steering'), 0)
    T.wait(function()
      return #prompts(paths) == 2
    end, 6000)
    T.eq(prompts(paths), { 'go', 'later please' })
  end },

  { "_meta.steering is not prompt queueing: with queue = 'agent' a plain send waits for the turn", function()
    -- Advertised in agentCapabilities._meta, as the TypeScript Codex adapter does.
    local child, paths = start({ meta = { steering = { supported = true } } }, { queue = 'agent' })
    running(child)
    child:lua([[assert(require('acp').send('queued one'))]])
    T.eq(child:lua([[return #require('acp').current().queue]]), 1, 'waits in the queue')
    child:settle()
    T.eq(prompts(paths), { 'go' }, 'no second session/prompt during the turn')
    T.wait(function()
      return #prompts(paths) == 2
    end, 6000)
  end },
}
