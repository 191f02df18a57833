--- Opening a path an agent named (tool-call locations, diff paths, files
--- it wrote) in a window or the quickfix list. Such a path is data:
--- * a URL-like name (`term://cmd` runs a command through Neovim's
---   terminal, `oil://`, `fugitive://`, `http://` … run plugins) is refused;
--- * it is resolved to an absolute real path, which must lie inside the
---   session's roots unless the user allowed more (`fs.allow_outside_roots`);
--- * it is `stat`ed first: only a regular file is opened (or, where the
---   caller allows it, a file not yet created in an existing directory);
---   a FIFO (opening it waits for a writer: Neovim froze in `openat()`), a
---   socket, a device or a directory is refused;
--- * it is opened with `bufadd()` + `bufload()` (no command line, no swap
---   file prompt).
local api = vim.api
local uv = vim.uv or vim.loop

local M = {}

local KINDS = {
  directory = 'a directory',
  fifo = 'a named pipe (FIFO)',
  socket = 'a socket',
  char = 'a character device',
  block = 'a block device',
  link = 'a symlink',
}

--- `path` for a message: one line, control characters shown, at most
--- 200 characters.
function M.display(path)
  local s = vim.fn.strtrans(type(path) == 'string' and path or tostring(path))
  if #s > 200 then
    s = s:sub(1, 200) .. '…'
  end
  return s
end

--- `path` (absolute) with `.`, `..` and repeated slashes resolved lexically.
function M.normalize(path)
  local parts = {}
  for part in path:gmatch('[^/]+') do
    if part == '..' then
      parts[#parts] = nil
    elseif part ~= '.' then
      parts[#parts + 1] = part
    end
  end
  return '/' .. table.concat(parts, '/')
end

--- True for a name Neovim or a plugin treats as a URL rather than a file:
--- `scheme:` at its start (`term://`, `http:`, `zipfile:`), or `://` in it.
function M.is_url(path)
  return path:match('^%a[%w+.-]*:') ~= nil or path:find('://', 1, true) ~= nil
end

local function inside(path, roots)
  for _, root in ipairs(roots or {}) do
    local r = root:sub(-1) == '/' and root or root .. '/'
    if path == root or path:sub(1, #r) == r then
      return true
    end
  end
  return false
end

--- Checks a path an agent named. `opts`:
---   roots        real paths of the directories it must lie in
---   allow_outside  accept any directory (the user's `fs.allow_outside_roots`)
---   cwd          base of a relative path (else a relative path is refused)
---   new_ok       accept a file that does not exist yet, in an existing
---                directory
--- Returns the real path to open, or nil and why (a short phrase).
function M.check(path, opts)
  opts = opts or {}
  if type(path) ~= 'string' or path == '' then
    return nil, 'no path'
  end
  if path:find('[%z\1-\31\127]') then
    return nil, 'the name holds control characters'
  end
  if M.is_url(path) then
    return nil, 'a URL-like name, not a file path'
  end
  local abs = path
  if abs:sub(1, 1) ~= '/' then
    if not opts.cwd then
      return nil, 'not an absolute path'
    end
    abs = opts.cwd .. '/' .. abs
  end
  abs = M.normalize(abs)
  local real
  local st = uv.fs_stat(abs)
  if st then
    if st.type ~= 'file' then
      return nil, ('%s, not a regular file'):format(KINDS[st.type] or st.type)
    end
    real = uv.fs_realpath(abs)
    if not real then
      return nil, 'cannot resolve it'
    end
  else
    if uv.fs_lstat(abs) then
      return nil, 'a symlink to nothing'
    end
    if not opts.new_ok then
      return nil, 'no such file'
    end
    local dir = uv.fs_realpath(vim.fs.dirname(abs))
    local dst = dir and uv.fs_stat(dir)
    if not (dst and dst.type == 'directory') then
      return nil, 'no such file or directory'
    end
    real = (dir == '/' and '' or dir) .. '/' .. vim.fs.basename(abs)
  end
  if not opts.allow_outside and not inside(real, opts.roots) then
    return nil, "outside the session's roots"
  end
  return real
end

--- The check options of a chat view: its session's roots (real paths),
--- its cwd for relative paths, the user's `fs.allow_outside_roots`.
function M.opts_for(view, new_ok)
  local roots = view and view.open_roots
  if view and not roots then
    local ok, r = pcall(function()
      return require('acp.core').roots(view.thread)
    end)
    roots = {}
    for _, dir in ipairs(ok and type(r) == 'table' and r or { view.root }) do
      if type(dir) == 'string' then
        roots[#roots + 1] = uv.fs_realpath(dir) or dir
      end
    end
    view.open_roots = roots
  end
  local fs = require('acp.config').options.fs or {}
  return {
    roots = roots or {},
    allow_outside = fs.allow_outside_roots == true,
    cwd = view and view.root,
    new_ok = new_ok,
  }
end

--- Checks `path` for `view`; returns the real path, or nil and why.
function M.check_for(view, path, new_ok)
  return M.check(path, M.opts_for(view, new_ok))
end

--- Tells the user a path was not opened.
function M.refused(path, why)
  require('acp.util.escape').notify(('acp.nvim: not opening %s: %s'):format(M.display(path), why), vim.log.levels.WARN)
end

--- The buffer of the checked real path `real`, loaded (listed, as `:edit`
--- would make it). No command line and no swap file prompt: a swap file
--- another Neovim left is not asked about (`bufload()` would fail with
--- E325 and leave the buffer loaded but unshown); the second value is then
--- true (the caller tells the user).
function M.buffer(real)
  local buf = vim.fn.bufadd(real)
  vim.bo[buf].buflisted = true
  if not api.nvim_buf_is_loaded(buf) then
    local shortmess = vim.o.shortmess
    vim.opt.shortmess:append('A')
    local ok, err = pcall(vim.fn.bufload, buf)
    vim.o.shortmess = shortmess
    if not ok then
      error(err, 0)
    end
    -- Our swap file took another name: the usual one is another Neovim's.
    local swap = vim.fn.swapname(buf)
    return buf, swap ~= '' and swap:match('%.swp$') == nil
  else
    -- A "new file" buffer whose file appeared reads it first: a window
    -- entering it would ask W13.
    require('acp.editor.presence').settle(buf)
  end
  return buf
end

--- Shows `path` (checked for `view`) in window `win`. Returns the buffer,
--- or nil after telling the user why not (when `quiet` is not set; then
--- nil and why). Third value: another Neovim's swap file was found (and
--- the file opened anyway; said unless `quiet`).
function M.show(view, win, path, opts)
  opts = opts or {}
  local real, why = M.check_for(view, path, opts.new_ok)
  if not real then
    if not opts.quiet then
      M.refused(path, why)
    end
    return nil, why
  end
  local ok, buf, swapped = pcall(M.buffer, real)
  if ok then
    ok, why = pcall(api.nvim_win_set_buf, win, buf)
  else
    why = buf
  end
  if not ok then
    why = require('acp.util.text').error(why)
    if not opts.quiet then
      M.refused(path, why)
    end
    return nil, why
  end
  if swapped and not opts.quiet then
    require('acp.util.escape').notify(('acp.nvim: %s has a swap file of another Neovim: opened anyway'):format(vim.fn.fnamemodify(real, ':t')), vim.log.levels.WARN)
  end
  return buf, nil, swapped
end

--- Reads a regular file without ever waiting on it: opened non-blocking
--- (a FIFO swapped in after a `stat` cannot hang the open) and checked on
--- the open descriptor. At most `max` bytes (nil: the whole file). Returns
--- the text, or nil and why.
function M.read_regular(path, max)
  local pre = uv.fs_stat(path)
  if not pre then
    return nil, 'no such file'
  elseif pre.type ~= 'file' then
    return nil, ('%s, not a regular file'):format(KINDS[pre.type] or pre.type)
  end
  local c = uv.constants or {}
  local flags = (c.O_RDONLY or 0) + (c.O_NONBLOCK or 0) + (c.O_NOCTTY or 0)
  local fd, err = uv.fs_open(path, flags, 0)
  if not fd then
    return nil, tostring(err)
  end
  local st = uv.fs_fstat(fd)
  if not st or st.type ~= 'file' then
    uv.fs_close(fd)
    return nil, ('%s, not a regular file'):format(st and (KINDS[st.type] or st.type) or 'gone')
  end
  local data, rerr = uv.fs_read(fd, max and math.min(max, st.size) or st.size, 0)
  uv.fs_close(fd)
  if not data then
    return nil, tostring(rerr)
  end
  return data, nil, st
end

return M
