-- Agent activity: tool-call cards and their merge rules, diffs and review,
-- the permission float, plan, quickfix and follow mode.
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

local project = H.project

--- Runs one turn ("go") with `steps`; returns child, paths, transcript text.
local function run(steps, opts)
  opts = opts or {}
  local child, paths = H.start({ cwd = opts.cwd, turns = opts.turns or { { match = 'go', steps = steps } }, config = opts.config })
  H.open(child)
  if not opts.no_turn then
    H.turn(child, 'go', 10000)
  end
  return child, paths, H.transcript_text(child)
end

local function count(text, pat)
  local _, n = text:gsub(pat, '')
  return n
end

local OPTIONS = {
  { optionId = 'o-allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'o-always', name = 'Always allow', kind = 'allow_always' },
  { optionId = 'o-reject', name = 'Reject', kind = 'reject_once' },
  { optionId = 'o-never', name = 'Never', kind = 'reject_always' },
}

local function perm(id, extra)
  local toolCall = { toolCallId = id, title = 'rm -rf build', kind = 'execute', rawInput = { command = 'rm -rf build' } }
  for k, v in pairs(extra or {}) do
    toolCall[k] = v
  end
  return H.req('session/request_permission', { toolCall = toolCall, options = OPTIONS })
end

return {
  -- Merge rules ---------------------------------------------------------------
  { 'an update for an id never announced creates the card', function()
    local _, _, text = run({ upd({ toolCallId = 'x1', title = 'Reading', kind = 'read', status = 'in_progress' }) })
    T.match(text, 'read · Reading · in progress')
  end },

  { 'a second tool_call with the same id updates the card instead of adding one', function()
    local _, _, text = run({
      tc({ toolCallId = 'c', title = 'Bash', kind = 'execute', status = 'pending' }),
      tc({ toolCallId = 'c', title = 'ls -la', kind = 'execute', status = 'in_progress' }),
    })
    T.eq(count(text, 'run · '), 1)
    T.match(text, 'ls %-la · in progress')
  end },

  { 'missing fields keep their values; content and locations replace; [] is no change', function()
    local _, _, text = run({
      tc({ toolCallId = 'c', title = 'Edit a', kind = 'edit', status = 'pending', locations = { { path = '/p/a.rs', line = 4 } },
        content = { { type = 'content', content = { type = 'text', text = 'first' } } } }),
      upd({ toolCallId = 'c', status = 'in_progress' }),
      upd({ toolCallId = 'c', content = {} }),
      upd({ toolCallId = 'c', locations = { { path = '/p/b.rs' } }, content = { { type = 'content', content = { type = 'text', text = 'second' } } } }),
    })
    T.match(text, 'edit · Edit a · in progress\n  `/p/b%.rs`\n  second')
    T.no_match(text, 'first')
    T.no_match(text, 'a%.rs')
  end },

  { 'a generic first title upgrades; unknown kind is other; null is absent', function()
    local _, _, text = run({
      tc({ toolCallId = 'g', title = 'Read', kind = 'teleport', status = 'pending' }),
      upd({ toolCallId = 'g', title = 'Read src/main.rs', status = vim.NIL, kind = vim.NIL, locations = vim.NIL }),
      upd({ toolCallId = 'g', title = 'Read' }),
    })
    T.match(text, 'tool · Read src/main%.rs · pending')
  end },

  { 'cumulative output re-sent in each update is shown once', function()
    local _, _, text = run({
      tc({ toolCallId = 'o', title = 'make', kind = 'execute', status = 'in_progress',
        content = { { type = 'content', content = { type = 'text', text = 'step 1' } } } }),
      upd({ toolCallId = 'o', content = { { type = 'content', content = { type = 'text', text = 'step 1\nstep 2' } } } }),
      upd({ toolCallId = 'o', status = 'completed', content = { { type = 'content', content = { type = 'text', text = 'step 1\nstep 2\nstep 3' } } } }),
    })
    T.eq(count(text, 'step 1'), 1)
    T.match(text, '  step 1\n  step 2\n  step 3')
  end },

  { 'an update redraws only its own card; the extmark ranges stay right', function()
    local child = run({
      tc({ toolCallId = 'a', title = 'first card', kind = 'read', status = 'pending' }),
      { message = 'between the cards' },
      tc({ toolCallId = 'b', title = 'second card', kind = 'read', status = 'pending' }),
    }, { turns = {
      { match = 'go', steps = {
        tc({ toolCallId = 'a', title = 'first card', kind = 'read', status = 'pending' }),
        { message = 'between the cards' },
        tc({ toolCallId = 'b', title = 'second card', kind = 'read', status = 'pending' }),
      } },
      { match = 'update', steps = {
        upd({ toolCallId = 'a', status = 'completed', content = { { type = 'content', content = { type = 'text', text = 'two\nlines' } } } }),
      } },
    } })
    local before = child:lua([[
      local v = require('acp').current()
      local r = {}
      for i = 0, v.last_index do local a, b = v:entry_range(i); r[#r + 1] = { i, a, b } end
      _G.changes = {}
      vim.api.nvim_buf_attach(v.buf, false, { on_lines = function(_, _, _, first, last_old, last_new)
        table.insert(_G.changes, { first, last_old, last_new }) end })
      return r
    ]])
    H.turn(child, 'update')
    local r = child:lua([[
      local v = require('acp').current()
      local out = {}
      for i = 0, v.last_index do local a, b = v:entry_range(i); out[#out + 1] = { i, a, b } end
      return { ranges = out, changes = _G.changes }
    ]])
    -- Entries: 0 user, 1 heading, 2 card a, 3 text, 4 card b (then the new turn).
    local card_a = before[3]
    local old_end = before[#before][3] + 1
    local inside = vim.tbl_filter(function(c)
      return c[1] < old_end
    end, r.changes)
    -- Besides appends after the old end, the only edit is card a's rows.
    T.eq(inside, { { card_a[2], card_a[3] + 1, card_a[2] + 3 } }, 'only card a was rewritten')
    T.eq(r.ranges[3], { 2, card_a[2], card_a[2] + 2 })
    T.eq(r.ranges[4][2], before[4][2] + 2, 'the text below moved down by the two new lines')
    T.eq(r.ranges[5][2], before[5][2] + 2)
    local lines = H.transcript(child)
    T.eq(lines[r.ranges[5][2] + 1], 'read · second card · pending')
  end },

  { 'long card output folds past the configured height', function()
    local out = {}
    for i = 1, 30 do
      out[#out + 1] = 'out ' .. i
    end
    local child = run({
      tc({ toolCallId = 'l', title = 'long', kind = 'execute', status = 'completed',
        content = { { type = 'content', content = { type = 'text', text = table.concat(out, '\n') } } } }),
    }, { config = { chat = { card_max_lines = 10 } } })
    local r = child:lua([[
      local v = require('acp').current()
      local first, last = v:entry_range(2)
      return vim.api.nvim_win_call(v.win, function()
        return { first = first, closed = vim.fn.foldclosed(first + 2), header = vim.fn.foldclosed(first + 1), last = vim.fn.foldclosedend(first + 2), want_last = last + 1 }
      end)
    ]])
    T.eq(r.header, -1, 'the card header stays visible')
    T.eq(r.closed, r.first + 2, 'the body is folded')
    T.eq(r.last, r.want_last)
  end },

  -- Diffs and review ------------------------------------------------------------
  { 'diff content renders as a highlighted unified diff; a missing oldText is a new file', function()
    local child, _, text = run({
      tc({ toolCallId = 'd', title = 'Edit a.lua', kind = 'edit', status = 'pending', content = {
        { type = 'diff', path = '/p/a.lua', oldText = 'local a = 1\nreturn a\n', newText = 'local a = 2\nreturn a\n' },
        { type = 'diff', path = '/p/new.lua', newText = 'print(1)\n' },
      } }),
    })
    T.match(text, '  diff `/p/a%.lua`\n  ```diff\n  @@ %-1,2 %+1,2 @@\n  %-local a = 1\n  %+local a = 2\n   return a\n  ```')
    T.match(text, '  new file `/p/new%.lua`\n  ```diff\n  @@ %-0,0 %+1 @@\n  %+print%(1%)\n  ```')
    local hl = child:lua([[
      local v = require('acp').current()
      local ns = vim.api.nvim_get_namespaces().acp_card_diff
      local out = {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(v.buf, ns, 0, -1, { details = true })) do
        out[#out + 1] = vim.api.nvim_buf_get_lines(v.buf, m[2], m[2] + 1, false)[1]:sub(3, 3) .. m[4].hl_group
      end
      return out
    ]])
    T.eq(hl, { '@AcpDiffHunk', '-AcpDiffDelete', '+AcpDiffAdd', '@AcpDiffHunk', '+AcpDiffAdd' })
  end },

  { '<CR> on a card with a diff opens old | new in diff mode in a new tab', function()
    local child = run({
      tc({ toolCallId = 'd', title = 'Edit a.lua', kind = 'edit', status = 'completed', content = {
        { type = 'diff', path = '/p/a.lua', oldText = 'one\ntwo\nthree\n', newText = 'one\nTWO\nthree\n' } } }),
    })
    child:feed('<Esc>')
    child:lua([[
      local v = require('acp').current()
      vim.api.nvim_set_current_win(v.win)
      local first = v:entry_range(2)
      vim.api.nvim_win_set_cursor(v.win, { first + 1, 0 })
    ]])
    child:feed('<CR>')
    local r = child:lua([[
      local wins = vim.api.nvim_tabpage_list_wins(0)
      local out = { tabs = #vim.api.nvim_list_tabpages(), wins = {}, cursor = vim.api.nvim_win_get_cursor(0)[1] }
      for i, w in ipairs(wins) do
        out.wins[i] = { diff = vim.wo[w].diff, lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false) }
      end
      return out
    ]])
    T.eq(r.tabs, 2)
    T.eq(#r.wins, 2)
    T.eq(r.wins[1], { diff = true, lines = { 'one', 'two', 'three' } })
    T.eq(r.wins[2], { diff = true, lines = { 'one', 'TWO', 'three' } })
    T.eq(r.cursor, 2, 'the cursor is on the first hunk')
    child:feed('q')
    T.eq(child:lua('return #vim.api.nvim_list_tabpages()'), 1)
  end },

  { ':AcpDiff reviews the newest card with a diff', function()
    local child = run({
      tc({ toolCallId = 'd1', title = 'Edit a', kind = 'edit', status = 'completed', content = {
        { type = 'diff', path = '/p/a.txt', oldText = 'a\n', newText = 'A\n' } } }),
      tc({ toolCallId = 'd2', title = 'Edit b', kind = 'edit', status = 'completed', content = {
        { type = 'diff', path = '/p/b.txt', oldText = 'b\n', newText = 'B\n' } } }),
      { message = 'done' },
    })
    child:feed('<Esc>')
    child:cmd('AcpDiff')
    local r = child:lua([[
      local a, b = unpack(vim.api.nvim_tabpage_list_wins(0))
      return { vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(a), 0, -1, false),
               vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(b), 0, -1, false), vim.wo[a].diff }
    ]])
    T.eq(r, { { 'b' }, { 'B' }, true })
  end },

  { 'an edit inside a permission request is reviewed in a tab; q goes back to the float, whose keys answer', function()
    local child, paths = run(nil, { no_turn = true, turns = { { match = 'go', steps = {
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'e', title = 'Edit cfg.json', kind = 'edit',
          content = { { type = 'diff', path = '/p/cfg.json', oldText = '{"a": 1}\n', newText = '{"a": 2}\n' } } },
        options = OPTIONS }),
    } } } })
    child:lua([[require('acp').send('go')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    local float = child:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.permission').buf, 0, -1, false)]])
    T.contains(float, '  edit /p/cfg.json: +1 -1   (d: review)')
    child:feed('<Esc>')
    H.enter_permission(child)
    child:feed('d')
    T.eq(child:lua('return #vim.api.nvim_list_tabpages()'), 2)
    T.eq(child:lua('return vim.wo.diff'), true)
    T.eq(child:lua('return require("acp.ask.permission").armed'), false, 'no key of the review tab answers')
    child:feed('q')
    T.eq(child:lua('return #vim.api.nvim_list_tabpages()'), 1, 'q closed the review tab')
    -- Back in the float, after its grace period.
    child:wait_for([[local p = require('acp.ask.permission')
      return p.armed and vim.api.nvim_get_current_win() == p.win]])
    child:feed('y')
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    T.eq(H.responses(paths)[1].result, { outcome = { outcome = 'selected', optionId = 'o-allow' } })
  end },

  { ':AcpReview lists changed files against their pre-session text; r and R revert', function()
    local dir = project({ ['a.txt'] = 'one\ntwo\nthree\nfour\n', ['b.txt'] = 'bee\n' })
    local child = run({
      H.req('fs/write_text_file', { path = dir .. '/a.txt', content = 'ONE\ntwo\nthree\nFOUR\n' }),
      H.req('fs/write_text_file', { path = dir .. '/new.txt', content = 'created\n' }),
      tc({ toolCallId = 'd', title = 'Edit b', kind = 'edit', status = 'completed', content = {
        { type = 'diff', path = dir .. '/b.txt', oldText = 'bee\n', newText = 'BEE\n' } } }),
    }, { cwd = dir })
    child:feed('<Esc>')
    child:cmd('AcpReview')
    local r = child:lua([[
      local s = require('acp.editor.review').last
      local out = {}
      for _, f in ipairs(s.files) do out[#out + 1] = { vim.fn.fnamemodify(f.path, ':t'), f.new_file } end
      local wins = vim.api.nvim_tabpage_list_wins(0)
      return { files = out, left = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(wins[1]), 0, -1, false),
               right = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(wins[2]), 0, -1, false),
               cur = vim.api.nvim_get_current_win() == wins[1], cursor = vim.api.nvim_win_get_cursor(0)[1] }
    ]])
    T.eq(r.files, { { 'a.txt', false }, { 'new.txt', true }, { 'b.txt', false } })
    T.eq(r.left, { 'one', 'two', 'three', 'four' })
    T.eq(r.right, { 'ONE', 'two', 'three', 'FOUR' })
    -- r on the first hunk reverts just that hunk in the file's buffer.
    T.eq(r.cursor, 1)
    child:feed('r')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, 1, false)[1] == 'one']], 3000, { dir .. '/a.txt' })
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)]], { dir .. '/a.txt' }),
      { 'one', 'two', 'three', 'FOUR' })
    child:feed('R')
    child:wait_for([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 3, 4, false)[1] == 'four']], 3000, { dir .. '/a.txt' })
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)]], { dir .. '/a.txt' }),
      { 'one', 'two', 'three', 'four' })
    -- ]f goes to the new file; R deletes it.
    child:feed(']f')
    T.eq(child:lua([[return require('acp.editor.review').last.idx]]), 2)
    child:feed('R')
    T.wait(function()
      return vim.uv.fs_stat(dir .. '/new.txt') == nil
    end, 3000, 'R deleted the file the agent created')
  end },

  -- Permission float --------------------------------------------------------------
  { 'each key and each option kind: digits and y/a/n/N pick the matching option', function()
    local keys = { '1', '2', '3', '4', 'y', 'a', 'n', 'N' }
    local want = { 'o-allow', 'o-always', 'o-reject', 'o-never', 'o-allow', 'o-always', 'o-reject', 'o-never' }
    local turns = {}
    for i = 1, #keys do
      turns[#turns + 1] = { match = 'go' .. i .. '!', steps = { perm('k' .. i) } }
    end
    local child, paths = run(nil, { no_turn = true, turns = turns, config = { permissions = { auto_allow = {} } } })
    for i, key in ipairs(keys) do
      child:lua([[require('acp').send(...)]], { 'go' .. i .. '!' })
      child:wait_for([[return #require('acp.ask.permission').queue == 1]])
      child:feed('<Esc>')
      H.enter_permission(child)
      local lines = child:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.permission').buf, 0, -1, false)]])
      T.eq(lines[3], '[execute] rm -rf build')
      -- Each option with its keys and its kind, which is what the answer means.
      T.eq(vim.list_slice(lines, #lines - 5), {
        '  1/y  Allow  [allow once]', '  2/a  Always allow  [allow always]', '  3/n  Reject  [reject once]',
        '  4/N  Never  [reject always]', '', '  q  decide later (:AcpPermission)' })
      child:feed(key)
      child:wait_for(([[return require('acp').current().turns_ended == %d]]):format(i))
      T.eq(H.responses(paths)[i].result.outcome.optionId, want[i], 'key ' .. key)
      -- "always" answers are remembered by the core; forget them for the next key.
      child:lua([[require('acp.core').forget_decisions(require('acp').current().thread)]])
    end
  end, timeout = 60000 },

  { 'requests queue ("1 of 2") and are answered in order', function()
    local child, paths = run(nil, { no_turn = true, turns = { { match = 'go', steps = {
      H.req('session/request_permission', { toolCall = { toolCallId = 'q1', title = 'first', kind = 'execute' }, options = OPTIONS }, { background = true }),
      H.req('session/request_permission', { toolCall = { toolCallId = 'q2', title = 'second', kind = 'edit' }, options = OPTIONS }, { background = true }),
      { sleep_ms = 5000 },
    } } } })
    child:lua([[require('acp').send('go')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 2]])
    local head = child:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.permission').buf, 0, 3, false)]])
    T.eq(head, { 'test asks for permission (1 of 2)', '', '[execute] first' })
    child:feed('<Esc>')
    H.enter_permission(child)
    child:feed('n')
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.permission').buf, 0, 3, false)]]),
      { 'test asks for permission', '', '[edit] second' })
    H.enter_permission(child)
    child:feed('y')
    T.wait(function()
      return #H.responses(paths) == 2
    end, 3000)
    local r = H.responses(paths)
    T.eq({ r[1].result.outcome.optionId, r[2].result.outcome.optionId }, { 'o-reject', 'o-allow' })
    child:wait_for([[return require('acp').current():lines()[#require('acp').current():lines()]:match(' · pending$')]])
    local text = H.transcript_text(child)
    T.match(text, 'run · first · rejected')
    T.match(text, 'edit · second · pending')
  end },

  { 'closing the float leaves the request pending; <CR> on the card reopens it', function()
    local child, paths = run(nil, { no_turn = true, turns = { { match = 'go', steps = { perm('w1') } } } })
    child:lua([[require('acp').send('go')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    child:feed('<Esc>')
    H.enter_permission(child)
    child:feed('q')
    T.eq(child:lua([[return require('acp.ask.permission').win == nil and #require('acp.ask.permission').queue]]), 1)
    T.match(H.transcript_text(child), 'run · rm %-rf build · waiting for you')
    child:lua([[
      local v = require('acp').current()
      vim.api.nvim_set_current_win(v.win)
      local first = v:entry_range(2)
      vim.api.nvim_win_set_cursor(v.win, { first + 1, 0 })
    ]])
    child:feed('<CR>')
    T.eq(child:lua([[return vim.api.nvim_get_current_win() == require('acp.ask.permission').win]]), true)
    child:wait_for([[return require('acp.ask.permission').armed]])
    child:feed('2')
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    T.eq(H.responses(paths)[1].result.outcome.optionId, 'o-always')
    T.match(H.transcript_text(child), 'run · rm %-rf build · pending')
  end },

  { 'cancelling the turn answers pending requests cancelled and marks the card', function()
    local child, paths = run(nil, { no_turn = true, turns = { { match = 'go', steps = { perm('c1') } } } })
    child:lua([[require('acp').send('go')]])
    child:wait_for([[return #require('acp.ask.permission').queue == 1]])
    child:cmd('AcpCancel')
    child:wait_for([[return #require('acp.ask.permission').queue == 0]])
    T.wait(function()
      return #H.responses(paths) == 1
    end, 3000)
    T.eq(H.responses(paths)[1].result, { outcome = { outcome = 'cancelled' } })
    T.match(H.transcript_text(child), 'run · rm %-rf build · cancelled')
  end },

  -- Plan, quickfix, follow -----------------------------------------------------------
  { 'the plan is one checklist block, replaced in place', function()
    local function plan(a, b)
      return { update = { sessionUpdate = 'plan', entries = {
        { content = 'Read code', status = a, priority = 'high' },
        { content = 'Write fix', status = b, priority = 'medium' } } } }
    end
    local child = run(nil, { no_turn = true, turns = { { match = 'go', steps = {
      plan('in_progress', 'pending'),
      { message = 'working' },
      plan('completed', 'in_progress'),
      { sleep_ms = 300 },
      plan('completed', 'completed'),
    } } } })
    child:lua([[require('acp').send('go')]])
    child:wait_for([[local l = require('acp').current():lines(); return vim.tbl_contains(l, '- [ ] Write fix (medium) · in progress')]])
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    local text = H.transcript_text(child)
    T.eq(count(text, 'Plan · '), 1)
    T.match(text, 'Plan · 2/2 done\n%- %[x%] Read code %(high%)\n%- %[x%] Write fix %(medium%)\n\nworking')
  end },

  { 'quickfix: reads, an edit and a new file, without stealing the current list', function()
    local dir = project({ ['a.rs'] = 'fn a() {}\n', ['b.rs'] = 'fn b() {}\n' })
    local child = H.start({ cwd = dir, turns = { { match = 'go', steps = {
      { update = { sessionUpdate = 'session_info_update', title = 'Fix the build' } },
      tc({ toolCallId = 'r1', title = 'Read a.rs', kind = 'read', status = 'completed', locations = { { path = dir .. '/a.rs', line = 0 } } }),
      tc({ toolCallId = 'r2', title = 'Read b.rs', kind = 'read', status = 'completed', locations = { { path = dir .. '/b.rs', line = 9 } } }),
      tc({ toolCallId = 'e1', title = 'Edit a.rs', kind = 'edit', status = 'in_progress', locations = { { path = dir .. '/a.rs', line = 2 } } }),
      H.req('fs/write_text_file', { path = dir .. '/a.rs', content = 'fn a() { 1 }\n' }),
      H.req('fs/write_text_file', { path = dir .. '/new.rs', content = 'fn new() {}\n' }),
    } } } })
    -- The user's own list.
    child:lua([[vim.fn.setqflist({}, ' ', { title = 'my list', items = { { filename = 'x', lnum = 1, text = 'mine' } } })]])
    H.open(child)
    H.turn(child, 'go')
    child:wait_for([[return require('acp').current().qf_id ~= nil and not require('acp').current().qf_dirty]], 3000)
    vim.wait(200)
    local r = child:lua([[
      local v = require('acp').current()
      local cur = vim.fn.getqflist({ title = 0 }).title
      local l = vim.fn.getqflist({ id = v.qf_id, items = 0, title = 0 })
      local items = {}
      for _, it in ipairs(l.items) do items[#items + 1] = { vim.fn.fnamemodify(vim.api.nvim_buf_get_name(it.bufnr), ':t'), it.lnum, it.text } end
      return { current = cur, title = l.title, items = items }
    ]])
    T.eq(r.current, 'my list', "the user's list is still current")
    T.eq(r.title, 'ACP: Fix the build')
    T.eq(r.items, {
      { 'a.rs', 1, '[read] Read a.rs' },
      { 'b.rs', 9, '[read] Read b.rs' },
      { 'a.rs', 2, '[edit] Edit a.rs' },
      { 'a.rs', 1, 'written by the agent' },
      { 'new.rs', 1, 'created by the agent' },
    })
    child:cmd('AcpLocations')
    T.eq(child:lua([[return vim.fn.getqflist({ title = 0 }).title]]), 'ACP: Fix the build')
    T.eq(child:lua([[return vim.bo.buftype]]), 'quickfix')
  end },

  { 'follow mode shows the agent location in a non-chat window, never the current one', function()
    local dir = project({ ['f.txt'] = table.concat(vim.fn.range(1, 100), '\n') .. '\n', ['g.txt'] = 'g\n' })
    local child = H.start({ cwd = dir, config = { follow = true, follow_debounce_ms = 20 }, turns = { { match = 'go', steps = {
      tc({ toolCallId = 'r', title = 'Read f', kind = 'read', status = 'in_progress', locations = { { path = dir .. '/f.txt', line = 41 } } }),
    } } } })
    child:cmd('edit ' .. dir .. '/g.txt')
    H.open(child)
    local input_win = child:lua([[return vim.api.nvim_get_current_win()]])
    H.turn(child, 'go')
    child:wait_for([[return require('acp.chat.follow').last ~= nil]], 3000)
    local r = child:lua([[
      local f = require('acp.chat.follow').last
      return { name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(f.win)), ':t'),
               line = vim.api.nvim_win_get_cursor(f.win)[1], cur = vim.api.nvim_get_current_win() }
    ]])
    T.eq(r.name, 'f.txt')
    T.eq(r.line, 41, "1-based: line 41 is row 41")
    T.eq(r.cur, input_win, 'the cursor stayed in the input area')
  end },
}
