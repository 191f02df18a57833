//! Line-level text operations for agent writes: the minimal hunks that turn
//! a buffer into the new content (so marks, folds and the cursor outside the
//! changed lines stay put), and a three-way merge that keeps the user's
//! edits made after the agent read the file.

use similar::{capture_diff_slices, Algorithm, DiffOp};

/// Replace `old_start..old_end` (0-based, exclusive end) of the old lines
/// with `lines`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hunk {
    pub old_start: usize,
    pub old_end: usize,
    pub lines: Vec<String>,
}

/// File text split into lines as a buffer holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lines {
    pub lines: Vec<String>,
    /// The text ended with a line break.
    pub eol: bool,
    /// Lines were separated by CRLF.
    pub crlf: bool,
}

impl Lines {
    pub fn from_text(text: &str) -> Self {
        let crlf = text.contains("\r\n");
        let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
        let eol = text.ends_with('\n');
        if eol {
            lines.pop();
        }
        if crlf {
            for l in &mut lines {
                if l.ends_with('\r') {
                    l.pop();
                }
            }
        }
        if lines.is_empty() {
            lines.push(String::new());
        }
        Self { lines, eol, crlf }
    }

    pub fn to_text(&self) -> String {
        if self.lines.len() == 1 && self.lines[0].is_empty() && !self.eol {
            return String::new();
        }
        let nl = if self.crlf { "\r\n" } else { "\n" };
        let mut out = self.lines.join(nl);
        if self.eol {
            out.push_str(nl);
        }
        out
    }
}

/// The hunks that turn `old` into `new`, in ascending order.
pub fn hunks(old: &[String], new: &[String]) -> Vec<Hunk> {
    let mut out: Vec<Hunk> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, old, new) {
        let (old_start, old_len, new_start, new_len) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => (old_index, old_len, new_index, 0),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => (old_index, 0, new_index, new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (old_index, old_len, new_index, new_len),
        };
        let lines = new[new_start..new_start + new_len].to_vec();
        // Adjacent operations (delete then insert) form one hunk.
        if let Some(last) = out.last_mut() {
            if last.old_end == old_start {
                last.old_end = old_start + old_len;
                last.lines.extend(lines);
                continue;
            }
        }
        out.push(Hunk {
            old_start,
            old_end: old_start + old_len,
            lines,
        });
    }
    out
}

/// Applies ascending, non-overlapping hunks.
pub fn apply(old: &[String], hunks: &[Hunk]) -> Vec<String> {
    let mut out = Vec::with_capacity(old.len());
    let mut pos = 0;
    for h in hunks {
        out.extend_from_slice(&old[pos..h.old_start]);
        out.extend(h.lines.iter().cloned());
        pos = h.old_end;
    }
    out.extend_from_slice(&old[pos..]);
    out
}

fn conflicts(a: &Hunk, b: &Hunk) -> bool {
    if a == b {
        return false;
    }
    let a_insert = a.old_start == a.old_end;
    let b_insert = b.old_start == b.old_end;
    if a_insert && b_insert {
        return a.old_start == b.old_start;
    }
    // An insertion at the start of, or inside, the other's range is ambiguous.
    if a_insert {
        return a.old_start >= b.old_start && a.old_start < b.old_end;
    }
    if b_insert {
        return b.old_start >= a.old_start && b.old_start < a.old_end;
    }
    a.old_start < b.old_end && b.old_start < a.old_end
}

/// Three-way merge: the agent's change (`base` → `ours`) applied on top of
/// the buffer's current lines (`base` → `theirs`). Returns the first
/// conflicting region (1-based lines of `base`) when both changed it.
pub fn merge3(
    base: &[String],
    ours: &[String],
    theirs: &[String],
) -> Result<Vec<String>, (usize, usize)> {
    let a = hunks(base, ours);
    let b = hunks(base, theirs);
    for x in &a {
        if let Some(y) = b.iter().find(|y| conflicts(x, y)) {
            return Err((
                x.old_start.min(y.old_start) + 1,
                x.old_end.max(y.old_end).max(x.old_start + 1),
            ));
        }
    }
    let mut all: Vec<Hunk> = a;
    for y in b {
        if !all.contains(&y) {
            all.push(y);
        }
    }
    // Inserts sort before a change starting at the same line.
    all.sort_by_key(|h| (h.old_start, h.old_end));
    Ok(apply(base, &all))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Vec<String> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn hunks_are_minimal_and_apply_back() {
        let old = l("a,b,c,d,e");
        let new = l("a,B,c,d,e,f");
        let h = hunks(&old, &new);
        assert_eq!(
            h,
            vec![
                Hunk {
                    old_start: 1,
                    old_end: 2,
                    lines: l("B")
                },
                Hunk {
                    old_start: 5,
                    old_end: 5,
                    lines: l("f")
                }
            ]
        );
        assert_eq!(apply(&old, &h), new);
        assert!(hunks(&old, &old).is_empty());
    }

    #[test]
    fn merge_keeps_user_edits_elsewhere() {
        let base = l("1,2,3,4,5,6");
        let agent = l("1,TWO,3,4,5,6");
        let user = l("1,2,3,4,five,6,7");
        assert_eq!(
            merge3(&base, &agent, &user).unwrap(),
            l("1,TWO,3,4,five,6,7")
        );
    }

    #[test]
    fn merge_reports_overlapping_edits() {
        let base = l("1,2,3");
        let agent = l("1,agent,3");
        let user = l("1,user,3");
        assert_eq!(merge3(&base, &agent, &user), Err((2, 2)));
        // The same change on both sides is not a conflict.
        assert_eq!(merge3(&base, &agent, &agent).unwrap(), agent);
    }

    #[test]
    fn merge_with_inserts_on_both_sides() {
        let base = l("a,b");
        let agent = l("x,a,b");
        let user = l("a,b,y");
        assert_eq!(merge3(&base, &agent, &user).unwrap(), l("x,a,b,y"));
        let both_at_same_place = l("a,z,b");
        assert!(merge3(&base, &l("a,w,b"), &both_at_same_place).is_err());
    }

    #[test]
    fn text_lines_round_trip() {
        for t in ["", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n", "x\n\n"] {
            assert_eq!(Lines::from_text(t).to_text(), t, "{t:?}");
        }
        let crlf = Lines::from_text("a\r\nb\r\n");
        assert_eq!(
            (crlf.lines.clone(), crlf.eol, crlf.crlf),
            (vec!["a".into(), "b".into()], true, true)
        );
    }
}
