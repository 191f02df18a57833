//! The one crossing from background threads to Neovim's main thread.
//!
//! Producers (tokio tasks) push `UiEvent`s into a queue and poke a libuv async
//! handle. Its callback only schedules a drain with `vim.schedule`: calling
//! the API inside the libuv callback itself can re-enter the loop and abort
//! Neovim. The drain takes everything queued in one go, so consecutive text
//! chunks of one message arrive as one append. Nothing is dropped; producers
//! that run far ahead wait (asynchronously) until the main thread catches up.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::thread::ThreadEvent;

/// Above this many queued bytes, producers wait for a drain (back-pressure).
const HIGH_WATER_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub enum UiEvent {
    Thread { thread: u64, event: ThreadEvent },
    /// A permission request waiting for the user's choice.
    Permission { thread: u64, request: u64, payload: serde_json::Value },
    /// A permission request that no longer needs an answer (turn cancelled).
    PermissionDone { thread: u64, request: u64 },
    Notify { level: &'static str, message: String },
}

impl UiEvent {
    fn weight(&self) -> usize {
        match self {
            UiEvent::Thread { event: ThreadEvent::Appended { text, .. }, .. } => text.len(),
            UiEvent::Thread { event: ThreadEvent::Added { lines, .. }, .. }
            | UiEvent::Thread { event: ThreadEvent::Replaced { lines, .. }, .. } => {
                lines.iter().map(|l| l.len() + 1).sum()
            }
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
            Some(UiEvent::Thread { thread: t0, event: last }),
            UiEvent::Thread { thread: t1, event: ThreadEvent::Appended { index: i1, text } },
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
        self.events.push_back(ev);
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

/// Counters for tests and benchmarks.
#[derive(Default)]
pub struct Stats {
    pub pushed: AtomicU64,
    pub drains: AtomicU64,
    pub delivered: AtomicU64,
    pub waits: AtomicU64,
}

pub struct Bridge {
    queue: Mutex<Queue>,
    /// True from the moment a drain is scheduled until it takes the queue.
    scheduled: AtomicBool,
    space: Notify,
    wake: OnceLock<Box<dyn Fn() + Send + Sync>>,
    pub stats: Stats,
}

impl Bridge {
    fn new() -> Self {
        Self {
            queue: Mutex::new(Queue::default()),
            scheduled: AtomicBool::new(false),
            space: Notify::new(),
            wake: OnceLock::new(),
            stats: Stats::default(),
        }
    }

    /// Sets the function that wakes the main thread (the libuv async send).
    pub fn set_waker(&self, wake: impl Fn() + Send + Sync + 'static) {
        let _ = self.wake.set(Box::new(wake));
    }

    /// Queues one event and wakes the main thread. Never blocks.
    pub fn push(&self, ev: UiEvent) {
        self.stats.pushed.fetch_add(1, Ordering::Relaxed);
        self.queue.lock().push(ev);
        if !self.scheduled.load(Ordering::SeqCst) {
            if let Some(wake) = self.wake.get() {
                wake();
            }
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
        self.scheduled.store(false, Ordering::SeqCst);
        let events = {
            let mut q = self.queue.lock();
            q.bytes = 0;
            std::mem::take(&mut q.events)
        };
        self.space.notify_waiters();
        self.stats.drains.fetch_add(1, Ordering::Relaxed);
        self.stats.delivered.fetch_add(events.len() as u64, Ordering::Relaxed);
        events
    }
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
    use crate::thread::EntryKind;

    fn appended(thread: u64, index: usize, text: &str) -> UiEvent {
        UiEvent::Thread { thread, event: ThreadEvent::Appended { index, text: text.into() } }
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
            event: ThreadEvent::Added { index: 0, kind: EntryKind::Agent, lines: vec!["x".into()] },
        });
        q.push(appended(1, 0, "y\nz"));
        assert_eq!(q.events.len(), 1);
        let UiEvent::Thread { event: ThreadEvent::Added { lines, .. }, .. } = &q.events[0] else {
            panic!()
        };
        assert_eq!(lines, &vec!["xy".to_string(), "z".to_string()]);
    }

    #[test]
    fn take_empties_queue_and_releases_waiting_producers() {
        let b = Bridge::new();
        b.push(appended(1, 0, &"x".repeat(HIGH_WATER_BYTES + 1)));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
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
    fn catch_turns_panic_into_error() {
        let r: Result<(), String> = catch("test", || panic!("boom"));
        assert!(r.unwrap_err().contains("boom"));
    }
}
