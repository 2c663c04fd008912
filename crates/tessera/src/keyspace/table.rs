//! One database's slice of one shard: the key → entry map plus the index of
//! keys that carry a TTL. Everything here runs under the shard's lock and
//! takes the current time as an argument, so it never reads a clock itself.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;

use foldhash::fast::RandomState;
use indexmap::IndexMap;

use super::effects;
use super::events::{self, Class};
use super::keymap::{InsertNew, KeyMap};
use rand::Rng;

use crate::types::Value;

/// A key's bytes. Keys of up to 16 bytes (most real key names) live inside
/// the entry itself, saving a heap allocation and a cache miss per lookup.
pub type Key = smallvec::SmallVec<[u8; 16]>;

/// How an access updates a key's LRU/LFU field, fixed once per command.
#[derive(Clone, Copy, Debug)]
pub enum Touch {
    /// Do not update (OBJECT, TYPE-free peeks, CLIENT NO-TOUCH).
    None,
    /// LRU clock in seconds.
    Lru(u32),
    /// LFU: current time in minutes (16 bits used) and the counter's
    /// logarithmic factor and decay period, as Redis's lfu-log-factor /
    /// lfu-decay-time.
    Lfu {
        minutes: u32,
        log_factor: u32,
        decay_minutes: u32,
    },
}

/// LFU counter a new key starts with (LFU_INIT_VAL).
pub const LFU_INIT_VAL: u32 = 5;

#[derive(Debug, Clone)]
pub struct Entry {
    pub value: Value,
    /// LRU seconds clock, or LFU (minutes << 8 | log counter), like the 24
    /// bits Redis keeps in every object.
    pub access: u32,
    /// Whether the key has a TTL; the time itself lives in the table's
    /// `expires` map, so keys without one (most) do not pay 8 bytes for it.
    ttl: bool,
}

impl Entry {
    pub fn new(value: Value, touch: Touch) -> Entry {
        let access = match touch {
            Touch::Lru(s) => s,
            Touch::Lfu { minutes, .. } => ((minutes & 0xffff) << 8) | LFU_INIT_VAL,
            Touch::None => 0,
        };
        Entry {
            value,
            access,
            ttl: false,
        }
    }

    #[inline]
    pub fn has_ttl(&self) -> bool {
        self.ttl
    }

    /// Records an access the way Redis's lookupKey does.
    #[inline]
    pub fn touch(&mut self, touch: Touch) {
        match touch {
            Touch::None => {}
            Touch::Lru(s) => self.access = s,
            Touch::Lfu {
                minutes,
                log_factor,
                decay_minutes,
            } => {
                let counter = lfu_decayed_counter(self.access, minutes, decay_minutes);
                let counter = lfu_log_incr(counter, log_factor);
                self.access = ((minutes & 0xffff) << 8) | counter;
            }
        }
    }
}

/// The LFU counter after decay for the minutes elapsed since last access.
pub fn lfu_decayed_counter(access: u32, now_minutes: u32, decay_minutes: u32) -> u32 {
    let last = (access >> 8) & 0xffff;
    let now = now_minutes & 0xffff;
    let elapsed = if now >= last {
        now - last
    } else {
        65535 - last + now
    };
    let counter = access & 0xff;
    let periods = elapsed.checked_div(decay_minutes).unwrap_or(0);
    counter.saturating_sub(periods)
}

fn lfu_log_incr(counter: u32, log_factor: u32) -> u32 {
    if counter >= 255 {
        return 255;
    }
    let r: f64 = rand::thread_rng().gen();
    let base = counter.saturating_sub(LFU_INIT_VAL) as f64;
    let p = 1.0 / (base * log_factor as f64 + 1.0);
    if r < p {
        counter + 1
    } else {
        counter
    }
}

/// Counters a shard keeps for INFO; plain integers because they are only
/// touched under the shard lock.
#[derive(Debug, Default, Clone, Copy)]
pub struct TableStats {
    pub expired_keys: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
}

/// A WATCHing client's "something I watch changed" flag (its EXEC aborts
/// when set). Shared by every key the client watches.
pub type WatchFlag = std::sync::Arc<std::sync::atomic::AtomicBool>;

/// A client's WATCH of one key in a table.
#[derive(Debug)]
struct Watcher {
    /// The client's "something I watch changed" flag.
    flag: WatchFlag,
    /// The key was there but already expired when watched. Redis 7.0 then
    /// treats it as absent: its deletion does not fail the transaction
    /// (and clears this mark), and EXEC does not count its being expired.
    expired: bool,
}

/// `repr(C)` with the map first: a lookup reads only the map's header, and
/// for database 0 that header shares a cache line with the shard's lock
/// (see `ShardTables`).
#[derive(Debug, Default)]
#[repr(C)]
pub struct Table {
    map: KeyMap,
    /// The database index this table belongs to (events name it).
    db: usize,
    /// Clients WATCHing keys of this table. Lives with the table, under the
    /// same lock, so a write and the flagging of its watchers are one step.
    /// Stays with the database index when SWAPDB moves the contents.
    watched: HashMap<Key, Vec<Watcher>, RandomState>,
    /// Absolute expiry (Unix ms) of the keys that have one. Separate, as in
    /// Redis, so active expiry and volatile-* eviction sample only these.
    expires: IndexMap<Key, i64, RandomState>,
    /// Where the next active-expiry pass over `expires` starts.
    expire_cursor: usize,
    /// The keyspace's "this shard may have keys with a TTL" flags and this
    /// table's shard: raised when a key gets a TTL, so active expiry skips
    /// the (usually many) shards without any, as Redis skips databases
    /// without volatile keys.
    volatile_hint: Option<(std::sync::Arc<[std::sync::atomic::AtomicBool]>, u16)>,
}

impl Table {
    pub fn new(db: usize) -> Table {
        Table {
            db,
            ..Table::default()
        }
    }

    /// A table of shard `shard` that raises `hints[shard]` when a key gets
    /// a TTL.
    pub fn with_volatile_hint(
        db: usize,
        hints: std::sync::Arc<[std::sync::atomic::AtomicBool]>,
        shard: usize,
    ) -> Table {
        Table {
            db,
            volatile_hint: Some((hints, shard as u16)),
            ..Table::default()
        }
    }

    /// Whether any key of this table has a TTL.
    pub fn has_volatile(&self) -> bool {
        !self.expires.is_empty()
    }

    pub fn db_index(&self) -> usize {
        self.db
    }

    /// Registers a WATCH of `key`; `expired`: the key is there but already
    /// expired (Redis 7.0 then treats it as absent, see [`Watcher`]).
    pub fn watch(&mut self, key: &[u8], flag: &WatchFlag, expired: bool) {
        let list = self.watched.entry(Key::from_slice(key)).or_default();
        if !list.iter().any(|w| std::sync::Arc::ptr_eq(&w.flag, flag)) {
            list.push(Watcher {
                flag: flag.clone(),
                expired,
            });
        }
    }

    /// Removes a WATCH of `key` (UNWATCH, EXEC, DISCARD, disconnect).
    pub fn unwatch(&mut self, key: &[u8], flag: &WatchFlag) {
        if let Some(list) = self.watched.get_mut(key) {
            list.retain(|w| !std::sync::Arc::ptr_eq(&w.flag, flag));
            if list.is_empty() {
                self.watched.remove(key);
            }
        }
    }

    /// Whether the client with `flag` watches `key` as a key that was
    /// already expired when watched (and has not been deleted since).
    pub fn watched_as_expired(&self, key: &[u8], flag: &WatchFlag) -> bool {
        self.watched.get(key).is_some_and(|list| {
            list.iter()
                .any(|w| w.expired && std::sync::Arc::ptr_eq(&w.flag, flag))
        })
    }

    /// Flags the clients watching `key`: it was modified (Redis's
    /// signalModifiedKey → touchWatchedKey). A watcher that saw the key
    /// already expired is not flagged when the key is now gone (its
    /// deletion changed nothing for it), only unmarked.
    #[inline]
    pub fn touch_watched(&mut self, key: &[u8]) {
        if self.watched.is_empty() {
            return;
        }
        let Some(list) = self.watched.get_mut(key) else {
            return;
        };
        let mut absent = None;
        for w in list {
            if w.expired {
                if *absent.get_or_insert_with(|| !self.map.contains_key(key)) {
                    w.expired = false;
                }
                continue;
            }
            w.flag.store(true, Relaxed);
        }
    }

    /// Flags watchers of keys that exist here or in `other` (FLUSHDB,
    /// FLUSHALL, SWAPDB: a watched key that did not exist and still does
    /// not is left alone, as in Redis 7.0). An already-expired watched key
    /// that is emptied away, or replaced by one also expired, changes
    /// nothing; a missing one replaced by an expired one counts as still
    /// missing.
    pub fn touch_watched_existing(&mut self, other: Option<&Table>, now_ms: i64) {
        for (key, list) in &mut self.watched {
            let here = self.map.contains_key(key);
            let there = other.and_then(|o| o.map.get(key).map(|e| o.is_expired(key, e, now_ms)));
            if !here && there.is_none() {
                continue;
            }
            for w in list.iter_mut() {
                match (w.expired, there) {
                    (true, None) => {
                        w.expired = false;
                        continue;
                    }
                    (true, Some(true)) => continue,
                    (false, Some(true)) if !here => {
                        w.expired = true;
                        continue;
                    }
                    _ => {}
                }
                w.flag.store(true, Relaxed);
            }
        }
    }

    /// Exchanges the contents of two tables, leaving each its database
    /// index and its watchers (SWAPDB).
    pub fn swap_contents(a: &mut Table, b: &mut Table) {
        std::mem::swap(a, b);
        std::mem::swap(&mut a.db, &mut b.db);
        std::mem::swap(&mut a.watched, &mut b.watched);
    }

    /// A stream going away (deleted, expired, evicted, overwritten) answers
    /// the clients blocked reading it (Redis's signalDeletedKeyAsReady).
    #[inline]
    fn gone(&self, key: &[u8], entry: &Entry) {
        if matches!(entry.value, Value::Stream(_)) {
            events::stream_gone(self.db, key);
        }
    }

    /// A deleted-because-expired key: its watchers, caches and
    /// subscribers hear of it.
    fn expired(&mut self, key: &[u8]) {
        self.touch_watched(key);
        events::invalidate_gone(key);
        events::notify(Class::EXPIRED, "expired", self.db, key);
        effects::push_expired(self.db, key);
    }

    /// A deleted-by-eviction key.
    pub fn evicted(&mut self, key: &[u8]) {
        self.touch_watched(key);
        events::invalidate_gone(key);
        events::notify(Class::EVICTED, "evicted", self.db, key);
        effects::push_evicted(self.db, key);
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The table's own memory, (keys, expiry index): the key map's vector
    /// and index, and for the expiry index one slot (hash, key, time) and
    /// one index entry (8-byte position plus a control byte) per key of
    /// capacity.
    pub fn structure_bytes(&self) -> (u64, u64) {
        let expiry = std::mem::size_of::<(u64, Key, i64)>() + 9;
        (
            self.map.structure_bytes() as u64,
            (self.expires.capacity() * expiry) as u64,
        )
    }

    pub fn volatile_len(&self) -> usize {
        self.expires.len()
    }

    /// Looks a key up, deleting it first if it has expired (counted in
    /// `stats`; on a master, see [`set_replica_expiry`]).
    #[inline]
    pub fn get_live(
        &mut self,
        key: &[u8],
        now_ms: i64,
        stats: &mut TableStats,
    ) -> Option<&mut Entry> {
        let idx = self.map.get_index_of(key)?;
        if self.map.entry_at(idx).ttl && self.expires.get(key).is_some_and(|&at| at <= now_ms) {
            if replica_expiry() {
                // A replica's keys expire when the master's DEL arrives:
                // hidden from its clients meanwhile, as the master sees
                // them to its own stream.
                if MASTER_VIEW.with(|v| v.get()) {
                    return Some(self.map.entry_at_mut(idx));
                }
                return None;
            }
            self.remove_index(idx);
            stats.expired_keys += 1;
            self.expired(key);
            return None;
        }
        Some(self.map.entry_at_mut(idx))
    }

    /// Looks a key up without expiring it (for commands that must see the
    /// raw state, e.g. the active expiry itself).
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        self.map.get(key)
    }

    /// The key's absolute expiry in Unix ms, 0 when it has none.
    #[inline]
    pub fn expire_of(&self, key: &[u8]) -> i64 {
        self.expires.get(key).copied().unwrap_or(0)
    }

    /// Whether an entry met while iterating has expired.
    #[inline]
    pub fn is_expired(&self, key: &[u8], entry: &Entry, now_ms: i64) -> bool {
        entry.ttl && self.expires.get(key).is_some_and(|&at| at <= now_ms)
    }

    /// Inserts or overwrites a key with no TTL.
    pub fn insert(&mut self, key: &[u8], entry: Entry) -> Option<Entry> {
        self.insert_expiring(key, entry, 0)
    }

    /// Inserts or overwrites a key expiring at `at_ms` (0: never).
    pub fn insert_expiring(&mut self, key: &[u8], entry: Entry, at_ms: i64) -> Option<Entry> {
        // (Never Err: no expiry check is asked for.)
        self.upsert(key, entry, at_ms, None).unwrap_or_default()
    }

    /// [`Table::insert_expiring`] for a write that replaces whatever is
    /// there (a plain SET), in the same single probe; a key whose TTL has
    /// passed is handed back (`Err`) for the caller to take the general
    /// path, which reports it expired first.
    pub fn overwrite(
        &mut self,
        key: &[u8],
        entry: Entry,
        at_ms: i64,
        now_ms: i64,
    ) -> Result<Option<Entry>, Entry> {
        self.upsert(key, entry, at_ms, Some(now_ms))
    }

    /// See [`KeyMap::prefetch`].
    #[inline]
    pub fn prefetch(&self, key: &[u8]) {
        self.map.prefetch(key);
    }

    /// Inserts or replaces with one hash and one table probe. With
    /// `expired_before`, an existing key whose TTL has passed by then is
    /// left alone and the entry handed back.
    fn upsert(
        &mut self,
        key: &[u8],
        mut entry: Entry,
        at_ms: i64,
        expired_before: Option<i64>,
    ) -> Result<Option<Entry>, Entry> {
        entry.ttl = at_ms != 0;
        // The entry vector grows in small steps (see reserve_one).
        self.reserve_one();
        let old = match self.map.insert_new(key, entry) {
            InsertNew::Present(idx, entry) => {
                let had_ttl = self.map.entry_at(idx).ttl;
                if let Some(now_ms) = expired_before {
                    if had_ttl && self.expires.get(key).is_some_and(|&at| at <= now_ms) {
                        return Err(entry);
                    }
                }
                let old = std::mem::replace(self.map.entry_at_mut(idx), entry);
                self.gone(key, &old);
                self.record_expire(key, at_ms, had_ttl);
                Some(old)
            }
            InsertNew::Inserted => {
                events::notify(Class::NEW, "new", self.db, key);
                self.record_expire(key, at_ms, false);
                None
            }
        };
        Ok(old)
    }

    fn record_expire(&mut self, key: &[u8], at_ms: i64, had_ttl: bool) {
        if at_ms != 0 {
            super::replica_ttls::note(self.db, key);
            match self.expires.get_mut(key) {
                Some(at) => *at = at_ms,
                None => {
                    self.expires.insert(Key::from_slice(key), at_ms);
                    if let Some((hints, shard)) = &self.volatile_hint {
                        let hint = &hints[*shard as usize];
                        if !hint.load(std::sync::atomic::Ordering::Relaxed) {
                            hint.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            }
        } else if had_ttl {
            self.expires.swap_remove(key);
        }
    }

    /// Grows the entry vector by a quarter at a time. Doubling would leave
    /// up to half of it unused; per-key memory matters more here than the
    /// extra (amortised O(1)) reallocations.
    #[inline]
    fn reserve_one(&mut self) {
        let len = self.map.len();
        if len == self.map.capacity() {
            self.map.reserve_exact(len / 4 + 4);
        }
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let idx = self.map.get_index_of(key)?;
        Some(self.remove_index(idx))
    }

    /// Removes and returns the key, its entry and its expiry (0: none), for
    /// RENAME and MOVE.
    pub fn remove_full(&mut self, key: &[u8]) -> Option<(Key, Entry, i64)> {
        let (k, e) = self.map.swap_remove(key)?;
        self.gone(&k, &e);
        let at = if e.ttl {
            self.expires.swap_remove(key).unwrap_or(0)
        } else {
            0
        };
        Some((k, e, at))
    }

    fn remove_index(&mut self, idx: usize) -> Entry {
        // Index came from get_index_of under the same borrow.
        let (k, e) = self
            .map
            .swap_remove_index(idx)
            .expect("index from get_index_of is valid");
        if e.ttl {
            self.expires.swap_remove(&k);
        }
        self.gone(&k, &e);
        e
    }

    /// Deletes `key` if its TTL has passed, as active expiry does (for a
    /// writable replica's own keys). None when it has no TTL here (or is
    /// gone); else whether it expired.
    pub fn expire_if_due(&mut self, key: &[u8], now_ms: i64) -> Option<bool> {
        let &at = self.expires.get(key)?;
        if at > now_ms {
            return Some(false);
        }
        self.expires.swap_remove(key);
        if let Some((k, e)) = self.map.swap_remove(key) {
            self.gone(&k, &e);
        }
        self.expired(key);
        Some(true)
    }

    /// Sets (at_ms > 0) or clears (0) a key's TTL; false when the key does
    /// not exist.
    pub fn set_expire(&mut self, key: &[u8], at_ms: i64) -> bool {
        let Some(e) = self.map.get_mut(key) else {
            return false;
        };
        let had = e.ttl;
        e.ttl = at_ms != 0;
        self.record_expire(key, at_ms, had);
        true
    }

    /// Empties the table, returning the old contents (to free elsewhere).
    /// The database index and the watchers stay.
    /// Puts back the contents [`clear`](Self::clear) took out, keeping the
    /// watchers the table has now (they stay with the database).
    pub fn restore(&mut self, mut old: Table) {
        old.watched = std::mem::take(&mut self.watched);
        old.volatile_hint = self.volatile_hint.clone();
        old.db = self.db;
        *self = old;
        // (Active expiry may have lowered the shard's hint meanwhile.)
        if self.has_volatile() {
            if let Some((hints, shard)) = &self.volatile_hint {
                hints[*shard as usize].store(true, Relaxed);
            }
        }
    }

    pub fn clear(&mut self) -> Table {
        let mut old = std::mem::take(self);
        self.db = old.db;
        self.volatile_hint = old.volatile_hint.clone();
        self.watched = std::mem::take(&mut old.watched);
        old
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> {
        self.map.iter()
    }

    /// A uniformly random live-or-expired entry.
    pub fn random_index(&self) -> Option<usize> {
        if self.map.is_empty() {
            None
        } else {
            Some(rand::thread_rng().gen_range(0..self.map.len()))
        }
    }

    pub fn get_index(&self, idx: usize) -> Option<(&Key, &Entry)> {
        self.map.get_index(idx)
    }

    /// A random key among those with a TTL, with its expiry.
    pub fn random_volatile(&self) -> Option<(&Key, i64)> {
        if self.expires.is_empty() {
            None
        } else {
            self.expires
                .get_index(rand::thread_rng().gen_range(0..self.expires.len()))
                .map(|(k, at)| (k, *at))
        }
    }

    /// One active-expiry step: examines up to `budget` keys with a TTL,
    /// continuing where the last step stopped, and deletes the expired ones.
    /// Returns (examined, expired).
    /// Also reports the TTLs of the live keys it looked at (their sum in
    /// ms and their number), for INFO's avg_ttl.
    pub fn expire_step(&mut self, now_ms: i64, budget: usize) -> ExpireStep {
        let mut examined = 0;
        let mut expired = 0;
        let (mut ttl_sum, mut ttl_samples) = (0i64, 0i64);
        while examined < budget && !self.expires.is_empty() {
            if self.expire_cursor >= self.expires.len() {
                self.expire_cursor = 0;
            }
            examined += 1;
            let idx = self.expire_cursor;
            let dead = self
                .expires
                .get_index(idx)
                .is_some_and(|(_, &at)| at <= now_ms);
            if dead {
                if let Some((k, _)) = self.expires.swap_remove_index(idx) {
                    if let Some((_, e)) = self.map.swap_remove(&k) {
                        self.gone(&k, &e);
                    }
                    self.expired(&k);
                }
                expired += 1;
                // swap_remove moved the last key into `idx`; look at it next.
            } else {
                if let Some((_, &at)) = self.expires.get_index(idx) {
                    ttl_sum = ttl_sum.saturating_add(at - now_ms);
                    ttl_samples += 1;
                }
                self.expire_cursor += 1;
            }
        }
        ExpireStep {
            examined,
            expired,
            ttl_sum,
            ttl_samples,
        }
    }
}

/// What one [`Table::expire_step`] did.
pub struct ExpireStep {
    pub examined: usize,
    pub expired: usize,
    /// Sum of the remaining TTLs (ms) of the live keys looked at.
    pub ttl_sum: i64,
    pub ttl_samples: i64,
}

#[cfg(test)]
mod layout_tests {
    /// Every key pays for one entry, so its size is watched: a value type
    /// that grows it (instead of boxing its large encoding) costs memory on
    /// every key of every type.
    #[test]
    fn entries_stay_small() {
        assert_eq!(std::mem::size_of::<crate::types::Value>(), 24);
        assert_eq!(std::mem::size_of::<super::Entry>(), 32);
    }
}

/// Whether this server is a replica: lookups then hide keys past their TTL
/// instead of deleting them.
static REPLICA_EXPIRY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

thread_local! {
    /// This thread applies a master's stream (see [`set_master_view`]).
    static MASTER_VIEW: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[inline]
fn replica_expiry() -> bool {
    REPLICA_EXPIRY.load(std::sync::atomic::Ordering::Relaxed)
}

/// Lookups on a replica hide expired keys without deleting them (Redis's
/// `expireIfNeeded` on a replica).
pub fn set_replica_expiry(on: bool) {
    REPLICA_EXPIRY.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The calling thread applies the master's stream: it sees keys past
/// their TTL as they are, so its commands do what they did on the master.
pub fn set_master_view(on: bool) {
    MASTER_VIEW.with(|v| v.set(on));
}
