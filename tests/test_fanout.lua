-- One prompt to several agents: :AcpFanout {agent} {agent}... opens a chat
-- per agent, each in its own git worktree (acp/<slug>-<agent>) and tab, all
-- sent the same prompt; :AcpCompare lists what each worktree changed against
-- the base commit, shows a file of each side by side in diff mode, and `t`
-- takes one agent's work (merges its branch), the others stay or go.
-- Real git in temporary folders; two scripted agents whose turns write the
-- same file differently and a file of their own (fs/write_text_file).
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

local G = require('tests.helpers.git')
local git = G.git

--- A repository on `main` with greeting.txt committed, alone in its own temporary folder
--- (its worktrees go to <tmp>/repo.worktrees), at a fixed date: the same commit id every
--- run (the screenshot shows it).
local function repo()
  return G.repo('fan', { ['greeting.txt'] = 'hello\n' }, nil, { date = '2024-01-01T00:00:00Z' })
end

local function exists(path)
  return vim.uv.fs_lstat(path) ~= nil
end

local PROMPT = 'Fix the greeting'

--- The worktree folder of agent `agent` for PROMPT.
local function wt_of(dir, agent)
  return vim.fs.dirname(dir) .. '/repo.worktrees/fix-the-greeting-' .. agent
end

--- A scripted agent `name` whose turn writes greeting.txt (`greeting`) and
--- <name>.txt in its worktree.
local function agent(dir, name, greeting)
  local tmp = T.tmpdir('agent-' .. name)
  local wt = wt_of(dir, name)
  local scenario = tmp .. '/scenario.json'
  T.write_file(scenario, vim.json.encode({
    agent = vim.empty_dict(),
    turns = {
      {
        match = 'greeting',
        steps = {
          H.req('fs/write_text_file', { path = wt .. '/greeting.txt', content = greeting }),
          H.req('fs/write_text_file', { path = wt .. '/' .. name .. '.txt', content = 'by ' .. name .. '\n' }),
          { message = 'done ' .. name },
        },
      },
    },
  }))
  local log = tmp .. '/agent.jsonl'
  return { cmd = H.agent_bin, args = { '--scenario', scenario }, env = { ACP_TEST_AGENT_LOG = log } }, log
end

--- A child in `dir` with agents `a` and `b` (and `test`); the agents' logs.
local function start(dir)
  local a, alog = agent(dir, 'a', 'hello from a\n')
  local b, blog = agent(dir, 'b', 'hi from b\nand more\n')
  local test = { cmd = H.agent_bin, args = { '--scenario', H.scenario('chat') } }
  local child = H.start({ cwd = dir, config = { agents = { test = test, a = a, b = b } } })
  child:lua([[
    _G.notes = {}
    vim.notify = function(msg, level)
      table.insert(_G.notes, { msg = msg, level = level })
    end
  ]])
  return child, { a = alog, b = blog }
end

--- Waits until the fan-out's two chats have ended their turn.
local function wait_done(child)
  child:wait_for([[
    local F = require('acp.chat.fanout')
    local run = F.runs['fix-the-greeting']
    if not run then return false end
    for _, m in ipairs(run.members) do
      if not (m.view and m.view.turns_ended >= 1) then return false end
    end
    return #run.members == 2
  ]], 15000)
end

local function prompts_of(log)
  local out = {}
  for line in io.lines(log) do
    local e = vim.json.decode(line)
    if e.event == 'prompt' then
      out[#out + 1] = e.prompt[1].text
    end
  end
  return out
end

--- Starts a fan-out with `-- PROMPT` and waits for both turns; the child.
local function fanned(dir)
  local child, logs = start(dir)
  child:cmd('AcpFanout a b -- ' .. PROMPT)
  wait_done(child)
  return child, logs
end

--- The lines of the comparison's list once it shows `want`.
local function compare_lines(child, want)
  child:wait_for([[
    local c = require('acp.chat.fanout_compare').open_views['fix-the-greeting']
    if not c then return false end
    return table.concat(vim.api.nvim_buf_get_lines(c.list_buf, 0, -1, false), '\n'):find(..., 1, true) ~= nil
  ]], 10000, { want })
  return child:lua([[
    local c = require('acp.chat.fanout_compare').open_views['fix-the-greeting']
    return vim.api.nvim_buf_get_lines(c.list_buf, 0, -1, false)
  ]])
end

--- The row of the list that starts with `prefix` (1-based), or fails.
local function row_of(lines, prefix)
  for i, l in ipairs(lines) do
    if vim.startswith(l, prefix) then
      return i
    end
  end
  error('no row ' .. prefix .. ' in\n' .. table.concat(lines, '\n'))
end

return {
  { ":AcpFanout a b sends the chat input's prompt to a new chat per agent, each in its own worktree and tab; each change lands only in its worktree", function()
    local dir = repo()
    local child, logs = start(dir)
    H.open(child, 'test')
    child:lua([[vim.api.nvim_buf_set_lines(require('acp').current().input, 0, -1, false, { ... })]], { PROMPT })
    child:cmd('AcpFanout a b')
    wait_done(child)
    local got = child:lua([[
      local run = require('acp.chat.fanout').runs['fix-the-greeting']
      local out = { tabs = #vim.api.nvim_list_tabpages(), members = {} }
      for _, m in ipairs(run.members) do
        local v = m.view
        out.members[#out.members + 1] = {
          agent = m.agent, branch = m.wt.branch, path = m.wt.path, root = v.root,
          tab = vim.api.nvim_tabpage_get_number(v.tab),
          cwd = vim.fn.getcwd(-1, vim.api.nvim_tabpage_get_number(v.tab)),
          worktree = v.worktree and v.worktree.branch,
        }
      end
      local first = vim.api.nvim_list_tabpages()[1]
      out.input = vim.api.nvim_buf_get_lines(require('acp.chat').by_tab[first].input, 0, -1, false)
      return out
    ]])
    -- The first tab (with the chat the prompt came from) and one per agent.
    T.eq(got.tabs, 3)
    T.eq(got.input, { '' }, 'the prompt left the input it was typed in')
    for i, name in ipairs({ 'a', 'b' }) do
      local m = got.members[i]
      local path = wt_of(dir, name)
      T.eq(m.agent, name)
      T.eq(m.branch, 'acp/fix-the-greeting-' .. name)
      T.eq(m.path, path)
      T.eq(m.root, path, "the chat's session runs in its worktree")
      T.eq(m.cwd, path, "the chat's tab has the worktree as its directory")
      T.eq(m.tab, i + 1)
      T.eq(m.worktree, m.branch)
      T.eq(prompts_of(logs[name]), { PROMPT })
    end
    -- Each agent's change is in its worktree only: not in the repository,
    -- not in the other worktree.
    T.eq(T.read_file(wt_of(dir, 'a') .. '/greeting.txt'), 'hello from a\n')
    T.eq(T.read_file(wt_of(dir, 'b') .. '/greeting.txt'), 'hi from b\nand more\n')
    T.eq(T.read_file(dir .. '/greeting.txt'), 'hello\n')
    T.truthy(exists(wt_of(dir, 'a') .. '/a.txt'))
    T.falsy(exists(wt_of(dir, 'b') .. '/a.txt'))
    T.falsy(exists(wt_of(dir, 'a') .. '/b.txt'))
    T.falsy(exists(dir .. '/a.txt') or exists(dir .. '/b.txt'))
    local list = git(dir, { 'worktree', 'list' })
    T.match(list, 'fix%-the%-greeting%-a%s+%x+ %[acp/fix%-the%-greeting%-a%]')
    T.match(list, 'fix%-the%-greeting%-b%s+%x+ %[acp/fix%-the%-greeting%-b%]')
    T.eq(git(dir, { 'status', '--porcelain' }), '')
  end },

  { ':AcpFanout: an unknown agent, no repository, no prompt are clear errors and open nothing', function()
    local dir = repo()
    local child = start(dir)
    child:cmd('AcpFanout a nosuch -- ' .. PROMPT)
    -- Outside this plugin's own repository (the temporary folders are in it).
    local plain = vim.fn.resolve(vim.fn.tempname())
    vim.fn.mkdir(plain, 'p')
    child:lua([[vim.cmd.cd(...)]], { plain })
    child:cmd('AcpFanout a b -- ' .. PROMPT)
    child:wait_for([[return #_G.notes >= 2]], 5000)
    child:lua([[vim.cmd.cd(...)]], { dir })
    -- No chat input, no text: asked; an empty answer starts nothing.
    child:lua([[vim.ui.input = function(o, cb) _G.asked_input = o.prompt; cb('') end]])
    child:cmd('AcpFanout a b')
    child:wait_for([[return #_G.notes >= 3]], 5000)
    local notes = child:lua([[return _G.notes]])
    T.match(notes[1].msg, 'nosuch')
    T.eq(notes[1].level, vim.log.levels.ERROR)
    T.match(notes[2].msg, 'needs a git repository')
    T.eq(notes[2].level, vim.log.levels.ERROR)
    T.match(child:lua([[return _G.asked_input]]), 'Prompt')
    T.match(notes[3].msg, 'not started')
    T.eq(child:lua([[return #vim.api.nvim_list_tabpages()]]), 1)
    T.eq(git(dir, { 'branch', '--format=%(refname:short)' }), 'main')
    vim.fn.delete(plain, 'rf')
  end },

  { ':AcpCompare lists both agents\' changes per file; <CR> shows base and each version side by side in diff mode', function()
    local dir = repo()
    local child = fanned(dir)
    local screen = Screen.attach(child, 120, 24)
    child:cmd('AcpCompare')
    local lines = compare_lines(child, 'greeting.txt')
    T.match(lines[1], '^Fan%-out fix%-the%-greeting: "Fix the greeting" · base main @ %x+')
    T.match(lines[row_of(lines, '  a ')], 'acp/fix%-the%-greeting%-a%s+2 files%s+%+2 %-1')
    T.match(lines[row_of(lines, '  b ')], 'acp/fix%-the%-greeting%-b%s+2 files%s+%+3 %-1')
    T.match(lines[row_of(lines, '  file')], '^  file%s+a%s+b%s*$')
    T.match(lines[row_of(lines, '  a.txt')], '^  a%.txt%s+%+1 %-0%s+·%s*$')
    T.match(lines[row_of(lines, '  b.txt')], '^  b%.txt%s+·%s+%+1 %-0%s*$')
    T.match(lines[row_of(lines, '  greeting.txt')], '^  greeting%.txt%s+%+1 %-1%s+%+2 %-1%s*$')
    -- <CR> on greeting.txt: the base and both versions, in diff mode.
    child:lua([[vim.api.nvim_win_set_cursor(0, { ..., 2 })]], { row_of(lines, '  greeting.txt') })
    child:feed('<CR>')
    child:wait_for([[return #vim.api.nvim_tabpage_list_wins(0) == 4]], 5000)
    local wins = child:lua([[
      local out = {}
      for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
        local b = vim.api.nvim_win_get_buf(w)
        out[#out + 1] = { diff = vim.wo[w].diff, bar = vim.wo[w].winbar, lines = vim.api.nvim_buf_get_lines(b, 0, -1, false) }
      end
      return out
    ]])
    T.falsy(wins[1].diff, 'the list is no diff window')
    T.eq({ wins[2].diff, wins[3].diff, wins[4].diff }, { true, true, true })
    T.match(wins[2].bar, '^base · main @ %x+')
    T.eq(wins[2].lines, { 'hello' })
    T.match(wins[3].bar, '^a · %+1 %-1 · t take this one')
    T.eq(wins[3].lines, { 'hello from a' })
    T.match(wins[4].bar, '^b · %+2 %-1 · t take this one')
    T.eq(wins[4].lines, { 'hi from b', 'and more' })
    -- What the user sees: the list, and under it base | a | b in diff mode.
    local shot = screen:shot()
    local rows = table.concat(shot.text, '\n')
    T.match(rows, 'greeting%.txt +%+1 %-1 +%+2 %-1')
    T.match(rows, 'base · main @ %x+ +│a · %+1 %-1 · t take this one +│b · %+2 %-1 · t take this one')
    Screen.expect(shot, 'fanout-compare')
  end },

  { "t takes one agent's work: its branch is merged into main, the other worktree and branch stay (or go when the user says so)", function()
    for _, case in ipairs({ { 'Keep', true }, { 'Remove', false } }) do
      local dir = repo()
      local child = fanned(dir)
      child:lua(H.STUB_SELECT)
      child:lua([[_G.pick = { 'Merge', ... }]], { case[1] })
      child:cmd('AcpCompare')
      local lines = compare_lines(child, 'greeting.txt')
      child:lua([[vim.api.nvim_win_set_cursor(0, { ..., 2 })]], { row_of(lines, '  b ') })
      child:feed('t')
      child:wait_for([[return #_G.asked >= 2]], 10000)
      local asked = child:lua([[return _G.asked]])
      T.eq(asked[1].items[1], 'Merge b (acp/fix-the-greeting-b) into main')
      T.match(asked[2].items[1], 'Remove the other worktrees and their branches %(a%)')
      -- git log: the merge of b's branch, with b's change; a's is not in main.
      T.match(git(dir, { 'log', '-1', '--format=%s %p' }), '^Merge branch acp/fix%-the%-greeting%-b %x+ %x+$')
      T.eq(T.read_file(dir .. '/greeting.txt'), 'hi from b\nand more\n')
      T.eq(T.read_file(dir .. '/b.txt'), 'by b\n')
      T.falsy(exists(dir .. '/a.txt'))
      compare_lines(child, '(taken: merged into main)')
      if case[2] then
        T.truthy(exists(wt_of(dir, 'a') .. '/a.txt'), "a's worktree stays")
        T.eq(git(dir, { 'rev-parse', '--verify', '--quiet', 'refs/heads/acp/fix-the-greeting-a' }, true) ~= '', true)
      else
        T.wait(function()
          return not exists(wt_of(dir, 'a'))
        end, 10000, "a's worktree is removed")
        T.eq(child:lua([[
          local run = require('acp.chat.fanout').runs['fix-the-greeting']
          local a = run.members[1].view
          local open = {}
          for _, v in pairs(require('acp.chat').by_thread) do open[#open + 1] = v.agent end
          table.sort(open)
          return { closed = a.closed, open = open, tabs = #vim.api.nvim_list_tabpages() }
        ]]), { closed = true, open = { 'b' }, tabs = 3 }, "a's chat and its tab are closed")
        T.wait(function()
          return select(2, git(dir, { 'rev-parse', '--verify', '--quiet', 'refs/heads/acp/fix-the-greeting-a' }, true)) ~= 0
        end, 10000, "a's branch is deleted")
      end
      -- b's worktree (merged) stays either way.
      T.truthy(exists(wt_of(dir, 'b') .. '/b.txt'))
      child:stop()
    end
  end },
}
