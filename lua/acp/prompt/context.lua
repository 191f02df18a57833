--- Context attached to prompts: the pending items of a chat (selections,
--- files, buffers, images), the `@` mentions resolved at send time, and the
--- ACP content blocks built from both.
---
--- A text source becomes an embedded `resource` when the agent accepts
--- embedded context (`promptCapabilities.embeddedContext`), else a
--- `resource_link` (plus the text itself as a text block when the agent
--- cannot read it from disk: a selection, unsaved edits). Buffers that are
--- not files get a stable `untitled:buffer-N` URI and their text is always
--- sent.
local M = {}

local api = vim.api
local ns = api.nvim_create_namespace('acp_context')

api.nvim_set_hl(0, 'AcpContextIndex', { link = 'Special', default = true })
api.nvim_set_hl(0, 'AcpContextItem', { link = 'Identifier', default = true })
api.nvim_set_hl(0, 'AcpContextDetail', { link = 'Comment', default = true })

local function options()
  return require('acp.config').options.context
end

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.WARN)
end

-- MIME types -------------------------------------------------------------

M.mime_by_filetype = {
  bash = 'text/x-shellscript',
  c = 'text/x-c',
  cpp = 'text/x-c++',
  cs = 'text/x-csharp',
  css = 'text/css',
  csv = 'text/csv',
  diff = 'text/x-diff',
  go = 'text/x-go',
  html = 'text/html',
  java = 'text/x-java',
  javascript = 'text/javascript',
  javascriptreact = 'text/javascript',
  json = 'application/json',
  jsonc = 'application/json',
  kotlin = 'text/x-kotlin',
  lua = 'text/x-lua',
  make = 'text/x-makefile',
  markdown = 'text/markdown',
  php = 'application/x-httpd-php',
  python = 'text/x-python',
  ruby = 'text/x-ruby',
  rust = 'text/x-rust',
  scss = 'text/x-scss',
  sh = 'text/x-shellscript',
  sql = 'application/sql',
  svg = 'image/svg+xml',
  swift = 'text/x-swift',
  text = 'text/plain',
  toml = 'application/toml',
  typescript = 'text/x-typescript',
  typescriptreact = 'text/x-typescript',
  vim = 'text/x-vim',
  xml = 'application/xml',
  yaml = 'application/yaml',
  zsh = 'text/x-shellscript',
}

--- The MIME type of text with filetype `ft` ('' gives text/plain).
function M.mime_type(ft)
  if not ft or ft == '' then
    return 'text/plain'
  end
  return M.mime_by_filetype[ft] or ('text/x-' .. ft)
end

-- Sources: where a piece of text comes from -------------------------------

--- `path` relative to `root` when inside it, else with `~` for $HOME.
function M.relpath(root, path)
  if root and root ~= '' then
    local prefix = root:sub(-1) == '/' and root or (root .. '/')
    if path:sub(1, #prefix) == prefix then
      return path:sub(#prefix + 1)
    end
  end
  return vim.fn.fnamemodify(path, ':~')
end

--- True for buffers of the chat itself (never a source of context).
local function is_chat_buf(buf)
  local ft = vim.bo[buf].filetype
  return ft == 'acpchat' or ft == 'acpchat_input' or ft == 'acppermission'
end

--- Buffers whose text or diagnostics can be context: files and scratch
--- buffers, not the chat, terminals, quickfix lists or prompts.
local function is_source_buf(buf)
  if not api.nvim_buf_is_valid(buf) or is_chat_buf(buf) then
    return false
  end
  local bt = vim.bo[buf].buftype
  return bt == '' or bt == 'nofile' or bt == 'nowrite' or bt == 'acwrite'
end

--- Describes buffer `buf`: { path?, uri, label, ft, untitled }. File
--- buffers get a file URI; unnamed and special buffers `untitled:buffer-N`.
function M.buffer_source(buf, root)
  local name = api.nvim_buf_get_name(buf)
  local ft = vim.bo[buf].filetype
  if name ~= '' and vim.bo[buf].buftype == '' and not name:match('^%a[%w+.-]*://') then
    local path = vim.fs.normalize(vim.fn.fnamemodify(name, ':p'))
    return { path = path, uri = vim.uri_from_fname(path), label = M.relpath(root, path), ft = ft }
  end
  local id = ('buffer-%d'):format(buf)
  return { uri = 'untitled:' .. id, label = 'untitled:' .. id, ft = ft, untitled = true }
end

local function buffer_text(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local text = table.concat(lines, '\n')
  if vim.bo[buf].eol and not (#lines == 1 and lines[1] == '') then
    text = text .. '\n'
  end
  return text
end

--- The loaded buffer showing file `path`, if any.
local function loaded_buffer(path)
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == '' then
      local name = api.nvim_buf_get_name(b)
      if name ~= '' and vim.fs.normalize(vim.fn.fnamemodify(name, ':p')) == path then
        return b
      end
    end
  end
end

-- Selections ----------------------------------------------------------------

--- Captures the region between getpos-style positions `p1` and `p2` of the
--- current buffer, in visual mode `mode` ('v', 'V' or CTRL-V), as a
--- selection item. Character- and block-wise regions are exactly what was
--- selected; a line-wise one is whole lines, each ending in a newline.
local function capture_region(p1, p2, mode, root)
  local buf = api.nvim_get_current_buf()
  if mode ~= 'v' and mode ~= 'V' and mode ~= '\22' then
    mode = 'V'
  end
  if p1[2] > p2[2] or (p1[2] == p2[2] and p1[3] > p2[3]) then
    p1, p2 = p2, p1
  end
  local ok, lines = pcall(vim.fn.getregion, p1, p2, { type = mode })
  if not ok or type(lines) ~= 'table' or #lines == 0 then
    return nil, 'the selection is empty'
  end
  local text = table.concat(lines, '\n')
  if mode == 'V' then
    text = text .. '\n'
  end
  local l1, l2 = p1[2], p2[2]
  local range = l1 == l2 and ('#L%d'):format(l1) or ('#L%d-L%d'):format(l1, l2)
  local src = M.buffer_source(buf, root)
  local count = l2 - l1 + 1
  local how = ({ v = ', characters', V = '', ['\22'] = ', block' })[mode]
  return {
    kind = 'selection',
    label = src.label .. range,
    uri = src.uri .. range,
    path = src.path,
    untitled = src.untitled,
    ft = src.ft,
    mode = mode,
    text = text,
    detail = (count == 1 and '1 line' or ('%d lines'):format(count)) .. how,
  }
end

--- The selection given by an Ex range of the current buffer: the visual
--- selection (character, line or block) when the range is the one of the
--- last visual selection (`:'<,'>`), else whole lines `line1`..`line2`.
function M.capture_range(line1, line2, root)
  local v1, v2 = vim.fn.getpos("'<"), vim.fn.getpos("'>")
  if v1[2] == line1 and v2[2] == line2 and v1[2] > 0 then
    return capture_region(v1, v2, vim.fn.visualmode(), root)
  end
  local last = api.nvim_buf_line_count(0)
  if line1 < 1 or line2 > last then
    return nil, ('the range %d,%d is outside the buffer'):format(line1, line2)
  end
  return capture_region({ 0, line1, 1, 0 }, { 0, line2, vim.v.maxcol, 0 }, 'V', root)
end

--- The last visual selection made outside the chat, as an item (`@selection`).
function M.last_selection(root)
  local buf = M.last_visual_buf
  if not (buf and api.nvim_buf_is_valid(buf) and api.nvim_buf_is_loaded(buf)) then
    buf = M.source_buf
  end
  if not (buf and api.nvim_buf_is_valid(buf) and api.nvim_buf_is_loaded(buf)) then
    return nil, 'no visual selection yet'
  end
  return api.nvim_buf_call(buf, function()
    local v1, v2 = vim.fn.getpos("'<"), vim.fn.getpos("'>")
    if v1[2] == 0 then
      return nil, 'no visual selection yet'
    end
    return capture_region(v1, v2, vim.fn.visualmode(), root)
  end)
end

-- The chat's pending items ------------------------------------------------------

---@param view acp.ChatView
function M.items(view)
  return view.context
end

--- Shows the pending items above the input text, one virtual line each, and
--- grows the input window by as many lines (up to 5).
function M.render(view)
  local buf = view.input
  if not (buf and api.nvim_buf_is_valid(buf)) then
    return
  end
  local items = M.items(view)
  api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  if #items > 0 then
    local vl = {}
    for i, it in ipairs(items) do
      vl[i] = {
        { ('%d '):format(i), 'AcpContextIndex' },
        { '@' .. it.label, 'AcpContextItem' },
        { it.detail and ('  ' .. it.detail) or '', 'AcpContextDetail' },
      }
    end
    api.nvim_buf_set_extmark(buf, ns, 0, 0, { virt_lines = vl, virt_lines_above = true, right_gravity = false })
  end
  local win = view.input_win
  if win and api.nvim_win_is_valid(win) then
    local base = require('acp.config').options.chat.input_height
    pcall(api.nvim_win_set_height, win, base + math.min(#items, 5))
    -- Lines above the first line show only with the view scrolled to the top.
    api.nvim_win_call(win, function()
      local v = vim.fn.winsaveview()
      if v.topline == 1 then
        vim.fn.winrestview({ topline = 1, topfill = #items })
      end
    end)
  end
end

--- The pending items as shown (for tests and `:AcpContext`).
function M.lines(view)
  local out = {}
  for i, it in ipairs(M.items(view)) do
    out[i] = ('%d @%s%s'):format(i, it.label, it.detail and ('  ' .. it.detail) or '')
  end
  return out
end

function M.add(view, item)
  local items = M.items(view)
  for _, it in ipairs(items) do
    if it.uri and it.uri == item.uri and it.kind == item.kind and it.text == item.text then
      notify('@' .. item.label .. ' is already attached', vim.log.levels.INFO)
      return false
    end
  end
  items[#items + 1] = item
  M.render(view)
  return true
end

function M.remove(view, n)
  local items = M.items(view)
  if #items == 0 then
    notify('no context to remove', vim.log.levels.INFO)
    return false
  end
  n = n or #items
  if type(n) ~= 'number' or n < 1 or n > #items or n % 1 ~= 0 then
    notify(('no context item %s (there are %d)'):format(tostring(n), #items))
    return false
  end
  table.remove(items, n)
  M.render(view)
  return true
end

function M.clear(view)
  view.context = {}
  M.render(view)
end

-- Capabilities ---------------------------------------------------------------

--- The agent's prompt capabilities (a table) once known (from the chat's
--- `agent` event), and the chat's state.
---@param view acp.ChatView
---@return acp.PromptCapabilities?, acp.TurnState
function M.caps(view)
  local ac = view.capabilities
  if type(ac) ~= 'table' then
    return nil, view.state
  end
  local pc = ac.promptCapabilities
  return type(pc) == 'table' and pc or {}, view.state
end

--- Calls `fn(caps)` once the agent's capabilities are known (at once when
--- they are); `caps` is {} when the agent never got ready (disconnected,
--- or no answer within `timeout_ms`). Never blocks.
---@param view acp.ChatView
---@param fn fun(caps: acp.PromptCapabilities)
---@param timeout_ms? integer
function M.when_ready(view, fn, timeout_ms)
  view:when_agent(function()
    fn(M.caps(view) or {})
  end, timeout_ms)
end

-- Content blocks --------------------------------------------------------------------

--- A fence that the text cannot close.
local function fence_for(text)
  local longest = 2
  for run in text:gmatch('`+') do
    longest = math.max(longest, #run)
  end
  return ('`'):rep(longest + 1)
end

--- The text of a source as a text block (for agents that cannot take it
--- embedded, or sources that are no file).
local function text_block(res)
  if res.kind == 'diagnostics' then
    return { type = 'text', text = ('Diagnostics of %s:\n%s'):format(res.name, res.text) }
  end
  local fence = fence_for(res.text)
  local body = res.text:sub(-1) == '\n' and res.text or (res.text .. '\n')
  return { type = 'text', text = ('%s:\n%s%s\n%s%s'):format(res.name, fence, res.ft or '', body, fence) }
end

--- Content blocks for a text source `res`:
--- { uri, name, mime, text?, size?, ft?, untitled?, always_embed?, inline?, kind? }
local function source_blocks(res, caps)
  local max = options().embed_max_bytes
  local embeddable = res.text ~= nil and (res.always_embed or #res.text <= max)
  if caps.embeddedContext and embeddable then
    return { { type = 'resource', resource = { uri = res.uri, text = res.text, mimeType = res.mime } } }
  end
  if res.untitled then
    return { text_block(res) }
  end
  local link = { type = 'resource_link', uri = res.uri, name = res.name, mimeType = res.mime, size = res.size }
  if res.inline and res.text then
    return { link, text_block(res) }
  end
  return { link }
end

local function selection_source(item)
  return {
    uri = item.uri,
    name = item.label,
    mime = M.mime_type(item.ft),
    text = item.text,
    ft = item.ft,
    untitled = item.untitled,
    always_embed = true,
    inline = true,
  }
end

--- At most `limit` bytes of a regular file, opened non-blocking and
--- checked on the descriptor (acp.editor.open.read_regular): a FIFO is never
--- waited on.
local function read_file(path, limit)
  return require('acp.editor.open').read_regular(path, limit)
end

--- A file (or the loaded buffer showing it) as a source. Reads the file only
--- when it may be embedded.
function M.file_source(view, path, caps)
  local root = view.root
  local buf = loaded_buffer(path)
  if buf then
    local src = M.buffer_source(buf, root)
    local text = buffer_text(buf)
    local stat = vim.uv.fs_stat(path)
    local modified = vim.bo[buf].modified
    return {
      uri = src.uri,
      name = src.label,
      mime = M.mime_type(src.ft),
      text = text,
      ft = src.ft,
      size = stat and stat.size or #text,
      -- Unsaved edits only exist here: send them even as a link.
      inline = modified and #text <= options().embed_max_bytes,
    }
  end
  local stat = vim.uv.fs_stat(path)
  if not stat then
    return nil, path .. ': no such file'
  end
  local uri, name = vim.uri_from_fname(path), M.relpath(root, path)
  if stat.type == 'directory' then
    return { uri = uri, name = name .. '/', size = nil, mime = 'inode/directory' }
  elseif stat.type ~= 'file' then
    -- Opening a FIFO for reading waits for a writer; a device may never end.
    local what = ({ fifo = 'a named pipe (FIFO)', socket = 'a socket', char = 'a character device', block = 'a block device' })[stat.type]
    return nil, ('%s: %s, not a regular file'):format(name, what or stat.type)
  end
  local ft = vim.filetype.match({ filename = path }) or ''
  local res = { uri = uri, name = name, mime = M.mime_type(ft), size = stat.size, ft = ft }
  if caps.embeddedContext and stat.size <= options().embed_max_bytes then
    local data, err = read_file(path, stat.size + 1)
    if not data then
      return nil, ('%s: %s'):format(name, tostring(err))
    end
    if not data:find('\0', 1, true) then
      res.text = data
    end
  end
  return res
end

function M.buffer_source_text(view, buf)
  local src = M.buffer_source(buf, view.root)
  if src.path then
    return M.file_source(view, src.path, { embeddedContext = true })
  end
  return {
    uri = src.uri,
    name = src.label,
    mime = M.mime_type(src.ft),
    text = buffer_text(buf),
    ft = src.ft,
    untitled = true,
    always_embed = true,
  }
end

local severity_names = { 'error', 'warning', 'info', 'hint' }

--- The diagnostics of buffer `buf` as a source.
function M.diagnostics_source(view, buf)
  local src = M.buffer_source(buf, view.root)
  local diags = vim.diagnostic.get(buf)
  table.sort(diags, function(a, b)
    if a.lnum ~= b.lnum then
      return a.lnum < b.lnum
    end
    return a.col < b.col
  end)
  local lines = {}
  for _, d in ipairs(diags) do
    local msg = tostring(d.message):gsub('\n', ' ')
    lines[#lines + 1] = ('%s:%d:%d: %s: %s%s'):format(
      src.label,
      d.lnum + 1,
      d.col + 1,
      severity_names[d.severity] or 'error',
      msg,
      d.source and (' [' .. d.source .. ']') or ''
    )
  end
  local text = #lines > 0 and (table.concat(lines, '\n') .. '\n') or 'No diagnostics.\n'
  local uri = src.path and ('diagnostics' .. vim.uri_from_fname(src.path):sub(5)) or ('diagnostics:buffer-%d'):format(buf)
  return {
    kind = 'diagnostics',
    uri = uri,
    name = src.label,
    mime = 'text/plain',
    text = text,
    untitled = true,
    always_embed = true,
  }
end

--- The buffer the user worked in before the chat (for `@diagnostics`).
function M.source_buffer()
  local buf = M.source_buf
  if buf and api.nvim_buf_is_valid(buf) then
    return buf
  end
end

--- Content blocks of a pending item.
function M.item_blocks(view, item, caps)
  if item.kind == 'image' then
    return { { type = 'image', data = item.data, mimeType = item.mime, uri = item.uri } }
  elseif item.kind == 'selection' then
    return source_blocks(selection_source(item), caps)
  elseif item.kind == 'file' then
    local res, err = M.file_source(view, item.path, caps)
    if not res then
      return nil, err
    end
    return source_blocks(res, caps)
  elseif item.kind == 'buffer' then
    if not api.nvim_buf_is_valid(item.buf) then
      return nil, ('@%s: the buffer is gone'):format(item.label)
    end
    return source_blocks(M.buffer_source_text(view, item.buf), caps)
  end
  return nil, 'unknown context item ' .. tostring(item.kind)
end

-- Mentions ------------------------------------------------------------------

--- Resolves mention `token` (the text after `@`) to a source, or nil.
function M.resolve_mention(view, token, caps)
  if token == 'diagnostics' then
    local buf = M.source_buffer()
    if not buf then
      return nil, '@diagnostics: no buffer to take diagnostics from'
    end
    return M.diagnostics_source(view, buf)
  elseif token == 'selection' then
    local item, err = M.last_selection(view.root)
    if not item then
      return nil, '@selection: ' .. err
    end
    return selection_source(item)
  end
  local n = token:match('^buffer:(%d+)$') or token:match('^untitled:buffer%-(%d+)$')
  if n then
    local buf = tonumber(n)
    if not (api.nvim_buf_is_valid(buf) and api.nvim_buf_is_loaded(buf)) then
      return nil, ('@%s: no such buffer'):format(token)
    end
    return M.buffer_source_text(view, buf)
  end
  -- The token is text the agent may have chosen (a file it created, a
  -- slash command it announced): only a leading `~/` is expanded, never
  -- with expand(), which runs backtick commands; `$VAR` stays literal.
  local path = require('acp.util.escape').home(token)
  if path:sub(1, 1) ~= '/' then
    path = (view.root or vim.fn.getcwd()) .. '/' .. path
  end
  path = vim.fs.normalize(path, { expand_env = false })
  if not (loaded_buffer(path) or vim.uv.fs_stat(path)) then
    return nil
  end
  return M.file_source(view, path, caps)
end

--- The mentions in `text`: `@token` at the start or after white space.
--- Trailing punctuation is dropped when the token does not resolve with it.
function M.mentions(view, text, caps)
  local out, seen, warnings = {}, {}, {}
  for token in (' ' .. text):gmatch('%s@(%S+)') do
    local candidates = { token }
    local trimmed = token:gsub('[%.,;:!%?%)%]\'"]+$', '')
    if trimmed ~= token and trimmed ~= '' then
      candidates[2] = trimmed
    end
    for _, t in ipairs(candidates) do
      local res, err = M.resolve_mention(view, t, caps)
      if res then
        if not seen[res.uri] then
          seen[res.uri] = true
          out[#out + 1] = res
        end
        break
      elseif err then
        warnings[#warnings + 1] = err
        break
      end
    end
  end
  return out, warnings
end

--- Builds the prompt's content blocks: the text, then the pending items in
--- the order added, then `opts.context` items, then the mentions in the
--- order they appear. Returns the blocks; nil and a message when the prompt
--- cannot go; false when it waits for the agent's capabilities (it is sent
--- by `view:send` again once they are known).
function M.build(view, text, opts)
  opts = opts or {}
  local items = {}
  vim.list_extend(items, M.items(view))
  vim.list_extend(items, opts.context or {})
  local has_mention = (' ' .. text):find('%s@%S') ~= nil
  if #items == 0 and not has_mention then
    if text == '' then
      return nil, 'nothing to send'
    end
    return { { type = 'text', text = text } }
  end
  local caps, state = M.caps(view)
  if not caps and state == 'connecting' and not opts.waited then
    M.when_ready(view, function()
      local again = vim.tbl_extend('force', opts, { waited = true })
      view:send(text, again)
    end)
    return false
  end
  caps = caps or {}
  for i, it in ipairs(items) do
    if it.kind == 'image' and not caps.image then
      return nil,
        ('agent `%s` does not accept images; remove @%s first (:AcpContext remove %d)'):format(view.agent, it.label, i)
    end
  end
  local blocks = {}
  if text ~= '' then
    blocks[1] = { type = 'text', text = text }
  end
  for _, it in ipairs(items) do
    local b, err = M.item_blocks(view, it, caps)
    if not b then
      return nil, err
    end
    vim.list_extend(blocks, b)
  end
  if has_mention then
    local sources, warnings = M.mentions(view, text, caps)
    for _, w in ipairs(warnings) do
      notify(w)
    end
    for _, res in ipairs(sources) do
      vim.list_extend(blocks, source_blocks(res, caps))
    end
  end
  if #blocks == 0 then
    return nil, 'nothing to send'
  end
  return blocks
end

--- After a prompt built by `build` was accepted: the pending items went with it.
function M.sent(view)
  if view.context and #view.context > 0 then
    M.clear(view)
  end
end

-- Tracking and commands -----------------------------------------------------

local tracking

--- Remembers the last buffer worked in outside the chat (for
--- `@diagnostics`) and the last buffer with a visual selection.
local function track()
  if tracking then
    return
  end
  tracking = true
  local group = api.nvim_create_augroup('acp_context', { clear = true })
  api.nvim_create_autocmd('BufEnter', {
    group = group,
    callback = function(ev)
      if is_source_buf(ev.buf) then
        M.source_buf = ev.buf
      end
    end,
  })
  api.nvim_create_autocmd('ModeChanged', {
    group = group,
    pattern = '[vV\22]*:*',
    callback = function()
      local buf = api.nvim_get_current_buf()
      if is_source_buf(buf) then
        M.last_visual_buf = buf
      end
    end,
  })
end

--- Sets up the context of a new chat: the pending list, the removal key and
--- the tracking of the source buffer. Called for each new chat
--- (acp.prompt.attach, from ChatView.new).
function M.attach(view)
  local cur = api.nvim_get_current_buf()
  if is_source_buf(cur) and cur ~= view.input and cur ~= view.buf then
    M.source_buf = cur
  end
  track()
  vim.keymap.set('n', '<BS>', function()
    M.remove(view, vim.v.count > 0 and vim.v.count or nil)
  end, { buffer = view.input, nowait = true, silent = true, desc = 'Remove a context item ([count] or the last)' })
end

--- What `:AcpAdd` adds: the selection (with a range), a file (with an
--- argument) or the current buffer (neither), labelled relative to
--- `root`; nil and why not. The command itself is acp.chat.commands'.
function M.command_item(o, root)
  if o.range > 0 then
    if is_chat_buf(api.nvim_get_current_buf()) then
      return nil, 'select text in a file or buffer, not in the chat'
    end
    return M.capture_range(o.line1, o.line2, root)
  elseif o.args ~= '' then
    -- A completed file name can be any text (an agent's file): `%`, `#` and
    -- `~` only, never expand() (backticks run commands).
    local path = vim.fs.normalize(vim.fn.fnamemodify(require('acp.util.escape').arg_path(o.args), ':p'), { expand_env = false })
    local stat = vim.uv.fs_stat(path)
    if not stat then
      return nil, o.args .. ': no such file or directory'
    end
    return { kind = 'file', path = path:gsub('(.)/$', '%1'), label = M.relpath(root, path) }
  else
    local buf = api.nvim_get_current_buf()
    if is_chat_buf(buf) then
      return nil, ':AcpAdd adds the current buffer; this is the chat'
    end
    local src = M.buffer_source(buf, root)
    return { kind = 'buffer', buf = buf, label = src.label, uri = src.uri }
  end
end

--- The live visual selection as an item (visual mode ends), labelled
--- relative to `root`; nil and why not (for `<Plug>(AcpAddSelection)`).
function M.visual_item(root)
  local mode = vim.fn.mode()
  if not (mode == 'v' or mode == 'V' or mode == '\22') then
    return nil, '<Plug>(AcpAddSelection) works in visual mode'
  end
  api.nvim_feedkeys(api.nvim_replace_termcodes('<Esc>', true, false, true), 'nx', false)
  if is_chat_buf(api.nvim_get_current_buf()) then
    return nil, 'select text in a file or buffer, not in the chat'
  end
  return capture_region(vim.fn.getpos("'<"), vim.fn.getpos("'>"), mode, root)
end

--- `:AcpContext [list | clear | remove {n}]` for `view`, the tab's chat
--- (nil without one).
function M.command(o, view)
  local sub, arg = o.fargs[1] or 'list', o.fargs[2]
  if not view then
    return notify('no chat in this tab', vim.log.levels.INFO)
  end
  if sub == 'list' then
    local lines = M.lines(view)
    require('acp.util.escape').notify(#lines == 0 and 'acp.nvim: no context attached' or table.concat(lines, '\n'))
  elseif sub == 'clear' then
    M.clear(view)
  elseif sub == 'remove' then
    local n = arg and tonumber(arg)
    if arg and not n then
      return notify(':AcpContext remove takes an item number, got ' .. arg)
    end
    M.remove(view, n)
  else
    notify(('unknown :AcpContext subcommand %q (list, clear, remove {n})'):format(sub))
  end
end

return M
