//! The protocol trace of one agent connection: a ring buffer of the last
//! JSON-RPC lines in both directions and of the agent's stderr, with
//! timestamps. Shown by `:AcpTrace` (one line per message) and saved by
//! `:AcpTraceSave` as JSONL with secrets redacted; the test agent's replay
//! mode plays a saved trace back as the agent side.

use std::collections::VecDeque;
use std::io::Write;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::redact;

/// One message is kept up to this many bytes (a longer one is cut and
/// marked), and all of them up to `TOTAL_MAX_BYTES`.
pub const MESSAGE_MAX_BYTES: usize = 256 << 10;
pub const TOTAL_MAX_BYTES: usize = 32 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Client to agent.
    Out,
    /// Agent to client.
    In,
    /// The agent's stderr.
    Stderr,
}

impl Dir {
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::Out => "out",
            Dir::In => "in",
            Dir::Stderr => "stderr",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Entry {
    /// Milliseconds since the epoch.
    pub at_ms: u64,
    pub dir: Dir,
    pub text: String,
    /// Bytes cut from the end of the message.
    pub cut: usize,
}

#[derive(Default)]
struct Ring {
    entries: VecDeque<Entry>,
    bytes: usize,
    /// Messages dropped from the front since the start.
    dropped: u64,
}

pub struct Trace {
    ring: Mutex<Ring>,
    max_messages: usize,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Trace {
    pub fn new(max_messages: usize) -> Arc<Self> {
        Arc::new(Self {
            ring: Mutex::new(Ring::default()),
            max_messages,
        })
    }

    /// Records one message (its trailing newline is not kept).
    pub fn record(&self, dir: Dir, line: &[u8]) {
        if self.max_messages == 0 {
            return;
        }
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let keep = line.len().min(MESSAGE_MAX_BYTES);
        let text = String::from_utf8_lossy(&line[..keep]).into_owned();
        self.keep(dir, text, line.len() - keep);
    }

    /// `record` for a line already read as text (the agent's lines): not
    /// validated again, and cut at a character boundary.
    pub fn record_text(&self, dir: Dir, line: &str) {
        if self.max_messages == 0 {
            return;
        }
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let keep = line.floor_char_boundary(line.len().min(MESSAGE_MAX_BYTES));
        self.keep(dir, line[..keep].to_owned(), line.len() - keep);
    }

    fn keep(&self, dir: Dir, text: String, cut: usize) {
        let entry = Entry {
            at_ms: now_ms(),
            dir,
            cut,
            text,
        };
        let mut ring = self.ring.lock();
        ring.bytes += entry.text.len();
        ring.entries.push_back(entry);
        while ring.entries.len() > self.max_messages || ring.bytes > TOTAL_MAX_BYTES {
            match ring.entries.pop_front() {
                Some(old) => {
                    ring.bytes -= old.text.len();
                    ring.dropped += 1;
                }
                None => break,
            }
        }
    }

    pub fn entries(&self) -> Vec<Entry> {
        self.ring.lock().entries.iter().cloned().collect()
    }

    /// Messages dropped to stay within the limit (tests).
    #[cfg(test)]
    pub fn dropped(&self) -> u64 {
        self.ring.lock().dropped
    }

    /// One readable line per message: time, direction, what it is, and its
    /// params folded onto the line (cut at `width` characters).
    pub fn lines(&self, width: usize) -> Vec<String> {
        let ring = self.ring.lock();
        let mut out = Vec::with_capacity(ring.entries.len() + 1);
        if ring.dropped > 0 {
            out.push(format!("… {} older messages dropped", ring.dropped));
        }
        for e in &ring.entries {
            out.push(summary_line(e, width));
        }
        out
    }

    /// The trace as JSONL (one `{t, ms, dir, msg | raw, cut?}` per line),
    /// secrets redacted, written to `path`: always a new file of mode 0600
    /// (written beside it, then renamed over it), so an existing file's
    /// mode, its other names (hard links) and whoever has it open never
    /// see the trace.
    pub fn save(&self, path: &std::path::Path) -> std::io::Result<usize> {
        use std::os::unix::fs::OpenOptionsExt;
        let entries = self.entries();
        let mut buf = Vec::new();
        for e in &entries {
            serde_json::to_writer(&mut buf, &saved_entry(e))?;
            buf.push(b'\n');
        }
        let name = path
            .file_name()
            .ok_or_else(|| std::io::Error::other(format!("{}: not a file name", path.display())))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        let written = (|| {
            let mut file = std::fs::OpenOptions::new()
                .create_new(true)
                .write(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(&buf)?;
            file.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(entries.len())
    }
}

/// The saved form of one entry.
pub fn saved_entry(e: &Entry) -> Value {
    let mut v = json!({
        "t": crate::log::iso_local(UNIX_EPOCH + std::time::Duration::from_millis(e.at_ms)),
        "ms": e.at_ms,
        "dir": e.dir.as_str(),
    });
    match (e.dir, serde_json::from_str::<Value>(&e.text)) {
        (Dir::In | Dir::Out, Ok(mut msg)) => {
            redact::redact_message(&mut msg);
            v["msg"] = msg;
        }
        // Cut to the size limit: no document to parse, but the same rules
        // apply to what is kept (an env value, a header, a secret flag's
        // argument), as it is read.
        (Dir::In | Dir::Out, Err(_)) => {
            v["raw"] = Value::String(redact::json_prefix::redact_json_prefix(&e.text))
        }
        _ => v["raw"] = Value::String(redact::redact_text(&e.text).into_owned()),
    }
    if e.cut > 0 {
        v["cut"] = json!(e.cut);
    }
    v
}

fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `HH:MM:SS.mmm → method #id {params}` and the like.
pub fn summary_line(e: &Entry, width: usize) -> String {
    let t = crate::log::iso_local(UNIX_EPOCH + std::time::Duration::from_millis(e.at_ms));
    let time = t.get(11..23).unwrap_or(&t).to_owned();
    let arrow = match e.dir {
        Dir::Out => "→",
        Dir::In => "←",
        Dir::Stderr => "!",
    };
    let body = match (e.dir, serde_json::from_str::<Value>(&e.text)) {
        (Dir::Stderr, _) => redact::redact_text(&e.text).into_owned(),
        (_, Ok(mut msg)) => {
            redact::redact_message(&mut msg);
            describe(&msg)
        }
        (_, Err(_)) if e.text.is_empty() => "(empty line)".to_owned(),
        (_, Err(_)) if e.cut > 0 => redact::json_prefix::redact_json_prefix(&e.text),
        (_, Err(_)) if e.text.trim_start().starts_with(['{', '[']) => {
            format!(
                "(not JSON) {}",
                redact::json_prefix::redact_json_prefix(&e.text)
            )
        }
        (_, Err(_)) => format!("(not JSON) {}", redact::redact_text(&e.text)),
    };
    let cut = if e.cut > 0 {
        format!(" [{} bytes cut]", e.cut)
    } else {
        String::new()
    };
    clip(&format!("{time} {arrow} {body}{cut}"), width)
}

fn describe(msg: &Value) -> String {
    let id = msg
        .get("id")
        .map(|id| format!(" #{id}"))
        .unwrap_or_default();
    let compact = |v: Option<&Value>| v.map(Value::to_string).unwrap_or_default();
    match (msg.get("method").and_then(Value::as_str), msg.get("error")) {
        (Some(method), _) => format!("{method}{id} {}", compact(msg.get("params"))),
        (None, Some(err)) => format!("error{id} {err}"),
        (None, None) if msg.get("result").is_some() => {
            format!("result{id} {}", compact(msg.get("result")))
        }
        _ => format!("(not JSON-RPC) {msg}"),
    }
}

/// An `AsyncWrite` that records every complete line written through it (the
/// client's messages to the agent) before passing the bytes on: the record
/// exists before the agent can answer. Nothing is copied: a write takes what
/// the inner writer takes, and the caller offers the rest again (the SDK's
/// line writer does); bytes already recorded are not recorded twice.
pub struct TracedWriter<W> {
    inner: W,
    trace: Arc<Trace>,
    partial: Vec<u8>,
    /// Bytes at the front of the next write that an earlier one recorded
    /// but the inner writer did not take (a 10 MB answer leaves the pipe
    /// in pieces: it is scanned once, not once per piece).
    ahead: usize,
    /// Also sees each complete line (the connection's bookkeeping).
    observer: Option<Box<dyn FnMut(&[u8]) + Send>>,
}

impl<W> TracedWriter<W> {
    pub fn new(inner: W, trace: Arc<Trace>) -> Self {
        Self {
            inner,
            trace,
            partial: Vec::new(),
            ahead: 0,
            observer: None,
        }
    }

    pub fn observe(mut self, f: impl FnMut(&[u8]) + Send + 'static) -> Self {
        self.observer = Some(Box::new(f));
        self
    }

    fn line(&mut self, line: &[u8]) {
        self.trace.record(Dir::Out, line);
        if let Some(f) = self.observer.as_mut() {
            f(line);
        }
    }

    fn note(&mut self, written: &[u8]) {
        let mut rest = written;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            if self.partial.is_empty() {
                self.line(&rest[..i]);
            } else {
                self.partial.extend_from_slice(&rest[..i]);
                let line = std::mem::take(&mut self.partial);
                self.line(&line);
            }
            rest = &rest[i + 1..];
        }
        // Bounded: a line without an end is kept up to the message cap.
        let room = MESSAGE_MAX_BYTES.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&rest[..rest.len().min(room)]);
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for TracedWriter<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        // Recorded first, then written: the part of `buf` not recorded yet.
        let seen = this.ahead.min(buf.len());
        if seen < buf.len() {
            this.note(&buf[seen..]);
        }
        let recorded = this.ahead.max(buf.len());
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                this.ahead = recorded - n.min(recorded);
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => {
                this.ahead = 0;
                Poll::Ready(Err(e))
            }
            Poll::Pending => {
                this.ahead = recorded;
                Poll::Pending
            }
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Trickle;
    use tokio::io::AsyncWriteExt;

    #[test]
    fn the_ring_keeps_the_last_messages() {
        let t = Trace::new(3);
        for i in 0..5 {
            t.record(Dir::In, format!("{{\"n\":{i}}}\n").as_bytes());
        }
        let e = t.entries();
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].text, "{\"n\":2}");
        assert_eq!(t.dropped(), 2);
        assert_eq!(t.lines(200)[0], "… 2 older messages dropped");
        let off = Trace::new(0);
        off.record(Dir::In, b"x");
        assert!(off.entries().is_empty());
    }

    #[test]
    fn long_messages_are_cut_and_marked() {
        let t = Trace::new(10);
        let big = vec![b'x'; MESSAGE_MAX_BYTES + 10];
        t.record(Dir::In, &big);
        let e = &t.entries()[0];
        assert_eq!(e.text.len(), MESSAGE_MAX_BYTES);
        assert_eq!(e.cut, 10);
        assert!(summary_line(e, 100).ends_with('…'));
        assert_eq!(saved_entry(e)["cut"], 10);
    }

    #[test]
    fn a_long_line_read_as_text_is_cut_between_characters() {
        let t = Trace::new(10);
        // "é" is two bytes: the limit falls inside the last one kept whole.
        let big = format!("x{}\n", "é".repeat(MESSAGE_MAX_BYTES / 2 + 5));
        t.record_text(Dir::In, &big);
        let e = &t.entries()[0];
        assert_eq!(e.text.len(), MESSAGE_MAX_BYTES - 1);
        assert!(e.text.ends_with('é'));
        assert_eq!(
            e.text.len() + e.cut,
            big.len() - 1,
            "all but the newline is kept or cut"
        );
    }

    #[test]
    fn summaries_name_each_kind_of_line() {
        let t = Trace::new(10);
        t.record(
            Dir::Out,
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
        );
        t.record(
            Dir::In,
            br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
        );
        t.record(
            Dir::In,
            br#"{"jsonrpc":"2.0","id":"u","error":{"code":-32601,"message":"no"}}"#,
        );
        t.record(Dir::In, b"not json");
        t.record(Dir::In, b"");
        t.record(Dir::In, br#"{"hello":1}"#);
        t.record(Dir::Stderr, b"warn: TOKEN=abc");
        t.record(Dir::Out, br#"{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"m","key":"secret"}}"#);
        let lines: Vec<String> = t
            .lines(300)
            .into_iter()
            .map(|l| l[13..].to_owned())
            .collect();
        assert_eq!(
            lines,
            vec![
                r#"→ initialize #0 {"protocolVersion":1}"#,
                r#"← result #0 {"protocolVersion":1}"#,
                r#"← error #"u" {"code":-32601,"message":"no"}"#,
                "← (not JSON) not json",
                "← (empty line)",
                r#"← (not JSON-RPC) {"hello":1}"#,
                "! warn: TOKEN=[redacted]",
                r#"→ authenticate #1 {"methodId":"m","key":"[redacted]"}"#,
            ]
        );
    }

    #[tokio::test]
    async fn the_writer_records_complete_lines_across_writes() {
        let t = Trace::new(10);
        let mut w = TracedWriter::new(Vec::<u8>::new(), t.clone());
        w.write_all(b"{\"a\":").await.unwrap();
        w.write_all(b"1}\n{\"b\":2}\n{\"c\"").await.unwrap();
        assert_eq!(t.entries().len(), 2);
        w.write_all(b":3}\n").await.unwrap();
        let texts: Vec<String> = t.entries().into_iter().map(|e| e.text).collect();
        assert_eq!(texts, vec!["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
        assert!(t.entries().iter().all(|e| e.dir == Dir::Out));
        assert_eq!(w.inner, b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
    }

    /// What the pipe does not take at once is offered again by the caller
    /// (not copied by the writer), and each line is recorded once, before
    /// any byte of it is written.
    #[tokio::test]
    async fn a_slow_pipe_gets_every_byte_and_each_line_is_recorded_once() {
        let t = Trace::new(10);
        let mut w = TracedWriter::new(Trickle::new(3), t.clone());
        let lines = [
            "{\"a\":1}\n{\"bb\":22}\n{\"c\"",
            ":3}\n",
            "{\"d\":\"long line\"}\n",
        ];
        let mut first = None;
        for l in lines {
            w.write_all(l.as_bytes()).await.unwrap();
            first.get_or_insert(t.entries().len());
        }
        w.flush().await.unwrap();
        // The first write's two complete lines, recorded once.
        assert_eq!(first, Some(2));
        let texts: Vec<String> = t.entries().into_iter().map(|e| e.text).collect();
        assert_eq!(
            texts,
            vec![
                "{\"a\":1}",
                "{\"bb\":22}",
                "{\"c\":3}",
                "{\"d\":\"long line\"}"
            ]
        );
        assert_eq!(w.inner.out, lines.concat().as_bytes());
        assert_eq!(w.ahead, 0);
    }

    /// A `session/new` over the size limit: the user's MCP env value and
    /// an `X-Api-Key` header are within the part kept.
    fn oversized_session_new() -> Vec<u8> {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {
            "cwd": "/p",
            "mcpServers": [
                {"name": "db", "command": "srv", "args": ["--api-key", "sk-ARG-0451"],
                 "env": [{"name": "DB_URL", "value": "postgres://u:pw-0451@h/db"}]},
                {"type": "http", "name": "api", "url": "https://x",
                 "headers": [{"name": "X-Api-Key", "value": "xk-HDR-0451"}]},
                {"name": "big", "command": "c", "args": ["a".repeat(MESSAGE_MAX_BYTES)], "env": []}
            ]
        }});
        msg.to_string().into_bytes()
    }

    #[test]
    fn a_message_over_the_size_limit_is_saved_redacted() {
        let t = Trace::new(10);
        let big = oversized_session_new();
        assert!(big.len() > MESSAGE_MAX_BYTES);
        t.record(Dir::Out, &big);
        // Cut inside the secret's own string too.
        let at = big.windows(4).position(|w| w == b"0451").unwrap();
        t.record(Dir::Out, &big[..at + 2]);
        let e = t.entries();
        assert!(e[0].cut > 0);
        let dir = std::env::temp_dir().join(format!("acp-trace-big-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        assert_eq!(t.save(&path).unwrap(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        for secret in ["0451", "sk-ARG", "pw-", "xk-HDR"] {
            assert!(!text.contains(secret), "`{secret}` saved");
        }
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let raw = first["raw"].as_str().unwrap();
        assert!(
            raw.starts_with(r#"{"id":1,"jsonrpc":"2.0","method":"session/new""#)
                || raw.contains("session/new")
        );
        assert!(
            raw.contains(r#"{"name":"X-Api-Key","value":"[redacted]"}"#),
            "{}",
            &raw[..400]
        );
        assert_eq!(first["cut"], json!(big.len() - MESSAGE_MAX_BYTES));
        // :AcpTrace shows it redacted as well.
        for e in &e {
            let line = summary_line(e, 100_000);
            assert!(
                !line.contains("0451") && !line.contains("xk-HDR"),
                "{}",
                &line[..300]
            );
        }
    }

    #[test]
    fn saving_over_an_existing_file_leaves_it_0600() {
        use std::os::unix::fs::PermissionsExt;
        let t = Trace::new(10);
        t.record(Dir::Stderr, b"hello");
        let dir = std::env::temp_dir().join(format!("acp-trace-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        std::fs::write(&path, "old text that is longer than the trace\n".repeat(10)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        // A hard link to the old file: it keeps the old text, never the trace.
        let link = dir.join("link");
        std::fs::hard_link(&path, &link).unwrap();
        assert_eq!(t.save(&path).unwrap(), 1);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        let text = std::fs::read_to_string(&path).unwrap();
        let linked = std::fs::read_to_string(&link).unwrap();
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(mode, 0o600);
        assert_eq!(text.lines().count(), 1);
        assert!(text.contains("hello"));
        assert!(
            !linked.contains("hello"),
            "the trace went into an inode another name shares"
        );
        assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
    }

    #[test]
    fn saving_redacts_and_keeps_one_message_per_line() {
        let t = Trace::new(10);
        t.record(Dir::In, br#"{"jsonrpc":"2.0","id":3,"method":"terminal/create","params":{"sessionId":"s","command":"env","env":[{"name":"A","value":"b"}]}}"#);
        t.record(Dir::Stderr, b"GEMINI_API_KEY=xyz");
        let dir = std::env::temp_dir().join(format!("acp-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        assert_eq!(t.save(&path).unwrap(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["dir"], "in");
        assert_eq!(lines[0]["msg"]["params"]["env"][0]["value"], "[redacted]");
        assert_eq!(lines[1]["raw"], "GEMINI_API_KEY=[redacted]");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
