//! The supervisor of an agent's process tree (Linux). The process the core
//! spawns forks once more before `exec`: the child becomes the agent, the
//! parent stays behind as its supervisor. The supervisor is a *child
//! subreaper* (`PR_SET_CHILD_SUBREAPER`), so every process the agent starts
//! stays its descendant even when it double-forks or starts its own session
//! (`setsid`): an orphan is re-parented to the supervisor, not to init.
//!
//! When the agent exits, or when the supervisor is asked to stop (SIGTERM,
//! SIGINT, SIGHUP, SIGQUIT; Neovim's death also sends SIGTERM through
//! `PR_SET_PDEATHSIG`), it walks `/proc` for its descendants, sends them
//! SIGTERM, waits at most `GRACE_MS`, sends SIGKILL to what is left, and
//! exits with the agent's status. Descendants whose executable name is
//! listed as kept (`agents.<name>.keep_daemons`) are left running, with
//! their own descendants.
//!
//! Everything here runs in a child forked from a multi-threaded process:
//! only async-signal-safe calls, no allocation, no lock. Buffers are
//! statics (the child's own copy).

use std::io;

/// How long descendants get between SIGTERM and SIGKILL, and how long
/// SIGKILLed ones are waited for. Together below the core's own grace at
/// Neovim's exit (400 ms): the core SIGKILLs the group, the supervisor
/// with it, only after that, so the supervisor finishes first.
pub const GRACE_MS: i64 = 200;
const KILL_WAIT_MS: i64 = 100;

/// Most processes read in one walk of `/proc` and most descendants known.
const MAX_PROCS: usize = 16384;
const MAX_TREE: usize = 1024;

static mut ALL: [(i32, i32); MAX_PROCS] = [(0, 0); MAX_PROCS];
static mut TREE: [i32; MAX_TREE] = [0; MAX_TREE];
static mut BUF: [u8; 8192] = [0; 8192];
static mut LINE: [u8; 4096] = [0; 4096];

/// Runs in the pre-exec hook of the spawned process. Returns in the agent
/// (which then execs); never returns in the supervisor.
///
/// # Safety
/// Only in a freshly forked child, before `exec`.
pub unsafe fn split(keep: &[Vec<u8>]) -> io::Result<()> {
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
    let me = libc::getpid();
    let mut all: libc::sigset_t = std::mem::zeroed();
    let mut old: libc::sigset_t = std::mem::zeroed();
    libc::sigfillset(&mut all);
    libc::sigprocmask(libc::SIG_SETMASK, &all, &mut old);
    let agent = libc::fork();
    if agent < 0 {
        let e = io::Error::last_os_error();
        libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        return Err(e);
    }
    if agent == 0 {
        // The agent: ends with its supervisor.
        libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        if libc::getppid() != me {
            libc::_exit(1);
        }
        return Ok(());
    }
    // The supervisor holds no pipe of the core's (the agent has them) and
    // no other descriptor of Neovim's, including the pipe through which
    // the core learns whether the agent's exec failed.
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
    for fd in 0..3 {
        libc::dup2(null, fd);
    }
    if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
        for fd in 3..4096 {
            libc::close(fd);
        }
    }
    supervise(me, agent, keep)
}

fn now_ms() -> i64 {
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// Waits up to `ms` for a stop signal or a child's exit; the signal or 0.
unsafe fn wait_signal(ms: i64) -> i32 {
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    for s in [
        libc::SIGCHLD,
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGQUIT,
    ] {
        libc::sigaddset(&mut set, s);
    }
    let ts = libc::timespec {
        tv_sec: ms / 1000,
        tv_nsec: (ms % 1000) * 1_000_000,
    };
    libc::sigtimedwait(&set, std::ptr::null_mut(), &ts).max(0)
}

/// Reaps every exited child; the agent's status once it is reaped.
unsafe fn reap(agent: i32, status: &mut Option<i32>) {
    loop {
        let mut st = 0;
        let pid = libc::waitpid(-1, &mut st, libc::WNOHANG);
        if pid <= 0 {
            return;
        }
        if pid == agent {
            *status = Some(st);
        }
    }
}

unsafe fn supervise(me: i32, agent: i32, keep: &[Vec<u8>]) -> ! {
    let mut status = None;
    loop {
        let sig = wait_signal(1000);
        reap(agent, &mut status);
        if status.is_some() {
            break;
        }
        if matches!(
            sig,
            libc::SIGTERM | libc::SIGINT | libc::SIGHUP | libc::SIGQUIT
        ) || libc::getppid() == 1
        {
            libc::kill(agent, libc::SIGTERM);
            break;
        }
    }
    end_tree(me, agent, keep, &mut status);
    match status {
        Some(st) if libc::WIFEXITED(st) => libc::_exit(libc::WEXITSTATUS(st)),
        Some(st) if libc::WIFSIGNALED(st) => {
            // The same end as the agent's, for the core's exit report.
            let sig = libc::WTERMSIG(st);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(me, sig);
            libc::_exit(128 + sig)
        }
        _ => libc::_exit(1),
    }
}

/// SIGTERM to every descendant not kept, SIGKILL after the grace period to
/// what is left; reaps the agent on the way.
unsafe fn end_tree(me: i32, agent: i32, keep: &[Vec<u8>], status: &mut Option<i32>) {
    let deadline = now_ms() + GRACE_MS;
    loop {
        reap(agent, status);
        let n = descendants(me, keep);
        if n == 0 {
            return;
        }
        let kill = now_ms() >= deadline;
        for i in 0..n {
            let pid = (*std::ptr::addr_of!(TREE))[i];
            libc::kill(pid, if kill { libc::SIGKILL } else { libc::SIGTERM });
        }
        if kill && now_ms() >= deadline + KILL_WAIT_MS {
            // Unkillable (uninterruptible sleep): not waited for longer.
            return;
        }
        wait_signal(10);
    }
}

/// Reads a file into `buf`; the length read (0 on failure).
unsafe fn read_into(path: &[u8], buf: &mut [u8]) -> usize {
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return 0;
    }
    let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
    libc::close(fd);
    n.max(0) as usize
}

/// `/proc/<pid>/<leaf>` as a NUL-ended path in `out`.
fn proc_path(pid: i32, leaf: &[u8], out: &mut [u8; 64]) -> usize {
    let mut digits = [0u8; 12];
    let mut n = 0;
    let mut v = pid as u32;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut len = 0;
    for &b in b"/proc/"
        .iter()
        .chain(digits[..n].iter().rev())
        .chain(b"/".iter())
        .chain(leaf)
    {
        out[len] = b;
        len += 1;
    }
    out[len] = 0;
    len
}

/// The parent of `pid` from `/proc/<pid>/stat`; None for a process gone.
/// A zombie counts: one whose main thread exited while others run (Bun
/// exiting, shown `Zl`) still has its children, and they are reached only
/// through it.
unsafe fn parent_of(pid: i32) -> Option<i32> {
    let mut path = [0u8; 64];
    proc_path(pid, b"stat", &mut path);
    let line = &mut *std::ptr::addr_of_mut!(LINE);
    let n = read_into(&path, line);
    let text = &line[..n];
    let close = text.iter().rposition(|&b| b == b')')?;
    // ") S 1234 ..." : state, then the parent.
    let rest = &text[close + 1..];
    let mut fields = rest.split(|&b| b == b' ').filter(|f| !f.is_empty());
    if fields.next()? == b"X" {
        return None;
    }
    let mut ppid = 0i32;
    for &b in fields.next()? {
        ppid = ppid * 10 + (b - b'0') as i32;
    }
    Some(ppid)
}

/// The last path part of `s` (up to a NUL or the end).
fn base(s: &[u8]) -> &[u8] {
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    let s = &s[..end];
    match s.iter().rposition(|&b| b == b'/') {
        Some(i) => &s[i + 1..],
        None => s,
    }
}

/// Whether `pid` runs a kept executable: by the name of its executable
/// file, of its argv[0], or its command name (a script's name).
unsafe fn kept(pid: i32, keep: &[Vec<u8>]) -> bool {
    if keep.is_empty() {
        return false;
    }
    let line = &mut *std::ptr::addr_of_mut!(LINE);
    let mut path = [0u8; 64];
    proc_path(pid, b"exe", &mut path);
    let n = libc::readlink(path.as_ptr().cast(), line.as_mut_ptr().cast(), line.len());
    if n > 0
        && keep
            .iter()
            .any(|k| k.as_slice() == base(&line[..n as usize]))
    {
        return true;
    }
    proc_path(pid, b"cmdline", &mut path);
    let n = read_into(&path, line);
    if n > 0 && keep.iter().any(|k| k.as_slice() == base(&line[..n])) {
        return true;
    }
    proc_path(pid, b"comm", &mut path);
    let n = read_into(&path, line);
    let comm = line[..n].strip_suffix(b"\n").unwrap_or(&line[..n]);
    // The command name is cut at 15 bytes.
    n > 0
        && keep
            .iter()
            .any(|k| !k.is_empty() && &k[..k.len().min(15)] == comm)
}

/// Fills `TREE` with the descendants of `me`, zombies not reaped yet too
/// (kept ones and theirs left out); their count.
unsafe fn descendants(me: i32, keep: &[Vec<u8>]) -> usize {
    let all = &mut *std::ptr::addr_of_mut!(ALL);
    let tree = &mut *std::ptr::addr_of_mut!(TREE);
    let buf = &mut *std::ptr::addr_of_mut!(BUF);
    let mut count = 0;
    let dir = libc::open(
        c"/proc".as_ptr(),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
    );
    if dir < 0 {
        return 0;
    }
    loop {
        let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
        if n <= 0 {
            break;
        }
        let mut off = 0usize;
        while off < n as usize {
            // struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name.
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            let name = &buf[off + 19..off + reclen];
            off += reclen;
            let mut pid = 0i32;
            let mut numeric = name[0] != 0;
            for &b in name.iter().take_while(|&&b| b != 0) {
                if !b.is_ascii_digit() {
                    numeric = false;
                    break;
                }
                pid = pid * 10 + (b - b'0') as i32;
            }
            if !numeric || pid == me || count == MAX_PROCS {
                continue;
            }
            if let Some(ppid) = parent_of(pid) {
                all[count] = (pid, ppid);
                count += 1;
            }
        }
    }
    libc::close(dir);
    // Grows the set from `me` down, until a pass adds nothing.
    let mut size = 0;
    loop {
        let before = size;
        for &(pid, ppid) in all[..count].iter() {
            let known = |p: i32| p == me || tree[..size].contains(&p);
            if size < MAX_TREE && known(ppid) && !known(pid) && !kept(pid, keep) {
                tree[size] = pid;
                size += 1;
            }
        }
        if size == before {
            return size;
        }
    }
}
