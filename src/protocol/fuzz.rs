//! Property tests ("fuzzing") of everything agent bytes go through before
//! the model: line splitting under a cap, UTF-8 repair, the classification
//! of a line (fast path or SDK, what is a fault), routing by session, and
//! the typed parses of every update kind and every client method. None may
//! panic, and each keeps its contract on any input.
//!
//! `cargo test` runs a short pass (proptest's default case count, or
//! `PROPTEST_CASES`). The long run is `fuzz_for_a_while` (ignored by
//! default): `ACP_FUZZ_SECS=600 cargo test --release fuzz_for_a_while --
//! --ignored --nocapture` prints the number of executions per property.

use std::sync::Arc;

use parking_lot::Mutex;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

use super::connection::{Connection, SessionSink};
use super::dispatch::route_incoming;
use super::framing::{self, LineRead};
use super::inbound::{classify, session_update_params, AgentRequest, Incoming, RequestError};
use crate::model::update::{self, SessionUpdate};
use crate::redact;

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

/// Keys real agents use, so that random objects hit the parsers' branches.
const KEYS: &[&str] = &[
    "sessionUpdate",
    "content",
    "type",
    "text",
    "toolCallId",
    "title",
    "kind",
    "status",
    "locations",
    "path",
    "line",
    "rawInput",
    "rawOutput",
    "command",
    "cmd",
    "_meta",
    "entries",
    "priority",
    "currentModeId",
    "availableCommands",
    "configOptions",
    "messageId",
    "uri",
    "data",
    "mimeType",
    "oldText",
    "newText",
    "terminalId",
    "sessionId",
    "options",
    "optionId",
    "name",
    "toolCall",
    "limit",
    "args",
    "env",
    "value",
    "cwd",
    "outputByteLimit",
    "used",
    "size",
    "mode",
    "message",
    "requestedSchema",
    "url",
    "elicitationId",
];

const UPDATE_KINDS: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "unknown_kind",
    "",
];

const METHODS: &[&str] = &[
    "session/request_permission",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/wait_for_exit",
    "terminal/kill",
    "terminal/release",
    "elicitation/create",
    "session/update",
    "_ext/notice",
    "unknown/method",
];

fn arb_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        // Floats that print and read back exactly (routing compares parses).
        (-4000i32..4000).prop_map(|n| json!(n as f64 / 8.0)),
        prop::sample::select(UPDATE_KINDS).prop_map(|s| json!(s)),
        // The elicitation modes, so that a parse gets past the mode check.
        prop::sample::select(&["form", "url"][..]).prop_map(|s| json!(s)),
        ".{0,12}".prop_map(Value::String),
    ]
}

/// Any JSON value, with keys mostly taken from what agents send.
fn arb_json() -> impl Strategy<Value = Value> {
    arb_scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        prop::sample::select(KEYS).prop_map(str::to_owned),
                        "[a-z]{1,6}"
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// An update object: a known (or odd) kind plus random fields.
fn arb_update() -> impl Strategy<Value = Value> {
    (prop::sample::select(UPDATE_KINDS), arb_json()).prop_map(|(kind, extra)| {
        let mut obj = match extra {
            Value::Object(m) => m,
            other => {
                let mut m = serde_json::Map::new();
                m.insert("content".into(), other);
                m
            }
        };
        obj.insert("sessionUpdate".into(), json!(kind));
        Value::Object(obj)
    })
}

/// Bytes that look like agent output: JSON lines, broken ones, invalid
/// UTF-8, blank lines, random noise.
fn arb_stream() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        arb_json().prop_map(|v| {
            let mut b = v.to_string().into_bytes();
            b.push(b'\n');
            b
        }),
        arb_update().prop_map(|u| {
            let msg = json!({"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": "a", "update": u}});
            let mut b = msg.to_string().into_bytes();
            b.push(b'\n');
            b
        }),
        prop::collection::vec(any::<u8>(), 0..40),
        Just(b"\n".to_vec()),
        Just(b"\xff\xfe\xc3\n".to_vec()),
        Just(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n".to_vec()),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Lines read under a cap are the input's lines, in order, each within the
/// cap; reading stops at the first line over it.
fn check_framing(data: &[u8], reader_cap: usize, cap: usize) -> Result<(), TestCaseError> {
    block_on(async {
        let mut r = tokio::io::BufReader::with_capacity(reader_cap, data);
        let mut consumed = 0usize;
        loop {
            let mut buf = Vec::new();
            match framing::read_line_capped(&mut r, &mut buf, cap)
                .await
                .unwrap()
            {
                LineRead::Line(n) => {
                    prop_assert_eq!(n, buf.len());
                    prop_assert!(n <= cap);
                    prop_assert_eq!(&data[consumed..consumed + n], &buf[..]);
                    consumed += n;
                    let ends = buf.last() == Some(&b'\n');
                    prop_assert!(ends || consumed == data.len());
                    prop_assert!(!buf[..n - 1].contains(&b'\n'));
                }
                LineRead::Eof => {
                    prop_assert_eq!(consumed, data.len());
                    return Ok(());
                }
                LineRead::TooLong { len } => {
                    prop_assert!(len > cap);
                    prop_assert_eq!(buf.len(), cap);
                    prop_assert_eq!(&data[consumed..consumed + cap], &buf[..]);
                    return Ok(());
                }
            }
        }
    })
}

/// Repair yields valid UTF-8 and leaves valid text alone.
fn check_utf8(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (text, changed) = framing::into_text(bytes.to_vec());
    prop_assert_eq!(changed, std::str::from_utf8(bytes).is_err());
    if !changed {
        prop_assert_eq!(text.as_bytes(), bytes);
    }
    Ok(())
}

/// The fast path takes exactly the `session/update` notifications; every
/// other line is classified without a panic, consistently with a parse.
fn check_classification(line: &[u8]) -> Result<(), TestCaseError> {
    let parsed: Option<Value> = serde_json::from_slice(line).ok();
    match session_update_params(line) {
        Some(params) => {
            let msg = parsed
                .clone()
                .expect("the fast path took a line that is not JSON");
            prop_assert_eq!(
                msg.get("method").and_then(Value::as_str),
                Some("session/update")
            );
            prop_assert!(msg.get("id").is_none());
            prop_assert_eq!(Some(&params), msg.get("params"));
        }
        None => {
            if let Some(msg) = &parsed {
                let is_update = msg.get("method").and_then(Value::as_str) == Some("session/update")
                    && msg.get("id").is_none()
                    && msg.get("params").is_some();
                prop_assert!(!is_update, "an update missed the fast path");
            }
        }
    }
    match classify(line) {
        Incoming::Blank => prop_assert!(line.iter().all(u8::is_ascii_whitespace)),
        Incoming::NotJson => prop_assert!(parsed.is_none()),
        Incoming::Message => prop_assert!(parsed
            .as_ref()
            .and_then(|m| m.get("method"))
            .is_some_and(Value::is_string)),
        Incoming::Response { .. } => {
            prop_assert!(parsed.as_ref().is_some_and(|m| m.get("id").is_some()))
        }
        Incoming::NotJsonRpc => prop_assert!(parsed.is_some()),
    }
    Ok(())
}

/// Every update kind parses without a panic; a kind the client uses never
/// turns into another kind.
fn check_update(update: &Value) -> Result<(), TestCaseError> {
    let parsed = update::parse_update(update);
    let kind = update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or("");
    match &parsed {
        SessionUpdate::Chunk { .. } => prop_assert!(kind.ends_with("_chunk")),
        SessionUpdate::ToolCall { announce, patch } => {
            prop_assert!(kind.starts_with("tool_call"));
            prop_assert_eq!(*announce, kind == "tool_call");
            prop_assert_eq!(
                Some(patch.id.as_str()),
                update.get("toolCallId").and_then(Value::as_str)
            );
        }
        SessionUpdate::Plan(_) => prop_assert_eq!(kind, "plan"),
        SessionUpdate::Ignored(k) => prop_assert_eq!(k.as_str(), kind),
        _ => {}
    }
    // The model takes whatever the parse gives.
    let mut thread = crate::model::thread::Thread::new("fuzz");
    thread.begin_turn("q");
    thread.apply_update(&parsed);
    let _ = thread.to_markdown();
    Ok(())
}

/// Every client method's params parse without a panic; a rejection names
/// the method (and serde's reason names the field or type).
fn check_request(method: &str, params: &Value) -> Result<(), TestCaseError> {
    match AgentRequest::parse(method, params.clone()) {
        Ok(r) => {
            prop_assert_eq!(r.method(), method);
            let _ = r.session_id();
        }
        Err(RequestError::UnknownMethod(m)) => prop_assert_eq!(m.as_str(), method),
        Err(RequestError::InvalidParams(reason)) => {
            prop_assert!(
                reason.starts_with(method) || reason.contains("sessionId"),
                "reason `{}` does not name the method",
                reason
            );
        }
    }
    Ok(())
}

/// Redaction never panics and never lets a secret assignment through.
fn check_redaction(text: &str, secret: &str) -> Result<(), TestCaseError> {
    let _ = redact::redact_text(text);
    let line = format!("{text} OPENAI_API_KEY={secret} tail");
    let out = redact::redact_text(&line);
    let leaked = format!("OPENAI_API_KEY={secret} ");
    prop_assert!(!out.contains(&leaked), "{}", out);
    let mut v = json!({"env": [{"name": "X", "value": secret}], "GH_TOKEN": secret, "t": line});
    redact::redact_value(&mut v);
    let assigned = format!("OPENAI_API_KEY={secret} ");
    prop_assert!(!v.to_string().contains(&assigned));
    prop_assert_eq!(&v["GH_TOKEN"], redact::REDACTED);
    prop_assert_eq!(&v["env"][0]["value"], redact::REDACTED);
    Ok(())
}

/// A sink that records what is routed to it.
#[derive(Default)]
struct Recorder {
    updates: Mutex<Vec<SessionUpdate>>,
    /// What the kept chat's recorder was given as plain text chunks.
    kept_chunks: Mutex<Vec<SessionUpdate>>,
    warnings: Mutex<Vec<String>>,
}

impl SessionSink for Recorder {
    fn apply_update(&self, update: SessionUpdate) {
        self.updates.lock().push(update);
    }
    fn record_text_chunk(&self, kind: &str, message_id: Option<&str>, text: &str) {
        self.kept_chunks.lock().push(SessionUpdate::Chunk {
            kind: if kind == "agent_thought_chunk" {
                crate::model::entries::EntryKind::Thought
            } else {
                crate::model::entries::EntryKind::Agent
            },
            message_id: message_id.map(str::to_owned),
            text: text.to_owned(),
        });
    }
    fn agent_request(&self, _: AgentRequest, _: agent_client_protocol::v1::Responder<Value>) {}
    fn disconnected(&self, _: &Arc<Connection>, _: &str) {}
    fn protocol_warning(&self, text: &str) {
        self.warnings.lock().push(text.to_owned());
    }
}

/// One line of a routing test and where it must end up.
#[derive(Debug, Clone)]
enum Line {
    /// An update for session `a`, `b` (routed), `c` (known, not routed yet)
    /// or `z` (never created).
    Update(char, Value),
    /// Anything else: forwarded to the SDK unless blank or a response
    /// to an id never sent.
    Other(Vec<u8>),
    /// A response to the request the connection sent (id 1).
    Answer,
    /// A response to an id never sent.
    Stray,
}

fn arb_lines() -> impl Strategy<Value = Vec<Line>> {
    let line = prop_oneof![
        4 => (prop::sample::select(vec!['a', 'b', 'c', 'z']), arb_update())
            .prop_map(|(s, u)| Line::Update(s, u)),
        2 => prop::collection::vec(any::<u8>(), 0..30)
            .prop_filter("one line", |b| !b.contains(&b'\n'))
            .prop_map(Line::Other),
        1 => arb_json().prop_map(|v| Line::Other(v.to_string().into_bytes())),
        1 => Just(Line::Other(br#"{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{}}"#.to_vec())),
        1 => Just(Line::Answer),
        1 => Just(Line::Stray),
    ];
    prop::collection::vec(line, 0..24)
}

/// Routing: each session gets exactly its updates in order (a known one
/// that is not routed yet keeps them for later), updates for a session the
/// agent never created are dropped with a warning, and the SDK gets every
/// other line in order, repaired, minus blank lines.
fn check_routing(lines: &[Line], invalid_at: Option<usize>) -> Result<(), TestCaseError> {
    block_on(async {
        let conn = Connection::for_test(1 << 20, &["a", "b", "c"]);
        let (a, b) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
        conn.route("a", a.clone()).await;
        conn.route("b", b.clone()).await;
        let mut answered = false;
        let mut input = Vec::new();
        let mut want_sdk = Vec::new();
        let mut want: [Vec<SessionUpdate>; 3] = Default::default();
        let mut stray = 0;
        for (i, line) in lines.iter().enumerate() {
            let mut bytes = match line {
                Line::Update(s, u) => {
                    let msg = json!({"jsonrpc": "2.0", "method": "session/update",
                        "params": {"sessionId": s.to_string(), "update": u}});
                    if let Some(k) = "abc".find(*s) {
                        want[k].push(update::parse_update(u));
                    }
                    msg.to_string().into_bytes()
                }
                Line::Other(b) => b.clone(),
                Line::Answer if !answered => {
                    answered = true;
                    br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec()
                }
                Line::Answer | Line::Stray => {
                    stray += 1;
                    br#"{"jsonrpc":"2.0","id":99,"result":{}}"#.to_vec()
                }
            };
            if invalid_at == Some(i) && matches!(line, Line::Other(_)) {
                bytes.push(0xff);
            }
            let fixed = framing::into_text(bytes.clone()).0.into_bytes();
            let is_update = session_update_params(&fixed).is_some();
            let skipped = matches!(classify(&fixed), Incoming::Blank);
            if !is_update && !skipped {
                want_sdk.extend_from_slice(&fixed);
                want_sdk.push(b'\n');
            }
            input.extend_from_slice(&bytes);
            input.push(b'\n');
        }
        conn.expect_response("1", "session/prompt");
        let (mut sdk_read, sdk_write) = tokio::io::duplex(1 << 22);
        route_incoming(conn.clone(), &input[..], sdk_write).await;
        let mut got_sdk = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut sdk_read, &mut got_sdk)
            .await
            .unwrap();
        prop_assert_eq!(
            String::from_utf8_lossy(&got_sdk),
            String::from_utf8_lossy(&want_sdk)
        );
        prop_assert_eq!(&*a.updates.lock(), &want[0]);
        prop_assert_eq!(&*b.updates.lock(), &want[1]);
        prop_assert_eq!(&conn.take_early("c"), &want[2]);
        prop_assert!(conn.take_early("z").is_empty());
        let z_updates = lines
            .iter()
            .filter(|l| matches!(l, Line::Update('z', _)))
            .count() as u64;
        prop_assert_eq!(conn.fault_count("unknown_session"), z_updates);
        prop_assert!(conn.fault_count("unknown_id") >= stray);
        // Warned once per kind, in every routed chat.
        let warnings = a.warnings.lock().clone();
        prop_assert_eq!(&warnings, &*b.warnings.lock());
        let mut kinds = warnings.clone();
        kinds.dedup();
        prop_assert_eq!(kinds.len(), warnings.len());
        // Both directions are in the trace (one entry per line read).
        prop_assert_eq!(conn.trace.entries().len(), lines.len().min(100));
        Ok(())
    })
}

/// A reader that hands out at most `step` bytes per read, so that lines
/// end up split across the reader's buffer in every way.
struct Trickle {
    data: Vec<u8>,
    at: usize,
    step: usize,
}

impl tokio::io::AsyncRead for Trickle {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let n = self
            .step
            .min(buf.remaining())
            .min(self.data.len() - self.at);
        let at = self.at;
        buf.put_slice(&self.data[at..at + n]);
        self.at += n;
        std::task::Poll::Ready(Ok(()))
    }
}

/// Adjacent text chunks of one message joined, as appending them does.
fn joined(updates: &[SessionUpdate]) -> Vec<SessionUpdate> {
    let mut out: Vec<SessionUpdate> = Vec::new();
    for u in updates {
        if let (
            Some(SessionUpdate::Chunk {
                kind,
                message_id,
                text,
            }),
            SessionUpdate::Chunk {
                kind: k2,
                message_id: id2,
                text: t2,
            },
        ) = (out.last_mut(), u)
        {
            if kind == k2 && message_id == id2 {
                text.push_str(t2);
                continue;
            }
        }
        out.push(u.clone());
    }
    out
}

/// One line of a text-run test: a plain text chunk (session, thought or
/// not, message id, text) or another update of the session.
#[derive(Debug, Clone)]
enum RunLine {
    Chunk(char, bool, Option<&'static str>, String),
    Other(char),
}

fn arb_run_lines() -> impl Strategy<Value = Vec<RunLine>> {
    let line = prop_oneof![
        8 => (
            prop::sample::select(vec!['a', 'b']),
            any::<bool>(),
            prop::sample::select(vec![None, Some("m1"), Some("m2")]),
            "(.|\n|\"|\\\\){0,12}",
        )
            .prop_map(|(s, thought, id, text)| RunLine::Chunk(s, thought, id, text)),
        1 => prop::sample::select(vec!['a', 'b']).prop_map(RunLine::Other),
    ];
    prop::collection::vec(line, 0..60)
}

/// Text chunks already in the reader's buffer are applied as runs (one
/// update for adjacent chunks of one message): each session's updates,
/// joined, are those of the lines one by one, joined, in the same order;
/// the kept chat records the same text; every line is traced on its own.
fn check_text_runs(lines: &[RunLine], step: usize) -> Result<(), TestCaseError> {
    block_on(async {
        let conn = Connection::for_test(1 << 20, &["a", "b"]);
        let (a, b) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
        conn.route("a", a.clone()).await;
        conn.route("b", b.clone()).await;
        let mut input = Vec::new();
        let mut want: [Vec<SessionUpdate>; 2] = Default::default();
        let mut want_kept: [Vec<SessionUpdate>; 2] = Default::default();
        for line in lines {
            let (s, u) = match line {
                RunLine::Chunk(s, thought, id, text) => {
                    let mut u = json!({
                        "sessionUpdate": if *thought { "agent_thought_chunk" } else { "agent_message_chunk" },
                        "content": {"type": "text", "text": text},
                    });
                    if let Some(id) = id {
                        u["messageId"] = json!(id);
                    }
                    (*s, u)
                }
                RunLine::Other(s) => (*s, json!({"sessionUpdate": "plan", "entries": []})),
            };
            let k = if s == 'a' { 0 } else { 1 };
            let parsed = update::parse_update(&u);
            if matches!(line, RunLine::Chunk(..)) {
                want_kept[k].push(parsed.clone());
            }
            want[k].push(parsed);
            let msg = json!({"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": s.to_string(), "update": u}});
            input.extend_from_slice(msg.to_string().as_bytes());
            input.push(b'\n');
        }
        let reader = Trickle {
            data: input,
            at: 0,
            step,
        };
        let (_sdk_read, sdk_write) = tokio::io::duplex(1 << 22);
        route_incoming(conn.clone(), reader, sdk_write).await;
        for (k, sink) in [&a, &b].into_iter().enumerate() {
            let got = sink.updates.lock().clone();
            prop_assert_eq!(joined(&got), joined(&want[k]));
            prop_assert!(got.len() <= want[k].len());
            let kept = sink.kept_chunks.lock().clone();
            prop_assert_eq!(joined(&kept), joined(&want_kept[k]));
        }
        prop_assert_eq!(
            conn.trace.entries().len() as u64 + conn.trace.dropped(),
            lines.len() as u64
        );
        Ok(())
    })
}

/// The agents' own shapes (traces recorded from Claude Code, Codex, Gemini
/// CLI, Cline and Mistral Vibe, with and without message ids): their
/// updates read at once, as when they arrive together, give each session
/// the same text and the same other updates, in order, as one by one.
#[test]
fn recorded_agents_updates_read_together_are_applied_as_one_by_one() {
    let mut merged = 0;
    for name in [
        "claude-code",
        "codex",
        "gemini-cli",
        "cline",
        "mistral-vibe",
    ] {
        let path = format!("{}/tests/traces/{name}.jsonl", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let updates: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["dir"] == "in" && e["msg"]["method"] == "session/update")
            .map(|e| e["msg"].clone())
            .collect();
        assert!(!updates.is_empty(), "{name}");
        let mut sessions: Vec<String> = updates
            .iter()
            .map(|m| m["params"]["sessionId"].as_str().unwrap().to_owned())
            .collect();
        sessions.sort();
        sessions.dedup();
        block_on(async {
            let ids: Vec<&str> = sessions.iter().map(String::as_str).collect();
            let conn = Connection::for_test(1 << 24, &ids);
            let mut sinks = Vec::new();
            for sid in &sessions {
                let sink = Arc::new(Recorder::default());
                conn.route(sid, sink.clone()).await;
                sinks.push(sink);
            }
            let mut input = Vec::new();
            for m in &updates {
                input.extend_from_slice(m.to_string().as_bytes());
                input.push(b'\n');
            }
            let (_sdk_read, sdk_write) = tokio::io::duplex(1 << 22);
            route_incoming(conn.clone(), &input[..], sdk_write).await;
            for (sid, sink) in sessions.iter().zip(&sinks) {
                let want: Vec<SessionUpdate> = updates
                    .iter()
                    .filter(|m| m["params"]["sessionId"] == sid.as_str())
                    .map(|m| update::parse_update(&m["params"]["update"]))
                    .collect();
                let got = sink.updates.lock().clone();
                assert_eq!(joined(&got), joined(&want), "{name} {sid}");
                merged += want.len() - got.len();
            }
        });
    }
    // The streamed answers (Cline, Mistral Vibe) did take the joined path.
    assert!(merged > 0);
}

#[test]
fn a_stream_of_chunks_in_one_buffer_is_applied_in_few_updates() {
    let lines: Vec<RunLine> = (0..500)
        .map(|i| RunLine::Chunk('a', false, None, format!("word{i} ")))
        .collect();
    block_on(async {
        let conn = Connection::for_test(1 << 20, &["a"]);
        let a = Arc::new(Recorder::default());
        conn.route("a", a.clone()).await;
        let mut input = Vec::new();
        for l in &lines {
            let RunLine::Chunk(_, _, _, text) = l else {
                unreachable!()
            };
            let msg = json!({"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": "a", "update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text}}}});
            input.extend_from_slice(msg.to_string().as_bytes());
            input.push(b'\n');
        }
        let (_sdk_read, sdk_write) = tokio::io::duplex(1 << 16);
        route_incoming(conn.clone(), &input[..], sdk_write).await;
        let got = a.updates.lock().clone();
        // All 500 were in the reader's buffer: one update carries them.
        assert_eq!(got.len(), 1, "{got:?}");
        let want: String = (0..500).map(|i| format!("word{i} ")).collect();
        assert!(matches!(&got[0], SessionUpdate::Chunk { text, .. } if *text == want));
        // Every line traced (the oldest pushed out past the trace's limit).
        assert_eq!(
            conn.trace.entries().len() as u64 + conn.trace.dropped(),
            500
        );
    });
}

// ---------------------------------------------------------------------------
// The short run (part of `cargo test`)
// ---------------------------------------------------------------------------

proptest! {
    #[test]
    fn framing_splits_lines_within_the_cap(
        data in prop_oneof![arb_stream(), prop::collection::vec(any::<u8>(), 0..300)],
        reader_cap in 1usize..64,
        cap in 0usize..128,
    ) {
        check_framing(&data, reader_cap, cap)?;
    }

    #[test]
    fn utf8_repair_always_gives_valid_text(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        check_utf8(&bytes)?;
    }

    #[test]
    fn lines_are_classified_without_panic(
        line in prop_oneof![
            arb_stream(),
            arb_json().prop_map(|v| v.to_string().into_bytes()),
            arb_update().prop_map(|u| json!({"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": "s", "update": u}}).to_string().into_bytes()),
        ],
    ) {
        check_classification(&line)?;
    }

    #[test]
    fn every_update_kind_parses_without_panic(update in arb_update()) {
        check_update(&update)?;
    }

    #[test]
    fn every_client_method_parses_without_panic(
        method in prop::sample::select(METHODS),
        params in arb_json(),
    ) {
        check_request(method, &params)?;
    }

    #[test]
    fn redaction_hides_secret_assignments(text in ".{0,40}", secret in "[A-Za-z0-9]{1,20}") {
        check_redaction(&text, &secret)?;
    }

    #[test]
    fn text_chunks_are_applied_in_runs_as_they_were_sent(lines in arb_run_lines(), step in 1usize..400) {
        check_text_runs(&lines, step)?;
    }

    #[test]
    fn updates_are_routed_by_session(lines in arb_lines(), invalid_at in proptest::option::of(0usize..24)) {
        check_routing(&lines, invalid_at)?;
    }
}

#[test]
fn invalid_params_name_the_field() {
    let cases = [
        ("fs/read_text_file", json!({"sessionId": "s"}), "path"),
        (
            "fs/write_text_file",
            json!({"sessionId": "s", "path": "/a"}),
            "content",
        ),
        ("terminal/create", json!({"sessionId": "s"}), "command"),
        ("terminal/output", json!({"sessionId": "s"}), "terminalId"),
        (
            "terminal/wait_for_exit",
            json!({"sessionId": "s"}),
            "terminalId",
        ),
        ("terminal/kill", json!({"sessionId": "s"}), "terminalId"),
        ("terminal/release", json!({"sessionId": "s"}), "terminalId"),
        ("fs/read_text_file", json!({"path": "/a"}), "sessionId"),
        (
            "session/request_permission",
            json!({"options": []}),
            "sessionId",
        ),
        (
            "fs/read_text_file",
            json!({"sessionId": "s", "path": 3}),
            "field `path`",
        ),
        (
            "fs/read_text_file",
            json!({"sessionId": "s", "path": "/a", "line": "ten"}),
            "field `line`",
        ),
        (
            "terminal/create",
            json!({"sessionId": "s", "command": "ls", "env": [{"name": 1}]}),
            "field `env`",
        ),
        (
            "elicitation/create",
            json!({"message": "m"}),
            "field `mode`",
        ),
        (
            "elicitation/create",
            json!({"mode": 1, "message": "m"}),
            "field `mode`",
        ),
        (
            "elicitation/create",
            json!({"mode": "form", "message": "m", "requestedSchema": "x"}),
            "field `requestedSchema`",
        ),
        (
            "elicitation/create",
            json!({"mode": "form", "message": 2, "requestedSchema": {}}),
            "field `message`",
        ),
        (
            "elicitation/create",
            json!({"mode": "form", "message": "m", "sessionId": 3, "requestedSchema": {}}),
            "field `sessionId`",
        ),
        (
            "elicitation/create",
            json!({"mode": "url", "message": "m", "elicitationId": "e", "url": 4}),
            "field `url`",
        ),
        (
            "elicitation/create",
            json!({"mode": "url", "message": "m", "elicitationId": [], "url": "https://x/"}),
            "field `elicitationId`",
        ),
    ];
    for (method, params, field) in cases {
        match AgentRequest::parse(method, params) {
            Err(RequestError::InvalidParams(reason)) => {
                assert!(
                    reason.contains(field),
                    "{method}: `{reason}` does not name `{field}`"
                )
            }
            other => panic!("{method}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------
// The long run
// ---------------------------------------------------------------------------

/// Runs every property for `ACP_FUZZ_SECS` seconds (default 10) in turn,
/// one round of 200 cases each at a time, and prints the executions.
#[test]
#[ignore]
fn fuzz_for_a_while() {
    let secs: u64 = std::env::var("ACP_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let mut counts = [0u64; 7];
    let names = [
        "framing",
        "utf8",
        "classification",
        "update",
        "request",
        "redaction",
        "routing",
    ];
    let cfg = Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    };
    let mut rounds = 0u64;
    fn must<T: std::fmt::Debug>(name: &str, r: Result<(), proptest::test_runner::TestError<T>>) {
        if let Err(e) = r {
            panic!("{name}: {e}");
        }
    }
    while std::time::Instant::now() < deadline {
        rounds += 1;
        let mut runner = TestRunner::new(cfg.clone());
        must(
            names[0],
            runner.run(&(arb_stream(), 1usize..64, 0usize..128), |(d, r, c)| {
                check_framing(&d, r, c)
            }),
        );
        must(
            names[1],
            runner.run(&prop::collection::vec(any::<u8>(), 0..64), |b| {
                check_utf8(&b)
            }),
        );
        must(
            names[2],
            runner.run(&arb_stream(), |l| check_classification(&l)),
        );
        must(names[3], runner.run(&arb_update(), |u| check_update(&u)));
        must(
            names[4],
            runner.run(&(prop::sample::select(METHODS), arb_json()), |(m, p)| {
                check_request(m, &p)
            }),
        );
        must(
            names[5],
            runner.run(&(".{0,40}", "[A-Za-z0-9]{1,20}"), |(t, s)| {
                check_redaction(&t, &s)
            }),
        );
        must(
            names[6],
            runner.run(
                &(arb_lines(), proptest::option::of(0usize..24)),
                |(l, i)| check_routing(&l, i),
            ),
        );
        for c in counts.iter_mut() {
            *c += cfg.cases as u64;
        }
    }
    let total: u64 = counts.iter().sum();
    println!("fuzz: {secs} s, {rounds} rounds, {total} executions, no failure");
    for (name, n) in names.iter().zip(counts) {
        println!("  {name}: {n}");
    }
}
