-- The agent withdraws a request it sent (`$/cancel_request`, the protocol's
-- per-request cancellation): a waiting permission or elicitation closes, the
-- card or the chat says the agent withdrew it, and the agent gets the
-- cancelled-request error (-32800), not an answer made up for the user. A
-- cancel naming a request that is unknown or already answered changes nothing.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

local OPTIONS = {
  { optionId = 'o-allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'o-reject', name = 'Reject', kind = 'reject_once' },
}

local function ask(id, command, extra)
  return H.req('session/request_permission', {
    toolCall = { toolCallId = id, title = command, kind = 'execute', rawInput = { command = command } },
    options = OPTIONS,
  }, extra)
end

local function start(steps)
  local child, paths = H.start({
    turns = { { match = 'go', steps = steps } },
    config = { permissions = { auto_allow = {}, grace_ms = 0 } },
  })
  H.open(child)
  return child, paths
end

local function float_text(child)
  return table.concat(child:lua([[local p = require('acp.ask.permission')
    return p.buf and vim.api.nvim_buf_is_valid(p.buf) and vim.api.nvim_buf_get_lines(p.buf, 0, -1, false) or {}]]), '\n')
end

local function shown_on_screen(screen, pattern)
  T.wait(function()
    return table.concat(screen:shot().text, '\n'):find(pattern) ~= nil
  end, 3000)
end

return {
  { 'a permission the agent withdraws closes its float, its card says so, the agent gets -32800 and the next request moves up', function()
    local child, paths = start({
      ask('c1', 'make deploy', { background = true, cancel_after_ms = 600 }),
      ask('c2', 'make test', { background = true }),
      { sleep_ms = 5000 },
      { message = 'done' },
    })
    local screen = Screen.attach(child, 100, 30)
    child:lua([[require('acp').send('go')]])
    child:wait_for([[local p = require('acp.ask.permission') return #p.queue == 2 and p.win ~= nil]], 5000)
    T.match(float_text(child), 'make deploy')
    -- Withdrawn: the float now asks the next request.
    child:wait_for([[return #require('acp.ask.permission').queue == 1]], 5000)
    T.match(float_text(child), 'make test')
    T.no_match(float_text(child), 'make deploy')
    local answers = H.permission_answers(paths)
    T.eq(#answers, 1, 'only the withdrawn one is answered')
    T.eq(answers[1].error.code, -32800, 'the cancelled-request error, not a choice')
    T.eq(answers[1].result, nil)
    shown_on_screen(screen, 'the agent withdrew this request')
    T.match(H.transcript_text(child), 'the agent withdrew this request')
    -- The one that moved up is the user's to answer, as before.
    H.enter_permission(child)
    child:feed('y')
    T.eq(H.wait_permission_answer(paths, 2), 'o-allow')
    T.eq(#H.events_of(paths, 'cancel_request'), 1)
  end },

  { 'a cancel naming an unknown or an already answered request changes nothing', function()
    local cancel = function(id)
      return { notify = { method = '$/cancel_request', params = { requestId = id } } }
    end
    local child, paths = start({
      ask('c1', 'make deploy'),
      -- The agent's request ids start at 0: these name the answered one and unknown ones.
      cancel(0), cancel(1), cancel(4242), cancel('no-such-id'),
      ask('c2', 'make test', { background = true }),
      cancel(0), cancel(4242),
      { sleep_ms = 5000 },
      { message = 'done' },
    })
    child:lua([[require('acp').send('go')]])
    child:wait_for([[local p = require('acp.ask.permission') return #p.queue == 1 and p.win ~= nil]], 5000)
    H.enter_permission(child)
    child:feed('n')
    T.eq(H.wait_permission_answer(paths, 1), 'o-reject')
    child:wait_for([[local p = require('acp.ask.permission') return #p.queue == 1 and p.win ~= nil]], 5000)
    T.match(float_text(child), 'make test')
    child:settle()
    T.eq(child:lua([[return #require('acp.ask.permission').queue]]), 1, 'still waiting for the user')
    H.enter_permission(child)
    child:feed('y')
    T.eq(H.wait_permission_answer(paths, 2), 'o-allow')
    T.no_match(H.transcript_text(child), 'withdrew')
  end },

  { 'an elicitation the agent withdraws closes, the chat says so and the agent gets -32800', function()
    local schema = { type = 'object', properties = { name = { type = 'string' } } }
    local child, paths = start({
      H.req('elicitation/create', { mode = 'form', message = 'Name the release', requestedSchema = schema },
        { expect_error = { code = -32800 }, cancel_after_ms = 600 }),
      { message = 'after' },
    })
    local screen = Screen.attach(child, 100, 30)
    child:lua([[require('acp').send('go')]])
    child:wait_for([[local e = require('acp.ask.elicitation') return #e.queue == 1 and e.win ~= nil]], 5000)
    child:wait_for([[local e = require('acp.ask.elicitation') return #e.queue == 0 and e.win == nil]], 5000)
    H.wait_idle(child)
    T.match(H.transcript_text(child), 'the agent withdrew this request: Name the release')
    shown_on_screen(screen, 'the agent withdrew this request')
    T.eq(#H.events_of(paths, 'check_failed'), 0)
    T.eq(#H.events_of(paths, 'check_ok'), 1)
  end },
}
