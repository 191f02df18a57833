//! The tokio runtime: started on first use, on its own worker threads, and
//! shut down (with a deadline) when Neovim quits. If it cannot start, the
//! user is told through the bridge.
//!
//! May use: bridge, model, platform.

use std::time::Duration;

use parking_lot::Mutex;
use tokio::runtime::{Handle, Runtime};

static RUNTIME: Mutex<Option<Runtime>> = Mutex::new(None);

/// A handle to the runtime, starting it if needed.
pub fn handle() -> Result<Handle, String> {
    let mut slot = RUNTIME.lock();
    if let Some(rt) = slot.as_ref() {
        return Ok(rt.handle().clone());
    }
    crate::platform::bound_large_allocations();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("acp-core")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let handle = rt.handle().clone();
    *slot = Some(rt);
    Ok(handle)
}

pub fn is_running() -> bool {
    RUNTIME.lock().is_some()
}

/// Stops the runtime, giving in-flight tasks at most `deadline`.
pub fn shutdown(deadline: Duration) {
    let rt = RUNTIME.lock().take();
    if let Some(rt) = rt {
        rt.shutdown_timeout(deadline);
    }
}

/// Runs `fut` on the runtime; if it cannot start, the user is told.
pub fn spawn<F>(fut: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    match handle() {
        Ok(h) => {
            h.spawn(fut);
        }
        Err(e) => crate::bridge::handoff::bridge().push(crate::bridge::queue::UiEvent::Notify {
            level: crate::model::entries::NoticeLevel::Error,
            message: e,
        }),
    }
}
