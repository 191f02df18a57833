--- The input's prompt history, shared by every chat of this Neovim (like a
--- shell's): <Up> on the first line and <Down> on the last one, or
--- `chat.keys.history_prev` / `history_next`, walk it; the text being
--- written is kept and comes back past the newest prompt.
local api = vim.api

local M = {}

--- Sent prompts, oldest first.
M.items = {}

--- Per input buffer: the position in `items` (nil: not browsing) and the
--- text written before browsing.
local state = {}

function M.add(text)
  if type(text) ~= 'string' or vim.trim(text) == '' or M.items[#M.items] == text then
    return
  end
  M.items[#M.items + 1] = text
  local max = require('acp.config').options.chat.history_size
  while #M.items > math.max(0, max) do
    table.remove(M.items, 1)
  end
end

--- Forgets where `buf` was in the history (after a send).
function M.reset(buf)
  state[buf] = nil
end

--- Shows the prompt `delta` steps older (-1) or newer (+1) in input
--- `buf`. Returns false at either end.
function M.move(buf, delta)
  local n = #M.items
  local st = state[buf] or {}
  local pos = st.pos or (n + 1)
  local new = pos + delta
  if n == 0 or new < 1 or new > n + 1 then
    return false
  end
  if pos == n + 1 then
    st.draft = api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  st.pos = new
  state[buf] = st
  local lines = new == n + 1 and (st.draft or { '' }) or vim.split(M.items[new], '\n', { plain = true })
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  local win = api.nvim_get_current_win()
  if api.nvim_win_get_buf(win) == buf then
    local last = #lines
    api.nvim_win_set_cursor(win, { last, #lines[last] })
  end
  return true
end

local function feed(key)
  api.nvim_feedkeys(api.nvim_replace_termcodes(key, true, false, true), 'n', false)
end

--- Maps the history keys of input `buf`.
function M.attach(buf)
  local keys = require('acp.config').options.chat.keys
  local function map(lhs, delta, at_edge)
    vim.keymap.set({ 'n', 'i' }, lhs, function()
      local row = api.nvim_win_get_cursor(0)[1]
      local edge = not at_edge or (delta < 0 and row == 1) or (delta > 0 and row == api.nvim_buf_line_count(buf))
      if not (edge and M.move(buf, delta)) and at_edge then
        -- Inside a multi-line prompt, the arrows move as usual.
        feed(lhs)
      end
    end, { buffer = buf, silent = true, desc = delta < 0 and 'Previous prompt' or 'Next prompt' })
  end
  if keys.history_prev then
    map(keys.history_prev, -1, false)
    map('<Up>', -1, true)
  end
  if keys.history_next then
    map(keys.history_next, 1, false)
    map('<Down>', 1, true)
  end
end

return M
