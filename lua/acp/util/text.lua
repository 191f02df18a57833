--- Agent values as buffer text. Anything an agent sends may be of any
--- type and may hold newlines; `nvim_buf_set_lines` and window titles
--- refuse a string with "\n", so every value goes through here before it
--- reaches a buffer or a float.
local M = {}

--- `v` as one string: strings as they are, numbers and booleans printed,
--- a list of strings joined with spaces (argv), anything else inspected.
--- nil (and JSON null) stays nil.
function M.of(v)
  local t = type(v)
  if t == 'string' then
    return v
  elseif v == nil or v == vim.NIL then
    return nil
  elseif t == 'number' or t == 'boolean' then
    return tostring(v)
  elseif t == 'table' and vim.islist(v) then
    local parts = {}
    for i, x in ipairs(v) do
      if type(x) ~= 'string' then
        parts = nil
        break
      end
      parts[i] = x
    end
    if parts then
      return table.concat(parts, ' ')
    end
  end
  return vim.inspect(v, { newline = ' ', indent = '' })
end

--- Splits on "\n" without patterns (text may hold any byte).
function M.split(s)
  local out, pos = {}, 1
  while true do
    local nl = s:find('\n', pos, true)
    if not nl then
      out[#out + 1] = s:sub(pos)
      return out
    end
    out[#out + 1] = s:sub(pos, nl - 1)
    pos = nl + 1
  end
end

--- `v` as buffer lines (an empty list for nil).
function M.lines(v)
  local s = M.of(v)
  return s and M.split(s) or {}
end

--- `v` as one line: newlines shown as "⏎" (titles, option names).
function M.line(v, fallback)
  local s = M.of(v)
  if not s then
    return fallback
  end
  return (s:gsub('\r?\n', '⏎'))
end

--- `lines` made safe for `nvim_buf_set_lines`: non-strings printed and
--- strings with newlines split. The same table when it already is safe
--- (the common case costs one `find` per line).
function M.safe_lines(lines)
  if type(lines) ~= 'table' then
    return M.lines(lines)
  end
  for i, l in ipairs(lines) do
    if type(l) ~= 'string' or l:find('\n', 1, true) then
      local out = {}
      for j = 1, i - 1 do
        out[j] = lines[j]
      end
      for j = i, #lines do
        local piece = M.lines(lines[j])
        if #piece == 0 then
          piece = { '' }
        end
        for _, p in ipairs(piece) do
          out[#out + 1] = p
        end
      end
      return out
    end
  end
  return lines
end

--- An error as the user reads it: without a Lua traceback, mlua's
--- "runtime error: " or a leading `file.lua:12: `.
function M.error(err)
  -- mlua's errors are userdata with a __tostring.
  local s = type(err) == 'userdata' and tostring(err) or M.of(err) or 'unknown error'
  s = s:gsub('\n?%s*stack traceback:.*$', '')
  s = s:gsub('^runtime error: ', '')
  -- `path.lua:12: ` and `[string "..."]:1: ` prefixes, repeated by re-raises.
  local prev
  repeat
    prev = s
    s = s:gsub('^%[string "[^"]*"%]:%d+: ', ''):gsub('^[^%s:]+%.lua:%d+: ', '')
  until s == prev
  return s
end

-- Display of agent text in floats --------------------------------------------
-- An agent can hide the end of a command behind 3,000 spaces, a terminal
-- escape or a right-to-left override. What a float shows of agent text is
-- one line per row in which every character is visible: newlines as "⏎",
-- tabs as "⇥", other control characters as their control pictures
-- ("␛" for ESC), invisible and direction-changing characters as
-- "⟨U+200B⟩", and a run of 4 or more of the same such character (or of
-- spaces) as one mark with its count ("␠×3000"). Long text shows its start
-- and its end around a "…".

-- Text longer than this many bytes is shown from its first and last half.
local VISIBLE_MAX = 64 * 1024
local RUN_MIN = 4

-- Lead bytes of every character `visible` changes (a space, C0, DEL, and
-- the UTF-8 ranges holding C1 controls and invisible characters).
local SPECIAL = '[%z\1-\31\127 \194\226\227\239]'

--- Code points shown as "⟨U+XXXX⟩": C1 controls, no-break and other
--- spaces, zero-width characters, separators, bidi controls, BOM.
local function invisible(cp)
  return (cp >= 0x80 and cp <= 0xA0) or cp == 0xAD or (cp >= 0x2000 and cp <= 0x200F) or (cp >= 0x2028 and cp <= 0x202F)
    or (cp >= 0x205F and cp <= 0x206F) or cp == 0x3000 or cp == 0xFEFF
end

--- The character of `s` at byte `at` (a special lead byte) and how it is
--- shown (nil: as it is).
local function special_at(s, at)
  local b = s:byte(at)
  if b == 32 then
    return ' ', '␠'
  elseif b == 10 then
    return '\n', '⏎'
  elseif b == 9 then
    return '\t', '⇥'
  elseif b < 32 then
    return string.char(b), vim.fn.nr2char(0x2400 + b)
  elseif b == 127 then
    return '\127', '␡'
  end
  local len = b >= 0xE0 and 3 or 2
  local ch = s:sub(at, at + len - 1)
  if #ch < len or ch:find('[^\128-\191]', 2) then
    return s:sub(at, at), nil -- not UTF-8: Neovim shows the byte as <xx>
  end
  local cp
  if len == 2 then
    cp = (b - 0xC0) * 64 + (ch:byte(2) - 0x80)
  else
    cp = (b - 0xE0) * 4096 + (ch:byte(2) - 0x80) * 64 + (ch:byte(3) - 0x80)
  end
  if invisible(cp) then
    return ch, ('⟨U+%04X⟩'):format(cp)
  end
  return ch, nil
end

--- `s` cut to its first and last `VISIBLE_MAX / 2` bytes (between
--- characters), with the number of bytes left out between them.
local function bounded(s)
  if #s <= VISIBLE_MAX then
    return s
  end
  local half = VISIBLE_MAX / 2
  local head = s:sub(1, half):gsub('[\192-\255][\128-\191]*$', '')
  local tail = s:sub(-half):gsub('^[\128-\191]+', '')
  return ('%s⟨… %d bytes …⟩%s'):format(head, #s - #head - #tail, tail)
end

--- `v` (any value) as one line in which every character is visible (see
--- above); '' for nil. Also returns whether anything was replaced.
function M.visible(v)
  local raw = M.of(v)
  if not raw then
    return '', false
  end
  local s = bounded(raw):gsub('\r\n', '\n')
  local out, pos, n = {}, 1, #s
  while pos <= n do
    local at = s:find(SPECIAL, pos)
    if not at then
      out[#out + 1] = s:sub(pos)
      break
    end
    out[#out + 1] = s:sub(pos, at - 1)
    local ch, shown = special_at(s, at)
    local len, run = #ch, 1
    while s:sub(at + run * len, at + run * len + len - 1) == ch do
      run = run + 1
    end
    if not shown or (ch == ' ' and run < RUN_MIN) then
      out[#out + 1] = ch:rep(run)
    elseif run >= RUN_MIN then
      out[#out + 1] = ('%s×%d'):format(shown, run)
    else
      out[#out + 1] = shown:rep(run)
    end
    pos = at + run * len
  end
  local shown = table.concat(out)
  return shown, shown ~= raw
end

-- Not strdisplaywidth: it counts 'breakindent' and 'showbreak' of the
-- current window.
local function width(s)
  return vim.api.nvim_strwidth(s)
end

--- The first (or, with `from_end`, the last) characters of `s` that fit
--- in `cells` display cells.
function M.take(s, cells, from_end)
  -- A cell takes at most a few bytes: looking at more of a long line is
  -- wasted work.
  local max_bytes = cells * 8 + 8
  if #s > max_bytes then
    if from_end then
      s = s:sub(-max_bytes):gsub('^[\128-\191]+', '')
    else
      s = s:sub(1, max_bytes):gsub('[\192-\255][\128-\191]*$', '')
    end
  end
  if not s:find('[\128-\255]') then
    return from_end and s:sub(-cells) or s:sub(1, cells)
  end
  local chars = vim.fn.strchars(s)
  local lo, hi = 0, chars
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    local part = from_end and vim.fn.strcharpart(s, chars - mid) or vim.fn.strcharpart(s, 0, mid)
    if width(part) <= cells then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return from_end and vim.fn.strcharpart(s, chars - lo) or vim.fn.strcharpart(s, 0, lo)
end

--- `v` as one visible line of at most `cells` display cells: its start
--- and its end around "…" when longer. Returns the line and whether it
--- differs from `v` (shortened, or characters replaced).
function M.fit(v, cells)
  local s, changed = M.visible(v)
  if width(s) <= cells then
    return s, changed
  end
  local room = math.max(cells - 1, 2)
  local head = M.take(s, math.ceil(room / 2))
  return head .. '…' .. M.take(s, room - width(head), true), true
end

--- Appends to `out` the rows of `line` (made visible) wrapped at `cells`
--- display cells, at most `limit` of them: from its start, or from its end
--- (then in reverse order).
local function wrap(line, cells, out, limit, from_end)
  if line == '' then
    out[#out + 1] = ''
    return
  end
  local n = 0
  while line ~= '' and n < limit do
    local row = M.take(line, cells, from_end)
    if row == '' then -- a character wider than the row
      row = from_end and vim.fn.strcharpart(line, vim.fn.strchars(line) - 1) or vim.fn.strcharpart(line, 0, 1)
    end
    out[#out + 1] = row
    n = n + 1
    line = from_end and line:sub(1, #line - #row) or line:sub(#row + 1)
  end
end

--- `v` as at most `max_rows` rows of at most `cells` display cells: its
--- lines, made visible and wrapped; when there are more, the first rows,
--- a row "…" and the last rows. Returns the rows and whether they differ
--- from the text (rows left out, or characters replaced).
function M.rows(v, cells, max_rows)
  local s = bounded(M.of(v) or ''):gsub('\r\n', '\n')
  local lines = M.split(s)
  local rows, changed = {}, false
  for _, l in ipairs(lines) do
    local shown, c = M.visible(l)
    changed = changed or c
    wrap(shown, cells, rows, max_rows + 1 - #rows)
    if #rows > max_rows then
      break
    end
  end
  if #rows <= max_rows then
    return rows, changed
  end
  local tail_n = math.max(1, math.floor((max_rows - 1) / 3))
  local head_n = max_rows - 1 - tail_n
  -- The last rows, from the end of the text backwards.
  local tail = {}
  for i = #lines, 1, -1 do
    wrap(M.visible(lines[i]), cells, tail, tail_n - #tail, true)
    if #tail >= tail_n then
      break
    end
  end
  local out = vim.list_slice(rows, 1, head_n)
  out[#out + 1] = '…'
  for i = math.min(#tail, tail_n), 1, -1 do
    out[#out + 1] = tail[i]
  end
  return out, true
end

return M
