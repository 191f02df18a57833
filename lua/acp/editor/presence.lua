--- Files that appear and disappear under open buffers, without Neovim's
--- questions.
---
--- A buffer loaded for a file that did not exist yet (`:edit` of a new
--- name, a review or quickfix window opened before the agent created the
--- file) is a "new file" buffer to Neovim. Once the file exists, Neovim's
--- next timestamp check (`:checktime`, entering the buffer, focus) stops
--- with "W13: Warning: File … has been created after editing started
--- [O]K, (L)oad File" and waits for a key. `FileChangedShell` is not run
--- for it, so nothing can answer that question; only reading the file
--- into the buffer (or writing it) ends that state. So the sync watches
--- such files (one watcher per directory) and, as soon as one appears,
--- reads it into its buffer (`read`): an unmodified buffer just takes it;
--- a buffer with unsaved text takes it back at once (the chat then shows a
--- conflict). A swap file of another Neovim does not stop that read with
--- its ATTENTION question.
---
--- `renamed_to` names where a deleted file went, for the chat's notice.
local api = vim.api
local uv = vim.uv or vim.loop

local M = {}

--- bufnr -> { path, dir, on_appear = fun(buf) }
M.watched = {}
--- directory -> { event = uv fs_event handle, timer } (nil: watching
--- failed; the checks after tool calls, at turn ends and on focus still
--- find the file)
local dirs = {}

--- Quiet time after the last change in a directory before its files are
--- looked at: a file is created empty, then written.
M.settle_ms = 50

local group

local function exists(path)
  local st = uv.fs_stat(path)
  return st ~= nil and st.type == 'file'
end

--- Calls `on_appear` for each watched buffer (of `dir`, or every one)
--- whose file now exists.
local function sweep(dir)
  for buf, w in pairs(M.watched) do
    if (not dir or w.dir == dir) and exists(w.path) then
      if api.nvim_buf_is_loaded(buf) then
        local ok, err = pcall(w.on_appear, buf)
        if not ok then
          require('acp.util.escape').notify('acp.nvim: ' .. require('acp.util.text').error(err), vim.log.levels.WARN)
        end
      else
        M.unwatch(buf)
      end
    end
  end
end

local function stop_dir(dir)
  local d = dirs[dir]
  dirs[dir] = nil
  for _, h in pairs(d or {}) do
    pcall(h.stop, h)
    if not h:is_closing() then
      h:close()
    end
  end
end

local function setup_autocmds()
  if group then
    return
  end
  group = api.nvim_create_augroup('acp_presence', { clear = true })
  -- Neovim checks every file on focus, after this autocommand.
  api.nvim_create_autocmd('FocusGained', {
    group = group,
    callback = function()
      sweep(nil)
    end,
  })
end

--- Watches the file of "new file" buffer `buf` (real path `path`);
--- `on_appear(buf)` runs (on the main loop) once the file exists.
function M.watch(buf, path, on_appear)
  setup_autocmds()
  local dir = vim.fs.dirname(path)
  M.watched[buf] = { path = path, dir = dir, on_appear = on_appear }
  if dirs[dir] == nil then
    local h, timer = uv.new_fs_event(), uv.new_timer()
    local ok = h and timer and h:start(dir, {}, function(err)
      if not err then
        timer:stop()
        timer:start(M.settle_ms, 0, vim.schedule_wrap(function()
          sweep(dir)
        end))
      end
    end)
    if ok then
      dirs[dir] = { event = h, timer = timer }
    else
      for _, x in ipairs({ h, timer }) do
        if x then
          x:close()
        end
      end
    end
  end
end

--- Stops watching for `buf`'s file (the buffer went, or its file exists).
function M.unwatch(buf)
  local w = M.watched[buf]
  if not w then
    return
  end
  M.watched[buf] = nil
  for _, other in pairs(M.watched) do
    if other.dir == w.dir then
      return
    end
  end
  stop_dir(w.dir)
end

--- True when `buf` is a watched "new file" buffer whose file now exists
--- (a window about to show it should let it read the file first).
function M.due(buf)
  local w = M.watched[buf]
  return w ~= nil and exists(w.path)
end

--- Runs the pending read of `buf` when its file appeared (before a window
--- shows it: entering it would ask W13).
function M.settle(buf)
  if M.due(buf) then
    local w = M.watched[buf]
    pcall(w.on_appear, buf)
  end
end

--- Reads the file of "new file" buffer `buf` into it, which ends Neovim's
--- W13 state. With `keep`, unsaved text in the buffer is put back right
--- after, as an undo step of its own (the read is one too). Never asks: no swap file
--- question (as `bufload()`), no file info message. Returns true, or
--- false and why.
function M.read(buf, keep)
  local mine = keep and vim.bo[buf].modified and api.nvim_buf_get_lines(buf, 0, -1, false)
  local shortmess = vim.o.shortmess
  -- A swap file found on the read: no ATTENTION question, read anyway.
  vim.opt.shortmess:append('A')
  local ok, err = pcall(api.nvim_buf_call, buf, function()
    vim.cmd('let &l:undolevels = &l:undolevels')
    vim.cmd(vim.bo.modified and 'silent keepalt keepjumps edit!' or 'silent keepalt keepjumps edit')
  end)
  vim.o.shortmess = shortmess
  if mine and api.nvim_buf_is_loaded(buf) then
    -- The user's text, whatever the read did.
    local put = pcall(function()
      api.nvim_buf_call(buf, function()
        vim.cmd('let &l:undolevels = &l:undolevels')
      end)
      api.nvim_buf_set_lines(buf, 0, -1, false, mine)
    end)
    ok = ok and put
  end
  if not ok then
    return false, require('acp.util.text').error(err or 'its text could not be put back')
  end
  return true
end

--- Where the file whose last stat key (acp.editor.sync:
--- `mtime.sec.nsec:size:ino:ctime`) was `key` went when `path` is gone: the
--- regular file of the same directory with its inode, size and time (a
--- rename keeps them; a new file that reuses the inode has its own time),
--- or nil. At most `limit` entries are looked at.
function M.renamed_to(path, key, limit)
  local sec, nsec, size, ino = (key or ''):match('^(%d+)%.(%d+):(%d+):(%d+):')
  local dir = vim.fs.dirname(path)
  local handle = ino and uv.fs_scandir(dir)
  if not handle then
    return nil
  end
  limit = limit or 2000
  for _ = 1, limit do
    local name, kind = uv.fs_scandir_next(handle)
    if not name then
      return nil
    end
    if kind == 'file' then
      local full = dir .. '/' .. name
      local st = uv.fs_lstat(full)
      if st and full ~= path and st.ino == tonumber(ino) and st.size == tonumber(size)
        and st.mtime.sec == tonumber(sec) and st.mtime.nsec == tonumber(nsec) then
        return full
      end
    end
  end
end

return M
