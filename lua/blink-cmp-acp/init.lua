--- blink.cmp source for acp.nvim's chat input: `@` mentions (files,
--- buffers, @diagnostics, @selection) and the agent's `/` commands.
---
---   sources = {
---     per_filetype = { acpchat_input = { 'acp' } },
---     providers = { acp = { name = 'ACP', module = 'blink-cmp-acp' } },
---   }
---
--- Loaded only by blink.cmp; with it enabled acp.nvim's own popup steps
--- aside (`completion = 'auto'`).
---@class blink.cmp.Source
local Source = {}
Source.__index = Source

function Source.new(opts)
  return setmetatable({ opts = opts or {} }, Source)
end

function Source:enabled()
  return vim.bo.filetype == 'acpchat_input'
end

function Source:get_trigger_characters()
  return { '@', '/' }
end

--- `context`: blink.cmp's (bufnr, cursor = { row (1-based), col (0-based) }, line).
function Source:get_completions(context, callback)
  local row, col = context.cursor[1], context.cursor[2]
  local res = require('acp.completion').complete(context.bufnr, row, context.line, col)
  if not res then
    callback({ is_incomplete_forward = false, is_incomplete_backward = false, items = {} })
    return function() end
  end
  local items = require('acp.completion').lsp_items(res, row, col)
  -- The file list narrows as more is typed: ask again on each keystroke.
  callback({ is_incomplete_forward = true, is_incomplete_backward = true, items = items })
  return function() end
end

--- The item's documentation, filled lazily (blink.cmp asks when the menu
--- selects an item with `completion.documentation.auto_show`, or on
--- `show_documentation`, and before accepting): a command's description
--- and input hint, a file's or buffer's first lines. Calls back with the
--- item and its documentation set.
function Source:resolve(item, callback)
  require('acp.completion').resolve(item, callback)
end

-- No `execute`: blink's default accept inserts the item's text and
-- nothing else is recorded, as with the built-in popup; what a mention
-- sends is read from the message when it is sent.

return Source
