//! Point-in-time snapshots without fork and without stopping the world.
//!
//! [`Keyspace::begin_snapshot`](super::Keyspace::begin_snapshot) marks
//! every shard pending while it holds all their locks, which is the
//! snapshot's instant. After that, the first thread to lock a pending shard
//! (a command, active expiry, or the saver walking the shards in order)
//! hands it to the capture function before doing anything else with it,
//! and clears the mark. The capture serializes the shard as it stands,
//! which is as it stood at the instant, since nobody has locked it since.
//!
//! So writers never wait for the whole save, only, once per shard, for
//! that shard's capture (a 1/1024 slice of the data), and the extra memory
//! is the captures waiting for the saver to write them out: the shards
//! changed (or read) during the save, like the pages a forked child's
//! copy-on-write duplicates.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::Shard;

/// What a snapshot does with each shard, given its index (with the shard
/// locked by the caller).
pub type Capture = Box<dyn Fn(usize, &Shard) + Send + Sync>;

/// Keys and keys with a TTL, per database, at the snapshot's instant.
pub type DbSizes = Vec<(usize, usize)>;

pub struct Snapshot {
    pending: Box<[AtomicBool]>,
    remaining: AtomicUsize,
    capture: Capture,
}

impl Snapshot {
    pub(super) fn new(shards: usize, capture: Capture) -> Snapshot {
        Snapshot {
            pending: (0..shards).map(|_| AtomicBool::new(true)).collect(),
            remaining: AtomicUsize::new(shards),
            capture,
        }
    }

    /// Called with shard `idx` locked.
    pub(super) fn capture_if_pending(&self, idx: usize, shard: &Shard) {
        if self.pending[idx].swap(false, Ordering::AcqRel) {
            (self.capture)(idx, shard);
            self.remaining.fetch_sub(1, Ordering::AcqRel);
        }
    }

    pub fn is_pending(&self, idx: usize) -> bool {
        self.pending[idx].load(Ordering::Acquire)
    }

    /// Shards not captured yet.
    pub fn remaining(&self) -> usize {
        self.remaining.load(Ordering::Acquire)
    }
}
