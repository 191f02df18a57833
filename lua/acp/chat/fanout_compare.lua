--- `:AcpCompare [id]`: what each chat of a fan-out (acp.chat.fanout)
--- changed in its worktree against the commit they all started from, in a
--- tab of its own: at the top a list (one row per agent: branch, files,
--- +/-; one row per file: which agents changed it, with their +/-), under
--- it, for the file under the cursor (<CR>), the base version and each
--- agent's version side by side in diff mode. `t` takes an agent's work:
--- its worktree's changes are committed on its branch, the branch is
--- merged into the base branch, and the other worktrees are offered for
--- removal. git runs off the main loop (vim.system callbacks).
local api = vim.api
local esc = require('acp.util.escape')
local fanout = require('acp.chat.fanout')

local M = {}

--- Open comparisons by fan-out id: { run, tab, list_buf, list_win,
--- changes = { [agent index] = files }, rows = { [line] = row }, cols,
--- diff_wins, file }.
M.open_views = {}

local MAX_READ = 1024 * 1024

local function err(msg)
  esc.notify('acp.nvim: ' .. msg, vim.log.levels.ERROR)
end

local function split0(s)
  return vim.split(s or '', '\0', { trimempty = true })
end

--- Lines and whether the text looks binary, of a file on disk (nil when
--- it is not a readable regular file).
local function read_file(path)
  local st = vim.uv.fs_stat(path)
  if not st or st.type ~= 'file' then
    return nil
  end
  if st.size > MAX_READ then
    return {}, true
  end
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a') or ''
  f:close()
  if s:find('\0', 1, true) then
    return {}, true
  end
  local lines = vim.split(s, '\n', { plain = true })
  if lines[#lines] == '' then
    lines[#lines] = nil
  end
  return lines, false
end

--- What member `m` changed against the fan-out's base commit (the
--- worktree's changed files, acp.editor.worktree) with their line counts:
--- `cb(files)`, files = { [path] = { add, del, status, binary } } (paths
--- relative to the worktree), or `cb(nil, why)`.
function M.changes(run, m, cb)
  local wt = m.wt
  if not (wt and run.base_commit) or m.removed then
    return cb(nil, 'no worktree')
  end
  require('acp.editor.worktree').changed_files(wt, function(list, why)
    if not list then
      return cb(nil, why)
    end
    local files = {}
    for _, f in ipairs(list) do
      files[f.path] = { status = f.status == '?' and 'A' or f.status, add = 0, del = 0 }
    end
    fanout.git(wt.path, { 'diff', '--no-renames', '--numstat', '-z', run.base_commit }, function(ok, out)
      if ok then
        for _, rec in ipairs(split0(out)) do
          local add, del, path = rec:match('^(%S+)\t(%S+)\t(.*)$')
          local f = path and files[path]
          if f then
            f.add, f.del, f.binary = tonumber(add), tonumber(del), add == '-'
          end
        end
      end
      for path, f in pairs(files) do
        if f.status == 'A' and not f.binary and f.add == 0 then
          -- New and not tracked: every line is added.
          local lines, binary = read_file(wt.path .. '/' .. path)
          f.add, f.binary = lines and #lines or 0, binary
        end
      end
      cb(files)
    end)
  end)
end

--- "+3 -1", "bin", "new +3".
local function counts(f)
  if not f then
    return '·'
  end
  if f.binary then
    return f.status == 'D' and 'deleted' or 'binary'
  end
  local s = ('+%d -%d'):format(f.add or 0, f.del or 0)
  if f.status == 'D' then
    return 'deleted ' .. s
  end
  return s
end

local function width(s)
  return api.nvim_strwidth(s)
end

local function pad(s, w)
  return s .. (' '):rep(math.max(0, w - width(s)))
end

--- The list's lines and what each row is: { kind = 'agent'|'file', member
--- = index | path = string }, and the columns (byte ranges) of the agents
--- on file rows.
function M.render(run, changes)
  local lines, rows = {}, {}
  local names = {}
  for i, m in ipairs(run.members) do
    names[i] = esc.line(m.agent, 20)
  end
  local base = run.base_commit and run.base_commit:sub(1, 7) or '?'
  lines[#lines + 1] = ('Fan-out %s: "%s" · base %s @ %s'):format(
    run.id,
    esc.line(run.prompt, 60),
    esc.line(run.base_branch or '(detached)', 40),
    base
  )
  lines[#lines + 1] = '<CR> file: compare · agent: its chat   t take this one   r refresh   q close'
  lines[#lines + 1] = ''
  local nw = 5
  for _, n in ipairs(names) do
    nw = math.max(nw, width(n))
  end
  local all = {}
  for i, m in ipairs(run.members) do
    local files, add, del, n = changes[i], 0, 0, 0
    local state
    if m.failed then
      state = 'failed: ' .. esc.line(m.failed, 60)
    elseif not files then
      state = 'no changes read'
    else
      for path, f in pairs(files) do
        n = n + 1
        add, del = add + (f.add or 0), del + (f.del or 0)
        all[path] = true
      end
      state = ('%d file%s  +%d -%d'):format(n, n == 1 and '' or 's', add, del)
    end
    local branch = m.wt and m.wt.branch or ''
    if run.taken == i then
      state = state .. '  (taken: merged into ' .. esc.line(run.base_branch or '?', 30) .. ')'
    end
    lines[#lines + 1] = ('  %s  %s  %s'):format(pad(names[i], nw), esc.line(branch, 40), state)
    rows[#lines] = { kind = 'agent', member = i }
  end
  lines[#lines + 1] = ''
  local paths = vim.tbl_keys(all)
  table.sort(paths)
  local pw = 4
  for _, p in ipairs(paths) do
    pw = math.max(pw, math.min(60, width(esc.line(p, 60, true))))
  end
  local colw = {}
  for i in ipairs(run.members) do
    colw[i] = math.max(width(names[i]), 7)
    for _, p in ipairs(paths) do
      colw[i] = math.max(colw[i], width(counts(changes[i] and changes[i][p])))
    end
  end
  local head = '  ' .. pad('file', pw)
  local cols = {}
  for i in ipairs(run.members) do
    local from = #head + 3
    head = head .. '   ' .. pad(names[i], colw[i])
    cols[i] = { from, #head }
  end
  lines[#lines + 1] = head
  if #paths == 0 then
    lines[#lines + 1] = '  (no agent changed a file yet)'
  end
  for _, p in ipairs(paths) do
    local line = '  ' .. pad(esc.line(p, 60, true), pw)
    for i in ipairs(run.members) do
      line = line .. '   ' .. pad(counts(changes[i] and changes[i][p]), colw[i])
    end
    lines[#lines + 1] = line
    rows[#lines] = { kind = 'file', path = p }
  end
  return lines, rows, cols
end

--- The comparison of the fan-out `id`, the current chat's, or the only one.
local function find_run(id)
  if id and id ~= '' then
    local run = fanout.runs[id]
    if not run then
      return nil, ('no fan-out %s (:AcpCompare <Tab> lists them)'):format(esc.line(id))
    end
    return run
  end
  local cur = M.by_buf and M.by_buf[api.nvim_get_current_buf()]
  if cur then
    return cur.run
  end
  local run = fanout.of(require('acp.chat').current())
  if run then
    return run
  end
  if #fanout.order == 1 then
    return fanout.runs[fanout.order[1]]
  elseif #fanout.order == 0 then
    return nil, 'no fan-out yet (:AcpFanout {agent} {agent}... starts one)'
  end
  return nil, ('which fan-out? :AcpCompare {id} (%s)'):format(table.concat(fanout.order, ', '))
end

--- Comparisons by their list buffer.
M.by_buf = {}

local function valid_win(w)
  return w and api.nvim_win_is_valid(w)
end

local function close_diff(cmp)
  for _, w in ipairs(cmp.diff_wins or {}) do
    if valid_win(w) then
      pcall(api.nvim_win_close, w, true)
    end
  end
  cmp.diff_wins = {}
end

--- A read-only scratch buffer holding `lines`.
local function scratch(name, lines, path)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  pcall(api.nvim_buf_set_name, buf, name)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  local ft = vim.filetype.match({ filename = path })
  if ft then
    vim.bo[buf].filetype = ft
  end
  return buf
end

local function set_keys(cmp, buf)
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
  end
  map('q', function()
    M.close(cmp)
  end, 'Close the comparison')
  map('t', function()
    M.take_here(cmp)
  end, "Take this agent's work: merge its worktree into the base branch")
end

--- Shows `path` under the list: the base version and each agent's that
--- changed it, side by side in diff mode.
function M.show_file(cmp, path)
  local run = cmp.run
  fanout.git(run.repo, { 'show', run.base_commit .. ':' .. path }, function(ok, out)
    if not (valid_win(cmp.list_win) and api.nvim_tabpage_is_valid(cmp.tab)) then
      return
    end
    local base_lines = {}
    if ok then
      base_lines = vim.split(out, '\n', { plain = true })
      if base_lines[#base_lines] == '' then
        base_lines[#base_lines] = nil
      end
    end
    close_diff(cmp)
    cmp.file = path
    api.nvim_set_current_tabpage(cmp.tab)
    api.nvim_set_current_win(cmp.list_win)
    vim.cmd('belowright split')
    local base_win = api.nvim_get_current_win()
    local id = esc.line(run.id, 40)
    local bbuf = scratch(('acp://compare/%s/base/%s'):format(id, path), base_lines, path)
    api.nvim_win_set_buf(base_win, bbuf)
    cmp.diff_wins = { base_win }
    cmp.win_member = {}
    vim.cmd('diffthis')
    vim.wo[base_win].winbar = ('base · %s @ %s%s%%<'):format(
      esc.statusline(run.base_branch or '(detached)', 30),
      run.base_commit:sub(1, 7),
      ok and '' or ' · (new file)'
    )
    set_keys(cmp, bbuf)
    for i, m in ipairs(run.members) do
      local f = cmp.changes[i] and cmp.changes[i][path]
      if f then
        local lines = read_file(m.wt.path .. '/' .. path) or {}
        vim.cmd('rightbelow vsplit')
        local w = api.nvim_get_current_win()
        local buf = scratch(('acp://compare/%s/%s/%s'):format(id, M.name_part(m.agent), path), lines, path)
        api.nvim_win_set_buf(w, buf)
        vim.cmd('diffthis')
        vim.wo[w].winbar = ('%s · %s · t take this one%%<'):format(esc.statusline(m.agent, 30), counts(f))
        cmp.diff_wins[#cmp.diff_wins + 1] = w
        cmp.win_member[w] = i
        set_keys(cmp, buf)
      end
    end
    vim.cmd('wincmd =')
    -- The list keeps its height.
    if valid_win(cmp.list_win) then
      M.fit_list(cmp)
    end
    api.nvim_set_current_win(cmp.list_win)
  end)
end

--- An agent name as a buffer-name part (no `/`).
function M.name_part(agent)
  return (esc.line(agent, 30):gsub('[/\\]', '_'))
end

local function draw(cmp)
  local lines, rows, cols = M.render(cmp.run, cmp.changes)
  cmp.rows, cmp.cols = rows, cols
  local buf = cmp.list_buf
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  cmp.list_height = math.max(4, math.min(#lines, math.floor(vim.o.lines * 0.5)))
  if valid_win(cmp.list_win) and #(cmp.diff_wins or {}) > 0 then
    M.fit_list(cmp)
  end
end

--- The list keeps its height under the diff windows, all of it in view
--- when it fits.
function M.fit_list(cmp)
  api.nvim_win_set_height(cmp.list_win, cmp.list_height)
  if api.nvim_buf_line_count(cmp.list_buf) <= cmp.list_height then
    api.nvim_win_call(cmp.list_win, function()
      vim.fn.winrestview({ topline = 1 })
    end)
  end
end

--- Reads every member's changes again and redraws; `cb()` after.
function M.refresh(cmp, cb)
  local run = cmp.run
  local pending = #run.members
  local fresh = {}
  local function one_done()
    pending = pending - 1
    if pending == 0 then
      cmp.changes = fresh
      if api.nvim_buf_is_valid(cmp.list_buf) then
        draw(cmp)
      end
      if cb then
        cb()
      end
    end
  end
  if pending == 0 then
    pending = 1
    return one_done()
  end
  for i, m in ipairs(run.members) do
    M.changes(run, m, function(files)
      fresh[i] = files
      one_done()
    end)
  end
end

function M.close(cmp)
  M.open_views[cmp.run.id] = nil
  if api.nvim_tabpage_is_valid(cmp.tab) and #api.nvim_list_tabpages() > 1 then
    vim.cmd(('tabclose %d'):format(api.nvim_tabpage_get_number(cmp.tab)))
  end
end

--- The member the cursor designates in the list: its agent row, or on a
--- file row the agent column under the cursor (or the only agent that
--- changed the file). nil when it cannot tell.
local function member_at_cursor(cmp)
  local win = api.nvim_get_current_win()
  if cmp.win_member and cmp.win_member[win] then
    return cmp.win_member[win]
  end
  if win ~= cmp.list_win then
    return nil
  end
  local pos = api.nvim_win_get_cursor(win)
  local row = cmp.rows[pos[1]]
  if not row then
    return nil
  end
  if row.kind == 'agent' then
    return row.member
  end
  local col = pos[2] + 1
  for i, r in pairs(cmp.cols) do
    if col >= r[1] and col <= r[2] then
      return i
    end
  end
  local only
  for i in ipairs(cmp.run.members) do
    if cmp.changes[i] and cmp.changes[i][row.path] then
      if only then
        return nil
      end
      only = i
    end
  end
  return only
end

function M.take_here(cmp)
  local i = member_at_cursor(cmp)
  if i then
    return M.take(cmp, i)
  end
  local items = {}
  for k, m in ipairs(cmp.run.members) do
    if m.wt then
      items[#items + 1] = k
    end
  end
  esc.select(items, {
    prompt = 'Take which agent’s work?',
    format_item = function(k)
      return esc.line(cmp.run.members[k].agent, 40)
    end,
  }, function(k)
    if k then
      M.take(cmp, k)
    end
  end)
end

--- Takes member `i`'s work after the user agrees: its worktree's changes
--- committed and its branch merged into the base branch; then offers to
--- remove the others.
function M.take(cmp, i)
  local run = cmp.run
  local m = run.members[i]
  if not (m and m.wt) then
    return err(('fan-out %s: %s has no worktree'):format(run.id, esc.line(m and m.agent or '?')))
  end
  if m.view and m.view.state == 'running' then
    return err(('%s is still working: wait for its turn to end (or :AcpCancel in its tab)'):format(esc.line(m.agent)))
  end
  local yes = ('Merge %s (%s) into %s'):format(esc.line(m.agent, 30), esc.line(m.wt.branch, 40), esc.line(run.base_branch or '?', 30))
  esc.select({ yes, 'Cancel' }, { prompt = ('Take the work of %s?'):format(esc.line(m.agent, 30)) }, function(choice)
    if choice ~= yes then
      return
    end
    local wtm = require('acp.editor.worktree')
    -- The worktree's changes are committed on its branch first, then the
    -- branch is merged (--no-ff); conflicts are left to the user.
    wtm.merge(m.wt, function(result, why)
      wtm.report_merge(m.wt, result or {}, why)
      if not (result and (result.merged or result.up_to_date)) then
        return M.refresh(cmp)
      end
      run.taken = i
      M.refresh(cmp, function()
        M.offer_remove(cmp, i)
      end)
    end)
  end)
end

--- After a take: asks whether to remove the other worktrees and branches.
function M.offer_remove(cmp, taken)
  local run = cmp.run
  local others = {}
  for k, m in ipairs(run.members) do
    if k ~= taken and m.wt and not m.removed then
      others[#others + 1] = m
    end
  end
  if #others == 0 then
    return
  end
  local names = table.concat(vim.tbl_map(function(m)
    return esc.line(m.agent, 20)
  end, others), ', ')
  local remove = ('Remove the other worktrees and their branches (%s), closing their chats'):format(names)
  local keep = 'Keep them'
  esc.select({ remove, keep }, { prompt = 'The other agents’ work:' }, function(choice)
    if choice ~= remove then
      return
    end
    local n = #others
    for _, m in ipairs(others) do
      local v = m.view
      if v and not v.closed then
        -- The chat goes first, without its own keep/merge/remove question
        -- (answered here), its tab with it when nothing in it is unsaved.
        local tab = v.tab
        v.worktree = nil
        require('acp.chat.lifecycle').close(v)
        require('acp.chat.worktree').close_tab(tab, m.wt)
      end
      require('acp.editor.worktree').remove(m.wt, { force = true }, function(ok, why)
        if ok then
          m.removed = true
        else
          err(('%s not removed: %s'):format(esc.line(m.wt.path), esc.line(why or 'git failed', 200)))
        end
        n = n - 1
        if n == 0 then
          M.refresh(cmp)
        end
      end)
    end
  end)
end

--- `:AcpCompare [id]`: opens (or shows again) the comparison in its tab.
function M.open(id)
  local run, why = find_run(id)
  if not run then
    return err(why)
  end
  if not run.base_commit then
    return err(('fan-out %s: no worktree was made'):format(run.id))
  end
  local cmp = M.open_views[run.id]
  if cmp and api.nvim_tabpage_is_valid(cmp.tab) and api.nvim_buf_is_valid(cmp.list_buf) then
    api.nvim_set_current_tabpage(cmp.tab)
    return M.refresh(cmp)
  end
  vim.cmd('tabnew')
  local tab = api.nvim_get_current_tabpage()
  local buf = api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'acpcompare'
  pcall(api.nvim_buf_set_name, buf, 'acp://compare/' .. esc.line(run.id, 40))
  vim.bo[buf].modifiable = false
  cmp = { run = run, tab = tab, list_buf = buf, list_win = api.nvim_get_current_win(), changes = {}, rows = {}, cols = {}, diff_wins = {} }
  vim.wo[cmp.list_win].wrap = false
  M.open_views[run.id] = cmp
  M.by_buf[buf] = cmp
  api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      M.by_buf[buf] = nil
      if M.open_views[run.id] == cmp then
        M.open_views[run.id] = nil
      end
    end,
  })
  set_keys(cmp, buf)
  vim.keymap.set('n', '<CR>', function()
    local row = cmp.rows[api.nvim_win_get_cursor(0)[1]]
    if not row then
      return
    end
    if row.kind == 'file' then
      M.show_file(cmp, row.path)
    else
      local m = run.members[row.member]
      if m.view and not m.view.destroyed then
        if m.view.tab and api.nvim_tabpage_is_valid(m.view.tab) then
          api.nvim_set_current_tabpage(m.view.tab)
        end
        m.view:show(true)
      end
    end
  end, { buffer = buf, nowait = true, silent = true, desc = 'Compare this file, or show this agent’s chat' })
  vim.keymap.set('n', 'r', function()
    M.refresh(cmp, function()
      if cmp.file then
        M.show_file(cmp, cmp.file)
      end
    end)
  end, { buffer = buf, nowait = true, silent = true, desc = 'Read the changes again' })
  draw(cmp)
  M.refresh(cmp)
  return cmp
end

return M
