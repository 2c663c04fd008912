//! The `hashes` family: every hash command, over few keys and small field pools so that
//! overwrites, deletes down to an empty hash, counters on text and WRONGTYPE (a string and a set
//! among the keys) are common. `CONFIG SET hash-max-listpack-entries/-value` to small values now
//! and then makes hashes cross the listpack → hashtable thresholds in both directions of the
//! limits, and OBJECT ENCODING is compared throughout. Random replies (HRANDFIELD) are checked
//! against the reference's state; HSCAN is compared over whole iterations.

use super::common::{fmt_frame, Frame, RawClient};
use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family {
    name: "hashes",
    gen,
};

const KEYS: &[&str] = &["h0", "h1", "h2", "h3", "h:big"];
/// Keys fed short fields and values only (rarely a long one), so that they stay listpacks until a
/// limit is lowered; the others get long items more often and become hashtables.
const COMPACT: &[&str] = &["h0", "h1"];
/// Keys that hold another type (created by this generator), for WRONGTYPE.
const OTHER: &[&str] = &["h:str", "h:set"];

fn key(rng: &mut StdRng) -> String {
    if chance(rng, 0.07) {
        return pick(rng, OTHER).to_string();
    }
    pick(rng, KEYS).to_string()
}

fn is_compact(key: &[u8]) -> bool {
    COMPACT.iter().any(|k| k.as_bytes() == key)
}

/// A field for `key`: from the compact pool for the compact keys.
fn field_for(rng: &mut StdRng, key: &str) -> Vec<u8> {
    if is_compact(key.as_bytes()) && chance(rng, 0.97) {
        return match rng.gen_range(0..10) {
            0..=6 => format!("f{}", rng.gen_range(0..8)).into_bytes(),
            7 => rng.gen_range(0..5).to_string().into_bytes(),
            8 => pick(rng, &["n0", "x0"]).as_bytes().to_vec(),
            _ => random_string(rng, ALNUM, 0, 6),
        };
    }
    field(rng)
}

/// A value for `key`: short ones for the compact keys.
fn value_for(rng: &mut StdRng, key: &str) -> Vec<u8> {
    if is_compact(key.as_bytes()) && chance(rng, 0.97) {
        return match rng.gen_range(0..10) {
            0..=4 => rng.gen_range(-100i64..1000).to_string().into_bytes(),
            5 => pick(rng, &["1.5", "abc", "", "01", "1e3"])
                .as_bytes()
                .to_vec(),
            _ => random_string(rng, ALNUM, 1, 20),
        };
    }
    value(rng)
}

fn field(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..100) {
        0..=59 => format!("f{}", rng.gen_range(0..12)).into_bytes(),
        60..=69 => rng.gen_range(0..10).to_string().into_bytes(),
        70..=74 => pick(rng, &["n0", "n1", "x0"]).as_bytes().to_vec(),
        75..=79 => format!("g{}", rng.gen_range(0..300)).into_bytes(),
        80..=83 => random_string(rng, ALNUM, 60, 70),
        84..=85 => random_string(rng, b"a\x00\r\n\xff \"", 1, 6),
        86 => Vec::new(),
        _ => random_string(rng, ALNUM, 1, 8),
    }
}

fn value(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..100) {
        0..=29 => rng.gen_range(-100i64..1000).to_string().into_bytes(),
        30..=39 => pick(
            rng,
            &[
                "1.5",
                "-0.25",
                "1e3",
                "10.50",
                "inf",
                "nan",
                "9223372036854775807",
                "-9223372036854775808",
                "01",
                " 1",
                "",
                "0x10",
            ],
        )
        .as_bytes()
        .to_vec(),
        40..=47 => random_string(rng, ALNUM, 60, 70),
        48..=49 => random_string(rng, b"a\x00\r\n\xff \"", 0, 6),
        _ => random_string(rng, ALNUM, 1, 12),
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (16, c_hset),
            (3, c_hmset),
            (4, c_hsetnx),
            (8, c_hget),
            (5, c_hmget),
            (9, c_hdel),
            (3, c_hlen),
            (3, c_hstrlen),
            (4, c_hexists),
            (3, c_hkeys_hvals),
            (5, c_hgetall),
            (6, c_hincrby),
            (5, c_hincrbyfloat),
            (5, c_hrandfield),
            (3, c_hscan),
            (5, c_encoding),
            (1, c_other_types),
            (3, c_keyspace),
            (1, c_config),
        ],
    )
}

fn c_hset(rng: &mut StdRng, _: &Ctx) -> Cmd {
    // Sometimes many pairs at once on one key, so that hashes grow past any limit.
    let (k, pairs) = if chance(rng, 0.15) {
        ("h:big".to_string(), rng.gen_range(5..40))
    } else {
        (key(rng), rng.gen_range(1..4))
    };
    let big = k == "h:big";
    let mut b = cmd(rng, "HSET").arg(&k);
    for _ in 0..pairs {
        let f = if big && chance(rng, 0.5) {
            format!("g{}", rng.gen_range(0..300)).into_bytes()
        } else {
            field_for(rng, &k)
        };
        let v = value_for(rng, &k);
        b = b.arg(f).arg(v);
    }
    if chance(rng, 0.03) {
        b = b.arg(field(rng)); // odd number of arguments
    }
    b.exact()
}

fn c_hmset(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    let mut b = cmd(rng, "HMSET").arg(&k);
    for _ in 0..rng.gen_range(1..4) {
        let (f, v) = (field_for(rng, &k), value_for(rng, &k));
        b = b.arg(f).arg(v);
    }
    b.exact()
}

fn c_hsetnx(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    let (f, v) = (field_for(rng, &k), value_for(rng, &k));
    cmd(rng, "HSETNX").arg(k).arg(f).arg(v).exact()
}

fn c_hget(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    let f = field_for(rng, &k);
    cmd(rng, "HGET").arg(k).arg(f).exact()
}

fn c_hmget(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    let mut b = cmd(rng, "HMGET").arg(&k);
    for _ in 0..rng.gen_range(1..5) {
        b = b.arg(field_for(rng, &k));
    }
    b.exact()
}

fn c_hdel(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let (k, n) = if chance(rng, 0.1) {
        ("h:big".to_string(), rng.gen_range(5..40))
    } else {
        (key(rng), rng.gen_range(1..6))
    };
    let big = k == "h:big";
    let mut b = cmd(rng, "HDEL").arg(&k);
    for _ in 0..n {
        let f = if big && chance(rng, 0.5) {
            format!("g{}", rng.gen_range(0..300)).into_bytes()
        } else {
            field_for(rng, &k)
        };
        b = b.arg(f);
    }
    b.exact()
}

fn c_hlen(rng: &mut StdRng, _: &Ctx) -> Cmd {
    cmd(rng, "HLEN").arg(key(rng)).exact()
}

fn c_hstrlen(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    let f = field_for(rng, &k);
    cmd(rng, "HSTRLEN").arg(k).arg(f).exact()
}

fn c_hexists(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    let f = field_for(rng, &k);
    cmd(rng, "HEXISTS").arg(k).arg(f).exact()
}

fn c_hkeys_hvals(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let name = *pick(rng, &["HKEYS", "HVALS"]);
    cmd(rng, name).arg(key(rng)).cmp(Cmp::Unordered)
}

fn c_hgetall(rng: &mut StdRng, _: &Ctx) -> Cmd {
    cmd(rng, "HGETALL")
        .arg(key(rng))
        .cmp(Cmp::Check(unordered_pairs))
}

fn c_hincrby(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let f = if chance(rng, 0.6) {
        pick(rng, &["n0", "n1"]).as_bytes().to_vec()
    } else {
        field(rng)
    };
    cmd(rng, "HINCRBY")
        .arg(key(rng))
        .arg(f)
        .arg(int_arg(rng))
        .exact()
}

fn float_arg(rng: &mut StdRng) -> String {
    match rng.gen_range(0..10) {
        0..=4 => pick(
            rng,
            &[
                "0.1", "1.5", "-2.25", "10", "-1", "0", "3.0e2", "1e-2", "-0.5", "100.001",
            ],
        )
        .to_string(),
        5..=6 => format!(
            "{}.{}",
            rng.gen_range(-1000i32..1000),
            rng.gen_range(0u32..1000)
        ),
        7 => pick(rng, &["1e308", "-1e308", "1e4000", "5e-324", "1e70"]).to_string(),
        8 => pick(rng, &["inf", "-inf", "+inf", "nan", "infinity"]).to_string(),
        _ => pick(rng, &["abc", "", " 1", "1 ", "1.5.5", "0x10", "--1"]).to_string(),
    }
}

fn c_hincrbyfloat(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let f = if chance(rng, 0.6) {
        pick(rng, &["x0", "n1"]).as_bytes().to_vec()
    } else {
        field(rng)
    };
    cmd(rng, "HINCRBYFLOAT")
        .arg(key(rng))
        .arg(f)
        .arg(float_arg(rng))
        .exact()
}

fn c_hrandfield(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let mut b = cmd(rng, "HRANDFIELD").arg(key(rng));
    if chance(rng, 0.8) {
        let count = match rng.gen_range(0..10) {
            0..=5 => rng.gen_range(-6i64..=6).to_string(),
            6 => rng.gen_range(-400i64..=400).to_string(),
            7 => pick(
                rng,
                &[
                    "-9223372036854775808",
                    "-4611686018427387904",
                    "4611686018427387904",
                    "9223372036854775807",
                ],
            )
            .to_string(),
            8 => pick(rng, &["abc", "", "1.5", "-0"]).to_string(),
            _ => "1000".to_string(),
        };
        // A huge positive count is fine (capped by the size); a huge negative one without
        // WITHVALUES would make Redis build an endless reply (with it, it is an error).
        let huge_negative = count.starts_with('-') && count.len() > 10;
        b = b.arg(&count);
        if chance(rng, 0.5) || huge_negative {
            b = b.opt(rng, "WITHVALUES");
        }
        if chance(rng, 0.03) {
            b = b.arg(junk(rng));
        }
    }
    b.cmp(Cmp::Custom(check_random_fields))
}

fn c_hscan(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let mut b = cmd(rng, "HSCAN").arg(key(rng)).arg("0");
    if chance(rng, 0.4) {
        let p = *pick(
            rng,
            &["*", "f1*", "f?", "*1", "g1*", "[a-f]*", "n*", "\\*", ""],
        );
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
        group: 2,
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

/// Gives the wrong-type keys their types back (and so overwrites them now and then).
fn c_other_types(rng: &mut StdRng, _: &Ctx) -> Cmd {
    if chance(rng, 0.5) {
        cmd(rng, "SET").arg("h:str").arg(value(rng)).exact()
    } else {
        cmd(rng, "SADD").arg("h:set").arg(field(rng)).exact()
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

/// Moves the conversion thresholds (the same on both servers).
fn c_config(rng: &mut StdRng, _: &Ctx) -> Cmd {
    // Mostly back to roomy limits, so that listpacks live long enough to be exercised.
    if chance(rng, 0.6) {
        let v = *pick(
            rng,
            &[
                "0", "1", "2", "3", "4", "8", "16", "128", "512", "512", "512", "512", "512",
            ],
        );
        cmd(rng, "CONFIG")
            .arg("SET")
            .arg("hash-max-listpack-entries")
            .arg(v)
            .fixed()
    } else {
        let v = *pick(
            rng,
            &["0", "1", "4", "8", "16", "64", "64", "64", "64", "64"],
        );
        cmd(rng, "CONFIG")
            .arg("SET")
            .arg("hash-max-listpack-value")
            .arg(v)
            .fixed()
    }
}

// ---- checking random replies against the reference's state -----------------------------------

/// A reply with the bulk contents blanked out: two random replies of the same command must have
/// the same shape (frame types, lengths, nesting), and identical errors, nils and integers.
pub fn shape(f: &Frame) -> String {
    let list = |tag: &str, items: &[Frame]| {
        format!(
            "{tag}[{}]",
            items.iter().map(shape).collect::<Vec<_>>().join(",")
        )
    };
    match f {
        Frame::Bulk(_) => "$".into(),
        Frame::Array(items) => list("*", items),
        Frame::Set(items) => list("~", items),
        other => fmt_frame(other),
    }
}

fn bytes(args: &[&[u8]]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.to_vec()).collect()
}

/// HRANDFIELD: the same shape as the reference's reply, every returned field (and value) present
/// in the reference's hash, and distinct fields for a positive count.
fn check_random_fields(
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
    let key = &args[1];
    let mut fields: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    match &tr {
        Frame::Bulk(f) => fields.push((f.clone(), None)),
        Frame::Array(items) if !items.is_empty() => {
            let with_values = args.len() == 4;
            let positive = !args[2].starts_with(b"-");
            let flat: Vec<&Frame> = items
                .iter()
                .flat_map(|i| match i {
                    Frame::Array(pair) => pair.iter().collect::<Vec<_>>(),
                    other => vec![other],
                })
                .collect();
            let step = if with_values { 2 } else { 1 };
            for p in flat.chunks(step) {
                let (Frame::Bulk(f), v) = (p[0], p.get(1)) else {
                    return fail("not a bulk string");
                };
                let v = match v {
                    Some(Frame::Bulk(v)) => Some(v.clone()),
                    Some(_) => return fail("value not a bulk string"),
                    None => None,
                };
                fields.push((f.clone(), v));
            }
            if positive {
                let mut names: Vec<&Vec<u8>> = fields.iter().map(|(f, _)| f).collect();
                names.sort();
                names.dedup();
                if names.len() != fields.len() {
                    return fail("repeated fields for a positive count");
                }
            }
        }
        _ => return if rr == tr { Ok(()) } else { fail("different") },
    }
    for (f, v) in &fields {
        let have = r.call(&bytes(&[b"HGET", key, f]));
        match (&have, v) {
            (Frame::Bulk(hv), Some(v)) if hv == v => {}
            (Frame::Bulk(_), None) => {}
            _ => {
                return Err((
                    format!("HGET of it on the reference: {}", fmt_frame(&have)),
                    fmt_frame(&tr),
                ))
            }
        }
    }
    Ok(())
}
