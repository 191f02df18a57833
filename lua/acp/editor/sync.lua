--- Buffers follow the files agents change on disk themselves (most agents
--- write files without `fs/write_text_file`).
---
--- Each tracked buffer keeps a record: the file's stat when the buffer and
--- the disk last agreed (read, written or synced). The text they agreed on
--- is the core's (`agreed_*`, under the cap of kept texts), and so is the
--- rest of the text work: how the buffer's lines are its file's text
--- (`decode`/`encode`: BOM, 'fileformat', 'eol'), the minimal edits between
--- two texts and the merge (`file_hunks`, `merge_disk`). A check is one
--- stat per buffer; the file is read only when its stat changed.
--- * An unmodified buffer takes the disk text as a minimal edit (one undo
---   step; cursor, folds and marks stay) and stays unmodified.
--- * A buffer with unsaved edits gets a three-way merge of the last common
---   text, the buffer and the disk; a clean merge is one undo step and
---   leaves the buffer modified, a conflict leaves it alone and is shown in
---   the chat (`:AcpConflict` compares the two).
--- Neovim's own "file changed" prompts (W11/W12) never appear for these
--- buffers: `FileChangedShell` is answered here, and after a sync Neovim's
--- idea of the file's time is brought up to date.
local api = vim.api
local uv = vim.uv or vim.loop

local M = {}

--- Larger files are not synced or merged (a notice says so).
M.max_bytes = 16 * 1024 * 1024

--- bufnr -> { path = real path, stat = stat key | nil (unknown), gone = true once
--- deleted on disk }. The text the buffer and the disk agreed on is kept by
--- the core under `path`.
M.records = {}
--- bufnr -> { path, key = stat key of the disk version, thread }
M.conflicts = {}
--- thread -> ChatView with the roots of its session
M.views = {}

local ns = api.nvim_create_namespace('acp_sync')
api.nvim_set_hl(0, 'AcpSyncNotice', { link = 'WarningMsg', default = true })

local group
local touching = {} -- bufnr -> true while our own :checktime runs

-- Helpers -------------------------------------------------------------------

local function file_buffer(buf)
  return api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' and api.nvim_buf_get_name(buf) ~= ''
end

local function real_path(buf)
  local name = api.nvim_buf_get_name(buf)
  return uv.fs_realpath(name) or name
end

local function stat_key(st)
  -- ino and ctime too: an atomic rename, or a same-size rewrite within the
  -- file system's time granularity, still shows.
  return ('%d.%d:%d:%d:%d.%d'):format(st.mtime.sec, st.mtime.nsec, st.size, st.ino, st.ctime.sec, st.ctime.nsec)
end

--- The stat key and text of a file (the stat of the opened file, so a
--- write after it is seen by the next check), or nil and why.
local function read_file(path)
  local pre = uv.fs_stat(path)
  if pre and pre.type ~= 'file' then
    -- Opening a FIFO would wait for a writer.
    return nil, 'not a file', stat_key(pre)
  end
  -- Non-blocking: a FIFO swapped in after the stat cannot hang the open
  -- (the descriptor's type is checked below).
  local c = uv.constants or {}
  local fd = pre and uv.fs_open(path, (c.O_RDONLY or 0) + (c.O_NONBLOCK or 0) + (c.O_NOCTTY or 0), 0)
  if not fd then
    return nil, 'gone'
  end
  local st = uv.fs_fstat(fd)
  local text, why
  if not st or st.type ~= 'file' then
    why = 'not a file'
  elseif st.size > M.max_bytes then
    why = 'large'
  else
    text = uv.fs_read(fd, st.size, 0)
  end
  uv.fs_close(fd)
  return text, why, st and stat_key(st)
end

--- (For `:AcpReview` and the snapshots of edit cards.)
M.read_file = read_file

local function stat_of(path)
  local st = uv.fs_stat(path)
  return st and stat_key(st)
end

--- The buffer options that decide how its lines are its file's text.
---@return acp.TextFormat
function M.format(buf)
  local bo = vim.bo[buf]
  return { fileformat = bo.fileformat, bomb = bo.bomb, eol = bo.eol, fixeol = bo.fixeol, binary = bo.binary }
end

--- The buffer's lines joined with "\n": how they cross to the core (one
--- string, not a table of lines).
local function lines_text(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

--- The buffer lines for a file's text, as Neovim would read it with the
--- buffer's options; and whether it ends with a newline.
local function decode(buf, text)
  return require('acp.core').decode(text, M.format(buf))
end

--- The buffer's text as a `:write` would put it in its file (the inverse
--- of `decode`).
function M.buffer_text(buf)
  return require('acp.core').encode(lines_text(buf), M.format(buf))
end

--- Applies hunks ({old_start, old_end, lines}: 0-based, end exclusive,
--- ascending) bottom-up, so earlier offsets stay valid, as one undo step.
--- Both the sync and the agent's buffer writes (`acp.editor.fs`) edit
--- buffers this way.
function M.apply_hunks(buf, hunks)
  for i = #hunks, 1, -1 do
    local h = hunks[i]
    if i < #hunks then
      api.nvim_buf_call(buf, function()
        vim.cmd('silent! undojoin')
      end)
    end
    api.nvim_buf_set_lines(buf, h.old_start, h.old_end, false, h.lines)
  end
end

--- Applies `hunks` (the core's minimal edits) in one undo step of its
--- own. `reload`: the buffer is unmodified and stays so; an undo of this
--- step marks it modified again (it differs from the disk).
local function replace(buf, hunks, reload)
  if #hunks == 0 then
    return false
  end
  local ok, err = pcall(function()
    api.nvim_buf_call(buf, function()
      -- Close the user's undo block: the sync is its own step.
      vim.cmd('let &l:undolevels = &l:undolevels')
    end)
    if reload then
      -- The undo entry records the state before the change; "modified"
      -- there makes `u` mark the buffer modified.
      vim.bo[buf].modified = true
    end
    M.apply_hunks(buf, hunks)
  end)
  if not ok then
    if reload then
      vim.bo[buf].modified = false
    end
    error(err, 0)
  end
  return true
end

--- Brings Neovim's record of the file's time up to date (so its own
--- timestamp check stays quiet): a `:checktime` whose `FileChangedShell`
--- this module answers with "do nothing".
local function touch(buf)
  local prev = api.nvim_get_option_value('autoread', { scope = 'local', buf = buf })
  -- With 'autoread' Neovim would reload the buffer instead of asking.
  vim.bo[buf].autoread = false
  touching[buf] = true
  pcall(vim.cmd, 'checktime ' .. buf)
  touching[buf] = nil
  if prev == nil then
    api.nvim_buf_call(buf, function()
      vim.cmd('set autoread<')
    end)
  else
    vim.bo[buf].autoread = prev
  end
end

-- Views, roots and notices --------------------------------------------------

local function roots_of(view)
  if not view.sync_roots then
    local core = require('acp.core')
    local ok, roots = pcall(function()
      return core.roots(view.thread)
    end)
    view.sync_roots = ok and type(roots) == 'table' and roots or { view.root }
  end
  return view.sync_roots
end

local function under(path, root)
  return path == root or path:sub(1, #root + 1) == (root:sub(-1) == '/' and root or root .. '/')
end

--- The live chat whose session roots hold `path`, if any.
function M.view_for(path)
  for _, view in pairs(M.views) do
    for _, root in ipairs(roots_of(view)) do
      if under(path, root) then
        return view
      end
    end
  end
end

--- Shows a notice in the chat: a virtual line under the transcript's end.
function M.notice(view, text)
  if not (view and api.nvim_buf_is_valid(view.buf)) then
    return
  end
  local core = require('acp.core')
  if core.is_loaded() then
    -- A real transcript entry (in the export too).
    if pcall(core.notice, view.thread, 'warn', text) then
      return
    end
  end
  local last = api.nvim_buf_line_count(view.buf) - 1
  api.nvim_buf_set_extmark(view.buf, ns, last, 0, { virt_lines = { { { '⚠ ' .. text, 'AcpSyncNotice' } } } })
  view.sync_notices = view.sync_notices or {}
  table.insert(view.sync_notices, text)
end

-- Records -------------------------------------------------------------------

--- The core keeps `text` as what the buffer of `path` and its file agree
--- on (nil, or past the size limit: not known).
local function agree(path, text)
  local core = require('acp.core')
  if text and #text <= M.max_bytes then
    core.agreed_set(path, text)
  else
    core.agreed_forget(path)
  end
end

--- Records the buffer as agreeing with the disk now (after a read, a write
--- or a sync). `text`: the disk text when already known.
function M.record(buf, text, key)
  local path = real_path(buf)
  if not text then
    local why
    text, why, key = read_file(path)
    if why == 'gone' then
      -- A new file: nothing on disk to agree with yet.
      M.records[buf] = { path = path, new = true }
      agree(path, nil)
      M.watch_new(buf)
      return
    end
  end
  require('acp.editor.presence').unwatch(buf)
  M.records[buf] = { path = path, stat = key }
  agree(path, text)
  M.conflicts[buf] = nil
end

-- Writing -------------------------------------------------------------------
--
-- `:write` compares the file's time with the one Neovim saw when it last
-- read or wrote the file, and asks before overwriting a newer file. After
-- a sync the disk is newer than that, yet holds the text the buffer was
-- synced to. Neovim offers no way to update that time short of reading
-- the whole file again (a reload: an undo step of its own, marks and
-- extmarks reset), so until the next real read or write a buffer-local
-- `BufWriteCmd` does the write: it syncs first, then writes with `!`
-- (the disk then holds nothing that the write would lose), or refuses
-- when the disk and the buffer conflict.

local guards = {} -- bufnr -> autocmd id

local function unguard(buf)
  if guards[buf] then
    pcall(api.nvim_del_autocmd, guards[buf])
    guards[buf] = nil
  end
end

local guard

local function guarded_write(ev)
  local buf = ev.buf
  local target = uv.fs_realpath(ev.match) or vim.fn.fnamemodify(ev.match, ':p')
  local own = target == real_path(buf)
  local bang = vim.v.cmdbang == 1
  local safe = false
  if own and not bang then
    safe = pcall(M.check, buf, M.view_for(target)) and not M.disk_changed(buf)
    if M.conflicts[buf] then
      require('acp.util.escape').notify(
        ('acp.nvim: %s not written: it changed on disk and in this buffer (:AcpConflict to compare, :w! to overwrite)'):format(
          vim.fn.fnamemodify(target, ':~:.')
        ),
        vim.log.levels.ERROR
      )
      return
    end
  end
  -- The nested write must not come back here.
  unguard(buf)
  -- Without `!` Neovim checks the time it knows, which is old: it would
  -- ask. Only when the check could not tell does it get to ask.
  local force = bang or (safe and not vim.bo[buf].readonly)
  local cmd = (force and 'write! ' or 'write ') .. vim.v.cmdarg .. (own and '' or (' ' .. vim.fn.fnameescape(ev.match)))
  local ok, err = pcall(api.nvim_buf_call, buf, function()
    vim.cmd(cmd)
  end)
  if vim.bo[buf].modified or not own then
    -- Not written to its own file: Neovim's time of the file is still old.
    guard(buf)
  end
  if not ok then
    error(err, 0)
  end
end

function guard(buf)
  if guards[buf] then
    return
  end
  guards[buf] = api.nvim_create_autocmd('BufWriteCmd', {
    group = api.nvim_create_augroup('acp_sync_write', { clear = false }),
    buffer = buf,
    nested = true,
    desc = 'acp.nvim: write a buffer synced with its file without the "changed since reading" question',
    callback = guarded_write,
  })
end

--- Writes an unmodified buffer's agent edit to its file (the save after
--- an `fs/write_text_file`). Never over a disk change, never asking.
--- Returns true when written.
function M.save(buf)
  if M.disk_changed(buf) then
    return false
  end
  unguard(buf)
  local ok = pcall(api.nvim_buf_call, buf, function()
    vim.cmd(vim.bo[buf].readonly and 'silent keepalt write' or 'silent keepalt write!')
  end)
  if not ok then
    guard(buf)
  end
  return ok and not vim.bo[buf].modified
end

local function finish(buf, text, key)
  M.record(buf, text, key)
  touch(buf)
  guard(buf)
end

--- A record for a buffer seen for the first time (loaded before tracking
--- began). With unsaved edits there is no telling them from a disk
--- change: the disk text is taken as the last common text (Neovim still
--- asks before a `:write` over a newer file then). Unmodified, the buffer
--- holds the text from before any later edit of the agent, for review:
--- the disk text when they agree, else the buffer's own (the stat is then
--- left unknown, so the next check compares the texts).
local function adopt(buf)
  local path = real_path(buf)
  local text, why, key = read_file(path)
  if why == 'gone' then
    -- Neovim's "new file" buffer (see `watch_new`).
    M.records[buf] = { path = path, new = true }
    agree(path, vim.bo[buf].modified and nil or M.buffer_text(buf))
    M.watch_new(buf)
    return
  end
  if vim.bo[buf].modified then
    M.records[buf] = { path = path, stat = text and key }
  elseif text and #require('acp.core').file_hunks(lines_text(buf), text, M.format(buf)) == 0 then
    M.records[buf] = { path = path, stat = key }
  else
    M.records[buf] = { path = path }
    text = M.buffer_text(buf)
  end
  agree(path, text)
end

-- The check -----------------------------------------------------------------

--- Tells the core about a disk edit the plugin saw (for `:AcpReview`),
--- when the core takes such reports: the file's text before (nil: the text
--- the buffer and the disk last agreed on, which the core keeps) and after.
local function report(view, path, before, after)
  local core = require('acp.core')
  if view and core.is_loaded() and before ~= after then
    pcall(core.disk_edit, view.thread, { path = path, before = before, after = after })
  end
end

--- `what`: how the two sides came apart (default: both changed).
local function conflict(buf, view, key, what)
  local rec = M.records[buf]
  local c = M.conflicts[buf]
  if c and c.key == key then
    return
  end
  M.conflicts[buf] = { path = rec.path, key = key, thread = view and view.thread }
  -- A `:w` now says why it does not write, rather than asking.
  guard(buf)
  local rel = vim.fn.fnamemodify(rec.path, ':~:.')
  M.notice(view or M.view_for(rec.path), ('%s %s: :AcpConflict %s to compare'):format(
    rel,
    what or 'changed on disk and in your buffer',
    rel
  ))
end

--- `User AcpFileChanged` for a buffer that took its file's new disk text.
local function file_changed(buf, path, how, view)
  require('acp.events').file_changed({
    path = path,
    bufnr = buf,
    by = 'sync',
    how = how,
    thread = view and view.thread,
    agent = view and view.agent,
  })
end

--- The file of a "new file" buffer appeared (the agent or anyone created
--- it): the buffer reads it now, which Neovim's W13 question would
--- otherwise wait for (acp.editor.presence). Unsaved text stays in the
--- buffer, and the chat shows the conflict.
local function appeared(buf, view)
  -- Unsaved text the file does not hold already is kept.
  local text = vim.bo[buf].modified and read_file(M.records[buf].path)
  local modified = text ~= false and text ~= M.buffer_text(buf)
  local ok, err = require('acp.editor.presence').read(buf, modified)
  if not M.records[buf] then
    -- Read by Neovim: BufReadPost recorded it, unless it is not tracked.
    M.record(buf)
  end
  local rec = M.records[buf]
  if not ok then
    error(err, 0)
  elseif modified then
    conflict(buf, view, rec.stat, 'was created on disk while its buffer had unsaved text')
  else
    file_changed(buf, rec.path, 'reload', view)
  end
  return true
end

--- Watches the file of a "new file" buffer until it appears.
function M.watch_new(buf)
  require('acp.editor.presence').watch(buf, M.records[buf].path, function(b)
    if M.records[b] and M.records[b].new then
      M.check(b)
    else
      require('acp.editor.presence').unwatch(b)
    end
  end)
end

--- Checks one buffer against its file; syncs it when the file changed.
--- Returns true when the buffer's text changed.
function M.check(buf, view)
  if not file_buffer(buf) or vim.bo[buf].binary then
    return false
  end
  local rec = M.records[buf]
  if not rec then
    adopt(buf)
    rec = M.records[buf]
  end
  local key = stat_of(rec.path)
  if key == nil then
    if rec.stat and not rec.gone then
      rec.gone = true
      local to = require('acp.editor.presence').renamed_to(rec.path, rec.stat)
      local rel = vim.fn.fnamemodify(rec.path, ':~:.')
      M.notice(view or M.view_for(rec.path), to and ('%s was renamed to %s on disk; its buffer keeps the text under the old name (:w writes it there again)'):format(
        rel,
        vim.fn.fnamemodify(to, ':~:.')
      ) or ('%s was deleted on disk; its buffer keeps the text (:w writes it again)'):format(rel))
    end
    return false
  elseif rec.new then
    return appeared(buf, view or M.view_for(rec.path))
  elseif key == rec.stat then
    return false
  end
  local text, why
  text, why, key = read_file(rec.path)
  if not text then
    if why == 'large' and (M.conflicts[buf] or {}).key ~= key then
      M.conflicts[buf] = { path = rec.path, key = key, large = true }
      M.notice(view or M.view_for(rec.path), ('%s changed on disk; too large to sync (:e to reload)'):format(
        vim.fn.fnamemodify(rec.path, ':~:.')
      ))
    end
    return false
  end
  local enc = vim.bo[buf].fileencoding
  if enc ~= '' and enc ~= 'utf-8' then
    return false
  end
  local core = require('acp.core')
  local format, ours = M.format(buf), lines_text(buf)
  view = view or M.view_for(rec.path)
  if not vim.bo[buf].modified then
    report(view, rec.path, nil, text)
    local hunks, eol = core.file_hunks(ours, text, format)
    local changed = replace(buf, hunks, true)
    if vim.bo[buf].eol ~= eol then
      vim.bo[buf].eol = eol
    end
    vim.bo[buf].modified = false
    finish(buf, text, key)
    if changed then
      file_changed(buf, rec.path, 'reload', view)
    end
    return changed
  end
  local how, hunks = core.merge_disk(rec.path, ours, text, format)
  if how == 'same' then
    -- Only the stat changed, or the buffer already holds the disk text.
    finish(buf, text, key)
    return false
  elseif how ~= 'merged' then
    -- No common text known, or both sides changed the same lines.
    conflict(buf, view, key)
    return false
  end
  -- Review's step is the buffer's text before and after the merge: the
  -- user's unsaved edits are in both, never taken for the agent's.
  local before = M.buffer_text(buf)
  local changed = replace(buf, hunks, false)
  report(view, rec.path, before, M.buffer_text(buf))
  finish(buf, text, key)
  if changed then
    file_changed(buf, rec.path, 'merge', view)
  end
  return changed
end

--- Checks every loaded buffer under the roots of `view`'s session (after
--- a tool call that edits files, and at the end of each turn).
function M.check_roots(view)
  local roots = roots_of(view)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if file_buffer(buf) then
      local rec = M.records[buf]
      local path = rec and rec.path or real_path(buf)
      for _, root in ipairs(roots) do
        if under(path, root) then
          local ok, err = pcall(M.check, buf, view)
          if not ok then
            M.notice(view, ('could not sync %s: %s'):format(path, err))
          end
          break
        end
      end
    end
  end
end

--- Whether the file changed on disk since the buffer last agreed with it
--- (true when that is not known; false when it is gone: a write then
--- loses nothing).
function M.disk_changed(buf)
  local rec = M.records[buf]
  if not rec then
    return true
  end
  local key = stat_of(rec.path)
  return key ~= nil and key ~= rec.stat
end

-- Autocommands --------------------------------------------------------------

local function on_file_changed(ev)
  local buf = ev.buf
  if touching[buf] then
    vim.v.fcs_choice = ''
    return
  end
  local rec = M.records[buf]
  local view = M.view_for(rec and rec.path or real_path(buf))
  if not view then
    -- Not a file of a session: Neovim's usual question.
    vim.v.fcs_choice = 'ask'
    return
  end
  vim.v.fcs_choice = ''
  -- Buffers can't be changed inside this autocommand.
  vim.schedule(function()
    if api.nvim_buf_is_valid(buf) then
      local ok, err = pcall(M.check, buf, view)
      if not ok then
        M.notice(view, ('could not sync %s: %s'):format(api.nvim_buf_get_name(buf), err))
      end
    end
  end)
end

local function tracked(buf)
  return file_buffer(buf) and M.view_for(real_path(buf)) ~= nil
end

local function setup_autocmds()
  if group then
    return
  end
  group = api.nvim_create_augroup('acp_sync', { clear = true })
  api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufFilePost' }, {
    group = group,
    callback = function(ev)
      -- Neovim read the file itself: its idea of the file is current.
      unguard(ev.buf)
      if M.records[ev.buf] or tracked(ev.buf) then
        M.record(ev.buf)
      end
    end,
  })
  api.nvim_create_autocmd('FileChangedShellPost', {
    group = group,
    callback = function(ev)
      -- Neovim handled a change itself (reloaded, or the user kept the
      -- buffer): the next check compares the texts.
      unguard(ev.buf)
      if M.records[ev.buf] then
        M.records[ev.buf].stat = nil
      end
    end,
  })
  api.nvim_create_autocmd('BufWritePost', {
    group = group,
    callback = function(ev)
      local written = uv.fs_realpath(ev.match) or ev.match
      if written == real_path(ev.buf) then
        unguard(ev.buf)
        if M.records[ev.buf] or tracked(ev.buf) then
          M.record(ev.buf)
        end
      end
    end,
  })
  api.nvim_create_autocmd('BufUnload', {
    group = group,
    callback = function(ev)
      unguard(ev.buf)
      require('acp.editor.presence').unwatch(ev.buf)
      local rec = M.records[ev.buf]
      if rec then
        pcall(agree, rec.path, nil)
      end
      M.records[ev.buf] = nil
      M.conflicts[ev.buf] = nil
    end,
  })
  api.nvim_create_autocmd('FileChangedShell', { group = group, callback = on_file_changed })
end

--- Starts following the files of a chat's session.
function M.attach(view)
  M.views[view.thread] = view
  setup_autocmds()
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if not M.records[buf] and tracked(buf) then
      adopt(buf)
    end
  end
end

local release_shots

function M.detach(view)
  M.views[view.thread] = nil
  release_shots(M.snapshots[view.thread])
  M.snapshots[view.thread] = nil
end

-- Snapshots ------------------------------------------------------------------
--
-- Files a tool call names that no buffer holds are not synced, so a disk
-- edit the agent makes to them itself would reach no review. Their text is
-- taken when the call is announced (pending) or asks permission, before
-- the agent changes them, and compared when the call finishes and at the
-- end of the turn.

--- thread -> { [real path] = { id = the core's id of the text from before
--- the tool call, named = the path as the card gave it } | false (not a
--- readable file, or not kept) }. The texts live in the core, under the
--- cap of all kept texts (`fs.kept_text_max_bytes`): the oldest may be
--- dropped, and such a file then reaches no review (the chat says so).
M.snapshots = {}

--- Frees the core's copies of `shots`.
function release_shots(shots)
  local core = require('acp.core')
  for _, shot in pairs(shots or {}) do
    if shot and core.is_loaded() then
      pcall(core.release_text, shot.id)
    end
  end
end

--- How many changes the core recorded of each path (review keeps every
--- step of the agent's: a change recorded since a snapshot, by the agent's
--- write or the buffer's check, is not reported again from it).
local function recorded(view)
  local out = {}
  local ok, writes = pcall(require('acp.core').writes, view.thread)
  for _, w in ipairs(ok and writes or {}) do
    out[w.path] = w.changes or 1
  end
  return out
end

local function changes_of(done, path, named)
  return math.max(done[path] or 0, done[named] or 0)
end

--- Takes the text of the files in the locations of `card` (an edit,
--- delete or move about to run) that are inside the roots, are regular
--- files within the sync's size limit, and have no snapshot yet.
function M.snapshot(view, card)
  local shots = M.snapshots[view.thread] or {}
  local done
  for _, loc in ipairs(card.locations or {}) do
    local path = type(loc.path) == 'string' and (uv.fs_realpath(loc.path) or loc.path)
    if path and shots[path] == nil then
      local inside = false
      for _, root in ipairs(roots_of(view)) do
        inside = inside or under(path, root)
      end
      done = done or (inside and recorded(view))
      if inside then
        -- stat first: never a FIFO or device, nothing past the size limit.
        local text = read_file(path)
        local ok, id = false, nil
        if text then
          ok, id = pcall(require('acp.core').keep_text, view.thread, 'the snapshot of ' .. path, text)
        end
        shots[path] = ok and id and { id = id, named = loc.path, changes = changes_of(done, path, loc.path) } or false
      end
    end
  end
  M.snapshots[view.thread] = next(shots) and shots or nil
end

--- Records the snapshotted files that changed on disk with no change
--- recorded since the snapshot (a deleted one too: review can write it
--- back). At the end of a turn the snapshots go.
local function settle(view, turn_over)
  local shots = M.snapshots[view.thread]
  if not shots then
    return
  end
  local done = recorded(view)
  local core = require('acp.core')
  for path, shot in pairs(shots) do
    -- nil once the core dropped the text to stay under its cap: unknown,
    -- so nothing is reported (never a wrong original).
    local before = shot and changes_of(done, path, shot.named) <= shot.changes and core.kept_text(shot.id)
    local keep = type(before) == 'string'
    if keep then
      local text, why = read_file(path)
      if text ~= before and (text or why == 'gone') then
        report(view, path, before, text)
        keep = false
      end
    end
    if not keep then
      if shot then
        pcall(core.release_text, shot.id)
      end
      shots[path] = nil
    end
  end
  if turn_over or not next(shots) then
    release_shots(shots)
    M.snapshots[view.thread] = nil
  end
end

--- Called by the chat after a drain in which an edit-like tool call
--- finished or a turn ended (`turn_over`).
function M.after_apply(view, turn_over)
  local ok, err = pcall(M.check_roots, view)
  if ok then
    ok, err = pcall(settle, view, turn_over)
  end
  if not ok then
    require('acp.util.escape').notify('acp.nvim: syncing buffers with the disk failed: ' .. require('acp.util.text').error(err), vim.log.levels.ERROR)
  end
end

-- :AcpConflict (acp.editor.conflict) ----------------------------------------

--- The user has seen the disk text `text` (stat `key`) of the conflicted
--- buffer's file: it is the new common text, and the buffer may be
--- written over it without Neovim's warning.
function M.seen(buf, text, key)
  local path = M.records[buf].path
  M.records[buf] = { path = path, stat = key }
  agree(path, text)
  M.conflicts[buf] = nil
  touch(buf)
  guard(buf)
end

return M
