//! Hash commands: HSET and friends, counters, HRANDFIELD, HSCAN. Also the
//! SCAN-family helpers (cursor and MATCH/COUNT parsing, the random-count
//! argument rules) that the set commands share.
//!
//! Each handler parses its arguments in Redis's order (so the same error
//! wins), operates on a [`HashValue`] under the key's shard lock, and
//! replies. Writers call `signal_ready` after releasing the lock.

use rand::Rng;

use super::args::{eq_ic, int};
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::events::Class;
use crate::keyspace::Entry;
use crate::types::{HashValue, Value};
use crate::util::glob::glob_match;

/// A hash command: group `hash`, ACL category `@hash`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "hash", since, summary, handler).acl(acl::HASH)
}

const FIELD_VALUE: a::Arg =
    a::block("field_value", &[a::string("field"), a::string("value")]).multiple();

/// The documented complexity of every SCAN-family command.
pub const SCAN_COMPLEXITY: &str = "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..";

pub static COMMANDS: &[CommandSpec] = &[
    cmd("hset", -4, WRITE | DENYOOM | FAST, "2.0.0", "Creates or modifies the value of fields in a hash.", hset)
        .complexity(
            "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
        )
        .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
        .history(&[("4.0.0", "Accepts multiple `field` and `value` arguments.")])
        .args(&[a::key("key", 0), FIELD_VALUE]),
    cmd("hsetnx", 4, WRITE | DENYOOM | FAST, "2.0.0", "Sets the value of a field in a hash only when the field doesn't exist.", hsetnx)
        .key_specs(&[ks(RW | INSERT, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("field"), a::string("value")]),
    cmd("hget", 3, READONLY | FAST, "2.0.0", "Returns the value of a field in a hash.", hget)
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("field")]),
    cmd("hmget", -3, READONLY | FAST, "2.0.0", "Returns the values of several fields in a hash.", hmget)
        .complexity("O(N) where N is the number of fields being requested.")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("field").multiple()]),
    cmd("hmset", -4, WRITE | DENYOOM | FAST, "2.0.0", "Sets the values of several fields in a hash.", hmset)
        .complexity("O(N) where N is the number of fields being set.")
        .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
        .deprecated("4.0.0", "`HSET` with multiple field-value pairs")
        .args(&[a::key("key", 0), FIELD_VALUE]),
    cmd("hdel", -3, WRITE | FAST, "2.0.0", "Deletes fields from a hash; deletes the hash when none is left.", hdel)
        .complexity("O(N) where N is the number of fields to be removed.")
        .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
        .history(&[("2.4.0", "Accepts multiple `field` arguments.")])
        .args(&[a::key("key", 0), a::string("field").multiple()]),
    cmd("hlen", 2, READONLY | FAST, "2.0.0", "Returns the number of fields in a hash.", hlen)
        .key_specs(&[ks(RO, 1, 0, 1)])
        .args(&[a::key("key", 0)]),
    cmd("hstrlen", 3, READONLY | FAST, "3.2.0", "Returns the length of the value of a field in a hash.", hstrlen)
        .key_specs(&[ks(RO, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("field")]),
    cmd("hexists", 3, READONLY | FAST, "2.0.0", "Tells whether a field exists in a hash.", hexists)
        .key_specs(&[ks(RO, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("field")]),
    cmd("hkeys", 2, READONLY, "2.0.0", "Returns all the fields of a hash.", hkeys)
        .complexity("O(N) where N is the size of the hash.")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .tips(&["nondeterministic_output_order"])
        .args(&[a::key("key", 0)]),
    cmd("hvals", 2, READONLY, "2.0.0", "Returns all the values of a hash.", hvals)
        .complexity("O(N) where N is the size of the hash.")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .tips(&["nondeterministic_output_order"])
        .args(&[a::key("key", 0)]),
    cmd("hgetall", 2, READONLY, "2.0.0", "Returns all the fields and values of a hash.", hgetall)
        .complexity("O(N) where N is the size of the hash.")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .tips(&["nondeterministic_output_order"])
        .args(&[a::key("key", 0)]),
    cmd("hincrby", 4, WRITE | DENYOOM | FAST, "2.0.0", "Adds an integer to the integer value of a field in a hash.", hincrby)
        .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("field"), a::integer("increment")]),
    cmd("hincrbyfloat", 4, WRITE | DENYOOM | FAST | REWRITES_EFFECTS, "2.6.0", "Adds a floating point number to the value of a field in a hash.", hincrbyfloat)
        .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("field"), a::double("increment")]),
    cmd("hrandfield", -2, READONLY, "6.2.0", "Returns random fields (optionally with their values) of a hash.", hrandfield)
        .complexity("O(N) where N is the number of fields returned")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .tips(&["nondeterministic_output"])
        .args(&[
            a::key("key", 0),
            a::block(
                "options",
                &[a::integer("count"), a::pure("withvalues", "WITHVALUES").optional()],
            )
            .optional(),
        ]),
    cmd("hscan", -3, READONLY, "2.8.0", "Iterates over the fields and values of a hash.", hscan)
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

// ---- shared helpers (also used by the set commands) ------------------------------------------

pub use super::args::parse_scan_cursor;

/// MATCH and COUNT of HSCAN/SSCAN/ZSCAN.
pub struct ScanOpts<'a> {
    /// None when absent or `*` (matches everything).
    pub pattern: Option<&'a [u8]>,
    pub count: usize,
}

impl ScanOpts<'_> {
    #[inline]
    pub fn matches(&self, item: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, item, false))
    }
}

/// Parses the options after the cursor, as Redis's scanGenericCommand does
/// for a key's collection (no TYPE): a later option overrides an earlier
/// one; COUNT below 1, an unknown word or a missing value is a syntax
/// error.
pub fn parse_scan_opts<'a>(opts: &[&'a [u8]]) -> Result<ScanOpts<'a>, CmdError> {
    let mut o = ScanOpts {
        pattern: None,
        count: 10,
    };
    let mut i = 0;
    while i < opts.len() {
        let has_value = i + 1 < opts.len();
        if eq_ic(opts[i], "count") && has_value {
            let c = int(opts[i + 1])?;
            if c < 1 {
                return Err(CmdError::Syntax);
            }
            o.count = usize::try_from(c).unwrap_or(usize::MAX);
        } else if eq_ic(opts[i], "match") && has_value {
            let p = opts[i + 1];
            o.pattern = if p == b"*" { None } else { Some(p) };
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    Ok(o)
}

/// The count of HRANDFIELD / SRANDMEMBER: an integer in
/// -LONG_MAX..=LONG_MAX, with Redis's two messages.
pub fn random_count(arg: &[u8]) -> Result<i64, CmdError> {
    let n = int(arg)?;
    if n == i64::MIN {
        return Err(CmdError::msg(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    Ok(n)
}

/// Most elements a negative-count HRANDFIELD/SRANDMEMBER may return from
/// an existing key. Redis has no limit and exhausts its memory building a
/// reply for a count near 2^63; Tessera refuses such counts instead (once
/// the key is known to exist, so missing keys and WRONGTYPE still answer as
/// in Redis).
pub const MAX_RANDOM_REPLY: u64 = 1 << 28;

/// The error for a count above [`MAX_RANDOM_REPLY`].
pub fn random_count_too_big() -> CmdError {
    CmdError::msg("ERR value is out of range")
}

/// Writes a scan reply's cursor.
pub fn cursor_reply(out: &mut tessera_resp::encode::ReplyBuf, cursor: u64) {
    let mut b = itoa::Buffer::new();
    out.array(2);
    out.bulk(b.format(cursor).as_bytes());
}

// ---- handlers --------------------------------------------------------------------------------

/// The hash at a key, WRONGTYPE if it holds something else.
#[inline]
fn as_hash(e: Option<&mut Entry>) -> Result<Option<&mut HashValue>, CmdError> {
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::Hash(h),
            ..
        }) => Ok(Some(h)),
        Some(_) => Err(CmdError::WrongType),
    }
}

fn hset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let added = set_pairs(ctx, args, "hset")?;
    ctx.out.int(added as i64);
    ctx.signal_ready(args[1]);
    Ok(())
}

fn hmset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_pairs(ctx, args, "hmset")?;
    ctx.out.ok();
    ctx.signal_ready(args[1]);
    Ok(())
}

/// HSET/HMSET: sets every pair, creating the hash if needed; the number of
/// new fields.
fn set_pairs(ctx: &mut Ctx, args: &[&[u8]], name: &str) -> Result<usize, CmdError> {
    if args.len() % 2 == 1 {
        return Err(CmdError::WrongArity(name.to_string()));
    }
    let key = args[1];
    let pairs = &args[2..];
    let limits = ctx.limits();
    ctx.with_key(key, |db| {
        let mut added = 0;
        match as_hash(db.get_write(key))? {
            Some(h) => {
                for p in pairs.chunks_exact(2) {
                    added += h.set(p[0], p[1], &limits) as usize;
                }
            }
            None => {
                let mut h = HashValue::new();
                for p in pairs.chunks_exact(2) {
                    added += h.set(p[0], p[1], &limits) as usize;
                }
                db.set(key, Value::Hash(Box::new(h)));
            }
        }
        db.changed(key, Class::HASH, "hset");
        Ok(added)
    })
}

fn hsetnx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, field, value) = (args[1], args[2], args[3]);
    let limits = ctx.limits();
    let added = ctx.with_key(key, |db| -> Result<bool, CmdError> {
        match as_hash(db.get_write(key))? {
            Some(h) => {
                if h.contains(field) {
                    return Ok(false);
                }
                h.set(field, value, &limits);
            }
            None => {
                let mut h = HashValue::new();
                h.set(field, value, &limits);
                db.set(key, Value::Hash(Box::new(h)));
            }
        }
        db.changed(key, Class::HASH, "hset");
        Ok(true)
    })?;
    ctx.out.int(added as i64);
    if added {
        ctx.signal_ready(key);
    }
    Ok(())
}

fn hget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        match as_hash(db.get_read(key))?.and_then(|h| h.get(field)) {
            Some(v) => out.bulk(v),
            None => out.null(),
        }
        Ok(())
    })
}

fn hmget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let fields = &args[2..];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let h = as_hash(db.get_read(key))?;
        out.array(fields.len());
        for f in fields {
            match h.as_ref().and_then(|h| h.get(f)) {
                Some(v) => out.bulk(v),
                None => out.null(),
            }
        }
        Ok(())
    })
}

fn hdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let removed = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        let Some(h) = as_hash(db.get_write(key))? else {
            return Ok(0);
        };
        let mut n = 0;
        for f in &args[2..] {
            if h.remove(f) {
                n += 1;
                if h.is_empty() {
                    break;
                }
            }
        }
        let emptied = h.is_empty();
        if n > 0 {
            db.changed(key, Class::HASH, "hdel");
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

fn hlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let n = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        Ok(as_hash(db.get_read(key))?.map_or(0, |h| h.len()))
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

fn hstrlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let n = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        Ok(as_hash(db.get_read(key))?
            .and_then(|h| h.get(field))
            .map_or(0, |v| v.len()))
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

fn hexists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let found = ctx.with_key(key, |db| -> Result<bool, CmdError> {
        Ok(as_hash(db.get_read(key))?.is_some_and(|h| h.contains(field)))
    })?;
    ctx.out.int(found as i64);
    Ok(())
}

/// What HKEYS / HVALS / HGETALL reply with.
#[derive(Clone, Copy)]
enum Dump {
    Keys,
    Values,
    All,
}

fn dump(ctx: &mut Ctx, key: &[u8], what: Dump) -> CmdResult {
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let h = as_hash(db.get_read(key))?;
        let n = h.as_ref().map_or(0, |h| h.len());
        match what {
            Dump::All => out.map(n),
            _ => out.array(n),
        }
        if let Some(h) = h {
            for (f, v) in h.iter() {
                match what {
                    Dump::Keys => out.bulk(f),
                    Dump::Values => out.bulk(v),
                    Dump::All => {
                        out.bulk(f);
                        out.bulk(v);
                    }
                }
            }
        }
        Ok(())
    })
}

fn hkeys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    dump(ctx, args[1], Dump::Keys)
}

fn hvals(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    dump(ctx, args[1], Dump::Values)
}

fn hgetall(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    dump(ctx, args[1], Dump::All)
}

/// Runs `f` on the hash at `key`, created empty if missing (Redis's
/// `hashTypeLookupWriteOrCreate`); an empty hash left behind by a failed
/// `f` is removed again.
fn with_hash_or_create<R>(
    ctx: &mut Ctx,
    key: &[u8],
    event: &'static str,
    f: impl FnOnce(&mut HashValue) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    ctx.with_key(key, |db| {
        let r = if let Some(h) = as_hash(db.get_write(key))? {
            f(h)
        } else {
            let mut h = HashValue::new();
            let r = f(&mut h);
            if !h.is_empty() {
                db.set(key, Value::Hash(Box::new(h)));
            }
            r
        };
        if r.is_ok() {
            db.changed(key, Class::HASH, event);
        }
        r
    })
}

fn hincrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, field) = (args[1], args[2]);
    let incr = int(args[3])?;
    let limits = ctx.limits();
    let n = with_hash_or_create(ctx, key, "hincrby", |h| {
        let cur = match h.get(field) {
            Some(v) => crate::util::numbers::parse_i64(v)
                .ok_or_else(|| CmdError::msg("ERR hash value is not an integer"))?,
            None => 0,
        };
        let n = cur.checked_add(incr).ok_or(CmdError::Overflow)?;
        h.set(field, itoa::Buffer::new().format(n).as_bytes(), &limits);
        Ok(n)
    })?;
    ctx.out.int(n);
    ctx.signal_ready(key);
    Ok(())
}

fn hincrbyfloat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    use crate::util::numbers::{
        classify_long_double, incr_by_float, IncrFloatError, LongDoubleKind,
    };
    let (key, field, incr) = (args[1], args[2], args[3]);
    // Redis checks the increment (a valid long double, then finite) before
    // it looks at the key.
    match classify_long_double(incr) {
        None => return Err(CmdError::NotFloat),
        Some(LongDoubleKind::Infinite) => {
            return Err(CmdError::msg("ERR value is NaN or Infinity"))
        }
        Some(LongDoubleKind::Finite) => {}
    }
    let limits = ctx.limits();
    let result = with_hash_or_create(ctx, key, "hincrbyfloat", |h| {
        let cur = h.get(field).unwrap_or(b"0");
        let sum = incr_by_float(cur, incr).map_err(|e| match e {
            IncrFloatError::InvalidCurrent => CmdError::msg("ERR hash value is not a float"),
            IncrFloatError::InvalidIncrement => CmdError::NotFloat,
            IncrFloatError::NanOrInfinity => {
                CmdError::msg("ERR increment would produce NaN or Infinity")
            }
        })?;
        h.set(field, &sum, &limits);
        Ok(sum)
    })?;
    // As Redis: the value, not the increment (float rounding on a replica
    // could differ).
    if ctx.propagating() {
        ctx.propagate_as(super::argv(&[b"HSET", key, field, &result]));
    }
    ctx.out.bulk(&result);
    ctx.signal_ready(key);
    Ok(())
}

fn hrandfield(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    if args.len() == 2 {
        let (ka, out) = ctx.split();
        return ka.with_key(key, |db| {
            match as_hash(db.get_read(key))? {
                Some(h) if !h.is_empty() => {
                    let i = rand::thread_rng().gen_range(0..h.len());
                    match h.get_index(i) {
                        Some((f, _)) => out.bulk(f),
                        None => out.null(),
                    }
                }
                _ => out.null(),
            }
            Ok(())
        });
    }
    let count = random_count(args[2])?;
    let with_values = match args.len() {
        3 => false,
        4 if eq_ic(args[3], "withvalues") => true,
        _ => return Err(CmdError::Syntax),
    };
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(CmdError::msg("ERR value is out of range"));
    }
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(h) = as_hash(db.get_read(key))? else {
            out.array(0);
            return Ok(());
        };
        let len = h.len();
        if count == 0 || len == 0 {
            out.array(0);
            return Ok(());
        }
        // RESP2: one flat array; RESP3 with values: an array of pairs.
        let nested = with_values && out.resp3();
        let header = |out: &mut tessera_resp::encode::ReplyBuf, n: usize| {
            if with_values && !nested {
                out.array(2 * n)
            } else {
                out.array(n)
            }
        };
        let emit = |out: &mut tessera_resp::encode::ReplyBuf, f: &[u8], v: &[u8]| {
            if nested {
                out.array(2);
            }
            out.bulk(f);
            if with_values {
                out.bulk(v);
            }
        };
        // Positional access is O(1) in both encodings.
        let at = |i: usize| -> (&[u8], &[u8]) { h.get_index(i).unwrap_or((b"", b"")) };
        let mut rng = rand::thread_rng();
        if count < 0 {
            // Repeats allowed.
            if count.unsigned_abs() > MAX_RANDOM_REPLY {
                return Err(random_count_too_big());
            }
            let n = count.unsigned_abs() as usize;
            header(out, n);
            for _ in 0..n {
                let (f, v) = at(rng.gen_range(0..len));
                emit(out, f, v);
            }
        } else if count as u64 >= len as u64 {
            header(out, len);
            for (f, v) in h.iter() {
                emit(out, f, v);
            }
        } else {
            let n = count as usize;
            header(out, n);
            for i in rand::seq::index::sample(&mut rng, len, n) {
                let (f, v) = at(i);
                emit(out, f, v);
            }
        }
        Ok(())
    })
}

fn hscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let cursor = parse_scan_cursor(args[2])?;
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(h) = as_hash(db.get_read(key))? else {
            cursor_reply(out, 0);
            out.array(0);
            return Ok(());
        };
        let opts = parse_scan_opts(&args[3..])?;
        let mut items: Vec<(&[u8], &[u8])> = Vec::new();
        let next = h.scan(cursor, opts.count, |f, v| {
            if opts.matches(f) {
                items.push((f, v));
            }
        });
        cursor_reply(out, next);
        out.array(items.len() * 2);
        for (f, v) in items {
            out.bulk(f);
            out.bulk(v);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_cursor_reads_like_strtoul() {
        let ok = |s: &[u8]| parse_scan_cursor(s).ok();
        assert_eq!(ok(b"0"), Some(0));
        assert_eq!(ok(b""), Some(0));
        assert_eq!(ok(b"00"), Some(0));
        assert_eq!(ok(b"+7"), Some(7));
        assert_eq!(ok(b"-1"), Some(u64::MAX));
        assert_eq!(ok(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(ok(b"-18446744073709551615"), Some(1));
        assert_eq!(ok(b"1\0x"), Some(1));
        assert_eq!(ok(b"18446744073709551616"), None);
        assert_eq!(ok(b" 1"), None);
        assert_eq!(ok(b"1 "), None);
        assert_eq!(ok(b"-"), None);
        assert_eq!(ok(b"+"), None);
        assert_eq!(ok(b"abc"), None);
    }
}
