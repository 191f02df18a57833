//! A session's life beyond its turns: the client's system prompt (sent
//! with `session/new`, `session/load` and `session/resume` to agents that
//! take one), the per-agent defaults set right after `session/new`, the
//! idle session closed in the agent and resumed by the next prompt, and
//! `session/close` when the chat is closed for good.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::{
    ContentBlock, McpServer, ResumeSessionRequest, SystemPrompt, TextContent,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, UntypedMessage};
use serde_json::{json, Value};

use super::handle::ThreadHandle;
use crate::config::AgentSpec;
use crate::log;
use crate::model::entries::NoticeLevel;
use crate::model::events::{ThreadEvent, TurnState};
use crate::protocol::connection::Connection;
use crate::runtime::spawn;

/// How long closing a chat waits for the agent's `session/close` answer
/// before its process (when no other chat uses it) is ended anyway.
pub(super) const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Whether the agent's capabilities (`agentCapabilities`) advertise
/// `pointer` (present, not null, not false).
pub(super) fn advertised(caps: &Value, pointer: &str) -> bool {
    caps.pointer(pointer)
        .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
}

/// The system prompt to send to an agent with capabilities `caps`: the
/// configured text as one text block, appended to the agent's own
/// instructions; None when none is configured or the agent takes none.
pub(super) fn system_prompt(spec: &AgentSpec, caps: &Value) -> Option<SystemPrompt> {
    let text = spec
        .system_prompt
        .as_deref()
        .filter(|t| !t.trim().is_empty())?;
    if !advertised(caps, "/sessionCapabilities/systemPrompt") {
        return None;
    }
    Some(SystemPrompt::new(vec![ContentBlock::Text(
        TextContent::new(text.to_owned()),
    )]))
}

/// Whether idle sessions of an agent with `caps` can be closed and brought
/// back (`session/close` and `session/resume` both advertised).
fn can_reap(caps: &Value) -> bool {
    advertised(caps, "/sessionCapabilities/close")
        && advertised(caps, "/sessionCapabilities/resume")
}

/// A value of a select option: its id, or its name as the user wrote it.
fn select_value(option: &Value, wanted: &str) -> Option<Value> {
    let mut flat = Vec::new();
    for o in option["options"].as_array().into_iter().flatten() {
        match o["options"].as_array() {
            Some(group) => flat.extend(group.iter()),
            None => flat.push(o),
        }
    }
    flat.iter()
        .find(|c| c["value"].as_str() == Some(wanted))
        .or_else(|| flat.iter().find(|c| c["name"].as_str() == Some(wanted)))
        .map(|c| c["value"].clone())
}

/// The ids (or names) of a list's items, for "offered: ..." lines.
fn offered(items: impl Iterator<Item = String>) -> String {
    let list: Vec<String> = items.map(|s| format!("`{s}`")).collect();
    if list.is_empty() {
        "nothing".to_owned()
    } else {
        list.join(", ")
    }
}

/// What one default becomes: a request to send (method, params) and the
/// events its success brings, or the line saying why it is not set.
#[derive(Debug, PartialEq)]
pub(super) enum DefaultStep {
    Send { method: &'static str, params: Value },
    NotOffered(String),
}

/// How `key = value` of `agent`'s defaults is set in a session whose
/// answer (or latest state) is `state` (`configOptions`, `modes`,
/// `models`): a config option with that id (or category), else the legacy
/// modes (`session/set_mode`) for `mode`, else the legacy models
/// (`session/set_model`) for `model`.
pub(super) fn plan_default(agent: &str, key: &str, value: &Value, state: &Value) -> DefaultStep {
    let shown = match value {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let options = state["configOptions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let option = options
        .iter()
        .find(|o| o["id"].as_str() == Some(key))
        .or_else(|| options.iter().find(|o| o["category"].as_str() == Some(key)));
    if let Some(option) = option {
        let id = option["id"].clone();
        if option["type"] == "boolean" {
            let b = match value {
                Value::Bool(b) => Some(*b),
                Value::String(s) => match s.as_str() {
                    "on" | "true" => Some(true),
                    "off" | "false" => Some(false),
                    _ => None,
                },
                _ => None,
            };
            return match b {
                Some(b) => DefaultStep::Send {
                    method: "session/set_config_option",
                    params: json!({"configId": id, "type": "boolean", "value": b}),
                },
                None => DefaultStep::NotOffered(format!(
                    "Default `{key}` = `{shown}` not set: `{agent}` takes on or off for it"
                )),
            };
        }
        return match value.as_str().and_then(|v| select_value(option, v)) {
            Some(v) => DefaultStep::Send {
                method: "session/set_config_option",
                params: json!({"configId": id, "value": v}),
            },
            None => {
                let mut values = Vec::new();
                for o in option["options"].as_array().into_iter().flatten() {
                    match o["options"].as_array() {
                        Some(group) => values.extend(group.iter().cloned()),
                        None => values.push(o.clone()),
                    }
                }
                DefaultStep::NotOffered(format!(
                    "Default `{key}` = `{shown}` not set: `{agent}` does not offer it (offered: {})",
                    offered(values.iter().filter_map(|c| c["value"].as_str().map(str::to_owned)))
                ))
            }
        };
    }
    let legacy = match key {
        "mode" => state["modes"]["availableModes"]
            .as_array()
            .map(|list| (list.clone(), "id", "session/set_mode", "modeId")),
        "model" => state["models"]["availableModels"]
            .as_array()
            .map(|list| (list.clone(), "modelId", "session/set_model", "modelId")),
        _ => None,
    };
    if let Some((list, id_key, method, param)) = legacy {
        let wanted = value.as_str().unwrap_or_default();
        let found = list
            .iter()
            .find(|m| m[id_key].as_str() == Some(wanted))
            .or_else(|| list.iter().find(|m| m["name"].as_str() == Some(wanted)));
        return match found {
            Some(m) => DefaultStep::Send {
                method,
                params: json!({ param: m[id_key].clone() }),
            },
            None => {
                DefaultStep::NotOffered(format!(
                "Default `{key}` = `{shown}` not set: `{agent}` does not offer it (offered: {})",
                offered(list.iter().filter_map(|m| m[id_key].as_str().map(str::to_owned)))
            ))
            }
        };
    }
    DefaultStep::NotOffered(format!(
        "Default `{key}` not set: `{agent}` has no such option (options: {})",
        offered(
            options
                .iter()
                .filter_map(|o| o["id"].as_str().map(str::to_owned))
        )
    ))
}

/// What a set default changes in `state` (kept current for the next
/// default) and the chat's events for it.
fn after_default(state: &mut Value, method: &str, params: &Value, answer: &Value) -> ThreadEvent {
    match method {
        "session/set_mode" => {
            let mode_id = params["modeId"].as_str().unwrap_or_default().to_owned();
            state["modes"]["currentModeId"] = json!(mode_id);
            ThreadEvent::Mode { mode_id }
        }
        "session/set_model" => {
            state["models"]["currentModelId"] = params["modelId"].clone();
            ThreadEvent::Models {
                models: state["models"].clone(),
            }
        }
        _ => {
            match answer.get("configOptions").filter(|v| v.is_array()) {
                Some(list) => state["configOptions"] = list.clone(),
                None => {
                    for o in state["configOptions"].as_array_mut().into_iter().flatten() {
                        if o["id"] == params["configId"] {
                            o["currentValue"] = params["value"].clone();
                        }
                    }
                }
            }
            ThreadEvent::ConfigOptions {
                options: state["configOptions"].clone(),
            }
        }
    }
}

impl ThreadHandle {
    /// Notes activity: the idle clock starts again.
    pub(super) fn touch(&self) {
        *self.last_active.lock() = Instant::now();
    }

    /// Sets the agent's defaults (`agents.<name>.defaults`) in the new
    /// session `session_id` whose answer was `response`, one after the
    /// other (a model can change the options offered), before any prompt
    /// (the caller holds the session lock). A value the agent does not
    /// offer, or refuses, is one line in the chat.
    pub(super) async fn apply_defaults(
        &self,
        cx: &ConnectionTo<Agent>,
        session_id: &str,
        response: &Value,
    ) {
        if self.spec.defaults.is_empty() {
            return;
        }
        let mut state = response.clone();
        let limit = Duration::from_millis(self.spec.timeouts.session_new);
        for (key, value) in &self.spec.defaults {
            let (method, mut params) = match plan_default(&self.spec.name, key, value, &state) {
                DefaultStep::Send { method, params } => (method, params),
                DefaultStep::NotOffered(line) => {
                    self.notice(NoticeLevel::Info, line);
                    continue;
                }
            };
            params["sessionId"] = json!(session_id);
            let answer = match UntypedMessage::new(method, params.clone()) {
                Ok(msg) => tokio::time::timeout(limit, cx.send_request(msg).block_task())
                    .await
                    .map_err(|_| "no answer".to_owned())
                    .and_then(|a| a.map_err(|e| e.to_string())),
                Err(e) => Err(e.to_string()),
            };
            match answer {
                Ok(answer) => {
                    let event = after_default(&mut state, method, &params, &answer);
                    self.with_model(|_| vec![event]);
                }
                Err(e) => self.notice(
                    NoticeLevel::Info,
                    format!(
                        "Default `{key}` not set: `{}` refused it ({e})",
                        self.spec.name
                    ),
                ),
            }
        }
    }

    /// `session/resume` of the session closed while idle, with what it was
    /// opened with (cwd, MCP servers, system prompt); its answer.
    pub(super) async fn resume_idle(
        &self,
        cx: &ConnectionTo<Agent>,
        session_id: &str,
        caps: &Value,
        mcp_servers: &[McpServer],
        directories: &[std::path::PathBuf],
    ) -> Result<Value, String> {
        let mut p = ResumeSessionRequest::new(session_id.to_owned(), self.spec.cwd.clone());
        p.mcp_servers = mcp_servers.to_vec();
        p.additional_directories = directories.to_vec();
        p.system_prompt = system_prompt(&self.spec, caps);
        let limit = Duration::from_millis(self.spec.timeouts.session_new);
        // Sent untyped, its answer read leniently (as `opening` does).
        let params = serde_json::to_value(&p).map_err(|e| e.to_string())?;
        let msg = UntypedMessage::new("session/resume", params).map_err(|e| e.to_string())?;
        tokio::time::timeout(limit, cx.send_request(msg).block_task())
            .await
            .map_err(|_| "no answer".to_owned())?
            .map_err(|e| e.to_string())
    }

    /// Watches the bound session for idleness when `timeouts.idle_close`
    /// is set and the agent can close and resume sessions: once nothing
    /// happened for that long (no turn, no update, no request), the
    /// session is closed in the agent (`session/close`) and stays routed
    /// here (a late update is still shown); the next prompt resumes it.
    pub(super) fn watch_idle(self: &Arc<Self>, caps: &Value) {
        let ms = self.spec.timeouts.idle_close;
        if ms == 0 || !can_reap(caps) || self.idle_watch.swap(true, Ordering::SeqCst) {
            return;
        }
        self.touch();
        // Weak: a chat closed meanwhile is not kept alive by its watch.
        let weak = Arc::downgrade(self);
        spawn(async move {
            idle_loop(&weak, Duration::from_millis(ms)).await;
            if let Some(this) = weak.upgrade() {
                this.idle_watch.store(false, Ordering::SeqCst);
            }
        });
    }

    /// Closes the session in the agent if it is still idle; true when the
    /// watch is over (closed, or nothing left to watch), false when there
    /// was activity (the watch goes on).
    async fn reap_if_idle(self: &Arc<Self>, idle: Duration) -> bool {
        let mut session = self.session.lock().await;
        let Some(bound) = session.as_ref() else {
            return true;
        };
        if bound.conn.is_closed() {
            return true;
        }
        let busy = self.model.lock().state() == TurnState::Running
            || self.loading.lock().is_some()
            || self.queued.lock().is_some();
        if busy {
            drop(session);
            self.touch();
            return false;
        }
        if self.last_active.lock().elapsed() < idle {
            return false;
        }
        let (conn, sid) = (bound.conn.clone(), bound.session_id.clone());
        match close_session(&conn, &sid).await {
            Ok(()) => {
                log::info(format!(
                    "thread {}: idle session {sid} closed in the agent; the next prompt resumes it",
                    self.id
                ));
                *session = None;
                *self.reaped.lock() = Some(sid);
            }
            Err(e) => log::warn(format!(
                "thread {}: closing idle session {sid} failed: {e}",
                self.id
            )),
        }
        true
    }

    /// The session to close in the agent now that the chat is closed for
    /// good: the bound one, when the agent advertises `session/close` (an
    /// idle session closed already is not closed again).
    pub(super) fn to_close(&self) -> Option<(Arc<Connection>, String)> {
        let (conn, sid) = self.current.lock().clone()?;
        if self.reaped.lock().is_some() {
            return None;
        }
        let caps = conn
            .init_response()
            .and_then(|i| i.get("agentCapabilities").cloned())
            .unwrap_or(Value::Null);
        advertised(&caps, "/sessionCapabilities/close").then_some((conn, sid))
    }
}

/// Waits until the chat was idle for `idle`, then closes its session in
/// the agent (`reap_if_idle`); ends with the chat.
async fn idle_loop(weak: &Weak<ThreadHandle>, idle: Duration) {
    loop {
        let wait = match weak.upgrade() {
            Some(this) if !this.closed.load(Ordering::SeqCst) => {
                idle.saturating_sub(this.last_active.lock().elapsed())
            }
            _ => return,
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
            continue;
        }
        let Some(this) = weak.upgrade() else {
            return;
        };
        if this.reap_if_idle(idle).await {
            return;
        }
    }
}

/// `session/close` of `session_id`, waiting at most `CLOSE_WAIT`.
pub(super) async fn close_session(conn: &Arc<Connection>, session_id: &str) -> Result<(), String> {
    let cx = conn.ready().await?;
    let msg = UntypedMessage::new("session/close", json!({ "sessionId": session_id }))
        .map_err(|e| e.to_string())?;
    tokio::time::timeout(CLOSE_WAIT, cx.send_request(msg).block_task())
        .await
        .map_err(|_| "no answer".to_owned())?
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(prompt: Option<&str>) -> AgentSpec {
        let mut s: AgentSpec = serde_json::from_value(json!({
            "name": "a", "cmd": "a", "cwd": "/"
        }))
        .unwrap();
        s.system_prompt = prompt.map(str::to_owned);
        s
    }

    #[test]
    fn the_system_prompt_goes_only_to_agents_that_take_one() {
        let caps = json!({"sessionCapabilities": {"systemPrompt": {}}});
        let sent = system_prompt(&spec(Some("Be brief.")), &caps).unwrap();
        assert_eq!(
            serde_json::to_value(&sent).unwrap(),
            json!({"mode": "append", "content": [{"type": "text", "text": "Be brief."}]})
        );
        assert!(system_prompt(&spec(Some("Be brief.")), &json!({})).is_none());
        assert!(system_prompt(
            &spec(Some("x")),
            &json!({"sessionCapabilities": {"systemPrompt": null}})
        )
        .is_none());
        assert!(system_prompt(&spec(None), &caps).is_none());
        assert!(
            system_prompt(&spec(Some("  ")), &caps).is_none(),
            "never empty"
        );
    }

    #[test]
    fn defaults_prefer_config_options_then_legacy_modes_and_models() {
        let state = json!({
            "configOptions": [
                {"id": "model", "category": "model", "type": "select", "currentValue": "a",
                 "options": [{"value": "a", "name": "Alpha"}, {"group": "g", "name": "G",
                   "options": [{"value": "b", "name": "Beta"}]}]},
                {"id": "fast", "type": "boolean", "currentValue": false}
            ],
            "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]},
            "models": {"currentModelId": "x", "availableModels": [{"modelId": "x", "name": "X"}]}
        });
        assert_eq!(
            plan_default("ag", "model", &json!("Beta"), &state),
            DefaultStep::Send {
                method: "session/set_config_option",
                params: json!({"configId": "model", "value": "b"})
            }
        );
        assert_eq!(
            plan_default("ag", "fast", &json!(true), &state),
            DefaultStep::Send {
                method: "session/set_config_option",
                params: json!({"configId": "fast", "type": "boolean", "value": true})
            }
        );
        assert_eq!(
            plan_default("ag", "mode", &json!("Code"), &state),
            DefaultStep::Send {
                method: "session/set_mode",
                params: json!({"modeId": "code"})
            }
        );
        let DefaultStep::NotOffered(line) = plan_default("ag", "model", &json!("zeta"), &state)
        else {
            panic!("zeta is not offered")
        };
        assert!(
            line.contains("`zeta`") && line.contains("`a`, `b`"),
            "{line}"
        );
        let legacy = json!({"models": {"availableModels": [{"modelId": "x"}]}});
        assert_eq!(
            plan_default("ag", "model", &json!("x"), &legacy),
            DefaultStep::Send {
                method: "session/set_model",
                params: json!({"modelId": "x"})
            }
        );
        let DefaultStep::NotOffered(line) = plan_default("ag", "effort", &json!("high"), &state)
        else {
            panic!("no effort option")
        };
        assert!(line.contains("`model`, `fast`"), "{line}");
    }

    #[test]
    fn a_set_default_updates_what_the_next_one_reads() {
        let mut state = json!({"configOptions": [{"id": "m", "currentValue": "a"}]});
        let ev = after_default(
            &mut state,
            "session/set_config_option",
            &json!({"configId": "m", "value": "b"}),
            &json!({}),
        );
        assert_eq!(state["configOptions"][0]["currentValue"], "b");
        assert!(matches!(ev, ThreadEvent::ConfigOptions { .. }));
        let ev = after_default(
            &mut state,
            "session/set_model",
            &json!({"modelId": "x"}),
            &Value::Null,
        );
        assert!(matches!(ev, ThreadEvent::Models { models } if models["currentModelId"] == "x"));
    }

    #[test]
    fn idle_sessions_are_closed_only_when_they_can_be_resumed() {
        assert!(can_reap(
            &json!({"sessionCapabilities": {"close": {}, "resume": {}}})
        ));
        assert!(!can_reap(&json!({"sessionCapabilities": {"close": {}}})));
        assert!(!can_reap(&json!({"sessionCapabilities": {"resume": {}}})));
    }
}
