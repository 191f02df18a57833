--- Every chat's state in sight. Per chat: what waits for the user
--- ("waiting for you": a permission request, a request for input, a
--- sign-in) and whether a turn ended while the chat was out of sight
--- ("done while you were away", cleared once the user looks at it: its
--- window in the current tab). The tab labels (acp.chat.layout),
--- `require('acp').status()` and the `User AcpStateChanged` autocmd
--- (acp.events) read it from here.
local api = vim.api
local chats = require('acp.chat')
local notify = require('acp.chat.notify')

local M = {}

-- Per view: { ended = turns ended when last looked, done_unseen, sign_in,
-- key = the state last announced }. Weak: a closed chat is forgotten.
local marks = setmetatable({}, { __mode = 'k' })

local function mark_of(view)
  local m = marks[view]
  if not m then
    m = { ended = view.turns_ended, done_unseen = false, sign_in = false }
    marks[view] = m
  end
  return m
end

--- The chat is in sight: its transcript window is in the current tab.
---@param view acp.ChatView
function M.in_sight(view)
  return view:is_visible() and api.nvim_win_get_tabpage(view.win) == api.nvim_get_current_tabpage()
end

--- What in `view` waits for the user: 'permission', 'input' (the
--- agent's request for input), 'sign-in', or nil.
---@param view acp.ChatView
---@return 'permission'|'input'|'sign-in'|nil
function M.waiting_for(view)
  for _, item in ipairs(require('acp.ask.permission').queue) do
    if item.view == view then
      return 'permission'
    end
  end
  for _, item in ipairs(require('acp.ask.elicitation').queue) do
    if item.thread == view.thread then
      return 'input'
    end
  end
  if mark_of(view).sign_in and view.state ~= 'running' then
    return 'sign-in'
  end
end

--- The chat's attention state.
---@param view acp.ChatView
---@return { state: acp.TurnState, waiting: boolean, waiting_for?: string, done_unseen: boolean }
function M.of(view)
  local waiting = M.waiting_for(view)
  return { state = view.state, waiting = waiting ~= nil, waiting_for = waiting, done_unseen = mark_of(view).done_unseen }
end

local redraw_due = false

local function redraw_tabline()
  if redraw_due then
    return
  end
  redraw_due = true
  vim.schedule(function()
    redraw_due = false
    pcall(vim.cmd, 'redrawtabline')
  end)
end

--- Brings `view`'s marks up to date (after a drain, with its `events`; or
--- when the user moves or a question comes or goes). A change fires
--- `User AcpStateChanged` and redraws the tab labels.
---@param view acp.ChatView
---@param events? acp.Event[]
function M.refresh(view, events)
  local m = mark_of(view)
  for _, ev in ipairs(events or {}) do
    -- Each status says whether the agent waits for a sign-in (the core
    -- marks it when the agent refused with ACP's "auth required").
    if ev.type == 'status' then
      m.sign_in = ev.sign_in == true
    end
  end
  local seen = M.in_sight(view)
  local ended = view.turns_ended ~= m.ended
  if ended then
    m.ended = view.turns_ended
    m.done_unseen = m.done_unseen or not seen
  end
  if seen then
    m.done_unseen = false
  end
  local s = M.of(view)
  -- Told once when out of sight (acp.chat.notify).
  view:_guard(nil, notify.observe, view, { events = events, ended = ended, seen = seen, waiting_for = s.waiting_for })
  local key = table.concat({ s.state, s.waiting_for or '', tostring(s.done_unseen) }, '|')
  if key == m.key then
    return
  end
  m.key = key
  require('acp.events').emit('AcpStateChanged', {
    agent = view.agent,
    thread = view.thread,
    state = s.state,
    waiting = s.waiting,
    waiting_for = s.waiting_for,
    done_unseen = s.done_unseen,
  })
  redraw_tabline()
end

local all_due = false

--- Refreshes every chat, once per loop iteration however often it is
--- asked (the user moved; a question came or went).
function M.refresh_all()
  if all_due then
    return
  end
  all_due = true
  vim.schedule(function()
    all_due = false
    for _, view in pairs(chats.by_thread) do
      pcall(M.refresh, view)
    end
  end)
end

local group = api.nvim_create_augroup('acp_attention', { clear = true })
api.nvim_create_autocmd({ 'TabEnter', 'WinEnter', 'BufWinEnter', 'WinClosed' }, {
  group = group,
  callback = function()
    M.refresh_all()
  end,
})
require('acp.ask.changes').on_change(M.refresh_all)

return M
