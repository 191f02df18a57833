//! Session-directed messages (`session_message` upserts and
//! `session_message_chunk`s) into subagent blocks. A message is known by
//! its transcript (the session whose updates carry it) and its id there. A
//! chunk carries only content: its sender and recipient come from the
//! message's upserts, before or after it, so a chunk of a message whose
//! participants are not known yet waits for them (nothing is dropped). The
//! same message seen from both sides (the parent's outgoing view and the
//! child's incoming one, linked by `senderMessageId` / `recipientMessageId`)
//! shows once.

use std::collections::HashMap;

use super::Thread;
use crate::model::delegation::SessionMessage;
use crate::model::entries::{Entry, EntryKind};
use crate::model::events::ThreadEvent;

#[derive(Debug, Default)]
pub(super) struct Messages {
    views: HashMap<String, View>,
}

#[derive(Debug, Default, Clone)]
struct View {
    sender: Option<String>,
    recipient: Option<String>,
    /// The line showing it: (subagent, line key, kind).
    shown: Option<(String, String, EntryKind)>,
    /// Text streamed before its participants were known.
    pending: String,
    /// The other side's view of the same message.
    linked: Option<String>,
}

fn view_key(transcript: &str, id: &str) -> String {
    format!("{transcript}\u{1}{id}")
}

impl Thread {
    /// The transcript `sid`'s messages are in: a subagent's own, else this
    /// chat's (`""`).
    fn transcript_of(&self, sid: &Option<String>) -> String {
        match sid {
            Some(s) if self.subagents.contains_key(s) => s.clone(),
            _ => String::new(),
        }
    }

    /// Which subagent's block shows a message of `transcript` between
    /// `sender` and `recipient`, and as what (a task to it, or its words).
    fn message_place(&self, transcript: &str, v: &View) -> Option<(String, EntryKind)> {
        let known = |s: &Option<String>| s.clone().filter(|s| self.subagents.contains_key(s));
        if let Some(r) = known(&v.recipient) {
            return Some((r, EntryKind::User));
        }
        if let Some(s) = known(&v.sender) {
            return Some((s, EntryKind::Agent));
        }
        if !transcript.is_empty() && (v.sender.is_some() || v.recipient.is_some()) {
            let to_it = v.recipient.as_deref() == Some(transcript);
            let kind = if to_it {
                EntryKind::User
            } else {
                EntryKind::Agent
            };
            return Some((transcript.to_owned(), kind));
        }
        match (&v.recipient, &v.sender) {
            (Some(r), _) => Some((r.clone(), EntryKind::User)),
            (None, Some(s)) => Some((s.clone(), EntryKind::Agent)),
            (None, None) => None,
        }
    }

    /// A `session_message` or `session_message_chunk` seen in `transcript`
    /// (`""`: this chat's session; else the subagent whose updates carry it).
    pub(super) fn session_message(
        &mut self,
        transcript: &str,
        m: &SessionMessage,
        out: &mut Vec<ThreadEvent>,
    ) {
        let key = view_key(transcript, &m.message_id);
        let mut v = self.messages.views.remove(&key).unwrap_or_default();
        if let Some(s) = &m.sender {
            v.sender = s.clone();
        }
        if let Some(r) = &m.recipient {
            v.recipient = r.clone();
        }
        // A link to the other side's view: that view's line shows both.
        let other = match (&m.sender_message_id, &m.recipient_message_id) {
            (Some(Some(id)), _) => Some(view_key(&self.transcript_of(&v.sender), id)),
            (_, Some(Some(id))) => Some(view_key(&self.transcript_of(&v.recipient), id)),
            _ => None,
        };
        if let Some(o) = other.filter(|o| o != &key) {
            v.linked = Some(o.clone());
            if let Some(ov) = self.messages.views.get_mut(&o) {
                ov.linked = Some(key.clone());
            }
        }
        let linked_line = v
            .linked
            .as_ref()
            .and_then(|o| self.messages.views.get(o))
            .and_then(|ov| ov.shown.clone());
        if let Some(line) = linked_line {
            if let Some(own) = v.shown.take().filter(|own| own != &line) {
                // Shown twice before the link was known: keep the first.
                self.drop_line(&own, out);
            }
            v.shown = Some(line);
        }
        if v.shown.is_none() {
            if let Some((sid, kind)) = self.message_place(transcript, &v) {
                let line = format!("message {}", key.replace('\u{1}', "/"));
                v.shown = Some((sid, line, kind));
            }
        }
        let mut text = std::mem::take(&mut v.pending);
        let mut append = true;
        match &m.text {
            Some(t) if m.append => text.push_str(t),
            Some(t) => {
                text = t.clone();
                append = false;
            }
            None => {}
        }
        match v.shown.clone() {
            None => v.pending = text,
            Some(line) if !append && text.is_empty() => self.drop_line(&line, out),
            Some((sid, line, kind)) if !append || !text.is_empty() => {
                self.with_subagent(&sid, out, |s| s.push(kind, Some(&line), &text, append));
            }
            Some(_) => {}
        }
        self.messages.views.insert(key, v);
    }

    /// Removes a message's line from its subagent's block.
    fn drop_line(
        &mut self,
        (sid, line, kind): &(String, String, EntryKind),
        out: &mut Vec<ThreadEvent>,
    ) {
        let Some(&index) = self.subagents.get(sid) else {
            return;
        };
        if let Some(Entry::Subagent(s)) = self.entries.get(index) {
            if !s
                .lines
                .iter()
                .any(|l| l.kind == *kind && l.key.as_deref() == Some(line))
            {
                return;
            }
        }
        self.with_subagent(sid, out, |s| {
            s.lines
                .retain(|l| !(l.kind == *kind && l.key.as_deref() == Some(line.as_str())))
        });
    }
}
