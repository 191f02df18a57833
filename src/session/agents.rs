//! The agent processes: one per (agent name, project directory), shared by
//! every chat that uses that agent there, started on demand, ended when the
//! last chat using one is closed, and all ended at Neovim's exit.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::config::AgentSpec;
use crate::protocol::connection::Connection;
use crate::protocol::trace::Trace;

#[derive(Default)]
pub struct Agents {
    /// One agent process per (agent name, project directory).
    agents: Mutex<HashMap<(String, PathBuf), Arc<Connection>>>,
    /// Every process ever started, for the exit cleanup (a replaced
    /// connection's process may still run).
    spawned: Mutex<Vec<Arc<Connection>>>,
    /// The newest connection per (agent name, project directory), dead or
    /// alive: its trace outlives it.
    last: Mutex<HashMap<(String, PathBuf), Arc<Connection>>>,
}

impl Agents {
    /// The live connection for this agent, spawning one if needed. One
    /// process serves every chat that uses the same agent config.
    pub fn connection(&self, spec: &AgentSpec) -> Result<Arc<Connection>, String> {
        let mut agents = self.agents.lock();
        let key = (spec.name.clone(), spec.cwd.clone());
        if let Some(conn) = agents.get(&key) {
            if !conn.is_closed() && conn.spec == *spec {
                return Ok(conn.clone());
            }
        }
        let conn = Connection::spawn(spec.clone())?;
        agents.insert(key.clone(), conn.clone());
        self.last.lock().insert(key, conn.clone());
        let mut spawned = self.spawned.lock();
        spawned.retain(|c| !c.is_closed() || !c.group_gone());
        spawned.push(conn.clone());
        Ok(conn)
    }

    /// The running connection for an agent name, if any.
    pub fn live_connection(&self, spec: &AgentSpec) -> Option<Arc<Connection>> {
        self.agents
            .lock()
            .get(&(spec.name.clone(), spec.cwd.clone()))
            .filter(|c| !c.is_closed())
            .cloned()
    }

    /// Drops the agent of `spec` from the map (its process is ended by the
    /// caller); the next chat starts a new one.
    pub fn forget(&self, spec: &AgentSpec) {
        self.agents
            .lock()
            .remove(&(spec.name.clone(), spec.cwd.clone()));
    }

    /// Ends the agent process of `spec` now that no chat uses it: SIGTERM
    /// to its group at once, SIGKILL to what is left after `grace`, waited
    /// for on a thread of its own (the caller, Neovim's main thread, never
    /// waits). The next chat with that agent starts a new one.
    pub fn end(&self, spec: &AgentSpec, grace: Duration) {
        if let Some(conn) = self.take(spec) {
            Self::finish(conn, grace);
        }
    }

    /// Takes the agent process of `spec` out of the map (the next chat
    /// starts a new one); `finish` ends it.
    pub fn take(&self, spec: &AgentSpec) -> Option<Arc<Connection>> {
        let key = (spec.name.clone(), spec.cwd.clone());
        self.agents.lock().remove(&key)
    }

    /// Ends a process taken out with `take` (see `end`).
    pub fn finish(conn: Arc<Connection>, grace: Duration) {
        conn.terminate();
        let _ = std::thread::Builder::new()
            .name("acp-agent-end".into())
            .spawn(move || {
                let deadline = std::time::Instant::now() + grace;
                while std::time::Instant::now() < deadline && !conn.group_gone() {
                    std::thread::sleep(Duration::from_millis(20));
                }
                if !conn.group_gone() {
                    conn.force_kill();
                }
            });
    }

    /// Ends every agent's process group: SIGTERM to all, then SIGKILL to
    /// whatever is left after `grace`. Blocks for at most `grace`.
    pub fn kill_all(&self, grace: Duration) {
        self.agents.lock().clear();
        let conns: Vec<_> = self.spawned.lock().drain(..).collect();
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
    }

    /// The protocol trace of `spec`'s newest process, even if that one
    /// exited.
    pub fn last_trace(&self, spec: &AgentSpec) -> Result<Arc<Trace>, String> {
        self.last
            .lock()
            .get(&(spec.name.clone(), spec.cwd.clone()))
            .map(|c| c.trace.clone())
            .ok_or_else(|| format!("agent `{}` has not been started yet", spec.name))
    }

    /// The pids of the agent processes still running.
    pub fn pids(&self) -> Vec<u32> {
        self.spawned
            .lock()
            .iter()
            .filter(|c| !c.is_closed())
            .map(|c| c.pid)
            .collect()
    }
}
