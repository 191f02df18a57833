//! Elicitation requests (`elicitation/create`) waiting for the user: a form
//! to fill in or a URL to open. Kept here rather than per chat, because a
//! request-scoped elicitation (sign-in, before any session) belongs to no
//! chat. The view answers with `answer`; a chat that closes or cancels its
//! turn answers its own with `cancel`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

use agent_client_protocol::v1::Responder;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::bridge::handoff::bridge;
use crate::bridge::queue::UiEvent;
use crate::log;

struct Pending {
    thread: Option<u64>,
    responder: Responder<Value>,
    /// Dropped with the request: ends the wait for its `$/cancel_request`.
    _watch: tokio::sync::oneshot::Sender<()>,
}

static PENDING: LazyLock<Mutex<HashMap<u64, Pending>>> = LazyLock::new(Default::default);
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Shows the request to the user (the view gets an `elicitation` event).
pub fn ask(thread: Option<u64>, payload: Value, responder: Responder<Value>) {
    let request = NEXT.fetch_add(1, Ordering::Relaxed) + 1;
    let cancellation = responder.cancellation();
    let (watch, answered) = tokio::sync::oneshot::channel::<()>();
    PENDING.lock().insert(
        request,
        Pending {
            thread,
            responder,
            _watch: watch,
        },
    );
    bridge().push(UiEvent::Elicitation {
        thread,
        request,
        payload,
    });
    // The agent may withdraw it (`$/cancel_request`) while it waits.
    tokio::spawn(async move {
        tokio::select! {
            () = cancellation.cancelled() => withdraw(request),
            _ = answered => {}
        }
    });
}

/// The agent withdrew request `request`: it gets the cancelled-request
/// error (nobody answered for the user) and the view closes the form with
/// a line saying so. One already answered is left alone.
fn withdraw(request: u64) {
    let Some(pending) = PENDING.lock().remove(&request) else {
        return;
    };
    if let Err(e) = pending
        .responder
        .respond_with_error(agent_client_protocol::Error::request_cancelled())
    {
        log::warn(format!("withdrawn elicitation not answered: {e}"));
    }
    log::info(format!("elicitation {request} withdrawn by the agent"));
    bridge().push(UiEvent::ElicitationDone {
        request,
        withdrawn: true,
    });
}

/// What the user did: `{action = "accept", content = {...}}`, `{action =
/// "decline"}` or `{action = "cancel"}`.
pub fn answer(request: u64, response: Value) -> Result<(), String> {
    let action = response
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let response = match action.as_str() {
        "accept" => match response.get("content") {
            None | Some(Value::Null) => json!({"action": "accept"}),
            Some(Value::Object(c)) => json!({"action": "accept", "content": c}),
            // An empty Lua table arrives as an array.
            Some(Value::Array(a)) if a.is_empty() => json!({"action": "accept", "content": {}}),
            Some(other) => return Err(format!("elicitation content must be a table, got {other}")),
        },
        "decline" | "cancel" => json!({ "action": action }),
        other => return Err(format!("unknown elicitation action `{other}`")),
    };
    let pending = PENDING
        .lock()
        .remove(&request)
        .ok_or_else(|| format!("no elicitation request {request} is waiting"))?;
    if let Err(e) = pending.responder.respond(response) {
        log::warn(format!("elicitation answer not sent: {e}"));
    }
    bridge().push(UiEvent::ElicitationDone {
        request,
        withdrawn: false,
    });
    Ok(())
}

/// Answers `cancel` to every request of `thread` (its turn or chat ended).
pub fn cancel_thread(thread: u64) {
    let ids: Vec<u64> = PENDING
        .lock()
        .iter()
        .filter(|(_, p)| p.thread == Some(thread))
        .map(|(id, _)| *id)
        .collect();
    for id in ids {
        let _ = answer(id, json!({"action": "cancel"}));
    }
}

/// `elicitation/complete`: the agent says a URL elicitation is done.
pub fn complete(elicitation_id: &str) {
    bridge().push(UiEvent::ElicitationComplete {
        elicitation_id: elicitation_id.to_owned(),
    });
}
