//! The `lists` family: every list command with its options and errors (including the blocking
//! ones, with data present or short timeouts), over a few keys that also hold strings, sets and
//! hashes, with values of every size so lists span many blocks; LRANGE of whole lists keeps the
//! states compared. And the `sort` family: SORT and SORT_RO over lists, sets and sorted sets with
//! BY/GET patterns reading string and hash keys, LIMIT, ASC/DESC, ALPHA and STORE.

use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family { name: "lists", gen };

pub const SORT_FAMILY: Family = Family {
    name: "sort",
    gen: sort_gen,
};

/// List keys (the `{t}` pair shares a shard, the others mostly do not).
const LKEYS: &[&str] = &["l0", "l1", "l2", "l3", "{t}a", "{t}b", "lbig"];
/// Keys of other types, for WRONGTYPE.
const OTHER: &[&str] = &["lstr", "lset", "lhash"];

fn key(rng: &mut StdRng) -> String {
    if chance(rng, 0.07) {
        return pick(rng, OTHER).to_string();
    }
    if chance(rng, 0.05) {
        return "nokey".to_string();
    }
    pick(rng, LKEYS).to_string()
}

/// Element values: a small pool (so LREM/LPOS/LINSERT find matches), random text, numbers,
/// binary bytes, and long values that fill blocks quickly.
fn value(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..100) {
        0..=54 => pick(
            rng,
            &["a", "b", "c", "x", "1", "2", "10", "-1", "", "a b", "A"],
        )
        .as_bytes()
        .to_vec(),
        55..=69 => random_string(rng, ALNUM, 1, 12),
        70..=79 => rng.gen_range(-1000i64..100_000).to_string().into_bytes(),
        80..=84 => random_string(rng, b"a\x00\r\n\xff\" b", 1, 8),
        85..=93 => random_string(rng, b"ab", 60, 70),
        94..=97 => random_string(rng, b"xy", 100, 700),
        _ => random_string(rng, b"z", 3000, 9000),
    }
}

fn values(rng: &mut StdRng, min: usize, max: usize) -> Vec<Vec<u8>> {
    let n = rng.gen_range(min..=max);
    (0..n).map(|_| value(rng)).collect()
}

/// Indexes for LINDEX/LSET/LRANGE/LTRIM: mostly within a few dozen of either end.
fn index(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=13 => rng.gen_range(-40i64..=40).to_string(),
        14..=15 => rng.gen_range(-3000i64..=3000).to_string(),
        16 => pick(rng, &["0", "-1", "1", "-2"]).to_string(),
        17 => pick(
            rng,
            &["9223372036854775807", "-9223372036854775808", "4294967296"],
        )
        .to_string(),
        18 => int_arg(rng),
        _ => pick(rng, &["abc", "", "1.5", "9223372036854775808", " 1"]).to_string(),
    }
}

/// A count for LPOP/RPOP/LMPOP/LPOS/LREM: small, zero, negative or junk.
fn count(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=11 => rng.gen_range(1i64..=5).to_string(),
        12..=13 => rng.gen_range(6i64..=200).to_string(),
        14..=15 => "0".to_string(),
        16 => pick(rng, &["-1", "-5", "-9223372036854775808"]).to_string(),
        17 => "9223372036854775807".to_string(),
        _ => pick(rng, &["abc", "", "1.5", "9223372036854775808"]).to_string(),
    }
}

fn end(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=8 => "LEFT".to_string(),
        9..=17 => "RIGHT".to_string(),
        18 => "left".to_string(),
        _ => pick(rng, &["UP", "", "LEFTRIGHT"]).to_string(),
    }
}

/// A blocking timeout that either returns at once (data present) or after a few milliseconds,
/// or is rejected. Never 0 (it would wait forever) and never huge (Redis's overflow behaviour is
/// undefined there).
fn timeout(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=15 => pick(rng, &["0.01", "0.005", "0.02", ".01", "1e-2"]).to_string(),
        16..=18 => pick(rng, &["-1", "-0.5", "abc", "", "nan", "1 "]).to_string(),
        _ => "0.001".to_string(),
    }
}

fn c_push(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let name = *pick(
        rng,
        &["LPUSH", "RPUSH", "LPUSH", "RPUSH", "LPUSHX", "RPUSHX"],
    );
    let k = key(rng);
    let vs = values(rng, 1, 4);
    cmd(rng, name).arg(k).args(vs).exact()
}

/// Many elements at once, mostly into the big list, so lists span many blocks.
fn c_push_many(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let name = if chance(rng, 0.5) { "LPUSH" } else { "RPUSH" };
    let k = if chance(rng, 0.7) {
        "lbig".to_string()
    } else {
        key(rng)
    };
    let n = rng.gen_range(20..=300);
    let vs: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            if i % 10 == 0 {
                value(rng)
            } else {
                format!("e{}", rng.gen_range(0..50)).into_bytes()
            }
        })
        .collect();
    cmd(rng, name).arg(k).args(vs).exact()
}

fn c_pop(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let name = if chance(rng, 0.5) { "LPOP" } else { "RPOP" };
    let k = key(rng);
    let b = cmd(rng, name).arg(k);
    if chance(rng, 0.5) {
        let n = count(rng);
        b.arg(n).exact()
    } else {
        b.exact()
    }
}

fn c_read(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = key(rng);
    match rng.gen_range(0..10) {
        0..=3 => {
            let i = index(rng);
            cmd(rng, "LINDEX").arg(k).arg(i).exact()
        }
        4..=5 => cmd(rng, "LLEN").arg(k).exact(),
        6..=8 => {
            let (a, b) = (index(rng), index(rng));
            cmd(rng, "LRANGE").arg(k).arg(a).arg(b).exact()
        }
        _ => cmd(rng, "OBJECT").opt(rng, "ENCODING").arg(k).exact(),
    }
}

/// The whole list: keeps the two servers' states compared as the run goes.
fn c_dump(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = pick(rng, LKEYS).to_string();
    cmd(rng, "LRANGE").arg(k).arg("0").arg("-1").fixed()
}

fn c_lset(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = key(rng);
    let i = if chance(rng, 0.7) {
        rng.gen_range(-5i64..=5).to_string()
    } else {
        index(rng)
    };
    let v = value(rng);
    cmd(rng, "LSET").arg(k).arg(i).arg(v).exact()
}

fn c_ltrim(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = key(rng);
    // Mostly gentle trims, so lists are not emptied all the time.
    let (a, b) = if chance(rng, 0.7) {
        (
            rng.gen_range(0..=3).to_string(),
            (-rng.gen_range(1..=4)).to_string(),
        )
    } else {
        (index(rng), index(rng))
    };
    cmd(rng, "LTRIM").arg(k).arg(a).arg(b).exact()
}

fn c_lrem(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = key(rng);
    let n = match rng.gen_range(0..10) {
        0..=2 => "0".to_string(),
        3..=5 => rng.gen_range(1..=3).to_string(),
        6..=8 => (-rng.gen_range(1..=3)).to_string(),
        _ => count(rng),
    };
    let v = value(rng);
    cmd(rng, "LREM").arg(k).arg(n).arg(v).exact()
}

fn c_linsert(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = key(rng);
    let w = *pick(
        rng,
        &["BEFORE", "AFTER", "BEFORE", "AFTER", "before", "MIDDLE"],
    );
    let (p, v) = (value(rng), value(rng));
    cmd(rng, "LINSERT").arg(k).opt(rng, w).arg(p).arg(v).exact()
}

fn c_lpos(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = key(rng);
    let v = value(rng);
    let mut b = cmd(rng, "LPOS").arg(k).arg(v);
    let mut opts: Vec<(&str, String)> = Vec::new();
    if chance(rng, 0.4) {
        let r = match rng.gen_range(0..10) {
            0..=3 => rng.gen_range(1..=3).to_string(),
            4..=6 => (-rng.gen_range(1..=3)).to_string(),
            7 => "0".to_string(),
            8 => pick(rng, &["-9223372036854775808", "9223372036854775807"]).to_string(),
            _ => pick(rng, &["abc", ""]).to_string(),
        };
        opts.push(("RANK", r));
    }
    if chance(rng, 0.4) {
        opts.push(("COUNT", count(rng)));
    }
    if chance(rng, 0.3) {
        opts.push(("MAXLEN", count(rng)));
    }
    if chance(rng, 0.05) {
        opts.push((*pick(rng, &["RANK", "COUNT", "FOO"]), String::new()));
    }
    {
        use rand::seq::SliceRandom;
        opts.shuffle(rng);
    }
    for (o, v) in opts {
        b = b.opt(rng, o);
        if !v.is_empty() || o != "FOO" {
            b = b.arg(v);
        }
    }
    b.exact()
}

fn c_lmove(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let (a, b) = (key(rng), key(rng));
    if chance(rng, 0.3) {
        cmd(rng, "RPOPLPUSH").arg(a).arg(b).exact()
    } else {
        let (f, t) = (end(rng), end(rng));
        cmd(rng, "LMOVE")
            .arg(a)
            .arg(b)
            .opt(rng, &f)
            .opt(rng, &t)
            .exact()
    }
}

/// `numkeys key... LEFT|RIGHT [COUNT n]`, sometimes with a wrong numkeys or options.
fn mpop_tail(rng: &mut StdRng, mut b: B) -> B {
    let n = rng.gen_range(1..=3);
    let ks: Vec<String> = (0..n).map(|_| key(rng)).collect();
    let numkeys = match rng.gen_range(0..20) {
        0 => pick(rng, &["0", "-1", "abc", "9223372036854775807"]).to_string(),
        1 => (n + 1).to_string(),
        _ => n.to_string(),
    };
    b = b.arg(numkeys).args(ks);
    let e = end(rng);
    b = b.opt(rng, &e);
    if chance(rng, 0.5) {
        let c = count(rng);
        b = b.opt(rng, "COUNT").arg(c);
    }
    if chance(rng, 0.03) {
        let o = *pick(rng, &["COUNT", "FOO"]);
        b = b.opt(rng, o);
    }
    b
}

fn c_lmpop(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let b = cmd(rng, "LMPOP");
    mpop_tail(rng, b).exact()
}

fn c_blocking(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let t = timeout(rng);
    match rng.gen_range(0..5) {
        0 | 1 => {
            let name = if chance(rng, 0.5) { "BLPOP" } else { "BRPOP" };
            let n = rng.gen_range(1..=3);
            let ks: Vec<String> = (0..n).map(|_| key(rng)).collect();
            cmd(rng, name).args(ks).arg(t).fixed()
        }
        2 => {
            let (a, b) = (key(rng), key(rng));
            let (f, to) = (end(rng), end(rng));
            cmd(rng, "BLMOVE")
                .arg(a)
                .arg(b)
                .opt(rng, &f)
                .opt(rng, &to)
                .arg(t)
                .fixed()
        }
        3 => {
            let (a, b) = (key(rng), key(rng));
            cmd(rng, "BRPOPLPUSH").arg(a).arg(b).arg(t).fixed()
        }
        _ => {
            let b = cmd(rng, "BLMPOP").arg(t);
            mpop_tail(rng, b).fixed()
        }
    }
}

/// Keys changing type or disappearing.
fn c_other(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    match rng.gen_range(0..10) {
        0..=2 => {
            let k = key(rng);
            cmd(rng, "DEL").arg(k).exact()
        }
        3 => {
            let k = pick(rng, &["lstr", "lstr", "l3"]).to_string();
            let v = value(rng);
            cmd(rng, "SET").arg(k).arg(v).exact()
        }
        4 => {
            let v = value(rng);
            cmd(rng, "SADD").arg("lset").arg(v).exact()
        }
        5 => {
            let v = value(rng);
            cmd(rng, "HSET").arg("lhash").arg("f").arg(v).exact()
        }
        6 => {
            let k = key(rng);
            cmd(rng, "TYPE").arg(k).exact()
        }
        7 => {
            let (a, b) = (key(rng), key(rng));
            cmd(rng, "COPY").arg(a).arg(b).opt(rng, "REPLACE").exact()
        }
        8 => {
            let (a, b) = (key(rng), key(rng));
            cmd(rng, "RENAME").arg(a).arg(b).exact()
        }
        _ => {
            // Keep the big list from growing without bound.
            cmd(rng, "LTRIM").arg("lbig").arg("0").arg("1500").exact()
        }
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (20, c_push),
            (3, c_push_many),
            (12, c_pop),
            (16, c_read),
            (6, c_dump),
            (5, c_lset),
            (3, c_ltrim),
            (4, c_lrem),
            (4, c_linsert),
            (7, c_lpos),
            (6, c_lmove),
            (4, c_lmpop),
            (2, c_blocking),
            (5, c_other),
        ],
    )
}

// ---- SORT -------------------------------------------------------------------------------------

const SLISTS: &[&str] = &["sl0", "sl1", "sl2"];
const SSETS: &[&str] = &["ss0", "ss1"];
const SZSETS: &[&str] = &["sz0", "sz1"];
const SOTHER: &[&str] = &["sstr", "shash", "snokey"];
/// Elements: numbers of several shapes and some text; the weight keys `w_<element>` and hashes
/// `h_<element>` exist for some of them. No value overflows or underflows a double: Redis reads
/// scores with strtod and checks an errno it never clears, so an ERANGE would make later SORTs
/// fail there.
const SNUMS: &[&str] = &[
    "1", "2", "3", "10", "-5", "0", "1.5", "+7", "0x1A", " 4", "007", "-0", "inf", "-inf", "3e2",
    "",
];
const STEXT: &[&str] = &["a", "b", "c", "B", "ab", "x y", "nan", "12abc", "1", "2"];
const WEIGHTS: &[&str] = &[
    "1", "2", "3", "5", "-1", "0", "2.5", "100", "1e3", "-inf", "7", "-2", "0.5", "a", "",
];
const BY_PATTERNS: &[&str] = &[
    "w_*", "w_*", "h_*->f", "h_*->g", "nosort", "w_*->", "*", "x_*", "h_*->", "#",
];
const GET_PATTERNS: &[&str] = &["#", "w_*", "h_*->f", "h_*->g", "nokey", "*", "x_*", "h_*"];

/// An element for `key`: the keys ending in 0 hold numbers (so numeric sorts mostly succeed),
/// the others a mix of numbers and text.
fn selem_for(rng: &mut StdRng, key: &str) -> String {
    if key.ends_with('0') && chance(rng, 0.97) || chance(rng, 0.5) {
        pick(rng, SNUMS).to_string()
    } else {
        pick(rng, STEXT).to_string()
    }
}

fn selem(rng: &mut StdRng) -> String {
    selem_for(rng, "")
}

fn c_sort_fill(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    // Never mutated: a junk NUL byte would tie with "" under C-string comparison, in an order
    // Redis leaves to its hash table.
    match rng.gen_range(0..10) {
        0..=3 => {
            let k = pick(rng, SLISTS).to_string();
            let n = rng.gen_range(1..=4);
            let vs: Vec<String> = (0..n).map(|_| selem_for(rng, &k)).collect();
            let name = if chance(rng, 0.5) { "RPUSH" } else { "LPUSH" };
            cmd(rng, name).arg(k).args(vs).fixed()
        }
        4..=5 => {
            let k = pick(rng, SSETS).to_string();
            let n = rng.gen_range(1..=4);
            let vs: Vec<String> = (0..n).map(|_| selem_for(rng, &k)).collect();
            cmd(rng, "SADD").arg(k).args(vs).fixed()
        }
        6..=7 => {
            let k = pick(rng, SZSETS).to_string();
            let mut b = cmd(rng, "ZADD").arg(&k);
            for _ in 0..rng.gen_range(1..=3) {
                let score = rng.gen_range(-3i32..=3).to_string();
                let m = selem_for(rng, &k);
                b = b.arg(score).arg(m);
            }
            b.fixed()
        }
        8 => {
            let e = selem(rng);
            let w = pick(rng, WEIGHTS).to_string();
            cmd(rng, "SET").arg(format!("w_{e}")).arg(w).fixed()
        }
        _ => {
            let e = selem(rng);
            let f = *pick(rng, &["f", "g"]);
            let w = pick(rng, WEIGHTS).to_string();
            cmd(rng, "HSET").arg(format!("h_{e}")).arg(f).arg(w).fixed()
        }
    }
}

fn c_sort_other(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    match rng.gen_range(0..8) {
        0 => {
            let k = pick(rng, &["sl0", "ss0", "sz0", "sdst", "w_1", "h_a"]).to_string();
            cmd(rng, "DEL").arg(k).exact()
        }
        1 => cmd(rng, "SET").arg("sstr").arg("v").exact(),
        2 => cmd(rng, "HSET").arg("shash").arg("f").arg("1").exact(),
        3 => {
            let k = pick(rng, &["sdst", "sl1", "sdst2"]).to_string();
            cmd(rng, "LRANGE").arg(k).arg("0").arg("-1").fixed()
        }
        4 => {
            let k = pick(rng, &["sz0", "sz1", "sdst"]).to_string();
            cmd(rng, "OBJECT").opt(rng, "ENCODING").arg(k).exact()
        }
        5 => {
            let k = pick(rng, &["sdst", "sdst2"]).to_string();
            cmd(rng, "TYPE").arg(k).exact()
        }
        6 => {
            let k = pick(rng, SLISTS).to_string();
            cmd(rng, "LTRIM").arg(k).arg("0").arg("12").exact()
        }
        _ => {
            let k = pick(rng, SSETS).to_string();
            let m = selem(rng);
            cmd(rng, "SREM").arg(k).arg(m).exact()
        }
    }
}

fn c_sort(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    #[derive(PartialEq)]
    enum Kind {
        List,
        Set,
        ZSet,
        Other,
    }
    let (k, kind) = match rng.gen_range(0..20) {
        0..=8 => (pick(rng, SLISTS).to_string(), Kind::List),
        9..=12 => (pick(rng, SSETS).to_string(), Kind::Set),
        13..=17 => (pick(rng, SZSETS).to_string(), Kind::ZSet),
        _ => (pick(rng, SOTHER).to_string(), Kind::Other),
    };
    let ro = chance(rng, 0.25);
    let mut by: Option<&str> = None;
    let mut alpha = chance(rng, 0.4);
    let mut limit: Option<(String, String)> = None;
    let mut gets: Vec<&str> = Vec::new();
    let mut order: Option<&str> = None;
    let mut store: Option<&str> = None;
    if chance(rng, 0.5) {
        by = Some(*pick(rng, BY_PATTERNS));
    }
    if chance(rng, 0.35) {
        let off = pick(rng, &["0", "1", "2", "-1", "5", "abc"]).to_string();
        let cnt = pick(rng, &["1", "2", "3", "0", "-1", "-5", "100", "x"]).to_string();
        limit = Some((off, cnt));
    }
    for _ in 0..rng.gen_range(0..=2) {
        if chance(rng, 0.4) {
            gets.push(*pick(rng, GET_PATTERNS));
        }
    }
    if chance(rng, 0.4) {
        order = Some(*pick(rng, &["ASC", "DESC", "desc"]));
    }
    if !ro && chance(rng, 0.25) {
        store = Some(*pick(rng, &["sdst", "sdst", "sdst2", "sl1", "sstr"]));
    }
    let nosort = by.is_some_and(|p| !p.contains('*'));
    let by_keys = by.is_some_and(|p| p.contains('*')) && !nosort;
    // What Redis leaves unspecified: a set's own order (BY nosort without STORE), and the
    // order of ALPHA ties among set or sorted-set members (their hash order); a LIMIT would then
    // pick different members, a STORE store a different order.
    let mut cmp = Cmp::Exact;
    if kind == Kind::Set && nosort && store.is_none() {
        limit = None;
        cmp = Cmp::Unordered;
    }
    if matches!(kind, Kind::Set | Kind::ZSet) && alpha && by_keys {
        limit = None;
        store = None;
        cmp = Cmp::Unordered;
    }
    // Redis's partial sort (BY with LIMIT) does not keep ties in input order: no ALPHA there.
    if alpha && by_keys && limit.is_some() {
        alpha = false;
    }
    let mut parts: Vec<Vec<String>> = Vec::new();
    if let Some(p) = by {
        parts.push(vec!["BY".into(), p.into()]);
    }
    if let Some((o, c)) = limit {
        parts.push(vec!["LIMIT".into(), o, c]);
    }
    for g in gets {
        parts.push(vec!["GET".into(), g.into()]);
    }
    if let Some(o) = order {
        parts.push(vec![o.into()]);
    }
    if alpha {
        parts.push(vec!["ALPHA".into()]);
    }
    if let Some(s) = store {
        parts.push(vec!["STORE".into(), s.into()]);
    }
    // A dangling keyword (it may swallow the next option: `BY DESC` means "don't sort"), only
    // where the resulting order is still specified.
    if matches!(kind, Kind::List | Kind::Other) && chance(rng, 0.03) {
        parts.push(vec![
            (*pick(rng, &["LIMIT", "BY", "GET", "STORE", "FOO"])).into()
        ]);
    }
    {
        use rand::seq::SliceRandom;
        parts.shuffle(rng);
    }
    let mut b = cmd(rng, if ro { "SORT_RO" } else { "SORT" }).arg(k);
    for p in parts {
        let mut it = p.into_iter();
        if let Some(first) = it.next() {
            b = b.opt(rng, &first).args(it);
        }
    }
    // A mutation could turn a set's sort into one whose order Redis leaves unspecified (say,
    // cut `BY w_* ALPHA` down to `BY ALPHA`): only lists and the other types get mutated.
    Cmd {
        args: b.args,
        mutable: matches!(cmp, Cmp::Exact) && matches!(kind, Kind::List | Kind::Other),
        cmp,
    }
}

fn sort_gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[(30, c_sort_fill), (8, c_sort_other), (40, c_sort)],
    )
}
