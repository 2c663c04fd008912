//! Small exact re-implementations of Redis's behaviour that many families
//! share: glob matching, number parsing and formatting, LCS, linear
//! probing, LZF, the CRC-16 of cluster slots and the CRC-64 of RDB files.

pub mod bits;
pub mod crc16;
pub mod crc64;
pub mod geohash;
pub mod glob;
pub mod lcs;
pub mod log;
pub mod lzf;
pub mod numbers;
pub mod probe;

/// Asks the CPU to start loading the cache line of `value`: a hint with no
/// effect on what the program computes.
#[inline]
pub fn prefetch_read<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults and reads nothing
    // into the program's state; SSE, which it needs, is part of every
    // x86-64 CPU.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            (value as *const T).cast(),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// A byte string as C string functions see it: up to its first NUL.
/// Redis reads many arguments this way.
pub fn c_str(b: &[u8]) -> &[u8] {
    memchr::memchr(0, b).map_or(b, |z| &b[..z])
}

/// The code errorstats files an error text under, as Redis finds it: the
/// first word when a space comes within the first 32 bytes, else ERR. (A
/// text that starts with '-' is the whole reply, '-' included.)
pub fn error_code(text: &str) -> &str {
    let text = text.strip_prefix('-').unwrap_or(text);
    // (Redis looks at 32 bytes of the reply, its '-' included.)
    let head = &text.as_bytes()[..text.len().min(31)];
    match head.iter().position(|&c| c == b' ') {
        Some(at) => &text[..at],
        None => "ERR",
    }
}
