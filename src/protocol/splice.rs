//! Large strings in the client's answers, written without the SDK's copy.
//!
//! The SDK writes an answer by serializing its whole JSON value into a
//! fresh string: for a 10 MB `fs/read_text_file` answer that is a second
//! escape pass into a buffer that doubles as it grows (12-18 ms, and 16 MB
//! of new pages), between the text being ready and its first byte reaching
//! the agent. Instead, a large string is escaped once, into a buffer of its
//! final size, and the answer carries a token in its place; the agent's
//! stdin writer (`SplicingWriter`) writes the escaped text where the token
//! is. The agent reads the same bytes either way (measured with
//! `make bench`, fs10mb: the round trip 0.91x).
//!
//! A token is `"acp-splice-<nonce>-<n>"`: the nonce is random per
//! connection and never leaves the process, so no text an agent sends can
//! name one, and a connection's writer splices only its own.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

/// Strings shorter than this are left to the SDK (the copy is cheap).
pub const SPLICE_MIN_BYTES: usize = 1 << 20;
/// Escaped texts waiting for their answer to be written, at most; above,
/// strings are left to the SDK.
const PENDING_MAX_BYTES: usize = 256 << 20;
/// An answer that was never written (the agent stopped reading) is
/// forgotten after this long.
const PENDING_MAX_AGE: Duration = Duration::from_secs(60);

/// One connection's escaped texts, by token. Its writer is the only one
/// that reads them: a token names nothing on another connection.
pub struct Splices {
    /// `"acp-splice-<nonce>-`, the quote included; empty when the process
    /// has no randomness (then nothing is spliced).
    prefix: Vec<u8>,
    next: AtomicU64,
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    texts: HashMap<u64, (Instant, Vec<u8>)>,
    bytes: usize,
}

impl Splices {
    pub fn new() -> Arc<Self> {
        let mut nonce = [0u8; 16];
        let prefix = match getrandom::fill(&mut nonce) {
            Ok(()) => {
                let hex: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
                format!("\"acp-splice-{hex}-").into_bytes()
            }
            Err(_) => Vec::new(),
        };
        Arc::new(Self {
            prefix,
            next: AtomicU64::new(1),
            pending: Mutex::new(Pending::default()),
        })
    }

    /// An answer's result with its large top-level strings (a read's
    /// `content`) as tokens that this connection's `SplicingWriter`
    /// replaces by the escaped texts.
    pub fn result(&self, mut result: Value) -> Value {
        if let Value::Object(fields) = &mut result {
            for v in fields.values_mut() {
                if matches!(v, Value::String(s) if s.len() >= SPLICE_MIN_BYTES) {
                    if let Value::String(s) = std::mem::take(v) {
                        *v = self.string_value(s);
                    }
                }
            }
        }
        result
    }

    /// `text` as a JSON value: a large one as a token.
    pub fn string_value(&self, text: String) -> Value {
        if text.len() < SPLICE_MIN_BYTES || self.prefix.is_empty() {
            return Value::String(text);
        }
        {
            // Room for it (answers never written are forgotten first).
            let mut p = self.pending.lock();
            let now = Instant::now();
            let old: Vec<u64> = p
                .texts
                .iter()
                .filter(|(_, (at, _))| now.duration_since(*at) > PENDING_MAX_AGE)
                .map(|(id, _)| *id)
                .collect();
            for k in old {
                if let Some((_, t)) = p.texts.remove(&k) {
                    p.bytes -= t.len();
                }
            }
            if p.bytes + text.len() > PENDING_MAX_BYTES {
                return Value::String(text);
            }
        }
        let escaped = escape(&text);
        drop(text);
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        {
            let mut p = self.pending.lock();
            p.bytes += escaped.len();
            p.texts.insert(id, (Instant::now(), escaped));
        }
        let prefix = std::str::from_utf8(&self.prefix[1..]).unwrap_or_default();
        Value::String(format!("{prefix}{id}"))
    }

    /// The escaped text of the token that starts `buf` (at its opening
    /// quote), and the token's length with both quotes. None when `buf`
    /// does not start with a whole token of this connection or its text is
    /// not pending.
    fn take_token(&self, buf: &[u8]) -> Option<(Vec<u8>, usize)> {
        let rest = buf.strip_prefix(self.prefix.as_slice())?;
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || rest.get(digits) != Some(&b'"') {
            return None;
        }
        let id: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
        let mut p = self.pending.lock();
        let (_, text) = p.texts.remove(&id)?;
        p.bytes -= text.len();
        Some((text, self.prefix.len() + digits + 1))
    }
}

/// `text` as a JSON string (quotes included), escaped as serde_json
/// escapes it. Eight bytes at a time while none needs escaping: a read's
/// text is mostly plain (measured: 10 MB in 12-14 ms, serde_json's
/// `to_writer` into the same buffer 21-24 ms on a loaded 2-core machine).
pub fn escape(text: &str) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Whether any byte of `w` is below 0x20, a quote or a backslash
    // (bytes >= 0x80 count as plain: their high bit masks the tests).
    fn special(w: u64) -> bool {
        let below = w.wrapping_sub(ONES * 0x20) & !w;
        let q = w ^ (ONES * u64::from(b'"'));
        let quote = q.wrapping_sub(ONES) & !q;
        let b = w ^ (ONES * u64::from(b'\\'));
        let backslash = b.wrapping_sub(ONES) & !b;
        (below | quote | backslash) & HIGH != 0
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 8 + 2);
    out.push(b'"');
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        if let Some(chunk) = bytes.get(i..i + 8) {
            let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
            if !special(w) {
                i += 8;
                continue;
            }
        }
        let c = bytes[i];
        if c < 0x20 || c == b'"' || c == b'\\' {
            out.extend_from_slice(&bytes[start..i]);
            match c {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0c => out.extend_from_slice(b"\\f"),
                _ => out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(c >> 4)],
                    HEX[usize::from(c & 15)],
                ]),
            }
            start = i + 1;
        }
        i += 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
    out
}

/// Writes what it is given, but a token of `string_value` (with its
/// quotes) as the escaped text it stands for. The SDK writes each answer
/// line in one `write_all`, so a token is always whole in the rest of the
/// buffer it is offered.
pub struct SplicingWriter<W> {
    inner: W,
    splices: Arc<Splices>,
    /// The escaped text being written, how much of it is written, and the
    /// length of the token it replaces in the caller's buffer.
    active: Option<(Vec<u8>, usize, usize)>,
}

impl<W> SplicingWriter<W> {
    pub fn new(inner: W, splices: Arc<Splices>) -> Self {
        Self {
            inner,
            splices,
            active: None,
        }
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for SplicingWriter<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.active.is_none() {
            let prefix = &this.splices.prefix;
            if prefix.is_empty() {
                return Pin::new(&mut this.inner).poll_write(cx, buf);
            }
            match memchr::memmem::find(buf, prefix) {
                Some(0) => match this.splices.take_token(buf) {
                    Some((text, token_len)) => this.active = Some((text, 0, token_len)),
                    // Not ours after all: written as it is.
                    None => return Pin::new(&mut this.inner).poll_write(cx, &buf[..1]),
                },
                Some(at) => return Pin::new(&mut this.inner).poll_write(cx, &buf[..at]),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        let Some((text, written, token_len)) = this.active.as_mut() else {
            return Poll::Ready(Ok(0));
        };
        while *written < text.len() {
            match Pin::new(&mut this.inner).poll_write(cx, &text[*written..]) {
                Poll::Ready(Ok(0)) => {
                    this.active = None;
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => {
                    this.active = None;
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        let consumed = *token_len;
        this.active = None;
        Poll::Ready(Ok(consumed))
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

    fn answer(content: Value) -> String {
        serde_json::to_string(
            &serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": {"content": content}}),
        )
        .unwrap()
    }

    fn big_text() -> String {
        let mut s = String::from("first \"quoted\" line\twith a tab\n");
        while s.len() < SPLICE_MIN_BYTES {
            s.push_str("é and \\ and \u{1} and a line\n");
        }
        s
    }

    #[tokio::test]
    async fn a_large_string_reaches_the_agent_as_the_sdk_would_write_it() {
        let splices = Splices::new();
        let text = big_text();
        let expected = answer(Value::String(text.clone()));
        let result = splices.result(serde_json::json!({ "content": text }));
        let token = result["content"].as_str().unwrap().to_owned();
        assert!(token.len() < 100, "the answer carries a token");
        let line = answer(result["content"].clone());
        let mut w = SplicingWriter::new(Trickle::new(4093), splices.clone());
        // Two answers in a row, the second without a token.
        w.write_all(format!("{line}\n{{\"id\":8}}\n").as_bytes())
            .await
            .unwrap();
        assert_eq!(
            String::from_utf8(w.inner.out).unwrap(),
            format!("{expected}\n{{\"id\":8}}\n")
        );
        // Written once: the same token again is not replaced.
        let mut again = SplicingWriter::new(Vec::new(), splices.clone());
        again
            .write_all(answer(Value::String(token.clone())).as_bytes())
            .await
            .unwrap();
        assert!(String::from_utf8(again.inner).unwrap().contains(&token));
    }

    proptest::proptest! {
        #[test]
        fn escaped_as_serde_json_escapes(text in "(?s).{0,64}", plain in "[a-z ]{0,20}") {
            // Plain runs around it: the eight-byte steps and the byte steps.
            let text = format!("{plain}{text}{plain}");
            proptest::prop_assert_eq!(escape(&text), serde_json::to_vec(&text).unwrap());
        }
    }

    #[test]
    fn every_byte_that_needs_escaping_at_every_place_of_a_word() {
        for c in (0u8..0x80).chain([0xc3]) {
            for at in 0..9 {
                let mut bytes = b"abcdefghijklmnop".to_vec();
                bytes[at] = c;
                if c == 0xc3 {
                    bytes.insert(at + 1, 0xa9);
                }
                let text = String::from_utf8(bytes).unwrap();
                assert_eq!(
                    escape(&text),
                    serde_json::to_vec(&text).unwrap(),
                    "{text:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn small_strings_and_tokens_of_other_connections_are_left_alone() {
        let (ours, theirs) = (Splices::new(), Splices::new());
        assert_eq!(
            ours.result(serde_json::json!({ "content": "small" })),
            serde_json::json!({ "content": "small" })
        );
        // A token of another connection, one never issued, and text that
        // only looks like one: written unchanged, the pending text kept.
        let other = theirs.string_value(big_text());
        let never = format!("{}999999", std::str::from_utf8(&ours.prefix[1..]).unwrap());
        for fake in [
            other.as_str().unwrap().to_owned(),
            never,
            "acp-splice-00112233445566778899aabbccddeeff-1".to_owned(),
        ] {
            let line = answer(Value::String(fake.clone()));
            let mut w = SplicingWriter::new(Vec::new(), ours.clone());
            w.write_all(line.as_bytes()).await.unwrap();
            assert_eq!(String::from_utf8(w.inner).unwrap(), line);
        }
        assert_eq!(theirs.pending.lock().texts.len(), 1);
    }
}
