//! Streams: an append-only log of entries (ID → field/value pairs) plus
//! consumer groups with their pending-entries lists.
//!
//! Entries live in nodes of up to `stream-node-max-entries` entries, keyed
//! by the ID of their first ("master") entry in a `BTreeMap`, as Redis keeps
//! listpacks in a radix tree. A node is one byte buffer: the master entry's
//! field names, then each entry as a flags byte, its ID as varint deltas
//! from the master ID, and its fields, where an entry whose field names
//! equal the master's stores only its values. Deleted entries are flagged
//! in place (a node goes when its last live entry does). A node is closed
//! where Redis would close its listpack, by an estimate of the listpack's
//! size in bytes, so approximate trimming (`MAXLEN ~`) removes the same
//! entries as Redis does.
//!
//! No RESP and no I/O here: commands turn these into replies.

use std::collections::{BTreeMap, BTreeSet};

use super::member_table::{Keyed, MemberTable};
use std::sync::Arc;

use crate::util::numbers::parse_i64;

/// A stream entry ID: milliseconds and sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The next ID, or None after the last possible one.
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous ID, or None before 0-0.
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    /// `<ms>-<seq>`.
    pub fn to_bytes(self) -> Vec<u8> {
        let mut b = itoa::Buffer::new();
        let mut v = b.format(self.ms).as_bytes().to_vec();
        v.push(b'-');
        v.extend_from_slice(b.format(self.seq).as_bytes());
        v
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

// ---- varints ------------------------------------------------------------------------------

#[inline]
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

#[inline]
fn get_varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v: u64 = 0;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

#[inline]
fn put_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    put_varint(buf, s.len() as u64);
    buf.extend_from_slice(s);
}

#[inline]
fn get_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let n = get_varint(buf, pos) as usize;
    let s = &buf[*pos..*pos + n];
    *pos += n;
    s
}

#[inline]
fn skip_bytes(buf: &[u8], pos: &mut usize) {
    let n = get_varint(buf, pos) as usize;
    *pos += n;
}

// ---- Redis listpack size estimates (for node boundaries) ----------------------------------

fn lp_backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

fn lp_int_size(v: i64) -> usize {
    if (0..=127).contains(&v) {
        2
    } else if (-4096..=4095).contains(&v) {
        3
    } else if (i16::MIN as i64..=i16::MAX as i64).contains(&v) {
        4
    } else if (-(1 << 23)..(1 << 23)).contains(&v) {
        5
    } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        6
    } else {
        10
    }
}

fn lp_str_size(s: &[u8]) -> usize {
    if s.len() <= 20 {
        if let Some(v) = parse_i64(s) {
            return lp_int_size(v);
        }
    }
    let len = s.len();
    let enc = if len < 64 {
        1 + len
    } else if len < 4096 {
        2 + len
    } else {
        5 + len
    };
    enc + lp_backlen_size(enc)
}

// ---- nodes --------------------------------------------------------------------------------

const F_DELETED: u8 = 1;
const F_SAME: u8 = 2;

/// Up to `stream-node-max-entries` entries; see the module comment.
#[derive(Debug, Clone)]
struct Node {
    buf: Vec<u8>,
    /// Where the entries start (after the master field names).
    entries_at: u32,
    nmaster: u32,
    live: u32,
    total: u32,
    /// Redis's listpack size for this node, less the live/deleted counters.
    lp_static: u32,
}

/// One decoded entry header inside a node.
#[derive(Clone, Copy)]
struct RawEntry {
    at: usize,
    flags: u8,
    id: StreamId,
    /// Start of the field data.
    data: usize,
    /// Field count.
    n: usize,
    next: usize,
}

impl Node {
    fn new(fields: &[&[u8]]) -> Node {
        let mut buf = Vec::with_capacity(64);
        put_varint(&mut buf, fields.len() as u64);
        let mut lp = 6 + 1 + lp_int_size(fields.len() as i64) + lp_int_size(0);
        for f in fields {
            put_bytes(&mut buf, f);
            lp += lp_str_size(f);
        }
        Node {
            entries_at: buf.len() as u32,
            buf,
            nmaster: fields.len() as u32,
            live: 0,
            total: 0,
            lp_static: lp as u32,
        }
    }

    fn lp_bytes(&self) -> usize {
        self.lp_static as usize
            + lp_int_size(self.live as i64)
            + lp_int_size((self.total - self.live) as i64)
    }

    fn master_fields(&self) -> MasterFields<'_> {
        let mut pos = 0;
        let n = get_varint(&self.buf, &mut pos) as usize;
        MasterFields {
            buf: &self.buf,
            pos,
            left: n,
        }
    }

    fn same_as_master(&self, fields: &[&[u8]]) -> bool {
        self.nmaster as usize == fields.len()
            && self.master_fields().zip(fields).all(|(a, b)| a == *b)
    }

    fn append(&mut self, master: StreamId, id: StreamId, pairs: &[&[u8]]) {
        let fields: Vec<&[u8]> = pairs.iter().step_by(2).copied().collect();
        let same = self.same_as_master(&fields);
        // Wrapping, as Redis stores a signed delta: after an exact MINID
        // trim leaves a node of tombstones and XSETID lowers the emptied
        // stream's last ID, a new entry may sit below its node's first ID.
        let ms_delta = id.ms.wrapping_sub(master.ms);
        let seq_delta = id.seq.wrapping_sub(master.seq);
        self.buf.push(if same { F_SAME } else { 0 });
        put_varint(&mut self.buf, ms_delta);
        put_varint(
            &mut self.buf,
            if ms_delta == 0 { seq_delta } else { id.seq },
        );
        let mut lp = lp_int_size(0) + lp_int_size(ms_delta as i64) + lp_int_size(seq_delta as i64);
        if same {
            for v in pairs.iter().skip(1).step_by(2) {
                put_bytes(&mut self.buf, v);
                lp += lp_str_size(v);
            }
            lp += lp_int_size(fields.len() as i64);
        } else {
            put_varint(&mut self.buf, fields.len() as u64);
            lp += lp_int_size(fields.len() as i64);
            for p in pairs {
                put_bytes(&mut self.buf, p);
                lp += lp_str_size(p);
            }
            lp += lp_int_size(fields.len() as i64 * 2 + 1);
        }
        self.lp_static = self.lp_static.saturating_add(lp as u32);
        self.live += 1;
        self.total += 1;
    }

    fn decode(&self, master: StreamId, at: usize) -> RawEntry {
        let b = &self.buf;
        let mut pos = at;
        let flags = b[pos];
        pos += 1;
        let ms_delta = get_varint(b, &mut pos);
        let s = get_varint(b, &mut pos);
        let id = if ms_delta == 0 {
            StreamId::new(master.ms, master.seq.wrapping_add(s))
        } else {
            StreamId::new(master.ms.wrapping_add(ms_delta), s)
        };
        let n = if flags & F_SAME != 0 {
            self.nmaster as usize
        } else {
            get_varint(b, &mut pos) as usize
        };
        let data = pos;
        let strings = if flags & F_SAME != 0 { n } else { n * 2 };
        for _ in 0..strings {
            skip_bytes(b, &mut pos);
        }
        RawEntry {
            at,
            flags,
            id,
            data,
            n,
            next: pos,
        }
    }

    /// Every entry (deleted ones included), in order.
    fn raw_entries(&self, master: StreamId) -> impl Iterator<Item = RawEntry> + '_ {
        let mut pos = self.entries_at as usize;
        std::iter::from_fn(move || {
            if pos >= self.buf.len() {
                return None;
            }
            let e = self.decode(master, pos);
            pos = e.next;
            Some(e)
        })
    }

    fn entry_ref(&self, e: RawEntry) -> EntryRef<'_> {
        EntryRef {
            id: e.id,
            node: self,
            data: e.data,
            n: e.n,
            same: e.flags & F_SAME != 0,
        }
    }

    fn last_id(&self, master: StreamId) -> StreamId {
        self.raw_entries(master).last().map_or(master, |e| e.id)
    }

    fn mark_deleted(&mut self, at: usize) {
        self.buf[at] |= F_DELETED;
        self.live -= 1;
    }
}

struct MasterFields<'a> {
    buf: &'a [u8],
    pos: usize,
    left: usize,
}

impl<'a> Iterator for MasterFields<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(get_bytes(self.buf, &mut self.pos))
    }
}

/// A live entry seen through its node.
#[derive(Clone, Copy)]
pub struct EntryRef<'a> {
    pub id: StreamId,
    node: &'a Node,
    data: usize,
    n: usize,
    same: bool,
}

impl<'a> EntryRef<'a> {
    /// Number of field/value pairs.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The field/value pairs, in insertion order.
    pub fn fields(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let buf: &'a [u8] = &self.node.buf;
        let mut pos = self.data;
        let mut master = if self.same {
            Some(self.node.master_fields())
        } else {
            None
        };
        (0..self.n).map(move |_| match master.as_mut() {
            Some(m) => {
                let f = m.next().unwrap_or(b"");
                (f, get_bytes(buf, &mut pos))
            }
            None => {
                let f = get_bytes(buf, &mut pos);
                (f, get_bytes(buf, &mut pos))
            }
        })
    }
}

// ---- consumer groups ----------------------------------------------------------------------

/// A pending (delivered, not yet acknowledged) entry of a group.
#[derive(Debug, Clone)]
pub struct Nack {
    /// Owning consumer's name (a key of [`Group::consumers`]).
    pub consumer: Arc<[u8]>,
    pub delivery_time: i64,
    pub delivery_count: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Consumer {
    pub seen_time: i64,
    /// The IDs of this consumer's pending entries.
    pub pel: ConsumerPel,
}

/// A consumer's pending IDs, in order. Removal is lazy: XACK (and a claim
/// by another consumer) lowers the count, and the ID may stay in the
/// ordered set, skipped, until it is cleaned up ([`forget_in_order`]). An
/// ID there is live while the group's PEL gives it to this consumer. That spares XACK a second
/// B-tree removal (its cost is cache misses over a large PEL; profiling
/// XACK over 1 M pending entries put 9% of its CPU there).
#[derive(Debug, Clone, Default)]
pub struct ConsumerPel {
    ids: BTreeSet<StreamId>,
    live: usize,
}

impl ConsumerPel {
    /// The number of pending entries (exact).
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The live IDs in `range`, ascending; `owner_pel` is the group's PEL
    /// and `me` this consumer's name.
    pub fn range<'a>(
        &'a self,
        range: impl std::ops::RangeBounds<StreamId>,
        owner_pel: &'a GroupPel,
        me: &'a [u8],
    ) -> impl Iterator<Item = StreamId> + 'a {
        self.ids
            .range(range)
            .copied()
            .filter(move |id| owner_pel.get(id).is_some_and(|n| *n.consumer == *me))
    }

    /// Records `id` as now pending for this consumer (it was not live here).
    fn add(&mut self, id: StreamId) {
        self.ids.insert(id);
        self.live += 1;
    }

    /// Records that `id`, live here until now, is no longer pending here
    /// (see [`forget_in_order`]).
    fn forget(&mut self, id: StreamId, owner_pel: &GroupPel, me: &[u8]) {
        debug_assert!(self.live > 0, "a live ID was forgotten");
        self.live = self.live.saturating_sub(1);
        forget_in_order(&mut self.ids, &id, self.live, |id| {
            owner_pel.get(id).is_some_and(|n| *n.consumer == *me)
        });
    }

    /// Bytes of the ordered set (for MEMORY USAGE).
    fn heap_size(&self) -> usize {
        self.ids.len() * 24
    }
}

/// IDs among the first this many of an ordered PEL set are removed
/// from it at once rather than left stale: the front of the set is hot in
/// cache, and in-order acknowledgement (behind one stuck oldest entry,
/// too) then leaves no stale run for readers to skip.
const EAGER_PREFIX: usize = 16;

/// Whether `id` is among the first [`EAGER_PREFIX`] IDs of `set`. It
/// walks from the front, which is hot in cache; `range(..id)` would first
/// descend to `id`, the cache-missing walk XACK is meant to avoid.
fn near_front(set: &BTreeSet<StreamId>, id: &StreamId) -> bool {
    set.iter().take(EAGER_PREFIX).any(|x| x == id)
}

/// Cleans an ordered PEL set after `id` stopped being pending there
/// (`live` says which IDs still are, `live_count` how many). The ID leaves
/// at once when it is near the front (acknowledgement in order, the usual
/// case, also behind one stuck entry); stale runs at either end are
/// popped, so the first and last IDs are live; and the set is compacted
/// once stale IDs outnumber live ones (plus 64), so it holds at most about
/// twice the pending count, at amortised O(1) per removal.
fn forget_in_order(
    set: &mut BTreeSet<StreamId>,
    id: &StreamId,
    live_count: usize,
    live: impl Fn(&StreamId) -> bool,
) {
    if near_front(set, id) {
        set.remove(id);
    }
    while set.first().is_some_and(|id| !live(id)) {
        set.pop_first();
    }
    while set.last().is_some_and(|id| !live(id)) {
        set.pop_last();
    }
    if set.len() > 2 * live_count + 64 {
        set.retain(|id| live(id));
        debug_assert_eq!(set.len(), live_count);
    }
}

/// One pending entry of a group, keyed by its ID's 16 big-endian bytes.
#[derive(Debug, Clone)]
struct PelEntry {
    key: [u8; 16],
    nack: Nack,
}

impl Keyed for PelEntry {
    fn key(&self) -> &[u8] {
        &self.key
    }
}

fn id_key(id: &StreamId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.ms.to_be_bytes());
    k[8..].copy_from_slice(&id.seq.to_be_bytes());
    k
}

/// A group's pending entries: the entries by ID in a hash table, and their
/// order in a set that may still hold acknowledged IDs. XACK removes from
/// the table and leaves the set to [`forget_in_order`] (a B-tree removal
/// over a large PEL costs a chain of cache misses, 13% of XACK's CPU over
/// 1 M pending entries); ordered walks skip IDs the table no longer has.
/// The set's first and last IDs are always live, so the range XPENDING
/// reports needs no skipping.
#[derive(Debug, Clone, Default)]
pub struct GroupPel {
    /// A [`MemberTable`]: it grows and shrinks without a pause, however
    /// large a backlog gets.
    nacks: MemberTable<PelEntry>,
    order: BTreeSet<StreamId>,
}

impl GroupPel {
    pub fn len(&self) -> usize {
        self.nacks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nacks.is_empty()
    }

    pub fn get(&self, id: &StreamId) -> Option<&Nack> {
        self.nacks.get(&id_key(id)).map(|e| &e.nack)
    }

    pub fn get_mut(&mut self, id: &StreamId) -> Option<&mut Nack> {
        self.nacks.get_mut(&id_key(id)).map(|e| &mut e.nack)
    }

    /// Adds or replaces the entry for `id`; returns the one replaced.
    pub fn insert(&mut self, id: StreamId, nack: Nack) -> Option<Nack> {
        let replaced = self.nacks.insert(PelEntry {
            key: id_key(&id),
            nack,
        });
        if replaced.is_none() {
            self.order.insert(id);
        }
        replaced.map(|e| e.nack)
    }

    pub fn remove(&mut self, id: &StreamId) -> Option<Nack> {
        let nack = self.nacks.swap_remove(&id_key(id))?.nack;
        let nacks = &self.nacks;
        forget_in_order(&mut self.order, id, nacks.len(), |id| {
            nacks.contains(&id_key(id))
        });
        Some(nack)
    }

    /// The live entries with IDs in `range`, ascending.
    pub fn range(
        &self,
        range: impl std::ops::RangeBounds<StreamId>,
    ) -> impl DoubleEndedIterator<Item = (StreamId, &Nack)> + '_ {
        self.order
            .range(range)
            .filter_map(|id| self.get(id).map(|n| (*id, n)))
    }

    /// Every live entry, ascending.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (StreamId, &Nack)> + '_ {
        self.range(..)
    }

    /// The oldest and newest pending IDs.
    pub fn first(&self) -> Option<StreamId> {
        self.order.first().copied()
    }

    pub fn last(&self) -> Option<StreamId> {
        self.order.last().copied()
    }

    /// Approximate heap bytes (MEMORY USAGE).
    fn heap_size(&self) -> usize {
        self.nacks.structure_bytes() + self.order.len() * 24
    }
}

impl std::ops::Index<&StreamId> for GroupPel {
    type Output = Nack;

    /// The entry for an ID known to be pending.
    fn index(&self, id: &StreamId) -> &Nack {
        match self.get(id) {
            Some(n) => n,
            None => panic!("{id:?} is not pending"),
        }
    }
}

/// "entries_read" unknown.
pub const ENTRIES_READ_INVALID: i64 = -1;

#[derive(Debug, Clone)]
pub struct Group {
    pub last_id: StreamId,
    /// Logical read counter, [`ENTRIES_READ_INVALID`] when unknown.
    pub entries_read: i64,
    pub pel: GroupPel,
    pub consumers: BTreeMap<Arc<[u8]>, Consumer>,
    /// Ids of the clients blocked reading new entries of this group, in
    /// the order they blocked: new entries go to the first (Redis serves
    /// blocked consumers in order when an entry is added).
    pub waiting: std::collections::VecDeque<u64>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: GroupPel::default(),
            consumers: BTreeMap::new(),
            waiting: Default::default(),
        }
    }

    /// The consumer, created if missing (true when created).
    pub fn consumer_or_create(&mut self, name: &[u8], now_ms: i64) -> (Arc<[u8]>, bool) {
        if let Some((k, _)) = self.consumers.get_key_value(name) {
            return (k.clone(), false);
        }
        let k: Arc<[u8]> = Arc::from(name);
        self.consumers.insert(
            k.clone(),
            Consumer {
                seen_time: now_ms,
                pel: ConsumerPel::default(),
            },
        );
        (k, true)
    }

    /// Whether client `me` may read new entries now: no client that is
    /// still blocked (per `alive`) waits ahead of it. Waiters that are no
    /// longer blocked are forgotten on the way.
    pub fn may_read_new(&mut self, me: u64, alive: impl Fn(u64) -> bool) -> bool {
        while let Some(&first) = self.waiting.front() {
            if first == me {
                return true;
            }
            if alive(first) {
                return false;
            }
            self.waiting.pop_front();
        }
        true
    }

    /// Removes the pending entry `id` from the group and its consumer.
    pub fn remove_nack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(n) => {
                if let Some(c) = self.consumers.get_mut(&n.consumer) {
                    c.pel.forget(id, &self.pel, &n.consumer);
                }
                true
            }
            None => false,
        }
    }

    /// Gives the pending entry `id` to `consumer` (which must exist),
    /// creating it when missing, with the given delivery time and count.
    pub fn assign(&mut self, id: StreamId, consumer: &Arc<[u8]>, time: i64, count: u64) {
        let previous = self.pel.insert(
            id,
            Nack {
                consumer: consumer.clone(),
                delivery_time: time,
                delivery_count: count,
            },
        );
        let already_here = match &previous {
            Some(old) if *old.consumer == **consumer => true,
            Some(old) => {
                if let Some(c) = self.consumers.get_mut(&old.consumer) {
                    c.pel.forget(id, &self.pel, &old.consumer);
                }
                false
            }
            None => false,
        };
        if !already_here {
            if let Some(c) = self.consumers.get_mut(consumer) {
                c.pel.add(id);
            }
        }
    }

    /// Removes consumer `name` with its pending entries; returns how many
    /// it had, or None when there is no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        let pending = c.pel.len();
        for id in c.pel.ids {
            if self.pel.get(&id).is_some_and(|n| *n.consumer == *name) {
                self.pel.remove(&id);
            }
        }
        Some(pending)
    }

    fn heap_size(&self) -> usize {
        self.pel.heap_size()
            + self
                .consumers
                .iter()
                .map(|(k, c)| k.len() + 64 + c.pel.heap_size())
                .sum::<usize>()
    }
}

// ---- the stream ---------------------------------------------------------------------------

/// Node size limits in force (`stream-node-max-bytes/entries`).
#[derive(Clone, Copy, Debug)]
pub struct NodeLimits {
    pub max_bytes: usize,
    pub max_entries: usize,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// Redis's cap on one listpack (and so on one entry).
pub const LISTPACK_MAX_SIZE: usize = 1 << 30;

#[derive(Debug, Clone, Default)]
pub struct StreamValue {
    nodes: BTreeMap<StreamId, Node>,
    length: u64,
    pub last_id: StreamId,
    /// Recorded first entry ID (0-0 when empty).
    pub first_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    /// Consumer groups by name (byte order, as Redis's radix tree).
    pub groups: BTreeMap<Box<[u8]>, Group>,
}

/// Trimming strategy of XADD/XTRIM.
#[derive(Clone, Copy, Debug)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

impl StreamValue {
    pub fn new() -> StreamValue {
        StreamValue::default()
    }

    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    pub fn encoding_name(&self) -> &'static str {
        "stream"
    }

    /// Number of nodes (XINFO's radix-tree-keys).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn heap_size(&self) -> usize {
        self.nodes
            .values()
            .map(|n| n.buf.capacity() + 64)
            .sum::<usize>()
            + self
                .groups
                .iter()
                .map(|(k, g)| k.len() + 96 + g.heap_size())
                .sum::<usize>()
    }

    /// Appends an entry with ID `id` (the caller checked it is above
    /// `last_id`). `pairs` alternates fields and values.
    pub fn append(&mut self, id: StreamId, pairs: &[&[u8]], limits: NodeLimits) {
        let totlen: usize = pairs.iter().map(|p| p.len()).sum();
        let max_bytes = if limits.max_bytes == 0 || limits.max_bytes > LISTPACK_MAX_SIZE {
            LISTPACK_MAX_SIZE
        } else {
            limits.max_bytes
        };
        let new_node = match self.nodes.last_key_value() {
            None => true,
            Some((_, n)) => {
                n.lp_bytes() + totlen >= max_bytes
                    || (limits.max_entries != 0 && n.total as usize >= limits.max_entries)
            }
        };
        if new_node {
            if let Some(mut last) = self.nodes.last_entry() {
                last.get_mut().buf.shrink_to_fit();
            }
            let fields: Vec<&[u8]> = pairs.iter().step_by(2).copied().collect();
            self.nodes.insert(id, Node::new(&fields));
        }
        let mut last = self.nodes.last_entry().expect("node");
        let master = *last.key();
        last.get_mut().append(master, id, pairs);
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// Calls `f` on each live entry with an ID in `start..=end`, ascending
    /// (or descending when `rev`), until it returns false.
    pub fn range<'a>(
        &'a self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        mut f: impl FnMut(EntryRef<'a>) -> bool,
    ) {
        if start > end {
            return;
        }
        // Where Redis's iterator starts: the last node whose key is at
        // most the bound, else the first (forward) or last (reverse) node.
        // (Node keys are first IDs, but XSETID on an empty stream can make
        // later entries smaller than their node's key.)
        if !rev {
            for (_, node, e) in self.live_from(start) {
                if e.id > end || !f(node.entry_ref(e)) {
                    return;
                }
            }
        } else {
            let from = self
                .nodes
                .range(..=end)
                .next_back()
                .or_else(|| self.nodes.last_key_value())
                .map_or(end, |(k, _)| *k);
            for (master, node) in self.nodes.range(..=from).rev() {
                let entries: Vec<RawEntry> = node.raw_entries(*master).collect();
                for e in entries.into_iter().rev() {
                    if e.id > end || e.flags & F_DELETED != 0 {
                        continue;
                    }
                    if e.id < start {
                        return;
                    }
                    if !f(node.entry_ref(e)) {
                        return;
                    }
                }
            }
        }
    }

    /// What XREAD reads past `gt`: the live entries after it, ascending,
    /// at most `limit` of them.
    pub fn read_after(&self, gt: StreamId, limit: usize) -> impl Iterator<Item = EntryRef<'_>> {
        let start = gt.incr().unwrap_or(StreamId::MIN);
        self.live_from(start)
            .map(|(_, node, e)| node.entry_ref(e))
            .take(limit)
    }

    /// The live entries a forward scan from `start` meets, in order, with
    /// their node's key, from the last node whose key is at most `start`
    /// (else the first). Entries below `start` are skipped, and so are
    /// tombstones: they never end a scan (as in Redis, whose iterator
    /// checks the bound on live entries only), which matters after XSETID,
    /// when a deleted entry can hold a bigger ID than live ones after it.
    fn live_from(&self, start: StreamId) -> impl Iterator<Item = (StreamId, &Node, RawEntry)> + '_ {
        let from = self
            .nodes
            .range(..=start)
            .next_back()
            .or_else(|| self.nodes.first_key_value())
            .map_or(start, |(k, _)| *k);
        self.nodes.range(from..).flat_map(move |(master, node)| {
            node.raw_entries(*master)
                .filter(move |e| e.id >= start && e.flags & F_DELETED == 0)
                .map(move |e| (*master, node, e))
        })
    }

    /// The live entry `id`.
    pub fn get(&self, id: StreamId) -> Option<EntryRef<'_>> {
        let mut found = None;
        self.range(id, id, false, |e| {
            found = Some(e);
            false
        });
        found
    }

    pub fn exists(&self, id: StreamId) -> bool {
        self.get(id).is_some()
    }

    /// The first or last live entry's ID.
    pub fn edge_id(&self, last: bool) -> Option<StreamId> {
        let mut found = None;
        self.range(StreamId::MIN, StreamId::MAX, last, |e| {
            found = Some(e.id);
            false
        });
        found
    }

    /// The first entry's ID counting deleted entries still stored (Redis's
    /// streamGetEdgeID without skipping tombstones); None without entries.
    pub fn first_stored_id(&self) -> Option<StreamId> {
        self.nodes
            .iter()
            .find_map(|(master, node)| node.raw_entries(*master).next().map(|e| e.id))
    }

    /// Redis's streamLastValidID: the last live entry, 0-0 when empty.
    pub fn last_valid_id(&self) -> StreamId {
        self.edge_id(true).unwrap_or_default()
    }

    /// Deletes the live entry `id` (XDEL's bookkeeping of first/max-deleted
    /// IDs is the caller's). True if it was there.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((master, at)) = self
            .live_from(id)
            .next()
            .filter(|(_, _, e)| e.id == id)
            .map(|(master, _, e)| (master, e.at))
        else {
            return false;
        };
        let Some(node) = self.nodes.get_mut(&master) else {
            return false;
        };
        node.mark_deleted(at);
        if node.live == 0 {
            self.nodes.remove(&master);
        }
        self.length -= 1;
        true
    }

    /// Redis's streamTrim: removes entries from the head by `trim`;
    /// `approx` removes whole nodes only; `limit` (0: none) caps the work.
    /// Returns the number of entries removed.
    pub fn trim(&mut self, trim: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted: u64 = 0;
        loop {
            if let Trim::MaxLen(max) = trim {
                if self.length <= max {
                    break;
                }
            }
            let Some(mut first) = self.nodes.first_entry() else {
                break;
            };
            let master = *first.key();
            let node = first.get_mut();
            let entries = node.live as u64;
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let remove_node = match trim {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => node.last_id(master) < min,
            };
            if remove_node {
                first.remove();
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let raws: Vec<RawEntry> = node.raw_entries(master).collect();
            for e in raws {
                let stop = match trim {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => e.id >= min,
                };
                if stop {
                    break;
                }
                if e.flags & F_DELETED == 0 {
                    node.mark_deleted(e.at);
                    self.length -= 1;
                    deleted += 1;
                }
            }
            break;
        }
        self.first_id = self.edge_id(false).unwrap_or_default();
        deleted
    }

    // ---- groups and lag -----------------------------------------------------------------

    /// Whether `start..=end` (None: open) may contain a deleted entry.
    pub fn range_has_tombstones(&self, start: Option<StreamId>, end: Option<StreamId>) -> bool {
        if self.length == 0 || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        let s = start.unwrap_or(StreamId::MIN);
        let e = end.unwrap_or(StreamId::MAX);
        s <= self.max_deleted_id && self.max_deleted_id <= e
    }

    /// Redis's streamEstimateDistanceFromFirstEverEntry: the logical read
    /// counter of `id`, or [`ENTRIES_READ_INVALID`] when it cannot be known.
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        if id == self.last_id {
            return self.entries_added as i64;
        } else if id > self.last_id {
            return ENTRIES_READ_INVALID;
        }
        if self.max_deleted_id.is_zero() || self.max_deleted_id < self.first_id {
            if id < self.first_id {
                return (self.entries_added - self.length) as i64;
            } else if id == self.first_id {
                return (self.entries_added - self.length + 1) as i64;
            }
        }
        ENTRIES_READ_INVALID
    }

    /// A group's lag, None when it cannot be known.
    pub fn group_lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != ENTRIES_READ_INVALID
            && !self.range_has_tombstones(Some(g.last_id), None)
        {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        let read = self.estimate_distance(g.last_id);
        if read != ENTRIES_READ_INVALID {
            Some(self.entries_added as i64 - read)
        } else {
            None
        }
    }

    /// Advances a group's last delivered ID to `id` (an entry just read),
    /// maintaining its read counter as Redis does.
    pub fn advance_group(&mut self, group: &[u8], id: StreamId) {
        let tomb = self.range_has_tombstones(Some(id), None);
        let estimate = self.estimate_distance(id);
        let added = self.entries_added;
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        if id > g.last_id {
            if g.entries_read != ENTRIES_READ_INVALID && !tomb {
                g.entries_read += 1;
            } else if added != 0 {
                g.entries_read = estimate;
            }
            g.last_id = id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Acknowledging in order behind one entry that is never acknowledged
    /// leaves no stale run for ordered walks to skip.
    #[test]
    fn in_order_acks_behind_a_stuck_entry_leave_nothing_stale() {
        let mut g = Group::new(StreamId { ms: 0, seq: 0 }, 0);
        let (c, _) = g.consumer_or_create(b"c", 0);
        for ms in 0..10_000 {
            g.assign(StreamId { ms, seq: 0 }, &c, 0, 1);
        }
        for ms in 1..9_000 {
            assert!(g.remove_nack(StreamId { ms, seq: 0 }));
        }
        assert_eq!(g.pel.len(), 1001);
        assert_eq!(g.pel.order.len(), 1001);
        assert_eq!(g.consumers[&c].pel.ids.len(), 1001);
        let first_two: Vec<u64> = g.pel.iter().take(2).map(|(id, _)| id.ms).collect();
        assert_eq!(first_two, [0, 9_000]);
    }

    /// The group's and consumers' pending lists against a model under
    /// deliveries, claims between consumers, re-deliveries and acks: counts,
    /// first/last and ordered ranges stay exact and the lazily cleaned sets
    /// stay bounded.
    #[test]
    fn consumer_pels_follow_the_group_pel() {
        for space in [500u64, 20_000] {
            pels_follow_the_group_pel_over(space);
        }
    }

    fn pels_follow_the_group_pel_over(space: u64) {
        use rand::{Rng, SeedableRng};
        use std::collections::BTreeMap as Model;
        let mut rng = rand::rngs::StdRng::seed_from_u64(5 + space);
        let mut g = Group::new(StreamId { ms: 0, seq: 0 }, 0);
        let names: Vec<Arc<[u8]>> = ["alice", "bob", "carol"]
            .iter()
            .map(|n| g.consumer_or_create(n.as_bytes(), 0).0)
            .collect();
        let mut model: Model<StreamId, usize> = Model::new();
        for step in 0..20_000u64 {
            let id = StreamId {
                ms: rng.gen_range(0..500),
                seq: 0,
            };
            let who = rng.gen_range(0..names.len());
            if rng.gen_bool(0.55) {
                g.assign(id, &names[who], step as i64, 1);
                model.insert(id, who);
            } else {
                assert_eq!(g.remove_nack(id), model.remove(&id).is_some());
            }
            assert_eq!(g.pel.first(), model.keys().next().copied());
            assert_eq!(g.pel.last(), model.keys().next_back().copied());
            if step % 997 == 0 || step == 59_999 {
                let all: Vec<StreamId> = g.pel.iter().map(|(id, _)| id).collect();
                assert_eq!(all, model.keys().copied().collect::<Vec<_>>());
                assert_eq!(g.pel.len(), model.len());
                assert!(g.pel.order.len() <= 2 * g.pel.len() + 64 + 1);
                for (k, name) in names.iter().enumerate() {
                    let c = &g.consumers[name];
                    let want: Vec<StreamId> = model
                        .iter()
                        .filter(|(_, &w)| w == k)
                        .map(|(id, _)| *id)
                        .collect();
                    assert_eq!(c.pel.len(), want.len());
                    let got: Vec<StreamId> = c.pel.range(.., &g.pel, name).collect();
                    assert_eq!(got, want);
                    assert!(c.pel.ids.len() <= 2 * c.pel.len() + 64 + 1);
                }
            }
        }
        let bob = names[1].clone();
        let bobs = g.consumers[&bob].pel.len();
        assert_eq!(g.delete_consumer(&bob), Some(bobs));
        assert!(g.pel.iter().all(|(_, n)| *n.consumer != *bob));
        assert_eq!(g.pel.len(), model.values().filter(|&&w| w != 1).count());
    }

    fn pairs(s: &[&'static str]) -> Vec<&'static [u8]> {
        s.iter().map(|x| x.as_bytes()).collect()
    }

    fn ids(s: &StreamValue, start: StreamId, end: StreamId, rev: bool) -> Vec<StreamId> {
        let mut v = Vec::new();
        s.range(start, end, rev, |e| {
            v.push(e.id);
            true
        });
        v
    }

    #[test]
    fn append_range_and_fields() {
        let mut s = StreamValue::new();
        let lim = NodeLimits {
            max_bytes: 4096,
            max_entries: 3,
        };
        for i in 1..=10u64 {
            let v = i.to_string();
            if i % 3 == 0 {
                s.append(StreamId::new(i, i), &[b"other", v.as_bytes()], lim);
            } else {
                s.append(StreamId::new(i, 0), &[b"a", v.as_bytes(), b"b", b"x"], lim);
            }
        }
        assert_eq!(s.len(), 10);
        assert_eq!(s.node_count(), 4);
        let all = ids(&s, StreamId::MIN, StreamId::MAX, false);
        assert_eq!(all.len(), 10);
        let mut rev = ids(&s, StreamId::MIN, StreamId::MAX, true);
        rev.reverse();
        assert_eq!(all, rev);
        let e = s.get(StreamId::new(3, 3)).unwrap();
        let f: Vec<_> = e.fields().collect();
        assert_eq!(f, vec![(&b"other"[..], &b"3"[..])]);
        let e = s.get(StreamId::new(4, 0)).unwrap();
        let f: Vec<_> = e.fields().collect();
        assert_eq!(f, vec![(&b"a"[..], &b"4"[..]), (&b"b"[..], &b"x"[..])]);
        assert_eq!(
            ids(&s, StreamId::new(4, 0), StreamId::new(6, 0), false),
            vec![StreamId::new(4, 0), StreamId::new(5, 0)]
        );
        assert!(s.delete(StreamId::new(5, 0)));
        assert!(!s.delete(StreamId::new(5, 0)));
        assert_eq!(s.len(), 9);
        assert_eq!(s.trim(Trim::MaxLen(5), false, 0), 4);
        assert_eq!(s.first_id, StreamId::new(6, 6));
        assert_eq!(s.trim(Trim::MinId(StreamId::new(9, 0)), false, 0), 3);
        assert_eq!(s.len(), 2);
        let _ = pairs(&[]);
    }
}
