--- The util layer: helpers every other layer shares and that know nothing
--- of chats, agents or the core. text.lua makes any value an agent sends
--- into buffer text (one line, visible characters, cut to a width);
--- escape.lua makes it safe where Neovim would interpret it (statuslines,
--- command arguments, `vim.ui.select` items, paths with `~`); winbar.lua
--- keeps a window bar fitted to its window's width; window.lua closes the
--- windows opened for reading (a terminal's output, the log); job.lua runs
--- a command off the main loop and answers on it.
-- May use: nothing.
return {}
