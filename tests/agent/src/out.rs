//! Stdout writer and the JSONL event log.
//!
//! The SDK queues outgoing messages in an unbounded channel and writes one
//! line per message with a flush after each. Both the SDK's stdio transport
//! and tokio's stdout hand every flush to a blocking thread, which caps a
//! flood of small chunks at a few thousand lines a second. So stdout here is a
//! buffer drained by one dedicated thread: a line costs a memcpy, and the
//! thread writes whatever accumulated in one syscall.
//!
//! Back-pressure: the buffer is bounded, so a client that stops reading stalls
//! the SDK's writer. The SDK's own queue is unbounded, though, so scripted
//! steps also wait (`throttle`) while too many of the lines they queued are
//! not written yet; a flood then runs at the client's pace instead of piling
//! up in memory.

use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

/// Bytes buffered for the writer thread before `poll_write` returns Pending.
const BUFFER_CAP: usize = 256 * 1024;
/// Lines queued by scripted steps but not yet written before steps wait.
const MAX_IN_FLIGHT: u64 = 512;

struct Pending {
    buf: Vec<u8>,
    waker: Option<Waker>,
}

struct Shared {
    pending: Mutex<Pending>,
    ready: Condvar,
}

/// Counts what was queued against what reached stdout.
pub struct Output {
    sent: AtomicU64,
    written: watch::Receiver<u64>,
    shared: Arc<Shared>,
}

/// The `AsyncWrite` end given to the SDK transport.
pub struct StdoutWriter {
    shared: Arc<Shared>,
}

impl Output {
    pub fn start() -> (Arc<Output>, StdoutWriter) {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending {
                buf: Vec::new(),
                waker: None,
            }),
            ready: Condvar::new(),
        });
        let (written_tx, written) = watch::channel(0u64);
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("stdout-writer".into())
            .spawn(move || writer_thread(thread_shared, written_tx))
            .expect("spawn stdout writer thread");
        (
            Arc::new(Output {
                sent: AtomicU64::new(0),
                written,
                shared: shared.clone(),
            }),
            StdoutWriter { shared },
        )
    }

    /// Record one line handed to the SDK (every JSON-RPC message is a line).
    pub fn note_sent(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    fn in_flight(&self, written: u64) -> u64 {
        self.sent.load(Ordering::Relaxed).saturating_sub(written)
    }

    /// Wait until the writer has caught up enough to queue another line.
    pub async fn throttle(&self) {
        if self.in_flight(*self.written.borrow()) < MAX_IN_FLIGHT {
            return;
        }
        let mut rx = self.written.clone();
        let _ = rx.wait_for(|w| self.in_flight(*w) < MAX_IN_FLIGHT).await;
    }

    /// Appends ready-made JSON-RPC lines straight to the stdout buffer,
    /// bypassing the SDK's per-message serialisation (benchmark floods).
    /// Callers `drain` first so earlier SDK messages keep their order.
    pub async fn write_raw(&self, bytes: &[u8], lines: u64) {
        loop {
            {
                let mut pending = self.shared.pending.lock().unwrap();
                if pending.buf.len() < BUFFER_CAP {
                    pending.buf.extend_from_slice(bytes);
                    self.sent.fetch_add(lines, Ordering::Relaxed);
                    self.shared.ready.notify_one();
                    return;
                }
            }
            // Full: wait for the writer thread to make progress.
            let mut rx = self.written.clone();
            rx.borrow_and_update();
            let _ = tokio::time::timeout(Duration::from_millis(5), rx.changed()).await;
        }
    }

    /// Wait (bounded) until every queued line reached stdout, so that a
    /// scripted crash or the exit at EOF does not swallow the last updates.
    pub async fn drain(&self, limit: Duration) {
        let mut rx = self.written.clone();
        let _ = tokio::time::timeout(limit, rx.wait_for(|w| self.in_flight(*w) == 0)).await;
    }
}

fn writer_thread(shared: Arc<Shared>, written_tx: watch::Sender<u64>) {
    let mut stdout = std::io::stdout().lock();
    let mut chunk = Vec::new();
    let mut total_lines = 0u64;
    let mut broken = false;
    loop {
        {
            let mut pending = shared.pending.lock().unwrap();
            while pending.buf.is_empty() {
                pending = shared.ready.wait(pending).unwrap();
            }
            // Ping-pong the two buffers so neither is reallocated per round.
            std::mem::swap(&mut pending.buf, &mut chunk);
            if let Some(waker) = pending.waker.take() {
                waker.wake();
            }
        }
        // After the client closed our stdout keep consuming, so nothing
        // waiting on the counter blocks; the process ends at stdin EOF.
        if !broken
            && stdout
                .write_all(&chunk)
                .and_then(|()| stdout.flush())
                .is_err()
        {
            broken = true;
        }
        // Raw newlines only terminate messages (JSON escapes them in strings).
        total_lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        written_tx.send_replace(total_lines);
        chunk.clear();
    }
}

impl tokio::io::AsyncWrite for StdoutWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut pending = self.shared.pending.lock().unwrap();
        if pending.buf.len() >= BUFFER_CAP {
            pending.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        // The writer thread only sleeps on an empty buffer; waking it per
        // line would cost a futex syscall per line.
        let was_empty = pending.buf.is_empty();
        pending.buf.extend_from_slice(buf);
        drop(pending);
        if was_empty {
            self.shared.ready.notify_one();
        }
        Poll::Ready(Ok(buf.len()))
    }

    // Handing the bytes to the writer thread is the flush: waiting for the
    // syscall here would bring back the per-line round trip.
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Optional JSONL log (env `ACP_TEST_AGENT_LOG`) that tests read to assert
/// what the client sent. Appended, one unbuffered write per event, so a test
/// can read it while the agent runs or after it was killed.
pub struct Log(Option<Mutex<std::fs::File>>);

impl Log {
    pub fn from_env() -> Log {
        let Some(path) = std::env::var_os("ACP_TEST_AGENT_LOG").filter(|p| !p.is_empty()) else {
            return Log(None);
        };
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            Ok(file) => Log(Some(Mutex::new(file))),
            Err(e) => {
                eprintln!(
                    "acp-test-agent: cannot open log {}: {e}",
                    path.to_string_lossy()
                );
                std::process::exit(2);
            }
        }
    }

    pub fn event(&self, event: Value) {
        if let Some(file) = &self.0 {
            let mut line = serde_json::to_vec(&event).unwrap_or_default();
            line.push(b'\n');
            let _ = file.lock().unwrap().write_all(&line);
        }
    }
}
