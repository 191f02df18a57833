//! acp.nvim core: an Agent Client Protocol client that runs on a background
//! tokio runtime inside Neovim.
//!
//! Layers (each uses only the ones below it):
//! - the Lua-facing API: `lua_api` (mlua functions; the view is Lua);
//! - sessions: `session` (chat threads bound to ACP sessions, the agent
//!   registry), which implements the sinks below;
//! - protocol: `connection` (agent process + ACP; routes each session's
//!   traffic to a `SessionSink`), `framing` (bounded line reads);
//! - editor services: `handlers` (fs/terminal requests, through an
//!   `EditorHost`), `editor` (the chat's roots, policy, records and
//!   terminals), `permission` (the user's policy and pending requests),
//!   `shellwords` (commands as words, what a grant compares), `kept` (the
//!   file texts kept in memory, under one cap);
//! - the pure model: `update` (the one typed parse of what agents send),
//!   `thread` and `render` (conversation state, markdown), `schema`,
//!   `roots`, `fs`, `textdiff`, `terminal`, `files`; `elicitation` (the
//!   user's pending forms and URLs);
//! - `platform`: the calls that differ between Linux and macOS;
//! - bridge: `bridge` (the only crossing to the main thread) and `calls`
//!   (typed main-thread requests that need an answer); `runtime`, `log`;
//! - reliability: `trace` (each connection's traffic), `redact` (no
//!   secrets in logs or saved traces), `procs` (process identity).

pub mod bridge;
pub mod config;
pub mod editor;
pub mod log;
pub mod lua_api;
pub mod model;
pub mod platform;
pub mod protocol;
pub mod redact;
pub mod runtime;
pub mod session;
#[cfg(test)]
mod testutil;

/// Module body: builds the API table with mlua and stores it in
/// `package.loaded.acp_core`. The table is not returned through nvim-oxi
/// because nvim-oxi cannot push an mlua value.
fn plugin_body() -> nvim_oxi::Result<()> {
    let result = bridge::drain::catch("load", || -> mlua::Result<()> {
        let lua = nvim_oxi::mlua::lua();
        let module = lua_api::module(&lua)?;
        let loaded: mlua::Table = lua.globals().get::<mlua::Table>("package")?.get("loaded")?;
        loaded.set("acp_core", module)?;
        bridge::drain::set_lua(lua);
        Ok(())
    });
    match result {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(nvim_oxi::api::Error::Other(format!("acp_core: {e}")).into()),
        Err(e) => Err(nvim_oxi::api::Error::Other(e).into()),
    }
}

/// Entry point for `package.loadlib(path, "luaopen_acp_core")`.
///
/// # Safety
/// Called by Lua with a valid state on Neovim's main thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn luaopen_acp_core(
    state: *mut nvim_oxi::lua::ffi::State,
) -> core::ffi::c_int {
    unsafe { nvim_oxi::entrypoint::entrypoint(state, plugin_body) }
}
