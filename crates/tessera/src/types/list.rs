//! The list type: a deque of compact element blocks with positional access
//! in O(log n).
//!
//! Redis 7.0 keeps every list as a quicklist (a doubly linked list of
//! listpacks) and `OBJECT ENCODING` always says `quicklist`; so do we,
//! whatever the size. The layout here is different, for speed and size:
//!
//! * Elements live in [`Block`]s: one byte buffer per block holding the
//!   elements back to back, each preceded by its length as a LEB128 varint
//!   (one byte below 128 bytes). A block holds at most [`MAX_BLOCK_ITEMS`]
//!   elements and [`MAX_BLOCK_BYTES`] bytes (an element larger than that
//!   gets a block of its own). A 64-byte element costs 65 bytes plus its
//!   share of the block header: about 66 bytes, against 67 in a listpack.
//! * The live bytes of a block are `buf[head..]`: the front block grows
//!   towards lower addresses (LPUSH writes into the slack before `head`), the
//!   back block grows like a `Vec`; both grow geometrically, in steps of
//!   jemalloc size classes, so pushes and pops at either end are O(1)
//!   amortized and a full block wastes almost nothing.
//! * Every block records the *virtual position* of its first element. The
//!   positions only need to be consistent with each other: element `i` of
//!   the list is at virtual position `blocks[0].start + i`. A push or pop
//!   at the front moves only block 0's start, one at the back moves nothing,
//!   and an insertion or removal in the middle shifts the starts on the
//!   shorter side. Finding the block of an index is a binary search over
//!   the starts, then a walk of at most [`MAX_BLOCK_ITEMS`] elements inside
//!   one cache-friendly buffer — where a quicklist walks node by node from
//!   the nearer end.
//!
//! The struct stored in the keyspace is one pointer, so a list does not
//! make the `Value` enum (and every keyspace entry) any bigger.

use std::collections::VecDeque;

/// Byte budget of a block's live data (elements and their length headers).
pub const MAX_BLOCK_BYTES: usize = 4096;
/// Element budget of a block: bounds the in-block walk for tiny elements.
pub const MAX_BLOCK_ITEMS: u32 = 128;

/// A list value. Never empty while stored in the keyspace (commands delete
/// the key when the last element goes).
#[derive(Debug, Clone, Default)]
pub struct ListValue {
    inner: Box<Inner>,
}

#[derive(Debug, Clone, Default)]
struct Inner {
    len: usize,
    blocks: VecDeque<Block>,
}

#[derive(Debug, Clone)]
struct Block {
    /// Virtual position of the block's first element.
    start: i64,
    count: u32,
    /// Offset of the first live byte in `buf`; the bytes before it are
    /// slack for pushes at the front.
    head: u32,
    buf: Vec<u8>,
    /// Checkpoint spacing (meaningful while `ck_n > 0`).
    ck_step: u8,
    /// How many of `ck` are valid.
    ck_n: u8,
    /// `ck[i]`: offset from `head` of element `ck_step * (i + 1)`, so a
    /// positional lookup walks at most `ck_step` elements (plus what was
    /// appended since the checkpoints were built). Built lazily by the
    /// first positional lookup into the block, dropped when elements
    /// before the end move, cut back when the end is popped.
    ck: [u16; CHECKPOINTS],
}

/// Checkpoints per block (a block of up to 8 × step elements is covered).
const CHECKPOINTS: usize = 7;

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Head,
    Tail,
}

// ---- element encoding ---------------------------------------------------------------------

#[inline]
fn header_len(len: usize) -> usize {
    let mut n = 1;
    let mut v = len >> 7;
    while v != 0 {
        n += 1;
        v >>= 7;
    }
    n
}

#[inline]
fn write_header(out: &mut [u8], mut len: usize) -> usize {
    let mut i = 0;
    loop {
        let b = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            out[i] = b;
            return i + 1;
        }
        out[i] = b | 0x80;
        i += 1;
    }
}

/// Decodes the element at `buf[pos..]`: (start of its bytes, its length).
#[inline]
fn read_at(buf: &[u8], pos: usize) -> (usize, usize) {
    let b = buf[pos];
    if b < 0x80 {
        return (pos + 1, b as usize);
    }
    let mut len = (b & 0x7f) as usize;
    let mut shift = 7;
    let mut p = pos + 1;
    loop {
        let b = buf[p];
        p += 1;
        len |= ((b & 0x7f) as usize) << shift;
        if b < 0x80 {
            return (p, len);
        }
        shift += 7;
    }
}

/// Encoded size of an element.
#[inline]
fn encoded_len(v: &[u8]) -> usize {
    header_len(v.len()) + v.len()
}

/// The jemalloc size class `n` bytes are served from (four classes per
/// doubling above 128 bytes): reserving exactly that much wastes nothing.
fn size_class(n: usize) -> usize {
    if n <= 16 {
        return 16;
    }
    if n <= 128 {
        return (n + 15) & !15;
    }
    let lg = usize::BITS - 1 - (n - 1).leading_zeros();
    let spacing = 1usize << (lg - 2);
    (n + spacing - 1) & !(spacing - 1)
}

// ---- blocks -------------------------------------------------------------------------------

impl Block {
    fn with_one(start: i64, v: &[u8]) -> Block {
        Block::open_back(start, v, 0)
    }

    /// A new tail block holding `v`, with room for about `expect` bytes:
    /// when the list already has a full block, the next one will most
    /// likely fill up too, so it is allocated whole at once instead of
    /// growing through every size class.
    fn open_back(start: i64, v: &[u8], expect: usize) -> Block {
        let need = encoded_len(v);
        let mut buf = Vec::with_capacity(size_class(need.max(expect)));
        buf.resize(need, 0);
        let h = write_header(&mut buf, v.len());
        buf[h..].copy_from_slice(v);
        Block {
            start,
            count: 1,
            head: 0,
            buf,
            ck_step: 0,
            ck_n: 0,
            ck: [0; CHECKPOINTS],
        }
    }

    /// A new head block holding `v` at the end of its buffer, leaving the
    /// room before it (about `expect` bytes in all) for further pushes at
    /// the front.
    fn open_front(start: i64, v: &[u8], expect: usize) -> Block {
        let need = encoded_len(v);
        let cap = size_class(need.max(expect));
        let mut buf = vec![0u8; cap];
        let at = cap - need;
        let h = write_header(&mut buf[at..], v.len());
        buf[at + h..].copy_from_slice(v);
        Block {
            start,
            count: 1,
            head: at as u32,
            buf,
            ck_step: 0,
            ck_n: 0,
            ck: [0; CHECKPOINTS],
        }
    }

    #[inline]
    fn live(&self) -> &[u8] {
        &self.buf[self.head as usize..]
    }

    #[inline]
    fn live_len(&self) -> usize {
        self.buf.len() - self.head as usize
    }

    #[inline]
    fn fits(&self, extra: usize) -> bool {
        self.count < MAX_BLOCK_ITEMS && self.live_len() + extra <= MAX_BLOCK_BYTES
    }

    /// Byte offset (within `buf`) of element `j` of the block, from the
    /// nearest checkpoint at or before it.
    #[inline]
    fn offset_of(&self, j: u32) -> usize {
        let buf = &self.buf[..];
        let mut pos = self.head as usize;
        let mut left = j;
        if self.ck_n != 0 {
            let step = self.ck_step as u32;
            let c = (j / step).min(self.ck_n as u32);
            if c > 0 {
                pos += self.ck[c as usize - 1] as usize;
                left = j - c * step;
            }
        }
        for _ in 0..left {
            let (s, l) = read_at(buf, pos);
            pos = s + l;
        }
        pos
    }

    /// [`offset_of`](Self::offset_of), first (re)building the checkpoints
    /// when the walk would be long.
    #[inline]
    fn offset_of_mut(&mut self, j: u32) -> usize {
        let step = self.ck_step as u32;
        let stale = if self.ck_n == 0 {
            j >= 8
        } else {
            j >= step * (self.ck_n as u32 + 2)
        };
        if stale {
            self.build_checkpoints();
        }
        self.offset_of(j)
    }

    /// Drops the checkpoints past the last element (after removals at the
    /// end: new elements appended there later sit elsewhere).
    #[inline]
    fn cut_checkpoints(&mut self) {
        if self.ck_n != 0 {
            let valid = self.count.saturating_sub(1) / self.ck_step as u32;
            self.ck_n = self.ck_n.min(valid.min(CHECKPOINTS as u32) as u8);
        }
    }

    fn build_checkpoints(&mut self) {
        let step = self.count.div_ceil(CHECKPOINTS as u32 + 1).max(1);
        // Offsets from `head` fit in u16: a block of several elements stays
        // within MAX_BLOCK_BYTES.
        self.ck_n = 0;
        if step > u8::MAX as u32 || self.live_len() > u16::MAX as usize {
            return;
        }
        let head = self.head as usize;
        let mut pos = head;
        let mut c = 0;
        for i in 1..self.count {
            let (s, l) = read_at(&self.buf, pos);
            pos = s + l;
            if i % step == 0 {
                self.ck[c] = (pos - head) as u16;
                c += 1;
                if c == CHECKPOINTS {
                    break;
                }
            }
        }
        self.ck_step = step as u8;
        self.ck_n = c as u8;
    }

    #[inline]
    fn get(&self, j: u32) -> &[u8] {
        let (s, l) = read_at(&self.buf, self.offset_of(j));
        &self.buf[s..s + l]
    }

    /// Offsets of every element, for walking a block backwards.
    fn offsets(&self) -> smallvec::SmallVec<[u32; 128]> {
        let mut out = smallvec::SmallVec::new();
        let mut pos = self.head as usize;
        for _ in 0..self.count {
            out.push(pos as u32);
            let (s, l) = read_at(&self.buf, pos);
            pos = s + l;
        }
        out
    }

    fn push_back(&mut self, v: &[u8]) {
        let need = encoded_len(v);
        let old = self.buf.len();
        if self.buf.capacity() < old + need {
            let target = size_class(old + need);
            self.buf.reserve_exact(target - old);
        }
        self.buf.resize(old + need, 0);
        let h = write_header(&mut self.buf[old..], v.len());
        self.buf[old + h..].copy_from_slice(v);
        self.count += 1;
    }

    fn push_front(&mut self, v: &[u8]) {
        let need = encoded_len(v);
        if (self.head as usize) < need {
            // Regrow with all the new slack in front: the front block keeps
            // taking pushes there without moving its bytes each time.
            let live = self.live_len();
            let want = live + need;
            // Grow by a quarter, but not past a full block's size class
            // while the block is within its budget.
            let mut target = size_class(want + want / 4);
            if want <= MAX_BLOCK_BYTES {
                target = target.min(size_class(MAX_BLOCK_BYTES));
            }
            let mut nb = vec![0u8; target];
            nb[target - live..].copy_from_slice(self.live());
            self.head = (target - live) as u32;
            self.buf = nb;
        }
        let at = self.head as usize - need;
        let h = write_header(&mut self.buf[at..], v.len());
        self.buf[at + h..at + need].copy_from_slice(v);
        self.head = at as u32;
        self.count += 1;
        self.ck_n = 0;
    }

    /// Removes the first element, handing its bytes to `f`.
    fn pop_front<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> R {
        let (s, l) = read_at(&self.buf, self.head as usize);
        let r = f(&self.buf[s..s + l]);
        self.head = (s + l) as u32;
        self.count -= 1;
        self.ck_n = 0;
        r
    }

    /// Removes the last element, handing its bytes to `f`.
    fn pop_back<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> R {
        let pos = self.offset_of(self.count - 1);
        let (s, l) = read_at(&self.buf, pos);
        let r = f(&self.buf[s..s + l]);
        self.buf.truncate(pos);
        self.count -= 1;
        self.cut_checkpoints();
        r
    }

    /// Replaces bytes `from..to` of `buf` with `with`.
    fn splice(&mut self, from: usize, to: usize, with: &[u8]) {
        if to - from != with.len() {
            self.ck_n = 0;
        }
        if to - from == with.len() {
            self.buf[from..to].copy_from_slice(with);
            return;
        }
        let head = self.head as usize;
        let new_live = self.live_len() - (to - from) + with.len();
        let mut nb = Vec::with_capacity(size_class(new_live));
        nb.extend_from_slice(&self.buf[head..from]);
        nb.extend_from_slice(with);
        nb.extend_from_slice(&self.buf[to..]);
        self.buf = nb;
        self.head = 0;
    }

    /// Returns spare capacity when most of the buffer is unused.
    fn compact(&mut self) {
        let live = self.live_len();
        if self.buf.capacity() > size_class(live) + live / 4 + 64 {
            let mut nb = Vec::with_capacity(size_class(live));
            nb.extend_from_slice(self.live());
            self.buf = nb;
            self.head = 0;
        }
    }

    fn heap_size(&self) -> usize {
        self.buf.capacity()
    }
}

/// Makes room for one more block, growing the deque by a quarter rather
/// than doubling it: its slack is per-list memory that large lists pay.
#[inline]
fn reserve_block(blocks: &mut VecDeque<Block>) {
    if blocks.len() == blocks.capacity() {
        blocks.reserve_exact((blocks.len() / 4).max(4));
    }
}

/// Packs elements into blocks that respect the budgets.
struct Packer {
    start: i64,
    out: Vec<Block>,
}

impl Packer {
    fn new(start: i64) -> Packer {
        Packer {
            start,
            out: Vec::new(),
        }
    }

    fn push(&mut self, v: &[u8]) {
        match self.out.last_mut() {
            Some(b) if b.fits(encoded_len(v)) => b.push_back(v),
            _ => self.out.push(Block::with_one(self.start, v)),
        }
        self.start += 1;
    }

    fn finish(mut self) -> Vec<Block> {
        for b in &mut self.out {
            b.compact();
        }
        self.out
    }
}

// ---- the list -----------------------------------------------------------------------------

impl ListValue {
    pub fn new() -> ListValue {
        ListValue::default()
    }

    /// A list of `items`, in order.
    pub fn from_items<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> ListValue {
        let mut l = ListValue::new();
        for v in items {
            l.push(End::Tail, v);
        }
        l
    }

    /// What `OBJECT ENCODING` reports: redis-server 7.0 says `quicklist`
    /// for every list (the `listpack` encoding of small lists came in 7.2).
    pub fn encoding_name(&self) -> &'static str {
        "quicklist"
    }

    pub fn heap_size(&self) -> usize {
        let inner = &self.inner;
        std::mem::size_of::<Inner>()
            + inner.blocks.capacity() * std::mem::size_of::<Block>()
            + inner.blocks.iter().map(Block::heap_size).sum::<usize>()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.inner.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// Adds an element at one end.
    #[inline]
    pub fn push(&mut self, end: End, v: &[u8]) {
        let inner = &mut *self.inner;
        let extra = encoded_len(v);
        match end {
            End::Head => match inner.blocks.front_mut() {
                Some(b) if b.fits(extra) => {
                    b.push_front(v);
                    b.start -= 1;
                }
                Some(b) => {
                    let (start, expect) = (b.start - 1, b.live_len().min(MAX_BLOCK_BYTES));
                    reserve_block(&mut inner.blocks);
                    inner.blocks.push_front(Block::open_front(start, v, expect));
                }
                None => inner.blocks.push_front(Block::with_one(0, v)),
            },
            End::Tail => match inner.blocks.back_mut() {
                Some(b) if b.fits(extra) => b.push_back(v),
                Some(b) => {
                    let start = b.start + b.count as i64;
                    let expect = b.live_len().min(MAX_BLOCK_BYTES);
                    reserve_block(&mut inner.blocks);
                    inner.blocks.push_back(Block::open_back(start, v, expect));
                }
                None => inner.blocks.push_back(Block::with_one(0, v)),
            },
        }
        inner.len += 1;
    }

    /// Removes the element at one end, handing its bytes to `f` (so a reply
    /// can be written without copying the element first).
    #[inline]
    pub fn pop_with<R>(&mut self, end: End, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let inner = &mut *self.inner;
        let r = match end {
            End::Head => {
                let b = inner.blocks.front_mut()?;
                let r = b.pop_front(f);
                b.start += 1;
                if b.count == 0 {
                    inner.blocks.pop_front();
                }
                r
            }
            End::Tail => {
                let b = inner.blocks.back_mut()?;
                let r = b.pop_back(f);
                if b.count == 0 {
                    inner.blocks.pop_back();
                }
                r
            }
        };
        inner.len -= 1;
        if inner.len == 0 {
            inner.blocks = VecDeque::new();
        }
        Some(r)
    }

    /// Removes and returns the element at one end.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        self.pop_with(end, |v| v.to_vec())
    }

    /// Block index and position inside it of element `i` (< len).
    #[inline]
    fn locate(&self, i: usize) -> (usize, u32) {
        let blocks = &self.inner.blocks;
        let first = &blocks[0];
        if i < first.count as usize {
            return (0, i as u32);
        }
        let last_idx = blocks.len() - 1;
        let last = &blocks[last_idx];
        let v = first.start + i as i64;
        if v >= last.start {
            return (last_idx, (v - last.start) as u32);
        }
        let k = blocks.partition_point(|b| b.start <= v) - 1;
        (k, (v - blocks[k].start) as u32)
    }

    /// The element at index `i` (0-based from the head).
    #[inline]
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.inner.len {
            return None;
        }
        let (k, j) = self.locate(i);
        Some(self.inner.blocks[k].get(j))
    }

    /// [`get`](Self::get) for repeated positional reads (LINDEX): builds
    /// the block's checkpoints on the way when the walk would be long, so
    /// later lookups into the same block walk a handful of elements.
    #[inline]
    pub fn get_indexed(&mut self, i: usize) -> Option<&[u8]> {
        if i >= self.inner.len {
            return None;
        }
        let (k, j) = self.locate(i);
        let b = &mut self.inner.blocks[k];
        let pos = b.offset_of_mut(j);
        let (s, l) = read_at(&b.buf, pos);
        Some(&b.buf[s..s + l])
    }

    /// Normalizes a Redis index (negative counts from the tail).
    pub fn index(&self, i: i64) -> Option<usize> {
        let len = self.inner.len as i64;
        let i = if i < 0 { i.checked_add(len)? } else { i };
        (0..len).contains(&i).then_some(i as usize)
    }

    /// Replaces element `i`; false if out of range.
    pub fn set(&mut self, i: usize, v: &[u8]) -> bool {
        if i >= self.inner.len {
            return false;
        }
        let (k, j) = self.locate(i);
        let b = &mut self.inner.blocks[k];
        let pos = b.offset_of_mut(j);
        let (s, l) = read_at(&b.buf, pos);
        let mut enc = Vec::with_capacity(encoded_len(v));
        enc.resize(header_len(v.len()), 0);
        write_header(&mut enc, v.len());
        enc.extend_from_slice(v);
        b.splice(pos, s + l, &enc);
        if b.count > 1 && b.live_len() > MAX_BLOCK_BYTES {
            self.repack(k);
        }
        true
    }

    /// Inserts `v` so that it becomes element `i` (`i == len` appends).
    pub fn insert(&mut self, i: usize, v: &[u8]) {
        let len = self.inner.len;
        if i == 0 {
            return self.push(End::Head, v);
        }
        if i >= len {
            return self.push(End::Tail, v);
        }
        let (k, j) = self.locate(i);
        let mut enc = Vec::with_capacity(encoded_len(v));
        enc.resize(header_len(v.len()), 0);
        write_header(&mut enc, v.len());
        enc.extend_from_slice(v);
        let inner = &mut *self.inner;
        {
            let b = &mut inner.blocks[k];
            let pos = b.offset_of_mut(j);
            b.splice(pos, pos, &enc);
            b.count += 1;
        }
        // Elements from the insertion point on moved one place right; in
        // virtual positions, shift whichever side has fewer blocks.
        let n = inner.blocks.len();
        if k < n / 2 {
            for b in inner.blocks.range_mut(..k) {
                b.start -= 1;
            }
            inner.blocks[k].start -= 1;
        } else {
            for b in inner.blocks.range_mut(k + 1..) {
                b.start += 1;
            }
        }
        inner.len += 1;
        let b = &inner.blocks[k];
        if b.count > MAX_BLOCK_ITEMS || (b.count > 1 && b.live_len() > MAX_BLOCK_BYTES) {
            self.repack(k);
        }
    }

    /// Splits block `k` into blocks within the budgets.
    fn repack(&mut self, k: usize) {
        let inner = &mut *self.inner;
        let old = &inner.blocks[k];
        let mut p = Packer::new(old.start);
        let mut pos = old.head as usize;
        for _ in 0..old.count {
            let (s, l) = read_at(&old.buf, pos);
            p.push(&old.buf[s..s + l]);
            pos = s + l;
        }
        let new = p.finish();
        inner.blocks.remove(k);
        for (n, b) in new.into_iter().enumerate() {
            inner.blocks.insert(k + n, b);
        }
    }

    /// Removes `ltrim` elements from the head and `rtrim` from the tail.
    pub fn trim(&mut self, ltrim: usize, rtrim: usize) {
        let inner = &mut *self.inner;
        if ltrim + rtrim >= inner.len {
            inner.blocks = VecDeque::new();
            inner.len = 0;
            return;
        }
        let mut left = ltrim;
        while left > 0 {
            let b = &mut inner.blocks[0];
            if b.count as usize <= left {
                left -= b.count as usize;
                inner.blocks.pop_front();
            } else {
                let pos = b.offset_of(left as u32);
                b.head = pos as u32;
                b.count -= left as u32;
                b.ck_n = 0;
                b.start += left as i64;
                b.compact();
                left = 0;
            }
        }
        let mut right = rtrim;
        while right > 0 {
            let last = inner.blocks.len() - 1;
            let b = &mut inner.blocks[last];
            if b.count as usize <= right {
                right -= b.count as usize;
                inner.blocks.pop_back();
            } else {
                let keep = b.count - right as u32;
                let pos = b.offset_of(keep);
                b.buf.truncate(pos);
                b.count = keep;
                b.cut_checkpoints();
                b.compact();
                right = 0;
            }
        }
        inner.len -= ltrim + rtrim;
    }

    /// LREM: removes elements equal to `v`, at most `limit` of them (0 = all),
    /// scanning from the head or the tail. Returns how many went.
    pub fn remove_matching(&mut self, v: &[u8], limit: usize, from: End) -> usize {
        let inner = &mut *self.inner;
        let mut removed = 0usize;
        let nblocks = inner.blocks.len();
        for n in 0..nblocks {
            if limit != 0 && removed == limit {
                break;
            }
            let k = match from {
                End::Head => n,
                End::Tail => nblocks - 1 - n,
            };
            let b = &mut inner.blocks[k];
            let offs = b.offsets();
            // Which elements of this block go, in the scan direction.
            let mut drop = smallvec::SmallVec::<[bool; 128]>::from_elem(false, offs.len());
            let mut any = false;
            for t in 0..offs.len() {
                let j = match from {
                    End::Head => t,
                    End::Tail => offs.len() - 1 - t,
                };
                if limit != 0 && removed == limit {
                    break;
                }
                let (s, l) = read_at(&b.buf, offs[j] as usize);
                if &b.buf[s..s + l] == v {
                    drop[j] = true;
                    any = true;
                    removed += 1;
                }
            }
            if !any {
                continue;
            }
            let mut nb = Vec::with_capacity(b.live_len());
            let mut kept = 0u32;
            for (j, &o) in offs.iter().enumerate() {
                if drop[j] {
                    continue;
                }
                let (s, l) = read_at(&b.buf, o as usize);
                nb.extend_from_slice(&b.buf[o as usize..s + l]);
                kept += 1;
            }
            b.buf = nb;
            b.head = 0;
            b.count = kept;
            b.ck_n = 0;
            b.compact();
        }
        if removed > 0 {
            inner.len -= removed;
            self.renumber_and_merge();
        }
        removed
    }

    /// After removals in the middle: drops empty blocks, merges neighbours
    /// that fit in one block, and recomputes the virtual starts.
    fn renumber_and_merge(&mut self) {
        let inner = &mut *self.inner;
        let old = std::mem::take(&mut inner.blocks);
        let mut start = old.front().map_or(0, |b| b.start);
        let mut out: VecDeque<Block> = VecDeque::with_capacity(old.len());
        for mut b in old {
            if b.count == 0 {
                continue;
            }
            if let Some(prev) = out.back_mut() {
                if prev.count + b.count <= MAX_BLOCK_ITEMS
                    && prev.live_len() + b.live_len() <= MAX_BLOCK_BYTES
                {
                    let add = b.live();
                    let old_len = prev.buf.len();
                    let need = old_len + add.len();
                    if prev.buf.capacity() < need {
                        prev.buf.reserve_exact(size_class(need) - old_len);
                    }
                    prev.buf.extend_from_slice(add);
                    prev.count += b.count;
                    start += b.count as i64;
                    continue;
                }
            }
            b.start = start;
            start += b.count as i64;
            out.push_back(b);
        }
        if out.is_empty() {
            inner.len = 0;
        }
        inner.blocks = out;
    }

    /// Elements from index `from` (0-based) towards the tail.
    pub fn iter_from(&self, from: usize) -> Iter<'_> {
        if from >= self.inner.len {
            return Iter {
                list: self,
                block: self.inner.blocks.len(),
                pos: 0,
                left_in_block: 0,
            };
        }
        let (k, j) = self.locate(from);
        let b = &self.inner.blocks[k];
        Iter {
            list: self,
            block: k,
            pos: b.offset_of(j),
            left_in_block: b.count - j,
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }

    /// Elements from the tail towards the head.
    pub fn iter_rev(&self) -> RevIter<'_> {
        RevIter {
            list: self,
            block: self.inner.blocks.len(),
            offs: smallvec::SmallVec::new(),
        }
    }

    /// Elements from index `from` towards the head (`from` < len).
    pub fn iter_rev_from(&self, from: usize) -> RevIter<'_> {
        if from >= self.inner.len {
            return self.iter_rev();
        }
        let (k, j) = self.locate(from);
        let mut offs = self.inner.blocks[k].offsets();
        offs.truncate(j as usize + 1);
        RevIter {
            list: self,
            block: k,
            offs,
        }
    }
}

/// Head-to-tail iterator.
pub struct Iter<'a> {
    list: &'a ListValue,
    block: usize,
    pos: usize,
    left_in_block: u32,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let blocks = &self.list.inner.blocks;
        while self.left_in_block == 0 {
            self.block += 1;
            let b = blocks.get(self.block)?;
            self.pos = b.head as usize;
            self.left_in_block = b.count;
        }
        let b = &blocks[self.block];
        let (s, l) = read_at(&b.buf, self.pos);
        self.pos = s + l;
        self.left_in_block -= 1;
        Some(&b.buf[s..s + l])
    }
}

/// Tail-to-head iterator: decodes one block's offsets at a time.
pub struct RevIter<'a> {
    list: &'a ListValue,
    /// Block whose offsets are in `offs`.
    block: usize,
    offs: smallvec::SmallVec<[u32; 128]>,
}

impl<'a> Iterator for RevIter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let blocks = &self.list.inner.blocks;
        while self.offs.is_empty() {
            if self.block == 0 {
                return None;
            }
            self.block -= 1;
            self.offs = blocks[self.block].offsets();
        }
        let b = &blocks[self.block];
        let o = self.offs.pop()? as usize;
        let (s, l) = read_at(&b.buf, o);
        Some(&b.buf[s..s + l])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn check(l: &mut ListValue, model: &VecDeque<Vec<u8>>) {
        assert_eq!(l.len(), model.len());
        let got: Vec<&[u8]> = l.iter().collect();
        let want: Vec<&[u8]> = model.iter().map(|v| v.as_slice()).collect();
        assert_eq!(got, want);
        let mut rev: Vec<&[u8]> = l.iter_rev().collect();
        rev.reverse();
        assert_eq!(rev, want);
        for (i, v) in model.iter().enumerate() {
            assert_eq!(l.get(i), Some(v.as_slice()), "index {i}");
        }
        for (i, v) in model.iter().enumerate().rev() {
            assert_eq!(l.get_indexed(i), Some(v.as_slice()), "indexed {i}");
        }
        assert_eq!(l.get(model.len()), None);
        // Block invariants.
        let inner = &l.inner;
        let mut expect = inner.blocks.front().map_or(0, |b| b.start);
        let mut total = 0;
        for b in &inner.blocks {
            assert!(b.count > 0);
            assert_eq!(b.start, expect);
            assert!(b.count == 1 || b.live_len() <= MAX_BLOCK_BYTES);
            assert!(b.count <= MAX_BLOCK_ITEMS);
            expect += b.count as i64;
            total += b.count as usize;
        }
        assert_eq!(total, l.len());
    }

    fn value(rng: &mut StdRng) -> Vec<u8> {
        let len = match rng.gen_range(0..20) {
            2..=4 => 64,
            0 => rng.gen_range(100..300),
            1 if rng.gen_bool(0.1) => rng.gen_range(4000..20000),
            _ => rng.gen_range(0..10),
        };
        (0..len).map(|_| rng.gen_range(b'a'..=b'c')).collect()
    }

    #[test]
    fn matches_a_deque_under_random_operations() {
        for seed in 0..20u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut l = ListValue::new();
            let mut m: VecDeque<Vec<u8>> = VecDeque::new();
            for step in 0..3000 {
                match rng.gen_range(0..14) {
                    0..=2 => {
                        let v = value(&mut rng);
                        l.push(End::Head, &v);
                        m.push_front(v);
                    }
                    3..=5 => {
                        let v = value(&mut rng);
                        l.push(End::Tail, &v);
                        m.push_back(v);
                    }
                    6 => assert_eq!(l.pop(End::Head), m.pop_front()),
                    7 => assert_eq!(l.pop(End::Tail), m.pop_back()),
                    8 if !m.is_empty() => {
                        let i = rng.gen_range(0..m.len());
                        let v = value(&mut rng);
                        assert!(l.set(i, &v));
                        m[i] = v;
                    }
                    9 => {
                        let i = rng.gen_range(0..=m.len());
                        let v = value(&mut rng);
                        l.insert(i, &v);
                        m.insert(i, v);
                    }
                    10 if rng.gen_bool(0.1) => {
                        let a = rng.gen_range(0..=m.len() / 3 + 1);
                        let b = rng.gen_range(0..=m.len() / 3 + 1);
                        l.trim(a, b);
                        if a + b >= m.len() {
                            m.clear();
                        } else {
                            m.drain(..a);
                            m.truncate(m.len() - b);
                        }
                    }
                    12..=13 if !m.is_empty() => {
                        // Positional reads build checkpoints the next mutations must respect.
                        for _ in 0..3 {
                            let i = rng.gen_range(0..m.len());
                            assert_eq!(l.get_indexed(i), Some(m[i].as_slice()));
                        }
                    }
                    11 if rng.gen_bool(0.2) => {
                        let v = value(&mut rng);
                        let limit = rng.gen_range(0..3);
                        let from = if rng.gen_bool(0.5) {
                            End::Head
                        } else {
                            End::Tail
                        };
                        let got = l.remove_matching(&v, limit, from);
                        let mut removed = 0;
                        let idx: Vec<usize> = match from {
                            End::Head => (0..m.len()).collect(),
                            End::Tail => (0..m.len()).rev().collect(),
                        };
                        let mut drop = vec![false; m.len()];
                        for i in idx {
                            if limit != 0 && removed == limit {
                                break;
                            }
                            if m[i] == v {
                                drop[i] = true;
                                removed += 1;
                            }
                        }
                        let mut j = 0;
                        m.retain(|_| {
                            j += 1;
                            !drop[j - 1]
                        });
                        assert_eq!(got, removed);
                    }
                    _ => {}
                }
                if step % 97 == 0 {
                    check(&mut l, &m);
                    if !m.is_empty() {
                        let from = rng.gen_range(0..m.len());
                        let got: Vec<&[u8]> = l.iter_from(from).collect();
                        let want: Vec<&[u8]> = m.iter().skip(from).map(|v| v.as_slice()).collect();
                        assert_eq!(got, want);
                        let got: Vec<&[u8]> = l.iter_rev_from(from).collect();
                        let want: Vec<&[u8]> = m
                            .iter()
                            .take(from + 1)
                            .rev()
                            .map(|v| v.as_slice())
                            .collect();
                        assert_eq!(got, want);
                    }
                }
            }
            check(&mut l, &m);
        }
    }

    #[test]
    fn varint_headers_roundtrip() {
        for len in [
            0usize,
            1,
            127,
            128,
            300,
            16383,
            16384,
            1 << 21,
            (1 << 28) + 5,
        ] {
            let mut buf = [0u8; 10];
            let n = write_header(&mut buf, len);
            assert_eq!(n, header_len(len));
            assert_eq!(read_at(&buf, 0), (n, len));
        }
    }

    #[test]
    fn size_classes() {
        assert_eq!(size_class(1), 16);
        assert_eq!(size_class(100), 112);
        assert_eq!(size_class(129), 160);
        assert_eq!(size_class(4095), 4096);
        assert_eq!(size_class(4096), 4096);
        assert_eq!(size_class(4097), 5120);
    }

    #[test]
    fn sixty_four_byte_elements_are_compact() {
        let v = [b'x'; 64];
        let mut l = ListValue::new();
        for _ in 0..10_000 {
            l.push(End::Tail, &v);
        }
        let per = l.heap_size() as f64 / 10_000.0;
        assert!(per < 67.0, "{per} bytes per element");
        let mut l = ListValue::new();
        for _ in 0..10_000 {
            l.push(End::Head, &v);
        }
        let per = l.heap_size() as f64 / 10_000.0;
        assert!(per < 67.0, "{per} bytes per element (LPUSH)");
    }

    #[test]
    fn checkpoints_survive_pops_and_pushes_at_the_back() {
        let mut l = ListValue::new();
        let mut m: VecDeque<Vec<u8>> = VecDeque::new();
        for i in 0..60 {
            let v = format!("{i}").into_bytes();
            l.push(End::Tail, &v);
            m.push_back(v);
        }
        for (i, v) in m.iter().enumerate() {
            assert_eq!(l.get_indexed(i), Some(v.as_slice()));
        }
        for _ in 0..20 {
            assert_eq!(l.pop(End::Tail), m.pop_back());
        }
        for i in 0..15 {
            let v = vec![b'x'; i * 3];
            l.push(End::Tail, &v);
            m.push_back(v);
        }
        for (i, v) in m.iter().enumerate() {
            assert_eq!(l.get(i), Some(v.as_slice()), "{i}");
            assert_eq!(l.get_indexed(i), Some(v.as_slice()), "{i}");
        }
        l.trim(0, 30);
        m.truncate(m.len() - 30);
        for i in 0..10 {
            let v = vec![b'y'; i];
            l.push(End::Tail, &v);
            m.push_back(v);
        }
        check(&mut l, &m);
    }

    #[test]
    fn stays_one_pointer_wide() {
        assert_eq!(std::mem::size_of::<ListValue>(), 8);
    }
}
