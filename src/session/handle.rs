//! One chat (`ThreadHandle`): its conversation model, the editor state of
//! its requests, and its binding to an ACP session. What the handle does is
//! split by concern: `opening` (sessions and sign-in), `turns` (prompts,
//! cancels, the view's requests), `asking` (permission requests); this file
//! holds its state, what the view reads of it, and what the connection and
//! the editor handlers call.
//!
//! Everything here is called either from tokio tasks or from the main thread
//! through `lua_api`; main-thread entry points only lock short mutexes and
//! spawn tasks, they never wait on the agent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use agent_client_protocol::v1::schema::{ContentBlock, McpServer};
use agent_client_protocol::v1::Responder;
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::agents::Agents;
use super::permission::Permissions;
use crate::bridge::handoff::bridge;
use crate::config::{AgentSpec, Caps, Policy};
use crate::editor::handlers::{try_handle, EditorHost};
use crate::editor::policy::Run;
use crate::editor::state::EditorState;
use crate::log;
use crate::model::entries::NoticeLevel;
use crate::model::events::{ThreadEvent, TurnState};
use crate::model::paths::PathDisplay;
use crate::model::thread::Thread;
use crate::model::update::SessionUpdate;
use crate::protocol::connection::{Connection, SessionSink};
use crate::protocol::inbound::AgentRequest;
use crate::runtime::spawn;

/// The live binding of a chat to a session of a connection.
pub(super) struct Bound {
    pub(super) conn: Arc<Connection>,
    pub(super) session_id: String,
}

/// One chat: its conversation model bound to an ACP session of its agent,
/// and the editor state of its requests.
pub struct ThreadHandle {
    pub id: u64,
    pub spec: AgentSpec,
    /// Roots, policy, served snapshots, writes and terminals of this chat.
    pub editor: EditorState,
    pub(super) mcp_servers: Vec<McpServer>,
    pub(super) model: Mutex<Thread>,
    /// Serialises session creation; holds the live binding.
    pub(super) session: tokio::sync::Mutex<Option<Bound>>,
    /// A copy of the binding readable without awaiting (for cancel).
    pub(super) current: Mutex<Option<(Arc<Connection>, String)>>,
    pub(super) permissions: Mutex<Permissions>,
    /// Set when the agent died under a live session: the next session
    /// creation tells the user that the conversation restarted.
    pub(super) lost_session: AtomicBool,
    /// A prompt sent while the cancelled turn was still ending: it goes out
    /// once that turn has ended, so the two never mix.
    pub(super) queued: Mutex<Option<Vec<ContentBlock>>>,
    /// The session to open instead of a new one (`open_thread`'s `resume`).
    pub(super) resume: Mutex<Option<String>>,
    /// The pending `session/load`/`session/resume`, while it runs.
    pub(super) loading: Mutex<Option<agent_client_protocol::RequestCancellationHandle>>,
    /// The user gave up on a slow load (`cancel`).
    pub(super) give_up: tokio::sync::Notify,
    /// The chat was told that kept file texts are being dropped.
    pub(super) told_dropped: AtomicBool,
    /// What is kept of this chat on disk (`keeping`).
    pub(super) kept: Mutex<super::kept_chats::Kept>,
    /// A kept chat to show before the session opens (`open_thread`'s `kept`).
    pub(super) kept_restore: Mutex<Option<String>>,
    /// A kept transcript is shown: opening its session prefers
    /// `session/resume`, and a `session/load`'s replay is not shown again.
    pub(super) kept_shown: AtomicBool,
    /// Updates of a `session/load` replay are dropped (the kept transcript
    /// above already shows that history).
    pub(super) mute_replay: AtomicBool,
    /// The agent processes this chat's sessions run in.
    pub(super) agents: &'static Agents,
    /// This handle, for the tasks it spawns from `&self` callbacks.
    me: Weak<ThreadHandle>,
    /// Set when the chat is closed: the agent's requests for it are refused.
    pub(super) closed: AtomicBool,
    /// The last activity (prompt, turn end, update, view request): the
    /// idle clock (`lifecycle::watch_idle`).
    pub(super) last_active: Mutex<std::time::Instant>,
    /// A task watches the bound session for idleness.
    pub(super) idle_watch: AtomicBool,
    /// The session closed in the agent while idle: the next prompt
    /// resumes it (`session/resume`) instead of starting a new one.
    pub(super) reaped: Mutex<Option<String>>,
}

impl ThreadHandle {
    /// A new chat `id` of agent `spec`, opening `resume` instead of a new
    /// session when given, continuing kept chat `kept` when given.
    pub(super) fn new(
        id: u64,
        spec: AgentSpec,
        mcp_servers: Vec<McpServer>,
        policy: Policy,
        (resume, kept): (Option<String>, Option<String>),
        agents: &'static Agents,
    ) -> Arc<Self> {
        let kept_id = kept
            .clone()
            .unwrap_or_else(|| super::kept_chats::new_id(id));
        Arc::new_cyclic(|me| ThreadHandle {
            id,
            kept: Mutex::new(super::kept_chats::Kept::new(
                kept_id,
                spec.name.clone(),
                &spec.cwd,
            )),
            kept_restore: Mutex::new(kept),
            kept_shown: AtomicBool::new(false),
            mute_replay: AtomicBool::new(false),
            editor: EditorState::new(spec.cwd.clone(), policy).owned_by(id),
            model: Mutex::new(Thread::new(spec.name.clone()).with_paths(PathDisplay::new(
                Some(spec.cwd.clone()),
                std::env::var_os("HOME").map(Into::into),
            ))),
            spec,
            mcp_servers,
            session: tokio::sync::Mutex::new(None),
            current: Mutex::new(None),
            permissions: Mutex::new(Permissions::default()),
            lost_session: AtomicBool::new(false),
            queued: Mutex::new(None),
            resume: Mutex::new(resume),
            loading: Mutex::new(None),
            give_up: tokio::sync::Notify::new(),
            told_dropped: AtomicBool::new(false),
            agents,
            me: me.clone(),
            closed: AtomicBool::new(false),
            last_active: Mutex::new(std::time::Instant::now()),
            idle_watch: AtomicBool::new(false),
            reaped: Mutex::new(None),
        })
    }

    /// This chat as an `Arc` while it is open (a closed chat answers no
    /// request of the agent).
    pub(super) fn live(&self) -> Option<Arc<Self>> {
        if self.closed.load(Ordering::SeqCst) {
            return None;
        }
        self.me.upgrade()
    }

    /// The chat is closed: its turn is cancelled and its session no longer
    /// routed to it. Returns the session to close in the agent (when it
    /// advertises `session/close`).
    pub(super) fn close(self: &Arc<Self>) -> Option<(Arc<Connection>, String)> {
        let to_close = self.to_close();
        self.closed.store(true, Ordering::SeqCst);
        self.cancel();
        self.save_kept();
        if let Some((conn, sid)) = self.current.lock().clone() {
            conn.unroute(&sid);
        }
        to_close
    }

    /// Marks the chat closed (every chat, at Neovim's exit).
    pub(super) fn mark_closed(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    pub(super) fn with_model(&self, f: impl FnOnce(&mut Thread) -> Vec<ThreadEvent>) {
        // Push while holding the model lock so events keep the model's order.
        let mut model = self.model.lock();
        let events = f(&mut model);
        bridge().push_all(self.id, events);
    }

    pub(super) fn with_model_value<T>(
        &self,
        f: impl FnOnce(&mut Thread) -> (Vec<ThreadEvent>, T),
    ) -> T {
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
    /// sync): kept for review with the text right before and right after it
    /// (the buffer's, when the sync merged it into one; None after: the
    /// file was deleted).
    pub fn record_disk_edit(&self, path: &str, before: String, after: Option<String>) {
        use crate::editor::state::Original;
        crate::editor::handlers::record_change(
            self,
            path,
            crate::editor::state::WriteTarget::Agent,
            true,
            Original::Text(Arc::new(before)),
            after.map_or(Original::Absent, |a| Original::Text(Arc::new(a))),
            None,
        );
        // Seen after the turn ended (the sync checks the disk then too):
        // the kept review records take it now, not only at close.
        if self.state() != TurnState::Running {
            if let Some(this) = self.live() {
                this.save_kept();
            }
        }
    }

    /// Terminal output (or exit) for the cards and terminal buffers.
    pub fn terminal_display(
        &self,
        id: &str,
        data: &str,
        exit: Option<crate::model::entries::TermExit>,
    ) {
        self.with_model(|m| match exit {
            Some(exit) => m.terminal_exit(id, exit),
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
                .map(|v| (v.output.clone(), v.exit.as_ref().map(|x| x.describe())))
        })
        .flatten()
    }

    pub fn terminal_text(&self, id: &str) -> Option<(String, Option<String>)> {
        self.model
            .lock()
            .terminal_text(id)
            .map(|v| (v.output.clone(), v.exit.as_ref().map(|x| x.describe())))
    }

    pub fn markdown(&self, before: Option<usize>) -> String {
        let m = self.model.lock();
        match before {
            Some(end) => m.markdown_before(end),
            None => m.to_markdown(),
        }
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
}

impl EditorHost for ThreadHandle {
    fn thread_id(&self) -> u64 {
        self.id
    }

    fn editor(&self) -> &EditorState {
        &self.editor
    }

    fn caps(&self) -> Caps {
        self.spec.caps
    }

    fn cwd(&self) -> &std::path::Path {
        &self.spec.cwd
    }

    fn note_write(&self, path: &str, note: String) -> Option<String> {
        ThreadHandle::note_write(self, path, note)
    }

    fn terminal_display(
        &self,
        id: &str,
        data: &str,
        exit: Option<crate::model::entries::TermExit>,
    ) {
        ThreadHandle::terminal_display(self, id, data, exit)
    }

    fn confirm_terminal<'a>(
        &'a self,
        run: Run<'a>,
        command: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool, String>> + Send + 'a>>
    {
        Box::pin(ThreadHandle::confirm_terminal(self, run, command))
    }
}

impl SessionSink for ThreadHandle {
    fn apply_update(&self, update: SessionUpdate) {
        if self.mute_replay.load(Ordering::SeqCst) {
            return;
        }
        self.touch();
        self.with_model(|m| m.apply_update(&update));
    }

    fn record(&self, update: &Value) {
        // An echo of the prompt is not kept: the prompt is, as sent.
        if self.model.lock().is_prompt_echo(update) {
            return;
        }
        self.record_update(update);
    }

    fn record_text_chunk(&self, kind: &str, message_id: Option<&str>, text: &str) {
        // Not a user chunk, so never a prompt's echo.
        if self.mute_replay.load(Ordering::SeqCst) {
            return;
        }
        self.kept.lock().recorder.text_chunk(kind, message_id, text);
    }

    fn agent_request(&self, request: AgentRequest, responder: Responder<Value>) {
        let Some(this) = self.live() else {
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
                let host: Arc<dyn EditorHost> = this.clone();
                if let Some(responder) = try_handle(&host, other, responder) {
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
        let (Some(this), conn, reason) = (self.live(), conn.clone(), reason.to_owned()) else {
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
