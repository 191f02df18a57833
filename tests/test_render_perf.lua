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
    -- 5 MB is past the size up to which highlighting resumes.
    T.eq(r.active_now, false)
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
}
