-- The Rust → Lua contract holds: one facade touches the native module,
-- lua/acp/core/types.lua declares exactly the native functions and every event a
-- real chat delivers (with the fields it carries), the ChatView holds only
-- the fields declared in its constructor, and the agent's capabilities
-- arrive by event (no polling).
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Child = require('tests.helpers.child')
local Layers = require('tests.helpers.layers')

local ROOT = H.root
local FACADE = 'lua/acp/core/init.lua'

--- `---@class` blocks of a Lua file: class name -> field name -> { optional }.
local function classes_of(path)
  local out, current = {}, nil
  for line in io.lines(ROOT .. '/' .. path) do
    local name = line:match('^%-%-%-@class%s+([%w_.]+)')
    local field, opt = line:match('^%-%-%-@field%s+([%w_]+)(%??)')
    if name then
      current = name
      out[name] = out[name] or {}
    elseif field and current then
      out[current][field] = { optional = opt == '?' }
    elseif not line:match('^%-%-%-') then
      current = nil
    end
  end
  return out
end

local function sorted_keys(t)
  local out = vim.tbl_keys(t or {})
  table.sort(out)
  return out
end

--- Keys of `seen` that `class` does not declare, and required fields of
--- `class` missing from `every` (the keys every recorded value had).
local function check_fields(what, class, seen)
  T.neq(class, nil, what .. ' is declared in types.lua')
  for _, k in ipairs(sorted_keys(seen.union)) do
    T.neq(class[k], nil, ('%s carries `%s`, which types.lua does not declare'):format(what, k))
  end
  for _, k in ipairs(sorted_keys(class)) do
    if not class[k].optional then
      T.eq(seen.every[k], true, ('%s lacks `%s`, declared as always present'):format(what, k))
    end
  end
end

--- The names of the classes `prefix`<name> (sorted).
local function names_under(classes, prefix)
  local out = {}
  for name in pairs(classes) do
    if vim.startswith(name, prefix) then
      out[#out + 1] = name:sub(#prefix + 1)
    end
  end
  table.sort(out)
  return out
end

-- Records, in the child, every event the dispatcher gets: per event type
-- (and per card, per call method's payload) the union of the keys seen and
-- the keys every one had; and every reply the view gives the core's calls
-- (what it passes to the native `call_done`), per method. Set before the
-- chat opens: the core keeps the dispatcher it was given at init.
local RECORD = [[
  _G.contract = { events = {}, cards = {}, locations = {}, calls = {} }
  _G.contract.replies = {}
  local methods = {} -- call id -> method
  local function note(bucket, name, t)
    local keys = {}
    for k in pairs(t) do
      keys[k] = true
    end
    local r = bucket[name]
    if not r then
      r = { n = 0, union = {}, every = vim.deepcopy(keys) }
      bucket[name] = r
    end
    for k in pairs(r.every) do
      if not keys[k] then
        r.every[k] = nil
      end
    end
    for k in pairs(keys) do
      r.union[k] = true
    end
    r.n = r.n + 1
  end
  local bridge = require('acp.core.dispatch')
  local dispatch = bridge.dispatch
  bridge.dispatch = function(batch)
    for _, ev in ipairs(batch) do
      note(_G.contract.events, tostring(ev.type), ev)
      if ev.type == 'card' then
        note(_G.contract.cards, 'card', ev.card)
        for _, loc in ipairs(ev.card.locations) do
          note(_G.contract.locations, 'location', loc)
        end
        note(_G.contract.cards, 'header', ev.card.header)
        for _, part in ipairs({ 'label', 'title', 'status' }) do
          note(_G.contract.cards, 'span', ev.card.header[part])
        end
        for _, m in ipairs(ev.card.status_lines or {}) do
          note(_G.contract.cards, 'status_mark', m)
        end
      elseif ev.type == 'plan' then
        note(_G.contract.cards, 'plan', ev.plan)
        note(_G.contract.cards, 'span', ev.plan.label)
        for _, m in ipairs(ev.plan.steps) do
          note(_G.contract.cards, 'status_mark', m)
        end
      elseif ev.type == 'permission' then
        note(_G.contract.cards, 'permission', ev.payload)
        for _, o in ipairs(ev.payload.options) do
          note(_G.contract.cards, 'permission_option', o)
        end
        if ev.payload.grant then
          note(_G.contract.cards, 'grant', ev.payload.grant)
        end
      elseif ev.type == 'call' then
        note(_G.contract.calls, tostring(ev.method), ev.payload)
        methods[ev.call] = ev.method
      end
    end
    return dispatch(batch)
  end
  local core = require('acp.core')
  local call_done = core.call_done
  core.call_done = function(call, value)
    note(_G.contract.replies, tostring(methods[call]), value or {})
    return call_done(call, value)
  end
]]

local MODES = { currentModeId = 'code', availableModes = { { id = 'code', name = 'Code' }, { id = 'plan', name = 'Plan' } } }

--- A chat that exercises every kind of event: text and thought, a tool call
--- with a diff and locations, a plan, modes, commands, config options,
--- usage, a title, a permission request, an fs read and write, client terminals (run,
--- shown on a card, killed), a URL elicitation (answered, then completed),
--- a refused mode (a notification), a write refused over a disk change
--- made during the turn (a notification) and a file listing. Returns the child,
--- the project dir and what was recorded.
local function full_chat()
  local dir = H.project({ ['a.txt'] = 'one\ntwo\n', ['b.txt'] = 'one\n' })
  local file, other = dir .. '/a.txt', dir .. '/b.txt'
  local child = H.start({
    cwd = dir,
    config = { permissions = { auto_allow = {} }, terminal = { confirm = 'never' } },
    agent_info = {
      modes = MODES,
      models = { currentModelId = 'm1', availableModels = { { modelId = 'm1', name = 'Model one' } } },
      session_updates = {
        { sessionUpdate = 'available_commands_update', availableCommands = { { name = 'review', description = 'Review' } } },
        { sessionUpdate = 'config_option_update', configOptions = { { id = 'model', name = 'Model', type = 'select', currentValue = 'fast', options = {} } } },
      },
    },
    turns = { { match = 'go', steps = {
      { thought = 'Let me look.' },
      { message = 'Reading the file.', chunk_size = 8, delay_ms = 20 },
      { update = { sessionUpdate = 'current_mode_update', currentModeId = 'plan' } },
      { update = { sessionUpdate = 'plan', entries = { { content = 'Edit a.txt', status = 'in_progress', priority = 'high' } } } },
      H.req('fs/read_text_file', { path = file }),
      H.req('fs/read_text_file', { path = other }),
      H.req('fs/write_text_file', { path = file, content = 'uno\ntwo\n' }),
      { update = { sessionUpdate = 'tool_call', toolCallId = 'e1', title = 'Edit a.txt', kind = 'edit', status = 'pending',
        locations = { { path = file, line = 1 } },
        content = { { type = 'diff', path = file, oldText = 'one\n', newText = 'uno\n' } } } },
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'x1', title = 'printf hi', kind = 'execute' },
        options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' }, { optionId = 'no', name = 'Reject', kind = 'reject_once' } },
      }),
      H.req('terminal/create', { command = 'printf hi' }),
      { update = { sessionUpdate = 'tool_call', toolCallId = 'x1', title = 'printf hi', kind = 'execute', status = 'in_progress',
        content = { { type = 'terminal', terminalId = 'term-1' } } } },
      H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
      H.req('terminal/create', { command = 'sleep 5' }),
      H.req('terminal/release', { terminalId = 'term-2' }),
      H.req('elicitation/create', { mode = 'url', elicitationId = 'el1', url = 'https://example.com/sign-in', message = 'Sign in' },
        { expect = { action = 'decline' } }),
      { notify = { method = 'elicitation/complete', params = { elicitationId = 'el1' } } },
      -- b.txt changed on disk meanwhile (the test wrote it): refused.
      H.req('fs/write_text_file', { path = other, content = 'uno\n' }, { expect_error = { code = -32602 } }),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'e1', status = 'completed' } },
      { update = { sessionUpdate = 'session_info_update', title = 'Contract chat' } },
      { update = { sessionUpdate = 'session_info_update', updatedAt = '2026-11-25T10:00:00Z' } },
      { update = { sessionUpdate = 'notice', severity = 'info', title = 'Contract notice' } },
      { update = { sessionUpdate = 'compaction_update', compactionId = 'k1', status = 'completed' } },
      { update = { sessionUpdate = 'usage_update', used = 10, size = 100 } },
      { message = ' Done.' },
    } } },
  })
  child:cmd('edit ' .. file)
  child:lua(RECORD)
  H.open(child)
  -- Terminal output is sent only for terminals a view follows (as an open
  -- :AcpTerminal buffer does): follow the first client terminal.
  child:lua([[require('acp.core').watch_terminal(require('acp').current().thread, 'term-1', true)]])
  child:lua([[require('acp').send('go')]])
  child:wait_for([[return #require('acp.ask.permission').queue == 1]])
  H.enter_permission(child)
  child:lua([[require('acp.ask.permission').choose(1)]])
  child:wait_for([[return #require('acp.ask.elicitation').queue == 1]], 10000)
  T.write_file(other, 'ONE\n')
  child:lua([[require('acp.ask.elicitation').answer(require('acp.ask.elicitation').queue[1], { action = 'decline' })]])
  child:wait_for([[return require('acp').current().turns_ended == 1]], 10000)
  -- A mode the agent refuses gives a notification; a file walk a `files` answer.
  child:lua([[
    vim.notify = function() end
    require('acp.core').set_mode(require('acp').current().thread, 'nope')
    require('acp.prompt.mention').refresh(...)
    require('acp.agents.controls').request(require('acp').current(), 'session/set_model', { modelId = 'm1' })
  ]], { dir })
  child:wait_for([[return _G.contract.events.notify ~= nil and _G.contract.events.files ~= nil
    and _G.contract.events.reply ~= nil]])
  return child, dir, child:lua('return _G.contract')
end

return {
  { 'only the facade touches the native module', function()
    local files = vim.fn.globpath(ROOT, 'lua/**/*.lua', false, true)
    vim.list_extend(files, vim.fn.globpath(ROOT, 'plugin/**/*.lua', false, true))
    T.truthy(#files > 10, 'the plugin files were found')
    local offenders, facade_uses = {}, 0
    for _, path in ipairs(files) do
      local rel = path:sub(#ROOT + 2)
      local n = 0
      for _ in T.read_file(path):gmatch('%f[%w_]acp_core%f[^%w_]') do
        n = n + 1
      end
      if rel == FACADE then
        facade_uses = n
      elseif n > 0 then
        offenders[#offenders + 1] = rel
      end
    end
    T.eq(offenders, {}, 'files other than ' .. FACADE .. ' that name the native module')
    T.truthy(facade_uses > 0, 'the facade loads the native module')
  end },

  { 'types.lua declares exactly the native functions, and the facade forwards each', function()
    local declared = classes_of('lua/acp/core/types.lua')['acp.Native']
    T.neq(declared, nil, 'class acp.Native')
    local child = Child.new()
    local r = child:lua([[
      local facade = require('acp.core')
      local native = assert(facade.load())
      local keys, missing = {}, {}
      for k, v in pairs(native) do
        keys[#keys + 1] = k .. ':' .. type(v)
        -- The facade's `source_stamp` is the one of the sources on disk.
        local name = k == 'source_stamp' and 'built_stamp' or k
        if k ~= '_panic' and type(facade[name]) ~= 'function' then
          missing[#missing + 1] = k
        end
      end
      table.sort(keys)
      return { keys = keys, missing = missing, stamp_ok = facade.built_stamp() == facade.source_stamp() }
    ]])
    local want = vim.tbl_map(function(k)
      return k .. ':function'
    end, sorted_keys(declared))
    T.eq(r.keys, want, 'native module keys = acp.Native fields')
    T.eq(r.missing, {}, 'native functions the facade does not forward')
    T.eq(r.stamp_ok, true, 'a forwarded call reaches the native function')
  end },

  { 'a missing core makes a forwarded call raise the message naming :AcpBuild', function()
    local child = Child.new()
    local r = child:lua([[
      local core = require('acp.core')
      core.candidates = function() return { '/nonexistent/libacp_core.so' } end
      local ok, err = pcall(core.markdown, 1)
      return { ok = ok, err = tostring(err), loaded = core.is_loaded() }
    ]])
    T.eq(r.ok, false)
    T.match(r.err, '^acp%.nvim: the Rust core is not built; run :AcpBuild')
    T.eq(r.loaded, false)
  end },

  { 'every event of a full chat is declared in types.lua, with the fields it carries', function()
    local types = classes_of('lua/acp/core/types.lua')
    local _, _, rec = full_chat()
    local seen = sorted_keys(rec.events)
    -- The chat really produced every kind of event.
    T.eq(seen, {
      'added', 'agent', 'agent_notice', 'appended', 'call', 'card', 'commands', 'config_options', 'elicitation', 'elicitation_complete',
      'elicitation_done', 'files', 'marks', 'mode', 'models', 'modes',
      'notify', 'permission', 'permission_done', 'plan', 'replaced', 'reply', 'session', 'status', 'terminal_output', 'title', 'turn_ended', 'turn_started', 'updated_at', 'usage',
    })
    -- ... which are exactly the events types.lua declares.
    T.eq(seen, names_under(types, 'acp.Event.'), 'event classes in types.lua = events delivered')
    -- The alias union names each event class.
    local union = T.read_file(ROOT .. '/lua/acp/core/types.lua'):match('%-%-%-@alias acp%.Event\n(.-\n)\n')
    for _, t in ipairs(seen) do
      check_fields('event `' .. t .. '`', types['acp.Event.' .. t], rec.events[t])
      T.match(union, '%-%-%-| acp%.Event%.' .. t .. '\n', 'acp.Event names ' .. t)
    end
    check_fields('a card', types['acp.CardMeta'], rec.cards.card)
    check_fields('a card location', types['acp.CardLocation'], rec.locations.location)
    check_fields('a card header', types['acp.CardHeader'], rec.cards.header)
    check_fields('a span', types['acp.Span'], rec.cards.span)
    check_fields('a status mark', types['acp.StatusMark'], rec.cards.status_mark)
    check_fields('a plan layout', types['acp.PlanLayout'], rec.cards.plan)
    check_fields('a permission request', types['acp.PermissionAsk'], rec.cards.permission)
    check_fields('a permission option', types['acp.PermissionOption'], rec.cards.permission_option)
    check_fields('a grant', types['acp.Grant'], rec.cards.grant)
    -- Every main-thread service was called, with the declared payload.
    T.eq(sorted_keys(rec.calls), { 'buffer_apply', 'buffer_read', 'terminal_kill', 'terminal_start', 'write_conflict' })
    for _, method in ipairs(sorted_keys(rec.calls)) do
      check_fields('the `' .. method .. '` call', types['acp.Call.' .. method], rec.calls[method])
    end
    T.eq(sorted_keys(rec.calls), names_under(types, 'acp.Call.'), 'call classes in types.lua = calls made')
    -- Every reply the view gave (to `call_done`) has the declared fields:
    -- one per call that wants an answer (terminal_kill and write_conflict
    -- are notifications).
    T.eq(sorted_keys(rec.replies), { 'buffer_apply', 'buffer_read', 'terminal_start' })
    T.eq(sorted_keys(rec.replies), names_under(types, 'acp.Reply.'), 'reply classes in types.lua = replies given')
    for _, method in ipairs(sorted_keys(rec.replies)) do
      check_fields('the reply to `' .. method .. '`', types['acp.Reply.' .. method], rec.replies[method])
    end
  end, timeout = 30000 },

  { 'a reply with a field the core does not know is refused: the agent gets an error naming it, nothing hangs', function()
    local dir = H.project({ ['a.txt'] = 'one\n' })
    local file = dir .. '/a.txt'
    local child, paths = H.start({ cwd = dir, turns = { { match = 'go', steps = {
      H.req('fs/read_text_file', { path = file }, { expect_error = { code = -32603 } }),
      { message = 'still here' },
    } } } })
    child:cmd('edit ' .. file)
    H.open(child)
    -- A view that answers buffer_read with a misspelt `stale`.
    child:lua([[
      require('acp.core.dispatch').services.buffer_read = function(ev)
        require('acp.core').call_done(ev.call, { found = true, stail = true, bufnr = 1, tick = 1, lines = 1 })
      end
    ]])
    H.turn(child, 'go')
    local r = H.responses(paths)
    T.eq(#r, 1)
    T.eq(r[1].method, 'fs/read_text_file')
    T.eq(r[1].result, nil, 'never read as an answer (nor as "no buffer", which reads the disk)')
    local want = "the editor's answer to `buffer_read` is malformed: unknown field `stail`"
    T.truthy(r[1].error.message:find(want, 1, true), r[1].error.message)
    T.eq(#H.events_of(paths, 'check_failed'), 0)
    T.match(H.transcript_text(child), 'still here', 'the turn went on')
  end },

  { 'the ChatView holds only the fields declared in its constructor', function()
    local declared = classes_of('lua/acp/chat/view.lua')['acp.ChatView']
    T.neq(declared, nil, 'class acp.ChatView')
    -- Each declared field starts in ChatView.new.
    local src = T.read_file(ROOT .. '/lua/acp/chat/view.lua')
    local ctor = src:match('\nfunction ChatView%.new%(opts%)\n(.-)\nend\n')
    T.neq(ctor, nil, 'ChatView.new')
    local assigned = {}
    for name in ctor:gmatch('self%.([%w_]+)') do
      assigned[name] = true
    end
    for _, f in ipairs(sorted_keys(declared)) do
      T.eq(assigned[f], true, ('field `%s` is initialised in ChatView.new'):format(f))
    end
    -- After a chat that used every module around the view, nothing else was added.
    local child = full_chat()
    child:cmd('AcpLocations')
    local keys = child:lua([[return vim.tbl_keys(require('acp').current())]])
    table.sort(keys)
    for _, k in ipairs(keys) do
      T.neq(declared[k], nil, ('the view has field `%s`, which acp.ChatView does not declare'):format(k))
    end
    T.truthy(#keys > 20, 'the view has its fields')
  end, timeout = 30000 },

  { 'capabilities come with the agent event: when_ready waits for it, never polls', function()
    local child = H.start({ agent_info = { prompt_capabilities = { image = true } }, turns = {} })
    local r = child:lua([[
      _G.info_calls = 0
      local core = require('acp.core')
      local thread_info = core.thread_info
      core.thread_info = function(...)
        _G.info_calls = _G.info_calls + 1
        return thread_info(...)
      end
      local defer_fn = vim.defer_fn
      _G.deferred = 0
      vim.defer_fn = function(...)
        if debug.getinfo(2, 'S').source:find('acp/prompt/context%.lua$') then
          _G.deferred = _G.deferred + 1
        end
        return defer_fn(...)
      end
      vim.cmd('AcpChat')
      local view = require('acp').current()
      require('acp.prompt.context').when_ready(view, function(caps)
        _G.got = { caps = caps, had_caps = view.capabilities ~= nil, state = view.state }
      end)
      return { waiting = _G.got == nil, queued = #view.agent_waiters }
    ]])
    T.eq(r, { waiting = true, queued = 1 })
    child:wait_for('return _G.got ~= nil')
    local got = child:lua('return _G.got')
    T.eq(got.caps, { image = true, audio = false, embeddedContext = true })
    T.eq(got.had_caps, true, 'fired after the agent event')
    T.eq(child:lua([[return require('acp').current().agent_name]]), 'acp-test-agent')
    T.eq(child:lua([[return #require('acp').current().agent_waiters]]), 0)
    T.eq(child:lua('return _G.info_calls'), 0, 'thread_info was never asked')
    T.eq(child:lua('return _G.deferred'), 0, 'acp.context deferred no timer to poll')
    -- Known now: a later call runs at once.
    T.eq(child:lua([[
      local ran
      require('acp.prompt.context').when_ready(require('acp').current(), function(caps) ran = caps.image end)
      return ran
    ]]), true)
  end },

  { 'when_ready gives {} when the agent dies before its session, or after the timeout', function()
    local dead = H.start({ agent = { cmd = 'sh', args = { '-c', 'exit 3' } } })
    dead:lua([[
      vim.notify = function() end
      vim.cmd('AcpChat')
      local view = require('acp').current()
      _G.t0 = vim.uv.now()
      require('acp.prompt.context').when_ready(view, function(caps) _G.got = { caps = caps, ms = vim.uv.now() - _G.t0 } end, 20000)
    ]])
    dead:wait_for('return _G.got ~= nil', 5000)
    T.eq(dead:lua('return _G.got.caps'), {})
    T.eq(dead:lua([[return require('acp').current().state]]), 'disconnected')

    -- An agent that never answers `initialize`: the timeout ends the wait.
    local mute = H.start({ agent = { cmd = 'sleep', args = { '30' } } })
    mute:lua([[
      vim.cmd('AcpChat')
      local view = require('acp').current()
      _G.t0 = vim.uv.now()
      require('acp.prompt.context').when_ready(view, function(caps) _G.got = { caps = caps, ms = vim.uv.now() - _G.t0 } end, 300)
    ]])
    mute:wait_for('return _G.got ~= nil', 3000)
    local got = mute:lua('return _G.got')
    T.eq(got.caps, {})
    T.truthy(got.ms >= 250, 'waited for the timeout, not ' .. got.ms .. ' ms')
    T.eq(mute:lua([[return require('acp').current().state]]), 'connecting')
  end },
  { 'the layer check finds a circle, a use its layer does not declare, and a layer without a May-use line', function()
    -- Proof that the checks below can fail: a small tree with each fault.
    local dir = H.project({
      ['src/lib.rs'] = 'pub mod model;\npub mod session;\npub mod log;\n',
      ['src/log.rs'] = 'pub fn info() {}\n',
      ['src/model/mod.rs'] = '//! The pure model.\n//! May use: nothing.\npub mod a;\npub mod b;\npub use a::A;\n',
      ['src/model/a.rs'] = 'use super::b::B;\npub struct A;\n',
      ['src/model/b.rs'] = 'use crate::model::a::A;\nuse crate::log;\npub struct B;\n#[cfg(test)]\nmod tests {\n  use crate::session::S;\n}\n',
      ['src/session/mod.rs'] = '//! Chats.\npub mod s;\n',
      ['src/session/s.rs'] = 'use crate::model::A;\npub struct S;\n',
      ['lua/acp/x/init.lua'] = '-- May use: nothing.\nreturn {}\n',
      ['lua/acp/x/one.lua'] = 'local function later() return require("acp.x.two") end\nreturn {}\n',
      ['lua/acp/x/two.lua'] = "local y = require('acp.y.three')\nreturn require('acp.x.one')\n",
      ['lua/acp/y/init.lua'] = '-- May use: x.\nreturn {}\n',
      ['lua/acp/y/three.lua'] = 'return {}\n',
    })
    local rust = Layers.rust(dir)
    T.eq(Layers.cycles(rust.edges), { { 'src/model/a.rs', 'src/model/b.rs' } })
    T.eq(Layers.violations(rust), {
      'src/model/b.rs -> src/log.rs (model may not use log)',
      'src/session/mod.rs has no "May use:" line',
    })
    local lua = Layers.lua(dir)
    T.eq(Layers.cycles(lua.edges), { { 'lua/acp/x/one.lua', 'lua/acp/x/two.lua' } })
    T.eq(Layers.violations(lua), { 'lua/acp/x/two.lua -> lua/acp/y/three.lua (x may not use y)' })
    T.eq(Layers.cycles(Layers.declared_edges(lua)), {})
  end },

  { 'the Rust core has no import circle, and every layer uses only what its module file declares', function()
    local g = Layers.rust(ROOT)
    T.eq(Layers.cycles(g.edges), {}, 'circles between Rust files')
    T.eq(Layers.violations(g), {}, 'uses the layers do not declare')
    T.eq(Layers.cycles(Layers.declared_edges(g)), {}, 'circles between the declared layers')
    T.truthy(vim.tbl_count(g.declared_in) >= 4, 'the core is in layer folders')
  end },

  { 'the Lua side has no require circle, and every layer uses only what its init.lua declares', function()
    local g = Layers.lua(ROOT)
    T.eq(Layers.cycles(g.edges), {}, 'circles between Lua modules')
    T.eq(Layers.violations(g), {}, 'uses the layers do not declare')
    T.eq(Layers.cycles(Layers.declared_edges(g)), {}, 'circles between the declared layers')
    T.truthy(vim.tbl_count(g.declared_in) >= 4, 'the view is in layer folders')
  end },
}
