--- Opening and closing chats: the core started on the first one (with
--- the services and handlers its dispatcher needs wired in), a chat opened
--- in the current tab (after asking when its root would be the home
--- directory or /), one replaced by a new or resumed session in the same
--- windows, the chats of closed tabs ended. `acp.open()`, `acp.reopen()`,
--- `acp.send()` and the commands of acp.chat.commands come here.
local config = require('acp.config')
local chats = require('acp.chat')

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

local M = {}

local started

--- What answers the core besides the chat views, registered with its
--- dispatcher (which knows no module above the core): the editor's
--- services (agent reads and writes of buffers, client terminals) and the
--- agent's requests for input.
local function wire(dispatch)
  require('acp.editor').serve(dispatch)
  require('acp.ask').serve(dispatch)
end

--- Loads and initialises the core once; the facade (`acp.core`), or nil
--- (after telling the user) if it is not available.
---@return acp.core?
function M.core()
  local core = require('acp.core').get()
  if not core then
    return nil
  end
  if not started then
    wire(require('acp.core.dispatch'))
    local history = config.options.history
    local ok, err = pcall(core.init, {
      history_dir = history.keep and (vim.fn.stdpath('state') .. '/acp/chats') or nil,
      history_chat_max_bytes = history.chat_max_bytes,
      history_project_max_bytes = history.project_max_bytes,
      history_project_max_chats = history.project_max_chats,
      log_file = config.options.log_file,
      log_max_bytes = config.options.log_max_bytes,
      kept_text_max_bytes = config.options.fs.kept_text_max_bytes,
      checkpoint_max_bytes = config.options.checkpoints.max_bytes,
      checkpoint_git = config.options.checkpoints.git,
      secret_names = config.options.terminal.env_deny,
      dispatch = require('acp.core.dispatch').dispatch,
    })
    if not ok then
      notify('acp.nvim: ' .. require('acp.util.text').error(err), vim.log.levels.ERROR)
      return nil
    end
    started = true
    local group = vim.api.nvim_create_augroup('acp_lifecycle', { clear = true })
    vim.api.nvim_create_autocmd('VimLeavePre', {
      group = group,
      callback = function()
        pcall(core.shutdown)
      end,
    })
    vim.api.nvim_create_autocmd('TabClosed', {
      group = group,
      callback = function()
        M.forget_closed_tabs()
      end,
    })
  end
  return core
end

--- Ends the chats whose tabs closed (a chat registered to a tab that is
--- still open lives on).
function M.forget_closed_tabs()
  local gone = {}
  for tab, view in pairs(chats.by_tab) do
    if not vim.api.nvim_tabpage_is_valid(tab) then
      chats.by_tab[tab] = nil
      gone[view] = true
    end
  end
  -- A chat still registered to another tab (its home tab, when it has a
  -- tab of its own with `chat.position = 'tab'`) lives on.
  for _, view in pairs(chats.by_tab) do
    gone[view] = nil
  end
  for view in pairs(gone) do
    local core = require('acp.core')
    if core.is_loaded() then
      pcall(core.close_thread, view.thread)
    end
    view:destroy()
    -- Its worktree: keep, merge or remove, asked now the tab is gone.
    if view.worktree then
      require('acp.chat.worktree').finish(view.worktree)
    end
  end
end

--- Ends `view` for good: its thread closed in the core (its turn
--- cancelled, its session no longer routed; the agent process, shared
--- per agent and folder, ends with the last chat using it), its windows closed, its
--- buffers deleted, gone from every list. A chat in a git worktree first
--- asks (`vim.ui.select`, answered later) whether to keep, merge or remove
--- the worktree, and is not closed when that question is dismissed;
--- `opts.worktree` (`'keep'`, `'merge'`, `'remove'`) answers it ahead. A
--- worktree chat's own tab closes with it when nothing else in it has
--- unsaved changes.
---@param view acp.ChatView
---@param opts? { worktree?: 'keep'|'merge'|'remove' }
function M.close(view, opts)
  opts = opts or {}
  if view.closed then
    return
  end
  local wt = view.worktree
  if wt and not opts.worktree then
    require('acp.chat.worktree').ask(view, function(choice)
      if choice then
        M.close(view, { worktree = choice })
      end
    end)
    return
  end
  view.closed = true
  for tab, v in pairs(chats.by_tab) do
    if v == view then
      chats.by_tab[tab] = nil
    end
  end
  local core = require('acp.core')
  if core.is_loaded() then
    pcall(core.close_thread, view.thread)
  end
  local tab = view.tab
  view:destroy()
  if wt then
    require('acp.chat.worktree').close_tab(tab, wt)
    require('acp.chat.worktree').finish(wt, opts.worktree)
  end
  -- The threads view and statuslines hear that it is gone.
  require('acp.events').emit('AcpStateChanged', { agent = view.agent, thread = view.thread, state = 'closed', waiting = false, done_unseen = false })
  pcall(vim.cmd, 'redrawtabline')
end

--- `:AcpClose`: ends the current tab's chat (see `M.close`).
function M.close_current()
  local view = chats.current()
  if not view then
    return notify('acp.nvim: no chat in this tab to close', vim.log.levels.WARN)
  end
  M.close(view)
end

local function normalize(dir)
  return (vim.fn.fnamemodify(dir, ':p'):gsub('(.)/$', '%1'))
end

--- The project root for a new session: the nearest directory with a
--- marker; without one, the current file's directory (the current
--- directory for a buffer without a file).
function M.project_root()
  local root = vim.fs.root(0, config.options.root_markers)
  if not root then
    local name = vim.api.nvim_buf_get_name(0)
    if name ~= '' and vim.bo.buftype == '' then
      root = vim.fn.fnamemodify(name, ':p:h')
    else
      root = vim.fn.getcwd()
    end
  end
  return normalize(root)
end

--- Whether a session rooted at `root` would give the agent the whole home
--- directory or the whole disk.
function M.root_too_wide(root)
  local home = vim.uv.os_homedir()
  return root == '/' or (home ~= nil and home ~= '' and root == normalize(home))
end

--- Roots the user agreed to open a chat in (this Neovim session).
M.wide_roots_allowed = {}

--- Opens (or focuses) the chat of the current tab. With `agent`, a chat
--- with another agent becomes the tab's chat; the previous one is hidden
--- and stays reachable (`:AcpChats`). A chat rooted at the home directory
--- or at / is opened only after the user agrees (asked with
--- `vim.ui.select`, which may answer later); `opts.on_open(view)` runs
--- once the chat is open, at once or after that answer. `opts.root`: the
--- session's root (default: the project of the current buffer);
--- `opts.worktree`: the git worktree the chat runs in (`view.worktree`,
--- see acp.editor.worktree).
function M.open(agent, opts)
  opts = opts or {}
  local tab = vim.api.nvim_get_current_tabpage()
  local view = chats.by_tab[tab]
  if view and (agent == nil or agent == '' or agent == view.agent) then
    view:show(opts.focus ~= false)
    if opts.on_open then
      opts.on_open(view)
    end
    return view
  end
  agent = (agent and agent ~= '') and agent or config.options.default_agent
  local spec, err = require('acp.agents').spec(agent, opts.root or M.project_root())
  if not spec then
    notify(err, vim.log.levels.ERROR)
    return nil
  end
  if M.root_too_wide(spec.cwd) and not M.wide_roots_allowed[spec.cwd] then
    local yes = ('Open the chat in %s (the agent may read and change everything under it)'):format(spec.cwd)
    require('acp.util.escape').select({ yes, 'Cancel' }, {
      prompt = ('acp.nvim: no project found; the root would be %s'):format(spec.cwd),
    }, function(choice)
      if choice == yes then
        M.wide_roots_allowed[spec.cwd] = true
        if vim.api.nvim_tabpage_is_valid(tab) then
          vim.api.nvim_set_current_tabpage(tab)
          M.open(agent, opts)
        end
      else
        notify('acp.nvim: chat not opened (open a file inside a project, or :cd into one)')
      end
    end)
    return nil
  end
  local core = M.core()
  if not core then
    return nil
  end
  local ok, thread = pcall(core.open_thread, spec)
  if not ok then
    notify('acp.nvim: ' .. require('acp.util.text').error(thread), vim.log.levels.ERROR)
    return nil
  end
  if view then
    view:hide()
    notify(('acp.nvim: the chat with %s is kept; :AcpChats switches back'):format(view.agent))
  end
  view = require('acp.chat.view').new({ agent = agent, thread = thread, root = spec.cwd, tab = tab })
  view.worktree = opts.worktree
  chats.by_tab[tab] = view
  chats.by_thread[thread] = view
  require('acp.core.dispatch').register(thread, view)
  view:show(opts.focus ~= false)
  if opts.on_open then
    opts.on_open(view)
  end
  return view
end

--- Shows a new chat of the same agent in `view`'s windows: `opts.resume`
--- opens that session (its history fills the fresh transcript), else a new
--- session starts; `opts.kept` (a kept chat's id, see `acp.agents.sessions`)
--- shows that chat's kept transcript first and continues it (a chat open
--- here with that id is switched to instead). The input text, pending context and queued messages
--- move to the new chat; `view` is kept, hidden (`:AcpChats`).
function M.reopen(view, opts)
  opts = opts or {}
  local spec, err = require('acp.agents').spec(view.agent, view.worktree and view.worktree.path or M.project_root())
  if not spec then
    notify(err, vim.log.levels.ERROR)
    return nil
  end
  local core = M.core()
  if not core then
    return nil
  end
  if opts.kept then
    -- A kept chat that is open here already: shown, not opened twice (two
    -- chats would write one file).
    for _, other in pairs(chats.by_thread) do
      local ok, info = pcall(core.thread_info, other.thread)
      if ok and info.kept_id == opts.kept then
        return require('acp.chat.layout').switch(other)
      end
    end
  end
  spec.resume = opts.resume
  spec.kept = opts.kept
  local ok, thread = pcall(core.open_thread, spec)
  if not ok then
    notify('acp.nvim: ' .. tostring(thread), vim.log.levels.ERROR)
    return nil
  end
  local tab = view.tab
  local new = require('acp.chat.view').new({
    agent = view.agent,
    thread = thread,
    root = spec.cwd,
    tab = tab,
    history_of = opts.resume or opts.kept,
  })
  new.worktree = view.worktree
  vim.api.nvim_buf_set_lines(new.input, 0, -1, false, vim.api.nvim_buf_get_lines(view.input, 0, -1, false))
  new.context, new.queue = view.context, view.queue
  view.context, view.queue = {}, {}
  vim.api.nvim_buf_set_lines(view.input, 0, -1, false, {})
  -- The windows stay: they show the new chat's buffers.
  local win, input_win = view.win, view.input_win
  view.win, view.input_win = nil, nil
  require('acp.chat.layout').adopt(new, win, input_win)
  -- The old chat is kept, not destroyed: its view, buffers and thread stay
  -- (`:AcpChats` switches back, its review still works). Its thread stays
  -- open, not read-only: its agent session is still live in the shared
  -- agent process, so going back to it continues that conversation, and a
  -- turn it was running ends where it can be seen. It ends with its tab
  -- like any hidden chat.
  chats.by_tab[tab] = new
  chats.by_thread[thread] = new
  require('acp.core.dispatch').register(thread, new)
  if new.win then
    new:_update_winbar()
  end
  require('acp.prompt.context').render(new)
  require('acp.prompt.queue').render(new)
  return new
end

--- The chat of this tab, opened (without moving the cursor) when needed;
--- nil when it is not open (yet: the user may be asked about its root).
---@return acp.ChatView?
function M.here()
  local view = chats.current()
  if view then
    return view
  end
  local win = vim.api.nvim_get_current_win()
  view = M.open(nil, { focus = false })
  if vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_set_current_win(win)
  end
  return view
end

--- Sends `text` to the current tab's chat, opening it (without moving the
--- cursor) when needed. `opts.context`: items attached to this prompt
--- only (see `acp.prompt.context`), besides the chat's pending ones;
--- `opts.steer`: while a turn runs, steer it (`acp.prompt.steer`). Returns true
--- when the prompt was sent (or waits for the agent to be ready).
---@param text string
---@param opts? { context?: table[], steer?: boolean }
---@return boolean
function M.send(text, opts)
  if type(text) ~= 'string' or vim.trim(text) == '' then
    notify('acp.nvim: :AcpSend needs a message', vim.log.levels.WARN)
    return false
  end
  local view = chats.current()
  if not view then
    local win = vim.api.nvim_get_current_win()
    local sent
    M.open(nil, {
      focus = false,
      on_open = function(v)
        if vim.api.nvim_win_is_valid(win) then
          vim.api.nvim_set_current_win(win)
        end
        sent = v:send(text, opts)
      end,
    })
    -- nil: the user is asked about the root first; sent after a yes.
    return sent ~= false
  elseif not view:is_visible() then
    local win = vim.api.nvim_get_current_win()
    view:show(false)
    vim.api.nvim_set_current_win(win)
  end
  return view ~= nil and view:send(text, opts)
end

return M
