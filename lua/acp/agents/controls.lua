--- Agent controls of a chat: config options (`:AcpConfig`), the model
--- (`:AcpModel`) and the mode (`:AcpMode`), what the winbar shows of them
--- and of the usage, and `acp.status()` for statuslines.
---
--- Agents send config options (`configOptions`, with categories `mode`,
--- `model`, `thought_level`...) or the older `modes` / `models`; some send
--- both. Config options win: a category they cover is never taken from the
--- older fields, so nothing shows twice.
local M = {}

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.INFO)
end

--- Sends a view request (`acp.core.request`); `on_reply(ev)` gets the
--- `reply` event (`ev.result` or `ev.error`). A refused call is told, never
--- raised.
function M.request(view, method, params, on_reply)
  local bridge = require('acp.core.dispatch')
  local id = bridge.request(on_reply or function() end)
  local ok, err = pcall(require('acp.core').request, view.thread, method, params or vim.empty_dict(), id)
  if not ok then
    bridge.requests[id] = nil
    notify(tostring(err):gsub('^runtime error: ', ''), vim.log.levels.WARN)
  end
  return ok
end

--- The session's config options (a list, possibly empty).
function M.options(view)
  local o = view.info.config_options
  return type(o) == 'table' and o or {}
end

--- The config option of `category` (`mode`, `model`, `thought_level`...).
function M.find(view, category)
  for _, o in ipairs(M.options(view)) do
    if type(o) == 'table' and o.category == category then
      return o
    end
  end
end

--- The values of a select option, groups flattened: { value, name,
--- description?, group? }.
function M.choices(option)
  local out = {}
  for _, o in ipairs(type(option.options) == 'table' and option.options or {}) do
    if type(o) == 'table' and type(o.options) == 'table' then
      for _, c in ipairs(o.options) do
        if type(c) == 'table' and c.value ~= nil then
          out[#out + 1] = { value = c.value, name = c.name or c.value, description = c.description, group = o.name or o.group }
        end
      end
    elseif type(o) == 'table' and o.value ~= nil then
      out[#out + 1] = { value = o.value, name = o.name or o.value, description = o.description }
    end
  end
  return out
end

--- The option's current value as the user reads it (the value only: callers
--- that list options put the name in front).
function M.current_label(option)
  if option.type == 'boolean' then
    return option.currentValue and 'on' or 'off'
  end
  for _, c in ipairs(M.choices(option)) do
    if c.value == option.currentValue then
      return tostring(c.name)
    end
  end
  return option.currentValue ~= nil and tostring(option.currentValue) or nil
end

--- Sends `session/set_config_option`; the agent's answer (the whole list)
--- reaches the chat as a `config_options` event.
function M.set_option(view, option, value)
  local params = { configId = option.id, value = value }
  if option.type == 'boolean' then
    params.type = 'boolean'
  end
  return M.request(view, 'session/set_config_option', params, function(ev)
    if ev.error then
      notify(('the agent refused %s = %s: %s'):format(option.id, tostring(value), ev.error), vim.log.levels.ERROR)
    end
  end)
end

local function format_choice(c)
  local of = require('acp.util.text').of
  local s = of(c.name) or '?'
  if c.description ~= nil and c.description ~= vim.NIL then
    s = s .. ': ' .. of(c.description)
  end
  if c.group ~= nil and c.group ~= vim.NIL then
    s = s .. ' [' .. of(c.group) .. ']'
  end
  return s
end

--- A picker's title: "Mode of claude (current: Ask)". `what` is the
--- option's name (capitalized), `current` the current value's label.
function M.title(view, what, current)
  local of = require('acp.util.text').of
  local name = (of(what) or '?'):gsub('^%l', string.upper)
  local s = ('%s of %s'):format(name, of(view.agent) or '?')
  if current ~= nil and current ~= '' then
    s = s .. (' (current: %s)'):format(of(current) or '?')
  end
  return s
end

--- Sets `option` to `value` (a value id or name; 'on'/'off' for a
--- boolean), or asks with vim.ui.select when `value` is nil.
function M.choose_value(view, option, value)
  if option.type == 'boolean' then
    local function set(v)
      M.set_option(view, option, v)
    end
    if value and value ~= '' then
      local v = ({ on = true, ['true'] = true, ['1'] = true, off = false, ['false'] = false, ['0'] = false })[value]
      if v == nil then
        return notify(('%s takes on or off, not %q'):format(option.id, value), vim.log.levels.WARN)
      end
      return set(v)
    end
    return require('acp.util.escape').select({ true, false }, {
      prompt = M.title(view, option.name or option.id, M.current_label(option)),
      format_item = function(v)
        return (v and 'on' or 'off') .. (v == option.currentValue and '  (current)' or '')
      end,
    }, function(v)
      if v ~= nil then
        set(v)
      end
    end)
  end
  local choices = M.choices(option)
  if #choices == 0 then
    return notify(('%s offers no values'):format(option.name or option.id), vim.log.levels.WARN)
  end
  if value and value ~= '' then
    for _, c in ipairs(choices) do
      if c.value == value or c.name == value then
        return M.set_option(view, option, c.value)
      end
    end
    local ids = vim.tbl_map(function(c)
      return tostring(c.value)
    end, choices)
    return notify(
      ('unknown %s %q (values: %s)'):format(option.id, value, table.concat(ids, ', ')),
      vim.log.levels.WARN
    )
  end
  require('acp.util.escape').select(choices, {
    prompt = M.title(view, option.name or option.id, M.current_label(option)),
    format_item = function(c)
      return format_choice(c) .. (c.value == option.currentValue and '  (current)' or '')
    end,
  }, function(c)
    if c then
      M.set_option(view, option, c.value)
    end
  end)
end

--- `:AcpConfig [id [value]]`: every config option; pick one, then its value.
function M.config(view, id, value)
  local options = M.options(view)
  if #options == 0 then
    return notify(('%s offers no config options'):format(view.agent))
  end
  if id and id ~= '' then
    for _, o in ipairs(options) do
      if o.id == id then
        return M.choose_value(view, o, value)
      end
    end
    local ids = vim.tbl_map(function(o)
      return tostring(o.id)
    end, options)
    return notify(('unknown config option %q (options: %s)'):format(id, table.concat(ids, ', ')), vim.log.levels.WARN)
  end
  require('acp.util.escape').select(options, {
    prompt = M.title(view, 'config options'),
    format_item = function(o)
      local of = require('acp.util.text').of
      return ('%s: %s'):format(of(o.name) or of(o.id) or '?', M.current_label(o) or '?')
    end,
  }, function(o)
    if o then
      M.choose_value(view, o)
    end
  end)
end

--- The legacy `models` (`availableModels`, `currentModelId`), if any.
local function legacy_models(view)
  local m = view.info.models
  return type(m) == 'table' and type(m.availableModels) == 'table' and m or nil
end

--- `:AcpModel [id]`: the `model` config option, else the legacy models
--- (`session/set_model`).
function M.model(view, id)
  local option = M.find(view, 'model')
  if option then
    return M.choose_value(view, option, id)
  end
  local models = legacy_models(view)
  if not models or #models.availableModels == 0 then
    return notify(('%s offers no models'):format(view.agent))
  end
  local function set(model_id)
    M.request(view, 'session/set_model', { modelId = model_id }, function(ev)
      if ev.error then
        return notify(('the agent refused model `%s`: %s'):format(model_id, ev.error), vim.log.levels.ERROR)
      end
      models.currentModelId = model_id
      view:_update_winbar()
    end)
  end
  local list = models.availableModels
  if id and id ~= '' then
    for _, m in ipairs(list) do
      if m.modelId == id or m.name == id then
        return set(m.modelId)
      end
    end
    local ids = vim.tbl_map(function(m)
      return tostring(m.modelId)
    end, list)
    return notify(('unknown model %q (models: %s)'):format(id, table.concat(ids, ', ')), vim.log.levels.WARN)
  end
  local current
  for _, m in ipairs(list) do
    if m.modelId == models.currentModelId then
      current = m.name or m.modelId
    end
  end
  require('acp.util.escape').select(list, {
    prompt = M.title(view, 'model', current or models.currentModelId),
    format_item = function(m)
      local of = require('acp.util.text').of
      return (of(m.name) or of(m.modelId) or '?') .. (m.description and (': ' .. (of(m.description) or '')) or '')
        .. (m.modelId == models.currentModelId and '  (current)' or '')
    end,
  }, function(m)
    if m then
      set(m.modelId)
    end
  end)
end

--- `:AcpMode [id]` through the `mode` config option; false when the agent
--- has none (the caller falls back to the legacy modes).
function M.mode(view, id)
  local option = M.find(view, 'mode')
  if not option then
    return false
  end
  M.choose_value(view, option, id)
  return true
end

--- Completion of values for `:AcpModel` / `:AcpMode` / `:AcpConfig {id}`.
function M.complete_values(view, category, lead)
  local out = {}
  local option = M.find(view, category)
  if option then
    for _, c in ipairs(M.choices(option)) do
      out[#out + 1] = tostring(c.value)
    end
  elseif category == 'model' and legacy_models(view) then
    for _, m in ipairs(view.info.models.availableModels) do
      out[#out + 1] = tostring(m.modelId)
    end
  elseif category == 'mode' then
    for _, m in ipairs((view.info.modes or {}).availableModes or {}) do
      out[#out + 1] = m.id
    end
  end
  return vim.tbl_filter(function(v)
    return vim.startswith(v, lead or '')
  end, out)
end

-- What the chat shows -----------------------------------------------------------------

--- The current mode's name: the `mode` config option, else the legacy mode.
function M.mode_name(view)
  local option = M.find(view, 'mode')
  if option then
    return M.current_label(option)
  end
  local id = view.info.mode
  if type(id) ~= 'string' then
    return nil
  end
  for _, m in ipairs((view.info.modes or {}).availableModes or {}) do
    if m.id == id then
      return m.name or id
    end
  end
  return id
end

--- The current model's name: the `model` config option, else the legacy one.
function M.model_name(view)
  local option = M.find(view, 'model')
  if option then
    return M.current_label(option)
  end
  local models = legacy_models(view)
  if models and models.currentModelId then
    for _, m in ipairs(models.availableModels) do
      if m.modelId == models.currentModelId then
        return m.name or m.modelId
      end
    end
    return tostring(models.currentModelId)
  end
end

--- The reasoning effort (`thought_level` config option).
function M.effort_name(view)
  local option = M.find(view, 'thought_level')
  return option and M.current_label(option) or nil
end

--- Usage as numbers: context used/size and percent, cost, the last
--- turn's token count.
function M.usage(view)
  local u = type(view.info.usage) == 'table' and view.info.usage or {}
  local t = type(view.info.turn_usage) == 'table' and view.info.turn_usage or {}
  local out = {}
  if type(u.used) == 'number' and type(u.size) == 'number' and u.size > 0 then
    out.used, out.size = u.used, u.size
    out.percent = math.floor(u.used * 100 / u.size + 0.5)
  end
  if type(u.cost) == 'table' and type(u.cost.amount) == 'number' then
    out.cost = { amount = u.cost.amount, currency = u.cost.currency or 'USD' }
  end
  if type(t.totalTokens) == 'number' then
    out.tokens = t.totalTokens
  end
  return out
end

local function short_number(n)
  if n >= 1e6 then
    return ('%.1fM'):format(n / 1e6)
  elseif n >= 1e3 then
    return ('%.1fk'):format(n / 1e3)
  end
  return tostring(n)
end

--- The usage as the winbar shows it: "ctx 42% · $0.12 · 12.3k tok".
function M.usage_text(view)
  local u = M.usage(view)
  local parts = {}
  if u.percent then
    parts[#parts + 1] = ('ctx %d%%'):format(u.percent)
  end
  if u.cost then
    local symbol = u.cost.currency == 'USD' and '$' or (u.cost.currency .. ' ')
    parts[#parts + 1] = ('%s%.2f'):format(symbol, u.cost.amount)
  end
  if u.tokens then
    parts[#parts + 1] = short_number(u.tokens) .. ' tok'
  end
  return #parts > 0 and table.concat(parts, ' · ') or nil
end

return M
