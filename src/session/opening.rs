//! How a chat gets its session: the agent process (shared by the chats of
//! one agent and project), `session/new`, or `session/resume` /
//! `session/load` of the session asked for, created on demand: eagerly when
//! the chat opens, and again after the agent process died. Also sign-in.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, LoadSessionRequest, McpServer, NewSessionRequest, ResumeSessionRequest,
};
use agent_client_protocol::UntypedMessage;
use serde_json::Value;

use super::handle::{Bound, ThreadHandle};
use crate::bridge::handoff::bridge;
use crate::bridge::queue::UiEvent;
use crate::log;
use crate::model::entries::NoticeLevel;
use crate::model::events::ThreadEvent;
use crate::model::render::human_ms;
use crate::protocol::connection::{is_auth_required, Connection, SessionSink};
use crate::runtime::spawn;

/// An outgoing request built from the protocol crate's typed params, sent
/// untyped so that the answer is read leniently (agents' answers carry
/// quirks a strict parse would reject).
pub(super) fn typed_request<T: serde::Serialize>(
    method: &str,
    params: &T,
) -> Result<UntypedMessage, String> {
    let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
    UntypedMessage::new(method, params).map_err(|e| e.to_string())
}

/// The MCP servers an agent can take: stdio always, http and sse only when
/// advertised in `mcpCapabilities`. Returns them and the names left out.
pub(super) fn mcp_servers_for(
    servers: &[McpServer],
    caps: &Value,
) -> (Vec<McpServer>, Vec<String>) {
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

/// Whether the agent can open a stored session (`session/load` or
/// `session/resume`).
fn advertised_open(caps: &Value) -> bool {
    ["/loadSession", "/sessionCapabilities/resume"]
        .iter()
        .any(|p| {
            caps.pointer(p)
                .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
        })
}

/// Events of a `session/new`, `session/load` or `session/resume` answer:
/// modes, config options and the legacy models. Config options win over
/// models in the view; both are passed on.
pub(super) fn session_answer_events(response: &Value) -> Vec<ThreadEvent> {
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

impl ThreadHandle {
    pub(super) async fn on_disconnected(&self, conn: &Arc<Connection>, reason: &str) {
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
    pub(super) async fn ensure_session(
        self: &Arc<Self>,
    ) -> Result<(Arc<Connection>, String), String> {
        let mut session = self.session.lock().await;
        if let Some(b) = session.as_ref() {
            if !b.conn.is_closed() {
                return Ok((b.conn.clone(), b.session_id.clone()));
            }
        }
        // A new attempt: whether the agent wants a sign-in is known again
        // once it answers.
        self.with_model(|m| {
            m.wants_sign_in(false);
            Vec::new()
        });
        // A kept chat shows its transcript first, whatever the agent does.
        let restore = self.kept_restore.lock().take();
        if let Some(id) = restore {
            if self.restore_kept(&id).await {
                self.kept_shown.store(true, Ordering::SeqCst);
            }
        }
        let conn = self.agents.connection(&self.spec)?;
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
        // A session closed while idle comes back quietly, as it was.
        let idle = self.reaped.lock().take();
        if let Some(sid) = idle {
            match self
                .resume_idle(&cx, &sid, &caps, &mcp_servers, &directories)
                .await
            {
                Ok(response) => opened = Some((sid, response)),
                Err(e) => self.with_model(|m| {
                    m.notice(
                        NoticeLevel::Info,
                        format!("The idle session `{sid}` could not be resumed ({e}): this message starts a new session"),
                    )
                }),
            }
        }
        if opened.is_none()
            && self.spec.system_prompt.is_some()
            && super::lifecycle::system_prompt(&self.spec, &caps).is_none()
        {
            self.with_model(|m| {
                m.notice(
                    NoticeLevel::Info,
                    format!(
                        "system_prompt not sent: `{}` does not take a client system prompt",
                        self.spec.name
                    ),
                )
            });
        }
        let wanted = if opened.is_some() {
            None
        } else {
            self.resume.lock().take()
        };
        if let Some(wanted) = wanted {
            match self
                .open_existing(&conn, &cx, &wanted, &caps, &mcp_servers, &directories)
                .await
            {
                Ok(response) => opened = Some((wanted, response)),
                // A kept transcript is the history: a new session follows it.
                Err(_) if self.kept_shown.load(Ordering::SeqCst) && !advertised_open(&caps) => self
                    .with_model(|m| {
                        m.notice(
                            NoticeLevel::Info,
                            format!("The agent cannot open session `{wanted}` again: new messages start a new session"),
                        )
                    }),
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
                params.system_prompt = super::lifecycle::system_prompt(&self.spec, &caps);
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
                        human_ms(limit)
                    );
                    log::warn(&e);
                    e
                })?
                .map_err(|e| {
                    let (message, sign_in) = session_new_error(&conn, &self.spec.name, e);
                    self.with_model(|m| {
                        m.wants_sign_in(sign_in);
                        Vec::new()
                    });
                    message
                })?;
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
                steering: offers_steering(&init),
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
        if !resumed {
            self.apply_defaults(&cx, &session_id, &response).await;
        }
        self.watch_idle(&caps);
        Ok((conn, session_id))
    }

    /// `session/load` or `session/resume` of `session_id`; the answer (may
    /// be `null`). Without a kept transcript a load is preferred: its
    /// replayed history fills the transcript between two notices, where a
    /// resume shows nothing. Under a kept transcript a resume is preferred,
    /// and a load's replay is not shown (the transcript above is that
    /// history). Gives up when the user cancels (`$/cancel_request`).
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
        let kept = self.kept_shown.load(Ordering::SeqCst);
        let resume = advertised("/sessionCapabilities/resume");
        let request = if resume && (kept || !advertised("/loadSession")) {
            let mut p = ResumeSessionRequest::new(session_id.to_owned(), self.spec.cwd.clone());
            p.mcp_servers = mcp_servers.to_vec();
            p.additional_directories = directories.to_vec();
            p.system_prompt = super::lifecycle::system_prompt(&self.spec, caps);
            typed_request("session/resume", &p)?
        } else if advertised("/loadSession") {
            let mut p = LoadSessionRequest::new(session_id.to_owned(), self.spec.cwd.clone());
            p.mcp_servers = mcp_servers.to_vec();
            p.additional_directories = directories.to_vec();
            p.system_prompt = super::lifecycle::system_prompt(&self.spec, caps);
            typed_request("session/load", &p)?
        } else {
            return Err(format!("`{}` cannot load sessions", self.spec.name));
        };
        let load = request.method() == "session/load";
        if load {
            // Routed first: the replay arrives before the answer.
            if kept {
                self.mute_replay.store(true, Ordering::SeqCst);
            } else {
                self.with_model(|m| m.begin_replay(&format!("`{session_id}`")));
            }
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
            if kept {
                self.mute_replay.store(false, Ordering::SeqCst);
                if ok {
                    self.with_model(|m| {
                        m.notice(
                            NoticeLevel::Info,
                            format!("Loaded session `{session_id}` again: new messages continue it (its history is the kept transcript above)"),
                        )
                    });
                }
            } else {
                self.with_model(|m| m.end_replay(ok));
            }
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
            if let Some(conn) = this.agents.live_connection(&this.spec) {
                this.agents.forget(&this.spec);
                conn.terminate();
            }
            if let Err(e) = this.ensure_session().await {
                this.with_model(|m| m.disconnected(e));
            }
        });
    }

    /// Opens the session in the background so the agent starts while the
    /// user types.
    pub(super) fn connect(self: &Arc<Self>) {
        let this = self.clone();
        spawn(async move {
            if let Err(e) = this.ensure_session().await {
                this.with_model(|m| m.disconnected(e));
            }
        });
    }

    /// The agent's sign-in methods (from `initialize`, and those only an
    /// "authentication required" error named), once it started.
    pub fn auth_methods(&self) -> Vec<Value> {
        self.agents
            .live_connection(&self.spec)
            .map(|c| c.auth_methods())
            .unwrap_or_default()
    }

    /// `authenticate` with `method_id`, then opens the session again. The
    /// chat says it is signing in at once; an agent that does not answer
    /// within `timeouts.authenticate` (Kimi never answers for a terminal
    /// method) is given up with a message.
    pub fn authenticate(self: &Arc<Self>, method_id: String) {
        let this = self.clone();
        let limit = self.spec.timeouts.authenticate;
        self.with_model(|m| {
            m.notice(
                NoticeLevel::Info,
                format!(
                    "Signing in with `{method_id}`… (waiting up to {} for the agent)",
                    human_ms(limit)
                ),
            )
        });
        spawn(async move {
            let result = async {
                let conn = this.agents.connection(&this.spec)?;
                let cx = conn.ready().await?;
                let req =
                    typed_request("authenticate", &AuthenticateRequest::new(method_id.clone()))?;
                tokio::time::timeout(
                    Duration::from_millis(limit),
                    cx.send_request(req).block_task(),
                )
                .await
                .map_err(|_| format!("the agent did not answer within {}", human_ms(limit)))?
                .map_err(|e| e.to_string())
            }
            .await;
            match result {
                Ok(_) => {
                    this.with_model(|m| m.signed_in(&method_id));
                    if let Err(e) = this.ensure_session().await {
                        this.with_model(|m| m.disconnected(e));
                    }
                }
                Err(e) => {
                    let message = format!("Sign-in with `{method_id}` failed: {e}");
                    log::warn(&message);
                    this.with_model(|m| m.notice(NoticeLevel::Error, message.clone()));
                    bridge().push(UiEvent::Notify {
                        level: NoticeLevel::Error,
                        message: format!("acp.nvim: {message}"),
                    });
                }
            }
        });
    }
}

/// A failed `session/new`: the message, and whether it is ACP's "auth
/// required" (-32000), whose message names the agent's sign-in methods and
/// `:AcpAuth`.
fn session_new_error(
    conn: &Connection,
    agent: &str,
    e: agent_client_protocol::Error,
) -> (String, bool) {
    let value = serde_json::to_value(&e).unwrap_or(Value::Null);
    conn.keep_error_auth_methods(&value);
    if !is_auth_required(&value) {
        return (format!("session/new failed: {e}"), false);
    }
    let methods = conn.auth_methods();
    if methods.is_empty() {
        return (
            format!("Agent `{agent}` needs authentication ({e}); sign in with its own CLI first."),
            true,
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
    (
        format!(
            "Agent `{agent}` needs you to sign in: run :AcpAuth {{method}}. Methods:\n{}",
            list.join("\n")
        ),
        true,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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

/// Whether the agent takes `_session/steering`: claude-agent-acp says so in
/// the `_meta` of its `initialize` answer (`{"steering": {"supported":
/// true}}`); a `_meta.steering` in `agentCapabilities` counts too.
pub(super) fn offers_steering(init: &Value) -> bool {
    let offered = |v: Option<&Value>| match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::Object(o)) => o.get("supported").and_then(Value::as_bool) != Some(false),
        _ => false,
    };
    offered(init.pointer("/_meta/steering"))
        || offered(init.pointer("/agentCapabilities/_meta/steering"))
}

#[cfg(test)]
mod steering_tests {
    use serde_json::json;

    use super::offers_steering;

    #[test]
    fn steering_is_read_where_the_adapters_put_it() {
        // claude-agent-acp 0.100: the `initialize` answer's own `_meta`.
        assert!(offers_steering(
            &json!({"_meta": {"steering": {"supported": true}}})
        ));
        assert!(offers_steering(
            &json!({"agentCapabilities": {"_meta": {"steering": true}}})
        ));
        assert!(!offers_steering(
            &json!({"_meta": {"steering": {"supported": false}}})
        ));
        assert!(!offers_steering(
            &json!({"agentCapabilities": {"_meta": {"claudeCode": {"promptQueueing": true}}}})
        ));
        assert!(!offers_steering(&json!(null)));
    }
}
