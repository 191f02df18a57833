-- Installing: the build's progress in one line that never stops at a
-- hit-enter prompt (plain echo area or a notifier that replaces), the
-- vim.pack hook (one build per change, any directory name), the message of
-- a build with nothing to rebuild.
local T = require('tests.helpers.expect')
local Child = require('tests.helpers.child')
local Screen = require('tests.helpers.screen')
local H = require('tests.helpers.acp')

local uv = vim.uv or vim.loop

--- A directory holding a fake `cargo` that prints `n` "Compiling" lines,
--- `delay` seconds apart, then exits with `code`. With `touch`, it
--- "builds" by writing $CARGO_TARGET_DIR/release/libacp_core.so.
local function fake_cargo(opts)
  local dir = T.tmpdir('fake-cargo')
  local script = {
    '#!/bin/sh',
    'echo "$PWD" >> "' .. dir .. '/calls"',
    ('i=1; while [ $i -le %d ]; do'):format(opts.n or 50),
    '  echo "   Compiling crate-number-$i v0.1.$i" >&2',
    ('  sleep %s'):format(opts.delay or '0.05'),
    '  i=$((i+1))',
    'done',
  }
  if opts.touch then
    table.insert(script, 'mkdir -p "$CARGO_TARGET_DIR/release" && echo new > "$CARGO_TARGET_DIR/release/libacp_core.so"')
  end
  if (opts.code or 0) == 0 then
    table.insert(script, 'echo "    Finished \\`release\\` profile [optimized] target(s) in 2.50s" >&2')
  else
    table.insert(script, 'echo "error: could not compile \\`acp-nvim\\` (lib) due to 2 previous errors" >&2')
  end
  table.insert(script, 'exit ' .. (opts.code or 0))
  T.write_file(dir .. '/cargo', table.concat(script, '\n') .. '\n')
  uv.fs_chmod(dir .. '/cargo', tonumber('755', 8))
  -- No network: a download of a prebuilt core fails at once (exit 7,
  -- "failed to connect"), so the build goes on with cargo.
  T.write_file(dir .. '/curl', '#!/bin/sh\necho "curl: (7) Failed to connect" >&2\nexit 7\n')
  uv.fs_chmod(dir .. '/curl', tonumber('755', 8))
  return dir
end

--- Records every vim.notify call (a notifier plugin's stand-in).
local RECORD_NOTIFY = [[
  _G.notes = {}
  vim.notify = function(msg, level, opts)
    table.insert(_G.notes, { msg = msg, level = level, id = opts and opts.id })
  end
]]

local function calls(dir)
  local f = io.open(dir .. '/calls', 'r')
  if not f then
    return {}
  end
  local out = vim.split(f:read('*a'), '\n', { trimempty = true })
  f:close()
  return out
end

--- The screen's text as the UI got it (no request to the child: a child
--- at a hit-enter prompt answers only fast calls).
local function screen_text(screen)
  return table.concat(screen:drawn(), '\n')
end

--- Samples the child's mode (a fast call, answered even at a prompt) and
--- the screen until `done()` holds; returns the modes seen and whether
--- progress was on the screen at some point.
local function sample(child, screen, done, timeout)
  local modes, progress, seen_enter = {}, false, false
  local deadline = uv.now() + (timeout or 20000)
  while uv.now() < deadline do
    local m = child:rpc('nvim_get_mode').mode
    modes[m] = true
    local text = screen_text(screen)
    if text:find('crates compiled', 1, true) then
      progress = true
    end
    if text:find('Press ENTER', 1, true) or text:find('-- More --', 1, true) then
      seen_enter = seen_enter or text
    end
    if m ~= 'r' and m ~= 'rm' and done() then
      break
    end
    vim.wait(20)
  end
  return modes, progress, seen_enter
end

return {
  { 'build progress in the plain echo area: one line, never a hit-enter prompt, only the end in :messages', function()
    local cargo = fake_cargo({ n = 50, delay = '0.05' })
    local child = Child.new({ env = { PATH = cargo .. ':' .. vim.env.PATH } })
    local screen = Screen.attach(child, 80, 12)
    local log = T.tmpdir('build') .. '/build.log'
    -- A bootstrap: the build waited on in the main loop, as lazy.nvim and
    -- a vim.pack hook do.
    child:lua_notify([[
      require('acp.core').build_log = ...
      _G.result = { require('acp').build():wait(20000) }
    ]], { log })
    local modes, progress, seen_enter = sample(child, screen, function()
      return child:lua('return _G.result ~= nil')
    end)
    T.falsy(seen_enter, '"Press ENTER" or "-- More --" was on the screen: ' .. tostring(seen_enter))
    T.falsy(modes.r or modes.rm, 'a hit-enter prompt appeared: ' .. vim.inspect(modes))
    T.truthy(progress, 'the progress was on the screen')
    local r = child:lua('return _G.result')
    T.eq(r[1], true)
    local shot = screen:shot()
    local bottom = shot.text[#shot.text]
    T.match(bottom, '^acp%.nvim: core built in %d+ s')
    T.eq(child:rpc('nvim_get_mode').mode, 'n')
    -- History: the end message only, not fifty progress notes.
    local messages = child:lua([[return vim.api.nvim_exec2('messages', { output = true }).output]])
    T.no_match(messages, 'crates compiled')
    T.match(messages, 'core built in')
    -- The whole output is in the build log.
    local text = T.read_file(log)
    T.match(text, 'Compiling crate%-number%-1 v0%.1%.1')
    T.match(text, 'Compiling crate%-number%-50 v0%.1%.50')
  end, timeout = 40000 },

  { 'a notifier that replaces (nvim-notify style) gets one notification, updated in place', function()
    local cargo = fake_cargo({ n = 30, delay = '0.05' })
    local child = Child.new({ env = { PATH = cargo .. ':' .. vim.env.PATH } })
    local screen = Screen.attach(child, 80, 12)
    local log = T.tmpdir('build') .. '/build.log'
    -- nvim-notify's contract: notify() returns a record; `opts.replace`
    -- (that record or its id) updates it instead of adding one.
    child:lua([[
      _G.shown = {}
      vim.notify = function(msg, level, opts)
        opts = opts or {}
        local rec = opts.replace
        local id = type(rec) == 'table' and rec.id or rec
        local n = id and _G.shown[id]
        if not n then
          n = { id = #_G.shown + 1, updates = {} }
          _G.shown[n.id] = n
        end
        table.insert(n.updates, { msg = msg, level = level })
        return { id = n.id }
      end
    ]])
    child:lua_notify([[
      require('acp.core').build_log = ...
      _G.result = { require('acp.core.build').run():wait(20000) }
    ]], { log })
    local modes = sample(child, screen, function()
      return child:lua('return _G.result ~= nil')
    end)
    T.falsy(modes.r or modes.rm, 'a hit-enter prompt appeared')
    local shown = child:lua('return _G.shown')
    T.eq(#shown, 1, 'one notification')
    local updates = shown[1].updates
    T.truthy(#updates >= 3, 'the start, progress and the end: ' .. vim.inspect(updates))
    T.match(updates[1].msg, 'building the core')
    T.match(updates[2].msg, 'crates compiled')
    T.match(updates[#updates].msg, 'core built in')
    -- Nothing went to the echo area or :messages.
    local messages = child:lua([[return vim.api.nvim_exec2('messages', { output = true }).output]])
    T.no_match(messages, 'acp%.nvim')
  end, timeout = 40000 },

  { 'a build with nothing to rebuild says "already built"; a rebuilt loaded core asks for a restart', function()
    local child = Child.new({ env = { PATH = fake_cargo({ n = 0 }) .. ':' .. vim.env.PATH } })
    child:lua(RECORD_NOTIFY)
    local log = T.tmpdir('build') .. '/build.log'
    local r = child:lua([[
      local core = require('acp.core')
      core.build_log = ...
      assert(core.load())
      return { require('acp.core.build').run():wait(20000) }
    ]], { log })
    T.eq(r[1], true)
    T.eq(r[2], 'acp.nvim: the core is already built (nothing to rebuild)')
    T.no_match(r[2], 'restart')

    -- cargo compiled crates and wrote a new library: the loaded one is old.
    local target = T.tmpdir('target')
    child = Child.new({ env = { PATH = fake_cargo({ n = 3, delay = '0', touch = true }) .. ':' .. vim.env.PATH } })
    child:lua(RECORD_NOTIFY)
    r = child:lua([[
      local core = require('acp.core')
      core.build_log = ...
      assert(core.load())
      vim.env.CARGO_TARGET_DIR = select(2, ...)
      return { require('acp.core.build').run():wait(20000) }
    ]], { log, target })
    T.eq(r[1], true)
    T.match(r[2], '^acp%.nvim: core built in %d+ s; restart Neovim to use it$')
    T.truthy(uv.fs_stat(target .. '/release/libacp_core.so'))

    -- Not loaded yet: nothing to restart, and nothing to rebuild is said so.
    child = Child.new({ env = { PATH = fake_cargo({ n = 0 }) .. ':' .. vim.env.PATH } })
    child:lua(RECORD_NOTIFY)
    r = child:lua([[
      require('acp.core').build_log = ...
      return { require('acp.core.build').run():wait(20000) }
    ]], { log })
    T.eq(r, { true, 'acp.nvim: the core is already built (nothing to rebuild)' })
  end, timeout = 40000 },

  { "the README's vim.pack hook builds once per change, for a fork's directory name too", function()
    -- The hook exactly as the README shows it.
    local readme = T.read_file(H.root .. '/README.md')
    local hook
    for block in readme:gmatch('```lua\n(.-)```') do
      if block:find('PackChanged', 1, true) then
        hook = block
        break
      end
    end
    T.truthy(hook, 'the README shows a PackChanged hook')
    -- A fork installed by vim.pack under another name.
    local dir = T.tmpdir('site') .. '/pack/core/opt/acp-fork'
    vim.fn.mkdir(dir .. '/.git', 'p')
    vim.fn.system({ 'cp', '-R', H.root .. '/lua', H.root .. '/plugin', H.root .. '/doc', dir })
    T.write_file(dir .. '/.git/HEAD', ('a'):rep(40) .. '\n')
    local cargo = fake_cargo({ n = 2, delay = '0' })
    local child = Child.new({ init = 'NONE', env = { PATH = cargo .. ':' .. vim.env.PATH } })
    child:lua(RECORD_NOTIFY)
    child:lua([[
      -- vim.pack.add() itself is not run: the events below are what it fires.
      vim.pack = vim.pack or {}
      vim.pack.add = function() end
      local code = assert(loadstring(...))
      code()
      _G.fire = function(kind, path)
        vim.api.nvim_exec_autocmds('PackChanged', { pattern = path, data = {
          kind = kind, path = path,
          spec = { src = 'https://github.com/someone/acp-fork', name = 'acp-fork' },
        } })
      end
    ]], { hook })
    -- A first install: `update`, then `install`, for the same checkout.
    child:lua('fire("update", ...); fire("install", ...)', { dir })
    T.eq(calls(cargo), { dir }, 'one build, in the fork')
    local ends = child:lua([[
      return vim.tbl_filter(function(n) return n.msg:find('core built') ~= nil end, _G.notes)
    ]])
    T.eq(#ends, 1, 'one end message: ' .. vim.inspect(child:lua('return _G.notes')))
    -- An update to another commit builds again, once; a delete never.
    T.write_file(dir .. '/.git/HEAD', ('b'):rep(40) .. '\n')
    child:lua('fire("update", ...); fire("delete", ...)', { dir })
    T.eq(#calls(cargo), 2)

    -- A failing build: reported once, not once per event.
    local failing = fake_cargo({ n = 1, delay = '0', code = 101 })
    child = Child.new({ init = 'NONE', env = { PATH = failing .. ':' .. vim.env.PATH } })
    child:lua(RECORD_NOTIFY)
    child:lua([[
      vim.pack = vim.pack or {}
      vim.pack.add = function() end
      assert(loadstring(...))()
    ]], { hook })
    child:lua([[
      for _, kind in ipairs({ 'update', 'install' }) do
        vim.api.nvim_exec_autocmds('PackChanged', { pattern = ..., data = { kind = kind, path = ..., spec = { name = 'acp-fork' } } })
      end
    ]], { dir })
    T.eq(#calls(failing), 1)
    local errors = child:lua([[
      return vim.tbl_filter(function(n) return n.level == vim.log.levels.ERROR end, _G.notes)
    ]])
    T.eq(#errors, 1, vim.inspect(errors))
    T.match(errors[1].msg, 'build failed %(exit 101%)')
  end, timeout = 40000 },

  { '`make build` says when it skips doc/tags (no Neovim on PATH, no pinned one)', function()
    -- A PATH with the tools the Makefile's recipe needs and no nvim.
    local bin = T.tmpdir('bin')
    for _, tool in ipairs({ 'make', 'sh', 'cat', 'true' }) do
      local path = vim.fn.exepath(tool)
      T.truthy(path ~= '', tool .. ' is installed')
      uv.fs_symlink(path, bin .. '/' .. tool)
    end
    local res = vim.system({ 'make', '--no-print-directory', '-C', H.root, 'build', 'CARGO=true',
      'NVIM_STAMP=' .. T.tmpdir('nostamp') .. '/nvim.path' }, { env = { PATH = bin }, clear_env = true, text = true }):wait(30000)
    T.eq(res.code, 0, res.stderr)
    T.match(res.stderr, 'helptags: skipped doc/tags: no Neovim on PATH and no pinned one')
  end },
}
