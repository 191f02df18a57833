//! Replay: plays a trace saved with `:AcpTraceSave` back as the agent side,
//! so that a user's bug report becomes a regression test.
//!
//! The trace is JSONL, one `{t, ms, dir, msg | raw}` per line; `dir` is
//! seen from the client: `out` (client to agent), `in` (agent to client) or
//! `stderr`. In order, the replay:
//! - for an `out` request, waits for the client to send a request of the
//!   same method (its live id answers for the recorded one);
//! - for an `out` notification (`session/cancel`), waits for it briefly;
//! - for an `out` response (the client's answer to an agent request),
//!   waits for the live answer to that id and logs whether it matches the
//!   recorded one in kind (result or error);
//! - sends every `in` message as recorded (a response gets the live id of
//!   the request it answers; `raw` lines are written as they were, so a
//!   malformed line is reproduced), and writes `stderr` lines to stderr.
//!
//! The recorded project directory (`cwd` of `session/new`) is replaced by
//! the live one in what the agent sends, and ids the client chose (a
//! terminal id, ...) are learned from its answers. A trace whose start was
//! dropped from the ring gets default answers to `initialize` and
//! `session/new`. Requests past the end of the trace are answered with an
//! error. Events go to `ACP_TEST_AGENT_LOG`: `client_message`,
//! `replay_answer`, `replay_mismatch`, `replay_done`.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use crate::out::Log;

/// How long the client gets to send what the trace says it sent.
const WAIT: Duration = Duration::from_secs(10);
/// A recorded notification (e.g. a cancel) may never come again.
const WAIT_NOTIFICATION: Duration = Duration::from_secs(2);

struct Entry {
    dir: String,
    msg: Option<Value>,
    raw: Option<String>,
}

fn load(path: &str) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| format!("{path}:{}: {e}", n + 1))?;
        out.push(Entry {
            dir: v["dir"].as_str().unwrap_or_default().to_owned(),
            msg: v.get("msg").cloned(),
            raw: v.get("raw").and_then(Value::as_str).map(str::to_owned),
        });
    }
    Ok(out)
}

fn is_request(m: &Value) -> bool {
    m.get("method").is_some() && m.get("id").is_some()
}

fn is_response(m: &Value) -> bool {
    m.get("method").is_none() && m.get("id").is_some()
}

struct Replay {
    log: Log,
    incoming: mpsc::UnboundedReceiver<Value>,
    /// Live messages not matched yet.
    unmatched: VecDeque<Value>,
    /// Recorded client request id (JSON text) -> live id.
    ids: HashMap<String, Value>,
    /// Recorded text -> live text (the project directory, client ids).
    subst: Vec<(String, String)>,
    /// What the trace holds, for the default answers.
    has_initialize: bool,
    has_session_new: bool,
    first_session: Option<String>,
    mismatches: u64,
}

fn write_line(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

fn send(v: &Value) {
    write_line(v.to_string().as_bytes());
}

impl Replay {
    fn substitute(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                for (from, to) in &self.subst {
                    if s.contains(from.as_str()) {
                        *s = s.replace(from.as_str(), to);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.substitute(x)),
            Value::Object(o) => o.values_mut().for_each(|x| self.substitute(x)),
            _ => {}
        }
    }

    fn mismatch(&mut self, detail: String) {
        self.mismatches += 1;
        self.log
            .event(json!({"event": "replay_mismatch", "detail": detail}));
    }

    /// Answers the requests a trace without its start cannot: `initialize`
    /// and `session/new` get defaults. True when `m` was answered.
    fn default_answer(&mut self, m: &Value) -> bool {
        let method = m["method"].as_str().unwrap_or_default();
        let result = match method {
            "initialize" if !self.has_initialize => json!({
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": false, "promptCapabilities": {}},
                "authMethods": [],
            }),
            "session/new" if !self.has_session_new => {
                json!({"sessionId": self.first_session.clone().unwrap_or_else(|| "replay".into())})
            }
            _ => return false,
        };
        send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": result}));
        true
    }

    /// The first live message `pick` accepts, waiting up to `limit`.
    async fn take(&mut self, limit: Duration, pick: impl Fn(&Value) -> bool) -> Option<Value> {
        if let Some(i) = self.unmatched.iter().position(&pick) {
            return self.unmatched.remove(i);
        }
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let next = tokio::time::timeout_at(deadline, self.incoming.recv()).await;
            match next {
                Ok(Some(m)) if pick(&m) => return Some(m),
                Ok(Some(m)) => {
                    if !(is_request(&m) && self.default_answer(&m)) {
                        self.unmatched.push_back(m);
                    }
                }
                Ok(None) | Err(_) => return None,
            }
        }
    }

    async fn client_sent(&mut self, rec: &Value) {
        let method = rec["method"].as_str().map(str::to_owned);
        if let Some(method) = method.clone().filter(|_| is_request(rec)) {
            let m = method.clone();
            let live = self
                .take(WAIT, move |v| is_request(v) && v["method"] == m.as_str())
                .await;
            let Some(live) = live else {
                return self.mismatch(format!("the client never sent {method}"));
            };
            self.ids.insert(rec["id"].to_string(), live["id"].clone());
            if method == "session/new" {
                if let (Some(from), Some(to)) = (
                    rec["params"]["cwd"].as_str(),
                    live["params"]["cwd"].as_str(),
                ) {
                    if from != to && !from.is_empty() {
                        self.subst.push((from.to_owned(), to.to_owned()));
                    }
                }
            }
        } else if let Some(method) = method {
            let m = method.clone();
            if self
                .take(WAIT_NOTIFICATION, move |v| {
                    !is_request(v) && v["method"] == m.as_str()
                })
                .await
                .is_none()
            {
                self.mismatch(format!("the client never sent the notification {method}"));
            }
        } else if is_response(rec) {
            let id = rec["id"].clone();
            let want = id.clone();
            let live = self
                .take(WAIT, move |v| is_response(v) && v["id"] == want)
                .await;
            let Some(live) = live else {
                return self.mismatch(format!("the client never answered request {id}"));
            };
            let kind = |v: &Value| {
                if v.get("error").is_some() {
                    "error"
                } else {
                    "result"
                }
            };
            self.log.event(json!({"event": "replay_answer", "id": id,
                "recorded": rec, "live": live}));
            if kind(rec) != kind(&live) {
                return self.mismatch(format!(
                    "request {id}: recorded {}, live {}",
                    kind(rec),
                    kind(&live)
                ));
            }
            // Ids the client chose (a terminal id) are used as it chose them.
            learn_ids(&rec["result"], &live["result"], &mut self.subst);
        }
    }

    fn agent_sent(&mut self, mut msg: Value) {
        self.substitute(&mut msg);
        if is_response(&msg) {
            if let Some(live) = self.ids.get(&msg["id"].to_string()) {
                msg["id"] = live.clone();
            }
        }
        send(&msg);
    }
}

/// Pairs of recorded and live strings under keys ending in `Id`.
fn learn_ids(rec: &Value, live: &Value, subst: &mut Vec<(String, String)>) {
    match (rec, live) {
        (Value::Object(r), Value::Object(l)) => {
            for (k, rv) in r {
                let Some(lv) = l.get(k) else { continue };
                match (rv, lv) {
                    (Value::String(a), Value::String(b)) if k.ends_with("Id") && a != b => {
                        subst.push((a.clone(), b.clone()))
                    }
                    _ => learn_ids(rv, lv, subst),
                }
            }
        }
        (Value::Array(r), Value::Array(l)) => {
            for (a, b) in r.iter().zip(l) {
                learn_ids(a, b, subst);
            }
        }
        _ => {}
    }
}

/// Plays the trace at `path`; returns the exit code.
pub async fn run(path: &str, log: Log) -> i32 {
    let entries = match load(path) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("acp-test-agent: {e}");
            return 2;
        }
    };
    let (tx, incoming) = mpsc::unbounded_channel();
    let reader_log = Log::from_env();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            reader_log.event(json!({"event": "client_message", "msg": v}));
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let sent_by_client = |method: &str| {
        entries.iter().any(|e| {
            e.dir == "out"
                && e.msg
                    .as_ref()
                    .is_some_and(|m| m["method"] == method && is_request(m))
        })
    };
    let first_session = entries.iter().find_map(|e| {
        e.msg
            .as_ref()?
            .pointer("/params/sessionId")?
            .as_str()
            .map(str::to_owned)
    });
    let mut r = Replay {
        log,
        incoming,
        unmatched: VecDeque::new(),
        ids: HashMap::new(),
        subst: Vec::new(),
        has_initialize: sent_by_client("initialize"),
        has_session_new: sent_by_client("session/new"),
        first_session,
        mismatches: 0,
    };
    for e in &entries {
        match (e.dir.as_str(), &e.msg, &e.raw) {
            ("out", Some(m), _) => r.client_sent(m).await,
            ("in", Some(m), _) => r.agent_sent(m.clone()),
            ("in", None, Some(raw)) => write_line(raw.as_bytes()),
            ("stderr", _, Some(raw)) => eprintln!("{raw}"),
            _ => {}
        }
    }
    r.log
        .event(json!({"event": "replay_done", "entries": entries.len(),
        "mismatches": r.mismatches}));
    // Past the end: requests get an error (never a hang), until stdin ends.
    let leftover: Vec<Value> = r.unmatched.drain(..).collect();
    for m in &leftover {
        if is_request(m) && !r.default_answer(m) {
            send(&json!({"jsonrpc": "2.0", "id": m["id"],
                "error": {"code": -32603, "message": "the replayed trace ends here"}}));
        }
    }
    while let Some(m) = r.incoming.recv().await {
        if is_request(&m) && !r.default_answer(&m) {
            send(&json!({"jsonrpc": "2.0", "id": m["id"],
                "error": {"code": -32603, "message": "the replayed trace ends here"}}));
        }
    }
    0
}
