--- Notifications (`:h acp-notify`): when something happens in a chat the
--- user cannot see (not in the current tab, or Neovim without focus while
--- the terminal reports focus), say so once: a turn ended, a permission
--- request or a request for input waits, the agent wants a sign-in, or it
--- failed. Each occurrence gives one `vim.notify` (short, agent text
--- escaped, never a hit-enter prompt), one `User AcpAttention` and, when
--- asked for, one desktop notification (`notify-send`, `osascript`).
--- acp.chat.attention tells this file about every refresh of a chat's
--- marks; it requires nothing of the layer.
local api = vim.api
local escape = require('acp.util.escape')

local M = {}

-- Neovim has focus, as far as the terminal reports it (FocusLost and
-- FocusGained; a terminal that reports nothing leaves it true).
local focused = true

--- Whether Neovim has focus (the terminal's focus reports).
function M.focused()
  return focused
end

-- Per view: what was already told (or seen): the permission and input
-- requests (queue items), whether the sign-in wait was. Weak: a closed
-- chat is forgotten.
local told = setmetatable({}, { __mode = 'k' })

local function told_of(view)
  local t = told[view]
  if not t then
    t = { items = setmetatable({}, { __mode = 'k' }), sign_in = false }
    told[view] = t
  end
  return t
end

local WHAT = {
  turn_end = 'finished its turn',
  permission = 'asks for permission',
  elicitation = 'asks for input',
  error = 'failed',
  sign_in = 'needs you to sign in',
}

local LEVEL = {
  turn_end = vim.log.levels.INFO,
  permission = vim.log.levels.WARN,
  elicitation = vim.log.levels.WARN,
  error = vim.log.levels.ERROR,
  sign_in = vim.log.levels.WARN,
}

--- Agent text for a desktop notification: given as one argv element, so
--- nothing in it is run or expanded; control characters other than the
--- line break are dropped, and it is capped.
local function desktop_text(s)
  s = tostring(s or ''):gsub('\r\n', '\n'):gsub('[%z\1-\9\11-\31\127]', '')
  if vim.fn.strchars(s) > 300 then
    s = vim.fn.strcharpart(s, 0, 299) .. '…'
  end
  return s
end

--- The command of a desktop notification on this system, or nil when
--- there is none (then nothing is shown).
---@param summary string
---@param body string
---@return string[]?
function M.desktop_cmd(summary, body)
  if vim.fn.has('mac') == 1 then
    if vim.fn.executable('osascript') == 1 then
      -- The texts are the run handler's arguments: never AppleScript source.
      return {
        'osascript',
        '-e', 'on run argv',
        '-e', 'display notification (item 2 of argv) with title (item 1 of argv)',
        '-e', 'end run',
        summary, body,
      }
    end
  elseif vim.fn.executable('notify-send') == 1 then
    return { 'notify-send', '--app-name=acp.nvim', '--', summary, body }
  end
end

local function desktop(summary, body)
  local cmd = M.desktop_cmd(summary, body)
  if cmd then
    pcall(vim.system, cmd, { text = true, stdin = false }, function() end)
  end
end

--- Tells the user `reason` about `view`, when the options allow it.
---@param view acp.ChatView
---@param reason 'turn_end'|'permission'|'elicitation'|'error'|'sign_in'
---@param detail? string What it is about (a tool call's title, the agent's question, the error); agent text.
local function tell(view, reason, detail)
  local opts = require('acp.config').options.notify
  if not (opts.enabled and opts.events[reason]) then
    return
  end
  local title = view.info and type(view.info.title) == 'string' and view.info.title ~= '' and view.info.title or nil
  detail = type(detail) == 'string' and detail ~= '' and detail or (reason == 'turn_end' and title) or nil
  local label = ('ACP %s %d'):format(view.agent, view.thread)
  local where = ''
  if view.tab and api.nvim_tabpage_is_valid(view.tab) and #api.nvim_list_tabpages() > 1 then
    where = (' (tab %d)'):format(api.nvim_tabpage_get_number(view.tab))
  end
  local msg = ('acp.nvim: %s %s%s%s'):format(escape.line(label, 40), WHAT[reason], detail and (': ' .. escape.line(detail, 80)) or '', where)
  escape.notice(msg, LEVEL[reason])
  require('acp.events').emit('AcpAttention', {
    reason = reason,
    agent = view.agent,
    thread = view.thread,
    title = title,
    message = detail,
  })
  if opts.desktop then
    desktop(('acp.nvim: %s %s'):format(desktop_text(label), WHAT[reason]), desktop_text(detail or title or ''))
  end
end

--- One refresh of `view`'s marks (acp.chat.attention): `ended` a turn
--- ended since the last one, `events` the drain's events (nil when the
--- user moved or a question came or went), `seen` the chat is in sight,
--- `waiting_for` what it waits for now.
---@param view acp.ChatView
---@param r { events?: acp.Event[], ended: boolean, seen: boolean, waiting_for?: string }
function M.observe(view, r)
  local t = told_of(view)
  local away = not (r.seen and focused)
  -- The drain's failure, and the chat's own wording of it.
  local failed, notice, cancelled
  for _, ev in ipairs(r.events or {}) do
    if ev.type == 'added' and ev.kind == 'notice' and type(ev.lines) == 'table' then
      notice = vim.trim(table.concat(ev.lines, ' '))
    elseif ev.type == 'turn_ended' and ev.stop_reason == 'error' then
      failed = true
    elseif ev.type == 'turn_ended' then
      -- The user stopped it: nothing to tell.
      cancelled = ev.stop_reason == 'cancelled'
    elseif ev.type == 'status' and ev.state == 'disconnected' and ev.sign_in ~= true then
      failed = true
    end
  end
  if away then
    if failed then
      tell(view, 'error', notice)
    elseif r.ended and not cancelled and view.state ~= 'disconnected' then
      tell(view, 'turn_end')
    end
  end
  -- Questions: each told once, when it comes while the chat is out of
  -- sight; one the user saw coming is not told later.
  for _, item in ipairs(require('acp.ask.permission').queue) do
    if item.view == view and not t.items[item] then
      t.items[item] = true
      if away then
        local p = type(item.payload) == 'table' and item.payload or {}
        tell(view, 'permission', type(p.title) == 'string' and p.title or nil)
      end
    end
  end
  for _, item in ipairs(require('acp.ask.elicitation').queue) do
    if item.thread == view.thread and not t.items[item] then
      t.items[item] = true
      if away then
        local p = type(item.payload) == 'table' and item.payload or {}
        tell(view, 'elicitation', type(p.message) == 'string' and p.message or nil)
      end
    end
  end
  local sign_in = r.waiting_for == 'sign-in'
  if sign_in and not t.sign_in and away then
    tell(view, 'sign_in')
  end
  t.sign_in = sign_in
end

local group = api.nvim_create_augroup('acp_notify', { clear = true })
api.nvim_create_autocmd('FocusLost', {
  group = group,
  callback = function()
    focused = false
  end,
})
api.nvim_create_autocmd('FocusGained', {
  group = group,
  callback = function()
    focused = true
  end,
})

return M
