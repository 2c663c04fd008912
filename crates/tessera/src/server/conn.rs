//! One connection's life: read whatever the socket has, run every complete
//! request in it, and send all their replies back with one write. Pipelines
//! of any depth therefore cost one read and one write per batch, as in
//! Redis.

use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use smallvec::SmallVec;
use tessera_resp::encode::{Protocol, ReplyBuf};
use tessera_resp::request::{Limits, Request, RequestParser};
use tokio::io::AsyncReadExt;

use super::blocking::{BlockRequest, BlockingRegistry, Debts, FeedBatch, Waiter, Wake};
use super::client::{Client, ClientInfo, PeerAddr};
use super::dispatch;
use super::parked::{ConnState, ParkSlot, Registration, Woke};
use super::socket::ClientSocket;
use super::state::{unix_ms, ServerState};
use super::stats::WorkerStats;
use crate::keyspace::Key;

/// Read-buffer growth step; a big bulk grows the buffer as bytes arrive.
const READ_CHUNK: usize = 16 * 1024;
/// Spare room kept before each read.
const MIN_SPARE: usize = 4096;
/// What an unauthenticated client may leave unread: Redis's 16 KB reply
/// buffer and 1 KB of reply list.
const UNAUTHENTICATED_OUTPUT_LIMIT: usize = 16 * 1024 + 1024;

pub async fn serve<S: ClientSocket>(
    srv: Arc<ServerState>,
    worker: Arc<WorkerStats>,
    stream: S,
    (addr, laddr): (PeerAddr, PeerAddr),
    id: u64,
) {
    let fd = stream.as_raw_fd();
    let info = Arc::new(ClientInfo::new(id, addr, laddr, fd, unix_ms()));
    srv.clients.register(info.clone());
    let client = Client::new(&srv, id, info.clone(), worker);
    info.authenticated.store(client.authenticated, Relaxed);
    let registration = Registration::new(id, fd, stream.tls_session());
    let mut state = Some(Box::new(ConnState {
        client,
        parser: RequestParser::new(),
        rbuf: BytesMut::with_capacity(4096),
        out: ReplyBuf::new(Protocol::Resp2),
    }));
    if let Some(st) = state.as_deref() {
        info.rbs.store(st.out.buf.capacity(), Relaxed);
    }
    let mut stream = stream;
    // An I/O error ends the connection as EOF does.
    let _ = run(&srv, &mut state, &mut stream, &registration.slot).await;
    drop(registration);
    info.mark_closed();
    if let Some(st) = state.as_deref_mut() {
        crate::commands::pubsub::unsubscribe_all(&srv, &mut st.client);
        crate::commands::multi::unwatch_all(&srv, &mut st.client);
        crate::server::tracking::disable(&srv, &mut st.client);
    }
    srv.clients.unregister(id);
    let mut mons = srv.monitors.lock();
    mons.retain(|m| m.id != id);
    srv.monitor_count.store(mons.len(), Relaxed);
}

/// The connection's state, which is home whenever its task runs (it is in
/// the park slot only while the task waits for input).
fn home(state: &mut Option<Box<ConnState>>) -> &mut ConnState {
    state
        .as_deref_mut()
        .expect("a connection's state is back from its slot whenever its task runs")
}

async fn run<S: ClientSocket>(
    srv: &ServerState,
    state: &mut Option<Box<ConnState>>,
    stream: &mut S,
    slot: &ParkSlot,
) -> std::io::Result<()> {
    let info = home(state).client.info.clone();
    /// However the connection ends, it holds no input to wait for.
    struct NothingInHand<'a>(&'a ClientInfo);
    impl Drop for NothingInHand<'_> {
        fn drop(&mut self) {
            self.0.input_in_hand.store(false, SeqCst);
        }
    }
    let _nothing_in_hand = NothingInHand(&info);
    let mut waker_known = false;
    // A subscriber read input that has not run yet (`input_batches`).
    let mut batch_read = false;
    'serve: loop {
        if info.killed.load(Relaxed) {
            return Ok(());
        }
        let ConnState {
            client,
            parser,
            rbuf,
            out,
        } = home(state);
        let blocked = process_buffer(srv, client, parser, rbuf, out).await;
        // What was read has run (see `ClientInfo::may_have_input`).
        if batch_read {
            info.input_batches.fetch_add(1, SeqCst);
            batch_read = false;
        }
        info.input_in_hand.store(false, SeqCst);
        take_outbox(client, out);
        if client.close_now {
            return Ok(());
        }
        let spilled = flush_within_limits(srv, client, out, stream, rbuf).await?;
        if client.close_after_reply {
            return Ok(());
        }
        // (Only a replica connection is ever closed this way.)
        if client.syncing && info.close_when_written.load(SeqCst) {
            // (Bytes pushed before the flag was set may have come after
            // this round took the outbox.)
            if info.outbox.lock().is_empty() {
                return Ok(());
            }
            continue;
        }
        info.resp.store(if out.resp3() { 3 } else { 2 }, Relaxed);
        if spilled
            && blocked.is_none()
            && client.wait_acks.is_none()
            && client.shutdown_request.is_none()
        {
            // Read while the replies went out: run it before waiting.
            continue;
        }
        if let Some((request, args)) = blocked {
            // (Boxed: a blocked command is rare, and its future would
            // otherwise size every connection's task.)
            if !Box::pin(wait_blocked(srv, client, out, stream, rbuf, request, args)).await? {
                return Ok(());
            }
            // Commands that arrived while blocked are already buffered.
            continue;
        }
        if let Some(flags) = client.shutdown_request.take() {
            // The replies before it are out; it exits, or says why not.
            if Box::pin(super::shutdown::wait_then_finish(srv, flags))
                .await
                .is_err()
            {
                out.error(b"ERR Errors trying to SHUTDOWN. Check logs.");
            }
            continue;
        }
        if let Some((offset, wanted, deadline)) = client.wait_acks.take() {
            // WAIT: the replies before it are out; its own follows.
            use super::replication::master::{wait_command, WaitEnd};
            match Box::pin(wait_command(srv, &client.info, offset, wanted, deadline)).await {
                WaitEnd::Acked(n) => out.int(n as i64),
                WaitEnd::Unblocked => out.error(b"UNBLOCKED client unblocked via CLIENT UNBLOCK"),
            }
            continue;
        }

        // Keep room for the next read; for a big bulk, grow towards what it
        // still needs but at most double per step, so memory follows the
        // bytes that actually arrive, not the length the client claimed.
        let target = parser
            .bytes_wanted()
            .clamp(MIN_SPARE, rbuf.len().max(READ_CHUNK));
        if rbuf.capacity() - rbuf.len() < target {
            rbuf.reserve(target);
        }
        // Subscribers and monitors time out only as Redis's do: never
        // (tracking clients do time out).
        let pushes = client.may_be_pushed_to();
        // A subscriber says when it holds input a PUBLISH should wait for:
        // from just before each read until what it read has run.
        let subscribed = !client.subs.is_empty();
        // (Replicas time out by repl-timeout, in the replication cron.)
        let idle = if client.subs.is_empty() && !client.monitoring && !client.syncing {
            srv.config.timeout_secs()
        } else {
            0
        };
        let n = loop {
            if subscribed {
                info.input_in_hand.store(true, SeqCst);
            }
            match read_available(stream, &mut home(state).rbuf) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            info.input_in_hand.store(false, SeqCst);
            // Nothing to read: park the state where a busy script on this
            // thread can serve it (see `parked`), and wait.
            slot.park(state.take().expect("the state is home before parking"));
            let wait = async {
                if pushes {
                    tokio::select! {
                        r = slot.wait(stream, &mut waker_known) => Some(r),
                        _ = info.wake.notified() => None,
                    }
                } else {
                    Some(slot.wait(stream, &mut waker_known).await)
                }
            };
            let woke = if idle == 0 {
                Ok(wait.await)
            } else {
                Box::pin(tokio::time::timeout(Duration::from_secs(idle), wait)).await
            };
            *state = slot.unpark();
            match woke {
                Ok(Some(Ok(Woke::Readable))) => continue,
                // A push to deliver, or the pump ran commands.
                Ok(None) | Ok(Some(Ok(Woke::Pumped))) => continue 'serve,
                Ok(Some(Err(e))) => return Err(e),
                // Idle for longer than `timeout`.
                Err(_) => return Ok(()),
            }
        };
        let client = &home(state).client;
        client.worker.reads_processed.add(1);
        if n == 0 {
            return Ok(());
        }
        batch_read = subscribed;
        client.worker.net_input_bytes.add(n as u64);
        info.total_in.fetch_add(n as u64, Relaxed);
        if home(state).rbuf.len() as u64 > srv.config.client_query_buffer_limit() {
            return Ok(());
        }
    }
}

/// Reads what the socket holds into `rbuf` without waiting (WouldBlock
/// when it holds nothing).
///
/// A read that leaves room in the buffer drained the socket at that
/// moment, so it also marks the socket not readable: the next read then
/// waits for the event loop to report new input instead of trying a
/// `recv` that would fail with EAGAIN. With one request in flight per
/// client that saves a system call on almost every other request (strace:
/// 10,379 failed reads for 22,677 requests). tokio's own `poll_read` does
/// the same. The read runs inside `try_io` so that the mark is cleared
/// with the readiness seen *before* the read: if an edge-triggered event
/// for newer input has been processed since, tokio keeps the mark and the
/// input is read.
fn read_available<S: ClientSocket>(stream: &S, rbuf: &mut BytesMut) -> std::io::Result<usize> {
    let room = rbuf.capacity() - rbuf.len();
    let mut drained = None;
    let result = stream.try_io(tokio::io::Interest::READABLE, || {
        let n = stream.try_read_buf(rbuf)?;
        if n > 0 && n < room {
            drained = Some(n);
            return Err(std::io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    });
    match drained {
        Some(n) => Ok(n),
        None => result,
    }
}

/// The next complete request at the start of `buf`: its kind and length.
/// None when more input is needed, or when the input is malformed: the
/// protocol error is then queued and the client closed after the reply, as
/// Redis does.
pub fn next_request(
    parser: &mut RequestParser,
    buf: &[u8],
    limits: &Limits,
    client: &mut Client,
    out: &mut ReplyBuf,
) -> Option<(Request, usize)> {
    match parser.parse(buf, limits, !client.authenticated) {
        Ok(found) => found,
        Err(e) => {
            out.error(e.message());
            client.close_after_reply = true;
            None
        }
    }
}

/// Over the normal class's hard output limit (`hard_bytes`, 0 for none), a
/// client is dropped without being sent what it owes, as Redis does.
/// Subscribers answer to the pubsub class, enforced where messages arrive.
pub fn drop_if_over_hard_limit(
    srv: &ServerState,
    client: &mut Client,
    out: &mut ReplyBuf,
    hard_bytes: u64,
) {
    if hard_bytes > 0 && out.buf.len() as u64 >= hard_bytes && !client.receives_pushes() {
        srv.log_obuf_kill(&client.info);
        out.buf.clear();
        client.close_now = true;
        client.close_after_reply = true;
    }
}

/// The arguments of the request the parser just completed at the start of
/// `buf`.
pub fn request_args<'a>(
    kind: Request,
    parser: &'a RequestParser,
    buf: &'a [u8],
) -> SmallVec<[&'a [u8]; 8]> {
    match kind {
        Request::Multibulk => parser
            .arg_ranges()
            .iter()
            .map(|&(s, e)| &buf[s..e])
            .collect(),
        Request::Inline => parser.inline_args().iter().map(|a| a.as_slice()).collect(),
        Request::Empty => SmallVec::new(),
    }
}

/// Runs every complete request in `rbuf`, appending replies to `out`, and
/// consumes them. Stops early at a command that blocks, returning its
/// request and an owned copy of its arguments (to re-run when woken).
async fn process_buffer(
    srv: &ServerState,
    client: &mut Client,
    parser: &mut RequestParser,
    rbuf: &mut BytesMut,
    out: &mut ReplyBuf,
) -> Option<(BlockRequest, Vec<Vec<u8>>)> {
    let mut pos = 0;
    let mut blocked = None;
    let limits = Limits {
        proto_max_bulk_len: srv.config.proto_max_bulk_len(),
    };
    let normal_limit = srv
        .config
        .client_output_buffer_limit(crate::config::ClientClass::Normal);
    // While the batch runs, the whole of it is in the query buffer, as in
    // Redis (which trims its buffer after the batch): CLIENT LIST shows
    // the running CLIENT LIST itself.
    store_qbuf(client, rbuf);
    while pos < rbuf.len() && !client.close_after_reply {
        let Some((kind, consumed)) = next_request(parser, &rbuf[pos..], &limits, client, out)
        else {
            break;
        };
        let args = request_args(kind, parser, &rbuf[pos..]);
        if !args.is_empty() {
            if pause_in_effect(srv) && pause_applies(srv, client, &args) {
                wait_if_paused(srv, &client.info).await;
            }
            if client.may_be_pushed_to() {
                // Messages published before this command was read go
                // out before its reply (an UNSUBSCRIBE's included).
                take_outbox(client, out);
            }
            execute_in_turn(srv, client, out, &args).await;
            await_fed_waiters(client).await;
            drop_if_over_hard_limit(srv, client, out, normal_limit.hard_bytes);
            if let Some(mut req) = client.block.take() {
                let argv = req
                    .rerun_args
                    .take()
                    .unwrap_or_else(|| args.iter().map(|a| a.to_vec()).collect());
                blocked = Some((req, argv));
            }
        }
        pos += consumed;
        if blocked.is_some() || client.wait_acks.is_some() || client.shutdown_request.is_some() {
            break;
        }
    }
    rbuf.advance(pos);
    store_qbuf(client, rbuf);
    blocked
}

/// How long a command waits for other clients' commands in flight
/// (`CommandSpec::waits_for_others`) before it runs regardless.
const WAIT_FOR_OTHERS: Duration = Duration::from_millis(10);

/// Runs a command; one that should first let other clients' commands in
/// flight run (a PUBLISH whose receivers may have sent an UNSUBSCRIBE)
/// gives this thread's other tasks a turn, then short sleeps, until they
/// have run or [`WAIT_FOR_OTHERS`] has passed. The thread is never held.
async fn execute_in_turn(
    srv: &ServerState,
    client: &mut Client,
    out: &mut ReplyBuf,
    args: &[&[u8]],
) {
    let mut started = None;
    let mut turns = 0u32;
    while dispatch::execute(srv, client, out, args) == dispatch::Executed::WaitForOthers {
        let since = *started.get_or_insert_with(Instant::now);
        if since.elapsed() >= WAIT_FOR_OTHERS {
            client.done_waiting = true;
        } else if turns < 32 {
            // (Another task of this thread may be the one to run.)
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        turns += 1;
    }
    client.done_waiting = false;
    client.others_seen.clear();
}

/// Publishes the query buffer's use (CLIENT LIST `qbuf`, `qbuf-free`).
pub(super) fn store_qbuf(client: &Client, rbuf: &BytesMut) {
    client.info.qbuf.store(rbuf.len(), Relaxed);
    client
        .info
        .qbuf_free
        .store(rbuf.capacity() - rbuf.len(), Relaxed);
}

/// Writes `out`. While the client's socket is full (it is not reading),
/// whatever it sends meanwhile is read into `rbuf`, as Redis keeps reading
/// while replies wait: a client that sends a whole pipeline before reading
/// would otherwise wait on the server while the server waits on it.
/// Returns whether anything was read; past `client-query-buffer-limit` the
/// client is dropped, as Redis drops it.
async fn flush<S: ClientSocket>(
    srv: &ServerState,
    client: &Client,
    out: &mut ReplyBuf,
    stream: &mut S,
    rbuf: &mut BytesMut,
) -> std::io::Result<bool> {
    if out.buf.is_empty() {
        // (A TLS session may still hold records the pump could not send.)
        match stream.try_flush() {
            Ok(()) => return Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    // `appendfsync always`: a write is acknowledged once it is on disk.
    // The wait is a future, so this worker's other clients run meanwhile,
    // and every write that reaches the AOF during one fsync shares it.
    if client.awaits_durable != 0 && srv.persistence.aof_waits.load(Relaxed) {
        let aof = srv.aof.lock().clone();
        if let Some(aof) = aof {
            if aof.durable_seq() < client.awaits_durable {
                aof.wait_durable(client.awaits_durable).await;
            }
        }
    }
    // Semi-synchronous replication: a write is acknowledged once enough
    // replicas have it; the wait is a future, as above.
    let semi_sync = srv.config.repl_semi_sync_replicas();
    if semi_sync > 0
        && client.semi_sync_unit > client.semi_synced.load(Relaxed)
        && !srv.repl.is_replica()
        && !client.syncing
    {
        let unit = client.semi_sync_unit;
        let offset = super::replication::master::offset_after_unit(srv, unit);
        let timeout_ms = srv.config.repl_semi_sync_timeout();
        let deadline =
            (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64));
        super::replication::master::wait_for_acks(
            srv,
            &client.info,
            offset,
            semi_sync as usize,
            deadline,
        )
        .await;
        client.semi_synced.store(unit, Relaxed);
    }
    let mut written = 0;
    let mut spilled = false;
    let mut input_open = true;
    loop {
        // (TLS: after the last bytes are taken, their records may still
        // wait for room in the socket.)
        let step = if written < out.buf.len() {
            stream.try_write(&out.buf[written..])
        } else {
            match stream.try_flush() {
                Ok(()) => break,
                Err(e) => Err(e),
            }
        };
        match step {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                written += n;
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        // A client that has not authenticated may not make the server hold
        // its replies (Redis's fix for CVE-2025-21605: past its 16 KB
        // reply buffer, 1 KB more and it is closed). What it sent while
        // they wait counts too: each request is one more reply to hold.
        if out.buf.len() - written + rbuf.len() > UNAUTHENTICATED_OUTPUT_LIMIT
            && !client.authenticated
            && crate::acl::acl().login_required()
        {
            srv.log_obuf_kill(&client.info);
            return Err(std::io::Error::other(
                "an unauthenticated client's output over its limit",
            ));
        }
        tokio::select! {
            r = stream.writable() => r?,
            r = stream.readable(), if input_open => {
                r?;
                if rbuf.capacity() - rbuf.len() < MIN_SPARE {
                    rbuf.reserve(READ_CHUNK);
                }
                match read_available(stream, rbuf) {
                    // Half-closed: the replies still go out.
                    Ok(0) => input_open = false,
                    Ok(n) => {
                        spilled = true;
                        client.worker.reads_processed.add(1);
                        client.worker.net_input_bytes.add(n as u64);
                        client.info.total_in.fetch_add(n as u64, Relaxed);
                        if rbuf.len() as u64 > srv.config.client_query_buffer_limit() {
                            return Err(std::io::Error::other("query buffer limit reached"));
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    client.worker.writes_processed.add(1);
    client
        .worker
        .count_output(out.buf.len() as u64, client.info.is_replica.load(Relaxed));
    client
        .info
        .total_out
        .fetch_add(out.buf.len() as u64, Relaxed);
    client.info.note_reply_buffer(out.buf.len());
    out.buf.clear();
    if out.buf.capacity() > 1024 * 1024 {
        out.buf.shrink_to(64 * 1024);
    }
    client.info.rbs.store(out.buf.capacity(), Relaxed);
    Ok(spilled)
}

/// Flushes, applying the soft output limit of the client's class: a
/// client that leaves more than the soft limit unread for longer than its
/// time is disconnected, as Redis does.
async fn flush_within_limits<S: ClientSocket>(
    srv: &ServerState,
    client: &Client,
    out: &mut ReplyBuf,
    stream: &mut S,
    rbuf: &mut BytesMut,
) -> std::io::Result<bool> {
    use crate::config::ClientClass;
    let class = if client.receives_pushes() {
        ClientClass::Pubsub
    } else {
        ClientClass::Normal
    };
    let limit = srv.config.client_output_buffer_limit(class);
    if limit.soft_bytes == 0 || (out.buf.len() as u64) < limit.soft_bytes {
        return flush(srv, client, out, stream, rbuf).await;
    }
    let allowed = Duration::from_secs(limit.soft_seconds.max(1));
    // (Boxed: past the soft limit is rare, and the timer would otherwise
    // size every connection's task.)
    match Box::pin(tokio::time::timeout(
        allowed,
        flush(srv, client, out, stream, rbuf),
    ))
    .await
    {
        Ok(r) => r,
        Err(_) => {
            srv.log_obuf_kill(&client.info);
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "output buffer over the soft limit for too long",
            ))
        }
    }
}

/// Waits while the client is blocked, then writes the blocked command's
/// reply into `out` (and flushes it). Returns false if the client went away.
async fn wait_blocked<S: ClientSocket>(
    srv: &ServerState,
    client: &mut Client,
    out: &mut ReplyBuf,
    stream: &mut S,
    rbuf: &mut BytesMut,
    request: BlockRequest,
    args: Vec<Vec<u8>>,
) -> std::io::Result<bool> {
    let waiter = Waiter::new(client.id);
    let reply_from = out.buf.len();
    let queued = start_waiting(&srv.blocking, client, &request, &waiter);
    // Wake-ups acted on by the one that ends the wait (see
    // `server::blocking`): paid once the next in line has been woken.
    let mut debts_at_exit = Debts::new();
    let result = loop {
        tokio::select! {
            _ = waiter.notify.notified() => {}
            _ = deadline_passed(request.deadline) => {
                reply_unserved(client, out, &request, Unserved::TimedOut);
                break Ok(true);
            }
            r = read_more(stream, rbuf) => match input_while_blocked(srv, client, rbuf, r) {
                None => continue,
                Some(end) => break end,
            },
        }
        if client.info.killed.load(Relaxed) {
            break Ok(false);
        }
        if let Some(debts) = handle_wake(srv, client, out, &request, &args, &waiter) {
            debts_at_exit = debts;
            break Ok(true);
        }
    };
    let batch = stop_waiting(queued, client, &request, debts_at_exit);
    if request.silent {
        out.buf.truncate(reply_from);
    }
    if matches!(result, Ok(true)) {
        flush(srv, client, out, stream, rbuf).await?;
        // Those woken by the re-run (BLMOVE's destination) or after it are
        // served before this client's next command, as after any command.
        client.fed = batch;
        await_fed_waiters(client).await;
    }
    result
}

/// Puts the client in line on each key of `request` and marks it blocked;
/// the line is left when the returned guard is dropped.
fn start_waiting<'a>(
    registry: &'a BlockingRegistry,
    client: &Client,
    request: &'a BlockRequest,
    waiter: &'a Arc<Waiter>,
) -> QueuedWaiter<'a> {
    if request.deadline.is_some() {
        registry.with_deadline.fetch_add(1, Relaxed);
    }
    registry.register(request.db, &request.keys, waiter);
    // Should this task end early (a panic in the re-run), the waiter must
    // leave the queues: wake-ups of a waiter that never acts would leave
    // their feeders waiting forever.
    let queued = QueuedWaiter {
        registry,
        db: request.db,
        keys: &request.keys,
        waiter,
    };
    client.info.blocked.store(true, Relaxed);
    // A push may have landed between the handler's check and registering.
    for k in &request.keys {
        registry.signal(request.db, k);
    }
    // If that woke us, look at every key again, in order, as the handler
    // did: the key those signals noted is only the first we wait on, and
    // a write to another one in that window may have seen nobody blocked
    // and signalled nothing.
    waiter.take_ready_keys();
    queued
}

/// Completes when the blocked command's timeout expires; never without a
/// deadline.
async fn deadline_passed(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending::<()>().await,
    }
}

/// Input read while blocked is kept for after the unblock: None to keep
/// waiting, else how the wait ends (the query buffer went over its limit,
/// the connection closed or failed).
fn input_while_blocked(
    srv: &ServerState,
    client: &Client,
    rbuf: &BytesMut,
    read: std::io::Result<usize>,
) -> Option<std::io::Result<bool>> {
    match read {
        Ok(n) if n > 0 => {
            client.worker.reads_processed.add(1);
            client.worker.net_input_bytes.add(n as u64);
            if rbuf.len() as u64 > srv.config.client_query_buffer_limit() {
                return Some(Ok(false));
            }
            None
        }
        Ok(_) => Some(Ok(false)),
        Err(e) => Some(Err(e)),
    }
}

/// The reply of a blocked command that ends unserved, counted as such:
/// its timeout reply, or the UNBLOCKED error of CLIENT UNBLOCK ERROR.
fn reply_unserved(client: &Client, out: &mut ReplyBuf, request: &BlockRequest, how: Unserved) {
    count_unblocked(client, how);
    if how == Unserved::UnblockedError {
        out.error(b"UNBLOCKED client unblocked via CLIENT UNBLOCK");
    } else {
        (request.on_timeout)(out);
    }
}

/// Acts on a wake-up: Some when the wait is over (its reply written), with
/// the wake-ups to pay once the next in line has been woken; None to keep
/// waiting.
fn handle_wake(
    srv: &ServerState,
    client: &mut Client,
    out: &mut ReplyBuf,
    request: &BlockRequest,
    args: &[Vec<u8>],
    waiter: &Arc<Waiter>,
) -> Option<Debts> {
    let debts = waiter.take_debts();
    match waiter.take_reason() {
        Wake::None => {
            srv.blocking.settle(debts);
            None
        }
        Wake::UnblockTimeout => {
            reply_unserved(client, out, request, Unserved::UnblockedTimeout);
            Some(debts)
        }
        Wake::UnblockError => {
            reply_unserved(client, out, request, Unserved::UnblockedError);
            Some(debts)
        }
        Wake::Ready => rerun_woken(srv, client, out, request, args, waiter, debts),
    }
}

/// A key may have data: re-runs the blocked command, as [`handle_wake`]
/// answers; when nothing serves it, passes the wake-up on where that is
/// due and pays `debts`.
fn rerun_woken(
    srv: &ServerState,
    client: &mut Client,
    out: &mut ReplyBuf,
    request: &BlockRequest,
    args: &[Vec<u8>],
    waiter: &Arc<Waiter>,
    debts: Debts,
) -> Option<Debts> {
    let registry = &srv.blocking;
    let argv: SmallVec<[&[u8]; 8]> = args.iter().map(|a| a.as_slice()).collect();
    // Each key signalled since the last look, first ready first
    // (one command can make several ready at once), until one
    // serves us; with none noted, every key, as the handler does.
    let noted = waiter.take_ready_keys();
    let attempts: SmallVec<[Option<Key>; 2]> = if noted.is_empty() {
        smallvec::smallvec![None]
    } else {
        noted.into_iter().map(Some).collect()
    };
    let stream_gone = waiter.take_stream_gone();
    // Whom the re-run wakes joins the batch that woke us.
    client.serving = debts.first().map(|d| d.batch().clone());
    let mut pass_on: SmallVec<[Option<Key>; 2]> = SmallVec::new();
    for ready in attempts {
        let mark = out.buf.len();
        match rerun_once(srv, client, out, &argv, ready.clone(), stream_gone) {
            None => return Some(debts),
            Some(again) => {
                out.buf.truncate(mark);
                if again.pass_wakeups {
                    pass_on.push(ready);
                }
            }
        }
    }
    // Still nothing for us: keep our place in the queues.
    // When a key holds something that is not for us (another
    // type, or a stream entry before the ID we wait for), let
    // the next in line look, as Redis serves every waiter it
    // can; when the element went to someone else, the next
    // in line cannot be served either, and waking it could
    // let it take the next element out of turn.
    for ready in pass_on {
        registry.signal_next(
            request.db,
            &request.keys,
            waiter,
            ready.as_deref(),
            client.serving.as_ref(),
        );
    }
    client.serving = None;
    client.fed = None;
    registry.settle(debts);
    None
}

/// One re-run of the blocked command, woken for `ready` (None: any of its
/// keys): None when it was served, else the block it asks for again.
fn rerun_once(
    srv: &ServerState,
    client: &mut Client,
    out: &mut ReplyBuf,
    argv: &[&[u8]],
    ready: Option<Key>,
    stream_gone: bool,
) -> Option<BlockRequest> {
    client.woken_by = ready;
    client.woken_stream_gone = stream_gone;
    client.rerunning = true;
    dispatch::execute_now(srv, client, out, argv);
    client.rerunning = false;
    client.woken_by = None;
    client.woken_stream_gone = false;
    client.woken_wrong_type = false;
    client.block.take()
}

/// Takes the client out of line and unblocks it, then lets the next client
/// in line on each key look at what is left; pays `debts_at_exit` and
/// returns the batch the wake-ups so caused join.
fn stop_waiting(
    queued: QueuedWaiter,
    client: &mut Client,
    request: &BlockRequest,
    mut debts_at_exit: Debts,
) -> Option<Arc<FeedBatch>> {
    let (registry, waiter) = (queued.registry, queued.waiter);
    drop(queued);
    if request.deadline.is_some() {
        registry.with_deadline.fetch_sub(1, Relaxed);
    }
    client.info.blocked.store(false, Relaxed);
    // Let the next client in line look at what is left: it joins the batch
    // this client was serving or its re-run fed (or the one whose wake-up
    // found it timed out or unblocked).
    let mut batch = client
        .fed
        .take()
        .or(client.serving.take())
        .or_else(|| debts_at_exit.first().map(|d| d.batch().clone()));
    for k in &request.keys {
        registry.signal_in(request.db, k, &mut batch);
    }
    debts_at_exit.extend(waiter.take_debts());
    registry.settle(debts_at_exit);
    batch
}

/// A waiter's place in the queues, left when dropped.
struct QueuedWaiter<'a> {
    registry: &'a super::blocking::BlockingRegistry,
    db: usize,
    keys: &'a [crate::keyspace::Key],
    waiter: &'a std::sync::Arc<Waiter>,
}

impl Drop for QueuedWaiter<'_> {
    fn drop(&mut self) {
        self.registry.unregister(self.db, self.keys, self.waiter);
    }
}

/// Waits until the clients blocked on keys the last command fed have been
/// served (see `server::blocking`).
async fn await_fed_waiters(client: &mut Client) {
    if let Some(batch) = client.fed.take() {
        batch.wait().await;
    }
}

/// How a blocked command ended without being served.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unserved {
    TimedOut,
    /// CLIENT UNBLOCK (TIMEOUT).
    UnblockedTimeout,
    /// CLIENT UNBLOCK ERROR.
    UnblockedError,
}

/// Counts a blocked command that ends without being served in its
/// commandstats, as Redis 7.0 does on unblocking (its call was counted
/// when it blocked): CLIENT UNBLOCK, with either reason, counts it as a
/// failed call, and only ERROR's UNBLOCKED reply counts in errorstats.
fn count_unblocked(client: &Client, how: Unserved) {
    let id = client.info.last_cmd.load(Relaxed);
    if how != Unserved::TimedOut {
        if let Some(stats) = client.worker.commands.get(id) {
            stats.failed.add(1);
        }
    }
    if how == Unserved::UnblockedError {
        // The UNBLOCKED error reply counts in errorstats, as any.
        client.worker.count_error("UNBLOCKED");
        client.worker.errors_since_last_look();
    }
}

/// Moves messages other clients sent (pub/sub, invalidations) into the
/// reply buffer.
pub fn take_outbox(client: &Client, out: &mut ReplyBuf) {
    let info = &client.info;
    if info.omem.load(Relaxed) == 0 {
        return;
    }
    let mut outbox = info.outbox.lock();
    out.buf.extend_from_slice(&outbox);
    outbox.clear();
    if outbox.capacity() > 64 * 1024 {
        outbox.shrink_to(4096);
    }
    info.omem.store(0, Relaxed);
    info.obuf_soft_since_ms.store(0, Relaxed);
}

/// Reads whatever is available into `rbuf` (used while blocked).
async fn read_more<S: ClientSocket>(stream: &mut S, rbuf: &mut BytesMut) -> std::io::Result<usize> {
    if rbuf.capacity() - rbuf.len() < MIN_SPARE {
        rbuf.reserve(MIN_SPARE);
    }
    stream.read_buf(rbuf).await
}

/// Whether a CLIENT PAUSE is running. One that has run out is cleared here,
/// so that later commands skip the pause checks again (one relaxed load).
#[inline]
pub fn pause_in_effect(srv: &ServerState) -> bool {
    if srv.pause.writes_held() {
        return true;
    }
    let until = srv.pause.until_ms.load(Relaxed);
    if until == 0 {
        return false;
    }
    if unix_ms() >= until {
        // (A newer pause set meanwhile changed the value and stays.)
        let _ = srv
            .pause
            .until_ms
            .compare_exchange(until, 0, Relaxed, Relaxed);
        return false;
    }
    true
}

/// Whether CLIENT PAUSE holds this command: in ALL mode every command, in
/// WRITE mode those that may write (Redis's write and may-replicate flags,
/// scripts and functions other than the read-only variants, and an EXEC
/// with such a command queued). A command Redis rejects before it looks at
/// the pause (unknown, wrong arity, not authenticated) is answered at once.
pub fn pause_applies(srv: &ServerState, client: &Client, args: &[&[u8]]) -> bool {
    use crate::commands::flags::{MAY_REPLICATE, RUNS_QUEUED, WRITE};
    // Monitors, being replicas to Redis, are never paused.
    if client.monitoring {
        return false;
    }
    let Ok(found) = dispatch::resolve(args, dispatch::Caller::Client) else {
        return false;
    };
    // (Redis pauses a command after every other check has let it through.)
    if dispatch::refused_before_pause(srv, client, found.id, found.spec, args) {
        return false;
    }
    // (FAILOVER holds writes only; a CLIENT PAUSE ALL, everything.)
    let client_pause = srv.pause.until_ms.load(Relaxed) > unix_ms();
    if client_pause && !srv.pause.writes_only.load(Relaxed) {
        return true;
    }
    // (A script by the flags it declares: one declared no-writes is not
    // held.)
    let may_write = |c: &crate::commands::CommandSpec, args: &[&[u8]]| {
        crate::commands::scripting::declared_command_flags(srv, c, args) & (WRITE | MAY_REPLICATE)
            != 0
    };
    if found.spec.has(RUNS_QUEUED) {
        return client.multi.active
            && client.multi.queued.iter().any(|(id, queued)| {
                let queued: Vec<&[u8]> = queued.iter().map(Vec::as_slice).collect();
                crate::commands::by_id(*id).is_some_and(|(_, c)| may_write(c, &queued))
            });
    }
    may_write(found.spec, args)
}

/// Holds a client while CLIENT PAUSE is in effect.
async fn wait_if_paused(srv: &ServerState, info: &ClientInfo) {
    // Held, the client counts and shows as blocked, as in Redis.
    srv.blocking.paused.fetch_add(1, Relaxed);
    info.blocked.store(true, Relaxed);
    wait_out_pause(srv).await;
    info.blocked.store(false, Relaxed);
    srv.blocking.paused.fetch_sub(1, Relaxed);
}

async fn wait_out_pause(srv: &ServerState) {
    loop {
        let until = srv.pause.until_ms.load(Relaxed);
        let now = unix_ms();
        if srv.pause.writes_held() {
            let _ = tokio::time::timeout(Duration::from_millis(100), srv.pause.unpaused.notified())
                .await;
            continue;
        }
        if until == 0 || now >= until {
            return;
        }
        let _ = tokio::time::timeout(
            Duration::from_millis((until - now) as u64),
            srv.pause.unpaused.notified(),
        )
        .await;
    }
}
