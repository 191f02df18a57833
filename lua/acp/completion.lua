--- `@` mentions and `/` commands for completion plugins. The sources
--- themselves live in lua/blink-cmp-acp (blink.cmp) and lua/cmp_acp
--- (nvim-cmp): thin adapters over `M.complete`. Whether the built-in popup
--- steps aside for them is decided in acp.prompt.popup. Above the prompt
--- layer (its mentions and commands), below the chat (a new chat
--- registers the nvim-cmp source).
-- May use: prompt, util.
local M = {}

--- What can be completed at byte `col` (0-based) of 1-based `row` in the
--- chat input `buf`: the 0-based byte column where the replaced text
--- starts, and the items; nil when the cursor is not in a mention or
--- command, or `buf` is no chat input.
---@param buf integer
---@param row integer
---@param line string
---@param col integer
---@return { start: integer, items: { word: string, label: string, detail?: string, doc?: string, kind: 'command'|'file'|'buffer'|'special', data: table }[] }?
function M.complete(buf, row, line, col)
  local mention = require('acp.prompt.mention')
  local view = mention.views[buf]
  if not view then
    return nil
  end
  local name = require('acp.prompt.slash').command_at(row, line, col)
  if name then
    local commands = {}
    for _, c in ipairs(view.info.commands or {}) do
      if type(c) == 'table' and type(c.name) == 'string' then
        commands['/' .. c.name] = c
      end
    end
    local text = require('acp.util.text')
    local items = {}
    for _, it in ipairs(require('acp.prompt.slash').items(view, name)) do
      local c = commands[it.abbr] or {}
      local data = {
        kind = 'command',
        name = it.abbr,
        description = text.of(c.description),
        hint = type(c.input) == 'table' and text.of(c.input.hint) or nil,
      }
      items[#items + 1] = { word = it.word, label = it.abbr, detail = it.menu, doc = it.info, kind = 'command', data = data }
    end
    return { start = 0, items = items }
  end
  local at, base = mention.mention_at(line, col)
  if not at then
    return nil
  end
  local kinds = { file = 'file', buf = 'buffer', diag = 'special', sel = 'special' }
  local items = {}
  for _, it in ipairs(mention.candidates(view, base)) do
    local kind = kinds[it.kind] or 'file'
    local extra = type(it.user_data) == 'table' and it.user_data or {}
    local data = { kind = kind, name = it.abbr, detail = it.menu, path = extra.path, buf = extra.buf }
    items[#items + 1] = { word = it.word, label = '@' .. it.abbr, detail = it.menu, kind = kind, data = data }
  end
  -- The file list may be missing or old: refresh it for the next keystroke.
  for _, root in ipairs(mention.roots(view)) do
    if not mention.cache[root] then
      mention.refresh(root)
    end
  end
  return { start = at - 1, items = items }
end

--- LSP CompletionItemKind values (File, Reference, Keyword). Never Function
--- or Method: completion plugins append brackets to those (blink.cmp's
--- auto_brackets, nvim-autopairs' cmp recipe), and `/review` would be
--- sent as `/review ()`.
local LSP_KIND = { file = 17, buffer = 18, command = 14, special = 14 }

--- LSP InsertTextFormat.PlainText: the text is inserted as it is.
local PLAIN_TEXT = 1

--- The items of `complete()`'s result as LSP completion items (both plugin
--- sources use these), each replacing `res.start`..`col` on line `row`.
function M.lsp_items(res, row, col)
  local items = {}
  for _, it in ipairs(res.items) do
    items[#items + 1] = {
      label = it.label,
      kind = LSP_KIND[it.kind],
      filterText = it.word,
      labelDetails = it.detail and { description = it.detail } or nil,
      detail = it.detail,
      -- What `resolve` describes (the documentation comes from there).
      data = { acp = it.data },
      insertTextFormat = PLAIN_TEXT,
      textEdit = {
        newText = it.word,
        range = {
          start = { line = row - 1, character = res.start },
          ['end'] = { line = row - 1, character = col },
        },
      },
    }
  end
  return items
end

-- Documentation (the plugins' `resolve`) ----------------------------------------------

--- Bytes of a file read for its preview, lines shown, bytes of a line.
local PREVIEW_BYTES = 8192
local PREVIEW_LINES = 20
local LINE_BYTES = 200
--- Bytes and lines of a command's description shown.
local DESCRIPTION_BYTES = 2000
local DESCRIPTION_LINES = 30

--- `s` cut to at most `max` bytes, never inside a UTF-8 sequence.
local function cut(s, max)
  if #s <= max then
    return s, false
  end
  local i = max + 1
  -- Back to the lead byte of the sequence the cut falls in.
  while i > 1 and s:byte(i) and s:byte(i) >= 0x80 and s:byte(i) < 0xC0 do
    i = i - 1
  end
  return s:sub(1, i - 1), true
end

--- `s` as a markdown code span shown literally (any backticks in it).
local function code(s)
  s = require('acp.util.text').line(s, '')
  local longest = 0
  for run in s:gmatch('`+') do
    longest = math.max(longest, #run)
  end
  local ticks = ('`'):rep(longest + 1)
  local pad = (s:find('^[` ]') or s:find('[` ]$')) and ' ' or ''
  return ticks .. pad .. s .. pad .. ticks
end

--- `lines` as a fenced block shown literally, in language `lang`.
local function fence(lines, lang)
  local longest = 2
  for _, l in ipairs(lines) do
    for run in l:gmatch('```+') do
      longest = math.max(longest, #run)
    end
    for run in l:gmatch('~~~+') do
      longest = math.max(longest, #run)
    end
  end
  local f = ('`'):rep(longest + 1)
  return f .. (lang or 'text') .. '\n' .. table.concat(lines, '\n') .. '\n' .. f
end

local function size(n)
  if n < 1024 then
    return ('%d bytes'):format(n)
  elseif n < 1024 * 1024 then
    return ('%.1f KiB'):format(n / 1024)
  elseif n < 1024 * 1024 * 1024 then
    return ('%.1f MiB'):format(n / 1024 / 1024)
  end
  return ('%.1f GiB'):format(n / 1024 / 1024 / 1024)
end

--- The first lines of `lines` for a preview, each cut to LINE_BYTES; the
--- second value says whether lines were left out.
local function head(lines, more)
  local out = {}
  for i = 1, math.min(#lines, PREVIEW_LINES) do
    out[i] = (cut(lines[i], LINE_BYTES))
  end
  return out, more or #lines > PREVIEW_LINES
end

local function preview(header, lines, more, lang)
  local shown
  shown, more = head(lines, more)
  if #shown == 0 then
    return header
  end
  return header .. (more and (' · first %d lines'):format(#shown) or '') .. '\n\n' .. fence(shown, lang)
end

--- A `/` command: its name, the agent's description and input hint, as
--- text (never markdown the agent wrote), cut to a sane size.
local function command_doc(d)
  local text = require('acp.util.text')
  local parts = { code(d.name or '/') }
  if type(d.description) == 'string' and d.description ~= '' then
    local desc, cutoff = cut(d.description, DESCRIPTION_BYTES)
    local lines = text.split((desc:gsub('\r\n?', '\n')))
    if #lines > DESCRIPTION_LINES then
      lines, cutoff = vim.list_slice(lines, 1, DESCRIPTION_LINES), true
    end
    if cutoff then
      lines[#lines + 1] = '…'
    end
    parts[#parts + 1] = fence(lines)
  end
  if type(d.hint) == 'string' and d.hint ~= '' then
    parts[#parts + 1] = 'input: ' .. code((cut(d.hint, LINE_BYTES)))
  end
  return table.concat(parts, '\n\n')
end

local function lang_of(buf, path)
  local ft = buf and vim.bo[buf].filetype or vim.filetype.match({ filename = path })
  return ft ~= '' and ft or nil
end

--- A loaded buffer: its name, line count, whether it has unsaved changes,
--- and its first lines.
local function buffer_doc(d, buf, label)
  local api = vim.api
  if not (buf and api.nvim_buf_is_valid(buf) and api.nvim_buf_is_loaded(buf)) then
    return code(label) .. ' · the buffer is gone'
  end
  local n = api.nvim_buf_line_count(buf)
  local header = ('%s · buffer %d · %d line%s%s'):format(code(label), buf, n, n == 1 and '' or 's', vim.bo[buf].modified and ' · unsaved changes' or '')
  local lines = api.nvim_buf_get_lines(buf, 0, PREVIEW_LINES, false)
  if #lines == 1 and lines[1] == '' then
    return header
  end
  return preview(header, lines, n > PREVIEW_LINES, lang_of(buf))
end

--- The loaded buffer showing file `path`, if any.
local function loaded_buffer(path)
  local api = vim.api
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == '' then
      local name = api.nvim_buf_get_name(b)
      if name ~= '' and vim.fs.normalize(vim.fn.fnamemodify(name, ':p')) == path then
        return b
      end
    end
  end
end

local KINDS = { directory = 'a directory', fifo = 'a named pipe (FIFO)', socket = 'a socket', char = 'a character device', block = 'a block device', link = 'a link' }

--- Reads at most PREVIEW_BYTES of regular file `path` off the main thread
--- (libuv's file calls run in its thread pool; opened non-blocking and
--- checked on the descriptor, so a FIFO is never waited on); `done(data,
--- stat)` or `done(nil, nil, why)` runs on the main thread.
local function read_head(path, done)
  local uv = vim.uv
  local function finish(...)
    local args = { n = select('#', ...), ... }
    vim.schedule(function()
      done(unpack(args, 1, args.n))
    end)
  end
  uv.fs_stat(path, function(err, st)
    if not st then
      return finish(nil, nil, err and err:match('^ENOENT') and 'no such file' or tostring(err))
    elseif st.type ~= 'file' then
      return finish(nil, st, KINDS[st.type] or st.type)
    end
    local c = uv.constants or {}
    local flags = (c.O_RDONLY or 0) + (c.O_NONBLOCK or 0) + (c.O_NOCTTY or 0)
    uv.fs_open(path, flags, 0, function(oerr, fd)
      if not fd then
        return finish(nil, st, tostring(oerr))
      end
      uv.fs_fstat(fd, function(_, fst)
        if not fst or fst.type ~= 'file' then
          uv.fs_close(fd, function() end)
          return finish(nil, st, fst and (KINDS[fst.type] or fst.type) or 'gone')
        end
        uv.fs_read(fd, math.min(PREVIEW_BYTES, fst.size), 0, function(rerr, data)
          uv.fs_close(fd, function() end)
          if not data then
            return finish(nil, fst, tostring(rerr))
          end
          finish(data, fst)
        end)
      end)
    end)
  end)
end

--- A file: its path relative to the root, its size and its first lines
--- (from its loaded buffer, else read without blocking); to `give(md)`.
local function file_doc(d, give)
  local label = d.name or d.path
  local path = vim.fs.normalize(d.path, { expand_env = false })
  local buf = loaded_buffer(path)
  if buf then
    return give(buffer_doc(d, buf, label))
  end
  read_head(path, function(data, st, why)
    if not data then
      local header = code(label) .. (st and st.type == 'file' and (' · ' .. size(st.size)) or '')
      return give(('%s · %s'):format(header, why == 'no such file' and 'no such file (anymore)' or 'not shown: ' .. why))
    end
    local header = code(label) .. ' · ' .. size(st.size)
    if data:find('\0', 1, true) then
      return give(header .. ' · binary file, not shown')
    elseif data == '' then
      return give(header .. ' · empty')
    end
    local more = st.size > #data
    local lines = require('acp.util.text').split((data:gsub('\r\n', '\n')))
    if lines[#lines] == '' then
      lines[#lines] = nil
    elseif more and #lines > 1 then
      lines[#lines] = nil -- cut in the middle of a line
    end
    give(preview(header, lines, more, lang_of(nil, path)))
  end)
end

local function special_doc(d)
  if d.name == 'diagnostics' then
    return code('@diagnostics') .. ' · ' .. code(d.detail or '') .. '\n\nThe diagnostics of the buffer you came from go with the message.'
  end
  return code('@' .. (d.name or '')) .. '\n\nThe last visual selection made outside the chat goes with the message.'
end

--- Fills `documentation` (markdown) of an item of `lsp_items`: what a `/`
--- command does, a file's or buffer's first lines. `callback(item)` gets a
--- copy of `item` with it (both plugins take the item they are called
--- back with as the resolved one); on the main thread, maybe later (files
--- are read asynchronously). Always calls back.
---@param item table
---@param callback fun(item: table)
function M.resolve(item, callback)
  local called = false
  local function give(md)
    if called then
      return
    end
    called = true
    local out = {}
    for k, v in pairs(type(item) == 'table' and item or {}) do
      out[k] = v
    end
    if md then
      out.documentation = { kind = 'markdown', value = md }
    end
    callback(out)
  end
  local d = type(item) == 'table' and type(item.data) == 'table' and item.data.acp
  if type(d) ~= 'table' then
    return give(nil)
  end
  local ok, err = pcall(function()
    if d.kind == 'command' then
      give(command_doc(d))
    elseif d.kind == 'buffer' then
      give(buffer_doc(d, d.buf, d.name))
    elseif d.kind == 'file' and type(d.path) == 'string' then
      file_doc(d, give)
    elseif d.kind == 'special' then
      give(special_doc(d))
    else
      give(nil)
    end
  end)
  if not ok then
    give(code(d.name or '') .. ' · ' .. require('acp.util.text').error(err))
  end
end

--- Registers the nvim-cmp source once nvim-cmp is loaded, unless a source
--- named `acp` is registered already (by hand, or by an earlier call). A
--- second registration would still be harmless: only one `acp` source
--- answers (cmp_acp's `is_available`).
function M.register_cmp()
  if not package.loaded.cmp then
    return
  end
  local has = require('acp.prompt.popup').cmp_has_source()
  if has or (has == nil and M.cmp_registered) then
    return
  end
  local ok, cmp = pcall(require, 'cmp')
  if ok and type(cmp) == 'table' and type(cmp.register_source) == 'function' then
    M.cmp_registered = pcall(cmp.register_source, 'acp', require('cmp_acp').new())
  end
end

--- Registers the nvim-cmp source now if nvim-cmp is loaded, and whenever
--- it loads later: lazy.nvim's usual recipe loads nvim-cmp on InsertEnter,
--- after the first chat opened. Hooks: nvim-cmp's own `User CmpReady`
--- (its plugin file fires it once loaded), lazy.nvim's `User LazyLoad`,
--- and InsertEnter in the chat input `buf` (after lazy's handler for the
--- same event loaded the plugin).
---@param buf integer
function M.attach(buf)
  M.register_cmp()
  if not M.watching then
    M.watching = true
    vim.api.nvim_create_autocmd('User', {
      group = vim.api.nvim_create_augroup('acp_completion_cmp', { clear = true }),
      pattern = { 'CmpReady', 'LazyLoad' },
      callback = function()
        M.register_cmp()
      end,
    })
  end
  vim.api.nvim_create_autocmd('InsertEnter', {
    group = vim.api.nvim_create_augroup('acp_completion_' .. buf, { clear = true }),
    buffer = buf,
    callback = function()
      M.register_cmp()
    end,
  })
end

return M
