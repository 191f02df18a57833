--- Permission requests (`session/request_permission`): a queue shown one at
--- a time in a float near the chat. The float takes focus only when the
--- user is not typing (or `permissions.focus` is set); `:AcpPermission` or
--- <CR> on the card's "waiting for you" line focuses it. Closing it leaves
--- the request pending. An edit can be reviewed (`d`) before answering.
local api = vim.api
local config = require('acp.config')

local M = {}

--- Pending requests in arrival order: { view, request, payload }.
M.queue = {}

local kind_keys = { allow_once = 'y', allow_always = 'a', reject_once = 'n', reject_always = 'N' }

--- The keys offered for each option: digits 1..n, plus y/a/n/N by kind.
function M.option_keys(options)
  local keys, used = {}, {}
  for i, opt in ipairs(options) do
    local k = { tostring(i) }
    local extra = kind_keys[opt.kind]
    if extra and not used[extra] then
      used[extra] = true
      k[#k + 1] = extra
    end
    keys[i] = k
  end
  return keys
end

local function summary(tool)
  local raw = tool.rawInput
  if type(raw) == 'table' then
    local v = raw.command or raw.cmd or raw.file_path or raw.path or raw.pattern or raw.query or raw.url
    if type(v) == 'table' then
      v = table.concat(v, ' ')
    end
    if v then
      return tostring(v)
    end
  elseif type(raw) == 'string' then
    return raw
  end
end

local function diffs(tool)
  return require('acp.review').diffs_of(tool)
end

local function count_changes(d)
  local old = vim.split(d.oldText or '', '\n', { plain = true })
  local new = vim.split(d.newText or '', '\n', { plain = true })
  local add, del = 0, 0
  for _, h in ipairs(vim.diff(table.concat(old, '\n'), table.concat(new, '\n'), { result_type = 'indices' }) or {}) do
    del, add = del + h[2], add + h[4]
  end
  return add, del
end

function M.lines(item)
  local p = item.payload
  local tool = p.toolCall or {}
  local out = {}
  local pos = #M.queue > 1 and (' (1 of %d)'):format(#M.queue) or ''
  out[#out + 1] = ('%s asks for permission%s'):format(item.view.agent, pos)
  out[#out + 1] = ''
  out[#out + 1] = ('[%s] %s'):format(tool.kind or 'other', tool.title or tool.toolCallId or 'tool call')
  local s = summary(tool)
  if s then
    for _, l in ipairs(vim.split(s, '\n', { plain = true })) do
      out[#out + 1] = '  ' .. l
    end
  end
  for _, loc in ipairs(tool.locations or {}) do
    if loc.path and loc.path ~= s then
      out[#out + 1] = '  ' .. loc.path
    end
  end
  for _, d in ipairs(diffs(tool)) do
    local add, del = count_changes(d)
    out[#out + 1] = ('  %s %s: +%d -%d   (d: review)'):format(d.oldText and 'edit' or 'new file', d.path, add, del)
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
  local core = require('acp.core')
  if core.is_loaded() then
    local ok, err = pcall(core.answer_permission, item.view.thread, item.request, opt and opt.optionId or nil)
    if not ok then
      vim.notify('acp.nvim: ' .. tostring(err), vim.log.levels.WARN)
    end
  end
  table.remove(M.queue, 1)
  if M.review_tab then
    require('acp.review').close(M.review_tab)
    M.review_tab = nil
  end
  M.render(true)
end

--- Keys that answer the head request, set on `buf` (the float, or a
--- review tab opened from it).
local function answer_keys(buf, item)
  for i, keys in ipairs(M.option_keys(item.payload.options or {})) do
    for _, k in ipairs(keys) do
      vim.keymap.set('n', k, function()
        M.choose(i)
      end, { buffer = buf, nowait = true })
    end
  end
end

--- Reviews the edit of the head request side by side; the option keys
--- answer it from the review tab.
function M.review()
  local item = M.queue[1]
  local d = item and diffs(item.payload.toolCall or {})[1]
  if not d then
    return
  end
  close_float()
  local review = require('acp.review')
  local tab, left, right = review.open_diff(d.path, d.oldText, d.newText, { hint = ' · answer: ' .. table.concat(
    vim.tbl_map(function(k)
      return table.concat(k, '/')
    end, M.option_keys(item.payload.options or {})),
    ' '
  ) })
  M.review_tab = tab
  answer_keys(left, item)
  answer_keys(right, item)
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
  pcall(vim.keymap.del, 'n', 'd', { buffer = M.buf })
  for _, k in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', k, close_float, { buffer = M.buf, nowait = true })
  end
  answer_keys(M.buf, item)
  if #diffs(item.payload.toolCall or {}) > 0 then
    vim.keymap.set('n', 'd', M.review, { buffer = M.buf, nowait = true })
  end
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l) + 2)
  end
  width = math.min(width, math.max(20, vim.o.columns - 4))
  local cfg = { width = width, height = #lines, style = 'minimal', border = 'rounded', title = ' Permission ' }
  local chat_win = item.view.win
  if chat_win and api.nvim_win_is_valid(chat_win) and api.nvim_win_get_tabpage(chat_win) == api.nvim_get_current_tabpage() then
    cfg.relative, cfg.win = 'win', chat_win
    cfg.row = math.max(0, api.nvim_win_get_height(chat_win) - #lines - 2)
    cfg.col = math.max(0, api.nvim_win_get_width(chat_win) - width - 2)
  else
    cfg.relative = 'editor'
    cfg.row = math.floor((vim.o.lines - #lines) / 2)
    cfg.col = math.floor((vim.o.columns - width) / 2)
  end
  -- Don't pull the user out of typing: they answer via :AcpPermission.
  local typing = api.nvim_get_mode().mode:match('^[iRc]') ~= nil
  local enter = focus ~= false and (config.options.permissions.focus or not typing)
  if M.win and api.nvim_win_is_valid(M.win) then
    api.nvim_win_set_config(M.win, cfg)
    if enter then
      api.nvim_set_current_win(M.win)
    end
  else
    M.win = api.nvim_open_win(M.buf, enter, cfg)
  end
end

---@param view acp.ChatView
---@param ev acp.Event.permission
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

--- Shows and focuses the float, optionally for the request about a given
--- tool call (moved to the head of the queue).
function M.focus(tool_call_id)
  if #M.queue == 0 then
    vim.notify('acp.nvim: no permission request is pending')
    return
  end
  if tool_call_id then
    for i, item in ipairs(M.queue) do
      if (item.payload.toolCall or {}).toolCallId == tool_call_id then
        table.insert(M.queue, 1, table.remove(M.queue, i))
        break
      end
    end
  end
  vim.cmd('stopinsert')
  M.render(true)
  if M.win and api.nvim_win_is_valid(M.win) then
    api.nvim_set_current_win(M.win)
  end
end

--- `:AcpPermissions [reset]`: the "always" answers you gave this session
--- (the agent remembers them; the plugin never answers with them) and the
--- rules allowed by config.
function M.decisions(view, reset)
  local core = require('acp.core')
  if not (view and core.is_loaded()) then
    vim.notify('acp.nvim: no chat in this tab')
    return
  end
  if reset then
    core.forget_decisions(view.thread)
    vim.notify('acp.nvim: the list of "always" answers was cleared')
    return {}
  end
  local d = core.decisions(view.thread) or {}
  local lines = {}
  for _, c in ipairs(d) do
    lines[#lines + 1] = ('  %s `%s`: %s'):format(c.kind, c.text, c.option)
  end
  local rules = {}
  for _, r in ipairs(config.options.permissions.auto_allow) do
    local rule = type(r) == 'table' and r or { kind = r }
    rules[#rules + 1] = rule.kind .. ' ' .. (rule.pattern or '*')
  end
  local msg = (#lines > 0 and ('"Always" answers this session (the agent remembers them):\n' .. table.concat(lines, '\n')) or 'No "always" answers this session.')
    .. '\nAllowed by config: ' .. (#rules > 0 and table.concat(rules, ', ') or 'none')
  vim.notify(msg)
  return d
end

return M
