--- Who asks in a permission float: the agent, or one of its subagents (a
--- child session the agent created), named so the user knows which worker
--- wants what.
local text = require('acp.util.text')

local M = {}

--- `agent` (the chat's agent, as shown), or "subagent <name> of <agent>"
--- when the request came from a subagent's session.
function M.asker(item, agent)
  local name = type(item) == 'table' and type(item.payload) == 'table' and item.payload.subagent
  if type(name) ~= 'string' or not name:match('%S') then
    return agent
  end
  return ('subagent %s of %s'):format(text.line(name, '?'), agent)
end

return M
