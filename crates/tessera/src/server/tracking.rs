//! Client-side caching (CLIENT TRACKING): which clients may cache which
//! keys, and the invalidation messages sent when those keys change.
//!
//! Default mode remembers, per key, the clients that read it (a one-shot
//! entry: the first change invalidates and forgets it). BCAST mode instead
//! registers prefixes; every change of a matching key is announced to the
//! client. Changes are reported by the keyspace through the per-thread
//! invalidation queue ([`crate::keyspace::events::invalidate`]) and turned
//! into messages here once the command has finished.
//!
//! A message goes to the tracking client itself (RESP3 push `invalidate`),
//! or to its REDIRECT target: as a push if that client speaks RESP3, as a
//! `__redis__:invalidate` pub/sub message if it speaks RESP2 and subscribed.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use parking_lot::Mutex;
use tessera_resp::encode::ReplyBuf;

use super::client::{Client, ClientInfo};
use super::state::ServerState;
use crate::keyspace::events::Invalidated;

/// One client's tracking settings, as its own task sees them.
#[derive(Default, Clone)]
pub struct TrackingState {
    pub on: bool,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    pub redirect: Option<u64>,
    pub prefixes: Vec<Vec<u8>>,
    /// CLIENT CACHING YES/NO for the next command (`Some(true)` = yes).
    pub caching: Option<bool>,
    /// Whether the pending CLIENT CACHING applies to the command now
    /// running (it was set by the previous one).
    pub caching_armed: bool,
    /// The keys the running command (or transaction, or script) remembered,
    /// in order: what its own lazy expiries must not undo (see
    /// [`invalidate`]).
    pub reads: Vec<TrackedRead>,
}

/// A key a tracking client's command remembered.
#[derive(Debug, Clone)]
pub struct TrackedRead {
    pub key: Vec<u8>,
    /// The client was not remembered for the key before this command.
    pub fresh: bool,
    /// How many invalidations this thread had queued when it was
    /// remembered: the ones at or after this position came after it.
    pub seq: usize,
}

/// What other threads need to know about a tracking client.
struct Tracker {
    info: Arc<ClientInfo>,
    redirect: Option<u64>,
    noloop: bool,
    bcast: bool,
    prefixes: Vec<Vec<u8>>,
}

#[derive(Default)]
pub struct TrackingTable {
    /// Default mode: key → ids of clients that may cache it. As in Redis,
    /// a key stays until it changes (or FLUSHDB/FLUSHALL, or the table
    /// limit), even after its clients turned tracking off or went away:
    /// a client that turns it on again is told of keys it read before.
    keys: Mutex<HashMap<Vec<u8>, HashSet<u64>>>,
    /// Clients with tracking on.
    clients: Mutex<HashMap<u64, Tracker>>,
}

impl TrackingTable {
    /// Whether changed keys must be looked at: a client tracks, or keys
    /// read while tracking are still remembered.
    fn any(&self) -> bool {
        !self.clients.lock().is_empty() || !self.keys.lock().is_empty()
    }

    /// Stops collecting changed keys once nothing is tracked at all.
    /// Called with the clients lock held, as `enable` turns collecting on
    /// under it, so the two cannot cross.
    fn stop_collecting_if_idle(&self, clients: &HashMap<u64, Tracker>) {
        if clients.is_empty() && self.keys.lock().is_empty() {
            crate::keyspace::events::set_tracking_on(false);
        }
    }

    pub fn tracked_keys(&self) -> usize {
        self.keys.lock().len()
    }

    pub fn tracking_clients(&self) -> usize {
        self.clients.lock().len()
    }

    /// INFO's tracking_total_items: (key, client) pairs.
    pub fn tracked_items(&self) -> usize {
        self.keys.lock().values().map(|ids| ids.len()).sum()
    }

    /// INFO's tracking_total_prefixes: distinct BCAST prefixes, however
    /// many clients registered each (Redis keeps one entry per prefix).
    pub fn prefix_count(&self) -> usize {
        let clients = self.clients.lock();
        let distinct: HashSet<&[u8]> = clients
            .values()
            .flat_map(|t| t.prefixes.iter().map(|p| p.as_slice()))
            .collect();
        distinct.len()
    }
}

/// Turns tracking on with `state`'s options.
pub fn enable(srv: &ServerState, client: &mut Client, state: TrackingState) {
    let tracker = Tracker {
        info: client.info.clone(),
        redirect: state.redirect,
        noloop: state.noloop,
        bcast: state.bcast,
        prefixes: state.prefixes.clone(),
    };
    {
        let mut clients = srv.tracking.clients.lock();
        clients.insert(client.id, tracker);
        crate::keyspace::events::set_tracking_on(true);
    }
    client.tracking = state;
    client.tracking.on = true;
    client.info.redirect_broken.store(false, Relaxed);
    publish_info(client);
}

/// Turns tracking off for a client (CLIENT TRACKING OFF, RESET, disconnect).
/// The keys it read stay in the table, as in Redis.
pub fn disable(srv: &ServerState, client: &mut Client) {
    if !client.tracking.on {
        return;
    }
    client.tracking = TrackingState::default();
    {
        let mut clients = srv.tracking.clients.lock();
        clients.remove(&client.id);
        srv.tracking.stop_collecting_if_idle(&clients);
    }
    publish_info(client);
}

/// CLIENT LIST's view of the tracking options.
fn publish_info(client: &Client) {
    let t = &client.tracking;
    let mut flags = String::new();
    if t.on {
        flags.push('t');
        if t.bcast {
            flags.push('B');
        }
    }
    *client.info.tracking_flags.lock() = flags;
    client.info.redirect.store(
        if t.on {
            t.redirect.map_or(0, |r| r as i64)
        } else {
            -1
        },
        Relaxed,
    );
}

/// After a read-only command: remembers the keys it read for this client
/// (default mode, honouring OPTIN/OPTOUT and CLIENT CACHING).
pub fn remember_keys(srv: &ServerState, client: &mut Client, keys: &[&[u8]]) {
    let t = &mut client.tracking;
    if !t.on || t.bcast || keys.is_empty() {
        return;
    }
    let caching = if t.caching_armed { t.caching } else { None };
    if t.optin && caching != Some(true) {
        return;
    }
    if t.optout && caching == Some(false) {
        return;
    }
    let evicted = {
        let mut table = srv.tracking.keys.lock();
        let seq = crate::keyspace::events::invalidations_queued();
        // A key named twice by one command (MGET k k) was new to it if it
        // was new the first time.
        let mut new_here: HashSet<&[u8]> = HashSet::new();
        for k in keys {
            let fresh =
                table.entry(k.to_vec()).or_default().insert(client.id) || new_here.contains(k);
            if fresh {
                new_here.insert(k);
            }
            t.reads.push(TrackedRead {
                key: k.to_vec(),
                fresh,
                seq,
            });
        }
        // tracking-table-max-keys: forget keys beyond the limit, telling
        // their clients to drop them (Redis evicts at random as well).
        let max = srv.config.tracking_table_max_keys() as usize;
        let mut evicted = Vec::new();
        if max > 0 && table.len() > max {
            let excess = table.len() - max;
            let victims: Vec<Vec<u8>> = table.keys().take(excess).cloned().collect();
            for k in victims {
                if let Some(ids) = table.remove(&k) {
                    evicted.push((k, ids));
                }
            }
        }
        evicted
    };
    if !evicted.is_empty() {
        let clients = srv.tracking.clients.lock();
        for (key, ids) in &evicted {
            for id in ids {
                if let Some(t) = clients.get(id).filter(|t| !t.bcast) {
                    send(srv, t, Some(std::slice::from_ref(key)), 0, &mut None);
                }
            }
        }
    }
}

/// Builds an invalidation message for `keys` (None: everything) in the
/// receiver's protocol: a push, or a `__redis__:invalidate` message. The
/// "everything" null is the tracking client's (`tracker_resp3`), not the
/// receiver's, as Redis encodes it: a RESP3 client redirecting to a RESP2
/// subscriber sends it a RESP3 null.
fn build_message(out: &mut ReplyBuf, keys: Option<&[Vec<u8>]>, tracker_resp3: bool) {
    if out.resp3() {
        out.push(2);
        out.bulk(b"invalidate");
    } else {
        out.array(3);
        out.bulk(b"message");
        out.bulk(b"__redis__:invalidate");
    }
    match keys {
        Some(keys) => {
            out.array(keys.len());
            for k in keys {
                out.bulk(k);
            }
        }
        None if tracker_resp3 => out.raw(b"_\r\n"),
        None => out.raw(b"$-1\r\n"),
    }
}

/// Sends an invalidation for `keys` on behalf of tracking client `id`.
/// `me`/`own`: the client running the command, whose own messages go into
/// its reply buffer (after the reply, as Redis sends them).
fn send(
    srv: &ServerState,
    tracker: &Tracker,
    keys: Option<&[Vec<u8>]>,
    me: u64,
    own: &mut Option<&mut ReplyBuf>,
) {
    let target = match tracker.redirect {
        Some(r) => match srv.clients.get(r) {
            Some(info) => info,
            // A vanished redirect target: a RESP3 tracking client is told
            // (tracking-redir-broken), and TRACKINGINFO says so from now on.
            None => {
                tracker.info.redirect_broken.store(true, Relaxed);
                if tracker.info.resp.load(Relaxed) == 3 {
                    srv.pubsub
                        .send_to(srv, &tracker.info, |out: &mut ReplyBuf| {
                            out.push(2);
                            out.bulk(b"tracking-redir-broken");
                            out.int(r as i64);
                        });
                }
                return;
            }
        },
        None => tracker.info.clone(),
    };
    let resp3 = target.resp.load(Relaxed) == 3;
    let tracker_resp3 = tracker.info.resp.load(Relaxed) == 3;
    if !resp3 && target.sub_counts[0].load(Relaxed) == 0 {
        // A RESP2 client can only receive them as pub/sub messages.
        return;
    }
    if target.id == me {
        if let Some(out) = own.as_deref_mut() {
            build_message(out, keys, tracker_resp3);
            return;
        }
    }
    srv.pubsub.send_to(srv, &target, |out: &mut ReplyBuf| {
        build_message(out, keys, tracker_resp3)
    });
}

/// Sends the invalidations for the keys `client`'s command changed.
/// Messages to the client itself are appended to `own`.
pub fn invalidate_keys(
    srv: &ServerState,
    client: &mut Client,
    own: &mut ReplyBuf,
    changed: &[Invalidated],
) {
    let reads = std::mem::take(&mut client.tracking.reads);
    let mut own = Some(own);
    invalidate(srv, Some(client.id), &reads, changed, &mut own);
}

/// Sends invalidations for keys the server itself changed (expiry).
pub fn invalidate_from_server(srv: &ServerState, changed: &[Invalidated]) {
    invalidate(srv, None, &[], changed, &mut None);
}

/// `reads`: the keys the command of client `by` remembered (see
/// [`remember_keys`]). Redis remembers a command's reads after it runs and
/// sends each invalidation as the change happens; here reads are
/// remembered before the read (see dispatch) and invalidations are sent
/// once the command (or transaction, or script) is over, so for the keys
/// the reader read, its part is replayed in Redis's order (see
/// [`ReaderReplay`]): whether it is told, and whether it stays remembered.
fn invalidate(
    srv: &ServerState,
    by: Option<u64>,
    reads: &[TrackedRead],
    changed: &[Invalidated],
    own: &mut Option<&mut ReplyBuf>,
) {
    if !srv.tracking.any() {
        return;
    }
    let me = by.unwrap_or(0);
    let replays = replay_reader(reads, changed);
    // Default mode: one message per key to each client that cached it.
    let mut per_key: Vec<(Vec<u8>, HashSet<u64>, Option<ReaderReplay>)> = Vec::new();
    {
        let mut table = srv.tracking.keys.lock();
        for k in changed.iter().map(|c| &c.key) {
            if let Some(ids) = table.remove(k) {
                let replay = by
                    .filter(|id| ids.contains(id))
                    .and_then(|_| replays.get(k.as_slice()).copied());
                if let (Some(id), Some(ReaderReplay { kept: true, .. })) = (by, replay) {
                    table.entry(k.clone()).or_default().insert(id);
                }
                per_key.push((k.clone(), ids, replay));
            }
        }
    }
    let clients = srv.tracking.clients.lock();
    for (key, ids, replay) in &per_key {
        for id in ids {
            // Gone, tracking off, or tracking again but in BCAST mode
            // (which is told by prefix, below): no message.
            let Some(t) = clients.get(id) else { continue };
            if t.bcast || (t.noloop && by == Some(*id)) {
                continue;
            }
            if by == Some(*id) && replay.is_some_and(|r| !r.told) {
                continue;
            }
            send(srv, t, Some(std::slice::from_ref(key)), me, own);
        }
    }
    // BCAST: every changed key matching a registered prefix, one message
    // per prefix, prefix by prefix in byte order as Redis walks them (then
    // oldest client first).
    let mut bcast: Vec<(&[u8], u64, &Tracker)> = clients
        .iter()
        .filter(|(_, t)| t.bcast)
        .flat_map(|(id, t)| t.prefixes.iter().map(move |p| (p.as_slice(), *id, t)))
        .collect();
    bcast.sort_unstable_by_key(|&(p, id, _)| (p, id));
    let first_change_expired = if bcast.is_empty() {
        HashSet::new()
    } else {
        first_change_is_expiry(changed)
    };
    for (p, id, t) in bcast {
        // NOLOOP leaves out the client's own changes, but an expiry (or
        // eviction) is nobody's, even when the client's read caused it;
        // Redis keeps the first cause of a key's change.
        let own_change = t.noloop && by == Some(id);
        // Sorted and once each, as Redis lists them (from a radix tree of
        // the keys changed under the prefix).
        let mut matching: Vec<Vec<u8>> = changed
            .iter()
            .filter(|c| c.key.starts_with(p))
            .filter(|c| !own_change || first_change_expired.contains(c.key.as_slice()))
            .map(|c| c.key.clone())
            .collect();
        matching.sort();
        matching.dedup();
        if !matching.is_empty() {
            send(srv, t, Some(&matching), me, own);
        }
    }
    srv.tracking.stop_collecting_if_idle(&clients);
}

/// The reader's part in a key's invalidation, as Redis would have played
/// it: told of a change while it was remembered, and remembered at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ReaderReplay {
    told: bool,
    kept: bool,
}

/// Replays, for each changed key the reader read, its reads and the key's
/// changes in order. A read's position is how many invalidations were
/// queued when it was remembered. Redis remembers a read after its command,
/// so a read that lazily expired the key (the last read before that
/// expiry) counts after the expiry; a read that precedes a write came from
/// an earlier command (writes remember nothing) and counts before it.
/// Before the first read the reader was remembered if that read found it
/// so (nothing leaves the table before invalidations are sent). Two writes
/// of a key in one batch tell the reader once, not twice as Redis would.
fn replay_reader<'a>(
    reads: &'a [TrackedRead],
    changed: &[Invalidated],
) -> HashMap<&'a [u8], ReaderReplay> {
    let mut replays = HashMap::new();
    if reads.is_empty() {
        return replays;
    }
    let mut changes: HashMap<&[u8], Vec<(usize, bool)>> = HashMap::new();
    for (at, c) in changed.iter().enumerate() {
        changes
            .entry(c.key.as_slice())
            .or_default()
            .push((at, c.by_expiry));
    }
    let mut read_seqs: HashMap<&[u8], Vec<(usize, bool)>> = HashMap::new();
    for r in reads {
        if changes.contains_key(r.key.as_slice()) {
            read_seqs
                .entry(r.key.as_slice())
                .or_default()
                .push((r.seq, r.fresh));
        }
    }
    for (key, key_reads) in read_seqs {
        let Some(key_changes) = changes.get(key) else {
            continue;
        };
        let mut remembered = !key_reads[0].1;
        let mut told = false;
        let mut next = 0;
        for &(at, by_expiry) in key_changes {
            let upto = next + key_reads[next..].iter().take_while(|r| r.0 <= at).count();
            if by_expiry && upto > next {
                // The expiry, then the read that caused it. That read
                // found the reader remembered (by an earlier command, or
                // before) unless it was new to the key (for one command
                // naming it twice, the first time says).
                told |= !key_reads[upto - 1].1;
                remembered = true;
            } else {
                if upto > next {
                    remembered = true;
                }
                told |= remembered;
                remembered = false;
            }
            next = upto;
        }
        if next < key_reads.len() {
            remembered = true;
        }
        replays.insert(
            key,
            ReaderReplay {
                told,
                kept: remembered,
            },
        );
    }
    replays
}

/// The keys whose first change was an expiry or an eviction.
fn first_change_is_expiry(changed: &[Invalidated]) -> HashSet<&[u8]> {
    let mut seen = HashSet::new();
    let mut expired = HashSet::new();
    for c in changed {
        if seen.insert(c.key.as_slice()) && c.by_expiry {
            expired.insert(c.key.as_slice());
        }
    }
    expired
}

/// FLUSHDB/FLUSHALL: every tracking client is told to drop everything.
pub fn invalidate_all(srv: &ServerState, by: u64, own: &mut ReplyBuf) {
    if !srv.tracking.any() {
        return;
    }
    srv.tracking.keys.lock().clear();
    let clients = srv.tracking.clients.lock();
    let mut own = Some(own);
    // Oldest client first, as Redis walks its client list (two clients
    // redirecting to one receiver each send their own null); the client
    // that flushed last, as Redis holds its own message back until its
    // command is done.
    let mut ids: Vec<u64> = clients.keys().copied().collect();
    ids.sort_unstable_by_key(|&id| (id == by, id));
    for id in ids {
        if let Some(t) = clients.get(&id) {
            send(srv, t, None, by, &mut own);
        }
    }
    srv.tracking.stop_collecting_if_idle(&clients);
}

/// Whether a client's redirect target has gone away.
pub fn redirect_broken(_srv: &ServerState, client: &Client) -> bool {
    client.tracking.redirect.is_some() && client.info.redirect_broken.load(Relaxed)
}
