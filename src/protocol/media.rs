//! Images and audio the agent sends (`image` / `audio` content blocks in
//! its messages, thoughts and tool-call content): each is decoded and saved
//! to a file of its own, in a folder per session under this Neovim's temp
//! folder (`$TMPDIR/acp.nvim-<pid>-<random>/media/<n>/`, made private by
//! us alone), removed when Neovim exits.
//! The block then carries what the transcript shows (`_acp: {path, bytes}`,
//! or `{error}`) instead of its data, so the kept chat holds a line, not the
//! bytes; the trace keeps the message as the agent sent it.
//!
//! A file's name never comes from the agent: `<kind>-<n>.<ext>`, the
//! extension from a list of known types. Data that is not base64, larger
//! than `MAX_MEDIA_BYTES`, or of a type not on the list is not saved: the
//! line says why.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::model::blocks::human_bytes;

/// The largest image or audio saved, decoded.
pub const MAX_MEDIA_BYTES: usize = 25 * 1024 * 1024;

/// The known types and the extension their files get.
const KNOWN: &[(&str, &str)] = &[
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/jpg", "jpg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
    ("image/bmp", "bmp"),
    ("image/svg+xml", "svg"),
    ("image/tiff", "tiff"),
    ("image/avif", "avif"),
    ("audio/wav", "wav"),
    ("audio/x-wav", "wav"),
    ("audio/wave", "wav"),
    ("audio/mpeg", "mp3"),
    ("audio/mp3", "mp3"),
    ("audio/ogg", "ogg"),
    ("audio/webm", "webm"),
    ("audio/flac", "flac"),
    ("audio/aac", "aac"),
    ("audio/mp4", "m4a"),
];

/// Blocks nest at most this deep in an update (tool content holds a block).
const MAX_DEPTH: usize = 6;

static FOLDERS: LazyLock<Mutex<HashMap<String, u64>>> = LazyLock::new(Default::default);
static NEXT_FOLDER: AtomicU64 = AtomicU64::new(0);
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// This Neovim's private top folder: `$TMPDIR/acp.nvim-<pid>-<random>`, made
/// by us alone (never an existing one: on a shared /tmp another user could
/// make the predictable name first, or plant a symlink in it), mode 0700.
/// None when it could not be made; then nothing is saved.
static TOP: LazyLock<Option<PathBuf>> = LazyLock::new(make_private_top);

fn make_private_top() -> Option<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for attempt in 0u32..64 {
        let salt = nanos
            .wrapping_mul(2_654_435_761)
            .wrapping_add(attempt.wrapping_mul(40_503));
        let dir = std::env::temp_dir().join(format!("acp.nvim-{}-{salt:08x}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Some(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return None,
        }
    }
    None
}

/// This Neovim's media folder (`<top>/media`); a path that does not exist
/// when the private top folder could not be made.
pub fn root() -> PathBuf {
    match &*TOP {
        Some(top) => top.join("media"),
        None => PathBuf::from("/nonexistent/acp.nvim-media"),
    }
}

/// Removes every saved file (Neovim exits). Only a top folder this process
/// made: nothing is made just to be removed.
pub fn remove_all() {
    if let Some(Some(top)) = LazyLock::get(&TOP) {
        let _ = std::fs::remove_dir_all(top);
    }
}

/// Whether `update` holds an image or audio block with data (cheap: no
/// copy is made for the updates that do not).
pub fn has_media(update: &Value) -> bool {
    fn walk(v: &Value, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        match v {
            Value::Object(o) => {
                is_media(o)
                    || o.values()
                        .any(|x| (x.is_object() || x.is_array()) && walk(x, depth + 1))
            }
            Value::Array(a) => a.iter().any(|x| walk(x, depth + 1)),
            _ => false,
        }
    }
    walk(update, 0)
}

fn is_media(o: &Map<String, Value>) -> bool {
    matches!(
        o.get("type").and_then(Value::as_str),
        Some("image" | "audio")
    ) && o.get("data").is_some_and(Value::is_string)
}

/// Saves every image and audio block of `update` (of session `session`)
/// and puts what the transcript shows in its place (see the module doc).
pub fn save_all(session: &str, update: &mut Value) {
    fn walk(v: &mut Value, depth: usize, session: &str) {
        if depth > MAX_DEPTH {
            return;
        }
        match v {
            Value::Object(o) => {
                if is_media(o) {
                    save_block(session, o);
                    return;
                }
                for x in o.values_mut() {
                    walk(x, depth + 1, session);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, depth + 1, session)),
            _ => {}
        }
    }
    walk(update, 0, session);
}

fn save_block(session: &str, block: &mut Map<String, Value>) {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("image")
        .to_owned();
    let data = match block.remove("data") {
        Some(Value::String(s)) => s,
        _ => return,
    };
    let mime = block
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    let note = match save(session, &kind, &mime, &data) {
        Ok((path, bytes)) => json!({ "path": path, "bytes": bytes }),
        Err(error) => json!({ "error": error }),
    };
    block.insert("_acp".into(), note);
}

/// The file for one block: its path and size, or why it was not saved.
fn save(session: &str, kind: &str, mime: &str, data: &str) -> Result<(String, usize), String> {
    let ext = KNOWN
        .iter()
        .find(|(m, _)| *m == mime && m.starts_with(kind))
        .map(|(_, e)| *e)
        .ok_or_else(|| "not a known type".to_owned())?;
    // Checked before decoding: 4 characters of base64 are 3 bytes.
    let estimate = data.len() / 4 * 3;
    if estimate > MAX_MEDIA_BYTES + 3 {
        return Err(format!(
            "{}, over the {} limit",
            human_bytes(estimate),
            human_bytes(MAX_MEDIA_BYTES)
        ));
    }
    let bytes = decode_base64(data).ok_or_else(|| "the data is not valid base64".to_owned())?;
    if bytes.len() > MAX_MEDIA_BYTES {
        return Err(format!(
            "{}, over the {} limit",
            human_bytes(bytes.len()),
            human_bytes(MAX_MEDIA_BYTES)
        ));
    }
    let folder = {
        let mut folders = FOLDERS.lock();
        *folders
            .entry(session.to_owned())
            .or_insert_with(|| NEXT_FOLDER.fetch_add(1, Ordering::Relaxed) + 1)
    };
    if TOP.is_none() {
        return Err("not saved: no private temporary folder could be made".to_owned());
    }
    let dir = root().join(folder.to_string());
    create_private_dir(&dir).map_err(|e| format!("not saved: {e}"))?;
    let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed) + 1;
    let path = dir.join(format!("{kind}-{n}.{ext}"));
    write_new(&path, &bytes).map_err(|e| format!("not saved: {e}"))?;
    Ok((path.to_string_lossy().into_owned(), bytes.len()))
}

/// A new file (never an existing one, never through a symlink), mode 0600.
fn write_new(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)
}

fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Standard base64 (also URL-safe), padding optional, whitespace ignored.
pub fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits, mut pad) = (0u32, 0u32, false);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                pad = true;
                continue;
            }
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        if pad {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits of a truncated quantum must be zero padding (a single
    // leftover character cannot encode a byte).
    if bits >= 6 || acc != 0 {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_media_folder_is_made_private_by_us_and_files_are_never_written_through_a_planted_link() {
        use std::os::unix::fs::PermissionsExt;
        let top = root().parent().unwrap().to_path_buf();
        let name = top.file_name().unwrap().to_string_lossy().into_owned();
        // Not the predictable name another user could make first.
        assert!(name.starts_with(&format!("acp.nvim-{}-", std::process::id())));
        assert_ne!(name, format!("acp.nvim-{}", std::process::id()));
        let mode = std::fs::metadata(&top).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{top:?}");
        // A file that exists already (a planted symlink) is never written through.
        let victim = top.join("victim.txt");
        std::fs::write(&victim, "mine").unwrap();
        let planted = top.join("planted.png");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        assert!(write_new(&planted, b"agent bytes").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        let fresh = top.join("fresh.png");
        write_new(&fresh, b"x").unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        for p in [&victim, &planted, &fresh] {
            let _ = std::fs::remove_file(p);
        }
    }

    #[test]
    fn base64_decodes_and_refuses_what_is_not() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVsbG8").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVs\nbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("").unwrap(), b"");
        assert!(decode_base64("not base64!").is_none());
        assert!(decode_base64("aGVsbG8=x").is_none(), "data after padding");
        assert!(decode_base64("a").is_none(), "a lone character");
    }

    #[test]
    fn a_saved_block_carries_its_file_and_no_data_and_the_name_is_ours() {
        let mut update = json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=", "uri": "../../evil.sh"}});
        assert!(has_media(&update));
        save_all("s", &mut update);
        let c = &update["content"];
        assert!(c.get("data").is_none());
        let path = c["_acp"]["path"].as_str().unwrap();
        assert_eq!(c["_acp"]["bytes"], 8);
        assert!(path.starts_with(root().to_str().unwrap()), "{path}");
        let name = std::path::Path::new(path)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        assert!(
            name.starts_with("image-") && name.ends_with(".png"),
            "{name}"
        );
        assert_eq!(std::fs::read(path).unwrap().len(), 8);
        assert!(!has_media(&update), "saved once");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn unknown_types_and_bad_data_are_lines_not_files() {
        let mut update = json!({"sessionUpdate": "tool_call", "content": [
            {"type": "content", "content": {"type": "image", "mimeType": "image/x-evil", "data": "AAAA"}},
            {"type": "content", "content": {"type": "audio", "mimeType": "audio/wav", "data": "%%%"}},
            {"type": "content", "content": {"type": "audio", "mimeType": "image/png", "data": "AAAA"}},
        ]});
        save_all("s", &mut update);
        let err = |i: usize| {
            update["content"][i]["content"]["_acp"]["error"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(err(0), "not a known type");
        assert_eq!(err(1), "the data is not valid base64");
        assert_eq!(err(2), "not a known type", "an audio block must be audio");
    }

    #[test]
    fn data_over_the_limit_is_refused_before_it_is_decoded() {
        let data = "A".repeat(MAX_MEDIA_BYTES / 3 * 4 + 8);
        let err = save("s", "image", "image/png", &data).unwrap_err();
        assert_eq!(err, "25.0 MB, over the 25.0 MB limit");
    }
}
