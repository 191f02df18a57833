--- Images attached to the next prompt: `:AcpImage {path}` and
--- `:AcpPasteImage` (clipboard, through wl-paste, xclip, pngpaste or
--- osascript). Only PNG, JPEG, GIF and WebP, recognised by their bytes. An
--- agent without `promptCapabilities.image` is refused at once, before
--- anything is sent.
local M = {}

local function notify(msg, level)
  require('acp.util.escape').notify('acp.nvim: ' .. msg, level or vim.log.levels.WARN)
end

local function options()
  return require('acp.config').options.context
end

--- The MIME type of image bytes, or nil when they are no PNG/JPEG/GIF/WebP.
function M.detect(data)
  if data:sub(1, 8) == '\137PNG\r\n\26\n' then
    return 'image/png'
  elseif data:sub(1, 3) == '\255\216\255' then
    return 'image/jpeg'
  elseif data:sub(1, 6) == 'GIF87a' or data:sub(1, 6) == 'GIF89a' then
    return 'image/gif'
  elseif data:sub(1, 4) == 'RIFF' and data:sub(9, 12) == 'WEBP' then
    return 'image/webp'
  end
end

local function size_text(n)
  if n < 1024 then
    return ('%d B'):format(n)
  elseif n < 1024 * 1024 then
    return ('%.1f KB'):format(n / 1024)
  end
  return ('%.1f MB'):format(n / 1024 / 1024)
end

--- Attaches image bytes to the chat `chat()` gives (the tab's, opened when
--- needed: passed by acp.chat.commands, since this layer opens no chat)
--- once the agent's capabilities are known; refuses (with a message) when
--- it takes no images.
function M.attach(data, label, uri, chat)
  if #data == 0 then
    return notify(label .. ': empty image')
  end
  if #data > options().image_max_bytes then
    return notify(('%s is %s, over context.image_max_bytes (%s)'):format(
      label,
      size_text(#data),
      size_text(options().image_max_bytes)
    ))
  end
  local mime = M.detect(data)
  if not mime then
    return notify(label .. ' is not a PNG, JPEG, GIF or WebP image')
  end
  local context = require('acp.prompt.context')
  local view = chat()
  if not view then
    return
  end
  context.when_ready(view, function(caps)
    if not caps.image then
      return notify(
        ('agent `%s` does not accept images (its promptCapabilities.image is false): %s not attached'):format(
          view.agent,
          label
        ),
        vim.log.levels.ERROR
      )
    end
    context.add(view, {
      kind = 'image',
      label = label,
      uri = uri,
      mime = mime,
      data = vim.base64.encode(data),
      detail = ('%s, %s'):format(mime, size_text(#data)),
    })
  end)
end

--- `:AcpImage {path}`, into the chat `chat()` gives (see `M.attach`).
function M.attach_file(path, chat)
  if not path or vim.trim(path) == '' then
    return notify(':AcpImage needs the path of a PNG, JPEG, GIF or WebP file')
  end
  -- Literal but for `%`, `#` and `~` (expand() would run backticks).
  local full = vim.fs.normalize(vim.fn.fnamemodify(require('acp.util.escape').arg_path(path), ':p'), { expand_env = false })
  local stat = vim.uv.fs_stat(full)
  if not stat or stat.type ~= 'file' then
    return notify(path .. ': no such file')
  end
  if stat.size > options().image_max_bytes then
    return notify(('%s is %s, over context.image_max_bytes (%s)'):format(
      path,
      size_text(stat.size),
      size_text(options().image_max_bytes)
    ))
  end
  -- Non-blocking and checked on the descriptor: never waits on a FIFO.
  local data, err = require('acp.editor.open').read_regular(full)
  if not data then
    return notify(('%s: %s'):format(path, tostring(err)))
  end
  M.attach(data, vim.fn.fnamemodify(full, ':t'), vim.uri_from_fname(full), chat)
end

local IMAGE_TYPES = { 'image/png', 'image/jpeg', 'image/gif', 'image/webp' }

local function pick_type(listing)
  local offered = {}
  for line in (listing or ''):gmatch('[^\r\n]+') do
    offered[vim.trim(line)] = true
  end
  for _, t in ipairs(IMAGE_TYPES) do
    if offered[t] then
      return t
    end
  end
end

--- The clipboard tools usable here, best first: { name, list?, read(type) }.
function M.clipboard_tools()
  local tools = {}
  local env = vim.env
  if env.WAYLAND_DISPLAY and env.WAYLAND_DISPLAY ~= '' and vim.fn.executable('wl-paste') == 1 then
    tools[#tools + 1] = {
      name = 'wl-paste',
      list = { 'wl-paste', '--list-types' },
      read = function(t)
        return { 'wl-paste', '--no-newline', '--type', t }
      end,
    }
  end
  if env.DISPLAY and env.DISPLAY ~= '' and vim.fn.executable('xclip') == 1 then
    tools[#tools + 1] = {
      name = 'xclip',
      list = { 'xclip', '-selection', 'clipboard', '-target', 'TARGETS', '-out' },
      read = function(t)
        return { 'xclip', '-selection', 'clipboard', '-target', t, '-out' }
      end,
    }
  end
  if vim.fn.has('mac') == 1 then
    if vim.fn.executable('pngpaste') == 1 then
      tools[#tools + 1] = {
        name = 'pngpaste',
        read = function()
          return { 'pngpaste', '-' }
        end,
      }
    elseif vim.fn.executable('osascript') == 1 then
      -- pbpaste only pastes text; AppleScript can write the PNG flavour.
      tools[#tools + 1] = {
        name = 'osascript',
        file = true,
        read = function(_, out)
          local script = ('set f to open for access POSIX file "%s" with write permission\n'
            .. 'write (the clipboard as «class PNGf») to f\nclose access f'):format(out)
          return { 'osascript', '-e', script }
        end,
      }
    end
  end
  return tools
end

--- `:AcpPasteImage`: attaches the clipboard's image to the chat `chat()`
--- gives (see `M.attach`). Runs the tool asynchronously; the result is
--- attached on the main thread.
function M.paste(chat)
  local tool = M.clipboard_tools()[1]
  if not tool then
    return notify(
      'no clipboard image tool found: install wl-clipboard (Wayland), xclip (X11) or pngpaste (macOS), '
        .. 'or save the image and use :AcpImage {path}',
      vim.log.levels.ERROR
    )
  end
  local function fail(msg)
    vim.schedule(function()
      notify(('%s: %s'):format(tool.name, msg))
    end)
  end
  -- Called from the tool's exit callback too (a fast context): no vim.fn there.
  local out = tool.file and (vim.fn.tempname() .. '.png') or nil
  local function read(t)
    vim.system(tool.read(t, out), { text = false }, function(res)
      if res.code ~= 0 then
        return fail('the clipboard holds no image' .. (res.stderr ~= '' and (' (' .. vim.trim(res.stderr) .. ')') or ''))
      end
      local data = res.stdout or ''
      if out then
        local f = io.open(out, 'rb')
        data = f and f:read('*a') or ''
        if f then
          f:close()
        end
        os.remove(out)
      end
      vim.schedule(function()
        if data == '' then
          return notify(tool.name .. ': the clipboard holds no image')
        end
        M.attach(data, 'clipboard.' .. ((M.detect(data) or 'image/png'):match('/(%w+)$')), nil, chat)
      end)
    end)
  end
  if not tool.list then
    return read('image/png')
  end
  vim.system(tool.list, { text = true }, function(res)
    local t = res.code == 0 and pick_type(res.stdout) or nil
    if not t then
      return fail('the clipboard holds no image (PNG, JPEG, GIF or WebP)')
    end
    read(t)
  end)
end

return M
