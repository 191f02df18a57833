--- The commands typed anywhere that act on the tab's chat, opening it
--- (without moving the cursor) when they need one: `:AcpChat` shows or
--- focuses it (and hides it from inside), `:AcpToggle` toggles it,
--- `:AcpAdd`, `<Plug>(AcpAddSelection)`, `:AcpImage` and `:AcpPasteImage`
--- attach to its next prompt, `:'<,'>AcpSend` sends with the selection,
--- `:AcpContext` lists or edits what is attached, `:AcpWorktree` opens a
--- chat in a new git worktree. What they attach is
--- built in the prompt layer (acp.prompt.context, acp.prompt.image), which
--- opens no chat: the chat comes from here.
local chats = require('acp.chat')
local lifecycle = require('acp.chat.lifecycle')

local M = {}

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.WARN)
end

--- Whether the cursor is in one of `view`'s windows.
local function inside(view)
  local win = vim.api.nvim_get_current_win()
  return win == view.win or win == view.input_win
end

--- `:AcpChat [agent]`: from a code window, shows the tab's chat or moves
--- into it when it is visible; from inside the chat, hides it. Another
--- agent opens a new chat and keeps the old one (`:AcpChats`);
--- `worktree={name}` opens it in a new git worktree (acp.chat.worktree).
function M.chat(agent)
  if agent and agent:find('worktree=', 1, true) then
    local name, who = require('acp.chat.worktree').parse_chat_args(agent)
    return M.worktree_chat(name, who)
  end
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
  return lifecycle.send(o.args, { context = { item }, steer = o.bang or nil })
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

--- Makes the worktree `name` of the current project's repository, then
--- opens `agent`'s chat (default: `default_agent`) in a new tab whose
--- directory is the worktree. `cb(view)` once the chat is open (nil when
--- it did not open); errors are told with `vim.notify`.
---@param name string
---@param agent? string
---@param cb? fun(view: acp.ChatView?)
function M.worktree_chat(name, agent, cb)
  cb = cb or function() end
  local esc = require('acp.util.escape')
  agent = (agent and agent ~= '') and agent or require('acp.config').options.default_agent
  if not require('acp.agents').exists(agent) then
    notify(('no agent `%s` (see :h acp-agents)'):format(esc.line(agent, 60)), vim.log.levels.ERROR)
    return cb(nil)
  end
  require('acp.editor.worktree').create(name, { cwd = lifecycle.project_root() }, function(wt, err)
    if not wt then
      notify('no worktree: ' .. err, vim.log.levels.ERROR)
      return cb(nil)
    end
    vim.cmd('tabnew')
    local tab = vim.api.nvim_get_current_tabpage()
    vim.bo.bufhidden = 'wipe'
    vim.cmd('tcd ' .. esc.fname(wt.path))
    local msg = ('worktree %s on branch %s (from %s)'):format(esc.line(wt.path, 80, true), wt.branch, wt.base_branch or wt.base_commit:sub(1, 12))
    if #wt.included > 0 then
      msg = msg .. (', %d file%s copied from .worktreeinclude'):format(#wt.included, #wt.included == 1 and '' or 's')
    end
    require('acp.util.escape').notify('acp.nvim: ' .. msg)
    local opened = false
    local view = lifecycle.open(agent, {
      root = wt.path,
      worktree = wt,
      on_open = function(v)
        opened = true
        cb(v)
      end,
    })
    if not view and not opened then
      -- The worktree stays (it is the user's now): only the empty tab goes.
      if vim.api.nvim_tabpage_is_valid(tab) and #vim.api.nvim_list_tabpages() > 1 then
        pcall(vim.cmd, ('tabclose %d'):format(vim.api.nvim_tabpage_get_number(tab)))
      end
      cb(nil)
    end
  end)
end

--- `:AcpWorktree {name} [agent]`.
function M.worktree(o)
  local args = o.fargs
  if #args == 0 or #args > 2 then
    return notify(':AcpWorktree needs a name and optionally an agent, e.g. :AcpWorktree fix-login claude', vim.log.levels.WARN)
  end
  M.worktree_chat(args[1], args[2])
end

return M
