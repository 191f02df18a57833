--- ChatView: the transcript buffer (filetype `acpchat`, markdown) and the
--- input area of one chat. It renders the core's entry events: each entry
--- is a block of lines whose start is tracked by an extmark, blocks are
--- separated by one blank line, and only the changed block is rewritten.
--- This file holds the view's fields, windows, input and buffer
--- primitives; acp.chat.apply turns a drained batch of events into calls
--- of those primitives.
local config = require('acp.config')

local api = vim.api
local ns = api.nvim_create_namespace('acp_chat')
local notice_ns = api.nvim_create_namespace('acp_chat_notice')
local text = require('acp.util.text')
local apply = require('acp.chat.apply')

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

--- One chat. Every field is declared here and initialised in
--- `ChatView.new`; the modules around the view (context, activity,
--- quickfix) read and update these fields and add none of their own.
---@class acp.ChatView
---@field agent string The configured agent's name (`:AcpChat {agent}`).
---@field thread integer The core's id of this chat.
---@field root string The session's cwd.
---@field tab integer The tabpage the chat belongs to.
---@field buf integer The transcript buffer.
---@field input integer The input buffer.
---@field win? integer The transcript window, once shown.
---@field size { width?: integer, height?: integer, input?: integer, screen?: string } The user's last sizes of the windows and the screen size they were taken at (acp.chat.layout).
---@field input_win? integer The input window, once shown.
---@field entries table<integer, { mark: integer, kind: acp.EntryKind }> Entry index -> its start extmark and kind.
---@field count integer Entries rendered.
---@field last_index? integer Index of the last entry.
---@field cards table<integer, acp.CardMeta> Entry index -> metadata of each tool card.
---@field plans table<integer, acp.PlanLayout> Entry index -> where each plan's parts are.
---@field marks table<integer, table[]> Entry index -> what to colour in an agent notice or a compaction (acp.Event.marks).
---@field flood_at? integer When the last flood drain came (uv.now()).
---@field highlight_paused? boolean Highlighting stopped during a flood.
---@field frozen table<integer, true> Entries whose highlights are frozen (acp.chat.markdown.freeze).
---@field live_row? integer Where the buffer's parser starts (the live entry), once set.
---@field live_tail? { index: integer, offset: integer } The live entry's rows above `offset` (from its first row) are frozen.
---@field _winbar_set boolean The winbar was set once.
---@field settle? { freeze: table<integer, true>, decorate: table<integer, true> } What a burst left for after its drain (acp.chat.apply).
---@field _ranges { tick: integer, first: integer[], last: integer[] } Entry rows read since the buffer's last change (see `entry_range`).
---@field state acp.TurnState
---@field status_detail? string
---@field turns_started integer
---@field turns_ended integer
---@field info acp.ChatInfo Session metadata.
---@field agent_name? string The agent's own name, from the `agent` event.
---@field agent_info? acp.AgentInfo `agentInfo` from the `agent` event.
---@field capabilities? acp.AgentCapabilities From the `agent` event ({} when the agent sent none); nil until it came.
---@field steering boolean The agent takes `_session/steering` (acp.prompt.steer); from the `agent` event.
---@field agent_waiters { fn: fun(), timer: uv.uv_timer_t }[] Callbacks of `when_agent`.
---@field sync_roots? string[] The session's roots, as the buffer sync checks them (acp.editor.sync).
---@field open_roots? string[] The session's roots (real paths), as agent paths are checked before opening (acp.editor.open).
---@field review_accepted_entries? integer Entries before this index were accepted in review ("accept all").
---@field context table[] Pending context items of the next prompt (acp.prompt.context).
---@field qf_entries table<integer, table> Entry index -> its quickfix items ({ raw = locations } until listed).
---@field qf_dirty boolean The quickfix list waits for a refresh.
---@field qf_id? integer The session's quickfix list.
---@field activity_turns? integer `turns_ended` at the last activity pass (nil before the first).
---@field queue { id: integer, text: string|acp.ContentBlock[], context: table[] }[] Messages waiting for the turn to end (acp.prompt.queue), each with its own id.
---@field history_of? string The session this chat was opened to load or resume.
---@field name? string The user's name for the chat (`r` in `:AcpThreads`): shown instead of the agent's title in the tab labels and the threads view.
---@field turn_at? integer When (vim.uv.now()) the running turn started, or the last one ended.
---@field stop_reason? string How the last turn ended (the prompt answer's stop reason).
---@field worktree? { name: string, branch: string, path: string, base_branch?: string, base_commit: string, repo: string, included?: string[] } The git worktree the chat runs in (`:AcpWorktree`, acp.editor.worktree).
---@field closed boolean The chat was closed for good (`:AcpClose`): nothing may draw into it.
---@field editing? { turn: integer, index: integer } The input edits turn `turn`'s message (entry `index`): sending resends it from there (acp.chat.resend).
local ChatView = {}
ChatView.__index = ChatView

--- Session metadata kept from typed events (see `info_field`).
---@class acp.ChatInfo
---@field session? string
---@field title? string
---@field mode? string
---@field modes? acp.SessionModes
---@field commands? table[]
---@field config_options? table[]
---@field models? { availableModels: table[], currentModelId?: string } Legacy models (session answers).
---@field usage? table
---@field turn_usage? table The last prompt answer's `usage` (token counts).

-- The chat is markdown to Tree-sitter; highlight groups can be overridden.
vim.treesitter.language.register('markdown', { 'acpchat', 'acpchat_input' })
api.nvim_set_hl(0, 'AcpTitle', { link = 'Title', default = true })
api.nvim_set_hl(0, 'AcpInputTitle', { link = 'Title', default = true })


local split_lines = text.split
ChatView._split_lines = split_lines

local function set_buf_opts(buf, opts)
  for k, v in pairs(opts) do
    vim.bo[buf][k] = v
  end
end

--- A chat's view; every field of acp.ChatView starts here.
---@param opts { agent: string, thread: integer, root: string, tab: integer, history_of?: string }
---@return acp.ChatView
function ChatView.new(opts)
  local self = setmetatable({}, ChatView)
  self.queue = {}
  self.history_of = opts.history_of
  self.agent = opts.agent
  self.thread = opts.thread
  self.root = opts.root
  self.tab = opts.tab
  self.win, self.input_win = nil, nil
  self.size = {}
  self.entries = {}
  self.count = 0
  self.last_index = nil
  self.cards = {}
  self.plans = {}
  self.marks = {}
  self.flood_at, self.highlight_paused = nil, nil
  self.frozen, self.live_row, self.live_tail = {}, nil, nil
  self._winbar_set = false
  self._ranges = { tick = -1, first = {}, last = {} }
  self.settle = nil
  self.state = 'connecting'
  self.status_detail = nil
  self.turns_started, self.turns_ended = 0, 0
  self.info = {}
  self.agent_name, self.agent_info, self.capabilities = nil, nil, nil
  self.steering = false
  self.agent_waiters = {}
  self.sync_roots, self.open_roots = nil, nil
  self.review_accepted_entries = nil
  self.context = {}
  self.qf_entries, self.qf_dirty, self.qf_id = {}, false, nil
  self.activity_turns = nil
  self.name, self.turn_at, self.stop_reason = nil, nil, nil
  self.worktree, self.closed = nil, false
  self.editing = nil

  self.buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(self.buf, ('acp://chat/%d/%s'):format(self.thread, self.agent))
  set_buf_opts(self.buf, { buftype = 'nofile', bufhidden = 'hide', swapfile = false, modifiable = false })
  vim.bo[self.buf].filetype = 'acpchat'
  if not require('acp.chat.markdown').start(self.buf) then
    vim.bo[self.buf].syntax = 'markdown'
  end
  require('acp.chat.decor').buffer(self.buf)

  self.input = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(self.input, ('acp://input/%d'):format(self.thread))
  set_buf_opts(self.input, { buftype = 'nofile', bufhidden = 'hide', swapfile = false })
  vim.bo[self.input].filetype = 'acpchat_input'
  -- The input: pending context (shown above its text), `@` mentions, `/` commands.
  require('acp.prompt').attach(self)
  require('acp.completion').attach(self.input)
  require('acp.chat.activity').attach(self)
  require('acp.editor.checkpoint').attach(self, config.options.chat.keys.restore)
  -- Buffers of the session's files follow the disk.
  require('acp.editor.sync').attach(self)

  self:_keymaps()
  return self
end

function ChatView:_keymaps()
  local keys = config.options.chat.keys
  local function map(buf, modes, lhs, fn, desc)
    if lhs then
      vim.keymap.set(modes, lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
    end
  end
  map(self.input, 'n', keys.submit, function()
    self:submit()
  end, 'Send the message to the agent')
  map(self.input, 'i', keys.send, function()
    self:submit()
  end, 'Send the message to the agent')
  map(self.input, { 'n', 'i' }, keys.steer, function()
    self:submit({ steer = true })
  end, 'Steer the running turn with the message (queued when the agent does not offer it)')
  for _, buf in ipairs({ self.input, self.buf }) do
    map(buf, { 'n', 'i' }, keys.cancel, function()
      if not (self.editing and self.state ~= 'running' and require('acp.chat.resend').stop(self)) then
        require('acp.chat').cancel()
      end
    end, 'Cancel the running turn (or drop the edit of an earlier message)')
  end
  local key = config.options.permissions.focus_key
  if key then
    for _, buf in ipairs({ self.input, self.buf }) do
      map(buf, { 'n', 'i' }, key, function()
        require('acp.ask').focus()
      end, 'Answer the pending permission request (or request for input)')
    end
  end
  -- One chord answers the permission request in view (allow, always, reject).
  require('acp.ask.permission_chord').attach(self, { self.input, self.buf }, map)
  map(self.buf, 'n', keys.hide, function()
    self:hide()
  end, 'Hide the chat')
  map(self.buf, 'n', keys.input, function()
    self:focus_input(true)
  end, 'Go to the input area')
  require('acp.prompt.history').attach(self.input)
  require('acp.chat.resend').attach(self, map)
end

--- Opens the chat windows in the current tab (or focuses them), at the
--- size the user last gave them.
function ChatView:show(focus_input)
  local opts = config.options.chat
  local layout = require('acp.chat.layout')
  layout.install_tabline()
  if not (self.win and api.nvim_win_is_valid(self.win)) then
    local pos = opts.position
    if pos == 'tab' then
      vim.cmd(('tab sbuffer %d'):format(self.buf))
      -- Commands typed in the chat's own tab find it there.
      require('acp.chat').by_tab[api.nvim_get_current_tabpage()] = self
    else
      local split = ({ right = 'botright vsplit', left = 'topleft vsplit', bottom = 'botright split' })[pos]
        or 'botright vsplit'
      vim.cmd(split)
      api.nvim_win_set_buf(0, self.buf)
      -- The screen's share (chat.width), or the user's size on this screen.
      layout.size_new(self, api.nvim_get_current_win())
    end
    self.win = api.nvim_get_current_win()
    local wo = vim.wo[self.win]
    wo.wrap, wo.linebreak, wo.number, wo.relativenumber = true, true, false, false
    wo.signcolumn, wo.conceallevel, wo.winfixwidth = 'no', 2, true
    wo.foldmethod, wo.foldenable, wo.foldlevel = 'manual', true, 0
    wo.foldtext = "v:lua.require'acp.chat.view'.foldtext()"
    require('acp.chat.decor').window(self.win)
    layout.watch(self, self.win)
    self:_fold_all(self.win)
    self:_update_winbar()
  end
  if not (self.input_win and api.nvim_win_is_valid(self.input_win)) then
    api.nvim_set_current_win(self.win)
    vim.cmd(('belowright %dsplit'):format(self.size.input or opts.input_height))
    api.nvim_win_set_buf(0, self.input)
    self.input_win = api.nvim_get_current_win()
    layout.watch(self, self.input_win)
    local wo = vim.wo[self.input_win]
    wo.wrap, wo.number, wo.relativenumber, wo.signcolumn, wo.winfixheight = true, false, false, 'no', true
    vim.wo[self.input_win].winbar = self:input_winbar()
    require('acp.prompt.context').render(self)
  end
  -- Once both exist: a split of a 'winfixbuf' window may not take
  -- another buffer.
  layout.fix_buffer(self.win)
  layout.fix_buffer(self.input_win)
  self:scroll_to_end()
  if focus_input then
    self:focus_input(opts.start_insert)
  end
end

--- The input's winbar: its keys as configured (a key set to false is
--- not offered), or what it edits (acp.chat.resend).
function ChatView:input_winbar()
  if self.editing then
    return require('acp.chat.resend').winbar(self)
  end
  local keys, hints = config.options.chat.keys, {}
  for _, k in ipairs({ { keys.send, 'send' }, { keys.cancel, 'cancel' } }) do
    if k[1] then
      hints[#hints + 1] = k[1]:gsub('%%', '%%%%') .. ' ' .. k[2]
    end
  end
  hints[#hints + 1] = '@ mention'
  return '%#AcpInputTitle# Message %*%#Comment# ' .. table.concat(hints, ' · ') .. '%<%*'
end

--- Drops the edit of an earlier message (:AcpCancel while no turn runs).
function ChatView:stop_editing()
  return require('acp.chat.resend').stop(self)
end

function ChatView:focus_input(insert)
  if self.input_win and api.nvim_win_is_valid(self.input_win) then
    api.nvim_set_current_win(self.input_win)
    if insert then
      vim.cmd('startinsert!')
    end
  end
end

function ChatView:hide()
  for _, w in ipairs({ self.input_win, self.win }) do
    -- The last window of a tab closes the tab, unless it is the last tab.
    if w and api.nvim_win_is_valid(w) then
      if #api.nvim_tabpage_list_wins(api.nvim_win_get_tabpage(w)) > 1 or #api.nvim_list_tabpages() > 1 then
        api.nvim_win_close(w, true)
      end
    end
  end
end

function ChatView:is_visible()
  return self.win ~= nil and api.nvim_win_is_valid(self.win)
end

--- Sends the input area's text as a prompt.
function ChatView:submit(opts)
  local lines = api.nvim_buf_get_lines(self.input, 0, -1, false)
  local text = vim.trim(table.concat(lines, '\n'))
  if text == '' and #(self.context or {}) == 0 then
    notify('acp.nvim: nothing to send', vim.log.levels.WARN)
    return
  end
  if self.editing then
    if require('acp.chat.resend').submit(self, text) then
      require('acp.prompt.history').reset(self.input)
      api.nvim_buf_set_lines(self.input, 0, -1, false, {})
    end
    return
  end
  if self:send(text, opts) then
    require('acp.prompt.history').reset(self.input)
    api.nvim_buf_set_lines(self.input, 0, -1, false, {})
  end
end

--- Sends text (or content blocks). Text goes with the pending context and
--- its `@` mentions resolved (`acp.prompt.context`); `opts.context` adds items for
--- this prompt only. Returns true when the core accepted it (or it waits
--- for the agent's capabilities to build the context).
function ChatView:send(prompt, opts)
  local core = require('acp.core').get()
  if not core then
    return false
  end
  local queue = require('acp.prompt.queue')
  if opts and opts.steer and queue.busy(self) then
    return require('acp.prompt.steer').send(self, prompt, opts)
  end
  local route = queue.route(self)
  if route == 'queue' then
    -- A turn runs: the message waits and goes when it ends.
    return queue.add(self, prompt, opts)
  end
  local context = require('acp.prompt.context')
  local from_text = type(prompt) == 'string'
  local text_of_prompt = from_text and prompt or ''
  if from_text then
    local blocks, why = context.build(self, prompt, opts)
    if blocks == false then
      return true
    elseif not blocks then
      notify('acp.nvim: ' .. why, vim.log.levels.WARN)
      return false
    end
    prompt = blocks
  end
  local ok, err = pcall(core.prompt, self.thread, prompt, { queued_by_agent = route == 'agent' })
  if not ok then
    notify('acp.nvim: ' .. text.error(err), vim.log.levels.WARN)
    return false
  end
  if from_text then
    context.sent(self)
    -- Typed or sent with :AcpSend: <Up> in the input brings it back.
    require('acp.prompt.history').add(vim.trim(text_of_prompt))
  end
  return true
end

-- Rendering ----------------------------------------------------------------

--- The entry index at 0-based `row` (the last entry starting at or above).
function ChatView:entry_at(row)
  local m = api.nvim_buf_get_extmarks(self.buf, ns, { row, 0 }, 0, { limit = 1 })[1]
  if not m then
    return nil
  end
  for index, e in pairs(self.entries) do
    if e.mark == m[1] then
      return index, e.kind
    end
  end
end

--- Row range [first, last] (0-based, inclusive) of entry `index`.
function ChatView:entry_range(index)
  local e = self.entries[index]
  if not e then
    return nil
  end
  -- Kept until the text changes (extmarks move only with it): the steps
  -- after a drain ask for the same entries' rows several times each.
  local tick = api.nvim_buf_get_changedtick(self.buf)
  local known = self._ranges
  if known.tick ~= tick then
    known = { tick = tick, first = {}, last = {} }
    self._ranges = known
  elseif known.first[index] then
    return known.first[index], known.last[index]
  end
  local first = api.nvim_buf_get_extmark_by_id(self.buf, ns, e.mark, {})[1]
  local nxt = self.entries[index + 1]
  local last
  if nxt then
    last = api.nvim_buf_get_extmark_by_id(self.buf, ns, nxt.mark, {})[1] - 2
  else
    last = api.nvim_buf_line_count(self.buf) - 1
  end
  known.first[index], known.last[index] = first, last
  return first, last
end

--- Adds new entries (`{ index, kind, lines }`) at the end with one buffer
--- edit, each after a blank separator line.
function ChatView:_add_many(list)
  local buf = self.buf
  local fresh = self.count == 0
  local base = fresh and 0 or api.nvim_buf_line_count(buf)
  local lines, starts = {}, {}
  for i, ev in ipairs(list) do
    if not (fresh and i == 1) then
      lines[#lines + 1] = ''
    end
    starts[i] = base + #lines
    for _, l in ipairs(text.safe_lines(ev.lines)) do
      lines[#lines + 1] = l
    end
  end
  if fresh then
    api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  else
    api.nvim_buf_set_lines(buf, base, base, false, lines)
  end
  for i, ev in ipairs(list) do
    local mark = api.nvim_buf_set_extmark(buf, ns, starts[i], 0, { right_gravity = false })
    self.entries[ev.index] = { mark = mark, kind = ev.kind }
    self.count = self.count + 1
    self.last_index = ev.index
  end
end

function ChatView:_add(ev)
  self:_add_many({ ev })
end

function ChatView:_append(ev)
  local buf = self.buf
  if not self.entries[ev.index] then
    if ev.index ~= nil and ev.index > (self.last_index or -1) then
      -- An entry whose own event was lost: its text still shows.
      return self:_add({ index = ev.index, kind = 'message', lines = split_lines(ev.text) })
    end
    error(('append to entry %s, which is not shown'):format(tostring(ev.index)))
  end
  local _, row = self:entry_range(ev.index)
  local col = #api.nvim_buf_get_lines(buf, row, row + 1, true)[1]
  api.nvim_buf_set_text(buf, row, col, row, col, split_lines(ev.text))
end

function ChatView:_replace(ev)
  local first, last = self:entry_range(ev.index)
  if not first then
    error(('replace of unknown entry %d'):format(ev.index))
  end
  local e = self.entries[ev.index]
  api.nvim_buf_set_lines(self.buf, first, last + 1, false, text.safe_lines(ev.lines))
  -- The start mark may have collapsed with the deleted lines: pin it again.
  api.nvim_buf_set_extmark(self.buf, ns, first, 0, { id = e.mark, right_gravity = false })
end

--- Applies a run of events for this thread (one drain's worth): see
--- acp.chat.apply, which edits the buffer through the methods above.
function ChatView:apply(events)
  return apply.apply(self, events)
end

--- Runs `fn(...)` for event `ev`; a failure is logged and shown in the
--- chat instead of stopping the rest of the batch.
function ChatView:_guard(ev, fn, ...)
  local ok, err = xpcall(fn, debug.traceback, ...)
  if not ok then
    self:_failed(ev, err)
  end
  return ok
end

--- What the user sees of an event that could not be applied: a new entry
--- becomes an error line in its place (so later appends to it still land),
--- anything else an error line below the current end.
function ChatView:_failed(ev, err)
  local what = ev and ('%s event'):format(text.line(ev.type, '?')) or 'chat update'
  require('acp.core.dispatch').log_error(('%s for chat %s could not be shown: %s'):format(what, self.thread, err))
  local msg = ('⚠ acp.nvim could not show this %s: %s'):format(what, text.line(tostring(err):match('^[^\n]*')))
  local modifiable = vim.bo[self.buf].modifiable
  vim.bo[self.buf].modifiable = true
  local shown = ev
    and ev.type == 'added'
    and type(ev.index) == 'number'
    and not self.entries[ev.index]
    and pcall(self._add, self, { index = ev.index, kind = text.line(ev.kind, 'error'), lines = { msg } })
  vim.bo[self.buf].modifiable = modifiable
  if not shown then
    self:notice({ msg })
  end
end

--- Shows `lines` (plain text) as virtual lines below the current end of
--- the transcript: errors and notices that are not part of any entry.
function ChatView:notice(lines, hl)
  local virt = {}
  for _, l in ipairs(text.safe_lines(lines)) do
    virt[#virt + 1] = { { l, hl or 'ErrorMsg' } }
  end
  local row = api.nvim_buf_line_count(self.buf) - 1
  pcall(api.nvim_buf_set_extmark, self.buf, notice_ns, row, 0, { virt_lines = virt })
end

--- The notice lines shown in the transcript, in order (for tests).
function ChatView:notices()
  local out = {}
  for _, m in ipairs(api.nvim_buf_get_extmarks(self.buf, notice_ns, 0, -1, { details = true })) do
    for _, vl in ipairs(m[4].virt_lines or {}) do
      local parts = {}
      for _, chunk in ipairs(vl) do
        parts[#parts + 1] = chunk[1]
      end
      out[#out + 1] = table.concat(parts)
    end
  end
  return out
end

-- Waiting for the agent -------------------------------------------------------------

--- The agent's capabilities came, or they never will on this connection.
function ChatView:_agent_settled()
  return self.capabilities ~= nil or self.state == 'disconnected'
end

--- Runs `fn()` once the agent's `agent` event arrived (its capabilities
--- are then in `self.capabilities`) or the chat got disconnected, or after
--- `timeout_ms` (default 30 s) at the latest; at once when that already
--- happened. Never blocks, never polls.
---@param fn fun()
---@param timeout_ms? integer
function ChatView:when_agent(fn, timeout_ms)
  if self:_agent_settled() then
    return fn()
  end
  local waiter = { fn = fn, timer = assert(vim.uv.new_timer()) }
  self.agent_waiters[#self.agent_waiters + 1] = waiter
  waiter.timer:start(timeout_ms or 30000, 0, vim.schedule_wrap(function()
    self:_release_agent_waiters(waiter)
  end))
end

--- Runs and forgets the waiting callbacks (only `only`, when given).
function ChatView:_release_agent_waiters(only, skip_run)
  local keep, run = {}, {}
  for _, w in ipairs(self.agent_waiters) do
    if only == nil or w == only then
      run[#run + 1] = w
    else
      keep[#keep + 1] = w
    end
  end
  self.agent_waiters = keep
  for _, w in ipairs(run) do
    if not w.timer:is_closing() then
      w.timer:stop()
      w.timer:close()
    end
    if not skip_run then
      local ok, err = xpcall(w.fn, debug.traceback)
      if not ok then
        notify('acp.nvim: ' .. require('acp.util.text').error(err), vim.log.levels.ERROR)
      end
    end
  end
end

--- Windows showing the transcript whose cursor sits on the last line (or
--- which are not the current window): these follow new output.
function ChatView:_following()
  local last = api.nvim_buf_line_count(self.buf)
  local cur = api.nvim_get_current_win()
  local wins
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    if win ~= cur or api.nvim_win_get_cursor(win)[1] >= last then
      wins = wins or {}
      wins[#wins + 1] = win
    end
  end
  return wins
end

function ChatView:scroll_to_end(wins)
  local last = api.nvim_buf_line_count(self.buf)
  for _, win in ipairs(wins or vim.fn.win_findbuf(self.buf)) do
    if api.nvim_win_is_valid(win) then
      api.nvim_win_set_cursor(win, { last, 0 })
      if win == self.win then
        -- The last line stays above the status area, not under it.
        self:keep_end_visible(win)
      end
    end
  end
end

--- Rows the live status area covers at the bottom of the transcript
--- window (0 when it is not shown). The permission float, which asks
--- through the view, keeps clear of them.
function ChatView:status_height()
  return require('acp.chat.status').height(self)
end

--- The queue changed (acp.prompt.queue): the live status area lists it.
--- Returns whether the area is shown (the queue then needs no lines below
--- the transcript).
function ChatView:show_queue_in_status()
  return require('acp.chat.status').queue_changed(self)
end

--- Scrolls `win` (following the output) so that the last line sits above
--- what covers the bottom of the transcript: the status area and a
--- permission float placed at the bottom.
function ChatView:keep_end_visible(win)
  require('acp.chat.status').keep_end_visible(self, win)
end

--- The session's current mode: its name (or id), or nil without modes
--- (the `mode` config option wins over the legacy modes).
function ChatView:mode_name()
  return require('acp.agents.controls').mode_name(self)
end

--- The header, ` ACP  agent · state · [mode] · model · effort · usage ·
--- title`, fitted to the window (acp.chat.header).
function ChatView:_update_winbar()
  require('acp.chat.header').update(self)
end

--- The transcript text (for tests and export).
function ChatView:lines()
  return api.nvim_buf_get_lines(self.buf, 0, -1, false)
end

--- The closed-fold line: the first folded line without markdown fences,
--- and how many lines are hidden.
function ChatView.foldtext()
  local first = vim.fn.getline(vim.v.foldstart):gsub('```%w*', ''):gsub('%*%*', '')
  if vim.trim(first) == '' then
    first = '  …'
  end
  return ('%s  [%d lines, zo opens]'):format(first, vim.v.foldend - vim.v.foldstart + 1)
end

--- Thoughts fold (closed when new). Folds are manual and kept per window,
--- updated once per drain for the thoughts that changed: cheaper than a
--- foldexpr evaluated per line during a flood, and it keeps the folds the
--- user opened open.
function ChatView:_fold_entry(win, index, skip)
  local first, last = self:entry_range(index)
  if not first then
    return
  end
  -- `skip` leading lines stay visible (a card's header).
  first = first + (skip or 0)
  -- Markdown conceals code-fence lines whole (`conceal_lines`); a closed
  -- fold starting on one would be concealed with it, so start below it.
  local l = api.nvim_buf_get_lines(self.buf, first, first + 1, false)[1]
  if l and l:match('^%s*```') then
    first = first + 1
  end
  if last < first then
    return
  end
  api.nvim_win_call(win, function()
    local view = vim.fn.winsaveview()
    local was_open = false
    if vim.fn.foldlevel(first + 1) > 0 then
      was_open = vim.fn.foldclosed(first + 1) == -1
      api.nvim_win_set_cursor(win, { first + 1, 0 })
      vim.cmd('silent! normal! zd')
    end
    vim.cmd(('silent! %d,%dfold'):format(first + 1, last + 1))
    if was_open then
      vim.cmd(('silent! %dfoldopen'):format(first + 1))
    end
    vim.fn.winrestview(view)
  end)
end

function ChatView:_refold(indices)
  if not config.options.chat.fold_thoughts then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    for index in pairs(indices) do
      if self.entries[index] and self.entries[index].kind == 'thought' then
        self:_fold_entry(win, index)
      end
    end
  end
end

function ChatView:_fold_all(win)
  local thoughts = config.options.chat.fold_thoughts
  for index, e in pairs(self.entries) do
    if e.kind == 'thought' and thoughts then
      self:_fold_entry(win, index)
    elseif e.kind == 'subagent' then
      require('acp.chat.subagents').fold(self, win, index)
    end
  end
end

function ChatView:destroy()
  require('acp.core.dispatch').unregister(self.thread)
  require('acp.chat').by_thread[self.thread] = nil
  -- A closed chat sends nothing more.
  self:_release_agent_waiters(nil, true)
  -- The session ended: so do the commands it started, background ones too.
  require('acp.editor.terminal').kill_thread(self.thread)
  require('acp.editor.sync').detach(self)
  self:hide()
  for _, b in ipairs({ self.buf, self.input }) do
    if api.nvim_buf_is_valid(b) then
      api.nvim_buf_delete(b, { force = true })
    end
  end
end

return ChatView
