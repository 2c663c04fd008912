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

use std::alloc::{alloc, alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::hash::BuildHasher;
use std::ptr::NonNull;
use std::sync::OnceLock;

use super::tree::{Iter as TreeIter, Tree};

/// Offset of the length header in a block.
const HDR: usize = 16;
/// A length byte of this value is followed by a u64 length.
const LONG_LEN: u8 = 255;

/// One member and its score, in a heap block owned by a [`Big`].
/// Transparent, so `Option<Elem>` is a nullable pointer whose `None` is
/// all-zero bytes (see [`empty_buckets`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
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
///
/// It resizes incrementally, as Redis's dict does: a resize allocates the
/// new bucket array (`target`), every insert goes there, and each write
/// moves [`REHASH_PER_WRITE`] non-empty buckets of the old array over until it is
/// empty. A one-step rehash of a 3 M-member sorted set stalled its thread for
/// 150-350 ms (every member re-hashed, each a cache miss); redis-server
/// stays under 11 ms on that load.
#[derive(Default)]
struct Dict {
    buckets: Vec<Option<Elem>>,
    /// The array being filled while a resize is under way (empty when
    /// none is); `buckets[..moved]` are already empty.
    target: Vec<Option<Elem>>,
    moved: usize,
    len: usize,
}

/// `size` empty buckets from a zeroed allocation. For a large array the
/// allocator returns fresh pages that the kernel zero-fills when each is
/// first touched, so a doubling does not stop to write every bucket: with
/// `vec![None; n]` the step to 4 M buckets (32 MB) stalled for 12-24 ms.
fn empty_buckets(size: usize) -> Vec<Option<Elem>> {
    if size == 0 {
        return Vec::new();
    }
    let Ok(layout) = Layout::array::<Option<Elem>>(size) else {
        panic!("a bucket array of {size} entries exceeds the address space")
    };
    // SAFETY: `Elem` is a transparent NonNull, so `Option<Elem>` has the
    // null pointer as `None` and all-zero bytes are `size` valid `None`s.
    // The block is allocated with the layout of `size` `Option<Elem>`s,
    // which is what `Vec::from_raw_parts` requires for capacity `size`.
    unsafe {
        let p = alloc_zeroed(layout);
        if p.is_null() {
            handle_alloc_error(layout)
        }
        Vec::from_raw_parts(p.cast::<Option<Elem>>(), size, size)
    }
}

/// Non-empty old buckets moved per insert or delete. A doubling starts when the
/// table holds one member per bucket and the next one when the new array
/// (twice as large) does, so one bucket per insert would just keep up; four
/// finishes in a quarter of that time.
const REHASH_PER_WRITE: usize = 4;
/// Arrays smaller than this are rehashed in one step: that costs
/// microseconds, and lookups then never walk two arrays.
const REHASH_AT_ONCE_BELOW: usize = 1 << 14;

impl Dict {
    fn is_empty_table(&self) -> bool {
        self.buckets.is_empty() && self.target.is_empty()
    }

    fn bucket_bytes(&self) -> usize {
        (self.buckets.capacity() + self.target.capacity()) * std::mem::size_of::<Option<Elem>>()
    }

    fn find(&self, member: &[u8]) -> Option<Elem> {
        self.find_hashed(hash(member), member)
    }

    fn find_hashed(&self, h: u64, member: &[u8]) -> Option<Elem> {
        let in_chain = |table: &[Option<Elem>]| {
            if table.is_empty() {
                return None;
            }
            let mut cur = table[h as usize & (table.len() - 1)];
            while let Some(e) = cur {
                if e.member() == member {
                    return Some(e);
                }
                cur = e.next();
            }
            None
        };
        in_chain(&self.buckets).or_else(|| in_chain(&self.target))
    }

    /// Adds an element whose member is not in the table.
    fn insert(&mut self, e: Elem) {
        self.insert_hashed(hash(e.member()), e);
    }

    /// [`Dict::insert`] with the member's hash already known.
    fn insert_hashed(&mut self, h: u64, e: Elem) {
        self.rehash_step(REHASH_PER_WRITE);
        let size = if self.target.is_empty() {
            self.buckets.len()
        } else {
            self.target.len()
        };
        if self.len >= size {
            self.resize((self.len + 1).next_power_of_two().max(4));
        }
        let table = if self.target.is_empty() {
            &mut self.buckets
        } else {
            &mut self.target
        };
        let b = h as usize & (table.len() - 1);
        e.set_next(table[b]);
        table[b] = Some(e);
        self.len += 1;
    }

    /// Unlinks the element with this member.
    fn remove(&mut self, member: &[u8]) -> Option<Elem> {
        self.rehash_step(REHASH_PER_WRITE);
        let h = hash(member);
        let found = Self::unlink(&mut self.buckets, h, member)
            .or_else(|| Self::unlink(&mut self.target, h, member));
        if found.is_some() {
            self.len -= 1;
        }
        found
    }

    fn unlink(table: &mut [Option<Elem>], h: u64, member: &[u8]) -> Option<Elem> {
        if table.is_empty() {
            return None;
        }
        let b = h as usize & (table.len() - 1);
        let mut prev: Option<Elem> = None;
        let mut cur = table[b];
        while let Some(e) = cur {
            if e.member() == member {
                match prev {
                    None => table[b] = e.next(),
                    Some(p) => p.set_next(e.next()),
                }
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
        if self.target.is_empty() && self.buckets.len() > 4 && self.len * 10 < self.buckets.len() {
            // Half full rather than full: inserts that follow the shrink do
            // not reach the growth point before it has finished moving.
            self.resize((self.len * 2).next_power_of_two().max(4));
        }
    }

    /// Starts moving every element to an array of `size` buckets (a power
    /// of two); small tables move at once.
    fn resize(&mut self, size: usize) {
        // A resize still under way (possible only after a burst of
        // deletions shrank it) completes first.
        self.rehash_step(usize::MAX);
        if self.len == 0 {
            self.buckets = empty_buckets(size);
            return;
        }
        self.target = empty_buckets(size);
        self.moved = 0;
        if self.buckets.len() < REHASH_AT_ONCE_BELOW {
            self.rehash_step(usize::MAX);
        }
    }

    /// Moves up to `budget` old buckets into the target array.
    fn rehash_step(&mut self, budget: usize) {
        if self.target.is_empty() {
            return;
        }
        let mask = self.target.len() - 1;
        // Moves `budget` non-empty buckets but looks at no more than ten
        // times as many in all (as Redis's dictRehash): an array left mostly
        // empty by deletions drains at a bounded cost per write.
        let mut empty_visits = budget.saturating_mul(10);
        let mut left = budget;
        while left > 0 && self.moved < self.buckets.len() {
            let b = self.moved;
            self.moved += 1;
            let mut cur = self.buckets[b].take();
            if cur.is_none() {
                empty_visits -= 1;
                if empty_visits == 0 {
                    break;
                }
                continue;
            }
            left -= 1;
            while let Some(e) = cur {
                cur = e.next();
                let t = hash(e.member()) as usize & mask;
                e.set_next(self.target[t]);
                self.target[t] = Some(e);
            }
        }
        if self.moved == self.buckets.len() {
            self.buckets = std::mem::take(&mut self.target);
            self.moved = 0;
        }
    }

    /// Visits the bucket(s) at `cursor` and returns the next cursor (0 when
    /// the scan is over), Redis's reverse-binary increment. While a resize
    /// is under way the cursor's bucket of the smaller array is visited
    /// with every bucket of the larger one that it expands to, so elements
    /// that moved between calls are still seen.
    fn scan(&self, cursor: u64, f: &mut impl FnMut(Elem)) -> u64 {
        let visit = |table: &[Option<Elem>], at: u64, f: &mut dyn FnMut(Elem)| {
            let mut cur = table[(at & (table.len() as u64 - 1)) as usize];
            while let Some(e) = cur {
                f(e);
                cur = e.next();
            }
        };
        let advance = |v: u64, mask: u64| {
            let v = (v | !mask).reverse_bits().wrapping_add(1);
            v.reverse_bits()
        };
        if self.target.is_empty() {
            if self.buckets.is_empty() {
                return 0;
            }
            visit(&self.buckets, cursor, f);
            return advance(cursor, self.buckets.len() as u64 - 1);
        }
        let (small, large) = if self.buckets.len() <= self.target.len() {
            (&self.buckets, &self.target)
        } else {
            (&self.target, &self.buckets)
        };
        let (m0, m1) = (small.len() as u64 - 1, large.len() as u64 - 1);
        let mut v = cursor;
        visit(small, v, f);
        loop {
            visit(large, v, f);
            v = advance(v, m1);
            if v & (m0 ^ m1) == 0 {
                break;
            }
        }
        v
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
        b.dict.buckets = empty_buckets(slots.len().next_power_of_two().max(4));
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
        self.elem_bytes + self.dict.bucket_bytes() + self.tree.heap_size()
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
        self.dict.is_empty_table()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// Growth past the one-step size (an incremental doubling) and a mass
    /// removal (an incremental shrink), with ZSCAN calls between writes:
    /// lookups find every member at every step, the indexes agree, and
    /// every member present for the whole scan is returned.
    #[test]
    fn resizes_incrementally_while_scanned() {
        let mut big = Big::new();
        let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let name = |i: u32| format!("m{i}").into_bytes();
        for i in 0..2000u32 {
            big.insert_new(&name(i), f64::from(i % 7));
            model.insert(name(i), f64::from(i % 7));
        }
        let stable: BTreeSet<Vec<u8>> = (0..2000u32).filter(|i| i % 5 != 0).map(name).collect();
        let mut seen = BTreeSet::new();
        let mut cursor = 0u64;
        let mut next = 2000u32;
        let mut saw_resizing = false;
        loop {
            cursor = big.scan(cursor, |m, _| {
                seen.insert(m.to_vec());
            });
            for _ in 0..300 {
                if next < 70_000 {
                    big.insert_new(&name(next), 1.5);
                    model.insert(name(next), 1.5);
                    next += 1;
                }
            }
            if next % 10_000 < 300 {
                // Removals of members outside `stable` while growing.
                for i in (0..2000u32).filter(|i| i % 5 == 0).take(20) {
                    if model.remove(&name(i)).is_some() {
                        assert!(big.remove(&name(i)));
                    }
                }
            }
            saw_resizing |= !big.dict.target.is_empty();
            if cursor == 0 {
                break;
            }
        }
        assert!(saw_resizing, "the scan ran while a resize was under way");
        assert!(stable.is_subset(&seen));
        big.check();
        for (m, s) in &model {
            assert_eq!(big.score(m), Some(*s));
        }
        // Shrink: remove nearly everything, then scan what is left.
        let doomed: Vec<Vec<u8>> = model.keys().skip(100).cloned().collect();
        for m in doomed {
            assert!(big.remove(&m));
            model.remove(&m);
        }
        big.check();
        let mut rest = BTreeSet::new();
        let mut cursor = 0u64;
        loop {
            cursor = big.scan(cursor, |m, _| {
                rest.insert(m.to_vec());
            });
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(rest, model.keys().cloned().collect::<BTreeSet<_>>());
        assert_eq!(big.len(), model.len());
    }
}
