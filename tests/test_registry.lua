-- The ACP registry: the shipped snapshot, its refresh by :AcpInstall (from a
-- server on 127.0.0.1 or a file, never the network), the presets that
-- follow it.
local T = require('tests.helpers.expect')
local Child = require('tests.helpers.child')

local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end
  _G.picked = nil
  vim.ui.select = function(items, opts, cb)
    _G.picked = vim.tbl_map(function(e) return opts.format_item(e) end, items)
    cb(nil)
  end
]]

-- The entry of the published registry's claude-acp/agent.json (its shape:
-- an npx package and no args), and two more.
local function fixture()
  return { version = '1.0.0', agents = {
    { id = 'claude-acp', name = 'Claude Agent', version = '0.20.0', description = "ACP wrapper for Anthropic's Claude",
      repository = 'https://github.com/zed-industries/claude-agent-acp', authors = { 'Anthropic' }, license = 'proprietary',
      distribution = { npx = { package = '@zed-industries/claude-agent-acp@0.20.0' } } },
    { id = 'fast-agent', name = 'fast-agent', version = '0.10.48', description = 'fast',
      distribution = { uvx = { package = 'fast-agent-mcp==0.10.48', args = { 'acp' } } } },
    { id = 'kimi', name = 'Kimi CLI', version = '1.51.0', description = 'Kimi',
      distribution = { uvx = { package = 'kimi-cli==1.51.0', args = { 'acp' } } } },
  } }
end

local function notes(child)
  return table.concat(vim.tbl_map(function(n) return n.msg end, child:lua('return _G.notes')), '\n')
end

-- A python3 http.server on 127.0.0.1 serving `dir`: its port and job id.
local function serve(dir)
  local out = {}
  local job = vim.fn.jobstart({ 'python3', '-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', dir }, {
    on_stdout = function(_, data) vim.list_extend(out, data) end,
  })
  local port
  T.wait(function()
    port = table.concat(out, '\n'):match('port (%d+)')
    return port ~= nil
  end, 5000, 'http.server did not start')
  return tonumber(port), job
end

return {
  { 'the shipped snapshot parses: unique ids, each with a name, a version and a distribution', function()
    local child = Child.new()
    local r = child:lua([[
      local reg = require('acp.registry')
      local data = reg.read_json(reg.snapshot)
      local ids, bad = {}, {}
      for _, e in ipairs(data.agents) do
        if ids[e.id] or type(e.name) ~= 'string' or type(e.version) ~= 'string' or type(e.distribution) ~= 'table' then
          bad[#bad + 1] = e.id
        end
        ids[e.id] = true
      end
      return { n = #data.agents, bad = bad, invalid = reg.invalid(data) or false, snapshot = data.snapshot,
               in_use = #require('acp.agents.install').registry().agents }
    ]])
    T.eq(r.bad, {})
    T.eq(r.invalid, false)
    T.truthy(r.n >= 11, 'agents in the snapshot: ' .. r.n)
    T.eq(r.in_use, r.n, 'without a fetched copy the snapshot is in use')
    T.match(r.snapshot, '^%d%d%d%d%-%d%d%-%d%d$')
  end },

  { 'the shipped snapshot holds claude-acp among 100 or more agents; the claude preset resolves to its npm package', function()
    local child = Child.new({ env = { PATH = '/usr/bin:/bin' } })
    child:lua(RECORD_NOTIFY)
    local r = child:lua([[
      local reg = require('acp.registry')
      local install = require('acp.agents.install')
      local data = reg.read_json(reg.snapshot)
      local e = reg.entry('claude-acp', reg.snapshot)
      local id = install.resolve_id('claude')
      local pkg = e and e.distribution.npx and e.distribution.npx.package
      return { n = #data.agents, has = e ~= nil, id = id, method = e and install.method(e), pkg = pkg, name = e and e.name,
               preset = require('acp.config').options.agents.claude.registry }
    ]])
    T.truthy(r.n >= 100, 'agents in the snapshot: ' .. r.n)
    T.eq(r.has, true)
    T.eq(r.preset, 'claude-acp')
    T.eq(r.id, 'claude-acp')
    T.eq(r.method, 'npx')
    T.match(r.pkg, '^@agentclientprotocol/claude%-agent%-acp@%d+%.%d+%.%d+$')
    -- Missing, the preset says to install the snapshot's entry and its package.
    child:cmd('AcpChat')
    local name = r.pkg:match('^(.+)@')
    T.match(notes(child), vim.pesc((":AcpInstall claude-acp (the ACP registry's %s: npm package %s), or npm install -g %s"):format(r.name, name, name)))
    T.eq(child:lua([[return require('acp').current() == nil]]), true)
  end },

  { 'the kimi preset runs `kimi acp`, as its registry entry does', function()
    local bin = T.tmpdir('bin')
    T.write_file(bin .. '/kimi', '#!/bin/sh\nexit 0\n')
    vim.uv.fs_chmod(bin .. '/kimi', tonumber('755', 8))
    local child = Child.new({ env = { PATH = bin .. ':/usr/bin:/bin' } })
    local r = child:lua([[
      local spec = require('acp.agents').spec('kimi', vim.fn.getcwd())
      local e = require('acp.agents.install').entry('kimi')
      local target = e.distribution.binary and e.distribution.binary['linux-x86_64']
      return { args = spec.args, cmd = spec.cmd, registry = target and target.args or e.distribution.uvx.args }
    ]])
    T.eq(r.cmd, 'kimi')
    T.eq(r.args, { 'acp' })
    T.eq(r.args, r.registry)
  end },

  { 'the claude preset, when missing, names its registry entry and npm package; :AcpInstall claude installs claude-acp, offered first', function()
    local reg = T.tmpdir('reg') .. '/registry.json'
    T.write_file(reg, vim.json.encode(fixture()))
    local without = fixture()
    table.remove(without.agents, 1)
    local noclaude = T.tmpdir('reg') .. '/noclaude.json'
    T.write_file(noclaude, vim.json.encode(without))
    local child = Child.new({ env = { PATH = '/usr/bin:/bin' } })
    child:lua(RECORD_NOTIFY)
    -- A registry without claude-acp: the preset's own hint.
    child:lua([[require('acp').setup({ install = { registry = ... } })]], { noclaude })
    child:cmd('AcpChat')
    T.match(notes(child), 'agent `claude` needs `claude%-agent%-acp`, which is not in PATH%. Install it: npm install %-g @agentclientprotocol/claude%-agent%-acp, or set agents%.claude%.cmd')
    T.eq(child:lua([[return require('acp').current() == nil]]), true)
    -- A registry with claude-acp: its entry says what to install.
    child:lua([[_G.notes = {}; require('acp').setup({ install = { registry = ... } })]], { reg })
    child:cmd('AcpChat')
    T.match(notes(child), "agent `claude` needs `claude%-agent%-acp`, which is not in PATH%. Install it: :AcpInstall claude%-acp %(the ACP registry's Claude Agent: npm package @zed%-industries/claude%-agent%-acp%), or npm install %-g @zed%-industries/claude%-agent%-acp, or set agents%.claude%.cmd")
    child:lua([[require('acp.agents.install').install = function(id) _G.installed_id = id end]])
    child:cmd('AcpInstall claude')
    T.eq(child:lua('return _G.installed_id'), 'claude-acp')
    child:cmd('AcpInstall')
    local picked = child:lua('return _G.picked')
    T.match(picked[1], '^claude%-acp · 0%.20%.0 · npx · agent claude · ')
  end },

  { ':AcpInstall refreshes the registry from install.registry_url (127.0.0.1) into stdpath("cache") without blocking', function()
    local dir = T.tmpdir('served')
    T.write_file(dir .. '/registry.json', vim.json.encode(fixture()))
    local port, job = serve(dir)
    local child = Child.new()
    child:lua(RECORD_NOTIFY)
    child:lua([[require('acp').setup({ install = { registry_url = ... } })]], { ('http://127.0.0.1:%d/registry.json'):format(port) })
    -- Before the refresh the shipped snapshot is in use.
    T.eq(child:lua([[
      local reg = require('acp.registry')
      return vim.deep_equal(require('acp.agents.install').entry('claude-acp'), reg.entry('claude-acp', reg.snapshot))
    ]]), true)
    local ms = child:lua([[local t = vim.uv.hrtime(); vim.cmd('AcpInstall'); return (vim.uv.hrtime() - t) / 1e6]])
    T.truthy(ms < 100, ':AcpInstall returned after ' .. ms .. ' ms')
    child:wait_for('return _G.picked ~= nil', 10000)
    vim.fn.jobstop(job)
    T.match(notes(child), 'the ACP registry is refreshed: 3 agents')
    T.eq(#child:lua('return _G.picked'), 3)
    local r = child:lua([[
      local path = vim.fn.stdpath('cache') .. '/acp/registry.json'
      return { cached = vim.uv.fs_stat(path) ~= nil, claude = require('acp.agents.install').entry('claude-acp').version == '0.20.0',
               names = vim.tbl_contains(require('acp.agents').names(), 'fast-agent') }
    ]])
    T.eq(r, { cached = true, claude = true, names = true })
    -- A later session reads the fetched copy without fetching.
    local again = Child.new({ env = { XDG_CACHE_HOME = child:lua([[return vim.env.XDG_CACHE_HOME]]) } })
    T.eq(again:lua([[return #require('acp.agents.install').registry().agents]]), 3)
  end },

  { 'a file:// registry_url refreshes too; a refused, slow or wrong source keeps the registry in use and says so', function()
    local good = T.tmpdir('file') .. '/registry.json'
    T.write_file(good, vim.json.encode(fixture()))
    local wrong = T.tmpdir('file') .. '/wrong.json'
    T.write_file(wrong, '{"agents": {}}')
    local child = Child.new()
    child:lua(RECORD_NOTIFY)
    -- Wide enough for the whole notice (it is cut to one screen line).
    child:lua('vim.o.columns = 240')
    -- Refused (nothing listens on port 9): the shipped snapshot stays.
    child:lua([[require('acp').setup({ install = { registry_url = 'http://127.0.0.1:9/registry.json' } })]])
    child:cmd('AcpInstall')
    child:wait_for('return _G.picked ~= nil', 10000)
    T.match(notes(child), 'registry not refreshed, the snapshot is used: .*127%.0%.0%.1')
    -- The picker offers the snapshot's agents that install on this platform.
    local n = child:lua([[
      local install = require('acp.agents.install')
      return #vim.tbl_filter(install.method, require('acp.registry').read(require('acp.registry').snapshot).agents)
    ]])
    T.truthy(n > 3, 'installable agents in the snapshot: ' .. n)
    T.eq(#child:lua('return _G.picked'), n)
    -- A file.
    child:lua([[_G.notes, _G.picked = {}, nil; require('acp').setup({ install = { registry_url = 'file://' .. ... } })]], { good })
    child:cmd('AcpInstall')
    child:wait_for('return _G.picked ~= nil', 10000)
    T.match(notes(child), 'refreshed: 3 agents')
    -- Not a registry: refused, the copy fetched before stays.
    child:lua([[_G.notes, _G.picked = {}, nil; require('acp').setup({ install = { registry_url = 'file://' .. ... } })]], { wrong })
    child:cmd('AcpInstall')
    child:wait_for('return _G.picked ~= nil', 10000)
    T.match(notes(child), 'the fetched copy is used: what it serves is no registry %(it holds no list of agents%)')
    T.eq(#child:lua('return _G.picked'), 3)
    -- A server that never answers: the timeout ends the wait.
    local srv = vim.fn.jobstart({ 'python3', '-u', '-c', [[
import socket, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(5); print(s.getsockname()[1], flush=True); time.sleep(60)]] },
      { on_stdout = function(_, d) _G.slow_port = _G.slow_port or tonumber(d[1]) end })
    T.wait(function() return _G.slow_port ~= nil end, 5000)
    child:lua([[_G.notes, _G.picked = {}, nil; require('acp').setup({ install = { registry_url = ..., registry_timeout_ms = 1000 } })]],
      { ('http://127.0.0.1:%d/registry.json'):format(_G.slow_port) })
    local t0 = vim.uv.hrtime()
    child:cmd('AcpInstall')
    child:wait_for('return _G.picked ~= nil', 10000)
    vim.fn.jobstop(srv)
    T.truthy((vim.uv.hrtime() - t0) / 1e6 < 5000)
    T.match(notes(child), 'registry not refreshed, .*: .*[Tt]imed out')
    T.eq(#child:lua('return _G.picked'), 3)
  end },

  { 'install.registry_url and registry_timeout_ms are validated', function()
    local child = Child.new()
    local errs = child:lua([[
      local out = {}
      for _, opts in ipairs({
        { install = { registry_url = 'ftp://example.org/r.json' } },
        { install = { registry_url = 42 } },
        { install = { registry_timeout_ms = 0 } },
        { install = { registry_url = false } },
        { install = { registry_url = 'file:///tmp/r.json', registry_timeout_ms = 500 } },
      }) do
        local ok, err = pcall(require('acp.config').setup, opts)
        out[#out + 1] = ok and 'accepted' or err
      end
      return out
    ]])
    T.eq(errs[1], 'acp.nvim: setup: `install.registry_url` must be an https://, http:// or file:/// URL, or false')
    T.eq(errs[2], 'acp.nvim: setup: `install.registry_url` must be a string, got number')
    T.eq(errs[3], 'acp.nvim: setup: `install.registry_timeout_ms` must be a whole number of ms from 1 to 600000')
    T.eq(errs[4], 'accepted')
    T.eq(errs[5], 'accepted')
  end },
}
