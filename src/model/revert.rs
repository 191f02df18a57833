//! Taking back one change of a text while keeping what was done since, as
//! `git revert` does: a three-way merge from the text right after the
//! change (`base`) to the text now (`ours`) and to the text right before it
//! (`theirs`). Where the two overlap, the text now wins and the region is
//! counted as not reverted: a later edit over the change is never undone.

use std::hash::Hash;

use crate::model::textdiff::{edits, splice};

/// The outcome of a revert: the lines, how many regions of the change were
/// taken back (`reverted`) and how many were left as they are because the
/// text now changed them too (`kept`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reverted<'a, T> {
    pub lines: Vec<&'a T>,
    pub reverted: usize,
    pub kept: usize,
}

/// Three-way merge that keeps `ours` wherever both sides changed the same
/// base lines: every edit from `base` to `ours` is kept, and each edit from
/// `base` to `theirs` that touches none of them is applied. An edit both
/// sides made alike counts as reverted (it is there already).
pub fn merge_keep_ours<'a, T: Hash + Eq + Ord>(
    base: &'a [T],
    ours: &'a [T],
    theirs: &'a [T],
) -> Reverted<'a, T> {
    let mut all = edits(base, ours);
    let (mut reverted, mut kept) = (0, 0);
    for e in edits(base, theirs) {
        if all.iter().any(|x| x.same(&e)) {
            reverted += 1;
        } else if all.iter().any(|x| x.overlaps(&e)) {
            kept += 1;
        } else {
            reverted += 1;
            all.push(e);
        }
    }
    Reverted {
        lines: splice(base, all),
        reverted,
        kept,
    }
}

/// A text cut into lines that keep their line break (the last one may have
/// none), so that joining them gives the text back byte for byte: a change
/// of the last line's break is a change of that line.
pub fn text_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// `merge_keep_ours` of whole texts.
pub fn revert_text(after: &str, now: &str, before: &str) -> (String, usize, usize) {
    let (base, ours, theirs) = (text_lines(after), text_lines(now), text_lines(before));
    let r = merge_keep_ours(&base, &ours, &theirs);
    (r.lines.into_iter().copied().collect(), r.reverted, r.kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(lines: &[&str]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    #[test]
    fn a_change_is_taken_back_and_the_users_lines_elsewhere_stay() {
        let before = t(&["one", "two", "three", "four", "five"]);
        // The agent changed line 2; then the user added a line after 4.
        let after = t(&["one", "TWO", "three", "four", "five"]);
        let now = t(&["one", "TWO", "three", "four", "mine", "five"]);
        let (text, reverted, kept) = revert_text(&after, &now, &before);
        assert_eq!(text, t(&["one", "two", "three", "four", "mine", "five"]));
        assert_eq!((reverted, kept), (1, 0));
    }

    #[test]
    fn where_the_user_edited_over_the_change_the_users_text_stays() {
        let before = t(&["a", "b", "c", "d", "e", "f"]);
        let after = t(&["a", "B", "c", "d", "E", "f"]);
        // The user rewrote the agent's B; E is untouched.
        let now = t(&["a", "B (mine)", "c", "d", "E", "f"]);
        let (text, reverted, kept) = revert_text(&after, &now, &before);
        assert_eq!(text, t(&["a", "B (mine)", "c", "d", "e", "f"]));
        assert_eq!((reverted, kept), (1, 1));
    }

    #[test]
    fn insertions_next_to_the_change_are_not_conflicts() {
        let before = t(&["a", "b", "c"]);
        let after = t(&["a", "B", "c"]);
        // Right before and right after the agent's line.
        let now = t(&["a", "x", "B", "y", "c"]);
        let (text, reverted, kept) = revert_text(&after, &now, &before);
        assert_eq!(text, t(&["a", "x", "b", "y", "c"]));
        assert_eq!((reverted, kept), (1, 0));
    }

    #[test]
    fn a_change_already_undone_by_hand_counts_as_reverted() {
        let before = t(&["a", "b"]);
        let after = t(&["a", "B"]);
        let (text, reverted, kept) = revert_text(&after, &before, &before);
        assert_eq!(text, before);
        assert_eq!((reverted, kept), (1, 0));
    }

    #[test]
    fn deleted_and_added_lines_and_the_last_line_break_revert_exactly() {
        let before = "keep\ngone\nlast";
        let after = "keep\nnew\nlast\n";
        let (text, reverted, kept) = revert_text(after, after, before);
        assert_eq!(text, before);
        assert_eq!(kept, 0);
        assert!(reverted >= 1);
        // CRLF lines keep their breaks.
        let (text, _, _) = revert_text("a\r\nB\r\n", "a\r\nB\r\nc\r\n", "a\r\nb\r\n");
        assert_eq!(text, "a\r\nb\r\nc\r\n");
        // A created file (empty before) goes back to empty.
        assert_eq!(revert_text("x\ny\n", "x\ny\n", "").0, "");
    }
}
