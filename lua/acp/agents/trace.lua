--- The protocol trace of a chat's agent (`:AcpTrace`): a read-only buffer
--- with one line per message, newest last (`→` client to agent, `←` agent
--- to client, `!` the agent's stderr; params folded onto the line). `R`
--- reloads it, `q` closes it. `:AcpTraceSave {file}` writes the trace as
--- JSONL with secrets redacted, the format the test agent replays.

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

local M = {}

local api = vim.api

--- Width a line of the trace is cut at.
local WIDTH = 400

local function fill(buf, view, core)
  local ok, lines = pcall(core.trace_lines, view.thread, WIDTH)
  if not ok then
    lines = { 'acp.nvim: ' .. tostring(lines):gsub('^runtime error: ', '') }
  elseif #lines == 0 then
    lines = { '(no traffic yet)' }
  end
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

--- Opens the trace of `view`'s agent in a split.
---@param view acp.ChatView
---@param core acp.core
function M.open(view, core)
  local name = ('acp://trace/%d'):format(view.thread)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    buf = api.nvim_create_buf(false, true)
    api.nvim_buf_set_name(buf, name)
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].swapfile = false
    vim.bo[buf].filetype = 'acptrace'
    vim.keymap.set('n', 'R', function()
      fill(buf, view, core)
    end, { buffer = buf, desc = 'Reload the trace' })
    vim.keymap.set('n', 'q', '<Cmd>close<CR>', { buffer = buf, desc = 'Close the trace' })
  end
  fill(buf, view, core)
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    vim.cmd('botright split')
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, buf)
  else
    api.nvim_set_current_win(win)
  end
  vim.wo[win].wrap = false
  api.nvim_win_set_cursor(win, { api.nvim_buf_line_count(buf), 0 })
  return buf
end

--- Writes the trace of `view`'s agent to `path` (JSONL, secrets redacted).
---@param view acp.ChatView
---@param core acp.core
function M.save(view, core, path)
  if type(path) ~= 'string' or vim.trim(path) == '' then
    notify('acp.nvim: :AcpTraceSave needs a file name', vim.log.levels.WARN)
    return nil
  end
  -- Literal but for `%`, `#` and `~` (expand() would run backticks).
  path = vim.fn.fnamemodify(require('acp.util.escape').arg_path(path), ':p')
  local ok, n = pcall(core.trace_save, view.thread, path)
  if not ok then
    notify('acp.nvim: ' .. tostring(n):gsub('^runtime error: ', ''), vim.log.levels.ERROR)
    return nil
  end
  notify(('acp.nvim: wrote %d messages to %s (secrets redacted)'):format(n, path))
  return n
end

return M
