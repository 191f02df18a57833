--- The chat's windows as a pair that survives the user:
--- * closing either window (`:q`, `<C-w>c`) closes the other one too, and
---   the next `:AcpChat` brings both back at the size the user last gave;
--- * `:AcpChat` toggles (acp.chat.commands); `:AcpChat {other agent}`
---   opens another chat and keeps the first one reachable (`:AcpChats`
---   lists and switches);
--- * `chat.position = 'tab'`: the chat's own tab is registered too, so every
---   command works there.
local api = vim.api
local chats = require('acp.chat')

local M = {}

local group = api.nvim_create_augroup('acp_layout', { clear = true })

local function valid(win)
  return win ~= nil and api.nvim_win_is_valid(win)
end

--- Keeps the user's sizes of the pair (read before a window goes), with
--- the screen size they were taken at: they are used again only on a
--- screen of that size.
function M.remember(view)
  local size = view.size
  if valid(view.win) then
    size.width = api.nvim_win_get_width(view.win)
    -- A 'bottom' chat's height is its transcript, the line between and its
    -- input: what its window is split from when it opens again.
    size.height = api.nvim_win_get_height(view.win)
      + (valid(view.input_win) and (api.nvim_win_get_height(view.input_win) + 1) or 0)
    size.screen = M.screen()
  end
  if valid(view.input_win) then
    size.input = api.nvim_win_get_height(view.input_win)
  end
end

-- Sizes that follow the screen ----------------------------------------------

--- Narrowest chat, whatever the screen.
M.MIN_CHAT_WIDTH = 20

--- The screen's size as a key (sizes remembered on another screen size
--- are not used again).
function M.screen()
  return vim.o.columns .. 'x' .. vim.o.lines
end

--- Width of a side chat on a screen `cols` wide: `chat.width` (a fraction
--- kept between `chat.min_width` and `chat.max_width`); the other windows
--- keep `chat.min_code_width` and a separator, the chat at least
--- MIN_CHAT_WIDTH.
function M.chat_width(cols)
  local o = require('acp.config').options.chat
  local w = o.width
  if w <= 1 then
    w = math.max(o.min_width, math.min(o.max_width, math.floor(cols * w)))
  end
  w = math.min(w, cols - o.min_code_width - 1)
  return math.max(w, M.MIN_CHAT_WIDTH)
end

--- Height of a 'bottom' chat (transcript, line between, input) on this
--- screen: `chat.height`; the windows above keep `chat.min_code_height`
--- and their status line.
function M.chat_height()
  local o = require('acp.config').options.chat
  local tabline = (vim.o.showtabline == 2 or (vim.o.showtabline == 1 and #api.nvim_list_tabpages() > 1)) and 1 or 0
  local rows = vim.o.lines - vim.o.cmdheight - tabline
  local h = o.height <= 1 and math.floor(rows * o.height) or o.height
  h = math.min(h, rows - o.min_code_height - 1)
  return math.max(h, o.input_height + 4)
end

--- Gives a new chat window (`win`, before its input is split from it) the
--- size the user last gave it on this screen size, else the one the
--- screen asks for.
function M.size_new(view, win)
  local pos = require('acp.config').options.chat.position
  local size = view.size
  local same = size.screen == M.screen()
  if pos == 'bottom' then
    api.nvim_win_set_height(win, same and size.height or M.chat_height())
  else
    api.nvim_win_set_width(win, same and size.width or M.chat_width(vim.o.columns))
  end
  size.screen = M.screen()
end

--- Sizes the visible windows of `view` for the screen (the user's own
--- width gives way: the screen was resized).
function M.fit(view)
  local pos = require('acp.config').options.chat.position
  if pos == 'tab' or not valid(view.win) then
    return
  end
  if pos == 'bottom' then
    local input = valid(view.input_win) and (api.nvim_win_get_height(view.input_win) + 1) or 0
    api.nvim_win_set_height(view.win, math.max(1, M.chat_height() - input))
  else
    api.nvim_win_set_width(view.win, M.chat_width(vim.o.columns))
  end
  view.size.screen = M.screen()
end

--- The chats with both windows in tab `tab`.
local function shown_in(tab)
  local out = {}
  for _, view in pairs(chats.by_thread) do
    if valid(view.win) and valid(view.input_win) and api.nvim_win_get_tabpage(view.win) == tab then
      out[#out + 1] = view
    end
  end
  return out
end

-- The screen was resized: this tab's chats now, the other tabs' chats when
-- their tab is entered.
api.nvim_create_autocmd({ 'VimResized', 'TabEnter' }, {
  group = group,
  callback = function(ev)
    for _, view in ipairs(shown_in(api.nvim_get_current_tabpage())) do
      if ev.event == 'VimResized' or view.size.screen ~= M.screen() then
        M.fit(view)
      end
    end
  end,
})

-- Another window of the tab closed (`:AcpTrace`'s `q`, a quickfix list, a
-- split): Neovim hands its rows and columns to its neighbours, often the
-- chat's input. The chat's windows keep the sizes they had.
api.nvim_create_autocmd('WinClosed', {
  group = group,
  callback = function(ev)
    local closed = tonumber(ev.match)
    if not valid(closed) or api.nvim_win_get_config(closed).relative ~= '' then
      return
    end
    local tab = api.nvim_win_get_tabpage(closed)
    local keep = {}
    for _, view in ipairs(shown_in(tab)) do
      if closed ~= view.win and closed ~= view.input_win then
        keep[#keep + 1] = { view, api.nvim_win_get_width(view.win), api.nvim_win_get_height(view.win), api.nvim_win_get_height(view.input_win) }
      end
    end
    if #keep == 0 then
      return
    end
    vim.schedule(function()
      if api.nvim_get_current_tabpage() ~= tab then
        return
      end
      local bottom = require('acp.config').options.chat.position == 'bottom'
      for _, k in ipairs(keep) do
        local view, width, height, input = k[1], k[2], k[3], k[4]
        if valid(view.win) and valid(view.input_win) then
          if api.nvim_win_get_height(view.input_win) ~= input then
            api.nvim_win_set_height(view.input_win, input)
          end
          if bottom and api.nvim_win_get_height(view.win) ~= height then
            api.nvim_win_set_height(view.win, height)
          elseif not bottom and api.nvim_win_get_width(view.win) ~= width then
            api.nvim_win_set_width(view.win, width)
          end
        end
      end
    end)
  end,
})

--- Closes `win`; the last window of the last tab is emptied instead
--- (Neovim cannot close it).
local function close_or_empty(win)
  if not valid(win) then
    return
  end
  local tab = api.nvim_win_get_tabpage(win)
  if #api.nvim_tabpage_list_wins(tab) > 1 or #api.nvim_list_tabpages() > 1 then
    pcall(api.nvim_win_close, win, true)
    return
  end
  vim.wo[win].winfixbuf = false
  api.nvim_win_call(win, function()
    vim.cmd('enew')
  end)
end

--- Called by `ChatView:show` for each new chat window: closing it closes
--- its partner.
function M.watch(view, win)
  api.nvim_create_autocmd('WinClosed', {
    group = group,
    pattern = tostring(win),
    once = true,
    callback = function()
      if view.win ~= win and view.input_win ~= win then
        return
      end
      M.remember(view)
      local other = view.win == win and view.input_win or view.win
      view.win, view.input_win = nil, nil
      -- Not from inside WinClosed: Neovim refuses to close windows there.
      vim.schedule(function()
        close_or_empty(other)
        require('acp.chat.status').update(view)
      end)
    end,
  })
end

--- `winfixbuf` where Neovim has it: no other buffer lands in a chat window.
function M.fix_buffer(win)
  if vim.fn.exists('+winfixbuf') == 1 then
    vim.wo[win].winfixbuf = true
  end
end

--- Gives the windows `win` and `input_win` of a replaced chat to `view`
--- (a new session in the same place): they show its buffers, keep
--- 'winfixbuf' and close as a pair.
function M.adopt(view, win, input_win)
  for _, pair in ipairs({ { win, view.buf, 'win' }, { input_win, view.input, 'input_win' } }) do
    local w, buf, field = pair[1], pair[2], pair[3]
    if valid(w) then
      if vim.fn.exists('+winfixbuf') == 1 then
        vim.wo[w].winfixbuf = false
      end
      api.nvim_win_set_buf(w, buf)
      M.fix_buffer(w)
      view[field] = w
      M.watch(view, w)
    end
  end
end

--- Every chat of this Neovim, oldest first.
function M.list()
  local out = {}
  for _, view in pairs(chats.by_thread) do
    out[#out + 1] = view
  end
  table.sort(out, function(a, b)
    return a.thread < b.thread
  end)
  return out
end

--- A chat in the `:AcpChats` list: its agent and number (as its tab label
--- names it; `:AcpChats {n}` takes the number), its state, its title. No
--- leading number: the list numbers its rows itself.
local function label(view, current)
  local esc = require('acp.util.escape')
  local title = view.info.title and (' · ' .. esc.line(view.info.title, 60)) or ''
  local state = require('acp.chat.header').state_word(view)
  return ('%s %d · %s%s%s'):format(esc.line(view.agent, 40), view.thread, state, title, view == current and ' (this tab)' or '')
end

--- Makes `view` the current tab's chat (the tab's previous chat is hidden
--- and stays reachable).
function M.switch(view)
  local tab = api.nvim_get_current_tabpage()
  local cur = chats.by_tab[tab]
  if cur == view then
    view:show(true)
    return view
  end
  if cur then
    cur:hide()
  end
  view:hide()
  chats.by_tab[tab] = view
  view.tab = tab
  view:show(true)
  return view
end

--- `:AcpChats [n]`: lists the chats; picks one to show in this tab.
function M.pick(id)
  local list = M.list()
  local current = chats.current()
  if id and id ~= '' then
    for _, view in ipairs(list) do
      if tostring(view.thread) == id then
        return M.switch(view)
      end
    end
    require('acp.util.escape').notify(('acp.nvim: no chat %s (:AcpChats lists them)'):format(id), vim.log.levels.WARN)
    return
  end
  if #list == 0 then
    require('acp.util.escape').notify('acp.nvim: no chat yet (:AcpChat opens one)')
    return
  end
  require('acp.util.escape').select(list, {
    prompt = 'Chats',
    format_item = function(view)
      return label(view, current)
    end,
  }, function(view)
    if view then
      M.switch(view)
    end
  end)
end

--- Completion of `:AcpChats`: the chats' numbers.
function M.complete(lead)
  local out = {}
  for _, view in ipairs(M.list()) do
    local id = tostring(view.thread)
    if vim.startswith(id, lead) then
      out[#out + 1] = id
    end
  end
  return out
end

-- Tab labels ---------------------------------------------------------------

--- A chat's name in the tab labels: its agent and number (two chats of
--- one agent differ), and the start of its title: the user's name for it
--- (`r` in `:AcpThreads`), else the agent's title when it gave one.
function M.chat_label(view)
  local label = ('ACP %s %d'):format(view.agent, view.thread)
  local title = view.name or view.info.title
  if type(title) == 'string' and title ~= '' then
    local text = require('acp.util.text')
    local t = text.visible(title)
    if vim.api.nvim_strwidth(t) > 24 then
      t = text.take(t, 23) .. '…'
    end
    label = label .. ': ' .. t
  end
  return label
end

--- What a tab shows of an `acp://` buffer (Neovim's own labels shorten
--- its name to `a//i/1`), and the chat it belongs to.
local function acp_label(name)
  local kind, rest = name:match('^acp://(%a+)/(.*)$')
  if kind == 'chat' or kind == 'input' then
    local view = chats.by_thread[tonumber(rest:match('^%d+'))]
    if view then
      return M.chat_label(view), view
    end
    return 'ACP ' .. (rest:match('^%d+/(.*)$') or rest)
  elseif kind and rest == '' then
    return 'ACP ' .. kind
  elseif kind then
    return ('ACP %s %s'):format(kind, vim.fn.fnamemodify(rest:match('^%d+/(.*)$') or rest, ':t'))
  end
end

--- A tab's label: like Neovim's (window count, `+` when modified, the
--- current buffer's name), with chats, reviews and terminals named; and
--- the tab's chat mark: 'waiting' (something waits for the user) or
--- 'done' (a turn ended while the chat was out of sight), else nil.
---@return string label, 'waiting'|'done'|nil mark
function M.tab_label(tab)
  local win = api.nvim_tabpage_get_win(tab)
  local buf = api.nvim_win_get_buf(win)
  local name = api.nvim_buf_get_name(buf)
  local label, named = acp_label(name)
  if not label then
    label = name == '' and '[No Name]' or vim.fn.pathshorten(vim.fn.fnamemodify(name, ':~:.'))
  end
  local wins = #vim.tbl_filter(function(w)
    return api.nvim_win_get_config(w).relative == ''
  end, api.nvim_tabpage_list_wins(tab))
  local modified = false
  for _, w in ipairs(api.nvim_tabpage_list_wins(tab)) do
    local b = api.nvim_win_get_buf(w)
    modified = modified or (vim.bo[b].modified and vim.bo[b].buftype == '')
  end
  -- The tab's chat, shown beside another window or hidden: named too
  -- when it is in the tab or has a mark.
  local view = named or chats.by_tab[tab]
  local att = view and require('acp.chat.attention').of(view)
  local mark = att and (att.waiting and 'waiting' or att.done_unseen and 'done') or nil
  if view and view ~= named and (mark or (view.win and api.nvim_win_is_valid(view.win) and api.nvim_win_get_tabpage(view.win) == tab)) then
    label = label .. ' · ' .. M.chat_label(view)
  end
  local prefix = (wins > 1 and tostring(wins) or '') .. (modified and '+' or '')
  return (prefix ~= '' and (prefix .. ' ') or '') .. label, mark
end

api.nvim_set_hl(0, 'AcpTabWaiting', { link = 'WarningMsg', default = true })
api.nvim_set_hl(0, 'AcpTabDone', { link = 'DiagnosticOk', default = true })

--- The marks of the tab labels (`:h acp-tabline`).
M.marks = { waiting = { '●', 'AcpTabWaiting' }, done = { '✓', 'AcpTabDone' } }

--- The 'tabline' set by `chat.tabline` (only when the user has none).
function M.tabline()
  local parts = {}
  local current = api.nvim_get_current_tabpage()
  for i, tab in ipairs(api.nvim_list_tabpages()) do
    local hl = tab == current and '%#TabLineSel#' or '%#TabLine#'
    -- Buffer names and titles can be the agent's: one line, capped, `%`
    -- doubled (a `%{…}` would run when the tabline is drawn).
    local text, mark = M.tab_label(tab)
    local label = require('acp.util.escape').statusline(text, 60)
    local m = M.marks[mark]
    local shown = m and ('%%#%s#%s%s '):format(m[2], m[1], hl) or ''
    parts[#parts + 1] = ('%s%%%dT %s%s '):format(hl, i, shown, label)
  end
  return table.concat(parts) .. '%#TabLineFill#%T'
end

--- Installs the tab labels once, unless the user has a 'tabline'.
function M.install_tabline()
  if require('acp.config').options.chat.tabline and vim.o.tabline == '' then
    vim.o.tabline = "%!v:lua.require'acp.chat.layout'.tabline()"
  end
end

return M
