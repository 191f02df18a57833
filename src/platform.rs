//! The few calls that differ between Linux and macOS, side by side. Every
//! other module is plain POSIX (process groups, `killpg`, FIFOs).
//!
//! - An agent must not outlive Neovim when Neovim dies without running its
//!   exit hooks. Linux has `prctl(PR_SET_PDEATHSIG)`; macOS has no twin, so
//!   there a small watcher process polls Neovim's pid and ends the agent's
//!   process group once Neovim is gone.
//! - Nothing the agent started may outlive it, even a process that starts
//!   its own session or double-forks. On Linux each agent runs under a
//!   supervisor that is the subreaper of its tree (`supervise`): orphans
//!   stay its descendants, and it ends them all when the agent ends or
//!   Neovim quits. macOS has no subreaper: there the agent's process group
//!   is signalled, and before that a `ps` walk finds the processes whose
//!   parent chain still leads to the agent (`end_descendants`); a process
//!   that setsid'ed and whose parent already exited is not found there.
//! - Memory tuning (mmap threshold, trimming freed memory) is glibc-only and
//!   simply skipped elsewhere.
//!
//! Only the Linux paths are built and tested on CI machines; the others are
//! kept obvious so that a reader can check them.
//!
//! May use: nothing.

use tokio::process::Command;

#[cfg(target_os = "linux")]
mod supervise;

/// Starts the agent of `cmd` under a supervisor (Linux): the spawned
/// process forks before `exec`, stays behind as the subreaper of the
/// agent's tree, and when the agent exits or is told to stop (SIGTERM to
/// its group, or Neovim's death) ends every descendant but those whose
/// executable is named in `keep`, then exits with the agent's status. The
/// spawned pid is the supervisor's, the leader of the agent's group.
pub fn supervise(cmd: &mut Command, keep: &[String]) {
    #[cfg(target_os = "linux")]
    {
        let keep: Vec<Vec<u8>> = keep.iter().map(|k| k.as_bytes().to_vec()).collect();
        // SAFETY: the hook uses only async-signal-safe calls (see supervise.rs).
        unsafe {
            cmd.pre_exec(move || supervise::split(&keep));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (cmd, keep);
}

/// Elsewhere than Linux (no subreaper): sends `signal` to every process
/// whose parent chain leads to `root`, from a `ps` walk, but those whose
/// command is named in `keep`. On Linux the supervisor does this.
pub fn end_descendants(root: u32, signal: i32, keep: &[String]) {
    #[cfg(not(target_os = "linux"))]
    {
        let Ok(out) = std::process::Command::new("ps")
            .args(["-axo", "pid=,ppid=,comm="])
            .stderr(std::process::Stdio::null())
            .output()
        else {
            return;
        };
        let rows: Vec<(u32, u32, String)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let pid = f.next()?.parse().ok()?;
                let ppid = f.next()?.parse().ok()?;
                let comm = f.collect::<Vec<_>>().join(" ");
                Some((pid, ppid, comm))
            })
            .collect();
        let mut tree = vec![root];
        let mut grew = true;
        while grew {
            grew = false;
            for (pid, ppid, comm) in &rows {
                let name = comm.rsplit('/').next().unwrap_or(comm);
                if tree.contains(ppid) && !tree.contains(pid) && !keep.iter().any(|k| k == name) {
                    tree.push(*pid);
                    grew = true;
                }
            }
        }
        for pid in &tree[1..] {
            unsafe { libc::kill(*pid as libc::pid_t, signal) };
        }
    }
    #[cfg(target_os = "linux")]
    let _ = (root, signal, keep);
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
