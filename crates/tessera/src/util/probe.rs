//! Linear probing over `u64` slots that carry a 32-bit hash tag in their
//! high half, shared by the keyspace index and the hash/set member tables.

/// Empties slot `hole` of a power-of-two index, moving later slots of the
/// same probe run back so that every entry stays reachable from its home
/// slot (the tag's low bits) without tombstones. `empty` is the index's
/// empty-slot value.
pub fn vacate(slots: &mut [u64], mut hole: usize, empty: u64) {
    let mask = slots.len() - 1;
    let mut i = (hole + 1) & mask;
    loop {
        let slot = slots[i];
        if slot == empty {
            break;
        }
        let home = (slot >> 32) as usize & mask;
        // The slot may move back to the hole when the hole lies between its
        // home and where it is now.
        if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(hole) & mask) {
            slots[hole] = slot;
            hole = i;
        }
        i = (i + 1) & mask;
    }
    slots[hole] = empty;
}
