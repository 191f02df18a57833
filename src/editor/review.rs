//! What review shows and restores of a changed file: the text now with
//! every step of the agent's taken back, newest first, each as a three-way
//! merge that keeps the edits made since (`crate::model::revert`), so the
//! user's own changes never show as the agent's and are never reverted.
//! Also the change records as JSON, to keep a chat's review across a
//! restart (texts over a cap are left out and come back unknown).

use std::sync::Arc;

use crate::editor::state::{
    ChangeRecord, Checkpoint, EditorState, KeptOriginal, Original, Step, WriteTarget,
};
use crate::model::revert::revert_text;

/// The text review compares with the file now.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReviewBase {
    /// The text with the agent's steps taken back; None when a step's text
    /// is unknown (dropped past the cap, or never read).
    pub text: Option<String>,
    /// Taking the steps back removes the file (the agent created it and
    /// nobody changed it since).
    pub absent: bool,
    /// The oldest step not yet accepted created the file.
    pub created: bool,
    /// Regions of the agent's steps taken back.
    pub reverted: usize,
    /// Regions left as they are: edited again since the agent's step (or a
    /// created file changed since, or a deleted one written again).
    pub kept: usize,
    /// Steps not yet accepted.
    pub steps: usize,
    pub accepted: bool,
}

/// The review base of `rec` from `now`, the file's text now (None: there is
/// no such file).
pub fn review_base(rec: &ChangeRecord, now: Option<&str>) -> ReviewBase {
    let steps = rec.steps();
    let mut out = ReviewBase {
        text: None,
        absent: false,
        created: matches!(steps.first(), Some((Original::Absent, _))),
        reverted: 0,
        kept: 0,
        steps: steps.len(),
        accepted: rec.accepted,
    };
    let mut cur: Option<String> = now.map(str::to_owned);
    for (before, after) in steps.into_iter().rev() {
        match (before, after) {
            (Original::Unknown, _) | (_, Original::Unknown) => return out,
            (before, Original::Text(after)) => match (&cur, before) {
                // Gone since the step: nothing to take it back into.
                (None, _) => out.kept += 1,
                (Some(c), Original::Text(b)) => {
                    let (text, reverted, kept) = revert_text(&after, c, &b);
                    cur = Some(text);
                    out.reverted += reverted;
                    out.kept += kept;
                }
                // Created by the agent: removed only as the agent left it.
                (Some(c), _) if *c == *after => {
                    cur = None;
                    out.reverted += 1;
                }
                (Some(_), _) => out.kept += 1,
            },
            // The agent deleted the file.
            (Original::Text(b), Original::Absent) => match cur {
                None => {
                    cur = Some(b.as_str().to_owned());
                    out.reverted += 1;
                }
                Some(_) => out.kept += 1,
            },
            (Original::Absent, Original::Absent) => {}
        }
    }
    out.absent = cur.is_none();
    out.text = Some(cur.unwrap_or_default());
    out
}

impl EditorState {
    /// `review_base` of the record of `path`; None without one.
    pub fn review_base(&self, path: &str, now: Option<&str>) -> Option<ReviewBase> {
        let rec = self
            .changes
            .lock()
            .iter()
            .find(|c| c.path == path)
            .cloned()?;
        Some(review_base(&rec, now))
    }
}

// Export and import ----------------------------------------------------------

/// Texts larger than this are left out of an export (they come back
/// unknown).
pub const EXPORT_TEXT_MAX: usize = 1 << 20;
/// All texts of one export together stay under this; later ones are left
/// out past it.
pub const EXPORT_TOTAL_MAX: usize = 8 << 20;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum SavedText {
    Text(String),
    Absent,
    Unknown,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct SavedFile {
    path: String,
    time: f64,
    #[serde(default)]
    tool_call_id: Option<String>,
    target: WriteTarget,
    saved: bool,
    changes: usize,
    accepted: bool,
    original: SavedText,
    /// (before, after) of each step, oldest first.
    steps: Vec<(SavedText, SavedText)>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Saved {
    version: u32,
    files: Vec<SavedFile>,
    /// The chat's checkpoints (`crate::editor::checkpoints`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    checkpoints: Vec<SavedCheckpoint>,
}

const EXPORT_VERSION: u32 = 1;

impl EditorState {
    /// The change records with their chains and decisions as JSON.
    pub fn review_export(&self) -> String {
        let records = self.changes.lock().clone();
        let mut budget = EXPORT_TOTAL_MAX;
        let mut save = |k: &KeptOriginal| match k.read() {
            Original::Text(t) if t.len() <= EXPORT_TEXT_MAX && t.len() <= budget => {
                budget -= t.len();
                SavedText::Text(t.as_str().to_owned())
            }
            Original::Absent => SavedText::Absent,
            _ => SavedText::Unknown,
        };
        let files = records
            .iter()
            .map(|c| SavedFile {
                path: c.path.clone(),
                time: c.time,
                tool_call_id: c.tool_call_id.clone(),
                target: c.target,
                saved: c.saved,
                changes: c.changes,
                accepted: c.accepted,
                // Steps first: they are what review needs.
                steps: c
                    .steps
                    .iter()
                    .rev()
                    .map(|s| {
                        let after = save(&s.after);
                        (save(&s.before), after)
                    })
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect(),
                original: save(&c.original),
            })
            .collect();
        // The checkpoints get what the records left, up to a quarter.
        let mut left = budget.min(EXPORT_TOTAL_MAX / 4);
        let checkpoints = self.checkpoints_export(&mut left);
        serde_json::to_string(&Saved {
            version: EXPORT_VERSION,
            files,
            checkpoints,
        })
        .unwrap_or_default()
    }

    /// Restores records exported by `review_export`: each replaces this
    /// chat's record of the same path. Returns how many files.
    pub fn review_import(&self, json: &str) -> Result<usize, String> {
        let saved: Saved =
            serde_json::from_str(json).map_err(|e| format!("not a review export: {e}"))?;
        if saved.version != EXPORT_VERSION {
            return Err(format!(
                "a review export of version {} (this is {EXPORT_VERSION})",
                saved.version
            ));
        }
        let owner = self.owner;
        let keep = |path: &str, t: SavedText| {
            KeptOriginal::keep(
                owner,
                format!("a text of {path}"),
                match t {
                    SavedText::Text(t) => Original::Text(Arc::new(t)),
                    SavedText::Absent => Original::Absent,
                    SavedText::Unknown => Original::Unknown,
                },
            )
        };
        self.checkpoints_import(saved.checkpoints);
        let records: Vec<ChangeRecord> = saved
            .files
            .into_iter()
            .map(|f| ChangeRecord {
                original: keep(&f.path, f.original),
                steps: f
                    .steps
                    .into_iter()
                    .map(|(before, after)| Step {
                        before: keep(&f.path, before),
                        after: keep(&f.path, after),
                    })
                    .collect(),
                path: f.path,
                time: f.time,
                tool_call_id: f.tool_call_id,
                target: f.target,
                saved: f.saved,
                changes: f.changes,
                accepted: f.accepted,
            })
            .collect();
        let n = records.len();
        let mut changes = self.changes.lock();
        for r in records {
            match changes.iter_mut().find(|c| c.path == r.path) {
                Some(c) => *c = r,
                None => changes.push(r),
            }
        }
        Ok(n)
    }
}

// Checkpoints in the export ------------------------------------------------------

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct SavedCheckpoint {
    pub id: u64,
    pub user_index: usize,
    pub prompt: String,
    pub time: f64,
    #[serde(default)]
    pub undone: bool,
    /// (path, before, after); a text left out comes back unknown.
    pub steps: Vec<(String, Option<String>, Option<String>, bool, bool)>,
}

impl EditorState {
    /// The checkpoints for a kept chat, newest first while `budget` lasts
    /// (older ones past it are left out).
    pub(crate) fn checkpoints_export(&self, budget: &mut usize) -> Vec<SavedCheckpoint> {
        let cps = self.checkpoints.lock().list.clone();
        let mut out = Vec::new();
        for c in cps.iter().rev() {
            let bytes = c.bytes();
            if bytes > *budget {
                break;
            }
            *budget -= bytes;
            let save = |k: &KeptOriginal| match k.read() {
                Original::Text(t) => (Some(t.as_str().to_owned()), false),
                Original::Absent => (None, true),
                Original::Unknown => (None, false),
            };
            out.push(SavedCheckpoint {
                id: c.id,
                user_index: c.user_index,
                prompt: c.prompt.clone(),
                time: c.time,
                undone: c.undone,
                steps: c
                    .steps
                    .iter()
                    .map(|(p, s)| {
                        let (b, b_absent) = save(&s.before);
                        let (a, a_absent) = save(&s.after);
                        (p.clone(), b, a, b_absent, a_absent)
                    })
                    .collect(),
            });
        }
        out.reverse();
        out
    }

    pub(crate) fn checkpoints_import(&self, saved: Vec<SavedCheckpoint>) {
        let owner = self.owner;
        let keep = |path: &str, t: Option<String>, absent: bool| {
            KeptOriginal::keep(
                owner,
                format!("a checkpoint text of {path}"),
                match (t, absent) {
                    (Some(t), _) => Original::Text(Arc::new(t)),
                    (None, true) => Original::Absent,
                    (None, false) => Original::Unknown,
                },
            )
        };
        let list: Vec<Checkpoint> = saved
            .into_iter()
            .map(|c| Checkpoint {
                id: c.id,
                user_index: c.user_index,
                prompt: c.prompt,
                time: c.time,
                undone: c.undone,
                git_tree: None,
                steps: c
                    .steps
                    .into_iter()
                    .map(|(p, b, a, ba, aa)| {
                        let step = Step {
                            before: keep(&p, b, ba),
                            after: keep(&p, a, aa),
                        };
                        (p, step)
                    })
                    .collect(),
            })
            .collect();
        let mut cps = self.checkpoints.lock();
        if cps.list.is_empty() {
            cps.list = list;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Original {
        Original::Text(Arc::new(s.to_owned()))
    }

    fn step(ed: &EditorState, path: &str, before: Original, after: Original) {
        ed.record_change(path, WriteTarget::Buffer, false, before, after, None, 1.0);
    }

    #[test]
    fn the_chain_is_taken_back_newest_first_and_the_users_edits_stay() {
        let ed = EditorState::default();
        // The user added "mine" before the agent's first write (merged in),
        // the agent changed b then d, then the user edited the agent's D.
        step(
            &ed,
            "/p/a",
            text("a\nb\nmine\nc\nd\n"),
            text("a\nB\nmine\nc\nd\n"),
        );
        step(
            &ed,
            "/p/a",
            text("a\nB\nmine\nc\nd\n"),
            text("a\nB\nmine\nc\nD\n"),
        );
        let now = "a\nB\nmine\nc\nD (user)\n";
        let base = ed.review_base("/p/a", Some(now)).unwrap();
        assert_eq!(base.text.as_deref(), Some("a\nb\nmine\nc\nD (user)\n"));
        // The second write began where the first ended: one step.
        assert_eq!((base.reverted, base.kept, base.steps), (1, 1, 1));
        assert!(!base.absent);
        assert_eq!(ed.review_base("/p/none", Some(now)), None);
    }

    #[test]
    fn a_created_file_is_removed_only_as_the_agent_left_it() {
        let ed = EditorState::default();
        step(&ed, "/p/new", Original::Absent, text("made\n"));
        let base = ed.review_base("/p/new", Some("made\n")).unwrap();
        assert!(base.absent);
        let base = ed.review_base("/p/new", Some("made\nand mine\n")).unwrap();
        assert!(!base.absent && base.created);
        assert_eq!(base.text.as_deref(), Some("made\nand mine\n"));
        assert_eq!(base.kept, 1);
        // A step whose text is unknown: no base at all (never a wrong one).
        step(&ed, "/p/u", Original::Unknown, text("x\n"));
        assert_eq!(ed.review_base("/p/u", Some("x\n")).unwrap().text, None);
    }

    #[test]
    fn keep_squashes_the_chain_and_accept_clears_it_but_the_file_stays_known() {
        let ed = EditorState::default();
        step(&ed, "/p/a", text("1\n2\n3\n"), text("ONE\n2\n3\n"));
        step(&ed, "/p/a", text("ONE\n2\n3\n"), text("ONE\n2\nTHREE\n"));
        // The user keeps ONE: the chain is one step from the left text.
        ed.keep_changes("/p/a", "ONE\n2\n3\n".into(), "ONE\n2\nTHREE\n".into(), 2.0);
        let base = ed.review_base("/p/a", Some("ONE\n2\nTHREE\n")).unwrap();
        assert_eq!(base.text.as_deref(), Some("ONE\n2\n3\n"));
        assert_eq!(base.steps, 1);
        // A later step chains on top.
        step(
            &ed,
            "/p/a",
            text("ONE\n2\nTHREE\n"),
            text("ONE\nTWO\nTHREE\n"),
        );
        let base = ed.review_base("/p/a", Some("ONE\nTWO\nTHREE\n")).unwrap();
        assert_eq!(base.text.as_deref(), Some("ONE\n2\n3\n"));
        ed.accept_changes(&["/p/card".into()], 3.0);
        let changes = ed.changes.lock().clone();
        assert_eq!(changes.len(), 2);
        assert!(changes.iter().all(|c| c.accepted && !c.pending()));
        let base = review_base(&changes[0], Some("ONE\nTWO\nTHREE\n"));
        assert_eq!(base.text.as_deref(), Some("ONE\nTWO\nTHREE\n"));
        assert!(base.accepted);
    }

    #[test]
    fn export_and_import_round_trip_the_chains_and_decisions() {
        let ed = EditorState::default();
        step(&ed, "/p/a", text("a\nb\n"), text("a\nB\n"));
        step(
            &ed,
            "/p/big",
            text(&"x".repeat(EXPORT_TEXT_MAX + 1)),
            text("small\n"),
        );
        step(&ed, "/p/acc", text("1\n"), text("2\n"));
        ed.accept_changes(&[], 2.0);
        step(&ed, "/p/a", text("a\nB\n"), text("a\nB\nc\n"));
        step(&ed, "/p/new", Original::Absent, text("made\n"));
        let json = ed.review_export();
        let other = EditorState::default();
        assert_eq!(other.review_import(&json), Ok(4));
        let now = "a\nB\nc\n";
        assert_eq!(
            other.review_base("/p/a", Some(now)),
            ed.review_base("/p/a", Some(now))
        );
        let a = other.review_base("/p/a", Some(now)).unwrap();
        assert_eq!((a.text.as_deref(), a.steps), (Some("a\nB\n"), 1));
        let acc = other
            .changes
            .lock()
            .iter()
            .find(|c| c.path == "/p/acc")
            .cloned()
            .unwrap();
        assert!(acc.accepted && !acc.pending());
        // Accepted steps are not exported; the chain after it is.
        let a_rec = other.changes.lock()[0].clone();
        assert_eq!(a_rec.changes, 2);
        assert_eq!(a_rec.original(), text("a\nb\n"));
        // The big text is left out: unknown, never wrong.
        let big = other
            .changes
            .lock()
            .iter()
            .find(|c| c.path == "/p/big")
            .cloned()
            .unwrap();
        assert_eq!(big.original(), Original::Unknown);
        // The created file is still one review may remove.
        assert!(other.review_base("/p/new", Some("made\n")).unwrap().absent);
        // The export of the import is the same.
        assert_eq!(other.review_export(), json);
        assert!(other.review_import("{").is_err());
        assert!(other.review_import(r#"{"version":99,"files":[]}"#).is_err());
    }
}
