//! Counters kept per worker thread and summed when read (INFO, commandstats),
//! so the hot path never writes a cache line another thread writes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;

/// A counter written by exactly one thread: a plain load and store instead
/// of an atomic read-modify-write, readable from any thread.
#[derive(Default, Debug)]
pub struct OwnedCounter(AtomicU64);

impl OwnedCounter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }
    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
    pub fn reset(&self) {
        self.0.store(0, Relaxed);
    }
}

#[derive(Default, Debug)]
pub struct CommandCounters {
    pub calls: OwnedCounter,
    pub usec: OwnedCounter,
    pub rejected: OwnedCounter,
    pub failed: OwnedCounter,
}

/// One worker's counters.
#[derive(Debug)]
pub struct WorkerStats {
    /// Indexed by command id (see `commands::command_id`).
    pub commands: Box<[CommandCounters]>,
    pub errors: Mutex<HashMap<String, u64>>,
    pub net_input_bytes: OwnedCounter,
    pub net_output_bytes: OwnedCounter,
    pub commands_processed: OwnedCounter,
    pub connections_received: OwnedCounter,
    pub rejected_connections: OwnedCounter,
    pub evicted_keys: OwnedCounter,
    pub expired_keys_active: OwnedCounter,
}

impl WorkerStats {
    pub fn new(ncommands: usize) -> WorkerStats {
        WorkerStats {
            commands: (0..ncommands).map(|_| CommandCounters::default()).collect(),
            errors: Mutex::new(HashMap::new()),
            net_input_bytes: OwnedCounter::default(),
            net_output_bytes: OwnedCounter::default(),
            commands_processed: OwnedCounter::default(),
            connections_received: OwnedCounter::default(),
            rejected_connections: OwnedCounter::default(),
            evicted_keys: OwnedCounter::default(),
            expired_keys_active: OwnedCounter::default(),
        }
    }

    pub fn count_error(&self, code: &str) {
        *self.errors.lock().entry(code.to_string()).or_insert(0) += 1;
    }

    pub fn reset(&self) {
        for c in self.commands.iter() {
            c.calls.reset();
            c.usec.reset();
            c.rejected.reset();
            c.failed.reset();
        }
        self.errors.lock().clear();
        self.net_input_bytes.reset();
        self.net_output_bytes.reset();
        self.commands_processed.reset();
        self.connections_received.reset();
        self.rejected_connections.reset();
        self.evicted_keys.reset();
        self.expired_keys_active.reset();
    }
}
