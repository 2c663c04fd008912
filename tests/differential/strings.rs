//! The `strings` family: GET/SET and every option, the multi-key forms, counters, ranges, LCS,
//! and OBJECT ENCODING (int / embstr / raw transitions).

use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family {
    name: "strings",
    gen,
};

/// Keys most commands use: few, so that overwrites, counters on text and missing keys are common.
const KEYS: &[&str] = &[
    "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s:10", "s:11",
];
/// Keys holding short strings over a tiny alphabet, for LCS (whose cost is the product of the
/// lengths: one side of every LCS is one of these).
const LCS_KEYS: &[&str] = &["lcs:a", "lcs:b", "lcs:c"];
/// Keys the counter commands favour, so that increments chain instead of mostly failing on text.
const CTR_KEYS: &[&str] = &["ctr:0", "ctr:1", "ctr:2"];
/// Keys that hold a list or a set when `DIFF_COLLECTIONS=1`.
const COLL_KEYS: &[&str] = &["s:list", "s:set"];

fn key(rng: &mut StdRng, ctx: &Ctx) -> String {
    if ctx.collections && chance(rng, 0.05) {
        return pick(rng, COLL_KEYS).to_string();
    }
    if chance(rng, 0.08) {
        return pick(rng, CTR_KEYS).to_string();
    }
    pick(rng, KEYS).to_string()
}

/// Integer counters live in ctr:0 and ctr:1, float ones in ctr:2 (once INCRBYFLOAT writes a
/// fraction, INCR fails on that key until something overwrites it).
fn counter_key(rng: &mut StdRng, ctx: &Ctx, float: bool) -> String {
    if chance(rng, 0.6) {
        if float {
            "ctr:2".to_string()
        } else {
            pick(rng, &CTR_KEYS[..2]).to_string()
        }
    } else {
        key(rng, ctx)
    }
}

/// Values: integers (shared-integer range and beyond, non-canonical forms), floats, text around
/// the embstr/raw threshold of 44 bytes, binary bytes.
pub fn value(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(-10..30) {
        -10..=5 => rng.gen_range(-20i64..=120).to_string().into_bytes(),
        6..=7 => rng
            .gen_range(-1_000_000i64..=1_000_000)
            .to_string()
            .into_bytes(),
        8 => pick(
            rng,
            &[
                "9999", "10000", "10001", "-1", "0", "-0", "007", "+1", " 1", "1 ", "0x1f", "",
            ],
        )
        .as_bytes()
        .to_vec(),
        9 => pick(
            rng,
            &[
                "9223372036854775807",
                "-9223372036854775808",
                "9223372036854775806",
                "9223372036854775808",
                "18446744073709551615",
                "12345678901234567890",
                "-12345678901234567890123",
            ],
        )
        .as_bytes()
        .to_vec(),
        10..=13 => pick(
            rng,
            &[
                "3.14",
                "-2.5",
                "0.1",
                "1e3",
                "1E-3",
                "5.0e3",
                ".5",
                "5.",
                "1.0",
                "-0.0",
                "inf",
                "-inf",
                "nan",
                "1e308",
                "10.50",
                "3.0000000000000001",
                "17.123456789012345678",
            ],
        )
        .as_bytes()
        .to_vec(),
        14..=20 => random_string(rng, ALNUM, 1, 12),
        21..=23 => random_string(rng, ALNUM, 40, 50),
        24 => random_string(rng, ALNUM, 44, 45),
        25 => random_string(rng, ALNUM, 60, 200),
        26 => random_string(rng, b"a\x00\r\n\xff\" b", 1, 10),
        _ => pick(rng, &["hello", "world", "foo", "bar", "", " ", "OK", "nil"])
            .as_bytes()
            .to_vec(),
    }
}

fn lcs_value(rng: &mut StdRng) -> Vec<u8> {
    if chance(rng, 0.5) {
        random_string(rng, b"abc", 0, 20)
    } else {
        random_string(rng, b"ACGT", 0, 24)
    }
}

/// An increment for INCRBY/DECRBY.
fn incr_arg(rng: &mut StdRng) -> String {
    int_arg(rng)
}

/// An increment for INCRBYFLOAT.
fn float_arg(rng: &mut StdRng) -> String {
    match rng.gen_range(0..10) {
        0..=3 => pick(
            rng,
            &[
                "0.1", "1.5", "-2.25", "10", "-1", "0", "3.0e2", "1e-2", "2.5E1", "-0.5", "100.001",
            ],
        )
        .to_string(),
        4..=6 => format!(
            "{}.{}",
            rng.gen_range(-1000i32..1000),
            rng.gen_range(0u32..1000)
        ),
        7 => pick(
            rng,
            &["1e308", "-1e308", "1.7976931348623157e308", "5e-324"],
        )
        .to_string(),
        8 => pick(rng, &["inf", "-inf", "+inf", "nan", "NaN", "infinity"]).to_string(),
        _ => pick(
            rng,
            &[
                "abc", "", "1.5.5", "0x10", " 1", "1 ", "1e", "e5", "--1", "1,5",
            ],
        )
        .to_string(),
    }
}

fn index(rng: &mut StdRng) -> String {
    match rng.gen_range(0..10) {
        0..=6 => rng.gen_range(-60i64..=60).to_string(),
        7 => pick(rng, &["0", "-1", "100000"]).to_string(),
        8 => pick(
            rng,
            &[
                "9223372036854775807",
                "-9223372036854775808",
                "4294967296",
                "-4294967297",
            ],
        )
        .to_string(),
        _ => pick(rng, &["abc", "", "1.5", "9223372036854775808"]).to_string(),
    }
}

/// SET's expiry option with its argument.
fn set_expiry(rng: &mut StdRng, ctx: &Ctx) -> Vec<String> {
    match rng.gen_range(0..5) {
        0 => vec!["EX".into(), expiry(rng, ctx, Unit::Secs, false)],
        1 => vec!["PX".into(), expiry(rng, ctx, Unit::Millis, false)],
        2 => vec!["EXAT".into(), expiry(rng, ctx, Unit::Secs, true)],
        3 => vec!["PXAT".into(), expiry(rng, ctx, Unit::Millis, true)],
        _ => vec!["KEEPTTL".into()],
    }
}

fn c_set(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let v = value(rng);
    // Option groups in random order; a few commands get conflicting or repeated options.
    let mut groups: Vec<Vec<String>> = Vec::new();
    if chance(rng, 0.25) {
        groups.push(vec![pick(rng, &["NX", "XX"]).to_string()]);
    }
    if chance(rng, 0.2) {
        groups.push(vec!["GET".into()]);
    }
    if chance(rng, 0.45) {
        groups.push(set_expiry(rng, ctx));
    }
    if chance(rng, 0.04) {
        // NX XX, EX PX, KEEPTTL EX, GET GET, ...
        let extra = match rng.gen_range(0..4) {
            0 => vec![pick(rng, &["NX", "XX"]).to_string()],
            1 => set_expiry(rng, ctx),
            2 => vec!["GET".into()],
            _ => vec![pick(rng, &["EX", "PX", "EXAT", "PXAT"]).to_string()], // missing argument
        };
        groups.push(extra);
    }
    shuffle(rng, &mut groups);
    let mut b = cmd(rng, "SET").arg(k).arg(v);
    for g in groups {
        let mut it = g.into_iter();
        let first = it.next().unwrap();
        b = b.opt(rng, &first).args(it);
    }
    b.exact()
}

fn shuffle<T>(rng: &mut StdRng, v: &mut [T]) {
    use rand::seq::SliceRandom;
    v.shuffle(rng);
}

fn c_set_plain(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let v = if chance(rng, 0.5) {
        rng.gen_range(-100i64..200).to_string().into_bytes()
    } else {
        value(rng)
    };
    cmd(rng, "SET").arg(k).arg(v).exact()
}

fn c_setnx(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let (k, v) = (key(rng, ctx), value(rng));
    cmd(rng, "SETNX").arg(k).arg(v).exact()
}

fn c_setex(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    if chance(rng, 0.5) {
        let t = expiry(rng, ctx, Unit::Secs, false);
        let v = value(rng);
        cmd(rng, "SETEX").arg(k).arg(t).arg(v).exact()
    } else {
        let t = expiry(rng, ctx, Unit::Millis, false);
        let v = value(rng);
        cmd(rng, "PSETEX").arg(k).arg(t).arg(v).exact()
    }
}

fn c_get(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    cmd(rng, "GET").arg(k).exact()
}

fn c_mget(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let n = rng.gen_range(1..=5);
    let keys: Vec<String> = (0..n).map(|_| key(rng, ctx)).collect();
    cmd(rng, "MGET").args(keys).exact()
}

fn c_mset(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let name = if chance(rng, 0.7) { "MSET" } else { "MSETNX" };
    let mut b = cmd(rng, name);
    for _ in 0..rng.gen_range(1..=4) {
        let (k, v) = (key(rng, ctx), value(rng));
        b = b.arg(k).arg(v);
    }
    if chance(rng, 0.05) {
        let k = key(rng, ctx);
        b = b.arg(k); // odd number of arguments
    }
    b.exact()
}

fn c_getset(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let (k, v) = (key(rng, ctx), value(rng));
    cmd(rng, "GETSET").arg(k).arg(v).exact()
}

fn c_getdel(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    cmd(rng, "GETDEL").arg(k).exact()
}

fn c_getex(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let mut b = cmd(rng, "GETEX").arg(k);
    let n = if chance(rng, 0.1) {
        2
    } else {
        rng.gen_range(0..=1)
    };
    for _ in 0..n {
        if chance(rng, 0.2) {
            b = b.opt(rng, "PERSIST");
        } else {
            let g = set_expiry(rng, ctx);
            let mut it = g.into_iter();
            let first = it.next().unwrap();
            b = b.opt(rng, &first).args(it); // KEEPTTL is not a GETEX option: a syntax error
        }
    }
    b.exact()
}

fn c_append(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let v = if chance(rng, 0.3) {
        rng.gen_range(0..100).to_string().into_bytes()
    } else {
        random_string(rng, ALNUM, 0, 12)
    };
    cmd(rng, "APPEND").arg(k).arg(v).exact()
}

fn c_strlen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    cmd(rng, "STRLEN").arg(k).exact()
}

fn c_incr(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = counter_key(rng, ctx, false);
    match rng.gen_range(0..4) {
        0 => cmd(rng, "INCR").arg(k).exact(),
        1 => cmd(rng, "DECR").arg(k).exact(),
        2 => {
            let n = incr_arg(rng);
            cmd(rng, "INCRBY").arg(k).arg(n).exact()
        }
        _ => {
            let n = incr_arg(rng);
            cmd(rng, "DECRBY").arg(k).arg(n).exact()
        }
    }
}

fn c_incrbyfloat(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = counter_key(rng, ctx, true);
    let n = float_arg(rng);
    cmd(rng, "INCRBYFLOAT").arg(k).arg(n).exact()
}

fn c_getrange(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let (s, e) = (index(rng), index(rng));
    let name = if chance(rng, 0.8) {
        "GETRANGE"
    } else {
        "SUBSTR"
    };
    cmd(rng, name).arg(k).arg(s).arg(e).exact()
}

fn c_setrange(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let off = match rng.gen_range(0..10) {
        0..=6 => rng.gen_range(0..60).to_string(),
        7 => pick(rng, &["100", "1000", "0"]).to_string(),
        8 => pick(
            rng,
            &["-1", "536870912", "536870911", "9223372036854775807"],
        )
        .to_string(),
        _ => pick(rng, &["abc", "", "1.5"]).to_string(),
    };
    // Offsets past 512 MB only ever come with a non-empty value (rejected); a successful huge
    // offset would allocate that much on both servers.
    let v = if off == "536870911" {
        b"xy".to_vec()
    } else if chance(rng, 0.1) {
        Vec::new()
    } else {
        random_string(rng, ALNUM, 1, 10)
    };
    cmd(rng, "SETRANGE").arg(k).arg(off).arg(v).exact()
}

fn c_lcs_set(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = pick(rng, LCS_KEYS).to_string();
    let v = lcs_value(rng);
    cmd(rng, "SET").arg(k).arg(v).exact()
}

fn c_lcs(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let a = pick(rng, LCS_KEYS).to_string();
    let b = match rng.gen_range(0..10) {
        0..=6 => pick(rng, LCS_KEYS).to_string(),
        7..=8 => key(rng, ctx),
        _ => "lcs:missing".to_string(),
    };
    let (a, b) = if chance(rng, 0.5) { (a, b) } else { (b, a) };
    let mut opts: Vec<Vec<String>> = Vec::new();
    if chance(rng, 0.3) {
        opts.push(vec!["LEN".into()]);
    }
    if chance(rng, 0.5) {
        opts.push(vec!["IDX".into()]);
    }
    if chance(rng, 0.3) {
        let n = pick(
            rng,
            &[
                "0",
                "1",
                "2",
                "3",
                "4",
                "6",
                "-1",
                "abc",
                "9223372036854775807",
            ],
        )
        .to_string();
        opts.push(vec!["MINMATCHLEN".into(), n]);
    }
    if chance(rng, 0.3) {
        opts.push(vec!["WITHMATCHLEN".into()]);
    }
    if chance(rng, 0.03) {
        opts.push(vec![pick(rng, &["FOO", "MINMATCHLEN"]).to_string()]);
    }
    shuffle(rng, &mut opts);
    let mut c = cmd(rng, "LCS").arg(a).arg(b);
    for g in opts {
        let mut it = g.into_iter();
        let first = it.next().unwrap();
        c = c.opt(rng, &first).args(it);
    }
    c.exact()
}

fn c_encoding(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = if chance(rng, 0.1) {
        pick(rng, LCS_KEYS).to_string()
    } else {
        key(rng, ctx)
    };
    cmd(rng, "OBJECT").opt(rng, "ENCODING").arg(k).exact()
}

fn c_ttl(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    if chance(rng, 0.5) {
        cmd(rng, "TTL").arg(k).cmp(Cmp::Approx(60))
    } else {
        cmd(rng, "PTTL").arg(k).cmp(Cmp::Approx(60_000))
    }
}

fn c_misc(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    match rng.gen_range(0..4) {
        0 => cmd(rng, "DEL").arg(k).exact(),
        1 => cmd(rng, "EXISTS").arg(k).exact(),
        2 => cmd(rng, "TYPE").arg(k).exact(),
        _ => cmd(rng, "PERSIST").arg(k).exact(),
    }
}

fn c_collection(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    if !ctx.collections {
        return c_get(rng, ctx);
    }
    let v = random_string(rng, ALNUM, 1, 5);
    if chance(rng, 0.5) {
        cmd(rng, "LPUSH").arg("s:list").arg(v).exact()
    } else {
        cmd(rng, "SADD").arg("s:set").arg(v).exact()
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (14, c_set),
            (6, c_set_plain),
            (3, c_setnx),
            (4, c_setex),
            (10, c_get),
            (4, c_mget),
            (4, c_mset),
            (3, c_getset),
            (2, c_getdel),
            (4, c_getex),
            (4, c_append),
            (3, c_strlen),
            (8, c_incr),
            (5, c_incrbyfloat),
            (5, c_getrange),
            (4, c_setrange),
            (3, c_lcs_set),
            (5, c_lcs),
            (5, c_encoding),
            (3, c_ttl),
            (3, c_misc),
            (1, c_collection),
        ],
    )
}
