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

return M
