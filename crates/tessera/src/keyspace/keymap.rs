//! The key → entry map of one table: entries in a dense vector (so a
//! uniformly random key is one index away, for eviction sampling and
//! RANDOMKEY) and a hash index of positions into it.
//!
//! This is what `IndexMap` does, laid out for a keyspace lookup, which pays
//! for every cache line it touches: a GET over a million keys finds the
//! index, the entry and the value all cold. Each index slot is one `u64`
//! holding 32 bits of the key's hash (the tag) next to the entry's
//! position, probed linearly from the slot the tag names. A lookup reads
//! one run of adjacent slots (almost always one cache line) and then only
//! the entry whose tag matches; a table with separate control bytes and
//! slots (hashbrown's layout) costs one more dependent miss. Entries do not
//! store their hash: the index grows from the tags alone, and a moved
//! entry's key is hashed again, so the vector stays 8 bytes an entry
//! smaller.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;

use super::table::{Entry, Key};
use crate::util::probe;

/// What [`KeyMap::insert_new`] did.
pub enum InsertNew {
    Inserted,
    /// The key is at this position; the entry was not inserted.
    Present(usize, Entry),
}

/// A free index slot. No occupied slot equals it: positions stay below
/// `u32::MAX` (see [`position`]).
const EMPTY: u64 = u64::MAX;

/// The index grows when more than this share of its slots is occupied
/// (numerator, denominator): linear probing stays short up to about 3/4.
const MAX_LOAD: (usize, usize) = (3, 4);

#[derive(Default)]
#[repr(C)]
pub struct KeyMap {
    /// `tag << 32 | position`, or [`EMPTY`]; the length is zero or a power
    /// of two.
    slots: Vec<u64>,
    entries: Vec<(Key, Entry)>,
}

/// One hash seed for every table, chosen at random when the process
/// starts (as Redis seeds its dict hash once): a key's hash then depends on
/// nothing in the table, so it is computed while the table's header is
/// still being fetched.
static KEY_HASHER: std::sync::LazyLock<RandomState> =
    std::sync::LazyLock::new(RandomState::default);

/// The high half of the key's hash: its low bits pick the home slot and
/// all 32 are compared before a key is.
#[inline]
fn key_tag(key: &[u8]) -> u32 {
    (KEY_HASHER.hash_one(key) >> 32) as u32
}

#[inline]
fn slot_tag(slot: u64) -> u32 {
    (slot >> 32) as u32
}

#[inline]
fn slot_position(slot: u64) -> usize {
    slot as u32 as usize
}

#[inline]
fn make_slot(tag: u32, position: u32) -> u64 {
    (u64::from(tag) << 32) | u64::from(position)
}

impl std::fmt::Debug for KeyMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A position that fits an index slot. A table would need four billion
/// keys (hundreds of gigabytes) to overflow it.
#[inline]
fn position(len: usize) -> u32 {
    match u32::try_from(len) {
        Ok(p) if p != u32::MAX => p,
        _ => panic!("a keyspace table holds fewer than {} keys", u32::MAX),
    }
}

impl KeyMap {
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries the vector can hold before it reallocates.
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Bytes of the vector and the index (excluding the keys' and values'
    /// own allocations).
    pub fn structure_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(Key, Entry)>()
            + self.slots.capacity() * std::mem::size_of::<u64>()
    }

    /// Grows the entry vector by exactly `additional` slots.
    pub fn reserve_exact(&mut self, additional: usize) {
        self.entries.reserve_exact(additional);
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// Probes for `key`: `Ok(slot)` where it is, or `Err(slot)`, the free
    /// slot that ends its probe run (`Err(0)` on an empty index).
    #[inline]
    fn probe(&self, key: &[u8], tag: u32) -> Result<usize, usize> {
        if self.slots.is_empty() {
            return Err(0);
        }
        let mask = self.mask();
        let mut i = tag as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot == EMPTY {
                return Err(i);
            }
            if slot_tag(slot) == tag && self.entries[slot_position(slot)].0[..] == *key {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// The slot that holds position `pos` of a key with `tag`.
    fn slot_of_position(&self, tag: u32, pos: usize) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let wanted = make_slot(tag, position(pos));
        let mask = self.mask();
        let mut i = tag as usize & mask;
        loop {
            match self.slots[i] {
                EMPTY => return None,
                s if s == wanted => return Some(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Frees slot `hole` without tombstones (see [`probe::vacate`]).
    fn vacate(&mut self, hole: usize) {
        probe::vacate(&mut self.slots, hole, EMPTY);
    }

    /// Doubles the index (or creates it), placing every slot again by its
    /// tag: no key is read or hashed.
    fn grow(&mut self) {
        let new_len = (self.slots.len() * 2).max(8);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; new_len]);
        let mask = new_len - 1;
        for slot in old.into_iter().filter(|&s| s != EMPTY) {
            let mut i = slot_tag(slot) as usize & mask;
            while self.slots[i] != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = slot;
        }
    }

    /// Starts fetching the index slot where a probe for `key` begins, so a
    /// lookup made a little later finds it in cache.
    #[inline]
    pub fn prefetch(&self, key: &[u8]) {
        if let Some(slot) = self.slots.get(key_tag(key) as usize & self.mask()) {
            crate::util::prefetch_read(slot);
        }
    }

    #[inline]
    pub fn get_index_of(&self, key: &[u8]) -> Option<usize> {
        self.probe(key, key_tag(key))
            .ok()
            .map(|slot| slot_position(self.slots[slot]))
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        let i = self.get_index_of(key)?;
        Some(&self.entries[i].1)
    }

    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let i = self.get_index_of(key)?;
        Some(&mut self.entries[i].1)
    }

    #[inline]
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get_index_of(key).is_some()
    }

    #[inline]
    pub fn get_index(&self, i: usize) -> Option<(&Key, &Entry)> {
        self.entries.get(i).map(|(k, e)| (k, e))
    }

    /// The entry at a position from [`KeyMap::get_index_of`] or
    /// [`KeyMap::insert_new`].
    #[inline]
    pub fn entry_at(&self, i: usize) -> &Entry {
        &self.entries[i].1
    }

    #[inline]
    pub fn entry_at_mut(&mut self, i: usize) -> &mut Entry {
        &mut self.entries[i].1
    }

    /// Inserts `entry` under a copy of `key` unless the key is present,
    /// with one hash and one probe; when it is, the entry comes back with
    /// the existing one's position.
    #[inline]
    pub fn insert_new(&mut self, key: &[u8], entry: Entry) -> InsertNew {
        let tag = key_tag(key);
        let mut free = match self.probe(key, tag) {
            Ok(slot) => return InsertNew::Present(slot_position(self.slots[slot]), entry),
            Err(free) => free,
        };
        let (num, den) = MAX_LOAD;
        if (self.entries.len() + 1) * den > self.slots.len() * num {
            self.grow();
            free = match self.probe(key, tag) {
                Err(free) => free,
                Ok(_) => unreachable!("the key was absent before the index grew"),
            };
        }
        self.slots[free] = make_slot(tag, position(self.entries.len()));
        self.entries.push((Key::from_slice(key), entry));
        InsertNew::Inserted
    }

    /// Removes the entry at `i`, moving the last entry into its place.
    pub fn swap_remove_index(&mut self, i: usize) -> Option<(Key, Entry)> {
        let removed_tag = key_tag(&self.entries.get(i)?.0);
        let removed_slot = self.slot_of_position(removed_tag, i);
        debug_assert!(removed_slot.is_some(), "every entry has a slot");
        if let Some(slot) = removed_slot {
            self.vacate(slot);
        }
        let last = self.entries.len() - 1;
        if i != last {
            let last_tag = key_tag(&self.entries[last].0);
            let moved_slot = self.slot_of_position(last_tag, last);
            debug_assert!(moved_slot.is_some(), "every entry has a slot");
            if let Some(slot) = moved_slot {
                self.slots[slot] = make_slot(last_tag, position(i));
            }
        }
        Some(self.entries.swap_remove(i))
    }

    /// Removes `key`, moving the last entry into its place.
    pub fn swap_remove(&mut self, key: &[u8]) -> Option<(Key, Entry)> {
        let i = self.get_index_of(key)?;
        self.swap_remove_index(i)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> {
        self.entries.iter().map(|(k, e)| (k, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Touch;
    use crate::types::Value;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    fn entry(n: u32) -> Entry {
        let mut e = Entry::new(
            Value::Str(crate::types::StrValue::from_bytes(b"v")),
            Touch::None,
        );
        e.access = n;
        e
    }

    /// Random inserts, replacements and removals against a std HashMap:
    /// every key stays findable at the position the vector holds it. Key
    /// spaces from a dozen keys (an index of 8-32 slots, where probe runs
    /// wrap around its end all the time) to thousands.
    #[test]
    fn behaves_like_a_map() {
        for (seed, keys) in [(7, 3000), (8, 12), (9, 40), (10, 300)] {
            behaves_like_a_map_over(seed, keys);
        }
    }

    fn behaves_like_a_map_over(seed: u64, keys: u32) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut map = KeyMap::default();
        let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
        for step in 0..200_000u32 {
            let key = format!("key:{}", rng.gen_range(0..keys)).into_bytes();
            match rng.gen_range(0..5) {
                0..=2 => match map.insert_new(&key, entry(step)) {
                    InsertNew::Present(i, e) => {
                        assert_eq!(map.entry_at(i).access, model[&key]);
                        // Half the time, replace it (an overwrite).
                        if step % 2 == 0 {
                            *map.entry_at_mut(i) = e;
                            model.insert(key, step);
                        }
                    }
                    InsertNew::Inserted => assert!(model.insert(key, step).is_none()),
                },
                3 => {
                    let got = map.swap_remove(&key).map(|(_, e)| e.access);
                    assert_eq!(got, model.remove(&key));
                }
                _ => {
                    if !map.is_empty() {
                        let i = rng.gen_range(0..map.len());
                        let (k, _) = map.swap_remove_index(i).expect("in range");
                        assert!(model.remove(&k[..]).is_some());
                    }
                }
            }
            if step % 10_000 == 0 || (keys < 100 && step % 97 == 0) {
                assert_eq!(map.len(), model.len());
                for (k, v) in &model {
                    let i = map.get_index_of(k).expect("present");
                    assert_eq!(
                        map.get_index(i).map(|(k2, e)| (&k2[..], e.access)),
                        Some((&k[..], *v))
                    );
                }
            }
        }
        assert_eq!(map.iter().count(), model.len());
    }
}
