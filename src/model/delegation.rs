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
            items: plan_items(plan),
        },
        "markdown" => PlanBody::Markdown {
            content: str_field(plan, "content").unwrap_or_default(),
            path: str_field(plan, "path"),
        },
        "file" => PlanBody::File {
            uri: str_field(plan, "uri")?,
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
            Some(SubagentState {
                state,
                stop_reason: str_field(s, "stopReason"),
            })
        }),
    };
    let cancel = match update.get("capabilities") {
        None => None,
        Some(Value::Null) => Some(false),
        Some(c) => {
            Some(matches!(c.get("cancel"), Some(v) if v.is_object() || v == &Value::Bool(true)))
        }
    };
    Some(SubagentPatch {
        session_id,
        title: patch_str(update, "title"),
        description: patch_str(update, "description"),
        state,
        cancel,
    })
}

/// `session_message` (`append` false: its content replaces the message's)
/// or `session_message_chunk` (appended).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionMessage {
    pub message_id: String,
    pub sender: Option<String>,
    pub recipient: Option<String>,
    /// None: `session_message` without content (a metadata-only patch).
    pub text: Option<String>,
    pub append: bool,
}

pub fn parse_session_message(update: &Value, append: bool) -> Option<SessionMessage> {
    let content = field(update, "content");
    let text = match content {
        None => None,
        Some(Value::Array(blocks)) => Some(
            blocks
                .iter()
                .map(content_block_text)
                .collect::<Vec<_>>()
                .join(""),
        ),
        Some(block) => Some(content_block_text(block)),
    };
    Some(SessionMessage {
        message_id: str_field(update, "messageId")?,
        sender: str_field(update, "senderSessionId"),
        recipient: str_field(update, "recipientSessionId"),
        text,
        append,
    })
}

/// A plan's `entries` (as the legacy `plan` reads them).
fn plan_items(plan: &Value) -> Vec<PlanItem> {
    field(plan, "entries")
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
