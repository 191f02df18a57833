--- The ask layer: questions the agent asks the user, each answered only by
--- a deliberate act. permission.lua queues permission requests and shows
--- them in a float; elicitation.lua shows the agent's requests for input
--- (forms, URLs); auth.lua signs in with the agent's methods.
-- May use: util, config, core, editor.
---
--- This file: the layer's entry points for the chat and the core.
local M = {}

--- Moves into the pending question: the permission request first, else
--- the agent's request for input (the chat's `permissions.focus_key`).
function M.focus()
  local elicitation = require('acp.ask.elicitation')
  if #require('acp.ask.permission').queue == 0 and #elicitation.queue > 0 then
    return elicitation.focus()
  end
  require('acp.ask.permission').focus()
end

--- Registers the handler of the elicitation events (which belong to no
--- chat view) with the core's dispatcher; elicitation.lua loads on the
--- first one.
---@param dispatch table acp.core.dispatch
function M.serve(dispatch)
  dispatch.on_elicitation = function(ev)
    require('acp.ask.elicitation').on_event(ev)
  end
end

return M
