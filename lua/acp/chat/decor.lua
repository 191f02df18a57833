--- Highlights of card headers, status marks and plans in the transcript.
--- The buffer text is plain (what the user reads, searches and exports);
--- colour comes only from extmarks, placed here after each drain for the
--- entries that changed.
---
--- The core says where each part is and how its status reads: a card's
--- header parts and body status words (acp.CardMeta `header`,
--- `status_lines`), a plan's label and running steps (acp.PlanLayout), each
--- with its tone (acp.Tone). Nothing here reads the rendered words.
local api = vim.api

local M = {}

local ns = api.nvim_create_namespace('acp_decor')
M.ns = ns

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

--- The highlight group of a status tone.
---@type table<acp.Tone, string>
local tone_group = {
  done = 'AcpStatusDone',
  running = 'AcpStatusRunning',
  failed = 'AcpStatusFailed',
  waiting = 'AcpStatusWaiting',
  cancelled = 'AcpStatusCancelled',
}
M.tone_group = tone_group

--- Colours bytes `from..to` of `line` (row `row`). The lines may be newer
--- than the metadata for a moment (a rendering and its metadata can come in
--- different drains): a span past the line's end is cut to it.
local function mark(buf, row, line, from, to, group)
  to = math.min(to, #(line or ''))
  if from < to then
    api.nvim_buf_set_extmark(buf, ns, row, from, { end_col = to, hl_group = group, priority = 150 })
  end
end

--- Status words in an entry's body (acp.StatusMark, rows from its first line).
local function status_marks(buf, first, lines, marks)
  for _, m in ipairs(marks or {}) do
    mark(buf, first + m.row, lines[m.row + 1], m.from, m.to, tone_group[m.tone] or 'AcpCardStatus')
  end
end

--- Decorates entry `index` of `view` (rows first..last).
local function entry(view, index)
  local e = view.entries[index]
  local notices = require('acp.chat.notices')
  if notices.is_ours(e) then
    local first, last = view:entry_range(index)
    if first then
      api.nvim_buf_clear_namespace(view.buf, ns, first, last + 1)
      local lines = api.nvim_buf_get_lines(view.buf, first, last + 1, false)
      notices.decorate(view, index, view.buf, ns, first, lines, tone_group)
    end
    return
  end
  if not (e and (e.kind == 'tool_call' or e.kind == 'plan' or e.kind == 'subagent')) then
    return
  end
  local first, last = view:entry_range(index)
  if not first then
    return
  end
  local buf = view.buf
  api.nvim_buf_clear_namespace(buf, ns, first, last + 1)
  local lines = api.nvim_buf_get_lines(buf, first, last + 1, false)
  if e.kind == 'plan' or e.kind == 'subagent' then
    local plan = view.plans[index]
    if plan then
      mark(buf, first, lines[1], plan.label.from, plan.label.to, 'AcpCardKind')
      status_marks(buf, first, lines, plan.steps)
    end
    return
  end
  local card = view.cards[index]
  local h = card and card.header
  if h then
    mark(buf, first, lines[1], h.label.from, h.label.to, 'AcpCardKind')
    mark(buf, first, lines[1], h.title.from, h.title.to, 'AcpCardTitle')
    mark(buf, first, lines[1], h.status.from, h.status.to, tone_group[h.tone] or 'AcpCardStatus')
    status_marks(buf, first, lines, card.status_lines)
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
