-- acp.nvim commands. Nothing else happens at startup: every callback loads
-- its module on first use.
if vim.g.loaded_acp then
  return
end
vim.g.loaded_acp = true

local cmd = vim.api.nvim_create_user_command

cmd('AcpChat', function(o)
  require('acp').open(o.args)
end, {
  nargs = '?',
  desc = 'Open or focus the agent chat of this tab',
  complete = function(lead)
    local names = vim.tbl_keys(require('acp.config').options.agents)
    table.sort(names)
    return vim.tbl_filter(function(n)
      return n:find(lead, 1, true) == 1
    end, names)
  end,
})

cmd('AcpSend', function(o)
  require('acp').send(o.args)
end, { nargs = '+', desc = 'Send a message to the chat of this tab' })

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
