-- User autocmds (acp.events): each fired once per occurrence, with its
-- payload, by a scripted turn; never while the chat buffer is being edited.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

-- Records every Acp* User autocmd in the child: { name, data, editing }.
local RECORD = [[
  _G.fired = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = 'Acp*',
    callback = function(ev)
      local view = require('acp').current()
      table.insert(_G.fired, {
        name = ev.match,
        data = ev.data,
        -- The chat buffer is modifiable only during a drain's edit.
        editing = view ~= nil and vim.api.nvim_buf_is_valid(view.buf) and vim.bo[view.buf].modifiable,
        fast = vim.in_fast_event(),
      })
    end,
  })
]]

local function fired(child, name)
  return child:lua([[
    local out = {}
    for _, e in ipairs(_G.fired) do
      if e.name == ... then out[#out + 1] = e.data end
    end
    return out
  ]], { name })
end

local OPTIONS = {
  { optionId = 'allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'reject', name = 'Reject', kind = 'reject_once' },
}

return {
  { 'session, turn, tool call, permission, file and usage payloads of a scripted turn', function()
    local dir = H.project({ ['open.txt'] = 'old\n', ['closed.txt'] = 'before\n' })
    local child = H.start({
      cwd = dir,
      turns = {
        { match = 'go', steps = {
          { update = { sessionUpdate = 'tool_call', toolCallId = 't1', title = 'Edit', kind = 'edit', status = 'pending' } },
          -- The same state again: no new event.
          { update = { sessionUpdate = 'tool_call_update', toolCallId = 't1', status = 'pending' } },
          H.req('session/request_permission', {
            toolCall = { toolCallId = 't1', title = 'Edit open.txt' },
            options = OPTIONS,
          }),
          { update = { sessionUpdate = 'tool_call_update', toolCallId = 't1', status = 'in_progress',
                       locations = { { path = dir .. '/open.txt', line = 1 } } } },
          H.req('fs/write_text_file', { path = dir .. '/open.txt', content = 'new\n' }),
          H.req('fs/write_text_file', { path = dir .. '/closed.txt', content = 'after\n' }),
          { update = { sessionUpdate = 'tool_call_update', toolCallId = 't1', status = 'completed' } },
          { update = { sessionUpdate = 'usage_update', used = 1200, size = 200000 } },
          { message = 'done' },
        } },
      },
    })
    child:lua(RECORD)
    child:cmd('edit ' .. dir .. '/open.txt')
    H.open(child)
    child:wait_for([[return #vim.tbl_filter(function(e) return e.name == 'AcpSessionStart' end, _G.fired) == 1]])
    local start = fired(child, 'AcpSessionStart')[1]
    T.eq(start.agent, 'test')
    T.eq(start.cwd, dir)
    T.eq(type(start.session_id), 'string')
    T.eq(start.session_id, child:lua([[return require('acp').current().info.session]]))

    child:lua([[require('acp').send('go')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]], 10000)
    local perm = fired(child, 'AcpPermissionRequest')
    T.eq(#perm, 1)
    T.eq(perm[1].id, 't1')
    T.eq(perm[1].title, 'Edit open.txt')
    -- The request carries no kind: the card's kind is given.
    T.eq(perm[1].kind, 'edit')
    T.eq(perm[1].options, { { id = 'allow', name = 'Allow', kind = 'allow_once' }, { id = 'reject', name = 'Reject', kind = 'reject_once' } })
    H.enter_permission(child)
    child:lua([[require('acp.ask.permission').choose(1)]])
    child:wait_for([[return #vim.tbl_filter(function(e) return e.name == 'AcpTurnEnd' end, _G.fired) == 1]], 10000)

    local turn_start = fired(child, 'AcpTurnStart')
    T.eq(#turn_start, 1)
    T.eq(turn_start[1].turn, 1)
    T.eq(turn_start[1].session_id, start.session_id)
    local turn_end = fired(child, 'AcpTurnEnd')[1]
    T.eq(turn_end.turn, 1)
    T.eq(turn_end.stop_reason, 'end_turn')
    T.eq(type(turn_end.duration_ms), 'number')
    T.eq(turn_end.usage.used, 1200)
    T.eq(turn_end.usage.size, 200000)

    -- One AcpToolCall per change of the card (the repeated state adds none).
    local calls = fired(child, 'AcpToolCall')
    local statuses = vim.tbl_map(function(c)
      return c.status
    end, calls)
    T.eq(statuses[1], 'pending')
    T.eq(statuses[#statuses], 'completed')
    for i = 2, #calls do
      T.neq(vim.inspect(calls[i]), vim.inspect(calls[i - 1]), 'each AcpToolCall is a change')
    end
    T.eq(calls[1].id, 't1')
    T.eq(calls[1].kind, 'edit')
    local last = calls[#calls]
    T.eq(last.locations, { { path = dir .. '/open.txt', line = 1 } })

    -- Files: the loaded buffer written through fs, the other file on disk.
    local files = fired(child, 'AcpFileChanged')
    table.sort(files, function(a, b)
      return a.path < b.path
    end)
    T.eq(#files, 2, vim.inspect(files))
    T.eq(files[1].path, dir .. '/closed.txt')
    T.eq(files[1].by, 'agent')
    T.eq(files[1].how, 'disk')
    T.eq(files[1].bufnr, nil)
    T.eq(files[2].path, dir .. '/open.txt')
    T.eq(files[2].by, 'agent')
    T.eq(files[2].how, 'buffer')
    T.eq(files[2].bufnr, child:lua([[return vim.fn.bufnr(...)]], { dir .. '/open.txt' }))
    T.eq(files[2].agent, 'test')

    -- Never during a drain's edit, never in a fast callback; no error.
    for _, e in ipairs(child:lua('return _G.fired')) do
      T.eq(e.editing, false, e.name .. ' fired during a buffer edit')
      T.eq(e.fast, false, e.name .. ' fired in a fast event')
    end
    T.eq(#fired(child, 'AcpError'), 0)
    T.eq(#fired(child, 'AcpSessionStart'), 1)
  end, timeout = 30000 },

  { 'AcpError for a failed prompt and for an agent that exits; AcpTurnEnd says why', function()
    local child = H.start({
      turns = {
        { match = 'fail', steps = { { error = { code = -32000, message = 'the model is overloaded' } } } },
        { match = 'crash', steps = { { crash = { code = 3 } } } },
      },
    })
    child:lua(RECORD)
    H.open(child)
    H.turn(child, 'fail')
    child:wait_for([[return #vim.tbl_filter(function(e) return e.name == 'AcpError' end, _G.fired) == 1]])
    local err = fired(child, 'AcpError')[1]
    T.match(err.message, 'the model is overloaded')
    T.eq(err.agent, 'test')
    T.eq(err.source, 'turn')
    T.eq(fired(child, 'AcpTurnEnd')[1].stop_reason, 'error')
    child:lua([[require('acp').send('crash')]])
    child:wait_for([[return #vim.tbl_filter(function(e) return e.name == 'AcpError' end, _G.fired) == 2]], 10000)
    local gone = fired(child, 'AcpError')[2]
    T.eq(gone.source, 'agent')
    T.match(gone.message, '.')
    T.eq(fired(child, 'AcpTurnEnd')[2].stop_reason, 'disconnected')
  end, timeout = 30000 },

  { 'AcpFileChanged by the buffer sync when the agent changed a loaded file on disk itself', function()
    local dir = H.project({ ['own.txt'] = 'one\n' })
    local child = H.start({ cwd = dir, turns = { { match = 'go', steps = { { sleep_ms = 200 }, { message = 'ok' } } } } })
    child:lua(RECORD)
    child:cmd('edit ' .. dir .. '/own.txt')
    H.open(child)
    child:lua([[require('acp').send('go')]])
    -- The agent writes the disk itself (as OpenCode or Codex do) during the turn.
    T.write_file(dir .. '/own.txt', 'two\n')
    child:wait_for([[return #vim.tbl_filter(function(e) return e.name == 'AcpFileChanged' end, _G.fired) == 1]], 10000)
    local e = fired(child, 'AcpFileChanged')[1]
    T.eq(e.path, dir .. '/own.txt')
    T.eq(e.by, 'sync')
    T.eq(e.how, 'reload')
    T.eq(e.bufnr, child:lua([[return vim.fn.bufnr(...)]], { dir .. '/own.txt' }))
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)]], { dir .. '/own.txt' }), { 'two' })
  end },

  { 'status() and chats() for statuslines', function()
    local child = H.start({
      turns = {},
      agent_info = { session_updates = {
        { sessionUpdate = 'config_option_update', configOptions = {
          { id = 'model', name = 'Model', category = 'model', type = 'select', currentValue = 'm2',
            options = { { value = 'm1', name = 'Small' }, { value = 'm2', name = 'Large' } } },
        } },
      } },
    })
    T.eq(child:lua([[return require('acp').status() == nil]]), true)
    T.eq(child:lua([[return require('acp').chats()]]), {})
    H.open(child)
    child:wait_for([[return require('acp').status().model ~= nil]])
    local s = child:lua([[return require('acp').status()]])
    T.eq(s.agent, 'test')
    T.eq(s.state, 'idle')
    T.eq(s.model, 'Large')
    T.eq(s.turns, 0)
    H.turn(child, 'hello')
    T.eq(child:lua([[return require('acp').status().turns]]), 1)
    local chats = child:lua([[return require('acp').chats()]])
    T.eq(#chats, 1)
    T.eq(chats[1].agent, 'test')
    T.eq(chats[1].thread, child:lua([[return require('acp').current().thread]]))
  end },
  { 'autocmds fire for exact and wildcard patterns, not when nobody listens; a handler may add one for the next event', function()
    local child = H.start({ turns = {} })
    local got = child:lua([[
      local events = require('acp.events')
      local seen, runs = {}, {}
      local exec = vim.api.nvim_exec_autocmds
      vim.api.nvim_exec_autocmds = function(event, opts)
        runs[#runs + 1] = opts.pattern
        return exec(event, opts)
      end
      vim.api.nvim_create_autocmd('User', { pattern = 'AcpTurn*', callback = function(ev)
        seen[#seen + 1] = ev.match
        -- Added by a handler while the flush runs: it hears the next event.
        vim.api.nvim_create_autocmd('User', { pattern = 'AcpToolCall', once = true, callback = function(e)
          seen[#seen + 1] = e.match .. ' ' .. e.data.id
        end })
      end })
      events.emit('AcpTurnStart', { turn = 1 })
      events.emit('AcpToolCall', { id = 't1' })
      events.emit('AcpError', { message = 'nobody listens' })
      events.flush()
      -- The `once` handler is gone: nobody listens to AcpToolCall now.
      events.emit('AcpToolCall', { id = 't2' })
      events.emit('AcpTurnEnd', { turn = 1 })
      events.flush()
      vim.api.nvim_exec_autocmds = exec
      return { seen = seen, runs = runs }
    ]])
    T.eq(got.seen, { 'AcpTurnStart', 'AcpToolCall t1', 'AcpTurnEnd' })
    T.eq(got.runs, { 'AcpTurnStart', 'AcpToolCall', 'AcpTurnEnd' })
  end },

  { 'AcpToolCall payloads are built only while someone listens; a listener added later hears the next change', function()
    local child = H.start({ turns = {} })
    local got = child:lua([[
      local announce, events = require('acp.chat.announce'), require('acp.events')
      local emitted, emit = {}, events.emit
      events.emit = function(name, data)
        emitted[#emitted + 1] = name .. ' ' .. tostring(data.status)
        return emit(name, data)
      end
      local view = { agent = 'a', thread = 4242, info = {} }
      local function card(status)
        return { type = 'card', thread = 4242, index = 3, card = { id = 't', title = 'Read', kind = 'read',
          status = status, locations = {}, header = {} } }
      end
      announce.observe(view, { card('pending') })
      emitted[#emitted + 1] = 'listener added'
      vim.api.nvim_create_autocmd('User', { pattern = 'AcpToolCall', callback = function() end })
      announce.observe(view, { card('pending') })
      announce.observe(view, { card('pending') })
      announce.observe(view, { card('completed') })
      events.emit = emit
      return emitted
    ]])
    T.eq(got, { 'listener added', 'AcpToolCall pending', 'AcpToolCall completed' })
  end },
}
