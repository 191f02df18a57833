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

use agent_client_protocol::v1::schema::CancelNotification;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::UntypedMessage;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::bridge::{bridge, UiEvent};
use crate::connection::{AgentSpec, Connection};
use crate::handlers::{EditorState, Policy};
use crate::log;
use crate::render;
use crate::thread::{ClientState, NoticeLevel, Thread, ThreadEvent, TurnState};

/// A permission request waiting for the user, held with its reply.
struct PendingPermission {
    responder: Responder<Value>,
    tool_id: String,
    kind: String,
    options: Vec<Value>,
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
    mcp_servers: Value,
    model: Mutex<Thread>,
    /// Serialises session creation; holds the live binding.
    session: tokio::sync::Mutex<Option<Bound>>,
    /// A copy of the binding readable without awaiting (for cancel).
    current: Mutex<Option<(Arc<Connection>, String)>>,
    permissions: Mutex<HashMap<u64, PendingPermission>>,
    /// "Always" answers given this session: tool kind -> option kind.
    remembered: Mutex<HashMap<String, String>>,
    next_request: AtomicU64,
    /// Set when the agent died under a live session: the next session
    /// creation tells the user that the conversation restarted.
    lost_session: std::sync::atomic::AtomicBool,
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

    /// Terminal output (or exit) for the cards and terminal buffers.
    pub fn terminal_display(&self, id: &str, data: &str, exit: Option<&str>) {
        self.with_model(|m| match exit {
            Some(status) => m.terminal_exit(id, status),
            None => m.terminal_output(id, data),
        });
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

    /// Applies a `session/update`, then waits while the UI is far behind
    /// (this holds the agent's read loop, which is the back-pressure).
    pub async fn apply_update(&self, update: &Value) {
        self.with_model(|m| m.apply_update(update));
        bridge().wait_for_space().await;
    }

    pub async fn on_disconnected(&self, conn: &Arc<Connection>, reason: &str) {
        let mut session = self.session.lock().await;
        if session.as_ref().is_some_and(|b| Arc::ptr_eq(&b.conn, conn)) {
            *session = None;
            *self.current.lock() = None;
            self.lost_session.store(true, Ordering::SeqCst);
            self.drop_permissions();
            self.with_model(|m| m.disconnected(reason));
        }
    }

    pub fn request_permission(&self, params: Value, responder: Responder<Value>) {
        let tool_call = params.get("toolCall").cloned().unwrap_or(Value::Null);
        let tool_id = tool_call
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        // The kind may only be known from an earlier tool_call update.
        let kind = self.with_model_value(|m| {
            let ev = m.permission_requested(&tool_call);
            let kind = m
                .tool_call_index(&tool_id)
                .and_then(|i| m.entry_json(i))
                .and_then(|e| e.get("kind").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| "other".into());
            (ev, kind)
        });
        let options = params
            .get("options")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if let Some((option_id, note)) = self.policy_answer(&kind, &options) {
            let _ = responder
                .respond(json!({"outcome": {"outcome": "selected", "optionId": option_id}}));
            let state = if note.starts_with("rejected") {
                Some(ClientState::Rejected)
            } else {
                None
            };
            self.with_model(|m| m.permission_answered(&tool_id, state, Some(note)));
            return;
        }
        let request = self.next_request.fetch_add(1, Ordering::Relaxed);
        self.permissions.lock().insert(
            request,
            PendingPermission {
                responder,
                tool_id,
                kind,
                options,
            },
        );
        bridge().push(UiEvent::Permission {
            thread: self.id,
            request,
            payload: params,
        });
    }

    /// An answer the user's policy gives without asking: kinds allowed in
    /// config (read, search, ...) and "always" choices made this session.
    fn policy_answer(&self, kind: &str, options: &[Value]) -> Option<(String, String)> {
        let find = |kinds: &[&str]| {
            kinds.iter().find_map(|k| {
                options
                    .iter()
                    .find(|o| o.get("kind").and_then(Value::as_str) == Some(*k))
                    .and_then(|o| o.get("optionId").and_then(Value::as_str).map(str::to_owned))
            })
        };
        if let Some(remembered) = self.remembered.lock().get(kind).cloned() {
            let allow = remembered.starts_with("allow");
            let id = if allow {
                find(&["allow_always", "allow_once"])
            } else {
                find(&["reject_always", "reject_once"])
            }?;
            let verb = if allow { "allowed" } else { "rejected" };
            return Some((
                id,
                format!("{verb} by your earlier \"always\" choice for `{kind}`"),
            ));
        }
        if self.editor.policy.auto_allow.iter().any(|k| k == kind) {
            let id = find(&["allow_once", "allow_always"])?;
            return Some((
                id,
                format!("auto-allowed (`{kind}` is allowed in your config)"),
            ));
        }
        None
    }

    /// Decisions remembered this session: tool kind -> option kind.
    pub fn remembered(&self) -> HashMap<String, String> {
        self.remembered.lock().clone()
    }

    pub fn forget_decisions(&self) {
        self.remembered.lock().clear();
    }

    /// The user's answer: an option id, or None for "cancelled".
    pub fn answer_permission(&self, request: u64, option_id: Option<String>) -> Result<(), String> {
        let pending = self
            .permissions
            .lock()
            .remove(&request)
            .ok_or_else(|| format!("permission request {request} is no longer pending"))?;
        let option_kind = option_id.as_ref().and_then(|id| {
            pending
                .options
                .iter()
                .find(|o| o.get("optionId").and_then(Value::as_str) == Some(id.as_str()))
                .and_then(|o| o.get("kind").and_then(Value::as_str).map(str::to_owned))
        });
        if option_id.is_some() && option_kind.is_none() {
            self.permissions.lock().insert(request, pending);
            return Err(format!(
                "`{}` is not one of the agent's options",
                option_id.unwrap_or_default()
            ));
        }
        let outcome = match &option_id {
            Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
            None => json!({"outcome": {"outcome": "cancelled"}}),
        };
        pending
            .responder
            .respond(outcome)
            .map_err(|e| e.to_string())?;
        let state = match option_kind.as_deref() {
            None => Some(ClientState::Cancelled),
            Some(k) if k.starts_with("reject") => Some(ClientState::Rejected),
            Some(_) => None,
        };
        if let Some(k) = option_kind.as_deref().filter(|k| k.ends_with("_always")) {
            self.remembered
                .lock()
                .insert(pending.kind.clone(), k.to_owned());
        }
        self.with_model(|m| m.permission_answered(&pending.tool_id, state, None));
        bridge().push(UiEvent::PermissionDone {
            thread: self.id,
            request,
        });
        Ok(())
    }

    /// Answers every pending permission request with "cancelled".
    fn cancel_permissions(&self) {
        let pending: Vec<_> = self.permissions.lock().drain().collect();
        for (request, p) in pending {
            let _ = p
                .responder
                .respond(json!({"outcome": {"outcome": "cancelled"}}));
            self.with_model(|m| {
                m.permission_answered(&p.tool_id, Some(ClientState::Cancelled), None)
            });
            bridge().push(UiEvent::PermissionDone {
                thread: self.id,
                request,
            });
        }
    }

    fn drop_permissions(&self) {
        let pending: Vec<_> = self.permissions.lock().drain().map(|(k, _)| k).collect();
        for request in pending {
            bridge().push(UiEvent::PermissionDone {
                thread: self.id,
                request,
            });
        }
    }

    /// Returns the live session, creating the agent process and the session
    /// if needed.
    async fn ensure_session(self: &Arc<Self>) -> Result<(Arc<Connection>, String), String> {
        let mut session = self.session.lock().await;
        if let Some(b) = session.as_ref() {
            if !b.conn.is_closed() {
                return Ok((b.conn.clone(), b.session_id.clone()));
            }
        }
        let conn = registry().connection(&self.spec)?;
        let cx = conn.ready().await?;
        let mut params = json!({
            "cwd": self.spec.cwd,
            "mcpServers": self.mcp_servers,
        });
        if !self.editor.policy.roots.is_empty() {
            params["additionalDirectories"] = json!(self.editor.policy.roots);
        }
        let response = cx
            .send_request(UntypedMessage::new("session/new", params).map_err(|e| e.to_string())?)
            .block_task()
            .await
            .map_err(|e| session_new_error(&conn, &self.spec.name, e))?;
        let session_id = response
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("session/new returned no sessionId: {response}"))?
            .to_owned();
        log::info(format!(
            "thread {} bound to session {session_id} of {}",
            self.id, self.spec.name
        ));
        *session = Some(Bound {
            conn: conn.clone(),
            session_id: session_id.clone(),
        });
        *self.current.lock() = Some((conn.clone(), session_id.clone()));
        let init = conn.init_response().unwrap_or(Value::Null);
        let agent = Some(&init)
            .and_then(|v| {
                v.pointer("/agentInfo/name")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| self.spec.name.clone());
        let restarted = self.lost_session.swap(false, Ordering::SeqCst);
        self.with_model(|m| {
            let mut ev = Vec::new();
            if restarted {
                ev.extend(m.notice(
                    NoticeLevel::Info,
                    format!("Restarted `{}` with a new session", m.agent_name),
                ));
            }
            ev.push(ThreadEvent::Agent {
                name: agent.clone(),
                info: init.get("agentInfo").cloned().unwrap_or(Value::Null),
                capabilities: init
                    .get("agentCapabilities")
                    .cloned()
                    .unwrap_or(Value::Null),
            });
            ev.extend(m.session_ready(agent));
            ev.push(ThreadEvent::Session {
                session_id: session_id.clone(),
            });
            // Session modes (ask, code, plan...): the list, and the current one.
            if let Some(modes) = response.get("modes").filter(|m| !m.is_null()) {
                ev.push(ThreadEvent::Modes {
                    modes: modes.clone(),
                });
                if let Some(mode_id) = modes.get("currentModeId").and_then(Value::as_str) {
                    ev.push(ThreadEvent::Mode {
                        mode_id: mode_id.to_owned(),
                    });
                }
            }
            ev
        });
        // After the ready events, so that updates the agent sent with its
        // answer (commands, mode, title) land on a ready chat.
        conn.route(&session_id, self).await;
        Ok((conn, session_id))
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

    /// Sends `method` for this chat's session (opening it first if needed):
    /// `params` plus the sessionId. Returns the connection and the answer.
    async fn session_request(
        self: &Arc<Self>,
        method: &str,
        mut params: Value,
    ) -> Result<(Arc<Connection>, Result<Value, agent_client_protocol::Error>), String> {
        let (conn, session_id) = self.ensure_session().await?;
        let cx = conn.ready().await?;
        params["sessionId"] = Value::from(session_id);
        let req = UntypedMessage::new(method, params).map_err(|e| e.to_string())?;
        let answer = cx.send_request(req).block_task().await;
        Ok((conn, answer))
    }

    pub fn prompt(self: &Arc<Self>, blocks: Value) -> Result<(), String> {
        let text = prompt_display_text(&blocks);
        let turn = {
            let mut model = self.model.lock();
            if model.state() == TurnState::Running {
                return Err("the agent is still answering; cancel it first (:AcpCancel)".into());
            }
            let (turn, events) = model.begin_turn(&text);
            bridge().push_all(self.id, events);
            turn
        };
        let this = self.clone();
        spawn(async move {
            let result = async {
                let (conn, answer) = this
                    .session_request("session/prompt", json!({"prompt": blocks}))
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
                    this.with_model(|m| m.end_turn(turn, &stop));
                }
                Err(e) => this.with_model(|m| m.fail_turn(turn, &e)),
            }
        });
        Ok(())
    }

    /// The agent's sign-in methods (from `initialize`), once it started.
    pub fn auth_methods(&self) -> Vec<Value> {
        registry()
            .live_connection(&self.spec.name)
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
                let req = UntypedMessage::new("authenticate", json!({"methodId": method_id}))
                    .map_err(|e| e.to_string())?;
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
                let (_, answer) = this
                    .session_request("session/set_mode", json!({"modeId": mode_id}))
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

    pub fn cancel(&self) -> bool {
        let mut was_running = false;
        self.with_model(|m| {
            let (running, events) = m.cancel();
            was_running = running;
            events
        });
        self.cancel_permissions();
        if was_running {
            if let Some((conn, session_id)) = self.current.lock().clone() {
                spawn(async move {
                    if let Ok(cx) = conn.ready().await {
                        if let Err(e) = cx.send_notification(CancelNotification::new(session_id)) {
                            log::warn(format!("session/cancel failed: {e}"));
                        }
                    }
                });
            }
        }
        was_running
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
fn prompt_display_text(blocks: &Value) -> String {
    blocks
        .as_array()
        .map(|a| {
            a.iter()
                .map(render::content_block_text)
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

pub fn spawn<F>(fut: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    match crate::runtime::handle() {
        Ok(h) => {
            h.spawn(fut);
        }
        Err(e) => bridge().push(UiEvent::Notify {
            level: "error",
            message: e,
        }),
    }
}

#[derive(Default)]
pub struct Registry {
    threads: Mutex<HashMap<u64, Arc<ThreadHandle>>>,
    agents: Mutex<HashMap<String, Arc<Connection>>>,
    next_thread: AtomicU64,
}

pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

impl Registry {
    /// The live connection for this agent, spawning one if needed. One
    /// process serves every chat that uses the same agent config.
    fn connection(&self, spec: &AgentSpec) -> Result<Arc<Connection>, String> {
        let mut agents = self.agents.lock();
        if let Some(conn) = agents.get(&spec.name) {
            if !conn.is_closed() && conn.spec == *spec {
                return Ok(conn.clone());
            }
        }
        let conn = Connection::spawn(spec.clone())?;
        agents.insert(spec.name.clone(), conn.clone());
        Ok(conn)
    }

    /// The running connection for an agent name, if any.
    fn live_connection(&self, name: &str) -> Option<Arc<Connection>> {
        self.agents
            .lock()
            .get(name)
            .filter(|c| !c.is_closed())
            .cloned()
    }

    pub fn open_thread(&self, spec: AgentSpec, mcp_servers: Value, policy: Policy) -> u64 {
        let id = self.next_thread.fetch_add(1, Ordering::Relaxed) + 1;
        let handle = Arc::new(ThreadHandle {
            id,
            editor: EditorState::new(spec.cwd.clone(), policy),
            model: Mutex::new(Thread::new(spec.name.clone())),
            spec,
            mcp_servers,
            session: tokio::sync::Mutex::new(None),
            current: Mutex::new(None),
            permissions: Mutex::new(HashMap::new()),
            remembered: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            lost_session: std::sync::atomic::AtomicBool::new(false),
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

    pub fn close_thread(&self, id: u64) {
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
        let conns: Vec<_> = self.agents.lock().drain().map(|(_, c)| c).collect();
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

    pub fn agent_pids(&self) -> Vec<u32> {
        self.agents
            .lock()
            .values()
            .filter(|c| !c.is_closed())
            .map(|c| c.pid)
            .collect()
    }
}
