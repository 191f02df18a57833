//! Markdown rendering of thread entries. The view shows exactly these lines,
//! so an incremental append must produce the same text as a full re-render
//! (`append_fragment` is the incremental half of `entry_markdown`).

use serde_json::Value;

use crate::thread::{field, Entry, EntryKind, NoticeLevel, PlanItem, ToolCall};

const THOUGHT_HEADER: &str = "> **Thinking**";

pub fn entry_markdown(entry: &Entry) -> String {
    match entry {
        Entry::User { text } => format!("## You\n\n{text}"),
        Entry::Heading { text } => format!("## {text}"),
        Entry::Agent { text } => text.clone(),
        Entry::Thought { text } => format!("{THOUGHT_HEADER}\n> {}", text.replace('\n', "\n> ")),
        Entry::ToolCall(tc) => tool_call_markdown(tc),
        Entry::Plan(items) => plan_markdown(items),
        Entry::Notice { level, text } => {
            let icon = match level {
                NoticeLevel::Info => "ℹ",
                NoticeLevel::Warn => "⚠",
                NoticeLevel::Error => "✖",
            };
            format!("{icon} {text}")
        }
    }
}

/// What appending `text` to an entry of `kind` adds to its rendering.
pub fn append_fragment(kind: EntryKind, text: &str) -> String {
    match kind {
        EntryKind::Thought => text.replace('\n', "\n> "),
        _ => text.to_owned(),
    }
}

fn tool_call_markdown(tc: &ToolCall) -> String {
    let title = if tc.title.is_empty() { tc.id.as_str() } else { tc.title.as_str() };
    let mut out = format!("**[{}]** {} · _{}_", tc.kind, title, tc.status.replace('_', " "));
    for (path, line) in &tc.locations {
        match line {
            Some(l) => out.push_str(&format!("\n  `{path}:{l}`")),
            None => out.push_str(&format!("\n  `{path}`")),
        }
    }
    if let Some(input) = &tc.raw_input {
        out.push_str(&format!("\n  input: `{input}`"));
    }
    for c in &tc.content {
        for line in c.split('\n') {
            out.push_str("\n  ");
            out.push_str(line);
        }
    }
    out
}

fn plan_markdown(items: &[PlanItem]) -> String {
    let mut out = String::from("**Plan**");
    for item in items {
        let mark = match item.status.as_str() {
            "completed" => "[x]",
            "in_progress" => "[~]",
            _ => "[ ]",
        };
        out.push_str(&format!("\n- {mark} {} ({})", item.content, item.priority));
    }
    out
}

/// The text a content block contributes to a message.
pub fn content_block_text(block: &Value) -> String {
    let s = |k: &str| field(block, k).and_then(Value::as_str).unwrap_or("").to_owned();
    match field(block, "type").and_then(Value::as_str).unwrap_or("") {
        "text" => s("text"),
        "image" => format!("[image {}]", s("mimeType")),
        "audio" => format!("[audio {}]", s("mimeType")),
        "resource_link" => format!("[{}]({})", s("name"), s("uri")),
        "resource" => {
            let uri = field(block, "resource")
                .and_then(|r| field(r, "uri"))
                .and_then(Value::as_str)
                .unwrap_or("");
            format!("[resource]({uri})")
        }
        _ => String::new(),
    }
}

/// One tool-call content item as text.
pub fn tool_content_text(item: &Value) -> String {
    let s = |k: &str| field(item, k).and_then(Value::as_str).unwrap_or("").to_owned();
    match field(item, "type").and_then(Value::as_str).unwrap_or("") {
        "content" => field(item, "content").map(content_block_text).unwrap_or_default(),
        "diff" => format!("diff: {}", s("path")),
        "terminal" => format!("terminal: {}", s("terminalId")),
        _ => String::new(),
    }
}

/// A one-line summary of a tool's raw input: the command or path when there
/// is one, else compact JSON, cut to 120 characters.
pub fn one_line_summary(raw: &Value) -> String {
    let pick = ["command", "cmd", "file_path", "path", "pattern", "query", "url"]
        .iter()
        .find_map(|k| field(raw, k))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
            other => other.to_string(),
        });
    let text = pick.unwrap_or_else(|| raw.to_string()).replace('\n', " ");
    if text.chars().count() > 120 {
        let cut: String = text.chars().take(119).collect();
        format!("{cut}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summary_prefers_command_and_cuts_long_text() {
        assert_eq!(one_line_summary(&json!({"command": "ls -la\nx", "other": 1})), "ls -la x");
        let long = "a".repeat(300);
        assert_eq!(one_line_summary(&json!({ "query": long })).chars().count(), 120);
        assert_eq!(one_line_summary(&json!({"n": 1})), r#"{"n":1}"#);
    }

    #[test]
    fn content_blocks_render_as_text_or_links() {
        assert_eq!(content_block_text(&json!({"type":"text","text":"hi"})), "hi");
        assert_eq!(
            content_block_text(&json!({"type":"resource_link","name":"a.rs","uri":"file:///a.rs"})),
            "[a.rs](file:///a.rs)"
        );
        assert_eq!(content_block_text(&json!({"type":"unknown"})), "");
    }
}
