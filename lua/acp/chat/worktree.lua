--- Chats in git worktrees (`:h acp-worktree`): `:AcpWorktree {name}
--- [agent]` and `:AcpChat {agent} worktree={name}` (acp.chat.commands)
--- make the worktree (acp.editor.worktree), open a tab whose directory it
--- is and run a chat there (its session's root is the worktree). This
--- file: what closing such a chat asks (keep, merge or remove the
--- worktree) and does. It requires nothing of lifecycle.lua, which calls it.
local esc = require('acp.util.escape')

local M = {}

local api = vim.api

local function worktree()
  return require('acp.editor.worktree')
end

local function notify(msg, level)
  esc.notify('acp.nvim: ' .. msg, level or vim.log.levels.ERROR)
end

--- The `worktree={name}` argument of `:AcpChat {agent} worktree={name}`:
--- the agent and the name, or nil when the arguments hold none.
function M.parse_chat_args(args)
  local agent, name
  for _, word in ipairs(vim.split(vim.trim(args or ''), '%s+')) do
    local w = word:match('^worktree=(.*)$')
    if w then
      name = w
    elseif word ~= '' then
      agent = agent and (agent .. ' ' .. word) or word
    end
  end
  return name, agent
end

--- The choices on closing a worktree chat, as the picker shows them.
local function choices(wt)
  local base = wt.base_branch or 'the base commit'
  return {
    { 'keep', ('Keep the worktree and branch %s (%s)'):format(wt.branch, esc.line(wt.path, 60, true)) },
    { 'merge', ('Merge %s into %s (git merge --no-ff; its changes not committed are committed first)'):format(wt.branch, base) },
    { 'remove', ('Remove the worktree and branch %s'):format(wt.branch) },
  }
end

--- Asks what becomes of `view`'s worktree; `cb('keep'|'merge'|'remove')`,
--- or `cb(nil)` when dismissed.
function M.ask(view, cb)
  local wt = view.worktree
  esc.select(choices(wt), {
    prompt = ('Close the chat with %s in worktree %s'):format(view.agent, wt.name),
    format_item = function(item)
      return item[2]
    end,
  }, function(item)
    cb(item and item[1] or nil)
  end)
end

--- Closes the tab a worktree chat ran in (its directory is the worktree)
--- when it is not the last tab and nothing in it has unsaved changes.
function M.close_tab(tab, wt)
  if not (tab and api.nvim_tabpage_is_valid(tab)) or #api.nvim_list_tabpages() < 2 then
    return
  end
  local ok, cwd = pcall(vim.fn.getcwd, -1, api.nvim_tabpage_get_number(tab))
  if not ok or cwd ~= wt.path then
    return
  end
  for _, win in ipairs(api.nvim_tabpage_list_wins(tab)) do
    local buf = api.nvim_win_get_buf(win)
    if vim.bo[buf].modified and #vim.fn.win_findbuf(buf) <= 1 then
      return
    end
  end
  pcall(vim.cmd, ('tabclose %d'):format(api.nvim_tabpage_get_number(tab)))
end

--- What to do with a closed chat's worktree: `choice` `'keep'`, `'merge'`
--- or `'remove'`; nil asks first (a tab closed under the chat). Told with
--- `vim.notify`; a removal that would lose work asks again ("remove
--- anyway"). `cb(result)` when done (for tests and callers that chain).
function M.finish(wt, choice, cb)
  cb = cb or function() end
  if not choice then
    return esc.select(choices(wt), {
      prompt = ('The chat in worktree %s closed'):format(wt.name),
      format_item = function(item)
        return item[2]
      end,
    }, function(item)
      M.finish(wt, item and item[1] or 'keep', cb)
    end)
  end
  if choice == 'keep' then
    esc.notify(('acp.nvim: kept the worktree %s (branch %s)'):format(esc.line(wt.path, 80, true), wt.branch))
    return cb('kept')
  elseif choice == 'merge' then
    return worktree().merge(wt, function(result, err)
      worktree().report_merge(wt, result, err)
      cb(err and 'not merged' or (result.conflicts and 'conflicts' or 'merged'))
    end)
  end
  worktree().remove(wt, { force = choice == 'remove anyway' }, function(ok, err, why)
    if ok then
      esc.notify(('acp.nvim: removed the worktree %s and branch %s'):format(esc.line(wt.path, 80, true), wt.branch))
      return cb('removed')
    elseif why == 'unmerged' then
      local anyway = ('Remove anyway (%s: lost)'):format(err)
      return esc.select({ anyway, 'Keep the worktree and branch' }, {
        prompt = ('%s: remove it?'):format(err),
      }, function(pick)
        if pick == anyway then
          return M.finish(wt, 'remove anyway', cb)
        end
        esc.notify(('acp.nvim: kept the worktree %s (branch %s)'):format(esc.line(wt.path, 80, true), wt.branch))
        cb('kept')
      end)
    end
    notify('worktree not removed: ' .. err, vim.log.levels.WARN)
    cb('not removed')
  end)
end

return M
