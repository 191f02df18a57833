-- Frame-batched rendering: how streamed events become buffer edits. These cases assert
-- behaviour (edits per drain, slicing, highlighting paused and resumed), never timings;
-- `make bench` measures the timings.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local function bench_agent()
  return {
    cmd = H.agent_bin,
    args = { '--scenario', H.root .. '/bench/scenarios/bench.json' },
  }
end

--- Wraps the current view's apply (one call per drain): records the buffer edits each
--- drain made, and whether Tree-sitter highlighting was on after it.
local function instrument(child)
  child:lua([[
    local v = require('acp').current()
    _G.rec = { edits = {}, highlighted = {}, cur = 0 }
    vim.api.nvim_buf_attach(v.buf, false, { on_bytes = function() _G.rec.cur = _G.rec.cur + 1 end })
    v.apply = function(self, events)
      _G.rec.cur = 0
      getmetatable(self).apply(self, events)
      table.insert(_G.rec.edits, _G.rec.cur)
      table.insert(_G.rec.highlighted, vim.treesitter.highlighter.active[self.buf] ~= nil)
    end
    _G.rec.drains0 = require('acp.core').stats().drains
  ]])
end

local function record(child)
  return child:lua([[
    local r = _G.rec
    r.drains = require('acp.core').stats().drains - r.drains0
    r.max_edits = math.max(0, unpack(r.edits))
    r.active_now = vim.treesitter.highlighter.active[require('acp').current().buf] ~= nil
    r.lang = vim.treesitter.highlighter.active[require('acp').current().buf]
      and vim.treesitter.highlighter.active[require('acp').current().buf].tree:lang()
    return r
  ]])
end

return {
  { 'a flood: one buffer edit per drain, highlighting paused during it and resumed after', function()
    local child = H.start()
    H.open(child)
    H.turn(child, 'hello')
    instrument(child)
    -- The turn goes on for 400 ms after its flood, so the flood's drains happen while it
    -- runs even when a loaded machine delivers the whole flood in one drain.
    H.turn(child, 'floodpause', 15000)
    local r = record(child)
    local lines = H.transcript(child)
    T.eq(#lines, 7 + 7 + 3000 + 1)
    T.eq(lines[15 + 2999], ('%06d:'):format(2999) .. ('x'):rep(32))
    T.eq(lines[#lines], 'after the flood')
    T.truthy(#r.edits >= 2 and #r.edits < 500, ('%d drains for 3000 chunks'):format(#r.edits))
    -- The first drain adds the prompt, the heading and the message's first text at once.
    T.truthy(r.max_edits <= 2, ('a drain made %d buffer edits'):format(r.max_edits))
    T.contains(r.highlighted, false, 'highlighting pauses while the flood streams')
    T.eq(r.active_now, true, 'and resumes once the turn ended')
    T.eq(r.lang, 'acp_markdown')
    T.eq(child:lua([[return require('acp').export()]]), H.transcript_text(child))
  end },

  { 'text and tool calls streamed together: new entries in one edit, same text as the core', function()
    local child = H.start({ agent = bench_agent() })
    H.open(child)
    instrument(child)
    H.turn(child, 'tools', 15000)
    local r = record(child)
    local text = H.transcript_text(child)
    T.eq(child:lua([[return require('acp').export()]]), text)
    local _, completed = text:gsub(' · completed\n', '')
    T.eq(completed, 100)
    T.truthy(not text:find(' · pending', 1, true), 'every card shows its last state')
    -- 202 entries, 1,000 text chunks and 100 re-renders arrive in a few drains; each drain
    -- writes its new entries with one edit (plus one append to the entry already shown, plus
    -- re-renders of cards shown in an earlier drain).
    T.truthy(#r.edits < 50, ('%d drains'):format(#r.edits))
    local entries = child:lua([[
      local n = 0
      for _ in pairs(require('acp').current().entries) do n = n + 1 end
      return n
    ]])
    T.eq(entries, 202)
    local total = 0
    for _, e in ipairs(r.edits) do
      total = total + e
    end
    T.truthy(total < 150, ('%d buffer edits for 1,300 events'):format(total))
  end },

  { 'a huge single chunk is delivered in bounded slices, nothing lost', function()
    local child = H.start({ agent = bench_agent() })
    H.open(child)
    instrument(child)
    H.turn(child, 'big5mb', 20000)
    local r = record(child)
    T.truthy(#r.edits >= 3, ('the 5 MB chunk came in %d drains'):format(#r.edits))
    local info = child:lua([[
      local v = require('acp').current()
      local n = vim.api.nvim_buf_line_count(v.buf)
      local last = vim.api.nvim_buf_get_lines(v.buf, n - 2, n, false)
      return { n = n, last = last, same = table.concat(v:lines(), '\n') == require('acp').export() }
    ]])
    T.eq(info.n, 6 + 62500 + 1)
    T.eq(info.last, { ('y'):rep(79), '' })
    T.eq(info.same, true)
    -- Highlighting resumes on a 5 MB transcript: the finished entry is frozen, and the
    -- buffer's parser covers only what comes after it.
    T.eq(r.active_now, true)
  end },

  { 'frozen highlights place one mark per text a capture names: the one the highlighter shows', function()
    -- Of marks of equal priority at one position Neovim's choice depends on the buffer's other
    -- marks: `setup` below showed as @function.call in most runs and @variable in some.
    local child = H.start({ turns = {
      { match = 'code', steps = { { message = "Set up:\n\n```lua\nrequire('acp').setup({ default_agent = 'claude' })\n```\n" } } },
      { match = 'next', steps = { { message = 'Next.\n' } } },
    } })
    H.open(child)
    H.turn(child, 'code')
    H.turn(child, 'next')
    child:wait_for([[return require('acp.chat.markdown').pending == 0]])
    local r = child:lua([=[
      local md = require('acp.chat.markdown')
      local v = require('acp').current()
      local row
      for i, l in ipairs(vim.api.nvim_buf_get_lines(v.buf, 0, -1, false)) do
        if l:find('default_agent', 1, true) then row = i - 1 end
      end
      local by_range, twice, groups = {}, {}, {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(v.buf, md.ns, { row, 0 }, { row, -1 }, { details = true })) do
        local d = m[4]
        if d.hl_group then
          local key = ('%d:%d-%d:%d'):format(m[2], m[3], d.end_row, d.end_col)
          if by_range[key] then
            twice[#twice + 1] = key .. ' ' .. by_range[key] .. ' ' .. d.hl_group
          end
          by_range[key] = d.hl_group
          groups[vim.api.nvim_buf_get_text(v.buf, m[2], m[3], d.end_row, d.end_col, {})[1]] = d.hl_group
        end
      end
      return { twice = twice, groups = groups }
    ]=])
    T.eq(r.twice, {})
    -- The capture of the latest pattern, as the highlighter draws it (its last draws on top).
    T.eq(r.groups['setup'], '@function.call.lua')
    T.eq(r.groups['require'], '@function.builtin.lua')
    T.eq(r.groups["'claude'"], '@string.lua')
  end },

  { 'a long chat: finished entries keep frozen highlights, only the live entry is parsed', function()
    local history = {}
    for i = 1, 40 do
      history[#history + 1] = ('## Part %d\n\nSome **bold** text.\n\n```lua\nlocal x = %d\n```\n\n'):format(i, i)
    end
    local child = H.start({ turns = {
      { match = 'history', steps = { { message = table.concat(history) } } },
      { match = 'next', steps = { { message = 'Next.\n' } } },
      { match = 'live', steps = { { message = ('# Live\n\nword **word** word\n'):rep(10), chunk_size = 16, delay_ms = 15 } } },
    } })
    H.open(child)
    H.turn(child, 'history')
    -- Once the next turn started, the history's entry is finished.
    H.turn(child, 'next')
    child:wait_for([[return require('acp.chat.markdown').pending == 0]])
    local frozen = child:lua([[
      local md = require('acp.chat.markdown')
      local v = require('acp').current()
      local groups, ids = {}, {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(v.buf, md.ns, 0, -1, { details = true })) do
        groups[m[4].hl_group or ''] = true
        ids[#ids + 1] = m[1]
      end
      return { groups = groups, ids = ids }
    ]])
    -- Headings, inline markup and the code block's own language, as extmarks that stay.
    T.truthy(frozen.groups['@markup.heading.2.acp_markdown'], vim.inspect(frozen.groups))
    T.truthy(frozen.groups['@markup.strong.markdown_inline'], vim.inspect(frozen.groups))
    T.truthy(frozen.groups['@keyword.lua'], vim.inspect(frozen.groups))
    child:lua([[
      local v = require('acp').current()
      _G.seen = {}
      v.apply = function(self, events)
        getmetatable(self).apply(self, events)
        if self.state == 'running' then
          local md = require('acp.chat.markdown')
          local region = vim.treesitter.get_parser(self.buf):included_regions()[1][1]
          local live = self:entry_range(self.last_index)
          -- The live entry's rows above the parser's region: frozen headings.
          local headings = 0
          for _, m in ipairs(vim.api.nvim_buf_get_extmarks(self.buf, md.ns, { live, 0 }, { region[1], 0 },
            { details = true })) do
            if m[4].hl_group == '@markup.heading.1.acp_markdown' and m[2] < region[1] then
              headings = headings + 1
            end
          end
          local above = 0
          for _, l in ipairs(vim.api.nvim_buf_get_lines(self.buf, live, region[1], false)) do
            above = above + (l == '# Live' and 1 or 0)
          end
          table.insert(_G.seen, { region = region[1], live = live, n = vim.api.nvim_buf_line_count(self.buf),
            active = md.active(self.buf), headings = headings, above = above })
        end
      end
    ]])
    H.turn(child, 'live', 15000)
    local seen = child:lua('return _G.seen')
    T.truthy(#seen >= 3, ('%d drains'):format(#seen))
    local grown = 0
    for _, s in ipairs(seen) do
      -- The buffer's parser starts in the live entry: the chat above it is not parsed again,
      -- and neither are the live entry's finished blocks (frozen as it streams): it keeps
      -- the last rows only.
      T.truthy(s.region >= s.live and s.region <= s.n, vim.inspect(s))
      T.truthy(s.n - s.region <= 20, vim.inspect(s))
      T.eq(s.active, true)
      if s.region > s.live then
        grown = grown + 1
        -- Every heading above the region is highlighted (frozen).
        T.truthy(s.above >= 1, vim.inspect(s))
        T.eq(s.headings, s.above, vim.inspect(s))
      end
    end
    T.truthy(grown >= 1, 'the live entry got longer than the parser keeps')
    local after = child:lua([[
      local md = require('acp.chat.markdown')
      local v = require('acp').current()
      local ids = {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(v.buf, md.ns, 0, -1, {})) do
        table.insert(ids, m[1])
      end
      return { ids = ids, highlighted = md.highlighted(v.buf), tree = vim.treesitter.get_parser(v.buf) ~= nil }
    ]])
    -- The history's frozen highlights were neither removed nor placed again.
    local kept = {}
    for _, id in ipairs(after.ids) do
      kept[id] = true
    end
    for _, id in ipairs(frozen.ids) do
      T.truthy(kept[id], 'frozen mark kept: ' .. id)
    end
    T.eq(after.highlighted, true)
    T.eq(after.tree, true)
    -- Once the turn ended, the whole live entry is frozen: each of its 10 headings.
    child:wait_for([[return require('acp.chat.markdown').pending == 0]])
    local headings = child:lua([[
      local md = require('acp.chat.markdown')
      local v = require('acp').current()
      local n = 0
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(v.buf, md.ns, { (v:entry_range(v.last_index)), 0 }, -1,
        { details = true })) do
        n = n + (m[4].hl_group == '@markup.heading.1.acp_markdown' and 1 or 0)
      end
      return n
    ]])
    T.eq(headings, 10)
  end },

  { 'a long answer that ends the turn is frozen whole after it: every part, and a code block longer than a slice', function()
    -- About 60 KB (several 16 KB slices), with a 1500-line code block in the middle.
    local parts = {}
    for i = 1, 400 do
      parts[#parts + 1] = ('## Part %d\n\nSome **bold** text.\n\n'):format(i)
      if i == 200 then
        parts[#parts + 1] = '```lua\n' .. ('x = 1\n'):rep(1500) .. 'local last = 2\n```\n\n'
      end
    end
    local child = H.start({ turns = {
      { match = 'long', steps = { { message = table.concat(parts), chunk_size = 4096 } } },
    } })
    H.open(child)
    H.turn(child, 'long')
    child:wait_for([[return require('acp.chat.markdown').pending == 0]])
    local r = child:lua([=[
      local md = require('acp.chat.markdown')
      local v = require('acp').current()
      local lines = vim.api.nvim_buf_get_lines(v.buf, 0, -1, false)
      local at = {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(v.buf, md.ns, 0, -1, { details = true })) do
        local g = m[4].hl_group
        if g then
          at[m[2]] = at[m[2]] or {}
          at[m[2]][g] = true
        end
      end
      local missing, parts, last_kw = {}, 0, false
      for row, l in ipairs(lines) do
        if l:match('^## Part %d+$') then
          parts = parts + 1
          if not (at[row - 1] and at[row - 1]['@markup.heading.2.acp_markdown']) then
            missing[#missing + 1] = l
          end
        elseif l == 'local last = 2' then
          last_kw = at[row - 1] and at[row - 1]['@keyword.lua'] or false
        end
      end
      return { missing = missing, parts = parts, last_kw = last_kw }
    ]=])
    T.eq(r.parts, 400)
    T.eq(r.missing, {})
    T.eq(r.last_kw, true)
  end },

  { 'a burst of tool cards: every card is highlighted right after the turn, none left plain', function()
    local child = H.start({ agent = bench_agent() })
    H.open(child)
    child:lua([=[
      local v = require('acp').current()
      local md = require('acp.chat.markdown')
      _G.unmarked = {}
      local function marked(first, last)
        return #vim.api.nvim_buf_get_extmarks(v.buf, md.ns, { first, 0 }, { last, -1 }, { limit = 1 }) > 0
      end
      _G.cards_marked = function(only_seen)
        local top, bottom = vim.fn.line('w0', v.win) - 1, vim.fn.line('w$', v.win) - 1
        local out = {}
        for i, e in pairs(v.entries) do
          local first, last = v:entry_range(i)
          local seen = last >= top and first <= bottom
          if e.kind == 'tool_call' and v.frozen[i] and (seen or not only_seen) and not marked(first, last) then
            out[#out + 1] = i
          end
        end
        return out
      end
      v.apply = function(self, events)
        getmetatable(self).apply(self, events)
        vim.list_extend(_G.unmarked, _G.cards_marked(true))
      end
    ]=])
    H.turn(child, 'tools')
    -- "Right after": the cards out of sight are frozen on the next turns of
    -- the event loop, some queued by the activity pass after the last drain
    -- (the queue can read empty just before them).
    child:wait_for([[return require('acp').current().settle == nil and require('acp.chat.markdown').pending == 0
      and #_G.cards_marked(false) == 0]], 5000)
    local r = child:lua([[
      local n = 0
      for _, e in pairs(require('acp').current().entries) do
        n = n + (e.kind == 'tool_call' and 1 or 0)
      end
      local frozen = 0
      for i, e in pairs(require('acp').current().entries) do
        frozen = frozen + ((e.kind == 'tool_call' and require('acp').current().frozen[i]) and 1 or 0)
      end
      return { cards = n, frozen = frozen, on_screen_unmarked = _G.unmarked, unmarked = _G.cards_marked(false) }
    ]])
    T.eq(r.cards, 100)
    T.eq(r.frozen, 100)
    T.eq(r.unmarked, {})
    -- Which cards the drain itself highlights depends on its time budget
    -- (4 ms): under load a card on screen can wait one turn of the loop, so
    -- that is measured by the bench (BENCH_PHASES), not asserted here.
  end },

  { 'a burst while the turn runs: the drain colours the cards on screen, the rest comes right after; finished entries are no flood', function()
    local child = H.start()
    H.open(child)
    H.turn(child, 'hello')
    child:lua([=[
      local v = require('acp').current()
      local decor = require('acp.chat.decor')
      _G.coloured = function(index)
        local a, b = v:entry_range(index)
        return #vim.api.nvim_buf_get_extmarks(v.buf, decor.ns, { a, 0 }, { b, -1 }, { limit = 1 }) > 0
      end
      _G.first = v.last_index + 1
      local events = { { type = 'status', thread = v.thread, state = 'running', detail = '' } }
      for i = 0, 29 do
        local index = _G.first + 2 * i
        events[#events + 1] = { type = 'added', thread = v.thread, index = index, kind = 'tool_call',
          lines = { ('Read  file_%02d  pending'):format(i) } }
        events[#events + 1] = { type = 'card', thread = v.thread, index = index, card = { id = 't' .. i,
          title = 'file', kind = 'read', status = 'pending', locations = {}, header = { label = { from = 0, to = 4 },
          title = { from = 6, to = 13 }, status = { from = 15, to = 22 }, tone = 'running' } } }
        -- A finished answer of 1 KB after each card: 30 KB in one drain.
        events[#events + 1] = { type = 'added', thread = v.thread, index = index + 1, kind = 'agent',
          lines = { ('word '):rep(200) } }
      end
      v:apply(events)
      -- Right after the drain, before the loop turns.
      -- (Card 12 is below the rows the window showed and above the end it scrolls to.)
      _G.after_drain = { first = _G.coloured(_G.first + 24), last = _G.coloured(_G.first + 58), settle = v.settle ~= nil,
        highlighting = vim.treesitter.highlighter.active[v.buf] ~= nil }
    ]=])
    local r = child:lua('return _G.after_drain')
    T.eq(r.last, true, 'the card on screen is coloured in the drain')
    T.eq(r.first, false, 'a card out of sight waits for the next turn of the loop')
    T.eq(r.settle, true)
    T.eq(r.highlighting, true, 'the live entry got 1 KB: highlighting goes on')
    child:wait_for([[return require('acp').current().settle == nil and require('acp.chat.markdown').pending == 0]])
    r = child:lua([[
      local v = require('acp').current()
      local plain, unfrozen = 0, 0
      for i = 0, 29 do
        plain = plain + (_G.coloured(_G.first + 2 * i) and 0 or 1)
      end
      for i = _G.first, _G.first + 58 do
        unfrozen = unfrozen + (v.frozen[i] and 0 or 1)
      end
      return { plain = plain, unfrozen = unfrozen }
    ]])
    T.eq(r, { plain = 0, unfrozen = 0 })
  end },

  { 'a drain that leaves a backlog reaches the screen at once, also with work queued behind it', function()
    local Screen = require('tests.helpers.screen')
    local child = H.start()
    local screen = Screen.attach(child, 80, 20)
    H.open(child)
    H.turn(child, 'hello')
    local function shown(s)
      return table.concat(screen:drawn(), '\n'):find(s, 1, true) ~= nil
    end
    -- A drain whose budget left events for the next (a flood's backlog), then 1.5 s of work
    -- queued behind it, as that next drain may be: Neovim itself sends the screen only once
    -- its queue is empty. A drain that left nothing does not force it (the loop updates the
    -- screen right after).
    local function drain(text, behind)
      child:lua_notify([[
        local text, behind = ...
        vim.schedule(function()
          local v = require('acp').current()
          require('acp.core.dispatch').dispatch({ { type = 'added', thread = v.thread,
            index = v.last_index + 1, kind = 'agent', lines = { text } } }, behind)
          vim.schedule(function()
            local t = vim.uv.hrtime()
            while vim.uv.hrtime() - t < 1.5e9 do
            end
          end)
        end)
      ]], { text, behind })
    end
    drain('the text of a drain with a backlog', true)
    T.eq(vim.wait(1000, function() return shown('the text of a drain with a backlog') end, 10), true,
      'the drain was on the screen before the work queued behind it ended')
    child:wait_for('return true', 5000)
    drain('the text of a drain that took all', false)
    T.eq(vim.wait(1000, function() return shown('the text of a drain that took all') end, 10), false,
      'no forced screen update')
    child:wait_for('return true', 5000)
    T.eq(vim.wait(2000, function() return shown('the text of a drain that took all') end, 10), true)
  end },

  { 'a stream that scrolls the chat redraws the lines that come into view, not the whole window', function()
    local Screen = require('tests.helpers.screen')
    local lines = {}
    for i = 1, 150 do
      lines[#lines + 1] = ('line %d of the answer'):format(i)
    end
    local child = H.start({ turns = {
      { match = 'go', steps = { { message = table.concat(lines, '\n') .. '\n', chunk_size = 22, delay_ms = 8 } } },
    } })
    Screen.attach(child, 80, 30)
    H.open(child)
    child:lua([[
      local v = require('acp').current()
      local ns = vim.api.nvim_create_namespace('test_redrawn')
      _G.redrawn = { wins = 0, lines = 0, height = vim.api.nvim_win_get_height(v.win) }
      vim.api.nvim_set_decoration_provider(ns, {
        on_win = function(_, win)
          if win == v.win and v.state == 'running' then
            _G.redrawn.wins = _G.redrawn.wins + 1
          end
        end,
        on_line = function(_, win)
          if win == v.win and v.state == 'running' then
            _G.redrawn.lines = _G.redrawn.lines + 1
          end
        end,
      })
    ]])
    H.turn(child, 'go', 15000)
    local r = child:lua('return _G.redrawn')
    -- The chat follows the end above its status area on every frame: a frame shows about one
    -- new line (a whole window redrawn each time would be `height` lines a frame).
    T.truthy(r.wins >= 10, vim.inspect(r))
    T.truthy(r.lines / r.wins < r.height / 3, vim.inspect(r))
  end },

  { 'a 5 MB markdown transcript stays highlighted', function()
    local part = ('## Heading\n\nSome **bold** and `code` text, long enough to fill a line.\n\n'):rep(100)
    local child = H.start({ turns = {
      { match = 'big', steps = { { message = part:rep(math.ceil(5e6 / #part)), chunk_size = 65536 } } },
    } })
    H.open(child)
    H.turn(child, 'big', 30000)
    -- A long entry is frozen in slices, on the next turns of the event loop.
    child:wait_for([[
      local md = require('acp.chat.markdown')
      local buf = require('acp').current().buf
      local n = vim.api.nvim_buf_line_count(buf)
      return #vim.api.nvim_buf_get_extmarks(buf, md.ns, { n - 5, 0 }, -1, { limit = 1 }) > 0
    ]], 60000)
    local r = child:lua([[
      local md = require('acp.chat.markdown')
      local v = require('acp').current()
      local n = vim.api.nvim_buf_line_count(v.buf)
      local last = vim.api.nvim_buf_get_extmarks(v.buf, md.ns, { n - 1, 0 }, 0, { limit = 1, details = true })[1]
      return {
        bytes = vim.api.nvim_buf_get_offset(v.buf, n),
        highlighted = md.highlighted(v.buf),
        last_group = last and last[4].hl_group,
        last_row = last and last[2],
        n = n,
      }
    ]])
    T.truthy(r.bytes > 5e6, r.bytes .. ' bytes')
    T.eq(r.highlighted, true)
    -- The end of the transcript is highlighted too.
    T.truthy(r.last_row and r.last_row > r.n - 10, vim.inspect(r))
    -- A generous wait, not a speed target (16-21 s on a loaded 2-core
    -- machine; the freeze's cost per frame is measured by `make bench`).
  end, timeout = 90000 },

  { 'a drain freezes the few entries a stream finishes at once; a burst waits for the next quiet turn', function()
    local child = H.start()
    H.open(child)
    H.turn(child, 'hello')
    -- Entries added as a drain brings them (the view's half only): n
    -- finished agent messages, each a line of inline markup, then whether
    -- each one has frozen highlights right after that drain.
    child:lua([=[
      _G.drain_of = function(n)
        local v = require('acp').current()
        local md = require('acp.chat.markdown')
        local events, first = {}, v.last_index + 1
        for i = 0, n - 1 do
          events[#events + 1] = { type = 'added', thread = v.thread, index = first + i, kind = 'agent',
            lines = { ('**bold %d** and `code`'):format(i) } }
        end
        v:apply(events)
        local marked = 0
        for i = first, first + n - 1 do
          local a, b = v:entry_range(i)
          if #vim.api.nvim_buf_get_extmarks(v.buf, md.ns, { a, 0 }, { b, -1 }, { limit = 1 }) > 0 then
            marked = marked + 1
          end
        end
        return marked
      end
    ]=])
    -- Three: frozen in the drain (within its budget), also while more of
    -- the agent's events wait (an answer streaming on after a tool card).
    child:lua([[
      _G.events_wait = require('acp.core').events_wait
      require('acp.core').events_wait = function() return true end
    ]])
    T.eq(child:lua('return _G.drain_of(3)'), 3)
    child:lua([[require('acp.core').events_wait = _G.events_wait]])
    -- Twenty (a burst): none in the drain, all on the next turns of the loop.
    T.eq(child:lua('return _G.drain_of(20)'), 0)
    -- The burst's freezing is queued by a 1 ms timer (settle), then done in slices.
    child:wait_for([[return require('acp').current().settle == nil and require('acp.chat.markdown').pending == 0]])
    T.eq(child:lua([[
      local v, md = require('acp').current(), require('acp.chat.markdown')
      local n = 0
      for i = v.last_index - 19, v.last_index - 1 do
        local a, b = v:entry_range(i)
        n = n + (#vim.api.nvim_buf_get_extmarks(v.buf, md.ns, { a, 0 }, { b, -1 }, { limit = 1 }) > 0 and 1 or 0)
      end
      return n
    ]]), 19)
  end },

  { 'highlighting left for later waits while the agent outruns the drains, at most a second', function()
    local child = H.start()
    H.open(child)
    child:lua([[
      local core = require('acp.core')
      _G.behind = true
      -- The core's word: events wait for the next drain.
      core.events_wait = function() return _G.behind end
      local lines = {}
      for i = 1, 40 do
        lines[#lines + 1] = '**bold ' .. i .. '** and `code`'
        lines[#lines + 1] = ''
      end
      _G.fbuf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_lines(_G.fbuf, 0, -1, false, lines)
      _G.frozen = function()
        return #vim.api.nvim_buf_get_extmarks(_G.fbuf, require('acp.chat.markdown').ns, 0, -1, {})
      end
      require('acp.chat.markdown').freeze(_G.fbuf, 0, #lines - 1, true)
    ]])
    child:lua('vim.wait(150)')
    T.eq(child:lua('return _G.frozen()'), 0, 'nothing frozen while the backlog lasts')
    T.truthy(child:lua([[return require('acp.chat.markdown').pending]]) > 0, 'the work waits in the queue')
    child:lua('_G.behind = false')
    child:wait_for([[return require('acp.chat.markdown').pending == 0]])
    T.truthy(child:lua('return _G.frozen()') > 0, 'frozen once the text is in')
    -- A backlog that never ends holds it for a second, not for good.
    child:lua([[
      _G.behind = true
      _G.t1 = vim.uv.now()
      require('acp.chat.markdown').freeze(_G.fbuf, 0, vim.api.nvim_buf_line_count(_G.fbuf) - 1, true)
    ]])
    child:wait_for([[return require('acp.chat.markdown').pending == 0]], 5000)
    T.truthy(child:lua('return vim.uv.now() - _G.t1') >= 900, 'it waited about a second first')
    T.truthy(child:lua('return _G.frozen()') > 0)
  end },

  { 'highlighting left for later stops as soon as the agent\'s events come in', function()
    local child = H.start()
    H.open(child)
    local r = child:lua([[
      local core, md = require('acp.core'), require('acp.chat.markdown')
      -- Quiet when the work starts; events come in after its first slice.
      local asked = 0
      core.events_wait = function()
        asked = asked + 1
        return asked > 2
      end
      local lines = {}
      for i = 1, 40 do
        lines[#lines + 1] = '**bold ' .. i .. '** and `code`'
        lines[#lines + 1] = ''
      end
      -- Many slices: each entry its own (the rows frozen apart).
      local buf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
      for row = 0, #lines - 2, 2 do
        md.freeze(buf, row, row, true)
      end
      local queued = md.pending
      vim.wait(150)
      return { queued = queued, left = md.pending }
    ]])
    T.eq(r.queued, 40)
    -- One slice went before the events came; the rest waits for them.
    T.eq(r.left, 39)
  end },

  { 'the chat highlights with acp_markdown, derived from the markdown queries', function()
    local child = H.start()
    H.open(child)
    H.turn(child, 'markdown')
    local r = child:lua([[
      local q = vim.treesitter.query
      local hl = q.get('acp_markdown', 'highlights')
      local inj = q.get('acp_markdown', 'injections')
      local v = require('acp').current()
      return {
        lang = vim.treesitter.highlighter.active[v.buf].tree:lang(),
        conceal_line = hl.has_conceal_line or false,
        combined = inj.has_combined_injections or false,
        captures = #hl.captures == #q.get('markdown', 'highlights').captures,
      }
    ]])
    T.eq(r, { lang = 'acp_markdown', conceal_line = false, combined = false, captures = true })
  end },

  { 'the answer that ends the turn keeps the highlights of its finished part: only its tail is frozen after the turn', function()
    local child = H.start()
    H.open(child)
    H.turn(child, 'hello')
    local r = child:lua([=[
      local v = require('acp').current()
      local md = require('acp.chat.markdown')
      local index = v.last_index + 1
      local lines = {}
      for i = 1, 40 do
        lines[#lines + 1] = ('paragraph %d with **bold** and `code`'):format(i)
        lines[#lines + 1] = ''
      end
      v:apply({ { type = 'status', thread = v.thread, state = 'running', detail = '' },
        { type = 'added', thread = v.thread, index = index, kind = 'agent', lines = lines } })
      vim.wait(2000, function() return md.pending == 0 end)
      local first = v:entry_range(index)
      local function marked_top()
        return #vim.api.nvim_buf_get_extmarks(v.buf, md.ns, { first, 0 }, { first + 10, -1 }, { limit = 1 }) > 0
      end
      local out = { tail = v.live_tail ~= nil, before = marked_top() }
      v:apply({ { type = 'appended', thread = v.thread, index = index, text = '\nthe end' },
        { type = 'status', thread = v.thread, state = 'idle', detail = 'end_turn' } })
      out.after = marked_top()
      return out
    ]=])
    T.eq(r.tail, true, 'the live answer froze its finished part as it streamed')
    T.eq(r.before, true)
    T.eq(r.after, true, 'the turn\'s end does not clear and freeze it again')
  end },
}
