--- nvim-cmp source for acp.nvim's chat input: `@` mentions (files,
--- buffers, @diagnostics, @selection) and the agent's `/` commands.
---
---   require('cmp').register_source('acp', require('cmp_acp').new())
---   require('cmp').setup.filetype('acpchat_input', { sources = { { name = 'acp' } } })
---
--- (acp.nvim registers it by itself when nvim-cmp is loaded before a chat
--- opens.) Loaded only by nvim-cmp; with the source enabled acp.nvim's own
--- popup steps aside (`completion = 'auto'`).
local Source = {}
Source.__index = Source

function Source.new()
  return setmetatable({}, Source)
end

function Source:is_available()
  return vim.bo.filetype == 'acpchat_input'
end

function Source:get_debug_name()
  return 'acp'
end

function Source:get_trigger_characters()
  return { '@', '/' }
end

--- A mention or command is one keyword, `@` or `/` included.
function Source:get_keyword_pattern()
  return [[\%(@\|/\)\S*]]
end

--- `params.context`: nvim-cmp's (bufnr, cursor = { row (1-based), col
--- (1-based) }, cursor_line).
function Source:complete(params, callback)
  local ctx = params.context
  local row, col = ctx.cursor.row, ctx.cursor.col - 1
  local res = require('acp.completion').complete(ctx.bufnr, row, ctx.cursor_line, col)
  if not res then
    return callback({ items = {}, isIncomplete = false })
  end
  local items = require('acp.completion').lsp_items(res, row, col)
  callback({ items = items, isIncomplete = true })
end

return Source
