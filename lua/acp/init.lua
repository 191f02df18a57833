--- acp.nvim: Agent Client Protocol agents inside Neovim.
--- Public API (`:h acp-api`): the functions documented here are stable
--- within a major version (see CHANGELOG.md); names starting with `_` are
--- internal.
---
--- The modules are layers, top to bottom. A folder is a layer: its
--- init.lua says what the layer owns and, on its `May use:` line, the
--- layers and root modules below it that its files may require. A file
--- requires files of its own layer or of those, never one above, and no
--- two files require each other, not even inside a function. What a
--- lower layer must call above it is handed down: the dispatcher gets its
--- services registered, the chat view is passed to the modules that act
--- on it, and nothing requires this file.
---
---   init.lua, health.lua   the public API and `:checkhealth acp`
---   chat/                  a chat on screen and over its life
---   completion.lua         `@` and `/` completion for blink.cmp and nvim-cmp
---   prompt/                what the user sends
---   agents/                the agents outside a turn
---   ask/                   questions the agent asks the user
---   editor/                what the agent reaches in this Neovim
---   core/                  the Rust core: facade, build, dispatch, contract
---   config.lua             the options
---   events.lua             the User autocmds
---   registry.lua           the ACP registry snapshot (registry.json)
---   util/                  text and escaping helpers
-- May use: chat, prompt, agents, ask, editor, core, config, util.
local M = {}

local config = require('acp.config')
local chats = require('acp.chat')
local lifecycle = require('acp.chat.lifecycle')

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

--- Applies user options (see `:h acp-config`). Optional.
---@param opts? acp.Config
---@return boolean ok
function M.setup(opts)
  local ok, err = pcall(config.setup, opts)
  if not ok then
    notify(require('acp.util.text').error(err), vim.log.levels.ERROR)
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

--- Installs the Rust core asynchronously: the prebuilt core of this
--- version for the platform when a release has it (`prebuilt` in the
--- options), else `cargo build --release`; `build({ from = 'source' })`
--- always builds with cargo. Progress and an end message; the output goes
--- to the build log (`:AcpLog build`). Returns a handle:
--- `build():wait(timeout_ms)` blocks (processing events) until it ends and
--- returns true on success.
---@param opts? { from?: 'source'|'prebuilt' }|fun(ok: boolean)
---@param on_done? fun(ok: boolean)
---@return acp.BuildHandle? # nil (and an error message) for bad `opts`
function M.build(opts, on_done)
  if type(opts) == 'function' then
    opts, on_done = nil, opts
  end
  local bad
  if opts ~= nil and type(opts) ~= 'table' then
    bad = 'acp.nvim: build() takes { from = "source" } or a callback'
  elseif opts and opts.from ~= nil and opts.from ~= 'source' and opts.from ~= 'prebuilt' then
    bad = ('acp.nvim: build(): `from` must be "source" or "prebuilt", got %s'):format(vim.inspect(opts.from))
  end
  if bad then
    -- Nothing is built on a mistyped request.
    notify(bad, vim.log.levels.ERROR)
    if on_done then
      on_done(false)
    end
    return nil
  end
  opts = opts or {}
  local run = { from = opts.from, prebuilt = config.options.prebuilt }
  return require('acp.core.build').run(run, on_done)
end

-- Chats. Opening, replacing and closing them is the chat layer's
-- (acp.chat.lifecycle), and so is the registry of open chats (acp.chat);
-- these are the same functions, documented under these names.
M.open = lifecycle.open -- :h acp.open()
M.reopen = lifecycle.reopen -- :h acp.reopen()
M.current = chats.current -- :h acp.current()
M.send = lifecycle.send -- :h acp.send()
M.cancel = chats.cancel -- :h acp.cancel()
M.project_root = lifecycle.project_root -- :h acp.project_root()
M.root_too_wide = lifecycle.root_too_wide -- :h acp.root_too_wide()
M.mcp_servers = require('acp.agents').mcp_servers -- :h acp.mcp_servers()

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
---@field waiting boolean Something waits for the user: a permission request, a request for input or a sign-in.
---@field waiting_for? 'permission'|'input'|'sign-in' What waits.
---@field done_unseen boolean A turn ended while the chat was out of sight (cleared once the user looks at it).
---@field label string The chat's name in the tab labels: `ACP {agent} {thread}[: {title}]`.
---@field threads { working: integer, waiting: integer, done_unseen: integer, error: integer, idle: integer } How many chats of this Neovim are in each state (`:h acp-threads`).

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
  local attention = require('acp.chat.attention').of(view)
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
    waiting = attention.waiting,
    waiting_for = attention.waiting_for,
    done_unseen = attention.done_unseen,
    label = esc.statusline(require('acp.chat.layout').chat_label(view), 60),
    threads = require('acp.chat.threads').counts(),
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
  for tab, view in pairs(chats.by_tab) do
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
    notify('acp.nvim: no chat in this tab')
    return nil
  end
  return view, core
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
  return view and require('acp.agents.sessions').pick(view, lifecycle.reopen)
end

--- `:AcpResume [id]`: opens a session (default: this chat's last one).
function M.resume(id)
  local view = chat_and_core()
  return view and require('acp.agents.sessions').resume(view, id, lifecycle.reopen)
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
    return notify(('acp.nvim: %s does not support logout'):format(view.agent), vim.log.levels.WARN)
  end
  require('acp.agents.controls').request(view, 'logout', vim.empty_dict(), function(ev)
    if ev.error then
      notify('acp.nvim: logout failed: ' .. ev.error, vim.log.levels.ERROR)
    else
      notify(('acp.nvim: signed out of %s'):format(view.agent))
    end
  end)
end

--- Opens a log in a split: the core's log, or the build log with 'build'.
function M.open_log(which)
  local path = which == 'build' and require('acp.core').build_log or config.options.log_file
  if vim.fn.filereadable(path) ~= 1 then
    notify('acp.nvim: no log yet at ' .. path)
    return
  end
  vim.cmd('split ' .. vim.fn.fnameescape(path))
  -- Read, not edited: no accidental change to the log, and new lines come
  -- in without a "file changed" prompt.
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].readonly = true
  vim.bo[buf].modifiable = false
  vim.bo[buf].autoread = true
  vim.bo[buf].swapfile = false
  -- q closes the window, as in the review and :AcpTerminal; in the only
  -- window left, the buffer that was there before comes back.
  vim.keymap.set('n', 'q', require('acp.util.window').close_or_previous, { buffer = buf, nowait = true, desc = 'Close the log' })
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
  notify('acp.nvim: no tool card with a diff in this chat')
end

--- Picks one of the agent's `items` ({ id, name, description }): the one
--- named `id`, or one chosen from a list; `apply(core, view, item_id)`.
--- `what`: { singular, plural } for the messages.
---@param current? string the id of the item in use (named in the title, marked)
local function choose_from_agent(what, items, id, apply, view, core, current)
  if #items == 0 then
    notify(('acp.nvim: %s offers no %s'):format(view.agent, what[1] .. 's'))
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
    notify(
      ('acp.nvim: unknown %s %q (%s: %s)'):format(what[1], id, what[2], table.concat(ids, ', ')),
      vim.log.levels.WARN
    )
    return
  end
  local in_use
  for _, it in ipairs(items) do
    if current ~= nil and it.id == current then
      in_use = it.name or it.id
    end
  end
  require('acp.util.escape').select(items, {
    prompt = require('acp.agents.controls').title(view, what[1], in_use),
    format_item = function(it)
      local of = require('acp.util.text').of
      return (of(it.name) or of(it.id) or '?') .. (it.description and (': ' .. (of(it.description) or '')) or '')
        .. (current ~= nil and it.id == current and '  (current)' or '')
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
    end, view, core, view.info.mode or (view.info.modes or {}).currentModeId)
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


