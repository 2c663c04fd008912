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
