//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN, later XREAD BLOCK).
//!
//! A blocking handler that finds nothing to serve sets [`Client::block`]
//! instead of replying. The connection task then registers a [`Waiter`] in
//! the FIFO queue of each key, flushes the replies it owes, and sleeps until
//! it is woken, times out, is unblocked by CLIENT UNBLOCK, or its socket
//! closes. Commands that add data to a key call [`BlockingRegistry::signal`]
//! after releasing their locks; it wakes only the *first* waiter of that
//! key, which re-runs its command. When that succeeds the waiter leaves the
//! queues and signals its keys again, so the next client in line is served
//! in turn — first come, first served across all threads.
//!
//! Redis serves blocked clients right after the command that fed their
//! keys, before the feeding client's next command runs: a pipelined
//! `RPUSH k v` + `LPOP k` leaves `v` to the client blocked on `k`. Here the
//! woken clients run on their own tasks, so the wake-ups one command causes
//! form a [`FeedBatch`]: each is a debt until the woken client has acted on
//! it ([`BlockingRegistry::settle`]), and the feeding client waits for the
//! batch to be paid ([`FeedBatch::wait`]) before its next command. Wake-ups
//! a woken client causes while acting on its debt (the next in line, the
//! destination of its BLMOVE) join the same batch before that debt is
//! paid, so the wait covers the whole chain, as Redis's loop over ready
//! keys does.
//!
//! [`Client::block`]: super::client::Client::block

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use smallvec::SmallVec;
use tessera_resp::encode::ReplyBuf;
use tokio::sync::Notify;

use crate::keyspace::Key;
use crate::types::stream::Group;

/// What a blocked command waits for, set by its handler.
pub struct BlockRequest {
    pub db: usize,
    pub keys: Vec<Key>,
    /// None: wait forever (timeout 0).
    pub deadline: Option<Instant>,
    /// The reply when the timeout expires (or CLIENT UNBLOCK ... TIMEOUT).
    pub on_timeout: fn(&mut ReplyBuf),
    /// The arguments to re-run with when woken, when they differ from the
    /// original ones (XREAD's `$` becomes the ID that was last at the time
    /// of blocking).
    pub rerun_args: Option<Vec<Vec<u8>>>,
    /// A woken waiter that finds nothing for itself wakes the next one in
    /// line: stream readers of one key wait for different IDs, and a pop
    /// whose key came to hold another type leaves it to waiters of that
    /// type.
    pub pass_wakeups: bool,
    /// CLIENT REPLY OFF or SKIP was in force for the command: its eventual
    /// reply (served, timed out, unblocked) is not sent.
    pub silent: bool,
}

/// The wake-ups caused by one command (and the chains they start), with
/// a count of those not yet acted on.
#[derive(Default)]
pub struct FeedBatch {
    unpaid: AtomicUsize,
    paid: Notify,
}

impl FeedBatch {
    /// Waits until every wake-up of the batch has been acted on.
    pub async fn wait(&self) {
        loop {
            let paid = self.paid.notified();
            tokio::pin!(paid);
            // Registered before the check, so a payment in between is seen.
            paid.as_mut().enable();
            if self.unpaid.load(Acquire) == 0 {
                return;
            }
            paid.await;
        }
    }

    fn pay(&self) {
        if self.unpaid.fetch_sub(1, AcqRel) == 1 {
            self.paid.notify_waiters();
        }
    }
}

/// A wake-up not yet acted on: the key and its batch. It is paid when
/// dropped, so a waiter whose task ends in any way (a panic included)
/// cannot leave its feeder waiting.
pub struct Debt {
    key: Key,
    batch: Arc<FeedBatch>,
}

impl Debt {
    pub fn batch(&self) -> &Arc<FeedBatch> {
        &self.batch
    }
}

impl Drop for Debt {
    fn drop(&mut self) {
        self.batch.pay();
    }
}

/// Wake-ups a waiter has not yet acted on.
pub type Debts = SmallVec<[Debt; 1]>;

/// Why a waiter was woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Wake {
    /// Not woken (or already handled).
    None = 0,
    /// A key it waits on may have data.
    Ready = 1,
    /// CLIENT UNBLOCK ... TIMEOUT.
    UnblockTimeout = 2,
    /// CLIENT UNBLOCK ... ERROR.
    UnblockError = 3,
}

pub struct Waiter {
    pub client_id: u64,
    reason: AtomicU8,
    pub notify: Notify,
    /// The keys signalled since the last look, in the order they became
    /// ready (Redis serves a client blocked on several keys from the first
    /// of them that has something for it).
    ready_keys: Mutex<SmallVec<[Key; 2]>>,
    /// A stream it waits on was deleted or replaced and the key held no
    /// stream when the deleting command ended.
    stream_gone: AtomicBool,
    /// Wake-ups it has not yet acted on (see the module comment).
    debts: Mutex<Debts>,
}

impl Waiter {
    pub fn new(client_id: u64) -> Arc<Waiter> {
        Arc::new(Waiter {
            client_id,
            reason: AtomicU8::new(Wake::None as u8),
            notify: Notify::new(),
            ready_keys: Mutex::new(SmallVec::new()),
            stream_gone: AtomicBool::new(false),
            debts: Mutex::new(SmallVec::new()),
        })
    }

    fn wake(&self, why: Wake) {
        // An unblock request wins over a readiness signal.
        let _ = self.reason.fetch_max(why as u8, Relaxed);
        self.notify.notify_one();
    }

    /// Wakes it because `key` may have data; with a batch, the wake-up is
    /// a debt of that batch until acted on.
    fn wake_ready(&self, key: &[u8], batch: Option<&Arc<FeedBatch>>) {
        self.note_ready(key);
        // The reason first, the debt after: a waiter that takes the debt
        // (see `take_debts`) then also sees the reason and acts on it.
        let _ = self.reason.fetch_max(Wake::Ready as u8, Relaxed);
        if let Some(batch) = batch {
            let mut debts = self.debts.lock();
            let owed = debts
                .iter()
                .any(|d| d.key.as_slice() == key && Arc::ptr_eq(&d.batch, batch));
            if !owed {
                batch.unpaid.fetch_add(1, AcqRel);
                debts.push(Debt {
                    key: Key::from_slice(key),
                    batch: batch.clone(),
                });
            }
        }
        self.notify.notify_one();
    }

    /// The wake-ups it owes so far; pay them with [`BlockingRegistry::settle`]
    /// once acted on. Taken before the wake reason: a debt taken was
    /// recorded after its reason was set, so the reason taken next covers
    /// it; a wake-up arriving in between is acted on once more than needed,
    /// never paid without being acted on.
    pub fn take_debts(&self) -> Debts {
        std::mem::take(&mut *self.debts.lock())
    }

    fn note_ready(&self, key: &[u8]) {
        let mut keys = self.ready_keys.lock();
        if !keys.iter().any(|k| k.as_slice() == key) {
            keys.push(Key::from_slice(key));
        }
    }

    /// Whether a stream it waits on went away since the last call.
    pub fn take_stream_gone(&self) -> bool {
        self.stream_gone.swap(false, Relaxed)
    }

    /// Takes the keys signalled since the last call, first ready first.
    pub fn take_ready_keys(&self) -> SmallVec<[Key; 2]> {
        std::mem::take(&mut *self.ready_keys.lock())
    }

    /// Takes the reason for the last wake-up.
    pub fn take_reason(&self) -> Wake {
        match self.reason.swap(Wake::None as u8, Relaxed) {
            1 => Wake::Ready,
            2 => Wake::UnblockTimeout,
            3 => Wake::UnblockError,
            _ => Wake::None,
        }
    }
}

/// Client `id`, about to block for new entries of consumer group `g`,
/// takes its place at the end of the group's line (once); see
/// [`BlockingRegistry::take_group_turn`].
pub fn queue_group_reader(g: &mut Group, id: u64) {
    if !g.waiting.contains(&id) {
        g.waiting.push_back(id);
    }
}

/// FIFO queue of waiters per (database, key).
type Queues = HashMap<(usize, Key), VecDeque<Arc<Waiter>>>;

#[derive(Default)]
pub struct BlockingRegistry {
    /// Number of blocked clients: writers check this first, so signalling
    /// costs one shared read while nobody is blocked.
    blocked: AtomicUsize,
    /// Blocked clients with a deadline (INFO's clients_in_timeout_table).
    pub with_deadline: AtomicUsize,
    /// Clients held by CLIENT PAUSE, which INFO counts as blocked, as Redis
    /// does.
    pub paused: AtomicUsize,
    queues: Mutex<Queues>,
    by_client: Mutex<HashMap<u64, Arc<Waiter>>>,
}

impl BlockingRegistry {
    pub fn blocked_clients(&self) -> usize {
        self.blocked.load(Relaxed)
    }

    /// What INFO reports as blocked_clients: blocked and paused clients.
    pub fn reported_blocked(&self) -> usize {
        self.blocked.load(Relaxed) + self.paused.load(Relaxed)
    }

    pub fn register(&self, db: usize, keys: &[Key], waiter: &Arc<Waiter>) {
        {
            let mut q = self.queues.lock();
            for k in keys {
                let queue = q.entry((db, k.clone())).or_default();
                if !queue.iter().any(|w| Arc::ptr_eq(w, waiter)) {
                    queue.push_back(waiter.clone());
                }
            }
        }
        self.by_client
            .lock()
            .insert(waiter.client_id, waiter.clone());
        self.blocked.fetch_add(1, Relaxed);
    }

    pub fn unregister(&self, db: usize, keys: &[Key], waiter: &Arc<Waiter>) {
        {
            let mut q = self.queues.lock();
            for k in keys {
                let id = (db, k.clone());
                if let Some(queue) = q.get_mut(&id) {
                    queue.retain(|w| !Arc::ptr_eq(w, waiter));
                    if queue.is_empty() {
                        q.remove(&id);
                    }
                }
            }
        }
        if self.by_client.lock().remove(&waiter.client_id).is_some() {
            self.blocked.fetch_sub(1, Relaxed);
        }
    }

    /// A key may have gained data: wake the first client waiting on it.
    #[inline]
    pub fn signal(&self, db: usize, key: &[u8]) {
        self.wake_first(db, key, None);
    }

    /// [`Self::signal`], the wake-up counted in `batch` (created when the
    /// first client is woken).
    pub fn signal_in(&self, db: usize, key: &[u8], batch: &mut Option<Arc<FeedBatch>>) {
        self.wake_first(db, key, Some(batch));
    }

    fn wake_first(&self, db: usize, key: &[u8], batch: Option<&mut Option<Arc<FeedBatch>>>) {
        if self.blocked.load(Relaxed) == 0 {
            return;
        }
        let q = self.queues.lock();
        if let Some(first) = q.get(&(db, Key::from_slice(key))).and_then(|q| q.front()) {
            first.wake_ready(key, batch.map(|b| &*b.get_or_insert_with(Default::default)));
        }
    }

    /// Pays the wake-up debts taken with [`Waiter::take_debts`].
    pub fn settle(&self, debts: Debts) {
        drop(debts);
    }

    /// The stream at `key` went away: every client waiting on it is woken
    /// knowing that (XREADGROUP readers then answer UNBLOCKED, as Redis
    /// answers them when it handles the deletion, whatever happens to the
    /// key before they run).
    pub fn signal_stream_gone(&self, db: usize, key: &[u8], batch: &mut Option<Arc<FeedBatch>>) {
        if self.blocked.load(Relaxed) == 0 {
            return;
        }
        let q = self.queues.lock();
        if let Some(queue) = q.get(&(db, Key::from_slice(key))) {
            for w in queue {
                w.stream_gone.store(true, Relaxed);
                w.wake_ready(key, Some(batch.get_or_insert_with(Default::default)));
            }
        }
    }

    /// Whether client `id` is blocked waiting on `key` of database `db`
    /// (a client blocked elsewhere no longer holds a place in this key's
    /// consumer-group queue).
    pub fn is_blocked_on(&self, id: u64, db: usize, key: &[u8]) -> bool {
        let Some(waiter) = self.by_client.lock().get(&id).cloned() else {
            return false;
        };
        self.queues
            .lock()
            .get(&(db, Key::from_slice(key)))
            .is_some_and(|q| q.iter().any(|w| Arc::ptr_eq(w, &waiter)))
    }

    /// Whether client `id`, blocked on `key` of database `db`, was woken
    /// for that key and has not yet looked at it.
    pub fn is_woken_on(&self, id: u64, db: usize, key: &[u8]) -> bool {
        let Some(waiter) = self.by_client.lock().get(&id).cloned() else {
            return false;
        };
        let woken = waiter.ready_keys.lock().iter().any(|k| k.as_slice() == key)
            || waiter.debts.lock().iter().any(|d| d.key.as_slice() == key);
        woken && self.is_blocked_on(id, db, key)
    }

    /// Whether client `id` may now take new entries of consumer group `g`
    /// of stream `key` in database `db`; if so it leaves the group's line.
    /// First come, first served among blocked consumers: a woken one (a
    /// `rerun` after a wake-up) waits for those blocked before it; a new
    /// reader only for those already woken, whom Redis would have served
    /// with the command that fed the stream (it never waits for the
    /// others).
    pub fn take_group_turn(
        &self,
        g: &mut Group,
        id: u64,
        db: usize,
        key: &[u8],
        rerun: bool,
    ) -> bool {
        if rerun {
            if !g.may_read_new(id, |other| self.is_blocked_on(other, db, key)) {
                return false;
            }
        } else {
            // (Forgetting, on the way, those no longer blocked here: timed
            // out, unblocked or gone.)
            g.waiting
                .retain(|&other| other == id || self.is_blocked_on(other, db, key));
            if g.waiting
                .iter()
                .any(|&other| other != id && self.is_woken_on(other, db, key))
            {
                return false;
            }
        }
        g.waiting.retain(|&other| other != id);
        true
    }

    /// Passes a wake-up on: wakes the waiter queued right after `waiter`
    /// on each of `keys` (a woken client that found nothing for itself
    /// calls this, so that the next in line looks too: stream readers of
    /// one key may want different entries).
    pub fn signal_next(
        &self,
        db: usize,
        keys: &[Key],
        waiter: &Arc<Waiter>,
        ready: Option<&[u8]>,
        batch: Option<&Arc<FeedBatch>>,
    ) {
        let q = self.queues.lock();
        for k in keys {
            if ready.is_some_and(|r| r != k.as_slice()) {
                continue;
            }
            let Some(queue) = q.get(&(db, k.clone())) else {
                continue;
            };
            if let Some(pos) = queue.iter().position(|w| Arc::ptr_eq(w, waiter)) {
                if let Some(next) = queue.get(pos + 1) {
                    next.wake_ready(k, batch);
                }
            }
        }
    }

    /// Wakes the first waiter of every key of the databases `dbs` (all of
    /// them for None) after FLUSHDB, FLUSHALL or SWAPDB changed what they
    /// hold. Each is woken for its key, so a re-run serves only from a key
    /// of its type and otherwise keeps waiting, as Redis, which signals
    /// the swapped databases' keys, does.
    pub fn signal_dbs(&self, dbs: Option<&[usize]>) {
        if self.blocked.load(Relaxed) == 0 {
            return;
        }
        for ((db, key), queue) in self.queues.lock().iter() {
            if dbs.is_some_and(|d| !d.contains(db)) {
                continue;
            }
            if let Some(first) = queue.front() {
                first.wake_ready(key, None);
            }
        }
    }

    /// CLIENT UNBLOCK: true if the client was blocked.
    pub fn unblock(&self, client_id: u64, error: bool) -> bool {
        match self.by_client.lock().get(&client_id) {
            Some(w) => {
                w.wake(if error {
                    Wake::UnblockError
                } else {
                    Wake::UnblockTimeout
                });
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_waiter_is_woken() {
        let reg = BlockingRegistry::default();
        let (a, b) = (Waiter::new(1), Waiter::new(2));
        let k = Key::from_slice(b"k");
        reg.register(0, std::slice::from_ref(&k), &a);
        reg.register(0, std::slice::from_ref(&k), &b);
        reg.signal(0, b"k");
        assert_eq!(a.take_reason(), Wake::Ready);
        assert_eq!(b.take_reason(), Wake::None);
        reg.unregister(0, std::slice::from_ref(&k), &a);
        reg.signal(0, b"k");
        assert_eq!(b.take_reason(), Wake::Ready);
        assert!(reg.unblock(2, true));
        assert_eq!(b.take_reason(), Wake::UnblockError);
        reg.unregister(0, std::slice::from_ref(&k), &b);
        assert_eq!(reg.blocked_clients(), 0);
        assert!(!reg.unblock(2, false));
    }

    #[test]
    fn a_feed_batch_is_paid_when_the_woken_clients_settle() {
        let reg = BlockingRegistry::default();
        let (a, b) = (Waiter::new(1), Waiter::new(2));
        let (k, j) = (Key::from_slice(b"k"), Key::from_slice(b"j"));
        reg.register(0, std::slice::from_ref(&k), &a);
        reg.register(0, std::slice::from_ref(&j), &b);
        let mut batch = None;
        reg.signal_in(0, b"k", &mut batch);
        // The same key again is the same debt.
        reg.signal_in(0, b"k", &mut batch);
        reg.signal_in(0, b"j", &mut batch);
        reg.signal_in(0, b"nobody-waits", &mut batch);
        let batch = batch.expect("waiters were woken");
        assert_eq!(batch.unpaid.load(Relaxed), 2);
        reg.settle(a.take_debts());
        assert_eq!(batch.unpaid.load(Relaxed), 1);
        // Untracked wake-ups owe nothing.
        reg.signal(0, b"j");
        reg.settle(b.take_debts());
        assert_eq!(batch.unpaid.load(Relaxed), 0);
        assert!(b.take_debts().is_empty());
    }
}
