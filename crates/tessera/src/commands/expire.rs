//! Key expiry: EXPIRE and friends, TTL queries, PERSIST.

use super::args::{eq_ic, int};
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*};
use super::{acl, argv, deletion_argv, int_arg, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::events::Class;

/// An expiry command: group `generic`, ACL category `@keyspace`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "generic", since, summary, handler).acl(acl::KEYSPACE)
}

const CONDITION: a::Arg = a::oneof(
    "condition",
    &[
        a::pure("nx", "NX"),
        a::pure("xx", "XX"),
        a::pure("gt", "GT"),
        a::pure("lt", "LT"),
    ],
);

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "expire",
        -3,
        WRITE | FAST | REWRITES_EFFECTS,
        "1.0.0",
        "Sets a key's time to live in seconds.",
        expire,
    )
    .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
    .history(&[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")])
    .args(&[
        a::key("key", 0),
        a::integer("seconds"),
        CONDITION.since("7.0.0").optional(),
    ]),
    cmd(
        "pexpire",
        -3,
        WRITE | FAST | REWRITES_EFFECTS,
        "2.6.0",
        "Sets a key's time to live in milliseconds.",
        pexpire,
    )
    .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
    .history(&[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")])
    .args(&[
        a::key("key", 0),
        a::integer("milliseconds"),
        CONDITION.since("7.0.0").optional(),
    ]),
    cmd(
        "expireat",
        -3,
        WRITE | FAST | REWRITES_EFFECTS,
        "1.2.0",
        "Sets a key's expiry to a Unix time in seconds.",
        expireat,
    )
    .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
    .history(&[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")])
    .args(&[
        a::key("key", 0),
        a::unix_time("unix-time-seconds"),
        CONDITION.since("7.0.0").optional(),
    ]),
    cmd(
        "pexpireat",
        -3,
        WRITE | FAST | REWRITES_EFFECTS,
        "2.6.0",
        "Sets a key's expiry to a Unix time in milliseconds.",
        pexpireat,
    )
    .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
    .history(&[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")])
    .args(&[
        a::key("key", 0),
        a::unix_time("unix-time-milliseconds"),
        CONDITION.since("7.0.0").optional(),
    ]),
    cmd(
        "ttl",
        2,
        READONLY | FAST,
        "1.0.0",
        "Returns a key's time to live in seconds.",
        ttl,
    )
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
    .tips(&["nondeterministic_output"])
    .history(&[("2.8.0", "Added the -2 reply.")])
    .args(&[a::key("key", 0)]),
    cmd(
        "pttl",
        2,
        READONLY | FAST,
        "2.6.0",
        "Returns a key's time to live in milliseconds.",
        pttl,
    )
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
    .tips(&["nondeterministic_output"])
    .history(&[("2.8.0", "Added the -2 reply.")])
    .args(&[a::key("key", 0)]),
    cmd(
        "expiretime",
        2,
        READONLY | FAST,
        "7.0.0",
        "Returns a key's expiry as a Unix time in seconds.",
        expiretime,
    )
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
    .args(&[a::key("key", 0)]),
    cmd(
        "pexpiretime",
        2,
        READONLY | FAST,
        "7.0.0",
        "Returns a key's expiry as a Unix time in milliseconds.",
        pexpiretime,
    )
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
    .args(&[a::key("key", 0)]),
    cmd(
        "persist",
        2,
        WRITE | FAST,
        "2.2.0",
        "Removes a key's expiry.",
        persist,
    )
    .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
    .args(&[a::key("key", 0)]),
];

#[derive(Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn parse_conditions(args: &[&[u8]]) -> Result<Conditions, CmdError> {
    let mut c = Conditions::default();
    for a in &args[3..] {
        if eq_ic(a, "nx") {
            c.nx = true;
        } else if eq_ic(a, "xx") {
            c.xx = true;
        } else if eq_ic(a, "gt") {
            c.gt = true;
        } else if eq_ic(a, "lt") {
            c.lt = true;
        } else {
            return Err(CmdError::bytes(&[
                b"ERR Unsupported option ",
                super::args::c_bytes(a),
            ]));
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Err(CmdError::msg(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if c.gt && c.lt {
        return Err(CmdError::msg(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    Ok(c)
}

fn expire_generic(ctx: &mut Ctx, args: &[&[u8]], seconds: bool, relative: bool) -> CmdResult {
    let key = args[1];
    let cond = parse_conditions(args)?;
    let mut when = int(args[2])?;
    let name = args[0].to_ascii_lowercase();
    let invalid = || CmdError::InvalidExpire(String::from_utf8_lossy(&name).into_owned());
    if seconds {
        when = when.checked_mul(1000).ok_or_else(invalid)?;
    }
    if relative {
        when = when.checked_add(ctx.now_ms).ok_or_else(invalid)?;
    }
    let now = ctx.now_ms;
    if ctx.propagating() {
        // As Redis: an absolute time in ms (the conditions as given), or
        // the deletion that a time in the past makes.
        if when <= now {
            let lazy = ctx.srv.config.lazyfree_lazy_expire();
            ctx.propagate_as(deletion_argv(key, lazy));
        } else if seconds || relative {
            let mut v = argv(&[b"PEXPIREAT", key, &int_arg(when)]);
            v.extend(args[3..].iter().map(|a| a.to_vec()));
            ctx.propagate_as(v);
        }
    }
    let r = ctx.with_key(key, |db| {
        if db.get_write(key).is_none() {
            return 0;
        }
        let current = db.table(key).expire_of(key);
        let has_ttl = current != 0;
        if (cond.nx && has_ttl)
            || (cond.xx && !has_ttl)
            || (cond.gt && (!has_ttl || when <= current))
            || (cond.lt && has_ttl && when >= current)
        {
            return 0;
        }
        if when <= now {
            db.table(key).remove(key);
            db.changed(key, Class::GENERIC, "del");
        } else {
            db.table(key).set_expire(key, when);
            db.changed(key, Class::GENERIC, "expire");
        }
        1
    });
    ctx.out.int(r);
    Ok(())
}

fn expire(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, true, true)
}

fn pexpire(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, false, true)
}

fn expireat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, true, false)
}

fn pexpireat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, false, false)
}

/// TTL-family replies: -2 missing, -1 persistent, else remaining or
/// absolute time, rounded to seconds as Redis rounds it.
fn ttl_generic(ctx: &mut Ctx, key: &[u8], ms: bool, absolute: bool) -> CmdResult {
    let now = ctx.now_ms;
    let at = ctx.with_key(key, |db| {
        db.get_read_untouched(key)?;
        Some(db.table(key).expire_of(key))
    });
    let reply = match at {
        None => -2,
        Some(0) => -1,
        Some(at) => {
            let v = if absolute { at } else { (at - now).max(0) };
            if ms {
                v
            } else {
                // Redis's rounding does not overflow near i64::MAX in
                // practice; widen to match it.
                ((v as i128 + 500) / 1000) as i64
            }
        }
    };
    ctx.out.int(reply);
    Ok(())
}

fn ttl(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args[1], false, false)
}

fn pttl(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args[1], true, false)
}

fn expiretime(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args[1], false, true)
}

fn pexpiretime(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args[1], true, true)
}

fn persist(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let r = ctx.with_key(key, |db| match db.get_write(key) {
        Some(e) if e.has_ttl() => {
            db.table(key).set_expire(key, 0);
            db.changed(key, Class::GENERIC, "persist");
            1
        }
        _ => 0,
    });
    ctx.out.int(r);
    Ok(())
}
