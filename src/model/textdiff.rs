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
mod tests;
