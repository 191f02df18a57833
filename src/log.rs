//! The plugin's log file. Nothing in the core ever writes to stderr: Neovim
//! owns the terminal and stray bytes corrupt the screen.
//!
//! The file is private (0600), has local ISO-8601 timestamps, keeps no
//! secrets (every line goes through `redact`), and is rotated at a size cap
//! (`acp.log` -> `acp.log.1` -> `acp.log.2`, the oldest dropped). Agent
//! stderr is kept but capped per line and per second (see [`StderrGate`]).
//!
//! May use: redact.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::redact;

/// Default size at which the log is rotated.
pub const DEFAULT_MAX_BYTES: u64 = 5 << 20;
/// Rotated files kept besides the current one.
pub const KEEP: usize = 2;

struct Sink {
    path: PathBuf,
    file: File,
    size: u64,
    max_bytes: u64,
}

static LOG: OnceLock<Mutex<Option<Sink>>> = OnceLock::new();

fn slot() -> &'static Mutex<Option<Sink>> {
    LOG.get_or_init(|| Mutex::new(None))
}

fn open_private(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    // A file created by an older version (0644) is made private too.
    let _ = file.set_permissions(std::fs::Permissions::from_mode(0o600));
    Ok(file)
}

/// Opens (or switches) the log file, rotated at `max_bytes`. Errors are
/// returned, not printed.
pub fn open_with(path: PathBuf, max_bytes: u64) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = open_private(&path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    *slot().lock() = Some(Sink {
        path,
        file,
        size,
        max_bytes: max_bytes.max(1024),
    });
    Ok(())
}

pub fn path() -> Option<PathBuf> {
    slot().lock().as_ref().map(|s| s.path.clone())
}

fn rotated(path: &Path, n: usize) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

impl Sink {
    fn rotate(&mut self) {
        for n in (1..KEEP).rev() {
            let _ = std::fs::rename(rotated(&self.path, n), rotated(&self.path, n + 1));
        }
        let _ = std::fs::rename(&self.path, rotated(&self.path, 1));
        if let Ok(file) = open_private(&self.path) {
            self.file = file;
            self.size = 0;
        }
    }

    fn write_line(&mut self, line: &str) {
        if self.size > 0 && self.size + line.len() as u64 > self.max_bytes {
            self.rotate();
        }
        if self.file.write_all(line.as_bytes()).is_ok() {
            self.size += line.len() as u64;
        }
    }
}

/// Local time as ISO 8601 with milliseconds and the UTC offset, e.g.
/// `2025-03-01T14:05:09.042+01:00`.
pub fn iso_local(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as libc::time_t;
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // localtime_r is thread-safe and reads TZ once per process.
    let ok = !unsafe { libc::localtime_r(&secs, &mut tm) }.is_null();
    if !ok {
        return format!("{}.{:03}", since.as_secs(), since.subsec_millis());
    }
    let off = tm.tm_gmtoff / 60;
    let (sign, off) = if off < 0 { ('-', -off) } else { ('+', off) };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{sign}{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        since.subsec_millis(),
        off / 60,
        off % 60
    )
}

pub fn write(level: &str, msg: &str) {
    let mut guard = slot().lock();
    if let Some(sink) = guard.as_mut() {
        let line = format!(
            "{} {level} {}\n",
            iso_local(SystemTime::now()),
            redact::redact_text(msg)
        );
        sink.write_line(&line);
    }
}

pub fn info(msg: impl AsRef<str>) {
    write("INFO", msg.as_ref());
}

pub fn warn(msg: impl AsRef<str>) {
    write("WARN", msg.as_ref());
}

pub fn error(msg: impl AsRef<str>) {
    write("ERROR", msg.as_ref());
}

/// Longest stderr line kept (bytes); the rest is cut with a note.
pub const STDERR_LINE_MAX: usize = 1000;
/// Stderr lines logged per agent per second; the others are counted.
pub const STDERR_LINES_PER_SEC: u32 = 50;

/// `line` cut at `max` bytes (on a character boundary), with a note of how
/// much was cut.
pub fn cap_line(line: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if line.len() <= max {
        return line.into();
    }
    let mut end = max;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes cut]", &line[..end], line.len() - end).into()
}

/// Rate limit for one agent's stderr in the log: at most
/// [`STDERR_LINES_PER_SEC`] lines a second; the lines over it are counted
/// and the count is logged when the next second starts.
pub struct StderrGate {
    window: Instant,
    lines: u32,
    dropped: u64,
}

impl Default for StderrGate {
    fn default() -> Self {
        Self {
            window: Instant::now(),
            lines: 0,
            dropped: 0,
        }
    }
}

impl StderrGate {
    /// Whether this line may be logged now. `note` is called with the
    /// count of lines dropped in the previous window, once.
    pub fn admit(&mut self, now: Instant, note: impl FnOnce(u64)) -> bool {
        if now.duration_since(self.window) >= Duration::from_secs(1) {
            if self.dropped > 0 {
                note(self.dropped);
            }
            self.window = now;
            self.lines = 0;
            self.dropped = 0;
        }
        if self.lines < STDERR_LINES_PER_SEC {
            self.lines += 1;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

/// Routes panic messages to the log file instead of stderr. The bridge turns
/// caught panics into user-visible errors separately.
pub fn install_panic_hook() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        std::panic::set_hook(Box::new(|info| {
            let bt = std::backtrace::Backtrace::force_capture();
            error(format!("panic: {info}\n{bt}"));
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_local_iso_8601() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_042);
        let s = iso_local(t);
        // 2023-11-14T..:..:20.042+hh:mm in any time zone.
        assert_eq!(s.len(), 29, "{s}");
        assert!(s.starts_with("2023-11-1"), "{s}");
        assert_eq!(&s[10..11], "T");
        assert_eq!(&s[19..23], ".042");
        assert!(matches!(&s[23..24], "+" | "-"), "{s}");
    }

    #[test]
    fn stderr_lines_are_capped_and_rate_limited() {
        assert_eq!(cap_line("short", 10), "short");
        let long = "é".repeat(10); // 20 bytes
        assert_eq!(cap_line(&long, 5), "éé… [16 bytes cut]");
        let mut gate = StderrGate::default();
        let t0 = Instant::now();
        let mut noted = Vec::new();
        let admitted = (0..200)
            .filter(|_| gate.admit(t0, |n| noted.push(n)))
            .count();
        assert_eq!(admitted as u32, STDERR_LINES_PER_SEC);
        assert!(gate.admit(t0 + Duration::from_millis(1001), |n| noted.push(n)));
        assert_eq!(noted, vec![200 - STDERR_LINES_PER_SEC as u64]);
    }

    #[test]
    fn the_file_is_private_rotated_and_redacted() {
        let dir = std::env::temp_dir().join(format!("acp-log-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("acp.log");
        // One sink in a test of its own (the log is global).
        let mut sink = Sink {
            path: path.clone(),
            file: {
                std::fs::create_dir_all(&dir).unwrap();
                open_private(&path).unwrap()
            },
            size: 0,
            max_bytes: 2048,
        };
        for i in 0..300 {
            let line = format!("line {i} OPENAI_API_KEY=sk-{i}\n");
            sink.write_line(&redact::redact_text(&line));
        }
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let current = std::fs::read_to_string(&path).unwrap();
        assert!(current.len() <= 2048);
        assert!(current.contains("line 299 OPENAI_API_KEY=[redacted]"));
        assert!(!current.contains("sk-"));
        let one = std::fs::read_to_string(rotated(&path, 1)).unwrap();
        assert!(one.len() <= 2048 && !one.is_empty());
        assert!(rotated(&path, 2).exists());
        assert!(!rotated(&path, 3).exists(), "two old files at most");
        let mode = std::fs::metadata(rotated(&path, 1))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
