//! What a chat keeps of its conversation to show it again after the chat
//! or Neovim is gone: the `session/update`s that make its transcript
//! (message, thought and user chunks, tool calls and their updates, plans,
//! titles, the agent's notices and compactions) as the agent sent them,
//! and the user's prompts as `user_message_chunk`s. Consecutive chunks of
//! one message are coalesced into one record; the records are bounded in
//! bytes, the oldest dropped first. Replayed through the thread's own update path
//! (`Thread::replay_kept`), they render as they did.
//!
//! Updates about the live session only (commands, modes, config options,
//! usage) are not kept: a reopened chat gets them from its new session.

use std::collections::VecDeque;

use serde_json::{json, Value};

/// The kinds of `session/update` a kept transcript holds.
const KEPT_KINDS: [&str; 16] = [
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "session_info_update",
    "notice",
    "compaction_update",
    "compaction_summary_chunk",
    "plan_update",
    "plan_removed",
    "subagent_update",
    "session_message",
    "session_message_chunk",
    crate::model::delegation::CHILD_RECORD,
];

fn is_chunk(kind: &str) -> bool {
    kind.ends_with("_chunk")
}

/// The text of a chunk whose content is one text block.
fn chunk_text(update: &Value) -> Option<&str> {
    let content = update.get("content")?;
    if content.get("type").and_then(Value::as_str) != Some("text") {
        return None;
    }
    content.get("text").and_then(Value::as_str)
}

/// Its serialised size (what it costs in the file).
fn size_of(v: &Value) -> usize {
    serde_json::to_string(v).map_or(0, |s| s.len()) + 1
}

/// The length of `text` as a JSON string body (serde_json's escapes),
/// counted without writing it: every streamed chunk is measured.
fn escaped_len(text: &str) -> usize {
    // By bytes: every byte of a multi-byte character is written as is, and
    // only ASCII bytes are escaped (a loop the compiler vectorises).
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum()
}

#[derive(Debug)]
pub struct Recorder {
    /// The records with their serialised sizes, oldest first.
    records: VecDeque<(Value, usize)>,
    bytes: usize,
    max_bytes: usize,
    /// Records dropped (or cut) to stay under `max_bytes`.
    dropped: usize,
    /// Changed since the last `take_dirty`.
    dirty: bool,
}

impl Recorder {
    pub fn new(max_bytes: usize) -> Self {
        Self {
            records: VecDeque::new(),
            bytes: 0,
            max_bytes: max_bytes.max(1024),
            dropped: 0,
            dirty: false,
        }
    }

    /// A recorder that continues `records` (a reopened kept chat).
    pub fn with_records(records: Vec<Value>, dropped: usize, max_bytes: usize) -> Self {
        let mut r = Self::new(max_bytes);
        r.dropped = dropped;
        for v in records {
            let size = size_of(&v);
            r.bytes += size;
            r.records.push_back((v, size));
        }
        r.enforce_cap();
        r.dirty = false;
        r
    }

    /// One `session/update` (its `update` object) the chat received.
    pub fn update(&mut self, update: &Value) {
        let Some(kind) = update.get("sessionUpdate").and_then(Value::as_str) else {
            return;
        };
        if !KEPT_KINDS.contains(&kind) {
            return;
        }
        if is_chunk(kind) && self.coalesce(kind, update) {
            return;
        }
        self.push(update.clone());
    }

    /// A plain text chunk of the agent (`agent_message_chunk` or
    /// `agent_thought_chunk`, its content one text block, `messageId` as
    /// sent): what `update` keeps of it, without the update as a `Value`.
    pub fn text_chunk(&mut self, kind: &str, message_id: Option<&str>, text: &str) {
        if !KEPT_KINDS.contains(&kind) {
            return;
        }
        if let Some((last, _)) = self.records.back() {
            let same_id = match (last.get("messageId"), message_id) {
                (None, None) => true,
                (Some(Value::String(a)), Some(b)) => a == b,
                _ => false,
            };
            if same_id
                && last.get("sessionUpdate").and_then(Value::as_str) == Some(kind)
                && last.get("compactionId").is_none()
                && chunk_text(last).is_some()
                && self.append_to_last(text)
            {
                return;
            }
        }
        let mut v = json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
        if let Some(id) = message_id {
            v["messageId"] = Value::from(id);
        }
        self.push(v);
    }

    /// A prompt the user sent, as its transcript shows it.
    pub fn user_prompt(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.push(json!({
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "text", "text": text},
        }));
    }

    /// Appends a text chunk to the last record when that one is a text
    /// chunk of the same kind and message (the thread would join them).
    fn coalesce(&mut self, kind: &str, update: &Value) -> bool {
        let Some(text) = chunk_text(update) else {
            return false;
        };
        let Some((last, _)) = self.records.back() else {
            return false;
        };
        if last.get("sessionUpdate").and_then(Value::as_str) != Some(kind)
            || last.get("messageId") != update.get("messageId")
            || last.get("compactionId") != update.get("compactionId")
            || chunk_text(last).is_none()
        {
            return false;
        }
        self.append_to_last(text)
    }

    /// Appends `text` to the last record's text (a text chunk).
    fn append_to_last(&mut self, text: &str) -> bool {
        let Some((last, size)) = self.records.back_mut() else {
            return false;
        };
        let Some(Value::String(t)) = last.pointer_mut("/content/text") else {
            return false;
        };
        t.push_str(text);
        // JSON escaping of the added text, counted like the text itself
        // (close enough for a cap; the file is measured again when read).
        let added = escaped_len(text);
        *size += added;
        self.bytes += added;
        self.dirty = true;
        self.enforce_cap();
        true
    }

    fn push(&mut self, v: Value) {
        let size = size_of(&v);
        self.bytes += size;
        self.records.push_back((v, size));
        self.dirty = true;
        self.enforce_cap();
    }

    /// Drops the oldest records until the rest fit in `max_bytes`; a last
    /// record alone over the cap keeps the end of its text (a chunk) or
    /// goes too.
    fn enforce_cap(&mut self) {
        while self.bytes > self.max_bytes && self.records.len() > 1 {
            if let Some((_, size)) = self.records.pop_front() {
                self.bytes -= size;
                self.dropped += 1;
            }
        }
        if self.bytes <= self.max_bytes {
            return;
        }
        let Some((last, size)) = self.records.back_mut() else {
            return;
        };
        let budget = self.max_bytes / 2;
        if let Some(Value::String(t)) = last.pointer_mut("/content/text") {
            if t.len() > budget {
                let mut cut = t.len() - budget;
                while !t.is_char_boundary(cut) {
                    cut += 1;
                }
                t.replace_range(..cut, "");
                let new = size_of(last);
                self.bytes = self.bytes - *size + new;
                *size = new;
                self.dropped += 1;
            }
        }
        if self.bytes > self.max_bytes {
            self.records.clear();
            self.bytes = 0;
            self.dropped += 1;
        }
    }

    pub fn records(&self) -> impl Iterator<Item = &Value> {
        self.records.iter().map(|(v, _)| v)
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// The records' size in the file, in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Records dropped so far to stay under the cap.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// Whether anything changed since the last call (and clears it).
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Marks it changed (a save is due, e.g. the review moved on).
    pub fn touch(&mut self) {
        self.dirty = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_chunk_keeps_what_the_update_keeps() {
        let updates = [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "b\n"}}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "t"}}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "u"}, "messageId": "m"}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "v"}, "messageId": "m"}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "w"}, "messageId": "n"}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}, "messageId": null}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "y"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "z"}, "compactionId": "c"}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "!"}}),
        ];
        let (mut general, mut fast) = (Recorder::new(1 << 20), Recorder::new(1 << 20));
        for u in &updates {
            general.update(u);
            let id = u.get("messageId").and_then(Value::as_str);
            let plain = u.get("compactionId").is_none() && u.get("messageId") != Some(&Value::Null);
            if plain {
                let text = u["content"]["text"].as_str().unwrap();
                fast.text_chunk(u["sessionUpdate"].as_str().unwrap(), id, text);
            } else {
                fast.update(u);
            }
        }
        let all = |r: &Recorder| r.records().cloned().collect::<Vec<_>>();
        assert_eq!(all(&fast), all(&general));
        assert_eq!(fast.len(), 8);
        assert_eq!(fast.bytes(), general.bytes());
    }

    fn chunk(kind: &str, text: &str) -> Value {
        json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
    }

    fn texts(r: &Recorder) -> Vec<String> {
        r.records()
            .map(|v| {
                format!(
                    "{}:{}",
                    v["sessionUpdate"].as_str().unwrap(),
                    v.pointer("/content/text")
                        .and_then(Value::as_str)
                        .or(v.get("toolCallId").and_then(Value::as_str))
                        .unwrap_or("")
                )
            })
            .collect()
    }

    #[test]
    fn consecutive_chunks_of_one_message_coalesce() {
        let mut r = Recorder::new(1 << 20);
        r.user_prompt("hi");
        for t in ["Hel", "lo", " there"] {
            r.update(&chunk("agent_message_chunk", t));
        }
        r.update(&chunk("agent_thought_chunk", "hmm"));
        r.update(&chunk("agent_message_chunk", "again"));
        r.update(&json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read"}));
        r.update(&chunk("agent_message_chunk", "after"));
        r.update(&chunk("agent_message_chunk", " the card"));
        assert_eq!(
            texts(&r),
            vec![
                "user_message_chunk:hi",
                "agent_message_chunk:Hello there",
                "agent_thought_chunk:hmm",
                "agent_message_chunk:again",
                "tool_call:t1",
                "agent_message_chunk:after the card",
            ]
        );
        let file: usize = r.records().map(size_of).sum();
        assert_eq!(r.bytes(), file, "the size counts what the file holds");
    }

    #[test]
    fn chunks_of_two_messages_or_of_other_content_stay_apart() {
        let mut r = Recorder::new(1 << 20);
        let with_id = |id: &str, t: &str| {
            json!({"sessionUpdate": "agent_message_chunk", "messageId": id,
                   "content": {"type": "text", "text": t}})
        };
        r.update(&with_id("m1", "a"));
        r.update(&with_id("m1", "b"));
        r.update(&with_id("m2", "c"));
        r.update(&json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "image", "data": "x", "mimeType": "image/png"}}));
        r.update(&chunk("agent_message_chunk", "d"));
        assert_eq!(r.len(), 4);
        assert_eq!(r.records().next().unwrap()["content"]["text"], "ab");
    }

    #[test]
    fn live_session_updates_are_not_kept() {
        let mut r = Recorder::new(1 << 20);
        for kind in [
            "available_commands_update",
            "current_mode_update",
            "config_option_update",
            "usage_update",
            "brand_new",
        ] {
            r.update(&json!({"sessionUpdate": kind}));
        }
        r.update(&json!({"no": "kind"}));
        assert_eq!(r.len(), 0);
        assert!(!r.take_dirty());
        r.update(&json!({"sessionUpdate": "plan", "entries": []}));
        r.update(&json!({"sessionUpdate": "session_info_update", "title": "T"}));
        assert_eq!(r.len(), 2);
        assert!(r.take_dirty());
        assert!(!r.take_dirty());
    }

    #[test]
    fn the_cap_drops_the_oldest_records() {
        let mut r = Recorder::new(2000);
        for i in 0..100 {
            r.user_prompt(&format!("question {i:03} {}", "x".repeat(40)));
        }
        assert!(r.bytes() <= 2000, "{}", r.bytes());
        let kept = texts(&r);
        assert!(kept.last().unwrap().contains("question 099"));
        assert!(!kept.iter().any(|t| t.contains("question 000")));
        assert_eq!(r.dropped() + r.len(), 100);
        // Growing one streamed message drops older records too.
        for _ in 0..50 {
            r.update(&chunk("agent_message_chunk", &"y".repeat(30)));
        }
        assert!(r.bytes() <= 2000, "{}", r.bytes());
        assert_eq!(
            r.records().last().unwrap()["content"]["text"]
                .as_str()
                .unwrap()
                .len(),
            1500
        );
    }

    #[test]
    fn one_record_over_the_cap_keeps_the_end_of_its_text() {
        let mut r = Recorder::new(1024);
        r.update(&chunk(
            "agent_message_chunk",
            &format!("{}END", "é".repeat(3000)),
        ));
        assert_eq!(r.len(), 1);
        let t = r.records().next().unwrap()["content"]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(t.ends_with("END") && t.len() <= 512, "{}", t.len());
        assert!(r.bytes() <= 1024);
        // A huge tool call cannot be cut: it goes.
        r.update(&json!({"sessionUpdate": "tool_call", "toolCallId": "t", "rawInput": {"x": "z".repeat(5000)}}));
        assert_eq!(r.len(), 0);
        assert_eq!(r.bytes(), 0);
    }

    /// The recorded traffic of real agents (tests/traces): the kept records
    /// replayed render the transcript the live updates rendered.
    #[test]
    fn real_agents_traffic_replays_as_it_rendered() {
        use crate::model::thread::Thread;
        for name in [
            "claude-code",
            "codex",
            "gemini-cli",
            "mistral-vibe",
            "cline",
            "notices",
        ] {
            let path = format!("{}/tests/traces/{name}.jsonl", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap();
            let mut live = Thread::new("agent");
            let mut rec = Recorder::new(1 << 20);
            let mut updates = 0;
            for line in text.lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                let msg = &v["msg"];
                match msg["method"].as_str() {
                    Some("session/prompt") => {
                        let said: String = msg["params"]["prompt"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|b| b["text"].as_str())
                            .collect();
                        live.begin_turn(&said);
                        rec.user_prompt(&said);
                    }
                    Some("session/update") => {
                        let u = &msg["params"]["update"];
                        // As the chat does: an echo of the prompt is not kept.
                        if !live.is_prompt_echo(u) {
                            rec.update(u);
                        }
                        live.apply_json(u);
                        updates += 1;
                    }
                    _ => {}
                }
            }
            assert!(updates > 0, "{name}");
            let records: Vec<Value> = rec.records().cloned().collect();
            let mut kept = Thread::new("agent");
            kept.replay_kept("label", &records, "end");
            let shown = kept.to_markdown();
            let want = live.to_markdown();
            assert_eq!(
                shown,
                format!("ℹ label\n\n{want}\n\nℹ end"),
                "{name}: the kept transcript renders as the live one"
            );
        }
    }

    #[test]
    fn a_reopened_chat_continues_its_records() {
        let mut r = Recorder::with_records(
            vec![
                chunk("user_message_chunk", "old"),
                chunk("agent_message_chunk", "A"),
            ],
            3,
            1 << 20,
        );
        assert!(!r.take_dirty());
        r.update(&chunk("agent_message_chunk", "B"));
        assert_eq!(
            texts(&r),
            vec!["user_message_chunk:old", "agent_message_chunk:AB"]
        );
        assert_eq!(r.dropped(), 3);
        assert!(r.take_dirty());
    }

    #[test]
    fn escaped_len_counts_what_serde_json_writes() {
        for t in [
            "plain",
            "q\"b\\n\nr\rt\tbf\u{8}\u{c}",
            "ctl\u{1}\u{1f}",
            "é😀/",
        ] {
            assert_eq!(
                escaped_len(t),
                serde_json::to_string(t).unwrap().len() - 2,
                "{t:?}"
            );
        }
    }
}
