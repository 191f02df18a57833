//! The agent's requests to the editor: `fs/*` served from live buffers (or
//! disk), and `terminal/*` run as Neovim jobs. Every request is answered,
//! with a JSON-RPC error naming the path or id and the reason when it fails.
//! Handlers run as tokio tasks; the main thread is reached only through
//! `calls` (sliced buffer reads, one-step edits, job control).

use std::sync::Arc;
use std::time::SystemTime;

use agent_client_protocol::v1::Responder;
use serde_json::{json, Value};

use std::collections::BTreeMap;

use agent_client_protocol::v1::schema as v1s;

use crate::bridge::calls;
use crate::bridge::main_call::{BufferApplyReply, BufferReadReply, MainCall, TerminalStartReply};
use crate::config::Caps;
use crate::editor::fs::{self, FsError, INTERNAL, INVALID_PARAMS};
use crate::editor::state::{EditorState, Original, WriteTarget};
use crate::editor::write_merge::{self, Against, BufferWrite, DiskWrite};

use crate::editor::terminal::ExitStatus;
use crate::model::entries::TermExit;
use crate::model::filetext::{self, TextFormat};
use crate::model::shellwords::{self, Command};
use crate::model::textdiff::{self, Lines};
use crate::protocol::inbound::AgentRequest;

/// What the handlers need of a chat (implemented by the session's thread):
/// its editor state and a few model updates. Keeps this module below the
/// session layer.
pub trait EditorHost: Send + Sync {
    fn thread_id(&self) -> u64;
    fn editor(&self) -> &EditorState;
    fn caps(&self) -> Caps;
    fn cwd(&self) -> &std::path::Path;
    /// Notes an agent write on its tool card; returns the tool call id.
    fn note_write(&self, path: &str, note: String) -> Option<String>;
    /// Terminal output (or exit) for the cards and terminal buffers.
    fn terminal_display(&self, id: &str, data: &str, exit: Option<TermExit>);
    /// Asks the user before running a terminal (see `permission`), unless
    /// a grant covers `run`; `command` is how it is shown. True: run it;
    /// an error: the question could not be asked (too many wait).
    fn confirm_terminal<'a>(
        &'a self,
        run: crate::editor::policy::Run<'a>,
        command: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool, String>> + Send + 'a>>;
}

fn err(code: i32, message: impl Into<String>) -> FsError {
    FsError::new(code, message)
}

fn rpc_error(e: FsError) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(e.code, e.message)
}

/// Serves one fs/terminal request. When it is not served (turned off in
/// config, or not an fs/terminal method) the responder is handed back for a
/// -32601.
pub fn try_handle(
    thread: &Arc<dyn EditorHost>,
    request: AgentRequest,
    responder: Responder<Value>,
) -> Option<Responder<Value>> {
    let caps = &thread.caps();
    let enabled = match &request {
        AgentRequest::ReadTextFile(_) => caps.fs_read,
        AgentRequest::WriteTextFile(_) => caps.fs_write,
        AgentRequest::Permission { .. } | AgentRequest::Elicitation { .. } => false,
        _ => caps.terminal,
    };
    if !enabled {
        return Some(responder);
    }
    let host = thread.clone();
    crate::runtime::spawn(async move {
        let thread: &dyn EditorHost = &*host;
        let method = request.method();
        let result = match request {
            AgentRequest::ReadTextFile(r) => read_text_file(thread, &r).await,
            AgentRequest::WriteTextFile(r) => write_text_file(thread, r).await,
            AgentRequest::CreateTerminal(r) => terminal_create(thread, &r).await,
            AgentRequest::TerminalOutput(r) => terminal_output(thread, &r.terminal_id.0),
            AgentRequest::WaitForTerminalExit(r) => terminal_wait(thread, &r.terminal_id.0).await,
            AgentRequest::KillTerminal(r) => terminal_kill(thread, &r.terminal_id.0),
            AgentRequest::ReleaseTerminal(r) => terminal_release(thread, &r.terminal_id.0),
            AgentRequest::Permission { .. } | AgentRequest::Elicitation { .. } => {
                unreachable!("not enabled above")
            }
        };
        let _ = match result {
            Ok(v) => responder.respond(v),
            Err(e) => {
                crate::log::info(format!("{method} failed: {}", e.message));
                responder.respond_with_error(rpc_error(e))
            }
        };
    });
    None
}

/// A loaded buffer's text as the file would hold it.
struct BufferText {
    text: String,
    bufnr: i64,
    tick: i64,
    modified: bool,
    /// How its lines are its text (without a BOM: served texts have none).
    format: TextFormat,
}

/// Sliced reads of a buffer that keeps changing are tried this often; then
/// the text is taken in one tick, which cannot be stale.
const SLICED_READ_TRIES: usize = 4;

/// Asks the main thread for the buffer of `path`, if one is loaded. The
/// text arrives in slices taken across several ticks; when the buffer
/// changes between slices the read is repeated (never answered as "no
/// buffer": that would send the caller to the disk under unsaved edits).
/// `sync`: the buffer first takes a change of its file on disk (see
/// lua/acp/editor/sync.lua); without it, the text is the buffer's as it is.
async fn buffer_text(
    thread: &dyn EditorHost,
    path: &str,
    resolved: &std::path::Path,
    sync: bool,
) -> Result<Option<BufferText>, FsError> {
    let mut tries = 0;
    let reply = loop {
        tries += 1;
        let whole = tries > SLICED_READ_TRIES;
        let reply = calls::call::<BufferReadReply>(
            thread.thread_id(),
            MainCall::BufferRead {
                path: path.to_owned(),
                resolved: resolved.to_path_buf(),
                whole,
                sync,
            },
        )
        .await
        .map_err(|e| err(INTERNAL, format!("{path}: {e}")))?;
        if !reply.value.stale {
            break reply;
        }
        if whole {
            return Err(err(
                INTERNAL,
                format!("{path}: the buffer kept changing while it was read; try again"),
            ));
        }
        crate::log::info(format!(
            "{path}: the buffer changed while it was read; reading it again"
        ));
    };
    let v = &reply.value;
    if !v.found {
        return Ok(None);
    }
    // As the file would hold it, but for a byte order mark: 'bomb' keeps
    // it out of the buffer's lines, and the agent is served those (a BOM
    // that is content, in a buffer without 'bomb', is in the lines).
    let format = TextFormat {
        bomb: false,
        ..v.format
    };
    let text = filetext::encode_joined(reply.text, &format);
    Ok(Some(BufferText {
        text,
        bufnr: v.bufnr,
        tick: v.tick,
        modified: v.modified,
        format,
    }))
}

async fn read_text_file(
    thread: &dyn EditorHost,
    req: &v1s::ReadTextFileRequest,
) -> Result<Value, FsError> {
    let path = &*req.path.to_string_lossy();
    let (line, limit) = (req.line, req.limit);
    let ed = &thread.editor();
    let resolved = ed
        .roots
        .check(path, ed.policy.allow_read_outside)
        .map_err(|m| err(INVALID_PARAMS, m))?;
    let t0 = std::time::Instant::now();
    let content = match buffer_text(thread, path, &resolved, true).await? {
        Some(b) => {
            ed.remember_served(&resolved, &b.text);
            if line.is_none() && limit.is_none() {
                // The whole text as it is: a 10 MB buffer is not copied again.
                b.text
            } else {
                fs::slice_lines(&b.text, line, limit)
            }
        }
        None => {
            // stat first: non-regular files are refused unopened, and a
            // part is read without loading the whole file. The file opened
            // is checked against the roots again (a symlink swapped in since
            // the check above cannot lead outside).
            let (p, limits) = (
                resolved.clone(),
                fs::ReadLimits {
                    whole_file_bytes: ed.policy.read_max_bytes,
                    ..fs::ReadLimits::default()
                },
            );
            let confine = (!ed.policy.allow_read_outside).then(|| ed.roots.clone());
            let read = tokio::task::spawn_blocking(move || {
                fs::read_text_confined(&p, line, limit, &limits, confine.as_ref())
            })
            .await
            .map_err(|e| err(INTERNAL, e.to_string()))??;
            if read.whole {
                ed.remember_served(&resolved, &read.content);
            }
            read.content
        }
    };
    crate::log::info(format!(
        "fs/read_text_file {path}: {} bytes in {:.1} ms",
        content.len(),
        t0.elapsed().as_secs_f64() * 1000.0
    ));
    // Moved into the answer, not copied: `json!` would serialize a copy of
    // the text (10 MB copied and faulted in for a 10 MB buffer).
    let mut answer = serde_json::Map::new();
    answer.insert("content".to_owned(), Value::String(content));
    Ok(Value::Object(answer))
}

/// The text of the file before this client writes it. `stat` first: a
/// FIFO, socket or device is refused unopened (opening a FIFO waits for a
/// writer forever), and a file over the read limit is not read (its
/// original is then unknown). The read runs off the runtime's workers.
async fn disk_original(
    resolved: &std::path::Path,
    read_max_bytes: u64,
    confine: Option<crate::editor::roots::Roots>,
) -> Result<Original, FsError> {
    let p = resolved.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let meta = match std::fs::metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Original::Absent),
            Err(_) => return Ok(Original::Unknown),
        };
        fs::refuse_non_regular(&p, &meta)?;
        if meta.len() > read_max_bytes {
            return Ok(Original::Unknown);
        }
        let limits = fs::ReadLimits {
            whole_file_bytes: read_max_bytes,
            ..fs::ReadLimits::default()
        };
        Ok(
            match fs::read_text_confined(&p, None, None, &limits, confine.as_ref()) {
                Ok(r) => Original::Text(Arc::new(r.content)),
                Err(e) if e.code == fs::RESOURCE_NOT_FOUND => Original::Absent,
                // Binary, not UTF-8, grown past the limit, swapped for a FIFO.
                Err(_) => Original::Unknown,
            },
        )
    })
    .await
    .map_err(|e| err(INTERNAL, e.to_string()))?
}

/// The roots a write must stay in, checked on what is opened: none when the
/// user allows writes outside them.
fn write_confine(ed: &crate::editor::state::EditorState) -> Option<crate::editor::roots::Roots> {
    (!ed.policy.allow_write_outside).then(|| ed.roots.clone())
}

/// Refuses a write to anything but a regular file (or a new one): a FIFO,
/// socket or device is never opened, and a directory is not replaced.
async fn refuse_non_regular(resolved: &std::path::Path) -> Result<(), FsError> {
    let p = resolved.to_path_buf();
    tokio::task::spawn_blocking(move || match std::fs::metadata(&p) {
        Ok(meta) => fs::refuse_non_regular(&p, &meta),
        Err(_) => Ok(()),
    })
    .await
    .map_err(|e| err(INTERNAL, e.to_string()))?
}

/// The base of the three-way merge for a write to a buffer holding
/// `current`: None when the agent's text may replace it as it is.
async fn merge_base(
    ed: &crate::editor::state::EditorState,
    resolved: &std::path::Path,
    current: &BufferText,
    path: &str,
) -> Result<Option<String>, FsError> {
    match ed.served(resolved) {
        // The agent saw exactly this text.
        Some(s) if s.hash == fs::content_hash(&current.text) => Ok(None),
        // The buffer changed since: merge from what the agent saw.
        Some(s) => match s.text {
            Some(t) => Ok(Some(t.as_str().to_owned())),
            None => Err(err(
                INVALID_PARAMS,
                format!(
                    "{path}: the file changed since you read it; read it again and redo the edit"
                ),
            )),
        },
        // Never read through this client: unsaved user edits are merged
        // against the disk text, never replaced.
        None if current.modified => {
            match disk_original(resolved, ed.policy.read_max_bytes, write_confine(ed)).await? {
                Original::Text(t) => Ok(Some(t.as_str().to_owned())),
                _ => Err(err(
                    INVALID_PARAMS,
                    format!(
                    "{path}: the buffer has unsaved changes you have not seen; read the file first"
                ),
                )),
            }
        }
        None => Ok(None),
    }
}

async fn write_text_file(
    thread: &dyn EditorHost,
    req: v1s::WriteTextFileRequest,
) -> Result<Value, FsError> {
    let path = &*req.path.to_string_lossy();
    let large = req.content.len() > 1 << 20;
    let ed = &thread.editor();
    let resolved = ed
        .roots
        .check(path, ed.policy.allow_write_outside)
        .map_err(|m| err(INVALID_PARAMS, m))?;
    if let Some(name) = ed.is_protected(&resolved) {
        return Err(err(
            INVALID_PARAMS,
            format!(
                "{path}: writing under `{name}` is not allowed (the user can allow it with fs.protected)"
            ),
        ));
    }
    refuse_non_regular(&resolved).await?;
    let result = write_text(thread, path, &resolved, req.content).await;
    // Large texts pass through several transient copies (JSON, lines,
    // diffs): hand the freed memory back so that repeated writes stay flat.
    if large {
        crate::platform::release_free_memory();
    }
    result
}

async fn write_text(
    thread: &dyn EditorHost,
    path: &str,
    resolved: &std::path::Path,
    content: String,
) -> Result<Value, FsError> {
    let ed = thread.editor();
    let resolved = resolved.to_path_buf();
    let content = Arc::new(content);
    // What a loaded buffer and its file last agreed on, and the disk now,
    // taken before the buffer is read (the read brings a disk change into
    // the buffer and moves the agreed text): a difference is a change on
    // disk the agent's text does not know of.
    let agreed = match crate::editor::agreed::AGREED.get(&resolved.to_string_lossy()) {
        Some(text) => Some(text),
        // Not known (dropped to stay under the cap of kept texts, or the
        // buffer was never synced): an unmodified buffer, read as it is,
        // holds the text its file last had as far as the editor knows.
        None => match buffer_text(thread, path, &resolved, false).await? {
            Some(b) if !b.modified => Some(Arc::new(b.text)),
            _ => None,
        },
    };
    let disk = match agreed {
        Some(_) => disk_original(&resolved, ed.policy.read_max_bytes, write_confine(ed)).await?,
        None => Original::Unknown,
    };
    // The buffer may change between reading it and applying the edit;
    // then the edit is recomputed against the newer text.
    for _attempt in 0..5 {
        let Some(buf) = buffer_text(thread, path, &resolved, true).await? else {
            // The text right before the write: a step of review's chain.
            let original =
                disk_original(&resolved, ed.policy.read_max_bytes, write_confine(ed)).await?;
            // Changed on disk since the agent read it: the agent's change is
            // merged with the disk's, or refused; never written over it.
            let written = match write_merge::disk_write(
                ed.served(&resolved).as_ref(),
                &original,
                &content,
            ) {
                DiskWrite::AsIs => content.clone(),
                DiskWrite::Merged(text) => Arc::new(text),
                DiskWrite::Conflict(first, last) => {
                    return Err(refuse_conflict(thread, path, &resolved, &content, first, last))
                }
                DiskWrite::Stale => {
                    return Err(err(
                        INVALID_PARAMS,
                        format!("{path}: the file changed on disk since you read it; read it again and redo the edit"),
                    ))
                }
            };
            // Written relative to the opened directory, itself checked
            // against the roots (a symlink swapped in cannot lead outside).
            let (p, c, confine) = (resolved.clone(), written.clone(), write_confine(ed));
            tokio::task::spawn_blocking(move || {
                fs::write_atomic_confined(&p, &c, confine.as_ref())
            })
            .await
            .map_err(|e| err(INTERNAL, e.to_string()))??;
            record_write(
                thread,
                path,
                &resolved,
                WriteTarget::Disk,
                true,
                original,
                Original::Text(written.clone()),
                &content,
            );
            return Ok(json!({}));
        };
        let new = Lines::from_text(&content);
        let current = Lines::from_text(&buf.text);
        // Whether the hunks give the agent's text as it is (no merge): then
        // review's "after" is that text, not a copy built from the hunks.
        let mut as_sent = false;
        let hunks = match disk_change(ed, &resolved, &agreed, &disk, &buf, &current, &new) {
            BufferWrite::Merged(hunks) => hunks,
            BufferWrite::Conflict(Against::Disk, first, last) => {
                return Err(refuse_conflict(thread, path, &resolved, &content, first, last))
            }
            BufferWrite::Conflict(Against::Buffer, first, last) => {
                return Err(err(
                    INVALID_PARAMS,
                    format!("{path}: lines {first}-{last} were changed in the buffer since you read the file; read it again and redo the edit"),
                ))
            }
            BufferWrite::Unchanged => match merge_base(ed, &resolved, &buf, path).await? {
            Some(base) => {
                let base_lines = Lines::from_text(&base);
                let merged = textdiff::merge3(&base_lines.lines, &new.lines, &current.lines).map_err(|(from, to)| {
                    err(
                        INVALID_PARAMS,
                        format!(
                            "{path}: lines {from}-{to} changed (in the buffer or on disk) since you read the file; read it again and redo the edit"
                        ),
                    )
                })?;
                let merged: Vec<&str> = merged.iter().map(String::as_str).collect();
                textdiff::hunks(&current.lines, &merged)
            }
            None => {
                as_sent = true;
                textdiff::hunks(&current.lines, &new.lines)
            }
            },
        };
        let save = ed.policy.save_unmodified && !buf.modified;
        let hunks_applied = hunks.clone();
        let reply = calls::call::<BufferApplyReply>(
            thread.thread_id(),
            MainCall::BufferApply {
                bufnr: buf.bufnr,
                tick: buf.tick,
                hunks,
                save,
                eol: new.eol,
                path: path.to_owned(),
            },
        )
        .await
        .map_err(|e| err(INTERNAL, format!("{path}: {e}")))?;
        if reply.value.stale {
            continue;
        }
        if let Some(e) = &reply.value.error {
            return Err(err(INTERNAL, format!("{path}: {e}")));
        }
        let saved = reply.value.saved;
        // Review's step: the buffer's text before and after the hunks (the
        // merged text when the user's edits were merged in). The agent's
        // own text when it went in as sent and reads back the same (a 5 MB
        // file is then not built again from its lines for every write).
        let after = match as_sent && plain_format(&buf.format, &content) {
            true => content.clone(),
            false => Arc::new(filetext::encode_joined(
                textdiff::apply(&current.lines, &hunks_applied).join("\n"),
                &buf.format,
            )),
        };
        drop((current, new));
        record_write(
            thread,
            path,
            &resolved,
            WriteTarget::Buffer,
            saved,
            Original::Text(Arc::new(buf.text)),
            Original::Text(after),
            &content,
        );
        return Ok(json!({}));
    }
    Err(err(
        INTERNAL,
        format!("{path}: the buffer kept changing; try again"),
    ))
}

/// A change on disk the agent's text does not know of, merged into the
/// write to buffer `buf` (see `write_merge::buffer_write`): `agreed` and
/// `disk` as taken before the buffer was read.
fn disk_change(
    ed: &EditorState,
    resolved: &std::path::Path,
    agreed: &Option<Arc<String>>,
    disk: &Original,
    buf: &BufferText,
    current: &Lines,
    new: &Lines,
) -> BufferWrite {
    let Original::Text(disk) = disk else {
        return BufferWrite::Unchanged;
    };
    // A mac buffer's lines are not `Lines` of its text.
    if buf.format.fileformat == filetext::FileFormat::Mac {
        return BufferWrite::Unchanged;
    }
    let served = ed.served(resolved);
    // The agent's base: what it was served when kept; not known when only
    // its hash is (the usual check then asks the agent to read again).
    let (agreed, served) = match &served {
        Some(s) if s.text.is_none() => (None, None),
        Some(s) => (agreed.as_deref(), s.text.as_deref()),
        None => (agreed.as_deref(), None),
    };
    write_merge::buffer_write(
        agreed.map(String::as_str),
        Some(disk.as_str()),
        served.map(String::as_str),
        &buf.format,
        &current.lines,
        &new.lines,
    )
}

/// Refuses a write whose change and a change on disk touch the same lines
/// (`first`..`last` of the text the agent's edit is based on): nothing is
/// written, the chat shows the conflict (`:AcpConflict` compares the
/// agent's text with the file) and the agent gets an error naming them.
fn refuse_conflict(
    thread: &dyn EditorHost,
    path: &str,
    resolved: &std::path::Path,
    content: &str,
    first: usize,
    last: usize,
) -> FsError {
    calls::notify(
        thread.thread_id(),
        MainCall::WriteConflict {
            path: path.to_owned(),
            resolved: resolved.to_path_buf(),
            text: content.to_owned(),
            first,
            last,
        },
    );
    err(
        INVALID_PARAMS,
        format!(
            "{path}: not written: lines {first}-{last} were also changed on disk by another program while you worked (your edit is based on the text before that change); read the file again and redo the edit"
        ),
    )
}

/// True when a buffer of `format` holding `text`'s lines gives back
/// `text` itself: Unix line breaks, no byte order mark, and a last line
/// break exactly when the buffer writes one.
fn plain_format(format: &TextFormat, text: &str) -> bool {
    format.fileformat == filetext::FileFormat::Unix
        && !format.bomb
        && !text.contains('\r')
        && (text.is_empty() || text.ends_with('\n') == format.writes_eol())
}

fn record_write(
    thread: &dyn EditorHost,
    path: &str,
    resolved: &std::path::Path,
    target: WriteTarget,
    saved: bool,
    before: Original,
    after: Original,
    content: &str,
) {
    thread.editor().remember_served(resolved, content);
    let note = match (target, saved) {
        (WriteTarget::Buffer, false) => {
            format!("wrote `{path}` into its buffer, left unsaved (it had unsaved changes)")
        }
        (WriteTarget::Buffer, true) => format!("wrote `{path}` (buffer saved)"),
        _ => format!("wrote `{path}`"),
    };
    let tool_call_id = thread.note_write(path, note);
    record_change(thread, path, target, saved, before, after, tool_call_id);
}

/// Records a change for review: one record per path, holding the text from
/// before the first change of the session (kept once, whatever the number
/// of writes) and the chain of the agent's steps (the text right before and
/// right after each).
pub fn record_change(
    thread: &dyn EditorHost,
    path: &str,
    target: WriteTarget,
    saved: bool,
    before: Original,
    after: Original,
    tool_call_id: Option<String>,
) {
    let time = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    thread
        .editor()
        .record_change(path, target, saved, before, after, tool_call_id, time);
}

// terminal/* ---------------------------------------------------------------

async fn terminal_create(
    thread: &dyn EditorHost,
    req: &v1s::CreateTerminalRequest,
) -> Result<Value, FsError> {
    let command = req.command.clone();
    let args = req.args.clone();
    // The agent's variables, applied by the view on top of the user's
    // environment (minus the editor's own and the denied ones).
    let env: BTreeMap<String, String> = req
        .env
        .iter()
        .map(|v| (v.name.clone(), v.value.clone()))
        .collect();
    let ed = &thread.editor();
    let cwd = match &req.cwd {
        Some(c) => c.to_string_lossy().into_owned(),
        None => thread.cwd().to_string_lossy().into_owned(),
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
    let limit = req.output_byte_limit.map(|n| n as usize);
    // Agents send whole shell lines as `command` when there are no args.
    let argv: Vec<String> = if args.is_empty() {
        vec![ed.policy.shell.clone(), "-c".into(), command.clone()]
    } else {
        std::iter::once(command.clone())
            .chain(args.iter().cloned())
            .collect()
    };
    // An argv is shown as a shell line of exactly its words, and a grant
    // compares it word for word (`sh -c LINE` counts as LINE).
    let (shown, compared) = if args.is_empty() {
        (command.clone(), Command::of_line(&command))
    } else {
        (shellwords::join(&argv), Command::of_argv(argv.clone()))
    };
    let run = crate::editor::policy::Run {
        command: compared,
        cwd: &cwd,
        env: &env,
        inert_env: &ed.policy.terminal_inert_env,
    };
    if !thread
        .confirm_terminal(run, &shown)
        .await
        .map_err(|m| err(INTERNAL, m))?
    {
        return Err(err(
            INVALID_PARAMS,
            format!("the user declined to run `{shown}`"),
        ));
    }
    let id = ed.terminals.lock().create(limit);
    let reply = calls::call::<TerminalStartReply>(
        thread.thread_id(),
        MainCall::TerminalStart {
            id: id.clone(),
            argv,
            env,
            cwd: cwd.clone(),
            command: shown.clone(),
        },
    )
    .await;
    let failed = match reply.map(|r| r.value) {
        Ok(TerminalStartReply { pid: Some(pid), .. }) => {
            if let Ok(t) = ed.terminals.lock().get_mut(&id) {
                t.pid = Some(pid);
            }
            // Known to the chat before the agent can name it in a card.
            thread.terminal_display(&id, "", None);
            return Ok(json!({ "terminalId": id }));
        }
        Ok(v) => v.error.unwrap_or_else(|| "unknown error".into()),
        Err(e) => e,
    };
    let _ = ed
        .terminals
        .lock()
        .release(&id, ExitStatus::from_job_code(127));
    Err(err(INTERNAL, format!("cannot run `{shown}`: {failed}")))
}

fn terminal_output(thread: &dyn EditorHost, id: &str) -> Result<Value, FsError> {
    let terms = thread.editor().terminals.lock();
    let t = terms.get(&id).map_err(|m| err(INVALID_PARAMS, m))?;
    Ok(json!({
        "output": t.output.text(),
        "truncated": t.output.truncated,
        "exitStatus": t.exit,
    }))
}

async fn terminal_wait(thread: &dyn EditorHost, id: &str) -> Result<Value, FsError> {
    let rx = thread
        .editor()
        .terminals
        .lock()
        .wait(&id)
        .map_err(|m| err(INVALID_PARAMS, m))?;
    let status = rx
        .await
        .map_err(|_| err(INTERNAL, format!("terminal `{id}` went away")))?;
    Ok(serde_json::to_value(status).unwrap_or(Value::Null))
}

fn terminal_kill(thread: &dyn EditorHost, id: &str) -> Result<Value, FsError> {
    let terms = thread.editor().terminals.lock();
    let t = terms.get(&id).map_err(|m| err(INVALID_PARAMS, m))?;
    // Also once the command exited: what it left running in its process
    // group (background children, double forks) ends with the kill.
    kill_group(thread, id, t.pid);
    Ok(json!({}))
}

fn terminal_release(thread: &dyn EditorHost, id: &str) -> Result<Value, FsError> {
    let killed = ExitStatus {
        exit_code: None,
        signal: Some("SIGTERM".into()),
    };
    let t = thread
        .editor()
        .terminals
        .lock()
        .release(&id, killed)
        .map_err(|m| err(INVALID_PARAMS, m))?;
    // The command and whatever it left running in its process group.
    kill_group(thread, id, t.pid);
    Ok(json!({}))
}

/// Asks the main thread to end terminal `id`'s process group (nothing when
/// it never started).
fn kill_group(thread: &dyn EditorHost, id: &str, pid: Option<u32>) {
    if let Some(pid) = pid {
        calls::notify(
            thread.thread_id(),
            MainCall::TerminalKill {
                id: id.to_owned(),
                pid,
            },
        );
    }
}

/// Job output from the main thread.
pub fn on_terminal_output(thread: &dyn EditorHost, id: &str, data: &[u8]) {
    thread.editor().terminals.lock().output(id, data);
    thread.terminal_display(id, &String::from_utf8_lossy(data), None);
}

pub fn on_terminal_exit(thread: &dyn EditorHost, id: &str, code: i64) {
    let status = ExitStatus::from_job_code(code);
    thread.editor().terminals.lock().exited(id, status.clone());
    thread.terminal_display(id, "", Some(status.to_model()));
}
