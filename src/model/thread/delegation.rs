//! Plans by id and subagents: how `plan_update` / `plan_removed`,
//! `subagent_update`, `session_message(_chunk)` and a child session's own
//! updates change the transcript. A plan by id shows in the turn that sent
//! it and is updated there in place; a subagent is one block, created the
//! first time anything names its session (its tool call, its announce, a
//! message or an update of its own: nothing for it is dropped).

use super::Thread;
use crate::model::delegation::{apply_patch, SubagentPatch};
use crate::model::entries::{Entry, EntryKind, IdPlan, PlanBody, PlanItem, Subagent};
use crate::model::events::ThreadEvent;
use crate::model::render::HEADER_SEP;
use crate::model::render_delegation::{
    child_tool_line, id_plan_rendering, state_word, subagent_rendering,
};
use crate::model::schema::ToolStatus;
use crate::model::update::{SessionUpdate, ToolCallPatch};

/// Keeps the entry's markdown (`shown`) up to date with its fields.
fn show(entry: &mut Entry) {
    match entry {
        Entry::IdPlan(p) => p.shown = id_plan_rendering(p).0,
        Entry::Subagent(s) => s.shown = subagent_rendering(s).0,
        _ => {}
    }
}

fn items_of(body: &PlanBody) -> Vec<PlanItem> {
    match body {
        PlanBody::Items { items } => items.clone(),
        _ => Vec::new(),
    }
}

impl Thread {
    /// `plan_update`: the plan with this id in the running turn is
    /// replaced whole; else it opens in this turn (an earlier turn keeps
    /// the plan as it was then).
    pub(super) fn plan_by_id(&mut self, id: &str, body: &PlanBody, out: &mut Vec<ThreadEvent>) {
        let mut plan = Entry::IdPlan(IdPlan {
            shown: String::new(),
            id: id.to_owned(),
            body: body.clone(),
            removed: false,
            items: items_of(body),
        });
        show(&mut plan);
        let from = self.turn_start.max(self.session_start);
        let found = (from..self.entries.len())
            .rev()
            .find(|&i| matches!(&self.entries[i], Entry::IdPlan(p) if p.id == id));
        match found {
            Some(index) => {
                self.entries[index] = plan;
                self.replace(index, out);
            }
            None => {
                self.start_reply(out);
                self.push(plan, out);
            }
        }
    }

    /// `plan_removed`: the newest block of that plan (in this session)
    /// reads as removed.
    pub(super) fn plan_removed(&mut self, id: &str, out: &mut Vec<ThreadEvent>) {
        let found = (self.session_start..self.entries.len())
            .rev()
            .find(|&i| matches!(&self.entries[i], Entry::IdPlan(p) if p.id == id && !p.removed));
        if let Some(index) = found {
            if let Entry::IdPlan(p) = &mut self.entries[index] {
                p.removed = true;
                p.items.clear();
            }
            show(&mut self.entries[index]);
            self.replace(index, out);
        }
    }

    /// The block of child session `sid`, created when first named.
    fn subagent_entry(&mut self, sid: &str, out: &mut Vec<ThreadEvent>) -> usize {
        if let Some(&index) = self.subagents.get(sid) {
            if matches!(&self.entries.get(index), Some(Entry::Subagent(s)) if s.session_id == sid) {
                return index;
            }
        }
        self.start_reply(out);
        let mut entry = Entry::Subagent(Subagent::new(sid));
        show(&mut entry);
        let index = self.push(entry, out);
        self.subagents.insert(sid.to_owned(), index);
        index
    }

    pub(super) fn with_subagent(
        &mut self,
        sid: &str,
        out: &mut Vec<ThreadEvent>,
        change: impl FnOnce(&mut Subagent),
    ) {
        let index = self.subagent_entry(sid, out);
        if let Entry::Subagent(s) = &mut self.entries[index] {
            change(s);
        }
        show(&mut self.entries[index]);
        self.replace(index, out);
    }

    /// Whether `sid` is a subagent of this chat.
    pub fn has_subagent(&self, sid: &str) -> bool {
        self.subagents.contains_key(sid)
    }

    /// A subagent's name, state word and whether it may be cancelled
    /// (for the permission float and the cancel key).
    pub fn subagent_info(&self, sid: &str) -> Option<(String, &'static str, bool)> {
        let index = *self.subagents.get(sid)?;
        match self.entries.get(index) {
            Some(Entry::Subagent(s)) => Some((s.name().to_owned(), state_word(s).0, s.can_cancel)),
            _ => None,
        }
    }

    /// Subagent `sid` asks permission for its tool call `tool_id`: the
    /// call's card says which subagent asks and follows the subagent's
    /// updates of that call from now on.
    pub fn child_asked(&mut self, sid: &str, tool_id: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        let Some(&index) = self.subagents.get(sid) else {
            return out;
        };
        let Some(Entry::Subagent(s)) = self.entries.get_mut(index) else {
            return out;
        };
        if !s.asked.iter().any(|t| t == tool_id) {
            s.asked.push(tool_id.to_owned());
        }
        let name = s.name().replace(['`', '\n'], " ");
        let note = format!("asked by subagent `{name}`");
        let patch = ToolCallPatch {
            id: tool_id.to_owned(),
            ..Default::default()
        };
        self.tool_call_with(&patch, false, &mut out, |tc| {
            if !tc.notes.contains(&note) {
                tc.notes.push(note);
            }
        });
        out
    }

    pub(super) fn subagent(&mut self, patch: &SubagentPatch, out: &mut Vec<ThreadEvent>) {
        self.with_subagent(&patch.session_id, out, |s| apply_patch(s, patch));
    }

    /// A tool call whose content links to child sessions: their blocks
    /// name it (and open under it when this is their first sight).
    pub(super) fn link_subagents(&mut self, patch: &ToolCallPatch, out: &mut Vec<ThreadEvent>) {
        if patch.sessions.is_empty() {
            return;
        }
        let title = self.tool_call(&patch.id).map(|tc| tc.title.clone());
        for sid in &patch.sessions {
            let (id, title) = (patch.id.clone(), title.clone());
            self.with_subagent(sid, out, |s| {
                s.tool_call_id = Some(id);
                if title.is_some() {
                    s.tool_title = title;
                }
            });
        }
    }

    /// An update of child session `sid`, into its block's transcript.
    pub(super) fn child_update(
        &mut self,
        sid: &str,
        update: &SessionUpdate,
        out: &mut Vec<ThreadEvent>,
    ) {
        match update {
            SessionUpdate::Chunk { kind, text, .. } => {
                if text.is_empty() {
                    return;
                }
                let kind = match kind {
                    EntryKind::Thought => EntryKind::Thought,
                    EntryKind::User => EntryKind::User,
                    _ => EntryKind::Agent,
                };
                self.with_subagent(sid, out, |s| s.push(kind, None, text, true));
            }
            SessionUpdate::ToolCall { patch, .. } => {
                let asked = matches!(
                    self.subagents.get(sid).and_then(|&i| self.entries.get(i)),
                    Some(Entry::Subagent(s)) if s.asked.contains(&patch.id)
                );
                // A call the subagent asked about has a card: its title
                // names the call when the subagent's updates do not.
                let known_title = match asked {
                    true => self.tool_call(&patch.id).map(|tc| tc.title.clone()),
                    false => None,
                };
                if asked {
                    self.tool_call_with(patch, false, out, |_| {});
                }
                let id = patch.id.clone();
                self.with_subagent(sid, out, |s| {
                    let before = s
                        .lines
                        .iter()
                        .rev()
                        .find(|l| l.kind == EntryKind::ToolCall && l.key.as_deref() == Some(&id))
                        .map(|l| l.text.clone());
                    let (old_title, old_status) = match &before {
                        Some(t) => match t.rsplit_once(HEADER_SEP) {
                            Some((a, b)) => (a.to_owned(), Some(b.replace(' ', "_"))),
                            None => (t.clone(), None),
                        },
                        None => (known_title.unwrap_or_else(|| "tool call".to_owned()), None),
                    };
                    let title = patch.title.clone().unwrap_or(old_title);
                    let status = patch
                        .status
                        .clone()
                        .or_else(|| old_status.as_deref().map(ToolStatus::parse));
                    let line = child_tool_line(&title, status.as_ref());
                    s.push(EntryKind::ToolCall, Some(&id), &line, false);
                });
            }
            SessionUpdate::Plan(items) => {
                let line = plan_line(items);
                self.with_subagent(sid, out, |s| {
                    s.push(EntryKind::Plan, Some("plan"), &line, false)
                });
            }
            SessionUpdate::PlanById { id, body } => {
                let line = match body {
                    PlanBody::Items { items } => plan_line(items),
                    PlanBody::Markdown { content, .. } => content.clone(),
                };
                let key = format!("plan {id}");
                self.with_subagent(sid, out, |s| {
                    s.push(EntryKind::Plan, Some(&key), &line, false)
                });
            }
            SessionUpdate::Subagent(patch) => self.subagent(patch, out),
            SessionUpdate::SessionMessage(m) => self.session_message(sid, m, out),
            SessionUpdate::Child { session_id, update } => {
                self.child_update(session_id, update, out)
            }
            // Its title, commands and usage are the child's own business.
            _ => {}
        }
    }
}

/// A child's plan on one line: progress and the running step.
fn plan_line(items: &[PlanItem]) -> String {
    use crate::model::schema::PlanStatus;
    let done = items
        .iter()
        .filter(|i| i.status == PlanStatus::Completed)
        .count();
    let mut line = format!("{done}/{} done", items.len());
    if let Some(step) = items.iter().find(|i| i.status == PlanStatus::InProgress) {
        line.push_str(HEADER_SEP);
        line.push_str(&step.content.replace('\n', " "));
    }
    line
}
