-- One question per action: an execute request the user allowed covers the
-- `terminal/create` that carries it out, in the shapes real agents send
-- (tests/scenarios/kimi_shell.json and fast_agent_shell.json, recorded from
-- kimi-cli 1.51.0 and fast-agent-mcp 0.10.48), and nothing wider; commands
-- given as argv are shown quoted as a shell reads them.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local CMD = 'cat hello.txt notes.txt | tee result.txt'
local FILES = { ['hello.txt'] = 'Hello, ACP!\n', ['notes.txt'] = 'Replaced world.\n' }

local function start(scenario)
  local dir = H.project(FILES)
  local child, paths = H.start({ cwd = dir, scenario = scenario })
  H.open(child)
  return child, paths, dir
end

local function queue_len(child)
  return child:lua([[return #require('acp.ask.permission').queue]])
end

local function payload(child)
  return child:lua([[return require('acp.ask.permission').queue[1].payload]])
end

--- Sends `text` without waiting; waits for the agent's permission float.
local function send_until_asked(child, text)
  child:lua([[assert(require('acp').send(...))]], { text })
  child:wait_for([[return #require('acp.ask.permission').queue == 1]], 5000)
end

local function choose(child, i)
  H.enter_permission(child)
  child:lua([[require('acp.ask.permission').choose(...)]], { i })
  child:cmd('wincmd p')
end

--- Waits for the turn to end, or for a second question (which fails).
local function wait_turn_unasked(child, n)
  child:wait_for(([[return require('acp').current().turns_ended >= %d
    or #require('acp.ask.permission').queue > 0]]):format(n), 5000)
  T.eq(queue_len(child), 0, 'asked again about the command the user allowed')
end

local function expect_terminal_confirm(child, command)
  child:wait_for([[local q = require('acp.ask.permission').queue
    return #q == 1 and q[1].payload.tool_call_id:match('^terminal%-confirm%-') ~= nil]], 5000)
  T.eq(payload(child).grant.command, command)
end

local function float_text(child)
  child:wait_for([[return require('acp.ask.permission').win ~= nil]])
  return table.concat(child:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.permission').buf, 0, -1, false)]]), '\n')
end

return {
  { 'kimi: an allowed shell request with no kind covers the terminal that runs the command its title shows', function()
    local child, paths, dir = start('kimi_shell')
    send_until_asked(child, 'run')
    local p, text = payload(child), float_text(child)
    choose(child, 1)
    wait_turn_unasked(child, 1)
    T.eq(p.kind, 'other', 'the card has no kind')
    T.eq(p.grant, { type = 'command', command = CMD, cwd = dir, env = {} }, 'the float says what allowing runs')
    T.contains(text, '$ ' .. CMD)
    local r = H.responses(paths)
    T.eq(r[1].result.outcome.optionId, 'approve')
    T.match(r[2].result.terminalId, 'term%-1')
    T.eq(r[3].result.exitCode, 0)
    T.eq(T.read_file(dir .. '/result.txt'), 'Hello, ACP!\nReplaced world.\n')
  end },

  { 'kimi: the allowed line with a second command appended asks again', function()
    local child, paths, dir = start('kimi_shell')
    send_until_asked(child, 'widen')
    choose(child, 1)
    expect_terminal_confirm(child, CMD .. '; rm -f hello.txt')
    T.eq(#H.responses(paths), 1, 'nothing ran unasked')
    choose(child, 2)
    child:wait_for([[return require('acp').current().turns_ended >= 1]], 5000)
    T.match(H.responses(paths)[2].error.message, 'declined')
    T.truthy(vim.uv.fs_stat(dir .. '/hello.txt'), 'hello.txt is still there')
  end },

  { 'fast-agent: an allowed command covers its /bin/sh -lc run', function()
    local child, paths, dir = start('fast_agent_shell')
    send_until_asked(child, 'run')
    T.eq(payload(child).grant.command, CMD)
    choose(child, 1)
    wait_turn_unasked(child, 1)
    local r = H.responses(paths)
    T.eq(r[1].result.outcome.optionId, 'allow_once')
    T.match(r[2].result.terminalId, 'term%-1')
    T.eq(T.read_file(dir .. '/result.txt'), 'Hello, ACP!\nReplaced world.\n')
  end },

  { 'fast-agent: an extra argument asks again, and the float quotes the shell line as sh reads it', function()
    local child, paths = start('fast_agent_shell')
    send_until_asked(child, 'widen')
    choose(child, 1)
    local shown = "/bin/sh -lc '" .. CMD .. "' x"
    expect_terminal_confirm(child, shown)
    T.eq(#H.responses(paths), 1, 'nothing ran unasked')
    local text = float_text(child)
    T.contains(text, '$ ' .. shown)
    T.no_match(text, 'lc cat', 'never the words joined bare')
    choose(child, 2)
    child:wait_for([[return require('acp').current().turns_ended >= 1]], 5000)
  end },

  { 'a card whose command is an argv list shows it quoted as a shell reads it', function()
    local child = H.start({ cwd = H.project(FILES), turns = { { match = 'go', steps = {
      -- As codex-acp sends its commands: an argv list in rawInput.
      { update = { sessionUpdate = 'tool_call', toolCallId = 'a1', title = 'Run', kind = 'execute',
        status = 'completed', rawInput = { command = { '/bin/sh', '-lc', CMD } } } },
    } } } })
    H.open(child)
    H.turn(child, 'go')
    local text = H.transcript_text(child)
    T.contains(text, "input: `/bin/sh -lc '" .. CMD .. "'`")
    T.no_match(text, '%-lc cat', 'never the words joined bare')
  end },
}
