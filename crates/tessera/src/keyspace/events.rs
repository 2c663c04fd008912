//! What a write leaves behind for others to see: keyspace notifications
//! (`notify-keyspace-events`) and client-side-caching invalidations.
//!
//! Commands report events where they happen, under their shard locks, but
//! they cannot publish there: publishing reaches other connections and must
//! not run while shards are held. So events are queued per thread and the
//! caller that owns the command (dispatch, active expiry, eviction) drains
//! the queue once the locks are released, in the order the events happened.
//!
//! Both queues cost one relaxed atomic load per event when nobody listens.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

pub use crate::config::KeyspaceEvents as Class;

/// The `notify-keyspace-events` flags in force (mirrors the config so the
/// keyspace need not know about it).
static NOTIFY_FLAGS: AtomicU32 = AtomicU32::new(0);
/// Whether any client has tracking on (CLIENT TRACKING).
static TRACKING_ON: AtomicBool = AtomicBool::new(false);

pub fn set_notify_flags(flags: u32) {
    NOTIFY_FLAGS.store(flags, Relaxed);
}

pub fn set_tracking_on(on: bool) {
    TRACKING_ON.store(on, Relaxed);
}

pub fn tracking_on() -> bool {
    TRACKING_ON.load(Relaxed)
}

/// One keyspace notification waiting to be published.
#[derive(Debug, Clone)]
pub struct Event {
    pub class: u32,
    pub event: &'static str,
    pub db: usize,
    pub key: Vec<u8>,
}

/// A key whose blocked clients may be served once the command is over.
pub struct ReadyKey {
    pub db: usize,
    pub key: Vec<u8>,
    /// The stream at the key was deleted or replaced: dispatch answers the
    /// XREADGROUP clients blocked on it if the key then holds no stream
    /// (Redis's UNBLOCKED error).
    pub stream_gone: bool,
}

/// A key whose cached copies are now stale.
pub struct Invalidated {
    pub key: Vec<u8>,
    /// Deleted because it expired (or was evicted), not written by a
    /// command: a tracking client's own read that lazily expires a key it
    /// had not cached gets no message for it (see `tracking::invalidate`).
    pub by_expiry: bool,
}

thread_local! {
    static EVENTS: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
    static INVALIDATED: RefCell<Vec<Invalidated>> = const { RefCell::new(Vec::new()) };
    static READY: RefCell<Vec<ReadyKey>> = const { RefCell::new(Vec::new()) };
    /// Pub/sub messages a script published to its own client, encoded
    /// for that client: they go out before the script's reply.
    static OWN_MESSAGES: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Empties one of this thread's queues without allocating when it is empty.
#[inline]
fn take<T>(queue: &'static std::thread::LocalKey<RefCell<Vec<T>>>) -> Vec<T> {
    queue.with(|q| {
        let mut q = q.borrow_mut();
        if q.is_empty() {
            Vec::new()
        } else {
            std::mem::take(&mut *q)
        }
    })
}

/// Records that clients blocked on `key` may be served (signalled by
/// dispatch once the command is over).
#[inline]
pub fn ready(db: usize, key: &[u8]) {
    push_ready(db, key, false);
}

/// Records that the stream at `key` was deleted or replaced (which also
/// makes the key ready, see [`ReadyKey::stream_gone`]).
#[inline]
pub fn stream_gone(db: usize, key: &[u8]) {
    push_ready(db, key, true);
}

#[inline]
fn push_ready(db: usize, key: &[u8], stream_gone: bool) {
    READY.with(|q| {
        q.borrow_mut().push(ReadyKey {
            db,
            key: key.to_vec(),
            stream_gone,
        })
    });
}

/// Takes the keys made ready on this thread.
#[inline]
pub fn take_ready() -> Vec<ReadyKey> {
    take(&READY)
}

/// Records a notification of `class` (one of [`Class`]'s type bits) if the
/// configuration asks for that class and for keyspace or keyevent channels.
#[inline]
pub fn notify(class: u32, event: &'static str, db: usize, key: &[u8]) {
    let flags = NOTIFY_FLAGS.load(Relaxed);
    if flags & class == 0 || flags & (Class::KEYSPACE | Class::KEYEVENT) == 0 {
        return;
    }
    EVENTS.with(|q| {
        q.borrow_mut().push(Event {
            class,
            event,
            db,
            key: key.to_vec(),
        })
    });
}

/// Records that `key` changed, for clients caching it.
#[inline]
pub fn invalidate(key: &[u8]) {
    queue_invalidation(key, false);
}

/// Records that `key` expired or was evicted, for clients caching it.
#[inline]
pub fn invalidate_gone(key: &[u8]) {
    queue_invalidation(key, true);
}

#[inline]
fn queue_invalidation(key: &[u8], by_expiry: bool) {
    if !TRACKING_ON.load(Relaxed) {
        return;
    }
    INVALIDATED.with(|q| {
        q.borrow_mut().push(Invalidated {
            key: key.to_vec(),
            by_expiry,
        })
    });
}

/// Takes the notifications queued on this thread.
#[inline]
pub fn take_events() -> Vec<Event> {
    take(&EVENTS)
}

/// Takes the invalidated keys queued on this thread.
#[inline]
pub fn take_invalidated() -> Vec<Invalidated> {
    take(&INVALIDATED)
}

/// Queues messages published to the running script's own client.
pub fn own_messages(bytes: &[u8]) {
    OWN_MESSAGES.with(|q| q.borrow_mut().extend_from_slice(bytes));
}

/// Takes the messages queued by [`own_messages`].
pub fn take_own_messages() -> Vec<u8> {
    OWN_MESSAGES.with(|q| std::mem::take(&mut *q.borrow_mut()))
}

/// How many invalidations are queued on this thread: where a read
/// remembered now stands among them.
#[inline]
pub fn invalidations_queued() -> usize {
    INVALIDATED.with(|q| q.borrow().len())
}

/// Whether anything is queued on this thread (cheap check for dispatch).
#[inline]
pub fn pending() -> bool {
    EVENTS.with(|q| !q.borrow().is_empty())
        || INVALIDATED.with(|q| !q.borrow().is_empty())
        || OWN_MESSAGES.with(|q| !q.borrow().is_empty())
}
