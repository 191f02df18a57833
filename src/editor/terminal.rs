//! State of the `terminal/*` commands of one chat. The processes themselves
//! are Neovim jobs (started and killed by lua/acp/editor/terminal.lua); this keeps
//! their output within the agent's byte limit, their exit status, and the
//! `wait_for_exit` calls still waiting.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;
use tokio::sync::oneshot;

use crate::config::DEFAULT_TERMINAL_OUTPUT_CAP;
use crate::model::entries::TermExit;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

impl ExitStatus {
    /// Neovim reports a job killed by signal N as exit code 128 + N.
    pub fn from_job_code(code: i64) -> Self {
        if code > 128 && code <= 128 + 64 {
            Self {
                exit_code: None,
                signal: Some(signal_name((code - 128) as i32)),
            }
        } else {
            Self {
                exit_code: Some(code.max(0) as u32),
                signal: None,
            }
        }
    }

    pub fn describe(&self) -> String {
        self.to_model().describe()
    }

    /// The exit as the chat's model keeps it for the cards.
    pub fn to_model(&self) -> TermExit {
        TermExit {
            code: self.exit_code.map(i64::from),
            signal: self.signal.clone(),
        }
    }
}

pub fn signal_name(n: i32) -> String {
    match n {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        3 => "SIGQUIT".into(),
        6 => "SIGABRT".into(),
        9 => "SIGKILL".into(),
        13 => "SIGPIPE".into(),
        14 => "SIGALRM".into(),
        15 => "SIGTERM".into(),
        n => format!("SIG{n}"),
    }
}

/// The most an agent's own `outputByteLimit` can make the client keep.
pub const MAX_OUTPUT_LIMIT: usize = 64 << 20;

/// Output kept within a byte limit, dropping from the start on a UTF-8
/// character boundary. Memory stays within the limit whatever the command
/// prints: a ring buffer, so dropping the head moves nothing.
#[derive(Debug)]
pub struct OutputBuffer {
    bytes: VecDeque<u8>,
    limit: usize,
    pub truncated: bool,
}

impl Default for OutputBuffer {
    fn default() -> Self {
        Self::new(None)
    }
}

impl OutputBuffer {
    /// The agent's `outputByteLimit`, else [`DEFAULT_TERMINAL_OUTPUT_CAP`].
    pub fn new(limit: Option<usize>) -> Self {
        Self::with_cap(limit, DEFAULT_TERMINAL_OUTPUT_CAP)
    }

    /// The agent's `outputByteLimit` when it gives one (up to
    /// `MAX_OUTPUT_LIMIT`), else the configured default `cap`.
    pub fn with_cap(limit: Option<usize>, cap: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            limit: limit.map_or(cap, |l| l.min(MAX_OUTPUT_LIMIT)),
            truncated: false,
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        let limit = self.limit;
        let mut dropped = false;
        // A chunk larger than the limit: only its tail can be kept.
        let data = if data.len() > limit {
            self.bytes.clear();
            dropped = true;
            &data[data.len() - limit..]
        } else {
            data
        };
        let over = (self.bytes.len() + data.len()).saturating_sub(limit);
        if over > 0 {
            self.bytes.drain(..over);
            dropped = true;
        }
        self.bytes.extend(data);
        if dropped {
            self.truncated = true;
            // Never start inside a multi-byte character (at most 3
            // continuation bytes follow a character's first byte).
            for _ in 0..3 {
                match self.bytes.front() {
                    Some(b) if b & 0b1100_0000 == 0b1000_0000 => {
                        self.bytes.pop_front();
                    }
                    _ => break,
                }
            }
        }
    }

    pub fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        if b.is_empty() {
            return String::from_utf8_lossy(a).into_owned();
        }
        let mut all = Vec::with_capacity(a.len() + b.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        String::from_utf8_lossy(&all).into_owned()
    }

    /// Bytes kept (tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The byte limit in force (tests).
    #[cfg(test)]
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes allocated for the kept output (tests).
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }
}

pub struct Terminal {
    pub output: OutputBuffer,
    pub exit: Option<ExitStatus>,
    pub pid: Option<u32>,
    waiters: Vec<oneshot::Sender<ExitStatus>>,
}

pub struct Terminals {
    map: HashMap<String, Terminal>,
    next: u64,
    output_cap: usize,
}

impl Default for Terminals {
    fn default() -> Self {
        Self {
            map: HashMap::new(),
            next: 0,
            output_cap: DEFAULT_TERMINAL_OUTPUT_CAP,
        }
    }
}

impl Terminals {
    /// The most output kept of each terminal created from now on (the
    /// agent's `outputByteLimit` applies when smaller).
    pub fn set_output_cap(&mut self, cap: usize) {
        self.output_cap = cap;
    }

    /// A terminal whose output is kept within `limit` (the agent's
    /// `outputByteLimit`) and the output cap.
    pub fn create(&mut self, limit: Option<usize>) -> String {
        self.next += 1;
        let id = format!("term-{}", self.next);
        self.map.insert(
            id.clone(),
            Terminal {
                output: OutputBuffer::with_cap(limit, self.output_cap),
                exit: None,
                pid: None,
                waiters: Vec::new(),
            },
        );
        id
    }

    pub fn get(&self, id: &str) -> Result<&Terminal, String> {
        self.map
            .get(id)
            .ok_or_else(|| format!("unknown terminal id `{id}`"))
    }

    pub fn get_mut(&mut self, id: &str) -> Result<&mut Terminal, String> {
        self.map
            .get_mut(id)
            .ok_or_else(|| format!("unknown terminal id `{id}`"))
    }

    pub fn output(&mut self, id: &str, data: &[u8]) {
        if let Some(t) = self.map.get_mut(id) {
            t.output.push(data);
        }
    }

    /// Records the exit and answers every waiter.
    pub fn exited(&mut self, id: &str, status: ExitStatus) {
        if let Some(t) = self.map.get_mut(id) {
            for w in t.waiters.drain(..) {
                let _ = w.send(status.clone());
            }
            t.exit = Some(status);
        }
    }

    /// A receiver that resolves on exit (at once if it already exited).
    pub fn wait(&mut self, id: &str) -> Result<oneshot::Receiver<ExitStatus>, String> {
        let t = self.get_mut(id)?;
        let (tx, rx) = oneshot::channel();
        match &t.exit {
            Some(s) => {
                let _ = tx.send(s.clone());
            }
            None => t.waiters.push(tx),
        }
        Ok(rx)
    }

    /// Forgets the terminal. Waiters still pending get `status` (the caller
    /// kills the process): a release never leaves a wait hanging.
    pub fn release(&mut self, id: &str, status: ExitStatus) -> Result<Terminal, String> {
        let mut t = self
            .map
            .remove(id)
            .ok_or_else(|| format!("unknown terminal id `{id}`"))?;
        for w in t.waiters.drain(..) {
            let _ = w.send(t.exit.clone().unwrap_or_else(|| status.clone()));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_limit_drops_from_start_on_char_boundary() {
        let mut b = OutputBuffer::new(Some(5));
        b.push("ab".as_bytes());
        assert!(!b.truncated);
        b.push("é漢x".as_bytes()); // a b é(2) 漢(3) x(1) = 8 bytes
        assert!(b.truncated);
        // Cutting 3 bytes would land inside "é": the cut moves past it.
        assert_eq!(b.text(), "漢x");
        let mut no_limit = OutputBuffer::new(None);
        no_limit.push(&[b'x'; 10_000]);
        assert_eq!(no_limit.text().len(), 10_000);
        assert!(!no_limit.truncated);
    }

    #[test]
    fn no_agent_limit_keeps_a_capped_tail() {
        assert_eq!(OutputBuffer::new(None).limit(), DEFAULT_TERMINAL_OUTPUT_CAP);
        assert_eq!(OutputBuffer::new(Some(10)).limit(), 10);
        // The agent's own limit is honoured up to a hard maximum.
        assert_eq!(
            OutputBuffer::new(Some(usize::MAX)).limit(),
            MAX_OUTPUT_LIMIT
        );
        assert_eq!(OutputBuffer::with_cap(Some(100), 8).limit(), 100);
        assert_eq!(OutputBuffer::with_cap(None, 8).limit(), 8);

        // A chunk larger than the limit keeps its tail, on a char boundary.
        let mut b = OutputBuffer::with_cap(None, 4);
        b.push("abc漢字".as_bytes()); // 9 bytes; the last 4 start inside 漢
        assert_eq!(b.text(), "字");
        assert!(b.truncated);

        let mut zero = OutputBuffer::new(Some(0));
        zero.push(b"");
        assert!(!zero.truncated);
        zero.push(b"x");
        assert!(zero.truncated && zero.text().is_empty());

        let mut t = Terminals::default();
        t.set_output_cap(6);
        let id = t.create(None);
        t.output(&id, b"1234");
        t.output(&id, b"5678");
        let out = &t.get(&id).unwrap().output;
        assert_eq!((out.text().as_str(), out.truncated), ("345678", true));
        let small = t.create(Some(2));
        assert_eq!(t.get(&small).unwrap().output.limit(), 2);
    }

    #[test]
    fn a_300_mb_flood_keeps_memory_flat() {
        let mut b = OutputBuffer::new(None);
        let mut chunk = vec![0u8; 64 << 10];
        let total: usize = 300 << 20;
        let m = crate::testutil::alloc_meter::Meter::start();
        let t0 = std::time::Instant::now();
        let (mut max_len, mut max_cap) = (0, 0);
        for i in 0..total / chunk.len() {
            // Each chunk: a line naming it, then "é" to its end (so cuts
            // fall inside multi-byte characters).
            let head = format!("chunk {i}\n");
            chunk[..head.len()].copy_from_slice(head.as_bytes());
            for pair in chunk[head.len()..].chunks_mut(2) {
                pair.copy_from_slice(&"é".as_bytes()[..pair.len()]);
            }
            b.push(&chunk);
            max_len = max_len.max(b.len());
            max_cap = max_cap.max(b.capacity());
        }
        let peak = m.peak();
        println!(
            "300 MiB in 64 KiB chunks: {:?}, kept {} bytes, capacity {max_cap}, peak heap {peak}",
            t0.elapsed(),
            b.len()
        );
        assert!(max_len <= DEFAULT_TERMINAL_OUTPUT_CAP, "{max_len}");
        assert!(max_cap <= 2 * DEFAULT_TERMINAL_OUTPUT_CAP, "{max_cap}");
        assert!(
            peak <= 2 * DEFAULT_TERMINAL_OUTPUT_CAP + (64 << 10),
            "{peak}"
        );
        assert!(b.truncated);
        let text = b.text();
        assert!(!text.starts_with('\u{fffd}'), "starts inside a character");
        let last = total / chunk.len() - 1;
        assert!(text.contains(&format!("chunk {last}\n")));
        assert!(!text.contains(&format!("chunk {}\n", last - 16)));
    }

    #[test]
    fn split_multibyte_chunks_are_joined() {
        let mut b = OutputBuffer::new(None);
        let s = "🎉".as_bytes();
        b.push(&s[..2]);
        b.push(&s[2..]);
        assert_eq!(b.text(), "🎉");
    }

    #[test]
    fn exit_codes_and_signals() {
        assert_eq!(
            ExitStatus::from_job_code(0),
            ExitStatus {
                exit_code: Some(0),
                signal: None
            }
        );
        assert_eq!(ExitStatus::from_job_code(3).describe(), "exit code 3");
        assert_eq!(
            ExitStatus::from_job_code(143).signal.as_deref(),
            Some("SIGTERM")
        );
        assert_eq!(
            ExitStatus::from_job_code(137).describe(),
            "killed by SIGKILL"
        );
    }

    #[tokio::test]
    async fn release_answers_pending_waits() {
        let mut t = Terminals::default();
        let id = t.create(None);
        let rx = t.wait(&id).unwrap();
        let killed = ExitStatus {
            exit_code: None,
            signal: Some("SIGTERM".into()),
        };
        t.release(&id, killed.clone()).unwrap();
        assert_eq!(rx.await.unwrap(), killed);
        assert!(t.get(&id).is_err());
        assert!(t.wait("nope").unwrap_err().contains("unknown terminal id"));
    }

    #[tokio::test]
    async fn wait_after_exit_resolves_at_once() {
        let mut t = Terminals::default();
        let id = t.create(None);
        t.exited(&id, ExitStatus::from_job_code(0));
        assert_eq!(t.wait(&id).unwrap().await.unwrap().exit_code, Some(0));
    }
}
