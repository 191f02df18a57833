-- Tool cards take the rows they need and no more: the scripted agent plays
-- what claude-agent-acp 0.100.0 sent in a real explain-read-edit turn
-- (recorded from its trace: a Read and an Edit whose input repeats the path
-- its locations show, absolute paths, an edit diff of snippets without a
-- final newline), and the screen shows each path once, relative to the
-- session's root, and no remark about final newlines.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

local BEFORE = "local M = {}\nfunction M.greet()\n  print('helo')\nend\nreturn M\n"
local OLD = "function M.greet()\n  print('helo')"
local NEW = "function M.greet(name)\n  print('hello, ' .. name)"

local function update(fields)
  fields.sessionUpdate = fields.sessionUpdate or 'tool_call_update'
  return { update = fields }
end

--- The turn as claude-agent-acp 0.100.0 sent it, for `file` (absolute).
local function claude_turn(file)
  local read, edit = 'toolu_read', 'toolu_edit'
  local meta = function(name)
    return { claudeCode = { toolName = name } }
  end
  local diff = { { type = 'diff', path = file, oldText = OLD, newText = NEW } }
  local input = { file_path = file, old_string = OLD, new_string = NEW, replace_all = false }
  return {
    { message = 'I will read the module first, then fix it.\n' },
    update({ sessionUpdate = 'tool_call', _meta = meta('Read'), toolCallId = read, name = 'Read', rawInput = vim.empty_dict(),
      status = 'pending', title = 'Read File', kind = 'read', content = {}, locations = {} }),
    update({ _meta = meta('Read'), toolCallId = read, rawInput = { file_path = file }, title = 'Read hello.lua',
      locations = { { path = file, line = 1 } } }),
    update({ _meta = meta('Read'), toolCallId = read, status = 'completed',
      rawOutput = "1\tlocal M = {}\n2\tfunction M.greet()\n3\t  print('helo')\n4\tend\n5\treturn M\n6\t",
      content = { { type = 'content', content = { type = 'text',
        text = "```\n1\tlocal M = {}\n2\tfunction M.greet()\n3\t  print('helo')\n4\tend\n5\treturn M\n```" } } } }),
    { message = 'Now the edit.\n' },
    update({ sessionUpdate = 'tool_call', _meta = meta('Edit'), toolCallId = edit, name = 'Edit', rawInput = vim.empty_dict(),
      status = 'pending', title = 'Edit', kind = 'edit', content = {}, locations = {} }),
    update({ _meta = meta('Edit'), toolCallId = edit, rawInput = { file_path = file }, title = 'Edit hello.lua',
      locations = { { path = file } } }),
    update({ _meta = meta('Edit'), toolCallId = edit, rawInput = input, content = diff }),
    H.req('session/request_permission', {
      toolCall = { toolCallId = edit, name = 'Edit', status = 'pending', rawInput = input, title = 'Edit hello.lua',
        kind = 'edit', content = diff, locations = { { path = file } } },
      options = {
        { optionId = 'allow-once', name = 'Yes', kind = 'allow_once' },
        { optionId = 'allow-with-updates', name = 'Yes, allow all edits during this session', kind = 'allow_always' },
        { optionId = 'reject', name = 'No', kind = 'reject_once' },
      },
    }),
    -- Once allowed: the whole file as the diff, again without final newlines.
    update({ toolCallId = edit, locations = { { path = file, line = 1 } }, content = { { type = 'diff', path = file,
      oldText = BEFORE:sub(1, -2), newText = BEFORE:sub(1, -2):gsub('greet%(%)', 'greet(name)'):gsub("'helo'", "'hello, ' .. name") } } }),
    update({ toolCallId = edit, status = 'completed', rawOutput = 'The file has been updated successfully.' }),
    { message = 'Done.\n' },
  }
end

--- The chat window's rows on `shot`, without their trailing blanks.
local function chat_rows(child, shot)
  local win = child:lua([[local v = require('acp').current()
    return { pos = vim.api.nvim_win_get_position(v.win), width = vim.api.nvim_win_get_width(v.win),
      height = vim.api.nvim_win_get_height(v.win) }]])
  local rows = {}
  for r = win.pos[1] + 1, win.pos[1] + win.height do
    rows[#rows + 1] = (vim.fn.strcharpart(shot.text[r] or '', win.pos[2], win.width):gsub('%s+$', ''))
  end
  return rows
end

--- The rows from the one equal to `first`, `n` of them.
local function rows_from(rows, first, n)
  for i, row in ipairs(rows) do
    if row == first then
      return vim.list_slice(rows, i, i + n - 1)
    end
  end
  error(('no row %q in:\n%s'):format(first, table.concat(rows, '\n')), 2)
end

return {
  { "Claude Code's read and edit cards: each path once, relative to the project, no input line repeating it, no final-newline remarks on its snippet diffs", function()
    local dir = H.project({ ['hello.lua'] = BEFORE })
    local file = dir .. '/hello.lua'
    local child, paths = H.start({ cwd = dir, turns = { { match = 'fix', steps = claude_turn(file) } },
      config = { chat = { width = 50 } } })
    local screen = Screen.attach(child, 120, 50)
    H.open(child)
    child:lua([[require('acp').send('fix the greeting')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]], 5000)
    child:lua('return 1')
    local shot = screen:shot()
    local rows = chat_rows(child, shot)
    -- The transcript down to the edit card's last row (what the request
    -- shows below it is the permission's own).
    local last = #rows
    for i, row in ipairs(rows) do
      last = row == "  +  print('hello, ' .. name)" and i or last
    end
    local shown = table.concat(vim.list_slice(rows, 1, last), '\n')
    T.eq(rows_from(rows, 'read · Read hello.lua · completed', 3), { 'read · Read hello.lua · completed', '  hello.lua:1', '' },
      'the read card names its file once, relative, on one row')
    T.eq(rows_from(rows, 'edit · Edit hello.lua · waiting for you', 9), {
      'edit · Edit hello.lua · waiting for you',
      '  hello.lua',
      '  diff hello.lua',
      '',
      '  @@ -1,2 +1,2 @@',
      '  -function M.greet()',
      "  -  print('helo')",
      '  +function M.greet(name)',
      "  +  print('hello, ' .. name)",
    }, 'the edit card: its file once, its diff without remarks on final newlines')
    T.no_match(shown, vim.pesc(dir), 'no absolute path of the project in the chat')
    T.no_match(shown, 'input:')
    T.no_match(shown, 'No newline')
    T.contains(shown, 'I will read the module first, then fix it.', 'the explanation in view')
    -- Allowed: the whole file as a diff, still without a remark.
    H.enter_permission(child)
    child:feed('y')
    H.wait_permission_answer(paths, 1)
    child:wait_for([[return require('acp').current().turns_ended == 1]], 5000)
    local text = H.transcript_text(child)
    T.match(text, 'edit · Edit hello%.lua · completed\n  `hello%.lua:1`\n  diff `hello%.lua`\n  ```diff\n  @@ %-1,5 %+1,5 @@\n')
    T.no_match(text, 'No newline')
    T.no_match(text, 'input:')
  end },
}
