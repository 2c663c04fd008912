//! FAILOVER (Redis 7.0): a coordinated switchover that loses nothing.
//!
//! The master pauses writes, waits until the target replica has
//! acknowledged every byte of the stream (or, with FORCE, until the
//! timeout), then follows the target with `PSYNC <replid> <offset>
//! FAILOVER`: the target, finding its own replication ID, promotes itself
//! and answers +CONTINUE, and the old master's writes resume as a
//! replica's (read-only). A target that refuses, or a timeout without
//! FORCE, ends the failover with this server still the master.

use std::sync::atomic::Ordering::*;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::FeedState;
use crate::server::state::ServerState;
use crate::util::log;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    None,
    WaitingForSync,
    InProgress,
}

impl Phase {
    /// INFO's `master_failover_state`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::None => "no-failover",
            Phase::WaitingForSync => "waiting-for-sync",
            Phase::InProgress => "failover-in-progress",
        }
    }
}

pub struct Failover {
    pub phase: Phase,
    /// The chosen replica (None: the first one caught up).
    pub target: Option<(String, u16)>,
    pub force: bool,
    pub deadline: Option<Instant>,
    /// Bumped by every FAILOVER and ABORT (an old thread stops).
    pub generation: u64,
}

impl Default for Failover {
    fn default() -> Self {
        Failover {
            phase: Phase::None,
            target: None,
            force: false,
            deadline: None,
            generation: 0,
        }
    }
}

pub type FailoverState = Mutex<Failover>;

/// The parsed command.
pub struct Request {
    pub to: Option<(String, u16)>,
    pub force: bool,
    pub abort: bool,
    pub timeout_ms: Option<i64>,
}

/// FAILOVER: validates and starts it (the switchover runs on a thread of
/// its own; the reply is +OK at once, as Redis's).
pub fn start(srv: &ServerState, req: Request) -> Result<(), String> {
    let repl = &srv.repl;
    if req.abort {
        if req.to.is_some() || req.force || req.timeout_ms.is_some() {
            return Err("ERR syntax error".into());
        }
        let mut f = repl.failover.lock();
        if f.phase == Phase::None {
            return Err("ERR No failover in progress.".into());
        }
        let was = f.phase;
        end(srv, &mut f, "Failover manually aborted");
        drop(f);
        if was == Phase::InProgress {
            super::stop_following(srv);
        }
        return Ok(());
    }
    if repl.is_replica() {
        return Err("ERR FAILOVER is not valid when server is a replica.".into());
    }
    let replicas = super::master::replicas(srv);
    if replicas.is_empty() {
        return Err("ERR FAILOVER requires connected replicas.".into());
    }
    if req.force && (req.timeout_ms.is_none() || req.to.is_none()) {
        return Err(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.".into(),
        );
    }
    if repl.failover.lock().phase != Phase::None {
        return Err("ERR FAILOVER already in progress.".into());
    }
    if let Some((host, port)) = &req.to {
        let Some(r) = replicas
            .iter()
            .find(|r| r.0.eq_ignore_ascii_case(host) && r.1 == *port)
        else {
            return Err("ERR FAILOVER target HOST and PORT is not a replica.".into());
        };
        if r.2 != FeedState::Online {
            return Err("ERR FAILOVER target replica is not online.".into());
        }
    }
    let mut f = repl.failover.lock();
    if f.phase != Phase::None {
        return Err("ERR FAILOVER already in progress.".into());
    }
    f.phase = Phase::WaitingForSync;
    let f_target = req.to.clone();
    f.target = req.to;
    f.force = req.force;
    f.deadline = req
        .timeout_ms
        .map(|t| Instant::now() + Duration::from_millis(t as u64));
    f.generation += 1;
    let generation = f.generation;
    drop(f);
    // Writes wait (they are not refused) until the failover ends.
    srv.pause.hold(crate::server::state::HELD_BY_FAILOVER);
    log::notice(&match &f_target {
        Some((h, p)) => format!("FAILOVER requested to {h}:{p}."),
        None => "FAILOVER requested to any replica.".to_string(),
    });
    let srv = srv.me();
    std::thread::Builder::new()
        .name("tessera-failover".into())
        .spawn(move || run(&srv, generation))
        .map(|_| ())
        .map_err(|e| format!("ERR cannot start the failover: {e}"))
}

/// Ends the failover (whatever phase it is in) and resumes writes.
fn end(srv: &ServerState, f: &mut Failover, why: &str) {
    if f.phase != Phase::None && !why.is_empty() {
        log::notice(&format!("FAILOVER aborted: {why}"));
    }
    f.phase = Phase::None;
    f.target = None;
    f.deadline = None;
    f.generation += 1;
    srv.pause.release(crate::server::state::HELD_BY_FAILOVER);
}

fn run(srv: &ServerState, generation: u64) {
    let repl = &srv.repl;
    // Waiting for sync: the target's ACK must reach the stream's end.
    let target = loop {
        let f = repl.failover.lock();
        if f.generation != generation {
            return;
        }
        let offset = repl.stream.lock().offset;
        let caught_up = super::master::replicas(srv).into_iter().find(|r| {
            r.2 == FeedState::Online
                && r.3 >= offset
                && f.target
                    .as_ref()
                    .is_none_or(|(h, p)| r.0.eq_ignore_ascii_case(h) && r.1 == *p)
        });
        if let Some(r) = caught_up {
            break (r.0, r.1);
        }
        if f.deadline.is_some_and(|d| Instant::now() >= d) {
            if f.force {
                if let Some(t) = f.target.clone() {
                    break t;
                }
            }
            let mut f = f;
            end(srv, &mut f, "Replica never caught up before timeout");
            return;
        }
        drop(f);
        std::thread::sleep(Duration::from_millis(10));
    };
    {
        let mut f = repl.failover.lock();
        if f.generation != generation {
            return;
        }
        f.phase = Phase::InProgress;
        f.target = Some(target.clone());
    }
    log::notice(&format!(
        "Failover target {}:{} is synced, failing over.",
        target.0, target.1
    ));
    // Follow the target, asking it to take over; the link ends the
    // failover when the target answers.
    repl.failover_psync.store(true, SeqCst);
    super::follow(srv, &target.0, target.1);
}

/// The link's PSYNC FAILOVER was answered: the switchover is done (or,
/// refused, undone).
pub fn psync_answered(srv: &ServerState, accepted: bool) {
    let repl = &srv.repl;
    if !repl.failover_psync.swap(false, SeqCst) {
        return;
    }
    let mut f = repl.failover.lock();
    if accepted {
        log::notice("Failover target accepted the PSYNC FAILOVER request; failover complete.");
        end(srv, &mut f, "");
    } else {
        end(srv, &mut f, "Failover target rejected psync request");
        drop(f);
        super::stop_following(srv);
    }
}
