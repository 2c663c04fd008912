//! The keyspace: every database, split into shards by hash slot.
//!
//! A key's shard is derived from its Redis Cluster hash slot (CRC16 of the
//! key or its `{hash tag}`, mod 16384), and a shard holds that slice of
//! *every* database. So:
//! - a single-key command locks exactly one shard mutex, and commands on
//!   different shards never contend;
//! - a multi-key command locks its shards in ascending index order, which
//!   makes it atomic and deadlock-free ([`LockSet`]);
//! - keys that share a hash tag share a shard, so tagged multi-key commands
//!   lock once, and the future cluster mode can count and move one slot's
//!   keys by visiting one shard;
//! - each shard's tables stay small (10 M keys / 1024 shards ≈ 10 k keys),
//!   so a table resize moves a few hundred kilobytes instead of stalling the
//!   thread for a second.
//!
//! Nothing here knows about connections or RESP; time is passed in.

pub mod events;
pub mod table;

use parking_lot::{Mutex, MutexGuard};
use smallvec::SmallVec;

pub use table::{Entry, Key, Table, TableStats, Touch, WatchFlag};

/// Redis Cluster's slot count.
pub const NUM_SLOTS: usize = 16384;
/// Shards per keyspace: a power of two that divides the slot count, well
/// above any thread count we run with.
pub const NUM_SHARDS: usize = 1024;

const CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_XMODEM);

/// The cluster hash slot of a key, honouring `{hash tags}` as Redis does:
/// the first `{` with a non-empty body before the next `}`.
#[inline]
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = match memchr::memchr(b'{', key) {
        Some(open) => match memchr::memchr(b'}', &key[open + 1..]) {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    CRC16.checksum(tagged) & (NUM_SLOTS as u16 - 1)
}

#[inline]
pub fn shard_of(key: &[u8]) -> usize {
    key_slot(key) as usize & (NUM_SHARDS - 1)
}

/// One shard: its slice of every database and its counters.
#[derive(Debug)]
pub struct Shard {
    pub dbs: Box<[Table]>,
    pub stats: TableStats,
}

/// Keeps each shard's mutex on its own cache line so that threads working
/// on neighbouring shards do not invalidate each other's lines.
#[repr(align(128))]
struct Padded<T>(T);

pub struct Keyspace {
    shards: Box<[Padded<Mutex<Shard>>]>,
    ndbs: usize,
}

impl Keyspace {
    pub fn new(ndbs: usize) -> Keyspace {
        let shards = (0..NUM_SHARDS)
            .map(|_| {
                Padded(Mutex::new(Shard {
                    dbs: (0..ndbs).map(Table::new).collect(),
                    stats: TableStats::default(),
                }))
            })
            .collect();
        Keyspace { shards, ndbs }
    }

    pub fn num_dbs(&self) -> usize {
        self.ndbs
    }

    #[inline]
    pub fn lock_shard(&self, idx: usize) -> MutexGuard<'_, Shard> {
        self.shards[idx].0.lock()
    }

    /// Locks the one shard holding `key`.
    #[inline]
    pub fn lock_key(&self, key: &[u8]) -> LockSet<'_> {
        let idx = shard_of(key);
        let mut guards = SmallVec::new();
        guards.push((idx, self.lock_shard(idx)));
        LockSet { guards }
    }

    /// Locks the shards of all `keys` in ascending order (no deadlock
    /// between two multi-key commands).
    pub fn lock_keys<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> LockSet<'_> {
        let mut idxs: SmallVec<[usize; 8]> = keys.into_iter().map(shard_of).collect();
        idxs.sort_unstable();
        idxs.dedup();
        let guards = idxs.into_iter().map(|i| (i, self.lock_shard(i))).collect();
        LockSet { guards }
    }

    /// Locks every shard, for operations that must be atomic over the whole
    /// keyspace (FLUSHALL, SWAPDB, and later scripts with undeclared keys).
    pub fn lock_all(&self) -> LockSet<'_> {
        let guards = (0..NUM_SHARDS).map(|i| (i, self.lock_shard(i))).collect();
        LockSet { guards }
    }

    /// Number of keys in one database, summed shard by shard.
    pub fn dbsize(&self, db: usize) -> usize {
        (0..NUM_SHARDS)
            .map(|i| self.lock_shard(i).dbs[db].len())
            .sum()
    }

    /// (keys, keys with TTL) per database, for INFO keyspace.
    pub fn db_counts(&self) -> Vec<(usize, usize)> {
        let mut counts = vec![(0, 0); self.ndbs];
        for i in 0..NUM_SHARDS {
            let shard = self.lock_shard(i);
            for (db, t) in shard.dbs.iter().enumerate() {
                counts[db].0 += t.len();
                counts[db].1 += t.volatile_len();
            }
        }
        counts
    }

    pub fn stats(&self) -> TableStats {
        let mut total = TableStats::default();
        for i in 0..NUM_SHARDS {
            let s = self.lock_shard(i).stats;
            total.expired_keys += s.expired_keys;
            total.keyspace_hits += s.keyspace_hits;
            total.keyspace_misses += s.keyspace_misses;
        }
        total
    }

    pub fn reset_stats(&self) {
        for i in 0..NUM_SHARDS {
            self.lock_shard(i).stats = TableStats::default();
        }
    }
}

/// The shards one command holds, sorted by index.
pub struct LockSet<'a> {
    guards: SmallVec<[(usize, MutexGuard<'a, Shard>); 2]>,
}

impl<'a> LockSet<'a> {
    /// The locked shard holding `key`. Panics if the command did not lock
    /// it, which is a bug in the command's key declaration, not an input
    /// error.
    #[inline]
    pub fn shard_for(&mut self, key: &[u8]) -> &mut Shard {
        if self.guards.len() == 1 {
            debug_assert_eq!(self.guards[0].0, shard_of(key));
            return &mut self.guards[0].1;
        }
        let idx = shard_of(key);
        match self.guards.binary_search_by_key(&idx, |(i, _)| *i) {
            Ok(pos) => &mut self.guards[pos].1,
            Err(_) => panic!("key accessed without locking its shard"),
        }
    }

    pub fn shards_mut(&mut self) -> impl Iterator<Item = &mut Shard> + use<'_, 'a> {
        self.guards.iter_mut().map(|(_, g)| &mut **g)
    }

    /// A view of database `db` through these locks.
    pub fn db(&mut self, db: usize, now_ms: i64, touch: Touch) -> Db<'_, 'a> {
        Db {
            locks: self,
            db,
            now_ms,
            touch,
        }
    }
}

/// One database as seen by a command holding a [`LockSet`]: lookups expire
/// keys lazily and record accesses.
pub struct Db<'l, 'a> {
    locks: &'l mut LockSet<'a>,
    pub db: usize,
    pub now_ms: i64,
    pub touch: Touch,
}

impl Db<'_, '_> {
    /// Lookup for a read: counts keyspace hits/misses and touches the key.
    #[inline]
    pub fn get_read(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let (now, touch, db) = (self.now_ms, self.touch, self.db);
        let shard = self.locks.shard_for(key);
        let Shard { dbs, stats } = shard;
        match dbs[db].get_live(key, now, stats) {
            Some(e) => {
                stats.keyspace_hits += 1;
                e.touch(touch);
                Some(e)
            }
            None => {
                stats.keyspace_misses += 1;
                None
            }
        }
    }

    /// Lookup for commands that inspect a key without counting as an
    /// access (EXISTS, TYPE, TTL...): hits and misses count, the LRU/LFU
    /// field is left alone.
    pub fn get_read_untouched(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let saved = std::mem::replace(&mut self.touch, Touch::None);
        let found = self.get_read(key).is_some();
        self.touch = saved;
        if found {
            let (now, db) = (self.now_ms, self.db);
            let Shard { dbs, stats } = self.locks.shard_for(key);
            dbs[db].get_live(key, now, stats)
        } else {
            None
        }
    }

    /// Lookup for a write: no hit/miss accounting.
    #[inline]
    pub fn get_write(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.get_in(self.db, key)
    }

    /// Lookup in another database through the same locks (MOVE, COPY DB).
    pub fn get_in(&mut self, db: usize, key: &[u8]) -> Option<&mut Entry> {
        let (now, touch) = (self.now_ms, self.touch);
        let Shard { dbs, stats } = self.locks.shard_for(key);
        let e = dbs[db].get_live(key, now, stats)?;
        e.touch(touch);
        Some(e)
    }

    /// Whether a live key exists, without touching it.
    pub fn exists(&mut self, key: &[u8]) -> bool {
        let (now, db) = (self.now_ms, self.db);
        let Shard { dbs, stats } = self.locks.shard_for(key);
        dbs[db].get_live(key, now, stats).is_some()
    }

    pub fn table(&mut self, key: &[u8]) -> &mut Table {
        let db = self.db;
        &mut self.locks.shard_for(key).dbs[db]
    }

    pub fn table_in(&mut self, db: usize, key: &[u8]) -> &mut Table {
        &mut self.locks.shard_for(key).dbs[db]
    }

    pub fn new_entry(&self, value: crate::types::Value) -> Entry {
        Entry::new(value, self.touch)
    }

    /// Stores `value` under `key` with no TTL, replacing any old value.
    pub fn set(&mut self, key: &[u8], value: crate::types::Value) -> Option<Entry> {
        let e = self.new_entry(value);
        self.table(key).insert(key, e)
    }

    /// Publishes a keyspace notification for `key` in this database
    /// (queued; see [`events`]). Call where Redis calls
    /// notifyKeyspaceEvent, with the same class and event name.
    #[inline]
    pub fn notify(&self, class: u32, event: &'static str, key: &[u8]) {
        events::notify(class, event, self.db, key);
    }

    /// Marks `key` as modified: WATCHers' transactions fail and clients
    /// caching it are told. Call where Redis calls signalModifiedKey.
    #[inline]
    pub fn signal_modified(&mut self, key: &[u8]) {
        self.table(key).touch_watched(key);
        events::invalidate(key);
    }

    /// Both of the above: the usual pair after a successful write.
    #[inline]
    pub fn changed(&mut self, key: &[u8], class: u32, event: &'static str) {
        self.signal_modified(key);
        self.notify(class, event, key);
    }

    /// Removes a live key; an expired key counts as absent.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        if !self.exists(key) {
            return None;
        }
        self.table(key).remove(key)
    }
}
