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

/// Text of an argument for a message, as C's `%s` shows it: cut at the
/// first NUL, lossily decoded.
pub fn lossy(arg: &[u8]) -> String {
    c_str_prefix(arg, usize::MAX)
}

/// A C `int` argument the way Redis's getIntFromObjectOrReply reads it.
pub fn int32(arg: &[u8]) -> Result<i64, CmdError> {
    let n = int(arg)?;
    if n < i32::MIN as i64 || n > i32::MAX as i64 {
        return Err(CmdError::msg(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        ));
    }
    Ok(n)
}

/// C's `%.Ns` of a byte string, as Redis formats arguments into error
/// messages: at most `n` bytes, cut at the first NUL.
pub fn c_str_prefix(b: &[u8], n: usize) -> String {
    String::from_utf8_lossy(c_bytes_prefix(b, n)).into_owned()
}

/// [`c_str_prefix`] as the bytes themselves, for error messages that show
/// an argument as the client sent it ([`CmdError::bytes`]).
pub fn c_bytes_prefix(b: &[u8], n: usize) -> &[u8] {
    crate::util::c_str(&b[..b.len().min(n)])
}

/// C's `%s` of an argument: the bytes up to the first NUL.
pub fn c_bytes(arg: &[u8]) -> &[u8] {
    crate::util::c_str(arg)
}

/// A blocking command's timeout in seconds (fractions allowed), as Redis
/// reads it: the absolute deadline in Unix ms, or None for 0 (forever).
pub fn block_timeout(arg: &[u8], now_ms: i64) -> Result<Option<i64>, CmdError> {
    let ms = crate::util::numbers::parse_timeout_ms(arg)
        .ok_or_else(|| CmdError::msg("ERR timeout is not a float or out of range"))?;
    if ms < 0 {
        return Err(CmdError::msg("ERR timeout is negative"));
    }
    if ms == 0 {
        return Ok(None);
    }
    // Redis adds the clock without an overflow check and its timeout table
    // then reads the wrapped deadline as unsigned: such a client waits
    // forever.
    Ok(Some(ms.checked_add(now_ms).unwrap_or(i64::MAX)))
}

/// A SCAN-family cursor, read the way Redis reads it (C `strtoul` over the
/// C string): no leading whitespace; an optional sign (a `-` negates modulo
/// 2^64); digits up to the end or an embedded NUL; "" is 0; overflow and
/// anything else is `ERR invalid cursor`.
pub fn parse_scan_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    let invalid = || CmdError::msg("ERR invalid cursor");
    let s = crate::util::c_str(arg);
    if s.is_empty() {
        return Ok(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((d - b'0') as u64))
            .ok_or_else(invalid)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}
