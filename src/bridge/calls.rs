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

/// What the main thread answered: the reply and its text parts, joined
/// with `\n` as they arrived (no join of a 10 MB text afterwards).
#[derive(Debug)]
pub struct Reply<R> {
    pub text: String,
    pub value: R,
}

struct Pending {
    text: String,
    parts: usize,
    tx: oneshot::Sender<Result<(String, Value), String>>,
}

static PENDING: Mutex<Option<HashMap<u64, Pending>>> = Mutex::new(None);
static NEXT: AtomicU64 = AtomicU64::new(1);

/// The most room a size hint makes before the text arrives.
const HINT_MAX: usize = 64 << 20;

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
            text: String::new(),
            parts: 0,
            tx,
        },
    );
    bridge().push(UiEvent::Call {
        call: id,
        thread,
        request,
    });
    let (text, value) = match tokio::time::timeout(TIMEOUT, rx).await {
        Ok(Ok(r)) => r?,
        Ok(Err(_)) => return Err(format!("the editor dropped the `{method}` request")),
        Err(_) => {
            PENDING.lock().get_or_insert_with(HashMap::new).remove(&id);
            return Err(format!("the editor did not answer `{method}` in time"));
        }
    };
    let value = read_reply(method, value)?;
    Ok(Reply { text, value })
}

/// The main thread's answer to `method` as its reply type. The reply types
/// deny unknown fields, so a field the core does not know fails the call
/// with an error that names it: the caller answers the agent with that
/// error, and never reads the reply as an empty one ("no buffer").
fn read_reply<R: DeserializeOwned>(method: &str, value: Value) -> Result<R, String> {
    // An empty Lua table arrives as `[]`: read it as "no fields".
    let value = match value {
        Value::Array(a) if a.is_empty() => Value::Object(Default::default()),
        v => v,
    };
    serde_json::from_value(value)
        .map_err(|e| format!("the editor's answer to `{method}` is malformed: {e}"))
}

/// Sends a request that needs no answer.
pub fn notify(thread: u64, request: MainCall) {
    bridge().push(UiEvent::Call {
        call: 0,
        thread,
        request,
    });
}

/// One more part of call `id`'s text, after a `\n` unless it is the first.
/// `size`, the whole text's bytes, is room made at once (capped: it is a
/// hint), so that a large text is not copied as it grows.
pub fn part(id: u64, text: &str, size: Option<usize>) -> Result<(), String> {
    let mut guard = PENDING.lock();
    let p = guard
        .get_or_insert_with(HashMap::new)
        .get_mut(&id)
        .ok_or_else(|| format!("no pending call {id}"))?;
    if p.parts > 0 {
        p.text.push('\n');
    } else if let Some(n) = size {
        p.text.reserve_exact(n.min(HINT_MAX));
    }
    p.text.push_str(text);
    p.parts += 1;
    Ok(())
}

pub fn finish(id: u64, result: Result<Value, String>) -> Result<(), String> {
    let p = PENDING
        .lock()
        .get_or_insert_with(HashMap::new)
        .remove(&id)
        .ok_or_else(|| format!("no pending call {id}"))?;
    let _ = p.tx.send(result.map(|value| (p.text, value)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::bridge::main_call::{BufferApplyReply, BufferReadReply, TerminalStartReply};

    #[test]
    fn a_reply_with_an_unknown_field_is_refused_with_an_error_naming_it() {
        let e = read_reply::<BufferReadReply>("buffer_read", json!({"found": true, "stail": true}))
            .unwrap_err();
        assert!(
            e.starts_with(
                "the editor's answer to `buffer_read` is malformed: unknown field `stail`"
            ),
            "{e}"
        );
        let e = read_reply::<BufferApplyReply>("buffer_apply", json!({"saved": true, "dirty": 1}))
            .unwrap_err();
        assert!(e.contains("unknown field `dirty`"), "{e}");
        let e = read_reply::<TerminalStartReply>("terminal_start", json!({"pid": 3, "job": 4}))
            .unwrap_err();
        assert!(e.contains("unknown field `job`"), "{e}");
        // What Lua sends for "nothing to say" is read as defaults.
        let r: BufferApplyReply = read_reply("buffer_apply", json!([])).unwrap();
        assert_eq!(r, BufferApplyReply::default());
    }

    #[test]
    fn a_refused_reply_ends_the_call_with_the_error_at_once() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let call = tokio::spawn(call::<BufferReadReply>(
                1,
                MainCall::BufferRead {
                    path: "a.txt".into(),
                    resolved: "/p/a.txt".into(),
                    whole: false,
                    sync: true,
                },
            ));
            // The only call of these tests: the one pending id is ours.
            let id = loop {
                let id = PENDING
                    .lock()
                    .as_ref()
                    .and_then(|p| p.keys().next().copied());
                match id {
                    Some(id) => break id,
                    None => tokio::task::yield_now().await,
                }
            };
            part(id, "one", None).unwrap();
            finish(
                id,
                Ok(json!({"found": true, "stale": false, "stail": true})),
            )
            .unwrap();
            let answer = tokio::time::timeout(Duration::from_secs(5), call)
                .await
                .expect("the call ends, it does not wait for its timeout")
                .unwrap();
            let e = answer.unwrap_err();
            assert!(e.contains("unknown field `stail`"), "{e}");
            // Nothing is left pending.
            assert!(PENDING.lock().as_ref().is_none_or(|p| !p.contains_key(&id)));
        });
    }
}
