-- The chat view as a user meets it: turns that own their cards and plans,
-- the live status area, the layout, rendering, keys and rough edges.
local H = require('tests.helpers.acp')

local function plan(content, status)
  return { update = { sessionUpdate = 'plan', entries = { { content = content, status = status, priority = 'high' } } } }
end

local function tc(fields)
  fields.sessionUpdate = fields.sessionUpdate or 'tool_call'
  return { update = fields }
end

--- The chat's entries in order, as the core holds them: { kind, entry }.
local function entries(child)
  return child:lua([[
    local v = require('acp').current()
    local core = require('acp.core')
    local out = {}
    for index = 0, v.last_index or -1 do
      local e = v.entries[index]
      if e then out[#out + 1] = { kind = e.kind, entry = core.entry(v.thread, index) } end
    end
    return out
  ]])
end

return {
  { 'turns own their cards and plans, across a restart and a reused id', function()
    local child = H.start({
      config = { permissions = { auto_allow = { { kind = 'execute', pattern = 'rm *' } } } },
      turns = {
        { match = 'first', steps = {
          plan('old plan', 'in_progress'),
          tc({ toolCallId = 'c1', title = 'Read a', kind = 'read', status = 'in_progress' }),
          { crash = { code = 3 } },
        } },
        { match = 'second', steps = {
          tc({ sessionUpdate = 'tool_call_update', toolCallId = 'c1', title = 'Read b', kind = 'read', status = 'completed' }),
          plan('new plan', 'pending'),
          { message = 'done' },
        } },
        { match = 'perm', steps = {
          H.req('session/request_permission', {
            toolCall = { toolCallId = 'rm', title = 'rm -rf build/', kind = 'execute' },
            options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' } },
          }),
          tc({ sessionUpdate = 'tool_call_update', toolCallId = 'rm', status = 'completed' }),
        } },
      },
    })
    H.open(child)
    H.turn(child, 'first')
    H.turn(child, 'second')
    H.turn(child, 'perm 1')
    H.turn(child, 'perm 2')
    local list = entries(child)
    local seen, restart = {}, nil
    for i, e in ipairs(list) do
      if e.kind == 'notice' and e.entry.text:match('Restarted') then
        restart = i
      elseif e.kind == 'tool_call' or e.kind == 'plan' then
        seen[#seen + 1] = { i, e.entry.title or e.entry.items[1].content, e.entry.status, e.entry.notes }
      end
    end
    T.truthy(restart, 'a new session section')
    T.eq(seen[1][2], 'old plan')
    T.eq({ seen[2][2], seen[2][3] }, { 'Read a', 'in_progress' }, "turn 1's card kept")
    T.eq({ seen[3][2], seen[3][3] }, { 'Read b', 'completed' }, 'a new card in the new session')
    T.eq(seen[4][2], 'new plan')
    T.truthy(seen[3][1] > restart and seen[4][1] > restart)
    -- One card per permission turn, each with its own note.
    T.eq(#seen, 6)
    T.match(seen[5][4][1], 'auto%-allowed')
    T.match(seen[6][4][1], 'auto%-allowed')
    T.eq(#seen[5][4], 1, 'the second note did not land on the first card')
    T.eq(seen[6][3], 'completed')
  end },
}
