//! Argument helpers shared by every family: Redis's strict number parsing
//! with Redis's error wording, and case-insensitive option matching.

use super::error::CmdError;
use crate::util::numbers::{parse_f64, parse_i64};

#[inline]
pub fn eq_ic(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// An integer argument (`ERR value is not an integer or out of range`).
#[inline]
pub fn int(arg: &[u8]) -> Result<i64, CmdError> {
    parse_i64(arg).ok_or(CmdError::NotInteger)
}

/// A float argument (`ERR value is not a valid float`).
pub fn float(arg: &[u8]) -> Result<f64, CmdError> {
    parse_f64(arg).ok_or(CmdError::NotFloat)
}

/// An integer argument that must lie in `min..=max`, with a custom message
/// when it does not parse or falls outside.
pub fn int_in(arg: &[u8], min: i64, max: i64, msg: &'static str) -> Result<i64, CmdError> {
    match parse_i64(arg) {
        Some(n) if n >= min && n <= max => Ok(n),
        _ => Err(CmdError::msg(msg)),
    }
}

/// Text of an argument for an error message, lossily decoded.
pub fn lossy(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}
