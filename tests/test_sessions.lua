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

-- Kept chats ---------------------------------------------------------------------

--- The kept chat files of project `dir` under the state folder `state`.
local function kept_files(state, dir)
  local name = dir:gsub('%%', '%%25'):gsub('/', '%%2F')
  return vim.fn.glob(state .. '/nvim/acp/chats/' .. name .. '/*.jsonl', false, true), state .. '/nvim/acp/chats/' .. name
end

--- A child whose chats are kept under `state` (shared by the children of one test).
local function start_kept(state, dir, opts)
  opts = opts or {}
  opts.cwd, opts.env = dir, { XDG_STATE_HOME = state }
  local child, paths = H.start(opts)
  H.open(child)
  return child, paths
end

local function wait_kept(state, dir, n)
  T.wait(function()
    return #kept_files(state, dir) >= n
  end, 3000, 'a kept chat file was written')
end

--- A second child on the kept chats under `state` that opens the kept chat
--- `title` from :AcpSessions.
local function reopen_kept(state, dir, opts, title)
  local child, paths = start_kept(state, dir, opts)
  child:lua(STUB_SELECT .. [[ _G.pick = { ... } ]], { title })
  child:cmd('AcpSessions')
  return child, paths
end

--- The names of the files :AcpReview lists.
local function review_names(child)
  child:cmd('AcpReview')
  child:wait_for([[return require('acp.editor.review').last ~= nil]], 3000)
  return child:lua([[
    local out = {}
    for _, f in ipairs(require('acp.editor.review').last.files) do out[#out + 1] = vim.fn.fnamemodify(f.path, ':t') end
    return out
  ]])
end

local function write_step(path, content)
  return H.req('fs/write_text_file', { path = path, content = content })
end

local function card(fields)
  fields.sessionUpdate = 'tool_call'
  return { update = fields }
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

  { 'resume: session/resume when advertised without session/load, its config options reach the winbar; close and delete ask first', function()
    local dir = H.project()
    local child, paths = H.start({ cwd = dir, agent_info = {
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
    T.match(items[1], '^test ' .. old .. ' · ')
    child:lua([[_G.pick = { ... } ]], { 'test ' .. old .. ' ·' })
    child:cmd('AcpChats')
    child:wait_for(([[return require('acp').current().thread == %d]]):format(old))
    T.match(H.transcript_text(child), '## You\n\nfirst question\n\n## test\n\nfirst answer')
    -- Its session is still live: it continues.
    H.turn(child, 'first again')
    T.match(H.transcript_text(child), 'first answer\n\n## You\n\nfirst again\n\n## test\n\nfirst answer$')
  end },

  { 'kept chat, agent without session/load: the picker lists it and opening it shows its kept transcript (cards and text)', function()
    local state, dir = T.tmpdir('state'), H.project()
    local turns = { { match = 'look', steps = {
      { message = 'Looking at **a.txt**' },
      card({ toolCallId = 'r1', title = 'Read a.txt', kind = 'read', status = 'completed' }),
      { update = { sessionUpdate = 'plan', entries = { { content = 'Read it', status = 'completed', priority = 'high' } } } },
      { message = 'It says hello' },
    } } }
    local one = start_kept(state, dir, { turns = turns })
    H.turn(one, 'look at a.txt')
    local before = H.transcript_text(one)
    wait_kept(state, dir, 1)
    one:stop()
    local two = reopen_kept(state, dir, { turns = turns }, 'look at a.txt')
    T.match(two:lua('return _G.asked[1].items[1]'), '^look at a%.txt  %d%d%d%d%-%d%d%-%d%d %d%d:%d%d  %(kept%)$')
    local text = picked_transcript(two)
    T.eq(text:sub(1, #'ℹ Kept transcript: look at a.txt\n\n' + #before),
      'ℹ Kept transcript: look at a.txt\n\n' .. before, 'the kept transcript renders as it did')
    T.match(text, vim.pesc(before) .. '\n\nℹ End of the kept transcript')
    T.match(text, 'read · Read a%.txt · completed')
    -- The chat continues (a new session: this agent cannot open one).
    H.turn(two, 'more')
    T.match(H.transcript_text(two), 'echo: more$')
  end },

  { 'kept chat, agent with session/load: the history shows once (the kept transcript; the replay is not shown again)', function()
    local state, dir = T.tmpdir('state'), H.project()
    local info = { load_session = true, load = { replay = {
      { sessionUpdate = 'user_message_chunk', content = { type = 'text', text = 'the question' } },
      { sessionUpdate = 'agent_message_chunk', content = { type = 'text', text = 'the only answer' } },
    } } }
    local turns = { { match = 'question', steps = { { message = 'the only answer' } } } }
    local one, paths1 = start_kept(state, dir, { turns = turns, agent_info = info })
    H.turn(one, 'the question')
    wait_kept(state, dir, 1)
    one:stop()
    local two, paths = reopen_kept(state, dir, { turns = turns, agent_info = info }, 'the question')
    local text = picked_transcript(two)
    T.eq(H.events_of(paths, 'session/load')[1].params.sessionId, H.events_of(paths1, 'prompt')[1].sessionId)
    local _, count = text:gsub('the only answer', '')
    T.eq(count, 1, 'the answer shows once:\n' .. text)
    T.match(text, 'Loaded session `sess%-1` again')
    H.turn(two, 'next')
    T.eq(H.events_of(paths, 'prompt')[1].sessionId, 'sess-1', 'the loaded session continues')
  end },

  { 'restart: yesterday\'s chat opens from the picker with its transcript, and :AcpReview lists the agent\'s change', function()
    local state, dir = T.tmpdir('state'), H.project({ ['a.txt'] = 'one\n' })
    local file = dir .. '/a.txt'
    local turns = { { match = 'edit', steps = {
      card({ toolCallId = 'w1', title = 'Write a.txt', kind = 'edit', status = 'in_progress', locations = { { path = file } } }),
      write_step(file, 'two\n'),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'w1', status = 'completed' } },
      { message = 'Changed a.txt' },
    } } }
    local one = start_kept(state, dir, { turns = turns })
    H.turn(one, 'edit a.txt please')
    T.eq(T.read_file(file), 'two\n')
    wait_kept(state, dir, 1)
    pcall(one.cmd, one, 'qall!')
    one:stop()
    local two = reopen_kept(state, dir, { turns = turns }, 'edit a.txt please')
    local text = picked_transcript(two)
    T.match(text, '## You\n\nedit a%.txt please\n\n## test\n\nedit · Write a%.txt · completed')
    T.match(text, 'Changed a%.txt\n\nℹ End of the kept transcript')
    T.eq(review_names(two), { 'a.txt' })
  end },

  { 'restart, claude-agent-acp shape (permission, then the agent edits the disk itself): the reopened chat\'s :AcpReview lists the change', function()
    local state, dir = T.tmpdir('state'), H.project({ ['q.txt'] = 'one\ntwo\n' })
    local file = dir .. '/q.txt'
    local turns = { { match = 'go', steps = {
      card({ toolCallId = 'e1', title = 'Edit q.txt', kind = 'edit', status = 'pending', locations = { { path = file } } }),
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'e1', title = 'Edit q.txt', kind = 'edit' },
        options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' }, { optionId = 'no', name = 'Reject', kind = 'reject_once' } },
      }),
      H.req('terminal/create', { command = 'sed -i s/^one$/ONE-agent/ ' .. vim.fn.shellescape(file) }),
      H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
      { update = { sessionUpdate = 'tool_call_update', toolCallId = 'e1', status = 'completed' } },
      { message = 'edited q.txt' },
    } } }
    local config = { terminal = { confirm = 'never' }, permissions = { auto_allow = { 'edit' } } }
    local one = start_kept(state, dir, { turns = turns, config = config })
    one:cmd('wincmd t')
    one:cmd('edit ' .. file)
    H.turn(one, 'go edit')
    one:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, 1, false)[1] == 'ONE-agent']], 3000, { file })
    T.wait(function()
      local f = kept_files(state, dir)[1]
      return f and T.read_file(f):find('q.txt', 1, true) ~= nil and T.read_file(f):find('"review":"', 1, true) ~= nil
    end, 3000, 'the review record of the disk edit is kept')
    one:stop()
    local two = reopen_kept(state, dir, { turns = turns, config = config }, 'go edit')
    local text = picked_transcript(two)
    T.match(text, 'edit · Edit q%.txt · completed\n.-\n\nedited q%.txt\n\nℹ End of the kept transcript')
    T.match(text, 'ℹ The agent cannot open session `sess%-1` again: new messages start a new session')
    T.eq(review_names(two), { 'q.txt' })
  end },

  { 'the caps drop the oldest: records past history.chat_max_bytes, chats past history.project_max_chats', function()
    local state, dir = T.tmpdir('state'), H.project()
    local child = start_kept(state, dir, { config = { history = { chat_max_bytes = 2048, project_max_chats = 2 } } })
    for i = 1, 6 do
      H.turn(child, ('turn %d %s'):format(i, ('x'):rep(300)))
    end
    wait_kept(state, dir, 1)
    T.wait(function()
      local f = kept_files(state, dir)[1]
      return f and T.read_file(f):find('echo: turn 6', 1, true) ~= nil
    end, 3000)
    local kept = T.read_file(kept_files(state, dir)[1])
    local header, records = kept:match('^([^\n]*)\n[^\n]*\n(.*)$')
    T.truthy(#records <= 2048, 'the records stay under the cap: ' .. #records)
    T.eq(records:find('turn 1 x', 1, true), nil, 'the oldest records went')
    T.truthy(records:find('echo: turn 6', 1, true), 'the newest stay')
    T.truthy(vim.json.decode(header).dropped > 0)
    for i = 2, 3 do
      child:cmd('AcpNew')
      child:wait_for(('return require("acp").current().info.session == "sess-%d"'):format(i))
      H.turn(child, 'chat ' .. i)
    end
    T.wait(function()
      local titles = {}
      for _, h in ipairs(child:lua('return require("acp.core").kept_chats(...).chats', { dir })) do
        titles[#titles + 1] = h.title
      end
      return vim.deep_equal(titles, { 'chat 3', 'chat 2' })
    end, 3000, 'the oldest chat was deleted')
    T.eq(#kept_files(state, dir), 2)
  end },

  { 'a corrupt, huge or hostile kept chat gives a clear notice, never an error or a prompt', function()
    local state, dir = T.tmpdir('state'), H.project()
    local _, folder = kept_files(state, dir)
    vim.fn.mkdir(folder, 'p')
    local hostile = '%{execute("qa!")} \27[31mred\27[0m %#Error#'
    local function header(id, title)
      return vim.json.encode({ acp_chat = 1, id = id, agent = 'test', cwd = dir, title = title, created = 1, updated = 2 })
    end
    T.write_file(folder .. '/1-1.jsonl', '{not json at all\n')
    T.write_file(folder .. '/2-2.jsonl', header('2-2', 'huge chat') .. '\n' .. ('x'):rep(12 * 1024 * 1024))
    T.write_file(folder .. '/3-3.jsonl', table.concat({
      header('3-3', hostile),
      '{"review": "{not a review"}',
      vim.json.encode({ sessionUpdate = 'user_message_chunk', content = { type = 'text', text = hostile } }),
      'garbage line',
      vim.json.encode({ sessionUpdate = 'agent_message_chunk', content = { type = 'text', text = 'answer ' .. hostile } }),
    }, '\n') .. '\n')
    local child = start_kept(state, dir, {})
    child:lua(RECORD_NOTIFY .. STUB_SELECT .. [[ _G.pick = { 'huge chat' } ]])
    child:cmd('AcpSessions')
    T.match(child:lua('return _G.notes[1].msg'), '1 kept chat file%(s%) could not be read and are not listed.*1%-1%.jsonl: not a kept chat')
    local items = child:lua('return _G.asked[1].items')
    T.eq(#items, 2, vim.inspect(items))
    T.eq(items[1]:find('\27', 1, true), nil, 'no escape code in the picker')
    child:wait_for([[local v = require('acp').current(); return v.history_of == '2-2' and v.state == 'idle']], 5000)
    T.match(H.transcript_text(child), 'The kept chat 2%-2 could not be read %(.*more than a kept chat can be')
    child:lua([[_G.pick = { 'red' } ]])
    child:cmd('AcpSessions')
    child:wait_for([[local v = require('acp').current(); return v.history_of == '3-3' and v.state == 'idle']], 5000)
    local text = H.transcript_text(child)
    T.match(text, 'answer ' .. vim.pesc(hostile))
    T.match(text, '1 line%(s%) of the kept chat could not be read and were skipped')
    T.match(text, 'The kept review records could not be read')
    T.eq(child:lua('return vim.v.errmsg'), '')
    T.eq(child:lua('return vim.api.nvim_get_mode().blocking'), false, 'no prompt waits')
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
