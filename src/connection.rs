//! One agent process and the ACP connection over its stdio. A connection
//! serves many sessions; incoming `session/update`s are routed to the chat
//! thread that owns the sessionId.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Weak};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AuthCapabilities, BooleanConfigOptionCapabilities, ClientCapabilities,
    ClientSessionCapabilities, ElicitationCapabilities, ElicitationFormCapabilities,
    ElicitationUrlCapabilities, FileSystemCapabilities, Implementation, InitializeRequest,
    SessionConfigOptionsCapabilities,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::{Agent, ByteStreams, Client, UntypedMessage};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{watch, Notify};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::bridge::bridge;
use crate::framing::{self, LineRead};
use crate::log;
use crate::platform;
use crate::update::{self, AgentRequest, RequestError, SessionUpdate};

/// What a connection routes a session's traffic to (a chat thread). The
/// connection knows nothing else about chats: it parses, routes, and
/// applies back-pressure.
pub trait SessionSink: Send + Sync {
    /// One `session/update`, in arrival order.
    fn apply_update(&self, update: SessionUpdate);
    /// A request of the agent for this session; the sink must answer
    /// `responder` (now or later), never await the agent here.
    fn agent_request(&self, request: AgentRequest, responder: Responder<Value>);
    /// The agent process behind `conn` is gone.
    fn disconnected(&self, conn: &Arc<Connection>, reason: &str);
    /// The chat this sink is (for requests the view answers directly).
    fn thread_id(&self) -> Option<u64> {
        None
    }
}

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
}

fn default_line_max() -> usize {
    crate::framing::DEFAULT_LINE_CAP
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Caps {
    pub fs_read: bool,
    pub fs_write: bool,
    pub terminal: bool,
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            fs_read: true,
            fs_write: true,
            terminal: true,
        }
    }
}

impl Caps {
    /// Only what is on is advertised. `_meta.terminal_output` asks the
    /// Claude and Codex adapters for their own display terminals. Always
    /// implemented: `terminal` sign-in methods, boolean config options, and
    /// both elicitation modes (form and URL).
    fn client_capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::new()
            .fs(FileSystemCapabilities::new()
                .read_text_file(self.fs_read)
                .write_text_file(self.fs_write))
            .terminal(self.terminal)
            .auth(AuthCapabilities::new().terminal(true))
            .session(
                ClientSessionCapabilities::new().config_options(
                    SessionConfigOptionsCapabilities::new()
                        .boolean(BooleanConfigOptionCapabilities::new()),
                ),
            )
            .elicitation(
                ElicitationCapabilities::new()
                    .form(ElicitationFormCapabilities::new())
                    .url(ElicitationUrlCapabilities::new()),
            );
        if self.terminal {
            let mut meta = serde_json::Map::new();
            meta.insert("terminal_output".into(), Value::Bool(true));
            caps = caps.meta(meta);
        }
        caps
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConnState {
    Starting,
    Ready,
    /// Closed with a human-readable reason (exit code, last stderr lines).
    Closed(String),
}

const STDERR_TAIL_LINES: usize = 20;

pub struct Connection {
    pub spec: AgentSpec,
    pub pid: u32,
    state: watch::Sender<ConnState>,
    cx: Mutex<Option<ConnectionTo<Agent>>>,
    init: Mutex<Option<Value>>,
    routes: Mutex<HashMap<String, Weak<dyn SessionSink>>>,
    /// Updates for a session id nobody routes yet. Agents send updates in the
    /// same write as the `session/new` answer, and the fast path sees them
    /// before the SDK resolves that answer: they wait here for `route`.
    early: Mutex<EarlyUpdates>,
    /// Held while an update is applied and while `route` replays the early
    /// ones, so a session's updates reach its thread in arrival order.
    apply: tokio::sync::Mutex<()>,
    stderr_tail: Mutex<VecDeque<String>>,
    /// Why the client ended the connection itself (told before the exit).
    fault: Mutex<Option<String>>,
    stop: Notify,
}

impl Connection {
    /// Spawns the agent in its own process group and starts the ACP
    /// handshake in the background. Must run inside the tokio runtime.
    pub fn spawn(spec: AgentSpec) -> Result<Arc<Self>, String> {
        let mut cmd = tokio::process::Command::new(&spec.cmd);
        cmd.args(&spec.args)
            .envs(&spec.env)
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        // If Neovim dies without running its exit hooks, the agent gets a
        // SIGTERM instead of living on as an orphan.
        platform::end_with_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "cannot start agent `{}`: `{}` {} (set agents.{}.cmd)",
                spec.name,
                spec.cmd,
                match e.kind() {
                    std::io::ErrorKind::NotFound => "was not found in PATH".to_string(),
                    _ => format!("failed: {e}"),
                },
                spec.name
            )
        })?;
        let pid = child.id().unwrap_or(0);
        platform::watch_parent(pid);
        log::info(format!(
            "agent {} started: pid {pid} {} {:?}",
            spec.name, spec.cmd, spec.args
        ));
        let (state, _) = watch::channel(ConnState::Starting);
        let conn = Arc::new(Connection {
            spec,
            pid,
            state,
            cx: Mutex::new(None),
            init: Mutex::new(None),
            routes: Mutex::new(HashMap::new()),
            early: Mutex::new(EarlyUpdates::default()),
            apply: tokio::sync::Mutex::new(()),
            stderr_tail: Mutex::new(VecDeque::new()),
            fault: Mutex::new(None),
            stop: Notify::new(),
        });
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");

        let stderr_task = tokio::spawn(read_stderr(conn.clone(), stderr));
        tokio::spawn(run_protocol(conn.clone(), stdin, stdout));
        tokio::spawn(watch_exit(conn.clone(), child, stderr_task));
        Ok(conn)
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

    fn sink_for(&self, session_id: &str) -> Option<Arc<dyn SessionSink>> {
        self.routes.lock().get(session_id).and_then(Weak::upgrade)
    }

    fn routed_sinks(&self) -> Vec<Arc<dyn SessionSink>> {
        self.routes
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    fn stderr_tail(&self) -> String {
        self.stderr_tail
            .lock()
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Asks the agent's whole process group to stop (SIGTERM).
    pub fn terminate(&self) {
        self.stop.notify_waiters();
        if self.pid != 0 {
            unsafe { libc::killpg(self.pid as libc::pid_t, libc::SIGTERM) };
        }
    }

    /// True once no process of the agent's group is left.
    pub fn group_gone(&self) -> bool {
        // killpg with signal 0 fails once the group is empty.
        self.pid == 0 || unsafe { libc::killpg(self.pid as libc::pid_t, 0) } != 0
    }

    pub fn force_kill(&self) {
        if self.pid != 0 {
            unsafe { libc::killpg(self.pid as libc::pid_t, libc::SIGKILL) };
        }
    }
}

async fn read_stderr(conn: Arc<Connection>, stderr: tokio::process::ChildStderr) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        log::write("AGENT", &format!("[{}] {line}", conn.spec.name));
        let mut tail = conn.stderr_tail.lock();
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

async fn watch_exit(
    conn: Arc<Connection>,
    mut child: tokio::process::Child,
    stderr_task: tokio::task::JoinHandle<()>,
) {
    let status = child.wait().await;
    // Let the stderr reader catch the last lines the agent printed.
    let _ = tokio::time::timeout(Duration::from_millis(300), stderr_task).await;
    let how = match status {
        Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            _ => "exited".to_string(),
        },
        Err(e) => format!("could not be waited for: {e}"),
    };
    let tail = conn.stderr_tail();
    let mut reason = match conn.fault.lock().take() {
        Some(fault) => format!("{fault}. Agent `{}` {how}.", conn.spec.name),
        None => format!("Agent `{}` {how}.", conn.spec.name),
    };
    if !tail.is_empty() {
        reason.push_str("\nLast stderr lines:\n");
        reason.push_str(&tail);
    }
    log::info(&reason);
    conn.state.send_replace(ConnState::Closed(reason.clone()));
    conn.cx.lock().take();
    for sink in conn.routed_sinks() {
        sink.disconnected(&conn, &reason);
    }
}

async fn run_protocol(
    conn: Arc<Connection>,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
) {
    let on_notif = conn.clone();
    let on_req = conn.clone();
    let main = conn.clone();
    // The agent's stdout goes through our own line reader first: the
    // stream of session/update notifications (nearly all the traffic) is
    // parsed once and applied here; everything else goes on to the SDK.
    let (sdk_side, feed) = tokio::io::duplex(1 << 20);
    tokio::spawn(route_incoming(conn.clone(), stdout, feed));
    let transport = ByteStreams::new(stdin.compat_write(), sdk_side.compat());
    let result = Client
        .v1()
        .name("acp.nvim")
        .on_receive_notification(
            async move |msg: UntypedMessage, _cx: ConnectionTo<Agent>| {
                handle_notification(&on_notif, msg).await;
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |msg: UntypedMessage,
                        responder: Responder<Value>,
                        _cx: ConnectionTo<Agent>| {
                handle_request(&on_req, msg, responder);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let request = InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(main.spec.caps.client_capabilities())
                .client_info(Implementation::new("acp.nvim", env!("CARGO_PKG_VERSION")));
            let params = serde_json::to_value(&request)
                .map_err(|e| agent_client_protocol::Error::internal_error().data(e.to_string()))?;
            // Kept as sent: sign-in methods of kinds the typed schema does
            // not know (`env_var`) keep their fields.
            let init = cx
                .send_request(UntypedMessage::new("initialize", params)?)
                .block_task()
                .await?;
            *main.init.lock() = Some(init);
            *main.cx.lock() = Some(cx.clone());
            main.state.send_replace(ConnState::Ready);
            log::info(format!("agent {} initialized", main.spec.name));
            tokio::select! {
                _ = cx.terminated() => {}
                _ = main.stop.notified() => {}
            }
            Ok(())
        })
        .await;
    if let Err(e) = result {
        log::warn(format!("agent {} connection ended: {e}", conn.spec.name));
        // A handshake failure on a live process: report it and stop the agent.
        if matches!(conn.state(), ConnState::Starting) {
            let reason = format!("Agent `{}` failed the ACP handshake: {e}", conn.spec.name);
            conn.state.send_replace(ConnState::Closed(reason));
            unsafe { libc::killpg(conn.pid as libc::pid_t, libc::SIGTERM) };
        }
    }
}

/// Reads the agent's stdout line by line. A `session/update` notification
/// is applied in arrival order before the next line is read, so a later
/// response (the end of a turn) can never overtake it; every other line is
/// passed to the SDK unchanged. Cuts the per-message cost of a stream to a
/// single JSON parse (the SDK parses, re-serialises and parses again).
async fn route_incoming(
    conn: Arc<Connection>,
    stdout: tokio::process::ChildStdout,
    mut feed: tokio::io::DuplexStream,
) {
    use tokio::io::AsyncWriteExt;
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    let mut line = Vec::with_capacity(1024);
    let cap = conn.spec.line_max;
    loop {
        line.clear();
        match framing::read_line_capped(&mut reader, &mut line, cap).await {
            Ok(LineRead::Line(_)) => {}
            Ok(LineRead::Eof) | Err(_) => break,
            Ok(LineRead::TooLong { .. }) => {
                // Memory stays bounded: the agent is stopped, and its exit
                // report carries the reason.
                let reason = framing::too_long_message(&conn.spec.name, cap);
                log::warn(&reason);
                *conn.fault.lock() = Some(reason);
                conn.terminate();
                break;
            }
        }
        // One invalid byte must not cost the message (or the connection).
        framing::sanitize_utf8_in_place(&mut line);
        if let Some(params) = session_update_params(&line) {
            apply_session_update(&conn, &params).await;
            continue;
        }
        if feed.write_all(&line).await.is_err() {
            break;
        }
    }
    let _ = feed.shutdown().await;
}

/// The params of a `session/update` notification (no `id`), else None.
fn session_update_params(line: &[u8]) -> Option<Value> {
    // Cheap pre-check before the full parse.
    if !line.windows(16).any(|w| w == b"\"session/update\"") {
        return None;
    }
    let mut msg: Value = serde_json::from_slice(line).ok()?;
    if msg.get("method").and_then(Value::as_str) != Some("session/update")
        || msg.get("id").is_some()
    {
        return None;
    }
    msg.get_mut("params").map(Value::take)
}

async fn apply_session_update(conn: &Arc<Connection>, params: &Value) {
    let Some(sid) = params.get("sessionId").and_then(Value::as_str) else {
        log::warn("session/update without sessionId");
        return;
    };
    let Some(update) = params.get("update") else {
        return;
    };
    // The one parse into the model's types.
    let update = update::parse_update(update);
    let _order = conn.apply.lock().await;
    match conn.sink_for(sid) {
        Some(sink) => {
            sink.apply_update(update);
            // Holds the agent's read loop while the UI is far behind: the
            // back-pressure.
            bridge().wait_for_space().await;
        }
        None => {
            if !conn.early.lock().push(sid, update) {
                log::warn(format!(
                    "session/update for unknown session {sid} (dropped: too many early updates)"
                ));
            }
        }
    }
}

/// Updates held for sessions not routed yet, bounded: an agent that sends
/// updates for sessions that never come cannot grow memory without limit.
#[derive(Default)]
struct EarlyUpdates {
    by_session: HashMap<String, Vec<SessionUpdate>>,
    count: usize,
}

const EARLY_UPDATES_MAX: usize = 4096;

impl EarlyUpdates {
    /// False when the bound is reached (the update is not kept).
    fn push(&mut self, session_id: &str, update: SessionUpdate) -> bool {
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

    fn take(&mut self, session_id: &str) -> Vec<SessionUpdate> {
        let taken = self.by_session.remove(session_id).unwrap_or_default();
        self.count -= taken.len();
        taken
    }
}

async fn handle_notification(conn: &Arc<Connection>, msg: UntypedMessage) {
    match msg.method() {
        // Normally taken by `route_incoming` before the SDK sees it.
        "session/update" => apply_session_update(conn, msg.params()).await,
        "elicitation/complete" => match msg.params().get("elicitationId").and_then(Value::as_str) {
            Some(id) => crate::elicitation::complete(id),
            None => log::warn("elicitation/complete without elicitationId"),
        },
        // Extension notifications (`_auth/status_update`, ...) are optional.
        m if m.starts_with('_') => {}
        m => log::info(format!("ignored notification {m}")),
    }
}

/// Answers agent requests: parsed once into `AgentRequest`, then handed to
/// the session's sink. Never awaits the agent here: anything slow is the
/// sink's to spawn (it holds the responder until the user answers).
fn handle_request(conn: &Arc<Connection>, msg: UntypedMessage, responder: Responder<Value>) {
    let (method, params) = msg.into_parts();
    log::info(format!("request {method}"));
    let request = match AgentRequest::parse(&method, params) {
        Ok(r) => r,
        Err(RequestError::UnknownMethod(m)) => {
            log::info(format!("answered -32601 to {m}"));
            let _ = responder.respond_with_error(agent_client_protocol::Error::method_not_found());
            return;
        }
        Err(RequestError::InvalidParams(reason)) => {
            log::info(format!("answered -32602 to {method}: {reason}"));
            let _ = responder.respond_with_error(
                agent_client_protocol::Error::invalid_params()
                    .data(serde_json::json!({ "reason": reason })),
            );
            return;
        }
    };
    if let AgentRequest::Elicitation { session_id, raw } = request {
        // Request-scoped ones (no session) belong to no chat.
        let thread = session_id
            .and_then(|sid| conn.sink_for(&sid))
            .and_then(|sink| sink.thread_id());
        crate::elicitation::ask(thread, raw, responder);
        return;
    }
    match conn.sink_for(request.session_id()) {
        Some(sink) => sink.agent_request(request, responder),
        None => {
            let _ = responder.respond_with_error(
                agent_client_protocol::Error::invalid_params()
                    .data(serde_json::json!({"reason": "unknown sessionId"})),
            );
        }
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
    fn only_session_update_notifications_take_the_fast_path() {
        let n = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}}"#;
        assert_eq!(session_update_params(n).unwrap()["sessionId"], "s");
        // A request that merely mentions the method (e.g. writing a file
        // that contains the text) goes to the SDK.
        let req = br#"{"jsonrpc":"2.0","id":3,"method":"fs/write_text_file","params":{"content":"\"session/update\""}}"#;
        assert!(session_update_params(req).is_none());
        let with_id = br#"{"jsonrpc":"2.0","id":0,"method":"session/update","params":{}}"#;
        assert!(session_update_params(with_id).is_none());
        assert!(session_update_params(b"not json \"session/update\"").is_none());
        assert!(session_update_params(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_none());
    }
}
