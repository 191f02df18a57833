--- The chat's header: the transcript window's 'winbar',
--- ` ACP  agent · state · [mode] · model · effort · usage · title`.
--- What matters comes first and is never cut; the title (an agent may use
--- the whole prompt) comes last and is cut at the right with "…" to the
--- room the window leaves, worked out again when the window is resized
--- (acp.util.winbar). Every part from the agent is escaped.
---
--- Also the one source of the words for the chat's state: the header and
--- the live status area (acp.chat.status) both read `state_word`, so they
--- never disagree (`cancelling…` in both).
local M = {}

local SEP, SEP_WIDTH = ' · ', 3
--- What the header starts with (drawn in AcpTitle) and its display width.
local LEAD, LEAD_WIDTH = '%#AcpTitle# ACP %* ', 6
--- A title with less room than this is left out.
local MIN_TITLE = 6

local words = {
  connecting = 'connecting…',
  idle = 'ready',
  running = 'working…',
  disconnected = 'disconnected',
}

--- A permission request of this chat waits for the user.
local function asks(view)
  for _, item in ipairs(require('acp.ask.permission').queue) do
    if item.view == view then
      return true
    end
  end
  return false
end

--- The chat's state in words: `connecting…`, `loading session…`, `ready`,
--- `working…`, `waiting for you` (a permission request waits: the agent
--- does nothing until it is answered), `cancelling…` or `disconnected`.
---@param view acp.ChatView
---@return string
function M.state_word(view)
  if view.state == 'connecting' and view.status_detail == 'loading session' then
    return 'loading session…'
  elseif view.state == 'running' and view.status_detail == 'cancelling' then
    return 'cancelling…'
  elseif view.state == 'running' and asks(view) then
    return 'waiting for you'
  end
  return words[view.state] or tostring(view.state)
end

--- The header's text for a window `width` cells wide.
---@param view acp.ChatView
---@param width integer
---@return string
function M.text(view, width)
  local controls = require('acp.agents.controls')
  local esc = require('acp.util.escape')
  local state = M.state_word(view)
  if state == 'loading session…' then
    state = state .. ' (<C-c> gives up)'
  end
  -- Names come from the agent: each one line, capped.
  local parts = { esc.line(view.agent, 60), state }
  local mode = controls.mode_name(view)
  if mode then
    parts[#parts + 1] = '[' .. esc.line(mode, 60) .. ']'
  end
  local more = {}
  for _, v in ipairs({ controls.model_name(view) or false, controls.effort_name(view) or false, controls.usage_text(view) or false }) do
    more[#more + 1] = v and esc.line(v, 60) or nil
  end
  -- Too narrow for all of them (Claude: "Default (recommended) · Default ·
  -- ctx 0%" at a third of the screen): usage goes first, then effort, then
  -- the model is cut with "…", so the bar never ends in Neovim's cut ">".
  local function room_after(list)
    return width - LEAD_WIDTH - vim.api.nvim_strwidth(table.concat(list, SEP) .. SEP)
  end
  while #more > 1 and room_after(vim.list_extend(vim.list_slice(parts), more)) < -SEP_WIDTH do
    more[#more] = nil
  end
  if more[1] and room_after(vim.list_extend(vim.list_slice(parts), more)) < -SEP_WIDTH then
    local room = room_after(parts)
    more[1] = room >= MIN_TITLE and esc.line(more[1], room) or nil
  end
  vim.list_extend(parts, more)
  local head = table.concat(parts, SEP)
  -- `%` doubled: a `%{…}` would run when the bar is drawn.
  local bar = LEAD .. head:gsub('%%', '%%%%')
  local title = require('acp.util.text').of(view.info.title)
  local room = math.min(width - LEAD_WIDTH - vim.api.nvim_strwidth(head .. SEP), esc.max)
  if title and title ~= '' and room >= MIN_TITLE then
    -- Fitted here; `%<` only marks where Neovim may cut if the window
    -- narrows before the header is built again.
    return bar .. SEP .. '%<' .. esc.statusline(title, room)
  end
  -- Too narrow even for the parts before the title: Neovim cuts at the
  -- right, never the agent and state.
  return bar .. '%<'
end

--- Sets the header of `view`'s transcript window (when shown) and keeps it
--- fitted to the window's width.
---@param view acp.ChatView
function M.update(view)
  if not view:is_visible() then
    return
  end
  require('acp.util.winbar').set(view.win, function(width)
    return M.text(view, width)
  end)
end

return M
