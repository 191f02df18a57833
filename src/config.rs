//! The user's configuration as the core reads it: how to start an agent
//! (`AgentSpec` with its capabilities and timeouts) and what a chat's
//! policy allows (`Policy`). Lua sends these tables to `open_thread`; serde
//! reads them here with the defaults below.
//!
//! May use: nothing.

use std::collections::HashMap;
use std::path::PathBuf;

/// Default cap on one incoming line of the agent's stdout.
pub const DEFAULT_LINE_CAP: usize = 64 << 20;

/// Messages kept in a connection's protocol trace by default.
pub const DEFAULT_TRACE_MESSAGES: usize = 5000;

/// Whole-file reads (and parts) larger than this are refused by default.
pub const DEFAULT_READ_REFUSE_BYTES: u64 = 32 << 20;

/// Output kept of a terminal when the agent sets no `outputByteLimit` (or
/// a larger one): the tail of what the command printed.
pub const DEFAULT_TERMINAL_OUTPUT_CAP: usize = 1 << 20;

/// How to start an agent (from the user's config).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct AgentSpec {
    pub name: String,
    pub cmd: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: HashMap<String, String>,
    pub cwd: PathBuf,
    /// Client capabilities to advertise (each can be turned off in config).
    #[serde(default)]
    pub caps: Caps,
    /// The longest message (one line of the agent's stdout) accepted; past
    /// it the connection is ended with a clear message.
    #[serde(default = "default_line_max")]
    pub line_max: usize,
    /// How long the agent may take to answer (config `timeouts`).
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Messages kept in the protocol trace (config `trace.max_messages`).
    #[serde(default = "default_trace_max")]
    pub trace_max: usize,
    /// Executable names of the agent's descendants allowed to outlive it
    /// (config `agents.<name>.keep_daemons`).
    #[serde(default)]
    pub keep_daemons: Vec<String>,
    /// The client's system prompt for this agent's sessions (config
    /// `system_prompt`, `agents.<name>.system_prompt`; never empty), sent
    /// only to agents that advertise `sessionCapabilities.systemPrompt`.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Values set right after `session/new` (config `agents.<name>.defaults`),
    /// as `[key, value]` pairs in the order to apply them: a config option
    /// id, or `model` / `mode`.
    #[serde(default)]
    pub defaults: Vec<(String, serde_json::Value)>,
}

fn default_line_max() -> usize {
    DEFAULT_LINE_CAP
}

fn default_trace_max() -> usize {
    DEFAULT_TRACE_MESSAGES
}

/// Milliseconds the agent gets before the client gives up on an answer.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Timeouts {
    /// The `initialize` answer; past it the agent is stopped.
    pub initialize: u64,
    /// The `session/new` answer; past it the chat says so and the next
    /// message tries again.
    pub session_new: u64,
    /// After a cancel, how long the agent has to end its turn; past it the
    /// turn ends here and the agent's late output is ignored.
    pub cancel_grace: u64,
    /// The `authenticate` answer; past it the sign-in is given up with a
    /// message (an agent that never answers leaves no silent wait).
    pub authenticate: u64,
    /// A session idle this long (no turn, nothing pending) is closed in the
    /// agent when it can close and resume sessions; the next prompt resumes
    /// it. 0: never.
    pub idle_close: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            initialize: 30_000,
            session_new: 30_000,
            cancel_grace: 5_000,
            authenticate: 60_000,
            idle_close: 30 * 60 * 1000,
        }
    }
}

/// The client capabilities to advertise (each can be turned off in config).
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Caps {
    pub fs_read: bool,
    pub fs_write: bool,
    pub terminal: bool,
    /// Plans by id (`plan_update`, `plan_removed`): config
    /// `experimental.plan_v2`.
    pub plan_v2: bool,
    /// Subagents as child sessions: config `experimental.subagents`.
    pub subagents: bool,
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            plan_v2: false,
            subagents: false,
            fs_read: true,
            fs_write: true,
            terminal: true,
        }
    }
}

/// What the user's configuration allows this chat.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default)]
pub struct Policy {
    /// Extra root directories besides the session's cwd.
    pub roots: Vec<PathBuf>,
    pub allow_read_outside: bool,
    pub allow_write_outside: bool,
    pub allow_terminal_outside: bool,
    /// Save a buffer after an agent write if it had no unsaved changes.
    pub save_unmodified: bool,
    /// Program that runs `command` when the agent gives no `args`.
    pub shell: String,
    /// Permission requests the user allows without being asked: a tool
    /// kind and a pattern over the command (or title) the user reads.
    pub auto_allow: Vec<AutoAllowRule>,
    /// When a `terminal/create` is shown to the user before it runs.
    pub terminal_confirm: TerminalConfirm,
    /// Directory or file names (`*`/`?` patterns) that agent writes may not
    /// touch anywhere in a path: `.git` by default (a hook or a
    /// `core.fsmonitor` there runs code).
    pub protected: Vec<String>,
    /// Whole-file reads larger than this are refused (parts still work).
    pub read_max_bytes: u64,
    /// Output kept of each terminal (its tail) when the agent sets no
    /// smaller `outputByteLimit`.
    pub terminal_output_max_bytes: usize,
    /// Variables, each with its exact value, that the user lets an agent
    /// add to a command without showing them: a grant and an execute rule
    /// disregard exactly these pairs (claude-code-acp sets `CLAUDECODE=1`
    /// on every command). Any other value of such a name still asks.
    /// Sent as `[name, value]` pairs (an empty Lua table is no map).
    pub terminal_inert_env: Vec<(String, String)>,
}

/// When a `terminal/create` asks the user first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TerminalConfirm {
    /// Unless an allowed permission request of the same turn covers it.
    #[default]
    Unrequested,
    Always,
    Never,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            roots: Vec::new(),
            allow_read_outside: false,
            allow_write_outside: false,
            allow_terminal_outside: false,
            save_unmodified: true,
            shell: "sh".into(),
            auto_allow: Vec::new(),
            terminal_confirm: TerminalConfirm::default(),
            protected: vec![".git".into()],
            read_max_bytes: DEFAULT_READ_REFUSE_BYTES,
            terminal_output_max_bytes: DEFAULT_TERMINAL_OUTPUT_CAP,
            terminal_inert_env: Vec::new(),
        }
    }
}

/// One auto-allow rule of the user's config: `{ kind = "read" }` or
/// `{ kind = "execute", pattern = "git status*" }`. A bare string is a kind
/// with the pattern `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoAllowRule {
    pub kind: String,
    /// `*` matches any run of characters, `?` one; everything else is
    /// literal. Matched against the whole command (or the title).
    pub pattern: String,
}

impl<'de> serde::Deserialize<'de> for AutoAllowRule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Kind(String),
            Rule {
                kind: String,
                #[serde(default)]
                pattern: Option<String>,
            },
        }
        Ok(match Raw::deserialize(d)? {
            Raw::Kind(kind) => AutoAllowRule {
                kind,
                pattern: "*".into(),
            },
            Raw::Rule { kind, pattern } => AutoAllowRule {
                kind,
                pattern: pattern.unwrap_or_else(|| "*".into()),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kind: &str, pattern: &str) -> AutoAllowRule {
        AutoAllowRule {
            kind: kind.into(),
            pattern: pattern.into(),
        }
    }

    #[test]
    fn rules_deserialize_from_a_kind_or_a_table() {
        let rules: Vec<AutoAllowRule> = serde_json::from_value(serde_json::json!([
            "read",
            {"kind": "execute", "pattern": "ls*"},
            {"kind": "search"}
        ]))
        .unwrap();
        assert_eq!(
            rules,
            vec![
                rule("read", "*"),
                rule("execute", "ls*"),
                rule("search", "*")
            ]
        );
    }
}
