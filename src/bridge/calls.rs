//! Requests from background tasks to the main thread that need an answer
//! (a buffer's text, applying an edit, starting a job): each one is sent
//! through the queue like any event and waited for here (async). Lua
//! answers through `lua_api` (`call_part`, `call_done`, `call_fail`). Large
//! answers arrive in parts so the main thread can hand them over across
//! several ticks. What can be asked, and the reply each expects, is
//! `main_call`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::oneshot;

use super::handoff::bridge;
use super::main_call::MainCall;
use super::queue::UiEvent;

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
