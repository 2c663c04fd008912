//! The wire protocol, byte for byte: inline commands, pipelining, malformed RESP (the exact
//! `-ERR Protocol error: ...` reply, then the connection closed), huge lengths, big values
//! arriving in pieces, and clients that vanish mid-command. Expected bytes are redis-server 7.0's.

mod common;

use common::{bulk, error, fmt_frame, simple, Frame, RawClient, TestServer};
use std::io::Write;
use std::time::Duration;

/// Sends `bytes`, expects exactly the protocol error `msg`, then the connection closed; and
/// checks that the server still serves a new connection.
fn assert_protocol_error(s: &TestServer, bytes: &[u8], msg: &str) {
    let mut raw = s.raw();
    raw.send_raw(bytes);
    assert_eq!(
        raw.read_frame(),
        error(msg),
        "after sending {:?}",
        String::from_utf8_lossy(bytes)
    );
    raw.expect_closed();
    let mut other = s.raw();
    assert_eq!(other.call(&["PING"]), simple("PONG"));
}

#[test]
fn inline_ping_returns_pong() {
    let s = TestServer::start();
    let mut raw = s.raw();
    raw.send_raw(b"PING\r\n");
    assert_eq!(raw.read_frame(), simple("PONG"));
    raw.send_raw(b"  ping  \r\n");
    assert_eq!(raw.read_frame(), simple("PONG"));
}

#[test]
fn inline_commands_take_arguments_and_bare_newlines() {
    let s = TestServer::start();
    let mut raw = s.raw();
    raw.send_raw(b"SET k hello\r\nGET k\nECHO   spaced   \n");
    assert_eq!(raw.read_frame(), simple("OK"));
    assert_eq!(raw.read_frame(), bulk("hello"));
    assert_eq!(raw.read_frame(), bulk("spaced"));
}

#[test]
fn inline_quotes_and_escapes() {
    let s = TestServer::start();
    let mut raw = s.raw();
    raw.send_raw(b"SET k \"a\\x41\\n b\"\r\nGET k\r\n");
    assert_eq!(raw.read_frame(), simple("OK"));
    assert_eq!(raw.read_frame(), bulk("aA\n b"));
    raw.send_raw(b"SET k 'it s'\r\nGET k\r\n");
    assert_eq!(raw.read_frame(), simple("OK"));
    assert_eq!(raw.read_frame(), bulk("it s"));
}

#[test]
fn inline_empty_lines_are_ignored() {
    let s = TestServer::start();
    let mut raw = s.raw();
    raw.send_raw(b"\r\n\r\n\nPING\r\n");
    assert_eq!(raw.read_frame(), simple("PONG"));
    assert!(!raw.has_buffered());
}

#[test]
fn inline_unbalanced_quotes_is_protocol_error() {
    let s = TestServer::start();
    assert_protocol_error(
        &s,
        b"SET k \"abc\r\n",
        "ERR Protocol error: unbalanced quotes in request",
    );
    assert_protocol_error(
        &s,
        b"SET k \"abc\"x\r\n",
        "ERR Protocol error: unbalanced quotes in request",
    );
}

#[test]
fn inline_too_big_request_is_protocol_error() {
    let s = TestServer::start();
    assert_protocol_error(
        &s,
        &vec![b'x'; 70_000],
        "ERR Protocol error: too big inline request",
    );
}

#[test]
fn multibulk_mixed_with_inline_in_one_write() {
    let s = TestServer::start();
    let mut raw = s.raw();
    raw.send_raw(b"*1\r\n$4\r\nPING\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nGET k\r\n");
    assert_eq!(raw.read_frame(), simple("PONG"));
    assert_eq!(raw.read_frame(), simple("PONG"));
    assert_eq!(raw.read_frame(), simple("OK"));
    assert_eq!(raw.read_frame(), bulk("v"));
}

#[test]
fn pipeline_of_1000_commands_in_one_write() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let mut cmds: Vec<Vec<String>> = Vec::new();
    for i in 0..500 {
        cmds.push(vec!["SET".into(), format!("key:{i}"), format!("value:{i}")]);
        cmds.push(vec!["INCR".into(), "counter".into()]);
    }
    let replies = raw.pipeline(&cmds);
    assert_eq!(replies.len(), 1000);
    for (i, r) in replies.iter().enumerate() {
        let want = if i % 2 == 0 {
            simple("OK")
        } else {
            Frame::Integer(i as i64 / 2 + 1)
        };
        assert_eq!(*r, want, "reply {i}");
    }
    let gets: Vec<Vec<String>> = (0..1000)
        .map(|i| vec!["GET".into(), format!("key:{}", i % 500)])
        .collect();
    for (i, r) in raw.pipeline(&gets).into_iter().enumerate() {
        assert_eq!(r, bulk(format!("value:{}", i % 500)), "GET {i}");
    }
    assert!(!raw.has_buffered());
}

#[test]
fn command_split_into_single_bytes_works() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let bytes =
        b"*3\r\n$3\r\nSET\r\n$5\r\nmykey\r\n$7\r\nmyvalue\r\n*2\r\n$3\r\nGET\r\n$5\r\nmykey\r\n";
    for b in bytes.iter() {
        raw.send_raw(&[*b]);
    }
    assert_eq!(raw.read_frame(), simple("OK"));
    assert_eq!(raw.read_frame(), bulk("myvalue"));
}

#[test]
fn empty_and_null_multibulk_are_ignored() {
    let s = TestServer::start();
    let mut raw = s.raw();
    raw.send_raw(b"*0\r\n*-1\r\n*-5\r\n*1\r\n$4\r\nPING\r\n");
    assert_eq!(raw.read_frame(), simple("PONG"));
    assert!(!raw.has_buffered());
}

#[test]
fn unknown_command_error_names_command_and_args() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["FOOBAR", "a", "b c"]),
        error("ERR unknown command 'FOOBAR', with args beginning with: 'a' 'b c' ")
    );
    assert_eq!(
        raw.call(&[""]),
        error("ERR unknown command '', with args beginning with: ")
    );
    assert_eq!(raw.call(&["PING"]), simple("PONG"));
}

#[test]
fn malformed_multibulk_length_is_protocol_error() {
    let s = TestServer::start();
    assert_protocol_error(
        &s,
        b"*abc\r\n",
        "ERR Protocol error: invalid multibulk length",
    );
    assert_protocol_error(
        &s,
        b"*2147483648\r\n",
        "ERR Protocol error: invalid multibulk length",
    );
    assert_protocol_error(
        &s,
        &[b"*".as_slice(), &[b'1'; 70_000]].concat(),
        "ERR Protocol error: too big mbulk count string",
    );
}

#[test]
fn missing_dollar_is_protocol_error() {
    let s = TestServer::start();
    assert_protocol_error(
        &s,
        b"*1\r\nfoo\r\n",
        "ERR Protocol error: expected '$', got 'f'",
    );
    assert_protocol_error(
        &s,
        b"*2\r\n$3\r\nGET\r\n:1\r\n",
        "ERR Protocol error: expected '$', got ':'",
    );
}

#[test]
fn malformed_bulk_length_is_protocol_error() {
    let s = TestServer::start();
    assert_protocol_error(
        &s,
        b"*1\r\n$x\r\n",
        "ERR Protocol error: invalid bulk length",
    );
    assert_protocol_error(
        &s,
        b"*1\r\n$-1\r\n",
        "ERR Protocol error: invalid bulk length",
    );
    assert_protocol_error(
        &s,
        &[b"*1\r\n$".as_slice(), &[b'1'; 70_000]].concat(),
        "ERR Protocol error: too big bulk count string",
    );
}

#[test]
fn huge_claimed_bulk_length_is_rejected() {
    let s = TestServer::start();
    assert_protocol_error(
        &s,
        b"*1\r\n$2147483648\r\n",
        "ERR Protocol error: invalid bulk length",
    );
    // Just over proto-max-bulk-len (512 MB).
    assert_protocol_error(
        &s,
        b"*2\r\n$3\r\nGET\r\n$536870913\r\n",
        "ERR Protocol error: invalid bulk length",
    );
}

#[test]
fn protocol_error_after_valid_commands_answers_them_first() {
    let s = TestServer::start();
    let mut raw = s.raw();
    raw.send_raw(b"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$x\r\n");
    assert_eq!(raw.read_frame(), simple("PONG"));
    assert_eq!(raw.read_frame(), simple("PONG"));
    assert_eq!(
        raw.read_frame(),
        error("ERR Protocol error: invalid bulk length")
    );
    raw.expect_closed();
}

/// A cheap checksum so a 100 MB comparison does not need two copies in assertion messages.
fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

#[test]
fn value_of_100mb_split_across_many_writes() {
    let s = TestServer::start();
    let mut raw = s.raw();
    raw.set_timeout(Duration::from_secs(120));
    const LEN: usize = 100 * 1000 * 1000;
    let value: Vec<u8> = (0..LEN).map(|i| (i % 253) as u8).collect();
    let header = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${LEN}\r\n");
    raw.send_raw(header.as_bytes());
    for chunk in value.chunks(1 << 20) {
        raw.send_raw(chunk);
    }
    raw.send_raw(b"\r\n");
    assert_eq!(raw.read_frame(), simple("OK"));
    assert_eq!(raw.call(&["STRLEN", "big"]), Frame::Integer(LEN as i64));
    assert_eq!(
        raw.call(&["GETRANGE", "big", "99999990", "-1"]),
        Frame::Bulk(value[LEN - 10..].to_vec())
    );
    match raw.call(&["GET", "big"]) {
        Frame::Bulk(got) => {
            assert_eq!(got.len(), LEN);
            assert_eq!(fnv(&got), fnv(&value), "100 MB value came back different");
        }
        other => panic!("GET big answered {}", fmt_frame(&other)),
    }
    assert_eq!(raw.call(&["DEL", "big"]), Frame::Integer(1));
}

#[test]
fn client_disconnecting_mid_command_leaves_server_healthy() {
    let mut s = TestServer::start();
    {
        // Half a SET: the value never arrives.
        let mut raw = s.raw();
        raw.send_raw(b"*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$10\r\nabc");
    }
    {
        // A big value cut off after a few MB.
        let mut raw = s.raw();
        raw.send_raw(b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$50000000\r\n");
        raw.send_raw(&vec![b'x'; 4 << 20]);
    }
    {
        // Half a multibulk header, half an inline command.
        let mut raw = s.raw();
        raw.send_raw(b"*5\r\n$3\r\nSE");
        let mut raw2 = s.raw();
        raw2.send_raw(b"SET inline val");
    }
    {
        // Many pipelined commands whose replies are never read.
        let mut raw = s.raw();
        let cmds: Vec<[&str; 3]> = (0..20_000).map(|_| ["SET", "flood", "x"]).collect();
        raw.send_many(&cmds);
    }
    {
        // Abrupt close through the OS socket only.
        let raw = RawClient::connect(s.port());
        let mut stream = raw.stream().try_clone().unwrap();
        let _ = stream.write_all(b"*2\r\n$3\r\nGET\r\n");
        raw.shutdown(std::net::Shutdown::Both);
    }
    s.assert_healthy();
    let mut raw = s.raw();
    assert_eq!(raw.call(&["GET", "half"]), Frame::NullBulk);
    assert_eq!(raw.call(&["GET", "big"]), Frame::NullBulk);
    assert_eq!(raw.call(&["GET", "inline"]), Frame::NullBulk);
    assert_eq!(raw.call(&["SET", "after", "ok"]), simple("OK"));
    assert_eq!(raw.call(&["GET", "after"]), bulk("ok"));
}

#[test]
fn many_connections_at_once() {
    let s = TestServer::start();
    let mut conns: Vec<RawClient> = (0..200).map(|_| s.raw()).collect();
    for (i, c) in conns.iter_mut().enumerate() {
        c.send(&["SET", &format!("c{i}"), &i.to_string()]);
    }
    for c in conns.iter_mut() {
        assert_eq!(c.read_frame(), simple("OK"));
    }
    let mut raw = s.raw();
    assert_eq!(raw.call(&["DBSIZE"]), Frame::Integer(200));
}

/// Errors that show what the client sent show its bytes as they came, as Redis's `%s` does:
/// no escaping, no UTF-8 replacement; cut at a NUL and at Redis's 128 bytes (even inside a
/// UTF-8 sequence); CR and LF as spaces.
#[test]
fn errors_echo_client_bytes_as_sent() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let err = |b: &[u8]| Frame::Error(b.to_vec());
    let call = |raw: &mut RawClient, args: &[&[u8]]| raw.call(args);
    assert_eq!(
        call(&mut raw, &[b"\xff\xfe"]),
        err(b"ERR unknown command '\xff\xfe', with args beginning with: ")
    );
    assert_eq!(
        call(&mut raw, &[b"\xff\xfe", b"a\x01b", b"c\xe2\x82\xacd", b"x\x00y"]),
        err(b"ERR unknown command '\xff\xfe', with args beginning with: 'a\x01b' 'c\xe2\x82\xacd' 'x' ")
    );
    assert_eq!(
        call(&mut raw, &[b"foo\r\nbar", b"\nx\n"]),
        err(b"ERR unknown command 'foo  bar', with args beginning with: ' x ' ")
    );
    // 128 bytes of the name, and of the first argument (then the arguments stop: they already
    // fill 128), cutting a euro sign in two.
    let mut long = vec![b'n'; 127];
    long.extend_from_slice("€".as_bytes());
    let mut want = b"ERR unknown command '".to_vec();
    want.extend_from_slice(&long[..128]);
    want.extend_from_slice(b"', with args beginning with: '");
    want.extend_from_slice(&long[..128]);
    want.extend_from_slice(b"' ");
    assert_eq!(call(&mut raw, &[&long, &long, b"more"]), err(&want));
    assert_eq!(
        call(&mut raw, &[b"CONFIG", b"\xff\xfe"]),
        err(b"ERR unknown subcommand '\xff\xfe'. Try CONFIG HELP.")
    );
    assert_eq!(
        call(&mut raw, &[b"object", b"x\xff\x00y"]),
        err(b"ERR unknown subcommand 'x\xff'. Try OBJECT HELP.")
    );
    // Extra arguments: the subcommand and the command as typed, the command upper-cased.
    assert_eq!(
        call(&mut raw, &[b"pubsub", b"channels", b"a", b"\xff"]),
        err(
            b"ERR unknown subcommand or wrong number of arguments for 'channels'. Try PUBSUB HELP."
        )
    );
    assert_eq!(
        call(&mut raw, &[b"client", b"pause", b"1", b"x\xff", b"y"]),
        err(b"ERR unknown subcommand or wrong number of arguments for 'pause'. Try CLIENT HELP.")
    );
    assert_eq!(
        call(&mut raw, &[b"xinfo", b"help", b"\xff"]),
        err(b"ERR wrong number of arguments for 'xinfo|help' command")
    );
    assert_eq!(
        call(&mut raw, &[b"CONFIG", b"SET", b"\xff", b"1"]),
        err(b"ERR Unknown option or number of arguments for CONFIG SET - '\xff'")
    );
    assert_eq!(
        call(&mut raw, &[b"CONFIG", b"SET", b"a\x00b", b"1"]),
        err(b"ERR Unknown option or number of arguments for CONFIG SET - 'a'")
    );
    assert_eq!(
        call(&mut raw, &[b"HELLO", b"2", b"\xff"]),
        err(b"ERR Syntax error in HELLO option '\xff'")
    );
    assert_eq!(
        call(&mut raw, &[b"CLIENT", b"KILL", b"USER", b"\xff"]),
        err(b"ERR No such user '\xff'")
    );
    assert_eq!(
        call(&mut raw, &[b"CLIENT", b"LIST", b"TYPE", b"\xff"]),
        err(b"ERR Unknown client type '\xff'")
    );
    assert_eq!(
        call(&mut raw, &[b"EXPIRE", b"k", b"1", b"\xff"]),
        err(b"ERR Unsupported option \xff")
    );
    assert_eq!(
        call(&mut raw, &[b"XINFO", b"CONSUMERS", b"s\xff", b"g\xfe"]),
        err(b"ERR no such key")
    );
    assert!(matches!(
        call(&mut raw, &[b"XADD", b"s", b"*", b"f", b"v"]),
        Frame::Bulk(_)
    ));
    assert_eq!(
        call(&mut raw, &[b"XINFO", b"CONSUMERS", b"s", b"g\xfe"]),
        err(b"NOGROUP No such consumer group 'g\xfe' for key name 's'")
    );
    assert_eq!(
        call(&mut raw, &[b"LATENCY", b"GRAPH", b"\xff"]),
        err(b"ERR No samples available for event '\xff'")
    );
    assert_eq!(call(&mut raw, &[b"PING"]), simple("PONG"));
}

/// redis-server 7.0.15 echoes a client's bytes in its errors as they came
/// (7.2 began escaping them), only cut at a NUL by its `%s` formatting.
#[test]
fn errors_echo_client_bytes_as_redis_7_0_does() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&[&b"\xff\xfe"[..], b"a\x01b"]),
        Frame::Error(
            b"ERR unknown command '\xff\xfe', with args beginning with: 'a\x01b' ".to_vec()
        )
    );
    assert_eq!(
        c.call(&[&b"OBJECT"[..], b"f\xffo"]),
        Frame::Error(b"ERR unknown subcommand 'f\xffo'. Try OBJECT HELP.".to_vec())
    );
    assert_eq!(
        c.call(&[&b"CONFIG"[..], b"SET", b"\x01x", b"1"]),
        Frame::Error(
            b"ERR Unknown option or number of arguments for CONFIG SET - '\x01x'".to_vec()
        )
    );
    assert_eq!(
        c.call(&[&b"MEMORY"[..], b"\x00abc"]),
        error("ERR unknown subcommand ''. Try MEMORY HELP.")
    );
}
