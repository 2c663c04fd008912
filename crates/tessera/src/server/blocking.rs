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
//! [`Client::block`]: super::client::Client::block

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tessera_resp::encode::ReplyBuf;
use tokio::sync::Notify;

use crate::keyspace::Key;

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
    /// The first key signalled since the last look (Redis serves a client
    /// blocked on several streams from the key that became ready first).
    ready_key: Mutex<Option<Key>>,
    /// A stream it waits on was deleted or replaced and the key held no
    /// stream when the deleting command ended.
    stream_gone: AtomicBool,
}

impl Waiter {
    pub fn new(client_id: u64) -> Arc<Waiter> {
        Arc::new(Waiter {
            client_id,
            reason: AtomicU8::new(Wake::None as u8),
            notify: Notify::new(),
            ready_key: Mutex::new(None),
            stream_gone: AtomicBool::new(false),
        })
    }

    fn wake(&self, why: Wake) {
        // An unblock request wins over a readiness signal.
        let _ = self.reason.fetch_max(why as u8, Relaxed);
        self.notify.notify_one();
    }

    fn note_ready(&self, key: &[u8]) {
        let mut k = self.ready_key.lock();
        if k.is_none() {
            *k = Some(Key::from_slice(key));
        }
    }

    /// Whether a stream it waits on went away since the last call.
    pub fn take_stream_gone(&self) -> bool {
        self.stream_gone.swap(false, Relaxed)
    }

    /// Takes the first key signalled since the last call.
    pub fn take_ready_key(&self) -> Option<Key> {
        self.ready_key.lock().take()
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
        if self.blocked.load(Relaxed) == 0 {
            return;
        }
        let q = self.queues.lock();
        if let Some(first) = q.get(&(db, Key::from_slice(key))).and_then(|q| q.front()) {
            first.note_ready(key);
            first.wake(Wake::Ready);
        }
    }

    /// The stream at `key` went away: every client waiting on it is woken
    /// knowing that (XREADGROUP readers then answer UNBLOCKED, as Redis
    /// answers them when it handles the deletion, whatever happens to the
    /// key before they run).
    pub fn signal_stream_gone(&self, db: usize, key: &[u8]) {
        if self.blocked.load(Relaxed) == 0 {
            return;
        }
        let q = self.queues.lock();
        if let Some(queue) = q.get(&(db, Key::from_slice(key))) {
            for w in queue {
                w.stream_gone.store(true, Relaxed);
                w.note_ready(key);
                w.wake(Wake::Ready);
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

    /// Passes a wake-up on: wakes the waiter queued right after `waiter`
    /// on each of `keys` (a woken client that found nothing for itself
    /// calls this, so that the next in line looks too: stream readers of
    /// one key may want different entries).
    pub fn signal_next(&self, db: usize, keys: &[Key], waiter: &Arc<Waiter>, ready: Option<&[u8]>) {
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
                    next.note_ready(k);
                    next.wake(Wake::Ready);
                }
            }
        }
    }

    /// Wakes the first waiter of every key in database `db` (after FLUSHDB,
    /// SWAPDB and similar, so waiters re-check).
    pub fn signal_all(&self) {
        if self.blocked.load(Relaxed) == 0 {
            return;
        }
        for queue in self.queues.lock().values() {
            if let Some(first) = queue.front() {
                first.wake(Wake::Ready);
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
}
