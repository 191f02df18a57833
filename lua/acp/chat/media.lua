--- Images and audio in the agent's output. The core saves each to a file
--- of its own under this Neovim's media folder (`acp.core.media_root()`)
--- and the transcript shows one line: a markdown link with the kind, the
--- type and the size, `![image image/png · 12.0 KB](/tmp/acp.nvim-1-5e2a/media/1/image-1.png)`.
--- <CR> (the card key) or gx on that line opens the file with
--- |vim.ui.open()|. Only a file in the media folder, named as the core
--- names them, is opened: a line the agent wrote to look like one opens
--- nothing.
local api = vim.api

local M = {}

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.INFO)
end

local root
local function media_root()
  if not root then
    local ok, r = pcall(require('acp.core').media_root)
    root = ok and type(r) == 'string' and r or false
  end
  return root or nil
end

--- The media link on `line`: { kind, path } when it names a file the core
--- saved (in the media folder, `<kind>-<n>.<ext>`), else nil.
function M.parse(line)
  local kind, path = line:match('^%s*!?%[(%a+) [^%]]*%]%((.+)%)%s*$')
  if not (kind == 'image' or kind == 'audio') then
    return nil
  end
  local top = media_root()
  if not top then
    return nil
  end
  local dir, name = path:match('^(.*)/([^/]+)$')
  if not dir or dir:match('^(.*)/[^/]+$') ~= top then
    return nil
  end
  if not (dir:match('/(%d+)$') and name:match('^' .. kind .. '%-%d+%.%w+$')) then
    return nil
  end
  return { kind = kind, path = path }
end

--- Opens the image or audio on the cursor's line of the transcript.
--- Returns false when the line shows none.
function M.open_at_cursor(view)
  if api.nvim_get_current_buf() ~= view.buf then
    return false
  end
  local line = api.nvim_get_current_line()
  local m = M.parse(line)
  if not m then
    local kind = line:match('^%s*!?%[(%a+) [^%]]*%]%(.+%)%s*$')
    if kind == 'image' or kind == 'audio' then
      -- Looks like one, but no file of ours: text of the agent's.
      notify('this line names no file acp.nvim saved: nothing is opened', vim.log.levels.WARN)
      return true
    end
    return false
  end
  if not vim.uv.fs_stat(m.path) then
    notify(('the %s file is gone (saved files are removed when Neovim exits)'):format(m.kind), vim.log.levels.WARN)
    return true
  end
  local ok, err = pcall(vim.ui.open, m.path)
  if not ok then
    notify(('could not open the %s: %s'):format(m.kind, require('acp.util.text').error(err)), vim.log.levels.WARN)
  end
  return true
end

--- gx in the transcript: the media on the line, else what gx opens.
function M.attach(view)
  vim.keymap.set('n', 'gx', function()
    if M.open_at_cursor(view) then
      return
    end
    local urls = vim.ui._get_urls and vim.ui._get_urls() or { vim.fn.expand('<cfile>') }
    for _, url in ipairs(urls) do
      if url ~= '' then
        vim.ui.open(url)
      end
    end
  end, { buffer = view.buf, silent = true, desc = 'Open the image or audio on this line (or the link under the cursor)' })
end

return M
