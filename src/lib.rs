//! acp.nvim core: an Agent Client Protocol client that runs on a background
//! tokio runtime inside Neovim.
//!
//! Layers, from the top: each uses only layers below it, and its module
//! file says which on its `May use:` line (checked by tests/test_contract.lua;
//! no file imports another in a circle).
//!
//! - `lua_api`: the native functions Lua calls (mlua; the view is Lua);
//! - `session/`: chats bound to ACP sessions of their agent, the registry of
//!   open chats and the agent processes they share, permission requests;
//! - `editor/`: the agent's `fs/*` and `terminal/*` requests, served from
//!   buffers and Neovim jobs, and what a chat keeps of them;
//! - `protocol/`: agent processes and their ACP traffic (framing, routing,
//!   the typed inbound requests, traces, elicitations);
//! - `runtime`: the tokio runtime the tasks run on;
//! - `bridge/`: the only crossing to the main thread (queue, pacing,
//!   main-thread calls, the drain and the Lua event tables);
//! - `model/`: the pure conversation model and its rendering (no I/O);
//! - `config`: the user's configuration as the core reads it;
//! - `platform`: the calls that differ between Linux and macOS;
//! - `log`: the core's log file;
//! - `redact`: no secrets in the log or in saved traces.
//!
//! `testutil` (test-only helpers) and `protocol/fuzz.rs` (property tests)
//! stand outside the layers. This file declares the modules and the entry
//! point Lua loads, which builds the `lua_api` table under `bridge::drain`'s
//! panic guard.
//!
//! May use: lua_api, bridge.

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
