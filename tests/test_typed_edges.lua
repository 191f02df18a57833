-- What real agents send reaches the user: one case per message shape that the
-- untyped edge lost or misread (early session updates, 1-based locations,
-- rawOutput, `_meta.terminal_output_delta`, messageId, config options and
-- usage side by side, a reused tool-call id).
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local function tc(fields)
  fields.sessionUpdate = fields.sessionUpdate or 'tool_call'
  return { update = fields }
end
local function upd(fields)
  fields.sessionUpdate = 'tool_call_update'
  return { update = fields }
end
local function chunk(text, message_id)
  return { update = { sessionUpdate = 'agent_message_chunk', messageId = message_id, content = { type = 'text', text = text } } }
end

local CONFIG_OPTIONS = {
  { id = 'model', name = 'Model', category = 'model', type = 'select', currentValue = 'fast',
    options = { { value = 'fast', name = 'Fast' }, { value = 'smart', name = 'Smart' } } },
}
local USAGE = { sessionUpdate = 'usage_update', used = 1200, size = 200000, cost = { amount = 0.25, currency = 'USD' } }

--- Runs turn "go" with `steps` (after `H.open`); returns child, paths, transcript.
local function run(steps, opts)
  opts = opts or {}
  local child, paths = H.start({ cwd = opts.cwd, agent_info = opts.agent_info, turns = opts.turns or { { match = 'go', steps = steps } } })
  H.open(child)
  if steps then
    H.turn(child, 'go', 10000)
  end
  return child, paths, H.transcript_text(child)
end

local function info(child)
  return child:lua([[local i = require('acp').current().info
    return { commands = i.commands, mode = i.mode, title = i.title, config_options = i.config_options, usage = i.usage }]])
end

return {
  { 'updates sent with the session/new answer reach the chat (commands, mode, title, options, usage)', function()
    local child, paths = run(nil, { agent_info = { session_updates = {
      { sessionUpdate = 'available_commands_update', availableCommands = { { name = 'review', description = 'Review the diff' } } },
      { sessionUpdate = 'current_mode_update', currentModeId = 'plan' },
      { sessionUpdate = 'config_option_update', configOptions = CONFIG_OPTIONS },
      USAGE,
      { sessionUpdate = 'session_info_update', title = 'Early title' },
    } } })
    child:wait_for([[return require('acp').current().info.title ~= nil]], 3000)
    local i = info(child)
    T.eq(i.commands[1].name, 'review')
    T.eq(i.mode, 'plan')
    T.eq(i.title, 'Early title')
    T.eq(i.config_options[1].currentValue, 'fast')
    T.eq(i.usage.used, 1200)
    T.no_match(T.read_file(paths.log), 'unknown session')
    -- What the user sees: the title in the winbar (last, cut to the
    -- window's width), the command at `/`.
    T.match(child:lua([[return vim.wo[require('acp').current().win].winbar]]), 'Early tit')
  end },

  { 'tool-call locations are 1-based (line 1 is the top; a legacy 0 is read as 1)', function()
    local dir = H.project({ ['f.txt'] = 'one\ntwo\nthree\n' })
    local child, _, text = run({
      tc({ toolCallId = 'r1', title = 'Read f.txt', kind = 'read', status = 'completed', locations = { { path = dir .. '/f.txt', line = 1 } } }),
      tc({ toolCallId = 'r2', title = 'Read top', kind = 'read', status = 'completed', locations = { { path = dir .. '/f.txt', line = 0 } } }),
      tc({ toolCallId = 'r3', title = 'Read three', kind = 'read', status = 'completed', locations = { { path = dir .. '/f.txt', line = 3 } } }),
    }, { cwd = dir })
    -- Inside the session's root, relative to it.
    T.match(text, 'Read f%.txt · completed\n  `f%.txt:1`')
    T.match(text, 'Read top · completed\n  `f%.txt:1`')
    T.match(text, 'Read three · completed\n  `f%.txt:3`')
    child:wait_for([[return require('acp').current().qf_id ~= nil and not require('acp').current().qf_dirty]], 3000)
    local lnums = child:lua([[
      local l = vim.fn.getqflist({ id = require('acp').current().qf_id, items = 0 })
      return vim.tbl_map(function(it) return it.lnum end, l.items)
    ]])
    T.eq(lnums, { 1, 1, 3 })
  end },

  { 'rawOutput is shown: codex-acp command output and claude-code-acp content blocks', function()
    local _, _, text = run({
      tc({ toolCallId = 'x1', title = 'ls', kind = 'execute', status = 'in_progress', rawInput = { command = { 'ls' } } }),
      upd({ toolCallId = 'x1', status = 'completed',
        rawOutput = { aggregated_output = 'alpha.txt\nbeta.txt\n', exit_code = 0, formatted_output = 'alpha.txt\nbeta.txt\n' } }),
      tc({ toolCallId = 'x2', title = 'Read notes', kind = 'read', status = 'in_progress' }),
      upd({ toolCallId = 'x2', status = 'completed', rawOutput = { { type = 'text', text = 'the notes say hi' } } }),
      upd({ toolCallId = 'x3', title = 'false', kind = 'execute', status = 'failed', rawOutput = { exit_code = 1, aggregated_output = '' } }),
    })
    -- The command is the title: no input line repeats it.
    T.match(text, 'ls · completed\n  ```console\n  alpha%.txt\n  beta%.txt\n  ```\n  exit code 0')
    T.match(text, 'Read notes · completed\n  ```console\n  the notes say hi\n  ```')
    T.match(text, 'false · failed\n  exit code 1')
  end },

  { '_meta.terminal_output_delta streams into the card', function()
    local _, _, text = run({
      tc({ toolCallId = 't1', title = 'make', kind = 'execute', status = 'in_progress' }),
      upd({ toolCallId = 't1', _meta = { terminal_output_delta = { terminal_id = 't1', data = 'building\n' } } }),
      upd({ toolCallId = 't1', _meta = { terminal_output_delta = { terminal_id = 't1', data = 'done\n' } } }),
      upd({ toolCallId = 't1', status = 'completed', _meta = { terminal_exit = { terminal_id = 't1', exit_code = 0 } } }),
    })
    T.match(text, 'make · completed\n  ```console\n  building\n  done\n  ```\n  exit code 0')
  end },

  { 'chunks with different messageIds are separate messages', function()
    local _, _, text = run({
      chunk('First message.', 'm1'),
      chunk(' Still first.', 'm1'),
      chunk('Second message.', 'm2'),
    })
    T.match(text, 'First message%. Still first%.\n\nSecond message%.')
  end },

  { 'config options and usage are kept side by side', function()
    local child = run({
      { update = { sessionUpdate = 'config_option_update', configOptions = CONFIG_OPTIONS } },
      { update = USAGE },
      { message = 'ok' },
    })
    local i = info(child)
    T.eq(i.config_options[1].id, 'model', 'usage did not overwrite the options')
    T.eq(i.usage.size, 200000)
    T.eq(i.usage.cost.currency, 'USD')
  end },

  { 'a reused tool-call id starts a new card in a later turn; a kind change is refused and noted', function()
    local child = run(nil, { turns = {
      { match = 'one', steps = {
        tc({ toolCallId = 'c1', title = 'Read a.txt', kind = 'read', status = 'completed' }),
        tc({ toolCallId = 'c2', title = 'Search', kind = 'search', status = 'pending' }),
        tc({ toolCallId = 'c2', title = 'rm -rf build', kind = 'execute', status = 'in_progress' }),
      } },
      { match = 'two', steps = {
        tc({ toolCallId = 'c1', title = 'Write b.txt', kind = 'edit', status = 'completed' }),
      } },
    } })
    H.turn(child, 'one')
    H.turn(child, 'two')
    local text = H.transcript_text(child)
    T.match(text, 'read · Read a%.txt · completed', 'turn 1 card unchanged')
    T.match(text, '## You\n\ntwo\n.*edit · Write b%.txt · completed', 'turn 2 has its own card')
    T.match(text, "search · rm %-rf build · in progress\n  ✎ the agent changed this call's kind to `execute` %(kept `search`%)")
  end },
}
