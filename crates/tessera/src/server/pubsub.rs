//! Pub/sub across threads: who is subscribed to what, and delivery of
//! messages into other clients' outboxes.
//!
//! A subscriber's connection task owns its socket, so a publisher running on
//! another worker cannot write to it. Instead each client has an *outbox*
//! ([`ClientInfo::outbox`]): publishers append the encoded message (in the
//! subscriber's protocol) and wake the task, which moves the bytes into its
//! reply buffer and writes them. The outbox is what
//! `client-output-buffer-limit pubsub` bounds: a subscriber that does not
//! read is disconnected once its outbox passes the hard limit, or stays
//! above the soft limit for longer than allowed.
//!
//! The registries are behind read/write locks: PUBLISH only reads them;
//! (un)subscribing writes them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use parking_lot::RwLock;
use smallvec::SmallVec;
use tessera_resp::encode::{Protocol, ReplyBuf};

use super::client::ClientInfo;
use super::state::ServerState;
use crate::config::ClientClass;
use crate::util::glob::glob_match;

/// One client's subscriptions, kept by its own task.
#[derive(Default)]
pub struct Subscriptions {
    pub channels: HashSet<Vec<u8>>,
    pub patterns: HashSet<Vec<u8>>,
    pub shard_channels: HashSet<Vec<u8>>,
}

impl Subscriptions {
    /// Channels plus patterns: the count (P)SUBSCRIBE replies report.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.channels.is_empty() && self.patterns.is_empty() && self.shard_channels.is_empty()
    }
}

type Subscribers = Vec<Arc<ClientInfo>>;

/// How many receivers a PUBLISH asks whether they have input in flight
/// (see [`PubSub::receivers_may_have_input`]): enough for the handful of
/// subscribers tests and most applications have, few enough that a wide
/// fan-out does not pay a system call per receiver.
const RECEIVERS_ASKED: usize = 4;

#[derive(Default)]
pub struct PubSub {
    channels: RwLock<HashMap<Vec<u8>, Subscribers>>,
    patterns: RwLock<HashMap<Vec<u8>, Subscribers>>,
    shard_channels: RwLock<HashMap<Vec<u8>, Subscribers>>,
}

/// Which registry an operation is about.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl PubSub {
    fn registry(&self, kind: Kind) -> &RwLock<HashMap<Vec<u8>, Subscribers>> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard_channels,
        }
    }

    pub fn subscribe(&self, kind: Kind, name: &[u8], info: &Arc<ClientInfo>) {
        let mut reg = self.registry(kind).write();
        let subs = reg.entry(name.to_vec()).or_default();
        if !subs.iter().any(|s| s.id == info.id) {
            subs.push(info.clone());
        }
    }

    pub fn unsubscribe(&self, kind: Kind, name: &[u8], id: u64) {
        let mut reg = self.registry(kind).write();
        if let Some(subs) = reg.get_mut(name) {
            subs.retain(|s| s.id != id);
            if subs.is_empty() {
                reg.remove(name);
            }
        }
    }

    /// Active channels (or shard channels) matching `pattern` (all when None).
    pub fn active(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        self.registry(kind)
            .read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// A client's subscriptions of every kind, found in the registries
    /// (the client's own list belongs to its task).
    pub fn subscriptions_of(&self, id: u64) -> Vec<(Kind, Vec<u8>)> {
        let mut out = Vec::new();
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for (name, subs) in self.registry(kind).read().iter() {
                if subs.iter().any(|s| s.id == id) {
                    out.push((kind, name.clone()));
                }
            }
        }
        out
    }

    pub fn subscriber_count(&self, kind: Kind, name: &[u8]) -> usize {
        self.registry(kind).read().get(name).map_or(0, |s| s.len())
    }

    /// Number of distinct patterns subscribed to (PUBSUB NUMPAT).
    pub fn pattern_count(&self) -> usize {
        self.patterns.read().len()
    }

    pub fn channel_count(&self) -> usize {
        self.channels.read().len()
    }

    /// Delivers `message` on `channel` to channel and pattern subscribers;
    /// returns how many received it. `me` is the publishing client: its
    /// own copy goes into `own` (written before its reply, as Redis does)
    /// instead of its outbox.
    pub fn publish(
        &self,
        srv: &ServerState,
        channel: &[u8],
        message: &[u8],
        me: Option<(u64, &mut ReplyBuf)>,
    ) -> usize {
        let mut own = me;
        let mut cache = Encoded::default();
        let mut receivers = 0;
        if let Some(subs) = self.channels.read().get(channel) {
            for s in subs {
                receivers += 1;
                deliver(srv, s, &mut own, &mut cache, |out| {
                    out.push(3);
                    out.bulk(b"message");
                    out.bulk(channel);
                    out.bulk(message);
                });
            }
        }
        let patterns = self.patterns.read();
        if !patterns.is_empty() {
            for (pattern, subs) in patterns.iter() {
                if !glob_match(pattern, channel, false) {
                    continue;
                }
                let mut cache = Encoded::default();
                for s in subs {
                    receivers += 1;
                    deliver(srv, s, &mut own, &mut cache, |out| {
                        out.push(4);
                        out.bulk(b"pmessage");
                        out.bulk(pattern);
                        out.bulk(channel);
                        out.bulk(message);
                    });
                }
            }
        }
        receivers
    }

    /// Whether a client that would receive a message on `channel` (a
    /// shard channel when `shard`) may still have a command in flight: a
    /// PUBLISH then waits a moment for it (see `dispatch::execute`), so an
    /// UNSUBSCRIBE a subscriber sent before the PUBLISH was sent runs
    /// first, as it does in single-threaded Redis, where both come out of
    /// one event loop in order. Only the first [`RECEIVERS_ASKED`]
    /// receivers are asked (a system call each, and each look that finds
    /// a subscriber mid-read costs the publisher a turn): a wide fan-out
    /// does not wait.
    pub fn receivers_may_have_input(
        &self,
        shard: bool,
        channel: &[u8],
        me: u64,
        seen: &mut Vec<(u64, u64)>,
    ) -> bool {
        // Picked under the registries' locks, asked after: a socket is not
        // asked while subscribers wait to (un)subscribe.
        let mut asked: SmallVec<[Arc<ClientInfo>; RECEIVERS_ASKED]> = SmallVec::new();
        fn pick(
            asked: &mut SmallVec<[Arc<ClientInfo>; RECEIVERS_ASKED]>,
            subs: &Subscribers,
            me: u64,
        ) {
            let room = RECEIVERS_ASKED - asked.len();
            asked.extend(subs.iter().filter(|s| s.id != me).take(room).cloned());
        }
        let kind = if shard { Kind::Shard } else { Kind::Channel };
        if let Some(subs) = self.registry(kind).read().get(channel) {
            pick(&mut asked, subs, me);
        }
        if !shard && asked.len() < RECEIVERS_ASKED {
            for (pattern, subs) in self.patterns.read().iter() {
                if asked.len() == RECEIVERS_ASKED {
                    break;
                }
                if glob_match(pattern, channel, false) {
                    pick(&mut asked, subs, me);
                }
            }
        }
        // (A receiver is recorded in `seen` when first found busy.)
        asked.iter().any(|s| s.still_has_input(seen))
    }

    /// SPUBLISH: delivers to shard-channel subscribers only.
    pub fn publish_shard(
        &self,
        srv: &ServerState,
        channel: &[u8],
        message: &[u8],
        me: Option<(u64, &mut ReplyBuf)>,
    ) -> usize {
        let mut own = me;
        let mut cache = Encoded::default();
        let mut receivers = 0;
        if let Some(subs) = self.shard_channels.read().get(channel) {
            for s in subs {
                receivers += 1;
                deliver(srv, s, &mut own, &mut cache, |out| {
                    out.push(3);
                    out.bulk(b"smessage");
                    out.bulk(channel);
                    out.bulk(message);
                });
            }
        }
        receivers
    }

    /// Sends a tracking invalidation push (or `__redis__:invalidate`
    /// message) to one client. `keys` None means "flush everything" (null).
    pub fn send_to(&self, srv: &ServerState, info: &ClientInfo, build: impl Fn(&mut ReplyBuf)) {
        let mut cache = Encoded::default();
        push_to(srv, info, &mut cache, &build);
    }
}

/// A message encoded once per protocol, on first need.
#[derive(Default)]
struct Encoded {
    resp2: Option<Vec<u8>>,
    resp3: Option<Vec<u8>>,
}

impl Encoded {
    fn get(&mut self, resp3: bool, build: &impl Fn(&mut ReplyBuf)) -> &[u8] {
        let slot = if resp3 {
            &mut self.resp3
        } else {
            &mut self.resp2
        };
        slot.get_or_insert_with(|| {
            let mut out = ReplyBuf::new(if resp3 {
                Protocol::Resp3
            } else {
                Protocol::Resp2
            });
            build(&mut out);
            out.buf
        })
    }
}

fn deliver(
    srv: &ServerState,
    to: &ClientInfo,
    own: &mut Option<(u64, &mut ReplyBuf)>,
    cache: &mut Encoded,
    build: impl Fn(&mut ReplyBuf),
) {
    if let Some((id, out)) = own {
        if *id == to.id {
            build(out);
            return;
        }
    }
    push_to(srv, to, cache, &build);
}

/// Appends an encoded message to a client's outbox and wakes its task,
/// disconnecting the client if its outbox passes the output buffer limits.
fn push_to(
    srv: &ServerState,
    to: &ClientInfo,
    cache: &mut Encoded,
    build: &impl Fn(&mut ReplyBuf),
) {
    if to.killed.load(Relaxed) {
        return;
    }
    let bytes = cache.get(to.resp.load(Relaxed) == 3, build);
    let size = {
        let mut outbox = to.outbox.lock();
        outbox.extend_from_slice(bytes);
        outbox.len()
    };
    to.omem.store(size, Relaxed);
    if over_limit(srv, to, size) {
        srv.log_obuf_kill(to);
        to.kill();
        return;
    }
    to.wake.notify_one();
}

/// The 100 ms cron's look at clients over the pub/sub soft output limit:
/// one that gets no more messages is still disconnected once the limit's
/// seconds have passed, as Redis's clientsCron does. (Replicas' outboxes
/// are judged by the replication feed as it writes to them.)
pub fn enforce_soft_limit(srv: &ServerState) {
    let limit = srv.config.client_output_buffer_limit(ClientClass::Pubsub);
    if limit.soft_bytes == 0 {
        return;
    }
    for client in srv.clients.snapshot() {
        let over_since = client.obuf_soft_since_ms.load(Relaxed) != 0;
        if !over_since
            || client.killed.load(Relaxed)
            || client.is_replica.load(Relaxed)
            || client.is_master.load(Relaxed)
        {
            continue;
        }
        if client.over_output_limit(&limit, client.omem.load(Relaxed)) {
            srv.log_obuf_kill(&client);
            client.kill();
        }
    }
}

/// Applies `client-output-buffer-limit pubsub` to an outbox of `size`
/// bytes: true when the client must be disconnected.
pub fn over_limit(srv: &ServerState, to: &ClientInfo, size: usize) -> bool {
    let limit = srv.config.client_output_buffer_limit(ClientClass::Pubsub);
    to.over_output_limit(&limit, size)
}

/// The notification channels of one keyspace event, published as Redis
/// does: `__keyspace@<db>__:<key>` carrying the event name and
/// `__keyevent@<db>__:<event>` carrying the key.
pub fn publish_keyspace_event(
    srv: &ServerState,
    ev: &crate::keyspace::events::Event,
    me: &mut Option<(u64, &mut ReplyBuf)>,
) {
    use crate::keyspace::events::Class;
    let flags = srv.config.notify_keyspace_events();
    if flags.has(Class::KEYSPACE) {
        let mut ch = format!("__keyspace@{}__:", ev.db).into_bytes();
        ch.extend_from_slice(&ev.key);
        let own = me.as_mut().map(|(id, out)| (*id, &mut **out));
        srv.pubsub.publish(srv, &ch, ev.event.as_bytes(), own);
    }
    if flags.has(Class::KEYEVENT) {
        let ch = format!("__keyevent@{}__:{}", ev.db, ev.event).into_bytes();
        let own = me.as_mut().map(|(id, out)| (*id, &mut **out));
        srv.pubsub.publish(srv, &ch, &ev.key, own);
    }
}
