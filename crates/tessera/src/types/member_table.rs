//! The hashtable encoding's storage for hashes and sets: members in a
//! dense, position-addressed array (O(1) random member for SRANDMEMBER /
//! HRANDFIELD, and the descending-position SCAN cursor the two types use)
//! plus a linear-probing index of `tag << 32 | position` slots.
//!
//! It grows without the pause a one-step rehash costs. An IndexMap holding
//! 3 M fields stalled its thread for 80–150 ms at each resize (the whole
//! index rebuilt and the entry vector copied in one go); redis-server's
//! incremental rehash stays under 11 ms on the same load. Here:
//!
//! * members live in chunks of at most [`CHUNK`] entries, so growth
//!   allocates a new chunk instead of copying every member;
//! * the index doubles incrementally: the new, empty index takes every
//!   insert at once, and each write moves a few slots of the old index into
//!   it ([`DRAIN_PER_WRITE`]) until the old one is empty and freed, as
//!   Redis's dict rehashes a bucket per operation. Slots are placed by the
//!   32-bit tag they carry, so draining reads and hashes no member.
//!
//! While both indexes exist a lookup probes the old one, then the new one.
//! Drained and deleted slots of the old index become [`GONE`] rather than
//! empty, so the probe runs that pass through them stay intact; nothing is
//! ever inserted into the old index.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;

use crate::util::probe;

/// Iterator over a table's members in position order.
pub type Iter<'a, T> = std::iter::Flatten<std::slice::Iter<'a, Vec<T>>>;

/// What a table stores: anything that knows its member's bytes.
pub trait Keyed {
    fn key(&self) -> &[u8];
}

/// An index slot that holds nothing. Zero, so a new index is a zeroed
/// allocation: the allocator hands over fresh pages that the kernel
/// zero-fills as they are first touched, spread over the inserts that
/// follow, instead of one pass writing every slot at the doubling.
const EMPTY: u64 = 0;
/// An old-index slot whose member has moved to the new index or was
/// deleted while the old index drains: lookups probe past it.
const GONE: u64 = u64::MAX;
/// Positions stay at or below this: a slot stores position + 1 (so no
/// live slot is [`EMPTY`]) and never reaches [`GONE`].
const MAX_POSITION: u32 = u32::MAX - 2;

const CHUNK_BITS: u32 = 14;
/// Members per chunk. Every chunk but the last is full, so a position is
/// a chunk number and an offset; a chunk grows by a quarter at a time,
/// which keeps the spare room of a small table small.
pub const CHUNK: usize = 1 << CHUNK_BITS;

/// An index fuller than this grows.
const MAX_LOAD: (usize, usize) = (3, 4);
/// Live old-index slots moved per insert or delete. Growth starts at 3/4 load of
/// the old index, and the doubled index reaches that load after another
/// 3/4·old-size inserts, so draining must move at least 4/3 slot per
/// insert; 8 leaves a wide margin and finishes in a quarter of that time.
const DRAIN_PER_WRITE: usize = 8;
/// Below this many slots the old index is drained at once: the pause is
/// microseconds and lookups then never probe two indexes.
const DRAIN_AT_ONCE_BELOW: usize = 1 << 14;

/// Indexes of at most this many slots are never shrunk (a few KB).
const SHRINK_ABOVE: usize = 64;

/// One hash seed per process, as Redis seeds its dict hash once.
static HASHER: std::sync::LazyLock<RandomState> = std::sync::LazyLock::new(RandomState::default);

#[inline]
fn tag_of(key: &[u8]) -> u32 {
    (HASHER.hash_one(key) >> 32) as u32
}

#[inline]
fn make_slot(tag: u32, position: usize) -> u64 {
    let position = match u32::try_from(position) {
        Ok(p) if p <= MAX_POSITION => p,
        // Four billion members would need hundreds of gigabytes first.
        _ => panic!("a hash or set holds at most {MAX_POSITION} members"),
    };
    (u64::from(tag) << 32) | u64::from(position + 1)
}

#[inline]
fn slot_tag(slot: u64) -> u32 {
    (slot >> 32) as u32
}

#[inline]
fn slot_position(slot: u64) -> usize {
    (slot as u32 as usize).wrapping_sub(1)
}

#[derive(Clone)]
pub struct MemberTable<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
    /// The index every insert goes to; its length is zero or a power of two.
    slots: Vec<u64>,
    /// The index being drained into `slots` (empty when none), and how many
    /// of its slots have been drained.
    old: Vec<u64>,
    drained: usize,
}

impl<T: std::fmt::Debug> std::fmt::Debug for MemberTable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.chunks.iter().flatten())
            .finish()
    }
}

impl<T> Default for MemberTable<T> {
    fn default() -> Self {
        MemberTable {
            chunks: Vec::new(),
            len: 0,
            slots: Vec::new(),
            old: Vec::new(),
            drained: 0,
        }
    }
}

/// Where a key's slot is.
#[derive(Clone, Copy)]
enum Found {
    Old(usize),
    New(usize),
}

impl<T: Keyed> MemberTable<T> {
    /// A table ready for `n` members without growing.
    pub fn with_capacity(n: usize) -> Self {
        let mut t = MemberTable::default();
        if n > 0 {
            t.chunks.push(Vec::with_capacity(n.min(CHUNK)));
            let (num, den) = MAX_LOAD;
            t.slots = vec![EMPTY; (n * den / num + 1).next_power_of_two().max(8)];
        }
        t
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the chunks and indexes (not what the members own).
    pub fn structure_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum::<usize>() * std::mem::size_of::<T>()
            + self.chunks.capacity() * std::mem::size_of::<Vec<T>>()
            + (self.slots.capacity() + self.old.capacity()) * std::mem::size_of::<u64>()
    }

    #[inline]
    pub fn get_index(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        self.chunks
            .get(i >> CHUNK_BITS)
            .and_then(|c| c.get(i & (CHUNK - 1)))
    }

    #[inline]
    pub fn get_index_mut(&mut self, i: usize) -> Option<&mut T> {
        if i >= self.len {
            return None;
        }
        self.chunks
            .get_mut(i >> CHUNK_BITS)
            .and_then(|c| c.get_mut(i & (CHUNK - 1)))
    }

    #[inline]
    fn key_at(&self, i: usize) -> &[u8] {
        self.get_index(i).map_or(&[], Keyed::key)
    }

    /// Every member, in position order.
    pub fn iter(&self) -> Iter<'_, T> {
        self.chunks.iter().flatten()
    }

    /// Probes one index for `key`: `Ok(slot)` where it is, or `Err(slot)`,
    /// the empty slot that ends its probe run.
    #[inline]
    fn probe(&self, index: &[u64], key: &[u8], tag: u32) -> Result<usize, usize> {
        if index.is_empty() {
            return Err(0);
        }
        let mask = index.len() - 1;
        let mut i = tag as usize & mask;
        loop {
            let slot = index[i];
            if slot == EMPTY {
                return Err(i);
            }
            if slot != GONE && slot_tag(slot) == tag && self.key_at(slot_position(slot)) == key {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    fn find(&self, key: &[u8], tag: u32) -> Option<Found> {
        if !self.old.is_empty() {
            if let Ok(s) = self.probe(&self.old, key, tag) {
                return Some(Found::Old(s));
            }
        }
        self.probe(&self.slots, key, tag).ok().map(Found::New)
    }

    fn slot_value(&self, at: Found) -> u64 {
        match at {
            Found::Old(s) => self.old[s],
            Found::New(s) => self.slots[s],
        }
    }

    /// The position of `key`'s member.
    #[inline]
    pub fn position_of(&self, key: &[u8]) -> Option<usize> {
        self.find(key, tag_of(key))
            .map(|at| slot_position(self.slot_value(at)))
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&T> {
        self.position_of(key).and_then(|i| self.get_index(i))
    }

    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut T> {
        let i = self.position_of(key)?;
        self.get_index_mut(i)
    }

    #[inline]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.position_of(key).is_some()
    }

    /// The member with `key`, or, when there is none, a new one from
    /// `make` (then `None`). One hash and one lookup either way.
    pub fn find_or_push(&mut self, key: &[u8], make: impl FnOnce() -> T) -> Option<&mut T> {
        self.drain(DRAIN_PER_WRITE);
        let tag = tag_of(key);
        if let Some(at) = self.find(key, tag) {
            let i = slot_position(self.slot_value(at));
            return self.get_index_mut(i);
        }
        self.push_new(tag, make());
        None
    }

    /// Adds `item`, or replaces the member with its key and returns that.
    pub fn insert(&mut self, item: T) -> Option<T> {
        self.drain(DRAIN_PER_WRITE);
        let tag = tag_of(item.key());
        if let Some(at) = self.find(item.key(), tag) {
            let i = slot_position(self.slot_value(at));
            return self
                .get_index_mut(i)
                .map(|old| std::mem::replace(old, item));
        }
        self.push_new(tag, item);
        None
    }

    /// Adds a member whose key (with hash tag `tag`) is not in the table.
    fn push_new(&mut self, tag: u32, item: T) {
        let (num, den) = MAX_LOAD;
        if (self.len + 1) * den > self.slots.len() * num {
            self.grow();
        }
        self.place(make_slot(tag, self.len));
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => {
                if c.len() == c.capacity() {
                    c.reserve_exact((c.len() / 4 + 4).min(CHUNK - c.len()));
                }
                c.push(item);
            }
            _ => {
                let mut c = Vec::with_capacity(if self.chunks.is_empty() { 4 } else { CHUNK / 4 });
                c.push(item);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }

    /// Removes `key`'s member, moving the last member into its place.
    pub fn swap_remove(&mut self, key: &[u8]) -> Option<T> {
        self.drain(DRAIN_PER_WRITE);
        let at = self.find(key, tag_of(key))?;
        let i = slot_position(self.slot_value(at));
        self.remove_at(i, at)
    }

    /// Removes the member at position `i`, moving the last member into its
    /// place.
    pub fn swap_remove_index(&mut self, i: usize) -> Option<T> {
        if i >= self.len {
            return None;
        }
        self.drain(DRAIN_PER_WRITE);
        let at = self.find_position(tag_of(self.key_at(i)), i);
        debug_assert!(at.is_some(), "every member has a slot");
        self.remove_at(i, at?)
    }

    /// Removes the member at position `i`, whose slot is `at`.
    fn remove_at(&mut self, i: usize, at: Found) -> Option<T> {
        match at {
            Found::Old(s) => self.old[s] = GONE,
            Found::New(s) => self.vacate(s),
        }
        let last = self.len - 1;
        if i != last {
            let last_tag = tag_of(self.key_at(last));
            let moved = make_slot(last_tag, i);
            match self.find_position(last_tag, last) {
                Some(Found::Old(s)) => self.old[s] = moved,
                Some(Found::New(s)) => self.slots[s] = moved,
                None => debug_assert!(false, "every member has a slot"),
            }
        }
        let mut tail = self.chunks.pop()?;
        let moved = tail.pop()?;
        let removed = if i == last {
            moved
        } else {
            let at = self.chunks.get_mut(i >> CHUNK_BITS).unwrap_or(&mut tail);
            std::mem::replace(&mut at[i & (CHUNK - 1)], moved)
        };
        if !tail.is_empty() || self.chunks.is_empty() {
            self.chunks.push(tail);
        }
        self.len -= 1;
        if self.len == 0 {
            *self = MemberTable::default();
        } else {
            self.maybe_shrink();
        }
        Some(removed)
    }

    /// The slot that holds position `pos` of a member with `tag`.
    fn find_position(&self, tag: u32, pos: usize) -> Option<Found> {
        let wanted = make_slot(tag, pos);
        let scan = |index: &[u64]| -> Option<usize> {
            if index.is_empty() {
                return None;
            }
            let mask = index.len() - 1;
            let mut i = tag as usize & mask;
            loop {
                match index[i] {
                    EMPTY => return None,
                    s if s == wanted => return Some(i),
                    _ => i = (i + 1) & mask,
                }
            }
        };
        if !self.old.is_empty() {
            if let Some(s) = scan(&self.old) {
                return Some(Found::Old(s));
            }
        }
        scan(&self.slots).map(Found::New)
    }

    /// Frees slot `hole` of the new index without tombstones (see
    /// [`probe::vacate`]).
    fn vacate(&mut self, hole: usize) {
        probe::vacate(&mut self.slots, hole, EMPTY);
    }

    /// Places a live slot in the new index by its tag.
    #[inline]
    fn place(&mut self, slot: u64) {
        let mask = self.slots.len() - 1;
        let mut i = slot_tag(slot) as usize & mask;
        while self.slots[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    /// Starts a doubling.
    fn grow(&mut self) {
        self.start_resize((self.slots.len() * 2).max(8));
    }

    /// Makes the current index the one drained into a new one of
    /// `new_len` slots. A previous resize still draining (only possible
    /// when the per-write budget was outrun) finishes first; a small index
    /// is drained at once.
    fn start_resize(&mut self, new_len: usize) {
        self.drain(usize::MAX);
        self.old = std::mem::replace(&mut self.slots, vec![EMPTY; new_len]);
        self.drained = 0;
        if self.old.len() < DRAIN_AT_ONCE_BELOW {
            self.drain(usize::MAX);
        }
    }

    /// Moves up to `budget` live slots of the old index into the new one,
    /// looking at no more than ten times as many slots in all (as Redis's
    /// dictRehash bounds empty visits): an index that deletions left
    /// mostly empty drains at a bounded cost per write.
    fn drain(&mut self, budget: usize) {
        if self.old.is_empty() {
            return;
        }
        let mut empty_visits = budget.saturating_mul(10);
        let mut left = budget;
        while left > 0 && self.drained < self.old.len() {
            let at = self.drained;
            self.drained += 1;
            let slot = self.old[at];
            if slot == EMPTY || slot == GONE {
                empty_visits -= 1;
                if empty_visits == 0 {
                    break;
                }
                continue;
            }
            left -= 1;
            self.place(slot);
            self.old[at] = GONE;
        }
        if self.drained == self.old.len() {
            self.old = Vec::new();
            self.drained = 0;
        }
    }

    /// Halves the index (or more) once deletions leave it under a tenth
    /// full, as Redis shrinks hash and set tables, draining the same way a
    /// doubling does. The new index is half full, so inserts that follow
    /// do not reach the growth point before the old one has drained.
    fn maybe_shrink(&mut self) {
        if self.old.is_empty()
            && self.slots.len() > SHRINK_ABOVE
            && self.len * 10 < self.slots.len()
        {
            self.start_resize((self.len * 2).next_power_of_two().max(8));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    #[derive(Debug, Clone, PartialEq)]
    struct Item(Vec<u8>, u32);

    /// Adds an item whose key is new.
    fn push(t: &mut MemberTable<Item>, item: Item) {
        let key = item.0.clone();
        assert!(t.find_or_push(&key, || item).is_none());
    }

    impl Keyed for Item {
        fn key(&self) -> &[u8] {
            &self.0
        }
    }

    fn check(t: &MemberTable<Item>, model: &HashMap<Vec<u8>, u32>) {
        assert_eq!(t.len(), model.len());
        for (k, v) in model {
            assert_eq!(t.get(k).map(|i| i.1), Some(*v), "key {:?}", k);
        }
        for i in 0..t.len() {
            let item = t.get_index(i).expect("in range");
            assert_eq!(t.position_of(&item.0), Some(i));
        }
        assert_eq!(t.iter().count(), t.len());
    }

    /// Random inserts, updates and removals (by key and by position)
    /// against a HashMap, over key spaces that keep the table small (probe
    /// runs wrapping the index's end) and ones that drive it through
    /// several doublings with the old index still draining.
    #[test]
    fn behaves_like_a_map() {
        for (seed, keys, steps) in [
            (1u64, 10u32, 20_000u32),
            (2, 200, 50_000),
            (3, 200_000, 400_000),
        ] {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut t: MemberTable<Item> = MemberTable::default();
            let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
            for step in 0..steps {
                let key = format!("m:{}", rng.gen_range(0..keys)).into_bytes();
                match rng.gen_range(0..10) {
                    0..=5 => match t.get_mut(&key) {
                        Some(item) => {
                            item.1 = step;
                            model.insert(key, step);
                        }
                        None => {
                            push(&mut t, Item(key.clone(), step));
                            model.insert(key, step);
                        }
                    },
                    6..=7 => {
                        let gone = t.swap_remove(&key).map(|i| i.1);
                        assert_eq!(gone, model.remove(&key));
                    }
                    _ => {
                        if !t.is_empty() {
                            let i = rng.gen_range(0..t.len());
                            let item = t.swap_remove_index(i).expect("in range");
                            assert_eq!(model.remove(&item.0), Some(item.1));
                        }
                    }
                }
                if step % 9973 == 0 {
                    check(&t, &model);
                }
            }
            check(&t, &model);
            let copy = t.clone();
            check(&copy, &model);
        }
    }

    /// A table grown past the drain-at-once size spends writes with both
    /// indexes live, and every member stays findable throughout.
    #[test]
    fn lookups_during_an_incremental_doubling() {
        let mut t: MemberTable<Item> = MemberTable::default();
        let mut saw_draining = false;
        for n in 0..100_000u32 {
            push(&mut t, Item(n.to_string().into_bytes(), n));
            if !t.old.is_empty() {
                saw_draining = true;
                for probe in (0..=n).step_by(97) {
                    assert_eq!(
                        t.get(probe.to_string().as_bytes()).map(|i| i.1),
                        Some(probe)
                    );
                }
            }
        }
        assert!(saw_draining);
        while t.len() > 10 {
            let i = t.len() / 2;
            t.swap_remove_index(i);
        }
        for item in t.iter() {
            assert!(t.contains(&item.0));
        }
    }

    /// Deleting nearly everything shrinks the index (incrementally, with
    /// lookups and inserts right throughout), and growing again works.
    #[test]
    fn shrinks_after_mass_deletion() {
        let mut t: MemberTable<Item> = MemberTable::default();
        for n in 0..200_000u32 {
            push(&mut t, Item(n.to_string().into_bytes(), n));
        }
        let peak = t.slots.len();
        let mut saw_draining = false;
        for n in 0..199_900u32 {
            assert!(t.swap_remove(n.to_string().as_bytes()).is_some());
            saw_draining |= !t.old.is_empty();
            if n % 4999 == 0 {
                for k in (n + 1..200_000).step_by(1009) {
                    assert_eq!(t.get(k.to_string().as_bytes()).map(|i| i.1), Some(k));
                }
            }
        }
        assert!(saw_draining);
        assert_eq!(t.len(), 100);
        for k in 199_900..200_000u32 {
            assert_eq!(t.get(k.to_string().as_bytes()).map(|i| i.1), Some(k));
        }
        // A few more writes finish any drain still under way.
        for n in 0..10_000u32 {
            push(&mut t, Item(format!("again:{n}").into_bytes(), n));
        }
        assert!(t.old.is_empty());
        assert!(
            t.slots.len() < peak / 8,
            "{} slots of {peak}",
            t.slots.len()
        );
        assert_eq!(t.len(), 10_100);
        for item in t.iter() {
            assert_eq!(t.get(&item.0), Some(item));
        }
    }

    #[test]
    fn chunks_stay_full_but_the_last() {
        let mut t: MemberTable<Item> = MemberTable::with_capacity(3);
        for n in 0..(CHUNK as u32 * 2 + 5) {
            push(&mut t, Item(n.to_string().into_bytes(), n));
        }
        assert_eq!(t.chunks.len(), 3);
        assert!(t.chunks[..2].iter().all(|c| c.len() == CHUNK));
        for n in 0..(CHUNK + 3) {
            t.swap_remove_index(n % t.len());
        }
        assert!(t.chunks[..t.chunks.len() - 1]
            .iter()
            .all(|c| c.len() == CHUNK));
        assert_eq!(t.iter().count(), t.len());
    }
}
