//! One connection's life: read whatever the socket has, run every complete
//! request in it, and send all their replies back with one write. Pipelines
//! of any depth therefore cost one read and one write per batch, as in
//! Redis.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use smallvec::SmallVec;
use tessera_resp::encode::{Protocol, ReplyBuf};
use tessera_resp::request::{Limits, Request, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::client::{Client, ClientInfo, ReplyMode};
use super::dispatch;
use super::state::{unix_ms, ServerState};
use super::stats::WorkerStats;

/// Read-buffer growth step; a big bulk grows the buffer as bytes arrive.
const READ_CHUNK: usize = 16 * 1024;
/// Spare room kept before each read.
const MIN_SPARE: usize = 4096;

pub async fn serve(srv: Arc<ServerState>, worker: Arc<WorkerStats>, stream: TcpStream, id: u64) {
    let _ = stream.set_nodelay(true);
    let (Ok(addr), Ok(laddr)) = (stream.peer_addr(), stream.local_addr()) else {
        return;
    };
    let fd = {
        use std::os::fd::AsRawFd;
        stream.as_raw_fd()
    };
    let info = Arc::new(ClientInfo::new(id, addr, laddr, fd, unix_ms()));
    srv.clients.register(info.clone());
    let mut client = Client {
        id,
        db: 0,
        authenticated: srv.config.requirepass().is_none(),
        reply_mode: ReplyMode::On,
        no_evict: false,
        no_touch: false,
        close_after_reply: false,
        info: info.clone(),
        worker,
        become_monitor: false,
    };
    info.authenticated.store(client.authenticated, Relaxed);
    let mut stream = stream;
    let result = run(&srv, &mut client, &mut stream).await;
    if client.become_monitor && result.is_ok() {
        monitor_feed(&srv, &client, &mut stream).await;
    }
    info.mark_closed();
    srv.clients.unregister(id);
    let mut mons = srv.monitors.lock();
    mons.retain(|m| m.id != id);
    srv.monitor_count.store(mons.len(), Relaxed);
}

async fn run(
    srv: &ServerState,
    client: &mut Client,
    stream: &mut TcpStream,
) -> std::io::Result<()> {
    let mut rbuf = BytesMut::with_capacity(4096);
    let mut parser = RequestParser::new();
    let mut out = ReplyBuf::new(Protocol::Resp2);
    let info = client.info.clone();
    loop {
        if info.killed.load(Relaxed) {
            return Ok(());
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
        let idle = srv.config.timeout_secs();
        let n = match read_with_timeout(stream, &mut rbuf, idle).await {
            Some(r) => r?,
            None => return Ok(()),
        };
        if n == 0 {
            return Ok(());
        }
        client.worker.net_input_bytes.add(n as u64);
        info.total_in.fetch_add(n as u64, Relaxed);
        if rbuf.len() as u64 > srv.config.client_query_buffer_limit() {
            return Ok(());
        }

        let mut pos = 0;
        let mut protocol_error = None;
        let limits = Limits {
            proto_max_bulk_len: srv.config.proto_max_bulk_len(),
        };
        while pos < rbuf.len() && !client.close_after_reply && !client.become_monitor {
            let auth_required = !client.authenticated;
            match parser.parse(&rbuf[pos..], &limits, auth_required) {
                Ok(Some((kind, consumed))) => {
                    if srv.pause.until_ms.load(Relaxed) != 0 {
                        let name = match kind {
                            Request::Multibulk => parser
                                .arg_ranges()
                                .first()
                                .map(|&(s, e)| &rbuf[pos + s..pos + e]),
                            Request::Inline => parser.inline_args().first().map(|a| a.as_slice()),
                            Request::Empty => None,
                        };
                        if name.is_some_and(|n| pause_applies(srv, n)) {
                            wait_if_paused(srv).await;
                        }
                    }
                    let base = pos;
                    match kind {
                        Request::Multibulk => {
                            let args: SmallVec<[&[u8]; 8]> = parser
                                .arg_ranges()
                                .iter()
                                .map(|&(s, e)| &rbuf[base + s..base + e])
                                .collect();
                            dispatch::execute(srv, client, &mut out, &args);
                        }
                        Request::Inline => {
                            let args: SmallVec<[&[u8]; 8]> =
                                parser.inline_args().iter().map(|a| a.as_slice()).collect();
                            dispatch::execute(srv, client, &mut out, &args);
                        }
                        Request::Empty => {}
                    }
                    pos += consumed;
                }
                Ok(None) => break,
                Err(e) => {
                    protocol_error = Some(e);
                    break;
                }
            }
        }
        rbuf.advance(pos);
        info.qbuf.store(rbuf.len(), Relaxed);
        if let Some(e) = protocol_error {
            out.error(e.message());
            client.close_after_reply = true;
        }
        if !out.buf.is_empty() {
            stream.write_all(&out.buf).await?;
            client.worker.net_output_bytes.add(out.buf.len() as u64);
            info.total_out.fetch_add(out.buf.len() as u64, Relaxed);
            out.buf.clear();
            if out.buf.capacity() > 1024 * 1024 {
                out.buf.shrink_to(64 * 1024);
            }
        }
        if client.close_after_reply || client.become_monitor {
            return Ok(());
        }
        info.resp.store(if out.resp3() { 3 } else { 2 }, Relaxed);
    }
}

async fn read_with_timeout(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    idle_secs: u64,
) -> Option<std::io::Result<usize>> {
    if idle_secs == 0 {
        return Some(stream.read_buf(buf).await);
    }
    tokio::time::timeout(Duration::from_secs(idle_secs), stream.read_buf(buf))
        .await
        .ok()
}

/// Whether CLIENT PAUSE holds this command: every command in ALL mode,
/// commands that may write in WRITE mode.
fn pause_applies(srv: &ServerState, name: &[u8]) -> bool {
    use crate::commands::flags::{MAY_REPLICATE, WRITE};
    if !srv.pause.writes_only.load(Relaxed) {
        return true;
    }
    crate::commands::lookup(name).is_some_and(|(_, c)| c.flags & (WRITE | MAY_REPLICATE) != 0)
}

/// Holds a client while CLIENT PAUSE is in effect.
async fn wait_if_paused(srv: &ServerState) {
    loop {
        let until = srv.pause.until_ms.load(Relaxed);
        if until == 0 {
            return;
        }
        let now = unix_ms();
        if now >= until {
            return;
        }
        let _ = tokio::time::timeout(
            Duration::from_millis((until - now) as u64),
            srv.pause.unpaused.notified(),
        )
        .await;
    }
}

/// After MONITOR: forward every command line other clients run.
async fn monitor_feed(srv: &ServerState, client: &Client, stream: &mut TcpStream) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    {
        let mut mons = srv.monitors.lock();
        mons.push(super::state::MonitorFeed {
            id: client.id,
            tx,
            info: client.info.clone(),
        });
        srv.monitor_count.store(mons.len(), Relaxed);
    }
    client.info.is_monitor.store(true, Relaxed);
    let mut scratch = [0u8; 1024];
    loop {
        tokio::select! {
            line = rx.recv() => match line {
                Some(l) => {
                    let written = stream.write_all(&l).await;
                    client.info.omem.fetch_sub(l.len(), Relaxed);
                    if written.is_err() {
                        return;
                    }
                }
                None => return,
            },
            r = stream.read(&mut scratch) => match r {
                // A monitor may only QUIT or drop; anything else is ignored
                // (Redis also discards input from monitors).
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            _ = client.info.wake.notified() => {
                if client.info.killed.load(Relaxed) {
                    return;
                }
            }
        }
    }
}
