--- Elicitation (`elicitation/create`): the agent asks the user for input.
---
--- Form mode: the restricted JSON Schema (string, number, integer,
--- boolean, enums, multi-select, required fields, defaults) becomes an
--- editable buffer in a float, one `field: value` line per property, with
--- its type and description beside it. URL mode: the float shows the
--- target host and the URL, and opens it with vim.ui.open only when the
--- user says so.
---
--- The float never takes focus by itself (`:AcpElicitation` or the
--- permission key moves into it). In it: <C-s> accepts (after checking the
--- values), <C-x> declines, <C-c> or `q` (normal mode) cancels; in URL
--- mode <CR> opens the URL.
---
--- Agent text is shown one line per line, with every character visible
--- (acp.util.text.visible). A request whose float cannot be drawn anyway is
--- answered `cancel` (the user never saw it), with a line in its chat, and
--- the next one is shown.
local api = vim.api
local text = require('acp.util.text')
local ns = api.nvim_create_namespace('acp_elicitation')

api.nvim_set_hl(0, 'AcpElicitationHint', { link = 'Comment', default = true })
api.nvim_set_hl(0, 'AcpElicitationError', { link = 'ErrorMsg', default = true })

local M = {}

--- Requests waiting for the user, in arrival order: { request, thread?, payload }.
M.queue = {}
--- The float and its buffer (for the request shown).
M.win, M.buf, M.shown = nil, nil, nil

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.INFO)
end

local function schema_of(item)
  local s = item.payload.requestedSchema
  return type(s) == 'table' and s or {}
end

--- The form's fields in a stable order: required first, then by name.
function M.fields(item)
  local schema = schema_of(item)
  local required = {}
  for _, k in ipairs(type(schema.required) == 'table' and schema.required or {}) do
    required[k] = true
  end
  local out = {}
  for key, prop in pairs(type(schema.properties) == 'table' and schema.properties or {}) do
    if type(prop) == 'table' then
      out[#out + 1] = { key = key, prop = prop, required = required[key] == true }
    end
  end
  table.sort(out, function(a, b)
    if a.required ~= b.required then
      return a.required
    end
    return a.key < b.key
  end)
  return out
end

--- Allowed values of an enum (`enum`, or `oneOf` with `const`/`title`).
local function enum_values(prop)
  if type(prop.enum) == 'table' then
    return prop.enum
  end
  if type(prop.oneOf) == 'table' then
    return vim.tbl_map(function(o)
      return type(o) == 'table' and o.const or o
    end, prop.oneOf)
  end
  local items = type(prop.items) == 'table' and prop.items or nil
  if items then
    if type(items.enum) == 'table' then
      return items.enum
    end
    if type(items.anyOf) == 'table' then
      return vim.tbl_map(function(o)
        return type(o) == 'table' and o.const or o
      end, items.anyOf)
    end
  end
end

--- The hint beside a field: type, range, choices, description (one line,
--- at most 200 cells).
local function hint(field)
  local p = field.prop
  local parts = { (text.visible(p.type or '?')) }
  local values = enum_values(p)
  if values then
    parts[1] = (p.type == 'array' and 'any of: ' or 'one of: ') .. table.concat(vim.tbl_map(text.visible, values), ', ')
  elseif p.type == 'boolean' then
    parts[1] = 'true/false'
  end
  if p.minimum or p.maximum then
    parts[#parts + 1] = text.visible(p.minimum or '') .. '..' .. text.visible(p.maximum or '')
  end
  if p.format then
    parts[#parts + 1] = text.visible(p.format)
  end
  local s = (field.required and '* ' or '') .. table.concat(parts, ', ')
  local desc = p.description or (p.title ~= field.key and p.title) or nil
  if desc then
    s = s .. ' · ' .. text.visible(desc)
  end
  return (text.fit(s, 200))
end

--- A field's name as its line shows it (and `read` finds it): one line, no
--- `:` (it ends the name) and no leading `#` (a comment line).
function M.label(key)
  local s = vim.trim((text.visible(key):gsub(':', '∶')))
  s = s:gsub('^#', '＃')
  return s ~= '' and s or '?'
end

local function default_text(prop)
  local d = prop.default
  if d == nil then
    return ''
  elseif type(d) == 'table' then
    return table.concat(vim.tbl_map(text.visible, d), ', ')
  end
  return (text.visible(d))
end

--- Buffer lines of a request: header comments, then fields (form) or the
--- URL and its host (url).
function M.lines(item)
  local p = item.payload
  local lines = {}
  for _, l in ipairs(text.lines(p.message or 'The agent asks for input')) do
    lines[#lines + 1] = '# ' .. text.visible(l)
  end
  if p.mode == 'url' then
    -- The real host: `https://accounts.google.com@evil.example/` is a page
    -- on evil.example (the text before `@` is userinfo, which browsers skip).
    local esc = require('acp.util.escape')
    local parts = esc.url(p.url)
    local host = parts and parts.host ~= '' and esc.line(parts.host) or '?'
    lines[#lines + 1] = '# Opens a page on ' .. host
    if parts and parts.userinfo then
      lines[#lines + 1] = ('# ⚠ NOT a page on %s: the text before "@" is no host; the page is on %s'):format(
        esc.line(parts.userinfo, 80),
        host
      )
    end
    lines[#lines + 1] = '# <CR> open in your browser · <C-x> decline · <C-c> cancel'
    lines[#lines + 1] = 'host: ' .. host
    lines[#lines + 1] = 'url: ' .. esc.line(p.url, 4000)
    return lines
  end
  local title = schema_of(item).title
  if title ~= nil and title ~= vim.NIL then
    table.insert(lines, 1, '# ' .. text.visible(title))
  end
  lines[#lines + 1] = '# Fill in after each `:`. <C-s> accept · <C-x> decline · <C-c> cancel'
  for _, f in ipairs(M.fields(item)) do
    lines[#lines + 1] = M.label(f.key) .. ': ' .. default_text(f.prop)
  end
  return lines
end

--- The values typed in the float's buffer, by field key.
function M.read(buf)
  local out = {}
  for row, line in ipairs(api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if not line:match('^#') then
      local key, value = line:match('^([^:]+):%s?(.*)$')
      if key then
        out[vim.trim(key)] = { value = vim.trim(value), row = row - 1 }
      end
    end
  end
  return out
end

local truthy = { ['true'] = true, yes = true, on = true, ['1'] = true, y = true }
local falsy = { ['false'] = true, no = true, off = true, ['0'] = true, n = true }

--- Converts and checks one field's text. Returns the value (nil when left
--- empty) or nil and an error.
local function convert(field, text)
  local p = field.prop
  if text == '' then
    if field.required then
      return nil, 'required'
    end
    return nil
  end
  local values = enum_values(p)
  if p.type == 'array' then
    local list = vim.tbl_map(vim.trim, vim.split(text, ',', { plain = true }))
    for _, v in ipairs(list) do
      if values and not vim.tbl_contains(values, v) then
        return nil, ('%q is not one of %s'):format(v, table.concat(values, ', '))
      end
    end
    if p.minItems and #list < p.minItems then
      return nil, ('at least %d'):format(p.minItems)
    end
    if p.maxItems and #list > p.maxItems then
      return nil, ('at most %d'):format(p.maxItems)
    end
    return list
  elseif p.type == 'boolean' then
    local t = text:lower()
    if truthy[t] then
      return true
    elseif falsy[t] then
      return false
    end
    return nil, 'true or false'
  elseif p.type == 'number' or p.type == 'integer' then
    local n = tonumber(text)
    if not n then
      return nil, 'a number'
    end
    if p.type == 'integer' and n ~= math.floor(n) then
      return nil, 'a whole number'
    end
    if p.minimum and n < p.minimum then
      return nil, ('at least %s'):format(p.minimum)
    end
    if p.maximum and n > p.maximum then
      return nil, ('at most %s'):format(p.maximum)
    end
    return n
  end
  if values and not vim.tbl_contains(values, text) then
    return nil, 'one of ' .. table.concat(values, ', ')
  end
  if p.minLength and #text < p.minLength then
    return nil, ('at least %d characters'):format(p.minLength)
  end
  if p.maxLength and #text > p.maxLength then
    return nil, ('at most %d characters'):format(p.maxLength)
  end
  if p.format == 'email' and not text:match('^[^@%s]+@[^@%s]+$') then
    return nil, 'an email address'
  end
  return text
end

--- The form's content, or nil and { [key] = error } (errors also shown).
function M.collect(item, buf)
  local typed = M.read(buf)
  local content, errors = {}, {}
  for _, f in ipairs(M.fields(item)) do
    local entry = typed[M.label(f.key)]
    local value, err = convert(f, entry and entry.value or '')
    if err then
      errors[f.key] = err
    elseif value ~= nil then
      content[f.key] = value
    end
  end
  if next(errors) then
    return nil, errors
  end
  return content
end

local function close_float()
  if M.win and api.nvim_win_is_valid(M.win) then
    api.nvim_win_close(M.win, true)
  end
  if M.buf and api.nvim_buf_is_valid(M.buf) then
    api.nvim_buf_delete(M.buf, { force = true })
  end
  M.win, M.buf, M.shown = nil, nil, nil
end

local function remove(request)
  for i, it in ipairs(M.queue) do
    if it.request == request then
      table.remove(M.queue, i)
      break
    end
  end
  if M.shown and M.shown.request == request then
    close_float()
  end
  M.render()
end

--- Sends the user's answer (`accept` with content, `decline`, `cancel`).
function M.answer(item, response)
  local ok, err = pcall(require('acp.core').answer_elicitation, item.request, response)
  if not ok then
    notify(tostring(err):gsub('^runtime error: ', ''):match('^[^\n]*'), vim.log.levels.WARN)
  end
  remove(item.request)
  return ok
end

--- <C-s>: checks the form and accepts it; errors show beside their fields.
function M.accept()
  local item = M.shown
  if not item then
    return
  end
  if item.payload.mode == 'url' then
    return M.open_url()
  end
  api.nvim_buf_clear_namespace(M.buf, ns, 0, -1)
  local content, errors = M.collect(item, M.buf)
  if not content then
    local typed = M.read(M.buf)
    local names = {}
    for key, err in pairs(errors) do
      local shown = M.label(key)
      names[#names + 1] = shown .. ' (' .. err .. ')'
      local row = typed[shown] and typed[shown].row
      if row then
        api.nvim_buf_set_extmark(M.buf, ns, row, 0, { virt_text = { { '  ✖ ' .. err, 'AcpElicitationError' } } })
      end
    end
    table.sort(names)
    return notify('check ' .. table.concat(names, ', '), vim.log.levels.WARN)
  end
  M.answer(item, { action = 'accept', content = next(content) and content or vim.empty_dict() })
end

--- URL mode: opens the URL (the user asked for it) and accepts.
function M.open_url()
  local item = M.shown
  if not (item and item.payload.mode == 'url') then
    return
  end
  local url = tostring(item.payload.url)
  if not url:match('^https?://') then
    notify('not opening a URL that is not http(s): ' .. url, vim.log.levels.WARN)
    return M.answer(item, { action = 'decline' })
  end
  M.opened = url
  local ok, err = pcall(vim.ui.open, url)
  if not ok then
    notify('could not open ' .. url .. ': ' .. tostring(err), vim.log.levels.WARN)
  end
  M.waiting = M.waiting or {}
  M.waiting[tostring(item.payload.elicitationId)] = true
  M.answer(item, { action = 'accept' })
end

function M.decline()
  return M.shown and M.answer(M.shown, { action = 'decline' })
end

function M.cancel()
  return M.shown and M.answer(M.shown, { action = 'cancel' })
end

local function keymaps(buf)
  local function map(modes, lhs, fn, desc)
    vim.keymap.set(modes, lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
  end
  map({ 'n', 'i' }, '<C-s>', M.accept, 'Accept')
  map({ 'n', 'i' }, '<C-x>', M.decline, 'Decline')
  map({ 'n', 'i' }, '<C-c>', M.cancel, 'Cancel')
  map('n', 'q', M.cancel, 'Cancel')
end

--- Opens the float for `item`; raises when it cannot be drawn.
local function draw(item)
  local lines = M.lines(item)
  M.buf = api.nvim_create_buf(false, true)
  vim.bo[M.buf].bufhidden = 'wipe'
  api.nvim_buf_set_lines(M.buf, 0, -1, false, lines)
  vim.bo[M.buf].modifiable = item.payload.mode ~= 'url'
  vim.bo[M.buf].filetype = 'acp_elicitation'
  keymaps(M.buf)
  if item.payload.mode == 'url' then
    vim.keymap.set('n', '<CR>', M.open_url, { buffer = M.buf, nowait = true, desc = 'Open the URL' })
  else
    -- Each field's type and description, beside it.
    local fields = {}
    for _, f in ipairs(M.fields(item)) do
      fields[M.label(f.key)] = f
    end
    for key, entry in pairs(M.read(M.buf)) do
      if fields[key] then
        api.nvim_buf_set_extmark(M.buf, ns, entry.row, 0, {
          virt_text = { { '  ' .. hint(fields[key]), 'AcpElicitationHint' } },
          virt_text_pos = 'right_align',
        })
      end
    end
  end
  local width = 60
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l) + 4)
  end
  width = math.max(1, math.min(width, vim.o.columns - 4))
  M.win = api.nvim_open_win(M.buf, false, {
    relative = 'editor',
    row = math.max(0, math.floor((vim.o.lines - #lines) / 2) - 2),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    width = width,
    height = math.max(1, math.min(#lines, vim.o.lines - 4)),
    border = 'rounded',
    style = 'minimal',
    title = ' The agent asks (:AcpElicitation) ',
    title_pos = 'center',
  })
  M.shown = item
end

--- A request whose float cannot be drawn: the agent gets `cancel` (the
--- user never saw it), its chat a line saying so (else a notification).
local function undrawable(item, err)
  require('acp.core.dispatch').log_error('elicitation could not be shown: ' .. tostring(err))
  local core = require('acp.core')
  local sent = pcall(core.answer_elicitation, item.request, { action = 'cancel' })
  local why = text.fit(text.error(err):match('^[^\n]*'), 200)
  local msg = ('The agent\'s request for input could not be shown (%s); it was answered "%s"'):format(why, sent and 'cancel' or 'nothing')
  if not (item.thread and pcall(core.notice, item.thread, 'warn', msg)) then
    notify(msg, vim.log.levels.WARN)
  end
end

--- Shows the first waiting request in a float (never entered by itself).
--- A request that cannot be drawn is answered and dropped, and the next
--- one is shown: one bad request never holds up the others.
function M.render()
  require('acp.ask.changes').changed()
  while true do
    local item = M.queue[1]
    if not item then
      return close_float()
    end
    if M.shown == item and M.win and api.nvim_win_is_valid(M.win) then
      return
    end
    pcall(close_float)
    local ok, err = xpcall(draw, debug.traceback, item)
    if ok then
      return
    end
    pcall(close_float)
    table.remove(M.queue, 1)
    undrawable(item, err)
  end
end

--- Moves into the float (`:AcpElicitation`); false when none waits.
function M.focus()
  if #M.queue == 0 then
    notify('no request for input is pending')
    return false
  end
  vim.cmd('stopinsert')
  M.render()
  if M.win and api.nvim_win_is_valid(M.win) then
    api.nvim_set_current_win(M.win)
  end
  return true
end

--- The core's elicitation events (see acp.Event.elicitation*).
function M.on_event(ev)
  if ev.type == 'elicitation' then
    local item = { request = ev.request, thread = ev.thread, payload = type(ev.payload) == 'table' and ev.payload or {} }
    M.queue[#M.queue + 1] = item
    local ok, err = pcall(M.render)
    if not ok then
      -- Not expected (render answers what it cannot draw): the agent still
      -- gets an answer, the user a line.
      for i, it in ipairs(M.queue) do
        if it == item then
          table.remove(M.queue, i)
          undrawable(item, err)
          break
        end
      end
      return
    end
    if ev.thread and vim.tbl_contains(M.queue, item) then
      local what = item.payload.mode == 'url' and 'asks you to open a page' or 'asks for input'
      pcall(require('acp.core').notice, ev.thread, 'info', ('The agent %s: :AcpElicitation'):format(what))
    end
  elseif ev.type == 'elicitation_done' then
    for _, it in ipairs(M.queue) do
      if it.request == ev.request then
        remove(ev.request)
        if ev.withdrawn then
          -- The agent took it back ($/cancel_request): nobody answered it.
          local msg = 'the agent withdrew this request'
          if type(it.payload.message) == 'string' and it.payload.message ~= '' then
            msg = ('%s: %s'):format(msg, text.fit(it.payload.message:match('^[^\n]*'), 80))
          end
          if not (it.thread and pcall(require('acp.core').notice, it.thread, 'info', msg)) then
            notify(msg)
          end
        end
        break
      end
    end
  elseif ev.type == 'elicitation_complete' then
    local id = tostring(ev.elicitation_id)
    -- A URL request still waiting is over without the user's consent.
    for _, it in ipairs(vim.list_extend({}, M.queue)) do
      if it.payload.mode == 'url' and tostring(it.payload.elicitationId) == id then
        M.answer(it, { action = 'cancel' })
      end
    end
    if M.waiting and M.waiting[id] then
      M.waiting[id] = nil
      notify('the page you opened reports it is done')
    end
  end
end

return M
