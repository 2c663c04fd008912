//! `maxmemory-clients`: when the clients' buffers together use more than
//! the limit, the clients using the most are disconnected until the rest
//! fit, as Redis 7.0's client eviction does. Clients with CLIENT NO-EVICT
//! on are never chosen. It runs before a client's command is admitted (at
//! most once a millisecond across the server) and from the 100 ms cron,
//! which catches clients whose buffers grow while they send nothing (a
//! subscriber that does not read).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

use super::state::{unix_us, ServerState};
use crate::util::log;

/// Redis's floor for a configured limit: below it no client could talk to
/// the server at all.
const MIN_LIMIT: u64 = 128 * 1024;

/// How often (µs) admission looks at the clients' memory.
const CHECK_EVERY_US: i64 = 1000;

/// Evictions so far (INFO `evicted_clients`) and the last look.
#[derive(Default)]
pub struct ClientEviction {
    pub evicted: AtomicU64,
    last_check_us: AtomicI64,
}

/// The limit in bytes, None when client eviction is off (0, or a
/// percentage of a maxmemory of 0).
pub fn limit(srv: &ServerState) -> Option<u64> {
    let bytes = match srv.config.maxmemory_clients() {
        Ok(b) => b,
        Err(percent) => srv.config.maxmemory().saturating_mul(u64::from(percent)) / 100,
    };
    (bytes > 0).then_some(bytes.max(MIN_LIMIT))
}

/// Admission's look: evicts if needed; true when `current` (the client
/// asking) was one of those disconnected, whose command must not run.
#[inline]
pub fn before_command(srv: &ServerState, current: u64) -> bool {
    let Some(limit) = limit(srv) else {
        return false;
    };
    let now = unix_us();
    let last = srv.client_eviction.last_check_us.load(Relaxed);
    if now - last < CHECK_EVERY_US
        || srv
            .client_eviction
            .last_check_us
            .compare_exchange(last, now, Relaxed, Relaxed)
            .is_err()
    {
        return false;
    }
    evict(srv, limit, Some(current))
}

/// The cron's look.
pub fn from_cron(srv: &ServerState) {
    if let Some(limit) = limit(srv) {
        evict(srv, limit, None);
    }
}

fn evict(srv: &ServerState, limit: u64, current: Option<u64>) -> bool {
    let clients = srv.clients.snapshot();
    let mut total: u64 = clients.iter().map(|c| c.total_memory() as u64).sum();
    if total < limit {
        return false;
    }
    let mut candidates: Vec<_> = clients
        .into_iter()
        // (As Redis: only normal and pub/sub clients are evicted, never a
        // replica or the master link.)
        .filter(|c| {
            !c.no_evict.load(Relaxed) && !c.is_replica.load(Relaxed) && !c.is_master.load(Relaxed)
        })
        .map(|c| (c.total_memory() as u64, c))
        .collect();
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    let mut evicted_current = false;
    for (mem, c) in candidates {
        if total < limit {
            break;
        }
        total = total.saturating_sub(mem);
        log::verbose(&format!(
            "Evicting client: {}",
            c.describe(super::state::unix_ms())
        ));
        srv.client_eviction.evicted.fetch_add(1, Relaxed);
        srv.clients.unregister(c.id);
        c.kill();
        evicted_current |= Some(c.id) == current;
    }
    evicted_current
}
