//! Hash values and their two encodings, switched exactly where
//! redis-server 7.0 switches (`OBJECT ENCODING` reports the same name):
//!
//! * `listpack`: every field and value in one contiguous byte buffer, in
//!   insertion order (new fields are appended, updates happen in place,
//!   deletions close the gap), so small hashes cost one allocation and
//!   iterate in the order Redis's listpack does. A one-byte hash per field,
//!   kept in a small index at the front of the buffer, makes lookups a scan
//!   of those bytes rather than of the pairs.
//! * `hashtable`: a [`MemberTable`] (insertion-ordered positions until a
//!   removal swaps the last pair in, an index that doubles without a
//!   pause) for O(1) lookups, inserts and deletes, each field stored with
//!   its value in one exactly-sized allocation.
//!
//! A hash starts as a listpack and becomes a hashtable for good (Redis
//! never converts back) when a write leaves it with more than
//! `hash-max-listpack-entries` fields, or writes a field or value longer
//! than `hash-max-listpack-value` bytes.
//!
//! ## HSCAN
//!
//! A listpack is returned whole by one call (cursor 0), as Redis does. The
//! hashtable's cursor walks the map's dense entry vector from the highest
//! index down: cursor `c` means "positions below `c` remain" (0 starts at
//! the top and also means done). That gives Redis's guarantee (a field
//! present for the whole iteration is returned at least once) whatever
//! happens between calls: new fields are appended above every remaining
//! position, growth never moves entries, and a delete only moves the *last*
//! entry down into the hole — an entry that was already visited (returned
//! again, which SCAN allows) or one added after the scan started. Nothing
//! ever moves from below the cursor to above it.

use super::member_table::{Keyed, MemberTable};
use super::Limits;

#[derive(Debug, Clone)]
pub struct HashValue {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    Listpack(Listpack),
    Table(Box<Table>),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::new()
    }
}

impl HashValue {
    /// An empty hash in the compact encoding (what a new key starts as).
    pub fn new() -> HashValue {
        HashValue {
            repr: Repr::Listpack(Listpack::default()),
        }
    }

    pub fn encoding_name(&self) -> &'static str {
        match &self.repr {
            Repr::Listpack(_) => "listpack",
            Repr::Table(_) => "hashtable",
        }
    }

    /// Whether the hash uses the compact encoding.
    pub fn is_compact(&self) -> bool {
        matches!(self.repr, Repr::Listpack(_))
    }

    /// Approximate heap bytes owned by the hash, in O(1).
    pub fn heap_size(&self) -> usize {
        match &self.repr {
            Repr::Listpack(lp) => lp.buf.capacity(),
            Repr::Table(t) => t.heap_size(),
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Listpack(lp) => lp.count(),
            Repr::Table(t) => t.map.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `field`.
    #[inline]
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Listpack(lp) => lp.find(field).map(|f| &lp.buf[f.value.clone()]),
            Repr::Table(t) => t.get(field),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` to `value`; true when the field is new. Converts to the
    /// hashtable encoding as Redis's `hashTypeSet` does: before writing a
    /// field or value longer than `hash-max-listpack-value`, and after any
    /// write (update included) that leaves more than
    /// `hash-max-listpack-entries` fields.
    #[inline]
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &Limits) -> bool {
        if let Repr::Listpack(lp) = &self.repr {
            let max = limits.hash_max_listpack_value;
            if field.len() > max
                || value.len() > max
                || lp.would_overflow(field.len() + value.len())
            {
                self.convert();
            }
        }
        match &mut self.repr {
            Repr::Listpack(lp) => {
                let added = lp.set(field, value);
                if lp.count() > limits.hash_max_listpack_entries {
                    self.convert();
                }
                added
            }
            Repr::Table(t) => t.set(field, value),
        }
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Listpack(lp) => lp.remove(field),
            Repr::Table(t) => t.remove(field),
        }
    }

    /// Every (field, value) pair, in the encoding's order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Listpack(lp) => Iter(IterInner::Listpack(lp.iter())),
            Repr::Table(t) => Iter(IterInner::Table(t.map.iter())),
        }
    }

    /// The pair at position `i` of [`iter`](Self::iter), in O(1).
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Listpack(lp) => lp.get_index(i),
            Repr::Table(t) => t.get_index(i),
        }
    }

    /// One HSCAN step: calls `emit` for the pairs visited and returns the
    /// next cursor (0 when done). A listpack is visited whole; see the
    /// module documentation for the hashtable's cursor.
    pub fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        mut emit: impl FnMut(&'a [u8], &'a [u8]),
    ) -> u64 {
        match &self.repr {
            Repr::Listpack(lp) => {
                for (f, v) in lp.iter() {
                    emit(f, v);
                }
                0
            }
            Repr::Table(t) => {
                let len = t.map.len();
                let mut pos = match usize::try_from(cursor) {
                    Ok(0) => len,
                    Ok(c) => c.min(len),
                    Err(_) => len,
                };
                let mut visited = 0;
                while pos > 0 && visited < count {
                    pos -= 1;
                    visited += 1;
                    if let Some((f, v)) = t.get_index(pos) {
                        emit(f, v);
                    }
                }
                pos as u64
            }
        }
    }

    /// Switches to the hashtable encoding (no-op if already there).
    fn convert(&mut self) {
        if let Repr::Listpack(lp) = &self.repr {
            let mut t = Table::with_capacity(lp.count());
            for (f, v) in lp.iter() {
                t.set(f, v);
            }
            self.repr = Repr::Table(Box::new(t));
        }
    }
}

/// Iterator over a hash's (field, value) pairs.
pub struct Iter<'a>(IterInner<'a>);

enum IterInner<'a> {
    Listpack(LpIter<'a>),
    Table(super::member_table::Iter<'a, Pair>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterInner::Listpack(it) => it.next(),
            IterInner::Table(it) => it.next().map(|p| p.parts()),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterInner::Listpack(it) => it.size_hint(),
            IterInner::Table(it) => it.size_hint(),
        }
    }
}

// ---- listpack --------------------------------------------------------------------------------

/// The compact encoding, one buffer:
///
/// ```text
/// [count: u32][icap: u32][tags: u8 × icap][offsets: u32 × icap][pairs ...]
/// pair = [varint field len][varint value len][field][value]
/// ```
///
/// Pairs sit in insertion order; `offsets[i]` is where pair `i` starts in
/// the pair area and `tags[i]` is a one-byte hash of its field. A lookup
/// scans the contiguous tag bytes and compares only the pairs whose tag
/// matches, so it touches a few cache lines instead of walking every pair
/// (Redis's listpack walks them all); positional access (HRANDFIELD) is
/// O(1). The index costs 5 bytes per pair plus growth slack; an empty hash
/// owns no buffer.
#[derive(Debug, Clone, Default)]
struct Listpack {
    buf: Vec<u8>,
}

const HDR: usize = 8;

/// Redis converts a listpack that would grow past 1 GB (`lpSafeToAdd`).
const MAX_LISTPACK_BYTES: usize = 1 << 30;

/// The one-byte hash kept for each field.
#[inline]
fn tag_of(field: &[u8]) -> u8 {
    // FNV-1a folded to a byte: cheap for short fields, and the last bytes
    // (where similar field names differ) reach every bit.
    let mut h: u32 = 0x811c_9dc5;
    for &b in field {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    (h ^ (h >> 8) ^ (h >> 16) ^ (h >> 24)) as u8
}

/// `n` as a LEB128 varint in a stack buffer: (bytes, length).
#[inline]
fn varint_bytes(mut n: usize) -> ([u8; 10], usize) {
    let mut out = [0u8; 10];
    let mut i = 0;
    while n >= 0x80 {
        out[i] = (n as u8) | 0x80;
        n >>= 7;
        i += 1;
    }
    out[i] = n as u8;
    (out, i + 1)
}

/// Reads a varint at `pos`: (value, position after it). None if the buffer
/// ends inside it (never for buffers this module wrote).
#[inline(always)]
fn get_varint(buf: &[u8], pos: usize) -> Option<(usize, usize)> {
    let b = *buf.get(pos)?;
    if b < 0x80 {
        return Some((b as usize, pos + 1));
    }
    get_varint_slow(buf, pos)
}

#[cold]
fn get_varint_slow(buf: &[u8], mut pos: usize) -> Option<(usize, usize)> {
    let mut n = 0usize;
    let mut shift = 0u32;
    loop {
        let b = *buf.get(pos)?;
        pos += 1;
        n |= ((b & 0x7f) as usize).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some((n, pos));
        }
        shift += 7;
    }
}

/// The pair at absolute position `pos`: (position of its value length,
/// field range, value range). None on a truncated pair (never written).
#[inline(always)]
fn read_pair(
    buf: &[u8],
    pos: usize,
) -> Option<(usize, std::ops::Range<usize>, std::ops::Range<usize>)> {
    let (flen, vlen_at) = get_varint(buf, pos)?;
    let (vlen, fstart) = get_varint(buf, vlen_at)?;
    let vstart = fstart.checked_add(flen)?;
    let end = vstart.checked_add(vlen)?;
    if end > buf.len() {
        return None;
    }
    Some((vlen_at, fstart..vstart, vstart..end))
}

#[inline(always)]
fn get_u32(buf: &[u8], at: usize) -> usize {
    match buf.get(at..at + 4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize,
        None => 0,
    }
}

#[inline(always)]
fn put_u32(buf: &mut [u8], at: usize, v: usize) {
    // Offsets stay below MAX_LISTPACK_BYTES, so they fit.
    buf[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
}

/// A pair found by [`Listpack::find`].
struct Found {
    /// Its index in insertion order.
    index: usize,
    /// Absolute positions: the pair's start, its value length, its value.
    start: usize,
    vlen_at: usize,
    value: std::ops::Range<usize>,
}

impl Listpack {
    #[inline]
    fn count(&self) -> usize {
        get_u32(&self.buf, 0)
    }

    #[inline]
    fn icap(&self) -> usize {
        get_u32(&self.buf, 4)
    }

    /// Where the pair area starts.
    #[inline]
    fn data_start(&self) -> usize {
        HDR + 5 * self.icap()
    }

    /// Absolute position of pair `i` (below `count()`).
    #[inline]
    fn pair_pos(&self, i: usize) -> usize {
        self.data_start() + get_u32(&self.buf, HDR + self.icap() + 4 * i)
    }

    fn iter(&self) -> LpIter<'_> {
        LpIter {
            buf: &self.buf,
            pos: self.data_start().min(self.buf.len()),
            left: self.count(),
        }
    }

    /// The pair at position `i` of the insertion order.
    fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        if i >= self.count() {
            return None;
        }
        let (_, f, v) = read_pair(&self.buf, self.pair_pos(i))?;
        Some((&self.buf[f], &self.buf[v]))
    }

    #[inline]
    fn find(&self, field: &[u8]) -> Option<Found> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let tag = tag_of(field);
        let buf = &self.buf[..];
        let tags = buf.get(HDR..HDR + n)?;
        let mut from = 0;
        while let Some(k) = memchr::memchr(tag, &tags[from..]) {
            let i = from + k;
            let start = self.pair_pos(i);
            let (vlen_at, f, v) = read_pair(buf, start)?;
            if buf.get(f) == Some(field) {
                return Some(Found {
                    index: i,
                    start,
                    vlen_at,
                    value: v,
                });
            }
            from = i + 1;
        }
        None
    }

    /// Rebuilds the buffer with room for `icap` pairs in the index.
    fn relayout(&mut self, icap: usize) {
        let n = self.count();
        let old_icap = self.icap();
        let old_data = self.data_start().min(self.buf.len());
        let data_len = self.buf.len() - old_data;
        let mut nb = Vec::with_capacity(HDR + 5 * icap + data_len);
        nb.extend_from_slice(&(n as u32).to_le_bytes());
        nb.extend_from_slice(&(icap as u32).to_le_bytes());
        nb.resize(HDR + 5 * icap, 0);
        if n > 0 {
            nb[HDR..HDR + n].copy_from_slice(&self.buf[HDR..HDR + n]);
            let (from, to) = (HDR + old_icap, HDR + icap);
            nb[to..to + 4 * n].copy_from_slice(&self.buf[from..from + 4 * n]);
        }
        nb.extend_from_slice(&self.buf[old_data..]);
        self.buf = nb;
    }

    /// Adds `delta` to the offsets of the pairs after `i`.
    fn shift_offsets(&mut self, i: usize, delta: isize) {
        let (n, base) = (self.count(), HDR + self.icap());
        for j in i + 1..n {
            let at = base + 4 * j;
            let v = get_u32(&self.buf, at) as isize + delta;
            put_u32(&mut self.buf, at, v.max(0) as usize);
        }
    }

    /// Replaces `buf[start..end]` with the concatenation of `parts`,
    /// moving the tail once.
    fn splice(&mut self, start: usize, end: usize, parts: &[&[u8]]) {
        let new_len: usize = parts.iter().map(|p| p.len()).sum();
        let old_len = end - start;
        let tail = self.buf.len() - end;
        if new_len > old_len {
            let grow = new_len - old_len;
            self.buf.reserve_exact(grow);
            self.buf.resize(self.buf.len() + grow, 0);
            self.buf.copy_within(end..end + tail, end + grow);
        } else if new_len < old_len {
            self.buf.copy_within(end..end + tail, start + new_len);
            self.buf.truncate(start + new_len + tail);
        }
        let mut at = start;
        for p in parts {
            self.buf[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
    }

    /// Whether adding `extra` bytes would take the buffer past Redis's
    /// listpack size limit.
    fn would_overflow(&self, extra: usize) -> bool {
        self.buf.len().saturating_add(extra).saturating_add(32) > MAX_LISTPACK_BYTES
    }

    fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Some(f) = self.find(field) {
            if f.value.len() == value.len() {
                self.buf[f.value].copy_from_slice(value);
            } else {
                // The value's length sits before the field: rewrite both.
                let old = f.value.end - f.vlen_at;
                let (hdr, n) = varint_bytes(value.len());
                self.splice(f.vlen_at, f.value.end, &[&hdr[..n], field, value]);
                let new = n + field.len() + value.len();
                self.shift_offsets(f.index, new as isize - old as isize);
            }
            return false;
        }
        let n = self.count();
        if n == self.icap() {
            // Room for a quarter more pairs (at least 4) in the index.
            self.relayout(n + n / 4 + 4);
        }
        let (fh, fl) = varint_bytes(field.len());
        let (vh, vl) = varint_bytes(value.len());
        let off = self.buf.len() - self.data_start();
        let (icap, tag) = (self.icap(), tag_of(field));
        self.buf[HDR + n] = tag;
        put_u32(&mut self.buf, HDR + icap + 4 * n, off);
        let u32s = (n + 1) as u32;
        self.buf[..4].copy_from_slice(&u32s.to_le_bytes());
        // Exact growth: a listpack is meant to be small, and a tight buffer
        // is the point of the encoding.
        self.buf.reserve_exact(fl + vl + field.len() + value.len());
        self.buf.extend_from_slice(&fh[..fl]);
        self.buf.extend_from_slice(&vh[..vl]);
        self.buf.extend_from_slice(field);
        self.buf.extend_from_slice(value);
        true
    }

    fn remove(&mut self, field: &[u8]) -> bool {
        let Some(f) = self.find(field) else {
            return false;
        };
        let n = self.count();
        if n <= 1 {
            self.buf = Vec::new();
            return true;
        }
        let removed = f.value.end - f.start;
        self.buf.drain(f.start..f.value.end);
        self.shift_offsets(f.index, -(removed as isize));
        let icap = self.icap();
        let i = f.index;
        // Close the gap in both index arrays (tags, then offsets).
        self.buf.copy_within(HDR + i + 1..HDR + n, HDR + i);
        let offs = HDR + icap;
        self.buf
            .copy_within(offs + 4 * (i + 1)..offs + 4 * n, offs + 4 * i);
        self.buf[..4].copy_from_slice(&((n - 1) as u32).to_le_bytes());
        // Give memory back once the index or the buffer is mostly empty.
        if icap > 8 && (n - 1) * 2 < icap {
            self.relayout(n - 1 + (n - 1) / 4 + 4);
        } else if self.buf.capacity() > 64 && self.buf.len() < self.buf.capacity() / 2 {
            self.buf.shrink_to_fit();
        }
        true
    }
}

/// Iterator over a listpack's pairs, in insertion order.
pub struct LpIter<'a> {
    buf: &'a [u8],
    pos: usize,
    left: usize,
}

impl<'a> Iterator for LpIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let (_, f, v) = read_pair(self.buf, self.pos)?;
        self.pos = v.end;
        self.left -= 1;
        Some((&self.buf[f], &self.buf[v]))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

// ---- hashtable -------------------------------------------------------------------------------

/// A field and its value in one exactly-sized allocation:
/// `[varint field len][field][value]`. One allocation per pair (Redis has
/// one per field and one per value) and a 16-byte handle in the entry.
/// Hashing and equality look at the field only, so the value can be
/// rewritten in place without disturbing the map.
#[derive(Debug, Clone)]
struct Pair(Box<[u8]>);

impl Pair {
    fn new(field: &[u8], value: &[u8]) -> Pair {
        let (h, n) = varint_bytes(field.len());
        let mut b = Vec::with_capacity(n + field.len() + value.len());
        b.extend_from_slice(&h[..n]);
        b.extend_from_slice(field);
        b.extend_from_slice(value);
        Pair(b.into_boxed_slice())
    }

    /// Where the value starts.
    #[inline]
    fn split(&self) -> usize {
        match get_varint(&self.0, 0) {
            Some((flen, at)) => (at + flen).min(self.0.len()),
            None => self.0.len(),
        }
    }

    #[inline]
    fn field(&self) -> &[u8] {
        let at = match get_varint(&self.0, 0) {
            Some((_, at)) => at,
            None => 0,
        };
        &self.0[at.min(self.0.len())..self.split()]
    }

    #[inline]
    fn value(&self) -> &[u8] {
        &self.0[self.split()..]
    }

    #[inline]
    fn parts(&self) -> (&[u8], &[u8]) {
        (self.field(), self.value())
    }
}

impl Keyed for Pair {
    #[inline]
    fn key(&self) -> &[u8] {
        self.field()
    }
}

#[derive(Debug, Clone)]
struct Table {
    map: MemberTable<Pair>,
    /// Heap bytes of the pairs, kept so that [`HashValue::heap_size`]
    /// (sampled by eviction) stays O(1).
    payload: usize,
}

impl Table {
    fn with_capacity(n: usize) -> Table {
        Table {
            map: MemberTable::with_capacity(n),
            payload: 0,
        }
    }

    fn heap_size(&self) -> usize {
        self.map.structure_bytes() + self.payload
    }

    #[inline]
    fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.map.get(field).map(Pair::value)
    }

    #[inline]
    fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.map.get_index(i).map(Pair::parts)
    }

    #[inline]
    fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        let payload = &mut self.payload;
        let existing = self.map.find_or_push(field, || {
            let p = Pair::new(field, value);
            *payload += p.0.len();
            p
        });
        let Some(p) = existing else {
            return true;
        };
        let at = p.split();
        if p.0.len() - at == value.len() {
            // Same length (a counter, a fixed-size blob): no allocation.
            p.0[at..].copy_from_slice(value);
        } else {
            // Same field, so the same slot in the index.
            let new = Pair::new(field, value);
            *payload = payload.saturating_sub(p.0.len()) + new.0.len();
            *p = new;
        }
        false
    }

    fn remove(&mut self, field: &[u8]) -> bool {
        match self.map.swap_remove(field) {
            Some(p) => {
                self.payload = self.payload.saturating_sub(p.0.len());
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(entries: usize, value: usize) -> Limits {
        Limits {
            hash_max_listpack_entries: entries,
            hash_max_listpack_value: value,
            ..Limits::default()
        }
    }

    #[test]
    fn listpack_keeps_insertion_order_and_updates_in_place() {
        let l = limits(128, 64);
        let mut h = HashValue::new();
        assert!(h.set(b"a", b"1", &l));
        assert!(h.set(b"b", b"22", &l));
        assert!(h.set(b"c", b"", &l));
        assert!(!h.set(b"a", b"longer value", &l));
        assert!(!h.set(b"b", b"", &l));
        let pairs: Vec<_> = h.iter().collect();
        assert_eq!(
            pairs,
            vec![
                (&b"a"[..], &b"longer value"[..]),
                (&b"b"[..], &b""[..]),
                (&b"c"[..], &b""[..])
            ]
        );
        assert_eq!(h.encoding_name(), "listpack");
        assert!(h.remove(b"b"));
        assert!(!h.remove(b"b"));
        assert_eq!(h.len(), 2);
        assert_eq!(h.get(b"a"), Some(&b"longer value"[..]));
        assert_eq!(h.get(b"c"), Some(&b""[..]));
        assert_eq!(h.get(b"b"), None);
        assert!(h.remove(b"a") && h.remove(b"c"));
        assert!(h.is_empty());
    }

    #[test]
    fn long_items_use_multibyte_lengths() {
        let l = limits(128, 100_000);
        let mut h = HashValue::new();
        let big = vec![b'x'; 70_000];
        h.set(b"f", &big, &l);
        h.set(&big, b"v", &l);
        assert_eq!(h.get(b"f").map(|v| v.len()), Some(70_000));
        assert_eq!(h.get(&big), Some(&b"v"[..]));
        h.set(b"f", b"short", &l);
        assert_eq!(h.get(b"f"), Some(&b"short"[..]));
        assert_eq!(h.get(&big), Some(&b"v"[..]));
        assert_eq!(h.encoding_name(), "listpack");
    }

    #[test]
    fn converts_at_redis_thresholds() {
        let l = limits(2, 4);
        let mut h = HashValue::new();
        h.set(b"a", b"1234", &l);
        h.set(b"b", b"1", &l);
        assert_eq!(h.encoding_name(), "listpack");
        h.set(b"c", b"1", &l);
        assert_eq!(h.encoding_name(), "hashtable");
        let mut h = HashValue::new();
        h.set(b"abcde", b"1", &l);
        assert_eq!(h.encoding_name(), "hashtable");
        let mut h = HashValue::new();
        h.set(b"a", b"12345", &l);
        assert_eq!(h.encoding_name(), "hashtable");
        // An update converts too when the limit was lowered meanwhile.
        let mut h = HashValue::new();
        h.set(b"a", b"1", &l);
        h.set(b"b", b"1", &l);
        h.set(b"a", b"2", &limits(1, 4));
        assert_eq!(h.encoding_name(), "hashtable");
        assert_eq!(h.get(b"a"), Some(&b"2"[..]));
        assert_eq!(h.get(b"b"), Some(&b"1"[..]));
    }

    #[test]
    fn table_scan_survives_growth_and_deletes() {
        let l = limits(0, 64);
        let mut h = HashValue::new();
        for i in 0..1000 {
            h.set(format!("f{i}").as_bytes(), b"v", &l);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            let mut got = Vec::new();
            cursor = h.scan(cursor, 10, |f, _| got.push(f.to_vec()));
            seen.extend(got);
            // Between calls: delete some fields (never the ones we check),
            // add others.
            round += 1;
            h.remove(format!("f{}", 999 - round).as_bytes());
            h.set(format!("new{round}").as_bytes(), b"v", &l);
            if cursor == 0 {
                break;
            }
        }
        for i in 0..(999 - round) {
            assert!(seen.contains(format!("f{i}").as_bytes()), "missed f{i}");
        }
    }

    /// Random writes against a model (a Vec of pairs in insertion order), in a listpack that
    /// never converts: order, lookups and positional access must agree.
    #[test]
    fn listpack_matches_model() {
        use rand::{Rng, SeedableRng};
        let l = limits(usize::MAX, usize::MAX);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..50 {
            let mut h = HashValue::new();
            let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for _ in 0..400 {
                let f = format!("f{}", rng.gen_range(0..60)).into_bytes();
                let len = if rng.gen_bool(0.1) {
                    rng.gen_range(100..300)
                } else {
                    rng.gen_range(0..12)
                };
                let v = vec![b'a' + (round % 26) as u8; len];
                if rng.gen_bool(0.35) {
                    let was = model.iter().position(|(mf, _)| *mf == f);
                    assert_eq!(h.remove(&f), was.is_some());
                    if let Some(p) = was {
                        model.remove(p);
                    }
                } else {
                    let was = model.iter().position(|(mf, _)| *mf == f);
                    assert_eq!(h.set(&f, &v, &l), was.is_none());
                    match was {
                        Some(p) => model[p].1 = v,
                        None => model.push((f, v)),
                    }
                }
                assert_eq!(h.encoding_name(), "listpack");
                assert_eq!(h.len(), model.len());
            }
            let got: Vec<(Vec<u8>, Vec<u8>)> =
                h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            assert_eq!(got, model);
            for (i, (f, v)) in model.iter().enumerate() {
                assert_eq!(h.get(f), Some(&v[..]));
                assert_eq!(h.get_index(i), Some((&f[..], &v[..])));
            }
            assert_eq!(h.get(b"nope"), None);
        }
    }

    #[test]
    fn value_stays_small() {
        assert!(std::mem::size_of::<HashValue>() <= 24);
    }
}
