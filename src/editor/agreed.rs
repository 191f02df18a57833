//! The text each synced buffer and its file last agreed on (when the file
//! was read, written or synced): the base of the three-way merge when the
//! file changes on disk under unsaved edits. One per real path, all chats
//! together (buffers are not a chat's), set and read by the buffer sync
//! through the native functions. The texts are kept under the one cap of
//! all kept texts (`kept`): a dropped one reads as unknown, and the sync
//! then shows a conflict instead of merging (never a merge from a wrong
//! base).
//!
//! Not the text the agent was served (`state`, per chat): that is what the
//! agent saw of the buffer, this what the disk holds. A save of the user's
//! edits moves this one; it must not move that one, or the agent's next
//! write would replace the edits it never saw.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::editor::kept::{Kept, KeptText, KEPT};
use crate::model::filetext::{self, TextFormat};
use crate::model::textdiff::{self, ByteHunk};

/// The owner named when a kept text is dropped: no chat (ids start at 1).
const NO_CHAT: u64 = 0;

/// What a file's new disk text means for its buffer with unsaved edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskMerge {
    /// Nothing to merge: the disk holds the agreed text (only its stat
    /// changed), or the buffer already holds the disk's lines.
    Same,
    /// The agreed text is not known (never, or dropped): no merge.
    Unknown,
    /// Both changed the same lines (1-based, first and last, of the agreed
    /// text).
    Conflict(usize, usize),
    /// The edits of the buffer that merge the disk's change into it (none
    /// when the buffer holds that change already).
    Merged(Vec<ByteHunk>),
}

/// Agreed texts by path.
pub struct Agreed {
    texts: Mutex<BTreeMap<String, KeptText>>,
    store: &'static Kept,
}

/// The texts of every synced buffer.
pub static AGREED: Agreed = Agreed::new(&KEPT);

impl Agreed {
    pub const fn new(store: &'static Kept) -> Self {
        Agreed {
            texts: Mutex::new(BTreeMap::new()),
            store,
        }
    }

    /// `path`'s buffer and file agree on `text` now (the one before is
    /// released).
    pub fn set(&self, path: &str, text: Arc<String>) {
        // Kept (older texts dropped) before the map is locked.
        let kept = KeptText::new_in(
            self.store,
            NO_CHAT,
            format!("the text the buffer of {path} and its file last agreed on"),
            text,
        );
        let old = self.texts.lock().insert(path.to_owned(), kept);
        drop(old);
    }

    /// The agreed text of `path`: None when there is none (a new file, or
    /// not tracked) or it was dropped to stay under the cap.
    pub fn get(&self, path: &str) -> Option<Arc<String>> {
        self.texts.lock().get(path).and_then(KeptText::get)
    }

    /// True when `path`'s agreed text is known and equals `text`.
    pub fn is(&self, path: &str, text: &str) -> bool {
        self.get(path).is_some_and(|t| t.as_str() == text)
    }

    /// Three-way merge of `path`'s new disk text `disk` (read with the
    /// buffer's `format`) into the buffer's lines `ours`, from the agreed
    /// text.
    pub fn merge_disk(
        &self,
        path: &str,
        ours: &[&[u8]],
        disk: &[u8],
        format: &TextFormat,
    ) -> DiskMerge {
        let base = self.get(path);
        if base.as_deref().is_some_and(|b| b.as_bytes() == disk) {
            return DiskMerge::Same;
        }
        let theirs = filetext::decode(disk, format).lines;
        if ours == theirs.as_slice() {
            return DiskMerge::Same;
        }
        let Some(base) = base else {
            return DiskMerge::Unknown;
        };
        let base = filetext::decode(base.as_bytes(), format).lines;
        match textdiff::merge_lines(&base, ours, &theirs) {
            Err((first, last)) => DiskMerge::Conflict(first, last),
            Ok(merged) => {
                let merged: Vec<&[u8]> = merged.into_iter().copied().collect();
                DiskMerge::Merged(textdiff::byte_hunks(ours, &merged))
            }
        }
    }

    /// `path` is no longer followed (its buffer was unloaded), or what it
    /// agreed on is not known.
    pub fn forget(&self, path: &str) {
        let old = self.texts.lock().remove(path);
        drop(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(max: usize) -> &'static Kept {
        Box::leak(Box::new(Kept::new(max)))
    }

    #[test]
    fn one_text_per_path_under_the_cap_of_kept_texts() {
        let kept = store(100);
        let a = Agreed::new(kept);
        a.set("/p/f", Arc::new("one\n".into()));
        a.set("/p/f", Arc::new("two\n".into()));
        assert_eq!(a.get("/p/f").as_deref().map(String::as_str), Some("two\n"));
        assert!(a.is("/p/f", "two\n") && !a.is("/p/f", "one\n"));
        assert_eq!(kept.total_bytes(), 4, "the text it replaced is released");
        assert_eq!(a.get("/p/g"), None);
        // Past the cap the oldest texts go: the path then has no base.
        a.set("/p/big", Arc::new("x".repeat(98)));
        assert_eq!(a.get("/p/f"), None, "dropped: unknown, never a wrong base");
        assert!(!a.is("/p/f", "two\n"));
        assert_eq!(a.get("/p/big").map(|t| t.len()), Some(98));
        a.forget("/p/big");
        a.forget("/p/f");
        assert_eq!(a.get("/p/big"), None);
        assert_eq!(kept.total_bytes(), 0, "forgetting releases the texts");
    }

    fn lines(s: &str) -> Vec<&[u8]> {
        filetext::split_joined(s.as_bytes())
    }

    #[test]
    fn a_disk_change_merges_into_unsaved_edits_from_the_agreed_text() {
        let a = Agreed::new(store(1 << 20));
        let dos = TextFormat {
            fileformat: filetext::FileFormat::Dos,
            bomb: true,
            ..TextFormat::default()
        };
        // The file as read (a BOM, CRLF); the user edits line 1.
        a.set("/p/f", Arc::new("\u{feff}a\r\nb\r\nc\r\n".into()));
        let ours = lines("A (user)\nb\nc");
        // The disk changes line 3: merged, as one edit of the buffer.
        let disk = "\u{feff}a\r\nb\r\nC (agent)\r\n";
        assert_eq!(
            a.merge_disk("/p/f", &ours, disk.as_bytes(), &dos),
            DiskMerge::Merged(vec![ByteHunk {
                old_start: 2,
                old_end: 3,
                lines: vec![b"C (agent)".to_vec()]
            }])
        );
        // Only the stat changed, or the buffer holds the disk's lines.
        let agreed = "\u{feff}a\r\nb\r\nc\r\n";
        assert_eq!(
            a.merge_disk("/p/f", &ours, agreed.as_bytes(), &dos),
            DiskMerge::Same
        );
        let held = "\u{feff}A (user)\r\nb\r\nc\r\n";
        assert_eq!(
            a.merge_disk("/p/f", &ours, held.as_bytes(), &dos),
            DiskMerge::Same
        );
        // Both changed line 1.
        let both = "\u{feff}a (disk)\r\nb\r\nc\r\n";
        assert_eq!(
            a.merge_disk("/p/f", &ours, both.as_bytes(), &dos),
            DiskMerge::Conflict(1, 1)
        );
        // No agreed text: no merge.
        a.forget("/p/f");
        assert_eq!(
            a.merge_disk("/p/f", &ours, disk.as_bytes(), &dos),
            DiskMerge::Unknown
        );
    }
}
