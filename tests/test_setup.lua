-- Loading, configuration, errors and the health check.
local T = require('tests.helpers.expect')
local Child = require('tests.helpers.child')
local H = require('tests.helpers.acp')

-- Records vim.notify calls in the child as { {msg, level}, ... } in _G.notes.
local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end
]]

return {
  { 'startup loads nothing but the command definitions', function()
    local child = Child.new()
    local r = child:lua([[
      local mods = {}
      for name in pairs(package.loaded) do
        if name == 'acp' or name:match('^acp[._]') then mods[#mods + 1] = name end
      end
      return { mods = mods, chat = vim.fn.exists(':AcpChat'), send = vim.fn.exists(':AcpSend'),
               cancel = vim.fn.exists(':AcpCancel'), build = vim.fn.exists(':AcpBuild'),
               log = vim.fn.exists(':AcpLog'), perm = vim.fn.exists(':AcpPermission') }
    ]])
    T.eq(r.mods, {})
    for _, k in ipairs({ 'chat', 'send', 'cancel', 'build', 'log', 'perm' }) do
      T.eq(r[k], 2, 'command for ' .. k)
    end
  end },

  { 'works without setup(): the default agent is used and a missing command says what to install', function()
    local child = Child.new({ env = { PATH = '/usr/bin:/bin' } })
    child:lua(RECORD_NOTIFY)
    child:cmd('AcpChat')
    local msg = child:lua('return _G.notes[1].msg')
    -- The shipped registry snapshot has claude-acp: its entry comes first.
    T.match(msg, "agent `claude` needs `claude%-agent%-acp`, which is not in PATH%. Install it: :AcpInstall claude%-acp %(the ACP registry's [^:]+: npm package @agentclientprotocol/claude%-agent%-acp%), or npm install %-g @agentclientprotocol/claude%-agent%-acp, or set agents%.claude%.cmd")
  end },

  { 'setup() validates keys and types with a clear message', function()
    local child = Child.new()
    local errs = child:lua([[
      local config = require('acp.config')
      local out = {}
      for _, opts in ipairs({
        { chat = { width = 'wide' } },
        { colour = 'red' },
        { agents = { x = { cmd = 'x', args = 'notalist' } } },
        { agents = { x = { cmd = 'x', flags = {} } } },
        { agents = { x = { args = {} } } },
        { default_agent = 'nope' },
      }) do
        local ok, err = pcall(config.setup, opts)
        out[#out + 1] = ok and 'accepted' or err
      end
      return out
    ]])
    T.eq(errs[1], 'acp.nvim: setup: `chat.width` must be a number, got string')
    T.eq(errs[2], 'acp.nvim: setup: `colour` is not a known option (see :h acp-config)')
    T.eq(errs[3], 'acp.nvim: setup: `agents.x.args` must be a table, got string')
    T.eq(errs[4], 'acp.nvim: setup: `agents.x.flags` is not a known agent field (cmd, args, env, install, registry, mcp_servers, keep_daemons, system_prompt, defaults)')
    T.eq(errs[5], 'acp.nvim: setup: `agents.x.cmd` is required')
    T.match(errs[6], '`default_agent` is "nope", which is not in `agents`')
    -- Through the public API the error is a notification, not a traceback.
    child:lua(RECORD_NOTIFY)
    T.eq(child:lua([[return require('acp').setup({ chat = { width = 'wide' } })]]), false)
    T.eq(child:lua([[return _G.notes[1].level]]), vim.log.levels.ERROR)
    -- A valid config merges over the defaults; a user agent replaces one.
    local o = child:lua([[
      local c = require('acp.config').setup({ agents = { gemini = { cmd = 'my-gemini' } }, chat = { width = 100 } })
      return { args = c.agents.gemini.args, claude = c.agents.claude.cmd, width = c.chat.width, h = c.chat.input_height }
    ]])
    T.eq(o, { args = {}, claude = 'claude-agent-acp', width = 100, h = 6 })
  end },

  { 'a missing core gives one message naming the build command', function()
    local child = Child.new()
    child:lua(RECORD_NOTIFY)
    child:lua([[require('acp.core').candidates = function() return { '/nonexistent/libacp_core.so' } end]])
    child:lua([[require('acp').setup({ default_agent = 'x', agents = { x = { cmd = 'true' } } })]])
    child:cmd('AcpChat')
    local notes = child:lua([[return _G.notes]])
    T.eq(#notes, 1)
    T.match(notes[1].msg, 'the Rust core is not built; run :AcpBuild %(or `cargo build %-%-release` in .+%)')
    T.no_match(notes[1].msg, 'traceback')
    T.eq(child:lua([[return package.loaded.acp_core == nil]]), true)
  end },

  { 'a core built from other sources is refused with the build command', function()
    local child = Child.new()
    child:lua(RECORD_NOTIFY)
    child:lua([[require('acp.core').source_stamp = function() return 'not-the-same' end]])
    child:lua([[require('acp').setup({ default_agent = 'x', agents = { x = { cmd = 'true' } } })]])
    child:cmd('AcpChat')
    local notes = child:lua([[return _G.notes]])
    T.eq(#notes, 1)
    T.match(notes[1].msg, 'was built from other sources; rebuild with :AcpBuild')
  end },

  { 'the stamp computed in Lua matches the freshly built library', function()
    local child = Child.new()
    local r = child:lua([[
      local core = assert(require('acp.core').load())
      return { want = require('acp.core').source_stamp(), have = core.source_stamp() }
    ]])
    T.eq(#r.want, 64)
    T.eq(r.have, r.want)
  end },

  { 'a panic in the core becomes a Lua error, is logged, and Neovim stays up', function()
    local child, paths = H.start()
    H.open(child)
    local r = child:lua([[
      local ok, err = pcall(require('acp_core')._panic)
      return { ok = ok, err = tostring(err) }
    ]])
    T.eq(r.ok, false)
    T.match(r.err, 'deliberate test panic')
    T.eq(child:lua('return 1 + 1'), 2)
    T.match(T.read_file(paths.log), 'panic: .*deliberate test panic')
    T.no_match(child:stderr(), 'panic')
    -- The chat still works afterwards.
    H.turn(child, 'stream')
  end },

  { 'build() runs cargo asynchronously and :AcpLog build opens its log', function()
    local child = Child.new()
    local log = T.tmpdir('build') .. '/build.log'
    child:lua([[
      require('acp.core').build_log = ...
      _G.build_done = nil
      require('acp').build({ from = 'source' }, function(ok) _G.build_done = ok end)
      _G.returned_at_once = _G.build_done == nil
    ]], { log })
    T.eq(child:lua('return _G.returned_at_once'), true)
    child:wait_for('_G.build_done ~= nil', 240000)
    T.eq(child:lua('return _G.build_done'), true)
    local text = T.read_file(log)
    T.match(text, '%$ cargo build %-%-release')
    T.match(text, 'Finished')
    T.match(text, 'exit code 0')
    child:cmd('AcpLog build')
    T.eq(child:lua('return vim.api.nvim_buf_get_name(0)'), log)
  end, timeout = 250000 },

  { ':checkhealth acp says what is wrong', function()
    local child = Child.new({ env = { PATH = '/usr/bin:/bin' } })
    child:lua([[require('acp').setup({ default_agent = 'gemini' })]])
    child:cmd('checkhealth acp')
    local text = table.concat(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]]), '\n')
    T.match(text, 'OK core [%d.]+ loaded, built from the current sources')
    T.match(text, 'ERROR gemini %(default%): `gemini` is not in PATH')
    T.match(text, 'claude: `claude%-agent%-acp` is not in PATH')
  end },
}
