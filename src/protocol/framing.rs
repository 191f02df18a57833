//! Framing of the agent's stdout: one JSON-RPC message per line. A line is
//! read within a cap, so an agent that never sends a newline cannot grow
//! memory without limit, and a line with invalid UTF-8 is repaired rather
//! than dropped, so one bad byte does not cost the message.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What [`read_line_capped`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRead {
    /// A line of this many bytes was appended to the buffer, its `\n`
    /// included (the last line of a stream may have none).
    Line(usize),
    /// The stream ended; nothing was appended.
    Eof,
    /// The line is longer than the cap. `len` bytes of it were consumed
    /// and only the first `cap` appended to the buffer; the rest is still
    /// unread, so the stream cannot be read on from a line start.
    TooLong { len: usize },
}

/// Reads one line into `buf` (appending, as `read_until(b'\n')` does),
/// keeping at most `cap` bytes of it: past the cap it stops and reports
/// [`LineRead::TooLong`]. Memory is bounded by the cap plus the reader's
/// own buffer, whatever the stream holds.
pub async fn read_line_capped<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<LineRead> {
    let mut len = 0usize;
    loop {
        let available = match r.fill_buf().await {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(if len == 0 {
                LineRead::Eof
            } else {
                LineRead::Line(len)
            });
        }
        let (take, ends) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let room = cap.saturating_sub(len);
        let piece = &available[..take.min(room)];
        if buf.capacity() - buf.len() < piece.len() {
            // Doubling, but never past what the cap lets this line hold.
            buf.reserve_exact(buf.capacity().min(room).max(piece.len()));
        }
        buf.extend_from_slice(piece);
        r.consume(take);
        len += take;
        if len > cap {
            return Ok(LineRead::TooLong { len });
        }
        if ends {
            return Ok(LineRead::Line(len));
        }
    }
}

/// Moves the next line out of `r`'s buffer into `buf` (cleared first) when
/// the buffer already holds all of it, newline included, within `cap`;
/// false otherwise, with nothing consumed (the caller then reads it the
/// usual way, which also reports a line over the cap). Never waits.
pub fn take_buffered_line<R: tokio::io::AsyncRead + Unpin>(
    r: &mut tokio::io::BufReader<R>,
    buf: &mut Vec<u8>,
    cap: usize,
) -> bool {
    use std::pin::Pin;
    let available = r.buffer();
    let Some(i) = memchr::memchr(b'\n', available) else {
        return false;
    };
    if i + 1 > cap {
        return false;
    }
    buf.clear();
    buf.extend_from_slice(&available[..=i]);
    AsyncBufRead::consume(Pin::new(r), i + 1);
    true
}

/// What the user is told when the agent's connection is ended because of
/// [`LineRead::TooLong`].
pub fn too_long_message(agent: &str, cap: usize) -> String {
    format!(
        "Agent `{agent}` sent a message longer than the {} line limit; the connection was ended",
        human_size(cap)
    )
}

fn human_size(n: usize) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// The bytes of a line as text, validated once (the parse after it and the
/// trace take it as it is): invalid UTF-8 becomes U+FFFD, and `true` says
/// so. Without invalid bytes the allocation moves into the text, and back
/// with `String::into_bytes` for the next line.
pub fn into_text(buf: Vec<u8>) -> (String, bool) {
    match String::from_utf8(buf) {
        Ok(text) => (text, false),
        Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, BufReader};

    async fn all_lines(data: &[u8], reader_cap: usize, cap: usize) -> Vec<(LineRead, Vec<u8>)> {
        let mut r = BufReader::with_capacity(reader_cap, data);
        let mut out = Vec::new();
        loop {
            let mut buf = Vec::new();
            let got = read_line_capped(&mut r, &mut buf, cap).await.unwrap();
            out.push((got, buf));
            if !matches!(got, LineRead::Line(_)) {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn lines_across_small_reads() {
        let data = b"{\"a\":1}\n\n{\"b\":\"\xc3\xa9\"}\nlast";
        for reader_cap in [1, 2, 3, 7, 64] {
            let got = all_lines(data, reader_cap, 100).await;
            let want: Vec<(LineRead, Vec<u8>)> = vec![
                (LineRead::Line(8), b"{\"a\":1}\n".to_vec()),
                (LineRead::Line(1), b"\n".to_vec()),
                (LineRead::Line(11), "{\"b\":\"é\"}\n".as_bytes().to_vec()),
                (LineRead::Line(4), b"last".to_vec()),
                (LineRead::Eof, Vec::new()),
            ];
            assert_eq!(got, want, "reader capacity {reader_cap}");
        }
        assert_eq!(all_lines(b"", 8, 10).await, vec![(LineRead::Eof, vec![])]);
    }

    #[tokio::test]
    async fn the_cap_counts_the_newline() {
        for reader_cap in [1, 4, 64] {
            let got = all_lines(b"12345\n", reader_cap, 6).await;
            assert_eq!(got[0], (LineRead::Line(6), b"12345\n".to_vec()));
            let got = all_lines(b"123456\nnext\n", reader_cap, 6).await;
            assert_eq!(got.len(), 1, "nothing is read after a line too long");
            assert_eq!(got[0].1, b"123456".to_vec());
            assert!(matches!(got[0].0, LineRead::TooLong { len } if len > 6));
        }
        // A line that ends the stream without a newline is held to the cap.
        let got = all_lines(b"1234567", 64, 6).await;
        assert_eq!(got[0], (LineRead::TooLong { len: 7 }, b"123456".to_vec()));
        assert_eq!(
            all_lines(b"x", 64, 0).await[0].0,
            LineRead::TooLong { len: 1 }
        );
    }

    #[tokio::test]
    async fn a_300_mb_line_stops_at_the_cap() {
        let cap = 3 << 19; // 1.5 MiB: buffer growth by doubling would pass it
        let flood = tokio::io::repeat(b'x').take(300 << 20);
        let mut r = BufReader::with_capacity(1 << 16, flood);
        let m = crate::testutil::alloc_meter::Meter::start();
        let mut buf = Vec::new();
        let got = read_line_capped(&mut r, &mut buf, cap).await.unwrap();
        let peak = m.peak();
        println!("300 MiB without a newline, cap 1.5 MiB: {got:?}, peak heap {peak} bytes");
        let LineRead::TooLong { len } = got else {
            panic!("{got:?}")
        };
        assert!(len > cap && len <= cap + (1 << 16), "read {len} bytes");
        assert_eq!(buf.len(), cap);
        assert_eq!(buf.capacity(), cap);
        // The buffer, and the old one while it grows.
        assert!(peak <= cap + cap / 2 + (1 << 16), "{peak}");
        let mut rest = 0u64;
        let mut sink = vec![0u8; 1 << 16];
        loop {
            let n = r.read(&mut sink).await.unwrap();
            if n == 0 {
                break;
            }
            rest += n as u64;
        }
        assert_eq!(rest + len as u64, 300 << 20, "the stream was left unread");
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let ok = b"{\"text\":\"caf\xc3\xa9\"}\n".to_vec();
        let ptr = ok.as_ptr();
        let (same, fixed) = into_text(ok.clone());
        assert!(!fixed);
        assert_eq!(same.as_bytes(), ok);
        let (moved, _) = into_text(ok);
        assert_eq!(moved.as_ptr(), ptr, "valid lines are not copied");

        let bad = b"{\"text\":\"caf\xe9 \xff\"}\n".to_vec();
        let (text, fixed) = into_text(bad);
        assert!(fixed);
        assert_eq!(text, "{\"text\":\"caf\u{fffd} \u{fffd}\"}\n");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["text"], "caf\u{fffd} \u{fffd}");
        // A multi-byte character cut at the end is replaced too.
        let (cut, fixed) = into_text("é".as_bytes()[..1].to_vec());
        assert!(fixed);
        assert_eq!(cut, "\u{fffd}");
    }

    #[test]
    fn too_long_message_names_agent_and_limit() {
        assert_eq!(
            too_long_message("codex", crate::config::DEFAULT_LINE_CAP),
            "Agent `codex` sent a message longer than the 64 MiB line limit; the connection was ended"
        );
        assert_eq!(human_size(1536), "1536 bytes");
        assert_eq!(human_size(2048), "2 KiB");
    }

    #[tokio::test]
    async fn only_whole_lines_already_buffered_are_taken() {
        let data: &[u8] = b"one\ntwo\nthree-is-long\nfour";
        let mut r = BufReader::with_capacity(64, data);
        let mut buf = Vec::new();
        // Nothing buffered yet: nothing taken, nothing read.
        assert!(!take_buffered_line(&mut r, &mut buf, 100));
        assert_eq!(
            read_line_capped(&mut r, &mut buf, 100).await.unwrap(),
            LineRead::Line(4)
        );
        assert!(take_buffered_line(&mut r, &mut buf, 100));
        assert_eq!(buf, b"two\n");
        // A line over the cap is left for `read_line_capped` to report.
        assert!(!take_buffered_line(&mut r, &mut buf, 5));
        assert!(take_buffered_line(&mut r, &mut buf, 100));
        assert_eq!(buf, b"three-is-long\n");
        // A line without its newline yet is left too.
        assert!(!take_buffered_line(&mut r, &mut buf, 100));
        buf.clear();
        assert_eq!(
            read_line_capped(&mut r, &mut buf, 100).await.unwrap(),
            LineRead::Line(4)
        );
        assert_eq!(buf, b"four");
    }
}
