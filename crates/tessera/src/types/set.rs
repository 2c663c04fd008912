//! Set values and their two encodings, as redis-server 7.0 has them
//! (`OBJECT ENCODING` reports the same name; 7.0 has no listpack sets —
//! that came with 7.2 — so `set-max-listpack-*` play no part here):
//!
//! * `intset`: a sorted array of integers in one buffer, each stored in the
//!   narrowest width (2, 4 or 8 bytes) that fits every member, widened when
//!   a member needs it, as Redis's intset does. Membership is a binary
//!   search; members iterate in ascending order, as in Redis.
//! * `hashtable`: a [`MemberTable`] (insertion-ordered positions until a
//!   removal swaps the last member in, an index that doubles without a
//!   pause): O(1) add, remove, membership and uniform random pick (SPOP,
//!   SRANDMEMBER). Members of up to 16 bytes live inline in the entry.
//!
//! A set is created as an intset when its first member is an integer
//! (Redis's `string2ll` form), and becomes a hashtable for good when a
//! non-integer is added or an insertion leaves more than
//! `set-max-intset-entries` members.
//!
//! ## SSCAN
//!
//! An intset is returned whole by one call (cursor 0), as Redis does. The
//! hashtable uses the same downward cursor over the dense entry vector as
//! hashes (see [`super::hash`]): additions land above the cursor, growth
//! never moves entries and a removal only moves the last entry down, so a
//! member present for the whole iteration is returned at least once.

use smallvec::SmallVec;

use super::member_table::{Keyed, MemberTable};
use super::Limits;
use crate::util::numbers::parse_i64;

/// A member as the hashtable stores it: up to 16 bytes inline.
pub type MemberBuf = SmallVec<[u8; 16]>;

/// A member borrowed from a set: intset members are integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl Member<'_> {
    /// Runs `f` on the member's bytes (an integer formatted on the stack).
    #[inline]
    pub fn with_bytes<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Member::Int(n) => f(itoa::Buffer::new().format(n).as_bytes()),
            Member::Str(b) => f(b),
        }
    }

    pub fn to_vec(self) -> Vec<u8> {
        self.with_bytes(|b| b.to_vec())
    }

    pub fn to_owned(self) -> OwnedMember {
        match self {
            Member::Int(n) => OwnedMember::Int(n),
            Member::Str(b) => OwnedMember::Str(MemberBuf::from_slice(b)),
        }
    }
}

/// A member copied out of a set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedMember {
    Int(i64),
    Str(MemberBuf),
}

impl OwnedMember {
    #[inline]
    pub fn as_member(&self) -> Member<'_> {
        match self {
            OwnedMember::Int(n) => Member::Int(*n),
            OwnedMember::Str(b) => Member::Str(b),
        }
    }
}

#[derive(Debug, Clone)]
pub struct SetValue {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    Ints(IntSet),
    Table(Box<Table>),
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::new_intset()
    }
}

impl SetValue {
    /// The empty set a command that builds a result from scratch starts
    /// with (Redis's SINTERSTORE/SUNIONSTORE/SDIFFSTORE start from an
    /// intset and let additions convert it).
    pub fn new_intset() -> SetValue {
        SetValue {
            repr: Repr::Ints(IntSet::default()),
        }
    }

    /// The empty set a key is created as before `first` is added to it
    /// (Redis's `setTypeCreate`): an intset if `first` is an integer.
    pub fn new_for(first: &[u8]) -> SetValue {
        if parse_i64(first).is_some() {
            SetValue::new_intset()
        } else {
            SetValue {
                repr: Repr::Table(Box::new(Table::with_capacity(1))),
            }
        }
    }

    pub fn encoding_name(&self) -> &'static str {
        match &self.repr {
            Repr::Ints(_) => "intset",
            Repr::Table(_) => "hashtable",
        }
    }

    pub fn is_compact(&self) -> bool {
        matches!(self.repr, Repr::Ints(_))
    }

    /// Approximate heap bytes owned by the set, in O(1).
    pub fn heap_size(&self) -> usize {
        match &self.repr {
            Repr::Ints(s) => s.buf.capacity(),
            Repr::Table(t) => t.heap_size(),
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Ints(s) => s.len(),
            Repr::Table(t) => t.set.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            Repr::Ints(s) => parse_i64(member).is_some_and(|v| s.search(v).is_ok()),
            Repr::Table(t) => t.set.contains(member),
        }
    }

    /// Membership of a member taken from another set (no parsing when both
    /// sides are intsets).
    #[inline]
    pub fn contains_member(&self, m: Member) -> bool {
        match (&self.repr, m) {
            (Repr::Ints(s), Member::Int(v)) => s.search(v).is_ok(),
            (_, m) => m.with_bytes(|b| self.contains(b)),
        }
    }

    /// Adds `member`; true if it was not there. Converts as Redis's
    /// `setTypeAdd` does: to a hashtable before adding a non-integer to an
    /// intset, and after an insertion that leaves more than
    /// `set-max-intset-entries` members.
    #[inline]
    pub fn add(&mut self, member: &[u8], limits: &Limits) -> bool {
        if let Repr::Table(t) = &mut self.repr {
            return t.insert(member);
        }
        match parse_i64(member) {
            Some(v) => self.add_int(v, limits),
            None => self.convert().insert(member),
        }
    }

    /// [`add`](Self::add) for a member taken from another set.
    pub fn add_member(&mut self, m: Member, limits: &Limits) -> bool {
        match (&self.repr, m) {
            (Repr::Ints(_), Member::Int(v)) => self.add_int(v, limits),
            (_, m) => m.with_bytes(|b| self.add(b, limits)),
        }
    }

    fn add_int(&mut self, v: i64, limits: &Limits) -> bool {
        match &mut self.repr {
            Repr::Ints(s) => {
                if !s.insert(v) {
                    return false;
                }
                if s.len() > limits.set_max_intset_entries {
                    self.convert();
                }
                true
            }
            Repr::Table(t) => t.insert(itoa::Buffer::new().format(v).as_bytes()),
        }
    }

    /// Removes `member`; true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Ints(s) => match parse_i64(member) {
                Some(v) => s.remove(v),
                None => false,
            },
            Repr::Table(t) => t.remove(member),
        }
    }

    /// [`remove`](Self::remove) for a member taken from another set.
    pub fn remove_member(&mut self, m: Member) -> bool {
        match (&mut self.repr, m) {
            (Repr::Ints(s), Member::Int(v)) => s.remove(v),
            (_, m) => m.with_bytes(|b| self.remove(b)),
        }
    }

    /// Every member, in the encoding's order (ascending for an intset).
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Ints(s) => Iter::Ints { set: s, next: 0 },
            Repr::Table(t) => Iter::Table(t.set.iter()),
        }
    }

    /// The member at position `i` of [`iter`](Self::iter), in O(1).
    #[inline]
    pub fn get_index(&self, i: usize) -> Option<Member<'_>> {
        match &self.repr {
            Repr::Ints(s) => (i < s.len()).then(|| Member::Int(s.get(i))),
            Repr::Table(t) => t.set.get_index(i).map(|m| Member::Str(m)),
        }
    }

    /// Removes the members at the given positions (distinct, each below
    /// `len()`), calling `f` on each before it goes. O(n) for an intset
    /// (one pass), O(k) for a hashtable.
    pub fn remove_indices(&mut self, indices: &mut [usize], mut f: impl FnMut(Member)) {
        match &mut self.repr {
            Repr::Ints(s) => {
                indices.sort_unstable();
                for &i in indices.iter() {
                    if i < s.len() {
                        f(Member::Int(s.get(i)));
                    }
                }
                s.remove_sorted_positions(indices);
            }
            Repr::Table(t) => {
                // Highest first: a swap_remove moves the last entry into the
                // hole, and every position still to remove is lower than
                // the hole, so none of them moves.
                indices.sort_unstable_by(|a, b| b.cmp(a));
                for &i in indices.iter() {
                    if let Some(m) = t.set.swap_remove_index(i) {
                        t.payload = t.payload.saturating_sub(member_heap(&m));
                        f(Member::Str(&m));
                    }
                }
            }
        }
    }

    /// One SSCAN step: calls `emit` for the members visited and returns the
    /// next cursor (0 when done). See the module documentation.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut emit: impl FnMut(Member<'a>)) -> u64 {
        match &self.repr {
            Repr::Ints(s) => {
                for i in 0..s.len() {
                    emit(Member::Int(s.get(i)));
                }
                0
            }
            Repr::Table(t) => {
                let len = t.set.len();
                let mut pos = match usize::try_from(cursor) {
                    Ok(0) | Err(_) => len,
                    Ok(c) => c.min(len),
                };
                let mut visited = 0;
                while pos > 0 && visited < count {
                    pos -= 1;
                    visited += 1;
                    if let Some(m) = t.set.get_index(pos) {
                        emit(Member::Str(m));
                    }
                }
                pos as u64
            }
        }
    }

    /// Switches to the hashtable encoding and returns it.
    fn convert(&mut self) -> &mut Table {
        if let Repr::Ints(s) = &self.repr {
            let mut t = Table::with_capacity(s.len() + 1);
            let mut b = itoa::Buffer::new();
            for i in 0..s.len() {
                t.insert(b.format(s.get(i)).as_bytes());
            }
            self.repr = Repr::Table(Box::new(t));
        }
        match &mut self.repr {
            Repr::Table(t) => t,
            // Converted just above.
            Repr::Ints(_) => unreachable!("set was converted to a hashtable"),
        }
    }
}

/// Iterator over a set's members.
pub enum Iter<'a> {
    Ints { set: &'a IntSet, next: usize },
    Table(super::member_table::Iter<'a, MemberBuf>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = Member<'a>;

    #[inline]
    fn next(&mut self) -> Option<Member<'a>> {
        match self {
            Iter::Ints { set, next } => {
                if *next < set.len() {
                    *next += 1;
                    Some(Member::Int(set.get(*next - 1)))
                } else {
                    None
                }
            }
            Iter::Table(it) => it.next().map(|m| Member::Str(m)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Ints { set, next } => {
                let n = set.len() - *next;
                (n, Some(n))
            }
            Iter::Table(it) => it.size_hint(),
        }
    }
}

// ---- intset ----------------------------------------------------------------------------------

/// Sorted integers in one buffer: `[width]` then `len` little-endian
/// integers of `width` bytes (2, 4 or 8). An empty intset owns no buffer.
#[derive(Debug, Clone, Default)]
pub struct IntSet {
    buf: Vec<u8>,
}

/// The narrowest width that holds `v`.
#[inline]
fn width_for(v: i64) -> usize {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

#[inline]
fn read(b: &[u8], width: usize) -> i64 {
    match width {
        2 => i16::from_le_bytes([b[0], b[1]]) as i64,
        4 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
        _ => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
    }
}

#[inline]
fn write(b: &mut [u8], width: usize, v: i64) {
    match width {
        2 => b.copy_from_slice(&(v as i16).to_le_bytes()),
        4 => b.copy_from_slice(&(v as i32).to_le_bytes()),
        _ => b.copy_from_slice(&v.to_le_bytes()),
    }
}

impl IntSet {
    #[inline]
    fn width(&self) -> usize {
        self.buf.first().map_or(2, |&w| w as usize)
    }

    #[inline]
    pub fn len(&self) -> usize {
        match self.buf.first() {
            Some(&w) => (self.buf.len() - 1) / w as usize,
            None => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th smallest member; `i` must be below `len()`.
    #[inline]
    pub fn get(&self, i: usize) -> i64 {
        let w = self.width();
        let at = 1 + i * w;
        read(&self.buf[at..at + w], w)
    }

    #[inline]
    fn search(&self, v: i64) -> Result<usize, usize> {
        if width_for(v) > self.width() || self.buf.is_empty() {
            // Wider than every member: it would go first or last.
            return Err(if v < 0 { 0 } else { self.len() });
        }
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.get(mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Re-encodes every member at width `w`.
    fn upgrade(&mut self, w: usize) {
        let old = self.width();
        let n = self.len();
        let mut buf = Vec::with_capacity(1 + (n + 1) * w);
        buf.push(w as u8);
        buf.resize(1 + n * w, 0);
        for i in 0..n {
            let v = read(&self.buf[1 + i * old..1 + (i + 1) * old], old);
            write(&mut buf[1 + i * w..1 + (i + 1) * w], w, v);
        }
        self.buf = buf;
    }

    fn insert(&mut self, v: i64) -> bool {
        if self.buf.is_empty() {
            let w = width_for(v);
            self.buf.reserve_exact(1 + w);
            self.buf.push(w as u8);
            self.buf.resize(1 + w, 0);
            write(&mut self.buf[1..], w, v);
            return true;
        }
        let pos = match self.search(v) {
            Ok(_) => return false,
            Err(p) => p,
        };
        let need = width_for(v);
        if need > self.width() {
            self.upgrade(need);
        }
        let w = self.width();
        let at = 1 + pos * w;
        let end = self.buf.len();
        self.buf.reserve_exact(w);
        self.buf.resize(end + w, 0);
        self.buf.copy_within(at..end, at + w);
        write(&mut self.buf[at..at + w], w, v);
        true
    }

    fn remove(&mut self, v: i64) -> bool {
        let Ok(pos) = self.search(v) else {
            return false;
        };
        let w = self.width();
        let at = 1 + pos * w;
        self.buf.drain(at..at + w);
        if self.buf.len() == 1 {
            self.buf = Vec::new();
        }
        true
    }

    /// Drops the members at the sorted, distinct `positions` in one pass.
    fn remove_sorted_positions(&mut self, positions: &[usize]) {
        let w = self.width();
        let n = self.len();
        let mut write_at = 1;
        let mut skip = positions.iter().peekable();
        for i in 0..n {
            if skip.peek() == Some(&&i) {
                skip.next();
                continue;
            }
            let from = 1 + i * w;
            if from != write_at {
                self.buf.copy_within(from..from + w, write_at);
            }
            write_at += w;
        }
        self.buf.truncate(write_at);
        if self.buf.len() <= 1 {
            self.buf = Vec::new();
        } else if self.buf.capacity() > 64 && self.buf.len() < self.buf.capacity() / 2 {
            self.buf.shrink_to_fit();
        }
    }
}

// ---- hashtable -------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Table {
    set: MemberTable<MemberBuf>,
    /// Heap bytes of spilled members, so heap_size stays O(1).
    payload: usize,
}

impl Keyed for MemberBuf {
    #[inline]
    fn key(&self) -> &[u8] {
        self
    }
}

/// Heap bytes a member owns (0 while inline). Counted by length, not
/// capacity: a clone (COPY) may round the capacity up, and the running
/// total must stay exact under insert/remove whatever the copy did.
#[inline]
fn member_heap(m: &MemberBuf) -> usize {
    if m.spilled() {
        m.len()
    } else {
        0
    }
}

impl Table {
    fn with_capacity(n: usize) -> Table {
        Table {
            set: MemberTable::with_capacity(n),
            payload: 0,
        }
    }

    fn heap_size(&self) -> usize {
        self.set.structure_bytes() + self.payload
    }

    #[inline]
    fn insert(&mut self, member: &[u8]) -> bool {
        let payload = &mut self.payload;
        self.set
            .find_or_push(member, || {
                let m = MemberBuf::from_slice(member);
                *payload += member_heap(&m);
                m
            })
            .is_none()
    }

    fn remove(&mut self, member: &[u8]) -> bool {
        match self.set.swap_remove(member) {
            Some(m) => {
                self.payload = self.payload.saturating_sub(member_heap(&m));
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(intset: usize) -> Limits {
        Limits {
            set_max_intset_entries: intset,
            ..Limits::default()
        }
    }

    fn members(s: &SetValue) -> Vec<Vec<u8>> {
        s.iter().map(|m| m.to_vec()).collect()
    }

    #[test]
    fn intset_sorts_and_widens() {
        let l = limits(512);
        let mut s = SetValue::new_for(b"5");
        for v in ["5", "3", "-1", "70000", "-9223372036854775808", "3", "100"] {
            s.add(v.as_bytes(), &l);
        }
        assert_eq!(s.encoding_name(), "intset");
        assert_eq!(
            members(&s),
            ["-9223372036854775808", "-1", "3", "5", "100", "70000"]
                .iter()
                .map(|m| m.as_bytes().to_vec())
                .collect::<Vec<_>>()
        );
        assert!(s.contains(b"70000") && s.contains(b"-1"));
        assert!(!s.contains(b"4") && !s.contains(b"abc") && !s.contains(b"03"));
        assert!(s.remove(b"70000"));
        assert!(!s.remove(b"70000"));
        assert!(!s.remove(b"x"));
        assert_eq!(s.len(), 5);
        assert!(s.contains(b"100"));
    }

    #[test]
    fn converts_at_redis_thresholds() {
        let l = limits(3);
        let mut s = SetValue::new_for(b"1");
        s.add(b"1", &l);
        s.add(b"2", &l);
        s.add(b"3", &l);
        assert_eq!(s.encoding_name(), "intset");
        // A member already there does not convert even over the limit.
        assert!(!s.add(b"3", &limits(1)));
        assert_eq!(s.encoding_name(), "intset");
        s.add(b"4", &l);
        assert_eq!(s.encoding_name(), "hashtable");
        assert!(s.contains(b"1") && s.contains(b"4"));
        let mut s = SetValue::new_for(b"1");
        s.add(b"1", &l);
        s.add(b"01", &l);
        assert_eq!(s.encoding_name(), "hashtable");
        assert_eq!(SetValue::new_for(b"a").encoding_name(), "hashtable");
    }

    #[test]
    fn remove_indices_removes_exactly_those() {
        for mut s in [SetValue::new_for(b"1"), SetValue::new_for(b"x")] {
            let l = limits(512);
            for i in 0..50 {
                s.add(i.to_string().as_bytes(), &l);
            }
            let before = members(&s);
            let mut idx = vec![0, 49, 7, 8, 30];
            let mut gone = Vec::new();
            s.remove_indices(&mut idx, |m| gone.push(m.to_vec()));
            assert_eq!(gone.len(), 5);
            assert_eq!(s.len(), 45);
            for m in &before {
                assert_eq!(s.contains(m), !gone.contains(m));
            }
        }
    }

    /// Random adds and removes against a BTreeSet, with limits that make sets cross from intset
    /// to hashtable part way.
    #[test]
    fn matches_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for round in 0..60 {
            let l = limits(if round % 2 == 0 { 64 } else { 100_000 });
            let mut s = SetValue::new_for(b"0");
            let mut model = std::collections::BTreeSet::new();
            for _ in 0..500 {
                let m: Vec<u8> = match rng.gen_range(0..20) {
                    0 => b"x".to_vec(),
                    1 => (i64::MIN + rng.gen_range(0..3)).to_string().into_bytes(),
                    2 => (40_000 + rng.gen_range(0..3)).to_string().into_bytes(),
                    3 => (3_000_000_000i64 + rng.gen_range(0..3))
                        .to_string()
                        .into_bytes(),
                    _ => rng.gen_range(-50i64..50).to_string().into_bytes(),
                };
                if rng.gen_bool(0.4) {
                    assert_eq!(s.remove(&m), model.remove(&m));
                } else {
                    assert_eq!(s.add(&m, &l), model.insert(m.clone()));
                }
                assert_eq!(s.len(), model.len());
            }
            let mut got = members(&s);
            if s.encoding_name() == "intset" {
                let mut sorted: Vec<i64> = model
                    .iter()
                    .filter_map(|m| std::str::from_utf8(m).ok()?.parse().ok())
                    .collect();
                sorted.sort_unstable();
                let want: Vec<Vec<u8>> =
                    sorted.iter().map(|v| v.to_string().into_bytes()).collect();
                assert_eq!(got, want, "intsets iterate in ascending order");
            }
            got.sort();
            assert_eq!(got, model.iter().cloned().collect::<Vec<_>>());
            for m in &model {
                assert!(s.contains(m));
            }
        }
    }

    #[test]
    fn table_scan_survives_growth_and_deletes() {
        let l = limits(0);
        let mut s = SetValue::new_for(b"a");
        for i in 0..1000 {
            s.add(format!("m{i}").as_bytes(), &l);
        }
        let mut seen = std::collections::HashSet::new();
        let (mut cursor, mut round) = (0, 0);
        loop {
            cursor = s.scan(cursor, 7, |m| {
                seen.insert(m.to_vec());
            });
            round += 1;
            s.remove(format!("m{}", 999 - round).as_bytes());
            s.add(format!("new{round}").as_bytes(), &l);
            if cursor == 0 {
                break;
            }
        }
        for i in 0..(999 - round) {
            assert!(seen.contains(format!("m{i}").as_bytes()), "missed m{i}");
        }
    }

    #[test]
    fn value_stays_small() {
        assert!(std::mem::size_of::<SetValue>() <= 24);
    }
}
