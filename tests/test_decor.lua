-- The colours of cards and plans in the transcript: they land where the
-- core says the parts are (acp.CardMeta `header`/`status_lines`,
-- acp.PlanLayout), with the tone it computed, and never on words of the
-- agent's text that merely look like those parts.
local H = require('tests.helpers.acp')

local function tc(fields)
  fields.sessionUpdate = fields.sessionUpdate or 'tool_call'
  return { update = fields }
end

--- The decor extmarks of the current chat, in buffer order: { line, text, group }.
local MARKS = [[
  local v = require('acp').current()
  local ns = require('acp.chat.decor').ns
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(v.buf, ns, 0, -1, { details = true })) do
    local line = vim.api.nvim_buf_get_lines(v.buf, m[2], m[2] + 1, false)[1]
    out[#out + 1] = { line = line, text = line:sub(m[3] + 1, m[4].end_col), group = m[4].hl_group }
  end
  return out
]]

--- `marks` without their lines: { text, group }.
local function words(marks)
  return vim.tbl_map(function(m)
    return { m.text, m.group }
  end, marks)
end

return {
  { 'card and plan colours land on the spans the core sends, with its tones', function()
    local child = H.start({ turns = { { match = 'go', steps = {
      tc({ toolCallId = 'x1', title = 'Bau «größe» 漢字', kind = 'execute', status = 'completed',
        rawOutput = { aggregated_output = 'ok\n', exit_code = 0 } }),
      tc({ toolCallId = 'm1', title = 'ls', kind = 'execute', status = 'in_progress',
        _meta = { terminal_info = { terminal_id = 'm1' }, terminal_output = { terminal_id = 'm1', data = 'a\n' } } }),
      tc({ sessionUpdate = 'tool_call_update', toolCallId = 'm1', status = 'failed',
        _meta = { terminal_exit = { terminal_id = 'm1', exit_code = 3 } } }),
      tc({ toolCallId = 'e1', title = 'Edit', kind = 'edit', status = 'pending' }),
      { update = { sessionUpdate = 'plan', entries = {
        { content = 'Schritt «eins»', status = 'completed', priority = 'high' },
        { content = 'Schritt «zwei»', status = 'in_progress', priority = 'low' } } } },
    } } } })
    H.open(child)
    H.turn(child, 'go')
    T.eq(words(child:lua(MARKS)), {
      { 'run', 'AcpCardKind' }, { 'Bau «größe» 漢字', 'AcpCardTitle' }, { 'completed', 'AcpStatusDone' },
      { 'exit code 0', 'AcpStatusDone' },
      { 'run', 'AcpCardKind' }, { 'ls', 'AcpCardTitle' }, { 'failed', 'AcpStatusFailed' },
      { 'exit code 3', 'AcpStatusFailed' },
      { 'edit', 'AcpCardKind' }, { 'Edit', 'AcpCardTitle' }, { 'pending', 'AcpStatusRunning' },
      { 'Plan', 'AcpCardKind' }, { 'in progress', 'AcpStatusRunning' },
    })
    -- The marks are the core's spans: each header's title span holds the
    -- card's title, each tone is the one the core sent.
    local r = child:lua([[
      local v = require('acp').current()
      local out = {}
      for index, card in pairs(v.cards) do
        local first = v:entry_range(index)
        local line = vim.api.nvim_buf_get_lines(v.buf, first, first + 1, false)[1]
        local h = card.header
        out[card.id] = { line:sub(h.title.from + 1, h.title.to), h.tone, #(card.status_lines or {}) }
      end
      return out
    ]])
    T.eq(r, {
      x1 = { 'Bau «größe» 漢字', 'done', 1 },
      m1 = { 'ls', 'failed', 1 },
      e1 = { 'Edit', 'running', 0 },
    })
  end },

  { 'colours follow the parts the core rendered, not words in the text that look like them', function()
    local child = H.start({ turns = { { match = 'go', steps = {
      tc({ toolCallId = 't1', title = 'a · completed · b', kind = 'execute', status = 'in_progress',
        content = { { type = 'content', content = { type = 'text', text = 'exit code 0\nrunning…\nkilled by SIGKILL\nexited' } } } }),
      { update = { sessionUpdate = 'plan', entries = {
        { content = 'a · in progress · b', status = 'pending', priority = 'high' },
        { content = 'real', status = 'in_progress', priority = 'low' } } } },
    } } } })
    H.open(child)
    H.turn(child, 'go')
    local marks = child:lua(MARKS)
    T.eq(words(marks), {
      { 'run', 'AcpCardKind' }, { 'a · completed · b', 'AcpCardTitle' }, { 'in progress', 'AcpStatusRunning' },
      { 'Plan', 'AcpCardKind' }, { 'in progress', 'AcpStatusRunning' },
    })
    T.eq(marks[1].line, 'run · a · completed · b · in progress')
    T.eq(marks[5].line, '- [ ] real (low) · in progress')
    -- The agent's lines are there, uncoloured.
    T.match(table.concat(child:lua([[return require('acp').current():lines()]]), '\n'),
      '\n  exit code 0\n  running…\n  killed by SIGKILL\n  exited\n')
  end },
}
