//! What the editor side of a chat holds: the user's policy for this chat,
//! the roots that confine file access, what the agent was served and wrote,
//! and the terminals it runs. Plain state; the handlers act on it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::config::Policy;
use crate::editor::kept::KeptText;
use crate::editor::roots::Roots;
use crate::editor::terminal::Terminals;

/// The text of a file before the session changed it.
#[derive(Debug, Clone, PartialEq)]
pub enum Original {
    Text(std::sync::Arc<String>),
    /// This client's own write created the file: only then may review
    /// delete it.
    Absent,
    /// It could not be read (a claim in a card never counts as knowing).
    Unknown,
}

/// An original as a change record keeps it: its text under the cap of all
/// kept texts (`kept`), dropped (then unknown) when older ones must go.
#[derive(Debug, Clone)]
pub(crate) enum KeptOriginal {
    Text(KeptText),
    Absent,
    Unknown,
}

/// Who wrote a changed file (`target` of a change record in Lua).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteTarget {
    /// This client wrote the file's buffer.
    Buffer,
    /// This client wrote the file on disk (no buffer was loaded).
    Disk,
    /// The agent wrote the disk itself (seen by the view's buffer sync).
    Agent,
}

/// One change of the agent's to a file: the text right before it and right
/// after it, as the buffer (or the file, without one) held them. Review
/// takes the agent's steps back newest first from the text now, keeping
/// every edit made since (`crate::model::revert`).
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub(crate) before: KeptOriginal,
    pub(crate) after: KeptOriginal,
}

/// One changed file, for review and the quickfix list: one record per path
/// whatever the number of writes, with the text from before the first and
/// the chain of the agent's steps not yet accepted.
#[derive(Debug, Clone)]
pub struct ChangeRecord {
    pub path: String,
    /// Seconds since the epoch, of the last change.
    pub time: f64,
    pub tool_call_id: Option<String>,
    /// Who wrote it last.
    pub target: WriteTarget,
    pub saved: bool,
    pub(crate) original: KeptOriginal,
    pub changes: usize,
    /// The agent's steps since the file was last accepted (all of them
    /// when it never was), oldest first.
    pub(crate) steps: Vec<Step>,
    /// Review accepted the file's changes ("accept all"); later steps
    /// make it pending again.
    pub accepted: bool,
}

impl ChangeRecord {
    /// The text from before the first change: unknown once it was dropped
    /// to keep the kept texts under their cap (never a wrong one).
    pub fn original(&self) -> Original {
        match &self.original {
            KeptOriginal::Text(k) => k.get().map_or(Original::Unknown, Original::Text),
            KeptOriginal::Absent => Original::Absent,
            KeptOriginal::Unknown => Original::Unknown,
        }
    }

    /// The agent's steps not yet accepted, oldest first: (before, after).
    /// A text dropped to stay under the cap reads as unknown.
    pub fn steps(&self) -> Vec<(Original, Original)> {
        self.steps
            .iter()
            .map(|s| (s.before.read(), s.after.read()))
            .collect()
    }

    /// True when the file has steps to review.
    pub fn pending(&self) -> bool {
        !self.steps.is_empty()
    }

    /// A record of a change known only from review (a tool card): the
    /// agent wrote it, saved, with no original kept.
    fn from_review(path: String, time: f64, steps: Vec<Step>, accepted: bool) -> Self {
        ChangeRecord {
            path,
            time,
            tool_call_id: None,
            target: WriteTarget::Agent,
            saved: true,
            original: KeptOriginal::Unknown,
            changes: 1,
            steps,
            accepted,
        }
    }
}

impl KeptOriginal {
    pub(crate) fn read(&self) -> Original {
        match self {
            KeptOriginal::Text(k) => k.get().map_or(Original::Unknown, Original::Text),
            KeptOriginal::Absent => Original::Absent,
            KeptOriginal::Unknown => Original::Unknown,
        }
    }

    pub(crate) fn keep(owner: u64, label: String, text: Original) -> Self {
        match text {
            Original::Text(t) => KeptOriginal::Text(KeptText::new(owner, label, t)),
            Original::Absent => KeptOriginal::Absent,
            Original::Unknown => KeptOriginal::Unknown,
        }
    }
}

impl serde::Serialize for ChangeRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("path", &self.path)?;
        m.serialize_entry("time", &self.time)?;
        m.serialize_entry("tool_call_id", &self.tool_call_id)?;
        m.serialize_entry("target", &self.target)?;
        m.serialize_entry("saved", &self.saved)?;
        m.serialize_entry("changes", &self.changes)?;
        if self.accepted {
            m.serialize_entry("accepted", &true)?;
        }
        match self.original() {
            Original::Text(t) => m.serialize_entry("original", t.as_str())?,
            Original::Absent => m.serialize_entry("created", &true)?,
            Original::Unknown => m.serialize_entry("original_unknown", &true)?,
        }
        m.end()
    }
}

// Checkpoints (the rest is `crate::editor::checkpoints`) --------------------------

/// One turn's checkpoint.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The turn's number in this chat (1, 2, …; continues after a restart).
    pub id: u64,
    /// How many user messages the transcript held before this turn's.
    pub user_index: usize,
    pub prompt: String,
    pub time: f64,
    /// (path, step) in the order made.
    pub(crate) steps: Vec<(String, Step)>,
    /// The snapshot tree of the work tree at the turn's start (git only).
    pub git_tree: Option<String>,
    /// Restored: its steps are taken back already.
    pub undone: bool,
}

impl Checkpoint {
    pub fn bytes(&self) -> usize {
        let len = |k: &KeptOriginal| match k.read() {
            Original::Text(t) => t.len(),
            _ => 0,
        };
        self.steps
            .iter()
            .map(|(_, s)| len(&s.before) + len(&s.after))
            .sum()
    }

    /// The files the turn changed, in the order first changed.
    pub fn paths(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (p, _) in &self.steps {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
        out
    }
}

#[derive(Debug, Default)]
pub struct Checkpoints {
    pub list: Vec<Checkpoint>,
    /// Checkpoints dropped to stay under the cap, in all.
    pub dropped: usize,
}

impl EditorState {
    /// One change of the agent's, into the open checkpoint (none before the
    /// first turn). A step that starts where this turn's last step of the
    /// file ended extends it.
    pub(crate) fn checkpoint_step(&self, path: &str, before: &Original, after: &Original) {
        if self.checkpoints.lock().list.is_empty() {
            return;
        }
        let label = format!("a checkpoint text of {path}");
        let after_k = KeptOriginal::keep(self.owner, label.clone(), after.clone());
        let mut cps = self.checkpoints.lock();
        let Some(cp) = cps.list.last_mut() else {
            return;
        };
        if let Original::Text(b) = before {
            if let Some((_, last)) = cp.steps.iter_mut().rev().find(|(p, _)| p == path) {
                if matches!(last.after.read(), Original::Text(a) if Arc::ptr_eq(&a, b) || a == *b) {
                    last.after = after_k;
                    return;
                }
            }
        }
        drop(cps);
        let before_k = KeptOriginal::keep(self.owner, label, before.clone());
        if let Some(cp) = self.checkpoints.lock().list.last_mut() {
            cp.steps.push((
                path.to_owned(),
                Step {
                    before: before_k,
                    after: after_k,
                },
            ));
        }
    }
}

/// What the agent was last served (or wrote) of a file: its hash, and the
/// text itself when it is small enough to keep as a merge base (and was
/// not dropped to keep the kept texts under their cap).
#[derive(Debug, Clone)]
pub struct Served {
    pub hash: u64,
    pub text: Option<std::sync::Arc<String>>,
}

/// A served text as kept.
struct KeptServed {
    hash: u64,
    text: Option<KeptText>,
}

/// Served texts up to this size are kept whole (the three-way merge base
/// when the user edits in between); larger ones only by hash.
pub const SERVED_TEXT_MAX: usize = 4 << 20;

#[derive(Default)]
pub struct EditorState {
    /// The chat these texts belong to (named in the notes of dropped ones).
    pub owner: u64,
    pub roots: Roots,
    pub policy: Policy,
    /// What the agent was last served (or wrote), per resolved path.
    snapshots: Mutex<HashMap<PathBuf, KeptServed>>,
    /// Changed files in the order first changed.
    pub changes: Mutex<Vec<ChangeRecord>>,
    pub terminals: Mutex<Terminals>,
    /// One checkpoint per turn (`crate::editor::checkpoints`).
    pub checkpoints: Mutex<Checkpoints>,
}

impl EditorState {
    pub fn new(cwd: PathBuf, policy: Policy) -> Self {
        let mut dirs = vec![cwd];
        dirs.extend(policy.roots.iter().cloned());
        let mut terminals = Terminals::default();
        terminals.set_output_cap(
            policy
                .terminal_output_max_bytes
                .clamp(1, crate::editor::terminal::MAX_OUTPUT_LIMIT),
        );
        Self {
            roots: Roots::new(&dirs),
            policy,
            terminals: Mutex::new(terminals),
            ..Default::default()
        }
    }

    /// The state of chat `owner`.
    pub fn owned_by(mut self, owner: u64) -> Self {
        self.owner = owner;
        self
    }

    pub fn remember_served(&self, resolved: &std::path::Path, text: &str) {
        // Kept (and older texts dropped) before the map is locked.
        let served = KeptServed {
            hash: crate::editor::fs::content_hash(text),
            text: (text.len() <= SERVED_TEXT_MAX).then(|| {
                KeptText::new(
                    self.owner,
                    format!("the text the agent last read of {}", resolved.display()),
                    std::sync::Arc::new(text.to_owned()),
                )
            }),
        };
        let old = self.snapshots.lock().insert(resolved.to_path_buf(), served);
        drop(old);
    }

    pub fn served(&self, resolved: &std::path::Path) -> Option<Served> {
        self.snapshots.lock().get(resolved).map(|k| Served {
            hash: k.hash,
            text: k.text.as_ref().and_then(KeptText::get),
        })
    }

    /// Records one change of the agent's: the text right before and right
    /// after it (a step of the file's chain, for review).
    #[allow(clippy::too_many_arguments)]
    pub fn record_change(
        &self,
        path: &str,
        target: WriteTarget,
        saved: bool,
        before: Original,
        after: Original,
        tool_call_id: Option<String>,
        time: f64,
    ) {
        self.checkpoint_step(path, &before, &after);
        // Texts are kept (and older ones dropped) outside the lock; the
        // original only for a path without a record (the first change's).
        // A step that starts where the last one ended (no edit of anyone
        // else's between them) extends it: taking back one step from its
        // first text to its last is taking back both, and the text between
        // is not kept (60 writes to a 5 MB file keep 2 texts, not 120).
        if let Original::Text(b) = &before {
            let extends = |c: &ChangeRecord| {
                c.steps.last().is_some_and(|last| {
                    matches!(last.after.read(), Original::Text(a) if Arc::ptr_eq(&a, b) || a == *b)
                })
            };
            if self
                .changes
                .lock()
                .iter()
                .any(|c| c.path == path && extends(c))
            {
                // Kept outside the lock (older texts may be dropped for it).
                let after =
                    KeptOriginal::keep(self.owner, format!("a text of {path}"), after.clone());
                let mut changes = self.changes.lock();
                if let Some(c) = changes.iter_mut().find(|c| c.path == path && extends(c)) {
                    if let Some(last) = c.steps.last_mut() {
                        last.after = after;
                    }
                    c.time = time;
                    c.target = target;
                    c.saved = saved;
                    c.changes += 1;
                    c.accepted = false;
                    if tool_call_id.is_some() {
                        c.tool_call_id = tool_call_id;
                    }
                    return;
                }
            }
        }
        let original = (!self.has_change(path)).then(|| {
            KeptOriginal::keep(
                self.owner,
                format!("the original of {path}"),
                before.clone(),
            )
        });
        let step = Step {
            before: match (&original, &before) {
                // The same text once.
                (Some(o @ KeptOriginal::Text(_)), Original::Text(_)) => o.clone(),
                _ => KeptOriginal::keep(self.owner, format!("a text of {path}"), before),
            },
            after: KeptOriginal::keep(self.owner, format!("a text of {path}"), after),
        };
        let mut changes = self.changes.lock();
        match changes.iter_mut().find(|c| c.path == path) {
            Some(c) => {
                c.time = time;
                c.target = target;
                c.saved = saved;
                c.changes += 1;
                c.accepted = false;
                c.steps.push(step);
                if tool_call_id.is_some() {
                    c.tool_call_id = tool_call_id;
                }
            }
            None => changes.push(ChangeRecord {
                path: path.to_owned(),
                time,
                tool_call_id,
                target,
                saved,
                original: original.unwrap_or(KeptOriginal::Unknown),
                changes: 1,
                steps: vec![step],
                accepted: false,
            }),
        }
    }

    /// Review's "keep": the agent's steps of `path` so far become one, from
    /// `before` (the text with every agent change taken back but the kept
    /// ones) to `after` (the text at the keep). A path without a record (a
    /// change known only from a tool card) gets one.
    pub fn keep_changes(&self, path: &str, before: String, after: String, time: f64) {
        let label = format!("a text of {path}");
        let step = Step {
            before: KeptOriginal::keep(self.owner, label.clone(), Original::Text(before.into())),
            after: KeptOriginal::keep(self.owner, label, Original::Text(after.into())),
        };
        let mut changes = self.changes.lock();
        match changes.iter_mut().find(|c| c.path == path) {
            Some(c) => {
                c.steps = vec![step];
                c.accepted = false;
            }
            None => changes.push(ChangeRecord::from_review(
                path.to_owned(),
                time,
                vec![step],
                false,
            )),
        }
    }

    /// True once `path` has a change record (its original is kept).
    pub fn has_change(&self, path: &str) -> bool {
        self.changes.lock().iter().any(|c| c.path == path)
    }

    /// "Accept all" in review: the session's changes are the new baseline.
    /// Every file stays known as changed, and accepted; `also` are paths
    /// known only from tool cards, recorded as accepted too.
    pub fn accept_changes(&self, also: &[String], time: f64) {
        let mut changes = self.changes.lock();
        for c in changes.iter_mut() {
            c.steps.clear();
            c.accepted = true;
        }
        for path in also {
            if !changes.iter().any(|c| &c.path == path) {
                changes.push(ChangeRecord::from_review(
                    path.clone(),
                    time,
                    Vec::new(),
                    true,
                ));
            }
        }
    }

    /// True when `resolved` is under a protected directory (`.git` by
    /// default): writes there are refused unless the user allows them.
    pub fn is_protected(&self, resolved: &std::path::Path) -> Option<String> {
        resolved.components().find_map(|c| {
            let name = c.as_os_str().to_string_lossy();
            self.policy
                .protected
                .iter()
                .find(|p| crate::editor::policy::wildcard_match(p, &name))
                .cloned()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_record_per_path_keeps_the_first_original_once() {
        let ed = EditorState::default();
        let big = std::sync::Arc::new("x".repeat(1000));
        ed.record_change(
            "/p/a",
            WriteTarget::Disk,
            true,
            Original::Text(big.clone()),
            Original::Unknown,
            None,
            1.0,
        );
        for i in 0..60 {
            ed.record_change(
                "/p/a",
                WriteTarget::Buffer,
                true,
                Original::Unknown,
                Original::Unknown,
                Some(format!("t{i}")),
                2.0,
            );
        }
        let changes = ed.changes.lock();
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].changes, 61);
        assert_eq!(changes[0].original(), Original::Text(big));
        assert_eq!(changes[0].tool_call_id.as_deref(), Some("t59"));
        // Lua reads who wrote it as the word it always had.
        let seen = serde_json::to_value(&changes[0]).unwrap();
        assert_eq!(seen["target"], "buffer");
        for (t, word) in [
            (WriteTarget::Buffer, "buffer"),
            (WriteTarget::Disk, "disk"),
            (WriteTarget::Agent, "agent"),
        ] {
            assert_eq!(serde_json::to_value(t).unwrap(), word);
        }
    }

    #[test]
    fn protected_paths_match_any_component() {
        let ed = EditorState::new(PathBuf::from("/p"), Policy::default());
        assert_eq!(
            ed.is_protected(std::path::Path::new("/p/.git/config"))
                .as_deref(),
            Some(".git")
        );
        assert!(ed
            .is_protected(std::path::Path::new("/p/sub/.git/hooks/pre-commit"))
            .is_some());
        assert!(ed
            .is_protected(std::path::Path::new("/p/.gitignore"))
            .is_none());
    }

    #[test]
    fn large_served_texts_are_kept_by_hash_only() {
        let ed = EditorState::default();
        ed.remember_served(std::path::Path::new("/p/small"), "abc");
        ed.remember_served(
            std::path::Path::new("/p/big"),
            &"y".repeat(SERVED_TEXT_MAX + 1),
        );
        assert!(ed
            .served(std::path::Path::new("/p/small"))
            .unwrap()
            .text
            .is_some());
        let big = ed.served(std::path::Path::new("/p/big")).unwrap();
        assert!(big.text.is_none());
        assert_eq!(
            big.hash,
            crate::editor::fs::content_hash(&"y".repeat(SERVED_TEXT_MAX + 1))
        );
    }
}
