//! The append-only file: Redis 7's multi-part layout (a manifest, a base
//! file, incremental files), written from the effects stream.
//!
//! The journal feeds [`Aof`] every unit in number order under its lock;
//! feeding only encodes the unit into the pending buffer of the file it
//! belongs to. One writer thread (`tessera-aof`) takes whatever is pending,
//! writes it, and, under `appendfsync always`, fsyncs before publishing the
//! last number written as durable: every unit that arrived during one
//! fsync shares the next (group commit). A connection whose command
//! produced unit `n` holds its replies until `n` is durable, awaiting it
//! as a future, so its worker keeps serving other clients meanwhile.
//! Under `everysec` the thread fsyncs once a second and nothing waits;
//! under `no` it only writes.
//!
//! A rewrite fixes a snapshot instant whose first unit number is `S`
//! ([`Aof::switch_at`]): units below `S` still go to the old incremental
//! file (the new base covers them), units from `S` on to a new one.

pub mod manifest;
pub mod reader;
pub mod rewrite;

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::journal::{encode_unit, target, Consumer, Unit};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    Always,
    Everysec,
    No,
}

impl Fsync {
    fn code(self) -> u8 {
        match self {
            Fsync::Always => 0,
            Fsync::Everysec => 1,
            Fsync::No => 2,
        }
    }

    fn from_code(c: u8) -> Fsync {
        match c {
            0 => Fsync::Always,
            1 => Fsync::Everysec,
            _ => Fsync::No,
        }
    }

    /// From `appendfsync`'s value as CONFIG GET shows it.
    pub fn from_name(name: &str) -> Fsync {
        match name {
            "always" => Fsync::Always,
            "no" => Fsync::No,
            _ => Fsync::Everysec,
        }
    }
}

/// Bytes waiting for one file.
struct Segment {
    file: Arc<File>,
    bytes: Vec<u8>,
    /// The last unit number in `bytes` (0: none).
    last_seq: u64,
}

struct Pending {
    segments: VecDeque<Segment>,
    /// The file units go to now, and the database its last op selected.
    current: Option<Arc<File>>,
    selected: Option<usize>,
    /// From this unit number on, units go to `next_file` (a rewrite's
    /// new incremental file); below it they go to `current` (or nowhere,
    /// when there is none: AOF being switched on, the base covers them).
    switch: Option<(u64, Arc<File>)>,
    timestamps: bool,
    last_timestamp_s: i64,
    /// The last unit number encoded for a file (what [`Aof::drain`] waits
    /// to see written, whether or not the writer has taken it yet).
    last_fed: u64,
    stop: bool,
}

pub struct Aof {
    pending: Mutex<Pending>,
    wake: Condvar,
    /// The policy, as [`Fsync::code`].
    fsync: std::sync::atomic::AtomicU8,
    /// Highest unit number written (and, under `always`, fsynced).
    durable: tokio::sync::watch::Sender<u64>,
    /// Bytes in the current incremental file and in the base (for INFO
    /// and the automatic rewrite).
    pub current_size: AtomicU64,
    pub base_size: AtomicU64,
    /// The last write or fsync failed (INFO's aof_last_write_status;
    /// writes get MISCONF meanwhile). Cleared when one succeeds.
    pub write_failed: Arc<AtomicBool>,
    pub last_error: Mutex<String>,
    pub delayed_fsyncs: AtomicU64,
    /// fsyncs done (for tests of when they happen).
    pub fsyncs: AtomicU64,
    /// Whether fsyncs are skipped right now (no-appendfsync-on-rewrite
    /// while a save or rewrite runs): writes still go out and replies are
    /// still released, without waiting for the disk, as in Redis.
    fsync_paused: FsyncPaused,
}

/// See [`Aof::start`].
pub type FsyncPaused = Box<dyn Fn() -> bool + Send + Sync>;

impl Aof {
    /// A writer appending to `file` (None: nothing until a rewrite
    /// switches to its first incremental file).
    /// `failed` is raised while writes fail (the server's MISCONF flag);
    /// `fsync_paused` says when fsyncs are to be skipped.
    pub fn start(
        file: Option<File>,
        fsync: Fsync,
        timestamps: bool,
        sizes: (u64, u64),
        failed: Arc<AtomicBool>,
        fsync_paused: FsyncPaused,
    ) -> Arc<Aof> {
        let (durable, _) = tokio::sync::watch::channel(0u64);
        let aof = Arc::new(Aof {
            pending: Mutex::new(Pending {
                segments: VecDeque::new(),
                current: file.map(Arc::new),
                selected: None,
                switch: None,
                timestamps,
                last_timestamp_s: 0,
                last_fed: 0,
                stop: false,
            }),
            wake: Condvar::new(),
            fsync: std::sync::atomic::AtomicU8::new(fsync.code()),
            durable,
            current_size: AtomicU64::new(sizes.0),
            base_size: AtomicU64::new(sizes.1),
            write_failed: failed,
            last_error: Mutex::new(String::new()),
            delayed_fsyncs: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            fsync_paused,
        });
        let writer = aof.clone();
        let _ = std::thread::Builder::new()
            .name("tessera-aof".into())
            .spawn(move || writer.run());
        aof
    }

    pub fn fsync_policy(&self) -> Fsync {
        Fsync::from_code(self.fsync.load(Relaxed))
    }

    pub fn set_fsync(&self, f: Fsync) {
        self.fsync.store(f.code(), Relaxed);
        self.wake.notify_one();
    }

    /// Units from `seq` on go to `file`, which starts with no database
    /// selected.
    pub fn switch_at(&self, seq: u64, file: File) {
        self.pending.lock().switch = Some((seq, Arc::new(file)));
    }

    /// Bytes encoded and not yet handed to the writer (aof_buffer_length).
    pub fn buffered(&self) -> usize {
        self.pending
            .lock()
            .segments
            .iter()
            .map(|s| s.bytes.len())
            .sum()
    }

    /// Waits until unit `seq` is durable (a future: the worker serves
    /// other clients meanwhile).
    pub async fn wait_durable(&self, seq: u64) {
        let mut rx = self.durable.subscribe();
        while *rx.borrow_and_update() < seq {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    pub fn durable_seq(&self) -> u64 {
        *self.durable.borrow()
    }

    /// Blocks until every unit fed so far is written to its file (or
    /// writing fails: then what is on disk is all there is).
    pub fn drain(&self) {
        let target = self.pending.lock().last_fed;
        while self.durable_seq() < target && !self.write_failed.load(Relaxed) {
            self.wake.notify_one();
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Writes and fsyncs everything pending, from the calling thread
    /// (shutdown), then stops the writer.
    pub fn flush_and_stop(&self) {
        let segments = {
            let mut p = self.pending.lock();
            p.stop = true;
            std::mem::take(&mut p.segments)
        };
        self.wake.notify_one();
        for seg in segments {
            let _ = (&*seg.file).write_all(&seg.bytes);
            let _ = seg.file.sync_data();
        }
        let file = self.pending.lock().current.clone();
        if let Some(f) = file {
            let _ = f.sync_data();
        }
        // Nothing waits for this writer any more: replies held for it go
        // out (the AOF was switched off, or the server is exiting).
        self.durable.send_replace(u64::MAX);
    }

    fn run(self: Arc<Self>) {
        let mut last_fsync = Instant::now();
        let mut unsynced: Option<Arc<File>> = None;
        loop {
            let segments = {
                let mut p = self.pending.lock();
                // Under `always` a feed wakes this thread at once (a reply
                // waits); otherwise nobody wakes it and it drains every
                // few milliseconds, so writes are batched like Redis's
                // once-per-event-loop AOF write and no command pays a
                // wake-up.
                if self.fsync_policy() != Fsync::Always && !p.stop {
                    self.wake.wait_for(&mut p, Duration::from_millis(5));
                }
                while p.segments.is_empty() && !p.stop {
                    let everysec = self.fsync_policy() == Fsync::Everysec;
                    if everysec
                        && unsynced.is_some()
                        && last_fsync.elapsed() >= Duration::from_secs(1)
                    {
                        break;
                    }
                    self.wake.wait_for(&mut p, Duration::from_millis(100));
                }
                if p.stop && p.segments.is_empty() {
                    return;
                }
                std::mem::take(&mut p.segments)
            };
            let mut last_seq = 0;
            for seg in segments {
                // A file is complete on disk before writing moves on to the
                // next one, so a crash never keeps later units and loses
                // earlier ones.
                if let Some(u) = unsynced.take() {
                    if !Arc::ptr_eq(&u, &seg.file) {
                        self.sync_retrying(&u);
                    }
                }
                self.write_retrying(&seg.file, &seg.bytes);
                self.current_size.fetch_add(seg.bytes.len() as u64, Relaxed);
                last_seq = last_seq.max(seg.last_seq);
                unsynced = Some(seg.file);
            }
            let policy = self.fsync_policy();
            if policy != Fsync::No && (self.fsync_paused)() {
                // The file stays unsynced; the first fsync after the
                // background job covers it.
                last_fsync = Instant::now();
            } else {
                match policy {
                    Fsync::Always => {
                        if let Some(f) = unsynced.take() {
                            self.sync_retrying(&f);
                        }
                        last_fsync = Instant::now();
                    }
                    Fsync::Everysec => {
                        if last_fsync.elapsed() >= Duration::from_secs(1) {
                            if let Some(f) = unsynced.take() {
                                self.sync_retrying(&f);
                            }
                            last_fsync = Instant::now();
                        }
                    }
                    Fsync::No => unsynced = None,
                }
            }
            if last_seq > 0 {
                self.durable.send_if_modified(|d| {
                    let moved = last_seq > *d;
                    *d = (*d).max(last_seq);
                    moved
                });
            }
        }
    }

    /// Writes until it succeeds: a full disk or an I/O error is reported
    /// (writes are refused meanwhile) and retried, nothing is dropped.
    fn write_retrying(&self, file: &File, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match (&*file).write(bytes) {
                Ok(0) => self.failed("short write (0 bytes)".into()),
                Ok(n) => {
                    bytes = &bytes[n..];
                    self.recovered();
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => self.failed(e.to_string()),
            }
        }
    }

    fn sync_retrying(&self, file: &File) {
        loop {
            match file.sync_data() {
                Ok(()) => {
                    self.fsyncs.fetch_add(1, Relaxed);
                    self.recovered();
                    return;
                }
                Err(e) => self.failed(e.to_string()),
            }
        }
    }

    fn failed(&self, e: String) {
        if !self.write_failed.swap(true, Relaxed) {
            crate::util::log::warning(&format!(
                "Error writing to the AOF file: {e}; retrying until it succeeds"
            ));
        }
        *self.last_error.lock() = e;
        std::thread::sleep(Duration::from_millis(100));
    }

    fn recovered(&self) {
        if self.write_failed.swap(false, Relaxed) {
            crate::util::log::warning("AOF write error looks solved, Redis can write again.");
        }
    }
}

impl Consumer for Aof {
    fn feed(&self, unit: &Unit) -> bool {
        let mut guard = self.pending.lock();
        let p = &mut *guard;
        if let Some((at, _)) = &p.switch {
            if unit.seq >= *at {
                let (_, file) = p.switch.take().expect("checked");
                p.current = Some(file);
                p.selected = None;
            }
        }
        let Some(file) = p.current.clone() else {
            return true;
        };
        let needs_new = p
            .segments
            .back()
            .is_none_or(|s| !Arc::ptr_eq(&s.file, &file));
        if needs_new {
            p.segments.push_back(Segment {
                file,
                bytes: Vec::new(),
                last_seq: 0,
            });
        }
        {
            let seg = p.segments.back_mut().expect("pushed");
            if p.timestamps {
                let now_s = super::unix_ms() / 1000;
                if now_s != p.last_timestamp_s {
                    p.last_timestamp_s = now_s;
                    write_timestamp(&mut seg.bytes, now_s);
                }
            }
            encode_unit(unit, target::AOF, &mut p.selected, &mut seg.bytes);
            seg.last_seq = unit.seq;
            p.last_fed = unit.seq;
        }
        drop(guard);
        if self.fsync_policy() == Fsync::Always {
            self.wake.notify_one();
        }
        true
    }
}

/// An `aof-timestamp-enabled` annotation for the Unix second `now_s`.
pub fn write_timestamp(out: &mut Vec<u8>, now_s: i64) {
    out.extend_from_slice(format!("#TS:{now_s}\r\n").as_bytes());
}

/// Where an AOF's files are.
#[derive(Clone, Debug)]
pub struct Layout {
    /// `dir`/`appenddirname`.
    pub dir: PathBuf,
    /// `appendfilename`.
    pub basename: String,
}

impl Layout {
    pub fn manifest_path(&self) -> PathBuf {
        self.dir
            .join(manifest::Manifest::manifest_name(&self.basename))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn load_manifest(&self) -> Result<Option<manifest::Manifest>, String> {
        match std::fs::read_to_string(self.manifest_path()) {
            Ok(text) => manifest::Manifest::parse(&text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("Can't open the AOF manifest: {e}")),
        }
    }

    /// Opens an incremental file for appending (created if missing).
    pub fn open_incr(&self, name: &str) -> std::io::Result<File> {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(name))
    }
}

/// The size of a file (0 when missing).
pub fn file_size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::effects::Op;

    fn unit(seq: u64) -> Unit {
        Unit {
            seq,
            atomic: false,
            ops: vec![Op {
                db: 0,
                argv: vec![b"SET".to_vec(), b"k".to_vec(), seq.to_string().into_bytes()],
                targets: target::ALL,
            }],
        }
    }

    fn wait_durable(aof: &Aof, seq: u64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while aof.durable_seq() < seq {
            assert!(Instant::now() < deadline, "unit {seq} never written");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn paused_fsyncs_release_replies_and_resume() {
        let dir = std::env::temp_dir().join(format!("tessera-aof-paused-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("a.aof");
        let file = File::create(&path).expect("create");
        let paused = Arc::new(AtomicBool::new(true));
        let flag = paused.clone();
        let aof = Aof::start(
            Some(file),
            Fsync::Always,
            false,
            (0, 0),
            Arc::new(AtomicBool::new(false)),
            Box::new(move || flag.load(Relaxed)),
        );
        aof.feed(&unit(1));
        wait_durable(&aof, 1);
        assert_eq!(aof.fsyncs.load(Relaxed), 0, "no fsync while paused");
        paused.store(false, Relaxed);
        aof.feed(&unit(2));
        wait_durable(&aof, 2);
        assert!(aof.fsyncs.load(Relaxed) >= 1, "fsyncs resume");
        aof.flush_and_stop();
        let text = std::fs::read(&path).expect("read");
        assert!(
            text.ends_with(b"$1\r\n2\r\n"),
            "{}",
            String::from_utf8_lossy(&text)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
