//! File texts kept in memory, all chats together, under one cap
//! (`fs.kept_text_max_bytes`): what agents were served or wrote (the base
//! of a merge), the originals of changed files (what review restores) and
//! the snapshots of the files an edit card names. When a new text would
//! pass the cap the oldest are dropped first; a dropped text reads as
//! unknown (review then says the original is unknown, a merge asks the
//! agent to read the file again), never as a wrong one.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

/// Default cap on the bytes of all kept texts.
pub const DEFAULT_MAX_BYTES: usize = 256 << 20;

struct Entry {
    text: Arc<String>,
    owner: u64,
    label: String,
}

struct Store {
    /// By id: ids grow, so the first entry is the oldest.
    entries: BTreeMap<u64, Entry>,
    total: usize,
    max: usize,
    next: u64,
}

impl Store {
    /// Drops the oldest entries until the total fits.
    fn shrink(&mut self) -> Vec<(u64, String)> {
        let mut dropped = Vec::new();
        while self.total > self.max {
            let Some((_, e)) = self.entries.pop_first() else {
                break;
            };
            self.total -= e.text.len();
            dropped.push((e.owner, e.label));
        }
        dropped
    }
}

/// Told of every dropped text: (owner chat, what it was).
type Notify = Box<dyn Fn(u64, &str) + Send + Sync>;

/// A store of kept texts under one cap.
pub struct Kept {
    store: Mutex<Store>,
    on_drop: OnceLock<Notify>,
}

/// The store of all chats.
pub static KEPT: Kept = Kept::new(DEFAULT_MAX_BYTES);

impl Kept {
    pub const fn new(max: usize) -> Self {
        Kept {
            store: Mutex::new(Store {
                entries: BTreeMap::new(),
                total: 0,
                max,
                next: 0,
            }),
            on_drop: OnceLock::new(),
        }
    }

    /// Sets what is told of dropped texts (once; later calls are ignored).
    pub fn on_drop(&self, f: impl Fn(u64, &str) + Send + Sync + 'static) {
        let _ = self.on_drop.set(Box::new(f));
    }

    /// Sets the cap; texts over it are dropped at once, oldest first.
    pub fn set_max_bytes(&self, max: usize) {
        let dropped = {
            let mut s = self.store.lock();
            s.max = max;
            s.shrink()
        };
        self.tell(dropped);
    }

    fn tell(&self, dropped: Vec<(u64, String)>) {
        for (owner, label) in dropped {
            crate::log::warn(format!(
                "kept texts over fs.kept_text_max_bytes: dropped {label} (chat {owner})"
            ));
            if let Some(f) = self.on_drop.get() {
                f(owner, &label);
            }
        }
    }

    /// Keeps `text` for chat `owner`; `label` names it in the notes ("the
    /// original of /p/a.rs"). None when it is larger than the whole cap (it
    /// is not kept, and nothing else is dropped for it).
    pub fn keep(&self, owner: u64, label: String, text: Arc<String>) -> Option<u64> {
        let (id, dropped) = {
            let mut s = self.store.lock();
            if text.len() > s.max {
                drop(s);
                self.tell(vec![(owner, label)]);
                return None;
            }
            s.next += 1;
            let id = s.next;
            s.total += text.len();
            s.entries.insert(id, Entry { text, owner, label });
            (id, s.shrink())
        };
        self.tell(dropped);
        Some(id)
    }

    /// The text kept as `id`, unless it was dropped.
    pub fn get(&self, id: u64) -> Option<Arc<String>> {
        self.store.lock().entries.get(&id).map(|e| e.text.clone())
    }

    /// Frees `id` (its owner no longer needs it).
    pub fn release(&self, id: u64) {
        let mut s = self.store.lock();
        if let Some(e) = s.entries.remove(&id) {
            s.total -= e.text.len();
        }
    }

    /// Bytes kept now.
    pub fn total_bytes(&self) -> usize {
        self.store.lock().total
    }
}

/// A kept text, released when its last clone goes.
#[derive(Clone)]
pub struct KeptText(Arc<Handle>);

struct Handle {
    store: &'static Kept,
    id: Option<u64>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.store.release(id);
        }
    }
}

impl KeptText {
    /// `text` kept in the store of all chats.
    pub fn new(owner: u64, label: String, text: Arc<String>) -> Self {
        Self::new_in(&KEPT, owner, label, text)
    }

    pub fn new_in(store: &'static Kept, owner: u64, label: String, text: Arc<String>) -> Self {
        KeptText(Arc::new(Handle {
            store,
            id: store.keep(owner, label, text),
        }))
    }

    /// The text, unless it was dropped to stay under the cap.
    pub fn get(&self) -> Option<Arc<String>> {
        self.0.id.and_then(|id| self.0.store.get(id))
    }
}

impl std::fmt::Debug for KeptText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.get() {
            Some(t) => write!(f, "KeptText({} bytes)", t.len()),
            None => write!(f, "KeptText(dropped)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize) -> Arc<String> {
        Arc::new("x".repeat(n))
    }

    fn store(max: usize) -> &'static Kept {
        Box::leak(Box::new(Kept::new(max)))
    }

    #[test]
    fn the_oldest_texts_go_first_and_only_as_many_as_needed() {
        let s = store(100);
        let dropped = Arc::new(Mutex::new(Vec::new()));
        let d = dropped.clone();
        s.on_drop(move |owner, label| d.lock().push(format!("{owner}:{label}")));
        let keep = |owner, label: &str, n| KeptText::new_in(s, owner, label.into(), text(n));
        let a = keep(1, "a", 40);
        let b = keep(1, "b", 40);
        assert!(a.get().is_some() && b.get().is_some());
        // 40 + 40 + 40 > 100: a (the oldest) goes, b stays.
        let c = keep(2, "c", 40);
        assert!(a.get().is_none(), "the oldest is dropped");
        assert_eq!(b.get().unwrap().len(), 40);
        assert_eq!(c.get().unwrap().len(), 40);
        assert_eq!(s.total_bytes(), 80);
        assert_eq!(*dropped.lock(), vec!["1:a"]);
        // Releasing makes room: nothing else is dropped for d.
        drop(b);
        let d = keep(2, "d", 60);
        assert!(c.get().is_some() && d.get().is_some());
        // Larger than the whole cap: not kept, nothing dropped for it.
        let e = keep(2, "e", 101);
        assert!(e.get().is_none());
        assert!(c.get().is_some() && d.get().is_some());
        assert_eq!(*dropped.lock(), vec!["1:a", "2:e"]);
        // A clone keeps the text; the last one releases it.
        let c2 = c.clone();
        drop(c);
        assert!(c2.get().is_some());
        drop((c2, d, e, a));
        assert_eq!(s.total_bytes(), 0);
    }

    #[test]
    fn a_smaller_cap_drops_the_oldest_at_once() {
        let s = store(1000);
        let kept: Vec<KeptText> = (0..5)
            .map(|i| KeptText::new_in(s, 3, format!("t{i}"), text(100)))
            .collect();
        s.set_max_bytes(250);
        let alive: Vec<bool> = kept.iter().map(|k| k.get().is_some()).collect();
        assert_eq!(alive, vec![false, false, false, true, true]);
        drop(kept);
        assert_eq!(s.total_bytes(), 0);
    }
}
