//! The TTLs a writable replica's own clients set (Redis's
//! `slaveKeysWithExpire`). A replica leaves expiry to its master, whose
//! DELs arrive in the stream; a key a client wrote on the replica with a
//! TTL is one the master never heard of, so the replica remembers it here
//! and deletes it itself once the TTL passes.
//!
//! Dispatch turns the remembering on for such a client's command
//! ([`remember`]); [`Table`](super::Table) notes every TTL it sets then
//! ([`note`]); dispatch hands the notes to the registry after the command
//! ([`ReplicaTtls::add_noted`]), and the replica's expiry cycle checks the
//! keys ([`super::Keyspace::expire_replica_ttls`]).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use indexmap::IndexMap;
use parking_lot::Mutex;

use super::Key;

thread_local! {
    static REMEMBERING: Cell<bool> = const { Cell::new(false) };
    static NOTED: RefCell<Vec<(usize, Key)>> = const { RefCell::new(Vec::new()) };
}

/// Turns noting on or off for this thread's command; returns what it was.
pub fn remember(on: bool) -> bool {
    REMEMBERING.with(|r| r.replace(on))
}

/// A TTL was set on `key` in `db` (one thread-local load when not noting).
#[inline]
pub fn note(db: usize, key: &[u8]) {
    if REMEMBERING.with(|r| r.get()) {
        NOTED.with(|n| n.borrow_mut().push((db, Key::from_slice(key))));
    }
}

/// Keys with a TTL set on this writable replica, each with a bitmap of the
/// databases (below 64, as Redis) where it may hold one.
#[derive(Default)]
pub struct ReplicaTtls {
    keys: Mutex<IndexMap<Key, u64>>,
    any: AtomicBool,
}

impl ReplicaTtls {
    /// Moves this thread's notes into the registry.
    pub fn add_noted(&self) {
        let noted = NOTED.with(|n| std::mem::take(&mut *n.borrow_mut()));
        if noted.is_empty() {
            return;
        }
        let mut keys = self.keys.lock();
        for (db, key) in noted {
            if db < 64 {
                *keys.entry(key).or_insert(0) |= 1 << db;
            }
        }
        self.any.store(!keys.is_empty(), Relaxed);
    }

    /// Forgets every key (the data was flushed or replaced: a key of the
    /// same name from the master is not this replica's to expire).
    pub fn clear(&self) {
        if self.any.load(Relaxed) {
            self.keys.lock().clear();
            self.any.store(false, Relaxed);
        }
    }

    pub fn is_empty(&self) -> bool {
        !self.any.load(Relaxed)
    }

    /// A key picked at random, with its databases.
    pub(super) fn pick(&self) -> Option<(Key, u64)> {
        use rand::Rng;
        let keys = self.keys.lock();
        if keys.is_empty() {
            return None;
        }
        let idx = rand::thread_rng().gen_range(0..keys.len());
        keys.get_index(idx).map(|(k, dbs)| (k.clone(), *dbs))
    }

    /// After a check of `key` in the databases `checked`: those where it
    /// still has a TTL are `live`; the others are dropped (bits a command
    /// added meanwhile stay), and the key with them when none is left.
    pub(super) fn settle(&self, key: &[u8], checked: u64, live: u64) {
        let mut keys = self.keys.lock();
        if let Some(dbs) = keys.get_mut(key) {
            *dbs = (*dbs & !checked) | live;
            if *dbs == 0 {
                keys.swap_remove(key);
            }
        }
        self.any.store(!keys.is_empty(), Relaxed);
    }
}
