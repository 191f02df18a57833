//! Patch semantics of the update fields the schema marks so
//! (`session_info_update`'s `title` and `updatedAt`, `compaction_update`'s
//! `summary` and `error`): an omitted field leaves the stored value as it
//! is, `null` clears it, a value replaces it. A value of the wrong shape
//! degrades to "unchanged" (the lenient edge: never the message).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Patch<T> {
    /// The field was omitted (or malformed).
    #[default]
    Unchanged,
    /// The field was `null`.
    Cleared,
    /// The field's new value.
    Set(T),
}

impl<T: Clone> Patch<T> {
    /// Field `key` of `v`, its value read by `parse` (None: malformed).
    pub fn read(v: &Value, key: &str, parse: impl FnOnce(&Value) -> Option<T>) -> Self {
        match v.get(key) {
            None => Patch::Unchanged,
            Some(Value::Null) => Patch::Cleared,
            Some(x) => parse(x).map_or(Patch::Unchanged, Patch::Set),
        }
    }

    /// Applies the patch to `slot`; true when the field was present.
    pub fn apply_to(&self, slot: &mut Option<T>) -> bool {
        match self {
            Patch::Unchanged => return false,
            Patch::Cleared => *slot = None,
            Patch::Set(v) => *slot = Some(v.clone()),
        }
        true
    }

    pub fn is_unchanged(&self) -> bool {
        matches!(self, Patch::Unchanged)
    }
}

impl Patch<String> {
    /// A text field (another JSON type reads as malformed).
    pub fn text(v: &Value, key: &str) -> Self {
        Self::read(v, key, |x| x.as_str().map(str::to_owned))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn omitted_null_and_value() {
        let mut slot = Some("old".to_owned());
        assert!(!Patch::text(&json!({}), "title").apply_to(&mut slot));
        assert_eq!(slot.as_deref(), Some("old"), "omitted: unchanged");
        assert!(!Patch::text(&json!({"title": 7}), "title").apply_to(&mut slot));
        assert_eq!(slot.as_deref(), Some("old"), "malformed: unchanged");
        assert!(Patch::text(&json!({"title": "new"}), "title").apply_to(&mut slot));
        assert_eq!(slot.as_deref(), Some("new"), "a value replaces");
        assert!(Patch::text(&json!({"title": null}), "title").apply_to(&mut slot));
        assert_eq!(slot, None, "null clears");
    }
}
