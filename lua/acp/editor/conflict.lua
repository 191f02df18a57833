--- `:AcpConflict [path]`: the buffers whose file changed both on disk and
--- in the buffer (the sync's conflicts, acp.editor.sync) and the agent
--- writes refused over a disk change (acp.editor.refused), completed by
--- path and compared with the file's buffer in a new tab page.
local api = vim.api
local uv = vim.uv or vim.loop

local M = {}

--- Conflicts whose path (relative or full) starts with `lead`.
function M.complete(lead)
  local out = {}
  for buf, c in pairs(require('acp.editor.sync').conflicts) do
    if api.nvim_buf_is_valid(buf) and not c.large then
      local rel = vim.fn.fnamemodify(c.path, ':~:.')
      if vim.startswith(rel, lead) or vim.startswith(c.path, lead) then
        out[#out + 1] = rel
      end
    end
  end
  vim.list_extend(out, require('acp.editor.refused').complete(lead))
  table.sort(out)
  return out
end

--- The real path `arg` names (nil for none). The completion offers the
--- agent's paths: literal but for `%`, `#` and `~` (expand() would run
--- backticks).
local function wanted(arg)
  if not arg or arg == '' then
    return nil
  end
  return uv.fs_realpath(vim.fn.fnamemodify(require('acp.util.escape').arg_path(arg), ':p')) or arg
end

--- The newest buffer in a sync conflict whose file is `want` (any: nil).
local function find_buffer(want)
  local found
  for buf, c in pairs(require('acp.editor.sync').conflicts) do
    if api.nvim_buf_is_valid(buf) and not c.large and (not want or c.path == want) then
      if not found or buf > found then
        found = buf
      end
    end
  end
  return found
end

--- A buffer in a sync conflict: the disk text | the buffer, in diff mode.
--- Opening it acknowledges the disk version: the buffer may then be
--- written over it without Neovim's warning.
--- An agent write refused over a disk change: its text | the file.
function M.open(arg)
  local want = wanted(arg)
  local buf = find_buffer(want)
  if not buf then
    local refused = require('acp.editor.refused')
    local entry = refused.find(want)
    if entry then
      return refused.open(entry)
    end
    require('acp.util.escape').notify('acp.nvim: no file in conflict' .. ((arg and arg ~= '') and (' named ' .. arg) or ''))
    return
  end
  local sync = require('acp.editor.sync')
  local path = sync.records[buf].path
  local text, _, key = sync.read_file(path)
  if not text then
    require('acp.util.escape').notify('acp.nvim: cannot read ' .. path, vim.log.levels.WARN)
    return
  end
  local tab, left = require('acp.editor.compare').open({
    buf = buf,
    name = ('acp://conflict/%d/%s (on disk)'):format(buf, path),
    lines = require('acp.core').decode(text, sync.format(buf)),
    left_bar = '%#AcpTitle# On disk %* do/dp move hunks · :w in the right window saves · q close',
    right_bar = '%#AcpTitle# Your buffer %*',
  })
  sync.seen(buf, text, key)
  return tab, left, buf
end

return M
