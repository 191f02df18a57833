-- Screenshots of a child Neovim, in the style of mini.test's child screenshots: a UI of a
-- fixed grid size attaches to the child (a second msgpack-RPC connection to its server
-- address, `nvim_ui_attach` with `ext_linegrid`), the grid is kept from its `redraw` events,
-- and a screenshot is the text of every cell plus a compact map of their highlight
-- attributes.
--
--   local Screen = require('tests.helpers.screen')
--   local screen = Screen.attach(child, 60, 20)
--   local shot = screen:shot()               -- after the child's next redraw
--   Screen.expect(shot, 'chat-streamed')     -- compared with tests/screenshots/chat-streamed
--
-- A missing reference is written (and the case passes); a different one fails and the new
-- screenshot is written next to it as `<name>.new` for review. `ACP_UPDATE_SCREENSHOTS=1`
-- rewrites the references instead.
local uv = vim.uv or vim.loop
local mpack = vim.mpack
local T = require('tests.helpers.expect')

local Screen = {}
Screen.__index = Screen

Screen.dir = (vim.env.ACP_ROOT or vim.fn.getcwd()) .. '/tests/screenshots'

local function ext_handle(_, data)
  return mpack.decode(data)
end

--- Attaches a `width` x `height` UI to `child` (a tests.helpers.child).
function Screen.attach(child, width, height)
  local self = setmetatable({}, Screen)
  self.child = child
  self.width, self.height = width, height
  self.cells = {}
  self.attrs = { [0] = {} }
  self.flushes = 0
  self.pending = {}
  self.next_id = 0
  self.session = mpack.Session({ unpack = mpack.Unpacker({ ext = { [0] = ext_handle, [1] = ext_handle, [2] = ext_handle } }) })
  local addr = child:lua('return vim.v.servername')
  assert(addr and addr ~= '', 'the child has no server address')
  self.pipe = uv.new_pipe(false)
  local connected
  self.pipe:connect(addr, function(err)
    connected = err or true
  end)
  vim.wait(2000, function()
    return connected ~= nil
  end, 5)
  assert(connected == true, 'cannot connect to the child: ' .. tostring(connected))
  self.pipe:read_start(function(err, data)
    if err or not data then
      return
    end
    self:_feed(data)
  end)
  self:_clear()
  self:request('nvim_ui_attach', width, height, { ext_linegrid = true, rgb = true })
  self:redraw(true)
  return self
end

function Screen:_clear()
  for r = 1, self.height do
    local row = {}
    for c = 1, self.width do
      row[c] = { ' ', 0 }
    end
    self.cells[r] = row
  end
end

function Screen:_feed(data)
  local pos = 1
  while pos <= #data do
    local kind, id_or_cb, method_or_err, args_or_result, next_pos = self.session:receive(data, pos)
    if not kind then
      break
    end
    pos = next_pos
    if kind == 'notification' and method_or_err == 'redraw' then
      for _, batch in ipairs(args_or_result) do
        self:_event(batch)
      end
    elseif kind == 'response' then
      self.pending[id_or_cb] = { err = method_or_err, result = args_or_result }
    elseif kind == 'request' then
      -- Nothing asks a UI for anything here; answer so the child never waits.
      self.pipe:write(self.session:reply(id_or_cb) .. mpack.encode(mpack.NIL) .. mpack.encode(mpack.NIL))
    end
  end
end

function Screen:_event(batch)
  local name = batch[1]
  for i = 2, #batch do
    local a = batch[i]
    if name == 'grid_line' then
      local grid, row, col, cells = a[1], a[2], a[3], a[4]
      if grid == 1 and self.cells[row + 1] then
        local line = self.cells[row + 1]
        local hl = 0
        col = col + 1
        for _, cell in ipairs(cells) do
          local text, rep = cell[1], cell[3] or 1
          if cell[2] ~= nil then
            hl = cell[2]
          end
          for _ = 1, rep do
            if line[col] then
              line[col] = { text, hl }
            end
            col = col + 1
          end
        end
      end
    elseif name == 'grid_clear' then
      self:_clear()
    elseif name == 'grid_resize' then
      if a[1] == 1 then
        self.width, self.height = a[2], a[3]
        self:_clear()
      end
    elseif name == 'grid_scroll' then
      local grid, top, bot, left, right, rows = a[1], a[2], a[3], a[4], a[5], a[6]
      if grid == 1 then
        local from, to, step = top, bot - 1, 1
        if rows < 0 then
          from, to, step = bot - 1, top, -1
        end
        for r = from, to, step do
          local src = r + rows
          if src >= top and src < bot then
            for c = left + 1, right do
              self.cells[r + 1][c] = self.cells[src + 1][c]
            end
          end
        end
      end
    elseif name == 'hl_attr_define' then
      self.attrs[a[1]] = a[2]
    elseif name == 'flush' then
      self.flushes = self.flushes + 1
    end
  end
end

--- A request on the UI's own connection (the UI calls: attach, resize).
function Screen:request(method, ...)
  self.next_id = self.next_id + 1
  local id = self.next_id
  -- `Session:request` gives the message's head; the method and the
  -- arguments follow.
  self.pipe:write(self.session:request(id) .. mpack.encode(method) .. mpack.encode({ ... }))
  local ok = vim.wait(5000, function()
    return self.pending[id] ~= nil
  end, 2)
  assert(ok, method .. ': no answer from the child')
  local answer = self.pending[id]
  self.pending[id] = nil
  if answer.err ~= nil and answer.err ~= vim.NIL then
    error(method .. ': ' .. vim.inspect(answer.err))
  end
  return answer.result
end

--- Makes the child redraw (`:redraw!` with `full`) and waits until the
--- update reached the UI.
function Screen:redraw(full)
  local before = self.flushes
  self.child:lua(full and 'vim.cmd("redraw!")' or 'vim.cmd("redraw")')
  self:wait_flush(before)
end

--- Waits for a screen update after `before` flushes to reach the UI.
function Screen:wait_flush(before, timeout)
  local ok = vim.wait(timeout or 3000, function()
    return self.flushes > before
  end, 2)
  assert(ok, 'the child sent no screen update')
  -- Updates of one redraw may come in several flushes: wait until calm.
  local last = self.flushes
  vim.wait(60, function()
    return false
  end, 10)
  while self.flushes ~= last do
    last = self.flushes
    vim.wait(60, function()
      return false
    end, 10)
  end
end

--- The rows of the screen as the UI last got them, without asking the
--- child for a redraw (a child at a prompt, or busy, draws nothing more).
---@return string[]
function Screen:drawn()
  local out = {}
  for r = 1, self.height do
    local t = {}
    for c = 1, self.width do
      t[c] = self.cells[r][c][1]
    end
    out[r] = table.concat(t)
  end
  return out
end

--- The attributes of highlight id `id` as a stable key.
function Screen:_attr_key(id)
  local a = self.attrs[id] or {}
  local keys = vim.tbl_keys(a)
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    parts[#parts + 1] = k .. '=' .. tostring(a[k])
  end
  return table.concat(parts, ',')
end

local ATTR_CHARS = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'

--- Tree-sitter parses in the background (Neovim 0.12): an injected language (a code block's
--- Lua) may be highlighted a few milliseconds after its text shows. Parses every highlighted
--- buffer of the child to the end, so that a reference screenshot taken next never depends
--- on that timing. Not while the child waits for keys at a prompt (it would not run Lua then).
function Screen:settle()
  local ok, mode = pcall(self.child.rpc, self.child, 'nvim_get_mode')
  if ok and type(mode) == 'table' and not mode.blocking then
    -- The chat's highlighting left for later (a turn's entries frozen in slices after its end,
    -- the settle after a burst) is done: the shot does not depend on how far it got.
    self.child:wait_for([[
      local md = package.loaded['acp.chat.markdown']
      local acp = package.loaded['acp']
      local view = acp and acp.current()
      return (md == nil or md.pending == 0) and (view == nil or view.settle == nil)
    ]])
    self.child:lua([[
      for _, h in pairs(vim.treesitter.highlighter.active or {}) do
        pcall(function() h.tree:parse(true) end)
      end
    ]])
  end
end

--- The screen now: { text = lines, attrs = lines of one character per cell }. Attribute
--- characters are given in order of first appearance, so the map does not depend on the
--- child's highlight ids.
function Screen:shot()
  self:redraw(true)
  local text, attrs, ids, n = {}, {}, {}, 0
  for r = 1, self.height do
    local t, m = {}, {}
    for c = 1, self.width do
      local cell = self.cells[r][c]
      t[#t + 1] = cell[1]
      local key = self:_attr_key(cell[2])
      if not ids[key] then
        n = n + 1
        ids[key] = ATTR_CHARS:sub(((n - 1) % #ATTR_CHARS) + 1, ((n - 1) % #ATTR_CHARS) + 1)
      end
      m[#m + 1] = ids[key]
    end
    text[r] = table.concat(t)
    attrs[r] = table.concat(m)
  end
  return { text = text, attrs = attrs }
end

--- The screenshot as the file stores it: a ruler, numbered text lines, then the map.
function Screen.format(shot)
  local out = {}
  local width = vim.fn.strchars(shot.attrs[1] or '')
  local ruler = ('-'):rep(width)
  out[#out + 1] = '--|' .. ruler
  for i, l in ipairs(shot.text) do
    out[#out + 1] = ('%02d|%s'):format(i, l)
  end
  out[#out + 1] = '--|' .. ruler
  for i, l in ipairs(shot.attrs) do
    out[#out + 1] = ('%02d|%s'):format(i, l)
  end
  return table.concat(out, '\n') .. '\n'
end

local function read(path)
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

local function write(path, s)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  local f = assert(io.open(path, 'w'))
  f:write(s)
  f:close()
end

--- Compares `shot` with the reference `tests/screenshots/<name>`.
function Screen.expect(shot, name)
  local path = Screen.dir .. '/' .. name
  local now = Screen.format(shot)
  local ref = read(path)
  if ref == nil or vim.env.ACP_UPDATE_SCREENSHOTS == '1' then
    write(path, now)
    os.remove(path .. '.new')
    return
  end
  if ref ~= now then
    write(path .. '.new', now)
    local a, b = vim.split(ref, '\n'), vim.split(now, '\n')
    local diff = {}
    for i = 1, math.max(#a, #b) do
      if a[i] ~= b[i] then
        diff[#diff + 1] = ('  ref %s\n  now %s'):format(a[i] or '<none>', b[i] or '<none>')
        if #diff >= 6 then
          break
        end
      end
    end
    error(('screenshot %s differs (new one in %s.new):\n%s'):format(name, path, table.concat(diff, '\n')), 2)
  end
  os.remove(path .. '.new')
end

function Screen:detach()
  pcall(function()
    self.pipe:read_stop()
    self.pipe:close()
  end)
end

return Screen
