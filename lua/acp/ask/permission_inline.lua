--- A permission request shown inline at its card: virtual lines under the
--- card's last row in the transcript, for when the float cannot be placed
--- without covering the card or the turn's text above it (see
--- permission_place.lua). They say what the float says, shorter: who asks,
--- the kind and title, the command or the edit ("d: review" in the float only),
--- the options with their kinds, and the chords that answer, dim until the
--- request has been in view for `permissions.grace_ms`, then lit. The
--- chords answer it exactly as they answer the float; `<C-a>`,
--- `:AcpPermission` and <CR> on the card open the float over it.
--- When the request appears (or the chat follows its end) the transcript
--- scrolls so that the card's header and the request are in view; a chat
--- the user scrolled away stays where it is (the chords then bring the
--- request into view first). Answering, cancelling, a withdrawal, another
--- request, the chat being hidden or resized remove or redraw the lines,
--- and a resize that leaves room for the float switches to it.
local api = vim.api
local config = require('acp.config')
local text = require('acp.util.text')

local M = {}

--- The permission module (acp.ask.permission, which sets this on load).
M.p = nil

local ns = api.nvim_create_namespace('acp_permission_inline')

api.nvim_set_hl(0, 'AcpPermissionInline', { link = 'NormalFloat', default = true })
api.nvim_set_hl(0, 'AcpPermissionInlineBar', { link = 'FloatBorder', default = true })

--- What is shown: { item, buf, row, lines (of chunks), lit, width }.
M.state = nil

local BAR = '▎ '

--- The request's lines for a text area `width` cells wide (each cut to
--- it), and the set of rows (1-based) to highlight as warnings. Built
--- from the float's lines (permission.lua M.lines): without blank rows,
--- the float's own key hints or a location the edit line names again.
function M.lines(item, width)
  local p = M.p
  local ok, lines, warn = pcall(p.lines, item, width)
  if not ok then
    lines, warn = {}, {}
    for _, l in ipairs(p.raw_lines(item)) do
      lines[#lines + 1] = (text.fit(l, width))
    end
    return lines, {}
  end
  local warned = {}
  for _, r in ipairs(warn or {}) do
    warned[r + 1] = true
  end
  -- The float's layout: who asks, '', kind and title, the body, '', the
  -- options, '', [K], q.
  local last = #lines - 1 -- the q row goes
  if lines[last] == '  K  show all, as the agent sent it' then
    last = last - 1
  end
  last = last - 1 -- the blank row before the hints
  local first_opt = last
  if lines[last] == '' then
    first_opt = last + 1 -- no options
  end
  while first_opt > 4 and first_opt <= last and lines[first_opt - 1] ~= '' do
    first_opt = first_opt - 1
  end
  local out, warn_out = {}, {}
  local function add(l, w)
    out[#out + 1] = l
    warn_out[#out] = w or nil
  end
  local who, title = lines[1], lines[3] or ''
  if api.nvim_strwidth(who .. ' · ' .. title) <= width then
    add(who .. ' · ' .. title)
  else
    add(who)
    add(title)
  end
  local body = {}
  for i = 4, first_opt - 2 do
    body[#body + 1] = i
  end
  local function edited(path)
    for _, i in ipairs(body) do
      local l = lines[i]
      if vim.startswith(l, '  edit ' .. path .. ': +') or vim.startswith(l, '  new file ' .. path .. ': +') then
        return true
      end
    end
  end
  for _, i in ipairs(body) do
    local l = lines[i]
    if l ~= '' and not (l:match('^  [^ ]') and edited(l:sub(3))) then
      -- `d` reviews in the float only (here the transcript's keys apply;
      -- <C-a> opens the float): the hint would promise a key that does nothing.
      add((l:gsub('%s+%(d: review%)$', '')), warned[i])
    end
  end
  local prefixes = {}
  for _, keys in ipairs(p.option_keys(item.payload.options or {})) do
    prefixes[('  %s  '):format(table.concat(keys, '/'))] = true
  end
  for i = first_opt, last do
    local l = lines[i]
    local prefix = l:match('^  %S+  ')
    if prefix and prefixes[prefix] and not warned[i] then
      l = '  · ' .. l:sub(#prefix + 1)
    end
    add(l, warned[i])
  end
  return out, warn_out
end

--- The footer: the chords the request offers and how to open the float.
function M.footer(item)
  local chords = require('acp.ask.permission_keys').footer(item)
  local key = config.options.permissions.focus_key
  if chords then
    return chords .. ' · ' .. (key and (key .. ' more') or ':AcpPermission more')
  end
  return (key and (key .. ' in the chat or ') or '') .. ':AcpPermission to answer'
end

--- The chat window and its text area for `item` in this tab, or nil.
local function window(item)
  local view = item.view
  local win = view and view.win
  if not (win and api.nvim_win_is_valid(win) and api.nvim_win_get_tabpage(win) == api.nvim_get_current_tabpage()
    and api.nvim_win_get_buf(win) == view.buf) then
    return nil
  end
  return win
end

--- Whether `item` is the request shown inline.
function M.shows(item)
  return M.state ~= nil and M.state.item == item
end

--- Removes the lines (nothing shown inline any more).
function M.clear()
  local s = M.state
  M.state = nil
  if s and api.nvim_buf_is_valid(s.buf) then
    api.nvim_buf_clear_namespace(s.buf, ns, 0, -1)
  end
end

--- Rows the request takes under its card (0 when not shown).
function M.height()
  return M.state and #M.state.lines or 0
end

--- Rows the lines of `item` take under the last line of its chat (0 when
--- its card is not the last entry): a chat that follows its end keeps them
--- in view (Neovim counts lines below the last one in no line's height).
function M.rows_below_end(item)
  local s = M.state
  if not (s and s.item == item and api.nvim_buf_is_valid(s.buf)) then
    return 0
  end
  return s.row == api.nvim_buf_line_count(s.buf) - 1 and #s.lines or 0
end

--- Sets (or updates) the virtual lines of `item` under its card's last row
--- `row` (0-based), `width` cells wide; `lit`: the chords answer.
local function set_mark(item, buf, row, width, lit)
  local s = M.state
  if s and s.item == item and s.buf == buf and s.row == row and s.width == width and s.lit == lit then
    return
  end
  local lines, warn = M.lines(item, width)
  local virt = {}
  for i, l in ipairs(lines) do
    virt[#virt + 1] = { { BAR, 'AcpPermissionInlineBar' }, { l, warn[i] and 'AcpPermissionMismatch' or 'AcpPermissionInline' } }
  end
  local footer = M.footer(item)
  if api.nvim_strwidth(footer) > width then
    footer = text.take(footer, math.max(1, width - 1)) .. '…'
  end
  virt[#virt + 1] = { { BAR, 'AcpPermissionInlineBar' }, { footer, lit and 'AcpPermissionArmed' or 'AcpPermissionWaiting' } }
  if s and s.buf ~= buf and api.nvim_buf_is_valid(s.buf) then
    api.nvim_buf_clear_namespace(s.buf, ns, 0, -1)
  end
  api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  api.nvim_buf_set_extmark(buf, ns, row, 0, { virt_lines = virt })
  M.state = { item = item, buf = buf, row = row, width = width, lit = lit, lines = virt, top = s and s.item == item and s.top or nil }
end

--- Whether the request (its first row to its footer) is on screen in the
--- chat's text rows above the status area (only its first row when it is
--- taller than those rows).
local function on_screen(item, win)
  local view = item.view
  local _, last = require('acp.ask.permission_place').card_rows(item)
  if not last then
    return false
  end
  local tail = vim.fn.screenpos(win, last + 1, 1).row
  if tail <= 0 then
    return false
  end
  local info = vim.fn.getwininfo(win)[1]
  local text_top = info.winrow + (info.winbar or 0)
  local avail = api.nvim_win_get_height(win) - view:status_height()
  local bottom = text_top + avail - 1
  local rows = api.nvim_win_text_height(win, { start_row = last, end_row = last }).all + M.height()
  return tail + rows - 1 <= bottom or M.height() >= avail
end

--- The request came into view (or went out of it): the chords' wait
--- starts from now, and the footer lights up once it is over.
local function track(item, win)
  local p = M.p
  if not (p.shown == item and M.shows(item)) then
    return
  end
  local visible = win ~= nil and on_screen(item, win)
  if not visible then
    p.visible_since = nil
  elseif not p.visible_since then
    p.visible_since = p.now()
    local since = p.visible_since
    vim.defer_fn(function()
      if p.visible_since == since and M.shows(item) then
        M.refresh(item)
      end
    end, math.max(0, config.options.permissions.grace_ms) + 10)
  end
end

--- Draws `item` inline (replacing whatever was shown inline) and, with
--- `scroll`, scrolls its chat so that the card's header and the request
--- are in view (as many of the turn's rows above as fit). Returns false
--- when the request has no card in a chat window of this tab (nothing is
--- changed then); `before` runs first otherwise.
function M.show(item, scroll, before)
  local place = require('acp.ask.permission_place')
  local first, last = place.card_rows(item)
  local win = window(item)
  if not (first and win) then
    return false
  end
  if before then
    before()
  end
  local p = M.p
  if M.state and M.state.item ~= item then
    M.clear()
  end
  local info = vim.fn.getwininfo(win)[1]
  local width = math.max(10, info.width - info.textoff - api.nvim_strwidth(BAR))
  set_mark(item, item.view.buf, last, width, p.visible_since ~= nil and p.chords_ready())
  if scroll then
    M.scroll(item, win, last)
  end
  track(item, win)
  return true
end

--- Scrolls `win` so that the card of `item` (its last row `last`) and the
--- request end above the status area, with as many rows above as fit.
function M.scroll(item, win, last)
  local avail = api.nvim_win_get_height(win) - item.view:status_height()
  local top = require('acp.ask.permission_place').top_for(win, last + 1, math.max(1, avail - M.height()))
  api.nvim_win_call(win, function()
    vim.fn.winrestview({ topline = top })
  end)
  M.state.top = top
end

--- Brings the request up to date: its card moved or changed, the chat
--- scrolled, was hidden or resized, the wait is over.
function M.refresh(item)
  local s = M.state
  if not (s and s.item == item) then
    return
  end
  local win = window(item)
  local _, last = require('acp.ask.permission_place').card_rows(item)
  if not last then
    M.clear()
    return
  end
  if win then
    local p = M.p
    local info = vim.fn.getwininfo(win)[1]
    local width = math.max(10, info.width - info.textoff - api.nvim_strwidth(BAR))
    set_mark(item, item.view.buf, last, width, p.visible_since ~= nil and p.chords_ready())
    if s.top and s.top == vim.fn.getwininfo(win)[1].topline then
      -- Scrolled here for the request and not by the user since: it stays
      -- in view as the status area changes height.
      M.scroll(item, win, last)
    end
  end
  track(item, win)
end

--- The chat scrolled or changed: the lines follow their card; after a
--- resize (`resized`) that leaves room for the float, the float shows
--- the request instead.
function M.reposition(item, resized)
  if resized and window(item) then
    local p = M.p
    local ok, lines = pcall(p.lines, item)
    if ok then
      local width, height = p.float_size(item, lines)
      if not p.placement(item, width, height, false).inline then
        return p.render()
      end
    end
  end
  M.refresh(item)
end

--- The chat's view while `item` is shown inline (before the float the
--- user asked for covers it), or nil; restore_view() goes back to it.
function M.save_view(item)
  local win = M.shows(item) and window(item)
  return win and { win = win, view = api.nvim_win_call(win, vim.fn.winsaveview) } or nil
end

function M.restore_view(saved)
  if saved and api.nvim_win_is_valid(saved.win) then
    api.nvim_win_call(saved.win, function()
      vim.fn.winrestview(saved.view)
    end)
  end
end

--- Whether `item` is shown inline and in view in this tab.
function M.in_view(item)
  local win = M.shows(item) and window(item)
  return win and on_screen(item, win) or false
end

--- Removes the lines for `rows` of the card (to measure the chat without
--- them); returns a function that puts them back.
function M.lift()
  local s = M.state
  if not (s and api.nvim_buf_is_valid(s.buf)) then
    return function() end
  end
  api.nvim_buf_clear_namespace(s.buf, ns, 0, -1)
  return function()
    if M.state == s and api.nvim_buf_is_valid(s.buf) then
      api.nvim_buf_set_extmark(s.buf, ns, s.row, 0, { virt_lines = s.lines })
    end
  end
end


return M
