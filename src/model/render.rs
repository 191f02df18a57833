//! Markdown rendering of thread entries. The view shows exactly these lines,
//! so an incremental append must produce the same text as a full re-render
//! (`append_fragment` is the incremental half of `entry_markdown`).

use std::borrow::Cow;

use super::entries::{
    Entry, EntryKind, NoticeLevel, PlanItem, RawOutput, ToolCall, ToolContent, TERMINAL_TAIL_LINES,
};
use super::schema::{PlanStatus, ToolKind};
use super::textdiff::DiffBody;

impl Entry {
    /// The entry as markdown text (no trailing newline).
    pub fn to_markdown(&self) -> String {
        entry_markdown(self)
    }

    /// The entry as buffer lines.
    pub fn lines(&self) -> Vec<String> {
        self.to_markdown().split('\n').map(str::to_owned).collect()
    }
}

const THOUGHT_HEADER: &str = "> **Thinking**";

/// The short label a card header starts with, per tool kind.
pub fn kind_label(kind: &ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Delete => "delete",
        ToolKind::Move => "move",
        ToolKind::Search => "search",
        ToolKind::Execute => "run",
        ToolKind::Think => "think",
        ToolKind::Fetch => "fetch",
        ToolKind::SwitchMode => "mode",
        ToolKind::Other | ToolKind::Unknown(_) => "tool",
    }
}

/// Separates a card header's label, title and status word (the view
/// highlights the parts by it).
pub const HEADER_SEP: &str = " · ";

pub fn entry_markdown(entry: &Entry) -> String {
    match entry {
        Entry::User { text } => format!("{USER_HEADING}\n\n{text}"),
        Entry::Heading { text } => format!("## {text}"),
        Entry::Agent { text } => escape_turn_headings(text).into_owned(),
        Entry::Thought { text } => format!("{THOUGHT_HEADER}\n> {}", text.replace('\n', "\n> ")),
        Entry::ToolCall(tc) => tool_call_markdown(tc),
        Entry::Plan { items } => plan_markdown(items),
        Entry::Notice { level, text } => {
            let icon = match level {
                NoticeLevel::Info => "ℹ",
                NoticeLevel::Warn => "⚠",
                NoticeLevel::Error => "✖",
            };
            format!("{icon} {text}")
        }
    }
}

/// The heading that opens each of the user's turns in the transcript.
pub const USER_HEADING: &str = "## You";

/// How far a line has come towards reading as the user's turn heading
/// ([`USER_HEADING`] at any level: up to 3 spaces, 1 to 6 `#`, blanks,
/// "you" in any case, then the line's end or a character that is no letter,
/// digit or `_`). Fed one byte at a time, so a streamed line is followed
/// without reading it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeadingScan {
    /// At the line's start.
    #[default]
    Start,
    /// After this many spaces (at most 3).
    Indent(u8),
    Hashes(u8),
    Blank,
    Y,
    Yo,
    /// "You" read: a turn heading unless a word character follows.
    You,
    /// A turn heading, whatever follows.
    Turn,
    /// Never a turn heading.
    Not,
}

impl HeadingScan {
    pub fn feed(self, b: u8) -> Self {
        use HeadingScan::*;
        match (self, b) {
            (_, b'\n') => Start,
            (Not, _) => Not,
            (Turn, _) => Turn,
            (Start, b' ') => Indent(1),
            (Indent(n), b' ') if n < 3 => Indent(n + 1),
            (Start | Indent(_), b'#') => Hashes(1),
            (Hashes(n), b'#') if n < 6 => Hashes(n + 1),
            (Hashes(_) | Blank, b' ' | b'\t') => Blank,
            (Blank, b'Y' | b'y') => Y,
            (Y, b'O' | b'o') => Yo,
            (Yo, b'U' | b'u') => You,
            (You, b) if b.is_ascii_alphanumeric() || b == b'_' => Not,
            (You, _) => Turn,
            _ => Not,
        }
    }

    pub fn feed_all(self, bytes: &[u8]) -> Self {
        bytes.iter().fold(self, |s, &b| s.feed(b))
    }

    /// The line read so far shows as a turn heading.
    pub fn is_turn(self) -> bool {
        matches!(self, HeadingScan::You | HeadingScan::Turn)
    }
}

/// `text` with every line that would read as the user's turn heading
/// (see [`HeadingScan`]) shown as text: a backslash before its first `#`.
/// Agent text (a reply, a card's output) thus cannot open a turn that
/// looks like the user's.
pub fn escape_turn_headings(text: &str) -> Cow<'_, str> {
    if !text.contains('#') {
        return Cow::Borrowed(text);
    }
    let mut out: Option<String> = None;
    let mut done = 0; // bytes of `text` already in `out`
    let mut start = 0;
    for line in text.split('\n') {
        if HeadingScan::default().feed_all(line.as_bytes()).is_turn() {
            let hash = start + line.find('#').unwrap_or(0);
            let o = out.get_or_insert_with(|| String::with_capacity(text.len() + 8));
            o.push_str(&text[done..hash]);
            o.push('\\');
            done = hash;
        }
        start += line.len() + 1;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[done..]);
            Cow::Owned(o)
        }
    }
}

/// What appending `chunk` to agent text whose last line is scanned as
/// `before` adds to its rendering: the chunk with its complete or partial
/// new lines escaped as [`escape_turn_headings`] does, the scan of the new
/// last line, and whether the line the chunk continues changed between
/// shown as text and shown escaped (then the entry must be rendered again:
/// its start was already shown).
pub fn agent_fragment(before: HeadingScan, chunk: &str) -> (String, HeadingScan, bool) {
    let bytes = chunk.as_bytes();
    let first_nl = chunk.find('\n');
    let continued = before.feed_all(&bytes[..first_nl.unwrap_or(bytes.len())]);
    let flipped = continued.is_turn() != before.is_turn();
    let Some(nl) = first_nl else {
        return (chunk.to_owned(), continued, flipped);
    };
    let rest = &chunk[nl + 1..];
    let escaped = escape_turn_headings(rest);
    let after = HeadingScan::default().feed_all(rest.rsplit('\n').next().unwrap_or("").as_bytes());
    let mut out = String::with_capacity(chunk.len() + 2);
    out.push_str(&chunk[..=nl]);
    out.push_str(&escaped);
    (out, after, flipped)
}

/// What appending `text` to an entry of `kind` adds to its rendering.
pub fn append_fragment(kind: EntryKind, text: &str) -> String {
    match kind {
        EntryKind::Thought => text.replace('\n', "\n> "),
        _ => text.to_owned(),
    }
}

fn tool_call_markdown(tc: &ToolCall) -> String {
    tool_call_rendering(tc).0
}

/// A card's markdown and the rows of its diff bodies (first, last; 0-based
/// from the card's first line), so the view colours them without reading
/// the text back.
pub fn tool_call_rendering(tc: &ToolCall) -> (String, Vec<(usize, usize)>) {
    let mut diff_rows = Vec::new();
    let title = if tc.title.is_empty() {
        tc.id.as_str()
    } else {
        tc.title.as_str()
    };
    // Plain text: the buffer holds what the user sees and searches; the
    // view colours the label and the status word with extmarks.
    let mut out = format!(
        "{}{HEADER_SEP}{}{HEADER_SEP}{}",
        kind_label(&tc.kind),
        title.replace('\n', " "),
        tc.shown_status()
    );
    for (path, line) in &tc.locations {
        // 1-based, as the agent sent it (the model maps a legacy 0 to 1).
        match line {
            Some(l) => out.push_str(&format!("\n  `{path}:{l}`")),
            None => out.push_str(&format!("\n  `{path}`")),
        }
    }
    if let Some(input) = &tc.raw_input {
        out.push_str(&format!("\n  input: `{input}`"));
    }
    for c in &tc.content {
        match c {
            ToolContent::Text { text } => {
                for line in text.split('\n') {
                    out.push_str("\n  ");
                    out.push_str(line);
                }
            }
            ToolContent::Diff {
                path,
                old_text,
                body,
                ..
            } => {
                // Header and fence rows come first, the closing fence last.
                let before = out.matches('\n').count();
                diff_markdown(&mut out, path, old_text.is_none(), body);
                let after = out.matches('\n').count();
                if after >= before + 3 {
                    diff_rows.push((before + 3, after - 1));
                }
            }
            ToolContent::Terminal {
                id, known: false, ..
            } => out.push_str(&format!("\n  terminal `{id}` (run by the agent)")),
            ToolContent::Terminal {
                id,
                tail,
                more_lines,
                exit,
                ..
            } => terminal_markdown(&mut out, id, tail, *more_lines, exit.as_deref()),
        }
    }
    // Output the agent reported only in `rawOutput` (codex-acp): shown when
    // no content item already shows the output.
    let shows_output = tc
        .content
        .iter()
        .any(|c| matches!(c, ToolContent::Text { .. } | ToolContent::Terminal { .. }));
    if let (Some(raw), false) = (&tc.raw_output, shows_output) {
        raw_output_markdown(&mut out, raw);
    }
    for note in &tc.notes {
        out.push_str(&format!("\n  ✎ {note}"));
    }
    // The agent's text in the card (output, diff lines) cannot show as the
    // user's turn heading either (a fence it closes would let it).
    let out = match escape_turn_headings(&out) {
        Cow::Borrowed(_) => out,
        Cow::Owned(o) => o,
    };
    (out, diff_rows)
}

/// A unified diff (3 lines of context) in a ```diff block, so the chat's
/// markdown highlighting colours it. No `oldText` means a new file.
fn diff_markdown(out: &mut String, path: &str, new_file: bool, body: &DiffBody) {
    let header = if new_file { "new file" } else { "diff" };
    out.push_str(&format!("\n  {header} `{path}`"));
    out.push_str("\n  ```diff");
    match body {
        DiffBody::Unified { lines, more, .. } => {
            for line in lines {
                out.push_str("\n  ");
                out.push_str(line.trim_end_matches('\r'));
            }
            if *more > 0 {
                out.push_str(&format!(
                    "\n  … {more} more lines (review with <CR> on the card)"
                ));
            }
        }
        DiffBody::Summary { added, removed, .. } => {
            out.push_str(&format!(
                "\n  +{added} −{removed} lines: too large to show here (review with <CR> on the card)"
            ));
        }
    }
    out.push_str("\n  ```");
}

/// A card's terminal: its last lines (`:AcpTerminal` opens the rest).
fn terminal_markdown(
    out: &mut String,
    id: &str,
    tail: &str,
    more_lines: usize,
    exit: Option<&str>,
) {
    out.push_str("\n  ```console");
    if more_lines > 0 {
        out.push_str(&format!(
            "\n  … {more_lines} more lines (:AcpTerminal {id})"
        ));
    }
    if !tail.is_empty() {
        for line in tail.split('\n') {
            out.push_str("\n  ");
            out.push_str(&line.replace('\r', ""));
        }
    }
    out.push_str("\n  ```");
    out.push_str(&format!(
        "\n  {}{HEADER_SEP}{id}",
        exit.unwrap_or("running…")
    ));
}

/// `rawOutput` text: its last lines in a console block, then the exit code.
fn raw_output_markdown(out: &mut String, raw: &RawOutput) {
    let text = raw.text.trim_end_matches('\n');
    if !text.is_empty() {
        let lines: Vec<&str> = text.split('\n').collect();
        let skip = lines.len().saturating_sub(TERMINAL_TAIL_LINES);
        out.push_str("\n  ```console");
        if skip > 0 {
            out.push_str(&format!("\n  … {skip} more lines"));
        }
        for line in &lines[skip..] {
            out.push_str("\n  ");
            out.push_str(&line.replace('\r', ""));
        }
        out.push_str("\n  ```");
    }
    if let Some(code) = raw.exit_code {
        out.push_str(&format!("\n  exit code {code}"));
    }
}

/// A plan as a Markdown task list: `[x]` done, `[ ]` otherwise, and the
/// running step says so in words (`[~]` is no task marker: Markdown would
/// read it as a link).
pub fn plan_markdown(items: &[PlanItem]) -> String {
    let done = items
        .iter()
        .filter(|i| i.status == PlanStatus::Completed)
        .count();
    let mut out = format!("Plan{HEADER_SEP}{done}/{} done", items.len());
    for item in items {
        let mark = match item.status {
            PlanStatus::Completed => "[x]",
            _ => "[ ]",
        };
        let content = item.content.replace('\n', " ");
        out.push_str(&format!("\n- {mark} {content} ({})", item.priority));
        if item.status == PlanStatus::InProgress {
            out.push_str(HEADER_SEP);
            out.push_str("in progress");
        }
    }
    out
}

/// `ms` as the user reads it ("30 s", "1.5 s", "250 ms").
pub fn human_ms(ms: u64) -> String {
    if ms >= 1000 && ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else if ms >= 1000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{ms} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_render_as_unified_hunks_and_new_files_as_additions() {
        let tc = ToolCall {
            id: "t".into(),
            title: "Edit".into(),
            kind: crate::model::schema::ToolKind::Edit,
            status: crate::model::schema::ToolStatus::Pending,
            locations: vec![("/p/a.rs".into(), Some(1))],
            content: vec![
                ToolContent::diff(
                    "/p/a.rs".into(),
                    Some("a\nb\nc\n".into()),
                    "a\nB\nc\n".into(),
                ),
                ToolContent::diff("/p/new.rs".into(), None, "x\n".into()),
            ],
            raw_input: None,
            command: None,
            cwd: None,
            env: Default::default(),
            asked: false,
            raw_output: None,
            notes: vec![],
            client_state: Some(crate::model::entries::ClientState::WaitingForYou),
        };
        let md = entry_markdown(&Entry::ToolCall(tc));
        assert!(
            md.starts_with("edit · Edit · waiting for you\n  `/p/a.rs:1`"),
            "{md}"
        );
        assert!(
            md.contains("  ```diff\n  @@ -1,3 +1,3 @@\n   a\n  -b\n  +B\n   c\n  ```"),
            "{md}"
        );
        assert!(
            md.contains("new file `/p/new.rs`\n  ```diff\n  @@ -0,0 +1 @@\n  +x\n  ```"),
            "{md}"
        );
    }

    #[test]
    fn headers_and_status_marks_are_plain_text() {
        use crate::model::schema::PlanPriority;
        let item = |content: &str, status: PlanStatus| PlanItem {
            content: content.into(),
            status,
            priority: PlanPriority::High,
        };
        let md = plan_markdown(&[
            item("Read", PlanStatus::Completed),
            item("Fix", PlanStatus::InProgress),
            item("Test", PlanStatus::Pending),
        ]);
        assert_eq!(
            md,
            "Plan · 1/3 done\n- [x] Read (high)\n- [ ] Fix (high) · in progress\n- [ ] Test (high)"
        );
        let mut out = String::new();
        terminal_markdown(&mut out, "term-1", "ok", 0, Some("exit code 0"));
        assert!(out.ends_with("\n  ```\n  exit code 0 · term-1"), "{out}");
        let mut tc = crate::model::entries::ToolCall::new("x");
        tc.title = "ls".into();
        tc.kind = ToolKind::Execute;
        tc.raw_output = Some(RawOutput {
            text: String::new(),
            exit_code: Some(2),
        });
        assert_eq!(tool_call_markdown(&tc), "run · ls · pending\n  exit code 2");
        assert!(!md.contains('_') && !md.contains('*'));
    }
}
