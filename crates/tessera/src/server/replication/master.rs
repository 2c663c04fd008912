//! The master's side: PSYNC and SYNC, full synchronization (a snapshot to
//! disk or straight to the sockets), partial resynchronization from the
//! backlog, REPLCONF ACK, WAIT, and the replication cron (PINGs, replica
//! timeouts, the backlog's time to live).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{FeedState, ReplicaFeed, StreamFeeder};
use crate::persistence::save;
use crate::server::client::{Client, PeerAddr, ReplyMode};
use crate::server::state::{unix_ms, ServerState};
use crate::util::log;

/// What a replica told the master of itself before PSYNC (REPLCONF).
#[derive(Default, Clone)]
pub struct ReplicaHello {
    pub listening_port: u16,
    pub ip_address: Option<String>,
    pub capa_eof: bool,
    pub capa_psync2: bool,
    /// REPLCONF rdb-only 1: the snapshot, then the connection is closed
    /// (redis-cli --rdb, --functions-rdb).
    pub rdb_only: bool,
    /// What REPLCONF rdb-filter-only left out of its snapshot.
    pub filter: RdbFilter,
}

/// The parts of the snapshot a replica asked to leave out.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub struct RdbFilter {
    pub exclude_keys: bool,
    pub exclude_functions: bool,
}

impl RdbFilter {
    pub fn filters(&self) -> bool {
        self.exclude_keys || self.exclude_functions
    }
}

/// A full synchronization: one snapshot sent to the replicas that joined
/// it before it began.
pub struct SyncJob {
    diskless: bool,
    filter: RdbFilter,
    feeds: Mutex<Vec<Arc<ReplicaFeed>>>,
    began: AtomicBool,
    created: Instant,
}

/// Attaches the stream to the journal (the first replica).
pub fn attach(srv: &ServerState) {
    super::ensure_backlog(&srv.repl, srv.config.repl_backlog_size() as usize);
    if attach_feeder(srv) {
        let st = srv.repl.stream.lock();
        log::notice(&format!(
            "Replication backlog created, my new replication IDs are '{}' and '{}'",
            st.replid, st.replid2
        ));
    }
}

/// Feeds the stream from the journal from now on; false if it already was.
pub fn attach_feeder(srv: &ServerState) -> bool {
    if srv.repl.attached.swap(true, SeqCst) {
        return false;
    }
    let feeder: Arc<dyn crate::journal::Consumer> = Arc::new(StreamFeeder {
        repl: srv.repl.clone(),
    });
    srv.journal.attach(feeder);
    true
}

fn replica_addr(client: &Client, hello: &ReplicaHello) -> String {
    if let Some(ip) = &hello.ip_address {
        return ip.clone();
    }
    match &client.info.addr {
        PeerAddr::Tcp(a) => a.ip().to_string(),
        PeerAddr::Unix(p) => p.to_string(),
    }
}

fn replica_name(client: &Client, hello: &ReplicaHello) -> String {
    replica_label(&replica_addr(client, hello), hello.listening_port)
}

/// A replica as Redis's log lines name it.
pub fn replica_label(ip: &str, port: u16) -> String {
    if port == 0 {
        format!("{ip}:<unknown-replica-port>")
    } else {
        format!("{ip}:{port}")
    }
}

/// Turns the client into a replica connection: no replies to what it
/// sends (its ACKs), the stream in its outbox.
fn become_replica(client: &mut Client) {
    client.syncing = true;
    client.reply_mode = ReplyMode::Off;
    client
        .info
        .is_replica
        .store(true, std::sync::atomic::Ordering::Relaxed);
}

/// PSYNC replid offset (or SYNC when `psync` is None), with replies to
/// earlier commands still waiting to be written when `pending_output`.
pub fn psync(
    srv: &ServerState,
    client: &mut Client,
    psync: Option<(&[u8], &[u8])>,
    pending_output: bool,
) -> Result<(), String> {
    if client.syncing {
        return Ok(());
    }
    if srv.repl.failover.lock().phase != super::failover::Phase::None {
        return Err("NOMASTERLINK Can't SYNC while failing over".into());
    }
    if srv.repl.is_replica() && !srv.repl.link_up() {
        return Err("NOMASTERLINK Can't SYNC while not connected with my master".into());
    }
    // (The stream's first bytes must be the first the replica reads.)
    if pending_output {
        return Err("ERR SYNC and PSYNC are invalid with pending output".into());
    }
    let hello = client.replica_hello.clone().unwrap_or_default();
    // A filtered snapshot is not the stream's base: it is never written
    // to disk for other replicas to share, so it needs the EOF form.
    if hello.filter.filters() && !hello.capa_eof {
        return Err("ERR Filtered replica requires EOF capability".into());
    }
    let name = replica_name(client, &hello);
    log::notice(&format!("Replica {name} asks for synchronization"));
    let limit = srv
        .config
        .client_output_buffer_limit(crate::config::ClientClass::Replica);
    let feed = Arc::new(ReplicaFeed::new(
        client.info.clone(),
        replica_addr(client, &hello),
        hello.listening_port,
        psync.is_some(),
        hello.rdb_only,
        limit,
    ));
    attach(srv);
    if let Some((replid, offset)) = psync {
        let replid = String::from_utf8_lossy(replid).into_owned();
        let offset = std::str::from_utf8(offset)
            .ok()
            .and_then(|s| s.parse::<i64>().ok());
        if replid != "?" {
            let mut st = srv.repl.stream.lock();
            let resumed = offset.and_then(|o| st.continue_from(&replid, o));
            if let Some(tail) = resumed {
                become_replica(client);
                let line = if hello.capa_psync2 {
                    format!("+CONTINUE {}\r\n", st.replid)
                } else {
                    "+CONTINUE\r\n".to_string()
                };
                feed.position(None);
                feed.push(line.as_bytes());
                feed.start_streaming();
                feed.push(&tail);
                feed.set_state(FeedState::Online);
                st.feeds.push(feed);
                srv.repl.sync_partial_ok.fetch_add(1, Relaxed);
                log::notice(&format!(
                    "Partial resynchronization request from {name} accepted. Sending {} bytes of backlog starting from offset {}.",
                    tail.len(),
                    offset.unwrap_or(0)
                ));
                return Ok(());
            }
            srv.repl.sync_partial_err.fetch_add(1, Relaxed);
            if replid != st.replid && replid != st.replid2 {
                log::notice(&format!(
                    "Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '{replid}', my replication IDs are '{}' and '{}')",
                    st.replid, st.replid2
                ));
            } else {
                log::notice(&format!(
                    "Unable to partial resync with replica {name} for lack of backlog (Replica request was: {}).",
                    offset.unwrap_or(0)
                ));
            }
        } else {
            log::notice(&format!("Full resync requested by replica {name}"));
        }
    }
    become_replica(client);
    srv.repl.sync_full.fetch_add(1, Relaxed);
    let diskless = hello.filter.filters() || (srv.config.repl_diskless_sync() && hello.capa_eof);
    srv.repl.stream.lock().feeds.push(feed.clone());
    join_or_start(srv, feed, diskless, hello.filter)
}

/// Adds the replica to a full sync of the same kind still waiting to
/// begin, or starts one.
fn join_or_start(
    srv: &ServerState,
    feed: Arc<ReplicaFeed>,
    diskless: bool,
    filter: RdbFilter,
) -> Result<(), String> {
    let mut pending = srv.repl.pending_sync.lock();
    if let Some(job) = pending.as_ref() {
        if job.diskless == diskless && job.filter == filter && !job.began.load(SeqCst) {
            job.feeds.lock().push(feed);
            return Ok(());
        }
    }
    let job = Arc::new(SyncJob {
        diskless,
        filter,
        feeds: Mutex::new(vec![feed]),
        began: AtomicBool::new(false),
        created: Instant::now(),
    });
    *pending = Some(job.clone());
    drop(pending);
    let srv = srv.me();
    std::thread::Builder::new()
        .name("tessera-sync".into())
        .spawn(move || run_sync(&srv, &job))
        .map(|_| ())
        .map_err(|e| format!("ERR cannot start the sync: {e}"))
}

/// The full sync thread: waits for more replicas (diskless), begins the
/// snapshot, positions every replica's stream at its instant, and sends
/// the snapshot.
fn run_sync(srv: &ServerState, job: &SyncJob) {
    if job.diskless {
        let delay = Duration::from_secs(srv.config.repl_diskless_sync_delay().max(0) as u64);
        let max = srv.config.repl_diskless_sync_max_replicas().max(0) as usize;
        if !delay.is_zero() {
            log::notice("Delay next BGSAVE for diskless SYNC");
        }
        while job.created.elapsed() < delay && (max == 0 || job.feeds.lock().len() < max) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let mut sj = crate::server::persist::save_job(srv);
    sj.path = PathBuf::from(srv.config.dir()).join(format!(
        "temp-sync-{}-{}.rdb",
        std::process::id(),
        unix_ms()
    ));
    sj.key_delay_us = srv.config.rdb_key_save_delay();
    sj.include_keys = !job.filter.exclude_keys;
    if job.filter.exclude_functions {
        sj.functions.clear();
    }
    // Redis's sync payload records the stream, as its RDB files do.
    let mark = super::StreamMark::for_master_snapshot(srv);
    let running = loop {
        let feeds_alive = job.feeds.lock().iter().any(|f| !f.info.is_gone());
        if !feeds_alive {
            close_job(srv, job);
            return;
        }
        let attempt = {
            // (No other thread adds a replica once the job has begun.)
            let guard = if srv.repl.is_replica() {
                Some(srv.repl.quiesce())
            } else {
                None
            };
            job.began.store(true, SeqCst);
            let feeds: Vec<Arc<ReplicaFeed>> = job.feeds.lock().clone();
            let mut this_job = sj.clone();
            if guard.is_some() {
                this_job.repl = super::replica_position(srv);
            }
            let r = save::begin_at(this_job, &mut |seq| {
                for f in &feeds {
                    f.start_seq.store(seq, SeqCst);
                }
                if let Some(m) = &mark {
                    m.fix(seq);
                }
            });
            if r.is_ok() && guard.is_some() {
                // A replica's stream position is what it has applied.
                let mut st = srv.repl.stream.lock();
                for f in &feeds {
                    st.position(f);
                }
            }
            r
        };
        match attempt {
            Ok(r) => break r,
            Err(_) => {
                // Another snapshot runs; one at a time.
                job.began.store(false, SeqCst);
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    };
    close_job(srv, job);
    let feeds: Vec<Arc<ReplicaFeed>> = job.feeds.lock().clone();
    // On a master, the stream starts once every unit before the instant
    // has been encoded (unless a later unit already started it).
    for f in &feeds {
        let seq = f.start_seq.load(SeqCst);
        while !f.positioned() {
            let done = srv.journal.if_fed_below(seq, || {
                let mut st = srv.repl.stream.lock();
                st.position(f);
            });
            if done || f.info.is_gone() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        f.set_state(FeedState::SendBulk);
    }
    let mut running = running;
    if let Some(m) = &mark {
        running.record_position(m.position(srv));
    }
    log::notice(&format!(
        "Starting BGSAVE for SYNC with target: {}",
        if job.diskless {
            "replicas sockets"
        } else {
            "disk"
        }
    ));
    srv.persistence.background_jobs.fetch_add(1, Relaxed);
    let sent = if job.diskless {
        send_diskless(running, &feeds)
    } else {
        send_from_disk(running, &sj.path, &feeds)
    };
    match sent {
        Ok(()) => {
            for f in &feeds {
                if f.info.is_gone() {
                    continue;
                }
                if f.rdb_only {
                    // It wants the snapshot and nothing after it.
                    log::notice(&format!(
                        "RDB transfer completed, rdb only replica ({}) should be disconnected asap",
                        f.label()
                    ));
                    f.info.close_when_written();
                    continue;
                }
                if job.diskless {
                    // Redis starts the stream at the replica's first ACK:
                    // a replica reading an EOF-marked payload may read
                    // past its end.
                    f.set_state(FeedState::WaitAck);
                    log::notice(&format!(
                        "Streamed RDB transfer with replica {} succeeded (socket). Waiting for REPLCONF ACK from slave to enable streaming",
                        f.label()
                    ));
                } else {
                    f.start_streaming();
                    f.set_state(FeedState::Online);
                    log::notice(&format!(
                        "Synchronization with replica {} succeeded",
                        f.label()
                    ));
                }
            }
        }
        Err(e) => {
            log::warning(&format!("SYNC failed: {e}"));
            for f in &feeds {
                f.info.kill();
            }
        }
    }
}

fn close_job(srv: &ServerState, job: &SyncJob) {
    let mut pending = srv.repl.pending_sync.lock();
    if pending
        .as_ref()
        .is_some_and(|p| std::ptr::eq(Arc::as_ptr(p), job))
    {
        *pending = None;
    }
}

/// Writes the snapshot to every replica as it is produced:
/// `$EOF:<mark>\r\n`, the RDB, the mark.
fn send_diskless(running: save::Running, feeds: &[Arc<ReplicaFeed>]) -> Result<(), String> {
    let mark = super::random_replid();
    let head = format!("$EOF:{mark}\r\n");
    for f in feeds {
        f.push_bulk(head.as_bytes());
    }
    struct ToReplicas<'a> {
        feeds: &'a [Arc<ReplicaFeed>],
        buf: Vec<u8>,
    }
    impl ToReplicas<'_> {
        fn send(&mut self) -> std::io::Result<()> {
            let mut alive = false;
            for f in self.feeds {
                alive |= f.push_bulk(&self.buf);
            }
            self.buf.clear();
            if alive {
                Ok(())
            } else {
                Err(std::io::Error::other("every replica is gone"))
            }
        }
    }
    impl std::io::Write for ToReplicas<'_> {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.buf.extend_from_slice(b);
            if self.buf.len() >= 256 << 10 {
                self.send()?;
            }
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            if !self.buf.is_empty() {
                self.send()?;
            }
            Ok(())
        }
    }
    running.write_stream(ToReplicas {
        feeds,
        buf: Vec::new(),
    })?;
    for f in feeds {
        f.push_bulk(mark.as_bytes());
    }
    Ok(())
}

/// Writes the snapshot to a file, then sends it as `$<len>\r\n<bytes>`.
fn send_from_disk(
    running: save::Running,
    path: &std::path::Path,
    feeds: &[Arc<ReplicaFeed>],
) -> Result<(), String> {
    use std::io::Read;
    let result = (|| {
        running.write()?;
        let mut f =
            std::fs::File::open(path).map_err(|e| format!("Can't open the sync snapshot: {e}"))?;
        let len = f
            .metadata()
            .map_err(|e| format!("Can't read the sync snapshot: {e}"))?
            .len();
        let head = format!("${len}\r\n");
        for r in feeds {
            r.push_bulk(head.as_bytes());
        }
        let mut buf = vec![0u8; 256 << 10];
        loop {
            let n = f
                .read(&mut buf)
                .map_err(|e| format!("Can't read the sync snapshot: {e}"))?;
            if n == 0 {
                break;
            }
            let mut alive = false;
            for r in feeds {
                alive |= r.push_bulk(&buf[..n]);
            }
            if !alive {
                return Err("every replica is gone".to_string());
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(path);
    result
}

/// REPLCONF ACK from a replica connection.
pub fn ack(srv: &ServerState, client: &Client, offset: u64) {
    let st = srv.repl.stream.lock();
    let Some(feed) = st.feeds.iter().find(|f| f.id() == client.id) else {
        return;
    };
    feed.ack_offset.fetch_max(offset, Relaxed);
    feed.ack_ms.store(unix_ms(), Relaxed);
    feed.acked.store(true, Relaxed);
    if feed.state() == FeedState::WaitAck {
        feed.start_streaming();
        feed.set_state(FeedState::Online);
        log::notice(&format!(
            "Synchronization with replica {} succeeded",
            feed.label()
        ));
    }
    srv.repl
        .refresh_good(&st, srv.config.min_replicas_max_lag());
    drop(st);
    srv.repl.acks.notify_waiters();
}

/// Sends REPLCONF GETACK * to the replicas (WAIT wants fresh ACKs).
pub fn request_acks(srv: &ServerState) {
    // (Not while a failover holds writes: the stream must stand still.)
    if srv.repl.is_replica() || srv.pause.held_by(crate::server::state::HELD_BY_FAILOVER) {
        return;
    }
    let mut st = srv.repl.stream.lock();
    if st.feeds.is_empty() {
        return;
    }
    let mut bytes = Vec::new();
    crate::journal::encode_command(&[b"REPLCONF".as_slice(), b"GETACK", b"*"], &mut bytes);
    st.append(&bytes);
}

/// The stream offset a reply must see acknowledged for the writes of
/// `unit` and before: the offset once that unit has been encoded.
pub fn offset_after_unit(srv: &ServerState, unit: u64) -> u64 {
    let began = Instant::now();
    loop {
        let mut offset = None;
        if srv
            .journal
            .if_fed_below(unit + 1, || offset = Some(srv.repl.stream.lock().offset))
        {
            return offset.unwrap_or(0);
        }
        if began.elapsed() > Duration::from_millis(100) {
            return srv.repl.stream.lock().offset;
        }
        std::thread::yield_now();
    }
}

/// How a WAIT ended.
pub enum WaitEnd {
    /// The count acknowledged (enough, the timeout, CLIENT UNBLOCK ...
    /// TIMEOUT).
    Acked(usize),
    /// CLIENT UNBLOCK ... ERROR.
    Unblocked,
}

/// WAIT: blocks the client (it counts in blocked_clients and CLIENT
/// UNBLOCK reaches it) until `wanted` replicas acknowledged `offset` or
/// the deadline passes.
pub async fn wait_command(
    srv: &ServerState,
    info: &crate::server::client::ClientInfo,
    offset: u64,
    wanted: usize,
    deadline: Option<Instant>,
) -> WaitEnd {
    use crate::server::blocking::{Waiter, Wake};
    let waiter = Waiter::new(info.id);
    srv.blocking.register(0, &[], &waiter);
    info.blocked.store(true, Relaxed);
    let end = loop {
        let unblocked = waiter.notify.notified();
        tokio::pin!(unblocked);
        unblocked.as_mut().enable();
        match waiter.take_reason() {
            Wake::UnblockError => break WaitEnd::Unblocked,
            Wake::UnblockTimeout => break WaitEnd::Acked(srv.repl.acked(offset)),
            _ => {}
        }
        tokio::select! {
            n = wait_for_acks(srv, info, offset, wanted, deadline) => break WaitEnd::Acked(n),
            _ = unblocked => {}
        }
    };
    info.blocked.store(false, Relaxed);
    srv.blocking.unregister(0, &[], &waiter);
    end
}

/// Waits until `wanted` replicas acknowledged `offset` or the deadline
/// passes (or the client is killed); the count acknowledged.
pub async fn wait_for_acks(
    srv: &ServerState,
    info: &crate::server::client::ClientInfo,
    offset: u64,
    wanted: usize,
    deadline: Option<Instant>,
) -> usize {
    request_acks(srv);
    loop {
        let notified = srv.repl.acks.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let n = srv.repl.acked(offset);
        if n >= wanted || info.killed.load(Relaxed) {
            return n;
        }
        let tick = tokio::time::sleep(Duration::from_millis(100));
        match deadline {
            Some(d) => {
                if Instant::now() >= d {
                    return n;
                }
                tokio::select! {
                    _ = notified => {}
                    _ = tick => {}
                    _ = tokio::time::sleep_until(d.into()) => return srv.repl.acked(offset),
                }
            }
            None => {
                tokio::select! {
                    _ = notified => {}
                    _ = tick => {}
                }
            }
        }
    }
}

/// Once a second: PING the replicas every repl-ping-replica-period, drop
/// replicas silent for longer than repl-timeout, free the backlog after
/// repl-backlog-ttl without replicas, and (on a replica) ACK the master.
pub async fn cron(srv: Arc<ServerState>) {
    let mut ticks: u64 = 0;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        ticks += 1;
        let now = unix_ms();
        let timeout_ms = srv.config.repl_timeout().max(1) * 1000;
        let mut st = srv.repl.stream.lock();
        st.feeds.retain(|f| {
            if f.info.is_gone() {
                return false;
            }
            if f.state() == FeedState::Online
                && f.acked.load(Relaxed)
                && now - f.ack_ms.load(Relaxed) > timeout_ms
            {
                log::warning(&format!(
                    "Disconnecting timedout replica (streaming sync): {}",
                    f.label()
                ));
                f.info.kill();
                return false;
            }
            true
        });
        srv.repl
            .refresh_good(&st, srv.config.min_replicas_max_lag());
        let period = srv.config.repl_ping_replica_period().max(1) as u64;
        if !srv.repl.is_replica()
            && !st.feeds.is_empty()
            && ticks.is_multiple_of(period)
            && !srv.pause.writes_held()
        {
            let mut ping = Vec::new();
            crate::journal::encode_command(&[b"PING"], &mut ping);
            st.append(&ping);
        }
        if st.feeds.is_empty() {
            let since = srv.repl.no_replicas_since_ms.load(Relaxed);
            let ttl = srv.config.repl_backlog_ttl();
            if !srv.repl.is_replica() && st.backlog.is_some() && ttl > 0 && now - since > ttl * 1000
            {
                st.backlog = None;
                // A new history begins when replicas come back.
                st.shift_replid();
                st.replid2 = super::NO_REPLID.to_string();
                st.second_offset = -1;
                log::notice(&format!(
                    "Replication backlog freed after {ttl} seconds without connected replicas."
                ));
            }
        } else {
            srv.repl.no_replicas_since_ms.store(now, Relaxed);
        }
    }
}

/// CLIENT LIST's and INFO's view of one replica: ip, port, state, offset
/// and lag in seconds.
pub fn replicas(srv: &ServerState) -> Vec<(String, u16, FeedState, u64, i64)> {
    let now = unix_ms();
    srv.repl
        .stream
        .lock()
        .feeds
        .iter()
        .filter(|f| !f.info.is_gone())
        .map(|f| {
            (
                f.ip.clone(),
                f.port,
                f.state(),
                f.ack_offset.load(Relaxed),
                (now - f.ack_ms.load(Relaxed)) / 1000,
            )
        })
        .collect()
}
