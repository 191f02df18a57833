//! A subagent's own controls: cancelling the work of one child session
//! (`session/cancel` with its id), only when the agent offers it for that
//! child. The parent's turn goes on.

use std::sync::Arc;

use agent_client_protocol::v1::schema::CancelNotification;

use super::handle::ThreadHandle;
use crate::log;
use crate::runtime::spawn;

impl ThreadHandle {
    /// Cancels subagent `sid`'s work. Err names why not (not a subagent of
    /// this chat, not cancellable, not running, no session).
    pub fn cancel_subagent(self: &Arc<Self>, sid: &str) -> Result<(), String> {
        let Some((name, state, can_cancel)) = self.model.lock().subagent_info(sid) else {
            return Err(format!("no subagent `{sid}` in this chat"));
        };
        if !can_cancel {
            return Err(format!(
                "the agent does not offer to cancel subagent `{name}`"
            ));
        }
        // Its capability permits the cancel; only finished work refuses it.
        if matches!(state, "idle" | "cancelled" | "refused" | "failed") {
            return Err(format!("subagent `{name}` is not running ({state})"));
        }
        let Some((conn, _)) = self.current.lock().clone() else {
            return Err("the chat has no live session".into());
        };
        let sid = sid.to_owned();
        spawn(async move {
            if let Ok(cx) = conn.ready().await {
                if let Err(e) = cx.send_notification(CancelNotification::new(sid)) {
                    log::warn(format!("session/cancel of a subagent failed: {e}"));
                }
            }
        });
        Ok(())
    }
}
