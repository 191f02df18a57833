--- `@` completion in the chat's input area: files under the session root
--- (listed by the core off the main thread, .gitignore respected), open
--- buffers, `@diagnostics` and `@selection`. Typing `@` opens the menu;
--- more characters narrow it (substring match, file names first). It is
--- also the input buffer's 'omnifunc' (`<C-x><C-o>`). What a mention sends
--- is decided at send time (`acp.prompt.context`).
local M = {}

local api = vim.api

local function options()
  return require('acp.config').options.context
end

--- Seconds a file list is used before the next `@` refreshes it.
M.ttl = 30

--- root -> { count, truncated, error, time, loading, waiters }. The list
--- itself stays in the core (`match_files` queries it).
M.cache = {}

--- input buffer -> view
M.views = {}

-- The file list ------------------------------------------------------------

--- The session's roots: its cwd, then the configured extra `roots`.
function M.roots(view)
  local out = { view.root }
  for _, r in ipairs(require('acp.config').options.roots or {}) do
    -- `~` and `$VAR` (vim.fs.normalize), never expand(): no backticks run.
    local dir = vim.fs.normalize(vim.fn.fnamemodify(vim.fs.normalize(r), ':p'))
    if dir ~= view.root then
      out[#out + 1] = dir
    end
  end
  return out
end

--- Asks the core for the files under `root` (unless a fresh list is cached
--- or a walk is under way); `on_done(entry)` runs on the main thread when
--- the list arrives. Never blocks.
function M.refresh(root, on_done, force)
  local entry = M.cache[root] or { count = 0, time = -math.huge, waiters = {} }
  M.cache[root] = entry
  if on_done then
    entry.waiters[#entry.waiters + 1] = on_done
  end
  local fresh = (vim.uv.now() - entry.time) < M.ttl * 1000
  if entry.loading or (fresh and not force) then
    if not entry.loading and on_done then
      entry.waiters = {}
      on_done(entry)
    end
    return entry
  end
  local core = require('acp.core').get()
  if not core then
    return entry
  end
  entry.loading = true
  local request = require('acp.core.dispatch').request(function(ev)
    entry.loading = false
    entry.time = vim.uv.now()
    if ev.error and ev.error ~= vim.NIL then
      entry.error = ev.error
    else
      entry.count, entry.truncated, entry.error = ev.count, ev.truncated, nil
    end
    local waiters = entry.waiters
    entry.waiters = {}
    for _, fn in ipairs(waiters) do
      local ok, err = pcall(fn, entry)
      if not ok then
        require('acp.util.escape').notify('acp.nvim: ' .. require('acp.util.text').error(err), vim.log.levels.ERROR)
      end
    end
  end)
  local ok, err = pcall(core.list_files, root, options().max_files, request)
  if not ok then
    entry.loading = false
    require('acp.core.dispatch').requests[request] = nil
    require('acp.util.escape').notify('acp.nvim: cannot list files: ' .. require('acp.util.text').error(err), vim.log.levels.WARN)
  end
  return entry
end

-- Candidates --------------------------------------------------------------------

local function matcher(base)
  local smart = base:find('%u') ~= nil
  local needle = smart and base or base:lower()
  return needle, smart
end

--- Completion items for `base` (the text typed after `@`).
function M.candidates(view, base)
  local max = options().max_items
  local needle, smart = matcher(base)
  local items, seen = {}, {}
  -- `user_data`: what the completion plugins' `resolve` describes (the
  -- buffer, the file's absolute path).
  local function add(word, menu, kind, data)
    if #items < max and not seen[word] then
      seen[word] = true
      items[#items + 1] = { word = '@' .. word, abbr = word, menu = menu, kind = kind, icase = 1, equal = 1, dup = 0, user_data = data }
    end
  end
  local function matches(s)
    s = smart and s or s:lower()
    return needle == '' or s:find(needle, 1, true) ~= nil
  end
  local context = require('acp.prompt.context')
  -- Special mentions.
  local src = context.source_buffer()
  if matches('diagnostics') and src then
    local n = #vim.diagnostic.get(src)
    add('diagnostics', ('%d in %s'):format(n, context.buffer_source(src, view.root).label), 'diag')
  end
  if matches('selection') and (context.last_visual_buf or src) then
    add('selection', 'last visual selection', 'sel')
  end
  -- Open buffers of files: not scratch buffers (`@buffer:N` still works
  -- when typed), help, terminals, or the plugin's own logs.
  local logs = {}
  for _, path in ipairs({ require('acp.config').options.log_file, require('acp.core').build_log }) do
    if type(path) == 'string' then
      logs[vim.fn.fnamemodify(path, ':p')] = true
    end
  end
  local bufs = {}
  for _, b in ipairs(api.nvim_list_bufs()) do
    if (api.nvim_buf_is_loaded(b) and vim.bo[b].buflisted or b == src) and vim.bo[b].buftype == '' then
      local name = api.nvim_buf_get_name(b)
      if name ~= '' and not logs[name] then
        local s = context.buffer_source(b, view.root)
        local word = s.label
        if not s.untitled and not word:find('%s') and matches(word) then
          bufs[#bufs + 1] = { word = word, modified = vim.bo[b].modified, buf = b }
        end
      end
    end
  end
  table.sort(bufs, function(a, b)
    return a.word < b.word
  end)
  for _, b in ipairs(bufs) do
    add(b.word, b.modified and 'buffer [+]' or 'buffer', 'buf', { buf = b.buf })
  end
  -- Files of each root, best matches first (ranked by the core).
  local core = require('acp.core')
  if core.is_loaded() then
    for _, root in ipairs(M.roots(view)) do
      local room = max - #items
      if room <= 0 then
        break
      end
      local ok, paths = pcall(core.match_files, root, base, room + #bufs)
      if ok and type(paths) == 'table' then
        for _, p in ipairs(paths) do
          local word = root == view.root and p or context.relpath(view.root, root .. '/' .. p)
          if not word:find('%s') then
            add(word, 'file', 'file', { path = root .. '/' .. p })
          end
        end
      end
    end
  end
  return items
end

-- Triggering ---------------------------------------------------------------------------

--- The `@` being typed before byte `col` (0-based) of `line`: its 1-based
--- byte column and the text after it, or nil.
function M.mention_at(line, col)
  local before = line:sub(1, col)
  local s, base = before:match('()@(%S*)$')
  if not s or base:find('@', 1, true) then
    return nil
  end
  if s > 1 and not before:sub(s - 1, s - 1):match('%s') then
    return nil
  end
  return s, base
end

--- The `@` being typed before the cursor (see `mention_at`).
local function at_cursor()
  return M.mention_at(api.nvim_get_current_line(), api.nvim_win_get_cursor(0)[2])
end

--- Shows (or updates) the menu for the mention before the cursor.
function M.update(view)
  if api.nvim_get_current_buf() ~= view.input or not api.nvim_get_mode().mode:find('^i') then
    return
  end
  local col, base = at_cursor()
  if not col then
    return
  end
  local items = M.candidates(view, base)
  if #items > 0 then
    vim.fn.complete(col, items)
  end
end

--- Sets up completion in the input buffer of `view`.
function M.attach(view)
  local buf = view.input
  M.views[buf] = view
  vim.bo[buf].omnifunc = "v:lua.require'acp.prompt.mention'.omnifunc"
  pcall(function()
    vim.bo[buf].completeopt = 'menuone,noselect'
  end)
  require('acp.prompt.popup').keys(buf)
  local group = api.nvim_create_augroup('acp_mention_' .. buf, { clear = true })
  local typed = false
  api.nvim_create_autocmd('InsertCharPre', {
    group = group,
    buffer = buf,
    callback = function()
      typed = true
    end,
  })
  api.nvim_create_autocmd({ 'TextChangedI', 'TextChangedP' }, {
    group = group,
    buffer = buf,
    callback = function()
      local was_typed = typed
      typed = false
      if not require('acp.prompt.popup').builtin_popup() then
        return -- a completion plugin's source shows the mentions
      end
      local pum = vim.fn.pumvisible() == 1
      if pum and vim.fn.complete_info({ 'selected' }).selected ~= -1 then
        return -- moving through the menu
      end
      if not (was_typed or pum) then
        return
      end
      local col = at_cursor()
      if not col then
        return
      end
      M.update(view)
      -- The list may be old or missing: refresh it, and update the menu
      -- when a new one arrives while the user is still typing the mention.
      for _, root in ipairs(M.roots(view)) do
        local entry = M.cache[root]
        if not entry or entry.loading or (vim.uv.now() - entry.time) >= M.ttl * 1000 then
          M.refresh(root, function()
            M.update(view)
          end)
        end
      end
    end,
  })
  api.nvim_create_autocmd('InsertEnter', {
    group = group,
    buffer = buf,
    once = true,
    callback = function()
      for _, root in ipairs(M.roots(view)) do
        M.refresh(root)
      end
    end,
  })
  api.nvim_create_autocmd('BufWipeout', {
    group = group,
    buffer = buf,
    callback = function()
      M.views[buf] = nil
    end,
  })
end

--- 'omnifunc' of the input buffer.
function M.omnifunc(findstart, base)
  local view = M.views[api.nvim_get_current_buf()]
  if findstart == 1 then
    local col = view and at_cursor()
    return col and (col - 1) or -3
  end
  if not view then
    return {}
  end
  base = tostring(base):gsub('^@', '')
  for _, root in ipairs(M.roots(view)) do
    if not M.cache[root] then
      M.refresh(root, function()
        M.update(view)
      end)
    end
  end
  return M.candidates(view, base)
end

return M
