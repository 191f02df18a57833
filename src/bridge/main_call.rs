//! What the core asks of the main thread (`MainCall`) and the reply each
//! request expects: the contract with lua/acp (declared in
//! lua/acp/core/types.lua). `calls` sends them and waits for the answers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::model::filetext::TextFormat;
use crate::model::textdiff::Hunk;

/// What the core asks of the main thread. Crosses to Lua as
/// `{ method = "<snake_case name>", payload = { ...fields } }` (see
/// lua/acp/core/types.lua); each request that wants an answer has a reply type.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "method", content = "payload", rename_all = "snake_case")]
pub enum MainCall {
    /// The loaded buffer of `path` (if any): answered in text parts plus a
    /// `BufferReadReply`. `whole`: take the text in one tick (it cannot be
    /// stale then; asked only after sliced reads kept going stale).
    /// `sync`: bring the buffer up to date with its file first (false: read
    /// it as it is).
    BufferRead {
        path: String,
        resolved: PathBuf,
        whole: bool,
        sync: bool,
    },
    /// Apply `hunks` to buffer `bufnr` if it is still at `tick`:
    /// `BufferApplyReply`.
    BufferApply {
        bufnr: i64,
        tick: i64,
        hunks: Vec<Hunk>,
        save: bool,
        eol: bool,
        path: String,
    },
    /// Start a terminal process: `TerminalStartReply`.
    TerminalStart {
        id: String,
        argv: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: PathBuf,
        command: String,
    },
    /// Kill a terminal's process group (no answer).
    TerminalKill { id: String, pid: u32 },
    /// An agent write was refused: its change and a change on disk both
    /// touch lines `first`..`last` (no answer). The chat shows the conflict;
    /// `:AcpConflict` compares `text`, the agent's, with the file.
    WriteConflict {
        path: String,
        resolved: PathBuf,
        text: String,
        first: usize,
        last: usize,
    },
}

impl MainCall {
    pub fn name(&self) -> &'static str {
        match self {
            MainCall::BufferRead { .. } => "buffer_read",
            MainCall::BufferApply { .. } => "buffer_apply",
            MainCall::TerminalStart { .. } => "terminal_start",
            MainCall::TerminalKill { .. } => "terminal_kill",
            MainCall::WriteConflict { .. } => "write_conflict",
        }
    }
}

/// `buffer_read`'s answer; the text itself comes in parts (lines).
/// Unknown fields are refused: a reply the core cannot read must fail
/// loudly, never read as "no buffer" (that once sent a write to the disk
/// under a buffer with unsaved edits).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BufferReadReply {
    pub found: bool,
    /// The buffer changed between the parts: the text is not consistent
    /// and must be read again.
    pub stale: bool,
    pub bufnr: i64,
    pub tick: i64,
    pub modified: bool,
    /// The buffer's options that make its lines its file's text (the core
    /// encodes the parts with them: `model::filetext`).
    pub format: TextFormat,
    /// The buffer's line count.
    pub lines: u64,
}

/// `buffer_apply`'s answer.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BufferApplyReply {
    /// The buffer changed since `tick`: read it again and recompute.
    pub stale: bool,
    pub error: Option<String>,
    pub saved: bool,
    /// The buffer has unsaved changes after the edit.
    pub modified: bool,
}

/// `terminal_start`'s answer: a pid, or why it could not start.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TerminalStartReply {
    pub pid: Option<u32>,
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde::de::{self, Deserialize, Deserializer, Visitor};

    use super::*;

    /// The field names a reply type accepts, as its `Deserialize` declares
    /// them (serde hands them to `deserialize_struct`).
    fn fields_of<'de, T: Deserialize<'de>>() -> BTreeSet<&'static str> {
        struct Names<'a>(&'a mut &'static [&'static str]);
        impl<'de> Deserializer<'de> for Names<'_> {
            type Error = de::value::Error;
            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
                Err(de::Error::custom("not a struct"))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Self::Error> {
                *self.0 = fields;
                Err(de::Error::custom("fields read"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
                bytes byte_buf option unit unit_struct newtype_struct seq tuple
                tuple_struct map enum identifier ignored_any
            }
        }
        let mut fields: &'static [&'static str] = &[];
        let _ = T::deserialize(Names(&mut fields));
        fields.iter().copied().collect()
    }

    /// `---@class acp.Reply.<method>` blocks of types.lua: method -> fields.
    fn declared_replies() -> Vec<(String, BTreeSet<String>)> {
        let mut out: Vec<(String, BTreeSet<String>)> = Vec::new();
        let mut current = false;
        for line in include_str!("../../lua/acp/core/types.lua").lines() {
            if let Some(name) = line.strip_prefix("---@class acp.Reply.") {
                out.push((name.trim().to_owned(), BTreeSet::new()));
                current = true;
            } else if let (true, Some(field)) = (current, line.strip_prefix("---@field ")) {
                let name = field.split_whitespace().next().unwrap_or_default();
                let name = name.trim_end_matches('?').to_owned();
                out.last_mut().unwrap().1.insert(name);
            } else if !line.starts_with("---") {
                current = false;
            }
        }
        out
    }

    #[test]
    fn reply_types_accept_exactly_the_fields_types_lua_declares() {
        let rust: Vec<(&str, BTreeSet<&str>)> = vec![
            ("buffer_apply", fields_of::<BufferApplyReply>()),
            ("buffer_read", fields_of::<BufferReadReply>()),
            ("terminal_start", fields_of::<TerminalStartReply>()),
        ];
        let mut lua = declared_replies();
        lua.sort();
        let names = |v: Vec<&str>| v.into_iter().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            names(lua.iter().map(|(n, _)| n.as_str()).collect()),
            names(rust.iter().map(|(n, _)| *n).collect()),
            "an acp.Reply class per reply type"
        );
        for ((method, fields), (_, declared)) in rust.iter().zip(&lua) {
            assert!(!fields.is_empty(), "{method}: fields read");
            let fields: BTreeSet<String> = fields.iter().map(|f| f.to_string()).collect();
            assert_eq!(
                &fields, declared,
                "acp.Reply.{method} in types.lua vs its reply type"
            );
        }
    }
}
