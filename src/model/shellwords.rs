//! Commands as words: what a grant compares. A shell line that is nothing
//! but words (quoted or not) is the same command as the argv of those
//! words; a line that uses anything else the shell interprets (an
//! operator, a redirection, an expansion, a glob, a comment, an
//! assignment) is compared as the exact line; and `sh -c LINE` (or
//! `bash -lc LINE`, …) counts as LINE, only in exactly that form.

/// A command as a grant compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Plain words (an argv, or a shell line of words only).
    Words(Vec<String>),
    /// A shell line that is more than words, trimmed.
    Line(String),
}

impl Command {
    /// A shell line (what a `terminal/create` without `args` runs through
    /// the user's shell, and what a permission request shows).
    pub fn of_line(line: &str) -> Self {
        match words(line) {
            Some(w) => Self::of_argv(w),
            None => Command::Line(line.trim().to_owned()),
        }
    }

    /// A program and its arguments, run as they are; `sh -c LINE` is LINE.
    pub fn of_argv(argv: Vec<String>) -> Self {
        match argv.as_slice() {
            [shell, flag, line] if is_shell(shell) && (flag == "-c" || flag == "-lc") => {
                Self::of_line(line)
            }
            _ => Command::Words(argv),
        }
    }
}

/// A program that runs its `-c` argument as a shell line.
fn is_shell(program: &str) -> bool {
    let name = program
        .strip_prefix("/usr/bin/")
        .or_else(|| program.strip_prefix("/bin/"))
        .unwrap_or(program);
    matches!(name, "sh" | "bash" | "dash" | "zsh" | "ksh")
}

/// Characters the shell interprets when they are not quoted (besides
/// quotes, backslash and blanks): a line holding one of them is more than
/// words.
const SPECIAL: &[char] = &[
    ';', '&', '|', '<', '>', '(', ')', '$', '`', '*', '?', '[', ']', '{', '}', '~', '#', '!', '^',
    '\n', '\r',
];

/// The words of `line` with quotes and backslashes removed, or None when
/// the shell would read it as more than words: an unquoted special
/// character, an expansion inside double quotes, an unterminated quote, a
/// line continuation, or an assignment before the command (`X=1 cmd`).
pub fn words(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    // An unquoted `=` in the first word makes it an assignment.
    let mut assignment = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        x => word.push(x),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            x @ ('\\' | '"' | '$' | '`') => word.push(x),
                            '\n' => return None,
                            x => {
                                word.push('\\');
                                word.push(x);
                            }
                        },
                        '$' | '`' => return None,
                        x => word.push(x),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next()? {
                    '\n' => return None,
                    x => word.push(x),
                }
            }
            c if SPECIAL.contains(&c) => return None,
            c => {
                if c == '=' && out.is_empty() {
                    assignment = true;
                }
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    (!assignment).then_some(out)
}

/// `word` as the shell would need it to read it back as one word.
pub fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-+./:,@%=".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r#"'\''"#))
    }
}

/// An argv as a shell line whose words are exactly `argv` (the first word
/// is quoted when it holds `=`, which would make it an assignment).
pub fn join(argv: &[String]) -> String {
    argv.iter()
        .enumerate()
        .map(|(i, w)| {
            if i == 0 && w.contains('=') {
                format!("'{}'", w.replace('\'', r#"'\''"#))
            } else {
                quote(w)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(line: &str) -> Option<Vec<&'static str>> {
        words(line).map(|v| {
            v.into_iter()
                .map(|s| &*Box::leak(s.into_boxed_str()))
                .collect()
        })
    }

    #[test]
    fn plain_and_quoted_words() {
        assert_eq!(w("git status"), Some(vec!["git", "status"]));
        assert_eq!(w("  make \t test "), Some(vec!["make", "test"]));
        assert_eq!(
            w("echo 'a  b' \"c d\" e\\ f"),
            Some(vec!["echo", "a  b", "c d", "e f"])
        );
        assert_eq!(
            w("echo \"a\\\"b\" 'it'\\''s'"),
            Some(vec!["echo", "a\"b", "it's"])
        );
        assert_eq!(
            w("git log --output=x"),
            Some(vec!["git", "log", "--output=x"])
        );
        assert_eq!(w(""), Some(vec![]));
        assert_eq!(w("echo ''"), Some(vec!["echo", ""]));
    }

    #[test]
    fn anything_the_shell_interprets_is_more_than_words() {
        for line in [
            "a; b",
            "a && b",
            "a | b",
            "a > f",
            "a < f",
            "a $(b)",
            "a `b`",
            "a $HOME",
            "a \"$HOME\"",
            "a \"`b`\"",
            "ls *.rs",
            "ls ?",
            "ls [ab]",
            "echo {a,b}",
            "cat ~/.ssh/id_rsa",
            "a # comment",
            "a\nb",
            "a 'unterminated",
            "a \"unterminated",
            "a \\",
            "a \\\nb",
            "GIT_CONFIG_COUNT=1 git status",
            "X=1",
        ] {
            assert_eq!(words(line), None, "{line:?}");
        }
        // Quoted, they are text.
        assert_eq!(
            w("echo ';' '$HOME' \"*\""),
            Some(vec!["echo", ";", "$HOME", "*"])
        );
        assert_eq!(w("'X=1' git"), Some(vec!["X=1", "git"]));
    }

    #[test]
    fn commands_compare_as_words_or_as_exact_lines() {
        let words = |v: &[&str]| Command::Words(v.iter().map(|s| s.to_string()).collect());
        let argv = |v: &[&str]| Command::of_argv(v.iter().map(|s| s.to_string()).collect());
        assert_eq!(Command::of_line("make  test"), words(&["make", "test"]));
        assert_eq!(argv(&["make", "test"]), Command::of_line("make test"));
        // A shell line of words is not the argv of its text joined.
        assert_ne!(argv(&["echo", "a b"]), Command::of_line("echo a b"));
        assert_eq!(argv(&["echo", "a b"]), Command::of_line("echo 'a b'"));
        // `sh -c LINE` is LINE, in exactly that form.
        assert_eq!(
            argv(&["/bin/sh", "-lc", "git status"]),
            Command::of_line("git status")
        );
        assert_eq!(argv(&["bash", "-c", "a | b"]), Command::of_line("a | b"));
        assert_eq!(
            Command::of_line("sh -c 'npm test'"),
            Command::of_line("npm test")
        );
        assert_ne!(
            argv(&["sh", "-c", "git status", "x"]),
            Command::of_line("git status")
        );
        assert_ne!(
            argv(&["sh", "-e", "git status"]),
            Command::of_line("git status")
        );
        assert_ne!(
            argv(&["python", "-c", "git status"]),
            Command::of_line("git status")
        );
        // A line that is more than words matches only itself.
        assert_eq!(Command::of_line(" a | b "), Command::Line("a | b".into()));
        assert_ne!(Command::of_line("a | b"), Command::of_line("a  | b"));
        assert_ne!(argv(&["a", "|", "b"]), Command::of_line("a | b"));
    }

    #[test]
    fn a_joined_argv_reads_back_as_the_same_words() {
        for argv in [
            vec!["git", "status"],
            vec![
                "echo", "a b", "it's", "", "$HOME", ";", "*", "~", "#x", "a\nb",
            ],
            vec!["X=1", "git"],
            vec!["--output=f", "-o"],
        ] {
            let argv: Vec<String> = argv.into_iter().map(String::from).collect();
            assert_eq!(words(&join(&argv)), Some(argv.clone()), "{argv:?}");
        }
        assert_eq!(join(&["git".into(), "status".into()]), "git status");
    }
}
