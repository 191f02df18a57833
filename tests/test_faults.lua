-- The fault suite: a real headless Neovim against the scripted agent in
-- fault modes. Every case ends the same way (`finish`): Neovim is alive,
-- the user's unsaved edit of a file is intact (buffer and disk), the chat
-- said clearly what happened, and after :qa! no process of the case is
-- left (agents, and a child each agent may have started in its group).
-- The file's teardown prints the tally: faults tried, Neovim crashes, lost
-- edits, orphans.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local tally = { tried = 0, crashes = 0, lost_edits = 0, orphans = 0 }

local EDIT = { 'unsaved user text', 'line 2' }

--- A project with `notes.txt` open and edited (not saved), then the child
--- configured like `H.start(opts)`.
local function setup(opts)
  opts = opts or {}
  local dir = H.project({ ['notes.txt'] = 'original\n' })
  opts.cwd = dir
  if opts.agent_info and not opts.turns then
    opts.turns = {} -- H.start writes the scenario (with the agent's fault modes)
  end
  local child, paths = H.start(opts)
  child:cmd('edit ' .. dir .. '/notes.txt')
  child:set_lines(0, EDIT)
  return { child = child, paths = paths, dir = dir, pids = {} }
end

--- Notes the agent processes (checked after :qa!): those alive now, and
--- every one the core started, from the pid its log line gives at spawn.
--- An agent that exits at once (a wrong command, a start-up error) is never
--- alive when a test could ask, and would leave the check with no pid.
local function track(f)
  local pids = f.child:lua([[local c = require('acp.core'); return c.is_loaded() and c.agent_pids() or {}]])
  for _, pid in ipairs(pids) do
    f.pids[pid] = true
  end
  local log = io.open(f.paths.log, 'r')
  for line in log and log:lines() or function() end do
    local pid = line:match(' started: pid (%d+) ')
    if pid then
      f.pids[tonumber(pid)] = true
    end
  end
  if log then
    log:close()
  end
end

--- Asserts the case has a pid to check after :qa! (its agent did start).
local function tracked(f)
  track(f)
  T.truthy(next(f.pids), 'the agent pid was recorded when it started')
end

--- Opens the chat without waiting for its session.
local function open(f)
  f.child:cmd('AcpChat')
  f.child:cmd('stopinsert')
end

local function text(f)
  return H.transcript_text(f.child)
end

--- Waits until the chat shows `s` (plain text).
local function shows(f, s, timeout)
  local ok, err = pcall(f.child.wait_for, f.child, function(want)
    local v = require('acp').current()
    return v and table.concat(v:lines(), '\n'):find(want, 1, true) ~= nil
  end, timeout or 5000, { s })
  if not ok then
    local shown = pcall(H.transcript_text, f.child) and H.transcript_text(f.child) or '(no chat)'
    error(('%s\n  the chat shows:\n%s'):format(err, shown), 2)
  end
end

local function state(f)
  return f.child:lua([[return require('acp').current().state]])
end

--- Waits for the chat's state (a batch of events may reach the view in two
--- frames: a notice first, the state after).
local function wait_state(f, want)
  f.child:wait_for(function(w)
    return require('acp').current().state == w
  end, 3000, { want })
end

--- The end of every case (see the header).
local function finish(f)
  tally.tried = tally.tried + 1
  local child = f.child
  local alive = pcall(child.lua, child, 'return 1')
  if not alive then
    tally.crashes = tally.crashes + 1
  end
  T.truthy(alive, 'Neovim is alive')
  track(f)
  local buf = child:lua([[
    local b = vim.fn.bufnr(...)
    return { lines = vim.api.nvim_buf_get_lines(b, 0, -1, false), modified = vim.bo[b].modified }
  ]], { f.dir .. '/notes.txt' })
  local kept = vim.deep_equal(buf.lines, EDIT) and buf.modified and T.read_file(f.dir .. '/notes.txt') == 'original\n'
  if not kept then
    tally.lost_edits = tally.lost_edits + 1
  end
  T.truthy(kept, 'the unsaved edit is intact: ' .. vim.inspect(buf))
  for _, e in ipairs(H.events_of(f.paths, 'child')) do
    f.pids[e.pid] = true
  end
  child:stop(3000)
  local left = {}
  local ok = pcall(T.wait, function()
    left = {}
    for pid in pairs(f.pids) do
      if H.pid_alive(pid) then
        left[#left + 1] = pid
      end
    end
    return #left == 0
  end, 3000)
  if not ok then
    tally.orphans = tally.orphans + #left
    for _, pid in ipairs(left) do
      pcall(vim.uv.kill, pid, 'sigkill')
    end
  end
  T.eq(left, {}, 'no process of the case is left 3 s after :qa!')
end

--- A raw line step (see the test agent's `raw`).
local function raw(t, extra)
  local r = { text = t }
  for k, v in pairs(extra or {}) do
    r[k] = v
  end
  return { raw = r }
end

--- A turn matching `name` that plays `steps` then says `after <name>`.
local function turn(name, steps)
  local s = vim.list_extend(vim.deepcopy(steps), { { message = 'after ' .. name } })
  return { match = name, steps = s }
end

--- Runs one malformed-input case: the turn completes, the agent lives.
local function malformed(name, steps, notice, opts)
  opts = opts or {}
  local f = setup({ turns = { turn(name, steps) }, config = opts.config })
  H.open(f.child)
  track(f)
  H.turn(f.child, name, opts.timeout or 5000)
  local t = text(f)
  T.contains(t, 'after ' .. name, 'the turn went on after the bad input')
  if notice then
    T.contains(t, notice)
  end
  T.eq(state(f), 'idle')
  T.eq(#f.child:lua([[return require('acp.core').agent_pids()]]), 1, 'the agent still runs')
  -- The connection still works: another turn.
  H.turn(f.child, 'hello again')
  T.contains(text(f), 'echo: hello again')
  return f
end

local GHOST = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"ghost",'
  .. '"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"GHOST"}}}}'

local MB = 1024 * 1024

return {
  -- 1. The agent exits before `initialize` is answered --------------------------------------
  { 'a wrong command (prints text, exits 0): the chat says it is no ACP agent and what it printed', function()
    local f = setup({ agent = { cmd = 'sh', args = { '-c', 'echo "usage: tool [options]"; exit 0' } } })
    open(f)
    shows(f, 'before answering `initialize`: is `sh` an ACP agent?')
    tracked(f)
    T.contains(text(f), 'It printed: usage: tool [options]')
    wait_state(f, 'disconnected')
    finish(f)
  end },

  { 'a command not found: the chat names it and the option to set', function()
    local f = setup({ agent = { cmd = '/nonexistent/acp-agent', args = {} } })
    open(f)
    shows(f, '`/nonexistent/acp-agent` was not found in PATH (set agents.test.cmd)')
    wait_state(f, 'disconnected')
    finish(f)
  end },

  { 'a command that exits 1 with a message on stderr: exit code and stderr in the chat', function()
    local f = setup({ agent_info = { exit_at_start = { code = 1, stderr = 'fatal: no credentials configured' } } })
    open(f)
    shows(f, 'Agent `test` exited with code 1 before answering `initialize`')
    tracked(f)
    T.contains(text(f), 'Last stderr lines:\nfatal: no credentials configured')
    finish(f)
  end },

  -- 2. The agent hangs --------------------------------------------------------------------
  { 'no answer to initialize: stopped after timeouts.initialize, a message, a retry works', function()
    local once = T.tmpdir('once') .. '/hung'
    local f = setup({ config = { timeouts = { initialize = 300 } }, agent_info = { hang_initialize = true, hang_once_file = once } })
    open(f)
    track(f)
    shows(f, 'Agent `test` did not answer `initialize` within 300 ms; it was stopped (send a message to start it again)')
    wait_state(f, 'disconnected')
    -- The retry: a message starts the agent again (it answers this time).
    H.turn(f.child, 'retry please')
    T.contains(text(f), 'echo: retry please')
    finish(f)
  end },

  { 'no answer to session/new: a message after timeouts.session_new, the next message tries again', function()
    local once = T.tmpdir('once') .. '/hung'
    local f = setup({ config = { timeouts = { session_new = 300 } }, agent_info = { hang_session_new = true, hang_once_file = once } })
    open(f)
    track(f)
    shows(f, 'Agent `test` did not answer `session/new` within 300 ms; send a message to try again')
    H.turn(f.child, 'second try')
    T.contains(text(f), 'echo: second try')
    T.eq(#H.events_of(f.paths, 'session/new'), 2, 'session/new was sent again')
    finish(f)
  end },

  { 'a prompt that never ends until the user cancels: still running, then cancelled on :AcpCancel', function()
    local f = setup({ turns = { { match = 'forever', steps = { { message = 'thinking…' }, { wait_cancel = true } } } } })
    H.open(f.child)
    track(f)
    f.child:lua([[require('acp').send('forever')]])
    shows(f, 'thinking…')
    vim.wait(500)
    T.eq(state(f), 'running', 'the turn runs until the user cancels')
    f.child:cmd('AcpCancel')
    f.child:wait_for([[return require('acp').current().state == 'idle']])
    local lines = H.transcript(f.child)
    T.eq(lines[#lines], '⚠ Cancelled')
    T.eq(H.events_of(f.paths, 'turn_end')[1].stopReason, 'cancelled')
    finish(f)
  end },

  { 'an agent that ignores cancel: after timeouts.cancel_grace the turn ends here, marked so, late output ignored', function()
    local f = setup({
      config = { timeouts = { cancel_grace = 1500 } },
      turns = { { match = 'stubborn', ignore_cancel = true, steps = {
        { message = 'working' }, { wait_cancel = true }, { sleep_ms = 2500 }, { message = 'LATE OUTPUT' },
      } } },
    })
    H.open(f.child)
    track(f)
    f.child:lua([[require('acp').send('stubborn')]])
    shows(f, 'working')
    f.child:cmd('AcpCancel')
    T.eq(state(f), 'running', 'waits for the agent first')
    shows(f, 'Cancelled here: the agent did not end its turn within 1.5 s of the cancel; what it still sends is ignored')
    wait_state(f, 'idle')
    T.wait(function()
      return #H.events_of(f.paths, 'turn_end') == 1
    end, 3000, 'the agent ended its turn late')
    vim.wait(100)
    T.no_match(text(f), 'LATE OUTPUT')
    H.turn(f.child, 'next')
    T.contains(text(f), 'echo: next')
    finish(f)
  end },

  -- 3. Malformed input --------------------------------------------------------------------
  { 'a line that is not JSON: named once in the chat, ignored, the turn goes on', function()
    finish(malformed('notjson', { raw('this is not json'), raw('neither {is} this') },
      'Agent `test` sent a line that is not JSON; it was ignored (:AcpTrace shows the traffic)'))
  end },

  { 'JSON that is not JSON-RPC: named, ignored', function()
    finish(malformed('notrpc', { raw('{"hello":"world"}'), raw('[1,2,3]'), raw('42') },
      'Agent `test` sent JSON that is not a JSON-RPC message; it was ignored'))
  end },

  { 'a response to an unknown id: named, ignored', function()
    finish(malformed('strayid', { raw('{"jsonrpc":"2.0","id":"nope-42","result":{}}') },
      'Agent `test` sent a response to request id "nope-42", which was never sent or is already answered'))
  end },

  { 'a notification for an unknown session: named, not shown', function()
    local f = malformed('ghost', { raw(GHOST) }, 'Agent `test` sent an update for session `ghost`, which it never created')
    T.no_match(text(f), 'GHOST')
    finish(f)
  end },

  { 'invalid UTF-8 in an update, a request and a notification: repaired, logged, the connection lives', function()
    local f = malformed('badutf', {
      raw('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{session}","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"caf@BAD@ ok\\n"}}}}', { invalid = '@BAD@' }),
      raw('{"jsonrpc":"2.0","id":"raw-1","method":"fs/read_text_file","params":{"sessionId":"{session}","path":"/nonexistent/caf@BAD@"}}', { invalid = '@BAD@' }),
      raw('{"jsonrpc":"2.0","method":"_x/note","params":{"v":"@BAD@"}}', { invalid = '@BAD@' }),
    }, 'Agent `test` sent invalid UTF-8 (replaced by U+FFFD); it was ignored')
    T.contains(text(f), 'caf\u{FFFD} ok')
    T.match(T.read_file(f.paths.log), 'WARN agent test sent invalid UTF%-8')
    finish(f)
  end },

  { 'empty and blank lines: tolerated silently', function()
    local f = malformed('blank', { raw(''), raw('   '), raw('\t') })
    T.no_match(text(f), 'sent ')
    finish(f)
  end },

  { 'a 50 MB line under max_message_bytes: parsed and ignored, the connection lives', function()
    finish(malformed('bigline', { raw('{"jsonrpc":"2.0","method":"_x/big","params":{"pad":"{pad}"}}', { pad = 50 * MB }) }, nil, { timeout = 30000 }))
  end, timeout = 60000 },

  { 'a 50 MB line over max_message_bytes (8 MiB): the agent is stopped, the chat says why', function()
    local f = setup({ config = { max_message_bytes = 8 * MB }, turns = { turn('huge', { raw('{"jsonrpc":"2.0","method":"_x/big","params":{"pad":"{pad}"}}', { pad = 50 * MB }) }) } })
    H.open(f.child)
    track(f)
    f.child:lua([[require('acp').send('huge')]])
    shows(f, 'Agent `test` sent a message longer than the 8 MiB line limit; the connection was ended', 20000)
    T.eq(f.child:lua([[return require('acp.core').agent_pids()]]), {})
    finish(f)
  end, timeout = 60000 },

  -- 4. Invalid params for each client method -----------------------------------------------
  { 'invalid params for every client method: -32602 naming the field', function()
    local bad = {
      { 'fs/read_text_file', vim.empty_dict(), 'path' },
      { 'fs/read_text_file', { path = '/a', line = 'ten' }, 'line' },
      { 'fs/write_text_file', { path = '/a' }, 'content' },
      { 'terminal/create', vim.empty_dict(), 'command' },
      { 'terminal/create', { command = 'ls', env = { { name = 1 } } }, 'env' },
      { 'terminal/output', vim.empty_dict(), 'terminalId' },
      { 'terminal/wait_for_exit', vim.empty_dict(), 'terminalId' },
      { 'terminal/kill', vim.empty_dict(), 'terminalId' },
      { 'terminal/release', vim.empty_dict(), 'terminalId' },
      { 'session/request_permission', { sessionId = vim.NIL }, 'sessionId' },
      { 'elicitation/create', { mode = 'form', message = 'm', requestedSchema = 'x' }, 'field `requestedSchema`' },
      { 'elicitation/create', { mode = 'url', message = 'm', elicitationId = 'e', url = 4 }, 'field `url`' },
      { 'elicitation/create', { mode = 'url', message = 'm', elicitationId = {}, url = 'https://x/' }, 'field `elicitationId`' },
      { 'elicitation/create', { mode = 1, message = 'm' }, 'field `mode`' },
    }
    local steps = {}
    for _, b in ipairs(bad) do
      steps[#steps + 1] = H.req(b[1], b[2], { expect_error = { code = -32602 } })
    end
    local f = setup({ turns = { turn('params', steps) } })
    H.open(f.child)
    track(f)
    H.turn(f.child, 'params')
    local answers = H.responses(f.paths)
    T.eq(#answers, #bad)
    for i, b in ipairs(bad) do
      local a = answers[i]
      T.eq(a.method, b[1])
      T.eq(a.error.code, -32602, b[1])
      local reason = a.error.data and a.error.data.reason or ''
      T.contains(reason, b[3], ('%s: the reason names `%s`'):format(b[1], b[3]))
    end
    T.eq(#H.events_of(f.paths, 'check_failed'), 0)
    T.contains(text(f), 'after params')
    finish(f)
  end },

  -- 5. Cancellation races -----------------------------------------------------------------
  { 'cancel while a permission float is open: answered cancelled, float gone, turn cancelled', function()
    local f = setup({ turns = { { match = 'perm', steps = {
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'c1', title = 'rm -rf build', kind = 'execute' },
        options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' }, { optionId = 'no', name = 'Reject', kind = 'reject_once' } },
      }),
      { message = 'after the permission' },
    } } } })
    H.open(f.child)
    track(f)
    f.child:lua([[require('acp').send('perm')]])
    f.child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    H.enter_permission(f.child)
    f.child:cmd('AcpCancel')
    f.child:wait_for([[return require('acp').current().state == 'idle']])
    T.eq(f.child:lua([[return #require('acp.ask.permission').queue]]), 0, 'the float has nothing left')
    T.wait(function()
      return #H.responses(f.paths) == 1
    end, 3000)
    T.eq(H.responses(f.paths)[1].result, { outcome = { outcome = 'cancelled' } })
    local t = text(f)
    T.contains(t, '⚠ Cancelled')
    T.no_match(t, 'after the permission')
    finish(f)
  end },

  { 'cancel twice: one session/cancel, one notice', function()
    -- The agent takes 300 ms to confirm, so the second cancel meets the first.
    local f = setup({ turns = { { match = 'long', ignore_cancel = true, steps = {
      { message = 'started' }, { wait_cancel = true }, { sleep_ms = 300 },
    } } } })
    H.open(f.child)
    track(f)
    f.child:lua([[require('acp').send('long')]])
    shows(f, 'started')
    local r = f.child:lua([[return { require('acp').cancel(), require('acp').cancel() }]])
    T.eq(r, { true, true })
    f.child:wait_for([[return require('acp').current().state == 'idle']])
    vim.wait(200)
    local _, n = text(f):gsub('⚠ Cancelled', '')
    T.eq(n, 1, 'one notice')
    T.eq(#H.events_of(f.paths, 'cancel'), 1, 'one session/cancel')
    T.eq(f.child:lua([[return require('acp').cancel()]]), false, 'nothing left to cancel')
    finish(f)
  end },

  { 'a prompt sent right after a cancel waits for the cancelled turn, then runs alone', function()
    local f = setup({ turns = { { match = 'slow', steps = {
      { message = 'OLD-TURN-TEXT-', chunk_size = 1, delay_ms = 20 },
      { message = 'OLD-TURN-TAIL' },
    } } } })
    H.open(f.child)
    track(f)
    f.child:lua([[require('acp').send('slow')]])
    shows(f, 'OLD-T')
    T.truthy(f.child:lua([[return require('acp').cancel() and require('acp').send('fresh')]]))
    f.child:wait_for([[local v = require('acp').current(); return v.state == 'idle' and v.turns_ended == 2]])
    local lines = H.transcript(f.child)
    local t = table.concat(lines, '\n')
    local cancel_at = t:find('⚠ Cancelled', 1, true)
    local fresh_at = t:find('echo: fresh', 1, true)
    T.truthy(cancel_at and fresh_at and cancel_at < fresh_at, t)
    T.no_match(t:sub(cancel_at), 'OLD%-TURN', 'nothing of the old turn after the cancel')
    T.no_match(t, 'OLD%-TURN%-TAIL')
    local prompts = H.events_of(f.paths, 'prompt')
    T.eq(#prompts, 2)
    finish(f)
  end },

  -- 6. Scale ------------------------------------------------------------------------------
  { '20 sessions streaming at once on one agent: each transcript exact', function()
    local turns, want = {}, {}
    for i = 1, 20 do
      local name = ('job%02d'):format(i)
      local words = {}
      for w = 1, 30 do
        words[w] = ('%s-w%02d'):format(name, w)
      end
      want[i] = table.concat(words, ' ')
      turns[i] = { match = name, steps = { { message = want[i], chunk_size = 9, delay_ms = 3 } } }
    end
    local f = setup({ turns = turns })
    for i = 1, 20 do
      if i > 1 then
        f.child:cmd('tabnew')
      end
      H.open(f.child)
      f.child:cmd('stopinsert')
    end
    track(f)
    T.eq(#f.child:lua([[return require('acp.core').agent_pids()]]), 1, 'one agent process')
    f.child:lua([[
      for i, tab in ipairs(vim.api.nvim_list_tabpages()) do
        vim.api.nvim_set_current_tabpage(tab)
        assert(require('acp').send(('job%02d'):format(i)))
      end
    ]])
    f.child:wait_for([[
      for _, v in pairs(require('acp.chat').by_tab) do
        if v.turns_ended < 1 then return false end
      end
      return true
    ]], 20000)
    local got = f.child:lua([[
      local out = {}
      for i, tab in ipairs(vim.api.nvim_list_tabpages()) do
        local l = require('acp.chat').by_tab[tab]:lines()
        out[i] = l[#l]
      end
      return out
    ]])
    for i = 1, 20 do
      T.eq(got[i], want[i], 'tab ' .. i)
    end
    finish(f)
  end, timeout = 60000 },

  { 'Neovim quitting with 5 live agents mid-turn (each with a child in its group): no process left', function()
    local agents = {}
    local dir = T.tmpdir('five')
    for i = 1, 5 do
      local scen = dir .. '/a' .. i .. '.json'
      T.write_file(scen, vim.json.encode({ agent = { spawn_child = true }, turns = { { steps = { { message = 'busy' }, { hang = true } } } } }))
      agents['a' .. i] = { cmd = H.agent_bin, args = { '--scenario', scen }, env = { ACP_TEST_AGENT_LOG = dir .. '/a' .. i .. '.jsonl' } }
    end
    agents.test = agents.a1
    local f = setup({ config = { agents = agents } })
    for i = 1, 5 do
      if i > 1 then
        f.child:cmd('tabnew')
      end
      H.open(f.child, 'a' .. i)
      f.child:cmd('stopinsert')
      f.child:lua([[assert(require('acp').send('go'))]])
      shows(f, 'busy')
    end
    track(f)
    T.eq(vim.tbl_count(f.pids), 5, 'five agent processes')
    for i = 1, 5 do
      for _, e in ipairs(H.events_of({ agent_log = dir .. '/a' .. i .. '.jsonl' }, 'child')) do
        f.pids[e.pid] = true
      end
    end
    T.eq(vim.tbl_count(f.pids), 10, 'and five children')
    for pid in pairs(f.pids) do
      T.truthy(H.pid_alive(pid), pid .. ' runs before :qa!')
    end
    finish(f)
  end, timeout = 30000 },

  teardown = function()
    io.write(('faults: %d tried, %d Neovim crashes, %d lost edits, %d orphans\n'):format(
      tally.tried, tally.crashes, tally.lost_edits, tally.orphans))
  end,
}
