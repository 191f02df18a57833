//! How the user's policy judges a request of the agent: the auto-allow
//! rules of the config (`*`/`?` patterns over what the user reads), what a
//! permission is judged by (`Subject`), and what an allowed execute request
//! grants a later `terminal/create` (`Run`).
//!
//! The rules kept here:
//! - a rule matches on what the user can read: the card's kind as first
//!   recorded (a request cannot change it) and its command or title;
//! - the policy never picks an "always" option: what "always" means is the
//!   agent's business (a command prefix for Codex, a tool for Gemini);
//! - an execute rule's wildcards stop at anything that would run a second
//!   command, and never cover variables the agent sets or a directory
//!   outside the session's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::roots::resolve_lenient;
use crate::config::AutoAllowRule;
use crate::model::schema::{PermissionOptionKind, ToolKind};
use crate::model::shellwords::{self, Command};
use crate::model::update::PermissionOption;

/// `*` / `?` wildcard match of the whole `text`.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    wildcard_match_with(pattern, text, |_| true)
}

/// Characters that end or chain a shell command, or substitute one: a
/// wildcard of a command rule never matches them, so `git status*` does not
/// allow `git status; rm -rf /` (the pattern may still name them literally).
const SHELL_CONTROL: &[char] = &[';', '&', '|', '`', '$', '(', ')', '<', '>', '\n', '\r'];

/// Wildcard match of a shell command: as [`wildcard_match`], but `*` and
/// `?` stand for no shell control character, and never for an option that
/// makes a reading command write a file (`git log*` does not allow `git
/// log --output=FILE`); the pattern may name those literally.
pub fn command_match(pattern: &str, text: &str) -> bool {
    if !wildcard_match_with(pattern, text, |c| !SHELL_CONTROL.contains(&c)) {
        return false;
    }
    // The words as the shell reads them (quotes removed), and as written.
    let mut words: Vec<String> = shellwords::words(text).unwrap_or_default();
    words.extend(text.split_whitespace().map(str::to_owned));
    // Named: a word of the pattern starts with the option itself.
    let named = |opt: &str| pattern.split_whitespace().any(|p| p.starts_with(opt));
    !words
        .iter()
        .filter_map(|w| output_option(w))
        .any(|opt| !named(opt))
}

/// `--output`, `--output=FILE`, `-o`, `-oFILE`: the options of `git log`,
/// `git diff`, `git show` (and many other commands) that write a file.
/// Gives the option's name.
fn output_option(word: &str) -> Option<&'static str> {
    let w = word.trim_start_matches(['\'', '"', '\\']);
    if w == "--output" || w.starts_with("--output=") {
        Some("--output")
    } else if w.starts_with("-o") && !w.starts_with("--") {
        Some("-o")
    } else {
        None
    }
}

/// `*` / `?` match of the whole `text`, where a wildcard stands only for
/// characters `wild` accepts. Runs the pattern as a set of positions, one
/// text character at a time (no backtracking to get wrong when a star may
/// not take every character).
fn wildcard_match_with(pattern: &str, text: &str, wild: impl Fn(char) -> bool) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    // `at[i]`: the text so far can end with the pattern matched up to `i`.
    let mut at = vec![false; p.len() + 1];
    let close = |at: &mut Vec<bool>| {
        // A star may match nothing.
        for i in 0..p.len() {
            if at[i] && p[i] == '*' {
                at[i + 1] = true;
            }
        }
    };
    at[0] = true;
    close(&mut at);
    for c in text.chars() {
        let mut next = vec![false; p.len() + 1];
        for i in (0..p.len()).filter(|&i| at[i]) {
            match p[i] {
                '*' if wild(c) => next[i] = true,
                '?' if wild(c) => next[i + 1] = true,
                '*' | '?' => {}
                lit if lit == c => next[i + 1] = true,
                _ => {}
            }
        }
        close(&mut next);
        if !next.contains(&true) {
            return false;
        }
        at = next;
    }
    at[p.len()]
}

/// What a request is judged by, and what the float shows of it: the
/// card's recorded kind, the text the user reads (its command, else its
/// title), and for a command the directory and the variables its raw
/// input names. An allowed execute request grants exactly this.
#[derive(Debug, Clone, PartialEq)]
pub struct Subject {
    pub kind: ToolKind,
    pub text: String,
    /// The directory shown (`rawInput.cwd`); None: the session's.
    pub cwd: Option<String>,
    /// The variables shown (`rawInput.env`).
    pub env: BTreeMap<String, String>,
    /// For a card with no kind: the command line it shows (its raw
    /// input's command, else the one a shell title names, see
    /// [`title_command`]), which the user's "allow" lets a terminal run.
    pub command: Option<String>,
}

impl Subject {
    pub fn new(kind: ToolKind, text: impl Into<String>) -> Self {
        Subject {
            kind,
            text: text.into(),
            cwd: None,
            env: BTreeMap::new(),
            command: None,
        }
    }

    /// The command line allowing this lets a `terminal/create` run: an
    /// execute card's text, a kind-less card's shown command; None for
    /// every other kind (a read titled like a command runs nothing).
    pub fn runs(&self) -> Option<&str> {
        match self.kind {
            ToolKind::Execute => Some(&self.text),
            ToolKind::Other => self.command.as_deref(),
            _ => None,
        }
    }
}

/// Labels of a title that names the shell line after it (`Shell: LINE`,
/// as Kimi CLI titles its kind-less shell calls), compared without case.
const SHELL_LABELS: &[&str] = &[
    "shell",
    "bash",
    "sh",
    "terminal",
    "run",
    "run command",
    "run_shell_command",
    "execute",
    "exec",
    "command",
];

/// The shell line a tool title names: `LABEL: LINE` with a shell label
/// (see [`SHELL_LABELS`]) and a line that is not blank, as written (a
/// grant compares it with a terminal's command as the shell reads it).
/// Any other title names no command.
pub fn title_command(title: &str) -> Option<&str> {
    let (label, line) = title.split_once(": ")?;
    let known = SHELL_LABELS
        .iter()
        .any(|l| l.eq_ignore_ascii_case(label.trim()));
    (known && !line.trim().is_empty()).then_some(line)
}

/// The directory a subject's command runs in: its cwd (relative to the
/// session's), else the session's, with symlinks resolved.
pub fn subject_dir(subject: &Subject, session_cwd: &Path) -> PathBuf {
    let dir = match &subject.cwd {
        Some(c) => session_cwd.join(c),
        None => session_cwd.to_path_buf(),
    };
    resolve_lenient(&dir)
}

/// The policy's answer, if a rule the user wrote covers the request: the
/// `allow_once` option (never an "always" one) and a note for the card.
/// An execute rule is about a command's text: it never covers variables
/// the agent sets (a rule cannot have seen them) nor a directory outside
/// the session's (`session_cwd`); such a request is shown to the user.
pub fn policy_answer(
    rules: &[AutoAllowRule],
    subject: &Subject,
    options: &[PermissionOption],
    session_cwd: &Path,
) -> Option<(PermissionOption, String)> {
    // An execute rule's pattern is over a shell line: its wildcards stop
    // at anything that would run a second command.
    let matches = if subject.kind == ToolKind::Execute {
        if !subject.env.is_empty()
            || !subject_dir(subject, session_cwd).starts_with(resolve_lenient(session_cwd))
        {
            return None;
        }
        command_match
    } else {
        wildcard_match
    };
    let rule = rules
        .iter()
        .find(|r| r.kind == subject.kind.as_str() && matches(&r.pattern, &subject.text))?;
    let option = options
        .iter()
        .find(|o| o.kind == PermissionOptionKind::AllowOnce)?
        .clone();
    let note = if rule.pattern == "*" {
        format!("auto-allowed (`{}` is allowed in your config)", rule.kind)
    } else {
        format!(
            "auto-allowed (`{}` matching `{}` is allowed in your config)",
            rule.kind, rule.pattern
        )
    };
    Some((option, note))
}

/// `env` less the pairs the user declared inert (`terminal.inert_env`):
/// only a name with exactly that value is dropped.
pub fn without_inert(
    env: &BTreeMap<String, String>,
    inert: &[(String, String)],
) -> BTreeMap<String, String> {
    env.iter()
        .filter(|(k, v)| !inert.iter().any(|(n, iv)| n == *k && iv == *v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A `terminal/create` as a grant compares it.
pub struct Run<'a> {
    pub command: Command,
    pub cwd: &'a Path,
    /// Every variable the agent sets (the confirmation shows them all).
    pub env: &'a BTreeMap<String, String>,
    /// Pairs a grant disregards (`terminal.inert_env`).
    pub inert_env: &'a [(String, String)],
}

/// Options, subjects and a session directory, for the tests of the policy
/// and of the permission state.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    pub(crate) fn opt(id: &str, kind: &str) -> PermissionOption {
        PermissionOption {
            id: id.into(),
            name: id.into(),
            kind: PermissionOptionKind::parse(kind),
        }
    }

    pub(crate) fn options() -> Vec<PermissionOption> {
        vec![
            opt("always", "allow_always"),
            opt("once", "allow_once"),
            opt("no", "reject_once"),
        ]
    }

    pub(crate) fn subject(kind: ToolKind, text: &str) -> Subject {
        Subject::new(kind, text)
    }

    pub(crate) fn root() -> &'static Path {
        Path::new("/p")
    }

    pub(crate) fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{env, opt, options, root, subject};
    use super::*;

    fn rule(kind: &str, pattern: &str) -> AutoAllowRule {
        AutoAllowRule {
            kind: kind.into(),
            pattern: pattern.into(),
        }
    }

    #[test]
    fn wildcards_match_the_whole_text() {
        assert!(wildcard_match("git status*", "git status --short"));
        assert!(wildcard_match("git status*", "git status"));
        assert!(!wildcard_match("git status*", "rm -rf / && git status"));
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("a?c", "abc"));
        assert!(!wildcard_match("a?c", "abbc"));
        assert!(wildcard_match("*.rs", "src/a.rs"));
        assert!(!wildcard_match("*.rs", "src/a.rs.bak"));
        assert!(wildcard_match("a*", "a*b"), "a star in the text is text");
    }

    #[test]
    fn command_wildcards_stop_at_shell_control_characters() {
        let p = "git status*";
        assert!(command_match(p, "git status --short"));
        assert!(command_match(p, "git status"));
        assert!(!command_match(p, "git status; rm -rf /"), ";");
        assert!(!command_match(p, "git status && rm -rf /"), "&&");
        assert!(!command_match(p, "git status & rm -rf /"), "&");
        assert!(!command_match(p, "git status | sh"), "|");
        assert!(!command_match(p, "git status $(curl x)"), "$(…)");
        assert!(!command_match(p, "git status `curl x`"), "backticks");
        assert!(!command_match(p, "git status\nrm -rf /"), "newline");
        assert!(!command_match(p, "git status > ~/.bashrc"), ">");
        assert!(!command_match(p, "git status < x"), "<");
        assert!(!command_match("ls ?", "ls ;"), "? is a wildcard too");
        assert!(
            !command_match("*status", "rm x; git status"),
            "a leading star"
        );
        assert!(command_match("*status", "git status"));
        // Named in the pattern, they are the user's own words.
        assert!(command_match("make a && make b*", "make a && make b -j2"));
        assert!(!command_match("make a && make b*", "make a && make b; x"));
        // A rule over an execute card uses the command match.
        let rules = vec![rule("execute", "git status*")];
        assert!(policy_answer(
            &rules,
            &subject(ToolKind::Execute, "git status; rm -rf /"),
            &options(),
            root()
        )
        .is_none());
    }

    #[test]
    fn command_wildcards_never_cover_an_option_that_writes_a_file() {
        for p in ["git log*", "git diff*", "git show*", "git log *"] {
            let cmd = p.trim_end_matches(['*', ' ']);
            assert!(command_match(p, &format!("{cmd} --oneline -5")), "{p}");
            for attack in [
                "--output=/home/u/.bashrc",
                "--output /home/u/.bashrc",
                "-o x",
                "-ox",
                "'--output=x'",
                "--out'put=x'",
                "-p --output=x",
            ] {
                let text = format!("{cmd} {attack}");
                assert!(!command_match(p, &text), "{p} admitted {text}");
            }
        }
        // Named in the pattern, they are the user's own words.
        assert!(command_match(
            "git diff --output=d.patch*",
            "git diff --output=d.patch HEAD"
        ));
        assert!(command_match("git status*", "git status --short"));
        // The rules the README and this doc give as examples.
        assert!(!command_match("git status*", "git status --output=x"));
    }

    #[test]
    fn rules_match_kind_and_command_and_pick_allow_once_only() {
        let rules = vec![rule("execute", "git status*"), rule("read", "*")];
        let (o, note) = policy_answer(
            &rules,
            &subject(ToolKind::Execute, "git status"),
            &options(),
            root(),
        )
        .unwrap();
        assert_eq!(o.id, "once", "never the always option");
        assert!(note.contains("git status*"), "{note}");
        assert!(policy_answer(
            &rules,
            &subject(ToolKind::Execute, "rm -rf /"),
            &options(),
            root()
        )
        .is_none());
        // A kind the user did not allow, whatever the text.
        assert!(policy_answer(
            &rules,
            &subject(ToolKind::Edit, "git status"),
            &options(),
            root()
        )
        .is_none());
        // No allow_once option: the user is asked.
        let only_always = vec![opt("always", "allow_always"), opt("no", "reject_once")];
        assert!(policy_answer(
            &rules,
            &subject(ToolKind::Read, "a.txt"),
            &only_always,
            root()
        )
        .is_none());
        // The default (no rules) answers nothing.
        assert!(
            policy_answer(&[], &subject(ToolKind::Read, "a.txt"), &options(), root()).is_none()
        );
    }

    #[test]
    fn a_shell_title_names_its_line_and_nothing_else_does() {
        let line = "cat hello.txt notes.txt | tee result.txt";
        assert_eq!(title_command(&format!("Shell: {line}")), Some(line));
        assert_eq!(title_command("bash: make test"), Some("make test"));
        assert_eq!(title_command("Run command: ls"), Some("ls"));
        for title in [
            "ReadFile: hello.txt",
            "StrReplaceFile: a.txt",
            "Shell",
            "Shell: ",
            "Shell:ls",
            "make test",
            "My Shell: ls",
            "",
        ] {
            assert_eq!(title_command(title), None, "{title:?}");
        }
        // What a subject lets a terminal run.
        let mut s = subject(ToolKind::Other, "Shell: ls");
        assert_eq!(s.runs(), None, "a kind-less card without a command");
        s.command = Some("ls".into());
        assert_eq!(s.runs(), Some("ls"));
        s.kind = ToolKind::Read;
        assert_eq!(s.runs(), None, "a read runs nothing, whatever it shows");
        assert_eq!(subject(ToolKind::Execute, "ls").runs(), Some("ls"));
    }

    #[test]
    fn an_execute_rule_never_covers_variables_or_another_directory() {
        let rules = vec![rule("execute", "git status*")];
        let mut s = subject(ToolKind::Execute, "git status");
        assert!(policy_answer(&rules, &s, &options(), root()).is_some());
        s.env = env(&[("GIT_CONFIG_COUNT", "1")]);
        assert!(
            policy_answer(&rules, &s, &options(), root()).is_none(),
            "a rule cannot have seen the variables"
        );
        s.env.clear();
        s.cwd = Some("/elsewhere".into());
        assert!(policy_answer(&rules, &s, &options(), root()).is_none());
        s.cwd = Some("../p2".into());
        assert!(policy_answer(&rules, &s, &options(), root()).is_none());
        s.cwd = Some("sub".into());
        assert!(
            policy_answer(&rules, &s, &options(), root()).is_some(),
            "a directory inside the session's"
        );
    }
}
