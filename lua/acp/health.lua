--- `:checkhealth acp`: says exactly what is missing and how to fix it.
local M = {}

function M.check()
  local h = vim.health
  local core_mod = require('acp.core')
  local config = require('acp.config')

  h.start('acp.nvim: Neovim')
  if vim.fn.has('nvim-0.11') == 1 then
    h.ok(('Neovim %s'):format(tostring(vim.version())))
  else
    h.error('Neovim 0.11 or newer is required', { 'Upgrade Neovim' })
  end

  h.start('acp.nvim: Rust core')
  if vim.fn.executable('cargo') == 1 then
    h.ok('cargo: ' .. vim.fn.exepath('cargo'))
  else
    h.warn('cargo is not in PATH: the core cannot be (re)built', { 'Install Rust from https://rustup.rs' })
  end
  local loaded, err = core_mod.load()
  if loaded then
    h.ok(('core %s loaded, built from the current sources'):format(core_mod.version()))
  else
    h.error(err, { 'Run :AcpBuild and restart Neovim', 'Build output: :AcpLog build' })
  end

  h.start('acp.nvim: agents')
  local names = vim.tbl_keys(config.options.agents)
  table.sort(names)
  for _, name in ipairs(names) do
    local a = config.options.agents[name]
    local path = vim.fn.exepath(a.cmd)
    local label = name == config.options.default_agent and (name .. ' (default)') or name
    if path ~= '' then
      h.ok(('%s: %s'):format(label, path))
    elseif name == config.options.default_agent then
      h.error(('%s: `%s` is not in PATH'):format(label, a.cmd), { ('Install it, or set agents.%s.cmd'):format(name) })
    else
      h.info(('%s: `%s` is not in PATH (not installed)'):format(label, a.cmd))
    end
  end

  h.start('acp.nvim: MCP servers')
  local any = false
  for _, name in ipairs(names) do
    for _, server in ipairs(require('acp').mcp_servers(name)) do
      any = true
      local transport = server.type or 'stdio'
      local target = server.url or server.command or '?'
      local note = transport ~= 'stdio' and ' (sent only if the agent advertises ' .. transport .. ')' or ''
      if transport == 'stdio' and vim.fn.executable(server.command or '') ~= 1 then
        h.warn(('%s: %s: `%s` is not executable'):format(name, server.name, target))
      else
        h.ok(('%s: %s (%s) %s%s'):format(name, server.name, transport, target, note))
      end
    end
  end
  if not any then
    h.info('none configured (mcp_servers, agents.{name}.mcp_servers)')
  end

  h.start('acp.nvim: log')
  local log = config.options.log_file
  local dir = vim.fn.fnamemodify(log, ':h')
  if vim.fn.isdirectory(dir) == 1 and vim.fn.filewritable(dir) == 2 then
    h.ok('log file: ' .. log .. ' (:AcpLog)')
  else
    h.warn('the log directory is not writable: ' .. dir)
  end
end

return M
