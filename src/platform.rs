//! The few calls that differ between Linux and macOS, side by side. Every
//! other module is plain POSIX (process groups, `killpg`, FIFOs).
//!
//! - An agent must not outlive Neovim when Neovim dies without running its
//!   exit hooks. Linux has `prctl(PR_SET_PDEATHSIG)`; macOS has no twin, so
//!   there a small watcher process polls Neovim's pid and ends the agent's
//!   process group once Neovim is gone.
//! - Memory tuning (mmap threshold, trimming freed memory) is glibc-only and
//!   simply skipped elsewhere.
//!
//! Only the Linux paths are built and tested on CI machines; the others are
//! kept obvious so that a reader can check them.
//!
//! May use: nothing.

use tokio::process::Command;

/// Arranges for the agent started by `cmd` to end with Neovim. Call before
/// spawning it (Linux).
pub fn end_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    unsafe {
        // Runs in the forked child before exec: a single async-signal-safe call.
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// Called once the agent runs as the leader of process group `pgid`
/// (elsewhere than Linux): starts a watcher that sends SIGTERM to the group
/// when Neovim's process is gone, and exits by itself when the group is.
pub fn watch_parent(pgid: u32) {
    #[cfg(not(target_os = "linux"))]
    {
        if pgid == 0 {
            return;
        }
        let parent = std::process::id();
        let script = format!(
            "while kill -0 {parent} 2>/dev/null && kill -0 -{pgid} 2>/dev/null; do sleep 1; done; \
             kill -0 {parent} 2>/dev/null || kill -TERM -{pgid} 2>/dev/null"
        );
        let _ = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
    #[cfg(target_os = "linux")]
    let _ = pgid;
}

/// Large buffers are allocated with mmap and returned to the system when
/// freed. Without a fixed threshold glibc raises it after the first large
/// free, and later multi-megabyte texts stay in the heap of whichever
/// thread freed them: repeated large writes then grow Neovim's memory.
pub fn bound_large_allocations() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Returns freed heap memory to the system (glibc keeps it per thread
/// arena otherwise).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::malloc_trim(0);
    }
}
