-- No Vim prompt from what the plugin does with files the agent creates,
-- deletes or renames: follow mode, the sync, the windows that open the
-- agent's paths (W11, W12, W13, E211, swap-file ATTENTION, hit-enter).
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')
local Child = require('tests.helpers.child')

local OPTIONS = {
  { optionId = 'o-allow', name = 'Allow', kind = 'allow_once' },
  { optionId = 'o-reject', name = 'Reject', kind = 'reject_once' },
}

local function tc(fields)
  fields.sessionUpdate = fields.sessionUpdate or 'tool_call'
  return { update = fields }
end

local function allowed(step)
  step.if_chosen = 'o-allow'
  return step
end

--- Steps that write `content` to `file` on disk, outside the client (as
--- claude-agent-acp does), through a command of the agent.
local function disk_write(file, content, term)
  return {
    allowed(H.req('terminal/create', { command = ('printf %%s %s > %s'):format(vim.fn.shellescape(content), vim.fn.shellescape(file)) })),
    allowed(H.req('terminal/wait_for_exit', { terminalId = term or 'term-1' })),
  }
end

--- What a prompt would show: the screen's text, the mode, whether Neovim
--- waits for a key.
local function prompt_state(child, screen)
  local mode = child:rpc('nvim_get_mode')
  local text = table.concat(screen:shot().text, '\n')
  return mode, text
end

local function assert_no_prompt(child, screen, what)
  local mode, text = prompt_state(child, screen)
  what = what and (' (' .. what .. ')') or ''
  T.eq(mode.blocking, false, 'Neovim waits for no key' .. what .. '\n' .. text)
  T.truthy(mode.mode == 'n' or mode.mode == 'i' or mode.mode == 'nt', 'mode ' .. mode.mode .. what .. '\n' .. text)
  T.no_match(text, 'W1[123]')
  T.no_match(text, 'E211')
  T.no_match(text, 'Press ENTER')
  T.no_match(text, 'ATTENTION')
  T.no_match(text, '%[O%]K, %(L%)oad')
  local warn = child:lua('return vim.v.warningmsg')
  T.no_match(warn, 'W1[123]', 'v:warningmsg' .. what)
end

--- A turn in which the agent runs `command` (its own disk I/O, as
--- claude-agent-acp does) in a tool call of `kind` naming `paths`.
local function shell_turn(match, kind, paths, command, term)
  local locations = {}
  for i, p in ipairs(paths) do
    locations[i] = { path = p }
  end
  return { match = match, steps = {
    tc({ toolCallId = 's-' .. match, title = command, kind = kind, status = 'in_progress', locations = locations }),
    H.req('terminal/create', { command = command }),
    H.req('terminal/wait_for_exit', { terminalId = term or 'term-1' }),
    tc({ sessionUpdate = 'tool_call_update', toolCallId = 's-' .. match, status = 'completed' }),
    { sleep_ms = 200 },
    { message = 'done' },
  } }
end

--- Starts a chat in `dir` whose turns are `turns`, with a UI attached; the
--- cursor in the window left of the chat, in normal mode.
local function start(dir, turns, config)
  config = vim.tbl_extend('force', { terminal = { confirm = 'never' } }, config or {})
  local child, paths = H.start({ cwd = dir, turns = turns, config = config })
  -- A prompt would block the child: fail fast rather than after 10 s.
  child.rpc_timeout = 3000
  H.open(child)
  child:cmd('stopinsert')
  child:cmd('wincmd t')
  local screen = Screen.attach(child, 120, 40)
  return child, screen, paths
end

--- With `file` open (holding the unsaved lines `unsaved` when given), the
--- agent's turn `go` runs `command` in a tool call of `kind` naming
--- `paths`: no prompt after the turn.
local function turn_with_open(dir, file, kind, paths, command, unsaved)
  local child, screen = start(dir, { shell_turn('go', kind, paths, command) })
  child:cmd('edit ' .. file)
  if unsaved then
    child:lua([[vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)]], { unsaved })
  end
  H.turn(child, 'go')
  assert_no_prompt(child, screen, 'after the turn')
  return child, screen
end

--- `turn_with_open` of a new project's notes.txt, which the agent creates
--- (`a`, `b`).
local function create_open_notes(unsaved)
  local dir = H.project({ ['hello.txt'] = 'hello\n' })
  local notes = dir .. '/notes.txt'
  return turn_with_open(dir, notes, 'edit', { notes }, ('printf "a\\nb\\n" > %s'):format(notes), unsaved)
end

--- The transcript's lines that mention `pattern`.
local function said(child, pattern)
  return child:lua([[
    local out = {}
    for _, l in ipairs(require('acp').current():lines()) do
      if l:find(..., 1, true) then out[#out + 1] = l end
    end
    return table.concat(out, '\n')
  ]], { pattern })
end

local function lines(child)
  return child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]])
end

return {
  { 'follow: "Write notes.txt" waits for permission, then the agent writes it (on disk, or fs/write_text_file): no W13, the window shows notes.txt', function()
    -- Three rounds of each shape: the prompt came with the timing (2 runs in 3).
    for round = 1, 6 do
      local via_fs = round % 2 == 0
      local dir = H.project({ ['hello.txt'] = 'hello\n' })
      local notes = dir .. '/notes.txt'
      local steps = {
        tc({ toolCallId = 'w', title = 'Write notes.txt', kind = 'edit', status = 'pending', locations = { { path = notes } } }),
        { sleep_ms = 100 },
        H.req('session/request_permission', { toolCall = { toolCallId = 'w', title = 'Write notes.txt', kind = 'edit',
          locations = { { path = notes } } }, options = OPTIONS }),
      }
      if via_fs then
        -- claude-code-acp, Gemini CLI
        steps[#steps + 1] = allowed(H.req('fs/write_text_file', { path = notes, content = 'first note\nsecond note\n' }))
      else
        -- claude-agent-acp writes the disk itself
        vim.list_extend(steps, disk_write(notes, 'first note\nsecond note\n'))
      end
      vim.list_extend(steps, {
        tc({ sessionUpdate = 'tool_call_update', toolCallId = 'w', status = 'completed' }),
        { sleep_ms = 300 },
        { message = 'done' },
      })
      local child = H.start({ cwd = dir, config = { follow = true, follow_debounce_ms = 20, terminal = { confirm = 'never' } },
        turns = { { match = 'go', steps = steps } } })
      child.rpc_timeout = 3000
      child:cmd('edit ' .. dir .. '/hello.txt')
      H.open(child)
      local screen = Screen.attach(child, 120, 40)
      local what = (' round %d, %s'):format(round, via_fs and 'fs/write_text_file' or 'disk')
      local win = child:lua([[return vim.fn.bufwinid('hello.txt')]])
      child:lua([[assert(require('acp').send('go'))]])
      child:wait_for([[return #require('acp.ask.permission').queue == 1]], 3000)
      vim.wait(200) -- the follow debounce is 20 ms
      assert_no_prompt(child, screen, 'permission pending' .. what)
      -- While the permission waits: what the window shows (checked at the end).
      local pending = child:lua([[
        local win, notes = ...
        return { vim.fn.fnamemodify(vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win)), ':t'), vim.fn.bufloaded(notes) }
      ]], { win, notes })
      local pending_screen = table.concat(screen:shot().text, '\n')
      H.enter_permission(child)
      child:feed('y')
      child:wait_for([[local win, notes = ...
        local buf = vim.api.nvim_win_get_buf(win)
        return vim.api.nvim_buf_get_name(buf) == notes and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == 'first note']], 3000, { win, notes })
      assert_no_prompt(child, screen, 'after the write' .. what)
      H.wait_idle(child)
      child:cmd('checktime')
      assert_no_prompt(child, screen, 'after :checktime' .. what)
      local shown = child:lua([[
        local win = ...
        local buf = vim.api.nvim_win_get_buf(win)
        return { vim.api.nvim_buf_get_lines(buf, 0, -1, false), vim.bo[buf].modified, vim.wo[win].winbar }
      ]], { win })
      T.eq(shown, { { 'first note', 'second note' }, false, '' }, 'the window shows notes.txt' .. what)
      -- The missing file was not loaded; the window kept hello.txt and said
      -- what the agent was about to create.
      T.eq(pending, { 'hello.txt', 0 }, 'while the permission waited' .. what)
      T.match(pending_screen, 'notes%.txt %(not created yet%)')
      screen:detach()
      child:stop()
    end
  end, timeout = 90000 },

  { 'the agent creates a file open in an unmodified new buffer: no W13, the buffer holds it, unmodified', function()
    local child, screen = create_open_notes()
    child:cmd('checktime')
    assert_no_prompt(child, screen, 'after :checktime')
    T.eq(lines(child), { 'a', 'b' })
    T.eq(child:lua('return vim.bo.modified'), false)
  end },

  { 'a hidden new-file buffer, loaded before the chat opened: created by the agent, read with no W13 when shown again', function()
    local dir = H.project({ ['hello.txt'] = 'hello\n' })
    local notes = dir .. '/notes.txt'
    local child = H.start({ cwd = dir, config = { terminal = { confirm = 'never' } },
      turns = { shell_turn('go', 'edit', { notes }, ('printf "a\\nb\\n" > %s'):format(notes)) } })
    child.rpc_timeout = 3000
    child:cmd('edit ' .. notes)
    child:cmd('edit ' .. dir .. '/hello.txt')
    H.open(child)
    child:cmd('stopinsert')
    child:cmd('wincmd t')
    local screen = Screen.attach(child, 120, 40)
    H.turn(child, 'go')
    assert_no_prompt(child, screen, 'after the turn')
    child:cmd('buffer ' .. vim.fn.fnameescape(notes))
    child:cmd('checktime')
    assert_no_prompt(child, screen, 'shown again')
    T.eq(lines(child), { 'a', 'b' })
    T.eq(child:lua('return vim.bo.modified'), false)
  end },

  { 'the agent creates a file open in a modified new buffer: no W13, the buffer keeps its text, the chat says so', function()
    local child, screen = create_open_notes({ 'mine' })
    child:cmd('checktime')
    assert_no_prompt(child, screen, 'after :checktime')
    T.eq(lines(child), { 'mine' })
    T.eq(child:lua('return vim.bo.modified'), true)
    T.match(said(child, 'notes.txt'), 'notes.txt was created on disk')
  end },

  { 'the agent creates a file open in a new buffer that holds the same unsaved text: read, unmodified, no conflict', function()
    local child, screen = create_open_notes({ 'a', 'b' })
    child:cmd('checktime')
    assert_no_prompt(child, screen)
    T.eq(lines(child), { 'a', 'b' })
    T.eq(child:lua('return vim.bo.modified'), false)
    T.eq(said(child, 'was created on disk'), '')
  end },

  { 'the agent deletes an open file (unmodified, then modified buffer): no E211/W12, the chat says so', function()
    for _, modified in ipairs({ false, true }) do
      local dir = H.project({ ['f.txt'] = 'one\n' })
      local f = dir .. '/f.txt'
      local child, screen = turn_with_open(dir, f, 'delete', { f }, 'rm ' .. f, modified and { 'mine' } or nil)
      child:cmd('checktime')
      child:cmd('doautocmd FocusGained')
      assert_no_prompt(child, screen, 'after :checktime')
      T.eq(lines(child), { modified and 'mine' or 'one' })
      T.match(said(child, 'f.txt'), 'f.txt was deleted on disk')
      screen:detach()
      child:stop()
    end
  end },

  { 'the agent renames an open file (unmodified, then modified buffer): no prompt, the chat names the new name', function()
    for _, modified in ipairs({ false, true }) do
      local dir = H.project({ ['f.txt'] = 'one\n' })
      local f, g = dir .. '/f.txt', dir .. '/g.txt'
      local child, screen = turn_with_open(dir, f, 'move', { f, g }, ('mv %s %s'):format(f, g), modified and { 'mine' } or nil)
      child:cmd('checktime')
      assert_no_prompt(child, screen, 'after :checktime')
      T.eq(lines(child), { modified and 'mine' or 'one' })
      T.match(said(child, 'f.txt'), 'f.txt was renamed to g.txt on disk')
      screen:detach()
      child:stop()
    end
  end },

  { 'a file created with no tool call running: its new-file buffer reads it at once; a :checktime then asks nothing', function()
    local dir = H.project({ ['hello.txt'] = 'hello\n' })
    local notes = dir .. '/notes.txt'
    local child, screen = start(dir, {})
    child:cmd('edit ' .. notes)
    -- Created by anyone, between two checks of the sync (no drain runs).
    T.write_file(notes, 'x\ny\n')
    vim.wait(300)
    child:cmd('checktime')
    assert_no_prompt(child, screen)
    T.eq(lines(child), { 'x', 'y' })
    T.eq(child:lua('return vim.bo.modified'), false)
  end },

  { 'follow mode names a path it refuses in the chat: a long message would wait for Enter in a narrow screen', function()
    local dir = H.project({ ['g.txt'] = 'g\n' })
    local far = T.tmpdir('elsewhere') .. '/' .. ('a_rather_long_directory_name_'):rep(4)
    vim.fn.mkdir(far, 'p')
    local outside = T.write_file(far .. '/outside.txt', 'outside\n')
    local child = H.start({ cwd = dir, config = { follow = true, follow_debounce_ms = 20 }, turns = { { match = 'go', steps = {
      tc({ toolCallId = 'o', title = 'Read', kind = 'read', status = 'in_progress', locations = { { path = outside, line = 1 } } }),
      { sleep_ms = 250 },
      { message = 'done' },
    } } } })
    child.rpc_timeout = 3000
    child:cmd('edit ' .. dir .. '/g.txt')
    H.open(child)
    local screen = Screen.attach(child, 80, 24)
    H.turn(child, 'go')
    assert_no_prompt(child, screen)
    T.match(H.transcript_text(child), 'follow mode: not opening ' .. vim.pesc(outside) .. ": outside the session's roots")
  end },

  { 'follow opens files that have a swap file of a Neovim that died (one existing, one created later): no ATTENTION question', function()
    local dir = H.project({ ['hello.txt'] = 'hello\n', ['f.txt'] = 'a\nb\nc\n' })
    local f, notes = dir .. '/f.txt', dir .. '/notes.txt'
    local swapdir = T.tmpdir('swap')
    -- Another Neovim has unsaved edits in f.txt and in a new notes.txt, then dies.
    local other = Child.new({ cwd = dir })
    other:lua([[vim.o.directory, vim.o.swapfile = ..., true]], { swapdir .. '//' })
    for _, path in ipairs({ f, notes }) do
      other:cmd('edit ' .. path)
      other:lua([[vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'unsaved' }); vim.cmd('preserve')]])
    end
    local pid = other:pid()
    vim.uv.kill(pid, 'sigkill')
    other:wait_exit(3000)
    local swaps = vim.fn.glob(swapdir .. '/*.sw?', false, true)
    T.eq(#swaps, 2, 'two swap files left behind')
    for _, swap in ipairs(swaps) do
      T.eq(vim.fn.swapinfo(swap).dirty, 1)
    end
    -- Control: a plain :edit of f.txt asks the swap file question there.
    local control = Child.new({ cwd = dir })
    control:lua([[vim.o.directory, vim.o.swapfile = ..., true]], { swapdir .. '//' })
    local control_screen = Screen.attach(control, 80, 24)
    control:notify('nvim_command', 'edit ' .. f)
    T.wait(function()
      return control:rpc('nvim_get_mode').blocking
    end, 3000)
    control_screen:detach()
    control:stop()
    local child = H.start({ cwd = dir, config = { follow = true, follow_debounce_ms = 20 }, turns = {
      { match = 'read', steps = {
        tc({ toolCallId = 'r', title = 'Read f.txt', kind = 'read', status = 'in_progress', locations = { { path = f, line = 2 } } }),
        { sleep_ms = 200 },
        { message = 'done' },
      } },
      { match = 'write', steps = {
        tc({ toolCallId = 'w', title = 'Write notes.txt', kind = 'edit', status = 'in_progress', locations = { { path = notes } } }),
        { sleep_ms = 200 },
        H.req('fs/write_text_file', { path = notes, content = 'note\n' }),
        tc({ sessionUpdate = 'tool_call_update', toolCallId = 'w', status = 'completed' }),
        { sleep_ms = 200 },
        { message = 'done' },
      } },
    } })
    child.rpc_timeout = 3000
    child:lua([[vim.o.directory, vim.o.swapfile = ..., true]], { swapdir .. '//' })
    child:cmd('edit ' .. dir .. '/hello.txt')
    local win = child:lua('return vim.api.nvim_get_current_win()')
    H.open(child)
    local screen = Screen.attach(child, 120, 40)
    H.turn(child, 'read')
    child:wait_for([[local win, path = ...; return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win)) == path]], 3000, { win, f })
    assert_no_prompt(child, screen, 'f.txt')
    T.eq(child:lua([[return vim.api.nvim_win_get_cursor(...)[1] ]], { win }), 2)
    H.turn(child, 'write')
    child:wait_for([[local win, path = ...; return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win)) == path]], 3000, { win, notes })
    assert_no_prompt(child, screen, 'notes.txt')
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(...), 0, -1, false)]], { win }), { 'note' })
    local text = H.transcript_text(child)
    T.match(text, 'f%.txt has a swap file of another Neovim: opened anyway')
    T.match(text, 'notes%.txt has a swap file of another Neovim: opened anyway')
  end },

  { 'follow: the user rejects "Write notes.txt": the window keeps its file and, once the turn ends, its winbar', function()
    local dir = H.project({ ['hello.txt'] = 'hello\n' })
    local notes = dir .. '/notes.txt'
    local child = H.start({ cwd = dir, config = { follow = true, follow_debounce_ms = 20 }, turns = { { match = 'go', steps = {
      tc({ toolCallId = 'w', title = 'Write notes.txt', kind = 'edit', status = 'pending', locations = { { path = notes } } }),
      { sleep_ms = 100 },
      H.req('session/request_permission', { toolCall = { toolCallId = 'w' }, options = OPTIONS }),
      tc({ sessionUpdate = 'tool_call_update', toolCallId = 'w', status = 'failed' }),
      { message = 'not written' },
    } } } })
    child.rpc_timeout = 3000
    child:cmd('edit ' .. dir .. '/hello.txt')
    local win = child:lua('return vim.api.nvim_get_current_win()')
    child:lua([[vim.wo.winbar = 'mine']])
    H.open(child)
    child:lua([[assert(require('acp').send('go'))]])
    child:wait_for([[return require('acp.chat.follow').waiting ~= nil]], 3000)
    T.match(child:lua([[return vim.wo[...].winbar]], { win }), 'notes%.txt %(not created yet%)')
    child:wait_for([[return #require('acp.ask.permission').queue == 1]], 3000)
    H.enter_permission(child)
    child:feed('n')
    H.wait_idle(child)
    -- The wait ends with the turn (the chat's activity pass after the drain that ended it).
    child:wait_for([[return require('acp.chat.follow').waiting == nil]], 3000)
    T.eq(child:lua([[local w = ...; return { vim.fn.fnamemodify(vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)), ':t'), vim.wo[w].winbar }]], { win }),
      { 'hello.txt', 'mine' }, "the window's own winbar is back")
  end },

  { 'follow: a location for a file not yet created that arrives after its turn ended is not waited for (the winbar stays the window\'s own)', function()
    -- The rejected write's last card update can come in the drain that ends
    -- the turn; its debounced location then fires with no turn running.
    local dir = H.project({ ['hello.txt'] = 'hello\n' })
    local child = H.start({ cwd = dir, config = { follow = true, follow_debounce_ms = 20 }, turns = { { match = 'go', steps = {
      { message = 'done' },
    } } } })
    child:cmd('edit ' .. dir .. '/hello.txt')
    local win = child:lua('return vim.api.nvim_get_current_win()')
    child:lua([[vim.wo.winbar = 'mine']])
    H.open(child)
    H.turn(child, 'go')
    child:lua([[local view = require('acp.chat').current(); require('acp.chat.follow').location(view, ..., 1)]], { dir .. '/notes.txt' })
    child:wait_for([[return require('acp.chat.follow').pending == nil]], 3000)
    T.eq(child:lua([[return { require('acp.chat.follow').waiting == nil, vim.wo[...].winbar }]], { win }), { true, 'mine' })
  end },
}
