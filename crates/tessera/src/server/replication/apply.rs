//! A replica applies its master's stream on several threads, in order.
//!
//! The link thread parses the master's commands and routes each one. A
//! command whose keys all fall in one shard goes to that shard's lane
//! (shard index mod the number of lanes) and runs there after every earlier
//! command of the same lane. Everything else is a barrier that the link
//! thread runs itself once every lane is idle: commands without keys
//! (SELECT, FLUSHALL, SWAPDB, FUNCTION, PUBLISH, the master's PINGs), keys in
//! several shards, transactions (MULTI to EXEC), scripts, and commands
//! whose key specs do not name all they touch (SORT's BY and GET patterns,
//! MIGRATE).
//!
//! Why the result is the state one thread reaches applying the stream in
//! order: two commands in different lanes touch different shards, so which
//! runs first cannot change either's effect; two commands of one shard
//! keep their order in its lane; a barrier runs after everything before it
//! and before everything after it. The database a lane's command runs in
//! is the link's SELECT state when it was routed.
//!
//! The link appends the master's bytes to this server's own stream when it
//! routes them, so its offset can run ahead of what the lanes have applied.
//! Whatever needs the two to agree first waits for the lanes to drain:
//! the link's ACKs (an acknowledged offset is applied), a full sync that a
//! chained replica asks for ([`Replication::quiesce`](super::Replication::quiesce)),
//! REPLICAOF NO ONE, and the end of a link.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::commands::meta::{ksflags, BeginSearch, FindKeys};
use crate::server::client::{Client, ClientInfo, PeerAddr};
use crate::server::dispatch::{self, Caller};
use crate::server::state::{unix_ms, ServerState};
use crate::server::stats::WorkerStats;

/// Bytes a lane may have queued before the link waits for it.
const LANE_QUEUE_BYTES: usize = 8 << 20;

/// The apply threads of a replica.
pub struct Lanes {
    lanes: Vec<Arc<Lane>>,
}

struct Lane {
    queue: Mutex<Queue>,
    /// Wakes the lane's thread: a batch arrived.
    work: Condvar,
    /// Wakes the link: the lane applied a batch or went idle.
    progress: Condvar,
}

#[derive(Default)]
struct Queue {
    batches: VecDeque<Batch>,
    bytes: usize,
    /// A batch is being applied.
    busy: bool,
}

/// Commands routed to one lane, their arguments in one buffer.
#[derive(Default)]
pub struct Batch {
    data: Vec<u8>,
    /// (start, end) of each argument in `data`.
    spans: Vec<(usize, usize)>,
    /// (database, first span, argument count) of each command.
    commands: Vec<(usize, usize, usize)>,
}

impl Batch {
    pub fn push(&mut self, db: usize, args: &[&[u8]]) {
        let first = self.spans.len();
        for a in args {
            let start = self.data.len();
            self.data.extend_from_slice(a);
            self.spans.push((start, self.data.len()));
        }
        self.commands.push((db, first, args.len()));
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }
}

impl Lanes {
    /// Starts `count` apply threads (they live as long as the process, idle
    /// while this server is not a replica).
    pub fn start(srv: &ServerState, count: usize) -> Lanes {
        let ncmds = crate::commands::command_count_with_subs();
        let mut lanes = Vec::with_capacity(count);
        for i in 0..count {
            let lane = Arc::new(Lane {
                queue: Mutex::new(Queue::default()),
                work: Condvar::new(),
                progress: Condvar::new(),
            });
            let srv = srv.me();
            let mine = lane.clone();
            let stats = Arc::new(WorkerStats::new(ncmds));
            let spawned = std::thread::Builder::new()
                .name(format!("tessera-apply-{i}"))
                .spawn(move || lane_thread(&srv, &mine, stats));
            match spawned {
                Ok(_) => lanes.push(lane),
                Err(e) => {
                    crate::util::log::warning(&format!("Can't start a replica apply thread: {e}"));
                    break;
                }
            }
        }
        Lanes { lanes }
    }

    pub fn count(&self) -> usize {
        self.lanes.len()
    }

    /// The lane `args` runs in, or None for a barrier (see the module's
    /// documentation).
    pub fn lane_for(&self, args: &[&[u8]]) -> Option<usize> {
        if self.lanes.len() < 2 {
            return None;
        }
        single_shard(args).map(|shard| shard % self.lanes.len())
    }

    /// Hands each non-empty batch to its lane, waiting while a lane has
    /// more than [`LANE_QUEUE_BYTES`] queued.
    pub fn submit(&self, batches: &mut [Batch]) {
        for (lane, batch) in self.lanes.iter().zip(batches.iter_mut()) {
            if batch.is_empty() {
                continue;
            }
            let batch = std::mem::take(batch);
            let mut q = lane.queue.lock();
            while q.bytes > LANE_QUEUE_BYTES {
                lane.progress.wait(&mut q);
            }
            q.bytes += batch.data.len();
            q.batches.push_back(batch);
            lane.work.notify_one();
        }
    }

    /// Waits until every lane has applied all it was given.
    pub fn drain(&self) {
        for lane in &self.lanes {
            let mut q = lane.queue.lock();
            while q.busy || !q.batches.is_empty() {
                lane.progress.wait(&mut q);
            }
        }
    }
}

/// The shard of every key of `args` when they share one and the key specs
/// name every key the command touches.
fn single_shard(args: &[&[u8]]) -> Option<usize> {
    use crate::commands::flags;
    let resolved = dispatch::resolve(args, Caller::Client).ok()?;
    let cmd = resolved.spec;
    if cmd.has(flags::RUNS_SCRIPT | flags::OPENS_MULTI | flags::TOUCHES_ARBITRARY_KEYS) {
        return None;
    }
    let incomplete = cmd.key_specs.iter().any(|s| {
        s.flags & ksflags::INCOMPLETE != 0
            || matches!(s.begin_search, BeginSearch::Unknown)
            || matches!(s.find_keys, FindKeys::Unknown)
    });
    if incomplete {
        return None;
    }
    let keys = cmd.key_indices(args).ok()?;
    let shard = crate::keyspace::shard_of(args.get(*keys.first()?)?);
    for &k in &keys[1..] {
        if crate::keyspace::shard_of(args.get(k)?) != shard {
            return None;
        }
    }
    Some(shard)
}

/// The master client a lane's commands run as.
pub(super) fn master_client(srv: &ServerState, addr: PeerAddr, stats: Arc<WorkerStats>) -> Client {
    let id = srv.clients.next_id();
    let info = Arc::new(ClientInfo::new(id, addr.clone(), addr, -1, unix_ms()));
    let mut client = Client::new(srv, id, info, stats);
    client.from_master = true;
    client.authenticated = true;
    client
}

fn lane_thread(srv: &ServerState, lane: &Lane, stats: Arc<WorkerStats>) {
    crate::keyspace::table::set_master_view(true);
    let addr = PeerAddr::Tcp(std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
    let mut client = master_client(srv, addr, stats);
    let mut out = tessera_resp::encode::ReplyBuf::new(tessera_resp::encode::Protocol::Resp2);
    loop {
        let batch = {
            let mut q = lane.queue.lock();
            q.busy = false;
            while q.batches.is_empty() {
                lane.progress.notify_all();
                lane.work.wait(&mut q);
            }
            q.busy = true;
            q.batches.pop_front()
        };
        let Some(batch) = batch else { continue };
        let mut args: Vec<&[u8]> = Vec::new();
        for &(db, first, n) in &batch.commands {
            args.clear();
            args.extend(
                batch.spans[first..first + n]
                    .iter()
                    .map(|&(s, e)| &batch.data[s..e]),
            );
            if client.db != db {
                client.db = db;
                client
                    .info
                    .db
                    .store(db, std::sync::atomic::Ordering::Relaxed);
            }
            dispatch::execute_now(srv, &mut client, &mut out, &args);
            out.buf.clear();
        }
        let mut q = lane.queue.lock();
        q.bytes -= batch.data.len();
        lane.progress.notify_all();
    }
}
