//! Client-side caching: CLIENT TRACKING (default, BCAST, PREFIX, OPTIN, OPTOUT, NOLOOP,
//! REDIRECT), CLIENT CACHING, CLIENT GETREDIR, CLIENT TRACKINGINFO and the invalidation messages.
//! Expected values are what redis-server 7.0 replies.

mod common;

use common::{bulk, error, fmt_frame, simple, Frame, RawClient, TestServer};

fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

fn invalidate(keys: &[&str]) -> Frame {
    Frame::Push(vec![
        bulk("invalidate"),
        Frame::Array(keys.iter().map(bulk).collect()),
    ])
}

/// A connection's CLIENT ID, as REDIRECT takes it.
fn client_id(c: &mut RawClient) -> String {
    match c.call(&["CLIENT", "ID"]) {
        Frame::Integer(id) => id.to_string(),
        other => panic!("CLIENT ID: {}", fmt_frame(&other)),
    }
}

fn resp3(s: &TestServer) -> RawClient {
    let mut c = s.raw();
    assert!(matches!(c.call(&["HELLO", "3"]), Frame::Map(_)));
    c
}

#[test]
fn option_errors() {
    let s = TestServer::start();
    let mut a = resp3(&s);
    let cases: &[(&[&str], &str)] = &[
        (&["PREFIX", "x"], "ERR PREFIX option requires BCAST mode to be enabled"),
        (&["REDIRECT", "99999"], "ERR The client ID you want redirect to does not exist"),
        (&["OPTIN", "OPTOUT"], "ERR You can't specify both OPTIN mode and OPTOUT mode"),
        (&["BCAST", "OPTIN"], "ERR OPTIN and OPTOUT are not compatible with BCAST"),
        (&["FOO"], "ERR syntax error"),
        (&["BCAST", "PREFIX", "ab", "PREFIX", "a"], "ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap."),
    ];
    for (opts, err) in cases {
        let mut args = vec!["CLIENT", "TRACKING", "ON"];
        args.extend_from_slice(opts);
        assert_eq!(a.call(&args), error(err), "{opts:?}");
    }
    assert_eq!(
        a.call(&["CLIENT", "TRACKING", "FOO"]),
        error("ERR syntax error")
    );
    assert_eq!(
        a.call(&["CLIENT", "CACHING", "YES"]),
        error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
    );
    assert_eq!(a.call(&["CLIENT", "GETREDIR"]), int(-1));
    assert_eq!(
        a.call(&["CLIENT", "TRACKINGINFO"]),
        Frame::Map(vec![
            (bulk("flags"), Frame::Set(vec![bulk("off")])),
            (bulk("redirect"), int(-1)),
            (bulk("prefixes"), Frame::Array(vec![])),
        ])
    );
    a.call(&["CLIENT", "TRACKING", "ON"]);
    assert_eq!(
        a.call(&["CLIENT", "CACHING", "YES"]),
        error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    );
    assert_eq!(
        a.call(&["CLIENT", "TRACKING", "ON", "BCAST"]),
        error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
    );
}

#[test]
fn default_mode_invalidates_once_per_read() {
    let s = TestServer::start();
    let mut a = resp3(&s);
    let mut b = s.raw();
    b.call(&["SET", "k", "v"]);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "ON"]), simple("OK"));
    assert_eq!(a.call(&["CLIENT", "GETREDIR"]), int(0));
    assert_eq!(a.call(&["GET", "k"]), bulk("v"));
    b.call(&["SET", "k", "1"]);
    assert_eq!(a.read_frame(), invalidate(&["k"]));
    // Not read again: no second message.
    b.call(&["SET", "k", "2"]);
    assert_eq!(a.call(&["PING"]), simple("PONG"));
    // Own writes invalidate after the reply.
    a.call(&["GET", "k"]);
    assert_eq!(a.call(&["SET", "k", "3"]), simple("OK"));
    assert_eq!(a.read_frame(), invalidate(&["k"]));
    // FLUSHALL invalidates everything with a null.
    a.call(&["GET", "k"]);
    b.call(&["FLUSHALL"]);
    assert_eq!(
        a.read_frame(),
        Frame::Push(vec![bulk("invalidate"), Frame::Null])
    );
}

#[test]
fn bcast_prefixes_and_noloop() {
    let s = TestServer::start();
    let mut a = resp3(&s);
    let mut b = s.raw();
    assert_eq!(
        a.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "cd", "NOLOOP"]),
        simple("OK")
    );
    assert_eq!(
        a.call(&["CLIENT", "TRACKINGINFO"]),
        Frame::Map(vec![
            (
                bulk("flags"),
                Frame::Set(vec![bulk("on"), bulk("bcast"), bulk("noloop")])
            ),
            (bulk("redirect"), int(0)),
            (bulk("prefixes"), Frame::Array(vec![bulk("ab"), bulk("cd")])),
        ])
    );
    b.call(&["MSET", "abc", "1", "cdx", "2", "zz", "3"]);
    let mut got = vec![a.read_frame(), a.read_frame()];
    got.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(got, vec![invalidate(&["abc"]), invalidate(&["cdx"])]);
    // NOLOOP: its own writes are not announced.
    assert_eq!(a.call(&["SET", "ab1", "1"]), simple("OK"));
    assert_eq!(a.call(&["PING"]), simple("PONG"));
}

#[test]
fn redirect_to_a_resp2_subscriber() {
    let s = TestServer::start();
    let mut target = s.raw();
    let Frame::Integer(tid) = target.call(&["CLIENT", "ID"]) else {
        panic!("CLIENT ID")
    };
    target.send(&["SUBSCRIBE", "__redis__:invalidate"]);
    target.read_frame();
    let mut d = s.raw();
    let tid = tid.to_string();
    assert_eq!(
        d.call(&["CLIENT", "TRACKING", "ON", "REDIRECT", &tid]),
        simple("OK")
    );
    assert_eq!(
        d.call(&["CLIENT", "GETREDIR"]),
        Frame::Integer(tid.parse().unwrap_or(0))
    );
    d.call(&["GET", "q"]);
    let mut b = s.raw();
    b.call(&["SET", "q", "1"]);
    assert_eq!(
        target.read_frame(),
        Frame::Array(vec![
            bulk("message"),
            bulk("__redis__:invalidate"),
            Frame::Array(vec![bulk("q")]),
        ])
    );
    drop(target);
    let mut broken = false;
    for _ in 0..100 {
        // Redis notices a vanished target when it next tries to send.
        d.call(&["GET", "q"]);
        b.call(&["SET", "q", "2"]);
        if let Frame::Array(v) = d.call(&["CLIENT", "TRACKINGINFO"]) {
            if v.get(1) == Some(&Frame::Array(vec![bulk("on"), bulk("broken_redirect")])) {
                broken = true;
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(broken, "TRACKINGINFO never reported broken_redirect");
}

#[test]
fn optin_and_optout() {
    let s = TestServer::start();
    let mut e = resp3(&s);
    let mut b = s.raw();
    assert_eq!(e.call(&["CLIENT", "TRACKING", "ON", "OPTIN"]), simple("OK"));
    e.call(&["GET", "o1"]);
    assert_eq!(e.call(&["CLIENT", "CACHING", "YES"]), simple("OK"));
    e.call(&["GET", "o2"]);
    b.call(&["MSET", "o1", "1", "o2", "2"]);
    assert_eq!(e.read_frame(), invalidate(&["o2"]));
    assert_eq!(
        e.call(&["CLIENT", "CACHING", "NO"]),
        error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    );
    assert_eq!(e.call(&["CLIENT", "TRACKING", "OFF"]), simple("OK"));
    assert_eq!(
        e.call(&["CLIENT", "TRACKING", "ON", "OPTOUT"]),
        simple("OK")
    );
    e.call(&["CLIENT", "CACHING", "NO"]);
    e.call(&["GET", "p1"]);
    e.call(&["GET", "p2"]);
    b.call(&["MSET", "p1", "1", "p2", "2"]);
    assert_eq!(e.read_frame(), invalidate(&["p2"]));
}

#[test]
fn client_caching_yes_lasts_through_multi() {
    let s = TestServer::start();
    let mut e = resp3(&s);
    let mut b = s.raw();
    e.call(&["CLIENT", "TRACKING", "ON", "OPTIN"]);
    e.call(&["CLIENT", "CACHING", "YES"]);
    e.call(&["MULTI"]);
    e.call(&["GET", "mk"]);
    assert!(matches!(e.call(&["EXEC"]), Frame::Array(_)));
    b.call(&["SET", "mk", "2"]);
    assert_eq!(e.read_frame(), invalidate(&["mk"]));
}

#[test]
fn tracking_table_max_keys_evicts_with_invalidations() {
    let s = TestServer::start();
    let mut admin = s.raw();
    assert_eq!(
        admin.call(&["CONFIG", "SET", "tracking-table-max-keys", "1"]),
        simple("OK")
    );
    let mut e = resp3(&s);
    e.call(&["CLIENT", "TRACKING", "ON"]);
    e.call(&["GET", "t1"]);
    e.call(&["GET", "t2"]);
    // One of the two keys is forgotten, and the client is told to drop it.
    match e.read_frame() {
        Frame::Push(v) => {
            assert_eq!(v[0], bulk("invalidate"));
            assert!(
                v[1] == Frame::Array(vec![bulk("t1")]) || v[1] == Frame::Array(vec![bulk("t2")])
            );
        }
        other => panic!("expected an invalidation, got {other:?}"),
    }
}

/// CLIENT LIST shows `t` and `B` for a redirecting BCAST tracker; `R` only
/// once its redirect target is found gone, not merely for redirecting.
#[test]
fn client_list_tracking_flags() {
    let s = TestServer::start();
    let mut c = s.raw();
    let mut target = s.raw();
    let Frame::Integer(target_id) = target.call(&["CLIENT", "ID"]) else {
        panic!("CLIENT ID")
    };
    assert_eq!(
        c.call(&[
            "CLIENT",
            "TRACKING",
            "on",
            "REDIRECT",
            &target_id.to_string(),
            "BCAST"
        ]),
        simple("OK")
    );
    let Frame::Bulk(line) = c.call(&["CLIENT", "INFO"]) else {
        panic!("CLIENT INFO")
    };
    let line = String::from_utf8_lossy(&line).into_owned();
    assert!(line.contains(" flags=tB "), "{line}");
}

/// A script's reads make Redis remember the keys the script declared, not the keys it read;
/// EVAL_RO with no declared keys remembers nothing.
#[test]
fn scripts_track_their_declared_keys() {
    let s = TestServer::start();
    let mut c = resp3(&s);
    let mut writer = s.raw();
    assert_eq!(c.call(&["CLIENT", "TRACKING", "on"]), simple("OK"));
    c.call(&["EVAL", "return redis.call('get', 'read')", "1", "declared"]);
    writer.call(&["SET", "read", "1"]);
    writer.call(&["SET", "declared", "1"]);
    assert_eq!(c.read_frame(), invalidate(&["declared"]));
    c.call(&["EVAL_RO", "return redis.call('get', 'ro')", "0"]);
    writer.call(&["SET", "ro", "1"]);
    // Nothing for `ro`: the next thing the client gets is PING's reply.
    assert_eq!(c.call(&["PING"]), simple("PONG"));
}

/// BCAST without PREFIX registers the empty prefix, as in Redis: CLIENT
/// TRACKINGINFO lists it, and a later prefix overlaps it.
#[test]
fn bcast_without_prefix_registers_the_empty_prefix() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["CLIENT", "TRACKING", "ON", "BCAST"]),
        simple("OK")
    );
    assert_eq!(
        raw.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"]),
        error("ERR Prefix 'a' overlaps with an existing prefix ''. Prefixes for a single client must not overlap.")
    );
    let info = raw.call(&["CLIENT", "TRACKINGINFO"]);
    let Frame::Array(items) = info else {
        panic!("TRACKINGINFO answered {}", fmt_frame(&info));
    };
    assert_eq!(items[5], Frame::Array(vec![bulk("")]));
    assert_eq!(raw.call(&["CLIENT", "TRACKING", "OFF"]), simple("OK"));
    assert_eq!(
        raw.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"]),
        simple("OK")
    );
    assert_eq!(
        raw.call(&["CLIENT", "TRACKING", "ON", "BCAST"]),
        simple("OK")
    );
    let Frame::Array(items) = raw.call(&["CLIENT", "TRACKINGINFO"]) else {
        panic!("TRACKINGINFO is an array");
    };
    assert_eq!(items[5], Frame::Array(vec![bulk(""), bulk("a")]));
}

/// INFO counts (key, client) pairs as tracking_total_items and distinct
/// prefixes as tracking_total_prefixes; a prefix given twice overlaps
/// itself; CLIENT TRACKING ON checks its options in Redis's order.
#[test]
fn tracking_counters_and_option_checks() {
    let s = TestServer::start();
    let mut admin = s.raw();
    admin.call(&["MSET", "k1", "1", "k2", "2"]);
    let mut a = s.raw();
    let mut b = s.raw();
    for c in [&mut a, &mut b] {
        assert_eq!(c.call(&["CLIENT", "TRACKING", "ON"]), simple("OK"));
        c.call(&["GET", "k1"]);
    }
    a.call(&["GET", "k2"]);
    let mut x = s.raw();
    let mut y = s.raw();
    assert_eq!(
        x.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p", "PREFIX", "q"]),
        simple("OK")
    );
    assert_eq!(
        y.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p"]),
        simple("OK")
    );
    let info = match admin.call(&["INFO", "stats"]) {
        Frame::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("INFO answered {}", fmt_frame(&other)),
    };
    for want in [
        "tracking_total_keys:2",
        "tracking_total_items:3",
        "tracking_total_prefixes:2",
    ] {
        assert!(info.contains(want), "{want} in {info}");
    }
    assert_eq!(
        y.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p"]),
        error("ERR Prefix 'p' overlaps with an existing prefix 'p'. Prefixes for a single client must not overlap.")
    );
    let mut fresh = s.raw();
    assert_eq!(
        fresh.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "z", "PREFIX", "z"]),
        error("ERR Prefix 'z' overlaps with another provided prefix 'z'. Prefixes for a single client must not overlap.")
    );
    assert_eq!(
        fresh.call(&["CLIENT", "TRACKING", "ON", "BCAST", "OPTIN", "OPTOUT"]),
        error("ERR OPTIN and OPTOUT are not compatible with BCAST")
    );
    assert_eq!(
        fresh.call(&["CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT", "PREFIX", "a"]),
        error("ERR PREFIX option requires BCAST mode to be enabled")
    );
    assert_eq!(
        x.call(&["CLIENT", "TRACKING", "ON", "PREFIX", "r"]),
        error("ERR PREFIX option requires BCAST mode to be enabled")
    );
}

#[test]
fn read_keys_stay_tracked_after_tracking_stops() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let counters = |c: &mut RawClient| -> Vec<String> {
        let info = match c.call(&["INFO", "stats"]) {
            Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("INFO answered {}", fmt_frame(&other)),
        };
        info.lines()
            .filter(|l| {
                l.starts_with("tracking_total_keys:") || l.starts_with("tracking_total_items:")
            })
            .map(|l| l.trim().to_string())
            .collect()
    };
    let mut a = resp3(&s);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "ON"]), simple("OK"));
    a.call(&["GET", "k1"]);
    a.call(&["GET", "k2"]);
    a.call(&["GET", "k3"]);
    assert_eq!(a.call(&["CLIENT", "TRACKING", "OFF"]), simple("OK"));
    // Redis keeps the keys (and the client's id on them) until they change.
    assert_eq!(
        counters(&mut admin),
        ["tracking_total_keys:3", "tracking_total_items:3"]
    );
    // Tracking again: a key read before is still invalidated.
    assert_eq!(a.call(&["CLIENT", "TRACKING", "ON"]), simple("OK"));
    admin.call(&["SET", "k1", "x"]);
    assert_eq!(a.read_frame(), invalidate(&["k1"]));
    assert_eq!(
        counters(&mut admin),
        ["tracking_total_keys:2", "tracking_total_items:2"]
    );
    // Tracking again in BCAST mode: not told of keys read in default mode.
    assert_eq!(a.call(&["CLIENT", "TRACKING", "OFF"]), simple("OK"));
    assert_eq!(
        a.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "zz"]),
        simple("OK")
    );
    admin.call(&["SET", "k2", "x"]);
    assert_eq!(a.call(&["PING"]), simple("PONG"));
    assert_eq!(
        counters(&mut admin),
        ["tracking_total_keys:1", "tracking_total_items:1"]
    );
    // Gone: its keys leave the table when they change, with no message.
    drop(a);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(
        counters(&mut admin),
        ["tracking_total_keys:1", "tracking_total_items:1"]
    );
    admin.call(&["SET", "k3", "x"]);
    assert_eq!(
        counters(&mut admin),
        ["tracking_total_keys:0", "tracking_total_items:0"]
    );
    // FLUSHALL empties the table even with nobody tracking.
    let mut b = resp3(&s);
    b.call(&["CLIENT", "TRACKING", "ON"]);
    b.call(&["GET", "k4"]);
    b.call(&["CLIENT", "TRACKING", "OFF"]);
    assert_eq!(
        counters(&mut admin),
        ["tracking_total_keys:1", "tracking_total_items:1"]
    );
    admin.call(&["FLUSHALL"]);
    assert_eq!(
        counters(&mut admin),
        ["tracking_total_keys:0", "tracking_total_items:0"]
    );
}

#[test]
fn details_the_differential_found() {
    let s = TestServer::start();
    let mut admin = s.raw();
    // FLUSHALL's null is the tracking client's, not the receiver's: a RESP3 tracker
    // redirecting to a RESP2 subscriber sends it a RESP3 null, a RESP2 tracker a nil.
    let mut sub = s.raw();
    let id = client_id(&mut sub);
    sub.call(&["SUBSCRIBE", "__redis__:invalidate"]);
    let mut r3 = resp3(&s);
    assert_eq!(
        r3.call(&["CLIENT", "TRACKING", "ON", "REDIRECT", &id]),
        simple("OK")
    );
    let mut r2 = s.raw();
    assert_eq!(
        r2.call(&["CLIENT", "TRACKING", "ON", "REDIRECT", &id]),
        simple("OK")
    );
    admin.call(&["FLUSHALL"]);
    let message =
        |null: Frame| Frame::Array(vec![bulk("message"), bulk("__redis__:invalidate"), null]);
    assert_eq!(sub.read_frame(), message(Frame::Null));
    assert_eq!(sub.read_frame(), message(Frame::NullBulk));

    // BCAST lists the changed keys sorted, each once.
    let mut b = resp3(&s);
    b.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p:"]);
    admin.call(&["MSET", "p:b", "1", "p:a", "2", "p:b", "3", "x", "4"]);
    assert_eq!(b.read_frame(), invalidate(&["p:a", "p:b"]));

    // Turning tracking on again resets OPTIN/OPTOUT/NOLOOP to what the call says.
    let mut c = resp3(&s);
    c.call(&["CLIENT", "TRACKING", "ON", "OPTOUT"]);
    assert_eq!(c.call(&["CLIENT", "CACHING", "no"]), simple("OK"));
    c.call(&["CLIENT", "TRACKING", "ON"]);
    assert_eq!(
        c.call(&["CLIENT", "CACHING", "no"]),
        error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    );

    // An overlap with registered prefixes names the first of them in byte order.
    let mut d = resp3(&s);
    d.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "q:"]);
    d.call(&["CLIENT", "TRACKING", "ON", "BCAST"]);
    assert_eq!(
        d.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "q:x"]),
        error("ERR Prefix 'q:x' overlaps with an existing prefix ''. Prefixes for a single client must not overlap.")
    );
}

#[test]
fn redirected_messages_reach_an_idle_resp3_client_in_redis_order() {
    let s = TestServer::start();
    let mut admin = s.raw();
    // An idle RESP3 client (neither tracking nor subscribed) that another
    // client redirects to gets the invalidation without sending anything.
    let mut target = resp3(&s);
    let id = client_id(&mut target);
    let mut tracker = s.raw();
    tracker.call(&["CLIENT", "TRACKING", "ON", "REDIRECT", &id]);
    tracker.call(&["GET", "a"]);
    admin.call(&["SET", "a", "1"]);
    target.set_timeout(std::time::Duration::from_secs(10));
    assert_eq!(target.read_frame(), invalidate(&["a"]));

    // Two BCAST trackers redirecting to one subscriber: prefix by prefix.
    let mut sub = s.raw();
    let sub_id = client_id(&mut sub);
    sub.call(&["SUBSCRIBE", "__redis__:invalidate"]);
    let mut pb = s.raw();
    pb.call(&[
        "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "b", "REDIRECT", &sub_id,
    ]);
    let mut pa = s.raw();
    pa.call(&[
        "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "REDIRECT", &sub_id,
    ]);
    admin.call(&["MSET", "ax", "1", "bx", "2"]);
    let message =
        |keys: Frame| Frame::Array(vec![bulk("message"), bulk("__redis__:invalidate"), keys]);
    assert_eq!(sub.read_frame(), message(Frame::Array(vec![bulk("ax")])));
    assert_eq!(sub.read_frame(), message(Frame::Array(vec![bulk("bx")])));

    // A tracker that flushes sends its own null last.
    pa.call(&["CLIENT", "TRACKING", "OFF"]);
    pb.call(&["CLIENT", "TRACKING", "OFF"]);
    let mut older = s.raw();
    older.call(&["CLIENT", "TRACKING", "ON", "REDIRECT", &sub_id]);
    let mut younger = resp3(&s);
    younger.call(&["CLIENT", "TRACKING", "ON", "REDIRECT", &sub_id]);
    older.call(&["FLUSHALL"]);
    assert_eq!(sub.read_frame(), message(Frame::Null));
    assert_eq!(sub.read_frame(), message(Frame::NullBulk));
}

#[test]
fn a_read_that_expires_a_key_leaves_the_reader_tracking_it() {
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let mut admin = s.raw();
    assert_eq!(
        admin.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
        simple("OK")
    );
    let mut reader = resp3(&s);
    let mut other = resp3(&s);
    for c in [&mut reader, &mut other] {
        assert_eq!(c.call(&["CLIENT", "TRACKING", "ON"]), simple("OK"));
    }
    let mut bcast = resp3(&s);
    assert_eq!(
        bcast.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "bc:", "NOLOOP"]),
        simple("OK")
    );
    // Keys that expire (only lazily) once everyone has read them; the
    // margin is generous for a loaded machine.
    for key in ["fresh", "cached", "scripted", "bc:k"] {
        admin.call(&["SET", key, "v", "PX", "2000"]);
    }
    admin.call(&["SET", "twin", "v0"]);
    admin.call(&["SELECT", "1"]);
    admin.call(&["SET", "twin", "v1", "PX", "2000"]);
    admin.call(&["SELECT", "0"]);
    assert_eq!(bcast.read_frame(), invalidate(&["bc:k"]));
    assert_eq!(other.call(&["GET", "fresh"]), bulk("v"));
    assert_eq!(reader.call(&["GET", "cached"]), bulk("v"));
    assert_eq!(other.call(&["GET", "scripted"]), bulk("v"));
    std::thread::sleep(std::time::Duration::from_millis(2500));

    // Not cached by the reader before: only those who cached it are told.
    assert_eq!(reader.call(&["GET", "fresh"]), Frame::Null);
    assert_eq!(reader.call(&["PING"]), simple("PONG"));
    assert_eq!(other.read_frame(), invalidate(&["fresh"]));
    // ... and the reader, which cached the miss, hears of the next write.
    admin.call(&["SET", "fresh", "x"]);
    assert_eq!(reader.read_frame(), invalidate(&["fresh"]));
    assert_eq!(other.call(&["PING"]), simple("PONG"));

    // Cached before: told after the reply, and still tracking it.
    assert_eq!(reader.call(&["GET", "cached"]), Frame::Null);
    assert_eq!(reader.read_frame(), invalidate(&["cached"]));
    admin.call(&["SET", "cached", "x"]);
    assert_eq!(reader.read_frame(), invalidate(&["cached"]));
    assert_eq!(reader.call(&["PING"]), simple("PONG"));

    // The same through a script's read of a declared key.
    let get = "return redis.call('GET', KEYS[1])";
    assert_eq!(reader.call(&["EVAL", get, "1", "scripted"]), Frame::Null);
    assert_eq!(reader.call(&["PING"]), simple("PONG"));
    assert_eq!(other.read_frame(), invalidate(&["scripted"]));
    admin.call(&["SET", "scripted", "x"]);
    assert_eq!(reader.read_frame(), invalidate(&["scripted"]));

    // Cached by an earlier command of the same transaction (in another
    // database: tracking goes by key name): told.
    assert_eq!(reader.call(&["MULTI"]), simple("OK"));
    for args in [
        &["GET", "twin"][..],
        &["SELECT", "1"],
        &["GET", "twin"],
        &["SELECT", "0"],
    ] {
        assert_eq!(reader.call(args), simple("QUEUED"));
    }
    assert_eq!(
        reader.call(&["EXEC"]),
        Frame::Array(vec![bulk("v0"), simple("OK"), Frame::Null, simple("OK")])
    );
    assert_eq!(reader.read_frame(), invalidate(&["twin"]));

    // BCAST with NOLOOP: an expiry is nobody's change, even when this
    // client's read caused it.
    assert_eq!(bcast.call(&["GET", "bc:k"]), Frame::Null);
    assert_eq!(bcast.read_frame(), invalidate(&["bc:k"]));
    assert_eq!(bcast.call(&["SET", "bc:k", "own"]), simple("OK"));
    assert_eq!(bcast.call(&["PING"]), simple("PONG"));
}

#[test]
fn a_key_written_then_read_in_one_batch_stays_tracked() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let mut reader = resp3(&s);
    assert_eq!(reader.call(&["CLIENT", "TRACKING", "ON"]), simple("OK"));

    // Not cached before: the write tells nobody, the read remembers.
    assert_eq!(reader.call(&["MULTI"]), simple("OK"));
    assert_eq!(reader.call(&["SET", "k", "v2"]), simple("QUEUED"));
    assert_eq!(reader.call(&["GET", "k"]), simple("QUEUED"));
    assert_eq!(
        reader.call(&["EXEC"]),
        Frame::Array(vec![simple("OK"), bulk("v2")])
    );
    assert_eq!(reader.call(&["PING"]), simple("PONG"));
    admin.call(&["SET", "k", "x"]);
    assert_eq!(reader.read_frame(), invalidate(&["k"]));

    // Cached before: the write tells it (after the reply), the read
    // remembers it again.
    assert_eq!(reader.call(&["GET", "k"]), bulk("x"));
    assert_eq!(reader.call(&["MULTI"]), simple("OK"));
    assert_eq!(reader.call(&["SET", "k", "v3"]), simple("QUEUED"));
    assert_eq!(reader.call(&["GET", "k"]), simple("QUEUED"));
    assert_eq!(
        reader.call(&["EXEC"]),
        Frame::Array(vec![simple("OK"), bulk("v3")])
    );
    assert_eq!(reader.read_frame(), invalidate(&["k"]));
    admin.call(&["SET", "k", "y"]);
    assert_eq!(reader.read_frame(), invalidate(&["k"]));

    // A script that writes then reads a declared key.
    let set_get = "redis.call('SET', KEYS[1], 'x') return redis.call('GET', KEYS[1])";
    assert_eq!(reader.call(&["EVAL", set_get, "1", "s"]), bulk("x"));
    assert_eq!(reader.call(&["PING"]), simple("PONG"));
    admin.call(&["SET", "s", "z"]);
    assert_eq!(reader.read_frame(), invalidate(&["s"]));
}

/// A key evicted to make room for a command is invalidated before that command's reply, as
/// Redis evicts before it executes the command.
#[test]
fn invalidations_of_evicted_keys_come_before_the_reply() {
    let s = TestServer::start();
    let mut c = resp3(&s);
    assert_eq!(c.call(&["CLIENT", "TRACKING", "on"]), simple("OK"));
    let mut plain = s.raw();
    let memory = common::dataset::info_field(&mut plain, "memory", "used_memory");
    let not_counted =
        common::dataset::info_field(&mut plain, "memory", "mem_not_counted_for_evict");
    let limit = memory.parse::<u64>().unwrap() - not_counted.parse::<u64>().unwrap() + 1024 * 1024;
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory", &limit.to_string()]),
        simple("OK")
    );
    // Only keys with a TTL are evicted: the volatile one, not the big one.
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory-policy", "volatile-random"]),
        simple("OK")
    );
    assert_eq!(
        c.call(&["SETEX", "volatile-key", "10000", "x"]),
        simple("OK")
    );
    assert_eq!(c.call(&["GET", "volatile-key"]), bulk("x"));
    // 2 MB: over the limit once written.
    assert_eq!(c.call(&["SETBIT", "big-key", "16000000", "0"]), int(0));
    c.send(&["GETBIT", "big-key", "0"]);
    assert_eq!(c.read_frame(), invalidate(&["volatile-key"]));
    assert_eq!(c.read_frame(), int(0));
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "0"]), simple("OK"));
}
