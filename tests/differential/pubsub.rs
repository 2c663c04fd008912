//! The `pubsub` family: message streams. Three subscriber connections per server (the third
//! speaks RESP3) subscribe and unsubscribe to channels, patterns and shard channels; the main
//! connection publishes and asks PUBSUB. After every PUBLISH/SPUBLISH each subscriber's messages
//! are read on both servers and compared (as multisets where Redis's own order is a hash order:
//! a client matching several patterns). A model of the subscriptions says how many frames to read.
//!
//! Every operation is a [`Cmp::Custom`] step; its arguments are the operation as printed in
//! failure reports: `SUB <i> <command> <names...>` runs on subscriber i, anything else on the
//! main connection.

use super::common::{fmt_frame, Frame, RawClient};
use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

pub const FAMILY: Family = Family {
    name: "pubsub",
    gen,
};

const SUBSCRIBERS: usize = 3;
const CHANNELS: &[&str] = &[
    "news",
    "news.tech",
    "news.art",
    "sport",
    "x1",
    "x22",
    "a",
    "b",
];
const PATTERNS: &[&str] = &["news.*", "n*", "*", "x?", "[ab]", "sp*t", "none*"];
const MESSAGES: &[&str] = &["hello", "", "with space", "\u{1}bin\u{0}"];

/// One subscriber's subscriptions (the model), per side.
#[derive(Default, Clone)]
struct Subs {
    channels: BTreeSet<String>,
    patterns: BTreeSet<String>,
    shard: BTreeSet<String>,
}

struct Side {
    subs: Vec<RawClient>,
    model: Vec<Subs>,
}

thread_local! {
    /// Subscriber connections of the current run, keyed by `side_key` of the main connection.
    static SIDES: RefCell<HashMap<(u16, u16), Side>> = RefCell::new(HashMap::new());
}

fn with_side<R>(main: &mut RawClient, f: impl FnOnce(&mut Side, &mut RawClient) -> R) -> R {
    let key = side_key(main);
    let port = key.1;
    SIDES.with(|s| {
        let mut map = s.borrow_mut();
        let side = map.entry(key).or_insert_with(|| {
            let subs = (0..SUBSCRIBERS)
                .map(|i| {
                    let mut c = RawClient::connect(port);
                    if i == 2 {
                        let hello = c.call(&["HELLO", "3"]);
                        assert!(
                            matches!(hello, Frame::Map(_)),
                            "HELLO 3: {}",
                            fmt_frame(&hello)
                        );
                    }
                    c
                })
                .collect();
            Side {
                subs,
                model: vec![Subs::default(); SUBSCRIBERS],
            }
        });
        f(side, main)
    })
}

/// Redis-style glob over the simple patterns used here (`*`, `?`, `[..]`).
fn glob(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob(&p[1..], s) || (!s.is_empty() && glob(p, &s[1..])),
        (Some(b'?'), Some(_)) => glob(&p[1..], &s[1..]),
        (Some(b'['), Some(c)) => match p.iter().position(|&x| x == b']') {
            Some(end) => p[1..end].contains(c) && glob(&p[end + 1..], &s[1..]),
            None => false,
        },
        (Some(a), Some(b)) if a == b => glob(&p[1..], &s[1..]),
        _ => false,
    }
}

/// Frames a subscriber receives for one (S)PUBLISH on `channel`.
fn expected_deliveries(m: &Subs, channel: &str, shard: bool) -> usize {
    if shard {
        return m.shard.contains(channel) as usize;
    }
    m.channels.contains(channel) as usize
        + m.patterns
            .iter()
            .filter(|p| glob(p.as_bytes(), channel.as_bytes()))
            .count()
}

/// Runs one operation on one server; returns what to compare.
fn run_side(args: &[Vec<u8>], main: &mut RawClient) -> Result<Vec<String>, String> {
    let text: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    with_side(main, |side, main| {
        let mut out = Vec::new();
        if text[0] == "SUB" {
            let i: usize = text[1].parse().unwrap_or(0);
            let cmd = text[2].to_ascii_uppercase();
            let names = &text[3..];
            let model = &mut side.model[i];
            let conn = &mut side.subs[i];
            let argv: Vec<&str> = text[2..].iter().map(|s| s.as_str()).collect();
            conn.send(&argv);
            // How many replies: one per name, or per current subscription for a bare
            // unsubscribe (one null-named reply when there is none).
            let (set, subscribe) = match cmd.as_str() {
                "SUBSCRIBE" => (&mut model.channels, true),
                "PSUBSCRIBE" => (&mut model.patterns, true),
                "SSUBSCRIBE" => (&mut model.shard, true),
                "UNSUBSCRIBE" => (&mut model.channels, false),
                "PUNSUBSCRIBE" => (&mut model.patterns, false),
                "SUNSUBSCRIBE" => (&mut model.shard, false),
                _ => {
                    // PING or a refused command: one reply.
                    out.push(fmt_frame(
                        &conn
                            .try_read_frame()
                            .map_err(|e| e.to_string())?
                            .ok_or("closed")?,
                    ));
                    return Ok(out);
                }
            };
            let count = if names.is_empty() && !subscribe {
                set.len().max(1)
            } else {
                names.len()
            };
            if subscribe {
                set.extend(names.iter().cloned());
            } else if names.is_empty() {
                set.clear();
            } else {
                for n in names {
                    set.remove(n);
                }
            }
            let mut replies = Vec::new();
            let mut counts = Vec::new();
            for _ in 0..count {
                let f = conn
                    .try_read_frame()
                    .map_err(|e| e.to_string())?
                    .ok_or("closed")?;
                if names.is_empty() {
                    // A bare unsubscribe goes through the subscriptions in hash order,
                    // each reply with the count left: compare the names and the counts
                    // as sets.
                    if let Frame::Array(v) | Frame::Push(v) = &f {
                        if v.len() == 3 {
                            replies.push(format!("{} {}", fmt_frame(&v[0]), fmt_frame(&v[1])));
                            counts.push(fmt_frame(&v[2]));
                            continue;
                        }
                    }
                }
                replies.push(fmt_frame(&f));
            }
            if names.is_empty() {
                replies.sort();
                counts.sort();
            }
            out.extend(replies);
            out.extend(counts);
            return Ok(out);
        }
        let argv: Vec<&str> = text.iter().map(|s| s.as_str()).collect();
        let reply = main.call(&argv);
        out.push(fmt_frame(&reply));
        let cmd = text[0].to_ascii_uppercase();
        if (cmd == "PUBLISH" || cmd == "SPUBLISH") && text.len() == 3 {
            for (i, conn) in side.subs.iter_mut().enumerate() {
                let n = expected_deliveries(&side.model[i], &text[1], cmd == "SPUBLISH");
                let mut got = Vec::new();
                for _ in 0..n {
                    let f = conn
                        .try_read_frame()
                        .map_err(|e| e.to_string())?
                        .ok_or("closed")?;
                    got.push(fmt_frame(&f));
                }
                got.sort();
                out.push(format!("subscriber {i}: {}", got.join(" | ")));
            }
        } else if cmd == "PUBSUB" && text.len() > 1 && !text[1].eq_ignore_ascii_case("NUMSUB") {
            // CHANNELS / SHARDCHANNELS list in hash order.
            if let Frame::Array(items) = reply {
                let mut v: Vec<String> = items.iter().map(fmt_frame).collect();
                v.sort();
                out[0] = v.join(", ");
            }
        }
        Ok(out)
    })
}

fn check(
    args: &[Vec<u8>],
    reference: &mut RawClient,
    target: &mut RawClient,
) -> Result<(), (String, String)> {
    compare_sides(args, reference, target, run_side)
}

fn op(args: Vec<String>) -> Cmd {
    Cmd {
        args: args.into_iter().map(String::into_bytes).collect(),
        cmp: Cmp::Custom(check),
        mutable: false,
    }
}

fn names(rng: &mut StdRng, pool: &[&str], max: usize) -> Vec<String> {
    (0..rng.gen_range(1..=max))
        .map(|_| pick(rng, pool).to_string())
        .collect()
}

fn gen(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let i = rng.gen_range(0..SUBSCRIBERS).to_string();
    let sub = |cmd: &str, rest: Vec<String>| {
        let mut v = vec!["SUB".to_string(), i.clone(), cmd.to_string()];
        v.extend(rest);
        op(v)
    };
    match rng.gen_range(0..100) {
        0..=11 => sub("SUBSCRIBE", names(rng, CHANNELS, 3)),
        12..=19 => sub("PSUBSCRIBE", names(rng, PATTERNS, 2)),
        20..=23 => sub("SSUBSCRIBE", names(rng, CHANNELS, 2)),
        24..=29 => {
            let n = if chance(rng, 0.3) {
                vec![]
            } else {
                names(rng, CHANNELS, 2)
            };
            sub("UNSUBSCRIBE", n)
        }
        30..=33 => {
            let n = if chance(rng, 0.3) {
                vec![]
            } else {
                names(rng, PATTERNS, 2)
            };
            sub("PUNSUBSCRIBE", n)
        }
        34..=35 => {
            let n = if chance(rng, 0.3) {
                vec![]
            } else {
                names(rng, CHANNELS, 1)
            };
            sub("SUNSUBSCRIBE", n)
        }
        36..=37 => sub("PING", vec![]),
        38 => sub("GET", vec!["k".to_string()]),
        39..=74 => op(vec![
            "PUBLISH".into(),
            pick(rng, CHANNELS).to_string(),
            pick(rng, MESSAGES).to_string(),
        ]),
        75..=82 => op(vec![
            "SPUBLISH".into(),
            pick(rng, CHANNELS).to_string(),
            pick(rng, MESSAGES).to_string(),
        ]),
        83..=86 => {
            let mut v = vec!["PUBSUB".to_string(), "NUMSUB".to_string()];
            v.extend(names(rng, CHANNELS, 3));
            op(v)
        }
        87..=89 => op(vec!["PUBSUB".into(), "NUMPAT".into()]),
        90..=92 => {
            let mut v = vec!["PUBSUB".to_string(), "CHANNELS".to_string()];
            if chance(rng, 0.5) {
                v.push(pick(rng, PATTERNS).to_string());
            }
            op(v)
        }
        93..=94 => op(vec!["PUBSUB".into(), "SHARDCHANNELS".into()]),
        95..=96 => {
            let mut v = vec!["PUBSUB".to_string(), "SHARDNUMSUB".to_string()];
            v.extend(names(rng, CHANNELS, 2));
            op(v)
        }
        _ => op(vec!["PUBLISH".into(), "news".into()]),
    }
}
