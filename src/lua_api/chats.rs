//! Kept chats for Lua: where they live and their caps (from `init`), the
//! list of a project's kept chats for the picker, deleting one.

use std::path::{Path, PathBuf};

use mlua::{Lua, LuaSerdeExt, Result as LuaResult, Table};

use crate::session::kept_chats::{self, Limits};

/// `init`'s `history_dir` (absent: chats are not kept) and caps.
pub(super) fn configure(opts: &Table) -> LuaResult<()> {
    let dir = opts.get::<Option<String>>("history_dir")?;
    let d = Limits::default();
    let limits = Limits {
        chat_max_bytes: opts
            .get::<Option<usize>>("history_chat_max_bytes")?
            .unwrap_or(d.chat_max_bytes),
        project_max_bytes: opts
            .get::<Option<u64>>("history_project_max_bytes")?
            .unwrap_or(d.project_max_bytes),
        project_max_chats: opts
            .get::<Option<usize>>("history_project_max_chats")?
            .unwrap_or(d.project_max_chats),
    };
    kept_chats::configure(dir.map(PathBuf::from), limits);
    Ok(())
}

pub(super) fn register(lua: &Lua, m: &Table) -> LuaResult<()> {
    // The kept chats of a project, newest first, and the files that could
    // not be read. Reads only each file's first line.
    m.set(
        "kept_chats",
        lua.create_function(|lua, root: String| {
            let (chats, problems) = kept_chats::list(Path::new(&root));
            let t = lua.create_table()?;
            t.set("chats", lua.to_value(&chats)?)?;
            t.set("problems", lua.to_value(&problems)?)?;
            Ok(t)
        })?,
    )?;

    m.set(
        "kept_delete",
        lua.create_function(|_, (root, id): (String, String)| {
            kept_chats::delete(Path::new(&root), &id).map_err(mlua::Error::runtime)
        })?,
    )?;
    Ok(())
}
