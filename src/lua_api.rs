//! The Lua-facing API, built from mlua functions: mlua turns bad arguments,
//! errors and panics into Lua errors, where an nvim-oxi callback would abort
//! Neovim. The main-thread half of the bridge (the drain, the event tables)
//! is `bridge::drain` and `bridge::lua_tables`.
//!
//! May use: session, editor, protocol, runtime, bridge, model, config, log, redact.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mlua::{Function, Lua, LuaSerdeExt, Result as LuaResult, Table, Value as LuaValue};
use serde_json::Value;

use crate::bridge::drain;
use crate::bridge::handoff::bridge;
use crate::bridge::lua_tables::{lines_table, to_lua, to_lua_plain};
use crate::bridge::queue::UiEvent;
use crate::config::{AgentSpec, Policy};
use crate::editor::handlers;
use crate::model::entries::NoticeLevel;
use crate::model::filetext::TextFormat;
use crate::session::registry::registry;
use crate::{log, runtime};

mod chats;
mod media;
mod review;
mod subagents;

fn lua_err(msg: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(msg.into())
}

/// Lua tables arrive as JSON objects when empty; ACP wants arrays there.
fn json_list(v: Value) -> Value {
    match v {
        Value::Object(m) if m.is_empty() => Value::Array(Vec::new()),
        Value::Null => Value::Array(Vec::new()),
        other => other,
    }
}

/// The native module `acp_core` (declared in lua/acp/core/types.lua): one table
/// of mlua functions, registered by area.
pub fn module(lua: &Lua) -> LuaResult<Table> {
    let m = lua.create_table()?;
    register_lifecycle(lua, &m)?;
    register_threads(lua, &m)?;
    register_permissions(lua, &m)?;
    register_files(lua, &m)?;
    register_text(lua, &m)?;
    register_editor_calls(lua, &m)?;
    review::register(lua, &m)?;
    chats::register(lua, &m)?;
    media::register(lua, &m)?;
    subagents::register(lua, &m)?;
    Ok(m)
}

/// Loading, logging, statistics and shutdown.
fn register_lifecycle(lua: &Lua, m: &Table) -> LuaResult<()> {
    m.set(
        "init",
        lua.create_function(|_, opts: Table| {
            if let Some(names) = opts.get::<Option<Vec<String>>>("secret_names")? {
                crate::redact::set_deny_list(names);
            }
            if let Some(max) = opts.get::<Option<usize>>("kept_text_max_bytes")? {
                crate::editor::kept::KEPT.set_max_bytes(max);
            }
            if let Some(max) = opts.get::<Option<usize>>("checkpoint_max_bytes")? {
                crate::editor::checkpoints::MAX_BYTES
                    .store(max, std::sync::atomic::Ordering::Relaxed);
            }
            if let Some(on) = opts.get::<Option<bool>>("checkpoint_git")? {
                crate::editor::checkpoints::GIT.store(on, std::sync::atomic::Ordering::Relaxed);
            }
            chats::configure(&opts)?;
            if let Some(path) = opts.get::<Option<String>>("log_file")? {
                let max = opts
                    .get::<Option<u64>>("log_max_bytes")?
                    .unwrap_or(log::DEFAULT_MAX_BYTES);
                log::open_with(PathBuf::from(&path), max)
                    .map_err(|e| lua_err(format!("cannot open log {path}: {e}")))?;
            }
            log::install_panic_hook();
            if let Some(f) = opts.get::<Option<Function>>("dispatch")? {
                drain::set_dispatch(f);
            }
            drain::install_waker().map_err(lua_err)?;
            Ok(())
        })?,
    )?;

    m.set(
        "source_stamp",
        lua.create_function(|_, ()| Ok(env!("ACP_SOURCE_STAMP")))?,
    )?;

    m.set(
        "version",
        lua.create_function(|_, ()| Ok(env!("CARGO_PKG_VERSION")))?,
    )?;

    // What the loader checks (lua/acp/core/init.lua): cheap fields first.
    m.set(
        "build_info",
        lua.create_function(|lua, ()| {
            let t = lua.create_table()?;
            t.set("version", env!("CARGO_PKG_VERSION"))?;
            t.set("source_stamp", env!("ACP_SOURCE_STAMP"))?;
            Ok(t)
        })?,
    )?;

    m.set(
        "log_path",
        lua.create_function(|_, ()| Ok(log::path().map(|p| p.to_string_lossy().into_owned())))?,
    )?;

    // The view's own errors go to the same log (one writer, one format).
    m.set(
        "log",
        lua.create_function(|_, (level, msg): (String, String)| {
            match level.as_str() {
                "error" => log::error(&msg),
                "warn" => log::warn(&msg),
                _ => log::info(&msg),
            }
            Ok(())
        })?,
    )?;

    m.set(
        "agent_pids",
        lua.create_function(|_, ()| Ok(registry().agent_pids()))?,
    )?;

    m.set(
        "stats",
        lua.create_function(|lua, ()| {
            let s = &bridge().stats;
            let t = lua.create_table()?;
            t.set("pushed", s.pushed.load(Ordering::Relaxed))?;
            t.set("drains", s.drains.load(Ordering::Relaxed))?;
            t.set("delivered", s.delivered.load(Ordering::Relaxed))?;
            t.set("waits", s.waits.load(Ordering::Relaxed))?;
            t.set("sliced", s.sliced.load(Ordering::Relaxed))?;
            t.set("timed_wakes", s.timed_wakes.load(Ordering::Relaxed))?;
            t.set("queued_bytes", bridge().queued_bytes())?;
            Ok(t)
        })?,
    )?;

    m.set(
        "events_wait",
        lua.create_function(|_, ()| Ok(bridge().events_wait()))?,
    )?;

    m.set(
        "shutdown",
        lua.create_function(|_, ()| {
            // Bounded: 400 ms for agents to exit, then SIGKILL; 300 ms for
            // tasks. Neovim's exit never waits longer than that.
            if runtime::is_running() {
                registry().kill_all(Duration::from_millis(400));
                runtime::shutdown(Duration::from_millis(300));
            }
            // The agent's images and audio saved this session.
            crate::protocol::media::remove_all();
            Ok(())
        })?,
    )?;

    // Test hook: proves that a panic in the core surfaces as a Lua error.
    m.set(
        "_panic",
        lua.create_function(|_, ()| -> LuaResult<()> { panic!("deliberate test panic") })?,
    )?;
    Ok(())
}

/// Chat threads: open, prompt, sign-in, modes, cancel, and what the view reads of them.
fn register_threads(lua: &Lua, m: &Table) -> LuaResult<()> {
    m.set(
        "open_thread",
        lua.create_function(|lua, spec: Table| {
            let mcp = match spec.get::<LuaValue>("mcp_servers")? {
                LuaValue::Nil => Vec::new(),
                v => {
                    let mut servers = json_list(lua.from_value(v)?);
                    // Empty Lua lists arrive as objects.
                    for server in servers.as_array_mut().into_iter().flatten() {
                        if let Value::Object(m) = server {
                            for key in ["args", "env", "headers"] {
                                if let Some(v) = m.remove(key) {
                                    m.insert(key.into(), json_list(v));
                                }
                            }
                        }
                    }
                    serde_json::from_value(servers)
                        .map_err(|e| lua_err(format!("mcp_servers: {e}")))?
                }
            };
            let policy: Policy = match spec.get::<LuaValue>("policy")? {
                LuaValue::Nil => Policy::default(),
                v => lua.from_value(v)?,
            };
            let resume = spec.get::<Option<String>>("resume")?;
            let kept = spec.get::<Option<String>>("kept")?;
            let spec: AgentSpec = lua.from_value(LuaValue::Table(spec))?;
            runtime::handle().map_err(lua_err)?;
            Ok(registry().open_thread(spec, mcp, policy, resume, kept))
        })?,
    )?;

    m.set(
        "prompt",
        lua.create_function(|lua, (id, blocks, opts): (u64, LuaValue, Option<Table>)| {
            let blocks = match blocks {
                LuaValue::String(s) => {
                    serde_json::json!([{"type": "text", "text": s.to_str()?.to_string()}])
                }
                v => json_list(lua.from_value(v)?),
            };
            if blocks.as_array().is_none_or(|a| a.is_empty()) {
                return Err(lua_err("prompt needs at least one content block"));
            }
            let blocks: Vec<agent_client_protocol::v1::schema::ContentBlock> =
                serde_json::from_value(blocks)
                    .map_err(|e| lua_err(format!("prompt: a content block is malformed: {e}")))?;
            registry()
                .thread(id)
                .map_err(lua_err)?
                .prompt(
                    blocks,
                    opts.map(|o| o.get::<bool>("queued_by_agent"))
                        .transpose()?
                        .unwrap_or(false),
                )
                .map_err(lua_err)
        })?,
    )?;

    // A request of the view to the agent (see `ThreadHandle::request`);
    // the answer is a `reply` event for `reply`.
    m.set(
        "request",
        lua.create_function(
            |lua, (id, method, params, reply): (u64, String, LuaValue, u64)| {
                let params: Value = match params {
                    LuaValue::Nil => Value::Object(Default::default()),
                    v => match lua.from_value::<Value>(v)? {
                        Value::Array(a) if a.is_empty() => Value::Object(Default::default()),
                        v => v,
                    },
                };
                registry()
                    .thread(id)
                    .map_err(lua_err)?
                    .request(method, params, reply);
                Ok(())
            },
        )?,
    )?;

    // Edit and resend: the chat goes on in a fork of its session at a
    // message, or in a new session; a `reply` event for `reply` says which.
    m.set(
        "branch",
        lua.create_function(|_, (id, opts, reply): (u64, Table, u64)| {
            let note: String = opts.get("note")?;
            let how = if opts.get::<Option<bool>>("fork")?.unwrap_or(false) {
                crate::session::branch::Branch::Fork {
                    message_id: opts.get("message_id")?,
                }
            } else {
                crate::session::branch::Branch::New
            };
            registry()
                .thread(id)
                .map_err(lua_err)?
                .branch(how, note, reply);
            Ok(())
        })?,
    )?;

    m.set(
        "reconnect",
        lua.create_function(|_, id: u64| {
            registry().thread(id).map_err(lua_err)?.reconnect();
            Ok(())
        })?,
    )?;

    // The user's answer to an `elicitation` event.
    m.set(
        "answer_elicitation",
        lua.create_function(|lua, (request, response): (u64, LuaValue)| {
            let response: Value = lua.from_value(response)?;
            crate::protocol::elicitation::answer(request, response).map_err(lua_err)
        })?,
    )?;

    m.set(
        "authenticate",
        lua.create_function(|_, (id, method): (u64, String)| {
            registry().thread(id).map_err(lua_err)?.authenticate(method);
            Ok(())
        })?,
    )?;

    m.set(
        "auth_methods",
        lua.create_function(|lua, id: u64| {
            let t = registry().thread(id).map_err(lua_err)?;
            to_lua(lua, &t.auth_methods())
        })?,
    )?;

    m.set(
        "set_mode",
        lua.create_function(|_, (id, mode): (u64, String)| {
            registry().thread(id).map_err(lua_err)?.set_mode(mode);
            Ok(())
        })?,
    )?;

    m.set(
        "cancel",
        lua.create_function(|_, id: u64| Ok(registry().thread(id).map_err(lua_err)?.cancel()))?,
    )?;

    m.set(
        "close_thread",
        lua.create_function(|_, id: u64| {
            registry().close_thread(id);
            Ok(())
        })?,
    )?;

    m.set(
        "trace_lines",
        lua.create_function(|lua, (id, width): (u64, Option<usize>)| {
            let trace = registry().trace_of(id).map_err(lua_err)?;
            lines_table(lua, trace.lines(width.unwrap_or(400)))
        })?,
    )?;

    m.set(
        "trace_save",
        lua.create_function(|_, (id, path): (u64, String)| {
            let trace = registry().trace_of(id).map_err(lua_err)?;
            trace
                .save(std::path::Path::new(&path))
                .map_err(|e| lua_err(format!("cannot write {path}: {e}")))
        })?,
    )?;

    m.set(
        "markdown",
        lua.create_function(|_, (id, before): (u64, Option<usize>)| {
            Ok(registry().thread(id).map_err(lua_err)?.markdown(before))
        })?,
    )?;

    m.set(
        "thread_info",
        lua.create_function(|lua, id: u64| {
            let t = registry().thread(id).map_err(lua_err)?;
            let info = lua.create_table()?;
            info.set("state", t.state().as_str())?;
            info.set("pid", t.pid())?;
            info.set("session_id", t.session_id())?;
            info.set("agent", t.spec.name.clone())?;
            info.set("kept_id", t.kept_id())?;
            if let Some(init) = t.agent_init() {
                let caps = init
                    .get("agentCapabilities")
                    .cloned()
                    .unwrap_or(Value::Null);
                info.set("agent_capabilities", to_lua(lua, &caps)?)?;
                info.set(
                    "agent_info",
                    to_lua(lua, &init.get("agentInfo").cloned().unwrap_or(Value::Null))?,
                )?;
            }
            Ok(info)
        })?,
    )?;

    m.set(
        "entry",
        lua.create_function(|lua, (id, index): (u64, usize)| {
            let t = registry().thread(id).map_err(lua_err)?;
            match t.entry_json(index) {
                Some(v) => to_lua(lua, &v),
                None => Ok(LuaValue::Nil),
            }
        })?,
    )?;

    m.set(
        "notice",
        lua.create_function(|_, (id, level, text): (u64, String, String)| {
            let level = match level.as_str() {
                "error" => NoticeLevel::Error,
                "warn" => NoticeLevel::Warn,
                _ => NoticeLevel::Info,
            };
            registry().thread(id).map_err(lua_err)?.notice(level, text);
            Ok(())
        })?,
    )?;

    m.set(
        "roots",
        lua.create_function(|lua, id: u64| {
            let t = registry().thread(id).map_err(lua_err)?;
            let dirs: Vec<String> = t
                .editor
                .roots
                .dirs()
                .iter()
                .map(|d| d.to_string_lossy().into_owned())
                .collect();
            to_lua(lua, &dirs)
        })?,
    )?;
    Ok(())
}

/// The user's answers to permission requests and the "always" list.
fn register_permissions(lua: &Lua, m: &Table) -> LuaResult<()> {
    m.set(
        "answer_permission",
        lua.create_function(|_, (id, request, option): (u64, u64, Option<String>)| {
            registry()
                .thread(id)
                .map_err(lua_err)?
                .answer_permission(request, option)
                .map_err(lua_err)
        })?,
    )?;

    m.set(
        "decisions",
        lua.create_function(|lua, id: u64| {
            let t = registry().thread(id).map_err(lua_err)?;
            to_lua_plain(lua, &t.always_choices())
        })?,
    )?;

    m.set(
        "forget_decisions",
        lua.create_function(|_, id: u64| {
            registry().thread(id).map_err(lua_err)?.forget_decisions();
            Ok(())
        })?,
    )?;
    Ok(())
}

/// The `@` file walk and the text helpers the view uses (merge).
fn register_files(lua: &Lua, m: &Table) -> LuaResult<()> {
    // File texts the view keeps (the snapshots of the files an edit card
    // names) live in the core, under the one cap of all kept texts: an id,
    // or nil when the text is not kept (larger than the cap, not UTF-8).
    m.set(
        "keep_text",
        lua.create_function(
            |_, (thread, label, text): (u64, mlua::String, mlua::String)| {
                let Ok(text) = std::str::from_utf8(&text.as_bytes()).map(str::to_owned) else {
                    return Ok(None);
                };
                let label = label.to_string_lossy().to_string();
                Ok(crate::editor::kept::KEPT.keep(thread, label, std::sync::Arc::new(text)))
            },
        )?,
    )?;
    // The text kept as `id`, or nil once it was dropped (or released).
    m.set(
        "kept_text",
        lua.create_function(|lua, id: u64| match crate::editor::kept::KEPT.get(id) {
            Some(t) => Ok(Some(lua.create_string(t.as_bytes())?)),
            None => Ok(None),
        })?,
    )?;
    m.set(
        "release_text",
        lua.create_function(|_, id: u64| {
            crate::editor::kept::KEPT.release(id);
            Ok(())
        })?,
    )?;
    // Bytes of all kept texts (for tests and :checkhealth).
    m.set(
        "kept_bytes",
        lua.create_function(|_, ()| Ok(crate::editor::kept::KEPT.total_bytes()))?,
    )?;
    // Lists the files under `root` (ignore files respected) on a blocking
    // thread and keeps the list for `match_files`; a `files` event with
    // `request` (and the count) says when it is ready.
    m.set(
        "list_files",
        lua.create_function(|_, (root, max, request): (String, Option<usize>, u64)| {
            let handle = runtime::handle().map_err(lua_err)?;
            let max = max.unwrap_or(200_000);
            handle.spawn(async move {
                let key = root.clone();
                let result = tokio::task::spawn_blocking(move || {
                    let listing = crate::editor::files::walk(&PathBuf::from(&key), max)?;
                    let (count, truncated) = (listing.paths.len(), listing.truncated);
                    crate::editor::files::store(&key, listing.paths);
                    Ok((count, truncated))
                })
                .await
                .unwrap_or_else(|e| Err(format!("the file walk failed: {e}")));
                let event = match result {
                    Ok((count, truncated)) => UiEvent::Files {
                        request,
                        root,
                        count,
                        truncated,
                        error: None,
                    },
                    Err(e) => UiEvent::Files {
                        request,
                        root,
                        count: 0,
                        truncated: false,
                        error: Some(e),
                    },
                };
                bridge().push(event);
            });
            Ok(())
        })?,
    )?;

    // The best `limit` paths of `root`'s last listing containing `query`
    // (nil when it was never listed). Cheap enough for every keystroke.
    m.set(
        "match_files",
        lua.create_function(
            |lua, (root, query, limit): (String, String, Option<usize>)| {
                match crate::editor::files::query(&root, &query, limit.unwrap_or(50)) {
                    Some(paths) => Ok(LuaValue::Table(lines_table(lua, paths)?)),
                    None => Ok(LuaValue::Nil),
                }
            },
        )?,
    )?;

    Ok(())
}

/// Buffer lines as they cross from Lua: a list of strings, or one string
/// of the lines joined with "\n" (a 10 MB buffer crosses as one string,
/// whose bytes are read in place).
fn lines_arg(v: LuaValue) -> LuaResult<Vec<mlua::String>> {
    match v {
        LuaValue::String(s) => Ok(vec![s]),
        LuaValue::Table(t) => t.sequence_values::<mlua::String>().collect(),
        v => Err(lua_err(format!(
            "lines: a list of strings or one string, not {}",
            v.type_name()
        ))),
    }
}

/// The lines of `arg` (see `lines_arg`; `joined`: it was one string).
fn lines_of<'a>(arg: &'a [mlua::BorrowedBytes<'a>], joined: bool) -> Vec<&'a [u8]> {
    if joined {
        crate::model::filetext::split_joined(&arg[0])
    } else {
        arg.iter().map(|b| &b[..]).collect()
    }
}

fn format_arg(lua: &Lua, v: Option<Table>) -> LuaResult<TextFormat> {
    match v {
        Some(t) => lua.from_value(LuaValue::Table(t)),
        None => Ok(TextFormat::default()),
    }
}

fn hunks_table(lua: &Lua, hunks: Vec<crate::model::textdiff::ByteHunk>) -> LuaResult<Table> {
    let out = lua.create_table_with_capacity(hunks.len(), 0)?;
    for (i, h) in hunks.into_iter().enumerate() {
        let t = lua.create_table_with_capacity(0, 3)?;
        t.raw_set("old_start", h.old_start)?;
        t.raw_set("old_end", h.old_end)?;
        let lines = lua.create_table_with_capacity(h.lines.len(), 0)?;
        for (j, l) in h.lines.into_iter().enumerate() {
            lines.raw_set(j + 1, lua.create_string(l)?)?;
        }
        t.raw_set("lines", lines)?;
        out.raw_set(i + 1, t)?;
    }
    Ok(out)
}

/// File texts for the buffer sync: how a buffer's lines are its file's
/// text (`model::filetext`), the edits between two texts
/// (`model::textdiff`), and the text each buffer and its file last agreed
/// on (`editor::agreed`). Lines and texts are bytes: a buffer may hold
/// bytes that are not UTF-8.
fn register_text(lua: &Lua, m: &Table) -> LuaResult<()> {
    use crate::editor::agreed::{DiskMerge, AGREED};
    use crate::model::{filetext, textdiff};

    // A file's text as a buffer with `format` holds it: its lines and
    // whether it ended with a line break.
    m.set(
        "decode",
        lua.create_function(|lua, (text, format): (mlua::String, Option<Table>)| {
            let format = format_arg(lua, format)?;
            let text = text.as_bytes();
            let d = filetext::decode(&text, &format);
            let lines = lua.create_table_with_capacity(d.lines.len(), 0)?;
            for (i, l) in d.lines.iter().enumerate() {
                lines.raw_set(i + 1, lua.create_string(l)?)?;
            }
            Ok((lines, d.eol))
        })?,
    )?;
    // The text a `:write` of a buffer holding `lines` with `format` puts
    // in its file.
    m.set(
        "encode",
        lua.create_function(|lua, (lines, format): (LuaValue, Option<Table>)| {
            let format = format_arg(lua, format)?;
            let joined = matches!(lines, LuaValue::String(_));
            let arg = lines_arg(lines)?;
            let bytes: Vec<_> = arg.iter().map(mlua::String::as_bytes).collect();
            lua.create_string(filetext::encode(&lines_of(&bytes, joined), &format))
        })?,
    )?;
    // The hunks ({ old_start, old_end, lines }, 0-based, end exclusive,
    // ascending) that turn lines `old` into lines `new`.
    m.set(
        "hunks",
        lua.create_function(|lua, (old, new): (LuaValue, LuaValue)| {
            let (old_joined, new_joined) = (
                matches!(old, LuaValue::String(_)),
                matches!(new, LuaValue::String(_)),
            );
            let (old, new) = (lines_arg(old)?, lines_arg(new)?);
            let old_b: Vec<_> = old.iter().map(mlua::String::as_bytes).collect();
            let new_b: Vec<_> = new.iter().map(mlua::String::as_bytes).collect();
            let hunks =
                textdiff::byte_hunks(&lines_of(&old_b, old_joined), &lines_of(&new_b, new_joined));
            hunks_table(lua, hunks)
        })?,
    )?;
    // The hunks that make a buffer holding `lines` hold the file text
    // `text` read with `format`, and the 'eol' it then has.
    m.set(
        "file_hunks",
        lua.create_function(
            |lua, (lines, text, format): (LuaValue, mlua::String, Option<Table>)| {
                let format = format_arg(lua, format)?;
                let joined = matches!(lines, LuaValue::String(_));
                let arg = lines_arg(lines)?;
                let bytes: Vec<_> = arg.iter().map(mlua::String::as_bytes).collect();
                let text = text.as_bytes();
                let theirs = filetext::decode(&text, &format);
                let hunks = textdiff::byte_hunks(&lines_of(&bytes, joined), &theirs.lines);
                Ok((hunks_table(lua, hunks)?, theirs.eol))
            },
        )?,
    )?;
    // The text the buffer of `path` and its file agree on now (nil: none
    // known, a new file). Not kept when it is not UTF-8.
    m.set(
        "agreed_set",
        lua.create_function(|_, (path, text): (String, Option<mlua::String>)| {
            let text = text.and_then(|t| String::from_utf8(t.as_bytes().to_vec()).ok());
            match text {
                Some(t) => AGREED.set(&path, std::sync::Arc::new(t)),
                None => AGREED.forget(&path),
            }
            Ok(())
        })?,
    )?;
    m.set(
        "agreed_get",
        lua.create_function(|lua, path: String| match AGREED.get(&path) {
            Some(t) => Ok(Some(lua.create_string(t.as_bytes())?)),
            None => Ok(None),
        })?,
    )?;
    m.set(
        "agreed_forget",
        lua.create_function(|_, path: String| {
            AGREED.forget(&path);
            Ok(())
        })?,
    )?;
    // A disk change of `path` (new text `text`) merged into its buffer's
    // unsaved `lines` from the agreed text: "same" (nothing to merge),
    // "unknown" (no agreed text), "conflict" and the 1-based { first, last }
    // lines of the agreed text both changed, or "merged" and the hunks.
    m.set(
        "merge_disk",
        lua.create_function(
            |lua, (path, lines, text, format): (String, LuaValue, mlua::String, Option<Table>)| {
                let format = format_arg(lua, format)?;
                let joined = matches!(lines, LuaValue::String(_));
                let arg = lines_arg(lines)?;
                let bytes: Vec<_> = arg.iter().map(mlua::String::as_bytes).collect();
                let text = text.as_bytes();
                let merge = AGREED.merge_disk(&path, &lines_of(&bytes, joined), &text, &format);
                Ok(match merge {
                    DiskMerge::Same => ("same", LuaValue::Nil),
                    DiskMerge::Unknown => ("unknown", LuaValue::Nil),
                    DiskMerge::Conflict(first, last) => {
                        let c = lua.create_table()?;
                        c.raw_set(1, first)?;
                        c.raw_set(2, last)?;
                        ("conflict", LuaValue::Table(c))
                    }
                    DiskMerge::Merged(hunks) => {
                        ("merged", LuaValue::Table(hunks_table(lua, hunks)?))
                    }
                })
            },
        )?,
    )?;
    Ok(())
}

/// Answers of the main thread to the core's calls, and terminal jobs reporting back.
fn register_editor_calls(lua: &Lua, m: &Table) -> LuaResult<()> {
    // Answers to main-thread calls (see src/calls.rs).
    m.set(
        "call_part",
        lua.create_function(|_, (id, text, size): (u64, mlua::String, Option<usize>)| {
            crate::bridge::calls::part(id, &text.to_str()?, size).map_err(lua_err)
        })?,
    )?;

    m.set(
        "call_done",
        lua.create_function(|lua, (id, value): (u64, LuaValue)| {
            let v: Value = if value.is_nil() {
                Value::Null
            } else {
                lua.from_value(value)?
            };
            crate::bridge::calls::finish(id, Ok(v)).map_err(lua_err)
        })?,
    )?;

    m.set(
        "call_fail",
        lua.create_function(|_, (id, msg): (u64, String)| {
            crate::bridge::calls::finish(id, Err(msg)).map_err(lua_err)
        })?,
    )?;

    // Job events of client terminals (lua/acp/editor/terminal.lua).
    m.set(
        "terminal_output",
        lua.create_function(|_, (id, term, data): (u64, String, mlua::String)| {
            let t = registry().thread(id).map_err(lua_err)?;
            handlers::on_terminal_output(&*t, &term, &data.as_bytes());
            Ok(())
        })?,
    )?;

    m.set(
        "terminal_exit",
        lua.create_function(|_, (id, term, code): (u64, String, i64)| {
            let t = registry().thread(id).map_err(lua_err)?;
            handlers::on_terminal_exit(&*t, &term, code);
            Ok(())
        })?,
    )?;

    // A view buffer follows terminal `id` (or stops): only watched
    // terminals send their output as events; turning it on returns the
    // output so far.
    m.set(
        "watch_terminal",
        lua.create_function(|lua, (id, term, on): (u64, String, bool)| {
            let t = registry().thread(id).map_err(lua_err)?;
            match t.watch_terminal(&term, on) {
                None => Ok(LuaValue::Nil),
                Some((output, exit)) => {
                    let r = lua.create_table()?;
                    r.set("output", output)?;
                    r.set("exit", exit)?;
                    Ok(LuaValue::Table(r))
                }
            }
        })?,
    )?;

    m.set(
        "terminal_text",
        lua.create_function(|lua, (id, term): (u64, String)| {
            let t = registry().thread(id).map_err(lua_err)?;
            match t.terminal_text(&term) {
                None => Ok(LuaValue::Nil),
                Some((output, exit)) => {
                    let r = lua.create_table()?;
                    r.set("output", output)?;
                    r.set("exit", exit)?;
                    Ok(LuaValue::Table(r))
                }
            }
        })?,
    )?;
    Ok(())
}
