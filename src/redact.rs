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
//! [`redact_json_prefix`] applies the same rules to such a prefix as it
//! reads it, so a saved trace never holds an unredacted byte of it.

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
/// when it is JSON, else redacted as text.
pub fn redact_line(line: &str) -> Cow<'_, str> {
    match serde_json::from_str::<Value>(line) {
        Ok(mut v) => {
            redact_message(&mut v);
            Cow::Owned(v.to_string())
        }
        Err(_) => redact_text(line),
    }
}

/// How a JSON value is redacted, from where it sits (the rules of
/// [`redact_message`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Treat {
    /// Secret keys' values hidden, strings redacted as text.
    Normal,
    /// Replaced whole (the value of a secret key; `null` stays).
    Hide,
    /// The value of `env` or `headers`: a list of `{name, value}` or a map
    /// whose values are all hidden.
    Pairs,
    /// An object of an `env` or `headers` list: its `value` is hidden.
    PairItem,
    /// The `params` of `authenticate`: all but `methodId` hidden.
    AuthParams,
    /// The message of an `authenticate` request.
    AuthMessage,
}

/// The input ran out, or is not JSON from here on.
enum Halt {
    End,
    Bad,
}

/// Deeper nesting than this is not read (and not kept).
const PREFIX_MAX_DEPTH: usize = 128;

struct PrefixRedactor<'a> {
    text: &'a str,
    s: &'a [u8],
    i: usize,
    out: String,
    depth: usize,
    /// The message's `method`, when read whole.
    method: Option<String>,
    /// The last place (input offset, output length) between whole members
    /// or elements: where text that stops being JSON is redacted from, as
    /// text (so a name just before is seen, and no hidden value is undone).
    mark: (usize, usize),
}

impl<'a> PrefixRedactor<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            s: text.as_bytes(),
            i: 0,
            out: String::with_capacity(text.len()),
            depth: 0,
            method: None,
            mark: (0, 0),
        }
    }

    fn run(mut self, top: Treat) -> (String, Option<String>) {
        let first = self.s.iter().find(|b| !b.is_ascii_whitespace());
        if !matches!(first, Some(b'{' | b'[')) {
            // No message: text.
            return (redact_text(self.text).into_owned(), None);
        }
        match self.value(top) {
            // Cut inside a value: nothing more to read.
            Err(Halt::End) => {}
            // Not JSON from the last whole member on: redacted as text.
            Err(Halt::Bad) => {
                let (at, len) = self.mark;
                self.out.truncate(len);
                self.out.push_str(&redact_text(&self.text[at..]));
            }
            Ok(()) => self.out.push_str(&redact_text(&self.text[self.i..])),
        }
        (self.out, self.method)
    }

    fn set_mark(&mut self) {
        self.mark = (self.i, self.out.len());
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\r' | b'\n') {
            self.out.push(self.s[self.i] as char);
            self.i += 1;
        }
    }

    fn more(&self) -> Result<u8, Halt> {
        self.s.get(self.i).copied().ok_or(Halt::End)
    }

    fn value(&mut self, t: Treat) -> Result<(), Halt> {
        self.ws();
        let c = self.more()?;
        if t == Treat::Hide {
            if self.s[self.i..].starts_with(b"null") {
                self.out.push_str("null");
                self.i += 4;
                return Ok(());
            }
            self.out.push('"');
            self.out.push_str(REDACTED);
            self.out.push('"');
            return self.skip_value();
        }
        match c {
            b'{' => self.object(t),
            b'[' => self.array(t),
            b'"' => self.string().map(|_| ()),
            _ => self.scalar(),
        }
    }

    fn enter(&mut self) -> Result<(), Halt> {
        self.depth += 1;
        if self.depth > PREFIX_MAX_DEPTH {
            // Nothing of it is kept.
            self.out.push_str(REDACTED);
            self.i = self.s.len();
            return Err(Halt::End);
        }
        self.out.push(self.s[self.i] as char);
        self.i += 1;
        self.set_mark();
        Ok(())
    }

    fn object(&mut self, t: Treat) -> Result<(), Halt> {
        self.enter()?;
        let top = self.depth == 1;
        loop {
            self.ws();
            match self.more()? {
                b'}' => break,
                b'"' => {}
                _ => return Err(Halt::Bad),
            }
            self.set_mark();
            let start = self.i;
            let (key, whole) = self.read_string();
            // Keys are kept as they are (as `redact_value` does).
            self.out.push_str(&self.text[start..self.i]);
            if !whole {
                return Err(Halt::End);
            }
            self.ws();
            if self.more()? != b':' {
                return Err(Halt::Bad);
            }
            self.out.push(':');
            self.i += 1;
            let member = member_treat(t, &key);
            if top && key == "method" {
                self.ws();
                if self.more()? == b'"' {
                    let (method, whole) = self.string()?;
                    if whole {
                        self.method = Some(method);
                    }
                } else {
                    self.value(member)?;
                }
            } else {
                self.value(member)?;
            }
            self.set_mark();
            self.ws();
            match self.more()? {
                b',' => {
                    self.out.push(',');
                    self.i += 1;
                }
                b'}' => break,
                _ => return Err(Halt::Bad),
            }
        }
        self.out.push('}');
        self.i += 1;
        self.depth -= 1;
        Ok(())
    }

    fn array(&mut self, t: Treat) -> Result<(), Halt> {
        self.enter()?;
        let element = if t == Treat::Pairs {
            Treat::PairItem
        } else {
            Treat::Normal
        };
        self.ws();
        if self.more()? != b']' {
            // An argument list: the string after a secret flag is hidden.
            let mut hide_next = false;
            loop {
                self.ws();
                self.set_mark();
                let at = self.i;
                let mut flag = false;
                if self.more()? == b'"' {
                    let (arg, whole) = self.read_string();
                    flag = whole && is_secret_flag_text(&arg);
                    if std::mem::take(&mut hide_next) && !arg.starts_with('-') {
                        self.out.push('"');
                        self.out.push_str(REDACTED);
                        self.out.push('"');
                        if !whole {
                            return Err(Halt::End);
                        }
                    } else {
                        self.i = at;
                        self.value(element)?;
                    }
                } else {
                    self.value(element)?;
                }
                hide_next = flag;
                self.set_mark();
                self.ws();
                match self.more()? {
                    b',' => {
                        self.out.push(',');
                        self.i += 1;
                    }
                    b']' => break,
                    _ => return Err(Halt::Bad),
                }
            }
        }
        self.out.push(']');
        self.i += 1;
        self.depth -= 1;
        Ok(())
    }

    /// A string value: redacted as text. Its decoded text, and whether it
    /// was whole (else the input ends inside it).
    fn string(&mut self) -> Result<(String, bool), Halt> {
        let start = self.i;
        let (decoded, whole) = self.read_string();
        match redact_text(&decoded) {
            Cow::Borrowed(_) => self.out.push_str(&self.text[start..self.i]),
            Cow::Owned(r) => {
                self.out.push_str(&Value::String(r).to_string());
            }
        }
        if whole {
            Ok((decoded, true))
        } else {
            Err(Halt::End)
        }
    }

    /// Reads the string at `i` (a quote): its decoded text and whether its
    /// closing quote was there.
    fn read_string(&mut self) -> (String, bool) {
        let s = self.s;
        let mut buf: Vec<u8> = Vec::new();
        self.i += 1;
        while self.i < s.len() {
            match s[self.i] {
                b'"' => {
                    self.i += 1;
                    return (String::from_utf8_lossy(&buf).into_owned(), true);
                }
                b'\\' => {
                    let Some(&e) = s.get(self.i + 1) else {
                        self.i = s.len();
                        break;
                    };
                    let simple = match e {
                        b'b' => Some(b'\x08'),
                        b'f' => Some(b'\x0c'),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        other => Some(other),
                    };
                    if let Some(b) = simple {
                        buf.push(b);
                        self.i += 2;
                        continue;
                    }
                    let hex = |at: usize| {
                        s.get(at..at + 4)
                            .and_then(|h| std::str::from_utf8(h).ok())
                            .and_then(|h| u32::from_str_radix(h, 16).ok())
                    };
                    let Some(hi) = hex(self.i + 2) else {
                        // Cut inside the escape (or a bad one): ends here.
                        if self.i + 6 > s.len() {
                            self.i = s.len();
                            break;
                        }
                        buf.extend_from_slice("\u{fffd}".as_bytes());
                        self.i += 2;
                        continue;
                    };
                    self.i += 6;
                    let mut code = hi;
                    if (0xD800..0xDC00).contains(&hi)
                        && s.get(self.i) == Some(&b'\\')
                        && s.get(self.i + 1) == Some(&b'u')
                    {
                        if let Some(lo) = hex(self.i + 2).filter(|lo| (0xDC00..0xE000).contains(lo))
                        {
                            code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                            self.i += 6;
                        }
                    }
                    let c = char::from_u32(code).unwrap_or('\u{fffd}');
                    let mut tmp = [0u8; 4];
                    buf.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                }
                b => {
                    buf.push(b);
                    self.i += 1;
                }
            }
        }
        (String::from_utf8_lossy(&buf).into_owned(), false)
    }

    fn scalar(&mut self) -> Result<(), Halt> {
        let start = self.i;
        while self.i < self.s.len()
            && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
        {
            self.i += 1;
        }
        let ends = match self.s.get(self.i) {
            None => true,
            Some(c) => matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b',' | b']' | b'}'),
        };
        if self.i == start || !ends {
            // Not a number or literal (`API_KEY=…`): text from its start.
            self.i = start;
            return Err(Halt::Bad);
        }
        self.out.push_str(&self.text[start..self.i]);
        if self.i == self.s.len() {
            return Err(Halt::End);
        }
        Ok(())
    }

    /// Passes over the value at `i` without keeping any of it.
    fn skip_value(&mut self) -> Result<(), Halt> {
        let mut depth = 0usize;
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return Err(Halt::End);
            };
            match c {
                b'"' => {
                    if !self.read_string().1 {
                        return Err(Halt::End);
                    }
                    if depth == 0 {
                        return Ok(());
                    }
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.i += 1;
                }
                b'}' | b']' => {
                    if depth == 0 {
                        return Ok(());
                    }
                    depth -= 1;
                    self.i += 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                b',' | b' ' | b'\t' | b'\r' | b'\n' if depth == 0 => return Ok(()),
                _ => self.i += 1,
            }
        }
    }
}

/// How the value of member `key` of an object treated `t` is redacted.
fn member_treat(t: Treat, key: &str) -> Treat {
    let rule = || {
        if is_secret_name(key) {
            Treat::Hide
        } else if key == "env" || key == "headers" {
            Treat::Pairs
        } else {
            Treat::Normal
        }
    };
    match t {
        Treat::Pairs => Treat::Hide,
        Treat::PairItem if key == "value" => Treat::Hide,
        Treat::AuthParams if key != "methodId" => Treat::Hide,
        Treat::AuthMessage if key == "params" => Treat::AuthParams,
        _ => rule(),
    }
}

/// JSON text that may be cut anywhere (a message kept only up to a size
/// limit), redacted by the rules of [`redact_message`] while it is read:
/// the values of secret keys and of `env`/`headers` lists hidden (also
/// when cut inside them), strings redacted as text, `authenticate`'s params
/// hidden but `methodId`. Where it stops being JSON, the rest is redacted
/// as text. Never returns a byte of a hidden value.
pub fn redact_json_prefix(text: &str) -> String {
    let (out, method) = PrefixRedactor::new(text).run(Treat::Normal);
    if method.as_deref() == Some("authenticate") {
        return PrefixRedactor::new(text).run(Treat::AuthMessage).0;
    }
    out
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

    /// A message with a secret in each place the rules cover.
    fn secret_message() -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {
            "cwd": "/p",
            "mcpServers": [
                {"name": "m", "command": "srv", "args": ["--api-key", "zqA1"],
                 "env": [{"name": "PLAIN", "value": "zqB2"}, {"name": "Q", "value": {"deep": "zqC3"}}]},
                {"type": "http", "name": "h", "url": "https://x",
                 "headers": [{"name": "X-Api-Key", "value": "zqD4"}]},
                {"name": "n", "command": "c", "args": [], "env": {"K": "zqE5", "L": ["zqF6"]}}
            ],
            "note": "OPENAI_API_KEY=zqG7 and Authorization: token zqH8",
            "apiKey": "zqI9",
            "esc\"aped": "x",
            "uni": "\u{e9}\u{1F600} TOKEN=zqJ0"
        }})
    }

    #[test]
    fn a_whole_message_redacts_as_its_parsed_form() {
        for mut msg in [
            secret_message(),
            json!({"jsonrpc": "2.0", "id": 2, "method": "authenticate", "params": {"methodId": "k", "key": "zqK1", "x": {"a": "zqL2"}}}),
            json!({"params": {"x": 1}, "method": "authenticate", "id": 3}),
            json!([1, "TOKEN=zqM3", null, true, {"secret": null}]),
        ] {
            let text = msg.to_string();
            let streamed: Value = serde_json::from_str(&redact_json_prefix(&text)).unwrap();
            redact_message(&mut msg);
            assert_eq!(streamed, msg);
            assert!(!streamed.to_string().contains("zq"), "{streamed}");
        }
    }

    #[test]
    fn a_message_cut_anywhere_keeps_no_byte_of_a_secret() {
        let text = secret_message().to_string();
        for cut in 0..=text.len() {
            if !text.is_char_boundary(cut) {
                continue;
            }
            let out = redact_json_prefix(&text[..cut]);
            // Each secret is `zq` + 2 characters: not even its start leaks.
            assert!(!out.contains("zq"), "cut at {cut}: {out}");
            // What is kept is the message's own text, up to the cut.
            assert!(
                out.len() <= cut + 64 || out.contains(REDACTED),
                "cut at {cut}: {out}"
            );
        }
        // Cut inside an authenticate's params: hidden as well.
        let auth = r#"{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"methodId":"k","key":"zqN1"#;
        assert!(!redact_json_prefix(auth).contains("zq"));
        assert!(redact_json_prefix(auth).contains(r#""methodId":"k""#));
    }

    #[test]
    fn a_prefix_that_stops_being_json_is_redacted_as_text() {
        assert_eq!(
            redact_json_prefix(r#"{"a": 1} trailing TOKEN=zq1"#),
            r#"{"a": 1} trailing TOKEN=[redacted]"#
        );
        assert_eq!(
            redact_json_prefix("not json API_KEY=zq2"),
            "not json API_KEY=[redacted]"
        );
        assert_eq!(
            redact_json_prefix(r#"{"a" 1, "TOKEN": "zq3"}"#),
            r#"{"a" 1, "TOKEN": "[redacted]"}"#
        );
        // Where it stops, the text from the last whole member on is
        // redacted as text: a name just before is seen, and a value hidden
        // before stays hidden.
        for (input, want) in [
            (r#"{"TOKEN"=zq5}"#, r#"{"TOKEN"=[redacted]}"#),
            (r#"[API_KEY=zq6]"#, r#"[API_KEY=[redacted]"#),
            (
                r#"{"env":[{"name":"A","value":"zq7"}] oops API_KEY=zq8"#,
                r#"{"env":[{"name":"A","value":"[redacted]"}] oops API_KEY=[redacted]"#,
            ),
            (r#"{"a":1 TOKEN=zq9}"#, r#"{"a":1 TOKEN=[redacted]}"#),
        ] {
            assert_eq!(redact_json_prefix(input), want, "input: {input}");
        }
        // Deep nesting is neither a stack overflow nor kept.
        let deep = format!("{}\"TOKEN=zq4\"", "[".repeat(100_000));
        let out = redact_json_prefix(&deep);
        assert!(!out.contains("zq") && out.len() < 200, "{}", out.len());
        for odd in [
            "", "{", "[", "\"", "\"\\", "\"\\u12", "{\"a\"", "{\"a\":", "nul", "-",
        ] {
            let _ = redact_json_prefix(odd);
        }
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
