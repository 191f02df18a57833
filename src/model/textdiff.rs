//! Line-level text operations for agent writes: the minimal hunks that turn
//! a buffer into the new content (so marks, folds and the cursor outside the
//! changed lines stay put), and a three-way merge that keeps the user's
//! edits made after the agent read the file. Also the bounded unified diff
//! of a tool card.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ops::Range;
use std::time::{Duration, Instant};

use similar::{capture_diff_slices, Algorithm, DiffOp};

/// Replace `old_start..old_end` (0-based, exclusive end) of the old lines
/// with `lines`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hunk {
    pub old_start: usize,
    pub old_end: usize,
    pub lines: Vec<String>,
}

/// File text split into lines as a buffer holds them. The lines borrow
/// the text: a 5 MB file is 50,000 lines, and owning them cost as many
/// small allocations per copy (three copies per agent write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lines<'a> {
    pub lines: Vec<&'a str>,
    /// The text ended with a line break.
    pub eol: bool,
    /// Lines were separated by CRLF.
    pub crlf: bool,
}

impl<'a> Lines<'a> {
    pub fn from_text(text: &'a str) -> Self {
        let crlf = text.contains("\r\n");
        let mut lines: Vec<&'a str> = text.split('\n').collect();
        let eol = text.ends_with('\n');
        if eol {
            lines.pop();
        }
        if crlf {
            for l in &mut lines {
                *l = l.strip_suffix('\r').unwrap_or(l);
            }
        }
        if lines.is_empty() {
            lines.push("");
        }
        Self { lines, eol, crlf }
    }

    /// The text again (tests: the round trip of `from_text`).
    #[cfg(test)]
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

/// A changed region: old lines `old` become new lines `new` (ranges of
/// the two sides).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub old: Range<usize>,
    pub new: Range<usize>,
}

/// The changed regions from `old` to `new` (Myers), ascending; adjacent
/// operations (a delete then an insert) form one region. Any line type:
/// the buffer sync diffs lines as bytes, the agent's writes as text.
pub fn changes<T: Hash + Eq + Ord>(old: &[T], new: &[T]) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
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
        if let Some(last) = out.last_mut() {
            if last.old.end == old_start && last.new.end == new_start {
                last.old.end = old_start + old_len;
                last.new.end = new_start + new_len;
                continue;
            }
        }
        out.push(Change {
            old: old_start..old_start + old_len,
            new: new_start..new_start + new_len,
        });
    }
    out
}

/// The hunks that turn `old` into `new`, in ascending order.
pub fn hunks<S: AsRef<str> + Hash + Ord>(old: &[S], new: &[S]) -> Vec<Hunk> {
    changes(old, new)
        .into_iter()
        .map(|c| Hunk {
            old_start: c.old.start,
            old_end: c.old.end,
            lines: new[c.new].iter().map(|l| l.as_ref().to_owned()).collect(),
        })
        .collect()
}

/// A `Hunk` of byte lines (the buffer sync's: a buffer may hold bytes that
/// are not UTF-8, and they stay as they are).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteHunk {
    pub old_start: usize,
    pub old_end: usize,
    pub lines: Vec<Vec<u8>>,
}

/// The hunks that turn byte lines `old` into `new`, in ascending order.
pub fn byte_hunks(old: &[&[u8]], new: &[&[u8]]) -> Vec<ByteHunk> {
    changes(old, new)
        .into_iter()
        .map(|c| ByteHunk {
            old_start: c.old.start,
            old_end: c.old.end,
            lines: new[c.new].iter().map(|l| l.to_vec()).collect(),
        })
        .collect()
}

/// Applies ascending, non-overlapping hunks.
pub fn apply<S: AsRef<str>>(old: &[S], hunks: &[Hunk]) -> Vec<String> {
    let owned = |l: &[S]| l.iter().map(|l| l.as_ref().to_owned()).collect::<Vec<_>>();
    let mut out = Vec::with_capacity(old.len());
    let mut pos = 0;
    for h in hunks {
        out.extend(owned(&old[pos..h.old_start]));
        out.extend(h.lines.iter().cloned());
        pos = h.old_end;
    }
    out.extend(owned(&old[pos..]));
    out
}

/// One side's change of the base: base lines `old` become `lines`.
pub(crate) struct Edit<'a, T> {
    pub(crate) old: Range<usize>,
    pub(crate) lines: &'a [T],
}

impl<T: PartialEq> Edit<'_, T> {
    pub(crate) fn same(&self, other: &Self) -> bool {
        self.old == other.old && self.lines == other.lines
    }

    /// Whether the two touch the same base lines. An insertion right before
    /// or right after the other's range does not (it goes first, or after).
    pub(crate) fn overlaps(&self, other: &Self) -> bool {
        let (a, b) = (&self.old, &other.old);
        match (a.is_empty(), b.is_empty()) {
            (true, true) => a.start == b.start,
            (true, false) => a.start > b.start && a.start < b.end,
            (false, true) => b.start > a.start && b.start < a.end,
            (false, false) => a.start < b.end && b.start < a.end,
        }
    }

    /// Whether the two cannot both apply: stricter than `overlaps`, as an
    /// insertion at the start of the other's range is ambiguous too.
    fn conflicts(&self, other: &Self) -> bool {
        if self.same(other) {
            return false;
        }
        let (a, b) = (&self.old, &other.old);
        let a_insert = a.is_empty();
        let b_insert = b.is_empty();
        if a_insert && b_insert {
            return a.start == b.start;
        }
        // An insertion at the start of, or inside, the other's range is ambiguous.
        if a_insert {
            return a.start >= b.start && a.start < b.end;
        }
        if b_insert {
            return b.start >= a.start && b.start < a.end;
        }
        a.start < b.end && b.start < a.end
    }
}

/// The edits that turn `base` into `side`, ascending.
pub(crate) fn edits<'a, T: Hash + Eq + Ord>(base: &[T], side: &'a [T]) -> Vec<Edit<'a, T>> {
    changes(base, side)
        .into_iter()
        .map(|c| Edit {
            old: c.old,
            lines: &side[c.new],
        })
        .collect()
}

/// `base` with the given non-overlapping edits (of either side, in any
/// order) applied; inserts sort before a change starting at the same line.
pub(crate) fn splice<'a, T>(base: &'a [T], mut all: Vec<Edit<'a, T>>) -> Vec<&'a T> {
    all.sort_by_key(|e| (e.old.start, e.old.end));
    let mut out = Vec::with_capacity(base.len());
    let mut pos = 0;
    for e in &all {
        out.extend(&base[pos..e.old.start]);
        out.extend(e.lines);
        pos = e.old.end;
    }
    out.extend(&base[pos..]);
    out
}

/// Three-way merge of any line type: the lines of the merge (borrowed from
/// the three sides), or the first conflicting region (1-based lines of
/// `base`) when both sides changed it. The same change on both sides is not
/// a conflict.
pub fn merge_lines<'a, T: Hash + Eq + Ord>(
    base: &'a [T],
    ours: &'a [T],
    theirs: &'a [T],
) -> Result<Vec<&'a T>, (usize, usize)> {
    let a = edits(base, ours);
    let b = edits(base, theirs);
    for x in &a {
        if let Some(y) = b.iter().find(|y| x.conflicts(y)) {
            return Err((
                x.old.start.min(y.old.start) + 1,
                x.old.end.max(y.old.end).max(x.old.start + 1),
            ));
        }
    }
    let mut all = a;
    for y in b {
        if !all.iter().any(|x| x.same(&y)) {
            all.push(y);
        }
    }
    Ok(splice(base, all))
}

/// Three-way merge: the agent's change (`base` → `ours`) applied on top of
/// the buffer's current lines (`base` → `theirs`). Returns the first
/// conflicting region (1-based lines of `base`) when both changed it.
pub fn merge3<S: AsRef<str> + Hash + Ord>(
    base: &[S],
    ours: &[S],
    theirs: &[S],
) -> Result<Vec<String>, (usize, usize)> {
    let merged = merge_lines(base, ours, theirs)?;
    Ok(merged.iter().map(|l| l.as_ref().to_owned()).collect())
}

/// Bounds on the diff shown in a tool card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffLimits {
    /// Inputs larger than this (old and new together) are summarised
    /// without diffing.
    pub max_bytes: usize,
    /// Inputs with more lines than this (old and new together) are
    /// summarised without diffing.
    pub max_lines: usize,
    /// Time allowed for the diff; past it the result is a summary.
    pub timeout: Duration,
    /// Unified-diff lines returned; the rest are only counted.
    pub max_output_lines: usize,
}

impl Default for DiffLimits {
    fn default() -> Self {
        Self {
            max_bytes: 4 << 20,
            max_lines: 100_000,
            timeout: Duration::from_millis(20),
            max_output_lines: 400,
        }
    }
}

/// Why a diff was summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryReason {
    /// Over `max_bytes` or `max_lines`: not diffed at all.
    TooLarge,
    /// The diff did not finish within `timeout`.
    Timeout,
}

/// A card's diff body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffBody {
    /// A unified diff with 3 lines of context, as `similar` renders it
    /// without its `---`/`+++` header: `@@ … @@` hunk headers, then lines
    /// starting with ` `, `-` or `+` (and `\ No newline at end of file`),
    /// without their line endings. At most `max_output_lines` lines;
    /// `more` counts those left out. `added`/`removed` count changed lines.
    Unified {
        lines: Vec<String>,
        more: usize,
        added: usize,
        removed: usize,
    },
    /// Too large or too slow to diff. `added`/`removed` are the lines
    /// only in `new` / only in `old`, counted as multisets: a moved line
    /// counts as unchanged, so these are lower bounds of a real diff's.
    Summary {
        added: usize,
        removed: usize,
        reason: SummaryReason,
    },
}

/// The diff of a tool card from `old` to `new` (a new file is `old` = ""),
/// bounded in size and time: the diff step of the card rendering, whose
/// unified lines are exactly those of
/// `TextDiff::from_lines(old, new).unified_diff().context_radius(3)`,
/// except that two sides both without a final newline (snippets) are
/// diffed as if both had one.
pub fn unified_diff_bounded(old: &str, new: &str, limits: &DiffLimits) -> DiffBody {
    // A snippet (agents send the edited region, Claude Code without its
    // final newline) is not a file: when no side ends with a newline, the
    // diff says nothing about it. `\ No newline at end of file` stays only
    // where the two sides' final newlines really differ.
    if !old.ends_with('\n') && !new.ends_with('\n') && !(old.is_empty() && new.is_empty()) {
        let ended = |t: &str| {
            if t.is_empty() {
                String::new()
            } else {
                format!("{t}\n")
            }
        };
        return diff_of_ended(&ended(old), &ended(new), limits);
    }
    diff_of_ended(old, new, limits)
}

/// `unified_diff_bounded` once the final newlines are settled.
fn diff_of_ended(old: &str, new: &str, limits: &DiffLimits) -> DiffBody {
    let summary = |reason| {
        let (added, removed) = line_count_delta(old, new);
        DiffBody::Summary {
            added,
            removed,
            reason,
        }
    };
    if old.len() + new.len() > limits.max_bytes {
        return summary(SummaryReason::TooLarge);
    }
    let line_count = |t: &str| t.bytes().filter(|&b| b == b'\n').count() + 1;
    if line_count(old) + line_count(new) > limits.max_lines {
        return summary(SummaryReason::TooLarge);
    }
    let deadline = Instant::now() + limits.timeout;
    let diff = similar::TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(deadline)
        .diff_lines(old, new);
    // `similar` ends a diff that reaches its deadline with coarse
    // replacements instead of saying so: past the deadline, the result is
    // not the diff a reader expects.
    if Instant::now() >= deadline {
        return summary(SummaryReason::Timeout);
    }
    let (mut added, mut removed) = (0, 0);
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { .. } => {}
            DiffOp::Delete { old_len, .. } => removed += old_len,
            DiffOp::Insert { new_len, .. } => added += new_len,
            DiffOp::Replace {
                old_len, new_len, ..
            } => {
                removed += old_len;
                added += new_len;
            }
        }
    }
    let mut lines = Vec::new();
    let mut more = 0;
    let mut unified = diff.unified_diff();
    unified.context_radius(3);
    for hunk in unified.iter_hunks() {
        if lines.len() >= limits.max_output_lines {
            // Counted, not rendered: the header, each change, and a hint
            // after a change without a final newline.
            more += 1 + hunk
                .iter_changes()
                .map(|c| 1 + usize::from(c.missing_newline()))
                .sum::<usize>();
            continue;
        }
        for line in hunk.to_string().lines() {
            if lines.len() < limits.max_output_lines {
                lines.push(line.trim_end_matches('\r').to_owned());
            } else {
                more += 1;
            }
        }
    }
    DiffBody::Unified {
        lines,
        more,
        added,
        removed,
    }
}

/// Lines only in `new` and lines only in `old`, as multisets (line
/// endings ignored): linear time and memory in the number of lines, and
/// only the lines between the common head and tail are counted.
pub fn line_count_delta(old: &str, new: &str) -> (usize, usize) {
    let (old, new) = trim_common_lines(old, new);
    let mut counts: HashMap<u64, isize, BuildHasherDefault<KeyIsHash>> = HashMap::default();
    for l in old.lines() {
        *counts.entry(line_hash(l.as_bytes())).or_default() -= 1;
    }
    for l in new.lines() {
        *counts.entry(line_hash(l.as_bytes())).or_default() += 1;
    }
    counts.values().fold((0, 0), |(a, r), &c| {
        if c > 0 {
            (a + c as usize, r)
        } else {
            (a, r + (-c) as usize)
        }
    })
}

/// `old` and `new` without the whole lines they start and end with in
/// common (a byte comparison, far cheaper than hashing those lines).
fn trim_common_lines<'a, 'b>(old: &'a str, new: &'b str) -> (&'a str, &'b str) {
    let (o, n) = (old.as_bytes(), new.as_bytes());
    let same = o.iter().zip(n).take_while(|(a, b)| a == b).count();
    // Back to just after the last newline both share.
    let head = o[..same]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let (o, n) = (&o[head..], &n[head..]);
    let same = o
        .iter()
        .rev()
        .zip(n.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    // Forward to just after a newline, so that only whole lines go (the
    // byte before the common tail must end a line on both sides).
    let tail_start = |t: &[u8]| {
        let from = t.len() - same;
        if from == 0 || t[from - 1] == b'\n' {
            from
        } else {
            t[from..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(t.len(), |i| from + i + 1)
        }
    };
    let (oe, ne) = (tail_start(o), tail_start(n));
    // Both cuts drop the same bytes: each tail is the other's.
    let cut = (o.len() - oe).min(n.len() - ne);
    (
        &old[head..head + o.len() - cut],
        &new[head..head + n.len() - cut],
    )
}

/// A fast 64-bit hash of a line (multiply-rotate over 8-byte words, as
/// rustc's FxHash), good enough to count lines.
fn line_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in words.by_ref() {
        let v = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
        h = (h.rotate_left(5) ^ v).wrapping_mul(K);
    }
    for &b in words.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
    }
    h
}

/// The keys are hashes already.
#[derive(Default)]
struct KeyIsHash(u64);

impl Hasher for KeyIsHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
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

    /// The buffer sync's hunks: byte lines (not all UTF-8), applied
    /// bottom-up as `acp.editor.sync` does, give the new lines; a large
    /// text changed in a few places gives as many hunks.
    #[test]
    fn byte_hunks_turn_the_old_lines_into_the_new() {
        fn apply_bytes<'a>(old: &[&'a [u8]], hunks: &'a [ByteHunk]) -> Vec<&'a [u8]> {
            let mut out: Vec<&[u8]> = old.to_vec();
            for h in hunks.iter().rev() {
                out.splice(h.old_start..h.old_end, h.lines.iter().map(Vec::as_slice));
            }
            out
        }
        let old: Vec<&[u8]> = vec![b"a", b"\xff\xfe", b"c", b"d"];
        let new: Vec<&[u8]> = vec![b"x", b"a", b"\xff", b"c", b"d", b"e"];
        let h = byte_hunks(&old, &new);
        assert_eq!(apply_bytes(&old, &h), new);
        assert_eq!(h.len(), 3);
        assert!(byte_hunks(&old, &old).is_empty());

        let old_text: Vec<String> = (0..100_000).map(|i| format!("line {i}")).collect();
        let mut new_text = old_text.clone();
        for k in 1..=5 {
            new_text[k * 16_000] = format!("changed {k}");
        }
        let old: Vec<&[u8]> = old_text.iter().map(|l| l.as_bytes()).collect();
        let new: Vec<&[u8]> = new_text.iter().map(|l| l.as_bytes()).collect();
        let t0 = Instant::now();
        let h = byte_hunks(&old, &new);
        println!("100k lines, 5 changed: {:?}", t0.elapsed());
        assert_eq!(h.len(), 5);
        assert_eq!(apply_bytes(&old, &h), new);
        // merge_lines takes any line type, as merge3 does text.
        let ours: Vec<&[u8]> = vec![b"1", b"TWO", b"3"];
        let theirs: Vec<&[u8]> = vec![b"1", b"2", b"3", b"\xff"];
        let base: Vec<&[u8]> = vec![b"1", b"2", b"3"];
        let merged: Vec<&[u8]> = merge_lines(&base, &ours, &theirs)
            .unwrap()
            .into_iter()
            .copied()
            .collect();
        assert_eq!(merged, vec![&b"1"[..], b"TWO", b"3", b"\xff"]);
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

    /// The card's diff lines as rendered before the bounds: the whole
    /// unified diff, header dropped, `\r` trimmed.
    fn unbounded_lines(old: &str, new: &str) -> Vec<String> {
        let text = similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header("a", "b")
            .to_string();
        text.lines()
            .skip(2)
            .map(|l| l.trim_end_matches('\r').to_owned())
            .collect()
    }

    fn numbered(n: usize, changed_every: usize, tag: &str) -> String {
        (0..n)
            .map(|i| {
                if changed_every > 0 && i % changed_every == 0 {
                    format!("{tag} line {i}\n")
                } else {
                    format!("line {i}\n")
                }
            })
            .collect()
    }

    #[test]
    fn a_snippet_without_final_newlines_says_nothing_about_them() {
        let lines =
            |old: &str, new: &str| match unified_diff_bounded(old, new, &DiffLimits::default()) {
                DiffBody::Unified { lines, .. } => lines,
                other => panic!("{other:?}"),
            };
        // claude-agent-acp 0.100.0's Edit: the edited region, no final newline.
        let claude = lines(
            "function M.greet()\n  print('helo')",
            "function M.greet(name)\n  print('hello, ' .. name)",
        );
        assert_eq!(
            claude,
            [
                "@@ -1,2 +1,2 @@",
                "-function M.greet()",
                "-  print('helo')",
                "+function M.greet(name)",
                "+  print('hello, ' .. name)"
            ]
        );
        // A new file, or one emptied, of one line: its line and nothing else.
        assert_eq!(lines("", "x"), ["@@ -0,0 +1 @@", "+x"]);
        assert_eq!(lines("x", ""), ["@@ -1 +0,0 @@", "-x"]);
        // The two sides really differ in their final newline: said once.
        assert_eq!(
            lines("a\nb\n", "a\nB"),
            [
                "@@ -1,2 +1,2 @@",
                " a",
                "-b",
                "+B",
                "\\ No newline at end of file"
            ]
        );
        assert_eq!(
            lines("a", "a\n"),
            ["@@ -1 +1 @@", "-a", "\\ No newline at end of file", "+a"]
        );
    }

    #[test]
    fn bounded_diff_matches_the_unbounded_rendering() {
        let big_old = numbered(2000, 0, "");
        let big_new = numbered(2000, 40, "changed");
        let pairs: Vec<(String, String)> = vec![
            ("a\nb\nc\n".into(), "a\nB\nc\n".into()),
            ("a\nb\nc".into(), "a\nb\nc\nd\n".into()),
            ("a\r\nb\r\n".into(), "a\r\nc\r\n".into()),
            ("".into(), "new\nfile\n".into()),
            ("same\n".into(), "same\n".into()),
            ("x\n".into(), "y".into()),
            (big_old.clone(), big_new.clone()),
        ];
        let all = DiffLimits {
            max_output_lines: usize::MAX,
            ..DiffLimits::default()
        };
        for (old, new) in &pairs {
            let want = unbounded_lines(old, new);
            match unified_diff_bounded(old, new, &all) {
                DiffBody::Unified { lines, more, .. } => {
                    assert_eq!((lines, more), (want.clone(), 0), "{old:?} -> {new:?}");
                }
                other => panic!("{other:?}"),
            }
            // Cut at 400 lines, the rest counted exactly.
            match unified_diff_bounded(old, new, &DiffLimits::default()) {
                DiffBody::Unified { lines, more, .. } => {
                    let n = want.len().min(400);
                    assert_eq!(lines, want[..n].to_vec());
                    assert_eq!(more, want.len() - n);
                }
                other => panic!("{other:?}"),
            }
        }
        // The big pair has 50 changed lines, enough hunks to be cut.
        match unified_diff_bounded(&big_old, &big_new, &DiffLimits::default()) {
            DiffBody::Unified {
                more,
                added,
                removed,
                ..
            } => assert_eq!((more > 0, added, removed), (true, 50, 50)),
            other => panic!("{other:?}"),
        }
        // A missing final newline is counted in `more` like it is shown.
        let old = "1\n".repeat(100) + "end\n";
        let new = "2\n".repeat(100) + "END";
        let want = unbounded_lines(&old, &new);
        assert!(want.iter().any(|l| l.starts_with("\\ No newline")));
        let few = DiffLimits {
            max_output_lines: 1,
            ..DiffLimits::default()
        };
        match unified_diff_bounded(&old, &new, &few) {
            DiffBody::Unified { lines, more, .. } => assert_eq!(lines.len() + more, want.len()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn large_diffs_become_summaries() {
        let lim = DiffLimits::default();
        let timed = |old: &str, new: &str| {
            let t0 = Instant::now();
            let body = unified_diff_bounded(old, new, &lim);
            (body, t0.elapsed())
        };
        // 2 × 20,000 lines, all different: too slow to diff within bounds.
        let old = numbered(20_000, 1, "old");
        let new = numbered(20_000, 1, "new");
        let (body, took) = timed(&old, &new);
        println!("2 x 20k lines, all changed: {took:?}");
        assert_eq!(
            body,
            DiffBody::Summary {
                added: 20_000,
                removed: 20_000,
                reason: SummaryReason::Timeout
            }
        );
        // Every other line changed.
        let (body, took) = timed(&numbered(20_000, 0, ""), &numbered(20_000, 2, "new"));
        println!("2 x 20k lines, every other line changed: {took:?}");
        match body {
            DiffBody::Summary { added, removed, .. } => {
                assert_eq!((added, removed), (10_000, 10_000))
            }
            DiffBody::Unified {
                lines,
                added,
                removed,
                ..
            } => {
                assert!(lines.len() <= lim.max_output_lines);
                assert_eq!((added, removed), (10_000, 10_000));
            }
        }
        // One line changed in 20,000: the real hunk, quickly.
        let mut one = numbered(20_000, 0, "");
        one = one.replacen("line 10000\n", "line ten thousand\n", 1);
        let (body, took) = timed(&numbered(20_000, 0, ""), &one);
        println!("2 x 20k lines, one changed: {took:?}");
        assert_eq!(
            body,
            DiffBody::Unified {
                lines: unbounded_lines(&numbered(20_000, 0, ""), &one),
                more: 0,
                added: 1,
                removed: 1
            }
        );
        // Over the size limits: summarised without diffing.
        let small = DiffLimits {
            max_bytes: 100,
            ..lim
        };
        let (a, b) = ("x\n".repeat(40), "y\n".repeat(30) + "x\n");
        assert_eq!(
            unified_diff_bounded(&a, &b, &small),
            DiffBody::Summary {
                added: 30,
                removed: 39,
                reason: SummaryReason::TooLarge
            }
        );
        let few_lines = DiffLimits {
            max_lines: 50,
            ..lim
        };
        assert!(matches!(
            unified_diff_bounded(&a, &b, &few_lines),
            DiffBody::Summary {
                reason: SummaryReason::TooLarge,
                ..
            }
        ));
        let huge = "some line of text\n".repeat(1_000_000);
        let t0 = Instant::now();
        let body = unified_diff_bounded("", &huge, &lim);
        println!("new file of 1M lines: {:?}", t0.elapsed());
        assert_eq!(
            body,
            DiffBody::Summary {
                added: 1_000_000,
                removed: 0,
                reason: SummaryReason::TooLarge
            }
        );
    }

    #[test]
    fn line_delta_counts_multisets() {
        assert_eq!(line_count_delta("a\nb\nc\n", "c\na\nb\n"), (0, 0));
        assert_eq!(line_count_delta("a\na\n", "a\n"), (0, 1));
        assert_eq!(line_count_delta("a\r\nb", "a\nb\nb\n"), (1, 0));
        assert_eq!(line_count_delta("", "x\ny\n"), (2, 0));
        assert_eq!(line_count_delta("b\n", "ab\n"), (1, 1));
        assert_eq!(line_count_delta("x\nab\n", "x\nb\n"), (1, 1));

        // Against a plain multiset count, on texts with shared heads and
        // tails cut at every kind of place.
        let naive = |old: &str, new: &str| {
            let mut m: HashMap<&str, isize> = HashMap::new();
            old.lines().for_each(|l| *m.entry(l).or_default() -= 1);
            new.lines().for_each(|l| *m.entry(l).or_default() += 1);
            m.values().fold((0, 0), |(a, r), &c| {
                (a + c.max(0) as usize, r + (-c).max(0) as usize)
            })
        };
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let pieces = ["a", "b", "ab", "ba", "\n", "\r\n", "é", ""];
        for _ in 0..3000 {
            let mut text = |len: u64| -> String {
                (0..len)
                    .map(|_| pieces[next(pieces.len() as u64) as usize])
                    .collect()
            };
            let (head, o, n, tail) = (text(6), text(5), text(5), text(6));
            let (old, new) = (format!("{head}{o}{tail}"), format!("{head}{n}{tail}"));
            assert_eq!(
                line_count_delta(&old, &new),
                naive(&old, &new),
                "{old:?} {new:?}"
            );
        }
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
