//! Which paths an agent may touch: a session's roots are its cwd plus any
//! additional directories. Paths are compared after resolving symlinks, so a
//! link inside a root that points outside it does not count as inside.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Roots {
    /// Canonical (symlink-free) root directories.
    roots: Vec<PathBuf>,
}

impl Roots {
    pub fn new(dirs: &[PathBuf]) -> Self {
        let roots = dirs.iter().map(|d| resolve_lenient(d)).collect();
        Self { roots }
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Checks `path` (as the agent sent it). Returns the resolved path when
    /// it is inside a root, or when `allow_outside` is set.
    pub fn check(&self, path: &str, allow_outside: bool) -> Result<PathBuf, String> {
        let p = Path::new(path);
        if !p.is_absolute() {
            return Err(format!("{path}: the path must be absolute"));
        }
        let resolved = resolve_lenient(p);
        if allow_outside || self.contains(&resolved) {
            return Ok(resolved);
        }
        let via_link = if normalize(p) != resolved {
            " (through a symlink)"
        } else {
            ""
        };
        Err(format!(
            "{path}: outside the session's roots{via_link} ({}); the user's configuration does not allow it",
            self.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
        ))
    }

    pub fn contains(&self, resolved: &Path) -> bool {
        self.roots.iter().any(|r| resolved.starts_with(r))
    }
}

/// Removes `.` and resolves `..` lexically.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The real path of `p`: the longest existing ancestor is canonicalized
/// (resolving symlinks), the rest (not yet created files) is appended.
pub fn resolve_lenient(p: &Path) -> PathBuf {
    let p = normalize(p);
    let mut existing = p.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_owned()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    #[test]
    fn inside_outside_relative_and_dotdot() {
        let root_dir = TempDir::new("roots-basic");
        let root = root_dir.path().to_path_buf();
        std::fs::write(root.join("a.txt"), "x").unwrap();
        let roots = Roots::new(&[root.clone()]);
        let real = std::fs::canonicalize(&root).unwrap();
        assert_eq!(
            roots
                .check(root.join("a.txt").to_str().unwrap(), false)
                .unwrap(),
            real.join("a.txt")
        );
        // New files in new directories are inside too.
        assert!(roots
            .check(root.join("new/dir/b.txt").to_str().unwrap(), false)
            .is_ok());
        assert!(roots
            .check("relative/path", false)
            .unwrap_err()
            .contains("must be absolute"));
        let escape = format!("{}/../outside.txt", root.display());
        assert!(roots
            .check(&escape, false)
            .unwrap_err()
            .contains("outside the session's roots"));
        assert!(roots.check(&escape, true).is_ok());
    }

    #[test]
    fn symlink_escape_is_refused() {
        let root_dir = TempDir::new("roots-link-root");
        let root = root_dir.path().to_path_buf();
        let outside_dir = TempDir::new("roots-link-outside");
        let outside = outside_dir.path().to_path_buf();
        std::fs::write(outside.join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        let roots = Roots::new(&[root.clone()]);
        let err = roots
            .check(root.join("link/secret.txt").to_str().unwrap(), false)
            .unwrap_err();
        assert!(err.contains("through a symlink"), "{err}");
        // A file created through the link would land outside as well.
        assert!(roots
            .check(root.join("link/new.txt").to_str().unwrap(), false)
            .is_err());
    }

    #[test]
    fn additional_roots_count() {
        let a_dir = TempDir::new("roots-multi-a");
        let a = a_dir.path().to_path_buf();
        let b_dir = TempDir::new("roots-multi-b");
        let b = b_dir.path().to_path_buf();
        let roots = Roots::new(&[a.clone(), b.clone()]);
        assert!(roots.check(b.join("f").to_str().unwrap(), false).is_ok());
        assert_eq!(roots.dirs().len(), 2);
    }
}
