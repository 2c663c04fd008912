//! maxmemory-clients: past the limit, the clients using the most memory are disconnected
//! (CLIENT NO-EVICT ones never), INFO counts them in `evicted_clients`. Passes against
//! redis-server too (`TESSERA_TEST_TARGET=redis`).

mod common;

use std::time::Duration;

use common::{bulk, simple, wait_until, Frame, RawClient, TestServer};

fn info_field(c: &mut RawClient, name: &str) -> String {
    let Frame::Bulk(info) = c.call(&["INFO", "stats"]) else {
        panic!("INFO")
    };
    let info = String::from_utf8_lossy(&info).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")).map(String::from))
        .unwrap_or_else(|| panic!("no {name} in INFO"))
}

/// A client holding about 1.5 MB in its query buffer: the start of a 2 MB argument.
fn big_query_buffer(s: &TestServer) -> RawClient {
    let mut c = s.raw();
    let mut partial = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n".to_vec();
    partial.extend(std::iter::repeat_n(b'x', 1_500_000));
    // (Redis may evict it before the write is done.)
    let _ = c.try_send_raw(&partial);
    c
}

#[test]
fn the_client_using_the_most_memory_is_evicted() {
    let s = TestServer::start_with(&["--maxmemory-clients", "1mb"]);
    let mut small = s.raw();
    assert_eq!(
        small.call(&["CONFIG", "GET", "maxmemory-clients"]),
        Frame::Array(vec![bulk("maxmemory-clients"), bulk("1048576")])
    );
    let mut big = big_query_buffer(&s);
    assert!(
        wait_until(Duration::from_secs(10), || {
            small.call(&["PING"]) == simple("PONG")
                && info_field(&mut small, "evicted_clients") == "1"
        }),
        "the big client was not evicted"
    );
    big.expect_closed();
    assert_eq!(small.call(&["PING"]), simple("PONG"));
    // CONFIG RESETSTAT clears the count.
    assert_eq!(small.call(&["CONFIG", "RESETSTAT"]), simple("OK"));
    assert_eq!(info_field(&mut small, "evicted_clients"), "0");
}

#[test]
fn no_evict_clients_and_a_disabled_limit_keep_everyone() {
    let s = TestServer::start_with(&["--maxmemory-clients", "1mb"]);
    // (While the total stays over the limit every evictable client goes, the smallest too.)
    let mut small = s.raw();
    assert_eq!(small.call(&["CLIENT", "NO-EVICT", "on"]), simple("OK"));
    let mut protected = s.raw();
    assert_eq!(protected.call(&["CLIENT", "NO-EVICT", "on"]), simple("OK"));
    let mut partial = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n".to_vec();
    partial.extend(std::iter::repeat_n(b'x', 1_500_000));
    protected.send_raw(&partial);
    for _ in 0..10 {
        assert_eq!(small.call(&["PING"]), simple("PONG"));
        std::thread::sleep(Duration::from_millis(30));
    }
    assert_eq!(info_field(&mut small, "evicted_clients"), "0");
    // Finishing the argument finishes the command.
    protected.send_raw(&vec![b'x'; 500_000]);
    protected.send_raw(b"\r\n");
    assert_eq!(protected.read_frame(), simple("OK"));

    // With the limit off nobody is evicted.
    assert_eq!(
        small.call(&["CONFIG", "SET", "maxmemory-clients", "0"]),
        simple("OK")
    );
    let big = big_query_buffer(&s);
    for _ in 0..10 {
        assert_eq!(small.call(&["PING"]), simple("PONG"));
        std::thread::sleep(Duration::from_millis(30));
    }
    assert_eq!(info_field(&mut small, "evicted_clients"), "0");
    let Frame::Bulk(list) = small.call(&["CLIENT", "LIST"]) else {
        panic!("CLIENT LIST")
    };
    assert_eq!(
        String::from_utf8_lossy(&list).lines().count(),
        3,
        "small, protected and big"
    );
    drop(big);
}

#[test]
fn a_subscriber_that_does_not_read_is_evicted_for_its_output() {
    let s = TestServer::start_with(&["--maxmemory-clients", "1mb"]);
    let mut publisher = s.raw();
    assert_eq!(publisher.call(&["CLIENT", "NO-EVICT", "on"]), simple("OK"));
    let mut subscriber = s.raw();
    let confirm = subscriber.call(&["SUBSCRIBE", "ch"]);
    assert!(matches!(confirm, Frame::Array(_)));
    let message = "m".repeat(50_000);
    let mut evicted = false;
    for _ in 0..200 {
        publisher.call(&["PUBLISH", "ch", &message]);
        if info_field(&mut publisher, "evicted_clients") == "1" {
            evicted = true;
            break;
        }
    }
    if !evicted {
        evicted = wait_until(Duration::from_secs(10), || {
            info_field(&mut publisher, "evicted_clients") == "1"
        });
    }
    assert!(evicted, "the subscriber was not evicted");
    // (Its subscription goes once its connection is closed.)
    assert!(wait_until(Duration::from_secs(10), || {
        publisher.call(&["PUBLISH", "ch", "x"]) == Frame::Integer(0)
    }));
}

/// A client that watches or subscribes without end is evicted, as Redis counts each watched
/// key, pattern and channel in a client's memory.
#[test]
fn watched_keys_and_subscriptions_count_in_a_clients_memory() {
    let s = TestServer::start_with(&["--maxmemory-clients", "200000"]);
    let mut control = s.raw();
    assert_eq!(control.call(&["CLIENT", "NO-EVICT", "on"]), simple("OK"));
    for (n, command) in ["WATCH", "PSUBSCRIBE", "SUBSCRIBE", "SSUBSCRIBE"]
        .into_iter()
        .enumerate()
    {
        let mut c = s.raw();
        let evicted = (0..200_000).any(|j| c.try_call(&[command, &j.to_string()]).is_none());
        assert!(evicted, "{command}: never evicted");
        assert_eq!(
            info_field(&mut control, "evicted_clients"),
            (n + 1).to_string(),
            "{command}"
        );
    }
}
