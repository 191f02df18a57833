//! How plans by id and subagents read (`entries::IdPlan`, `entries::Subagent`):
//! their markdown and what the view colours in it. The thread keeps each
//! rendering in its entry (`shown`), which `render::entry_markdown` returns.

use super::entries::{EntryKind, IdPlan, PlanBody, Subagent};
use super::render::{
    escape_turn_headings, plan_rendering, PlanLayout, Span, StatusMark, Tone, HEADER_SEP,
};
use super::schema::ToolStatus;

/// How a subagent's state reads, and its colour.
pub fn state_word(s: &Subagent) -> (&'static str, Tone) {
    match s.state.as_ref().map(|st| st.state.as_str()) {
        Some("idle") => match s.state.as_ref().and_then(|st| st.stop_reason.as_deref()) {
            Some("cancelled") => ("cancelled", Tone::Cancelled),
            Some("refusal") => ("refused", Tone::Failed),
            Some("error") => ("failed", Tone::Failed),
            _ => ("idle", Tone::Done),
        },
        Some("requires_action") => ("needs you", Tone::Waiting),
        Some("running") => ("running", Tone::Running),
        // Never reported, or cleared: the schema asserts no activity then.
        None => ("not reported", Tone::Waiting),
        Some(_) => ("unknown", Tone::Waiting),
    }
}

/// A tool call of the child as one line of its transcript.
pub fn child_tool_line(title: &str, status: Option<&ToolStatus>) -> String {
    let status = status.map_or("pending", ToolStatus::as_str);
    format!(
        "{}{HEADER_SEP}{}",
        title.replace('\n', " "),
        status.replace('_', " ")
    )
}

/// Lines of a subagent block kept visible above its folded transcript.
pub const SUBAGENT_HEADER_LINES: usize = 1;

/// A subagent block: `Subagent · <name> · <state>`, then its transcript
/// as a quote (`>`), each line of it one paragraph. Its layout colours the
/// label and the state word.
pub fn subagent_rendering(s: &Subagent) -> (String, PlanLayout) {
    const LABEL: &str = "Subagent";
    let name = s.name().replace('\n', " ");
    let (word, tone) = state_word(s);
    let mut out = format!("{LABEL}{HEADER_SEP}{name}{HEADER_SEP}");
    let at = out.len();
    out.push_str(word);
    if s.can_cancel && tone == Tone::Running {
        out.push_str(" (cancel with the card key)");
    }
    let layout = PlanLayout {
        label: Span {
            from: 0,
            to: LABEL.len(),
        },
        steps: vec![StatusMark {
            row: 0,
            from: at,
            to: at + word.len(),
            tone,
        }],
    };
    let mut body: Vec<String> = Vec::new();
    if let Some(tool) = &s.tool_title {
        body.push(format!(
            "under `{}`",
            tool.replace('`', "'").replace('\n', " ")
        ));
    }
    if let Some(d) = &s.description {
        body.push(d.clone());
    }
    if let Some(e) = s.state.as_ref().and_then(|st| st.error.as_deref()) {
        let e = if e.is_empty() { "no details" } else { e };
        body.push(format!("**failed:** {e}"));
    }
    // Each rendering is bounded: the block is rendered again on every
    // update of the subagent.
    let from = s.lines.len().saturating_sub(SUBAGENT_LINES_SHOWN);
    let earlier = s.lines_dropped + from;
    if earlier > 0 {
        body.push(format!(
            "… {earlier} earlier line{} (:AcpTrace has them)",
            if earlier == 1 { "" } else { "s" }
        ));
    }
    for line in &s.lines[from..] {
        let text = escape_turn_headings(&tail(&line.text, SUBAGENT_LINE_MAX_BYTES)).into_owned();
        body.push(match line.kind {
            EntryKind::Thought => format!("_thinking:_ {text}"),
            EntryKind::ToolCall => format!("• {text}"),
            EntryKind::Plan => format!("Plan{HEADER_SEP}{text}"),
            EntryKind::User => format!("**task:** {text}"),
            _ => text,
        });
    }
    if body.is_empty() {
        body.push("(nothing yet)".into());
    }
    for paragraph in body {
        out.push_str("\n> ");
        out.push_str(&paragraph.trim_end().replace('\n', "\n> "));
    }
    (out, layout)
}

/// Lines of a subagent's transcript its block shows (the newest).
pub const SUBAGENT_LINES_SHOWN: usize = 40;

/// The most of one line of a subagent's transcript its block shows (its
/// end: a streamed message shows what it says now).
pub const SUBAGENT_LINE_MAX_BYTES: usize = 2000;

/// The last `max` bytes of `text` (at a character boundary), after `…`.
fn tail(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut at = text.len() - max;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    std::borrow::Cow::Owned(format!("…{}", &text[at..]))
}

/// A plan by id: items as the legacy plan reads, markdown under a
/// `Plan · <file>` line, a removed plan as one line.
pub fn id_plan_rendering(p: &IdPlan) -> (String, PlanLayout) {
    const LABEL: &str = "Plan";
    let label = PlanLayout {
        label: Span {
            from: 0,
            to: LABEL.len(),
        },
        steps: Vec::new(),
    };
    if p.removed {
        return (format!("{LABEL}{HEADER_SEP}removed by the agent"), label);
    }
    match &p.body {
        PlanBody::Items { items } => plan_rendering(items),
        PlanBody::Markdown { content, path } => {
            let name = path
                .as_deref()
                .map(|p| p.rsplit('/').next().unwrap_or(p).to_owned())
                .unwrap_or_else(|| "markdown".into());
            let body = escape_turn_headings(content.trim_end()).into_owned();
            (format!("{LABEL}{HEADER_SEP}{name}\n\n{body}"), label)
        }
    }
}
