-- Process lifetime (groups known by reaping), the log (private, rotated,
-- local ISO time, no secrets, stderr capped) and the project root (the
-- file's directory without a marker; $HOME or / asks first).
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

--- A directory outside the repository (no project marker above it).
local function outside(name)
  local dir = vim.fn.resolve(vim.fn.fnamemodify(vim.fn.tempname(), ':h')) .. '/acp-' .. name .. '-' .. vim.fn.getpid()
  vim.fn.delete(dir, 'rf')
  vim.fn.mkdir(dir, 'p')
  return dir
end

return {
  -- Process lifetime ------------------------------------------------------------------------
  { 'an agent that dies leaving a child in its group: the child is stopped at once (group known by reaping)', function()
    local child, paths = H.start({ agent_info = { spawn_child = true }, turns = { { match = 'die', steps = { { message = 'bye' }, { crash = { code = 3 } } } } } })
    H.open(child)
    local kid = T.wait(function()
      local e = H.events_of(paths, 'child')[1]
      return e and e.pid
    end, 3000)
    T.truthy(H.pid_alive(kid))
    H.turn(child, 'die')
    T.wait(function()
      return not H.pid_alive(kid)
    end, 3000, 'the orphan of the dead agent is stopped while Neovim runs')
    T.eq(child:lua('return 1'), 1)
    T.match(H.transcript_text(child), 'exited with code 3')
  end },

  { 'terminal groups: recorded when the leader is reaped, forgotten and never signalled once only the anchor is left', function()
    local dir = H.project()
    local marker = dir .. '/bg.pid'
    local child = H.start({ cwd = dir, config = { terminal = { confirm = 'never' } }, turns = { { match = 'bg', steps = {
      H.req('terminal/create', { command = ('sleep 771 & echo $! > %s'):format(marker) }),
      { message = 'started' },
    } } } })
    H.open(child)
    H.turn(child, 'bg')
    local bg = tonumber(T.wait(function()
      return (T.read_file(marker) or ''):match('%d+')
    end, 5000))
    -- The shell (the leader) exits; its background child keeps the group.
    child:wait_for([[return next(require('acp.editor.terminal').jobs) == nil]], 3000)
    local g = child:lua([[
      local pgid, g = next(require('acp.editor.terminal').groups)
      return { pgid = pgid, reaped = g.reaped, members = vim.tbl_map(function(m) return m.pid end, g.members) }
    ]])
    T.eq(g.reaped, true)
    T.eq(g.members, { bg })
    -- The member dies outside the plugin: only the anchor holds the group
    -- id now; the group is forgotten and the anchor ends, after which the
    -- id could be reused, so nothing may be sent to it any more.
    vim.uv.kill(bg, 'sigkill')
    T.wait(function()
      return not H.pid_alive(bg)
    end, 3000)
    child:wait_for([[return next(require('acp.editor.terminal').groups) == nil]], 3000)
    local sent = child:lua([[
      local sent, kill = {}, vim.uv.kill
      vim.uv.kill = function(pid, sig) sent[#sent + 1] = { pid, sig } return kill(pid, sig) end
      require('acp.editor.terminal').kill_all()
      vim.uv.kill = kill
      return sent
    ]])
    T.eq(sent, {}, 'no signal to a group no longer known to be ours')
  end },

  -- The log -------------------------------------------------------------------------------
  { 'the log: 0600, local ISO timestamps, secrets redacted, stderr capped per line and per second, rotated; :AcpLog opens it', function()
    local steps = { { stderr = 'boot OPENAI_API_KEY=sk-secret-1 ok' }, { stderr = ('L'):rep(5000) } }
    for i = 1, 300 do
      steps[#steps + 1] = { stderr = ('flood %d API_KEY=sk-flood-%d'):format(i, i) }
    end
    vim.list_extend(steps, { { sleep_ms = 1100 }, { stderr = 'after the flood' }, { message = 'done' } })
    local child, paths = H.start({ config = { log_max_bytes = 4096 }, turns = { { match = 'noisy', steps = steps } } })
    H.open(child)
    H.turn(child, 'noisy', 10000)
    child:wait_for(function(p)
      return (vim.fn.readfile(p) or {})[1] ~= nil and table.concat(vim.fn.readfile(p), '\n'):find('after the flood', 1, true) ~= nil
    end, 5000, { paths.log })
    local all = {}
    for _, p in ipairs({ paths.log .. '.2', paths.log .. '.1', paths.log }) do
      if vim.uv.fs_stat(p) then
        T.eq(vim.uv.fs_stat(p).mode % 512, tonumber('600', 8), p .. ' is private')
        T.truthy(vim.uv.fs_stat(p).size <= 4096 + 2048, p .. ' is within the cap')
        vim.list_extend(all, vim.split(T.read_file(p), '\n', { trimempty = true }))
      end
    end
    T.truthy(vim.uv.fs_stat(paths.log .. '.1'), 'rotated')
    T.falsy(vim.uv.fs_stat(paths.log .. '.3'), 'two old files at most')
    local text = table.concat(all, '\n')
    T.no_match(text, 'sk%-secret')
    T.no_match(text, 'sk%-flood')
    T.match(text, 'OPENAI_API_KEY=%[redacted%]')
    T.match(text, '%[test%] L+… %[4000 bytes cut%]')
    local flood = 0
    for _ in text:gmatch('%[test%] flood %d+') do
      flood = flood + 1
    end
    T.truthy(flood <= 50, flood .. ' flood lines logged (at most 50 a second)')
    T.match(text, '%[test%] %d+ stderr line%(s%) not logged %(over 50 a second%)')
    for _, line in ipairs(all) do
      if not line:match('^%s') and not line:match('^Last stderr') then
        T.match(line, '^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%d[+-]%d%d:%d%d %u+ ', 'timestamped')
      end
    end
    -- The stderr tail in the chat still has the lines (the log caps only itself).
    child:cmd('AcpLog')
    T.eq(child:lua([[return vim.api.nvim_buf_get_name(0)]]), paths.log)
  end, timeout = 30000 },

  -- The project root ----------------------------------------------------------------------
  { 'no project marker: the root is the current file\'s directory, not the current directory', function()
    local base = outside('root')
    T.write_file(base .. '/proj/sub/a.txt', 'a\n')
    local child = H.start({ cwd = base })
    child:cmd('edit ' .. base .. '/proj/sub/a.txt')
    T.eq(child:lua([[return require('acp').project_root()]]), base .. '/proj/sub')
    H.open(child)
    T.eq(child:lua([[return require('acp').current().root]]), base .. '/proj/sub')
    vim.fn.delete(base, 'rf')
  end },

  { 'a chat rooted at $HOME or / asks first (vim.ui.select): yes opens it, cancel does not', function()
    local base = outside('home')
    local home = base .. '/home'
    T.write_file(home .. '/notes.txt', 'n\n')
    local child = H.start({ cwd = home, env = { HOME = home } })
    child:lua([[
      _G.asked = {}
      vim.ui.select = function(items, opts, on_choice)
        _G.asked[#_G.asked + 1] = opts.prompt
        vim.schedule(function() on_choice(_G.pick == 'yes' and items[1] or nil) end)
      end
    ]])
    child:cmd('edit ' .. home .. '/notes.txt')
    T.eq(child:lua([[return require('acp').project_root()]]), home)
    child:lua([[_G.pick = 'no'; vim.cmd('AcpChat')]])
    child:wait_for([[return #_G.asked == 1]])
    vim.wait(100)
    T.eq(child:lua([[return require('acp').current() == nil]]), true, 'not opened')
    T.contains(child:lua([[return _G.asked[1] ]]), 'the root would be ' .. home)
    T.eq(child:lua([[return vim.tbl_count(require('acp.core').is_loaded() and require('acp.core').agent_pids() or {})]]), 0, 'no agent started')
    -- :AcpSend asks too, and sends after a yes.
    child:lua([[_G.pick = 'yes'; assert(require('acp').send('hello home'))]])
    child:wait_for([[local v = require('acp').current(); return v and v.turns_ended == 1]], 5000)
    T.eq(child:lua([[return require('acp').current().root]]), home)
    T.contains(H.transcript_text(child), 'echo: hello home')
    -- Asked once per root and session.
    child:cmd('tabnew')
    child:lua([[vim.cmd('cd ' .. vim.fn.fnameescape(...)); vim.cmd('AcpChat')]], { home })
    T.eq(child:lua([[return #_G.asked]]), 2)
    -- And / asks.
    child:cmd('tabnew')
    child:lua([[vim.cmd('cd /'); _G.pick = 'no'; vim.cmd('AcpChat')]])
    child:wait_for([[return #_G.asked == 3]])
    T.contains(child:lua([[return _G.asked[3] ]]), 'the root would be /')
    vim.fn.delete(base, 'rf')
  end },
}
