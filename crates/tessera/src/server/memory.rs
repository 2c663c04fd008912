//! Memory accounting from the allocator itself (jemalloc, installed as the
//! global allocator by the binary), so `used_memory` and the maxmemory limit
//! track real allocations rather than an estimate.

use tikv_jemalloc_ctl::{epoch, stats};

/// Bytes currently allocated by the application.
pub fn allocated_bytes() -> u64 {
    // The statistics are cached by jemalloc until the epoch advances.
    if epoch::advance().is_err() {
        return 0;
    }
    stats::allocated::read().map(|v| v as u64).unwrap_or(0)
}

thread_local! {
    /// jemalloc's count of the bytes this thread has allocated (read
    /// through a pointer: no mallctl call per look).
    static THREAD_ALLOCATED: Option<tikv_jemalloc_ctl::thread::ThreadLocal<u64>> =
        tikv_jemalloc_ctl::thread::allocatedp::read().ok();
    /// Its value at this thread's last look.
    static LAST_LOOK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Whether this thread has allocated more than `bytes` since it last
/// asked: a command that just grew the data by that much (a big SETBIT)
/// makes the next memory check read afresh instead of through the cache.
pub fn thread_allocated_since_last_look(bytes: u64) -> bool {
    THREAD_ALLOCATED.with(|counter| {
        let Some(counter) = counter else {
            return false;
        };
        let now = counter.get();
        LAST_LOOK.with(|last| {
            let grown = now.wrapping_sub(last.get()) > bytes;
            if grown {
                last.set(now);
            }
            grown
        })
    })
}

/// (allocated, active, resident, mapped, retained) as jemalloc reports them.
pub fn allocator_stats() -> (u64, u64, u64, u64, u64) {
    let _ = epoch::advance();
    (
        stats::allocated::read().unwrap_or(0) as u64,
        stats::active::read().unwrap_or(0) as u64,
        stats::resident::read().unwrap_or(0) as u64,
        stats::mapped::read().unwrap_or(0) as u64,
        stats::retained::read().unwrap_or(0) as u64,
    )
}

/// Resident set size of the process, from /proc.
pub fn rss_bytes() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf only reads its integer argument; it touches no memory of ours.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page.max(4096) as u64
}
