//! A chat's turns: sending a prompt (or holding it while a cancelled turn
//! ends), cancelling, switching the mode, and the requests the view sends
//! to the agent (config options, models, the session list).

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, PromptRequest, SetSessionModeRequest,
};
use agent_client_protocol::UntypedMessage;
use serde_json::Value;

use super::handle::ThreadHandle;
use super::opening::typed_request;
use crate::bridge::handoff::bridge;
use crate::bridge::queue::UiEvent;
use crate::log;
use crate::model::entries::NoticeLevel;
use crate::model::events::{ThreadEvent, TurnState};
use crate::model::update::content_block_text;
use crate::protocol::connection::{is_auth_required, Connection};
use crate::protocol::elicitation;
use crate::runtime::spawn;

/// Requests the view may send through `ThreadHandle::request`.
const VIEW_METHODS: &[&str] = &[
    "session/set_config_option",
    "session/set_model",
    "session/list",
    "session/close",
    "session/delete",
    "logout",
    "_session/steering",
];

/// Those that act on this chat's session by default.
const SESSION_METHODS: &[&str] = &[
    "session/set_config_option",
    "session/set_model",
    "session/close",
    "_session/steering",
];

impl ThreadHandle {
    /// A request of the view to the agent (config options, models, session
    /// list/close/delete, logout): its answer comes back as a `reply`
    /// event for `reply`. Session methods get this chat's `sessionId`
    /// unless `params` names one.
    pub fn request(self: &Arc<Self>, method: String, mut params: Value, reply: u64) {
        self.touch();
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
                    this.agents.connection(&this.spec)?
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
            "_session/steering" => {
                let outcome = answer.get("outcome").and_then(Value::as_str);
                let note = match outcome {
                    Some("injected") => "↪ steered into the running turn",
                    Some("startedNewTurn") => "↪ the agent started a new turn with this message",
                    // `promptRequired`: the view sends it as a prompt.
                    _ => return,
                };
                let text = params
                    .get("prompt")
                    .and_then(Value::as_array)
                    .map(|blocks| {
                        blocks
                            .iter()
                            .map(content_block_text)
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                self.with_model(|m| m.steered(&text, note));
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
            let users = model.user_messages();
            let (turn, events) = model.begin_turn(&text);
            bridge().push_all(self.id, events);
            (turn, users)
        };
        let (turn, users) = turn;
        let (checkpoint, dropped) = self.editor.checkpoint_begin(users, &text, now_secs());
        if !dropped.is_empty() {
            self.notice(
                NoticeLevel::Info,
                format!(
                    "Checkpoints passed checkpoints.max_bytes: the oldest were dropped (turn {}); :AcpRestore cannot go back before turn {}",
                    dropped
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    dropped.last().map_or(0, |d| d + 1)
                ),
            );
        }
        self.record_prompt(&text);
        self.permissions.lock().new_turn();
        self.touch();
        let this = self.clone();
        spawn(async move {
            // In a git repository: a snapshot of the work tree before the
            // agent runs anything, and one after, for the files commands
            // change (see `editor::checkpoints`).
            let cwd = this.spec.cwd.clone();
            let top = tokio::task::spawn_blocking(move || {
                let top = crate::editor::checkpoints::git_repo(&cwd)?;
                let tree = crate::editor::checkpoints::git_snapshot(&top)?;
                Some((top, tree))
            })
            .await
            .ok()
            .flatten();
            if let Some((_, tree)) = &top {
                this.editor.checkpoint_set_git(checkpoint, tree.clone());
            }
            let result = async {
                let (conn, session_id) = this.ensure_session().await?;
                let cx = conn.ready().await?;
                let req = typed_request("session/prompt", &PromptRequest::new(session_id, blocks))?;
                // A cancel pressed before the prompt went out (the snapshot
                // above, an agent still starting): the prompt never goes and
                // the turn ends cancelled. Checked and sent under the model's
                // lock, which `cancel` takes before its `session/cancel`, so
                // that notification can never reach the agent before the
                // prompt it cancels (the agent would ignore it and run the
                // whole turn).
                let sent = {
                    let model = this.model.lock();
                    if model.is_cancelling() && model.current_turn() == turn {
                        None
                    } else {
                        Some(cx.send_request(req))
                    }
                };
                let Some(sent) = sent else {
                    return Ok(Some(serde_json::json!({ "stopReason": "cancelled" })));
                };
                let answer = sent.block_task().await;
                match answer {
                    Ok(v) => Ok(Some(v)),
                    Err(e) => {
                        // A sign-in the prompt asks for (Kimi names its
                        // methods only there): `:AcpAuth` offers them, and
                        // the chat waits for it.
                        let value = serde_json::to_value(&e).unwrap_or(Value::Null);
                        conn.keep_error_auth_methods(&value);
                        if is_auth_required(&value) {
                            this.with_model(|m| {
                                m.wants_sign_in(true);
                                Vec::new()
                            });
                        }
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
            // The files the turn's commands changed are in its checkpoint
            // before the turn shows as ended.
            if let Some((top, start)) = top {
                let ed = this.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    let Some(end) = crate::editor::checkpoints::git_snapshot(&top) else {
                        return;
                    };
                    for (path, before, after) in
                        crate::editor::checkpoints::git_changes(&top.top, &start, &end)
                    {
                        ed.editor.checkpoint_add(checkpoint, &path, before, after);
                    }
                })
                .await;
            }
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
            // The turn ended, one way or another: its transcript is kept.
            this.touch();
            this.save_kept();
            this.start_queued();
        });
        Ok(())
    }

    /// Sends the prompt held back while a cancelled turn was ending, once
    /// no turn runs.
    pub(super) fn start_queued(self: &Arc<Self>) {
        if self.model.lock().state() == TurnState::Running {
            return;
        }
        if let Some(blocks) = self.queued.lock().take() {
            if let Err(e) = self.prompt(blocks, false) {
                self.notice(NoticeLevel::Error, format!("Not sent: {e}"));
            }
        }
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
                    level: NoticeLevel::Error,
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
        elicitation::cancel_thread(self.id);
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

/// The text shown for the user's message: text blocks verbatim, other
/// blocks as links.
fn prompt_display_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| serde_json::to_value(b).ok())
        .map(|b| content_block_text(&b))
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Seconds since the epoch.
fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
