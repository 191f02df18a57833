--- Follow mode (opt-in, `follow = true`): as the agent reads or edits, a
--- non-chat window of the chat's tab shows that file at that line. Updates
--- are debounced, and the window the user is in is never moved.
local api = vim.api
local config = require('acp.config')

local M = {}

local timer

local function is_chat_window(win, view)
  local buf = api.nvim_win_get_buf(win)
  return buf == view.buf or buf == view.input or api.nvim_win_get_config(win).relative ~= ''
    or vim.bo[buf].buftype ~= ''
end

--- The window to show agent locations in: a normal file window of the
--- chat's tab other than the current one, or nil.
function M.target(view)
  local tab = view.win and api.nvim_win_is_valid(view.win) and api.nvim_win_get_tabpage(view.win)
  if not tab then
    return nil
  end
  local cur = api.nvim_get_current_win()
  for _, win in ipairs(api.nvim_tabpage_list_wins(tab)) do
    if win ~= cur and not is_chat_window(win, view) then
      return win
    end
  end
end

--- Paths already refused (and said so), per chat: the agent may name the
--- same one in every update.
local refused = setmetatable({}, { __mode = 'k' })

local function show(view, path, line)
  local win = M.target(view)
  if not win then
    return
  end
  -- The agent's path is checked (no URL-like name such as term://, no
  -- FIFO or device, inside the roots); a file it is about to create, in
  -- an existing directory, opens empty as before.
  local open = require('acp.editor.open')
  local real, why = open.check_for(view, path, true)
  if not real then
    refused[view] = refused[view] or {}
    if not refused[view][path] then
      refused[view][path] = true
      open.refused(path, why .. ' (follow mode)')
    end
    return
  end
  local ok = true
  if api.nvim_buf_get_name(api.nvim_win_get_buf(win)) ~= real then
    ok = open.show(view, win, real, { new_ok = true }) ~= nil
  end
  if not ok then
    return
  end
  api.nvim_win_call(win, function()
    local last = api.nvim_buf_line_count(0)
    pcall(api.nvim_win_set_cursor, win, { math.min(math.max(line, 1), last), 0 })
    vim.cmd('normal! zz')
  end)
  M.last = { path = real, line = line, win = win }
end

--- A new location from the agent (path, 1-based line).
function M.location(view, path, line)
  if not config.options.follow then
    return
  end
  M.pending = { view = view, path = path, line = line }
  if timer then
    timer:stop()
  else
    timer = (vim.uv or vim.loop).new_timer()
  end
  timer:start(config.options.follow_debounce_ms, 0, vim.schedule_wrap(function()
    local p = M.pending
    M.pending = nil
    if p then
      show(p.view, p.path, p.line)
    end
  end))
end

return M
