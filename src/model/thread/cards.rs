//! Tool cards: how a `tool_call` / `tool_call_update` (and the adapters'
//! display terminals in its `_meta`), a permission request, an agent write
//! and terminal output change the card they belong to.

use serde_json::Value;

use super::Thread;
use crate::model::entries::{ClientState, Entry, TermExit, ToolCall, ToolContent};
use crate::model::events::{ThreadEvent, TurnState};
use crate::model::schema::ToolKind;
use crate::model::terminal_views::TermView;
use crate::model::update::{field, str_field, ToolCallPatch};

impl Thread {
    /// A permission request names a tool call (possibly for the first time,
    /// as gemini-cli does): merge it and mark it waiting for the user.
    /// A request never sets the kind of a card that exists, even one whose
    /// kind is not known yet: the kind is what a policy keys on, and the
    /// agent would otherwise pick it for the request it wants answered.
    /// `notes` (options that cannot be answered) go on the card.
    pub fn permission_requested(
        &mut self,
        tool_call: &ToolCallPatch,
        notes: &[String],
    ) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        let mut patch = tool_call.clone();
        let claimed = match self.card_for_update(&tool_call.id, false) {
            Some(_) => patch.kind.take(),
            None => None,
        };
        self.tool_call_with(&patch, false, &mut out, |tc| {
            tc.client_state = Some(ClientState::WaitingForYou);
            tc.asked = true;
            if let Some(kind) = claimed.filter(|k| *k != tc.kind) {
                let note = format!(
                    "the agent changed this call's kind to `{kind}` (kept `{}`)",
                    tc.kind
                );
                if !tc.notes.contains(&note) {
                    tc.notes.push(note);
                }
            }
            for note in notes {
                if !tc.notes.contains(note) {
                    tc.notes.push(note.clone());
                }
            }
        });
        out
    }

    /// The user's (or the policy's) answer to a permission request.
    pub fn permission_answered(
        &mut self,
        tool_call_id: &str,
        state: Option<ClientState>,
        note: Option<String>,
    ) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        let Some(index) = self.find_tool_call(tool_call_id) else {
            return out;
        };
        if let Entry::ToolCall(tc) = &mut self.entries[index] {
            tc.client_state = state;
            tc.notes.extend(note);
        }
        self.replace(index, &mut out);
        out
    }

    /// The newest card with this id.
    pub fn tool_call(&self, id: &str) -> Option<&ToolCall> {
        match self.find_tool_call(id).map(|i| &self.entries[i]) {
            Some(Entry::ToolCall(tc)) => Some(tc),
            _ => None,
        }
    }

    /// The newest card with this id in the current session (ids are scoped
    /// to their session: a restarted agent reuses them).
    fn find_tool_call(&self, id: &str) -> Option<usize> {
        self.entries[self.session_start..]
            .iter()
            .rposition(|e| matches!(e, Entry::ToolCall(tc) if tc.id == id))
            .map(|i| i + self.session_start)
    }

    /// The card an update for `id` belongs to: the newest of this session
    /// when it is in the current turn. A card of an earlier turn is reached
    /// only by an update (not an announcement), and while a turn runs only
    /// when that card is still open: agents reuse ids across turns, and a
    /// finished call of turn 1 must not take turn 2's content or notes.
    fn card_for_update(&self, id: &str, announce: bool) -> Option<usize> {
        let index = self.find_tool_call(id)?;
        if index >= self.turn_start {
            return Some(index);
        }
        if announce {
            return None;
        }
        let Entry::ToolCall(tc) = &self.entries[index] else {
            return None;
        };
        let closed = tc.status.is_finished()
            || matches!(
                tc.client_state,
                Some(ClientState::Rejected | ClientState::Cancelled)
            );
        (self.state != TurnState::Running || !closed).then_some(index)
    }

    /// Merges a tool-call update (creating the card for an unknown id), its
    /// display-terminal `_meta` and `adjust`, then emits the card once.
    /// `announce`: a `tool_call` (not an update). Announcing an id whose card
    /// belongs to an earlier turn starts a new card in this turn instead of
    /// rewriting the old one.
    pub(super) fn tool_call_with(
        &mut self,
        update: &ToolCallPatch,
        announce: bool,
        out: &mut Vec<ThreadEvent>,
        adjust: impl FnOnce(&mut ToolCall),
    ) {
        let id = update.id.as_str();
        if id.is_empty() {
            return;
        }
        let existing = self.card_for_update(id, announce);
        let index = existing.unwrap_or_else(|| {
            self.start_reply(out);
            self.entries.push(Entry::ToolCall(ToolCall::new(id)));
            self.entries.len() - 1
        });
        if let Entry::ToolCall(tc) = &mut self.entries[index] {
            merge_tool_call(tc, update);
        }
        self.meta_terminals(update, out);
        if let Entry::ToolCall(tc) = &mut self.entries[index] {
            self.terminals.fill_card(tc);
        }
        if let Entry::ToolCall(tc) = &mut self.entries[index] {
            adjust(tc);
        }
        match existing {
            Some(_) => self.replace(index, out),
            None => self.emit_added(index, out),
        }
    }

    /// The agent-owned display terminal of the Claude and Codex adapters:
    /// `_meta.terminal_info` / `terminal_output` / `terminal_exit`.
    fn meta_terminals(&mut self, update: &ToolCallPatch, out: &mut Vec<ThreadEvent>) {
        let Some(meta) = &update.meta else {
            return;
        };
        let tool_id = update.id.clone();
        let term_id = |v: &Value| str_field(v, "terminal_id").unwrap_or_else(|| tool_id.clone());
        if let Some(info) = field(meta, "terminal_info") {
            let id = term_id(info);
            self.ensure_card_terminal(&tool_id, &id);
        }
        // `terminal_output_delta` is the TypeScript Codex adapter's name for
        // the same increment; both may come in one update.
        for key in ["terminal_output", "terminal_output_delta"] {
            if let Some(o) = field(meta, key) {
                let data = str_field(o, "data").unwrap_or_default();
                let id = term_id(o);
                self.ensure_card_terminal(&tool_id, &id);
                self.terminals.push(&id, &data);
                if self.terminals.is_watched(&id) {
                    out.push(ThreadEvent::TerminalOutput { id, data });
                }
            }
        }
        if let Some(x) = field(meta, "terminal_exit") {
            let exit = TermExit {
                code: field(x, "exit_code").and_then(Value::as_i64),
                signal: str_field(x, "signal"),
            };
            self.terminals.set_exit(&term_id(x), exit);
        }
    }

    /// Makes sure the card `tool_id` shows terminal `id` (agent-streamed).
    fn ensure_card_terminal(&mut self, tool_id: &str, id: &str) {
        self.terminals.ensure(id);
        let Some(index) = self.find_tool_call(tool_id) else {
            return;
        };
        if let Entry::ToolCall(tc) = &mut self.entries[index] {
            let shown = tc
                .content
                .iter()
                .any(|c| matches!(c, ToolContent::Terminal { id: t, .. } if t == id));
            if !shown {
                tc.content.push(ToolContent::Terminal {
                    id: id.to_owned(),
                    tail: String::new(),
                    more_lines: 0,
                    exit: None,
                    known: true,
                });
            }
        }
    }

    fn refresh_terminal_cards(&mut self, id: &str, out: &mut Vec<ThreadEvent>) {
        for index in 0..self.entries.len() {
            let refs = matches!(&self.entries[index], Entry::ToolCall(tc)
                if tc.content.iter().any(|c| matches!(c, ToolContent::Terminal { id: t, .. } if t == id)));
            let changed = match &mut self.entries[index] {
                Entry::ToolCall(tc) if refs => self.terminals.fill_card(tc),
                _ => false,
            };
            if changed {
                self.replace(index, out);
            }
        }
    }

    /// Output of a client terminal (`terminal/create`), as it arrives.
    pub fn terminal_output(&mut self, id: &str, data: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.terminals.push(id, data);
        if !data.is_empty() && self.terminals.is_watched(id) {
            out.push(ThreadEvent::TerminalOutput {
                id: id.to_owned(),
                data: data.to_owned(),
            });
        }
        self.refresh_terminal_cards(id, &mut out);
        out
    }

    /// A view opened (or closed) a buffer that follows terminal `id`.
    pub fn watch_terminal(&mut self, id: &str, on: bool) {
        self.terminals.watch(id, on);
    }

    pub fn terminal_exit(&mut self, id: &str, exit: TermExit) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.terminals.set_exit(id, exit);
        self.refresh_terminal_cards(id, &mut out);
        out
    }

    /// The full display text of a terminal (for opening it in a buffer).
    pub fn terminal_text(&self, id: &str) -> Option<&TermView> {
        self.terminals.get(id)
    }

    /// Notes an agent write on the tool call it most likely belongs to (ACP
    /// does not say): the latest unfinished call naming the path, else the
    /// latest unfinished call. Returns its id.
    pub fn note_write(&mut self, path: &str, note: String) -> (Option<String>, Vec<ThreadEvent>) {
        let mut out = Vec::new();
        let unfinished = |e: &Entry| matches!(e, Entry::ToolCall(tc) if !tc.status.is_finished());
        let names_path = |e: &Entry| matches!(e, Entry::ToolCall(tc) if tc.locations.iter().any(|(p, _)| p == path));
        let session = &self.entries[self.session_start..];
        let index = session
            .iter()
            .rposition(|e| unfinished(e) && names_path(e))
            .or_else(|| session.iter().rposition(unfinished))
            .map(|i| i + self.session_start);
        let Some(index) = index else {
            return (None, out);
        };
        let id = match &mut self.entries[index] {
            Entry::ToolCall(tc) => {
                tc.notes.push(note);
                tc.id.clone()
            }
            _ => unreachable!(),
        };
        self.replace(index, &mut out);
        (Some(id), out)
    }
}

const GENERIC_TITLES: &[&str] = &[
    "Bash", "Read", "Write", "Edit", "Search", "Fetch", "Terminal", "Tool",
];

/// Merge rules (the schema's, and what real traffic needs): absent/null
/// fields keep their value, a value replaces (`content: []` and
/// `locations: []` empty them, a `rawOutput` with nothing to show clears
/// the output), unknown kinds become `other`, and a known kind is never
/// changed behind the user's back.
pub fn merge_tool_call(tc: &mut ToolCall, update: &ToolCallPatch) {
    // Once the user was asked about the call, what they read stays: a
    // second `tool_call` (or an update, or another request) with the same
    // id changes its status and content, never its title or command.
    let retitles = |t: &String| {
        *t != tc.title
            && (tc.title.is_empty()
                || !GENERIC_TITLES.contains(&t.as_str())
                || GENERIC_TITLES.contains(&tc.title.as_str()))
    };
    let shown_changes = update.title.as_ref().is_some_and(retitles)
        || (update.raw_input.is_some()
            && (update.command != tc.command
                || update.cwd != tc.cwd
                || update.env.clone().unwrap_or_default() != tc.env));
    if tc.asked && shown_changes {
        let note = "the agent changed this call's title or command after you were asked (kept what you were shown)".to_owned();
        if !tc.notes.contains(&note) {
            tc.notes.push(note);
        }
    }
    if let Some(title) = update.title.as_ref().filter(|t| !tc.asked && retitles(t)) {
        tc.title = title.clone();
    }
    if let Some(kind) = &update.kind {
        // The kind is what the user judges a call by (and what a policy
        // keys on): once known it is not changed behind the user's back.
        if tc.kind == ToolKind::Other {
            tc.kind = kind.clone();
        } else if tc.kind != *kind {
            let note = format!(
                "the agent changed this call's kind to `{kind}` (kept `{}`)",
                tc.kind
            );
            if !tc.notes.contains(&note) {
                tc.notes.push(note);
            }
        }
    }
    if let Some(status) = &update.status {
        tc.status = status.clone();
    }
    if let Some(locs) = &update.locations {
        tc.locations = locs.clone();
    }
    if let Some(content) = &update.content {
        tc.content = content.clone();
    }
    // A new raw input replaces the command, its cwd and its env together:
    // what the card shows is one raw input, never a mix of two.
    if let Some(raw) = update.raw_input.as_ref().filter(|_| !tc.asked) {
        tc.raw_input = Some(raw.clone());
        tc.command = update.command.clone();
        tc.cwd = update.cwd.clone();
        tc.env = update.env.clone().unwrap_or_default();
    }
    if let Some(output) = &update.raw_output {
        tc.raw_output = output.clone();
    }
}
