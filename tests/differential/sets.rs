//! The `sets` family: every set command over few keys and member pools that mix integers (intset)
//! with strings, non-canonical integers ("01", "-0") and long members (hashtable), so that both
//! encodings, the conversion between them (also through `CONFIG SET set-max-intset-entries`),
//! WRONGTYPE (a string and a hash among the keys) and the multi-key algebra across shards are
//! common. SPOP runs on the target and its result is replayed on the reference (SREM), keeping
//! both in step; SRANDMEMBER is checked against the reference's state; SSCAN is compared over
//! whole iterations.

use super::common::{fmt_frame, Frame, RawClient};
use super::gen::*;
use super::hashes::shape;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family { name: "sets", gen };

const KEYS: &[&str] = &["s0", "s1", "s2", "s3", "s:big"];
/// Keys that hold another type (created by this generator), for WRONGTYPE.
const OTHER: &[&str] = &["s:str", "s:hash"];

fn key(rng: &mut StdRng) -> String {
    if chance(rng, 0.06) {
        return pick(rng, OTHER).to_string();
    }
    if chance(rng, 0.04) {
        return "s:none".to_string();
    }
    pick(rng, KEYS).to_string()
}

/// Keys fed integers (and, rarely, anything else), so that they stay intsets until they grow past
/// the limit; the others get strings often and become hashtables.
const INTS: &[&str] = &["s0", "s1", "s:big"];

/// A member for `key`: integers for the integer keys.
fn member_for(rng: &mut StdRng, key: &str) -> Vec<u8> {
    if INTS.contains(&key) && chance(rng, 0.97) {
        return match rng.gen_range(0..20) {
            0 => pick(
                rng,
                &[
                    "9223372036854775807",
                    "-9223372036854775808",
                    "40000",
                    "-70000",
                ],
            )
            .as_bytes()
            .to_vec(),
            _ => rng.gen_range(-3i64..25).to_string().into_bytes(),
        };
    }
    member(rng)
}

fn member(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..100) {
        0..=49 => rng.gen_range(-3i64..25).to_string().into_bytes(),
        50..=54 => pick(
            rng,
            &[
                "9223372036854775807",
                "-9223372036854775808",
                "32767",
                "32768",
                "-32769",
                "2147483647",
                "2147483648",
                "-2147483649",
                "100000",
            ],
        )
        .as_bytes()
        .to_vec(),
        55..=59 => pick(rng, &["01", "-0", "+1", " 1", "1 ", "1.0", "0x1", ""])
            .as_bytes()
            .to_vec(),
        60..=89 => pick(rng, &["a", "b", "c", "d", "e", "f", "g", "h"])
            .as_bytes()
            .to_vec(),
        90..=94 => random_string(rng, ALNUM, 30, 70),
        _ => random_string(rng, b"a\x00\r\n\xff \"", 1, 5),
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (16, c_sadd),
            (8, c_srem),
            (3, c_scard),
            (5, c_sismember),
            (3, c_smismember),
            (4, c_smembers),
            (5, c_srandmember),
            (5, c_spop),
            (5, c_smove),
            (8, c_algebra),
            (3, c_sintercard),
            (6, c_store),
            (3, c_sscan),
            (5, c_encoding),
            (1, c_other_types),
            (3, c_keyspace),
            (1, c_config),
        ],
    )
}

fn c_sadd(rng: &mut StdRng, _: &Ctx) -> Cmd {
    // Sometimes many integers at once, so that intsets grow past the limit.
    if chance(rng, 0.12) {
        let mut b = cmd(rng, "SADD").arg("s:big");
        for _ in 0..rng.gen_range(5..40) {
            b = b.arg(rng.gen_range(0..700).to_string());
        }
        if chance(rng, 0.1) {
            b = b.arg(member(rng));
        }
        return b.exact();
    }
    let k = key(rng);
    let mut b = cmd(rng, "SADD").arg(&k);
    for _ in 0..rng.gen_range(1..5) {
        b = b.arg(member_for(rng, &k));
    }
    b.exact()
}

fn c_srem(rng: &mut StdRng, _: &Ctx) -> Cmd {
    if chance(rng, 0.1) {
        let mut b = cmd(rng, "SREM").arg("s:big");
        for _ in 0..rng.gen_range(5..40) {
            b = b.arg(rng.gen_range(0..700).to_string());
        }
        return b.exact();
    }
    let k = key(rng);
    let mut b = cmd(rng, "SREM").arg(&k);
    for _ in 0..rng.gen_range(1..6) {
        b = b.arg(member_for(rng, &k));
    }
    b.exact()
}

fn c_scard(rng: &mut StdRng, _: &Ctx) -> Cmd {
    cmd(rng, "SCARD").arg(key(rng)).exact()
}

fn c_sismember(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    let m = member_for(rng, &k);
    cmd(rng, "SISMEMBER").arg(k).arg(m).exact()
}

fn c_smismember(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    let mut b = cmd(rng, "SMISMEMBER").arg(&k);
    for _ in 0..rng.gen_range(1..5) {
        b = b.arg(member_for(rng, &k));
    }
    b.exact()
}

fn c_smembers(rng: &mut StdRng, _: &Ctx) -> Cmd {
    cmd(rng, "SMEMBERS").arg(key(rng)).cmp(Cmp::Unordered)
}

fn count_arg(rng: &mut StdRng) -> String {
    match rng.gen_range(0..10) {
        0..=5 => rng.gen_range(-6i64..=6).to_string(),
        6 => rng.gen_range(-300i64..=300).to_string(),
        7 => pick(rng, &["9223372036854775807", "1000", "100000"]).to_string(),
        8 => pick(rng, &["abc", "", "1.5", "-0", "-9223372036854775808"]).to_string(),
        _ => rng.gen_range(0..3).to_string(),
    }
}

fn c_srandmember(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let mut b = cmd(rng, "SRANDMEMBER").arg(key(rng));
    if chance(rng, 0.8) {
        b = b.arg(count_arg(rng));
    }
    if chance(rng, 0.02) {
        b = b.arg(junk(rng));
    }
    b.cmp(Cmp::Custom(check_srandmember))
}

fn c_spop(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let mut b = cmd(rng, "SPOP").arg(key(rng));
    if chance(rng, 0.7) {
        let c = count_arg(rng);
        b = b.arg(c);
    }
    if chance(rng, 0.02) {
        b = b.arg(junk(rng));
    }
    b.cmp(Cmp::Custom(check_spop))
}

fn c_smove(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let (src, dst) = (key(rng), key(rng));
    let m = member_for(rng, &src);
    cmd(rng, "SMOVE").arg(src).arg(dst).arg(m).exact()
}

fn keys(rng: &mut StdRng) -> Vec<String> {
    (0..rng.gen_range(1..5)).map(|_| key(rng)).collect()
}

fn c_algebra(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let name = *pick(rng, &["SINTER", "SUNION", "SDIFF"]);
    cmd(rng, name).args(keys(rng)).cmp(Cmp::Unordered)
}

fn c_store(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let name = *pick(rng, &["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]);
    cmd(rng, name).arg(key(rng)).args(keys(rng)).exact()
}

fn c_sintercard(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let ks = keys(rng);
    let numkeys = match rng.gen_range(0..12) {
        0 => pick(rng, &["0", "-1", "abc", "9999999999999"]).to_string(),
        1 => (ks.len() + 1).to_string(),
        2 if ks.len() > 1 => (ks.len() - 1).to_string(),
        _ => ks.len().to_string(),
    };
    let mut b = cmd(rng, "SINTERCARD").arg(numkeys).args(ks);
    if chance(rng, 0.4) {
        let l = *pick(rng, &["0", "1", "2", "3", "100", "-1", "x"]);
        b = b.opt(rng, "LIMIT").arg(l);
    }
    b.exact()
}

fn c_sscan(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let mut b = cmd(rng, "SSCAN").arg(key(rng)).arg("0");
    if chance(rng, 0.4) {
        let p = *pick(rng, &["*", "1*", "?", "*1", "[a-c]*", "-*", "\\*", ""]);
        b = b.opt(rng, "MATCH").arg(p);
    }
    if chance(rng, 0.5) {
        let c = *pick(rng, &["1", "2", "5", "10", "100", "0", "-1", "x"]);
        b = b.opt(rng, "COUNT").arg(c);
    }
    if chance(rng, 0.03) {
        b = b.arg(junk(rng));
    }
    b.cmp(Cmp::ScanAll {
        cursor_arg: 2,
        group: 1,
    })
}

fn c_encoding(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    match rng.gen_range(0..4) {
        0 => cmd(rng, "TYPE").arg(k).exact(),
        1 => cmd(rng, "EXISTS").arg(k).exact(),
        _ => cmd(rng, "OBJECT").arg("ENCODING").arg(k).fixed(),
    }
}

fn c_other_types(rng: &mut StdRng, _: &Ctx) -> Cmd {
    if chance(rng, 0.5) {
        cmd(rng, "SET").arg("s:str").arg(member(rng)).exact()
    } else {
        cmd(rng, "HSET")
            .arg("s:hash")
            .arg(member(rng))
            .arg(member(rng))
            .exact()
    }
}

fn c_keyspace(rng: &mut StdRng, _: &Ctx) -> Cmd {
    match rng.gen_range(0..5) {
        0..=2 => cmd(rng, "DEL").arg(key(rng)).exact(),
        3 => cmd(rng, "COPY")
            .arg(key(rng))
            .arg(key(rng))
            .opt(rng, "REPLACE")
            .fixed(),
        _ => cmd(rng, "RENAME").arg(key(rng)).arg(key(rng)).fixed(),
    }
}

fn c_config(rng: &mut StdRng, _: &Ctx) -> Cmd {
    // Mostly back to the default, so that intsets live long enough to be exercised.
    let v = *pick(
        rng,
        &[
            "0", "1", "2", "3", "5", "8", "16", "64", "512", "512", "512", "512", "512",
        ],
    );
    cmd(rng, "CONFIG")
        .arg("SET")
        .arg("set-max-intset-entries")
        .arg(v)
        .fixed()
}

// ---- random commands --------------------------------------------------------------------------

fn bulk_items(f: &Frame) -> Option<Vec<Vec<u8>>> {
    let items = match f {
        Frame::Bulk(b) => return Some(vec![b.clone()]),
        Frame::Array(items) | Frame::Set(items) if !items.is_empty() => items,
        _ => return None,
    };
    items
        .iter()
        .map(|i| match i {
            Frame::Bulk(b) => Some(b.clone()),
            _ => None,
        })
        .collect()
}

fn with_key(name: &[u8], key: &[u8], rest: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut v = vec![name.to_vec(), key.to_vec()];
    v.extend(rest.iter().cloned());
    v
}

/// SRANDMEMBER: the same shape as the reference's reply, only members of the reference's set,
/// distinct for a positive count.
fn check_srandmember(
    args: &[Vec<u8>],
    r: &mut RawClient,
    t: &mut RawClient,
) -> Result<(), (String, String)> {
    let rr = r.call(args);
    let tr = t.call(args);
    let fail = |why: &str| Err((fmt_frame(&rr), format!("{} ({why})", fmt_frame(&tr))));
    if shape(&rr) != shape(&tr) {
        return fail("different shape");
    }
    let Some(got) = bulk_items(&tr) else {
        return if rr == tr { Ok(()) } else { fail("different") };
    };
    if args.len() == 3 && !args[2].starts_with(b"-") {
        let mut d = got.clone();
        d.sort();
        d.dedup();
        if d.len() != got.len() {
            return fail("repeated members for a positive count");
        }
    }
    let is = r.call(&with_key(b"SMISMEMBER", &args[1], &got));
    match &is {
        Frame::Array(v) if v.iter().all(|x| *x == Frame::Integer(1)) => Ok(()),
        _ => Err((
            format!("SMISMEMBER of them on the reference: {}", fmt_frame(&is)),
            fmt_frame(&tr),
        )),
    }
}

/// SPOP: run on the target; what it popped is removed from the reference with SREM, which must
/// find every member (so they were distinct members), and the count must be min(count, size).
/// Replies without members (errors, nil, empty) must equal what the reference replies itself.
fn check_spop(
    args: &[Vec<u8>],
    r: &mut RawClient,
    t: &mut RawClient,
) -> Result<(), (String, String)> {
    let tr = t.call(args);
    let Some(popped) = bulk_items(&tr) else {
        let rr = r.call(args);
        return if rr == tr {
            Ok(())
        } else {
            Err((fmt_frame(&rr), fmt_frame(&tr)))
        };
    };
    let key = &args[1];
    if args.len() == 3 {
        // The reply type (a set in RESP3) as the reference gives it for an empty pop.
        let empty = r.call(&[&b"SPOP"[..], b"diff:no-such-set", b"0"]);
        if std::mem::discriminant(&empty) != std::mem::discriminant(&tr) {
            return Err((
                format!("a reply of the type of {}", fmt_frame(&empty)),
                fmt_frame(&tr),
            ));
        }
    } else if !matches!(tr, Frame::Bulk(_)) {
        return Err(("a bulk string".into(), fmt_frame(&tr)));
    }
    let removed = r.call(&with_key(b"SREM", key, &popped));
    if removed != Frame::Integer(popped.len() as i64) {
        return Err((
            format!("SREM of them on the reference: {}", fmt_frame(&removed)),
            fmt_frame(&tr),
        ));
    }
    if let Some(count) = args
        .get(2)
        .and_then(|c| std::str::from_utf8(c).ok())
        .and_then(|c| c.parse::<u64>().ok())
    {
        let left = match r.call(&[&b"SCARD"[..], key]) {
            Frame::Integer(n) => n as u64,
            other => return Err((fmt_frame(&other), fmt_frame(&tr))),
        };
        let expected = count.min(left + popped.len() as u64);
        if popped.len() as u64 != expected {
            return Err((format!("{expected} members"), fmt_frame(&tr)));
        }
    }
    Ok(())
}
