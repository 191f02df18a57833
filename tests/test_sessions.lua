-- Sessions: :AcpSessions (session/list over pages), load with a replayed
-- history then a live turn, resume, close/delete with confirmation, giving
-- up on a slow load ($/cancel_request), :AcpNew, :AcpResume after a crash,
-- titles, and what goes into session/new (MCP servers, directories).
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end
]]

local STUB_SELECT = H.STUB_SELECT

local function sessions(dir)
  return {
    { sessionId = 's-a', cwd = dir, title = 'Fix the parser', updatedAt = '2026-03-01T10:00:00Z' },
    { sessionId = 's-b', cwd = dir, title = 'Add tests', updatedAt = '2026-03-02T11:30:00.123Z' },
    { sessionId = 's-old', cwd = dir, updatedAt = '2026-02-01T09:00:00Z' },
  }
end

local REPLAY = {
  { sessionUpdate = 'user_message_chunk', content = { type = 'text', text = 'old ' } },
  { sessionUpdate = 'user_message_chunk', content = { type = 'text', text = 'question' } },
  { sessionUpdate = 'agent_message_chunk', content = { type = 'text', text = 'old answer' } },
  { sessionUpdate = 'tool_call', toolCallId = 't1', title = 'Read a.txt', kind = 'read', status = 'completed' },
  { sessionUpdate = 'plan', entries = { { content = 'Step one', status = 'completed', priority = 'high' } } },
  { sessionUpdate = 'user_message_chunk', content = { type = 'text', text = 'second question' } },
  { sessionUpdate = 'agent_message_chunk', content = { type = 'text', text = 'second answer' } },
}

local function picked_transcript(child)
  child:wait_for([[local v = require('acp').current(); return v.history_of ~= nil and v.state == 'idle']], 5000)
  return H.transcript_text(child)
end

return {
  { ':AcpSessions lists two pages (nextCursor) with title, time and cwd; picking one loads it, history apart from the live turn', function()
    local dir = H.project()
    local child, paths = H.start({ cwd = dir, agent_info = {
      load_session = true,
      session_capabilities = { list = vim.empty_dict() },
      sessions = sessions(dir),
      list_page_size = 2,
      load = { replay = REPLAY },
    }, turns = { { match = 'new', steps = { { message = 'live answer' } } } } })
    H.open(child)
    child:lua(STUB_SELECT .. [[ _G.pick = { 'Add tests' } ]])
    child:lua([[vim.api.nvim_buf_set_lines(require('acp').current().input, 0, -1, false, { 'half typed' })]])
    child:cmd('AcpSessions')
    local text = picked_transcript(child)
    local lists = H.events_of(paths, 'session/list')
    T.eq(#lists, 2, 'both pages read')
    T.eq(lists[1].params, { cwd = dir })
    T.eq(lists[2].params, { cwd = dir, cursor = 'page-2' })
    local home = vim.fn.fnamemodify(dir, ':~')
    T.eq(child:lua('return _G.asked[1].items'), {
      'Fix the parser  2026-03-01 10:00:00  ' .. home,
      'Add tests  2026-03-02 11:30:00  ' .. home,
      's-old  2026-02-01 09:00:00  ' .. home,
    })
    local load = H.events_of(paths, 'session/load')[1].params
    T.eq({ load.sessionId, load.cwd, load.mcpServers, load.additionalDirectories }, { 's-b', dir, {}, nil })
    T.eq(#H.events_of(paths, 'session/new'), 1, 'no new session for the loaded one')
    T.eq(text, table.concat({
      'ℹ History of session `s-b`',
      '## You\n\nold question',
      '## test\n\nold answer',
      'read · Read a.txt · completed',
      'Plan · 1/1 done\n- [x] Step one (high)',
      '## You\n\nsecond question',
      '## test\n\nsecond answer',
      'ℹ End of the loaded history: new messages continue this session',
    }, '\n\n'))
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { 'half typed' },
      'the input moved to the new chat')
    H.turn(child, 'new')
    T.match(H.transcript_text(child), 'new messages continue this session\n\n## You\n\nnew\n\n## test\n\nlive answer$')
    T.eq(H.events_of(paths, 'prompt')[1].sessionId, 's-b')
  end },

  { 'resume: session/resume when advertised, its config options reach the winbar; close and delete ask first', function()
    local dir = H.project()
    local child, paths = H.start({ cwd = dir, agent_info = {
      load_session = true,
      session_capabilities = { list = vim.empty_dict(), resume = vim.empty_dict(), close = vim.empty_dict(), delete = vim.empty_dict() },
      sessions = sessions(dir),
      config_options = { { id = 'model', name = 'Model', category = 'model', type = 'select', currentValue = 'big',
        options = { { value = 'big', name = 'Big model' } } } },
    }, turns = {} })
    H.open(child)
    child:lua(STUB_SELECT .. [[ _G.pick = { 'Fix the parser', 'resume' } ]])
    child:cmd('AcpSessions')
    picked_transcript(child)
    T.eq(child:lua('return _G.asked[2].items'), { 'resume', 'close', 'delete' })
    T.eq(H.events_of(paths, 'session/resume')[1].params.sessionId, 's-a')
    T.eq(#H.events_of(paths, 'session/load'), 0)
    T.match(H.transcript_text(child), 'Resumed session `s%-a`')
    T.match(child:lua([[return vim.wo[require('acp').current().win].winbar]]), 'Big model')
    -- Delete: refused at the confirmation, then confirmed.
    child:lua([[_G.pick = { 'Add tests', 'delete', 'No' }]])
    child:cmd('AcpSessions')
    T.eq(#H.events_of(paths, 'session/delete'), 0, 'nothing deleted without a yes')
    child:lua(RECORD_NOTIFY .. [[_G.pick = { 'Add tests', 'delete', 'Yes' }]])
    child:cmd('AcpSessions')
    child:wait_for([[return #_G.notes > 0]])
    T.eq(H.events_of(paths, 'session/delete')[1].params, { sessionId = 's-b' })
    T.match(child:lua('return _G.notes[1].msg'), 'session "Add tests" deleted')
    child:lua([[_G.pick = { 's-old', 'close', 'Yes' }]])
    child:cmd('AcpSessions')
    child:wait_for([[return #_G.notes > 1]])
    T.eq(H.events_of(paths, 'session/close')[1].params, { sessionId = 's-old' })
  end },

  { 'a slow load: <C-c> gives up, $/cancel_request goes out, a new session starts', function()
    local child, paths = H.start({ agent_info = {
      load_session = true,
      load = { replay = { REPLAY[1] }, delay_ms = 10000 },
    }, turns = {} })
    H.open(child)
    child:lua([[require('acp').resume('s-slow')]])
    child:wait_for([[local v = require('acp').current(); return v.history_of == 's-slow' and v.status_detail == 'loading session']])
    T.match(child:lua([[return vim.wo[require('acp').current().win].winbar]]), 'loading session… %(<C%-c> gives up%)')
    -- A message typed meanwhile waits for the session.
    child:lua([[require('acp').send('queued while loading')]])
    T.eq(child:lua([[return #require('acp').current().queue]]), 1)
    child:cmd('AcpCancel')
    child:wait_for([[return require('acp').current().state == 'idle']], 5000)
    child:wait_for(([[
      for line in io.lines(%q) do if line:find('load_cancelled', 1, true) then return true end end
    ]]):format(paths.agent_log))
    T.eq(#H.events_of(paths, 'session/new'), 2)
    local text = H.transcript_text(child)
    T.match(text, 'The history above is incomplete')
    T.match(text, 'Could not open session `s%-slow`: gave up waiting')
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    T.match(H.transcript_text(child), 'echo: queued while loading$')
  end },

  { 'session/load may answer null; a failed load says so and starts a new session', function()
    local child, paths = H.start({ agent_info = { load_session = true, load = { error = 'no such session' } }, turns = {} })
    H.open(child)
    child:lua([[require('acp').resume('s-gone')]])
    child:wait_for([[local v = require('acp').current(); return v.history_of == 's-gone' and v.state == 'idle']])
    T.match(H.transcript_text(child), 'Could not open session `s%-gone`: .*no such session.*Started a new session%.')
    T.eq(#H.events_of(paths, 'session/new'), 2)
  end },

  { ':AcpNew starts a fresh session in the chat; after a crash :AcpResume loads the last one', function()
    local child, paths = H.start({ agent_info = { load_session = true, load = { replay = { REPLAY[1], REPLAY[3] } } },
      turns = { { match = 'crash', steps = { { crash = { code = 3 } } } } } })
    H.open(child)
    H.turn(child, 'hello')
    child:lua([[vim.api.nvim_buf_set_lines(require('acp').current().input, 0, -1, false, { 'keep me' })]])
    child:cmd('AcpNew')
    child:wait_for([[return require('acp').current().info.session == 'sess-2']])
    T.eq(H.transcript(child), { '' }, 'a fresh transcript')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { 'keep me' })
    H.turn(child, 'crash')
    child:wait_for([[return require('acp').current().state == 'disconnected']])
    T.match(table.concat(child:lua([[return require('acp').current():notices()]]), '\n'),
      'The agent stopped%. :AcpResume opens session sess%-2 again')
    child:cmd('AcpResume')
    child:wait_for([[local v = require('acp').current(); return v.history_of == 'sess-2' and v.state == 'idle']], 5000)
    T.eq(H.events_of(paths, 'session/load')[1].params.sessionId, 'sess-2')
    T.match(H.transcript_text(child), 'History of session `sess%-2`\n\n## You\n\nold \n\n## test\n\nold answer')
  end },

  { ':AcpNew keeps the old chat: :AcpChats lists it and switching back shows its transcript', function()
    local child = H.start({ turns = { { match = 'first', steps = { { message = 'first answer' } } } } })
    H.open(child)
    H.turn(child, 'first question')
    local old = child:lua([[return require('acp').current().thread]])
    child:cmd('AcpNew')
    child:wait_for([[return require('acp').current().info.session == 'sess-2']])
    T.eq(H.transcript(child), { '' }, 'the new chat starts empty')
    child:lua(STUB_SELECT .. [[ _G.pick = { 'sess-1-unused' } ]])
    child:cmd('AcpChats')
    local items = child:lua('return _G.asked[1].items')
    T.eq(#items, 2, 'both chats listed: ' .. vim.inspect(items))
    T.match(items[1], '^' .. old .. ': test')
    child:lua([[_G.pick = { ... } ]], { old .. ': test' })
    child:cmd('AcpChats')
    child:wait_for(([[return require('acp').current().thread == %d]]):format(old))
    T.match(H.transcript_text(child), '## You\n\nfirst question\n\n## test\n\nfirst answer')
    -- Its session is still live: it continues.
    H.turn(child, 'first again')
    T.match(H.transcript_text(child), 'first answer\n\n## You\n\nfirst again\n\n## test\n\nfirst answer$')
  end },

  { 'session_info_update titles show in the winbar and in the picker for this chat', function()
    local dir = H.project()
    local child = H.start({ cwd = dir, agent_info = {
      load_session = true,
      session_capabilities = { list = vim.empty_dict() },
      sessions = { { sessionId = 'sess-1', cwd = dir, title = 'Old title' } },
    }, turns = { { match = 'x', steps = { { update = { sessionUpdate = 'session_info_update', title = 'Live title' } } } } } })
    H.open(child)
    H.turn(child, 'x')
    T.match(child:lua([[return vim.wo[require('acp').current().win].winbar]]), 'Live title')
    child:lua(STUB_SELECT)
    child:cmd('AcpSessions')
    child:wait_for('return _G.asked[1] ~= nil')
    T.eq(child:lua('return _G.asked[1].items'), { 'Live title (this chat)    ' .. vim.fn.fnamemodify(dir, ':~') })
  end },

  { 'session/new gets http MCP servers and additionalDirectories only when the agent advertises them', function()
    local extra = vim.fn.resolve(T.tmpdir('extra'))
    local config = {
      roots = { extra },
      mcp_servers = { { name = 'files', command = '/bin/true' }, { type = 'http', name = 'web', url = 'http://127.0.0.1:9/mcp' } },
      agents = { test = { cmd = H.agent_bin, mcp_servers = { { name = 'own', command = '/bin/echo', args = { 'x' } } } } },
    }
    local function run(agent_info)
      local child, paths = H.start({ agent_info = agent_info, turns = {}, config = vim.deepcopy(config) })
      -- The agent's args (scenario) are set by the helper: keep them.
      child:lua([[
        local a = require('acp.config').options.agents.test
        a.args = ...
      ]], { { '--scenario', paths.scenario } })
      child:lua([[require('acp.config').options.agents.test.env = ...]], { { ACP_TEST_AGENT_LOG = paths.agent_log } })
      H.open(child)
      return child, H.events_of(paths, 'session/new')[1].params
    end
    local child, plain = run(vim.empty_dict())
    T.eq(vim.tbl_map(function(s)
      return s.name
    end, plain.mcpServers), { 'files', 'own' })
    T.eq(plain.mcpServers[2], { name = 'own', command = '/bin/echo', args = { 'x' }, env = {} })
    T.eq(plain.additionalDirectories, nil)
    T.match(H.transcript_text(child), 'MCP server%(s%) `web` not sent')
    local _, full = run({ mcp_capabilities = { http = true }, session_capabilities = { additionalDirectories = vim.empty_dict() } })
    T.eq(vim.tbl_map(function(s)
      return s.name
    end, full.mcpServers), { 'files', 'web', 'own' })
    T.eq(full.additionalDirectories, { extra })
  end },

  { ':checkhealth acp lists each agent\'s MCP servers; config checks them', function()
    local child = H.start({ config = {
      mcp_servers = { { type = 'sse', name = 'events', url = 'http://127.0.0.1:9/sse' } },
    } })
    child:lua([[require('acp.config').options.agents.test.mcp_servers = { { name = 'files', command = '/bin/true' } }]])
    child:cmd('checkhealth acp')
    local text = table.concat(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]), '\n')
    T.match(text, 'test: files %(stdio%) /bin/true')
    T.match(text, 'MCP server events: sse http://127%.0%.0%.1:9/sse %(sent only to agents that advertise sse%)')
    local err = child:lua([[
      local ok, err = pcall(require('acp.config').setup, { agents = { x = { cmd = 'x', mcp_servers = { { name = 'bad', type = 'ws' } } } } })
      return err
    ]])
    T.match(err, '`agents%.x%.mcp_servers%[1%]%.type` must be')
  end },
}
