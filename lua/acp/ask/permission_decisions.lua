--- `:AcpPermissions [reset]`: the "always" answers given this session and
--- the rules allowed by config (see permission.lua).
local config = require('acp.config')

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

local M = {}

--- `:AcpPermissions [reset]`: the "always" answers you gave this session
--- (the agent remembers them; the plugin never answers with them) and the
--- rules allowed by config.
function M.decisions(view, reset)
  local core = require('acp.core')
  if not (view and core.is_loaded()) then
    notify('acp.nvim: no chat in this tab')
    return
  end
  if reset then
    core.forget_decisions(view.thread)
    notify('acp.nvim: the list of "always" answers was cleared')
    return {}
  end
  local d = core.decisions(view.thread) or {}
  local lines = {}
  for _, c in ipairs(d) do
    lines[#lines + 1] = ('  %s `%s`: %s'):format(c.kind, c.text, c.option)
  end
  local rules = {}
  for _, r in ipairs(config.options.permissions.auto_allow) do
    local rule = type(r) == 'table' and r or { kind = r }
    rules[#rules + 1] = rule.kind .. ' ' .. (rule.pattern or '*')
  end
  local msg = (#lines > 0 and ('"Always" answers this session (the agent remembers them):\n' .. table.concat(lines, '\n')) or 'No "always" answers this session.')
    .. '\nAllowed by config: ' .. (#rules > 0 and table.concat(rules, ', ') or 'none')
  notify(msg)
  return d
end

return M
