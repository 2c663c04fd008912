//! Per-connection state. [`Client`] is owned by the connection's task and
//! touched by nobody else; [`ClientInfo`] is the part other clients may read
//! or act on (CLIENT LIST, CLIENT KILL), kept in the [`ClientRegistry`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::stats::WorkerStats;

/// CLIENT REPLY modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Skip the reply of the next command only.
    SkipNext,
    /// The command being run is the skipped one.
    Skipping,
}

/// State only the connection's own task touches.
pub struct Client {
    /// The AOF loader's client: commands run without the admission
    /// checks (they were admitted when first written), as Redis's fake
    /// AOF client runs them.
    pub replaying: bool,
    /// The client sent SYNC: it receives the snapshot and then the effects
    /// stream in its outbox, and its own commands get no replies.
    pub syncing: bool,
    /// A replica's link to its master runs the master's stream as this
    /// client: no admission checks, no replies, expired keys still seen.
    pub from_master: bool,
    /// What a replica said of itself with REPLCONF before PSYNC.
    pub replica_hello: Option<crate::server::replication::master::ReplicaHello>,
    /// WAIT, set by its handler: the task waits for this many replicas to
    /// acknowledge this offset (until the deadline), then replies.
    pub wait_acks: Option<(u64, usize, Option<std::time::Instant>)>,
    /// SHUTDOWN, set by its handler when it must wait for replicas: the
    /// task waits, then shuts down (or replies with the error).
    pub shutdown_request: Option<super::shutdown::ShutdownFlags>,
    /// The last effects unit of this client that changed data (what a
    /// semi-synchronous reply waits for), and the last one waited for.
    pub semi_sync_unit: u64,
    pub semi_synced: AtomicU64,
    /// The highest effects unit this client's commands produced that its
    /// replies must wait to see on disk (`appendfsync always`); 0: none.
    pub awaits_durable: u64,
    pub id: u64,
    pub db: usize,
    pub authenticated: bool,
    /// The user the client is logged in as (the default user until AUTH).
    pub user: Arc<crate::acl::User>,
    pub reply_mode: ReplyMode,
    pub no_evict: bool,
    pub no_touch: bool,
    /// Set by QUIT and protocol errors: flush replies, then close.
    pub close_after_reply: bool,
    /// Close without sending anything more (output limit exceeded).
    pub close_now: bool,
    /// While a woken blocked command re-runs: the key that became ready
    /// first.
    pub woken_by: Option<crate::keyspace::Key>,
    /// While a woken blocked command re-runs: a stream it waited on went
    /// away (see `BlockingRegistry::signal_stream_gone`).
    pub woken_stream_gone: bool,
    /// Set by a woken pop whose key came to hold another type: its
    /// re-block passes the wake-up on (see `BlockRequest::pass_wakeups`).
    pub woken_wrong_type: bool,
    /// A woken blocked command is being run again (see `dispatch::call`).
    pub rerunning: bool,
    /// The command about to run has waited long enough for other clients
    /// (see `CommandSpec::waits_for_others`).
    pub done_waiting: bool,
    /// While it waits: each receiver it found busy, with the input
    /// batches that receiver had run then (see
    /// [`ClientInfo::input_batches`]).
    pub others_seen: Vec<(u64, u64)>,
    pub info: Arc<ClientInfo>,
    pub worker: Arc<WorkerStats>,
    /// Set by MONITOR: the task turns into a monitor feed after the reply.
    /// After MONITOR (until RESET): command lines arrive in the outbox.
    pub monitoring: bool,
    /// Set by a blocking command that found nothing to serve: the task
    /// waits as described, then re-runs the command.
    pub block: Option<super::blocking::BlockRequest>,
    /// The blocked clients the last command woke: they are served before
    /// this client's next command runs, as in Redis (see `server::blocking`).
    pub fed: Option<Arc<super::blocking::FeedBatch>>,
    /// While a woken blocked command re-runs: the batch of the wake-up it
    /// acts on, which the clients it wakes in turn join.
    pub serving: Option<Arc<super::blocking::FeedBatch>>,
    /// Arguments of the running command to hide from MONITOR and the slow
    /// log (bit i = argument i), set by handlers of AUTH and friends.
    pub redacted: u64,
    /// The MONITOR feed, registered by the MONITOR command itself.
    /// Pub/sub subscriptions.
    pub subs: super::pubsub::Subscriptions,
    /// MULTI state: the queued commands, WATCHed keys.
    pub multi: TxState,
    /// CLIENT TRACKING state.
    pub tracking: super::tracking::TrackingState,
}

/// One client's transaction state (MULTI/EXEC/WATCH, in
/// `commands::multi`).
#[derive(Default)]
pub struct TxState {
    /// Between MULTI and EXEC/DISCARD.
    pub active: bool,
    /// Queued commands: command id and arguments.
    pub queued: Vec<(usize, Vec<Vec<u8>>)>,
    /// A command failed to queue (unknown, wrong arity...): EXEC aborts.
    pub dirty_queue: bool,
    /// A queued command is one Redis refuses when out of memory (then so
    /// is the EXEC).
    /// A queued command writes (EXEC is then refused on MISCONF).
    pub queued_write: bool,
    /// A queued command lacks the `stale` flag (EXEC is then refused on
    /// MASTERDOWN).
    pub queued_denies_stale: bool,
    pub queued_denyoom: bool,
    /// Set by any change to a watched key.
    pub watch_flag: crate::keyspace::WatchFlag,
    /// (database, key) of every WATCHed key.
    pub watched: Vec<(usize, crate::keyspace::Key)>,
    /// The commands of an EXEC are running (blocking commands do not
    /// block, as in Redis).
    pub in_exec: bool,
}

impl Client {
    /// The AOF loader or the master link: its commands were admitted
    /// where they were first run, so they skip admission and are obeyed
    /// as written (Redis's mustObeyClient).
    #[inline]
    pub fn must_obey(&self) -> bool {
        self.replaying || self.from_master
    }

    /// Logs the client in as `user`.
    pub fn log_in(&mut self, user: Arc<crate::acl::User>) {
        self.authenticated = true;
        self.info.authenticated.store(true, Relaxed);
        *self.info.user.lock() = user.clone();
        self.user = user;
    }

    /// A newly connected client, served by the worker `worker` counts for.
    pub fn new(
        _srv: &super::state::ServerState,
        id: u64,
        info: Arc<ClientInfo>,
        worker: Arc<WorkerStats>,
    ) -> Client {
        let user = info.user.lock().clone();
        Client {
            id,
            db: 0,
            authenticated: crate::acl::acl().starts_authenticated(),
            user,
            reply_mode: ReplyMode::On,
            no_evict: false,
            no_touch: false,
            close_after_reply: false,
            close_now: false,
            woken_by: None,
            woken_stream_gone: false,
            woken_wrong_type: false,
            rerunning: false,
            done_waiting: false,
            others_seen: Vec::new(),
            replaying: false,
            awaits_durable: 0,
            syncing: false,
            from_master: false,
            replica_hello: None,
            wait_acks: None,
            shutdown_request: None,
            semi_sync_unit: 0,
            semi_synced: AtomicU64::new(0),
            worker,
            monitoring: false,
            block: None,
            fed: None,
            serving: None,
            redacted: 0,
            subs: Default::default(),
            multi: TxState {
                watch_flag: info.dirty_cas.clone(),
                ..Default::default()
            },
            tracking: Default::default(),
            info,
        }
    }

    /// Whether other clients may send this one messages (it must then
    /// watch its outbox as well as its socket).
    pub fn receives_pushes(&self) -> bool {
        !self.subs.is_empty() || self.tracking.on || self.monitoring || self.syncing
    }

    /// Whether messages may be queued for this client at any moment: the
    /// above, or any RESP3 client (another client's tracking may redirect
    /// its invalidations here). Such a client is woken to send them, and
    /// they go out before the reply to its next command, as in Redis.
    pub fn may_be_pushed_to(&self) -> bool {
        self.receives_pushes() || self.info.resp.load(Relaxed) == 3
    }

    /// RESP2 subscribed mode: only (un)subscribe, PING, QUIT, RESET.
    pub fn in_resp2_pubsub_mode(&self, resp3: bool) -> bool {
        !resp3 && !self.subs.is_empty()
    }
}

/// Where a client connected from (or to): a TCP address, or the Unix
/// socket's path, which Redis shows as `path:0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerAddr {
    Tcp(SocketAddr),
    Unix(Arc<str>),
}

impl PeerAddr {
    /// A loopback address or a Unix socket: what DEBUG's and protected
    /// mode's "local connection" means.
    pub fn is_local(&self) -> bool {
        match self {
            PeerAddr::Tcp(a) => a.ip().is_loopback(),
            PeerAddr::Unix(_) => true,
        }
    }

    pub fn is_unix(&self) -> bool {
        matches!(self, PeerAddr::Unix(_))
    }
}

impl std::fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerAddr::Tcp(a) => write!(f, "{a}"),
            PeerAddr::Unix(path) => write!(f, "{path}:0"),
        }
    }
}

/// The publicly visible side of a client.
pub struct ClientInfo {
    pub id: u64,
    /// Set when a key this client WATCHes changes (shared with its
    /// transaction state): CLIENT LIST's `d` flag.
    pub dirty_cas: crate::keyspace::WatchFlag,
    pub addr: PeerAddr,
    pub laddr: PeerAddr,
    pub fd: i32,
    pub created_ms: i64,
    pub name: Mutex<Option<Vec<u8>>>,
    pub db: AtomicUsize,
    pub last_interaction_ms: AtomicI64,
    /// Id of the last command run (commands::by_id).
    pub last_cmd: AtomicUsize,
    pub resp: AtomicU8,
    pub qbuf: AtomicUsize,
    pub qbuf_free: AtomicUsize,
    /// The reply buffer's size (`rbs`), as of the last write.
    pub rbs: AtomicUsize,
    /// The most replies the buffer held at once (`rbp`) since
    /// `rbp_since_ms`; restarted every 5 seconds, as Redis restarts its
    /// peak (reply-buffer-peak-reset-time).
    pub rbp: AtomicUsize,
    pub rbp_since_ms: AtomicI64,
    pub omem: AtomicUsize,
    pub total_in: AtomicU64,
    pub total_out: AtomicU64,
    pub is_monitor: AtomicBool,
    /// A replica connection (PSYNC/SYNC): flag `S`, CLIENT KILL TYPE
    /// replica.
    pub is_replica: AtomicBool,
    /// A replica's link to its master: flag `M`, CLIENT KILL TYPE master.
    pub is_master: AtomicBool,
    /// Blocked by BLPOP and friends (flag `b` in CLIENT LIST).
    pub blocked: AtomicBool,
    pub no_evict: AtomicBool,
    pub no_touch: AtomicBool,
    pub authenticated: AtomicBool,
    /// The user it is logged in as (CLIENT LIST `user`, CLIENT KILL USER,
    /// ACL DELUSER).
    pub user: Mutex<Arc<crate::acl::User>>,
    /// Set by CLIENT KILL; the task closes at its next wake-up.
    pub killed: AtomicBool,
    /// The task closes once its outbox is written (an rdb-only replica
    /// after its snapshot).
    pub close_when_written: AtomicBool,
    /// Wakes a task that waits on something other than its socket (MONITOR).
    pub wake: Notify,
    /// Whether `fd` still belongs to this client: CLIENT KILL shuts the
    /// socket down only while it does, so a reused descriptor is never hit.
    pub fd_open: Mutex<bool>,
    /// A subscriber's task is reading its socket or running what it read
    /// (see [`ClientInfo::may_have_input`]).
    pub input_in_hand: AtomicBool,
    /// How many batches of input read from the socket its task has run: a
    /// receiver that keeps sending cannot hold a PUBLISH for longer than
    /// two of them (see `PubSub::receivers_may_have_input`).
    pub input_batches: AtomicU64,
    /// Messages other clients sent this one (pub/sub, invalidations),
    /// encoded, waiting for its task to write them ([`super::pubsub`]).
    pub outbox: Mutex<Vec<u8>>,
    /// When the outbox first went over the soft output limit (0: it is
    /// under it).
    pub obuf_soft_since_ms: AtomicI64,
    /// Subscribed channels, patterns and shard channels (CLIENT LIST).
    pub sub_counts: [AtomicUsize; 3],
    /// Keys this client WATCHes (for its memory, as Redis counts it).
    pub watched_keys: AtomicUsize,
    /// Commands queued in MULTI, -1 outside MULTI (CLIENT LIST `multi`).
    pub multi_len: AtomicI64,
    /// What Redis counts as the queued commands' memory (CLIENT LIST
    /// `multi-mem`): their arguments' bytes plus a pointer per argument.
    pub multi_mem: AtomicUsize,
    /// The running (or blocked) command's argument bytes (`argv-mem`).
    pub argv_mem: AtomicUsize,
    /// CLIENT TRACKING redirect target (-1 none), for CLIENT LIST `redir`.
    pub redirect: AtomicI64,
    /// An invalidation could not reach this client's REDIRECT target.
    pub redirect_broken: AtomicBool,
    /// Tracking flags for CLIENT LIST (`t`, `R`, `B`...), as letters.
    pub tracking_flags: Mutex<String>,
}

impl ClientInfo {
    pub fn new(id: u64, addr: PeerAddr, laddr: PeerAddr, fd: i32, now_ms: i64) -> ClientInfo {
        ClientInfo {
            dirty_cas: Default::default(),
            id,
            addr,
            laddr,
            fd,
            created_ms: now_ms,
            name: Mutex::new(None),
            db: AtomicUsize::new(0),
            last_interaction_ms: AtomicI64::new(now_ms),
            last_cmd: AtomicUsize::new(usize::MAX),
            resp: AtomicU8::new(2),
            qbuf: AtomicUsize::new(0),
            qbuf_free: AtomicUsize::new(0),
            rbs: AtomicUsize::new(0),
            rbp: AtomicUsize::new(0),
            rbp_since_ms: AtomicI64::new(now_ms),
            omem: AtomicUsize::new(0),
            total_in: AtomicU64::new(0),
            total_out: AtomicU64::new(0),
            is_monitor: AtomicBool::new(false),
            is_replica: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            authenticated: AtomicBool::new(false),
            user: Mutex::new(crate::acl::acl().default_user().clone()),
            killed: AtomicBool::new(false),
            close_when_written: AtomicBool::new(false),
            wake: Notify::new(),
            is_master: AtomicBool::new(false),
            fd_open: Mutex::new(true),
            input_in_hand: AtomicBool::new(false),
            input_batches: AtomicU64::new(0),
            outbox: Mutex::new(Vec::new()),
            obuf_soft_since_ms: AtomicI64::new(0),
            sub_counts: Default::default(),
            watched_keys: AtomicUsize::new(0),
            multi_len: AtomicI64::new(-1),
            multi_mem: AtomicUsize::new(0),
            argv_mem: AtomicUsize::new(0),
            redirect: AtomicI64::new(-1),
            redirect_broken: AtomicBool::new(false),
            tracking_flags: Mutex::new(String::new()),
        }
    }

    /// Closes the connection once what its outbox holds now is written.
    pub fn close_when_written(&self) {
        self.close_when_written.store(true, SeqCst);
        self.wake.notify_one();
    }

    /// Disconnects the client: shutting the socket down makes the owning
    /// task's pending read return, so the hot read loop needs no extra
    /// wake-up source.
    pub fn kill(&self) {
        self.killed.store(true, Relaxed);
        let open = self.fd_open.lock();
        if *open {
            // SAFETY: the descriptor is still owned by this client's open
            // socket (checked under the same lock the task takes before
            // closing it); shutdown(2) does not close or free it.
            unsafe {
                libc::shutdown(self.fd, libc::SHUT_RDWR);
            }
        }
        drop(open);
        self.wake.notify_one();
    }

    /// Whether a command this client sent may not have run yet: bytes wait
    /// in its socket, or its task has read them and not finished running
    /// them (`input_in_hand`, set before each read). Checked in that order,
    /// so input read between the two looks is still seen. Costs a system
    /// call when the socket must be asked.
    pub fn may_have_input(&self) -> bool {
        if self.input_in_hand.load(SeqCst) {
            return true;
        }
        let open = self.fd_open.lock();
        let mut unread: libc::c_int = 0;
        // SAFETY: the descriptor is still this client's open socket
        // (checked under the lock the task takes before closing it);
        // FIONREAD only writes the count into `unread`.
        let asked = *open && unsafe { libc::ioctl(self.fd, libc::FIONREAD, &mut unread) } == 0;
        drop(open);
        (asked && unread > 0) || self.input_in_hand.load(SeqCst)
    }

    /// Whether a command this client sent before now may still not have
    /// run, as [`may_have_input`](Self::may_have_input) judges it, given
    /// `seen`: the batches (`input_batches`) it had run when the asker
    /// first found it busy, which it records there. Two more batches since
    /// settle it: the one it was running then, and the one that read what
    /// was waiting in its socket.
    pub fn still_has_input(&self, seen: &mut Vec<(u64, u64)>) -> bool {
        let batches = self.input_batches.load(SeqCst);
        if let Some(&(_, first)) = seen.iter().find(|(id, _)| *id == self.id) {
            return batches < first + 2 && self.may_have_input();
        }
        let busy = self.may_have_input();
        if busy {
            seen.push((self.id, batches));
        }
        busy
    }

    /// Whether an outbox of `size` bytes breaks `limit`: at or past the hard
    /// limit, or at or past the soft one for longer than its seconds (the
    /// time it went over is kept; it is forgotten once under again).
    pub fn over_output_limit(&self, limit: &crate::config::ObufLimit, size: usize) -> bool {
        let size = size as u64;
        if limit.hard_bytes > 0 && size >= limit.hard_bytes {
            return true;
        }
        if limit.soft_bytes > 0 && size >= limit.soft_bytes {
            let now = super::state::unix_ms();
            let since = self.obuf_soft_since_ms.load(Relaxed);
            if since == 0 {
                self.obuf_soft_since_ms.store(now, Relaxed);
                return false;
            }
            return (now - since) as u64 > limit.soft_seconds * 1000;
        }
        if self.obuf_soft_since_ms.load(Relaxed) != 0 {
            self.obuf_soft_since_ms.store(0, Relaxed);
        }
        false
    }

    /// Called by the owning task just before its socket is closed.
    pub fn mark_closed(&self) {
        *self.fd_open.lock() = false;
    }

    /// Whether the connection is gone (closed, or killed and closing).
    pub fn is_gone(&self) -> bool {
        self.killed.load(Relaxed) || !*self.fd_open.lock()
    }

    /// Notes a batch of `len` reply bytes about to be written, for `rbp`.
    /// (The clock is the last command's, read anyway by the dispatcher.)
    pub fn note_reply_buffer(&self, len: usize) {
        let now = self.last_interaction_ms.load(Relaxed);
        if now - self.rbp_since_ms.load(Relaxed) >= RBP_RESET_MS {
            self.rbp_since_ms.store(now, Relaxed);
            self.rbp.store(len, Relaxed);
        } else if len > self.rbp.load(Relaxed) {
            self.rbp.store(len, Relaxed);
        }
    }

    /// What the client's buffers hold (CLIENT LIST `tot-mem`, INFO's
    /// mem_clients_normal, client eviction): the query and reply buffers,
    /// the outbox, the running command's and the queued commands'
    /// arguments, and what Redis counts for its watched keys and
    /// subscriptions.
    pub fn total_memory(&self) -> usize {
        self.qbuf.load(Relaxed)
            + self.qbuf_free.load(Relaxed)
            + self.rbs.load(Relaxed)
            + self.omem.load(Relaxed)
            + self.argv_mem.load(Relaxed)
            + self.multi_mem.load(Relaxed)
            + self.bookkeeping_memory()
    }

    /// Redis's per-client overhead of WATCH and subscriptions (a list node
    /// and a watchedKey per watched key; a list node per pattern; a dict
    /// entry per channel and a pointer per dict slot), the names
    /// themselves not counted: they are shared. Without it a client that
    /// watches or subscribes without end would never be evicted.
    fn bookkeeping_memory(&self) -> usize {
        const LIST_NODE: usize = 24;
        const WATCHED_KEY: usize = 24;
        const DICT_ENTRY: usize = 24;
        const SLOT: usize = 8;
        let dict = |n: usize| {
            if n == 0 {
                0
            } else {
                n * DICT_ENTRY + n.next_power_of_two().max(4) * SLOT
            }
        };
        self.watched_keys.load(Relaxed) * (LIST_NODE + WATCHED_KEY)
            + self.sub_counts[1].load(Relaxed) * LIST_NODE
            + dict(self.sub_counts[0].load(Relaxed))
            + dict(self.sub_counts[2].load(Relaxed))
    }

    /// One CLIENT LIST / CLIENT INFO line, with Redis 7.0's fields in order.
    pub fn describe(&self, now_ms: i64) -> String {
        self.describe_with_pending(now_ms, 0)
    }

    /// [`Self::describe`] with `obl`, the replies not yet written: only the
    /// client's own task knows them (its CLIENT LIST/INFO counts what the
    /// batch has replied so far, as Redis's does); others show 0, as they
    /// are written at the end of each batch.
    pub fn describe_with_pending(&self, now_ms: i64, obl: usize) -> String {
        let name = self
            .name
            .lock()
            .as_ref()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        let cmd = match crate::commands::by_id(self.last_cmd.load(Relaxed)) {
            Some((n, _)) => n.to_string(),
            None => "NULL".to_string(),
        };
        // In Redis's order.
        let mut flags = String::new();
        if self.is_replica.load(Relaxed) {
            flags.push('S');
        }
        if self.is_monitor.load(Relaxed) {
            flags.push('O');
        }
        if self.is_master.load(Relaxed) {
            flags.push('M');
        }
        if self.sub_counts.iter().any(|c| c.load(Relaxed) > 0) {
            flags.push('P');
        }
        if self.multi_len.load(Relaxed) >= 0 {
            flags.push('x');
        }
        if self.blocked.load(Relaxed) {
            flags.push('b');
        }
        {
            // 't', then 'R' once the redirect target was found gone, then 'B'.
            let tracking = self.tracking_flags.lock();
            let mut chars = tracking.chars();
            if let Some(t) = chars.next() {
                flags.push(t);
                if self.redirect_broken.load(Relaxed) {
                    flags.push('R');
                }
                flags.extend(chars);
            }
        }
        if self.dirty_cas.load(Relaxed) {
            flags.push('d');
        }
        if self.addr.is_unix() {
            flags.push('U');
        }
        if self.no_evict.load(Relaxed) {
            flags.push('e');
        }
        if self.no_touch.load(Relaxed) {
            flags.push('T');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let age = (now_ms - self.created_ms).max(0) / 1000;
        let idle = (now_ms - self.last_interaction_ms.load(Relaxed)).max(0) / 1000;
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events=r cmd={} user={} redir={} resp={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            name,
            age,
            idle,
            flags,
            self.db.load(Relaxed),
            self.sub_counts[0].load(Relaxed),
            self.sub_counts[1].load(Relaxed),
            self.sub_counts[2].load(Relaxed),
            self.multi_len.load(Relaxed),
            self.qbuf.load(Relaxed),
            self.qbuf_free.load(Relaxed),
            self.argv_mem.load(Relaxed),
            self.multi_mem.load(Relaxed),
            self.rbs.load(Relaxed),
            self.rbp.load(Relaxed),
            obl,
            usize::from(self.omem.load(Relaxed) > 0),
            self.omem.load(Relaxed),
            self.total_memory() + obl,
            cmd,
            String::from_utf8_lossy(&self.user.lock().name),
            self.redirect.load(Relaxed),
            self.resp.load(Relaxed),
        )
    }
}

/// How long a reply buffer peak (`rbp`) stands: Redis's default
/// reply-buffer-peak-reset-time.
const RBP_RESET_MS: i64 = 5000;

/// All connected clients by id.
#[derive(Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    next_id: AtomicU64,
    connected: AtomicUsize,
}

impl ClientRegistry {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Relaxed) + 1
    }

    pub fn register(&self, info: Arc<ClientInfo>) {
        self.clients.lock().insert(info.id, info);
        self.connected.fetch_add(1, Relaxed);
    }

    pub fn unregister(&self, id: u64) {
        if self.clients.lock().remove(&id).is_some() {
            self.connected.fetch_sub(1, Relaxed);
        }
    }

    pub fn connected(&self) -> usize {
        self.connected.load(Relaxed)
    }

    pub fn snapshot(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().values().cloned().collect()
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }
}
