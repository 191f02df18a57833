//! How a card names a file: inside the session's root relative to it,
//! under the user's home with `~`, else as the agent sent it. Display
//! only: the card's data (what policies, review and edits use) keeps the
//! agent's path.

use std::path::{Path, PathBuf};

/// The folders a path is shown relative to (none: shown as it is).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathDisplay {
    /// The session's root (its cwd).
    pub root: Option<PathBuf>,
    /// The user's home.
    pub home: Option<PathBuf>,
}

impl PathDisplay {
    pub fn new(root: Option<PathBuf>, home: Option<PathBuf>) -> Self {
        let usable = |p: Option<PathBuf>| p.filter(|p| p.is_absolute() && p.parent().is_some());
        Self {
            root: usable(root),
            home: usable(home),
        }
    }

    /// `path` as a card shows it: relative to the root when inside it
    /// (the root itself is `.`), `~/…` when under the home, else as it is.
    pub fn show(&self, path: &str) -> String {
        let p = Path::new(path);
        if !p.is_absolute() {
            return path.to_owned();
        }
        if let Some(rel) = self.root.as_deref().and_then(|r| p.strip_prefix(r).ok()) {
            return match rel.to_str() {
                Some("") => ".".to_owned(),
                Some(rel) => rel.to_owned(),
                None => path.to_owned(),
            };
        }
        if let Some(rel) = self.home.as_deref().and_then(|h| p.strip_prefix(h).ok()) {
            return match rel.to_str() {
                Some("") => "~".to_owned(),
                Some(rel) => format!("~/{rel}"),
                None => path.to_owned(),
            };
        }
        path.to_owned()
    }

    /// A title that ends with an absolute path ("Edit /p/a.rs", "Read
    /// `/p/a.rs`", or only the path) with that path shown as `show` does;
    /// any other title as it is.
    pub fn title(&self, title: &str) -> String {
        let start = title.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let (head, last) = title.split_at(start);
        let quoted = last.len() > 2 && last.starts_with('`') && last.ends_with('`');
        let path = if quoted {
            &last[1..last.len() - 1]
        } else {
            last
        };
        if !path.starts_with('/') {
            return title.to_owned();
        }
        let shown = self.show(path);
        if quoted {
            format!("{head}`{shown}`")
        } else {
            format!("{head}{shown}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn display() -> PathDisplay {
        PathDisplay::new(Some("/home/u/proj".into()), Some("/home/u".into()))
    }

    #[test]
    fn paths_inside_the_root_are_relative_and_under_home_start_with_tilde() {
        let d = display();
        assert_eq!(d.show("/home/u/proj/src/a.rs"), "src/a.rs");
        assert_eq!(d.show("/home/u/proj"), ".");
        assert_eq!(d.show("/home/u/proj2/a.rs"), "~/proj2/a.rs");
        assert_eq!(d.show("/home/u"), "~");
        assert_eq!(d.show("/etc/hosts"), "/etc/hosts");
        assert_eq!(d.show("src/a.rs"), "src/a.rs");
        // Without folders (a thread of no session), as the agent sent it.
        assert_eq!(
            PathDisplay::default().show("/home/u/proj/a.rs"),
            "/home/u/proj/a.rs"
        );
        // A root of `/` or a relative one would make every path relative.
        assert_eq!(
            PathDisplay::new(Some("/".into()), None).show("/etc/hosts"),
            "/etc/hosts"
        );
    }

    /// The lines of the last card a thread shows after `updates`.
    fn card_lines(paths: PathDisplay, updates: &[serde_json::Value]) -> Vec<String> {
        use crate::model::events::ThreadEvent;
        let mut t = crate::model::thread::Thread::new("claude").with_paths(paths);
        t.begin_turn("fix it");
        let mut last = Vec::new();
        for u in updates {
            for ev in t.apply_json(u) {
                if let ThreadEvent::Added { lines, .. } | ThreadEvent::Replaced { lines, .. } = ev {
                    last = lines;
                }
            }
        }
        // An export holds what the view shows.
        assert!(t.to_markdown().ends_with(&last.join("\n")));
        last
    }

    #[test]
    fn a_claude_code_edit_card_shows_the_path_once_relative_and_no_newline_remarks() {
        use serde_json::json;
        // claude-agent-acp 0.100.0, recorded: the Edit's announcement, its
        // input, then the snippet diff (no final newline on either side).
        let p = "/home/u/proj/hello.lua";
        let updates = [
            json!({"sessionUpdate": "tool_call", "toolCallId": "e", "rawInput": {}, "status": "pending",
                "title": "Edit", "kind": "edit", "content": [], "locations": []}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "rawInput": {"file_path": p},
                "title": "Edit hello.lua", "locations": [{"path": p}]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "e",
                "rawInput": {"replace_all": false, "file_path": p, "old_string": "function M.greet()\n  print('helo')",
                    "new_string": "function M.greet(name)\n  print('hello, ' .. name)"},
                "content": [{"type": "diff", "path": p, "oldText": "function M.greet()\n  print('helo')",
                    "newText": "function M.greet(name)\n  print('hello, ' .. name)"}]}),
        ];
        assert_eq!(
            card_lines(display(), &updates),
            [
                "edit · Edit hello.lua · pending",
                "  `hello.lua`",
                "  diff `hello.lua`",
                "  ```diff",
                "  @@ -1,2 +1,2 @@",
                "  -function M.greet()",
                "  -  print('helo')",
                "  +function M.greet(name)",
                "  +  print('hello, ' .. name)",
                "  ```",
            ]
        );
        // Outside the root: under home with `~`, else as sent; an input that
        // adds what the card does not show stays.
        let other = json!({"sessionUpdate": "tool_call", "toolCallId": "r", "title": "Read /home/u/notes.md",
            "kind": "read", "rawInput": {"pattern": "TODO"}, "locations": [{"path": "/home/u/notes.md", "line": 3}, {"path": "/etc/hosts"}]});
        assert_eq!(
            card_lines(display(), &[other]),
            [
                "read · Read ~/notes.md · pending",
                "  `~/notes.md:3`",
                "  `/etc/hosts`",
                "  input: `TODO`"
            ]
        );
        // A command the title holds is not repeated; one it lacks is shown
        // as sent, and so is the title of a command.
        let run = |title: &str, cmd: &str| {
            card_lines(
                display(),
                &[
                    json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": title,
                "kind": "execute", "rawInput": {"command": cmd}}),
                ],
            )
        };
        assert_eq!(
            run("Run make test", "make test"),
            ["run · Run make test · pending"]
        );
        assert_eq!(
            run("`sh hello.sh`", "echo hello"),
            ["run · `sh hello.sh` · pending", "  input: `echo hello`"]
        );
        assert_eq!(
            run("cat /home/u/proj/a", "cat /home/u/proj/a | wc"),
            [
                "run · cat /home/u/proj/a · pending",
                "  input: `cat /home/u/proj/a | wc`"
            ]
        );
        assert_eq!(
            run("Run makefile", "make"),
            ["run · Run makefile · pending", "  input: `make`"]
        );
    }

    #[test]
    fn only_a_title_that_ends_with_a_path_changes() {
        let d = display();
        assert_eq!(d.title("/home/u/proj/a.rs"), "a.rs");
        assert_eq!(d.title("Edit /home/u/proj/src/a.rs"), "Edit src/a.rs");
        assert_eq!(d.title("Read `/home/u/proj/a.rs`"), "Read `a.rs`");
        assert_eq!(
            d.title("Read /home/u/proj/a.rs twice"),
            "Read /home/u/proj/a.rs twice"
        );
        assert_eq!(d.title("Edit hello.lua"), "Edit hello.lua");
        assert_eq!(d.title("`ls /`"), "`ls /`");
        assert_eq!(d.title(""), "");
    }
}
