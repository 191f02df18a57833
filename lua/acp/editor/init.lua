--- The editor layer: what the agent reaches in this Neovim, the main-thread
--- half of the core's agent requests. fs.lua hands buffer texts to the
--- core and applies agent writes to buffers; terminal.lua runs the client
--- terminals as jobs and shows their output; sync.lua keeps buffers in step
--- with files the agent changes on disk; open.lua opens agent paths only
--- after checking them; review.lua shows what the session changed;
--- refused.lua keeps the agent writes refused over a disk change;
--- conflict.lua is :AcpConflict over both; compare.lua shows a text
--- beside a file's buffer in diff mode.
-- May use: util, config, events, core.
---
--- This file registers the services the core calls (`call` events) with
--- its dispatcher, which knows no module above the core. Each serving
--- module loads on its first call.
local M = {}

--- The core's calls this layer answers: service name -> module, function.
local services = {
  buffer_read = { 'acp.editor.fs', 'buffer_read' },
  buffer_apply = { 'acp.editor.fs', 'buffer_apply' },
  terminal_start = { 'acp.editor.terminal', 'start' },
  terminal_kill = { 'acp.editor.terminal', 'kill' },
  write_conflict = { 'acp.editor.refused', 'write_conflict' },
}

---@param dispatch table acp.core.dispatch
function M.serve(dispatch)
  for name, at in pairs(services) do
    dispatch.services[name] = function(ev)
      require(at[1])[at[2]](ev)
    end
  end
end

return M
