--- Sign-in methods an agent offers (`authMethods` of `initialize`):
--- - `agent` (default): `authenticate` with the method's id;
--- - `terminal`: the agent's own command, with the method's `args` appended
---   and its `env` added, runs in a terminal window; exit 0 is success,
---   after which the chat opens its session again;
--- - `env_var`: the user is told which variable to set (and where to get
---   its value); the agent reads it when it starts;
--- - no `type` but `_meta["terminal-auth"] = { command, args, env }` (the
---   older way, Copilot CLI and Kimi CLI): that command runs in a terminal
---   window like a `terminal` method (such agents do not answer
---   `authenticate` for it).
local config = require('acp.config')

local M = {}

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.INFO)
end

--- The variables an `env_var` method names (`varName`, or `vars[].name`).
function M.env_vars(method)
  local out = {}
  if type(method.varName) == 'string' then
    out[#out + 1] = method.varName
  end
  for _, v in ipairs(type(method.vars) == 'table' and method.vars or {}) do
    if type(v) == 'table' and type(v.name) == 'string' then
      out[#out + 1] = v.name
    end
  end
  return out
end

--- The older terminal sign-in a method describes in
--- `_meta["terminal-auth"]`: { command, args, env }, or nil when it has a
--- `type` of its own or describes none.
function M.legacy_terminal(method)
  local meta = type(method._meta) == 'table' and method._meta['terminal-auth']
  if method.type ~= nil or type(meta) ~= 'table' or type(meta.command) ~= 'string' or meta.command == '' then
    return nil
  end
  local args = {}
  for _, a in ipairs(type(meta.args) == 'table' and meta.args or {}) do
    args[#args + 1] = tostring(a)
  end
  local env = {}
  for k, v in pairs(type(meta.env) == 'table' and meta.env or {}) do
    if type(k) == 'string' and (type(v) == 'string' or type(v) == 'number') then
      env[k] = tostring(v)
    end
  end
  return { command = meta.command, args = args, env = env }
end

--- The command line of a `terminal` method: the agent's configured
--- command and args, then the method's args; for an older
--- `_meta["terminal-auth"]` method, its command and args.
function M.terminal_argv(agent, method)
  local legacy = M.legacy_terminal(method)
  if legacy then
    return vim.list_extend({ legacy.command }, legacy.args)
  end
  local argv = { agent.cmd }
  vim.list_extend(argv, agent.args or {})
  for _, a in ipairs(type(method.args) == 'table' and method.args or {}) do
    argv[#argv + 1] = tostring(a)
  end
  return argv
end

--- The supervisor a login runs under (supervise_login.lua, beside this
--- file): the running Neovim runs it as a script on the job's terminal.
local supervisor = debug.getinfo(1, 'S').source:gsub('^@', ''):gsub('auth%.lua$', 'supervise_login.lua')

--- `argv` run under the login supervisor, so that nothing the login
--- starts (a daemon in its own session, a double-forked child) outlives
--- it or Neovim, but the executables named in `keep` (the agent's
--- `keep_daemons`). Elsewhere than Linux and macOS, `argv` itself.
function M.supervised(argv, keep)
  if (jit.os ~= 'Linux' and jit.os ~= 'OSX') or vim.fn.filereadable(supervisor) == 0 then
    return argv
  end
  local out = { vim.v.progpath, '--clean', '-l', supervisor, '--parent', tostring(vim.fn.getpid()) }
  for _, k in ipairs(keep or {}) do
    vim.list_extend(out, { '--keep', k })
  end
  out[#out + 1] = '--'
  return vim.list_extend(out, argv)
end

--- Runs a `terminal` sign-in in a terminal window below the current one,
--- under the login supervisor (`M.supervised`).
function M.terminal(view, method)
  local agent = config.options.agents[view.agent]
  local argv = M.terminal_argv(agent, method)
  local legacy = M.legacy_terminal(method)
  if legacy and not M.own_command(agent, argv) then
    -- The agent names any program here: the user reads the exact command
    -- line and says yes before it runs.
    require('acp.util.escape').select({ 'No', 'Yes' }, {
      prompt = ('Sign in with %s by running `%s`?'):format(method.id, M.shown(argv)),
    }, function(choice)
      if choice == 'Yes' then
        M.run_login(view, agent, method, argv, legacy.env)
      else
        notify(('sign-in with `%s` not run'):format(require('acp.util.escape').line(method.id, 80)))
      end
    end)
    return true
  end
  return M.run_login(view, agent, method, argv, legacy and legacy.env or (type(method.env) == 'table' and method.env or {}))
end

--- True when `argv` runs the agent's own executable (a login of the agent
--- itself, as Kimi's `kimi login`), not another program the agent named.
function M.own_command(agent, argv)
  local function base(p)
    return (type(p) == 'string' and p or ''):match('[^/]*$')
  end
  return base(argv[1]) ~= '' and base(argv[1]) == base(agent.cmd)
end

--- `argv` as one line a shell would read the same (quoted where needed),
--- escaped for a message.
function M.shown(argv)
  local words = {}
  for _, a in ipairs(argv) do
    words[#words + 1] = a:match('^[%w@%%+=:,./_-]+$') and a or ("'" .. a:gsub("'", [['\'']]) .. "'")
  end
  return require('acp.util.escape').line(table.concat(words, ' '), 400)
end

--- Runs login `argv` in a terminal window below the current one.
function M.run_login(view, agent, method, argv, method_env)
  local env = vim.tbl_extend('force', agent.env or {}, method_env)
  local id = require('acp.util.escape').line(method.id, 80)
  notify(('signing in with `%s`: running `%s` in a terminal window'):format(id, M.shown(argv)))
  vim.cmd('botright 15new')
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].bufhidden = 'wipe'
  local ok, job = pcall(vim.fn.jobstart, M.supervised(argv, agent.keep_daemons), {
    term = true,
    cwd = view.root,
    -- Without Neovim's own variables: the login command cannot drive the editor.
    env = require('acp.editor.terminal').env(env, { keep_secrets = true }),
    clear_env = true,
    on_exit = function(_, code)
      vim.schedule(function()
        M.last_exit = code
        if code == 0 then
          notify(('signed in with `%s`; opening the session'):format(id))
          pcall(require('acp.core').reconnect, view.thread)
        else
          notify(('sign-in with `%s` failed (exit %d)'):format(id, code), vim.log.levels.ERROR)
        end
      end)
    end,
  })
  if not ok or job <= 0 then
    notify(('cannot run `%s`: %s'):format(M.shown(argv), tostring(ok and job or job)), vim.log.levels.ERROR)
    return false
  end
  vim.cmd('startinsert')
  return true
end

--- Signs in with `method` (one of the agent's `authMethods`).
function M.sign_in(view, method)
  local kind = method.type or 'agent'
  if kind == 'terminal' or M.legacy_terminal(method) then
    return M.terminal(view, method)
  elseif kind == 'env_var' then
    local vars = M.env_vars(method)
    local where = ''
    if type(method.link) == 'string' then
      -- The agent's link: one line, and its real host named when text
      -- before `@` (`https://accounts.google.com@evil.example/`) dresses
      -- it up as another site.
      local esc = require('acp.util.escape')
      local parts = esc.url(method.link)
      local warn = parts and parts.userinfo and (', a page on ' .. esc.url_target(method.link)) or ''
      where = (' (get it at %s%s)'):format(esc.line(method.link, 400), warn)
    end
    notify(
      ('%s signs in with the environment variable %s%s: set it in agents.%s.env or in your shell, then :AcpNew'):format(
        view.agent,
        #vars > 0 and table.concat(vars, ', ') or '?',
        where,
        view.agent
      ),
      vim.log.levels.WARN
    )
    return false
  end
  require('acp.core').authenticate(view.thread, method.id)
  return true
end

return M
