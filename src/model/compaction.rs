//! The agent's notices (`notice`) and context compactions
//! (`compaction_update`, `compaction_summary_chunk`), stable in schema
//! 1.15.1 and sent only to a client that advertises `session.notices` /
//! `session.compaction`: what they are and how they are read from an
//! update (leniently). How their entries render: `render::notices`.

use serde_json::Value;

use super::blocks::{content_block_text, field, str_field};
use super::patch::Patch;

/// A `notice`: information for the user that is not part of the
/// conversation (the agent must not rely on it being seen).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgentNotice {
    /// `info`, `warning`, `error`, or another value as sent.
    pub severity: String,
    pub title: String,
    pub description: Option<String>,
}

/// A context compaction, placed where its first update came; later updates
/// with its id patch it in place.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Compaction {
    pub id: String,
    /// `in_progress`, `completed`, `failed`, `cancelled`, or another value
    /// as sent.
    pub status: String,
    /// The retained summary, as the agent streamed or replaced it.
    pub summary: String,
    pub error: Option<String>,
}

impl Compaction {
    pub fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            status: "in_progress".into(),
            summary: String::new(),
            error: None,
        }
    }
}

/// `compaction_update`, typed: `status` is required by the schema (a
/// missing or malformed one leaves the status as it is).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPatch {
    pub id: String,
    pub status: Option<String>,
    /// `summary: []` clears it too.
    pub summary: Patch<String>,
    pub error: Patch<String>,
}

/// A `notice` update; None without a text title.
pub fn parse_notice(update: &Value) -> Option<AgentNotice> {
    let title = str_field(update, "title").filter(|t| !t.trim().is_empty())?;
    Some(AgentNotice {
        severity: str_field(update, "severity").unwrap_or_else(|| "info".into()),
        title,
        description: str_field(update, "description").filter(|d| !d.is_empty()),
    })
}

/// A `compaction_update`; None without a text `compactionId`.
pub fn parse_compaction(update: &Value) -> Option<CompactionPatch> {
    Some(CompactionPatch {
        id: str_field(update, "compactionId")?,
        status: str_field(update, "status"),
        summary: Patch::read(update, "summary", |v| {
            v.as_array()
                .map(|blocks| blocks.iter().map(content_block_text).collect())
        }),
        error: Patch::text(update, "error"),
    })
}

/// A `compaction_summary_chunk`: its compaction's id and the text it appends.
pub fn parse_compaction_chunk(update: &Value) -> Option<(String, String)> {
    let id = str_field(update, "compactionId")?;
    let text = field(update, "content")
        .map(content_block_text)
        .unwrap_or_default();
    Some((id, text))
}
