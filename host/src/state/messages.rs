//! The failure messages of a plugin's events, kept once each. A program may keep every event
//! it was handed, so a plugin that failed each with a message of its own would make the
//! program hold one message per event; here a plugin's messages are interned, and at most
//! [`MAX_KEPT`] different ones are held at a time (each at most 1 KiB), over all its instances.
//! Past that, a new message is replaced by one that says it was dropped.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::devices::lock;

/// The most different failure messages one plugin's events hold at once.
pub const MAX_KEPT: usize = 256;
/// The longest failure message an event keeps, in bytes; the rest is cut.
pub const MAX_MESSAGE: usize = 1024;
/// What the messages of one plugin can make the host hold: [`MAX_KEPT`] messages of
/// [`MAX_MESSAGE`] bytes, with their table entries.
pub const KEPT_BYTES: u64 = (MAX_KEPT * (MAX_MESSAGE + 64)) as u64;

/// One plugin's interned failure messages.
#[derive(Debug)]
pub struct FailureMessages {
    kept: Mutex<HashSet<Arc<str>>>,
    /// What a message becomes when [`MAX_KEPT`] others are held.
    dropped: Arc<str>,
}

impl FailureMessages {
    /// The table of plugin `plugin`.
    pub fn new(plugin: &str) -> Self {
        FailureMessages {
            kept: Mutex::new(HashSet::new()),
            dropped: format!(
                "plugin '{plugin}' failed the command; its message was dropped, since events \
                 held {MAX_KEPT} different messages of it already"
            )
            .into(),
        }
    }

    /// The shared copy of `message` (already cut to [`MAX_MESSAGE`]).
    pub fn intern(&self, message: &str) -> Arc<str> {
        let mut kept = lock(&self.kept);
        if let Some(found) = kept.get(message) {
            return found.clone();
        }
        if kept.len() >= MAX_KEPT {
            // Messages no event holds any more make room.
            kept.retain(|m| Arc::strong_count(m) > 1);
            if kept.len() >= MAX_KEPT {
                return self.dropped.clone();
            }
        }
        let message: Arc<str> = message.into();
        kept.insert(message.clone());
        message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_shared_and_at_most_max_kept_are_held() {
        let table = FailureMessages::new("p");
        let a = table.intern("broken");
        let b = table.intern("broken");
        assert!(Arc::ptr_eq(&a, &b));
        let held: Vec<Arc<str>> = (0..MAX_KEPT * 4)
            .map(|i| table.intern(&format!("failure {i}")))
            .collect();
        let distinct: HashSet<&str> = held.iter().map(|m| &**m).collect();
        assert_eq!(
            distinct.len(),
            MAX_KEPT,
            "{MAX_KEPT} - 1 kept, then the dropped one"
        );
        assert!(held.last().unwrap().contains("was dropped"));
        drop(held);
        let fresh = table.intern("after the events went");
        assert_eq!(
            &*fresh, "after the events went",
            "released messages make room"
        );
    }
}
