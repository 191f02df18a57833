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

--- Whether nvim-cmp's config for the current buffer lists the `acp` source.
local function cmp_enabled()
  local ok, cmp = pcall(require, 'cmp')
  if not ok or type(cmp) ~= 'table' or type(cmp.get_config) ~= 'function' then
    return false
  end
  local cok, cfg = pcall(cmp.get_config)
  for _, s in ipairs(cok and type(cfg) == 'table' and cfg.sources or {}) do
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

return M
