//! What an agent's `fs/write_text_file` becomes when its file changed on
//! disk while the agent worked (another program wrote it: a `git pull`,
//! another editor). The agent's text is based on an older text; written as
//! it is, it would replace the disk change. Instead the disk change and the
//! agent's change are merged three ways, or the write is refused with the
//! lines both changed (then nothing is written).
//!
//! Pure decisions; the handlers read the texts (the disk off the main
//! thread, the buffer through the main thread) and act on them.

use crate::editor::state::{Original, Served};
use crate::model::filetext::{self, TextFormat};
use crate::model::textdiff::{self, Hunk, Lines};

/// Which side the agent's change collides with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Against {
    /// The change on disk (1-based lines of the text the agent's edit is
    /// based on).
    Disk,
    /// The unsaved edits in the buffer (1-based lines of the disk text).
    Buffer,
}

/// A write into a file's loaded buffer, checked against the disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BufferWrite {
    /// The disk holds what the buffer and the file last agreed on (or that
    /// is not known): the write goes on as usual.
    Unchanged,
    /// The edits of the buffer that hold the agent's change, the disk
    /// change and the user's unsaved edits.
    Merged(Vec<Hunk>),
    /// Both changed these lines (first, last).
    Conflict(Against, usize, usize),
}

/// The lines of a file text as a buffer with `format` holds them (a byte
/// order mark is left out when there is one: the buffer's lines never hold
/// the mark 'bomb' writes).
fn file_lines<'a>(text: &'a str, format: &TextFormat) -> Vec<&'a str> {
    let format = TextFormat {
        bomb: true,
        ..*format
    };
    filetext::decode(text.as_bytes(), &format)
        .lines
        .into_iter()
        // Split at ASCII bytes of a str: each line is UTF-8.
        .map(|l| std::str::from_utf8(l).unwrap_or_default())
        .collect()
}

/// The agent writes `agent` (lines) into a buffer holding `buffer` (lines,
/// after the buffer took the disk's text); `agreed`: the file text the
/// buffer and the disk agreed on before this write, `disk`: the disk's
/// text read before the buffer was, `served`: the text the agent was last
/// served of the file, when kept (its edit is based on it; else on the
/// agreed text, the only text it can have known).
///
/// A disk change (`disk` differs from `agreed`) is merged into the agent's
/// change from its base, and the result into the buffer from the disk
/// text (the buffer holds the disk change already, and the user's unsaved
/// edits).
pub fn buffer_write(
    agreed: Option<&str>,
    disk: Option<&str>,
    served: Option<&str>,
    format: &TextFormat,
    buffer: &[&str],
    agent: &[&str],
) -> BufferWrite {
    let (Some(agreed), Some(disk)) = (agreed, disk) else {
        return BufferWrite::Unchanged;
    };
    if agreed == disk {
        return BufferWrite::Unchanged;
    }
    let base = file_lines(served.unwrap_or(agreed), format);
    let disk = file_lines(disk, format);
    let theirs = match textdiff::merge_lines(&base, agent, &disk) {
        Ok(t) => t.into_iter().copied().collect::<Vec<&str>>(),
        Err((first, last)) => return BufferWrite::Conflict(Against::Disk, first, last),
    };
    match textdiff::merge_lines(&disk, &theirs, buffer) {
        Ok(merged) => {
            let merged: Vec<&str> = merged.into_iter().copied().collect();
            BufferWrite::Merged(textdiff::hunks(buffer, &merged))
        }
        Err((first, last)) => BufferWrite::Conflict(Against::Buffer, first, last),
    }
}

/// A write to a file no buffer holds, checked against the disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskWrite {
    /// The disk holds what the agent was served (or the agent never read
    /// the file through this client, or it is not a readable text): the
    /// agent's text is written as it is.
    AsIs,
    /// The file text to write: the agent's change merged with the disk's.
    Merged(String),
    /// Both changed these lines (first, last; 1-based lines of the text
    /// the agent was served).
    Conflict(usize, usize),
    /// The disk changed since the agent read the file, and what it read
    /// was too large to keep: nothing to merge from.
    Stale,
}

/// The agent writes `agent` to a file without a buffer, whose text on
/// disk is `disk` now; `served`: what it was served (or wrote) last.
pub fn disk_write(served: Option<&Served>, disk: &Original, agent: &str) -> DiskWrite {
    let (Some(served), Original::Text(disk)) = (served, disk) else {
        return DiskWrite::AsIs;
    };
    if crate::editor::fs::content_hash(disk) == served.hash {
        return DiskWrite::AsIs;
    }
    let Some(base) = &served.text else {
        return DiskWrite::Stale;
    };
    let (base, ours, theirs) = (
        Lines::from_text(base),
        Lines::from_text(disk),
        Lines::from_text(agent),
    );
    match textdiff::merge_lines(&base.lines, &theirs.lines, &ours.lines) {
        Err((first, last)) => DiskWrite::Conflict(first, last),
        Ok(merged) => {
            // The disk's line breaks, and the agent's final one.
            let nl = if ours.crlf || (theirs.crlf && !ours.eol) {
                "\r\n"
            } else {
                "\n"
            };
            let mut text = merged.iter().map(|l| **l).collect::<Vec<&str>>().join(nl);
            if theirs.eol && !(merged.len() == 1 && merged[0].is_empty()) {
                text.push_str(nl);
            }
            DiskWrite::Merged(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::filetext::FileFormat;

    fn unix() -> TextFormat {
        TextFormat::default()
    }

    fn lines(s: &str) -> Vec<&str> {
        Lines::from_text(s).lines
    }

    #[test]
    fn no_disk_change_or_nothing_known_leaves_the_write_as_it_is() {
        let agent = lines("ONE\ntwo\n");
        let buffer = lines("one\ntwo\n");
        let same = "one\ntwo\n";
        assert_eq!(
            buffer_write(Some(same), Some(same), None, &unix(), &buffer, &agent),
            BufferWrite::Unchanged
        );
        assert_eq!(
            buffer_write(None, Some("x\n"), None, &unix(), &buffer, &agent),
            BufferWrite::Unchanged,
            "no agreed text: no base"
        );
        assert_eq!(
            buffer_write(Some(same), None, None, &unix(), &buffer, &agent),
            BufferWrite::Unchanged,
            "the disk could not be read"
        );
    }

    #[test]
    fn an_unmodified_buffer_gets_the_agents_change_on_top_of_the_disk_change() {
        let agreed = "one\ntwo\nthree\nfour\nfive\n";
        let disk = "one\ntwo\nthree\nfour\nFIVE (disk)\n";
        // The buffer took the disk's text when it was read.
        let buffer = lines(disk);
        let agent = lines("ONE (agent)\ntwo\nthree\nfour\nfive\n");
        assert_eq!(
            buffer_write(Some(agreed), Some(disk), None, &unix(), &buffer, &agent),
            BufferWrite::Merged(vec![Hunk {
                old_start: 0,
                old_end: 1,
                lines: vec!["ONE (agent)".into()]
            }])
        );
    }

    #[test]
    fn overlapping_changes_name_the_lines_and_which_side() {
        let agreed = "a\nb\nc\nd\n";
        let disk = "a\nB (disk)\nc\nd\n";
        let agent = lines("a\nB (agent)\nC (agent)\nd\n");
        assert_eq!(
            buffer_write(
                Some(agreed),
                Some(disk),
                None,
                &unix(),
                &lines(disk),
                &agent
            ),
            BufferWrite::Conflict(Against::Disk, 2, 3)
        );
        // The agent's change clashes with the user's unsaved edit instead.
        let buffer = lines("a\nB (disk)\nc\nD (user)\n");
        let agent = lines("a\nb\nc\nD (agent)\n");
        assert_eq!(
            buffer_write(Some(agreed), Some(disk), None, &unix(), &buffer, &agent),
            BufferWrite::Conflict(Against::Buffer, 4, 4)
        );
    }

    #[test]
    fn three_parties_each_keep_their_change() {
        let agreed = "1\n2\n3\n4\n5\n";
        let disk = "1\n2 (disk)\n3\n4\n5\n";
        // The user's unsaved edit of line 4, merged with the disk change by the sync.
        let buffer = lines("1\n2 (disk)\n3\n4 (user)\n5\n");
        let agent = lines("1 (agent)\n2\n3\n4\n5\n");
        let BufferWrite::Merged(hunks) =
            buffer_write(Some(agreed), Some(disk), None, &unix(), &buffer, &agent)
        else {
            panic!("merged")
        };
        assert_eq!(
            textdiff::apply(&buffer, &hunks),
            vec!["1 (agent)", "2 (disk)", "3", "4 (user)", "5"]
        );
    }

    #[test]
    fn the_agents_base_is_what_it_was_served_when_known() {
        // The agent read "a b c"; the file agreed on since is "a b c d" (the
        // user saved a line); then the disk changed line 1.
        let served = "a\nb\nc\n";
        let agreed = "a\nb\nc\nd\n";
        let disk = "A (disk)\nb\nc\nd\n";
        let agent = lines("a\nb\nC (agent)\n");
        let BufferWrite::Merged(hunks) = buffer_write(
            Some(agreed),
            Some(disk),
            Some(served),
            &unix(),
            &lines(disk),
            &agent,
        ) else {
            panic!("merged")
        };
        assert_eq!(
            textdiff::apply(&lines(disk), &hunks),
            vec!["A (disk)", "b", "C (agent)", "d"],
            "the saved line stays: the agent never removed it"
        );
    }

    #[test]
    fn a_bom_and_crlf_on_disk_merge_by_lines() {
        let dos = TextFormat {
            fileformat: FileFormat::Dos,
            bomb: false,
            ..TextFormat::default()
        };
        let agreed = "\u{feff}one\r\ntwo\r\nthree\r\n";
        let disk = "\u{feff}one\r\ntwo\r\nTHREE (disk)\r\n";
        let buffer = vec!["one", "two", "THREE (disk)"];
        // The agent was served the buffer's text: no BOM.
        let served = "one\r\ntwo\r\nthree\r\n";
        let agent = lines("ONE (agent)\r\ntwo\r\nthree\r\n");
        let BufferWrite::Merged(hunks) = buffer_write(
            Some(agreed),
            Some(disk),
            Some(served),
            &dos,
            &buffer,
            &agent,
        ) else {
            panic!("merged")
        };
        assert_eq!(
            textdiff::apply(&buffer, &hunks),
            vec!["ONE (agent)", "two", "THREE (disk)"]
        );
    }

    fn served(text: &str) -> Served {
        Served {
            hash: crate::editor::fs::content_hash(text),
            text: Some(Arc::new(text.to_owned())),
        }
    }

    fn on_disk(text: &str) -> Original {
        Original::Text(Arc::new(text.to_owned()))
    }

    #[test]
    fn a_write_without_a_buffer_merges_from_what_the_agent_was_served() {
        let s = served("a\nb\nc\n");
        assert_eq!(
            disk_write(Some(&s), &on_disk("a\nb\nc\n"), "A\nb\nc\n"),
            DiskWrite::AsIs,
            "the disk holds what the agent read"
        );
        assert_eq!(
            disk_write(None, &on_disk("x\n"), "A\nb\nc\n"),
            DiskWrite::AsIs,
            "never read through this client: no base"
        );
        assert_eq!(
            disk_write(Some(&s), &Original::Absent, "A\nb\nc\n"),
            DiskWrite::AsIs
        );
        assert_eq!(
            disk_write(Some(&s), &on_disk("a\nb\nC (disk)\n"), "A (agent)\nb\nc\n"),
            DiskWrite::Merged("A (agent)\nb\nC (disk)\n".into())
        );
        assert_eq!(
            disk_write(Some(&s), &on_disk("a\nB (disk)\nc\n"), "a\nB (agent)\nc\n"),
            DiskWrite::Conflict(2, 2)
        );
        let crlf = served("a\r\nb\r\n");
        assert_eq!(
            disk_write(Some(&crlf), &on_disk("a\r\nB\r\n"), "A\r\nb\r\n"),
            DiskWrite::Merged("A\r\nB\r\n".into())
        );
        let hash_only = Served {
            hash: crate::editor::fs::content_hash("a\n"),
            text: None,
        };
        assert_eq!(
            disk_write(Some(&hash_only), &on_disk("b\n"), "c\n"),
            DiskWrite::Stale
        );
    }
}
