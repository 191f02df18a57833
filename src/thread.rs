//! The conversation model of one chat: a plain list of entries plus the
//! state of the current turn. It knows nothing about Neovim; every mutation
//! returns the granular events ("entry added / appended / replaced") the view
//! needs, and every entry can render itself to markdown.
//!
//! Incoming `session/update` payloads are read from raw JSON on purpose: real
//! agents send `null` for optional fields, unknown `kind`s and ids that were
//! never announced, and a strict typed parse would drop such updates.

use serde_json::Value;

use crate::render;

/// What the view must do after a model change. Indexes are stable entry ids.
#[derive(Debug, Clone, PartialEq)]
pub enum ThreadEvent {
    /// A new entry at the end of the transcript.
    Added { index: usize, kind: EntryKind, lines: Vec<String> },
    /// Rendered text appended to the last line of the last entry (may hold
    /// newlines). Only ever emitted for the last entry.
    Appended { index: usize, text: String },
    /// The entry's whole rendering changed.
    Replaced { index: usize, lines: Vec<String> },
    /// Thread-level status for the view's status line.
    Status { state: TurnState, detail: String },
    /// Session metadata changed (title, mode, commands).
    Info { key: &'static str, value: Value },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    User,
    Heading,
    Agent,
    Thought,
    ToolCall,
    Plan,
    Notice,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::User => "user",
            EntryKind::Heading => "heading",
            EntryKind::Agent => "agent",
            EntryKind::Thought => "thought",
            EntryKind::ToolCall => "tool_call",
            EntryKind::Plan => "plan",
            EntryKind::Notice => "notice",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub title: String,
    pub kind: String,
    pub status: String,
    pub locations: Vec<(String, Option<u64>)>,
    pub content: Vec<String>,
    pub raw_input: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlanItem {
    pub content: String,
    pub status: String,
    pub priority: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    User { text: String },
    /// Opens the agent's reply in a turn (the agent's name as a heading).
    Heading { text: String },
    Agent { text: String },
    Thought { text: String },
    ToolCall(ToolCall),
    Plan(Vec<PlanItem>),
    Notice { level: NoticeLevel, text: String },
}

impl Entry {
    pub fn kind(&self) -> EntryKind {
        match self {
            Entry::User { .. } => EntryKind::User,
            Entry::Heading { .. } => EntryKind::Heading,
            Entry::Agent { .. } => EntryKind::Agent,
            Entry::Thought { .. } => EntryKind::Thought,
            Entry::ToolCall(_) => EntryKind::ToolCall,
            Entry::Plan(_) => EntryKind::Plan,
            Entry::Notice { .. } => EntryKind::Notice,
        }
    }

    /// The entry as markdown text (no trailing newline).
    pub fn to_markdown(&self) -> String {
        render::entry_markdown(self)
    }

    /// The entry as buffer lines.
    pub fn lines(&self) -> Vec<String> {
        self.to_markdown().split('\n').map(str::to_owned).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// No session yet (spawning the agent, initialize, session/new).
    Connecting,
    Idle,
    Running,
    /// The agent process is gone; the next prompt reconnects.
    Disconnected,
}

impl TurnState {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnState::Connecting => "connecting",
            TurnState::Idle => "idle",
            TurnState::Running => "running",
            TurnState::Disconnected => "disconnected",
        }
    }
}

#[derive(Debug)]
pub struct Thread {
    pub agent_name: String,
    entries: Vec<Entry>,
    state: TurnState,
    /// Set by a user cancel until the next prompt: late chunks are ignored.
    cancelled: bool,
    /// Increments per prompt so a late response cannot end a newer turn.
    turn: u64,
    /// Whether the reply heading of the current turn was written.
    reply_started: bool,
    pub title: Option<String>,
}

impl Thread {
    pub fn new(agent_name: impl Into<String>) -> Self {
        Self {
            agent_name: agent_name.into(),
            entries: Vec::new(),
            state: TurnState::Connecting,
            cancelled: false,
            turn: 0,
            reply_started: false,
            title: None,
        }
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn state(&self) -> TurnState {
        self.state
    }

    pub fn current_turn(&self) -> u64 {
        self.turn
    }

    /// The whole transcript as markdown, entries separated by a blank line,
    /// exactly as the view lays it out.
    pub fn to_markdown(&self) -> String {
        self.entries.iter().map(Entry::to_markdown).collect::<Vec<_>>().join("\n\n")
    }

    fn push(&mut self, entry: Entry, out: &mut Vec<ThreadEvent>) -> usize {
        let index = self.entries.len();
        let lines = entry.lines();
        let kind = entry.kind();
        self.entries.push(entry);
        out.push(ThreadEvent::Added { index, kind, lines });
        index
    }

    /// The agent's first output in a turn gets a heading with its name.
    fn start_reply(&mut self, out: &mut Vec<ThreadEvent>) {
        if !self.reply_started {
            self.reply_started = true;
            let text = self.agent_name.clone();
            self.push(Entry::Heading { text }, out);
        }
    }

    fn replace(&mut self, index: usize, out: &mut Vec<ThreadEvent>) {
        out.push(ThreadEvent::Replaced { index, lines: self.entries[index].lines() });
    }

    fn set_state(&mut self, state: TurnState, detail: impl Into<String>, out: &mut Vec<ThreadEvent>) {
        self.state = state;
        out.push(ThreadEvent::Status { state, detail: detail.into() });
    }

    pub fn notice(&mut self, level: NoticeLevel, text: impl Into<String>) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.push(notice_entry(level, text.into()), &mut out);
        out
    }

    pub fn session_ready(&mut self, detail: impl Into<String>) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        if self.state != TurnState::Running {
            self.set_state(TurnState::Idle, detail, &mut out);
        }
        out
    }

    /// The agent process went away or the session could not be created.
    pub fn disconnected(&mut self, message: impl Into<String>) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.push(notice_entry(NoticeLevel::Error, message.into()), &mut out);
        self.set_state(TurnState::Disconnected, "agent exited", &mut out);
        out
    }

    /// The user sends a prompt: returns the turn number and the events.
    pub fn begin_turn(&mut self, user_text: &str) -> (u64, Vec<ThreadEvent>) {
        let mut out = Vec::new();
        self.turn += 1;
        self.cancelled = false;
        self.reply_started = false;
        self.push(Entry::User { text: user_text.to_owned() }, &mut out);
        self.set_state(TurnState::Running, "", &mut out);
        (self.turn, out)
    }

    /// The user cancels. Returns false when no turn was running.
    pub fn cancel(&mut self) -> (bool, Vec<ThreadEvent>) {
        let mut out = Vec::new();
        if self.state != TurnState::Running {
            return (false, out);
        }
        self.cancelled = true;
        self.push(notice_entry(NoticeLevel::Warn, "Cancelled".into()), &mut out);
        self.set_state(TurnState::Idle, "cancelled", &mut out);
        (true, out)
    }

    /// The prompt request answered. `turn` guards against a late answer.
    pub fn end_turn(&mut self, turn: u64, stop_reason: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        if turn != self.turn || self.state != TurnState::Running {
            return out;
        }
        match stop_reason {
            "end_turn" => {}
            "cancelled" => {
                self.cancelled = true;
                self.push(notice_entry(NoticeLevel::Warn, "Cancelled by the agent".into()), &mut out);
            }
            other => {
                self.push(notice_entry(NoticeLevel::Warn, format!("Stopped: {other}")), &mut out);
            }
        }
        self.set_state(TurnState::Idle, stop_reason, &mut out);
        out
    }

    /// The prompt request failed (JSON-RPC error or lost connection).
    pub fn fail_turn(&mut self, turn: u64, message: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        if turn != self.turn || self.state != TurnState::Running {
            return out;
        }
        self.push(notice_entry(NoticeLevel::Error, format!("Error: {message}")), &mut out);
        self.set_state(TurnState::Idle, "error", &mut out);
        out
    }

    /// Applies one `session/update` payload (the `update` object).
    pub fn apply_update(&mut self, update: &Value) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("");
        match kind {
            "agent_message_chunk" => self.chunk(EntryKind::Agent, update, &mut out),
            "agent_thought_chunk" => self.chunk(EntryKind::Thought, update, &mut out),
            "user_message_chunk" => self.chunk(EntryKind::User, update, &mut out),
            "tool_call" | "tool_call_update" => self.tool_call(update, &mut out),
            "plan" => self.plan(update, &mut out),
            "session_info_update" => {
                if let Some(title) = field(update, "title").and_then(Value::as_str) {
                    self.title = Some(title.to_owned());
                    out.push(ThreadEvent::Info { key: "title", value: Value::from(title) });
                }
            }
            "current_mode_update" => {
                if let Some(mode) = field(update, "currentModeId") {
                    out.push(ThreadEvent::Info { key: "mode", value: mode.clone() });
                }
            }
            "available_commands_update" => {
                if let Some(cmds) = field(update, "availableCommands") {
                    out.push(ThreadEvent::Info { key: "commands", value: cmds.clone() });
                }
            }
            "usage_update" | "config_option_update" => {
                out.push(ThreadEvent::Info { key: "usage", value: update.clone() });
            }
            _ => {}
        }
        out
    }

    fn chunk(&mut self, kind: EntryKind, update: &Value, out: &mut Vec<ThreadEvent>) {
        // After a user cancel, text still in flight belongs to the dead turn.
        if self.cancelled && kind != EntryKind::User {
            return;
        }
        let text = match field(update, "content") {
            Some(block) => render::content_block_text(block),
            None => return,
        };
        if text.is_empty() {
            return;
        }
        let last = self.entries.len().checked_sub(1);
        if let Some(index) = last.filter(|&i| self.entries[i].kind() == kind) {
            let fragment = render::append_fragment(kind, &text);
            match &mut self.entries[index] {
                Entry::User { text: t } | Entry::Agent { text: t } | Entry::Thought { text: t } => {
                    t.push_str(&text)
                }
                _ => unreachable!("kind checked above"),
            }
            out.push(ThreadEvent::Appended { index, text: fragment });
            return;
        }
        if kind != EntryKind::User {
            self.start_reply(out);
        }
        let entry = match kind {
            EntryKind::User => Entry::User { text },
            EntryKind::Thought => Entry::Thought { text },
            _ => Entry::Agent { text },
        };
        self.push(entry, out);
    }

    fn find_tool_call(&self, id: &str) -> Option<usize> {
        self.entries
            .iter()
            .rposition(|e| matches!(e, Entry::ToolCall(tc) if tc.id == id))
    }

    fn tool_call(&mut self, update: &Value, out: &mut Vec<ThreadEvent>) {
        let Some(id) = field(update, "toolCallId").and_then(Value::as_str) else {
            return;
        };
        match self.find_tool_call(id) {
            Some(index) => {
                if let Entry::ToolCall(tc) = &mut self.entries[index] {
                    merge_tool_call(tc, update);
                }
                self.replace(index, out);
            }
            None => {
                self.start_reply(out);
                let mut tc = ToolCall {
                    id: id.to_owned(),
                    title: String::new(),
                    kind: "other".into(),
                    status: "pending".into(),
                    locations: Vec::new(),
                    content: Vec::new(),
                    raw_input: None,
                };
                merge_tool_call(&mut tc, update);
                self.push(Entry::ToolCall(tc), out);
            }
        }
    }

    fn plan(&mut self, update: &Value, out: &mut Vec<ThreadEvent>) {
        let items = field(update, "entries")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|e| PlanItem {
                        content: str_field(e, "content").unwrap_or_default(),
                        status: str_field(e, "status").unwrap_or_else(|| "pending".into()),
                        priority: str_field(e, "priority").unwrap_or_else(|| "medium".into()),
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        // One plan block per thread, replaced in place on every update.
        if let Some(index) = self.entries.iter().rposition(|e| matches!(e, Entry::Plan(_))) {
            self.entries[index] = Entry::Plan(items);
            self.replace(index, out);
        } else {
            self.start_reply(out);
            self.push(Entry::Plan(items), out);
        }
    }
}


fn notice_entry(level: NoticeLevel, text: String) -> Entry {
    Entry::Notice { level, text }
}

/// A field that is present and not `null` (agents send `null` for "absent").
pub fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    field(v, key).and_then(Value::as_str).map(str::to_owned)
}

const KNOWN_KINDS: &[&str] =
    &["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"];

const GENERIC_TITLES: &[&str] = &["Bash", "Read", "Write", "Edit", "Search", "Fetch", "Terminal", "Tool"];

/// Merge rules seen in real traffic: absent/null fields keep their value,
/// `content`/`locations` replace when present (an empty content list means
/// "no change"), unknown kinds become `other`.
pub fn merge_tool_call(tc: &mut ToolCall, update: &Value) {
    if let Some(title) = str_field(update, "title") {
        let generic = GENERIC_TITLES.contains(&title.as_str());
        if tc.title.is_empty() || !generic || GENERIC_TITLES.contains(&tc.title.as_str()) {
            tc.title = title;
        }
    }
    if let Some(kind) = str_field(update, "kind") {
        tc.kind = if KNOWN_KINDS.contains(&kind.as_str()) { kind } else { "other".into() };
    }
    if let Some(status) = str_field(update, "status") {
        tc.status = status;
    }
    if let Some(locs) = field(update, "locations").and_then(Value::as_array) {
        tc.locations = locs
            .iter()
            .filter_map(|l| Some((str_field(l, "path")?, field(l, "line").and_then(Value::as_u64))))
            .collect();
    }
    if let Some(content) = field(update, "content").and_then(Value::as_array) {
        if !content.is_empty() {
            tc.content = content.iter().map(render::tool_content_text).collect();
        }
    }
    if let Some(raw) = field(update, "rawInput") {
        tc.raw_input = Some(render::one_line_summary(raw));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunk(kind: &str, text: &str) -> Value {
        json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
    }

    #[test]
    fn consecutive_chunks_append_to_one_entry() {
        let mut t = Thread::new("demo");
        t.begin_turn("hi");
        let ev = t.apply_update(&chunk("agent_message_chunk", "Hel"));
        assert!(matches!(&ev[0], ThreadEvent::Added { index: 1, kind: EntryKind::Heading, .. }));
        assert!(matches!(&ev[1], ThreadEvent::Added { index: 2, kind: EntryKind::Agent, .. }));
        let ev = t.apply_update(&chunk("agent_message_chunk", "lo\nworld"));
        assert_eq!(ev, vec![ThreadEvent::Appended { index: 2, text: "lo\nworld".into() }]);
        assert_eq!(t.entries()[2], Entry::Agent { text: "Hello\nworld".into() });
        assert_eq!(t.to_markdown(), "## You\n\nhi\n\n## demo\n\nHello\nworld");
    }

    #[test]
    fn thought_fragments_keep_quote_prefix_consistent_with_full_render() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        let first = t.apply_update(&chunk("agent_thought_chunk", "a\nb"));
        let ThreadEvent::Added { lines, .. } = &first[1] else { panic!() };
        let mut rendered = lines.join("\n");
        for ev in t.apply_update(&chunk("agent_thought_chunk", "c\n\nd")) {
            let ThreadEvent::Appended { text, .. } = ev else { panic!() };
            rendered.push_str(&text);
        }
        assert_eq!(rendered, t.entries()[2].to_markdown());
    }

    #[test]
    fn chunks_after_user_cancel_are_ignored_until_next_prompt() {
        let mut t = Thread::new("demo");
        let (turn, _) = t.begin_turn("q");
        t.apply_update(&chunk("agent_message_chunk", "partial"));
        let (was_running, ev) = t.cancel();
        assert!(was_running);
        assert!(ev.iter().any(|e| matches!(e, ThreadEvent::Added { kind: EntryKind::Notice, .. })));
        assert!(t.apply_update(&chunk("agent_message_chunk", " late")).is_empty());
        // The agent's own "cancelled" answer must not add a second notice.
        assert!(t.end_turn(turn, "cancelled").is_empty());
        t.begin_turn("again");
        assert!(!t.apply_update(&chunk("agent_message_chunk", "new")).is_empty());
    }

    #[test]
    fn stop_reason_other_than_end_turn_is_shown() {
        let mut t = Thread::new("demo");
        let (turn, _) = t.begin_turn("q");
        let ev = t.end_turn(turn, "max_tokens");
        assert!(t.to_markdown().contains("Stopped: max_tokens"));
        assert!(matches!(ev.last(), Some(ThreadEvent::Status { state: TurnState::Idle, .. })));
        let (turn, _) = t.begin_turn("q2");
        t.end_turn(turn, "end_turn");
        assert!(!t.to_markdown().contains("Stopped: end_turn"));
    }

    #[test]
    fn late_response_of_old_turn_is_ignored() {
        let mut t = Thread::new("demo");
        let (old, _) = t.begin_turn("1");
        t.cancel();
        let (_new, _) = t.begin_turn("2");
        assert!(t.end_turn(old, "end_turn").is_empty());
        assert_eq!(t.state(), TurnState::Running);
    }

    #[test]
    fn tool_call_merge_rules() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        // An update for an id never announced creates the entry.
        let ev = t.apply_update(&json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Bash","kind":"weird","status":null}));
        assert!(matches!(ev[1], ThreadEvent::Added { index: 2, kind: EntryKind::ToolCall, .. }));
        // A second tool_call with the same id updates it.
        let ev = t.apply_update(&json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls -la","status":"in_progress","content":[]}));
        assert!(matches!(ev[0], ThreadEvent::Replaced { index: 2, .. }));
        let Entry::ToolCall(tc) = &t.entries()[2] else { panic!() };
        assert_eq!((tc.title.as_str(), tc.kind.as_str(), tc.status.as_str()), ("ls -la", "other", "in_progress"));
        // A generic title does not downgrade the real one.
        t.apply_update(&json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Bash","status":"completed"}));
        let Entry::ToolCall(tc) = &t.entries()[2] else { panic!() };
        assert_eq!((tc.title.as_str(), tc.status.as_str()), ("ls -la", "completed"));
        assert_eq!(t.entries().len(), 3);
    }

    #[test]
    fn plan_is_replaced_in_place() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        t.apply_update(&json!({"sessionUpdate":"plan","entries":[{"content":"a","status":"pending","priority":"high"}]}));
        t.apply_update(&chunk("agent_message_chunk", "text"));
        let ev = t.apply_update(&json!({"sessionUpdate":"plan","entries":[{"content":"a","status":"completed","priority":"high"}]}));
        assert!(matches!(ev[0], ThreadEvent::Replaced { index: 2, .. }));
        assert!(t.entries()[2].to_markdown().contains("[x] a"));
    }

    #[test]
    fn unknown_updates_and_null_content_are_harmless() {
        let mut t = Thread::new("demo");
        t.begin_turn("q");
        assert!(t.apply_update(&json!({"sessionUpdate":"something_new","x":1})).is_empty());
        assert!(t.apply_update(&json!({"sessionUpdate":"agent_message_chunk","content":null})).is_empty());
        assert!(t.apply_update(&json!({"no":"kind"})).is_empty());
    }
}
