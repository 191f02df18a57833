--- Main-thread side of `fs/*`: hands a loaded buffer's text to the core
--- in slices (so a 10 MB buffer never blocks a frame), and applies an agent
--- write as minimal line edits in one undo step.
local api = vim.api
local uv = vim.uv or vim.loop

local M = {}

--- Time spent per tick handing out slices; the rest waits for the next one.
M.budget_ns = 4e6
--- Lines per slice.
M.slice_lines = 4096

--- The loaded file buffer for `path` (as sent, or its resolved real path).
function M.find_buffer(path, resolved)
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == '' then
      local name = api.nvim_buf_get_name(b)
      if name ~= '' and (name == path or name == resolved or uv.fs_realpath(name) == resolved) then
        return b
      end
    end
  end
end

--- Brings the buffer up to date with its file when the file changed on
--- disk (see `acp.editor.sync`). Never fails the request.
local function sync(buf, thread)
  local s = require('acp.editor.sync')
  local ok, err = pcall(s.check, buf, s.views[thread])
  if not ok then
    s.notice(s.views[thread], ('could not sync %s: %s'):format(api.nvim_buf_get_name(buf), err))
  end
end

--- buffer_read: { path, resolved } -> parts (text slices) + { found, ... }
---@param ev acp.Event.call payload acp.Call.buffer_read, reply acp.Reply.buffer_read
function M.buffer_read(ev)
  local c, call, p = require('acp.core'), ev.call, ev.payload
  local buf = M.find_buffer(p.path, p.resolved)
  if not buf then
    return c.call_done(call, { found = false })
  end
  -- A file changed on disk is served as the disk has it (unless the core
  -- asks for the buffer as it is: the base of a write's merge).
  if p.sync ~= false then
    sync(buf, ev.thread)
  end
  local tick = api.nvim_buf_get_changedtick(buf)
  local total = api.nvim_buf_line_count(buf)
  local pos = 0
  local function step()
    if not api.nvim_buf_is_loaded(buf) or api.nvim_buf_get_changedtick(buf) ~= tick then
      -- Changed between slices: the core asks again for a consistent copy
      -- (after a few tries with `whole`, which takes it in this one tick).
      return c.call_done(call, { found = false, stale = true })
    end
    local t0 = uv.hrtime()
    repeat
      local e = math.min(pos + M.slice_lines, total)
      -- The first part says how large the text is: the core makes room for
      -- it once (no copy of a growing 10 MB text within a tick).
      local size = pos == 0 and math.max(0, api.nvim_buf_get_offset(buf, total)) or nil
      c.call_part(call, table.concat(api.nvim_buf_get_lines(buf, pos, e, true), '\n'), size)
      pos = e
    until pos >= total or (not p.whole and uv.hrtime() - t0 > M.budget_ns)
    if pos < total then
      return vim.schedule(step)
    end
    -- The core makes the file's text of the parts with the buffer's format.
    c.call_done(call, {
      found = true,
      bufnr = buf,
      tick = tick,
      lines = total,
      modified = vim.bo[buf].modified,
      format = require('acp.editor.sync').format(buf),
    })
  end
  step()
end

--- buffer_apply: { bufnr, tick, hunks = {{old_start, old_end, lines}}, save }
--- Hunks are ascending; applied bottom-up so earlier offsets stay valid.
---@param ev acp.Event.call payload acp.Call.buffer_apply, reply acp.Reply.buffer_apply
function M.buffer_apply(ev)
  local c, call, p = require('acp.core'), ev.call, ev.payload
  local buf = p.bufnr
  if api.nvim_buf_is_valid(buf) and api.nvim_buf_is_loaded(buf) then
    -- A disk change since the read is synced first; the hunks are then
    -- stale and the core computes them again.
    sync(buf, ev.thread)
  end
  if not (api.nvim_buf_is_valid(buf) and api.nvim_buf_is_loaded(buf)) or api.nvim_buf_get_changedtick(buf) ~= p.tick then
    return c.call_done(call, { stale = true })
  end
  local ok, err = pcall(require('acp.editor.sync').apply_hunks, buf, p.hunks)
  if not ok then
    return c.call_done(call, { error = tostring(err) })
  end
  -- Never written over a disk change (Neovim would ask, and a yes would
  -- lose it): the buffer then stays modified and the next check merges.
  local saved = false
  if p.save and vim.bo[buf].modified then
    saved = require('acp.editor.sync').save(buf)
  end
  c.call_done(call, { saved = saved, modified = vim.bo[buf].modified })
  -- The chat the call came from names the agent (the sync follows its files).
  local view = require('acp.editor.sync').views[ev.thread]
  require('acp.events').file_changed({
    path = p.path,
    bufnr = buf,
    by = 'agent',
    how = 'buffer',
    thread = ev.thread,
    agent = view and view.agent,
  })
end

return M
