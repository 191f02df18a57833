//! The chat asks the user: the agent's permission requests (judged by the
//! user's policy first, then shown as a float) and the client's own
//! question before running a terminal, and how their answers go back.

use std::sync::Arc;

use agent_client_protocol::v1::Responder;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::handle::ThreadHandle;
use super::permission::{Choice, Pending, ReplyTo};
use crate::bridge::handoff::bridge;
use crate::bridge::queue::UiEvent;
use crate::config::TerminalConfirm;
use crate::editor::policy::{policy_answer, subject_dir, title_command, Run, Subject};
use crate::log;
use crate::model::entries::{ClientState, NoticeLevel, ToolContent};
use crate::model::events::{Grant, PermissionAsk};
use crate::model::schema::{PermissionOptionKind, ToolKind};
use crate::model::thread::Thread;
use crate::model::update::{
    input_paths, input_summary, relative_path, PermissionOption, PermissionRequest,
    MAX_INPUT_FILES, MAX_PERMISSION_OPTIONS,
};
use crate::runtime::spawn;

/// Requests the view may send through `ThreadHandle::request`.
/// JSON-RPC codes of refused permission requests.
const INVALID_PARAMS: i32 = -32602;
const INTERNAL_ERROR: i32 = -32603;

/// The card's line for a request the agent withdrew (`$/cancel_request`).
pub const WITHDRAWN: &str = "the agent withdrew this request";

/// The most permission requests of one chat that wait for the user; more
/// are refused at once (an agent cannot bury the editor in floats).
pub const MAX_PENDING_PERMISSIONS: usize = 64;

/// A permission request as the view shows it. The view answers an option
/// by its id, so it gets only the options the core kept (an option with a
/// repeated or non-text id would answer as another one, or not at all).
/// The kind and title are the card's as recorded, which the policy judged,
/// not the ones the request claims; what allowing grants is the card's
/// too (for a command exactly what a later terminal is compared with).
/// Of the agent's params only its `toolCall` comes along, for display:
/// nothing else it sends (a `_client` or `grant` of its own) reaches the
/// view.
fn shown_request(
    raw: &Value,
    tool_call_id: &str,
    card: &Card,
    options: Vec<PermissionOption>,
    session_cwd: &std::path::Path,
) -> PermissionAsk {
    let tool_call = raw
        .get("toolCall")
        .filter(|v| v.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    let summary = tool_call.get("rawInput").and_then(input_summary);
    // Cline's read_files names its files only in the raw input.
    let list = |key: &str| {
        tool_call
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    };
    let diff = |c: &Value| c.get("type").and_then(Value::as_str) == Some("diff");
    let named = !list("locations").is_empty() || list("content").iter().any(diff);
    let (files, files_more) = match tool_call.get("rawInput") {
        Some(raw) if !named => {
            let (first, more) = input_paths(raw, MAX_INPUT_FILES);
            let rel = first
                .iter()
                .map(|p| relative_path(p, session_cwd))
                .collect();
            (rel, more)
        }
        _ => (Vec::new(), 0),
    };
    let subject = &card.subject;
    let grant = match (subject.runs(), &subject.kind) {
        (Some(command), _) => Some(Grant::Command {
            command: command.to_owned(),
            cwd: subject_dir(subject, session_cwd)
                .to_string_lossy()
                .into_owned(),
            env: subject.env.clone(),
        }),
        (None, ToolKind::Edit | ToolKind::Delete | ToolKind::Move) => Some(Grant::Files {
            paths: card.paths.clone(),
        }),
        _ => None,
    };
    PermissionAsk {
        tool_call_id: tool_call_id.to_owned(),
        kind: subject.kind.clone(),
        title: card.title.clone(),
        summary,
        files,
        files_more,
        options,
        grant,
        tool_call,
        subagent: None,
    }
}

/// What a permission request is judged by and shows of its card.
struct Card {
    subject: Subject,
    title: String,
    /// The files it names: its locations, then its diffs' paths, each once.
    paths: Vec<String>,
}

impl ThreadHandle {
    /// The card's recorded kind, the text the user reads (its command,
    /// else its title) with the directory and variables its raw input
    /// names: what a permission is judged by and what it grants. Also the
    /// card's title and the files it names.
    fn card_of(m: &Thread, tool_id: &str) -> Card {
        match m.tool_call(tool_id) {
            Some(tc) => {
                let mut paths: Vec<String> = Vec::new();
                let diffs = tc.content.iter().filter_map(|c| match c {
                    ToolContent::Diff { path, .. } => Some(path),
                    _ => None,
                });
                for path in tc.locations.iter().map(|(p, _)| p).chain(diffs) {
                    if !paths.contains(path) {
                        paths.push(path.clone());
                    }
                }
                // A card with no kind (Kimi's shell calls) runs the command
                // it shows: its raw input's, else the one its title names.
                let command = (tc.kind == ToolKind::Other)
                    .then(|| {
                        tc.command
                            .clone()
                            .or_else(|| title_command(&tc.title).map(str::to_owned))
                    })
                    .flatten();
                Card {
                    subject: Subject {
                        kind: tc.kind.clone(),
                        text: tc.command.clone().unwrap_or_else(|| tc.title.clone()),
                        cwd: tc.cwd.clone(),
                        env: tc.env.clone(),
                        command,
                    },
                    title: tc.title.clone(),
                    paths,
                }
            }
            None => Card {
                subject: Subject::new(ToolKind::Other, ""),
                title: String::new(),
                paths: Vec::new(),
            },
        }
    }

    /// Refuses a permission request the chat cannot take (too many
    /// options, too many pending requests): the agent gets the error, the
    /// chat one line per run of refusals.
    fn refuse_permission(&self, responder: Responder<Value>, code: i32, message: String) {
        let _ =
            responder.respond_with_error(agent_client_protocol::Error::new(code, message.clone()));
        if self.permissions.lock().note_refusal() {
            self.notice(
                NoticeLevel::Warn,
                format!("a permission request of the agent was refused: {message} (later ones are refused the same way until a request gets through; see the log)"),
            );
        }
        log::warn(format!("permission request refused: {message}"));
    }

    pub(super) fn request_permission(
        &self,
        request: PermissionRequest,
        raw: Value,
        responder: Responder<Value>,
    ) {
        if request.options_sent > MAX_PERMISSION_OPTIONS {
            let message = format!(
                "a permission request may offer at most {} options, this one offers {}",
                MAX_PERMISSION_OPTIONS, request.options_sent
            );
            return self.refuse_permission(responder, INVALID_PARAMS, message);
        }
        if self.permissions.lock().pending_count() >= MAX_PENDING_PERMISSIONS {
            let message = format!(
                "too many pending permission requests (at most {MAX_PENDING_PERMISSIONS} wait for the user)"
            );
            return self.refuse_permission(responder, INTERNAL_ERROR, message);
        }
        self.permissions.lock().accepted();
        let tool_id = request.tool_call.id.clone();
        // The request may announce the call or add to it, but the kind the
        // card was first given stays (see `thread::merge_tool_call`), and
        // so do the title and command once a request was shown.
        let (card, view, subagent) = self.with_model_value(|m| {
            let ev = m.permission_requested(&request.tool_call, &request.dropped);
            let view = m.tool_call(&tool_id).map(super::shown::card_view);
            // A subagent's request names it in the float.
            let sid = raw.get("sessionId").and_then(Value::as_str);
            let subagent = sid
                .and_then(|sid| m.subagent_info(sid))
                .map(|(name, _, _)| name);
            let mut ev = ev;
            if let (Some(sid), Some(_)) = (sid, &subagent) {
                ev.extend(m.child_asked(sid, &tool_id));
            }
            (ev, (Self::card_of(m, &tool_id), view, subagent))
        });
        let rules = &self.editor.policy.auto_allow;
        let session_cwd = &self.spec.cwd;
        let subject = &card.subject;
        if let Some((option, note)) = policy_answer(rules, subject, &request.options, session_cwd) {
            let choice = Choice::Selected(option);
            // Recorded before the reply goes out. A rule over a kind-less
            // card matched its title, not a command line: only the user's
            // own answer lets such a card's command run unasked.
            let judged = Subject {
                command: None,
                ..subject.clone()
            };
            self.permissions.lock().record(&judged, &choice);
            let _ = responder.respond(choice.outcome());
            self.with_model(|m| m.permission_answered(&tool_id, None, Some(note)));
            return;
        }
        // The float shows the card the request points to, merged with it.
        let shown = super::shown::shown_params(&raw, view.as_ref());
        let mut payload = shown_request(
            &shown,
            &tool_id,
            &card,
            request.options.clone(),
            session_cwd,
        );
        payload.subagent = subagent;
        let cancellation = responder.cancellation();
        let (watch, answered) = oneshot::channel::<()>();
        let request_id = self.permissions.lock().add(Pending {
            reply: ReplyTo::Agent(responder),
            tool_id,
            subject: card.subject,
            options: request.options,
            watch: Some(watch),
        });
        bridge().push(UiEvent::Permission {
            thread: self.id,
            request: request_id,
            payload: Box::new(payload),
        });
        // The agent may withdraw the request (`$/cancel_request`) while it
        // waits; the wait ends when the request is answered or drained.
        let me = self.live().map(|this| Arc::downgrade(&this));
        if let Some(me) = me {
            spawn(async move {
                tokio::select! {
                    () = cancellation.cancelled() => {
                        if let Some(this) = me.upgrade() {
                            this.withdraw_permission(request_id);
                        }
                    }
                    _ = answered => {}
                }
            });
        }
    }

    /// The agent withdrew request `request`: it gets the cancelled-request
    /// error (nobody answered for the user), the float closes and the card
    /// says so. A request already answered is left alone.
    fn withdraw_permission(&self, request: u64) {
        let Some(pending) = self.permissions.lock().withdraw(request) else {
            return;
        };
        if let ReplyTo::Agent(responder) = pending.reply {
            if let Err(e) =
                responder.respond_with_error(agent_client_protocol::Error::request_cancelled())
            {
                log::warn(format!("withdrawn permission request not answered: {e}"));
            }
        }
        log::info(format!(
            "permission request {request} withdrawn by the agent"
        ));
        self.with_model(|m| {
            m.permission_answered(&pending.tool_id, None, Some(WITHDRAWN.to_owned()))
        });
        bridge().push(UiEvent::PermissionDone {
            thread: self.id,
            request,
        });
    }

    /// Asks the user before running a terminal the agent did not get a
    /// permission for in this turn (config `terminal.confirm`). Resolves to
    /// true when it may run.
    pub async fn confirm_terminal(&self, run: Run<'_>, command: &str) -> Result<bool, String> {
        let (cwd, env) = (run.cwd, run.env);
        let ask = match self.editor.policy.terminal_confirm {
            TerminalConfirm::Never => false,
            TerminalConfirm::Always => true,
            TerminalConfirm::Unrequested => {
                !self.permissions.lock().take_grant(&run, &self.spec.cwd)
            }
        };
        if !ask {
            return Ok(true);
        }
        // The same bound as the agent's own requests: a flood of terminals
        // is refused, not queued.
        if self.permissions.lock().pending_count() >= MAX_PENDING_PERMISSIONS {
            let message = format!(
                "too many pending permission requests (at most {MAX_PENDING_PERMISSIONS} wait for the user)"
            );
            if self.permissions.lock().note_refusal() {
                self.notice(
                    NoticeLevel::Warn,
                    format!("a terminal of the agent was refused: {message} (later ones are refused the same way until a request gets through; see the log)"),
                );
            }
            log::warn(format!("terminal/create refused: {message}"));
            return Err(message);
        }
        self.permissions.lock().accepted();
        let (tx, rx) = oneshot::channel();
        let options = vec![
            PermissionOption {
                id: "allow".into(),
                name: "Run".into(),
                kind: PermissionOptionKind::AllowOnce,
            },
            PermissionOption {
                id: "reject".into(),
                name: "Don't run".into(),
                kind: PermissionOptionKind::RejectOnce,
            },
        ];
        let tool_id = format!("terminal-confirm-{}", self.id);
        let request_id = self.permissions.lock().add(Pending {
            reply: ReplyTo::Terminal(tx),
            tool_id: tool_id.clone(),
            subject: Subject::new(ToolKind::Execute, command),
            options: options.clone(),
            watch: None,
        });
        let title = format!("Run `{command}`");
        let payload = PermissionAsk {
            tool_call_id: tool_id.clone(),
            kind: ToolKind::Execute,
            title: title.clone(),
            summary: Some(command.to_owned()),
            files: Vec::new(),
            files_more: 0,
            options,
            grant: Some(Grant::Command {
                command: command.to_owned(),
                cwd: cwd.to_string_lossy().into_owned(),
                env: env.clone(),
            }),
            tool_call: json!({
                "toolCallId": tool_id,
                "title": title,
                "kind": "execute",
                "rawInput": {"command": command, "cwd": cwd},
            }),
            subagent: None,
        };
        bridge().push(UiEvent::Permission {
            thread: self.id,
            request: request_id,
            payload: Box::new(payload),
        });
        Ok(rx.await.unwrap_or(false))
    }

    /// "Always" choices of this session (kind, text, option kind), shown to
    /// the user; the agent remembers them, the plugin never answers with them.
    pub fn always_choices(&self) -> Vec<super::permission::AlwaysChoice> {
        self.permissions.lock().always_choices()
    }

    pub fn forget_decisions(&self) {
        self.permissions.lock().forget_always();
    }

    /// The user's answer: an option id, or None for "cancelled".
    pub fn answer_permission(&self, request: u64, option_id: Option<String>) -> Result<(), String> {
        let (pending, choice) = self
            .permissions
            .lock()
            .take(request, option_id.as_deref())?;
        self.send_choice(request, pending, &choice);
        Ok(())
    }

    fn send_choice(&self, request: u64, pending: Pending, choice: &Choice) {
        match pending.reply {
            ReplyTo::Agent(responder) => {
                if let Err(e) = responder.respond(choice.outcome()) {
                    log::warn(format!("permission answer not sent: {e}"));
                }
            }
            ReplyTo::Terminal(tx) => {
                let _ = tx.send(choice.allows());
            }
        }
        let state = match choice {
            Choice::Cancelled => Some(ClientState::Cancelled),
            Choice::Selected(o) if o.kind.is_reject() => Some(ClientState::Rejected),
            Choice::Selected(_) => None,
        };
        self.with_model(|m| m.permission_answered(&pending.tool_id, state, None));
        bridge().push(UiEvent::PermissionDone {
            thread: self.id,
            request,
        });
    }

    /// Answers every pending permission request with "cancelled".
    pub(super) fn cancel_permissions(&self) {
        let pending = self.permissions.lock().drain();
        for (request, p) in pending {
            self.send_choice(request, p, &Choice::Cancelled);
        }
    }

    pub(super) fn drop_permissions(&self) {
        let pending = self.permissions.lock().drain();
        for (request, _) in pending {
            bridge().push(UiEvent::PermissionDone {
                thread: self.id,
                request,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn card(subject: Subject, title: &str, paths: &[&str]) -> Card {
        Card {
            subject,
            title: title.into(),
            paths: paths.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn the_view_gets_the_recorded_kind_and_the_options_the_core_answers() {
        let raw = json!({
            "toolCall": {"toolCallId": "t", "kind": "read", "title": "curl x|sh",
                "rawInput": {"url": "https://x", "path": "a.txt"}},
            "options": [
                {"optionId": 42, "name": "Number", "kind": "allow_always"},
                {"optionId": "x", "name": "Allow", "kind": "allow_once"},
                {"optionId": "x", "name": "Reject", "kind": "reject_once"}
            ]
        });
        let request = crate::model::update::parse_permission_request(&raw);
        let subject = Subject::new(ToolKind::Other, "curl x|sh");
        let cwd = std::path::Path::new("/p");
        let c = card(subject, "curl x|sh", &[]);
        let shown = shown_request(&raw, "t", &c, request.options, cwd);
        assert_eq!(shown.kind, ToolKind::Other);
        assert_eq!(shown.title, "curl x|sh");
        assert_eq!(shown.tool_call_id, "t");
        assert_eq!(
            shown.summary.as_deref(),
            Some("a.txt"),
            "the first key present"
        );
        assert_eq!(
            serde_json::to_value(&shown.options).unwrap(),
            json!([{"id": "x", "name": "Allow", "kind": "allow_once"}])
        );
        assert_eq!(shown.grant, None, "no grant but for execute and edits");
        // The agent's tool call comes along as sent, for display.
        assert_eq!(shown.tool_call, raw["toolCall"]);
    }

    #[test]
    fn the_view_of_an_execute_request_shows_exactly_what_it_grants() {
        // The agent's own `_client`, `grant` and title are not what the core grants.
        let raw = json!({
            "toolCall": {"toolCallId": "t", "kind": "execute", "title": "npm test",
                "_client": {"grant": {"command": "npm test"}}},
            "options": [{"optionId": "y", "name": "Allow", "kind": "allow_once"}],
            "_client": {"terminal": {"command": "npm test", "cwd": "/p", "env": {}}},
            "grant": {"type": "command", "command": "npm test", "cwd": "/p", "env": {}}
        });
        let request = crate::model::update::parse_permission_request(&raw);
        let mut subject = Subject::new(ToolKind::Execute, "curl x | sh");
        subject.cwd = Some("sub".into());
        subject.env = BTreeMap::from([("A".to_owned(), "1".to_owned())]);
        let cwd = std::path::Path::new("/p");
        let c = card(subject, "Run the tests", &[]);
        let shown = shown_request(&raw, "t", &c, request.options, cwd);
        assert_eq!(shown.title, "Run the tests");
        assert_eq!(
            serde_json::to_value(&shown.grant).unwrap(),
            json!({"type": "command", "command": "curl x | sh", "cwd": "/p/sub", "env": {"A": "1"}})
        );
        let all = serde_json::to_value(&shown).unwrap();
        let mut keys: Vec<_> = all.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "files",
                "files_more",
                "grant",
                "kind",
                "options",
                "summary",
                "title",
                "tool_call",
                "tool_call_id"
            ],
            "nothing else of the params"
        );
        // A request that is not even an object still gets a view.
        let shown = shown_request(&json!(7), "", &c, vec![], cwd);
        assert_eq!(shown.kind, ToolKind::Execute);
        assert_eq!(shown.tool_call, json!({}));
        assert_eq!(shown.summary, None);
    }

    #[test]
    fn an_edit_grants_the_files_its_card_names() {
        let raw = json!({"toolCall": {"toolCallId": "e", "rawInput": ["a", "b"]}});
        let c = card(
            Subject::new(ToolKind::Edit, "Edit"),
            "Edit",
            &["a.rs", "b.rs"],
        );
        let shown = shown_request(&raw, "e", &c, vec![], std::path::Path::new("/p"));
        assert_eq!(
            shown.grant,
            Some(Grant::Files {
                paths: vec!["a.rs".into(), "b.rs".into()]
            })
        );
        assert_eq!(shown.summary.as_deref(), Some("a b"));
    }

    #[test]
    fn the_files_only_the_raw_input_names_are_shown_relative_to_the_project() {
        // Cline 3.0.65's read_files: a cut title, the files in rawInput, no locations.
        let raw = json!({"toolCall": {"toolCallId": "t", "kind": "read",
            "title": "read_files: {\"files\":[{\"path\":\"/home/user/project/src/hel",
            "rawInput": {"files": [{"path": "/home/user/project/src/hello.txt"}, {"path": "/etc/hosts"}]}},
            "options": []});
        let request = crate::model::update::parse_permission_request(&raw);
        let c = card(
            Subject::new(ToolKind::Read, "read_files"),
            "read_files",
            &[],
        );
        let cwd = std::path::Path::new("/home/user/project");
        let shown = shown_request(&raw, "t", &c, request.options.clone(), cwd);
        assert_eq!(shown.files, ["src/hello.txt", "/etc/hosts"]);
        assert_eq!(shown.files_more, 0);
        // A call with locations shows those instead.
        let mut located = raw.clone();
        located["toolCall"]["locations"] = json!([{"path": "/home/user/project/src/hello.txt"}]);
        let shown = shown_request(&located, "t", &c, request.options, cwd);
        assert!(shown.files.is_empty());
    }
}
