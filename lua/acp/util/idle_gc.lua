--- Garbage collection while the user reads. Lua's collector runs in steps
--- paid by whoever allocates: a drain that builds a burst of events (a
--- hundred tool cards: 1-2 MB of tables) otherwise finishes the cycle the
--- last turn's garbage started, 2-4 ms of that drain (measured: the event
--- tables of such a burst took 3-4.5 ms to build in the drain, 1.2-2 ms after
--- a collection). So once a turn ended and its highlights are in, one
--- collection cycle is run here, a slice of `SLICE_NS` at a time on idle
--- turns of the event loop; the next turn's events then start on a clean
--- heap. It yields to the agent's events and to highlighting left for
--- later, and gives up after `MAX_TICKS` (a very large heap of other
--- plugins: the collector then goes on at its own pace, as always).
local M = {}

-- Work per turn of the event loop, and the pause between two.
local SLICE_NS = 1e6
local TICK_MS = 10
local MAX_TICKS = 300

local running = false

--- Something else wants the main thread: the agent's events, or the
--- highlighting left for later (it allocates; collect after it).
local function busy()
  local md = package.loaded['acp.chat.markdown']
  return md ~= nil and ((md.pending or 0) > 0 or md.events_wait())
end

local function tick(n)
  if n > MAX_TICKS then
    running = false
    return
  end
  if not busy() then
    local deadline = vim.uv.hrtime() + SLICE_NS
    repeat
      -- true once a cycle finished.
      if collectgarbage('step', 0) then
        running = false
        return
      end
    until vim.uv.hrtime() >= deadline
  end
  vim.defer_fn(function()
    tick(n + 1)
  end, TICK_MS)
end

--- A turn ended: collect on the next idle turns (once, however many chats
--- ask at the same time).
function M.request()
  if running or vim.env.ACP_NO_IDLE_GC then
    return
  end
  running = true
  vim.defer_fn(function()
    tick(1)
  end, TICK_MS)
end

--- Whether a collection is under way (tests).
function M.running()
  return running
end

return M
