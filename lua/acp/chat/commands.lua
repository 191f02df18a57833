--- The commands typed anywhere that act on the tab's chat, opening it
--- (without moving the cursor) when they need one: `:AcpChat` shows or
--- focuses it (and hides it from inside), `:AcpToggle` toggles it,
--- `:AcpAdd`, `<Plug>(AcpAddSelection)`, `:AcpImage` and `:AcpPasteImage`
--- attach to its next prompt, `:'<,'>AcpSend` sends with the selection,
--- `:AcpContext` lists or edits what is attached. What they attach is
--- built in the prompt layer (acp.prompt.context, acp.prompt.image), which
--- opens no chat: the chat comes from here.
local chats = require('acp.chat')
local lifecycle = require('acp.chat.lifecycle')

local M = {}

local function notify(msg, level)
  vim.notify('acp.nvim: ' .. msg, level or vim.log.levels.WARN)
end

--- Whether the cursor is in one of `view`'s windows.
local function inside(view)
  local win = vim.api.nvim_get_current_win()
  return win == view.win or win == view.input_win
end

--- `:AcpChat [agent]`: from a code window, shows the tab's chat or moves
--- into it when it is visible; from inside the chat, hides it. Another
--- agent opens a new chat and keeps the old one (`:AcpChats`).
function M.chat(agent)
  local view = chats.current()
  agent = agent ~= '' and agent or nil
  if view and (agent == nil or agent == view.agent) and view:is_visible() then
    if inside(view) then
      view:hide()
    else
      view:focus_input(require('acp.config').options.chat.start_insert)
    end
    return view
  end
  return lifecycle.open(agent)
end

--- `:AcpToggle [agent]`: shows the tab's chat when it is hidden, hides it
--- when it is visible, wherever the cursor is.
function M.toggle(agent)
  local view = chats.current()
  agent = (agent and agent ~= '') and agent or nil
  if view and (agent == nil or agent == view.agent) and view:is_visible() then
    view:hide()
    return view
  end
  return lifecycle.open(agent)
end

--- Adds a captured item to the tab's chat, or says why there is none.
local function add_to_chat(item, err)
  if not item then
    return notify(err)
  end
  local view = lifecycle.here()
  if view then
    require('acp.prompt.context').add(view, item)
  end
end

--- `:'<,'>AcpAdd` / `:AcpAdd [path]`: a selection (with a range), a file
--- (with an argument) or the current buffer (neither).
function M.add(o)
  local root = lifecycle.project_root()
  add_to_chat(require('acp.prompt.context').command_item(o, root))
end

--- `<Plug>(AcpAddSelection)`: adds the live visual selection.
function M.add_visual()
  local root = lifecycle.project_root()
  add_to_chat(require('acp.prompt.context').visual_item(root))
end

--- `:'<,'>AcpSend {text}`: sends `text` with the selection attached.
function M.send_range(o)
  if vim.trim(o.args) == '' then
    return notify(':AcpSend needs a message')
  end
  local item, err = require('acp.prompt.context').capture_range(o.line1, o.line2, lifecycle.project_root())
  if not item then
    return notify(err)
  end
  return lifecycle.send(o.args, { context = { item } })
end

--- `:AcpContext [list | clear | remove {n}]`.
function M.context(o)
  return require('acp.prompt.context').command(o, chats.current())
end

--- `:AcpImage {path}`.
function M.image(path)
  return require('acp.prompt.image').attach_file(path, lifecycle.here)
end

--- `:AcpPasteImage`.
function M.paste_image()
  return require('acp.prompt.image').paste(lifecycle.here)
end

return M
