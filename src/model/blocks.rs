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
        "image" => format!("[image {}]", s("mimeType")),
        "audio" => format!("[audio {}]", s("mimeType")),
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
