//! Set commands: SADD and friends, random picks and pops, SMOVE, the
//! algebra (SINTER/SUNION/SDIFF, their STORE forms, SINTERCARD), SSCAN.
//!
//! Multi-key commands lock every key's shard at once (`with_keys`), so they
//! are atomic across shards. They look their sources up one at a time
//! (first checking every type, as Redis does, so WRONGTYPE wins over an
//! empty result), copy the members they need, and build a STORE result the
//! way Redis does — starting from an empty intset, so the destination gets
//! the encoding redis-server would give it — before replacing (or, when
//! empty, deleting) the destination.

use rand::Rng;

use super::args::eq_ic;
use super::flags::*;
use super::hash::{
    cursor_reply, parse_scan_cursor, parse_scan_opts, random_count, random_count_too_big,
    MAX_RANDOM_REPLY, SCAN_COMPLEXITY,
};
use super::meta::{arg as a, ks, ksflags::*, BeginSearch, FindKeys, KeySpecDef};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::events::Class;
use crate::keyspace::{Db, Entry};
use crate::types::set::{Member, OwnedMember};
use crate::types::{Limits, SetValue, Value};
use tessera_resp::encode::ReplyBuf;

/// A set command: group `set`, ACL category `@set`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "set", since, summary, handler).acl(acl::SET)
}

const INTER_COMPLEXITY: &str =
    "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.";
const UNION_COMPLEXITY: &str = "O(N) where N is the total number of elements in all given sets.";

pub static COMMANDS: &[CommandSpec] = &[
    cmd("sadd", -3, WRITE | DENYOOM | FAST, "1.0.0", "Adds members to a set, creating the key if needed.", sadd)
        .complexity(
            "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        )
        .key_specs(&[ks(RW | INSERT, 1, 0, 1)])
        .history(&[("2.4.0", "Accepts multiple `member` arguments.")])
        .args(&[a::key("key", 0), a::string("member").multiple()]),
    cmd("srem", -3, WRITE | FAST, "1.0.0", "Removes members from a set; deletes the set when none is left.", srem)
        .complexity("O(N) where N is the number of members to be removed.")
        .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
        .history(&[("2.4.0", "Accepts multiple `member` arguments.")])
        .args(&[a::key("key", 0), a::string("member").multiple()]),
    cmd("scard", 2, READONLY | FAST, "1.0.0", "Returns the number of members in a set.", scard)
        .key_specs(&[ks(RO, 1, 0, 1)])
        .args(&[a::key("key", 0)]),
    cmd("sismember", 3, READONLY | FAST, "1.0.0", "Tells whether a value is a member of a set.", sismember)
        .key_specs(&[ks(RO, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("member")]),
    cmd("smismember", -3, READONLY | FAST, "6.2.0", "Tells, for each of several values, whether it is a member of a set.", smismember)
        .complexity("O(N) where N is the number of elements being checked for membership")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("member").multiple()]),
    cmd("smembers", 2, READONLY, "1.0.0", "Returns all members of a set.", smembers)
        .complexity("O(N) where N is the set cardinality.")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .tips(&["nondeterministic_output_order"])
        .args(&[a::key("key", 0)]),
    cmd("srandmember", -2, READONLY, "1.0.0", "Returns random members of a set, without removing them.", srandmember)
        .complexity(
            "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .tips(&["nondeterministic_output"])
        .history(&[("2.6.0", "Added the optional `count` argument.")])
        .args(&[a::key("key", 0), a::integer("count").since("2.6.0").optional()]),
    cmd("spop", -2, WRITE | FAST | REWRITES_EFFECTS, "1.0.0", "Removes and returns random members of a set.", spop)
        .complexity(
            "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
        )
        .key_specs(&[ks(RW | ACCESS | DELETE, 1, 0, 1)])
        .tips(&["nondeterministic_output"])
        .history(&[("3.2.0", "Added the `count` argument.")])
        .args(&[a::key("key", 0), a::integer("count").since("3.2.0").optional()]),
    cmd("smove", 4, WRITE | FAST, "1.0.0", "Moves a member from one set to another.", smove)
        .key_specs(&[ks(RW | ACCESS | DELETE, 1, 0, 1), ks(RW | INSERT, 2, 0, 1)])
        .args(&[a::key("source", 0), a::key("destination", 1), a::string("member")]),
    cmd("sinter", -2, READONLY, "1.0.0", "Returns the intersection of several sets.", sinter)
        .complexity(INTER_COMPLEXITY)
        .key_specs(&[ks(RO | ACCESS, 1, -1, 1)])
        .tips(&["nondeterministic_output_order"])
        .args(&[a::key("key", 0).multiple()]),
    cmd("sintercard", -3, READONLY, "7.0.0", "Returns the number of members in the intersection of several sets.", sintercard)
        .complexity(INTER_COMPLEXITY)
        .key_specs(&[KeySpecDef::new(
            RO | ACCESS,
            BeginSearch::Index(1),
            FindKeys::Keynum {
                keynumidx: 0,
                firstkey: 1,
                keystep: 1,
            },
        )])
        .args(&[
            a::integer("numkeys"),
            a::key("key", 0).multiple(),
            a::integer("limit").token("LIMIT").optional(),
        ]),
    cmd("sinterstore", -3, WRITE | DENYOOM, "1.0.0", "Stores the intersection of several sets in a key.", sinterstore)
        .complexity(INTER_COMPLEXITY)
        .key_specs(&[ks(RW | UPDATE, 1, 0, 1), ks(RO | ACCESS, 2, -1, 1)])
        .args(&[a::key("destination", 0), a::key("key", 1).multiple()]),
    cmd("sunion", -2, READONLY, "1.0.0", "Returns the union of several sets.", sunion)
        .complexity(UNION_COMPLEXITY)
        .key_specs(&[ks(RO | ACCESS, 1, -1, 1)])
        .tips(&["nondeterministic_output_order"])
        .args(&[a::key("key", 0).multiple()]),
    cmd("sunionstore", -3, WRITE | DENYOOM, "1.0.0", "Stores the union of several sets in a key.", sunionstore)
        .complexity(UNION_COMPLEXITY)
        .key_specs(&[ks(OW | UPDATE, 1, 0, 1), ks(RO | ACCESS, 2, -1, 1)])
        .args(&[a::key("destination", 0), a::key("key", 1).multiple()]),
    cmd("sdiff", -2, READONLY, "1.0.0", "Returns the difference of several sets.", sdiff)
        .complexity(UNION_COMPLEXITY)
        .key_specs(&[ks(RO | ACCESS, 1, -1, 1)])
        .tips(&["nondeterministic_output_order"])
        .args(&[a::key("key", 0).multiple()]),
    cmd("sdiffstore", -3, WRITE | DENYOOM, "1.0.0", "Stores the difference of several sets in a key.", sdiffstore)
        .complexity(UNION_COMPLEXITY)
        .key_specs(&[ks(OW | UPDATE, 1, 0, 1), ks(RO | ACCESS, 2, -1, 1)])
        .args(&[a::key("destination", 0), a::key("key", 1).multiple()]),
    cmd("sscan", -3, READONLY, "2.8.0", "Iterates over the members of a set.", sscan)
        .complexity(SCAN_COMPLEXITY)
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .tips(&["nondeterministic_output"])
        .args(&[
            a::key("key", 0),
            a::integer("cursor"),
            a::pattern("pattern").token("MATCH").optional(),
            a::integer("count").token("COUNT").optional(),
        ]),
];

// ---- lookups ---------------------------------------------------------------------------------

/// The set at a key, WRONGTYPE if it holds something else.
#[inline]
fn as_set(e: Option<&mut Entry>) -> Result<Option<&mut SetValue>, CmdError> {
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::Set(s),
            ..
        }) => Ok(Some(s)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// The set at a key already looked up (and so expired if due) by this
/// command: a plain peek that neither counts nor touches again.
fn peek_set<'d>(db: &'d mut Db, key: &[u8]) -> Option<&'d SetValue> {
    match db.table(key).peek(key) {
        Some(Entry {
            value: Value::Set(s),
            ..
        }) => Some(s),
        _ => None,
    }
}

/// Writes one member as a bulk string.
#[inline]
fn bulk_member(out: &mut ReplyBuf, m: Member) {
    match m {
        Member::Int(n) => out.bulk_int(n),
        Member::Str(b) => out.bulk(b),
    }
}

// ---- single-key commands ---------------------------------------------------------------------

fn sadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let members = &args[2..];
    let limits = ctx.limits();
    let added = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        let mut n = 0;
        match as_set(db.get_write(key))? {
            Some(s) => {
                for m in members {
                    n += s.add(m, &limits) as i64;
                }
            }
            None => {
                let mut s = SetValue::new_for(members[0]);
                for m in members {
                    n += s.add(m, &limits) as i64;
                }
                db.set(key, Value::Set(Box::new(s)));
            }
        }
        if n > 0 {
            db.changed(key, Class::SET, "sadd");
        }
        Ok(n)
    })?;
    ctx.out.int(added);
    if added > 0 {
        ctx.signal_ready(key);
    }
    Ok(())
}

fn srem(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let removed = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        let Some(s) = as_set(db.get_write(key))? else {
            return Ok(0);
        };
        let mut n = 0;
        for m in &args[2..] {
            if s.remove(m) {
                n += 1;
                if s.is_empty() {
                    break;
                }
            }
        }
        let emptied = s.is_empty();
        if n > 0 {
            db.changed(key, Class::SET, "srem");
        }
        if emptied {
            db.remove(key);
            db.notify(Class::GENERIC, "del", key);
        }
        Ok(n)
    })?;
    ctx.out.int(removed);
    Ok(())
}

fn scard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let n = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        Ok(as_set(db.get_read(key))?.map_or(0, |s| s.len()))
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

fn sismember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, member) = (args[1], args[2]);
    let found = ctx.with_key(key, |db| -> Result<bool, CmdError> {
        Ok(as_set(db.get_read(key))?.is_some_and(|s| s.contains(member)))
    })?;
    ctx.out.int(found as i64);
    Ok(())
}

fn smismember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let members = &args[2..];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let s = as_set(db.get_read(key))?;
        out.array(members.len());
        for m in members {
            out.int(s.as_ref().is_some_and(|s| s.contains(m)) as i64);
        }
        Ok(())
    })
}

fn smembers(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        match as_set(db.get_read(key))? {
            Some(s) => {
                out.set(s.len());
                for m in s.iter() {
                    bulk_member(out, m);
                }
            }
            None => out.set(0),
        }
        Ok(())
    })
}

fn srandmember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let count = match args.len() {
        2 => None,
        3 => Some(random_count(args[2])?),
        _ => return Err(CmdError::Syntax),
    };
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let s = as_set(db.get_read(key))?;
        let mut rng = rand::thread_rng();
        let Some(count) = count else {
            match s.filter(|s| !s.is_empty()) {
                Some(s) => match s.get_index(rng.gen_range(0..s.len())) {
                    Some(m) => bulk_member(out, m),
                    None => out.null(),
                },
                None => out.null(),
            }
            return Ok(());
        };
        let Some(s) = s.filter(|s| !s.is_empty() && count != 0) else {
            out.array(0);
            return Ok(());
        };
        let len = s.len();
        if count < 0 {
            // Repeats allowed.
            if count.unsigned_abs() > MAX_RANDOM_REPLY {
                return Err(random_count_too_big());
            }
            let n = count.unsigned_abs() as usize;
            out.array(n);
            for _ in 0..n {
                if let Some(m) = s.get_index(rng.gen_range(0..len)) {
                    bulk_member(out, m);
                }
            }
        } else if count as u64 >= len as u64 {
            out.array(len);
            for m in s.iter() {
                bulk_member(out, m);
            }
        } else {
            let n = count as usize;
            out.array(n);
            for i in rand::seq::index::sample(&mut rng, len, n) {
                if let Some(m) = s.get_index(i) {
                    bulk_member(out, m);
                }
            }
        }
        Ok(())
    })
}

fn spop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let count = match args.len() {
        2 => None,
        3 => {
            let msg = "ERR value is out of range, must be positive";
            match crate::util::numbers::parse_i64(args[2]) {
                Some(n) if n >= 0 => Some(n as u64),
                _ => return Err(CmdError::msg(msg)),
            }
        }
        _ => return Err(CmdError::Syntax),
    };
    let propagating = ctx.propagating();
    let (ka, out) = ctx.split();
    // What Redis propagates instead of SPOP (which replays randomly): SREM
    // of the members popped, or DEL of a set popped whole.
    let mut popped: Vec<Vec<u8>> = Vec::new();
    let whole = ka.with_key(key, |db| {
        let dbi = db.db;
        let mut note = |m: &Member| {
            if propagating {
                popped.push(match m {
                    Member::Int(n) => itoa::Buffer::new().format(*n).as_bytes().to_vec(),
                    Member::Str(b) => b.to_vec(),
                });
            }
        };
        let Some(s) = as_set(db.get_write(key))? else {
            match count {
                None => out.null(),
                Some(_) => out.set(0),
            }
            return Ok(false);
        };
        let len = s.len();
        let mut rng = rand::thread_rng();
        match count {
            None => {
                let mut at = [rng.gen_range(0..len.max(1))];
                s.remove_indices(&mut at, |m| {
                    note(&m);
                    bulk_member(out, m)
                });
            }
            Some(0) => {
                out.set(0);
                return Ok(false);
            }
            Some(c) if c >= len as u64 => {
                // Everything goes: reply the members, then drop the key.
                out.set(len);
                for m in s.iter() {
                    bulk_member(out, m);
                }
                db.notify(Class::SET, "spop", key);
                db.remove(key);
                db.changed(key, Class::GENERIC, "del");
                return Ok(true);
            }
            Some(c) => {
                let mut at = rand::seq::index::sample(&mut rng, len, c as usize).into_vec();
                out.set(at.len());
                s.remove_indices(&mut at, |m| {
                    note(&m);
                    bulk_member(out, m)
                });
                if propagating {
                    // One SREM per member, each in order under the lock.
                    for m in popped.drain(..) {
                        crate::keyspace::effects::push(
                            dbi,
                            vec![b"SREM".to_vec(), key.to_vec(), m],
                            crate::keyspace::effects::target::ALL,
                        );
                    }
                }
            }
        }
        let emptied = s.is_empty();
        db.changed(key, Class::SET, "spop");
        if emptied {
            db.remove(key);
            db.notify(Class::GENERIC, "del", key);
        }
        Ok(false)
    })?;
    if propagating {
        if whole {
            ctx.propagate_as(super::argv(&[b"DEL", key]));
        } else if let [member] = popped.as_slice() {
            ctx.propagate_as(super::argv(&[b"SREM", key, member]));
        } else {
            ctx.no_propagate();
        }
    }
    Ok(())
}

fn sscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let cursor = parse_scan_cursor(args[2])?;
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(s) = as_set(db.get_read(key))? else {
            cursor_reply(out, 0);
            out.array(0);
            return Ok(());
        };
        let opts = parse_scan_opts(&args[3..])?;
        let mut items: Vec<Member> = Vec::new();
        let next = s.scan(cursor, opts.count, |m| {
            if opts.pattern.is_none() || m.with_bytes(|b| opts.matches(b)) {
                items.push(m);
            }
        });
        cursor_reply(out, next);
        out.array(items.len());
        for m in items {
            bulk_member(out, m);
        }
        Ok(())
    })
}

fn smove(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (src, dst, member) = (args[1], args[2], args[3]);
    let limits = ctx.limits();
    let moved = ctx.with_keys([src, dst], |db| -> Result<bool, CmdError> {
        // Redis looks both keys up first (so an expired destination is
        // deleted, and propagated, whatever follows); a missing source
        // answers 0 before the destination's type is looked at; then both
        // types are checked.
        let src_found = as_set(db.get_write(src)).map(|s| s.is_some());
        db.get_write(dst);
        if !src_found? {
            return Ok(false);
        }
        as_set(db.get_write(dst))?;
        if src == dst {
            return Ok(as_set(db.get_write(src))?.is_some_and(|s| s.contains(member)));
        }
        let Some(s) = as_set(db.get_write(src))? else {
            return Ok(false);
        };
        if !s.remove(member) {
            return Ok(false);
        }
        let emptied = s.is_empty();
        db.notify(Class::SET, "srem", src);
        if emptied {
            db.remove(src);
            db.notify(Class::GENERIC, "del", src);
        }
        db.signal_modified(src);
        let added = match as_set(db.get_write(dst))? {
            Some(d) => d.add(member, &limits),
            None => {
                let mut d = SetValue::new_for(member);
                d.add(member, &limits);
                db.set(dst, Value::Set(Box::new(d)));
                true
            }
        };
        if added {
            db.changed(dst, Class::SET, "sadd");
        }
        Ok(true)
    })?;
    ctx.out.int(moved as i64);
    if moved {
        ctx.signal_ready(dst);
    }
    Ok(())
}

// ---- set algebra -----------------------------------------------------------------------------

/// Checks every source key, in order (the first WRONGTYPE wins): the size
/// of each set, None for a missing key. Redis 7.0 looks the sources up as
/// reads for the STORE forms too (hits, misses and "keymiss" count).
fn source_sizes(db: &mut Db, keys: &[&[u8]]) -> Result<Vec<Option<usize>>, CmdError> {
    keys.iter()
        .map(|k| Ok(as_set(db.get_read(k))?.map(|s| s.len())))
        .collect()
}

/// The intersection of the sets at `keys` (all present), smallest first:
/// the smallest set's members, filtered by each other set in turn. Stops
/// early once nothing is left.
fn intersect(db: &mut Db, keys: &[&[u8]], sizes: &[Option<usize>]) -> Vec<OwnedMember> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| sizes[i].unwrap_or(0));
    let mut result: Vec<OwnedMember> = match peek_set(db, keys[order[0]]) {
        Some(s) => s.iter().map(|m| m.to_owned()).collect(),
        None => return Vec::new(),
    };
    for &i in &order[1..] {
        if result.is_empty() {
            break;
        }
        match peek_set(db, keys[i]) {
            Some(s) => result.retain(|m| s.contains_member(m.as_member())),
            None => result.clear(),
        }
    }
    result
}

/// What a set-algebra command computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The result of `op` over `keys` as a set built the way Redis builds a
/// STORE destination (from an empty intset, member by member).
fn compute(
    db: &mut Db,
    op: Op,
    keys: &[&[u8]],
    sizes: &[Option<usize>],
    limits: &Limits,
) -> SetValue {
    let mut result = SetValue::new_intset();
    match op {
        Op::Inter => {
            if sizes.iter().all(|s| s.is_some()) {
                for m in intersect(db, keys, sizes) {
                    result.add_member(m.as_member(), limits);
                }
            }
        }
        Op::Union => {
            for k in keys {
                if let Some(s) = peek_set(db, k) {
                    for m in s.iter() {
                        result.add_member(m, limits);
                    }
                }
            }
        }
        Op::Diff => {
            let Some(first) = sizes[0] else {
                return result;
            };
            // The first set named again: nothing can be left.
            if keys[1..].contains(&keys[0]) {
                return result;
            }
            // Redis picks one of two algorithms by estimated work, and
            // they leave the destination in different encodings (the
            // second adds the whole first set before removing), so the
            // same choice is made here.
            let present = sizes.iter().flatten().count() as u64;
            let algo_one = first as u64 * present / 2;
            let algo_two: u64 = sizes.iter().flatten().map(|&n| n as u64).sum();
            if algo_one <= algo_two {
                let mut left: Vec<OwnedMember> = match peek_set(db, keys[0]) {
                    Some(s) => s.iter().map(|m| m.to_owned()).collect(),
                    None => Vec::new(),
                };
                for k in &keys[1..] {
                    if left.is_empty() {
                        break;
                    }
                    if let Some(s) = peek_set(db, k) {
                        left.retain(|m| !s.contains_member(m.as_member()));
                    }
                }
                for m in left {
                    result.add_member(m.as_member(), limits);
                }
            } else {
                if let Some(s) = peek_set(db, keys[0]) {
                    for m in s.iter() {
                        result.add_member(m, limits);
                    }
                }
                for k in &keys[1..] {
                    if result.is_empty() {
                        break;
                    }
                    if let Some(s) = peek_set(db, k) {
                        for m in s.iter() {
                            result.remove_member(m);
                        }
                    }
                }
            }
        }
    }
    result
}

/// SINTER / SUNION / SDIFF.
fn algebra(ctx: &mut Ctx, keys: &[&[u8]], op: Op) -> CmdResult {
    let limits = ctx.limits();
    let (ka, out) = ctx.split();
    ka.with_keys(keys.iter().copied(), |db| {
        let sizes = source_sizes(db, keys)?;
        if op == Op::Inter {
            // Replied straight from the filtered members of the smallest set.
            let members = if sizes.iter().all(|s| s.is_some()) {
                intersect(db, keys, &sizes)
            } else {
                Vec::new()
            };
            out.set(members.len());
            for m in &members {
                bulk_member(out, m.as_member());
            }
            return Ok(());
        }
        let result = compute(db, op, keys, &sizes, &limits);
        out.set(result.len());
        for m in result.iter() {
            bulk_member(out, m);
        }
        Ok(())
    })
}

/// SINTERSTORE / SUNIONSTORE / SDIFFSTORE: replaces `dst` with the result
/// (deleting it when the result is empty) and replies its size.
fn algebra_store(ctx: &mut Ctx, dst: &[u8], keys: &[&[u8]], op: Op) -> CmdResult {
    let limits = ctx.limits();
    let n = ctx.with_keys(std::iter::once(dst).chain(keys.iter().copied()), |db| {
        let sizes = source_sizes(db, keys)?;
        let result = compute(db, op, keys, &sizes, &limits);
        let n = result.len();
        if n == 0 {
            if db.remove_without_expiring(dst).is_some() {
                db.changed(dst, Class::GENERIC, "del");
            }
        } else {
            db.set(dst, Value::Set(Box::new(result)));
            let event = match op {
                Op::Inter => "sinterstore",
                Op::Union => "sunionstore",
                Op::Diff => "sdiffstore",
            };
            db.changed(dst, Class::SET, event);
        }
        Ok::<usize, CmdError>(n)
    })?;
    ctx.out.int(n as i64);
    if n > 0 {
        ctx.signal_ready(dst);
    }
    Ok(())
}

fn sinter(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    algebra(ctx, &args[1..], Op::Inter)
}

fn sunion(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    algebra(ctx, &args[1..], Op::Union)
}

fn sdiff(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    algebra(ctx, &args[1..], Op::Diff)
}

fn sinterstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    algebra_store(ctx, args[1], &args[2..], Op::Inter)
}

fn sunionstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    algebra_store(ctx, args[1], &args[2..], Op::Union)
}

fn sdiffstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    algebra_store(ctx, args[1], &args[2..], Op::Diff)
}

fn sintercard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let numkeys = match crate::util::numbers::parse_i64(args[1]) {
        Some(n) if n > 0 => n as u64,
        _ => return Err(CmdError::msg("ERR numkeys should be greater than 0")),
    };
    if numkeys > (args.len() - 2) as u64 {
        return Err(CmdError::msg(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let keys = &args[2..2 + numkeys as usize];
    let mut limit: u64 = 0;
    let mut i = 2 + numkeys as usize;
    while i < args.len() {
        if eq_ic(args[i], "limit") && i + 1 < args.len() {
            limit = match crate::util::numbers::parse_i64(args[i + 1]) {
                Some(n) if n >= 0 => n as u64,
                _ => return Err(CmdError::msg("ERR LIMIT can't be negative")),
            };
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let n = ctx.with_keys(keys.iter().copied(), |db| -> Result<usize, CmdError> {
        let sizes = source_sizes(db, keys)?;
        if sizes.iter().any(|s| s.is_none()) {
            return Ok(0);
        }
        Ok(intersect(db, keys, &sizes).len())
    })?;
    let n = if limit > 0 {
        (n as u64).min(limit)
    } else {
        n as u64
    };
    ctx.out.int(n as i64);
    Ok(())
}
