--- The chords that answer a permission request from the chat's own windows
--- (input and transcript, normal and insert mode): allow once, allow
--- always, reject once (`chat.keys.permission_*`), the float's footer that
--- lists them, and the way back after the float (permission_chord.lua
--- handles a chord). A chord answers only
--- * the request the float (or the inline request) shows, of this chat;
--- * once that request has been in view for `permissions.grace_ms` (a
---   request that replaces the shown one starts the wait again), so keys
---   typed for something else never answer what just appeared;
--- * with an option of exactly its kind: when the request has none, the
---   chord says so and answers nothing (it never picks a wider option).
--- The chord runs where it is typed: the cursor, the window and the mode
--- stay as they were (Insert stays Insert). Keys in other windows are not
--- mapped: nothing typed in a file window answers.
local api = vim.api
local config = require('acp.config')

local M = {}

--- The chords in footer order: the `chat.keys` entry, the option kind it
--- answers, and how the footer names it.
M.chords = {
  { key = 'permission_allow', kind = 'allow_once', label = 'allow once' },
  { key = 'permission_always', kind = 'allow_always', label = 'always' },
  { key = 'permission_reject', kind = 'reject_once', label = 'reject' },
}

--- How a chord's kind reads in messages.
M.kind_names = { allow_once = 'allow once', allow_always = 'allow always', reject_once = 'reject once' }

--- The index of the first option of `kind` in `options`, or nil.
function M.option_of(options, kind)
  for i, opt in ipairs(options or {}) do
    if opt.kind == kind then
      return i
    end
  end
end

--- The footer text for `item`: the configured chords whose kind the
--- request offers ("<M-y> allow once · <M-n> reject"), or nil when none.
function M.footer(item)
  local keys, parts = config.options.chat.keys, {}
  for _, c in ipairs(M.chords) do
    local lhs = keys[c.key]
    if lhs and (not item or M.option_of(item.payload.options, c.kind)) then
      parts[#parts + 1] = lhs .. ' ' .. c.label
    end
  end
  return #parts > 0 and table.concat(parts, ' · ') or nil
end

--- The current window and mode, to return to after answering in the float.
function M.origin()
  local win = api.nvim_get_current_win()
  return { win = win, insert = api.nvim_get_mode().mode:sub(1, 1) == 'i', cursor = api.nvim_win_get_cursor(win) }
end

--- Goes back to `origin` (after the float it left closed): its window, its
--- cursor, and Insert mode when it was in Insert mode.
function M.restore(origin)
  if not (origin and api.nvim_win_is_valid(origin.win)) then
    return
  end
  api.nvim_set_current_win(origin.win)
  local buf = api.nvim_win_get_buf(origin.win)
  local row = math.min(origin.cursor[1], api.nvim_buf_line_count(buf))
  local line = api.nvim_buf_get_lines(buf, row - 1, row, false)[1] or ''
  pcall(api.nvim_win_set_cursor, origin.win, { row, origin.cursor[2] })
  if origin.insert then
    vim.cmd(origin.cursor[2] >= #line and 'startinsert!' or 'startinsert')
  end
end

return M
