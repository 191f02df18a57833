//! The agent's images and audio for Lua: where their files are (the chat
//! opens only files under this folder).

use mlua::{Lua, Result as LuaResult, Table};

use crate::protocol::media;

pub(super) fn register(lua: &Lua, m: &Table) -> LuaResult<()> {
    m.set(
        "media_root",
        lua.create_function(|_, ()| Ok(media::root().to_string_lossy().into_owned()))?,
    )?;
    Ok(())
}
