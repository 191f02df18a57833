-- The minimal client of the benchmark: a pure-Lua ACP client, the least a client can do to
-- show an agent's answer in Neovim. It runs inside the measured Neovim (like bench/driver.lua),
-- spawns the same test agent, reads its stdout with libuv, and once per turn of the event
-- loop (one vim.schedule per batch of reads: one redraw per tick) decodes the JSON lines that
-- arrived and appends the agent's text with one nvim_buf_set_text, then follows the end in its
-- window. No view, no cards, no core. With `highlight`, the buffer has the chat's Tree-sitter
-- markdown highlighting (acp.chat.markdown.start: the same parser and queries), as one
-- document. It answers nothing but the handshake (the bench turns make no requests).
local M = {}

local uv = vim.uv
local api = vim.api

local function ms(ns)
  return ns / 1e6
end

--- Plays `opts.prompts` (the last one is measured) and sends 'bench_done' with the results.
--- opts: chan, agent, args, cwd, prompts, tail, lateness, highlight.
function M.run(opts)
  local driver = require('bench.driver')
  local view = driver.view()
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].undolevels = -1
  if opts.highlight then
    assert(require('acp.chat.markdown').start(buf))
  end
  -- In the chat's window (its options: wrap, linebreak, conceal), followed to the end.
  local win = view.win
  vim.wo[win].winfixbuf = false
  api.nvim_win_set_buf(win, buf)

  local stdin, stdout = uv.new_pipe(), uv.new_pipe()
  local handle = uv.spawn(opts.agent, { args = opts.args, stdio = { stdin, stdout, nil }, cwd = opts.cwd }, function() end)
  assert(handle, 'cannot start ' .. opts.agent)
  local function send(msg)
    stdin:write(vim.json.encode(msg) .. '\n')
  end

  local r = { drains = 0 }
  local pending, partial, scheduled = {}, '', false
  local waiting = {} -- request id -> callback(result)
  local next_id = 0
  local function request(method, params, cb)
    next_id = next_id + 1
    waiting[next_id] = cb
    send({ jsonrpc = '2.0', id = next_id, method = method, params = params })
  end

  -- Main-loop lateness: a one-shot 5 ms timer, re-armed from its own callback.
  local late, timer, expected, measuring = {}, nil, 0, false
  local function arm()
    expected = uv.hrtime() + 5e6
    timer:start(5, 0, function()
      late[#late + 1] = ms(uv.hrtime() - expected)
      if measuring then
        arm()
      end
    end)
  end

  local function append(text)
    local row = api.nvim_buf_line_count(buf) - 1
    local col = #api.nvim_buf_get_lines(buf, row, row + 1, true)[1]
    api.nvim_buf_set_text(buf, row, col, row, col, vim.split(text, '\n', { plain = true }))
    api.nvim_win_set_cursor(win, { api.nvim_buf_line_count(buf), 0 })
  end

  local function process()
    scheduled = false
    local data = partial .. table.concat(pending)
    pending = {}
    local texts = {}
    local start = 1
    while true do
      local nl = data:find('\n', start, true)
      if not nl then
        break
      end
      local ok, msg = pcall(vim.json.decode, data:sub(start, nl - 1))
      start = nl + 1
      if ok and type(msg) == 'table' then
        local u = msg.method == 'session/update' and msg.params and msg.params.update
        if u and u.sessionUpdate == 'agent_message_chunk' and u.content and u.content.type == 'text' then
          texts[#texts + 1] = u.content.text
        elseif msg.id and waiting[msg.id] and msg.method == nil then
          -- A response: the text before it is shown first.
          if #texts > 0 then
            append(table.concat(texts))
            texts = {}
          end
          local cb = waiting[msg.id]
          waiting[msg.id] = nil
          cb(msg.result)
        end
      end
    end
    partial = data:sub(start)
    if #texts > 0 then
      r.drains = r.drains + 1
      append(table.concat(texts))
      if opts.tail and not r.t_text and r.t0 then
        local n = api.nvim_buf_line_count(buf)
        if n >= #opts.tail and vim.deep_equal(api.nvim_buf_get_lines(buf, n - #opts.tail, n, false), opts.tail) then
          r.t_text = uv.hrtime()
        end
      end
    end
  end

  stdout:read_start(function(_, data)
    if data then
      pending[#pending + 1] = data
      if not scheduled then
        scheduled = true
        vim.schedule(process)
      end
    end
  end)

  local function finish()
    measuring = false
    if timer then
      timer:stop()
      timer:close()
    end
    r.cpu_s = driver.cpu_seconds() - r.cpu0
    r.done_ms = ms(r.t_done - r.t0)
    r.t_text = r.t_text or r.t_done
    r.text_ms = ms(r.t_text - r.t0)
    r.late_max_ms = 0
    for _, l in ipairs(late) do
      r.late_max_ms = math.max(r.late_max_ms, l)
    end
    vim.defer_fn(function()
      local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
      r.text_ok = not opts.tail or vim.deep_equal(vim.list_slice(lines, #lines - #opts.tail + 1), opts.tail)
      r.bytes = api.nvim_buf_get_offset(buf, #lines)
      stdin:close()
      stdout:read_stop()
      stdout:close()
      handle:kill('sigterm')
      handle:close()
      -- An error message in the measured Neovim invalidates the run (in Insert mode the
      -- next redraw waits a second for it to be read).
      r.errmsg = vim.v.errmsg
      vim.rpcnotify(opts.chan, 'bench_done', r)
    end, 100)
  end

  local session
  local prompt
  local function send_prompt(i, last)
    request('session/prompt', { sessionId = session, prompt = { { type = 'text', text = opts.prompts[i] } } }, function()
      if last then
        r.t_done = uv.hrtime()
        finish()
      else
        prompt(i + 1)
      end
    end)
  end
  prompt = function(i)
    if i < #opts.prompts then
      return send_prompt(i, false)
    end
    -- The measured turn starts from a quiet client, as in bench/run.lua.
    vim.defer_fn(function()
      r.cpu0 = driver.cpu_seconds()
      r.t0 = uv.hrtime()
      if opts.lateness then
        timer = uv.new_timer()
        measuring = true
        arm()
      end
      send_prompt(i, true)
    end, 100)
  end
  request('initialize', { protocolVersion = 1, clientCapabilities = vim.empty_dict() }, function()
    request('session/new', { cwd = opts.cwd, mcpServers = {} }, function(res)
      session = res.sessionId
      prompt(1)
    end)
  end)
  return true
end

return M
