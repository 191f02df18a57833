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
use crate::log;
use crate::render;
use crate::thread::{NoticeLevel, Thread, ThreadEvent, TurnState};

struct Bound {
    conn: Arc<Connection>,
    session_id: String,
}

pub struct ThreadHandle {
    pub id: u64,
    pub spec: AgentSpec,
    mcp_servers: Value,
    model: Mutex<Thread>,
    /// Serialises session creation; holds the live binding.
    session: tokio::sync::Mutex<Option<Bound>>,
    /// A copy of the binding readable without awaiting (for cancel).
    current: Mutex<Option<(Arc<Connection>, String)>>,
    permissions: Mutex<HashMap<u64, Responder<Value>>>,
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
        self.current.lock().as_ref().and_then(|(c, _)| c.init_response())
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
        let request = self.next_request.fetch_add(1, Ordering::Relaxed);
        self.permissions.lock().insert(request, responder);
        bridge().push(UiEvent::Permission { thread: self.id, request, payload: params });
    }

    /// The user's answer: an option id, or None for "cancelled".
    pub fn answer_permission(&self, request: u64, option_id: Option<String>) -> Result<(), String> {
        let responder = self
            .permissions
            .lock()
            .remove(&request)
            .ok_or_else(|| format!("permission request {request} is no longer pending"))?;
        let outcome = match option_id {
            Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
            None => json!({"outcome": {"outcome": "cancelled"}}),
        };
        responder.respond(outcome).map_err(|e| e.to_string())?;
        bridge().push(UiEvent::PermissionDone { thread: self.id, request });
        Ok(())
    }

    /// Answers every pending permission request with "cancelled".
    fn cancel_permissions(&self) {
        let pending: Vec<_> = self.permissions.lock().drain().collect();
        for (request, responder) in pending {
            let _ = responder.respond(json!({"outcome": {"outcome": "cancelled"}}));
            bridge().push(UiEvent::PermissionDone { thread: self.id, request });
        }
    }

    fn drop_permissions(&self) {
        let pending: Vec<_> = self.permissions.lock().drain().map(|(k, _)| k).collect();
        for request in pending {
            bridge().push(UiEvent::PermissionDone { thread: self.id, request });
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
        let params = json!({
            "cwd": self.spec.cwd,
            "mcpServers": self.mcp_servers,
        });
        let response = cx
            .send_request(UntypedMessage::new("session/new", params).map_err(|e| e.to_string())?)
            .block_task()
            .await
            .map_err(|e| format!("session/new failed: {e}"))?;
        let session_id = response
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("session/new returned no sessionId: {response}"))?
            .to_owned();
        conn.route(&session_id, self);
        log::info(format!("thread {} bound to session {session_id} of {}", self.id, self.spec.name));
        *session = Some(Bound { conn: conn.clone(), session_id: session_id.clone() });
        *self.current.lock() = Some((conn.clone(), session_id.clone()));
        let agent = conn
            .init_response()
            .and_then(|v| v.pointer("/agentInfo/name").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| self.spec.name.clone());
        let restarted = self.lost_session.swap(false, Ordering::SeqCst);
        self.with_model(|m| {
            let mut ev = Vec::new();
            if restarted {
                ev.extend(m.notice(NoticeLevel::Info, format!("Restarted `{}` with a new session", m.agent_name)));
            }
            ev.extend(m.session_ready(agent));
            ev.push(ThreadEvent::Info { key: "session", value: Value::from(session_id.clone()) });
            ev
        });
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
                let (conn, session_id) = this.ensure_session().await?;
                let cx = conn.ready().await?;
                let req = UntypedMessage::new(
                    "session/prompt",
                    json!({"sessionId": session_id, "prompt": blocks}),
                )
                .map_err(|e| e.to_string())?;
                match cx.send_request(req).block_task().await {
                    Ok(v) => Ok(v),
                    Err(e) => {
                        // If the agent died, its exit report explains more
                        // than "response never received": let that speak.
                        let died = tokio::time::timeout(Duration::from_millis(500), conn.closed()).await;
                        if died.is_ok() {
                            return Ok(Value::Null);
                        }
                        Err(format!("{e}"))
                    }
                }
            }
            .await;
            match result {
                Ok(Value::Null) => {}
                Ok(v) => {
                    let stop = v.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn").to_owned();
                    this.with_model(|m| m.end_turn(turn, &stop));
                }
                Err(e) => this.with_model(|m| m.fail_turn(turn, &e)),
            }
        });
        Ok(())
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

fn spawn<F>(fut: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    match crate::runtime::handle() {
        Ok(h) => {
            h.spawn(fut);
        }
        Err(e) => bridge().push(UiEvent::Notify { level: "error", message: e }),
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

    pub fn open_thread(&self, spec: AgentSpec, mcp_servers: Value) -> u64 {
        let id = self.next_thread.fetch_add(1, Ordering::Relaxed) + 1;
        let handle = Arc::new(ThreadHandle {
            id,
            model: Mutex::new(Thread::new(spec.name.clone())),
            spec,
            mcp_servers,
            session: tokio::sync::Mutex::new(None),
            current: Mutex::new(None),
            permissions: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            lost_session: std::sync::atomic::AtomicBool::new(false),
        });
        self.threads.lock().insert(id, handle.clone());
        handle.connect();
        id
    }

    pub fn thread(&self, id: u64) -> Result<Arc<ThreadHandle>, String> {
        self.threads.lock().get(&id).cloned().ok_or_else(|| format!("no chat thread {id}"))
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
        self.agents.lock().values().filter(|c| !c.is_closed()).map(|c| c.pid).collect()
    }
}
