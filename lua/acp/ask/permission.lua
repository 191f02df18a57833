--- Permission requests (`session/request_permission`, and terminals the
--- core asks about first): a queue shown one at a time in a float near the
--- chat. An answer is always a deliberate act of the user:
--- * one chord typed in the chat's windows answers (permission_keys.lua),
---   once the request has been in view for `permissions.grace_ms`;
--- * the float never takes focus by itself; the user moves into it with
---   `permissions.focus_key` in the chat, `<Plug>(AcpPermission)`, <CR> on
---   the card or `:AcpPermission`, and goes back where they were (window,
---   cursor, Insert mode) when it closes;
--- * its keys do nothing for `permissions.grace_ms` after it gains focus or
---   shows another request; the footer says when it is armed;
--- * only the float's own keys and the chat's chords answer: no key in
---   another window does, the review tab (`d`) and the whole-request view
---   (`K`) included.
--- Where the float goes: permission_place.lua (never over its card or the
--- turn that led to it).
--- An option's answer is its kind, shown next to its label (with a warning
--- when the label reads as the opposite). Agent text is shown with every
--- character visible and cut to rows of the float's width, so a padded
--- command cannot push its end, the working directory, the environment or
--- the options out of view. Closing the float leaves the request pending.
--- An edit can be reviewed (`d`) before answering. A request that cannot
--- be drawn is shown in the chat with its raw options and answered through
--- `:AcpPermission`; the queue keeps moving. The chat is reached only
--- through the view each request came with (its window, its cards, the
--- rows its status area covers): the chat layer uses this module, not the
--- other way round.
local api = vim.api
local config = require('acp.config')
local text = require('acp.util.text')

local M = {}
require('acp.ask.permission_inline').p = M

--- Pending requests in arrival order: { view, request, payload } (the
--- payload is acp.PermissionAsk: what the core judged, accepts and grants).
M.queue = {}
--- The request the float shows, and whether its keys answer yet.
M.shown = nil
M.armed = false
--- The float sits at the bottom of its chat (nothing fits next to its card).
M.at_bottom = false
--- When (M.now()) the shown request came into view: the chords answer
--- `permissions.grace_ms` after it (nil: not in view).
M.visible_since = nil
--- Where the user was when they moved into the float: { win, insert, cursor }.
M.origin = nil
--- Buffers whose option keys answer `M.shown`: the float's only.
M.zone = {}

api.nvim_set_hl(0, 'AcpPermissionWaiting', { link = 'Comment', default = true })
api.nvim_set_hl(0, 'AcpPermissionArmed', { link = 'DiagnosticOk', default = true })
api.nvim_set_hl(0, 'AcpPermissionMismatch', { link = 'WarningMsg', default = true })
local ns = api.nvim_create_namespace('acp_permission')

local kind_keys = { allow_once = 'y', allow_always = 'a', reject_once = 'n', reject_always = 'N' }

--- The request's options: those the core accepts as an answer, in the
--- agent's order (acp.PermissionOption).
local function options_of(item)
  return item.payload.options
end

--- The tool call shown: the card the request points to merged with the
--- request's `toolCall` (its content, diffs, locations and raw input),
--- never trusted.
local function tool_of(item)
  return item.payload.tool_call
end

--- What allowing runs, for an execute request or a terminal the core has
--- not run yet: { command, cwd, env } (exactly what is shown is what may
--- then run unasked).
local function command_of(item)
  local g = item.payload.grant
  return g and g.type == 'command' and g or nil
end

--- The keys offered for each option: digits 1..n, plus y/a/n/N by kind.
function M.option_keys(options)
  local keys, used = {}, {}
  for i, opt in ipairs(options) do
    local k = { tostring(i) }
    local extra = kind_keys[opt.kind]
    if extra and not used[extra] then
      used[extra] = true
      k[#k + 1] = extra
    end
    keys[i] = k
  end
  return keys
end

--- The edits of a tool call, with every field made text.
local function diffs(tool)
  local out = {}
  for _, d in ipairs(require('acp.editor.review').diffs_of(tool)) do
    out[#out + 1] = { path = text.line(d.path, '?'), oldText = text.of(d.oldText), newText = text.of(d.newText) or '' }
  end
  return out
end

local function count_changes(d)
  local add, del = 0, 0
  for _, h in ipairs(vim.diff(d.oldText or '', d.newText, { result_type = 'indices' }) or {}) do
    del, add = del + h[2], add + h[4]
  end
  return add, del
end

local function push(out, prefix, value)
  for _, l in ipairs(text.lines(value)) do
    out[#out + 1] = prefix .. l
  end
end

local function agent_name(item)
  return require('acp.ask.subagent').asker(item, text.line(item.view and item.view.agent, 'the agent'))
end

--- How each option kind reads in the float.
local kind_names = { allow_once = 'allow once', allow_always = 'allow always', reject_once = 'reject once', reject_always = 'reject always' }

--- Words that make a label read as an allow or as a reject: the first of
--- them in the label decides ("Yes, and don't ask again" reads as allow,
--- "Don't allow" as reject). Kept small on purpose; see |acp-permission|.
M.allow_words = { 'allow', 'approve', 'accept', 'yes', 'ok', 'okay', 'run', 'proceed', 'continue', 'grant', 'permit' }
M.reject_words = { 'reject', 'deny', 'no', 'not', "don't", 'dont', 'never', 'cancel', 'decline', 'refuse', 'block', 'skip', 'stop', 'abort', 'disallow', 'forbid' }

--- 'allow', 'reject' or nil: how a label reads.
function M.label_reads(label)
  local allow, reject = {}, {}
  for _, w in ipairs(M.allow_words) do
    allow[w] = true
  end
  for _, w in ipairs(M.reject_words) do
    reject[w] = true
  end
  local s = (text.of(label) or ''):lower():gsub('’', "'")
  for word in s:gmatch("[%a']+") do
    word = word:gsub("^'+", ''):gsub("'+$", '')
    if allow[word] then
      return 'allow'
    elseif reject[word] then
      return 'reject'
    end
  end
end

--- Whether option `opt`'s label reads as the opposite of its kind.
function M.disagrees(opt)
  local reads = M.label_reads(opt.name)
  local kind = type(opt.kind) == 'string' and opt.kind or ''
  return (reads == 'reject' and kind:match('^allow_') ~= nil) or (reads == 'allow' and kind:match('^reject_') ~= nil)
end

--- The kind of `opt` as the float shows it.
local function kind_label(opt)
  if kind_names[opt.kind] then
    return kind_names[opt.kind]
  end
  return opt.kind == nil and 'no kind' or ('unknown kind ' .. text.fit(opt.kind, 20))
end

--- Rows a command or an input may take in the float; longer ones show
--- their start and end around "…" (`K` shows them whole).
M.max_rows = 6
--- Environment variables listed in the float (`K` shows the rest).
M.max_env = 16

--- Whether the request says what it is about: a title, a command, an
--- input, a location or an edit. The tool call shown is the card the
--- request points to merged with the request (the core's), so a request
--- that carries only the id of a card it announced says what the card says.
function M.says_anything(item)
  local p, tool = item.payload, tool_of(item)
  local function some(v)
    return (text.of(v) or ''):match('%S') ~= nil
  end
  local term = command_of(item)
  if some(p.title) or some(p.summary) or (term and some(term.command)) or #diffs(tool) > 0 then
    return true
  end
  for _, loc in ipairs(type(tool.locations) == 'table' and tool.locations or {}) do
    if type(loc) == 'table' and some(loc.path) then
      return true
    end
  end
  for _, f in ipairs(type(p.files) == 'table' and p.files or {}) do
    if some(f) then
      return true
    end
  end
  return false
end

--- The widest line of the float (its text area).
local function max_width()
  return math.max(20, vim.o.columns - 4) - 2
end

--- The float's lines for `item`, and the rows (0-based) to highlight as
--- warnings. Every value from the agent is shown on rows of the float's
--- width, with every character visible (see acp.util.text.visible): a padded
--- or multi-line command shows its start and end, so the working
--- directory, the environment and the options below it stay in view.
function M.lines(item, width)
  width = width or max_width()
  local p, tool = item.payload, tool_of(item)
  local out, warn = {}, {}
  local cut = false
  local function fit(prefix, value)
    local l, c = text.fit(value, width - vim.fn.strdisplaywidth(prefix))
    cut = cut or c
    out[#out + 1] = prefix .. l
  end
  -- Rows of one value: `prefix` on the first, its width of spaces on the
  -- others (they are the same value, wrapped or on its next lines).
  local function rows(prefix, value)
    local w = vim.fn.strdisplaywidth(prefix)
    local r, c = text.rows(value, width - w, M.max_rows)
    cut = cut or c
    for i, l in ipairs(r) do
      out[#out + 1] = (i == 1 and prefix or (' '):rep(w)) .. l
    end
  end
  local pos = #M.queue > 1 and (' (1 of %d)'):format(#M.queue) or ''
  fit('', ('%s asks for permission%s'):format(agent_name(item), pos))
  out[#out + 1] = ''
  -- The kind and title are the card's as recorded (the core's), not the
  -- ones the request claimed: they are what a policy judged.
  local title = text.of(p.title)
  if not (title and title:match('%S')) then
    title = text.of(p.tool_call_id) or 'tool call'
  end
  fit(('[%s] '):format(text.fit(p.kind, 20) ~= '' and text.fit(p.kind, 20) or 'other'), title)
  local term = command_of(item)
  local s
  if term then
    rows('  $ ', term.command)
    fit('  in ', term.cwd)
    if type(term.env) == 'table' and next(term.env) then
      out[#out + 1] = '  with environment:'
      local names = {}
      for name in pairs(term.env) do
        names[#names + 1] = text.of(name) or '?'
      end
      table.sort(names)
      for i, name in ipairs(names) do
        if i > M.max_env then
          out[#out + 1] = ('    … %d more (K shows all)'):format(#names - M.max_env)
          cut = true
          break
        end
        fit('    ', name .. '=' .. (text.of(term.env[name]) or ''))
      end
    end
  else
    s = p.summary
    if s then
      rows('  ', s)
    end
  end
  if not M.says_anything(item) then
    out[#out + 1] = '  ⚠ the agent did not say what this does'
    warn[#warn + 1] = #out - 1
  end
  if type(tool.locations) == 'table' then
    local n = 0
    for _, loc in ipairs(tool.locations) do
      local path = type(loc) == 'table' and text.of(loc.path)
      if path and path ~= s then
        n = n + 1
        if n > M.max_env then
          out[#out + 1] = '  … (K shows all)'
          cut = true
          break
        end
        fit('  ', path)
      end
    end
  end
  -- The files only its raw input names (Cline's read_files), as the
  -- core found them: relative to the project when inside it, bounded.
  for _, f in ipairs(type(p.files) == 'table' and p.files or {}) do
    if text.of(f) ~= s then
      fit('  file: ', f)
    end
  end
  if type(p.files_more) == 'number' and p.files_more > 0 then
    out[#out + 1] = ('  … and %d more (K shows all)'):format(p.files_more)
    cut = true
  end
  for _, d in ipairs(diffs(tool)) do
    local add, del = count_changes(d)
    local what = ('  %s '):format(d.oldText and 'edit' or 'new file')
    local tail = (': +%d -%d   (d: review)'):format(add, del)
    local path, c = text.fit(d.path, width - vim.fn.strdisplaywidth(what .. tail))
    cut = cut or c
    out[#out + 1] = what .. path .. tail
  end
  out[#out + 1] = ''
  local opts = options_of(item)
  local keys = M.option_keys(opts)
  for i, opt in ipairs(opts) do
    local prefix = ('  %s  '):format(table.concat(keys[i], '/'))
    local kind = ('  [%s]'):format(kind_label(opt))
    local name, c = text.fit(opt.name, width - vim.fn.strdisplaywidth(prefix .. kind))
    cut = cut or c
    out[#out + 1] = prefix .. name .. kind
    if M.disagrees(opt) then
      out[#out + 1] = ('       ⚠ label and kind disagree: this answers "%s"'):format(kind_label(opt))
      warn[#warn + 1] = #out - 1
    end
  end
  out[#out + 1] = ''
  if cut then
    out[#out + 1] = '  K  show all, as the agent sent it'
  end
  out[#out + 1] = '  q  decide later (:AcpPermission)'
  return text.safe_lines(out), warn
end

--- The whole request as text, for `K`: nothing shortened (control
--- characters show as Neovim shows them in any buffer, e.g. `^[`).
function M.full_lines(item)
  local p, tool = item.payload, tool_of(item)
  local out = { ('%s asks for permission'):format(agent_name(item)), '' }
  push(out, 'title: ', p.title)
  push(out, 'kind: ', p.kind)
  if not M.says_anything(item) then
    out[#out + 1] = 'the agent did not say what this does'
  end
  local term = command_of(item)
  if term then
    out[#out + 1] = 'command:'
    push(out, '  ', term.command)
    push(out, 'in: ', term.cwd)
    if type(term.env) == 'table' and next(term.env) then
      out[#out + 1] = 'environment:'
      local names = {}
      for name in pairs(term.env) do
        names[#names + 1] = text.of(name) or '?'
      end
      table.sort(names)
      for _, name in ipairs(names) do
        push(out, '  ', name .. '=' .. (text.of(term.env[name]) or ''))
      end
    end
  else
    if p.summary then
      out[#out + 1] = 'input:'
      push(out, '  ', p.summary)
    end
    if tool.rawInput ~= nil then
      push(out, 'raw input: ', vim.inspect(tool.rawInput, { newline = ' ', indent = '' }))
    end
  end
  if type(tool.locations) == 'table' then
    for _, loc in ipairs(tool.locations) do
      if type(loc) == 'table' then
        push(out, 'location: ', loc.path)
      end
    end
  end
  for _, d in ipairs(diffs(tool)) do
    push(out, d.oldText and 'edit: ' or 'new file: ', d.path)
  end
  local g = p.grant
  if g and g.type == 'files' and #g.paths > 0 then
    out[#out + 1] = 'allowing lets it change:'
    for _, path in ipairs(g.paths) do
      push(out, '  ', path)
    end
  end
  out[#out + 1] = 'options:'
  local opts = options_of(item)
  local keys = M.option_keys(opts)
  for i, opt in ipairs(opts) do
    push(out, ('  %s  '):format(table.concat(keys[i], '/')), opt.name .. ('  [%s]'):format(kind_label(opt)))
  end
  return text.safe_lines(out)
end

--- The request as raw data, for a request whose normal rendering failed.
function M.raw_lines(item)
  local out = { ('%s asks for permission (shown raw)'):format(agent_name(item)), '' }
  push(out, '  tool: ', vim.inspect(tool_of(item), { newline = ' ', indent = '' }))
  for i, opt in ipairs(options_of(item)) do
    push(out, ('  %d  '):format(i), vim.inspect(opt, { newline = ' ', indent = '' }))
  end
  return out
end

local function close_float()
  local inside = M.win ~= nil and api.nvim_get_current_win() == M.win
  if M.win and api.nvim_win_is_valid(M.win) then
    api.nvim_win_close(M.win, true)
  end
  M.win, M.shown, M.armed, M.visible_since, M.forced = nil, nil, false, nil, nil
  require('acp.ask.permission_inline').clear()
  if inside then
    -- Back where the user came from, in the mode they were in.
    local origin = M.origin
    M.origin = nil
    require('acp.ask.permission_keys').restore(origin)
  end
end

local function reach_hint()
  local key = config.options.permissions.focus_key
  return key and (' %s in the chat or :AcpPermission to answer '):format(key) or ' :AcpPermission to answer '
end

--- The footer outside the float: the chords that answer from the chat
--- (dim until they do), or how to reach the float without chords.
local function chords_footer(item)
  local chords = require('acp.ask.permission_keys').footer(item)
  return chords and (' ' .. chords .. ' ') or reach_hint()
end

--- Milliseconds now (the chords' clock; not the loop's cached time).
function M.now()
  return vim.uv.hrtime() / 1e6
end

--- Whether the chords answer the shown request: in view for grace_ms.
function M.chords_ready()
  return M.visible_since ~= nil and M.now() - M.visible_since >= config.options.permissions.grace_ms
end

--- Whether the shown request is in view in this tab (its float, or its
--- lines at the card: permission_inline.lua).
function M.in_view()
  local float = M.win ~= nil and api.nvim_win_is_valid(M.win) and api.nvim_win_get_tabpage(M.win) == api.nvim_get_current_tabpage()
  return M.shown ~= nil and M.visible_since ~= nil and (float or require('acp.ask.permission_inline').in_view(M.shown))
end

--- The float's footer: how to answer it, then whether its keys work yet.
local function decorate()
  if not (M.win and api.nvim_win_is_valid(M.win)) then
    return
  end
  local footer, hl
  if not M.zone[api.nvim_get_current_buf()] then
    footer, hl = chords_footer(M.shown), M.chords_ready() and 'FloatFooter' or 'AcpPermissionWaiting'
  elseif M.armed then
    footer, hl = ' armed: press a key to answer ', 'AcpPermissionArmed'
  else
    footer, hl = ' wait… ', 'AcpPermissionWaiting'
  end
  pcall(api.nvim_win_set_config, M.win, { footer = { { footer, hl } }, footer_pos = 'right' })
  vim.wo[M.win].winhighlight = M.armed and 'FloatBorder:AcpPermissionArmed' or ''
end

local grace_gen = 0

--- Keys stay inert for `grace_ms` after focus arrives or the request shown
--- changes, so keys typed for something else answer nothing.
local function start_grace()
  grace_gen = grace_gen + 1
  local gen = grace_gen
  M.armed = false
  local ms = config.options.permissions.grace_ms
  if ms <= 0 then
    M.armed = M.zone[api.nvim_get_current_buf()] == true
  else
    vim.defer_fn(function()
      if gen == grace_gen and M.zone[api.nvim_get_current_buf()] then
        M.armed = true
        decorate()
      end
    end, ms)
  end
  decorate()
end

local function on_enter()
  if M.zone[api.nvim_get_current_buf()] then
    start_grace()
  else
    grace_gen = grace_gen + 1
    M.armed = false
    decorate()
  end
end

local hooked = false
local function hook()
  if hooked then
    return
  end
  hooked = true
  local group = api.nvim_create_augroup('acp_permission', { clear = true })
  api.nvim_create_autocmd('WinEnter', { group = group, callback = on_enter })
  -- The float follows its card when the chat scrolls or changes size.
  api.nvim_create_autocmd({ 'WinScrolled', 'WinResized' }, {
    group = group,
    callback = function(ev)
      local view = M.shown and M.shown.view
      if view and view.win then
        pcall(M.reposition, view, ev.event == 'WinResized')
      end
    end,
  })
end

--- Sends the answer for `item` (option index `i`, or nil = cancelled) and
--- moves the queue on. An answer the core refuses leaves the request
--- queued (the agent still waits for it), with the error shown.
local function answer(item, i)
  local opt = i and options_of(item)[i]
  if i and not opt then
    return
  end
  local core = require('acp.core')
  if core.is_loaded() then
    local ok, err = pcall(core.answer_permission, item.view.thread, item.request, opt and opt.id)
    if not ok then
      require('acp.util.escape').notify('acp.nvim: the answer was not sent: ' .. text.error(err), vim.log.levels.ERROR)
      return
    end
  end
  for n, it in ipairs(M.queue) do
    if it == item then
      table.remove(M.queue, n)
      break
    end
  end
  if M.review_tab then
    require('acp.editor.review').close(M.review_tab)
    M.review_tab = nil
  end
  M.render()
end

--- Answers `item`, the request in view, with option `i` (a chord typed in
--- its chat, see permission_keys.lua).
function M.answer_shown(item, i)
  if item == M.shown and M.in_view() then
    answer(item, i)
  end
end

--- Answers the request the float shows with option `i` (or nil =
--- cancelled). Ignored until the float is armed.
function M.choose(i)
  local item = M.shown
  if item and M.armed then
    answer(item, i)
  end
end

--- Keys that answer `item`, set on the float's buffer `buf` (and no other:
--- a key typed in another window never answers). Each does nothing unless
--- the float is armed for it.
local function answer_keys(buf, item)
  for i, keys in ipairs(M.option_keys(options_of(item))) do
    for _, k in ipairs(keys) do
      vim.keymap.set('n', k, function()
        if M.shown == item and M.armed then
          answer(item, i)
        end
      end, { buffer = buf, nowait = true })
    end
  end
end

--- Reviews the edit of the shown request side by side in a new tab. No key
--- there answers the request (reading keys such as `2j` or `yy` would):
--- `q` closes the review and goes back to the float.
function M.review()
  local item = M.shown
  local d = item and diffs(tool_of(item))[1]
  if not d then
    return
  end
  local review = require('acp.editor.review')
  local win = M.win
  M.win, M.visible_since = nil, nil -- keep `shown` while the float is closed for the review
  if win and api.nvim_win_is_valid(win) then
    api.nvim_win_close(win, true)
  end
  local tab, left, right = review.open_diff(d.path, d.oldText, d.newText, { hint = ' (back to the question)' })
  M.review_tab = tab
  local id = item.payload.tool_call_id
  local function back()
    M.review_tab = nil
    review.close(tab)
    if #M.queue > 0 then
      M.focus(id, true)
    end
  end
  for _, buf in ipairs({ left, right }) do
    vim.keymap.set('n', 'q', back, { buffer = buf, nowait = true, silent = true, desc = 'Back to the permission request' })
  end
  on_enter()
end

--- `K` in the float: the whole request, nothing shortened, in a scratch
--- window below (`q` closes it). Its keys answer nothing.
function M.show_all()
  local item = M.shown
  if not item then
    return
  end
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  api.nvim_buf_set_lines(buf, 0, -1, false, M.full_lines(item))
  vim.bo[buf].modifiable = false
  vim.keymap.set('n', 'q', '<Cmd>close<CR>', { buffer = buf, nowait = true, silent = true, desc = 'Close' })
  api.nvim_open_win(buf, true, { split = 'below', win = -1, height = math.max(5, math.floor(vim.o.lines / 3)) })
  vim.wo.wrap = true
  vim.wo.winbar = ' The whole permission request · q close · answer in the float (:AcpPermission)'
end

--- Where the float goes for `item` (see permission_place.lua); `scroll`:
--- the chat may scroll to make room under the card.
function M.placement(item, width, height, scroll)
  local put_back = require('acp.ask.permission_inline').lift() -- measured without its inline lines
  local ok, where = pcall(require('acp.ask.permission_place').placement, item, width, height, scroll)
  put_back()
  return ok and where or error(where, 0)
end

--- Rows the float covers at the bottom of `view`'s chat (0 when it sits
--- next to its card or is not shown), or the request's lines take under
--- the chat's last line (permission_inline.lua).
function M.bottom_rows(view)
  if not (M.shown and M.shown.view == view and M.win and api.nvim_win_is_valid(M.win) and M.at_bottom) then
    return M.shown and M.shown.view == view and require('acp.ask.permission_inline').rows_below_end(M.shown) or 0
  end
  return api.nvim_win_get_height(M.win) + 2
end

--- Sets the float's place; a float at the bottom scrolls a chat that
--- follows its end so that the card stays visible above it.
local function place(item, cfg)
  M.at_bottom = cfg.bottom == true
  local topline = cfg.topline
  cfg.bottom, cfg.topline, cfg.inline = nil, nil, nil
  local view = item.view
  if topline and view and view.win and api.nvim_win_is_valid(view.win) then
    -- The card ends just above the float, the turn's rows above it.
    api.nvim_win_call(view.win, function()
      vim.fn.winrestview({ topline = topline })
    end)
  end
  if M.at_bottom and view and view.win and api.nvim_win_is_valid(view.win) then
    local last = api.nvim_buf_line_count(view.buf)
    if api.nvim_win_get_cursor(view.win)[1] >= last then
      vim.schedule(function()
        if view.win and api.nvim_win_is_valid(view.win) then
          view:keep_end_visible(view.win)
        end
      end)
    end
  end
  return cfg
end

--- Places the float again (its card moved: new output, a scroll), or the
--- lines at the card; `resized`: a request shown inline moves into the
--- float when the chat now has room for it.
function M.reposition(view, resized)
  local item = M.shown
  local inline = require('acp.ask.permission_inline')
  if item and item.view == view and inline.shows(item) then
    return inline.reposition(item, resized)
  end
  if not (item and item.view == view and M.win and api.nvim_win_is_valid(M.win)) then
    return
  end
  local cfg = api.nvim_win_get_config(M.win)
  local where = M.placement(item, cfg.width, cfg.height)
  if where.inline and M.forced ~= item then
    -- The float would cover the card or the turn: the lines at the card.
    return M.render()
  end
  where.anchor = where.anchor or 'NW'
  pcall(api.nvim_win_set_config, M.win, place(item, where))
end

--- The request is to be brought into view (render(true): a chord typed).
local bring = false

--- The float's text size for `item` showing `lines`.
function M.float_size(item, lines)
  local width = vim.fn.strdisplaywidth(chords_footer(item)) + 2
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l) + 2)
  end
  return math.min(width, math.max(20, vim.o.columns - 4)), math.max(1, math.min(#lines, vim.o.lines - 3))
end

--- `q` in the float: it closes and the request waits; one the user opened
--- over its lines at the card (permission_inline.lua) shows them again.
function M.decide_later()
  local item = M.shown
  local back = item ~= nil and M.forced == item and M.over_inline
  close_float()
  if back and vim.tbl_contains(M.queue, item) then
    require('acp.ask.permission_inline').restore_view(back)
    M.render()
  end
end

--- Opens (or updates) the float for `item` (`warn`: rows to highlight as
--- warnings), or its lines at the card when the float would cover the
--- card or the turn; raises when it cannot be drawn.
local function draw(item, lines, warn)
  if not (M.buf and api.nvim_buf_is_valid(M.buf)) then
    M.buf = api.nvim_create_buf(false, true)
    vim.bo[M.buf].bufhidden = 'hide'
    vim.bo[M.buf].filetype = 'acppermission'
  end
  if M.shown ~= item then
    M.zone = {}
  end
  M.zone[M.buf] = true
  vim.bo[M.buf].modifiable = true
  api.nvim_buf_set_lines(M.buf, 0, -1, false, lines)
  vim.bo[M.buf].modifiable = false
  api.nvim_buf_clear_namespace(M.buf, ns, 0, -1)
  for _, row in ipairs(warn or {}) do
    api.nvim_buf_set_extmark(M.buf, ns, row, 0, { end_col = #lines[row + 1], hl_group = 'AcpPermissionMismatch' })
  end
  pcall(vim.keymap.del, 'n', 'd', { buffer = M.buf })
  for _, k in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', k, M.decide_later, { buffer = M.buf, nowait = true })
  end
  vim.keymap.set('n', 'K', M.show_all, { buffer = M.buf, nowait = true })
  answer_keys(M.buf, item)
  if #diffs(tool_of(item)) > 0 then
    vim.keymap.set('n', 'd', M.review, { buffer = M.buf, nowait = true })
  end
  local width, height = M.float_size(item, lines)
  local cfg = { width = width, height = height, style = 'minimal', border = 'rounded', title = ' Permission ', focusable = true }
  cfg.anchor = 'NW'
  local changed = M.shown ~= item
  local opened = not (M.win and api.nvim_win_is_valid(M.win))
  local inline = require('acp.ask.permission_inline')
  local fresh = changed or (opened and not inline.shows(item)) or bring
  M.forced = M.forced == item and item or nil
  local where = M.placement(item, width, height, fresh)
  if where.inline and not M.forced and inline.show(item, fresh, function()
    pcall(api.nvim_win_close, M.win or -1, true) -- from the float to the lines, or another request: the wait starts again
    M.visible_since = not (changed or not opened) and M.visible_since or nil
    M.win, M.shown, M.armed = nil, item, false
  end) then
    return
  end
  inline.clear()
  for k, v in pairs(where) do
    cfg[k] = v
  end
  cfg = place(item, cfg)
  if not opened then
    api.nvim_win_set_config(M.win, cfg)
  else
    -- Never entered here: the user moves into it on purpose.
    M.win = api.nvim_open_win(M.buf, false, cfg)
  end
  -- Every line fits the width: a row is a line, and nothing is pushed out
  -- of view by a wrapped one.
  vim.wo[M.win].wrap = false
  M.shown = item
  if changed or opened or not M.visible_since then
    -- In view from now: the chords answer once the grace period is over.
    M.visible_since = M.now()
    local since = M.visible_since
    vim.defer_fn(function()
      if M.visible_since == since then
        decorate()
      end
    end, math.max(0, config.options.permissions.grace_ms) + 10)
  end
  if changed or not M.zone[api.nvim_get_current_buf()] then
    -- Another request under the user's keys: the grace period restarts.
    start_grace()
  else
    decorate()
  end
end

--- A request that cannot be drawn: shown in its chat with its raw
--- options; `:AcpPermission` answers it.
local function show_in_chat(item, err)
  require('acp.core.dispatch').log_error('permission request could not be drawn: ' .. tostring(err))
  local view = item.view
  if not (view and view.notice) then
    return
  end
  local lines = { ('⚠ %s asks for permission, but the request cannot be shown (:AcpPermission answers it):'):format(agent_name(item)) }
  vim.list_extend(lines, M.raw_lines(item), 3)
  pcall(view.notice, view, lines, 'WarningMsg')
end

--- Shows the first request that can be drawn; closes the float when none.
--- `anew`: a float left in another tab opens again in this one.
function M.render(anew)
  require('acp.ask.changes').changed()
  hook()
  if anew and M.win and api.nvim_win_is_valid(M.win) and api.nvim_win_get_tabpage(M.win) ~= api.nvim_get_current_tabpage() then
    api.nvim_win_close(M.win, true)
    M.win, M.visible_since = nil, nil
  end
  bring = anew == true
  for _, item in ipairs(M.queue) do
    if not item.undrawable then
      local ok, err = xpcall(draw, debug.traceback, item, M.lines(item))
      if not ok then
        ok = pcall(draw, item, M.raw_lines(item))
      end
      if ok then
        return
      end
      item.undrawable = true
      show_in_chat(item, err)
    end
  end
  close_float()
end

---@param view acp.ChatView
---@param ev acp.Event.permission
function M.enqueue(view, ev)
  M.queue[#M.queue + 1] = { view = view, request = ev.request, payload = ev.payload }
  M.render()
end

--- The core says the request is answered or moot (cancel, agent exit).
function M.done(view, request)
  for i, item in ipairs(M.queue) do
    if item.view == view and item.request == request then
      table.remove(M.queue, i)
      M.render()
      return
    end
  end
end

--- Answers a request that has no float through a list the user picks from.
local function answer_from_list(item)
  local opts = options_of(item)
  local title = text.line(item.payload.title) or text.line(item.payload.tool_call_id, 'tool call')
  require('acp.util.escape').select(opts, {
    prompt = ('%s asks for permission: %s'):format(agent_name(item), title),
    format_item = function(o)
      return text.line(o.name, '?')
    end,
  }, function(_, idx)
    if idx then
      answer(item, idx)
    end
  end)
end

--- Moves the cursor into the float (the deliberate way to answer),
--- optionally for the request about a given tool call (moved to the head
--- of the queue). A request that could not be drawn is answered from a
--- list instead. When the float closes the user is back where they were
--- (`keep`: the place recorded before, e.g. before a review).
function M.focus(tool_call_id, keep)
  if #M.queue == 0 then
    require('acp.util.escape').notify('acp.nvim: no permission request is pending')
    return
  end
  local target = M.queue[1]
  if tool_call_id then
    for i, item in ipairs(M.queue) do
      if item.payload.tool_call_id == tool_call_id then
        target = item
        table.insert(M.queue, 1, table.remove(M.queue, i))
        break
      end
    end
  end
  if target.undrawable then
    return answer_from_list(target)
  end
  if not (keep or M.zone[api.nvim_get_current_buf()]) then
    M.origin = require('acp.ask.permission_keys').origin()
  end
  vim.cmd('stopinsert')
  M.forced, M.over_inline = target, require('acp.ask.permission_inline').save_view(target) -- the float, even over the card
  M.render()
  if M.win and api.nvim_win_is_valid(M.win) then
    api.nvim_set_current_win(M.win)
  end
end

--- `:AcpPermissions [reset]` (permission_decisions.lua).
function M.decisions(view, reset)
  return require('acp.ask.permission_decisions').decisions(view, reset)
end

return M
