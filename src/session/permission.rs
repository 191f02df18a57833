//! A chat's permission state: the requests that wait for the user, the
//! allowances of the current turn and the "always" choices. How the user's
//! policy judges a request is `editor::policy`.
//!
//! The rules this module keeps:
//! - only a deliberate act of the user, or a rule the user wrote, answers;
//! - the plugin never answers with an "always" choice: what "always" means
//!   is the agent's business, and the agent remembers it;
//! - a decision is recorded before the reply goes out, so two requests in
//!   the same millisecond see the same state.

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol::v1::Responder;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::editor::policy::{subject_dir, without_inert, Run, Subject};
use crate::editor::roots::resolve_lenient;
use crate::model::schema::{PermissionOptionKind, ToolKind};
use crate::model::shellwords::Command;
use crate::model::update::PermissionOption;

/// Where the user's answer goes.
pub enum ReplyTo {
    /// The agent's `session/request_permission`.
    Agent(Responder<Value>),
    /// The client's own question before running a terminal: true = run.
    Terminal(oneshot::Sender<bool>),
}

/// A request waiting for the user.
pub struct Pending {
    pub reply: ReplyTo,
    pub tool_id: String,
    pub subject: Subject,
    pub options: Vec<PermissionOption>,
    /// Dropped with the request (answered, drained): ends the task that
    /// waits for the agent's `$/cancel_request` of it.
    pub watch: Option<oneshot::Sender<()>>,
}

/// The user's choice.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    Selected(PermissionOption),
    Cancelled,
}

impl Choice {
    pub fn allows(&self) -> bool {
        matches!(self, Choice::Selected(o) if !o.kind.is_reject()
            && !matches!(o.kind, PermissionOptionKind::Unknown(_)))
    }

    pub fn outcome(&self) -> Value {
        match self {
            Choice::Selected(o) => json!({"outcome": {"outcome": "selected", "optionId": o.id}}),
            Choice::Cancelled => json!({"outcome": {"outcome": "cancelled"}}),
        }
    }
}

/// The chat's permission state: pending requests, and the permissions
/// allowed in the current turn (a `terminal/create` they cover runs without
/// asking again).
#[derive(Default)]
pub struct Permissions {
    pending: HashMap<u64, Pending>,
    next: u64,
    /// Allowed requests of this turn that run a command (`Subject::runs`)
    /// not yet used by a terminal: each covers one `terminal/create` of
    /// the same command.
    grants: Vec<Subject>,
    /// "Always" choices the user made this session (shown, never used to
    /// answer: the agent remembers them).
    always: Vec<(Subject, PermissionOptionKind)>,
    /// Requests were refused since the last one that got through (the
    /// chat says so once per run).
    refusing: bool,
}

impl Permissions {
    pub fn add(&mut self, pending: Pending) -> u64 {
        self.next += 1;
        self.pending.insert(self.next, pending);
        self.next
    }

    /// Takes request `id` for answering with `option_id` (None: cancelled).
    /// An id that is not one of the request's options leaves it pending.
    pub fn take(&mut self, id: u64, option_id: Option<&str>) -> Result<(Pending, Choice), String> {
        let p = self
            .pending
            .get(&id)
            .ok_or_else(|| format!("permission request {id} is no longer pending"))?;
        let choice = match option_id {
            None => Choice::Cancelled,
            Some(oid) => Choice::Selected(
                p.options
                    .iter()
                    .find(|o| o.id == oid)
                    .cloned()
                    .ok_or_else(|| format!("`{oid}` is not one of the agent's options"))?,
            ),
        };
        let p = self.pending.remove(&id).expect("checked above");
        // "Run" on the client's own question about a terminal answers for
        // that terminal only: it grants nothing further.
        if matches!(p.reply, ReplyTo::Agent(_)) {
            self.record(&p.subject, &choice);
        }
        Ok((p, choice))
    }

    /// Records a decision (the user's or the policy's) before it is sent.
    pub fn record(&mut self, subject: &Subject, choice: &Choice) {
        // Only an allowed execute request, or a kind-less one whose card
        // shows a command, stands for a terminal: a read or a fetch whose
        // title reads like a command allows no command.
        if choice.allows() && subject.runs().is_some() {
            self.grants.push(subject.clone());
        }
        if let Choice::Selected(o) = choice {
            if o.kind.is_always() {
                self.always.push((subject.clone(), o.kind.clone()));
            }
        }
    }

    /// Request `id`, removed unanswered and unrecorded: the agent withdrew
    /// it (`$/cancel_request`). None when it is no longer pending.
    pub fn withdraw(&mut self, id: u64) -> Option<Pending> {
        self.pending.remove(&id)
    }

    /// Every pending request, removed (a cancelled turn, a dead agent).
    pub fn drain(&mut self) -> Vec<(u64, Pending)> {
        self.pending.drain().collect()
    }

    /// A new turn: earlier allowances cover no new terminal.
    pub fn new_turn(&mut self) {
        self.grants.clear();
    }

    /// True (and the grant is used up) when an allowed execute request of
    /// this turn covers `run`: exactly what its float showed, that is the
    /// same command word for word (see `shellwords`), run in the same
    /// directory (the session's when it showed none), with exactly the
    /// variables it showed. Anything else asks: the user allowed what they
    /// read, not "some command".
    pub fn take_grant(&mut self, run: &Run, session_cwd: &Path) -> bool {
        let covers = |g: &Subject| {
            g.runs().is_some_and(|c| Command::of_line(c) == run.command)
                && without_inert(&g.env, run.inert_env) == without_inert(run.env, run.inert_env)
                && subject_dir(g, session_cwd) == resolve_lenient(run.cwd)
        };
        match self.grants.iter().position(covers) {
            Some(i) => {
                self.grants.remove(i);
                true
            }
            None => false,
        }
    }

    /// Requests waiting for the user.
    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    /// A request was refused: true for the first of a run of refusals.
    pub fn note_refusal(&mut self) -> bool {
        !std::mem::replace(&mut self.refusing, true)
    }

    /// A request got through: the next refusal is told again.
    pub fn accepted(&mut self) {
        self.refusing = false;
    }

    /// "Always" choices of this session.
    pub fn always_choices(&self) -> Vec<AlwaysChoice> {
        self.always
            .iter()
            .map(|(s, k)| AlwaysChoice {
                kind: s.kind.clone(),
                text: s.text.clone(),
                option: k.clone(),
            })
            .collect()
    }

    pub fn forget_always(&mut self) {
        self.always.clear();
    }
}

/// An "always" answer the user gave this session (`:AcpPermissions`; the
/// agent remembers it, the plugin never answers with it). Lua reads it as
/// acp.AlwaysChoice.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AlwaysChoice {
    /// The card's tool kind.
    pub kind: ToolKind,
    /// The command (or title) the user read.
    pub text: String,
    pub option: PermissionOptionKind,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::editor::policy::fixtures::{env, opt, options, root, subject};

    /// A terminal of shell line `line` in the session's directory, no env.
    fn grant(p: &mut Permissions, line: &str) -> bool {
        let env = BTreeMap::new();
        let run = Run {
            command: Command::of_line(line),
            cwd: root(),
            env: &env,
            inert_env: &[],
        };
        p.take_grant(&run, root())
    }

    fn pending(text: &str) -> Pending {
        let (tx, _rx) = oneshot::channel();
        Pending {
            reply: ReplyTo::Terminal(tx),
            tool_id: "t".into(),
            subject: subject(ToolKind::Execute, text),
            options: options(),
            watch: None,
        }
    }

    #[test]
    fn an_always_answer_is_recorded_but_answers_nothing_later() {
        let mut p = Permissions::default();
        let id = p.add(pending("git status"));
        let (pend, choice) = p.take(id, Some("always")).unwrap();
        assert!(choice.allows());
        // `take` records it for an agent's request (a `Responder` cannot be
        // made here; the client's own terminal question has no "always").
        p.record(&pend.subject, &choice);
        assert_eq!(p.always_choices().len(), 1);
        // As Lua reads it (acp.AlwaysChoice): the protocol's words.
        assert_eq!(
            serde_json::to_value(&p.always_choices()[0]).unwrap(),
            json!({"kind": "execute", "text": "git status", "option": "allow_always"})
        );
        // A later request is pending like any other: nothing answers it.
        let id2 = p.add(pending("rm -rf /"));
        assert!(p.pending.contains_key(&id2));
        assert!(p.take(id, None).is_err(), "answered once only");
    }

    #[test]
    fn a_wrong_option_leaves_the_request_pending() {
        let mut p = Permissions::default();
        let id = p.add(pending("x"));
        assert!(p.take(id, Some("bogus")).is_err());
        assert!(p.take(id, Some("no")).is_ok());
    }

    /// An allowed (or rejected) execute request of the agent.
    fn decide(p: &mut Permissions, text: &str, option: &str) {
        let o = options().into_iter().find(|o| o.id == option).unwrap();
        p.record(&subject(ToolKind::Execute, text), &Choice::Selected(o));
    }

    #[test]
    fn grants_cover_one_terminal_each_within_the_turn() {
        let mut p = Permissions::default();
        assert!(!grant(&mut p, "ls"));
        decide(&mut p, "ls -la", "once");
        assert!(grant(&mut p, "ls -la"));
        assert!(!grant(&mut p, "ls -la"), "used up");
        decide(&mut p, "make", "no");
        assert!(!grant(&mut p, "make"), "a rejection grants nothing");
        decide(&mut p, "cargo build", "once");
        p.new_turn();
        assert!(!grant(&mut p, "cargo build"), "grants end with the turn");
    }

    #[test]
    fn a_grant_covers_only_its_own_command() {
        let mut p = Permissions::default();
        decide(&mut p, "make test", "once");
        assert!(
            !grant(&mut p, "curl x | sh"),
            "no fallback to another command"
        );
        assert!(
            !grant(&mut p, "make test\ncurl x | sh"),
            "a newline is not a space"
        );
        assert!(
            grant(&mut p, "  make \t test "),
            "the same command, spaced out"
        );
        assert!(!grant(&mut p, "make test"), "used up");
    }

    #[test]
    fn only_an_allowed_execute_request_grants_a_terminal() {
        let mut p = Permissions::default();
        let once = Choice::Selected(opt("once", "allow_once"));
        for kind in [
            ToolKind::Read,
            ToolKind::Fetch,
            ToolKind::Other,
            ToolKind::Edit,
        ] {
            p.record(&subject(kind, "curl x|sh"), &once);
        }
        assert!(!grant(&mut p, "curl x|sh"), "a read titled like a command");
        // "Run" on the client's own question covers that terminal only.
        let id = p.add(pending("curl x|sh"));
        let (_, choice) = p.take(id, Some("once")).unwrap();
        assert!(choice.allows());
        assert!(!grant(&mut p, "curl x|sh"), "not a second one");
    }

    /// A terminal as the agent asks for it.
    fn run_of<'a>(command: Command, cwd: &'a Path, env: &'a BTreeMap<String, String>) -> Run<'a> {
        Run {
            command,
            cwd,
            env,
            inert_env: &[],
        }
    }

    #[test]
    fn a_grant_covers_exactly_the_directory_and_variables_shown() {
        let mut p = Permissions::default();
        let once = Choice::Selected(opt("once", "allow_once"));
        let status = || Command::of_line("git status");
        let none = env(&[]);
        // Allowed as shown: `git status`, no directory, no variables.
        p.record(&subject(ToolKind::Execute, "git status"), &once);
        let pager = env(&[
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "core.pager"),
            ("GIT_CONFIG_VALUE_0", "touch M"),
        ]);
        assert!(
            !p.take_grant(&run_of(status(), root(), &pager), root()),
            "variables the float did not show"
        );
        assert!(
            !p.take_grant(&run_of(status(), Path::new("/p/evil"), &none), root()),
            "another directory"
        );
        assert!(
            !p.take_grant(&run_of(status(), Path::new("/elsewhere"), &none), root()),
            "outside the session"
        );
        assert!(
            p.take_grant(&run_of(status(), Path::new("/p/sub/.."), &none), root()),
            "the session's directory, written another way"
        );
        // A request that showed a directory and variables covers exactly them.
        let mut shown = subject(ToolKind::Execute, "make");
        shown.cwd = Some("sub".into());
        shown.env = env(&[("STAGE", "test")]);
        p.record(&shown, &once);
        let stage = env(&[("STAGE", "test")]);
        let make = || Command::of_line("make");
        assert!(!p.take_grant(&run_of(make(), root(), &stage), root()));
        assert!(!p.take_grant(&run_of(make(), Path::new("/p/sub"), &none), root()));
        let more = env(&[("STAGE", "test"), ("MAKEFLAGS", "x")]);
        assert!(!p.take_grant(&run_of(make(), Path::new("/p/sub"), &more), root()));
        let other = env(&[("STAGE", "prod")]);
        assert!(!p.take_grant(&run_of(make(), Path::new("/p/sub"), &other), root()));
        assert!(p.take_grant(&run_of(make(), Path::new("/p/sub"), &stage), root()));
    }

    #[test]
    fn a_grant_disregards_only_the_exact_pairs_declared_inert() {
        let once = Choice::Selected(opt("once", "allow_once"));
        let inert = [("CLAUDECODE".to_owned(), "1".to_owned())];
        let run = |env: &BTreeMap<String, String>, p: &mut Permissions| {
            p.take_grant(
                &Run {
                    command: Command::of_line("npm test"),
                    cwd: root(),
                    env,
                    inert_env: &inert,
                },
                root(),
            )
        };
        let mut p = Permissions::default();
        p.record(&subject(ToolKind::Execute, "npm test"), &once);
        // claude-code-acp's marker on every command: covered.
        assert!(run(&env(&[("CLAUDECODE", "1")]), &mut p));
        p.record(&subject(ToolKind::Execute, "npm test"), &once);
        assert!(
            !run(&env(&[("CLAUDECODE", "0")]), &mut p),
            "another value of an inert name"
        );
        assert!(
            !run(
                &env(&[("CLAUDECODE", "1"), ("NODE_OPTIONS", "-r x")]),
                &mut p
            ),
            "an inert pair does not cover the others"
        );
        assert!(run(&env(&[]), &mut p), "the grant was not used up");
    }

    /// A kind-less card that shows `line` (Kimi: title `Shell: LINE`),
    /// allowed once by the user.
    fn allow_kindless(p: &mut Permissions, line: &str) {
        let mut s = subject(ToolKind::Other, &format!("Shell: {line}"));
        s.command = Some(line.into());
        p.record(&s, &Choice::Selected(opt("once", "allow_once")));
    }

    #[test]
    fn a_kindless_card_that_shows_a_command_covers_one_run_of_exactly_it() {
        let line = "cat hello.txt notes.txt | tee result.txt";
        let argv = |v: &[&str]| Command::of_argv(v.iter().map(|s| s.to_string()).collect());
        let none = env(&[]);
        let mut p = Permissions::default();
        allow_kindless(&mut p, line);
        // Nothing wider: another command, a second one appended, extra
        // args, another directory, variables.
        for other in [
            "cat hello.txt notes.txt",
            "cat hello.txt notes.txt | tee result.txt; rm -rf ~",
            "cat hello.txt notes.txt | tee result.txt && rm x",
            "Shell: cat hello.txt notes.txt | tee result.txt",
        ] {
            assert!(!grant(&mut p, other), "{other:?}");
        }
        assert!(!p.take_grant(
            &run_of(argv(&["/bin/sh", "-lc", line, "x"]), root(), &none),
            root()
        ));
        assert!(!p.take_grant(
            &run_of(argv(&["bash", "-lc", line, "--"]), root(), &none),
            root()
        ));
        assert!(!p.take_grant(
            &run_of(Command::of_line(line), Path::new("/p/sub"), &none),
            root()
        ));
        let vars = env(&[("PAGER", "x")]);
        assert!(!p.take_grant(&run_of(Command::of_line(line), root(), &vars), root()));
        // Bare, or wrapped as fast-agent and others wrap it: once.
        assert!(grant(&mut p, line));
        assert!(!grant(&mut p, line), "allow-once covers one terminal");
        for wrapped in [
            vec!["/bin/sh", "-lc", line],
            vec!["sh", "-c", line],
            vec!["bash", "-lc", line],
        ] {
            allow_kindless(&mut p, line);
            assert!(
                p.take_grant(&run_of(argv(&wrapped), root(), &none), root()),
                "{wrapped:?}"
            );
        }
        // An argv command is compared word for word with the line.
        allow_kindless(&mut p, "echo 'a b'");
        assert!(!p.take_grant(&run_of(argv(&["echo", "a", "b"]), root(), &none), root()));
        assert!(p.take_grant(&run_of(argv(&["echo", "a b"]), root(), &none), root()));
        // Rejected: nothing.
        let mut s = subject(ToolKind::Other, "Shell: ls");
        s.command = Some("ls".into());
        p.record(&s, &Choice::Selected(opt("no", "reject_once")));
        p.record(&s, &Choice::Cancelled);
        assert!(!grant(&mut p, "ls"));
    }

    #[test]
    fn a_grant_compares_words_with_words() {
        let mut p = Permissions::default();
        let argv = |v: &[&str]| Command::of_argv(v.iter().map(|s| s.to_string()).collect());
        let none = env(&[]);
        decide(&mut p, "echo 'a b'", "once");
        assert!(
            !p.take_grant(&run_of(argv(&["echo", "a", "b"]), root(), &none), root()),
            "three words are not two"
        );
        assert!(p.take_grant(&run_of(argv(&["echo", "a b"]), root(), &none), root()));
        // fast-agent: the line a request showed, run as `/bin/sh -lc LINE`.
        decide(&mut p, "npm test", "once");
        assert!(p.take_grant(
            &run_of(argv(&["/bin/sh", "-lc", "npm test"]), root(), &none),
            root()
        ));
        // An argv list in the request is shown as a line of its words.
        decide(
            &mut p,
            &crate::model::shellwords::join(&["rm".into(), "a b".into()]),
            "once",
        );
        assert!(!grant(&mut p, "rm a b"));
        assert!(p.take_grant(&run_of(argv(&["rm", "a b"]), root(), &none), root()));
    }
}
