--- Checkpoints (`:h acp-checkpoints`): the core keeps, per turn, the
--- agent's steps on every file it changed (its writes, its own disk edits
--- the sync saw, and in a git repository the files its commands changed).
--- `restore(view, turn)` puts every file back to its state before that
--- turn, keeping the edits made since (the steps are taken back newest
--- first as three-way merges): into a loaded buffer as one undoable step
--- (written when it had no unsaved edits), else on disk (atomic write); a
--- file the agent created is deleted only when unchanged since. The
--- restored turns are kept in the core as undone, and the transcript shows
--- them folded under a line saying so.

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

local api = vim.api

local M = {}

local ns = api.nvim_create_namespace('acp_checkpoint')

--- Chats with checkpoint marks, by thread.
M.views = setmetatable({}, { __mode = 'v' })
--- The entries of undone turns folded already, per chat.
local folded = setmetatable({}, { __mode = 'k' })

local function plural(n, word)
  return ('%d %s%s'):format(n, word, n == 1 and '' or 's')
end

local function loaded_buffer(path)
  local real = vim.uv.fs_realpath(path) or path
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local name = api.nvim_buf_get_name(buf)
    if api.nvim_buf_is_loaded(buf) and name ~= '' and (name == path or (vim.uv.fs_realpath(name) or name) == real) then
      return buf
    end
  end
end

local function display(path)
  return vim.fn.fnamemodify(path, ':~:.')
end

--- A one-line prompt, cut.
local function cut(text, n)
  local one = (text or ''):gsub('%s+', ' ')
  local line = require('acp.util.text').line(one)
  if vim.fn.strchars(line) > n then
    line = vim.fn.strcharpart(line, 0, n - 1) .. '…'
  end
  return line
end

--- What a restore to before `turn` would do: `{ files, created_kept,
--- unknown }`, each file `{ path, buf?, text?, delete?, kept }`; nil and
--- why when the chat has no such checkpoint.
function M.plan(view, turn)
  local core, sync = require('acp.core'), require('acp.editor.sync')
  local paths = core.checkpoint_paths(view.thread, turn)
  if not paths then
    return nil, ('no checkpoint of turn %s in this chat (:AcpRestore lists them)'):format(tostring(turn))
  end
  local plan = { files = {}, created_kept = {}, unknown = {} }
  for _, path in ipairs(paths) do
    local buf = loaded_buffer(path)
    local now = buf and sync.buffer_text(buf) or (sync.read_file(path))
    local base = core.checkpoint_base(view.thread, turn, path, now)
    if base and base.text == nil then
      plan.unknown[#plan.unknown + 1] = path
    elseif base and base.absent then
      if now ~= nil then
        table.insert(plan.files, { path = path, buf = buf, delete = true, kept = 0 })
      end
    elseif base and base.text ~= now then
      table.insert(plan.files, { path = path, buf = buf, text = base.text, kept = base.kept or 0 })
    elseif base and base.created and now ~= nil then
      plan.created_kept[#plan.created_kept + 1] = path
    end
  end
  return plan
end

--- Writes `text` to `path` through a temporary file renamed over it.
local function write_atomic(path, text)
  local dir = vim.fn.fnamemodify(path, ':h')
  vim.fn.mkdir(dir, 'p')
  local tmp = ('%s/.%s.acp-restore-%d'):format(dir, vim.fn.fnamemodify(path, ':t'), vim.uv.hrtime() % 1e9)
  local st = vim.uv.fs_stat(path)
  local fd, err = vim.uv.fs_open(tmp, 'w', st and st.mode % 4096 or 420)
  if not fd then
    return false, err
  end
  local ok, werr = vim.uv.fs_write(fd, text, 0)
  vim.uv.fs_fsync(fd)
  vim.uv.fs_close(fd)
  if not ok then
    vim.uv.fs_unlink(tmp)
    return false, werr
  end
  local rok, rerr = vim.uv.fs_rename(tmp, path)
  if not rok then
    vim.uv.fs_unlink(tmp)
    return false, rerr
  end
  return true
end

--- Puts file `f` of a plan back. Returns a word for the summary, or nil
--- and why.
local function apply_file(f)
  local core, sync = require('acp.core'), require('acp.editor.sync')
  if f.delete then
    if f.buf and vim.bo[f.buf].modified then
      return nil, 'its buffer has unsaved edits: not deleted'
    end
    local ok, err = os.remove(f.path)
    if not ok then
      return nil, err
    end
    if f.buf then
      pcall(api.nvim_buf_delete, f.buf, { force = true })
    end
    return 'deleted'
  end
  if f.buf and api.nvim_buf_is_valid(f.buf) then
    local had_edits = vim.bo[f.buf].modified
    local hunks, eol = core.file_hunks(api.nvim_buf_get_lines(f.buf, 0, -1, false), f.text, sync.format(f.buf))
    local ok, err = pcall(sync.apply_hunks, f.buf, hunks)
    if not ok then
      return nil, require('acp.util.text').error(err)
    end
    if eol ~= nil and vim.bo[f.buf].eol ~= eol then
      vim.bo[f.buf].eol = eol
    end
    if had_edits then
      return 'its buffer, left unsaved with your edits'
    end
    if not sync.save(f.buf) then
      return 'in its buffer (not written: the file changed on disk)'
    end
    return 'buffer'
  end
  local ok, err = write_atomic(f.path, f.text)
  if not ok then
    return nil, err
  end
  return 'disk'
end

--- Puts the files back to before `turn` and marks that turn and the later
--- ones undone. `opts.confirm` (default true): first asks with
--- vim.ui.select, listing the files. `cb(ok, summary)` when done (ok false:
--- cancelled or failed, summary says why).
function M.restore(view, turn, opts, cb)
  opts = opts or {}
  cb = cb or function() end
  local core = require('acp.core')
  local plan, why = M.plan(view, turn)
  if not plan then
    notify('acp.nvim: ' .. why, vim.log.levels.WARN)
    return cb(false, why)
  end
  local function run()
    local done, failed = {}, {}
    for _, f in ipairs(plan.files) do
      local how, err = apply_file(f)
      if how then
        done[#done + 1] = ('%s (%s)'):format(display(f.path), how)
      else
        failed[#failed + 1] = ('%s: %s'):format(display(f.path), tostring(err))
      end
    end
    local undone = core.checkpoint_undone(view.thread, turn)
    local kept = 0
    for _, f in ipairs(plan.files) do
      kept = kept + (f.kept or 0)
    end
    local parts = { ('Turn%s %s undone by :AcpRestore: %s put back to before turn %d'):format(
      #undone == 1 and '' or 's',
      #undone == 1 and tostring(undone[1]) or ('%d–%d'):format(undone[1] or turn, undone[#undone] or turn),
      plural(#done, 'file'),
      turn
    ) }
    if #done > 0 then
      parts[#parts + 1] = table.concat(done, ', ')
    end
    if kept > 0 then
      parts[#parts + 1] = ('%s you edited since kept as you left them'):format(plural(kept, 'region'))
    end
    if #plan.created_kept > 0 then
      parts[#parts + 1] = ('not deleted (changed since the agent created them): %s'):format(table.concat(vim.tbl_map(display, plan.created_kept), ', '))
    end
    if #plan.unknown > 0 then
      parts[#parts + 1] = ('left as they are (their text before is not known): %s'):format(table.concat(vim.tbl_map(display, plan.unknown), ', '))
    end
    if #failed > 0 then
      parts[#parts + 1] = ('failed: %s'):format(table.concat(failed, '; '))
    end
    local summary = table.concat(parts, '; ')
    pcall(core.notice, view.thread, #failed > 0 and 'warn' or 'info', summary)
    M.mark(view)
    cb(#failed == 0, summary)
  end
  if opts.confirm == false then
    return run()
  end
  local names = {}
  for _, f in ipairs(plan.files) do
    names[#names + 1] = display(f.path) .. (f.delete and ' (delete)' or '')
  end
  local choice = ('Restore %s'):format(plural(#plan.files, 'file'))
  local prompt = ('Restore to before turn %d%s'):format(turn, #names > 0 and (': ' .. table.concat(names, ', ')) or ' (no file to put back)')
  vim.ui.select({ choice, 'Cancel' }, { prompt = require('acp.util.text').line(prompt) }, function(item)
    if item == choice then
      run()
    else
      cb(false, 'cancelled')
    end
  end)
end

-- The transcript's marks --------------------------------------------------------

--- The entry index of user message number `n` (0-based) of the transcript.
local function user_entry(view, n)
  local indices = {}
  for index, e in pairs(view.entries or {}) do
    if e.kind == 'user' then
      indices[#indices + 1] = index
    end
  end
  table.sort(indices)
  return indices[n + 1], indices[n + 2]
end

--- Marks the undone turns: a line under their `## You` saying so, and the
--- rest of the turn folded.
function M.mark(view)
  if not (view.buf and api.nvim_buf_is_valid(view.buf)) then
    return
  end
  M.views[view.thread] = view
  local ok, list = pcall(require('acp.core').checkpoints, view.thread)
  if not ok then
    return
  end
  api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  folded[view] = folded[view] or {}
  for _, cp in ipairs(list) do
    local index, next_user = user_entry(view, cp.user_index)
    if cp.undone and index then
      local first, prompt_last = view:entry_range(index)
      local last = next_user and (view:entry_range(next_user) - 2) or (api.nvim_buf_line_count(view.buf) - 1)
      api.nvim_buf_set_extmark(view.buf, ns, first, 0, {
        virt_lines = { { { ('↶ turn %d undone by :AcpRestore'):format(cp.id), 'Comment' } } },
      })
      -- The prompt stays in sight; the agent's reply is folded.
      first = prompt_last
      if last > first and not folded[view][index] then
        folded[view][index] = true
        for _, win in ipairs(vim.fn.win_findbuf(view.buf)) do
          api.nvim_win_call(win, function()
            local saved = vim.fn.winsaveview()
            vim.cmd(('silent! %d,%dfold'):format(first + 2, last + 1))
            vim.fn.winrestview(saved)
          end)
        end
      end
    end
  end
end

--- The checkpoint of the turn whose `## You` is under the cursor.
function M.at_cursor(view)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local index, kind = view:entry_at(row)
  if kind ~= 'user' then
    return nil
  end
  local n = 0
  for i, e in pairs(view.entries) do
    if e.kind == 'user' and i < index then
      n = n + 1
    end
  end
  for _, cp in ipairs(require('acp.core').checkpoints(view.thread)) do
    if cp.user_index == n then
      return cp
    end
  end
  return false
end

--- `:AcpRestore [turn]`: without a turn, a pick of the turns (newest
--- first: the prompt, the files it changed).
function M.command(view, arg)
  if not view then
    notify('acp.nvim: no chat to restore (open one with :AcpChat)', vim.log.levels.WARN)
    return
  end
  arg = vim.trim(arg or '')
  if arg ~= '' then
    local turn = tonumber(arg)
    if not turn or turn ~= math.floor(turn) then
      notify(('acp.nvim: :AcpRestore takes a turn number, not %q'):format(arg), vim.log.levels.ERROR)
      return
    end
    return M.restore(view, turn)
  end
  local rows = {}
  for _, cp in ipairs(require('acp.core').checkpoints(view.thread)) do
    if not cp.undone then
      table.insert(rows, 1, cp)
    end
  end
  if #rows == 0 then
    notify('acp.nvim: no turn to restore in this chat')
    return
  end
  vim.ui.select(rows, {
    prompt = 'Restore the files to before turn',
    format_item = function(cp)
      local files = vim.tbl_map(function(p)
        return vim.fn.fnamemodify(p, ':t')
      end, cp.files)
      return ('%d  %s  [%s]'):format(cp.id, cut(cp.prompt, 50), #files > 0 and table.concat(files, ', ') or 'no files')
    end,
  }, function(cp)
    if cp then
      M.restore(view, cp.id)
    end
  end)
end

local group

--- The transcript's key (`chat.keys.restore`) on a `## You` header, and
--- the marks kept as the chat goes on.
function M.attach(view, key)
  M.views[view.thread] = view
  if key then
    vim.keymap.set('n', key, function()
      local cp = M.at_cursor(view)
      if cp == nil then
        notify('acp.nvim: put the cursor on a turn (its "## You" message) to restore the files to before it')
      elseif cp == false then
        notify('acp.nvim: no checkpoint of this turn (from before this chat kept them, or dropped past checkpoints.max_bytes)')
      else
        M.restore(view, cp.id)
      end
    end, { buffer = view.buf, nowait = true, silent = true, desc = 'Restore the files to before this turn' })
  end
  if not group then
    group = api.nvim_create_augroup('acp_checkpoint', { clear = true })
    api.nvim_create_autocmd('User', {
      group = group,
      pattern = { 'AcpSessionStart', 'AcpTurnEnd' },
      callback = function(ev)
        local v = ev.data and M.views[ev.data.thread]
        if v then
          pcall(M.mark, v)
        end
      end,
    })
  end
end

return M
