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
    /// A subagent's block (a child session of the agent's).
    Subagent,
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
            EntryKind::Subagent => "subagent",
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

// Plans by id and subagents (read in `delegation`).

/// What a plan by id holds (`plan_update`'s `plan`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PlanBody {
    Items {
        items: Vec<PlanItem>,
    },
    /// A whole Markdown document; `path` names its file (shown, never read).
    Markdown {
        content: String,
        path: Option<String>,
    },
}

/// A plan by id as the transcript keeps it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IdPlan {
    pub id: String,
    /// Its markdown, as the thread last rendered it.
    #[serde(skip)]
    pub shown: String,
    pub body: PlanBody,
    /// `plan_removed`: the block stays one line saying so.
    pub removed: bool,
    /// The items, for the status area's progress line (as a legacy plan).
    pub items: Vec<PlanItem>,
}

/// A subagent's work state (`subagent_update.state`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SubagentState {
    /// `running`, `idle`, `requires_action`, `unknown`, or what was sent.
    pub state: String,
    pub stop_reason: Option<String>,
    /// `stopReason: error`: the error's message (may be empty).
    pub error: Option<String>,
}

/// One line (or paragraph) of a subagent's own transcript.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChildLine {
    pub kind: EntryKind,
    /// The tool call, plan or message it shows (updated in place).
    pub key: Option<String>,
    pub text: String,
}

/// A subagent: a child session the agent created, shown as a block under
/// the tool call that started it, with its own live transcript.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Subagent {
    pub session_id: String,
    /// Its markdown, as the thread last rendered it.
    #[serde(skip)]
    pub shown: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub state: Option<SubagentState>,
    pub can_cancel: bool,
    /// The tool call whose content links to this session.
    pub tool_call_id: Option<String>,
    /// That tool call's title, as the block names it.
    pub tool_title: Option<String>,
    pub lines: Vec<ChildLine>,
    /// Lines dropped from the start of `lines` (past `SUBAGENT_LINES_KEPT`).
    pub lines_dropped: usize,
    /// Its tool calls it asked permission for: their cards (in the chat's
    /// transcript, where the float points) follow its updates of them.
    #[serde(skip)]
    pub asked: Vec<String>,
}

impl Subagent {
    pub fn new(session_id: &str) -> Self {
        Subagent {
            session_id: session_id.to_owned(),
            shown: String::new(),
            title: None,
            description: None,
            state: None,
            can_cancel: false,
            tool_call_id: None,
            tool_title: None,
            lines: Vec::new(),
            lines_dropped: 0,
            asked: Vec::new(),
        }
    }

    /// The name the user reads (the title, else the session id).
    pub fn name(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.session_id)
    }

    /// Adds `text` of `kind` to its transcript: a chunk continues the last
    /// line of the same kind and key; a keyed line is replaced in place.
    pub fn push(&mut self, kind: EntryKind, key: Option<&str>, text: &str, append: bool) {
        if let Some(k) = key {
            if let Some(line) = self
                .lines
                .iter_mut()
                .rev()
                .find(|l| l.kind == kind && l.key.as_deref() == Some(k))
            {
                if append {
                    line.text.push_str(text);
                } else {
                    line.text = text.to_owned();
                }
                return;
            }
        } else if append {
            if let Some(line) = self
                .lines
                .last_mut()
                .filter(|l| l.kind == kind && l.key.is_none())
            {
                line.text.push_str(text);
                return;
            }
        }
        if self.lines.len() >= SUBAGENT_LINES_KEPT {
            self.lines.remove(0);
            self.lines_dropped += 1;
        }
        self.lines.push(ChildLine {
            kind,
            key: key.map(str::to_owned),
            text: text.to_owned(),
        });
    }
}

/// Lines of a subagent's transcript kept in its block (the oldest go
/// first; the protocol trace has them all).
pub const SUBAGENT_LINES_KEPT: usize = 200;

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
    /// A plan by id (`plan_update`), shown as a plan.
    IdPlan(IdPlan),
    Subagent(Subagent),
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
            Entry::IdPlan(_) => EntryKind::Plan,
            Entry::Subagent(_) => EntryKind::Subagent,
        }
    }
}
