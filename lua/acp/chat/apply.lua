--- How one drained batch of a chat's events reaches its view (the other
--- half of acp.chat.view, whose buffer primitives it calls): the text
--- events become as few buffer edits as possible, the state events update
--- the view's fields, and once the batch is in, the chat catches up once
--- (highlighting, folds, cards, the status area, the winbar, the scroll,
--- the disk check, the queue, the User autocmds).
local api = vim.api
local text = require('acp.util.text')

local M = {}

--- Metadata events: event type -> { key in `view.info`, field of the event }.
local info_field = {
  session = { 'session', 'session_id' },
  title = { 'title', 'title' },
  updated_at = { 'updated_at', 'updated_at' },
  mode = { 'mode', 'mode_id' },
  modes = { 'modes', 'modes' },
  commands = { 'commands', 'commands' },
  config_options = { 'config_options', 'options' },
  models = { 'models', 'models' },
  usage = { 'usage', 'usage' },
}

-- Tool calls after which buffers are checked against the disk, once they
-- are finished.
local sync_kinds = { edit = true, delete = true, move = true }
local finished = { completed = true, failed = true }

-- Highlighting -------------------------------------------------------------------

-- One drain (one frame) bringing more agent text than this is a flood: far
-- above any model's token rate (16 KB per 16-25 ms frame is 0.6-1 MB/s).
-- Tree-sitter re-parses after every frame's edit, in time proportional to
-- what its parser covers, and until a parse completes Neovim does not
-- flush the screen; so highlighting pauses during a flood. The parser
-- covers the live entry (the whole transcript with a renderer's stock
-- parser): text of finished entries (a burst of tool cards) is frozen
-- apart and is no flood.
local FLOOD_BYTES = 16 * 1024
-- It resumes once the turn ended or the stream has been calm this long.
local CALM_MS = 500
-- And not on a transcript larger than this (one full parse on resume).
local HIGHLIGHT_MAX_BYTES = 1024 * 1024

--- Finished entries get frozen highlights, parsed once each; the buffer's
--- parser covers only the live entry (the last one while a turn runs), so
--- the cost of a frame does not grow with the chat. An entry re-rendered
--- after it finished (a tool card's update) is frozen again.
--- The live entry's parser keeps at most this many rows: above them, the
--- finished blocks of the entry are frozen as it streams (see `freeze_tail`).
local TAIL_ROWS = 16

--- Of rows `lines` (the live entry's, from its parser's first row): the
--- last blank row outside a code block before the last row, 0-based from
--- the first; nil when there is none.
local function tail_cut(lines)
  local fence_after = require('acp.chat.markdown').fence_after
  local cut, fence = nil, nil
  for i = 1, #lines - 1 do
    local l = lines[i]
    if l == '' and not fence then
      cut = i - 1
    end
    fence = fence_after(fence, l)
  end
  return cut
end

--- A long live entry: its finished blocks (up to a blank line outside a
--- code block) are frozen as they stream, and the parser keeps the rest.
--- Tree-sitter re-parses the parser's whole region on each frame, and
--- Neovim re-parses every inline region of it and redraws them when their
--- number changes (a new paragraph or list item): the cost of a frame then
--- grows with the entry (paced: 5 ms a frame at the end of a 24 KB answer).
local function freeze_tail(view, live, first, row)
  local md = require('acp.chat.markdown')
  local buf = view.buf
  local n = api.nvim_buf_line_count(buf)
  if n - row <= TAIL_ROWS then
    return row
  end
  local cut = tail_cut(api.nvim_buf_get_lines(buf, row, n, false))
  if not cut or cut == 0 then
    return row
  end
  md.freeze(buf, row, row + cut, false)
  view.live_tail = { index = live, offset = row + cut + 1 - first }
  return row + cut + 1
end

--- What may be on the screen after this drain: the chat window's rows now
--- ({ top, bottom }), and the entries from `from` on (where a chat that
--- follows the end lands: the last entries that fill the window's height,
--- a long card counted folded). Nil when the chat has no window.
local function sight(view)
  local win = view.win
  if not (win and api.nvim_win_is_valid(win)) then
    return nil
  end
  local height = api.nvim_win_get_height(win)
  local cap = require('acp.config').options.chat.card_max_lines + 1
  local from, lines = view.last_index, 0
  while from > 0 and lines < height and view.entries[from - 1] do
    local first, last = view:entry_range(from)
    local rows = first and last - first + 2 or 1 -- with the blank line between
    lines = lines + (view.entries[from].kind == 'tool_call' and math.min(rows, cap) or rows)
    from = from - 1
  end
  local top = vim.fn.line('w0', win) - 1
  return { top = top, bottom = top + height, from = from }
end

local function in_sight(s, index, first, last)
  return s ~= nil and (index >= s.from or (last >= s.top and first <= s.bottom))
end

--- More entries to freeze than this in one drain: a burst (see `freeze`).
local BURST_ENTRIES = 8

--- The live entry (the last one while a turn runs), or nil; forgets the
--- frozen rows of an entry that is no longer live.
local function live_entry(view)
  local live = view.state == 'running' and view.last_index or nil
  local tail = view.live_tail
  if tail and (tail.index ~= live or not view.entries[tail.index]) then
    view.live_tail = nil
  end
  return live
end

--- Freezes the highlights of the finished entries not frozen yet, and of
--- those in `touched` again.
local function freeze_entries(view, touched)
  local md = require('acp.chat.markdown')
  local buf = view.buf
  -- Read before `live_entry` forgets it: the entry that was live as the
  -- turn ended has its rows above the tail frozen already.
  local tail = view.live_tail
  local live = live_entry(view)
  local seen -- sight(view), once some entry is frozen
  local order = {}
  for index in pairs(view.entries) do
    if index ~= live and (not view.frozen[index] or touched[index]) then
      order[#order + 1] = index
    end
  end
  -- From the end up: what a chat that follows the end shows first, within
  -- the drain's freezing budget. Adjacent tool cards are frozen together:
  -- one parse for a burst of cards, not one each (the core renders them; a
  -- card leaves no block open).
  table.sort(order, function(a, b)
    return a > b
  end)
  -- A drain freezes the few entries a stream finishes in a frame (an
  -- answer that goes on after a tool card keeps its highlights while it
  -- streams). In a burst (more than that) what the screen shows is frozen
  -- on the next quiet turns of the loop, before what is out of sight: the
  -- text first.
  local burst = #order > BURST_ENTRIES
  local now_or_soon = burst and 'soon' or false
  -- A burst's runs are queued together, nothing read in the drain.
  local lazy = burst and {} or nil
  local run
  local function flush()
    if run and lazy then
      lazy[#lazy + 1] = { run.first, run.last, soon = run.later == 'soon' }
    elseif run then
      md.freeze(buf, run.first, run.last, run.later)
    end
    run = nil
  end
  for _, index in ipairs(order) do
    local first, last = view:entry_range(index)
    if tail and tail.index == index and not view.frozen[index] then
      -- Its rows above the tail are frozen already.
      first = first + tail.offset
    end
    -- The entry that was live as the turn ended is still highlighted by the
    -- parser: it is frozen on the next turns of the event loop, so that the
    -- turn's last frame is not delayed. Entries out of sight (a burst of a
    -- hundred tool cards) too: the drain freezes what the screen shows.
    seen = seen or sight(view) or false
    local later = (live == nil and index == view.last_index) or not in_sight(seen or nil, index, first, last)
      or now_or_soon
    local card = view.entries[index].kind == 'tool_call'
    if run and card and run.card and run.later == later and last + 2 >= run.first then
      run.first = first
    else
      flush()
      run = { first = first, last = last, later = later, card = card }
    end
    view.frozen[index] = true
  end
  flush()
  if lazy and lazy[1] then
    md.freeze_later(buf, lazy)
  end
end

--- Places the buffer's parser on the live entry (its rows the stream has
--- not finished: see `freeze_tail`). Between turns the parser keeps the
--- last entry (no edits, no parsing); after a restart it starts at the end.
local function place_live(view)
  local md = require('acp.chat.markdown')
  local buf = view.buf
  local live = live_entry(view)
  local row, first
  if live then
    first = view:entry_range(live)
    row = first + (view.live_tail and view.live_tail.offset or 0)
  elseif view.live_row == nil then
    row = api.nvim_buf_line_count(buf)
  end
  if live and view.frozen[live] then
    view.frozen[live], view.live_tail = nil, nil
    row = first
    api.nvim_buf_clear_namespace(buf, md.ns, row, -1)
  end
  if live and md.active(buf) then
    row = freeze_tail(view, live, first, row)
  end
  if row and row ~= view.live_row and md.active(buf) then
    view.live_row = row
    md.live(buf, row)
  end
end

--- The work a burst leaves for after its drain (see `catch_up`): freezing
--- its entries, decorating those out of sight. On the next turn of the
--- event loop, after the screen showed the text.
local function settle(view)
  local due = view.settle
  view.settle = nil
  if not (due and api.nvim_buf_is_valid(view.buf)) then
    return
  end
  view:_guard(nil, function()
    if require('acp.chat.markdown').per_entry() and view.last_index then
      freeze_entries(view, due.freeze)
    end
    require('acp.chat.activity').decorate(view, due.decorate)
  end)
end

--- Leaves a burst's freezing (`freeze`) and the decoration of `decorate`
--- for `settle`.
local function settle_later(view, freeze, decorate)
  local due = view.settle
  if not due then
    due = { freeze = {}, decorate = {} }
    view.settle = due
    -- A timer, not vim.schedule: the screen is updated in between.
    vim.defer_fn(function()
      settle(view)
    end, 1)
  end
  for index in pairs(freeze) do
    due.freeze[index] = true
  end
  for index in pairs(decorate) do
    due.decorate[index] = true
  end
end

--- Finished entries are frozen (`freeze_entries`; in a burst `settle`
--- does it) and the parser placed on the live one.
local function freeze(view, touched, burst)
  local md = require('acp.chat.markdown')
  if not md.per_entry() or view.last_index == nil then
    return
  end
  if not burst then
    freeze_entries(view, touched)
  end
  place_live(view)
end

--- Pauses highlighting during a flood and resumes it afterwards.
local function highlight_policy(view, text_bytes, touched, burst)
  local md = require('acp.chat.markdown')
  local now = vim.uv.now()
  local flood = text_bytes > FLOOD_BYTES and view.state == 'running'
  if flood then
    view.flood_at = now
    if md.active(view.buf) then
      md.stop(view.buf)
      view.highlight_paused = true
    end
  elseif view.highlight_paused and (view.state ~= 'running' or now - (view.flood_at or 0) >= CALM_MS) then
    view.highlight_paused = nil
    local size = api.nvim_buf_get_offset(view.buf, api.nvim_buf_line_count(view.buf))
    if md.per_entry() then
      -- The parser starts on the live entry (or past the end between turns).
      local live = view.state == 'running' and view.last_index
      local row = live and view:entry_range(live) or api.nvim_buf_line_count(view.buf)
      md.start(view.buf, row)
      view.live_row = row
    elseif size <= HIGHLIGHT_MAX_BYTES then
      md.start(view.buf)
    end
  end
  freeze(view, touched or {}, burst)
end

-- One drain -------------------------------------------------------------------------

--- What one drain changed so far, and the new entries that wait to be
--- added together (until an event needs the buffer as the events left
--- it). The text of an entry comes merged already: the core's queue joins
--- each entry's appends while they wait (src/bridge/queue.rs), so a drain
--- brings one append per entry, or the text inside the entry's `added`.
---@class acp.chat.Drain
---@field view acp.ChatView
---@field touched table<integer, true> Entries whose text or card changed.
---@field bytes integer Agent text that arrived.
---@field entry_bytes table<integer, integer> The same by entry (the flood measure).
---@field meta boolean Something the winbar shows changed.
---@field disk_due boolean An edit-like tool call finished or the turn ended: check the disk.
---@field turn_over boolean The turn ended.
---@field fresh? table[] New entries ({ index, kind, lines }), in order.
---@field kinds? table<integer, string> Their kinds, by index.

--- Adds the new entries that wait (with one buffer edit; one by one when
--- one of them fails).
local function flush(d)
  local view = d.view
  if d.fresh then
    local list = d.fresh
    d.fresh, d.kinds = nil, nil
    if not pcall(view._add_many, view, list) then
      -- One of them cannot be shown: add them one by one.
      for _, new in ipairs(list) do
        if not view.entries[new.index] then
          view:_guard(new, view._add, view, new)
        end
      end
    end
  end
end

--- Text for an entry, as the core merged it: one edit (the new entries
--- that wait are added first, in case it is one of them).
--- Agent text for entry `index` (the flood measure).
local function count_text(d, index, n)
  d.bytes = d.bytes + n
  d.entry_bytes[index] = (d.entry_bytes[index] or 0) + n
end

local function appended(d, ev)
  if (d.kinds and d.kinds[ev.index]) ~= 'user' then
    count_text(d, ev.index, #ev.text)
  end
  flush(d)
  d.view:_guard(ev, d.view._append, d.view, ev)
  d.touched[ev.index] = true
end

--- A new entry: kept with this drain's other new entries, added at once.
local function added(d, ev)
  d.fresh, d.kinds = d.fresh or {}, d.kinds or {}
  local new = { type = ev.type, index = ev.index, kind = ev.kind, lines = text.safe_lines(ev.lines) }
  d.fresh[#d.fresh + 1] = new
  d.kinds[ev.index] = ev.kind
  d.touched[ev.index] = true
  if ev.kind ~= 'user' then
    local n = 0
    for _, l in ipairs(new.lines) do
      n = n + #l + 1
    end
    count_text(d, ev.index, n)
  end
end

--- Events that change the view's state, not its buffer, by type.
---@type table<string, fun(d: acp.chat.Drain, ev: table)>
local on_state = {}

function on_state.status(d, ev)
  local view = d.view
  if ev.state == 'disconnected' and view.state ~= 'disconnected' then
    vim.schedule(function()
      require('acp.agents.sessions').offer_after_exit(view)
    end)
  end
  if ev.state == 'running' then
    -- A running turn that reports again (cancelling) is the same turn.
    if view.state ~= 'running' then
      view.turns_started = view.turns_started + 1
      view.turn_at, view.stop_reason = vim.uv.now(), nil
    end
  elseif view.state == 'running' then
    view.turns_ended = view.turns_ended + 1
    view.turn_at = vim.uv.now()
    d.disk_due, d.turn_over = true, true
  end
  view.state = ev.state
  view.status_detail = ev.detail
  d.meta = true
end

--- A tool card's metadata (acp.CardMeta), right after its rendering.
function on_state.card(d, ev)
  local view = d.view
  local card, prev = ev.card, view.cards[ev.index]
  if sync_kinds[card.kind] and finished[card.status] and not (prev and finished[prev.status]) then
    d.disk_due = true
  elseif sync_kinds[card.kind] and (card.status == 'pending' or card.client_state == 'waiting_for_you') then
    -- Announced or asking permission, not run yet: the texts before it
    -- of the files it names (for review of files no buffer holds).
    view:_guard(ev, require('acp.editor.sync').snapshot, view, card)
  end
  view.cards[ev.index] = card
  d.touched[ev.index] = true
end

--- What to colour in an agent notice or a compaction (acp.Event.marks).
function on_state.marks(d, ev)
  d.view.marks[ev.index] = ev.marks
  d.touched[ev.index] = true
end

function on_state.agent_notice(d, ev)
  require('acp.chat.notices').notify(d.view, ev)
end

--- Where a plan's parts are (acp.PlanLayout), right after its rendering.
function on_state.plan(d, ev)
  d.view.plans[ev.index] = ev.plan
  d.touched[ev.index] = true
end

function on_state.turn_ended(d, ev)
  d.view.stop_reason = ev.stop_reason
  if type(ev.usage) == 'table' then
    d.view.info.turn_usage = ev.usage
    d.meta = true
  end
end

function on_state.terminal_output(d, ev)
  require('acp.editor.terminal').append(d.view.thread, ev.id, ev.data)
end

--- The agent's info and capabilities, right before the chat is ready.
function on_state.agent(d, ev)
  local view = d.view
  view.agent_name, view.agent_info = ev.name, ev.info
  view.capabilities = type(ev.capabilities) == 'table' and ev.capabilities or {}
  view.steering = ev.steering == true
end

--- Events that need the buffer as the events so far left it.
local function in_order(d, ev)
  local view = d.view
  flush(d)
  local t = ev.type
  if t == 'replaced' then
    d.touched[ev.index] = true
    if view.live_tail and view.live_tail.index == ev.index then
      -- Its frozen rows go with its text: the parser takes it whole again.
      view.live_tail = nil
      api.nvim_buf_clear_namespace(view.buf, require('acp.chat.markdown').ns, view:entry_range(ev.index), -1)
    end
    view:_replace(ev)
  elseif t == 'permission' then
    require('acp.ask.permission').enqueue(view, ev)
    d.meta = true -- the header's state: waiting for you
  elseif t == 'permission_done' then
    require('acp.ask.permission').done(view, ev.request)
    d.meta = true
  end
end

local function handle(d, ev)
  local t = ev.type
  if t == 'appended' then
    appended(d, ev)
  elseif t == 'added' then
    added(d, ev)
  elseif on_state[t] then
    on_state[t](d, ev)
  elseif info_field[t] then
    -- Session metadata: one typed event per thing (see acp.ThreadEvent in types.lua).
    local key, field = info_field[t][1], info_field[t][2]
    d.view.info[key] = ev[field]
    d.meta = true
  else
    in_order(d, ev)
  end
end

--- Once the batch is in: everything that depends on the whole drain, each
--- step once.
local function catch_up(d, events, follow)
  local view = d.view
  local n = 0
  for _ in pairs(d.touched) do
    n = n + 1
  end
  -- A burst (a hundred tool cards in a frame): the drain decorates what the
  -- screen shows; the rest, and all freezing, is left for `settle`.
  local burst = n > BURST_ENTRIES
  local decorate = d.touched
  if burst then
    local s = sight(view)
    decorate = {}
    local later = {}
    for index in pairs(d.touched) do
      local first, last = view:entry_range(index)
      if first and in_sight(s, index, first, last) then
        decorate[index] = true
      else
        later[index] = true
      end
    end
    settle_later(view, d.touched, later)
  end
  view:_guard(nil, function()
    -- The text the buffer's parser covers (see FLOOD_BYTES).
    local live = view.state == 'running' and view.last_index
    local parsed = require('acp.chat.markdown').per_entry() and (live and d.entry_bytes[live] or 0) or d.bytes
    highlight_policy(view, parsed, d.touched, burst)
    view:_refold(d.touched)
    -- Tool cards and plan: long-card folds, quickfix, follow mode, colours.
    require('acp.chat.activity').after_apply(view, d.touched, decorate)
    -- The running turn's status area (plan, running tool, permissions).
    require('acp.chat.status').update(view)
  end)
  -- Setting 'winbar' redraws the window: only when its text can change.
  if d.meta or not view._winbar_set then
    view._winbar_set = true
    view:_guard(nil, view._update_winbar, view)
  end
  if follow then
    view:scroll_to_end(follow)
  end
  if view.state == 'running' and view.live_row and next(d.touched) then
    -- The redraw that follows finds the live entry parsed (acp.chat.markdown).
    -- Not once the turn ended: the parser's region may then hold all of the
    -- turn's entries (frozen on the next turns of the event loop).
    view:_guard(nil, require('acp.chat.markdown').parse_live, view.buf, view.live_row)
  end
  if #view.agent_waiters > 0 and view:_agent_settled() then
    -- Outside the drain: the callbacks may send a prompt.
    vim.schedule(function()
      view:_release_agent_waiters()
    end)
  end
  if d.disk_due then
    require('acp.editor.sync').after_apply(view, d.turn_over)
  end
  if #view.queue > 0 then
    local queue = require('acp.prompt.queue')
    view:_guard(nil, queue.render, view)
    if view.state == 'idle' then
      -- Outside the drain: sending re-enters the core.
      vim.schedule(function()
        queue.flush(view)
      end)
    end
  end
  -- User autocmds (acp.events): read now, fired after this drain.
  view:_guard(nil, require('acp.chat.announce').observe, view, events)
  -- Markdown renderers re-render the transcript (throttled).
  view:_guard(nil, require('acp.chat.renderers').after_apply, view)
  -- Waiting for the user, done while out of sight: tab labels, status().
  view:_guard(nil, require('acp.chat.attention').refresh, view, events)
end

--- Applies a run of events for the view's thread (one drain's worth).
--- The core merged the appends to each entry while they waited, so the
--- buffer gets one edit per message per drain; the windows follow the end
--- once. Each event is applied on its own: one that fails is logged and
--- shown as an error line, and the rest still applies.
---@param view acp.ChatView
---@param events acp.Event[]
function M.apply(view, events)
  local buf = view.buf
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  local follow = view:_following()
  ---@type acp.chat.Drain
  local d = { view = view, touched = {}, bytes = 0, entry_bytes = {}, meta = false, disk_due = false, turn_over = false }
  vim.bo[buf].modifiable = true
  for _, ev in ipairs(events) do
    view:_guard(ev, handle, d, ev)
  end
  view:_guard(nil, flush, d)
  vim.bo[buf].modifiable = false
  catch_up(d, events, follow)
end

return M
