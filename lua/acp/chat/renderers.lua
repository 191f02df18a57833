--- Markdown renderers (render-markdown.nvim, markview.nvim) kept live on
--- the transcript (`:h acp-render`).
---
--- Both re-render a buffer from its own autocmds (TextChanged, CursorMoved,
--- BufWinEnter...), which fire for the current buffer only: while the
--- cursor is in the input, where it is after sending, the streamed answer
--- stayed as raw text. So each drain of a chat (acp.chat.apply) asks the
--- renderers present to render its transcript again, at most once per
--- `M.interval` ms (a drain that comes sooner is folded into one refresh at
--- the end of the interval; never one per chunk), and only with
--- `chat.markdown = 'markdown'` (the parser those plugins read) and a window
--- showing the chat.
---
--- markview.nvim ignores `nofile` buffers by default (its
--- `preview.ignore_buftypes`), and the transcript is one: the chat attaches
--- it by itself (`:Markview attach`), so no option of markview's needs a
--- change.
local M = {}

--- Least time between two refreshes of one chat, in ms.
M.interval = 100

--- Refreshes done, by transcript buffer (what tests and `:checkhealth` read).
---@type table<integer, integer>
M.count = {}

-- By transcript buffer: the loop time of the last refresh, whether one is
-- scheduled, whether markview was attached.
local last, due, attached = {}, {}, {}

--- The renderers loaded now.
---@return { render_markdown: boolean, markview: boolean }
function M.present()
  return {
    render_markdown = type(package.loaded['render-markdown']) == 'table',
    markview = type(package.loaded.markview) == 'table',
  }
end

-- Renderers whose failure was logged (once each).
local failed = {}

--- Logs a renderer's error once (`:AcpLog`); the chat goes on.
local function warn(name, err)
  if failed[name] then
    return
  end
  failed[name] = true
  local core = require('acp.core')
  if core.is_loaded() then
    pcall(core.log, 'warn', ('%s failed to render the chat: %s'):format(name, tostring(err)))
  end
end

--- Whether the transcript is markdown for the renderers (`chat.markdown`).
local function wanted()
  return require('acp.config').options.chat.markdown == 'markdown'
end

--- Renders `buf` again with each renderer present (errors are logged, never
--- raised: a renderer's failure must not break the chat).
---@param buf integer
function M.refresh(buf)
  if not vim.api.nvim_buf_is_valid(buf) or vim.fn.bufwinid(buf) == -1 then
    return
  end
  local has = M.present()
  local done = false
  if has.render_markdown then
    -- render-markdown.nvim >= 8.10: `require('render-markdown').render({ buf })`
    -- renders the buffer in each window showing it, whatever the mode of
    -- the window the cursor is in (its documented API for other plugins).
    local rm = package.loaded['render-markdown']
    if type(rm.render) == 'function' then
      local ok, err = pcall(rm.render, { buf = buf, event = 'AcpUpdate' })
      done = done or ok
      if not ok then
        warn('render-markdown', err)
      end
    end
  end
  if has.markview then
    -- markview.nvim: `:Markview attach {buf}` / `:Markview render {buf}`,
    -- as Lua (`require('markview').commands`).
    local commands = package.loaded.markview.commands
    if type(commands) == 'table' then
      local ok, err = pcall(function()
        if not attached[buf] and type(commands.attach) == 'function' then
          attached[buf] = true
          commands.attach(buf)
        end
        commands.render(buf)
      end)
      done = done or ok
      if not ok then
        warn('markview', err)
      end
    end
  end
  if done then
    M.count[buf] = (M.count[buf] or 0) + 1
  end
end

--- After a drain of `view`'s events: a refresh of its transcript, throttled.
---@param view acp.ChatView
function M.after_apply(view)
  local buf = view.buf
  if due[buf] or not wanted() then
    return
  end
  local has = M.present()
  if not (has.render_markdown or has.markview) then
    return
  end
  if last[buf] == nil then
    last[buf] = -math.huge
    vim.api.nvim_create_autocmd('BufWipeout', {
      buffer = buf,
      once = true,
      callback = function()
        M.forget(buf)
      end,
    })
  end
  due[buf] = true
  local wait = math.max(0, last[buf] + M.interval - vim.uv.now())
  vim.defer_fn(function()
    if not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    due[buf] = nil
    last[buf] = vim.uv.now()
    M.refresh(buf)
  end, wait)
end

--- Forgets a closed chat's transcript `buf`.
---@param buf integer
function M.forget(buf)
  last[buf], due[buf], attached[buf], M.count[buf] = nil, nil, nil, nil
end

return M
