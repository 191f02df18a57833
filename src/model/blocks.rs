//! Reading the values agents send: a field that may be `null`, and the
//! text a content block contributes to a message (resource URIs as the user
//! would name them).

use serde_json::Value;

/// A field that is present and not `null` (agents send `null` for "absent").
pub fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

pub fn str_field(v: &Value, key: &str) -> Option<String> {
    field(v, key).and_then(Value::as_str).map(str::to_owned)
}

/// The text a content block contributes to a message.
pub fn content_block_text(block: &Value) -> String {
    let s = |k: &str| {
        field(block, k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    match field(block, "type").and_then(Value::as_str).unwrap_or("") {
        "text" => s("text"),
        kind @ ("image" | "audio") => media_line(kind, block),
        "resource_link" => format!("[{}]({})", s("name"), s("uri")),
        "resource" => {
            let uri = field(block, "resource")
                .and_then(|r| field(r, "uri"))
                .and_then(Value::as_str)
                .unwrap_or("");
            format!("@{}", uri_label(uri))
        }
        _ => String::new(),
    }
}

/// An image or audio block as one line of its own. Saved (the connection
/// wrote it to a file, see `protocol::media`): a markdown link to the file
/// with kind, type and size, `![image image/png · 12.0 KB](/tmp/...)` (the
/// chat opens it with <CR> or gx). Not saved: why. A block nobody saved
/// (a user's own prompt): `[image image/png]`.
fn media_line(kind: &str, block: &Value) -> String {
    // The agent's type, shown as data: only the characters a type has.
    let mime: String = field(block, "mimeType")
        .and_then(Value::as_str)
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "+-./".contains(*c))
        .take(40)
        .collect();
    let mime = if mime.is_empty() {
        "?".to_owned()
    } else {
        mime
    };
    let Some(note) = field(block, "_acp") else {
        return format!("[{kind} {mime}]");
    };
    if let Some(path) = field(note, "path").and_then(Value::as_str) {
        let size = field(note, "bytes").and_then(Value::as_u64).unwrap_or(0);
        let bang = if kind == "image" { "!" } else { "" };
        return format!(
            "\n{bang}[{kind} {mime} · {}]({path})\n",
            human_bytes(size as usize)
        );
    }
    let why = field(note, "error")
        .and_then(Value::as_str)
        .unwrap_or("not saved");
    format!("\n[{kind} {mime}: not shown ({why})]\n")
}

/// `1.5 MB`, `12.0 KB`, `300 B`.
pub fn human_bytes(n: usize) -> String {
    const K: f64 = 1024.0;
    let f = n as f64;
    if f >= K * K {
        format!("{:.1} MB", f / (K * K))
    } else if f >= K {
        format!("{:.1} KB", f / K)
    } else {
        format!("{n} B")
    }
}

/// A short label for an embedded resource's URI, as the user would mention
/// it: the file name and the fragment (`file:///p/a.lua#L3-L5` gives
/// `a.lua#L3-L5`); other schemes keep their name (`untitled:buffer-3`,
/// `diagnostics:///p/a.lua` gives `diagnostics:a.lua`).
pub fn uri_label(uri: &str) -> String {
    if uri.is_empty() {
        return "resource".to_owned();
    }
    let (base, fragment) = match uri.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (uri, None),
    };
    let scheme = base.split_once(':').map(|(s, _)| s).filter(|s| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    let mut label = match base.trim_end_matches('/').rsplit_once('/') {
        Some((_, name)) => {
            let name = percent_decode(name);
            match scheme {
                Some("file") | None => name,
                Some(s) => format!("{s}:{name}"),
            }
        }
        None => percent_decode(base),
    };
    if let Some(f) = fragment {
        label.push('#');
        label.push_str(f);
    }
    label
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
