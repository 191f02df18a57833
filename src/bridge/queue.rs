//! The events waiting for the main thread, and how they merge and split:
//! consecutive text chunks of one message coalesce while they wait, so a
//! drain delivers them as one append; a newer rendering of an entry (or a
//! card's metadata) supersedes the queued one; and a drain takes a slice of
//! at most its budget, cutting a huge text at a line end if it must. The
//! shared instance, its wake-ups and back-pressure are `handoff`.

use std::collections::VecDeque;

use super::main_call::MainCall;
use crate::model::entries::NoticeLevel;
use crate::model::events::{PermissionAsk, ThreadEvent};

/// An event for the main thread. Its Lua table (see `lua_tables`) is its
/// serde form: `type` names the variant in snake_case, fields keep their
/// names, `None` is absent; a thread event is the `ThreadEvent`'s table
/// plus `thread`, a call its `MainCall`'s `method` and `payload` plus
/// `call` and `thread`. lua/acp/core/types.lua declares each shape.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UiEvent {
    /// A permission request waiting for the user's choice.
    Permission {
        thread: u64,
        request: u64,
        payload: Box<PermissionAsk>,
    },
    /// A permission request that no longer needs an answer (turn cancelled).
    PermissionDone { thread: u64, request: u64 },
    /// A message for the user (`vim.notify`).
    Notify { level: NoticeLevel, message: String },
    /// The answer to `list_files`: how many files `root` has (see `files`).
    Files {
        request: u64,
        root: String,
        count: usize,
        truncated: bool,
        error: Option<String>,
    },
    /// An `elicitation/create` waiting for the user (see `elicitation`);
    /// `thread` is None for a request-scoped one.
    Elicitation {
        thread: Option<u64>,
        request: u64,
        payload: serde_json::Value,
    },
    /// An elicitation that needs no answer any more.
    ElicitationDone { request: u64 },
    /// `elicitation/complete` for a URL elicitation.
    ElicitationComplete { elicitation_id: String },
    /// The agent's answer to a request the view made (`lua_api` `request`).
    Reply {
        request: u64,
        /// `null` (session/load may answer null) crosses as `true`.
        #[serde(
            serialize_with = "null_as_true",
            skip_serializing_if = "Option::is_none"
        )]
        result: Option<serde_json::Value>,
        error: Option<String>,
    },
    /// A request for the main thread (see `calls`); `call` 0 wants no answer.
    Call {
        call: u64,
        thread: u64,
        #[serde(flatten)]
        request: MainCall,
    },
    /// A change of a thread's model: the `ThreadEvent` (its own `type`)
    /// with the thread's id.
    #[serde(untagged)]
    Thread {
        thread: u64,
        #[serde(flatten)]
        event: ThreadEvent,
    },
}

fn null_as_true<S: serde::Serializer>(
    v: &Option<serde_json::Value>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    match v {
        Some(serde_json::Value::Null) => s.serialize_bool(true),
        v => v.serialize(s),
    }
}

impl UiEvent {
    /// About the bytes of text it carries (what the budgets count).
    pub fn weight(&self) -> usize {
        match self {
            UiEvent::Thread {
                event: ThreadEvent::Appended { text, .. },
                ..
            } => text.len(),
            UiEvent::Thread {
                event: ThreadEvent::Added { lines, .. },
                ..
            }
            | UiEvent::Thread {
                event: ThreadEvent::Replaced { lines, .. },
                ..
            } => lines.iter().map(|l| l.len() + 1).sum(),
            _ => 64,
        }
    }
}

/// The queued events, in order, and their weight.
#[derive(Default)]
pub struct Queue {
    events: VecDeque<UiEvent>,
    bytes: usize,
}

impl Queue {
    /// Appends, merging text into the previous event for the same entry.
    pub fn push(&mut self, ev: UiEvent) {
        self.bytes += ev.weight();
        if let (
            Some(UiEvent::Thread {
                thread: t0,
                event: last,
            }),
            UiEvent::Thread {
                thread: t1,
                event: ThreadEvent::Appended { index: i1, text },
            },
        ) = (self.events.back_mut(), &ev)
        {
            if t0 == t1 {
                match last {
                    ThreadEvent::Appended { index, text: acc } if index == i1 => {
                        acc.push_str(text);
                        return;
                    }
                    ThreadEvent::Added { index, lines, .. } if index == i1 => {
                        append_to_lines(lines, text);
                        return;
                    }
                    _ => {}
                }
            }
        }
        // A card's metadata supersedes the previous one of the same card.
        if let (
            Some(UiEvent::Thread {
                thread: t0,
                event:
                    ThreadEvent::Card {
                        index: i0,
                        card: old,
                    },
            }),
            UiEvent::Thread {
                thread: t1,
                event:
                    ThreadEvent::Card {
                        index: i1,
                        card: new,
                    },
            },
        ) = (self.events.back_mut(), &ev)
        {
            if t0 == t1 && i0 == i1 {
                old.clone_from(new);
                return;
            }
        }
        // A full re-render supersedes the previous one of the same entry
        // (a card whose terminal output streams in): keep only the newest.
        // A card re-renders as [Replaced, Card]: look past its Card.
        if let Some(at) = self.replaced_before_card(&ev) {
            if let (
                UiEvent::Thread {
                    event: ThreadEvent::Replaced { lines: old, .. },
                    ..
                },
                UiEvent::Thread {
                    event: ThreadEvent::Replaced { lines: new, .. },
                    ..
                },
            ) = (&mut self.events[at], &ev)
            {
                *old = new.clone();
                return;
            }
        }
        if let (
            Some(UiEvent::Thread {
                thread: t0,
                event:
                    ThreadEvent::Replaced {
                        index: i0,
                        lines: old,
                    },
            }),
            UiEvent::Thread {
                thread: t1,
                event:
                    ThreadEvent::Replaced {
                        index: i1,
                        lines: new,
                    },
            },
        ) = (self.events.back_mut(), &ev)
        {
            if t0 == t1 && i0 == i1 {
                *old = new.clone();
                return;
            }
        }
        self.events.push_back(ev);
    }
}

impl Queue {
    /// Their weight (about the bytes of text).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Takes events in order up to `budget` bytes, splitting a text that
    /// does not fit. At least one event (or slice) is taken, so a drain
    /// always makes progress.
    pub fn take_slice(&mut self, budget: usize) -> Slice {
        let mut events = VecDeque::new();
        let mut bytes = 0usize;
        if budget == usize::MAX {
            events = std::mem::take(&mut self.events);
            bytes = self.bytes;
        } else {
            while let Some(front) = self.events.front_mut() {
                let w = front.weight();
                if bytes.saturating_add(w) <= budget {
                    bytes += w;
                    events.push_back(self.events.pop_front().expect("front exists"));
                    continue;
                }
                if let Some(head) = split_event(front, budget - bytes) {
                    bytes += head.weight();
                    events.push_back(head);
                } else if events.is_empty() {
                    // Cannot be split: deliver it whole rather than stall.
                    bytes += w;
                    events.push_back(self.events.pop_front().expect("front exists"));
                }
                break;
            }
        }
        self.bytes = self.bytes.saturating_sub(bytes);
        if self.events.is_empty() {
            self.bytes = 0;
        }
        Slice { events, bytes }
    }

    /// For a `Replaced` event: the position of a queued `Replaced` of the
    /// same entry directly followed by that entry's `Card` at the back.
    fn replaced_before_card(&self, ev: &UiEvent) -> Option<usize> {
        let UiEvent::Thread {
            thread,
            event: ThreadEvent::Replaced { index, .. },
        } = ev
        else {
            return None;
        };
        let n = self.events.len();
        if n < 2 {
            return None;
        }
        let same = |e: &UiEvent, want_card: bool| match e {
            UiEvent::Thread {
                thread: t,
                event: ThreadEvent::Card { index: i, .. },
            } => want_card && t == thread && i == index,
            UiEvent::Thread {
                thread: t,
                event: ThreadEvent::Replaced { index: i, .. },
            } => !want_card && t == thread && i == index,
            _ => false,
        };
        (same(&self.events[n - 1], true) && same(&self.events[n - 2], false)).then_some(n - 2)
    }
}

/// Appends text (which may hold newlines) to the last of `lines`.
pub fn append_to_lines(lines: &mut Vec<String>, text: &str) {
    let mut parts = text.split('\n');
    if let Some(first) = parts.next() {
        match lines.last_mut() {
            Some(last) => last.push_str(first),
            None => lines.push(first.to_owned()),
        }
    }
    lines.extend(parts.map(str::to_owned));
}

/// Splits `ev` so that its head weighs at most `room` bytes: returns the
/// head and leaves the tail in `ev`. Only text can be split (an append, or
/// the lines of a new entry, whose tail becomes an append); `None` when `ev`
/// cannot be split or `room` is too small for a useful head.
fn split_event(ev: &mut UiEvent, room: usize) -> Option<UiEvent> {
    const MIN_SLICE: usize = 1024;
    if room < MIN_SLICE {
        return None;
    }
    let UiEvent::Thread { thread, event } = ev else {
        return None;
    };
    let thread = *thread;
    match event {
        ThreadEvent::Appended { index, text } => {
            let cut = cut_point(text, room)?;
            let tail = text.split_off(cut);
            let head = std::mem::replace(text, tail);
            Some(UiEvent::Thread {
                thread,
                event: ThreadEvent::Appended {
                    index: *index,
                    text: head,
                },
            })
        }
        ThreadEvent::Added { index, kind, lines } => {
            // Whole lines first; a single line longer than the room is cut.
            let mut used = 0;
            let mut n = 0;
            while n < lines.len() && used + lines[n].len() < room {
                used += lines[n].len() + 1;
                n += 1;
            }
            let index = *index;
            let (head, tail) = if n > 0 {
                // Added{head lines} then Appended{"\n" + the rest, joined}.
                let rest = lines.split_off(n);
                if rest.is_empty() {
                    return None;
                }
                (std::mem::take(lines), format!("\n{}", rest.join("\n")))
            } else {
                let first = &mut lines[0];
                let cut = cut_point(first, room)?;
                let rest_of_first = first.split_off(cut);
                let head = vec![std::mem::take(first)];
                let mut tail = rest_of_first;
                for l in &lines[1..] {
                    tail.push('\n');
                    tail.push_str(l);
                }
                (head, tail)
            };
            let kind = *kind;
            *event = ThreadEvent::Appended { index, text: tail };
            Some(UiEvent::Thread {
                thread,
                event: ThreadEvent::Added {
                    index,
                    kind,
                    lines: head,
                },
            })
        }
        _ => None,
    }
}

/// Where to cut `text` so that the head has at most `room` bytes: after the
/// last newline in the second half of that range, else at a char boundary.
fn cut_point(text: &str, room: usize) -> Option<usize> {
    if text.len() <= room {
        return None;
    }
    let mut cut = room;
    while cut > 0 && !text.is_char_boundary(cut) {
        cut -= 1;
    }
    if let Some(nl) = text.as_bytes()[room / 2..cut]
        .iter()
        .rposition(|&b| b == b'\n')
    {
        cut = room / 2 + nl + 1;
    }
    (cut > 0).then_some(cut)
}

/// What one drain takes from the queue.
pub struct Slice {
    pub events: VecDeque<UiEvent>,
    /// Their weight (about the bytes of text).
    pub bytes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::entries::EntryKind;

    fn appended(thread: u64, index: usize, text: &str) -> UiEvent {
        UiEvent::Thread {
            thread,
            event: ThreadEvent::Appended {
                index,
                text: text.into(),
            },
        }
    }

    #[test]
    fn consecutive_appends_to_one_entry_coalesce() {
        let mut q = Queue::default();
        q.push(appended(1, 2, "a"));
        q.push(appended(1, 2, "b\nc"));
        q.push(appended(2, 2, "other thread"));
        q.push(appended(1, 2, "d"));
        assert_eq!(q.events.len(), 3);
        assert_eq!(q.events[0], appended(1, 2, "ab\nc"));
        assert_eq!(q.bytes, 1 + 3 + 12 + 1);
    }

    #[test]
    fn appends_fold_into_a_queued_added_event() {
        let mut q = Queue::default();
        q.push(UiEvent::Thread {
            thread: 1,
            event: ThreadEvent::Added {
                index: 0,
                kind: EntryKind::Agent,
                lines: vec!["x".into()],
            },
        });
        q.push(appended(1, 0, "y\nz"));
        assert_eq!(q.events.len(), 1);
        let UiEvent::Thread {
            event: ThreadEvent::Added { lines, .. },
            ..
        } = &q.events[0]
        else {
            panic!()
        };
        assert_eq!(lines, &vec!["xy".to_string(), "z".to_string()]);
    }
}
