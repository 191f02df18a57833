-- Reference screenshots of the chat's main states (tests/screenshots/<name>: the text of a
-- fixed-size grid and a map of its highlight attributes; see tests/helpers/screen.lua). A
-- rendering change shows up as a screenshot diff: the new screenshot is written next to the
-- reference as <name>.new. `ACP_UPDATE_SCREENSHOTS=1` rewrites the references; then
-- `nvim -l tests/screenshots/readme.lua` regenerates the README's captures from them.
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

local W, HEIGHT = 80, 30

--- A child with a W x HEIGHT screen, the chat 52 columns wide, time frozen (the status
--- area's elapsed times read 0s), the chat open and ready.
local function start(turns, config)
  local cfg = { chat = { width = 52, min_code_width = 20 } }
  for k, v in pairs(config or {}) do
    cfg[k] = v
  end
  local child = H.start({ turns = turns, config = cfg, agent_info = { name = 'demo' } })
  local screen = Screen.attach(child, W, HEIGHT)
  child:lua([[
    local frozen = vim.uv.now()
    vim.uv.now = function() return frozen end
  ]])
  H.open(child)
  return child, screen
end

local function shot(screen, name)
  screen:settle()
  Screen.expect(screen:shot(), name)
end

local function tc(fields)
  fields.sessionUpdate = fields.sessionUpdate or 'tool_call'
  return { update = fields }
end

local OLD = 'local M = {}\nfunction M.greet()\n  print(\'helo\')\nend\nreturn M\n'
local NEW = 'local M = {}\nfunction M.greet(name)\n  print(\'hello, \' .. name)\nend\nreturn M\n'

local function edit_card(status)
  return tc({ toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit', status = status,
    locations = { { path = '/p/hello.lua', line = 2 } },
    content = { { type = 'diff', path = '/p/hello.lua', oldText = OLD, newText = NEW } } })
end

return {
  { 'a streamed answer with a folded thought', function()
    local child, screen = start({ { match = 'hello', steps = {
      { thought = 'The user said hello.\nI will answer with a short list\nand a code block.', chunk_size = 7 },
      { message = 'Hello! This answer streamed in **small chunks**:\n\n- thoughts fold above (`zo` opens them)\n- tool calls show their status\n\n```lua\nrequire(\'acp\').setup({ default_agent = \'claude\' })\n```\n', chunk_size = 9 },
    } } })
    H.turn(child, 'hello')
    shot(screen, 'streamed-answer')
  end },

  { 'a card with a diff', function()
    local child, screen = start({ { match = 'edit', steps = {
      { message = 'I fixed the greeting.\n' },
      edit_card('completed'),
    } } })
    H.turn(child, 'edit')
    shot(screen, 'diff-card')
  end },

  { 'the permission float', function()
    local child, screen = start({ { match = 'edit', steps = {
      { message = 'I will fix the greeting in hello.lua.\n' },
      edit_card('pending'),
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit' },
        options = { { optionId = 'allow', name = 'Apply the edit', kind = 'allow_once' }, { optionId = 'reject', name = 'Skip it', kind = 'reject_once' } },
      }),
    } } })
    child:lua([[require('acp').send('edit')]])
    -- No room for the float beside the card: the request shows inline at the card, its
    -- chords lit once it has been in view for grace_ms.
    child:wait_for([[local i = require('acp.ask.permission_inline')
      return i.state ~= nil and i.state.lit and require('acp.ask.permission').win == nil]])
    shot(screen, 'permission-float')
  end },

  { 'a terminal card', function()
    local child, screen = start({ { match = 'run', steps = {
      tc({ toolCallId = 'r1', title = 'make test', kind = 'execute', status = 'in_progress' }),
      H.req('terminal/create', { command = 'printf "compiling\\nrunning 12 tests\\nall passed\\n"' }),
      tc({ sessionUpdate = 'tool_call_update', toolCallId = 'r1', content = { { type = 'terminal', terminalId = 'term-1' } } }),
      H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
      tc({ sessionUpdate = 'tool_call_update', toolCallId = 'r1', status = 'completed' }),
      { message = 'The tests pass; `:AcpTerminal term-1` opens the whole output.' },
    } } }, { terminal = { confirm = 'never' } })
    H.turn(child, 'run')
    shot(screen, 'terminal-card')
  end },

  { 'the live status area', function()
    local child, screen = start({ { match = 'fix', steps = {
      { message = 'Looking at the failing test first.\n' },
      { update = { sessionUpdate = 'plan', entries = {
        { content = 'Read the failing test', status = 'completed', priority = 'high' },
        { content = 'Fix the parser', status = 'in_progress', priority = 'high' },
        { content = 'Run the tests', status = 'pending', priority = 'medium' } } } },
      tc({ toolCallId = 'b1', title = 'cargo build', kind = 'execute', status = 'in_progress' }),
      { message = 'Building now.' },
      { sleep_ms = 3000 },
    } } })
    child:lua([[require('acp').send('fix')]])
    child:wait_for([[local v = require('acp').current()
      return vim.tbl_contains(v:lines(), 'Building now.') and require('acp.chat.status').win(v) ~= nil]])
    shot(screen, 'status-area')
  end },

  { 'a narrow window', function()
    local child, screen = start({ { match = 'read', steps = {
      tc({ toolCallId = 'r1', title = 'Read src/parser/expression.rs and its tests', kind = 'read', status = 'completed',
        locations = { { path = '/p/src/parser/expression.rs', line = 120 } } }),
      { message = 'The parser drops the last token when an expression ends at the end of the file, so the final operand is lost.' },
    } } }, { chat = { width = 30 } })
    H.turn(child, 'read')
    shot(screen, 'narrow-window')
  end },

  { 'a long multi-turn history', function()
    local turns = {}
    for i = 1, 4 do
      turns[#turns + 1] = { match = 'question ' .. i, steps = {
        { message = ('Answer %d: a paragraph long enough to wrap in the chat window, so that the history fills more than one screen.'):format(i) },
      } }
    end
    local child, screen = start(turns)
    for i = 1, 4 do
      H.turn(child, 'question ' .. i)
    end
    shot(screen, 'history')
  end },

  { 'a replayed history (session/load)', function()
    local child = H.start({ config = { chat = { width = 52, min_code_width = 20 } }, turns = {}, agent_info = {
      load_session = true,
      load = { replay = {
        { sessionUpdate = 'user_message_chunk', content = { type = 'text', text = 'Why does the parser drop the last token?' } },
        { sessionUpdate = 'agent_message_chunk', content = { type = 'text', text = 'It stops one token early at the end of the file.' } },
        { sessionUpdate = 'tool_call', toolCallId = 't1', title = 'Read src/parser.rs', kind = 'read', status = 'completed' },
        { sessionUpdate = 'plan', entries = { { content = 'Fix the loop bound', status = 'completed', priority = 'high' } } },
        { sessionUpdate = 'user_message_chunk', content = { type = 'text', text = 'Thanks, that fixed it.' } },
        { sessionUpdate = 'agent_message_chunk', content = { type = 'text', text = 'Glad it works.' } },
      } },
    } })
    local screen = Screen.attach(child, W, HEIGHT)
    H.open(child)
    child:cmd('AcpResume s-1')
    child:wait_for([[local v = require('acp').current(); return v.history_of ~= nil and v.state == 'idle']], 5000)
    shot(screen, 'replayed-history')
  end },

  { "the README's captures are these screenshots", function()
    local readme = require('tests.screenshots.readme')
    local want = readme.section()
    local have = readme.current()
    T.eq(have, want, 'run: nvim -l tests/screenshots/readme.lua')
  end },
}
