//! String commands: GET, SET and friends, counters, ranges, LCS.

use super::args::{eq_ic, int};
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*};
use super::{acl, argv, deletion_argv, int_arg, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::events::Class;
use crate::keyspace::{Db, Entry};
use crate::types::{StrValue, Value};

/// A string command: group `string`, ACL category `@string`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "string", since, summary, handler).acl(acl::STRING)
}

const KEY_VALUE: a::Arg = a::block("key_value", &[a::key("key", 0), a::string("value")]);

pub static COMMANDS: &[CommandSpec] = &[
    cmd("get", 2, READONLY | FAST, "1.0.0", "Returns the string value of a key.", get)
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0)]),
    cmd(
        "set",
        -3,
        WRITE | DENYOOM | REWRITES_EFFECTS,
        "1.0.0",
        "Sets the string value of a key, with optional conditions and expiry.",
        set,
    )
    .key_specs(&[
        ks(RW | ACCESS | UPDATE | VARIABLE_FLAGS, 1, 0, 1)
            .notes("RW and ACCESS due to the optional `GET` argument"),
    ])
    .key_flags_by(set_key_flags)
    .history(&[
        ("2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."),
        ("6.0.0", "Added the `KEEPTTL` option."),
        ("6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."),
        ("7.0.0", "Allowed the `NX` and `GET` options to be used together."),
    ])
    .args(&[
        a::key("key", 0),
        a::string("value"),
        a::oneof("condition", &[a::pure("nx", "NX"), a::pure("xx", "XX")])
            .since("2.6.12")
            .optional(),
        a::pure("get", "GET").since("6.2.0").optional(),
        a::oneof(
            "expiration",
            &[
                a::integer("seconds").token("EX").since("2.6.12"),
                a::integer("milliseconds").token("PX").since("2.6.12"),
                a::unix_time("unix-time-seconds").token("EXAT").since("6.2.0"),
                a::unix_time("unix-time-milliseconds").token("PXAT").since("6.2.0"),
                a::pure("keepttl", "KEEPTTL").since("6.0.0"),
            ],
        )
        .optional(),
    ]),
    cmd("setnx", 3, WRITE | DENYOOM | FAST, "1.0.0", "Sets a key only if it does not exist.", setnx)
        .key_specs(&[ks(OW | INSERT, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("value")]),
    cmd("setex", 4, WRITE | DENYOOM | REWRITES_EFFECTS, "2.0.0", "Sets a key with a time to live in seconds.", setex)
        .key_specs(&[ks(OW | UPDATE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::integer("seconds"), a::string("value")]),
    cmd(
        "psetex",
        4,
        WRITE | DENYOOM | REWRITES_EFFECTS,
        "2.6.0",
        "Sets a key with a time to live in milliseconds.",
        psetex,
    )
    .key_specs(&[ks(OW | UPDATE, 1, 0, 1)])
    .args(&[a::key("key", 0), a::integer("milliseconds"), a::string("value")]),
    cmd("mget", -2, READONLY | FAST, "1.0.0", "Returns the values of several keys.", mget)
        .complexity("O(N) where N is the number of keys to retrieve.")
        .key_specs(&[ks(RO | ACCESS, 1, -1, 1)])
        .tips(&["request_policy:multi_shard"])
        .args(&[a::key("key", 0).multiple()]),
    cmd("mset", -3, WRITE | DENYOOM, "1.0.1", "Sets several keys atomically.", mset)
        .complexity("O(N) where N is the number of keys to set.")
        .key_specs(&[ks(OW | UPDATE, 1, -1, 2)])
        .tips(&["request_policy:multi_shard", "response_policy:all_succeeded"])
        .args(&[KEY_VALUE.multiple()]),
    cmd(
        "msetnx",
        -3,
        WRITE | DENYOOM,
        "1.0.1",
        "Sets several keys atomically, only if none of them exists.",
        msetnx,
    )
    .complexity("O(N) where N is the number of keys to set.")
    .key_specs(&[ks(OW | INSERT, 1, -1, 2)])
    .tips(&["request_policy:multi_shard", "response_policy:agg_min"])
    .args(&[KEY_VALUE.multiple()]),
    cmd(
        "getset",
        3,
        WRITE | DENYOOM | FAST | REWRITES_EFFECTS,
        "1.0.0",
        "Sets a key and returns its previous value.",
        getset,
    )
    .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
    .deprecated("6.2.0", "`SET` with the `!GET` argument")
    .args(&[a::key("key", 0), a::string("value")]),
    cmd("getdel", 2, WRITE | FAST | REWRITES_EFFECTS, "6.2.0", "Returns a key's value and deletes the key.", getdel)
        .key_specs(&[ks(RW | ACCESS | DELETE, 1, 0, 1)])
        .args(&[a::key("key", 0)]),
    cmd(
        "getex",
        -2,
        WRITE | FAST | REWRITES_EFFECTS,
        "6.2.0",
        "Returns a key's value and optionally changes its expiry.",
        getex,
    )
    .key_specs(&[
        ks(RW | ACCESS | UPDATE, 1, 0, 1).notes("RW and UPDATE because it changes the TTL"),
    ])
    .args(&[
        a::key("key", 0),
        a::oneof(
            "expiration",
            &[
                a::integer("seconds").token("EX"),
                a::integer("milliseconds").token("PX"),
                a::unix_time("unix-time-seconds").token("EXAT"),
                a::unix_time("unix-time-milliseconds").token("PXAT"),
                a::pure("persist", "PERSIST"),
            ],
        )
        .optional(),
    ]),
    cmd(
        "append",
        3,
        WRITE | DENYOOM | FAST,
        "2.0.0",
        "Appends to a key's string value, creating the key if needed.",
        append,
    )
    .complexity(
        "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
    )
    .key_specs(&[ks(RW | INSERT, 1, 0, 1)])
    .args(&[a::key("key", 0), a::string("value")]),
    cmd(
        "strlen",
        2,
        READONLY | FAST,
        "2.2.0",
        "Returns the length of a key's string value.",
        strlen,
    )
    .key_specs(&[ks(RO, 1, 0, 1)])
    .args(&[a::key("key", 0)]),
    cmd(
        "incr",
        2,
        WRITE | DENYOOM | FAST,
        "1.0.0",
        "Increments a key's integer value by one.",
        incr,
    )
    .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
    .args(&[a::key("key", 0)]),
    cmd(
        "decr",
        2,
        WRITE | DENYOOM | FAST,
        "1.0.0",
        "Decrements a key's integer value by one.",
        decr,
    )
    .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
    .args(&[a::key("key", 0)]),
    cmd(
        "incrby",
        3,
        WRITE | DENYOOM | FAST,
        "1.0.0",
        "Increments a key's integer value by a number.",
        incrby,
    )
    .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
    .args(&[a::key("key", 0), a::integer("increment")]),
    cmd(
        "decrby",
        3,
        WRITE | DENYOOM | FAST,
        "1.0.0",
        "Decrements a key's integer value by a number.",
        decrby,
    )
    .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
    .args(&[a::key("key", 0), a::integer("decrement")]),
    cmd(
        "incrbyfloat",
        3,
        WRITE | DENYOOM | FAST | REWRITES_EFFECTS,
        "2.6.0",
        "Increments a key's value by a floating point number.",
        incrbyfloat,
    )
    .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
    .args(&[a::key("key", 0), a::double("increment")]),
    cmd("getrange", 4, READONLY, "2.4.0", "Returns a substring of a key's value.", getrange)
        .complexity(
            "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::integer("start"), a::integer("end")]),
    cmd(
        "substr",
        4,
        READONLY,
        "1.0.0",
        "Returns a substring of a key's value (old name of GETRANGE).",
        getrange,
    )
    .complexity(
        "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
    )
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
    .deprecated("2.0.0", "`GETRANGE`")
    .args(&[a::key("key", 0), a::integer("start"), a::integer("end")]),
    cmd(
        "setrange",
        4,
        WRITE | DENYOOM,
        "2.2.0",
        "Overwrites part of a key's value at an offset.",
        setrange,
    )
    .complexity(
        "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
    )
    .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
    .args(&[a::key("key", 0), a::integer("offset"), a::string("value")]),
    cmd(
        "lcs",
        -3,
        READONLY,
        "7.0.0",
        "Finds the longest common substring of two keys' values.",
        lcs,
    )
    .complexity("O(N*M) where N and M are the lengths of s1 and s2, respectively")
    .key_specs(&[ks(RO | ACCESS, 1, 1, 1)])
    .args(&[
        a::key("key1", 0),
        a::key("key2", 0),
        a::pure("len", "LEN").optional(),
        a::pure("idx", "IDX").optional(),
        a::integer("len").token("MINMATCHLEN").optional(),
        a::pure("withmatchlen", "WITHMATCHLEN").optional(),
    ]),
];

/// The string at `key`, WRONGTYPE if it holds something else.
fn read_str(e: Option<&mut Entry>) -> Result<Option<&mut StrValue>, CmdError> {
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::Str(s),
            ..
        }) => Ok(Some(s)),
        #[allow(unreachable_patterns)]
        Some(_) => Err(CmdError::WrongType),
    }
}

fn get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let out = &mut *ctx.out;
    let mut locks = ctx.srv.keyspace.lock_key(key);
    let mut db = locks.db(ctx.client.db, ctx.now_ms, ctx.touch);
    match read_str(db.get_read(key))? {
        Some(s) => {
            let mut b = itoa::Buffer::new();
            out.bulk(s.as_bytes(&mut b));
        }
        None => out.null(),
    }
    Ok(())
}

/// When a SET-family command's expiry is absolute or relative, and in
/// which unit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpireArg {
    None,
    Ex,
    Px,
    ExAt,
    PxAt,
    KeepTtl,
    Persist,
}

/// Converts an expiry argument to absolute Unix ms, with Redis's checks:
/// non-integer → not an integer; ≤ 0 or overflowing → invalid expire time.
fn expire_at_ms(kind: ExpireArg, raw: &[u8], now_ms: i64, cmd: &str) -> Result<i64, CmdError> {
    let v = int(raw)?;
    let invalid = || CmdError::InvalidExpire(cmd.to_string());
    if v <= 0 {
        return Err(invalid());
    }
    let ms = match kind {
        ExpireArg::Ex | ExpireArg::ExAt => v.checked_mul(1000).ok_or_else(invalid)?,
        _ => v,
    };
    match kind {
        ExpireArg::Ex | ExpireArg::Px => ms.checked_add(now_ms).ok_or_else(invalid),
        _ => Ok(ms),
    }
}

fn set(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, val) = (args[1], args[2]);
    let mut nx = false;
    let mut xx = false;
    let mut get_old = false;
    let mut exp = ExpireArg::None;
    let mut exp_raw: &[u8] = b"";
    let mut i = 3;
    // As in Redis, an option may repeat (the last value wins) but may not
    // be combined with another option of its group.
    while i < args.len() {
        let a = args[i];
        let next = args.get(i + 1);
        if eq_ic(a, "nx") && !xx {
            nx = true;
        } else if eq_ic(a, "xx") && !nx {
            xx = true;
        } else if eq_ic(a, "get") {
            get_old = true;
        } else if eq_ic(a, "keepttl") && matches!(exp, ExpireArg::None | ExpireArg::KeepTtl) {
            exp = ExpireArg::KeepTtl;
        } else if let (Some(kind), Some(v)) = (expire_kind(a), next) {
            if exp != ExpireArg::None && exp != kind {
                return Err(CmdError::Syntax);
            }
            exp = kind;
            exp_raw = v;
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    let expire_at = match exp {
        ExpireArg::Ex | ExpireArg::Px | ExpireArg::ExAt | ExpireArg::PxAt => {
            Some(expire_at_ms(exp, exp_raw, ctx.now_ms, "set")?)
        }
        _ => None,
    };
    if ctx.propagating() {
        // As Redis: a SET with an expiry propagates as SET PXAT (a replica
        // or the AOF replays it later), and GET is left out.
        if let Some(at) = expire_at {
            ctx.propagate_as(argv(&[b"SET", key, val, b"PXAT", &int_arg(at)]));
        } else if get_old {
            // (Only options: the key or the value may be "get" too.)
            ctx.propagate_as(argv(
                &args
                    .iter()
                    .enumerate()
                    .filter(|(i, a)| *i < 3 || !eq_ic(a, "get"))
                    .map(|(_, a)| a)
                    .collect::<Vec<_>>(),
            ));
        }
    }
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let entry = db.new_entry(Value::Str(StrValue::from_bytes(val)));
        // The common case, a write that replaces whatever is there, takes
        // one probe of the table; an expired old key goes the general way,
        // which reports it expired first.
        let pending = if !get_old && !nx && !xx && exp != ExpireArg::KeepTtl {
            let now = db.now_ms;
            db.table(key)
                .overwrite(key, entry, expire_at.unwrap_or(0), now)
                .err()
        } else {
            Some(entry)
        };
        if let Some(entry) = pending {
            // With GET, Redis looks the key up as a read (a miss counts and
            // notifies "keymiss").
            let existing = if get_old {
                db.get_read(key)
            } else {
                db.get_write(key)
            };
            let found = existing.is_some();
            let mut old_ttl = 0;
            if get_old {
                match read_str(existing)? {
                    Some(s) => {
                        let mut b = itoa::Buffer::new();
                        out.bulk(s.as_bytes(&mut b));
                    }
                    None => out.null(),
                }
            } else if found {
                old_ttl = db.table(key).expire_of(key);
            }
            if (nx && found) || (xx && !found) {
                if !get_old {
                    out.null();
                }
                return Ok(());
            }
            if get_old && exp == ExpireArg::KeepTtl {
                old_ttl = db.table(key).expire_of(key);
            }
            let at = match (exp, expire_at) {
                (ExpireArg::KeepTtl, _) => old_ttl,
                (_, Some(at)) => at,
                _ => 0,
            };
            db.table(key).insert_expiring(key, entry, at);
        }
        db.changed(key, Class::STRING, "set");
        if expire_at.is_some() {
            db.notify(Class::GENERIC, "expire", key);
        }
        if !get_old {
            out.ok();
        }
        Ok(())
    })
}

fn expire_kind(a: &[u8]) -> Option<ExpireArg> {
    if eq_ic(a, "ex") {
        Some(ExpireArg::Ex)
    } else if eq_ic(a, "px") {
        Some(ExpireArg::Px)
    } else if eq_ic(a, "exat") {
        Some(ExpireArg::ExAt)
    } else if eq_ic(a, "pxat") {
        Some(ExpireArg::PxAt)
    } else {
        None
    }
}

fn setnx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, val) = (args[1], args[2]);
    let created = ctx.with_key(key, |db| {
        if db.exists(key) {
            false
        } else {
            db.set(key, Value::Str(StrValue::from_bytes(val)));
            db.changed(key, Class::STRING, "set");
            true
        }
    });
    ctx.out.int(created as i64);
    Ok(())
}

fn set_with_ttl(ctx: &mut Ctx, args: &[&[u8]], kind: ExpireArg, name: &str) -> CmdResult {
    let (key, val) = (args[1], args[3]);
    let at = expire_at_ms(kind, args[2], ctx.now_ms, name)?;
    if ctx.propagating() {
        ctx.propagate_as(argv(&[b"SET", key, val, b"PXAT", &int_arg(at)]));
    }
    ctx.with_key(key, |db| {
        let e = db.new_entry(Value::Str(StrValue::from_bytes(val)));
        // One probe when the key is live or absent; an expired old key is
        // reported expired first, then the key is new (as Redis's setKey).
        let now = db.now_ms;
        if let Err(e) = db.table(key).overwrite(key, e, at, now) {
            db.get_write(key);
            db.table(key).insert_expiring(key, e, at);
        }
        db.changed(key, Class::STRING, "set");
        db.notify(Class::GENERIC, "expire", key);
    });
    ctx.out.ok();
    Ok(())
}

fn setex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_with_ttl(ctx, args, ExpireArg::Ex, "setex")
}

fn psetex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_with_ttl(ctx, args, ExpireArg::Px, "psetex")
}

fn mget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let (ka, out) = ctx.split();
    out.array(keys.len());
    ka.with_keys(keys.iter().copied(), |db| {
        let mut b = itoa::Buffer::new();
        for k in keys {
            match db.get_read(k) {
                Some(Entry {
                    value: Value::Str(s),
                    ..
                }) => out.bulk(s.as_bytes(&mut b)),
                #[allow(unreachable_patterns)]
                _ => out.null(),
            }
        }
    });
    Ok(())
}

fn check_pairs(args: &[&[u8]], name: &str) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity(name.to_string()));
    }
    Ok(())
}

fn mset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    check_pairs(args, "mset")?;
    let pairs = &args[1..];
    ctx.with_keys(pairs.iter().step_by(2).copied(), |db| {
        for kv in pairs.chunks_exact(2) {
            db.set(kv[0], Value::Str(StrValue::from_bytes(kv[1])));
            db.changed(kv[0], Class::STRING, "set");
        }
    });
    ctx.out.ok();
    Ok(())
}

fn msetnx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    check_pairs(args, "msetnx")?;
    let pairs = &args[1..];
    let done = ctx.with_keys(pairs.iter().step_by(2).copied(), |db| {
        if pairs.chunks_exact(2).any(|kv| db.exists(kv[0])) {
            return false;
        }
        for kv in pairs.chunks_exact(2) {
            db.set(kv[0], Value::Str(StrValue::from_bytes(kv[1])));
            db.changed(kv[0], Class::STRING, "set");
        }
        true
    });
    ctx.out.int(done as i64);
    Ok(())
}

fn getset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, val) = (args[1], args[2]);
    if ctx.propagating() {
        ctx.propagate_as(argv(&[b"SET", key, val]));
    }
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        match read_str(db.get_read(key))? {
            Some(s) => {
                let mut b = itoa::Buffer::new();
                out.bulk(s.as_bytes(&mut b));
            }
            None => out.null(),
        }
        db.set(key, Value::Str(StrValue::from_bytes(val)));
        db.changed(key, Class::STRING, "set");
        Ok(())
    })
}

fn getdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    if ctx.propagating() {
        let lazy = ctx.srv.config.lazyfree_lazy_user_del();
        ctx.propagate_as(deletion_argv(key, lazy));
    }
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        match read_str(db.get_read(key))? {
            Some(s) => {
                let mut b = itoa::Buffer::new();
                out.bulk(s.as_bytes(&mut b));
            }
            None => {
                out.null();
                return Ok(());
            }
        }
        db.remove(key);
        db.changed(key, Class::GENERIC, "del");
        Ok(())
    })
}

fn getex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let mut exp = ExpireArg::None;
    let mut raw: &[u8] = b"";
    let mut i = 2;
    while i < args.len() {
        let a = args[i];
        if eq_ic(a, "persist") && matches!(exp, ExpireArg::None | ExpireArg::Persist) {
            exp = ExpireArg::Persist;
        } else if let (Some(kind), Some(v)) = (expire_kind(a), args.get(i + 1)) {
            if exp != ExpireArg::None && exp != kind {
                return Err(CmdError::Syntax);
            }
            exp = kind;
            raw = v;
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    let (ka, out) = ctx.split();
    let now = ka.now_ms;
    let mut expire_at = None;
    ka.with_key(key, |db| {
        match read_str(db.get_read(key))? {
            Some(s) => {
                // Redis validates the expiry only once the key is known to
                // be a string, and replies the value only if it is valid.
                let at = match exp {
                    ExpireArg::None | ExpireArg::Persist | ExpireArg::KeepTtl => None,
                    k => Some(expire_at_ms(k, raw, now, "getex")?),
                };
                expire_at = at;
                let mut b = itoa::Buffer::new();
                out.bulk(s.as_bytes(&mut b));
                match (exp, at) {
                    (_, Some(at)) if at <= now => {
                        db.remove(key);
                        db.changed(key, Class::GENERIC, "del");
                    }
                    (_, Some(at)) => {
                        db.table(key).set_expire(key, at);
                        db.changed(key, Class::GENERIC, "expire");
                    }
                    (ExpireArg::Persist, _) if db.table(key).expire_of(key) != 0 => {
                        db.table(key).set_expire(key, 0);
                        db.changed(key, Class::GENERIC, "persist");
                    }
                    _ => {}
                }
            }
            None => out.null(),
        }
        Ok::<(), CmdError>(())
    })?;
    if ctx.propagating() {
        // As Redis: the new expiry as an absolute time, or the deletion a
        // time in the past made.
        match expire_at {
            Some(at) if at <= now => {
                let lazy = ctx.srv.config.lazyfree_lazy_expire();
                ctx.propagate_as(deletion_argv(key, lazy));
            }
            Some(at) => ctx.propagate_as(argv(&[b"PEXPIREAT", key, &int_arg(at)])),
            None => ctx.propagate_as(argv(&[b"PERSIST", key])),
        }
    }
    Ok(())
}

/// Redis refuses to grow a string past proto-max-bulk-len.
fn check_size(limit: u64, total: u64) -> CmdResult {
    if total > limit {
        return Err(CmdError::msg(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

fn append(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, val) = (args[1], args[2]);
    let limit = ctx.srv.config.proto_max_bulk_len();
    let len = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        match read_str(db.get_write(key))? {
            Some(s) => {
                check_size(limit, (s.len() + val.len()) as u64)?;
                let v = s.make_raw();
                v.extend_from_slice(val);
                let n = v.len();
                db.changed(key, Class::STRING, "append");
                Ok(n)
            }
            None => {
                db.set(key, Value::Str(StrValue::from_bytes(val)));
                db.changed(key, Class::STRING, "append");
                Ok(val.len())
            }
        }
    })?;
    ctx.out.int(len as i64);
    Ok(())
}

fn strlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let n = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        Ok(read_str(db.get_read(key))?.map_or(0, |s| s.len()))
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

fn incr_by(ctx: &mut Ctx, key: &[u8], delta: i64) -> CmdResult {
    let n = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        match db.get_write(key) {
            Some(e) => {
                let s = read_str(Some(e))?.ok_or(CmdError::NoSuchKey)?;
                let cur = s.as_i64().ok_or(CmdError::NotInteger)?;
                let n = cur.checked_add(delta).ok_or(CmdError::Overflow)?;
                *s = StrValue::Int(n);
                db.changed(key, Class::STRING, "incrby");
                Ok(n)
            }
            None => {
                db.set(key, Value::Str(StrValue::Int(delta)));
                db.changed(key, Class::STRING, "incrby");
                Ok(delta)
            }
        }
    })?;
    ctx.out.int(n);
    Ok(())
}

fn incr(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], 1)
}

fn decr(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], -1)
}

fn incrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let d = int(args[2])?;
    incr_by(ctx, args[1], d)
}

fn decrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let d = int(args[2])?;
    if d == i64::MIN {
        return Err(CmdError::msg("ERR decrement would overflow"));
    }
    incr_by(ctx, args[1], -d)
}

fn incrbyfloat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    use crate::util::numbers::{incr_by_float, IncrFloatError};
    let (key, incr) = (args[1], args[2]);
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let current = match read_str(db.get_write(key))? {
            Some(s) => s.to_vec(),
            None => b"0".to_vec(),
        };
        let result = incr_by_float(&current, incr).map_err(|e| match e {
            IncrFloatError::NanOrInfinity => {
                CmdError::msg("ERR increment would produce NaN or Infinity")
            }
            _ => CmdError::NotFloat,
        })?;
        out.bulk(&result);
        let keep = db.table(key).expire_of(key);
        let e = db.new_entry(Value::Str(StrValue::from_bytes_no_int(&result)));
        db.table(key).insert_expiring(key, e, keep);
        db.changed(key, Class::STRING, "incrbyfloat");
        Ok::<Vec<u8>, CmdError>(result)
    })
    .map(|result| {
        // As Redis: the value, not the increment (float rounding on a
        // replica could differ), keeping the TTL.
        if ctx.propagating() {
            ctx.propagate_as(argv(&[b"SET", key, &result, b"KEEPTTL"]));
        }
    })
}

fn getrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let mut start = int(args[2])?;
    let mut end = int(args[3])?;
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(s) = read_str(db.get_read(key))? else {
            out.bulk(b"");
            return Ok(());
        };
        let mut b = itoa::Buffer::new();
        let bytes = s.as_bytes(&mut b);
        let len = bytes.len() as i64;
        if start < 0 && end < 0 && start > end {
            out.bulk(b"");
            return Ok(());
        }
        if start < 0 {
            start += len;
        }
        if end < 0 {
            end += len;
        }
        start = start.max(0);
        end = end.max(0);
        if end >= len {
            end = len - 1;
        }
        if start > end || len == 0 {
            out.bulk(b"");
        } else {
            out.bulk(&bytes[start as usize..=end as usize]);
        }
        Ok(())
    })
}

fn setrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, val) = (args[1], args[3]);
    let offset = int(args[2])?;
    if offset < 0 {
        return Err(CmdError::msg("ERR offset is out of range"));
    }
    let limit = ctx.srv.config.proto_max_bulk_len();
    let len = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        match read_str(db.get_write(key))? {
            Some(s) => {
                if val.is_empty() {
                    return Ok(s.len());
                }
                check_size(limit, offset as u64 + val.len() as u64)?;
                let v = s.make_raw();
                let end = offset as usize + val.len();
                if v.len() < end {
                    v.resize(end, 0);
                }
                v[offset as usize..end].copy_from_slice(val);
                let n = v.len();
                db.changed(key, Class::STRING, "setrange");
                Ok(n)
            }
            None => {
                if val.is_empty() {
                    return Ok(0);
                }
                check_size(limit, offset as u64 + val.len() as u64)?;
                let mut v = vec![0u8; offset as usize + val.len()];
                v[offset as usize..].copy_from_slice(val);
                let n = v.len();
                db.set(key, Value::Str(StrValue::raw(v)));
                db.changed(key, Class::STRING, "setrange");
                Ok(n)
            }
        }
    })?;
    ctx.out.int(len as i64);
    Ok(())
}

fn lcs(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (ka, kb) = (args[1], args[2]);
    let (a, b) = ctx.with_keys([ka, kb], |db| -> Result<(Vec<u8>, Vec<u8>), CmdError> {
        // Both keys are looked up before either's type is checked, as
        // Redis does (a miss on the second still counts and notifies).
        let a = lcs_operand(db, ka);
        let b = lcs_operand(db, kb);
        let (a, b) = (a?, b?);
        Ok((a.unwrap_or_default(), b.unwrap_or_default()))
    })?;
    let mut idx = false;
    let mut len_only = false;
    let mut with_len = false;
    let mut min_len: i64 = 0;
    let mut i = 3;
    while i < args.len() {
        let o = args[i];
        if eq_ic(o, "idx") {
            idx = true;
        } else if eq_ic(o, "len") {
            len_only = true;
        } else if eq_ic(o, "withmatchlen") {
            with_len = true;
        } else if eq_ic(o, "minmatchlen") && i + 1 < args.len() {
            min_len = int(args[i + 1])?.max(0);
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if idx && len_only {
        return Err(CmdError::msg(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    let cells = (a.len() as u64 + 1) * (b.len() as u64 + 1) * 4;
    if cells > ctx.srv.config.proto_max_bulk_len() {
        return Err(CmdError::msg(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let m = crate::util::lcs::LcsTable::build(&a, &b);
    let out = &mut *ctx.out;
    if len_only && !idx {
        out.int(m.len() as i64);
        return Ok(());
    }
    let (text, ranges) = m.traceback(&a, &b);
    if !idx {
        out.bulk(&text);
        return Ok(());
    }
    let kept: Vec<_> = ranges
        .into_iter()
        .filter(|r| min_len == 0 || r.len() as i64 >= min_len)
        .collect();
    out.map(2);
    out.bulk(b"matches");
    out.array(kept.len());
    for r in &kept {
        out.array(2 + with_len as usize);
        out.array(2);
        out.int(r.a.0 as i64);
        out.int(r.a.1 as i64);
        out.array(2);
        out.int(r.b.0 as i64);
        out.int(r.b.1 as i64);
        if with_len {
            out.int(r.len() as i64);
        }
    }
    out.bulk(b"len");
    out.int(m.len() as i64);
    Ok(())
}

fn lcs_operand(db: &mut Db, key: &[u8]) -> Result<Option<Vec<u8>>, CmdError> {
    match db.get_read(key) {
        None => Ok(None),
        Some(Entry {
            value: Value::Str(s),
            ..
        }) => Ok(Some(s.to_vec())),
        #[allow(unreachable_patterns)]
        Some(_) => Err(CmdError::msg(
            "ERR The specified keys must contain string values",
        )),
    }
}

/// SET reads its key only with GET (Redis's setGetKeys).
fn set_key_flags(args: &[&[u8]], _index: usize) -> u16 {
    if args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) {
        RW | ACCESS | UPDATE
    } else {
        OW | UPDATE
    }
}
