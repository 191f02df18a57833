//! Markdown rendering of thread entries. The view shows exactly these lines,
//! so an incremental append must produce the same text as a full re-render
//! (`append_fragment` is the incremental half of `entry_markdown`).

use std::borrow::Cow;

use super::entries::{
    ClientState, Entry, EntryKind, NoticeLevel, PlanItem, RawOutput, TermExit, ToolCall,
    ToolContent, TERMINAL_TAIL_LINES,
};
pub use super::paths::PathDisplay;
use super::schema::{PlanStatus, ToolKind, ToolStatus};
use super::textdiff::DiffBody;

mod notices;
pub use notices::{compaction_rendering, notice_rendering, Mark};

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

/// Separates a card header's label, title and status word.
pub const HEADER_SEP: &str = " · ";

/// How a status reads to the user: the colour the view gives its word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    Done,
    Running,
    Failed,
    Waiting,
    Cancelled,
}

impl Tone {
    /// The tone of a card's shown status (a client-side state wins, as in
    /// [`ToolCall::shown_status`]); none for a status the protocol does not
    /// define.
    pub fn of_card(tc: &ToolCall) -> Option<Tone> {
        match (tc.client_state, &tc.status) {
            (Some(ClientState::WaitingForYou), _) => Some(Tone::Waiting),
            (Some(ClientState::Rejected), _) => Some(Tone::Failed),
            (Some(ClientState::Cancelled), _) => Some(Tone::Cancelled),
            (None, ToolStatus::Pending | ToolStatus::InProgress) => Some(Tone::Running),
            (None, ToolStatus::Completed) => Some(Tone::Done),
            (None, ToolStatus::Failed) => Some(Tone::Failed),
            (None, ToolStatus::Unknown(_)) => None,
        }
    }

    /// The tone of how a terminal's command ended: done only for exit code 0.
    pub fn of_exit(exit: &TermExit) -> Tone {
        match (exit.code, &exit.signal) {
            (Some(code), None) => Tone::of_exit_code(code),
            _ => Tone::Failed,
        }
    }

    /// The tone of a command's exit code.
    pub fn of_exit_code(code: i64) -> Tone {
        if code == 0 {
            Tone::Done
        } else {
            Tone::Failed
        }
    }
}

/// Bytes `from..to` (0-based, end excluded) of one line of a rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Span {
    pub from: usize,
    pub to: usize,
}

impl Span {
    /// The span of `word` pushed at byte `at`.
    fn at(at: usize, word: &str) -> Self {
        Span {
            from: at,
            to: at + word.len(),
        }
    }
}

/// The parts of a card's first line (`label · title · status`), and the
/// tone of its status.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct CardHeader {
    pub label: Span,
    pub title: Span,
    pub status: Span,
    pub tone: Option<Tone>,
}

/// A status word in an entry's body: a terminal's or a command's exit (or
/// that it still runs), a plan's running step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct StatusMark {
    /// 0-based from the entry's first line.
    pub row: usize,
    pub from: usize,
    pub to: usize,
    pub tone: Tone,
}

/// What the view colours in a card, from the rendering itself: the header
/// parts, the rows of diff bodies and the body's status words.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CardLayout {
    pub header: CardHeader,
    /// Rows (first, last) of diff bodies, 0-based from the card's first line.
    pub diff_rows: Vec<(usize, usize)>,
    pub status_lines: Vec<StatusMark>,
}

/// What the view colours in a plan: its label (`Plan`) on the first line
/// and the status word of each running step.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct PlanLayout {
    pub label: Span,
    pub steps: Vec<StatusMark>,
}

/// `out`'s last line so far: its row and the byte it starts at.
fn last_line(out: &str) -> (usize, usize) {
    let row = out.matches('\n').count();
    let start = out.rfind('\n').map_or(0, |i| i + 1);
    (row, start)
}

/// Pushes `word` onto `out`'s last line and notes it as a status mark.
fn push_status(out: &mut String, marks: &mut Vec<StatusMark>, word: &str, tone: Tone) {
    let (row, start) = last_line(out);
    let span = Span::at(out.len() - start, word);
    out.push_str(word);
    marks.push(StatusMark {
        row,
        from: span.from,
        to: span.to,
        tone,
    });
}

pub fn entry_markdown(entry: &Entry) -> String {
    match entry {
        Entry::User { text } => format!("{USER_HEADING}\n\n{text}"),
        Entry::Heading { text } => format!("## {text}"),
        Entry::Agent { text } => escape_turn_headings(text).into_owned(),
        Entry::Thought { text } => format!("{THOUGHT_HEADER}\n> {}", text.replace('\n', "\n> ")),
        Entry::ToolCall(tc) => tool_call_markdown(tc),
        Entry::Plan { items } => plan_markdown(items),
        Entry::AgentNotice(n) => notice_rendering(n).0,
        Entry::Compaction(c) => compaction_rendering(c).0,
        Entry::IdPlan(p) => p.shown.clone(),
        Entry::Subagent(s) => s.shown.clone(),
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
    tool_call_rendering(tc, &PathDisplay::default()).0
}

/// A card's markdown and where its parts are (header, diff bodies, status
/// words), so the view colours them without reading the text back. Paths
/// show as `paths` says (relative to the session's root, `~` for home): in
/// the locations, the diff headers, and a title that ends with one (not a
/// command's: what it runs is shown as the agent sent it).
pub fn tool_call_rendering(tc: &ToolCall, paths: &PathDisplay) -> (String, CardLayout) {
    let mut diff_rows = Vec::new();
    let mut status_lines = Vec::new();
    let title = if tc.title.is_empty() {
        tc.id.clone()
    } else if tc.kind == ToolKind::Execute {
        tc.title.clone()
    } else {
        paths.title(&tc.title)
    };
    // Plain text: the buffer holds what the user sees and searches; the
    // view colours the label and the status word with extmarks.
    let label = kind_label(&tc.kind);
    let title = title.replace('\n', " ");
    let status = tc.shown_status();
    let title_at = label.len() + HEADER_SEP.len();
    let status_at = title_at + title.len() + HEADER_SEP.len();
    let header = CardHeader {
        label: Span::at(0, label),
        title: Span::at(title_at, &title),
        status: Span::at(status_at, &status),
        tone: Tone::of_card(tc),
    };
    let mut out = format!("{label}{HEADER_SEP}{title}{HEADER_SEP}{status}");
    for (path, line) in &tc.locations {
        // 1-based, as the agent sent it (the model maps a legacy 0 to 1).
        let path = paths.show(path);
        match line {
            Some(l) => out.push_str(&format!("\n  `{path}:{l}`")),
            None => out.push_str(&format!("\n  `{path}`")),
        }
    }
    if let Some(input) = tc.raw_input.as_ref().filter(|i| !repeats_the_card(tc, i)) {
        // A path alone (no command) shows like the card's other paths.
        let input = if input.contains(char::is_whitespace) {
            input.clone()
        } else {
            paths.show(input)
        };
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
                diff_markdown(&mut out, &paths.show(path), old_text.is_none(), body);
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
            } => terminal_markdown(
                &mut out,
                &mut status_lines,
                id,
                tail,
                *more_lines,
                exit.as_ref().map_or_else(|| unended(tc), Ended::Exit),
            ),
        }
    }
    // Output the agent reported only in `rawOutput` (codex-acp): shown when
    // no content item already shows the output.
    let shows_output = tc
        .content
        .iter()
        .any(|c| matches!(c, ToolContent::Text { .. } | ToolContent::Terminal { .. }));
    if let (Some(raw), false) = (&tc.raw_output, shows_output) {
        raw_output_markdown(&mut out, &mut status_lines, raw);
    }
    for note in &tc.notes {
        out.push_str(&format!("\n  ✎ {note}"));
    }
    // The agent's text in the card (output, diff lines) cannot show as the
    // user's turn heading either (a fence it closes would let it). The
    // header and the status lines start with a word, never with `#`: the
    // escape leaves them, and every row, where they are.
    let out = match escape_turn_headings(&out) {
        Cow::Borrowed(_) => out,
        Cow::Owned(o) => o,
    };
    let layout = CardLayout {
        header,
        diff_rows,
        status_lines,
    };
    (out, layout)
}

/// Whether a raw input's one-line summary only repeats what the card
/// shows: a path of its locations or diffs, or a command (or path) its
/// title already holds as a whole word (claude-agent-acp's `file_path`
/// beside its locations, codex-acp's "Run make" for `make`).
fn repeats_the_card(tc: &ToolCall, input: &str) -> bool {
    let shown_path = tc.locations.iter().any(|(p, _)| p == input)
        || tc
            .content
            .iter()
            .any(|c| matches!(c, ToolContent::Diff { path, .. } if path == input));
    let word = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'));
    let in_title = !input.is_empty()
        && tc.title.match_indices(input).any(|(at, _)| {
            word(tc.title[..at].chars().next_back())
                && word(tc.title[at + input.len()..].chars().next())
        });
    shown_path || in_title
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

/// Where a card's terminal is: exited, or not (yet) with the words and
/// tone that say so.
enum Ended<'a> {
    Exit(&'a TermExit),
    Not(&'static str, Tone),
}

/// A terminal with no exit: it runs, unless its call waits for the user
/// (agents show their display terminal before they ask to run it) or was
/// turned down or cancelled, then the card's state says why.
fn unended(tc: &ToolCall) -> Ended<'static> {
    match tc.client_state {
        Some(state) => Ended::Not(state.label(), Tone::of_card(tc).unwrap_or(Tone::Waiting)),
        None => Ended::Not("running…", Tone::Running),
    }
}

/// A card's terminal: its last lines (`:AcpTerminal` opens the rest), then
/// whether it runs or how it exited.
fn terminal_markdown(
    out: &mut String,
    marks: &mut Vec<StatusMark>,
    id: &str,
    tail: &str,
    more_lines: usize,
    ended: Ended<'_>,
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
    out.push_str("\n  ```\n  ");
    match ended {
        Ended::Exit(x) => push_status(out, marks, &x.describe(), Tone::of_exit(x)),
        Ended::Not(words, tone) => push_status(out, marks, words, tone),
    }
    out.push_str(HEADER_SEP);
    out.push_str(id);
}

/// `rawOutput` text: its last lines in a console block (a shape not read:
/// the first lines of its JSON), then the exit code or the failure.
fn raw_output_markdown(out: &mut String, marks: &mut Vec<StatusMark>, raw: &RawOutput) {
    let text = raw.text.trim_end_matches('\n');
    if !text.is_empty() {
        let lines: Vec<&str> = text.split('\n').collect();
        let more = lines.len().saturating_sub(TERMINAL_TAIL_LINES);
        let (shown, lang) = match raw.json {
            true => (&lines[..lines.len() - more], "json"),
            false => (&lines[more..], "console"),
        };
        out.push_str(&format!("\n  ```{lang}"));
        if more > 0 && !raw.json {
            out.push_str(&format!("\n  … {more} more lines"));
        }
        for line in shown {
            out.push_str("\n  ");
            out.push_str(&line.replace('\r', ""));
        }
        if more > 0 && raw.json {
            out.push_str(&format!("\n  … {more} more lines"));
        }
        out.push_str("\n  ```");
    }
    if raw.failed {
        out.push_str("\n  ");
        push_status(out, marks, "failed", Tone::Failed);
    }
    if let Some(code) = raw.exit_code {
        out.push_str("\n  ");
        push_status(
            out,
            marks,
            &format!("exit code {code}"),
            Tone::of_exit_code(code),
        );
    }
}

/// A plan as a Markdown task list: `[x]` done, `[ ]` otherwise, and the
/// running step says so in words (`[~]` is no task marker: Markdown would
/// read it as a link).
pub fn plan_markdown(items: &[PlanItem]) -> String {
    plan_rendering(items).0
}

/// A plan's markdown and where its label and its running steps' status
/// words are.
pub fn plan_rendering(items: &[PlanItem]) -> (String, PlanLayout) {
    const LABEL: &str = "Plan";
    let done = items
        .iter()
        .filter(|i| i.status == PlanStatus::Completed)
        .count();
    let mut out = format!("{LABEL}{HEADER_SEP}{done}/{} done", items.len());
    let mut layout = PlanLayout {
        label: Span::at(0, LABEL),
        steps: Vec::new(),
    };
    for item in items {
        let mark = match item.status {
            PlanStatus::Completed => "[x]",
            _ => "[ ]",
        };
        let content = item.content.replace('\n', " ");
        out.push_str(&format!("\n- {mark} {content} ({})", item.priority));
        if item.status == PlanStatus::InProgress {
            out.push_str(HEADER_SEP);
            push_status(&mut out, &mut layout.steps, "in progress", Tone::Running);
        }
    }
    (out, layout)
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
        let exit = TermExit {
            code: Some(0),
            signal: None,
        };
        terminal_markdown(&mut out, &mut vec![], "term-1", "ok", 0, Ended::Exit(&exit));
        assert!(out.ends_with("\n  ```\n  exit code 0 · term-1"), "{out}");
        let mut tc = crate::model::entries::ToolCall::new("x");
        tc.title = "ls".into();
        tc.kind = ToolKind::Execute;
        tc.raw_output = Some(RawOutput {
            text: String::new(),
            exit_code: Some(2),
            ..RawOutput::default()
        });
        assert_eq!(tool_call_markdown(&tc), "run · ls · pending\n  exit code 2");
        // A shape not read: the start of its JSON; a failure without a code.
        let json = (0..20)
            .map(|i| format!("{i}"))
            .collect::<Vec<_>>()
            .join("\n");
        tc.raw_output = Some(RawOutput {
            text: json,
            json: true,
            failed: true,
            ..RawOutput::default()
        });
        let md = tool_call_markdown(&tc);
        assert!(md.contains("```json\n  0\n  1\n"), "{md}");
        assert!(
            md.ends_with("\n  11\n  … 8 more lines\n  ```\n  failed"),
            "{md}"
        );
        tc.raw_output = Some(RawOutput {
            text: String::new(),
            exit_code: Some(2),
            ..RawOutput::default()
        });
        assert_eq!(tool_call_markdown(&tc), "run · ls · pending\n  exit code 2");
        assert!(!md.contains('_') && !md.contains('*'));
    }

    /// The words a span covers on the rendered lines.
    fn words<'a>(lines: &[&'a str], row: usize, span: (usize, usize)) -> &'a str {
        &lines[row][span.0..span.1]
    }

    #[test]
    fn layout_spans_cover_exactly_the_rendered_words() {
        use crate::model::schema::PlanPriority;
        // A multibyte title that itself reads like a header and a status.
        let mut tc = ToolCall::new("x");
        tc.kind = ToolKind::Execute;
        tc.title = "Ünïcode · completed · 漢字\nnext".into();
        tc.status = crate::model::schema::ToolStatus::InProgress;
        tc.content = vec![
            // Agent text that looks like status lines is no status line.
            ToolContent::Text {
                text: "  exit code 0\n## You".into(),
            },
            ToolContent::Terminal {
                id: "t-1".into(),
                tail: "building\nrunning…".into(),
                more_lines: 0,
                exit: None,
                known: true,
            },
            ToolContent::Terminal {
                id: "t-2".into(),
                tail: "x".into(),
                more_lines: 3,
                exit: Some(TermExit {
                    code: Some(0),
                    signal: None,
                }),
                known: true,
            },
            ToolContent::Terminal {
                id: "t-3".into(),
                tail: String::new(),
                more_lines: 0,
                exit: Some(TermExit {
                    code: None,
                    signal: Some("SIGKILL".into()),
                }),
                known: true,
            },
        ];
        let (md, layout) = tool_call_rendering(&tc, &PathDisplay::default());
        let lines: Vec<&str> = md.split('\n').collect();
        let h = &layout.header;
        assert_eq!(words(&lines, 0, (h.label.from, h.label.to)), "run");
        assert_eq!(
            words(&lines, 0, (h.title.from, h.title.to)),
            "Ünïcode · completed · 漢字 next"
        );
        assert_eq!(
            words(&lines, 0, (h.status.from, h.status.to)),
            "in progress"
        );
        assert_eq!(h.status.to, lines[0].len());
        assert_eq!(h.tone, Some(Tone::Running));
        let marks: Vec<(&str, Tone)> = layout
            .status_lines
            .iter()
            .map(|m| (words(&lines, m.row, (m.from, m.to)), m.tone))
            .collect();
        assert_eq!(
            marks,
            [
                ("running…", Tone::Running),
                ("exit code 0", Tone::Done),
                ("killed by SIGKILL", Tone::Failed),
            ]
        );
        // The escaped heading (a backslash more) moved no mark.
        assert!(md.contains("\n  \\## You"), "{md}");
        assert!(lines[layout.status_lines[0].row].ends_with("running… · t-1"));

        // Output only in rawOutput, and a client state over the status.
        let mut raw = ToolCall::new("y");
        raw.title = "ls".into();
        raw.client_state = Some(ClientState::Rejected);
        raw.raw_output = Some(RawOutput {
            text: "exit code 0\n".into(),
            exit_code: Some(2),
            ..RawOutput::default()
        });
        let (md, layout) = tool_call_rendering(&raw, &PathDisplay::default());
        let lines: Vec<&str> = md.split('\n').collect();
        let h = &layout.header;
        assert_eq!(words(&lines, 0, (h.status.from, h.status.to)), "rejected");
        assert_eq!(h.tone, Some(Tone::Failed));
        let m = layout.status_lines.as_slice();
        assert_eq!(m.len(), 1, "{md}");
        assert_eq!(words(&lines, m[0].row, (m[0].from, m[0].to)), "exit code 2");
        assert_eq!((m[0].row, m[0].tone), (lines.len() - 1, Tone::Failed));

        // A status the protocol does not define has no tone.
        raw.client_state = None;
        raw.status = crate::model::schema::ToolStatus::parse("paused");
        assert_eq!(
            tool_call_rendering(&raw, &PathDisplay::default())
                .1
                .header
                .tone,
            None
        );

        // A plan: its label, and the status word of its running steps only.
        let item = |content: &str, status: PlanStatus| PlanItem {
            content: content.into(),
            status,
            priority: PlanPriority::Low,
        };
        let (md, plan) = plan_rendering(&[
            item("Läs · in progress", PlanStatus::Completed),
            item("Fix 漢字", PlanStatus::InProgress),
            item("Test", PlanStatus::Pending),
        ]);
        let lines: Vec<&str> = md.split('\n').collect();
        assert_eq!(words(&lines, 0, (plan.label.from, plan.label.to)), "Plan");
        let steps: Vec<(usize, &str, Tone)> = plan
            .steps
            .iter()
            .map(|m| (m.row, words(&lines, m.row, (m.from, m.to)), m.tone))
            .collect();
        assert_eq!(steps, [(2, "in progress", Tone::Running)]);
        assert_eq!(plan.steps[0].to, lines[2].len());
    }
}
