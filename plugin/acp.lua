-- acp.nvim commands. Nothing else happens at startup: every callback loads
-- its module on first use.
if vim.g.loaded_acp then
  return
end
vim.g.loaded_acp = true

local cmd = vim.api.nvim_create_user_command

local function complete_agent(lead)
  local names = require('acp.agents').names()
  return vim.tbl_filter(function(n)
    return n:find(lead, 1, true) == 1
  end, names)
end

cmd('AcpChat', function(o)
  require('acp.chat.commands').chat(o.args)
end, {
  nargs = '?',
  desc = 'Open or focus the agent chat of this tab; hide it from inside (with an agent: open a chat with it)',
  complete = complete_agent,
})

cmd('AcpToggle', function(o)
  require('acp.chat.commands').toggle(o.args)
end, {
  nargs = '?',
  desc = 'Show or hide the agent chat of this tab',
  complete = complete_agent,
})

cmd('AcpChats', function(o)
  require('acp.chat.layout').pick(o.args)
end, {
  nargs = '?',
  complete = function(lead)
    return require('acp.chat.layout').complete(lead)
  end,
  desc = 'List the chats and show one in this tab',
})

cmd('AcpThreads', function(o)
  require('acp.chat.threads').toggle({ past = o.bang })
end, { bang = true, desc = "Show or hide the threads view: every chat and its state (with !: the agent's past sessions too)" })

cmd('AcpSend', function(o)
  if o.range > 0 then
    require('acp.chat.commands').send_range(o)
  else
    require('acp').send(o.args, o.bang and { steer = true } or nil)
  end
end, {
  nargs = '+',
  range = true,
  bang = true,
  desc = 'Send a message to the chat of this tab (with a range: the selection attached; with !: steer the running turn)',
})

cmd('AcpAdd', function(o)
  require('acp.chat.commands').add(o)
end, {
  nargs = '?',
  range = true,
  complete = 'file',
  desc = 'Add the selection (with a range), a file, or the current buffer to the next prompt',
})

cmd('AcpContext', function(o)
  require('acp.chat.commands').context(o)
end, {
  nargs = '*',
  complete = function(_, line)
    return #vim.split(line, '%s+') <= 2 and { 'list', 'clear', 'remove' } or {}
  end,
  desc = 'List, remove or clear the context attached to the next prompt',
})

cmd('AcpImage', function(o)
  require('acp.chat.commands').image(o.args)
end, { nargs = 1, complete = 'file', desc = 'Attach a PNG, JPEG, GIF or WebP image to the next prompt' })

cmd('AcpPasteImage', function()
  require('acp.chat.commands').paste_image()
end, { desc = "Attach the clipboard's image to the next prompt" })


cmd('AcpCancel', function()
  require('acp').cancel()
end, { desc = 'Cancel the running agent turn' })

cmd('AcpBuild', function()
  require('acp').build()
end, { desc = 'Build the Rust core (cargo build --release)' })

cmd('AcpInstall', function(o)
  require('acp.agents.install').command_install(o.args)
end, {
  nargs = '?',
  complete = function(lead)
    return require('acp.agents.install').complete(lead)
  end,
  desc = 'Install an agent from the ACP registry (a picker without an id)',
})

cmd('AcpUpdate', function(o)
  require('acp.agents.install').update(o.args)
end, {
  nargs = '?',
  complete = function(lead)
    return vim.tbl_filter(function(id)
      return vim.startswith(id, lead)
    end, vim.tbl_map(function(i)
      return i.id
    end, require('acp.agents.install').list_installed()))
  end,
  desc = "Install the registry snapshot's version of installed agents",
})

cmd('AcpLog', function(o)
  require('acp').open_log(o.args)
end, {
  nargs = '?',
  complete = function()
    return { 'build' }
  end,
  desc = 'Open the acp.nvim log (or the build log with "build")',
})

cmd('AcpTrace', function()
  require('acp').trace()
end, { desc = "Show the protocol trace of the chat's agent (both directions and its stderr)" })

cmd('AcpTraceSave', function(o)
  require('acp').trace_save(o.args)
end, { nargs = 1, complete = 'file', desc = 'Save the protocol trace as JSONL, secrets redacted' })

cmd('AcpPermission', function()
  require('acp.ask.permission').focus()
end, { desc = 'Answer the pending permission request' })


cmd('AcpTerminal', function(o)
  require('acp').open_terminal(o.args)
end, {
  nargs = 1,
  complete = function(lead)
    -- The terminals the current chat's cards show.
    local view = package.loaded.acp and require('acp').current()
    local out, seen = {}, {}
    for _, card in pairs(view and view.cards or {}) do
      for _, id in ipairs(card.terminals or {}) do
        if not seen[id] and vim.startswith(id, lead) then
          seen[id] = true
          out[#out + 1] = id
        end
      end
    end
    table.sort(out)
    return out
  end,
  desc = "Open a terminal's output from the chat in a buffer",
})

cmd('AcpReview', function()
  require('acp').review()
end, { desc = 'Review every file the agent changed this session' })

cmd('AcpRestore', function(o)
  require('acp.editor.checkpoint').command(require('acp').current(), o.args)
end, { nargs = '?', desc = 'Put the files the agent changed back to before a turn' })

cmd('AcpLocations', function()
  require('acp').locations()
end, { desc = "Open the chat's quickfix list of agent locations" })

cmd('AcpPermissions', function(o)
  require('acp.ask.permission').decisions(require('acp').current(), o.args == 'reset')
end, {
  nargs = '?',
  complete = function()
    return { 'reset' }
  end,
  desc = 'Show (or reset) the permission decisions remembered this session',
})

cmd('AcpDiff', function()
  require('acp').diff()
end, { desc = 'Review the diff of the card under the cursor (or the newest one)' })

--- Completion of a control's values from the current chat.
local function complete_values(category)
  return function(lead)
    local view = package.loaded.acp and require('acp').current()
    return view and require('acp.agents.controls').complete_values(view, category, lead) or {}
  end
end

cmd('AcpMode', function(o)
  require('acp').mode(o.args)
end, {
  nargs = '?',
  complete = complete_values('mode'),
  desc = "Switch the session's mode (or pick one)",
})

cmd('AcpModel', function(o)
  require('acp').model(o.args)
end, { nargs = '?', complete = complete_values('model'), desc = "Switch the session's model (or pick one)" })

cmd('AcpConfig', function(o)
  require('acp').config(o.fargs[1], o.fargs[2])
end, {
  nargs = '*',
  complete = function(lead, line)
    local view = package.loaded.acp and require('acp').current()
    if not view then
      return {}
    end
    local words = vim.split(line, '%s+')
    local controls = require('acp.agents.controls')
    if #words <= 2 then
      local ids = vim.tbl_map(function(opt)
        return tostring(opt.id)
      end, controls.options(view))
      return vim.tbl_filter(function(id)
        return vim.startswith(id, lead)
      end, ids)
    end
    for _, opt in ipairs(controls.options(view)) do
      if opt.id == words[2] then
        if opt.type == 'boolean' then
          return { 'on', 'off' }
        end
        return vim.tbl_filter(function(v)
          return vim.startswith(v, lead)
        end, vim.tbl_map(function(c)
          return tostring(c.value)
        end, controls.choices(opt)))
      end
    end
    return {}
  end,
  desc = "Change one of the agent's config options (model, mode, effort...)",
})

cmd('AcpSessions', function()
  require('acp').sessions()
end, { desc = "List the agent's sessions: resume, close or delete one" })

cmd('AcpNew', function()
  require('acp').new_session()
end, { desc = 'Start a new session in the chat of this tab' })

cmd('AcpWorktree', function(o)
  require('acp.chat.commands').worktree(o)
end, {
  nargs = '+',
  complete = function(lead, line)
    return #vim.split(vim.trim(line), '%s+') >= 2 and complete_agent(lead) or {}
  end,
  desc = 'Make a git worktree {name} on a new branch and open a chat in it (in a new tab)',
})

cmd('AcpClose', function()
  require('acp.chat.lifecycle').close_current()
end, { desc = 'End the chat of this tab for good (in a worktree: keep, merge or remove it)' })

cmd('AcpResume', function(o)
  require('acp').resume(o.args)
end, { nargs = '?', desc = "Open a session again (default: this chat's last one)" })

cmd('AcpQueue', function(o)
  require('acp').queue(o.args)
end, {
  nargs = '*',
  complete = function()
    return { 'edit', 'drop', 'clear' }
  end,
  desc = 'Edit or drop messages waiting for the turn to end',
})

cmd('AcpElicitation', function()
  require('acp').elicitation()
end, { desc = "Move into the agent's request for input" })

cmd('AcpLogout', function()
  require('acp').logout()
end, { desc = 'Sign out of the agent (when it supports it)' })

cmd('AcpAuth', function(o)
  require('acp').auth(o.args)
end, {
  nargs = '?',
  complete = function(lead)
    local view = package.loaded.acp and require('acp').current()
    local core = require('acp.core')
    if not (view and core.is_loaded()) then
      return {}
    end
    local ok, methods = pcall(core.auth_methods, view.thread)
    local out = {}
    for _, m in ipairs(ok and methods or {}) do
      if type(m.id) == 'string' and vim.startswith(m.id, lead) then
        out[#out + 1] = m.id
      end
    end
    return out
  end,
  desc = "Sign in with one of the agent's methods",
})

cmd('AcpFanout', function(o)
  require('acp.chat.fanout').command(o.args)
end, {
  nargs = '+',
  complete = function(lead)
    local out = complete_agent(lead)
    if vim.startswith('--', lead) then
      table.insert(out, 1, '--')
    end
    return out
  end,
  desc = "Send the input's prompt (or the text after --) to a new chat per agent, each in its own git worktree and tab",
})

cmd('AcpCompare', function(o)
  require('acp.chat.fanout_compare').open(o.args)
end, {
  nargs = '?',
  complete = function(lead)
    return package.loaded['acp.chat.fanout'] and require('acp.chat.fanout').complete(lead) or {}
  end,
  desc = "Compare the changes of a fan-out's worktrees; t takes one (merges it)",
})

cmd('AcpConflict', function(o)
  require('acp.editor.conflict').open(o.args)
end, {
  nargs = '?',
  complete = function(lead)
    return require('acp.editor.conflict').complete(lead)
  end,
  desc = 'Compare a buffer with its file changed on disk (a sync conflict)',
})

-- <Plug> mappings: one per action (`:h acp-plug`). No global key is mapped
-- unless `setup({ keymaps = true })`.
local function plug(modes, name, rhs, desc)
  vim.keymap.set(modes, '<Plug>(' .. name .. ')', rhs, { desc = desc, silent = type(rhs) ~= 'string' or rhs:sub(1, 1) ~= ':' })
end
local function run(ex)
  return function()
    vim.cmd(ex)
  end
end
plug('n', 'AcpChat', run('AcpChat'), 'Open or focus the agent chat of this tab; hide it from inside')
plug('n', 'AcpChats', run('AcpChats'), 'List the chats and show one in this tab')
plug('n', 'AcpToggle', run('AcpToggle'), 'Show or hide the agent chat of this tab')
plug('n', 'AcpThreads', run('AcpThreads'), 'Show or hide the threads view')
plug('n', 'AcpSend', ':AcpSend ', 'Type a message for the chat')
plug('x', 'AcpSend', ":<C-u>'<,'>AcpSend ", 'Type a message sent with the selection attached')
plug('x', 'AcpAddSelection', function()
  require('acp.chat.commands').add_visual()
end, 'Add the selection to the next prompt')
plug('n', 'AcpAddBuffer', run('AcpAdd'), 'Add the current buffer to the next prompt')
plug('n', 'AcpContext', run('AcpContext'), 'List the context attached to the next prompt')
plug('n', 'AcpImage', ':AcpImage ', 'Attach an image file to the next prompt')
plug('n', 'AcpPasteImage', run('AcpPasteImage'), "Attach the clipboard's image to the next prompt")
plug('n', 'AcpCancel', run('AcpCancel'), 'Cancel the running agent turn')
plug('n', 'AcpClose', run('AcpClose'), 'End the chat of this tab (in a worktree: keep, merge or remove it)')
plug('n', 'AcpWorktree', ':AcpWorktree ', 'Type the name of a new git worktree to open a chat in')
plug({ 'n', 'i' }, 'AcpPermission', function()
  require('acp.ask.permission').focus()
end, 'Answer the pending permission request')
plug('n', 'AcpPermissions', run('AcpPermissions'), 'Show the permission decisions of this session')
plug('n', 'AcpReview', run('AcpReview'), 'Review every file the agent changed this session')
plug('n', 'AcpRestore', run('AcpRestore'), 'Put the files back to before a turn (pick one)')
plug('n', 'AcpDiff', run('AcpDiff'), 'Review the diff of the card under the cursor (or the newest one)')
plug('n', 'AcpLocations', run('AcpLocations'), "Open the chat's quickfix list of agent locations")
plug('n', 'AcpMode', run('AcpMode'), "Pick the session's mode")
plug('n', 'AcpAuth', run('AcpAuth'), "Sign in with one of the agent's methods")
plug('n', 'AcpConflict', run('AcpConflict'), 'Compare the current buffer with its changed file')
plug('n', 'AcpFanout', ':AcpFanout ', 'Type the agents to send the prompt to, each in its own worktree')
plug('n', 'AcpCompare', run('AcpCompare'), "Compare the changes of a fan-out's worktrees")
plug('n', 'AcpTerminal', ':AcpTerminal ', "Open a terminal's output from the chat")
plug('n', 'AcpLog', run('AcpLog'), 'Open the acp.nvim log')
plug('n', 'AcpTrace', run('AcpTrace'), "Show the protocol trace of the chat's agent")
plug('n', 'AcpTraceSave', ':AcpTraceSave ', 'Save the protocol trace as JSONL, secrets redacted')
plug('n', 'AcpBuild', run('AcpBuild'), 'Build the Rust core')
plug('n', 'AcpInstall', run('AcpInstall'), 'Install an agent from the ACP registry')
plug('n', 'AcpUpdate', run('AcpUpdate'), 'Update the agents installed from the registry')
plug('n', 'AcpModel', run('AcpModel'), "Pick the session's model")
plug('n', 'AcpConfig', run('AcpConfig'), "Pick one of the agent's config options")
plug('n', 'AcpSessions', run('AcpSessions'), "List the agent's sessions")
plug('n', 'AcpNew', run('AcpNew'), 'Start a new session in the chat of this tab')
plug('n', 'AcpResume', run('AcpResume'), "Open the chat's last session again")
plug('n', 'AcpQueue', run('AcpQueue'), 'Edit or drop a queued message')
plug({ 'n', 'i' }, 'AcpElicitation', function()
  require('acp').elicitation()
end, "Move into the agent's request for input")
plug('n', 'AcpLogout', run('AcpLogout'), 'Sign out of the agent')
