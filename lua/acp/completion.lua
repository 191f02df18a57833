--- `@` mentions and `/` commands for completion plugins. The sources
--- themselves live in lua/blink-cmp-acp (blink.cmp) and lua/cmp_acp
--- (nvim-cmp): thin adapters over `M.complete`. Whether the built-in popup
--- steps aside for them is decided in acp.prompt.popup. Above the prompt
--- layer (its mentions and commands), below the chat (a new chat
--- registers the nvim-cmp source).
-- May use: prompt.
local M = {}

--- What can be completed at byte `col` (0-based) of 1-based `row` in the
--- chat input `buf`: the 0-based byte column where the replaced text
--- starts, and the items; nil when the cursor is not in a mention or
--- command, or `buf` is no chat input.
---@param buf integer
---@param row integer
---@param line string
---@param col integer
---@return { start: integer, items: { word: string, label: string, detail?: string, doc?: string, kind: 'command'|'file'|'buffer'|'special' }[] }?
function M.complete(buf, row, line, col)
  local mention = require('acp.prompt.mention')
  local view = mention.views[buf]
  if not view then
    return nil
  end
  local name = require('acp.prompt.slash').command_at(row, line, col)
  if name then
    local items = {}
    for _, it in ipairs(require('acp.prompt.slash').items(view, name)) do
      items[#items + 1] = { word = it.word, label = it.abbr, detail = it.menu, doc = it.info, kind = 'command' }
    end
    return { start = 0, items = items }
  end
  local at, base = mention.mention_at(line, col)
  if not at then
    return nil
  end
  local kinds = { file = 'file', buf = 'buffer', diag = 'special', sel = 'special' }
  local items = {}
  for _, it in ipairs(mention.candidates(view, base)) do
    items[#items + 1] = { word = it.word, label = '@' .. it.abbr, detail = it.menu, kind = kinds[it.kind] or 'file' }
  end
  -- The file list may be missing or old: refresh it for the next keystroke.
  for _, root in ipairs(mention.roots(view)) do
    if not mention.cache[root] then
      mention.refresh(root)
    end
  end
  return { start = at - 1, items = items }
end

--- LSP CompletionItemKind values (File, Reference, Keyword). Never Function
--- or Method: completion plugins append brackets to those (blink.cmp's
--- auto_brackets, nvim-autopairs' cmp recipe), and `/review` would be
--- sent as `/review ()`.
local LSP_KIND = { file = 17, buffer = 18, command = 14, special = 14 }

--- LSP InsertTextFormat.PlainText: the text is inserted as it is.
local PLAIN_TEXT = 1

--- The items of `complete()`'s result as LSP completion items (both plugin
--- sources use these), each replacing `res.start`..`col` on line `row`.
function M.lsp_items(res, row, col)
  local items = {}
  for _, it in ipairs(res.items) do
    items[#items + 1] = {
      label = it.label,
      kind = LSP_KIND[it.kind],
      filterText = it.word,
      labelDetails = it.detail and { description = it.detail } or nil,
      detail = it.detail,
      documentation = it.doc,
      insertTextFormat = PLAIN_TEXT,
      textEdit = {
        newText = it.word,
        range = {
          start = { line = row - 1, character = res.start },
          ['end'] = { line = row - 1, character = col },
        },
      },
    }
  end
  return items
end

--- Registers the nvim-cmp source once nvim-cmp is loaded, unless a source
--- named `acp` is registered already (by hand, or by an earlier call). A
--- second registration would still be harmless: only one `acp` source
--- answers (cmp_acp's `is_available`).
function M.register_cmp()
  if not package.loaded.cmp then
    return
  end
  local has = require('acp.prompt.popup').cmp_has_source()
  if has or (has == nil and M.cmp_registered) then
    return
  end
  local ok, cmp = pcall(require, 'cmp')
  if ok and type(cmp) == 'table' and type(cmp.register_source) == 'function' then
    M.cmp_registered = pcall(cmp.register_source, 'acp', require('cmp_acp').new())
  end
end

--- Registers the nvim-cmp source now if nvim-cmp is loaded, and whenever
--- it loads later: lazy.nvim's usual recipe loads nvim-cmp on InsertEnter,
--- after the first chat opened. Hooks: nvim-cmp's own `User CmpReady`
--- (its plugin file fires it once loaded), lazy.nvim's `User LazyLoad`,
--- and InsertEnter in the chat input `buf` (after lazy's handler for the
--- same event loaded the plugin).
---@param buf integer
function M.attach(buf)
  M.register_cmp()
  if not M.watching then
    M.watching = true
    vim.api.nvim_create_autocmd('User', {
      group = vim.api.nvim_create_augroup('acp_completion_cmp', { clear = true }),
      pattern = { 'CmpReady', 'LazyLoad' },
      callback = function()
        M.register_cmp()
      end,
    })
  end
  vim.api.nvim_create_autocmd('InsertEnter', {
    group = vim.api.nvim_create_augroup('acp_completion_' .. buf, { clear = true }),
    buffer = buf,
    callback = function()
      M.register_cmp()
    end,
  })
end

return M
