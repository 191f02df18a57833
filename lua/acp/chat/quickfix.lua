--- Per-session quickfix list of every tool-call location and written file,
--- kept up to date without making it the current list (the user's own
--- quickfix stays where it was). `:AcpLocations` opens it.
local api = vim.api

local M = {}

local function title(view)
  -- The quickfix window's statusline shows it: one line, capped.
  return 'ACP: ' .. require('acp.util.escape').line(view.info.title or (view.agent .. ' chat ' .. view.thread))
end

--- The list's number in the quickfix stack, or nil if it fell off.
local function nr_of(id)
  local nr = vim.fn.getqflist({ id = id, nr = 0 }).nr
  return (nr and nr > 0) and nr or nil
end

--- Creates the list and goes back to the list that was current.
local function create(view)
  local before = vim.fn.getqflist({ nr = 0 }).nr
  vim.fn.setqflist({}, ' ', { title = title(view) })
  view.qf_id = vim.fn.getqflist({ id = 0 }).id
  if before > 0 then
    vim.cmd(('silent %dchistory'):format(before))
  end
end

--- A quickfix item for a path the agent named: `filename` only for a
--- checked path (a regular file inside the roots, or one not created yet),
--- so that `:cc`/<CR> in the list never opens a `term://` name (which runs
--- a command) or a FIFO (which freezes Neovim); any other path stays in
--- the text, with no file to jump to.
function M.location_item(view, path, lnum, text)
  local open = require('acp.editor.open')
  local real, why = open.check_for(view, path, true)
  if real then
    return { filename = real, lnum = lnum, text = text }
  end
  return { lnum = lnum, valid = 0, refused = true,
    text = ('%s · not opened: %s (%s)'):format(text, open.display(path), why) }
end

--- Items: tool-call locations in transcript order (cached per card by
--- acp.chat.activity as cards change), then the files the agent wrote.
function M.items(view)
  local core = require('acp.core')
  local items, seen = {}, {}
  local function add(item)
    local k = (item.filename or '') .. ':' .. item.lnum .. ':' .. item.text
    if not seen[k] then
      seen[k] = true
      items[#items + 1] = item
    end
  end
  local indices = vim.tbl_keys(view.qf_entries or {})
  table.sort(indices)
  for _, i in ipairs(indices) do
    local list = view.qf_entries[i]
    if list.raw then
      -- Checked once, when first listed (acp.chat.activity keeps them raw).
      local checked = {}
      for _, r in ipairs(list.raw) do
        checked[#checked + 1] = M.location_item(view, r[1], r[2], r[3])
      end
      view.qf_entries[i], list = checked, checked
    end
    for _, item in ipairs(list) do
      add(item)
    end
  end
  for _, w in ipairs(core.writes(view.thread)) do
    add(M.location_item(view, w.path, 1,
      w.created and 'created by the agent' or ((w.target == 'agent' and 'changed on disk by the agent' or 'written by the agent') .. (w.saved and '' or ' (unsaved)'))))
  end
  return items
end

--- Refreshes the session's list (called after a drain touched tool cards
--- or the agent wrote a file).
function M.update(view)
  local items = M.items(view)
  if #items == 0 then
    return
  end
  if not (view.qf_id and nr_of(view.qf_id)) then
    create(view)
  end
  vim.fn.setqflist({}, 'r', { id = view.qf_id, items = items, title = title(view) })
  return items
end

function M.open(view)
  local items = M.update(view) or {}
  if not (view.qf_id and nr_of(view.qf_id)) then
    require('acp.util.escape').notify('acp.nvim: no locations yet in this chat')
    return
  end
  local refused = {}
  for _, item in ipairs(items) do
    if item.refused then
      refused[#refused + 1] = item.text:match(' · not opened: (.*)$')
    end
  end
  if #refused > 0 then
    require('acp.util.escape').notify(('acp.nvim: %d location%s in this list %s not opened (no file to jump to): %s'):format(
      #refused, #refused == 1 and '' or 's', #refused == 1 and 'is' or 'are', table.concat(refused, '; ')), vim.log.levels.WARN)
  end
  vim.cmd(('silent %dchistory'):format(nr_of(view.qf_id)))
  vim.cmd('botright copen')
end

return M
