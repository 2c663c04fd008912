//! RDB's primitive encodings: lengths, strings (integer, LZF and plain
//! forms), doubles and times, written into a byte vector and read back
//! from a byte slice with every length checked against what is there.

use super::{RdbError, RdbResult};

/// The RDB format version redis-server 7.0 writes.
pub const RDB_VERSION: u16 = 10;

// Value types.
pub const TYPE_STRING: u8 = 0;
pub const TYPE_LIST: u8 = 1;
pub const TYPE_SET: u8 = 2;
pub const TYPE_ZSET: u8 = 3;
pub const TYPE_HASH: u8 = 4;
pub const TYPE_ZSET_2: u8 = 5;
pub const TYPE_MODULE: u8 = 6;
pub const TYPE_MODULE_2: u8 = 7;
pub const TYPE_HASH_ZIPMAP: u8 = 9;
pub const TYPE_LIST_ZIPLIST: u8 = 10;
pub const TYPE_SET_INTSET: u8 = 11;
pub const TYPE_ZSET_ZIPLIST: u8 = 12;
pub const TYPE_HASH_ZIPLIST: u8 = 13;
pub const TYPE_LIST_QUICKLIST: u8 = 14;
pub const TYPE_STREAM_LISTPACKS: u8 = 15;
pub const TYPE_HASH_LISTPACK: u8 = 16;
pub const TYPE_ZSET_LISTPACK: u8 = 17;
pub const TYPE_LIST_QUICKLIST_2: u8 = 18;
pub const TYPE_STREAM_LISTPACKS_2: u8 = 19;

// Opcodes between records.
pub const OPCODE_FUNCTION2: u8 = 245;
pub const OPCODE_FUNCTION_PRE_GA: u8 = 246;
pub const OPCODE_MODULE_AUX: u8 = 247;
pub const OPCODE_IDLE: u8 = 248;
pub const OPCODE_FREQ: u8 = 249;
pub const OPCODE_AUX: u8 = 250;
pub const OPCODE_RESIZEDB: u8 = 251;
pub const OPCODE_EXPIRETIME_MS: u8 = 252;
pub const OPCODE_EXPIRETIME: u8 = 253;
pub const OPCODE_SELECTDB: u8 = 254;
pub const OPCODE_EOF: u8 = 255;

/// Quicklist node containers (RDB_TYPE_LIST_QUICKLIST_2).
pub const QUICKLIST_NODE_PLAIN: u64 = 1;
pub const QUICKLIST_NODE_PACKED: u64 = 2;

const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// Whether a type byte names a value Redis 7.0 can load.
pub fn is_value_type(t: u8) -> bool {
    matches!(t, 0..=7 | 9..=19)
}

pub fn write_len(out: &mut Vec<u8>, len: u64) {
    if len < 64 {
        out.push(len as u8);
    } else if len < 16384 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// The integer a string is, when it is one Redis stores in RDB's integer
/// form: canonical decimal (it prints back identically) within 32 bits.
fn rdb_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 11 {
        return None;
    }
    let n = crate::util::numbers::parse_i64(s)?;
    let mut buf = itoa::Buffer::new();
    (buf.format(n).as_bytes() == s).then_some(n)
}

/// Writes an integer in RDB's compact integer string form when it fits in
/// 32 bits, else as its decimal text.
pub fn write_int_string(out: &mut Vec<u8>, n: i64) {
    if let Ok(v) = i8::try_from(n) {
        out.push(0xc0 | ENC_INT8);
        out.push(v as u8);
    } else if let Ok(v) = i16::try_from(n) {
        out.push(0xc0 | ENC_INT16);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = i32::try_from(n) {
        out.push(0xc0 | ENC_INT32);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        let mut buf = itoa::Buffer::new();
        let s = buf.format(n).as_bytes();
        write_len(out, s.len() as u64);
        out.extend_from_slice(s);
    }
}

/// A string as redis-server writes it: as an integer when it is a short
/// canonical one, LZF-compressed (`compress`) when longer than 20 bytes
/// and that saves at least four, else plain.
pub fn write_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if let Some(n) = rdb_int(s) {
        if i32::try_from(n).is_ok() {
            write_int_string(out, n);
            return;
        }
    }
    write_blob(out, s, compress);
}

/// A string never tried as an integer (listpacks, intsets and other
/// serialized structures): LZF when it pays, else plain.
pub fn write_blob(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if compress && s.len() > 20 {
        if let Some(packed) = crate::util::lzf::compress(s, s.len() - 4) {
            out.push(0xc0 | ENC_LZF);
            write_len(out, packed.len() as u64);
            write_len(out, s.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
    write_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A double in the binary form (ZSET_2 scores, little endian).
pub fn write_binary_double(out: &mut Vec<u8>, d: f64) {
    out.extend_from_slice(&d.to_le_bytes());
}

pub fn write_millis(out: &mut Vec<u8>, ms: i64) {
    out.extend_from_slice(&ms.to_le_bytes());
}

/// A cursor over RDB bytes. Every read checks the bytes are there, so a
/// truncated or corrupted input is an error, never a panic, and no length
/// read from the input allocates more than the input could hold.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    packed_blobs: u64,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            packed_blobs: 0,
        }
    }

    /// Counts a listpack or intset blob read so far: the unit Redis's
    /// `dump_payload_sanitizations` counts when it validates deeply (the
    /// old ziplist and zipmap forms are always converted, so not counted).
    pub fn note_packed_blob(&mut self) {
        self.packed_blobs += 1;
    }

    pub fn packed_blobs(&self) -> u64 {
        self.packed_blobs
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn bytes(&mut self, n: usize) -> RdbResult<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or(RdbError::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(RdbError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    pub fn u8(&mut self) -> RdbResult<u8> {
        Ok(self.bytes(1)?[0])
    }

    pub fn peek_u8(&self) -> RdbResult<u8> {
        self.buf.get(self.pos).copied().ok_or(RdbError::Truncated)
    }

    fn array<const N: usize>(&mut self) -> RdbResult<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    pub fn millis(&mut self) -> RdbResult<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    pub fn seconds(&mut self) -> RdbResult<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    pub fn u64_be(&mut self) -> RdbResult<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    pub fn binary_double(&mut self) -> RdbResult<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A length, or the special-encoding marker of a string (`true`).
    fn len_or_encoding(&mut self) -> RdbResult<(u64, bool)> {
        let first = self.u8()?;
        Ok(match first >> 6 {
            0 => ((first & 0x3f) as u64, false),
            1 => ((((first & 0x3f) as u64) << 8) | self.u8()? as u64, false),
            2 => match first {
                0x80 => (u32::from_be_bytes(self.array()?) as u64, false),
                0x81 => (u64::from_be_bytes(self.array()?), false),
                _ => return Err(RdbError::Corrupt("unknown length encoding")),
            },
            _ => ((first & 0x3f) as u64, true),
        })
    }

    pub fn len(&mut self) -> RdbResult<u64> {
        match self.len_or_encoding()? {
            (n, false) => Ok(n),
            (_, true) => Err(RdbError::Corrupt("string encoding where a length belongs")),
        }
    }

    /// A count of items that each take at least `min_item_bytes` bytes,
    /// refused when the rest of the input could not hold them.
    pub fn count(&mut self, min_item_bytes: usize) -> RdbResult<usize> {
        let n = self.len()?;
        let n = usize::try_from(n).map_err(|_| RdbError::Corrupt("length out of range"))?;
        if n.saturating_mul(min_item_bytes.max(1)) > self.remaining() {
            return Err(RdbError::Truncated);
        }
        Ok(n)
    }

    /// A string in any of its forms, as bytes.
    pub fn string(&mut self) -> RdbResult<Vec<u8>> {
        match self.string_or_int()? {
            RdbString::Bytes(b) => Ok(b),
            RdbString::Int(n) => Ok(itoa::Buffer::new().format(n).as_bytes().to_vec()),
        }
    }

    /// A string, keeping the integer form apart (values store it as one).
    pub fn string_or_int(&mut self) -> RdbResult<RdbString> {
        let (n, encoded) = self.len_or_encoding()?;
        if !encoded {
            let n = usize::try_from(n).map_err(|_| RdbError::Truncated)?;
            return Ok(RdbString::Bytes(self.bytes(n)?.to_vec()));
        }
        Ok(match n as u8 {
            ENC_INT8 => RdbString::Int(self.u8()? as i8 as i64),
            ENC_INT16 => RdbString::Int(i16::from_le_bytes(self.array()?) as i64),
            ENC_INT32 => RdbString::Int(i32::from_le_bytes(self.array()?) as i64),
            ENC_LZF => {
                let clen = usize::try_from(self.len()?).map_err(|_| RdbError::Truncated)?;
                let len = usize::try_from(self.len()?).map_err(|_| RdbError::Truncated)?;
                let packed = self.bytes(clen)?;
                // LZF expands at most about 132 times (a back reference of
                // two or three bytes yields up to 264): a larger claim is a
                // corrupt header, refused before allocating for it.
                if len > clen.saturating_mul(140).saturating_add(64) || len == 0 {
                    return Err(RdbError::Corrupt("LZF length out of range"));
                }
                let plain = crate::util::lzf::decompress(packed, len)
                    .ok_or(RdbError::Corrupt("invalid LZF data"))?;
                if plain.len() != len {
                    return Err(RdbError::Corrupt("invalid LZF data"));
                }
                RdbString::Bytes(plain)
            }
            _ => return Err(RdbError::Corrupt("unknown string encoding")),
        })
    }

    /// A double in the old text form (RDB_TYPE_ZSET): a length byte, with
    /// 253, 254 and 255 standing for NaN, +inf and -inf.
    pub fn text_double(&mut self) -> RdbResult<f64> {
        match self.u8()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let s = self.bytes(n as usize)?;
                std::str::from_utf8(s)
                    .ok()
                    .and_then(|s| s.trim().parse::<f64>().ok())
                    .ok_or(RdbError::Corrupt("invalid double"))
            }
        }
    }
}

pub enum RdbString {
    Bytes(Vec<u8>),
    Int(i64),
}
