//! One agent process and the ACP connection over its stdio. A connection
//! serves many sessions; incoming `session/update`s are routed to the chat
//! thread that owns the sessionId.

use std::collections::{HashMap, HashSet, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
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
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{watch, Notify};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::bridge::handoff::bridge;
use crate::config::{AgentSpec, Caps};
use crate::log;
use crate::model::render::human_ms;
use crate::model::update::{self, AgentRequest, RequestError, SessionUpdate};
use crate::platform;
use crate::protocol::framing::{self, LineRead};
use crate::protocol::procs::{self, ProcId};
use crate::protocol::trace::{self, Trace, TracedWriter};

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
    /// The agent sent something malformed that was ignored (told once per
    /// kind of fault and connection).
    fn protocol_warning(&self, _text: &str) {}
    /// The chat this sink is (for requests the view answers directly).
    fn thread_id(&self) -> Option<u64> {
        None
    }
}

/// The client capabilities advertised in `initialize`: only what is on in
/// `caps`. `_meta.terminal_output` asks the Claude and Codex adapters for
/// their own display terminals. Always implemented: `terminal` sign-in
/// methods, boolean config options, and both elicitation modes (form and
/// URL).
fn client_capabilities(caps: &Caps) -> ClientCapabilities {
    let mut advertised = ClientCapabilities::new()
        .fs(FileSystemCapabilities::new()
            .read_text_file(caps.fs_read)
            .write_text_file(caps.fs_write))
        .terminal(caps.terminal)
        .auth(AuthCapabilities::new().terminal(true))
        .session(ClientSessionCapabilities::new().config_options(
            SessionConfigOptionsCapabilities::new().boolean(BooleanConfigOptionCapabilities::new()),
        ))
        .elicitation(
            ElicitationCapabilities::new()
                .form(ElicitationFormCapabilities::new())
                .url(ElicitationUrlCapabilities::new()),
        );
    if caps.terminal {
        let mut meta = serde_json::Map::new();
        meta.insert("terminal_output".into(), Value::Bool(true));
        advertised = advertised.meta(meta);
    }
    advertised
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
    /// Both directions of JSON-RPC traffic and the agent's stderr.
    pub trace: Arc<Trace>,
    /// Set once the agent process was waited for (its pid may be reused
    /// from then on); see `procs`.
    reaped: AtomicBool,
    /// Members of the agent's process group left when it was reaped.
    leftovers: Mutex<Vec<ProcId>>,
    /// Requests sent and not answered, and the sessions the agent created.
    book: Mutex<Bookkeeping>,
}

/// What the connection knows of the traffic so far, to name malformed
/// input: a response to an id never sent, an update for a session that
/// does not exist.
#[derive(Default)]
struct Bookkeeping {
    /// Request id (as JSON text) -> method.
    pending: HashMap<String, String>,
    /// Session ids created by (or loaded into) the agent.
    sessions: HashSet<String>,
    /// Faults seen per kind.
    faults: HashMap<&'static str, u64>,
    /// The first line of stdout that was not JSON (cut), for the exit
    /// report: a wrong command prints its usage there.
    junk: Option<String>,
}

/// Methods whose answer creates a session (updates for it may come first).
const SESSION_OPENERS: &[&str] = &[
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
];

/// A line from the agent other than a `session/update`, as far as the
/// client's bookkeeping cares.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// Only whitespace: tolerated between messages, not passed on.
    Blank,
    NotJson,
    /// JSON, but neither a request, a notification nor a response.
    NotJsonRpc,
    /// A response to request `id` (JSON text) with its `result`, if any.
    Response {
        id: String,
        result: Option<Value>,
    },
    /// A request or a notification (the SDK answers or ignores it).
    Message,
}

pub(crate) fn classify(line: &[u8]) -> Incoming {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Incoming::Blank;
    }
    let Ok(msg) = serde_json::from_slice::<Value>(line) else {
        return Incoming::NotJson;
    };
    let Some(obj) = msg.as_object() else {
        return Incoming::NotJsonRpc;
    };
    if obj.get("method").is_some_and(Value::is_string) {
        return Incoming::Message;
    }
    match obj.get("id") {
        Some(id) if obj.contains_key("result") || obj.contains_key("error") => Incoming::Response {
            id: id.to_string(),
            result: obj.get("result").cloned(),
        },
        _ => Incoming::NotJsonRpc,
    }
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
        // Arguments can carry secrets (`--api-key sk-…`): their values are
        // hidden, as the log's own redaction does not see flag pairs.
        log::info(format!(
            "agent {} started: pid {pid} {} {:?}",
            spec.name,
            spec.cmd,
            crate::redact::redact_args(&spec.args)
        ));
        let (state, _) = watch::channel(ConnState::Starting);
        let trace = Trace::new(spec.trace_max);
        let conn = Arc::new(Connection {
            trace,
            reaped: AtomicBool::new(false),
            leftovers: Mutex::new(Vec::new()),
            book: Mutex::new(Bookkeeping::default()),
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
            caps: Caps::default(),
            line_max,
            timeouts: crate::config::Timeouts::default(),
            trace_max: 100,
        };
        let (state, _) = watch::channel(ConnState::Starting);
        let book = Bookkeeping {
            sessions: sessions.iter().map(|s| s.to_string()).collect(),
            ..Bookkeeping::default()
        };
        Arc::new(Connection {
            trace: Trace::new(spec.trace_max),
            reaped: AtomicBool::new(true),
            leftovers: Mutex::new(Vec::new()),
            book: Mutex::new(book),
            spec,
            pid: 0,
            state,
            cx: Mutex::new(None),
            init: Mutex::new(None),
            routes: Mutex::new(HashMap::new()),
            early: Mutex::new(EarlyUpdates::default()),
            apply: tokio::sync::Mutex::new(()),
            stderr_tail: Mutex::new(VecDeque::new()),
            fault: Mutex::new(None),
            stop: Notify::new(),
        })
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

    /// Notes a fault of the agent's input: always logged (the first few of
    /// a kind, then every 1000th), told in the chats once per kind.
    fn protocol_fault(&self, kind: &'static str, what: &str) {
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

    /// How many faults of `kind` the agent's input had.
    pub fn fault_count(&self, kind: &str) -> u64 {
        self.book.lock().faults.get(kind).copied().unwrap_or(0)
    }

    /// An outgoing line: requests are remembered until answered.
    fn note_outgoing(&self, line: &[u8]) {
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
    fn note_response(&self, id: &str, result: Option<&Value>) -> bool {
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
    fn session_may_exist(&self, session_id: &str) -> bool {
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
    fn signal_group(&self, signal: libc::c_int) {
        if self.group_is_ours() {
            unsafe { libc::killpg(self.pid as libc::pid_t, signal) };
        }
    }

    /// Asks the agent's whole process group to stop (SIGTERM).
    pub fn terminate(&self) {
        self.stop.notify_waiters();
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

/// The agent's stderr: every line goes to the trace and the tail shown when
/// it exits; the log gets them capped in length and rate.
async fn read_stderr(conn: Arc<Connection>, stderr: tokio::process::ChildStderr) {
    let mut reader = BufReader::with_capacity(1 << 14, stderr);
    let mut gate = log::StderrGate::default();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Bounded like stdout: a line without an end cannot grow memory.
        match framing::read_line_capped(&mut reader, &mut buf, 1 << 20).await {
            Ok(LineRead::Line(_)) | Ok(LineRead::TooLong { .. }) => {}
            Ok(LineRead::Eof) | Err(_) => break,
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches(['\n', '\r']);
        conn.trace.record(trace::Dir::Stderr, text.as_bytes());
        let name = &conn.spec.name;
        let admitted = gate.admit(std::time::Instant::now(), |n| {
            log::write(
                "AGENT",
                &format!(
                    "[{name}] {n} stderr line(s) not logged (over {} a second)",
                    log::STDERR_LINES_PER_SEC
                ),
            )
        });
        let line = log::cap_line(text, log::STDERR_LINE_MAX).into_owned();
        if admitted {
            log::write("AGENT", &format!("[{name}] {line}"));
        }
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
    // From here the pid may be reused: the group is ours only through the
    // members still running now. They are orphans of a dead agent: stopped.
    let leftovers = procs::group_members(conn.pid as i32);
    let had_leftovers = !leftovers.is_empty();
    *conn.leftovers.lock() = leftovers;
    conn.reaped.store(true, Ordering::SeqCst);
    if had_leftovers {
        conn.signal_group(libc::SIGTERM);
        let c = conn.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1000)).await;
            c.force_kill();
        });
    }
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
        None if matches!(conn.state(), ConnState::Starting) => format!(
            "Agent `{name}` {how} before answering `initialize`: is `{cmd}` an ACP agent? (agents.{name}.cmd, agents.{name}.args)",
            name = conn.spec.name,
            cmd = conn.spec.cmd,
        ),
        None => format!("Agent `{}` {how}.", conn.spec.name),
    };
    if let Some(junk) = conn.book.lock().junk.take() {
        reason.push_str("\nIt printed: ");
        reason.push_str(&junk);
    }
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
    let observer = Arc::downgrade(&conn);
    let stdin = TracedWriter::new(stdin, conn.trace.clone()).observe(move |line| {
        if let Some(conn) = observer.upgrade() {
            conn.note_outgoing(line);
        }
    });
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
                .client_capabilities(client_capabilities(&main.spec.caps))
                .client_info(Implementation::new("acp.nvim", env!("CARGO_PKG_VERSION")));
            let params = serde_json::to_value(&request)
                .map_err(|e| agent_client_protocol::Error::internal_error().data(e.to_string()))?;
            // Kept as sent: sign-in methods of kinds the typed schema does
            // not know (`env_var`) keep their fields.
            let limit = main.spec.timeouts.initialize;
            let answer = tokio::time::timeout(
                Duration::from_millis(limit),
                cx.send_request(UntypedMessage::new("initialize", params)?)
                    .block_task(),
            )
            .await;
            let init = match answer {
                Ok(answer) => answer?,
                Err(_) => {
                    // The exit report carries the reason; the next message
                    // starts the agent again.
                    let reason = format!(
                        "Agent `{}` did not answer `initialize` within {}; it was stopped (send a message to start it again)",
                        main.spec.name,
                        human_ms(limit)
                    );
                    log::warn(&reason);
                    *main.fault.lock() = Some(reason);
                    main.terminate();
                    return Ok(());
                }
            };
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
        // A handshake failure on a live process: report it and stop the
        // agent. A process that is exiting (a broken pipe) gets its exit
        // report instead, which says more (exit code, what it printed).
        if matches!(conn.state(), ConnState::Starting)
            && tokio::time::timeout(Duration::from_millis(500), conn.closed())
                .await
                .is_err()
        {
            *conn.fault.lock() = Some(format!(
                "Agent `{}` failed the ACP handshake: {e}",
                conn.spec.name
            ));
            conn.terminate();
        }
    }
}

/// Reads the agent's stdout line by line. A `session/update` notification
/// is applied in arrival order before the next line is read, so a later
/// response (the end of a turn) can never overtake it; every other line is
/// passed to the SDK unchanged. Cuts the per-message cost of a stream to a
/// single JSON parse (the SDK parses, re-serialises and parses again).
pub(crate) async fn route_incoming(
    conn: Arc<Connection>,
    stdout: impl AsyncRead + Unpin,
    mut feed: impl AsyncWrite + Unpin,
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
                conn.trace.record(trace::Dir::In, &line);
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
        if framing::sanitize_utf8_in_place(&mut line) {
            conn.protocol_fault("invalid_utf8", "invalid UTF-8 (replaced by U+FFFD)");
        }
        conn.trace.record(trace::Dir::In, &line);
        if let Some(params) = session_update_params(&line) {
            apply_session_update(&conn, &params).await;
            continue;
        }
        match classify(&line) {
            Incoming::Blank => continue,
            Incoming::NotJson => {
                {
                    let mut book = conn.book.lock();
                    if book.junk.is_none() {
                        let text = String::from_utf8_lossy(&line);
                        let text = text.trim_end();
                        book.junk = Some(log::cap_line(text, 200).into_owned());
                    }
                }
                conn.protocol_fault("not_json", "a line that is not JSON")
            }
            Incoming::NotJsonRpc => {
                conn.protocol_fault("not_jsonrpc", "JSON that is not a JSON-RPC message")
            }
            Incoming::Response { id, result } => {
                // Passed on either way: the SDK matches responses itself.
                if !conn.note_response(&id, result.as_ref()) {
                    conn.protocol_fault(
                        "unknown_id",
                        &format!("a response to request id {id}, which was never sent or is already answered"),
                    );
                }
            }
            Incoming::Message => {}
        }
        if feed.write_all(&line).await.is_err() {
            break;
        }
    }
    let _ = feed.shutdown().await;
}

/// The params of a `session/update` notification (no `id`), else None.
pub(crate) fn session_update_params(line: &[u8]) -> Option<Value> {
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
        None if !conn.session_may_exist(sid) => {
            conn.protocol_fault(
                "unknown_session",
                &format!("an update for session `{sid}`, which it never created"),
            );
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
            Some(id) => crate::protocol::elicitation::complete(id),
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
        crate::protocol::elicitation::ask(thread, raw, responder);
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
