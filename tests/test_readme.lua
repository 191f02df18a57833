-- README.md against the code: its "every option with its default" block is what
-- scripts/readme_options.lua writes from lua/acp/config.lua, evaluates to the defaults
-- themselves, and is a setup() call that passes validation.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local function readme()
  return T.read_file(H.root .. '/README.md')
end

local function generator()
  return dofile(H.root .. '/scripts/readme_options.lua')
end

--- The README's options block evaluated: the table it passes to setup().
local function readme_options()
  local gen = generator()
  local text = readme()
  local s = text:find(gen.begin_marker, 1, true)
  local e = text:find(gen.end_marker, 1, true)
  T.truthy(s and e, 'README.md has the generated options block')
  local code = text:sub(s, e):match('```lua\n(.-)```')
  T.truthy(code, 'the block holds Lua code')
  local captured
  local chunk = assert(loadstring(code, 'README.md options block'))
  setfenv(chunk, setmetatable({
    require = function(name)
      T.eq(name, 'acp')
      return { setup = function(opts) captured = opts end }
    end,
  }, { __index = _G }))
  chunk()
  return captured, code
end

return {
  { 'the README options block is generated from config.lua (nvim -l scripts/readme_options.lua)', function()
    local gen = generator()
    local text = readme()
    local want = gen.readme(text, gen.generate(T.read_file(H.root .. '/lua/acp/config.lua')))
    T.truthy(want == text, 'README.md is out of date: run nvim -l scripts/readme_options.lua')
    -- The script's own check agrees.
    local res = vim.system({ vim.env.ACP_NVIM, '-l', H.root .. '/scripts/readme_options.lua', '--check' },
      { text = true, cwd = H.root }):wait(30000)
    T.eq(res.code, 0, res.stderr)
  end },

  { 'the README lists every option with the default config.lua has, as a valid setup() call', function()
    local opts, code = readme_options()
    local defaults = vim.deepcopy(require('acp.config').defaults)
    -- Agents: named, not spelled out.
    local names = vim.tbl_keys(defaults.agents)
    table.sort(names)
    local listed = vim.split(vim.trim(code:match('agents = { %-%-%[%[(.-)%]%] }') or ''), ',%s*')
    table.sort(listed)
    T.eq(listed, names, 'the agents the README names')
    T.eq(opts.agents, {})
    defaults.agents, opts.agents = nil, nil
    -- Every other option, leaf by leaf, both ways.
    local function walk(a, b, path)
      for k, v in pairs(a) do
        local p = path == '' and k or (path .. '.' .. k)
        if type(v) == 'table' and not vim.islist(v) and next(v) ~= nil then
          T.eq(type(b[k]), 'table', p .. ' in README')
          walk(v, b[k], p)
        else
          T.eq(b[k], v, p)
        end
      end
    end
    walk(defaults, opts, '')
    walk(opts, defaults, '')
    -- The options named when the README lacked them are there.
    for _, p in ipairs({ 'chat.markdown', 'chat.tabline', 'chat.history_size', 'chat.keys.send', 'timeouts.initialize',
      'trace.max_messages', 'max_message_bytes', 'fs.protected', 'fs.read_max_bytes', 'terminal.output_max_bytes',
      'log_max_bytes' }) do
      local v = opts
      for part in p:gmatch('[^.]+') do
        v = v[part]
      end
      T.truthy(v ~= nil, p .. ' is in the README')
    end
    -- It is a setup() call the plugin accepts.
    local ok, err = pcall(require('acp.config').setup, readme_options())
    T.truthy(ok, tostring(err))
    require('acp.config').options = vim.deepcopy(require('acp.config').defaults)
  end },

  { 'the README never calls `keymaps = true` the default', function()
    T.eq(require('acp.config').defaults.keymaps, false)
    for para in (readme() .. '\n\n'):gmatch('(.-)\n%s*\n') do
      if para:find('keymaps = true', 1, true) and para:lower():find('default') then
        T.truthy(para:find('off by default', 1, true) or para:find('keymaps = false', 1, true),
          'a paragraph calls keymaps = true a default:\n' .. para)
      end
    end
  end },
}
