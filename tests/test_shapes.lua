-- Message shapes of newer agents, replayed from their recorded traffic
-- (tests/traces: Mistral Vibe 3.0.2 and Cline 3.0.65, each run offline
-- against a scripted model on the read-edit-shell task, two turns).
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local PROMPT1 = "Please read hello.txt, change 'world' to 'ACP', write a notes.txt saying what you did, then run `cat hello.txt notes.txt | tee result.txt` to show the result."
local PROMPT2 = 'Thanks. Now list the files here with ls.'

--- A child whose agent `test` replays trace `name`, the chat open.
local function replay(name)
  local dir = H.project({ ['hello.txt'] = 'Hello, world!\nThis file is used by the ACP acceptance tests.\n' })
  local paths = { agent_log = T.tmpdir('shapes') .. '/agent.jsonl' }
  local child = H.start({
    cwd = dir,
    agent = { cmd = H.agent_bin, args = { '--replay', H.root .. '/tests/traces/' .. name .. '.jsonl' },
      env = { ACP_TEST_AGENT_LOG = paths.agent_log } },
  })
  H.open(child)
  return child, paths
end

--- Sends `text` and allows each of the `asks` permission requests.
local function turn(child, text, asks)
  local before = child:lua([[return require('acp').current().turns_ended]])
  child:lua([[assert(require('acp').send(...))]], { text })
  for _ = 1, asks do
    child:wait_for([[return #require('acp.ask.permission').queue == 1]], 5000)
    H.enter_permission(child)
    child:feed('y')
    child:wait_for([[return #require('acp.ask.permission').queue == 0]], 3000)
  end
  child:wait_for(([[return require('acp').current().turns_ended > %d]]):format(before), 10000)
end

local function count(text, plain)
  local _, n = text:gsub(vim.pesc(plain), '')
  return n
end

local function no_mismatch(paths)
  T.eq(vim.tbl_map(function(e)
    return e.detail
  end, H.events_of(paths, 'replay_mismatch')), {})
end

return {
  { 'Mistral Vibe echoes each prompt as user_message_chunk: every prompt shows once, in its own block', function()
    local child, paths = replay('mistral-vibe')
    turn(child, PROMPT1, 1)
    turn(child, PROMPT2, 0)
    local text = H.transcript_text(child)
    T.eq(count(text, PROMPT1), 1, 'the first prompt shows once, not glued to itself')
    T.eq(count(text, PROMPT2), 1, 'the second prompt shows once')
    T.eq(count(text, '## You'), 2, 'one user block per turn')
    T.contains(text, 'Second turn done: the files are listed above.')
    no_mismatch(paths)
  end },
}
