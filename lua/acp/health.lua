--- `:checkhealth acp`: says exactly what is missing and how to fix it.
-- May use: config, core, agents.
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
  local pre = config.options.prebuilt
  local download = pre.enabled and vim.fn.executable('curl') == 1
  if vim.fn.executable('cargo') == 1 then
    h.ok('cargo: ' .. vim.fn.exepath('cargo'))
  elseif download then
    h.info('cargo is not in PATH: :AcpBuild can only install a prebuilt core (released versions)')
  else
    h.warn('cargo is not in PATH: the core cannot be (re)built', { 'Install Rust from https://rustup.rs' })
  end
  if not pre.enabled then
    h.info('prebuilt cores: off (`prebuilt.enabled`)')
  elseif download then
    h.info('prebuilt cores: from ' .. pre.url)
  else
    h.info('prebuilt cores: curl is not in PATH, so :AcpBuild builds with cargo')
  end
  local loaded, err = core_mod.load()
  if loaded then
    h.ok(('core %s loaded, built from the current sources'):format(core_mod.version()))
    h.info(M.core_origin(core_mod.path, core_mod.version()))
  else
    h.error(err, { 'Run :AcpBuild and restart Neovim', 'Build output: :AcpLog build' })
  end

  M.check_agents(h, config.options)
  M.check_tools(h, config.options)

  M.check_agent_mcp_servers(h, config.options)

  h.start('acp.nvim: log')
  local log = config.options.log_file
  local dir = vim.fn.fnamemodify(log, ':h')
  if vim.fn.isdirectory(dir) == 1 and vim.fn.filewritable(dir) == 2 then
    h.ok('log file: ' .. log .. ' (:AcpLog)')
  else
    h.warn('the log directory is not writable: ' .. dir)
  end
end

--- Where the loaded core at `path` came from, as one line: the origin
--- record `:AcpBuild` writes beside it (lua/acp/core/prebuilt.lua).
---@param path string
---@param version string
function M.core_origin(path, version)
  local rec = require('acp.core.prebuilt').origin(path)
  if rec and rec.from == 'prebuilt' then
    return ('core %s: prebuilt for %s, downloaded from %s (%s), at %s'):format(
      version,
      tostring(rec.platform),
      tostring(rec.url),
      tostring(rec.at),
      path
    )
  elseif rec then
    return ('core %s: built here with cargo (%s), at %s'):format(version, tostring(rec.at), path)
  end
  return ('core %s: built here with cargo (no install record beside it), at %s'):format(version, path)
end

--- `cmd --version`'s first line (bounded: 3 s), or nil.
local function version_of(cmd)
  local ok, res = pcall(function()
    return vim.system({ cmd, '--version' }, { text = true, stdin = false }):wait(3000)
  end)
  if ok and res and res.code == 0 then
    local line = vim.trim(((res.stdout or '') ~= '' and res.stdout or res.stderr or ''):match('^[^\n]*') or '')
    return line ~= '' and line or nil
  end
end

--- Starts the agent, sends `initialize` and returns what it answered
--- (agentInfo, authMethods), or nil and why. Bounded: 5 s.
function M.handshake(spec)
  local msg = vim.json.encode({
    jsonrpc = '2.0',
    id = 0,
    method = 'initialize',
    params = { protocolVersion = 1, clientCapabilities = vim.empty_dict(), clientInfo = { name = 'acp.nvim-health', version = '0' } },
  }) .. '\n'
  local out = ''
  local done
  local ok, job = pcall(vim.system, vim.list_extend({ spec.cmd }, spec.args or {}), {
    env = spec.env,
    stdin = true,
    stdout = function(_, data)
      out = out .. (data or '')
      for line in out:gmatch('[^\n]+') do
        local dok, obj = pcall(vim.json.decode, line)
        if dok and type(obj) == 'table' and obj.id == 0 then
          done = obj
        end
      end
    end,
  })
  if not ok then
    return nil, tostring(job)
  end
  job:write(msg)
  vim.wait(5000, function()
    return done ~= nil
  end, 20)
  pcall(job.kill, job, 15)
  if not done then
    return nil, 'no answer to initialize within 5 s'
  elseif done.error then
    return nil, vim.inspect(done.error)
  end
  return done.result or {}
end

--- Node and npm, for agents distributed as npm packages.
local function npm_agents(options)
  local install = require('acp.agents.install')
  local out = {}
  for _, name in ipairs(require('acp.agents').names()) do
    local a = options.agents[name]
    local entry = install.entry(require('acp.agents').registry_id(name) or '')
    local inst = entry and install.installed(entry.id)
    if (inst and inst.method == 'npx') or (type(a) == 'table' and a.cmd == 'npx') or (type(a) == 'table' and a.install and a.install:find('npm install')) then
      out[#out + 1] = name
    end
  end
  return out
end

--- Each agent: its command, version and (with health.handshake) its answer.
function M.check_agents(h, options)
  local agents = require('acp.agents')
  local install = require('acp.agents.install')
  h.start('acp.nvim: agents')
  for _, name in ipairs(agents.names()) do
    local label = name == options.default_agent and (name .. ' (default)') or name
    local a = options.agents[name]
    local spec, err = agents.resolve(name)
    local path = spec and vim.fn.exepath(spec.cmd) or ''
    if spec and path ~= '' then
      local version = version_of(path)
      h.ok(('%s: %s%s'):format(label, path, version and (' (' .. version .. ')') or ''))
      if options.health.handshake then
        local info, why = M.handshake(vim.tbl_extend('force', spec, { cmd = path }))
        if info then
          local ai = info.agentInfo or {}
          local methods = vim.tbl_map(function(m)
            return m.name or m.id
          end, info.authMethods or {})
          h.info(('%s answers initialize: %s %s; sign-in methods: %s'):format(
            name,
            ai.name or '?',
            ai.version or '',
            #methods > 0 and table.concat(methods, ', ') or 'none'
          ))
        else
          h.warn(('%s: initialize failed: %s'):format(name, why))
        end
      end
    elseif name == options.default_agent or (type(a) == 'table' and a._user_cmd) then
      local advice = { ('Install it, or set agents.%s.cmd'):format(name) }
      if type(a) == 'table' and a.install then
        table.insert(advice, 1, 'Install: ' .. a.install)
      elseif agents.registry_id(name) then
        table.insert(advice, 1, ':AcpInstall ' .. agents.registry_id(name))
      end
      h.error(('%s: `%s` is not in PATH'):format(label, spec and spec.cmd or (type(a) == 'table' and a.cmd or name)), advice)
    elseif type(a) == 'table' and a.cmd then
      h.info(('%s: `%s` is not in PATH (not installed%s)'):format(label, a.cmd, a.install and ('; install: ' .. a.install) or ''))
    elseif not spec and err and agents.registry_id(name) == name and not a then
      -- A registry id that is not installed: listed below, not an agent of yours yet.
    else
      h.info(('%s: %s'):format(label, err or 'not installed'))
    end
  end

  h.start('acp.nvim: agents installed from the ACP registry')
  local installed = install.list_installed()
  if #installed == 0 then
    h.info(('none (:AcpInstall; %d agents in the registry snapshot of %s)'):format(
      #(install.registry().agents or {}),
      install.registry().snapshot or '?'
    ))
  end
  for _, info in ipairs(installed) do
    local entry = install.entry(info.id)
    local newer = entry and entry.version ~= info.version and (' (the snapshot has %s: :AcpUpdate %s)'):format(entry.version, info.id) or ''
    h.ok(('%s %s (%s) at %s%s'):format(info.id, info.version, info.method, info.cmd, newer))
  end

  local npm = npm_agents(options)
  if #npm > 0 then
    h.start('acp.nvim: Node.js (for ' .. table.concat(npm, ', ') .. ')')
    for _, tool in ipairs({ 'node', 'npm' }) do
      if vim.fn.executable(tool) == 1 then
        h.ok(('%s %s'):format(tool, version_of(tool) or vim.fn.exepath(tool)))
      else
        h.warn(('%s is not in PATH: npm-distributed agents cannot be installed or run'):format(tool), { 'Install Node.js (https://nodejs.org)' })
      end
    end
  end
end

--- Each agent's own MCP servers (`agents.{name}.mcp_servers`, added to
--- the global ones); http and sse servers reach only agents that
--- advertise them.
function M.check_agent_mcp_servers(h, options)
  local names = vim.tbl_keys(options.agents)
  table.sort(names)
  local any = false
  for _, name in ipairs(names) do
    local agent = options.agents[name]
    for _, server in ipairs(type(agent) == 'table' and agent.mcp_servers or {}) do
      if not any then
        h.start('acp.nvim: MCP servers of agents')
        any = true
      end
      local transport = server.type or 'stdio'
      local target = server.url or server.command or '?'
      if transport == 'stdio' and vim.fn.executable(server.command or '') ~= 1 then
        h.warn(('%s: %s: `%s` is not executable'):format(name, server.name, target))
      else
        h.ok(('%s: %s (%s) %s'):format(name, server.name, transport, target))
      end
    end
  end
end

--- The markdown parser, the clipboard tool for images, the MCP servers.
function M.check_tools(h, options)
  h.start('acp.nvim: tools')
  if pcall(vim.treesitter.language.add, 'markdown') then
    h.ok('Tree-sitter markdown parser: found (the chat is highlighted)')
  else
    h.warn('Tree-sitter markdown parser: not found (the chat falls back to the markdown syntax)', { ':TSInstall markdown markdown_inline, or your distribution\'s parser package' })
  end
  local clip = { 'wl-paste', 'xclip', 'pngpaste', 'osascript' }
  local found
  for _, tool in ipairs(clip) do
    if vim.fn.executable(tool) == 1 then
      found = tool
      break
    end
  end
  if found then
    h.ok('clipboard tool for :AcpPasteImage: ' .. found)
  else
    h.info('no clipboard tool for :AcpPasteImage (wl-paste, xclip, pngpaste or osascript); :AcpImage {file} still works')
  end
  local servers = options.mcp_servers or {}
  if #servers == 0 then
    h.info('MCP servers: none configured (mcp_servers)')
  end
  for i, s in ipairs(servers) do
    local name = type(s) == 'table' and (s.name or ('#' .. i)) or ('#' .. i)
    if type(s) ~= 'table' then
      h.error(('MCP server %s: not a table'):format(name))
    elseif s.url then
      h.ok(('MCP server %s: %s %s (sent only to agents that advertise %s)'):format(name, s.type or 'http', s.url, s.type or 'http'))
    elseif type(s.command) == 'string' and vim.fn.executable(s.command) == 1 then
      h.ok(('MCP server %s: %s'):format(name, vim.fn.exepath(s.command)))
    else
      h.error(('MCP server %s: command `%s` is not in PATH'):format(name, tostring(s.command)))
    end
  end
end

return M
