-- Sign-in of the older kind: an auth method with no `type` that describes a
-- terminal login in `_meta["terminal-auth"]` (the shape kimi-cli 1.51.0
-- sends in `initialize`, also used by Copilot CLI) runs that login in a
-- terminal window instead of `authenticate`; an `authenticate` the agent
-- never answers (Kimi) shows that it is signing in and then fails clearly.
local T = require('tests.helpers.expect')
local H = require('tests.helpers.acp')

--- The sign-in method as kimi-cli 1.51.0 describes `kimi login`, its
--- command replaced by the test agent's login mode (which writes `flag`).
local function kimi_method(flag)
  return {
    _meta = { ['terminal-auth'] = { command = H.agent_bin, args = { '--login' }, label = 'Kimi Code Login',
      env = { ACP_TEST_LOGIN_FILE = flag }, type = 'terminal' } },
    description = 'Run `kimi login` command in the terminal, then follow the instructions to finish login.',
    id = 'login',
    name = 'Login with Kimi account',
  }
end

return {
  { 'a method with _meta terminal-auth and no type runs its command in a terminal, not authenticate', function()
    local dir = T.tmpdir('login')
    local flag = dir .. '/signed-in'
    local kimi_login = kimi_method(flag)
    local child, paths = H.start({ agent_info = { auth_methods = { kimi_login }, auth_file = flag },
      turns = { { match = 'hi', steps = { { message = 'hello after sign-in' } } } } })
    child:cmd('AcpChat')
    child:wait_for([[return require('acp').current().state == 'disconnected']])
    child:cmd('AcpAuth login')
    child:wait_for([[return require('acp').current().state == 'idle']], 8000)
    T.eq(vim.fn.filereadable(flag), 1, 'the login ran')
    T.eq(#H.events_of(paths, 'authenticate'), 0, 'no authenticate for a terminal-auth method')
    T.eq(child:lua([[return require('acp.ask.auth').last_exit]]), 0)
    H.turn(child, 'hi')
    T.match(H.transcript_text(child), 'hello after sign%-in$')
  end, timeout = 20000 },

  { 'methods only in the data.authMethods of the auth-required error are offered; a terminal-auth one runs its login', function()
    local dir = T.tmpdir('login')
    local flag = dir .. '/signed-in'
    -- As kimi-cli 1.51.0 lists its methods in the -32000 error's data (no
    -- methods in `initialize` here), its login replaced by the test agent's.
    local kimi_login = kimi_method(flag)
    local child, paths = H.start({ agent_info = { auth_error_methods = { kimi_login }, auth_file = flag },
      turns = { { match = 'hi', steps = { { message = 'hello after sign-in' } } } } })
    child:cmd('AcpChat')
    child:wait_for([[return require('acp').current().state == 'disconnected']])
    T.match(H.transcript_text(child), 'run :AcpAuth')
    T.eq(child:lua([[return vim.tbl_map(function(m) return m.id end,
      require('acp.core').auth_methods(require('acp').current().thread))]]), { 'login' })
    child:cmd('AcpAuth login')
    child:wait_for([[return require('acp').current().state == 'idle']], 8000)
    T.eq(vim.fn.filereadable(flag), 1, 'the login ran')
    T.eq(#H.events_of(paths, 'authenticate'), 0, 'no authenticate for a terminal-auth method')
    H.turn(child, 'hi')
    T.match(H.transcript_text(child), 'hello after sign%-in$')
  end, timeout = 20000 },

  { 'an authenticate the agent never answers says it is signing in, then fails after timeouts.authenticate', function()
    local child, paths = H.start({
      agent_info = { auth_methods = { { id = 'oauth', name = 'Browser sign-in' } }, hang_authenticate = true },
      turns = { { match = 'hi', steps = { { message = 'hello' } } } },
      config = { timeouts = { authenticate = 400 } },
    })
    child:cmd('AcpChat')
    child:wait_for([[return require('acp').current().state == 'disconnected']])
    child:cmd('AcpAuth oauth')
    T.wait(function()
      return H.transcript_text(child):find('Signing in with `oauth`… %(waiting up to') ~= nil
    end, 3000, 'a visible signing-in state')
    T.wait(function()
      return H.transcript_text(child):find('Sign%-in with `oauth` failed: the agent did not answer within') ~= nil
    end, 3000, 'a clear failure')
    T.eq(#H.events_of(paths, 'authenticate'), 1)
  end, timeout = 10000 },
  { 'a terminal-auth method naming another program than the agent runs it only after the user says yes to its exact command line', function()
    local dir = T.tmpdir('login')
    local flag = dir .. '/signed-in'
    local hostile = {
      _meta = { ['terminal-auth'] = { command = '/bin/sh', args = { '-c', 'touch ' .. flag .. ' # $(x)' } } },
      id = 'login',
      name = 'Login',
    }
    local child = H.start({ agent_info = { auth_methods = { hostile }, auth_file = flag },
      turns = { { match = 'hi', steps = { { message = 'hello after sign-in' } } } } })
    child:lua([[
      _G.asked = {}
      vim.ui.select = function(items, opts, cb)
        table.insert(_G.asked, { items = items, prompt = opts.prompt })
        cb(_G.answer)
      end
    ]])
    child:cmd('AcpChat')
    child:wait_for([[return require('acp').current().state == 'disconnected']])
    child:lua([[_G.answer = 'No']])
    child:cmd('AcpAuth login')
    local asked = child:lua([[return _G.asked]])
    T.eq(#asked, 1, 'the user is asked')
    T.eq(asked[1].items, { 'No', 'Yes' })
    T.contains(asked[1].prompt, "/bin/sh -c 'touch " .. flag .. " # $(x)'", 'the exact command line, quoted')
    vim.uv.sleep(300)
    T.eq(vim.fn.filereadable(flag), 0, 'No: nothing ran')
    child:lua([[_G.answer = 'Yes']])
    child:cmd('AcpAuth login')
    child:wait_for([[return require('acp').current().state == 'idle']], 8000)
    T.eq(vim.fn.filereadable(flag), 1, 'Yes: the login ran')
  end, timeout = 20000 },
}
