//! String values and their three encodings, mirroring what Redis reports in
//! `OBJECT ENCODING`: `int` for canonical 64-bit integers, `embstr` for short
//! strings written whole, `raw` for long strings and anything modified in
//! place (APPEND, SETRANGE), exactly where redis-server 7.0 switches.

use crate::util::numbers::parse_i64;

/// Longest string Redis stores as `embstr` (OBJ_ENCODING_EMBSTR_SIZE_LIMIT).
pub const EMBSTR_MAX: usize = 44;

#[derive(Debug, Clone)]
pub enum StrValue {
    /// A canonical decimal integer that round-trips exactly.
    Int(i64),
    /// A string written whole: `embstr` up to 44 bytes, `raw` above, as
    /// Redis reports them. Exact-size, 16 bytes inline.
    Bytes(Box<[u8]>),
    /// A string modified in place (APPEND, SETRANGE): always `raw`, with
    /// spare capacity so repeated appends stay amortised O(1). Boxed so
    /// every value stays 24 bytes.
    Growable(Box<Vec<u8>>),
}

impl StrValue {
    /// Encodes bytes written by SET-like commands the way Redis's
    /// `tryObjectEncoding` would.
    pub fn from_bytes(b: &[u8]) -> StrValue {
        if b.len() <= 20 {
            if let Some(n) = parse_i64(b) {
                return StrValue::Int(n);
            }
        }
        StrValue::Bytes(b.into())
    }

    /// Bytes produced by a command that Redis stores without trying the int
    /// encoding (e.g. INCRBYFLOAT's result): embstr or raw by length only.
    pub fn from_bytes_no_int(b: &[u8]) -> StrValue {
        StrValue::Bytes(b.into())
    }

    /// A value Redis creates as `raw` whatever its length (SETRANGE on a
    /// new key).
    pub fn raw(v: Vec<u8>) -> StrValue {
        StrValue::Growable(Box::new(v))
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            StrValue::Int(_) => "int",
            StrValue::Bytes(b) if b.len() <= EMBSTR_MAX => "embstr",
            StrValue::Bytes(_) | StrValue::Growable(_) => "raw",
        }
    }

    /// Borrows the string's bytes; an integer is formatted into `scratch`.
    #[inline]
    pub fn as_bytes<'a>(&'a self, scratch: &'a mut itoa::Buffer) -> &'a [u8] {
        match self {
            StrValue::Int(n) => scratch.format(*n).as_bytes(),
            StrValue::Bytes(b) => b,
            StrValue::Growable(v) => v,
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        let mut s = itoa::Buffer::new();
        self.as_bytes(&mut s).to_vec()
    }

    pub fn len(&self) -> usize {
        match self {
            StrValue::Int(n) => itoa::Buffer::new().format(*n).len(),
            StrValue::Bytes(b) => b.len(),
            StrValue::Growable(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value as an integer if Redis would accept it for INCR.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            StrValue::Int(n) => Some(*n),
            StrValue::Bytes(b) => parse_i64(b),
            StrValue::Growable(v) => parse_i64(v),
        }
    }

    /// Converts to the growable `raw` encoding for in-place modification.
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        if !matches!(self, StrValue::Growable(_)) {
            *self = StrValue::Growable(Box::new(self.to_vec()));
        }
        match self {
            StrValue::Growable(v) => v,
            // Just converted above.
            _ => unreachable!("string was converted to raw"),
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            StrValue::Int(_) => 0,
            StrValue::Bytes(b) => b.len(),
            StrValue::Growable(v) => v.capacity() + std::mem::size_of::<Vec<u8>>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_redis_thresholds() {
        assert_eq!(StrValue::from_bytes(b"123").encoding_name(), "int");
        assert_eq!(StrValue::from_bytes(b"0123").encoding_name(), "embstr");
        assert_eq!(StrValue::from_bytes(&[b'a'; 44]).encoding_name(), "embstr");
        assert_eq!(StrValue::from_bytes(&[b'a'; 45]).encoding_name(), "raw");
        let mut v = StrValue::from_bytes(b"12");
        v.make_raw().push(b'3');
        assert_eq!(v.encoding_name(), "raw");
        assert_eq!(v.to_vec(), b"123");
        assert_eq!(std::mem::size_of::<StrValue>(), 24);
    }
}
