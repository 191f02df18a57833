-- The agent's notices and context compactions (schema 1.15.1+, advertised
-- as `session.notices` / `session.compaction`), and the patch semantics of
-- update fields: omitted = unchanged, `null` as the schema says, a value =
-- replaced (`title: null` clears the session's title, `content: []` empties
-- a card), `updatedAt` in the session picker.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')
local Child = require('tests.helpers.child')

local function up(fields)
  return { update = fields }
end

--- The header as drawn in the chat's window.
local HEADER = [[
  local v = require('acp').current()
  vim.cmd('redraw')
  return vim.api.nvim_eval_statusline(vim.wo[v.win].winbar,
    { winid = v.win, use_winbar = true, maxwidth = vim.api.nvim_win_get_width(v.win) }).str
]]

--- Records what reaches vim.notify in the child.
local RECORD_NOTIFY = [[
  _G.notified = {}
  vim.notify = function(msg, level) table.insert(_G.notified, { msg = msg, level = level }) end
]]

local NOTICE_TURN = { match = 'compact', steps = {
  up({ sessionUpdate = 'notice', severity = 'info', title = 'Compacting the conversation' }),
  up({ sessionUpdate = 'compaction_update', compactionId = 'c1', status = 'in_progress' }),
  up({ sessionUpdate = 'compaction_summary_chunk', compactionId = 'c1',
    content = { type = 'text', text = 'The user is fixing the greeting.' } }),
  up({ sessionUpdate = 'compaction_summary_chunk', compactionId = 'c1',
    content = { type = 'text', text = '\nDone: the typo. Next: the tests.' } }),
  up({ sessionUpdate = 'compaction_update', compactionId = 'c1', status = 'completed' }),
  { message = 'Context compacted.' },
  up({ sessionUpdate = 'notice', severity = 'warning', title = 'Context window 90% full',
    description = 'Older tool output was dropped.' }),
  up({ sessionUpdate = 'compaction_update', compactionId = 'c2', status = 'failed',
    error = 'the summary model is unavailable' }),
  up({ sessionUpdate = 'notice', severity = 'error', title = 'Compaction failed %{x}' }),
} }

return {
  { 'notices and compaction are advertised in initialize', function()
    local child, paths = H.start()
    H.open(child)
    local caps = H.events_of(paths, 'initialize')[1].params.clientCapabilities
    T.eq(caps.session.notices, {})
    T.eq(caps.session.compaction, {})
  end },

  { 'a notice is a line with its severity coloured; warnings and errors also go to vim.notify; a compaction is a folded block with its status', function()
    local child = H.start({ turns = { NOTICE_TURN }, config = { chat = { width = 60 } }, agent_info = { name = 'demo' } })
    local screen = Screen.attach(child, 80, 30)
    child:lua([[
      local frozen = vim.uv.now()
      vim.uv.now = function() return frozen end
    ]])
    child:lua(RECORD_NOTIFY)
    H.open(child)
    H.turn(child, 'compact')
    local text = H.transcript_text(child)
    T.contains(text, 'ℹ Notice · Compacting the conversation')
    T.contains(text, 'Compaction · completed\n  The user is fixing the greeting.\n  Done: the typo. Next: the tests.')
    T.contains(text, '⚠ Warning · Context window 90% full\n  Older tool output was dropped.')
    T.contains(text, 'Compaction · failed\n  error: the summary model is unavailable')
    T.contains(text, '✖ Error · Compaction failed %{x}')
    -- In the export too (the core's markdown).
    T.contains(child:lua([[return require('acp').export()]]), 'Compaction · completed\n  The user is fixing the greeting.')
    -- The summary is folded under the block's first line.
    local folded = child:lua([[
      local v = require('acp').current()
      local rows = {}
      for i, l in ipairs(v:lines()) do
        if l:match('^Compaction') then
          rows[#rows + 1] = vim.api.nvim_win_call(v.win, function() return vim.fn.foldclosed(i + 1) end)
        end
      end
      return rows
    ]])
    T.eq(#folded, 2)
    T.neq(folded[1], -1, 'the summary is folded')
    T.eq(folded[2], -1, 'a one-line body shows (foldminlines)')
    -- Warnings and errors are told, escaped; info is not.
    child:wait_for([[return #_G.notified >= 2]])
    local told = child:lua([[return _G.notified]])
    T.eq(#told, 2, vim.inspect(told))
    T.eq(told[1].level, vim.log.levels.WARN)
    T.contains(told[1].msg, 'Context window 90% full — Older tool output was dropped.')
    T.eq(told[2].level, vim.log.levels.ERROR)
    T.contains(told[2].msg, 'Compaction failed %{x}')
    screen:settle()
    Screen.expect(screen:shot(), 'notices-compaction')
  end },

  { 'title: null clears the header title; content: [] empties the card; updatedAt reaches the session picker', function()
    local child = H.start({ turns = {
      { match = 'one', steps = {
        up({ sessionUpdate = 'tool_call', toolCallId = 't1', title = 'Run the tests', kind = 'execute', status = 'in_progress',
          content = { { type = 'content', content = { type = 'text', text = 'old output line' } } } }),
        up({ sessionUpdate = 'session_info_update', title = 'Greeting fix', updatedAt = '2026-11-25T10:00:00Z' }),
      } },
      { match = 'two', steps = {
        up({ sessionUpdate = 'tool_call_update', toolCallId = 't1', status = 'completed', content = {} }),
        up({ sessionUpdate = 'session_info_update', title = vim.NIL, updatedAt = '2026-11-25T12:34:56.120Z' }),
      } },
    } })
    H.open(child)
    H.turn(child, 'one')
    T.contains(child:lua(HEADER), 'Greeting fix')
    T.contains(H.transcript_text(child), 'old output line')
    H.turn(child, 'two')
    T.eq(child:lua(HEADER):find('Greeting fix', 1, true), nil, 'the title is cleared')
    local text = H.transcript_text(child)
    T.eq(text:find('old output line', 1, true), nil, 'content: [] empties the card')
    T.contains(text, 'run · Run the tests · completed')
    -- The picker shows the live session's time (its list entry is older).
    local row = child:lua([[
      local v = require('acp').current()
      return require('acp.agents.sessions').format(v, { sessionId = v.info.session, title = 'listed', updatedAt = '2020-01-01T00:00:00Z', cwd = '/p' })
    ]])
    T.contains(row, '2026-11-25 12:34:56')
    T.eq(row:find('2020', 1, true), nil)
  end },

  { 'a replayed trace with notices and compactions: shown as they were, no mismatch', function()
    local dir = H.project({})
    local tmp = T.tmpdir('notices')
    local paths = { agent_log = tmp .. '/agent.jsonl' }
    local child = H.start({
      cwd = dir,
      agent = { cmd = H.agent_bin, args = { '--replay', H.root .. '/tests/traces/notices.jsonl' },
        env = { ACP_TEST_AGENT_LOG = paths.agent_log } },
    })
    child:lua(RECORD_NOTIFY)
    H.open(child)
    H.turn(child, '/compact')
    H.turn(child, '/compact again')
    local text = H.transcript_text(child)
    T.contains(text, 'ℹ Notice · Compacting the conversation')
    T.contains(text, 'Compaction · completed\n  The user is fixing the greeting in hello.py.\n  Done so far: the typo is fixed; the tests pass.')
    T.contains(text, '⚠ Warning · Context window 90% full')
    T.contains(text, 'Compaction · failed\n  error: the summary model is unavailable')
    T.contains(text, '✖ Error · Compaction failed\n  Start a new chat to continue.')
    T.eq(vim.tbl_map(function(e)
      return e.detail
    end, H.events_of(paths, 'replay_mismatch')), {})
    T.eq(#H.events_of(paths, 'replay_done'), 1)
    child:wait_for([[return #_G.notified >= 2]])
  end },

  -- In Insert mode (the user typing the next prompt) Neovim's redraw after an error message
  -- waits a second for it to be read, running timers but no scheduled callback: the chat's
  -- drains. The plugin's errors are echoed in ErrorMsg instead (in :messages and v:errmsg).
  { 'an error told while the user types holds no redraw: scheduled work runs before a 500 ms timer', function()
    local child = Child.new()
    local function order_after(notify)
      child:cmd('startinsert')
      child:lua(([[
        _G.order = {}
        -- As the plugin's errors come: from a scheduled callback (a drain, a notice).
        vim.schedule(function()
          %s('acp.nvim: the agent failed', vim.log.levels.ERROR)
          -- Something for the next redraw to draw (the chat's text, in use).
          vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'typed' })
          -- A callback scheduled from a libuv callback after the redraw began, as the core's
          -- wake-up schedules a drain; and a timer that runs even while the redraw waits.
          local wake, timer = vim.uv.new_timer(), vim.uv.new_timer()
          wake:start(50, 0, function()
            wake:close()
            vim.schedule(function() table.insert(_G.order, 'scheduled') end)
          end)
          timer:start(500, 0, function() table.insert(_G.order, 'timer'); timer:close() end)
        end)
      ]]):format(notify))
      child:wait_for('return #_G.order == 2', 5000)
      local r = child:lua([[return { order = _G.order, mode = vim.api.nvim_get_mode().mode,
        errmsg = vim.v.errmsg, messages = vim.fn.execute('messages') }]])
      child:feed('<Esc>')
      child:lua([[vim.v.errmsg = '']])
      return r
    end
    local ours = order_after("require('acp.util.escape').notify")
    T.eq(ours.mode, 'i')
    T.eq(ours.order, { 'scheduled', 'timer' })
    T.eq(ours.errmsg, 'acp.nvim: the agent failed')
    T.truthy(ours.messages:find('acp.nvim: the agent failed', 1, true), 'kept in :messages')
    -- What it avoids: Neovim's own notify of an error, in the same state.
    local plain = order_after('vim.notify')
    T.eq(plain.mode, 'i')
    T.eq(plain.order, { 'timer', 'scheduled' })
    -- Out of Insert mode it stays an error: a command that reports it fails.
    local ok, err = pcall(child.cmd, child, "lua require('acp.util.escape').notify('acp.nvim: refused', vim.log.levels.ERROR)")
    T.eq(ok, false)
    T.match(err, 'acp%.nvim: refused')
  end },
}
