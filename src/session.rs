//! Chat threads and the registry of agent connections. A `ThreadHandle` owns
//! the conversation model of one chat and binds it to an ACP session, which
//! it (re)creates on demand: eagerly when the chat opens, and again after the
//! agent process died.
//!
//! Everything here is called either from tokio tasks or from the main thread
//! through `lua_api`; main-thread entry points only lock short mutexes and
//! spawn tasks, they never wait on the agent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, CancelNotification, ContentBlock, LoadSessionRequest, McpServer,
    NewSessionRequest, PromptRequest, ResumeSessionRequest, SetSessionModeRequest,
};
use agent_client_protocol::v1::Responder;
use agent_client_protocol::UntypedMessage;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::bridge::handoff::bridge;
use crate::bridge::queue::UiEvent;
use crate::config::{AgentSpec, Policy, TerminalConfirm};
use crate::editor::policy::{self, Subject};
use crate::editor::state::EditorState;
use crate::log;
use crate::model::entries::{ClientState, NoticeLevel};
use crate::model::events::{ThreadEvent, TurnState};
use crate::model::schema::{PermissionOptionKind, ToolKind};
use crate::model::thread::Thread;
use crate::model::update::{PermissionOption, PermissionRequest, SessionUpdate};
use crate::permission::{Choice, Pending, Permissions, ReplyTo};
use crate::protocol::connection::{Connection, SessionSink};
use crate::protocol::inbound::AgentRequest;

/// An outgoing request built from the protocol crate's typed params, sent
/// untyped so that the answer is read leniently (agents' answers carry
/// quirks a strict parse would reject).
fn typed_request<T: serde::Serialize>(method: &str, params: &T) -> Result<UntypedMessage, String> {
    let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
    UntypedMessage::new(method, params).map_err(|e| e.to_string())
}

struct Bound {
    conn: Arc<Connection>,
    session_id: String,
}

pub struct ThreadHandle {
    pub id: u64,
    pub spec: AgentSpec,
    /// Roots, policy, served snapshots, writes and terminals of this chat.
    pub editor: EditorState,
    mcp_servers: Vec<McpServer>,
    model: Mutex<Thread>,
    /// Serialises session creation; holds the live binding.
    session: tokio::sync::Mutex<Option<Bound>>,
    /// A copy of the binding readable without awaiting (for cancel).
    current: Mutex<Option<(Arc<Connection>, String)>>,
    permissions: Mutex<Permissions>,
    /// Set when the agent died under a live session: the next session
    /// creation tells the user that the conversation restarted.
    lost_session: std::sync::atomic::AtomicBool,
    /// A prompt sent while the cancelled turn was still ending: it goes out
    /// once that turn has ended, so the two never mix.
    queued: Mutex<Option<Vec<ContentBlock>>>,
    /// The session to open instead of a new one (`open_thread`'s `resume`).
    resume: Mutex<Option<String>>,
    /// The pending `session/load`/`session/resume`, while it runs.
    loading: Mutex<Option<agent_client_protocol::RequestCancellationHandle>>,
    /// The user gave up on a slow load (`cancel`).
    give_up: tokio::sync::Notify,
    /// The chat was told that kept file texts are being dropped.
    told_dropped: std::sync::atomic::AtomicBool,
}

/// Requests the view may send through `ThreadHandle::request`.
/// JSON-RPC codes of refused permission requests.
const INVALID_PARAMS: i32 = -32602;
const INTERNAL_ERROR: i32 = -32603;

/// The most permission requests of one chat that wait for the user; more
/// are refused at once (an agent cannot bury the editor in floats).
pub const MAX_PENDING_PERMISSIONS: usize = 64;

const VIEW_METHODS: &[&str] = &[
    "session/set_config_option",
    "session/set_model",
    "session/list",
    "session/close",
    "session/delete",
    "logout",
];

/// Those that act on this chat's session by default.
const SESSION_METHODS: &[&str] = &[
    "session/set_config_option",
    "session/set_model",
    "session/close",
];

/// The MCP servers an agent can take: stdio always, http and sse only when
/// advertised in `mcpCapabilities`. Returns them and the names left out.
fn mcp_servers_for(servers: &[McpServer], caps: &Value) -> (Vec<McpServer>, Vec<String>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for server in servers {
        let (transport, name) = match server {
            McpServer::Http(s) => (Some("http"), s.name.clone()),
            McpServer::Sse(s) => (Some("sse"), s.name.clone()),
            McpServer::Stdio(s) => (None, s.name.clone()),
            _ => (Some("?"), String::from("?")),
        };
        let ok = match transport {
            None => true,
            Some(t) => caps
                .pointer(&format!("/mcpCapabilities/{t}"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
        };
        if ok {
            kept.push(server.clone());
        } else {
            dropped.push(format!("`{name}`"));
        }
    }
    (kept, dropped)
}

/// Events of a `session/new`, `session/load` or `session/resume` answer:
/// modes, config options and the legacy models. Config options win over
/// models in the view; both are passed on.
fn session_answer_events(response: &Value) -> Vec<ThreadEvent> {
    let mut ev = Vec::new();
    if let Some(modes) = response.get("modes").filter(|m| m.is_object()) {
        ev.push(ThreadEvent::Modes {
            modes: modes.clone(),
        });
        if let Some(mode_id) = modes.get("currentModeId").and_then(Value::as_str) {
            ev.push(ThreadEvent::Mode {
                mode_id: mode_id.to_owned(),
            });
        }
    }
    if let Some(options) = response.get("configOptions").filter(|v| v.is_array()) {
        ev.push(ThreadEvent::ConfigOptions {
            options: options.clone(),
        });
    }
    if let Some(models) = response.get("models").filter(|v| v.is_object()) {
        ev.push(ThreadEvent::Models {
            models: models.clone(),
        });
    }
    ev
}

/// Options as the view gets them: the ones the core can answer, in order.
fn options_json(options: &[PermissionOption]) -> Value {
    options
        .iter()
        .map(|o| json!({"optionId": o.id, "name": o.name, "kind": o.kind.as_str()}))
        .collect()
}

/// A permission request as the view shows it. The view answers an option
/// by its id, so it gets only the options the core kept (an option with a
/// repeated or non-text id would answer as another one, or not at all).
/// The kind and title are the card's as recorded, which the policy judged,
/// not the ones the request claims. An execute request carries in
/// `_client.grant` exactly what allowing it grants (the command, its
/// directory, its variables): the float shows that, nothing else. The
/// agent's own `_client`, if any, is dropped (it is not the core's word).
fn shown_request(
    mut raw: Value,
    subject: &Subject,
    title: &str,
    options: &[PermissionOption],
    session_cwd: &std::path::Path,
) -> Value {
    if !raw.is_object() {
        raw = json!({});
    }
    if !raw.get("toolCall").is_some_and(Value::is_object) {
        raw["toolCall"] = json!({});
    }
    if let Some(call) = raw.get_mut("toolCall").and_then(Value::as_object_mut) {
        call.insert("kind".into(), json!(subject.kind.as_str()));
        call.insert("title".into(), json!(title));
    }
    if let Some(params) = raw.as_object_mut() {
        params.insert("options".into(), options_json(options));
        params.remove("_client");
        if subject.kind == ToolKind::Execute {
            let cwd = policy::subject_dir(subject, session_cwd);
            params.insert(
                "_client".into(),
                json!({"grant": {
                    "command": subject.text,
                    "cwd": cwd.to_string_lossy(),
                    "env": subject.env,
                }}),
            );
        }
    }
    raw
}

impl ThreadHandle {
    fn with_model(&self, f: impl FnOnce(&mut Thread) -> Vec<ThreadEvent>) {
        // Push while holding the model lock so events keep the model's order.
        let mut model = self.model.lock();
        let events = f(&mut model);
        bridge().push_all(self.id, events);
    }

    fn with_model_value<T>(&self, f: impl FnOnce(&mut Thread) -> (Vec<ThreadEvent>, T)) -> T {
        let mut model = self.model.lock();
        let (events, value) = f(&mut model);
        bridge().push_all(self.id, events);
        value
    }

    /// Entry `index` as JSON, for the view.
    pub fn entry_json(&self, index: usize) -> Option<Value> {
        self.model.lock().entry_json(index)
    }

    /// Notes an agent write on its tool card; returns the tool call id.
    pub fn note_write(&self, path: &str, note: String) -> Option<String> {
        let mut id = None;
        self.with_model(|m| {
            let (tc, events) = m.note_write(path, note);
            id = tc;
            events
        });
        id
    }

    /// A notice line in the transcript (e.g. a file that could not be
    /// synced with its buffer).
    pub fn notice(&self, level: NoticeLevel, text: String) {
        self.with_model(|m| m.notice(level, text));
    }

    /// A kept file text of this chat was dropped to stay under
    /// `fs.kept_text_max_bytes`: the chat says so once (the log lists each).
    pub fn kept_text_dropped(&self, what: &str) {
        if !self.told_dropped.swap(true, Ordering::SeqCst) {
            self.notice(
                NoticeLevel::Warn,
                format!(
                    "The file texts kept in memory passed fs.kept_text_max_bytes: the oldest are dropped, starting with {what}. Review shows a dropped original as unknown (it cannot be restored from here); a write over a buffer you edited asks the agent to read the file again. The log names each dropped text."
                ),
            );
        }
    }

    /// A change the agent made on disk by itself (seen by the view's buffer
    /// sync): kept for review with the text from before the change.
    pub fn record_disk_edit(&self, path: &str, before: String) {
        crate::editor::handlers::record_change(
            self,
            path,
            "agent",
            true,
            crate::editor::state::Original::Text(Arc::new(before)),
            None,
        );
    }

    /// Terminal output (or exit) for the cards and terminal buffers.
    pub fn terminal_display(&self, id: &str, data: &str, exit: Option<&str>) {
        self.with_model(|m| match exit {
            Some(status) => m.terminal_exit(id, status),
            None => m.terminal_output(id, data),
        });
    }

    /// Starts (or stops) sending terminal `id`'s output as events; when
    /// starting, returns the output so far, taken under the same lock so
    /// that nothing is lost or shown twice.
    pub fn watch_terminal(&self, id: &str, on: bool) -> Option<(String, Option<String>)> {
        let mut model = self.model.lock();
        model.watch_terminal(id, on);
        on.then(|| {
            model
                .terminal_text(id)
                .map(|v| (v.output.clone(), v.exit.clone()))
        })
        .flatten()
    }

    pub fn terminal_text(&self, id: &str) -> Option<(String, Option<String>)> {
        self.model
            .lock()
            .terminal_text(id)
            .map(|v| (v.output.clone(), v.exit.clone()))
    }

    pub fn markdown(&self) -> String {
        self.model.lock().to_markdown()
    }

    pub fn state(&self) -> TurnState {
        self.model.lock().state()
    }

    pub fn pid(&self) -> Option<u32> {
        self.current.lock().as_ref().map(|(c, _)| c.pid)
    }

    /// The agent's `initialize` answer (capabilities, agentInfo, auth).
    pub fn agent_init(&self) -> Option<Value> {
        self.current
            .lock()
            .as_ref()
            .and_then(|(c, _)| c.init_response())
    }

    pub fn session_id(&self) -> Option<String> {
        self.current.lock().as_ref().map(|(_, s)| s.clone())
    }

    /// The card's recorded kind, the text the user reads (its command,
    /// else its title) with the directory and variables its raw input
    /// names: what a permission is judged by and what it grants. Also the
    /// card's title.
    fn subject_of(m: &Thread, tool_id: &str) -> (Subject, String) {
        match m.tool_call(tool_id) {
            Some(tc) => (
                Subject {
                    kind: tc.kind.clone(),
                    text: tc.command.clone().unwrap_or_else(|| tc.title.clone()),
                    cwd: tc.cwd.clone(),
                    env: tc.env.clone(),
                },
                tc.title.clone(),
            ),
            None => (Subject::new(ToolKind::Other, ""), String::new()),
        }
    }

    /// Refuses a permission request the chat cannot take (too many
    /// options, too many pending requests): the agent gets the error, the
    /// chat one line per run of refusals.
    fn refuse_permission(&self, responder: Responder<Value>, code: i32, message: String) {
        let _ =
            responder.respond_with_error(agent_client_protocol::Error::new(code, message.clone()));
        if self.permissions.lock().note_refusal() {
            self.notice(
                NoticeLevel::Warn,
                format!("a permission request of the agent was refused: {message} (later ones are refused the same way until a request gets through; see the log)"),
            );
        }
        log::warn(format!("permission request refused: {message}"));
    }

    fn request_permission(
        &self,
        request: PermissionRequest,
        raw: Value,
        responder: Responder<Value>,
    ) {
        if request.options_sent > crate::model::update::MAX_PERMISSION_OPTIONS {
            let message = format!(
                "a permission request may offer at most {} options, this one offers {}",
                crate::model::update::MAX_PERMISSION_OPTIONS,
                request.options_sent
            );
            return self.refuse_permission(responder, INVALID_PARAMS, message);
        }
        if self.permissions.lock().pending_count() >= MAX_PENDING_PERMISSIONS {
            let message = format!(
                "too many pending permission requests (at most {MAX_PENDING_PERMISSIONS} wait for the user)"
            );
            return self.refuse_permission(responder, INTERNAL_ERROR, message);
        }
        self.permissions.lock().accepted();
        let tool_id = request.tool_call.id.clone();
        // The request may announce the call or add to it, but the kind the
        // card was first given stays (see `thread::merge_tool_call`), and
        // so do the title and command once a request was shown.
        let (subject, title) = self.with_model_value(|m| {
            let ev = m.permission_requested(&request.tool_call, &request.dropped);
            (ev, Self::subject_of(m, &tool_id))
        });
        let rules = &self.editor.policy.auto_allow;
        let session_cwd = &self.spec.cwd;
        if let Some((option, note)) =
            policy::policy_answer(rules, &subject, &request.options, session_cwd)
        {
            let choice = Choice::Selected(option);
            // Recorded before the reply goes out.
            self.permissions.lock().record(&subject, &choice);
            let _ = responder.respond(choice.outcome());
            self.with_model(|m| m.permission_answered(&tool_id, None, Some(note)));
            return;
        }
        let payload = shown_request(raw, &subject, &title, &request.options, session_cwd);
        let request_id = self.permissions.lock().add(Pending {
            reply: ReplyTo::Agent(responder),
            tool_id,
            subject,
            options: request.options,
        });
        bridge().push(UiEvent::Permission {
            thread: self.id,
            request: request_id,
            payload,
        });
    }

    /// Asks the user before running a terminal the agent did not get a
    /// permission for in this turn (config `terminal.confirm`). Resolves to
    /// true when it may run.
    pub async fn confirm_terminal(
        &self,
        run: policy::Run<'_>,
        command: &str,
    ) -> Result<bool, String> {
        let (cwd, env) = (run.cwd, run.env);
        let ask = match self.editor.policy.terminal_confirm {
            TerminalConfirm::Never => false,
            TerminalConfirm::Always => true,
            TerminalConfirm::Unrequested => {
                !self.permissions.lock().take_grant(&run, &self.spec.cwd)
            }
        };
        if !ask {
            return Ok(true);
        }
        // The same bound as the agent's own requests: a flood of terminals
        // is refused, not queued.
        if self.permissions.lock().pending_count() >= MAX_PENDING_PERMISSIONS {
            let message = format!(
                "too many pending permission requests (at most {MAX_PENDING_PERMISSIONS} wait for the user)"
            );
            if self.permissions.lock().note_refusal() {
                self.notice(
                    NoticeLevel::Warn,
                    format!("a terminal of the agent was refused: {message} (later ones are refused the same way until a request gets through; see the log)"),
                );
            }
            log::warn(format!("terminal/create refused: {message}"));
            return Err(message);
        }
        self.permissions.lock().accepted();
        let (tx, rx) = oneshot::channel();
        let options = vec![
            PermissionOption {
                id: "allow".into(),
                name: "Run".into(),
                kind: PermissionOptionKind::AllowOnce,
            },
            PermissionOption {
                id: "reject".into(),
                name: "Don't run".into(),
                kind: PermissionOptionKind::RejectOnce,
            },
        ];
        let tool_id = format!("terminal-confirm-{}", self.id);
        let request_id = self.permissions.lock().add(Pending {
            reply: ReplyTo::Terminal(tx),
            tool_id: tool_id.clone(),
            subject: Subject::new(ToolKind::Execute, command),
            options: options.clone(),
        });
        let payload = json!({
            "toolCall": {
                "toolCallId": tool_id,
                "title": format!("Run `{command}`"),
                "kind": "execute",
                "rawInput": {"command": command, "cwd": cwd},
            },
            "options": options_json(&options),
            "_client": {"terminal": {"command": command, "cwd": cwd, "env": env}},
        });
        bridge().push(UiEvent::Permission {
            thread: self.id,
            request: request_id,
            payload,
        });
        Ok(rx.await.unwrap_or(false))
    }

    /// "Always" choices of this session (kind, text, option kind), shown to
    /// the user; the agent remembers them, the plugin never answers with them.
    pub fn always_choices(&self) -> Vec<(String, String, String)> {
        self.permissions.lock().always_choices()
    }

    pub fn forget_decisions(&self) {
        self.permissions.lock().forget_always();
    }

    /// The user's answer: an option id, or None for "cancelled".
    pub fn answer_permission(&self, request: u64, option_id: Option<String>) -> Result<(), String> {
        let (pending, choice) = self
            .permissions
            .lock()
            .take(request, option_id.as_deref())?;
        self.send_choice(request, pending, &choice);
        Ok(())
    }

    fn send_choice(&self, request: u64, pending: Pending, choice: &Choice) {
        match pending.reply {
            ReplyTo::Agent(responder) => {
                if let Err(e) = responder.respond(choice.outcome()) {
                    log::warn(format!("permission answer not sent: {e}"));
                }
            }
            ReplyTo::Terminal(tx) => {
                let _ = tx.send(choice.allows());
            }
        }
        let state = match choice {
            Choice::Cancelled => Some(ClientState::Cancelled),
            Choice::Selected(o) if o.kind.is_reject() => Some(ClientState::Rejected),
            Choice::Selected(_) => None,
        };
        self.with_model(|m| m.permission_answered(&pending.tool_id, state, None));
        bridge().push(UiEvent::PermissionDone {
            thread: self.id,
            request,
        });
    }

    /// Answers every pending permission request with "cancelled".
    fn cancel_permissions(&self) {
        let pending = self.permissions.lock().drain();
        for (request, p) in pending {
            self.send_choice(request, p, &Choice::Cancelled);
        }
    }

    fn drop_permissions(&self) {
        let pending = self.permissions.lock().drain();
        for (request, _) in pending {
            bridge().push(UiEvent::PermissionDone {
                thread: self.id,
                request,
            });
        }
    }

    async fn on_disconnected(&self, conn: &Arc<Connection>, reason: &str) {
        let mut session = self.session.lock().await;
        if session.as_ref().is_some_and(|b| Arc::ptr_eq(&b.conn, conn)) {
            *session = None;
            *self.current.lock() = None;
            self.lost_session.store(true, Ordering::SeqCst);
            self.drop_permissions();
            self.with_model(|m| m.disconnected(reason));
        }
    }

    /// Returns the live session, creating the agent process and the session
    /// if needed: the session asked for with `open_thread`'s `resume`
    /// (`session/resume` when advertised, else `session/load`), else a new
    /// one.
    async fn ensure_session(self: &Arc<Self>) -> Result<(Arc<Connection>, String), String> {
        let mut session = self.session.lock().await;
        if let Some(b) = session.as_ref() {
            if !b.conn.is_closed() {
                return Ok((b.conn.clone(), b.session_id.clone()));
            }
        }
        let conn = registry().connection(&self.spec)?;
        let cx = conn.ready().await?;
        let init = conn.init_response().unwrap_or(Value::Null);
        let caps = init
            .get("agentCapabilities")
            .cloned()
            .unwrap_or(Value::Null);
        let (mcp_servers, dropped) = mcp_servers_for(&self.mcp_servers, &caps);
        if !dropped.is_empty() {
            self.with_model(|m| {
                m.notice(
                    NoticeLevel::Warn,
                    format!(
                        "MCP server(s) {} not sent: `{}` does not support their transport",
                        dropped.join(", "),
                        self.spec.name
                    ),
                )
            });
        }
        // Sent only to agents that advertise them.
        let directories = if caps
            .pointer("/sessionCapabilities/additionalDirectories")
            .is_some_and(|v| !v.is_null())
        {
            self.editor.policy.roots.clone()
        } else {
            Vec::new()
        };
        let mut opened = None;
        let wanted = self.resume.lock().take();
        if let Some(wanted) = wanted {
            match self
                .open_existing(&conn, &cx, &wanted, &caps, &mcp_servers, &directories)
                .await
            {
                Ok(response) => opened = Some((wanted, response)),
                Err(e) => self.with_model(|m| {
                    m.notice(
                        NoticeLevel::Error,
                        format!("Could not open session `{wanted}`: {e}. Started a new session."),
                    )
                }),
            }
        }
        let resumed = opened.is_some();
        let (session_id, response) = match opened {
            Some(x) => x,
            None => {
                let mut params = NewSessionRequest::new(self.spec.cwd.clone());
                params.mcp_servers = mcp_servers;
                params.additional_directories = directories;
                let limit = self.spec.timeouts.session_new;
                let response = tokio::time::timeout(
                    Duration::from_millis(limit),
                    cx.send_request(typed_request("session/new", &params)?)
                        .block_task(),
                )
                .await
                .map_err(|_| {
                    let e = format!(
                        "Agent `{}` did not answer `session/new` within {}; send a message to try again",
                        self.spec.name,
                        crate::model::render::human_ms(limit)
                    );
                    log::warn(&e);
                    e
                })?
                .map_err(|e| session_new_error(&conn, &self.spec.name, e))?;
                let session_id = response
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("session/new returned no sessionId: {response}"))?
                    .to_owned();
                (session_id, response)
            }
        };
        log::info(format!(
            "thread {} bound to session {session_id} of {}",
            self.id, self.spec.name
        ));
        *session = Some(Bound {
            conn: conn.clone(),
            session_id: session_id.clone(),
        });
        *self.current.lock() = Some((conn.clone(), session_id.clone()));
        let agent = init
            .pointer("/agentInfo/name")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| self.spec.name.clone());
        let restarted = self.lost_session.swap(false, Ordering::SeqCst);
        self.with_model(|m| {
            // A resumed session is the same one: its cards stay reachable.
            let mut ev = m.session_started(restarted && !resumed);
            ev.push(ThreadEvent::Agent {
                name: agent.clone(),
                info: init.get("agentInfo").cloned().unwrap_or(Value::Null),
                capabilities: caps.clone(),
            });
            ev.extend(m.session_ready(agent));
            ev.push(ThreadEvent::Session {
                session_id: session_id.clone(),
            });
            ev.extend(session_answer_events(&response));
            ev
        });
        // After the ready events, so that updates the agent sent with its
        // answer (commands, mode, title) land on a ready chat. (A loaded
        // session was routed before its request, for the replay.)
        conn.route(&session_id, self.clone() as Arc<dyn SessionSink>)
            .await;
        Ok((conn, session_id))
    }

    /// `session/resume` (when advertised) or `session/load` of `session_id`;
    /// the answer (may be `null`). A load's replayed history fills the
    /// transcript between two notices. Gives up when the user cancels
    /// (`$/cancel_request`).
    async fn open_existing(
        self: &Arc<Self>,
        conn: &Arc<Connection>,
        cx: &agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>,
        session_id: &str,
        caps: &Value,
        mcp_servers: &[McpServer],
        directories: &[std::path::PathBuf],
    ) -> Result<Value, String> {
        let advertised = |p: &str| {
            caps.pointer(p)
                .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
        };
        let request = if advertised("/sessionCapabilities/resume") {
            let mut p = ResumeSessionRequest::new(session_id.to_owned(), self.spec.cwd.clone());
            p.mcp_servers = mcp_servers.to_vec();
            p.additional_directories = directories.to_vec();
            typed_request("session/resume", &p)?
        } else if advertised("/loadSession") {
            let mut p = LoadSessionRequest::new(session_id.to_owned(), self.spec.cwd.clone());
            p.mcp_servers = mcp_servers.to_vec();
            p.additional_directories = directories.to_vec();
            typed_request("session/load", &p)?
        } else {
            return Err(format!("`{}` cannot load sessions", self.spec.name));
        };
        let load = request.method() == "session/load";
        if load {
            // Routed first: the replay arrives before the answer.
            self.with_model(|m| m.begin_replay(&format!("`{session_id}`")));
            conn.route(session_id, self.clone() as Arc<dyn SessionSink>)
                .await;
        }
        self.with_model(|m| m.loading(true));
        let sent = cx.send_request(request);
        let cancel = sent.cancellation_handle();
        *self.loading.lock() = Some(cancel.clone());
        let answer = tokio::select! {
            a = sent.block_task() => a.map_err(|e| e.to_string()),
            () = self.give_up.notified() => {
                let _ = cancel.cancel();
                Err("gave up waiting (the request was cancelled)".to_owned())
            }
        };
        self.loading.lock().take();
        self.with_model(|m| m.loading(false));
        if load {
            let ok = answer.is_ok();
            if !ok {
                conn.unroute(session_id);
            }
            self.with_model(|m| m.end_replay(ok));
        } else if answer.is_ok() {
            self.with_model(|m| {
                m.notice(
                    NoticeLevel::Info,
                    format!("Resumed session `{session_id}` (its history stays with the agent)"),
                )
            });
        }
        answer
    }

    /// After a sign-in outside the connection (a `terminal` method): opens
    /// the session again on the running agent, and if the agent still
    /// wants a sign-in, on a restarted one.
    pub fn reconnect(self: &Arc<Self>) {
        let this = self.clone();
        spawn(async move {
            if this.ensure_session().await.is_ok() {
                return;
            }
            if let Some(conn) = registry().live_connection(&this.spec) {
                registry().forget(&this.spec);
                conn.terminate();
            }
            if let Err(e) = this.ensure_session().await {
                this.with_model(|m| m.disconnected(e));
            }
        });
    }

    /// A request of the view to the agent (config options, models, session
    /// list/close/delete, logout): its answer comes back as a `reply`
    /// event for `reply`. Session methods get this chat's `sessionId`
    /// unless `params` names one.
    pub fn request(self: &Arc<Self>, method: String, mut params: Value, reply: u64) {
        let this = self.clone();
        spawn(async move {
            let result = async {
                if !VIEW_METHODS.contains(&method.as_str()) {
                    return Err(format!("`{method}` is not a request the view may send"));
                }
                let conn = if SESSION_METHODS.contains(&method.as_str())
                    && params.get("sessionId").is_none()
                {
                    let (conn, sid) = this.ensure_session().await?;
                    if let Value::Object(m) = &mut params {
                        m.insert("sessionId".into(), Value::String(sid));
                    }
                    conn
                } else {
                    registry().connection(&this.spec)?
                };
                let cx = conn.ready().await?;
                let msg =
                    UntypedMessage::new(&method, params.clone()).map_err(|e| e.to_string())?;
                cx.send_request(msg)
                    .block_task()
                    .await
                    .map_err(|e| e.to_string())
            }
            .await;
            if let Ok(answer) = &result {
                this.after_request(&method, &params, answer).await;
            }
            let (result, error) = match result {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(e)),
            };
            bridge().push(UiEvent::Reply {
                request: reply,
                result,
                error,
            });
        });
    }

    /// What an answered view request changes in the chat.
    async fn after_request(self: &Arc<Self>, method: &str, params: &Value, answer: &Value) {
        match method {
            "session/set_config_option" => {
                if let Some(options) = answer.get("configOptions").filter(|v| v.is_array()) {
                    let options = options.clone();
                    self.with_model(|_| vec![ThreadEvent::ConfigOptions { options }]);
                }
            }
            "session/close" | "session/delete" => {
                let sid = params.get("sessionId").and_then(Value::as_str);
                let mut session = self.session.lock().await;
                if session
                    .as_ref()
                    .is_some_and(|b| Some(b.session_id.as_str()) == sid)
                {
                    if let Some(b) = session.take() {
                        b.conn.unroute(&b.session_id);
                    }
                    *self.current.lock() = None;
                    self.with_model(|m| {
                        m.notice(
                            NoticeLevel::Info,
                            "This session was closed: the next message starts a new one".to_owned(),
                        )
                    });
                }
            }
            _ => {}
        }
    }

    /// Opens the session in the background so the agent starts while the
    /// user types.
    fn connect(self: &Arc<Self>) {
        let this = self.clone();
        spawn(async move {
            if let Err(e) = this.ensure_session().await {
                this.with_model(|m| m.disconnected(e));
            }
        });
    }

    /// Sends a request for this chat's session (opening it first if
    /// needed); `build` makes the typed params from the session id.
    /// Returns the connection and the answer.
    async fn session_request<T: serde::Serialize>(
        self: &Arc<Self>,
        method: &str,
        build: impl FnOnce(String) -> T,
    ) -> Result<(Arc<Connection>, Result<Value, agent_client_protocol::Error>), String> {
        let (conn, session_id) = self.ensure_session().await?;
        let cx = conn.ready().await?;
        let req = typed_request(method, &build(session_id))?;
        let answer = cx.send_request(req).block_task().await;
        Ok((conn, answer))
    }

    /// Sends a prompt. While a turn runs only with `queued_by_agent` (the
    /// agent advertised that it queues prompts itself).
    pub fn prompt(
        self: &Arc<Self>,
        blocks: Vec<ContentBlock>,
        queued_by_agent: bool,
    ) -> Result<(), String> {
        let text = prompt_display_text(&blocks);
        let turn = {
            let mut model = self.model.lock();
            if model.is_cancelling() {
                // Sent when the cancelled turn has ended (see `start_queued`),
                // even to an agent that queues prompts itself.
                *self.queued.lock() = Some(blocks);
                return Ok(());
            }
            if model.state() == TurnState::Running && !queued_by_agent {
                return Err("the agent is still answering: the message waits in the queue".into());
            }
            let (turn, events) = model.begin_turn(&text);
            bridge().push_all(self.id, events);
            turn
        };
        self.permissions.lock().new_turn();
        let this = self.clone();
        spawn(async move {
            let result = async {
                let (conn, answer) = this
                    .session_request("session/prompt", |sid| PromptRequest::new(sid, blocks))
                    .await?;
                match answer {
                    Ok(v) => Ok(Some(v)),
                    Err(e) => {
                        // If the agent died, its exit report explains more
                        // than "response never received": let that speak.
                        let died =
                            tokio::time::timeout(Duration::from_millis(500), conn.closed()).await;
                        if died.is_ok() {
                            return Ok(None);
                        }
                        Err(format!("{e}"))
                    }
                }
            }
            .await;
            match result {
                Ok(None) => {}
                Ok(Some(v)) => {
                    let stop = v
                        .get("stopReason")
                        .and_then(Value::as_str)
                        .unwrap_or("end_turn")
                        .to_owned();
                    let usage = v.get("usage").filter(|u| u.is_object()).cloned();
                    this.with_model(|m| m.end_turn_with(turn, &stop, usage));
                }
                Err(e) => {
                    // No session could be opened: the chat is not ready.
                    let connected = this.current.lock().is_some();
                    this.with_model(|m| {
                        let mut ev = m.fail_turn(turn, &e);
                        if !connected {
                            ev.extend(m.not_connected());
                        }
                        ev
                    });
                }
            }
            this.start_queued();
        });
        Ok(())
    }

    /// Sends the prompt held back while a cancelled turn was ending, once
    /// no turn runs.
    fn start_queued(self: &Arc<Self>) {
        if self.model.lock().state() == TurnState::Running {
            return;
        }
        if let Some(blocks) = self.queued.lock().take() {
            if let Err(e) = self.prompt(blocks, false) {
                self.notice(NoticeLevel::Error, format!("Not sent: {e}"));
            }
        }
    }

    /// The agent's sign-in methods (from `initialize`), once it started.
    pub fn auth_methods(&self) -> Vec<Value> {
        registry()
            .live_connection(&self.spec)
            .map(|c| auth_methods(&c))
            .unwrap_or_default()
    }

    /// `authenticate` with `method_id`, then opens the session again.
    pub fn authenticate(self: &Arc<Self>, method_id: String) {
        let this = self.clone();
        spawn(async move {
            let result = async {
                let conn = registry().connection(&this.spec)?;
                let cx = conn.ready().await?;
                let req =
                    typed_request("authenticate", &AuthenticateRequest::new(method_id.clone()))?;
                cx.send_request(req)
                    .block_task()
                    .await
                    .map_err(|e| e.to_string())
            }
            .await;
            match result {
                Ok(_) => {
                    this.with_model(|m| {
                        m.notice(NoticeLevel::Info, format!("Signed in with `{method_id}`"))
                    });
                    if let Err(e) = this.ensure_session().await {
                        this.with_model(|m| m.disconnected(e));
                    }
                }
                Err(e) => bridge().push(UiEvent::Notify {
                    level: "error",
                    message: format!("acp.nvim: sign-in with `{method_id}` failed: {e}"),
                }),
            }
        });
    }

    /// Asks the agent to switch the session's mode (`session/set_mode`).
    /// The view learns the result from the agent's `current_mode_update`
    /// (or, for agents that send none, from the successful answer).
    pub fn set_mode(self: &Arc<Self>, mode_id: String) {
        let this = self.clone();
        spawn(async move {
            let result = async {
                let mode = mode_id.clone();
                let (_, answer) = this
                    .session_request("session/set_mode", |sid| {
                        SetSessionModeRequest::new(sid, mode)
                    })
                    .await?;
                answer.map_err(|e| e.to_string())
            }
            .await;
            match result {
                Ok(_) => this.with_model(|_| vec![ThreadEvent::Mode { mode_id }]),
                Err(e) => bridge().push(UiEvent::Notify {
                    level: "error",
                    message: format!("acp.nvim: the agent refused mode `{mode_id}`: {e}"),
                }),
            }
        });
    }

    /// Cancels the running turn: pending permissions are answered
    /// "cancelled", `session/cancel` goes out, and the turn ends when the
    /// agent answers the prompt, or here after `timeouts.cancel_grace`.
    /// True when a turn was running (or already cancelling).
    pub fn cancel(self: &Arc<Self>) -> bool {
        crate::protocol::elicitation::cancel_thread(self.id);
        if self.loading.lock().is_some() {
            // A slow session/load or session/resume: stop waiting for it.
            self.give_up.notify_one();
            return true;
        }
        let (running, first, turn) = self.with_model_value(|m| {
            let (running, first, events) = m.request_cancel();
            (events, (running, first, m.current_turn()))
        });
        self.cancel_permissions();
        if !first {
            return running;
        }
        let current = self.current.lock().clone();
        let grace = self.spec.timeouts.cancel_grace;
        let this = self.clone();
        spawn(async move {
            if let Some((conn, session_id)) = current {
                if let Ok(cx) = conn.ready().await {
                    if let Err(e) = cx.send_notification(CancelNotification::new(session_id)) {
                        log::warn(format!("session/cancel failed: {e}"));
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(grace)).await;
            let mut ended = false;
            this.with_model(|m| {
                let ev = m.cancel_unconfirmed(turn, grace);
                ended = !ev.is_empty();
                ev
            });
            if ended {
                log::warn(format!(
                    "thread {}: the agent did not end turn {turn} within {grace} ms of the cancel",
                    this.id
                ));
                this.start_queued();
            }
        });
        true
    }
}

/// A failed `session/new`; ACP's "auth required" (-32000) becomes a hint
/// naming the agent's sign-in methods and `:AcpAuth`.
fn session_new_error(conn: &Connection, agent: &str, e: agent_client_protocol::Error) -> String {
    let code = serde_json::to_value(&e)
        .ok()
        .and_then(|v| v.get("code").and_then(Value::as_i64));
    if code != Some(-32000) {
        return format!("session/new failed: {e}");
    }
    let methods = auth_methods(conn);
    if methods.is_empty() {
        return format!(
            "Agent `{agent}` needs authentication ({e}); sign in with its own CLI first."
        );
    }
    let list: Vec<String> = methods
        .iter()
        .map(|m| {
            let id = m.get("id").and_then(Value::as_str).unwrap_or("?");
            let name = m.get("name").and_then(Value::as_str).unwrap_or(id);
            match m.get("description").and_then(Value::as_str) {
                Some(d) => format!("  {id}: {name} ({d})"),
                None => format!("  {id}: {name}"),
            }
        })
        .collect();
    format!(
        "Agent `{agent}` needs you to sign in: run :AcpAuth {{method}}. Methods:\n{}",
        list.join("\n")
    )
}

fn auth_methods(conn: &Connection) -> Vec<Value> {
    conn.init_response()
        .and_then(|v| v.get("authMethods").and_then(Value::as_array).cloned())
        .unwrap_or_default()
}

/// The text shown for the user's message: text blocks verbatim, other
/// blocks as links.
fn prompt_display_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| serde_json::to_value(b).ok())
        .map(|b| crate::model::update::content_block_text(&b))
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

impl crate::editor::handlers::EditorHost for ThreadHandle {
    fn thread_id(&self) -> u64 {
        self.id
    }

    fn editor(&self) -> &EditorState {
        &self.editor
    }

    fn caps(&self) -> crate::config::Caps {
        self.spec.caps
    }

    fn cwd(&self) -> &std::path::Path {
        &self.spec.cwd
    }

    fn note_write(&self, path: &str, note: String) -> Option<String> {
        ThreadHandle::note_write(self, path, note)
    }

    fn terminal_display(&self, id: &str, data: &str, exit: Option<&str>) {
        ThreadHandle::terminal_display(self, id, data, exit)
    }

    fn confirm_terminal<'a>(
        &'a self,
        run: policy::Run<'a>,
        command: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool, String>> + Send + 'a>>
    {
        Box::pin(ThreadHandle::confirm_terminal(self, run, command))
    }
}

impl SessionSink for ThreadHandle {
    fn apply_update(&self, update: SessionUpdate) {
        self.with_model(|m| m.apply_update(&update));
    }

    fn agent_request(&self, request: AgentRequest, responder: Responder<Value>) {
        let Some(this) = registry().thread(self.id).ok() else {
            let _ = responder.respond_with_error(
                agent_client_protocol::Error::invalid_params()
                    .data(json!({"reason": "the chat was closed"})),
            );
            return;
        };
        match request {
            AgentRequest::Permission { request, raw, .. } => {
                this.request_permission(request, raw, responder)
            }
            other => {
                let method = other.method();
                let host: Arc<dyn crate::editor::handlers::EditorHost> = this.clone();
                if let Some(responder) =
                    crate::editor::handlers::try_handle(&host, other, responder)
                {
                    log::info(format!("answered -32601 to {method}"));
                    let _ = responder
                        .respond_with_error(agent_client_protocol::Error::method_not_found());
                }
            }
        }
    }

    fn thread_id(&self) -> Option<u64> {
        Some(self.id)
    }

    fn disconnected(&self, conn: &Arc<Connection>, reason: &str) {
        let (Ok(this), conn, reason) =
            (registry().thread(self.id), conn.clone(), reason.to_owned())
        else {
            return;
        };
        spawn(async move {
            this.on_disconnected(&conn, &reason).await;
            this.start_queued();
        });
    }

    fn protocol_warning(&self, text: &str) {
        self.notice(NoticeLevel::Warn, text.to_owned());
    }
}

pub use crate::runtime::spawn;

#[derive(Default)]
pub struct Registry {
    threads: Mutex<HashMap<u64, Arc<ThreadHandle>>>,
    /// One agent process per (agent name, project directory).
    agents: Mutex<HashMap<(String, std::path::PathBuf), Arc<Connection>>>,
    /// Every process ever started, for the exit cleanup (a replaced
    /// connection's process may still run).
    spawned: Mutex<Vec<Arc<Connection>>>,
    /// The newest connection per (agent name, project directory), dead or
    /// alive: its trace outlives it.
    last: Mutex<HashMap<(String, std::path::PathBuf), Arc<Connection>>>,
    next_thread: AtomicU64,
}

pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        crate::editor::kept::KEPT.on_drop(|owner, what| {
            if let Ok(t) = registry().thread(owner) {
                t.kept_text_dropped(what);
            }
        });
        Registry::default()
    })
}

impl Registry {
    /// The live connection for this agent, spawning one if needed. One
    /// process serves every chat that uses the same agent config.
    fn connection(&self, spec: &AgentSpec) -> Result<Arc<Connection>, String> {
        let mut agents = self.agents.lock();
        let key = (spec.name.clone(), spec.cwd.clone());
        if let Some(conn) = agents.get(&key) {
            if !conn.is_closed() && conn.spec == *spec {
                return Ok(conn.clone());
            }
        }
        let conn = Connection::spawn(spec.clone())?;
        agents.insert(key.clone(), conn.clone());
        self.last.lock().insert(key, conn.clone());
        let mut spawned = self.spawned.lock();
        spawned.retain(|c| !c.is_closed() || !c.group_gone());
        spawned.push(conn.clone());
        Ok(conn)
    }

    /// The running connection for an agent name, if any.
    fn live_connection(&self, spec: &AgentSpec) -> Option<Arc<Connection>> {
        self.agents
            .lock()
            .get(&(spec.name.clone(), spec.cwd.clone()))
            .filter(|c| !c.is_closed())
            .cloned()
    }

    pub fn open_thread(
        &self,
        spec: AgentSpec,
        mcp_servers: Vec<McpServer>,
        policy: Policy,
        resume: Option<String>,
    ) -> u64 {
        let id = self.next_thread.fetch_add(1, Ordering::Relaxed) + 1;
        let handle = Arc::new(ThreadHandle {
            id,
            editor: EditorState::new(spec.cwd.clone(), policy).owned_by(id),
            model: Mutex::new(Thread::new(spec.name.clone())),
            spec,
            mcp_servers,
            session: tokio::sync::Mutex::new(None),
            current: Mutex::new(None),
            permissions: Mutex::new(Permissions::default()),
            lost_session: std::sync::atomic::AtomicBool::new(false),
            queued: Mutex::new(None),
            resume: Mutex::new(resume),
            loading: Mutex::new(None),
            give_up: tokio::sync::Notify::new(),
            told_dropped: std::sync::atomic::AtomicBool::new(false),
        });
        self.threads.lock().insert(id, handle.clone());
        handle.connect();
        id
    }

    pub fn thread(&self, id: u64) -> Result<Arc<ThreadHandle>, String> {
        self.threads
            .lock()
            .get(&id)
            .cloned()
            .ok_or_else(|| format!("no chat thread {id}"))
    }

    /// Drops the agent of `spec` from the map (its process is ended by the
    /// caller); the next chat starts a new one.
    fn forget(&self, spec: &AgentSpec) {
        self.agents
            .lock()
            .remove(&(spec.name.clone(), spec.cwd.clone()));
    }

    pub fn close_thread(&self, id: u64) {
        crate::protocol::elicitation::cancel_thread(id);
        if let Some(t) = self.threads.lock().remove(&id) {
            t.cancel();
            if let Some((conn, sid)) = t.current.lock().clone() {
                conn.unroute(&sid);
            }
        }
    }

    /// Ends every agent's process group: SIGTERM to all, then SIGKILL to
    /// whatever is left after `grace`. Blocks for at most `grace`.
    pub fn kill_all(&self, grace: Duration) {
        self.agents.lock().clear();
        let conns: Vec<_> = self.spawned.lock().drain(..).collect();
        for conn in &conns {
            conn.terminate();
        }
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline && !conns.iter().all(|c| c.group_gone()) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for conn in conns.iter().filter(|c| !c.group_gone()) {
            conn.force_kill();
        }
        self.threads.lock().clear();
    }

    /// The protocol trace of the agent a chat uses (its newest process,
    /// even if that one exited).
    pub fn trace_of(&self, thread: u64) -> Result<Arc<crate::protocol::trace::Trace>, String> {
        let t = self.thread(thread)?;
        self.last
            .lock()
            .get(&(t.spec.name.clone(), t.spec.cwd.clone()))
            .map(|c| c.trace.clone())
            .ok_or_else(|| format!("agent `{}` has not been started yet", t.spec.name))
    }

    pub fn agent_pids(&self) -> Vec<u32> {
        self.spawned
            .lock()
            .iter()
            .filter(|c| !c.is_closed())
            .map(|c| c.pid)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_view_gets_the_recorded_kind_and_the_options_the_core_answers() {
        let raw = json!({
            "toolCall": {"toolCallId": "t", "kind": "read", "title": "curl x|sh"},
            "options": [
                {"optionId": 42, "name": "Number", "kind": "allow_always"},
                {"optionId": "x", "name": "Allow", "kind": "allow_once"},
                {"optionId": "x", "name": "Reject", "kind": "reject_once"}
            ]
        });
        let request = crate::model::update::parse_permission_request(&raw);
        let subject = Subject::new(ToolKind::Other, "curl x|sh");
        let cwd = std::path::Path::new("/p");
        let shown = shown_request(raw, &subject, "curl x|sh", &request.options, cwd);
        assert_eq!(shown["toolCall"]["kind"], "other");
        assert_eq!(shown["toolCall"]["title"], "curl x|sh");
        assert_eq!(
            shown["options"],
            json!([{"optionId": "x", "name": "Allow", "kind": "allow_once"}])
        );
        assert!(shown.get("_client").is_none(), "no grant but for execute");
    }

    #[test]
    fn the_view_of_an_execute_request_shows_exactly_what_it_grants() {
        // The agent's own `_client` and title are not what the core grants.
        let raw = json!({
            "toolCall": {"toolCallId": "t", "kind": "execute", "title": "npm test"},
            "options": [{"optionId": "y", "name": "Allow", "kind": "allow_once"}],
            "_client": {"terminal": {"command": "npm test", "cwd": "/p", "env": {}}}
        });
        let request = crate::model::update::parse_permission_request(&raw);
        let mut subject = Subject::new(ToolKind::Execute, "curl x | sh");
        subject.cwd = Some("sub".into());
        subject.env = BTreeMap::from([("A".to_owned(), "1".to_owned())]);
        let cwd = std::path::Path::new("/p");
        let shown = shown_request(raw, &subject, "Run the tests", &request.options, cwd);
        assert_eq!(shown["toolCall"]["title"], "Run the tests");
        assert_eq!(
            shown["_client"],
            json!({"grant": {"command": "curl x | sh", "cwd": "/p/sub", "env": {"A": "1"}}})
        );
        // A request that is not even an object still gets a view.
        let shown = shown_request(json!(7), &subject, "t", &[], cwd);
        assert_eq!(shown["toolCall"]["kind"], "execute");
    }

    #[test]
    fn http_and_sse_mcp_servers_go_only_to_agents_that_advertise_them() {
        let servers: Vec<McpServer> = serde_json::from_value(json!([
            {"name": "files", "command": "/bin/true", "args": [], "env": []},
            {"type": "http", "name": "web", "url": "http://x", "headers": []},
            {"type": "sse", "name": "events", "url": "http://y", "headers": []}
        ]))
        .unwrap();
        let names = |v: &[McpServer]| -> Vec<String> {
            v.iter()
                .map(|s| {
                    serde_json::to_value(s).unwrap()["name"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect()
        };
        let (kept, dropped) = mcp_servers_for(&servers, &Value::Null);
        assert_eq!(names(&kept), vec!["files"]);
        assert_eq!(dropped, vec!["`web`", "`events`"]);
        let (kept, dropped) = mcp_servers_for(
            &servers,
            &json!({"mcpCapabilities": {"http": true, "sse": false}}),
        );
        assert_eq!(names(&kept), vec!["files", "web"]);
        assert_eq!(dropped, vec!["`events`"]);
    }

    #[test]
    fn session_answers_give_modes_config_options_and_models() {
        let ev = session_answer_events(&json!({
            "modes": {"currentModeId": "a", "availableModes": []},
            "configOptions": [{"id": "model"}],
            "models": {"currentModelId": "m", "availableModels": []}
        }));
        assert_eq!(ev.len(), 4);
        assert!(matches!(&ev[1], ThreadEvent::Mode { mode_id } if mode_id == "a"));
        assert!(matches!(&ev[2], ThreadEvent::ConfigOptions { .. }));
        assert!(matches!(&ev[3], ThreadEvent::Models { .. }));
        assert!(
            session_answer_events(&Value::Null).is_empty(),
            "a null load answer"
        );
    }
}
