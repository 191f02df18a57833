//! The typed edge for what agents send: each `session/update` and each
//! permission request is parsed once, leniently, into the data the model
//! uses (the other requests of the agent are typed in
//! `protocol::inbound`). A malformed field degrades that field (it reads as absent), never
//! the message; unknown update kinds are kept as `Ignored`.
//!
//! Also the parsers of input values (content blocks, resource URIs, a tool's
//! raw input and raw output) that the model stores as text.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::model::compaction::{self, AgentNotice, CompactionPatch};
use crate::model::entries::{EntryKind, PlanItem, RawOutput, ToolContent};
use crate::model::patch::Patch;
use crate::model::schema::{PermissionOptionKind, ToolKind, ToolStatus};

/// One `session/update`, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionUpdate {
    /// `user_message_chunk`, `agent_message_chunk`, `agent_thought_chunk`:
    /// the text of the chunk's content block (empty when it has none).
    Chunk {
        kind: EntryKind,
        message_id: Option<String>,
        text: String,
    },
    /// `tool_call` (`announce`) or `tool_call_update`.
    ToolCall {
        patch: ToolCallPatch,
        announce: bool,
    },
    Plan(Vec<PlanItem>),
    /// `session_info_update`: `title` and `updatedAt` with patch semantics
    /// (omitted: unchanged, `null`: cleared, a value: replaced).
    SessionInfo {
        title: Patch<String>,
        updated_at: Patch<String>,
    },
    /// `notice`.
    Notice(AgentNotice),
    /// `compaction_update`.
    Compaction(CompactionPatch),
    /// `compaction_summary_chunk`: the compaction's id and the text appended.
    CompactionChunk {
        id: String,
        text: String,
    },
    /// `current_mode_update`.
    Mode(String),
    /// `available_commands_update` (the list, kept as the agent sent it for
    /// the view's completion).
    Commands(Value),
    /// `config_option_update`.
    ConfigOptions(Value),
    /// `usage_update` without its `sessionUpdate` key.
    Usage(Value),
    /// `plan_update`: a plan by id, replaced whole.
    PlanById {
        id: String,
        body: crate::model::delegation::PlanBody,
    },
    /// `plan_removed`.
    PlanRemoved(String),
    /// `subagent_update`: a child session announced or patched.
    Subagent(crate::model::delegation::SubagentPatch),
    /// `session_message` / `session_message_chunk`.
    SessionMessage(crate::model::delegation::SessionMessage),
    /// An update of a subagent's own session (routed to its parent's chat).
    Child {
        session_id: String,
        update: Box<SessionUpdate>,
    },
    /// An update kind this client does not use, or one missing what it
    /// needs (e.g. a tool call without an id).
    Ignored(String),
}

/// The fields of a tool call or of an update to one. `None` means absent
/// (or `null`, or malformed): the card keeps its value (the schema's
/// `Option` fields of `tool_call_update`: `null` is "no update"). A value
/// replaces, an empty list too (`content: []`, `locations: []`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCallPatch {
    pub id: String,
    pub title: Option<String>,
    pub kind: Option<ToolKind>,
    pub status: Option<ToolStatus>,
    /// Replaces the card's locations when present. Lines are 1-based.
    pub locations: Option<Vec<(String, Option<u64>)>>,
    /// Replaces the card's content when present (`[]` empties it).
    pub content: Option<Vec<ToolContent>>,
    /// One-line summary of `rawInput` as the card shows it.
    pub raw_input: Option<String>,
    /// The command the tool runs (`rawInput.command`/`cmd`), as text (an
    /// argv list is joined as a shell line of exactly those words).
    pub command: Option<String>,
    /// `rawInput.cwd`: the directory the command runs in, as sent.
    pub cwd: Option<String>,
    /// `rawInput.env`: variables the command gets (an object, or a list of
    /// `{name, value}`).
    pub env: Option<BTreeMap<String, String>>,
    /// `Some(None)`: a `rawOutput` with nothing to show replaces the old one.
    pub raw_output: Option<Option<RawOutput>>,
    /// `_meta` (the adapters' display terminals live here).
    pub meta: Option<Value>,
    /// Child sessions its content links to (content of type `session`).
    pub sessions: Vec<String>,
}

/// One option of a permission request (the view gets the ones the core
/// accepts as an answer: `id`, `name`, `kind`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PermissionOption {
    pub id: String,
    pub name: String,
    pub kind: PermissionOptionKind,
}

/// `session/request_permission`, typed. Options without a string id, and
/// an id seen before, are dropped (the answer names an option by its id,
/// so such an option cannot be answered as shown); a missing name shows
/// the id.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    pub tool_call: ToolCallPatch,
    pub options: Vec<PermissionOption>,
    /// A note per dropped option, for the card.
    pub dropped: Vec<String>,
    /// How many options the agent sent (more than `MAX_PERMISSION_OPTIONS`:
    /// none are parsed, and the request is refused).
    pub options_sent: usize,
}

/// The most options a permission request may carry (a float of them is
/// still readable); a request with more is refused with -32602.
pub const MAX_PERMISSION_OPTIONS: usize = 16;

pub fn parse_update(update: &Value) -> SessionUpdate {
    let kind = str_field(update, "sessionUpdate").unwrap_or_default();
    let chunk = |kind: EntryKind| SessionUpdate::Chunk {
        kind,
        message_id: str_field(update, "messageId"),
        text: field(update, "content")
            .map(content_block_text)
            .unwrap_or_default(),
    };
    let parsed = match kind.as_str() {
        "agent_message_chunk" => Some(chunk(EntryKind::Agent)),
        "agent_thought_chunk" => Some(chunk(EntryKind::Thought)),
        "user_message_chunk" => Some(chunk(EntryKind::User)),
        "tool_call" | "tool_call_update" => {
            parse_tool_call(update).map(|patch| SessionUpdate::ToolCall {
                patch,
                announce: kind == "tool_call",
            })
        }
        "plan" => Some(SessionUpdate::Plan(crate::model::delegation::plan_entries(
            update,
        ))),
        "plan_update" => crate::model::delegation::parse_plan_update(update)
            .map(|(id, body)| SessionUpdate::PlanById { id, body }),
        "plan_removed" => {
            crate::model::delegation::parse_plan_removed(update).map(SessionUpdate::PlanRemoved)
        }
        "subagent_update" => {
            crate::model::delegation::parse_subagent_update(update).map(SessionUpdate::Subagent)
        }
        k if k == crate::model::delegation::CHILD_RECORD => {
            // A kept chat's record of a subagent's own update.
            match (str_field(update, "sessionId"), field(update, "update")) {
                (Some(session_id), Some(inner)) => Some(SessionUpdate::Child {
                    session_id,
                    update: Box::new(parse_update(inner)),
                }),
                _ => None,
            }
        }
        "session_message" | "session_message_chunk" => {
            crate::model::delegation::parse_session_message(update, kind == "session_message_chunk")
                .map(SessionUpdate::SessionMessage)
        }
        "session_info_update" => Some(SessionUpdate::SessionInfo {
            title: Patch::text(update, "title"),
            updated_at: Patch::text(update, "updatedAt"),
        }),
        "notice" => compaction::parse_notice(update).map(SessionUpdate::Notice),
        "compaction_update" => compaction::parse_compaction(update).map(SessionUpdate::Compaction),
        "compaction_summary_chunk" => compaction::parse_compaction_chunk(update)
            .map(|(id, text)| SessionUpdate::CompactionChunk { id, text }),
        "current_mode_update" => str_field(update, "currentModeId").map(SessionUpdate::Mode),
        "available_commands_update" => field(update, "availableCommands")
            .filter(|v| v.is_array())
            .map(|v| SessionUpdate::Commands(v.clone())),
        "config_option_update" => field(update, "configOptions")
            .filter(|v| v.is_array())
            .map(|v| SessionUpdate::ConfigOptions(v.clone())),
        "usage_update" => {
            let mut usage = update.clone();
            if let Some(m) = usage.as_object_mut() {
                m.remove("sessionUpdate");
            }
            Some(SessionUpdate::Usage(usage))
        }
        _ => None,
    };
    parsed.unwrap_or(SessionUpdate::Ignored(kind))
}

/// A tool call's fields; None without a `toolCallId`.
pub fn parse_tool_call(v: &Value) -> Option<ToolCallPatch> {
    let id = str_field(v, "toolCallId")?;
    let raw = field(v, "rawInput");
    Some(ToolCallPatch {
        id,
        title: str_field(v, "title"),
        kind: str_field(v, "kind").map(|k| ToolKind::known_or_other(&k)),
        status: str_field(v, "status").map(|s| ToolStatus::parse(&s)),
        locations: field(v, "locations").and_then(Value::as_array).map(|locs| {
            locs.iter()
                .filter_map(|l| {
                    // 1-based (schema v1); older agents sent 0 for the top.
                    Some((
                        str_field(l, "path")?,
                        field(l, "line").and_then(Value::as_u64).map(|n| n.max(1)),
                    ))
                })
                .collect()
        }),
        content: field(v, "content")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(tool_content).collect()),
        raw_input: raw.map(one_line_summary),
        command: raw.and_then(command_text),
        cwd: raw.and_then(|r| str_field(r, "cwd")),
        env: raw.and_then(|r| field(r, "env")).map(env_of),
        raw_output: field(v, "rawOutput").map(raw_output),
        meta: field(v, "_meta").cloned(),
        sessions: field(v, "content")
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .filter(|i| str_field(i, "type").as_deref() == Some("session"))
                    .filter_map(|i| str_field(i, "sessionId"))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

pub fn parse_permission_request(params: &Value) -> PermissionRequest {
    let tool_call = field(params, "toolCall")
        .and_then(parse_tool_call)
        .unwrap_or_default();
    let mut options: Vec<PermissionOption> = Vec::new();
    let mut dropped = Vec::new();
    let sent = field(params, "options")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let options_sent = sent.len();
    let sent = if options_sent > MAX_PERMISSION_OPTIONS {
        &[][..]
    } else {
        sent
    };
    for o in sent {
        let name = field(o, "name").map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        let shown = name.clone().unwrap_or_else(|| "?".into());
        let Some(id) = str_field(o, "optionId") else {
            dropped.push(format!(
                "the agent sent an option without a text id (\"{shown}\", not shown: it cannot be answered)"
            ));
            continue;
        };
        // Answering `id` would be read as the first option with it.
        if options.iter().any(|k| k.id == id) {
            dropped.push(format!(
                "the agent sent option id `{id}` twice (the second, \"{shown}\", is not shown)"
            ));
            continue;
        }
        options.push(PermissionOption {
            name: name.unwrap_or_else(|| id.clone()),
            kind: str_field(o, "kind")
                .map(|k| PermissionOptionKind::parse(&k))
                .unwrap_or_else(|| PermissionOptionKind::parse("")),
            id,
        });
    }
    PermissionRequest {
        tool_call,
        options,
        dropped,
        options_sent,
    }
}

fn tool_content(item: &Value) -> Option<ToolContent> {
    let s = |k: &str| str_field(item, k);
    match s("type")?.as_str() {
        "content" => Some(ToolContent::Text {
            text: field(item, "content")
                .map(content_block_text)
                .unwrap_or_default(),
        }),
        "diff" => Some(ToolContent::diff(
            s("path")?,
            s("oldText"),
            s("newText").unwrap_or_default(),
        )),
        "terminal" => Some(ToolContent::Terminal {
            id: s("terminalId")?,
            tail: String::new(),
            more_lines: 0,
            exit: None,
            known: false,
        }),
        _ => None,
    }
}

/// The command of a tool's raw input (`command` or `cmd`, a string or an
/// argv list; anything else as JSON), for policies that match on what the
/// user reads. A list is
/// joined as a shell line whose words are exactly its items, so a grant
/// compares it word for word.
fn command_text(raw: &Value) -> Option<String> {
    ["command", "cmd"]
        .iter()
        .find_map(|k| field(raw, k))
        .and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Array(a) => Some(crate::model::shellwords::join(
                &a.iter()
                    .map(|x| match x {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>(),
            )),
            // Not a command anyone can run, but what the agent sent: shown
            // (and granted) as its JSON text, never replaced by the title.
            other => Some(other.to_string()),
        })
}

/// `rawInput.env` as name -> value: an object, or a list of `{name,
/// value}` (as in `terminal/create`). Values that are not text are shown
/// as JSON; list items without a text name are skipped.
fn env_of(v: &Value) -> BTreeMap<String, String> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match v {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), text(v))).collect(),
        Value::Array(a) => a
            .iter()
            .filter_map(|item| {
                let name = str_field(item, "name")?;
                Some((name, item.get("value").map(text).unwrap_or_default()))
            })
            .collect(),
        other => BTreeMap::from([("env".to_owned(), text(other))]),
    }
}

/// `rawOutput` as a card shows it (`model::raw_output`).
pub use crate::model::raw_output::raw_output;

/// Reading values and content blocks (`model::blocks`).
pub use crate::model::blocks::{content_block_text, field, str_field, uri_label};

/// The keys of a tool's raw input that say what it works on, the first
/// one present winning.
const INPUT_KEYS: [&str; 7] = [
    "command",
    "cmd",
    "file_path",
    "path",
    "pattern",
    "query",
    "url",
];

/// What a tool's raw input works on, as a permission request shows it:
/// for an object, the first of [`INPUT_KEYS`] it has (None when it has
/// none); any other input itself. A string as it is, a list of strings
/// as its words (a command's quoted as a shell reads them), anything else
/// as JSON.
pub fn input_summary(raw: &Value) -> Option<String> {
    let (key, v) = match raw {
        Value::Null => return None,
        Value::Object(_) => INPUT_KEYS
            .iter()
            .find_map(|k| field(raw, k).map(|v| (*k, v)))?,
        other => ("", other),
    };
    Some(match v {
        Value::Array(a) if !a.iter().all(Value::is_string) => v.to_string(),
        v => input_text(key, v),
    })
}

/// An input value as text: a string as it is; a list of strings under
/// `command`/`cmd` as the shell line of exactly those words
/// (`shellwords::join`: `sh -lc 'a | b'`, never `sh -lc a | b`), under
/// another key joined by spaces; anything else as JSON.
fn input_text(key: &str, v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => {
            let words: Vec<String> = a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            if key == "command" || key == "cmd" {
                crate::model::shellwords::join(&words)
            } else {
                words.join(" ")
            }
        }
        other => other.to_string(),
    }
}

/// The most files a permission float or a card names from a raw input.
pub const MAX_INPUT_FILES: usize = 8;

/// The keys of a raw input (or of an entry of its `files`/`paths` list)
/// that hold a file path.
const PATH_KEYS: [&str; 3] = ["path", "filePath", "file_path"];

/// The files a tool's raw input names (Cline's `read_files` sends
/// `{"files": [{"path": ...}]}` and no locations): under `path`,
/// `filePath`, `file_path`, `paths` or `files`, each a string, a list of
/// strings or a list of objects with one of [`PATH_KEYS`]. Each once, in
/// order: the first `limit`, and how many more there are. None of an
/// input that is no object.
pub fn input_paths(raw: &Value, limit: usize) -> (Vec<String>, usize) {
    let mut seen = std::collections::HashSet::new();
    let mut first = Vec::new();
    let mut more = 0;
    let mut add = |p: &str| {
        if !p.is_empty() && seen.insert(p.to_owned()) {
            if first.len() < limit {
                first.push(p.to_owned());
            } else {
                more += 1;
            }
        }
    };
    fn of_entry(v: &Value) -> Option<&str> {
        match v {
            Value::String(s) => Some(s.as_str()),
            Value::Object(_) => PATH_KEYS
                .iter()
                .find_map(|k| field(v, k).and_then(Value::as_str)),
            _ => None,
        }
    }
    if !raw.is_object() {
        return (first, more);
    }
    for key in PATH_KEYS.iter().chain(&["paths", "files"]) {
        match field(raw, key) {
            Some(Value::Array(items)) => items.iter().filter_map(of_entry).for_each(&mut add),
            Some(Value::String(s)) => add(s),
            _ => {}
        }
    }
    (first, more)
}

/// `path` relative to `root` when inside it (as the project's files are
/// named), else as it is.
pub fn relative_path(path: &str, root: &std::path::Path) -> String {
    match std::path::Path::new(path).strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) if !root.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        _ => path.to_owned(),
    }
}

/// A one-line summary of a tool's raw input: the command or path when there
/// is one, else the files it names (the first three, the end of each kept),
/// else compact JSON, cut to 120 characters.
pub fn one_line_summary(raw: &Value) -> String {
    let pick = INPUT_KEYS
        .iter()
        .find_map(|k| field(raw, k).map(|v| input_text(k, v)));
    let files = || {
        let (first, more) = input_paths(raw, 3);
        if first.is_empty() {
            return None;
        }
        let shown: Vec<String> = first.iter().map(|p| keep_end(p, 40)).collect();
        let mut line = shown.join(", ");
        if more > 0 {
            line.push_str(&format!(" and {more} more"));
        }
        Some(line)
    };
    let text = pick
        .or_else(files)
        .unwrap_or_else(|| raw.to_string())
        .replace('\n', " ");
    if text.chars().count() > 120 {
        let cut: String = text.chars().take(119).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// `s` cut to `n` characters by dropping its start ("…" and the end).
fn keep_end(s: &str, n: usize) -> String {
    let count = s.chars().count();
    if count <= n {
        return s.to_owned();
    }
    let tail: String = s.chars().skip(count - (n - 1)).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_files_a_raw_input_names() {
        // Cline 3.0.65's read_files: no locations, the files in rawInput.
        let cline =
            json!({"files": [{"path": "/p/a.txt"}, {"path": "/p/b.txt"}, {"path": "/p/a.txt"}]});
        assert_eq!(
            input_paths(&cline, 8),
            (vec!["/p/a.txt".into(), "/p/b.txt".into()], 0)
        );
        assert_eq!(input_paths(&cline, 1), (vec!["/p/a.txt".into()], 1));
        let keys = json!({"filePath": "/p/f", "file_path": "/p/g", "path": "/p/h",
            "paths": ["/p/i", 7, {"filePath": "/p/j"}], "files": ["/p/k"]});
        let (all, more) = input_paths(&keys, 8);
        assert_eq!(all, ["/p/h", "/p/f", "/p/g", "/p/i", "/p/j", "/p/k"]);
        assert_eq!(more, 0);
        assert_eq!(input_paths(&json!("/p/x"), 8), (vec![], 0));
        assert_eq!(
            input_paths(&json!({"files": 7, "path": 3, "paths": [[1]]}), 8),
            (vec![], 0)
        );
        let root = std::path::Path::new("/p");
        assert_eq!(relative_path("/p/src/a.rs", root), "src/a.rs");
        assert_eq!(relative_path("/pq/a.rs", root), "/pq/a.rs");
        assert_eq!(relative_path("/p", root), ".");
        // The card names the files too, the end of a long one kept.
        let long = format!("/{}/hello.txt", "deep/".repeat(40));
        let line = one_line_summary(
            &json!({"files": [{"path": long}, {"path": "b"}, {"path": "c"}, {"path": "d"}]}),
        );
        assert!(
            line.starts_with('…') && line.ends_with("/hello.txt, b, c and 1 more"),
            "{line}"
        );
    }

    #[test]
    fn summary_prefers_command_and_cuts_long_text() {
        assert_eq!(
            one_line_summary(&json!({"command": "ls -la\nx", "other": 1})),
            "ls -la x"
        );
        let long = "a".repeat(300);
        assert_eq!(
            one_line_summary(&json!({ "query": long })).chars().count(),
            120
        );
        assert_eq!(one_line_summary(&json!({"n": 1})), r#"{"n":1}"#);
    }

    #[test]
    fn a_command_given_as_argv_shows_quoted_as_a_shell_reads_it() {
        let raw = json!({"command": ["/bin/sh", "-lc", "cat a b | tee c"]});
        let line = "/bin/sh -lc 'cat a b | tee c'";
        assert_eq!(one_line_summary(&raw), line, "the card");
        assert_eq!(input_summary(&raw).as_deref(), Some(line), "the float");
        let cmd = json!({"cmd": ["echo", "it's", ""]});
        assert_eq!(input_summary(&cmd).as_deref(), Some(r#"echo 'it'\''s' ''"#));
        // Other lists are words, not a command line.
        let paths = json!({"path": ["a b", "c"]});
        assert_eq!(input_summary(&paths).as_deref(), Some("a b c"));
        assert_eq!(one_line_summary(&paths), "a b c");
        // A plain string is shown as sent.
        let s = json!({"command": "a | b"});
        assert_eq!(input_summary(&s).as_deref(), Some("a | b"));
    }

    #[test]
    fn content_blocks_render_as_text_or_links() {
        assert_eq!(
            content_block_text(&json!({"type":"text","text":"hi"})),
            "hi"
        );
        assert_eq!(
            content_block_text(&json!({"type":"resource_link","name":"a.rs","uri":"file:///a.rs"})),
            "[a.rs](file:///a.rs)"
        );
        assert_eq!(content_block_text(&json!({"type":"unknown"})), "");
        assert_eq!(
            content_block_text(
                &json!({"type":"resource","resource":{"uri":"file:///p/my%20a.lua#L3-L5","text":"x"}})
            ),
            "@my a.lua#L3-L5"
        );
        assert_eq!(
            uri_label("untitled:buffer-3#L1-L2"),
            "untitled:buffer-3#L1-L2"
        );
        assert_eq!(uri_label("diagnostics:///p/src/a.lua"), "diagnostics:a.lua");
        assert_eq!(uri_label("file:///p/dir/"), "dir");
        assert_eq!(uri_label("file:///p/100%"), "100%");
        assert_eq!(uri_label(""), "resource");
    }

    #[test]
    fn malformed_fields_degrade_the_field_not_the_message() {
        let u = parse_update(&json!({
            "sessionUpdate": "tool_call", "toolCallId": "t", "title": 7,
            "kind": "teleport", "status": ["x"], "locations": "nope",
            "content": [{"type": "diff"}, {"type": "content", "content": {"type": "text", "text": "ok"}}],
            "rawInput": {"command": ["ls", "-la"]}
        }));
        let SessionUpdate::ToolCall { patch, announce } = u else {
            panic!("{u:?}")
        };
        assert!(announce);
        assert_eq!(patch.title, None);
        assert_eq!(patch.kind, Some(ToolKind::Other));
        assert_eq!(patch.status, None);
        assert_eq!(patch.locations, None);
        assert_eq!(
            patch.content,
            Some(vec![ToolContent::Text { text: "ok".into() }])
        );
        assert_eq!(patch.command.as_deref(), Some("ls -la"));
        assert_eq!(
            parse_update(&json!({"sessionUpdate": "tool_call_update", "title": "x"})),
            SessionUpdate::Ignored("tool_call_update".into())
        );
        assert_eq!(
            parse_update(&json!({"sessionUpdate": "brand_new"})),
            SessionUpdate::Ignored("brand_new".into())
        );
    }

    #[test]
    fn permission_requests_keep_good_options_and_name_unknown_kinds() {
        let r = parse_permission_request(&json!({
            "toolCall": {"toolCallId": "t", "kind": "execute", "rawInput": {"command": "rm -rf /"}},
            "options": [
                {"optionId": "a", "name": "Allow", "kind": "allow_once"},
                {"name": "no id"},
                {"optionId": "w", "kind": "allow_forever"}
            ]
        }));
        assert_eq!(r.tool_call.id, "t");
        assert_eq!(r.tool_call.command.as_deref(), Some("rm -rf /"));
        assert_eq!(r.options.len(), 2);
        assert_eq!(r.options[1].name, "w");
        assert!(!r.options[1].kind.is_always());
        assert_eq!(r.dropped.len(), 1, "{:?}", r.dropped);
    }

    #[test]
    fn permission_options_with_a_non_text_or_repeated_id_are_dropped() {
        let r = parse_permission_request(&json!({
            "toolCall": {"toolCallId": "t"},
            "options": [
                {"optionId": 42, "name": "Number", "kind": "allow_always"},
                {"optionId": "x", "name": "Allow", "kind": "allow_once"},
                {"optionId": "x", "name": "Reject", "kind": "reject_once"},
                {"optionId": "r", "name": 7, "kind": "reject_once"}
            ]
        }));
        let ids: Vec<_> = r
            .options
            .iter()
            .map(|o| (o.id.as_str(), o.name.as_str()))
            .collect();
        assert_eq!(
            ids,
            vec![("x", "Allow"), ("r", "7")],
            "the first `x` is kept"
        );
        assert_eq!(
            r.dropped,
            vec![
                "the agent sent an option without a text id (\"Number\", not shown: it cannot be answered)".to_owned(),
                "the agent sent option id `x` twice (the second, \"Reject\", is not shown)".to_owned(),
            ]
        );
    }
}
