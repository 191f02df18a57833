//! What the core asks of the main thread (`MainCall`) and the reply each
//! request expects: the contract with lua/acp (declared in
//! lua/acp/types.lua). `calls` sends them and waits for the answers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::model::textdiff::Hunk;

/// What the core asks of the main thread. Crosses to Lua as
/// `{ method = "<snake_case name>", payload = { ...fields } }` (see
/// lua/acp/types.lua); each request that wants an answer has a reply type.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "method", content = "payload", rename_all = "snake_case")]
pub enum MainCall {
    /// The loaded buffer of `path` (if any): answered in text parts plus a
    /// `BufferReadReply`. `whole`: take the text in one tick (it cannot be
    /// stale then; asked only after sliced reads kept going stale).
    BufferRead {
        path: String,
        resolved: PathBuf,
        whole: bool,
    },
    /// Apply `hunks` to buffer `bufnr` if it is still at `tick`:
    /// `BufferApplyReply`.
    BufferApply {
        bufnr: i64,
        tick: i64,
        hunks: Vec<Hunk>,
        save: bool,
        eol: bool,
        path: String,
    },
    /// Start a terminal process: `TerminalStartReply`.
    TerminalStart {
        id: String,
        argv: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: PathBuf,
        command: String,
    },
    /// Kill a terminal's process group (no answer).
    TerminalKill { id: String, pid: u32 },
}

impl MainCall {
    pub fn name(&self) -> &'static str {
        match self {
            MainCall::BufferRead { .. } => "buffer_read",
            MainCall::BufferApply { .. } => "buffer_apply",
            MainCall::TerminalStart { .. } => "terminal_start",
            MainCall::TerminalKill { .. } => "terminal_kill",
        }
    }
}

/// `buffer_read`'s answer; the text itself comes in parts (lines).
/// Unknown fields are refused: a reply the core cannot read must fail
/// loudly, never read as "no buffer" (that once sent a write to the disk
/// under a buffer with unsaved edits).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BufferReadReply {
    pub found: bool,
    /// The buffer changed between the parts: the text is not consistent
    /// and must be read again.
    pub stale: bool,
    pub bufnr: i64,
    pub tick: i64,
    pub modified: bool,
    /// 'fileformat' is dos.
    pub dos: bool,
    /// 'eol' / 'fixeol': the file ends with a line break.
    #[serde(default = "yes")]
    pub eol: bool,
    /// The buffer's line count.
    pub lines: u64,
}

fn yes() -> bool {
    true
}

/// `buffer_apply`'s answer.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BufferApplyReply {
    /// The buffer changed since `tick`: read it again and recompute.
    pub stale: bool,
    pub error: Option<String>,
    pub saved: bool,
    /// The buffer has unsaved changes after the edit.
    pub modified: bool,
}

/// `terminal_start`'s answer: a pid, or why it could not start.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TerminalStartReply {
    pub pid: Option<u32>,
    pub error: Option<String>,
}
