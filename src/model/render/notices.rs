//! How the agent's notices and compactions render: markdown, and what the
//! view colours in it.

use std::borrow::Cow;

use super::{escape_turn_headings, HEADER_SEP};
use crate::model::compaction::{AgentNotice, Compaction};

/// A part of an entry's rendering the view colours, by what it means:
/// `label`, a notice's severity (`info`, `warning`, `error`), or a status
/// tone (`running`, `done`, `failed`, `cancelled`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Mark {
    /// 0-based from the entry's first line.
    pub row: usize,
    pub from: usize,
    pub to: usize,
    pub role: &'static str,
}

/// How a notice's severity reads: its icon and word, and its role.
fn severity_label(severity: &str) -> (&'static str, &'static str, &'static str) {
    match severity {
        "warning" => ("⚠", "Warning", "warning"),
        "error" => ("✖", "Error", "error"),
        _ => ("ℹ", "Notice", "info"),
    }
}

/// Agent text as body lines of an entry: indented, and never read as the
/// user's turn heading.
fn push_body(out: &mut String, text: &str) {
    for line in text.split('\n') {
        out.push_str("\n  ");
        out.push_str(line);
    }
}

fn escaped(out: String) -> String {
    match escape_turn_headings(&out) {
        Cow::Borrowed(_) => out,
        Cow::Owned(o) => o,
    }
}

/// `⚠ Warning · <title>`, its description below; the first line is
/// coloured by its severity.
pub fn notice_rendering(n: &AgentNotice) -> (String, Vec<Mark>) {
    let (icon, word, role) = severity_label(&n.severity);
    let mut out = format!("{icon} {word}{HEADER_SEP}{}", n.title.replace('\n', " "));
    let mark = Mark {
        row: 0,
        from: 0,
        to: out.len(),
        role,
    };
    if let Some(d) = &n.description {
        push_body(&mut out, d);
    }
    (escaped(out), vec![mark])
}

/// `Compaction · <status>`, then the summary and any error (the view folds
/// the body under the first line).
pub fn compaction_rendering(c: &Compaction) -> (String, Vec<Mark>) {
    const LABEL: &str = "Compaction";
    let (status, tone) = match c.status.as_str() {
        "in_progress" => ("in progress", Some("running")),
        "completed" => ("completed", Some("done")),
        "failed" => ("failed", Some("failed")),
        "cancelled" => ("cancelled", Some("cancelled")),
        other => (other, None),
    };
    let status = status.replace('\n', " ");
    let mut out = format!("{LABEL}{HEADER_SEP}{status}");
    let mut marks = vec![Mark {
        row: 0,
        from: 0,
        to: LABEL.len(),
        role: "label",
    }];
    if let Some(role) = tone {
        let from = LABEL.len() + HEADER_SEP.len();
        marks.push(Mark {
            row: 0,
            from,
            to: from + status.len(),
            role,
        });
    }
    if !c.summary.is_empty() {
        push_body(&mut out, &c.summary);
    }
    if let Some(e) = &c.error {
        let row = out.matches('\n').count() + 1;
        out.push_str("\n  error: ");
        let from = "  ".len();
        marks.push(Mark {
            row,
            from,
            to: from + "error".len(),
            role: "failed",
        });
        out.push_str(&e.replace('\n', "\n  "));
    }
    (escaped(out), marks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::compaction::{parse_compaction, parse_notice};
    use crate::model::patch::Patch;
    use serde_json::json;

    #[test]
    fn notices_read_leniently_and_render_their_severity() {
        // The schema's example shapes (Notice::new(...).description(...)).
        let n = parse_notice(&json!({"sessionUpdate": "notice", "severity": "warning",
            "title": "Rate limit approaching", "description": "80% used\n## You"}))
        .unwrap();
        let (text, marks) = notice_rendering(&n);
        assert_eq!(
            text,
            "⚠ Warning · Rate limit approaching\n  80% used\n  \\## You"
        );
        assert_eq!(marks[0].role, "warning");
        assert_eq!(
            &text[marks[0].from..marks[0].to],
            "⚠ Warning · Rate limit approaching"
        );
        assert_eq!(
            parse_notice(&json!({"severity": "info", "title": ""})),
            None
        );
        let odd = parse_notice(&json!({"severity": "_custom", "title": "x", "description": 7}));
        assert_eq!(notice_rendering(&odd.unwrap()).0, "ℹ Notice · x");
    }

    #[test]
    fn compactions_render_status_summary_and_error() {
        let mut c = Compaction::new("c1");
        assert_eq!(compaction_rendering(&c).0, "Compaction · in progress");
        c.summary = "Kept: the plan\nDropped: logs".into();
        c.status = "failed".into();
        c.error = Some("context too large".into());
        let (text, marks) = compaction_rendering(&c);
        assert_eq!(
            text,
            "Compaction · failed\n  Kept: the plan\n  Dropped: logs\n  error: context too large"
        );
        let roles: Vec<_> = marks.iter().map(|m| (m.row, m.role)).collect();
        assert_eq!(roles, [(0, "label"), (0, "failed"), (3, "failed")]);
        let p = parse_compaction(&json!({"compactionId": "c1", "status": "completed",
            "summary": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "error": null}))
        .unwrap();
        assert_eq!(p.summary, Patch::Set("ab".into()));
        assert_eq!(p.error, Patch::Cleared);
        let p = parse_compaction(&json!({"compactionId": "c1", "status": "completed"})).unwrap();
        assert!(p.summary.is_unchanged() && p.error.is_unchanged());
        assert_eq!(parse_compaction(&json!({"status": "completed"})), None);
    }
}
