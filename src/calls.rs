//! Requests from background tasks to the main thread that need an answer
//! (a buffer's text, applying an edit, starting a job). The request travels
//! through the bridge like any event; Lua answers through `lua_api`
//! (`call_part`, `call_done`, `call_fail`). Large answers arrive in parts so
//! the main thread can hand them over across several ticks.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::bridge::{bridge, UiEvent};
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
    fn name(&self) -> &'static str {
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

/// What the main thread answered: the reply and text parts (in order).
#[derive(Debug)]
pub struct Reply<R> {
    pub parts: Vec<String>,
    pub value: R,
}

struct Pending {
    parts: Vec<String>,
    tx: oneshot::Sender<Result<(Vec<String>, Value), String>>,
}

static PENDING: Mutex<Option<HashMap<u64, Pending>>> = Mutex::new(None);
static NEXT: AtomicU64 = AtomicU64::new(1);

/// Generous: a 10 MB buffer is handed over in well under a second; this
/// only guards against a view that never answers.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Asks the main thread to run `request` and waits (async) for its reply.
pub async fn call<R: DeserializeOwned>(thread: u64, request: MainCall) -> Result<Reply<R>, String> {
    let method = request.name();
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = oneshot::channel();
    PENDING.lock().get_or_insert_with(HashMap::new).insert(
        id,
        Pending {
            parts: Vec::new(),
            tx,
        },
    );
    bridge().push(UiEvent::Call {
        call: id,
        thread,
        request,
    });
    let (parts, value) = match tokio::time::timeout(TIMEOUT, rx).await {
        Ok(Ok(r)) => r?,
        Ok(Err(_)) => return Err(format!("the editor dropped the `{method}` request")),
        Err(_) => {
            PENDING.lock().get_or_insert_with(HashMap::new).remove(&id);
            return Err(format!("the editor did not answer `{method}` in time"));
        }
    };
    // An empty Lua table arrives as `[]`: read it as "no fields".
    let value = match value {
        Value::Array(a) if a.is_empty() => Value::Object(Default::default()),
        v => v,
    };
    let value = serde_json::from_value(value)
        .map_err(|e| format!("the editor's answer to `{method}` is malformed: {e}"))?;
    Ok(Reply { parts, value })
}

/// Sends a request that needs no answer.
pub fn notify(thread: u64, request: MainCall) {
    bridge().push(UiEvent::Call {
        call: 0,
        thread,
        request,
    });
}

pub fn part(id: u64, text: String) -> Result<(), String> {
    let mut guard = PENDING.lock();
    let p = guard
        .get_or_insert_with(HashMap::new)
        .get_mut(&id)
        .ok_or_else(|| format!("no pending call {id}"))?;
    p.parts.push(text);
    Ok(())
}

pub fn finish(id: u64, result: Result<Value, String>) -> Result<(), String> {
    let p = PENDING
        .lock()
        .get_or_insert_with(HashMap::new)
        .remove(&id)
        .ok_or_else(|| format!("no pending call {id}"))?;
    let _ = p.tx.send(result.map(|value| (p.parts, value)));
    Ok(())
}
