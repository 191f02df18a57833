--- Permission requests (`session/request_permission`): a queue shown one at
--- a time in a float near the chat. The float only takes focus when the
--- user is not typing; `:AcpPermission` focuses it. Closing it leaves the
--- request pending.
local api = vim.api

local M = {}

--- Pending requests in arrival order: { view, request, payload }.
M.queue = {}

local kind_keys = { allow_once = 'y', allow_always = 'a', reject_once = 'n', reject_always = 'N' }

--- The keys offered for each option: digits 1..n, plus y/a/n/N by kind.
function M.option_keys(options)
  local keys = {}
  for i, opt in ipairs(options) do
    local k = { tostring(i) }
    local extra = kind_keys[opt.kind]
    if extra then
      k[#k + 1] = extra
    end
    keys[i] = k
  end
  return keys
end

local function summary(tool)
  local raw = tool.rawInput
  if type(raw) == 'table' then
    local v = raw.command or raw.cmd or raw.file_path or raw.path or raw.pattern or raw.url
    if type(v) == 'table' then
      v = table.concat(v, ' ')
    end
    if v then
      return tostring(v)
    end
  end
end

function M.lines(item)
  local p = item.payload
  local tool = p.toolCall or {}
  local out = {}
  local pos = #M.queue > 1 and (' (1 of %d)'):format(#M.queue) or ''
  out[#out + 1] = ('%s asks for permission%s'):format(item.view.agent, pos)
  out[#out + 1] = ''
  local title = tool.title ~= vim.NIL and tool.title or nil
  local kind = tool.kind ~= vim.NIL and tool.kind or 'other'
  out[#out + 1] = ('[%s] %s'):format(kind, title or tool.toolCallId or 'tool call')
  local s = summary(tool)
  if s then
    for _, l in ipairs(vim.split(s, '\n', { plain = true })) do
      out[#out + 1] = '  ' .. l
    end
  end
  out[#out + 1] = ''
  local keys = M.option_keys(p.options or {})
  for i, opt in ipairs(p.options or {}) do
    out[#out + 1] = ('  %s  %s'):format(table.concat(keys[i], '/'), opt.name or opt.optionId)
  end
  out[#out + 1] = ''
  out[#out + 1] = '  q  decide later (:AcpPermission)'
  return out
end

local function close_float()
  if M.win and api.nvim_win_is_valid(M.win) then
    api.nvim_win_close(M.win, true)
  end
  M.win = nil
end

--- Answers the head request with option `i` (or nil = cancelled).
function M.choose(i)
  local item = M.queue[1]
  if not item then
    return
  end
  local opt = i and (item.payload.options or {})[i]
  if i and not opt then
    return
  end
  local core = require('acp.core').get()
  if core then
    local ok, err = pcall(core.answer_permission, item.view.thread, item.request, opt and opt.optionId or nil)
    if not ok then
      vim.notify('acp.nvim: ' .. tostring(err), vim.log.levels.WARN)
    end
  end
  table.remove(M.queue, 1)
  M.render(true)
end

function M.render(focus)
  local item = M.queue[1]
  if not item then
    close_float()
    return
  end
  if not (M.buf and api.nvim_buf_is_valid(M.buf)) then
    M.buf = api.nvim_create_buf(false, true)
    vim.bo[M.buf].bufhidden = 'hide'
    vim.bo[M.buf].filetype = 'acppermission'
  end
  local lines = M.lines(item)
  vim.bo[M.buf].modifiable = true
  api.nvim_buf_set_lines(M.buf, 0, -1, false, lines)
  vim.bo[M.buf].modifiable = false
  for _, k in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', k, close_float, { buffer = M.buf, nowait = true })
  end
  for i, keys in ipairs(M.option_keys(item.payload.options or {})) do
    for _, k in ipairs(keys) do
      vim.keymap.set('n', k, function()
        M.choose(i)
      end, { buffer = M.buf, nowait = true })
    end
  end
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l) + 2)
  end
  width = math.min(width, math.max(20, vim.o.columns - 4))
  local cfg = { width = width, height = #lines, style = 'minimal', border = 'rounded', title = ' Permission ' }
  local chat_win = item.view.win
  if chat_win and api.nvim_win_is_valid(chat_win) then
    cfg.relative, cfg.win = 'win', chat_win
    cfg.row = math.max(0, api.nvim_win_get_height(chat_win) - #lines - 2)
    cfg.col = math.max(0, api.nvim_win_get_width(chat_win) - width - 2)
  else
    cfg.relative = 'editor'
    cfg.row = math.floor((vim.o.lines - #lines) / 2)
    cfg.col = math.floor((vim.o.columns - width) / 2)
  end
  -- Don't pull the user out of insert mode: they answer via :AcpPermission.
  local typing = api.nvim_get_mode().mode:match('^[iR]') ~= nil
  local enter = focus ~= false and not typing
  if M.win and api.nvim_win_is_valid(M.win) then
    api.nvim_win_set_config(M.win, cfg)
    if enter then
      api.nvim_set_current_win(M.win)
    end
  else
    M.win = api.nvim_open_win(M.buf, enter, cfg)
  end
end

function M.enqueue(view, ev)
  M.queue[#M.queue + 1] = { view = view, request = ev.request, payload = ev.payload }
  M.render(#M.queue == 1)
end

--- The core says the request is answered or moot (cancel, agent exit).
function M.done(view, request)
  for i, item in ipairs(M.queue) do
    if item.view == view and item.request == request then
      table.remove(M.queue, i)
      M.render(false)
      return
    end
  end
end

--- Shows and focuses the float for the oldest pending request.
function M.focus()
  if #M.queue == 0 then
    vim.notify('acp.nvim: no permission request is pending')
    return
  end
  vim.cmd('stopinsert')
  M.render(true)
  if M.win and api.nvim_win_is_valid(M.win) then
    api.nvim_set_current_win(M.win)
  end
end

return M
