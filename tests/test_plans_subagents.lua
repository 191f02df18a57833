-- Plans by id (`plan_update` with a checklist or Markdown, `plan_removed`) and subagents
-- (`subagent_update`, `session_message(_chunk)`, a child session's own updates and
-- requests, tool-call content of type `session`), with the schema's own shapes
-- (tests/fixtures/plans_by_id.json, tests/fixtures/subagents.json). Both are advertised
-- only behind `experimental`.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

local function fixture(name)
  local f = assert(io.open(H.root .. '/tests/fixtures/' .. name .. '.json', 'rb'))
  local data = vim.json.decode(f:read('*a'))
  f:close()
  return data
end

local PLANS = fixture('plans_by_id')
local SUB = fixture('subagents')
local CHILD = 'sess_child_1'

local EXPERIMENTAL = { experimental = { plan_v2 = true, subagents = true } }

--- A child with a W x H screen, the chat 60 columns wide, time frozen, the chat open.
local function start(turns)
  local cfg = { chat = { width = 60, min_code_width = 20 }, experimental = EXPERIMENTAL.experimental }
  local child, paths = H.start({ turns = turns, config = cfg, agent_info = { name = 'demo' } })
  local screen = Screen.attach(child, 90, 30)
  child:lua([[
    local frozen = vim.uv.now()
    vim.uv.now = function() return frozen end
  ]])
  H.open(child)
  return child, screen, paths
end

--- An update of the child session (sent on its own session id).
local function on_child(update)
  return { notify = { method = 'session/update', params = { sessionId = CHILD, update = update } } }
end

local function with(t, changes)
  local out = vim.deepcopy(t)
  for k, v in pairs(changes) do
    out[k] = v
  end
  return out
end

local function delegate_steps(extra)
  local steps = {
    { message = 'I will hand the investigation to a subagent.\n' },
    { update = SUB.tool_call },
    { update = SUB.announce },
    { update = SUB.task },
    on_child(SUB.child_chunk),
    on_child(SUB.child_tool_call),
    { update = SUB.result_chunk },
    { update = SUB.result },
  }
  for _, s in ipairs(extra or {}) do
    steps[#steps + 1] = s
  end
  return steps
end

return {
  { 'plan and subagents are advertised only when their experimental option is on; a wrong value is a clear error', function()
    local child, paths = H.start({ turns = {} })
    H.open(child)
    local caps = H.events_of(paths, 'initialize')[1].params.clientCapabilities
    T.eq(caps.plan, nil)
    T.eq(caps.subagents, nil)
    local r = child:lua([[
      local notes = {}
      local notify = vim.notify
      vim.notify = function(msg, level) notes[#notes + 1] = { msg = msg, level = level } end
      local ok = require('acp').setup({ experimental = { plan_v2 = 'yes' } })
      vim.notify = notify
      return { ok = ok, notes = notes }
    ]])
    T.eq(r.ok, false)
    T.eq(#r.notes, 1)
    T.match(r.notes[1].msg, 'experimental%.plan_v2')
    T.eq(r.notes[1].level, vim.log.levels.ERROR)
    child:stop()

    local child2, _, paths2 = start({})
    local caps2 = H.events_of(paths2, 'initialize')[1].params.clientCapabilities
    T.eq(caps2.plan, {})
    T.eq(caps2.subagents, {})
    child2:stop()
  end },

  { 'plans by id: each in its turn, updated in place, the legacy plan beside them, removed by plan_removed', function()
    local done = vim.deepcopy(PLANS.items)
    done.plan.entries[2].status = 'completed'
    local child, screen = start({
      { match = 'plan', steps = {
        { message = 'Two plans for this job.\n' },
        { update = PLANS.items },
        { update = PLANS.markdown },
        { update = done },
        { update = { sessionUpdate = 'plan', entries = { { content = 'Legacy step', status = 'pending', priority = 'low' } } } },
      } },
      { match = 'drop', steps = { { update = PLANS.removed }, { message = 'Dropped the markdown plan.' } } },
    })
    H.turn(child, 'plan')
    local text = H.transcript_text(child)
    local _, n = text:gsub('Plan · 2/3 done', '')
    T.eq(n, 1, 'the checklist was updated in place, not added again')
    T.no_match(text, 'Plan · 1/3 done')
    T.match(text, 'Plan · PLAN%.md\n\n# Refactor\n\n1%. Split the parser')
    T.match(text, 'Plan · 0/1 done\n%- %[ %] Legacy step %(low%)')
    screen:settle()
    Screen.expect(screen:shot(), 'plan-by-id')

    H.turn(child, 'drop')
    text = H.transcript_text(child)
    T.match(text, 'Plan · removed by the agent')
    T.no_match(text, 'Split the parser')
    T.match(text, 'Plan · 2/3 done', 'the other plan stays')
  end },

  { 'a subagent: a folded block under its tool call, live, with its state; its permission request names it', function()
    local child, screen, paths = start({ { match = 'delegate', steps = delegate_steps({
      H.req('session/request_permission', {
        sessionId = CHILD,
        toolCall = { toolCallId = 'call_child_edit', title = 'Edit tests/fixture.lua', kind = 'edit' },
        options = { { optionId = 'allow', name = 'Allow', kind = 'allow_once' }, { optionId = 'reject', name = 'Reject', kind = 'reject_once' } },
      }),
      on_child({ sessionUpdate = 'tool_call_update', toolCallId = 'call_child_edit', status = 'completed' }),
      { update = SUB.idle },
      { message = 'The subagent found it: the fixture path is wrong.' },
    }) } })
    child:lua([[require('acp').send('delegate')]])
    child:wait_for([[return #require('acp.ask.permission').queue > 0]], 5000)
    local float = child:lua([[local p = require('acp.ask.permission'); return table.concat((p.lines(p.queue[1], 70)), '\n')]])
    T.match(float, 'subagent test%-investigator of %S+ asks for permission')
    T.match(float, 'Edit tests/fixture%.lua')
    local text = H.transcript_text(child)
    T.match(text, 'Subagent · test%-investigator · running %(cancel with the card key%)')
    T.match(text, '> %*%*task:%*%* Find why the integration tests fail')
    T.match(text, '> Reading the test log%.')
    T.match(text, '> • Read tests/integration%.log · completed')
    T.match(text, '> The fixture path is wrong%.')
    H.enter_permission(child)
    child:feed('y')
    T.eq(H.wait_permission_answer(paths, 1), 'allow')
    H.wait_idle(child)
    text = H.transcript_text(child)
    T.match(text, 'Subagent · test%-investigator · idle\n')
    -- The card of the call it asked about names it and follows its updates.
    T.match(text, 'edit · Edit tests/fixture%.lua · completed')
    T.match(text, 'asked by subagent `test%-investigator`')
    -- The block sits right under its tool card, its transcript folded.
    local order = child:lua([[
      local v = require('acp').current()
      local kinds = {}
      for i = 0, v.last_index do
        if v.entries[i] then kinds[#kinds + 1] = v.entries[i].kind end
      end
      return kinds
    ]])
    local card_at
    for i, k in ipairs(order) do
      if k == 'tool_call' and not card_at then
        card_at = i
      end
    end
    T.eq(order[card_at + 1], 'subagent')
    local folded = child:lua([[
      local v = require('acp').current()
      for i = 0, v.last_index do
        local e = v.entries[i]
        if e and e.kind == 'subagent' then
          local first = v:entry_range(i)
          return vim.api.nvim_win_call(v.win, function() return vim.fn.foldclosed(first + 2) end)
        end
      end
    ]])
    T.neq(folded, -1, 'the transcript is folded under the header line')
    child:cmd('normal! gg')
    screen:settle()
    Screen.expect(screen:shot(), 'subagent-block')
    -- Opened: its own transcript, quoted under the header.
    child:lua([[
      local v = require('acp').current()
      for i = 0, v.last_index do
        local e = v.entries[i]
        if e and e.kind == 'subagent' then
          vim.api.nvim_set_current_win(v.win)
          vim.api.nvim_win_set_cursor(v.win, { v:entry_range(i) + 2, 0 })
          vim.cmd('normal! zo')
        end
      end
    ]])
    screen:settle()
    Screen.expect(screen:shot(), 'subagent-block-open')
  end },

  { 'updates of a subagent that come before its tool call are kept, and the card key cancels only that subagent', function()
    local child, _, paths = start({ { match = 'early', steps = {
      { update = with(SUB.announce, {}) },
      on_child(SUB.child_chunk),
      { update = SUB.tool_call },
      { wait_cancel = true },
    } } })
    child:lua([[require('acp').send('early')]])
    child:wait_for([[return require('acp').current():lines()[1] ~= nil and
      table.concat(require('acp').current():lines(), '\n'):find('under `Task', 1, true) ~= nil]], 5000)
    local text = H.transcript_text(child)
    local _, blocks = text:gsub('Subagent · ', '')
    T.eq(blocks, 1, 'the tool call links the block that exists')
    T.match(text, '> Reading the test log%.')
    -- The card key on the block's header: session/cancel with the child's id.
    child:lua([[
      local v = require('acp').current()
      for i = 0, v.last_index do
        local e = v.entries[i]
        if e and e.kind == 'subagent' then
          vim.api.nvim_set_current_win(v.win)
          vim.api.nvim_win_set_cursor(v.win, { v:entry_range(i) + 1, 0 })
        end
      end
      require('acp.chat.activity').card_action(v)
    ]])
    T.wait(function()
      return #H.events_of(paths, 'cancel') > 0
    end, 3000)
    T.eq(H.events_of(paths, 'cancel')[1].sessionId, CHILD)
    T.eq(child:lua([[return require('acp').current().state]]), 'running', 'the parent turn goes on')
    child:lua([[require('acp').cancel()]])
    H.wait_idle(child)
  end },
}
