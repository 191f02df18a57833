-- Writes bench/scenarios/bench.json, the scripted turns `make bench` plays:
--   nvim -l bench/scenarios/generate.lua
-- Deterministic: the same file every time (checked in; regenerate after editing this script).
local root = vim.env.ACP_ROOT or vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')

--- ~24 KB of chat-style markdown (headings, emphasis, lists, code fences), exactly `n` bytes.
local function paced_text(n)
  local parts, i = {}, 0
  local words = { 'buffer', 'window', 'parser', 'frame', 'stream', 'chunk', 'session', 'agent',
    'render', 'extmark', 'highlight', 'queue', 'drain', 'budget', 'redraw', 'cursor' }
  local function w()
    i = i + 1
    return words[(i * 7) % #words + 1]
  end
  local len, sec = 0, 0
  while len < n do
    sec = sec + 1
    local block = {}
    block[#block + 1] = ('## Step %d: the %s and the %s\n\n'):format(sec, w(), w())
    for _ = 1, 3 do
      block[#block + 1] = ('The %s keeps **%s** apart from the `%s`, so the %s never waits on the %s. '):format(
        w(), w(), w(), w(), w())
    end
    block[#block + 1] = '\n\n'
    for k = 1, 4 do
      block[#block + 1] = ('- item %d: _%s_ then `%s()`\n'):format(k, w(), w())
    end
    block[#block + 1] = ('\n```lua\nlocal %s = require(%q)\n%s.%s(%d)\n```\n\n'):format(w(), w(), w(), w(), sec)
    local s = table.concat(block)
    parts[#parts + 1] = s
    len = len + #s
  end
  return table.concat(parts):sub(1, n)
end

--- ~400 KiB of an hour's chat: headings, paragraphs, lists, code fences in several languages
--- (one per ~1.8 KB, about 230), tables and quotes; exactly `n` bytes, ending on a newline.
local function history_text(n)
  local words = { 'buffer', 'window', 'parser', 'frame', 'stream', 'chunk', 'session', 'agent',
    'render', 'extmark', 'highlight', 'queue', 'drain', 'budget', 'redraw', 'cursor', 'tree', 'query' }
  local seed = 1
  local function w()
    seed = (seed * 1103515245 + 12345) % 2147483648
    return words[math.floor(seed / 65536) % #words + 1]
  end
  local codes = {
    function(k)
      return ('```lua\nlocal %s = require(%q)\nfor i = 1, %d do\n  %s.%s(i, { %s = true })\nend\n```\n'):format(
        w(), 'acp.' .. w(), k, w(), w(), w())
    end,
    function(k)
      return ('```rust\nfn %s_%d(%s: &mut Vec<u8>) -> Result<usize, Error> {\n    let n = %s.len();\n    Ok(n + %d)\n}\n```\n')
        :format(w(), k, w(), w(), k)
    end,
    function(k)
      return ('```python\ndef %s_%d(%s):\n    return [x * %d for x in %s]\n```\n'):format(w(), k, w(), k, w())
    end,
    function(k)
      return ('```sh\ncargo test -p %s -- %s_%d\ngrep -rn "%s" src/ | head -%d\n```\n'):format(w(), w(), k, w(), k)
    end,
    function(k)
      return ('```json\n{ "%s": %d, "%s": [ "%s", "%s" ], "ok": true }\n```\n'):format(w(), k, w(), w(), w())
    end,
    function(k)
      return ('```typescript\nexport function %s%d(%s: string): number {\n  return %s.length * %d;\n}\n```\n')
        :format(w(), k, w(), w(), k)
    end,
  }
  local parts, len, sec = {}, 0, 0
  while len < n do
    sec = sec + 1
    local b = {}
    b[#b + 1] = ('## %d. The %s and the %s\n\n'):format(sec, w(), w())
    for _ = 1, 3 do
      for _ = 1, 4 do
        b[#b + 1] = ('The %s keeps **%s** apart from the `%s`, so the %s never waits on the _%s_. '):format(
          w(), w(), w(), w(), w())
      end
      b[#b + 1] = '\n\n'
    end
    for k = 1, 5 do
      b[#b + 1] = ('%s item %d: the [%s](https://example.org/%s) then `%s()`\n'):format(
        sec % 2 == 0 and '-' or (k .. '.'), k, w(), w(), w())
    end
    b[#b + 1] = '\n' .. codes[sec % #codes + 1](sec) .. '\n'
    if sec % 3 == 0 then
      b[#b + 1] = ('| %s | %s | ms |\n|---|---|--:|\n'):format(w(), w())
      for k = 1, 3 do
        b[#b + 1] = ('| `%s` | %s | %d |\n'):format(w(), w(), k * sec)
      end
      b[#b + 1] = '\n'
    end
    if sec % 4 == 0 then
      b[#b + 1] = ('> **Note:** the %s is not the %s; see `%s`.\n\n'):format(w(), w(), w())
    end
    local s = table.concat(b)
    parts[#parts + 1] = s
    len = len + #s
  end
  return table.concat(parts):sub(1, n - 1) .. '\n'
end

local function tools_steps(pairs_n, chunks_per_pair, chunk_size)
  local steps = {}
  for p = 1, pairs_n do
    local id = ('tool-%03d'):format(p)
    steps[#steps + 1] = { update = {
      sessionUpdate = 'tool_call', toolCallId = id, title = 'Read', kind = 'read', status = 'pending',
      rawInput = { path = ('src/file_%03d.rs'):format(p) },
      locations = { { path = ('src/file_%03d.rs'):format(p), line = p } },
    } }
    local text = {}
    for c = 1, chunks_per_pair do
      local piece = ('p%03d c%02d text '):format(p, c)
      piece = piece .. ('.'):rep(chunk_size - #piece - 1) .. (c == chunks_per_pair and '\n' or ' ')
      text[#text + 1] = piece
    end
    steps[#steps + 1] = { message = table.concat(text), chunk_size = chunk_size }
    steps[#steps + 1] = { update = {
      sessionUpdate = 'tool_call_update', toolCallId = id, status = 'completed',
      title = ('Read src/file_%03d.rs'):format(p),
      content = { { type = 'content', content = { type = 'text', text = ('%d lines'):format(p * 3) } } },
    } }
  end
  return steps
end

--- A card with a 2 x 20,000-line diff (every line changed), then 5 updates: 4 that change
--- only its status or title, and one that sends the same diff again.
local function bigdiff_steps()
  local old, new = {}, {}
  for i = 1, 20000 do
    old[i] = ('old line %05d'):format(i)
    new[i] = ('new line %05d'):format(i)
  end
  local diff = { { type = 'diff', path = '/bench/big.txt',
    oldText = table.concat(old, '\n') .. '\n', newText = table.concat(new, '\n') .. '\n' } }
  local steps = { { update = { sessionUpdate = 'tool_call', toolCallId = 'big', title = 'Edit', kind = 'edit',
    status = 'pending', locations = { { path = '/bench/big.txt' } }, content = diff } } }
  for k = 1, 5 do
    local u = { sessionUpdate = 'tool_call_update', toolCallId = 'big', title = ('Edit big.txt (%d)'):format(k),
      status = k == 5 and 'completed' or 'in_progress' }
    if k == 3 then
      u.content = diff
    end
    steps[#steps + 1] = { update = u }
    steps[#steps + 1] = { message = ('step %d\n'):format(k) }
  end
  return steps
end

local scenario = {
  comment = 'Turns played by `make bench` (bench/run.lua). Generated by bench/scenarios/generate.lua.',
  agent = { name = 'bench-agent' },
  turns = {
    { match = 'stream50k', steps = { { flood = { count = 50000, size = 40 } } } },
    { match = 'big5mb', steps = { { big = { size = 5000000 } } } },
    { match = 'paced', steps = { { message = paced_text(24000), chunk_size = 24, delay_ms = 4 } } },
    { match = 'tools', steps = tools_steps(100, 10, 40) },
    { match = 'bigdiff', steps = bigdiff_steps() },
    -- The history before paced_hist: one turn of 400 KiB of chat markdown.
    { match = 'hist400k', steps = { { message = history_text(400 * 1024), chunk_size = 4096 } } },
  },
}

local path = root .. '/bench/scenarios/bench.json'
local f = assert(io.open(path, 'w'))
f:write(vim.json.encode(scenario), '\n')
f:close()
print('wrote ' .. path)
