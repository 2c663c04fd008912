//! State shared by every thread: configuration, the keyspace, the client
//! registry, per-worker statistics, the slow log, the latency monitor,
//! MONITOR feeds and CLIENT PAUSE.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::client::ClientRegistry;
use super::stats::WorkerStats;
use crate::config::Config;
use crate::keyspace::Keyspace;

pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub fn unix_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// A MONITOR client. Lines go to its outbox (as pub/sub messages do),
/// appended by whichever worker runs the command; the monitor's own task
/// writes them out between its own replies. The replica-class output limit
/// bounds the backlog of a monitor that does not read.
pub struct MonitorFeed {
    pub id: u64,
    pub info: Arc<super::client::ClientInfo>,
}

pub struct SlowlogEntry {
    pub id: u64,
    pub time_s: i64,
    pub duration_us: u64,
    pub args: Vec<Vec<u8>>,
    pub peer: String,
    pub name: String,
}

#[derive(Default)]
pub struct SlowLog {
    pub entries: VecDeque<SlowlogEntry>,
    pub next_id: u64,
}

/// One latency-monitor event series (LATENCY LATEST / HISTORY).
#[derive(Default, Clone)]
pub struct LatencySeries {
    pub samples: VecDeque<(i64, u64)>,
    pub max_ms: u64,
}

/// Redis's "instantaneous" metrics: samples every 100 ms, averaged over the
/// last 16 samples.
#[derive(Default)]
pub struct InstantMetrics {
    last: Option<(i64, [u64; METRICS])>,
    samples: VecDeque<[f64; METRICS]>,
}

/// Commands, input bytes, output bytes, replication input bytes and
/// replication output bytes.
pub const METRICS: usize = 5;

/// What INFO shows of [`InstantMetrics`].
pub struct InstantRates {
    pub ops: u64,
    pub input_kbps: f64,
    pub output_kbps: f64,
    pub repl_input_kbps: f64,
    pub repl_output_kbps: f64,
}

impl InstantMetrics {
    /// Adds a sample of the running totals (in [`METRICS`] order) taken at
    /// `now_ms`.
    pub fn sample(&mut self, now_ms: i64, totals: [u64; METRICS]) {
        if let Some((t, prev)) = self.last {
            let dt = (now_ms - t).max(1) as f64 / 1000.0;
            let rates = std::array::from_fn(|i| totals[i].saturating_sub(prev[i]) as f64 / dt);
            self.samples.push_back(rates);
            if self.samples.len() > 16 {
                self.samples.pop_front();
            }
        }
        self.last = Some((now_ms, totals));
    }

    pub fn rates(&self) -> InstantRates {
        let n = self.samples.len().max(1) as f64;
        let avg = |i: usize| self.samples.iter().map(|s| s[i]).sum::<f64>() / n;
        InstantRates {
            ops: avg(0).round() as u64,
            input_kbps: avg(1) / 1024.0,
            output_kbps: avg(2) / 1024.0,
            repl_input_kbps: avg(3) / 1024.0,
            repl_output_kbps: avg(4) / 1024.0,
        }
    }
}

/// DEBUG SLEEP: in Redis the one thread sleeps and nobody is answered;
/// here the sleeper holds `held` and every other worker waits on it before
/// its next command, so the whole server stalls as Redis's does.
#[derive(Default)]
pub struct Stall {
    active: AtomicBool,
    held: Mutex<()>,
}

impl Stall {
    /// Stalls every command but the caller's own for `duration`. (Two
    /// sleeps take turns.)
    pub fn sleep(&self, duration: std::time::Duration) {
        let _held = self.held.lock();
        self.active.store(true, std::sync::atomic::Ordering::SeqCst);
        std::thread::sleep(duration);
        self.active
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Waits while a DEBUG SLEEP runs (one load when none does).
    #[inline]
    pub fn wait_out(&self) {
        if self.active.load(std::sync::atomic::Ordering::Relaxed) {
            drop(self.held.lock());
        }
    }
}

/// CLIENT PAUSE state.
#[derive(Default)]
pub struct Pause {
    /// Unix ms until which clients are paused; 0 when not paused.
    pub until_ms: AtomicI64,
    /// WRITE mode: only commands that may write wait.
    pub writes_only: AtomicBool,
    /// What holds writes until it ends: FAILOVER, a SHUTDOWN waiting for
    /// its replicas (bits, see [`Pause::hold`]).
    held: std::sync::atomic::AtomicU8,
    pub unpaused: Notify,
}

/// The holders of [`Pause::hold`].
pub const HELD_BY_FAILOVER: u8 = 1;
pub const HELD_BY_SHUTDOWN: u8 = 2;

impl Pause {
    /// Writes wait (they are not refused) until `release`.
    pub fn hold(&self, by: u8) {
        self.held.fetch_or(by, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn release(&self, by: u8) {
        self.held
            .fetch_and(!by, std::sync::atomic::Ordering::SeqCst);
        self.unpaused.notify_waiters();
    }

    /// Whether anything holds writes.
    #[inline]
    pub fn writes_held(&self) -> bool {
        self.held.load(std::sync::atomic::Ordering::Relaxed) != 0
    }

    pub fn held_by(&self, by: u8) -> bool {
        self.held.load(std::sync::atomic::Ordering::Relaxed) & by != 0
    }
}

pub struct ServerState {
    pub config: Arc<Config>,
    pub keyspace: std::sync::Arc<Keyspace>,
    pub clients: ClientRegistry,
    pub blocking: super::blocking::BlockingRegistry,
    /// Every worker's counters: the `worker_threads` regular workers, then
    /// the spare one when there is one (see `server::run`).
    pub workers: Vec<Arc<WorkerStats>>,
    /// Bytes allocated once the server was set up, before any client
    /// (INFO used_memory_startup).
    pub startup_memory: AtomicU64,
    /// Workers that new connections are spread over (`--threads`).
    pub worker_threads: usize,
    /// Counters of the accepting thread.
    pub acceptor: Arc<WorkerStats>,
    pub started: Instant,
    pub started_unix_ms: i64,
    pub run_id: String,
    /// The TCP port listened on (CONFIG SET port changes it).
    pub port: std::sync::atomic::AtomicU16,
    pub slowlog: Mutex<SlowLog>,
    pub latency: Mutex<HashMap<String, LatencySeries>>,
    pub pause: Pause,
    pub stall: Stall,
    /// Shutdowns waiting for their replicas (SHUTDOWN ABORT ends them).
    pub shutdown_waits: super::shutdown::ShutdownWaits,
    pub instant: Mutex<InstantMetrics>,
    pub monitors: Mutex<Vec<MonitorFeed>>,
    pub monitor_count: AtomicUsize,
    pub shutdown: Notify,
    /// Save and load state (INFO persistence, MISCONF, LASTSAVE).
    pub persistence: std::sync::Arc<crate::persistence::Status>,
    /// The AOF writer, while appendonly is on.
    pub aof: Mutex<Option<std::sync::Arc<crate::persistence::aof::Aof>>>,
    pub active_expire: AtomicBool,
    /// Cached jemalloc `stats.allocated`, refreshed by [`ServerState::used_memory`].
    pub used_memory_cache: AtomicU64,
    pub used_memory_refreshed_us: AtomicI64,
    pub peak_memory: AtomicU64,
    /// An eviction stopped at its bound (or maxmemory was lowered): the
    /// workers' ticks evict until memory is under the limit.
    pub eviction_unfinished: AtomicBool,
    pub executable: String,
    pub config_file: Option<String>,
    pub pubsub: super::pubsub::PubSub,
    /// Held by the running script (see server::script_host::lock_scripts).
    pub script_lock: Mutex<()>,
    pub scripts: crate::scripting::Scripts,
    pub tracking: super::tracking::TrackingTable,
    /// Where the threads' effects are merged into one stream.
    pub journal: crate::journal::Journal,
    /// MIGRATE's idle connections to other servers.
    pub migrate_sockets: super::migrate::MigrateSockets,
    /// maxmemory-clients (see `server::client_evict`).
    pub client_eviction: super::client_evict::ClientEviction,
    /// The replication stream, the replicas and the master link.
    pub repl: Arc<super::replication::Replication>,
    /// This state's own `Arc`, for the threads it starts (set once, when
    /// the server starts).
    pub me: std::sync::OnceLock<std::sync::Weak<ServerState>>,
}

impl ServerState {
    /// The shared handle to this state (for a thread it starts).
    pub fn me(&self) -> Arc<ServerState> {
        self.me
            .get()
            .and_then(|w| w.upgrade())
            .expect("the server's state is shared from its start")
    }

    /// Bytes allocated by the process (jemalloc's own count), refreshed at
    /// most every millisecond so eviction checks stay cheap, and at once
    /// after this thread's net allocation grew by over 64 KB (the command
    /// before may have grown the data past the limit).
    pub fn used_memory(&self) -> u64 {
        let now = unix_us();
        if now - self.used_memory_refreshed_us.load(Relaxed) >= 1000
            || crate::server::memory::thread_grew_since_last_read(64 * 1024)
        {
            crate::server::memory::note_fresh_read();
            self.used_memory_refreshed_us.store(now, Relaxed);
            let v = crate::server::memory::allocated_bytes();
            self.used_memory_cache.store(v, Relaxed);
            if v > self.peak_memory.load(Relaxed) {
                self.peak_memory.store(v, Relaxed);
            }
        }
        self.used_memory_cache.load(Relaxed)
    }

    /// Forces a fresh reading (INFO, MEMORY STATS, after eviction).
    pub fn used_memory_now(&self) -> u64 {
        self.used_memory_refreshed_us.store(0, Relaxed);
        self.used_memory()
    }

    pub fn uptime_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    pub fn record_latency(&self, event: &str, ms: u64) {
        let threshold = self.config.latency_monitor_threshold();
        if threshold == 0 || ms < threshold {
            return;
        }
        let mut lat = self.latency.lock();
        let series = lat.entry(event.to_string()).or_default();
        let now_s = unix_ms() / 1000;
        match series.samples.back_mut() {
            Some(last) if last.0 == now_s => last.1 = last.1.max(ms),
            _ => series.samples.push_back((now_s, ms)),
        }
        if series.samples.len() > 160 {
            series.samples.pop_front();
        }
        series.max_ms = series.max_ms.max(ms);
    }

    /// Logs the disconnection of a client over its output buffer limit.
    pub fn log_obuf_kill(&self, info: &super::client::ClientInfo) {
        crate::util::log::warning(&format!(
            "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
            info.describe(unix_ms())
        ));
    }

    pub fn stat_total(&self, f: impl Fn(&WorkerStats) -> u64) -> u64 {
        self.workers.iter().map(|w| f(w)).sum::<u64>() + f(&self.acceptor)
    }
}
