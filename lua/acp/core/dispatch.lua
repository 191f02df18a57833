--- Main-thread end of the core's bridge: receives each drained batch of
--- events and routes it to the chat views. One call per wake-up; events of
--- one thread are applied as one run so a view edits its buffer once.
--- It knows no module above the core: the chat views, the main-thread
--- services and the elicitation handler are registered here by the layers
--- that own them (acp.chat.lifecycle wires them when the core starts).
local M = {}

local api = vim.api

--- thread id -> handler with `apply(events)` (a ChatView)
M.handlers = {}

--- Events for threads without a view yet are kept, not dropped: a view that
--- registers later replays them.
M.pending = {}

function M.register(thread, handler)
  M.handlers[thread] = handler
  local queued = M.pending[thread]
  if queued then
    M.pending[thread] = nil
    handler:apply(queued)
  end
end

function M.unregister(thread)
  M.handlers[thread] = nil
  M.pending[thread] = nil
end

local notified = false

--- Records a view error in the core's log (`:AcpLog`); the first one of a
--- session is also shown with vim.notify, later ones only in the log and
--- where they happened (the chat shows its own error lines).
function M.log_error(msg)
  msg = tostring(msg)
  require('acp.events').error(msg:match('^[^\n]*'), 'view')
  local core = require('acp.core')
  local logged = core.is_loaded() and pcall(core.log, 'error', 'view: ' .. msg) or false
  if not notified or not logged then
    notified = true
    require('acp.util.escape').notify('acp.nvim: ' .. msg:match('^[^\n]*') .. (logged and ' (details: :AcpLog)' or ''), vim.log.levels.ERROR)
  end
end

local function deliver(thread, run)
  local handler = M.handlers[thread]
  if not handler then
    local q = M.pending[thread] or {}
    for _, ev in ipairs(run) do
      q[#q + 1] = ev
    end
    M.pending[thread] = q
    return
  end
  -- The view applies each event on its own; this only catches what
  -- escapes it.
  local ok, err = xpcall(handler.apply, debug.traceback, handler, run)
  if not ok then
    M.log_error('chat view error: ' .. tostring(err))
  end
end

--- Main-thread services the core calls (see src/calls.rs), by method;
--- payloads and replies are declared in lua/acp/core/types.lua (acp.Call.*).
--- Registered when the core starts (the editor layer serves them).
---@type table<string, fun(ev: acp.Event.call)>
M.services = {}

--- Takes the elicitation events (`elicitation`, `elicitation_done`,
--- `elicitation_complete`), which belong to no chat view; registered when
--- the core starts (the ask layer shows them).
---@type fun(ev: acp.Event)?
M.on_elicitation = nil

--- Runs a service; a failure is answered (never left pending).
local function serve(ev)
  local fn = M.services[ev.method]
  local ok, err = xpcall(function()
    if not fn then
      error('unknown editor service ' .. tostring(ev.method))
    end
    fn(ev)
  end, debug.traceback)
  if not ok and ev.call ~= 0 then
    pcall(require('acp.core').call_fail, ev.call, tostring(err))
  end
end

--- One-shot answers of the core (e.g. `list_files`), by request id.
M.requests = {}
local next_request = 0

--- Registers `fn(event)` for one answer; returns the request id to give
--- the core.
function M.request(fn)
  next_request = next_request + 1
  M.requests[next_request] = fn
  return next_request
end

local function answer(ev)
  local fn = M.requests[ev.request]
  M.requests[ev.request] = nil
  if fn then
    local ok, err = xpcall(fn, debug.traceback, ev)
    if not ok then
      require('acp.util.escape').notify('acp.nvim: ' .. require('acp.util.text').error(err), vim.log.levels.ERROR)
    end
  end
end

--- A notification of the core. It may carry an agent's error text (a
--- refused mode, a failed sign-in), of any length and over several lines,
--- and arrives while the user types: with Neovim's own notify a longer echo
--- would stop at a hit-enter prompt, so the echo is its first line cut to
--- fit, and the whole text goes to the log (`:AcpLog`).
function M.notify_core(message, level)
  local esc = require('acp.util.escape')
  local lvl = vim.log.levels[tostring(level):upper()] or vim.log.levels.INFO
  message = tostring(message)
  if esc.plain_notify() and (message:find('\n') or vim.fn.strdisplaywidth(message) > vim.v.echospace) then
    local core = require('acp.core')
    if core.is_loaded() and pcall(core.log, level == 'error' and 'error' or 'warn', message) then
      local hint = ' (:AcpLog)'
      message = esc.line(message:match('^[^\n]*'), math.max(20, vim.v.echospace - #hint)) .. hint
    end
  end
  esc.notice(message, lvl)
end

--- Called by the core with a list of event tables (declared in
--- lua/acp/core/types.lua).
---@param batch acp.Event[]
---@param behind? boolean The drain's budget left events for the next one.
function M.dispatch(batch, behind)
  local run, run_thread = {}, nil
  for _, ev in ipairs(batch) do
    if ev.type == 'notify' then
      M.notify_core(ev.message, ev.level)
      if ev.level == 'error' then
        require('acp.events').error(ev.message, 'core')
      end
    elseif ev.type == 'call' then
      serve(ev)
    elseif ev.type == 'files' or ev.type == 'reply' then
      answer(ev)
    elseif ev.type == 'elicitation' or ev.type == 'elicitation_done' or ev.type == 'elicitation_complete' then
      local ok, err = xpcall(M.on_elicitation, debug.traceback, ev)
      if not ok then
        M.log_error('elicitation: ' .. tostring(err))
      end
    else
      if ev.thread ~= run_thread and #run > 0 then
        deliver(run_thread, run)
        run = {}
      end
      run_thread = ev.thread
      run[#run + 1] = ev
    end
  end
  if #run > 0 then
    deliver(run_thread, run)
  end
  if behind then
    M.flush_screen()
  end
end

--- Modes in which the drain shows its changes at once (by first letter):
--- not a hit-enter or more prompt (a redraw would wipe the messages the
--- user has not read), not the command line.
local FLUSH_MODES = { n = true, i = true, R = true, v = true, V = true, ['\22'] = true, s = true, S = true,
  ['\19'] = true, t = true }

--- When the last forced screen update was sent (`vim.uv.hrtime()`).
local forced_at = 0
--- Forced screen updates are at least a frame apart.
local FRAME_NS = 16e6

--- What a drain that left a backlog changed reaches the screen now (once
--- per frame). Neovim sends a screen update to the UI only once its event
--- queue is empty, and a backlog's next drain (2 ms later) was often queued
--- by then: a flood's drains followed each other for 57-74 ms with no
--- screen update. After other drains the loop updates the screen right
--- after anyway, and a second redraw cost paced turns 21% more CPU side by
--- side.
function M.flush_screen()
  local now = vim.uv.hrtime()
  if now - forced_at < FRAME_NS or not api.nvim__redraw then
    return
  end
  if FLUSH_MODES[api.nvim_get_mode().mode:sub(1, 1)] and #api.nvim_list_uis() > 0 then
    forced_at = now
    pcall(api.nvim__redraw, { flush = true })
  end
end

return M
