-- The permission float is built from the card a request points to, merged
-- with what the request carries (tests/scenarios/permission_cards.json,
-- recorded from mistral-vibe 3.0.2 and fast-agent-mcp 0.10.48): the command
-- line, the diff with `d` review, the locations; a request about a call
-- never announced that carries nothing says so.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

local function start()
  local child, paths = H.start({ scenario = 'permission_cards', config = { permissions = { grace_ms = 0 } } })
  H.open(child)
  return child, paths
end

--- Sends `prompt` and returns the float's text once it shows.
local function asked(child, prompt)
  child:lua([[assert(require('acp').send(...))]], { prompt })
  child:wait_for([[local p = require('acp.ask.permission')
    return #p.queue == 1 and p.win ~= nil]], 5000)
  return table.concat(child:lua([[return vim.api.nvim_buf_get_lines(require('acp.ask.permission').buf, 0, -1, false)]]), '\n')
end

--- The whole request as `K` shows it.
local function full(child)
  return table.concat(child:lua([[local p = require('acp.ask.permission')
    return p.full_lines(p.queue[1])]]), '\n')
end

return {
  { 'vibe: a request with only the id of a shell card shows the command line the user allows', function()
    local child = start()
    local float = asked(child, 'vibe-shell')
    T.match(float, '%[execute%] bash: cat hello%.txt notes%.txt | tee result%.txt', 'the card title')
    T.match(float, '\n  %$ cat hello%.txt notes%.txt | tee result%.txt\n', 'the command line')
    T.no_match(float, 'did not say')
  end },

  { 'vibe: a request with only the id of an edit card shows its diff, d reviews it, and its location', function()
    local child, paths = start()
    local float = asked(child, 'vibe-edit')
    T.match(float, '%[edit%] Editing hello%.txt')
    T.match(float, 'edit /p/hello%.txt: %+1 %-1   %(d: review%)', 'the diff of the card')
    T.match(full(child), 'location: /p/hello%.txt')
    T.no_match(float, 'did not say')
    H.enter_permission(child)
    child:feed('d')
    child:wait_for([[return #vim.api.nvim_list_tabpages() == 2 and vim.wo.diff]], 3000)
    T.eq(child:lua([[return vim.api.nvim_buf_get_lines(0, 0, -1, false)]])[1]:match('Hello, %a+!') ~= nil, true)
    child:feed('q')
    child:wait_for([[local p = require('acp.ask.permission')
      return p.armed and vim.api.nvim_get_current_win() == p.win]], 3000)
    child:feed('y')
    T.wait(function()
      return #H.permission_answers(paths) == 1
    end, 3000)
    T.eq(H.permission_answers(paths)[1].result, { outcome = { outcome = 'selected', optionId = 'allow_once' } })
  end },

  { 'fast-agent: the edit float shows the diff its card got before the request, with d review', function()
    local child = start()
    local float = asked(child, 'fast-edit')
    T.match(float, '%[edit%] write_text_file')
    T.match(float, '  /p/hello%.txt\n', 'the path the request names')
    T.match(float, 'new file /p/hello%.txt: %+2 %-0   %(d: review%)', 'the diff of the card')
    T.eq(child:lua([[for _, m in ipairs(vim.api.nvim_buf_get_keymap(require('acp.ask.permission').buf, 'n')) do
        if m.lhs == 'd' then return true end
      end
      return false]]), true, 'd reviews')
  end },

  { 'cline: a read request whose title was cut names the file its raw input reads', function()
    local child = start()
    local float = asked(child, 'cline-read')
    T.match(float, '%[read%] read_files: ', 'the title as Cline cut it')
    T.no_match(float, '%[read%] [^\n]*hello%.txt', 'the cut title does not name the file')
    T.match(float, '\n  file: /home/user/projects/a%-rather%-long%-client%-project%-name/packages/core/src/hello%.txt\n', 'the file')
    T.no_match(float, 'did not say')
  end },

  { 'a request about a call never announced that carries nothing says the agent did not say what it does', function()
    local child = start()
    local float = asked(child, 'ghost')
    T.match(float, '%[other%] ghost%-1')
    T.match(float, '⚠ the agent did not say what this does')
    T.match(full(child), 'the agent did not say what this does')
    local warned = child:lua([[local p = require('acp.ask.permission')
      local ns = vim.api.nvim_get_namespaces().acp_permission
      local rows = {}
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(p.buf, ns, 0, -1, {})) do
        rows[#rows + 1] = vim.api.nvim_buf_get_lines(p.buf, m[2], m[2] + 1, false)[1]
      end
      return rows]])
    T.eq(warned, { '  ⚠ the agent did not say what this does' }, 'highlighted as a warning')
  end },
}
