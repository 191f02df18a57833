-- Real agents installed by `make peer-deps` into .deps/peers, run offline
-- against tests/peers/mock_llm.py: how each one starts, what environment and
-- state files point it at the mock, and how to find what it left running.
local T = require('tests.helpers.expect')

local P = {}

P.root = vim.env.ACP_ROOT
-- ACP_PEERS_DIR: agents installed elsewhere, in the same layout.
P.dir = vim.env.ACP_PEERS_DIR or (P.root .. '/.deps/peers')

--- Environment variables that reach the agent through a proxy: every one
--- points at the mock, which refuses (and logs) anything not for itself.
local PROXY_VARS = { 'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy' }

-- One profile per agent. `{peers}` is .deps/peers, `{mock}` the mock's URL,
-- `{state}` a scratch folder, `{port}` a free port. `unset`: variables of the user's own setup that
-- must not reach the agent. `files`: written before the agent starts.
P.profiles = {
  -- kimi-cli (PyPI, Python >= 3.12). `kimi acp` wants a Kimi Code login
  -- token file even with an API-key provider: a fake one passes (unused).
  kimi = {
    version = 'kimi-cli 1.51.0',
    cmd = '{peers}/kimi/bin/kimi',
    args = { 'acp' },
    env = { KIMI_SHARE_DIR = '{state}/kimi', HOME = '{state}/home' },
    unset = { 'KIMI_API_KEY', 'KIMI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_BASE_URL' },
    files = {
      ['{state}/kimi/config.toml'] = table.concat({
        'default_model = "mock"',
        '',
        '[providers.mock]',
        'type = "openai_legacy"',
        'base_url = "{mock}/v1"',
        'api_key = "mock-key"',
        '',
        '[models.mock]',
        'provider = "mock"',
        'model = "mock-model"',
        'max_context_size = 200000',
        '',
      }, '\n'),
      ['{state}/kimi/credentials/kimi-code.json'] = vim.json.encode({
        access_token = 'mock-access',
        refresh_token = 'mock-refresh',
        expires_at = 4102444800,
        scope = 'kimi-code',
        token_type = 'Bearer',
        expires_in = 3600,
      }),
    },
  },
  -- mistral-vibe (PyPI): a generic OpenAI-style provider in $VIBE_HOME.
  -- `unasked`: commands it runs without asking (its own list of read-only
  -- commands); it asks only about the shell, not about edits in the project.
  vibe = {
    version = 'mistral-vibe 3.0.2',
    unasked = { 'ls' },
    cmd = '{peers}/vibe/bin/vibe-acp',
    args = {},
    env = { VIBE_HOME = '{state}/vibe', HOME = '{state}/home', MOCK_API_KEY = 'mock-key' },
    unset = { 'MISTRAL_API_KEY' },
    files = {
      ['{state}/vibe/config.toml'] = table.concat({
        'active_model = "mock"',
        'enable_telemetry = false',
        'enable_update_checks = false',
        '',
        '[[providers]]',
        'name = "mock"',
        'api_base = "{mock}/v1"',
        'api_key_env_var = "MOCK_API_KEY"',
        'api_style = "openai"',
        'backend = "generic"',
        '',
        '[[models]]',
        'name = "mock-model"',
        'provider = "mock"',
        'alias = "mock"',
        '',
      }, '\n'),
    },
  },
  -- fast-agent-mcp (PyPI): a generic OpenAI-compatible provider.
  ['fast-agent'] = {
    version = 'fast-agent-mcp 0.10.48',
    cmd = '{peers}/fastagent/bin/fast-agent',
    args = { '--no-update-check', 'acp', '--model', 'generic.mock-model', '--shell', '--home', '{state}/fa' },
    env = { GENERIC_BASE_URL = '{mock}/v1', GENERIC_API_KEY = 'mock-key', HOME = '{state}/home' },
    unset = { 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY' },
    dirs = { '{state}/fa' },
    files = {},
  },
  -- Claude Code through claude-agent-acp (npm; the native claude binary
  -- comes from the platform package of @anthropic-ai/claude-agent-sdk). It
  -- reads, edits and runs commands itself, asking before edits.
  claude = {
    version = 'claude-agent-acp 0.100.0',
    cmd = 'node',
    args = { '{peers}/claude/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js' },
    installed = '{peers}/claude/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js',
    env = {
      ANTHROPIC_BASE_URL = '{mock}',
      ANTHROPIC_API_KEY = 'mock-key',
      CLAUDE_CONFIG_DIR = '{state}/claude',
      HOME = '{state}/home',
      DISABLE_TELEMETRY = '1',
      DISABLE_ERROR_REPORTING = '1',
      DISABLE_AUTOUPDATER = '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = '1',
      -- It refuses to skip its checks as root otherwise (containers).
      IS_SANDBOX = '1',
      CLAUDE_CODE_DISABLE_FAST_MODE = '1',
    },
    unset = { 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_MODEL' },
    dirs = { '{state}/claude' },
    files = {},
  },
  -- Gemini CLI (npm) in ACP mode: GOOGLE_GEMINI_BASE_URL picks the gateway
  -- sign-in, so no authenticate call; it reads and writes through fs/*.
  gemini = {
    version = 'gemini-cli 0.61.0',
    cmd = 'node',
    args = { '{peers}/gemini/node_modules/@google/gemini-cli/bundle/gemini.js', '--acp' },
    installed = '{peers}/gemini/node_modules/@google/gemini-cli/bundle/gemini.js',
    env = {
      GOOGLE_GEMINI_BASE_URL = '{mock}',
      GEMINI_API_KEY = 'mock-key',
      HOME = '{state}/home',
      GEMINI_CLI_NO_RELAUNCH = 'true',
      NO_BROWSER = 'true',
    },
    unset = { 'GOOGLE_API_KEY', 'GOOGLE_GENAI_USE_VERTEXAI', 'GOOGLE_GENAI_USE_GCA', 'GOOGLE_CLOUD_PROJECT' },
    files = {
      ['{state}/home/.gemini/settings.json'] = vim.json.encode({
        privacy = { usageStatisticsEnabled = false },
        telemetry = { enabled = false },
        general = { disableAutoUpdate = true, disableUpdateNag = true },
        security = { folderTrust = { enabled = false } },
      }),
    },
  },
  -- cline (npm): the node wrapper starts a Bun-compiled binary, which
  -- starts a hub daemon in a session of its own. CLINE_API_KEY spares the
  -- sign-in; the provider is in $CLINE_DATA_DIR/settings/providers.json.
  -- `no_final_newline`: its apply_patch writes an added file without one.
  cline = {
    version = 'cline 3.0.65',
    no_final_newline = true,
    cmd = 'node',
    args = { '{peers}/cline/node_modules/cline/bin/cline', '--acp', '--auto-approve', 'false' },
    installed = '{peers}/cline/node_modules/cline/bin/cline',
    env = {
      HOME = '{state}/home',
      CLINE_DATA_DIR = '{state}/cline',
      CLINE_LOG_ENABLED = '0',
      CLINE_API_KEY = 'mock-key',
      CLINE_PROVIDER = 'openai-compatible',
      CLINE_MODEL = 'mock-model',
      -- A hub of its own: on the default port it would join any other
      -- Cline's hub on this machine instead of starting one.
      CLINE_HUB_PORT = '{port}',
    },
    unset = { 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY' },
    files = {
      ['{state}/cline/settings/providers.json'] = vim.json.encode({
        version = 1,
        lastUsedProvider = 'openai-compatible',
        modes = vim.empty_dict(),
        providers = {
          ['openai-compatible'] = {
            settings = {
              provider = 'openai-compatible',
              apiKey = 'mock-key',
              model = 'mock-model',
              baseUrl = '{mock}/v1',
            },
            updatedAt = '2026-01-01T00:00:00.000Z',
            tokenSource = 'manual',
          },
        },
      }),
    },
  },
}

--- `s` with the profile's placeholders filled in.
local function fill(s, vars)
  return (s:gsub('{(%w+)}', function(k)
    return vars[k]
  end))
end

--- The profile `name`, or a visible skip when the agent is not installed
--- (or `node` is missing for one that needs it).
function P.profile(name)
  local prof = assert(P.profiles[name], name)
  local bin = fill(prof.installed or prof.cmd, { peers = P.dir })
  if vim.fn.filereadable(bin) ~= 1 or (prof.cmd ~= 'node' and vim.fn.executable(bin) ~= 1) then
    T.skip(('%s is not installed in %s (make peer-deps installs it)'):format(prof.version, P.dir))
  end
  if prof.cmd == 'node' and vim.fn.executable('node') ~= 1 then
    T.skip(('node is not installed (%s needs it)'):format(prof.version))
  end
  return prof
end

--- A TCP port of 127.0.0.1 free right now.
local function free_port()
  local tcp = assert(vim.uv.new_tcp())
  assert(tcp:bind('127.0.0.1', 0))
  local port = tcp:getsockname().port
  tcp:close()
  return port
end

--- The agent config (cmd, args, env) for profile `prof` talking to the mock
--- at `url`, its state in a fresh folder; its environment carries
--- ACP_TEST_MARK=`mark`, which every process it starts inherits. Also
--- returns the child Neovim's environment changes (the unset variables) and
--- the state folder.
function P.agent(prof, url, mark)
  local vars = { peers = P.dir, mock = url, state = vim.fn.resolve(T.tmpdir('peer-state')), port = tostring(free_port()) }
  vim.fn.mkdir(vars.state .. '/home', 'p')
  for _, d in ipairs(prof.dirs or {}) do
    vim.fn.mkdir(fill(d, vars), 'p')
  end
  for path, content in pairs(prof.files) do
    path = fill(path, vars)
    vim.fn.mkdir(vim.fs.dirname(path), 'p')
    T.write_file(path, fill(content, vars))
  end
  local env = { ACP_TEST_MARK = mark, NO_PROXY = '127.0.0.1,localhost', no_proxy = '127.0.0.1,localhost' }
  for _, k in ipairs(PROXY_VARS) do
    env[k] = url
  end
  for k, v in pairs(prof.env) do
    env[k] = fill(v, vars)
  end
  local args = {}
  for i, a in ipairs(prof.args) do
    args[i] = fill(a, vars)
  end
  local unset = {}
  for _, k in ipairs(prof.unset or {}) do
    unset[k] = false
  end
  return { cmd = fill(prof.cmd, vars), args = args, env = env }, unset, vars.state
end

--- Every running process (not a zombie): pid -> { pid, ppid, start, comm,
--- env, cmdline, cwd }.
local function processes()
  local out = {}
  for name in vim.fs.dir('/proc') do
    local pid = tonumber(name)
    if pid then
      local function slurp(what)
        local f = io.open('/proc/' .. name .. '/' .. what, 'rb')
        if not f then
          return ''
        end
        local s = f:read('*a') or ''
        f:close()
        return s
      end
      local stat = slurp('stat')
      local comm, rest = stat:match('^%d+ %((.*)%) (.*)$')
      local fields = vim.split(rest or '', ' ', { plain = true })
      if comm and fields[1] ~= 'Z' then
        out[pid] = {
          pid = pid,
          ppid = tonumber(fields[2]),
          start = fields[20],
          comm = comm,
          env = slurp('environ'),
          cmdline = (slurp('cmdline'):gsub('%z', ' ')),
          cwd = vim.uv.fs_readlink('/proc/' .. name .. '/cwd') or '',
        }
      end
    end
  end
  return out
end

--- The processes of a real agent's run: those whose environment or
--- command line holds ACP_TEST_MARK=`mark`, whose working directory is in
--- one of `dirs`, or that descend from `root` (the child Neovim). The mark
--- alone is not enough: an agent that sets its process title (Kimi CLI)
--- overwrites the memory /proc/<pid>/environ shows. { pid, start, comm, cmdline }
function P.tracked(mark, dirs, root)
  local want = 'ACP_TEST_MARK=' .. mark
  local all = processes()
  local function descends(p)
    local seen = 0
    while p and seen < 64 do
      if p.ppid == root then
        return true
      end
      p, seen = all[p.ppid], seen + 1
    end
    return false
  end
  local out = {}
  for pid, p in pairs(all) do
    local hit = (p.env .. '\0'):find(want .. '\0', 1, true) or p.cmdline:find(want, 1, true) or (root and descends(p))
    for _, d in ipairs(dirs or {}) do
      hit = hit or p.cwd == d or vim.startswith(p.cwd, d .. '/')
    end
    if hit and pid ~= vim.fn.getpid() then
      out[#out + 1] = { pid = pid, start = p.start, comm = p.comm, cmdline = p.cmdline }
    end
  end
  table.sort(out, function(a, b)
    return a.pid < b.pid
  end)
  return out
end

--- Those of `procs` (from P.tracked) still running: same pid, same start time.
function P.still_running(procs)
  local all = processes()
  return vim.tbl_filter(function(p)
    return all[p.pid] ~= nil and all[p.pid].start == p.start
  end, procs)
end

--- Running processes carrying the mark in their environment or command line.
function P.marked(mark)
  return P.tracked(mark, {}, nil)
end

return P
