//! The serialized compact structures RDB values embed: Redis's listpack
//! (written and read), and, read only, the ziplist, zipmap and intset of
//! files from older releases. Readers validate every entry against the
//! blob's bounds and its own header, so a corrupt blob is an error.

use super::{RdbError, RdbResult};

/// One listpack or ziplist element.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Int(i64),
    Bytes(Vec<u8>),
}

impl Item {
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Item::Bytes(b) => b,
            Item::Int(n) => itoa::Buffer::new().format(n).as_bytes().to_vec(),
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Item::Int(n) => Some(*n),
            Item::Bytes(b) => crate::util::numbers::parse_i64(b),
        }
    }
}

const CORRUPT_LISTPACK: RdbError = RdbError::Corrupt("invalid listpack");
const CORRUPT_ZIPLIST: RdbError = RdbError::Corrupt("invalid ziplist");

/// The integer a listpack stores a string as: canonical decimal only (no
/// sign on zero, no leading zeros, no '+'), as Redis's lpStringToInt64.
fn listpack_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let n = crate::util::numbers::parse_i64(s)?;
    let mut buf = itoa::Buffer::new();
    (buf.format(n).as_bytes() == s).then_some(n)
}

/// Builds a listpack the way Redis appends to one: strings that are
/// canonical integers are stored as integers.
#[derive(Default)]
pub struct ListpackWriter {
    buf: Vec<u8>,
    count: usize,
}

impl ListpackWriter {
    pub fn new() -> ListpackWriter {
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(&[0; 6]);
        ListpackWriter { buf, count: 0 }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes so far (header included, terminator not).
    pub fn byte_len(&self) -> usize {
        self.buf.len()
    }

    pub fn push(&mut self, s: &[u8]) {
        match listpack_int(s) {
            Some(n) => self.push_int(n),
            None => self.push_bytes(s),
        }
    }

    pub fn push_bytes(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let len = s.len();
        if len < 64 {
            self.buf.push(0x80 | len as u8);
        } else if len < 4096 {
            self.buf.push(0xe0 | (len >> 8) as u8);
            self.buf.push(len as u8);
        } else {
            self.buf.push(0xf0);
            self.buf.extend_from_slice(&(len as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        self.finish_entry(start);
    }

    pub fn push_int(&mut self, n: i64) {
        let start = self.buf.len();
        if (0..=127).contains(&n) {
            self.buf.push(n as u8);
        } else if (-4096..=4095).contains(&n) {
            let v = (n as u64) & 0x1fff;
            self.buf.push(0xc0 | (v >> 8) as u8);
            self.buf.push(v as u8);
        } else if let Ok(v) = i16::try_from(n) {
            self.buf.push(0xf1);
            self.buf.extend_from_slice(&v.to_le_bytes());
        } else if (-(1 << 23)..(1 << 23)).contains(&n) {
            self.buf.push(0xf2);
            self.buf.extend_from_slice(&(n as i32).to_le_bytes()[..3]);
        } else if let Ok(v) = i32::try_from(n) {
            self.buf.push(0xf3);
            self.buf.extend_from_slice(&v.to_le_bytes());
        } else {
            self.buf.push(0xf4);
            self.buf.extend_from_slice(&n.to_le_bytes());
        }
        self.finish_entry(start);
    }

    /// Appends the back-length of the entry that started at `start`: its
    /// size in 7-bit groups, most significant first, every byte but the
    /// first flagged, so it can be read from its last byte leftwards.
    fn finish_entry(&mut self, start: usize) {
        let l = (self.buf.len() - start) as u64;
        let mut groups = [0u8; 5];
        let mut n = 0;
        let mut rest = l;
        loop {
            groups[n] = (rest & 127) as u8;
            n += 1;
            rest >>= 7;
            if rest == 0 {
                break;
            }
        }
        // groups[0] is the least significant; it is written last.
        for i in (0..n).rev() {
            let flag = if i == n - 1 { 0 } else { 128 };
            self.buf.push(groups[i] | flag);
        }
        self.count += 1;
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(0xff);
        let total = self.buf.len() as u32;
        self.buf[0..4].copy_from_slice(&total.to_le_bytes());
        let n = self.count.min(65535) as u16;
        self.buf[4..6].copy_from_slice(&n.to_le_bytes());
        self.buf
    }
}

/// Every element of a listpack, checked: the header's size, each entry's
/// encoding, length and back-length, the terminator, and the header's
/// element count when it is not the "unknown" 65535.
pub fn read_listpack(lp: &[u8]) -> RdbResult<Vec<Item>> {
    if lp.len() < 7 {
        return Err(CORRUPT_LISTPACK);
    }
    let total = u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]) as usize;
    let declared = u16::from_le_bytes([lp[4], lp[5]]) as usize;
    if total != lp.len() || lp[total - 1] != 0xff {
        return Err(CORRUPT_LISTPACK);
    }
    let end = total - 1;
    let mut items = Vec::with_capacity(declared.min(end / 2));
    let mut p = 6;
    let take = |p: usize, n: usize| -> RdbResult<&[u8]> {
        lp.get(p..p.checked_add(n).ok_or(CORRUPT_LISTPACK)?)
            .filter(|_| p + n <= end)
            .ok_or(CORRUPT_LISTPACK)
    };
    while p < end {
        let start = p;
        let b = lp[p];
        let item = if b & 0x80 == 0 {
            p += 1;
            Item::Int(b as i64)
        } else if b & 0xc0 == 0x80 {
            let len = (b & 0x3f) as usize;
            let s = take(p + 1, len)?;
            p += 1 + len;
            Item::Bytes(s.to_vec())
        } else if b & 0xe0 == 0xc0 {
            let h = take(p, 2)?;
            let v = (((h[0] & 0x1f) as u64) << 8) | h[1] as u64;
            p += 2;
            // Sign-extend 13 bits.
            Item::Int(((v << 51) as i64) >> 51)
        } else if b & 0xf0 == 0xe0 {
            let h = take(p, 2)?;
            let len = (((h[0] & 0x0f) as usize) << 8) | h[1] as usize;
            let s = take(p + 2, len)?;
            p += 2 + len;
            Item::Bytes(s.to_vec())
        } else {
            match b {
                0xf0 => {
                    let h = take(p + 1, 4)?;
                    let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
                    let s = take(p + 5, len)?;
                    p += 5 + len;
                    Item::Bytes(s.to_vec())
                }
                0xf1 => {
                    let h = take(p + 1, 2)?;
                    p += 3;
                    Item::Int(i16::from_le_bytes([h[0], h[1]]) as i64)
                }
                0xf2 => {
                    let h = take(p + 1, 3)?;
                    p += 4;
                    Item::Int((i32::from_le_bytes([0, h[0], h[1], h[2]]) >> 8) as i64)
                }
                0xf3 => {
                    let h = take(p + 1, 4)?;
                    p += 5;
                    Item::Int(i32::from_le_bytes([h[0], h[1], h[2], h[3]]) as i64)
                }
                0xf4 => {
                    let h = take(p + 1, 8)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(h);
                    p += 9;
                    Item::Int(i64::from_le_bytes(a))
                }
                _ => return Err(CORRUPT_LISTPACK),
            }
        };
        // The back-length must encode exactly this entry's size.
        let entry_len = (p - start) as u64;
        let mut expected = ListpackWriter {
            buf: Vec::new(),
            count: 0,
        };
        expected.buf.resize(entry_len as usize, 0);
        expected.finish_entry(0);
        let back = &expected.buf[entry_len as usize..];
        if take(p, back.len())? != back {
            return Err(CORRUPT_LISTPACK);
        }
        p += back.len();
        items.push(item);
    }
    if declared != 65535 && declared != items.len() {
        return Err(CORRUPT_LISTPACK);
    }
    Ok(items)
}

/// Every element of a ziplist (RDB 7-9 files), checked as Redis's deep
/// validation does: bounds, encodings, previous-entry lengths, the tail
/// offset, the terminator and the count.
pub fn read_ziplist(zl: &[u8]) -> RdbResult<Vec<Item>> {
    if zl.len() < 11 {
        return Err(CORRUPT_ZIPLIST);
    }
    let total = u32::from_le_bytes([zl[0], zl[1], zl[2], zl[3]]) as usize;
    let tail = u32::from_le_bytes([zl[4], zl[5], zl[6], zl[7]]) as usize;
    let declared = u16::from_le_bytes([zl[8], zl[9]]) as usize;
    if total != zl.len() || zl[total - 1] != 0xff {
        return Err(CORRUPT_ZIPLIST);
    }
    let end = total - 1;
    let take = |p: usize, n: usize| -> RdbResult<&[u8]> {
        match p.checked_add(n) {
            Some(e) if e <= end => Ok(&zl[p..e]),
            _ => Err(CORRUPT_ZIPLIST),
        }
    };
    let mut items = Vec::with_capacity(declared.min(end / 2));
    let mut p = 10;
    let mut prev_len = 0usize;
    let mut last_start = 10;
    while p < end {
        let start = p;
        let prevlen = if zl[p] < 254 {
            p += 1;
            zl[start] as usize
        } else {
            let h = take(p + 1, 4)?;
            p += 5;
            u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize
        };
        if prevlen != prev_len {
            return Err(CORRUPT_ZIPLIST);
        }
        let b = *zl.get(p).filter(|_| p < end).ok_or(CORRUPT_ZIPLIST)?;
        let item = match b >> 6 {
            0 => {
                let len = (b & 0x3f) as usize;
                let s = take(p + 1, len)?;
                p += 1 + len;
                Item::Bytes(s.to_vec())
            }
            1 => {
                let h = take(p, 2)?;
                let len = (((h[0] & 0x3f) as usize) << 8) | h[1] as usize;
                let s = take(p + 2, len)?;
                p += 2 + len;
                Item::Bytes(s.to_vec())
            }
            2 => {
                if b != 0x80 {
                    return Err(CORRUPT_ZIPLIST);
                }
                let h = take(p + 1, 4)?;
                let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
                let s = take(p + 5, len)?;
                p += 5 + len;
                Item::Bytes(s.to_vec())
            }
            _ => match b {
                0xc0 => {
                    let h = take(p + 1, 2)?;
                    p += 3;
                    Item::Int(i16::from_le_bytes([h[0], h[1]]) as i64)
                }
                0xd0 => {
                    let h = take(p + 1, 4)?;
                    p += 5;
                    Item::Int(i32::from_le_bytes([h[0], h[1], h[2], h[3]]) as i64)
                }
                0xe0 => {
                    let h = take(p + 1, 8)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(h);
                    p += 9;
                    Item::Int(i64::from_le_bytes(a))
                }
                0xf0 => {
                    let h = take(p + 1, 3)?;
                    p += 4;
                    Item::Int((i32::from_le_bytes([0, h[0], h[1], h[2]]) >> 8) as i64)
                }
                0xfe => {
                    let h = take(p + 1, 1)?;
                    p += 2;
                    Item::Int(h[0] as i8 as i64)
                }
                0xf1..=0xfd => {
                    p += 1;
                    Item::Int((b & 0x0f) as i64 - 1)
                }
                _ => return Err(CORRUPT_ZIPLIST),
            },
        };
        prev_len = p - start;
        last_start = start;
        items.push(item);
    }
    let expected_tail = if items.is_empty() { 10 } else { last_start };
    if tail != expected_tail || (declared != 65535 && declared != items.len()) {
        return Err(CORRUPT_ZIPLIST);
    }
    Ok(items)
}

/// The field/value pairs of a zipmap (RDB_TYPE_HASH_ZIPMAP, pre-2.6 files).
pub fn read_zipmap(zm: &[u8]) -> RdbResult<Vec<(Vec<u8>, Vec<u8>)>> {
    const BAD: RdbError = RdbError::Corrupt("invalid zipmap");
    let mut p = 1;
    let mut pairs = Vec::new();
    let len_at = |p: &mut usize| -> RdbResult<Option<usize>> {
        let b = *zm.get(*p).ok_or(BAD)?;
        match b {
            0..=253 => {
                *p += 1;
                Ok(Some(b as usize))
            }
            254 => {
                let h = zm.get(*p + 1..*p + 5).ok_or(BAD)?;
                *p += 5;
                Ok(Some(u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize))
            }
            255 => Ok(None),
        }
    };
    while let Some(klen) = len_at(&mut p)? {
        let key = zm
            .get(p..p.checked_add(klen).ok_or(BAD)?)
            .ok_or(BAD)?
            .to_vec();
        p += klen;
        let vlen = len_at(&mut p)?.ok_or(BAD)?;
        let free = *zm.get(p).ok_or(BAD)? as usize;
        p += 1;
        let val = zm
            .get(p..p.checked_add(vlen).ok_or(BAD)?)
            .ok_or(BAD)?
            .to_vec();
        p += vlen + free;
        pairs.push((key, val));
    }
    if p + 1 != zm.len() {
        return Err(BAD);
    }
    Ok(pairs)
}

/// The members of an intset, checked: a known width, a length matching
/// the blob, and members strictly ascending.
pub fn read_intset(is: &[u8]) -> RdbResult<Vec<i64>> {
    const BAD: RdbError = RdbError::Corrupt("invalid intset");
    if is.len() < 8 {
        return Err(BAD);
    }
    let width = u32::from_le_bytes([is[0], is[1], is[2], is[3]]) as usize;
    let n = u32::from_le_bytes([is[4], is[5], is[6], is[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) || n.checked_mul(width) != Some(is.len() - 8) || n == 0 {
        return Err(BAD);
    }
    let mut out = Vec::with_capacity(n);
    for chunk in is[8..].chunks_exact(width) {
        let v = match width {
            2 => i16::from_le_bytes([chunk[0], chunk[1]]) as i64,
            4 => i32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]) as i64,
            _ => {
                let mut a = [0u8; 8];
                a.copy_from_slice(chunk);
                i64::from_le_bytes(a)
            }
        };
        if out.last().is_some_and(|&last| last >= v) {
            return Err(BAD);
        }
        out.push(v);
    }
    Ok(out)
}

/// An intset of ascending members, in the narrowest width that holds them.
pub fn write_intset(sorted: &[i64]) -> Vec<u8> {
    let fits = |lo: i64, hi: i64| sorted.iter().all(|&v| v >= lo && v <= hi);
    let width: usize = if fits(i16::MIN as i64, i16::MAX as i64) {
        2
    } else if fits(i32::MIN as i64, i32::MAX as i64) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * sorted.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    for &v in sorted {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_round_trip_across_encodings() {
        let samples: Vec<Vec<u8>> = vec![
            b"0".to_vec(),
            b"127".to_vec(),
            b"128".to_vec(),
            b"-1".to_vec(),
            b"-4096".to_vec(),
            b"4095".to_vec(),
            b"-4097".to_vec(),
            b"32767".to_vec(),
            b"-8388608".to_vec(),
            b"8388607".to_vec(),
            b"2147483647".to_vec(),
            b"-9223372036854775808".to_vec(),
            b"007".to_vec(),
            b"".to_vec(),
            vec![b'x'; 63],
            vec![b'y'; 64],
            vec![b'z'; 4095],
            vec![b'w'; 4096],
            vec![b'v'; 20000],
        ];
        let mut w = ListpackWriter::new();
        for s in &samples {
            w.push(s);
        }
        let lp = w.finish();
        let back: Vec<Vec<u8>> = read_listpack(&lp)
            .expect("valid")
            .into_iter()
            .map(Item::into_bytes)
            .collect();
        assert_eq!(back, samples);
    }

    #[test]
    fn listpack_matches_redis_bytes() {
        // redis-server 7.0: HSET h a 1 → DUMP's listpack blob.
        let mut w = ListpackWriter::new();
        w.push(b"a");
        w.push(b"1");
        assert_eq!(
            w.finish(),
            b"\x0c\x00\x00\x00\x02\x00\x81a\x02\x01\x01\xff".to_vec()
        );
    }

    #[test]
    fn corrupt_listpacks_are_refused() {
        let mut w = ListpackWriter::new();
        w.push(b"hello");
        w.push(b"12345");
        let lp = w.finish();
        for cut in 0..lp.len() {
            assert!(read_listpack(&lp[..cut]).is_err());
        }
        for i in 0..lp.len() {
            for bit in 0..8 {
                let mut bad = lp.clone();
                bad[i] ^= 1 << bit;
                let _ = read_listpack(&bad);
            }
        }
    }

    #[test]
    fn ziplist_and_zipmap_of_older_files_read() {
        // ["a", 1] as Redis 6 writes it: a 1-byte string, then the immediate integer 1.
        let zl = [
            16, 0, 0, 0, 13, 0, 0, 0, 2, 0, 0x00, 0x01, b'a', 0x03, 0xf2, 0xff,
        ];
        assert_eq!(
            read_ziplist(&zl).expect("valid"),
            vec![Item::Bytes(b"a".to_vec()), Item::Int(1)]
        );
        let mut bad_tail = zl;
        bad_tail[4] = 10;
        assert!(read_ziplist(&bad_tail).is_err());
        let mut bad_prev = zl;
        bad_prev[13] = 4;
        assert!(read_ziplist(&bad_prev).is_err());
        for cut in 0..zl.len() {
            assert!(read_ziplist(&zl[..cut]).is_err());
        }
        // {f: v} as a zipmap: count, key length, key, value length, free bytes, value, end.
        let zm = [1, 1, b'f', 1, 0, b'v', 0xff];
        assert_eq!(
            read_zipmap(&zm).expect("valid"),
            vec![(b"f".to_vec(), b"v".to_vec())]
        );
        assert!(read_zipmap(&zm[..5]).is_err());
    }

    #[test]
    fn intset_round_trip() {
        for set in [vec![1, 2, 3], vec![-40000, 5], vec![i64::MIN, 0, i64::MAX]] {
            assert_eq!(read_intset(&write_intset(&set)).expect("valid"), set);
        }
        assert!(read_intset(&write_intset(&[])).is_err());
    }
}
