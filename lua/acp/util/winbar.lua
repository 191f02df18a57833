--- Window bars that fit their window. A bar is built for the window's
--- width by a function (what matters first, the rest cut at the right by
--- the builder), and built again when the window is resized (`WinResized`,
--- `VimResized`), so nothing is ever cut from the left. The option is set
--- only when its text changes (setting 'winbar' redraws the window).
local api = vim.api

local M = {}

--- Window -> { build = fun(width: integer): string, buf = integer }.
---@type table<integer, { build: fun(width: integer): string, buf: integer }>
local bars = {}

local function apply(win)
  local bar = bars[win]
  if not bar then
    return
  end
  -- A window that closed, or now shows another buffer, keeps what it has.
  if not api.nvim_win_is_valid(win) or api.nvim_win_get_buf(win) ~= bar.buf then
    bars[win] = nil
    return
  end
  local text = bar.build(api.nvim_win_get_width(win))
  if vim.wo[win].winbar ~= text then
    vim.wo[win].winbar = text
  end
end

local group
local function watch()
  if group then
    return
  end
  group = api.nvim_create_augroup('acp_winbar', { clear = true })
  local function each(wins)
    for _, win in ipairs(wins) do
      -- A bar that fails to build keeps its last text; resizing goes on.
      pcall(apply, win)
    end
  end
  api.nvim_create_autocmd('WinResized', {
    group = group,
    callback = function()
      each(vim.v.event.windows or {})
    end,
  })
  api.nvim_create_autocmd('VimResized', {
    group = group,
    callback = function()
      each(vim.tbl_keys(bars))
    end,
  })
  api.nvim_create_autocmd('WinClosed', {
    group = group,
    callback = function(args)
      local win = tonumber(args.match)
      if win then
        bars[win] = nil
      end
    end,
  })
end

--- Sets `win`'s 'winbar' to `build(width)` now and whenever the window is
--- resized, as long as it shows the buffer it shows now. `build` returns
--- statusline text (agent text in it escaped by the caller).
---@param win integer
---@param build fun(width: integer): string
function M.set(win, build)
  watch()
  bars[win] = { build = build, buf = api.nvim_win_get_buf(win) }
  apply(win)
end

--- The display width of plain text (no statusline items).
function M.width(s)
  return api.nvim_strwidth(s)
end

return M
