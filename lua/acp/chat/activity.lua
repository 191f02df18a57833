--- What the chat does around tool cards and the plan, after each drain:
--- folds long cards, keeps the session's quickfix list and follow mode up
--- to date (debounced), colours headers and diffs. The running turn's
--- plan is shown by the live status area (acp.chat.status).
--- Also the card key: <CR> on a card reviews its diff, answers its pending
--- permission, or opens its terminal; on an image or audio line it opens
--- the file (acp.chat.media).
local api = vim.api
local config = require('acp.config')

local M = {}

local function core()
  return require('acp.core')
end

--- What <CR> does on the card under the cursor.
function M.card_action(view)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local index, kind = view:entry_at(row)
  if kind == 'subagent' then
    return require('acp.chat.subagents').card_action(view, index)
  end
  if kind ~= 'tool_call' then
    return false
  end
  local e = core().entry(view.thread, index)
  if not e then
    return false
  end
  if e.client_state == 'waiting_for_you' then
    require('acp.ask.permission').focus(e.id)
    return true
  end
  local review = require('acp.editor.review')
  if #review.diffs_of(e) > 0 then
    review.open_entry(e)
    return true
  end
  for _, c in ipairs(e.content or {}) do
    if c.type == 'terminal' then
      require('acp.editor.terminal').open(view, c.id)
      return true
    end
  end
  require('acp.util.escape').notify('acp.nvim: nothing to open on this card')
  return true
end

function M.attach(view)
  require('acp.chat.media').attach(view)
  local key = config.options.chat.keys.card
  if not key then
    return
  end
  vim.keymap.set('n', key, function()
    -- An image or audio line opens its file (acp.chat.media).
    if not (require('acp.chat.media').open_at_cursor(view) or M.card_action(view)) then
      -- Off a card, the key keeps its usual meaning.
      api.nvim_feedkeys(api.nvim_replace_termcodes(key, true, false, true), 'n', false)
    end
  end, { buffer = view.buf, silent = true, desc = 'Review the diff / answer the permission / open the terminal of this card' })
end

--- Folds the body of cards taller than `chat.card_max_lines`.
local function fold_long_cards(view, touched)
  local max = config.options.chat.card_max_lines
  for index in pairs(touched) do
    local e = view.entries[index]
    if e and e.kind == 'tool_call' then
      local first, last = view:entry_range(index)
      if first and last - first + 1 > max then
        for _, win in ipairs(vim.fn.win_findbuf(view.buf)) do
          view:_fold_entry(win, index, 1)
        end
      end
    elseif e and e.kind == 'compaction' then
      require('acp.chat.notices').fold(view, index)
    elseif e and e.kind == 'subagent' then
      -- A subagent's transcript is folded under its header line.
      for _, win in ipairs(vim.fn.win_findbuf(view.buf)) do
        require('acp.chat.subagents').fold(view, win, index)
      end
    end
  end
end

--- Locations of the touched cards, cached per entry; the quickfix list
--- is rebuilt from the cache at most every 100 ms. The paths are checked
--- (a stat and a realpath each) when the list is built, not in the drain.
local function collect_locations(view, touched)
  local changed, newest = false, nil
  for index in pairs(touched) do
    local e = view.entries[index]
    if e and e.kind == 'tool_call' then
      local card = view.cards[index]
      local raw = {}
      for _, loc in ipairs(card and card.locations or {}) do
        local line = loc.line or 1 -- 1-based from the core
        raw[#raw + 1] = { loc.path, line, ('[%s] %s'):format(card.kind, card.title) }
        newest = { path = loc.path, line = line, index = index }
      end
      view.qf_entries[index] = { raw = raw }
      changed = true
    end
  end
  return changed, newest
end

local qf_timer
local function schedule_quickfix(view)
  view.qf_dirty = true
  if qf_timer then
    return
  end
  qf_timer = vim.defer_fn(function()
    qf_timer = nil
    for _, v in pairs(require('acp.chat').by_tab) do
      if v.qf_dirty then
        v.qf_dirty = false
        pcall(require('acp.chat.quickfix').update, v)
      end
    end
  end, 100)
end

api.nvim_set_hl(0, 'AcpDiffAdd', { link = 'DiffAdd', default = true })
api.nvim_set_hl(0, 'AcpDiffDelete', { link = 'DiffDelete', default = true })
api.nvim_set_hl(0, 'AcpDiffHunk', { link = 'DiffChange', default = true })

local diff_ns = api.nvim_create_namespace('acp_card_diff')

--- Colours the +/- lines of diff blocks in the touched cards (the chat's
--- Tree-sitter markdown has no diff parser to inject).
local function highlight_diffs(view, touched)
  for index in pairs(touched) do
    local e = view.entries[index]
    if e and e.kind == 'tool_call' then
      local first, last = view:entry_range(index)
      if first then
        api.nvim_buf_clear_namespace(view.buf, diff_ns, first, last + 1)
        -- The core says which rows hold diff bodies (acp.CardMeta.diff_rows).
        local card = view.cards[index]
        for _, rows in ipairs(card and card.diff_rows or {}) do
          local from, to = first + rows[1], math.min(first + rows[2], last)
          for i, line in ipairs(api.nvim_buf_get_lines(view.buf, from, to + 1, false)) do
            local row = from + i - 1
            local c = line:sub(3, 3)
            local group = (c == '+' and 'AcpDiffAdd') or (c == '-' and 'AcpDiffDelete') or (c == '@' and 'AcpDiffHunk')
            if group then
              api.nvim_buf_set_extmark(view.buf, diff_ns, row, 0, { end_row = row + 1, hl_group = group, hl_eol = true })
            end
          end
        end
      end
    end
  end
end

--- Folds, diff colours and decorations of the entries in `set`.
function M.decorate(view, set)
  fold_long_cards(view, set)
  highlight_diffs(view, set)
  require('acp.chat.decor').apply(view, set)
end

--- After a drain: `touched` entries changed; those in `decorate` (all of
--- them unless a burst left the ones out of sight for later) are decorated.
function M.after_apply(view, touched, decorate)
  -- Most drains only append text: nothing to do then, except when a turn
  -- just ended (files may have been written without a card).
  local turn_ended = view.turns_ended ~= view.activity_turns
  view.activity_turns = view.turns_ended
  if not next(touched) and not turn_ended then
    return
  end
  M.decorate(view, decorate or touched)
  local changed, newest = collect_locations(view, touched)
  if changed or turn_ended then
    schedule_quickfix(view)
  end
  if newest then
    require('acp.chat.follow').location(view, newest.path, newest.line)
  end
  -- A file follow mode waits for may exist now.
  require('acp.chat.follow').poke(view, turn_ended)
end

return M
