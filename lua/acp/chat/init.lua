--- The chat layer: what a chat is on screen and over its life. The
--- transcript and input of one chat (view.lua) and how a drained batch of
--- events edits them (apply.lua); their windows (layout.lua), the live
--- status area (status.lua), card colours (decor.lua), highlighting
--- (markdown.lua), markdown renderers kept live (renderers.lua), what
--- happens around tool cards (activity.lua, follow.lua, quickfix.lua), the
--- User autocmds a drain means (announce.lua); opening,
--- replacing and closing chats (lifecycle.lua) and the commands that act on
--- the tab's chat from anywhere (commands.lua).
-- May use: util, config, events, core, editor, ask, agents, prompt, completion.
---
--- This file: the open chats, by tabpage and by thread, and the current
--- tab's one. The rest of the layer and the public API (`acp`) read and
--- update these tables; this file requires nothing of the layer.

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

local M = {}

--- Chats by tabpage handle. A chat with a tab of its own
--- (`chat.position = 'tab'`) is registered to that tab too.
---@type table<integer, acp.ChatView>
M.by_tab = {}

--- Every open chat by its thread id, also those no tab shows (`:AcpChats`).
---@type table<integer, acp.ChatView>
M.by_thread = {}

--- The chat of the current tab, if any. Stable fields: `agent`, `thread`,
--- `state`, `root`, `tab`, `buf` (transcript), `input`, `info`; methods
--- `send(text, opts)`, `show(focus)`, `hide()`, `is_visible()`, `lines()`.
---@return acp.ChatView?
function M.current()
  return M.by_tab[vim.api.nvim_get_current_tabpage()]
end

--- Cancels the running turn of the current tab's chat. True when a turn
--- was running.
---@return boolean
function M.cancel()
  local view = M.current()
  local core = require('acp.core')
  if not (view and core.is_loaded()) then
    notify('acp.nvim: no chat in this tab')
    return false
  end
  if view.editing and view.state ~= 'running' and view:stop_editing() then
    return false
  end
  local ok, res = pcall(core.cancel, view.thread)
  if not ok then
    notify('acp.nvim: ' .. require('acp.util.text').error(res), vim.log.levels.WARN)
    return false
  end
  if not res then
    notify('acp.nvim: nothing to cancel')
  end
  return res
end

return M
