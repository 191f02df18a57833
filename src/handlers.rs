//! The agent's requests to the editor: `fs/*` served from live buffers (or
//! disk), and `terminal/*` run as Neovim jobs. Every request is answered,
//! with a JSON-RPC error naming the path or id and the reason when it fails.
//! Handlers run as tokio tasks; the main thread is reached only through
//! `calls` (sliced buffer reads, one-step edits, job control).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use agent_client_protocol::v1::Responder;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::calls;
use crate::fs::{self, FsError, INTERNAL, INVALID_PARAMS};
use crate::roots::Roots;
use crate::session::ThreadHandle;
use crate::terminal::{ExitStatus, Terminals};
use crate::textdiff::{self, Lines};

/// What the user's configuration allows this chat.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default)]
pub struct Policy {
    /// Extra root directories besides the session's cwd.
    pub roots: Vec<PathBuf>,
    pub allow_read_outside: bool,
    pub allow_write_outside: bool,
    pub allow_terminal_outside: bool,
    /// Save a buffer after an agent write if it had no unsaved changes.
    pub save_unmodified: bool,
    /// Program that runs `command` when the agent gives no `args`.
    pub shell: String,
    /// Tool kinds whose permission requests are allowed without asking.
    pub auto_allow: Vec<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            roots: Vec::new(),
            allow_read_outside: false,
            allow_write_outside: false,
            allow_terminal_outside: false,
            save_unmodified: true,
            shell: "sh".into(),
            auto_allow: Vec::new(),
        }
    }
}

/// One agent write, for review and the quickfix list.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WriteRecord {
    pub path: String,
    /// Seconds since the epoch.
    pub time: f64,
    pub tool_call_id: Option<String>,
    /// "buffer" or "disk".
    pub target: &'static str,
    pub saved: bool,
    /// The text before the agent's first write in this session (None: the
    /// file did not exist).
    pub original: Option<String>,
}

#[derive(Default)]
pub struct EditorState {
    pub roots: Roots,
    pub policy: Policy,
    /// What the agent was last served (or wrote) per file: the base of the
    /// three-way merge when the user edits the buffer in between.
    snapshots: Mutex<HashMap<PathBuf, String>>,
    pub writes: Mutex<Vec<WriteRecord>>,
    pub terminals: Mutex<Terminals>,
}

impl EditorState {
    pub fn new(cwd: PathBuf, policy: Policy) -> Self {
        let mut dirs = vec![cwd];
        dirs.extend(policy.roots.iter().cloned());
        Self {
            roots: Roots::new(&dirs),
            policy,
            ..Default::default()
        }
    }
}

fn err(code: i32, message: impl Into<String>) -> FsError {
    FsError::new(code, message)
}

fn rpc_error(e: FsError) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(e.code, e.message)
}

fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, FsError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| err(INVALID_PARAMS, format!("missing string parameter `{key}`")))
}

fn opt_u32(params: &Value, key: &str) -> Result<Option<u32>, FsError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                err(
                    INVALID_PARAMS,
                    format!("`{key}` must be a non-negative integer"),
                )
            }),
    }
}

const METHODS: &[&str] = &[
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/wait_for_exit",
    "terminal/kill",
    "terminal/release",
];

/// Dispatches one fs/terminal request. When `method` is not served (unknown,
/// or turned off in config) the responder is handed back for a -32601.
pub fn try_handle(
    thread: &Arc<ThreadHandle>,
    method: &str,
    params: Value,
    responder: Responder<Value>,
) -> (bool, Option<Responder<Value>>) {
    let caps = &thread.spec.caps;
    let enabled = METHODS.contains(&method)
        && match method {
            "fs/read_text_file" => caps.fs_read,
            "fs/write_text_file" => caps.fs_write,
            _ => caps.terminal,
        };
    if !enabled {
        return (false, Some(responder));
    }
    let thread = thread.clone();
    let method = method.to_owned();
    crate::session::spawn(async move {
        let result = match method.as_str() {
            "fs/read_text_file" => read_text_file(&thread, &params).await,
            "fs/write_text_file" => write_text_file(&thread, &params).await,
            "terminal/create" => terminal_create(&thread, &params).await,
            "terminal/output" => terminal_output(&thread, &params),
            "terminal/wait_for_exit" => terminal_wait(&thread, &params).await,
            "terminal/kill" => terminal_kill(&thread, &params),
            "terminal/release" => terminal_release(&thread, &params),
            other => unreachable!("{other} is in METHODS"),
        };
        let _ = match result {
            Ok(v) => responder.respond(v),
            Err(e) => {
                crate::log::info(format!("{method} failed: {}", e.message));
                responder.respond_with_error(rpc_error(e))
            }
        };
    });
    (true, None)
}

/// A loaded buffer's text as the file would hold it.
struct BufferText {
    text: String,
    bufnr: i64,
    tick: i64,
    modified: bool,
}

/// Asks the main thread for the buffer of `path`, if one is loaded. The
/// text arrives in slices taken across several ticks.
async fn buffer_text(
    thread: &ThreadHandle,
    path: &str,
    resolved: &std::path::Path,
) -> Result<Option<BufferText>, FsError> {
    let reply = calls::call(
        thread.id,
        "buffer_read",
        json!({"path": path, "resolved": resolved}),
    )
    .await
    .map_err(|e| err(INTERNAL, format!("{path}: {e}")))?;
    let v = &reply.value;
    if !v.get("found").and_then(Value::as_bool).unwrap_or(false) {
        return Ok(None);
    }
    let dos = v.get("dos").and_then(Value::as_bool).unwrap_or(false);
    let eol = v.get("eol").and_then(Value::as_bool).unwrap_or(true);
    let mut text = reply.parts.join("\n");
    let empty = text.is_empty() && v.get("lines").and_then(Value::as_u64) == Some(1);
    if dos {
        text = text.replace('\n', "\r\n");
    }
    if eol && !empty {
        text.push_str(if dos { "\r\n" } else { "\n" });
    }
    Ok(Some(BufferText {
        text,
        bufnr: v.get("bufnr").and_then(Value::as_i64).unwrap_or(0),
        tick: v.get("tick").and_then(Value::as_i64).unwrap_or(0),
        modified: v.get("modified").and_then(Value::as_bool).unwrap_or(false),
    }))
}

async fn read_text_file(thread: &ThreadHandle, params: &Value) -> Result<Value, FsError> {
    let path = str_param(params, "path")?;
    let line = opt_u32(params, "line")?;
    let limit = opt_u32(params, "limit")?;
    let ed = &thread.editor;
    let resolved = ed
        .roots
        .check(path, ed.policy.allow_read_outside)
        .map_err(|m| err(INVALID_PARAMS, m))?;
    let t0 = std::time::Instant::now();
    let text = match buffer_text(thread, path, &resolved).await? {
        Some(b) => b.text,
        None => {
            let p = resolved.clone();
            tokio::task::spawn_blocking(move || fs::read_text(&p))
                .await
                .map_err(|e| err(INTERNAL, e.to_string()))??
        }
    };
    let t1 = t0.elapsed();
    let content = fs::slice_lines(&text, line, limit);
    ed.snapshots.lock().insert(resolved, text);
    crate::log::info(format!(
        "fs/read_text_file {path}: {} bytes, {:.1} ms to get the text, {:.1} ms in all",
        content.len(),
        t1.as_secs_f64() * 1000.0,
        t0.elapsed().as_secs_f64() * 1000.0
    ));
    Ok(json!({ "content": content }))
}

async fn write_text_file(thread: &ThreadHandle, params: &Value) -> Result<Value, FsError> {
    let path = str_param(params, "path")?;
    let content = str_param(params, "content")?.to_owned();
    let ed = &thread.editor;
    let resolved = ed
        .roots
        .check(path, ed.policy.allow_write_outside)
        .map_err(|m| err(INVALID_PARAMS, m))?;
    let base = ed.snapshots.lock().get(&resolved).cloned();
    let new = Lines::from_text(&content);
    // The buffer may change between reading it and applying the edit;
    // then the edit is recomputed against the newer text.
    for _attempt in 0..5 {
        let Some(buf) = buffer_text(thread, path, &resolved).await? else {
            let original = std::fs::read_to_string(&resolved).ok();
            let (p, c) = (resolved.clone(), content.clone());
            tokio::task::spawn_blocking(move || fs::write_atomic(&p, &c))
                .await
                .map_err(|e| err(INTERNAL, e.to_string()))??;
            record_write(thread, path, &resolved, "disk", true, original, &content);
            return Ok(json!({}));
        };
        let current = Lines::from_text(&buf.text);
        let target = match &base {
            Some(b) if *b != buf.text => {
                let base_lines = Lines::from_text(b);
                textdiff::merge3(&base_lines.lines, &new.lines, &current.lines).map_err(|(from, to)| {
                    err(
                        INVALID_PARAMS,
                        format!(
                            "{path}: the user changed lines {from}-{to} since you read the file; read it again and redo the edit"
                        ),
                    )
                })?
            }
            _ => new.lines.clone(),
        };
        let hunks = textdiff::hunks(&current.lines, &target);
        let save = ed.policy.save_unmodified && !buf.modified;
        let reply = calls::call(
            thread.id,
            "buffer_apply",
            json!({"bufnr": buf.bufnr, "tick": buf.tick, "hunks": hunks, "save": save, "eol": new.eol, "path": path}),
        )
        .await
        .map_err(|e| err(INTERNAL, format!("{path}: {e}")))?;
        if reply
            .value
            .get("stale")
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            continue;
        }
        if let Some(e) = reply.value.get("error").and_then(Value::as_str) {
            return Err(err(INTERNAL, format!("{path}: {e}")));
        }
        let saved = reply
            .value
            .get("saved")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        record_write(
            thread,
            path,
            &resolved,
            "buffer",
            saved,
            Some(buf.text),
            &content,
        );
        return Ok(json!({}));
    }
    Err(err(
        INTERNAL,
        format!("{path}: the buffer kept changing; try again"),
    ))
}

fn record_write(
    thread: &ThreadHandle,
    path: &str,
    resolved: &std::path::Path,
    target: &'static str,
    saved: bool,
    before: Option<String>,
    content: &str,
) {
    let ed = &thread.editor;
    ed.snapshots
        .lock()
        .insert(resolved.to_path_buf(), content.to_owned());
    let note = match (target, saved) {
        ("buffer", false) => {
            format!("wrote `{path}` into its buffer, left unsaved (it had unsaved changes)")
        }
        ("buffer", true) => format!("wrote `{path}` (buffer saved)"),
        _ => format!("wrote `{path}`"),
    };
    let tool_call_id = thread.note_write(path, note);
    let mut writes = ed.writes.lock();
    // The pre-session text is the one before the first write of this file.
    let original = match writes.iter().find(|w| w.path == path) {
        Some(first) => first.original.clone(),
        None => before,
    };
    let time = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    writes.push(WriteRecord {
        path: path.to_owned(),
        time,
        tool_call_id,
        target,
        saved,
        original,
    });
}

// terminal/* ---------------------------------------------------------------

fn term_id(params: &Value) -> Result<String, FsError> {
    Ok(str_param(params, "terminalId")?.to_owned())
}

async fn terminal_create(thread: &ThreadHandle, params: &Value) -> Result<Value, FsError> {
    let command = str_param(params, "command")?.to_owned();
    let args: Vec<String> = params
        .get("args")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut env = serde_json::Map::new();
    for var in params
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let (Some(n), Some(v)) = (
            var.get("name").and_then(Value::as_str),
            var.get("value").and_then(Value::as_str),
        ) {
            env.insert(n.to_owned(), Value::from(v));
        }
    }
    let ed = &thread.editor;
    let cwd = match params.get("cwd").and_then(Value::as_str) {
        Some(c) => c.to_owned(),
        None => thread.spec.cwd.to_string_lossy().into_owned(),
    };
    let cwd = ed
        .roots
        .check(&cwd, ed.policy.allow_terminal_outside)
        .map_err(|m| err(INVALID_PARAMS, m))?;
    if !cwd.is_dir() {
        return Err(err(
            INVALID_PARAMS,
            format!("{}: cwd is not a directory", cwd.display()),
        ));
    }
    let limit = params
        .get("outputByteLimit")
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    // Agents send whole shell lines as `command` when there are no args.
    let argv: Vec<String> = if args.is_empty() {
        vec![ed.policy.shell.clone(), "-c".into(), command.clone()]
    } else {
        std::iter::once(command.clone())
            .chain(args.iter().cloned())
            .collect()
    };
    let shown = if args.is_empty() {
        command.clone()
    } else {
        argv.join(" ")
    };
    let id = ed.terminals.lock().create(shown.clone(), limit);
    let reply = calls::call(
        thread.id,
        "terminal_start",
        json!({"id": id, "argv": argv, "env": env, "cwd": cwd, "command": shown}),
    )
    .await;
    match reply.map(|r| r.value) {
        Ok(v) if v.get("pid").is_some() => {
            if let Ok(t) = ed.terminals.lock().get_mut(&id) {
                t.pid = v.get("pid").and_then(Value::as_u64).map(|p| p as u32);
            }
            // Known to the chat before the agent can name it in a card.
            thread.terminal_display(&id, "", None);
            Ok(json!({ "terminalId": id }))
        }
        Ok(v) => {
            let _ = ed
                .terminals
                .lock()
                .release(&id, ExitStatus::from_job_code(127));
            let why = v
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("unknown error")
                .to_owned();
            Err(err(INTERNAL, format!("cannot run `{shown}`: {why}")))
        }
        Err(e) => {
            let _ = ed
                .terminals
                .lock()
                .release(&id, ExitStatus::from_job_code(127));
            Err(err(INTERNAL, format!("cannot run `{shown}`: {e}")))
        }
    }
}

fn terminal_output(thread: &ThreadHandle, params: &Value) -> Result<Value, FsError> {
    let id = term_id(params)?;
    let terms = thread.editor.terminals.lock();
    let t = terms.get(&id).map_err(|m| err(INVALID_PARAMS, m))?;
    Ok(json!({
        "output": t.output.text(),
        "truncated": t.output.truncated,
        "exitStatus": t.exit,
    }))
}

async fn terminal_wait(thread: &ThreadHandle, params: &Value) -> Result<Value, FsError> {
    let id = term_id(params)?;
    let rx = thread
        .editor
        .terminals
        .lock()
        .wait(&id)
        .map_err(|m| err(INVALID_PARAMS, m))?;
    let status = rx
        .await
        .map_err(|_| err(INTERNAL, format!("terminal `{id}` went away")))?;
    Ok(serde_json::to_value(status).unwrap_or(Value::Null))
}

fn terminal_kill(thread: &ThreadHandle, params: &Value) -> Result<Value, FsError> {
    let id = term_id(params)?;
    let terms = thread.editor.terminals.lock();
    let t = terms.get(&id).map_err(|m| err(INVALID_PARAMS, m))?;
    if t.exit.is_none() {
        if let Some(pid) = t.pid {
            calls::notify(thread.id, "terminal_kill", json!({"id": id, "pid": pid}));
        }
    }
    Ok(json!({}))
}

fn terminal_release(thread: &ThreadHandle, params: &Value) -> Result<Value, FsError> {
    let id = term_id(params)?;
    let killed = ExitStatus {
        exit_code: None,
        signal: Some("SIGTERM".into()),
    };
    let t = thread
        .editor
        .terminals
        .lock()
        .release(&id, killed)
        .map_err(|m| err(INVALID_PARAMS, m))?;
    if t.exit.is_none() {
        if let Some(pid) = t.pid {
            calls::notify(thread.id, "terminal_kill", json!({"id": id, "pid": pid}));
        }
    }
    Ok(json!({}))
}

/// Job output from the main thread.
pub fn on_terminal_output(thread: &ThreadHandle, id: &str, data: &[u8]) {
    thread.editor.terminals.lock().output(id, data);
    thread.terminal_display(id, &String::from_utf8_lossy(data), None);
}

pub fn on_terminal_exit(thread: &ThreadHandle, id: &str, code: i64) {
    let status = ExitStatus::from_job_code(code);
    thread.editor.terminals.lock().exited(id, status.clone());
    thread.terminal_display(id, "", Some(&status.describe()));
}
