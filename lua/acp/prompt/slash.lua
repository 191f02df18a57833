--- Slash commands: agents announce them with `available_commands_update`
--- (kept in the chat's `info.commands`); typing `/` at the start of the
--- input area lists them with their descriptions. Sent as plain text, as
--- the protocol asks.
local api = vim.api

local M = {}

--- Menu items for the commands whose name starts with `base`.
function M.items(view, base)
  local items = {}
  for _, c in ipairs(view.info.commands or {}) do
    if type(c) == 'table' and type(c.name) == 'string' and vim.startswith(c.name, base) then
      -- Any JSON may stand where the protocol says string: shown as text
      -- (a table here made every `/` typed raise an error).
      local text = require('acp.util.text')
      local hint = type(c.input) == 'table' and text.of(c.input.hint) or nil
      items[#items + 1] = {
        word = '/' .. c.name .. ' ',
        abbr = '/' .. c.name,
        menu = text.line(c.description, ''),
        info = hint and ('input: ' .. hint) or nil,
      }
    end
  end
  table.sort(items, function(a, b)
    return a.abbr < b.abbr
  end)
  return items
end

--- The command name being typed on 1-based row `row` of the input before
--- byte `col`: `/` at the very start of the input.
function M.command_at(row, line, col)
  if row ~= 1 then
    return nil
  end
  return line:sub(1, col):match('^/(%S*)$')
end

local function typed_command()
  local cursor = api.nvim_win_get_cursor(0)
  return M.command_at(cursor[1], api.nvim_get_current_line(), cursor[2])
end

function M.attach(view)
  local buf = view.input
  api.nvim_create_autocmd('TextChangedI', {
    group = api.nvim_create_augroup('acp_commands_' .. buf, { clear = true }),
    buffer = buf,
    callback = function()
      local base = require('acp.prompt.popup').builtin_popup() and typed_command()
      if not base or (vim.fn.pumvisible() == 1 and vim.fn.complete_info({ 'selected' }).selected ~= -1) then
        return
      end
      local items = M.items(view, base)
      if #items > 0 then
        vim.fn.complete(1, items)
      end
    end,
  })
end

return M
