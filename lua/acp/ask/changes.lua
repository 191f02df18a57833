--- Who wants to know when the questions waiting for the user change: the
--- chat layer marks the chats that wait (acp.chat.attention). Told by
--- permission.lua and elicitation.lua each time they render their queue
--- (after every addition and removal). Requires nothing.
local M = {}

local listeners = {}

--- Calls `fn()` whenever a question may have come or gone.
---@param fn fun()
function M.on_change(fn)
  listeners[#listeners + 1] = fn
end

--- A question came or went (or may have).
function M.changed()
  for _, fn in ipairs(listeners) do
    pcall(fn)
  end
end

return M
