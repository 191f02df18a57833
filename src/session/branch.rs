//! Continuing a chat from an earlier point (edit and resend): the chat is
//! bound to a fork of its session at a message (`session/fork`, unstable,
//! sent only to agents that advertise `sessionCapabilities.fork`), or to a
//! new session of the same agent in the same folder. The view then sends
//! the edited message.

use std::sync::Arc;

use serde_json::{json, Value};

use super::handle::{Bound, ThreadHandle};
use super::opening::{mcp_servers_for, session_answer_events};
use crate::bridge::handoff::bridge;
use crate::bridge::queue::UiEvent;
use crate::log;
use crate::model::events::ThreadEvent;
use crate::protocol::connection::SessionSink;
use crate::runtime::spawn;

/// How the chat goes on.
pub enum Branch {
    /// `session/fork` of the current session, at `message_id` (the last
    /// message the fork keeps) when given.
    Fork { message_id: Option<String> },
    /// A new session.
    New,
}

impl ThreadHandle {
    /// Binds the chat to a fork of its session or to a new session, after a
    /// notice `note` in the transcript. Answers with a `reply` event for
    /// `reply`: `{ session_id }`, or the error (the chat then stays bound
    /// to its session).
    pub fn branch(self: &Arc<Self>, how: Branch, note: String, reply: u64) {
        let this = self.clone();
        spawn(async move {
            let result = match how {
                Branch::Fork { message_id } => this.fork(message_id, note).await,
                Branch::New => this.renew(note).await,
            };
            let (result, error) = match result {
                Ok(sid) => (Some(json!({ "session_id": sid })), None),
                Err(e) => (None, Some(e)),
            };
            bridge().push(UiEvent::Reply {
                request: reply,
                result,
                error,
            });
        });
    }

    async fn fork(
        self: &Arc<Self>,
        message_id: Option<String>,
        note: String,
    ) -> Result<String, String> {
        let (conn, old) = self.ensure_session().await?;
        let cx = conn.ready().await?;
        let init = conn.init_response().unwrap_or(Value::Null);
        let caps = init
            .get("agentCapabilities")
            .cloned()
            .unwrap_or(Value::Null);
        let (mcp_servers, _) = mcp_servers_for(&self.mcp_servers, &caps);
        let mut params = json!({
            "sessionId": old,
            "cwd": self.spec.cwd,
            "mcpServers": serde_json::to_value(&mcp_servers).map_err(|e| e.to_string())?,
        });
        if caps
            .pointer("/sessionCapabilities/additionalDirectories")
            .is_some_and(|v| !v.is_null())
            && !self.editor.policy.roots.is_empty()
        {
            params["additionalDirectories"] = json!(self.editor.policy.roots);
        }
        if let Some(id) = &message_id {
            params["messageId"] = json!(id);
        }
        let msg = agent_client_protocol::UntypedMessage::new("session/fork", params)
            .map_err(|e| e.to_string())?;
        let answer = cx
            .send_request(msg)
            .block_task()
            .await
            .map_err(|e| format!("session/fork failed: {e}"))?;
        let new = answer
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("session/fork returned no sessionId: {answer}"))?
            .to_owned();
        {
            let mut session = self.session.lock().await;
            if let Some(b) = session.take() {
                b.conn.unroute(&b.session_id);
            }
            *session = Some(Bound {
                conn: conn.clone(),
                session_id: new.clone(),
            });
            *self.current.lock() = Some((conn.clone(), new.clone()));
        }
        log::info(format!(
            "thread {} forked session {old} into {new} of {}",
            self.id, self.spec.name
        ));
        self.with_model(|m| {
            let mut ev = m.new_section(note);
            ev.push(ThreadEvent::Session {
                session_id: new.clone(),
            });
            ev.extend(session_answer_events(&answer));
            ev
        });
        conn.route(&new, self.clone() as Arc<dyn SessionSink>).await;
        Ok(new)
    }

    async fn renew(self: &Arc<Self>, note: String) -> Result<String, String> {
        {
            let mut session = self.session.lock().await;
            if let Some(b) = session.take() {
                b.conn.unroute(&b.session_id);
            }
            *self.current.lock() = None;
            // Not the session asked for when the chat opened, any more.
            self.resume.lock().take();
        }
        self.with_model(|m| m.new_section(note));
        self.ensure_session().await.map(|(_, sid)| sid)
    }
}
