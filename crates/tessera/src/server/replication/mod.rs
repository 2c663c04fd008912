//! Replication: the stream a master sends its replicas, and the link a
//! replica keeps to its master (Redis's PSYNC2 protocol, both ways).
//!
//! ```text
//!  master role                                   replica role
//!  effects units ─▶ Journal (number order)        master link thread
//!        │                                         │ applies each command
//!        ▼ StreamFeeder (target::REPL)             ▼ (as the master client)
//!  Stream: replid, offset, backlog, feeds ◀─── the same bytes, verbatim
//!        │ every byte appended once, in order
//!        ▼
//!  ReplicaFeed per replica connection ─▶ its outbox ─▶ conn.rs writes it
//! ```
//!
//! The [`Stream`] is the one replication stream of this server: its bytes
//! are numbered by `offset` (Redis's `master_repl_offset`), the last
//! `repl-backlog-size` of them are kept for partial resynchronization, and
//! every attached replica is fed the same bytes. On a master the bytes are
//! the effects units encoded once (one SELECT state for all replicas, as
//! Redis keeps `slaveseldb`); on a replica they are the master's own bytes,
//! forwarded as each command is applied, so a chained replica sees the
//! same offsets and replication IDs as its master's master.
//!
//! Where the stream of a new replica begins is exact: a full sync's
//! snapshot instant is an effects unit number (`Keyspace::begin_snapshot`),
//! and the feed is positioned at the stream's offset once every unit below
//! that number has been encoded and none after it (`Journal::if_fed_below`
//! or, when the unit arrives first, [`StreamFeeder`] itself). On a replica
//! the link thread holds [`Replication::apply_lock`] while it routes and
//! forwards commands to the apply threads ([`apply`]), and a full sync
//! begins its snapshot under it with those threads drained
//! ([`Replication::quiesce`]).

pub mod apply;
pub mod failover;
pub mod master;
pub mod replica;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::client::ClientInfo;
use super::state::unix_ms;

/// Redis's empty replication ID (no previous history).
pub const NO_REPLID: &str = "0000000000000000000000000000000000000000";

/// A new random 40-hex-digit replication ID.
pub fn random_replid() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..40)
        .map(|_| format!("{:x}", rng.gen_range(0..16u8)))
        .collect()
}

/// The last `size` bytes of the stream (Redis's replication backlog).
pub struct Backlog {
    bytes: VecDeque<u8>,
    size: usize,
}

impl Backlog {
    fn new(size: usize) -> Backlog {
        Backlog {
            bytes: VecDeque::new(),
            size: size.max(1),
        }
    }

    fn push(&mut self, b: &[u8]) {
        if b.len() >= self.size {
            self.bytes.clear();
            self.bytes.extend(&b[b.len() - self.size..]);
            return;
        }
        let over = (self.bytes.len() + b.len()).saturating_sub(self.size);
        self.bytes.drain(..over);
        self.bytes.extend(b);
    }

    fn resize(&mut self, size: usize) {
        self.size = size.max(1);
        let over = self.bytes.len().saturating_sub(self.size);
        self.bytes.drain(..over);
    }

    pub fn histlen(&self) -> usize {
        self.bytes.len()
    }
}

/// A replica's progress as the master sees it (INFO's `state=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FeedState {
    /// Waiting for its snapshot to begin.
    WaitBgsave = 0,
    /// The snapshot is being sent.
    SendBulk = 1,
    /// Sent a diskless snapshot; the stream starts at its first ACK.
    WaitAck = 2,
    Online = 3,
}

impl FeedState {
    fn from_u8(v: u8) -> FeedState {
        match v {
            0 => FeedState::WaitBgsave,
            1 => FeedState::SendBulk,
            2 => FeedState::WaitAck,
            _ => FeedState::Online,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FeedState::WaitBgsave => "wait_bgsave",
            FeedState::SendBulk | FeedState::WaitAck => "send_bulk",
            FeedState::Online => "online",
        }
    }
}

/// One replica connection on the master side: the stream goes into its
/// client's outbox, which its connection task writes.
pub struct ReplicaFeed {
    pub info: Arc<ClientInfo>,
    /// The address it announced (REPLCONF ip-address, else the peer's).
    pub ip: String,
    /// REPLCONF listening-port.
    pub port: u16,
    /// It sent PSYNC (it is told +FULLRESYNC), not SYNC.
    pub psync: bool,
    /// It asked for the snapshot alone (REPLCONF rdb-only): a full sync
    /// ends by closing its connection.
    pub rdb_only: bool,
    pub state: AtomicU8,
    /// The first effects unit after its snapshot's instant (MAX until it
    /// is known).
    pub start_seq: AtomicU64,
    /// The offset it last acknowledged (REPLCONF ACK).
    pub ack_offset: AtomicU64,
    /// When it last sent an ACK (ms; for `lag`, min-replicas and the
    /// replica timeout), or when it connected.
    pub ack_ms: AtomicI64,
    /// Whether it has ever sent an ACK (only those time out).
    pub acked: AtomicBool,
    /// Its stream has a start (a lock-free copy of `FeedInner::positioned`
    /// for the per-unit check).
    started: AtomicBool,
    /// The replica class's output limits (hard, and soft for so long).
    limit: crate::config::ObufLimit,
    inner: Mutex<FeedInner>,
}

struct FeedInner {
    /// Its stream has a start: bytes appended from now on are its.
    positioned: bool,
    /// The snapshot is out: its bytes go to the outbox, not `held`.
    streaming: bool,
    held: Vec<u8>,
}

/// Past this many bytes in a replica's outbox the snapshot sender waits
/// for the connection to write them.
const OUTBOX_HIGH_WATER: usize = 4 << 20;

impl ReplicaFeed {
    pub fn new(
        info: Arc<ClientInfo>,
        ip: String,
        port: u16,
        psync: bool,
        rdb_only: bool,
        limit: crate::config::ObufLimit,
    ) -> Self {
        ReplicaFeed {
            info,
            ip,
            port,
            psync,
            rdb_only,
            state: AtomicU8::new(FeedState::WaitBgsave as u8),
            start_seq: AtomicU64::new(u64::MAX),
            ack_offset: AtomicU64::new(0),
            ack_ms: AtomicI64::new(unix_ms()),
            acked: AtomicBool::new(false),
            started: AtomicBool::new(false),
            limit,
            inner: Mutex::new(FeedInner {
                positioned: false,
                streaming: false,
                held: Vec::new(),
            }),
        }
    }

    /// The replica as Redis's log lines name it.
    pub fn label(&self) -> String {
        master::replica_label(&self.ip, self.port)
    }

    pub fn state(&self) -> FeedState {
        FeedState::from_u8(self.state.load(Relaxed))
    }

    pub fn set_state(&self, s: FeedState) {
        self.state.store(s as u8, Relaxed);
    }

    pub fn id(&self) -> u64 {
        self.info.id
    }

    /// Appends to the client's outbox; false (and the client closed) past
    /// the replica class's output limits.
    pub fn push(&self, bytes: &[u8]) -> bool {
        let (size, was_empty) = self.append_outbox(bytes);
        if self.info.over_output_limit(&self.limit, size) {
            self.over_limit();
            return false;
        }
        // (Bytes added to a non-empty outbox go out with the ones whose
        // push woke the task: it takes the whole outbox.)
        if was_empty {
            self.info.wake.notify_one();
        }
        true
    }

    fn over_limit(&self) {
        crate::util::log::warning(&format!(
            "Client id={} addr={} laddr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
            self.info.id, self.info.addr, self.info.laddr
        ));
        self.info.kill();
    }

    /// Part of a snapshot transfer, waiting while the outbox is full (the
    /// replica reads slowly); false once the replica is gone.
    pub fn push_bulk(&self, bytes: &[u8]) -> bool {
        loop {
            if self.info.is_gone() {
                return false;
            }
            if self.info.outbox.lock().len() < OUTBOX_HIGH_WATER {
                break;
            }
            self.info.wake.notify_one();
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // (A snapshot's bytes do not count against the output limit.)
        self.append_outbox(bytes);
        self.info.wake.notify_one();
        true
    }

    /// Appends to the outbox: its new size, and whether it was empty.
    fn append_outbox(&self, bytes: &[u8]) -> (usize, bool) {
        let (size, was_empty) = {
            let mut outbox = self.info.outbox.lock();
            let was_empty = outbox.is_empty();
            outbox.extend_from_slice(bytes);
            (outbox.len(), was_empty)
        };
        self.info.omem.store(size, Relaxed);
        (size, was_empty)
    }

    /// Stream bytes, in order.
    fn send(&self, bytes: &[u8]) -> bool {
        let mut inner = self.inner.lock();
        if !inner.positioned {
            return true;
        }
        if !inner.streaming {
            inner.held.extend_from_slice(bytes);
            if self.info.over_output_limit(&self.limit, inner.held.len()) {
                self.over_limit();
                return false;
            }
            return true;
        }
        drop(inner);
        self.push(bytes)
    }

    /// The stream starts here for this replica: with `line` (its
    /// +FULLRESYNC) first in its outbox.
    fn position(&self, line: Option<&[u8]>) {
        let mut inner = self.inner.lock();
        if inner.positioned {
            return;
        }
        inner.positioned = true;
        self.started.store(true, SeqCst);
        if let Some(line) = line {
            drop(inner);
            self.push(line);
        }
    }

    pub fn positioned(&self) -> bool {
        self.started.load(SeqCst)
    }

    /// The snapshot is out: what was held, then the live stream, follow.
    pub fn start_streaming(&self) {
        let mut inner = self.inner.lock();
        let held = std::mem::take(&mut inner.held);
        inner.streaming = true;
        // (Pushed under the lock, so no newer byte overtakes them.)
        self.push(&held);
    }
}

/// The replication stream and its consumers.
pub struct Stream {
    pub replid: String,
    pub replid2: String,
    /// The first offset `replid2` is not valid for (-1: none).
    pub second_offset: i64,
    /// Bytes ever appended (Redis's `master_repl_offset`).
    pub offset: u64,
    pub backlog: Option<Backlog>,
    /// The database the stream's last command ran in (None: a SELECT
    /// comes first), as Redis's `slaveseldb`.
    selected: Option<usize>,
    pub feeds: Vec<Arc<ReplicaFeed>>,
    /// Snapshots of a master waiting to learn where the stream stood at
    /// their instant (see [`StreamMark`]).
    marks: Vec<Arc<MarkState>>,
    /// Where units are encoded (kept to save an allocation per unit).
    scratch: Vec<u8>,
}

impl Stream {
    /// Appends bytes and feeds them to every replica; replicas that are
    /// gone or over their limit are dropped.
    pub fn append(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.offset += bytes.len() as u64;
        if let Some(b) = self.backlog.as_mut() {
            b.push(bytes);
        }
        // (A closed connection's feed is pruned by the cron; a killed one
        // at once.)
        self.feeds
            .retain(|f| !f.info.killed.load(Relaxed) && f.send(bytes));
    }

    /// The offset of the first byte the backlog holds (Redis's
    /// `repl_backlog_first_byte_offset`).
    pub fn backlog_first_byte(&self) -> u64 {
        match &self.backlog {
            Some(b) => self.offset + 1 - b.histlen() as u64,
            None => 0,
        }
    }

    /// The bytes from offset `from` (1-based, as PSYNC asks) to the end,
    /// if the history has them all under `replid`.
    pub fn continue_from(&self, replid: &str, from: i64) -> Option<Vec<u8>> {
        let backlog = self.backlog.as_ref()?;
        let ours = replid == self.replid;
        let previous = replid == self.replid2 && from <= self.second_offset;
        if !ours && !previous {
            return None;
        }
        let first = self.backlog_first_byte() as i64;
        let end = self.offset as i64 + 1;
        if from < first || from > end {
            return None;
        }
        let skip = (from - first) as usize;
        Some(backlog.bytes.iter().skip(skip).copied().collect())
    }

    /// Where the stream stands, as an RDB file records it.
    fn saved_position(&self) -> SavedPosition {
        SavedPosition {
            stream_db: self.selected.map_or(0, |db| db as i64),
            replid: self.replid.clone(),
            offset: self.offset as i64,
        }
    }

    /// Settles the marks of the snapshots whose instant `seq` follows.
    fn settle_marks(&mut self, seq: u64) {
        if self.marks.iter().all(|m| m.seq.load(SeqCst) > seq) {
            return;
        }
        let here = self.saved_position();
        self.marks.retain(|m| {
            if m.seq.load(SeqCst) > seq {
                return true;
            }
            m.position.lock().get_or_insert_with(|| here.clone());
            false
        });
    }

    /// Positions a replica whose stream begins now.
    pub fn position(&mut self, feed: &ReplicaFeed) {
        // A replica's data came from a snapshot: the next command names
        // its database.
        self.selected = None;
        let line = format!("+FULLRESYNC {} {}\r\n", self.replid, self.offset);
        feed.position(feed.psync.then_some(line.as_bytes()));
    }

    /// A new history: replid2 takes over the old ID (what a promoted
    /// replica's own replicas continue with).
    pub fn shift_replid(&mut self) {
        self.replid2 = std::mem::replace(&mut self.replid, random_replid());
        self.second_offset = self.offset as i64 + 1;
        self.selected = None;
    }

    /// Drops every replica connection (they reconnect and resynchronize,
    /// partially when they can).
    pub fn disconnect_replicas(&mut self) {
        for f in self.feeds.drain(..) {
            f.info.kill();
        }
    }
}

/// The master link as a replica sees it (INFO's and ROLE's words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// Not connected; retrying.
    Connect,
    Connecting,
    /// PING, AUTH, REPLCONF, PSYNC.
    Handshake,
    /// Receiving the snapshot.
    Transfer,
    Connected,
}

impl LinkState {
    pub fn role_name(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Transfer => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// What a replica knows of its master and the transfer in progress.
pub struct Link {
    pub host: String,
    pub port: u16,
    pub state: LinkState,
    /// When the link last went down (ms; 0: it was never up).
    pub down_since_ms: i64,
    /// When anything last arrived from the master (ms).
    pub last_io_ms: i64,
    /// The snapshot's announced size (-1: an EOF-marked stream) and what
    /// has arrived of it.
    pub transfer_size: i64,
    pub transfer_read: u64,
    pub transfer_last_io_ms: i64,
    /// Bytes of the stream read from the master (`slave_read_repl_offset`).
    pub read_offset: u64,
}

/// Replication state of the server.
pub struct Replication {
    pub stream: Mutex<Stream>,
    /// Some while this server is a replica.
    pub link: Mutex<Option<Link>>,
    pub is_replica: AtomicBool,
    /// Bumped by every REPLICAOF: a link thread of an older generation
    /// stops.
    pub generation: AtomicU64,
    /// Held by a replica's link thread while it routes and forwards what it
    /// read; taken through [`Replication::quiesce`] by whoever needs the
    /// data to match the stream's offset.
    apply_lock: Mutex<()>,
    /// The replica's apply threads (started with the first link when there
    /// is more than one worker).
    lanes: std::sync::OnceLock<apply::Lanes>,
    /// The journal feeds the stream (attached at the first replica).
    pub attached: AtomicBool,
    /// Wakes WAIT and semi-synchronous replies when an ACK arrives.
    pub acks: Notify,
    pub sync_full: AtomicU64,
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
    /// Bytes read from and written to our master, handshakes included
    /// (parts of INFO's total_net_input_bytes and total_net_output_bytes:
    /// the link is not a worker's client).
    pub link_input_bytes: AtomicU64,
    pub link_output_bytes: AtomicU64,
    /// The part of `link_input_bytes` that was snapshots and streams
    /// (INFO's total_net_repl_input_bytes).
    pub net_repl_input_bytes: AtomicU64,
    /// On a replica, the database our master's stream is in at our offset
    /// (its last SELECT; -1 before any): saved in RDB files beside the
    /// offset (`repl-stream-db`) so a restart can continue the stream.
    pub master_stream_db: AtomicI64,
    /// The database a restored file named (-1: none), for the first link
    /// after start-up, which takes it.
    pub restored_stream_db: AtomicI64,
    /// When the last replica left (ms; for repl-backlog-ttl).
    pub no_replicas_since_ms: AtomicI64,
    /// A full sync waiting for more replicas (repl-diskless-sync-delay).
    pub pending_sync: Mutex<Option<Arc<master::SyncJob>>>,
    /// The stream's ID and offset name data this server holds (it was a
    /// master, or synced with one): a replica then asks to continue them.
    pub has_history: AtomicBool,
    /// See [`Replication::good_replicas`].
    pub good: AtomicUsize,
    /// FAILOVER's state.
    pub failover: failover::FailoverState,
    /// The link's next PSYNC asks the master to hand over (FAILOVER).
    pub failover_psync: AtomicBool,
}

impl Default for Replication {
    fn default() -> Self {
        Replication::new()
    }
}

impl Replication {
    pub fn new() -> Replication {
        Replication {
            stream: Mutex::new(Stream {
                replid: random_replid(),
                replid2: NO_REPLID.to_string(),
                second_offset: -1,
                offset: 0,
                backlog: None,
                selected: None,
                feeds: Vec::new(),
                marks: Vec::new(),
                scratch: Vec::new(),
            }),
            link: Mutex::new(None),
            is_replica: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            apply_lock: Mutex::new(()),
            lanes: std::sync::OnceLock::new(),
            attached: AtomicBool::new(false),
            acks: Notify::new(),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
            link_input_bytes: AtomicU64::new(0),
            link_output_bytes: AtomicU64::new(0),
            net_repl_input_bytes: AtomicU64::new(0),
            master_stream_db: AtomicI64::new(-1),
            restored_stream_db: AtomicI64::new(-1),
            no_replicas_since_ms: AtomicI64::new(unix_ms()),
            pending_sync: Mutex::new(None),
            has_history: AtomicBool::new(false),
            good: AtomicUsize::new(0),
            failover: Default::default(),
            failover_psync: AtomicBool::new(false),
        }
    }

    /// The link's lock with the apply threads drained: while it is held
    /// the data is exactly what the stream's offset says (nothing routed
    /// is still to be applied, nothing new is routed).
    pub fn quiesce(&self) -> parking_lot::MutexGuard<'_, ()> {
        let guard = self.apply_lock.lock();
        if let Some(lanes) = self.lanes.get() {
            lanes.drain();
        }
        guard
    }

    /// The apply threads, started on first use: one per worker thread
    /// (none with one worker: the link applies everything itself).
    pub fn lanes(&self, srv: &super::state::ServerState) -> &apply::Lanes {
        self.lanes.get_or_init(|| {
            let count = if srv.worker_threads > 1 {
                srv.worker_threads
            } else {
                0
            };
            apply::Lanes::start(srv, count)
        })
    }

    pub fn is_replica(&self) -> bool {
        self.is_replica.load(Relaxed)
    }

    /// Switches the role; returns whether it was a replica.
    pub fn set_replica(&self, on: bool) -> bool {
        crate::keyspace::table::set_replica_expiry(on);
        crate::util::log::set_replica_role(on);
        self.is_replica.swap(on, SeqCst)
    }

    /// The replicas that acknowledged `offset` or more.
    pub fn acked(&self, offset: u64) -> usize {
        self.stream
            .lock()
            .feeds
            .iter()
            .filter(|f| f.state() == FeedState::Online && f.ack_offset.load(Relaxed) >= offset)
            .count()
    }

    /// min-replicas-to-write's "good" replicas: online ones whose last
    /// ACK is at most min-replicas-max-lag old, as last counted (at each
    /// ACK and once a second, as Redis counts them), so a write's check
    /// is one load.
    pub fn good_replicas(&self) -> usize {
        self.good.load(Relaxed)
    }

    /// Counts the good replicas again (the caller holds the stream).
    pub fn refresh_good(&self, st: &Stream, max_lag_s: i64) {
        let now = unix_ms();
        let n = st
            .feeds
            .iter()
            .filter(|f| {
                f.state() == FeedState::Online && (now - f.ack_ms.load(Relaxed)) / 1000 <= max_lag_s
            })
            .count();
        self.good.store(n, Relaxed);
    }

    /// Whether a replica's master link is up (for MASTERDOWN).
    pub fn link_up(&self) -> bool {
        self.link
            .lock()
            .as_ref()
            .is_some_and(|l| l.state == LinkState::Connected)
    }
}

/// Feeds the journal's units into the stream while this server is a
/// master (a replica's stream is its master's bytes).
pub struct StreamFeeder {
    pub repl: Arc<Replication>,
}

impl crate::journal::Consumer for StreamFeeder {
    fn feed(&self, unit: &crate::journal::Unit) -> bool {
        if self.repl.is_replica() {
            return true;
        }
        let mut st = self.repl.stream.lock();
        let st = &mut *st;
        if !st.marks.is_empty() {
            st.settle_marks(unit.seq);
        }
        // Replicas whose snapshot's instant this unit follows start here.
        if st
            .feeds
            .iter()
            .any(|f| !f.positioned() && f.start_seq.load(Relaxed) <= unit.seq)
        {
            let starting: Vec<Arc<ReplicaFeed>> = st
                .feeds
                .iter()
                .filter(|f| !f.positioned() && f.start_seq.load(Relaxed) <= unit.seq)
                .cloned()
                .collect();
            for f in &starting {
                st.position(f);
            }
        }
        let mut bytes = std::mem::take(&mut st.scratch);
        bytes.clear();
        crate::journal::encode_unit(
            unit,
            crate::journal::target::REPL,
            &mut st.selected,
            &mut bytes,
        );
        st.append(&bytes);
        if bytes.capacity() <= 64 << 10 {
            st.scratch = bytes;
        }
        true
    }
}

/// Resizes the backlog (CONFIG SET repl-backlog-size).
pub fn backlog_size_changed(repl: &Replication, size: usize) {
    if let Some(b) = repl.stream.lock().backlog.as_mut() {
        b.resize(size);
    }
}

/// Creates the backlog if there is none (the first replica, or becoming
/// a replica), as Redis creates it.
pub fn ensure_backlog(repl: &Replication, size: usize) {
    let mut st = repl.stream.lock();
    if st.backlog.is_none() {
        st.backlog = Some(Backlog::new(size));
    }
}

/// Semi-synchronous replies need the stream's offsets from the first write
/// on, replicas or not: the stream is fed from the moment it is on.
pub fn semi_sync_changed(srv: &super::state::ServerState) {
    if srv.config.repl_semi_sync_replicas() > 0 {
        master::attach(srv);
    }
}

pub use crate::persistence::save::SavedPosition;

/// Where a replica stands in its master's stream, for an RDB file: to be
/// taken with the apply threads drained (`quiesce`), so that it is exactly
/// what a snapshot begun meanwhile holds. None on a replica that follows no
/// history yet.
pub fn replica_position(srv: &super::state::ServerState) -> Option<SavedPosition> {
    if !srv.repl.has_history.load(SeqCst) {
        return None;
    }
    let st = srv.repl.stream.lock();
    Some(SavedPosition {
        stream_db: srv.repl.master_stream_db.load(SeqCst).max(0),
        replid: st.replid.clone(),
        offset: st.offset as i64,
    })
}

struct MarkState {
    /// The first unit after the snapshot's instant (MAX until fixed).
    seq: AtomicU64,
    position: Mutex<Option<SavedPosition>>,
}

/// A master's snapshot instant in its stream. The stream's offset runs
/// behind the keyspace (the feeder encodes units after they are applied),
/// so where the stream stood at the instant is learnt later: the feeder
/// records it at the first unit after the instant, or, while none has
/// come, it is where the stream stands once every unit before the instant
/// is fed.
pub struct StreamMark {
    repl: Arc<Replication>,
    state: Arc<MarkState>,
}

impl StreamMark {
    /// A mark for a master's snapshot, if the master is part of a
    /// replication chain (it has a backlog): only then does Redis record
    /// its stream in an RDB file.
    pub fn for_master_snapshot(srv: &super::state::ServerState) -> Option<StreamMark> {
        if srv.repl.is_replica() {
            return None;
        }
        let mut st = srv.repl.stream.lock();
        st.backlog.as_ref()?;
        let state = Arc::new(MarkState {
            seq: AtomicU64::new(u64::MAX),
            position: Mutex::new(None),
        });
        st.marks.push(state.clone());
        Some(StreamMark {
            repl: srv.repl.clone(),
            state,
        })
    }

    /// At the snapshot's instant: `seq` is the first unit after it.
    pub fn fix(&self, seq: u64) {
        self.state.seq.store(seq, SeqCst);
    }

    /// Where the stream stood at the instant. None if that cannot be
    /// known (the server turned replica, or the units before the instant
    /// never arrive): the file then records no stream, which is always
    /// safe (a replica of this master then syncs in full).
    pub fn position(&self, srv: &super::state::ServerState) -> Option<SavedPosition> {
        let seq = self.state.seq.load(SeqCst);
        let began = Instant::now();
        loop {
            if let Some(p) = self.state.position.lock().clone() {
                return Some(p);
            }
            if srv.repl.is_replica() || began.elapsed() > Duration::from_secs(10) {
                return None;
            }
            if !srv.repl.attached.load(SeqCst) {
                // Nothing feeds the stream: it stands where it stood.
                return Some(srv.repl.stream.lock().saved_position());
            }
            let mut here = None;
            srv.journal.if_fed_below(seq, || {
                let st = srv.repl.stream.lock();
                let settled = self.state.position.lock().clone();
                here = Some(settled.unwrap_or_else(|| st.saved_position()));
            });
            if here.is_some() {
                return here;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for StreamMark {
    fn drop(&mut self) {
        self.repl
            .stream
            .lock()
            .marks
            .retain(|m| !Arc::ptr_eq(m, &self.state));
    }
}

/// At start-up, a master whose RDB file names the stream it was part of
/// keeps that history as its previous one: replicas that followed it
/// continue with a partial resync from the saved offset, under a new
/// replication ID (as Redis 7 masters do).
pub fn continue_history_as_master(srv: &super::state::ServerState, saved: &SavedPosition) {
    if !saved.is_usable() {
        return;
    }
    {
        let mut st = srv.repl.stream.lock();
        st.replid2 = saved.replid.clone();
        st.second_offset = saved.offset + 1;
        st.offset = saved.offset as u64;
        st.backlog = Some(Backlog::new(srv.config.repl_backlog_size() as usize));
        st.selected = None;
    }
    srv.repl.no_replicas_since_ms.store(unix_ms(), SeqCst);
    master::attach_feeder(srv);
}

/// At start-up, a replica whose RDB file names the stream it came from
/// continues that stream: its next PSYNC asks for the bytes after the
/// saved offset (as Redis synthesizes a cached master from the file).
pub fn restore_position(srv: &super::state::ServerState, saved: &SavedPosition) {
    if !saved.is_usable() {
        return;
    }
    let mut st = srv.repl.stream.lock();
    st.replid = saved.replid.clone();
    st.replid2 = NO_REPLID.to_string();
    st.second_offset = -1;
    st.offset = saved.offset as u64;
    st.backlog = Some(Backlog::new(srv.config.repl_backlog_size() as usize));
    drop(st);
    srv.repl.master_stream_db.store(saved.stream_db, SeqCst);
    srv.repl.restored_stream_db.store(saved.stream_db, SeqCst);
    srv.repl.has_history.store(true, SeqCst);
    crate::util::log::notice(
        "Before turning into a replica, using my own master parameters to synthesize a cached master: I may be able to synchronize with the new master with just a partial transfer.",
    );
}

/// The `replicaof` directive, once the data is loaded (and the
/// semi-synchronous mode, if configured).
pub fn follow_configured_master(srv: &super::state::ServerState) {
    semi_sync_changed(srv);
    if let Some((host, port)) = srv.config.replicaof() {
        srv.repl.set_replica(true);
        srv.repl.generation.fetch_add(1, SeqCst);
        replica::start(
            srv,
            String::from_utf8_lossy(&host).into_owned(),
            port as u16,
        );
    }
}

/// REPLICAOF host port: follow a new master. False when it already does.
pub fn follow(srv: &super::state::ServerState, host: &str, port: u16) -> bool {
    {
        let link = srv.repl.link.lock();
        if let Some(l) = link.as_ref() {
            if l.host.eq_ignore_ascii_case(host) && l.port == port {
                return false;
            }
        }
    }
    let was_master = !srv.repl.set_replica(true);
    srv.repl.generation.fetch_add(1, SeqCst);
    {
        let mut st = srv.repl.stream.lock();
        st.disconnect_replicas();
        if was_master {
            // Our own history is what we ask the new master to continue.
            srv.repl.has_history.store(true, SeqCst);
        }
    }
    srv.config
        .set_replicaof(Some((host.as_bytes().to_vec(), i64::from(port))));
    crate::util::log::notice(&format!("Connecting to MASTER {host}:{port}"));
    replica::start(srv, host.to_string(), port);
    true
}

/// REPLICAOF NO ONE: this server becomes a master, with a new history
/// whose previous ID its replicas can continue.
pub fn stop_following(srv: &super::state::ServerState) {
    if !srv.repl.is_replica.load(SeqCst) {
        return;
    }
    // (The link routes and forwards what it read under the apply lock,
    // and the lanes are drained: none of the old master's commands is half
    // done, or still to be applied, once we hold it.)
    let applying = srv.repl.quiesce();
    srv.repl.generation.fetch_add(1, SeqCst);
    *srv.repl.link.lock() = None;
    srv.config.set_replicaof(None);
    {
        let mut st = srv.repl.stream.lock();
        st.shift_replid();
        st.disconnect_replicas();
        crate::util::log::notice(&format!(
            "Setting secondary replication ID to {}, valid up to offset: {}. New replication ID is {}",
            st.replid2, st.second_offset, st.replid
        ));
    }
    srv.repl.set_replica(false);
    drop(applying);
    srv.repl.has_history.store(true, SeqCst);
    master::attach(srv);
    crate::util::log::notice("MASTER MODE enabled (user request)");
}
