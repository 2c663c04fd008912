//! The large sorted-set encoding (what OBJECT ENCODING calls `skiplist`):
//! each member lives in one heap block with its score, indexed twice —
//! by a chained hash table on the member (O(1) ZSCORE, a stable SCAN
//! cursor) and by an order-statistic B+tree on (score, member) (rank and
//! ranges in O(log n)).
//!
//! A block is `[score f64][next-in-bucket pointer][length][member bytes]`,
//! so a member costs one allocation, eight bytes in the hash table and
//! about twenty in the tree, whose slots carry a copy of the score: range
//! and rank searches then compare scores held in the tree's own arrays and
//! touch a block only on a tie (following a pointer per comparison made
//! them cache-miss bound). That is a bit over half what Redis's dict +
//! skiplist use per member.
//! All the raw-pointer handling of the blocks is confined to [`Elem`] and
//! [`Dict`] here; [`Big`] owns every block it indexes and frees them.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::hash::BuildHasher;
use std::ptr::NonNull;
use std::sync::OnceLock;

use super::tree::{Iter as TreeIter, Tree};

/// Offset of the length header in a block.
const HDR: usize = 16;
/// A length byte of this value is followed by a u64 length.
const LONG_LEN: u8 = 255;

/// One member and its score, in a heap block owned by a [`Big`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Elem(NonNull<u8>);

impl Elem {
    fn layout(member_len: usize) -> Layout {
        let hdr = if member_len < LONG_LEN as usize { 1 } else { 9 };
        // The member already exists as a slice, so its length plus a few
        // bytes cannot reach isize::MAX, the only way this can fail.
        Layout::from_size_align(HDR + hdr + member_len, 8).expect("block size fits isize")
    }

    fn alloc(member: &[u8], score: f64) -> Elem {
        let layout = Elem::layout(member.len());
        // SAFETY: the layout has a non-zero size; the block is written in
        // full (score, next, length, bytes) before it is used.
        unsafe {
            let p = alloc(layout);
            let Some(p) = NonNull::new(p) else {
                handle_alloc_error(layout)
            };
            let base = p.as_ptr();
            (base as *mut f64).write(score);
            (base.add(8) as *mut *mut u8).write(std::ptr::null_mut());
            let mut at = base.add(HDR);
            if member.len() < LONG_LEN as usize {
                at.write(member.len() as u8);
                at = at.add(1);
            } else {
                at.write(LONG_LEN);
                (at.add(1) as *mut u64).write_unaligned(member.len() as u64);
                at = at.add(9);
            }
            std::ptr::copy_nonoverlapping(member.as_ptr(), at, member.len());
            Elem(p)
        }
    }

    /// Frees the block.
    ///
    /// # Safety
    /// The element must be live and referenced from nowhere afterwards.
    unsafe fn free(self) {
        let layout = Elem::layout(self.member().len());
        dealloc(self.0.as_ptr(), layout);
    }

    #[inline]
    pub fn score(self) -> f64 {
        // SAFETY: live blocks start with an aligned f64.
        unsafe { (self.0.as_ptr() as *const f64).read() }
    }

    /// Changes the score; the caller re-positions the element in the tree.
    #[inline]
    fn set_score(self, score: f64) {
        // SAFETY: as for `score`; only the owning Big (through &mut self)
        // calls this.
        unsafe { (self.0.as_ptr() as *mut f64).write(score) }
    }

    #[inline]
    fn next(self) -> Option<Elem> {
        // SAFETY: bytes 8..16 of a live block hold the chain pointer.
        let p = unsafe { (self.0.as_ptr().add(8) as *const *mut u8).read() };
        NonNull::new(p).map(Elem)
    }

    #[inline]
    fn set_next(self, next: Option<Elem>) {
        let p = next.map_or(std::ptr::null_mut(), |e| e.0.as_ptr());
        // SAFETY: as for `next`.
        unsafe { (self.0.as_ptr().add(8) as *mut *mut u8).write(p) }
    }

    /// The member's bytes. The lifetime is chosen by the caller: [`Big`]
    /// only hands out slices bounded by a borrow of itself.
    #[inline]
    pub fn member<'a>(self) -> &'a [u8] {
        // SAFETY: a live block holds a length header and that many bytes.
        unsafe {
            let at = self.0.as_ptr().add(HDR);
            let b = at.read();
            if b < LONG_LEN {
                std::slice::from_raw_parts(at.add(1), b as usize)
            } else {
                let n = (at.add(1) as *const u64).read_unaligned() as usize;
                std::slice::from_raw_parts(at.add(9), n)
            }
        }
    }

    fn alloc_size(self) -> usize {
        Elem::layout(self.member().len()).size()
    }
}

/// What the tree holds per member: the block and a copy of its score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Slot {
    score: f64,
    elem: Elem,
}

impl Slot {
    /// Whether this member sorts before (score, member).
    #[inline]
    fn before(self, score: f64, member: &[u8]) -> bool {
        self.score < score || (self.score == score && self.elem.member() < member)
    }
}

/// Per-process hash seed, so that members cannot be chosen to collide.
fn hasher() -> &'static foldhash::fast::FixedState {
    static SEED: OnceLock<foldhash::fast::FixedState> = OnceLock::new();
    SEED.get_or_init(|| foldhash::fast::FixedState::with_seed(rand::random()))
}

#[inline]
fn hash(member: &[u8]) -> u64 {
    hasher().hash_one(member)
}

/// A chained hash table of elements keyed by member. Its size is a power
/// of two, so ZSCAN can use Redis's reverse-binary cursor, which returns
/// every element present for the whole scan even across resizes.
#[derive(Default)]
struct Dict {
    buckets: Vec<Option<Elem>>,
    len: usize,
}

impl Dict {
    fn mask(&self) -> usize {
        self.buckets.len().wrapping_sub(1)
    }

    fn find(&self, member: &[u8]) -> Option<Elem> {
        self.find_hashed(hash(member), member)
    }

    fn find_hashed(&self, h: u64, member: &[u8]) -> Option<Elem> {
        if self.buckets.is_empty() {
            return None;
        }
        let mut cur = self.buckets[h as usize & self.mask()];
        while let Some(e) = cur {
            if e.member() == member {
                return Some(e);
            }
            cur = e.next();
        }
        None
    }

    /// Adds an element whose member is not in the table.
    fn insert(&mut self, e: Elem) {
        self.insert_hashed(hash(e.member()), e);
    }

    /// [`Dict::insert`] with the member's hash already known.
    fn insert_hashed(&mut self, h: u64, e: Elem) {
        if self.len >= self.buckets.len() {
            self.resize((self.len + 1).next_power_of_two().max(4));
        }
        let b = h as usize & self.mask();
        e.set_next(self.buckets[b]);
        self.buckets[b] = Some(e);
        self.len += 1;
    }

    /// Unlinks the element with this member.
    fn remove(&mut self, member: &[u8]) -> Option<Elem> {
        if self.buckets.is_empty() {
            return None;
        }
        let b = hash(member) as usize & self.mask();
        let mut prev: Option<Elem> = None;
        let mut cur = self.buckets[b];
        while let Some(e) = cur {
            if e.member() == member {
                match prev {
                    None => self.buckets[b] = e.next(),
                    Some(p) => p.set_next(e.next()),
                }
                self.len -= 1;
                return Some(e);
            }
            prev = cur;
            cur = e.next();
        }
        None
    }

    /// Shrinks the table when it is mostly empty (as Redis does after
    /// deletions, below 10% fill).
    fn maybe_shrink(&mut self) {
        if self.buckets.len() > 4 && self.len * 10 < self.buckets.len() {
            self.resize(self.len.next_power_of_two().max(4));
        }
    }

    fn resize(&mut self, size: usize) {
        let old = std::mem::replace(&mut self.buckets, vec![None; size]);
        let mask = size - 1;
        for head in old {
            let mut cur = head;
            while let Some(e) = cur {
                cur = e.next();
                let b = hash(e.member()) as usize & mask;
                e.set_next(self.buckets[b]);
                self.buckets[b] = Some(e);
            }
        }
    }

    /// Visits the bucket at `cursor` and returns the next cursor (0 when
    /// the scan is over), Redis's reverse-binary increment.
    fn scan(&self, cursor: u64, f: &mut impl FnMut(Elem)) -> u64 {
        if self.buckets.is_empty() {
            return 0;
        }
        let mask = self.mask() as u64;
        let mut cur = self.buckets[(cursor & mask) as usize];
        while let Some(e) = cur {
            f(e);
            cur = e.next();
        }
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }
}

/// The large encoding: every member once in a block, indexed by a hash
/// table and an order-statistic tree sorted by (score, member).
pub struct Big {
    dict: Dict,
    tree: Tree<Slot>,
    /// Bytes of all element blocks, for MEMORY USAGE.
    elem_bytes: usize,
}

// SAFETY: a Big exclusively owns its blocks (no other handle to them
// outlives a borrow of the Big), so moving it to or sharing it with another
// thread is as safe as for a Vec<Box<[u8]>>.
unsafe impl Send for Big {}
// SAFETY: &Big only reads the blocks.
unsafe impl Sync for Big {}

impl Default for Big {
    fn default() -> Self {
        Big::new()
    }
}

impl Big {
    pub fn new() -> Big {
        Big {
            dict: Dict::default(),
            tree: Tree::new(),
            elem_bytes: 0,
        }
    }

    /// Builds from (member, score) pairs sorted by (score, member), with
    /// distinct members.
    pub fn from_sorted<'a>(items: impl IntoIterator<Item = (&'a [u8], f64)>) -> Big {
        let mut b = Big::new();
        let slots: Vec<Slot> = items
            .into_iter()
            .map(|(m, score)| Slot {
                score,
                elem: Elem::alloc(m, score),
            })
            .collect();
        b.dict.resize(slots.len().next_power_of_two().max(4));
        for s in &slots {
            b.elem_bytes += s.elem.alloc_size();
            b.dict.insert(s.elem);
        }
        b.tree = Tree::from_sorted(slots);
        b
    }

    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    pub fn heap_size(&self) -> usize {
        self.elem_bytes
            + self.dict.buckets.capacity() * std::mem::size_of::<Option<Elem>>()
            + self.tree.heap_size()
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.dict.find(member).map(Elem::score)
    }

    /// Rank (0-based, ascending) of an element.
    fn rank_of(&self, e: Elem) -> usize {
        let (s, m) = (e.score(), e.member());
        self.tree.partition_point(|x| x.before(s, m))
    }

    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        self.dict.find(member).map(|e| self.rank_of(e))
    }

    /// Adds a member that is not present.
    pub fn insert_new(&mut self, member: &[u8], score: f64) {
        self.insert_new_hashed(hash(member), member, score);
    }

    fn insert_new_hashed(&mut self, h: u64, member: &[u8], score: f64) {
        let e = Elem::alloc(member, score);
        let r = self.tree.partition_point(|x| x.before(score, member));
        self.tree.insert_at(r, Slot { score, elem: e });
        self.dict.insert_hashed(h, e);
        self.elem_bytes += e.alloc_size();
    }

    /// Looks `member` up and lets `decide` choose its new score from the
    /// current one (None: absent); None from `decide` changes nothing. One
    /// hash lookup for ZADD's whole read-modify-write.
    #[inline]
    pub fn upsert(&mut self, member: &[u8], decide: impl FnOnce(Option<f64>) -> Option<f64>) {
        let h = hash(member);
        match self.dict.find_hashed(h, member) {
            Some(e) => {
                let old = e.score();
                if let Some(s) = decide(Some(old)) {
                    if s != old {
                        self.move_to(e, s);
                    }
                }
            }
            None => {
                if let Some(s) = decide(None) {
                    self.insert_new_hashed(h, member, s);
                }
            }
        }
    }

    /// Gives a present element a new score, keeping the tree ordered.
    fn move_to(&mut self, e: Elem, score: f64) {
        let r = self.rank_of(e);
        let m = e.member();
        // Stays in place when the neighbours still bracket it (what most
        // small score updates do).
        let after_prev = r == 0 || self.tree.get(r - 1).is_some_and(|p| p.before(score, m));
        let before_next = self
            .tree
            .get(r + 1)
            .is_none_or(|n| score < n.score || (score == n.score && m < n.elem.member()));
        e.set_score(score);
        let slot = Slot { score, elem: e };
        if after_prev && before_next {
            self.tree.replace_at(r, slot);
            return;
        }
        self.tree.remove_at(r);
        let nr = self.tree.partition_point(|x| x.before(score, m));
        self.tree.insert_at(nr, slot);
    }

    /// Removes a member; returns whether it was present.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        let Some(e) = self.dict.remove(member) else {
            return false;
        };
        let r = self.rank_of(e);
        self.tree.remove_at(r);
        self.release(e);
        self.dict.maybe_shrink();
        true
    }

    fn release(&mut self, e: Elem) {
        self.elem_bytes -= e.alloc_size();
        // SAFETY: `e` was just unlinked from both indexes.
        unsafe { e.free() }
    }

    /// The element at `rank`.
    pub fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        self.tree.get(rank).map(|s| (s.elem.member(), s.score))
    }

    /// Number of leading elements (ascending) for which `pred` holds;
    /// `pred` must be monotone over the order.
    pub fn partition_point(&self, mut pred: impl FnMut(&[u8], f64) -> bool) -> usize {
        self.tree
            .partition_point(|s| pred(s.elem.member(), s.score))
    }

    /// [`Big::partition_point`] for a predicate on the score alone, which
    /// never reads the blocks.
    pub fn partition_point_by_score(&self, mut pred: impl FnMut(f64) -> bool) -> usize {
        self.tree.partition_point(|s| pred(s.score))
    }

    /// Removes ranks `lo..hi`; returns how many went.
    pub fn remove_ranks(&mut self, lo: usize, hi: usize) -> usize {
        let mut gone = Vec::new();
        self.tree.remove_range(lo, hi, &mut |s| gone.push(s.elem));
        for &e in &gone {
            self.dict.remove(e.member());
            self.release(e);
        }
        self.dict.maybe_shrink();
        gone.len()
    }

    /// Elements from `rank` on (ascending), or from `rank` down (`rev`).
    pub fn iter_from(&self, rank: usize, rev: bool) -> BigIter<'_> {
        BigIter(self.tree.iter_from(rank, rev))
    }

    /// One ZSCAN step: the elements of the bucket at `cursor`, and the next
    /// cursor.
    pub fn scan<'a>(&'a self, cursor: u64, mut f: impl FnMut(&'a [u8], f64)) -> u64 {
        self.dict.scan(cursor, &mut |e| f(e.member(), e.score()))
    }

    /// Whether the hash table has buckets (a scan of an empty table ends at
    /// once).
    pub fn scan_done(&self) -> bool {
        self.dict.buckets.is_empty()
    }
}

#[cfg(test)]
impl Big {
    /// Checks the tree's structure and that its cached scores and the hash
    /// table agree with the blocks.
    pub fn check(&self) {
        self.tree.check();
        let mut n = 0;
        self.tree.for_each(|s| {
            assert_eq!(s.score.to_bits(), s.elem.score().to_bits());
            assert_eq!(self.dict.find(s.elem.member()), Some(s.elem));
            n += 1;
        });
        assert_eq!(n, self.dict.len);
    }
}

impl Drop for Big {
    fn drop(&mut self) {
        let mut all = Vec::with_capacity(self.tree.len());
        self.tree.for_each(|s| all.push(s.elem));
        self.tree = Tree::new();
        self.dict = Dict::default();
        for e in all {
            // SAFETY: the indexes holding the elements are gone.
            unsafe { e.free() }
        }
    }
}

impl Clone for Big {
    fn clone(&self) -> Big {
        let mut items: Vec<(&[u8], f64)> = Vec::with_capacity(self.len());
        self.tree
            .for_each(|s| items.push((s.elem.member(), s.score)));
        Big::from_sorted(items)
    }
}

impl std::fmt::Debug for Big {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Big(len={})", self.len())
    }
}

/// Iterator over (member, score) in tree order.
pub struct BigIter<'a>(TreeIter<'a, Slot>);

impl<'a> Iterator for BigIter<'a> {
    type Item = (&'a [u8], f64);

    #[inline]
    fn next(&mut self) -> Option<(&'a [u8], f64)> {
        self.0.next().map(|s| (s.elem.member(), s.score))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
