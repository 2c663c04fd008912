//! The `zsets` family: every sorted-set command with its options and errors, over a few keys
//! that grow past the listpack limits (bulk ZADDs, long members, and CONFIG SET of the
//! thresholds now and then), keys that hold a string (and lists and sets with
//! `DIFF_COLLECTIONS=1`) for WRONGTYPE and for the set inputs of ZUNION & co, and separate keys
//! whose scores are all 0 for the lex commands (Redis leaves lex ranges over unequal scores
//! unspecified). Whole-set ZRANGEs keep the states compared; OBJECT ENCODING checks the
//! conversions; ZSCAN runs whole iterations; ZRANDMEMBER is checked by shape where it is random.

use super::common::Frame;
use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family { name: "zsets", gen };

/// Sorted sets with scores of every kind.
const ZKEYS: &[&str] = &["z0", "z1", "z2", "z3", "{z}a", "{z}b", "zbig"];
/// Sorted sets whose members all score 0 (only fixed ZADD ... 0 ... and lex-to-lex stores write
/// them), for the lex commands.
const LEXKEYS: &[&str] = &["lex0", "lex1", "lex2"];
/// A string key, always present once written (stores may turn it into a sorted set).
const STRKEY: &str = "zstr";
/// A string key the lex commands use for WRONGTYPE: only ever SET.
const LEXSTR: &str = "lexstr";
/// A list and a set, with `DIFF_COLLECTIONS=1`.
const COLLKEYS: &[&str] = &["z:list", "z:set"];

/// A key for commands that may change scores.
fn zkey(rng: &mut StdRng, ctx: &Ctx) -> String {
    match rng.gen_range(0..100) {
        0..=3 => STRKEY.to_string(),
        4..=5 => "znone".to_string(),
        6..=8 if ctx.collections => pick(rng, COLLKEYS).to_string(),
        _ => pick(rng, ZKEYS).to_string(),
    }
}

/// A key for commands that only read or remove (lex keys allowed).
fn any_key(rng: &mut StdRng, ctx: &Ctx) -> String {
    if chance(rng, 0.15) {
        pick(rng, LEXKEYS).to_string()
    } else {
        zkey(rng, ctx)
    }
}

/// A key for the lex commands: a lex key, or one that is missing or of another type (never a
/// general sorted set, whose unequal scores make lex ranges unspecified).
fn lex_key(rng: &mut StdRng, _ctx: &Ctx) -> String {
    match rng.gen_range(0..100) {
        0..=4 => LEXSTR.to_string(),
        5..=8 => "lexnone".to_string(),
        _ => pick(rng, LEXKEYS).to_string(),
    }
}

/// Members: a small pool (so updates and removals hit), integers (listpack stores those as
/// integers), binary bytes, a wide pool for bulk adds, and long members that force the skiplist.
fn member(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..100) {
        0..=59 => pick(
            rng,
            &[
                "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "aa", "ab", "ba", "", "A",
                "1", "2", "10", "-1", "007", "1.5",
            ],
        )
        .as_bytes()
        .to_vec(),
        60..=79 => format!("m{}", rng.gen_range(0..60)).into_bytes(),
        80..=89 => random_string(rng, ALNUM, 1, 10),
        90..=93 => random_string(rng, b"a\x00\r\n\xff\" b", 1, 6),
        94..=97 => format!("w{}", rng.gen_range(0..400)).into_bytes(),
        _ => random_string(rng, b"xy", 60, 70),
    }
}

/// Scores for ZADD/ZINCRBY: mostly small integers and halves (so sums are exact in any order),
/// sometimes infinities, -0, huge or fractional values, and invalid ones.
fn score(rng: &mut StdRng) -> String {
    match rng.gen_range(0..100) {
        0..=49 => rng.gen_range(-10i64..=10).to_string(),
        50..=64 => format!("{}", rng.gen_range(-40i64..=40) as f64 / 4.0),
        65..=74 => rng.gen_range(-1000i64..=1000).to_string(),
        75..=89 => pick(
            rng,
            &[
                "inf",
                "-inf",
                "+inf",
                "-0",
                "0",
                "-0.0",
                "1e18",
                "1e19",
                "4611686018427387904",
                "9007199254740993",
                "0.1",
                "1.5e-5",
                "-1e300",
                "1e308",
                "+5",
                ".5",
                "5.",
                "1E2",
                "0x10",
                "3.0000000000000004",
            ],
        )
        .to_string(),
        _ => pick(
            rng,
            &[
                "abc", "", "nan", "NaN", "1.5.5", " 1", "1 ", "inf1", "--1", "1e",
            ],
        )
        .to_string(),
    }
}

/// One end of a score range (a leading `(` makes it exclusive).
fn score_bound(rng: &mut StdRng) -> String {
    let v = match rng.gen_range(0..100) {
        0..=59 => rng.gen_range(-12i64..=12).to_string(),
        60..=69 => format!("{}", rng.gen_range(-24i64..=24) as f64 / 2.0),
        70..=84 => pick(
            rng,
            &["-inf", "+inf", "inf", "-inf", "1e18", "-0", "1e400", "0x3"],
        )
        .to_string(),
        85..=92 => pick(rng, &["", " 1", "1 ", "abc", "nan", "(", "((1", "[1"]).to_string(),
        _ => rng.gen_range(-1000i64..=1000).to_string(),
    };
    if chance(rng, 0.3) {
        format!("({v}")
    } else {
        v
    }
}

/// Lex commands are never mutated by the runner: a mutated key could name a set with unequal
/// scores, over which Redis's lex ranges are unspecified. They break themselves instead, now
/// and then: a missing argument or a stray one.
fn lex_fixed(rng: &mut StdRng, b: B) -> Cmd {
    let mut c = b.fixed();
    match rng.gen_range(0..40) {
        0 if c.args.len() > 1 => {
            c.args.pop();
        }
        1 => c.args.push(junk(rng)),
        _ => {}
    }
    c
}

fn lex_member(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..10) {
        0..=6 => random_string(rng, b"abcdef", 0, 3),
        7..=8 => pick(rng, &["a", "b", "c", "aa", "ab", "ba", "bb", "", "z"])
            .as_bytes()
            .to_vec(),
        _ => random_string(rng, b"ab\x00\xff", 1, 3),
    }
}

fn lex_bound(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..100) {
        0..=34 => [b"[".to_vec(), lex_member(rng)].concat(),
        35..=64 => [b"(".to_vec(), lex_member(rng)].concat(),
        65..=79 => b"-".to_vec(),
        80..=92 => b"+".to_vec(),
        _ => pick(rng, &["a", "", "+a", "-a", "[", "(", "+\x00", "-\x00x"])
            .as_bytes()
            .to_vec(),
    }
}

/// Ranks for ZRANGE/ZREMRANGEBYRANK.
fn index(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=14 => rng.gen_range(-15i64..=15).to_string(),
        15 => pick(rng, &["0", "-1", "1000"]).to_string(),
        16 => pick(
            rng,
            &["9223372036854775807", "-9223372036854775808", "4294967296"],
        )
        .to_string(),
        17 => pick(rng, &["abc", "", "1.5", "9223372036854775808"]).to_string(),
        _ => rng.gen_range(-200i64..=200).to_string(),
    }
}

fn limit_args(rng: &mut StdRng) -> (String, String) {
    let off = match rng.gen_range(0..10) {
        0..=6 => rng.gen_range(0i64..=6).to_string(),
        7 => pick(rng, &["-1", "-5"]).to_string(),
        8 => pick(rng, &["100", "9223372036854775807"]).to_string(),
        _ => pick(rng, &["abc", "1.5"]).to_string(),
    };
    let cnt = match rng.gen_range(0..10) {
        0..=6 => rng.gen_range(0i64..=6).to_string(),
        7 => pick(rng, &["-1", "-5"]).to_string(),
        8 => pick(rng, &["100", "9223372036854775807"]).to_string(),
        _ => pick(rng, &["abc", ""]).to_string(),
    };
    (off, cnt)
}

/// Options in a random order: each group is an option word with its arguments.
fn push_groups(rng: &mut StdRng, mut b: B, mut groups: Vec<Vec<Vec<u8>>>) -> B {
    use rand::seq::SliceRandom;
    groups.shuffle(rng);
    for g in groups {
        let mut it = g.into_iter();
        if let Some(first) = it.next() {
            b = b.opt(rng, &String::from_utf8_lossy(&first));
            for a in it {
                b = b.arg(a);
            }
        }
    }
    b
}

fn g(words: &[&str]) -> Vec<Vec<u8>> {
    words.iter().map(|w| w.as_bytes().to_vec()).collect()
}

// ---- writers -----------------------------------------------------------------------------------

fn c_zadd(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = zkey(rng, ctx);
    let mut opts: Vec<Vec<Vec<u8>>> = Vec::new();
    for o in ["NX", "XX", "GT", "LT", "CH", "INCR"] {
        if chance(rng, 0.12) {
            opts.push(g(&[o]));
        }
    }
    let b = cmd(rng, "ZADD").arg(&k);
    let b = push_groups(rng, b, opts);
    let n = match rng.gen_range(0..100) {
        0..=69 => 1,
        70..=93 => rng.gen_range(2..=6),
        94..=98 => rng.gen_range(10..=40),
        _ => rng.gen_range(120..=180),
    };
    let mut b = b;
    for _ in 0..n {
        let (s, m) = (score(rng), member(rng));
        b = b.arg(s).arg(m);
    }
    if chance(rng, 0.03) {
        b = b.arg(score(rng)); // a score without its member
    }
    b.exact()
}

/// Members for the all-zero lex keys; never mutated, so their scores stay 0.
fn c_zadd_lex(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = pick(rng, LEXKEYS).to_string();
    let mut b = cmd(rng, "ZADD").arg(k);
    if chance(rng, 0.1) {
        let o = *pick(rng, &["NX", "XX", "CH"]);
        b = b.opt(rng, o);
    }
    let n = if chance(rng, 0.05) {
        rng.gen_range(100..=160)
    } else {
        rng.gen_range(1..=5)
    };
    for _ in 0..n {
        let z = if chance(rng, 0.1) { "-0" } else { "0" };
        let m = lex_member(rng);
        b = b.arg(z).arg(m);
    }
    b.fixed()
}

fn c_zincrby(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = zkey(rng, ctx);
    let (s, m) = (score(rng), member(rng));
    cmd(rng, "ZINCRBY").arg(k).arg(s).arg(m).exact()
}

fn c_zrem(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = any_key(rng, ctx);
    let mut b = cmd(rng, "ZREM").arg(k);
    for _ in 0..rng.gen_range(1..=4) {
        let m = if chance(rng, 0.3) {
            lex_member(rng)
        } else {
            member(rng)
        };
        b = b.arg(m);
    }
    b.exact()
}

fn c_zremrange(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    match rng.gen_range(0..3) {
        0 => {
            let k = any_key(rng, ctx);
            let (a, z) = (index(rng), index(rng));
            cmd(rng, "ZREMRANGEBYRANK").arg(k).arg(a).arg(z).exact()
        }
        1 => {
            let k = any_key(rng, ctx);
            let (a, z) = (score_bound(rng), score_bound(rng));
            cmd(rng, "ZREMRANGEBYSCORE").arg(k).arg(a).arg(z).exact()
        }
        _ => {
            let k = lex_key(rng, ctx);
            let (a, z) = (lex_bound(rng), lex_bound(rng));
            let b = cmd(rng, "ZREMRANGEBYLEX").arg(k).arg(a).arg(z);
            lex_fixed(rng, b)
        }
    }
}

fn count_arg(rng: &mut StdRng) -> String {
    match rng.gen_range(0..10) {
        0..=6 => rng.gen_range(0i64..=5).to_string(),
        7 => pick(rng, &["100", "9223372036854775807"]).to_string(),
        8 => pick(rng, &["-1", "-100"]).to_string(),
        _ => pick(rng, &["abc", "", "1.5"]).to_string(),
    }
}

fn c_zpop(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let name = if chance(rng, 0.5) {
        "ZPOPMIN"
    } else {
        "ZPOPMAX"
    };
    let k = any_key(rng, ctx);
    let mut b = cmd(rng, name).arg(k);
    if chance(rng, 0.6) {
        b = b.arg(count_arg(rng));
    }
    if chance(rng, 0.03) {
        b = b.arg("1");
    }
    b.exact()
}

fn numkeys_and_keys(rng: &mut StdRng, ctx: &Ctx, lex: bool) -> (String, Vec<String>) {
    let n = rng.gen_range(1..=3);
    let keys: Vec<String> = (0..n)
        .map(|_| {
            if lex {
                any_key(rng, ctx)
            } else {
                zkey(rng, ctx)
            }
        })
        .collect();
    let numkeys = match rng.gen_range(0..20) {
        0 => "0".to_string(),
        1 => "-1".to_string(),
        2 => (n + 1).to_string(),
        3 => "abc".to_string(),
        _ => n.to_string(),
    };
    (numkeys, keys)
}

fn c_zmpop(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let (nk, keys) = numkeys_and_keys(rng, ctx, true);
    let mut b = cmd(rng, "ZMPOP").arg(nk).args(keys);
    b = match rng.gen_range(0..10) {
        0 => b.arg("LEFT"),
        1 => b,
        _ => {
            let o = *pick(rng, &["MIN", "MAX"]);
            b.opt(rng, o)
        }
    };
    if chance(rng, 0.5) {
        let c = count_arg(rng);
        b = b.opt(rng, "COUNT").arg(c);
    }
    if chance(rng, 0.04) {
        b = b.opt(rng, "COUNT").arg("1");
    }
    b.exact()
}

/// Blocking pops with data present or a short timeout (never 0: an empty key would block the
/// stream forever, so these are not mutated either).
fn c_bzpop(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let timeout = match rng.gen_range(0..20) {
        0 => "-1",
        1 => "abc",
        2 => "0.001",
        _ => "0.01",
    };
    if chance(rng, 0.6) {
        let name = if chance(rng, 0.5) {
            "BZPOPMIN"
        } else {
            "BZPOPMAX"
        };
        let n = rng.gen_range(1..=3);
        let keys: Vec<String> = (0..n).map(|_| any_key(rng, ctx)).collect();
        cmd(rng, name).args(keys).arg(timeout).fixed()
    } else {
        let (nk, keys) = numkeys_and_keys(rng, ctx, true);
        let mut b = cmd(rng, "BZMPOP").arg(timeout).arg(nk).args(keys);
        let o = *pick(rng, &["MIN", "MAX", "MAX", "MIN", "UP"]);
        b = b.opt(rng, o);
        if chance(rng, 0.5) {
            let c = count_arg(rng);
            b = b.opt(rng, "COUNT").arg(c);
        }
        b.fixed()
    }
}

// ---- readers -----------------------------------------------------------------------------------

fn c_read(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = any_key(rng, ctx);
    match rng.gen_range(0..6) {
        0 => {
            let m = member(rng);
            cmd(rng, "ZSCORE").arg(k).arg(m).exact()
        }
        1 => {
            let mut b = cmd(rng, "ZMSCORE").arg(k);
            for _ in 0..rng.gen_range(1..=4) {
                b = b.arg(member(rng));
            }
            b.exact()
        }
        2 => cmd(rng, "ZCARD").arg(k).exact(),
        3 => {
            let m = member(rng);
            cmd(rng, "ZRANK").arg(k).arg(m).exact()
        }
        4 => {
            let m = member(rng);
            cmd(rng, "ZREVRANK").arg(k).arg(m).exact()
        }
        _ => {
            let (a, z) = (score_bound(rng), score_bound(rng));
            cmd(rng, "ZCOUNT").arg(k).arg(a).arg(z).exact()
        }
    }
}

fn c_zlexcount(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = lex_key(rng, ctx);
    let (a, z) = (lex_bound(rng), lex_bound(rng));
    let b = cmd(rng, "ZLEXCOUNT").arg(k).arg(a).arg(z);
    lex_fixed(rng, b)
}

/// ZRANGE / ZRANGESTORE with every option, now and then conflicting or repeated.
fn zrange_cmd(rng: &mut StdRng, ctx: &Ctx, store: bool) -> Cmd {
    let kind = rng.gen_range(0..3); // rank, score, lex
    let src = if kind == 2 {
        lex_key(rng, ctx)
    } else {
        any_key(rng, ctx)
    };
    let rev = chance(rng, 0.4);
    let (a, z): (Vec<u8>, Vec<u8>) = match kind {
        0 => (index(rng).into_bytes(), index(rng).into_bytes()),
        1 => (score_bound(rng).into_bytes(), score_bound(rng).into_bytes()),
        _ => (lex_bound(rng), lex_bound(rng)),
    };
    let mut groups: Vec<Vec<Vec<u8>>> = Vec::new();
    match kind {
        1 => groups.push(g(&["BYSCORE"])),
        2 => groups.push(g(&["BYLEX"])),
        _ => {}
    }
    if rev {
        groups.push(g(&["REV"]));
    }
    if chance(rng, if kind == 0 { 0.05 } else { 0.4 }) {
        let (o, c) = limit_args(rng);
        groups.push(vec![b"LIMIT".to_vec(), o.into_bytes(), c.into_bytes()]);
    }
    if !store && chance(rng, if kind == 2 { 0.05 } else { 0.5 }) {
        groups.push(g(&["WITHSCORES"]));
    }
    if chance(rng, 0.03) {
        let extras: [&[&str]; 5] = [
            &["REV"],
            &["BYSCORE"],
            &["BYLEX"],
            &["LIMIT", "0"],
            &["WITHSCORES"],
        ];
        let extra = *pick(rng, &extras);
        groups.push(g(extra));
    }
    if store {
        // A lex range only ever stores into a lex key (scores stay 0); the other kinds never do.
        let (dst, fixed) = if kind == 2 && LEXKEYS.contains(&src.as_str()) {
            (pick(rng, LEXKEYS).to_string(), true)
        } else {
            (zkey(rng, ctx), false)
        };
        let b = cmd(rng, "ZRANGESTORE").arg(dst).arg(src).arg(a).arg(z);
        let c = push_groups(rng, b, groups);
        if fixed || kind == 2 {
            lex_fixed(rng, c)
        } else {
            c.exact()
        }
    } else {
        let b = cmd(rng, "ZRANGE").arg(src).arg(a).arg(z);
        let b = push_groups(rng, b, groups);
        if kind == 2 {
            lex_fixed(rng, b)
        } else {
            b.exact()
        }
    }
}

fn c_zrange(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    zrange_cmd(rng, ctx, false)
}

fn c_zrangestore(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    zrange_cmd(rng, ctx, true)
}

/// The pre-6.2 range commands.
fn c_legacy_range(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    match rng.gen_range(0..5) {
        0 | 1 => {
            let name = if chance(rng, 0.5) {
                "ZRANGEBYSCORE"
            } else {
                "ZREVRANGEBYSCORE"
            };
            let k = any_key(rng, ctx);
            let (a, z) = (score_bound(rng), score_bound(rng));
            let mut groups = Vec::new();
            if chance(rng, 0.5) {
                groups.push(g(&["WITHSCORES"]));
            }
            if chance(rng, 0.4) {
                let (o, c) = limit_args(rng);
                groups.push(vec![b"LIMIT".to_vec(), o.into_bytes(), c.into_bytes()]);
            }
            if chance(rng, 0.03) {
                groups.push(g(&["REV"]));
            }
            let b = cmd(rng, name).arg(k).arg(a).arg(z);
            push_groups(rng, b, groups).exact()
        }
        2 | 3 => {
            let name = if chance(rng, 0.5) {
                "ZRANGEBYLEX"
            } else {
                "ZREVRANGEBYLEX"
            };
            let k = lex_key(rng, ctx);
            let (a, z) = (lex_bound(rng), lex_bound(rng));
            let mut groups = Vec::new();
            if chance(rng, 0.4) {
                let (o, c) = limit_args(rng);
                groups.push(vec![b"LIMIT".to_vec(), o.into_bytes(), c.into_bytes()]);
            }
            if chance(rng, 0.04) {
                groups.push(g(&["WITHSCORES"]));
            }
            let b = cmd(rng, name).arg(k).arg(a).arg(z);
            let b = push_groups(rng, b, groups);
            lex_fixed(rng, b)
        }
        _ => {
            let k = any_key(rng, ctx);
            let (a, z) = (index(rng), index(rng));
            let mut b = cmd(rng, "ZREVRANGE").arg(k).arg(a).arg(z);
            if chance(rng, 0.5) {
                b = b.opt(rng, "WITHSCORES");
            }
            b.exact()
        }
    }
}

/// Whole sets with scores: keeps the two servers' states compared.
fn c_full(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = if chance(rng, 0.8) {
        pick(rng, ZKEYS)
    } else {
        pick(rng, LEXKEYS)
    };
    cmd(rng, "ZRANGE")
        .arg(k)
        .arg("0")
        .arg("-1")
        .arg("WITHSCORES")
        .fixed()
}

fn c_encoding(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = any_key(rng, ctx);
    cmd(rng, "OBJECT").opt(rng, "ENCODING").arg(k).exact()
}

fn c_zscan(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = any_key(rng, ctx);
    let mut groups: Vec<Vec<Vec<u8>>> = Vec::new();
    if chance(rng, 0.5) {
        let c = pick(rng, &["1", "2", "5", "10", "1000"]);
        groups.push(g(&["COUNT", c]));
    }
    if chance(rng, 0.4) {
        let p = pick(rng, &["*", "a*", "m1*", "*1*", "[a-c]*", "?", "w*", "\\*"]);
        groups.push(g(&["MATCH", p]));
    }
    if chance(rng, 0.12) {
        // Errors: a bad cursor or bad options (compared exactly, first call only).
        let b = cmd(rng, "ZSCAN").arg(k);
        let bad = match rng.gen_range(0..6) {
            0 => vec![b"abc".to_vec()],
            1 => vec![b" 0".to_vec()],
            2 => vec![b"0".to_vec(), b"COUNT".to_vec(), b"0".to_vec()],
            3 => vec![b"0".to_vec(), b"COUNT".to_vec(), b"x".to_vec()],
            4 => vec![b"0".to_vec(), b"TYPE".to_vec(), b"zset".to_vec()],
            _ => vec![b"0".to_vec(), b"MATCH".to_vec()],
        };
        return b.args(bad).fixed();
    }
    let b = cmd(rng, "ZSCAN").arg(k).arg("0");
    let c = push_groups(rng, b, groups);
    c.cmp(Cmp::ScanAll {
        cursor_arg: 2,
        group: 2,
    })
}

// ---- ZRANDMEMBER ---------------------------------------------------------------------------------

/// Frame shape: the variant, and for arrays their length and their items' shapes.
fn same_shape(r: &Frame, t: &Frame) -> bool {
    match (r, t) {
        (Frame::Array(a), Frame::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_shape(x, y))
        }
        (Frame::Bulk(_), Frame::Bulk(_)) => true,
        (Frame::Double(_), Frame::Double(_)) => true,
        _ => r == t,
    }
}

/// The members of a ZRANDMEMBER reply (flat RESP2 pairs, RESP3 [member, score] pairs, or plain
/// members).
fn rand_members(f: &Frame, withscores: bool) -> Vec<Frame> {
    let Frame::Array(items) = f else {
        return Vec::new();
    };
    if !withscores {
        return items.clone();
    }
    if items.iter().all(|i| matches!(i, Frame::Array(_))) {
        items
            .iter()
            .filter_map(|i| match i {
                Frame::Array(p) => p.first().cloned(),
                _ => None,
            })
            .collect()
    } else {
        items.iter().step_by(2).cloned().collect()
    }
}

fn distinct(v: &[Frame]) -> bool {
    let mut s: Vec<String> = v.iter().map(super::common::fmt_frame).collect();
    s.sort();
    let n = s.len();
    s.dedup();
    s.len() == n
}

fn rand_any(r: &Frame, t: &Frame) -> bool {
    same_shape(r, t)
}

fn rand_distinct(r: &Frame, t: &Frame) -> bool {
    same_shape(r, t) && distinct(&rand_members(t, false))
}

fn rand_distinct_ws(r: &Frame, t: &Frame) -> bool {
    same_shape(r, t) && distinct(&rand_members(t, true))
}

fn c_zrandmember(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = any_key(rng, ctx);
    match rng.gen_range(0..10) {
        0..=1 => cmd(rng, "ZRANDMEMBER").arg(k).cmp(Cmp::Check(rand_any)),
        2..=5 => {
            let ws = chance(rng, 0.5);
            let c = rng.gen_range(1..=6).to_string();
            let mut b = cmd(rng, "ZRANDMEMBER").arg(k).arg(c);
            if ws {
                b = b.opt(rng, "WITHSCORES");
            }
            let check = if ws { rand_distinct_ws } else { rand_distinct };
            Cmd {
                mutable: false,
                ..b.cmp(Cmp::Check(check))
            }
        }
        6 => {
            let c = format!("-{}", rng.gen_range(1..=6));
            let mut b = cmd(rng, "ZRANDMEMBER").arg(k).arg(c);
            if chance(rng, 0.5) {
                b = b.opt(rng, "WITHSCORES");
            }
            Cmd {
                mutable: false,
                ..b.cmp(Cmp::Check(rand_any))
            }
        }
        7 => {
            // At least the whole set: deterministic (the set, from the highest score down).
            let mut b = cmd(rng, "ZRANDMEMBER").arg(k).arg("100000");
            if chance(rng, 0.5) {
                b = b.opt(rng, "WITHSCORES");
            }
            b.fixed()
        }
        _ => {
            let forms: [&[&str]; 9] = [
                &["0"],
                &["0", "WITHSCORES"],
                &["-9223372036854775808"],
                &["9223372036854775807", "WITHSCORES"],
                &["-4611686018427387904", "WITHSCORES"],
                &["abc"],
                &["1", "WITHSCORE"],
                &["1", "WITHSCORES", "x"],
                &["1.5"],
            ];
            let args = *pick(rng, &forms);
            cmd(rng, "ZRANDMEMBER").arg(k).args(args).fixed()
        }
    }
}

// ---- set operations ------------------------------------------------------------------------------

fn weight(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=9 => rng.gen_range(-3i64..=3).to_string(),
        10..=13 => pick(rng, &["0.5", "-0.5", "2.5", "0"]).to_string(),
        14..=16 => pick(rng, &["inf", "-inf", "-0"]).to_string(),
        _ => pick(rng, &["abc", "", "nan"]).to_string(),
    }
}

fn c_setop(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let (name, store) = *pick(
        rng,
        &[
            ("ZUNION", false),
            ("ZINTER", false),
            ("ZDIFF", false),
            ("ZUNIONSTORE", true),
            ("ZINTERSTORE", true),
            ("ZDIFFSTORE", true),
            ("ZINTERCARD", false),
        ],
    );
    let (nk, keys) = numkeys_and_keys(rng, ctx, !store);
    let n = keys.len();
    let mut b = cmd(rng, name);
    if store {
        b = b.arg(zkey(rng, ctx));
    }
    b = b.arg(nk).args(keys);
    let mut groups: Vec<Vec<Vec<u8>>> = Vec::new();
    // WEIGHTS and AGGREGATE are syntax errors for ZDIFF and ZINTERCARD: only now and then.
    let scored = !matches!(name, "ZDIFF" | "ZDIFFSTORE" | "ZINTERCARD");
    let p = if scored { 1.0 } else { 0.1 };
    if chance(rng, 0.4 * p) {
        let cnt = if chance(rng, 0.9) {
            n
        } else {
            rng.gen_range(0..=n + 1)
        };
        let mut grp = vec![b"WEIGHTS".to_vec()];
        grp.extend((0..cnt).map(|_| weight(rng).into_bytes()));
        groups.push(grp);
    }
    if chance(rng, 0.35 * p) {
        let a = pick(rng, &["SUM", "MIN", "MAX", "max", "AVG"]);
        groups.push(g(&["AGGREGATE", a]));
    }
    if !store && chance(rng, 0.5) {
        groups.push(g(&["WITHSCORES"]));
    }
    if name == "ZINTERCARD" && chance(rng, 0.5) {
        let l = pick(rng, &["0", "1", "2", "5", "-1", "abc"]);
        groups.push(g(&["LIMIT", l]));
    }
    push_groups(rng, b, groups).exact()
}

// ---- keyspace and configuration -------------------------------------------------------------------

fn c_other_types(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    if ctx.collections && chance(rng, 0.5) {
        let v = pick(rng, &["a", "b", "c", "m1", "1", "w3"]);
        if chance(rng, 0.5) {
            return cmd(rng, "SADD").arg("z:set").arg(v).exact();
        }
        return cmd(rng, "RPUSH").arg("z:list").arg(v).exact();
    }
    let v = random_string(rng, ALNUM, 1, 5);
    let k = if chance(rng, 0.5) { STRKEY } else { LEXSTR };
    cmd(rng, "SET").arg(k).arg(v).fixed()
}

fn c_keyspace(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = any_key(rng, ctx);
    match rng.gen_range(0..6) {
        0 => cmd(rng, "DEL").arg(k).exact(),
        1 => cmd(rng, "EXISTS").arg(k).exact(),
        2 => cmd(rng, "TYPE").arg(k).exact(),
        3 => {
            // Copies stay within the general keys (a copy into a lex key could carry scores).
            let (a, z) = (pick(rng, ZKEYS).to_string(), pick(rng, ZKEYS).to_string());
            cmd(rng, "COPY").arg(a).arg(z).opt(rng, "REPLACE").fixed()
        }
        4 => {
            let (a, z) = (pick(rng, ZKEYS).to_string(), pick(rng, ZKEYS).to_string());
            cmd(rng, "RENAME").arg(a).arg(z).fixed()
        }
        _ => {
            let e = expiry(rng, ctx, Unit::Secs, false);
            cmd(rng, "EXPIRE").arg(k).arg(e).fixed()
        }
    }
}

/// The encoding thresholds, changed now and then so conversions happen often.
fn c_config(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    if chance(rng, 0.6) {
        let v = pick(rng, &["0", "1", "2", "4", "8", "16", "128", "128"]);
        cmd(rng, "CONFIG")
            .arg("SET")
            .arg("zset-max-listpack-entries")
            .arg(v)
            .fixed()
    } else {
        let v = pick(rng, &["0", "1", "3", "8", "64", "64"]);
        cmd(rng, "CONFIG")
            .arg("SET")
            .arg("zset-max-listpack-value")
            .arg(v)
            .fixed()
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (22, c_zadd),
            (6, c_zadd_lex),
            (6, c_zincrby),
            (6, c_zrem),
            (6, c_zremrange),
            (5, c_zpop),
            (3, c_zmpop),
            (2, c_bzpop),
            (14, c_read),
            (4, c_zlexcount),
            (12, c_zrange),
            (4, c_zrangestore),
            (8, c_legacy_range),
            (5, c_full),
            (4, c_encoding),
            (3, c_zscan),
            (5, c_zrandmember),
            (9, c_setop),
            (2, c_other_types),
            (3, c_keyspace),
            (1, c_config),
        ],
    )
}
