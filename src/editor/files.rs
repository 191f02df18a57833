//! The file list behind `@` completion: every file under a root that the
//! ignore rules leave in (`.gitignore` at any level, `.ignore`, git's
//! `info/exclude` and global excludes). Hidden files are listed; the
//! directories of version control systems are not. The walk is parallel and
//! runs on a blocking thread of the runtime; the list reaches Lua through
//! the bridge (`UiEvent::Files`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use ignore::{DirEntry, WalkBuilder, WalkState};
use parking_lot::Mutex;

/// Directories never listed, whatever the ignore files say.
const SKIPPED_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj"];

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Listing {
    /// Paths relative to the root, `/`-separated, sorted.
    pub paths: Vec<String>,
    /// True when the walk stopped at `max` files.
    pub truncated: bool,
}

fn is_skipped_dir(entry: &DirEntry) -> bool {
    entry.depth() > 0
        && entry.file_type().is_some_and(|t| t.is_dir())
        && SKIPPED_DIRS.iter().any(|d| entry.file_name() == *d)
}

/// Only regular files are offered: a FIFO, socket or device would block or
/// never end when the mention is read. A symlink is offered only when it
/// leads to a regular file inside the root (`real_root`, canonical): a link
/// an agent planted towards `~/.ssh/id_rsa` is not.
fn listable(entry: &DirEntry, real_root: &Path) -> bool {
    let Some(t) = entry.file_type() else {
        return false;
    };
    if t.is_file() {
        return true;
    }
    if !t.is_symlink() {
        return false;
    }
    match std::fs::canonicalize(entry.path()) {
        Ok(real) => {
            real.starts_with(real_root) && std::fs::metadata(&real).is_ok_and(|m| m.is_file())
        }
        Err(_) => false,
    }
}

/// Collects one walker thread's paths and hands them over when the thread's
/// visitor is dropped (at the end of the walk): no lock per file.
struct Collector<'a> {
    local: Vec<String>,
    shared: &'a Mutex<Vec<String>>,
}

impl Drop for Collector<'_> {
    fn drop(&mut self) {
        self.shared.lock().append(&mut self.local);
    }
}

/// Lists the files under `root` (at most `max`). Blocking: call it from a
/// blocking task, never from Neovim's main thread.
pub fn walk(root: &Path, max: usize) -> Result<Listing, String> {
    let meta = std::fs::metadata(root).map_err(|e| format!("{}: {e}", root.display()))?;
    if !meta.is_dir() {
        return Err(format!("{}: not a directory", root.display()));
    }
    let real_root = std::fs::canonicalize(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let real_root = &real_root;
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .follow_links(false)
        // A .gitignore counts even outside a git repository: it is what
        // the user wrote down as noise.
        .require_git(false)
        .filter_entry(|e| !is_skipped_dir(e));
    let shared = Mutex::new(Vec::new());
    let count = AtomicUsize::new(0);
    let truncated = AtomicBool::new(false);
    builder.build_parallel().run(|| {
        let mut collector = Collector {
            local: Vec::new(),
            shared: &shared,
        };
        let count = &count;
        let truncated = &truncated;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !listable(&entry, &real_root) {
                return WalkState::Continue;
            }
            let Some(rel) = entry.path().strip_prefix(root).ok().and_then(Path::to_str) else {
                return WalkState::Continue;
            };
            if count.fetch_add(1, Ordering::Relaxed) >= max {
                truncated.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            let rel = if std::path::MAIN_SEPARATOR == '/' {
                rel.to_owned()
            } else {
                rel.replace(std::path::MAIN_SEPARATOR, "/")
            };
            collector.local.push(rel);
            WalkState::Continue
        })
    });
    let mut paths = shared.into_inner();
    paths.sort_unstable();
    Ok(Listing {
        paths,
        truncated: truncated.into_inner(),
    })
}

/// A listing ready for queries: lower-cased copies and where each file
/// name starts, computed once per walk.
struct Index {
    paths: Vec<String>,
    lower: Vec<String>,
    name_at: Vec<usize>,
}

impl Index {
    fn new(paths: Vec<String>) -> Self {
        let lower = paths.iter().map(|p| p.to_lowercase()).collect();
        let name_at = paths
            .iter()
            .map(|p| p.rfind('/').map_or(0, |i| i + 1))
            .collect();
        Index {
            paths,
            lower,
            name_at,
        }
    }
}

/// The last listing of each root. Queries run on the main thread and only
/// their few results cross to Lua: a 100k-file list never becomes a Lua
/// table.
static INDEXES: Mutex<Option<HashMap<String, Arc<Index>>>> = Mutex::new(None);

/// Keeps `paths` as the listing of `root` for `query`.
pub fn store(root: &str, paths: Vec<String>) {
    let index = Arc::new(Index::new(paths));
    INDEXES
        .lock()
        .get_or_insert_with(HashMap::new)
        .insert(root.to_owned(), index);
}

/// Rank of a match (lower is better): the file name starts with the
/// needle, the file name contains it, the path starts with it, the path
/// contains it. `None`: no match.
fn rank(path: &str, name_at: usize, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return Some(3);
    }
    let first = path.find(needle)?;
    let at = if first < name_at {
        path.get(name_at..)
            .and_then(|name| name.find(needle))
            .map_or(first, |i| name_at + i)
    } else {
        first
    };
    Some(if at == name_at {
        0
    } else if at > name_at {
        1
    } else if at == 0 {
        2
    } else {
        3
    })
}

/// Up to `limit` paths of `root`'s listing that contain `needle` (smart
/// case: case-sensitive only when it has an upper-case letter), best ranked
/// first, listing order within a rank. `None` when `root` was never listed.
pub fn query(root: &str, needle: &str, limit: usize) -> Option<Vec<String>> {
    let index = INDEXES.lock().as_ref()?.get(root)?.clone();
    let smart = needle.chars().any(char::is_uppercase);
    let haystack = if smart { &index.paths } else { &index.lower };
    let mut buckets: [Vec<usize>; 4] = Default::default();
    for (i, path) in haystack.iter().enumerate() {
        if let Some(r) = rank(path, index.name_at[i], needle) {
            if buckets[r].len() < limit {
                buckets[r].push(i);
                if r == 0 && buckets[0].len() == limit {
                    break;
                }
            }
        }
    }
    Some(
        buckets
            .iter()
            .flatten()
            .take(limit)
            .map(|&i| index.paths[i].clone())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::Instant;

    use crate::testutil::TempDir;

    #[test]
    fn gitignore_rules_are_respected_and_vcs_dirs_skipped() {
        let t = TempDir::new("ignore");
        t.write(".gitignore", "target/\n*.log\n!keep.log\n");
        t.write("src/main.rs", "");
        t.write("src/sub/.gitignore", "secret.txt\n");
        t.write("src/sub/secret.txt", "");
        t.write("src/sub/open.txt", "");
        t.write("target/debug/out", "");
        t.write("run.log", "");
        t.write("keep.log", "");
        t.write(".hidden.toml", "");
        t.write(".ignore", "generated/\n");
        t.write("generated/x.rs", "");
        t.write(".git/config", "");
        t.write(".git/HEAD", "");
        let listing = walk(&t.path(), 1000).unwrap();
        assert_eq!(
            listing.paths,
            vec![
                ".gitignore",
                ".hidden.toml",
                ".ignore",
                "keep.log",
                "src/main.rs",
                "src/sub/.gitignore",
                "src/sub/open.txt",
            ]
        );
        assert!(!listing.truncated);
    }

    #[test]
    fn only_regular_files_and_links_to_files_inside_the_root_are_listed() {
        let t = TempDir::new("special");
        let outside = TempDir::new("special-outside");
        t.write("a.txt", "a");
        t.write("sub/b.txt", "b");
        outside.write("secret.txt", "s");
        let fifo = std::ffi::CString::new(t.path().join("pipe").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let sock = std::os::unix::net::UnixListener::bind(t.path().join("sock")).unwrap();
        use std::os::unix::fs::symlink;
        symlink(outside.path().join("secret.txt"), t.path().join("leak.txt")).unwrap();
        symlink(outside.path(), t.path().join("leakdir")).unwrap();
        symlink(t.path().join("sub/b.txt"), t.path().join("alias.txt")).unwrap();
        symlink(t.path().join("sub"), t.path().join("subdir-link")).unwrap();
        symlink(t.path().join("nothing"), t.path().join("dangling")).unwrap();
        symlink(t.path().join("pipe"), t.path().join("pipe-link")).unwrap();
        let listing = walk(&t.path(), 100).unwrap();
        assert_eq!(listing.paths, vec!["a.txt", "alias.txt", "sub/b.txt"]);
        drop(sock);
    }

    #[test]
    fn the_walk_stops_at_max_and_says_so() {
        let t = TempDir::new("max");
        for i in 0..20 {
            t.write(&format!("f{i:02}"), "");
        }
        let listing = walk(&t.path(), 5).unwrap();
        assert_eq!(listing.paths.len(), 5);
        assert!(listing.truncated);
        assert!(!walk(&t.path(), 20).unwrap().truncated);
    }

    #[test]
    fn a_missing_root_or_a_file_is_an_error() {
        let t = TempDir::new("err");
        t.write("file", "");
        assert!(walk(&t.path().join("nope"), 10)
            .unwrap_err()
            .contains("nope"));
        assert!(walk(&t.path().join("file"), 10)
            .unwrap_err()
            .contains("not a directory"));
    }

    #[test]
    fn queries_rank_file_names_first_with_smart_case() {
        let root = "/query-test-root";
        store(
            root,
            [
                "Makefile",
                "docs/make.md",
                "make/x.rs",
                "src/bake.rs",
                "src/remake.rs",
                "src/unrelated.rs",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        );
        assert_eq!(
            query(root, "make", 10).unwrap(),
            vec!["Makefile", "docs/make.md", "src/remake.rs", "make/x.rs"]
        );
        assert_eq!(query(root, "Make", 10).unwrap(), vec!["Makefile"]);
        assert_eq!(
            query(root, "make", 2).unwrap(),
            vec!["Makefile", "docs/make.md"]
        );
        assert_eq!(
            query(root, "", 3).unwrap(),
            vec!["Makefile", "docs/make.md", "make/x.rs"]
        );
        assert!(query(root, "zzz", 10).unwrap().is_empty());
        assert!(query("/never-listed", "", 10).is_none());
    }

    /// 100,000 files in 1,000 directories (plus an ignored directory of
    /// 10,000 more): the walk lists exactly the 100,000. Prints the time
    /// (`cargo test --release -p acp-nvim walk_of_100k -- --nocapture`);
    /// no timed assertion, machines differ.
    #[test]
    fn walk_of_100k_files_completes() {
        let t = TempDir::new("100k");
        t.write(".gitignore", "build/\n");
        for d in 0..1000 {
            let dir = t.path().join(format!("pkg{:03}/src", d));
            fs::create_dir_all(&dir).unwrap();
            for f in 0..100 {
                fs::File::create(dir.join(format!("file{f:03}.rs"))).unwrap();
            }
        }
        for d in 0..10 {
            let dir = t.path().join(format!("build/out{d}"));
            fs::create_dir_all(&dir).unwrap();
            for f in 0..1000 {
                fs::File::create(dir.join(format!("obj{f}.o"))).unwrap();
            }
        }
        let start = Instant::now();
        let listing = walk(&t.path(), 1_000_000).unwrap();
        let took = start.elapsed();
        eprintln!("walk of {} files: {:?}", listing.paths.len(), took);
        // 100,000 files plus the .gitignore.
        assert_eq!(listing.paths.len(), 100_001);
        assert!(listing.paths.iter().all(|p| !p.starts_with("build/")));
        assert_eq!(listing.paths[1], "pkg000/src/file000.rs");
        let root = t.path().to_string_lossy().into_owned();
        store(&root, listing.paths);
        let start = Instant::now();
        let hits = query(&root, "pkg999/src/file09", 50).unwrap();
        eprintln!("query over 100k paths: {:?}", start.elapsed());
        assert_eq!(hits.len(), 10);
    }
}
