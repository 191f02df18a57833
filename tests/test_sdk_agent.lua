-- A real third-party ACP peer: the example agent shipped in the npm package
-- @agentclientprotocol/sdk (installed into .deps/npm by `make deps`). It
-- streams text, announces tool calls, asks for permission and ends the turn.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local function agent_js()
  local js = vim.env.ACP_SDK_AGENT_JS
  if vim.fn.executable('node') ~= 1 then
    T.skip('node is not installed')
  end
  if not js or vim.fn.filereadable(js) ~= 1 then
    T.skip('@agentclientprotocol/sdk is not installed (make deps needs npm)')
  end
  return js
end

return {
  { 'the SDK example agent: streamed text, tool calls, permission, end_turn', function()
    local js = agent_js()
    local child = H.start({ agent = { cmd = 'node', args = { js } } })
    H.open(child)
    child:lua([[require('acp').send('hello')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]], 10000)
    local float = table.concat(child:lua([[
      local p = require('acp.ask.permission')
      return p.lines(p.queue[1])
    ]]), '\n')
    T.match(float, '%[edit%] Modifying critical configuration file')
    T.match(float, 'Allow this change')
    T.match(float, 'Skip this change')
    H.enter_permission(child)
    child:lua([[
      local p = require('acp.ask.permission')
      for i, o in ipairs(p.queue[1].payload.options) do
        if o.id == 'allow' then p.choose(i) end
      end
    ]])
    child:wait_for([[return require('acp').current().turns_ended == 1]], 10000)
    local text = H.transcript_text(child)
    T.match(text, "I'll help you with that%.")
    T.match(text, 'Now I understand the project structure%.')
    T.match(text, "Perfect! I've successfully updated the configuration%.")
    T.match(text, 'read · Reading project files · completed')
    T.match(text, 'edit · Modifying critical configuration file · completed')
    -- One card per tool call even though the permission request repeats it.
    local _, cards = text:gsub('Modifying critical configuration file', '')
    T.eq(cards, 1)
    T.no_match(text, 'Stopped:')
    T.no_match(text, '✖')
  end, timeout = 30000 },

  { 'the SDK example agent and the prompt queue: a message sent mid-turn goes after end_turn', function()
    local js = agent_js()
    local child = H.start({ agent = { cmd = 'node', args = { js } } })
    H.open(child)
    local function allow()
      child:wait_for([[return #require('acp.ask.permission').queue == 1]], 10000)
      H.enter_permission(child)
      child:lua([[
        local p = require('acp.ask.permission')
        for i, o in ipairs(p.queue[1].payload.options) do
          if o.id == 'allow' then p.choose(i) end
        end
      ]])
    end
    child:lua([[require('acp').send('hello')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]], 10000)
    T.eq(child:lua([[return require('acp').send('and then this')]]), true)
    T.eq(child:lua([[return require('acp.prompt.queue').lines(require('acp').current())[1] ]]), '⏳ queued 1: and then this')
    T.no_match(H.transcript_text(child), 'and then this', 'not sent while the turn runs')
    allow()
    -- The first turn ends, the queued message starts the second.
    child:wait_for([[return require('acp').current().turns_started == 2]], 10000)
    T.eq(child:lua([[return #require('acp').current().queue]]), 0)
    allow()
    child:wait_for([[return require('acp').current().turns_ended == 2]], 10000)
    local text = H.transcript_text(child)
    T.match(text, "The changes have been applied%.\n\n## You\n\nand then this\n\n")
    local _, replies = text:gsub("I'll help you with that%.", '')
    T.eq(replies, 2)
    T.no_match(text, 'Stopped:')
  end, timeout = 40000 },
}
