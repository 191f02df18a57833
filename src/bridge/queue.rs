//! The events waiting for the main thread, and how they merge and split:
//! the text chunks of one entry coalesce while they wait, so a drain
//! delivers one append per entry (or the text inside the entry's `Added`);
//! a newer rendering of an entry (or a card's metadata) supersedes the
//! queued one; and a drain takes a slice of at most its budget, cutting a
//! huge text at a line end if it must. The view applies what it gets as it
//! comes: the merging is here only. The shared instance, its wake-ups and
//! back-pressure are `handoff`.

use std::collections::{HashMap, VecDeque};

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
    /// An elicitation that needs no answer any more; `withdrawn` when the
    /// agent took it back (`$/cancel_request`), absent otherwise.
    ElicitationDone {
        request: u64,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        withdrawn: bool,
    },
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

/// A queued new entry takes appended text while it has fewer lines than
/// this, and text shorter than `ADDED_MAX_BYTES`; a new entry heavier than
/// that is cut into its first lines and an append.
const ADDED_MAX_LINES: usize = 256;
const ADDED_MAX_BYTES: usize = 64 * 1024;

/// The queued events, in order, and their weight.
#[derive(Default)]
pub struct Queue {
    events: VecDeque<UiEvent>,
    bytes: usize,
    /// The number of the front event: events are numbered as they are
    /// queued, so event `n` is at `n - front`.
    front: u64,
    /// Per thread and entry: the queued text event (`Added` or `Appended`)
    /// that later text of the entry joins. Emptied for a thread by an event
    /// the view must apply in order (see `Merge::of`).
    open: HashMap<u64, HashMap<usize, u64>>,
    /// Per thread and entry: the queued `Card` that a newer card of the
    /// entry overwrites in place. Emptied for a thread by the same events
    /// as `open`: a card never moves past a re-rendering, a turn start or
    /// a permission request.
    cards: HashMap<u64, HashMap<usize, u64>>,
}

/// What a queued event means for the text that joins an earlier event.
enum Merge {
    /// Text of entry `index`: joins the entry's open event.
    Text { thread: u64, index: usize },
    /// A new entry: later text of it joins its lines.
    Opens { thread: u64, index: usize },
    /// The view applies it where it stands, between the texts before and
    /// after it (a re-rendering, a turn start, a permission request): text
    /// of the thread that follows stays after it.
    Barrier { thread: u64 },
    /// Text may pass it: the view reads the buffer for it only once the
    /// drain is in, or it is not the thread's view's (another thread, a
    /// call, a notification).
    Neutral,
}

impl Merge {
    fn of(ev: &UiEvent) -> Merge {
        match ev {
            UiEvent::Thread { thread, event } => {
                let thread = *thread;
                match event {
                    ThreadEvent::Appended { index, .. } => Merge::Text {
                        thread,
                        index: *index,
                    },
                    ThreadEvent::Added { index, .. } => Merge::Opens {
                        thread,
                        index: *index,
                    },
                    ThreadEvent::Replaced { .. } | ThreadEvent::TurnStarted { .. } => {
                        Merge::Barrier { thread }
                    }
                    ThreadEvent::Status { .. }
                    | ThreadEvent::Session { .. }
                    | ThreadEvent::Title { .. }
                    | ThreadEvent::Mode { .. }
                    | ThreadEvent::Modes { .. }
                    | ThreadEvent::Commands { .. }
                    | ThreadEvent::ConfigOptions { .. }
                    | ThreadEvent::Models { .. }
                    | ThreadEvent::Usage { .. }
                    | ThreadEvent::Agent { .. }
                    | ThreadEvent::TurnEnded { .. }
                    | ThreadEvent::TerminalOutput { .. }
                    | ThreadEvent::Card { .. }
                    | ThreadEvent::Plan { .. }
                    | ThreadEvent::UpdatedAt { .. }
                    | ThreadEvent::Marks { .. }
                    | ThreadEvent::AgentNotice { .. } => Merge::Neutral,
                }
            }
            UiEvent::Permission { thread, .. } | UiEvent::PermissionDone { thread, .. } => {
                Merge::Barrier { thread: *thread }
            }
            UiEvent::Notify { .. }
            | UiEvent::Files { .. }
            | UiEvent::Elicitation { .. }
            | UiEvent::ElicitationDone { .. }
            | UiEvent::ElicitationComplete { .. }
            | UiEvent::Reply { .. }
            | UiEvent::Call { .. } => Merge::Neutral,
        }
    }
}

impl Queue {
    /// The queued event that text of `thread`'s entry `index` joins.
    fn open_event(&mut self, thread: u64, index: usize) -> Option<&mut ThreadEvent> {
        let n = *self.open.get(&thread)?.get(&index)?;
        let at = usize::try_from(n.checked_sub(self.front)?).ok()?;
        match self.events.get_mut(at)? {
            UiEvent::Thread { thread: t, event } if *t == thread => match event {
                ThreadEvent::Appended { index: i, .. } | ThreadEvent::Added { index: i, .. }
                    if *i == index =>
                {
                    Some(event)
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The queued card of `thread`'s entry `index` that a newer one
    /// overwrites (see `cards`).
    fn queued_card(
        &mut self,
        thread: u64,
        index: usize,
    ) -> Option<&mut Box<crate::model::events::CardMeta>> {
        let n = *self.cards.get(&thread)?.get(&index)?;
        let at = usize::try_from(n.checked_sub(self.front)?).ok()?;
        match self.events.get_mut(at)? {
            UiEvent::Thread {
                thread: t,
                event: ThreadEvent::Card { index: i, card },
            } if *t == thread && *i == index => Some(card),
            _ => None,
        }
    }

    /// Queues `ev`, merging text into the queued event of its entry, and a
    /// new entry's re-rendering into its queued `Added`.
    pub fn push(&mut self, mut ev: UiEvent) {
        // A large new entry (a 5 MB first chunk) is cut here, on the
        // producer's thread, into its first lines and an append of the
        // rest: a drain then slices the append (cheap) instead of joining
        // the entry's lines again on the main thread.
        let merge = Merge::of(&ev);
        let weight = ev.weight();
        if matches!(merge, Merge::Opens { .. }) && weight > ADDED_MAX_BYTES {
            if let Some(head) = split_event(&mut ev, ADDED_MAX_BYTES) {
                self.push(head);
                self.push(ev);
                return;
            }
        }
        self.bytes += weight;
        match merge {
            Merge::Text { thread, index } => {
                let UiEvent::Thread {
                    event: ThreadEvent::Appended { text, .. },
                    ..
                } = &mut ev
                else {
                    unreachable!("text is an append")
                };
                match self.open_event(thread, index) {
                    Some(ThreadEvent::Appended { text: acc, .. }) => {
                        acc.push_str(text);
                        return;
                    }
                    // Joins a queued new entry while both are small; a
                    // stream's text then goes on in an append of its own
                    // (cut by drains without rejoining lines).
                    Some(ThreadEvent::Added { lines, .. })
                        if lines.len() < ADDED_MAX_LINES && text.len() < ADDED_MAX_BYTES =>
                    {
                        append_to_lines(lines, text);
                        return;
                    }
                    _ => self.opens(thread, index),
                }
            }
            Merge::Opens { thread, index } => self.opens(thread, index),
            Merge::Barrier { thread } => {
                // A new entry's re-rendering is its text, still unshown.
                if let UiEvent::Thread {
                    event: ThreadEvent::Replaced { index, lines },
                    ..
                } = &mut ev
                {
                    if let Some(ThreadEvent::Added { lines: queued, .. }) =
                        self.open_event(thread, *index)
                    {
                        let old: usize = queued.iter().map(|l| l.len() + 1).sum();
                        *queued = std::mem::take(lines);
                        self.bytes -= old;
                        return;
                    }
                }
                self.open.remove(&thread);
                self.cards.remove(&thread);
            }
            Merge::Neutral => {}
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
                self.bytes -= weight;
                return;
            }
        }
        // A tool call's cards while a burst waits ([card, agent text, its
        // next card], a hundred times): the newest is applied where the
        // first stood, right after the entry's text, which is already the
        // newest rendering (a re-rendering joins a queued `Added`; any
        // other one is a barrier). A status the view never saw is no loss:
        // each card is the whole state.
        if let UiEvent::Thread {
            thread,
            event: ThreadEvent::Card { index, card: new },
        } = &ev
        {
            if let Some(old) = self.queued_card(*thread, *index) {
                old.clone_from(new);
                self.bytes -= weight;
                return;
            }
            let n = self.front + self.events.len() as u64;
            self.cards.entry(*thread).or_default().insert(*index, n);
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

    /// The event about to be queued is where later text of `thread`'s
    /// entry `index` joins.
    fn opens(&mut self, thread: u64, index: usize) {
        let n = self.front + self.events.len() as u64;
        self.open.entry(thread).or_default().insert(index, n);
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
        // Events taken off the queue (a split one stays at its front).
        let mut taken = 0u64;
        if budget == usize::MAX {
            bytes = self.bytes;
            for ev in std::mem::take(&mut self.events) {
                taken += 1;
                take_into(&mut events, ev);
            }
        } else {
            while let Some(front) = self.events.front_mut() {
                let w = front.weight();
                if bytes.saturating_add(w) <= budget {
                    bytes += w;
                    taken += 1;
                    take_into(&mut events, self.events.pop_front().expect("front exists"));
                    continue;
                }
                if let Some(head) = split_event(front, budget - bytes) {
                    bytes += head.weight();
                    take_into(&mut events, head);
                } else if events.is_empty() {
                    // Cannot be split: deliver it whole rather than stall.
                    bytes += w;
                    taken += 1;
                    take_into(&mut events, self.events.pop_front().expect("front exists"));
                }
                break;
            }
        }
        self.bytes = self.bytes.saturating_sub(bytes);
        self.front += taken;
        if self.events.is_empty() {
            self.bytes = 0;
            self.open.clear();
            self.cards.clear();
        } else if taken > 0 {
            let front = self.front;
            for map in [&mut self.open, &mut self.cards] {
                map.retain(|_, entries| {
                    entries.retain(|_, n| *n >= front);
                    !entries.is_empty()
                });
            }
        }
        let behind = !self.events.is_empty();
        Slice {
            events,
            bytes,
            behind,
        }
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

/// Adds `ev` to a drain's slice. The append of a new entry taken just
/// before joins its lines (the two are queued apart when large, see
/// `ADDED_MAX_BYTES`): the view makes one edit for them, bounded by the
/// drain's budget.
fn take_into(events: &mut VecDeque<UiEvent>, ev: UiEvent) {
    if let (
        Some(UiEvent::Thread {
            thread: t1,
            event: ThreadEvent::Added {
                index: a, lines, ..
            },
        }),
        UiEvent::Thread {
            thread: t2,
            event: ThreadEvent::Appended { index: b, text },
        },
    ) = (events.back_mut(), &ev)
    {
        if t1 == t2 && a == b {
            append_to_lines(lines, text);
            return;
        }
    }
    events.push_back(ev);
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
            // The head is copied out and the tail moved down in place: a
            // 5 MB append sliced by drains is not copied into a fresh
            // allocation (its pages faulted in) on every slice.
            let head = text[..cut].to_owned();
            text.replace_range(..cut, "");
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
                (std::mem::take(lines), lines_after(String::new(), &rest))
            } else {
                let first = &mut lines[0];
                let cut = cut_point(first, room)?;
                let rest_of_first = first.split_off(cut);
                let head = vec![std::mem::take(first)];
                (head, lines_after(rest_of_first, &lines[1..]))
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

/// `text` followed by each of `lines` after a `\n`, in room made once.
fn lines_after(mut text: String, lines: &[String]) -> String {
    text.reserve(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        text.push('\n');
        text.push_str(l);
    }
    text
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
    /// The budget left events that were queued (a backlog).
    pub behind: bool,
}

/// Events as the model would make them, for the bridge's tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use crate::model::entries::EntryKind;

    pub(crate) fn appended(thread: u64, index: usize, text: &str) -> UiEvent {
        UiEvent::Thread {
            thread,
            event: ThreadEvent::Appended {
                index,
                text: text.into(),
            },
        }
    }

    pub(crate) fn added(thread: u64, index: usize, lines: &[&str]) -> UiEvent {
        UiEvent::Thread {
            thread,
            event: ThreadEvent::Added {
                index,
                kind: EntryKind::Agent,
                lines: lines.iter().map(|l| l.to_string()).collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{added, appended};
    use super::*;
    use crate::model::entries::EntryKind;

    fn replaced(thread: u64, index: usize, lines: &[&str]) -> UiEvent {
        UiEvent::Thread {
            thread,
            event: ThreadEvent::Replaced {
                index,
                lines: lines.iter().map(|l| l.to_string()).collect(),
            },
        }
    }

    fn usage(thread: u64) -> UiEvent {
        UiEvent::Thread {
            thread,
            event: ThreadEvent::Usage {
                usage: serde_json::json!({ "used": 1 }),
            },
        }
    }

    fn texts(q: &Queue) -> Vec<UiEvent> {
        q.events.iter().cloned().collect()
    }

    #[test]
    fn consecutive_appends_to_one_entry_coalesce() {
        let mut q = Queue::default();
        q.push(appended(1, 2, "a"));
        q.push(appended(1, 2, "b\nc"));
        q.push(appended(2, 2, "other thread"));
        q.push(appended(1, 2, "d"));
        assert_eq!(
            texts(&q),
            vec![appended(1, 2, "ab\ncd"), appended(2, 2, "other thread")]
        );
        assert_eq!(q.bytes, 1 + 3 + 12 + 1);
    }

    /// What the view's apply merged itself before: the text of an entry
    /// past events it applies after the drain (metadata, cards, usage,
    /// other entries, other threads, calls), and into an entry added in the
    /// same drain.
    #[test]
    fn the_text_of_an_entry_joins_past_what_the_view_applies_later() {
        let mut q = Queue::default();
        q.push(appended(1, 2, "a"));
        q.push(usage(1));
        q.push(added(1, 3, &["new"]));
        q.push(appended(2, 0, "x"));
        q.push(UiEvent::Notify {
            level: NoticeLevel::Info,
            message: "m".into(),
        });
        q.push(appended(1, 2, "b"));
        q.push(appended(1, 3, " entry\nnext"));
        q.push(usage(1));
        q.push(appended(1, 3, " line"));
        q.push(appended(2, 0, "y"));
        let n = q.events.len();
        assert_eq!(n, 6, "{:?}", q.events);
        assert_eq!(q.events[0], appended(1, 2, "ab"));
        assert_eq!(q.events[2], added(1, 3, &["new entry", "next line"]));
        assert_eq!(q.events[3], appended(2, 0, "xy"));
        // A new entry's re-rendering before it is shown: its lines change.
        q.push(replaced(1, 3, &["rendered"]));
        assert_eq!(q.events.len(), n);
        assert_eq!(q.events[2], added(1, 3, &["rendered"]));
        q.push(appended(1, 3, "!"));
        assert_eq!(q.events[2], added(1, 3, &["rendered!"]));
    }

    /// Text never passes what the view applies where it stands: a
    /// re-rendering of a shown entry, a turn start, a permission request or
    /// its end.
    #[test]
    fn the_text_stays_after_what_the_view_applies_in_order() {
        let barriers = [
            replaced(1, 7, &["card"]),
            UiEvent::Thread {
                thread: 1,
                event: ThreadEvent::TurnStarted { turn: 2 },
            },
            // (and a permission request, the same way: `Merge::of`)
            UiEvent::PermissionDone {
                thread: 1,
                request: 1,
            },
        ];
        for barrier in barriers {
            let mut q = Queue::default();
            q.push(appended(1, 2, "a"));
            q.push(added(1, 3, &["b"]));
            q.push(barrier.clone());
            q.push(appended(1, 2, "c"));
            q.push(appended(1, 3, "d"));
            q.push(replaced(1, 3, &["e"]));
            assert_eq!(
                texts(&q),
                vec![
                    appended(1, 2, "a"),
                    added(1, 3, &["b"]),
                    barrier,
                    appended(1, 2, "c"),
                    appended(1, 3, "d"),
                    replaced(1, 3, &["e"]),
                ]
            );
            // Another thread's barrier is not one for this thread.
            let mut q = Queue::default();
            q.push(appended(1, 2, "a"));
            q.push(replaced(2, 7, &["card"]));
            q.push(appended(1, 2, "b"));
            assert_eq!(q.events[0], appended(1, 2, "ab"));
        }
    }

    /// Taken text is gone from the queue: later text is a new event; the
    /// tail of a split text still takes more.
    #[test]
    fn text_after_a_drain_starts_a_new_event_and_a_split_tail_takes_more() {
        let mut q = Queue::default();
        q.push(appended(1, 2, "a"));
        q.push(usage(1));
        let taken = q.take_slice(1);
        assert_eq!(taken.events.len(), 1);
        q.push(appended(1, 2, "b"));
        assert_eq!(texts(&q), vec![usage(1), appended(1, 2, "b")]);
        q.take_slice(usize::MAX);
        assert!(q.open.is_empty());

        let long = "x".repeat(3000);
        q.push(appended(1, 2, &long));
        let head = q.take_slice(2048);
        assert_eq!(head.events.len(), 1);
        q.push(usage(1));
        q.push(appended(1, 2, "end"));
        let UiEvent::Thread {
            event: ThreadEvent::Appended { text, .. },
            ..
        } = &q.events[0]
        else {
            panic!("{:?}", q.events)
        };
        assert!(text.ends_with("xend"), "the split tail took the text");
        assert_eq!(q.events.len(), 2);
        let rest = q.take_slice(usize::MAX);
        let all: String = head
            .events
            .iter()
            .chain(rest.events.iter())
            .filter_map(|e| match e {
                UiEvent::Thread {
                    event: ThreadEvent::Appended { text, .. },
                    ..
                } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(all, format!("{long}end"));
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

    /// The transcript text of queued events, as the view would end up with
    /// it: an `Added` starts its entry's text, an `Appended` continues it.
    fn entry_text(events: &VecDeque<UiEvent>) -> String {
        let mut out = String::new();
        for e in events {
            match e {
                UiEvent::Thread {
                    event: ThreadEvent::Added { lines, .. },
                    ..
                } => out.push_str(&lines.join("\n")),
                UiEvent::Thread {
                    event: ThreadEvent::Appended { text, .. },
                    ..
                } => out.push_str(text),
                other => panic!("{other:?}"),
            }
        }
        out
    }

    #[test]
    fn a_large_new_entry_is_queued_as_its_first_lines_and_an_append() {
        let lines: Vec<String> = (0..5000).map(|i| format!("{i:079}")).collect();
        let mut q = Queue::default();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        q.push(added(1, 0, &refs));
        assert_eq!(q.events.len(), 2);
        assert!(q.events[0].weight() <= ADDED_MAX_BYTES);
        assert!(matches!(
            q.events[1],
            UiEvent::Thread {
                event: ThreadEvent::Appended { index: 0, .. },
                ..
            }
        ));
        assert_eq!(q.bytes(), lines.iter().map(|l| l.len() + 1).sum::<usize>());
        // More text joins the append; drains take it all, in order.
        q.push(appended(1, 0, "\nend"));
        assert_eq!(q.events.len(), 2);
        let mut taken = VecDeque::new();
        while !q.is_empty() {
            taken.extend(q.take_slice(32 * 1024).events);
        }
        assert_eq!(entry_text(&taken), format!("{}\nend", lines.join("\n")));
    }

    #[test]
    fn a_stream_into_a_queued_new_entry_goes_on_in_an_append() {
        let mut q = Queue::default();
        q.push(added(1, 0, &["start"]));
        let mut want = "start".to_string();
        for i in 0..1000 {
            let chunk = format!(" word{i}\n");
            want.push_str(&chunk);
            q.push(appended(1, 0, &chunk));
        }
        // The new entry holds its first lines, the rest is one append.
        assert_eq!(q.events.len(), 2, "{:?}", q.events.len());
        let UiEvent::Thread {
            event: ThreadEvent::Added { lines, .. },
            ..
        } = &q.events[0]
        else {
            panic!()
        };
        assert_eq!(lines.len(), ADDED_MAX_LINES);
        // Taken in one slice, they are one new entry again (one edit).
        let taken = q.take_slice(usize::MAX).events;
        assert_eq!(taken.len(), 1);
        assert_eq!(entry_text(&taken), want);
    }

    fn card(thread: u64, index: usize, status: &str) -> UiEvent {
        let mut tc = crate::model::entries::ToolCall::new("c");
        tc.status = status.into();
        UiEvent::Thread {
            thread,
            event: ThreadEvent::Card {
                index,
                card: Box::new(crate::model::events::CardMeta::of(&tc, Default::default())),
            },
        }
    }

    /// A burst of tool calls: [card, agent text, its next card] per call.
    /// The newest card of an entry takes the place of the queued one, past
    /// other entries' events but never past a barrier of its thread.
    #[test]
    fn a_card_replaces_the_queued_card_of_its_entry_past_other_entries() {
        let mut q = Queue::default();
        q.push(added(1, 5, &["read"]));
        q.push(card(1, 5, "pending"));
        q.push(added(1, 6, &["text"]));
        q.push(card(2, 5, "pending"));
        q.push(card(1, 5, "completed"));
        assert_eq!(
            texts(&q),
            vec![
                added(1, 5, &["read"]),
                card(1, 5, "completed"),
                added(1, 6, &["text"]),
                card(2, 5, "pending"),
            ]
        );
        assert_eq!(q.bytes, 5 + 5 + 64 + 64, "a replaced card weighs nothing");
        // A barrier of thread 1 (the re-rendering of an entry shown
        // before): a later card stays after it.
        q.push(replaced(1, 4, &["shown before"]));
        q.push(card(1, 5, "failed"));
        q.push(card(2, 5, "completed"));
        let got = texts(&q);
        assert_eq!(got.len(), 6, "{got:?}");
        assert_eq!(got[4], replaced(1, 4, &["shown before"]));
        assert_eq!(got[5], card(1, 5, "failed"));
        assert_eq!(got[3], card(2, 5, "completed"), "thread 2 had no barrier");
        // Once the first events are drained, a card already taken is not
        // touched: the next one is queued.
        let taken = q.take_slice(usize::MAX).events;
        assert_eq!(taken.len(), 6);
        q.push(card(1, 5, "completed"));
        q.push(card(2, 5, "failed"));
        assert_eq!(
            texts(&q),
            vec![card(1, 5, "completed"), card(2, 5, "failed")]
        );
    }
}
