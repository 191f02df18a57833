--- Steering: a message typed while a turn runs goes into that turn
--- (`_session/steering`) instead of waiting for it to end, with agents that
--- offer it (claude-agent-acp and the TypeScript Codex adapter advertise
--- `_meta.steering`). `:AcpSend! {text}` and the chat key `chat.keys.steer`
--- steer; a plain send still queues (acp.prompt.queue).
---
--- The request asks for `idleBehavior = "promptRequired"`: when the turn
--- ended meanwhile the agent answers `promptRequired` and the message goes
--- as a normal prompt (or waits in the queue), so its turn is the client's.
--- `injected` and `startedNewTurn` show in the chat (the core adds the
--- message and a line); an error is a line in the chat and the message is
--- queued: it is never lost.
local M = {}

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.INFO)
end

--- Whether the chat's agent takes `_session/steering` (the core reads its
--- `initialize` answer; see acp.Event.agent).
function M.offered(view)
  return view.steering == true
end

local function line(view, level, msg)
  if not pcall(require('acp.core').notice, view.thread, level, msg) then
    notify(msg, level == 'warn' and vim.log.levels.WARN or nil)
  end
end

--- Steers the running turn with `text` (opts as for ChatView:send). Not
--- offered, or no turn runs: the usual way (queued, or sent now). Returns
--- true when the message was taken (steered, sent or queued).
function M.send(view, text, opts)
  local queue = require('acp.prompt.queue')
  local plain = vim.tbl_extend('force', opts or {}, { steer = false })
  if view.state ~= 'running' then
    return view:send(text, plain)
  end
  if not M.offered(view) then
    notify(('%s does not offer steering: the message is queued'):format(view.agent_name or 'the agent'))
    return queue.add(view, text, plain)
  end
  local context = require('acp.prompt.context')
  local blocks, why = context.build(view, text, opts)
  if blocks == false then
    -- Built once the agent's capabilities are in (the view sends it then).
    return true
  elseif not blocks then
    notify(why, vim.log.levels.WARN)
    return false
  end
  local dispatch = require('acp.core.dispatch')
  local id = dispatch.request(function(ev)
    if ev.error ~= nil then
      line(view, 'warn', ('steering failed (%s): the message is queued'):format(require('acp.util.text').fit(tostring(ev.error), 160)))
      return queue.add(view, text, plain)
    end
    local outcome = type(ev.result) == 'table' and ev.result.outcome or nil
    if outcome == 'injected' or outcome == 'startedNewTurn' then
      context.sent(view)
      return
    end
    -- `promptRequired` (the turn ended first) or an answer not understood:
    -- a normal prompt, queued if another turn runs by now.
    view:send(text, plain)
  end)
  local params = {
    prompt = blocks,
    _meta = { steering = { idleBehavior = 'promptRequired' } },
  }
  local ok, err = pcall(require('acp.core').request, view.thread, '_session/steering', params, id)
  if not ok then
    dispatch.requests[id] = nil
    line(view, 'warn', ('steering failed (%s): the message is queued'):format(require('acp.util.text').error(err)))
    return queue.add(view, text, plain)
  end
  require('acp.prompt.history').add(vim.trim(text))
  return true
end

return M
