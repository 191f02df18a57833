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
--- Also: highlighting is suspended while a flood of text streams in (parsing
--- cost grows with the document, so re-parsing per frame would keep the main
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
  end)
  if ok then
    registered = M.lang
    -- `vim.treesitter.get_parser(buf)` of a chat then returns the parser
    -- the highlighter already keeps, instead of building a second one.
    vim.treesitter.language.register(M.lang, { 'acpchat', 'acpchat_input' })
  end
  return registered
end

--- Starts highlighting `buf`. Returns false when Tree-sitter cannot.
function M.start(buf)
  return (pcall(vim.treesitter.start, buf, M.language()))
end

function M.stop(buf)
  pcall(vim.treesitter.stop, buf)
end

function M.active(buf)
  return vim.treesitter.highlighter.active[buf] ~= nil
end

return M
