//! Pub/sub: SUBSCRIBE PSUBSCRIBE SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH, SPUBLISH, PUBSUB,
//! subscribed-mode rules and output buffer limits. Expected values are redis-server 7.0's.

mod common;

use common::{bulk, error, simple, Frame, TestServer};

fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

fn arr(v: Vec<Frame>) -> Frame {
    Frame::Array(v)
}

#[test]
fn subscribe_publish_and_unsubscribe() {
    let s = TestServer::start();
    let mut sub = s.raw();
    let mut publ = s.raw();
    sub.send(&["SUBSCRIBE", "ch1", "ch2"]);
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("subscribe"), bulk("ch1"), int(1)])
    );
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("subscribe"), bulk("ch2"), int(2)])
    );
    assert_eq!(publ.call(&["PUBLISH", "ch1", "hello"]), int(1));
    assert_eq!(publ.call(&["PUBLISH", "nobody", "x"]), int(0));
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("message"), bulk("ch1"), bulk("hello")])
    );
    assert_eq!(
        publ.call(&["PUBSUB", "NUMSUB", "ch1", "ch2", "zz"]),
        arr(vec![
            bulk("ch1"),
            int(1),
            bulk("ch2"),
            int(1),
            bulk("zz"),
            int(0)
        ])
    );
    sub.send(&["UNSUBSCRIBE", "ch1"]);
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("unsubscribe"), bulk("ch1"), int(1)])
    );
    assert_eq!(publ.call(&["PUBLISH", "ch1", "again"]), int(0));
    sub.send(&["UNSUBSCRIBE"]);
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("unsubscribe"), bulk("ch2"), int(0)])
    );
    // Out of subscribed mode: normal commands work again.
    assert_eq!(sub.call(&["PING"]), simple("PONG"));
    sub.send(&["UNSUBSCRIBE"]);
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("unsubscribe"), Frame::NullBulk, int(0)])
    );
}

#[test]
fn patterns_and_numpat() {
    let s = TestServer::start();
    let mut sub = s.raw();
    let mut publ = s.raw();
    sub.send(&["PSUBSCRIBE", "news.*", "x?"]);
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("psubscribe"), bulk("news.*"), int(1)])
    );
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("psubscribe"), bulk("x?"), int(2)])
    );
    assert_eq!(publ.call(&["PUBSUB", "NUMPAT"]), int(2));
    assert_eq!(publ.call(&["PUBLISH", "news.tech", "m"]), int(1));
    assert_eq!(
        sub.read_frame(),
        arr(vec![
            bulk("pmessage"),
            bulk("news.*"),
            bulk("news.tech"),
            bulk("m")
        ])
    );
    sub.send(&["PUNSUBSCRIBE", "x?"]);
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("punsubscribe"), bulk("x?"), int(1)])
    );
}

#[test]
fn subscribed_mode_allows_only_some_commands_in_resp2() {
    let s = TestServer::start();
    let mut sub = s.raw();
    sub.send(&["SUBSCRIBE", "c"]);
    sub.read_frame();
    assert_eq!(
        sub.call(&["GET", "k"]),
        error("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
    );
    assert_eq!(sub.call(&["PING"]), arr(vec![bulk("pong"), bulk("")]));
    assert_eq!(
        sub.call(&["PING", "hi"]),
        arr(vec![bulk("pong"), bulk("hi")])
    );
    assert_eq!(sub.call(&["RESET"]), simple("RESET"));
    assert_eq!(sub.call(&["GET", "k"]), Frame::NullBulk);
}

#[test]
fn resp3_subscribers_get_pushes_and_can_run_commands() {
    let s = TestServer::start();
    let mut sub = s.raw();
    let mut publ = s.raw();
    assert!(matches!(sub.call(&["HELLO", "3"]), Frame::Map(_)));
    sub.send(&["SUBSCRIBE", "c"]);
    assert_eq!(
        sub.read_frame(),
        Frame::Push(vec![bulk("subscribe"), bulk("c"), int(1)])
    );
    assert_eq!(sub.call(&["SET", "k", "v"]), simple("OK"));
    publ.call(&["PUBLISH", "c", "m"]);
    assert_eq!(
        sub.read_frame(),
        Frame::Push(vec![bulk("message"), bulk("c"), bulk("m")])
    );
    // Publishing to itself: the push comes before the reply.
    assert_eq!(
        sub.pipeline(&[vec!["PUBLISH", "c", "self"]]),
        vec![Frame::Push(vec![bulk("message"), bulk("c"), bulk("self")])]
    );
    assert_eq!(sub.read_frame(), int(1));
}

#[test]
fn sharded_channels() {
    let s = TestServer::start();
    let mut sub = s.raw();
    let mut publ = s.raw();
    sub.send(&["SSUBSCRIBE", "sc"]);
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("ssubscribe"), bulk("sc"), int(1)])
    );
    assert_eq!(publ.call(&["PUBLISH", "sc", "x"]), int(0));
    assert_eq!(publ.call(&["SPUBLISH", "sc", "y"]), int(1));
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("smessage"), bulk("sc"), bulk("y")])
    );
    assert_eq!(
        publ.call(&["PUBSUB", "SHARDCHANNELS"]),
        arr(vec![bulk("sc")])
    );
    assert_eq!(
        publ.call(&["PUBSUB", "SHARDNUMSUB", "sc"]),
        arr(vec![bulk("sc"), int(1)])
    );
    assert_eq!(publ.call(&["PUBSUB", "CHANNELS"]), arr(vec![]));
    sub.send(&["SUNSUBSCRIBE"]);
    assert_eq!(
        sub.read_frame(),
        arr(vec![bulk("sunsubscribe"), bulk("sc"), int(0)])
    );
}

#[test]
fn pubsub_channels_pattern_and_errors() {
    let s = TestServer::start();
    let mut sub = s.raw();
    let mut c = s.raw();
    sub.send(&["SUBSCRIBE", "alpha", "beta"]);
    sub.read_frame();
    sub.read_frame();
    assert_eq!(
        c.call(&["PUBSUB", "CHANNELS", "a*"]),
        arr(vec![bulk("alpha")])
    );
    assert_eq!(
        c.call(&["PUBSUB", "NOPE"]),
        error("ERR unknown subcommand 'NOPE'. Try PUBSUB HELP.")
    );
    // The subcommand as the client spelled it.
    assert_eq!(
        c.call(&["PUBSUB", "Channels", "a", "b"]),
        error(
            "ERR unknown subcommand or wrong number of arguments for 'Channels'. Try PUBSUB HELP."
        )
    );
    assert_eq!(
        c.call(&["PUBSUB", "ShardChannels", "a", "b"]),
        error("ERR unknown subcommand or wrong number of arguments for 'ShardChannels'. Try PUBSUB HELP.")
    );
    assert_eq!(
        c.call(&["SUBSCRIBE"]),
        error("ERR wrong number of arguments for 'subscribe' command")
    );
    assert!(matches!(c.call(&["PUBSUB", "HELP"]), Frame::Array(v) if v.len() == 14));
}

#[test]
fn slow_subscriber_is_disconnected_at_the_hard_limit() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "pubsub 64kb 0 0",
    ]);
    let mut sub = s.raw();
    sub.send(&["SUBSCRIBE", "flood"]);
    sub.read_frame();
    // The subscriber never reads; messages pile up until it is cut off.
    let payload = "x".repeat(16 * 1024);
    let mut delivered_to_none = false;
    for _ in 0..2000 {
        if c.call(&["PUBLISH", "flood", &payload]) == int(0) {
            delivered_to_none = true;
            break;
        }
    }
    assert!(
        delivered_to_none,
        "the slow subscriber was never disconnected"
    );
}

#[test]
fn client_kill_and_list_by_type_pubsub() {
    let s = TestServer::start();
    let mut sub = s.raw();
    sub.send(&["SUBSCRIBE", "kch"]);
    sub.read_frame();
    let mut c = s.raw();
    let Frame::Bulk(list) = c.call(&["CLIENT", "LIST", "TYPE", "pubsub"]) else {
        panic!("CLIENT LIST")
    };
    assert_eq!(String::from_utf8_lossy(&list).lines().count(), 1);
    let Frame::Bulk(normal) = c.call(&["CLIENT", "LIST", "TYPE", "normal"]) else {
        panic!("CLIENT LIST")
    };
    assert!(!String::from_utf8_lossy(&normal).contains("sub=1"));
    assert_eq!(
        c.call(&["CLIENT", "KILL", "SKIPME", "yes", "TYPE", "pubsub"]),
        int(1)
    );
    sub.expect_closed();
}

/// A script publishing to a channel its own (RESP3) client subscribes to: the client gets the
/// message before the script's reply, and the script gets the receiver count, as in Redis.
#[test]
fn a_script_publishing_to_its_own_client() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert!(matches!(c.call(&["HELLO", "3"]), Frame::Map(_)));
    c.call(&["SUBSCRIBE", "sc"]);
    c.call(&["PSUBSCRIBE", "s*"]);
    c.call(&["SSUBSCRIBE", "shard"]);
    c.send(&[
        "EVAL",
        "local n = redis.call('publish', 'sc', 'a') \
         local m = redis.call('spublish', 'shard', 'b') \
         return {type(n), n, m}",
        "0",
    ]);
    assert_eq!(
        c.read_frame(),
        Frame::Push(vec![bulk("message"), bulk("sc"), bulk("a")])
    );
    assert_eq!(
        c.read_frame(),
        Frame::Push(vec![bulk("pmessage"), bulk("s*"), bulk("sc"), bulk("a")])
    );
    assert_eq!(
        c.read_frame(),
        Frame::Push(vec![bulk("smessage"), bulk("shard"), bulk("b")])
    );
    assert_eq!(c.read_frame(), arr(vec![bulk("number"), int(2), int(1)]));
}

/// Redis's "PUBLISH/SUBSCRIBE after UNSUBSCRIBE without arguments": the subscriber's bare
/// UNSUBSCRIBE is sent, its replies not read, then another client publishes. Redis runs the
/// UNSUBSCRIBE first (it was sent first); with the two clients on different threads, the PUBLISH
/// waits for its receivers' commands in flight, so it counts 0 too. Many rounds, on several
/// threads, patterns included.
#[test]
fn publish_after_an_unread_bare_unsubscribe_counts_no_one() {
    let s = TestServer::start_with(&["--io-threads", "4"]);
    let mut publ = s.raw();
    for round in 0..150 {
        let mut sub = s.raw();
        let (subscribe, unsubscribe, channel) = if round % 3 == 2 {
            ("PSUBSCRIBE", "PUNSUBSCRIBE", "chan*")
        } else {
            ("SUBSCRIBE", "UNSUBSCRIBE", "chan1")
        };
        sub.send(&[subscribe, channel, "other"]);
        sub.read_frame();
        sub.read_frame();
        sub.send(&[unsubscribe]);
        assert_eq!(
            publ.call(&["PUBLISH", "chan1", "hello"]),
            int(0),
            "round {round}: the {unsubscribe} sent first did not run first"
        );
        // Its replies arrive all the same, and nothing else.
        sub.read_frame();
        sub.read_frame();
        assert_eq!(sub.call(&["PING"]), simple("PONG"));
    }
}

/// Past the soft output limit, a subscriber that does not read is disconnected once the limit's
/// seconds pass, even when no more messages come to trigger the check (Redis's clientsCron).
#[test]
fn a_slow_subscriber_over_the_soft_limit_goes_without_more_traffic() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 0 100000 1",
        ]),
        simple("OK")
    );
    let mut sub = s.raw();
    assert_eq!(sub.call(&["CLIENT", "SETNAME", "slow-sub"]), simple("OK"));
    sub.send(&["SUBSCRIBE", "foo"]);
    sub.read_frame();
    let listed = |c: &mut common::RawClient| -> Option<u64> {
        let Frame::Bulk(list) = c.call(&["CLIENT", "LIST"]) else {
            panic!("CLIENT LIST")
        };
        let list = String::from_utf8_lossy(&list).into_owned();
        let line = list
            .lines()
            .find(|l| l.contains("name=slow-sub"))?
            .to_string();
        line.split(' ')
            .find_map(|f| f.strip_prefix("omem="))
            .and_then(|v| v.parse().ok())
    };
    // Publish until the unread messages stand over the soft limit in the server (the socket
    // buffers take the first ones), then stop.
    let message = "x".repeat(1000);
    let mut over = false;
    for _ in 0..200_000 {
        c.call(&["PUBLISH", "foo", &message]);
        match listed(&mut c) {
            Some(omem) if omem > 100_000 => {
                over = true;
                break;
            }
            Some(_) => {}
            // (Cut off while still publishing: the limit's time passed with the traffic, on a
            // slow machine.)
            None => return,
        }
    }
    assert!(over, "the subscriber's output never reached the soft limit");
    assert!(
        common::wait_until(std::time::Duration::from_secs(30), || listed(&mut c)
            .is_none()),
        "the subscriber was not disconnected without traffic"
    );
}
