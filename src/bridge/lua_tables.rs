//! Rust values as Lua tables: the table of each event the view's
//! dispatcher gets (the shapes lua/acp/core/types.lua declares), and the
//! two conversions the native functions share.
//!
//! Every event table is built one way: the event's serde form (`UiEvent`
//! and `ThreadEvent` derive `Serialize`, tagged by `type`) serialised
//! straight into Lua. A field, a variant or a rename is declared once, on
//! the Rust type, and the table follows it.

use mlua::{Lua, LuaSerdeExt, Result as LuaResult, SerializeOptions, Table, Value as LuaValue};

use super::queue::UiEvent;

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

/// How events become Lua values: `None` (and JSON `null` inside agent
/// values) is absent rather than a `null` sentinel, so Lua tests fields by
/// truthiness; sequences are plain tables (no protected marker metatable,
/// so `vim.deepcopy` and friends work on them).
const EVENT_OPTIONS: SerializeOptions = SerializeOptions::new()
    .serialize_none_to_null(false)
    .serialize_unit_to_null(false)
    .set_array_metatable(false);

/// The Lua table of one event, as lua/acp/core/types.lua declares it: its
/// serde form. A thread event (most of them, and the streamed text) is its
/// `ThreadEvent`'s table with `thread` set on it, which is that form without
/// serde's `flatten` (a map built key by key, about a microsecond more per
/// event than a struct).
pub fn event_table(lua: &Lua, ev: &UiEvent) -> LuaResult<LuaValue> {
    match ev {
        UiEvent::Thread { thread, event } => {
            let t = lua.to_value_with(event, EVENT_OPTIONS)?;
            if let LuaValue::Table(t) = &t {
                t.raw_set("thread", *thread)?;
            }
            Ok(t)
        }
        ev => lua.to_value_with(ev, EVENT_OPTIONS),
    }
}

/// A value the way events are built (no `null`, plain sequences).
pub fn to_lua_plain<T: serde::Serialize + ?Sized>(lua: &Lua, v: &T) -> LuaResult<LuaValue> {
    lua.to_value_with(v, EVENT_OPTIONS)
}

#[cfg(test)]
mod tests {
    //! The serde form is the table (mlua serialises the same `Serialize`
    //! impl); a test binary cannot host Lua, so the form is read as JSON.
    use serde_json::{json, Value};

    use super::super::main_call::MainCall;
    use super::UiEvent;
    use crate::model::entries::EntryKind;
    use crate::model::events::{ThreadEvent, TurnState};

    /// The event's serde form as Lua gets it: `null` is no key at all
    /// (`EVENT_OPTIONS`).
    fn form(ev: UiEvent) -> Value {
        drop_nulls(serde_json::to_value(&ev).unwrap())
    }

    fn drop_nulls(v: Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k, drop_nulls(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.into_iter().map(drop_nulls).collect()),
            v => v,
        }
    }

    /// A thread event's form, checked equal to what `event_table` builds:
    /// the `ThreadEvent`'s own form plus `thread`.
    fn thread(event: ThreadEvent) -> Value {
        let mut own = serde_json::to_value(&event).unwrap();
        own.as_object_mut()
            .unwrap()
            .insert("thread".into(), json!(7));
        let whole = form(UiEvent::Thread { thread: 7, event });
        assert_eq!(whole, drop_nulls(own));
        whole
    }

    #[test]
    fn thread_events_are_flat_with_their_thread_and_snake_case_type() {
        assert_eq!(
            thread(ThreadEvent::Appended {
                index: 3,
                text: "hi".into()
            }),
            json!({ "type": "appended", "thread": 7, "index": 3, "text": "hi" })
        );
        assert_eq!(
            thread(ThreadEvent::Added {
                index: 0,
                kind: EntryKind::ToolCall,
                lines: vec!["a".into(), "".into()]
            }),
            json!({ "type": "added", "thread": 7, "index": 0, "kind": "tool_call", "lines": ["a", ""] })
        );
        assert_eq!(
            thread(ThreadEvent::Status {
                state: TurnState::Disconnected,
                detail: String::new(),
                sign_in: false
            }),
            json!({ "type": "status", "thread": 7, "state": "disconnected", "detail": "" })
        );
        assert_eq!(
            thread(ThreadEvent::Status {
                state: TurnState::Disconnected,
                detail: String::new(),
                sign_in: true
            }),
            json!({ "type": "status", "thread": 7, "state": "disconnected", "detail": "", "sign_in": true })
        );
        assert_eq!(
            thread(ThreadEvent::ConfigOptions { options: json!([]) }),
            json!({ "type": "config_options", "thread": 7, "options": [] })
        );
        // An absent usage is no key at all (Lua sees nil, never a sentinel).
        assert_eq!(
            thread(ThreadEvent::TurnEnded {
                turn: 2,
                stop_reason: "end_turn".into(),
                duration_ms: 5,
                usage: None
            }),
            json!({ "type": "turn_ended", "thread": 7, "turn": 2, "stop_reason": "end_turn", "duration_ms": 5 })
        );
    }

    #[test]
    fn names_match_the_old_words() {
        for (kind, word) in [
            (EntryKind::User, "user"),
            (EntryKind::Heading, "heading"),
            (EntryKind::Agent, "agent"),
            (EntryKind::Thought, "thought"),
            (EntryKind::ToolCall, "tool_call"),
            (EntryKind::Plan, "plan"),
            (EntryKind::Notice, "notice"),
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(word));
        }
        for state in [
            TurnState::Connecting,
            TurnState::Idle,
            TurnState::Running,
            TurnState::Disconnected,
        ] {
            assert_eq!(serde_json::to_value(state).unwrap(), json!(state.as_str()));
        }
    }

    #[test]
    fn calls_replies_and_elicitations_keep_their_shapes() {
        assert_eq!(
            form(UiEvent::Call {
                call: 4,
                thread: 7,
                request: MainCall::TerminalKill {
                    id: "t".into(),
                    pid: 9
                }
            }),
            json!({ "type": "call", "call": 4, "thread": 7, "method": "terminal_kill",
                    "payload": { "id": "t", "pid": 9 } })
        );
        // session/load may answer null: that crosses as `true`.
        assert_eq!(
            form(UiEvent::Reply {
                request: 1,
                result: Some(Value::Null),
                error: None
            }),
            json!({ "type": "reply", "request": 1, "result": true })
        );
        assert_eq!(
            form(UiEvent::Reply {
                request: 1,
                result: None,
                error: Some("no".into())
            }),
            json!({ "type": "reply", "request": 1, "error": "no" })
        );
        // A request-scoped elicitation has no thread.
        assert_eq!(
            form(UiEvent::Elicitation {
                thread: None,
                request: 2,
                payload: json!({ "mode": "url" })
            }),
            json!({ "type": "elicitation", "request": 2, "payload": { "mode": "url" } })
        );
        assert_eq!(
            form(UiEvent::ElicitationComplete {
                elicitation_id: "e".into()
            }),
            json!({ "type": "elicitation_complete", "elicitation_id": "e" })
        );
    }

    #[test]
    fn a_card_without_diff_terminal_or_status_words_leaves_those_parts_out() {
        let tc = crate::model::entries::ToolCall::new("c");
        let card = crate::model::events::CardMeta::of(&tc, Default::default());
        let ev = serde_json::to_value(UiEvent::Thread {
            thread: 7,
            event: ThreadEvent::Card {
                index: 3,
                card: Box::new(card),
            },
        })
        .unwrap();
        let keys: Vec<&str> = ev["card"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["id", "title", "kind", "status", "locations", "header"]
        );
    }
}
