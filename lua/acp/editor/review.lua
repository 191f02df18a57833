--- Reviewing agent edits in Neovim's diff mode.
--- * A diff from a tool card (or a permission request) opens old | new in a
---   new tab; from a permission, the option keys answer it from there.
--- * `:AcpReview` walks every file the session changed: the file without
---   the agent's changes (the user's own edits kept) | the file itself, with
---   keys to revert or keep one hunk, revert the agent's changes to the
---   file, or accept all; keep and accept last for the session.

--- Tells the user (see acp.util.escape.notify: an error told while they
--- type holds no redraw). Required when used, not at load.
local function notify(msg, level, opts)
  return require('acp.util.escape').notify(msg, level, opts)
end

local api = vim.api

local M = {}

local function scratch(name, text, ft)
  local buf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, buf, name)
  vim.bo[buf].bufhidden = 'wipe'
  local lines = vim.split(text or '', '\n', { plain = true })
  if lines[#lines] == '' and #lines > 1 then
    lines[#lines] = nil
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  if ft then
    vim.bo[buf].filetype = ft
  end
  return buf
end

local function map(buf, lhs, fn, desc)
  vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
end

local counter = 0

--- A review pane's winbar, built for the window's width (acp.util.winbar):
--- ` label  path after · key · key…`. The label, the file name, `after`
--- and the first key (`q close`) always show; then as many of the other
--- keys (most important first) as fit whole; the path's directories get
--- what is left (shortened from the left). The file's own pane shows the
--- path without keys.
---@param keys string[] statusline text (escaped), most important first
local function pane_bar(win, label, path, after, keys)
  local esc = require('acp.util.escape')
  local width = api.nvim_strwidth
  -- Relative to the current directory (or `~`) when it is under it.
  local shown = vim.fn.fnamemodify(path, ':~:.')
  local name = vim.fn.fnamemodify(path, ':t')
  local widths = {}
  for i, k in ipairs(keys) do
    local plain = (' · ' .. k):gsub('%%%%', '%%')
    widths[i] = width(plain)
  end
  require('acp.util.winbar').set(win, function(cols)
    local fixed = width(' ' .. label .. '  ') + width(esc.line(after))
    local least = width(esc.line(name)) + 1
    local used, fit = 0, {}
    for i, k in ipairs(keys) do
      if i > 1 and fixed + least + used + widths[i] > cols then
        break
      end
      used = used + widths[i]
      fit[#fit + 1] = k
    end
    local room = math.max(cols - fixed - used, least)
    local rest = #fit > 0 and (' · ' .. table.concat(fit, ' · ')) or ''
    return ('%%#AcpTitle# %s %%* %s%s%s%%<'):format(label, esc.statusline(shown, room, true), esc.statusline(after), rest)
  end)
end

--- Puts the cursor on the first hunk (line 1 may already be one).
local function first_hunk()
  vim.cmd('diffupdate')
  vim.cmd('normal! gg')
  if vim.fn.diff_hlID(1, 1) == 0 then
    pcall(vim.cmd, 'normal! ]c')
  end
end

--- Opens `old` | `new` of `path` side by side in a new tab. Returns the
--- tab and the two buffers.
function M.open_diff(path, old_text, new_text, opts)
  opts = opts or {}
  counter = counter + 1
  local ft = vim.filetype.match({ filename = path })
  local label = old_text == nil and 'new file' or 'before'
  vim.cmd('stopinsert')
  vim.cmd('tabnew')
  -- The tab's empty buffer goes once the review's buffers replace it.
  vim.bo.bufhidden = 'wipe'
  local tab = api.nvim_get_current_tabpage()
  local left = scratch(('acp://review/%d/%s (%s)'):format(counter, path, label), old_text or '', ft)
  local right = scratch(('acp://review/%d/%s (proposed)'):format(counter, path), new_text, ft)
  api.nvim_win_set_buf(0, left)
  vim.cmd('diffthis')
  -- Both panes have a bar, so their rows line up.
  pane_bar(api.nvim_get_current_win(), label == 'new file' and 'New file' or 'Before', path, '', {})
  vim.cmd('rightbelow vsplit')
  api.nvim_win_set_buf(0, right)
  vim.cmd('diffthis')
  for _, b in ipairs({ left, right }) do
    map(b, 'q', function()
      M.close(tab)
    end, 'Close the review')
    map(b, ']h', ']c', 'Next hunk')
    map(b, '[h', '[c', 'Previous hunk')
  end
  -- The path is the agent's: escaped, or a `%{…}` in it would run.
  local esc = require('acp.util.escape')
  pane_bar(api.nvim_get_current_win(), 'Review', path, ' (proposed)', { 'q close' .. esc.statusline(opts.hint or ''), ']c/[c hunks' })
  first_hunk()
  return tab, left, right
end

function M.close(tab)
  if tab and api.nvim_tabpage_is_valid(tab) and #api.nvim_list_tabpages() > 1 then
    vim.cmd(('tabclose %d'):format(api.nvim_tabpage_get_number(tab)))
  end
end

--- The diff items of a tool card: a core entry or the agent's raw
--- `toolCall` (both keep them in `content` with `type = 'diff'`).
function M.diffs_of(entry)
  local out = {}
  for _, c in ipairs((entry or {}).content or {}) do
    if c.type == 'diff' then
      out[#out + 1] = c
    end
  end
  return out
end

--- Opens the first diff of a tool card.
function M.open_entry(entry, opts)
  local d = M.diffs_of(entry)[1]
  if not d then
    notify('acp.nvim: this card has no diff', vim.log.levels.INFO)
    return
  end
  return M.open_diff(d.path, d.old_text, d.new_text, opts)
end

-- :AcpReview -----------------------------------------------------------------

--- The text of `path` as the review shows and reverts it: its loaded
--- buffer's (as a `:write` would put it in the file), else the disk's.
local function current_text(path)
  local sync = require('acp.editor.sync')
  local real = vim.uv.fs_realpath(path) or path
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local name = api.nvim_buf_get_name(buf)
    if api.nvim_buf_is_loaded(buf) and name ~= '' and (name == path or (vim.uv.fs_realpath(name) or name) == real) then
      return sync.buffer_text(buf)
    end
  end
  return (sync.read_file(path))
end

--- The text before the cards' diffs of one file, undone newest first from
--- `text` (the file now); nil when that cannot be told. Agents send the
--- replaced fragment as `oldText` (an Edit tool's snippet), so a card's
--- `oldText` is the whole file only when its `newText` is the whole file
--- now; otherwise a `newText` found exactly once is put back to its
--- `oldText`. Taking a snippet for the file would make R replace the
--- file with the snippet.
function M.before_cards(text, diffs)
  for k = #diffs, 1, -1 do
    local d = diffs[k]
    if text == nil or d.new_text == nil then
      return nil
    end
    if text == d.new_text then
      -- A new-file claim (no oldText) is never taken as known.
      text = d.old_text
    else
      local at = d.new_text ~= '' and d.old_text ~= nil and text:find(d.new_text, 1, true)
      if at and not text:find(d.new_text, at + 1, true) then
        text = text:sub(1, at - 1) .. d.old_text .. text:sub(at + #d.new_text)
      elseif not d.failed then
        return nil
      end
      -- A failed or rejected card whose text is not there changed nothing.
    end
  end
  return text
end

--- Files the session changed: this client's records first (its writes
--- and the agent's disk edits the buffer sync saw, each a chain of the
--- agent's steps the core takes back from the text now, keeping the user's
--- edits), then diff contents of tool cards. Only the client's own records
--- can call a file new: a card's missing `oldText` is a claim, and such a
--- file is "changed" with an unknown original. Returns the files to review
--- and the paths whose changes were all accepted.
function M.changed_files(view)
  local core = require('acp.core')
  local files, seen, accepted = {}, {}, {}
  for _, w in ipairs(core.writes(view.thread)) do
    if not seen[w.path] then
      seen[w.path] = true
      if w.accepted then
        accepted[#accepted + 1] = w.path
      else
        files[#files + 1] = { path = w.path, record = true }
      end
    end
  end
  -- Cards before the last "accept all" are accepted with it.
  local by_path, order = {}, {}
  local i = view.review_accepted_entries or 0
  while true do
    local e = core.entry(view.thread, i)
    if e == nil then
      break
    end
    if e.entry == 'tool_call' then
      local failed = e.status == 'failed' or e.client_state == 'rejected' or e.client_state == 'cancelled'
      for _, d in ipairs(M.diffs_of(e)) do
        if not seen[d.path] then
          if not by_path[d.path] then
            by_path[d.path] = {}
            order[#order + 1] = d.path
          end
          table.insert(by_path[d.path], { old_text = d.old_text, new_text = d.new_text, failed = failed })
        end
      end
    end
    i = i + 1
  end
  for _, path in ipairs(order) do
    files[#files + 1] = { path = path, cards = by_path[path] }
  end
  return files, accepted
end

--- What the left side of file `f` shows: the text now with the agent's
--- changes taken back (`f.original`), from the core's record, or for a
--- card's file from its diffs. Sets `f.original`, `f.new_file`,
--- `f.unknown` and `f.kept` (regions the user edited over the agent's).
local function compute_base(view, f)
  local core = require('acp.core')
  if f.record then
    local ok = require('acp.editor.open').check_for(view, f.path, true)
    local now = ok and current_text(ok) or nil
    local base = core.review_base(view.thread, f.path, now)
    f.original = base and base.text
    f.unknown = f.original == nil
    f.new_file = base ~= nil and base.absent == true
    f.created = base ~= nil and base.created == true
    f.kept = base and base.kept or 0
    return
  end
  -- A card's path is the agent's: a FIFO, a URL-like name or a file
  -- outside the roots is not read (its original is then unknown).
  local ok = require('acp.editor.open').check_for(view, f.path, true)
  f.original = M.before_cards(ok and current_text(ok) or nil, f.cards)
  f.new_file, f.unknown, f.kept = false, f.original == nil, 0
end

local function plural(n, word)
  return ('%d %s%s'):format(n, word, n == 1 and '' or 's')
end

--- Shows the file in the current window: the buffer of the checked path
--- (see acp.editor.open: no `term://` or other URL-like name, no FIFO or device,
--- inside the roots), or a scratch buffer saying why it is not opened.
local function file_window(state, f)
  local open = require('acp.editor.open')
  local buf, why = open.show(state.view, api.nvim_get_current_win(), f.path, { new_ok = true })
  if buf then
    f.refused = nil
    return buf
  end
  f.refused = why
  buf = scratch(('acp://review/%d/%s (not opened)'):format(state.id, f.path), ('acp.nvim: not opening %s: %s'):format(open.display(f.path), why))
  api.nvim_win_set_buf(0, buf)
  return buf
end

local function refused_note(f)
  notify(('acp.nvim: %s is not opened (%s): nothing to revert'):format(require('acp.editor.open').display(f.path), f.refused), vim.log.levels.WARN)
end

--- Shows file `idx` of the review: the file without the agent's changes
--- (the user's own edits kept) | the file.
function M.show_file(state, idx)
  local f = state.files[idx]
  if not f then
    return
  end
  state.idx = idx
  if not api.nvim_tabpage_is_valid(state.tab) then
    return
  end
  api.nvim_set_current_tabpage(state.tab)
  vim.cmd('silent! diffoff!')
  vim.cmd('silent! only')
  compute_base(state.view, f)
  local ft = vim.filetype.match({ filename = f.path })
  local left = scratch(('acp://review/%d/%s (without the agent\'s changes)'):format(state.id, f.path), f.original or '', ft)
  api.nvim_win_set_buf(0, left)
  vim.cmd('diffthis')
  local left_win = api.nvim_get_current_win()
  vim.cmd('rightbelow vsplit')
  local file_buf = file_window(state, f)
  local file_win = api.nvim_get_current_win()
  vim.cmd('diffthis')
  api.nvim_set_current_win(left_win)
  local name = vim.fn.fnamemodify(f.path, ':t')
  local function revert_hunk()
    if f.refused then
      return refused_note(f)
    end
    -- Put the original hunk under the cursor into the file.
    api.nvim_set_current_win(left_win)
    local ok, err = pcall(vim.cmd, 'diffput')
    if not ok then
      notify('acp.nvim: ' .. require('acp.util.text').error(err), vim.log.levels.WARN)
    end
  end
  local function keep_hunk()
    if f.unknown then
      notify(('acp.nvim: the text of %s before the change is not known; nothing to keep it against'):format(f.path), vim.log.levels.WARN)
      return
    end
    -- The agent's hunk becomes the baseline: it no longer shows as a change,
    -- and the core keeps that decision (a reopened review shows the same).
    api.nvim_set_current_win(left_win)
    local before = api.nvim_buf_get_lines(left, 0, -1, false)
    vim.bo[left].modifiable = true
    local ok, err = pcall(vim.cmd, 'diffget')
    vim.bo[left].modifiable = false
    if not ok then
      notify('acp.nvim: ' .. require('acp.util.text').error(err), vim.log.levels.WARN)
      return
    end
    local after = api.nvim_buf_get_lines(left, 0, -1, false)
    if vim.deep_equal(before, after) then
      return
    end
    local core, sync = require('acp.core'), require('acp.editor.sync')
    local format = api.nvim_buf_is_loaded(file_buf) and sync.format(file_buf) or nil
    local now = api.nvim_buf_is_loaded(file_buf) and sync.buffer_text(file_buf) or current_text(f.path) or ''
    core.review_keep(state.thread, f.path, core.encode(after, format), now)
    f.record, f.cards = true, nil
    notify(('acp.nvim: kept 1 hunk of %s'):format(name))
  end
  local function revert_file()
    if f.refused then
      return refused_note(f)
    end
    if f.unknown then
      notify(
        ('acp.nvim: the text of %s before the change is not known (no record of it, and the agent\'s cards do not tell); revert it by hand'):format(f.path),
        vim.log.levels.WARN
      )
      return
    end
    if f.new_file then
      vim.fn.delete(f.path)
      pcall(api.nvim_buf_delete, file_buf, { force = true })
      notify(('acp.nvim: deleted %s (the agent created it)'):format(f.path))
      return M.show_file(state, math.min(idx + 1, #state.files))
    end
    local want = api.nvim_buf_get_lines(left, 0, -1, false)
    local hunks = require('acp.core').hunks(api.nvim_buf_get_lines(file_buf, 0, -1, false), want)
    api.nvim_buf_set_lines(file_buf, 0, -1, false, want)
    vim.cmd('diffupdate')
    local kept = (f.kept or 0) > 0 and ('; %s you edited kept'):format(plural(f.kept, 'hunk')) or ''
    if f.created then
      -- Created by the agent, then changed by someone else: not deleted.
      notify(('acp.nvim: not deleting %s: it changed since the agent created it%s'):format(
        f.path,
        #hunks > 0 and ('; reverted %s of the agent\'s in its buffer'):format(plural(#hunks, 'hunk')) or ''
      ), vim.log.levels.WARN)
      return
    end
    notify(('acp.nvim: reverted %s: %s%s (in its buffer; write it to keep)'):format(name, plural(#hunks, 'hunk'), kept))
  end
  map(left, 'r', revert_hunk, 'Revert the hunk under the cursor')
  map(left, 'R', revert_file, "Revert the agent's changes to the file")
  map(left, 'k', keep_hunk, 'Keep the hunk under the cursor')
  map(left, 'A', function()
    local also = {}
    for _, g in ipairs(state.files) do
      if not g.record then
        also[#also + 1] = g.path
      end
    end
    require('acp.core').accept_changes(state.thread, also)
    if state.view then
      local next_index = 0
      for index in pairs(state.view.entries) do
        next_index = math.max(next_index, index + 1)
      end
      state.view.review_accepted_entries = next_index
    end
    notify(('acp.nvim: all changes accepted (%s)'):format(plural(#state.files, 'file')))
    M.close(state.tab)
  end, 'Accept all changes')
  map(left, ']f', function()
    M.show_file(state, math.min(idx + 1, #state.files))
  end, 'Next changed file')
  map(left, '[f', function()
    M.show_file(state, math.max(idx - 1, 1))
  end, 'Previous changed file')
  map(left, 'q', function()
    M.close(state.tab)
  end, 'Close the review')
  -- Both panes have a bar, so their rows line up; "Review i/n <file>"
  -- shows whatever the width.
  pane_bar(left_win, ('Review %d/%d'):format(idx, #state.files), f.path,
    f.new_file and ' (new)' or f.unknown and ' (before unknown)' or '',
    { 'q close', 'r revert / k keep hunk', 'R revert file', 'A accept all', ']c/[c hunks', ']f/[f files' })
  if api.nvim_win_is_valid(file_win) then
    pane_bar(file_win, 'File', f.path, f.refused and ' (not opened)' or '', {})
  end
  first_hunk()
  if (f.kept or 0) > 0 then
    notify(('acp.nvim: %s: %s of the agent\'s changes you edited since; kept as you left them'):format(name, plural(f.kept, 'hunk')))
  end
  return left, file_buf
end

function M.review(view)
  local files, accepted = M.changed_files(view)
  if #files == 0 then
    if #accepted > 0 then
      notify(('acp.nvim: the agent changed %s; all accepted'):format(plural(#accepted, 'file')))
    else
      notify('acp.nvim: the agent changed no files in this session')
    end
    return
  end
  counter = counter + 1
  vim.cmd('stopinsert')
  vim.cmd('tabnew')
  -- The tab's empty buffer goes once the review's buffers replace it.
  vim.bo.bufhidden = 'wipe'
  for _, f in ipairs(files) do
    compute_base(view, f)
  end
  local state = { files = files, tab = api.nvim_get_current_tabpage(), id = counter, thread = view.thread, view = view }
  M.last = state
  M.show_file(state, 1)
  return state
end

return M
