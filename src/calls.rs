//! Requests from background tasks to the main thread that need an answer
//! (a buffer's text, applying an edit, starting a job). The request travels
//! through the bridge like any event; Lua answers through `lua_api`
//! (`call_part`, `call_done`, `call_fail`). Large answers arrive in parts so
//! the main thread can hand them over across several ticks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::bridge::{bridge, UiEvent};

/// What the main thread answered: text parts (in order) and a final value.
#[derive(Debug, Default)]
pub struct Reply {
    pub parts: Vec<String>,
    pub value: Value,
}

struct Pending {
    parts: Vec<String>,
    tx: oneshot::Sender<Result<Reply, String>>,
}

static PENDING: Mutex<Option<HashMap<u64, Pending>>> = Mutex::new(None);
static NEXT: AtomicU64 = AtomicU64::new(1);

/// Generous: a 10 MB buffer is handed over in well under a second; this
/// only guards against a view that never answers.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Asks the main thread to run `method` with `payload` and waits (async).
pub async fn call(thread: u64, method: &'static str, payload: Value) -> Result<Reply, String> {
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
        method,
        payload,
    });
    match tokio::time::timeout(TIMEOUT, rx).await {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => Err(format!("the editor dropped the `{method}` request")),
        Err(_) => {
            PENDING.lock().get_or_insert_with(HashMap::new).remove(&id);
            Err(format!("the editor did not answer `{method}` in time"))
        }
    }
}

/// Sends a request that needs no answer.
pub fn notify(thread: u64, method: &'static str, payload: Value) {
    bridge().push(UiEvent::Call {
        call: 0,
        thread,
        method,
        payload,
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
    let _ = p.tx.send(result.map(|value| Reply {
        parts: p.parts,
        value,
    }));
    Ok(())
}
