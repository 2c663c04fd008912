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
