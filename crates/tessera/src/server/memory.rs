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
    /// jemalloc's counts of the bytes this thread has allocated and freed
    /// (read through pointers: no mallctl call per look).
    static THREAD_COUNTERS: Option<(
        tikv_jemalloc_ctl::thread::ThreadLocal<u64>,
        tikv_jemalloc_ctl::thread::ThreadLocal<u64>,
    )> = tikv_jemalloc_ctl::thread::allocatedp::read()
        .ok()
        .zip(tikv_jemalloc_ctl::thread::deallocatedp::read().ok());
    /// This thread's net allocation when it last read `used_memory` afresh.
    static NET_AT_LAST_READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn thread_net_allocated() -> Option<u64> {
    THREAD_COUNTERS.with(|c| c.as_ref().map(|(a, d)| a.get().wrapping_sub(d.get())))
}

/// Whether this thread's net allocation grew by more than `bytes` since it
/// last read `used_memory` afresh: a command that just grew the data that
/// much (a big SETBIT) makes the next memory check read afresh instead of
/// through the cache. Churn (allocate, then free) does not count.
pub fn thread_grew_since_last_read(bytes: u64) -> bool {
    let Some(now) = thread_net_allocated() else {
        return false;
    };
    NET_AT_LAST_READ.with(|last| now.wrapping_sub(last.get()) as i64 > bytes as i64)
}

/// Marks this thread's fresh read of `used_memory`, the baseline for
/// [`thread_grew_since_last_read`].
pub fn note_fresh_read() {
    if let Some(now) = thread_net_allocated() {
        NET_AT_LAST_READ.with(|last| last.set(now));
    }
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
