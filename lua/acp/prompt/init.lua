--- The prompt layer: what the user sends and how. context.lua keeps the
--- items attached to the next prompt and builds its content blocks;
--- mention.lua completes `@` mentions, slash.lua the agent's `/`
--- commands, popup.lua decides whether the built-in popup steps aside for
--- a completion plugin; image.lua attaches images; history.lua recalls
--- sent messages; queue.lua holds messages until the turn ends. It opens
--- no chat: the chat layer passes the chat to act on.
-- May use: util, config, core, editor.
local M = {}

--- Sets up the input area of a new chat (from ChatView.new): its pending
--- context, `@` mentions and `/` commands.
---@param view acp.ChatView
function M.attach(view)
  require('acp.prompt.context').attach(view)
  require('acp.prompt.mention').attach(view)
  require('acp.prompt.slash').attach(view)
end

return M
