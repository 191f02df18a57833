//! A plain append-only log file. Nothing in the core ever writes to stderr:
//! Neovim owns the terminal and stray bytes corrupt the screen.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

static LOG: OnceLock<Mutex<Option<(PathBuf, File)>>> = OnceLock::new();

fn slot() -> &'static Mutex<Option<(PathBuf, File)>> {
    LOG.get_or_init(|| Mutex::new(None))
}

/// Opens (or switches) the log file. Errors are returned, not printed.
pub fn open(path: PathBuf) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new().create(true).append(true).open(&path)?;
    *slot().lock() = Some((path, file));
    Ok(())
}

pub fn path() -> Option<PathBuf> {
    slot().lock().as_ref().map(|(p, _)| p.clone())
}

pub fn write(level: &str, msg: &str) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut guard = slot().lock();
    if let Some((_, file)) = guard.as_mut() {
        let _ = writeln!(
            file,
            "{}.{:03} {level} {msg}",
            now.as_secs(),
            now.subsec_millis()
        );
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
