//! Disk side of `fs/*`: reading text files with clear errors, line/limit
//! slicing, and atomic writes that keep the file's mode.

use std::io::Write;
use std::path::Path;

/// A failure the agent gets as a JSON-RPC error: code and message.
#[derive(Debug, Clone, PartialEq)]
pub struct FsError {
    pub code: i32,
    pub message: String,
}

/// ACP's "resource not found".
pub const RESOURCE_NOT_FOUND: i32 = -32002;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL: i32 = -32603;

impl FsError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Reads a text file. Directories, missing files, binary or invalid UTF-8
/// content are errors naming the path and the reason.
pub fn read_text(path: &Path) -> Result<String, FsError> {
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
    if meta.is_dir() {
        return Err(FsError::new(
            INVALID_PARAMS,
            format!("{shown}: is a directory, not a file"),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| FsError::new(INTERNAL, format!("{shown}: {e}")))?;
    if bytes.contains(&0) {
        return Err(FsError::new(
            INVALID_PARAMS,
            format!("{shown}: binary file (contains NUL bytes), not text"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        FsError::new(
            INVALID_PARAMS,
            format!(
                "{shown}: not valid UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
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
/// created; an existing file keeps its permission bits.
pub fn write_atomic(path: &Path, content: &str) -> Result<(), FsError> {
    let shown = path.display();
    let dir = path
        .parent()
        .ok_or_else(|| FsError::new(INVALID_PARAMS, format!("{shown}: no parent directory")))?;
    std::fs::create_dir_all(dir)
        .map_err(|e| FsError::new(INTERNAL, format!("{}: cannot create: {e}", dir.display())))?;
    if path.is_dir() {
        return Err(FsError::new(
            INVALID_PARAMS,
            format!("{shown}: is a directory, not a file"),
        ));
    }
    let mode = std::fs::metadata(path).ok().map(|m| m.permissions());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    let tmp = dir.join(format!(".{name}.acp-{}-{nonce}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        if let Some(perm) = &mode {
            f.set_permissions(perm.clone())?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        FsError::new(INTERNAL, format!("{shown}: write failed: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
