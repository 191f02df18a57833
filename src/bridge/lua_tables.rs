//! Rust values as Lua tables: the table of each event the view's
//! dispatcher gets (the shapes lua/acp/types.lua declares), and the two
//! conversions the native functions share.

use mlua::{Lua, LuaSerdeExt, Result as LuaResult, Table, Value as LuaValue};
use serde_json::Value;

use super::queue::UiEvent;
use crate::model::events::ThreadEvent;

/// JSON to Lua with `null` as nil: Lua code then tests fields with plain
/// truthiness, and the values can cross msgpack-RPC (tests, remote UIs).
pub fn to_lua<T: serde::Serialize + ?Sized>(lua: &Lua, v: &T) -> LuaResult<LuaValue> {
    lua.to_value_with(
        v,
        mlua::SerializeOptions::new()
            .serialize_none_to_null(false)
            .serialize_unit_to_null(false),
    )
}

/// A list of strings as a Lua sequence.
pub fn lines_table(lua: &Lua, lines: Vec<String>) -> LuaResult<Table> {
    let t = lua.create_table_with_capacity(lines.len(), 0)?;
    for (i, l) in lines.into_iter().enumerate() {
        t.raw_set(i + 1, l)?;
    }
    Ok(t)
}

/// The Lua table of one event, as lua/acp/types.lua declares it.
pub fn event_table(lua: &Lua, ev: UiEvent) -> LuaResult<Table> {
    let t = lua.create_table()?;
    match ev {
        UiEvent::Thread { thread, event } => {
            t.set("thread", thread)?;
            match event {
                ThreadEvent::Added { index, kind, lines } => {
                    t.set("type", "added")?;
                    t.set("index", index)?;
                    t.set("kind", kind.as_str())?;
                    t.set("lines", lines_table(lua, lines)?)?;
                }
                ThreadEvent::Appended { index, text } => {
                    t.set("type", "appended")?;
                    t.set("index", index)?;
                    t.set("text", text)?;
                }
                ThreadEvent::Replaced { index, lines } => {
                    t.set("type", "replaced")?;
                    t.set("index", index)?;
                    t.set("lines", lines_table(lua, lines)?)?;
                }
                ThreadEvent::Status { state, detail } => {
                    t.set("type", "status")?;
                    t.set("state", state.as_str())?;
                    t.set("detail", detail)?;
                }
                ThreadEvent::Session { session_id } => {
                    t.set("type", "session")?;
                    t.set("session_id", session_id)?;
                }
                ThreadEvent::Title { title } => {
                    t.set("type", "title")?;
                    t.set("title", title)?;
                }
                ThreadEvent::Mode { mode_id } => {
                    t.set("type", "mode")?;
                    t.set("mode_id", mode_id)?;
                }
                ThreadEvent::Modes { modes } => {
                    t.set("type", "modes")?;
                    t.set("modes", to_lua(lua, &modes)?)?;
                }
                ThreadEvent::Commands { commands } => {
                    t.set("type", "commands")?;
                    t.set("commands", to_lua(lua, &commands)?)?;
                }
                ThreadEvent::ConfigOptions { options } => {
                    t.set("type", "config_options")?;
                    t.set("options", to_lua(lua, &options)?)?;
                }
                ThreadEvent::Models { models } => {
                    t.set("type", "models")?;
                    t.set("models", to_lua(lua, &models)?)?;
                }
                ThreadEvent::Usage { usage } => {
                    t.set("type", "usage")?;
                    t.set("usage", to_lua(lua, &usage)?)?;
                }
                ThreadEvent::Card { index, card } => {
                    t.set("type", "card")?;
                    t.set("index", index)?;
                    t.set("card", to_lua(lua, &*card)?)?;
                }
                ThreadEvent::Agent {
                    name,
                    info,
                    capabilities,
                } => {
                    t.set("type", "agent")?;
                    t.set("name", name)?;
                    t.set("info", to_lua(lua, &info)?)?;
                    t.set("capabilities", to_lua(lua, &capabilities)?)?;
                }
                ThreadEvent::TurnStarted { turn } => {
                    t.set("type", "turn_started")?;
                    t.set("turn", turn)?;
                }
                ThreadEvent::TurnEnded {
                    turn,
                    stop_reason,
                    duration_ms,
                    usage,
                } => {
                    t.set("type", "turn_ended")?;
                    t.set("turn", turn)?;
                    t.set("stop_reason", stop_reason)?;
                    t.set("duration_ms", duration_ms)?;
                    if let Some(usage) = usage {
                        t.set("usage", to_lua(lua, &usage)?)?;
                    }
                }
                ThreadEvent::TerminalOutput { id, data } => {
                    t.set("type", "terminal_output")?;
                    t.set("id", id)?;
                    t.set("data", data)?;
                }
            }
        }
        UiEvent::Permission {
            thread,
            request,
            payload,
        } => {
            t.set("type", "permission")?;
            t.set("thread", thread)?;
            t.set("request", request)?;
            t.set("payload", to_lua(lua, &payload)?)?;
        }
        UiEvent::PermissionDone { thread, request } => {
            t.set("type", "permission_done")?;
            t.set("thread", thread)?;
            t.set("request", request)?;
        }
        UiEvent::Elicitation {
            thread,
            request,
            payload,
        } => {
            t.set("type", "elicitation")?;
            t.set("thread", thread)?;
            t.set("request", request)?;
            t.set("payload", to_lua(lua, &payload)?)?;
        }
        UiEvent::ElicitationDone { request } => {
            t.set("type", "elicitation_done")?;
            t.set("request", request)?;
        }
        UiEvent::ElicitationComplete { elicitation_id } => {
            t.set("type", "elicitation_complete")?;
            t.set("elicitation_id", elicitation_id)?;
        }
        UiEvent::Reply {
            request,
            result,
            error,
        } => {
            t.set("type", "reply")?;
            t.set("request", request)?;
            // `null` results (session/load may answer null) arrive as `true`.
            match result {
                Some(Value::Null) => t.set("result", true)?,
                Some(v) => t.set("result", to_lua(lua, &v)?)?,
                None => {}
            }
            t.set("error", error)?;
        }
        UiEvent::Notify { level, message } => {
            t.set("type", "notify")?;
            t.set("level", level)?;
            t.set("message", message)?;
        }
        UiEvent::Call {
            call,
            thread,
            request,
        } => {
            // `{ method, payload }` from the enum's serde tagging.
            let LuaValue::Table(r) = to_lua(lua, &request)? else {
                return Err(mlua::Error::runtime(
                    "a main-thread call did not serialise to a table",
                ));
            };
            t.set("type", "call")?;
            t.set("call", call)?;
            t.set("thread", thread)?;
            t.set("method", r.get::<LuaValue>("method")?)?;
            t.set("payload", r.get::<LuaValue>("payload")?)?;
        }
        UiEvent::Files {
            request,
            root,
            count,
            truncated,
            error,
        } => {
            t.set("type", "files")?;
            t.set("request", request)?;
            t.set("root", root)?;
            t.set("count", count)?;
            t.set("truncated", truncated)?;
            t.set("error", error)?;
        }
    }
    Ok(t)
}
