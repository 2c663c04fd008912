//! The `expire` family: EXPIRE PEXPIRE EXPIREAT PEXPIREAT with NX XX GT LT, TTL PTTL EXPIRETIME
//! PEXPIRETIME PERSIST, and the commands that keep, carry or clear a TTL. Times are far-future
//! (unique per step) or in the past, so every reply is deterministic; clock readings are compared
//! with a tolerance (see `gen::rel_future` and `Cmp::Approx`).

use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family {
    name: "expire",
    gen,
};

const KEYS: &[&str] = &["e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9"];
const COLL_KEYS: &[&str] = &["e:list", "e:set"];

/// Tolerance of TTL/EXPIRETIME in seconds and of PTTL/PEXPIRETIME in milliseconds: the two
/// servers read their clocks at slightly different moments.
const TOL_S: i64 = 60;
const TOL_MS: i64 = 60_000;

fn key(rng: &mut StdRng, ctx: &Ctx) -> String {
    if ctx.collections && chance(rng, 0.05) {
        return pick(rng, COLL_KEYS).to_string();
    }
    pick(rng, KEYS).to_string()
}

fn c_set(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let v = rng.gen_range(0..100).to_string();
    match rng.gen_range(0..6) {
        0..=2 => cmd(rng, "SET").arg(k).arg(v).exact(),
        3 => {
            let t = rel_future(rng, ctx, Unit::Secs);
            cmd(rng, "SET").arg(k).arg(v).opt(rng, "EX").arg(t).exact()
        }
        4 => {
            let t = abs_future(rng, Unit::Millis);
            cmd(rng, "SET")
                .arg(k)
                .arg(v)
                .opt(rng, "PXAT")
                .arg(t)
                .exact()
        }
        _ => cmd(rng, "SET").arg(k).arg(v).opt(rng, "KEEPTTL").exact(),
    }
}

/// The four EXPIRE variants with an optional condition (sometimes two, or an unknown one).
fn c_expire(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let (name, unit, absolute) = *pick(
        rng,
        &[
            ("EXPIRE", Unit::Secs, false),
            ("PEXPIRE", Unit::Millis, false),
            ("EXPIREAT", Unit::Secs, true),
            ("PEXPIREAT", Unit::Millis, true),
        ],
    );
    // Now and then an absolute command gets a relative-sized value: a time in 1970, so the key
    // is deleted. (The reverse is not done: an absolute-sized value given twice to a relative
    // command would make GT/LT depend on whether the two commands ran in the same millisecond.)
    let t = if absolute && chance(rng, 0.1) {
        rel_future(rng, ctx, unit)
    } else {
        expiry(rng, ctx, unit, absolute)
    };
    let mut c = cmd(rng, name).arg(k).arg(t);
    let nopts = match rng.gen_range(0..20) {
        0..=7 => 0,
        8..=18 => 1,
        _ => 2,
    };
    for _ in 0..nopts {
        let o = if chance(rng, 0.03) {
            "FOO"
        } else {
            *pick(rng, &["NX", "XX", "GT", "LT"])
        };
        c = c.opt(rng, o);
    }
    c.exact()
}

fn c_read_ttl(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let (name, tol) = *pick(
        rng,
        &[
            ("TTL", TOL_S),
            ("PTTL", TOL_MS),
            ("EXPIRETIME", TOL_S),
            ("PEXPIRETIME", TOL_MS),
        ],
    );
    cmd(rng, name).arg(k).cmp(Cmp::Approx(tol))
}

fn c_persist(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    cmd(rng, "PERSIST").arg(k).exact()
}

fn c_setex(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let v = rng.gen_range(0..100).to_string();
    if chance(rng, 0.5) {
        let t = expiry(rng, ctx, Unit::Secs, false);
        cmd(rng, "SETEX").arg(k).arg(t).arg(v).exact()
    } else {
        let t = expiry(rng, ctx, Unit::Millis, false);
        cmd(rng, "PSETEX").arg(k).arg(t).arg(v).exact()
    }
}

fn c_getex(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let c = cmd(rng, "GETEX").arg(k);
    match rng.gen_range(0..6) {
        0 => c.exact(),
        1 => c.opt(rng, "PERSIST").exact(),
        2 => {
            let t = expiry(rng, ctx, Unit::Secs, false);
            c.opt(rng, "EX").arg(t).exact()
        }
        3 => {
            let t = expiry(rng, ctx, Unit::Millis, false);
            c.opt(rng, "PX").arg(t).exact()
        }
        4 => {
            let t = expiry(rng, ctx, Unit::Secs, true);
            c.opt(rng, "EXAT").arg(t).exact()
        }
        _ => {
            let t = expiry(rng, ctx, Unit::Millis, true);
            c.opt(rng, "PXAT").arg(t).exact()
        }
    }
}

/// Commands that keep (APPEND, INCR, SETRANGE, RENAME, COPY), or clear (GETSET, SET) the TTL.
fn c_touch_value(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    match rng.gen_range(0..8) {
        0 => cmd(rng, "APPEND").arg(k).arg("x").exact(),
        1 => cmd(rng, "INCR").arg(k).exact(),
        2 => cmd(rng, "SETRANGE").arg(k).arg("1").arg("z").exact(),
        3 => {
            let v = rng.gen_range(0..100).to_string();
            cmd(rng, "GETSET").arg(k).arg(v).exact()
        }
        4 => {
            let to = key(rng, ctx);
            cmd(rng, "RENAME").arg(k).arg(to).exact()
        }
        5 => {
            let to = key(rng, ctx);
            cmd(rng, "COPY").arg(k).arg(to).opt(rng, "REPLACE").exact()
        }
        6 => cmd(rng, "GET").arg(k).exact(),
        _ => cmd(rng, "EXISTS").arg(k).exact(),
    }
}

fn c_del(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    if chance(rng, 0.8) {
        cmd(rng, "DEL").arg(k).exact()
    } else {
        cmd(rng, "TYPE").arg(k).exact()
    }
}

fn c_collection(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    if !ctx.collections {
        return c_set(rng, ctx);
    }
    let v = random_string(rng, ALNUM, 1, 5);
    if chance(rng, 0.5) {
        cmd(rng, "LPUSH").arg("e:list").arg(v).exact()
    } else {
        cmd(rng, "SADD").arg("e:set").arg(v).exact()
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (12, c_set),
            (25, c_expire),
            (18, c_read_ttl),
            (4, c_persist),
            (4, c_setex),
            (5, c_getex),
            (8, c_touch_value),
            (3, c_del),
            (1, c_collection),
        ],
    )
}
