//! Redaction of JSON text that may be cut anywhere (a message kept only up
//! to the trace's size limit): the rules of [`redact_message`] applied while
//! the text is read, so that no byte of a hidden value is ever returned.
//!
//! [`redact_message`]: super::redact_message

use std::borrow::Cow;

use serde_json::Value;

use super::{is_secret_flag_text, is_secret_name, redact_text, REDACTED};

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
            if !self.another(b'}')? {
                break;
            }
        }
        self.close('}')
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
                if !self.another(b']')? {
                    break;
                }
            }
        }
        self.close(']')
    }

    /// After a member or element: a `,` (copied; true: another follows) or
    /// the container's `close` (false); anything else is not JSON.
    fn another(&mut self, close: u8) -> Result<bool, Halt> {
        self.set_mark();
        self.ws();
        match self.more()? {
            b',' => {
                self.out.push(',');
                self.i += 1;
                Ok(true)
            }
            c if c == close => Ok(false),
            _ => Err(Halt::Bad),
        }
    }

    /// Copies the closing bracket the cursor is on and leaves the container.
    fn close(&mut self, bracket: char) -> Result<(), Halt> {
        self.out.push(bracket);
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
    use crate::redact::{redact_message, REDACTED};
    use serde_json::json;

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
}
