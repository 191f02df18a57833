//! The conversation of one chat: a plain list of entries plus the state of
//! the current turn. It knows nothing about Neovim; every mutation returns
//! the granular events ("entry added / appended / replaced") the view needs
//! (`events`), and every entry renders itself to markdown (`render`). How
//! updates change tool cards is in `thread/cards.rs`.
//!
//! Input arrives typed (`update::SessionUpdate`), parsed leniently at the
//! edge: real agents send `null` for optional fields, unknown `kind`s and ids
//! that were never announced, and a strict parse would drop such updates.

mod cards;
mod compaction;
mod delegation;
#[cfg(test)]
mod delegation_tests;
mod echo;
mod messages;
#[cfg(test)]
mod patch_tests;
#[cfg(test)]
mod schema120_tests;
mod steer;
#[cfg(test)]
mod tests;

use serde_json::Value;

use super::entries::{ClientState, Entry, EntryKind, NoticeLevel, PlanItem};
use super::events::{CardMeta, ThreadEvent, TurnState};
use super::render;
use super::terminal_views::TerminalViews;
use super::update::SessionUpdate;

#[derive(Debug)]
pub struct Thread {
    pub agent_name: String,
    entries: Vec<Entry>,
    state: TurnState,
    /// Set by a user cancel until the next prompt: late chunks are ignored.
    cancelled: bool,
    /// The user cancelled the running turn and the agent has not ended it
    /// yet (`request_cancel`).
    cancelling: bool,
    /// Increments per prompt so a late response cannot end a newer turn.
    turn: u64,
    /// When the running turn started.
    turn_started_at: Option<std::time::Instant>,
    /// Whether the reply heading of the current turn was written.
    reply_started: bool,
    pub title: Option<String>,
    /// `session_info_update`'s `updatedAt`, as sent.
    pub updated_at: Option<String>,
    /// The output of the terminals its cards show.
    terminals: TerminalViews,
    /// Index of the current turn's first entry: a `tool_call` announcing an
    /// id seen before this point starts a new card (ids are reused), and a
    /// plan update replaces only a plan from this point on.
    turn_start: usize,
    /// Index of the first entry of the current agent session: cards before
    /// it belong to an earlier session and no update reaches them.
    session_start: usize,
    /// A loaded session replays its history (`session/load`).
    replaying: bool,
    /// Turns still open under a newer one (the agent queued the newer
    /// prompt): their answers end them without ending the running turn.
    open_turns: Vec<u64>,
    /// `messageId` of the last chunk: chunks of another message start a new
    /// entry even when the kind is the same.
    last_message_id: Option<String>,
    /// Entry index -> the agent's `messageId` of the message it shows (when
    /// the agent sent one): what `session/fork` at a message names.
    message_ids: std::collections::HashMap<usize, String>,
    /// The last agent entry's index, text length and the scan of its last
    /// line (see `render::agent_fragment`): a streamed line is never read
    /// again to know whether it shows as the user's turn heading.
    agent_tail: Option<(usize, usize, render::HeadingScan)>,
    /// The prompts of the running turn, which the agent may echo back.
    echoes: echo::PromptEchoes,
    /// The entry of the prompt the user sent last: a user chunk from the
    /// agent is another message, never appended to it.
    own_prompt: Option<usize>,
    /// The agent wants the user to sign in (it refused `session/new` or a
    /// prompt with "auth required"): every status says so until a session
    /// opens, a sign-in succeeds or another prompt starts.
    sign_in: bool,
    /// How cards name files (relative to the session's root, `~` for home).
    paths: render::PathDisplay,
    /// Child session id -> the entry of its subagent block.
    subagents: std::collections::HashMap<String, usize>,
    /// Session messages by transcript and id (`thread/messages.rs`).
    messages: messages::Messages,
}

impl Thread {
    pub fn new(agent_name: impl Into<String>) -> Self {
        Self {
            agent_name: agent_name.into(),
            entries: Vec::new(),
            state: TurnState::Connecting,
            cancelled: false,
            cancelling: false,
            turn: 0,
            turn_started_at: None,
            reply_started: false,
            title: None,
            updated_at: None,
            terminals: TerminalViews::default(),
            turn_start: 0,
            session_start: 0,
            replaying: false,
            open_turns: Vec::new(),
            last_message_id: None,
            message_ids: std::collections::HashMap::new(),
            agent_tail: None,
            echoes: echo::PromptEchoes::default(),
            own_prompt: None,
            sign_in: false,
            paths: render::PathDisplay::default(),
            subagents: std::collections::HashMap::new(),
            messages: messages::Messages::default(),
        }
    }

    /// Cards name files as `paths` says (set once, before any entry).
    pub fn with_paths(mut self, paths: render::PathDisplay) -> Self {
        self.paths = paths;
        self
    }

    /// The entries (tests; the view gets events and asks for one entry).
    #[cfg(test)]
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn state(&self) -> TurnState {
        self.state
    }

    /// How many user messages the transcript holds.
    pub fn user_messages(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e, Entry::User { .. }))
            .count()
    }

    pub fn current_turn(&self) -> u64 {
        self.turn
    }

    /// The whole transcript as markdown, entries separated by a blank line,
    /// exactly as the view lays it out.
    pub fn to_markdown(&self) -> String {
        self.markdown_before(self.entries.len())
    }

    /// The markdown export of the entries before `end` (what a new session
    /// gets as the conversation so far, in edit and resend).
    pub fn markdown_before(&self, end: usize) -> String {
        (0..end.min(self.entries.len()))
            .map(|i| match &self.entries[i] {
                Entry::ToolCall(tc) => render::tool_call_rendering(tc, &self.paths).0,
                entry => entry.to_markdown(),
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    fn push(&mut self, entry: Entry, out: &mut Vec<ThreadEvent>) -> usize {
        self.entries.push(entry);
        let index = self.entries.len() - 1;
        self.emit_added(index, out);
        index
    }

    fn emit_added(&self, index: usize, out: &mut Vec<ThreadEvent>) {
        let entry = &self.entries[index];
        let (lines, card) = self.rendering(index);
        out.push(ThreadEvent::Added {
            index,
            kind: entry.kind(),
            lines,
        });
        out.extend(card);
    }

    /// The entry's lines and, for a tool card or a plan, its `Card` or
    /// `Plan` event (one rendering for both).
    fn rendering(&self, index: usize) -> (Vec<String>, Option<ThreadEvent>) {
        let lines = |text: String| text.split('\n').map(str::to_owned).collect();
        match &self.entries[index] {
            Entry::ToolCall(tc) => {
                let (text, layout) = render::tool_call_rendering(tc, &self.paths);
                let card = Box::new(CardMeta::of(tc, layout));
                (lines(text), Some(ThreadEvent::Card { index, card }))
            }
            Entry::Plan { items } => {
                let (text, plan) = render::plan_rendering(items);
                let plan = Box::new(plan);
                (lines(text), Some(ThreadEvent::Plan { index, plan }))
            }
            Entry::IdPlan(p) => {
                let (text, plan) = super::render_delegation::id_plan_rendering(p);
                let plan = Box::new(plan);
                (lines(text), Some(ThreadEvent::Plan { index, plan }))
            }
            Entry::Subagent(s) => {
                let (text, plan) = super::render_delegation::subagent_rendering(s);
                let plan = Box::new(plan);
                (lines(text), Some(ThreadEvent::Plan { index, plan }))
            }
            Entry::AgentNotice(n) => {
                let (text, marks) = render::notice_rendering(n);
                (lines(text), Some(ThreadEvent::Marks { index, marks }))
            }
            Entry::Compaction(c) => {
                let (text, marks) = render::compaction_rendering(c);
                (lines(text), Some(ThreadEvent::Marks { index, marks }))
            }
            entry => (entry.lines(), None),
        }
    }

    /// The agent's first output in a turn gets a heading with its name.
    fn start_reply(&mut self, out: &mut Vec<ThreadEvent>) {
        if !self.reply_started {
            self.reply_started = true;
            let text = self.agent_name.clone();
            self.push(Entry::Heading { text }, out);
        }
    }

    fn replace(&mut self, index: usize, out: &mut Vec<ThreadEvent>) {
        let (lines, card) = self.rendering(index);
        out.push(ThreadEvent::Replaced { index, lines });
        out.extend(card);
    }

    fn set_state(
        &mut self,
        state: TurnState,
        detail: impl Into<String>,
        out: &mut Vec<ThreadEvent>,
    ) {
        self.state = state;
        out.push(ThreadEvent::Status {
            state,
            detail: detail.into(),
            sign_in: self.sign_in,
        });
    }

    /// Whether the agent wants the user to sign in (see `sign_in`). Set
    /// when it refuses with "auth required", cleared when an attempt to
    /// open the session starts; the next status carries it.
    pub fn wants_sign_in(&mut self, on: bool) {
        self.sign_in = on;
    }

    /// `authenticate` succeeded: the chat says so, and a chat that waited
    /// for the sign-in waits no more.
    pub fn signed_in(&mut self, method_id: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.push(
            notice_entry(NoticeLevel::Info, format!("Signed in with `{method_id}`")),
            &mut out,
        );
        if std::mem::take(&mut self.sign_in) {
            self.set_state(self.state, "signed in", &mut out);
        }
        out
    }

    /// The running turn ends: `TurnEnded` with its duration.
    fn turn_ended(&mut self, stop_reason: &str, out: &mut Vec<ThreadEvent>) {
        self.turn_ended_with(stop_reason, None, out)
    }

    fn turn_ended_with(
        &mut self,
        stop_reason: &str,
        usage: Option<Value>,
        out: &mut Vec<ThreadEvent>,
    ) {
        let duration_ms = self
            .turn_started_at
            .take()
            .map_or(0, |t| t.elapsed().as_millis() as u64);
        out.push(ThreadEvent::TurnEnded {
            turn: self.turn,
            stop_reason: stop_reason.to_owned(),
            duration_ms,
            usage,
        });
    }

    /// A loaded session's history follows (its replayed updates), set apart
    /// from what comes later by a notice above and one below.
    pub fn begin_replay(&mut self, label: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.replaying = true;
        self.push(
            notice_entry(NoticeLevel::Info, format!("History of session {label}")),
            &mut out,
        );
        out
    }

    /// The replay ended; `ok` false when the load failed or was given up.
    pub fn end_replay(&mut self, ok: bool) -> Vec<ThreadEvent> {
        let text = if ok {
            "End of the loaded history: new messages continue this session"
        } else {
            "The history above is incomplete"
        };
        self.end_replay_saying(text)
    }

    /// A kept transcript (`record::Recorder`'s records) replayed through
    /// the same path as a loaded session's history, between a notice
    /// `label` above and `end` below.
    pub fn replay_kept(&mut self, label: &str, records: &[Value], end: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.replaying = true;
        self.push(notice_entry(NoticeLevel::Info, label.to_owned()), &mut out);
        for r in records {
            out.extend(self.apply_update(&super::update::parse_update(r)));
        }
        out.extend(self.end_replay_saying(end));
        out
    }

    fn end_replay_saying(&mut self, text: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        if !std::mem::take(&mut self.replaying) {
            return out;
        }
        self.push(notice_entry(NoticeLevel::Info, text.into()), &mut out);
        self.reply_started = false;
        self.last_message_id = None;
        self.turn_start = self.entries.len();
        out
    }

    pub fn notice(&mut self, level: NoticeLevel, text: impl Into<String>) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.push(notice_entry(level, text.into()), &mut out);
        out
    }

    /// A `session/load` or `session/resume` runs (`on`): the chat says so.
    pub fn loading(&mut self, on: bool) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        if on && self.state != TurnState::Running {
            self.set_state(TurnState::Connecting, "loading session", &mut out);
        }
        out
    }

    pub fn session_ready(&mut self, detail: impl Into<String>) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        if self.state != TurnState::Running {
            self.set_state(TurnState::Idle, detail, &mut out);
        }
        out
    }

    /// The chat is bound to a new agent session. After a restart (the
    /// agent died under the previous one) a notice opens the new session's
    /// section; from here on updates reach only this section's cards.
    pub fn session_started(&mut self, restarted: bool) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.sign_in = false;
        if restarted {
            self.session_start = self.entries.len();
            let text = format!("Restarted `{}` with a new session", self.agent_name);
            self.push(notice_entry(NoticeLevel::Info, text), &mut out);
            // The reply heading of a running turn opens again in this section.
            self.reply_started = false;
        }
        out
    }

    /// The chat goes on in another session of its agent (a fork at an
    /// earlier message, or a new one): a notice saying how opens its
    /// section; updates reach only this section's cards from here on.
    pub fn new_section(&mut self, text: String) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.session_start = self.entries.len();
        self.reply_started = false;
        self.push(notice_entry(NoticeLevel::Info, text), &mut out);
        out
    }

    /// A prompt failed because no session could be opened (the agent did
    /// not start): the chat is not ready, whatever the turn's end said.
    pub fn not_connected(&mut self) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        if self.state != TurnState::Running {
            self.set_state(TurnState::Disconnected, "agent not running", &mut out);
        }
        out
    }

    /// The agent process went away or the session could not be created.
    pub fn disconnected(&mut self, message: impl Into<String>) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.cancelling = false;
        self.open_turns.clear();
        self.push(notice_entry(NoticeLevel::Error, message.into()), &mut out);
        if self.state == TurnState::Running {
            self.turn_ended("disconnected", &mut out);
        }
        self.set_state(TurnState::Disconnected, "agent exited", &mut out);
        out
    }

    /// The user sends a prompt: returns the turn number and the events.
    /// While a turn runs (a prompt the agent queues itself, see
    /// `end_turn`) the state stays `running` without a second status.
    pub fn begin_turn(&mut self, user_text: &str) -> (u64, Vec<ThreadEvent>) {
        let mut out = Vec::new();
        self.sign_in = false;
        let was_running = self.state == TurnState::Running;
        if was_running {
            self.open_turns.push(self.turn);
        } else {
            self.echoes.clear();
        }
        self.echoes.expect(user_text);
        self.turn += 1;
        self.cancelled = false;
        self.cancelling = false;
        self.reply_started = false;
        self.turn_start = self.entries.len();
        self.own_prompt = Some(self.push(
            Entry::User {
                text: user_text.to_owned(),
            },
            &mut out,
        ));
        if !was_running {
            self.set_state(TurnState::Running, "", &mut out);
        }
        self.turn_started_at = Some(std::time::Instant::now());
        out.push(ThreadEvent::TurnStarted { turn: self.turn });
        (self.turn, out)
    }

    /// The user cancels and the turn ends here at once. Returns false when
    /// no turn was running. (Tests: a chat cancels with `request_cancel`,
    /// and the turn ends when the agent answers or the grace runs out.)
    #[cfg(test)]
    pub fn cancel(&mut self) -> (bool, Vec<ThreadEvent>) {
        let mut out = Vec::new();
        self.open_turns.clear();
        if self.state != TurnState::Running {
            return (false, out);
        }
        self.cancelled = true;
        self.cancel_open_tool_calls(&mut out);
        self.end_cancelled("Cancelled".into(), &mut out);
        (true, out)
    }

    fn end_cancelled(&mut self, notice: String, out: &mut Vec<ThreadEvent>) {
        self.cancelling = false;
        self.push(notice_entry(NoticeLevel::Warn, notice), out);
        self.turn_ended("cancelled", out);
        self.set_state(TurnState::Idle, "cancelled", out);
    }

    /// The user cancels; the turn ends when the agent answers the prompt
    /// (or `cancel_unconfirmed` gives up on it). Its message chunks are
    /// ignored from now on; tool call updates still apply. Returns
    /// (a turn is running, this is the first cancel of it, events).
    pub fn request_cancel(&mut self) -> (bool, bool, Vec<ThreadEvent>) {
        let mut out = Vec::new();
        if self.state != TurnState::Running {
            return (false, false, out);
        }
        if self.cancelling {
            return (true, false, out);
        }
        self.open_turns.clear();
        self.cancelled = true;
        self.cancelling = true;
        self.cancel_open_tool_calls(&mut out);
        self.set_state(TurnState::Running, "cancelling", &mut out);
        (true, true, out)
    }

    pub fn is_cancelling(&self) -> bool {
        self.cancelling && self.state == TurnState::Running
    }

    /// The agent did not end turn `turn` within `grace_ms` of the cancel:
    /// it ends here, marked so; what the agent still sends for it is
    /// ignored (its answer, its message chunks).
    pub fn cancel_unconfirmed(&mut self, turn: u64, grace_ms: u64) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        if turn != self.turn || !self.is_cancelling() {
            return out;
        }
        self.end_cancelled(
            format!(
                "Cancelled here: the agent did not end its turn within {} of the cancel; what it still sends is ignored",
                render::human_ms(grace_ms)
            ),
            &mut out,
        );
        out
    }

    /// Tool calls still pending, running or waiting for the user end as
    /// cancelled with the turn.
    fn cancel_open_tool_calls(&mut self, out: &mut Vec<ThreadEvent>) {
        for index in 0..self.entries.len() {
            if let Entry::ToolCall(tc) = &mut self.entries[index] {
                let open =
                    tc.status.is_open() || tc.client_state == Some(ClientState::WaitingForYou);
                if open && tc.client_state != Some(ClientState::Cancelled) {
                    tc.client_state = Some(ClientState::Cancelled);
                    self.replace(index, out);
                }
            }
        }
    }

    /// The entry as JSON (for the view's keys: review a diff, open a
    /// terminal, reopen a permission).
    pub fn entry_json(&self, index: usize) -> Option<Value> {
        let mut v = self
            .entries
            .get(index)
            .and_then(|e| serde_json::to_value(e).ok())?;
        if let (Some(id), Value::Object(m)) = (self.message_ids.get(&index), &mut v) {
            m.insert("message_id".into(), Value::String(id.clone()));
        }
        Some(v)
    }

    /// The prompt request answered. `turn` guards against a late answer.
    /// (Tests: `end_turn_with` without usage.)
    #[cfg(test)]
    pub fn end_turn(&mut self, turn: u64, stop_reason: &str) -> Vec<ThreadEvent> {
        self.end_turn_with(turn, stop_reason, None)
    }

    /// `end_turn` with the answer's `usage`. An older turn that ends while
    /// a newer one runs (the agent queued the newer prompt) only reports
    /// its end.
    pub fn end_turn_with(
        &mut self,
        turn: u64,
        stop_reason: &str,
        usage: Option<Value>,
    ) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        if let Some(i) = self.open_turns.iter().position(|&t| t == turn) {
            self.open_turns.remove(i);
            out.push(ThreadEvent::TurnEnded {
                turn,
                stop_reason: stop_reason.to_owned(),
                duration_ms: 0,
                usage,
            });
            return out;
        }
        // The answer of the current turn (even a late one): what the agent
        // sends after it is no cancelled output in flight, and is shown.
        if turn == self.turn {
            self.cancelled = false;
        }
        if turn != self.turn || self.state != TurnState::Running {
            return out;
        }
        if self.cancelling {
            // The agent confirmed the user's cancel (whatever it calls it).
            self.end_cancelled("Cancelled".into(), &mut out);
            return out;
        }
        match stop_reason {
            "end_turn" => {}
            "cancelled" => {
                self.push(
                    notice_entry(NoticeLevel::Warn, "Cancelled by the agent".into()),
                    &mut out,
                );
            }
            other => {
                self.push(
                    notice_entry(NoticeLevel::Warn, format!("Stopped: {other}")),
                    &mut out,
                );
            }
        }
        self.turn_ended_with(stop_reason, usage, &mut out);
        self.set_state(TurnState::Idle, stop_reason, &mut out);
        out
    }

    /// The prompt request failed (JSON-RPC error or lost connection).
    pub fn fail_turn(&mut self, turn: u64, message: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        if turn != self.turn || self.state != TurnState::Running {
            return out;
        }
        self.cancelling = false;
        self.push(
            notice_entry(NoticeLevel::Error, format!("Error: {message}")),
            &mut out,
        );
        self.turn_ended("error", &mut out);
        self.set_state(TurnState::Idle, "error", &mut out);
        out
    }

    /// Applies one `session/update` payload (the `update` object).
    /// Applies one typed `session/update` (see `update::parse_update`).
    pub fn apply_update(&mut self, update: &SessionUpdate) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        match update {
            SessionUpdate::Chunk {
                kind,
                message_id,
                text,
            } => self.chunk(*kind, message_id.as_deref(), text, &mut out),
            SessionUpdate::ToolCall { patch, announce } => {
                self.tool_call_with(patch, *announce, &mut out, |_| {});
                self.link_subagents(patch, &mut out);
            }
            SessionUpdate::PlanById { id, body } => self.plan_by_id(id, body, &mut out),
            SessionUpdate::PlanRemoved(id) => self.plan_removed(id, &mut out),
            SessionUpdate::Subagent(patch) => self.subagent(patch, &mut out),
            SessionUpdate::SessionMessage(m) => self.session_message("", m, &mut out),
            SessionUpdate::Child { session_id, update } => {
                self.child_update(session_id, update, &mut out)
            }
            SessionUpdate::Plan(items) => self.plan(items.clone(), &mut out),
            SessionUpdate::SessionInfo { title, updated_at } => {
                self.session_info(title, updated_at, &mut out)
            }
            SessionUpdate::Notice(n) => self.agent_notice(n, &mut out),
            SessionUpdate::Compaction(patch) => self.compaction(patch, &mut out),
            SessionUpdate::CompactionChunk { id, text } => {
                self.compaction_chunk(id, text, &mut out)
            }
            SessionUpdate::Mode(mode_id) => out.push(ThreadEvent::Mode {
                mode_id: mode_id.clone(),
            }),
            SessionUpdate::Commands(commands) => out.push(ThreadEvent::Commands {
                commands: commands.clone(),
            }),
            SessionUpdate::ConfigOptions(options) => out.push(ThreadEvent::ConfigOptions {
                options: options.clone(),
            }),
            SessionUpdate::Usage(usage) => out.push(ThreadEvent::Usage {
                usage: usage.clone(),
            }),
            SessionUpdate::Ignored(_) => {}
        }
        out
    }

    /// `apply_update` of a raw update (tests).
    #[cfg(test)]
    pub fn apply_json(&mut self, update: &Value) -> Vec<ThreadEvent> {
        self.apply_update(&super::update::parse_update(update))
    }

    fn chunk(
        &mut self,
        kind: EntryKind,
        message_id: Option<&str>,
        text: &str,
        out: &mut Vec<ThreadEvent>,
    ) {
        // After a user cancel, text still in flight belongs to the dead turn.
        if self.cancelled && kind != EntryKind::User {
            return;
        }
        if text.is_empty() {
            return;
        }
        // The agent echoing the prompt this turn sent (already shown).
        let text = match kind {
            EntryKind::User if self.echo_expected() => match self.echoes.take(text) {
                Some(shown) => shown,
                None => return,
            },
            _ => text.to_owned(),
        };
        // Chunks of two messages with distinct ids never merge; without ids,
        // consecutive chunks of one kind are one message.
        let message_id = message_id.map(str::to_owned);
        let same_message = match (&message_id, &self.last_message_id) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        if message_id.is_some() {
            self.last_message_id = message_id.clone();
        }
        let last = self.entries.len().checked_sub(1);
        let mergeable =
            |i: usize| self.entries[i].kind() == kind && same_message && Some(i) != self.own_prompt;
        let merge_into = last.filter(|&i| mergeable(i));
        if let (Some(id), Some(index)) = (&message_id, merge_into) {
            self.message_ids.entry(index).or_insert_with(|| id.clone());
        }
        if let Some(index) = merge_into {
            if kind == EntryKind::Agent {
                return self.append_agent(index, &text, out);
            }
            let fragment = render::append_fragment(kind, &text);
            match &mut self.entries[index] {
                Entry::User { text: t } | Entry::Agent { text: t } | Entry::Thought { text: t } => {
                    t.push_str(&text)
                }
                _ => unreachable!("kind checked above"),
            }
            out.push(ThreadEvent::Appended {
                index,
                text: fragment,
            });
            return;
        }
        if kind != EntryKind::User {
            self.start_reply(out);
        } else {
            // A user message of a replayed history (or echoed by the agent):
            // the agent's answer to it gets its own heading.
            self.reply_started = false;
            self.turn_start = self.entries.len();
        }
        let entry = match kind {
            EntryKind::User => Entry::User { text },
            EntryKind::Thought => Entry::Thought { text },
            _ => Entry::Agent { text },
        };
        let index = self.push(entry, out);
        if let Some(id) = message_id {
            self.message_ids.insert(index, id);
        }
    }

    /// Appends `chunk` to agent entry `index`. A line of the agent's that
    /// reads as the user's turn heading is shown escaped
    /// (`render::escape_turn_headings`); when the line a chunk continues
    /// changes between the two, the entry is rendered again.
    fn append_agent(&mut self, index: usize, chunk: &str, out: &mut Vec<ThreadEvent>) {
        let Entry::Agent { text } = &mut self.entries[index] else {
            unreachable!("kind checked by the caller")
        };
        let before = match self.agent_tail {
            Some((i, len, scan)) if i == index && len == text.len() => scan,
            _ => {
                let line = text.rsplit('\n').next().unwrap_or("");
                render::HeadingScan::default().feed_all(line.as_bytes())
            }
        };
        let (fragment, after, flipped) = render::agent_fragment(before, chunk);
        text.push_str(chunk);
        self.agent_tail = Some((index, text.len(), after));
        if flipped {
            self.replace(index, out);
        } else {
            out.push(ThreadEvent::Appended {
                index,
                text: fragment,
            });
        }
    }

    /// Whether a user chunk now may be the echo of a prompt: a turn runs
    /// and no history is being replayed.
    fn echo_expected(&self) -> bool {
        self.state == TurnState::Running && !self.replaying
    }

    /// Whether `update` is a user chunk this thread will not show because
    /// it echoes the running turn's prompt (a kept transcript skips it
    /// too: the prompt is kept as sent).
    pub fn is_prompt_echo(&self, update: &Value) -> bool {
        let is_user =
            update.get("sessionUpdate").and_then(Value::as_str) == Some("user_message_chunk");
        if !is_user || !self.echo_expected() {
            return false;
        }
        let text = super::update::field(update, "content")
            .map(super::update::content_block_text)
            .unwrap_or_default();
        !text.is_empty() && self.echoes.is_echo(&text)
    }

    fn plan(&mut self, items: Vec<PlanItem>, out: &mut Vec<ThreadEvent>) {
        // One plan block per turn, replaced in place on every update of
        // that turn; earlier turns keep theirs as they ended.
        let from = self.turn_start.max(self.session_start);
        if let Some(index) = self.entries[from..]
            .iter()
            .rposition(|e| matches!(e, Entry::Plan { .. }))
            .map(|i| i + from)
        {
            self.entries[index] = Entry::Plan { items };
            self.replace(index, out);
        } else {
            self.start_reply(out);
            self.push(Entry::Plan { items }, out);
        }
    }
}

fn notice_entry(level: NoticeLevel, text: String) -> Entry {
    Entry::Notice { level, text }
}
