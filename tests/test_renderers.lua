-- Markdown renderers as users run them: render-markdown.nvim and
-- markview.nvim, through stand-ins that render (record) when those plugins
-- would (tests/fixtures/plugins/*: each says which documented behaviour it
-- follows). The transcript must render again as an answer streams in while
-- the cursor is in the input, throttled (`:h acp-render`).
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local FIXTURES = vim.env.ACP_ROOT .. '/tests/fixtures/plugins/'

-- 80 chunks of 4 bytes, 10 ms apart, then the last line.
local ANSWER = '# Plan\n\n' .. string.rep('word ', 62) .. '\n\n**THE END**'
local TURNS = { { match = 'go', steps = { { message = ANSWER, chunk_size = 4, delay_ms = 10 } } } }
local CHUNKS = math.ceil(#ANSWER / 4)

--- A chat with `plugin` set up by `setup` (run before the chat opens); the
--- cursor in the input, Insert mode; one streamed answer. Returns the
--- child and the transcript buffer.
local function streamed(plugin, setup, config)
  local child = H.start({ turns = TURNS, config = config or { chat = { markdown = 'markdown' } } })
  child:lua([[vim.opt.rtp:append(...)]], { FIXTURES .. plugin })
  child:lua(setup)
  H.open(child)
  local bufs = child:lua([[local v = require('acp').current(); return { v.buf, v.input }]])
  T.eq(child:lua('return { vim.api.nvim_get_current_buf(), vim.api.nvim_get_mode().mode }'), { bufs[2], 'i' })
  local t0 = child:lua('return vim.uv.now()')
  H.turn(child, 'go')
  T.eq(H.transcript(child)[#H.transcript(child)], '**THE END**')
  -- Still in the input, in Insert mode.
  T.eq(child:lua('return { vim.api.nvim_get_current_buf(), vim.api.nvim_get_mode().mode }'), { bufs[2], 'i' })
  return child, bufs[1], bufs[2], t0
end

--- The renders of `buf` recorded by the stand-in module `mod`.
local function renders(child, mod, buf)
  return child:lua([[local mod, buf = ...
    return vim.tbl_filter(function(c) return c.buf == buf end, require(mod).calls)]], { mod, buf })
end

return {
  { 'render-markdown: the transcript renders again as the answer streams in, cursor in the input, throttled', function()
    local child, buf, input, t0 = streamed('render-markdown', [[
      require('render-markdown').setup({ file_types = { 'markdown', 'acpchat' } })
    ]])
    -- The final text gets rendered while the cursor stays in the input.
    child:wait_for([[local buf = ...
      for _, c in ipairs(require('render-markdown').calls) do
        if c.buf == buf and c.last == '**THE END**' then return true end
      end]], 3000, { buf })
    local calls = renders(child, 'render-markdown', buf)
    -- Asked by the chat during the turn.
    local streaming = vim.tbl_filter(function(c)
      return c.event == 'AcpUpdate' and c.time >= t0
    end, calls)
    for _, c in ipairs(streaming) do
      T.eq({ c.cur, c.mode }, { input, 'i' })
    end
    -- Re-rendered while it streamed (not only at the end), and throttled:
    -- far fewer renders than chunks, at least the interval apart.
    T.truthy(#vim.tbl_filter(function(c)
      return c.last ~= '**THE END**'
    end, streaming) >= 1, 'a render before the answer was complete')
    T.truthy(#streaming < CHUNKS / 2, ('%d renders for %d chunks'):format(#streaming, CHUNKS))
    local interval = child:lua([[return require('acp.chat.renderers').interval]])
    for i = 2, #streaming do
      T.truthy(streaming[i].time - streaming[i - 1].time >= interval, 'renders closer than the interval')
    end
  end },

  { 'markview: the chat (a nofile buffer) is attached and renders again as the answer streams in', function()
    local child, buf, input = streamed('markview', [[
      require('markview').setup({ preview = { filetypes = { 'markdown', 'acpchat' } } })
    ]])
    child:wait_for([[local buf = ...
      for _, c in ipairs(require('markview').calls) do
        if c.buf == buf and c.last == '**THE END**' then return true end
      end]], 3000, { buf })
    T.eq(child:lua([[return require('markview').attached[...] ]], { buf }), true)
    local calls = renders(child, 'markview', buf)
    T.eq({ calls[#calls].cur, calls[#calls].mode }, { input, 'i' })
    T.truthy(#calls < CHUNKS / 2, ('%d renders for %d chunks'):format(#calls, CHUNKS))
  end },

  { 'renderers: nothing is asked with the default chat.markdown (acp_markdown)', function()
    local child, buf = streamed('render-markdown', [[
      require('render-markdown').setup({ file_types = { 'markdown', 'acpchat' } })
    ]], {})
    vim.wait(300)
    T.eq(#vim.tbl_filter(function(c)
      return c.event == 'AcpUpdate'
    end, renders(child, 'render-markdown', buf)), 0)
  end },
}
