//! The `streams` family: XADD (explicit and `ms-*` IDs that grow with the step, so both servers
//! agree; NOMKSTREAM; MAXLEN/MINID with `=`/`~`/LIMIT), ranges, XDEL, XTRIM, XREAD (with short
//! BLOCKs), consumer groups (XGROUP, XREADGROUP new/history/NOACK, XACK, XPENDING, XCLAIM,
//! XAUTOCLAIM), XSETID and XINFO. Consumer-group state is compared through XPENDING and XINFO
//! with the clock-dependent fields (idle, seen-time, delivery times) and the radix-tree node
//! count masked. Idle thresholds are 0 or far from any idle time a run produces.

use super::common::Frame;
use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family {
    name: "streams",
    gen,
};

const SKEYS: &[&str] = &["x0", "x1", "x2", "{t}a", "{t}b"];
const GROUPS: &[&str] = &["g0", "g1", "g2"];
const CONSUMERS: &[&str] = &["c0", "c1", "c2"];

fn key(rng: &mut StdRng) -> String {
    match rng.gen_range(0..100) {
        0..=5 => "xstr".to_string(),
        6..=9 => "nokey".to_string(),
        _ => pick(rng, SKEYS).to_string(),
    }
}

fn group(rng: &mut StdRng) -> String {
    if chance(rng, 0.05) {
        return "nogroup".to_string();
    }
    pick(rng, GROUPS).to_string()
}

fn consumer(rng: &mut StdRng) -> String {
    pick(rng, CONSUMERS).to_string()
}

/// An ID around the IDs the run has produced so far (the ms part is the step).
fn id(rng: &mut StdRng, ctx: &Ctx) -> String {
    let ms = rng.gen_range(0..=ctx.step + 1);
    match rng.gen_range(0..20) {
        0..=13 => format!("{ms}-{}", rng.gen_range(0..3)),
        14..=15 => ms.to_string(),
        16 => pick(
            rng,
            &["0", "0-0", "18446744073709551615-18446744073709551615"],
        )
        .to_string(),
        17 => pick(rng, &["abc", "1-x", "", "-1", "1-2-3"]).to_string(),
        _ => format!("{}-{}", ctx.step, rng.gen_range(0..5)),
    }
}

/// A range bound: `-`, `+`, an ID, or an exclusive one.
fn bound(rng: &mut StdRng, ctx: &Ctx, low: bool) -> String {
    match rng.gen_range(0..10) {
        0..=2 => (if low { "-" } else { "+" }).to_string(),
        3..=7 => id(rng, ctx),
        _ => format!("({}", id(rng, ctx)),
    }
}

fn count(rng: &mut StdRng) -> String {
    match rng.gen_range(0..10) {
        0..=6 => rng.gen_range(1..=5).to_string(),
        7 => "0".to_string(),
        8 => "-1".to_string(),
        _ => pick(rng, &["abc", "100"]).to_string(),
    }
}

fn field_values(rng: &mut StdRng) -> Vec<String> {
    let n = if chance(rng, 0.95) {
        rng.gen_range(1..=3)
    } else {
        0
    };
    let mut v = Vec::new();
    let same = chance(rng, 0.6);
    for i in 0..n {
        if same {
            v.push(format!("f{i}"));
        } else {
            v.push(pick(rng, &["f0", "f1", "x", "123", "a b"]).to_string());
        }
        v.push(pick(rng, &["v", "1", "-7", "hello", "", "9999999999"]).to_string());
    }
    if chance(rng, 0.03) {
        v.push("odd".to_string());
    }
    v
}

fn trim_args(rng: &mut StdRng, ctx: &Ctx) -> Vec<String> {
    let mut v = Vec::new();
    if chance(rng, 0.5) {
        v.push("MAXLEN".to_string());
        match rng.gen_range(0..4) {
            0 => v.push("~".to_string()),
            1 => v.push("=".to_string()),
            _ => {}
        }
        v.push(match rng.gen_range(0..10) {
            0..=7 => rng.gen_range(0..=20).to_string(),
            8 => "-1".to_string(),
            _ => "x".to_string(),
        });
    } else {
        v.push("MINID".to_string());
        if chance(rng, 0.3) {
            v.push("~".to_string());
        }
        v.push(id(rng, ctx));
    }
    if chance(rng, 0.15) {
        v.push("LIMIT".to_string());
        v.push(pick(rng, &["0", "1", "10", "-1"]).to_string());
    }
    v
}

fn c_xadd(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng);
    let mut b = cmd(rng, "XADD").arg(k);
    if chance(rng, 0.1) {
        b = b.opt(rng, "NOMKSTREAM");
    }
    if chance(rng, 0.2) {
        let t = trim_args(rng, ctx);
        b = b.args(t);
    }
    let i = match rng.gen_range(0..10) {
        0..=5 => format!("{}-{}", ctx.step + 1, rng.gen_range(0..3)),
        6..=7 => format!("{}-*", ctx.step + rng.gen_range(0..2)),
        _ => id(rng, ctx),
    };
    // Not mutated: a junk argument could become `*`, whose ID depends on the clock.
    let mut c = b.arg(i).args(field_values(rng)).exact();
    c.mutable = false;
    c
}

fn c_range(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng);
    let rev = chance(rng, 0.4);
    let (lo, hi) = (bound(rng, ctx, true), bound(rng, ctx, false));
    let mut b = if rev {
        cmd(rng, "XREVRANGE").arg(k).arg(hi).arg(lo)
    } else {
        cmd(rng, "XRANGE").arg(k).arg(lo).arg(hi)
    };
    if chance(rng, 0.4) {
        let c = count(rng);
        b = b.opt(rng, "COUNT").arg(c);
    }
    b.exact()
}

fn c_small(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng);
    match rng.gen_range(0..10) {
        0..=2 => cmd(rng, "XLEN").arg(k).exact(),
        3..=5 => {
            let n = rng.gen_range(1..=3);
            let ids: Vec<String> = (0..n).map(|_| id(rng, ctx)).collect();
            cmd(rng, "XDEL").arg(k).args(ids).exact()
        }
        6..=7 => {
            let t = trim_args(rng, ctx);
            cmd(rng, "XTRIM").arg(k).args(t).exact()
        }
        8 => {
            let i = id(rng, ctx);
            let mut b = cmd(rng, "XSETID").arg(k).arg(i);
            if chance(rng, 0.3) {
                let n = rng.gen_range(0..=ctx.step + 2).to_string();
                b = b.opt(rng, "ENTRIESADDED").arg(n);
            }
            if chance(rng, 0.3) {
                let m = id(rng, ctx);
                b = b.opt(rng, "MAXDELETEDID").arg(m);
            }
            b.exact()
        }
        _ => {
            if chance(rng, 0.5) {
                cmd(rng, "SET").arg("xstr").arg("v").exact()
            } else {
                let k = pick(rng, SKEYS).to_string();
                cmd(rng, "DEL").arg(k).exact()
            }
        }
    }
}

fn read_ids(rng: &mut StdRng, ctx: &Ctx, n: usize, group: bool) -> Vec<String> {
    (0..n)
        .map(|_| match rng.gen_range(0..10) {
            0..=4 if group => ">".to_string(),
            0..=3 => "$".to_string(),
            _ => {
                if chance(rng, 0.5) {
                    "0".to_string()
                } else {
                    id(rng, ctx)
                }
            }
        })
        .collect()
}

fn c_xread(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let group = chance(rng, 0.6);
    let mut b = if group {
        let (g, c) = (self::group(rng), consumer(rng));
        cmd(rng, "XREADGROUP").opt(rng, "GROUP").arg(g).arg(c)
    } else {
        cmd(rng, "XREAD")
    };
    if chance(rng, 0.5) {
        let c = count(rng);
        b = b.opt(rng, "COUNT").arg(c);
    }
    let blocks = chance(rng, 0.15);
    if blocks {
        b = b.opt(rng, "BLOCK").arg(pick(rng, &["5", "10", "-1"]));
    }
    if group && chance(rng, 0.2) {
        b = b.opt(rng, "NOACK");
    }
    let n = rng.gen_range(1..=2);
    let keys: Vec<String> = (0..n).map(|_| key(rng)).collect();
    let ids = read_ids(rng, ctx, n, group);
    let mut c = b.opt(rng, "STREAMS").args(keys).args(ids).exact();
    // Not mutated when it blocks: junk could turn the timeout into 0
    // (forever), and nothing else on the single connection can wake it.
    c.mutable = !blocks;
    c
}

fn c_xgroup(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng);
    let g = group(rng);
    match rng.gen_range(0..10) {
        0..=3 => {
            let i = if chance(rng, 0.4) {
                "$".to_string()
            } else if chance(rng, 0.5) {
                "0".to_string()
            } else {
                id(rng, ctx)
            };
            let mut b = cmd(rng, "XGROUP").opt(rng, "CREATE").arg(k).arg(g).arg(i);
            if chance(rng, 0.4) {
                b = b.opt(rng, "MKSTREAM");
            }
            if chance(rng, 0.2) {
                let n = pick(rng, &["0", "3", "-1", "-2", "x"]).to_string();
                b = b.opt(rng, "ENTRIESREAD").arg(n);
            }
            b.exact()
        }
        4..=5 => {
            let i = if chance(rng, 0.3) {
                "$".to_string()
            } else {
                id(rng, ctx)
            };
            let mut b = cmd(rng, "XGROUP").opt(rng, "SETID").arg(k).arg(g).arg(i);
            if chance(rng, 0.3) {
                let n = pick(rng, &["0", "3", "-1", "x"]).to_string();
                b = b.opt(rng, "ENTRIESREAD").arg(n);
            }
            b.exact()
        }
        6 => cmd(rng, "XGROUP").opt(rng, "DESTROY").arg(k).arg(g).exact(),
        7..=8 => {
            let c = consumer(rng);
            cmd(rng, "XGROUP")
                .opt(rng, "CREATECONSUMER")
                .arg(k)
                .arg(g)
                .arg(c)
                .exact()
        }
        _ => {
            let c = consumer(rng);
            cmd(rng, "XGROUP")
                .opt(rng, "DELCONSUMER")
                .arg(k)
                .arg(g)
                .arg(c)
                .exact()
        }
    }
}

fn min_idle(rng: &mut StdRng) -> String {
    pick(rng, &["0", "0", "0", "3600000", "-5", "x"]).to_string()
}

fn c_pel(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let k = key(rng);
    let g = group(rng);
    match rng.gen_range(0..10) {
        0..=2 => {
            let n = rng.gen_range(1..=3);
            let ids: Vec<String> = (0..n).map(|_| id(rng, ctx)).collect();
            cmd(rng, "XACK").arg(k).arg(g).args(ids).exact()
        }
        3..=4 => {
            let n = rng.gen_range(1..=3);
            let ids: Vec<String> = (0..n).map(|_| id(rng, ctx)).collect();
            let (c, m) = (consumer(rng), min_idle(rng));
            let mut b = cmd(rng, "XCLAIM").arg(k).arg(g).arg(c).arg(m).args(ids);
            if chance(rng, 0.3) {
                b = b.opt(rng, "IDLE").arg(pick(rng, &["0", "5000000", "x"]));
            }
            if chance(rng, 0.2) {
                b = b.opt(rng, "RETRYCOUNT").arg(pick(rng, &["0", "5", "x"]));
            }
            if chance(rng, 0.3) {
                b = b.opt(rng, "FORCE");
            }
            if chance(rng, 0.3) {
                b = b.opt(rng, "JUSTID");
            }
            if chance(rng, 0.15) {
                let l = id(rng, ctx);
                b = b.opt(rng, "LASTID").arg(l);
            }
            b.exact()
        }
        5..=6 => {
            let (c, m, s) = (consumer(rng), min_idle(rng), bound(rng, ctx, true));
            let mut b = cmd(rng, "XAUTOCLAIM").arg(k).arg(g).arg(c).arg(m).arg(s);
            if chance(rng, 0.5) {
                b = b
                    .opt(rng, "COUNT")
                    .arg(pick(rng, &["1", "2", "5", "0", "x"]));
            }
            if chance(rng, 0.3) {
                b = b.opt(rng, "JUSTID");
            }
            b.exact()
        }
        _ => {
            if chance(rng, 0.4) {
                return cmd(rng, "XPENDING").arg(k).arg(g).exact();
            }
            let mut b = cmd(rng, "XPENDING").arg(k).arg(g);
            if chance(rng, 0.2) {
                b = b.opt(rng, "IDLE").arg(pick(rng, &["0", "3600000"]));
            }
            let (lo, hi, n) = (bound(rng, ctx, true), bound(rng, ctx, false), count(rng));
            b = b.arg(lo).arg(hi).arg(n);
            if chance(rng, 0.3) {
                let c = consumer(rng);
                b = b.arg(c);
            }
            b.cmp(Cmp::Check(masked_eq))
        }
    }
}

fn c_info(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = if chance(rng, 0.85) {
        pick(rng, SKEYS).to_string()
    } else {
        key(rng)
    };
    match rng.gen_range(0..10) {
        0..=2 => cmd(rng, "XINFO")
            .opt(rng, "STREAM")
            .arg(k)
            .cmp(Cmp::Check(masked_eq)),
        3..=4 => {
            let mut b = cmd(rng, "XINFO").opt(rng, "STREAM").arg(k).opt(rng, "FULL");
            if chance(rng, 0.5) {
                b = b.opt(rng, "COUNT").arg(pick(rng, &["0", "2", "-1"]));
            }
            b.cmp(Cmp::Check(masked_eq))
        }
        5..=7 => cmd(rng, "XINFO").opt(rng, "GROUPS").arg(k).exact(),
        _ => {
            let g = group(rng);
            cmd(rng, "XINFO")
                .opt(rng, "CONSUMERS")
                .arg(k)
                .arg(g)
                .cmp(Cmp::Check(masked_eq))
        }
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (30, c_xadd),
            (10, c_range),
            (10, c_small),
            (15, c_xread),
            (10, c_xgroup),
            (12, c_pel),
            (8, c_info),
        ],
    )
}

/// Replaces what depends on the clock or on radix-tree internals: the value after an `idle`,
/// `seen-time` or `radix-tree-nodes` field name, absolute times (integers above 10^12), and
/// the idle column of XPENDING's extended rows (4-element rows starting with an ID).
fn mask(f: &Frame) -> Frame {
    match f {
        Frame::Integer(n) if *n > 1_000_000_000_000 => Frame::Integer(0),
        Frame::Array(items) => {
            let mut out: Vec<Frame> = items.iter().map(mask).collect();
            let is_key = |x: &Frame| {
                matches!(x, Frame::Bulk(b) if b == b"idle" || b == b"seen-time" || b == b"radix-tree-nodes")
            };
            for i in 0..out.len().saturating_sub(1) {
                if is_key(&items[i]) {
                    out[i + 1] = Frame::Integer(0);
                }
            }
            if items.len() == 4
                && matches!(&items[0], Frame::Bulk(b) if b.contains(&b'-'))
                && matches!(&items[1], Frame::Bulk(_))
                && matches!(&items[2], Frame::Integer(_))
            {
                out[2] = Frame::Integer(0);
            }
            Frame::Array(out)
        }
        Frame::Map(pairs) => Frame::Map(
            pairs
                .iter()
                .map(|(k, v)| {
                    let masked = matches!(k, Frame::Bulk(b) if b == b"idle" || b == b"seen-time" || b == b"radix-tree-nodes");
                    (mask(k), if masked { Frame::Integer(0) } else { mask(v) })
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn masked_eq(r: &Frame, t: &Frame) -> bool {
    mask(r) == mask(t)
}
