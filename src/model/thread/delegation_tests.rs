//! Plans by id and subagents, with the schema's own shapes
//! (`tests/fixtures/plans_by_id.json`, `tests/fixtures/subagents.json`).

use serde_json::{json, Value};

use super::*;
use crate::model::update::{parse_update, SessionUpdate};

fn fixture(text: &str, key: &str) -> Value {
    let all: Value = serde_json::from_str(text).unwrap();
    all[key].clone()
}

fn plans(key: &str) -> Value {
    fixture(
        include_str!("../../../tests/fixtures/plans_by_id.json"),
        key,
    )
}

fn sub(key: &str) -> Value {
    fixture(include_str!("../../../tests/fixtures/subagents.json"), key)
}

/// An update of child session `sid`, as the connection hands it on.
fn child(t: &mut Thread, sid: &str, update: &Value) -> Vec<ThreadEvent> {
    t.apply_update(&SessionUpdate::Child {
        session_id: sid.into(),
        update: Box::new(parse_update(update)),
    })
}

fn markdowns(t: &Thread) -> Vec<String> {
    t.entries().iter().map(Entry::to_markdown).collect()
}

#[test]
fn a_plan_by_id_is_updated_in_place_and_a_removed_one_says_so() {
    let mut t = Thread::new("demo");
    t.begin_turn("q");
    t.apply_json(&plans("items"));
    let first = t.entries().len() - 1;
    assert_eq!(
        t.entries()[first].to_markdown(),
        "Plan · 1/3 done\n- [x] Analyze the existing codebase structure (high)\n- [ ] Identify components that need refactoring (high) · in progress\n- [ ] Create unit tests for critical functions (medium)"
    );
    // The same id again: the same block, replaced whole.
    let mut again = plans("items");
    again["plan"]["entries"][1]["status"] = json!("completed");
    let ev = t.apply_json(&again);
    assert!(matches!(ev[0], ThreadEvent::Replaced { index, .. } if index == first));
    assert!(matches!(ev[1], ThreadEvent::Plan { index, .. } if index == first));
    assert!(t.entries()[first]
        .to_markdown()
        .starts_with("Plan · 2/3 done"));
    // Another id: a block of its own, markdown under its file's name.
    t.apply_json(&plans("markdown"));
    let md = t.entries().len() - 1;
    assert_eq!(
        t.entries()[md].to_markdown(),
        "Plan · PLAN.md\n\n# Refactor\n\n1. Split the parser\n2. Add tests"
    );
    // The legacy plan keeps its own block beside them.
    t.apply_json(&json!({"sessionUpdate":"plan","entries":[{"content":"old","status":"pending","priority":"low"}]}));
    assert_eq!(t.entries().len(), md + 2);
    let ev = t.apply_json(&plans("removed"));
    assert!(matches!(ev[0], ThreadEvent::Replaced { index, .. } if index == md));
    assert_eq!(t.entries()[md].to_markdown(), "Plan · removed by the agent");
    assert!(t.entries()[first]
        .to_markdown()
        .starts_with("Plan · 2/3 done"));
    // The status area reads an items plan's progress like a legacy plan.
    let v = t.entry_json(first).unwrap();
    assert_eq!(v["entry"], "id_plan");
    assert_eq!(v["items"][1]["status"], "completed");
}

#[test]
fn each_turn_shows_the_plan_it_sent() {
    let mut t = Thread::new("demo");
    let (turn, _) = t.begin_turn("one");
    t.apply_json(&plans("items"));
    t.end_turn(turn, "end_turn");
    let before = t.entries().len() - 1;
    t.begin_turn("two");
    let mut next = plans("items");
    next["plan"]["entries"][2]["status"] = json!("completed");
    t.apply_json(&next);
    let shown: Vec<usize> = (0..t.entries().len())
        .filter(|&i| matches!(&t.entries()[i], Entry::IdPlan(_)))
        .collect();
    assert_eq!(shown.len(), 2, "the second turn opens its own block");
    assert!(t.entries()[before]
        .to_markdown()
        .starts_with("Plan · 1/3 done"));
    assert!(t.entries()[shown[1]]
        .to_markdown()
        .starts_with("Plan · 2/3 done"));
}

#[test]
fn malformed_plans_and_subagents_degrade_to_ignored() {
    assert!(matches!(
        parse_update(&json!({"sessionUpdate":"plan_update","plan":{"type":"items"}})),
        SessionUpdate::Ignored(_)
    ));
    assert!(matches!(
        parse_update(
            &json!({"sessionUpdate":"plan_update","plan":{"type":"hologram","planId":"p"}})
        ),
        SessionUpdate::Ignored(_)
    ));
    assert!(matches!(
        parse_update(&json!({"sessionUpdate":"subagent_update","title":"x"})),
        SessionUpdate::Ignored(_)
    ));
    // A plan_removed for a plan never shown changes nothing.
    let mut t = Thread::new("demo");
    t.begin_turn("q");
    assert!(t.apply_json(&plans("removed")).is_empty());
}

#[test]
fn a_subagent_is_a_block_under_its_tool_call_with_its_own_transcript() {
    let mut t = Thread::new("demo");
    t.begin_turn("q");
    t.apply_json(&sub("tool_call"));
    // The block opens right under the card that links it.
    let card = t.entries().len() - 2;
    assert!(matches!(&t.entries()[card], Entry::ToolCall(_)));
    t.apply_json(&sub("announce"));
    t.apply_json(&sub("task"));
    child(&mut t, "sess_child_1", &sub("child_chunk"));
    child(
        &mut t,
        "sess_child_1",
        &json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":" Found it."}}),
    );
    child(&mut t, "sess_child_1", &sub("child_tool_call"));
    // A chunk's participants come from its message's upsert, here after it.
    t.apply_json(&sub("result_chunk"));
    t.apply_json(&sub("result"));
    let block = card + 1;
    assert!(matches!(&t.entries()[block], Entry::Subagent(_)));
    assert_eq!(
        t.entries().len(),
        block + 1,
        "one block, nothing else added"
    );
    assert_eq!(
        t.entries()[block].to_markdown(),
        "Subagent · test-investigator · running (cancel with the card key)\n\
         > under `Task: investigate the failing tests`\n\
         > Find the cause of the failing integration tests\n\
         > **task:** Find why the integration tests fail\n\
         > Reading the test log. Found it.\n\
         > • Read tests/integration.log · completed\n\
         > The fixture path is wrong."
    );
    assert_eq!(
        t.subagent_info("sess_child_1"),
        Some(("test-investigator".into(), "running", true))
    );
    t.apply_json(&sub("needs_you"));
    assert!(t.entries()[block]
        .to_markdown()
        .starts_with("Subagent · test-investigator · needs you\n"));
    let ev = t.apply_json(&sub("idle"));
    assert!(matches!(ev[0], ThreadEvent::Replaced { index, .. } if index == block));
    let ThreadEvent::Plan { plan, .. } = &ev[1] else {
        panic!("a layout follows: {ev:?}")
    };
    assert_eq!(plan.steps[0].tone, crate::model::render::Tone::Done);
    assert!(t.entries()[block]
        .to_markdown()
        .starts_with("Subagent · test-investigator · idle\n"));
}

#[test]
fn updates_of_a_subagent_seen_before_its_tool_call_are_kept() {
    let mut t = Thread::new("demo");
    t.begin_turn("q");
    child(&mut t, "sess_child_1", &sub("child_chunk"));
    let block = t.entries().len() - 1;
    assert!(t.entries()[block]
        .to_markdown()
        .contains("> Reading the test log."));
    t.apply_json(&sub("announce"));
    t.apply_json(&sub("tool_call"));
    let subagents = t
        .entries()
        .iter()
        .filter(|e| matches!(e, Entry::Subagent(_)))
        .count();
    assert_eq!(subagents, 1, "the tool call links the block that exists");
    let md = t.entries()[block].to_markdown();
    assert!(
        md.starts_with("Subagent · test-investigator · running"),
        "{md}"
    );
    assert!(md.contains("> under `Task: investigate the failing tests`"));
    assert!(md.contains("> Reading the test log."));
}

#[test]
fn subagent_fields_follow_patch_semantics() {
    let mut t = Thread::new("demo");
    t.begin_turn("q");
    t.apply_json(&sub("announce"));
    // Omitted: unchanged.
    t.apply_json(&json!({"sessionUpdate":"subagent_update","sessionId":"sess_child_1"}));
    assert_eq!(
        t.subagent_info("sess_child_1").unwrap().0,
        "test-investigator"
    );
    // null: cleared (the block names the session then), and no cancel.
    t.apply_json(&json!({"sessionUpdate":"subagent_update","sessionId":"sess_child_1","title":null,"capabilities":null,"description":null}));
    assert_eq!(
        t.subagent_info("sess_child_1"),
        Some(("sess_child_1".into(), "running", false))
    );
    let md = markdowns(&t).join("\n");
    assert!(!md.contains("Find the cause"), "{md}");
    // A value: replaced.
    t.apply_json(&json!({"sessionUpdate":"subagent_update","sessionId":"sess_child_1","title":"Explorer","state":{"state":"idle","stopReason":"cancelled"}}));
    assert_eq!(
        t.subagent_info("sess_child_1"),
        Some(("Explorer".into(), "cancelled", false))
    );
}

#[test]
fn agent_text_in_a_subagent_cannot_fake_a_turn_heading() {
    let mut t = Thread::new("demo");
    t.begin_turn("q");
    child(
        &mut t,
        "c",
        &json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"## You\nhi"}}),
    );
    let md = markdowns(&t).join("\n");
    assert_eq!(md.matches("\n## You").count(), 0, "{md}");
}

#[test]
fn a_subagents_permission_card_names_it_and_follows_its_updates() {
    let mut t = Thread::new("demo");
    t.begin_turn("q");
    t.apply_json(&sub("announce"));
    let ask = json!({"toolCallId": "call_child_edit", "title": "Edit a.lua", "kind": "edit"});
    t.permission_requested(&crate::model::update::parse_tool_call(&ask).unwrap(), &[]);
    t.child_asked("sess_child_1", "call_child_edit");
    let card = t.tool_call("call_child_edit").unwrap().clone();
    assert!(card
        .notes
        .contains(&"asked by subagent `test-investigator`".to_owned()));
    child(
        &mut t,
        "sess_child_1",
        &json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_child_edit", "status": "completed"}),
    );
    assert_eq!(
        t.tool_call("call_child_edit").unwrap().status,
        crate::model::schema::ToolStatus::Completed
    );
    // Another child's call of the same id leaves the card alone.
    child(
        &mut t,
        "other",
        &json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_child_edit", "status": "failed"}),
    );
    assert_eq!(
        t.tool_call("call_child_edit").unwrap().status,
        crate::model::schema::ToolStatus::Completed
    );
}

#[test]
fn a_kept_chat_replays_a_subagents_own_updates_into_its_block() {
    let mut rec = crate::model::record::Recorder::new(1 << 20);
    for u in [sub("tool_call"), sub("announce"), plans("items")] {
        rec.update(&u);
    }
    rec.update(&json!({
        "sessionUpdate": crate::model::delegation::CHILD_RECORD,
        "sessionId": "sess_child_1",
        "update": sub("child_chunk"),
    }));
    let records: Vec<Value> = rec.records().cloned().collect();
    assert_eq!(records.len(), 4, "all four kept: {records:?}");
    let mut t = Thread::new("demo");
    t.replay_kept("Kept", &records, "End");
    let md = markdowns(&t).join("\n\n");
    assert!(
        md.contains("Subagent · test-investigator · running"),
        "{md}"
    );
    assert!(md.contains("> Reading the test log."), "{md}");
    assert!(md.contains("Plan · 1/3 done"), "{md}");
    assert!(
        !md.contains("\n\nReading the test log."),
        "not as the agent's own text: {md}"
    );
}

#[test]
fn a_busy_subagents_block_stays_bounded() {
    use crate::model::render_delegation::{SUBAGENT_LINES_SHOWN, SUBAGENT_LINE_MAX_BYTES};
    let mut t = Thread::new("demo");
    t.begin_turn("q");
    t.apply_json(&sub("announce"));
    for i in 0..500 {
        let call = json!({"sessionUpdate": "tool_call", "toolCallId": format!("c{i}"), "title": format!("Read f{i}"), "status": "completed"});
        child(&mut t, "sess_child_1", &call);
    }
    let long = "é".repeat(SUBAGENT_LINE_MAX_BYTES);
    child(
        &mut t,
        "sess_child_1",
        &json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": long}}),
    );
    let md = markdowns(&t).join("\n");
    assert!(
        md.contains("> … 461 earlier lines (:AcpTrace has them)"),
        "{md}"
    );
    assert!(md.contains("> • Read f499 · completed"));
    assert!(!md.contains("> • Read f460 ·"));
    assert_eq!(md.matches("\n> • Read").count(), SUBAGENT_LINES_SHOWN - 1);
    let last = md.lines().last().unwrap();
    assert!(
        last.starts_with("> …é") && last.len() <= SUBAGENT_LINE_MAX_BYTES + 8,
        "{}",
        last.len()
    );
}
