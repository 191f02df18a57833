//! The one crossing from background threads to Neovim's main thread.
//!
//! Producers (tokio tasks) push `UiEvent`s into a queue and poke a libuv async
//! handle. Its callback only schedules a drain with `vim.schedule`: calling
//! the API inside the libuv callback itself can re-enter the loop and abort
//! Neovim. Consecutive text chunks of one message coalesce in the queue, so a
//! drain delivers them as one append. Nothing is dropped; producers that run
//! far ahead wait (asynchronously) until the main thread catches up.
//!
//! Frames (see `pacing`): the first event after a pause wakes Neovim at once;
//! while a stream lasts Neovim is woken at most once per frame (a timer
//! thread sends the wake-up at the frame boundary), and one drain takes a
//! bounded slice of the queue, splitting a huge text if needed. The rest
//! waits for the next frame, so Neovim's event queue empties and it redraws
//! between slices.

mod pacing;

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Once, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

pub use pacing::{Pacer, Wake, MAX_FRAME, MIN_FRAME};

use crate::model::events::ThreadEvent;

/// Above this many queued bytes, producers wait for a drain (back-pressure).
const HIGH_WATER_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub enum UiEvent {
    Thread {
        thread: u64,
        event: ThreadEvent,
    },
    /// A permission request waiting for the user's choice.
    Permission {
        thread: u64,
        request: u64,
        payload: serde_json::Value,
    },
    /// A permission request that no longer needs an answer (turn cancelled).
    PermissionDone {
        thread: u64,
        request: u64,
    },
    Notify {
        level: &'static str,
        message: String,
    },
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
    ElicitationDone {
        request: u64,
    },
    /// `elicitation/complete` for a URL elicitation.
    ElicitationComplete {
        elicitation_id: String,
    },
    /// The agent's answer to a request the view made (`lua_api` `request`).
    Reply {
        request: u64,
        result: Option<serde_json::Value>,
        error: Option<String>,
    },
    /// A request for the main thread (see `calls`); `call` 0 wants no answer.
    Call {
        call: u64,
        thread: u64,
        request: crate::calls::MainCall,
    },
}

impl UiEvent {
    fn weight(&self) -> usize {
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

#[derive(Default)]
struct Queue {
    events: VecDeque<UiEvent>,
    bytes: usize,
}

impl Queue {
    /// Appends, merging text into the previous event for the same entry.
    fn push(&mut self, ev: UiEvent) {
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

/// Counters for tests and benchmarks.
#[derive(Default)]
pub struct Stats {
    pub pushed: AtomicU64,
    pub drains: AtomicU64,
    pub delivered: AtomicU64,
    pub waits: AtomicU64,
    /// Drains that left events for the next frame (budget reached).
    pub sliced: AtomicU64,
    /// Wake-ups sent at a frame boundary by the timer thread.
    pub timed_wakes: AtomicU64,
}

type WakeFn = Arc<dyn Fn() + Send + Sync>;

/// A thread that sends the wake-up at a frame boundary. One deadline at a
/// time (the pacer never asks for a second one before a drain started).
struct FrameTimer {
    deadline: Arc<(Mutex<Option<Instant>>, Condvar)>,
    started: Once,
}

impl FrameTimer {
    fn new() -> Self {
        Self {
            deadline: Arc::default(),
            started: Once::new(),
        }
    }

    fn arm(&self, at: Instant, wake: &WakeFn, stats: &Arc<Stats>) {
        self.started.call_once(|| {
            let shared = self.deadline.clone();
            let wake = wake.clone();
            let stats = stats.clone();
            let spawned = std::thread::Builder::new()
                .name("acp-frame".into())
                .spawn(move || {
                    let (lock, cv) = &*shared;
                    let mut deadline = lock.lock();
                    loop {
                        match *deadline {
                            None => cv.wait(&mut deadline),
                            Some(t) if Instant::now() >= t => {
                                *deadline = None;
                                drop(deadline);
                                stats.timed_wakes.fetch_add(1, Ordering::Relaxed);
                                wake();
                                deadline = lock.lock();
                            }
                            Some(t) => {
                                cv.wait_until(&mut deadline, t);
                            }
                        }
                    }
                });
            if let Err(e) = spawned {
                crate::log::error(format!("cannot start the frame timer thread: {e}"));
            }
        });
        let (lock, cv) = &*self.deadline;
        *lock.lock() = Some(at);
        cv.notify_one();
    }
}

pub struct Bridge {
    queue: Mutex<Queue>,
    /// True from the moment a drain is scheduled until it takes the queue.
    scheduled: AtomicBool,
    space: Notify,
    wake: OnceLock<WakeFn>,
    pacer: Mutex<Pacer>,
    timer: FrameTimer,
    /// Main-thread time the current drain started (for its own duration).
    drain_started: Mutex<Option<Instant>>,
    pub stats: Arc<Stats>,
}

impl Bridge {
    fn new() -> Self {
        Self {
            queue: Mutex::new(Queue::default()),
            scheduled: AtomicBool::new(false),
            space: Notify::new(),
            wake: OnceLock::new(),
            pacer: Mutex::new(Pacer::new()),
            timer: FrameTimer::new(),
            drain_started: Mutex::new(None),
            stats: Arc::new(Stats::default()),
        }
    }

    /// Sets the function that wakes the main thread (the libuv async send).
    pub fn set_waker(&self, wake: impl Fn() + Send + Sync + 'static) {
        let _ = self.wake.set(Arc::new(wake));
    }

    fn wake_at(&self, wake: Wake) {
        let Some(f) = self.wake.get() else { return };
        match wake {
            Wake::Now => f(),
            Wake::At(t) => self.timer.arm(t, f, &self.stats),
            Wake::Pending => {}
        }
    }

    /// Queues one event and wakes the main thread (now, or at the next frame
    /// while a stream lasts). Never blocks.
    pub fn push(&self, ev: UiEvent) {
        self.stats.pushed.fetch_add(1, Ordering::Relaxed);
        self.queue.lock().push(ev);
        if !self.scheduled.load(Ordering::SeqCst) {
            let wake = self.pacer.lock().on_event(Instant::now());
            self.wake_at(wake);
        }
    }

    pub fn push_all(&self, thread: u64, events: Vec<ThreadEvent>) {
        for event in events {
            self.push(UiEvent::Thread { thread, event });
        }
    }

    pub fn queued_bytes(&self) -> usize {
        self.queue.lock().bytes
    }

    /// Waits (without blocking a thread) until the queue is below the high
    /// water mark. Producers call this after pushing.
    pub async fn wait_for_space(&self) {
        loop {
            let notified = self.space.notified();
            if self.queued_bytes() <= HIGH_WATER_BYTES {
                return;
            }
            self.stats.waits.fetch_add(1, Ordering::Relaxed);
            notified.await;
        }
    }

    /// Called by the async-handle callback: returns true if the caller must
    /// schedule a drain (none is pending yet).
    pub fn claim_schedule(&self) -> bool {
        !self.scheduled.swap(true, Ordering::SeqCst)
    }

    /// Takes everything queued. Main thread, inside the scheduled drain.
    pub fn take(&self) -> VecDeque<UiEvent> {
        self.take_slice(usize::MAX).events
    }

    /// Takes queued events in order up to `budget` bytes, splitting a text
    /// that does not fit. At least one event (or slice) is taken, so a drain
    /// always makes progress. Main thread, inside the scheduled drain.
    pub fn take_slice(&self, budget: usize) -> Slice {
        self.scheduled.store(false, Ordering::SeqCst);
        let mut events = VecDeque::new();
        let mut bytes = 0usize;
        {
            let mut q = self.queue.lock();
            if budget == usize::MAX {
                events = std::mem::take(&mut q.events);
                bytes = q.bytes;
            } else {
                while let Some(front) = q.events.front_mut() {
                    let w = front.weight();
                    if bytes.saturating_add(w) <= budget {
                        bytes += w;
                        events.push_back(q.events.pop_front().expect("front exists"));
                        continue;
                    }
                    if let Some(head) = split_event(front, budget - bytes) {
                        bytes += head.weight();
                        events.push_back(head);
                    } else if events.is_empty() {
                        // Cannot be split: deliver it whole rather than stall.
                        bytes += w;
                        events.push_back(q.events.pop_front().expect("front exists"));
                    }
                    break;
                }
            }
            q.bytes = q.bytes.saturating_sub(bytes);
            if q.events.is_empty() {
                q.bytes = 0;
            }
        }
        self.space.notify_waiters();
        self.stats.drains.fetch_add(1, Ordering::Relaxed);
        self.stats
            .delivered
            .fetch_add(events.len() as u64, Ordering::Relaxed);
        Slice { events, bytes }
    }

    fn is_empty(&self) -> bool {
        self.queue.lock().events.is_empty()
    }

    /// Start of a drain (main thread): returns its byte budget.
    pub fn begin_drain(&self) -> usize {
        let now = Instant::now();
        *self.drain_started.lock() = Some(now);
        self.pacer.lock().begin(now, main_thread_cpu())
    }

    /// End of a drain that delivered `bytes` (main thread): asks for the
    /// next frame's wake-up when events are left.
    pub fn end_drain(&self, bytes: usize) {
        let now = Instant::now();
        let elapsed = self
            .drain_started
            .lock()
            .take()
            .map_or(Duration::ZERO, |s| now - s);
        let remaining = !self.is_empty();
        if remaining {
            self.stats.sliced.fetch_add(1, Ordering::Relaxed);
        }
        let next = self
            .pacer
            .lock()
            .end(now, main_thread_cpu(), bytes, elapsed, remaining);
        if let Some(at) = next {
            self.wake_at(Wake::At(at));
        }
    }

    /// The current frame length (for stats).
    pub fn frame(&self) -> Duration {
        self.pacer.lock().frame()
    }

    /// The current drain budget in bytes (for stats).
    pub fn budget(&self) -> usize {
        self.pacer.lock().budget()
    }
}

/// CPU time used by the calling thread (the main thread, when called from a
/// drain).
fn main_thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

pub fn bridge() -> &'static Bridge {
    static BRIDGE: OnceLock<Bridge> = OnceLock::new();
    BRIDGE.get_or_init(Bridge::new)
}

/// Runs `f`, turning a panic into an error string (already logged by the hook).
pub fn catch<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        format!("acp.nvim core panicked in {what}: {msg}")
    })
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

    #[test]
    fn take_empties_queue_and_releases_waiting_producers() {
        let b = Bridge::new();
        b.push(appended(1, 0, &"x".repeat(HIGH_WATER_BYTES + 1)));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let waiter = async { b.wait_for_space().await };
            let drainer = async {
                tokio::task::yield_now().await;
                assert_eq!(b.take().len(), 1);
            };
            tokio::join!(waiter, drainer);
        });
        assert_eq!(b.queued_bytes(), 0);
    }

    fn added(thread: u64, index: usize, lines: &[&str]) -> UiEvent {
        UiEvent::Thread {
            thread,
            event: ThreadEvent::Added {
                index,
                kind: EntryKind::Agent,
                lines: lines.iter().map(|l| l.to_string()).collect(),
            },
        }
    }

    /// Applies events to a transcript the way the view does (entries joined
    /// by a blank line), to check that slicing never changes the result.
    fn render(events: &[UiEvent]) -> String {
        let mut entries: Vec<String> = Vec::new();
        for ev in events {
            match ev {
                UiEvent::Thread {
                    event: ThreadEvent::Added { lines, .. },
                    ..
                } => entries.push(lines.join("\n")),
                UiEvent::Thread {
                    event: ThreadEvent::Appended { text, .. },
                    ..
                } => entries.last_mut().expect("append after add").push_str(text),
                _ => {}
            }
        }
        entries.join("\n\n")
    }

    fn drain_all(b: &Bridge, budget: usize) -> (Vec<UiEvent>, usize) {
        let mut all = Vec::new();
        let mut drains = 0;
        loop {
            let slice = b.take_slice(budget);
            if slice.events.is_empty() {
                return (all, drains);
            }
            drains += 1;
            assert!(
                slice.bytes <= budget,
                "a slice of {} bytes exceeds the budget {budget}",
                slice.bytes
            );
            all.extend(slice.events);
        }
    }

    #[test]
    fn slices_respect_the_budget_and_keep_order_and_text() {
        let b = Bridge::new();
        let line = "0123456789abcdefghijklmnopqrstuvwxyz012\n"; // 40 bytes
        b.push(added(1, 0, &["## You", "", "hi"]));
        b.push(added(1, 1, &[""]));
        for _ in 0..5000 {
            b.push(appended(1, 1, line));
        }
        b.push(UiEvent::Notify {
            level: "info",
            message: "after".into(),
        });
        let expected = format!("## You\n\nhi\n\n{}", line.repeat(5000));
        let (events, drains) = drain_all(&b, 16 * 1024);
        assert!(
            drains >= 12,
            "200 KB in 16 KB slices takes many drains, got {drains}"
        );
        assert_eq!(render(&events), expected);
        // Cut at line ends: every slice of the message but the last ends with a newline.
        for ev in &events {
            if let UiEvent::Thread {
                event: ThreadEvent::Appended { text, .. },
                ..
            } = ev
            {
                assert!(text.ends_with('\n'));
            }
        }
        assert!(matches!(events.last(), Some(UiEvent::Notify { .. })));
        assert_eq!(b.queued_bytes(), 0);
    }

    #[test]
    fn a_huge_new_entry_is_split_into_lines_then_appends() {
        let b = Bridge::new();
        let lines: Vec<String> = (0..10_000).map(|i| format!("{i:079}")).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        b.push(added(3, 7, &refs));
        let (events, drains) = drain_all(&b, 64 * 1024);
        assert!(drains > 10);
        assert!(matches!(
            &events[0],
            UiEvent::Thread {
                event: ThreadEvent::Added { index: 7, .. },
                ..
            }
        ));
        assert!(events[1..].iter().all(|e| matches!(
            e,
            UiEvent::Thread {
                event: ThreadEvent::Appended { index: 7, .. },
                ..
            }
        )));
        assert_eq!(render(&events), lines.join("\n"));
    }

    #[test]
    fn a_single_line_longer_than_the_budget_is_cut_at_char_boundaries() {
        let b = Bridge::new();
        let long = "é".repeat(100_000); // 200 KB, two bytes per char, no newline
        b.push(added(1, 0, &[long.as_str()]));
        b.push(appended(1, 0, &long));
        let (events, drains) = drain_all(&b, 4099);
        assert!(drains > 90);
        assert_eq!(render(&events), format!("{long}{long}"));
    }

    #[test]
    fn unsplittable_events_are_delivered_whole_one_per_drain() {
        let b = Bridge::new();
        let big: Vec<String> = (0..100)
            .map(|i| format!("line {i} {}", "z".repeat(100)))
            .collect();
        b.push(UiEvent::Thread {
            thread: 1,
            event: ThreadEvent::Replaced {
                index: 0,
                lines: big.clone(),
            },
        });
        b.push(UiEvent::Thread {
            thread: 1,
            event: ThreadEvent::Replaced {
                index: 1,
                lines: big,
            },
        });
        assert_eq!(b.take_slice(2048).events.len(), 1);
        assert_eq!(b.take_slice(2048).events.len(), 1);
        assert!(b.take_slice(2048).events.is_empty());
    }

    #[test]
    fn a_streaming_card_coalesces_to_one_rendering_and_one_card() {
        let mut t = crate::model::thread::Thread::new("demo");
        t.begin_turn("q");
        let b = Bridge::new();
        b.push_all(1, t.apply_json(&serde_json::json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"make","kind":"execute"})));
        b.take();
        for i in 0..50 {
            let data = format!("line {i}\n");
            let update = serde_json::json!({"sessionUpdate":"tool_call_update","toolCallId":"c",
                "_meta":{"terminal_output":{"terminal_id":"c","data":data}}});
            b.push_all(1, t.apply_json(&update));
        }
        let events: Vec<ThreadEvent> = b
            .take()
            .into_iter()
            .filter_map(|e| match e {
                UiEvent::Thread { event, .. } => Some(event),
                _ => None,
            })
            .filter(|e| !matches!(e, ThreadEvent::TerminalOutput { .. }))
            .collect();
        // Terminal output events sit between the renderings, so only runs
        // without them coalesce; what matters is that the last state wins.
        let last_lines = events.iter().rev().find_map(|e| match e {
            ThreadEvent::Replaced { lines, .. } => Some(lines.join("\n")),
            _ => None,
        });
        assert!(last_lines.unwrap().contains("line 49"));
        assert!(
            matches!(events.last(), Some(ThreadEvent::Card { card, .. }) if card.terminals == ["c"])
        );
    }

    #[test]
    fn replaced_and_card_pairs_of_one_entry_coalesce() {
        let b = Bridge::new();
        let card = |status: &str| {
            let mut tc = crate::model::entries::ToolCall::new("c");
            tc.status = status.into();
            UiEvent::Thread {
                thread: 1,
                event: ThreadEvent::Card {
                    index: 3,
                    card: Box::new(crate::model::events::CardMeta::of(&tc, vec![])),
                },
            }
        };
        let replaced = |text: &str| UiEvent::Thread {
            thread: 1,
            event: ThreadEvent::Replaced {
                index: 3,
                lines: vec![text.into()],
            },
        };
        b.push(replaced("a"));
        b.push(card("pending"));
        b.push(replaced("b"));
        b.push(card("completed"));
        let events = b.take();
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0], replaced("b"));
        assert_eq!(events[1], card("completed"));
    }

    #[test]
    fn frames_wake_at_once_then_at_the_frame_boundary() {
        let b: &'static Bridge = Box::leak(Box::new(Bridge::new()));
        let wakes = Arc::new(parking_lot::Mutex::new(Vec::<Instant>::new()));
        let w = wakes.clone();
        b.set_waker(move || w.lock().push(Instant::now()));
        let t0 = Instant::now();
        b.push(appended(1, 0, "a"));
        assert_eq!(wakes.lock().len(), 1, "the first event wakes at once");
        // The drain: claimed by the async callback, then run.
        assert!(b.claim_schedule());
        let budget = b.begin_drain();
        assert_eq!(b.take_slice(budget).events.len(), 1);
        b.end_drain(1);
        // Events right after the drain wait for the next frame.
        b.push(appended(1, 0, "b"));
        b.push(appended(1, 0, "c"));
        assert_eq!(wakes.lock().len(), 1);
        let deadline = Instant::now() + Duration::from_secs(2);
        while wakes.lock().len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let w = wakes.lock().clone();
        assert_eq!(w.len(), 2, "the timer sent the frame's wake-up");
        assert!(
            w[1] - t0 >= MIN_FRAME - Duration::from_millis(1),
            "woken after {:?}",
            w[1] - t0
        );
        assert_eq!(b.stats.timed_wakes.load(Ordering::Relaxed), 1);
        assert!(b.claim_schedule());
        b.begin_drain();
        let slice = b.take_slice(budget);
        assert_eq!(
            slice.events,
            VecDeque::from([appended(1, 0, "bc")]),
            "one append per message per frame"
        );
        b.end_drain(slice.bytes);
    }

    #[test]
    fn catch_turns_panic_into_error() {
        let r: Result<(), String> = catch("test", || panic!("boom"));
        assert!(r.unwrap_err().contains("boom"));
    }
}
