--- Edit and resend: `chat.keys.edit_message` on an earlier message of
--- yours in the transcript copies it into the input, which then says
--- "Editing turn N" in its winbar. Sending it puts the files back to their
--- state before turn N (acp.editor.checkpoint) and continues the
--- conversation from there:
---
--- - in a fork of the session at the agent's last message before turn N
---   (`session/fork` with `messageId`, unstable: only when the agent
---   advertises `sessionCapabilities.fork.atMessageId` and named that
---   message with a `messageId`);
--- - else in a new session of the same agent and folder, whose first
---   prompt carries the conversation up to turn N as an embedded resource
---   (`acp-transcript:///turns-1-<N-1>.md`, text/markdown), then the edited
---   message.
---
--- The transcript keeps its turns (those restored are marked by the
--- restore); a notice says how the chat goes on, and the edited message
--- follows as a new turn. `chat.keys.cancel` (or :AcpCancel) while no turn
--- runs drops the edit.
local M = {}

local api = vim.api

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.INFO)
end

--- The user entries of the transcript in order: turn N is the Nth.
---@param view acp.ChatView
---@return integer[]
function M.user_entries(view)
  local list = {}
  for index, e in pairs(view.entries) do
    if e.kind == 'user' then
      list[#list + 1] = index
    end
  end
  table.sort(list)
  return list
end

--- The turn of the user entry `index`, or nil.
function M.turn_of(view, index)
  for n, i in ipairs(M.user_entries(view)) do
    if i == index then
      return n
    end
  end
end

--- The turn whose message holds the cursor of the transcript window, or nil.
function M.turn_at_cursor(view)
  local win = api.nvim_get_current_win()
  if api.nvim_win_get_buf(win) ~= view.buf then
    return nil
  end
  local index, kind = view:entry_at(api.nvim_win_get_cursor(win)[1] - 1)
  if kind ~= 'user' then
    return nil
  end
  return M.turn_of(view, index), index
end

--- The input's winbar while editing.
function M.winbar(view)
  local keys = require('acp.config').options.chat.keys
  local hints = {}
  for _, k in ipairs({ { keys.send, 'resend' }, { keys.cancel, 'drop the edit' } }) do
    if k[1] then
      hints[#hints + 1] = k[1]:gsub('%%', '%%%%') .. ' ' .. k[2]
    end
  end
  return ('%%#AcpInputTitle# Editing turn %d %%*%%#Comment# %s%%<%%*'):format(
    view.editing.turn,
    table.concat(hints, ' · ')
  )
end

local function refresh_winbar(view)
  if view.input_win and api.nvim_win_is_valid(view.input_win) then
    vim.wo[view.input_win].winbar = view:input_winbar()
  end
end

--- Copies turn `turn`'s message into the input and marks the input as
--- editing it. Text already in the input goes to the prompt history
--- (<Up> brings it back).
---@param view acp.ChatView
---@param turn integer
function M.edit(view, turn)
  local index = M.user_entries(view)[turn]
  if not index then
    return notify(('there is no turn %s in this chat'):format(tostring(turn)), vim.log.levels.WARN)
  end
  local core = require('acp.core').get()
  local entry = core and core.entry(view.thread, index)
  if not (entry and entry.text) then
    return notify(('the message of turn %d is not known'):format(turn), vim.log.levels.WARN)
  end
  local old = vim.trim(table.concat(api.nvim_buf_get_lines(view.input, 0, -1, false), '\n'))
  if old ~= '' then
    require('acp.prompt.history').add(old)
    notify('the text of the input went to the prompt history (<Up> brings it back)')
  end
  api.nvim_buf_set_lines(view.input, 0, -1, false, vim.split(entry.text, '\n', { plain = true }))
  view.editing = { turn = turn, index = index }
  view:show(false)
  refresh_winbar(view)
  view:focus_input(false)
  if view.input_win and api.nvim_win_is_valid(view.input_win) then
    api.nvim_win_set_cursor(view.input_win, { api.nvim_buf_line_count(view.input), 0 })
  end
end

--- Drops the edit mode (the input keeps its text).
function M.stop(view, quiet)
  if not view.editing then
    return false
  end
  local turn = view.editing.turn
  view.editing = nil
  refresh_winbar(view)
  if not quiet then
    notify(('no longer editing turn %d: the input sends a new message'):format(turn))
  end
  return true
end

--- The `chat.keys.edit_message` key of the transcript: edits the turn
--- under the cursor; elsewhere the key does what it does in Neovim.
function M.key(view, lhs)
  local turn = M.turn_at_cursor(view)
  if turn then
    return M.edit(view, turn)
  end
  local count = vim.v.count > 0 and tostring(vim.v.count) or ''
  api.nvim_feedkeys(count .. api.nvim_replace_termcodes(lhs, true, false, true), 'n', false)
end

--- Whether the agent forks at a message (unstable `session/fork`).
local function forks_at_message(view)
  local caps = view.capabilities or {}
  local sc = type(caps.sessionCapabilities) == 'table' and caps.sessionCapabilities or {}
  return type(sc.fork) == 'table' and sc.fork.atMessageId == true
end

--- The `messageId` of the agent's last message before entry `index`.
local function message_before(view, index)
  local core = require('acp.core').get()
  for i = index - 1, 0, -1 do
    local e = view.entries[i]
    if e and e.kind == 'user' then
      return nil
    end
    if e and e.kind == 'agent' then
      local entry = core.entry(view.thread, i)
      return entry and entry.message_id
    end
  end
end

--- The first prompt of a new session: the conversation before entry
--- `index` (turns 1..turn-1) as an embedded resource (a text block when
--- the agent takes no embedded context), then the edited message.
local function transcript_block(view, index, turn)
  local core = require('acp.core').get()
  local md = core.markdown(view.thread, index)
  local uri = ('acp-transcript:///turns-1-%d.md'):format(turn - 1)
  local caps = (view.capabilities or {}).promptCapabilities or {}
  if caps.embeddedContext then
    return { type = 'resource', resource = { uri = uri, mimeType = 'text/markdown', text = md } }
  end
  return { type = 'text', text = ('The conversation so far (%s):\n\n%s'):format(uri, md) }
end

--- Sends `text` as the new message of turn `view.editing.turn`: restores
--- the files, branches the session, then sends. Returns true when it
--- started (the input is then cleared by the caller).
---@param view acp.ChatView
---@param text string
function M.submit(view, text)
  local edit = view.editing
  if view.state == 'running' then
    notify('a turn is running: wait for it to end or cancel it before resending', vim.log.levels.WARN)
    return false
  end
  if text == '' then
    notify('nothing to send', vim.log.levels.WARN)
    return false
  end
  local core = require('acp.core').get()
  if not core then
    return false
  end
  local turn, index = edit.turn, edit.index
  local fork_at = turn > 1 and forks_at_message(view) and message_before(view, index) or nil
  local note
  if fork_at then
    note = ('Edited turn %d: the agent forked the session at its answer before that turn'):format(turn)
  elseif turn == 1 then
    note = 'Edited turn 1: a new session'
  else
    note = ('Edited turn %d: a new session: the agent gets the conversation up to turn %d as context'):format(
      turn,
      turn - 1
    )
  end
  view.editing = nil
  refresh_winbar(view)

  local function send()
    local blocks, why = require('acp.prompt.context').build(view, text, { waited = true })
    if not blocks then
      return notify(why or 'nothing to send', vim.log.levels.WARN)
    end
    if not fork_at and turn > 1 then
      table.insert(blocks, 1, transcript_block(view, index, turn))
    end
    if view:send(blocks) then
      require('acp.prompt.context').sent(view)
      require('acp.prompt.history').add(text)
    end
  end

  local function branch()
    local dispatch = require('acp.core.dispatch')
    local id = dispatch.request(function(ev)
      if ev.error then
        return notify(('could not continue from turn %d: %s'):format(turn, require('acp.util.text').line(ev.error)), vim.log.levels.ERROR)
      end
      send()
    end)
    local ok, err = pcall(core.branch, view.thread, { fork = fork_at ~= nil, message_id = fork_at, note = note }, id)
    if not ok then
      dispatch.requests[id] = nil
      notify(require('acp.util.text').error(err), vim.log.levels.ERROR)
    end
  end

  -- The checkpoint of the turn (the core's turn id); none: nothing of it
  -- to put back (a turn of a kept transcript, or dropped past the cap).
  local checkpoint = require('acp.editor.checkpoint')
  local ok, list = pcall(core.checkpoints, view.thread)
  local cp
  for _, c in ipairs(ok and list or {}) do
    if c.user_index == turn - 1 then
      cp = c
    end
  end
  if not cp then
    branch()
    return true
  end
  -- The files that would change are shown first, as :AcpRestore does.
  checkpoint.restore(view, cp.id, {}, function(restored, why)
    if not restored then
      -- Not sent: the edit waits in the input again.
      view.editing = edit
      if vim.trim(table.concat(api.nvim_buf_get_lines(view.input, 0, -1, false), '\n')) == '' then
        api.nvim_buf_set_lines(view.input, 0, -1, false, vim.split(text, '\n', { plain = true }))
      end
      refresh_winbar(view)
      return notify(('edit of turn %d not sent: %s'):format(turn, require('acp.util.text').line(why or 'cancelled')), vim.log.levels.WARN)
    end
    branch()
  end)
  return true
end

--- Maps `chat.keys.edit_message` in the transcript.
function M.attach(view, map)
  local lhs = require('acp.config').options.chat.keys.edit_message
  if lhs then
    map(view.buf, 'n', lhs, function()
      M.key(view, lhs)
    end, 'Edit this message of yours and resend it (files and conversation go back to before it)')
  end
end

return M
