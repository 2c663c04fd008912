//! The `geo` family: GEOADD, GEOPOS, GEOHASH, GEODIST, GEOSEARCH(STORE) and the GEORADIUS
//! family with every option, over a few geo sets that grow past the listpack limits. Points come
//! uniformly from the whole storable area, in clusters (so searches find many), near the poles
//! and the antimeridian, on the exact edges of the range, and from a small fixed pool (so equal
//! positions, hence equal distances, happen and the sorts' tie order is compared too). One key
//! holds a sorted set with arbitrary scores (ZADD), which the geo commands must decode as Redis
//! does. Every reply is compared exactly, unsorted results included: without ASC/DESC Redis
//! returns members in its scan order (cell by cell, by score), which is deterministic and must
//! be reproduced. Stored results are read back whole.

use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family { name: "geo", gen };

/// Geo sets.
const GKEYS: &[&str] = &["geo0", "geo1", "geo2", "{g}a", "{g}b"];
/// A sorted set whose scores are arbitrary (not all GEOADD's).
const ZKEY: &str = "gz";
/// A string key, for WRONGTYPE (stores may turn it into a sorted set).
const STRKEY: &str = "gstr";
/// A list, with `DIFF_COLLECTIONS=1`.
const LISTKEY: &str = "g:list";

fn key(rng: &mut StdRng, ctx: &Ctx) -> String {
    match rng.gen_range(0..100) {
        0..=3 => STRKEY.to_string(),
        4..=6 => "gnone".to_string(),
        7..=12 => ZKEY.to_string(),
        13..=14 if ctx.collections => LISTKEY.to_string(),
        _ => pick(rng, GKEYS).to_string(),
    }
}

/// A destination for the STORE forms: mostly keys of their own, sometimes a source.
fn dst_key(rng: &mut StdRng, ctx: &Ctx) -> String {
    match rng.gen_range(0..10) {
        0..=5 => pick(rng, &["gdst", "{g}dst", "gdst2"]).to_string(),
        6 => STRKEY.to_string(),
        _ => key(rng, ctx),
    }
}

fn member(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..100) {
        0..=49 => pick(
            rng,
            &[
                "a", "b", "c", "d", "e", "f", "g", "h", "Palermo", "Catania", "1", "2", "10", "",
                "-1",
            ],
        )
        .as_bytes()
        .to_vec(),
        50..=84 => format!("m{}", rng.gen_range(0..80)).into_bytes(),
        85..=92 => random_string(rng, b"a\x00\r\n\xff\" b", 1, 6),
        93..=97 => format!("w{}", rng.gen_range(0..300)).into_bytes(),
        _ => random_string(rng, b"xy", 60, 70),
    }
}

/// Cluster centres: ordinary places, the antimeridian, the poles' edges and the equator.
const CENTRES: &[(f64, f64)] = &[
    (13.361389, 38.115556),
    (15.087269, 37.502669),
    (0.0, 0.0),
    (179.99, 0.5),
    (-179.99, -0.5),
    (179.999, 84.9),
    (0.0, 85.0),
    (-60.0, -84.99),
    (100.0, 66.5),
    (-45.5, -80.2),
];

/// Positions that recur exactly, so that several members share a position.
const FIXED: &[(&str, &str)] = &[
    ("13.361389", "38.115556"),
    ("15.087269", "37.502669"),
    ("0", "0"),
    ("180", "0"),
    ("-180", "0"),
    ("180", "85.05112878"),
    ("-180", "-85.05112878"),
    ("0", "85.05112878"),
    ("12.5", "-85.05112878"),
    ("-0.0001", "0.0001"),
];

fn fmt_coord(rng: &mut StdRng, v: f64) -> String {
    match rng.gen_range(0..4) {
        0 => format!("{v:.6}"),
        1 => format!("{v:.2}"),
        2 => format!("{v:.12}"),
        _ => format!("{v}"),
    }
}

/// A longitude/latitude pair, mostly valid.
fn lon_lat(rng: &mut StdRng) -> (String, String) {
    match rng.gen_range(0..100) {
        0..=24 => {
            let lon = rng.gen_range(-180.0..=180.0);
            let lat = rng.gen_range(-85.05112878..=85.05112878);
            (fmt_coord(rng, lon), fmt_coord(rng, lat))
        }
        25..=69 => {
            let (clon, clat) = *pick(rng, CENTRES);
            let spread = *pick(rng, &[0.0001, 0.01, 0.5, 3.0]);
            let lon = (clon + rng.gen_range(-spread..=spread)).clamp(-180.0, 180.0);
            let lat = (clat + rng.gen_range(-spread..=spread)).clamp(-85.05112878, 85.05112878);
            (fmt_coord(rng, lon), fmt_coord(rng, lat))
        }
        70..=89 => {
            let (lon, lat) = *pick(rng, FIXED);
            (lon.to_string(), lat.to_string())
        }
        90..=95 => {
            // Out of range or not numbers at all.
            let bad = *pick(
                rng,
                &[
                    ("180.0000001", "0"),
                    ("0", "85.05112879"),
                    ("-200", "-100"),
                    ("1e300", "0"),
                    ("inf", "0"),
                    ("0", "-inf"),
                    ("abc", "0"),
                    ("0", ""),
                    ("nan", "1"),
                    ("0x10", "1"),
                ],
            );
            (bad.0.to_string(), bad.1.to_string())
        }
        _ => {
            let lon = *pick(rng, &["180", "-180", "0", "-0", "179.9999999", "1e-300"]);
            let lat = *pick(
                rng,
                &["85.05112878", "-85.05112878", "0", "85", "-85", "1e-300"],
            );
            (lon.to_string(), lat.to_string())
        }
    }
}

fn unit(rng: &mut StdRng) -> Vec<u8> {
    if chance(rng, 0.03) {
        return pick(rng, &["yards", "", "meters", "K"]).as_bytes().to_vec();
    }
    let u = *pick(rng, &["m", "km", "ft", "mi"]);
    mangle_case(rng, u)
}

/// A radius (or box side) in some unit: zero, tiny, regional, continental, planet-wide, and
/// sometimes negative or not a number.
fn distance(rng: &mut StdRng) -> String {
    match rng.gen_range(0..100) {
        0..=4 => pick(rng, &["0", "0.0", "-0"]).to_string(),
        5..=24 => format!("{}", rng.gen_range(1..2000)),
        25..=64 => format!("{:.3}", rng.gen_range(1.0..500.0)),
        65..=84 => format!("{}", rng.gen_range(500..20000)),
        85..=93 => pick(rng, &["40000", "100000", "1e7", "1e12"]).to_string(),
        94..=96 => pick(rng, &["-1", "-0.5"]).to_string(),
        _ => pick(rng, &["abc", "", "nan", "inf"]).to_string(),
    }
}

fn count_arg(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=14 => rng.gen_range(1i64..=8).to_string(),
        15 => pick(rng, &["100", "9223372036854775807"]).to_string(),
        16 => pick(rng, &["0", "-1"]).to_string(),
        17 => pick(rng, &["abc", "1.5"]).to_string(),
        _ => rng.gen_range(9i64..=40).to_string(),
    }
}

/// Options in a random order: each group is an option word with its arguments.
fn push_groups(rng: &mut StdRng, mut b: B, mut groups: Vec<Vec<Vec<u8>>>) -> B {
    use rand::seq::SliceRandom;
    groups.shuffle(rng);
    for g in groups {
        let mut it = g.into_iter();
        if let Some(first) = it.next() {
            b = b.opt(rng, &String::from_utf8_lossy(&first));
            b = b.args(it);
        }
    }
    b
}

fn words(w: &[&str]) -> Vec<Vec<u8>> {
    w.iter().map(|s| s.as_bytes().to_vec()).collect()
}

// ---- writers -----------------------------------------------------------------------------------

fn c_geoadd(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = if chance(rng, 0.85) {
        pick(rng, GKEYS).to_string()
    } else {
        key(rng, ctx)
    };
    let mut b = cmd(rng, "GEOADD").arg(k);
    let mut opts: Vec<Vec<Vec<u8>>> = Vec::new();
    for o in ["NX", "XX", "CH"] {
        if chance(rng, 0.12) {
            opts.push(words(&[o]));
        }
    }
    b = push_groups(rng, b, opts);
    let n = match rng.gen_range(0..100) {
        0..=69 => 1,
        70..=94 => rng.gen_range(2..=6),
        _ => rng.gen_range(40..=160),
    };
    for _ in 0..n {
        let (lon, lat) = lon_lat(rng);
        b = b.arg(lon).arg(lat).arg(member(rng));
    }
    if chance(rng, 0.02) {
        b = b.arg("1"); // a dangling coordinate
    }
    b.exact()
}

/// Arbitrary scores in the plain sorted set, which the geo commands decode all the same.
fn c_zadd(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let mut b = cmd(rng, "ZADD").arg(ZKEY);
    for _ in 0..rng.gen_range(1..=4) {
        let s = match rng.gen_range(0..10) {
            0..=3 => rng.gen_range(0u64..(1 << 52)).to_string(),
            4 => rng.gen_range(-1000i64..1000).to_string(),
            5 => format!("{}", rng.gen_range(0.0..4.5e15)),
            _ => pick(
                rng,
                &[
                    "1e300",
                    "-5",
                    "inf",
                    "-inf",
                    "1e19",
                    "1.5",
                    "4611686018427387904",
                    "9007199254740992",
                    "4503599627370496",
                    "4503599627370495",
                    "0",
                    "-0",
                ],
            )
            .to_string(),
        };
        b = b.arg(s).arg(member(rng));
    }
    b.exact()
}

fn c_zrem(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let mut b = cmd(rng, "ZREM").arg(k);
    for _ in 0..rng.gen_range(1..=3) {
        b = b.arg(member(rng));
    }
    b.exact()
}

// ---- readers -----------------------------------------------------------------------------------

fn c_pos_hash(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let name = if chance(rng, 0.5) {
        "GEOPOS"
    } else {
        "GEOHASH"
    };
    let mut b = cmd(rng, name).arg(k);
    for _ in 0..rng.gen_range(0..=5) {
        b = b.arg(member(rng));
    }
    b.exact()
}

fn c_geodist(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let mut b = cmd(rng, "GEODIST").arg(k).arg(member(rng)).arg(member(rng));
    if chance(rng, 0.7) {
        b = b.arg(unit(rng));
    }
    if chance(rng, 0.03) {
        b = b.arg("km");
    }
    b.exact()
}

/// The common options of the search commands.
fn result_options(rng: &mut StdRng, groups: &mut Vec<Vec<Vec<u8>>>, with: bool) {
    let p_with = if with { 0.3 } else { 0.03 };
    for o in ["WITHDIST", "WITHHASH", "WITHCOORD"] {
        if chance(rng, p_with) {
            groups.push(words(&[o]));
        }
    }
    if chance(rng, 0.5) {
        let o = *pick(rng, &["ASC", "DESC", "ASC", "DESC", "asc"]);
        groups.push(words(&[o]));
    }
    if chance(rng, 0.45) {
        let c = count_arg(rng);
        let mut g = vec![b"COUNT".to_vec(), c.into_bytes()];
        if chance(rng, 0.3) {
            g.push(b"ANY".to_vec());
        }
        groups.push(g);
    } else if chance(rng, 0.03) {
        groups.push(words(&["ANY"]));
    }
}

/// GEORADIUS, GEORADIUSBYMEMBER and their _RO forms.
fn c_georadius(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let by_member = chance(rng, 0.5);
    let ro = chance(rng, 0.3);
    let name = match (by_member, ro) {
        (false, false) => "GEORADIUS",
        (false, true) => "GEORADIUS_RO",
        (true, false) => "GEORADIUSBYMEMBER",
        (true, true) => "GEORADIUSBYMEMBER_RO",
    };
    let k = key(rng, ctx);
    let mut b = cmd(rng, name).arg(k);
    if by_member {
        b = b.arg(member(rng));
    } else {
        let (lon, lat) = lon_lat(rng);
        b = b.arg(lon).arg(lat);
    }
    b = b.arg(distance(rng)).arg(unit(rng));
    let store = (!ro && chance(rng, 0.3)) || (ro && chance(rng, 0.03));
    let mut groups = Vec::new();
    result_options(rng, &mut groups, !store);
    if store {
        let kw = *pick(rng, &["STORE", "STOREDIST"]);
        groups.push(vec![kw.as_bytes().to_vec(), dst_key(rng, ctx).into_bytes()]);
        if chance(rng, 0.05) {
            let kw = *pick(rng, &["STORE", "STOREDIST"]);
            groups.push(vec![kw.as_bytes().to_vec(), dst_key(rng, ctx).into_bytes()]);
        }
    }
    push_groups(rng, b, groups).exact()
}

/// GEOSEARCH and GEOSEARCHSTORE.
fn c_geosearch(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let store = chance(rng, 0.3);
    let mut b = if store {
        let d = dst_key(rng, ctx);
        cmd(rng, "GEOSEARCHSTORE").arg(d)
    } else {
        cmd(rng, "GEOSEARCH")
    };
    b = b.arg(key(rng, ctx));
    let mut groups: Vec<Vec<Vec<u8>>> = Vec::new();
    let from = rng.gen_range(0..40);
    if from < 19 || from == 39 {
        groups.push(vec![b"FROMMEMBER".to_vec(), member(rng)]);
    }
    if (19..38).contains(&from) || from == 39 {
        let (lon, lat) = lon_lat(rng);
        groups.push(words(&["FROMLONLAT", lon.as_str(), lat.as_str()]));
    }
    let by = rng.gen_range(0..40);
    if by < 19 || by == 39 {
        let r = distance(rng);
        let u = unit(rng);
        groups.push(vec![b"BYRADIUS".to_vec(), r.into_bytes(), u]);
    }
    if (19..38).contains(&by) || by == 39 {
        let (w, h) = (distance(rng), distance(rng));
        let u = unit(rng);
        groups.push(vec![b"BYBOX".to_vec(), w.into_bytes(), h.into_bytes(), u]);
    }
    result_options(rng, &mut groups, !store);
    if (store && chance(rng, 0.4)) || (!store && chance(rng, 0.02)) {
        groups.push(words(&["STOREDIST"]));
    }
    if chance(rng, 0.02) {
        groups.push(words(&["STORE", "gdst"]));
    }
    push_groups(rng, b, groups).exact()
}

// ---- state, keyspace and configuration ----------------------------------------------------------

/// A whole key read back, so that the stored states are compared.
fn c_full(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = if chance(rng, 0.4) {
        pick(rng, &["gdst", "{g}dst", "gdst2"]).to_string()
    } else {
        key(rng, ctx)
    };
    match rng.gen_range(0..4) {
        0 => cmd(rng, "OBJECT").arg("ENCODING").arg(k).fixed(),
        1 => cmd(rng, "TYPE").arg(k).fixed(),
        _ => cmd(rng, "ZRANGE")
            .arg(k)
            .arg("0")
            .arg("-1")
            .arg("WITHSCORES")
            .fixed(),
    }
}

fn c_other(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    match rng.gen_range(0..10) {
        0..=2 => {
            let v = random_string(rng, ALNUM, 1, 5);
            cmd(rng, "SET").arg(STRKEY).arg(v).fixed()
        }
        3 if ctx.collections => cmd(rng, "RPUSH").arg(LISTKEY).arg("x").fixed(),
        3..=5 => {
            let k = key(rng, ctx);
            cmd(rng, "DEL").arg(k).exact()
        }
        6..=7 => {
            let (a, z) = (pick(rng, GKEYS).to_string(), pick(rng, GKEYS).to_string());
            cmd(rng, "COPY").arg(a).arg(z).opt(rng, "REPLACE").fixed()
        }
        _ => {
            let v = pick(rng, &["0", "1", "4", "16", "128", "128"]);
            cmd(rng, "CONFIG")
                .arg("SET")
                .arg("zset-max-listpack-entries")
                .arg(v)
                .fixed()
        }
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (24, c_geoadd),
            (4, c_zadd),
            (4, c_zrem),
            (10, c_pos_hash),
            (8, c_geodist),
            (22, c_georadius),
            (26, c_geosearch),
            (6, c_full),
            (3, c_other),
        ],
    )
}
