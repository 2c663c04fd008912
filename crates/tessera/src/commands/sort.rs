//! SORT and SORT_RO: sorting the elements of a list, set or sorted set
//! numerically or lexicographically, by the elements themselves or by
//! values looked up in other keys (`BY weight_*`, `BY h_*->field`),
//! returning them or values looked up for them (`GET #`, `GET obj_*`),
//! with LIMIT, ASC/DESC, ALPHA, and (SORT only) STORE into a list.
//!
//! Redis's rules kept here, because they are visible to clients:
//! * `BY` with a pattern holding no `*` means "don't sort" (and sticks:
//!   a later `BY w_*` does not undo it); lists and sorted sets then keep
//!   their order (DESC reverses it, LIMIT takes a range of it), sets their
//!   iteration order — except with STORE or from a script (EVAL, FCALL),
//!   where a set is sorted ALPHA so that the stored list, or what the
//!   script goes on to do, is deterministic.
//! * Numeric sorting reads each key with C `strtod`: it must consume the
//!   whole C string (so an embedded NUL ends it, and "" is 0), and
//!   overflow, underflow and NaN are errors ("One or more scores can't be
//!   converted into double"); a missing BY key sorts as 0. Equal scores
//!   are ordered by the elements' bytes.
//! * ALPHA compares C strings (up to a NUL, as `strcoll` in the C locale)
//!   unless STORE is given, where whole binary strings are compared; with
//!   BY, elements whose key is missing sort first. Ties keep the input
//!   order (glibc's qsort is a stable merge sort).
//! * Sorting a sorted set converts it to the skiplist encoding, as Redis
//!   does (even SORT_RO, even BY nosort).

use super::args::{eq_ic, int};
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*, BeginSearch, FindKeys, KeySpecDef};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx};
use crate::keyspace::events::Class;
use crate::keyspace::{Db, Entry};
use crate::types::list::{End, ListValue};
use crate::types::{Limits, Value, ZSetValue};
use crate::util::c_str;
use std::cmp::Ordering;

const SORT_COMPLEXITY: &str = "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).";
const SORT_ACL: u32 = acl::SET | acl::SORTEDSET | acl::LIST | acl::DANGEROUS;
const BY_GET_SPEC: KeySpecDef =
    KeySpecDef::new(RO | ACCESS, BeginSearch::Unknown, FindKeys::Unknown).notes(
        "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort",
    );

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new(
        "sort",
        -2,
        WRITE | DENYOOM,
        "generic",
        "1.0.0",
        "Sorts the elements of a list, set or sorted set, optionally storing the result.",
        sort,
    )
    .acl(SORT_ACL)
    .complexity(SORT_COMPLEXITY)
    .key_specs(&[
        ks(RO | ACCESS, 1, 0, 1),
        BY_GET_SPEC,
        KeySpecDef::new(OW | UPDATE, BeginSearch::Unknown, FindKeys::Unknown).notes(
            "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array",
        ),
    ])
    .args(&[
        a::key("key", 0),
        a::pattern_key("pattern", 1).token("BY").optional(),
        a::block("offset_count", &[a::integer("offset"), a::integer("count")])
            .token("LIMIT")
            .optional(),
        a::pattern_key("pattern", 1)
            .token("GET")
            .optional()
            .multiple()
            .multiple_token(),
        a::oneof("order", &[a::pure("asc", "ASC"), a::pure("desc", "DESC")]).optional(),
        a::pure("sorting", "ALPHA").optional(),
        a::key("destination", 2).token("STORE").optional(),
    ])
    .getkeys(sort_keys)
    .key_flags_by(sort_key_flags),
    CommandSpec::new(
        "sort_ro",
        -2,
        READONLY,
        "generic",
        "7.0.0",
        "Returns the sorted elements of a list, set or sorted set (read-only SORT).",
        sort_ro,
    )
    .acl(SORT_ACL)
    .complexity(SORT_COMPLEXITY)
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1), BY_GET_SPEC])
    .args(&[
        a::key("key", 0),
        a::pattern_key("pattern", 1).token("BY").optional(),
        a::block("offset_count", &[a::integer("offset"), a::integer("count")])
            .token("LIMIT")
            .optional(),
        a::pattern_key("pattern", 1)
            .token("GET")
            .optional()
            .multiple()
            .multiple_token(),
        a::oneof("order", &[a::pure("asc", "ASC"), a::pure("desc", "DESC")]).optional(),
        a::pure("sorting", "ALPHA").optional(),
    ]),
];

/// The parsed options.
struct Opts<'a> {
    desc: bool,
    alpha: bool,
    limit_start: i64,
    limit_count: i64,
    by: Option<&'a [u8]>,
    dontsort: bool,
    gets: Vec<&'a [u8]>,
    store: Option<&'a [u8]>,
}

fn parse<'a>(args: &[&'a [u8]], readonly: bool) -> Result<Opts<'a>, CmdError> {
    let mut o = Opts {
        desc: false,
        alpha: false,
        limit_start: 0,
        limit_count: -1,
        by: None,
        dontsort: false,
        gets: Vec::new(),
        store: None,
    };
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let w = args[j];
        if eq_ic(w, "asc") {
            o.desc = false;
        } else if eq_ic(w, "desc") {
            o.desc = true;
        } else if eq_ic(w, "alpha") {
            o.alpha = true;
        } else if eq_ic(w, "limit") && left >= 2 {
            o.limit_start = int(args[j + 1])?;
            o.limit_count = int(args[j + 2])?;
            j += 2;
        } else if !readonly && eq_ic(w, "store") && left >= 1 {
            o.store = Some(args[j + 1]);
            j += 1;
        } else if eq_ic(w, "by") && left >= 1 {
            let p = args[j + 1];
            o.by = Some(p);
            // A pattern without `*` names no keys: don't sort. Once set,
            // this stays (Redis never clears it).
            if memchr::memchr(b'*', c_str(p)).is_none() {
                o.dontsort = true;
            }
            j += 1;
        } else if eq_ic(w, "get") && left >= 1 {
            o.gets.push(args[j + 1]);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// Whether a GET/BY pattern reads other keys (`#` and patterns without
/// `*` do not).
fn pattern_reads_keys(p: &[u8]) -> bool {
    let c = c_str(p);
    c != b"#" && memchr::memchr(b'*', c).is_some()
}

/// What a pattern yields for one element: `#` the element itself, else
/// the string at the key made by putting the element in place of the first
/// `*`, or the field of the hash there (`key_*->field`). None when the key
/// is missing or of the wrong type, or the field is missing.
fn lookup_by_pattern(db: &mut Db, pattern: &[u8], subst: &[u8]) -> Option<Vec<u8>> {
    let cpat = c_str(pattern);
    if cpat == b"#" {
        return Some(subst.to_vec());
    }
    let star = memchr::memchr(b'*', cpat)?;
    // `->` after the `*`, with something after it, selects a hash field;
    // the field is the rest of the whole pattern.
    let field_at = memchr::memmem::find(&cpat[star + 1..], b"->")
        .map(|f| star + 1 + f)
        .filter(|&f| f + 2 < cpat.len());
    let key_end = field_at.unwrap_or(pattern.len());
    let mut key = Vec::with_capacity(key_end + subst.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(subst);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    let e = db.get_read(&key)?;
    match field_at {
        Some(f) => hash_field(&e.value, &pattern[f + 2..]),
        None => match &e.value {
            Value::Str(s) => Some(s.to_vec()),
            _ => None,
        },
    }
}

/// C `strtod` as SORT applies it: the whole C string must be consumed, and
/// overflow/underflow (ERANGE) and NaN are errors.
fn sort_score(b: &[u8]) -> Option<f64> {
    let c = c_str(b);
    let mut buf = Vec::with_capacity(c.len() + 1);
    buf.extend_from_slice(c);
    buf.push(0);
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: `buf` is NUL-terminated; strtod reads up to the NUL and
    // stores in `end` a pointer into `buf`. errno is thread-local.
    let (v, consumed_all, erange) = unsafe {
        *libc::__errno_location() = 0;
        let v = libc::strtod(buf.as_ptr().cast(), &mut end);
        let erange = *libc::__errno_location() == libc::ERANGE;
        (v, !end.is_null() && *end == 0, erange)
    };
    (consumed_all && !erange && !v.is_nan()).then_some(v)
}

/// One element to sort with what it sorts by.
struct Item {
    obj: Vec<u8>,
    score: f64,
    /// The BY value for ALPHA with BY (None: its key is missing).
    cmp: Option<Vec<u8>>,
}

/// SORT's keys for COMMAND GETKEYS (and later EXEC locking): the sorted
/// key and the last STORE destination, skipping the arguments of LIMIT, GET
/// and BY the way Redis scans them.
fn sort_keys(args: &[&[u8]]) -> Result<Vec<usize>, super::meta::InvalidKeyArgs> {
    let mut keys = vec![1];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let a = args[i];
        if a.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"store") && i + 1 < args.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    keys.extend(store);
    Ok(keys)
}

fn sort(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    sort_generic(ctx, args, false)
}

fn sort_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    sort_generic(ctx, args, true)
}

/// What the sort produced, for the reply after the locks are gone.
enum Outcome {
    Reply,
    Stored(usize),
}

fn sort_generic(ctx: &mut Ctx, args: &[&[u8]], readonly: bool) -> CmdResult {
    let o = parse(args, readonly)?;
    let key = args[1];
    // BY and GET patterns read keys named by the data, which cannot be
    // known before the sorted key is read: take every shard (atomic over
    // the whole keyspace, deadlock-free since every multi-shard lock goes
    // in ascending order). Without such patterns only the sorted key and
    // the STORE destination are touched.
    let reads_others = (!o.dontsort && o.by.is_some_and(pattern_reads_keys))
        || o.gets.iter().any(|g| pattern_reads_keys(g));
    let limits = ctx.limits();
    let (ka, out) = ctx.split();
    let mut run = |db: &mut Db| run_sort(db, key, &o, &limits, out);
    let outcome = if reads_others {
        ka.with_all(|locks| {
            let mut db = locks.db(ka.db, ka.now_ms, ka.touch);
            run(&mut db)
        })
    } else {
        let keys = std::iter::once(key).chain(o.store);
        ka.with_keys(keys, run)
    }?;
    if let (Outcome::Stored(n), Some(dst)) = (outcome, o.store) {
        ctx.out.int(n as i64);
        if n > 0 {
            ctx.signal_ready(dst);
        }
    }
    Ok(())
}

fn run_sort(
    db: &mut Db,
    key: &[u8],
    o: &Opts,
    limits: &Limits,
    out: &mut tessera_resp::encode::ReplyBuf,
) -> Result<Outcome, CmdError> {
    zset_to_skiplist(db, key, limits);
    let mut dontsort = o.dontsort;
    let mut alpha = o.alpha;
    let mut by = o.by;
    let desc = o.desc;

    // Load the elements (and the range for the "don't sort" shortcuts).
    let mut elems: Vec<Vec<u8>>;
    let (mut start, mut end);
    {
        let entry = db.get_read(key);
        let value = match entry {
            None => None,
            Some(Entry { value, .. }) => match value {
                Value::List(_) | Value::Set(_) | Value::ZSet(_) => Some(value),
                _ => return Err(CmdError::WrongType),
            },
        };
        if matches!(value, Some(Value::Set(_)))
            && dontsort
            && (o.store.is_some() || crate::scripting::bridge::in_script())
        {
            // A set has no order of its own: make the stored list, or the
            // script's result, deterministic.
            dontsort = false;
            alpha = true;
            by = None;
        }
        let len = match &value {
            None => 0,
            Some(Value::List(l)) => l.len(),
            Some(Value::Set(s)) => s.len(),
            Some(Value::ZSet(z)) => z.len(),
            Some(_) => 0,
        } as i64;
        start = o.limit_start.clamp(0, len);
        let count = o.limit_count.clamp(-1, len);
        end = if count < 0 { len } else { start + count };
        if end > len {
            end = len;
        }
        let take = (end - start) as usize;
        elems = match value {
            None => Vec::new(),
            Some(Value::List(l)) if dontsort => {
                let v: Vec<Vec<u8>> = if desc {
                    let from = (len - start - 1).max(0) as usize;
                    l.iter_rev_from(from)
                        .take(take)
                        .map(|e| e.to_vec())
                        .collect()
                } else {
                    l.iter_from(start as usize)
                        .take(take)
                        .map(|e| e.to_vec())
                        .collect()
                };
                end -= start;
                start = 0;
                v
            }
            Some(Value::List(l)) => l.iter().map(|e| e.to_vec()).collect(),
            Some(Value::Set(s)) => set_members(s),
            Some(Value::ZSet(z)) if dontsort => {
                let v = zset_range(z, start as usize, take, desc);
                end -= start;
                start = 0;
                v
            }
            Some(Value::ZSet(z)) => zset_members(z),
            Some(_) => Vec::new(),
        };
    }

    // Compute what each element sorts by, then sort.
    let mut conversion_error = false;
    if !dontsort {
        let mut items: Vec<Item> = Vec::with_capacity(elems.len());
        for obj in elems.drain(..) {
            let mut it = Item {
                obj,
                score: 0.0,
                cmp: None,
            };
            let byval = match by {
                Some(p) => lookup_by_pattern(db, p, &it.obj),
                None => None,
            };
            if alpha {
                it.cmp = byval;
            } else {
                let v = match (&byval, by) {
                    (Some(b), _) => Some(b.as_slice()),
                    (None, None) => Some(it.obj.as_slice()),
                    (None, Some(_)) => None,
                };
                if let Some(v) = v {
                    match sort_score(v) {
                        Some(s) => it.score = s,
                        None => conversion_error = true,
                    }
                }
            }
            items.push(it);
        }
        if !conversion_error {
            let bypattern = by.is_some();
            let store = o.store.is_some();
            items.sort_by(|x, y| {
                let c = compare(x, y, alpha, bypattern, store);
                if desc {
                    c.reverse()
                } else {
                    c
                }
            });
        }
        elems = items.into_iter().map(|i| i.obj).collect();
    }
    if conversion_error {
        return Err(CmdError::msg(
            "ERR One or more scores can't be converted into double",
        ));
    }

    let (start, end) = (start as usize, end as usize);
    let picked = &elems[start.min(elems.len())..end.min(elems.len())];
    let per = o.gets.len().max(1);
    match o.store {
        None => {
            out.array(per * picked.len());
            for e in picked {
                if o.gets.is_empty() {
                    out.bulk(e);
                }
                for g in &o.gets {
                    match lookup_by_pattern(db, g, e) {
                        Some(v) => out.bulk(&v),
                        None => out.null(),
                    }
                }
            }
            Ok(Outcome::Reply)
        }
        Some(dst) => {
            let mut list = ListValue::new();
            for e in picked {
                if o.gets.is_empty() {
                    list.push(End::Tail, e);
                }
                for g in &o.gets {
                    let v = lookup_by_pattern(db, g, e).unwrap_or_default();
                    list.push(End::Tail, &v);
                }
            }
            let n = list.len();
            if n > 0 {
                db.set(dst, Value::List(list));
                db.changed(dst, Class::LIST, "sortstore");
            } else if db.remove_without_expiring(dst).is_some() {
                db.changed(dst, Class::GENERIC, "del");
            }
            Ok(Outcome::Stored(n))
        }
    }
}

/// Redis's sortCompare (before DESC reverses it).
fn compare(x: &Item, y: &Item, alpha: bool, bypattern: bool, store: bool) -> Ordering {
    if !alpha {
        return match x.score.partial_cmp(&y.score) {
            Some(Ordering::Equal) | None => x.obj.cmp(&y.obj),
            Some(c) => c,
        };
    }
    if bypattern {
        return match (&x.cmp, &y.cmp) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(a), Some(b)) if store => a.cmp(b),
            (Some(a), Some(b)) => c_str(a).cmp(c_str(b)),
        };
    }
    if store {
        x.obj.cmp(&y.obj)
    } else {
        c_str(&x.obj).cmp(c_str(&y.obj))
    }
}

// ---- access to the other types ------------------------------------------------------------

/// A set's members in its iteration order (ascending for an intset, as in
/// Redis).
fn set_members(s: &crate::types::SetValue) -> Vec<Vec<u8>> {
    s.iter().map(|m| m.to_vec()).collect()
}

/// A sorted set's members (in score order; Redis walks its dict here, so
/// no order is promised before sorting).
fn zset_members(z: &ZSetValue) -> Vec<Vec<u8>> {
    z.iter().map(|(m, _)| m.to_vec()).collect()
}

/// `take` members of a sorted set from rank `start`, counted from the
/// lowest score (from the highest with `desc`), in that direction.
fn zset_range(z: &ZSetValue, start: usize, take: usize, desc: bool) -> Vec<Vec<u8>> {
    if take == 0 {
        return Vec::new();
    }
    let from = if desc { z.len() - 1 - start } else { start };
    z.iter_from(from, desc)
        .take(take)
        .map(|(m, _)| m.to_vec())
        .collect()
}

/// A hash field's value, None if the value is not a hash or lacks it.
fn hash_field(v: &Value, field: &[u8]) -> Option<Vec<u8>> {
    match v {
        Value::Hash(h) => h.get(field).map(|v| v.to_vec()),
        _ => None,
    }
}

/// Redis converts a sorted set it sorts to the skiplist encoding, for
/// good (visible in OBJECT ENCODING): rebuild a compact one as large.
fn zset_to_skiplist(db: &mut Db, key: &[u8], limits: &Limits) {
    if let Some(Entry {
        value: Value::ZSet(z),
        ..
    }) = db.get_write(key)
    {
        if z.is_pack() {
            let items: Vec<(Vec<u8>, f64)> = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
            let refs: Vec<(&[u8], f64)> = items.iter().map(|(m, s)| (m.as_slice(), *s)).collect();
            let big = Limits {
                zset_max_listpack_entries: 0,
                ..*limits
            };
            **z = ZSetValue::from_sorted(&refs, &big);
        }
    }
}

/// SORT reads its source and overwrites its STORE destination (Redis's
/// sortGetKeys).
fn sort_key_flags(_args: &[&[u8]], index: usize) -> u16 {
    if index == 1 {
        RO | ACCESS
    } else {
        OW | UPDATE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_follow_strtod() {
        assert_eq!(sort_score(b"1.5"), Some(1.5));
        assert_eq!(sort_score(b" 2"), Some(2.0));
        assert_eq!(sort_score(b""), Some(0.0));
        assert_eq!(sort_score(b"3\0junk"), Some(3.0));
        assert_eq!(sort_score(b"0x10"), Some(16.0));
        assert_eq!(sort_score(b"inf"), Some(f64::INFINITY));
        assert_eq!(sort_score(b"2 "), None);
        assert_eq!(sort_score(b"abc"), None);
        assert_eq!(sort_score(b"nan"), None);
        assert_eq!(sort_score(b"1e400"), None);
        assert_eq!(sort_score(b"1e-400"), None);
    }

    #[test]
    fn pattern_lookups_need_a_star() {
        assert!(!pattern_reads_keys(b"#"));
        assert!(!pattern_reads_keys(b"nosort"));
        assert!(pattern_reads_keys(b"w_*"));
        assert!(!pattern_reads_keys(b"w_\0*"));
        assert!(pattern_reads_keys(b"h_*->f"));
    }
}
