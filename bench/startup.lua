-- Startup cost of the plugin: `nvim --clean --headless +qa` with and without
-- the repository on 'runtimepath' (plugin/acp.lua sourced), interleaved,
-- median of N runs each.
local M = {}

local function run(argv)
  local t0 = vim.uv.hrtime()
  local res = vim.system(argv):wait()
  assert(res.code == 0, table.concat(argv, ' ') .. ' failed: ' .. (res.stderr or ''))
  return (vim.uv.hrtime() - t0) / 1e6
end

local function median(xs)
  table.sort(xs)
  local n = #xs
  return n % 2 == 1 and xs[(n + 1) / 2] or (xs[n / 2] + xs[n / 2 + 1]) / 2
end

function M.run(nvim, root, n)
  n = n or 41
  local base, with = {}, {}
  local plain = { nvim, '--clean', '--headless', '+qa' }
  local plugin = { nvim, '--clean', '--headless', '--cmd', 'set rtp^=' .. root, '+qa' }
  -- Check the plugin really is sourced in the measured configuration.
  local probe = vim.system({ nvim, '--clean', '--headless', '--cmd', 'set rtp^=' .. root,
    '+lua io.stdout:write(vim.fn.exists(":AcpChat"))', '+qa' }):wait()
  assert(probe.stdout == '2', 'plugin/acp.lua was not sourced')
  for _ = 1, 3 do
    run(plain)
    run(plugin)
  end
  for _ = 1, n do
    base[#base + 1] = run(plain)
    with[#with + 1] = run(plugin)
  end
  local b, w = median(base), median(with)
  return { base_ms = b, plugin_ms = w, delta_ms = w - b, runs = n }
end

return M
