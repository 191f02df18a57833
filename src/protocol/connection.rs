//! A connection's state: one agent process and the ACP connection over its
//! stdio. It serves many sessions and routes each session's traffic to the
//! chat that owns the session id (a `SessionSink`); it keeps what it knows
//! of the traffic to name malformed input, and it signals the agent's
//! process group only while that group is known to be ours. Starting the
//! process is `process`; reading and answering the agent is `dispatch`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::Agent;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{watch, Notify};

use super::inbound::AgentRequest;
use super::procs::{self, ProcId};
use super::splice::Splices;
use super::trace::Trace;
use crate::bridge::handoff::bridge;
use crate::config::AgentSpec;
use crate::log;
use crate::model::update::SessionUpdate;

/// What a connection routes a session's traffic to (a chat thread). The
/// connection knows nothing else about chats: it parses, routes, and
/// applies back-pressure.
pub trait SessionSink: Send + Sync {
    /// One `session/update`, in arrival order.
    fn apply_update(&self, update: SessionUpdate);
    /// The same update as the agent sent it (its `update` object), right
    /// before `apply_update`, for a sink that keeps a record. Updates that
    /// wait for their session's route (`early`) are not passed here: before
    /// a session is routed only its metadata arrives (a loaded session is
    /// routed before its request).
    fn record(&self, _update: &Value) {}
    /// `record` of a plain text chunk of the agent (see
    /// `protocol::text_chunk`), given as its parts.
    fn record_text_chunk(&self, kind: &str, message_id: Option<&str>, text: &str) {
        let mut update =
            serde_json::json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
        if let Some(id) = message_id {
            update["messageId"] = Value::from(id);
        }
        self.record(&update);
    }
    /// A request of the agent for this session; the sink must answer
    /// `responder` (now or later), never await the agent here.
    fn agent_request(&self, request: AgentRequest, responder: Responder<Value>);
    /// The agent process behind `conn` is gone.
    fn disconnected(&self, conn: &Arc<Connection>, reason: &str);
    /// The agent sent something malformed that was ignored (told once per
    /// kind of fault and connection).
    fn protocol_warning(&self, _text: &str) {}
    /// The chat this sink is (for requests the view answers directly).
    fn thread_id(&self) -> Option<u64> {
        None
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConnState {
    Starting,
    Ready,
    /// Closed with a human-readable reason (exit code, last stderr lines).
    Closed(String),
}

/// Lines of the agent's stderr kept for its exit report.
pub(super) const STDERR_TAIL_LINES: usize = 20;

pub struct Connection {
    pub spec: AgentSpec,
    pub pid: u32,
    pub(super) state: watch::Sender<ConnState>,
    pub(super) cx: Mutex<Option<ConnectionTo<Agent>>>,
    pub(super) init: Mutex<Option<Value>>,
    /// Sign-in methods named only in the `data.authMethods` of an
    /// "authentication required" error (Kimi CLI), beside `initialize`'s.
    pub(super) error_auth: Mutex<Vec<Value>>,
    pub(super) routes: Mutex<HashMap<String, Weak<dyn SessionSink>>>,
    /// Updates for a session id nobody routes yet. Agents send updates in the
    /// same write as the `session/new` answer, and the fast path sees them
    /// before the SDK resolves that answer: they wait here for `route`.
    pub(super) early: Mutex<EarlyUpdates>,
    /// Held while an update is applied and while `route` replays the early
    /// ones, so a session's updates reach its thread in arrival order.
    pub(super) apply: tokio::sync::Mutex<()>,
    pub(super) stderr_tail: Mutex<VecDeque<String>>,
    /// Why the client ended the connection itself (told before the exit).
    pub(super) fault: Mutex<Option<String>>,
    pub(super) stop: Notify,
    /// Both directions of JSON-RPC traffic and the agent's stderr.
    pub trace: Arc<Trace>,
    /// Large strings of this connection's answers, waiting for its writer
    /// (see `splice`).
    pub splices: Arc<Splices>,
    /// Set once the agent process was waited for (its pid may be reused
    /// from then on); see `procs`.
    pub(super) reaped: AtomicBool,
    /// Members of the agent's process group left when it was reaped.
    pub(super) leftovers: Mutex<Vec<ProcId>>,
    /// Requests sent and not answered, and the sessions the agent created.
    pub(super) book: Mutex<Bookkeeping>,
    /// Subagent session id -> the session that owns it (its chat's).
    pub(super) children: Mutex<HashMap<String, String>>,
}

/// What the connection knows of the traffic so far, to name malformed
/// input: a response to an id never sent, an update for a session that
/// does not exist.
#[derive(Default)]
pub(super) struct Bookkeeping {
    /// Request id (as JSON text) -> method.
    pub(super) pending: HashMap<String, String>,
    /// Session ids created by (or loaded into) the agent.
    pub(super) sessions: HashSet<String>,
    /// Faults seen per kind.
    pub(super) faults: HashMap<&'static str, u64>,
    /// The first line of stdout that was not JSON (cut), for the exit
    /// report: a wrong command prints its usage there.
    pub(super) junk: Option<String>,
}

/// Methods whose answer creates a session (updates for it may come first).
const SESSION_OPENERS: &[&str] = &[
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
];

impl Connection {
    /// The state of a connection to the agent process `pid` (0: none),
    /// before the handshake.
    pub(super) fn new(spec: AgentSpec, pid: u32) -> Self {
        let (state, _) = watch::channel(ConnState::Starting);
        Connection {
            trace: Trace::new(spec.trace_max),
            splices: Splices::new(),
            reaped: AtomicBool::new(false),
            leftovers: Mutex::new(Vec::new()),
            book: Mutex::new(Bookkeeping::default()),
            children: Mutex::new(HashMap::new()),
            spec,
            pid,
            state,
            cx: Mutex::new(None),
            init: Mutex::new(None),
            error_auth: Mutex::new(Vec::new()),
            routes: Mutex::new(HashMap::new()),
            early: Mutex::new(EarlyUpdates::default()),
            apply: tokio::sync::Mutex::new(()),
            stderr_tail: Mutex::new(VecDeque::new()),
            fault: Mutex::new(None),
            stop: Notify::new(),
        }
    }

    /// A connection with no process behind it, for tests of the routing.
    /// `sessions` are known to exist (updates for them wait for a route).
    #[cfg(test)]
    pub(crate) fn for_test(line_max: usize, sessions: &[&str]) -> Arc<Self> {
        let spec = AgentSpec {
            name: "test".into(),
            cmd: "none".into(),
            args: Vec::new(),
            env: HashMap::new(),
            cwd: std::path::PathBuf::from("/"),
            caps: crate::config::Caps::default(),
            line_max,
            timeouts: crate::config::Timeouts::default(),
            trace_max: 100,
            keep_daemons: Vec::new(),
            system_prompt: None,
            defaults: Vec::new(),
        };
        let conn = Connection::new(spec, 0);
        conn.reaped.store(true, Ordering::SeqCst);
        conn.book.lock().sessions = sessions.iter().map(|s| s.to_string()).collect();
        Arc::new(conn)
    }

    /// Marks request `id` (JSON text) as sent (tests).
    #[cfg(test)]
    pub(crate) fn expect_response(&self, id: &str, method: &str) {
        self.book
            .lock()
            .pending
            .insert(id.to_owned(), method.to_owned());
    }

    /// Takes the updates waiting for `session_id` (tests).
    #[cfg(test)]
    pub(crate) fn take_early(&self, session_id: &str) -> Vec<SessionUpdate> {
        self.early.lock().take(session_id)
    }

    pub fn state(&self) -> ConnState {
        self.state.borrow().clone()
    }

    pub fn is_closed(&self) -> bool {
        matches!(self.state(), ConnState::Closed(_))
    }

    /// The initialize response, once the handshake is done.
    pub fn init_response(&self) -> Option<Value> {
        self.init.lock().clone()
    }

    /// The agent's sign-in methods: `initialize`'s `authMethods`, then
    /// those only an "authentication required" error named (first seen wins
    /// for an id).
    pub fn auth_methods(&self) -> Vec<Value> {
        let mut out: Vec<Value> = self
            .init_response()
            .and_then(|v| v.get("authMethods").and_then(Value::as_array).cloned())
            .unwrap_or_default();
        for m in self.error_auth.lock().iter() {
            if !out.iter().any(|o| o.get("id") == m.get("id")) {
                out.push(m.clone());
            }
        }
        out
    }

    /// Keeps the sign-in methods an error's `data.authMethods` lists (the
    /// error of `session/new` or a prompt: JSON-RPC -32000). Methods with
    /// no string id are ignored.
    pub fn keep_error_auth_methods(&self, error: &Value) {
        if !is_auth_required(error) {
            return;
        }
        let Some(list) = error.pointer("/data/authMethods").and_then(Value::as_array) else {
            return;
        };
        let mut kept = self.error_auth.lock();
        for m in list {
            let Some(id) = m.get("id").and_then(Value::as_str) else {
                continue;
            };
            if let Some(old) = kept.iter_mut().find(|o| o["id"] == id) {
                *old = m.clone();
            } else {
                kept.push(m.clone());
            }
        }
    }

    /// Waits for the handshake; errors with the reason if the agent died.
    pub async fn ready(&self) -> Result<ConnectionTo<Agent>, String> {
        let mut rx = self.state.subscribe();
        loop {
            match rx.borrow_and_update().clone() {
                ConnState::Ready => {
                    return self
                        .cx
                        .lock()
                        .clone()
                        .ok_or_else(|| "connection lost".to_string())
                }
                ConnState::Closed(reason) => return Err(reason),
                ConnState::Starting => {}
            }
            if rx.changed().await.is_err() {
                return Err("connection dropped".into());
            }
        }
    }

    /// Waits until the connection is closed (the process exited).
    pub async fn closed(&self) {
        let mut rx = self.state.subscribe();
        while !matches!(*rx.borrow_and_update(), ConnState::Closed(_)) {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Routes `session_id` to `thread`, then applies the updates that came
    /// for it before the route existed, in arrival order.
    pub async fn route(&self, session_id: &str, sink: Arc<dyn SessionSink>) {
        let _order = self.apply.lock().await;
        self.routes
            .lock()
            .insert(session_id.to_owned(), Arc::downgrade(&sink));
        let early = self.early.lock().take(session_id);
        if !early.is_empty() {
            log::info(format!(
                "applying {} update(s) that arrived before session {session_id} was routed",
                early.len()
            ));
        }
        for update in early {
            sink.apply_update(update);
            bridge().wait_for_space().await;
        }
    }

    pub fn unroute(&self, session_id: &str) {
        self.routes.lock().remove(session_id);
    }

    pub(super) fn sink_for(&self, session_id: &str) -> Option<Arc<dyn SessionSink>> {
        self.routes.lock().get(session_id).and_then(Weak::upgrade)
    }

    /// `parent` announced child session `child` (`subagent_update`): the
    /// child's traffic goes to the chat of `parent`'s own owner.
    /// A session the client opened is never taken as a child.
    pub(super) fn note_child(&self, parent: &str, child: &str) {
        let opened =
            self.routes.lock().contains_key(child) || self.book.lock().sessions.contains(child);
        if opened {
            log::warn(format!(
                "agent {} announced session {child}, which the client opened, as a subagent (ignored)",
                self.spec.name
            ));
            return;
        }
        let mut children = self.children.lock();
        let root = children
            .get(parent)
            .cloned()
            .unwrap_or_else(|| parent.to_owned());
        if child != root {
            children.entry(child.to_owned()).or_insert(root);
        }
    }

    /// The session that owns subagent session `sid` (None: not a subagent).
    pub(super) fn owner_of(&self, sid: &str) -> Option<String> {
        self.children.lock().get(sid).cloned()
    }

    pub(super) fn routed_sinks(&self) -> Vec<Arc<dyn SessionSink>> {
        self.routes
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    pub(super) fn stderr_tail(&self) -> String {
        self.stderr_tail
            .lock()
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Notes a fault of the agent's input: always logged (the first few of
    /// a kind, then every 1000th), told in the chats once per kind.
    pub(super) fn protocol_fault(&self, kind: &'static str, what: &str) {
        let n = {
            let mut book = self.book.lock();
            let n = book.faults.entry(kind).or_default();
            *n += 1;
            *n
        };
        if n <= 5 || n % 1000 == 0 {
            log::warn(format!(
                "agent {} sent {what} (#{n} of its kind)",
                self.spec.name
            ));
        }
        if n == 1 {
            let text = format!(
                "Agent `{}` sent {what}; it was ignored (:AcpTrace shows the traffic)",
                self.spec.name
            );
            for sink in self.routed_sinks() {
                sink.protocol_warning(&text);
            }
        }
    }

    /// How many faults of `kind` the agent's input had (tests).
    #[cfg(test)]
    pub fn fault_count(&self, kind: &str) -> u64 {
        self.book.lock().faults.get(kind).copied().unwrap_or(0)
    }

    /// An outgoing line: requests are remembered until answered.
    pub(super) fn note_outgoing(&self, line: &[u8]) {
        // Only requests matter; they name their method near the start (a
        // response's text may hold the word further in).
        let head = &line[..line.len().min(256)];
        if !head.windows(8).any(|w| w == b"\"method\"") {
            return;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let (Some(id), Some(method)) = (msg.get("id"), msg.get("method").and_then(Value::as_str))
        else {
            return;
        };
        let mut book = self.book.lock();
        if SESSION_OPENERS.contains(&method) {
            if let Some(sid) = msg.pointer("/params/sessionId").and_then(Value::as_str) {
                book.sessions.insert(sid.to_owned());
            }
        }
        book.pending.insert(id.to_string(), method.to_owned());
    }

    /// An incoming response: false when its id is not one we sent.
    pub(super) fn note_response(&self, id: &str, result: Option<&Value>) -> bool {
        let mut book = self.book.lock();
        let Some(method) = book.pending.remove(id) else {
            return false;
        };
        if SESSION_OPENERS.contains(&method.as_str()) {
            if let Some(sid) = result
                .and_then(|r| r.get("sessionId"))
                .and_then(Value::as_str)
            {
                book.sessions.insert(sid.to_owned());
            }
        }
        true
    }

    /// Whether updates for `session_id` may still find their session: it
    /// was created, or a session is being opened.
    pub(super) fn session_may_exist(&self, session_id: &str) -> bool {
        let book = self.book.lock();
        book.sessions.contains(session_id)
            || book
                .pending
                .values()
                .any(|m| SESSION_OPENERS.contains(&m.as_str()))
    }

    /// Whether the agent's process group is known to be ours: its leader
    /// is not reaped yet, or a member recorded when it was still runs.
    fn group_is_ours(&self) -> bool {
        if self.pid == 0 {
            return false;
        }
        if !self.reaped.load(Ordering::SeqCst) {
            return true;
        }
        self.leftovers.lock().iter().any(procs::still_running)
    }

    /// Signals the agent's process group, only while it is known to be ours.
    pub(super) fn signal_group(&self, signal: libc::c_int) {
        if self.group_is_ours() {
            unsafe { libc::killpg(self.pid as libc::pid_t, signal) };
        }
    }

    /// Asks the agent's whole process group to stop (SIGTERM).
    pub fn terminate(&self) {
        self.stop.notify_waiters();
        if self.group_is_ours() {
            // Without a supervisor (not Linux): what left the group too.
            crate::platform::end_descendants(self.pid, libc::SIGTERM, &self.spec.keep_daemons);
        }
        self.signal_group(libc::SIGTERM);
    }

    /// True once the agent was reaped and no process of its group that we
    /// know of is left.
    pub fn group_gone(&self) -> bool {
        !self.group_is_ours()
    }

    pub fn force_kill(&self) {
        self.signal_group(libc::SIGKILL);
    }
}

/// Whether a JSON-RPC error (as JSON) is ACP's "auth required" (-32000): the
/// agent wants the user to sign in first.
pub fn is_auth_required(error: &Value) -> bool {
    error.get("code").and_then(Value::as_i64) == Some(-32000)
}

/// Updates held for sessions not routed yet, bounded: an agent that sends
/// updates for sessions that never come cannot grow memory without limit.
#[derive(Default)]
pub(super) struct EarlyUpdates {
    by_session: HashMap<String, Vec<SessionUpdate>>,
    count: usize,
}

const EARLY_UPDATES_MAX: usize = 4096;

impl EarlyUpdates {
    /// False when the bound is reached (the update is not kept).
    pub(super) fn push(&mut self, session_id: &str, update: SessionUpdate) -> bool {
        if self.count >= EARLY_UPDATES_MAX {
            return false;
        }
        self.count += 1;
        self.by_session
            .entry(session_id.to_owned())
            .or_default()
            .push(update);
        true
    }

    pub(super) fn take(&mut self, session_id: &str) -> Vec<SessionUpdate> {
        let taken = self.by_session.remove(session_id).unwrap_or_default();
        self.count -= taken.len();
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_updates_wait_per_session_and_are_bounded() {
        let mut early = EarlyUpdates::default();
        let u = |n: u64| SessionUpdate::Ignored(n.to_string());
        assert!(early.push("a", u(1)));
        assert!(early.push("b", u(2)));
        assert!(early.push("a", u(3)));
        assert_eq!(early.take("a"), vec![u(1), u(3)]);
        assert!(early.take("a").is_empty());
        for i in 0..EARLY_UPDATES_MAX - 1 {
            assert!(early.push("c", u(i as u64)));
        }
        assert!(!early.push("d", u(0)), "the bound holds across sessions");
        assert_eq!(early.take("b").len(), 1);
        assert!(early.push("d", u(0)), "taking frees room");
    }

    #[test]
    fn a_subagent_and_its_own_subagents_belong_to_the_chat_of_the_session_that_owns_them() {
        let conn = Connection::for_test(1024, &["parent"]);
        assert_eq!(conn.owner_of("child"), None);
        conn.note_child("parent", "child");
        conn.note_child("child", "grandchild");
        assert_eq!(conn.owner_of("child").as_deref(), Some("parent"));
        assert_eq!(conn.owner_of("grandchild").as_deref(), Some("parent"));
        // A session never owns itself, nor one the client opened, and an
        // announce again changes nothing.
        conn.note_child("child", "parent");
        conn.note_child("parent", "parent");
        conn.note_child("other", "child");
        assert_eq!(conn.owner_of("parent"), None);
        assert_eq!(conn.owner_of("child").as_deref(), Some("parent"));
    }

    #[test]
    fn sign_in_methods_of_an_auth_required_error_join_initialize_s() {
        use serde_json::json;
        let conn = Connection::for_test(1024, &[]);
        *conn.init.lock() = Some(json!({"authMethods": [{"id": "login", "name": "init's"}]}));
        // Kimi CLI 1.51.0's session/new error.
        let kimi = json!({"code": -32000, "message": "Authentication required", "data": {
        "authMethods": [
            {"id": "login", "name": "error's", "type": "terminal", "args": ["login"], "env": {}},
            {"id": "browser", "name": "Browser", "_meta": {"terminal-auth": {"command": "kimi"}}},
            {"name": "no id"}
        ]}});
        conn.keep_error_auth_methods(
            &json!({"code": -32603, "data": {"authMethods": [{"id": "x"}]}}),
        );
        assert_eq!(
            conn.auth_methods().len(),
            1,
            "only an auth-required error counts"
        );
        conn.keep_error_auth_methods(&kimi);
        conn.keep_error_auth_methods(&kimi);
        let ids: Vec<_> = conn
            .auth_methods()
            .iter()
            .map(|m| m["id"].clone())
            .collect();
        assert_eq!(ids, vec![json!("login"), json!("browser")]);
        assert_eq!(
            conn.auth_methods()[0]["name"],
            "init's",
            "initialize's method wins"
        );
        *conn.init.lock() = Some(json!({"authMethods": []}));
        assert_eq!(conn.auth_methods()[0]["name"], "error's");
    }
}
