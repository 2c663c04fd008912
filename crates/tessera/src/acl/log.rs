//! ACL LOG: the last denials (commands, keys, channels, logins), newest
//! first; a denial like a recent one adds to its count instead.

use std::collections::VecDeque;

/// Denials this close together in time (ms) with the same reason,
/// context, object and user are one entry.
const GROUPING_MS: i64 = 60_000;
/// How many recent entries a new denial is compared with.
const GROUPING_SCAN: usize = 10;

#[derive(Clone, Debug)]
pub struct Entry {
    pub count: u64,
    /// `command`, `key`, `channel` or `auth`.
    pub reason: &'static str,
    /// `toplevel`, `multi` or `lua`.
    pub context: &'static str,
    /// The command's full name, the key, the channel, or for a login the
    /// command as typed.
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    pub created_ms: i64,
    /// The client's CLIENT LIST line at the time.
    pub client_info: String,
}

#[derive(Default)]
pub struct AclLog {
    entries: VecDeque<Entry>,
}

impl AclLog {
    pub fn add(&mut self, entry: Entry, max_len: usize) {
        let same = self.entries.iter().take(GROUPING_SCAN).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && entry.created_ms - e.created_ms < GROUPING_MS
        });
        // A repeated denial moves to the front with its count raised.
        let entry = match same.and_then(|i| self.entries.remove(i)) {
            Some(old) => Entry {
                count: old.count + 1,
                ..entry
            },
            None => entry,
        };
        self.entries.push_front(entry);
        self.entries.truncate(max_len);
    }

    /// Drops entries beyond a (lowered) maximum length.
    pub fn trim(&mut self, max_len: usize) {
        self.entries.truncate(max_len);
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }

    pub fn newest(&self, count: usize) -> Vec<Entry> {
        self.entries.iter().take(count).cloned().collect()
    }
}
