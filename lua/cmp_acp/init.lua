--- nvim-cmp source for acp.nvim's chat input: `@` mentions (files,
--- buffers, @diagnostics, @selection) and the agent's `/` commands.
---
--- acp.nvim registers it by itself whenever nvim-cmp loads, before or
--- after the first chat (lazy-loaded on InsertEnter included): only name it
--- in the input's sources:
---
---   require('cmp').setup.filetype('acpchat_input', { sources = { { name = 'acp' } } })
---
--- Registering it by hand as well (`cmp.register_source('acp',
--- require('cmp_acp').new())`) is harmless: of several `acp` sources only
--- the first registered answers, so no item shows twice. Loaded only by
--- nvim-cmp; with the source enabled acp.nvim's own popup steps aside
--- (`completion = 'auto'`).
local Source = {}
Source.__index = Source

function Source.new()
  return setmetatable({}, Source)
end

--- The first registered of nvim-cmp's sources named `acp` that are this
--- source's instances (nil when nvim-cmp cannot list them).
local function first_registered()
  local cmp = package.loaded.cmp
  if type(cmp) ~= 'table' or type(cmp.get_registered_sources) ~= 'function' then
    return nil
  end
  local ok, sources = pcall(cmp.get_registered_sources)
  local first, first_id
  for id, s in pairs(ok and type(sources) == 'table' and sources or {}) do
    if type(s) == 'table' and s.name == 'acp' and getmetatable(s.source) == Source then
      local n = tonumber(s.id or id) or math.huge
      if not first or n < first_id then
        first, first_id = s.source, n
      end
    end
  end
  return first
end

--- In the chat input only, and only one `acp` source answers when it was
--- registered twice (by hand and by acp.nvim).
function Source:is_available()
  if vim.bo.filetype ~= 'acpchat_input' then
    return false
  end
  local first = first_registered()
  return first == nil or first == self
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

--- The item's documentation, filled lazily (nvim-cmp asks when the entry
--- is selected, for its documentation window, and on confirm): a
--- command's description and input hint, a file's or buffer's first
--- lines. Calls back with the item and its documentation set.
function Source:resolve(completion_item, callback)
  require('acp.completion').resolve(completion_item, callback)
end

-- No `execute`: accepting an item inserts its text and nothing else is
-- recorded, as with the built-in popup; what a mention sends is read from
-- the message when it is sent.

return Source
