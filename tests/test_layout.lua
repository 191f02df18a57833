-- The chat's windows follow the screen: `chat.width` is a share of the screen kept between
-- `chat.min_width` and `chat.max_width`, the code window keeps `chat.min_code_width`, and the
-- size is worked out again on VimResized and on reopen. `:AcpChat` focuses a visible chat from a
-- code window and hides it from inside; `:AcpToggle` toggles. Closing another window
-- (`:AcpTrace`) leaves the chat's windows their sizes.
local H = require('tests.helpers.acp')
local Child = require('tests.helpers.child')
local Screen = require('tests.helpers.screen')

--- Widths of the code window, the chat and its input, and the input's height.
local function dims(child)
  return child:lua([[
    local v = require('acp').current()
    local code
    for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if w ~= v.win and w ~= v.input_win and vim.api.nvim_win_get_config(w).relative == '' then code = w end
    end
    local vis = v:is_visible()
    return {
      columns = vim.o.columns,
      code = code and vim.api.nvim_win_get_width(code) or -1,
      chat = vis and vim.api.nvim_win_get_width(v.win) or -1,
      input = vis and vim.api.nvim_win_get_height(v.input_win) or -1,
    }
  ]])
end

--- A child whose UI is `w` columns wide (a Screen attached), the chat open and idle.
local function start(w, h, config)
  local child = H.start({ config = config })
  local screen = Screen.attach(child, w, h)
  H.open(child)
  return child, screen
end

local function resize(screen, w, h)
  screen:request('nvim_ui_try_resize', w, h)
  screen:redraw(true)
end

return {
  { 'the chat at 70 columns after the screen shrank from 160: the code window keeps its minimum', function()
    local child = H.start()
    child:lua([[
      vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'local M = {}', '', 'function M.greet(name)', "  print('hello, ' .. name)", 'end', '', 'return M' })
      vim.bo.filetype = 'lua'
      vim.bo.modified = false
    ]])
    local screen = Screen.attach(child, 160, 30)
    H.open(child)
    H.turn(child, 'stream')
    T.eq(dims(child).chat, 64, '40% of 160 columns')
    resize(screen, 70, 30)
    local d = dims(child)
    -- 70 columns: the chat gives way so that the code window keeps chat.min_code_width (30).
    T.eq({ d.columns, d.code, d.chat }, { 70, 30, 39 })
    child:cmd('stopinsert')
    screen:redraw(true)
    Screen.expect(screen:shot(), 'chat-after-resize-70')
  end },

  { 'VimResized re-applies the width; reopening after a resize gives the new width', function()
    local child, screen = start(160, 30)
    -- A fraction is clamped: 40% of 300 is 120, the maximum is 100.
    resize(screen, 300, 30)
    T.eq(dims(child).chat, 100, 'chat.max_width')
    resize(screen, 160, 30)
    T.eq(dims(child).chat, 64, 'back to 40%')
    -- The user's own width is kept while the screen keeps its size...
    child:lua([[vim.api.nvim_win_set_width(require('acp').current().win, 80)]])
    child:cmd('AcpToggle')
    T.eq(dims(child).chat, -1, 'hidden')
    child:cmd('AcpToggle')
    T.eq(dims(child).chat, 80, 'the width the user gave, same screen')
    -- ...and gives way when the screen is resized, visible or hidden.
    child:cmd('AcpToggle')
    resize(screen, 100, 30)
    child:cmd('AcpToggle')
    local d = dims(child)
    T.eq({ d.chat, d.code }, { 50, 49 }, 'reopened at 100 columns: chat.min_width 50')
    resize(screen, 120, 30)
    T.eq(dims(child).chat, 50, '40% of 120 is 48: chat.min_width 50')
    resize(screen, 45, 30)
    d = dims(child)
    T.eq({ d.chat, d.code }, { 20, 24 }, 'too narrow for both minimums: the chat keeps 20 columns')
    -- Columns are taken as given (no clamp but the code window's minimum).
    child:lua([[require('acp.config').options.chat.width = 110]])
    resize(screen, 160, 30)
    T.eq(dims(child).chat, 110)
  end },

  { 'a bottom chat takes chat.height of the screen and follows it', function()
    local child, screen = start(100, 40, { chat = { position = 'bottom' } })
    local function total()
      return child:lua([[
        local v = require('acp').current()
        return vim.api.nvim_win_get_height(v.win) + 1 + vim.api.nvim_win_get_height(v.input_win)
      ]])
    end
    -- 40 lines, one for the command line: 40% of 39.
    T.eq(total(), 15)
    resize(screen, 100, 20)
    -- 19 rows, the code window keeps 8 and its status line: 10 (40% would be 7).
    T.eq(total(), 10)
  end },

  { ':AcpChat focuses a visible chat from a code window, hides it from inside; :AcpToggle toggles', function()
    local child = start(120, 30)
    child:cmd('stopinsert')
    child:cmd('wincmd t')
    local function where()
      return child:lua([[
        local v = require('acp').current()
        local w = vim.api.nvim_get_current_win()
        return { visible = v:is_visible(), at = w == v.input_win and 'input' or w == v.win and 'transcript' or 'code' }
      ]])
    end
    T.eq(where(), { visible = true, at = 'code' })
    child:cmd('AcpChat')
    T.eq(where(), { visible = true, at = 'input' }, 'from the code window: focused, not hidden')
    child:cmd('AcpChat')
    T.eq(where(), { visible = false, at = 'code' }, 'from inside the chat: hidden')
    child:cmd('AcpChat')
    T.eq(where(), { visible = true, at = 'input' }, 'shown and focused')
    -- From the transcript too.
    child:lua([[vim.api.nvim_set_current_win(require('acp').current().win)]])
    child:cmd('AcpChat')
    T.eq(where().visible, false)
    -- :AcpToggle hides a visible chat wherever the cursor is.
    child:cmd('AcpToggle')
    T.eq(where(), { visible = true, at = 'input' })
    child:cmd('wincmd t')
    child:cmd('AcpToggle')
    T.eq(where(), { visible = false, at = 'code' }, ':AcpToggle from a code window hides')
    child:lua([[vim.api.nvim_feedkeys(vim.keycode('<Plug>(AcpToggle)'), 'x', false)]])
    T.eq(where().visible, true, '<Plug>(AcpToggle)')
  end },

  { 'closing :AcpTrace gives the input its height back', function()
    local child = start(120, 40)
    H.turn(child, 'stream')
    local before = dims(child)
    T.eq(before.input, 6, 'chat.input_height')
    child:cmd('stopinsert')
    child:cmd('AcpTrace')
    T.eq(child:lua([[return vim.bo.filetype]]), 'acptrace')
    child:feed('q')
    child:wait_for([[return vim.bo.filetype ~= 'acptrace']])
    -- The chat's windows are sized after the close (scheduled).
    child:lua('vim.wait(0)')
    local after = dims(child)
    T.eq({ after.input, after.chat, after.code }, { before.input, before.chat, before.code })
  end },

  { "the demo's hint fits the chat at 80 columns and after a resize", function()
    local child = Child.new({ init = vim.env.ACP_ROOT .. '/tests/demo_init.lua' })
    local screen = Screen.attach(child, 80, 24)
    child:wait_for([[local v = require('acp').current(); return v and v.state == 'idle']], 5000)
    local function hint()
      return child:lua([[
        local v = require('acp').current()
        local ns = vim.api.nvim_get_namespaces().acp_demo_hint
        local out = { width = vim.api.nvim_win_get_width(v.win), lines = {} }
        for _, m in ipairs(vim.api.nvim_buf_get_extmarks(v.buf, ns, 0, -1, { details = true })) do
          for _, vl in ipairs(m[4].virt_lines) do out.lines[#out.lines + 1] = vl[1][1] end
        end
        return out
      ]])
    end
    local function check(h)
      T.truthy(#h.lines > 0, 'a hint')
      local shown = table.concat(screen:shot().text, '\n')
      for _, l in ipairs(h.lines) do
        T.truthy(vim.fn.strdisplaywidth(l) < h.width, ('%q fits in %d columns'):format(l, h.width))
        T.truthy(shown:find(l, 1, true), ('%q is on the screen'):format(l))
      end
      T.match(table.concat(h.lines, ' '), ':help acp has the rest%.$', 'nothing of it is lost')
    end
    local h = hint()
    check(h)
    T.eq(h.width, 49)
    resize(screen, 60, 24)
    h = hint()
    check(h)
    T.eq(h.width, 29, 'the code window keeps 30 columns')
  end },

  { 'setup() checks the sizes: a clear error naming the option', function()
    local child = Child.new()
    local errs = child:lua([[
      local out = {}
      for _, chat in ipairs({ { width = 0 }, { width = 60.5 }, { min_width = 80, max_width = 60 }, { min_code_width = -1 }, { height = 'half' } }) do
        local ok, err = pcall(require('acp.config').setup, { chat = chat })
        out[#out + 1] = ok and 'accepted' or err
      end
      return out
    ]])
    T.eq(errs, {
      'acp.nvim: setup: `chat.width` must be a fraction of the screen (more than 0, up to 1) or a whole number of cells',
      'acp.nvim: setup: `chat.width` must be a fraction of the screen (more than 0, up to 1) or a whole number of cells',
      'acp.nvim: setup: `chat.min_width` (80) is more than `chat.max_width` (60)',
      'acp.nvim: setup: `chat.min_code_width` must be a whole number of cells, 1 or more',
      'acp.nvim: setup: `chat.height` must be a number, got string',
    })
  end },
}
