//! The main-thread half of the bridge: the libuv async handle that wakes
//! Neovim, the drain that hands one frame's slice of the queue to the Lua
//! dispatcher in one call, and `catch`, which keeps a panic in a callback
//! from aborting Neovim.

use std::cell::{OnceCell, RefCell};
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;

use mlua::{Function, Lua, Result as LuaResult, Table};

use super::handoff::bridge;
use super::lua_tables::event_table;
use super::queue::UiEvent;
use crate::log;

thread_local! {
    // One cached handle: creating an mlua handle per call costs a full GC.
    static LUA: OnceCell<Lua> = const { OnceCell::new() };
    static DISPATCH: RefCell<Option<Function>> = const { RefCell::new(None) };
    static DECODE: OnceCell<Function> = const { OnceCell::new() };
    static WAKER_READY: OnceCell<()> = const { OnceCell::new() };
}

/// Caches the Lua handle of the main thread (at load).
pub fn set_lua(lua: Lua) {
    LUA.with(|l| {
        let _ = l.set(lua);
    });
}

/// The Lua function that applies a batch of events (the view's dispatcher).
pub fn set_dispatch(f: Function) {
    DISPATCH.with(|d| *d.borrow_mut() = Some(f));
}

/// Hooks the bridge to Neovim's loop: a libuv async handle whose callback
/// only schedules the drain (the API is unsafe inside the libuv callback).
pub fn install_waker() -> Result<(), String> {
    if WAKER_READY.with(|w| w.get().is_some()) {
        return Ok(());
    }
    let handle = nvim_oxi::libuv::AsyncHandle::new(|| {
        let _ = catch("wake-up", || {
            if bridge().claim_schedule() {
                nvim_oxi::schedule(|_| {
                    if let Err(e) = catch("drain", drain) {
                        log::error(&e);
                    }
                });
            }
        });
    })
    .map_err(|e| format!("cannot create the libuv async handle: {e}"))?;
    bridge().set_waker(move || {
        let _ = handle.send();
    });
    WAKER_READY.with(|w| {
        let _ = w.set(());
    });
    Ok(())
}

/// Main thread: hand one frame's slice of the queue to the Lua dispatcher in
/// one call. The slice is bounded (see `bridge::pacing`); what is left gets
/// the next frame's wake-up, after Neovim had the chance to redraw.
fn drain() {
    struct EndDrain(usize, bool);
    impl Drop for EndDrain {
        // Also on a panic, so that leftovers still get their wake-up.
        fn drop(&mut self) {
            bridge().end_drain(self.0, self.1);
        }
    }
    let budget = bridge().begin_drain();
    let slice = bridge().take_slice(budget);
    let _end = EndDrain(slice.bytes, slice.behind);
    let behind = slice.behind;
    let events = slice.events;
    if events.is_empty() {
        return;
    }
    LUA.with(|lua| {
        let Some(lua) = lua.get() else { return };
        let dispatch = DISPATCH.with(|d| d.borrow().clone());
        let Some(dispatch) = dispatch else {
            log::error(format!(
                "{} events arrived before a dispatcher was set",
                events.len()
            ));
            return;
        };
        // `behind`: the budget left events, whose drain follows in 2 ms.
        let result =
            batch_table(lua, &events).and_then(|batch| dispatch.call::<()>((batch, behind)));
        if let Err(e) = result {
            let msg = format!("acp.nvim: the chat view failed on an update: {e}");
            log::error(&msg);
            notify(lua, &msg, "error");
        }
    });
}

/// The Lua list of a drain's event tables (lua/acp/core/types.lua). The
/// batch's serde form goes to Lua as one JSON text that `vim.json.decode`
/// reads (`null` as nil): the same tables as `event_table` builds (an empty
/// object in an agent's value reads as `vim.empty_dict()`). A burst of a
/// hundred tool cards (403 events) took 12-14 ms of the main thread when
/// each table was built field by field through the Lua API (a protected
/// call per field), 4-7 ms this way (loaded machine). A batch serde_json
/// cannot write is built table by table.
fn batch_table(lua: &Lua, events: &VecDeque<UiEvent>) -> LuaResult<Table> {
    if let Ok(json) = serde_json::to_string(events) {
        let decode = DECODE.with(|d| -> LuaResult<Function> {
            if let Some(f) = d.get() {
                return Ok(f.clone());
            }
            let f = lua
                .load(
                    "local text = ...\n\
                     return vim.json.decode(text, { luanil = { object = true, array = true } })",
                )
                .into_function()?;
            let _ = d.set(f.clone());
            Ok(f)
        })?;
        return decode.call::<Table>(lua.create_string(json)?);
    }
    let batch = lua.create_table_with_capacity(events.len(), 0)?;
    for (i, ev) in events.iter().enumerate() {
        batch.raw_set(i + 1, event_table(lua, ev)?)?;
    }
    Ok(batch)
}

/// Tells the user through `acp.util.escape.notify` (an error must not hold
/// the next redraw in Insert mode; see there).
fn notify(lua: &Lua, msg: &str, level: &str) {
    let _ = lua
        .load(
            "local msg, level = ...\n\
             local lvl = vim.log.levels[level:upper()] or vim.log.levels.INFO\n\
             local ok, esc = pcall(require, 'acp.util.escape')\n\
             if ok then esc.notify(msg, lvl) else vim.notify(msg, lvl) end",
        )
        .call::<()>((msg, level));
}

/// Runs `f`, turning a panic into an error string (already logged by the hook).
pub fn catch<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        format!("acp.nvim core panicked in {what}: {msg}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catch_turns_panic_into_error() {
        let r: Result<(), String> = catch("test", || panic!("boom"));
        assert!(r.unwrap_err().contains("boom"));
    }
}
