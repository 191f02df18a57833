--- Windows the plugin opens for reading (a terminal's output, the log).
local api = vim.api

local M = {}

--- `q` in such a window: closes it; in the only window left, shows the
--- buffer that was there before instead (Neovim cannot close the last one).
function M.close_or_previous()
  if #api.nvim_tabpage_list_wins(0) > 1 or #api.nvim_list_tabpages() > 1 then
    -- A float of the tab may be left alone with it: then it goes too.
    if pcall(api.nvim_win_close, 0, false) then
      return
    end
  end
  local alt = vim.fn.bufnr('#')
  if alt > 0 and alt ~= api.nvim_get_current_buf() and api.nvim_buf_is_valid(alt) then
    api.nvim_win_set_buf(0, alt)
  end
end

return M
