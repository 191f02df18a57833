--- Agent text made safe for each place it is shown or used, one function
--- per context. Anything an agent sends (paths, titles, mode and model
--- names, command hints, URLs) is data: it must not become a statusline
--- expression, a command, a shell expansion or a fake row in a list.
---
--- * `statusline(s, max)`: for 'winbar', 'statusline', 'tabline' and
---   'titlestring' (and values handed to them, such as `status()`): `%` is
---   doubled, so `%{…}`, `%!` and `%=` stay text; one line; capped.
--- * `line(s, max)`: one display line for picker rows, prompts and float
---   titles: newlines shown as "⏎", control characters and escape
---   sequences replaced; capped.
--- * `fname(path)`: a checked path for an Ex command line.
--- * `home(path)`: a leading `~` or `~/` as the home directory, nothing
---   else expanded (no `expand()`: it runs backtick commands).
--- * `arg_path(arg)`: a file name typed as a command's argument.
--- * `select(items, opts, on_choice)`: `vim.ui.select` with one-line rows.
--- * `url(u)`: the parts of a URL the user must see before opening it.
--- * `notice(msg, level)`: `vim.notify` that never stops at a hit-enter
---   prompt: with Neovim's own notify, one line cut to `v:echospace`.
local M = {}

--- Longest text shown by default (display cells, "…" included).
M.max = 200

local ELLIPSIS = '…'
local REPLACEMENT = '�'

local function str(v)
  return require('acp.util.text').of(v) or ''
end

--- Newlines as "⏎", tabs as a space; other C0 controls (NUL and ESC
--- included), DEL, C1 controls, line/paragraph separators and bidi
--- overrides as "�" (they would move the cursor, colour the terminal or
--- reorder what is shown).
local function clean(s)
  s = s:gsub('\r\n', '\n'):gsub('[\r\n]', '⏎'):gsub('\t', ' ')
  s = s:gsub('[%z\1-\31\127]', REPLACEMENT)
  -- U+0080..U+009F (C1), U+2028/2029, U+202A..202E and U+2066..2069.
  s = s:gsub('\194[\128-\159]', REPLACEMENT)
  s = s:gsub('\226\128[\168-\174]', REPLACEMENT):gsub('\226\129[\166-\169]', REPLACEMENT)
  return s
end

--- `s` cleaned and cut to `max` display cells, "…" included when cut
--- (at the start when `keep_end`: a path keeps its file name). Multibyte
--- text is cut between characters.
local function fit(s, max, keep_end)
  -- Not strdisplaywidth: it counts 'breakindent' and 'showbreak' of the
  -- current window.
  local width = vim.api.nvim_strwidth
  -- A display cell takes at most 4 bytes of a valid character: looking at
  -- more of a 30 MB string is wasted work (a partial character goes).
  local cut = false
  local limit = max * 4 + 8
  if #s > limit then
    if keep_end then
      s = s:sub(-limit):gsub('^[\128-\191]+', '')
    else
      s = s:sub(1, limit):gsub('[\192-\255][\128-\191]*$', '')
    end
    cut = true
  end
  s = clean(s)
  if not cut and width(s) <= max then
    return s
  end
  local room = max - width(ELLIPSIS)
  if room <= 0 then
    return max > 0 and ELLIPSIS or ''
  end
  local take = require('acp.util.text').take
  if keep_end then
    return ELLIPSIS .. take(s, room, true)
  end
  return take(s, room) .. ELLIPSIS
end

--- `s` (any value) as one display line of at most `max` cells (default
--- `M.max`): for picker rows, prompts, float titles and notifications.
--- `keep_end` cuts the start instead (paths).
function M.line(s, max, keep_end)
  return fit(str(s), max or M.max, keep_end)
end

--- `s` (any value) for a 'statusline'-like option ('winbar', 'tabline',
--- 'titlestring', or a value a statusline shows): one line of at most
--- `max` cells (default `M.max`) with every `%` doubled. `keep_end` cuts
--- the start instead (paths).
function M.statusline(s, max, keep_end)
  return (M.line(s, max, keep_end):gsub('%%', '%%%%'))
end

--- `path` for an Ex command line (`:edit`, `:split`…): every character the
--- command line treats specially is escaped. Only for a path already
--- checked (no `scheme://`, a regular file).
function M.fname(path)
  return vim.fn.fnameescape(str(path))
end

--- The home directory, without a trailing slash.
function M.homedir()
  local home = vim.uv.os_homedir() or vim.env.HOME or ''
  return (home:gsub('(.)/+$', '%1'))
end

--- `path` with a leading `~` (alone or before `/`) as the home directory;
--- anything else (`~user`, `$VAR`, backticks, wildcards) stays literal.
function M.home(path)
  path = str(path)
  if path == '~' then
    return M.homedir()
  elseif path:sub(1, 2) == '~/' then
    return M.homedir() .. path:sub(2)
  end
  return path
end

--- A file name typed as a command's argument (`:AcpAdd {file}`): `%` or
--- `#` (optionally with a buffer number and `:p`, `:h`-style modifiers) is
--- the current or alternate buffer's name; a leading `~` is the home
--- directory; everything else is the literal name (Neovim has already
--- removed the backslashes of the command line). A completed file name can
--- hold any text an agent chose, and `expand()` would run its backticks.
function M.arg_path(arg)
  arg = str(arg)
  if arg:match('^[%%#][%w:~.]*$') then
    local ok, name = pcall(vim.fn.expand, arg)
    if ok and type(name) == 'string' and name ~= '' then
      return name
    end
    return arg
  end
  return M.home(arg)
end

--- `vim.ui.select` with rows and prompt as one line each: an item's text
--- (from the agent) cannot show as several rows or carry escape sequences.
--- The screen is redrawn before the choice is handled: a message said
--- right under the built-in picker's list would stop at a hit-enter
--- prompt.
function M.select(items, opts, on_choice)
  opts = opts or {}
  local format = opts.format_item
  local wrapped = vim.tbl_extend('force', {}, opts, {
    prompt = opts.prompt ~= nil and M.line(opts.prompt, 400) or nil,
    format_item = function(item)
      return M.line(format and format(item) or item, 400)
    end,
  })
  return vim.ui.select(items, wrapped, function(...)
    vim.cmd('redraw')
    return on_choice(...)
  end)
end

--- What a URL really points to: `{ scheme, host, userinfo? }` (nil for
--- text that is no `scheme://` URL). `https://accounts.google.com@evil.example/`
--- has the host `evil.example` and the userinfo `accounts.google.com`,
--- which browsers skip: show the host, and warn when userinfo is there.
function M.url(u)
  u = str(u)
  local scheme, rest = u:match('^(%a[%w+.-]*)://(.*)$')
  if not scheme then
    return nil
  end
  -- The authority ends at the first `/`, `?` or `#` (also `\`, which
  -- browsers read as `/`).
  local authority = rest:match('^[^/?#\\]*')
  local userinfo, hostport = authority:match('^(.*)@([^@]*)$')
  hostport = hostport or authority
  local host = hostport:match('^(%[[^%]]*%])') or hostport:match('^([^:]*)')
  return { scheme = scheme:lower(), host = host:lower(), userinfo = userinfo }
end

--- A one-line description of where `u` leads: its host, with a warning
--- when the URL carries userinfo (text before `@` that looks like a host).
function M.url_target(u)
  local p = M.url(u)
  if not p then
    return 'not a URL: ' .. M.line(u)
  end
  local host = p.host ~= '' and M.line(p.host) or '(no host)'
  if p.userinfo then
    return ('%s  ⚠ the text before "@" (%s) is not the site'):format(host, M.line(p.userinfo, 80))
  end
  return host
end

--- Whether `vim.notify` is Neovim's own (an echo kept in `:messages`)
--- rather than a notifier plugin's.
function M.plain_notify()
  local info = debug.getinfo(vim.notify, 'S')
  return info ~= nil and info.source:find('vim/_editor.lua', 1, true) ~= nil
end

--- `vim.notify(msg, level, opts)`, except for an error told through
--- Neovim's own notify in Insert or Replace mode (the user typing, e.g. the
--- next prompt): it is echoed in ErrorMsg (kept in `:messages` and in
--- `v:errmsg`) instead of raised as an error message. After an error
--- message Neovim's next redraw in Insert mode waits a second for it to be
--- read and runs no scheduled callback meanwhile (measured: 1006 ms), so an
--- agent's failure would freeze the chat under the user's typing. Anywhere
--- else it stays an error (a command that fails with it still fails). A
--- notifier plugin gets every level as is.
function M.notify(msg, level, opts)
  if level == vim.log.levels.ERROR and M.plain_notify() then
    local mode = vim.api.nvim_get_mode().mode:sub(1, 1)
    if mode == 'i' or mode == 'R' then
      msg = tostring(msg)
      vim.api.nvim_echo({ { msg, 'ErrorMsg' } }, true, {})
      vim.v.errmsg = msg
      return
    end
  end
  return vim.notify(msg, level, opts)
end

--- `M.notify(msg, level)` that never stops at a hit-enter prompt: Neovim's
--- own notify echoes, and an echo longer than the command line has room for
--- (`v:echospace`) waits for Enter, in Insert mode too; so there the
--- message is one line cut to fit. A notifier plugin gets it whole.
function M.notice(msg, level)
  if M.plain_notify() then
    msg = M.line(msg, math.max(20, vim.v.echospace))
  end
  M.notify(msg, level)
end

return M
