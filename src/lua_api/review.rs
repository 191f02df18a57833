//! Review for Lua: the change records of a chat's session (`writes`),
//! the texts review compares and keeps, accepting them, the disk edits the
//! sync saw, and the records carried over in a kept chat.

use mlua::{Lua, Result as LuaResult, Table, Value as LuaValue};

use super::lua_err;
use crate::bridge::lua_tables::to_lua;
use crate::session::registry::registry;

pub(super) fn register(lua: &Lua, m: &Table) -> LuaResult<()> {
    m.set(
        "accept_changes",
        lua.create_function(|_, (id, also): (u64, Option<Vec<String>>)| {
            registry()
                .thread(id)
                .map_err(lua_err)?
                .editor
                .accept_changes(&also.unwrap_or_default(), now_secs());
            Ok(())
        })?,
    )?;

    m.set(
        "review_base",
        lua.create_function(|lua, (id, path, now): (u64, String, Option<String>)| {
            let t = registry().thread(id).map_err(lua_err)?;
            match t.editor.review_base(&path, now.as_deref()) {
                Some(b) => to_lua(lua, &b),
                None => Ok(LuaValue::Nil),
            }
        })?,
    )?;

    m.set(
        "review_keep",
        lua.create_function(
            |_, (id, path, before, after): (u64, String, String, String)| {
                registry().thread(id).map_err(lua_err)?.editor.keep_changes(
                    &path,
                    before,
                    after,
                    now_secs(),
                );
                Ok(())
            },
        )?,
    )?;

    m.set(
        "review_export",
        lua.create_function(|_, id: u64| {
            Ok(registry()
                .thread(id)
                .map_err(lua_err)?
                .editor
                .review_export())
        })?,
    )?;

    m.set(
        "review_import",
        lua.create_function(|_, (id, json): (u64, String)| {
            registry()
                .thread(id)
                .map_err(lua_err)?
                .editor
                .review_import(&json)
                .map_err(lua_err)
        })?,
    )?;

    m.set(
        "disk_edit",
        lua.create_function(|_, (id, edit): (u64, Table)| {
            let t = registry().thread(id).map_err(lua_err)?;
            let path = edit.get::<String>("path")?;
            // Without `before`: the text the buffer and the file last
            // agreed on, which the core keeps (nothing when it is unknown).
            let before = match edit.get::<Option<String>>("before")? {
                Some(b) => b,
                None => match crate::editor::agreed::AGREED.get(&path) {
                    Some(t) => t.as_str().to_owned(),
                    None => return Ok(()),
                },
            };
            // Nothing changed: nothing to record.
            let after = edit.get::<Option<mlua::String>>("after")?;
            if after
                .as_ref()
                .is_some_and(|a| *a.as_bytes() == *before.as_bytes())
            {
                return Ok(());
            }
            let after = after.map(|a| a.to_string_lossy().to_string());
            t.record_disk_edit(&path, before, after);
            Ok(())
        })?,
    )?;

    m.set(
        "checkpoints",
        lua.create_function(|lua, id: u64| {
            let t = registry().thread(id).map_err(lua_err)?;
            to_lua(lua, &t.editor.checkpoints_list())
        })?,
    )?;

    m.set(
        "checkpoint_paths",
        lua.create_function(|lua, (id, turn): (u64, u64)| {
            let t = registry().thread(id).map_err(lua_err)?;
            match t.editor.checkpoint_paths(turn) {
                Some(p) => to_lua(lua, &p),
                None => Ok(LuaValue::Nil),
            }
        })?,
    )?;

    m.set(
        "checkpoint_base",
        lua.create_function(
            |lua, (id, turn, path, now): (u64, u64, String, Option<mlua::String>)| {
                let t = registry().thread(id).map_err(lua_err)?;
                let now = now.map(|n| n.to_string_lossy().to_string());
                match t.editor.checkpoint_base(turn, &path, now.as_deref()) {
                    Some(b) => to_lua(lua, &b),
                    None => Ok(LuaValue::Nil),
                }
            },
        )?,
    )?;

    m.set(
        "checkpoint_undone",
        lua.create_function(|lua, (id, turn): (u64, u64)| {
            let t = registry().thread(id).map_err(lua_err)?;
            let undone = t.editor.checkpoint_undone(turn);
            // Kept chats keep the mark.
            t.save_kept();
            to_lua(lua, &undone)
        })?,
    )?;

    m.set(
        "writes",
        lua.create_function(|lua, id: u64| {
            let t = registry().thread(id).map_err(lua_err)?;
            let writes = t.editor.changes.lock().clone();
            to_lua(lua, &writes)
        })?,
    )?;
    Ok(())
}

/// Seconds since the epoch (the time of a change record).
fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
