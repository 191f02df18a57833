//! The scenario file format: which turns the agent plays and how.
//!
//! Scenario files are written by hand in tests, so the format is strict where
//! a typo would silently change a test (step, turn and agent keys) and lenient
//! at the top level (extra keys are ignored, so a file can carry notes).

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Default, Deserialize)]
pub struct Scenario {
    #[serde(default)]
    pub agent: AgentConfig,
    /// Turns are tried in order; the first whose `match` fits the prompt wins.
    /// With no turns at all every prompt is echoed.
    #[serde(default)]
    pub turns: Vec<Turn>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub name: Option<String>,
    /// Overlaid on the defaults (image false, audio false, embeddedContext
    /// true) and sent verbatim, so tests can advertise odd capabilities.
    #[serde(default)]
    pub prompt_capabilities: Map<String, Value>,
    /// Session modes returned by `session/new` (`{currentModeId,
    /// availableModes}`); `session/set_mode` then switches among them.
    #[serde(default)]
    pub modes: Option<Value>,
    /// Advertised `authMethods`; when non-empty, `session/new` fails with
    /// -32000 (auth required) until `authenticate` names one of them.
    #[serde(default)]
    pub auth_methods: Vec<Value>,
    /// Sign-in methods sent only in the `data.authMethods` of the -32000
    /// error (Kimi CLI's shape), not in `initialize`; when non-empty,
    /// `session/new` fails with them until a sign-in.
    #[serde(default)]
    pub auth_error_methods: Vec<Value>,
    /// `update` objects sent right after the `session/new` answer, with no
    /// delay (real agents send commands, mode and config options this way,
    /// often in the same write as the answer).
    #[serde(default)]
    pub session_updates: Vec<Value>,
    /// `agentCapabilities.loadSession`.
    #[serde(default)]
    pub load_session: bool,
    /// `agentCapabilities.sessionCapabilities`, verbatim (`list`, `resume`,
    /// `close`, `delete`, `additionalDirectories`).
    #[serde(default)]
    pub session_capabilities: Option<Value>,
    /// `agentCapabilities.mcpCapabilities`, verbatim.
    #[serde(default)]
    pub mcp_capabilities: Option<Value>,
    /// `agentCapabilities.auth`, verbatim (e.g. `{"logout": {}}`).
    #[serde(default)]
    pub auth_capabilities: Option<Value>,
    /// `agentCapabilities._meta`, verbatim (e.g. prompt queueing).
    #[serde(default)]
    pub meta: Option<Value>,
    /// The `_meta` of the `initialize` answer itself, verbatim (where
    /// claude-agent-acp advertises `steering`).
    #[serde(default)]
    pub init_meta: Option<Value>,
    /// `_session/steering`: answer with this outcome instead of the one the
    /// session's state gives (`injected` while a turn runs, else
    /// `promptRequired` when the client opts in, else `startedNewTurn`).
    #[serde(default)]
    pub steering_outcome: Option<String>,
    /// `_session/steering`: fail with this message (-32603).
    #[serde(default)]
    pub steering_error: Option<String>,
    /// Legacy `models` of the session answers; `session/set_model` picks
    /// among `availableModels`.
    #[serde(default)]
    pub models: Option<Value>,
    /// `configOptions` of the session answers; `session/set_config_option`
    /// changes their `currentValue` and answers the whole list.
    #[serde(default)]
    pub config_options: Option<Value>,
    /// Sessions `session/list` returns, `list_page_size` per page (with a
    /// `nextCursor` while more remain).
    #[serde(default)]
    pub sessions: Vec<Value>,
    #[serde(default)]
    pub list_page_size: Option<usize>,
    /// How `session/load` behaves.
    #[serde(default)]
    pub load: LoadConfig,
    /// When set, `session/new` also succeeds once this file exists (written
    /// by a terminal sign-in: `acp-test-agent --login`).
    #[serde(default)]
    pub auth_file: Option<String>,
    /// Fault modes (all off by default).
    /// Exit at start, before reading anything (a broken install).
    #[serde(default)]
    pub exit_at_start: Option<Crash>,
    /// Never answer `initialize` / `session/new`.
    #[serde(default)]
    pub hang_initialize: bool,
    #[serde(default)]
    pub hang_session_new: bool,
    /// Answer `session/new` only once this file exists (an agent still
    /// starting up, for as long as the test wants).
    #[serde(default)]
    pub session_new_after_file: Option<String>,
    /// Never answer `authenticate` (Kimi CLI, asked with a method it runs
    /// in a terminal).
    #[serde(default)]
    pub hang_authenticate: bool,
    /// With a hang: hang only while this file does not exist (the hang
    /// creates it), so the client's retry gets an answer.
    #[serde(default)]
    pub hang_once_file: Option<String>,
    /// Start a `sleep` in the agent's process group that outlives the
    /// agent unless the client kills the group (its pid is logged).
    #[serde(default)]
    pub spawn_child: bool,
}

impl AgentConfig {
    /// Whether a scripted hang applies now (see `hang_once_file`).
    pub fn hang_now(&self) -> bool {
        match &self.hang_once_file {
            None => true,
            Some(path) => std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .is_ok(),
        }
    }
}

/// `session/load`: the history replayed as updates, then the answer after
/// `delay_ms` (cut short by `$/cancel_request`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadConfig {
    #[serde(default)]
    pub replay: Vec<Value>,
    #[serde(default)]
    pub delay_ms: u64,
    /// The answer (default `null`, as some agents send).
    #[serde(default)]
    pub result: Option<Value>,
    /// Answer with this error instead.
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Substring of the prompt's text; absent means "matches anything".
    #[serde(default, rename = "match")]
    pub pattern: Option<String>,
    /// Remove the turn once it has been used.
    #[serde(default)]
    pub once: bool,
    /// Keep running the steps after session/cancel, answer "cancelled" at the
    /// end (lets tests check that a client drops late updates).
    #[serde(default)]
    pub ignore_cancel: bool,
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Steps played after the prompt was answered, while no turn runs
    /// (updates between turns).
    #[serde(default)]
    pub after: Vec<Step>,
    /// `usage` of the prompt answer (token counts).
    #[serde(default)]
    pub usage: Option<Value>,
    /// Free-form documentation for the scenario author; ignored.
    #[serde(default)]
    #[allow(dead_code)]
    pub comment: Option<Value>,
}

impl Turn {
    /// The turn played when no scripted turn matches.
    pub fn echo(prompt_text: &str) -> Turn {
        Turn {
            steps: vec![Step::Chunks {
                kind: ChunkKind::Message,
                text: format!("echo: {prompt_text}"),
                chunk_size: None,
                delay_ms: 0,
            }],
            ..Turn::default()
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum ChunkKind {
    #[default]
    #[serde(rename = "agent_message")]
    Message,
    #[serde(rename = "agent_thought")]
    Thought,
}

impl ChunkKind {
    pub fn session_update(self) -> &'static str {
        match self {
            ChunkKind::Message => "agent_message_chunk",
            ChunkKind::Thought => "agent_thought_chunk",
        }
    }
}

/// One scripted action. In JSON a step is an object with exactly one of the
/// step keys (plus options that belong to that key, e.g. `chunk_size`).
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "Value")]
pub enum Step {
    /// Any step with `"if_chosen": "<optionId>"`: played only when the last
    /// permission request of the turn was answered with that option (a
    /// demo's edit is written only when the user allowed it).
    IfChosen {
        option: String,
        step: Box<Step>,
    },
    /// `message` / `thought`: text streamed as chunks.
    Chunks {
        kind: ChunkKind,
        text: String,
        chunk_size: Option<usize>,
        delay_ms: u64,
    },
    Flood(Flood),
    Big {
        size: usize,
    },
    /// Raw `update` object, sent verbatim (may be deliberately malformed).
    Update(Value),
    Notify(Notify),
    Request(Request),
    Sleep(u64),
    Crash(Crash),
    Hang,
    WaitCancel,
    Error(ErrorSpec),
    Stop(String),
    Stderr(String),
    /// Bytes written to stdout as they are (not through the SDK).
    Raw(Raw),
}

/// A raw line: `text` with `{session}` replaced by the session id, `{pad}`
/// by `pad` bytes of `x`, and each `invalid` mark by the byte 0xFF; a
/// newline is added unless `newline` is false.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Raw {
    pub text: String,
    #[serde(default)]
    pub invalid: Option<String>,
    #[serde(default)]
    pub pad: usize,
    #[serde(default = "yes")]
    pub newline: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flood {
    pub count: u64,
    pub size: usize,
    #[serde(default)]
    pub kind: ChunkKind,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Big {
    size: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notify {
    pub method: String,
    #[serde(default)]
    pub params: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub method: String,
    #[serde(default)]
    pub params: Option<Value>,
    /// Partial match against the result.
    #[serde(default)]
    pub expect: Option<Value>,
    /// Partial match against the error object `{code, message, data}`.
    #[serde(default)]
    pub expect_error: Option<Value>,
    /// Send and go on with the next step without waiting for the answer
    /// (it is still logged and checked when it arrives). Lets a scenario
    /// release a terminal while its `wait_for_exit` is pending.
    #[serde(default)]
    pub background: bool,
    /// Withdraw the request (`$/cancel_request`) this long after sending
    /// it, unless it is answered by then.
    #[serde(default)]
    pub cancel_after_ms: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Crash {
    #[serde(default = "default_crash_code")]
    pub code: i32,
    #[serde(default)]
    pub stderr: Option<String>,
}

fn default_crash_code() -> i32 {
    1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorSpec {
    pub code: i32,
    #[serde(default = "default_error_message")]
    pub message: String,
    #[serde(default)]
    pub data: Option<Value>,
}

fn default_error_message() -> String {
    "scripted error".to_owned()
}

const STEP_KEYS: &[&str] = &[
    "message",
    "thought",
    "flood",
    "big",
    "update",
    "notify",
    "request",
    "sleep_ms",
    "crash",
    "hang",
    "wait_cancel",
    "error",
    "stop",
    "stderr",
    "raw",
];

impl TryFrom<Value> for Step {
    type Error = String;

    fn try_from(value: Value) -> Result<Step, String> {
        let Value::Object(mut obj) = value else {
            return Err(format!("a step must be a JSON object, got {value}"));
        };
        let if_chosen = match obj.remove("if_chosen") {
            None => None,
            Some(Value::String(option)) => Some(option),
            Some(v) => return Err(format!("`if_chosen` must be an option id, got {v}")),
        };
        let kinds: Vec<String> = obj
            .keys()
            .filter(|k| STEP_KEYS.contains(&k.as_str()))
            .cloned()
            .collect();
        let key = match kinds.as_slice() {
            [key] => key.clone(),
            [] => {
                let keys: Vec<&String> = obj.keys().collect();
                return Err(format!(
                    "unknown step {keys:?}: a step needs exactly one of {STEP_KEYS:?}"
                ));
            }
            _ => return Err(format!("a step has more than one step key: {kinds:?}")),
        };
        let main = obj.remove(&key).unwrap_or(Value::Null);
        let options: &[&str] = match key.as_str() {
            "message" | "thought" => &["chunk_size", "delay_ms"],
            _ => &[],
        };
        if let Some(extra) = obj.keys().find(|k| !options.contains(&k.as_str())) {
            return Err(format!("unknown key `{extra}` in a `{key}` step"));
        }
        let ctx = |e: serde_json::Error| format!("`{key}` step: {e}");
        let step = match key.as_str() {
            "message" | "thought" => {
                let chunk_size = match obj.get("chunk_size") {
                    None | Some(Value::Null) => None,
                    Some(v) => match v.as_u64() {
                        Some(n) if n > 0 => Some(n as usize),
                        _ => {
                            return Err(format!("`chunk_size` must be a positive integer, got {v}"))
                        }
                    },
                };
                Step::Chunks {
                    kind: if key == "message" {
                        ChunkKind::Message
                    } else {
                        ChunkKind::Thought
                    },
                    text: serde_json::from_value(main).map_err(ctx)?,
                    chunk_size,
                    delay_ms: uint(obj.get("delay_ms"), "delay_ms")?,
                }
            }
            "flood" => {
                let flood: Flood = serde_json::from_value(main).map_err(ctx)?;
                // Each chunk is "NNNNNN:" + filler + "\n", which needs 8 bytes.
                if flood.size < 8 {
                    return Err(format!(
                        "`flood.size` must be at least 8, got {}",
                        flood.size
                    ));
                }
                Step::Flood(flood)
            }
            "big" => Step::Big {
                size: serde_json::from_value::<Big>(main).map_err(ctx)?.size,
            },
            "update" => Step::Update(main),
            "notify" => Step::Notify(serde_json::from_value(main).map_err(ctx)?),
            "request" => Step::Request(serde_json::from_value(main).map_err(ctx)?),
            "sleep_ms" => Step::Sleep(uint(Some(&main), "sleep_ms")?),
            "crash" => Step::Crash(serde_json::from_value(main).map_err(ctx)?),
            "hang" => flag(main, "hang", Step::Hang)?,
            "wait_cancel" => flag(main, "wait_cancel", Step::WaitCancel)?,
            "error" => Step::Error(serde_json::from_value(main).map_err(ctx)?),
            "stop" => Step::Stop(serde_json::from_value(main).map_err(ctx)?),
            "stderr" => Step::Stderr(serde_json::from_value(main).map_err(ctx)?),
            "raw" => Step::Raw(serde_json::from_value(main).map_err(ctx)?),
            _ => unreachable!("STEP_KEYS and this match list the same keys"),
        };
        Ok(match if_chosen {
            Some(option) => Step::IfChosen {
                option,
                step: Box::new(step),
            },
            None => step,
        })
    }
}

fn uint(value: Option<&Value>, name: &str) -> Result<u64, String> {
    match value {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("`{name}` must be a non-negative integer, got {v}")),
    }
}

/// `hang` and `wait_cancel` only make sense as `true`; anything else is
/// probably a mistake in the scenario.
fn flag(value: Value, name: &str, step: Step) -> Result<Step, String> {
    match value {
        Value::Bool(true) => Ok(step),
        v => Err(format!("`{name}` must be true, got {v}")),
    }
}

pub fn load(path: &str) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("invalid scenario {path}: {e}"))
}
