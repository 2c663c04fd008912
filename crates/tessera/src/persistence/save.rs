//! Writing an RDB file from a point-in-time snapshot of the keyspace.
//!
//! [`begin`] fixes the instant (see [`crate::keyspace::snapshot`]); the
//! returned [`Running`] save then walks the shards in order on whatever
//! thread runs [`Running::write`], writing each shard's capture (taken by
//! the saver itself, or earlier by a thread that needed the shard) to a
//! temporary file, which is fsynced and renamed over the target only when
//! complete: a crash at any moment leaves the previous file intact. The
//! same walk writes an AOF base in command form when the job asks for it
//! (`aof-use-rdb-preamble no`).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;

use super::rdb::file::{self, AccessRecord, AuxValue};
use super::rdb::SaveOptions;
use crate::keyspace::{Keyspace, Shard, NUM_SHARDS};

/// Everything a save needs, fixed when it begins.
#[derive(Clone)]
pub struct SaveJob {
    pub keyspace: Arc<Keyspace>,
    /// The final file (`dir`/`dbfilename`).
    pub path: PathBuf,
    pub opts: SaveOptions,
    pub access: AccessMode,
    pub checksum: bool,
    /// Library source codes, written as function records.
    pub functions: Vec<Vec<u8>>,
    /// Extra aux fields after Redis's standard ones.
    pub used_memory: u64,
    pub aof_base: bool,
    /// Write commands instead of an RDB image (an AOF base without the
    /// RDB preamble); `Some(true)` starts it with a `#TS:` annotation.
    pub as_commands: Option<bool>,
    /// rdb-key-save-delay: microseconds to sleep per key written (tests).
    pub key_delay_us: i64,
    /// fsync every 4 MiB while writing (rdb-save-incremental-fsync).
    pub incremental_fsync: bool,
    /// A replica's stream position at the snapshot's instant, written as
    /// the `repl-*` aux fields.
    pub repl: Option<SavedPosition>,
    /// Write the keys (false: a replica asked for an RDB of only the
    /// functions, or of nothing, with `REPLCONF rdb-filter-only`).
    pub include_keys: bool,
    /// Set by whoever wants the save stopped (FLUSHALL, as Redis kills its
    /// saving child): the writer gives up at the next shard or key delay,
    /// leaving the previous file in place.
    pub cancel: Arc<std::sync::atomic::AtomicBool>,
}

/// Sleeps `us` microseconds (the test-only per-key delay), waking early
/// to give up when the save is cancelled: false then.
fn sleep_unless_cancelled(us: u64, cancel: &std::sync::atomic::AtomicBool) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_micros(us);
    loop {
        if cancel.load(Relaxed) {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(std::time::Duration::from_millis(10)));
    }
}

/// The error of a save stopped through [`SaveJob::cancel`].
pub const CANCELLED: &str = "The save was cancelled";

/// What an RDB file says of the replication stream its data came from (the
/// `repl-stream-db`, `repl-id` and `repl-offset` aux fields).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SavedPosition {
    pub stream_db: i64,
    pub replid: String,
    pub offset: i64,
}

impl SavedPosition {
    /// Whether a loaded file's fields name a stream one can continue: a
    /// 40-character ID, and an offset and database in range (a hostile
    /// file's `i64::MAX` would overflow the next offset).
    pub fn is_usable(&self) -> bool {
        self.replid.len() == 40 && (0..i64::MAX).contains(&self.offset) && self.stream_db >= 0
    }
}

/// Runs at the snapshot's instant with the first effects unit number
/// after it (see `Keyspace::begin_snapshot`).
pub type AtInstant<'a> = &'a mut dyn FnMut(u64);

/// How keys' access times are recorded (by maxmemory-policy).
#[derive(Clone, Copy, Debug)]
pub enum AccessMode {
    None,
    Lru,
    Lfu { decay_minutes: u32 },
}

/// One shard's keys in RDB form, per database.
struct ShardImage {
    dbs: Vec<DbImage>,
    bytes: usize,
}

struct DbImage {
    db: usize,
    keys: usize,
    bytes: Vec<u8>,
}

struct Captures {
    slots: Mutex<Vec<Option<ShardImage>>>,
    held_bytes: AtomicU64,
    peak_bytes: AtomicU64,
}

pub struct Running {
    job: SaveJob,
    captures: Arc<Captures>,
    snapshot: Arc<crate::keyspace::snapshot::Snapshot>,
    /// Keys and volatile keys per database at the instant (RESIZEDB).
    sizes: Vec<(usize, usize)>,
    started_ms: i64,
}

pub struct SaveStats {
    pub keys: u64,
    pub bytes: u64,
    /// Peak bytes of captures held waiting to be written.
    pub cow_bytes: u64,
    pub started_ms: i64,
}

fn capture_shard(
    shard: &Shard,
    opts: &SaveOptions,
    access: AccessMode,
    as_commands: bool,
) -> ShardImage {
    let now_ms = super::unix_ms();
    let record = match access {
        AccessMode::None => AccessRecord::None,
        AccessMode::Lru => AccessRecord::LruIdle {
            now_s: (now_ms / 1000) as u32,
        },
        AccessMode::Lfu { decay_minutes } => AccessRecord::LfuFreq {
            now_minutes: (now_ms / 60_000) as u32,
            decay_minutes,
        },
    };
    let mut dbs = Vec::new();
    let mut total = 0;
    for (db, table) in shard.dbs.iter().enumerate() {
        if table.is_empty() {
            continue;
        }
        let mut bytes = Vec::new();
        let mut keys = 0;
        for (key, entry) in table.iter() {
            let expire = if entry.has_ttl() {
                table.expire_of(key)
            } else {
                0
            };
            if as_commands {
                super::aof::rewrite::write_key(&mut bytes, key, entry, expire);
            } else {
                file::write_key(&mut bytes, key, entry, expire, opts, record);
            }
            keys += 1;
        }
        total += bytes.len();
        dbs.push(DbImage { db, keys, bytes });
    }
    ShardImage { dbs, bytes: total }
}

/// Fixes the snapshot's instant. Fails when another snapshot is running.
pub fn begin(job: SaveJob) -> Result<Running, String> {
    begin_at(job, &mut |_| {})
}

/// [`begin`], telling `at_instant` where the stream splits.
pub fn begin_at(job: SaveJob, at_instant: AtInstant) -> Result<Running, String> {
    let captures = Arc::new(Captures {
        slots: Mutex::new((0..NUM_SHARDS).map(|_| None).collect()),
        held_bytes: AtomicU64::new(0),
        peak_bytes: AtomicU64::new(0),
    });
    let sink = captures.clone();
    let opts = job.opts;
    let access = job.access;
    let as_commands = job.as_commands.is_some();
    let include_keys = job.include_keys;
    let capture = Box::new(move |idx: usize, shard: &Shard| {
        let image = if include_keys {
            capture_shard(shard, &opts, access, as_commands)
        } else {
            ShardImage {
                dbs: Vec::new(),
                bytes: 0,
            }
        };
        let held = sink.held_bytes.fetch_add(image.bytes as u64, Relaxed) + image.bytes as u64;
        sink.peak_bytes.fetch_max(held, Relaxed);
        sink.slots.lock()[idx] = Some(image);
    });
    let started_ms = super::unix_ms();
    let (snapshot, sizes) = job
        .keyspace
        .begin_snapshot(capture, at_instant)
        .ok_or_else(|| "Background save already in progress".to_string())?;
    Ok(Running {
        job,
        captures,
        snapshot,
        sizes,
        started_ms,
    })
}

/// A writer that keeps the running CRC64 of what passes through.
struct Checksummed<W: Write> {
    inner: W,
    crc: u64,
    written: u64,
    since_sync: u64,
}

impl<W: Write> Checksummed<W> {
    fn put(&mut self, b: &[u8], checksum: bool) -> std::io::Result<()> {
        if checksum {
            self.crc = crate::util::crc64::crc64_update(self.crc, b);
        }
        self.inner.write_all(b)?;
        self.written += b.len() as u64;
        self.since_sync += b.len() as u64;
        Ok(())
    }
}

const INCREMENTAL_FSYNC_BYTES: u64 = 4 << 20;

/// Where a snapshot is written: a file is synced as it grows and at the
/// end, a stream to a replica is not.
trait Durable: Write {
    fn sync_data(&mut self) -> std::io::Result<()>;
    fn sync_all(&mut self) -> std::io::Result<()>;
}

impl Durable for std::io::BufWriter<File> {
    fn sync_data(&mut self) -> std::io::Result<()> {
        self.flush()?;
        self.get_ref().sync_data()
    }
    fn sync_all(&mut self) -> std::io::Result<()> {
        self.flush()?;
        self.get_ref().sync_all()
    }
}

struct Unsynced<W: Write>(W);

impl<W: Write> Write for Unsynced<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl<W: Write> Durable for Unsynced<W> {
    fn sync_data(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn sync_all(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Running {
    pub fn started_ms(&self) -> i64 {
        self.started_ms
    }

    /// The replication stream's position at the snapshot's instant, when
    /// it is learnt after the snapshot began (a master's): written as the
    /// `repl-*` aux fields.
    pub fn record_position(&mut self, position: Option<SavedPosition>) {
        self.job.repl = position;
    }

    /// Lowers the calling thread's CPU priority (nice 10) for a save run in
    /// the background: where it shares a core with workers, the scheduler
    /// then lets a worker's request preempt the serialization instead of
    /// waiting out the saver's time slice (measured in docs/benchmarks.md:
    /// other clients' worst latency during a BGSAVE on one core).
    pub fn yield_to_workers() {
        // SAFETY: setpriority only reads its integer arguments; on Linux
        // `who` 0 with PRIO_PROCESS names the calling thread.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
        }
    }

    /// What stops this save when set (see [`SaveJob::cancel`]).
    pub fn cancel_handle(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.job.cancel.clone()
    }

    /// Writes the file and puts it in place. On error the temporary file
    /// is removed and the previous file is untouched.
    pub fn write(self) -> Result<SaveStats, String> {
        let dir = self
            .job
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        // One name per save, so a SAVE beside a background save (FLUSHALL
        // waits for none to end when it stops one) never shares its file.
        static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);
        let tmp = dir.join(format!(
            "temp-{}-{}.rdb",
            std::process::id(),
            NEXT_TEMP.fetch_add(1, Relaxed)
        ));
        let result = self.write_to(&tmp);
        // Whatever happened, every shard must be released from the
        // snapshot before it ends (a failed write stops early).
        self.job.keyspace.end_snapshot(&self.snapshot);
        match result {
            Ok(stats) => {
                std::fs::rename(&tmp, &self.job.path).map_err(|e| {
                    let _ = std::fs::remove_file(&tmp);
                    format!("Error moving temp DB file on the final destination: {e}")
                })?;
                if let Ok(d) = File::open(&dir) {
                    let _ = d.sync_all();
                }
                Ok(stats)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    fn write_to(&self, tmp: &Path) -> Result<SaveStats, String> {
        let f = File::create(tmp).map_err(|e| {
            format!(
                "Failed opening the temp RDB file {} (in server root dir {}) for saving: {e}",
                tmp.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default(),
                std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            )
        })?;
        let mut inner = std::io::BufWriter::with_capacity(1 << 20, f);
        self.write_into(&mut inner)
    }

    /// Writes the snapshot to `sink` as a stream (a replica's diskless
    /// transfer), then ends the snapshot.
    pub fn write_stream<W: Write>(self, sink: W) -> Result<SaveStats, String> {
        let mut sink = Unsynced(sink);
        let result = self.write_into(&mut sink);
        self.job.keyspace.end_snapshot(&self.snapshot);
        result
    }

    fn write_into<W: Durable>(&self, inner: &mut W) -> Result<SaveStats, String> {
        let mut out = Checksummed {
            inner,
            crc: 0,
            written: 0,
            since_sync: 0,
        };
        let werr = |e: std::io::Error| format!("Write error saving DB on disk: {e}");
        let job = &self.job;
        let ck = job.checksum;

        let mut head = Vec::new();
        match job.as_commands {
            Some(timestamp) => {
                if timestamp {
                    super::aof::write_timestamp(&mut head, self.started_ms / 1000);
                }
                for code in &job.functions {
                    super::aof::rewrite::write_function(&mut head, code);
                }
            }
            None => self.write_rdb_header(&mut head),
        }
        out.put(&head, ck).map_err(werr)?;

        let mut keys = 0u64;
        let mut current_db: Option<usize> = None;
        let mut sized = vec![false; self.sizes.len()];
        for idx in 0..NUM_SHARDS {
            if job.cancel.load(Relaxed) {
                return Err(CANCELLED.into());
            }
            let mut image = self.captures.slots.lock()[idx].take();
            if image.is_none() {
                // Locking the shard captures it (the keyspace's hook), if
                // nobody has yet.
                drop(job.keyspace.lock_shard(idx));
                image = self.captures.slots.lock()[idx].take();
            }
            let Some(image) = image else {
                return Err("snapshot lost a shard".into());
            };
            self.captures
                .held_bytes
                .fetch_sub(image.bytes as u64, Relaxed);
            for db in image.dbs {
                if current_db != Some(db.db) {
                    let mut sel = Vec::new();
                    if job.as_commands.is_some() {
                        super::aof::rewrite::write_select(&mut sel, db.db);
                    } else {
                        file::write_select_db(&mut sel, db.db);
                        if let Some(done) = sized.get_mut(db.db).filter(|d| !**d) {
                            *done = true;
                            let (k, v) = self.sizes[db.db];
                            file::write_resize_db(&mut sel, k, v);
                        }
                    }
                    out.put(&sel, ck).map_err(werr)?;
                    current_db = Some(db.db);
                }
                out.put(&db.bytes, ck).map_err(werr)?;
                keys += db.keys as u64;
                if job.key_delay_us > 0 {
                    for _ in 0..db.keys {
                        if !sleep_unless_cancelled(job.key_delay_us as u64, &job.cancel) {
                            return Err(CANCELLED.into());
                        }
                    }
                }
            }
            if job.incremental_fsync && out.since_sync >= INCREMENTAL_FSYNC_BYTES {
                out.inner.sync_data().map_err(werr)?;
                out.since_sync = 0;
            }
        }
        debug_assert_eq!(self.snapshot.remaining(), 0);
        if job.as_commands.is_none() {
            let mut tail = Vec::new();
            file::write_eof(&mut tail);
            out.put(&tail, ck).map_err(werr)?;
            let crc = if ck { out.crc } else { 0 };
            out.put(&crc.to_le_bytes(), false).map_err(werr)?;
        }
        out.inner.flush().map_err(werr)?;
        out.inner.sync_all().map_err(werr)?;
        Ok(SaveStats {
            keys,
            bytes: out.written,
            cow_bytes: self.captures.peak_bytes.load(Relaxed),
            started_ms: self.started_ms,
        })
    }
}

impl Running {
    /// RDB's magic, aux fields and function records.
    fn write_rdb_header(&self, head: &mut Vec<u8>) {
        let job = &self.job;
        let ctime = self.started_ms / 1000;
        let mut aux = vec![
            (
                "redis-ver",
                AuxValue::Str(crate::REDIS_COMPAT_VERSION.as_bytes()),
            ),
            ("redis-bits", AuxValue::Int(64)),
            ("ctime", AuxValue::Int(ctime)),
            ("used-mem", AuxValue::Int(job.used_memory as i64)),
        ];
        if let Some(p) = &job.repl {
            aux.push(("repl-stream-db", AuxValue::Int(p.stream_db)));
            aux.push(("repl-id", AuxValue::Str(p.replid.as_bytes())));
            aux.push(("repl-offset", AuxValue::Int(p.offset)));
        }
        aux.push(("aof-base", AuxValue::Int(job.aof_base as i64)));
        file::write_header(head, &aux);
        for code in &job.functions {
            file::write_function(head, code, job.opts.compress);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A save dropped without writing (or after) must not leave the
        // keyspace capturing shards for nobody.
        self.job.keyspace.end_snapshot(&self.snapshot);
    }
}

#[cfg(test)]
mod tests {
    use super::SavedPosition;

    #[test]
    fn only_a_stream_one_can_continue_is_usable() {
        let good = SavedPosition {
            stream_db: 0,
            replid: "a".repeat(40),
            offset: 10,
        };
        assert!(good.is_usable());
        for bad in [
            SavedPosition {
                offset: i64::MAX,
                ..good.clone()
            },
            SavedPosition {
                offset: -1,
                ..good.clone()
            },
            SavedPosition {
                stream_db: -1,
                ..good.clone()
            },
            SavedPosition {
                replid: "short".into(),
                ..good.clone()
            },
        ] {
            assert!(!bad.is_usable(), "{bad:?}");
        }
    }
}
