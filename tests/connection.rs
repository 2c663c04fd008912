//! Connection commands: PING ECHO HELLO AUTH SELECT QUIT RESET CLIENT. Expected values are what
//! redis-server 7.0 replies. Replies whose RESP type matters are read with the raw client.

mod common;

use common::{bulk, error, fmt_frame, q, q_err, simple, wait_until, Frame, RawClient, TestServer};
use redis::Value;
use std::time::Duration;

fn server() -> (TestServer, redis::Connection) {
    let s = TestServer::start();
    let c = s.client();
    (s, c)
}

/// The value of `field=` in a CLIENT LIST / CLIENT INFO line.
fn client_field<'a>(line: &'a str, field: &str) -> Option<&'a str> {
    line.split_whitespace().find_map(|kv| {
        kv.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix('='))
    })
}

fn client_id(raw: &mut RawClient) -> i64 {
    match raw.call(&["CLIENT", "ID"]) {
        Frame::Integer(id) => id,
        other => panic!("CLIENT ID answered {}", fmt_frame(&other)),
    }
}

/// Field names of a HELLO reply, in order, with their values.
fn hello_fields(reply: Frame) -> Vec<(String, Frame)> {
    match reply {
        Frame::Array(items) => {
            assert_eq!(items.len() % 2, 0);
            items
                .chunks(2)
                .map(|kv| match &kv[0] {
                    Frame::Bulk(k) => (String::from_utf8_lossy(k).into_owned(), kv[1].clone()),
                    other => panic!("HELLO field name {}", fmt_frame(other)),
                })
                .collect()
        }
        Frame::Map(pairs) => pairs
            .into_iter()
            .map(|(k, v)| match k {
                Frame::Bulk(k) => (String::from_utf8_lossy(&k).into_owned(), v),
                other => panic!("HELLO field name {}", fmt_frame(&other)),
            })
            .collect(),
        other => panic!("HELLO answered {}", fmt_frame(&other)),
    }
}

fn check_hello_fields(fields: &[(String, Frame)], proto: i64) {
    let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        ["server", "version", "proto", "id", "mode", "role", "modules"]
    );
    assert!(matches!(fields[0].1, Frame::Bulk(_)));
    assert!(matches!(fields[1].1, Frame::Bulk(_)));
    assert_eq!(fields[2].1, Frame::Integer(proto));
    assert!(matches!(fields[3].1, Frame::Integer(id) if id > 0));
    assert_eq!(fields[4].1, bulk("standalone"));
    assert_eq!(fields[5].1, bulk("master"));
    assert_eq!(fields[6].1, Frame::Array(vec![]));
}

#[test]
fn ping_returns_pong() {
    let (s, mut c) = server();
    assert_eq!(q::<String>(&mut c, &["PING"]), "PONG");
    let mut raw = s.raw();
    assert_eq!(raw.call(&["PING"]), simple("PONG"));
    assert_eq!(raw.call(&["PING", "hello world"]), bulk("hello world"));
    assert_eq!(
        raw.call(&["ping", "a", "b"]),
        error("ERR wrong number of arguments for 'ping' command")
    );
}

#[test]
fn echo_returns_its_argument() {
    let (_s, mut c) = server();
    assert_eq!(q::<String>(&mut c, &["ECHO", "hi there"]), "hi there");
    assert_eq!(q::<Vec<u8>>(&mut c, &["ECHO", ""]), Vec::<u8>::new());
    assert_eq!(
        q_err(&mut c, &["ECHO"]),
        "ERR wrong number of arguments for 'echo' command"
    );
    assert_eq!(
        q_err(&mut c, &["ECHO", "a", "b"]),
        "ERR wrong number of arguments for 'echo' command"
    );
}

#[test]
fn hello_2_replies_with_flat_array() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let reply = raw.call(&["HELLO", "2"]);
    assert!(matches!(reply, Frame::Array(_)), "{}", fmt_frame(&reply));
    check_hello_fields(&hello_fields(reply), 2);
    assert_eq!(raw.call(&["GET", "missing"]), Frame::NullBulk);
}

#[test]
fn hello_3_replies_with_map_and_switches_to_resp3() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let reply = raw.call(&["HELLO", "3"]);
    assert!(matches!(reply, Frame::Map(_)), "{}", fmt_frame(&reply));
    check_hello_fields(&hello_fields(reply), 3);
    // RESP3 null instead of the RESP2 null bulk.
    assert_eq!(raw.call(&["GET", "missing"]), Frame::Null);
    // Without arguments HELLO describes the current protocol.
    let again = raw.call(&["HELLO"]);
    assert!(matches!(again, Frame::Map(_)), "{}", fmt_frame(&again));
    check_hello_fields(&hello_fields(again), 3);
    // Back to RESP2.
    let two = raw.call(&["HELLO", "2"]);
    assert!(matches!(two, Frame::Array(_)));
    assert_eq!(raw.call(&["GET", "missing"]), Frame::NullBulk);
}

#[test]
fn hello_id_matches_client_id() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let id = client_id(&mut raw);
    let fields = hello_fields(raw.call(&["HELLO", "3"]));
    assert_eq!(fields[3].1, Frame::Integer(id));
}

#[test]
fn hello_rejects_unsupported_versions() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["HELLO", "4"]),
        error("NOPROTO unsupported protocol version")
    );
    assert_eq!(
        raw.call(&["HELLO", "1"]),
        error("NOPROTO unsupported protocol version")
    );
    assert_eq!(
        raw.call(&["HELLO", "abc"]),
        error("ERR Protocol version is not an integer or out of range")
    );
    // Still RESP2.
    assert_eq!(raw.call(&["GET", "missing"]), Frame::NullBulk);
}

#[test]
fn redis_crate_resp3_connection_works() {
    let s = TestServer::start();
    let mut c = s.client_resp3();
    assert_eq!(q::<Value>(&mut c, &["SET", "k", "v"]), Value::Okay);
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "v");
    assert_eq!(q::<Value>(&mut c, &["GET", "missing"]), Value::Nil);
}

#[test]
fn auth_without_configured_password_is_error() {
    let (_s, mut c) = server();
    assert_eq!(
        q_err(&mut c, &["AUTH", "whatever"]),
        "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
    );
    assert_eq!(
        q_err(&mut c, &["AUTH", "someone", "pw"]),
        "WRONGPASS invalid username-password pair or user is disabled."
    );
}

#[test]
fn requirepass_blocks_commands_until_auth() {
    let s = TestServer::start_with(&["--requirepass", "s3cret"]);
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["GET", "k"]),
        error("NOAUTH Authentication required.")
    );
    assert_eq!(
        raw.call(&["PING"]),
        error("NOAUTH Authentication required.")
    );
    assert_eq!(
        raw.call(&["AUTH", "wrong"]),
        error("WRONGPASS invalid username-password pair or user is disabled.")
    );
    assert_eq!(
        raw.call(&["GET", "k"]),
        error("NOAUTH Authentication required.")
    );
    assert_eq!(raw.call(&["AUTH", "s3cret"]), simple("OK"));
    assert_eq!(raw.call(&["SET", "k", "v"]), simple("OK"));
    assert_eq!(raw.call(&["GET", "k"]), bulk("v"));

    let mut other = s.raw();
    assert_eq!(other.call(&["AUTH", "default", "s3cret"]), simple("OK"));
    assert_eq!(other.call(&["GET", "k"]), bulk("v"));
}

#[test]
fn requirepass_accepts_redis_crate_url_password() {
    let s = TestServer::start_with(&["--requirepass", "s3cret"]);
    let client = redis::Client::open(format!("redis://:s3cret@127.0.0.1:{}/", s.port())).unwrap();
    let mut c = client
        .get_connection_with_timeout(Duration::from_secs(30))
        .unwrap();
    assert_eq!(q::<String>(&mut c, &["PING"]), "PONG");
}

#[test]
fn hello_with_auth_authenticates() {
    let s = TestServer::start_with(&["--requirepass", "s3cret"]);
    let mut raw = s.raw();
    let bad = raw.call(&["HELLO", "3", "AUTH", "default", "nope"]);
    assert_eq!(
        bad,
        error("WRONGPASS invalid username-password pair or user is disabled.")
    );
    assert_eq!(
        raw.call(&["GET", "k"]),
        error("NOAUTH Authentication required.")
    );
    let ok = raw.call(&["HELLO", "3", "AUTH", "default", "s3cret"]);
    assert!(matches!(ok, Frame::Map(_)), "{}", fmt_frame(&ok));
    assert_eq!(raw.call(&["GET", "k"]), Frame::Null);
}

#[test]
fn select_is_per_connection() {
    let s = TestServer::start();
    let mut a = s.client();
    let mut b = s.client();
    q::<()>(&mut a, &["SELECT", "1"]);
    q::<()>(&mut a, &["SET", "k", "in-db1"]);
    assert_eq!(q::<Value>(&mut b, &["GET", "k"]), Value::Nil);
    q::<()>(&mut b, &["SELECT", "1"]);
    assert_eq!(q::<String>(&mut b, &["GET", "k"]), "in-db1");
}

#[test]
fn quit_replies_ok_and_closes() {
    let s = TestServer::start();
    let mut raw = s.raw();
    raw.send_raw(b"*1\r\n$4\r\nQUIT\r\n*1\r\n$4\r\nPING\r\n");
    assert_eq!(raw.read_frame(), simple("OK"));
    raw.expect_closed();
    // The server carries on.
    let mut other = s.raw();
    assert_eq!(other.call(&["PING"]), simple("PONG"));
}

#[test]
fn reset_restores_connection_defaults() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(raw.call(&["SET", "k", "db0"]), simple("OK"));
    assert_eq!(raw.call(&["SELECT", "3"]), simple("OK"));
    assert_eq!(
        raw.call(&["CLIENT", "SETNAME", "before-reset"]),
        simple("OK")
    );
    assert!(matches!(raw.call(&["HELLO", "3"]), Frame::Map(_)));
    assert_eq!(raw.call(&["RESET"]), simple("RESET"));
    // Name cleared, RESP2 again, database 0 again.
    assert_eq!(raw.call(&["CLIENT", "GETNAME"]), Frame::NullBulk);
    assert_eq!(raw.call(&["GET", "k"]), bulk("db0"));
    assert_eq!(raw.call(&["GET", "missing"]), Frame::NullBulk);
}

#[test]
fn client_setname_and_getname() {
    let (_s, mut c) = server();
    assert_eq!(q::<Value>(&mut c, &["CLIENT", "GETNAME"]), Value::Nil);
    assert_eq!(
        q::<Value>(&mut c, &["CLIENT", "SETNAME", "worker-1"]),
        Value::Okay
    );
    assert_eq!(q::<String>(&mut c, &["CLIENT", "GETNAME"]), "worker-1");
    // An empty name removes it.
    assert_eq!(q::<Value>(&mut c, &["CLIENT", "SETNAME", ""]), Value::Okay);
    assert_eq!(q::<Value>(&mut c, &["CLIENT", "GETNAME"]), Value::Nil);
}

#[test]
fn client_setname_rejects_spaces_and_arity() {
    let (_s, mut c) = server();
    let msg = "ERR Client names cannot contain spaces, newlines or special characters.";
    assert_eq!(q_err(&mut c, &["CLIENT", "SETNAME", "a b"]), msg);
    assert_eq!(q_err(&mut c, &["CLIENT", "SETNAME", "a\nb"]), msg);
    assert_eq!(
        q_err(&mut c, &["CLIENT", "SETNAME"]),
        "ERR wrong number of arguments for 'client|setname' command"
    );
    assert_eq!(
        q_err(&mut c, &["CLIENT"]),
        "ERR wrong number of arguments for 'client' command"
    );
    assert_eq!(
        q_err(&mut c, &["CLIENT", "FOO"]),
        "ERR unknown subcommand 'FOO'. Try CLIENT HELP."
    );
}

#[test]
fn client_id_is_unique_per_connection() {
    let s = TestServer::start();
    let mut a = s.raw();
    let mut b = s.raw();
    let (ia, ib) = (client_id(&mut a), client_id(&mut b));
    assert!(ia > 0 && ib > 0);
    assert_ne!(ia, ib);
    assert_eq!(client_id(&mut a), ia);
}

#[test]
fn client_list_shows_every_connection() {
    let s = TestServer::start();
    let mut a = s.raw();
    let mut b = s.raw();
    assert_eq!(a.call(&["CLIENT", "SETNAME", "alpha"]), simple("OK"));
    assert_eq!(b.call(&["CLIENT", "SETNAME", "beta"]), simple("OK"));
    let ida = client_id(&mut a);
    let list = match a.call(&["CLIENT", "LIST"]) {
        Frame::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("CLIENT LIST answered {}", fmt_frame(&other)),
    };
    let lines: Vec<&str> = list.lines().collect();
    assert!(lines.len() >= 2, "{list}");
    assert!(lines.iter().all(|l| l.starts_with("id=")), "{list}");
    let names: Vec<&str> = lines
        .iter()
        .filter_map(|l| client_field(l, "name"))
        .collect();
    assert!(
        names.contains(&"alpha") && names.contains(&"beta"),
        "{list}"
    );
    let mine = lines
        .iter()
        .find(|l| client_field(l, "id") == Some(&ida.to_string()))
        .expect("own line");
    assert_eq!(client_field(mine, "name"), Some("alpha"));
    assert_eq!(client_field(mine, "cmd"), Some("client|list"));
}

#[test]
fn client_info_describes_this_connection() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let id = client_id(&mut raw);
    assert_eq!(raw.call(&["SELECT", "2"]), simple("OK"));
    assert_eq!(raw.call(&["CLIENT", "SETNAME", "me"]), simple("OK"));
    let info = match raw.call(&["CLIENT", "INFO"]) {
        Frame::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("CLIENT INFO answered {}", fmt_frame(&other)),
    };
    assert!(info.ends_with('\n'), "{info:?}");
    assert_eq!(client_field(&info, "id"), Some(id.to_string().as_str()));
    assert_eq!(client_field(&info, "name"), Some("me"));
    assert_eq!(client_field(&info, "db"), Some("2"));
    assert_eq!(client_field(&info, "resp"), Some("2"));
    let addr = client_field(&info, "addr").unwrap();
    assert_eq!(addr, raw.stream().local_addr().unwrap().to_string());
}

#[test]
fn client_kill_by_id_closes_that_connection() {
    let s = TestServer::start();
    let mut killer = s.raw();
    let mut victim = s.raw();
    let vid = client_id(&mut victim);
    assert_eq!(
        killer.call(&["CLIENT", "KILL", "ID", &vid.to_string()]),
        Frame::Integer(1)
    );
    victim.expect_closed();
    assert_eq!(
        killer.call(&["CLIENT", "KILL", "ID", &vid.to_string()]),
        Frame::Integer(0)
    );
    assert_eq!(
        killer.call(&["CLIENT", "KILL", "ID", "abc"]),
        error("ERR client-id should be greater than 0")
    );
    assert_eq!(killer.call(&["PING"]), simple("PONG"));
}

#[test]
fn client_kill_by_address() {
    let s = TestServer::start();
    let mut killer = s.raw();
    let mut victim = s.raw();
    assert_eq!(victim.call(&["PING"]), simple("PONG"));
    let addr = victim.stream().local_addr().unwrap().to_string();
    assert_eq!(killer.call(&["CLIENT", "KILL", &addr]), simple("OK"));
    victim.expect_closed();
    assert_eq!(
        killer.call(&["CLIENT", "KILL", "127.0.0.1:1"]),
        error("ERR No such client")
    );
    // The killed connection no longer shows up.
    assert!(wait_until(Duration::from_secs(10), || {
        match killer.call(&["CLIENT", "LIST"]) {
            Frame::Bulk(b) => !String::from_utf8_lossy(&b).contains(&format!("addr={addr} ")),
            _ => false,
        }
    }));
}

/// Waits up to `timeout` for a reply; `None` if none came (the connection stays usable).
fn reply_within(raw: &mut RawClient, timeout: Duration) -> Option<Frame> {
    raw.set_timeout(timeout);
    let r = raw.try_read_frame();
    raw.set_timeout(common::IO_TIMEOUT);
    match r {
        Ok(Some(f)) => Some(f),
        Ok(None) => panic!("connection closed while waiting for a reply"),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            None
        }
        Err(e) => panic!("reading a reply failed: {e}"),
    }
}

#[test]
fn quit_command_replies_ok_then_closes() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(raw.call(&["SET", "k", "v"]), simple("OK"));
    assert_eq!(raw.call(&["QUIT"]), simple("OK"));
    raw.expect_closed();
    // What was written before QUIT stays.
    let mut c = s.client();
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "v");
}

#[test]
fn client_pause_write_holds_writes_but_not_reads() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let mut writer = s.raw();
    let mut reader = s.raw();
    assert_eq!(writer.call(&["SET", "k", "before"]), simple("OK"));
    assert_eq!(
        admin.call(&["CLIENT", "PAUSE", "60000", "WRITE"]),
        simple("OK")
    );
    writer.send(&["SET", "k", "after"]);
    assert_eq!(
        reply_within(&mut writer, Duration::from_millis(300)),
        None,
        "SET answered during CLIENT PAUSE WRITE"
    );
    // Reads go through while writes are held.
    assert_eq!(reader.call(&["GET", "k"]), bulk("before"));
    assert_eq!(reader.call(&["PING"]), simple("PONG"));
    assert_eq!(admin.call(&["CLIENT", "UNPAUSE"]), simple("OK"));
    // The held SET completes now.
    assert_eq!(writer.read_frame(), simple("OK"));
    assert_eq!(reader.call(&["GET", "k"]), bulk("after"));
    assert_eq!(writer.call(&["SET", "k2", "v"]), simple("OK"));
}

#[test]
fn client_pause_all_holds_every_command_until_it_expires() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let mut other = s.raw();
    assert_eq!(admin.call(&["CLIENT", "PAUSE", "4000"]), simple("OK"));
    other.send(&["GET", "k"]);
    assert_eq!(
        reply_within(&mut other, Duration::from_millis(300)),
        None,
        "GET answered during CLIENT PAUSE (ALL)"
    );
    // No UNPAUSE: the pause runs out by itself.
    assert_eq!(other.read_frame(), Frame::NullBulk);
    assert_eq!(other.call(&["SET", "k", "v"]), simple("OK"));
}

#[test]
fn client_pause_argument_errors() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["CLIENT", "PAUSE"]),
        error("ERR wrong number of arguments for 'client|pause' command")
    );
    assert_eq!(
        raw.call(&["CLIENT", "PAUSE", "abc"]),
        error("ERR timeout is not an integer or out of range")
    );
    assert_eq!(
        raw.call(&["CLIENT", "PAUSE", "-1"]),
        error("ERR timeout is negative")
    );
    assert_eq!(
        raw.call(&["CLIENT", "PAUSE", "100", "foo"]),
        error("ERR CLIENT PAUSE mode must be WRITE or ALL")
    );
    assert_eq!(
        raw.call(&["CLIENT", "UNPAUSE", "x"]),
        error("ERR wrong number of arguments for 'client|unpause' command")
    );
    // UNPAUSE without a pause is fine.
    assert_eq!(raw.call(&["CLIENT", "UNPAUSE"]), simple("OK"));
}

#[test]
fn client_reply_off_on_and_skip() {
    let s = TestServer::start();
    let mut raw = s.raw();
    // OFF: no replies at all (not even to CLIENT REPLY OFF), but commands still run.
    raw.send(&["CLIENT", "REPLY", "OFF"]);
    raw.send(&["SET", "k", "v1"]);
    raw.send(&["PING", "hidden"]);
    raw.send(&["INCR", "k"]); // an error reply is suppressed too
                              // ON replies OK, and replies resume.
    assert_eq!(raw.call(&["CLIENT", "REPLY", "ON"]), simple("OK"));
    assert_eq!(raw.call(&["GET", "k"]), bulk("v1"));
    // SKIP: the next command's reply is dropped, then replies resume.
    raw.send(&["CLIENT", "REPLY", "SKIP"]);
    raw.send(&["SET", "k", "v2"]);
    assert_eq!(raw.call(&["PING", "visible"]), bulk("visible"));
    assert_eq!(raw.call(&["GET", "k"]), bulk("v2"));
    // Pipelined in one write: same result.
    raw.send_many(&[
        &["CLIENT", "REPLY", "SKIP"][..],
        &["ECHO", "a"],
        &["ECHO", "b"],
    ]);
    assert_eq!(raw.read_frame(), bulk("b"));
    assert!(!raw.has_buffered());
    assert_eq!(raw.call(&["PING"]), simple("PONG"));
}

#[test]
fn client_reply_argument_errors() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["CLIENT", "REPLY", "foo"]),
        error("ERR syntax error")
    );
    assert_eq!(
        raw.call(&["CLIENT", "REPLY"]),
        error("ERR wrong number of arguments for 'client|reply' command")
    );
    assert_eq!(
        raw.call(&["CLIENT", "REPLY", "ON", "x"]),
        error("ERR wrong number of arguments for 'client|reply' command")
    );
    assert_eq!(raw.call(&["CLIENT", "REPLY", "on"]), simple("OK"));
}

fn client_info_flags(raw: &mut RawClient) -> String {
    let info = match raw.call(&["CLIENT", "INFO"]) {
        Frame::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("CLIENT INFO answered {}", fmt_frame(&other)),
    };
    client_field(&info, "flags").unwrap().to_string()
}

#[test]
fn client_no_evict_sets_and_clears_the_flag() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(client_info_flags(&mut raw), "N");
    assert_eq!(raw.call(&["CLIENT", "NO-EVICT", "ON"]), simple("OK"));
    assert!(client_info_flags(&mut raw).contains('e'));
    assert_eq!(raw.call(&["CLIENT", "NO-EVICT", "off"]), simple("OK"));
    assert_eq!(client_info_flags(&mut raw), "N");
    assert_eq!(
        raw.call(&["CLIENT", "NO-EVICT", "maybe"]),
        error("ERR syntax error")
    );
    assert_eq!(
        raw.call(&["CLIENT", "NO-EVICT"]),
        error("ERR wrong number of arguments for 'client|no-evict' command")
    );
    // Other connections are unaffected.
    let mut other = s.raw();
    assert_eq!(raw.call(&["CLIENT", "NO-EVICT", "ON"]), simple("OK"));
    assert_eq!(client_info_flags(&mut other), "N");
}

#[test]
fn client_no_touch_leaves_access_time_alone() {
    if common::target_is_redis() {
        eprintln!("skipped: CLIENT NO-TOUCH is Redis 7.2, not in redis-server 7.0");
        return;
    }
    let s = TestServer::start();
    let mut quiet = s.client();
    let mut normal = s.client();
    assert_eq!(
        q::<Value>(&mut quiet, &["CLIENT", "NO-TOUCH", "ON"]),
        Value::Okay
    );
    q::<()>(&mut normal, &["SET", "a", "hello"]);
    q::<()>(&mut normal, &["SET", "b", "hello"]);
    std::thread::sleep(Duration::from_millis(2500));
    // A read from the NO-TOUCH client does not reset the idle time...
    assert_eq!(q::<String>(&mut quiet, &["GET", "a"]), "hello");
    assert!(q::<i64>(&mut quiet, &["OBJECT", "IDLETIME", "a"]) >= 2);
    // ...a read from an ordinary client does.
    assert_eq!(q::<String>(&mut normal, &["GET", "b"]), "hello");
    assert!(q::<i64>(&mut normal, &["OBJECT", "IDLETIME", "b"]) <= 1);
    // TOUCH touches even under NO-TOUCH.
    assert_eq!(q::<i64>(&mut quiet, &["TOUCH", "a"]), 1);
    assert!(q::<i64>(&mut quiet, &["OBJECT", "IDLETIME", "a"]) <= 1);
    let mut raw = s.raw();
    assert_eq!(raw.call(&["CLIENT", "NO-TOUCH", "ON"]), simple("OK"));
    assert!(client_info_flags(&mut raw).contains('T'));
    assert_eq!(raw.call(&["CLIENT", "NO-TOUCH", "OFF"]), simple("OK"));
    assert_eq!(client_info_flags(&mut raw), "N");
    assert_eq!(
        raw.call(&["CLIENT", "NO-TOUCH", "maybe"]),
        error("ERR syntax error")
    );
    assert_eq!(
        raw.call(&["CLIENT", "NO-TOUCH"]),
        error("ERR wrong number of arguments for 'client|no-touch' command")
    );
}

#[test]
fn maxclients_rejects_the_extra_connection() {
    let s = TestServer::start_with(&["--maxclients", "5"]);
    let mut first = s.raw();
    // The start-up probe's connection may still be counted for a moment.
    assert!(wait_until(Duration::from_secs(10), || {
        let info = match first.call(&["INFO", "clients"]) {
            Frame::Bulk(b) => String::from_utf8(b).unwrap(),
            _ => return false,
        };
        info.lines().any(|l| l.trim_end() == "connected_clients:1")
    }));
    let mut clients = vec![first];
    for _ in 0..4 {
        let mut c = s.raw();
        assert_eq!(c.call(&["PING"]), simple("PONG"));
        clients.push(c);
    }
    let mut extra = s.raw();
    assert_eq!(
        extra.read_frame(),
        error("ERR max number of clients reached")
    );
    extra.expect_closed();
    // The others are fine; once one leaves there is room again.
    assert_eq!(clients[4].call(&["PING"]), simple("PONG"));
    drop(clients.pop());
    // The connection that gets in is the one used next: a probe that got in
    // and was dropped would still count until the server notices it left.
    let mut admitted = None;
    assert!(wait_until(Duration::from_secs(10), || {
        let mut c = s.raw();
        // A refused connection may already be closed: a failed write just means "not yet".
        let ok = c.try_send_raw(b"*1\r\n$4\r\nPING\r\n").is_ok()
            && matches!(c.try_read_frame(), Ok(Some(f)) if f == simple("PONG"));
        if ok {
            admitted = Some(c);
        }
        ok
    }));
    let Some(mut c) = admitted else {
        panic!("no connection was admitted again")
    };
    assert_eq!(
        c.call(&["CONFIG", "GET", "maxclients"]),
        Frame::Array(vec![bulk("maxclients"), bulk("5")])
    );
}

#[test]
fn idle_clients_are_closed_after_timeout() {
    let s = TestServer::start_with(&["--timeout", "1"]);
    let mut idle = s.raw();
    assert_eq!(idle.call(&["PING"]), simple("PONG"));
    let started = std::time::Instant::now();
    idle.set_timeout(Duration::from_secs(20));
    idle.expect_closed();
    // Not before the timeout itself.
    assert!(started.elapsed() >= Duration::from_millis(900));
    let mut c = s.raw();
    assert_eq!(
        c.call(&["CONFIG", "GET", "timeout"]),
        Frame::Array(vec![bulk("timeout"), bulk("1")])
    );
}

#[test]
fn active_clients_are_not_closed_by_timeout() {
    let s = TestServer::start_with(&["--timeout", "2"]);
    let mut busy = s.raw();
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(4) {
        assert_eq!(busy.call(&["PING"]), simple("PONG"));
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn thousand_concurrent_connections_all_answer() {
    let s = TestServer::start();
    let mut conns: Vec<RawClient> = Vec::with_capacity(1000);
    for chunk in 0..10 {
        let start = conns.len();
        for _ in 0..100 {
            let mut c = s.raw();
            c.send(&["PING"]);
            conns.push(c);
        }
        for c in &mut conns[start..] {
            assert_eq!(c.read_frame(), simple("PONG"), "chunk {chunk}");
        }
    }
    // All still open at once: each answers again with its own data.
    for (i, c) in conns.iter_mut().enumerate() {
        c.send(&["ECHO", &format!("conn-{i}")]);
    }
    for (i, c) in conns.iter_mut().enumerate() {
        assert_eq!(c.read_frame(), bulk(format!("conn-{i}")));
    }
    let info = match conns[0].call(&["INFO", "clients"]) {
        Frame::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("INFO answered {}", fmt_frame(&other)),
    };
    let n: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(n >= 1000, "connected_clients:{n}");
}

#[test]
fn client_unblock_of_a_client_that_is_not_blocked() {
    let s = TestServer::start();
    let mut a = s.raw();
    let mut b = s.raw();
    let id = client_id(&mut b);
    let id_text = id.to_string();
    assert_eq!(a.call(&["CLIENT", "UNBLOCK", &id_text]), Frame::Integer(0));
    assert_eq!(
        a.call(&["CLIENT", "UNBLOCK", &id_text, "ERROR"]),
        Frame::Integer(0)
    );
    assert_eq!(a.call(&["CLIENT", "UNBLOCK", "999999"]), Frame::Integer(0));
    assert_eq!(
        a.call(&["CLIENT", "UNBLOCK", &id_text, "later"]),
        error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    );
    assert_eq!(
        a.call(&["CLIENT", "UNBLOCK", "abc"]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(b.call(&["PING"]), simple("PONG"));
}

/// A client that kills itself gets the reply before its connection closes.
#[test]
fn client_killing_itself_gets_its_reply() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let Frame::Integer(id) = raw.call(&["CLIENT", "ID"]) else {
        panic!("CLIENT ID")
    };
    assert_eq!(
        raw.call(&["CLIENT", "KILL", "ID", &id.to_string(), "SKIPME", "no"]),
        Frame::Integer(1)
    );
    raw.expect_closed();
    let mut raw = s.raw();
    let addr = raw.stream().local_addr().unwrap().to_string();
    assert_eq!(raw.call(&["CLIENT", "KILL", &addr]), simple("OK"));
    raw.expect_closed();
}

/// WRITE pauses hold scripts and functions (not their read-only variants)
/// and an EXEC with a write queued; a pause that ran out leaves no mode
/// behind; commands Redis rejects before looking at the pause are answered
/// at once even under ALL; a timeout too large to add pauses nothing.
#[test]
fn client_pause_details() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let mut a = s.raw();
    let mut b = s.raw();
    assert_eq!(
        admin.call(&["CLIENT", "PAUSE", "60000", "WRITE"]),
        simple("OK")
    );
    a.send(&["EVAL", "return 1", "0"]);
    assert_eq!(
        reply_within(&mut a, Duration::from_millis(300)),
        None,
        "EVAL during WRITE pause"
    );
    assert_eq!(b.call(&["EVAL_RO", "return 2", "0"]), Frame::Integer(2));
    assert_eq!(admin.call(&["CLIENT", "UNPAUSE"]), simple("OK"));
    assert_eq!(a.read_frame(), Frame::Integer(1));

    assert_eq!(b.call(&["MULTI"]), simple("OK"));
    assert_eq!(b.call(&["SET", "k", "v"]), simple("QUEUED"));
    assert_eq!(
        admin.call(&["CLIENT", "PAUSE", "60000", "WRITE"]),
        simple("OK")
    );
    b.send(&["EXEC"]);
    assert_eq!(
        reply_within(&mut b, Duration::from_millis(300)),
        None,
        "EXEC during WRITE pause"
    );
    assert_eq!(a.call(&["GET", "k"]), Frame::NullBulk);
    assert_eq!(admin.call(&["CLIENT", "UNPAUSE"]), simple("OK"));
    assert_eq!(b.read_frame(), Frame::Array(vec![simple("OK")]));

    // An ALL pause that ran out does not turn the next WRITE pause into ALL.
    assert_eq!(admin.call(&["CLIENT", "PAUSE", "1", "ALL"]), simple("OK"));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        admin.call(&["CLIENT", "PAUSE", "60000", "WRITE"]),
        simple("OK")
    );
    assert_eq!(a.call(&["GET", "k"]), bulk("v"));
    assert_eq!(admin.call(&["CLIENT", "UNPAUSE"]), simple("OK"));

    // (Under ALL even CLIENT UNPAUSE waits, as in Redis: this pause runs out.)
    assert_eq!(
        admin.call(&["CLIENT", "PAUSE", "3000", "ALL"]),
        simple("OK")
    );
    assert!(matches!(a.call(&["NOSUCH"]), Frame::Error(_)));
    assert_eq!(
        a.call(&["GET"]),
        error("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(admin.call(&["PING"]), simple("PONG"));

    assert_eq!(
        admin.call(&["CLIENT", "PAUSE", "9223372036854775807"]),
        simple("OK")
    );
    assert_eq!(a.call(&["PING"]), simple("PONG"));
    assert_eq!(
        admin.call(&["CLIENT", "PAUSE", "abc", "foo"]),
        error("ERR CLIENT PAUSE mode must be WRITE or ALL")
    );
    assert_eq!(
        admin.call(&["CLIENT", "PAUSE", "10", "ALL", "x"]),
        error("ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP.")
    );
}

/// CLIENT LIST ID lists in the order given, repeats included, and nothing
/// for IDs no client has; TYPE goes alone; RESET keeps CLIENT NO-EVICT;
/// CLIENT subcommands do not use up CLIENT CACHING YES.
#[test]
fn client_list_reset_and_caching_details() {
    let s = TestServer::start();
    let mut a = s.raw();
    let mut b = s.raw();
    let id = |c: &mut RawClient| match c.call(&["CLIENT", "ID"]) {
        Frame::Integer(n) => n.to_string(),
        f => panic!("CLIENT ID answered {f:?}"),
    };
    let (ia, ib) = (id(&mut a), id(&mut b));
    let Frame::Bulk(list) = a.call(&["CLIENT", "LIST", "ID", &ib, &ia, &ib, "0", "-1"]) else {
        panic!("CLIENT LIST")
    };
    let ids: Vec<String> = String::from_utf8_lossy(&list)
        .lines()
        .map(|l| l.split(' ').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        ids,
        vec![format!("id={ib}"), format!("id={ia}"), format!("id={ib}")]
    );
    assert_eq!(
        a.call(&["CLIENT", "LIST", "TYPE", "normal", "ID", &ia]),
        error("ERR syntax error")
    );
    assert_eq!(
        a.call(&["CLIENT", "LIST", "ID", "x"]),
        error("ERR Invalid client ID")
    );

    assert_eq!(a.call(&["CLIENT", "NO-EVICT", "ON"]), simple("OK"));
    assert_eq!(a.call(&["RESET"]), simple("RESET"));
    let Frame::Bulk(info) = a.call(&["CLIENT", "INFO"]) else {
        panic!("CLIENT INFO")
    };
    assert!(String::from_utf8_lossy(&info).contains(" flags=e "));

    assert_eq!(a.call(&["CLIENT", "TRACKING", "on", "OPTIN"]), simple("OK"));
    assert_eq!(a.call(&["CLIENT", "CACHING", "yes"]), simple("OK"));
    a.call(&["CLIENT", "GETNAME"]);
    let Frame::Array(info) = a.call(&["CLIENT", "TRACKINGINFO"]) else {
        panic!("CLIENT TRACKINGINFO")
    };
    assert!(
        info.iter()
            .any(|f| matches!(f, Frame::Array(flags) if flags.contains(&bulk("caching-yes")))),
        "{info:?}"
    );
}

/// The idle timeout closes tracking clients too (only subscribers are exempt).
#[test]
fn tracking_clients_time_out() {
    let s = TestServer::start_with(&["--timeout", "1"]);
    let mut c = s.raw();
    assert_eq!(c.call(&["CLIENT", "TRACKING", "on"]), simple("OK"));
    c.set_timeout(Duration::from_secs(20));
    c.expect_closed();
}

/// HELLO acts on its options in order, as Redis 7.0 does: a bad SETNAME
/// stops it before a later AUTH, an AUTH already done stays done when a
/// later option is bad.
#[test]
fn hello_options_act_in_order() {
    let s = TestServer::start_with(&["--requirepass", "pw"]);
    let mut c = s.raw();
    assert_eq!(
        c.call(&["HELLO", "3", "SETNAME", "a b", "AUTH", "default", "pw"]),
        error("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert!(matches!(c.call(&["PING"]), Frame::Error(e) if e.starts_with(b"NOAUTH")));
    assert_eq!(
        c.call(&["HELLO", "3", "SETNAME", "a b"]),
        error("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(
        c.call(&["HELLO", "2"]),
        error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
    );
    assert_eq!(
        c.call(&["HELLO", "3", "AUTH", "default", "pw", "FOO"]),
        error("ERR Syntax error in HELLO option 'FOO'")
    );
    assert_eq!(c.call(&["PING"]), simple("PONG"));
}

/// CLIENT REPLY OFF and SKIP also silence a blocking command's eventual
/// reply (timed out here), as in Redis.
#[test]
fn client_reply_off_and_skip_cover_blocked_commands() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.send(&["CLIENT", "REPLY", "OFF"]);
    c.send(&["BLPOP", "nothing", "0.05"]);
    assert_eq!(c.call(&["CLIENT", "REPLY", "ON"]), simple("OK"));
    c.send(&["CLIENT", "REPLY", "SKIP"]);
    c.send(&["BLPOP", "nothing", "0.05"]);
    assert_eq!(c.call(&["PING"]), simple("PONG"));
}

/// INFO clients: a blocked client with a timeout is in the timeout table,
/// and a client held by CLIENT PAUSE counts as blocked, as in Redis.
#[test]
fn info_clients_counts_timeouts_and_paused_clients() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let mut waiter = s.raw();
    let mut held = s.raw();
    let info = |admin: &mut RawClient| match admin.call(&["INFO", "clients"]) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        f => panic!("INFO answered {f:?}"),
    };
    waiter.send(&["BLPOP", "q", "100"]);
    assert!(wait_until(Duration::from_secs(20), || {
        let i = info(&mut admin);
        i.contains("blocked_clients:1\r\n") && i.contains("clients_in_timeout_table:1\r\n")
    }));
    assert_eq!(
        admin.call(&["CLIENT", "PAUSE", "60000", "WRITE"]),
        simple("OK")
    );
    held.send(&["SET", "k", "v"]);
    assert!(wait_until(Duration::from_secs(20), || {
        info(&mut admin).contains("blocked_clients:2\r\n")
    }));
    assert_eq!(admin.call(&["CLIENT", "UNPAUSE"]), simple("OK"));
    assert_eq!(held.read_frame(), simple("OK"));
    admin.call(&["RPUSH", "q", "x"]);
    assert_eq!(
        waiter.read_frame(),
        Frame::Array(vec![bulk("q"), bulk("x")])
    );
    let i = info(&mut admin);
    assert!(
        i.contains("blocked_clients:0\r\n") && i.contains("clients_in_timeout_table:0\r\n"),
        "{i}"
    );
}

/// CLIENT HELP names every CLIENT subcommand Redis 7.0 lists (the wording is the server's own).
#[test]
fn client_help_lists_every_subcommand() {
    let s = TestServer::start();
    let mut c = s.raw();
    let Frame::Array(lines) = c.call(&["CLIENT", "HELP"]) else {
        panic!("CLIENT HELP is an array of lines")
    };
    let heads: Vec<String> = lines
        .iter()
        .filter_map(|l| match l {
            Frame::Simple(t) if !t.starts_with(b" ") => Some(
                String::from_utf8_lossy(t)
                    .split(' ')
                    .next()
                    .unwrap_or("")
                    .to_string(),
            ),
            _ => None,
        })
        .collect();
    for sub in [
        "CACHING",
        "GETREDIR",
        "GETNAME",
        "ID",
        "INFO",
        "KILL",
        "LIST",
        "UNPAUSE",
        "PAUSE",
        "REPLY",
        "SETNAME",
        "UNBLOCK",
        "TRACKING",
        "TRACKINGINFO",
        "NO-EVICT",
        "HELP",
    ] {
        assert!(
            heads.iter().any(|h| h == sub),
            "CLIENT HELP lacks {sub}: {heads:?}"
        );
    }
}

/// Without replicas WAIT answers 0: at once when no replica is asked for (or inside MULTI),
/// otherwise after its timeout, or when CLIENT UNBLOCK ends it. ROLE names a master without
/// replicas.
#[test]
fn wait_and_role_on_a_server_without_replicas() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(c.call(&["WAIT", "0", "0"]), Frame::Integer(0));
    assert_eq!(c.call(&["WAIT", "-3", "0"]), Frame::Integer(0));
    assert_eq!(
        c.call(&["WAIT", "x", "1"]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(
        c.call(&["WAIT", "1", "x"]),
        error("ERR timeout is not an integer or out of range")
    );
    assert_eq!(
        c.call(&["WAIT", "1", "-1"]),
        error("ERR timeout is negative")
    );
    assert_eq!(
        c.call(&["WAIT", "1"]),
        error("ERR wrong number of arguments for 'wait' command")
    );
    let started = std::time::Instant::now();
    assert_eq!(c.call(&["WAIT", "1", "200"]), Frame::Integer(0));
    assert!(started.elapsed() >= Duration::from_millis(150));
    // Inside MULTI nothing blocks.
    c.call(&["MULTI"]);
    c.call(&["WAIT", "2", "0"]);
    assert_eq!(c.call(&["EXEC"]), Frame::Array(vec![Frame::Integer(0)]));
    // A WAIT without timeout lasts until unblocked.
    let mut waiter = s.raw();
    let id = client_id(&mut waiter);
    waiter.send(&["WAIT", "1", "0"]);
    let mut admin = s.raw();
    assert!(wait_until(Duration::from_secs(10), || {
        matches!(
            admin.call(&["CLIENT", "UNBLOCK", &id.to_string()]),
            Frame::Integer(1)
        )
    }));
    assert_eq!(waiter.read_frame(), Frame::Integer(0));
    waiter.send(&["WAIT", "1", "0"]);
    assert!(wait_until(Duration::from_secs(10), || {
        matches!(
            admin.call(&["CLIENT", "UNBLOCK", &id.to_string(), "ERROR"]),
            Frame::Integer(1)
        )
    }));
    assert_eq!(
        waiter.read_frame(),
        error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
    );

    assert_eq!(
        c.call(&["ROLE"]),
        Frame::Array(vec![
            bulk("master"),
            Frame::Integer(0),
            Frame::Array(vec![])
        ])
    );
    assert_eq!(
        c.call(&["ROLE", "x"]),
        error("ERR wrong number of arguments for 'role' command")
    );
}

/// CLIENT INFO run by EXEC still shows the transaction (flag `x`, the
/// queued count and their memory: argument bytes plus a pointer each);
/// `argv-mem` is the running command's argument bytes.
#[test]
fn client_info_inside_exec_and_argv_mem() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let line = match raw.call(&["CLIENT", "INFO"]) {
        Frame::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("CLIENT INFO answered {}", fmt_frame(&other)),
    };
    assert_eq!(client_field(&line, "argv-mem"), Some("10"), "{line}");
    assert_eq!(client_field(&line, "multi-mem"), Some("0"), "{line}");
    let replies = raw.pipeline(&[vec!["MULTI"], vec!["CLIENT", "INFO"], vec!["EXEC"]]);
    let line = match &replies[2] {
        Frame::Array(items) => match &items[0] {
            Frame::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
            other => panic!("CLIENT INFO answered {}", fmt_frame(other)),
        },
        other => panic!("EXEC answered {}", fmt_frame(other)),
    };
    assert_eq!(client_field(&line, "flags"), Some("x"), "{line}");
    assert_eq!(client_field(&line, "multi"), Some("1"), "{line}");
    assert_eq!(client_field(&line, "multi-mem"), Some("26"), "{line}");
    // (The running command is EXEC.)
    assert_eq!(client_field(&line, "argv-mem"), Some("4"), "{line}");
    let line = match raw.call(&["CLIENT", "INFO"]) {
        Frame::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("CLIENT INFO answered {}", fmt_frame(&other)),
    };
    assert_eq!(client_field(&line, "flags"), Some("N"), "{line}");
    assert_eq!(client_field(&line, "multi"), Some("-1"), "{line}");
    assert_eq!(client_field(&line, "multi-mem"), Some("0"), "{line}");
}

/// CLIENT REPLY OFF and SKIP silence replies but not pushes: subscription
/// confirmations (RESP2 too), and the notifications and invalidations a
/// client's own command sends it.
#[test]
fn client_reply_off_keeps_push_messages() {
    use std::io::Read;
    let s = TestServer::start();
    let read_all = |raw: &mut RawClient, want: &[u8]| {
        let mut got = vec![0u8; want.len()];
        let mut stream = raw.stream();
        stream.read_exact(&mut got).expect("the expected bytes");
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));
    };
    let mut raw = s.raw();
    for c in [
        &["CLIENT", "REPLY", "OFF"][..],
        &["SUBSCRIBE", "c2"],
        &["UNSUBSCRIBE", "c2"],
        &["CLIENT", "REPLY", "ON"],
    ] {
        raw.send(c);
    }
    read_all(
        &mut raw,
        b"*3\r\n$9\r\nsubscribe\r\n$2\r\nc2\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$2\r\nc2\r\n:0\r\n+OK\r\n",
    );

    let mut raw = s.raw();
    let _ = raw.call(&["HELLO", "3"]);
    for c in [
        &["CLIENT", "REPLY", "SKIP"][..],
        &["SUBSCRIBE", "c2"],
        &["PING"],
    ] {
        raw.send(c);
    }
    read_all(
        &mut raw,
        b">3\r\n$9\r\nsubscribe\r\n$2\r\nc2\r\n:1\r\n+PONG\r\n",
    );

    let mut raw = s.raw();
    let _ = raw.call(&["HELLO", "3"]);
    assert_eq!(raw.call(&["CLIENT", "TRACKING", "ON"]), simple("OK"));
    assert_eq!(raw.call(&["GET", "k"]), Frame::Null);
    for c in [
        &["CLIENT", "REPLY", "OFF"][..],
        &["SET", "k", "1"],
        &["CLIENT", "REPLY", "ON"],
    ] {
        raw.send(c);
    }
    read_all(
        &mut raw,
        b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n+OK\r\n",
    );
}

/// A fresh directory for a Unix socket (the servers' own scratch
/// directories are made after the socket path must be known).
fn socket_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tessera-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

#[test]
fn a_client_that_sends_its_whole_pipeline_before_reading_is_answered() {
    // The server must keep reading while its replies wait for the client
    // to read them, or both wait forever once the socket buffers are full
    // (a Unix socket's are small: 100,000 commands are enough).
    use std::io::{Read, Write};
    let dir = socket_dir("pipeline");
    let path = dir.join("t.sock");
    let path_s = path.to_str().expect("a UTF-8 path").to_string();
    let s = TestServer::start_with(&["--unixsocket", &path_s]);
    let mut c = std::os::unix::net::UnixStream::connect(&path).expect("connect");
    c.set_write_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    c.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let n = 500_000;
    c.write_all(&b"PING\r\n".repeat(n))
        .expect("the whole pipeline is taken");
    let mut replies = vec![0u8; 7 * n];
    c.read_exact(&mut replies).expect("every reply");
    assert!(replies.chunks(7).all(|r| r == b"+PONG\r\n"));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unix_socket_clients_are_served_like_tcp_ones() {
    let dir = socket_dir("unix");
    let path = dir.join("tessera.sock");
    let path_s = path.to_str().expect("a UTF-8 path").to_string();
    let mut s = TestServer::start_with(&[
        "--unixsocket",
        &path_s,
        "--unixsocketperm",
        "700",
        "--enable-debug-command",
        "local",
    ]);
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .expect("the socket file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    let mut unix = redis::Client::open(format!("unix://{path_s}"))
        .and_then(|c| c.get_connection())
        .expect("a Unix socket connection");
    let mut tcp = s.raw();
    let mut monitor = s.raw();
    assert_eq!(monitor.call(&["MONITOR"]), simple("OK"));

    assert_eq!(q::<String>(&mut unix, &["PING"]), "PONG");
    assert_eq!(q::<String>(&mut unix, &["SET", "k", "v"]), "OK");
    assert_eq!(tcp.call(&["GET", "k"]), bulk("v"));
    // Both ends show as the socket's path, flagged U.
    let info = q::<String>(&mut unix, &["CLIENT", "INFO"]);
    assert!(
        info.contains(&format!(" addr={path_s}:0 laddr={path_s}:0 ")) && info.contains(" flags=U "),
        "{info}"
    );
    // MONITOR names the socket.
    let line = match monitor.read_frame() {
        Frame::Simple(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("MONITOR sent {}", fmt_frame(&other)),
    };
    assert!(
        line.ends_with(&format!("[0 unix:{path_s}] \"PING\"")),
        "{line}"
    );
    // DEBUG's "local connection" includes Unix sockets.
    assert_eq!(q::<String>(&mut unix, &["DEBUG", "SLEEP", "0"]), "OK");

    // CLIENT KILL finds it by that address.
    assert_eq!(
        tcp.call(&["CLIENT", "KILL", &format!("{path_s}:0")]),
        simple("OK")
    );
    assert!(redis::cmd("PING").query::<String>(&mut unix).is_err());

    // Shutting down removes the socket file.
    s.stop();
    assert!(!path.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `*` matches any run of bytes (the only wildcard Redis's CLIENT LIST test uses).
fn glob_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().expect("split yields one part at least");
    let Some(mut left) = text.strip_prefix(first) else {
        return false;
    };
    for (i, part) in rest.iter().enumerate() {
        if i + 1 == rest.len() {
            return left.ends_with(part);
        }
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.is_empty()
}

fn bulk_text(f: Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8(b).expect("utf-8"),
        other => panic!("expected a bulk string, got {}", fmt_frame(&other)),
    }
}

/// A client that sent one big request and then idles gives its query buffer back (Redis's
/// clients cron; Tessera's per-worker sweep of parked connections): CLIENT LIST shows
/// `qbuf=0 qbuf-free=0` for it within a few seconds, and it is served as before. Both servers.
#[test]
fn an_idle_client_gives_its_query_buffer_back() {
    for kind in [common::ServerKind::Tessera, common::ServerKind::Redis] {
        let s = TestServer::start_kind(kind, &[]);
        let mut big = s.raw();
        let id = client_id(&mut big);
        let value = "v".repeat(1 << 20);
        assert_eq!(big.call(&["SET", "big", &value]), simple("OK"));
        let mut watcher = s.raw();
        let line =
            |w: &mut RawClient| bulk_text(w.call(&["CLIENT", "LIST", "ID", &id.to_string()]));
        assert!(
            wait_until(Duration::from_secs(20), || {
                let l = line(&mut watcher);
                client_field(&l, "qbuf") == Some("0") && client_field(&l, "qbuf-free") == Some("0")
            }),
            "{kind:?}: {}",
            line(&mut watcher)
        );
        assert_eq!(
            big.call(&["STRLEN", "big"]),
            Frame::Integer(1 << 20),
            "{kind:?}"
        );
        assert_eq!(big.call(&["PING"]), simple("PONG"), "{kind:?}");
    }
}

/// Redis's own "CLIENT LIST" / "CLIENT INFO" patterns for a plain idle client, and the same field
/// names in the same order as redis-server's: `qbuf` is the running command in the query
/// buffer (26 bytes, or the whole pipelined batch), `obl` the replies the batch made so far.
#[test]
fn client_list_and_info_lines_match_redis_field_by_field() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(c.call(&["SELECT", "9"]), simple("OK"));
    let pattern = |cmd: &str| {
        format!(
            "id=* addr=*:* laddr=*:* fd=* name=* age=* idle=* flags=N db=9 sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=* argv-mem=* multi-mem=0 rbs=* rbp=* obl=0 oll=0 omem=0 tot-mem=* events=r cmd={cmd} user=* redir=-1 resp=2\n"
        )
    };
    let list = bulk_text(c.call(&["CLIENT", "LIST"]));
    assert!(glob_matches(&pattern("client|list"), &list), "{list}");
    let info = bulk_text(c.call(&["CLIENT", "INFO"]));
    assert!(glob_matches(&pattern("client|info"), &info), "{info}");

    // A pipelined batch: the whole batch is in the query buffer, and PING's reply is waiting.
    c.send_many(&[vec!["PING"], vec!["CLIENT", "INFO"]]);
    assert_eq!(c.read_frame(), simple("PONG"));
    let info = bulk_text(c.read_frame());
    assert_eq!(client_field(&info, "qbuf"), Some("40"), "{info}");
    assert_eq!(client_field(&info, "obl"), Some("7"), "{info}");
    assert_eq!(client_field(&info, "argv-mem"), Some("10"), "{info}");

    let names = |line: &str| -> Vec<String> {
        line.split_whitespace()
            .map(|kv| kv.split('=').next().unwrap_or_default().to_string())
            .collect()
    };
    let reference = TestServer::redis();
    let want = bulk_text(reference.raw().call(&["CLIENT", "INFO"]));
    assert_eq!(names(&info), names(&want), "ours: {info}redis's: {want}");
}
