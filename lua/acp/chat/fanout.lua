--- One prompt to several agents (`:AcpFanout {agent} {agent}...`): a new
--- chat per agent, each in a git worktree of its own on a new branch named
--- `<slug>-<agent>` (the slug of the prompt), each in its own tab, all sent
--- the same prompt. The fan-outs of this Neovim are kept here by id (the
--- slug) for `:AcpCompare` (acp.chat.fanout_compare), which shows what
--- each worktree changed and merges the one the user takes.
local api = vim.api
local chats = require('acp.chat')
local esc = require('acp.util.escape')

local M = {}

--- Fan-outs by id: { id, prompt, repo, base_branch, base_commit,
--- members = { { agent, name, wt, view } } }.
---@type table<string, table>
M.runs = {}

--- Ids in the order they were made.
M.order = {}

local function err(msg)
  esc.notify('acp.nvim: ' .. msg, vim.log.levels.ERROR)
end

--- Runs git in `cwd`; `cb(ok, stdout, stderr)` on the main loop.
function M.git(cwd, args, cb)
  local cmd = { 'git', '-C', cwd }
  vim.list_extend(cmd, args)
  require('acp.util.job').run(cmd, { env = { GIT_TERMINAL_PROMPT = '0', NVIM = '' } }, function(res)
    cb(res.code == 0, res.stdout, vim.trim(res.stderr))
  end)
end

--- A slug of `text` for branch and folder names: lower case ASCII letters,
--- digits and `-`, at most `max` characters, cut at a word's end; 'fanout'
--- when nothing is left.
function M.slug(text, max)
  max = max or 24
  local s = tostring(text or ''):lower():gsub('[^%w]+', '-'):gsub('^%-+', ''):gsub('%-+$', '')
  if #s > max then
    local cut = s:sub(1, max)
    s = cut:match('^(.+)%-[^-]*$') or cut
    s = s:gsub('%-+$', '')
  end
  return s ~= '' and s or 'fanout'
end

--- Parses `:AcpFanout`'s arguments (the command line's text): agents,
--- then optionally `--` and the prompt. Returns agents, text (nil without
--- `--`), or nil and why.
function M.parse(args)
  args = args or ''
  local head, text = args, nil
  local s, e = (args .. ' '):find('%f[%S]%-%-%s')
  if s then
    head, text = args:sub(1, s - 1), vim.trim(args:sub(e + 1))
  end
  local agents = vim.split(vim.trim(head), '%s+', { trimempty = true })
  if #agents == 0 then
    return nil, ':AcpFanout needs agents: :AcpFanout {agent} {agent}... [-- prompt]'
  end
  return agents, text
end

--- The fan-out of each chat made by one (weak keys: a chat that goes is
--- forgotten).
local of_view = setmetatable({}, { __mode = 'k' })

--- The fan-out a chat belongs to, or nil.
function M.of(view)
  local id = view and of_view[view]
  return id and M.runs[id]
end

--- The names of the fan-out's worktrees, unique against `taken` (branch
--- names and worktree folders that exist): `<slug>-<agent>`, the slug
--- numbered (`-2`, `-3`...) until no name is taken. Returns id, names.
function M.names(slug, agents, taken)
  local function used(name)
    if M.runs[name] then
      return true
    end
    for t in pairs(taken) do
      if t == name or t:sub(-#name - 1) == '/' .. name then
        return true
      end
    end
    return false
  end
  for n = 1, 1000 do
    local id = n == 1 and slug or (slug .. '-' .. n)
    local names, seen, clash = {}, {}, used(id)
    for i, agent in ipairs(agents) do
      local name = id .. '-' .. M.slug(agent, 32)
      -- The same agent twice: numbered.
      local k = 2
      local base = name
      while seen[name] do
        name = base .. '-' .. k
        k = k + 1
      end
      seen[name] = true
      names[i] = name
      clash = clash or used(name)
    end
    if not clash then
      return id, names
    end
  end
end

local function worktree()
  return require('acp.editor.worktree')
end

--- Opens `agent`'s chat in a new tab whose directory is the worktree and
--- sends `text`; `cb(view)` (nil when it did not open).
local function open_member(run, member, text, cb)
  local wt = member.wt
  vim.cmd('tabnew')
  local tab = api.nvim_get_current_tabpage()
  vim.bo.bufhidden = 'wipe'
  vim.cmd('tcd ' .. esc.fname(wt.path))
  local lifecycle = require('acp.chat.lifecycle')
  local opened = false
  local view = lifecycle.open(member.agent, {
    focus = false,
    root = wt.path,
    worktree = wt,
    on_open = function(v)
      opened = true
      v.worktree = v.worktree or wt
      of_view[v] = run.id
      member.view = v
      v:send(text)
      cb(v)
    end,
  })
  if not view and not opened then
    if api.nvim_tabpage_is_valid(tab) and #api.nvim_list_tabpages() > 1 then
      vim.cmd(('tabclose %d'):format(api.nvim_tabpage_get_number(tab)))
    end
    cb(nil)
  end
end

--- Makes the worktrees one after another (git locks the repository's
--- refs), opening each chat as its worktree is ready; `done()` at the end.
local function start_members(run, text, done)
  local i = 0
  local function next_one()
    i = i + 1
    local member = run.members[i]
    if not member then
      return done()
    end
    worktree().create(member.name, { cwd = run.repo }, function(wt, why)
      if not wt then
        err(('fan-out %s: no worktree for %s: %s'):format(run.id, member.agent, why or 'git failed'))
        member.failed = why or 'git failed'
        return next_one()
      end
      member.wt = wt
      run.base_branch = run.base_branch or wt.base_branch
      run.base_commit = run.base_commit or wt.base_commit
      open_member(run, member, text, function(view)
        if not view then
          member.failed = 'the chat did not open'
        end
        next_one()
      end)
    end)
  end
  next_one()
end

--- The text to send: `text` when given, else the current chat's input
--- (emptied once sent), else asked for. `cb(text)`.
local function prompt_text(text, cb)
  if text and vim.trim(text) ~= '' then
    return cb(vim.trim(text))
  end
  local view = chats.current()
  if view and view.input and api.nvim_buf_is_valid(view.input) then
    local typed = vim.trim(table.concat(api.nvim_buf_get_lines(view.input, 0, -1, false), '\n'))
    if typed ~= '' then
      return cb(typed, function()
        if api.nvim_buf_is_valid(view.input) then
          api.nvim_buf_set_lines(view.input, 0, -1, false, {})
        end
      end)
    end
  end
  vim.ui.input({ prompt = 'Prompt for every agent: ' }, function(answer)
    if answer and vim.trim(answer) ~= '' then
      cb(vim.trim(answer))
    else
      esc.notify('acp.nvim: fan-out not started (no prompt)')
    end
  end)
end

--- `:AcpFanout {agent} {agent}... [-- prompt]`.
---@param args string
---@param opts? { on_done?: fun(run: table?) }
function M.command(args, opts)
  opts = opts or {}
  local agents, text = M.parse(args)
  if not agents then
    return err(text)
  end
  local lifecycle = require('acp.chat.lifecycle')
  local root = lifecycle.project_root()
  for _, agent in ipairs(agents) do
    local spec, why = require('acp.agents').spec(agent, root)
    if not spec then
      -- The agent's name and what is wrong, without the list of every
      -- agent (`:AcpChat <Tab>` lists them).
      why = tostring(why):gsub('^acp%.nvim: ', ''):gsub('%s*%(configured:.*$', '')
      return err(('fan-out not started: %s'):format(why))
    end
  end
  prompt_text(text, function(prompt, sent)
    M.git(root, { 'rev-parse', '--show-toplevel' }, function(ok, out, stderr)
      if not ok then
        return err(('fan-out needs a git repository: %s is not in one (%s)'):format(esc.line(root), esc.line(stderr)))
      end
      local repo = vim.trim(out)
      M.git(repo, { 'for-each-ref', '--format=%(refname:short)', 'refs/heads' }, function(_, refs)
        M.git(repo, { 'worktree', 'list', '--porcelain' }, function(_, list)
          local taken = {}
          for _, b in ipairs(vim.split(refs, '\n', { trimempty = true })) do
            taken[b] = true
          end
          for p in list:gmatch('worktree ([^\n]+)') do
            taken[vim.fs.basename(p)] = true
          end
          local id, names = M.names(M.slug(prompt), agents, taken)
          local run = { id = id, prompt = prompt, repo = repo, members = {}, from_tab = api.nvim_get_current_tabpage() }
          for i, agent in ipairs(agents) do
            run.members[i] = { agent = agent, name = names[i] }
          end
          M.runs[id] = run
          M.order[#M.order + 1] = id
          if sent then
            sent()
          end
          start_members(run, prompt, function()
            local first
            for _, m in ipairs(run.members) do
              if m.view and not first then
                first = m.view
              end
            end
            if first and first.tab and api.nvim_tabpage_is_valid(first.tab) then
              api.nvim_set_current_tabpage(first.tab)
            end
            local opened = #vim.tbl_filter(function(m)
              return m.view ~= nil
            end, run.members)
            esc.notify(('acp.nvim: fan-out %s: %d chat%s, one tab and worktree each; :AcpCompare %s shows their changes'):format(
              id,
              opened,
              opened == 1 and '' or 's',
              id
            ))
            if opts.on_done then
              opts.on_done(run)
            end
          end)
        end)
      end)
    end)
  end)
end

--- Ids of the fan-outs starting with `lead`, for completion.
function M.complete(lead)
  return vim.tbl_filter(function(id)
    return vim.startswith(id, lead or '')
  end, M.order)
end

return M
