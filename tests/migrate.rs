//! MIGRATE: keys of every type moved to redis-server and to Tessera (and, with
//! TESSERA_TEST_TARGET=redis, from redis-server), every option and error reply as Redis words
//! it, the cached connections, and what the move propagates (the same stream as redis-server's).

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::dataset::*;
use common::effects::{self, EffectsReader, EFFECTS_ARGS, REDIS_SYNC_ARGS};
use common::{bulk, error, free_port, simple, Frame, RawClient, ServerKind, TestServer};

fn port_of(s: &TestServer) -> String {
    s.port().to_string()
}

/// The keys of the selected database, sorted.
fn keys(c: &mut RawClient) -> Vec<String> {
    let mut k: Vec<String> = match c.call(&["KEYS", "*"]) {
        Frame::Array(items) => items.iter().map(text).collect(),
        other => panic!("KEYS: {other:?}"),
    };
    k.sort();
    k
}

#[test]
fn every_type_moves_to_redis_and_to_tessera() {
    for dest_kind in [ServerKind::Redis, ServerKind::Tessera] {
        let src = TestServer::start();
        let dst = TestServer::start_kind(dest_kind, &[]);
        let mut c = src.raw();
        populate(&mut c, 7);
        let before = describe(&mut c);
        let dport = port_of(&dst);
        for db in 0..3 {
            let dbs = db.to_string();
            assert_eq!(c.call(&["SELECT", &dbs]), simple("OK"));
            let names = keys(&mut c);
            assert!(!names.is_empty());
            if db == 2 {
                // One at a time in the classic form.
                for k in &names {
                    let reply = c.call(&["MIGRATE", "127.0.0.1", &dport, k, &dbs, "5000"]);
                    assert_eq!(reply, simple("OK"), "MIGRATE {k} to {}", dest_kind.name());
                }
            } else {
                let mut cmd = vec!["MIGRATE", "127.0.0.1", &dport, "", &dbs, "5000", "KEYS"];
                cmd.extend(names.iter().map(String::as_str));
                assert_eq!(
                    c.call(&cmd),
                    simple("OK"),
                    "MIGRATE KEYS to {}",
                    dest_kind.name()
                );
            }
            assert_eq!(keys(&mut c), Vec::<String>::new(), "source db {db} emptied");
        }
        let mut d = dst.raw();
        assert_same_data(
            &describe(&mut d),
            &before,
            &format!("on {}", dest_kind.name()),
        );
        // One connection, cached.
        assert_eq!(
            info_field(&mut c, "stats", "migrate_cached_sockets"),
            "1",
            "to {}",
            dest_kind.name()
        );
    }
}

#[test]
fn ttl_survives_and_copy_keeps_the_source() {
    let src = TestServer::start();
    let dst = TestServer::redis();
    let (mut c, mut d) = (src.raw(), dst.raw());
    let dport = port_of(&dst);
    c.call(&["SET", "ttl", "v", "PX", "100000"]);
    c.call(&["RPUSH", "list", "a", "b", "c"]);
    let reply = c.call(&["MIGRATE", "127.0.0.1", &dport, "ttl", "0", "5000", "COPY"]);
    assert_eq!(reply, simple("OK"));
    let pttl = int(&d.call(&["PTTL", "ttl"]));
    assert!((90_000..=100_000).contains(&pttl), "pttl {pttl}");
    assert_eq!(c.call(&["GET", "ttl"]), bulk("v"), "COPY keeps the key");
    // Already there: BUSYKEY from the target, nothing deleted here.
    let reply = c.call(&["MIGRATE", "127.0.0.1", &dport, "ttl", "0", "5000"]);
    assert_eq!(
        reply,
        error("ERR Target instance replied with error: BUSYKEY Target key name already exists.")
    );
    assert_eq!(c.call(&["EXISTS", "ttl"]), Frame::Integer(1));
    c.call(&["SET", "ttl", "newer"]);
    let reply = c.call(&[
        "MIGRATE",
        "127.0.0.1",
        &dport,
        "ttl",
        "0",
        "5000",
        "REPLACE",
    ]);
    assert_eq!(reply, simple("OK"));
    assert_eq!(d.call(&["GET", "ttl"]), bulk("newer"));
    assert_eq!(d.call(&["PTTL", "ttl"]), Frame::Integer(-1));
    assert_eq!(c.call(&["EXISTS", "ttl"]), Frame::Integer(0));
    // Another database of the target, then back: SELECT follows.
    let reply = c.call(&["MIGRATE", "127.0.0.1", &dport, "list", "5", "5000", "COPY"]);
    assert_eq!(reply, simple("OK"));
    let reply = c.call(&[
        "MIGRATE",
        "127.0.0.1",
        &dport,
        "list",
        "0",
        "9223372036854775807",
    ]);
    assert_eq!(reply, simple("OK"), "the longest timeout");
    assert_eq!(
        d.call(&["LRANGE", "list", "0", "-1"]),
        common::bulks(&["a", "b", "c"])
    );
    d.call(&["SELECT", "5"]);
    assert_eq!(d.call(&["LLEN", "list"]), Frame::Integer(3));
    // KEYS with a mix of present, missing and repeated keys: the
    // second copy of `a` is refused (it is there by then).
    c.call(&["SET", "a", "1"]);
    c.call(&["SET", "b", "2"]);
    let reply = c.call(&[
        "MIGRATE",
        "127.0.0.1",
        &dport,
        "",
        "0",
        "5000",
        "KEYS",
        "a",
        "nope",
        "b",
        "a",
    ]);
    assert_eq!(
        reply,
        error("ERR Target instance replied with error: BUSYKEY Target key name already exists.")
    );
    assert_eq!(c.call(&["EXISTS", "a", "b"]), Frame::Integer(0));
    d.call(&["SELECT", "0"]);
    assert_eq!(d.call(&["MGET", "a", "b"]), common::bulks(&["1", "2"]));
}

#[test]
fn replies_and_errors_match_redis() {
    let src = TestServer::start();
    let dst = TestServer::start();
    let mut c = src.raw();
    let dport = port_of(&dst);
    c.call(&["SET", "k", "v"]);
    let cases: Vec<(Vec<&str>, Frame)> = vec![
        (
            vec!["MIGRATE", "127.0.0.1", &dport, "missing", "0", "1000"],
            simple("NOKEY"),
        ),
        (
            vec!["MIGRATE", "127.0.0.1", &dport, "", "0", "1000", "KEYS"],
            simple("NOKEY"),
        ),
        (
            vec!["MIGRATE", "127.0.0.1", &dport, "k", "0", "1000", "KEYS", "k"],
            error("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"),
        ),
        (
            vec!["MIGRATE", "127.0.0.1", &dport, "k", "0", "1000", "FOO"],
            error("ERR syntax error"),
        ),
        (
            vec!["MIGRATE", "127.0.0.1", &dport, "k", "0", "1000", "AUTH"],
            error("ERR syntax error"),
        ),
        (
            vec!["MIGRATE", "127.0.0.1", &dport, "k", "0", "1000", "AUTH2", "u"],
            error("ERR syntax error"),
        ),
        (
            vec!["MIGRATE", "127.0.0.1", &dport, "k", "0", "soon"],
            error("ERR value is not an integer or out of range"),
        ),
        (
            vec!["MIGRATE", "127.0.0.1", &dport, "k", "db", "1000"],
            error("ERR value is not an integer or out of range"),
        ),
        (
            vec!["MIGRATE", "127.0.0.1", &dport, "k", "0"],
            error("ERR wrong number of arguments for 'migrate' command"),
        ),
        (
            vec!["MIGRATE", "127.0.0.1", &dport, "k", "99", "1000", "COPY"],
            error("ERR Target instance replied with error: ERR DB index is out of range"),
        ),
    ];
    for (cmd, want) in &cases {
        assert_eq!(&c.call(cmd), want, "{cmd:?}");
    }
    assert_eq!(c.call(&["GET", "k"]), bulk("v"));
    // Nobody listening: Redis connects without blocking and sees the refusal
    // when it writes; a name that does not resolve (here the empty one, which
    // needs no DNS) fails to connect.
    let closed = free_port().to_string();
    for port in [closed.as_str(), "notaport", "0", "70000"] {
        let reply = c.call(&["MIGRATE", "127.0.0.1", port, "k", "0", "1000"]);
        assert_eq!(
            reply,
            error("IOERR error or timeout writing to target instance"),
            "port {port}"
        );
    }
    let reply = c.call(&["MIGRATE", "", "6379", "k", "0", "1000"]);
    assert_eq!(
        reply,
        error("IOERR error or timeout connecting to the client")
    );
    assert_eq!(c.call(&["GET", "k"]), bulk("v"));
    // COMMAND GETKEYS finds the keys as Redis does.
    assert_eq!(
        c.call(&[
            "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "AUTH", "keys", "KEYS", "a",
            "b"
        ]),
        common::bulks(&["a", "b"])
    );
    assert_eq!(
        c.call(&["COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5", "COPY"]),
        common::bulks(&["k"])
    );
    assert_eq!(
        c.call(&["COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5", "KEYS", "a"]),
        error("ERR Invalid arguments specified for command")
    );
}

#[test]
fn a_silent_target_times_out_and_nothing_is_lost() {
    let src = TestServer::start();
    let mut c = src.raw();
    c.call(&["SET", "k", "v"]);
    // Accepts, reads, never answers.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port().to_string();
    let sink = std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
            }
        }
    });
    let started = Instant::now();
    let reply = c.call(&["MIGRATE", "127.0.0.1", &port, "k", "0", "300"]);
    assert_eq!(
        reply,
        error("IOERR error or timeout reading to target instance")
    );
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(c.call(&["GET", "k"]), bulk("v"));
    // The broken link is not kept.
    assert_eq!(info_field(&mut c, "stats", "migrate_cached_sockets"), "0");
    drop(c);
    drop(src);
    let _ = sink.join();
}

/// MIGRATE of `key` to database 0 of the server at `port`, with `extra` options.
fn migrate(c: &mut RawClient, port: &str, key: &str, extra: &[&str]) -> Frame {
    let mut cmd = vec!["MIGRATE", "127.0.0.1", port, key, "0", "5000"];
    cmd.extend_from_slice(extra);
    c.call(&cmd)
}

#[test]
fn auth_and_auth2_reach_a_protected_target() {
    let src = TestServer::start();
    let mut c = src.raw();
    for kind in [ServerKind::Redis, ServerKind::Tessera] {
        let dst = TestServer::start_kind(kind, &["--requirepass", "s3cret"]);
        let dport = port_of(&dst);
        c.call(&["SET", "k", "v"]);
        let reply = migrate(&mut c, &dport, "k", &[]);
        assert_eq!(
            reply,
            error("ERR Target instance replied with error: NOAUTH Authentication required."),
            "{}",
            kind.name()
        );
        let reply = migrate(&mut c, &dport, "k", &["AUTH", "wrong"]);
        assert_eq!(
            reply,
            error("ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled."),
            "{}",
            kind.name()
        );
        assert_eq!(c.call(&["EXISTS", "k"]), Frame::Integer(1));
        let reply = migrate(&mut c, &dport, "k", &["AUTH", "s3cret"]);
        assert_eq!(reply, simple("OK"), "{}", kind.name());
        c.call(&["SET", "k2", "v2"]);
        let reply = migrate(&mut c, &dport, "k2", &["AUTH2", "default", "s3cret"]);
        assert_eq!(reply, simple("OK"), "{}", kind.name());
        let mut d = dst.raw();
        d.call(&["AUTH", "s3cret"]);
        assert_eq!(d.call(&["MGET", "k", "k2"]), common::bulks(&["v", "v2"]));
        // The passwords are hidden from SLOWLOG, as Redis hides them.
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        c.call(&["SET", "k3", "v3"]);
        migrate(&mut c, &dport, "k3", &["AUTH", "s3cret"]);
        let log = common::fmt_frame(&c.call(&["SLOWLOG", "GET", "2"]));
        assert!(!log.contains("s3cret"), "{log}");
        assert!(log.contains("redacted"), "{log}");
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "10000"]);
        c.call(&["SLOWLOG", "RESET"]);
    }
}

#[test]
fn a_cached_link_the_target_dropped_is_reopened() {
    let src = TestServer::start();
    let dst = TestServer::start();
    let (mut c, mut d) = (src.raw(), dst.raw());
    let dport = port_of(&dst);
    c.call(&["SET", "a", "1"]);
    c.call(&["SET", "b", "2"]);
    assert_eq!(
        c.call(&["MIGRATE", "127.0.0.1", &dport, "a", "0", "5000"]),
        simple("OK")
    );
    assert_eq!(info_field(&mut c, "stats", "migrate_cached_sockets"), "1");
    // The target drops every other client (the cached link among them).
    d.call(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
    assert_eq!(
        c.call(&["MIGRATE", "127.0.0.1", &dport, "b", "0", "5000"]),
        simple("OK")
    );
    assert_eq!(d.call(&["MGET", "a", "b"]), common::bulks(&["1", "2"]));
}

#[test]
fn a_move_propagates_as_del_like_redis() {
    let dst = TestServer::redis();
    let dport = port_of(&dst);
    let mut redis_args = REDIS_SYNC_ARGS.to_vec();
    redis_args.extend_from_slice(EFFECTS_ARGS);
    let sources = [
        TestServer::redis_with(&redis_args),
        TestServer::start_with(EFFECTS_ARGS),
    ];
    let mut streams = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        let mut effects = EffectsReader::attach(src);
        let mut c = src.raw();
        let db = (i + 1).to_string();
        for cmd in [
            vec!["SELECT", "3"],
            vec!["SET", "a", "1"],
            vec!["SET", "b", "2"],
            vec!["SET", "c", "3"],
        ] {
            c.call(&cmd);
        }
        let mark = effects.mark(&mut c);
        effects.until_mark(&mark);
        let steps: Vec<Vec<&str>> = vec![
            vec!["MIGRATE", "127.0.0.1", &dport, "a", &db, "5000", "COPY"],
            vec!["MIGRATE", "127.0.0.1", &dport, "a", &db, "5000", "REPLACE"],
            vec![
                "MIGRATE",
                "127.0.0.1",
                &dport,
                "",
                &db,
                "5000",
                "REPLACE",
                "KEYS",
                "b",
                "x",
                "c",
            ],
            vec!["MIGRATE", "127.0.0.1", &dport, "a", &db, "5000"],
        ];
        let replies: Vec<Frame> = steps.iter().map(|s| c.call(s)).collect();
        assert_eq!(
            replies,
            vec![simple("OK"), simple("OK"), simple("OK"), simple("NOKEY")],
            "{}",
            src.kind().name()
        );
        let mark = effects.mark(&mut c);
        streams.push(effects.until_mark(&mark));
    }
    effects::compare(&streams[0], &streams[1], 0).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        streams[1]
            .iter()
            .any(|cmd| cmd.first().map(|c| c.as_slice()) == Some(b"DEL".as_slice())),
        "{:?}",
        streams[1]
    );
}

#[test]
fn a_key_written_while_in_flight_is_kept() {
    if common::target_is_redis() {
        return; // redis-server serves nobody else during a MIGRATE
    }
    let src = TestServer::start();
    // Two connections in a row land on different workers (round-robin), so
    // `c` is served while `mover`'s worker waits for the target.
    let mut c = src.raw();
    let mut mover = src.raw();
    c.call(&["SET", "k", "old"]);
    // A target that takes the request, waits for the test's go, then accepts
    // the SELECT and the RESTORE.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port().to_string();
    let (got_tx, got_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let target = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("RESTORE") {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        let _ = got_tx.send(());
        let _ = go_rx.recv_timeout(Duration::from_secs(30));
        let _ = std::io::Write::write_all(&mut s, b"+OK\r\n+OK\r\n");
        std::thread::sleep(Duration::from_millis(500));
    });
    mover.send(&["MIGRATE", "127.0.0.1", &port, "k", "0", "20000"]);
    got_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("request reached the target");
    c.call(&["SET", "k", "newer"]);
    go_tx.send(()).expect("go");
    assert_eq!(mover.read_frame(), simple("OK"));
    assert_eq!(
        c.call(&["GET", "k"]),
        bulk("newer"),
        "the later write survives"
    );
    let _ = target.join();
}
