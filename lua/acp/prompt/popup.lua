--- Whether the built-in popup (`vim.fn.complete` from TextChangedI in the
--- chat input) opens as `@` or `/` is typed, or steps aside for a
--- completion plugin's source (config `completion`). The prompt's mentions
--- and slash commands ask it; it knows no module but the config.
local M = {}

--- Whether `providers` of a blink.cmp config lists our module in the list
--- used for chat inputs.
local function blink_enabled()
  local ok, cfg = pcall(require, 'blink.cmp.config')
  local sources = ok and type(cfg) == 'table' and cfg.sources
  if type(sources) ~= 'table' or type(sources.providers) ~= 'table' then
    return false
  end
  local id
  for name, p in pairs(sources.providers) do
    if type(p) == 'table' and p.module == 'blink-cmp-acp' then
      id = name
    end
  end
  if not id then
    return false
  end
  local list = type(sources.per_filetype) == 'table' and sources.per_filetype.acpchat_input or sources.default
  if type(list) == 'function' then
    local lok, res = pcall(list)
    list = lok and res or {}
  end
  return type(list) == 'table' and vim.tbl_contains(list, id)
end

--- Whether nvim-cmp has a source named `acp` registered (nil when it
--- cannot tell: nvim-cmp not loaded, or without `get_registered_sources`).
---@return boolean?
function M.cmp_has_source()
  local cmp = package.loaded.cmp
  if type(cmp) ~= 'table' or type(cmp.get_registered_sources) ~= 'function' then
    return nil
  end
  local ok, sources = pcall(cmp.get_registered_sources)
  for _, s in pairs(ok and type(sources) == 'table' and sources or {}) do
    if type(s) == 'table' and s.name == 'acp' then
      return true
    end
  end
  return false
end

--- Whether nvim-cmp serves the current buffer with the `acp` source: a
--- source of that name is registered (when nvim-cmp can list them), the
--- config for the buffer lists it, and completion is not disabled there
--- (`enabled`). A config naming `acp` before the source is registered
--- (nvim-cmp loaded after the first chat) leaves the built-in popup on.
local function cmp_enabled()
  local ok, cmp = pcall(require, 'cmp')
  if not ok or type(cmp) ~= 'table' or type(cmp.get_config) ~= 'function' then
    return false
  end
  if M.cmp_has_source() == false then
    return false
  end
  local cok, cfg = pcall(cmp.get_config)
  cfg = cok and type(cfg) == 'table' and cfg or {}
  local enabled = cfg.enabled
  if type(enabled) == 'function' then
    local eok, res = pcall(enabled)
    enabled = not eok or (res and true or false)
  end
  if enabled == false then
    return false
  end
  for _, s in ipairs(type(cfg.sources) == 'table' and cfg.sources or {}) do
    if type(s) == 'table' and s.name == 'acp' then
      return true
    end
  end
  return false
end

--- True when a loaded completion plugin has our source enabled.
function M.plugin_source_enabled()
  return (package.loaded['blink.cmp'] ~= nil and blink_enabled()) or (package.loaded.cmp ~= nil and cmp_enabled())
end

--- Whether the built-in popup opens as `@` or `/` is typed (config
--- `completion`): 'builtin' always, 'none' never, 'auto' unless a
--- completion plugin's source is enabled. The omnifunc stays either way.
function M.builtin_popup()
  local mode = require('acp.config').options.completion
  if mode == 'builtin' then
    return true
  elseif mode == 'none' then
    return false
  end
  return not M.plugin_source_enabled()
end

--- `<C-y>` and `<Tab>` in the input `buf` while the built-in popup shows:
--- accept the selected entry, or the first one when none is selected (the
--- menu opens with nothing selected, so a single match is taken at once).
--- Without a popup both keep their meaning (`<Tab>` inserts a tab).
--- Completion plugins that map these keys wrap these mappings as their
--- fallback, so their menus behave as configured.
---@param buf integer
function M.keys(buf)
  local function accept(key)
    return function()
      if vim.fn.pumvisible() == 0 then
        return key
      end
      local info = vim.fn.complete_info({ 'selected', 'items' })
      if info.selected ~= -1 then
        return '<C-y>'
      end
      return #(info.items or {}) > 0 and '<C-n><C-y>' or key
    end
  end
  local opts = { buffer = buf, expr = true }
  vim.keymap.set('i', '<C-y>', accept('<C-y>'), vim.tbl_extend('force', opts, { desc = 'Accept the completion (the first entry when none is selected)' }))
  vim.keymap.set('i', '<Tab>', accept('<Tab>'), vim.tbl_extend('force', opts, { desc = 'Accept the completion, or insert a tab' }))
end

return M
