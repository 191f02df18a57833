//! Every shape of `tests/fixtures/schema120.json` (made with the
//! agent-client-protocol-schema 1.20.0 types) through the lenient edge, in
//! order, with what each becomes.

use serde_json::Value;

use super::*;
use crate::model::delegation::parse_subagent_update;
use crate::model::update::{parse_update, SessionUpdate};

const PARENT: &str = "sess_parent";
const CHILD: &str = "sess_child_1";

fn fixture() -> Value {
    serde_json::from_str(include_str!("../../../tests/fixtures/schema120.json")).unwrap()
}

fn step<'a>(all: &'a Value, name: &str) -> &'a Value {
    all["updates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}"))
}

/// Applies step `name` as the connection hands it on: the chat's own
/// session's updates as they are, a subagent's wrapped as its.
fn apply(t: &mut Thread, all: &Value, name: &str) -> Vec<ThreadEvent> {
    let s = step(all, name);
    let update = parse_update(&s["update"]);
    assert!(
        !matches!(update, SessionUpdate::Ignored(_)),
        "{name} is read: {}",
        s["update"]
    );
    match s["sessionId"].as_str().unwrap() {
        PARENT => t.apply_update(&update),
        sid => t.apply_update(&SessionUpdate::Child {
            session_id: sid.into(),
            update: Box::new(update),
        }),
    }
}

fn block(t: &Thread) -> String {
    let i = t.subagents[CHILD];
    t.entries()[i].to_markdown()
}

fn plan_md(t: &Thread, id: &str) -> Vec<String> {
    t.entries()
        .iter()
        .filter(|e| matches!(e, Entry::IdPlan(p) if p.id == id))
        .map(Entry::to_markdown)
        .collect()
}

#[test]
fn every_schema_120_shape_becomes_what_the_schema_says() {
    let all = fixture();
    let mut t = Thread::new("demo");
    t.begin_turn("q");

    // Plans by id.
    apply(&mut t, &all, "plan_items");
    assert_eq!(
        plan_md(&t, "plan-1"),
        ["Plan · 1/3 done\n- [x] Analyze the existing codebase structure (high)\n- [ ] Identify components that need refactoring (high) · in progress\n- [ ] Create unit tests for critical functions (low)"]
    );
    apply(&mut t, &all, "plan_markdown");
    assert_eq!(
        plan_md(&t, "plan-2")[0].lines().next(),
        Some("Plan · plan.md")
    );
    assert!(plan_md(&t, "plan-2")[0].contains("1. Split the parser"));
    apply(&mut t, &all, "plan_markdown_no_path");
    assert_eq!(plan_md(&t, "plan-3"), ["Plan · markdown\n\n- one\n- two"]);
    // The same id with another type: the same block, replaced whole.
    apply(&mut t, &all, "plan_type_changes");
    assert_eq!(
        plan_md(&t, "plan-1"),
        ["Plan · markdown\n\nRewritten as prose"]
    );
    apply(&mut t, &all, "plan_removed");
    assert_eq!(plan_md(&t, "plan-2"), ["Plan · removed by the agent"]);
    let before = t.entries().len();
    assert!(apply(&mut t, &all, "plan_removed_unknown").is_empty());
    assert_eq!(
        t.entries().len(),
        before,
        "an unknown plan's removal is ignored"
    );

    // The tool call whose `session` content links the subagent.
    apply(&mut t, &all, "tool_call_session");
    let card = t.entries().len() - 2;
    assert!(matches!(&t.entries()[card], Entry::ToolCall(tc) if tc.id == "call_task_1"));
    assert_eq!(
        t.subagents[CHILD],
        card + 1,
        "its block opens under the card"
    );
    assert_eq!(
        block(&t),
        "Subagent · sess_child_1 · not reported\n> under `Task: investigate the failing tests`"
    );

    apply(&mut t, &all, "subagent_announce");
    assert_eq!(
        t.subagent_info(CHILD),
        Some(("Test investigator".into(), "running", true))
    );
    assert!(block(&t).contains("\n> Investigates platform-specific test failures."));

    // The task, seen from the parent's side, then from the child's (linked
    // by senderMessageId): one line.
    apply(&mut t, &all, "message_to_child");
    apply(&mut t, &all, "message_to_child_incoming_view");
    apply(&mut t, &all, "message_to_child_linked");
    assert_eq!(
        block(&t).matches("**task:** Please inspect this").count(),
        1,
        "{}",
        block(&t)
    );

    apply(&mut t, &all, "child_thought");
    apply(&mut t, &all, "child_tool_call");
    apply(&mut t, &all, "needs_you");
    assert_eq!(t.subagent_info(CHILD).unwrap().1, "needs you");

    // A chunk carries only content: it waits for its message's participants.
    let shown = block(&t);
    apply(&mut t, &all, "answer_chunk_first");
    apply(&mut t, &all, "answer_chunk_second");
    assert_eq!(
        block(&t),
        shown,
        "not shown before its participants are known"
    );
    apply(&mut t, &all, "answer_upsert_after_chunks");
    apply(&mut t, &all, "answer_chunk_after_upsert");
    assert_eq!(
        block(&t),
        "Subagent · Test investigator · needs you\n\
         > under `Task: investigate the failing tests`\n\
         > Investigates platform-specific test failures.\n\
         > **task:** Please inspect this\n\
         > _thinking:_ Reading the log first.\n\
         > • Read tests/integration.log · completed\n\
         > The fixture path is wrong. Fixed in place."
    );

    // Work states.
    apply(&mut t, &all, "idle_error");
    assert_eq!(t.subagent_info(CHILD).unwrap().1, "failed");
    assert!(
        block(&t).contains("\n> **failed:** Authentication required\n"),
        "{}",
        block(&t)
    );
    apply(&mut t, &all, "idle_end_turn");
    assert_eq!(t.subagent_info(CHILD).unwrap().1, "idle");
    assert!(
        !block(&t).contains("**failed:**"),
        "a state replaces the last wholesale"
    );
    apply(&mut t, &all, "idle_cancelled");
    assert_eq!(t.subagent_info(CHILD).unwrap().1, "cancelled");
    apply(&mut t, &all, "state_unknown");
    assert_eq!(t.subagent_info(CHILD).unwrap().1, "unknown");
    apply(&mut t, &all, "state_custom");
    assert_eq!(t.subagent_info(CHILD).unwrap().1, "unknown");
    // null clears the activity: nothing asserted, not "running".
    apply(&mut t, &all, "state_cleared");
    assert_eq!(t.subagent_info(CHILD).unwrap().1, "not reported");

    // Capabilities: a set replaces the whole set; null clears it.
    apply(&mut t, &all, "capabilities_cleared");
    assert!(!t.subagent_info(CHILD).unwrap().2);
    apply(&mut t, &all, "subagent_announce");
    assert!(t.subagent_info(CHILD).unwrap().2);
    apply(&mut t, &all, "capabilities_without_cancel");
    assert!(!t.subagent_info(CHILD).unwrap().2);
    apply(&mut t, &all, "subagent_announce");

    // Malformed optional fields read as omitted, as the crate reads them.
    let before = block(&t);
    apply(&mut t, &all, "malformed_fields_unchanged");
    assert_eq!(block(&t), before);
    assert_eq!(
        t.subagent_info(CHILD),
        Some(("Test investigator".into(), "running", true))
    );
    let s = step(&all, "cancel_true_is_not_a_capability");
    assert_eq!(s["crateReads"]["capabilities"], serde_json::json!({}));
    assert_eq!(
        parse_subagent_update(&s["update"]).unwrap().cancel,
        Some(false)
    );

    apply(&mut t, &all, "title_cleared");
    assert_eq!(
        t.subagent_info(CHILD).unwrap().0,
        CHILD,
        "the block names the session"
    );
    assert!(!block(&t).contains("Investigates platform-specific"));

    // A message's content: null clears it (its line goes).
    apply(&mut t, &all, "message_content_cleared");
    assert!(!block(&t).contains("Please inspect this"), "{}", block(&t));
    // Only metadata: its content stays.
    apply(&mut t, &all, "message_meta_only");
    assert!(block(&t).contains("> The fixture path is wrong. Fixed in place."));
    // Identity fields on a chunk are not part of it: it waits.
    let before = block(&t);
    apply(&mut t, &all, "chunk_identity_ignored");
    assert_eq!(block(&t), before);
    apply(&mut t, &all, "message_multimodal");
    assert!(block(&t).contains("> **task:** See this"), "{}", block(&t));

    let subagents = t
        .entries()
        .iter()
        .filter(|e| matches!(e, Entry::Subagent(_)))
        .count();
    assert_eq!(subagents, 1, "one block for the one child");
}
