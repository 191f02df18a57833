--- acp.nvim: Agent Client Protocol agents inside Neovim.
--- Public API (`:h acp-api`): the functions documented here are stable
--- within a major version (see CHANGELOG.md); names starting with `_` are
--- internal.
local M = {}

local config = require('acp.config')

--- Applies user options (see `:h acp-config`). Optional.
---@param opts? acp.Config
---@return boolean ok
function M.setup(opts)
  local ok, err = pcall(config.setup, opts)
  if not ok then
    vim.notify(require('acp.util.text').error(err), vim.log.levels.ERROR)
    return false
  end
  if config.options.keymaps then
    M.default_keymaps()
  end
  return true
end

--- The suggested global keymaps (`:h acp-keymaps`), installed by `setup()`
--- only with `keymaps = true`. A key the user already mapped is left alone.
M.keymaps = {
  { 'n', '<leader>ac', '<Plug>(AcpChat)', 'Open the agent chat' },
  { 'x', '<leader>aa', '<Plug>(AcpAddSelection)', 'Add the selection to the next prompt' },
  { 'x', '<leader>as', ':AcpSend ', 'Send a message with the selection attached' },
}

function M.default_keymaps()
  for _, k in ipairs(M.keymaps) do
    local mode, lhs, rhs, desc = k[1], k[2], k[3], k[4]
    if vim.fn.maparg(lhs, mode) == '' then
      vim.keymap.set(mode, lhs, rhs, { desc = desc, silent = rhs:sub(1, 1) ~= ':', remap = true })
    end
  end
end

--- Builds the Rust core asynchronously (`cargo build --release`), with
--- progress and an end message; the output goes to the build log
--- (`:AcpLog build`). Returns a handle: `build():wait(timeout_ms)` blocks
--- (processing events) until it ends and returns true on success.
---@param on_done? fun(ok: boolean)
---@return acp.BuildHandle
function M.build(on_done)
  return require('acp.core.build').run(on_done)
end

--- Chats by tabpage handle (internal: use `chats()` and `current()`).
---@type table<integer, acp.ChatView>
M._views = {}
--- Every open chat by its thread id, also those no tab shows (`:AcpChats`).
---@type table<integer, acp.ChatView>
M._all = {}

local started

--- What answers the core besides the chat views, registered with its
--- dispatcher (which knows no module above the core): the editor's
--- services (agent reads and writes of buffers, client terminals) and the
--- agent's requests for input. Each module loads on its first use.
local function wire(dispatch)
  dispatch.services.buffer_read = function(ev)
    require('acp.editor.fs').buffer_read(ev)
  end
  dispatch.services.buffer_apply = function(ev)
    require('acp.editor.fs').buffer_apply(ev)
  end
  dispatch.services.terminal_start = function(ev)
    require('acp.editor.terminal').start(ev)
  end
  dispatch.services.terminal_kill = function(ev)
    require('acp.editor.terminal').kill(ev)
  end
  dispatch.on_elicitation = function(ev)
    require('acp.ask.elicitation').on_event(ev)
  end
end

--- Loads and initialises the core once; the facade (`acp.core`), or nil
--- (after telling the user) if it is not available.
---@return acp.core?
function M._core()
  local core = require('acp.core').get()
  if not core then
    return nil
  end
  if not started then
    wire(require('acp.core.dispatch'))
    local ok, err = pcall(core.init, {
      log_file = config.options.log_file,
      log_max_bytes = config.options.log_max_bytes,
      kept_text_max_bytes = config.options.fs.kept_text_max_bytes,
      secret_names = config.options.terminal.env_deny,
      dispatch = require('acp.core.dispatch').dispatch,
    })
    if not ok then
      vim.notify('acp.nvim: ' .. require('acp.util.text').error(err), vim.log.levels.ERROR)
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
        M._forget_closed_tabs()
      end,
    })
  end
  return core
end

function M._forget_closed_tabs()
  local gone = {}
  for tab, view in pairs(M._views) do
    if not vim.api.nvim_tabpage_is_valid(tab) then
      M._views[tab] = nil
      gone[view] = true
    end
  end
  -- A chat still registered to another tab (its home tab, when it has a
  -- tab of its own with `chat.position = 'tab'`) lives on.
  for _, view in pairs(M._views) do
    gone[view] = nil
  end
  for view in pairs(gone) do
    local core = require('acp.core')
    if core.is_loaded() then
      pcall(core.close_thread, view.thread)
    end
    view:destroy()
  end
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

--- MCP servers of agent `name`: the global ones, then the agent's own (an
--- agent's server replaces a global one of the same name). Missing list
--- fields get their empty default.
function M.mcp_servers(name)
  local o = config.options
  local out, index = {}, {}
  local agent = o.agents[name] or {}
  for _, list in ipairs({ o.mcp_servers or {}, agent.mcp_servers or {} }) do
    for _, server in ipairs(list) do
      local s = vim.deepcopy(server)
      if s.type == 'http' or s.type == 'sse' then
        s.headers = s.headers or {}
      else
        s.args, s.env = s.args or {}, s.env or {}
      end
      if s.name and index[s.name] then
        out[index[s.name]] = s
      else
        out[#out + 1] = s
        index[s.name or #out] = #out
      end
    end
  end
  return out
end

local function agent_spec(name)
  local a, err = require('acp.agents').resolve(name)
  if not a then
    return nil, err
  end
  local root = M.project_root()
  local o = config.options
  local roots = {}
  for _, r in ipairs(o.roots) do
    -- `~` and `$VAR` (vim.fs.normalize), never expand(): no backticks run.
    roots[#roots + 1] = (vim.fn.fnamemodify(vim.fs.normalize(r), ':p'):gsub('(.)/$', '%1'))
  end
  return {
    name = name,
    cmd = a.cmd,
    args = a.args or {},
    env = a.env or {},
    cwd = root,
    mcp_servers = M.mcp_servers(name),
    caps = { fs_read = o.fs.read, fs_write = o.fs.write, terminal = o.terminal.enabled },
    line_max = o.max_message_bytes,
    timeouts = o.timeouts,
    trace_max = o.trace.max_messages,
    policy = {
      roots = roots,
      allow_read_outside = o.fs.allow_outside_roots,
      allow_write_outside = o.fs.allow_outside_roots,
      allow_terminal_outside = o.terminal.allow_outside_roots,
      save_unmodified = o.fs.save_unmodified,
      shell = o.terminal.shell,
      terminal_confirm = o.terminal.confirm,
      terminal_output_max_bytes = o.terminal.output_max_bytes,
      -- [name, value] pairs, sorted (an empty Lua table is no map).
      terminal_inert_env = (function()
        local pairs_ = {}
        for k, v in pairs(o.terminal.inert_env) do
          pairs_[#pairs_ + 1] = { k, v }
        end
        table.sort(pairs_, function(a, b) return a[1] < b[1] end)
        return pairs_
      end)(),
      protected = o.fs.protected,
      read_max_bytes = o.fs.read_max_bytes,
      auto_allow = o.permissions.auto_allow,
    },
  }
end

--- Opens (or focuses) the chat of the current tab. With `agent`, a chat
--- with another agent becomes the tab's chat; the previous one is hidden
--- and stays reachable (`:AcpChats`). A chat rooted at the home directory
--- or at / is opened only after the user agrees (asked with
--- `vim.ui.select`, which may answer later); `opts.on_open(view)` runs
--- once the chat is open, at once or after that answer.
function M.open(agent, opts)
  opts = opts or {}
  local tab = vim.api.nvim_get_current_tabpage()
  local view = M._views[tab]
  if view and (agent == nil or agent == '' or agent == view.agent) then
    view:show(opts.focus ~= false)
    if opts.on_open then
      opts.on_open(view)
    end
    return view
  end
  agent = (agent and agent ~= '') and agent or config.options.default_agent
  local spec, err = agent_spec(agent)
  if not spec then
    vim.notify(err, vim.log.levels.ERROR)
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
        vim.notify('acp.nvim: chat not opened (open a file inside a project, or :cd into one)')
      end
    end)
    return nil
  end
  local core = M._core()
  if not core then
    return nil
  end
  local ok, thread = pcall(core.open_thread, spec)
  if not ok then
    vim.notify('acp.nvim: ' .. require('acp.util.text').error(thread), vim.log.levels.ERROR)
    return nil
  end
  if view then
    view:hide()
    vim.notify(('acp.nvim: the chat with %s is kept; :AcpChats switches back'):format(view.agent))
  end
  view = require('acp.chat.view').new({ agent = agent, thread = thread, root = spec.cwd, tab = tab })
  M._views[tab] = view
  M._all[thread] = view
  require('acp.core.dispatch').register(thread, view)
  view:show(opts.focus ~= false)
  if opts.on_open then
    opts.on_open(view)
  end
  return view
end

--- The chat of the current tab, if any. Stable fields: `agent`, `thread`,
--- `state`, `root`, `tab`, `buf` (transcript), `input`, `info`; methods
--- `send(text, opts)`, `show(focus)`, `hide()`, `is_visible()`, `lines()`.
---@return acp.ChatView?
function M.current()
  return M._views[vim.api.nvim_get_current_tabpage()]
end

--- A chat's state for statuslines and other plugins.
---@class acp.Status
---@field agent string The configured agent's name.
---@field thread integer The chat's id.
---@field tab integer Its tabpage.
---@field state acp.TurnState 'connecting'|'idle'|'running'|'disconnected'
---@field session_id? string
---@field title? string The session's title, when the agent gave one.
---@field mode? string The current mode's name.
---@field agent_name? string The agent's own name (`agentInfo.name`).
---@field model? string The current model, when the agent tells it.
---@field effort? string The reasoning effort (config option `thought_level`).
---@field usage { used?: number, size?: number, percent?: integer, cost?: { amount: number, currency: string }, tokens?: integer } Context used/size (and percent), cost, tokens of the last turn.
---@field turns integer Turns ended so far.
---@field queued integer Messages waiting in the queue (`:h acp-queue`).

---@param view acp.ChatView
---@return acp.Status
local function status_of(view)
  local controls = require('acp.agents.controls')
  -- Statusline-safe: the strings come from the agent and end up in
  -- statuslines (one line, capped, `%` doubled).
  local esc = require('acp.util.escape')
  local function safe(v, max)
    return v ~= nil and v ~= vim.NIL and esc.statusline(v, max) or nil
  end
  local usage = controls.usage(view)
  if usage.cost then
    usage.cost.currency = esc.statusline(usage.cost.currency, 12)
  end
  return {
    agent = safe(view.agent, 60),
    agent_name = safe(view.agent_name, 60),
    thread = view.thread,
    tab = view.tab,
    state = view.state,
    session_id = safe(view.info.session, 80),
    title = safe(view.info.title),
    mode = safe(controls.mode_name(view), 60),
    model = safe(controls.model_name(view), 60),
    effort = safe(controls.effort_name(view), 60),
    usage = usage,
    turns = view.turns_ended,
    queued = #view.queue,
  }
end

--- The current tab's chat state (nil without a chat): cheap enough for a
--- statusline (`:h acp-statusline`).
---@return acp.Status?
function M.status()
  local view = M.current()
  return view and status_of(view) or nil
end

--- Every open chat's state, ordered by tabpage number.
---@return acp.Status[]
function M.chats()
  local out, seen = {}, {}
  for tab, view in pairs(M._views) do
    -- A chat with a tab of its own is registered to two tabs: listed once.
    if vim.api.nvim_tabpage_is_valid(tab) and not seen[view] then
      seen[view] = true
      out[#out + 1] = status_of(view)
    end
  end
  table.sort(out, function(a, b)
    return vim.api.nvim_tabpage_get_number(a.tab) < vim.api.nvim_tabpage_get_number(b.tab)
  end)
  return out
end

--- The core if it is loaded (a chat exists only then), else nil.
---@return acp.core?
local function loaded_core()
  local core = require('acp.core')
  return core.is_loaded() and core or nil
end

--- The current tab's chat and the core, or nil after telling the user.
---@return acp.ChatView?, acp.core?
local function chat_and_core()
  local view = M.current()
  local core = loaded_core()
  if not (view and core) then
    vim.notify('acp.nvim: no chat in this tab')
    return nil
  end
  return view, core
end

--- Replaces `view` with a new chat of the same agent in the same windows:
--- `opts.resume` opens that session (its history fills the fresh
--- transcript), else a new session starts. The input text, pending
--- context and queued messages move to the new chat.
function M.reopen(view, opts)
  opts = opts or {}
  local spec, err = agent_spec(view.agent)
  if not spec then
    vim.notify(err, vim.log.levels.ERROR)
    return nil
  end
  local core = M._core()
  if not core then
    return nil
  end
  spec.resume = opts.resume
  local ok, thread = pcall(core.open_thread, spec)
  if not ok then
    vim.notify('acp.nvim: ' .. tostring(thread), vim.log.levels.ERROR)
    return nil
  end
  local tab = view.tab
  local new = require('acp.chat.view').new({
    agent = view.agent,
    thread = thread,
    root = spec.cwd,
    tab = tab,
    history_of = opts.resume,
  })
  vim.api.nvim_buf_set_lines(new.input, 0, -1, false, vim.api.nvim_buf_get_lines(view.input, 0, -1, false))
  new.context, new.queue = view.context, view.queue
  -- The windows stay: they show the new chat's buffers.
  local win, input_win = view.win, view.input_win
  view.win, view.input_win = nil, nil
  require('acp.chat.layout').adopt(new, win, input_win)
  pcall(core.close_thread, view.thread)
  view:destroy()
  M._views[tab] = new
  M._all[thread] = new
  require('acp.core.dispatch').register(thread, new)
  if new.win then
    new:_update_winbar()
  end
  require('acp.prompt.context').render(new)
  require('acp.prompt.queue').render(new)
  return new
end

--- `:AcpNew`: a fresh session in the current chat.
function M.new_session()
  local view = M.current()
  if not view then
    return M.open()
  end
  return M.reopen(view)
end

--- `:AcpSessions`: the agent's sessions, to resume, close or delete.
function M.sessions()
  local view = chat_and_core()
  return view and require('acp.agents.sessions').pick(view)
end

--- `:AcpResume [id]`: opens a session (default: this chat's last one).
function M.resume(id)
  local view = chat_and_core()
  return view and require('acp.agents.sessions').resume(view, id)
end

--- `:AcpConfig [id [value]]`: the agent's config options.
function M.config(id, value)
  local view = chat_and_core()
  return view and require('acp.agents.controls').config(view, id, value)
end

--- `:AcpModel [id]`: the `model` config option, else the legacy models.
function M.model(id)
  local view = chat_and_core()
  return view and require('acp.agents.controls').model(view, id)
end

--- `:AcpQueue [edit|drop {n}|clear]`: messages waiting for the turn to end.
function M.queue(args)
  local view = chat_and_core()
  return view and require('acp.prompt.queue').command(view, args)
end

--- `:AcpElicitation`: moves into the agent's request for input.
function M.elicitation()
  return require('acp.ask.elicitation').focus()
end

--- `:AcpLogout`: signs out (`logout`) when the agent supports it.
function M.logout()
  local view = chat_and_core()
  if not view then
    return
  end
  local caps = view.capabilities or {}
  if not (type(caps.auth) == 'table' and caps.auth.logout ~= nil and caps.auth.logout ~= false) then
    return vim.notify(('acp.nvim: %s does not support logout'):format(view.agent), vim.log.levels.WARN)
  end
  require('acp.agents.controls').request(view, 'logout', vim.empty_dict(), function(ev)
    if ev.error then
      vim.notify('acp.nvim: logout failed: ' .. ev.error, vim.log.levels.ERROR)
    else
      vim.notify(('acp.nvim: signed out of %s'):format(view.agent))
    end
  end)
end

--- Sends `text` to the current tab's chat, opening it (without moving the
--- cursor) when needed. `opts.context`: items attached to this prompt
--- only (see `acp.prompt.context`), besides the chat's pending ones. Returns true
--- when the prompt was sent (or waits for the agent to be ready).
---@param text string
---@param opts? { context?: table[] }
---@return boolean
function M.send(text, opts)
  if type(text) ~= 'string' or vim.trim(text) == '' then
    vim.notify('acp.nvim: :AcpSend needs a message', vim.log.levels.WARN)
    return false
  end
  local view = M.current()
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

--- Cancels the running turn of the current tab's chat. True when a turn
--- was running.
---@return boolean
function M.cancel()
  local view = M.current()
  local core = loaded_core()
  if not (view and core) then
    vim.notify('acp.nvim: no chat in this tab')
    return false
  end
  local ok, res = pcall(core.cancel, view.thread)
  if not ok then
    vim.notify('acp.nvim: ' .. require('acp.util.text').error(res), vim.log.levels.WARN)
    return false
  end
  if not res then
    vim.notify('acp.nvim: nothing to cancel')
  end
  return res
end

--- Opens a log in a split: the core's log, or the build log with 'build'.
function M.open_log(which)
  local path = which == 'build' and require('acp.core').build_log or config.options.log_file
  if vim.fn.filereadable(path) ~= 1 then
    vim.notify('acp.nvim: no log yet at ' .. path)
    return
  end
  vim.cmd('split ' .. vim.fn.fnameescape(path))
  vim.cmd('normal! G')
end

--- `:AcpTrace`: the protocol trace of the current chat's agent.
function M.trace()
  local view, core = chat_and_core()
  return view and require('acp.agents.trace').open(view, core)
end

--- `:AcpTraceSave {file}`: the trace as JSONL, secrets redacted.
function M.trace_save(path)
  local view, core = chat_and_core()
  return view and require('acp.agents.trace').save(view, core, path)
end

--- Opens a terminal's output (`:AcpTerminal {id}`) of the current chat.
function M.open_terminal(id)
  local view = chat_and_core()
  return view and require('acp.editor.terminal').open(view, id)
end

--- `:AcpReview`: every file the session changed, against its text from
--- before the session.
function M.review()
  local view = chat_and_core()
  return view and require('acp.editor.review').review(view)
end

--- `:AcpDiff`: reviews the diff of the card under the cursor (in the
--- transcript), else of the newest card that has one.
function M.diff()
  local view, core = chat_and_core()
  if not view then
    return
  end
  local review = require('acp.editor.review')
  if vim.api.nvim_get_current_buf() == view.buf then
    local index, kind = view:entry_at(vim.api.nvim_win_get_cursor(0)[1] - 1)
    local e = kind == 'tool_call' and core.entry(view.thread, index)
    if e and #review.diffs_of(e) > 0 then
      return review.open_entry(e)
    end
  end
  for index = view.last_index or -1, 0, -1 do
    local kind = view.entries[index] and view.entries[index].kind
    if kind == 'tool_call' then
      local e = core.entry(view.thread, index)
      if e and #review.diffs_of(e) > 0 then
        return review.open_entry(e)
      end
    end
  end
  vim.notify('acp.nvim: no tool card with a diff in this chat')
end

--- Picks one of the agent's `items` ({ id, name, description }): the one
--- named `id`, or one chosen from a list; `apply(core, view, item_id)`.
--- `what`: { singular, plural } for the messages.
local function choose_from_agent(what, items, id, apply, view, core)
  if #items == 0 then
    vim.notify(('acp.nvim: %s offers no %s'):format(view.agent, what[1] .. 's'))
    return
  end
  if id and id ~= '' then
    for _, it in ipairs(items) do
      if it.id == id or it.name == id then
        apply(core, view, it.id)
        return it.id
      end
    end
    local ids = vim.tbl_map(function(it)
      return it.id
    end, items)
    vim.notify(
      ('acp.nvim: unknown %s %q (%s: %s)'):format(what[1], id, what[2], table.concat(ids, ', ')),
      vim.log.levels.WARN
    )
    return
  end
  require('acp.util.escape').select(items, {
    prompt = what[1],
    format_item = function(it)
      local of = require('acp.util.text').of
      return (of(it.name) or of(it.id) or '?') .. (it.description and (': ' .. (of(it.description) or '')) or '')
    end,
  }, function(it)
    if it then
      apply(core, view, it.id)
    end
  end)
end

--- `:AcpAuth [method]`: signs in with one of the agent's methods (when it
--- answers the session request with "authentication required"): `agent`
--- methods through `authenticate`, `terminal` ones by running the agent's
--- login in a terminal, `env_var` ones by saying which variable to set.
function M.auth(method)
  local view, core = chat_and_core()
  if view then
    local methods = core.auth_methods(view.thread) or {}
    return choose_from_agent({ 'sign-in method', 'methods' }, methods, method, function(c, v, id)
      for _, m in ipairs(methods) do
        if m.id == id then
          return require('acp.ask.auth').sign_in(v, m)
        end
      end
      c.authenticate(v.thread, id)
    end, view, core)
  end
end

--- `:AcpMode [id]`: switches the session's mode (the agent's list, e.g.
--- ask / code / plan); without an id, pick from the list.
function M.mode(id)
  local view, core = chat_and_core()
  if view and require('acp.agents.controls').mode(view, id) then
    -- The agent's `mode` config option (it wins over the legacy modes).
    return
  end
  if view then
    return choose_from_agent({ 'mode', 'modes' }, (view.info.modes or {}).availableModes or {}, id, function(c, v, mode)
      c.set_mode(v.thread, mode)
    end, view, core)
  end
end

--- `:AcpLocations`: the session's quickfix list of tool-call locations.
function M.locations()
  local view = chat_and_core()
  return view and require('acp.chat.quickfix').open(view)
end

--- Files the current chat's agent wrote: { path, time, tool_call_id, ... }.
function M.writes()
  local view = M.current()
  local core = loaded_core()
  return (view and core) and core.writes(view.thread) or {}
end

--- The transcript of the current chat as markdown (as the core renders it).
function M.export()
  local view = M.current()
  local core = loaded_core()
  if view and core then
    return core.markdown(view.thread)
  end
end

return M
