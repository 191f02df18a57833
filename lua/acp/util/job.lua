--- A command run off the main loop: `vim.system` whose callback comes back
--- on the main loop, and which never raises (a command that cannot start
--- answers like one that failed, with code -1 and the reason).
local M = {}

--- Runs `cmd` (argv) with `opts` (`vim.system`'s; `text` defaults to true and
--- stdin to closed); `cb({ code, stdout, stderr, signal })` runs on the main loop.
---@param cmd string[]
---@param opts? table
---@param cb fun(res: { code: integer, stdout: string, stderr: string, signal?: integer })
function M.run(cmd, opts, cb)
  opts = vim.tbl_extend('keep', opts or {}, { text = true, stdin = false })
  local ok, err = pcall(vim.system, cmd, opts, function(res)
    vim.schedule(function()
      cb({ code = res.code, stdout = res.stdout or '', stderr = res.stderr or '', signal = res.signal })
    end)
  end)
  if not ok then
    vim.schedule(function()
      cb({ code = -1, stdout = '', stderr = tostring(err) })
    end)
  end
end

return M
