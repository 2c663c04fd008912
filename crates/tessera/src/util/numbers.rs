//! Number parsing and formatting, byte-identical to Redis 7.0 on x86-64
//! Linux (glibc).
//!
//! * [`parse_i64`] / [`parse_u64`]: Redis' strict `string2ll` rules (what
//!   `INCRBY`, `EXPIRE`, `LRANGE`, … accept). [`parse_u64_lenient`] is
//!   Redis' `string2ull` (stream IDs), which falls back to `strtoull`.
//! * [`parse_f64`]: Redis' `string2d` / `getDoubleFromObject` (`ZADD`
//!   scores, `ZINCRBY`, `GEOADD`, …); [`parse_f64_lenient`]: the bare
//!   `strtod` check of score-range bounds (`ZRANGEBYSCORE`, `ZCOUNT`, …).
//! * [`format_f64`]: a double as Redis 7.0 replies it in RESP2 (`%.17g`,
//!   `inf`/`-inf`); [`format_f64_human`]: `addReplyHumanLongDouble`
//!   (`GEOPOS`); [`format_i64`] / [`format_u64`]: decimal integers.
//! * [`incr_by_float`], [`classify_long_double`], [`long_double_human`]:
//!   the x87 `long double` arithmetic behind `INCRBYFLOAT` and
//!   `HINCRBYFLOAT`; [`parse_timeout_ms`]: a blocking command's timeout,
//!   which Redis reads as a long double of seconds.
//!
//! Everything that depends on glibc's `strtod`/`strtold`/`printf` (and on
//! the 80-bit `long double`) goes through the small C shim in
//! `csrc/longdouble.c`, because that is the only way to be exact. On
//! targets whose `long double` is not x87 extended precision (e.g.
//! aarch64) the long double results follow that target's C library, as
//! Redis' do there.

use std::ffi::{c_char, c_int};
use std::fmt;

extern "C" {
    fn tessera_parse_double(s: *const c_char, len: usize, out: *mut f64) -> c_int;
    fn tessera_parse_double_lenient(s: *const c_char, out: *mut f64) -> c_int;
    fn tessera_format_g17(v: f64, out: *mut c_char, cap: usize) -> c_int;
    fn tessera_ld_incr(
        a: *const c_char,
        alen: usize,
        b: *const c_char,
        blen: usize,
        out: *mut c_char,
        cap: usize,
        outlen: *mut usize,
    ) -> c_int;
    fn tessera_ld_classify(s: *const c_char, len: usize) -> c_int;
    fn tessera_timeout_ms(s: *const c_char, len: usize, out: *mut i64) -> c_int;
    fn tessera_ld_human(
        s: *const c_char,
        len: usize,
        out: *mut c_char,
        cap: usize,
        outlen: *mut usize,
    ) -> c_int;
    fn tessera_f64_human(v: f64, out: *mut c_char, cap: usize) -> usize;
}

/// Redis' `MAX_LONG_DOUBLE_CHARS`: long double inputs must be shorter than
/// this, and it is the output buffer size (ample: the longest finite x87
/// value prints in under 5000 bytes).
const LD_BUF: usize = 5 * 1024;

/// Redis' `LONG_STR_SIZE`: integer strings must be shorter than this.
const LONG_STR_SIZE: usize = 21;

/// Parses the digits of a strict Redis integer (`string2ll` rules, minus
/// the sign): non-empty, only `0`-`9`, no leading zero unless the whole
/// thing is "0". Returns `None` on anything else or u64 overflow.
fn strict_digits(s: &[u8]) -> Option<u64> {
    match s {
        [b'0'] => Some(0),
        [b'1'..=b'9', ..] => {
            let mut v: u64 = 0;
            for &b in s {
                if !b.is_ascii_digit() {
                    return None;
                }
                v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            }
            Some(v)
        }
        _ => None,
    }
}

/// Redis' `string2ll`: an optional `-`, then digits with no leading zeros
/// ("0" alone is fine, "-0" is not); no `+`, no spaces, at most 20 bytes,
/// and the value must fit in an i64.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= LONG_STR_SIZE {
        return None;
    }
    match s.split_first() {
        Some((b'-', digits)) => {
            if digits == b"0" {
                return None;
            }
            let v = strict_digits(digits)?;
            0i64.checked_sub_unsigned(v)
        }
        _ => i64::try_from(strict_digits(s)?).ok(),
    }
}

/// The unsigned counterpart of [`parse_i64`]: digits only (no sign), no
/// leading zeros except "0" itself, at most 20 bytes, must fit in a u64.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.len() >= LONG_STR_SIZE {
        return None;
    }
    strict_digits(s)
}

/// Redis' `string2ull`, used for stream ID parts: first [`parse_i64`]
/// (negative results rejected), then C `strtoull` base 10 over the whole
/// string. So leading whitespace, a `+`, leading zeros and values up to
/// `u64::MAX` are accepted, and a `-` makes `strtoull` negate modulo 2^64
/// ("-01" is 2^64-1). Trailing bytes, no digits and overflow are rejected.
/// (Redis sees the argument as a C string, so bytes after an embedded NUL
/// would be ignored there; here an embedded NUL is simply rejected.)
pub fn parse_u64_lenient(s: &[u8]) -> Option<u64> {
    if let Some(v) = parse_i64(s) {
        return u64::try_from(v).ok();
    }
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut negative = false;
    match s.get(i) {
        Some(b'-') => {
            negative = true;
            i += 1;
        }
        Some(b'+') => i += 1,
        _ => {}
    }
    let digits = s.get(i..)?;
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(if negative { v.wrapping_neg() } else { v })
}

/// C `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Redis' `string2d` / `getDoubleFromObject`: glibc `strtod` must consume
/// the whole string; empty, a leading space, NaN, overflow to ±inf and
/// underflow to zero are rejected (subnormal results are kept). Accepts
/// what strtod accepts: `+1.5`, `.5`, `5.`, `1E5`, `inf`, `-Infinity`,
/// `0x1p3` (hex floats).
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.contains(&0) {
        // strtod would stop at the NUL, short of the whole string.
        return None;
    }
    let mut stack = [0u8; 64];
    let mut heap = Vec::new();
    let buf: &[u8] = if s.len() < stack.len() {
        stack[..s.len()].copy_from_slice(s);
        &stack[..=s.len()]
    } else {
        heap.reserve_exact(s.len() + 1);
        heap.extend_from_slice(s);
        heap.push(0);
        &heap
    };
    let mut v = 0f64;
    // SAFETY: `buf` holds `s` followed by a NUL byte, as the shim requires;
    // `v` is a valid place for it to write a double.
    let ok = unsafe { tessera_parse_double(buf.as_ptr().cast(), s.len(), &mut v) };
    (ok == 1).then_some(v)
}

/// A blocking command's timeout in milliseconds, read as Redis 7.0 reads
/// seconds: a long double (1e400 is a number, 1e-400 a tiny positive one),
/// times 1000 rounded up, with anything beyond i64 (infinities too) turned
/// into i64::MIN as x86-64's conversion does. None if not a number.
pub fn parse_timeout_ms(s: &[u8]) -> Option<i64> {
    let mut ms = 0i64;
    // SAFETY: the shim reads exactly `s.len()` bytes of `s` (it copies them
    // into its own NUL-terminated buffer) and writes one i64 to `ms`.
    let ok = unsafe { tessera_timeout_ms(s.as_ptr().cast(), s.len(), &mut ms) };
    (ok == 1).then_some(ms)
}

/// The bare `strtod` check Redis 7.0 applies to score-range bounds
/// (`zslParseRange`: `ZRANGEBYSCORE`, `ZCOUNT`, `ZREMRANGEBYSCORE`, …,
/// after the caller strips a leading `(`): glibc `strtod` must stop at the
/// end of the C string and the value must not be NaN. So unlike
/// [`parse_f64`] it accepts "" (0), leading whitespace, overflow ("1e400"
/// is inf) and underflow (0), and, the argument being a C string there,
/// ignores everything from an embedded NUL on ("2\0x" is 2). Trailing
/// whitespace is still rejected.
pub fn parse_f64_lenient(s: &[u8]) -> Option<f64> {
    let s = super::c_str(s);
    let mut buf = Vec::with_capacity(s.len() + 1);
    buf.extend_from_slice(s);
    buf.push(0);
    let mut v = 0f64;
    // SAFETY: `buf` is NUL-terminated with no earlier NUL; `v` is a valid
    // place for the shim to write a double.
    let ok = unsafe { tessera_parse_double_lenient(buf.as_ptr().cast(), &mut v) };
    (ok == 1).then_some(v)
}

/// Appends a double as Redis 7.0 replies it in RESP2 (`ZSCORE`, `ZINCRBY`,
/// `ZRANGE … WITHSCORES`, …): C `%.17g` (so 1.1 is "1.1000000000000001",
/// 3.0 is "3", 1e17 is "1e+17", -0.0 is "-0"), infinities as "inf" and
/// "-inf". NaN, which Redis never replies, is written "nan".
pub fn format_f64(v: f64, out: &mut Vec<u8>) {
    if v.is_nan() {
        // glibc prints the sign of a NaN (x86's 0/0 is negative).
        out.extend_from_slice(if v.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"inf" } else { b"-inf" });
    } else if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0" } else { b"0" });
    } else if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        // Integral and below 2^53: %.17g prints it as a plain integer.
        format_i64(v as i64, out);
    } else {
        let mut buf = [0u8; 64];
        // SAFETY: the shim writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { tessera_format_g17(v, buf.as_mut_ptr().cast(), buf.len()) };
        match usize::try_from(n) {
            Ok(n) if n <= buf.len() => out.extend_from_slice(&buf[..n]),
            // Cannot happen: %.17g of a double is at most 24 bytes.
            _ => out.extend_from_slice(b"nan"),
        }
    }
}

/// Appends a double as Redis' `addReplyHumanLongDouble` prints it
/// (`GEOPOS` coordinates): widened to long double, `%.17Lf`, trailing
/// zeros and a trailing `.` removed, "-0" shown as "0".
pub fn format_f64_human(v: f64, out: &mut Vec<u8>) {
    if v.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    // A finite double prints in at most 328 bytes this way (309 integer
    // digits, '.', 17 decimals, sign); infinities as "inf"/"-inf".
    let mut buf = [0u8; 512];
    // SAFETY: the shim writes at most `buf.len()` bytes into `buf`.
    let n = unsafe { tessera_f64_human(v, buf.as_mut_ptr().cast(), buf.len()) };
    out.extend_from_slice(&buf[..n.min(buf.len())]);
}

/// Appends the decimal form of an i64.
pub fn format_i64(v: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends the decimal form of a u64.
pub fn format_u64(v: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Why [`incr_by_float`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncrFloatError {
    /// The current value does not parse as a long double (INCRBYFLOAT:
    /// "value is not a valid float"; HINCRBYFLOAT: "hash value is not a
    /// float").
    InvalidCurrent,
    /// The increment does not parse ("value is not a valid float").
    InvalidIncrement,
    /// The sum is NaN or infinite ("increment would produce NaN or
    /// Infinity").
    NanOrInfinity,
}

impl IncrFloatError {
    /// The error text (without the "ERR " prefix) INCRBYFLOAT replies.
    pub fn message(self) -> &'static str {
        match self {
            IncrFloatError::InvalidCurrent | IncrFloatError::InvalidIncrement => {
                "value is not a valid float"
            }
            IncrFloatError::NanOrInfinity => "increment would produce NaN or Infinity",
        }
    }
}

impl fmt::Display for IncrFloatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for IncrFloatError {}

/// INCRBYFLOAT / HINCRBYFLOAT arithmetic: parses `current` and `incr` with
/// Redis' `string2ld` rules (under 5120 bytes, glibc `strtold` over the
/// whole string, no leading space, no NaN, no overflow/underflow-to-zero;
/// `inf` is accepted), adds them in x87 long double, rejects a NaN or
/// infinite sum, and returns the sum in Redis' human form (`%.17Lf`
/// without trailing zeros: 0.1+0.2 is "0.3", 1e20 is
/// "100000000000000000000"). A missing key is `current = b"0"`.
pub fn incr_by_float(current: &[u8], incr: &[u8]) -> Result<Vec<u8>, IncrFloatError> {
    // Checked here so the C side never sees a too-long input; the limits
    // match the shim's.
    if current.is_empty() || current.len() >= LD_BUF {
        return Err(IncrFloatError::InvalidCurrent);
    }
    if incr.is_empty() || incr.len() >= LD_BUF {
        return Err(IncrFloatError::InvalidIncrement);
    }
    let mut buf = [0u8; LD_BUF];
    let mut len = 0usize;
    // SAFETY: both inputs are valid for their lengths (the shim copies them
    // into a NUL-terminated buffer); the shim writes at most `buf.len()`
    // bytes into `buf` and one usize into `len`.
    let rc = unsafe {
        tessera_ld_incr(
            current.as_ptr().cast(),
            current.len(),
            incr.as_ptr().cast(),
            incr.len(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut len,
        )
    };
    match rc {
        0 => Ok(buf[..len.min(LD_BUF)].to_vec()),
        1 => Err(IncrFloatError::InvalidCurrent),
        2 => Err(IncrFloatError::InvalidIncrement),
        // 3, and 4 (output too small), which cannot happen for a finite
        // long double in a 5120-byte buffer.
        _ => Err(IncrFloatError::NanOrInfinity),
    }
}

/// What a string parses to as a long double.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongDoubleKind {
    /// A finite value.
    Finite,
    /// `inf`, `-inf`, `infinity`, … (HINCRBYFLOAT rejects such an increment
    /// with "value is NaN or Infinity" before looking at the key).
    Infinite,
}

/// Parses `s` with Redis' `string2ld` rules (see [`incr_by_float`]);
/// `None` if it is not a valid float.
pub fn classify_long_double(s: &[u8]) -> Option<LongDoubleKind> {
    if s.is_empty() || s.len() >= LD_BUF {
        return None;
    }
    // SAFETY: `s` is valid for `s.len()` bytes; the shim copies it.
    match unsafe { tessera_ld_classify(s.as_ptr().cast(), s.len()) } {
        0 => Some(LongDoubleKind::Finite),
        1 => Some(LongDoubleKind::Infinite),
        _ => None,
    }
}

/// Parses `s` with Redis' `string2ld` rules and returns it in Redis' human
/// long double form ("10.50" → "10.5", "5.0e3" → "5000"), or `None` if it
/// is not a valid float. Infinities print as "inf"/"-inf".
pub fn long_double_human(s: &[u8]) -> Option<Vec<u8>> {
    if s.is_empty() || s.len() >= LD_BUF {
        return None;
    }
    let mut buf = [0u8; LD_BUF];
    let mut len = 0usize;
    // SAFETY: `s` is valid for its length (copied by the shim); the shim
    // writes at most `buf.len()` bytes into `buf` and one usize into `len`.
    let rc = unsafe {
        tessera_ld_human(
            s.as_ptr().cast(),
            s.len(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    Some(buf[..len.min(LD_BUF)].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64) -> String {
        let mut out = Vec::new();
        format_f64(v, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    fn incr(a: &str, b: &str) -> Result<String, IncrFloatError> {
        incr_by_float(a.as_bytes(), b.as_bytes()).map(|v| String::from_utf8(v).unwrap_or_default())
    }

    #[test]
    fn parse_i64_follows_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"1"), Some(1));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"1234567890"), Some(1_234_567_890));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"01",
            b"00",
            b"-0",
            b"-01",
            b" 1",
            b"1 ",
            b"1a",
            b"1.0",
            b"0x1",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"18446744073709551615",
            b"18446744073709551616",
            b"99999999999999999999",
            b"123456789012345678901",
            b"1\0",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn parse_u64_strict() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"-1",
            b"+1",
            b"01",
            b" 1",
            b"18446744073709551616",
            b"1x",
        ] {
            assert_eq!(parse_u64(bad), None);
        }
    }

    #[test]
    fn parse_u64_lenient_follows_string2ull() {
        // Redis 7.0: XADD s " 5-1" / "5-+2" / "\t5-0" are accepted parts,
        // "0x5", "5 ", "" and 2^64 are not.
        assert_eq!(parse_u64_lenient(b"5"), Some(5));
        assert_eq!(parse_u64_lenient(b" 5"), Some(5));
        assert_eq!(parse_u64_lenient(b"\t5"), Some(5));
        assert_eq!(parse_u64_lenient(b"+2"), Some(2));
        assert_eq!(parse_u64_lenient(b"01"), Some(1));
        assert_eq!(parse_u64_lenient(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64_lenient(b"-01"), Some(u64::MAX));
        assert_eq!(parse_u64_lenient(b"-1"), None);
        for bad in [
            &b""[..],
            b" ",
            b"0x5",
            b"5 ",
            b"+",
            b"-",
            b"18446744073709551616",
            b"1.0",
        ] {
            assert_eq!(parse_u64_lenient(bad), None);
        }
    }

    #[test]
    fn parse_f64_follows_string2d() {
        // Accepted by ZADD in Redis 7.0.15 (value as ZSCORE then shows it).
        let ok: &[(&str, f64)] = &[
            ("1.1", 1.1),
            ("0", 0.0),
            ("+1.5", 1.5),
            (".5", 0.5),
            ("5.", 5.0),
            ("1e+5", 1e5),
            ("1E5", 1e5),
            ("0x1p3", 8.0),
            ("0X10", 16.0),
            ("0x1.8p1", 3.0),
            ("inf", f64::INFINITY),
            ("+inf", f64::INFINITY),
            ("INF", f64::INFINITY),
            ("infinity", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("1.7976931348623158e308", f64::MAX),
            ("9007199254740993", 9_007_199_254_740_992.0),
        ];
        for &(s, v) in ok {
            assert_eq!(parse_f64(s.as_bytes()), Some(v), "{s}");
        }
        // Subnormal results survive (ERANGE but not zero).
        assert_eq!(
            parse_f64(b"4e-320").map(f),
            Some("3.999955468730732e-320".into())
        );
        assert_eq!(
            parse_f64(b"2.4703282292062328e-324").map(f),
            Some("4.9406564584124654e-324".into())
        );
        assert_eq!(parse_f64(b"-0.0").map(|v| v.is_sign_negative()), Some(true));
        let long = format!("1.{}", "0".repeat(6000));
        assert_eq!(parse_f64(long.as_bytes()), Some(1.0));
        for bad in [
            "",
            " 1",
            "1 ",
            "\t1",
            "1e",
            "nan",
            "-nan",
            "nan(123)",
            "infinit",
            "0x",
            "1_0",
            "1e400",
            "1.7976931348623159e308",
            "1e-400",
            "2.4703282292062327e-324",
            "1\0",
            "1\u{0}2",
            "abc",
        ] {
            assert_eq!(parse_f64(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn parse_f64_lenient_follows_zslparserange() {
        // ZRANGEBYSCORE z <min> +inf on Redis 7.0.15.
        let ok: &[(&[u8], f64)] = &[
            (b" 1", 1.0),
            (b"  \t2", 2.0),
            (b"", 0.0),
            (b"1e400", f64::INFINITY),
            (b"-1e400", f64::NEG_INFINITY),
            (b"1e-400", 0.0),
            (b"0x1", 1.0),
            (b"inf", f64::INFINITY),
            (b"-inf", f64::NEG_INFINITY),
            (b"2\0x", 2.0),
            (b"\0", 0.0),
        ];
        for &(s, v) in ok {
            assert_eq!(
                parse_f64_lenient(s),
                Some(v),
                "{:?}",
                String::from_utf8_lossy(s)
            );
        }
        for bad in [&b"1 "[..], b"2\t", b"nan", b"abc", b"1e"] {
            assert_eq!(
                parse_f64_lenient(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn format_f64_matches_redis_zscore() {
        // ZADD z <v> m; ZSCORE z m on Redis 7.0.15.
        let cases: &[(f64, &str)] = &[
            (1.1, "1.1000000000000001"),
            (1e20, "1e+20"),
            (1e-5, "1.0000000000000001e-05"),
            (0.1, "0.10000000000000001"),
            (-0.0, "-0"),
            (0.0, "0"),
            (123_456_789_012_345_678.0, "1.2345678901234568e+17"),
            (3.0, "3"),
            (1e15, "1000000000000000"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (1e21, "1e+21"),
            (123.456, "123.456"),
            (2.5e-7, "2.4999999999999999e-07"),
            (12_345_678_901_234_567_890.0, "1.2345678901234567e+19"),
            (9_007_199_254_740_992.0, "9007199254740992"),
            (-9_007_199_254_740_991.0, "-9007199254740991"),
            (1e-310, "9.9999999999999694e-311"),
            (2.225_073_858_507_201e-308, "2.2250738585072009e-308"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "4.9406564584124654e-324"),
            (-1e-300, "-1e-300"),
            (0.5, "0.5"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for &(v, want) in cases {
            assert_eq!(f(v), want, "{v:e}");
        }
    }

    #[test]
    fn format_f64_integer_fast_path_agrees_with_printf() {
        // The itoa fast path must print what %.17g would.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mag = (x >> 11) as f64 / (1u64 << 53) as f64;
            let v =
                ((mag * 2f64.powi((i % 60) as i32)).round()) * if i % 2 == 0 { 1.0 } else { -1.0 };
            let mut buf = [0u8; 64];
            // SAFETY: buffer of the advertised size.
            let n = unsafe { tessera_format_g17(v, buf.as_mut_ptr().cast(), buf.len()) };
            let n = usize::try_from(n).unwrap_or(0);
            let want = String::from_utf8_lossy(&buf[..n]).into_owned();
            assert_eq!(f(v), want, "{v:e}");
        }
    }

    #[test]
    fn format_f64_human_matches_geopos() {
        let mut out = Vec::new();
        format_f64_human(13.361_389_338_970_184, &mut out);
        assert_eq!(out, b"13.36138933897018433");
        out.clear();
        format_f64_human(-0.0, &mut out);
        assert_eq!(out, b"0");
        out.clear();
        format_f64_human(2.0, &mut out);
        assert_eq!(out, b"2");
        out.clear();
        format_f64_human(-f64::MAX, &mut out);
        assert_eq!(out, format!("-{}", "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368").as_bytes());
        out.clear();
        format_f64_human(f64::NEG_INFINITY, &mut out);
        assert_eq!(out, b"-inf");
    }

    #[test]
    fn format_integers() {
        let mut out = Vec::new();
        format_i64(i64::MIN, &mut out);
        out.push(b' ');
        format_i64(0, &mut out);
        out.push(b' ');
        format_u64(u64::MAX, &mut out);
        assert_eq!(out, b"-9223372036854775808 0 18446744073709551615");
    }

    #[test]
    fn incr_by_float_matches_redis() {
        // SET k <a>; INCRBYFLOAT k <b> on Redis 7.0.15.
        let ok: &[(&str, &str, &str)] = &[
            ("0", "0.1", "0.1"),
            ("0.1", "0.2", "0.3"),
            ("1.1", "2.2", "3.3"),
            ("100", "-99.99", "0.01"),
            ("0", "5.0e3", "5000"),
            ("0", "10.5", "10.5"),
            ("10.50", "0", "10.5"),
            ("0", "-0", "0"),
            ("-0", "0", "0"),
            ("5", "-5", "0"),
            ("0", "3.0000000000000001", "3.0000000000000001"),
            ("0", "1e17", "100000000000000000"),
            ("0", "1e18", "1000000000000000000"),
            ("0", "1e19", "10000000000000000000"),
            ("0", "1e20", "100000000000000000000"),
            ("0", "1e-20", "0"),
            ("0", "-1e-20", "0"),
            ("0", "1e-17", "0.00000000000000001"),
            ("0", "-1e-17", "-0.00000000000000001"),
            ("0", "0.5e-17", "0"),
            ("0", "1.5e-17", "0.00000000000000002"),
            ("0", "2.5e-17", "0.00000000000000002"),
            ("0", "0.000000000000000015", "0.00000000000000002"),
            ("0", "1.2345678901234567890123", "1.23456789012345679"),
            ("3.14159265358979323846", "0", "3.14159265358979324"),
            ("1", "0x10", "17"),
            ("0", "0x1p-2", "0.25"),
            ("0", "+5", "5"),
            ("0", ".5", "0.5"),
            ("0", "5.", "5"),
            ("0", "7.0e-1", "0.7"),
            ("9223372036854775807", "1", "9223372036854775808"),
            (
                "0",
                "123456789012345678901234567890",
                "123456789012345678899921813504",
            ),
            ("1e400", "-1e400", "0"),
            ("0", "1e-4940", "0"),
            ("0", "1e-4950", "0"),
        ];
        for &(a, b, want) in ok {
            assert_eq!(incr(a, b).as_deref(), Ok(want), "{a} + {b}");
        }
    }

    #[test]
    fn incr_by_float_huge_values() {
        // 1e300 fits a long double easily; Redis prints every digit.
        let r = incr("0", "1e300").unwrap_or_default();
        assert_eq!(r.len(), 301);
        assert!(r.starts_with("1000000000000000000008997324079559193870"));
        let r = incr("1e308", "1e308").unwrap_or_default();
        assert_eq!(r.len(), 309);
        assert!(r.starts_with("1999999999999999999933717593116912913211"));
        let r = incr("0", "1e4000").unwrap_or_default();
        assert_eq!(r.len(), 4000);
        assert!(r.starts_with("9999999999999999999965463873099623784932"));
        let r = incr("0", "1e4932").unwrap_or_default();
        assert_eq!(r.len(), 4933);
        assert!(r.starts_with("100000000000000000000601894938"));
        let r = incr("0", "1.1e4932").unwrap_or_default();
        assert!(r.starts_with("109999999999999999997437310752"));
    }

    #[test]
    fn incr_by_float_errors() {
        use IncrFloatError::*;
        let cases: &[(&str, &str, IncrFloatError)] = &[
            ("0", "  1", InvalidIncrement),
            ("  1", "0", InvalidCurrent),
            ("0", "1.5e", InvalidIncrement),
            ("0", "nan", InvalidIncrement),
            ("0", "", InvalidIncrement),
            ("", "1", InvalidCurrent),
            ("abc", "1", InvalidCurrent),
            ("1\0abc", "1", InvalidCurrent),
            ("1", "1\0x", InvalidIncrement),
            ("0", "1e5000", InvalidIncrement),
            ("0", "1.2e4932", InvalidIncrement),
            ("0", "1e-5000", InvalidIncrement),
            ("0", "1e-4951", InvalidIncrement),
            ("0", "inf", NanOrInfinity),
            ("0", "-inf", NanOrInfinity),
            ("inf", "0", NanOrInfinity),
            ("1.1e4932", "1.1e4932", NanOrInfinity),
        ];
        for &(a, b, want) in cases {
            assert_eq!(incr(a, b), Err(want), "{a:?} + {b:?}");
        }
        assert_eq!(InvalidCurrent.message(), "value is not a valid float");
        assert_eq!(
            NanOrInfinity.to_string(),
            "increment would produce NaN or Infinity"
        );
    }

    #[test]
    fn long_double_length_limit() {
        // Inputs must be shorter than 5120 bytes.
        let ok = format!("1.{}", "0".repeat(5117));
        assert_eq!(ok.len(), 5119);
        assert_eq!(incr("0", &ok).as_deref(), Ok("1"));
        let bad = format!("1.{}", "0".repeat(5118));
        assert_eq!(incr("0", &bad), Err(IncrFloatError::InvalidIncrement));
        assert_eq!(incr(&bad, "0"), Err(IncrFloatError::InvalidCurrent));
        assert_eq!(classify_long_double(bad.as_bytes()), None);
    }

    #[test]
    fn classify_and_human() {
        assert_eq!(classify_long_double(b"1.5"), Some(LongDoubleKind::Finite));
        assert_eq!(
            classify_long_double(b"1e4000"),
            Some(LongDoubleKind::Finite)
        );
        assert_eq!(classify_long_double(b"inf"), Some(LongDoubleKind::Infinite));
        assert_eq!(
            classify_long_double(b"-Infinity"),
            Some(LongDoubleKind::Infinite)
        );
        assert_eq!(classify_long_double(b"nan"), None);
        assert_eq!(classify_long_double(b" 1"), None);
        assert_eq!(classify_long_double(b""), None);
        assert_eq!(long_double_human(b"10.50").as_deref(), Some(&b"10.5"[..]));
        assert_eq!(long_double_human(b"5.0e3").as_deref(), Some(&b"5000"[..]));
        assert_eq!(long_double_human(b"-0").as_deref(), Some(&b"0"[..]));
        assert_eq!(long_double_human(b"inf").as_deref(), Some(&b"inf"[..]));
        assert_eq!(long_double_human(b"x"), None);
    }
}
