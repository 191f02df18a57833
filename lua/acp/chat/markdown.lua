--- Tree-sitter highlighting of the chat transcript.
---
--- The transcript uses the markdown parser under its own language name,
--- `acp_markdown`, with the user's markdown queries minus two directives that
--- make every edit cost time proportional to the whole transcript
--- (measured: see doc/benchmarks.md):
---   - `injection.combined` (the html injection): with any combined
---     injection, every parse re-runs the injection query over the whole
---     document instead of the visible range;
---   - `conceal_lines` (code fence lines): with it, every cursor move or
---     scroll of a window with 'conceallevel' >= 2 re-parses the buffer
---     synchronously after an edit.
--- Everything else (highlights, inline markup, code block languages) is the
--- same as for markdown files.
---
--- Per entry: the buffer's parser covers only the live entry (`live`), and
--- finished entries keep their highlights as extmarks (`freeze`), so the
--- cost of a frame does not grow with the chat.
---
--- Also: highlighting is suspended while a flood of text streams in (parsing
--- cost grows with the entry, so re-parsing per frame would keep the main
--- loop busy) and resumed when the turn ends.
local M = {}

M.lang = 'acp_markdown'

local registered

local function read_query(kind)
  local parts = {}
  for _, file in ipairs(vim.treesitter.query.get_files('markdown', kind)) do
    local f = io.open(file, 'r')
    if f then
      parts[#parts + 1] = f:read('*a')
      f:close()
    end
  end
  return table.concat(parts, '\n')
end

--- Registers `acp_markdown` once. Returns the language to start on the
--- transcript: `acp_markdown`, or `markdown` when that cannot be set up.
function M.language()
  if require('acp.config').options.chat.markdown == 'markdown' then
    -- The stock parser, so that plugins that render markdown see it.
    vim.treesitter.language.register('markdown', { 'acpchat', 'acpchat_input' })
    return 'markdown'
  end
  if registered ~= nil then
    return registered
  end
  registered = 'markdown'
  local ok = pcall(function()
    local path = vim.api.nvim_get_runtime_file('parser/markdown.so', false)[1]
    assert(path, 'no markdown parser')
    vim.treesitter.language.add(M.lang, { path = path, symbol_name = 'markdown' })
    local highlights = read_query('highlights'):gsub('%(#set!%s+conceal_lines%s+""%)', '')
    local injections = read_query('injections'):gsub('%(#set!%s+injection%.combined%)', '')
    vim.treesitter.query.set(M.lang, 'highlights', highlights)
    vim.treesitter.query.set(M.lang, 'injections', injections)
    -- Validate now: a broken query would otherwise fail at the first redraw.
    assert(vim.treesitter.query.get(M.lang, 'highlights'))
    assert(vim.treesitter.query.get(M.lang, 'injections'))
    -- Inline markup is in every entry: its queries are read now, not in the
    -- budget of the first drain that freezes one (acp.chat.markdown.freeze).
    pcall(vim.treesitter.query.get, 'markdown_inline', 'highlights')
  end)
  if ok then
    registered = M.lang
    -- `vim.treesitter.get_parser(buf)` of a chat then returns the parser
    -- the highlighter already keeps, instead of building a second one.
    vim.treesitter.language.register(M.lang, { 'acpchat', 'acpchat_input' })
  end
  return registered
end

--- Starts highlighting `buf`. Returns false when Tree-sitter cannot. With
--- `row`, the parser covers only the rows from there (see `live`), set
--- before the first parse.
function M.start(buf, row)
  if row and M.per_entry() then
    M.live(buf, row)
  end
  return (pcall(vim.treesitter.start, buf, M.language()))
end

function M.stop(buf)
  pcall(vim.treesitter.stop, buf)
end

function M.active(buf)
  return vim.treesitter.highlighter.active[buf] ~= nil
end

--- Frozen highlights: extmarks of finished entries (see `freeze`).
M.ns = vim.api.nvim_create_namespace('acp_markdown_frozen')

--- Whether `buf` is highlighted now: the live entry by Tree-sitter, the
--- finished ones by frozen extmarks.
function M.highlighted(buf)
  return M.active(buf)
end

--- Whether finished entries are frozen (and only the live one parsed by the
--- buffer's parser). Not with the stock parser: a markdown renderer reads
--- the whole buffer through `get_parser(buf)`.
function M.per_entry()
  return M.language() == M.lang
end

--- A key for a node's range: a number while each part is below 2^13 (a
--- slice's rows, most columns), else a string.
local function range_key(r1, c1, r2, c2)
  if r1 < 8192 and c1 < 8192 and r2 < 8192 and c2 < 8192 then
    return ((r1 * 8192 + c1) * 8192 + r2) * 8192 + c2
  end
  return r1 .. ':' .. c1 .. ':' .. r2 .. ':' .. c2
end

--- Places the frozen highlights of `lines`, which start at row `first`.
local function freeze_lines(buf, first, lines)
  local api = vim.api
  -- Ends with a newline, as in the buffer: a last line `## title` is a heading.
  local text = table.concat(lines, '\n') .. '\n'
  local ok, parser = pcall(vim.treesitter.get_string_parser, text, M.language())
  if not ok or not parser then
    return
  end
  parser:parse(true)
  parser:for_each_tree(function(tree, ltree)
    local lang = ltree:lang()
    local qok, query = pcall(vim.treesitter.query.get, lang, 'highlights')
    if not qok or not query then
      return
    end
    -- As the highlighter: an injected tree's captures draw over its parent's.
    local depth, p = 0, ltree:parent()
    while p do
      depth, p = depth + 1, p:parent()
    end
    -- Where captures of one tree overlap, the one of the later pattern shows,
    -- as with the highlighter. Of marks of equal priority at one position
    -- Neovim shows one that depends on the buffer's other marks (measured: a
    -- code block's `setup` in Lua showed as @function.call or @variable from
    -- run to run), so of captures of the very same text only the one that
    -- shows is placed; the rest are placed from the last pattern to the first.
    local marks = {}
    local same = {} -- range -> its mark with a highlight, for that choice
    for id, node, metadata, match in query:iter_captures(tree:root(), text, 0, -1) do
      local name = query.captures[id]
      local m = metadata[id] or {}
      local conceal = m.conceal or metadata.conceal
      if name ~= 'spell' and name ~= 'nospell' and (name:sub(1, 1) ~= '_' or conceal) then
        local r1, c1, r2, c2 = node:range()
        local opts = {
          end_row = first + r2,
          end_col = c2,
          priority = tonumber(m.priority or metadata.priority) or vim.hl.priorities.treesitter,
          _subpriority = depth,
          conceal = conceal,
          strict = false,
        }
        if name ~= 'conceal' and name:sub(1, 1) ~= '_' then
          opts.hl_group = '@' .. name .. '.' .. lang
        end
        local _, pattern = match:info()
        local mark = { first + r1, c1, opts, pattern * 1e7 + #marks }
        local key = opts.hl_group and not conceal and range_key(r1, c1, r2, c2)
        local held = key and same[key]
        if not held then
          marks[#marks + 1] = mark
          if key then
            same[key] = mark
          end
        elseif mark[4] > held[4] then
          -- A later pattern (or a later capture of it) for the same text: it shows.
          held[3], held[4] = opts, mark[4]
        end
      end
    end
    table.sort(marks, function(a, b)
      return a[4] > b[4]
    end)
    for _, c in ipairs(marks) do
      pcall(api.nvim_buf_set_extmark, buf, M.ns, c[1], c[2], c[3])
    end
  end)
end

-- A long entry is frozen in slices of about this size (measured: about 17 ms
-- each on chat markdown), one per turn of the event loop, so that a 5 MB
-- answer does not hold the main loop.
--- Entries whose frozen highlights are still being placed.
M.pending = 0

local SLICE_BYTES = 16 * 1024
local track_ns = vim.api.nvim_create_namespace('acp_markdown_freeze')

--- The code fence open after line `l` (the fence character, or nil when
--- outside a code block), given the one open before it.
---@param fence string?
---@param l string
---@return string?
function M.fence_after(fence, l)
  local f = l:match('^%s*([`~][`~][`~])')
  if not f then
    return fence
  elseif not fence then
    return f:sub(1, 1)
  elseif f:sub(1, 1) == fence then
    return nil
  end
  return fence
end

--- Where the slice of `lines` that starts at `start` (outside a code
--- block) ends: the first blank line outside a code block once it holds
--- about SLICE_BYTES (a block is never cut in two); nil when none does.
local function slice_end(lines, start)
  local size, fence = 0, nil
  for i = start, #lines do
    local l = lines[i]
    size = size + #l + 1
    fence = M.fence_after(fence, l)
    if size >= SLICE_BYTES and l == '' and not fence then
      return i
    end
  end
end

--- Splits `lines` into runs of about SLICE_BYTES (see `slice_end`).
local function slices(lines)
  local out, start = {}, 1
  local stop = slice_end(lines, start)
  while stop do
    out[#out + 1] = { start, stop }
    start = stop + 1
    stop = slice_end(lines, start)
  end
  if start <= #lines then
    out[#out + 1] = { start, #lines }
  end
  return out
end

-- Slices waiting to be frozen, in order: { buf, mark (its first row), lines },
-- or a whole entry to cut when its turn comes: { buf, mark, stop (its last row) }.
local queue = {}
local ticking = false
-- A drain freezes for at most this long (one budget per turn of the event
-- loop); the rest is done on the next turns, this long at a time.
local DRAIN_BUDGET_NS, TICK_BUDGET_NS = 4e6, 8e6
local budget_loop_time, budget_until = -1, 0
-- Lazy items in the queue (entries read when their turn comes), and each
-- by buffer and the id of its first row's mark.
local lazy_n = 0
local lazy_by_mark = {}

--- Removes lazy item `item` from the queue and its marks from the buffer.
local function forget_lazy(item)
  local api = vim.api
  if api.nvim_buf_is_valid(item.buf) then
    api.nvim_buf_del_extmark(item.buf, track_ns, item.mark)
    api.nvim_buf_del_extmark(item.buf, track_ns, item.stop)
  end
  local marks = lazy_by_mark[item.buf]
  if marks then
    marks[item.mark] = nil
  end
  lazy_n = lazy_n - 1
end

--- Queues a lazy item for rows `first`..`last` of `buf` at position `at`.
local function add_lazy(buf, first, last, at)
  local api = vim.api
  local item = {
    buf = buf,
    mark = api.nvim_buf_set_extmark(buf, track_ns, first, 0, { right_gravity = false }),
    stop = api.nvim_buf_set_extmark(buf, track_ns, last, 0, {}),
  }
  table.insert(queue, at, item)
  lazy_by_mark[buf] = lazy_by_mark[buf] or {}
  lazy_by_mark[buf][item.mark] = item
  lazy_n = lazy_n + 1
end

--- Frozen again: the lazy items that start in rows `first`..`last` are
--- dropped (the marks in those rows say which, in one call).
local function drop_lazy(buf, first, last)
  local marks = lazy_by_mark[buf]
  if lazy_n == 0 or not marks or next(marks) == nil then
    return
  end
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, track_ns, { first, 0 }, { last, -1 }, {})) do
    local item = marks[m[1]]
    if item then
      for i = #queue, 1, -1 do
        if queue[i] == item then
          table.remove(queue, i)
          break
        end
      end
      forget_lazy(item)
    end
  end
end

-- Lines read at a time by a lazy item (see `lazy_slice`).
local LAZY_LINES = 1024

--- Freezes the next slice of a lazy item (`freeze` with `later`): the rows
--- from its mark to its stop mark, read now, cut as `slices` cuts. True when
--- the item is done. A slice ends on a blank line outside a code block, so
--- each starts outside one.
local function lazy_slice(item)
  local api = vim.api
  local buf = item.buf
  local function done()
    return true
  end
  if not api.nvim_buf_is_valid(buf) then
    return done()
  end
  local row = api.nvim_buf_get_extmark_by_id(buf, track_ns, item.mark, {})[1]
  local stop = api.nvim_buf_get_extmark_by_id(buf, track_ns, item.stop, {})[1]
  if not row or not stop or stop < row then
    return done()
  end
  local count = LAZY_LINES
  while true do
    local last = math.min(stop, row + count - 1)
    local lines = api.nvim_buf_get_lines(buf, row, last + 1, false)
    local i = slice_end(lines, 1)
    if i and row + i - 1 < stop then
      freeze_lines(buf, row, vim.list_slice(lines, 1, i))
      api.nvim_buf_set_extmark(buf, track_ns, row + i, 0, { id = item.mark, right_gravity = false })
      return false
    end
    if last >= stop then
      freeze_lines(buf, row, lines)
      return done()
    end
    -- No cut yet (a long code block): read further.
    count = count * 2
  end
end

--- Freezes queued slices until `deadline` (hrtime), or until `yield()`
--- says to stop; true when none is left.
---@param yield? fun(): boolean
local function run_queue(deadline, yield)
  local api = vim.api
  while queue[1] do
    if vim.uv.hrtime() > deadline or (yield and yield()) then
      return false
    end
    local item = queue[1]
    if item.stop then
      -- A whole entry frozen later: one slice at a time, read when its turn comes.
      if lazy_slice(item) then
        table.remove(queue, 1)
        forget_lazy(item)
        M.pending = #queue
      end
      goto continue
    end
    table.remove(queue, 1)
    M.pending = #queue
    if api.nvim_buf_is_valid(item.buf) then
      local row = api.nvim_buf_get_extmark_by_id(item.buf, track_ns, item.mark, {})[1]
      api.nvim_buf_del_extmark(item.buf, track_ns, item.mark)
      -- Only when the slice's text is still there (else a re-render froze it again).
      if row and vim.deep_equal(api.nvim_buf_get_lines(item.buf, row, row + #item.lines, false), item.lines) then
        freeze_lines(item.buf, row, item.lines)
      end
    end
    ::continue::
  end
  return true
end

-- While the agent's events wait for the next drain (it outruns the drains,
-- or a burst of tool cards is still coming), the freezing left for later
-- yields to them, at most this long in a row: the text first, the
-- highlighting after.
local YIELD_MAX_MS = 1000
local yielding_since

--- Whether the agent's events wait for the next drain (the last one left
--- some, or more came since).
function M.events_wait()
  local core = package.loaded['acp.core']
  if not (core and core.is_loaded()) then
    return false
  end
  local ok, waiting = pcall(core.events_wait)
  return ok and waiting == true
end

local function tick()
  if M.events_wait() then
    yielding_since = yielding_since or vim.uv.now()
    if vim.uv.now() - yielding_since < YIELD_MAX_MS then
      vim.defer_fn(tick, 4)
      return
    end
  end
  -- Events that come while it freezes stop it (the next drain goes first),
  -- unless it has waited for them a whole YIELD_MAX_MS.
  local yield = not yielding_since and M.events_wait or nil
  yielding_since = nil
  if run_queue(vim.uv.hrtime() + TICK_BUDGET_NS, yield) then
    ticking = false
  else
    -- A timer, not vim.schedule: the screen can be flushed in between.
    vim.defer_fn(tick, 1)
  end
end

--- Highlights rows `first`..`last` (0-based, inclusive) of `buf` once, as
--- extmarks that stay: the text is parsed on its own by a string parser,
--- with its code block languages and inline markup, and the captures of
--- the highlights queries are placed as the highlighter would (group,
--- priority, conceal). Replaces the frozen highlights of those rows. The
--- text is cut in slices (each one's place kept by an extmark): they are
--- done now within a small budget per turn of the event loop, the rest on
--- the next turns. `later`: true puts them all after what is queued, for
--- the next turns (a burst's entries: `freeze_later`).
---@param later? boolean
function M.freeze(buf, first, last, later)
  local api = vim.api
  api.nvim_buf_clear_namespace(buf, M.ns, first, last + 1)
  if last < first then
    return
  end
  drop_lazy(buf, first, last)
  if later == true and last - first + 1 > LAZY_LINES then
    -- A long entry: nothing read now (its lines and cuts cost a drain 10-20
    -- ms per 2 MB); its slices are read and frozen on the next turns.
    add_lazy(buf, first, last, #queue + 1)
    M.pending = #queue
    if not ticking then
      ticking = true
      vim.defer_fn(tick, 1)
    end
    return
  end
  local lines = api.nvim_buf_get_lines(buf, first, last + 1, false)
  -- Rows frozen now go before what earlier drains left for later (entries
  -- out of sight): the budget goes to what the screen shows.
  local at = later == true and #queue or 0
  for _, part in ipairs(slices(lines)) do
    at = at + 1
    table.insert(queue, at, {
      buf = buf,
      mark = api.nvim_buf_set_extmark(buf, track_ns, first + part[1] - 1, 0, { right_gravity = false }),
      lines = part[1] == 1 and part[2] == #lines and lines or vim.list_slice(lines, part[1], part[2]),
    })
  end
  M.pending = #queue
  if later == false or later == nil then
    if vim.uv.now() ~= budget_loop_time then
      budget_loop_time, budget_until = vim.uv.now(), vim.uv.hrtime() + DRAIN_BUDGET_NS
    end
    run_queue(budget_until)
  end
  if queue[1] and not ticking then
    ticking = true
    vim.defer_fn(tick, 1)
  end
end

--- A burst's entries, frozen on the next turns with nothing read now (each
--- run is read and cut when its turn comes): `runs` ({ first, last, soon })
--- in the order to freeze them. A `soon` run goes before what earlier
--- drains left for later (what the screen shows), the others after it.
---@param runs { [1]: integer, [2]: integer, soon: boolean }[]
function M.freeze_later(buf, runs)
  local api = vim.api
  local front = 0
  for _, r in ipairs(runs) do
    local first, last = r[1], r[2]
    api.nvim_buf_clear_namespace(buf, M.ns, first, last + 1)
    if last >= first then
      drop_lazy(buf, first, last)
      if r.soon then
        front = front + 1
        add_lazy(buf, first, last, front)
      else
        add_lazy(buf, first, last, #queue + 1)
      end
    end
  end
  M.pending = #queue
  if queue[1] and not ticking then
    ticking = true
    vim.defer_fn(tick, 1)
  end
end

-- Parsing of the live entry before the redraw (see `parse_live`): skipped
-- for a while after a parse took longer than this.
local PARSE_SYNC_MS = 8
local slow_until = {}

--- Parses the live entry of `buf` (from `row`, where `live` started the
--- parser's region) within the drain that changed it, so that the redraw
--- finds the tree up to date. Left to the redraw, the highlighter parses the
--- window's rows with a 3 ms budget: past it, it draws the window unparsed,
--- finishes the parse on later turns of the event loop and then redraws
--- the whole window. And a range that starts at the window's first row
--- moves with every scroll, which re-parses every inline region shown
--- (their list shifts); from the entry's first row it only grows at the
--- end. A parse that takes longer than PARSE_SYNC_MS (a very long live
--- entry) is left to the highlighter for the next second.
function M.parse_live(buf, row)
  if not M.per_entry() or not M.active(buf) or (slow_until[buf] and vim.uv.now() < slow_until[buf]) then
    return
  end
  local ok, parser = pcall(vim.treesitter.get_parser, buf, nil, { error = false })
  if not ok or not parser then
    return
  end
  local t = vim.uv.hrtime()
  pcall(parser.parse, parser, { row, vim.api.nvim_buf_line_count(buf) })
  if (vim.uv.hrtime() - t) / 1e6 > PARSE_SYNC_MS then
    slow_until[buf] = vim.uv.now() + 1000
  end
end

-- An end past any transcript: the live region runs to the end of the buffer
-- as it grows (Tree-sitter moves a range's end with the edits inside it).
local END_ROW, END_BYTE = 2 ^ 30, 2 ^ 31

--- Limits the buffer's parser to the live entry, from `row` to the end:
--- each edit then re-parses that entry only, not the transcript above it.
function M.live(buf, row)
  local ok, parser = pcall(vim.treesitter.get_parser, buf, nil, { error = false })
  if not ok or not parser then
    return
  end
  local byte = vim.api.nvim_buf_get_offset(buf, row)
  parser:set_included_regions({ { { row, 0, byte, END_ROW, 0, END_BYTE } } })
end

return M
