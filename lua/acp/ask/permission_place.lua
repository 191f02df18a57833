--- Where the permission float goes, decided by geometry so that it never
--- hides what it asks about: the request's card and the rows of the turn
--- that led to it (the agent's explanation, the turn's earlier cards).
--- 1. Below the card, in the rows the chat leaves empty under it.
--- 2. When a request is first shown and the card and the float fit the
---    chat together: the transcript scrolls so that the card ends just
---    above the float (the turn's rows above it fill what is left, back
---    to the user's prompt or as many as fit), and the float takes the
---    rows below. Later moves (the user scrolls, output arrives) never
---    scroll the chat back, unless it follows its end (its cursor on the
---    last line), as it does while the agent works.
--- 3. Beside the chat window (over the code), level with the card.
--- 4. Else the request is shown inline at its card (permission_inline.lua:
---    `inline = true`); a float the user asked for (`<C-a>`) goes at the
---    bottom of the chat, above its status area, and a chat that follows
---    its end scrolls the end above the float.
--- Without a chat window in this tab: the middle of the editor.
local api = vim.api

local M = {}

--- Rows (first, last; 0-based) of the card of `item` in its chat.
function M.card_rows(item)
  local view = item.view
  local id = item.payload.tool_call_id
  if not (view and view.cards and id ~= nil) then
    return nil
  end
  for index = view.last_index or -1, 0, -1 do
    local card = view.cards[index]
    if card and card.id == id then
      return view:entry_range(index)
    end
  end
end

--- Screen rows of buffer line `row` (1-based) in `win`: 1 for a closed
--- fold, and the first line of that fold.
local function line_rows(win, row)
  local fold = api.nvim_win_call(win, function()
    return vim.fn.foldclosed(row)
  end)
  if fold ~= -1 then
    return 1, fold
  end
  return api.nvim_win_text_height(win, { start_row = row - 1, end_row = row - 1 }).all, row
end

--- The topline that puts buffer line `last` (1-based) at the end of
--- `budget` rows of `win`, with as many lines above it as fit.
function M.top_for(win, last, budget)
  local row, used, top = last, 0, last
  while row >= 1 do
    local h, start = line_rows(win, row)
    if used + h > budget then
      break
    end
    used, top = used + h, start
    row = start - 1
  end
  return top
end

--- The float's place for `item` (`width` and `height`: its text size; a
--- border adds 2 to each). `scroll`: whether the chat may scroll to make
--- room under the card (when the request is first shown; a chat that
--- follows its end always may). The result is a
--- window config, with `bottom = true` for the bottom of the chat,
--- `inline = true` when the request should rather be shown at its card,
--- and `topline` for the scroll it needs (measured without the request's
--- inline lines: permission.lua lifts them).
function M.placement(item, width, height, scroll)
  local view = item.view
  local win = view and view.win
  if not (win and api.nvim_win_is_valid(win) and api.nvim_win_get_tabpage(win) == api.nvim_get_current_tabpage()) then
    return {
      relative = 'editor',
      row = math.max(0, math.floor((vim.o.lines - height) / 2)),
      col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    }
  end
  local wh, ww = api.nvim_win_get_height(win), api.nvim_win_get_width(win)
  local avail = wh - view:status_height() -- text rows above the status area
  local need = height + 2
  local col = math.max(0, ww - width - 2)
  local first, last = M.card_rows(item)
  if first then
    local info = vim.fn.getwininfo(win)[1]
    local text_top = info.winrow + (info.winbar or 0) -- screen row of the first text row
    local bottom = text_top + avail - 1 -- last row the float may use
    local rows = api.nvim_win_text_height(win, { start_row = last, end_row = last }).all
    local below = { relative = 'win', win = win, bufpos = { last, 0 }, row = rows, col = col }
    -- 1. Below the card as the chat shows it.
    local tail = vim.fn.screenpos(win, last + 1, 1).row
    if tail > 0 and bottom - (tail + rows - 1) >= need then
      return below
    end
    -- 2. The chat scrolls the card up to just above the float.
    local card = api.nvim_win_text_height(win, { start_row = first, end_row = last }).all
    local follows = api.nvim_win_get_cursor(win)[1] >= api.nvim_buf_line_count(view.buf)
    if (scroll or follows) and card + need <= avail then
      below.topline = M.top_for(win, last + 1, avail - need)
      return below
    end
    -- 3. Beside the chat window, level with the card.
    local head = vim.fn.screenpos(win, first + 1, 1).row
    local pos = api.nvim_win_get_position(win)
    local left, right = pos[2], vim.o.columns - pos[2] - ww
    local row = math.max(0, (head > 0 and head - 1 or pos[1]))
    row = math.min(row, math.max(0, vim.o.lines - height - 3))
    if left >= width + 2 then
      return { relative = 'editor', row = row, col = pos[2] - width - 2 }
    elseif right >= width + 2 then
      return { relative = 'editor', row = row, col = pos[2] + ww }
    end
  end
  -- 4. Inline at the card; asked for, or without a card: at the bottom, and
  -- the chat scrolls its end (the card) above the float.
  return { relative = 'win', win = win, row = math.max(0, avail - height - 2), col = col, bottom = true, inline = first ~= nil }
end

return M
