//! The `tracking` family: client-side caching. Per server, four extra connections: tracker 0
//! (RESP3, default mode: OPTIN/OPTOUT/NOLOOP/REDIRECT vary), tracker 1 (RESP3, BCAST with
//! prefixes), a RESP2 connection subscribed to `__redis__:invalidate` (the REDIRECT target),
//! and tracker 3 (RESP2, default mode, mostly redirecting). The main connection writes keys
//! (plain commands, MSET, scripts, FLUSHDB, in database 0 or 1: tracking ignores databases) and
//! reads the tracking counters of INFO.
//!
//! After every step each of the three is sent PING and its frames up to the PONG are compared:
//! the invalidations the step caused, in order (Redis writes them into the receiver's output
//! before the PONG; so does Tessera, whose pushes are queued before the next command runs).
//!
//! Every operation is a [`Cmp::Custom`] step; its arguments are the operation as printed in
//! failure reports: `T <i> <command...>` runs on tracker i (`QUIT` reconnects it), anything
//! else on the main connection.

use super::common::{fmt_frame, Frame, RawClient};
use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;
use std::cell::RefCell;
use std::collections::HashMap;

pub const FAMILY: Family = Family {
    name: "tracking",
    gen,
};

const KEYS: &[&str] = &["k1", "k2", "p:a", "p:b", "q:c", "q:d"];
const PREFIXES: &[&[&str]] = &[&["p:"], &["q:"], &["p:", "q:"], &[]];

struct Side {
    /// Tracker 0, tracker 1, the RESP2 subscriber, tracker 3.
    conns: Vec<RawClient>,
    /// The subscriber's client id on this server (REDIRECT's argument).
    redirect_id: String,
}

thread_local! {
    /// Connections of the current run, keyed by `side_key` of the main connection.
    static SIDES: RefCell<HashMap<(u16, u16), Side>> = RefCell::new(HashMap::new());
}

fn resp3_client(port: u16) -> RawClient {
    let mut c = RawClient::connect(port);
    let hello = c.call(&["HELLO", "3"]);
    assert!(
        matches!(hello, Frame::Map(_)),
        "HELLO 3: {}",
        fmt_frame(&hello)
    );
    c
}

fn with_side<R>(main: &mut RawClient, f: impl FnOnce(&mut Side, &mut RawClient) -> R) -> R {
    let key = side_key(main);
    let port = key.1;
    SIDES.with(|s| {
        let mut map = s.borrow_mut();
        let side = map.entry(key).or_insert_with(|| {
            let mut sub = RawClient::connect(port);
            let redirect_id = match sub.call(&["CLIENT", "ID"]) {
                Frame::Integer(id) => id.to_string(),
                other => panic!("CLIENT ID: {}", fmt_frame(&other)),
            };
            let subscribed = sub.call(&["SUBSCRIBE", "__redis__:invalidate"]);
            assert!(
                matches!(subscribed, Frame::Array(_)),
                "SUBSCRIBE: {}",
                fmt_frame(&subscribed)
            );
            Side {
                conns: vec![
                    resp3_client(port),
                    resp3_client(port),
                    sub,
                    RawClient::connect(port),
                ],
                redirect_id,
            }
        });
        f(side, main)
    })
}

/// INFO's tracking counters.
fn counters(main: &mut RawClient) -> String {
    let mut out = Vec::new();
    for section in ["stats", "clients"] {
        if let Frame::Bulk(b) = main.call(&["INFO", section]) {
            for line in String::from_utf8_lossy(&b).lines() {
                if line.starts_with("tracking_") {
                    out.push(line.trim().to_string());
                }
            }
        }
    }
    out.join(" ")
}

/// Runs one operation on one server; returns what to compare.
fn run_side(args: &[Vec<u8>], main: &mut RawClient) -> Result<Vec<String>, String> {
    let text: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    with_side(main, |side, main| {
        let mut out = Vec::new();
        if text[0] == "T" {
            let i: usize = text[1].parse().unwrap_or(0);
            if text[2] == "QUIT" {
                let port = side_key(main).1;
                side.conns[i] = if i == 3 {
                    RawClient::connect(port)
                } else {
                    resp3_client(port)
                };
            } else {
                let argv: Vec<&str> = text[2..]
                    .iter()
                    .map(|s| {
                        if s == "$REDIRECT_ID" {
                            side.redirect_id.as_str()
                        } else {
                            s.as_str()
                        }
                    })
                    .collect();
                let reply = side.conns[i].call(&argv);
                out.push(fmt_frame(&reply));
            }
        } else if text[0] == "COUNTERS" {
            out.push(counters(main));
        } else {
            let argv: Vec<&str> = text.iter().map(|s| s.as_str()).collect();
            out.push(fmt_frame(&main.call(&argv)));
        }
        for (i, conn) in side.conns.iter_mut().enumerate() {
            let mut frames: Vec<String> = frames_before_pong(conn)?.iter().map(fmt_frame).collect();
            sort_flush_runs(&mut frames);
            out.push(format!("connection {i}: {}", frames.join(" | ")));
        }
        Ok(out)
    })
}

/// Sorts each run of adjacent "everything is invalid" messages (a FLUSH's null): several trackers
/// redirecting to one receiver each send one, in the order of redis-server's client list, which
/// its cron keeps rotating, so their relative order there depends on timing.
fn sort_flush_runs(frames: &mut [String]) {
    let is_flush = |f: &String| f.ends_with("(nil)]") || f.ends_with("(null)]");
    let mut start = 0;
    while start < frames.len() {
        let mut end = start;
        while end < frames.len() && is_flush(&frames[end]) {
            end += 1;
        }
        if end > start {
            frames[start..end].sort();
            start = end;
        } else {
            start += 1;
        }
    }
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

fn on_tracker(i: usize, rest: &[&str]) -> Cmd {
    let mut v = vec!["T".to_string(), i.to_string()];
    v.extend(rest.iter().map(|s| s.to_string()));
    op(v)
}

fn tracking_on_default(rng: &mut StdRng) -> Cmd {
    let mut v = vec!["CLIENT", "TRACKING", "ON"];
    match rng.gen_range(0..4) {
        0 => v.push("OPTIN"),
        1 => v.push("OPTOUT"),
        _ => {}
    }
    if chance(rng, 0.3) {
        v.push("NOLOOP");
    }
    if chance(rng, 0.3) {
        v.extend(["REDIRECT", "$REDIRECT_ID"]);
    }
    on_tracker(0, &v)
}

fn tracking_on_resp2(rng: &mut StdRng) -> Cmd {
    let mut v = vec!["CLIENT", "TRACKING", "ON"];
    if chance(rng, 0.85) {
        v.extend(["REDIRECT", "$REDIRECT_ID"]);
    }
    if chance(rng, 0.2) {
        v.push("OPTIN");
    }
    if chance(rng, 0.2) {
        v.push("NOLOOP");
    }
    on_tracker(3, &v)
}

fn tracking_on_bcast(rng: &mut StdRng) -> Cmd {
    let mut v = vec!["CLIENT", "TRACKING", "ON", "BCAST"];
    for p in *pick(rng, PREFIXES) {
        v.extend(["PREFIX", p]);
    }
    if chance(rng, 0.3) {
        v.push("NOLOOP");
    }
    on_tracker(1, &v)
}

fn gen(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    let k = pick(rng, KEYS);
    let k2 = pick(rng, KEYS);
    let i = *pick(rng, &[0, 1, 3]);
    match rng.gen_range(0..110) {
        0..=7 => tracking_on_default(rng),
        8..=10 => on_tracker(0, &["CLIENT", "TRACKING", "OFF"]),
        11..=14 => tracking_on_bcast(rng),
        15..=16 => on_tracker(1, &["CLIENT", "TRACKING", "OFF"]),
        17..=32 => on_tracker(i, &["GET", k]),
        33..=37 => on_tracker(i, &["MGET", k, k2]),
        38..=41 => on_tracker(0, &["CLIENT", "CACHING", *pick(rng, &["yes", "no"])]),
        42..=46 => on_tracker(i, &["SET", k, "own"]),
        47 => on_tracker(i, &["QUIT"]),
        48..=66 => op(vec!["SET".into(), k.to_string(), "v".into()]),
        67..=71 => op(vec!["DEL".into(), k.to_string(), k2.to_string()]),
        72..=75 => op(vec!["INCR".into(), k.to_string()]),
        76..=80 => op(vec![
            "MSET".into(),
            k.to_string(),
            "1".into(),
            k2.to_string(),
            "2".into(),
        ]),
        81..=83 => op(vec!["EXPIRE".into(), k.to_string(), "1000".into()]),
        84..=86 => op(vec![
            "EVAL".into(),
            "redis.call('set', KEYS[1], 's') return redis.call('get', KEYS[2])".into(),
            "2".into(),
            k.to_string(),
            k2.to_string(),
        ]),
        87 => op(vec!["FLUSHDB".into()]),
        88..=89 => op(vec!["RENAME".into(), k.to_string(), k2.to_string()]),
        90..=93 => tracking_on_resp2(rng),
        94 => on_tracker(3, &["CLIENT", "TRACKING", "OFF"]),
        95..=96 => op(vec!["SELECT".into(), pick(rng, &["0", "1"]).to_string()]),
        97 => on_tracker(1, &["CLIENT", "TRACKINGINFO"]),
        98 => on_tracker(1, &["CLIENT", "GETREDIR"]),
        99 => op(vec!["FLUSHALL".into()]),
        _ => op(vec!["COUNTERS".into()]),
    }
}
