//! What the agent sends, classified and typed before anyone acts on it: a
//! line as a `session/update`, a response or something malformed, and each
//! request of the agent as an `AgentRequest` (fs and terminal params with
//! the protocol crate's types; the permission request parsed leniently by
//! `model::update`).

use agent_client_protocol::v1::schema as v1s;
use serde_json::Value;

use crate::model::update::{field, parse_permission_request, str_field, PermissionRequest};

/// A line from the agent other than a `session/update`, as far as the
/// client's bookkeeping cares.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// Only whitespace: tolerated between messages, not passed on.
    Blank,
    NotJson,
    /// JSON, but neither a request, a notification nor a response.
    NotJsonRpc,
    /// A response to request `id` (JSON text) with its `result`, if any.
    Response {
        id: String,
        result: Option<Value>,
    },
    /// A request or a notification (the SDK answers or ignores it).
    Message,
}

pub fn classify(line: &[u8]) -> Incoming {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Incoming::Blank;
    }
    let Ok(msg) = serde_json::from_slice::<Value>(line) else {
        return Incoming::NotJson;
    };
    let Some(obj) = msg.as_object() else {
        return Incoming::NotJsonRpc;
    };
    if obj.get("method").is_some_and(Value::is_string) {
        return Incoming::Message;
    }
    match obj.get("id") {
        Some(id) if obj.contains_key("result") || obj.contains_key("error") => Incoming::Response {
            id: id.to_string(),
            result: obj.get("result").cloned(),
        },
        _ => Incoming::NotJsonRpc,
    }
}

/// The params of a `session/update` notification (no `id`), else None.
pub fn session_update_params(line: &[u8]) -> Option<Value> {
    // Cheap pre-check before the full parse.
    if !line.windows(16).any(|w| w == b"\"session/update\"") {
        return None;
    }
    let mut msg: Value = serde_json::from_slice(line).ok()?;
    if msg.get("method").and_then(Value::as_str) != Some("session/update")
        || msg.get("id").is_some()
    {
        return None;
    }
    msg.get_mut("params").map(Value::take)
}

/// A request from the agent to this client, typed. fs and terminal params
/// use the protocol crate's types (a malformed one is answered -32602 with
/// serde's reason); the permission request is parsed leniently.
#[derive(Debug, Clone)]
pub enum AgentRequest {
    Permission {
        session_id: String,
        request: PermissionRequest,
        /// The params as sent, for the view's raw display.
        raw: Value,
    },
    ReadTextFile(v1s::ReadTextFileRequest),
    WriteTextFile(v1s::WriteTextFileRequest),
    CreateTerminal(v1s::CreateTerminalRequest),
    TerminalOutput(v1s::TerminalOutputRequest),
    WaitForTerminalExit(v1s::WaitForTerminalExitRequest),
    KillTerminal(v1s::KillTerminalRequest),
    ReleaseTerminal(v1s::ReleaseTerminalRequest),
    /// `elicitation/create`: a form or a URL for the user. Session-scoped
    /// ones carry the session; request-scoped ones (sign-in, before any
    /// session) have none.
    Elicitation {
        session_id: Option<String>,
        /// The params as sent (the view renders the schema).
        raw: Value,
    },
}

/// Why a request could not be parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    /// Not a method this client serves (-32601).
    UnknownMethod(String),
    /// Params that do not fit the method (-32602).
    InvalidParams(String),
}

impl AgentRequest {
    pub fn parse(method: &str, params: Value) -> Result<Self, RequestError> {
        fn typed<T: serde::de::DeserializeOwned>(
            method: &str,
            params: Value,
        ) -> Result<T, RequestError> {
            match serde_json::from_value::<T>(params.clone()) {
                Ok(v) => Ok(v),
                Err(e) => {
                    let e = e.to_string();
                    Err(RequestError::InvalidParams(
                        match culprit::<T>(&params, &e) {
                            Some(field) => format!("{method}: field `{field}`: {e}"),
                            None => format!("{method}: {e}"),
                        },
                    ))
                }
            }
        }
        /// The top-level field a type error is about (serde's message names
        /// missing fields but not mistyped ones): the first field whose
        /// removal changes the error.
        fn culprit<T: serde::de::DeserializeOwned>(params: &Value, error: &str) -> Option<String> {
            if error.contains("missing field") {
                return None;
            }
            let obj = params.as_object()?;
            obj.keys().take(32).find_map(|key| {
                let mut without = obj.clone();
                without.remove(key);
                match serde_json::from_value::<T>(Value::Object(without)) {
                    Ok(_) => Some(key.clone()),
                    Err(e) if e.to_string() != error => Some(key.clone()),
                    Err(_) => None,
                }
            })
        }
        Ok(match method {
            "session/request_permission" => {
                let session_id = str_field(&params, "sessionId")
                    .ok_or_else(|| RequestError::InvalidParams("missing sessionId".into()))?;
                AgentRequest::Permission {
                    session_id,
                    request: parse_permission_request(&params),
                    raw: params,
                }
            }
            "fs/read_text_file" => AgentRequest::ReadTextFile(typed(method, params)?),
            "fs/write_text_file" => AgentRequest::WriteTextFile(typed(method, params)?),
            "terminal/create" => AgentRequest::CreateTerminal(typed(method, params)?),
            "terminal/output" => AgentRequest::TerminalOutput(typed(method, params)?),
            "terminal/wait_for_exit" => AgentRequest::WaitForTerminalExit(typed(method, params)?),
            "terminal/kill" => AgentRequest::KillTerminal(typed(method, params)?),
            "terminal/release" => AgentRequest::ReleaseTerminal(typed(method, params)?),
            "elicitation/create" => {
                // The raw params go to the view, which trusts these types: a
                // missing or wrong-typed field is refused here, named like
                // the typed methods name theirs.
                let bad = |key: &str, want: &str| {
                    let got = match field(&params, key) {
                        None => "missing",
                        Some(Value::String(_)) => "got a string",
                        Some(Value::Number(_)) => "got a number",
                        Some(Value::Bool(_)) => "got a boolean",
                        Some(Value::Array(_)) => "got an array",
                        Some(_) => "got an object",
                    };
                    Err(RequestError::InvalidParams(format!(
                        "elicitation/create: field `{key}`: expected {want}, {got}"
                    )))
                };
                let mode = str_field(&params, "mode").unwrap_or_default();
                if mode.is_empty() {
                    return bad("mode", "\"form\" or \"url\"");
                }
                if mode != "form" && mode != "url" {
                    return Err(RequestError::InvalidParams(format!(
                        "elicitation/create: field `mode`: unsupported mode `{mode}` (form and url are)"
                    )));
                }
                for key in ["message", "sessionId", "toolCallId"] {
                    if field(&params, key).is_some_and(|v| !v.is_string()) {
                        return bad(key, "a string");
                    }
                }
                if mode == "form"
                    && !field(&params, "requestedSchema").is_some_and(Value::is_object)
                {
                    return bad("requestedSchema", "an object");
                }
                if mode == "url" {
                    for key in ["url", "elicitationId"] {
                        if str_field(&params, key).is_none() {
                            return bad(key, "a string");
                        }
                    }
                }
                AgentRequest::Elicitation {
                    session_id: str_field(&params, "sessionId"),
                    raw: params,
                }
            }
            other => return Err(RequestError::UnknownMethod(other.to_owned())),
        })
    }

    pub fn method(&self) -> &'static str {
        match self {
            AgentRequest::Permission { .. } => "session/request_permission",
            AgentRequest::ReadTextFile(_) => "fs/read_text_file",
            AgentRequest::WriteTextFile(_) => "fs/write_text_file",
            AgentRequest::CreateTerminal(_) => "terminal/create",
            AgentRequest::TerminalOutput(_) => "terminal/output",
            AgentRequest::WaitForTerminalExit(_) => "terminal/wait_for_exit",
            AgentRequest::KillTerminal(_) => "terminal/kill",
            AgentRequest::ReleaseTerminal(_) => "terminal/release",
            AgentRequest::Elicitation { .. } => "elicitation/create",
        }
    }

    pub fn session_id(&self) -> &str {
        match self {
            AgentRequest::Permission { session_id, .. } => session_id,
            AgentRequest::ReadTextFile(r) => &r.session_id.0,
            AgentRequest::WriteTextFile(r) => &r.session_id.0,
            AgentRequest::CreateTerminal(r) => &r.session_id.0,
            AgentRequest::TerminalOutput(r) => &r.session_id.0,
            AgentRequest::WaitForTerminalExit(r) => &r.session_id.0,
            AgentRequest::KillTerminal(r) => &r.session_id.0,
            AgentRequest::ReleaseTerminal(r) => &r.session_id.0,
            AgentRequest::Elicitation { session_id, .. } => session_id.as_deref().unwrap_or(""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn agent_requests_parse_typed_and_name_what_is_wrong() {
        let r = AgentRequest::parse(
            "fs/read_text_file",
            json!({"sessionId": "s", "path": "/p/a", "line": 2}),
        )
        .unwrap();
        assert_eq!(r.session_id(), "s");
        let AgentRequest::ReadTextFile(r) = r else {
            panic!()
        };
        assert_eq!(r.line, Some(2));
        match AgentRequest::parse("fs/read_text_file", json!({"sessionId": "s"})) {
            Err(RequestError::InvalidParams(m)) => assert!(m.contains("path"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            AgentRequest::parse("x/y", json!({})).unwrap_err(),
            RequestError::UnknownMethod("x/y".into())
        );
        let p = AgentRequest::parse(
            "session/request_permission",
            json!({"sessionId": "s", "toolCall": {"toolCallId": "t", "title": "a\nb"}, "options": []}),
        )
        .unwrap();
        assert_eq!(p.method(), "session/request_permission");
    }

    #[test]
    fn only_session_update_notifications_take_the_fast_path() {
        let n = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}}"#;
        assert_eq!(session_update_params(n).unwrap()["sessionId"], "s");
        // A request that merely mentions the method (e.g. writing a file
        // that contains the text) goes to the SDK.
        let req = br#"{"jsonrpc":"2.0","id":3,"method":"fs/write_text_file","params":{"content":"\"session/update\""}}"#;
        assert!(session_update_params(req).is_none());
        let with_id = br#"{"jsonrpc":"2.0","id":0,"method":"session/update","params":{}}"#;
        assert!(session_update_params(with_id).is_none());
        assert!(session_update_params(b"not json \"session/update\"").is_none());
        assert!(session_update_params(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_none());
    }
}
