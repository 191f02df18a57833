--- Configuration: one documented default table, validated in `setup()`.
--- The plugin works without `setup()`; these defaults apply then.
-- May use: registry.
local M = {}

--- Default configuration. Documented in `:h acp-config`.
M.defaults = {
  -- Agent used by `:AcpChat` without an argument.
  default_agent = 'claude',
  -- Agents by name. `cmd` is the program, `args` its arguments, `env` extra
  -- environment variables, `install` how to install it (shown by the health
  -- check). The ids of the ACP registry snapshot are presets too
  -- (`:AcpInstall`); entries given in `setup()` override both, and
  -- `name = false` removes one. `keep_daemons` lists the executable names
  -- of processes the agent starts that may outlive it and Neovim (default
  -- none: everything the agent started ends with it). `system_prompt`
  -- replaces the global one for this agent (`false`: none). `defaults` are
  -- set in every new session before the first message, e.g. { model =
  -- 'sonnet', mode = 'plan', thought_level = 'high' }: a config option id
  -- (or category), else the agent's modes for `mode` and models for `model`.
  agents = {
    claude = { cmd = 'claude-agent-acp', args = {}, env = {}, registry = 'claude-acp', install = 'npm install -g @agentclientprotocol/claude-agent-acp' },
    gemini = { cmd = 'gemini', args = { '--acp' }, env = {}, install = ':AcpInstall gemini (or npm install -g @google/gemini-cli)' },
    codex = { cmd = 'codex-acp', args = {}, env = {}, install = ':AcpInstall codex-acp (or npm install -g @zed-industries/codex-acp)' },
    goose = { cmd = 'goose', args = { 'acp' }, env = {}, install = 'https://block.github.io/goose/docs/getting-started/installation' },
    opencode = { cmd = 'opencode', args = { 'acp' }, env = {}, install = ':AcpInstall opencode (or npm install -g opencode-ai)' },
    copilot = { cmd = 'copilot', args = { '--acp' }, env = {}, install = 'npm install -g @github/copilot' },
    kimi = { cmd = 'kimi', args = { 'acp' }, env = {}, install = ':AcpInstall kimi' },
  },
  -- Agents installed by `:AcpInstall` (`:h acp-install-agents`).
  install = {
    -- Where each agent gets its own prefix.
    dir = vim.fn.stdpath('data') .. '/acp/agents',
    -- A registry file to use instead of the shipped snapshot (`false`: the
    -- snapshot, lua/acp/registry.json).
    registry = false,
    -- Where `:AcpInstall` fetches the registry before it installs or lists
    -- (curl, in the background; an https://, http:// or file:// URL). The
    -- copy is kept under stdpath('cache') and replaces the snapshot; when
    -- the fetch fails the registry in use stays. `false`: never fetch.
    registry_url = 'https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json',
    -- How long that fetch may take (ms).
    registry_timeout_ms = 10000,
    -- Install npm packages from local tarballs or folders instead of the
    -- npm registry (mirrors, offline machines): { [package name] = path,
    -- or a list of paths installed together, e.g. with its dependencies }.
    sources = {},
  },
  -- `@` and `/` completion in the input area: 'auto' (the built-in popup,
  -- unless the blink.cmp or nvim-cmp source is enabled), 'builtin' (always
  -- the built-in popup), 'none' (only the sources of completion plugins and
  -- the omnifunc, `<C-x><C-o>`).
  completion = 'auto',
  -- `:checkhealth acp`.
  health = {
    -- Start each installed agent and print what its `initialize` answer
    -- says (name, version, sign-in methods). Off: agents may be slow to
    -- start or touch the network.
    handshake = false,
  },
  -- The longest message (bytes) an agent may send; past it the agent is
  -- stopped with a message instead of growing memory without limit.
  max_message_bytes = 64 * 1024 * 1024,
  -- How long (ms) an agent may take before the chat says so.
  timeouts = {
    -- The answer to `initialize`; past it the agent is stopped (the next
    -- message starts it again).
    initialize = 30000,
    -- The answer to `session/new`; the next message tries again.
    session_new = 30000,
    -- After a cancel, the time the agent has to end its turn; past it the
    -- turn ends here, marked so, and its late output is ignored.
    cancel_grace = 5000,
    -- The answer to `authenticate` (`:AcpAuth`); past it the sign-in is
    -- given up with a message.
    authenticate = 60000,
    -- A chat's session idle this long (no turn, no update) is closed in the
    -- agent (`session/close`) when the agent can close and resume sessions;
    -- the next message resumes it first (`session/resume`). 0: never.
    idle_close = 30 * 60 * 1000,
  },
  -- The protocol trace of each agent (`:AcpTrace`, `:AcpTraceSave`): the
  -- last messages in both directions and the agent's stderr.
  trace = {
    max_messages = 5000,
  },
  -- MCP servers passed to every session (new, load, resume) of every agent:
  -- ACP `McpServer` objects, e.g. { name = 'fs', command = '/bin/mcp-fs',
  -- args = {}, env = {} } (stdio) or { type = 'http', name = 'api', url =
  -- 'https://...', headers = {} }. http and sse servers go only to agents that
  -- advertise them. An agent's own `mcp_servers` (in `agents`) are added; one
  -- of the same name replaces the global one.
  mcp_servers = {},
  -- Instructions added to every agent's own system prompt, in every session
  -- (new, loaded, resumed): a non-empty string, or false for none. Sent
  -- only to agents that advertise `sessionCapabilities.systemPrompt`; for
  -- the others the chat says it was not sent. `agents.<name>.system_prompt`
  -- replaces it for one agent.
  system_prompt = false,
  -- A message sent while a turn runs: 'client' keeps it in the chat's queue
  -- until the turn ends (`:AcpQueue` edits or drops it); 'agent' sends it at
  -- once to agents that queue prompts themselves (they advertise
  -- `promptQueueing`), and queues it for the others. Steering the running
  -- turn instead is `:AcpSend!` / `chat.keys.steer`.
  queue = 'client',
  -- Extra root directories for every session, besides its cwd (the project
  -- root). `fs/*` reads and writes stay inside the roots, and a terminal's
  -- cwd must be inside them. Roots do not confine what a command does: a
  -- command can read or change any file the user can (`:h acp-security`).
  roots = {},
  -- `fs/*` served from live buffers (unsaved text included).
  fs = {
    read = true,
    write = true,
    -- Allow reads and writes outside the session's roots.
    allow_outside_roots = false,
    -- Save a buffer after an agent write when it had no unsaved changes
    -- (otherwise it stays modified and the tool card says so).
    save_unmodified = true,
    -- Names (`*`/`?` patterns) that an agent write may not touch anywhere
    -- in its path: a hook or a `core.fsmonitor` under `.git` runs code.
    -- Set to {} to allow such writes.
    protected = { '.git' },
    -- A whole-file read of a file larger than this (bytes, not loaded in a
    -- buffer) is refused; the agent can still read parts (line/limit).
    read_max_bytes = 32 * 1024 * 1024,
    -- The most file text kept in memory, all chats together (bytes): what
    -- agents read or wrote (merge bases), the originals of changed files
    -- and the snapshots of files an edit names (review). Past it the
    -- oldest are dropped first; review then says such an original is
    -- unknown. Read once, when the core starts.
    kept_text_max_bytes = 256 * 1024 * 1024,
  },
  -- Protocol features of a schema newer than the core's SDK, advertised to
  -- agents only when on (`:h acp-experimental`).
  experimental = {
    -- Plans by id (`plan_update` with a checklist or Markdown,
    -- `plan_removed`): each shown in its turn, updated in place.
    plan_v2 = false,
    -- Subagents as child sessions: a folded block under the tool call that
    -- started each, with its own live transcript and state; their
    -- permission requests name them.
    subagents = false,
  },
  -- `terminal/*`: commands the agent runs, each in its own process group.
  -- They are not sandboxed (`:h acp-security`).
  terminal = {
    enabled = true,
    -- Allow a cwd outside the session's roots.
    allow_outside_roots = false,
    -- Runs `command` when the agent gives no `args` (a whole shell line).
    shell = 'sh',
    -- SIGTERM, then SIGKILL after this many ms (kill and release).
    kill_grace_ms = 2000,
    -- The most output kept of each command (bytes, its tail) when the
    -- agent sets no `outputByteLimit` of its own; at most 64 MiB.
    output_max_bytes = 1024 * 1024,
    -- When a `terminal/create` is shown to you before it runs:
    -- 'unrequested' (unless you allowed a permission request of the same
    -- turn that covers it), 'always', or 'never'.
    confirm = 'unrequested',
    -- Variables with exactly these values an agent may add to a command
    -- you allowed without asking again (a grant covers the command, its
    -- directory and every other variable shown). claude-code-acp sets
    -- CLAUDECODE=1 on every command; set {} to be asked about it too.
    inert_env = { CLAUDECODE = '1' },
    -- Commands get your environment without Neovim's own variables (`NVIM`,
    -- `NVIM_LISTEN_ADDRESS`, any holding this Neovim's server address) and
    -- without the variables whose names match these patterns (`*` any
    -- characters, `?` one; case is ignored). The agent's own `env` for a
    -- command is added on top. Replace the list to change it.
    env_deny = {
      '*_TOKEN',
      '*_SECRET',
      '*_SECRET_KEY',
      '*_API_KEY',
      '*_APIKEY',
      '*_PASSWORD',
      '*_PASSWD',
      '*_ACCESS_KEY',
      '*_PRIVATE_KEY',
      '*_CREDENTIALS',
      'AWS_*',
      'GITHUB_TOKEN',
      'GH_TOKEN',
      'ANTHROPIC_API_KEY',
      'OPENAI_API_KEY',
      'GEMINI_API_KEY',
      'GOOGLE_API_KEY',
    },
  },
  -- Markers that find the project root (the session's cwd). Without one,
  -- the root is the current file's directory (else the current directory).
  -- A chat rooted at your home directory or at / asks first.
  root_markers = { '.git', 'Cargo.toml', 'package.json', 'pyproject.toml', 'go.mod', 'Makefile' },
  chat = {
    -- 'right', 'left', 'bottom' or 'tab'.
    position = 'right',
    -- Width of a side chat: columns if > 1, fraction of the screen if <= 1.
    -- A fraction is kept between `min_width` and `max_width` columns. The
    -- width follows the screen: it is worked out again when the screen is
    -- resized and when the chat opens (a width you gave the chat by hand is
    -- kept until the screen is resized).
    width = 0.4,
    min_width = 50,
    max_width = 100,
    -- Columns the other windows keep beside a side chat: when the screen is
    -- too narrow for both minimums, the chat gets what is left (at least 20).
    min_code_width = 30,
    -- Height of a 'bottom' chat (its transcript and input): lines if > 1,
    -- fraction of the screen if <= 1; the windows above keep
    -- `min_code_height` lines. Follows the screen like the width.
    height = 0.4,
    min_code_height = 8,
    -- Height of the input area in lines.
    input_height = 6,
    -- Fold agent thoughts (reopen with `zo`).
    fold_thoughts = true,
    -- Start in insert mode in the input area when the chat opens.
    start_insert = true,
    -- Tool cards taller than this fold their body (`zo` opens it).
    card_max_lines = 24,
    -- Tree-sitter language of the transcript: 'acp_markdown' (the markdown
    -- parser with queries that stay fast on long chats) or 'markdown' (the
    -- stock one, for render-markdown.nvim or markview.nvim; `:h acp-render`).
    markdown = 'acp_markdown',
    -- Name chats, reviews and terminals in the tab labels (sets 'tabline'
    -- when you have none).
    tabline = true,
    -- Prompts kept for the input's history (<Up>/<Down>, <C-p>/<C-n>).
    history_size = 100,
    -- The chat's buffer-local keys; `false` maps nothing for that action.
    keys = {
      send = '<C-s>', -- insert mode, in the input: send
      submit = '<CR>', -- normal mode, in the input: send
      cancel = '<C-c>', -- both buffers, normal and insert: cancel the turn
      hide = 'q', -- transcript: hide the chat
      input = 'i', -- transcript: go to the input
      card = '<CR>', -- transcript: review / answer / open the card's terminal
      restore = 'R', -- transcript, on a turn's `## You`: restore the files to before it
      -- transcript, on a message of yours: edit it and resend it (the files
      -- and the conversation go back to before it); elsewhere `e` moves as usual
      edit_message = 'e',
      history_prev = '<C-p>', -- input: the previous prompt (also <Up> on the first line)
      history_next = '<C-n>', -- input: the next prompt (also <Down> on the last line)
      -- Both buffers, normal and insert: answer the permission request in
      -- view once it has been shown for `permissions.grace_ms` (the option
      -- of that kind; a request without one is not answered).
      permission_allow = '<M-y>', -- allow once
      permission_always = '<M-a>', -- allow always
      permission_reject = '<M-n>', -- reject once
      -- Input, normal and insert: steer the running turn with the message
      -- (`_session/steering`, for agents that offer it; queued for others).
      steer = '<M-s>',
    },
  },
  -- Context attached to prompts (`:h acp-context`): selections, `@`
  -- mentions, images.
  context = {
    -- Mentioned files up to this many bytes are embedded in the prompt when
    -- the agent accepts embedded context; larger ones are sent as links.
    embed_max_bytes = 100 * 1024,
    -- Most files listed for `@` completion per root (the walk respects
    -- .gitignore and runs off the main thread).
    max_files = 200000,
    -- Entries shown in the `@` completion menu.
    max_items = 50,
    -- Largest image `:AcpImage` and `:AcpPasteImage` attach, in bytes.
    image_max_bytes = 10 * 1024 * 1024,
  },
  -- Install the suggested global keymaps in `setup()` (`:h acp-keymaps`):
  -- `<leader>ac` opens the chat; in visual mode `<leader>aa` adds the
  -- selection to the next prompt and `<leader>as` starts `:'<,'>AcpSend `.
  -- Keys already mapped are left alone. Off by default: map the `<Plug>`
  -- mappings yourself (`:h acp-plug`).
  keymaps = false,
  -- Permission requests.
  permissions = {
    -- Requests answered "allow once" without asking: rules of a tool kind
    -- and a pattern over the command (or title) you would read in the
    -- float, e.g. { { kind = 'read' }, { kind = 'execute', pattern = 'git status*' } }
    -- (`*` any text, `?` one character; in `execute` rules neither matches
    -- ; & | ` $ ( ) < > or a line break, so 'git status*' never covers
    -- 'git status; rm -rf /'; a bare 'read' is { kind = 'read' }).
    -- The kind is the one the card had before the request: a request
    -- cannot change it. An "always" option is never picked for you. The
    -- card notes every automatic answer. Empty by default.
    auto_allow = {},
    -- The permission float never takes focus by itself. This key (normal
    -- and insert mode, in the chat and its input) moves into it; also
    -- `<Plug>(AcpPermission)`, <CR> on the card and `:AcpPermission`.
    -- `false` maps nothing.
    focus_key = '<C-a>',
    -- The float's keys do nothing for this many ms after it gains focus or
    -- shows another request, so keys meant for something else never answer.
    grace_ms = 300,
  },
  -- Chats kept on disk per project (`:h acp-history`): their transcripts
  -- and review records, under stdpath('state')/acp/chats/, so that
  -- :AcpSessions opens them again after a restart. The records of one chat
  -- stay under `chat_max_bytes` (its oldest records dropped); a project
  -- keeps at most `project_max_chats` chats in `project_max_bytes` (its
  -- oldest chats deleted). Read when the core starts.
  -- Checkpoints (`:h acp-checkpoints`): before every turn, the text of each
  -- file the agent changes in it, for `:AcpRestore`. Read when the core
  -- starts.
  checkpoints = {
    -- The texts of all of a chat's checkpoints; past it the oldest turns
    -- are dropped (the chat says so).
    max_bytes = 64 * 1024 * 1024,
    -- In a git repository, a snapshot tree of the work tree at each turn's
    -- start and end (a temporary index; the user's index and stash list are
    -- untouched), so files a command changed can be restored too.
    git = true,
  },
  history = {
    keep = true,
    chat_max_bytes = 1024 * 1024,
    project_max_bytes = 20 * 1024 * 1024,
    project_max_chats = 100,
  },
  -- A git worktree per chat (`:h acp-worktree`, `:AcpWorktree {name}`): its
  -- branch is `branch_prefix` .. name, its folder `dir`/name; `dir = false`
  -- puts it beside the repository, in <repo>/../<repo name>.worktrees (a
  -- relative `dir` is relative to the repository's folder).
  worktree = {
    dir = false,
    branch_prefix = 'acp/',
  },
  -- Notifications (`:h acp-notify`) when, in a chat out of sight (another
  -- tab, or Neovim without focus), a turn ends, a permission request or a
  -- request for input waits, the agent wants a sign-in or fails: one
  -- `vim.notify` and one `User AcpAttention` each; `desktop = true` adds a
  -- desktop notification (notify-send on Linux, osascript on macOS;
  -- nothing when missing). `events` picks the occasions.
  notify = {
    enabled = true,
    desktop = false,
    events = { turn_end = true, permission = true, elicitation = true, sign_in = true, error = true },
  },
  -- Show the agent's current file and line in a non-chat window.
  follow = false,
  follow_debounce_ms = 150,
  -- Log file of the core (agent stderr, protocol events, panics): private
  -- (0600), secrets redacted, rotated past `log_max_bytes` (two old files).
  log_file = vim.fn.stdpath('log') .. '/acp.log',
  log_max_bytes = 5 * 1024 * 1024,
  -- Prebuilt cores (`:h acp-prebuilt`): `:AcpBuild` first downloads the
  -- core of this version for the platform from `url`/v<version>/ (curl,
  -- checked against the release's SHA256SUMS and this checkout's sources)
  -- and builds with cargo only when there is none. `enabled = false`:
  -- always build with cargo.
  prebuilt = {
    enabled = true,
    url = 'https://github.com/acp-nvim/acp.nvim/releases/download',
  },
}

local function fail(path, msg)
  error(('acp.nvim: setup: `%s` %s'):format(path, msg), 0)
end

--- Options that also take `false` (turned off).
local may_be_false = { ['permissions.focus_key'] = true, ['install.registry'] = true, ['install.registry_url'] = true }
for key in pairs(M.defaults.chat.keys) do
  may_be_false['chat.keys.' .. key] = true
end

local function check_type(path, value, expected)
  if value == false and may_be_false[path] then
    return
  end
  if type(value) ~= expected then
    fail(path, ('must be a %s, got %s'):format(expected, type(value)))
  end
end

--- A list of ACP `McpServer` objects: a name, and a command (stdio) or a
--- `type` of 'http' / 'sse' with a url.
function M.check_mcp_servers(path, list)
  check_type(path, list, 'table')
  for i, s in ipairs(list) do
    local sp = ('%s[%d]'):format(path, i)
    check_type(sp, s, 'table')
    check_type(sp .. '.name', s.name, 'string')
    if s.type == 'http' or s.type == 'sse' then
      check_type(sp .. '.url', s.url, 'string')
    elseif s.type == nil or s.type == 'stdio' then
      check_type(sp .. '.command', s.command, 'string')
    else
      fail(sp .. '.type', "must be 'http', 'sse' or absent (stdio)")
    end
  end
end

--- A system prompt: a string with text in it, or false (none).
function M.check_system_prompt(p, value)
  if value == false then
    return
  end
  check_type(p, value, 'string')
  if vim.trim(value) == '' then
    fail(p, 'must not be empty (false: no system prompt)')
  end
end

--- Validates `user` against `defaults`: unknown keys and wrong types raise
--- an error naming the key. `agents` and `mcp_servers` hold user-named
--- entries and get their own checks.
local function validate(user, defaults, path)
  for key, value in pairs(user) do
    local p = path == '' and key or (path .. '.' .. key)
    local default = defaults[key]
    if default == nil and not (path == '' and key == 'default_agent') then
      fail(p, 'is not a known option (see :h acp-config)')
    end
    if p == 'agents' then
      check_type(p, value, 'table')
      for name, agent in pairs(value) do
        local ap = 'agents.' .. tostring(name)
        if agent ~= false then
          check_type(ap, agent, 'table')
        end
        for k, v in pairs(agent or {}) do
          if k == 'cmd' then
            check_type(ap .. '.cmd', v, 'string')
          elseif k == 'args' then
            check_type(ap .. '.args', v, 'table')
            for i, a in ipairs(v) do
              check_type(('%s.args[%d]'):format(ap, i), a, 'string')
            end
          elseif k == 'install' or k == 'registry' then
            check_type(ap .. '.' .. k, v, 'string')
          elseif k == 'env' then
            check_type(ap .. '.env', v, 'table')
            for ek, ev in pairs(v) do
              check_type(ap .. '.env.' .. tostring(ek), ev, 'string')
            end
          elseif k == 'mcp_servers' then
            M.check_mcp_servers(ap .. '.mcp_servers', v)
          elseif k == 'system_prompt' then
            M.check_system_prompt(ap .. '.system_prompt', v)
          elseif k == 'defaults' then
            check_type(ap .. '.defaults', v, 'table')
            for dk, dv in pairs(v) do
              if type(dk) ~= 'string' or dk == '' then
                fail(ap .. '.defaults', 'must map option ids to values, e.g. { model = "sonnet", mode = "plan" }')
              end
              if type(dv) ~= 'string' and type(dv) ~= 'boolean' then
                fail(ap .. '.defaults.' .. dk, 'must be a string (a value id or name) or a boolean')
              end
            end
          elseif k == 'keep_daemons' then
            check_type(ap .. '.keep_daemons', v, 'table')
            for i, d in ipairs(v) do
              check_type(('%s.keep_daemons[%d]'):format(ap, i), d, 'string')
              if d == '' or d:find('/', 1, true) then
                fail(('%s.keep_daemons[%d]'):format(ap, i), 'must be an executable name (no path)')
              end
            end
          else
            fail(ap .. '.' .. tostring(k), 'is not a known agent field (cmd, args, env, install, registry, mcp_servers, keep_daemons, system_prompt, defaults)')
          end
        end
      end
    elseif p == 'mcp_servers' then
      M.check_mcp_servers(p, value)
    elseif p == 'system_prompt' then
      M.check_system_prompt(p, value)
    elseif p == 'install.sources' then
      check_type(p, value, 'table')
    elseif p == 'queue' then
      if value ~= 'client' and value ~= 'agent' then
        fail(p, "must be 'client' or 'agent'")
      end
    elseif p == 'install.registry' then
      if value ~= false then
        check_type(p, value, 'string')
      end
    elseif p == 'install.registry_url' then
      if value ~= false then
        check_type(p, value, 'string')
        if not (value:match('^https?://[^%s]+$') or value:match('^file:///[^%s]*$')) then
          fail(p, 'must be an https://, http:// or file:/// URL, or false')
        end
      end
    elseif p == 'install.registry_timeout_ms' then
      if type(value) ~= 'number' or value ~= math.floor(value) or value < 1 or value > 600000 then
        fail(p, 'must be a whole number of ms from 1 to 600000')
      end
    elseif p == 'completion' then
      if not vim.tbl_contains({ 'auto', 'builtin', 'none' }, value) then
        fail(p, "must be 'auto', 'builtin' or 'none'")
      end
    elseif p == 'permissions.auto_allow' then
      check_type(p, value, 'table')
      for i, rule in ipairs(value) do
        local rp = ('%s[%d]'):format(p, i)
        if type(rule) == 'table' then
          check_type(rp .. '.kind', rule.kind, 'string')
          if rule.pattern ~= nil then
            check_type(rp .. '.pattern', rule.pattern, 'string')
          end
          for k in pairs(rule) do
            if k ~= 'kind' and k ~= 'pattern' then
              fail(rp .. '.' .. tostring(k), 'is not a rule field (kind, pattern)')
            end
          end
        else
          check_type(rp, rule, 'string')
        end
      end
    elseif p == 'terminal.confirm' then
      if not vim.tbl_contains({ 'unrequested', 'always', 'never' }, value) then
        fail(p, "must be 'unrequested', 'always' or 'never'")
      end
    elseif p == 'chat.width' or p == 'chat.height' then
      check_type(p, value, 'number')
      if value <= 0 or (value > 1 and value ~= math.floor(value)) then
        fail(p, 'must be a fraction of the screen (more than 0, up to 1) or a whole number of cells')
      end
    elseif p == 'chat.min_width' or p == 'chat.max_width' or p == 'chat.min_code_width' or p == 'chat.min_code_height' then
      check_type(p, value, 'number')
      if value ~= math.floor(value) or value < 1 or value > 10000 then
        fail(p, 'must be a whole number of cells, 1 or more')
      end
    elseif p == 'prebuilt.url' then
      if type(value) ~= 'string' or not value:match('^https?://[^/]') then
        fail(p, 'must be an http:// or https:// URL (the base of the release downloads)')
      end
    elseif p == 'chat.markdown' then
      if value ~= 'acp_markdown' and value ~= 'markdown' then
        fail(p, "must be 'acp_markdown' or 'markdown'")
      end
    elseif p == 'terminal.output_max_bytes' then
      -- The core's ceiling for any terminal's kept output (MAX_OUTPUT_LIMIT).
      if type(value) ~= 'number' or value ~= math.floor(value) or value < 1 or value > 64 * 1024 * 1024 then
        fail(p, 'must be a whole number of bytes from 1 to 64 MiB (67108864)')
      end
    elseif p == 'checkpoints.max_bytes' then
      if type(value) ~= 'number' or value ~= math.floor(value) or value < 0 or value >= 2 ^ 53 then
        fail(p, 'must be a whole number of bytes, 0 or more')
      end
    elseif p == 'fs.kept_text_max_bytes' then
      if type(value) ~= 'number' or value ~= math.floor(value) or value < 0 or value >= 2 ^ 53 then
        fail(p, 'must be a whole number of bytes, 0 or more')
      end
    elseif p == 'terminal.inert_env' then
      check_type(p, value, 'table')
      for k, v in pairs(value) do
        if type(k) ~= 'string' or type(v) ~= 'string' then
          fail(p, 'must map variable names to their exact string values, e.g. { CLAUDECODE = "1" }')
        end
      end
    elseif p == 'history.chat_max_bytes' or p == 'history.project_max_bytes' or p == 'history.project_max_chats' then
      if type(value) ~= 'number' or value ~= math.floor(value) or value < 1 or value >= 2 ^ 53 then
        fail(p, 'must be a whole number, 1 or more')
      end
    elseif p == 'worktree.dir' then
      if value ~= false then
        check_type(p, value, 'string')
      end
    elseif p == 'worktree.branch_prefix' then
      check_type(p, value, 'string')
      if value:find('[%s%c~^:?*%[\\]') or value:find('..', 1, true) or value:sub(1, 1) == '-' or value:sub(1, 1) == '/' then
        fail(p, "must be the start of a branch name (no spaces, .., ~ ^ : ? * [ \\, no leading - or /), e.g. 'acp/'")
      end
    elseif p == 'terminal.env_deny' then
      check_type(p, value, 'table')
      for i, pat in ipairs(value) do
        check_type(('%s[%d]'):format(p, i), pat, 'string')
      end
    elseif type(default) == 'table' and not vim.islist(default) then
      check_type(p, value, 'table')
      validate(value, default, p)
    elseif default ~= nil then
      check_type(p, value, type(default))
    elseif key == 'default_agent' then
      check_type(p, value, 'string')
    end
  end
end

M.options = vim.deepcopy(M.defaults)

--- Whether `id` is an entry of the registry file `path` (nil: the one the
--- current options name, else the snapshot).
local function in_registry(id, path)
  return require('acp.registry').entry(id, path or M.options.install.registry) ~= nil
end

--- Applies user options on top of the defaults. Raises on invalid input.
function M.setup(opts)
  opts = opts or {}
  if type(opts) ~= 'table' then
    error('acp.nvim: setup() takes a table, got ' .. type(opts), 0)
  end
  validate(opts, M.defaults, '')
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  -- A list given by the user replaces the default list (older Neovims merge
  -- lists index by index).
  if opts.terminal and opts.terminal.env_deny then
    merged.terminal.env_deny = vim.deepcopy(opts.terminal.env_deny)
  end
  -- So does the user's inert_env ({} declares no pair inert).
  if opts.terminal and opts.terminal.inert_env then
    merged.terminal.inert_env = vim.deepcopy(opts.terminal.inert_env)
  end
  -- A user agent with a `cmd` replaces the preset of that name as a whole,
  -- so that e.g. `args` do not mix; without one it adjusts the preset (a
  -- hand-written one, or a registry id's installed copy). `false` removes it.
  for name, agent in pairs(opts.agents or {}) do
    if agent == false then
      merged.agents[name] = false
    elseif agent.cmd then
      merged.agents[name] = vim.tbl_extend('keep', agent, { args = {}, env = {}, _user_cmd = true })
    else
      local base = M.defaults.agents[name]
      if not base and not in_registry(agent.registry or name, opts.install and opts.install.registry or nil) then
        error(('acp.nvim: setup: `agents.%s.cmd` is required'):format(name), 0)
      end
      merged.agents[name] = vim.tbl_extend('force', vim.deepcopy(base or { args = {}, env = {} }), agent, { _user_args = agent.args ~= nil })
    end
  end
  local default = merged.default_agent and merged.agents[merged.default_agent]
  local registry = merged.install.registry or nil
  if
    merged.default_agent
    and (default == false or (default == nil and not in_registry(merged.default_agent, registry)))
  then
    error(('acp.nvim: setup: `default_agent` is %q, which is not in `agents`'):format(merged.default_agent), 0)
  end
  if merged.chat.min_width > merged.chat.max_width then
    error(('acp.nvim: setup: `chat.min_width` (%d) is more than `chat.max_width` (%d)'):format(merged.chat.min_width, merged.chat.max_width), 0)
  end
  M.options = merged
  return merged
end

return M
