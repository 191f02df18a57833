--- Agent writes the core refused: the agent's change and a change made on
--- disk while it worked (another program: a `git pull`, another editor)
--- touch the same lines. Nothing was written, the disk keeps its change;
--- the chat says so, and `:AcpConflict` compares the agent's text with the
--- file's buffer (which holds the disk's text): `do`/`dp` move hunks.
local M = {}

--- real path -> { path = real path, thread, text = the agent's text, first, last }
M.refused = {}

local function rel(path)
  return vim.fn.fnamemodify(path, ':~:.')
end

--- write_conflict: { path, resolved, text, first, last } (a notification).
---@param ev acp.Event.call payload acp.Call.write_conflict (no reply)
function M.write_conflict(ev)
  local p = ev.payload
  M.refused[p.resolved] = { path = p.resolved, thread = ev.thread, text = p.text, first = p.first, last = p.last }
  local name = rel(p.resolved)
  -- A transcript entry of the chat whose agent wrote (the export has it too).
  pcall(
    require('acp.core').notice,
    ev.thread,
    'warn',
    ('%s changed on disk while the agent worked: its write (lines %d-%d) was not made, the disk keeps the change: :AcpConflict %s to compare'):format(
      name,
      p.first,
      p.last,
      name
    )
  )
end

--- Refused writes whose path (relative or full) starts with `lead`.
function M.complete(lead)
  local out = {}
  for path in pairs(M.refused) do
    local r = rel(path)
    if vim.startswith(r, lead) or vim.startswith(path, lead) then
      out[#out + 1] = r
    end
  end
  return out
end

--- The refused write of `want` (a real path), or the latest when nil.
function M.find(want)
  if want then
    return M.refused[want]
  end
  local found
  for _, r in pairs(M.refused) do
    found = found or r
  end
  return found
end

--- A new tab page: the agent's text | the file's buffer, in diff mode.
--- Opening it acknowledges the refused write (it is no longer listed).
function M.open(entry)
  local buf = vim.fn.bufadd(entry.path)
  local ok, err = pcall(vim.fn.bufload, buf)
  if not ok then
    require('acp.util.escape').notify('acp.nvim: cannot load ' .. entry.path .. ': ' .. tostring(err), vim.log.levels.WARN)
    return
  end
  local bo = vim.bo[buf]
  local format = { fileformat = bo.fileformat, bomb = bo.bomb, eol = bo.eol, fixeol = bo.fixeol, binary = bo.binary }
  local lines = require('acp.core').decode(entry.text, format)
  local tab, left = require('acp.editor.compare').open({
    buf = buf,
    name = ('acp://conflict/%d/%s (the agent\'s refused write)'):format(buf, entry.path),
    lines = lines,
    left_bar = ('%%#AcpTitle# The agent\'s write (not made; lines %d-%d clash with the disk) %%* do/dp move hunks · q close'):format(
      entry.first,
      entry.last
    ),
    right_bar = '%#AcpTitle# Your buffer (the file) %*',
  })
  M.refused[entry.path] = nil
  return tab, left, buf
end

return M
