//! The command table against redis-server 7.0: for every command and subcommand Tessera lists,
//! COMMAND INFO must equal Redis's reply frame for frame, in RESP2 and RESP3, and COMMAND DOCS
//! must too except for the `summary` text (Tessera words its own). COMMAND GETKEYS must extract
//! the same keys (or fail the same way), and plain COMMAND must describe the same commands.
//!
//! What cannot be equal is left out, and only that:
//! * Redis lists a container's subcommands (and plain COMMAND its commands) in hash-table order,
//!   which changes from run to run, so those lists are compared as sets, by name.
//! * Redis has subcommands Tessera does not implement (CLIENT TRACKING, MEMORY PURGE, ...); a
//!   container's list is compared on the subcommands Tessera has.
//! * CLIENT NO-TOUCH is a Redis 7.2 subcommand that 7.0 lacks; it is checked against the 7.2
//!   metadata written out below.

mod common;

use std::collections::BTreeMap;

use common::{bulk, fmt_frame, simple, Frame, RawClient, TestServer};

/// Subcommands Tessera has from releases after 7.0, with no 7.0 counterpart to compare with.
const NEWER: &[&str] = &["client|no-touch"];

struct Servers {
    _tessera: TestServer,
    _redis: TestServer,
    t: RawClient,
    r: RawClient,
}

fn servers(resp3: bool) -> Servers {
    let tessera = TestServer::start();
    let redis = TestServer::redis();
    let mut t = tessera.raw();
    let mut r = redis.raw();
    if resp3 {
        for c in [&mut t, &mut r] {
            match c.call(&["HELLO", "3"]) {
                Frame::Map(_) => {}
                other => panic!("HELLO 3 answered {}", fmt_frame(&other)),
            }
        }
    }
    Servers {
        _tessera: tessera,
        _redis: redis,
        t,
        r,
    }
}

fn text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("expected a string, got {}", fmt_frame(other)),
    }
}

/// Tessera's COMMAND LIST.
fn command_list(c: &mut RawClient) -> Vec<String> {
    match c.call(&["COMMAND", "LIST"]) {
        Frame::Array(items) | Frame::Set(items) => items.iter().map(text).collect(),
        other => panic!("COMMAND LIST answered {}", fmt_frame(&other)),
    }
}

/// The items of an array or set frame.
fn items(f: &Frame) -> &[Frame] {
    match f {
        Frame::Array(v) | Frame::Set(v) => v,
        other => panic!("expected an array or set, got {}", fmt_frame(other)),
    }
}

/// Key/value pairs of a map: a RESP3 map, or a RESP2 flat array.
fn pairs(f: &Frame) -> Vec<(Frame, Frame)> {
    match f {
        Frame::Map(p) => p.clone(),
        Frame::Array(v) => {
            assert!(v.len() % 2 == 0, "odd-length map array {}", fmt_frame(f));
            v.chunks(2)
                .map(|kv| (kv[0].clone(), kv[1].clone()))
                .collect()
        }
        other => panic!("expected a map, got {}", fmt_frame(other)),
    }
}

/// Compares one COMMAND INFO entry; `what` names it in messages. The subcommand list (the tenth
/// field) is compared by name; Redis-only subcommands are skipped, Tessera-only ones fail.
fn compare_info(what: &str, t: &Frame, r: &Frame, errors: &mut Vec<String>) {
    let (Frame::Array(tv), Frame::Array(rv)) = (t, r) else {
        if t != r {
            errors.push(format!(
                "{what}:\n  tessera: {}\n  redis:   {}",
                fmt_frame(t),
                fmt_frame(r)
            ));
        }
        return;
    };
    if tv.len() != 10 || rv.len() != 10 || tv[..9] != rv[..9] {
        errors.push(format!(
            "{what}:\n  tessera: {}\n  redis:   {}",
            fmt_frame(t),
            fmt_frame(r)
        ));
        return;
    }
    // An empty subcommand list is an empty set, a non-empty one an array: the frame types
    // must agree when both sides are empty or both are not.
    let (ts, rs) = (&tv[9], &rv[9]);
    let (ti, ri) = (items(ts), items(rs));
    if ti.is_empty() || ri.is_empty() {
        if ti.is_empty() && ri.is_empty() && ts != rs {
            errors.push(format!(
                "{what} subcommands:\n  tessera: {}\n  redis:   {}",
                fmt_frame(ts),
                fmt_frame(rs)
            ));
        }
        if ri.is_empty() && !ti.is_empty() {
            errors.push(format!("{what}: Tessera has subcommands, Redis none"));
        }
        if ti.is_empty() && !ri.is_empty() {
            errors.push(format!("{what}: Redis has subcommands, Tessera none"));
        }
        return;
    }
    if std::mem::discriminant(ts) != std::mem::discriminant(rs) {
        errors.push(format!("{what}: subcommand list frame types differ"));
    }
    let by_name: BTreeMap<String, &Frame> = ri.iter().map(|e| (text(&items(e)[0]), e)).collect();
    for e in ti {
        let name = text(&items(e)[0]);
        if NEWER.contains(&name.as_str()) {
            continue;
        }
        match by_name.get(&name) {
            Some(re) => compare_info(&name, e, re, errors),
            None => errors.push(format!("{what}: Redis has no subcommand {name}")),
        }
    }
}

/// Compares one command's COMMAND DOCS fields: same keys in the same order, same values, except
/// that `summary` only has to be a non-empty string and `subcommands` is compared by name.
fn compare_docs(what: &str, t: &Frame, r: &Frame, errors: &mut Vec<String>) {
    if std::mem::discriminant(t) != std::mem::discriminant(r) {
        errors.push(format!(
            "{what} docs frame types differ:\n  tessera: {}\n  redis:   {}",
            fmt_frame(t),
            fmt_frame(r)
        ));
        return;
    }
    let (tp, rp) = (pairs(t), pairs(r));
    let tk: Vec<String> = tp.iter().map(|(k, _)| text(k)).collect();
    let rk: Vec<String> = rp.iter().map(|(k, _)| text(k)).collect();
    if tk != rk {
        errors.push(format!(
            "{what} docs fields:\n  tessera: {tk:?}\n  redis:   {rk:?}\n  tessera: {}\n  redis:   {}",
            fmt_frame(t),
            fmt_frame(r)
        ));
        return;
    }
    for ((k, tv), (_, rv)) in tp.iter().zip(&rp) {
        match text(k).as_str() {
            "summary" => match tv {
                Frame::Bulk(s) if !s.is_empty() => {}
                other => errors.push(format!("{what} summary: {}", fmt_frame(other))),
            },
            "subcommands" => {
                if std::mem::discriminant(tv) != std::mem::discriminant(rv) {
                    errors.push(format!("{what}: subcommand docs frame types differ"));
                    continue;
                }
                let rs: BTreeMap<String, Frame> =
                    pairs(rv).into_iter().map(|(k, v)| (text(&k), v)).collect();
                for (name, tdoc) in pairs(tv) {
                    let name = text(&name);
                    if NEWER.contains(&name.as_str()) {
                        continue;
                    }
                    match rs.get(&name) {
                        Some(rdoc) => compare_docs(&name, &tdoc, rdoc, errors),
                        None => errors.push(format!("{what}: Redis has no subcommand {name}")),
                    }
                }
            }
            field => {
                if tv != rv {
                    errors.push(format!(
                        "{what} docs `{field}`:\n  tessera: {}\n  redis:   {}",
                        fmt_frame(tv),
                        fmt_frame(rv)
                    ));
                }
            }
        }
    }
}

/// The single (name, docs) pair of a `COMMAND DOCS <name>` reply.
fn single_doc(f: &Frame) -> Option<(String, Frame)> {
    let p = pairs(f);
    match p.as_slice() {
        [] => None,
        [(k, v)] => Some((text(k), v.clone())),
        _ => panic!("COMMAND DOCS of one name answered {}", fmt_frame(f)),
    }
}

fn check_info_and_docs(resp3: bool) {
    let mut s = servers(resp3);
    let names = command_list(&mut s.t);
    assert!(names.len() > 50, "COMMAND LIST: {names:?}");
    let mut errors = Vec::new();
    for name in &names {
        if NEWER.contains(&name.as_str()) {
            continue;
        }
        let t = s.t.call(&["COMMAND", "INFO", name]);
        let r = s.r.call(&["COMMAND", "INFO", name]);
        match (&t, &r) {
            (Frame::Array(tv), Frame::Array(rv)) if tv.len() == 1 && rv.len() == 1 => {
                compare_info(name, &tv[0], &rv[0], &mut errors)
            }
            _ => errors.push(format!(
                "COMMAND INFO {name}:\n  tessera: {}\n  redis:   {}",
                fmt_frame(&t),
                fmt_frame(&r)
            )),
        }

        let t = s.t.call(&["COMMAND", "DOCS", name]);
        let r = s.r.call(&["COMMAND", "DOCS", name]);
        match (single_doc(&t), single_doc(&r)) {
            (Some((tn, td)), Some((rn, rd))) if tn == rn => {
                compare_docs(name, &td, &rd, &mut errors)
            }
            _ => errors.push(format!(
                "COMMAND DOCS {name}:\n  tessera: {}\n  redis:   {}",
                fmt_frame(&t),
                fmt_frame(&r)
            )),
        }
    }
    assert!(
        errors.is_empty(),
        "{} mismatch(es) ({}):\n{}",
        errors.len(),
        if resp3 { "RESP3" } else { "RESP2" },
        errors.join("\n")
    );
}

#[test]
fn command_info_and_docs_match_redis_resp2() {
    check_info_and_docs(false);
}

#[test]
fn command_info_and_docs_match_redis_resp3() {
    check_info_and_docs(true);
}

/// Plain COMMAND describes every command COMMAND LIST names (top-level ones) as COMMAND INFO does
/// in Redis, and COMMAND COUNT counts them.
#[test]
fn plain_command_matches_redis() {
    for resp3 in [false, true] {
        let mut s = servers(resp3);
        let t = s.t.call(&["COMMAND"]);
        let r = s.r.call(&["COMMAND"]);
        let rs: BTreeMap<String, &Frame> =
            items(&r).iter().map(|e| (text(&items(e)[0]), e)).collect();
        let mut errors = Vec::new();
        for e in items(&t) {
            let name = text(&items(e)[0]);
            match rs.get(&name) {
                Some(re) => compare_info(&name, e, re, &mut errors),
                None => errors.push(format!("Redis has no command {name}")),
            }
        }
        assert!(
            errors.is_empty(),
            "COMMAND (resp3={resp3}):\n{}",
            errors.join("\n")
        );

        let Frame::Integer(tc) = s.t.call(&["COMMAND", "COUNT"]) else {
            panic!("COMMAND COUNT")
        };
        let Frame::Integer(rc) = s.r.call(&["COMMAND", "COUNT"]) else {
            panic!("COMMAND COUNT")
        };
        assert_eq!(tc as usize, items(&t).len(), "COMMAND COUNT vs COMMAND");
        assert!(tc <= rc, "Tessera counts {tc} commands, Redis {rc}");
        let top = command_list(&mut s.t)
            .iter()
            .filter(|n| !n.contains('|'))
            .count();
        assert_eq!(
            top, tc as usize,
            "COMMAND LIST top-level names vs COMMAND COUNT"
        );
    }
}

/// COMMAND GETKEYS and GETKEYSANDFLAGS on representative invocations, and on a synthetic one per listed command
/// (its minimum arity's worth of arguments, and a few more for variadic commands).
#[test]
fn command_getkeys_matches_redis() {
    let mut s = servers(false);
    let mut cases: Vec<Vec<String>> = [
        "GET k",
        "SET k v",
        "SET k v NX GET EX 10",
        "MGET a b c",
        "MSET a 1 b 2 c 3",
        "MSET a 1 b",
        "MSETNX a 1 b 2",
        "GETEX k PERSIST",
        "GETDEL k",
        "LCS a b LEN",
        "DEL a b c",
        "UNLINK a b",
        "EXISTS a a b",
        "TOUCH a b",
        "RENAME a b",
        "RENAMENX a b",
        "COPY a b DB 1 REPLACE",
        "MOVE a 1",
        "EXPIRE k 10 NX",
        "PEXPIREAT k 10",
        "TTL k",
        "OBJECT ENCODING k",
        "OBJECT FREQ k",
        "MEMORY USAGE k SAMPLES 5",
        "PING",
        "KEYS *",
        "SCAN 0 MATCH *",
        "CLIENT LIST",
        "CONFIG GET maxmemory",
        "GET",
        "GET a b",
        "NOSUCHCOMMAND a",
        "OBJECT NOSUCH k",
    ]
    .iter()
    .map(|c| c.split(' ').map(str::to_string).collect())
    .collect();
    for name in command_list(&mut s.t) {
        if NEWER.contains(&name.as_str()) {
            continue;
        }
        let info = s.t.call(&["COMMAND", "INFO", &name]);
        let arity = match &items(&info)[0] {
            Frame::Array(e) => match e[1] {
                Frame::Integer(a) => a,
                _ => panic!("arity of {name}"),
            },
            other => panic!("COMMAND INFO {name}: {}", fmt_frame(other)),
        };
        let mut base: Vec<String> = name.split('|').map(str::to_string).collect();
        while (base.len() as i64) < arity.abs() {
            base.push(format!("k{}", base.len()));
        }
        cases.push(base.clone());
        if arity < 0 {
            for _ in 0..3 {
                base.push(format!("k{}", base.len()));
            }
            cases.push(base);
        }
    }
    cases.extend(
        [
            "SET k v GET",
            "BITFIELD k GET u8 0",
            "BITFIELD k OVERFLOW SAT GET u8 0",
            "BITFIELD k SET u8 0 1",
            "BITFIELD k nosuch",
            "SORT k BY x STORE d",
            "SORT k STORE x STORE y",
            "EVAL s 2 a b",
            "XREAD COUNT 2 STREAMS a b 0 0",
            "XREAD STREAMS a b 0",
            "XREAD STREAMS a b c 0 0",
            "XREAD FOO STREAMS a 0",
            "XREAD COUNT streams STREAMS a 0",
            "XREAD COUNT 1 BLOCK 2",
            "XREADGROUP GROUP g c STREAMS a b 0",
            "XREADGROUP GROUP streams c STREAMS a 0",
            "XREADGROUP GROUP g c COUNT 1 BLOCK 1",
            "GEORADIUS k 1 2 3 km STORE d",
            "ZUNIONSTORE d 2 a b",
            "LMOVE a b LEFT RIGHT",
        ]
        .iter()
        .map(|c| c.split(' ').map(str::to_string).collect()),
    );
    let mut errors = Vec::new();
    for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
        for case in &cases {
            let mut args = vec!["COMMAND".to_string(), sub.to_string()];
            args.extend(case.iter().cloned());
            let t = s.t.call(&args);
            let r = s.r.call(&args);
            if t != r {
                errors.push(format!(
                    "COMMAND {sub} {}:\n  tessera: {}\n  redis:   {}",
                    case.join(" "),
                    fmt_frame(&t),
                    fmt_frame(&r)
                ));
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// Unknown names, case, and several names in one call, in both protocols.
#[test]
fn lookups_match_redis() {
    for resp3 in [false, true] {
        let mut s = servers(resp3);
        let mut errors = Vec::new();
        for cmd in [
            "COMMAND INFO get nosuch",
            "COMMAND INFO nosuch",
            "COMMAND INFO config|nosuch",
            "COMMAND INFO nosuch|get",
            "COMMAND INFO GET Config|Get",
            "COMMAND INFO get|x",
            "COMMAND DOCS nosuch",
            "COMMAND DOCS config|nosuch",
            "COMMAND GETKEYS command",
            "COMMAND GETKEYS command count",
            "COMMAND GETKEYSANDFLAGS command",
            "COMMAND GETKEYSANDFLAGS set k v get",
            "COMMAND GETKEYSANDFLAGS lmove a b left right",
            "COMMAND GETKEYSANDFLAGS nosuch k",
        ] {
            let args: Vec<&str> = cmd.split(' ').collect();
            let t = s.t.call(&args);
            let r = s.r.call(&args);
            if t != r {
                errors.push(format!(
                    "{cmd} (resp3={resp3}):\n  tessera: {}\n  redis:   {}",
                    fmt_frame(&t),
                    fmt_frame(&r)
                ));
            }
        }
        assert!(errors.is_empty(), "{}", errors.join("\n"));
    }
}

/// CLIENT NO-TOUCH (Redis 7.2) reports 7.2's metadata.
#[test]
fn client_no_touch_metadata() {
    let t = TestServer::start();
    if t.is_redis() {
        return; // redis-server 7.0 has no CLIENT NO-TOUCH
    }
    let mut c = t.raw();
    let info = c.call(&["COMMAND", "INFO", "client|no-touch"]);
    let expected = Frame::Array(vec![Frame::Array(vec![
        bulk("client|no-touch"),
        Frame::Integer(3),
        Frame::Array(vec![simple("noscript"), simple("loading"), simple("stale")]),
        Frame::Integer(0),
        Frame::Integer(0),
        Frame::Integer(0),
        Frame::Array(vec![simple("@slow"), simple("@connection")]),
        Frame::Array(vec![]),
        Frame::Array(vec![]),
        Frame::Array(vec![]),
    ])]);
    assert_eq!(info, expected, "{}", fmt_frame(&info));
    let docs = c.call(&["COMMAND", "DOCS", "client|no-touch"]);
    let (name, doc) = single_doc(&docs).expect("docs");
    assert_eq!(name, "client|no-touch");
    let fields: Vec<(String, Frame)> = pairs(&doc)
        .into_iter()
        .map(|(k, v)| (text(&k), v))
        .collect();
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        ["summary", "since", "group", "complexity", "arguments"]
    );
    assert_eq!(fields[1].1, bulk("7.2.0"));
    assert_eq!(fields[2].1, bulk("connection"));
    assert_eq!(fields[3].1, bulk("O(1)"));
    let token = |n: &str, t: &str| {
        Frame::Array(vec![
            bulk("name"),
            bulk(n),
            bulk("type"),
            bulk("pure-token"),
            bulk("token"),
            bulk(t),
        ])
    };
    assert_eq!(
        fields[4].1,
        Frame::Array(vec![Frame::Array(vec![
            bulk("name"),
            bulk("enabled"),
            bulk("type"),
            bulk("oneof"),
            bulk("arguments"),
            Frame::Array(vec![token("on", "ON"), token("off", "OFF")]),
        ])]),
        "{}",
        fmt_frame(&fields[4].1)
    );
}

/// `CommandSpec::key_uses`, what ACL's key permissions will read: each key with how the command
/// uses it, from the key specs or the command's own rule (SET's GET, BITFIELD's operations,
/// SORT's STORE).
#[test]
fn key_uses_say_how_each_key_is_used() {
    use tessera::commands::lookup;
    // (index, reads, writes, inserts, deletes) for each key of `args`.
    fn uses(args: &[&str]) -> Vec<(usize, bool, bool, bool, bool)> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let (_, spec) = lookup(args[0]).expect("a known command");
        spec.key_uses(&args)
            .expect("valid key arguments")
            .iter()
            .map(|u| (u.index, u.reads(), u.writes(), u.inserts(), u.deletes()))
            .collect()
    }
    assert_eq!(uses(&["get", "k"]), [(1, true, false, false, false)]);
    assert_eq!(uses(&["set", "k", "v"]), [(1, false, true, false, false)]);
    assert_eq!(
        uses(&["set", "k", "v", "GET"]),
        [(1, true, true, false, false)]
    );
    assert_eq!(
        uses(&["del", "a", "b"]),
        [(1, false, true, false, true), (2, false, true, false, true)]
    );
    assert_eq!(
        uses(&["lmove", "src", "dst", "LEFT", "RIGHT"]),
        [(1, true, true, false, true), (2, false, true, true, false)]
    );
    assert_eq!(
        uses(&["bitfield", "k", "GET", "u8", "0"]),
        [(1, true, false, false, false)]
    );
    assert_eq!(
        uses(&["bitfield", "k", "SET", "u8", "0", "1"]),
        [(1, true, true, false, false)]
    );
    assert_eq!(
        uses(&["sort", "src", "STORE", "dst"]),
        [
            (1, true, false, false, false),
            (3, false, true, false, false)
        ]
    );
}
