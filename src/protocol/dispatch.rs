//! Reading and answering the agent. Its stdout goes through our own line
//! reader first: the stream of `session/update` notifications (nearly all
//! the traffic) is parsed once and applied in arrival order; every other
//! line goes on to the ACP SDK, whose handlers pass the agent's requests to
//! the session they name.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AuthCapabilities, BooleanConfigOptionCapabilities, ClientCapabilities,
    ClientSessionCapabilities, CompactionCapabilities, ElicitationCapabilities,
    ElicitationFormCapabilities, ElicitationUrlCapabilities, FileSystemCapabilities,
    Implementation, InitializeRequest, NoticeCapabilities, SessionConfigOptionsCapabilities,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::{Agent, ByteStreams, Client, UntypedMessage};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::connection::{ConnState, Connection};
use super::elicitation;
use super::framing::{self, LineRead};
use super::inbound::{classify, session_update_params, AgentRequest, Incoming, RequestError};
use super::media;
use super::splice::SplicingWriter;
use super::text_chunk;
use super::trace::{self, TracedWriter};
use crate::bridge::handoff::bridge;
use crate::config::Caps;
use crate::log;
use crate::model::render::human_ms;
use crate::model::update;

/// The client capabilities advertised in `initialize`: only what is on in
/// `caps`. `_meta.terminal_output` asks the Claude and Codex adapters for
/// their own display terminals. Always implemented: `terminal` sign-in
/// methods, boolean config options, and both elicitation modes (form and
/// URL).
fn client_capabilities(caps: &Caps) -> ClientCapabilities {
    let mut advertised = ClientCapabilities::new()
        .fs(FileSystemCapabilities::new()
            .read_text_file(caps.fs_read)
            .write_text_file(caps.fs_write))
        .terminal(caps.terminal)
        .auth(AuthCapabilities::new().terminal(true))
        .session(
            ClientSessionCapabilities::new()
                .config_options(
                    SessionConfigOptionsCapabilities::new()
                        .boolean(BooleanConfigOptionCapabilities::new()),
                )
                // Shown in the chat (`notice`, `compaction_update`).
                .notices(NoticeCapabilities::new())
                .compaction(CompactionCapabilities::new()),
        )
        .elicitation(
            ElicitationCapabilities::new()
                .form(ElicitationFormCapabilities::new())
                .url(ElicitationUrlCapabilities::new()),
        );
    if caps.terminal {
        let mut meta = serde_json::Map::new();
        meta.insert("terminal_output".into(), Value::Bool(true));
        advertised = advertised.meta(meta);
    }
    advertised
}

/// Capabilities of a newer schema than the SDK's, added to `initialize`'s
/// params as JSON: `plan` (plans by id) and `subagents`, each only when
/// its `experimental` option is on.
fn advertise_newer(params: &mut Value, caps: &Caps) {
    let Some(advertised) = params
        .get_mut("clientCapabilities")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    if caps.plan_v2 {
        advertised.insert("plan".into(), serde_json::json!({}));
    }
    if caps.subagents {
        advertised.insert("subagents".into(), serde_json::json!({}));
    }
}

pub(super) async fn run_protocol(
    conn: Arc<Connection>,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
) {
    let on_notif = conn.clone();
    let on_req = conn.clone();
    let main = conn.clone();
    // The agent's stdout goes through our own line reader first: the
    // stream of session/update notifications (nearly all the traffic) is
    // parsed once and applied here; everything else goes on to the SDK.
    let (sdk_side, feed) = tokio::io::duplex(1 << 20);
    tokio::spawn(route_incoming(conn.clone(), stdout, feed));
    let observer = Arc::downgrade(&conn);
    // The tracer sees the answers as the agent gets them: large strings
    // already spliced in.
    let stdin = SplicingWriter::new(
        TracedWriter::new(stdin, conn.trace.clone()).observe(move |line| {
            if let Some(conn) = observer.upgrade() {
                conn.note_outgoing(line);
            }
        }),
        conn.splices.clone(),
    );
    let transport = ByteStreams::new(stdin.compat_write(), sdk_side.compat());
    let result = Client
        .v1()
        .name("acp.nvim")
        .on_receive_notification(
            async move |msg: UntypedMessage, _cx: ConnectionTo<Agent>| {
                handle_notification(&on_notif, msg).await;
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |msg: UntypedMessage,
                        responder: Responder<Value>,
                        _cx: ConnectionTo<Agent>| {
                handle_request(&on_req, msg, responder);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let request = InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(client_capabilities(&main.spec.caps))
                .client_info(Implementation::new("acp.nvim", env!("CARGO_PKG_VERSION")));
            let mut params = serde_json::to_value(&request)
                .map_err(|e| agent_client_protocol::Error::internal_error().data(e.to_string()))?;
            advertise_newer(&mut params, &main.spec.caps);
            // Kept as sent: sign-in methods of kinds the typed schema does
            // not know (`env_var`) keep their fields.
            let limit = main.spec.timeouts.initialize;
            let answer = tokio::time::timeout(
                Duration::from_millis(limit),
                cx.send_request(UntypedMessage::new("initialize", params)?)
                    .block_task(),
            )
            .await;
            let init = match answer {
                Ok(answer) => answer?,
                Err(_) => {
                    // The exit report carries the reason; the next message
                    // starts the agent again.
                    let reason = format!(
                        "Agent `{}` did not answer `initialize` within {}; it was stopped (send a message to start it again)",
                        main.spec.name,
                        human_ms(limit)
                    );
                    log::warn(&reason);
                    *main.fault.lock() = Some(reason);
                    main.terminate();
                    return Ok(());
                }
            };
            *main.init.lock() = Some(init);
            *main.cx.lock() = Some(cx.clone());
            main.state.send_replace(ConnState::Ready);
            log::info(format!("agent {} initialized", main.spec.name));
            tokio::select! {
                _ = cx.terminated() => {}
                _ = main.stop.notified() => {}
            }
            Ok(())
        })
        .await;
    if let Err(e) = result {
        log::warn(format!("agent {} connection ended: {e}", conn.spec.name));
        // A handshake failure on a live process: report it and stop the
        // agent. A process that is exiting (a broken pipe) gets its exit
        // report instead, which says more (exit code, what it printed).
        if matches!(conn.state(), ConnState::Starting)
            && tokio::time::timeout(Duration::from_millis(500), conn.closed())
                .await
                .is_err()
        {
            *conn.fault.lock() = Some(format!(
                "Agent `{}` failed the ACP handshake: {e}",
                conn.spec.name
            ));
            conn.terminate();
        }
    }
}

/// Reads the agent's stdout line by line. A `session/update` notification
/// is applied in arrival order before the next line is read, so a later
/// response (the end of a turn) can never overtake it; every other line is
/// passed to the SDK unchanged. Cuts the per-message cost of a stream to a
/// single JSON parse (the SDK parses, re-serialises and parses again).
pub(super) async fn route_incoming(
    conn: Arc<Connection>,
    stdout: impl AsyncRead + Unpin,
    mut feed: impl AsyncWrite + Unpin,
) {
    use tokio::io::AsyncWriteExt;
    let mut reader = BufReader::with_capacity(1 << 18, stdout);
    // Each line is read into bytes, then taken in as text (`admit_line`);
    // the allocation goes back and forth for the next line.
    let mut line = String::with_capacity(1024);
    // A line read ahead (while gathering a run of text chunks) that is not
    // part of the run: it is the next one handled.
    let mut ahead = String::with_capacity(1024);
    let mut carried = false;
    let cap = conn.spec.line_max;
    loop {
        if carried {
            std::mem::swap(&mut line, &mut ahead);
            carried = false;
        } else {
            let mut raw = std::mem::take(&mut line).into_bytes();
            raw.clear();
            match framing::read_line_capped(&mut reader, &mut raw, cap).await {
                Ok(LineRead::Line(_)) => {}
                Ok(LineRead::Eof) | Err(_) => break,
                Ok(LineRead::TooLong { .. }) => {
                    conn.trace.record(trace::Dir::In, &raw);
                    // Memory stays bounded: the agent is stopped, and its exit
                    // report carries the reason.
                    let reason = framing::too_long_message(&conn.spec.name, cap);
                    log::warn(&reason);
                    *conn.fault.lock() = Some(reason);
                    conn.terminate();
                    break;
                }
            }
            line = admit_line(&conn, raw);
        }
        if let Some(chunk) = text_chunk::parse(&line) {
            match apply_text_run(&conn, chunk, &mut reader, &mut ahead, cap).await {
                TextRun::Applied { ahead: next } => {
                    carried = next;
                    continue;
                }
                TextRun::General => {}
            }
        }
        if let Some(params) = session_update_params(line.as_bytes()) {
            apply_session_update(&conn, &params).await;
            continue;
        }
        match classify(line.as_bytes()) {
            Incoming::Blank => continue,
            Incoming::NotJson => {
                {
                    let mut book = conn.book.lock();
                    if book.junk.is_none() {
                        let text = line.trim_end();
                        book.junk = Some(log::cap_line(text, 200).into_owned());
                    }
                }
                conn.protocol_fault("not_json", "a line that is not JSON")
            }
            Incoming::NotJsonRpc => {
                conn.protocol_fault("not_jsonrpc", "JSON that is not a JSON-RPC message")
            }
            Incoming::Response { id, result } => {
                // Passed on either way: the SDK matches responses itself.
                if !conn.note_response(&id, result.as_ref()) {
                    conn.protocol_fault(
                        "unknown_id",
                        &format!("a response to request id {id}, which was never sent or is already answered"),
                    );
                }
            }
            Incoming::Message => {}
        }
        if feed.write_all(line.as_bytes()).await.is_err() {
            break;
        }
    }
    let _ = feed.shutdown().await;
}

/// A line as every line is taken in: one invalid byte must not cost the
/// message (or the connection), and the trace sees it as it was used.
/// Validated here once; what reads it after takes it as text.
fn admit_line(conn: &Connection, raw: Vec<u8>) -> String {
    let (line, fixed) = framing::into_text(raw);
    if fixed {
        conn.protocol_fault("invalid_utf8", "invalid UTF-8 (replaced by U+FFFD)");
    }
    conn.trace.record_text(trace::Dir::In, &line);
    line
}

/// Text gathered into one run stays under this size (a drain's slice).
const TEXT_RUN_MAX: usize = 256 * 1024;

enum TextRun {
    /// Applied. `ahead`: a line read after the run that is not part of
    /// it, to be handled next.
    Applied { ahead: bool },
    /// The general path must take the chunk: a subagent's chunk (wrapped
    /// for its owner), a session not routed (yet). Nothing was read ahead.
    General,
}

/// A plain text chunk of the agent, applied as `apply_session_update` would
/// (no `Value` made of it), together with the chunks of the same message
/// that directly follow it and are already in the reader's buffer (taken
/// into `ahead` one by one, never waiting): appending them one by one or as
/// one text gives the same entry and the same kept record, and a stream of
/// thousands of small chunks costs one update per buffer instead of one per
/// chunk. Each line is still traced on its own.
async fn apply_text_run<R: AsyncRead + Unpin>(
    conn: &Arc<Connection>,
    chunk: text_chunk::TextChunk<'_>,
    reader: &mut BufReader<R>,
    ahead: &mut String,
    cap: usize,
) -> TextRun {
    let sid = chunk.session_id.as_ref();
    if conn.owner_of(sid).is_some() {
        return TextRun::General;
    }
    let _order = conn.apply.lock().await;
    let Some(sink) = conn.sink_for(sid) else {
        return TextRun::General;
    };
    let mut run: Option<String> = None;
    let mut carried = false;
    while run.as_ref().map_or(chunk.text.len(), String::len) < TEXT_RUN_MAX {
        let mut raw = std::mem::take(ahead).into_bytes();
        if !framing::take_buffered_line(reader, &mut raw, cap) {
            // Nothing read ahead; the allocation stays for the next run.
            raw.clear();
            *ahead = String::from_utf8(raw).unwrap_or_default();
            break;
        }
        *ahead = admit_line(conn, raw);
        match text_chunk::parse(ahead) {
            Some(c) if chunk.continued_by(&c) => run
                .get_or_insert_with(|| chunk.text.clone().into_owned())
                .push_str(&c.text),
            _ => {
                carried = true;
                break;
            }
        }
    }
    let text = run.as_deref().unwrap_or(&chunk.text);
    sink.record_text_chunk(chunk.kind, chunk.message_id.as_deref(), text);
    let update = match run {
        Some(text) => text_chunk::TextChunk {
            text: text.into(),
            ..chunk
        }
        .into_update(),
        None => chunk.into_update(),
    };
    sink.apply_update(update);
    // The back-pressure, as for every update.
    bridge().wait_for_space().await;
    TextRun::Applied { ahead: carried }
}

async fn apply_session_update(conn: &Arc<Connection>, params: &Value) {
    let Some(sid) = params.get("sessionId").and_then(Value::as_str) else {
        log::warn("session/update without sessionId");
        return;
    };
    let Some(update) = params.get("update") else {
        return;
    };
    // Images and audio become files here (off the main thread), and their
    // blocks lines that name the file.
    let saved;
    let update = if media::has_media(update) {
        let mut copy = update.clone();
        media::save_all(&format!("{}/{sid}", conn.spec.name), &mut copy);
        saved = copy;
        &saved
    } else {
        update
    };
    // The one parse into the model's types.
    let raw = update;
    let update = update::parse_update(raw);
    // A subagent's own updates go to its owner's chat, wrapped as its.
    if let update::SessionUpdate::Subagent(child) = &update {
        conn.note_child(sid, &child.session_id);
    }
    let owner = conn.owner_of(sid);
    let (sid, update) = match &owner {
        Some(owner) => (
            owner.as_str(),
            update::SessionUpdate::Child {
                session_id: sid.to_owned(),
                update: Box::new(update),
            },
        ),
        None => (sid, update),
    };
    let _order = conn.apply.lock().await;
    match conn.sink_for(sid) {
        Some(sink) => {
            match &owner {
                // Kept as the child's, so a kept chat shows it in its block.
                Some(_) => sink.record(&serde_json::json!({
                    "sessionUpdate": crate::model::delegation::CHILD_RECORD,
                    "sessionId": params.get("sessionId"),
                    "update": raw,
                })),
                None => sink.record(raw),
            }
            sink.apply_update(update);
            // Holds the agent's read loop while the UI is far behind: the
            // back-pressure.
            bridge().wait_for_space().await;
        }
        None if !conn.session_may_exist(sid) => {
            conn.protocol_fault(
                "unknown_session",
                &format!("an update for session `{sid}`, which it never created"),
            );
        }
        None => {
            if !conn.early.lock().push(sid, update) {
                log::warn(format!(
                    "session/update for unknown session {sid} (dropped: too many early updates)"
                ));
            }
        }
    }
}

async fn handle_notification(conn: &Arc<Connection>, msg: UntypedMessage) {
    match msg.method() {
        // Normally taken by `route_incoming` before the SDK sees it.
        "session/update" => apply_session_update(conn, msg.params()).await,
        "elicitation/complete" => match msg.params().get("elicitationId").and_then(Value::as_str) {
            Some(id) => elicitation::complete(id),
            None => log::warn("elicitation/complete without elicitationId"),
        },
        // Taken by the SDK first: it marks the request it names, whose
        // waiting permission or elicitation then withdraws itself.
        "$/cancel_request" => {}
        // Extension notifications (`_auth/status_update`, ...) are optional.
        m if m.starts_with('_') => {}
        m => log::info(format!("ignored notification {m}")),
    }
}

/// Answers agent requests: parsed once into `AgentRequest`, then handed to
/// the session's sink. Never awaits the agent here: anything slow is the
/// sink's to spawn (it holds the responder until the user answers).
fn handle_request(conn: &Arc<Connection>, msg: UntypedMessage, responder: Responder<Value>) {
    let (method, params) = msg.into_parts();
    log::info(format!("request {method}"));
    let request = match AgentRequest::parse(&method, params) {
        Ok(r) => r,
        Err(RequestError::UnknownMethod(m)) => {
            log::info(format!("answered -32601 to {m}"));
            let _ = responder.respond_with_error(agent_client_protocol::Error::method_not_found());
            return;
        }
        Err(RequestError::InvalidParams(reason)) => {
            log::info(format!("answered -32602 to {method}: {reason}"));
            let _ = responder.respond_with_error(
                agent_client_protocol::Error::invalid_params()
                    .data(serde_json::json!({ "reason": reason })),
            );
            return;
        }
    };
    if let AgentRequest::Elicitation { session_id, raw } = request {
        // Request-scoped ones (no session) belong to no chat.
        let thread = session_id
            .map(|sid| conn.owner_of(&sid).unwrap_or(sid))
            .and_then(|sid| conn.sink_for(&sid))
            .and_then(|sink| sink.thread_id());
        elicitation::ask(thread, raw, responder);
        return;
    }
    // A large text read (a 10 MB buffer) goes out without the SDK's copy.
    let responder = match request {
        AgentRequest::ReadTextFile(_) => {
            let splices = conn.splices.clone();
            responder.wrap_params(move |_, r: Result<Value, _>| r.map(|v| splices.result(v)))
        }
        _ => responder,
    };
    // A subagent's requests go to its owner's chat.
    let owner = conn.owner_of(request.session_id());
    match conn.sink_for(owner.as_deref().unwrap_or(request.session_id())) {
        Some(sink) => sink.agent_request(request, responder),
        None => {
            let _ = responder.respond_with_error(
                agent_client_protocol::Error::invalid_params()
                    .data(serde_json::json!({"reason": "unknown sessionId"})),
            );
        }
    }
}

#[cfg(test)]
mod schema120_caps_tests {
    use super::*;

    /// `plan` and `subagents` sit at the top of `clientCapabilities`, as
    /// the agent-client-protocol-schema 1.20.0 types put them
    /// (`tests/fixtures/schema120.json`), and only when their option is on.
    #[test]
    fn newer_capabilities_sit_where_the_1_20_crate_puts_them() {
        let fixture: Value =
            serde_json::from_str(include_str!("../../tests/fixtures/schema120.json")).unwrap();
        let from_crate = &fixture["clientCapabilities"];
        let params_of = |caps: &Caps| {
            let request = InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(client_capabilities(caps));
            let mut params = serde_json::to_value(&request).unwrap();
            advertise_newer(&mut params, caps);
            params["clientCapabilities"].clone()
        };
        let on = params_of(&Caps {
            plan_v2: true,
            subagents: true,
            ..Caps::default()
        });
        for key in ["plan", "subagents"] {
            assert_eq!(on[key], from_crate[key], "{key}");
        }
        let off = params_of(&Caps::default());
        assert!(
            off.get("plan").is_none() && off.get("subagents").is_none(),
            "{off}"
        );
    }
}
