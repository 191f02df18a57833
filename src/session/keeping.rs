//! A chat kept on disk (`kept_chats`): what it records (the transcript's
//! updates and the user's prompts, `model::record`), when it is written
//! (at each turn's end, when the chat closes, at exit; off the main thread
//! but at exit) with its review records, and how a kept chat comes back:
//! its transcript replayed into the new chat before its session opens, its
//! review records imported.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::handle::ThreadHandle;
use super::kept_chats::{self, Kept};
use crate::bridge::handoff::bridge;
use crate::log;
use crate::model::entries::NoticeLevel;
use crate::model::record::Recorder;
use crate::runtime::spawn;

/// How long a save waits for the view to show what is queued before it
/// writes anyway (a Neovim busy elsewhere, a stream that goes on).
const SAVE_WAITS_AT_MOST: Duration = Duration::from_millis(500);

/// One line of text for a notice: the first line, capped.
fn one_line(text: &str, max: usize) -> String {
    let line: String = text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(max)
        .collect();
    line.trim().to_owned()
}

impl ThreadHandle {
    /// This chat's kept id (its file's name).
    pub fn kept_id(&self) -> String {
        self.kept.lock().header.id.clone()
    }

    /// A `session/update` this chat received (not while a load replays a
    /// history the kept transcript already shows).
    pub(super) fn record_update(&self, raw: &Value) {
        if self.mute_replay.load(Ordering::SeqCst) {
            return;
        }
        self.kept.lock().recorder.update(raw);
    }

    /// A prompt the user sent; the first one titles the chat until the
    /// agent gives it a title.
    pub(super) fn record_prompt(&self, text: &str) {
        let mut kept = self.kept.lock();
        if kept.header.title.is_none() {
            let title = one_line(text, 80);
            if !title.is_empty() {
                kept.header.title = Some(title);
            }
        }
        kept.recorder.user_prompt(text);
    }

    /// Writes the chat's file off the main thread (nothing for a chat
    /// without a transcript), once the view has shown what is queued (see
    /// `Bridge::settled`): the write takes a core, and the drain that shows
    /// a turn's end should not share two with it.
    pub fn save_kept(self: &Arc<Self>) {
        if !kept_chats::enabled() {
            return;
        }
        let this = self.clone();
        spawn(async move {
            bridge().settled(SAVE_WAITS_AT_MOST).await;
            let _ = tokio::task::spawn_blocking(move || this.write_kept()).await;
        });
    }

    /// Writes the chat's file now (blocking: a runtime thread, or exit).
    pub fn write_kept(&self) {
        if !kept_chats::enabled() || self.kept.lock().recorder.len() == 0 {
            return;
        }
        // One write at a time, text taken inside: two saves of a chat (a
        // turn's end and a disk edit) would share its temporary file, and
        // the older text could be renamed in last.
        static WRITING: parking_lot::Mutex<()> = parking_lot::Mutex::new(());
        let _writing = WRITING.lock();
        // Read before the kept lock: nothing else takes them under it.
        let title = self.model.lock().title.clone();
        let session_id = self.session_id();
        let mut review = self.editor.review_export();
        if review.len() > kept_chats::REVIEW_MAX_BYTES {
            log::warn(format!(
                "kept chat of thread {}: review records of {} bytes not kept",
                self.id,
                review.len()
            ));
            review.clear();
        }
        let (id, text) = {
            let mut kept = self.kept.lock();
            kept.recorder.take_dirty();
            let Kept { header, recorder } = &mut *kept;
            if let Some(t) = title.filter(|t| !t.trim().is_empty()) {
                header.title = Some(one_line(&t, 200));
            }
            if session_id.is_some() {
                header.session_id = session_id;
            }
            header.updated = kept_chats::now_secs();
            header.records = recorder.len();
            header.dropped = recorder.dropped();
            header.bytes = recorder.bytes() as u64;
            let review = if review.is_empty() {
                Value::Null
            } else {
                Value::String(review)
            };
            (
                header.id.clone(),
                kept_chats::file_text(header, &review, recorder.records()),
            )
        };
        if let Err(e) = kept_chats::write(&self.spec.cwd, &id, &text) {
            log::warn(format!("kept chat {id} not written: {e}"));
        }
    }

    /// Shows kept chat `id` in this (new) chat: its transcript replayed,
    /// its review records imported; from here on this chat continues its
    /// file. Returns whether it was shown.
    pub(super) async fn restore_kept(&self, id: &str) -> bool {
        let cwd = self.spec.cwd.clone();
        let owned = id.to_owned();
        let read = tokio::task::spawn_blocking(move || kept_chats::read(&cwd, &owned))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r);
        let chat = match read {
            Ok(chat) => chat,
            Err(e) => {
                self.notice(
                    NoticeLevel::Warn,
                    format!("The kept chat {id} could not be read ({e}); it is not shown"),
                );
                return false;
            }
        };
        let label = match chat.header.title.as_deref().map(|t| one_line(t, 120)) {
            Some(t) if !t.is_empty() => format!("Kept transcript: {t}"),
            _ => "Kept transcript of this chat".to_owned(),
        };
        let mut end = "End of the kept transcript".to_owned();
        if chat.header.dropped > 0 {
            end.push_str(&format!(
                " ({} older part(s) were dropped to stay under history.chat_max_bytes)",
                chat.header.dropped
            ));
        }
        self.with_model(|m| m.replay_kept(&label, &chat.records, &end));
        if chat.bad_lines > 0 {
            self.notice(
                NoticeLevel::Warn,
                format!(
                    "{} line(s) of the kept chat could not be read and were skipped",
                    chat.bad_lines
                ),
            );
        }
        if let Value::String(review) = &chat.review {
            if let Err(e) = self.editor.review_import(review) {
                self.notice(
                    NoticeLevel::Warn,
                    format!("The kept review records could not be read ({e})"),
                );
            }
        }
        let mut kept = self.kept.lock();
        let mut header = chat.header;
        header.agent = self.spec.name.clone();
        kept.recorder = Recorder::with_records(
            chat.records,
            header.dropped,
            kept_chats::limits().chat_max_bytes,
        );
        kept.header = header;
        true
    }
}
