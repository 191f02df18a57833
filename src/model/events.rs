//! The view contract of the model: what a thread tells the view after each
//! change (`ThreadEvent`), with the card metadata the view colours and
//! navigates by. The bridge carries these to the main thread unchanged.

use serde_json::Value;

use super::entries::{ClientState, EntryKind, ToolCall, ToolContent};
use super::render::{CardHeader, CardLayout, PlanLayout, StatusMark};
use super::schema::{ToolKind, ToolStatus};
use super::update::PermissionOption;

/// What the view must do after a model change. Indexes are stable entry ids.
/// Crosses to Lua as its serde form (`type` = the variant in snake_case;
/// see `bridge::lua_tables`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
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
    /// Thread-level status for the view's status line. `sign_in`: the agent
    /// refused to open a session or answer until the user signs in (ACP's
    /// "auth required", -32000); sent only when true.
    Status {
        state: TurnState,
        detail: String,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        sign_in: bool,
    },
    /// The chat is bound to this agent session.
    Session { session_id: String },
    /// `session_info_update`: the session's title (None: the agent cleared it).
    Title { title: Option<String> },
    /// `session_info_update`: the session's last activity, ISO 8601 as sent
    /// (None: the agent cleared it).
    UpdatedAt { updated_at: Option<String> },
    /// What the view colours in an agent notice or a compaction, sent with
    /// every `Added`/`Replaced` of one (right after it).
    Marks {
        index: usize,
        marks: Vec<super::render::Mark>,
    },
    /// A live `notice` of the agent (not one replayed from history), for
    /// `vim.notify` of warnings and errors; its entry comes as `Added`.
    AgentNotice {
        severity: String,
        title: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
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
        /// The agent takes `_session/steering` (a message into the running
        /// turn): `_meta.steering` of its `initialize` answer, or of its
        /// capabilities.
        steering: bool,
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
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Value>,
    },
    /// Output for a terminal the view may have open (client or agent-run).
    TerminalOutput { id: String, data: String },
    /// What the view needs to know of a tool card, sent with every
    /// `Added`/`Replaced` of one (right after it).
    Card { index: usize, card: Box<CardMeta> },
    /// Where a plan's label and running steps are, sent with every
    /// `Added`/`Replaced` of one (right after it).
    Plan { index: usize, plan: Box<PlanLayout> },
}

/// A tool card as the view uses it: quickfix, follow mode, diff colours,
/// the card key. The full card (diff texts) is fetched only on demand.
/// Empty parts are left out: a burst of a hundred cards sends 200 of
/// these, and each part is a table the main thread builds.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CardMeta {
    pub id: String,
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_state: Option<ClientState>,
    pub locations: Vec<CardLocation>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub has_diff: bool,
    /// Rows (first, last) of diff bodies, 0-based from the card's first line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff_rows: Vec<(usize, usize)>,
    /// Terminal ids shown on the card (client-run or agent-streamed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub terminals: Vec<String>,
    /// The parts of the card's first line and the tone of its status.
    pub header: CardHeader,
    /// The status words of its terminals and commands.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status_lines: Vec<StatusMark>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CardLocation {
    pub path: String,
    /// 1-based.
    pub line: Option<u64>,
}

impl CardMeta {
    /// The metadata of card `tc`, with the layout of its rendering.
    pub fn of(tc: &ToolCall, layout: CardLayout) -> Self {
        let CardLayout {
            header,
            diff_rows,
            status_lines,
        } = layout;
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
            header,
            status_lines,
        }
    }
}

/// A permission request as the view shows it (the `permission` event):
/// what the core judged, accepts and grants, each computed once here; the
/// agent's tool call comes along for display only.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PermissionAsk {
    /// The tool call it is about (its card).
    pub tool_call_id: String,
    /// The card's kind as first recorded, which the policy judged (not the
    /// one the request claims).
    pub kind: ToolKind,
    /// The card's title.
    pub title: String,
    /// What the raw input shown works on (`update::input_summary`).
    pub summary: Option<String>,
    /// The files the raw input shown names (`update::input_paths`) when
    /// the call has no locations or diffs, relative to the session's
    /// directory when inside it: the first `update::MAX_INPUT_FILES`.
    pub files: Vec<String>,
    /// How many more files it names.
    pub files_more: usize,
    /// The options the core accepts as an answer, in the agent's order.
    pub options: Vec<PermissionOption>,
    /// What allowing grants.
    pub grant: Option<Grant>,
    /// What the float shows of the call (an object), never trusted: the
    /// agent's `toolCall` with the content (diffs) and locations of the
    /// card it points to, and the card's raw input when it carries none
    /// (`session::shown`).
    pub tool_call: Value,
    /// The subagent that asks (its title), when a child session asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
}

/// What allowing a permission request grants.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Grant {
    /// An execute request, a request whose card has no kind but shows a
    /// command (Kimi's `Shell: LINE`), or the client's question before a
    /// terminal:
    /// this command may run, word for word, in this directory, with these
    /// variables (a `terminal/create` of exactly it runs without asking
    /// again in the same turn).
    Command {
        command: String,
        cwd: String,
        env: std::collections::BTreeMap<String, String>,
    },
    /// An edit, delete or move: the files its card names (its locations,
    /// then its diffs' paths, each once).
    Files { paths: Vec<String> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
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
