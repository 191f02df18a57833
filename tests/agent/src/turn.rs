//! Running one prompt turn: executing the scripted steps, then answering the
//! `session/prompt` request.
//!
//! A turn runs in a task spawned off the SDK's dispatch loop, because steps
//! wait for client answers (`request`) and the dispatch loop is what delivers
//! them. Everything goes out through the SDK connection in program order, so
//! the prompt response always follows the turn's updates on the wire.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, UntypedMessage};
use serde_json::{json, Value};
use tokio::sync::{watch, OwnedMutexGuard};

use crate::out::{Log, Output};
use crate::scenario::{ChunkKind, Request, Step, Turn};

/// Per-session state shared by the handlers and the running turn.
///
/// Cancellation is tracked by prompt number rather than with a flag that a
/// turn clears when it starts: a `session/cancel` cancels every prompt
/// received before it and none received after it, even when the cancel is
/// dispatched before the spawned turn got to run, or while an earlier turn
/// still holds the session.
pub struct Session {
    prompts: AtomicU64,
    cancelled_upto: watch::Sender<u64>,
    /// Held for the whole turn, so that two prompts on one session do not
    /// interleave their updates.
    turn_lock: Arc<tokio::sync::Mutex<()>>,
}

impl Session {
    pub fn new() -> Session {
        Session {
            prompts: AtomicU64::new(0),
            cancelled_upto: watch::Sender::new(0),
            turn_lock: Arc::default(),
        }
    }

    /// A turn holds the session now (a steering message goes into it).
    pub fn turn_running(&self) -> bool {
        self.turn_lock.try_lock().is_err()
    }

    /// Number a new prompt (called in the dispatch loop, in wire order).
    pub fn next_prompt(&self) -> u64 {
        self.prompts.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub fn cancel(&self) {
        let upto = self.prompts.load(Ordering::SeqCst);
        self.cancelled_upto.send_if_modified(|c| {
            let raise = upto > *c;
            *c = (*c).max(upto);
            raise
        });
    }

    fn is_cancelled(&self, prompt: u64) -> bool {
        *self.cancelled_upto.borrow() >= prompt
    }

    async fn cancelled(&self, prompt: u64) {
        let _ = self
            .cancelled_upto
            .subscribe()
            .wait_for(|c| *c >= prompt)
            .await;
    }
}

/// Sends messages to the client, counting lines for back-pressure.
#[derive(Clone)]
pub struct Sender {
    pub cx: ConnectionTo<Client>,
    pub out: Arc<Output>,
}

impl Sender {
    /// Send a raw notification. The params are moved into the message as-is,
    /// never round-tripped through the typed schema, so malformed updates
    /// reach the client exactly as scripted.
    pub async fn notify(&self, method: &str, params: Value) {
        self.out.throttle().await;
        // A send only fails once the connection is closing; the turn's
        // remaining output has nowhere to go then, so it is dropped.
        if self
            .cx
            .send_notification(UntypedMessage {
                method: method.to_owned(),
                params,
            })
            .is_ok()
        {
            self.out.note_sent();
        }
    }

    pub fn respond(
        &self,
        responder: Responder<Value>,
        result: Result<Value, agent_client_protocol::Error>,
    ) {
        if responder.respond_with_result(result).is_ok() {
            self.out.note_sent();
        }
    }
}

/// How a turn ends.
enum End {
    Stop(String),
    Error(agent_client_protocol::Error),
}

pub struct TurnRun {
    pub send: Sender,
    pub log: Arc<Log>,
    pub session_id: String,
    pub session: Arc<Session>,
    /// This prompt's number in the session (see `Session`).
    pub prompt: u64,
    pub turn: Turn,
}

impl TurnRun {
    /// Play the turn and answer the prompt. Never returns for a `hang` step.
    pub async fn run(self, responder: Responder<Value>) {
        let guard = self.session.turn_lock.clone().lock_owned().await;
        let mut exec = Exec {
            run: &self,
            guard: Some(guard),
            cancel_seen: false,
            chosen: None,
        };
        let end = exec.steps().await;
        let result = match end {
            End::Stop(reason) => {
                self.log.event(json!({"event": "turn_end", "sessionId": self.session_id, "stopReason": reason}));
                let mut result = json!({ "stopReason": reason });
                if let Some(usage) = &self.turn.usage {
                    result["usage"] = usage.clone();
                }
                Ok(result)
            }
            End::Error(error) => {
                self.log.event(
                    json!({"event": "turn_end", "sessionId": self.session_id, "error": error}),
                );
                Err(error)
            }
        };
        self.send.respond(responder, result);
        // The session lock is released here, after the response was queued.
        drop(exec.guard);
        if !self.turn.after.is_empty() {
            let mut after = Exec {
                run: &self,
                guard: None,
                cancel_seen: false,
                chosen: None,
            };
            for step in &self.turn.after {
                if after.step(step).await.is_err() {
                    break;
                }
            }
        }
    }
}

struct Exec<'a> {
    run: &'a TurnRun,
    guard: Option<OwnedMutexGuard<()>>,
    /// Set once a cancel was observed; with `ignore_cancel` it turns the
    /// final stop reason into "cancelled".
    cancel_seen: bool,
    /// The option the client chose in the turn's last permission answer.
    chosen: Option<String>,
}

/// `Err` ends the turn early.
type Flow = Result<(), End>;

fn cancelled() -> End {
    End::Stop("cancelled".to_owned())
}

impl Exec<'_> {
    async fn steps(&mut self) -> End {
        let run = self.run;
        for step in &run.turn.steps {
            if let Err(end) = self.step(step).await {
                return end;
            }
        }
        if self.cancel_seen || self.run.session.is_cancelled(self.run.prompt) {
            cancelled()
        } else {
            End::Stop("end_turn".to_owned())
        }
    }

    /// Whether the turn must stop now because of a cancel.
    fn check_cancel(&mut self) -> Flow {
        if self.run.session.is_cancelled(self.run.prompt) {
            self.cancel_seen = true;
            if !self.run.turn.ignore_cancel {
                return Err(cancelled());
            }
        }
        Ok(())
    }

    /// Sleep, cut short by a cancel unless the turn ignores cancels.
    async fn sleep(&mut self, ms: u64) -> Flow {
        let sleep = tokio::time::sleep(Duration::from_millis(ms));
        if self.run.turn.ignore_cancel {
            sleep.await;
        } else {
            tokio::select! {
                () = sleep => {}
                () = self.run.session.cancelled(self.run.prompt) => {}
            }
        }
        self.check_cancel()
    }

    async fn step(&mut self, step: &Step) -> Flow {
        self.check_cancel()?;
        match step {
            Step::IfChosen { option, step } => {
                if self.chosen.as_deref() == Some(option.as_str()) {
                    Box::pin(self.step(step)).await?;
                }
            }
            Step::Chunks {
                kind,
                text,
                chunk_size,
                delay_ms,
            } => {
                let chars: Vec<char> = text.chars().collect();
                let size = chunk_size.unwrap_or(chars.len()).max(1);
                for (i, piece) in chars.chunks(size).enumerate() {
                    if i > 0 && *delay_ms > 0 {
                        self.sleep(*delay_ms).await?;
                    }
                    self.check_cancel()?;
                    self.chunk(*kind, piece.iter().collect()).await;
                }
                if chars.is_empty() {
                    // An empty message is still one (empty) chunk.
                    self.chunk(*kind, String::new()).await;
                }
            }
            Step::Flood(flood) => {
                // Pre-formatted lines written straight to stdout: the flood
                // measures the client, so the agent must not be the limit.
                let filler = "x".repeat(flood.size - 8);
                let out = &self.run.send.out;
                out.drain(Duration::from_secs(5)).await;
                let head = format!(
                    r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":{},"update":{{"sessionUpdate":"{}","content":{{"type":"text","text":""#,
                    json!(self.run.session_id),
                    flood.kind.session_update()
                );
                let mut batch = Vec::with_capacity(64 * 1024);
                let mut lines = 0;
                for i in 0..flood.count {
                    if i % 256 == 0 {
                        self.check_cancel()?;
                    }
                    batch.extend_from_slice(head.as_bytes());
                    batch.extend_from_slice(format!("{i:06}:{filler}\\n\"}}}}}}}}\n").as_bytes());
                    lines += 1;
                    if batch.len() >= 32 * 1024 {
                        out.write_raw(&batch, lines).await;
                        batch.clear();
                        lines = 0;
                    }
                }
                if !batch.is_empty() {
                    out.write_raw(&batch, lines).await;
                }
            }
            Step::Big { size } => {
                let text: String = (1..=*size)
                    .map(|i| if i % 80 == 0 { '\n' } else { 'y' })
                    .collect();
                self.chunk(ChunkKind::Message, text).await;
            }
            Step::Update(update) => self.update(update.clone()).await,
            Step::Notify(n) => self.run.send.notify(&n.method, n.params.clone()).await,
            Step::Request(request) => {
                if let Some(option) = self.request(request).await {
                    self.chosen = Some(option);
                }
            }
            Step::Sleep(ms) => self.sleep(*ms).await?,
            Step::Crash(crash) => {
                // Let the updates before the crash reach the client, so tests
                // see a deterministic transcript up to the crash point.
                self.run.send.out.drain(Duration::from_secs(2)).await;
                if let Some(text) = &crash.stderr {
                    use std::io::Write;
                    let mut stderr = std::io::stderr().lock();
                    let _ = writeln!(stderr, "{text}");
                    let _ = stderr.flush();
                }
                std::process::exit(crash.code);
            }
            Step::Hang => {
                // Let later prompts on this session run; this one stays
                // unanswered (the responder is kept alive, since dropping it
                // would make the SDK answer with an error).
                drop(self.guard.take());
                std::future::pending::<()>().await;
            }
            Step::WaitCancel => {
                self.run.session.cancelled(self.run.prompt).await;
                self.cancel_seen = true;
                if !self.run.turn.ignore_cancel {
                    return Err(cancelled());
                }
            }
            Step::Error(e) => {
                let mut error = agent_client_protocol::Error::new(e.code, e.message.clone());
                error.data = e.data.clone();
                return Err(End::Error(error));
            }
            Step::Stop(reason) => {
                let reason = if self.cancel_seen {
                    "cancelled"
                } else {
                    reason.as_str()
                };
                return Err(End::Stop(reason.to_owned()));
            }
            Step::Stderr(text) => eprintln!("{text}"),
            Step::Raw(raw) => {
                let out = &self.run.send.out;
                // Behind everything queued before it, in order.
                out.drain(Duration::from_secs(5)).await;
                let mut text = raw.text.replace("{session}", &self.run.session_id);
                if raw.pad > 0 {
                    text = text.replace("{pad}", &"x".repeat(raw.pad));
                }
                let mut bytes = text.into_bytes();
                if let Some(mark) = raw.invalid.as_deref().filter(|m| !m.is_empty()) {
                    bytes = replace_bytes(&bytes, mark.as_bytes(), &[0xff]);
                }
                if raw.newline {
                    bytes.push(b'\n');
                }
                // Written in pieces so a huge line does not wait for room
                // it can never get.
                for piece in bytes.chunks(128 * 1024) {
                    let n = piece.iter().filter(|&&b| b == b'\n').count() as u64;
                    out.write_raw(piece, n).await;
                }
                out.drain(Duration::from_secs(30)).await;
            }
        }
        Ok(())
    }

    async fn update(&self, update: Value) {
        let params = json!({ "sessionId": self.run.session_id, "update": update });
        self.run.send.notify("session/update", params).await;
    }

    async fn chunk(&self, kind: ChunkKind, text: String) {
        self.update(json!({
            "sessionUpdate": kind.session_update(),
            "content": { "type": "text", "text": text },
        }))
        .await;
    }

    /// Sends a scripted request; returns the option a permission answer
    /// chose.
    async fn request(&self, request: &Request) -> Option<String> {
        let mut params = request.params.clone().unwrap_or_else(|| json!({}));
        if let Value::Object(map) = &mut params {
            map.entry("sessionId")
                .or_insert_with(|| json!(self.run.session_id));
        }
        let send = &self.run.send;
        send.out.throttle().await;
        let sent = send.cx.send_request(UntypedMessage {
            method: request.method.clone(),
            params,
        });
        send.out.note_sent();
        let log = self.run.log.clone();
        if let Some(ms) = request.cancel_after_ms {
            let handle = sent.cancellation_handle();
            let (log, method) = (log.clone(), request.method.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                log.event(json!({"event": "cancel_request", "method": method}));
                let _ = handle.cancel();
            });
        }
        let checked = request.expect.is_some() || request.expect_error.is_some();
        if request.background {
            let request = request.clone();
            tokio::spawn(async move {
                let started = std::time::Instant::now();
                let answer = sent.block_task().await;
                if let Some(detail) = check_answer(&log, &request, &answer, started) {
                    log.event(json!({"event": "check_failed", "method": request.method, "detail": detail}));
                } else if checked {
                    log.event(json!({"event": "check_ok", "method": request.method}));
                }
            });
            return None;
        }
        let started = std::time::Instant::now();
        let answer = sent.block_task().await;
        let chosen = answer
            .as_ref()
            .ok()
            .and_then(|v| v.pointer("/outcome/optionId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        match check_answer(&log, request, &answer, started) {
            None if checked => log.event(json!({"event": "check_ok", "method": request.method})),
            None => {}
            Some(detail) => {
                log.event(
                    json!({"event": "check_failed", "method": request.method, "detail": detail}),
                );
                // Also visible in the client's transcript, for tests that
                // only look at the buffer.
                self.chunk(ChunkKind::Message, format!("CHECK FAILED: {detail}\n"))
                    .await;
            }
        }
        chosen
    }
}

fn replace_bytes(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// Logs the client's answer to a request (with the round trip as the agent
/// sees it, used by the fs10mb benchmark) and checks it against the
/// scenario's expectation; returns the mismatch, if any.
fn check_answer(
    log: &Log,
    request: &Request,
    answer: &Result<Value, agent_client_protocol::Error>,
    started: std::time::Instant,
) -> Option<String> {
    let method = &request.method;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    match answer {
        Ok(result) => {
            log.event(json!({"event": "client_response", "method": method, "result": result, "elapsed_ms": elapsed_ms}));
            match (&request.expect, &request.expect_error) {
                (_, Some(_)) => Some(format!("{method}: expected an error, got result {result}")),
                (Some(expect), None) => partial_match(expect, result, "result").err(),
                (None, None) => None,
            }
        }
        Err(error) => {
            let error = serde_json::to_value(error).unwrap_or(Value::Null);
            log.event(json!({"event": "client_response", "method": method, "error": error}));
            match (&request.expect, &request.expect_error) {
                (_, Some(expect)) => partial_match(expect, &error, "error").err(),
                (Some(_), None) => Some(format!("{method}: expected a result, got error {error}")),
                (None, None) => None,
            }
        }
    }
}

/// Objects match when every expected key matches recursively (extra keys in
/// `actual` are fine); everything else, arrays included, must be equal.
fn partial_match(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(want), Value::Object(have)) => {
            for (key, want_value) in want {
                let sub = format!("{path}.{key}");
                match have.get(key) {
                    Some(have_value) => partial_match(want_value, have_value, &sub)?,
                    None => return Err(format!("{sub}: missing, expected {want_value}")),
                }
            }
            Ok(())
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!("{path}: expected {expected}, got {actual}")),
    }
}
