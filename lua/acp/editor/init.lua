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

---@param dispatch table acp.core.dispatch
function M.serve(dispatch)
  dispatch.services.buffer_read = function(ev)
    require('acp.editor.fs').buffer_read(ev)
  end
  dispatch.services.buffer_apply = function(ev)
    require('acp.editor.fs').buffer_apply(ev)
  end
  dispatch.services.terminal_start = function(ev)
    require('acp.editor.terminal').start(ev)
  end
  dispatch.services.terminal_kill = function(ev)
    require('acp.editor.terminal').kill(ev)
  end
  dispatch.services.write_conflict = function(ev)
    require('acp.editor.refused').write_conflict(ev)
  end
end

return M
