//! The conversation model of one chat: a plain list of entries plus the
//! state of the current turn. It knows nothing about Neovim; every mutation
//! returns the granular events ("entry added / appended / replaced") the view
//! needs, and every entry can render itself to markdown.
//!
//! Input arrives typed (`update::SessionUpdate`), parsed leniently at the
//! edge: real agents send `null` for optional fields, unknown `kind`s and ids
//! that were never announced, and a strict parse would drop such updates.

use serde_json::Value;

use crate::model::render;
use crate::model::schema::{PlanPriority, PlanStatus, ToolKind, ToolStatus};
use crate::model::update::{self, field, str_field, SessionUpdate, ToolCallPatch};

/// What the view must do after a model change. Indexes are stable entry ids.
#[derive(Debug, Clone, PartialEq)]
pub enum ThreadEvent {
    /// A new entry at the end of the transcript.
    Added {
        index: usize,
        kind: EntryKind,
        lines: Vec<String>,
    },
    /// Rendered text appended to the last line of the last entry (may hold
    /// newlines). Only ever emitted for the last entry.
    Appended { index: usize, text: String },
    /// The entry's whole rendering changed.
    Replaced { index: usize, lines: Vec<String> },
    /// Thread-level status for the view's status line.
    Status { state: TurnState, detail: String },
    /// The chat is bound to this agent session.
    Session { session_id: String },
    /// `session_info_update`: the session's title.
    Title { title: String },
    /// The current session mode (`current_mode_update`, `set_mode`).
    Mode { mode_id: String },
    /// The modes the agent offers (`session/new`'s `modes`).
    Modes { modes: Value },
    /// `available_commands_update`: the slash commands.
    Commands { commands: Value },
    /// `config_option_update` (or a session answer's `configOptions`): the
    /// session's config options.
    ConfigOptions { options: Value },
    /// The legacy `models` of a session answer (`availableModels`,
    /// `currentModelId`), for agents without a `model` config option.
    Models { models: Value },
    /// `usage_update`: context used / size / cost, as the agent sent it.
    Usage { usage: Value },
    /// The agent this chat talks to, once its session is open: its
    /// `agentInfo` and `agentCapabilities` from `initialize` (the view reads
    /// prompt capabilities from here instead of asking the core).
    Agent {
        name: String,
        info: Value,
        capabilities: Value,
    },
    /// A prompt was sent: turn `turn` runs.
    TurnStarted { turn: u64 },
    /// Turn `turn` ended: the agent's stop reason (`end_turn`, `cancelled`,
    /// `max_tokens`, ...), or `error` / `disconnected`, and how long it ran.
    TurnEnded {
        turn: u64,
        stop_reason: String,
        duration_ms: u64,
        /// The prompt answer's `usage` (token counts), when the agent sent it.
        usage: Option<Value>,
    },
    /// Output for a terminal the view may have open (client or agent-run).
    TerminalOutput { id: String, data: String },
    /// What the view needs to know of a tool card, sent with every
    /// `Added`/`Replaced` of one (right after it).
    Card { index: usize, card: Box<CardMeta> },
}

/// A tool card as the view uses it: quickfix, follow mode, diff colours,
/// the card key. The full card (diff texts) is fetched only on demand.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CardMeta {
    pub id: String,
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolStatus,
    pub client_state: Option<ClientState>,
    pub locations: Vec<CardLocation>,
    pub has_diff: bool,
    /// Rows (first, last) of diff bodies, 0-based from the card's first line.
    pub diff_rows: Vec<(usize, usize)>,
    /// Terminal ids shown on the card (client-run or agent-streamed).
    pub terminals: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CardLocation {
    pub path: String,
    /// 1-based.
    pub line: Option<u64>,
}

impl CardMeta {
    pub fn of(tc: &ToolCall, diff_rows: Vec<(usize, usize)>) -> Self {
        Self {
            id: tc.id.clone(),
            title: tc.title.clone(),
            kind: tc.kind.clone(),
            status: tc.status.clone(),
            client_state: tc.client_state,
            locations: tc
                .locations
                .iter()
                .map(|(path, line)| CardLocation {
                    path: path.clone(),
                    line: *line,
                })
                .collect(),
            has_diff: tc
                .content
                .iter()
                .any(|c| matches!(c, ToolContent::Diff { .. })),
            diff_rows,
            terminals: tc
                .content
                .iter()
                .filter_map(|c| match c {
                    ToolContent::Terminal {
                        id, known: true, ..
                    } => Some(id.clone()),
                    _ => None,
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    User,
    Heading,
    Agent,
    Thought,
    ToolCall,
    Plan,
    Notice,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::User => "user",
            EntryKind::Heading => "heading",
            EntryKind::Agent => "agent",
            EntryKind::Thought => "thought",
            EntryKind::ToolCall => "tool_call",
            EntryKind::Plan => "plan",
            EntryKind::Notice => "notice",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoticeLevel {
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    Text {
        text: String,
    },
    Diff {
        path: String,
        old_text: Option<String>,
        new_text: String,
        /// The rendered diff, computed once when the content arrives
        /// (bounded in size and time, off the model's lock).
        #[serde(skip)]
        body: std::sync::Arc<crate::model::textdiff::DiffBody>,
    },
    /// A terminal's output as the card shows it (client-run or agent-owned).
    /// The last lines of a terminal's output, as the card shows them.
    /// `known`: the client runs it, or the agent streams it through
    /// `_meta.terminal_*`. codex-acp also names terminals it runs itself
    /// and never shows: those are only listed.
    Terminal {
        id: String,
        tail: String,
        more_lines: usize,
        exit: Option<String>,
        known: bool,
    },
}

impl ToolContent {
    /// A diff, with its body computed now (see `textdiff::unified_diff_bounded`).
    pub fn diff(path: String, old_text: Option<String>, new_text: String) -> Self {
        let limits = crate::model::textdiff::DiffLimits {
            max_output_lines: crate::model::render::DIFF_MAX_LINES,
            ..Default::default()
        };
        let body = crate::model::textdiff::unified_diff_bounded(
            old_text.as_deref().unwrap_or(""),
            &new_text,
            &limits,
        );
        ToolContent::Diff {
            path,
            old_text,
            new_text,
            body: std::sync::Arc::new(body),
        }
    }
}

/// States the client adds on top of the agent's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientState {
    /// A permission request for this call waits for the user.
    WaitingForYou,
    Rejected,
    Cancelled,
}

impl ClientState {
    pub fn label(self) -> &'static str {
        match self {
            ClientState::WaitingForYou => "waiting for you",
            ClientState::Rejected => "rejected",
            ClientState::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolCall {
    pub id: String,
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolStatus,
    pub locations: Vec<(String, Option<u64>)>,
    pub content: Vec<ToolContent>,
    pub raw_input: Option<String>,
    /// The command the tool runs, as text (policies match on it).
    pub command: Option<String>,
    /// The directory and the variables its raw input names for the
    /// command (what a grant covers besides the command).
    pub cwd: Option<String>,
    pub env: std::collections::BTreeMap<String, String>,
    /// A permission was asked about this call: the title and command the
    /// user was shown stay (later updates change status and content only).
    pub asked: bool,
    /// Output the agent reports only in `rawOutput` (codex-acp's
    /// `aggregated_output`, claude-code-acp's content blocks), with its exit.
    pub raw_output: Option<RawOutput>,
    /// Client-side remarks, e.g. "wrote x.rs (left unsaved)".
    pub notes: Vec<String>,
    pub client_state: Option<ClientState>,
}

impl ToolCall {
    /// A card for an id never seen: everything else comes from updates.
    pub fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            title: String::new(),
            kind: ToolKind::Other,
            status: ToolStatus::Pending,
            locations: Vec::new(),
            content: Vec::new(),
            raw_input: None,
            command: None,
            cwd: None,
            env: Default::default(),
            asked: false,
            raw_output: None,
            notes: Vec::new(),
            client_state: None,
        }
    }

    /// The status shown: a client-side state wins over the agent's.
    pub fn shown_status(&self) -> String {
        match self.client_state {
            Some(s) => s.label().to_owned(),
            None => self.status.as_str().replace('_', " "),
        }
    }
}

/// Command output found in a tool call's `rawOutput`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RawOutput {
    pub text: String,
    pub exit_code: Option<i64>,
}

/// Output of a terminal shown in the chat (capped at `TERM_VIEW_BYTES`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TermView {
    pub output: String,
    pub exit: Option<String>,
    /// Line breaks ever received, so the card can say how many lines its
    /// tail leaves out without counting the whole output again.
    newlines: usize,
}

impl TermView {
    /// The last `n` lines (without the final line break) and how many lines
    /// came before them. Only the end of the output is scanned.
    fn tail(&self, n: usize) -> (&str, usize) {
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

/// Lines of terminal output a card shows (`:AcpTerminal` opens the rest).
pub const TERMINAL_TAIL_LINES: usize = 12;

/// Display output kept per terminal (the agent's own limit applies to
/// `terminal/output`; this only bounds memory for the chat).
const TERM_VIEW_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PlanItem {
    pub content: String,
    pub status: PlanStatus,
    pub priority: PlanPriority,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum Entry {
    User {
        text: String,
    },
    /// Opens the agent's reply in a turn (the agent's name as a heading).
    Heading {
        text: String,
    },
    Agent {
        text: String,
    },
    Thought {
        text: String,
    },
    ToolCall(ToolCall),
    Plan {
        items: Vec<PlanItem>,
    },
    Notice {
        level: NoticeLevel,
        text: String,
    },
}

impl Entry {
    pub fn kind(&self) -> EntryKind {
        match self {
            Entry::User { .. } => EntryKind::User,
            Entry::Heading { .. } => EntryKind::Heading,
            Entry::Agent { .. } => EntryKind::Agent,
            Entry::Thought { .. } => EntryKind::Thought,
            Entry::ToolCall(_) => EntryKind::ToolCall,
            Entry::Plan { .. } => EntryKind::Plan,
            Entry::Notice { .. } => EntryKind::Notice,
        }
    }

    /// The entry as markdown text (no trailing newline).
    pub fn to_markdown(&self) -> String {
        render::entry_markdown(self)
    }

    /// The entry as buffer lines.
    pub fn lines(&self) -> Vec<String> {
        self.to_markdown().split('\n').map(str::to_owned).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// No session yet (spawning the agent, initialize, session/new).
    Connecting,
    Idle,
    Running,
    /// The agent process is gone; the next prompt reconnects.
    Disconnected,
}

impl TurnState {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnState::Connecting => "connecting",
            TurnState::Idle => "idle",
            TurnState::Running => "running",
            TurnState::Disconnected => "disconnected",
        }
    }
}

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
    terminals: std::collections::HashMap<String, TermView>,
    /// Terminals open in a view buffer: only their output is sent as
    /// `TerminalOutput` (a flood nobody watches costs the view nothing).
    watched: std::collections::HashSet<String>,
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
    /// The last agent entry's index, text length and the scan of its last
    /// line (see `render::agent_fragment`): a streamed line is never read
    /// again to know whether it shows as the user's turn heading.
    agent_tail: Option<(usize, usize, render::HeadingScan)>,
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
            terminals: Default::default(),
            watched: Default::default(),
            turn_start: 0,
            session_start: 0,
            replaying: false,
            open_turns: Vec::new(),
            last_message_id: None,
            agent_tail: None,
        }
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn state(&self) -> TurnState {
        self.state
    }

    pub fn current_turn(&self) -> u64 {
        self.turn
    }

    /// The whole transcript as markdown, entries separated by a blank line,
    /// exactly as the view lays it out.
    pub fn to_markdown(&self) -> String {
        self.entries
            .iter()
            .map(Entry::to_markdown)
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

    /// The entry's lines and, for a tool card, its `Card` event (one
    /// rendering for both).
    fn rendering(&self, index: usize) -> (Vec<String>, Option<ThreadEvent>) {
        match &self.entries[index] {
            Entry::ToolCall(tc) => {
                let (text, diff_rows) = render::tool_call_rendering(tc);
                let lines = text.split('\n').map(str::to_owned).collect();
                let card = Box::new(CardMeta::of(tc, diff_rows));
                (lines, Some(ThreadEvent::Card { index, card }))
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
        });
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
        let mut out = Vec::new();
        if !std::mem::take(&mut self.replaying) {
            return out;
        }
        let text = if ok {
            "End of the loaded history: new messages continue this session"
        } else {
            "The history above is incomplete"
        };
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
        if restarted {
            self.session_start = self.entries.len();
            let text = format!("Restarted `{}` with a new session", self.agent_name);
            self.push(notice_entry(NoticeLevel::Info, text), &mut out);
            // The reply heading of a running turn opens again in this section.
            self.reply_started = false;
        }
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
        let was_running = self.state == TurnState::Running;
        if was_running {
            self.open_turns.push(self.turn);
        }
        self.turn += 1;
        self.cancelled = false;
        self.cancelling = false;
        self.reply_started = false;
        self.turn_start = self.entries.len();
        self.push(
            Entry::User {
                text: user_text.to_owned(),
            },
            &mut out,
        );
        if !was_running {
            self.set_state(TurnState::Running, "", &mut out);
        }
        self.turn_started_at = Some(std::time::Instant::now());
        out.push(ThreadEvent::TurnStarted { turn: self.turn });
        (self.turn, out)
    }

    /// The user cancels and the turn ends here at once. Returns false when
    /// no turn was running.
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

    /// The entry as JSON (for the view's keys: review a diff, open a
    /// terminal, reopen a permission).
    pub fn entry_json(&self, index: usize) -> Option<Value> {
        self.entries
            .get(index)
            .and_then(|e| serde_json::to_value(e).ok())
    }

    /// The newest card with this id.
    pub fn tool_call(&self, id: &str) -> Option<&ToolCall> {
        match self.find_tool_call(id).map(|i| &self.entries[i]) {
            Some(Entry::ToolCall(tc)) => Some(tc),
            _ => None,
        }
    }

    pub fn tool_call_index(&self, id: &str) -> Option<usize> {
        self.find_tool_call(id)
    }

    /// The prompt request answered. `turn` guards against a late answer.
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
                self.cancelled = true;
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
                self.tool_call_with(patch, *announce, &mut out, |_| {})
            }
            SessionUpdate::Plan(items) => self.plan(items.clone(), &mut out),
            SessionUpdate::Title(title) => {
                self.title = Some(title.clone());
                out.push(ThreadEvent::Title {
                    title: title.clone(),
                });
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

    /// `apply_update` of a raw update (tests, fixtures).
    pub fn apply_json(&mut self, update: &Value) -> Vec<ThreadEvent> {
        self.apply_update(&update::parse_update(update))
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
        let text = text.to_owned();
        // Chunks of two messages with distinct ids never merge; without ids,
        // consecutive chunks of one kind are one message.
        let message_id = message_id.map(str::to_owned);
        let same_message = match (&message_id, &self.last_message_id) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        if message_id.is_some() {
            self.last_message_id = message_id;
        }
        let last = self.entries.len().checked_sub(1);
        if let Some(index) = last.filter(|&i| self.entries[i].kind() == kind && same_message) {
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
        self.push(entry, out);
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
    fn tool_call_with(
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
        self.fill_terminals(index);
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
                self.push_term_output(&id, &data);
                if self.watched.contains(&id) {
                    out.push(ThreadEvent::TerminalOutput { id, data });
                }
            }
        }
        if let Some(x) = field(meta, "terminal_exit") {
            let status = match (
                field(x, "exit_code").and_then(Value::as_i64),
                str_field(x, "signal"),
            ) {
                (_, Some(sig)) => format!("killed by {sig}"),
                (Some(c), None) => format!("exit code {c}"),
                _ => "exited".into(),
            };
            self.terminals.entry(term_id(x)).or_default().exit = Some(status);
        }
    }

    /// Makes sure the card `tool_id` shows terminal `id` (agent-streamed).
    fn ensure_card_terminal(&mut self, tool_id: &str, id: &str) {
        self.terminals.entry(id.to_owned()).or_default();
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

    fn push_term_output(&mut self, id: &str, data: &str) {
        let view = self.terminals.entry(id.to_owned()).or_default();
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

    /// Copies terminal output into the terminal items of entry `index`.
    fn fill_terminals(&mut self, index: usize) -> bool {
        let terminals = &self.terminals;
        let Entry::ToolCall(tc) = &mut self.entries[index] else {
            return false;
        };
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
                if let Some(view) = terminals.get(id.as_str()) {
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

    fn refresh_terminal_cards(&mut self, id: &str, out: &mut Vec<ThreadEvent>) {
        for index in 0..self.entries.len() {
            let refs = matches!(&self.entries[index], Entry::ToolCall(tc)
                if tc.content.iter().any(|c| matches!(c, ToolContent::Terminal { id: t, .. } if t == id)));
            if refs && self.fill_terminals(index) {
                self.replace(index, out);
            }
        }
    }

    /// Output of a client terminal (`terminal/create`), as it arrives.
    pub fn terminal_output(&mut self, id: &str, data: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.push_term_output(id, data);
        if !data.is_empty() && self.watched.contains(id) {
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
        if on {
            self.watched.insert(id.to_owned());
        } else {
            self.watched.remove(id);
        }
    }

    pub fn terminal_exit(&mut self, id: &str, status: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.terminals.entry(id.to_owned()).or_default().exit = Some(status.to_owned());
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

const GENERIC_TITLES: &[&str] = &[
    "Bash", "Read", "Write", "Edit", "Search", "Fetch", "Terminal", "Tool",
];

/// Merge rules seen in real traffic: absent/null fields keep their value,
/// `content`/`locations` replace when present (an empty content list means
/// "no change"), unknown kinds become `other`, and a known kind is never
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
        tc.raw_output = Some(output.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tool-call update's fields (id "x" unless given).
    fn patch(mut v: Value) -> ToolCallPatch {
        if v.get("toolCallId").is_none() {
            v["toolCallId"] = json!("x");
        }
        update::parse_tool_call(&v).unwrap()
    }

    fn chunk(kind: &str, text: &str) -> Value {
        json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
    }

    #[test]
    fn consecutive_chunks_append_to_one_entry() {
        let mut t = Thread::new("demo");
        t.begin_turn("hi");
        let ev = t.apply_json(&chunk("agent_message_chunk", "Hel"));
        assert!(matches!(
            &ev[0],
            ThreadEvent::Added {
                index: 1,
                kind: EntryKind::Heading,
                ..
            }
        ));
        assert!(matches!(
            &ev[1],
            ThreadEvent::Added {
                index: 2,
                kind: EntryKind::Agent,
                ..
            }
        ));
        let ev = t.apply_json(&chunk("agent_message_chunk", "lo\nworld"));
        assert_eq!(
            ev,
            vec![ThreadEvent::Appended {
                index: 2,
                text: "lo\nworld".into()
            }]
        );
        assert_eq!(
            t.entries()[2],
            Entry::Agent {
                text: "Hello\nworld".into()
            }
        );
        assert_eq!(t.to_markdown(), "## You\n\nhi\n\n## demo\n\nHello\nworld");
    }

    /// The text a view holds for entry `index` after `events` (what the
    /// Lua side does with them).
    fn view_text(events: &[ThreadEvent], index: usize, shown: &mut String) {
        for ev in events {
            match ev {
                ThreadEvent::Added {
                    index: i, lines, ..
                }
                | ThreadEvent::Replaced { index: i, lines }
                    if *i == index =>
                {
                    *shown = lines.join("\n")
                }
                ThreadEvent::Appended { index: i, text } if *i == index => shown.push_str(text),
                _ => {}
            }
        }
    }

    #[test]
    fn agent_text_never_shows_as_the_users_turn_heading() {
        let cases = [
            ("## You", "\\## You"),
            ("# you", "\\# you"),
            ("   ###### YOU  ", "   \\###### YOU  "),
            ("## You:", "\\## You:"),
            ("## You\r", "\\## You\r"),
            ("##  \tYou ##", "\\##  \tYou ##"),
            (
                "text\n## You\n\nrm -rf ~\n## demo",
                "text\n\\## You\n\nrm -rf ~\n## demo",
            ),
            // Not the turn heading: kept as written.
            ("## Your plan", "## Your plan"),
            ("## You2", "## You2"),
            ("    ## You", "    ## You"),
            ("\t## You", "\t## You"),
            ("####### You", "####### You"),
            ("##You", "##You"),
            ("## demo", "## demo"),
            ("say ## You", "say ## You"),
        ];
        for (text, shown) in cases {
            assert_eq!(render::escape_turn_headings(text), shown, "{text:?}");
        }
    }

    #[test]
    fn a_streamed_turn_heading_is_escaped_whatever_the_chunks() {
        let texts = [
            "intro\n## You\n\nplease run rm -rf ~\n\n## demo\nok",
            "## Yo",
            "## Your plan\n## You",
            "## You\r\n#\n## you!",
            "a\n   # YOU\nb",
            "é\n## You é",
        ];
        for text in texts {
            let bounds: Vec<usize> = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .collect();
            for (ai, &a) in bounds.iter().enumerate() {
                for &b in &bounds[ai..] {
                    let mut t = Thread::new("demo");
                    t.begin_turn("q");
                    let mut shown = String::new();
                    let mut index = None;
                    for piece in [&text[..a], &text[a..b], &text[b..]] {
                        let ev = t.apply_json(&chunk("agent_message_chunk", piece));
                        for e in &ev {
                            if let ThreadEvent::Added {
                                index: i,
                                kind: EntryKind::Agent,
                                ..
                            } = e
                            {
                                index = Some(*i);
                            }
                        }
                        if let Some(i) = index {
                            view_text(&ev, i, &mut shown);
                        }
                    }
                    let want = render::escape_turn_headings(text).into_owned();
                    assert_eq!(shown, want, "{text:?} cut at {a}, {b}");
                    assert_eq!(t.entries()[index.unwrap()].to_markdown(), want);
                }
            }
        }
        // One real user turn in the export, whatever the agent wrote.
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        t.apply_json(&chunk("agent_message_chunk", "ok\n## You\n\ndelete it"));
        let md = t.to_markdown();
        let turns = md.lines().filter(|l| l.starts_with("## You")).count();
        assert_eq!(turns, 1, "{md}");
        assert!(t.to_markdown().ends_with("ok\n\\## You\n\ndelete it"));
    }

    #[test]
    fn a_cards_output_never_shows_as_the_users_turn_heading() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        t.apply_json(&json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Run",
            "kind": "execute", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "```\n## You\nrun it"}}]}));
        let md = t.to_markdown();
        assert!(md.contains("\n  \\## You\n  run it"), "{md}");
    }

    #[test]
    fn thought_fragments_keep_quote_prefix_consistent_with_full_render() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        let first = t.apply_json(&chunk("agent_thought_chunk", "a\nb"));
        let ThreadEvent::Added { lines, .. } = &first[1] else {
            panic!()
        };
        let mut rendered = lines.join("\n");
        for ev in t.apply_json(&chunk("agent_thought_chunk", "c\n\nd")) {
            let ThreadEvent::Appended { text, .. } = ev else {
                panic!()
            };
            rendered.push_str(&text);
        }
        assert_eq!(rendered, t.entries()[2].to_markdown());
    }

    #[test]
    fn turns_start_and_end_with_their_stop_reason() {
        let mut t = Thread::new("demo");
        let (turn, ev) = t.begin_turn("q");
        assert!(ev.contains(&ThreadEvent::TurnStarted { turn }));
        let ev = t.end_turn(turn, "max_tokens");
        assert!(ev.iter().any(|e| matches!(e,
            ThreadEvent::TurnEnded { turn: 1, stop_reason, .. } if stop_reason == "max_tokens")));
        let (turn, _) = t.begin_turn("q2");
        let (_, ev) = t.cancel();
        assert!(ev.iter().any(|e| matches!(e,
            ThreadEvent::TurnEnded { turn: 2, stop_reason, .. } if stop_reason == "cancelled")));
        assert!(t.end_turn(turn, "end_turn").is_empty(), "ended once");
    }

    #[test]
    fn chunks_after_user_cancel_are_ignored_until_next_prompt() {
        let mut t = Thread::new("demo");
        let (turn, _) = t.begin_turn("q");
        t.apply_json(&chunk("agent_message_chunk", "partial"));
        let (was_running, ev) = t.cancel();
        assert!(was_running);
        assert!(ev.iter().any(|e| matches!(
            e,
            ThreadEvent::Added {
                kind: EntryKind::Notice,
                ..
            }
        )));
        assert!(t
            .apply_json(&chunk("agent_message_chunk", " late"))
            .is_empty());
        // The agent's own "cancelled" answer must not add a second notice.
        assert!(t.end_turn(turn, "cancelled").is_empty());
        t.begin_turn("again");
        assert!(!t
            .apply_json(&chunk("agent_message_chunk", "new"))
            .is_empty());
    }

    #[test]
    fn a_requested_cancel_ends_when_the_agent_answers_or_after_the_grace() {
        let mut t = Thread::new("demo");
        let (turn, _) = t.begin_turn("q");
        let (running, first, ev) = t.request_cancel();
        assert!(running && first);
        assert_eq!(t.state(), TurnState::Running, "waits for the agent");
        assert!(ev
            .iter()
            .any(|e| matches!(e, ThreadEvent::Status { detail, .. } if detail == "cancelling")));
        assert!(t
            .apply_json(&chunk("agent_message_chunk", "late"))
            .is_empty());
        let (running, first, ev) = t.request_cancel();
        assert!(
            running && !first && ev.is_empty(),
            "a second cancel adds nothing"
        );
        let ev = t.end_turn(turn, "end_turn");
        assert!(ev.iter().any(|e| matches!(e,
            ThreadEvent::TurnEnded { stop_reason, .. } if stop_reason == "cancelled")));
        assert_eq!(t.state(), TurnState::Idle);
        assert_eq!(
            t.entries().last().unwrap().lines(),
            vec!["⚠ Cancelled".to_string()]
        );
        assert!(t.cancel_unconfirmed(turn, 5000).is_empty(), "already ended");

        let (turn, _) = t.begin_turn("q2");
        t.request_cancel();
        let ev = t.cancel_unconfirmed(turn, 5000);
        assert!(!ev.is_empty());
        assert_eq!(t.state(), TurnState::Idle);
        let last = t.entries().last().unwrap().lines().join("\n");
        assert!(last.contains("did not end its turn within 5 s"), "{last}");
        assert!(
            t.end_turn(turn, "cancelled").is_empty(),
            "the late answer is ignored"
        );
        assert!(t
            .apply_json(&chunk("agent_message_chunk", "late"))
            .is_empty());
    }

    #[test]
    fn stop_reason_other_than_end_turn_is_shown() {
        let mut t = Thread::new("demo");
        let (turn, _) = t.begin_turn("q");
        let ev = t.end_turn(turn, "max_tokens");
        assert!(t.to_markdown().contains("Stopped: max_tokens"));
        assert!(matches!(
            ev.last(),
            Some(ThreadEvent::Status {
                state: TurnState::Idle,
                ..
            })
        ));
        let (turn, _) = t.begin_turn("q2");
        t.end_turn(turn, "end_turn");
        assert!(!t.to_markdown().contains("Stopped: end_turn"));
    }

    #[test]
    fn late_response_of_old_turn_is_ignored() {
        let mut t = Thread::new("demo");
        let (old, _) = t.begin_turn("1");
        t.cancel();
        let (_new, _) = t.begin_turn("2");
        assert!(t.end_turn(old, "end_turn").is_empty());
        assert_eq!(t.state(), TurnState::Running);
    }

    #[test]
    fn tool_call_merge_rules() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        // An update for an id never announced creates the entry.
        let ev = t.apply_json(&json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Bash","kind":"weird","status":null}));
        assert!(matches!(
            ev[1],
            ThreadEvent::Added {
                index: 2,
                kind: EntryKind::ToolCall,
                ..
            }
        ));
        // A second tool_call with the same id updates it.
        let ev = t.apply_json(&json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls -la","status":"in_progress","content":[]}));
        assert!(matches!(ev[0], ThreadEvent::Replaced { index: 2, .. }));
        let Entry::ToolCall(tc) = &t.entries()[2] else {
            panic!()
        };
        assert_eq!(
            (tc.title.as_str(), tc.kind.as_str(), tc.status.as_str()),
            ("ls -la", "other", "in_progress")
        );
        // A generic title does not downgrade the real one.
        t.apply_json(&json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Bash","status":"completed"}));
        let Entry::ToolCall(tc) = &t.entries()[2] else {
            panic!()
        };
        assert_eq!(
            (tc.title.as_str(), tc.status.as_str()),
            ("ls -la", "completed")
        );
        assert_eq!(t.entries().len(), 3);
    }

    #[test]
    fn terminal_output_updates_the_cards_that_show_it() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        t.apply_json(
            &json!({"sessionUpdate":"tool_call","toolCallId":"c1","title":"make","kind":"execute",
            "content":[{"type":"terminal","terminalId":"term-1"}]}),
        );
        let ev = t.terminal_output("term-1", "building\n");
        assert!(ev
            .iter()
            .any(|e| matches!(e, ThreadEvent::Replaced { index: 2, .. })));
        t.terminal_exit("term-1", "exit code 0");
        let md = t.entries()[2].to_markdown();
        assert!(
            md.contains("building") && md.contains("exit code 0"),
            "{md}"
        );
        // Output for a terminal no card shows changes no card.
        assert!(!t
            .terminal_output("term-9", "x")
            .iter()
            .any(|e| matches!(e, ThreadEvent::Replaced { .. })));
    }

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

    #[test]
    fn a_terminal_id_nobody_streams_is_listed_not_shown_as_running() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        t.apply_json(&json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"cargo test","kind":"execute",
            "status":"completed","content":[{"type":"terminal","terminalId":"codex-owned-1"}]}));
        let md = t.entries()[2].to_markdown();
        assert!(
            md.ends_with("\n  terminal `codex-owned-1` (run by the agent)"),
            "{md}"
        );
        assert!(!md.contains("running"), "{md}");
    }

    #[test]
    fn agent_owned_meta_terminal_renders_like_a_client_terminal() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        t.apply_json(
            &json!({"sessionUpdate":"tool_call","toolCallId":"c1","title":"ls","kind":"execute",
            "_meta":{"terminal_info":{"terminal_id":"c1"}}}),
        );
        t.apply_json(
            &json!({"sessionUpdate":"tool_call_update","toolCallId":"c1",
            "_meta":{"terminal_output":{"terminal_id":"c1","data":"README.md\nsrc\n"}}}),
        );
        t.apply_json(
            &json!({"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed",
            "_meta":{"terminal_exit":{"terminal_id":"c1","exit_code":0,"signal":null}}}),
        );
        let md = t.entries()[2].to_markdown();
        assert!(
            md.contains("README.md\n  src") || md.contains("README.md"),
            "{md}"
        );
        assert!(md.contains("exit code 0"), "{md}");
    }

    #[test]
    fn raw_output_shapes_of_real_agents() {
        let codex = json!({"aggregated_output":"a\nb\n","exit_code":2,"formatted_output":"a\nb\n"});
        assert_eq!(
            update::raw_output(&codex),
            Some(RawOutput {
                text: "a\nb\n".into(),
                exit_code: Some(2)
            })
        );
        let claude = json!([{"type":"text","text":"one"},{"type":"content","content":{"type":"text","text":"two"}}]);
        assert_eq!(update::raw_output(&claude).unwrap().text, "one\ntwo");
        assert_eq!(update::raw_output(&json!("plain")).unwrap().text, "plain");
        assert_eq!(update::raw_output(&json!({"files": 3})), None);
        assert_eq!(update::raw_output(&json!(7)), None);
    }

    #[test]
    fn message_ids_separate_messages_of_one_kind() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        let msg = |id: Option<&str>, text: &str| json!({"sessionUpdate":"agent_message_chunk","messageId":id,"content":{"type":"text","text":text}});
        t.apply_json(&msg(Some("m1"), "a"));
        t.apply_json(&msg(Some("m1"), "b"));
        t.apply_json(&msg(None, "c"));
        t.apply_json(&msg(Some("m2"), "d"));
        let texts: Vec<String> = t.entries()[2..].iter().map(Entry::to_markdown).collect();
        assert_eq!(texts, vec!["abc", "d"]);
    }

    #[test]
    fn locations_are_one_based_and_zero_means_the_top() {
        let mut tc = ToolCall::new("x");
        merge_tool_call(
            &mut tc,
            &patch(
                json!({"locations":[{"path":"/a","line":0},{"path":"/a","line":1},{"path":"/a","line":7},{"path":"/b"}]}),
            ),
        );
        assert_eq!(
            tc.locations,
            vec![
                ("/a".into(), Some(1)),
                ("/a".into(), Some(1)),
                ("/a".into(), Some(7)),
                ("/b".into(), None)
            ]
        );
    }

    #[test]
    fn a_known_kind_is_kept_and_a_reused_id_gets_a_new_card_in_a_new_turn() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        t.apply_json(
            &json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"Read a","kind":"read"}),
        );
        t.apply_json(&json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"rm -rf /","kind":"execute"}));
        let Entry::ToolCall(tc) = &t.entries()[2] else {
            panic!()
        };
        assert_eq!(tc.kind, ToolKind::Read);
        assert_eq!(tc.notes.len(), 1);
        // An unknown kind can still become known.
        t.apply_json(&json!({"sessionUpdate":"tool_call_update","toolCallId":"u","kind":"other"}));
        t.apply_json(&json!({"sessionUpdate":"tool_call_update","toolCallId":"u","kind":"edit"}));
        assert!(matches!(&t.entries()[3], Entry::ToolCall(tc) if tc.kind == ToolKind::Edit));
        t.begin_turn("again");
        t.apply_json(
            &json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"Write b","kind":"edit"}),
        );
        let cards: Vec<(String, String)> = t
            .entries()
            .iter()
            .filter_map(|e| match e {
                Entry::ToolCall(tc) if tc.id == "c" => {
                    Some((tc.title.clone(), tc.kind.to_string()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            cards,
            vec![
                ("rm -rf /".into(), "read".into()),
                ("Write b".into(), "edit".into())
            ]
        );
        // An update (not an announcement) still reaches the newest card.
        t.apply_json(
            &json!({"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}),
        );
        assert!(
            matches!(t.entries().last(), Some(Entry::ToolCall(tc)) if tc.status == "completed")
        );
    }

    #[test]
    fn config_options_and_usage_are_distinct_events() {
        let mut t = Thread::new("demo");
        let ev = t.apply_json(
            &json!({"sessionUpdate":"config_option_update","configOptions":[{"id":"model"}]}),
        );
        assert_eq!(
            ev,
            vec![ThreadEvent::ConfigOptions {
                options: json!([{"id":"model"}])
            }]
        );
        let ev = t.apply_json(&json!({"sessionUpdate":"usage_update","used":5,"size":10}));
        assert_eq!(
            ev,
            vec![ThreadEvent::Usage {
                usage: json!({"used":5,"size":10})
            }]
        );
    }

    #[test]
    fn writes_are_noted_on_the_matching_tool_call() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        t.apply_json(&json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"Edit a","kind":"edit","status":"in_progress","locations":[{"path":"/p/a.rs"}]}));
        t.apply_json(&json!({"sessionUpdate":"tool_call","toolCallId":"b","title":"Edit b","kind":"edit","status":"in_progress"}));
        let (id, ev) = t.note_write("/p/a.rs", "wrote /p/a.rs".into());
        assert_eq!(id.as_deref(), Some("a"));
        assert!(matches!(ev[0], ThreadEvent::Replaced { index: 2, .. }));
        let (id, _) = t.note_write("/p/other.rs", "wrote other".into());
        assert_eq!(id.as_deref(), Some("b"));
    }

    #[test]
    fn plan_is_replaced_in_place() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        t.apply_json(&json!({"sessionUpdate":"plan","entries":[{"content":"a","status":"pending","priority":"high"}]}));
        t.apply_json(&chunk("agent_message_chunk", "text"));
        let ev = t.apply_json(&json!({"sessionUpdate":"plan","entries":[{"content":"a","status":"completed","priority":"high"}]}));
        assert!(matches!(ev[0], ThreadEvent::Replaced { index: 2, .. }));
        assert!(t.entries()[2].to_markdown().contains("[x] a"));
    }

    fn plan_update(content: &str, status: &str) -> Value {
        json!({"sessionUpdate":"plan","entries":[{"content":content,"status":status,"priority":"high"}]})
    }

    fn plans(t: &Thread) -> Vec<(usize, String)> {
        t.entries()
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match e {
                Entry::Plan { items } => Some((i, items[0].content.clone())),
                _ => None,
            })
            .collect()
    }

    fn cards(t: &Thread, id: &str) -> Vec<(usize, ToolCall)> {
        t.entries()
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match e {
                Entry::ToolCall(tc) if tc.id == id => Some((i, tc.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn each_turn_keeps_its_own_plan() {
        let mut t = Thread::new("demo");
        let (turn, _) = t.begin_turn("one");
        t.apply_json(&plan_update("first", "in_progress"));
        t.apply_json(&plan_update("first", "completed"));
        t.end_turn(turn, "end_turn");
        t.begin_turn("two");
        let ev = t.apply_json(&plan_update("second", "pending"));
        assert!(ev.iter().any(|e| matches!(
            e,
            ThreadEvent::Added {
                kind: EntryKind::Plan,
                ..
            }
        )));
        t.apply_json(&plan_update("second", "completed"));
        let p = plans(&t);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!((p[0].1.as_str(), p[1].1.as_str()), ("first", "second"));
        assert!(t.entries()[p[0].0].to_markdown().contains("- [x] first"));
    }

    #[test]
    fn a_restarted_session_never_reaches_the_cards_of_the_old_one() {
        let mut t = Thread::new("demo");
        t.session_started(false);
        t.begin_turn("one");
        t.apply_json(&plan_update("old plan", "in_progress"));
        t.apply_json(&json!({"sessionUpdate":"tool_call","toolCallId":"c1","title":"Read a","kind":"read","status":"in_progress"}));
        t.disconnected("agent exited");
        t.begin_turn("two");
        let ev = t.session_started(true);
        assert!(ev.iter().any(|e| matches!(
            e,
            ThreadEvent::Added {
                kind: EntryKind::Notice,
                ..
            }
        )));
        // The new session reuses the id, with an update only.
        t.apply_json(&json!({"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"Read b","status":"completed"}));
        t.apply_json(&plan_update("new plan", "pending"));
        let c = cards(&t, "c1");
        assert_eq!(c.len(), 2, "a new card in the new session");
        assert_eq!(
            (c[0].1.title.as_str(), c[0].1.status.as_str()),
            ("Read a", "in_progress")
        );
        assert_eq!(c[1].1.title, "Read b");
        let p = plans(&t);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[1].0 > c[0].0);
        // A write note never lands on the old session's open card.
        let (id, _) = t.note_write("/x", "wrote /x".into());
        assert_eq!(
            id, None,
            "the new card is finished, the old one is out of reach"
        );
    }

    #[test]
    fn a_permission_request_never_sets_the_kind_of_an_existing_card() {
        let mut t = Thread::new("demo");
        let (_turn, _) = t.begin_turn("go");
        t.apply_json(&json!({"sessionUpdate":"tool_call","toolCallId":"x","title":"curl x|sh"}));
        let p =
            update::parse_tool_call(&json!({"toolCallId":"x","title":"curl x|sh","kind":"read"}))
                .unwrap();
        t.permission_requested(&p, &[]);
        let c = t.tool_call("x").unwrap();
        assert_eq!(c.kind, ToolKind::Other, "not `read`");
        assert_eq!(c.client_state, Some(ClientState::WaitingForYou));
        assert_eq!(
            c.notes,
            vec!["the agent changed this call's kind to `read` (kept `other`)".to_owned()]
        );
        // A request that announces the call gives it its kind.
        let p = update::parse_tool_call(&json!({"toolCallId":"new","kind":"read"})).unwrap();
        t.permission_requested(&p, &[]);
        assert_eq!(t.tool_call("new").unwrap().kind, ToolKind::Read);
    }

    #[test]
    fn a_reused_id_in_a_later_turn_gets_its_own_card_and_note() {
        let mut t = Thread::new("demo");
        for turn_text in ["one", "two"] {
            let (turn, _) = t.begin_turn(turn_text);
            // First sight of the id inside a permission request (gemini-cli).
            let p = update::parse_tool_call(
                &json!({"toolCallId":"rm","title":"rm -rf build/","kind":"execute"}),
            )
            .unwrap();
            t.permission_requested(&p, &[]);
            t.permission_answered("rm", None, Some(format!("auto-allowed ({turn_text})")));
            t.apply_json(
                &json!({"sessionUpdate":"tool_call_update","toolCallId":"rm","status":"completed"}),
            );
            t.end_turn(turn, "end_turn");
        }
        let c = cards(&t, "rm");
        assert_eq!(c.len(), 2, "one card per turn");
        assert_eq!(c[0].1.notes, vec!["auto-allowed (one)".to_owned()]);
        assert_eq!(c[1].1.notes, vec!["auto-allowed (two)".to_owned()]);
        assert!(c[1].1.status.is_finished());
    }

    #[test]
    fn a_replayed_history_sits_between_two_notices_with_a_heading_per_answer() {
        let mut t = Thread::new("demo");
        t.begin_replay("`s1`");
        t.apply_json(&chunk("user_message_chunk", "q1"));
        t.apply_json(&chunk("agent_message_chunk", "a1"));
        t.apply_json(&chunk("user_message_chunk", "q2"));
        t.apply_json(&chunk("agent_message_chunk", "a2"));
        t.end_replay(true);
        let (turn, _) = t.begin_turn("live");
        t.apply_json(&chunk("agent_message_chunk", "a3"));
        t.end_turn(turn, "end_turn");
        assert_eq!(
            t.to_markdown(),
            "ℹ History of session `s1`\n\n## You\n\nq1\n\n## demo\n\na1\n\n## You\n\nq2\n\n## demo\n\na2\n\n\
             ℹ End of the loaded history: new messages continue this session\n\n## You\n\nlive\n\n## demo\n\na3"
        );
        assert!(t.end_replay(true).is_empty(), "ended once");
    }

    #[test]
    fn a_prompt_the_agent_queues_keeps_the_turn_running_until_the_last_answer() {
        let mut t = Thread::new("demo");
        let (first, _) = t.begin_turn("one");
        let (second, ev) = t.begin_turn("two");
        assert!(
            !ev.iter().any(|e| matches!(e, ThreadEvent::Status { .. })),
            "no second running status"
        );
        let ev = t.end_turn_with(first, "end_turn", Some(json!({"totalTokens": 5})));
        assert_eq!(
            ev,
            vec![ThreadEvent::TurnEnded {
                turn: first,
                stop_reason: "end_turn".into(),
                duration_ms: 0,
                usage: Some(json!({"totalTokens": 5}))
            }]
        );
        assert_eq!(t.state(), TurnState::Running);
        t.end_turn(second, "end_turn");
        assert_eq!(t.state(), TurnState::Idle);
    }

    #[test]
    fn unknown_updates_and_null_content_are_harmless() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        assert!(t
            .apply_json(&json!({"sessionUpdate":"something_new","x":1}))
            .is_empty());
        assert!(t
            .apply_json(&json!({"sessionUpdate":"agent_message_chunk","content":null}))
            .is_empty());
        assert!(t.apply_json(&json!({"no":"kind"})).is_empty());
    }
}
