//! Kept chats: every chat's transcript (`model::record`) and review records,
//! one file per chat under `<state>/chats/<project>/<chat>.jsonl`, so a chat
//! can be opened again after it was closed or Neovim quit. Bounded: the
//! records of one chat by `chat_max_bytes` (oldest dropped, by the
//! recorder), the files of one project by `project_max_bytes` and
//! `project_max_chats` (oldest files deleted after each write).
//!
//! A file is JSON lines: a header (what the picker lists, read alone), the
//! review records, then one `session/update` per line. Files are written
//! whole (to a temporary name, then renamed) off the main thread; a file
//! that cannot be read is reported and skipped, never trusted: ids are
//! checked before they name a path, sizes before anything is read.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde_json::Value;

use crate::log;
use crate::model::record::Recorder;

/// Version of the file format.
const VERSION: u64 = 1;
/// The header line is read alone, at most this much of it.
const HEADER_MAX: u64 = 64 * 1024;
/// Review records larger than this are not kept with the transcript.
pub const REVIEW_MAX_BYTES: usize = 8 * 1024 * 1024;
const EXT: &str = "jsonl";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub chat_max_bytes: usize,
    pub project_max_bytes: u64,
    pub project_max_chats: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            chat_max_bytes: 1024 * 1024,
            project_max_bytes: 20 * 1024 * 1024,
            project_max_chats: 100,
        }
    }
}

struct Store {
    dir: PathBuf,
    limits: Limits,
}

static STORE: Mutex<Option<Store>> = Mutex::new(None);

/// Where chats are kept (`None`: not kept) and the caps.
pub fn configure(dir: Option<PathBuf>, limits: Limits) {
    *STORE.lock() = dir.map(|dir| Store { dir, limits });
}

/// Whether chats are kept at all.
pub fn enabled() -> bool {
    STORE.lock().is_some()
}

pub fn limits() -> Limits {
    STORE.lock().as_ref().map(|s| s.limits).unwrap_or_default()
}

/// The folder of a project's chats: its path with `%` and `/` escaped, one
/// readable name per project.
pub fn project_dir(cwd: &Path) -> Option<PathBuf> {
    let store = STORE.lock();
    let store = store.as_ref()?;
    Some(store.dir.join(project_name(cwd)))
}

fn project_name(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .replace('%', "%25")
        .replace('/', "%2F")
}

pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A new chat's id: time, process and thread (unique across restarts).
pub fn new_id(thread: u64) -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("{ms}-{}-{thread}", std::process::id())
}

/// Only ids this module makes name a file (no path can be smuggled in).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_digit() || b == b'-')
}

/// What the picker shows of a kept chat (the file's first line).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    pub acp_chat: u64,
    pub id: String,
    pub agent: String,
    pub cwd: String,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    pub created: u64,
    pub updated: u64,
    /// Records dropped to stay under the chat's cap.
    #[serde(default)]
    pub dropped: usize,
    #[serde(default)]
    pub records: usize,
    #[serde(default)]
    pub bytes: u64,
}

impl Header {
    pub fn new(id: String, agent: String, cwd: &Path) -> Self {
        let now = now_secs();
        Self {
            acp_chat: VERSION,
            id,
            agent,
            cwd: cwd.to_string_lossy().into_owned(),
            session_id: None,
            title: None,
            created: now,
            updated: now,
            dropped: 0,
            records: 0,
            bytes: 0,
        }
    }
}

/// A chat's kept state: its file's header and its records.
pub struct Kept {
    pub(super) header: Header,
    pub(super) recorder: Recorder,
}

impl Kept {
    pub(super) fn new(id: String, agent: String, cwd: &Path) -> Self {
        Self {
            header: Header::new(id, agent, cwd),
            recorder: Recorder::new(limits().chat_max_bytes),
        }
    }
}

/// A kept chat as read back.
#[derive(Debug)]
pub struct KeptChat {
    pub header: Header,
    pub review: Value,
    pub records: Vec<Value>,
    /// Record lines that could not be read (skipped).
    pub bad_lines: usize,
}

/// The file's text: header, review, records.
pub fn file_text<'a>(
    header: &Header,
    review: &Value,
    records: impl Iterator<Item = &'a Value>,
) -> String {
    let mut out = serde_json::to_string(header).unwrap_or_default();
    out.push('\n');
    out.push_str(
        &serde_json::to_string(&serde_json::json!({ "review": review })).unwrap_or_default(),
    );
    out.push('\n');
    for r in records {
        if let Ok(s) = serde_json::to_string(r) {
            out.push_str(&s);
            out.push('\n');
        }
    }
    out
}

/// Writes a chat's file (whole, through a temporary file), then deletes
/// the project's oldest files past its caps. Blocking: call it off the
/// main thread (or at exit).
pub fn write(cwd: &Path, id: &str, text: &str) -> Result<(), String> {
    let Some(dir) = project_dir(cwd) else {
        return Ok(());
    };
    if !valid_id(id) {
        return Err(format!("not a kept chat id: {id:?}"));
    }
    create_private_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{id}.{EXT}"));
    // Its own temporary name: saves of one chat may run at once.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{id}.{}-{n}.tmp", std::process::id()));
    write_private(&tmp, text.as_bytes()).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    prune(&dir, id, limits());
    Ok(())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(path)?;
    f.write_all(bytes)?;
    f.sync_data()
}

/// The project's chat files with their time and size, newest first.
fn files(dir: &Path) -> Vec<(PathBuf, SystemTime, u64)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some(EXT) {
            continue;
        }
        if let Ok(m) = e.metadata() {
            if m.is_file() {
                out.push((path, m.modified().unwrap_or(UNIX_EPOCH), m.len()));
            }
        }
    }
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
    out
}

/// Deletes the oldest files past the project's caps (never `keep`).
fn prune(dir: &Path, keep: &str, limits: Limits) {
    let keep_name = format!("{keep}.{EXT}");
    let mut total = 0u64;
    let mut count = 0usize;
    for (path, _, len) in files(dir) {
        let is_keep = path.file_name().and_then(|n| n.to_str()) == Some(keep_name.as_str());
        total += len;
        count += 1;
        if !is_keep && (total > limits.project_max_bytes || count > limits.project_max_chats) {
            match std::fs::remove_file(&path) {
                Ok(()) => log::info(format!(
                    "kept chats: deleted {} (the project is over its cap)",
                    path.display()
                )),
                Err(e) => log::warn(format!("kept chats: cannot delete {}: {e}", path.display())),
            }
            total -= len;
            count -= 1;
        }
    }
}

/// The kept chats of a project, newest first, and the files that could not
/// be read (named, with why).
pub fn list(cwd: &Path) -> (Vec<Header>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let Some(dir) = project_dir(cwd) else {
        return (out, problems);
    };
    for (path, _, _) in files(&dir) {
        match read_header(&path) {
            Ok(h) => out.push(h),
            Err(e) => problems.push(format!("{}: {e}", path.display())),
        }
    }
    out.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| b.id.cmp(&a.id)));
    (out, problems)
}

fn read_header(path: &Path) -> Result<Header, String> {
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut line = String::new();
    std::io::BufReader::new(f.take(HEADER_MAX))
        .read_line(&mut line)
        .map_err(|e| format!("not readable as text ({e})"))?;
    let header: Header =
        serde_json::from_str(line.trim_end()).map_err(|e| format!("not a kept chat ({e})"))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if header.acp_chat != VERSION || header.id != stem || !valid_id(stem) {
        return Err("not a kept chat of this version".into());
    }
    Ok(header)
}

/// Reads kept chat `id` of a project. Blocking: off the main thread.
pub fn read(cwd: &Path, id: &str) -> Result<KeptChat, String> {
    if !valid_id(id) {
        return Err(format!("not a kept chat id: {id:?}"));
    }
    let dir = project_dir(cwd).ok_or("chats are not kept (history.keep is off)")?;
    let path = dir.join(format!("{id}.{EXT}"));
    let header = read_header(&path)?;
    let limit = limits().chat_max_bytes as u64 * 2 + REVIEW_MAX_BYTES as u64 + HEADER_MAX;
    let len = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
    if len > limit {
        return Err(format!(
            "{} is {len} bytes, more than a kept chat can be ({limit})",
            path.display()
        ));
    }
    let text = std::fs::read(&path).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&text);
    let mut lines = text.lines().skip(1);
    let review = lines
        .next()
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .and_then(|mut v| v.get_mut("review").map(Value::take))
        .unwrap_or(Value::Null);
    let mut records = Vec::new();
    let mut bad_lines = 0;
    for l in lines {
        match serde_json::from_str::<Value>(l) {
            Ok(v) if v.get("sessionUpdate").is_some_and(Value::is_string) => records.push(v),
            _ => bad_lines += 1,
        }
    }
    Ok(KeptChat {
        header,
        review,
        records,
        bad_lines,
    })
}

/// Deletes kept chat `id` of a project.
pub fn delete(cwd: &Path, id: &str) -> Result<(), String> {
    if !valid_id(id) {
        return Err(format!("not a kept chat id: {id:?}"));
    }
    let dir = project_dir(cwd).ok_or("chats are not kept")?;
    std::fs::remove_file(dir.join(format!("{id}.{EXT}"))).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_that_could_name_another_path_are_refused() {
        assert!(valid_id(&new_id(3)));
        for bad in ["", "../x", "a/b", "1.jsonl", "x", &"1".repeat(65)] {
            assert!(!valid_id(bad), "{bad}");
        }
        assert_eq!(project_name(Path::new("/a/b%c")), "%2Fa%2Fb%25c");
    }

    #[test]
    fn files_round_trip_and_projects_drop_their_oldest_files() {
        let root = std::env::temp_dir().join(format!("acp-kept-{}", new_id(0)));
        let limits = Limits {
            chat_max_bytes: 4096,
            project_max_bytes: 1 << 20,
            project_max_chats: 3,
        };
        configure(Some(root.clone()), limits);
        let cwd = Path::new("/proj/x");
        let mut ids = Vec::new();
        for i in 0..5 {
            let id = format!("{}-{i}", 1000 + i);
            let mut h = Header::new(id.clone(), "test".into(), cwd);
            h.updated = 100 + i;
            h.title = Some(format!("chat {i}"));
            let recs = [
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}),
            ];
            write(cwd, &id, &file_text(&h, &json!({"files": i}), recs.iter())).unwrap();
            // Distinct modification times, oldest first.
            std::thread::sleep(std::time::Duration::from_millis(15));
            ids.push(id);
        }
        let (list, problems) = list(cwd);
        assert!(problems.is_empty(), "{problems:?}");
        let titles: Vec<_> = list.iter().map(|h| h.title.clone().unwrap()).collect();
        assert_eq!(
            titles,
            vec!["chat 4", "chat 3", "chat 2"],
            "the two oldest went"
        );
        let chat = read(cwd, &ids[4]).unwrap();
        assert_eq!(chat.review, json!({"files": 4}));
        assert_eq!(chat.records.len(), 1);
        assert_eq!(chat.bad_lines, 0);
        assert!(read(cwd, &ids[0]).is_err());
        // A hostile file: bad JSON is reported, never read as a chat.
        let dir = project_dir(cwd).unwrap();
        std::fs::write(dir.join("9-9.jsonl"), "{not json\n").unwrap();
        std::fs::write(dir.join("8-8.jsonl"), format!("{}\n", json!({"acp_chat": 1, "id": "../8", "agent": "a", "cwd": "/", "created": 0, "updated": 0}))).unwrap();
        let (list, problems) = super::list(cwd);
        assert_eq!(list.len(), 3);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(read(cwd, "9-9").is_err());
        // A file larger than a chat can be is refused before it is read.
        let big = format!(
            "{}\n{}",
            serde_json::to_string(&Header::new("7-7".into(), "a".into(), cwd)).unwrap(),
            "x".repeat(REVIEW_MAX_BYTES + 200_000)
        );
        std::fs::write(dir.join("7-7.jsonl"), big).unwrap();
        assert!(read(cwd, "7-7")
            .unwrap_err()
            .contains("more than a kept chat can be"));
        // Saves of one chat at once (a turn's end and a disk edit): each
        // has its own temporary file, none fails, the file is one of them.
        let h = Header::new(ids[4].clone(), "test".into(), cwd);
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let (h, id) = (h.clone(), ids[4].clone());
                std::thread::spawn(move || {
                    for i in 0..25 {
                        let text = file_text(&h, &json!({"files": t * 100 + i}), [].iter());
                        write(cwd, &id, &text).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        assert!(read(cwd, &ids[4]).is_ok());
        assert!(!std::fs::read_dir(&dir).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")));
        configure(None, Limits::default());
        let _ = std::fs::remove_dir_all(root);
    }
}
