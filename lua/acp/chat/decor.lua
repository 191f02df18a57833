--- Highlights of card headers, status marks and plans in the transcript.
--- The buffer text is plain (what the user reads, searches and exports);
--- colour comes only from extmarks, placed here after each drain for the
--- entries that changed.
---
--- A card header is `label · title · status` (the core's rendering, see
--- src/render.rs); a plan starts with `Plan · N/M done`.
local api = vim.api

local M = {}

local ns = api.nvim_create_namespace('acp_decor')
M.ns = ns

local SEP = ' · '

for name, link in pairs({
  AcpCardKind = 'Special',
  AcpCardTitle = 'Bold',
  AcpCardStatus = 'Comment',
  AcpStatusRunning = 'DiagnosticInfo',
  AcpStatusDone = 'DiagnosticOk',
  AcpStatusFailed = 'DiagnosticError',
  AcpStatusWaiting = 'DiagnosticWarn',
  AcpStatusCancelled = 'Comment',
}) do
  api.nvim_set_hl(0, name, { link = link, default = true })
end

--- The highlight group of a status word.
local status_group = {
  completed = 'AcpStatusDone',
  failed = 'AcpStatusFailed',
  rejected = 'AcpStatusFailed',
  ['in progress'] = 'AcpStatusRunning',
  pending = 'AcpStatusRunning',
  ['running…'] = 'AcpStatusRunning',
  ['waiting for you'] = 'AcpStatusWaiting',
  cancelled = 'AcpStatusCancelled',
}
M.status_group = status_group

local function mark(buf, row, from, to, group)
  api.nvim_buf_set_extmark(buf, ns, row, from, { end_col = to, hl_group = group, priority = 150 })
end

--- `label · title · status`: the label and status coloured, the title bold.
local function header(buf, row, line)
  local first = line:find(SEP, 1, true)
  if not first then
    return
  end
  local last = first
  while true do
    local nxt = line:find(SEP, last + 1, true)
    if not nxt then
      break
    end
    last = nxt
  end
  mark(buf, row, 0, first - 1, 'AcpCardKind')
  if last > first then
    mark(buf, row, first - 1 + #SEP, last - 1, 'AcpCardTitle')
    local status = line:sub(last + #SEP)
    mark(buf, row, last - 1 + #SEP, #line, status_group[status] or 'AcpCardStatus')
  end
end

--- A terminal's or command's status line in a card body.
local function status_line(buf, row, line)
  local word = line:match('^  (exit code %-?%d+)') or line:match('^  (running…)') or line:match('^  (killed by %S+)')
    or line:match('^  (exited)')
  if word then
    local group = word == 'exit code 0' and 'AcpStatusDone'
      or word == 'running…' and 'AcpStatusRunning'
      or 'AcpStatusFailed'
    mark(buf, row, 2, 2 + #word, group)
  end
end

--- Decorates entry `index` of `view` (rows first..last).
local function entry(view, index)
  local e = view.entries[index]
  if not (e and (e.kind == 'tool_call' or e.kind == 'plan')) then
    return
  end
  local first, last = view:entry_range(index)
  if not first then
    return
  end
  local buf = view.buf
  api.nvim_buf_clear_namespace(buf, ns, first, last + 1)
  local lines = api.nvim_buf_get_lines(buf, first, last + 1, false)
  if e.kind == 'plan' then
    local head = lines[1] or ''
    mark(buf, first, 0, (head:find(SEP, 1, true) or #head + 1) - 1, 'AcpCardKind')
    for i = 2, #lines do
      local at = lines[i]:find(SEP .. 'in progress', 1, true)
      if at then
        mark(buf, first + i - 1, at - 1 + #SEP, #lines[i], 'AcpStatusRunning')
      end
    end
    return
  end
  header(buf, first, lines[1] or '')
  for i = 2, #lines do
    status_line(buf, first + i - 1, lines[i])
  end
end

--- Decorates the entries in `touched` (a set of entry indexes).
function M.apply(view, touched)
  for index in pairs(touched) do
    entry(view, index)
  end
end

--- Window options that keep wrapped card lines under their indent.
function M.window(win)
  local wo = vim.wo[win]
  wo.breakindent = true
  wo.breakindentopt = 'list:-1'
end

--- Buffer options for the indent of wrapped list items.
function M.buffer(buf)
  -- A list item or a task item: the wrapped text lines up with its text.
  vim.bo[buf].formatlistpat = [[^\s*\(\d\+[.)]\|[-*+]\)\s\+\(\[[ x]\]\s\+\)\?]]
end

return M
