//! The sorted-set type: a compact encoding for small sets and a large one
//! past `zset-max-listpack-entries` / `zset-max-listpack-value`, with
//! Redis 7.0's conversion rules, and the score/lex range logic both share.
//!
//! * [`Pack`] (OBJECT ENCODING `listpack`): one byte buffer of entries
//!   `[score f64][length LEB128][member]` sorted by (score, member); every
//!   operation is a linear scan, as on a Redis listpack. Like a listpack it
//!   stores an integral score as an integer, which turns -0 into 0 (Redis
//!   7.0 prints -0 only for the large encoding), and ZSCAN prints its
//!   scores the way a listpack holds them ([`format_pack_score`]).
//! * [`Big`] (OBJECT ENCODING `skiplist`): hash table + order-statistic
//!   tree, see `zset/big.rs`.
//!
//! No RESP here: commands read through [`ZSetValue`]'s methods and
//! [`ZIter`], and format replies themselves.

mod big;
mod tree;

pub use big::{Big, BigIter};

use crate::types::Limits;

/// Redis's `ZADD` input flags.
#[derive(Clone, Copy, Debug, Default)]
pub struct AddFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    pub incr: bool,
}

/// What one `ZADD` element did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AddOutcome {
    /// New member, with this score.
    Added(f64),
    /// Existing member whose score changed to this.
    Updated(f64),
    /// Existing member, score computed but equal to the old one.
    Unchanged(f64),
    /// Skipped because of NX/XX/GT/LT.
    Nop,
    /// The (incremented) score is NaN: nothing changed.
    Nan,
}

/// A score interval as ZRANGEBYSCORE takes it: `(` makes a bound
/// exclusive.
#[derive(Clone, Copy, Debug)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub minex: bool,
    pub maxex: bool,
}

impl ScoreRange {
    #[inline]
    pub fn gte_min(&self, s: f64) -> bool {
        if self.minex {
            s > self.min
        } else {
            s >= self.min
        }
    }

    #[inline]
    pub fn lte_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }

    /// Redis's quick rejection of ranges that cannot match anything.
    pub fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }
}

/// One end of a lex interval: `-`, `+`, `[member` or `(member`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LexBound<'a> {
    NegInf,
    PosInf,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

impl LexBound<'_> {
    fn exclusive(&self) -> bool {
        !matches!(self, LexBound::Incl(_))
    }
}

#[derive(Clone, Copy, Debug)]
pub struct LexRange<'a> {
    pub min: LexBound<'a>,
    pub max: LexBound<'a>,
}

impl LexRange<'_> {
    #[inline]
    pub fn gte_min(&self, v: &[u8]) -> bool {
        match self.min {
            LexBound::NegInf => true,
            LexBound::PosInf => false,
            LexBound::Incl(b) => v >= b,
            LexBound::Excl(b) => v > b,
        }
    }

    #[inline]
    pub fn lte_max(&self, v: &[u8]) -> bool {
        match self.max {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(b) => v <= b,
            LexBound::Excl(b) => v < b,
        }
    }

    /// Redis's quick rejection (`zslIsInLexRange`'s first test): the
    /// bounds compared with `-` below and `+` above everything.
    pub fn is_empty(&self) -> bool {
        use std::cmp::Ordering::*;
        let cmp = match (self.min, self.max) {
            (LexBound::NegInf, LexBound::NegInf) | (LexBound::PosInf, LexBound::PosInf) => Equal,
            (LexBound::NegInf, _) | (_, LexBound::PosInf) => Less,
            (LexBound::PosInf, _) | (_, LexBound::NegInf) => Greater,
            (LexBound::Incl(a) | LexBound::Excl(a), LexBound::Incl(b) | LexBound::Excl(b)) => {
                a.cmp(b)
            }
        };
        cmp == Greater || (cmp == Equal && (self.min.exclusive() || self.max.exclusive()))
    }
}

/// How a listpack holds a score, and so how ZSCAN of a listpack-encoded set
/// prints it: integral values within ±2^62 as integers (so 1e18 is
/// "1000000000000000000", where ZRANGE says "1e+18"), others as `%.17g`.
pub fn format_pack_score(score: f64, out: &mut Vec<u8>) {
    const LIMIT: f64 = 4_611_686_018_427_387_904.0; // 2^62, LLONG_MAX/2 as a double
    if (-LIMIT..=LIMIT).contains(&score) && score.fract() == 0.0 {
        crate::util::numbers::format_i64(score as i64, out);
    } else {
        crate::util::numbers::format_f64(score, out);
    }
}

// ---- the compact encoding --------------------------------------------------------------------

/// Entries sorted by (score, member) in one buffer.
#[derive(Clone, Debug, Default)]
pub struct Pack {
    buf: Vec<u8>,
    len: u32,
}

/// Reads a LEB128 length at `at`: (length, bytes used).
#[inline]
fn read_len(buf: &[u8], at: usize) -> (usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    let mut i = at;
    while let Some(&b) = buf.get(i) {
        n |= ((b & 0x7f) as usize) << shift;
        i += 1;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    (n, i - at)
}

fn write_len(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// The score a listpack would give back: integral values are stored as
/// integers there, so -0 comes back as 0.
#[inline]
fn pack_score(s: f64) -> f64 {
    if s == 0.0 {
        0.0
    } else {
        s
    }
}

/// One decoded entry: where it starts and ends, its member and score.
#[derive(Clone, Copy)]
struct PackEntry<'a> {
    start: usize,
    end: usize,
    member: &'a [u8],
    score: f64,
}

impl Pack {
    fn entry_at(&self, at: usize) -> PackEntry<'_> {
        let mut sb = [0u8; 8];
        sb.copy_from_slice(&self.buf[at..at + 8]);
        let (n, used) = read_len(&self.buf, at + 8);
        let m = at + 8 + used;
        PackEntry {
            start: at,
            end: m + n,
            member: &self.buf[m..m + n],
            score: f64::from_le_bytes(sb),
        }
    }

    fn entries(&self) -> impl Iterator<Item = PackEntry<'_>> {
        let mut at = 0;
        std::iter::from_fn(move || {
            if at >= self.buf.len() {
                return None;
            }
            let e = self.entry_at(at);
            at = e.end;
            Some(e)
        })
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn find(&self, member: &[u8]) -> Option<PackEntry<'_>> {
        self.entries().find(|e| e.member == member)
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|e| e.score)
    }

    /// Inserts a member that is not present, at its sorted place.
    fn insert(&mut self, member: &[u8], score: f64) {
        let score = pack_score(score);
        let at = self
            .entries()
            .find(|e| e.score > score || (e.score == score && e.member > member))
            .map_or(self.buf.len(), |e| e.start);
        // The entry's header on the stack: score and length (at most ten
        // LEB128 bytes for a usize).
        let mut hdr = [0u8; 18];
        hdr[..8].copy_from_slice(&score.to_le_bytes());
        let mut n = member.len();
        let mut h = 8;
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            hdr[h] = if n == 0 { b } else { b | 0x80 };
            h += 1;
            if n == 0 {
                break;
            }
        }
        self.buf.reserve_exact(h + member.len());
        self.buf
            .splice(at..at, hdr[..h].iter().chain(member).copied());
        self.len += 1;
    }

    fn remove_bytes(&mut self, start: usize, end: usize, count: usize) {
        self.buf.drain(start..end);
        self.len -= count as u32;
        if self.buf.capacity() > 64 && self.buf.capacity() > self.buf.len() * 2 {
            self.buf.shrink_to_fit();
        }
    }

    /// Byte offset where rank `rank` starts (the end for `rank == len`).
    fn offset_of(&self, rank: usize) -> usize {
        self.entries().nth(rank).map_or(self.buf.len(), |e| e.start)
    }

    fn remove_ranks(&mut self, lo: usize, hi: usize) -> usize {
        let hi = hi.min(self.len());
        if lo >= hi {
            return 0;
        }
        let (a, b) = (self.offset_of(lo), self.offset_of(hi));
        self.remove_bytes(a, b, hi - lo);
        hi - lo
    }

    fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        self.entries().nth(rank).map(|e| (e.member, e.score))
    }
}

/// ZADD's decision for one member given its current score (None: absent).
fn decide(cur: Option<f64>, score: f64, f: AddFlags) -> AddOutcome {
    match cur {
        Some(cur) => {
            if f.nx {
                return AddOutcome::Nop;
            }
            let mut s = score;
            if f.incr {
                s += cur;
                if s.is_nan() {
                    return AddOutcome::Nan;
                }
            }
            if (f.lt && s >= cur) || (f.gt && s <= cur) {
                AddOutcome::Nop
            } else if s == cur {
                AddOutcome::Unchanged(s)
            } else {
                AddOutcome::Updated(s)
            }
        }
        None if f.xx => AddOutcome::Nop,
        None => AddOutcome::Added(score),
    }
}

// ---- the value -------------------------------------------------------------------------------

/// A sorted set in one of its two encodings.
#[derive(Clone, Debug)]
pub enum ZSetValue {
    Pack(Pack),
    Big(Box<Big>),
}

impl Default for ZSetValue {
    fn default() -> Self {
        ZSetValue::Pack(Pack::default())
    }
}

impl ZSetValue {
    /// The empty set ZADD creates for its first member (Redis 7.0 looks
    /// only at that member's length, and at entries == 0).
    pub fn for_first_member(limits: &Limits, member_len: usize) -> ZSetValue {
        if limits.zset_max_listpack_entries == 0 || member_len > limits.zset_max_listpack_value {
            ZSetValue::Big(Box::default())
        } else {
            ZSetValue::Pack(Pack::default())
        }
    }

    /// A set from (member, score) pairs sorted by (score, member) with
    /// distinct members, in the encoding Redis gives a stored result
    /// (ZRANGESTORE, ZUNIONSTORE, ...): compact when it is small enough.
    pub fn from_sorted(items: &[(&[u8], f64)], limits: &Limits) -> ZSetValue {
        let max_len = items.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
        if items.len() <= limits.zset_max_listpack_entries
            && max_len <= limits.zset_max_listpack_value
        {
            let mut p = Pack::default();
            let total: usize = items.iter().map(|(m, _)| m.len() + 10).sum();
            p.buf.reserve_exact(total);
            for &(m, s) in items {
                p.buf.extend_from_slice(&pack_score(s).to_le_bytes());
                write_len(m.len(), &mut p.buf);
                p.buf.extend_from_slice(m);
            }
            p.len = items.len() as u32;
            ZSetValue::Pack(p)
        } else {
            ZSetValue::Big(Box::new(Big::from_sorted(items.iter().copied())))
        }
    }

    /// The set ZRANGESTORE builds from `items` in reply order. Redis 7.0
    /// creates the destination compact unless the expected length (known
    /// for rank ranges, `None` for score and lex ranges) exceeds the entry
    /// limit, then adds the elements one by one, converting on the way as
    /// ZADD does. The encoding follows, and so do the scores: the elements
    /// added while it was still compact had -0 turned into 0.
    pub fn from_adds(
        items: &[(&[u8], f64)],
        known_len: Option<usize>,
        limits: &Limits,
    ) -> ZSetValue {
        let start_compact = known_len.is_none_or(|n| n <= limits.zset_max_listpack_entries);
        let convert_at = if start_compact {
            items.iter().enumerate().position(|(i, (m, _))| {
                i + 1 > limits.zset_max_listpack_entries || m.len() > limits.zset_max_listpack_value
            })
        } else {
            Some(0)
        };
        let mut sorted: Vec<(&[u8], f64)> = items
            .iter()
            .enumerate()
            .map(|(i, &(m, s))| match convert_at {
                Some(c) if i >= c => (m, s),
                _ => (m, pack_score(s)),
            })
            .collect();
        sorted.sort_by(|a, b| {
            a.1.partial_cmp(&b.1)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.0.cmp(b.0))
        });
        match convert_at {
            None => ZSetValue::from_sorted(
                &sorted,
                &Limits {
                    zset_max_listpack_entries: usize::MAX,
                    zset_max_listpack_value: usize::MAX,
                    ..*limits
                },
            ),
            Some(_) => ZSetValue::Big(Box::new(Big::from_sorted(sorted))),
        }
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            ZSetValue::Pack(_) => "listpack",
            ZSetValue::Big(_) => "skiplist",
        }
    }

    pub fn is_pack(&self) -> bool {
        matches!(self, ZSetValue::Pack(_))
    }

    pub fn heap_size(&self) -> usize {
        match self {
            ZSetValue::Pack(p) => p.buf.capacity(),
            ZSetValue::Big(b) => std::mem::size_of::<Big>() + b.heap_size(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ZSetValue::Pack(p) => p.len(),
            ZSetValue::Big(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSetValue::Pack(p) => p.score(member),
            ZSetValue::Big(b) => b.score(member),
        }
    }

    /// Converts the compact encoding to the large one.
    fn convert_to_big(&mut self) {
        if let ZSetValue::Pack(p) = self {
            let big = Big::from_sorted(p.entries().map(|e| (e.member, e.score)));
            *self = ZSetValue::Big(Box::new(big));
        }
    }

    /// Redis's `zsetAdd`: adds or updates one member under ZADD's flags,
    /// converting to the large encoding first when a new member would make
    /// the compact one too long or holds too long a member.
    pub fn add(&mut self, member: &[u8], score: f64, f: AddFlags, limits: &Limits) -> AddOutcome {
        if score.is_nan() {
            return AddOutcome::Nan;
        }
        match self {
            ZSetValue::Big(b) => {
                let mut out = AddOutcome::Nop;
                b.upsert(member, |cur| {
                    out = decide(cur, score, f);
                    match out {
                        AddOutcome::Added(s) | AddOutcome::Updated(s) => Some(s),
                        _ => None,
                    }
                });
                out
            }
            ZSetValue::Pack(p) => {
                let found = p.find(member).map(|e| (e.score, e.start, e.end));
                let out = decide(found.map(|x| x.0), score, f);
                match (out, found) {
                    (AddOutcome::Updated(s), Some((_, start, end))) => {
                        p.remove_bytes(start, end, 1);
                        p.insert(member, s);
                    }
                    (AddOutcome::Added(s), _) => {
                        if p.len() + 1 > limits.zset_max_listpack_entries
                            || member.len() > limits.zset_max_listpack_value
                        {
                            self.convert_to_big();
                        }
                        match self {
                            ZSetValue::Pack(p) => p.insert(member, s),
                            ZSetValue::Big(b) => b.insert_new(member, s),
                        }
                    }
                    _ => {}
                }
                out
            }
        }
    }

    /// Removes a member; returns whether it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            ZSetValue::Pack(p) => match p.find(member) {
                Some(e) => {
                    let (a, b) = (e.start, e.end);
                    p.remove_bytes(a, b, 1);
                    true
                }
                None => false,
            },
            ZSetValue::Big(b) => b.remove(member),
        }
    }

    /// 0-based rank in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match self {
            ZSetValue::Pack(p) => p.entries().position(|e| e.member == member),
            ZSetValue::Big(b) => b.rank(member),
        }
    }

    /// The element at an ascending rank.
    pub fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        match self {
            ZSetValue::Pack(p) => p.get(rank),
            ZSetValue::Big(b) => b.get(rank),
        }
    }

    /// Elements from ascending rank `rank` upwards, or (`rev`) downwards.
    pub fn iter_from(&self, rank: usize, rev: bool) -> ZIter<'_> {
        match self {
            ZSetValue::Pack(p) if rev => {
                let mut offs: Vec<u32> = p
                    .entries()
                    .take(rank.saturating_add(1))
                    .map(|e| e.start as u32)
                    .collect();
                if rank >= p.len() {
                    offs.clear();
                }
                ZIter::PackRev { pack: p, offs }
            }
            ZSetValue::Pack(p) => ZIter::Pack {
                pack: p,
                at: if rank >= p.len() {
                    p.buf.len()
                } else {
                    p.offset_of(rank)
                },
            },
            ZSetValue::Big(b) => ZIter::Big(b.iter_from(rank, rev)),
        }
    }

    /// All elements in ascending order.
    pub fn iter(&self) -> ZIter<'_> {
        self.iter_from(0, false)
    }

    /// Number of leading elements (ascending) for which `pred` holds;
    /// `pred` must be monotone over the order.
    pub fn partition_point(&self, mut pred: impl FnMut(&[u8], f64) -> bool) -> usize {
        match self {
            ZSetValue::Pack(p) => p.entries().take_while(|e| pred(e.member, e.score)).count(),
            ZSetValue::Big(b) => b.partition_point(pred),
        }
    }

    /// Number of leading elements whose score satisfies `pred` (monotone).
    pub fn partition_by_score(&self, mut pred: impl FnMut(f64) -> bool) -> usize {
        match self {
            ZSetValue::Pack(p) => p.entries().take_while(|e| pred(e.score)).count(),
            ZSetValue::Big(b) => b.partition_point_by_score(pred),
        }
    }

    /// Ranks `lo..hi` of the elements within a score range (scores are
    /// always sorted, so this is exact for both encodings).
    pub fn score_span(&self, r: &ScoreRange) -> (usize, usize) {
        if r.is_empty() {
            return (0, 0);
        }
        let lo = self.partition_by_score(|s| !r.gte_min(s));
        let hi = self.partition_by_score(|s| r.lte_max(s)).max(lo);
        (lo, hi)
    }

    /// Checks the large encoding's internal invariants (tests only).
    #[cfg(test)]
    pub fn check(&self) {
        if let ZSetValue::Big(b) = self {
            b.check();
        }
    }

    /// Where a walk over a score range starts: the lowest element in range,
    /// or with `rev` the highest.
    pub fn score_start(&self, r: &ScoreRange, rev: bool) -> Option<usize> {
        let (lo, hi) = self.score_span(r);
        if lo >= hi {
            None
        } else if rev {
            Some(hi - 1)
        } else {
            Some(lo)
        }
    }

    /// Where a walk over a lex range starts, as Redis finds it: the first
    /// element (or, with `rev`, the last) that passes the near bound,
    /// provided it also passes the far one. On the compact encoding this is
    /// Redis's linear scan, which matters only when the scores differ and
    /// the members are therefore not in lex order.
    pub fn lex_start(&self, r: &LexRange, rev: bool) -> Option<usize> {
        let n = self.len();
        if n == 0 || r.is_empty() {
            return None;
        }
        match self {
            ZSetValue::Pack(p) => {
                // zzlIsInLexRange: the last element must pass the min and the
                // first the max.
                let first = p.get(0)?.0;
                let last = p.get(n - 1)?.0;
                if !r.gte_min(last) || !r.lte_max(first) {
                    return None;
                }
                if rev {
                    let mut found = None;
                    for (i, e) in p.entries().enumerate() {
                        if r.lte_max(e.member) {
                            found = Some((i, e.member));
                        }
                    }
                    let (i, m) = found?;
                    r.gte_min(m).then_some(i)
                } else {
                    let (i, e) = p.entries().enumerate().find(|(_, e)| r.gte_min(e.member))?;
                    r.lte_max(e.member).then_some(i)
                }
            }
            ZSetValue::Big(b) => {
                if rev {
                    let hi = b.partition_point(|m, _| r.lte_max(m));
                    let i = hi.checked_sub(1)?;
                    r.gte_min(b.get(i)?.0).then_some(i)
                } else {
                    let lo = b.partition_point(|m, _| !r.gte_min(m));
                    r.lte_max(b.get(lo)?.0).then_some(lo)
                }
            }
        }
    }

    /// Ranks `start..end` of the elements within a lex range walking
    /// upwards from [`ZSetValue::lex_start`] while the max bound holds
    /// (ZLEXCOUNT, ZREMRANGEBYLEX).
    pub fn lex_span(&self, r: &LexRange) -> (usize, usize) {
        let Some(start) = self.lex_start(r, false) else {
            return (0, 0);
        };
        match self {
            ZSetValue::Pack(_) => {
                let n = self
                    .iter_from(start, false)
                    .take_while(|(m, _)| r.lte_max(m))
                    .count();
                (start, start + n)
            }
            ZSetValue::Big(b) => (start, b.partition_point(|m, _| r.lte_max(m)).max(start)),
        }
    }

    /// Removes ranks `lo..hi` (ascending); returns how many went.
    pub fn remove_ranks(&mut self, lo: usize, hi: usize) -> usize {
        match self {
            ZSetValue::Pack(p) => p.remove_ranks(lo, hi),
            ZSetValue::Big(b) => b.remove_ranks(lo, hi),
        }
    }

    /// One ZSCAN step from `cursor`: calls `f` on what it returns and gives
    /// the next cursor. The compact encoding returns everything at once
    /// (cursor 0), as Redis does for a listpack; the large one visits hash
    /// buckets until `count` elements or `10 * count` buckets.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(&'a [u8], f64)) -> u64 {
        match self {
            ZSetValue::Pack(p) => {
                p.entries().for_each(|e| f(e.member, e.score));
                0
            }
            ZSetValue::Big(b) => {
                if b.scan_done() {
                    return 0;
                }
                let mut cursor = cursor;
                let mut found = 0;
                let mut budget = count.saturating_mul(10);
                loop {
                    cursor = b.scan(cursor, |m, s| {
                        found += 1;
                        f(m, s)
                    });
                    if cursor == 0 || budget == 0 || found >= count {
                        return cursor;
                    }
                    budget -= 1;
                }
            }
        }
    }
}

/// Iterator over (member, score) pairs of a [`ZSetValue`].
pub enum ZIter<'a> {
    Pack { pack: &'a Pack, at: usize },
    PackRev { pack: &'a Pack, offs: Vec<u32> },
    Big(BigIter<'a>),
}

impl<'a> Iterator for ZIter<'a> {
    type Item = (&'a [u8], f64);

    #[inline]
    fn next(&mut self) -> Option<(&'a [u8], f64)> {
        match self {
            ZIter::Pack { pack, at } => {
                if *at >= pack.buf.len() {
                    return None;
                }
                let e = pack.entry_at(*at);
                *at = e.end;
                Some((e.member, e.score))
            }
            ZIter::PackRev { pack, offs } => {
                let o = offs.pop()?;
                let e = pack.entry_at(o as usize);
                Some((e.member, e.score))
            }
            ZIter::Big(b) => b.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// The model: a map member -> score, and its elements sorted by
    /// (score, member).
    fn sorted(model: &BTreeMap<Vec<u8>, f64>) -> Vec<(Vec<u8>, f64)> {
        let mut v: Vec<(Vec<u8>, f64)> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
        v.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
        v
    }

    fn contents(z: &ZSetValue) -> Vec<(Vec<u8>, f64)> {
        z.iter().map(|(m, s)| (m.to_vec(), s)).collect()
    }

    fn limits(entries: usize) -> Limits {
        Limits {
            zset_max_listpack_entries: entries,
            ..Limits::default()
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add(u16, i8),
        Incr(u16, i8),
        Remove(u16),
        RemoveRanks(usize, usize),
        RemoveScores(i8, i8, bool),
    }

    fn member(i: u16) -> Vec<u8> {
        format!("m{}", i % 400).into_bytes()
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (any::<u16>(), any::<i8>()).prop_map(|(m, s)| Op::Add(m, s)),
            2 => (any::<u16>(), any::<i8>()).prop_map(|(m, s)| Op::Incr(m, s)),
            4 => any::<u16>().prop_map(Op::Remove),
            1 => (any::<usize>(), 0usize..40).prop_map(|(a, n)| Op::RemoveRanks(a, n)),
            1 => (any::<i8>(), any::<i8>(), any::<bool>()).prop_map(|(a, b, x)| Op::RemoveScores(a, b, x)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Both encodings against a sorted model: insert, update, remove,
        /// rank, ranges by rank, score and lex.
        #[test]
        fn zset_matches_model(ops in proptest::collection::vec(op(), 1..1500), entries in prop_oneof![Just(0usize), Just(16), Just(128)]) {
            let lim = limits(entries);
            let mut z = ZSetValue::for_first_member(&lim, 2);
            let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Add(m, s) => {
                        let m = member(m);
                        let s = f64::from(s) / 4.0;
                        let out = z.add(&m, s, AddFlags::default(), &lim);
                        let old = model.insert(m, s);
                        match old {
                            None => prop_assert_eq!(out, AddOutcome::Added(s)),
                            Some(o) if o == s => prop_assert_eq!(out, AddOutcome::Unchanged(s)),
                            Some(_) => prop_assert_eq!(out, AddOutcome::Updated(s)),
                        }
                    }
                    Op::Incr(m, s) => {
                        let m = member(m);
                        let f = AddFlags { incr: true, ..AddFlags::default() };
                        let by = f64::from(s);
                        z.add(&m, by, f, &lim);
                        *model.entry(m).or_insert(0.0) += by;
                    }
                    Op::Remove(m) => {
                        let m = member(m);
                        prop_assert_eq!(z.remove(&m), model.remove(&m).is_some());
                    }
                    Op::RemoveRanks(a, n) if !model.is_empty() => {
                        let a = a % model.len();
                        let all = sorted(&model);
                        let b = (a + n).min(all.len());
                        prop_assert_eq!(z.remove_ranks(a, b), b - a);
                        for (m, _) in &all[a..b] {
                            model.remove(m);
                        }
                    }
                    Op::RemoveScores(a, b, ex) => {
                        let r = ScoreRange { min: f64::from(a) / 4.0, max: f64::from(b) / 4.0, minex: ex, maxex: false };
                        let (lo, hi) = z.score_span(&r);
                        z.remove_ranks(lo, hi);
                        model.retain(|_, s| !(r.gte_min(*s) && r.lte_max(*s)));
                    }
                    _ => {}
                }
                prop_assert_eq!(z.len(), model.len());
            }
            z.check();
            let all = sorted(&model);
            prop_assert_eq!(contents(&z), all.clone());
            for (i, (m, s)) in all.iter().enumerate() {
                prop_assert_eq!(z.rank(m), Some(i));
                prop_assert_eq!(z.score(m), Some(*s));
                prop_assert_eq!(z.get(i).map(|(a, b)| (a.to_vec(), b)), Some((m.clone(), *s)));
            }
            // Reverse walks from every rank.
            for i in (0..all.len()).step_by(5) {
                let got: Vec<(Vec<u8>, f64)> = z.iter_from(i, true).map(|(m, s)| (m.to_vec(), s)).collect();
                let mut want = all[..=i].to_vec();
                want.reverse();
                prop_assert_eq!(got, want);
            }
            // Score spans against a filter of the model.
            for (a, b) in [(-8.0, 8.0), (0.0, 0.0), (-1.5, 3.25), (f64::NEG_INFINITY, 0.0), (5.0, -5.0)] {
                for (minex, maxex) in [(false, false), (true, false), (false, true), (true, true)] {
                    let r = ScoreRange { min: a, max: b, minex, maxex };
                    let (lo, hi) = z.score_span(&r);
                    let want: Vec<_> = all.iter().filter(|(_, s)| r.gte_min(*s) && r.lte_max(*s)).cloned().collect();
                    prop_assert_eq!(&all[lo..hi.max(lo)], &want[..]);
                }
            }
        }

        /// Lex ranges on sets whose scores are all equal.
        #[test]
        fn lex_ranges_match_model(members in proptest::collection::btree_set("[a-e]{0,3}", 0..200), entries in prop_oneof![Just(0usize), Just(128)], a in "[a-e]{0,2}", b in "[a-e]{0,2}", kinds in (0u8..4, 0u8..4)) {
            let lim = limits(entries);
            let mut z = ZSetValue::for_first_member(&lim, 0);
            for m in &members {
                z.add(m.as_bytes(), 0.0, AddFlags::default(), &lim);
            }
            fn bound(k: u8, s: &str) -> LexBound<'_> {
                match k {
                    0 => LexBound::Incl(s.as_bytes()),
                    1 => LexBound::Excl(s.as_bytes()),
                    2 => LexBound::NegInf,
                    _ => LexBound::PosInf,
                }
            }
            let r = LexRange { min: bound(kinds.0, &a), max: bound(kinds.1, &b) };
            let want: Vec<&String> = members.iter().filter(|m| r.gte_min(m.as_bytes()) && r.lte_max(m.as_bytes())).collect();
            let (lo, hi) = z.lex_span(&r);
            let got: Vec<Vec<u8>> = z.iter_from(lo, false).take(hi - lo).map(|(m, _)| m.to_vec()).collect();
            let want_b: Vec<Vec<u8>> = want.iter().map(|m| m.as_bytes().to_vec()).collect();
            prop_assert_eq!(&got, &want_b);
            match z.lex_start(&r, true) {
                None => prop_assert!(want.is_empty()),
                Some(i) => prop_assert_eq!(z.get(i).map(|(m, _)| m.to_vec()), want_b.last().cloned()),
            }
        }
    }

    #[test]
    fn encodings_convert_at_the_thresholds() {
        let lim = limits(3);
        let mut z = ZSetValue::for_first_member(&lim, 1);
        for (i, m) in ["a", "b", "c"].iter().enumerate() {
            z.add(m.as_bytes(), i as f64, AddFlags::default(), &lim);
        }
        assert_eq!(z.encoding_name(), "listpack");
        z.add(b"d", 9.0, AddFlags::default(), &lim);
        assert_eq!(z.encoding_name(), "skiplist");
        let mut z = ZSetValue::for_first_member(&lim, 1);
        z.add(&[b'x'; 65], 1.0, AddFlags::default(), &lim);
        assert_eq!(z.encoding_name(), "skiplist");
    }

    #[test]
    fn negative_zero_is_kept_only_by_the_large_encoding() {
        let mut small = ZSetValue::for_first_member(&limits(128), 1);
        small.add(b"a", -0.0, AddFlags::default(), &limits(128));
        assert!(small.score(b"a").unwrap().is_sign_positive());
        let mut big = ZSetValue::for_first_member(&limits(0), 1);
        big.add(b"a", -0.0, AddFlags::default(), &limits(0));
        assert!(big.score(b"a").unwrap().is_sign_negative());
    }

    #[test]
    fn pack_scores_print_like_a_listpack() {
        let f = |v: f64| {
            let mut o = Vec::new();
            format_pack_score(v, &mut o);
            String::from_utf8(o).unwrap()
        };
        assert_eq!(f(1e18), "1000000000000000000");
        assert_eq!(f(4611686018427387904.0), "4611686018427387904");
        assert_eq!(f(1e19), "1e+19");
        assert_eq!(f(0.5), "0.5");
        assert_eq!(f(f64::INFINITY), "inf");
    }
}
