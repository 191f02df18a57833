//! The agent process: started in its own process group under a supervisor
//! (see `platform::supervise`; ended with Neovim if Neovim dies first),
//! its stderr kept for the log, the trace and the
//! exit report, and its exit turned into the reason every chat is told.

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::BufReader;

use super::connection::{ConnState, Connection, STDERR_TAIL_LINES};
use super::dispatch::run_protocol;
use super::framing::{self, LineRead};
use super::procs;
use super::trace;

/// Size asked for the agent's stdin and stdout pipes (Linux's default is
/// 64 KiB; an unprivileged process may ask up to 1 MiB).
#[cfg(target_os = "linux")]
const PIPE_BYTES: libc::c_int = 1 << 20;
use crate::config::AgentSpec;
use crate::log;
use crate::platform;

impl Connection {
    /// Spawns the agent in its own process group and starts the ACP
    /// handshake in the background. Must run inside the tokio runtime.
    pub fn spawn(spec: AgentSpec) -> Result<Arc<Self>, String> {
        let mut cmd = tokio::process::Command::new(&spec.cmd);
        cmd.args(&spec.args)
            .envs(&spec.env)
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        // Under a supervisor that ends everything the agent started when
        // the agent ends, when Neovim quits, or if Neovim dies without
        // running its exit hooks.
        platform::supervise(&mut cmd, &spec.keep_daemons);
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "cannot start agent `{}`: `{}` {} (set agents.{}.cmd)",
                spec.name,
                spec.cmd,
                match e.kind() {
                    std::io::ErrorKind::NotFound => "was not found in PATH".to_string(),
                    _ => format!("failed: {e}"),
                },
                spec.name
            )
        })?;
        let pid = child.id().unwrap_or(0);
        platform::watch_parent(pid);
        // A large answer (a 10 MB file's text) leaves in 1 MiB pieces
        // rather than 64 KiB ones, and a stream of thousands of chunks
        // arrives so: fewer wake-ups of the agent and of us.
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let stdin = child.stdin.as_ref().map(|p| p.as_raw_fd());
            let stdout = child.stdout.as_ref().map(|p| p.as_raw_fd());
            for fd in [stdin, stdout].into_iter().flatten() {
                unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES) };
            }
        }
        // Arguments can carry secrets (`--api-key sk-…`): their values are
        // hidden, as the log's own redaction does not see flag pairs.
        log::info(format!(
            "agent {} started: pid {pid} {} {:?}",
            spec.name,
            spec.cmd,
            crate::redact::redact_args(&spec.args)
        ));
        let conn = Arc::new(Connection::new(spec, pid));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");

        let stderr_task = tokio::spawn(read_stderr(conn.clone(), stderr));
        tokio::spawn(run_protocol(conn.clone(), stdin, stdout));
        tokio::spawn(watch_exit(conn.clone(), child, stderr_task));
        Ok(conn)
    }
}

/// The agent's stderr: every line goes to the trace and the tail shown when
/// it exits; the log gets them capped in length and rate.
async fn read_stderr(conn: Arc<Connection>, stderr: tokio::process::ChildStderr) {
    let mut reader = BufReader::with_capacity(1 << 14, stderr);
    let mut gate = log::StderrGate::default();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Bounded like stdout: a line without an end cannot grow memory.
        match framing::read_line_capped(&mut reader, &mut buf, 1 << 20).await {
            Ok(LineRead::Line(_)) | Ok(LineRead::TooLong { .. }) => {}
            Ok(LineRead::Eof) | Err(_) => break,
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches(['\n', '\r']);
        conn.trace.record(trace::Dir::Stderr, text.as_bytes());
        let name = &conn.spec.name;
        let admitted = gate.admit(std::time::Instant::now(), |n| {
            log::write(
                "AGENT",
                &format!(
                    "[{name}] {n} stderr line(s) not logged (over {} a second)",
                    log::STDERR_LINES_PER_SEC
                ),
            )
        });
        let line = log::cap_line(text, log::STDERR_LINE_MAX).into_owned();
        if admitted {
            log::write("AGENT", &format!("[{name}] {line}"));
        }
        let mut tail = conn.stderr_tail.lock();
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

async fn watch_exit(
    conn: Arc<Connection>,
    mut child: tokio::process::Child,
    stderr_task: tokio::task::JoinHandle<()>,
) {
    let status = child.wait().await;
    // From here the pid may be reused: the group is ours only through the
    // members still running now. They are orphans of a dead agent: stopped.
    let leftovers = procs::group_members(conn.pid as i32);
    let had_leftovers = !leftovers.is_empty();
    *conn.leftovers.lock() = leftovers;
    conn.reaped.store(true, Ordering::SeqCst);
    if had_leftovers {
        conn.signal_group(libc::SIGTERM);
        let c = conn.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1000)).await;
            c.force_kill();
        });
    }
    // Let the stderr reader catch the last lines the agent printed.
    let _ = tokio::time::timeout(Duration::from_millis(300), stderr_task).await;
    let how = match status {
        Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            _ => "exited".to_string(),
        },
        Err(e) => format!("could not be waited for: {e}"),
    };
    let tail = conn.stderr_tail();
    let mut reason = match conn.fault.lock().take() {
        Some(fault) => format!("{fault}. Agent `{}` {how}.", conn.spec.name),
        None if matches!(conn.state(), ConnState::Starting) => format!(
            "Agent `{name}` {how} before answering `initialize`: is `{cmd}` an ACP agent? (agents.{name}.cmd, agents.{name}.args)",
            name = conn.spec.name,
            cmd = conn.spec.cmd,
        ),
        None => format!("Agent `{}` {how}.", conn.spec.name),
    };
    if let Some(junk) = conn.book.lock().junk.take() {
        reason.push_str("\nIt printed: ");
        reason.push_str(&junk);
    }
    if !tail.is_empty() {
        reason.push_str("\nLast stderr lines:\n");
        reason.push_str(&tail);
    }
    log::info(&reason);
    conn.state.send_replace(ConnState::Closed(reason.clone()));
    conn.cx.lock().take();
    for sink in conn.routed_sinks() {
        sink.disconnected(&conn, &reason);
    }
}
