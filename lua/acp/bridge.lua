--- Main-thread end of the core's bridge: receives each drained batch of
--- events and routes it to the chat views. One call per wake-up; events of
--- one thread are applied as one run so a view edits its buffer once.
local M = {}

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
  local ok, err = xpcall(handler.apply, debug.traceback, handler, run)
  if not ok then
    vim.notify('acp.nvim: chat view error: ' .. tostring(err), vim.log.levels.ERROR)
  end
end

--- Called by the core with a list of event tables.
function M.dispatch(batch)
  local run, run_thread = {}, nil
  for _, ev in ipairs(batch) do
    if ev.type == 'notify' then
      vim.notify(ev.message, vim.log.levels[ev.level:upper()] or vim.log.levels.INFO)
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
end

return M
