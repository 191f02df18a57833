--- Subagent blocks in the chat (a child session the agent created, shown
--- under the tool call that started it, its transcript folded): the card
--- key on one cancels its work when the agent offers that and it runs,
--- else opens or closes its fold.
local api = vim.api

local M = {}

--- Folds the transcript of subagent block `index` in `win` under its
--- header line. The block is rendered again on every update of the
--- subagent: folds left inside it from an earlier rendering are deleted
--- first, and a fold the user opened stays open.
function M.fold(view, win, index)
  local first, last = view:entry_range(index)
  if not first or last <= first then
    return
  end
  -- 1-based rows of the body.
  local top, bottom = first + 2, last + 1
  api.nvim_win_call(win, function()
    local saved = vim.fn.winsaveview()
    local was_open = vim.fn.foldlevel(top) > 0 and vim.fn.foldclosed(top) == -1
    for row = top, bottom do
      if vim.fn.foldlevel(row) > 0 then
        api.nvim_win_set_cursor(win, { row, 0 })
        vim.cmd('silent! normal! zD')
      end
    end
    vim.cmd(('silent! %d,%dfold'):format(top, bottom))
    if was_open then
      vim.cmd(('silent! %dfoldopen'):format(top))
    end
    vim.fn.winrestview(saved)
  end)
end

--- The card key on subagent block `index` of `view`.
function M.card_action(view, index)
  local ok, e = pcall(require('acp.core').entry, view.thread, index)
  if not (ok and type(e) == 'table') then
    return false
  end
  local state = type(e.state) == 'table' and e.state.state or 'running'
  if e.can_cancel and (state == 'running' or state == 'requires_action') then
    local done, why = require('acp.core').cancel_subagent(view.thread, e.session_id)
    if done then
      require('acp.util.escape').notify('acp.nvim: cancelling the subagent', vim.log.levels.INFO)
    else
      require('acp.util.escape').notice('acp.nvim: ' .. tostring(why), vim.log.levels.WARN)
    end
    return true
  end
  local row = api.nvim_win_get_cursor(0)[1]
  if vim.fn.foldlevel(row) > 0 or vim.fn.foldlevel(row + 1) > 0 then
    local target = vim.fn.foldlevel(row) > 0 and row or row + 1
    api.nvim_win_set_cursor(0, { target, 0 })
    vim.cmd('silent! normal! za')
    api.nvim_win_set_cursor(0, { row, 0 })
  end
  return true
end

return M
