//! The registry of open chats: what `lua_api` reaches a chat by (its id),
//! and the one set of agent processes they share.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol::v1::schema::McpServer;
use parking_lot::Mutex;

use super::agents::Agents;
use super::handle::ThreadHandle;
use crate::config::{AgentSpec, Policy};
use crate::protocol::trace::Trace;

#[derive(Default)]
pub struct Registry {
    threads: Mutex<HashMap<u64, Arc<ThreadHandle>>>,
    agents: Agents,
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
    pub fn open_thread(
        &'static self,
        spec: AgentSpec,
        mcp_servers: Vec<McpServer>,
        policy: Policy,
        resume: Option<String>,
        kept: Option<String>,
    ) -> u64 {
        let id = self.next_thread.fetch_add(1, Ordering::Relaxed) + 1;
        let handle = ThreadHandle::new(id, spec, mcp_servers, policy, (resume, kept), &self.agents);
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

    /// Closes a chat for good. When no other chat uses its agent process
    /// (the same agent in the same folder: a chat in a git worktree has one
    /// of its own), that process ends too, instead of running on, maybe in
    /// a removed folder, until Neovim exits. Its session is closed in the
    /// agent first (`session/close`, when advertised), waited for a bounded
    /// time off the main thread.
    pub fn close_thread(&self, id: u64) {
        crate::protocol::elicitation::cancel_thread(id);
        let removed = self.threads.lock().remove(&id);
        if let Some(t) = removed {
            let to_close = t.close();
            let shared = self
                .threads
                .lock()
                .values()
                .any(|o| o.spec.name == t.spec.name && o.spec.cwd == t.spec.cwd);
            // Out of the map now: a chat opened meanwhile starts its own.
            let end = if shared {
                None
            } else {
                self.agents.take(&t.spec)
            };
            if to_close.is_none() {
                if let Some(conn) = end {
                    Agents::finish(conn, Duration::from_secs(2));
                }
                return;
            }
            crate::runtime::spawn(async move {
                if let Some((conn, sid)) = to_close {
                    if let Err(e) = super::lifecycle::close_session(&conn, &sid).await {
                        crate::log::warn(format!("session/close of {sid} failed: {e}"));
                    }
                }
                if let Some(conn) = end {
                    Agents::finish(conn, Duration::from_secs(2));
                }
            });
        }
    }

    /// Ends every agent's process group: SIGTERM to all, then SIGKILL to
    /// whatever is left after `grace`. Blocks for at most `grace`.
    pub fn kill_all(&self, grace: Duration) {
        self.agents.kill_all(grace);
        let mut threads = self.threads.lock();
        for t in threads.values() {
            t.mark_closed();
            // At exit, in place: the runtime stops next. Bounded by the caps.
            t.write_kept();
        }
        threads.clear();
    }

    /// The protocol trace of the agent a chat uses (its newest process,
    /// even if that one exited).
    pub fn trace_of(&self, thread: u64) -> Result<Arc<Trace>, String> {
        let t = self.thread(thread)?;
        self.agents.last_trace(&t.spec)
    }

    pub fn agent_pids(&self) -> Vec<u32> {
        self.agents.pids()
    }
}
