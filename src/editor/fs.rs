//! Disk side of `fs/*`: reading text files with clear errors, line/limit
//! slicing, and atomic writes that keep the file's mode. What is opened is
//! checked by `confine`.

use std::io::{BufRead, Write};
use std::path::Path;

// What a request of the agent fails with, and the refusal of anything but
// a regular file, as the handlers know them from here.
pub use super::confine::refuse_non_regular;
pub use super::fs_error::{FsError, INTERNAL, INVALID_PARAMS, RESOURCE_NOT_FOUND};

use super::confine::{check_opened, open_regular};
use crate::editor::roots::Roots;

/// Reads a whole text file within the default [`ReadLimits`]. Directories,
/// other non-regular files, missing files, files over the limit, binary or
/// invalid UTF-8 content are errors naming the path and the reason (tests).
#[cfg(test)]
pub fn read_text(path: &Path) -> Result<String, FsError> {
    read_text_bounded(path, None, None, &ReadLimits::default()).map(|r| r.content)
}

/// Sizes past which a read from disk is refused, so that memory stays
/// bounded whatever file an agent names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// A file larger than this is read only in parts (`line`/`limit`).
    pub whole_file_bytes: u64,
    /// The most bytes a `line`/`limit` part may hold.
    pub part_bytes: u64,
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            whole_file_bytes: crate::config::DEFAULT_READ_REFUSE_BYTES,
            part_bytes: crate::config::DEFAULT_READ_REFUSE_BYTES,
        }
    }
}

/// What [`read_text_bounded`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRead {
    /// The selected lines, with their own line endings.
    pub content: String,
    /// `content` is the whole file (read from its first byte to its end),
    /// so it can serve as the base of a later merge.
    pub whole: bool,
    /// The file's size when it was opened.
    pub size: u64,
}

/// Chunk size of the streaming read: the memory a read of any part of any
/// file needs besides the part itself.
const READ_CHUNK: usize = 8 << 10;

/// Reads `limit` lines from 1-based `line` of a text file (the whole file
/// when both are None), with the slicing of [`slice_lines`], streaming:
/// only the bytes up to the end of the part are read. A NUL byte before
/// the end of the part (in skipped lines too) refuses the file as binary
/// at the chunk that holds it; UTF-8 is checked on the part.
///
/// The path is `stat`ed first: anything but a regular file (directory,
/// FIFO, socket, device) is refused without being opened for reading.
/// A whole-file read of a file over `limits.whole_file_bytes`, or a part
/// over `limits.part_bytes`, is refused with a message saying how to ask
/// for less. (Tests; the handlers read through [`read_text_confined`].)
#[cfg(test)]
pub fn read_text_bounded(
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
    limits: &ReadLimits,
) -> Result<TextRead, FsError> {
    read_text_confined(path, line, limit, limits, None)
}

/// [`read_text_bounded`], and with `confine`, the file actually opened must
/// lie inside those roots: its real path is taken from the open descriptor
/// (see [`opened_path`]), so a symlink swapped into the path after the roots
/// were checked cannot lead the read outside them.
pub fn read_text_confined(
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
    limits: &ReadLimits,
    confine: Option<&Roots>,
) -> Result<TextRead, FsError> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            FsError::new(RESOURCE_NOT_FOUND, format!("{shown}: no such file"))
        }
        std::io::ErrorKind::PermissionDenied => {
            FsError::new(INTERNAL, format!("{shown}: permission denied"))
        }
        _ => FsError::new(INTERNAL, format!("{shown}: {e}")),
    })?;
    refuse_non_regular(path, &meta)?;
    let size = meta.len();
    let part = line.is_some() || limit.is_some();
    if !part && size > limits.whole_file_bytes {
        return Err(FsError::new(
            INVALID_PARAMS,
            format!(
                "{shown}: too large to read whole ({}, the limit is {}); read a part with `line` and `limit`",
                human_bytes(size),
                human_bytes(limits.whole_file_bytes)
            ),
        ));
    }
    let file = open_regular(path)?;
    if let Some(roots) = confine {
        check_opened(&file, path, roots)?;
    }
    let cap = if part {
        limits.part_bytes
    } else {
        limits.whole_file_bytes
    };
    let mut reader = std::io::BufReader::with_capacity(READ_CHUNK, file);
    let io_err = |e: std::io::Error| FsError::new(INTERNAL, format!("{shown}: {e}"));
    let binary = || {
        FsError::new(
            INVALID_PARAMS,
            format!("{shown}: binary file (contains NUL bytes), not text"),
        )
    };

    // Skip to the first selected line.
    let skip = u64::from(line.unwrap_or(1).max(1)) - 1;
    let mut skipped = 0u64;
    let mut offset = 0u64;
    while skipped < skip {
        let buf = reader.fill_buf().map_err(io_err)?;
        if buf.is_empty() {
            return Ok(TextRead {
                content: String::new(),
                whole: false,
                size,
            });
        }
        let mut used = buf.len();
        let mut from = 0;
        while let Some(i) = buf[from..].iter().position(|&b| b == b'\n') {
            skipped += 1;
            from += i + 1;
            if skipped == skip {
                used = from;
                break;
            }
        }
        // Skipped text is checked too: a binary file is refused at its
        // first chunk instead of being scanned to the end for newlines.
        if buf[..used].contains(&0) {
            return Err(binary());
        }
        reader.consume(used);
        offset += used as u64;
    }

    // Take `limit` lines (or the rest).
    let mut out: Vec<u8> = Vec::with_capacity(if part { 0 } else { size.min(cap) as usize });
    let mut left = limit.map(u64::from);
    let mut at_end = false;
    while left != Some(0) {
        let buf = reader.fill_buf().map_err(io_err)?;
        if buf.is_empty() {
            at_end = true;
            break;
        }
        let mut take = buf.len();
        if let Some(n) = left.as_mut() {
            let mut from = 0;
            while let Some(i) = buf[from..].iter().position(|&b| b == b'\n') {
                from += i + 1;
                *n -= 1;
                if *n == 0 {
                    take = from;
                    break;
                }
            }
        }
        let chunk = &buf[..take];
        if chunk.contains(&0) {
            return Err(binary());
        }
        if (out.len() + take) as u64 > cap {
            let what = if part {
                "the selected lines are"
            } else {
                "the file is"
            };
            return Err(FsError::new(
                INVALID_PARAMS,
                format!(
                    "{shown}: {what} larger than the read limit ({}); ask for fewer lines with `line` and `limit`",
                    human_bytes(cap)
                ),
            ));
        }
        out.extend_from_slice(chunk);
        reader.consume(take);
    }
    if !at_end {
        at_end = reader.fill_buf().map_err(io_err)?.is_empty();
    }
    let content = String::from_utf8(out).map_err(|e| {
        FsError::new(
            INVALID_PARAMS,
            format!(
                "{shown}: not valid UTF-8 text (invalid byte at offset {})",
                offset + e.utf8_error().valid_up_to() as u64
            ),
        )
    })?;
    Ok(TextRead {
        content,
        whole: skip == 0 && at_end,
        size,
    })
}

/// `3.0 GiB`, `32 MiB`, `512 B`.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A cheap fingerprint of a text (fixed keys: stable within one build of
/// the core), so that what an agent read can be recognised later without
/// keeping the text. Sixteen bytes at a time, each block folded through a
/// 64x64->128-bit multiply and chained in order: a 10 MB text in about a
/// millisecond (SipHash took several).
pub fn content_hash(text: &str) -> u64 {
    const K0: u64 = 0xa076_1d64_78bd_642f;
    const K1: u64 = 0xe703_7ed1_a0b4_28db;
    const K2: u64 = 0x8ebc_6af0_9c88_c6e3;
    fn fold(a: u64, b: u64) -> u64 {
        let r = u128::from(a) * u128::from(b);
        (r as u64) ^ ((r >> 64) as u64)
    }
    fn word(b: &[u8]) -> u64 {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    }
    let bytes = text.as_bytes();
    let mut h = K2 ^ bytes.len() as u64;
    let mut blocks = bytes.chunks_exact(16);
    for c in &mut blocks {
        let m = fold(word(&c[..8]) ^ K0, word(&c[8..]) ^ K1);
        h = (h.rotate_left(29) ^ m).wrapping_mul(K2 | 1);
    }
    let tail = blocks.remainder();
    let (a, b) = tail.split_at(tail.len().min(8));
    let m = fold(word(a) ^ K0 ^ tail.len() as u64, word(b) ^ K1);
    h = (h.rotate_left(29) ^ m).wrapping_mul(K2 | 1);
    fold(h ^ K0, bytes.len() as u64 ^ K1) ^ h
}

/// `limit` lines starting at 1-based `line`, each with its own line ending
/// as in `text`. Past the end of the file the result is empty.
pub fn slice_lines(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return text.to_owned();
    }
    let start = line.unwrap_or(1).max(1) as usize - 1;
    let mut lines = text.split_inclusive('\n').skip(start);
    match limit {
        Some(n) => lines.by_ref().take(n as usize).collect(),
        None => lines.collect(),
    }
}

/// Writes `content` to `path` atomically: a temporary file in the same
/// directory, renamed over the target. Missing parent directories are
/// created; an existing file keeps its permission bits. (Tests; the
/// handlers write through [`write_atomic_confined`].)
#[cfg(test)]
pub fn write_atomic(path: &Path, content: &str) -> Result<(), FsError> {
    write_atomic_confined(path, content, None)
}

/// [`write_atomic`], done relative to the opened parent directory (`openat`,
/// `renameat`): with `confine`, that directory's real path, taken from its
/// descriptor, must lie inside those roots, so a symlink swapped in for a
/// directory of the path after the roots were checked cannot lead the
/// write outside them. The file itself is never followed if it became a
/// symlink: the link is replaced.
pub fn write_atomic_confined(
    path: &Path,
    content: &str,
    confine: Option<&Roots>,
) -> Result<(), FsError> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::{AsRawFd, FromRawFd};
    let shown = path.display();
    let dir = path
        .parent()
        .ok_or_else(|| FsError::new(INVALID_PARAMS, format!("{shown}: no parent directory")))?;
    let name = path
        .file_name()
        .ok_or_else(|| FsError::new(INVALID_PARAMS, format!("{shown}: no file name")))?;
    std::fs::create_dir_all(dir)
        .map_err(|e| FsError::new(INTERNAL, format!("{}: cannot create: {e}", dir.display())))?;
    let dir_file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOCTTY)
        .open(dir)
        .map_err(|e| FsError::new(INTERNAL, format!("{}: {e}", dir.display())))?;
    if let Some(roots) = confine {
        check_opened(&dir_file, dir, roots)?;
    }
    let dfd = dir_file.as_raw_fd();
    let io_err = |e: std::io::Error| FsError::new(INTERNAL, format!("{shown}: write failed: {e}"));
    let c_name = CString::new(name.as_bytes())
        .map_err(|_| FsError::new(INVALID_PARAMS, format!("{shown}: NUL in the name")))?;
    // The target as it is in the opened directory (a symlink not followed).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let exists =
        unsafe { libc::fstatat(dfd, c_name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } == 0;
    let kind = st.st_mode & libc::S_IFMT;
    if exists && kind == libc::S_IFDIR {
        return Err(FsError::new(
            INVALID_PARAMS,
            format!("{shown}: is a directory, not a file"),
        ));
    }
    let mode = (exists && kind == libc::S_IFREG).then_some(st.st_mode & 0o7777);
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    let tmp = format!(
        ".{}.acp-{}-{nonce}.tmp",
        name.to_string_lossy(),
        std::process::id()
    );
    let c_tmp = CString::new(tmp).map_err(|_| io_err(std::io::ErrorKind::InvalidInput.into()))?;
    let fd = unsafe {
        libc::openat(
            dfd,
            c_tmp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o666 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io_err(std::io::Error::last_os_error()));
    }
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let result = (|| -> std::io::Result<()> {
        f.write_all(content.as_bytes())?;
        if let Some(m) = mode {
            if unsafe { libc::fchmod(fd, m as libc::mode_t) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        f.sync_all()?;
        if unsafe { libc::renameat(dfd, c_tmp.as_ptr(), dfd, c_name.as_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    })();
    drop(f);
    result.map_err(|e| {
        unsafe { libc::unlinkat(dfd, c_tmp.as_ptr(), 0) };
        io_err(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::alloc_meter;
    use crate::testutil::TempDir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn slicing_edges() {
        let t = "one\ntwo\nthree";
        assert_eq!(slice_lines(t, None, None), t);
        assert_eq!(slice_lines(t, Some(2), None), "two\nthree");
        assert_eq!(slice_lines(t, Some(2), Some(1)), "two\n");
        assert_eq!(slice_lines(t, Some(1), Some(0)), "");
        assert_eq!(slice_lines(t, Some(9), Some(3)), "");
        assert_eq!(slice_lines("", Some(1), Some(3)), "");
        assert_eq!(slice_lines("a\r\nb\r\n", Some(2), None), "b\r\n");
        assert_eq!(slice_lines("é\n漢字\n🎉", Some(2), Some(2)), "漢字\n🎉");
    }

    #[test]
    fn read_errors_name_path_and_reason() {
        let d_dir = TempDir::new("fs-read");
        let d = d_dir.path().to_path_buf();
        assert_eq!(
            read_text(&d.join("missing")).unwrap_err().code,
            RESOURCE_NOT_FOUND
        );
        assert!(read_text(&d)
            .unwrap_err()
            .message
            .contains("is a directory"));
        std::fs::write(d.join("bin"), b"a\0b").unwrap();
        assert!(read_text(&d.join("bin"))
            .unwrap_err()
            .message
            .contains("binary"));
        std::fs::write(d.join("latin1"), b"caf\xe9").unwrap();
        let e = read_text(&d.join("latin1")).unwrap_err();
        assert!(
            e.message.contains("latin1") && e.message.contains("UTF-8"),
            "{}",
            e.message
        );
        std::fs::write(d.join("ok"), "fine\n").unwrap();
        assert_eq!(read_text(&d.join("ok")).unwrap(), "fine\n");
    }

    /// Text with long and short lines, CRLF, multibyte characters and
    /// empty lines, longer than several read chunks.
    fn varied_text() -> String {
        let mut t = String::new();
        for i in 0..3000 {
            match i % 7 {
                0 => t.push_str(&"x".repeat(i * 7 % 9000)),
                1 => t.push_str("é漢字🎉"),
                2 => {}
                3 => t.push_str(&format!("line {i}\r")),
                _ => t.push_str(&format!("plain {i}")),
            }
            t.push('\n');
        }
        t.push_str("no newline at the end");
        t
    }

    #[test]
    fn bounded_read_slices_like_slice_lines() {
        let d = TempDir::new("fs-bounded");
        let text = varied_text();
        assert!(text.len() > 20 * READ_CHUNK);
        let small = ["", "a", "a\n", "\n\n", "a\r\nb\r\n", "é\n漢字\n🎉"];
        let lim = ReadLimits::default();
        for (k, t) in small.iter().copied().chain([text.as_str()]).enumerate() {
            let p = d.path().join(format!("f{k}"));
            std::fs::write(&p, t).unwrap();
            let lines = [
                None,
                Some(0),
                Some(1),
                Some(2),
                Some(3),
                Some(700),
                Some(2999),
                Some(3001),
                Some(3002),
                Some(9999),
            ];
            let limits = [
                None,
                Some(0),
                Some(1),
                Some(2),
                Some(5),
                Some(1000),
                Some(5000),
            ];
            for line in lines {
                for limit in limits {
                    let got = read_text_bounded(&p, line, limit, &lim).unwrap();
                    let want = slice_lines(t, line, limit);
                    assert!(
                        got.content == want,
                        "file {k} line {line:?} limit {limit:?}"
                    );
                    assert_eq!(
                        got.whole,
                        want == t && line.unwrap_or(1) <= 1,
                        "whole: file {k} line {line:?} limit {limit:?}"
                    );
                    assert_eq!(got.size, t.len() as u64);
                }
            }
        }
    }

    #[test]
    fn huge_sparse_file_reads_only_what_is_asked() {
        let d = TempDir::new("fs-sparse");
        let p = d.path().join("sparse");
        std::fs::write(&p, "hello\nworld\n").unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(3 << 30).unwrap(); // 3 GiB, the rest NUL bytes
        drop(f);
        let lim = ReadLimits::default();

        let m = alloc_meter::Meter::start();
        let first = read_text_bounded(&p, None, Some(1), &lim).unwrap();
        let peak = m.peak();
        println!("3 GiB sparse file, limit 1: {peak} bytes allocated at peak");
        assert_eq!(first.content, "hello\n");
        assert!(!first.whole);
        assert_eq!(first.size, 3 << 30);
        assert!(peak < 32 << 10, "{peak} bytes");

        let m = alloc_meter::Meter::start();
        let second = read_text_bounded(&p, Some(2), Some(1), &lim).unwrap();
        assert_eq!(second.content, "world\n");
        assert!(m.peak() < 32 << 10, "{} bytes", m.peak());

        // The third "line" is 3 GiB of NUL bytes: refused at the first chunk.
        let m = alloc_meter::Meter::start();
        let t0 = std::time::Instant::now();
        let e = read_text_bounded(&p, Some(3), Some(1), &lim).unwrap_err();
        assert!(e.message.contains("binary"), "{}", e.message);
        assert!(m.peak() < 32 << 10, "{} bytes", m.peak());
        println!("binary refusal after {:?}", t0.elapsed());

        // No part selected: refused by size before any read.
        let m = alloc_meter::Meter::start();
        let e = read_text_bounded(&p, None, None, &lim).unwrap_err();
        assert!(
            e.message
                .contains("too large to read whole (3 GiB, the limit is 32 MiB)")
                && e.message.contains("`line` and `limit`"),
            "{}",
            e.message
        );
        assert_eq!(e.code, INVALID_PARAMS);
        assert!(m.peak() < 32 << 10, "{} bytes", m.peak());
        assert!(read_text(&p).is_err());
    }

    #[test]
    fn parts_over_the_limit_are_refused() {
        let d = TempDir::new("fs-part-limit");
        d.write("f", "0123456789\nabc\n");
        let p = d.path().join("f");
        let lim = ReadLimits {
            whole_file_bytes: 12,
            part_bytes: 11,
        };
        assert_eq!(
            read_text_bounded(&p, Some(1), Some(1), &lim)
                .unwrap()
                .content,
            "0123456789\n"
        );
        assert_eq!(
            read_text_bounded(&p, Some(2), None, &lim).unwrap().content,
            "abc\n"
        );
        let e = read_text_bounded(&p, Some(1), Some(2), &lim).unwrap_err();
        assert!(
            e.message
                .contains("selected lines are larger than the read limit (11 B)"),
            "{}",
            e.message
        );
        let e = read_text_bounded(&p, None, None, &lim).unwrap_err();
        assert!(
            e.message
                .contains("too large to read whole (15 B, the limit is 12 B)"),
            "{}",
            e.message
        );
    }

    #[test]
    fn binary_and_utf8_checks_see_the_part_read() {
        let d = TempDir::new("fs-part-check");
        let p = d.path().join("f");
        std::fs::write(&p, b"text\ncaf\xe9\nmore\n\0").unwrap();
        let lim = ReadLimits::default();
        assert_eq!(
            read_text_bounded(&p, Some(1), Some(1), &lim)
                .unwrap()
                .content,
            "text\n"
        );
        let e = read_text_bounded(&p, Some(2), Some(1), &lim).unwrap_err();
        assert!(
            e.message.contains("invalid byte at offset 8"),
            "{}",
            e.message
        );
        assert_eq!(
            read_text_bounded(&p, Some(3), Some(1), &lim)
                .unwrap()
                .content,
            "more\n"
        );
        assert!(read_text_bounded(&p, Some(3), None, &lim)
            .unwrap_err()
            .message
            .contains("binary"));
        assert!(read_text(&p).unwrap_err().message.contains("binary"));
    }

    #[test]
    fn content_hash_tells_texts_apart() {
        assert_eq!(
            content_hash("a\nb\n"),
            content_hash(&String::from("a\nb\n"))
        );
        assert_ne!(content_hash("a\nb\n"), content_hash("a\nb"));
        assert_ne!(content_hash(""), content_hash("\n"));
        // Every length around the 16-byte blocks, and a change in any byte
        // or a moved one, tells texts apart.
        let base: String = (0..100)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let mut seen = std::collections::HashSet::new();
        for n in 0..base.len() {
            assert!(seen.insert(content_hash(&base[..n])), "length {n}");
        }
        for i in 0..40 {
            let mut b = base.clone().into_bytes();
            b[i] ^= 1;
            assert!(
                seen.insert(content_hash(std::str::from_utf8(&b).unwrap())),
                "byte {i}"
            );
        }
        assert_ne!(content_hash("ab\ncd\n"), content_hash("cd\nab\n"));
        assert_ne!(
            content_hash(&"\0".repeat(16)),
            content_hash(&"\0".repeat(32))
        );
        assert_eq!(human_bytes(3 << 30), "3 GiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn atomic_write_creates_dirs_and_keeps_mode() {
        let d_dir = TempDir::new("fs-write");
        let d = d_dir.path().to_path_buf();
        let p = d.join("a/b/new.txt");
        write_atomic(&p, "hello").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "hello");
        let script = d.join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
        write_atomic(&script, "#!/bin/sh\n").unwrap();
        assert_eq!(
            std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
            0o751
        );
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            names.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")),
            "{names:?}"
        );
    }
}
