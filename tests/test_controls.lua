-- Agent controls: config options (select, grouped, boolean), legacy models
-- and modes, usage in the winbar and status(), the prompt queue, two chats
-- streaming at once, elicitation, sign-in (terminal, env_var) and logout.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end
]]

local WINBAR = [[return vim.wo[require('acp').current().win].winbar]]

local function config_options()
  return {
    { id = 'mode', name = 'Mode', category = 'mode', type = 'select', currentValue = 'ask',
      options = { { value = 'ask', name = 'Ask' }, { value = 'auto', name = 'Auto' } } },
    { id = 'model', name = 'Model', category = 'model', type = 'select', currentValue = 'sonnet',
      options = {
        { group = 'anthropic', name = 'Anthropic', options = { { value = 'sonnet', name = 'Sonnet 4.5' }, { value = 'opus', name = 'Opus 4.1' } } },
        { group = 'openai', name = 'OpenAI', options = { { value = 'gpt5', name = 'GPT-5', description = 'Big' } } },
      } },
    { id = 'effort', name = 'Effort', category = 'thought_level', type = 'select', currentValue = 'high',
      options = { { value = 'low', name = 'Low' }, { value = 'high', name = 'High' } } },
    { id = 'web', name = 'Web search', type = 'boolean', currentValue = false },
  }
end

local LEGACY_MODELS = {
  currentModelId = 'm1',
  availableModels = { { modelId = 'm1', name = 'Model One' }, { modelId = 'm2', name = 'Model Two', description = 'Faster' } },
}

local STUB_SELECT = H.STUB_SELECT

--- A running turn with "one" and "two" queued behind it, and :AcpQueue
--- asked: its pickers are recorded in _G.picks (notifications in _G.notes).
local function queue_asked()
  local child, paths = H.start({ turns = {
    { match = 'first', steps = { { wait_cancel = true } } },
    { match = 'one', steps = { { wait_cancel = true } } },
  } })
  H.open(child)
  child:lua([[require('acp').send('first')]])
  child:wait_for([[return require('acp').current().state == 'running']])
  child:lua(RECORD_NOTIFY)
  child:lua([[
    require('acp').send('one'); require('acp').send('two')
    _G.picks = {}
    vim.ui.select = function(items, opts, cb) table.insert(_G.picks, { items = items, opts = opts, cb = cb }) end
  ]])
  child:cmd('AcpQueue')
  return child, paths
end

--- The running turn ends (cancelled): the first queued message ("one") is
--- sent, "two" stays queued.
local function first_queued_goes(child, paths)
  child:lua([[require('acp').cancel()]])
  child:wait_for(([[
    for line in io.lines(%q) do if line:find('"one"', 1, true) then return true end end
  ]]):format(paths.agent_log), 5000)
  child:wait_for([[return #require('acp').current().queue == 1]])
end

return {
  { 'an agent sending both models and configOptions: config options win, nothing shows twice', function()
    local child, paths = H.start({ agent_info = {
      config_options = config_options(),
      models = LEGACY_MODELS,
      modes = { currentModeId = 'legacy', availableModes = { { id = 'legacy', name = 'Legacy mode' } } },
    }, turns = {} })
    H.open(child)
    local init = H.events_of(paths, 'initialize')[1].params.clientCapabilities
    T.eq(init.session.configOptions.boolean, {}, 'the boolean capability is advertised')
    T.eq(init.elicitation, { form = {}, url = {} })
    T.eq(init.auth.terminal, true)
    local bar = child:lua(WINBAR)
    T.match(bar, '%[Ask%] · Sonnet 4%.5 · High')
    T.no_match(bar, 'Model One', 'the legacy model is not shown')
    T.no_match(bar, 'Legacy mode', 'the legacy mode is not shown')
    -- :AcpModel goes through the config option, never session/set_model.
    child:cmd('AcpModel opus')
    child:wait_for([[return require('acp').status().model == 'Opus 4.1']])
    T.eq(H.events_of(paths, 'set_config_option')[1].params, { sessionId = 'sess-1', configId = 'model', value = 'opus' })
    T.eq(#H.events_of(paths, 'set_model'), 0)
    T.match(child:lua(WINBAR), '· Opus 4%.1 ·')
    -- Grouped values are listed with their group; the picker is vim.ui.select.
    child:lua(STUB_SELECT .. [[ _G.pick = { 'GPT-5' } ]])
    child:cmd('AcpModel')
    child:wait_for([[return require('acp').status().model == 'GPT-5']])
    T.eq(child:lua('return _G.asked[1].items'), { 'Sonnet 4.5 [Anthropic]', 'Opus 4.1 [Anthropic]  (current)', 'GPT-5: Big [OpenAI]' })
    -- :AcpMode uses the mode option; :AcpConfig lists every option, a boolean toggles.
    child:cmd('AcpMode auto')
    child:wait_for([[return require('acp').status().mode == 'Auto']])
    T.eq(#H.events_of(paths, 'set_mode'), 0, 'no legacy session/set_mode')
    child:lua([[_G.pick = { 'Web search', 'on' }]])
    child:cmd('AcpConfig')
    child:wait_for([[return require('acp.agents.controls').options(require('acp').current())[4].currentValue == true]])
    T.eq(child:lua('return _G.asked[2].items'), { 'Mode: Auto', 'Model: GPT-5', 'Effort: High', 'Web search: off' })
    local sets = H.events_of(paths, 'set_config_option')
    T.eq(sets[#sets].params, { sessionId = 'sess-1', configId = 'web', type = 'boolean', value = true })
    child:cmd('AcpConfig effort low')
    child:wait_for([[return require('acp').status().effort == 'Low']])
    -- A value the option does not have is refused here, nothing is sent.
    child:lua(RECORD_NOTIFY)
    local before = #H.events_of(paths, 'set_config_option')
    child:cmd('AcpConfig effort extreme')
    T.match(child:lua('return _G.notes[1].msg'), 'unknown effort "extreme" %(values: low, high%)')
    T.eq(#H.events_of(paths, 'set_config_option'), before)
    T.eq(child:lua([[return vim.fn.getcompletion('AcpModel ', 'cmdline')]]), { 'sonnet', 'opus', 'gpt5' })
  end },

  { 'an agent sending only legacy models: :AcpModel uses session/set_model', function()
    local child, paths = H.start({ agent_info = { models = LEGACY_MODELS }, turns = {} })
    H.open(child)
    T.match(child:lua(WINBAR), ' · Model One%%<$')
    child:cmd('AcpModel m2')
    child:wait_for([[return require('acp').status().model == 'Model Two']])
    T.eq(H.events_of(paths, 'set_model')[1].params, { sessionId = 'sess-1', modelId = 'm2' })
    T.match(child:lua(WINBAR), ' · Model Two%%<$')
    child:lua(RECORD_NOTIFY)
    child:cmd('AcpModel m9')
    T.match(child:lua('return _G.notes[1].msg'), 'unknown model "m9" %(models: m1, m2%)')
    T.eq(#H.events_of(paths, 'set_model'), 1)
    -- No config options at all: :AcpConfig says so.
    child:cmd('AcpConfig')
    T.match(child:lua('return _G.notes[2].msg'), 'offers no config options')
  end },

  { 'a config change made by the agent mid-turn updates the winbar while the turn runs', function()
    local changed = config_options()
    changed[2].currentValue = 'opus'
    local child = H.start({ agent_info = { config_options = config_options() }, turns = { { match = 'go', steps = {
      { message = 'Switching.' },
      { update = { sessionUpdate = 'config_option_update', configOptions = changed } },
      { sleep_ms = 400 },
      { message = ' Done.' },
    } } } })
    H.open(child)
    child:lua([[require('acp').send('go')]])
    child:wait_for([[return require('acp').status().model == 'Opus 4.1']])
    T.eq(child:lua([[return require('acp').current().state]]), 'running')
    T.match(child:lua(WINBAR), 'working… · %[Ask%] · Opus 4%.1')
    H.wait_idle(child)
    T.match(H.transcript_text(child), 'Switching%. Done%.$')
  end },

  { 'usage in the winbar: context percent, cost and the turn tokens; status() for statuslines', function()
    local child = H.start({ turns = { { match = 'go', usage = { totalTokens = 1534, inputTokens = 1200, outputTokens = 334 }, steps = {
      { update = { sessionUpdate = 'usage_update', used = 50000, size = 200000, cost = { amount = 0.123, currency = 'USD' } } },
      { message = 'ok' },
    } } } })
    H.open(child)
    T.eq(child:lua([[return require('acp').status().usage]]), {})
    H.turn(child, 'go')
    T.match(child:lua(WINBAR), 'ctx 25%%%% · %$0%.12 · 1%.5k tok')
    local st = child:lua([[return require('acp').status()]])
    T.eq(st.usage, { used = 50000, size = 200000, percent = 25, cost = { amount = 0.123, currency = 'USD' }, tokens = 1534 })
    T.eq({ st.agent, st.state, st.session_id, st.queued }, { 'test', 'idle', 'sess-1', 0 })
  end },

  { 'the prompt queue: a message sent during a turn waits, goes after end_turn; a dropped one never goes', function()
    local child, paths = H.start({ turns = {
      { match = 'first', steps = { { message = 'working on it', chunk_size = 4, delay_ms = 60 } } },
      { match = 'second', steps = { { message = 'second answer' } } },
    } })
    H.open(child)
    child:lua([[require('acp').send('first')]])
    child:wait_for([[return require('acp').current().state == 'running']])
    child:lua(RECORD_NOTIFY)
    child:lua([[
      local view = require('acp').current()
      vim.api.nvim_buf_set_lines(view.input, 0, -1, false, { 'second' })
      view:submit()
      assert(require('acp').send('third'))
    ]])
    -- Listed at the top of the running turn's status area.
    T.eq(child:lua([[return require('acp.prompt.queue').lines(require('acp').current())]]), {
      '⏳ queued 1: second', '⏳ queued 2: third' })
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { '' }, 'the input was taken')
    T.eq(child:lua([[return require('acp').status().queued]]), 2)
    child:cmd('AcpQueue drop 2')
    T.eq(child:lua('return #_G.notes'), 0, 'nothing was refused')
    child:wait_for([[return require('acp').current().turns_ended == 2]], 8000)
    local prompts = vim.tbl_map(function(e)
      return e.prompt[1].text
    end, H.events_of(paths, 'prompt'))
    T.eq(prompts, { 'first', 'second' })
    T.match(H.transcript_text(child), 'working on it\n\n## You\n\nsecond\n\n## test\n\nsecond answer$')
    T.eq(child:lua([[return require('acp.prompt.queue').lines(require('acp').current())]]), {})
  end },

  { 'a cancel pressed before the prompt went out (the agent still starting): the prompt never goes, the turn ends cancelled, the next message runs', function()
    local gate = T.tmpdir('gate') .. '/session-new-may-answer'
    local child, paths = H.start({ agent_info = { session_new_after_file = gate }, turns = {
      { match = 'long', steps = { { message = 'the cancelled turn ran anyway' }, { wait_cancel = true } } },
    } })
    -- The chat opens; its session is not ready while the agent holds session/new.
    child:cmd('AcpChat')
    child:wait_for([[return require('acp').current() ~= nil]])
    child:lua([[require('acp').send('long one')]])
    child:wait_for([[return require('acp').current().state == 'running']])
    child:cmd('AcpCancel')
    -- The agent answers session/new only now, after the cancel.
    vim.fn.writefile({}, gate)
    child:wait_for([[return require('acp').current().turns_ended == 1]], 5000)
    -- The next message is the first prompt the agent sees.
    child:wait_for([[return require('acp').current().state == 'idle']], 5000)
    child:lua([[require('acp').send('next')]])
    child:wait_for([[return require('acp').current().turns_ended == 2]], 5000)
    local prompts = vim.tbl_map(function(e)
      return e.prompt[1].text
    end, H.events_of(paths, 'prompt'))
    T.eq(prompts, { 'next' }, 'the cancelled prompt never reached the agent')
    T.no_match(H.transcript_text(child), 'ran anyway')
    T.match(H.transcript_text(child), 'echo: next$')
  end },

  { 'the queue: <C-c> cancels the turn, not the queue; edit brings a message back; a refused send has no traceback', function()
    local child, paths = H.start({ turns = {
      { match = 'long', steps = { { wait_cancel = true } } },
    } })
    H.open(child)
    child:lua([[require('acp').send('long one')]])
    child:wait_for([[return require('acp').current().state == 'running']])
    child:lua([[require('acp').send('edit me'); require('acp').send('after cancel')]])
    -- Edit: back into the input, above what is typed there.
    child:lua([[vim.api.nvim_buf_set_lines(require('acp').current().input, 0, -1, false, { 'typed' })]])
    child:cmd('AcpQueue edit 1')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { 'edit me', 'typed' })
    T.eq(child:lua([[return require('acp.prompt.queue').lines(require('acp').current())[1] ]]), '⏳ queued 1: after cancel')
    -- The key, pressed in the chat input (not :AcpCancel): it ends the running turn only.
    child:lua([[vim.api.nvim_set_current_win(require('acp').current().input_win)]])
    child:settle()
    child:feed('<C-c>')
    child:wait_for([[return require('acp').current().turns_ended == 1]], 5000)
    T.eq(#H.events_of(paths, 'cancel'), 1)
    child:wait_for([[return require('acp').current().turns_ended == 2]], 5000)
    local prompts = vim.tbl_map(function(e)
      return e.prompt[1].text
    end, H.events_of(paths, 'prompt'))
    T.eq(prompts, { 'long one', 'after cancel' }, 'the queued message was sent after the cancel')
    T.eq(#H.events_of(paths, 'cancel'), 1)
    T.match(H.transcript_text(child), 'echo: after cancel$')
    T.eq(child:lua([[return require('acp.prompt.queue').lines(require('acp').current())]]), {})
    -- A send the core refuses (forced past the queue here) is one line, never a traceback.
    child:lua([[require('acp').send('long two')]])
    child:wait_for([[return require('acp').current().state == 'running']])
    child:lua(RECORD_NOTIFY)
    T.eq(child:lua([[
      local queue = require('acp.prompt.queue')
      local route = queue.route
      queue.route = function() return 'send' end
      local ok = require('acp').current():send('refused')
      queue.route = route
      return ok
    ]]), false)
    local note = child:lua('return _G.notes[1]')
    T.eq(note.msg, 'acp.nvim: the agent is still answering: the message waits in the queue')
    T.eq(note.level, vim.log.levels.WARN)
    child:cmd('AcpCancel')
    H.wait_idle(child)
  end },

  { 'queue = "agent": an agent that queues prompts itself gets the message at once', function()
    local child, paths = H.start({
      config = { queue = 'agent' },
      agent_info = { meta = { claudeCode = { promptQueueing = true } } },
      turns = {
        { match = 'first', steps = { { message = 'one', chunk_size = 1, delay_ms = 80 } } },
        { match = 'steer', steps = { { message = 'two' } } },
      },
    })
    H.open(child)
    child:lua([[require('acp').send('first')]])
    child:wait_for([[return require('acp').current().state == 'running']])
    child:lua([[assert(require('acp').send('steer'))]])
    child:wait_for(([[
      for line in io.lines(%q) do if line:find('steer', 1, true) then return true end end
    ]]):format(paths.agent_log), 3000)
    T.eq(child:lua([[return #require('acp').current().queue]]), 0, 'not kept in the client queue')
    T.eq(child:lua([[return require('acp').current().state]]), 'running', 'sent while the first turn ran')
    child:wait_for([[return require('acp').current().state == 'idle']], 5000)
    local text = H.transcript_text(child)
    T.match(text, '## You\n\nfirst')
    T.match(text, '## You\n\nsteer')
    T.match(text, 'two')
  end },

  { ':AcpQueue picks a message, not a position: the turn ends between pick and edit, the picked one is edited', function()
    local child, paths = queue_asked()
    -- The user picks the second message ("two") ...
    child:lua([[local p = _G.picks[1]; p.cb(p.items[2], 2)]])
    T.eq(child:lua('return #_G.picks'), 2, 'asked what to do with it')
    -- ... the turn ends meanwhile and the first queued message ("one") is sent ...
    first_queued_goes(child, paths)
    -- ... then "edit": "two" comes back into the input, nothing else changes.
    child:lua([[_G.picks[2].cb('edit', 1)]])
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { 'two' })
    T.eq(child:lua([[return #require('acp').current().queue]]), 0)
    T.eq(child:lua('return _G.notes'), {}, 'nothing refused')
    child:cmd('AcpCancel')
    H.wait_idle(child)
  end },

  { ':AcpQueue: a picked message sent before the action says so plainly; nothing else is edited or dropped', function()
    local child, paths = queue_asked()
    T.eq(child:lua([[local p = _G.picks[1]; return vim.tbl_map(p.opts.format_item, p.items)]]), { 'one', 'two' },
      'entries are not numbered twice (vim.ui.select numbers them)')
    child:lua([[local p = _G.picks[1]; p.cb(p.items[1], 1)]])
    first_queued_goes(child, paths)
    child:lua([[_G.picks[2].cb('drop', 2)]])
    T.eq(#child:lua('return _G.notes'), 1)
    T.match(child:lua('return _G.notes[1].msg'), 'queued message "one" was already sent')
    T.eq(child:lua([[return vim.tbl_map(function(q) return q.text end, require('acp').current().queue)]]), { 'two' }, 'two still queued')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { '' })
    child:cmd('AcpCancel')
    H.wait_idle(child)
  end },

  { 'queued messages show above the status area in a long chat, one line each, cut to width', function()
    local long = {}
    for i = 1, 40 do
      long[#long + 1] = ('Line %d of a long answer.'):format(i)
    end
    local child = H.start({ config = { chat = { width = 44 } }, turns = {
      { match = 'long', steps = { { message = table.concat(long, '\n') } } },
      { match = 'work', steps = { { message = 'Working on it.' }, { wait_cancel = true } } },
    } })
    local screen = Screen.attach(child, 80, 24)
    child:lua([[
      local frozen = vim.uv.now()
      vim.uv.now = function() return frozen end
    ]])
    H.open(child)
    H.turn(child, 'long')
    child:lua([[require('acp').send('work')]])
    child:wait_for([[local v = require('acp').current()
      return vim.tbl_contains(v:lines(), 'Working on it.') and require('acp.chat.status').win(v) ~= nil]])
    child:lua([[
      require('acp').send('check the tests again')
      require('acp').send('then update the changelog with every change of this branch, one line each')
    ]])
    local shot = screen:shot()
    local rows = table.concat(shot.text, '\n')
    local first = rows:match('[^\n]*⏳ queued 1: check the tests again[^\n]*')
    T.truthy(first, 'the first queued message is on screen')
    T.match(rows, '⏳ queued 2: then update the changelog')
    T.match(rows, 'queued 2: [^\n]*…', 'cut to the width')
    T.match(rows, '⏳ queued 2: [^\n]*\n[^\n]*working…', 'right above the state line')
    T.match(rows, 'Working on it%.[^\n]*\n[^\n]*────', 'the answer\'s last line stays above the area')
    Screen.expect(shot, 'queue-above-status')
    child:cmd('AcpCancel')
  end },

  { 'two chats on one agent stream at the same time, each transcript exact', function()
    local child, paths = H.start({ turns = {
      { match = 'alpha', steps = { { message = 'aaaa bbbb cccc dddd', chunk_size = 2, delay_ms = 15 } } },
      { match = 'omega', steps = { { thought = 'hm' }, { message = 'zzzz yyyy xxxx wwww', chunk_size = 3, delay_ms = 10 } } },
    } })
    H.open(child)
    child:cmd('tabnew')
    H.open(child)
    child:lua([=[
      local chats = require('acp.chat')
      local tabs = vim.api.nvim_list_tabpages()
      _G.views = { chats.by_tab[tabs[1] ], chats.by_tab[tabs[2] ] }
      _G.views[1]:send('alpha')
      _G.views[2]:send('omega')
    ]=])
    child:wait_for([[return _G.views[1].state == 'running' and _G.views[2].state == 'running']])
    child:wait_for([[return _G.views[1].turns_ended == 1 and _G.views[2].turns_ended == 1]], 8000)
    T.eq(#H.events_of(paths, 'session/new'), 2)
    T.eq(#child:lua([[return require('acp.core').agent_pids()]]), 1, 'one agent process')
    T.eq(child:lua([[return table.concat(_G.views[1]:lines(), '\n')]]),
      '## You\n\nalpha\n\n## test\n\naaaa bbbb cccc dddd')
    T.eq(child:lua([[return table.concat(_G.views[2]:lines(), '\n')]]),
      '## You\n\nomega\n\n## test\n\n> **Thinking**\n> hm\n\nzzzz yyyy xxxx wwww')
  end },

  { 'elicitation form: required, defaults and types checked; accept, decline and cancel answered', function()
    local schema = {
      type = 'object', title = 'Deploy settings',
      properties = {
        name = { type = 'string', title = 'Name', minLength = 2 },
        replicas = { type = 'integer', minimum = 1, maximum = 9, default = 2 },
        ratio = { type = 'number' },
        confirm = { type = 'boolean', default = false },
        region = { type = 'string', enum = { 'eu', 'us' }, default = 'eu' },
        tags = { type = 'array', items = { type = 'string', enum = { 'a', 'b', 'c' } } },
      },
      required = { 'name', 'confirm' },
    }
    local child, paths = H.start({ turns = {
      { match = 'form', steps = {
        H.req('elicitation/create', { mode = 'form', message = 'Settings for the deploy', requestedSchema = schema },
          { expect = { action = 'accept', content = { name = 'web', replicas = 3, ratio = 0.25, confirm = true, region = 'us', tags = { 'a', 'c' } } } }),
        H.req('elicitation/create', { mode = 'form', message = 'Again?', requestedSchema = schema }, { expect = { action = 'decline' } }),
        H.req('elicitation/create', { mode = 'form', message = 'Last', requestedSchema = schema }, { expect = { action = 'cancel' } }),
        { message = 'done' },
      } },
    } })
    H.open(child)
    child:lua([[require('acp').send('form')]])
    child:wait_for([[return #require('acp.ask.elicitation').queue == 1]])
    -- Shown without taking focus; the chat says how to answer.
    T.neq(child:lua([[return vim.api.nvim_get_current_win()]]), child:lua([[return require('acp.ask.elicitation').win]]))
    child:wait_for([[return table.concat(require('acp').current():lines(), '\n'):find(':AcpElicitation') ~= nil]])
    child:cmd('AcpElicitation')
    local lines = child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]])
    T.eq(lines, {
      '# Deploy settings', '# Settings for the deploy',
      '# Fill in after each `:`. <C-s> accept · <C-x> decline · <C-c> cancel',
      'confirm: false', 'name: ', 'ratio: ', 'region: eu', 'replicas: 2', 'tags: ',
    })
    -- Missing required name, a replica count out of range: refused, shown beside the fields.
    child:lua([[vim.api.nvim_buf_set_lines(0, 7, 8, false, { 'replicas: 12' })]])
    child:feed('<C-s>')
    T.eq(child:lua([[return #require('acp.ask.elicitation').queue]]), 1, 'still open')
    local marks = child:lua([[
      local out = {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, -1, 0, -1, { details = true })) do
        for _, c in ipairs(m[4].virt_text or {}) do if c[1]:find('✖') then out[#out + 1] = m[2] .. c[1] end end
      end
      table.sort(out)
      return out
    ]])
    T.eq(marks, { '4  ✖ required', '7  ✖ at most 9' })
    child:lua([[vim.api.nvim_buf_set_lines(0, 3, -1, false,
      { 'confirm: yes', 'name: web', 'ratio: 0.25', 'region: us', 'replicas: 3', 'tags: a, c' })]])
    child:feed('<C-s>')
    child:wait_for([[return require('acp.ask.elicitation').shown ~= nil and require('acp.ask.elicitation').shown.payload.message == 'Again?']])
    child:cmd('AcpElicitation')
    child:feed('<C-x>')
    child:wait_for([[local s = require('acp.ask.elicitation').shown return s ~= nil and s.payload.message == 'Last']])
    child:cmd('AcpElicitation')
    child:settle()
    child:feed('<C-c>')
    H.wait_idle(child)
    T.eq(#H.events_of(paths, 'check_failed'), 0)
    T.eq(#H.events_of(paths, 'check_ok'), 3)
    -- The agent got the decimal as a JSON number, not the text typed.
    local ratio = H.events_of(paths, 'client_response')[1].result.content.ratio
    T.eq({ type(ratio), ratio }, { 'number', 0.25 })
    T.eq(child:lua([[return require('acp.ask.elicitation').win]]), nil, 'the float is gone')
  end },

  { 'elicitation URL mode: the host is shown, the URL opens only on <CR>; complete is handled; a cancelled turn cancels it', function()
    local child, paths = H.start({ turns = {
      { match = 'url', steps = {
        H.req('elicitation/create', { mode = 'url', elicitationId = 'e1', url = 'https://auth.example.com/device?code=1', message = 'Authorize' },
          { expect = { action = 'accept' } }),
        { notify = { method = 'elicitation/complete', params = { elicitationId = 'e1' } } },
        H.req('elicitation/create', { mode = 'url', elicitationId = 'e2', url = 'https://x.example.org/', message = 'Second' },
          { expect = { action = 'cancel' } }),
        { message = 'end' },
      } },
    } })
    H.open(child)
    child:lua(RECORD_NOTIFY .. [[ _G.opened = {}; vim.ui.open = function(u) table.insert(_G.opened, u) end ]])
    child:lua([[require('acp').send('url')]])
    child:wait_for([[return #require('acp.ask.elicitation').queue == 1]])
    local lines = child:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.elicitation').buf, 0, -1, false)]])
    T.eq(lines[2], '# Opens a page on auth.example.com')
    T.eq(child:lua('return _G.opened'), {}, 'nothing opened before the user asks')
    child:cmd('AcpElicitation')
    child:feed('<CR>')
    child:wait_for([[return #_G.opened == 1]])
    T.eq(child:lua('return _G.opened[1]'), 'https://auth.example.com/device?code=1')
    child:wait_for([[for _, n in ipairs(_G.notes) do if n.msg:find('reports it is done') then return true end end]])
    child:wait_for([[return #require('acp.ask.elicitation').queue == 1]])
    child:cmd('AcpCancel')
    H.wait_idle(child)
    child:wait_for(([[
      for line in io.lines(%q) do if line:find('check_ok', 1, true) and line:find('elicitation', 1, true) then _G.n = (_G.n or 0) + 1 end end
      local n = _G.n; _G.n = 0; return n == 2
    ]]):format(paths.agent_log))
    T.eq(#H.events_of(paths, 'check_failed'), 0)
    T.eq(child:lua([[return #require('acp.ask.elicitation').queue]]), 0)
  end },

  { 'terminal sign-in runs the agent with the method args in a terminal; exit 0 opens the session; logout', function()
    local dir = T.tmpdir('login')
    local flag = dir .. '/signed-in'
    local child, paths = H.start({ agent_info = {
      auth_methods = {
        { id = 'login', name = 'Log in', type = 'terminal', args = { '--login' }, env = { ACP_TEST_LOGIN_FILE = flag } },
        { id = 'key', name = 'API key', type = 'env_var', varName = 'TEST_API_KEY', link = 'https://example.com/keys' },
      },
      auth_file = flag,
      auth_capabilities = { logout = vim.empty_dict() },
    }, turns = { { match = 'hi', steps = { { message = 'hello after sign-in' } } } } })
    child:cmd('AcpChat')
    child:wait_for([[return require('acp').current().state == 'disconnected']])
    T.match(H.transcript_text(child), 'needs you to sign in: run :AcpAuth')
    child:lua(RECORD_NOTIFY)
    child:cmd('AcpAuth key')
    T.match(child:lua('return _G.notes[1].msg'), 'environment variable TEST_API_KEY %(get it at https://example%.com/keys%)')
    child:cmd('AcpAuth login')
    child:wait_for([[return require('acp').current().state == 'idle']], 8000)
    T.eq(vim.fn.filereadable(flag), 1, 'the login ran')
    T.eq(#H.events_of(paths, 'authenticate'), 0, 'no authenticate for a terminal method')
    T.eq(child:lua([[return require('acp.ask.auth').last_exit]]), 0)
    local term = child:lua([[
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        if vim.bo[b].buftype == 'terminal' then return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n') end
      end
    ]])
    T.match(term, 'acp%-test%-agent login %(exit 0%)')
    child:cmd('AcpChat')
    H.turn(child, 'hi')
    T.match(H.transcript_text(child), 'hello after sign%-in$')
    child:cmd('AcpLogout')
    child:wait_for(([[
      for line in io.lines(%q) do if line:find('"event":"logout"', 1, true) then return true end end
    ]]):format(paths.agent_log))
  end, timeout = 20000 },
}
