--- Follow mode (opt-in, `follow = true`): as the agent reads or edits, a
--- non-chat window of the chat's tab shows that file at that line. Updates
--- are debounced, and the window the user is in is never moved.
---
--- A file that does not exist yet (the agent is about to create it, maybe
--- once the user allows it) is not loaded: a buffer made for a missing
--- file makes Neovim ask "W13: File … has been created after editing
--- started" once the file appears. The window keeps its buffer and its
--- winbar says "notes.txt (not created yet)"; the file opens there as soon
--- as it exists (a watcher on its directory, and every drain with tool
--- card changes looks again).
local api = vim.api
local uv = vim.uv or vim.loop
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

local show

--- The location waiting for its file: { view, path (real), line, win,
--- winbar = the window's own 'winbar' before, shown = what we set }.
M.waiting = nil
local watcher, settle_timer

api.nvim_set_hl(0, 'AcpFollowWaiting', { link = 'Comment', default = true })

local function stop_waiting()
  local w = M.waiting
  M.waiting = nil
  if watcher then
    pcall(watcher.stop, watcher)
    if not watcher:is_closing() then
      watcher:close()
    end
    watcher = nil
  end
  if w and w.autocmd then
    pcall(api.nvim_del_autocmd, w.autocmd)
  end
  if w and api.nvim_win_is_valid(w.win) then
    local now = api.nvim_get_option_value('winbar', { scope = 'local', win = w.win })
    if now == w.shown then
      pcall(api.nvim_set_option_value, 'winbar', w.winbar, { scope = 'local', win = w.win })
    end
  end
end

local function is_file(path)
  local st = uv.fs_stat(path)
  return st ~= nil and st.type == 'file'
end

--- Shows the waiting location once its file exists.
local function recheck()
  local w = M.waiting
  if w and is_file(w.path) then
    stop_waiting()
    show(w.view, w.path, w.line)
  end
end

--- Keeps window `win` as it is and says that `real` is not created yet;
--- opens it once it is.
local function wait_for(view, win, real, line)
  local w = M.waiting
  if w and w.path == real and w.win == win and w.view == view then
    w.line = line
    return
  end
  stop_waiting()
  local esc = require('acp.util.escape')
  local shown = ('%%#AcpFollowWaiting# %s (not created yet) %%*'):format(esc.statusline(vim.fn.fnamemodify(real, ':~:.'), 120, true))
  M.waiting = {
    view = view,
    path = real,
    line = line,
    win = win,
    winbar = api.nvim_get_option_value('winbar', { scope = 'local', win = win }),
    shown = shown,
  }
  pcall(api.nvim_set_option_value, 'winbar', shown, { scope = 'local', win = win })
  if api.nvim_buf_is_valid(view.buf) then
    -- The chat closed: nothing to wait for.
    M.waiting.autocmd = api.nvim_create_autocmd({ 'BufDelete', 'BufWipeout' }, {
      buffer = view.buf,
      once = true,
      callback = function()
        if M.waiting and M.waiting.view == view then
          M.waiting.autocmd = nil
          stop_waiting()
        end
      end,
    })
  end
  local h = uv.new_fs_event()
  settle_timer = settle_timer or uv.new_timer()
  if h and h:start(vim.fs.dirname(real), {}, function(err)
    if not err then
      -- Opened after a quiet moment: a file is created empty, then written.
      settle_timer:stop()
      settle_timer:start(50, 0, vim.schedule_wrap(recheck))
    end
  end) then
    watcher = h
  elseif h then
    h:close()
  end
end

function show(view, path, line)
  local win = M.target(view)
  if not win then
    stop_waiting()
    return
  end
  -- The agent's path is checked (no URL-like name such as term://, no
  -- FIFO or device, inside the roots); a file it is about to create, in
  -- an existing directory, is waited for (never loaded before it exists).
  local open = require('acp.editor.open')
  local real, why = open.check_for(view, path, true)
  if not real then
    refused[view] = refused[view] or {}
    if not refused[view][path] then
      refused[view][path] = true
      -- In the chat, not as a message: a message longer than the command
      -- line, or several in a row, would wait for Enter mid-turn.
      require('acp.editor.sync').notice(view, ('follow mode: not opening %s: %s'):format(open.display(path), why))
    end
    return
  end
  if not is_file(real) then
    -- Only a running turn can still create it. A location that reaches
    -- here after its turn ended (the rejected write's last card update
    -- came in the drain that ended the turn, and the debounce fired
    -- after) would leave "not created yet" in the winbar for good.
    if view.turns_started > view.turns_ended then
      wait_for(view, win, real, line)
    end
    return
  end
  stop_waiting()
  local ok = true
  if api.nvim_buf_get_name(api.nvim_win_get_buf(win)) ~= real then
    local buf, _, swapped = open.show(view, win, real, { quiet = true })
    ok = buf ~= nil
    if swapped then
      require('acp.editor.sync').notice(view, ('follow mode: %s has a swap file of another Neovim: opened anyway (:recover in its window shows that text)'):format(
        vim.fn.fnamemodify(real, ':~:.')
      ))
    end
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

--- After a drain that changed tool cards, and at a turn's end: the file
--- waited for may exist now. A turn of its chat that ended without
--- creating it (the user rejected the write, the agent changed its mind)
--- ends the wait.
function M.poke(view, turn_ended)
  if M.waiting then
    recheck()
  end
  local w = M.waiting
  if w and turn_ended and w.view == view then
    stop_waiting()
  end
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
