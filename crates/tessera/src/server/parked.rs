//! Connections parked on a worker while they wait for input, and the pump
//! that serves them while that worker is stuck in a busy script.
//!
//! A script runs on the worker thread of the client that sent it. Redis,
//! single-threaded, keeps answering everyone during a long script (-BUSY to
//! most commands, SCRIPT KILL / FUNCTION KILL / SHUTDOWN NOSAVE obeyed).
//! Clients on other workers get that from their own threads; clients on the
//! busy worker would wait for the script to end, so SCRIPT KILL sent by one
//! of them could never arrive. Instead, a connection waiting for input
//! leaves its state in a [`ParkSlot`], and the script's timeout hook calls
//! [`pump`], which reads those sockets directly and runs what arrived in
//! the busy mode of the dispatcher.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use parking_lot::Mutex;
use tessera_resp::encode::ReplyBuf;
use tessera_resp::request::{Limits, RequestParser};

use super::client::Client;
use super::conn::{
    drop_if_over_hard_limit, next_request, pause_applies, pause_in_effect, request_args,
    take_outbox,
};
use super::dispatch;
use super::state::ServerState;
use super::tls::TlsSession;

/// Everything a connection needs to run commands, movable as one pointer.
pub struct ConnState {
    pub client: Client,
    pub parser: RequestParser,
    pub rbuf: BytesMut,
    pub out: ReplyBuf,
}

/// Where a connection's state waits while its task waits for input.
pub struct ParkSlot {
    fd: RawFd,
    /// A TLS connection's state: its socket carries records, not requests.
    tls: Option<Arc<TlsSession>>,
    state: Mutex<Option<Box<ConnState>>>,
    /// The connection's task, to run it once the script is over.
    waker: Mutex<Option<Waker>>,
    /// The pump read input or left replies: the task must look again.
    pumped: AtomicBool,
}

thread_local! {
    /// This worker's connections, by client id.
    static SLOTS: RefCell<HashMap<u64, Arc<ParkSlot>>> = RefCell::new(HashMap::new());
    /// True while the pump runs commands (see [`pumping`]).
    static PUMPING: Cell<bool> = const { Cell::new(false) };
    static LAST_PUMP: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Keeps a connection's slot listed on its worker for the connection's life.
pub struct Registration {
    id: u64,
    pub slot: Arc<ParkSlot>,
}

impl Registration {
    /// Lists a new connection on the current (worker) thread.
    pub fn new(id: u64, fd: RawFd, tls: Option<Arc<TlsSession>>) -> Registration {
        let slot = Arc::new(ParkSlot {
            fd,
            tls,
            state: Mutex::new(None),
            waker: Mutex::new(None),
            pumped: AtomicBool::new(false),
        });
        SLOTS.with(|s| s.borrow_mut().insert(id, slot.clone()));
        Registration { id, slot }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // The thread may be exiting, its locals already gone.
        let _ = SLOTS.try_with(|s| s.borrow_mut().remove(&self.id));
    }
}

/// Frees the read buffers of this worker's parked connections that hold no
/// input, as Redis's clients cron shrinks idle query buffers: an idle
/// connection then costs its state, not a read buffer. A connection that
/// wakes reserves a new one as it reads (an active one loses its buffer at
/// most once a sweep). Runs on the worker's own thread, so every state it
/// finds is parked, not in use.
pub fn release_idle_buffers() {
    SLOTS.with(|slots| {
        for slot in slots.borrow().values() {
            let Some(mut parked) = slot.state.try_lock() else {
                continue;
            };
            if let Some(st) = parked.as_deref_mut() {
                if st.rbuf.is_empty() && st.rbuf.capacity() > 0 {
                    st.rbuf = BytesMut::new();
                    super::conn::store_qbuf(&st.client, &st.rbuf);
                }
            }
        }
    });
}

/// Why a parked connection's task woke up.
pub enum Woke {
    Readable,
    /// The pump ran some of its input or left replies to send.
    Pumped,
}

impl ParkSlot {
    pub fn park(&self, state: Box<ConnState>) {
        *self.state.lock() = Some(state);
    }

    pub fn unpark(&self) -> Option<Box<ConnState>> {
        self.state.lock().take()
    }

    /// Waits until the socket is readable or the pump touched the parked
    /// state. `waker_known` remembers that this task's waker is stored (a
    /// tokio task keeps one waker for its life).
    pub async fn wait<S: super::socket::ClientSocket>(
        &self,
        stream: &S,
        waker_known: &mut bool,
    ) -> std::io::Result<Woke> {
        std::future::poll_fn(|cx| {
            if !*waker_known {
                *self.waker.lock() = Some(cx.waker().clone());
                *waker_known = true;
            }
            // (A load first: no write on the common path.)
            if self.pumped.load(Relaxed) && self.pumped.swap(false, Relaxed) {
                return Poll::Ready(Ok(Woke::Pumped));
            }
            stream.poll_read_ready(cx).map_ok(|()| Woke::Readable)
        })
        .await
    }
}

/// True while [`pump`] runs a command: the dispatcher then leaves alone
/// what belongs to the script still running on this thread (its pending
/// events and ready keys, eviction under its shard locks).
pub fn pumping() -> bool {
    PUMPING.with(|p| p.get())
}

/// The most a pump reads from one client.
const MAX_READ_PER_PUMP: usize = 64 * 1024;

/// How often a busy script lets the pump look at its worker's clients.
const PUMP_INTERVAL: Duration = Duration::from_millis(10);

/// Serves the clients parked on this thread while a busy script runs here:
/// reads what they sent and runs it in busy mode, where the dispatcher
/// answers -BUSY to all but the commands Redis allows then.
pub fn pump(srv: &ServerState) {
    let now = Instant::now();
    if LAST_PUMP
        .with(|l| l.get())
        .is_some_and(|t| now - t < PUMP_INTERVAL)
    {
        return;
    }
    LAST_PUMP.with(|l| l.set(Some(now)));
    let slots: Vec<Arc<ParkSlot>> = SLOTS.with(|s| {
        s.borrow()
            .values()
            .filter(|slot| slot.state.lock().is_some())
            .cloned()
            .collect()
    });
    if slots.is_empty() {
        return;
    }
    let mut fds: Vec<libc::pollfd> = slots
        .iter()
        .map(|s| libc::pollfd {
            fd: s.fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `fds` is a live, exclusively borrowed array of exactly
    // `fds.len()` pollfd structures; a zero timeout never blocks.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    if n < 0 || (n == 0 && slots.iter().all(|s| s.tls.is_none())) {
        return;
    }
    /// The pumped clients are not the script: their commands neither use
    /// its held shards (they wait for them, and give up with -BUSY) nor
    /// show as "lua" to MONITOR. Undone however this ends.
    struct Pumping {
        _not_script: crate::scripting::bridge::OutsideScript,
        _outside: crate::keyspace::OutsideHold,
    }
    impl Drop for Pumping {
        fn drop(&mut self) {
            PUMPING.with(|p| p.set(false));
        }
    }
    PUMPING.with(|p| p.set(true));
    let _pumping = Pumping {
        _not_script: crate::scripting::bridge::OutsideScript::enter(),
        _outside: crate::keyspace::OutsideHold::enter(),
    };
    for (slot, pfd) in slots.iter().zip(&fds) {
        // (Decrypted input may wait in a TLS session with the socket empty.)
        if pfd.revents == 0 && !slot.tls.as_ref().is_some_and(|t| t.has_plaintext()) {
            continue;
        }
        let mut parked = slot.state.lock();
        let Some(state) = parked.as_deref_mut() else {
            continue;
        };
        if state.client.info.killed.load(Relaxed) {
            continue;
        }
        serve_parked(srv, slot.fd, slot.tls.as_deref(), state);
        drop(parked);
        slot.pumped.store(true, Relaxed);
        if let Some(w) = slot.waker.lock().as_ref() {
            // Runs the task once this thread is free again, to send what
            // could not be written and run what had to wait.
            w.wake_by_ref();
        }
    }
}

/// Reads a parked client's input, runs the complete commands in it that
/// may run now, and writes the replies as far as the socket takes them.
fn serve_parked(srv: &ServerState, fd: RawFd, tls: Option<&TlsSession>, state: &mut ConnState) {
    // SAFETY: the descriptor belongs to the parked connection's stream,
    // owned by its task, which cannot run (or drop the stream) while this
    // thread is busy here; ManuallyDrop keeps this borrowed handle from
    // closing it.
    let mut socket = ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
    let socket: &mut std::net::TcpStream = &mut socket;
    let limit = srv.config.client_query_buffer_limit();
    send_pending(socket, tls, state);
    if !state.out.buf.is_empty() || state.client.close_after_reply {
        // The client does not read its replies (or is leaving): its input
        // waits, so its unsent -BUSY replies cannot pile up.
        return;
    }
    let mut chunk = [0u8; 16 * 1024];
    let mut taken = 0;
    loop {
        let read = match tls {
            Some(t) => t.read_plain(socket, &mut chunk),
            None => socket.read(&mut chunk),
        };
        match read {
            // End of input or an error: the task sees it on its next read.
            Ok(0) | Err(_) => break,
            Ok(n) => {
                state.client.worker.reads_processed.add(1);
                state.client.worker.net_input_bytes.add(n as u64);
                state.client.info.total_in.fetch_add(n as u64, Relaxed);
                state.rbuf.extend_from_slice(&chunk[..n]);
                // Beyond a bounded share per pump, input waits in the socket.
                taken += n;
                if state.rbuf.len() as u64 > limit || taken >= MAX_READ_PER_PUMP {
                    break;
                }
            }
        }
    }
    run_while_busy(srv, state);
    send_pending(socket, tls, state);
}

/// Writes the parked client's replies as far as its socket takes them.
fn send_pending(socket: &mut std::net::TcpStream, tls: Option<&TlsSession>, state: &mut ConnState) {
    let mut sent = 0;
    while sent < state.out.buf.len() {
        let wrote = match tls {
            Some(t) => t.write_plain(socket, &state.out.buf[sent..]),
            None => socket.write(&state.out.buf[sent..]),
        };
        match wrote {
            Ok(0) | Err(_) => break,
            Ok(n) => sent += n,
        }
    }
    if let Some(t) = tls {
        // What stays unsent goes out when the task flushes.
        let _ = t.flush(socket);
    }
    if sent > 0 {
        state.client.worker.writes_processed.add(1);
        state
            .client
            .worker
            .count_output(sent as u64, state.client.info.is_replica.load(Relaxed));
        state.client.info.total_out.fetch_add(sent as u64, Relaxed);
        state.out.buf.drain(..sent);
    }
}

/// Runs the complete requests in the buffer, up to one CLIENT PAUSE holds
/// (it and the rest wait for the task, after the script).
fn run_while_busy(srv: &ServerState, state: &mut ConnState) {
    let ConnState {
        client,
        parser,
        rbuf,
        out,
    } = state;
    let limits = Limits {
        proto_max_bulk_len: srv.config.proto_max_bulk_len(),
    };
    let hard_bytes = srv
        .config
        .client_output_buffer_limit(crate::config::ClientClass::Normal)
        .hard_bytes;
    let mut pos = 0;
    while pos < rbuf.len() && !client.close_after_reply {
        let Some((kind, consumed)) = next_request(parser, &rbuf[pos..], &limits, client, out)
        else {
            break;
        };
        let args = request_args(kind, parser, &rbuf[pos..]);
        if !args.is_empty() {
            if pause_in_effect(srv) && pause_applies(srv, client, &args) {
                // Parsed again, from the same bytes, by the task.
                break;
            }
            if client.may_be_pushed_to() {
                take_outbox(client, out);
            }
            dispatch::execute_now(srv, client, out, &args);
            drop_if_over_hard_limit(srv, client, out, hard_bytes);
            // Nothing blocks in busy mode; drop it to be safe. (Nor does
            // anything here feed blocked clients: ready keys wait for the
            // script's end.)
            client.block = None;
            client.fed = None;
        }
        pos += consumed;
    }
    rbuf.advance(pos);
}
