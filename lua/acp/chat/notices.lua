--- The agent's notices (`notice`) and context compactions
--- (`compaction_update`) in a chat: the colours the core marks in their
--- entries (acp.Event.marks), a compaction's body folded under its first
--- line, and a live warning or error told through `vim.notify` too (the
--- shared no-hit-enter path; agent text escaped).
local api = vim.api

local M = {}

for name, link in pairs({
  AcpNoticeInfo = 'DiagnosticInfo',
  AcpNoticeWarn = 'DiagnosticWarn',
  AcpNoticeError = 'DiagnosticError',
}) do
  api.nvim_set_hl(0, name, { link = link, default = true })
end

--- The highlight group of a mark's role (acp.Event.marks).
local role_group = {
  label = 'AcpCardKind',
  info = 'AcpNoticeInfo',
  warning = 'AcpNoticeWarn',
  error = 'AcpNoticeError',
}

--- Whether `view`'s entry `e` is one this file decorates.
function M.is_ours(e)
  return e ~= nil and (e.kind == 'agent_notice' or e.kind == 'compaction')
end

--- Colours entry `index` (rows first.., `lines` its text) by its marks;
--- a status tone as `tone_group` (acp.chat.decor's) says.
function M.decorate(view, index, buf, ns, first, lines, tone_group)
  for _, m in ipairs((view.marks or {})[index] or {}) do
    local line = lines[m.row + 1]
    local to = math.min(m.to, #(line or ''))
    local group = role_group[m.role] or tone_group[m.role]
    if group and m.from < to then
      api.nvim_buf_set_extmark(buf, ns, first + m.row, m.from, { end_col = to, hl_group = group, priority = 150 })
    end
  end
end

--- A compaction's summary and error fold under its first line.
function M.fold(view, index)
  local e = view.entries[index]
  if not (e and e.kind == 'compaction') then
    return
  end
  local first, last = view:entry_range(index)
  if first and last > first then
    for _, win in ipairs(vim.fn.win_findbuf(view.buf)) do
      view:_fold_entry(win, index, 1)
    end
  end
end

local LEVEL = { warning = vim.log.levels.WARN, error = vim.log.levels.ERROR }

--- A live notice of the agent: warnings and errors go to `vim.notify` too.
---@param view acp.ChatView
---@param ev acp.Event.agent_notice
function M.notify(view, ev)
  local level = LEVEL[ev.severity]
  if not level or type(ev.title) ~= 'string' then
    return
  end
  local esc = require('acp.util.escape')
  local msg = ('acp.nvim: %s: %s'):format(esc.line(view.agent_name or view.agent or 'agent', 40), esc.line(ev.title, 120))
  if type(ev.description) == 'string' and ev.description ~= '' then
    msg = msg .. ' — ' .. esc.line(ev.description, 200)
  end
  -- After the drain: a notifier plugin may open windows of its own.
  vim.schedule(function()
    esc.notice(msg, level)
  end)
end

return M
