//! Small exact re-implementations of Redis's behaviour that many families
//! share: glob matching, number parsing and formatting, LCS, linear
//! probing, LZF.

pub mod bits;
pub mod geohash;
pub mod glob;
pub mod lcs;
pub mod lzf;
pub mod numbers;
pub mod probe;

/// A byte string as C string functions see it: up to its first NUL.
/// Redis reads many arguments this way.
pub fn c_str(b: &[u8]) -> &[u8] {
    memchr::memchr(0, b).map_or(b, |z| &b[..z])
}
