//! The Lua libraries Redis embeds (cjson, cmsgpack, bit, struct) through EVAL:
//! the same case table the unit tests in crates/tessera/src/scripting/libs
//! run on a bare Lua state, here run by the server. Expected replies are
//! redis-server 7.0.15's (regenerate with libs/gen_tests.py).

mod common;

use common::{Frame, TestServer};

#[allow(dead_code)]
#[rustfmt::skip]
#[path = "../crates/tessera/src/scripting/libs/tests_cases.rs"]
mod cases;

#[test]
fn lua_libs_match_redis_server() {
    let s = TestServer::start();
    let mut c = s.raw();
    let mut failures = Vec::new();
    for (body, expected) in cases::CASES {
        // cjson settings persist in the Lua state across scripts, as in Redis.
        let reset = c.call(&["EVAL", cases::RESET, "0"]);
        assert_eq!(reset, Frame::NullBulk, "reset script failed");
        let script = format!(
            "{}\n{}\nreturn show(pcall(function() {} end))",
            cases::PRELUDE1,
            cases::PRELUDE2,
            body
        );
        let got = match c.call(&["EVAL", script.as_str(), "0"]) {
            Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => format!("{other:?}"),
        };
        if got != *expected {
            failures.push(format!(
                "script:   {body}\nexpected: {expected}\ngot:      {got}\n"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from redis-server 7.0:\n{}",
        failures.len(),
        cases::CASES.len(),
        failures.join("\n")
    );
}
