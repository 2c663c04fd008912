//! maxmemory enforcement: Redis's sampled approximation of LRU, LFU, TTL and
//! random eviction, run while memory is over the limit before each command,
//! when CONFIG SET lowers maxmemory, and from each worker's periodic tick
//! (which finishes what a bounded call left, as Redis's eviction timer
//! does, without waiting for a command). Candidates are sampled shard by
//! shard (each lock held only to read a few entries), the best one is
//! deleted, and the loop repeats until the allocator reports usage under
//! the limit or nothing can be evicted.

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use rand::Rng;

use super::client::Client;
use super::state::{unix_ms, ServerState};
use super::stats::WorkerStats;
use crate::config::MaxmemoryPolicy as P;
use crate::keyspace::table::lfu_decayed_counter;
use crate::keyspace::{Entry, NUM_SHARDS};

/// Upper bound on deletions per call, so one command never stalls for long.
const MAX_EVICTIONS_PER_CALL: usize = 4096;

/// Frees memory until under `maxmemory`. Returns false when still over the
/// limit (noeviction, or no key eligible for the policy).
pub fn ensure_memory(srv: &ServerState, client: &Client) -> bool {
    free_memory(srv, &client.worker, None)
}

/// After CONFIG SET maxmemory: warns, as Redis does, when the new limit is
/// below what is in use, and evicts at once (the events and the freed
/// memory do not wait for the next command).
pub fn maxmemory_changed(srv: &ServerState, client: &Client) {
    let limit = srv.config.maxmemory();
    if limit == 0 {
        return;
    }
    let used = srv.used_memory_now();
    if limit < used {
        crate::util::log::warning(&format!(
            "WARNING: the new maxmemory value set via CONFIG SET ({limit}) is smaller than the current memory usage ({used}). This will result in key eviction and/or the inability to accept new write commands depending on the maxmemory-policy."
        ));
    }
    // As Redis starts its eviction timer: the workers' ticks go on until
    // memory is under the new limit. Inside EXEC the shards are held as a
    // set, and eviction would lock others while holding them, which only a
    // script may do (see the lock discipline in ARCHITECTURE.md): the
    // ticks alone evict then.
    srv.eviction_unfinished.store(true, Relaxed);
    if !client.multi.in_exec {
        free_memory(srv, &client.worker, None);
    }
}

/// A worker's periodic share of eviction, within `budget`, while an
/// eviction is unfinished (a bounded call stopped early, or CONFIG SET
/// maxmemory lowered the limit), as Redis's eviction timer finishes it.
/// Memory over the limit otherwise waits for the next command, as in
/// Redis (whose clients then hear of the evictions before that reply).
/// Returns whether anything was evicted (its events are then to publish).
pub fn background_evict(srv: &ServerState, worker: &WorkerStats, budget: Duration) -> bool {
    if srv.config.maxmemory() == 0 || !srv.eviction_unfinished.load(Relaxed) {
        return false;
    }
    let before = worker.evicted_keys.get();
    free_memory(srv, worker, Some(Instant::now() + budget));
    worker.evicted_keys.get() != before
}

/// Evicts until memory is under the limit, nothing is left to evict, or
/// the bound is reached: `deadline`, else [`MAX_EVICTIONS_PER_CALL`].
/// Returns whether memory is under the limit. With a deadline (background
/// work) a locked shard is skipped, never waited for.
fn free_memory(srv: &ServerState, worker: &WorkerStats, deadline: Option<Instant>) -> bool {
    let limit = srv.config.maxmemory();
    if limit == 0 || srv.used_memory() <= limit {
        srv.eviction_unfinished.store(false, Relaxed);
        return true;
    }
    let policy = srv.config.maxmemory_policy();
    if policy == P::NoEviction {
        srv.eviction_unfinished.store(false, Relaxed);
        return srv.used_memory_now() <= limit;
    }
    let mut used = srv.used_memory_now();
    let mut evicted = 0;
    while used > limit {
        let stop = match deadline {
            // (The clock is read every 16 evictions, as Redis reads it.)
            Some(d) => evicted % 16 == 15 && Instant::now() >= d,
            None => evicted >= MAX_EVICTIONS_PER_CALL,
        };
        if stop {
            // (Left for the workers' ticks to finish.)
            srv.eviction_unfinished.store(true, Relaxed);
            return false;
        }
        let Some(freed) = evict_one(srv, policy, deadline.is_none()) else {
            // Nothing to evict. (A background pass skips locked shards: it
            // may have missed some, and tries again.)
            if deadline.is_none() {
                srv.eviction_unfinished.store(false, Relaxed);
            }
            return srv.used_memory_now() <= limit;
        };
        evicted += 1;
        worker.evicted_keys.add(1);
        used = used.saturating_sub(freed as u64);
        if used <= limit {
            used = srv.used_memory_now();
        }
    }
    srv.eviction_unfinished.store(false, Relaxed);
    true
}

struct Candidate {
    score: u64,
    shard: usize,
    db: usize,
    key: crate::keyspace::Key,
}

/// Higher is a better eviction candidate.
fn score(policy: P, e: &Entry, expire_at: i64, now_ms: i64, decay: u32) -> u64 {
    match policy {
        P::AllkeysLru | P::VolatileLru => {
            let now_s = (now_ms / 1000) as u32;
            now_s.wrapping_sub(e.access) as u64
        }
        P::AllkeysLfu | P::VolatileLfu => {
            let counter = lfu_decayed_counter(e.access, (now_ms / 60_000) as u32, decay);
            255 - counter as u64
        }
        P::VolatileTtl => u64::MAX - expire_at.max(0) as u64,
        P::AllkeysRandom | P::VolatileRandom | P::NoEviction => 0,
    }
}

/// Locks a shard for eviction (waiting for it when `wait`), but never
/// waits for one a busy script holds: the worker would hang where SCRIPT
/// KILL must get through.
fn lock_unless_busy(
    srv: &ServerState,
    idx: usize,
    wait: bool,
) -> Option<crate::keyspace::ShardGuard<'_>> {
    match srv.keyspace.try_lock_shard(idx) {
        Some(g) => Some(g),
        None if wait && !srv.keyspace.busy.load(std::sync::atomic::Ordering::Relaxed) => {
            Some(srv.keyspace.lock_shard(idx))
        }
        None => None,
    }
}

fn evict_one(srv: &ServerState, policy: P, wait: bool) -> Option<usize> {
    let volatile_only = matches!(
        policy,
        P::VolatileLru | P::VolatileLfu | P::VolatileRandom | P::VolatileTtl
    );
    let samples = srv.config.maxmemory_samples().max(1) as usize;
    let decay = srv.config.lfu_decay_time();
    let now = unix_ms();
    let mut rng = rand::thread_rng();
    let mut best: Option<Candidate> = None;
    let mut found = 0;
    let ndbs = srv.keyspace.num_dbs();
    // Random shards first; a keyspace too sparse for those to find keys
    // (a few keys over 1024 shards) is then swept in order from a random
    // start, so eviction gives up only when no key is eligible at all, as
    // in Redis.
    let tries = samples * 64;
    let sweep_from = rng.gen_range(0..NUM_SHARDS);
    for attempt in 0..tries + NUM_SHARDS {
        if found >= samples || (attempt == tries && best.is_some()) {
            break;
        }
        let shard_idx = if attempt < tries {
            rng.gen_range(0..NUM_SHARDS)
        } else {
            (sweep_from + attempt - tries) % NUM_SHARDS
        };
        let Some(shard) = lock_unless_busy(srv, shard_idx, wait) else {
            continue;
        };
        for db in 0..ndbs {
            let t = &shard.dbs[db];
            let picked = if volatile_only {
                t.random_volatile()
                    .and_then(|(k, at)| t.peek(k).map(|e| (k, e, at)))
            } else {
                t.random_index()
                    .and_then(|i| t.get_index(i))
                    .map(|(k, e)| (k, e, 0))
            };
            if let Some((k, e, at)) = picked {
                found += 1;
                let s = score(policy, e, at, now, decay);
                if best.as_ref().is_none_or(|b| s > b.score) {
                    best = Some(Candidate {
                        score: s,
                        shard: shard_idx,
                        db,
                        key: k.clone(),
                    });
                }
            }
        }
    }
    let c = best?;
    let mut shard = lock_unless_busy(srv, c.shard, wait)?;
    let table = &mut shard.dbs[c.db];
    let e = table.remove(&c.key)?;
    // "evicted" event, WATCHers and client caches.
    table.evicted(&c.key);
    Some(e.value.heap_size() + c.key.len() + 96)
}
