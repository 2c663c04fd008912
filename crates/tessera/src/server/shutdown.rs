//! Shutting down, by SHUTDOWN or a signal, as Redis 7.0 does: unless NOW
//! (or `shutdown-timeout 0`), a server whose replicas have not acknowledged
//! the whole stream holds writes, asks them for an ACK and waits for them
//! up to `shutdown-timeout` seconds (SHUTDOWN ABORT ends the wait), so that
//! a restart or a failover finds them with every write; then the final
//! save, and exit.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use super::client::Client;
use super::state::{unix_ms, ServerState, HELD_BY_SHUTDOWN};
use crate::util::log;

/// How a shutdown was asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShutdownFlags {
    pub save: bool,
    pub nosave: bool,
    /// Do not wait for lagging replicas.
    pub now: bool,
    /// Exit even if the final save fails.
    pub force: bool,
}

/// A shutdown that did not happen: aborted, or its final save failed.
#[derive(Debug)]
pub struct StillRunning;

/// The shutdowns waiting for their replicas.
#[derive(Default)]
pub struct ShutdownWaits {
    waiting: AtomicUsize,
    /// Bumped by SHUTDOWN ABORT: a waiting shutdown that sees it change
    /// gives up.
    aborts: AtomicU64,
}

/// Whether every replica has acknowledged the whole stream (Redis's
/// `isReadyToShutdown`; true without replicas).
fn replicas_in_sync(srv: &ServerState) -> bool {
    let st = srv.repl.stream.lock();
    st.feeds
        .iter()
        .all(|f| f.info.is_gone() || f.ack_offset.load(SeqCst) == st.offset)
}

fn must_wait(srv: &ServerState, flags: ShutdownFlags) -> bool {
    !flags.now && srv.config.shutdown_timeout() > 0 && !replicas_in_sync(srv)
}

/// SHUTDOWN from a client. When it must wait for replicas, the wait is the
/// client's connection task's ([`wait_then_finish`], through
/// `Client::shutdown_request`), so its thread keeps serving the others (and
/// the replicas' ACKs); a client served while a busy script holds its
/// thread cannot wait, and shuts down at once. Returns only if the server
/// is still running (the final save failed).
pub fn from_client(
    srv: &ServerState,
    client: &mut Client,
    flags: ShutdownFlags,
) -> Result<(), StillRunning> {
    if must_wait(srv, flags) && !super::parked::pumping() {
        client.shutdown_request = Some(flags);
        return Ok(());
    }
    finish(srv, flags)
}

/// Waits for the replicas (if it must), then [`finish`]es. Err if the
/// server is still running: the wait was aborted, or the save failed.
pub async fn wait_then_finish(srv: &ServerState, flags: ShutdownFlags) -> Result<(), StillRunning> {
    let waits = must_wait(srv, flags);
    if waits {
        let aborts = srv.shutdown_waits.aborts.load(SeqCst);
        super::replication::master::request_acks(srv);
        srv.pause.hold(HELD_BY_SHUTDOWN);
        srv.shutdown_waits.waiting.fetch_add(1, SeqCst);
        log::notice("Waiting for replicas before shutting down.");
        let deadline = Instant::now() + Duration::from_secs(srv.config.shutdown_timeout());
        let aborted = loop {
            if srv.shutdown_waits.aborts.load(SeqCst) != aborts {
                break true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || replicas_in_sync(srv) {
                break false;
            }
            // (ACKs wake it; the poll covers an abort or a replica gone.)
            let _ = tokio::time::timeout(
                left.min(Duration::from_millis(100)),
                srv.repl.acks.notified(),
            )
            .await;
        };
        srv.shutdown_waits.waiting.fetch_sub(1, SeqCst);
        if aborted {
            return Err(StillRunning);
        }
    }
    let r = finish(srv, flags);
    if waits {
        // Still running: writes resume.
        srv.pause.release(HELD_BY_SHUTDOWN);
    }
    r
}

/// SHUTDOWN ABORT: false when no shutdown is waiting.
pub fn abort(srv: &ServerState) -> bool {
    if srv.shutdown_waits.waiting.load(SeqCst) == 0 {
        return false;
    }
    srv.shutdown_waits.aborts.fetch_add(1, SeqCst);
    srv.pause.release(HELD_BY_SHUTDOWN);
    srv.repl.acks.notify_waiters();
    log::notice("Shutdown manually aborted.");
    true
}

/// Says which replicas lag, then the final save (see
/// [`super::persist::save_for_shutdown`]) and exit. Returns only when the
/// save failed and `force` is not given.
pub fn finish(srv: &ServerState, flags: ShutdownFlags) -> Result<(), StillRunning> {
    log_replicas(srv);
    if super::persist::save_for_shutdown(srv, flags.save, flags.nosave).is_err() && !flags.force {
        return Err(StillRunning);
    }
    super::shutdown_now(srv)
}

fn log_replicas(srv: &ServerState) {
    let st = srv.repl.stream.lock();
    let feeds: Vec<_> = st.feeds.iter().filter(|f| !f.info.is_gone()).collect();
    if feeds.is_empty() {
        return;
    }
    let now_s = unix_ms() / 1000;
    let mut lagging = 0;
    for f in &feeds {
        let acked = f.ack_offset.load(SeqCst);
        if acked == st.offset {
            continue;
        }
        lagging += 1;
        let state = f.state();
        let lag = if state == super::replication::FeedState::Online {
            now_s - f.ack_ms.load(SeqCst) / 1000
        } else {
            0
        };
        log::warning(&format!(
            "Lagging replica {} reported offset {} behind master, lag={lag}, state={}.",
            f.label(),
            st.offset.saturating_sub(acked),
            state.name()
        ));
    }
    log::notice(&format!(
        "{} of {} replicas are in sync when shutting down.",
        feeds.len() - lagging,
        feeds.len()
    ));
}
