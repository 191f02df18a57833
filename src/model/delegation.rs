//! The newest schema's shapes no SDK release carries yet, read here
//! leniently: plans by id (`plan_update` with items or markdown, and
//! `plan_removed`) and subagents (`subagent_update`, `session_message`,
//! `session_message_chunk`, a child session's own updates). Their entries
//! are in `entries`, their rendering in `render_delegation`.
//!
//! Patch semantics as the schema says: an omitted field is unchanged,
//! `null` clears it, a value replaces it.

use serde_json::Value;

use super::blocks::{content_block_text, field, str_field};
pub use super::entries::PlanBody;
use super::entries::{PlanItem, Subagent, SubagentState};
use super::schema::{PlanPriority, PlanStatus};

/// `plan_update`: None without a plan id or a known plan type.
pub fn parse_plan_update(update: &Value) -> Option<(String, PlanBody)> {
    let plan = field(update, "plan")?;
    let id = str_field(plan, "planId").or_else(|| str_field(plan, "id"))?;
    let body = match str_field(plan, "type")?.as_str() {
        "items" => PlanBody::Items {
            items: plan_entries(plan),
        },
        "markdown" => PlanBody::Markdown {
            content: str_field(plan, "content").unwrap_or_default(),
            path: str_field(plan, "path"),
        },
        _ => return None,
    };
    Some((id, body))
}

/// `plan_removed`'s plan id.
pub fn parse_plan_removed(update: &Value) -> Option<String> {
    str_field(update, "planId").or_else(|| str_field(update, "id"))
}

/// How a kept chat records an update of a subagent's own session:
/// `{"sessionUpdate": CHILD_RECORD, "sessionId": <child>, "update": {...}}`
/// (the client's own kind; no agent sends it).
pub const CHILD_RECORD: &str = "_acp.nvim/child";

/// A patched field: `None` omitted (unchanged), `Some(None)` cleared.
pub type Patch<T> = Option<Option<T>>;

fn patch_str(v: &Value, key: &str) -> Patch<String> {
    match v.get(key) {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(s)) => Some(Some(s.clone())),
        // Malformed: the field reads as absent.
        Some(_) => None,
    }
}

/// `subagent_update`: the child session and the fields it patches.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubagentPatch {
    pub session_id: String,
    pub title: Patch<String>,
    pub description: Patch<String>,
    pub state: Patch<SubagentState>,
    /// `capabilities.cancel` present: the client may cancel the child's
    /// work (`session/cancel` with its id). `Some(false)`: cleared.
    pub cancel: Option<bool>,
}

pub fn parse_subagent_update(update: &Value) -> Option<SubagentPatch> {
    let session_id = str_field(update, "sessionId")?;
    let state = match update.get("state") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(s) => str_field(s, "state").map(|state| {
            let stop_reason = str_field(s, "stopReason");
            // `idle` with `stopReason: error` carries a JSON-RPC error.
            let error = match stop_reason.as_deref() {
                Some("error") => Some(
                    field(s, "error")
                        .and_then(|e| str_field(e, "message"))
                        .unwrap_or_default(),
                ),
                _ => None,
            };
            Some(SubagentState {
                state,
                stop_reason,
                error,
            })
        }),
    };
    // A capability set replaces the whole set; `cancel` is offered by an
    // object (`{}`), anything else is not. A malformed set: unchanged.
    let cancel = match update.get("capabilities") {
        None => None,
        Some(Value::Null) => Some(false),
        Some(Value::Object(c)) => Some(c.get("cancel").is_some_and(Value::is_object)),
        Some(_) => None,
    };
    Some(SubagentPatch {
        session_id,
        title: patch_str(update, "title"),
        description: patch_str(update, "description"),
        state,
        cancel,
    })
}

/// `session_message` (an upsert: `append` false) or `session_message_chunk`
/// (appended). A chunk carries only content: identity fields on it are
/// not part of it (its participants come from the message's upserts).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionMessage {
    pub message_id: String,
    pub sender: Patch<String>,
    pub recipient: Patch<String>,
    /// On an incoming view: the outgoing view's id in the sender's transcript.
    pub sender_message_id: Patch<String>,
    /// On an outgoing view: the incoming view's id in the recipient's.
    pub recipient_message_id: Patch<String>,
    /// An upsert's content: None omitted (or malformed: unchanged),
    /// `Some("")` cleared (`null` or `[]`), else the text replacing it. A
    /// chunk's: the text appended.
    pub text: Option<String>,
    pub append: bool,
}

pub fn parse_session_message(update: &Value, append: bool) -> Option<SessionMessage> {
    let message_id = str_field(update, "messageId")?;
    let joined = |blocks: &Vec<Value>| {
        blocks
            .iter()
            .filter(|b| b.is_object())
            .map(content_block_text)
            .collect::<Vec<_>>()
            .join("")
    };
    if append {
        let text = match field(update, "content")? {
            Value::Array(blocks) => joined(blocks),
            block if block.is_object() => content_block_text(block),
            _ => return None,
        };
        return Some(SessionMessage {
            message_id,
            sender: None,
            recipient: None,
            sender_message_id: None,
            recipient_message_id: None,
            text: Some(text),
            append,
        });
    }
    let text = match update.get("content") {
        None => None,
        Some(Value::Null) => Some(String::new()),
        Some(Value::Array(blocks)) => Some(joined(blocks)),
        // Malformed: the field reads as omitted.
        Some(_) => None,
    };
    Some(SessionMessage {
        message_id,
        sender: patch_str(update, "senderSessionId"),
        recipient: patch_str(update, "recipientSessionId"),
        sender_message_id: patch_str(update, "senderMessageId"),
        recipient_message_id: patch_str(update, "recipientMessageId"),
        text,
        append,
    })
}

/// A plan's `entries`: the legacy `plan` update and a `plan_update`'s items plan.
pub(super) fn plan_entries(update: &Value) -> Vec<PlanItem> {
    field(update, "entries")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| PlanItem {
                    content: str_field(e, "content").unwrap_or_default(),
                    status: str_field(e, "status")
                        .map_or(PlanStatus::Pending, |s| PlanStatus::parse(&s)),
                    priority: str_field(e, "priority")
                        .map_or(PlanPriority::Medium, |s| PlanPriority::parse(&s)),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `patch` applied to subagent `s`.
pub fn apply_patch(s: &mut Subagent, patch: &SubagentPatch) {
    if let Some(t) = &patch.title {
        s.title = t.clone();
    }
    if let Some(d) = &patch.description {
        s.description = d.clone();
    }
    if let Some(st) = &patch.state {
        s.state = st.clone();
    }
    if let Some(c) = patch.cancel {
        s.can_cancel = c;
    }
}
