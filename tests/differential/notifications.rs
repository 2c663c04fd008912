//! The `notifications` family: keyspace and keyevent notifications of every command family.
//! Per server, one RESP2 connection `PSUBSCRIBE`s `__key*__:*`; the main connection runs
//! commands drawn from the other families' generators (strings, keyspace, expire, lists, sort,
//! zsets, hashes, sets, streams, geo, bitmaps, HyperLogLog) under `notify-keyspace-events`
//! flags that change now and then (the `m` key-miss and `n` new-key classes included).
//!
//! After every command the subscriber is sent PING and the notifications it received before
//! the PONG are compared, in order, with the command's reply. Commands whose reply is random
//! (SPOP, SRANDMEMBER, RANDOMKEY, SCAN loops) are drawn again: their effects would make the two
//! servers' data differ.
//!
//! Arguments with huge exponents are not sent (see `overflows`), nor DBSIZE (active expiry).
//! `expired` events are left out: active expiry (not the command) deletes keys whose time has
//! passed at moments of each server's own choosing. Lazy expiry's effects still show, in the
//! replies and the events that follow.
//!
//! Every operation is a [`Cmp::Custom`] step; its arguments are `<mode> <command...>`, where
//! mode says how the reply is compared: `=` exactly, `~` as an unordered array, `?` not at all
//! (clock-dependent TTL replies), `CONFIG` sets the flags.

use super::common::{fmt_frame, Frame, RawClient};
use super::gen::*;
use rand::rngs::StdRng;
use std::cell::RefCell;
use std::collections::HashMap;

pub const FAMILY: Family = Family {
    name: "notifications",
    gen,
};

/// The generators whose commands are run.
const SOURCES: &[&Family] = &[
    &super::strings::FAMILY,
    &super::keyspace::FAMILY,
    &super::expire::FAMILY,
    &super::lists::FAMILY,
    &super::lists::SORT_FAMILY,
    &super::zsets::FAMILY,
    &super::hashes::FAMILY,
    &super::sets::FAMILY,
    &super::streams::FAMILY,
    &super::geo::FAMILY,
    &super::bitmaps::FAMILY,
    &super::hll::FAMILY,
];

thread_local! {
    /// The subscriber of the current run per side, keyed by `side_key` of the main
    /// connection.
    static SUBSCRIBERS: RefCell<HashMap<(u16, u16), RawClient>> = RefCell::new(HashMap::new());
}

fn with_subscriber<R>(
    main: &mut RawClient,
    f: impl FnOnce(&mut RawClient, &mut RawClient) -> R,
) -> R {
    let key = side_key(main);
    SUBSCRIBERS.with(|s| {
        let mut map = s.borrow_mut();
        let sub = map.entry(key).or_insert_with(|| {
            let everything = main.call(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
            assert_eq!(everything, Frame::Simple(b"OK".to_vec()), "CONFIG SET");
            let mut sub = RawClient::connect(key.1);
            let reply = sub.call(&["PSUBSCRIBE", "__key*__:*"]);
            assert!(
                matches!(reply, Frame::Array(_)),
                "PSUBSCRIBE: {}",
                fmt_frame(&reply)
            );
            sub
        });
        f(sub, main)
    })
}

/// The notifications received before the reply to a PING sent now, as `channel message`
/// (`expired` ones left out, see above).
fn drain(sub: &mut RawClient) -> Result<Vec<String>, String> {
    let expired = Frame::Bulk(b"expired".to_vec());
    let mut got = Vec::new();
    for f in frames_before_pong(sub)? {
        match &f {
            Frame::Array(v) if v.len() == 4 => {
                let channel = fmt_frame(&v[2]);
                if v[3] != expired && !channel.ends_with("__:expired\"") {
                    got.push(format!("{channel} {}", fmt_frame(&v[3])));
                }
            }
            other => got.push(fmt_frame(other)),
        }
    }
    Ok(got)
}

fn sorted_reply(f: &Frame) -> String {
    match f {
        Frame::Array(items) | Frame::Set(items) => {
            let mut v: Vec<String> = items.iter().map(fmt_frame).collect();
            v.sort();
            format!("[{}]", v.join(", "))
        }
        other => fmt_frame(other),
    }
}

/// Runs one operation on one server; returns what to compare.
fn run_side(args: &[Vec<u8>], main: &mut RawClient) -> Result<Vec<String>, String> {
    with_subscriber(main, |sub, main| {
        let mode = String::from_utf8_lossy(&args[0]).into_owned();
        let argv: Vec<&[u8]> = args[1..].iter().map(|a| a.as_slice()).collect();
        let reply = main.call(&argv);
        if std::env::var("DIFF_TRACE").is_ok() {
            let shown: Vec<String> = argv
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            eprintln!("[notif] {} -> {}", shown.join(" "), fmt_frame(&reply));
        }
        let mut out = vec![match mode.as_str() {
            "~" => sorted_reply(&reply),
            "?" => "(reply not compared)".to_string(),
            _ => fmt_frame(&reply),
        }];
        let mut events = drain(sub)?;
        let sort =
            argv[0].eq_ignore_ascii_case(b"SORT") || argv[0].eq_ignore_ascii_case(b"SORT_RO");
        if mode == "~" || sort {
            // Lookups made in a set's own order (SORT ... BY over a set):
            // the same events, in an order Redis leaves to its hash table.
            events.sort();
        }
        out.extend(events);
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

fn op(mode: &str, args: Vec<Vec<u8>>) -> Cmd {
    let mut all = vec![mode.as_bytes().to_vec()];
    all.extend(args);
    Cmd {
        args: all,
        cmp: Cmp::Custom(check),
        mutable: false,
    }
}

/// A random `notify-keyspace-events` value.
fn flags(rng: &mut StdRng) -> String {
    let mut f = String::from(*pick(rng, &["K", "E", "KE"]));
    if chance(rng, 0.4) {
        f.push('A');
    } else {
        for c in "g$lshzxetd".chars() {
            if chance(rng, 0.5) {
                f.push(c);
            }
        }
    }
    for c in ['m', 'n'] {
        if chance(rng, 0.3) {
            f.push(c);
        }
    }
    f
}

/// Whether `arg` is a number whose exponent is large enough to overflow or
/// underflow a double.
fn overflows(arg: &[u8]) -> bool {
    let text = String::from_utf8_lossy(arg).to_ascii_lowercase();
    // An integer past 64 bits (a SCAN cursor, a count) sets ERANGE too.
    let digits = text.trim_start_matches(['+', '-']);
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && text.parse::<i64>().is_err()
    {
        return true;
    }
    text.split_once('e').is_some_and(|(_, exp)| {
        exp.trim_start_matches(['+', '-'])
            .parse::<u32>()
            .is_ok_and(|e| e >= 300)
    })
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    if chance(rng, 0.02) {
        let f = flags(rng);
        return op(
            "=",
            ["CONFIG", "SET", "notify-keyspace-events", f.as_str()]
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect(),
        );
    }
    loop {
        let source = pick(rng, SOURCES);
        let c = (source.gen)(rng, ctx);
        // DBSIZE counts expired keys not yet deleted: it depends on when
        // each server's active expiry last ran.
        if c.args
            .first()
            .is_some_and(|a| a.eq_ignore_ascii_case(b"DBSIZE"))
        {
            continue;
        }
        // A number that overflows leaves errno at ERANGE in redis-server,
        // and its SORT reads a stale errno as a conversion error later (a
        // Redis quirk that depends on the whole command history).
        if c.args.iter().any(|a| overflows(a)) {
            continue;
        }
        let mode = match c.cmp {
            Cmp::Exact => "=",
            Cmp::Unordered => "~",
            Cmp::Approx(_) => "?",
            _ => continue,
        };
        return op(mode, c.args);
    }
}
