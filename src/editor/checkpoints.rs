//! Checkpoints: for each turn of a chat, the agent's steps on each file it
//! changed during the turn (the text right before and right after each,
//! as the review records hold them), so that the files can be put back to
//! their state before any turn. Steps come from the client's writes, the
//! agent's own disk edits the buffer sync sees, and, in a git repository,
//! the files a turn's commands changed (a snapshot tree of the work tree
//! at the turn's start and end, written through a temporary index: the
//! user's index and stash list are never touched).
//!
//! Restoring to before turn T takes back the steps of turns T and later,
//! newest first, each as a three-way merge that keeps edits made since
//! (`crate::editor::review::review_base`). Bounded by
//! `checkpoints.max_bytes`: the oldest turns go first.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::editor::review::{review_base, ReviewBase};
use crate::editor::state::{ChangeRecord, EditorState, KeptOriginal, Original, Step, WriteTarget};
pub use crate::editor::state::{Checkpoint, Checkpoints};

/// `checkpoints.max_bytes`: the texts of all checkpoints of a chat.
pub static MAX_BYTES: AtomicUsize = AtomicUsize::new(64 << 20);
/// `checkpoints.git`: snapshot trees in a git repository.
pub static GIT: AtomicBool = AtomicBool::new(true);

/// A checkpoint as Lua lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CheckpointInfo {
    pub id: u64,
    pub user_index: usize,
    pub prompt: String,
    pub time: f64,
    pub files: Vec<String>,
    pub git: bool,
    pub undone: bool,
    pub bytes: usize,
}

impl EditorState {
    /// A turn starts: its checkpoint opens. Older checkpoints over the cap
    /// are dropped (returned: the chat says so).
    pub fn checkpoint_begin(&self, user_index: usize, prompt: &str, time: f64) -> (u64, Vec<u64>) {
        let mut cps = self.checkpoints.lock();
        let id = cps.list.last().map_or(1, |c| c.id + 1);
        cps.list.push(Checkpoint {
            id,
            user_index,
            prompt: prompt.chars().take(2000).collect(),
            time,
            steps: Vec::new(),
            git_tree: None,
            undone: false,
        });
        let max = MAX_BYTES.load(Ordering::Relaxed);
        let mut total: usize = cps.list.iter().map(Checkpoint::bytes).sum();
        let mut dropped = Vec::new();
        while total > max && cps.list.len() > 1 {
            let c = cps.list.remove(0);
            total -= c.bytes();
            dropped.push(c.id);
        }
        cps.dropped += dropped.len();
        (id, dropped)
    }

    /// Steps added to checkpoint `id` from outside (a command's changes
    /// the git snapshots saw), unless the turn recorded the path already.
    pub fn checkpoint_add(&self, id: u64, path: &str, before: Original, after: Original) {
        let label = format!("a checkpoint text of {path}");
        let step = Step {
            before: KeptOriginal::keep(self.owner, label.clone(), before),
            after: KeptOriginal::keep(self.owner, label, after),
        };
        let mut cps = self.checkpoints.lock();
        if let Some(cp) = cps.list.iter_mut().find(|c| c.id == id) {
            if !cp.steps.iter().any(|(p, _)| p == path) {
                cp.steps.push((path.to_owned(), step));
            }
        }
    }

    pub fn checkpoint_set_git(&self, id: u64, tree: String) {
        if let Some(cp) = self.checkpoints.lock().list.iter_mut().find(|c| c.id == id) {
            cp.git_tree = Some(tree);
        }
    }

    pub fn checkpoint_git_tree(&self, id: u64) -> Option<String> {
        self.checkpoints
            .lock()
            .list
            .iter()
            .find(|c| c.id == id)
            .and_then(|c| c.git_tree.clone())
    }

    pub fn checkpoints_list(&self) -> Vec<CheckpointInfo> {
        self.checkpoints
            .lock()
            .list
            .iter()
            .map(|c| CheckpointInfo {
                id: c.id,
                user_index: c.user_index,
                prompt: c.prompt.clone(),
                time: c.time,
                files: c.paths(),
                git: c.git_tree.is_some(),
                undone: c.undone,
                bytes: c.bytes(),
            })
            .collect()
    }

    /// The files a restore to before turn `id` puts back: those changed in
    /// turn `id` and later turns not yet undone.
    pub fn checkpoint_paths(&self, id: u64) -> Option<Vec<String>> {
        let cps = self.checkpoints.lock();
        if !cps.list.iter().any(|c| c.id == id) {
            return None;
        }
        let mut out: Vec<String> = Vec::new();
        for c in cps.list.iter().filter(|c| c.id >= id && !c.undone) {
            for p in c.paths() {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        Some(out)
    }

    /// What `path` is with the steps of turn `id` and later (not undone)
    /// taken back from `now`, keeping every edit made since.
    pub fn checkpoint_base(&self, id: u64, path: &str, now: Option<&str>) -> Option<ReviewBase> {
        let steps: Vec<Step> = {
            let cps = self.checkpoints.lock();
            cps.list
                .iter()
                .filter(|c| c.id >= id && !c.undone)
                .flat_map(|c| c.steps.iter().filter(|(p, _)| p == path))
                .map(|(_, s)| s.clone())
                .collect()
        };
        if steps.is_empty() {
            return None;
        }
        let rec = ChangeRecord {
            path: path.to_owned(),
            time: 0.0,
            tool_call_id: None,
            target: WriteTarget::Agent,
            saved: true,
            original: KeptOriginal::Unknown,
            changes: steps.len(),
            steps,
            accepted: false,
        };
        Some(review_base(&rec, now))
    }

    /// Marks turn `id` and the later ones undone; returns their ids.
    pub fn checkpoint_undone(&self, id: u64) -> Vec<u64> {
        let mut out = Vec::new();
        for c in self.checkpoints.lock().list.iter_mut() {
            if c.id >= id && !c.undone {
                c.undone = true;
                out.push(c.id);
            }
        }
        out
    }
}

// Git snapshots ----------------------------------------------------------------

#[cfg(test)]
thread_local! {
    /// `git` runs on this thread (the tests count them).
    static GIT_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn git(dir: &Path, index: Option<&Path>, args: &[&str]) -> Option<String> {
    #[cfg(test)]
    GIT_RUNS.with(|n| n.set(n.get() + 1));
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(args);
    cmd.env("GIT_OPTIONAL_LOCKS", "0");
    if let Some(i) = index {
        cmd.env("GIT_INDEX_FILE", i);
    }
    cmd.stdin(std::process::Stdio::null());
    cmd.stderr(std::process::Stdio::null());
    let out = cmd.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The git work tree a chat's folder is in: its top and its git directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRepo {
    pub top: PathBuf,
    gitdir: PathBuf,
}

/// The nearest `.git` (a directory, or a file for a worktree or a
/// submodule) at or above `dir`.
fn nearest_dot_git(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .map(|d| d.join(".git"))
        .find(|p| p.symlink_metadata().is_ok())
}

/// The git work tree holding `cwd`, if any. Every prompt asks, before it
/// goes out, so a `git` run (2 ms) is saved where it can be: a folder with
/// no `.git` above its real path is in no work tree (unless `GIT_DIR` says
/// otherwise), and the answer for a folder is kept while its nearest
/// `.git` is the same one (a repository created in between is found).
pub fn git_repo(cwd: &Path) -> Option<GitRepo> {
    static KNOWN: parking_lot::Mutex<Vec<(PathBuf, PathBuf, GitRepo)>> =
        parking_lot::Mutex::new(Vec::new());
    if !GIT.load(Ordering::Relaxed) {
        return None;
    }
    let marker = if std::env::var_os("GIT_DIR").is_none() {
        // Where git looks: a symbolic link in `cwd` is resolved first.
        let marker = nearest_dot_git(&cwd.canonicalize().ok()?)?;
        let known = KNOWN.lock();
        if let Some((_, _, repo)) = known.iter().find(|(c, m, _)| c == cwd && *m == marker) {
            return Some(repo.clone());
        }
        Some(marker)
    } else {
        None
    };
    let out = git(
        cwd,
        None,
        &["rev-parse", "--show-toplevel", "--absolute-git-dir"],
    )?;
    let mut lines = out.lines();
    let (top, gitdir) = (lines.next()?, lines.next()?);
    if top.is_empty() || gitdir.is_empty() {
        return None;
    }
    let repo = GitRepo {
        top: PathBuf::from(top),
        gitdir: PathBuf::from(gitdir),
    };
    if let Some(marker) = marker {
        let mut known = KNOWN.lock();
        known.retain(|(c, _, _)| c != cwd);
        known.push((cwd.to_owned(), marker, repo.clone()));
    }
    Some(repo)
}

/// A tree of the work tree now (tracked and untracked files, ignored ones
/// left out), written through a temporary copy of the index. Blocking.
pub fn git_snapshot(repo: &GitRepo) -> Option<String> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let tmp = std::env::temp_dir().join(format!(
        "acp-checkpoint-{}-{}.index",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    // A copy of the user's index: unchanged files are not hashed again.
    let _ = std::fs::copy(repo.gitdir.join("index"), &tmp);
    let top = &repo.top;
    let tree = git(top, Some(&tmp), &["add", "-A", "--", "."])
        .and_then(|_| git(top, Some(&tmp), &["write-tree"]));
    let _ = std::fs::remove_file(&tmp);
    tree.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}

/// Files that differ between trees `a` and `b`: (absolute path, text in
/// `a`, text in `b`) with `Absent` for a file not in a tree.
pub fn git_changes(top: &Path, a: &str, b: &str) -> Vec<(String, Original, Original)> {
    let Some(names) = git(top, None, &["diff-tree", "-r", "-z", "--name-only", a, b]) else {
        return Vec::new();
    };
    let blob = |tree: &str, rel: &str| match git(
        top,
        None,
        &["cat-file", "blob", &format!("{tree}:{rel}")],
    ) {
        Some(t) => Original::Text(Arc::new(t)),
        None => Original::Absent,
    };
    names
        .split('\0')
        .filter(|n| !n.is_empty())
        .take(1000)
        .map(|rel| {
            (
                top.join(rel).to_string_lossy().into_owned(),
                blob(a, rel),
                blob(b, rel),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Original {
        Original::Text(Arc::new(s.to_owned()))
    }

    fn write(ed: &EditorState, path: &str, before: Original, after: Original) {
        ed.record_change(path, WriteTarget::Buffer, true, before, after, None, 1.0);
    }

    #[test]
    fn a_folder_in_no_work_tree_costs_no_git_run_and_a_known_work_tree_is_kept() {
        let dir = crate::testutil::TempDir::new("git-repo");
        let runs = || GIT_RUNS.with(|n| n.get());
        let plain = dir.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        // (Only where the temporary folder is itself in no work tree.)
        if nearest_dot_git(&dir.path().canonicalize().unwrap()).is_none() {
            let before = runs();
            assert_eq!(git_repo(&plain), None);
            assert_eq!(runs(), before, "no .git above: git is not run");
        }
        let repo = dir.path().join("repo");
        let cwd = repo.join("sub");
        std::fs::create_dir_all(&cwd).unwrap();
        assert!(git(&repo, None, &["init", "-q"]).is_some());
        let found = git_repo(&cwd).expect("a work tree");
        assert_eq!(found.top, repo.canonicalize().unwrap());
        let before = runs();
        assert_eq!(git_repo(&cwd), Some(found));
        assert_eq!(runs(), before, "known: git is not run again");
        // A repository created in between is found.
        assert!(git(&cwd, None, &["init", "-q"]).is_some());
        let inner = git_repo(&cwd).expect("the new work tree");
        assert_eq!(inner.top, cwd.canonicalize().unwrap());
        // The snapshot reads the index of the repository it was given.
        dir.write("repo/sub/a.txt", "a");
        assert!(git_snapshot(&inner).is_some());
    }

    #[test]
    fn restoring_to_before_a_turn_takes_back_that_turn_and_the_later_ones() {
        let ed = EditorState::default();
        ed.checkpoint_begin(0, "one", 1.0);
        write(&ed, "/p/a", text("a0\n"), text("a1\n"));
        ed.checkpoint_begin(1, "two", 2.0);
        write(&ed, "/p/a", text("a1\n"), text("a2\n"));
        write(&ed, "/p/b", Original::Absent, text("new\n"));
        ed.checkpoint_begin(2, "three", 3.0);
        write(&ed, "/p/a", text("a2\n"), text("a3\n"));
        assert_eq!(ed.checkpoint_paths(2).unwrap(), vec!["/p/a", "/p/b"]);
        let a = ed.checkpoint_base(2, "/p/a", Some("a3\n")).unwrap();
        assert_eq!(a.text.as_deref(), Some("a1\n"));
        let b = ed.checkpoint_base(2, "/p/b", Some("new\n")).unwrap();
        assert!(b.absent);
        // A line the user added since stays.
        let a = ed.checkpoint_base(1, "/p/a", Some("mine\na3\n")).unwrap();
        assert_eq!(a.text.as_deref(), Some("mine\na0\n"));
        // Undone turns are not taken back twice.
        assert_eq!(ed.checkpoint_undone(3), vec![3]);
        assert_eq!(ed.checkpoint_paths(3).unwrap(), Vec::<String>::new());
        let a = ed.checkpoint_base(2, "/p/a", Some("a2\n")).unwrap();
        assert_eq!(a.text.as_deref(), Some("a1\n"));
    }

    #[test]
    fn the_oldest_checkpoints_go_past_the_cap_and_survive_an_export() {
        let ed = EditorState::default();
        ed.checkpoint_begin(0, "one", 1.0);
        write(&ed, "/p/a", text(&"x".repeat(100)), text("y"));
        let old = MAX_BYTES.swap(50, Ordering::Relaxed);
        let (_, dropped) = ed.checkpoint_begin(1, "two", 2.0);
        MAX_BYTES.store(old, Ordering::Relaxed);
        assert_eq!(dropped, vec![1]);
        write(&ed, "/p/a", text("y"), Original::Absent);
        let mut budget = usize::MAX;
        let saved = ed.checkpoints_export(&mut budget);
        let back = EditorState::default();
        back.checkpoints_import(
            serde_json::from_value(serde_json::to_value(saved).unwrap()).unwrap(),
        );
        let list = back.checkpoints_list();
        assert_eq!(list.len(), 1);
        assert_eq!(
            (list[0].id, list[0].files.clone()),
            (2, vec!["/p/a".to_owned()])
        );
        let a = back.checkpoint_base(2, "/p/a", None).unwrap();
        assert_eq!(a.text.as_deref(), Some("y"));
    }
}
