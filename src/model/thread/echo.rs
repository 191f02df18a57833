//! Prompts the agent may echo back. Some agents (Mistral Vibe) send the
//! user's prompt as `user_message_chunk`s during the turn it starts; the
//! chat already shows that prompt, so such chunks are not shown again. A
//! user chunk is an echo when it continues, in order, the text of a prompt
//! sent in the running turn (whitespace aside); anything else (a different
//! text, a replayed history) is a message the user sees.

/// One prompt sent in the running turn, and how much of it came back.
#[derive(Debug)]
struct Echo {
    /// The prompt's text without whitespace.
    want: String,
    /// Bytes of `want` the agent has echoed so far.
    matched: usize,
    /// The echoed chunks as sent (shown after all if the echo turns out
    /// to be something else).
    held: String,
}

#[derive(Debug, Default)]
pub(super) struct PromptEchoes {
    pending: Vec<Echo>,
}

/// `text` without whitespace.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

impl PromptEchoes {
    /// Forget every prompt (a new turn with nothing running, a replay).
    pub(super) fn clear(&mut self) {
        self.pending.clear();
    }

    /// A prompt was sent: its echo is expected.
    pub(super) fn expect(&mut self, prompt: &str) {
        let want = squeeze(prompt);
        if !want.is_empty() {
            self.pending.push(Echo {
                want,
                matched: 0,
                held: String::new(),
            });
        }
    }

    /// Which pending prompt `text` continues, if any: the one partly
    /// echoed if there is one, else the first that starts with it.
    fn continued(&self, norm: &str) -> (Option<usize>, bool) {
        if let Some(i) = self.pending.iter().position(|e| e.matched > 0) {
            let e = &self.pending[i];
            return (Some(i), e.want[e.matched..].starts_with(norm));
        }
        if norm.is_empty() {
            return (None, false);
        }
        let i = self.pending.iter().position(|e| e.want.starts_with(norm));
        (i, i.is_some())
    }

    /// Whether `take(text)` would swallow `text` (no state change).
    pub(super) fn is_echo(&self, text: &str) -> bool {
        self.continued(&squeeze(text)).1
    }

    /// A user chunk arrived: None when it is (part of) an echo, else the
    /// text to show (with what was held of an echo it turned out not to
    /// continue).
    pub(super) fn take(&mut self, text: &str) -> Option<String> {
        let norm = squeeze(text);
        match self.continued(&norm) {
            (Some(i), true) => {
                let e = &mut self.pending[i];
                e.matched += norm.len();
                e.held.push_str(text);
                if e.matched == e.want.len() {
                    self.pending.remove(i);
                }
                None
            }
            (Some(i), false) => {
                let mut shown = self.pending.remove(i).held;
                shown.push_str(text);
                Some(shown)
            }
            (None, _) => Some(text.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::entries::Entry;
    use crate::model::thread::Thread;

    #[test]
    fn a_prompt_echoed_whole_or_in_pieces_is_swallowed_once() {
        let mut e = PromptEchoes::default();
        e.expect("Please read\nhello.txt");
        assert!(e.is_echo("Please read hello.txt"));
        assert_eq!(e.take("Please read hello.txt"), None);
        // Echoed once: the same text again is a message.
        assert!(!e.is_echo("Please read hello.txt"));
        assert_eq!(
            e.take("Please read hello.txt").as_deref(),
            Some("Please read hello.txt")
        );

        e.expect("fix the bug");
        assert_eq!(e.take("fix "), None);
        assert_eq!(e.take(" "), None);
        assert_eq!(e.take("the bug"), None);
        assert!(e.pending.is_empty());
    }

    #[test]
    fn text_that_is_not_the_prompt_shows_with_what_was_held() {
        let mut e = PromptEchoes::default();
        e.expect("fix the bug");
        assert_eq!(e.take("something else").as_deref(), Some("something else"));
        assert_eq!(e.take("fix "), None);
        assert!(!e.is_echo("the cat"));
        assert_eq!(e.take("the cat").as_deref(), Some("fix the cat"));
        // Nothing expected: everything shows.
        e.clear();
        assert_eq!(e.take("fix the bug").as_deref(), Some("fix the bug"));
        assert_eq!(e.take("   ").as_deref(), Some("   "));
    }

    fn chunk(text: &str) -> serde_json::Value {
        serde_json::json!({"sessionUpdate": "user_message_chunk", "messageId": "m1",
            "content": {"type": "text", "text": text}})
    }

    fn users(t: &Thread) -> Vec<&str> {
        t.entries()
            .iter()
            .filter_map(|e| match e {
                Entry::User { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Mistral Vibe's shape: the prompt comes back as one user chunk right
    /// after the prompt, in both turns.
    #[test]
    fn a_thread_shows_each_prompt_once_when_the_agent_echoes_it() {
        let mut t = Thread::new("vibe");
        for (turn, prompt) in [(1, "Please read hello.txt"), (2, "Thanks. Now ls.")] {
            t.begin_turn(prompt);
            assert!(t.is_prompt_echo(&chunk(prompt)));
            assert!(t.apply_json(&chunk(prompt)).is_empty());
            t.apply_json(&serde_json::json!({"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "ok"}}));
            t.end_turn(turn, "end_turn");
        }
        assert_eq!(users(&t), ["Please read hello.txt", "Thanks. Now ls."]);
        // Between turns and in a replayed history, a user chunk shows.
        assert!(!t.is_prompt_echo(&chunk("Thanks. Now ls.")));
        t.begin_replay("s");
        t.apply_json(&chunk("Please read hello.txt"));
        t.end_replay(true);
        assert_eq!(users(&t).len(), 3);
    }

    #[test]
    fn a_user_message_of_the_agent_that_is_not_the_prompt_shows() {
        let mut t = Thread::new("a");
        t.begin_turn("fix it");
        assert!(!t.is_prompt_echo(&chunk("also run the tests")));
        t.apply_json(&chunk("also run the tests"));
        assert_eq!(users(&t), ["fix it", "also run the tests"]);
    }

    #[test]
    fn two_prompts_of_one_turn_are_each_matched() {
        let mut e = PromptEchoes::default();
        e.expect("first");
        e.expect("second");
        assert_eq!(e.take("second"), None);
        assert_eq!(e.take("first"), None);
        assert!(e.pending.is_empty());
    }
}
