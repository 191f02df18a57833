//! Secrets kept out of the log and of saved traces. One set of rules for
//! both: a name that looks secret (the user's `terminal.env_deny` patterns,
//! plus a few built-in ones) hides its value, in `NAME=value` text and as a
//! JSON object key; the values of every `env` and `headers` list (terminal
//! requests, MCP servers) are hidden; `authenticate` keeps only its
//! `methodId`; `Bearer` tokens, `Authorization` credentials (any scheme)
//! and the value after a secret flag (`--api-key v`) are hidden. Names
//! compare with `-` and `.` as `_` (`X-Api-Key` is `X_API_KEY`).
//!
//! A message cut to the trace's size limit is no JSON document any more:
//! `json_prefix` applies the same rules to such a prefix as it reads it, so
//! a saved trace never holds an unredacted byte of it.
//!
//! May use: nothing.

pub mod json_prefix;

use std::borrow::Cow;
use std::sync::OnceLock;

use parking_lot::RwLock;
use serde_json::Value;

pub const REDACTED: &str = "[redacted]";

/// Names that always count as secret, whatever the user's deny list says
/// (case is ignored, `*` any characters, `?` one).
const BUILT_IN: &[&str] = &[
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*API_KEY*",
    "*APIKEY*",
    "*ACCESS_KEY*",
    "*PRIVATE_KEY*",
    "*CREDENTIAL*",
    "AUTHORIZATION",
    "PROXY_AUTHORIZATION",
    "COOKIE",
    "SET_COOKIE",
];

fn patterns() -> &'static RwLock<Vec<String>> {
    static P: OnceLock<RwLock<Vec<String>>> = OnceLock::new();
    P.get_or_init(|| RwLock::new(Vec::new()))
}

/// Sets the user's deny list (`terminal.env_deny`).
pub fn set_deny_list(globs: Vec<String>) {
    *patterns().write() = globs.into_iter().map(|g| g.to_ascii_uppercase()).collect();
}

/// `*`/`?` glob match, ASCII case-insensitive (`glob` is upper case).
fn glob_match(glob: &[u8], name: &[u8]) -> bool {
    // Iterative with one backtrack point: linear enough for short names.
    let (mut g, mut n) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while n < name.len() {
        let c = name[n].to_ascii_uppercase();
        if g < glob.len() && (glob[g] == b'?' || glob[g] == c) {
            g += 1;
            n += 1;
        } else if g < glob.len() && glob[g] == b'*' {
            star = Some(g);
            mark = n;
            g += 1;
        } else if let Some(s) = star {
            g = s + 1;
            mark += 1;
            n = mark;
        } else {
            return false;
        }
    }
    glob[g..].iter().all(|&b| b == b'*')
}

/// Whether a variable or key named `name` holds a secret. A header or
/// flag spelling (`X-Api-Key`, `api.key`) counts as the variable
/// (`X_API_KEY`).
pub fn is_secret_name(name: &str) -> bool {
    if name.is_empty() || name.len() > 128 {
        return false;
    }
    let n = name.as_bytes();
    let matches = |n: &[u8]| {
        BUILT_IN.iter().any(|g| glob_match(g.as_bytes(), n))
            || patterns()
                .read()
                .iter()
                .any(|g| glob_match(g.as_bytes(), n))
    };
    if matches(n) {
        return true;
    }
    let under: Vec<u8> = n
        .iter()
        .map(|&b| if b == b'-' || b == b'.' { b'_' } else { b })
        .collect();
    under != n && matches(&under)
}

/// Whether `name` (dashes and dots as `_`) is an `Authorization` header,
/// whose value is a scheme and credentials (`token x`, `Bearer x`).
fn is_authorization(name: &str) -> bool {
    let n = name.trim_matches(|c| c == '-' || c == '_');
    n.eq_ignore_ascii_case("authorization") || n.eq_ignore_ascii_case("proxy-authorization")
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.'
}

/// Where a value that starts at `start` ends: at whitespace, a quote, or
/// a separator of lists and query strings.
fn value_end(s: &[u8], start: usize) -> usize {
    let mut i = start;
    // A quoted value is hidden up to its closing quote.
    if i < s.len() && (s[i] == b'"' || s[i] == b'\'') {
        let q = s[i];
        i += 1;
        while i < s.len() && s[i] != q {
            i += 1;
        }
        return (i + 1).min(s.len());
    }
    while i < s.len()
        && !matches!(
            s[i],
            b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\'' | b'&' | b',' | b';' | b'}' | b')'
        )
    {
        i += 1;
    }
    i
}

/// `text` with the value of every `NAME=value` / `NAME: value` whose name
/// is secret, and every `Bearer` token, replaced. Unchanged text is not
/// copied.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let s = text.as_bytes();
    // Cheap exit: no assignment, no bearer, no flag.
    if !s.iter().any(|&b| b == b'=' || b == b':') && !text.contains("earer") && !text.contains("--")
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        let sep = b == b'=' || b == b':';
        if sep && i > 0 {
            // The name before the separator (a JSON key's quotes included,
            // spaces allowed: `api_key = "…"`).
            let mut end = i;
            while end > 0 && (s[end - 1] == b' ' || s[end - 1] == b'\t') {
                end -= 1;
            }
            if end > 0 && (s[end - 1] == b'"' || s[end - 1] == b'\'') {
                end -= 1;
            }
            let mut start = end;
            while start > 0 && is_name_byte(s[start - 1]) {
                start -= 1;
            }
            let name = &text[start..end];
            if start < end && is_secret_name(name) {
                let mut v = i + 1;
                while v < s.len() && (s[v] == b' ' || s[v] == b'\t') {
                    v += 1;
                }
                let stop = if is_authorization(name) {
                    authorization_value(s, &mut v)
                } else {
                    // `X_TOKEN=Bearer x` keeps the scheme, hides the token.
                    for scheme in [&b"bearer "[..], &b"basic "[..]] {
                        if s.len() >= v + scheme.len()
                            && s[v..v + scheme.len()].eq_ignore_ascii_case(scheme)
                        {
                            v += scheme.len();
                        }
                    }
                    value_end(s, v)
                };
                if stop > v {
                    out.push_str(&text[copied..v]);
                    let quoted = s[v] == b'"' || s[v] == b'\'';
                    if quoted {
                        out.push(s[v] as char);
                        out.push_str(REDACTED);
                        out.push(s[v] as char);
                    } else {
                        out.push_str(REDACTED);
                    }
                    copied = stop;
                    i = stop;
                    continue;
                }
            }
        }
        // `--api-key v`: the value after a secret flag.
        if b == b'-'
            && s.get(i + 1) == Some(&b'-')
            && (i == 0 || matches!(s[i - 1], b' ' | b'\t' | b'"' | b'\'' | b'\n'))
        {
            let mut e = i + 2;
            while e < s.len() && (s[e].is_ascii_alphanumeric() || s[e] == b'-' || s[e] == b'_') {
                e += 1;
            }
            let mut v = e;
            while v < s.len() && (s[v] == b' ' || s[v] == b'\t') {
                v += 1;
            }
            if v > e && v < s.len() && s[v] != b'-' && is_secret_flag_text(&text[i..e]) {
                let stop = value_end(s, v);
                if stop > v {
                    out.push_str(&text[copied..v]);
                    if s[v] == b'"' || s[v] == b'\'' {
                        out.push(s[v] as char);
                        out.push_str(REDACTED);
                        out.push(s[v] as char);
                    } else {
                        out.push_str(REDACTED);
                    }
                    copied = stop;
                    i = stop;
                    continue;
                }
            }
            i = e.max(i + 1);
            continue;
        }
        if (b == b'B' || b == b'b')
            && s.len() > i + 7
            && s[i..i + 7].eq_ignore_ascii_case(b"bearer ")
        {
            let v = i + 7;
            let stop = value_end(s, v);
            if stop > v {
                out.push_str(&text[copied..v]);
                out.push_str(REDACTED);
                copied = stop;
                i = stop;
                continue;
            }
        }
        i += 1;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Where an `Authorization` value that starts at `*v` ends: at the end of
/// its quotes, else of the line (credentials may hold spaces, quotes and
/// commas: `Digest username="u", response="…"`). A first word followed by
/// more (`token x`, `Bearer x`) is its scheme: kept, `*v` moves past it.
fn authorization_value(s: &[u8], v: &mut usize) -> usize {
    let quoted = *v < s.len() && (s[*v] == b'"' || s[*v] == b'\'');
    if quoted {
        return value_end(s, *v);
    }
    let stop = s[*v..]
        .iter()
        .position(|&c| matches!(c, b'\n' | b'\r'))
        .map_or(s.len(), |n| *v + n);
    let word = s[*v..stop]
        .iter()
        .position(|&c| c == b' ' || c == b'\t')
        .map(|n| *v + n);
    if let Some(w) = word {
        let mut rest = w;
        while rest < stop && (s[rest] == b' ' || s[rest] == b'\t') {
            rest += 1;
        }
        if rest < stop {
            *v = rest;
        }
    }
    stop
}

/// Whether the flag `--name` in free text takes a secret (`--api-key v`,
/// `--token v`): stricter than [`is_secret_flag`], which sees a real
/// argument list.
fn is_secret_flag_text(flag: &str) -> bool {
    if !flag.starts_with("--") || flag.len() > 130 {
        return false;
    }
    let name = flag
        .trim_start_matches('-')
        .replace('-', "_")
        .to_ascii_uppercase();
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && (is_secret_name(&name) || name == "KEY" || name.ends_with("_KEY"))
}

/// Whether a command-line flag (`--api-key`, `--auth-token`) takes a
/// secret: its name, dashes as underscores, is a secret name, or it names a
/// key. Not a flag (no leading `-`): false.
fn is_secret_flag(flag: &str) -> bool {
    let name = flag.trim_start_matches('-');
    if name.len() == flag.len() || name.is_empty() {
        return false;
    }
    let name = name.replace('-', "_").to_ascii_uppercase();
    is_secret_name(&name) || name.contains("KEY")
}

/// An agent's arguments as they may be logged: the value after a secret
/// flag (`--api-key sk-1`, `--token=abc`) is hidden, and every argument is
/// also redacted as text (`OPENAI_API_KEY=x`, `Bearer x`).
pub fn redact_args(args: &[String]) -> Vec<Cow<'_, str>> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for arg in args {
        // A flag after a secret flag is not its value (`--token --verbose`).
        if std::mem::take(&mut hide_next) && !arg.starts_with("--") {
            out.push(Cow::Borrowed(REDACTED));
            continue;
        }
        match arg.split_once('=') {
            Some((flag, _)) if is_secret_flag(flag) => {
                out.push(Cow::Owned(format!("{flag}={REDACTED}")));
            }
            Some(_) => out.push(redact_text(arg)),
            None => {
                hide_next = is_secret_flag(arg);
                out.push(redact_text(arg));
            }
        }
    }
    out
}

/// Redacts a JSON value in place: secret keys, `env`/`headers` values and
/// secrets inside strings.
pub fn redact_value(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if is_secret_name(key) && !item.is_null() {
                    *item = Value::String(REDACTED.into());
                } else if key == "env" || key == "headers" {
                    redact_pairs(item);
                } else {
                    redact_value(item);
                }
            }
        }
        Value::Array(items) => {
            // An argument list: the string after a secret flag is hidden
            // (`["--api-key", "sk-1"]`).
            let mut hide_next = false;
            for item in items {
                let flag = item.as_str().is_some_and(is_secret_flag_text);
                match item {
                    Value::String(s) if std::mem::take(&mut hide_next) && !s.starts_with('-') => {
                        *s = REDACTED.into();
                    }
                    other => redact_value(other),
                }
                hide_next = flag;
            }
        }
        Value::String(s) => {
            if let Cow::Owned(r) = redact_text(s) {
                *s = r;
            }
        }
        _ => {}
    }
}

/// `[{name, value}]` lists and `{NAME: value}` maps: every value hidden.
fn redact_pairs(v: &mut Value) {
    match v {
        Value::Array(items) => {
            for item in items {
                match item.get_mut("value") {
                    Some(value) => *value = Value::String(REDACTED.into()),
                    None => redact_value(item),
                }
            }
        }
        Value::Object(map) => {
            for value in map.values_mut() {
                *value = Value::String(REDACTED.into());
            }
        }
        other => redact_value(other),
    }
}

/// Redacts one JSON-RPC message: `authenticate` keeps only `methodId`, the
/// rest follows [`redact_value`].
pub fn redact_message(msg: &mut Value) {
    if msg.get("method").and_then(Value::as_str) == Some("authenticate") {
        if let Some(Value::Object(params)) = msg.get_mut("params") {
            for (key, value) in params.iter_mut() {
                if key != "methodId" {
                    *value = Value::String(REDACTED.into());
                }
            }
        }
    }
    redact_value(msg);
}

/// One line of traffic as it may be shown or saved: parsed and redacted
/// when it is JSON, else redacted as text (tests: the trace redacts what
/// it shows and saves per message).
#[cfg(test)]
pub fn redact_line(line: &str) -> Cow<'_, str> {
    match serde_json::from_str::<Value>(line) {
        Ok(mut v) => {
            redact_message(&mut v);
            Cow::Owned(v.to_string())
        }
        Err(_) => redact_text(line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn globs_match_case_insensitively() {
        assert!(glob_match(b"*_API_KEY", b"openai_api_key"));
        assert!(!glob_match(b"*_API_KEY", b"API_KEY_X"));
        assert!(glob_match(b"AWS_*", b"AWS_REGION"));
        assert!(glob_match(b"A?C", b"abc"));
        assert!(!glob_match(b"A?C", b"ac"));
        assert!(glob_match(b"*", b""));
        assert!(is_secret_name("API_KEY"));
        assert!(is_secret_name("github_token"));
        assert!(!is_secret_name("PATH"));
    }

    #[test]
    fn agent_arguments_hide_the_values_of_secret_flags() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let shown = |a: &[String]| redact_args(a).join(" ");
        assert_eq!(
            shown(&args(&["acp", "--api-key", "sk-123", "--model", "m"])),
            "acp --api-key [redacted] --model m"
        );
        assert_eq!(
            shown(&args(&[
                "--token=abc",
                "--api-key=sk-1",
                "--auth-token",
                "t"
            ])),
            "--token=[redacted] --api-key=[redacted] --auth-token [redacted]"
        );
        assert_eq!(
            shown(&args(&[
                "--client-secret",
                "s",
                "--password",
                "p",
                "--key",
                "k"
            ])),
            "--client-secret [redacted] --password [redacted] --key [redacted]"
        );
        // A flag right after a secret flag is its own flag; other arguments
        // keep their text, assignments inside them are still hidden.
        assert_eq!(
            shown(&args(&[
                "--token",
                "--verbose",
                "-c",
                "OPENAI_API_KEY=x",
                "--port=80"
            ])),
            "--token --verbose -c OPENAI_API_KEY=[redacted] --port=80"
        );
        assert_eq!(shown(&args(&["tokens.txt", "key"])), "tokens.txt key");
    }

    #[test]
    fn assignments_and_bearer_tokens_are_hidden() {
        assert_eq!(
            redact_text("start API_KEY=sk-123 PATH=/bin x"),
            "start API_KEY=[redacted] PATH=/bin x"
        );
        assert_eq!(
            redact_text("export MY_TOKEN='a b c'; ok"),
            "export MY_TOKEN='[redacted]'; ok"
        );
        assert_eq!(
            redact_text("Authorization: Bearer abc.def"),
            "Authorization: Bearer [redacted]"
        );
        assert_eq!(
            redact_text("got bearer xyz here"),
            "got bearer [redacted] here"
        );
        assert_eq!(
            redact_text(r#"{"SECRET":"v","a":1}"#),
            r#"{"SECRET":"[redacted]","a":1}"#
        );
        assert!(matches!(
            redact_text("plain line: no secret"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(redact_text("a=b c=d"), Cow::Borrowed(_)));
        // Cut or odd input never panics.
        for s in [
            "=",
            ":",
            "TOKEN=",
            "TOKEN:",
            "\"TOKEN\":",
            "bearer ",
            "é TOKEN=é",
        ] {
            let _ = redact_text(s);
        }
    }

    #[test]
    fn headers_flags_spaced_assignments_and_any_authorization_scheme() {
        // Input -> what may be logged or saved.
        let table: &[(&str, &str)] = &[
            // Spaces around the separator (TOML, Python, INI).
            (r#"api_key = "sk-live-1""#, r#"api_key = "[redacted]""#),
            ("api_key = sk-live-1 # x", "api_key = [redacted] # x"),
            ("password\t=\thunter2", "password\t=\t[redacted]"),
            (r#"{"token" : "t-1"}"#, r#"{"token" : "[redacted]"}"#),
            (r#"{'api_key': 'k-1'}"#, r#"{'api_key': '[redacted]'}"#),
            // Header spellings of secret names.
            ("X-Api-Key: k-2", "X-Api-Key: [redacted]"),
            ("x-api-key:k-2", "x-api-key:[redacted]"),
            (
                r#"-H "X-Api-Key: k-3" -d x"#,
                r#"-H "X-Api-Key: [redacted]" -d x"#,
            ),
            ("X-Auth-Token: t-2", "X-Auth-Token: [redacted]"),
            (
                "Set-Cookie: sid=c-1; Path=/",
                "Set-Cookie: [redacted]; Path=/",
            ),
            // Authorization: any scheme is kept, the credentials hidden to
            // the end of the line.
            (
                "Authorization: token gh-1",
                "Authorization: token [redacted]",
            ),
            (
                "authorization: Bearer abc.def",
                "authorization: Bearer [redacted]",
            ),
            (
                "Authorization: Basic dXM6cHc=\nnext",
                "Authorization: Basic [redacted]\nnext",
            ),
            (
                r#"Authorization: Digest username="u", response="r-1""#,
                "Authorization: Digest [redacted]",
            ),
            (
                "Authorization: Bearer a b c",
                "Authorization: Bearer [redacted]",
            ),
            (
                "Proxy-Authorization: Basic p-1",
                "Proxy-Authorization: Basic [redacted]",
            ),
            ("Authorization: plain-1", "Authorization: [redacted]"),
            // Secret flags, space form (the `=` form is an assignment).
            (
                "run --api-key k-4 --model m",
                "run --api-key [redacted] --model m",
            ),
            ("run --api-key=k-4", "run --api-key=[redacted]"),
            ("x --token t-3", "x --token [redacted]"),
            ("x --password 'p w'", "x --password '[redacted]'"),
            ("x --key k-5", "x --key [redacted]"),
            ("x --ssh-key k-6", "x --ssh-key [redacted]"),
            // Not secrets: kept.
            ("x --token --verbose", "x --token --verbose"),
            (
                "x --monkey banana --keyboard us",
                "x --monkey banana --keyboard us",
            ),
            ("a--api-key v", "a--api-key v"),
            ("count = 3", "count = 3"),
            ("Content-Type: text/plain", "Content-Type: text/plain"),
        ];
        for (input, want) in table {
            assert_eq!(redact_text(input), *want, "input: {input}");
        }
        assert!(is_secret_name("X-Api-Key"));
        assert!(is_secret_name("api.key"));
        assert!(!is_secret_name("X-Request-Id"));
    }

    #[test]
    fn user_patterns_extend_the_built_in_ones() {
        assert!(!is_secret_name("MY_ODD_VAR"));
        set_deny_list(vec!["my_odd_*".into()]);
        assert!(is_secret_name("MY_ODD_VAR"));
        set_deny_list(Vec::new());
        assert!(!is_secret_name("MY_ODD_VAR"));
    }

    #[test]
    fn messages_hide_env_values_auth_params_and_secret_keys() {
        let mut create = json!({"jsonrpc": "2.0", "id": 1, "method": "terminal/create", "params": {
            "sessionId": "s", "command": "make", "env": [{"name": "HOME", "value": "/root"}, {"name": "X", "value": "y"}]}});
        redact_message(&mut create);
        assert_eq!(create["params"]["env"][0]["value"], REDACTED);
        assert_eq!(create["params"]["env"][0]["name"], "HOME");
        assert_eq!(create["params"]["command"], "make");
        let mut auth = json!({"jsonrpc": "2.0", "id": 2, "method": "authenticate", "params": {"methodId": "key", "apiKey": "k", "x": {"a": 1}}});
        redact_message(&mut auth);
        assert_eq!(
            auth["params"],
            json!({"methodId": "key", "apiKey": REDACTED, "x": REDACTED})
        );
        let mut mcp = json!({"params": {"mcpServers": [{"name": "m", "headers": [{"name": "A", "value": "b"}], "env": {"K": "v"}}], "note": "OPENAI_API_KEY=abc"}});
        redact_message(&mut mcp);
        assert_eq!(
            mcp["params"]["mcpServers"][0]["headers"][0]["value"],
            REDACTED
        );
        assert_eq!(mcp["params"]["mcpServers"][0]["env"]["K"], REDACTED);
        assert_eq!(mcp["params"]["note"], "OPENAI_API_KEY=[redacted]");
        assert_eq!(redact_line("not json TOKEN=1"), "not json TOKEN=[redacted]");
    }
}
