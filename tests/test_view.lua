-- The chat view as a user meets it: turns that own their cards and plans,
-- the live status area, the layout, rendering, keys and rough edges.
local H = require('tests.helpers.acp')

local function plan(content, status)
  return { update = { sessionUpdate = 'plan', entries = { { content = content, status = status, priority = 'high' } } } }
end

local function tc(fields)
  fields.sessionUpdate = fields.sessionUpdate or 'tool_call'
  return { update = fields }
end

local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end
]]

--- The chat's entries in order, as the core holds them: { kind, entry }.
local function entries(child)
  return child:lua([[
    local v = require('acp').current()
    local core = require('acp.core')
    local out = {}
    for index = 0, v.last_index or -1 do
      local e = v.entries[index]
      if e then out[#out + 1] = { kind = e.kind, entry = core.entry(v.thread, index) } end
    end
    return out
  ]])
end

return {
  { 'turns own their cards and plans, across a restart and a reused id', function()
    local child = H.start({
      config = { permissions = { auto_allow = { { kind = 'execute', pattern = 'rm *' } } } },
      turns = {
        { match = 'first', steps = {
          plan('old plan', 'in_progress'),
          tc({ toolCallId = 'c1', title = 'Read a', kind = 'read', status = 'in_progress' }),
          { crash = { code = 3 } },
        } },
        { match = 'second', steps = {
          tc({ sessionUpdate = 'tool_call_update', toolCallId = 'c1', title = 'Read b', kind = 'read', status = 'completed' }),
          plan('new plan', 'pending'),
          { message = 'done' },
        } },
        { match = 'perm', steps = {
          H.req('session/request_permission', {
            toolCall = { toolCallId = 'rm', title = 'rm -rf build/', kind = 'execute' },
            options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' } },
          }),
          tc({ sessionUpdate = 'tool_call_update', toolCallId = 'rm', status = 'completed' }),
        } },
      },
    })
    H.open(child)
    H.turn(child, 'first')
    H.turn(child, 'second')
    H.turn(child, 'perm 1')
    H.turn(child, 'perm 2')
    local list = entries(child)
    local seen, restart = {}, nil
    for i, e in ipairs(list) do
      if e.kind == 'notice' and e.entry.text:match('Restarted') then
        restart = i
      elseif e.kind == 'tool_call' or e.kind == 'plan' then
        seen[#seen + 1] = { i, e.entry.title or e.entry.items[1].content, e.entry.status, e.entry.notes }
      end
    end
    T.truthy(restart, 'a new session section')
    T.eq(seen[1][2], 'old plan')
    T.eq({ seen[2][2], seen[2][3] }, { 'Read a', 'in_progress' }, "turn 1's card kept")
    T.eq({ seen[3][2], seen[3][3] }, { 'Read b', 'completed' }, 'a new card in the new session')
    T.eq(seen[4][2], 'new plan')
    T.truthy(seen[3][1] > restart and seen[4][1] > restart)
    -- One card per permission turn, each with its own note.
    T.eq(#seen, 6)
    T.match(seen[5][4][1], 'auto%-allowed')
    T.match(seen[6][4][1], 'auto%-allowed')
    T.eq(#seen[5][4], 1, 'the second note did not land on the first card')
    T.eq(seen[6][3], 'completed')
  end },

  { 'card headers and status marks are plain text a user reads and searches', function()
    local child = H.start({ turns = { { match = 'go', steps = {
      tc({ toolCallId = 'e1', title = 'Edit hello.lua', kind = 'edit', status = 'completed' }),
      tc({ toolCallId = 'x1', title = 'make', kind = 'execute', status = 'completed', rawOutput = { aggregated_output = 'ok\n', exit_code = 0 } }),
      plan('Read code', 'in_progress'),
    } } } })
    H.open(child)
    H.turn(child, 'go')
    local r = child:lua([[
      local v = require('acp').current()
      vim.api.nvim_set_current_win(v.win)
      vim.api.nvim_win_set_cursor(v.win, { 1, 0 })
      local found = vim.fn.search('Edit hello', 'w')
      local line = vim.api.nvim_get_current_line()
      local ns = vim.api.nvim_get_namespaces().acp_decor
      local marks = {}
      for _, m in ipairs(ns and vim.api.nvim_buf_get_extmarks(v.buf, ns, { found - 1, 0 }, { found - 1, -1 }, { details = true }) or {}) do
        marks[#marks + 1] = { line:sub(m[3] + 1, m[4].end_col), m[4].hl_group }
      end
      local hl = vim.treesitter.highlighter.active[v.buf]
      return {
        found = found > 0, line = line, marks = marks,
        text = table.concat(v:lines(), '\n'),
        breakindent = vim.wo[v.win].breakindent,
        one_parser = hl ~= nil and vim.treesitter.get_parser(v.buf) == hl.tree,
      }
    ]])
    T.truthy(r.found, '/Edit hello finds the card')
    T.eq(r.line, 'edit · Edit hello.lua · completed')
    T.eq(r.marks, { { 'edit', 'AcpCardKind' }, { 'Edit hello.lua', 'AcpCardTitle' }, { 'completed', 'AcpStatusDone' } })
    T.match(r.text, '\n  exit code 0\n')
    T.no_match(r.text, '_exit code')
    T.no_match(r.text, '%[~%]')
    T.match(r.text, '%- %[ %] Read code %(high%) · in progress')
    T.truthy(r.breakindent, 'wrapped card lines keep their indent')
    T.truthy(r.one_parser, 'get_parser(buf) is the highlighter parser')
  end },

  { 'a live status area stays visible at the bottom while the turn runs, then goes', function()
    local long = {}
    for i = 1, 120 do
      long[#long + 1] = 'line ' .. i
    end
    local child = H.start({ turns = { { match = 'go', steps = {
      { message = table.concat(long, '\n') .. '\n' },
      { update = { sessionUpdate = 'plan', entries = {
        { content = 'Read code', status = 'completed', priority = 'high' },
        { content = 'Write fix', status = 'in_progress', priority = 'medium' } } } },
      tc({ toolCallId = 'r1', title = 'cargo build', kind = 'execute', status = 'in_progress' }),
      H.req('session/request_permission', {
        toolCall = { toolCallId = 'w1', title = 'Write src/fix.rs', kind = 'edit' },
        options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' } },
      }, { background = true }),
      { message = 'more text' },
      { sleep_ms = 1500 },
    } } } })
    H.open(child)
    child:lua([[require('acp').send('go')]])
    child:wait_for([[local v = require('acp').current()
      return #require('acp.ask.permission').queue == 1 and vim.tbl_contains(v:lines(), 'more text')]])
    -- A float's screen position is known after the redraw that places it:
    -- wait for that (the area is opened within the drain that shows the card).
    child:wait_for([[local v = require('acp').current()
      local w = require('acp.chat.status').win(v)
      vim.cmd('redraw')
      return w and vim.api.nvim_win_get_position(w)[2] == vim.api.nvim_win_get_position(v.win)[2] ]])
    local r = child:lua([[
      local v = require('acp').current()
      vim.cmd('redraw')
      -- A float over the transcript window that never takes focus.
      local win
      for _, w in ipairs(vim.api.nvim_list_wins()) do
        local c = vim.api.nvim_win_get_config(w)
        if c.relative == 'win' and c.win == v.win and c.focusable == false then win = w end
      end
      if not win then return { lines = {} } end
      local cfg = vim.api.nvim_win_get_config(win)
      local pos = vim.api.nvim_win_get_position(win)
      local chat = vim.api.nvim_win_get_position(v.win)
      local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
      -- The last transcript line is on screen, above the area.
      local last = vim.api.nvim_buf_line_count(v.buf)
      local info = vim.fn.getwininfo(v.win)[1]
      return {
        lines = lines, focusable = cfg.focusable,
        -- The area's last row is the window's last row (a border row on top, a winbar above).
        bottom = pos[1] + 1 + cfg.height == chat[1] + 1 + vim.api.nvim_win_get_height(v.win),
        last_visible = info.botline >= last and info.topline <= last,
        covered = require('acp.chat.status').height(v),
        screen_rows_below = chat[1] + 1 + vim.api.nvim_win_get_height(v.win) - vim.fn.screenpos(v.win, last, 1).row,
      }
    ]])
    T.match(r.lines[1], '^running · cargo build · %d+s$')
    T.eq(r.lines[2], 'plan · 1/2 done · now: Write fix')
    T.match(r.lines[3], '^waiting for you · Write src/fix%.rs · <M%-y> allow · <C%-a> more$')
    T.eq(#r.lines, 3)
    T.eq(r.focusable, false)
    T.truthy(r.bottom, 'pinned to the bottom of the transcript window')
    T.truthy(r.last_visible, 'the last line is on screen')
    T.truthy(r.screen_rows_below >= r.covered, 'and not under the area')
    H.enter_permission(child)
    child:feed('1')
    child:wait_for([[return require('acp').current().turns_ended == 1]], 5000)
    T.falsy(child:lua([[return require('acp.chat.status').win(require('acp').current())]]), 'gone when the turn ends')
    local text = H.transcript_text(child)
    local _, plans = text:gsub('Plan · ', '')
    T.eq(plans, 1, 'the plan is rendered once in the transcript')
  end },

  { 'layout: closing either window closes the pair, :AcpChat restores its size and toggles', function()
    local child = H.start()
    H.open(child)
    H.turn(child, 'stream')
    local r = child:lua([[
      local v = require('acp').current()
      vim.api.nvim_set_current_win(v.win)
      vim.cmd('vertical resize 70')
      vim.cmd('resize 30')
      local fix = { vim.wo[v.win].winfixbuf, vim.wo[v.input_win].winfixbuf }
      vim.cmd('quit')
      return fix
    ]])
    T.eq(r, { true, true }, 'winfixbuf on both chat windows')
    child:wait_for([[return #vim.api.nvim_tabpage_list_wins(0) == 1]])
    child:cmd('AcpChat')
    r = child:lua([[
      local v = require('acp').current()
      return { wins = #vim.api.nvim_tabpage_list_wins(0), width = vim.api.nvim_win_get_width(v.win),
        input = vim.api.nvim_win_get_height(v.input_win) }
    ]])
    T.eq(r.wins, 3, 'two chat windows, not three columns')
    T.eq(r.width, 70, 'the width the user set')
    -- Closing the input closes the transcript as well.
    child:lua([[vim.api.nvim_win_close(require('acp').current().input_win, false)]])
    child:wait_for([[return #vim.api.nvim_tabpage_list_wins(0) == 1]])
    child:cmd('AcpChat')
    T.eq(child:lua([[return #vim.api.nvim_tabpage_list_wins(0)]]), 3)
    child:cmd('AcpChat')
    T.eq(child:lua([[return { #vim.api.nvim_tabpage_list_wins(0), require('acp').current():is_visible() }]]), { 1, false }, ':AcpChat toggles')
    child:cmd('AcpChat')
    T.eq(child:lua([[return require('acp').current():is_visible()]]), true)
    T.match(H.transcript_text(child), 'alpha beta', 'the conversation is kept')
  end },

  { 'layout: another agent opens a new chat, the old one stays reachable through :AcpChats', function()
    local child = H.start()
    child:lua([[
      local cfg = require('acp.config').options
      cfg.agents.other = vim.deepcopy(cfg.agents.test)
    ]])
    H.open(child)
    H.turn(child, 'stream')
    local first = child:lua([[return require('acp').current().thread]])
    child:lua(RECORD_NOTIFY)
    child:cmd('AcpChat other')
    child:wait_for([[local v = require('acp').current(); return v.agent == 'other' and v.state == 'idle']])
    T.match(child:lua([[return _G.notes[1].msg]]), 'the chat with test is kept; :AcpChats switches back')
    T.eq(child:lua([[return #vim.api.nvim_tabpage_list_wins(0)]]), 3, 'the old chat is hidden, not stacked')
    local ids = child:lua([[return vim.fn.getcompletion('AcpChats ', 'cmdline')]])
    T.eq(#ids, 2)
    child:cmd('AcpChats ' .. first)
    T.eq(child:lua([[return require('acp').current().thread]]), first)
    T.match(H.transcript_text(child), 'alpha beta')
    -- The picker lists both.
    local items = child:lua([[
      local out
      vim.ui.select = function(items, opts) out = vim.tbl_map(opts.format_item, items) end
      vim.cmd('AcpChats')
      return out
    ]])
    T.eq(#items, 2)
    T.match(items[1], '^test %d+ · ready %(this tab%)$')
    T.match(items[2], '^other %d+ · ready$')
  end },

  { "layout: position = 'tab' registers the chat to its own tab", function()
    local child = H.start({ config = { chat = { position = 'tab' } } })
    child:lua(RECORD_NOTIFY)
    H.open(child)
    local r = child:lua([[
      local v = require('acp').current()
      return { tabs = #vim.api.nvim_list_tabpages(), here = vim.api.nvim_win_get_tabpage(v.win) == vim.api.nvim_get_current_tabpage() }
    ]])
    T.eq(r, { tabs = 2, here = true })
    child:lua([[require('acp').send('slow')]])
    child:wait_for([[return require('acp').current().state == 'running']])
    child:cmd('AcpCancel')
    child:wait_for([[return require('acp').current().state == 'idle']])
    T.eq(child:lua([[return vim.tbl_filter(function(n) return n.msg:match('no chat') end, _G.notes)]]), {})
    -- Closing the chat's tab keeps the chat; :AcpChat in the first tab brings it back.
    child:cmd('tabclose')
    T.eq(child:lua([[return #vim.api.nvim_list_tabpages()]]), 1)
    child:cmd('AcpChat')
    T.match(H.transcript_text(child), 'Cancelled')
  end },

  { 'the permission float sits below its card, never over the diff', function()
    local old, new = {}, {}
    for i = 1, 8 do
      old[#old + 1] = 'line ' .. i
      new[#new + 1] = i == 4 and 'LINE 4' or ('line ' .. i)
    end
    local function edit_turn(name, before)
      local steps = {}
      if before then
        steps[1] = { message = before }
      end
      vim.list_extend(steps, {
        tc({ toolCallId = name, title = 'Edit ' .. name, kind = 'edit', status = 'pending',
          content = { { type = 'diff', path = '/p/' .. name, oldText = table.concat(old, '\n') .. '\n', newText = table.concat(new, '\n') .. '\n' } } }),
        H.req('session/request_permission', {
          toolCall = { toolCallId = name, title = 'Edit ' .. name, kind = 'edit' },
          options = { { optionId = 'ok', name = 'Allow', kind = 'allow_once' }, { optionId = 'no', name = 'Reject', kind = 'reject_once' } },
        }),
      })
      return { match = name, steps = steps }
    end
    local filler = {}
    for i = 1, 60 do
      filler[#filler + 1] = 'filler ' .. i
    end
    local child = H.start({ turns = { edit_turn('short.lua'), edit_turn('long.lua', table.concat(filler, '\n') .. '\n') } })
    H.open(child)
    local function check(name)
      child:lua([[require('acp').send(...)]], { name })
      child:wait_for([[local p = require('acp.ask.permission'); return p.win ~= nil and p.shown ~= nil]])
      -- The chat is brought to its end first; the float follows a scroll on
      -- WinScrolled, which Neovim's loop runs after this call, as after a
      -- user's scroll: the float is measured once that has run.
      child:lua([[require('acp').current():scroll_to_end(); vim.cmd('redraw')]])
      child:lua('return true')
      return child:lua([[
        local v = require('acp').current()
        vim.cmd('redraw')
        local p = require('acp.ask.permission')
        local pos = vim.api.nvim_win_get_position(p.win)
        local cfg = vim.api.nvim_win_get_config(p.win)
        local top, bottom = pos[1] + 1, pos[1] + cfg.height + 2 -- 1-based screen rows with the border
        local index
        for i, card in pairs(v.cards) do
          if card.id == p.shown.payload.tool_call_id then index = i end
        end
        local first = v:entry_range(index)
        local card = v.cards[index]
        local rows = {}
        for _, d in ipairs(card.diff_rows or {}) do
          for r = first + d[1], first + d[2] do
            local sp = vim.fn.screenpos(v.win, r + 1, 1).row
            if sp > 0 then rows[#rows + 1] = sp end
          end
        end
        local head = vim.fn.screenpos(v.win, first + 1, 1).row
        local over = false
        for _, r in ipairs(rows) do
          if r >= top and r <= bottom then over = true end
        end
        return { over = over, visible_diff_rows = #rows, top = top, bottom = bottom, head = head,
          last = rows[#rows], focus_stays = vim.api.nvim_get_current_win() ~= p.win, footer = cfg.footer }
      ]])
    end
    local r = check('short.lua')
    T.truthy(r.visible_diff_rows > 0)
    T.falsy(r.over, 'not over the diff: ' .. vim.inspect(r))
    T.truthy(r.top > r.last, 'below the card')
    T.truthy(r.focus_stays, 'the float does not take focus')
    T.match(r.footer[1][1], '<M%-y> allow once · <M%-n> reject', 'the chords that answer from the chat')
    H.enter_permission(child)
    child:feed('1')
    H.wait_idle(child)
    r = check('long.lua')
    T.truthy(r.visible_diff_rows > 0)
    T.falsy(r.over, 'not over the diff: ' .. vim.inspect(r))
    T.truthy(r.head > 0 and r.top > r.last, 'the chat scrolls the card up; the float takes the rows below it')
  end },

  { 'rough edges: @ menu, tab labels, errors without tracebacks, completion, keys, history', function()
    local dir = H.project({ ['a.lua'] = 'return 1\n' })
    local child = H.start({ cwd = dir, config = { terminal = { confirm = 'never' }, chat = { keys = { hide = false, send = '<C-g>' } } }, turns = {
      { match = 'run', steps = {
        tc({ toolCallId = 't1', title = 'ls', kind = 'execute', status = 'in_progress' }),
        H.req('terminal/create', { command = 'echo hi' }),
        tc({ sessionUpdate = 'tool_call_update', toolCallId = 't1', content = { { type = 'terminal', terminalId = 'term-1' } } }),
        H.req('terminal/wait_for_exit', { terminalId = 'term-1' }),
        { message = 'ran' },
      } },
      { match = 'slow', steps = { { sleep_ms = 2000 } } },
    } })
    H.open(child)
    child:lua(RECORD_NOTIFY)
    -- @ menu: files only; no scratch buffers, help, or the log.
    local items = child:lua([[
      local v = require('acp').current()
      vim.cmd('wincmd t')
      vim.cmd('edit a.lua')
      local scratch = vim.api.nvim_create_buf(true, false)
      vim.api.nvim_buf_set_lines(scratch, 0, -1, false, { 'notes' })
      local log = require('acp.config').options.log_file
      vim.fn.writefile({ 'log line' }, log)
      vim.cmd('edit ' .. vim.fn.fnameescape(log))
      pcall(vim.cmd, 'help acp')
      return vim.tbl_map(function(it) return it.abbr end, require('acp.prompt.mention').candidates(v, ''))
    ]])
    T.contains(items, 'a.lua')
    for _, it in ipairs(items) do
      T.no_match(it, '^buffer:')
      T.no_match(it, 'acp%.log')
      T.no_match(it, 'acp%.txt')
    end
    -- Tab labels name the chat.
    child:lua([[vim.cmd('tabnew'); vim.cmd('AcpChat')]])
    T.match(child:lua([[return require('acp.chat.layout').tab_label(vim.api.nvim_get_current_tabpage())]]), 'ACP test')
    T.no_match(child:lua([[return vim.api.nvim_eval_statusline(vim.o.tabline, { use_tabline = true }).str]]), 'a//')
    -- A :AcpSend the core refuses (its errors carry a Lua traceback, as
    -- mlua raises them): a message, no traceback, no file:line.
    child:lua([[
      local core = require('acp.core')
      local prompt = core.prompt
      core.prompt = function()
        core.prompt = prompt
        error('runtime error: /x/lua/acp/core/init.lua:12: the agent is still answering; cancel it first (:AcpCancel)\nstack traceback:\n\t[C]: in function prompt', 0)
      end
    ]])
    child:cmd('AcpSend again')
    local msg = child:lua([[return _G.notes[#_G.notes].msg]])
    T.eq(msg, 'acp.nvim: the agent is still answering; cancel it first (:AcpCancel)')
    -- The second chat may still be opening its session: the message then
    -- waits for it, so the turn is known to run only once the state says so.
    child:lua([[require('acp').send('slow')]])
    child:wait_for([[return require('acp').current().state == 'running']], 5000)
    H.wait_idle(child, 5000)
    -- <Tab> after :AcpTerminal completes the chat's terminal ids.
    H.turn(child, 'run')
    T.eq(child:lua([[return vim.fn.getcompletion('AcpTerminal ', 'cmdline')]]), { 'term-1' })
    -- Keys from the config: q unmapped in the transcript (read there: `hide`
    -- maps it in that buffer only), <C-g> sends.
    local maps = child:lua([[
      local v = require('acp').current()
      return { q = vim.api.nvim_buf_call(v.buf, function()
        return vim.fn.maparg('q', 'n', false, true).buffer end), send = vim.api.nvim_buf_call(v.input, function()
        return vim.fn.maparg('<C-g>', 'i', false, true).desc end) }
    ]])
    T.eq(maps, { send = 'Send the message to the agent' })
    -- History: <Up> on the first line brings back the last prompt, <Down> the draft.
    child:lua([[
      local v = require('acp').current()
      v:focus_input(false)
      vim.api.nvim_buf_set_lines(v.input, 0, -1, false, { 'draft' })
    ]])
    child:feed('<Up>')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { 'run' })
    child:feed('<C-p>')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { 'slow' })
    child:feed('<Down><Down>')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(require('acp').current().input, 0, -1, false)]]), { 'draft' })
  end },

  { 'an agent that failed to start: the winbar never says ready', function()
    local child = H.start({ agent = { cmd = '/nonexistent/agent' } })
    child:lua(RECORD_NOTIFY)
    child:cmd('AcpChat')
    child:wait_for([[return require('acp').current().state == 'disconnected']])
    child:lua([[require('acp').send('hello')]])
    child:wait_for([[return require('acp').current().turns_ended == 1]])
    vim.wait(100)
    local r = child:lua([[local v = require('acp').current(); return { state = v.state, winbar = vim.wo[v.win].winbar }]])
    T.eq(r.state, 'disconnected')
    T.no_match(r.winbar, 'ready')
  end },

  { 'an entry\'s rows follow its text: rows read during a drain are read again once the text changed', function()
    local child = H.start()
    H.open(child)
    H.turn(child, 'hello')
    local r = child:lua([[
      local v = require('acp').current()
      local i = v.last_index
      local a1, b1 = v:entry_range(i)
      v:apply({ { type = 'appended', thread = v.thread, index = i, text = '\nmore\nrows' } })
      local a2, b2 = v:entry_range(i)
      local prev_a, prev_b = v:entry_range(i - 1)
      return { a1 = a1, b1 = b1, a2 = a2, b2 = b2, prev_b = prev_b, n = vim.api.nvim_buf_line_count(v.buf),
        last = vim.api.nvim_buf_get_lines(v.buf, b2, b2 + 1, false)[1] }
    ]])
    T.eq(r.a2, r.a1)
    T.eq(r.b2, r.b1 + 2)
    T.eq(r.b2, r.n - 1)
    T.eq(r.last, 'rows')
    T.eq(r.prev_b, r.a1 - 2)
  end },
}
