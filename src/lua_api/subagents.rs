//! Subagents for Lua: cancelling one child session's work.

use mlua::{Lua, Result as LuaResult, Table};

use super::lua_err;
use crate::session::registry::registry;

pub(super) fn register(lua: &Lua, m: &Table) -> LuaResult<()> {
    // Cancels subagent `sid` of chat `id`: true, or false and why not.
    m.set(
        "cancel_subagent",
        lua.create_function(|_, (id, sid): (u64, String)| {
            let t = registry().thread(id).map_err(lua_err)?;
            Ok(match t.cancel_subagent(&sid) {
                Ok(()) => (true, None),
                Err(why) => (false, Some(why)),
            })
        })?,
    )?;
    Ok(())
}
