//! The entries of a transcript: what the user and the agent said, the
//! tool cards with their content, plans and notices. Plain data that
//! serialises as the view reads it (`entry` in `lua_api`); how an entry
//! changes is the thread's business, how it reads is `render`'s.

use super::schema::{PlanPriority, PlanStatus, ToolKind, ToolStatus};
use super::textdiff;

/// Lines of a diff shown in a card; the review tab shows all of it.
pub const DIFF_MAX_LINES: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    User,
    Heading,
    Agent,
    Thought,
    ToolCall,
    Plan,
    Notice,
    /// The agent's `notice` (its severity coloured).
    AgentNotice,
    /// A context compaction (folded under its first line).
    Compaction,
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
            EntryKind::AgentNotice => "agent_notice",
            EntryKind::Compaction => "compaction",
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
        body: std::sync::Arc<textdiff::DiffBody>,
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
        exit: Option<TermExit>,
        known: bool,
    },
}

/// How a terminal's command ended: a client terminal's job, or what an
/// agent reports in `_meta.terminal_exit`. Reads (and serialises) as
/// [`TermExit::describe`] says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TermExit {
    pub code: Option<i64>,
    pub signal: Option<String>,
}

impl TermExit {
    pub fn describe(&self) -> String {
        match (self.code, &self.signal) {
            (_, Some(sig)) => format!("killed by {sig}"),
            (Some(c), None) => format!("exit code {c}"),
            (None, None) => "exited".into(),
        }
    }
}

impl serde::Serialize for TermExit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.describe())
    }
}

impl ToolContent {
    /// A diff, with its body computed now (see `textdiff::unified_diff_bounded`).
    pub fn diff(path: String, old_text: Option<String>, new_text: String) -> Self {
        let limits = textdiff::DiffLimits {
            max_output_lines: DIFF_MAX_LINES,
            ..Default::default()
        };
        let body =
            textdiff::unified_diff_bounded(old_text.as_deref().unwrap_or(""), &new_text, &limits);
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

/// Output found in a tool call's `rawOutput` (see `model::raw_output`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RawOutput {
    pub text: String,
    pub exit_code: Option<i64>,
    /// The agent said the tool failed (`success: false`), with no exit code.
    pub failed: bool,
    /// `text` is a shape the client does not read, as pretty JSON.
    pub json: bool,
}

/// Lines of terminal output a card shows (`:AcpTerminal` opens the rest).
pub const TERMINAL_TAIL_LINES: usize = 12;

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
    AgentNotice(super::compaction::AgentNotice),
    Compaction(super::compaction::Compaction),
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
            Entry::AgentNotice(_) => EntryKind::AgentNotice,
            Entry::Compaction(_) => EntryKind::Compaction,
        }
    }
}
