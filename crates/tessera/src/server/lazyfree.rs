//! Freeing big values off the command path (UNLINK, FLUSHALL ASYNC,
//! lazyfree-lazy-* directives): one background thread drops whatever it is
//! sent, so a worker never stalls on freeing millions of elements.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

/// Values with more elements than this are freed in the background, as
/// Redis's LAZYFREE_THRESHOLD.
pub const LAZYFREE_THRESHOLD: usize = 64;

type Payload = Box<dyn Send>;

static SENDER: OnceLock<Mutex<mpsc::Sender<Payload>>> = OnceLock::new();
static PENDING: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

fn sender() -> Option<mpsc::Sender<Payload>> {
    let s = SENDER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Payload>();
        let _ = std::thread::Builder::new()
            .name("tessera-lazyfree".into())
            .spawn(move || {
                for item in rx {
                    drop(item);
                    PENDING.fetch_sub(1, Relaxed);
                    FREED.fetch_add(1, Relaxed);
                }
            });
        Mutex::new(tx)
    });
    s.lock().ok().map(|g| g.clone())
}

/// Drops `value` on the background thread (or here if that is gone).
pub fn free_later<T: Send + 'static>(value: T) {
    PENDING.fetch_add(1, Relaxed);
    if let Some(tx) = sender() {
        if let Err(mpsc::SendError(v)) = tx.send(Box::new(value)) {
            drop(v);
            PENDING.fetch_sub(1, Relaxed);
        }
    } else {
        PENDING.fetch_sub(1, Relaxed);
    }
}

/// Objects queued and not yet freed (INFO lazyfree_pending_objects).
pub fn pending() -> u64 {
    PENDING.load(Relaxed)
}

/// Objects freed in the background so far (INFO lazyfreed_objects).
pub fn freed() -> u64 {
    FREED.load(Relaxed)
}
