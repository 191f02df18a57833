//! Which processes are still ours. A pid alone is not an identity: once a
//! process is reaped its pid can be given to an unrelated process. The
//! agent's process group is signalled only while it is known to be ours:
//! its leader is our child and not reaped yet (a zombie keeps its pid), or
//! a member recorded when the leader was reaped still runs, with the same
//! start time (a live member keeps the group id from being reused).

/// A process by pid and start time (clock ticks since boot, from
/// `/proc/<pid>/stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcId {
    pub pid: i32,
    pub start: u64,
}

/// Fields of `/proc/<pid>/stat` after the command name: state is index 0,
/// pgrp index 2, starttime index 19.
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: cut at the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The process `pid` if it exists and is not a zombie.
pub fn running(pid: i32) -> Option<ProcId> {
    let f = stat_fields(pid)?;
    if matches!(f.first().map(String::as_str), Some("Z" | "X")) {
        return None;
    }
    Some(ProcId {
        pid,
        start: f.get(19)?.parse().ok()?,
    })
}

/// Whether `p` still runs (same pid, same start time).
pub fn still_running(p: &ProcId) -> bool {
    running(p.pid).is_some_and(|now| now.start == p.start)
}

/// Every running process of group `pgid`.
pub fn group_members(pgid: i32) -> Vec<ProcId> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let f = stat_fields(pid)?;
            if f.get(2)?.parse::<i32>().ok()? != pgid || matches!(f[0].as_str(), "Z" | "X") {
                return None;
            }
            Some(ProcId {
                pid,
                start: f.get(19)?.parse().ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_known_by_pid_and_start_time() {
        let me = running(std::process::id() as i32).expect("this process runs");
        assert!(still_running(&me));
        let other = ProcId {
            pid: me.pid,
            start: me.start + 1,
        };
        assert!(!still_running(&other), "same pid, another start: not ours");
        let pgid = unsafe { libc::getpgrp() };
        assert!(group_members(pgid).iter().any(|p| p.pid == me.pid));
    }

    #[test]
    fn a_reaped_child_is_not_running() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(running(pid).is_none());
    }
}
