//! The `keyspace` family: DEL UNLINK EXISTS TYPE RENAME RENAMENX COPY MOVE SELECT SWAPDB DBSIZE
//! KEYS SCAN TOUCH RANDOMKEY FLUSHDB, with glob patterns that exercise classes, ranges, negation
//! and escapes over keys full of glob metacharacters.

use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family {
    name: "keyspace",
    gen,
};

/// Keys with glob metacharacters, near-miss spellings, an empty key, spaces and non-ASCII bytes.
const KEYS: &[&str] = &[
    "k1",
    "k2",
    "k3",
    "key:1",
    "key:2",
    "key:10",
    "hello",
    "hallo",
    "hxllo",
    "hllo",
    "heeello",
    "a*b",
    "a?b",
    "a[b]",
    "a\\b",
    "[",
    "",
    "foo bar",
    "\u{fc}ber",
    "\x00\x01",
    "-",
    "^x",
];
const COLL_KEYS: &[&str] = &["k:list", "k:set"];

/// Hand-written patterns with a known intent, plus random ones built from glob metacharacters.
const PATTERNS: &[&str] = &[
    "*",
    "k*",
    "key:?",
    "key:*",
    "h?llo",
    "h*llo",
    "h[ae]llo",
    "h[^e]llo",
    "h[a-b]llo",
    "h[b-a]llo",
    "h[!e]llo",
    "a\\*b",
    "a\\?b",
    "a\\[b]",
    "a[\\[]b]",
    "a\\\\b",
    "a[*]b",
    "*[",
    "[",
    "[]",
    "[^]",
    "\\",
    "*\\",
    "a[",
    "h[a-",
    "h[a-]llo",
    "[k-l]*",
    "*1",
    "*:*",
    "??",
    "?",
    "",
    "***",
    "*e*l*",
    "[-]",
    "[\\-]",
    "[^a-z]*",
    "\\^x",
    "^*",
    "foo?bar",
    "*\u{fc}*",
    "k[1-2]",
    "k[2-1]",
    "[a-z][0-9]",
    "key:[0-9][0-9]",
];

fn key(rng: &mut StdRng, ctx: &Ctx) -> String {
    if ctx.collections && chance(rng, 0.05) {
        return pick(rng, COLL_KEYS).to_string();
    }
    pick(rng, KEYS).to_string()
}

fn keys(rng: &mut StdRng, ctx: &Ctx, min: usize, max: usize) -> Vec<String> {
    let n = rng.gen_range(min..=max);
    (0..n).map(|_| key(rng, ctx)).collect()
}

fn pattern(rng: &mut StdRng) -> Vec<u8> {
    if chance(rng, 0.7) {
        pick(rng, PATTERNS).as_bytes().to_vec()
    } else {
        random_string(rng, b"*?[]^-\\!ahelok:12", 1, 7)
    }
}

/// A database index: mostly 0..=3, sometimes out of range or not a number.
fn db(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=17 => rng.gen_range(0..=3).to_string(),
        18 => pick(rng, &["15", "16", "-1", "2147483648"]).to_string(),
        _ => pick(rng, &["abc", "", "1.0", "99999999999999999999"]).to_string(),
    }
}

fn c_set(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let v = if chance(rng, 0.3) {
        rng.gen_range(0..1000).to_string().into_bytes()
    } else {
        random_string(rng, ALNUM, 0, 8)
    };
    cmd(rng, "SET").arg(k).arg(v).exact()
}

fn c_mset(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let mut b = cmd(rng, "MSET");
    for k in keys(rng, ctx, 1, 5) {
        let v = random_string(rng, ALNUM, 1, 4);
        b = b.arg(k).arg(v);
    }
    b.exact()
}

fn c_get(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    cmd(rng, "GET").arg(k).exact()
}

fn c_del(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let name = if chance(rng, 0.7) { "DEL" } else { "UNLINK" };
    let ks = keys(rng, ctx, 1, 3);
    cmd(rng, name).args(ks).exact()
}

fn c_exists(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let name = if chance(rng, 0.75) { "EXISTS" } else { "TOUCH" };
    let ks = keys(rng, ctx, 1, 4);
    cmd(rng, name).args(ks).exact()
}

fn c_type(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    if chance(rng, 0.8) {
        cmd(rng, "TYPE").arg(k).exact()
    } else {
        cmd(rng, "OBJECT").opt(rng, "ENCODING").arg(k).exact()
    }
}

fn c_rename(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let name = if chance(rng, 0.6) {
        "RENAME"
    } else {
        "RENAMENX"
    };
    let (a, b) = (
        key(rng, ctx),
        if chance(rng, 0.1) {
            "renamed".to_string()
        } else {
            key(rng, ctx)
        },
    );
    cmd(rng, name).arg(a).arg(b).exact()
}

fn c_copy(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let (a, b) = (key(rng, ctx), key(rng, ctx));
    let mut groups: Vec<Vec<String>> = Vec::new();
    if chance(rng, 0.4) {
        groups.push(vec!["DB".into(), db(rng)]);
    }
    if chance(rng, 0.4) {
        groups.push(vec!["REPLACE".into()]);
    }
    if chance(rng, 0.03) {
        groups.push(vec![pick(rng, &["DB", "REPLACE", "NX"]).to_string()]);
    }
    {
        use rand::seq::SliceRandom;
        groups.shuffle(rng);
    }
    let mut c = cmd(rng, "COPY").arg(a).arg(b);
    for g in groups {
        let mut it = g.into_iter();
        let first = it.next().unwrap();
        c = c.opt(rng, &first).args(it);
    }
    c.exact()
}

fn c_move(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng, ctx);
    let d = db(rng);
    cmd(rng, "MOVE").arg(k).arg(d).exact()
}

fn c_select(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let d = db(rng);
    cmd(rng, "SELECT").arg(d).exact()
}

fn c_swapdb(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let (a, b) = (db(rng), db(rng));
    cmd(rng, "SWAPDB").arg(a).arg(b).exact()
}

fn c_dbsize(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    cmd(rng, "DBSIZE").exact()
}

fn c_keys(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let p = pattern(rng);
    cmd(rng, "KEYS").arg(p).cmp(Cmp::Unordered)
}

fn c_scan(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    if chance(rng, 0.05) {
        // Bad cursors and options: plain errors (a valid non-zero cursor is not portable).
        let cur = pick(rng, &["abc", "1.5", "18446744073709551616", " 1", "1x"]).to_string();
        return cmd(rng, "SCAN").arg(cur).fixed();
    }
    let mut groups: Vec<Vec<String>> = Vec::new();
    if chance(rng, 0.6) {
        groups.push(vec![
            "MATCH".into(),
            String::from_utf8_lossy(&pattern(rng)).into_owned(),
        ]);
    }
    if chance(rng, 0.5) {
        let n = pick(
            rng,
            &["1", "2", "3", "5", "10", "100", "1000", "0", "-1", "abc"],
        )
        .to_string();
        groups.push(vec!["COUNT".into(), n]);
    }
    if chance(rng, 0.3) {
        let t = pick(
            rng,
            &[
                "string", "STRING", "list", "set", "zset", "hash", "stream", "none", "foo",
            ],
        )
        .to_string();
        groups.push(vec!["TYPE".into(), t]);
    }
    if chance(rng, 0.03) {
        groups.push(vec![
            pick(rng, &["MATCH", "COUNT", "TYPE", "FOO"]).to_string()
        ]);
    }
    {
        use rand::seq::SliceRandom;
        groups.shuffle(rng);
    }
    let mut c = cmd(rng, "SCAN").arg("0");
    for g in groups {
        let mut it = g.into_iter();
        let first = it.next().unwrap();
        c = c.opt(rng, &first).args(it);
    }
    c.cmp(Cmp::ScanAll {
        cursor_arg: 1,
        group: 1,
    })
}

fn c_randomkey(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    cmd(rng, "RANDOMKEY").cmp(Cmp::RandomKey)
}

fn c_flushdb(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    // Rare: the keyspace should be populated most of the time.
    if !chance(rng, 0.15) {
        return c_dbsize(rng, _ctx);
    }
    match rng.gen_range(0..5) {
        0 => cmd(rng, "FLUSHDB").opt(rng, "ASYNC").exact(),
        1 => cmd(rng, "FLUSHDB").opt(rng, "SYNC").exact(),
        2 => cmd(rng, "FLUSHDB").arg("FOO").exact(),
        _ => cmd(rng, "FLUSHDB").exact(),
    }
}

fn c_collection(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    if !ctx.collections {
        return c_set(rng, ctx);
    }
    let v = random_string(rng, ALNUM, 1, 5);
    if chance(rng, 0.5) {
        cmd(rng, "LPUSH").arg("k:list").arg(v).exact()
    } else {
        cmd(rng, "SADD").arg("k:set").arg(v).exact()
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (20, c_set),
            (4, c_mset),
            (4, c_get),
            (6, c_del),
            (6, c_exists),
            (5, c_type),
            (6, c_rename),
            (5, c_copy),
            (4, c_move),
            (3, c_select),
            (2, c_swapdb),
            (3, c_dbsize),
            (8, c_keys),
            (4, c_scan),
            (2, c_randomkey),
            (1, c_flushdb),
            (2, c_collection),
        ],
    )
}
