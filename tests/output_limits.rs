//! client-output-buffer-limit for the normal class: a reply that would push a normal client's
//! output over the hard limit disconnects it, as redis-server 7.0 does.

mod common;

use common::{simple, TestServer};

#[test]
fn normal_client_over_the_hard_limit_is_disconnected() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let big = "x".repeat(2 * 1024 * 1024);
    assert_eq!(admin.call(&["SET", "big", &big]), simple("OK"));
    assert_eq!(
        admin.call(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 1mb 0 0"
        ]),
        simple("OK")
    );
    let mut c = s.raw();
    c.send(&["GET", "big"]);
    c.expect_closed();
    // Small replies still go through.
    let mut d = s.raw();
    assert_eq!(d.call(&["PING"]), simple("PONG"));
    admin.call(&[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "normal 0 0 0",
    ]);
    let mut e = s.raw();
    assert!(matches!(e.call(&["GET", "big"]), common::Frame::Bulk(b) if b.len() == big.len()));
}
