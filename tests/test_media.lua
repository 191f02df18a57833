-- Images and audio in the agent's output (agent_message_chunk and tool-call
-- content, tests/fixtures/media.json): each is saved to a file of its own in
-- a per-session folder under this Neovim's temp folder, shown as one line
-- (kind, type, size) that <CR> or gx opens with vim.ui.open; bad data, an
-- unknown type: a clear line, never an error popup.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')
local Screen = require('tests.helpers.screen')

local FX = vim.json.decode(T.read_file(H.root .. '/tests/fixtures/media.json'))

local function start(updates)
  local steps = {}
  for _, u in ipairs(updates) do
    steps[#steps + 1] = { update = u }
  end
  steps[#steps + 1] = { message = 'done' }
  local child, paths = H.start({ turns = { { match = 'go', steps = steps } } })
  H.open(child)
  child:lua([[_G.opened, _G.notes = {}, {}
    vim.ui.open = function(path) table.insert(_G.opened, path) return nil end
    vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level }) end]])
  return child, paths
end

--- The transcript rows that show media, and their 1-based row numbers.
local function media_rows(child)
  local out = {}
  for i, l in ipairs(H.transcript(child)) do
    if l:find('%[image ') or l:find('%[audio ') then
      out[#out + 1] = { row = i, text = l }
    end
  end
  return out
end

local function open_on(child, row, key)
  child:feed('<Esc>') -- the chat opens in the input, in Insert mode
  child:lua([[local v = require('acp').current()
    vim.api.nvim_set_current_win(v.win)
    vim.api.nvim_win_set_cursor(v.win, { ..., 0 })]], { row })
  child:feed(key)
  child:settle()
  return child:lua([[return _G.opened]])
end

return {
  { 'an image and an audio clip in a message are saved and shown as one line each; <CR> and gx open the file', function()
    local child = start({ FX.message_image, FX.message_audio })
    local screen = Screen.attach(child, 120, 30)
    H.turn(child, 'go')
    local rows = media_rows(child)
    T.eq(#rows, 2, vim.inspect(H.transcript(child)))
    local root = child:lua([[return require('acp.core').media_root()]])
    local img = rows[1].text:match('^!%[image image/png · 70 B%]%((.+)%)$')
    T.neq(img, nil, rows[1].text)
    local wav = rows[2].text:match('^%[audio audio/wav · 52 B%]%((.+)%)$')
    T.neq(wav, nil, rows[2].text)
    -- Files of ours, in a folder of the session, named by us (not by the block's uri).
    T.match(img, '^' .. vim.pesc(root) .. '/%d+/image%-%d+%.png$')
    T.match(wav, '^' .. vim.pesc(root) .. '/%d+/audio%-%d+%.wav$')
    T.eq(vim.fn.fnamemodify(img, ':h'), vim.fn.fnamemodify(wav, ':h'), 'one folder per session')
    T.eq(vim.fn.getfsize(img), FX.png_bytes)
    T.eq(vim.fn.readblob(img):sub(2, 4), 'PNG')
    T.eq(open_on(child, rows[1].row, '<CR>'), { img })
    T.eq(open_on(child, rows[2].row, 'gx'), { img, wav })
    T.wait(function()
      -- Markdown conceal leaves the kind, the type and the size.
      return table.concat(screen:shot().text, '\n'):find('image image/png · 70 B', 1, true) ~= nil
    end, 3000)
    -- The markdown of the chat says where the file is.
    T.match(child:lua([[return require('acp.core').markdown(require('acp').current().thread)]]), vim.pesc(img))
    -- Removed when Neovim exits (the core's shutdown).
    child:lua([[require('acp.core').shutdown()]])
    T.eq(vim.fn.isdirectory(root), 0)
  end },

  { 'an image in tool-call content is a line of its card that opens the file', function()
    local child = start({ FX.tool_call_image })
    H.turn(child, 'go')
    local rows = media_rows(child)
    T.eq(#rows, 1, vim.inspect(H.transcript(child)))
    local path = rows[1].text:match('!%[image image/png · 70 B%]%((.+)%)$')
    T.neq(path, nil, rows[1].text)
    T.eq(open_on(child, rows[1].row, '<CR>'), { path })
  end },

  { 'bad base64 and an unknown type are clear lines, no file, no error; a look-alike line opens nothing', function()
    local child = start({
      FX.bad_base64,
      FX.unknown_mime,
      { sessionUpdate = 'agent_message_chunk', content = { type = 'text', text = '\n![image image/png · 1 B](/etc/passwd)\n' } },
    })
    H.turn(child, 'go')
    local text = H.transcript_text(child)
    T.match(text, '%[image image/png: not shown %(the data is not valid base64%)%]')
    T.match(text, '%[image image/x%-evilx: not shown %(not a known type%)%]', 'the type shown only with the characters a type has')
    local fake
    for i, l in ipairs(H.transcript(child)) do
      if l:find('/etc/passwd', 1, true) then
        fake = i
      end
    end
    T.eq(open_on(child, fake, 'gx'), {}, 'only files the core saved are opened')
    local errors = child:lua([[return vim.tbl_filter(function(n) return (n.level or 0) >= vim.log.levels.ERROR end, _G.notes)]])
    T.eq(errors, {})
  end },
}
