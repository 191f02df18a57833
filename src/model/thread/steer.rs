//! A message the user steered into the running turn (`_session/steering`):
//! it shows where it went in, as the user's, with a line saying how the
//! agent took it; what the agent says next gets its own heading.

use super::Thread;
use crate::model::entries::{Entry, NoticeLevel};
use crate::model::events::ThreadEvent;

impl Thread {
    /// The agent took `text` (`note` says how: into the running turn, or
    /// as a new turn of its own). An echo of it is not shown again.
    pub fn steered(&mut self, text: &str, note: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.echoes.expect(text);
        self.push(
            Entry::User {
                text: text.to_owned(),
            },
            &mut out,
        );
        self.push(
            Entry::Notice {
                level: NoticeLevel::Info,
                text: note.to_owned(),
            },
            &mut out,
        );
        // The agent's answer to it starts under a heading of its own.
        self.reply_started = false;
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn chunk(kind: &str, text: &str) -> serde_json::Value {
        json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
    }

    #[test]
    fn a_steered_message_shows_where_it_went_in_and_the_answer_after_it_gets_a_heading() {
        let mut t = Thread::new("demo");
        t.begin_turn("go");
        t.apply_json(&chunk("agent_message_chunk", "working"));
        t.steered("also the docs", "↪ steered into the running turn");
        // The agent echoes it (some do), then answers.
        t.apply_json(&chunk("user_message_chunk", "also the docs"));
        t.apply_json(&chunk("agent_message_chunk", "done"));
        let kinds: Vec<String> = t
            .entries()
            .iter()
            .map(|e| format!("{:?}", e.kind()))
            .collect();
        assert_eq!(
            kinds,
            ["User", "Heading", "Agent", "User", "Notice", "Heading", "Agent"],
            "{:?}",
            t.entries()
        );
        assert!(matches!(&t.entries()[3], Entry::User { text } if text == "also the docs"));
        assert!(
            matches!(&t.entries()[6], Entry::Agent { text } if text == "done"),
            "not merged into the answer before it"
        );
    }
}
