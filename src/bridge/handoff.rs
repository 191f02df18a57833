//! The hand-off point between the background and the main thread: the
//! shared queue (`bridge()`), the wake-up of Neovim (now, or at the next
//! frame boundary while a stream lasts), and the back-pressure: above a
//! high-water mark producers wait (asynchronously) for a drain.
//!
//! Frames (see `pacing`): the first event after a pause wakes Neovim at once;
//! while a stream lasts Neovim is woken at most once per frame (a timer
//! thread sends the wake-up at the frame boundary), and one drain takes a
//! bounded slice of the queue. The rest waits for the next frame, so
//! Neovim's event queue empties and it redraws between slices.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Once, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

use super::pacing::{Pacer, Wake};
use super::queue::{Queue, Slice, UiEvent};
use crate::model::events::ThreadEvent;

/// Above this many queued bytes, producers wait for a drain (back-pressure).
const HIGH_WATER_BYTES: usize = 16 * 1024 * 1024;

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
    /// Signalled at the end of every drain (see `settled`).
    drained: Notify,
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
            drained: Notify::new(),
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
        // A call the core waits on (an agent's fs or terminal request is
        // waiting for its answer) wakes Neovim now, not at the next frame.
        let urgent = matches!(ev, UiEvent::Call { call, .. } if call != 0);
        self.queue.lock().push(ev);
        self.queued(1, urgent);
    }

    /// Queues the events of one change of a thread (one agent message),
    /// all of them before the wake-up, so that a drain never takes half.
    pub fn push_all(&self, thread: u64, events: Vec<ThreadEvent>) {
        // A turn's end wakes Neovim now: the user, and the prompt they
        // may have queued, wait for it (once per turn: no frame rate lost).
        let urgent = events
            .iter()
            .any(|e| matches!(e, ThreadEvent::TurnEnded { .. }));
        let n = events.len();
        {
            let mut queue = self.queue.lock();
            for event in events {
                queue.push(UiEvent::Thread { thread, event });
            }
        }
        self.queued(n, urgent);
    }

    /// `n` events were queued: wakes the main thread unless a drain is
    /// scheduled (see `pacing`).
    fn queued(&self, n: usize, urgent: bool) {
        if n == 0 {
            return;
        }
        self.stats.pushed.fetch_add(n as u64, Ordering::Relaxed);
        if !self.scheduled.load(Ordering::SeqCst) {
            let wake = self.pacer.lock().on_event(Instant::now(), urgent);
            self.wake_at(wake);
        }
    }

    pub fn queued_bytes(&self) -> usize {
        self.queue.lock().bytes()
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

    /// Waits (at most `limit`) until the main thread has applied every event
    /// queued so far: a drain ended and nothing is queued. Background work
    /// that can wait starts after it (writing a kept chat at a turn's end:
    /// 2-8 ms of a core on two, which delayed the drain that shows the
    /// turn's end by as much). Without a main loop draining (unit tests, a
    /// Neovim busy elsewhere) the limit ends the wait.
    pub async fn settled(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a drain ending in between
            // still wakes this waiter.
            drained.as_mut().enable();
            if self.is_empty() && self.drain_started.lock().is_none() {
                return;
            }
            if tokio::time::timeout_at(deadline, drained).await.is_err() {
                return;
            }
        }
    }

    /// Called by the async-handle callback: returns true if the caller must
    /// schedule a drain (none is pending yet).
    pub fn claim_schedule(&self) -> bool {
        !self.scheduled.swap(true, Ordering::SeqCst)
    }

    /// Takes everything queued (tests).
    #[cfg(test)]
    pub fn take(&self) -> std::collections::VecDeque<UiEvent> {
        self.take_slice(usize::MAX).events
    }

    /// Takes queued events in order up to `budget` bytes (see
    /// `Queue::take_slice`). Main thread, inside the scheduled drain.
    pub fn take_slice(&self, budget: usize) -> Slice {
        self.scheduled.store(false, Ordering::SeqCst);
        let slice = self.queue.lock().take_slice(budget);
        self.space.notify_waiters();
        self.stats.drains.fetch_add(1, Ordering::Relaxed);
        self.stats
            .delivered
            .fetch_add(slice.events.len() as u64, Ordering::Relaxed);
        slice
    }

    /// Events wait for the next drain: the last one's budget left some (a
    /// backlog), or more came since. Work the view may put off (freezing
    /// highlights) waits until they are in.
    pub fn events_wait(&self) -> bool {
        !self.is_empty()
    }

    fn is_empty(&self) -> bool {
        self.queue.lock().is_empty()
    }

    /// Start of a drain (main thread): returns its byte budget.
    pub fn begin_drain(&self) -> usize {
        let now = Instant::now();
        *self.drain_started.lock() = Some(now);
        self.pacer.lock().begin(now, main_thread_cpu())
    }

    /// End of a drain that delivered `bytes` (main thread), `behind` when
    /// its budget left events it found (`Slice::behind`): asks for the next
    /// wake-up when events are left.
    pub fn end_drain(&self, bytes: usize, behind: bool) {
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
            .end(now, main_thread_cpu(), bytes, elapsed, remaining, behind);
        if let Some(at) = next {
            self.wake_at(Wake::At(at));
        }
        self.drained.notify_waiters();
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

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::bridge::pacing::MIN_FRAME;
    use crate::bridge::queue::fixtures::{added, appended};

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

    #[test]
    fn settled_waits_for_a_drain_that_leaves_nothing_queued() {
        let b = Bridge::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            // Nothing queued, no drain running: settled at once.
            b.settled(Duration::from_secs(60)).await;
            b.push(appended(1, 0, "x"));
            // Queued and never drained: only the limit ends the wait.
            let short = Duration::from_millis(5);
            let long = Duration::from_secs(60);
            assert!(tokio::time::timeout(short, b.settled(long)).await.is_err());
            b.settled(short).await;
            // Settled when the drain that took everything ends, not before.
            let done = std::cell::Cell::new(false);
            let waiter = async {
                b.settled(long).await;
                done.set(true);
            };
            let drainer = async {
                tokio::task::yield_now().await;
                b.begin_drain();
                assert_eq!(b.take_slice(usize::MAX).events.len(), 1);
                // Nothing is queued now, but the view is still applying it.
                assert!(tokio::time::timeout(short, b.settled(long)).await.is_err());
                assert!(!done.get(), "settled while the drain was still running");
                b.end_drain(1, false);
            };
            tokio::time::timeout(Duration::from_secs(10), async {
                tokio::join!(waiter, drainer)
            })
            .await
            .expect("the end of the drain ends the wait");
            assert!(done.get());
        });
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
            level: crate::model::entries::NoticeLevel::Info,
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
                    card: Box::new(crate::model::events::CardMeta::of(&tc, Default::default())),
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
        b.end_drain(1, false);
        // Events right after the drain wait for the next frame.
        b.push(appended(1, 0, "b"));
        b.push(appended(1, 0, "c"));
        assert_eq!(wakes.lock().len(), 1);
        assert!(b.events_wait(), "the view's deferred work waits for them");
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
        b.end_drain(slice.bytes, slice.behind);
        assert!(!b.events_wait());
    }

    #[test]
    fn a_turn_end_wakes_at_once_inside_a_frame_with_its_whole_batch() {
        let b: &'static Bridge = Box::leak(Box::new(Bridge::new()));
        let wakes = Arc::new(parking_lot::Mutex::new(0usize));
        let w = wakes.clone();
        b.set_waker(move || *w.lock() += 1);
        b.push(appended(1, 0, "a"));
        assert!(b.claim_schedule());
        let budget = b.begin_drain();
        b.take_slice(budget);
        b.end_drain(1, false);
        // Text inside the frame waits for its end.
        b.push(appended(1, 0, "b"));
        assert_eq!(*wakes.lock(), 1);
        // The turn's end (with the status that comes with it) does not.
        b.push_all(
            1,
            vec![
                ThreadEvent::TurnEnded {
                    turn: 1,
                    stop_reason: "end_turn".into(),
                    duration_ms: 3,
                    usage: None,
                },
                ThreadEvent::Status {
                    state: crate::model::events::TurnState::Idle,
                    detail: String::new(),
                    sign_in: false,
                },
            ],
        );
        assert_eq!(*wakes.lock(), 2, "woken at once, not at the frame's end");
        assert!(b.claim_schedule());
        let events = b.take_slice(b.begin_drain()).events;
        assert_eq!(
            events.len(),
            3,
            "the text, the turn's end and its status: {events:?}"
        );
        assert!(matches!(
            events[2],
            UiEvent::Thread {
                event: ThreadEvent::Status { .. },
                ..
            }
        ));
    }
}
