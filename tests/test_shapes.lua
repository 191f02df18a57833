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

--- Sends `text` and allows each of the `asks` permission requests (the
--- replay logs each answer it gets).
local function turn(child, paths, text, asks)
  local before = child:lua([[return require('acp').current().turns_ended]])
  child:lua([[assert(require('acp').send(...))]], { text })
  for _ = 1, asks do
    local answered = #H.events_of(paths, 'replay_answer')
    child:wait_for([[return #require('acp.ask.permission').queue >= 1]], 5000)
    H.enter_permission(child)
    child:feed('y')
    T.truthy(vim.wait(5000, function()
      return #H.events_of(paths, 'replay_answer') > answered
    end, 20), 'the permission was answered')
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
    turn(child, paths, PROMPT1, 1)
    turn(child, paths, PROMPT2, 0)
    local text = H.transcript_text(child)
    T.eq(count(text, PROMPT1), 1, 'the first prompt shows once, not glued to itself')
    T.eq(count(text, PROMPT2), 1, 'the second prompt shows once')
    T.eq(count(text, '## You'), 2, 'one user block per turn')
    T.contains(text, 'Second turn done: the files are listed above.')
    no_mismatch(paths)
  end },

  { "Cline's results only in rawOutput ({query, result, success} lists and objects) show on the read, patch and command cards", function()
    local child, paths = replay('cline')
    turn(child, paths, PROMPT1, 4)
    turn(child, paths, PROMPT2, 1)
    local text = H.transcript_text(child)
    T.match(text, 'read_files: [^\n]* · completed\n  input: [^\n]*\n  ```console\n  1 | Hello, world!\n  2 | This file is used by the ACP acceptance tests%.\n  ```')
    T.eq(count(text, 'Successfully applied patch to the following files:'), 2, 'both patch cards show their result')
    T.contains(text, '```console\n  Successfully applied patch to the following files:\n  notes.txt\n  ```')
    T.match(text, 'run_commands: cat hello%.txt notes%.txt | tee result%.txt · completed\n  input: [^\n]*\n  ```console\n  Hello, ACP!\n')
    T.match(text, 'run_commands: ls · completed\n  input: [^\n]*\n  ```console\n  hello%.txt\n  notes%.txt\n  result%.txt\n  ```')
    no_mismatch(paths)
  end },
}
