--- The agents layer: the agents and what the plugin asks of them outside
--- a turn. This file: which agents exist and how to start one; install.lua
--- installs agents from the ACP registry (`:AcpInstall`); controls.lua
--- switches their config options, modes and models; sessions.lua lists,
--- resumes, closes and deletes their sessions; trace.lua shows the
--- protocol trace.
-- May use: util, config, registry, core.
---
--- The agents `:AcpChat {name}` knows, in order of precedence:
--- 1. the user's `agents` entries (`false` removes a name);
--- 2. the ACP registry's ids (lua/acp/registry.json): the copy installed
---    with `:AcpInstall`, else the hand-written preset of the same name when
---    its command is in PATH;
--- 3. the hand-written presets (`config.defaults.agents`), for agents
---    outside the registry, each with an install hint.
local M = {}

local function options()
  return require('acp.config').options
end

--- Every agent name, sorted.
---@return string[]
function M.names()
  local seen, out = {}, {}
  local configured = options().agents
  for name, a in pairs(configured) do
    if a then
      seen[name] = true
    end
  end
  for id in pairs(require('acp.agents.install').presets()) do
    if configured[id] ~= false then
      seen[id] = true
    end
  end
  for name in pairs(seen) do
    out[#out + 1] = name
  end
  table.sort(out)
  return out
end

--- True when `name` is an agent (configured, preset or registry id).
function M.exists(name)
  local a = options().agents[name]
  if a == false then
    return false
  end
  return a ~= nil or M.registry_id(name) ~= nil
end

--- The registry id behind `name`, if any.
function M.registry_id(name)
  local a = options().agents[name]
  local id = type(a) == 'table' and a.registry or name
  return require('acp.agents.install').entry(id) and id or nil
end

--- What to say when agent `name` (its config `a`) has no command here: its
--- command is not in PATH and the registry id `id` (if any) is not
--- installed. Names how to install it, from the registry entry when there
--- is one (its package), else the preset's own `install` hint.
function M.not_found(name, a, id)
  local install = require('acp.agents.install')
  local hints = {}
  local entry = id and install.entry(id)
  if entry then
    local d = entry.distribution or {}
    local npm = d.npx and type(d.npx.package) == 'string' and (install.split_package(d.npx.package))
    local pypi = d.uvx and type(d.uvx.package) == 'string' and d.uvx.package:match('^[^=<>!~%[%s]+')
    local what = npm and ('npm package ' .. npm) or pypi and ('PyPI package ' .. pypi) or 'its release download'
    hints[#hints + 1] = (":AcpInstall %s (the ACP registry's %s: %s)"):format(id, entry.name or id, what)
    if npm then
      hints[#hints + 1] = 'npm install -g ' .. npm
    elseif pypi then
      hints[#hints + 1] = 'uv tool install ' .. pypi
    end
  elseif type(a) == 'table' and a.install then
    hints[#hints + 1] = a.install
  end
  hints[#hints + 1] = ('set agents.%s.cmd'):format(name)
  local cmd = type(a) == 'table' and a.cmd or name
  return ('acp.nvim: agent `%s` needs `%s`, which is not in PATH. Install it: %s'):format(name, cmd, table.concat(hints, ', or '))
end

--- The command of agent `name`: { cmd, args, env, install? }, or nil and
--- a message naming what to do.
---@return { cmd: string, args: string[], env: table<string, string>, install?: string }?
---@return string? err
function M.resolve(name)
  local a = options().agents[name]
  if a == false then
    return nil, ('acp.nvim: agent %q is disabled (agents.%s = false)'):format(name, name)
  end
  local user_cmd = type(a) == 'table' and a.cmd
  local id = M.registry_id(name)
  -- A command the user (or a hand-written preset) gave, unless the
  -- registry's installed copy is the one to use.
  if id and not (type(a) == 'table' and a._user_cmd) then
    local installed = require('acp.agents.install').command(id)
    if installed then
      local spec = vim.deepcopy(installed)
      if type(a) == 'table' then
        spec.env = vim.tbl_extend('force', spec.env, a.env or {})
        if a._user_args then
          spec.args = vim.deepcopy(a.args)
        end
      end
      return spec
    end
    if not user_cmd then
      local _, err = require('acp.agents.install').command(id)
      return nil, err
    elseif vim.fn.executable(user_cmd) ~= 1 then
      return nil, M.not_found(name, a, id)
    end
  end
  if not user_cmd then
    local names = table.concat(M.names(), ', ')
    return nil, ('acp.nvim: unknown agent %q (configured: %s)'):format(name, names)
  end
  return { cmd = user_cmd, args = a.args or {}, env = a.env or {}, install = a.install }
end

--- MCP servers of agent `name`: the global ones, then the agent's own (an
--- agent's server replaces a global one of the same name). Missing list
--- fields get their empty default.
function M.mcp_servers(name)
  local o = options()
  local out, index = {}, {}
  local agent = o.agents[name] or {}
  for _, list in ipairs({ o.mcp_servers or {}, agent.mcp_servers or {} }) do
    for _, server in ipairs(list) do
      local s = vim.deepcopy(server)
      if s.type == 'http' or s.type == 'sse' then
        s.headers = s.headers or {}
      else
        s.args, s.env = s.args or {}, s.env or {}
      end
      if s.name and index[s.name] then
        out[index[s.name]] = s
      else
        out[#out + 1] = s
        index[s.name or #out] = #out
      end
    end
  end
  return out
end

--- The system prompt of an agent config `conf`: its own (`false`: none),
--- else the global `system_prompt`; nil when none.
function M.system_prompt(conf, o)
  local own = type(conf) == 'table' and conf.system_prompt
  if type(conf) == 'table' and conf.system_prompt ~= nil then
    return own or nil
  end
  return o.system_prompt or nil
end

--- An agent config's `defaults` as [key, value] pairs in the order they
--- are set: `model` first (it can change what else is offered), then
--- `mode`, then the rest by name.
function M.defaults(conf)
  local d = type(conf) == 'table' and type(conf.defaults) == 'table' and conf.defaults or {}
  local rank = { model = 1, mode = 2 }
  local keys = vim.tbl_keys(d)
  table.sort(keys, function(a, b)
    local ra, rb = rank[a] or 3, rank[b] or 3
    if ra ~= rb then
      return ra < rb
    end
    return a < b
  end)
  local out = {}
  for _, k in ipairs(keys) do
    out[#out + 1] = { k, d[k] }
  end
  return out
end

--- What the core needs to start agent `name` in project `root`
--- (acp.AgentSpec): its command, the MCP servers, the capabilities and the
--- policy the config gives; nil and a message naming what to do when the
--- agent cannot run.
function M.spec(name, root)
  local a, err = M.resolve(name)
  if not a then
    return nil, err
  end
  -- A preset's command (not one the user set) that is not here: say what
  -- to install rather than fail to start it.
  local conf = options().agents[name]
  if type(conf) == 'table' and not conf._user_cmd and conf.cmd == a.cmd and vim.fn.executable(a.cmd) ~= 1 then
    return nil, M.not_found(name, conf, M.registry_id(name))
  end
  local o = options()
  local roots = {}
  for _, r in ipairs(o.roots) do
    -- `~` and `$VAR` (vim.fs.normalize), never expand(): no backticks run.
    roots[#roots + 1] = (vim.fn.fnamemodify(vim.fs.normalize(r), ':p'):gsub('(.)/$', '%1'))
  end
  return {
    name = name,
    cmd = a.cmd,
    args = a.args or {},
    env = a.env or {},
    cwd = root,
    mcp_servers = M.mcp_servers(name),
    caps = {
      fs_read = o.fs.read,
      fs_write = o.fs.write,
      terminal = o.terminal.enabled,
      plan_v2 = o.experimental.plan_v2,
      subagents = o.experimental.subagents,
    },
    line_max = o.max_message_bytes,
    timeouts = o.timeouts,
    trace_max = o.trace.max_messages,
    -- Descendants allowed to outlive the agent and Neovim, by executable name.
    keep_daemons = type(conf) == 'table' and conf.keep_daemons or {},
    -- The agent's own (false: none), else the global one.
    system_prompt = M.system_prompt(conf, o),
    defaults = M.defaults(conf),
    policy = {
      roots = roots,
      allow_read_outside = o.fs.allow_outside_roots,
      allow_write_outside = o.fs.allow_outside_roots,
      allow_terminal_outside = o.terminal.allow_outside_roots,
      save_unmodified = o.fs.save_unmodified,
      shell = o.terminal.shell,
      terminal_confirm = o.terminal.confirm,
      terminal_output_max_bytes = o.terminal.output_max_bytes,
      -- [name, value] pairs, sorted (an empty Lua table is no map).
      terminal_inert_env = (function()
        local pairs_ = {}
        for k, v in pairs(o.terminal.inert_env) do
          pairs_[#pairs_ + 1] = { k, v }
        end
        table.sort(pairs_, function(a, b) return a[1] < b[1] end)
        return pairs_
      end)(),
      protected = o.fs.protected,
      read_max_bytes = o.fs.read_max_bytes,
      auto_allow = o.permissions.auto_allow,
    },
  }
end

return M
