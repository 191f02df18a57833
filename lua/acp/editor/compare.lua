--- A comparison in a new tab page: a read-only scratch copy of some text on
--- the left, the file's own buffer on the right, both in diff mode, so that
--- `do`/`dp` move hunks. `q` in the left window closes the tab page.
local api = vim.api

local M = {}

---@param o { buf: integer, name: string, lines: string[], left_bar: string, right_bar: string }
---@return integer tab, integer left
function M.open(o)
  vim.cmd('stopinsert')
  vim.cmd('tabnew')
  -- The tab's empty buffer goes once the comparison's buffers replace it.
  vim.bo.bufhidden = 'wipe'
  local tab = api.nvim_get_current_tabpage()
  local left = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, left, o.name)
  vim.bo[left].bufhidden = 'wipe'
  api.nvim_buf_set_lines(left, 0, -1, false, o.lines)
  vim.bo[left].modifiable = false
  vim.bo[left].filetype = vim.bo[o.buf].filetype
  api.nvim_win_set_buf(0, left)
  vim.cmd('diffthis')
  -- Both panes have a bar (their rows line up), cut at the right when the
  -- window is narrow: the label first is never hidden.
  vim.wo.winbar = o.left_bar .. '%<'
  vim.keymap.set('n', 'q', function()
    if api.nvim_tabpage_is_valid(tab) and #api.nvim_list_tabpages() > 1 then
      vim.cmd(('tabclose %d'):format(api.nvim_tabpage_get_number(tab)))
    end
  end, { buffer = left, nowait = true, silent = true, desc = 'Close the comparison' })
  vim.cmd('rightbelow vsplit')
  api.nvim_win_set_buf(0, o.buf)
  vim.cmd('diffthis')
  vim.wo.winbar = o.right_bar .. '%<'
  return tab, left
end

return M
