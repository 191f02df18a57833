//! The output of the terminals a chat shows: client terminals
//! (`terminal/create`) and the display terminals agents stream in `_meta`.
//! Kept per terminal id, bounded, with the tail a card shows and which
//! terminals a view buffer follows.

use std::collections::{HashMap, HashSet};

use super::entries::{TermExit, ToolCall, ToolContent, TERMINAL_TAIL_LINES};

/// Output of a terminal shown in the chat (capped at `TERM_VIEW_BYTES`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TermView {
    pub output: String,
    pub exit: Option<TermExit>,
    /// Line breaks ever received, so the card can say how many lines its
    /// tail leaves out without counting the whole output again.
    newlines: usize,
}

impl TermView {
    /// The last `n` lines (without the final line break) and how many lines
    /// came before them. Only the end of the output is scanned.
    pub fn tail(&self, n: usize) -> (&str, usize) {
        let text = self.output.strip_suffix('\n').unwrap_or(&self.output);
        if text.is_empty() {
            return ("", 0);
        }
        let total = self.newlines + usize::from(!self.output.ends_with('\n'));
        let mut start = text.len();
        let mut shown = 0;
        while shown < n {
            shown += 1;
            match text[..start].rfind('\n') {
                Some(i) => start = i,
                None => {
                    start = 0;
                    break;
                }
            }
        }
        let tail = if start == 0 && !text.starts_with('\n') {
            text
        } else {
            &text[start + 1..]
        };
        (tail, total.saturating_sub(shown))
    }
}

/// Display output kept per terminal (the agent's own limit applies to
/// `terminal/output`; this only bounds memory for the chat).
const TERM_VIEW_BYTES: usize = 256 * 1024;

/// Every terminal output of one chat, and the terminals a view follows.
#[derive(Debug, Default)]
pub struct TerminalViews {
    views: HashMap<String, TermView>,
    /// Terminals open in a view buffer: only their output is sent as
    /// `TerminalOutput` (a flood nobody watches costs the view nothing).
    watched: HashSet<String>,
}

impl TerminalViews {
    /// Makes sure terminal `id` has a view (empty until output arrives).
    pub fn ensure(&mut self, id: &str) {
        self.views.entry(id.to_owned()).or_default();
    }

    /// Output of terminal `id`, kept within `TERM_VIEW_BYTES`.
    pub fn push(&mut self, id: &str, data: &str) {
        let view = self.views.entry(id.to_owned()).or_default();
        view.output.push_str(data);
        view.newlines += data.bytes().filter(|&b| b == b'\n').count();
        if view.output.len() > TERM_VIEW_BYTES {
            let mut cut = view.output.len() - TERM_VIEW_BYTES;
            while !view.output.is_char_boundary(cut) {
                cut += 1;
            }
            view.output.drain(..cut);
        }
    }

    /// Terminal `id` exited.
    pub fn set_exit(&mut self, id: &str, exit: TermExit) {
        self.views.entry(id.to_owned()).or_default().exit = Some(exit);
    }

    pub fn get(&self, id: &str) -> Option<&TermView> {
        self.views.get(id)
    }

    /// A view opened (or closed) a buffer that follows terminal `id`.
    pub fn watch(&mut self, id: &str, on: bool) {
        if on {
            self.watched.insert(id.to_owned());
        } else {
            self.watched.remove(id);
        }
    }

    pub fn is_watched(&self, id: &str) -> bool {
        self.watched.contains(id)
    }

    /// Copies terminal output into the terminal items of card `tc`; true
    /// when something changed.
    pub fn fill_card(&self, tc: &mut ToolCall) -> bool {
        let mut changed = false;
        for c in &mut tc.content {
            if let ToolContent::Terminal {
                id,
                tail,
                more_lines,
                exit,
                known,
            } = c
            {
                if let Some(view) = self.views.get(id.as_str()) {
                    let (new_tail, more) = view.tail(TERMINAL_TAIL_LINES);
                    if *tail != new_tail || *more_lines != more || *exit != view.exit || !*known {
                        *tail = new_tail.to_owned();
                        *more_lines = more;
                        exit.clone_from(&view.exit);
                        *known = true;
                        changed = true;
                    }
                }
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_tail_counts_the_lines_it_leaves_out() {
        let mut v = TermView::default();
        for data in ["a\nb\nc\n", "d"] {
            v.output.push_str(data);
            v.newlines += data.matches('\n').count();
        }
        assert_eq!(v.tail(2), ("c\nd", 2));
        assert_eq!(v.tail(10), ("a\nb\nc\nd", 0));
        v.output.push('\n');
        v.newlines += 1;
        assert_eq!(v.tail(1), ("d", 3));
        assert_eq!(TermView::default().tail(3), ("", 0));
    }
}
