--- A chord typed in the chat's windows (see permission_keys.lua): answers
--- the permission request in view, or says why not.
local config = require('acp.config')
local keys = require('acp.ask.permission_keys')

local M = {}

--- A chord is typed in Insert mode as often as not: its answer must never
--- stop there at a hit-enter prompt.
local function notify(msg, level)
  require('acp.util.escape').notice('acp.nvim: ' .. msg, level or vim.log.levels.INFO)
end

--- Maps the chords in the chat's buffers (`map(buf, modes, lhs, fn, desc)`
--- maps a buffer-local key; `false` entries map nothing).
function M.attach(view, bufs, map)
  local lhs = config.options.chat.keys
  for _, c in ipairs(keys.chords) do
    for _, buf in ipairs(bufs) do
      map(buf, { 'n', 'i' }, lhs[c.key], function()
        M.chord(view, c.kind)
      end, ('Answer the permission request: %s'):format(keys.kind_names[c.kind]))
    end
  end
end

--- A chord typed in `view`'s windows: answers the request in view with the
--- option of `kind`, or says why not.
function M.chord(view, kind)
  local p = require('acp.ask.permission')
  local item = p.shown
  if not (item and item.view == view) then
    -- This chat's own request comes into view first (and the wait starts).
    for i, it in ipairs(p.queue) do
      if it.view == view and not it.undrawable then
        table.insert(p.queue, 1, table.remove(p.queue, i))
        p.render()
        notify('wait: the request is now shown; press again', vim.log.levels.WARN)
        return
      end
    end
    for _, it in ipairs(p.queue) do
      if it.view == view then
        notify('this permission request could not be shown: :AcpPermission answers it', vim.log.levels.WARN)
        return
      end
    end
    notify('no permission request is pending')
    return
  end
  if not p.in_view() then
    p.render(true)
    notify('wait: the request is now shown; press again', vim.log.levels.WARN)
    return
  end
  if not p.chords_ready() then
    notify('wait: the request just appeared; press again', vim.log.levels.WARN)
    return
  end
  local i = keys.option_of(item.payload.options, kind)
  if not i then
    notify(('this request has no "%s" option; nothing was answered'):format(keys.kind_names[kind]), vim.log.levels.WARN)
    return
  end
  p.answer_shown(item, i)
end

return M
