//! State of the `terminal/*` commands of one chat. The processes themselves
//! are Neovim jobs (started and killed by lua/acp/terminal.lua); this keeps
//! their output within the agent's byte limit, their exit status, and the
//! `wait_for_exit` calls still waiting.

use std::collections::HashMap;

use serde::Serialize;
use tokio::sync::oneshot;

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
        match (&self.exit_code, &self.signal) {
            (_, Some(sig)) => format!("killed by {sig}"),
            (Some(c), None) => format!("exit code {c}"),
            (None, None) => "exited".into(),
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

/// Output kept within a byte limit, dropping from the start on a UTF-8
/// character boundary.
#[derive(Debug, Default)]
pub struct OutputBuffer {
    bytes: Vec<u8>,
    limit: Option<usize>,
    pub truncated: bool,
}

impl OutputBuffer {
    pub fn new(limit: Option<usize>) -> Self {
        Self {
            bytes: Vec::new(),
            limit,
            truncated: false,
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        if let Some(limit) = self.limit {
            if self.bytes.len() > limit {
                let mut cut = self.bytes.len() - limit;
                // Never start inside a multi-byte character.
                while cut < self.bytes.len() && (self.bytes[cut] & 0b1100_0000) == 0b1000_0000 {
                    cut += 1;
                }
                self.bytes.drain(..cut);
                self.truncated = true;
            }
        }
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

pub struct Terminal {
    pub command_line: String,
    pub output: OutputBuffer,
    pub exit: Option<ExitStatus>,
    pub pid: Option<u32>,
    waiters: Vec<oneshot::Sender<ExitStatus>>,
}

#[derive(Default)]
pub struct Terminals {
    map: HashMap<String, Terminal>,
    next: u64,
}

impl Terminals {
    pub fn create(&mut self, command_line: String, limit: Option<usize>) -> String {
        self.next += 1;
        let id = format!("term-{}", self.next);
        self.map.insert(
            id.clone(),
            Terminal {
                command_line,
                output: OutputBuffer::new(limit),
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

    pub fn running_pids(&self) -> Vec<u32> {
        self.map
            .values()
            .filter(|t| t.exit.is_none())
            .filter_map(|t| t.pid)
            .collect()
    }

    pub fn ids(&self) -> Vec<String> {
        self.map.keys().cloned().collect()
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
        let mut unlimited = OutputBuffer::new(None);
        unlimited.push(&[b'x'; 10_000]);
        assert_eq!(unlimited.text().len(), 10_000);
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
        let id = t.create("sleep 10".into(), None);
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
        let id = t.create("true".into(), None);
        t.exited(&id, ExitStatus::from_job_code(0));
        assert_eq!(t.wait(&id).unwrap().await.unwrap().exit_code, Some(0));
    }
}
