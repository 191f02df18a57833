-- Writes README.md's "every option with its default" block from the one default table,
-- `M.defaults` in lua/acp/config.lua: each option in the order of that file, its default as
-- written there, and the first sentence of its comment.
--
--   nvim -l scripts/readme_options.lua            (rewrites the block between the markers)
--   nvim -l scripts/readme_options.lua --check    (exit 1 when README.md is not up to date)
--
-- tests/test_readme.lua checks that README.md is what this script writes, and that the block
-- evaluates to the defaults themselves. Used as a module (`dofile`), it returns
-- { generate = fun(config_text): string, readme = fun(readme_text, block): string }.
local M = {}

M.begin_marker = '<!-- options:begin (generated from lua/acp/config.lua by scripts/readme_options.lua) -->'
M.end_marker = '<!-- options:end -->'

local WIDTH = 100

--- `s` with its single-quoted Lua strings in double quotes (as the README writes them), where
--- no quote or backslash is inside.
local function dquote(s)
  return (s:gsub("'([^'\"\\]*)'", '"%1"'))
end

--- Splits a value's source text from a comment after it (`-- ...` outside strings).
local function split_comment(rest)
  local quote
  local i = 1
  while i <= #rest do
    local c = rest:sub(i, i)
    if quote then
      if c == '\\' then
        i = i + 1
      elseif c == quote then
        quote = nil
      end
    elseif c == "'" or c == '"' then
      quote = c
    elseif rest:sub(i, i + 1) == '--' then
      return vim.trim(rest:sub(1, i - 1)), vim.trim(rest:sub(i + 2))
    end
    i = i + 1
  end
  return vim.trim(rest), nil
end

--- The first sentence of a comment (its lines joined), without the final period.
local function first_sentence(lines)
  local text = table.concat(lines, ' ')
  local depth = 0
  for i = 1, #text do
    local c = text:sub(i, i)
    if c == '(' or c == '[' or c == '{' then
      depth = depth + 1
    elseif c == ')' or c == ']' or c == '}' then
      depth = math.max(depth - 1, 0)
    elseif c == '.' and depth == 0 and (i == #text or text:sub(i + 1, i + 1) == ' ') then
      local before = text:sub(1, i - 1)
      if not (before:match('e%.g$') or before:match('i%.e$')) then
        return before
      end
    end
  end
  return (text:gsub('%.$', ''))
end

--- Words `words` packed into lines of at most `width` columns, each starting with `prefix`.
local function wrap(words, prefix, width, sep)
  local lines, line = {}, nil
  for _, w in ipairs(words) do
    if line and #line + #sep + #w > width then
      lines[#lines + 1] = line .. vim.trim(sep)
      line = nil
    end
    line = line and (line .. sep .. w) or (prefix .. w)
  end
  if line then
    lines[#lines + 1] = line
  end
  return lines
end

--- The lines of the default table's source, from `M.defaults = {` to its closing `}`.
local function defaults_source(config_text)
  local lines = vim.split(config_text, '\n', { plain = true })
  local first, last
  for i, l in ipairs(lines) do
    if not first and l:match('^M%.defaults%s*=%s*{%s*$') then
      first = i
    elseif first and l:match('^}') then
      last = i
      break
    end
  end
  assert(first and last, 'lua/acp/config.lua: no `M.defaults = {` ... `}` block')
  return vim.list_slice(lines, first + 1, last - 1)
end

--- Parses the default table's source lines into a tree of entries:
--- { key, value (source text), comment (lines), trailing (a comment on its own line),
---   children (for a table written over several lines), items (for a list) }.
local function parse(src)
  local root = { children = {} }
  local stack = { root }
  local pending = {}
  for _, raw in ipairs(src) do
    local line = vim.trim(raw)
    local top = stack[#stack]
    if line == '' then
      pending = {}
    elseif line:match('^%-%-') then
      pending[#pending + 1] = vim.trim(line:gsub('^%-%-+', ''))
    elseif line:match('^},?$') then
      table.remove(stack)
      pending = {}
    else
      local key, rest = line:match('^([%a_][%w_]*)%s*=%s*(.-)$')
      if key then
        local value, trailing = split_comment(rest)
        local entry = { key = key, comment = pending, trailing = trailing }
        pending = {}
        top.children[#top.children + 1] = entry
        if value == '{' then
          entry.children, entry.items = {}, {}
          stack[#stack + 1] = entry
        else
          entry.value = value:gsub(',$', '')
        end
      else
        -- A list item on its own line.
        local value = split_comment(line)
        top.items = top.items or {}
        top.items[#top.items + 1] = value:gsub(',$', '')
        pending = {}
      end
    end
  end
  return root
end

local emit

--- `comment` (if any) as `--` lines at `indent`, wrapped to the width.
local function emit_comment(out, comment, indent)
  if comment then
    for _, l in ipairs(wrap(vim.split(comment, ' '), indent .. '-- ', WIDTH, ' ')) do
      out[#out + 1] = l
    end
  end
end

--- Lines for `entry` at `indent` (a string of spaces).
local function emit_entry(out, entry, indent)
  local comment = entry.trailing or (#entry.comment > 0 and first_sentence(entry.comment)) or nil
  local head = indent .. entry.key .. ' = '
  local body
  if entry.children and #entry.children > 0 then
    local named_tables = true
    for _, c in ipairs(entry.children) do
      if not (c.value and c.value:match('^{.*}$')) then
        named_tables = false
      end
    end
    if named_tables and #entry.children > 2 then
      -- User-named entries (the agents): their names only.
      local names = {}
      for _, c in ipairs(entry.children) do
        names[#names + 1] = c.key
      end
      body = '{ --[[ ' .. table.concat(names, ', ') .. ' ]] },'
    else
      emit_comment(out, comment, indent)
      out[#out + 1] = head .. '{'
      emit(out, entry.children, indent .. '  ')
      out[#out + 1] = indent .. '},'
      return
    end
  elseif entry.items and #entry.items > 0 then
    local items = vim.tbl_map(dquote, entry.items)
    local one = head .. '{ ' .. table.concat(items, ', ') .. ' },'
    if #one <= WIDTH then
      body = one:sub(#head + 1)
    else
      emit_comment(out, comment, indent)
      out[#out + 1] = head .. '{'
      for _, l in ipairs(wrap(items, indent .. '  ', WIDTH - 1, ', ')) do
        out[#out + 1] = l
      end
      out[#out] = out[#out] .. ','

      out[#out + 1] = indent .. '},'
      return
    end
  elseif entry.items then
    body = '{},'
  else
    body = dquote(entry.value) .. ','
  end
  local line = head .. body
  if comment and #line + 4 + #comment <= WIDTH then
    out[#out + 1] = line .. ' -- ' .. comment
    return
  end
  emit_comment(out, comment, indent)
  out[#out + 1] = line
end

emit = function(out, entries, indent)
  for _, e in ipairs(entries) do
    emit_entry(out, e, indent)
  end
end

--- The README block (markers included) for config.lua's text.
function M.generate(config_text)
  local tree = parse(defaults_source(config_text))
  local out = { M.begin_marker, '', '```lua', 'require("acp").setup({' }
  emit(out, tree.children, '  ')
  vim.list_extend(out, { '})', '```', '', M.end_marker })
  return table.concat(out, '\n')
end

--- `readme` with the block between the markers replaced by `block`.
function M.readme(readme, block)
  local s = readme:find(M.begin_marker, 1, true)
  local e = readme:find(M.end_marker, 1, true)
  assert(s and e and e > s, 'README.md has no ' .. M.begin_marker .. ' ... ' .. M.end_marker .. ' block')
  return readme:sub(1, s - 1) .. block .. readme:sub(e + #M.end_marker)
end

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

-- Run as a script (`nvim -l`): not when another file loads it as a module.
if _G.arg and _G.arg[0] and _G.arg[0]:match('readme_options%.lua$') then
  local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
  local readme_path = root .. '/README.md'
  local old = read(readme_path)
  local new = M.readme(old, M.generate(read(root .. '/lua/acp/config.lua')))
  if _G.arg[1] == '--check' then
    if new ~= old then
      io.stderr:write('README.md: the options block is not what lua/acp/config.lua gives; run nvim -l scripts/readme_options.lua\n')
      os.exit(1)
    end
    io.stdout:write('README.md: the options block is up to date\n')
  elseif new ~= old then
    local f = assert(io.open(readme_path, 'wb'))
    f:write(new)
    f:close()
    io.stdout:write('README.md: options block rewritten\n')
  else
    io.stdout:write('README.md: the options block is up to date\n')
  end
end

return M
