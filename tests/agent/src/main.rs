//! `acp-test-agent`: a scripted ACP agent for testing acp.nvim.
//!
//! Usage: `acp-test-agent [--scenario PATH]` (or env `ACP_TEST_SCENARIO`),
//! or `acp-test-agent --replay TRACE.jsonl` to play a trace saved with
//! `:AcpTraceSave` back as the agent side (see `replay.rs`).
//! Without a scenario every prompt is echoed. Env `ACP_TEST_AGENT_LOG` names a
//! JSONL file that records what the client sent, for tests to assert on.
//!
//! Every message is handled as untyped JSON: the agent must log exactly what
//! the client sent and send exactly what the scenario says, including
//! malformed messages, which typed schema structs would reject or normalize.

mod out;
mod replay;
mod scenario;
mod turn;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client, UntypedMessage};
use serde_json::{json, Value};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use out::{Log, Output};
use scenario::{AgentConfig, Scenario, Turn};
use turn::{Sender, Session, TurnRun};

struct State {
    agent: AgentConfig,
    /// Config options as changed by `session/set_config_option`.
    config_options: Mutex<Option<Value>>,
    authenticated: std::sync::atomic::AtomicBool,
    turns: Mutex<Vec<Turn>>,
    next_session: AtomicU64,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    out: Arc<Output>,
    log: Arc<Log>,
    /// Requests the scenario never answers (a dropped responder would make
    /// the SDK answer with an error).
    held: Mutex<Vec<Responder<Value>>>,
}

impl State {
    /// Sessions are created on first mention, so a prompt or cancel for an
    /// id the agent never issued still works instead of failing the test in
    /// an unrelated way.
    fn session(&self, id: &str) -> Arc<Session> {
        self.sessions
            .lock()
            .unwrap()
            .entry(id.to_owned())
            .or_insert_with(|| Arc::new(Session::new()))
            .clone()
    }

    /// First turn whose `match` occurs in the prompt text; `once` turns are
    /// used up. Picked in the handler, so turns follow prompt arrival order.
    fn pick_turn(&self, text: &str) -> Turn {
        let mut turns = self.turns.lock().unwrap();
        let found = turns
            .iter()
            .position(|t| t.pattern.as_deref().is_none_or(|p| text.contains(p)));
        match found {
            Some(i) if turns[i].once => turns.remove(i),
            Some(i) => turns[i].clone(),
            None => Turn::echo(text),
        }
    }

    fn initialize_result(&self) -> Value {
        let mut caps = json!({"image": false, "audio": false, "embeddedContext": true});
        for (key, value) in &self.agent.prompt_capabilities {
            caps[key] = value.clone();
        }
        let mut agent_caps =
            json!({"loadSession": self.agent.load_session, "promptCapabilities": caps});
        for (key, value) in [
            ("sessionCapabilities", &self.agent.session_capabilities),
            ("mcpCapabilities", &self.agent.mcp_capabilities),
            ("auth", &self.agent.auth_capabilities),
            ("_meta", &self.agent.meta),
        ] {
            if let Some(v) = value {
                agent_caps[key] = v.clone();
            }
        }
        let mut result = json!({
            "protocolVersion": 1,
            "agentCapabilities": agent_caps,
            "agentInfo": {
                "name": self.agent.name.as_deref().unwrap_or("acp-test-agent"),
                "version": env!("CARGO_PKG_VERSION"),
            },
            "authMethods": self.agent.auth_methods,
        });
        if let Some(meta) = &self.agent.init_meta {
            result["_meta"] = meta.clone();
        }
        result
    }
}

impl State {
    /// Modes, models and config options of a session answer.
    fn session_result(&self, mut result: Value) -> Value {
        if let Some(modes) = &self.agent.modes {
            result["modes"] = modes.clone();
        }
        if let Some(models) = &self.agent.models {
            result["models"] = models.clone();
        }
        if let Some(options) = self.config_options.lock().unwrap().as_ref() {
            result["configOptions"] = options.clone();
        }
        result
    }

    fn signed_in(&self) -> bool {
        (self.agent.auth_methods.is_empty() && self.agent.auth_error_methods.is_empty())
            || self.authenticated.load(Ordering::SeqCst)
            || self
                .agent
                .auth_file
                .as_ref()
                .is_some_and(|f| std::path::Path::new(f).exists())
    }

    /// `session/set_config_option`: the changed list, or why not.
    fn set_config_option(&self, params: &Value) -> Result<Value, String> {
        let mut options = self.config_options.lock().unwrap();
        let list = options
            .as_mut()
            .and_then(Value::as_array_mut)
            .ok_or("no config options")?;
        let option = list
            .iter_mut()
            .find(|o| o["id"] == params["configId"])
            .ok_or("unknown configId")?;
        if option["type"] == "boolean" {
            if params["type"] != "boolean" || !params["value"].is_boolean() {
                return Err("a boolean option takes {type: boolean, value: bool}".into());
            }
        } else {
            let value = params["value"].as_str().ok_or("value must be a string")?;
            let flat: Vec<&Value> = option["options"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .flat_map(|o| match o["options"].as_array() {
                            Some(group) => group.iter().collect::<Vec<_>>(),
                            None => vec![o],
                        })
                        .collect()
                })
                .unwrap_or_default();
            if !flat.iter().any(|o| o["value"] == value) {
                return Err(format!("unknown value {value}"));
            }
        }
        option["currentValue"] = params["value"].clone();
        Ok(json!({ "configOptions": list.clone() }))
    }

    /// One page of `session/list`.
    fn list_page(&self, params: &Value) -> Value {
        let size = self.agent.list_page_size.unwrap_or(usize::MAX).max(1);
        let start: usize = params["cursor"]
            .as_str()
            .and_then(|c| c.strip_prefix("page-"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let all = &self.agent.sessions;
        let end = start.saturating_add(size).min(all.len());
        let mut result = json!({ "sessions": all.get(start..end).unwrap_or_default() });
        if end < all.len() {
            result["nextCursor"] = json!(format!("page-{end}"));
        }
        result
    }
}

/// Concatenated text of the prompt's text blocks.
fn prompt_text(prompt: &Value) -> String {
    let blocks = prompt.as_array().map(Vec::as_slice).unwrap_or_default();
    blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect()
}

fn send_update(cx: &ConnectionTo<Client>, params: Value) {
    let _ = cx.send_notification(UntypedMessage {
        method: "session/update".into(),
        params,
    });
}

fn handle_request(
    state: &Arc<State>,
    request: UntypedMessage,
    responder: Responder<Value>,
    cx: ConnectionTo<Client>,
) -> Result<(), agent_client_protocol::Error> {
    let send = Sender {
        cx: cx.clone(),
        out: state.out.clone(),
    };
    let (method, params) = request.into_parts();
    match method.as_str() {
        "initialize" => {
            state
                .log
                .event(json!({"event": "initialize", "params": params}));
            if state.agent.hang_initialize && state.agent.hang_now() {
                state
                    .log
                    .event(json!({"event": "hang", "method": "initialize"}));
                state.held.lock().unwrap().push(responder);
                return Ok(());
            }
            send.respond(responder, Ok(state.initialize_result()));
        }
        "session/new" => {
            state
                .log
                .event(json!({"event": "session/new", "params": params}));
            if state.agent.hang_session_new && state.agent.hang_now() {
                state
                    .log
                    .event(json!({"event": "hang", "method": "session/new"}));
                state.held.lock().unwrap().push(responder);
                return Ok(());
            }
            if !state.signed_in() {
                let mut error =
                    agent_client_protocol::Error::new(-32000, "Authentication required");
                if !state.agent.auth_error_methods.is_empty() {
                    error = error.data(json!({"authMethods": state.agent.auth_error_methods}));
                }
                send.respond(responder, Err(error));
                return Ok(());
            }
            let id = format!(
                "sess-{}",
                state.next_session.fetch_add(1, Ordering::Relaxed) + 1
            );
            state.session(&id);
            let result = state.session_result(json!({ "sessionId": id }));
            if let Some(gate) = state.agent.session_new_after_file.clone() {
                let updates = state.agent.session_updates.clone();
                let cx2 = cx.clone();
                cx.spawn(async move {
                    while !std::path::Path::new(&gate).exists() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    send.respond(responder, Ok(result));
                    for update in &updates {
                        send_update(&cx2, json!({"sessionId": id, "update": update}));
                    }
                    Ok(())
                })?;
                return Ok(());
            }
            send.respond(responder, Ok(result));
            for update in &state.agent.session_updates {
                send_update(&cx, json!({"sessionId": id, "update": update}));
            }
        }
        "authenticate" => {
            state
                .log
                .event(json!({"event": "authenticate", "params": params}));
            if state.agent.hang_authenticate {
                state.held.lock().unwrap().push(responder);
                return Ok(());
            }
            let known = state
                .agent
                .auth_methods
                .iter()
                .any(|m| m["id"] == params["methodId"]);
            if known {
                state.authenticated.store(true, Ordering::SeqCst);
                send.respond(responder, Ok(json!({})));
            } else {
                let error = agent_client_protocol::Error::invalid_params().data("unknown methodId");
                send.respond(responder, Err(error));
            }
        }
        "session/set_mode" => {
            state
                .log
                .event(json!({"event": "set_mode", "params": params}));
            let known = state.agent.modes.as_ref().is_some_and(|m| {
                m["availableModes"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x["id"] == params["modeId"]))
            });
            if known {
                send.respond(responder, Ok(json!({})));
                // Agents confirm the switch with a session update.
                let update = json!({
                    "sessionId": params["sessionId"],
                    "update": {"sessionUpdate": "current_mode_update", "currentModeId": params["modeId"]},
                });
                send_update(&cx, update);
            } else {
                let error = agent_client_protocol::Error::invalid_params().data("unknown modeId");
                send.respond(responder, Err(error));
            }
        }
        "session/load" => {
            state
                .log
                .event(json!({"event": "session/load", "params": params}));
            let id = params["sessionId"].as_str().unwrap_or_default().to_owned();
            state.session(&id);
            let load = &state.agent.load;
            for update in &load.replay {
                send_update(&cx, json!({"sessionId": id, "update": update}));
            }
            let delay = Duration::from_millis(load.delay_ms);
            let result = match &load.error {
                Some(e) => Err(agent_client_protocol::Error::new(-32603, e.clone())),
                None => Ok(match &load.result {
                    Some(r) => state.session_result(r.clone()),
                    None => Value::Null,
                }),
            };
            let log = state.log.clone();
            cx.spawn(async move {
                let cancelled = responder.cancellation();
                tokio::select! {
                    () = tokio::time::sleep(delay) => send.respond(responder, result),
                    () = cancelled.cancelled() => {
                        log.event(json!({"event": "load_cancelled", "sessionId": id}));
                        send.respond(responder, Err(agent_client_protocol::Error::new(-32800, "Request cancelled")));
                    }
                }
                Ok(())
            })?;
        }
        "session/resume" => {
            state
                .log
                .event(json!({"event": "session/resume", "params": params}));
            let id = params["sessionId"].as_str().unwrap_or_default();
            state.session(id);
            send.respond(responder, Ok(state.session_result(json!({}))));
        }
        "session/fork" => {
            // Unstable `session/fork` (`messageId`: fork at that message,
            // inclusive): a new session; the log tells the test what came.
            state
                .log
                .event(json!({"event": "session/fork", "params": params}));
            let id = format!(
                "sess-{}",
                state.next_session.fetch_add(1, Ordering::Relaxed) + 1
            );
            state.session(&id);
            send.respond(
                responder,
                Ok(state.session_result(json!({ "sessionId": id }))),
            );
        }
        "session/list" => {
            state
                .log
                .event(json!({"event": "session/list", "params": params}));
            send.respond(responder, Ok(state.list_page(&params)));
        }
        "session/close" | "session/delete" | "logout" => {
            state.log.event(json!({"event": method, "params": params}));
            send.respond(responder, Ok(json!({})));
        }
        "session/set_config_option" => {
            state
                .log
                .event(json!({"event": "set_config_option", "params": params}));
            let result = state
                .set_config_option(&params)
                .map_err(|e| agent_client_protocol::Error::invalid_params().data(e));
            send.respond(responder, result);
        }
        "session/set_model" => {
            state
                .log
                .event(json!({"event": "set_model", "params": params}));
            let known = state.agent.models.as_ref().is_some_and(|m| {
                m["availableModels"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x["modelId"] == params["modelId"]))
            });
            if known {
                send.respond(responder, Ok(json!({})));
            } else {
                let error = agent_client_protocol::Error::invalid_params().data("unknown modelId");
                send.respond(responder, Err(error));
            }
        }
        "_session/steering" => {
            // claude-agent-acp's shape: `{sessionId, prompt, _meta?}` in,
            // `{outcome}` out; an injected message shows in the turn.
            state
                .log
                .event(json!({"event": "steering", "params": params}));
            let id = params["sessionId"].as_str().unwrap_or_default().to_owned();
            let text = prompt_text(params.get("prompt").unwrap_or(&Value::Null));
            if let Some(e) = &state.agent.steering_error {
                let error = agent_client_protocol::Error::new(-32603, e.clone());
                send.respond(responder, Err(error));
                return Ok(());
            }
            let opted =
                params.pointer("/_meta/steering/idleBehavior") == Some(&json!("promptRequired"));
            let outcome = match &state.agent.steering_outcome {
                Some(o) => o.clone(),
                None if state.session(&id).turn_running() => "injected".to_owned(),
                None if opted => "promptRequired".to_owned(),
                None => "startedNewTurn".to_owned(),
            };
            send.respond(responder, Ok(json!({ "outcome": outcome })));
            if outcome == "injected" {
                let update = json!({"sessionId": id, "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": format!("steered: {text}\n")},
                }});
                send_update(&cx, update);
            }
        }
        "session/prompt" => {
            let Some(session_id) = params["sessionId"].as_str().map(str::to_owned) else {
                let error =
                    agent_client_protocol::Error::invalid_params().data("sessionId missing");
                send.respond(responder, Err(error));
                return Ok(());
            };
            let prompt = params.get("prompt").cloned().unwrap_or(Value::Null);
            state
                .log
                .event(json!({"event": "prompt", "sessionId": session_id, "prompt": prompt}));
            let session = state.session(&session_id);
            let run = TurnRun {
                turn: state.pick_turn(&prompt_text(&prompt)),
                prompt: session.next_prompt(),
                session,
                session_id,
                log: state.log.clone(),
                send,
            };
            // Steps wait on client answers, which this dispatch loop
            // delivers: never run them inline.
            cx.spawn(async move {
                run.run(responder).await;
                Ok(())
            })?;
        }
        _ => {
            state
                .log
                .event(json!({"event": "unknown_request", "method": method, "params": params}));
            send.respond(
                responder,
                Err(agent_client_protocol::Error::method_not_found()),
            );
        }
    }
    Ok(())
}

fn handle_notification(state: &State, notification: UntypedMessage) {
    let (method, params) = notification.into_parts();
    if method == "session/cancel" {
        let session_id = params["sessionId"].as_str().unwrap_or_default();
        state
            .log
            .event(json!({"event": "cancel", "sessionId": session_id}));
        state.session(session_id).cancel();
    } else {
        state
            .log
            .event(json!({"event": "notification", "method": method, "params": params}));
    }
}

enum Mode {
    Scenario(Scenario),
    Replay(String),
}

/// `--login`: a terminal sign-in. Writes `ACP_TEST_LOGIN_FILE` (the
/// scenario's `auth_file`) and exits with `ACP_TEST_LOGIN_EXIT` (default 0).
fn login() -> ! {
    let code: i32 = std::env::var("ACP_TEST_LOGIN_EXIT")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    println!("acp-test-agent login (exit {code})");
    if code == 0 {
        if let Ok(path) = std::env::var("ACP_TEST_LOGIN_FILE") {
            let _ = std::fs::write(path, "signed in\n");
        }
    }
    std::process::exit(code);
}

fn load_scenario() -> Result<Mode, String> {
    let mut path = std::env::var("ACP_TEST_SCENARIO")
        .ok()
        .filter(|p| !p.is_empty());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--login" {
            login();
        } else if arg == "--scenario" {
            path = Some(args.next().ok_or("--scenario needs a path")?);
        } else if let Some(p) = arg.strip_prefix("--scenario=") {
            path = Some(p.to_owned());
        } else if arg == "--replay" {
            return Ok(Mode::Replay(args.next().ok_or("--replay needs a path")?));
        } else {
            return Err(format!(
                "unknown argument {arg:?} (usage: acp-test-agent [--scenario PATH | --replay TRACE])"
            ));
        }
    }
    match path {
        Some(path) => scenario::load(&path).map(Mode::Scenario),
        None => Ok(Mode::Scenario(Scenario::default())),
    }
}

/// Fault modes that act before the protocol starts.
fn start_faults(agent: &AgentConfig, log: &Log) {
    if agent.spawn_child {
        // Same process group as the agent; no stdio, so it holds no pipe
        // of the client open.
        if let Ok(child) = std::process::Command::new("sleep")
            .arg("300")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        {
            log.event(json!({"event": "child", "pid": child.id()}));
        }
    }
    if let Some(crash) = &agent.exit_at_start {
        if let Some(text) = &crash.stderr {
            eprintln!("{text}");
        }
        std::process::exit(crash.code);
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mode = load_scenario().unwrap_or_else(|e| {
        // Exit 2 so a typo in a scenario fails the test loudly.
        eprintln!("acp-test-agent: {e}");
        std::process::exit(2);
    });
    let scenario = match mode {
        Mode::Scenario(s) => s,
        Mode::Replay(path) => {
            let code = replay::run(&path, Log::from_env()).await;
            std::process::exit(code);
        }
    };
    let log = Arc::new(Log::from_env());
    start_faults(&scenario.agent, &log);
    let (out, stdout) = Output::start();
    let state = Arc::new(State {
        config_options: Mutex::new(scenario.agent.config_options.clone()),
        agent: scenario.agent,
        authenticated: std::sync::atomic::AtomicBool::new(false),
        turns: Mutex::new(scenario.turns),
        next_session: AtomicU64::new(0),
        sessions: Mutex::default(),
        out: out.clone(),
        log,
        held: Mutex::default(),
    });
    let (req_state, notif_state) = (state.clone(), state.clone());
    let result = Agent
        .v1()
        .name("acp-test-agent")
        .on_receive_request(
            async move |request: UntypedMessage, responder, cx| {
                handle_request(&req_state, request, responder, cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: UntypedMessage, _cx| {
                handle_notification(&notif_state, notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(ByteStreams::new(
            stdout.compat_write(),
            tokio::io::stdin().compat(),
        ))
        .await;
    out.drain(Duration::from_secs(2)).await;
    if let Err(e) = result {
        eprintln!("acp-test-agent: connection error: {e:?}");
        std::process::exit(1);
    }
    // Exit explicitly: hung turns and the stdin reader thread would
    // otherwise keep the runtime alive.
    std::process::exit(0);
}
