//! The hot path of a stream: an agent's message or thought chunk of plain
//! text, the one update a long answer sends thousands of times. Read in one
//! typed pass that borrows the line (no `serde_json::Value` tree, no map of
//! keys per message), then applied and recorded as the general path would.
//!
//! Only the exact plain shape is taken: `jsonrpc`, `method`, `params` at the
//! top, `sessionId` and `update` in the params, `sessionUpdate`, `content`
//! (`type: "text"`, `text`) and an optional non-null string `messageId` in
//! the update. Anything else (an id, `_meta`, annotations, a null, another
//! kind, a duplicate key) fails this read and takes the general path, so
//! the two never disagree.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};

use crate::model::entries::EntryKind;
use crate::model::update::SessionUpdate;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message<'a> {
    #[serde(default, rename = "jsonrpc")]
    _jsonrpc: Option<&'a str>,
    #[serde(borrow)]
    method: &'a str,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Params<'a> {
    #[serde(borrow)]
    session_id: Cow<'a, str>,
    #[serde(borrow)]
    update: Update<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Update<'a> {
    #[serde(borrow)]
    session_update: &'a str,
    #[serde(borrow)]
    content: Content<'a>,
    #[serde(default, borrow, deserialize_with = "some_str")]
    message_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Content<'a> {
    #[serde(borrow, rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

/// A present `messageId` must be a string: a null takes the general path
/// (which keeps it as sent).
fn some_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    #[derive(Deserialize)]
    struct S<'a>(#[serde(borrow)] Cow<'a, str>);
    S::deserialize(d).map(|s| Some(s.0))
}

/// A plain text chunk of the agent's message or thought.
#[derive(Debug, PartialEq)]
pub struct TextChunk<'a> {
    pub session_id: Cow<'a, str>,
    /// `agent_message_chunk` or `agent_thought_chunk`.
    pub kind: &'a str,
    pub message_id: Option<Cow<'a, str>>,
    pub text: Cow<'a, str>,
}

impl TextChunk<'_> {
    /// `next` continues this chunk's message: same session, same kind, the
    /// same message id (or none on both), so their texts join as one.
    pub fn continued_by(&self, next: &TextChunk<'_>) -> bool {
        self.session_id == next.session_id
            && self.kind == next.kind
            && self.message_id == next.message_id
    }

    /// The update as `model::update::parse_update` reads it.
    pub fn into_update(self) -> SessionUpdate {
        SessionUpdate::Chunk {
            kind: if self.kind == "agent_thought_chunk" {
                EntryKind::Thought
            } else {
                EntryKind::Agent
            },
            message_id: self.message_id.map(Cow::into_owned),
            text: self.text.into_owned(),
        }
    }
}

/// The line as a plain text chunk of the agent, else None (the general
/// path then reads it).
/// Takes text (read once as UTF-8 by the reader, not validated again).
pub fn parse(line: &str) -> Option<TextChunk<'_>> {
    let m: Message = serde_json::from_str(line).ok()?;
    let kind = m.params.update.session_update;
    if m.method != "session/update"
        || !matches!(kind, "agent_message_chunk" | "agent_thought_chunk")
        || m.params.update.content.kind != "text"
    {
        return None;
    }
    Some(TextChunk {
        session_id: m.params.session_id,
        kind,
        message_id: m.params.update.message_id,
        text: m.params.update.content.text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::update::parse_update;
    use crate::protocol::inbound::session_update_params;

    /// Every line the fast read takes reads the same through the general
    /// path; every line it refuses is one the general path must see.
    fn same_as_general(line: &str) -> bool {
        let Some(fast) = parse(line) else {
            return false;
        };
        let params = session_update_params(line.as_bytes()).expect("a session/update");
        assert_eq!(params["sessionId"].as_str(), Some(fast.session_id.as_ref()));
        assert_eq!(
            parse_update(&params["update"]),
            fast.into_update(),
            "{line}"
        );
        true
    }

    #[test]
    fn plain_text_chunks_read_as_the_general_path_reads_them() {
        for line in [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello\n\"world\" \u00e9"}}}}"#,
            r#"{"params":{"update":{"messageId":"m-1","content":{"text":"x","type":"text"},"sessionUpdate":"agent_thought_chunk"},"sessionId":"s\u0031"},"method":"session/update","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}}}"#,
        ] {
            assert!(same_as_general(line), "{line}");
        }
    }

    #[test]
    fn anything_else_takes_the_general_path() {
        for line in [
            // A request (it has an id), another method, another kind.
            r#"{"jsonrpc":"2.0","id":3,"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/other","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"x"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"compaction_summary_chunk","content":{"type":"text","text":"x"}}}}"#,
            // Not text, extra fields, nulls, duplicates.
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA==","mimeType":"image/png"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","annotations":null}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"a":1}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"messageId":null}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","text":"y"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}},"_meta":{}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            "not json",
        ] {
            assert!(parse(line).is_none(), "{line}");
        }
    }
}
