//! The effects stream: what commands changed, as commands that replay it.
//!
//! This is Redis's propagation (what goes to the AOF and to replicas), made
//! safe for many threads. A command that changed data propagates its own
//! arguments by default; a handler that must propagate something else says
//! so (`Ctx::propagate_as`, `also_propagate`, `no_propagate`); expiry and
//! eviction record their own DEL/UNLINK where they happen, under the shard
//! lock. Ops are queued per thread, like the events of
//! [`super::events`], and the command's owner (dispatch, active expiry)
//! closes them into [`Unit`]s once the command, transaction or script is
//! over and hands them to the journal (`crate::journal`), which merges the
//! threads' units back into one order.
//!
//! # The order
//! A single-threaded replayer (redis-server loading our AOF, a replica)
//! must reach the state the threads produced. Each unit carries a sequence
//! number drawn from one counter *while the unit holds the shards of every
//! key it changed*: the number is drawn at the unit's first change and
//! drawn again at a later change if the thread has locked another shard
//! since (a script or EXEC that reaches a new key). A command that touches
//! any of the same keys either ran wholly before the unit locked them (a
//! smaller number) or waits until the unit has released them (a larger
//! one); units that share no key commute. The numbers a unit drew and gave
//! up are published as empty units, so the journal can tell a gap that
//! will be filled from one that never will.
//!
//! With no consumer the hot path pays a thread-local counter per change
//! and per lock, and one relaxed load per command.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Where an op goes: Redis's PROPAGATE_AOF / PROPAGATE_REPL.
pub mod target {
    pub const AOF: u8 = 1;
    pub const REPL: u8 = 2;
    pub const ALL: u8 = AOF | REPL;
}

/// One command to replay, in the database it applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    pub db: usize,
    pub argv: Vec<Vec<u8>>,
    /// [`target`] bits.
    pub targets: u8,
}

/// The effects of one command, transaction or script (or one piece of the
/// server's own work), in the place [`Unit::seq`] gives it.
#[derive(Debug, Default)]
pub struct Unit {
    pub seq: u64,
    pub ops: Vec<Op>,
    /// More than one op from one command, EXEC or script: consumers wrap
    /// them in MULTI/EXEC, as Redis 7.0 does.
    pub atomic: bool,
}

/// One thread's change count, alone on its cache line: only its thread
/// writes it (a plain load and store, no locked instruction), and
/// [`total_dirty`] reads them all.
#[repr(align(128))]
pub struct DirtyCounter(AtomicU64);

static DIRTY_COUNTERS: parking_lot::Mutex<Vec<std::sync::Arc<DirtyCounter>>> =
    parking_lot::Mutex::new(Vec::new());

fn register_dirty_counter() -> std::sync::Arc<DirtyCounter> {
    let c = std::sync::Arc::new(DirtyCounter(AtomicU64::new(0)));
    DIRTY_COUNTERS.lock().push(c.clone());
    c
}

/// The number the next unit will get (a snapshot taken under every
/// shard lock splits the stream there).
pub fn next_seq() -> u64 {
    NEXT_SEQ.load(Ordering::SeqCst)
}

/// Every change made by every thread since the process started (the save
/// rules and INFO's rdb_changes_since_last_save count from it).
pub fn total_dirty() -> u64 {
    DIRTY_COUNTERS
        .lock()
        .iter()
        .map(|c| c.0.load(Ordering::Relaxed))
        .sum()
}

/// Whether anything consumes the stream (the journal has a consumer).
static ENABLED: AtomicBool = AtomicBool::new(false);
/// The next sequence number (numbers start at 1; 0 means none).
static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's changes since it started (its share of Redis's
    /// `server.dirty`), readable by others for the total.
    static DIRTY: std::sync::Arc<DirtyCounter> = register_dirty_counter();
    /// Shard locks this thread has taken (not counting shards served from
    /// a held set): a change after a new lock needs a new number.
    static ACQUIRED: Cell<u64> = const { Cell::new(0) };
    static PENDING: RefCell<Pending> = const { RefCell::new(Pending::new()) };
}

struct Pending {
    /// Each op with the number current when it was recorded.
    ops: Vec<(u64, Op)>,
    /// The number of the unit so far (0: none yet).
    seq: u64,
    /// `ACQUIRED` when `seq` was drawn.
    seq_acquired: u64,
    /// Every number drawn since the last unit was closed, in order.
    drawn: Vec<u64>,
}

impl Pending {
    const fn new() -> Pending {
        Pending {
            ops: Vec::new(),
            seq: 0,
            seq_acquired: 0,
            drawn: Vec::new(),
        }
    }

    /// The number for a change made now (drawing one if needed).
    fn sequence(&mut self) -> u64 {
        let acquired = ACQUIRED.with(|a| a.get());
        if self.seq == 0 || self.seq_acquired != acquired {
            self.seq = NEXT_SEQ.fetch_add(1, Ordering::SeqCst);
            self.seq_acquired = acquired;
            self.drawn.push(self.seq);
        }
        self.seq
    }
}

/// Whether the stream has a consumer.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns recording on or off. On returns the first number that will be
/// drawn (every unit from it on will be published).
pub fn set_enabled(on: bool) -> u64 {
    if on {
        let first = NEXT_SEQ.load(Ordering::SeqCst);
        ENABLED.store(true, Ordering::SeqCst);
        first
    } else {
        ENABLED.store(false, Ordering::SeqCst);
        NEXT_SEQ.load(Ordering::SeqCst)
    }
}

/// Called by the keyspace whenever this thread locks a shard.
#[inline]
pub fn note_acquired() {
    ACQUIRED.with(|a| a.set(a.get().wrapping_add(1)));
}

/// Called under the shard lock for every change of data (where Redis
/// increments `server.dirty`).
#[inline]
pub fn note_change() {
    DIRTY.with(|d| {
        d.0.store(d.0.load(Ordering::Relaxed) + 1, Ordering::Relaxed)
    });
    if enabled() {
        PENDING.with(|p| {
            p.borrow_mut().sequence();
        });
    }
}

/// This thread's count of changes: a command changed data when it moved
/// during the command.
#[inline]
pub fn dirty() -> u64 {
    DIRTY.with(|d| d.0.load(Ordering::Relaxed))
}

/// Records an op to propagate (under the shard lock when it comes from a
/// change of data, so that its number orders it).
pub fn push(db: usize, argv: Vec<Vec<u8>>, targets: u8) {
    if !enabled() {
        return;
    }
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let seq = p.sequence();
        p.ops.push((seq, Op { db, argv, targets }));
    });
}

/// `lazyfree-lazy-expire` and `lazyfree-lazy-eviction`, mirrored from the
/// configuration so the keyspace need not know it.
static LAZY_EXPIRE: AtomicBool = AtomicBool::new(false);
static LAZY_EVICTION: AtomicBool = AtomicBool::new(false);

/// Mirrors the lazyfree directives that decide how deletions propagate.
pub fn set_lazy_deletions(expire: bool, eviction: bool) {
    LAZY_EXPIRE.store(expire, Ordering::Relaxed);
    LAZY_EVICTION.store(eviction, Ordering::Relaxed);
}

/// Records the deletion of a key that expired (under its shard lock).
#[inline]
pub fn push_expired(db: usize, key: &[u8]) {
    if enabled() {
        push_deletion(db, key, LAZY_EXPIRE.load(Ordering::Relaxed));
    }
}

/// Records the deletion of an evicted key (under its shard lock).
#[inline]
pub fn push_evicted(db: usize, key: &[u8]) {
    if enabled() {
        push_deletion(db, key, LAZY_EVICTION.load(Ordering::Relaxed));
    }
}

/// A deletion as Redis propagates it (propagateDeletion, and commands
/// such as GETDEL): DEL, or UNLINK when `lazy` (the lazyfree directive that
/// applies) frees the value in the background.
pub fn deletion_argv(key: &[u8], lazy: bool) -> Vec<Vec<u8>> {
    let name: &[u8] = if lazy { b"UNLINK" } else { b"DEL" };
    vec![name.to_vec(), key.to_vec()]
}

fn push_deletion(db: usize, key: &[u8], lazy: bool) {
    push(db, deletion_argv(key, lazy), target::ALL);
}

/// Whether this thread has anything to close into units.
#[inline]
pub fn pending() -> bool {
    PENDING.with(|p| {
        let p = p.borrow();
        !p.drawn.is_empty() || !p.ops.is_empty()
    })
}

/// Closes what this thread recorded into units for the journal.
///
/// `atomic`: the ops are one command's, EXEC's or script's: one unit at
/// the last number drawn, wrapped in MULTI/EXEC when there is more than
/// one op. Otherwise (the server's own work, such as active expiry, each
/// piece under its own lock) each op keeps the number it was recorded
/// under. Numbers drawn and left without ops become empty units.
pub fn take_units(atomic: bool) -> Vec<Unit> {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.drawn.is_empty() && p.ops.is_empty() {
            return Vec::new();
        }
        let drawn = std::mem::take(&mut p.drawn);
        let ops = std::mem::take(&mut p.ops);
        let last = p.seq;
        p.seq = 0;
        let mut units: Vec<Unit> = Vec::with_capacity(drawn.len().max(1));
        if atomic {
            for &seq in &drawn {
                if seq != last {
                    units.push(Unit {
                        seq,
                        ..Unit::default()
                    });
                }
            }
            let ops: Vec<Op> = ops.into_iter().map(|(_, op)| op).collect();
            units.push(Unit {
                seq: last,
                atomic: ops.len() > 1,
                ops,
            });
        } else {
            let mut ops = ops.into_iter().peekable();
            for &seq in &drawn {
                let mut unit = Unit {
                    seq,
                    ..Unit::default()
                };
                while let Some((_, op)) = ops.next_if(|(s, _)| *s == seq) {
                    unit.ops.push(op);
                }
                units.push(unit);
            }
        }
        units
    })
}
