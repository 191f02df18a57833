--- The live status area of a running turn: a small float pinned to the
--- bottom of the transcript window, always visible whatever the scroll
--- position. It lists the queued messages (acp.prompt.queue) on top, then
--- shows the running tool and how long it runs, the turn's
--- plan as its progress and current step (the plan itself is rendered
--- once, in the transcript) and the permissions that wait for the user.
--- It closes when the turn ends. Windows that follow the output keep the
--- last line above it (and above a permission float pinned at the bottom).
local api = vim.api
local text = require('acp.util.text')

local M = {}

api.nvim_set_hl(0, 'AcpStatusArea', { link = 'NormalFloat', default = true })
api.nvim_set_hl(0, 'AcpStatusAreaBorder', { link = 'FloatBorder', default = true })

--- Per view: { win, buf, timer, turn, plan, seen = { [index] = uv.now() },
--- listed (the area lists the queue) }.
local areas = setmetatable({}, { __mode = 'k' })

local function area_of(view)
  local a = areas[view]
  if not a then
    a = { seen = {} }
    areas[view] = a
  end
  return a
end

local function elapsed(ms)
  local s = math.floor(ms / 1000)
  if s < 60 then
    return ('%ds'):format(s)
  end
  return ('%dm%02ds'):format(math.floor(s / 60), s % 60)
end

local running_status = { in_progress = true, pending = true }

--- The newest running card of the turn: its index and card.
local function running_card(view, a)
  local best
  for index, card in pairs(view.cards) do
    if index >= (a.turn_first or 0) and running_status[card.status] and card.client_state == nil then
      if not best or index > best then
        best = index
      end
      a.seen[index] = a.seen[index] or vim.uv.now()
    end
  end
  return best, best and view.cards[best]
end

--- The plan's progress and its current step, on one line (the whole plan
--- is in the transcript, rendered once).
local function plan_line(view, a)
  if not a.plan then
    return nil
  end
  local ok, e = pcall(require('acp.core').entry, view.thread, a.plan)
  local items = ok and type(e) == 'table' and type(e.items) == 'table' and e.items or nil
  if not items or #items == 0 then
    return nil
  end
  local done, current = 0, nil
  for _, item in ipairs(items) do
    if item.status == 'completed' then
      done = done + 1
    elseif item.status == 'in_progress' and not current then
      current = item
    end
  end
  if not current then
    for _, item in ipairs(items) do
      if item.status ~= 'completed' then
        current = item
        break
      end
    end
  end
  local line = ('plan · %d/%d done'):format(done, #items)
  if current then
    line = line .. ' · ' .. (current.status == 'in_progress' and 'now: ' or 'next: ') .. text.line(current.content, '?')
  end
  return line
end

--- Pending permission requests of this view: what waits, then the chord
--- that answers and the key that opens the request ("<M-y> allow · <C-a>
--- more"), the title cut so that these fit in `width` cells.
local function permissions(view, width)
  local out = {}
  local key = require('acp.config').options.permissions.focus_key or ':AcpPermission'
  for _, item in ipairs(require('acp.ask.permission').queue) do
    if item.view == view then
      local title = text.line(item.payload.title) or text.line(item.payload.tool_call_id, 'a tool call')
      local chord = (require('acp.ask.permission_keys').footer(item) or ''):match('^(.-) · ') or require('acp.ask.permission_keys').footer(item)
      chord = chord and chord:gsub(' once$', '')
      local hint = chord and (chord .. ' · ' .. key .. ' more') or (key .. ' answers')
      local room = (width or math.huge) - api.nvim_strwidth(('waiting for you ·  · %s'):format(hint))
      if api.nvim_strwidth(title) > room then
        title = text.take(title, math.max(room - 1, 1)) .. '…'
      end
      out[#out + 1] = ('waiting for you · %s · %s'):format(title, hint)
    end
  end
  return out
end

--- Queued messages listed at most (the rest are counted on the last row).
M.max_queued = 5

--- The area's lines, with a highlight group per line: the queued messages
--- first (one line each, cut to `width` cells), then the turn's state.
function M.lines(view, width)
  local a = area_of(view)
  local now = vim.uv.now()
  local out, groups = {}, {}
  local function add(l, g)
    out[#out + 1] = l
    groups[#groups + 1] = g
  end
  local queued = require('acp.prompt.queue').summary(view)
  if #queued > M.max_queued then
    local more = #queued - M.max_queued + 1
    queued = vim.list_slice(queued, 1, M.max_queued - 1)
    queued[#queued + 1] = ('⏳ %d more · :AcpQueue'):format(more)
  end
  for _, l in ipairs(queued) do
    l = text.visible(l)
    if width and vim.api.nvim_strwidth(l) > width then
      l = text.take(l, math.max(width - 1, 1)) .. '…'
    end
    add(l, 'AcpQueued')
  end
  -- The state's word is the header's (acp.chat.header): both say
  -- `cancelling…` once the user cancels. A running tool names itself.
  local word = require('acp.chat.header').state_word(view)
  local index, card = running_card(view, a)
  if card then
    local title = text.line(card.title ~= '' and card.title or card.id, 'tool')
    word = (word == 'working…' or word == 'waiting for you') and 'running' or word
    add(('%s · %s · %s'):format(word, title, elapsed(now - (a.seen[index] or now))), 'AcpStatusRunning')
  elseif word ~= 'waiting for you' then
    -- (Waiting for the user: the permission lines below say what for.)
    add(('%s · %s'):format(word, elapsed(now - (a.started or now))), 'AcpStatusRunning')
  end
  local plan = plan_line(view, a)
  if plan then
    add(plan, 'AcpStatusArea')
  end
  for _, l in ipairs(permissions(view, width)) do
    add(l, 'AcpStatusWaiting')
  end
  return out, groups
end

local ns = api.nvim_create_namespace('acp_status_area')

local function close(a)
  if a.timer then
    a.timer:stop()
    a.timer:close()
    a.timer = nil
  end
  if a.win and api.nvim_win_is_valid(a.win) then
    api.nvim_win_close(a.win, true)
  end
  a.win = nil
end

--- Rows the area covers at the bottom of the transcript window (0 when
--- it is not shown).
function M.height(view)
  local a = areas[view]
  if not (a and a.win and api.nvim_win_is_valid(a.win)) then
    return 0
  end
  return api.nvim_win_get_height(a.win) + 1
end

--- The float's window, when shown (for tests).
function M.win(view)
  local a = areas[view]
  return a and a.win and api.nvim_win_is_valid(a.win) and a.win or nil
end

local function draw(view, a)
  local lines, groups = M.lines(view, api.nvim_win_get_width(view.win))
  if not (a.buf and api.nvim_buf_is_valid(a.buf)) then
    a.buf = api.nvim_create_buf(false, true)
    vim.bo[a.buf].bufhidden = 'wipe'
  end
  api.nvim_buf_set_lines(a.buf, 0, -1, false, lines)
  api.nvim_buf_clear_namespace(a.buf, ns, 0, -1)
  for i, g in ipairs(groups) do
    api.nvim_buf_set_extmark(a.buf, ns, i - 1, 0, { end_row = i - 1, end_col = #lines[i], hl_group = g })
  end
  local win = view.win
  local height = math.min(#lines, math.max(1, api.nvim_win_get_height(win) - 3))
  local cfg = {
    relative = 'win',
    win = win,
    anchor = 'SW',
    row = api.nvim_win_get_height(win),
    col = 0,
    width = math.max(1, api.nvim_win_get_width(win)),
    height = height,
    style = 'minimal',
    focusable = false,
    zindex = 40,
    border = { '', '─', '', '', '', '', '', '' },
  }
  if a.win and api.nvim_win_is_valid(a.win) then
    api.nvim_win_set_config(a.win, cfg)
  else
    cfg.noautocmd = true
    a.win = api.nvim_open_win(a.buf, false, cfg)
    vim.wo[a.win].winhighlight = 'NormalFloat:AcpStatusArea,FloatBorder:AcpStatusAreaBorder'
    vim.wo[a.win].wrap = false
  end
end

local function update(view)
  local a = area_of(view)
  if view.state ~= 'running' or not view:is_visible() then
    close(a)
    if view.state ~= 'running' then
      a.plan, a.turn, a.seen = nil, nil, {}
    end
    return
  end
  if a.turn ~= view.turns_started then
    -- A new turn: its plan and cards only.
    a.turn, a.plan, a.seen, a.started = view.turns_started, nil, {}, vim.uv.now()
    a.turn_first = (view.last_index or -1) + 1
    for index = view.last_index or -1, 0, -1 do
      local e = view.entries[index]
      if e and e.kind == 'user' then
        a.turn_first = index
        break
      end
    end
  end
  for index = view.last_index or -1, a.turn_first, -1 do
    local e = view.entries[index]
    if e and e.kind == 'plan' then
      a.plan = index
      break
    end
  end
  draw(view, a)
  if not a.timer then
    a.timer = assert(vim.uv.new_timer())
    a.timer:start(1000, 1000, vim.schedule_wrap(function()
      if areas[view] == a and a.timer then
        pcall(M.update, view)
      end
    end))
  end
end

--- Brings the area up to date with `view` (after each drain, and every
--- second while the turn runs, for the elapsed times).
function M.update(view)
  update(view)
  -- The queue moves between the area and the transcript's end as the
  -- area opens and closes.
  local a = area_of(view)
  local shown = M.win(view) ~= nil
  if shown ~= (a.listed or false) then
    a.listed = shown
    require('acp.prompt.queue').render(view)
  end
  -- The permission float keeps its place next to its card.
  require('acp.ask.permission').reposition(view)
end

--- The queue changed: the area, when shown, lists it again. Returns
--- whether it is shown.
function M.queue_changed(view)
  local a = area_of(view)
  a.listed = M.win(view) ~= nil
  if a.listed then
    draw(view, a)
    -- Taller or shorter now: a window that follows the output keeps its
    -- last line above the area.
    if vim.tbl_contains(view:_following() or {}, view.win) then
      M.keep_end_visible(view, view.win)
    end
  end
  return a.listed
end

--- For a window that follows the output: scrolls so that the last line
--- sits above the area instead of under it, and, once the area (or a
--- float at the bottom) is gone, back down so that the window is filled
--- to its last row again (no empty rows under the end). A permission
--- float under its card keeps the rows the chat left it.
function M.keep_end_visible(view, win)
  local perm = require('acp.ask.permission')
  local covered = M.height(view) + perm.bottom_rows(view)
  local under_card = perm.shown ~= nil and perm.shown.view == view and perm.win ~= nil
    and api.nvim_win_is_valid(perm.win) and not perm.at_bottom
  if (covered == 0 and under_card) or not api.nvim_win_is_valid(win) then
    return
  end
  api.nvim_win_call(win, function()
    -- Text rows (nvim_win_get_height counts the winbar too); the area and
    -- a float at the bottom are placed from nvim_win_get_height, so they
    -- reach as many rows below the text as the winbar takes.
    local rows = vim.fn.getwininfo(win)[1].height
    local budget = rows - math.max(0, covered - (api.nvim_win_get_height(win) - rows))
    local row = api.nvim_buf_line_count(view.buf)
    local used = 0
    local top = row
    while row >= 1 do
      local fold = vim.fn.foldclosed(row)
      local h = fold ~= -1 and 1 or api.nvim_win_text_height(win, { start_row = row - 1, end_row = row - 1 }).all
      if used + h > budget then
        break
      end
      used = used + h
      top = fold ~= -1 and fold or row
      row = top - 1
    end
    local view_now = vim.fn.winsaveview()
    if top > view_now.topline or (top < view_now.topline and not under_card) then
      M.scroll_to_top(win, view_now.topline, top)
    end
  end)
end

--- In window `win` (current): makes `top` the first line shown, from
--- `topline`. It scrolls with CTRL-E/CTRL-Y by the lines in between (a
--- closed fold counts as one), so Neovim redraws only the lines that come
--- into view: `winrestview()` marks the whole window for redrawing (the
--- Tree-sitter highlighter then runs on every visible line), which, done
--- on every frame of a stream, was most of a frame's cost.
function M.scroll_to_top(win, topline, top)
  if vim.wo[win].smoothscroll or vim.wo[win].diff then
    -- CTRL-E scrolls by screen lines here, or filler lines count.
    vim.fn.winrestview({ topline = top })
    return
  end
  local from, to = math.min(topline, top), math.max(topline, top)
  local n, row = 0, from
  while row < to do
    local fold_end = vim.fn.foldclosedend(row)
    row = (fold_end ~= -1 and fold_end or row) + 1
    n = n + 1
  end
  if n > 0 then
    vim.cmd(('normal! %d%s'):format(n, top > topline and '\5' or '\25'))
  end
  if vim.fn.line('w0') ~= top then
    -- A fold or a wrap the count did not foresee.
    vim.fn.winrestview({ topline = top })
  end
end

return M
