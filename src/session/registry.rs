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
    /// a removed folder, until Neovim exits.
    pub fn close_thread(&self, id: u64) {
        crate::protocol::elicitation::cancel_thread(id);
        let removed = self.threads.lock().remove(&id);
        if let Some(t) = removed {
            t.close();
            let shared = self
                .threads
                .lock()
                .values()
                .any(|o| o.spec.name == t.spec.name && o.spec.cwd == t.spec.cwd);
            if !shared {
                self.agents.end(&t.spec, Duration::from_secs(2));
            }
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
