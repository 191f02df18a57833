-- The import graph of the sources, for the layer checks of test_contract.
--
--   local L = require('tests.helpers.layers')
--   local g = L.rust(root)   -- or L.lua(root)
--   L.cycles(g.edges)        -- list of circles, each a list of files
--   L.violations(g)          -- uses that the layer's `May use:` line does not allow
--
-- A graph is { edges = file -> { file -> true }, layer = file -> layer name,
-- may_use = layer -> { name -> true } | nil (undeclared), declared_in = layer -> file }.
-- Files are paths relative to the root. Rust: `use crate::...` and inline `crate::` /
-- `super::` paths outside `#[cfg(test)]` modules; a path to a folder's module file is an edge to
-- the layer (it re-exports; its own `mod` lines are not uses). Lua: every
-- `require('acp...')`, inside functions too (Lua runs them all eventually).
local M = {}

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

local function exists(path)
  return vim.uv.fs_stat(path) ~= nil
end

local function files_under(root, dir, ext)
  local out = {}
  for _, f in ipairs(vim.fn.globpath(root .. '/' .. dir, '**/*.' .. ext, false, true)) do
    out[#out + 1] = f:sub(#root + 2)
  end
  table.sort(out)
  return out
end

--- The names a `May use:` line lists (`nothing` lists none); nil without one.
local function may_use_of(text, comment)
  local line = text:match('\n' .. comment .. '%s*May use:%s*([^\n]*)') or text:match('^' .. comment .. '%s*May use:%s*([^\n]*)')
  if not line then
    return nil
  end
  local set = {}
  for name in line:gsub('%.%s*$', ''):gmatch('[%w_]+') do
    if name ~= 'nothing' then
      set[name] = true
    end
  end
  return set
end

-- Rust ---------------------------------------------------------------------------------------

--- The source without its `#[cfg(test)]` items (a `mod x;` line or a braced block) and comments.
local function rust_code(src)
  src = src:gsub('//[^\n]*', '')
  local out, pos = {}, 1
  while true do
    local s, e = src:find('#%[cfg%(test%)%]%s*', pos)
    if not s then
      out[#out + 1] = src:sub(pos)
      break
    end
    out[#out + 1] = src:sub(pos, s - 1)
    -- Skip the item: up to its `;` or through its balanced braces.
    local semi = src:find(';', e + 1, true)
    local brace = src:find('{', e + 1, true)
    if semi and (not brace or semi < brace) then
      pos = semi + 1
    elseif brace then
      local depth, i = 0, brace
      while i <= #src do
        local c = src:sub(i, i)
        if c == '{' then
          depth = depth + 1
        elseif c == '}' then
          depth = depth - 1
          if depth == 0 then
            break
          end
        end
        i = i + 1
      end
      pos = i + 1
    else
      break
    end
  end
  return table.concat(out)
end

--- `a::{b, c::{d, e}}` -> { 'a::b', 'a::c::d', 'a::c::e' }.
local function expand_use(tree)
  tree = tree:gsub('%s+', '')
  local prefix, rest = tree:match('^(.-){(.*)}$')
  if not prefix then
    return { tree }
  end
  local out, depth, start = {}, 0, 1
  local parts = {}
  for i = 1, #rest do
    local c = rest:sub(i, i)
    if c == '{' then
      depth = depth + 1
    elseif c == '}' then
      depth = depth - 1
    elseif c == ',' and depth == 0 then
      parts[#parts + 1] = rest:sub(start, i - 1)
      start = i + 1
    end
  end
  parts[#parts + 1] = rest:sub(start)
  for _, p in ipairs(parts) do
    if p ~= '' then
      for _, x in ipairs(expand_use(p)) do
        out[#out + 1] = prefix .. x
      end
    end
  end
  return out
end

--- The module path (list of names under `crate`) of a file.
local function rust_module_of(file)
  local p = file:gsub('^src/', ''):gsub('%.rs$', '')
  local names = vim.split(p, '/', { plain = true })
  if names[#names] == 'mod' or names[#names] == 'lib' then
    names[#names] = nil
  end
  return names
end

--- The file that defines module `names` (a list), or nil.
local function rust_file_of(root, names)
  if #names == 0 then
    return 'src/lib.rs'
  end
  local base = 'src/' .. table.concat(names, '/')
  if exists(root .. '/' .. base .. '.rs') then
    return base .. '.rs'
  elseif exists(root .. '/' .. base .. '/mod.rs') then
    return base .. '/mod.rs'
  end
end

local function is_module_file(file)
  return file:match('/mod%.rs$') ~= nil
    or (file:match('^src/[%w_]+%.rs$') ~= nil and exists(M._root .. '/' .. file:gsub('%.rs$', '')))
end

--- The longest prefix of `names` that is a file; nil when none is.
local function rust_resolve(root, names)
  for n = #names, 1, -1 do
    local f = rust_file_of(root, vim.list_slice(names, 1, n))
    if f then
      return f
    end
  end
end

--- The layer of a Rust file: its top folder under src/, or its own name at the root.
local function rust_layer(file)
  return file:match('^src/([%w_]+)/') or file:match('^src/([%w_]+)%.rs$')
end

function M.rust(root)
  M._root = root
  local g = { edges = {}, layer = {}, may_use = {}, declared_in = {} }
  for _, file in ipairs(files_under(root, 'src', 'rs')) do
    local name = file:match('([%w_]+)%.rs$')
    if name ~= 'tests' and name ~= 'testutil' and name ~= 'fuzz' then
      local src = read(root .. '/' .. file)
      local layer = rust_layer(file)
      g.layer[file] = layer
      if is_module_file(file) then
        g.may_use[layer] = may_use_of(src, '//!')
        g.declared_in[layer] = file
      elseif file:match('^src/[%w_]+%.rs$') then
        -- A root module may declare what it uses too; then it is held to it.
        g.may_use[layer] = may_use_of(src, '//!')
      end
      local code = rust_code(src)
      local paths = {}
      for tree in code:gmatch('use%s+([^;]+);') do
        for _, p in ipairs(expand_use(tree)) do
          paths[#paths + 1] = p
        end
      end
      for p in code:gmatch('[%w_:]*crate::[%w_:]+') do
        paths[#paths + 1] = p
      end
      for p in code:gmatch('super::[%w_:]+') do
        paths[#paths + 1] = p
      end
      local here = rust_module_of(file)
      local targets = {}
      for _, p in ipairs(paths) do
        local names = vim.split(p:gsub('::$', ''), '::', { plain = true })
        local abs
        if names[1] == 'crate' then
          abs = vim.list_slice(names, 2)
        elseif names[1] == 'super' then
          -- `super` of a module file is its parent; of a leaf file, its folder's module.
          local parent = vim.list_slice(here, 1, #here - 1)
          local i = 1
          while names[i] == 'super' do
            if i > 1 then
              parent = vim.list_slice(parent, 1, #parent - 1)
            end
            i = i + 1
          end
          abs = vim.list_extend(parent, vim.list_slice(names, i))
        end
        local target = abs and #abs > 0 and rust_resolve(root, abs)
        if target and target ~= file then
          targets[target] = true
        end
      end
      g.edges[file] = {}
      for target in pairs(targets) do
        -- A module file's own children are declared, not used.
        local child_of_module = is_module_file(file) and rust_layer(target) == layer
        if not child_of_module then
          g.edges[file][target] = true
        end
      end
    end
  end
  -- Edges to a folder's module file are uses of the layer, not of a file: left out of the
  -- file graph (the layer check sees them through `uses`).
  g.uses = {}
  for file, ts in pairs(g.edges) do
    g.uses[file] = {}
    for t in pairs(ts) do
      g.uses[file][t] = true
      if is_module_file(t) and g.layer[t] ~= g.layer[file] then
        ts[t] = nil
      end
    end
  end
  return g
end

-- Lua ----------------------------------------------------------------------------------------

local function lua_module_of(file)
  local m = file:gsub('^lua/', ''):gsub('%.lua$', ''):gsub('/', '.')
  return (m:gsub('%.init$', ''))
end

--- The layer of a Lua file: its folder under lua/acp/, or its module name at the root.
local function lua_layer(file)
  return file:match('^lua/acp/([%w_]+)/') or file:match('^lua/acp/([%w_]+)%.lua$')
end

function M.lua(root)
  local g = { edges = {}, layer = {}, may_use = {}, declared_in = {} }
  local by_module = {}
  local files = files_under(root, 'lua/acp', 'lua')
  for _, file in ipairs(files) do
    by_module[lua_module_of(file)] = file
  end
  for _, file in ipairs(files) do
    local src = read(root .. '/' .. file)
    local layer = lua_layer(file)
    g.layer[file] = layer
    if file:match('^lua/acp/[%w_]+/init%.lua$') then
      g.may_use[layer] = may_use_of(src, '%-%-')
      g.declared_in[layer] = file
    elseif file:match('^lua/acp/[%w_]+%.lua$') then
      -- A root module may declare what it uses too; then it is held to it.
      g.may_use[layer] = may_use_of(src, '%-%-')
    end
    g.edges[file] = {}
    local code = src:gsub('%-%-[^\n]*', '')
    for name in code:gmatch('require%s*%(?%s*[\'"](acp[%w_.]*)[\'"]') do
      local target = by_module[name]
      if target and target ~= file then
        g.edges[file][target] = true
      end
    end
  end
  g.uses = g.edges
  return g
end

-- Checks -------------------------------------------------------------------------------------

--- The circles of a graph (strongly connected components of more than one file, or a file that
--- uses itself), each sorted.
function M.cycles(edges)
  local index, low, on, stack, out, n = {}, {}, {}, {}, {}, 0
  local function visit(v)
    n = n + 1
    index[v], low[v] = n, n
    stack[#stack + 1] = v
    on[v] = true
    for w in pairs(edges[v] or {}) do
      if not index[w] then
        visit(w)
        low[v] = math.min(low[v], low[w])
      elseif on[w] then
        low[v] = math.min(low[v], index[w])
      end
    end
    if low[v] == index[v] then
      local comp = {}
      repeat
        local w = table.remove(stack)
        on[w] = nil
        comp[#comp + 1] = w
      until w == v
      if #comp > 1 then
        table.sort(comp)
        out[#out + 1] = comp
      end
    end
  end
  local keys = vim.tbl_keys(edges)
  table.sort(keys)
  for _, v in ipairs(keys) do
    if not index[v] then
      visit(v)
    end
  end
  table.sort(out, function(a, b)
    return a[1] < b[1]
  end)
  return out
end

--- Uses across layers that the using layer's `May use:` line does not list, as
--- "file -> file (layer a may not use b)"; and layers whose module file has no such line.
function M.violations(g)
  local out = {}
  for layer, file in pairs(g.declared_in) do
    if not g.may_use[layer] then
      out[#out + 1] = ('%s has no "May use:" line'):format(file)
    end
  end
  for file, ts in pairs(g.uses) do
    local from = g.layer[file]
    local allowed = g.may_use[from]
    for t in pairs(ts) do
      local to = g.layer[t]
      if allowed and to ~= from and not allowed[to] then
        out[#out + 1] = ('%s -> %s (%s may not use %s)'):format(file, t, from, to)
      end
    end
  end
  table.sort(out)
  return out
end

--- The layer graph the `May use:` lines declare (layer -> layer), for a circle check of the
--- declarations themselves.
function M.declared_edges(g)
  local edges = {}
  for layer, set in pairs(g.may_use) do
    edges[layer] = {}
    for to in pairs(set) do
      edges[layer][to] = true
    end
  end
  return edges
end

return M
