-- acp.nvim commands. Nothing else happens at startup: every callback loads
-- its module on first use.
if vim.g.loaded_acp then
  return
end
vim.g.loaded_acp = true

local cmd = vim.api.nvim_create_user_command

cmd('AcpChat', function(o)
  require('acp.layout').toggle(o.args)
end, {
  nargs = '?',
  desc = 'Toggle the agent chat of this tab (with an agent: open a chat with it)',
  complete = function(lead)
    local names = vim.tbl_keys(require('acp.config').options.agents)
    table.sort(names)
    return vim.tbl_filter(function(n)
      return n:find(lead, 1, true) == 1
    end, names)
  end,
})

cmd('AcpChats', function(o)
  require('acp.layout').pick(o.args)
end, {
  nargs = '?',
  complete = function(lead)
    return require('acp.layout').complete(lead)
  end,
  desc = 'List the chats and show one in this tab',
})

cmd('AcpSend', function(o)
  if o.range > 0 then
    require('acp.context').send_range(o)
  else
    require('acp').send(o.args)
  end
end, { nargs = '+', range = true, desc = 'Send a message to the chat of this tab (with a range: the selection attached)' })

cmd('AcpAdd', function(o)
  require('acp.context').add_command(o)
end, {
  nargs = '?',
  range = true,
  complete = 'file',
  desc = 'Add the selection (with a range), a file, or the current buffer to the next prompt',
})

cmd('AcpContext', function(o)
  require('acp.context').command(o)
end, {
  nargs = '*',
  complete = function(_, line)
    return #vim.split(line, '%s+') <= 2 and { 'list', 'clear', 'remove' } or {}
  end,
  desc = 'List, remove or clear the context attached to the next prompt',
})

cmd('AcpImage', function(o)
  require('acp.image').attach_file(o.args)
end, { nargs = 1, complete = 'file', desc = 'Attach a PNG, JPEG, GIF or WebP image to the next prompt' })

cmd('AcpPasteImage', function()
  require('acp.image').paste()
end, { desc = "Attach the clipboard's image to the next prompt" })

vim.keymap.set('x', '<Plug>(AcpAddSelection)', function()
  require('acp.context').add_visual()
end, { desc = 'Add the selection to the next prompt' })

cmd('AcpCancel', function()
  require('acp').cancel()
end, { desc = 'Cancel the running agent turn' })

cmd('AcpBuild', function()
  require('acp').build()
end, { desc = 'Build the Rust core (cargo build --release)' })

cmd('AcpLog', function(o)
  require('acp').open_log(o.args)
end, {
  nargs = '?',
  complete = function()
    return { 'build' }
  end,
  desc = 'Open the acp.nvim log (or the build log with "build")',
})

cmd('AcpPermission', function()
  require('acp.permission').focus()
end, { desc = 'Answer the pending permission request' })

vim.keymap.set({ 'n', 'i' }, '<Plug>(AcpPermission)', function()
  require('acp.permission').focus()
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

cmd('AcpLocations', function()
  require('acp').locations()
end, { desc = "Open the chat's quickfix list of agent locations" })

cmd('AcpPermissions', function(o)
  require('acp.permission').decisions(require('acp').current(), o.args == 'reset')
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

cmd('AcpMode', function(o)
  require('acp').mode(o.args)
end, {
  nargs = '?',
  complete = function(lead)
    local view = package.loaded.acp and require('acp').current()
    local out = {}
    for _, m in ipairs(view and (view.info.modes or {}).availableModes or {}) do
      if vim.startswith(m.id, lead) then
        out[#out + 1] = m.id
      end
    end
    return out
  end,
  desc = "Switch the session's mode (or pick one)",
})

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

cmd('AcpConflict', function(o)
  require('acp.sync').open_conflict(o.args)
end, {
  nargs = '?',
  complete = function(lead)
    return require('acp.sync').complete(lead)
  end,
  desc = 'Compare a buffer with its file changed on disk (a sync conflict)',
})
