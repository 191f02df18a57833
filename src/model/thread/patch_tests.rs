//! Patch semantics of every update field (omitted = unchanged, `null` as
//! the schema says, a value = replaced), the agent's notices and its
//! context compactions.

use serde_json::json;

use super::*;
use crate::model::entries::{RawOutput, ToolCall, ToolContent};
use crate::model::schema::{ToolKind, ToolStatus};

/// A thread with card `x` fully set (title, kind, status, content,
/// locations, raw input and output).
fn with_card() -> Thread {
    let mut t = Thread::new("demo");
    t.begin_turn("go");
    t.apply_json(
        &json!({"sessionUpdate": "tool_call", "toolCallId": "x", "title": "Read a.txt",
        "kind": "read", "status": "in_progress",
        "content": [{"type": "content", "content": {"type": "text", "text": "old text"}}],
        "locations": [{"path": "/p/a.txt", "line": 3}],
        "rawInput": {"path": "/p/a.txt"}, "rawOutput": {"stdout": "old out"}}),
    );
    t
}

fn card(t: &Thread) -> ToolCall {
    t.tool_call("x").unwrap().clone()
}

fn update(t: &mut Thread, fields: serde_json::Value) -> ToolCall {
    let mut u = json!({"sessionUpdate": "tool_call_update", "toolCallId": "x"});
    for (k, v) in fields.as_object().unwrap() {
        u[k] = v.clone();
    }
    t.apply_json(&u);
    card(t)
}

#[test]
fn tool_call_update_fields_omitted_or_null_stay() {
    let mut t = with_card();
    let before = card(&t);
    assert_eq!(update(&mut t, json!({})), before, "all omitted");
    let nulls = json!({"title": null, "kind": null, "status": null, "content": null,
        "locations": null, "rawInput": null, "rawOutput": null});
    assert_eq!(
        update(&mut t, nulls),
        before,
        "null is 'no update' for tool_call_update's optional fields (schema: Option)"
    );
}

#[test]
fn tool_call_update_values_replace_each_field() {
    let mut t = with_card();
    assert_eq!(
        update(&mut t, json!({"title": "Read b.txt"})).title,
        "Read b.txt"
    );
    assert_eq!(
        update(&mut t, json!({"status": "completed"})).status,
        ToolStatus::Completed
    );
    let c = update(
        &mut t,
        json!({"content": [{"type": "content", "content": {"type": "text", "text": "new"}}]}),
    );
    assert_eq!(c.content, vec![ToolContent::Text { text: "new".into() }]);
    let c = update(&mut t, json!({"locations": [{"path": "/p/b.txt"}]}));
    assert_eq!(c.locations, vec![("/p/b.txt".to_owned(), None)]);
    let c = update(&mut t, json!({"rawInput": {"path": "/p/b.txt"}}));
    assert_eq!(c.raw_input.as_deref(), Some("/p/b.txt"));
    let c = update(&mut t, json!({"rawOutput": {"stdout": "new out"}}));
    assert_eq!(c.raw_output.map(|o| o.text).as_deref(), Some("new out"));
    // The kind is replaced only while unknown (a policy keys on it; see
    // merge_tool_call): once known, a change is a note on the card.
    let c = update(&mut t, json!({"kind": "edit"}));
    assert_eq!(c.kind, ToolKind::Read);
    assert!(
        c.notes.iter().any(|n| n.contains("`edit`")),
        "{:?}",
        c.notes
    );
}

#[test]
fn empty_lists_and_empty_output_replace_too() {
    let mut t = with_card();
    let c = update(&mut t, json!({"content": []}));
    assert_eq!(c.content, vec![], "content: [] empties the card");
    assert!(!t.to_markdown().contains("old text"));
    let c = update(&mut t, json!({"locations": []}));
    assert!(c.locations.is_empty(), "locations: [] empties them");
    let c = update(&mut t, json!({"rawOutput": {}}));
    assert_eq!(
        c.raw_output, None::<RawOutput>,
        "an empty rawOutput replaces the old"
    );
    assert!(!t.to_markdown().contains("old out"));
}

#[test]
fn session_info_title_and_updated_at_patch() {
    let mut t = Thread::new("demo");
    let ev = t.apply_json(&json!({"sessionUpdate": "session_info_update",
        "title": "Fix the greeting", "updatedAt": "2026-11-25T10:00:00Z"}));
    assert_eq!(
        ev,
        vec![
            ThreadEvent::Title {
                title: Some("Fix the greeting".into())
            },
            ThreadEvent::UpdatedAt {
                updated_at: Some("2026-11-25T10:00:00Z".into())
            }
        ]
    );
    // Omitted: unchanged, and nothing told.
    let ev = t.apply_json(&json!({"sessionUpdate": "session_info_update",
        "updatedAt": "2026-11-25T11:00:00Z"}));
    assert_eq!(t.title.as_deref(), Some("Fix the greeting"));
    assert_eq!(t.updated_at.as_deref(), Some("2026-11-25T11:00:00Z"));
    assert_eq!(ev.len(), 1);
    // null: cleared.
    let ev = t.apply_json(&json!({"sessionUpdate": "session_info_update", "title": null}));
    assert_eq!(t.title, None);
    assert_eq!(ev, vec![ThreadEvent::Title { title: None }]);
    t.apply_json(
        &json!({"sessionUpdate": "session_info_update", "updatedAt": null,
        "_meta": {"x": 1}}),
    );
    assert_eq!(t.updated_at, None);
    // Malformed: the field degrades to unchanged.
    t.apply_json(&json!({"sessionUpdate": "session_info_update", "title": 7}));
    assert_eq!(t.title, None);
}

#[test]
fn a_live_notice_is_an_entry_and_told_a_replayed_one_only_shown() {
    let mut t = Thread::new("demo");
    let ev = t.apply_json(&json!({"sessionUpdate": "notice", "severity": "error",
        "title": "Context window exhausted", "description": "Start a new chat"}));
    assert!(
        matches!(&ev[0], ThreadEvent::Added { kind: EntryKind::AgentNotice, lines, .. }
        if lines == &["✖ Error · Context window exhausted", "  Start a new chat"])
    );
    assert!(matches!(&ev[1], ThreadEvent::Marks { marks, .. } if marks[0].role == "error"));
    assert!(matches!(&ev[2], ThreadEvent::AgentNotice { severity, .. } if severity == "error"));
    let records = [json!({"sessionUpdate": "notice", "severity": "warning", "title": "old"})];
    let ev = t.replay_kept("kept", &records, "end");
    assert!(!ev
        .iter()
        .any(|e| matches!(e, ThreadEvent::AgentNotice { .. })));
    assert!(t.to_markdown().contains("⚠ Warning · old"));
}

#[test]
fn a_compaction_streams_and_is_patched_in_place() {
    let mut t = Thread::new("demo");
    t.begin_turn("/compact");
    let c = |v: serde_json::Value| {
        let mut u = json!({"sessionUpdate": "compaction_update", "compactionId": "c1"});
        for (k, x) in v.as_object().unwrap() {
            u[k] = x.clone();
        }
        u
    };
    let sum = |text: &str| {
        json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1",
            "content": {"type": "text", "text": text}})
    };
    t.apply_json(&c(json!({"status": "in_progress"})));
    t.apply_json(&sum("Kept: the plan"));
    t.apply_json(&json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "after"}}));
    let ev = t.apply_json(&sum("\nDropped: logs"));
    assert!(matches!(&ev[0], ThreadEvent::Replaced { lines, .. }
        if lines == &["Compaction · in progress", "  Kept: the plan", "  Dropped: logs"]));
    let md = t.to_markdown();
    assert!(
        md.find("Compaction").unwrap() < md.find("after").unwrap(),
        "the first update fixes its place: {md}"
    );
    // Omitted summary: unchanged; a value replaces; an error is set.
    t.apply_json(&c(json!({"status": "failed", "error": "too large"})));
    assert!(t
        .to_markdown()
        .contains("Compaction · failed\n  Kept: the plan\n  Dropped: logs\n  error: too large"));
    t.apply_json(&c(json!({"status": "completed", "summary": [{"type": "text", "text": "Short"}], "error": null})));
    assert!(t
        .to_markdown()
        .contains("Compaction · completed\n  Short\n\n"));
    t.apply_json(&c(json!({"status": "completed", "summary": []})));
    assert!(t.to_markdown().contains("Compaction · completed\n\n"));
    // A chunk of an id never seen starts one in progress.
    t.apply_json(
        &json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c2",
        "content": {"type": "text", "text": "x"}}),
    );
    assert!(t.to_markdown().ends_with("Compaction · in progress\n  x"));
}

#[test]
fn a_streamed_summary_at_the_end_appends_as_its_full_rendering_reads() {
    let mut t = Thread::new("demo");
    t.begin_turn("/compact");
    let mut shown: Vec<String> = Vec::new();
    let mut index = None;
    let mut appended = 0;
    let chunks = [
        "The user",
        " fixes hello.py.\nNext:",
        " tests",
        "\n## You",
        " and more",
    ];
    let mut events = t.apply_json(&json!({"sessionUpdate": "compaction_update",
        "compactionId": "c1", "status": "in_progress"}));
    for text in chunks {
        events.extend(
            t.apply_json(&json!({"sessionUpdate": "compaction_summary_chunk",
            "compactionId": "c1", "content": {"type": "text", "text": text}})),
        );
    }
    for ev in events {
        match ev {
            ThreadEvent::Added {
                index: i,
                kind: EntryKind::Compaction,
                lines,
            } => {
                index = Some(i);
                shown = lines;
            }
            ThreadEvent::Replaced { index: i, lines } if Some(i) == index => shown = lines,
            ThreadEvent::Appended { index: i, text } if Some(i) == index => {
                appended += 1;
                let mut parts = text.split('\n');
                shown.last_mut().unwrap().push_str(parts.next().unwrap());
                shown.extend(parts.map(str::to_owned));
            }
            _ => {}
        }
    }
    assert_eq!(appended, 3, "the chunks without a `#` append");
    let Some(Entry::Compaction(c)) = t.entries().last() else {
        panic!()
    };
    let (full, _) = render::compaction_rendering(c);
    assert_eq!(shown.join("\n"), full);
    assert!(full.contains("\n  \\## You and more"), "{full}");
}
