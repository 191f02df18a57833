--- Client terminals (`terminal/*`) as Neovim jobs. Each job runs in its own
--- process group so kill and release end everything it started. Output
--- goes to the core, which keeps the agent's byte limit and shows it in the
--- tool card; `:AcpTerminal {id}` opens the whole output in a buffer.
local api = vim.api
local uv = vim.uv or vim.loop
local config = require('acp.config')

local M = {}

--- Running jobs: key "thread:id" -> { pid, job }
M.jobs = {}
--- Open output buffers: key "thread:id" -> bufnr
M.buffers = {}

local function key(thread, id)
  return thread .. ':' .. id
end

local function core()
  return require('acp.core')
end

local function alive(pid)
  return uv.kill(-pid, 0) == 0
end

local hooked = false
local function hook_exit()
  if hooked then
    return
  end
  hooked = true
  api.nvim_create_autocmd('VimLeavePre', {
    group = api.nvim_create_augroup('acp_terminals', { clear = true }),
    callback = function()
      M.kill_all()
    end,
  })
end

--- terminal_start: { id, argv, env, cwd } -> { pid } or { error }
---@param ev acp.Event.call payload acp.Call.terminal_start, reply acp.Reply.terminal_start
function M.start(ev)
  local c, p, thread = core(), ev.payload, ev.thread
  local k = key(thread, p.id)
  local function forward(_, data)
    local text = table.concat(data, '\n')
    if text ~= '' then
      pcall(c.terminal_output, thread, p.id, text)
    end
  end
  local env = (type(p.env) == 'table' and next(p.env)) and p.env or nil
  local ok, job = pcall(vim.fn.jobstart, p.argv, {
    cwd = p.cwd,
    env = env,
    -- A new session: the job leads its own process group.
    detach = true,
    on_stdout = forward,
    on_stderr = forward,
    on_exit = function(_, code)
      M.jobs[k] = nil
      pcall(c.terminal_exit, thread, p.id, code)
    end,
  })
  if not ok then
    return c.call_done(ev.call, { error = tostring(job) })
  end
  if job <= 0 then
    local why = job == -1 and ('`%s` is not executable'):format(p.argv[1]) or 'invalid arguments'
    return c.call_done(ev.call, { error = why })
  end
  pcall(vim.fn.chanclose, job, 'stdin')
  local pid = vim.fn.jobpid(job)
  M.jobs[k] = { pid = pid, job = job }
  hook_exit()
  c.call_done(ev.call, { pid = pid })
end

--- terminal_kill: { id, pid }: SIGTERM to the group, SIGKILL after a grace.
---@param ev acp.Event.call payload acp.Call.terminal_kill (no reply)
function M.kill(ev)
  local pid = ev.payload.pid
  if not pid or not alive(pid) then
    return
  end
  uv.kill(-pid, 'sigterm')
  local grace = config.options.terminal.kill_grace_ms
  vim.defer_fn(function()
    if alive(pid) then
      uv.kill(-pid, 'sigkill')
    end
  end, grace)
end

function M.kill_all()
  for k, j in pairs(M.jobs) do
    if alive(j.pid) then
      uv.kill(-j.pid, 'sigkill')
    end
    M.jobs[k] = nil
  end
end

--- Live output for an open terminal buffer.
function M.append(thread, id, data)
  local buf = M.buffers[key(thread, id)]
  if not (buf and api.nvim_buf_is_valid(buf)) then
    return
  end
  local n = api.nvim_buf_line_count(buf)
  local last = api.nvim_buf_get_lines(buf, n - 1, n, false)[1]
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_text(buf, n - 1, #last, n - 1, #last, vim.split(data:gsub('\r', ''), '\n', { plain = true }))
  vim.bo[buf].modifiable = false
end

--- Opens a terminal's output (a client terminal or an agent's display
--- terminal) in a normal buffer that follows new output.
function M.open(view, id)
  local c = core()
  local t = c.is_loaded() and c.terminal_text(view.thread, id)
  if not t then
    vim.notify(('acp.nvim: no terminal `%s` in this chat'):format(id), vim.log.levels.WARN)
    return
  end
  local k = key(view.thread, id)
  local buf = M.buffers[k]
  if not (buf and api.nvim_buf_is_valid(buf)) then
    buf = api.nvim_create_buf(true, true)
    api.nvim_buf_set_name(buf, ('acp://terminal/%d/%s'):format(view.thread, id))
    vim.bo[buf].bufhidden = 'hide'
    api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(t.output:gsub('\r', ''), '\n', { plain = true }))
    vim.bo[buf].modifiable = false
    M.buffers[k] = buf
  end
  vim.cmd('split')
  api.nvim_win_set_buf(0, buf)
  return buf
end

return M
