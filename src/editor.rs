//! What the editor side of a chat holds: the user's policy for this chat,
//! the roots that confine file access, what the agent was served and wrote,
//! and the terminals it runs. Plain state; the handlers act on it.

use std::collections::HashMap;
use std::path::PathBuf;

use parking_lot::Mutex;

use crate::permission::AutoAllowRule;
use crate::roots::Roots;
use crate::terminal::Terminals;

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
        }
    }
}

/// One agent write, for review and the quickfix list.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WriteRecord {
    pub path: String,
    /// Seconds since the epoch.
    pub time: f64,
    pub tool_call_id: Option<String>,
    /// "buffer" or "disk".
    pub target: &'static str,
    pub saved: bool,
    /// The text before the agent's first write in this session (None: the
    /// file did not exist).
    pub original: Option<String>,
}

#[derive(Default)]
pub struct EditorState {
    pub roots: Roots,
    pub policy: Policy,
    /// What the agent was last served (or wrote) per file: the base of the
    /// three-way merge when the user edits the buffer in between.
    pub snapshots: Mutex<HashMap<PathBuf, String>>,
    pub writes: Mutex<Vec<WriteRecord>>,
    pub terminals: Mutex<Terminals>,
}

impl EditorState {
    pub fn new(cwd: PathBuf, policy: Policy) -> Self {
        let mut dirs = vec![cwd];
        dirs.extend(policy.roots.iter().cloned());
        Self {
            roots: Roots::new(&dirs),
            policy,
            ..Default::default()
        }
    }
}
