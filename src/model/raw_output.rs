//! A tool call's `rawOutput` read into the text a card shows. Real agents
//! put output there in several shapes:
//! - a string;
//! - a list of content blocks, or of `{type: "content", content}`
//!   (claude-code-acp);
//! - an object with the text under `aggregated_output` /
//!   `formatted_output` / `output` / `stdout` (+ `stderr`) / `result` /
//!   `content` and the outcome as `exit_code` / `exitCode` / `success`
//!   (codex-acp, Mistral Vibe, Cline's `{query, result, success}`);
//! - a list of such objects (Cline, one per file or command).
//!
//! A shape none of these reads is shown as pretty JSON, never hidden. The
//! text is bounded (`RAW_OUTPUT_MAX_BYTES`): output keeps its end, JSON its
//! start.

use serde_json::Value;

use crate::model::blocks::{content_block_text, field, str_field};
use crate::model::entries::RawOutput;

/// The most bytes of `rawOutput` a card keeps.
pub const RAW_OUTPUT_MAX_BYTES: usize = 64 * 1024;

/// Keys whose value is the output text, most specific first.
const TEXT_KEYS: [&str; 6] = [
    "aggregated_output",
    "formatted_output",
    "output",
    "stdout",
    "result",
    "content",
];

/// What one item (or the whole object) says.
#[derive(Default)]
struct Piece {
    text: String,
    exit_code: Option<i64>,
    success: Option<bool>,
}

/// Text of a value that is output: a string, a content block, or a list of
/// them. None for anything else.
fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let parts: Option<Vec<String>> = items.iter().map(value_text).collect();
            Some(
                parts?
                    .into_iter()
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        }
        Value::Object(_) => block_text(v),
        _ => None,
    }
}

/// A content block's text, or a `{type: "content", content}` wrapper's.
fn block_text(v: &Value) -> Option<String> {
    match str_field(v, "type")?.as_str() {
        "content" => field(v, "content").and_then(value_text),
        _ => Some(content_block_text(v)).filter(|t| !t.is_empty()),
    }
}

/// One item read, or None when its shape is not one of the known ones.
fn piece(v: &Value) -> Option<Piece> {
    if let Value::String(s) = v {
        return Some(Piece {
            text: s.clone(),
            ..Piece::default()
        });
    }
    if !v.is_object() {
        return None;
    }
    if let Some(text) = block_text(v) {
        return Some(Piece {
            text,
            ..Piece::default()
        });
    }
    // The first key with text (Mistral Vibe sends `output: ""` beside
    // its `stdout`), else the first present.
    let texts: Vec<String> = TEXT_KEYS
        .iter()
        .filter_map(|k| field(v, k).and_then(value_text))
        .collect();
    let mut text = texts
        .iter()
        .find(|t| !t.is_empty())
        .or(texts.first())
        .cloned();
    if let (Some(out), Some(err)) = (&mut text, str_field(v, "stderr")) {
        if field(v, "stdout").is_some() {
            out.push_str(&err);
        }
    }
    let exit_code = ["exit_code", "exitCode"]
        .iter()
        .find_map(|k| field(v, k).and_then(Value::as_i64));
    let success = field(v, "success").and_then(Value::as_bool);
    if text.is_none() && success == Some(false) {
        text = ["error", "stderr"].iter().find_map(|k| str_field(v, k));
    }
    (text.is_some() || exit_code.is_some() || success.is_some()).then(|| Piece {
        text: text.unwrap_or_default(),
        exit_code,
        success,
    })
}

/// `rawOutput` as a card shows it; None for `null` and empty values.
pub fn raw_output(v: &Value) -> Option<RawOutput> {
    let pieces: Vec<Option<Piece>> = match v {
        Value::Null => return None,
        Value::Array(items) if items.is_empty() => return None,
        Value::Object(m) if m.is_empty() => return None,
        Value::Array(items) => items.iter().map(piece).collect(),
        other => vec![piece(other)],
    };
    if pieces.iter().all(Option::is_none) {
        return Some(as_json(v));
    }
    let mut out = RawOutput::default();
    let mut texts = Vec::new();
    for (p, item) in pieces.into_iter().zip(items_of(v)) {
        let p = p.unwrap_or_else(|| Piece {
            text: pretty(item),
            ..Piece::default()
        });
        if !p.text.is_empty() {
            texts.push(p.text);
        }
        // A failing item's code wins over later successes.
        if out.exit_code.is_none_or(|c| c == 0) {
            out.exit_code = p.exit_code.or(out.exit_code);
        }
        out.failed |= p.success == Some(false);
    }
    out.failed &= out.exit_code.is_none();
    out.text = keep_end(texts.join("\n"));
    Some(out)
}

/// The items of a list, or the value itself.
fn items_of(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// A shape not read: the value as pretty JSON, its start kept.
fn as_json(v: &Value) -> RawOutput {
    let mut text = pretty(v);
    if text.len() > RAW_OUTPUT_MAX_BYTES {
        let mut at = RAW_OUTPUT_MAX_BYTES;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
        text.push_str("\n…");
    }
    RawOutput {
        text,
        json: true,
        ..RawOutput::default()
    }
}

/// Output over the bound keeps its end (as a terminal's tail does).
fn keep_end(text: String) -> String {
    if text.len() <= RAW_OUTPUT_MAX_BYTES {
        return text;
    }
    let mut at = text.len() - RAW_OUTPUT_MAX_BYTES;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    format!("…{}", &text[at..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: Value) -> String {
        raw_output(&v).unwrap().text
    }

    #[test]
    fn clines_query_result_success_lists_and_objects_give_their_results() {
        // As recorded from Cline 3.0.65 (read_files, apply_patch, run_commands).
        let read = json!([{"query": "/p/hello.txt", "result": "1 | Hello, world!\n2 | bye", "success": true}]);
        let out = raw_output(&read).unwrap();
        assert_eq!(out.text, "1 | Hello, world!\n2 | bye");
        assert!(!out.failed && !out.json && out.exit_code.is_none());
        let patch = json!({"query": "apply_patch", "result": "Successfully applied patch to the following files:\nhello.txt", "success": true});
        assert_eq!(
            text(patch),
            "Successfully applied patch to the following files:\nhello.txt"
        );
        let two = json!([{"query": "a", "result": "A", "success": true},
                         {"query": "b", "error": "no such file", "success": false}]);
        let out = raw_output(&two).unwrap();
        assert_eq!(out.text, "A\nno such file");
        assert!(out.failed);
    }

    #[test]
    fn output_keys_exit_codes_and_content_lists_are_read() {
        let codex = json!({"aggregated_output": "a\nb\n", "exit_code": 2, "formatted_output": "x"});
        assert_eq!(
            raw_output(&codex),
            Some(RawOutput {
                text: "a\nb\n".into(),
                exit_code: Some(2),
                ..RawOutput::default()
            })
        );
        let vibe = json!({"stdout": "out\n", "stderr": "err\n", "output": "", "truncated": false});
        assert_eq!(text(vibe), "out\nerr\n");
        let blocks = json!({"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}], "success": true});
        assert_eq!(text(blocks), "one\ntwo");
        let list = json!([{"output": "x", "exit_code": 0}, {"output": "y", "exitCode": 3}, {"output": "z", "exit_code": 0}]);
        let out = raw_output(&list).unwrap();
        assert_eq!((out.text.as_str(), out.exit_code), ("x\ny\nz", Some(3)));
        let failed = raw_output(&json!({"success": false})).unwrap();
        assert!(failed.failed && failed.text.is_empty());
        assert_eq!(raw_output(&json!(null)), None);
        assert_eq!(raw_output(&json!([])), None);
        assert_eq!(raw_output(&json!({})), None);
    }

    #[test]
    fn unknown_shapes_show_as_pretty_json_bounded() {
        let out = raw_output(&json!({"files": 3})).unwrap();
        assert!(out.json);
        assert_eq!(out.text, "{\n  \"files\": 3\n}");
        assert_eq!(text(json!(7)), "7");
        // A list mixing a known item and an unknown one shows both.
        let mixed = raw_output(&json!([{"result": "ok"}, {"n": 1}])).unwrap();
        assert_eq!(mixed.text, "ok\n{\n  \"n\": 1\n}");
        assert!(!mixed.json);
        let big = raw_output(&json!({"blob": "é".repeat(RAW_OUTPUT_MAX_BYTES)})).unwrap();
        assert!(
            big.text.len() <= RAW_OUTPUT_MAX_BYTES + 4,
            "{}",
            big.text.len()
        );
        assert!(big.text.starts_with("{\n  \"blob\"") && big.text.ends_with('…'));
        let long = raw_output(&json!({"output": "x".repeat(3 * RAW_OUTPUT_MAX_BYTES)})).unwrap();
        assert!(long.text.starts_with('…') && long.text.len() <= RAW_OUTPUT_MAX_BYTES + 3);
    }
}
