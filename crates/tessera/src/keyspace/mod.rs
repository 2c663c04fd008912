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

pub mod digest;
pub mod effects;
pub mod events;
pub mod keymap;
pub mod replica_ttls;
pub mod snapshot;
pub mod table;

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};
use smallvec::SmallVec;

pub use table::{Entry, Key, Table, TableStats, Touch, WatchFlag};

/// Redis Cluster's slot count.
pub const NUM_SLOTS: usize = 16384;
/// Shards per keyspace: a power of two that divides the slot count, well
/// above any thread count we run with.
pub const NUM_SHARDS: usize = 1024;

/// One database's keys (INFO keyspace) and the bytes its tables take. The
/// table bytes exclude the keys' and values' own allocations: they are the
/// keyspace's share of INFO's used_memory_overhead, as Redis counts its
/// dicts.
#[derive(Clone, Copy, Debug, Default)]
pub struct DbSummary {
    pub keys: usize,
    /// Keys with a TTL.
    pub volatile: usize,
    pub table_bytes: u64,
    pub expires_bytes: u64,
}

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
    crate::util::crc16::crc16_xmodem(tagged) & (NUM_SLOTS as u16 - 1)
}

#[inline]
pub fn shard_of(key: &[u8]) -> usize {
    key_slot(key) as usize & (NUM_SHARDS - 1)
}

/// One shard: its slice of every database and its counters. `repr(C)`
/// keeps the tables first, right behind the mutex (see [`ShardTables`]).
#[derive(Debug)]
#[repr(C)]
pub struct Shard {
    pub dbs: ShardTables,
    pub stats: TableStats,
}

/// A shard's table of every database. Database 0's, where nearly all
/// traffic goes, lives inline rather than behind a pointer: its index
/// header then shares the cache line the shard's lock has just fetched,
/// and a lookup over a keyspace too big for the cache waits for one miss
/// fewer (a sixth of a cold GET's lookup time, measured).
#[derive(Debug)]
#[repr(C)]
pub struct ShardTables {
    first: Table,
    rest: Box<[Table]>,
}

impl ShardTables {
    fn new(tables: impl IntoIterator<Item = Table>) -> ShardTables {
        let mut tables = tables.into_iter();
        let first = tables
            .next()
            .expect("a keyspace has at least one database (the config enforces it)");
        ShardTables {
            first,
            rest: tables.collect(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Table> {
        std::iter::once(&self.first).chain(self.rest.iter())
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Table> {
        std::iter::once(&mut self.first).chain(self.rest.iter_mut())
    }

    pub fn get(&self, db: usize) -> Option<&Table> {
        match db {
            0 => Some(&self.first),
            n => self.rest.get(n - 1),
        }
    }

    /// Two different databases' tables at once (SWAPDB).
    pub fn pair_mut(&mut self, a: usize, b: usize) -> (&mut Table, &mut Table) {
        assert_ne!(a, b, "a pair of tables needs two databases");
        let (lo, hi) = (a.min(b), a.max(b));
        let (lo_table, hi_table) = if lo == 0 {
            (&mut self.first, &mut self.rest[hi - 1])
        } else {
            let (left, right) = self.rest.split_at_mut(hi - 1);
            (&mut left[lo - 1], &mut right[0])
        };
        if a < b {
            (lo_table, hi_table)
        } else {
            (hi_table, lo_table)
        }
    }
}

impl std::ops::Index<usize> for ShardTables {
    type Output = Table;
    #[inline]
    fn index(&self, db: usize) -> &Table {
        match db {
            0 => &self.first,
            _ => &self.rest[db - 1],
        }
    }
}

impl std::ops::IndexMut<usize> for ShardTables {
    #[inline]
    fn index_mut(&mut self, db: usize) -> &mut Table {
        match db {
            0 => &mut self.first,
            _ => &mut self.rest[db - 1],
        }
    }
}

/// Keeps each shard's mutex on its own cache line so that threads working
/// on neighbouring shards do not invalidate each other's lines.
#[repr(align(128))]
struct Padded<T>(T);

pub struct Keyspace {
    shards: Box<[Padded<Mutex<Shard>>]>,
    ndbs: usize,
    /// A script has run past busy-reply-threshold: commands waiting for a
    /// shard it holds give up with BUSY instead of waiting (see
    /// [`BusyAbort`]).
    pub busy: std::sync::Arc<AtomicBool>,
    /// Per shard: may it hold keys with a TTL (see [`Table`]'s hint).
    volatile_hints: std::sync::Arc<[AtomicBool]>,
    /// Per database: INFO keyspace's avg_ttl (ms), Redis's running
    /// estimate from the TTLs active expiry samples.
    avg_ttl: Box<[std::sync::atomic::AtomicI64]>,
    /// A point-in-time snapshot in progress (see [`snapshot`]): every
    /// shard lock first captures the shard if the snapshot still needs it.
    snapshot_active: AtomicBool,
    snapshot: parking_lot::RwLock<Option<std::sync::Arc<snapshot::Snapshot>>>,
    /// The TTLs a writable replica's own clients set.
    pub replica_ttls: replica_ttls::ReplicaTtls,
}

/// The unwinding payload a command waiting for a shard throws when a busy
/// script holds it; dispatch catches it and replies `-BUSY`. Nothing has
/// been changed by then: the wait is at the start of the command's access.
pub struct BusyAbort;

thread_local! {
    /// The shards an EXEC or script running on this thread holds.
    static HELD: RefCell<Vec<HeldShard>> = const { RefCell::new(Vec::new()) };
    static HOLDING: Cell<bool> = const { Cell::new(false) };
    /// Whether a wait for a shard may be abandoned with [`BusyAbort`]
    /// (set by dispatch around a command; never for the script itself).
    static ABORTABLE: Cell<bool> = const { Cell::new(false) };
    /// Work that must not run while this thread holds shards (it would
    /// wait for them), run when the hold ends (see [`after_hold`]).
    static AFTER_HOLD: RefCell<Vec<Box<dyn FnOnce()>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `work` now, or, while this thread's EXEC or script holds shards,
/// as soon as that hold ends (a save of the whole keyspace inside a
/// transaction, which would otherwise wait for the shards it holds).
pub fn after_hold(work: Box<dyn FnOnce()>) {
    if HOLDING.with(|h| h.get()) {
        AFTER_HOLD.with(|a| a.borrow_mut().push(work));
    } else {
        work();
    }
}

/// One shard held by the running EXEC/script: its guard (lifetime erased;
/// see [`HoldScope`]) and whether a command is using it right now.
struct HeldShard {
    idx: usize,
    guard: MutexGuard<'static, Shard>,
    in_use: std::rc::Rc<Cell<bool>>,
}

/// While alive, this thread's lock requests ignore the shards its EXEC or
/// script holds (for clients served during a busy script: they must wait
/// for those shards like everyone else, and give up with -BUSY).
pub struct OutsideHold {
    was: bool,
}

impl OutsideHold {
    pub fn enter() -> OutsideHold {
        OutsideHold {
            was: HOLDING.with(|h| h.replace(false)),
        }
    }
}

impl Drop for OutsideHold {
    fn drop(&mut self) {
        HOLDING.with(|h| h.set(self.was));
    }
}

/// Marks the current thread's waits for shards as abandonable while
/// alive.
pub struct AbortableWaits {
    was: bool,
}

impl AbortableWaits {
    pub fn new(on: bool) -> AbortableWaits {
        AbortableWaits {
            was: ABORTABLE.with(|a| a.replace(on)),
        }
    }
}

impl Drop for AbortableWaits {
    fn drop(&mut self) {
        ABORTABLE.with(|a| a.set(self.was));
    }
}

/// While alive, this thread holds a set of shards across several commands
/// (EXEC, a script): every lock request for a held shard is served by the
/// held guard, and a request for any other shard locks it and keeps it
/// until the scope ends. So the commands inside run unchanged, atomically.
///
/// One scope per thread; dropping it releases everything. A scope opened
/// inside another (an EXEC replayed by DEBUG LOADAOF, which holds every
/// shard) is the outer one's: it holds nothing of its own.
pub struct HoldScope<'k> {
    _keyspace: PhantomData<&'k Keyspace>,
    nested: bool,
}

impl Drop for HoldScope<'_> {
    fn drop(&mut self) {
        if self.nested {
            return;
        }
        // Guards are dropped here, before the keyspace they borrow can go
        // (the scope borrows it).
        // (Cleared in place: the next scope reuses the vector.)
        HELD.with(|h| h.borrow_mut().clear());
        HOLDING.with(|h| h.set(false));
        let deferred = AFTER_HOLD.with(|a| std::mem::take(&mut *a.borrow_mut()));
        for work in deferred {
            work();
        }
    }
}

impl Keyspace {
    pub fn new(ndbs: usize) -> Keyspace {
        let volatile_hints: std::sync::Arc<[AtomicBool]> =
            (0..NUM_SHARDS).map(|_| AtomicBool::new(false)).collect();
        let shards = (0..NUM_SHARDS)
            .map(|i| {
                Padded(Mutex::new(Shard {
                    dbs: ShardTables::new(
                        (0..ndbs)
                            .map(|db| Table::with_volatile_hint(db, volatile_hints.clone(), i)),
                    ),
                    stats: TableStats::default(),
                }))
            })
            .collect();
        Keyspace {
            shards,
            ndbs,
            busy: Default::default(),
            volatile_hints,
            avg_ttl: (0..ndbs).map(|_| Default::default()).collect(),
            snapshot_active: AtomicBool::new(false),
            snapshot: Default::default(),
            replica_ttls: Default::default(),
        }
    }

    /// A writable replica's expiry of the keys its own clients gave a TTL
    /// (Redis's expireSlaveKeys): random keys of [`Self::replica_ttls`]
    /// are checked and deleted if their time has passed, until more than
    /// three were found alive or a millisecond is spent. A shard busy now
    /// is left for the next round. Returns how many keys expired.
    pub fn expire_replica_ttls(&self, now_ms: i64) -> u64 {
        let began = std::time::Instant::now();
        let (mut rounds, mut alive, mut expired) = (0u32, 0u32, 0u64);
        while let Some((key, dbs)) = self.replica_ttls.pick() {
            let (mut checked, mut live) = (0u64, 0u64);
            if let Some(mut shard) = self.try_lock_shard(shard_of(&key)) {
                for db in (0..self.ndbs.min(64)).filter(|db| dbs & (1 << db) != 0) {
                    checked |= 1 << db;
                    match shard.dbs[db].expire_if_due(&key, now_ms) {
                        Some(true) => {
                            expired += 1;
                            shard.stats.expired_keys += 1;
                        }
                        Some(false) => {
                            alive += 1;
                            live |= 1 << db;
                        }
                        None => {}
                    }
                }
                // (Bits for databases that no longer exist go too.)
                let existing = if self.ndbs >= 64 {
                    u64::MAX
                } else {
                    (1u64 << self.ndbs) - 1
                };
                checked |= dbs & !existing;
            }
            self.replica_ttls.settle(&key, checked, live);
            rounds += 1;
            if alive > 3
                || checked == 0
                || (rounds % 64 == 0 && began.elapsed() > Duration::from_millis(1))
            {
                break;
            }
        }
        expired
    }

    /// SWAPDB: the estimates follow the data.
    pub fn swap_avg_ttl(&self, a: usize, b: usize) {
        if let (Some(x), Some(y)) = (self.avg_ttl.get(a), self.avg_ttl.get(b)) {
            let xa = x.load(Relaxed);
            x.store(y.swap(xa, Relaxed), Relaxed);
        }
    }

    /// INFO keyspace's avg_ttl of database `db` (ms).
    pub fn avg_ttl(&self, db: usize) -> i64 {
        self.avg_ttl.get(db).map_or(0, |a| a.load(Relaxed))
    }

    /// Folds the average TTL of keys active expiry just sampled in `db`
    /// into its estimate, as Redis does: 2% the new average, 98% the old
    /// (the first sample sets it).
    pub fn note_sampled_ttl(&self, db: usize, avg_ms: i64) {
        let Some(slot) = self.avg_ttl.get(db) else {
            return;
        };
        let old = match slot.load(Relaxed) {
            0 => avg_ms,
            old => old,
        };
        slot.store((old / 50) * 49 + avg_ms / 50, Relaxed);
    }

    /// Whether shard `idx` may hold keys with a TTL (false: it surely
    /// holds none). Read without its lock.
    pub fn may_have_volatile(&self, idx: usize) -> bool {
        self.volatile_hints[idx].load(Relaxed)
    }

    /// Lowers shard `idx`'s TTL hint; call with the shard locked and only
    /// when none of its tables has a key with a TTL (keys get TTLs under the
    /// same lock, so no raise is lost).
    pub fn clear_volatile_hint(&self, idx: usize) {
        self.volatile_hints[idx].store(false, Relaxed);
    }

    /// Starts holding `idxs` (sorted, deduplicated) for the commands of an
    /// EXEC or a script; see [`HoldScope`]. Acquired without holding any
    /// while waiting, like [`Keyspace::lock_keys`].
    pub fn hold(&self, idxs: &[usize]) -> HoldScope<'_> {
        if HOLDING.with(|h| h.get()) {
            // What is not held yet is locked and kept on first use.
            return HoldScope {
                _keyspace: PhantomData,
                nested: true,
            };
        }
        let guards = self.acquire_all(idxs);
        HELD.with(|h| {
            let mut held = h.borrow_mut();
            held.clear();
            held.extend(guards.into_iter().map(|(idx, g)| HeldShard {
                idx,
                // SAFETY: the guard borrows `self`; the returned HoldScope
                // borrows `self` too and drops every held guard in its
                // Drop, so no guard outlives the keyspace.
                guard: unsafe {
                    std::mem::transmute::<MutexGuard<'_, Shard>, MutexGuard<'static, Shard>>(g)
                },
                in_use: Default::default(),
            }));
        });
        HOLDING.with(|h| h.set(true));
        HoldScope {
            _keyspace: PhantomData,
            nested: false,
        }
    }

    /// Starts fetching where `keys` of database `db` sit in the shards this
    /// thread holds (see [`Keyspace::hold`]): a script's commands reach its
    /// declared keys after the interpreter's own work, by when the index
    /// slots are in cache instead of a miss each.
    /// `keys` come with their shards (as [`shard_of`] gives them).
    pub fn prefetch_held<'k>(&self, db: usize, keys: impl Iterator<Item = (&'k [u8], usize)>) {
        HELD.with(|h| {
            let held = h.borrow();
            for (key, shard) in keys {
                if let Ok(pos) = held.binary_search_by_key(&shard, |s| s.idx) {
                    if let Some(table) = held[pos].guard.dbs.get(db) {
                        table.prefetch(key);
                    }
                }
            }
        });
    }

    /// Locks `idxs` (sorted) without ever waiting while holding one: on
    /// contention everything is released, the contended shard is waited
    /// for alone, and the attempt starts over. Only scripts wait while
    /// holding shards (they are serialised by the script lock), so lock
    /// waits can never form a cycle.
    fn acquire_all(&self, idxs: &[usize]) -> SmallVec<[(usize, MutexGuard<'_, Shard>); 4]> {
        effects::note_acquired();
        loop {
            let mut guards: SmallVec<[(usize, MutexGuard<'_, Shard>); 4]> =
                SmallVec::with_capacity(idxs.len());
            let mut contended = None;
            for &i in idxs {
                match self.shards[i].0.try_lock() {
                    Some(g) => guards.push((i, g)),
                    None => {
                        contended = Some(i);
                        break;
                    }
                }
            }
            match contended {
                None => {
                    for (i, g) in guards.iter() {
                        self.before_use(*i, g);
                    }
                    return guards;
                }
                Some(i) => {
                    drop(guards);
                    drop(self.wait_for(i));
                }
            }
        }
    }

    /// Runs on every shard just locked, before anyone reads or changes it:
    /// a snapshot in progress that has not captured the shard yet captures
    /// it now, so it sees the shard as it was when the snapshot began.
    #[inline(always)]
    fn before_use(&self, idx: usize, shard: &Shard) {
        if self.snapshot_active.load(Relaxed) {
            self.capture_for_snapshot(idx, shard);
        }
    }

    #[cold]
    #[inline(never)]
    fn capture_for_snapshot(&self, idx: usize, shard: &Shard) {
        let snap = self.snapshot.read().clone();
        if let Some(snap) = snap {
            snap.capture_if_pending(idx, shard);
        }
    }

    /// Begins a point-in-time snapshot: under every shard's lock, marks
    /// them all pending. From then on each shard is handed to `capture`
    /// exactly once, by whichever thread locks it first, before anything
    /// changes it. Refused (None) while another snapshot runs.
    /// With the snapshot come each database's key and volatile-key counts
    /// at the instant. `at_instant` runs at the instant, under every lock,
    /// with the number of the first effects unit after it: whoever follows
    /// the stream from the snapshot on (an AOF rewrite's new file, a
    /// replica) switches there, so that no unit is both in the snapshot
    /// and after it, or in neither.
    pub fn begin_snapshot(
        &self,
        capture: snapshot::Capture,
        at_instant: &mut dyn FnMut(u64),
    ) -> Option<(std::sync::Arc<snapshot::Snapshot>, snapshot::DbSizes)> {
        let mut all = self.lock_all();
        let mut slot = self.snapshot.write();
        if slot.is_some() {
            return None;
        }
        let mut sizes = vec![(0usize, 0usize); self.ndbs];
        for shard in all.shards_mut() {
            for (db, t) in shard.dbs.iter().enumerate() {
                sizes[db].0 += t.len();
                sizes[db].1 += t.volatile_len();
            }
        }
        let snap = std::sync::Arc::new(snapshot::Snapshot::new(NUM_SHARDS, capture));
        *slot = Some(snap.clone());
        self.snapshot_active.store(true, Relaxed);
        at_instant(effects::next_seq());
        drop(slot);
        drop(all);
        Some((snap, sizes))
    }

    /// Ends the snapshot once every shard is captured (the saver has locked
    /// each one), or abandons it.
    pub fn end_snapshot(&self, snap: &std::sync::Arc<snapshot::Snapshot>) {
        let mut slot = self.snapshot.write();
        if slot
            .as_ref()
            .is_some_and(|s| std::sync::Arc::ptr_eq(s, snap))
        {
            self.snapshot_active.store(false, Relaxed);
            *slot = None;
        }
    }

    /// Waits for a shard's mutex; gives up with [`BusyAbort`] if a busy
    /// script holds it and this thread's wait may be abandoned.
    fn wait_for(&self, idx: usize) -> MutexGuard<'_, Shard> {
        let m = &self.shards[idx].0;
        loop {
            if let Some(g) = m.try_lock_for(Duration::from_millis(5)) {
                return g;
            }
            if self.busy.load(Relaxed) && ABORTABLE.with(|a| a.get()) {
                std::panic::resume_unwind(Box::new(BusyAbort));
            }
        }
    }

    pub fn num_dbs(&self) -> usize {
        self.ndbs
    }

    #[inline]
    pub fn lock_shard(&self, idx: usize) -> ShardGuard<'_> {
        if HOLDING.with(|h| h.get()) {
            return self.held_shard(idx);
        }
        effects::note_acquired();
        let g = match self.shards[idx].0.try_lock() {
            Some(g) => g,
            None => self.wait_for(idx),
        };
        self.before_use(idx, &g);
        ShardGuard::Owned(g)
    }

    /// The shard if it is free right now (background work skips a shard a
    /// command or script holds rather than wait for it).
    pub fn try_lock_shard(&self, idx: usize) -> Option<ShardGuard<'_>> {
        if HOLDING.with(|h| h.get()) {
            return Some(self.held_shard(idx));
        }
        effects::note_acquired();
        let g = self.shards[idx].0.try_lock()?;
        self.before_use(idx, &g);
        Some(ShardGuard::Owned(g))
    }

    /// A shard inside a [`HoldScope`]: the held guard, or the shard newly
    /// locked and kept until the scope ends.
    #[cold]
    fn held_shard(&self, idx: usize) -> ShardGuard<'_> {
        HELD.with(|h| {
            let mut held = h.borrow_mut();
            let pos = match held.binary_search_by_key(&idx, |s| s.idx) {
                Ok(p) => p,
                Err(p) => {
                    effects::note_acquired();
                    let g = self.shards[idx].0.lock();
                    self.before_use(idx, &g);
                    // SAFETY: as in `hold`: the scope drops it before the
                    // keyspace can go away.
                    let guard = unsafe {
                        std::mem::transmute::<MutexGuard<'_, Shard>, MutexGuard<'static, Shard>>(g)
                    };
                    held.insert(
                        p,
                        HeldShard {
                            idx,
                            guard,
                            in_use: Default::default(),
                        },
                    );
                    p
                }
            };
            let slot = &mut held[pos];
            // Two live borrows of one held shard would alias; commands never
            // nest their lock requests (it would deadlock outside a scope).
            assert!(!slot.in_use.get(), "held shard borrowed twice");
            slot.in_use.set(true);
            ShardGuard::Held {
                shard: NonNull::from(&mut *slot.guard),
                in_use: slot.in_use.clone(),
                _borrow: PhantomData,
            }
        })
    }

    /// Locks `key`'s shard for a client served while this thread's own
    /// script is busy (see `server::parked`), for the commands Redis lets
    /// run then that touch a key's watch list (WATCH, UNWATCH, DISCARD,
    /// RESET). A shard the script holds is reached through the script's
    /// guard, which is sound while the script is suspended in its hook and
    /// none of its commands uses the shard; any other shard is locked as
    /// usual. The flag says whether the script's guard was used.
    pub fn lock_key_beside_hold(&self, key: &[u8]) -> (LockSet<'_>, bool) {
        let idx = shard_of(key);
        let borrowed = HELD.with(|h| {
            let mut held = h.borrow_mut();
            let pos = held.binary_search_by_key(&idx, |s| s.idx).ok()?;
            let slot = &mut held[pos];
            if slot.in_use.get() {
                return None;
            }
            slot.in_use.set(true);
            Some(ShardGuard::Held {
                shard: NonNull::from(&mut *slot.guard),
                in_use: slot.in_use.clone(),
                _borrow: PhantomData,
            })
        });
        let from_script = borrowed.is_some();
        let guard = borrowed.unwrap_or_else(|| self.lock_shard(idx));
        let mut guards = SmallVec::new();
        guards.push((idx, guard));
        (LockSet { guards }, from_script)
    }

    /// Locks the one shard holding `key`.
    #[inline]
    pub fn lock_key(&self, key: &[u8]) -> LockSet<'_> {
        let idx = shard_of(key);
        let mut guards = SmallVec::new();
        guards.push((idx, self.lock_shard(idx)));
        LockSet { guards }
    }

    /// Locks the shards of all `keys` (without waiting while holding one;
    /// see [`Keyspace::hold`]).
    pub fn lock_keys<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> LockSet<'_> {
        let mut idxs: SmallVec<[usize; 8]> = keys.into_iter().map(shard_of).collect();
        idxs.sort_unstable();
        idxs.dedup();
        self.lock_indices(&idxs)
    }

    fn lock_indices(&self, idxs: &[usize]) -> LockSet<'_> {
        if idxs.len() == 1 || HOLDING.with(|h| h.get()) {
            let guards = idxs.iter().map(|&i| (i, self.lock_shard(i))).collect();
            return LockSet { guards };
        }
        let guards = self
            .acquire_all(idxs)
            .into_iter()
            .map(|(i, g)| (i, ShardGuard::Owned(g)))
            .collect();
        LockSet { guards }
    }

    /// Locks every shard, for operations that must be atomic over the whole
    /// keyspace (FLUSHALL, SWAPDB).
    pub fn lock_all(&self) -> LockSet<'_> {
        let all: Vec<usize> = (0..NUM_SHARDS).collect();
        self.lock_indices(&all)
    }

    /// Number of keys in one database, counted under every shard's lock so
    /// that a transaction or multi-key command across shards is seen whole.
    pub fn dbsize(&self, db: usize) -> usize {
        self.lock_all().shards_mut().map(|s| s.dbs[db].len()).sum()
    }

    /// Per database: its keys and what its tables take (see [`DbSummary`]),
    /// read under every shard's lock, as `dbsize`.
    pub fn db_summaries(&self) -> Vec<DbSummary> {
        let mut out = vec![DbSummary::default(); self.ndbs];
        let mut all = self.lock_all();
        for shard in all.shards_mut() {
            for (db, t) in shard.dbs.iter().enumerate() {
                let (main, expires) = t.structure_bytes();
                let o = &mut out[db];
                o.keys += t.len();
                o.volatile += t.volatile_len();
                o.table_bytes += main;
                o.expires_bytes += expires;
            }
        }
        out
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

/// A locked shard: its own mutex guard, or a shard held by the enclosing
/// EXEC/script ([`HoldScope`]).
pub enum ShardGuard<'a> {
    Owned(MutexGuard<'a, Shard>),
    Held {
        shard: NonNull<Shard>,
        in_use: std::rc::Rc<Cell<bool>>,
        _borrow: PhantomData<&'a mut Shard>,
    },
}

impl std::ops::Deref for ShardGuard<'_> {
    type Target = Shard;
    #[inline]
    fn deref(&self) -> &Shard {
        match self {
            ShardGuard::Owned(g) => g,
            // SAFETY: the pointer comes from a guard the HoldScope keeps
            // locked for longer than this ShardGuard lives (both are
            // confined to this thread: the Rc makes ShardGuard !Send), and
            // `in_use` ensures it is the only borrow of that shard.
            ShardGuard::Held { shard, .. } => unsafe { shard.as_ref() },
        }
    }
}

impl std::ops::DerefMut for ShardGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Shard {
        match self {
            ShardGuard::Owned(g) => g,
            // SAFETY: as in `deref`.
            ShardGuard::Held { shard, .. } => unsafe { shard.as_mut() },
        }
    }
}

impl Drop for ShardGuard<'_> {
    fn drop(&mut self) {
        if let ShardGuard::Held { in_use, .. } = self {
            in_use.set(false);
        }
    }
}

/// The shards one command holds, sorted by index.
pub struct LockSet<'a> {
    guards: SmallVec<[(usize, ShardGuard<'a>); 2]>,
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
        self.get_read_counted(key, 1)
    }

    /// Counts a second read lookup of a key already looked up by this
    /// command, found or not (XREAD and XREADGROUP check every key, then
    /// look each up again to read it): a hit or a miss, and for a miss a
    /// `keymiss` event, without probing the table again.
    pub fn count_read_again(&mut self, key: &[u8], found: bool) {
        let db = self.db;
        let Shard { stats, .. } = self.locks.shard_for(key);
        if found {
            stats.keyspace_hits += 1;
        } else {
            stats.keyspace_misses += 1;
            events::notify(events::Class::KEY_MISS, "keymiss", db, key);
        }
    }

    #[inline]
    fn get_read_counted(&mut self, key: &[u8], lookups: u64) -> Option<&mut Entry> {
        self.lookup_counted(key, lookups, self.touch, true)
    }

    /// A read lookup counted as `lookups` keyspace hits or misses, touching
    /// the key with `touch` when found and, when not and `keymiss` is set,
    /// raising that many `keymiss` events.
    #[inline]
    fn lookup_counted(
        &mut self,
        key: &[u8],
        lookups: u64,
        touch: Touch,
        keymiss: bool,
    ) -> Option<&mut Entry> {
        let (now, db) = (self.now_ms, self.db);
        let Shard { dbs, stats } = self.locks.shard_for(key);
        match dbs[db].get_live(key, now, stats) {
            Some(e) => {
                stats.keyspace_hits += lookups;
                e.touch(touch);
                Some(e)
            }
            None => {
                stats.keyspace_misses += lookups;
                if keymiss {
                    for _ in 0..lookups {
                        events::notify(events::Class::KEY_MISS, "keymiss", db, key);
                    }
                }
                None
            }
        }
    }

    /// Lookup for OBJECT's subcommands: a hit or miss counts, but the key
    /// is not touched and a miss raises no `keymiss` event (Redis's
    /// `LOOKUP_NOTOUCH | LOOKUP_NONOTIFY`).
    pub fn get_inspected(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.lookup_counted(key, 1, Touch::None, false)
    }

    /// Lookup for commands that inspect a key without counting as an
    /// access (EXISTS, TYPE, TTL...): hits and misses count, the LRU/LFU
    /// field is left alone.
    pub fn get_read_untouched(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.lookup_counted(key, 1, Touch::None, true)
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

    /// Stores `value` under `key` with no TTL, replacing any old value. An
    /// old key whose time has passed is reported expired first, and the
    /// key is then new (Redis's setKey looks the key up for writing).
    pub fn set(&mut self, key: &[u8], value: crate::types::Value) -> Option<Entry> {
        let e = self.new_entry(value);
        let now = self.now_ms;
        match self.table(key).overwrite(key, e, 0, now) {
            Ok(old) => old,
            Err(e) => {
                self.get_write(key);
                self.table(key).insert(key, e)
            }
        }
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
        effects::note_change();
    }

    /// Counts a change of data that [`Db::signal_modified`] does not see
    /// (a key written in another database, a change Redis counts without
    /// signalling): the command then propagates.
    #[inline]
    pub fn note_change(&self) {
        effects::note_change();
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

    /// Removes `key` whether or not its TTL has passed, without expiring
    /// it first: how Redis deletes the destination of a *STORE command
    /// whose result is empty (`dbDelete`), which then reports `del`, not
    /// `expired`, even for a key past its TTL.
    pub fn remove_without_expiring(&mut self, key: &[u8]) -> Option<Entry> {
        self.table(key).remove(key)
    }
}
