//! The session's metadata (`session_info_update`), the agent's notices and
//! its context compactions: how each changes the thread.

use super::Thread;
use crate::model::compaction::{AgentNotice, Compaction, CompactionPatch};
use crate::model::entries::Entry;
use crate::model::events::{ThreadEvent, TurnState};
use crate::model::patch::Patch;

impl Thread {
    /// `session_info_update`: each field present is set or cleared, and
    /// the view told; an omitted one stays as it is.
    pub(super) fn session_info(
        &mut self,
        title: &Patch<String>,
        updated_at: &Patch<String>,
        out: &mut Vec<ThreadEvent>,
    ) {
        if title.apply_to(&mut self.title) {
            out.push(ThreadEvent::Title {
                title: self.title.clone(),
            });
        }
        if updated_at.apply_to(&mut self.updated_at) {
            out.push(ThreadEvent::UpdatedAt {
                updated_at: self.updated_at.clone(),
            });
        }
    }

    /// A `notice`: a line in the transcript; a live one (not replayed
    /// history) is also told to the view for `vim.notify`.
    pub(super) fn agent_notice(&mut self, n: &AgentNotice, out: &mut Vec<ThreadEvent>) {
        self.reply_if_turn(out);
        self.push(Entry::AgentNotice(n.clone()), out);
        if !self.replaying {
            out.push(ThreadEvent::AgentNotice {
                severity: n.severity.clone(),
                title: n.title.clone(),
                description: n.description.clone(),
            });
        }
    }

    /// In a turn (or a replayed history), what the agent sends shows under
    /// its reply heading; between turns it stands alone.
    fn reply_if_turn(&mut self, out: &mut Vec<ThreadEvent>) {
        if self.state == TurnState::Running || self.replaying {
            self.start_reply(out);
        }
    }

    /// The newest compaction `id` of the current session.
    fn find_compaction(&self, id: &str) -> Option<usize> {
        self.entries[self.session_start..]
            .iter()
            .rposition(|e| matches!(e, Entry::Compaction(c) if c.id == id))
            .map(|i| i + self.session_start)
    }

    /// Changes compaction `id` in place, or places a new one here.
    fn with_compaction(
        &mut self,
        id: &str,
        out: &mut Vec<ThreadEvent>,
        change: impl FnOnce(&mut Compaction),
    ) {
        match self.find_compaction(id) {
            Some(index) => {
                if let Entry::Compaction(c) = &mut self.entries[index] {
                    change(c);
                }
                self.replace(index, out);
            }
            None => {
                self.reply_if_turn(out);
                let mut c = Compaction::new(id);
                change(&mut c);
                self.push(Entry::Compaction(c), out);
            }
        }
    }

    /// `compaction_update`: status replaced; `summary` and `error` with
    /// patch semantics (`summary: []` clears it too).
    pub(super) fn compaction(&mut self, p: &CompactionPatch, out: &mut Vec<ThreadEvent>) {
        self.with_compaction(&p.id, out, |c| {
            if let Some(status) = &p.status {
                c.status = status.clone();
            }
            let mut summary = Some(std::mem::take(&mut c.summary));
            p.summary.apply_to(&mut summary);
            c.summary = summary.unwrap_or_default();
            p.error.apply_to(&mut c.error);
        });
    }

    /// `compaction_summary_chunk`: text appended to the summary (a first
    /// seen id starts a compaction in progress). A streamed summary at the
    /// end of the transcript grows by `Appended` (as agent text does), not
    /// by a rendering of the whole block per chunk.
    pub(super) fn compaction_chunk(&mut self, id: &str, text: &str, out: &mut Vec<ThreadEvent>) {
        let found = self.find_compaction(id);
        if text.is_empty() && found.is_some() {
            return;
        }
        let last = self.entries.len().checked_sub(1);
        if let Some(index) = found.filter(|&i| Some(i) == last) {
            if let Entry::Compaction(c) = &mut self.entries[index] {
                if let Some(fragment) = summary_fragment(c, text) {
                    c.summary.push_str(text);
                    out.push(ThreadEvent::Appended {
                        index,
                        text: fragment,
                    });
                    return;
                }
            }
        }
        self.with_compaction(id, out, |c| c.summary.push_str(text));
    }
}

/// What appending `text` to `c`'s summary adds at the end of its rendering
/// (`render::compaction_rendering`: body lines indented by two spaces);
/// None when the summary is not the rendering's end (an error follows it)
/// or a `#` could change how a line reads (the turn-heading escape): then
/// the block is rendered again.
fn summary_fragment(c: &Compaction, text: &str) -> Option<String> {
    let tail = c.summary.rsplit('\n').next().unwrap_or("");
    if c.error.is_some() || text.contains('#') || tail.contains('#') {
        return None;
    }
    let body = text.replace('\n', "\n  ");
    Some(if c.summary.is_empty() {
        format!("\n  {body}")
    } else {
        body
    })
}
