//! Durability: RDB snapshots (and, built on the same formats, DUMP and
//! RESTORE payloads).
//!
//! Nothing here is called by command handlers directly for data: a save
//! is fed by the keyspace's shard-by-shard snapshot ([`crate::keyspace::snapshot`]),
//! and loading hands decoded keys to the caller, which inserts them. The
//! server layer decides when to save (SAVE, BGSAVE, save rules, SHUTDOWN)
//! and keeps the counters INFO persistence reports in [`Status`].

pub mod aof;
pub mod rdb;
pub mod save;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

/// What INFO persistence reports, and what decides MISCONF.
#[derive(Debug)]
pub struct Status {
    /// Changes counted when the last successful save began (Redis's
    /// `dirty` is reset then; ours is a running total).
    pub dirty_at_last_save: AtomicU64,
    pub lastsave_s: AtomicI64,
    pub bgsave_in_progress: AtomicBool,
    /// Stops the running background save (see `SaveJob::cancel`).
    pub bgsave_cancel: parking_lot::Mutex<Option<std::sync::Arc<AtomicBool>>>,
    pub bgsave_scheduled: AtomicBool,
    pub last_bgsave_ok: AtomicBool,
    /// Seconds the last background save took (-1: none yet).
    pub last_bgsave_time_s: AtomicI64,
    /// Unix ms the running background save began (0 when none).
    pub bgsave_started_ms: AtomicI64,
    pub last_cow_bytes: AtomicU64,
    /// SAVE commands and background saves started (INFO's rdb_saves).
    pub saves_started: AtomicU64,
    /// Background saves and rewrites started (INFO's total_forks: Tessera
    /// never forks, tools read it as "background jobs started").
    pub background_jobs: AtomicU64,
    /// Unix ms of the last failed save attempt (save rules retry after
    /// five seconds, as Redis's CONFIG_BGSAVE_RETRY_DELAY).
    pub last_failure_ms: AtomicI64,
    pub loading: AtomicBool,
    /// A replica loads a snapshot beside the data it keeps serving
    /// (Redis 7's async loading); `loading` stays false meanwhile.
    pub async_loading: AtomicBool,
    pub loading_started_s: AtomicI64,
    pub loading_total_bytes: AtomicU64,
    pub loading_loaded_bytes: AtomicU64,
    pub last_load_keys_loaded: AtomicU64,
    pub last_load_keys_expired: AtomicU64,
    /// Compact blobs validated deeply (INFO `dump_payload_sanitizations`,
    /// counted as Redis counts them; see `server::persist::deep_sanitize`).
    pub dump_payload_sanitizations: AtomicU64,
    /// The AOF's last write or fsync failed (shared with its writer, so
    /// the MISCONF check of every write is one load, no lock).
    pub aof_write_failed: std::sync::Arc<AtomicBool>,
    /// The AOF is on (its writer runs and the stream feeds it).
    pub aof_enabled: AtomicBool,
    /// Replies wait for their writes to be fsynced (`appendfsync always`).
    pub aof_waits: AtomicBool,
    pub aof_rewrite_in_progress: AtomicBool,
    pub aof_rewrite_scheduled: AtomicBool,
    /// The scheduled rewrite is the one that turns the AOF on (CONFIG SET
    /// appendonly yes inside a transaction).
    pub aof_enable_scheduled: AtomicBool,
    /// Stops the AOF rewrite in progress (CONFIG SET appendonly no).
    pub aof_rewrite_cancel: parking_lot::Mutex<Option<std::sync::Arc<AtomicBool>>>,
    pub aof_last_rewrite_ok: AtomicBool,
    pub aof_last_rewrite_time_s: AtomicI64,
    pub aof_rewrite_started_ms: AtomicI64,
    pub aof_rewrites: AtomicU64,
    pub aof_last_cow_bytes: AtomicU64,
}

impl Default for Status {
    fn default() -> Self {
        Status {
            dirty_at_last_save: AtomicU64::new(0),
            lastsave_s: AtomicI64::new(unix_ms() / 1000),
            bgsave_in_progress: AtomicBool::new(false),
            bgsave_cancel: parking_lot::Mutex::new(None),
            bgsave_scheduled: AtomicBool::new(false),
            last_bgsave_ok: AtomicBool::new(true),
            last_bgsave_time_s: AtomicI64::new(-1),
            bgsave_started_ms: AtomicI64::new(0),
            last_cow_bytes: AtomicU64::new(0),
            saves_started: AtomicU64::new(0),
            background_jobs: AtomicU64::new(0),
            last_failure_ms: AtomicI64::new(0),
            loading: AtomicBool::new(false),
            async_loading: AtomicBool::new(false),
            loading_started_s: AtomicI64::new(0),
            loading_total_bytes: AtomicU64::new(0),
            loading_loaded_bytes: AtomicU64::new(0),
            last_load_keys_loaded: AtomicU64::new(0),
            last_load_keys_expired: AtomicU64::new(0),
            dump_payload_sanitizations: AtomicU64::new(0),
            aof_write_failed: Default::default(),
            aof_enabled: AtomicBool::new(false),
            aof_waits: AtomicBool::new(false),
            aof_rewrite_in_progress: AtomicBool::new(false),
            aof_rewrite_scheduled: AtomicBool::new(false),
            aof_enable_scheduled: AtomicBool::new(false),
            aof_rewrite_cancel: parking_lot::Mutex::new(None),
            aof_last_rewrite_ok: AtomicBool::new(true),
            aof_last_rewrite_time_s: AtomicI64::new(-1),
            aof_rewrite_started_ms: AtomicI64::new(0),
            aof_rewrites: AtomicU64::new(0),
            aof_last_cow_bytes: AtomicU64::new(0),
        }
    }
}

impl Status {
    pub fn loading(&self) -> bool {
        self.loading.load(Relaxed)
    }

    pub fn async_loading(&self) -> bool {
        self.async_loading.load(Relaxed)
    }
}

pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
