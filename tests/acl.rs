//! ACL users and AUTH: ACL SETUSER's rules and their description (GETUSER, LIST), every ACL
//! subcommand, AUTH and HELLO AUTH as users, the NOPERM checks (commands, subcommands, first
//! arguments, keys by read/write access, channels, selectors) from a client, inside MULTI/EXEC and
//! from scripts, the ACL LOG, `user` lines, the ACL file (LOAD, SAVE), and requirepass as the
//! default user's password. Expected values are what redis-server 7.0.15 replies; every test passes
//! against it too (`TESSERA_TEST_TARGET=redis`).
//!
//! Redis lists the single commands of a rule description (`+get -hdel`, after the categories) in
//! its command dictionary's hash order, which changes from run to run: those descriptions are
//! compared as sets of rules.

mod common;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{
    bulk, bulks, error, fmt_frame, free_port, refused_start, simple, wait_until, Frame, RawClient,
    ServerKind, TestServer,
};

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

fn text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) | Frame::Error(b) => String::from_utf8_lossy(b).into(),
        other => panic!("expected a string, got {}", fmt_frame(other)),
    }
}

/// A rule description as a set of rules.
fn rules(s: &str) -> BTreeSet<String> {
    s.split(' ').map(String::from).collect()
}

fn lines(f: Frame) -> Vec<String> {
    match f {
        Frame::Array(items) => items.iter().map(text).collect(),
        other => panic!("expected an array, got {}", fmt_frame(&other)),
    }
}

/// ACL GETUSER as (field, value) pairs.
fn getuser(c: &mut RawClient, name: &str) -> Vec<(String, Frame)> {
    match c.call(&["ACL", "GETUSER", name]) {
        Frame::Array(items) => items
            .chunks(2)
            .map(|p| (text(&p[0]), p[1].clone()))
            .collect(),
        other => panic!("ACL GETUSER {name}: {}", fmt_frame(&other)),
    }
}

fn field(user: &[(String, Frame)], name: &str) -> Frame {
    user.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no {name} field"))
}

fn setuser(c: &mut RawClient, args: &[&str]) {
    let mut cmd = vec!["ACL", "SETUSER"];
    cmd.extend_from_slice(args);
    assert_eq!(c.call(&cmd), simple("OK"), "ACL SETUSER {args:?}");
}

/// A connection logged in as `user` (password `pw`).
fn login(s: &TestServer, user: &str) -> RawClient {
    let mut c = s.raw();
    assert_eq!(c.call(&["AUTH", user, "pw"]), simple("OK"), "AUTH {user}");
    c
}

#[test]
fn default_user_and_new_users_are_described_as_redis_does() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&["ACL", "LIST"]),
        bulks(&["user default on nopass ~* &* +@all"])
    );
    let default = getuser(&mut c, "default");
    assert_eq!(field(&default, "flags"), bulks(&["on", "nopass"]));
    assert_eq!(field(&default, "passwords"), Frame::Array(vec![]));
    assert_eq!(field(&default, "commands"), bulk("+@all"));
    assert_eq!(field(&default, "keys"), bulk("~*"));
    assert_eq!(field(&default, "channels"), bulk("&*"));
    assert_eq!(field(&default, "selectors"), Frame::Array(vec![]));

    setuser(&mut c, &["bob"]);
    let bob = getuser(&mut c, "bob");
    assert_eq!(field(&bob, "flags"), bulks(&["off"]));
    assert_eq!(field(&bob, "commands"), bulk("-@all"));
    assert_eq!(field(&bob, "keys"), bulk(""));
    assert_eq!(field(&bob, "channels"), bulk(""));
    assert_eq!(c.call(&["ACL", "GETUSER", "nosuch"]), Frame::NullBulk);
    assert_eq!(c.call(&["ACL", "USERS"]), bulks(&["bob", "default"]));
    assert_eq!(
        lines(c.call(&["ACL", "LIST"])),
        vec![
            "user bob off resetchannels -@all".to_string(),
            "user default on nopass ~* &* +@all".to_string()
        ]
    );
}

#[test]
fn rules_are_described_back_as_rules() {
    let s = TestServer::start();
    let mut c = s.raw();
    setuser(
        &mut c,
        &[
            "alice",
            "on",
            ">p1",
            "~foo*",
            "%R~bar*",
            "%W~w*",
            "%RW~b*",
            "&ch*",
            "+get",
            "+@hash",
            "-hdel",
            "+config|get",
            "+client|id",
            "+select|0",
            "(+set",
            "~x*)",
        ],
    );
    let list = lines(c.call(&["ACL", "LIST"]));
    let line = list.iter().find(|l| l.starts_with("user alice ")).unwrap();
    let (root, selector) = line.split_once(" (").unwrap();
    assert_eq!(selector, "~x* resetchannels -@all +set)");
    // The hash of "p1", the patterns in order (%RW~ shown as ~), then the channels.
    assert!(
        root.starts_with("user alice on #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~foo* %R~bar* %W~w* ~b* resetchannels &ch* -@all +@hash "),
        "{root}"
    );
    let alice = getuser(&mut c, "alice");
    assert_eq!(
        rules(&text(&field(&alice, "commands"))),
        rules("-@all +@hash +get -hdel +config|get +client|id +select|0")
    );
    assert_eq!(field(&alice, "keys"), bulk("~foo* %R~bar* %W~w* ~b*"));
    assert_eq!(field(&alice, "channels"), bulk("&ch*"));
    let Frame::Array(selectors) = field(&alice, "selectors") else {
        panic!("selectors")
    };
    assert_eq!(
        selectors,
        vec![Frame::Array(vec![
            bulk("commands"),
            bulk("-@all +set"),
            bulk("keys"),
            bulk("~x*"),
            bulk("channels"),
            bulk(""),
        ])]
    );

    // The categories that fit best come first, then the single commands.
    for (given, described) in [
        ("+@sortedset +@string", "-@all +@sortedset +@string"),
        ("+@read +@write", "-@all +@write +@read"),
        (
            "+@sortedset +@string -@dangerous",
            "-@all +@string +@sortedset -sort -sort_ro",
        ),
        ("+@all -@hash -get +config|set", "+@all -@hash -get"),
        ("nocommands allcommands", "+@all"),
        ("+config -config|get", "-@all +config -config|get"),
    ] {
        let mut args = vec!["t", "reset"];
        args.extend(given.split(' '));
        setuser(&mut c, &args);
        let t = getuser(&mut c, "t");
        let got = text(&field(&t, "commands"));
        let categories = |s: &str| {
            s.split(' ')
                .filter(|r| r.contains('@'))
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(categories(&got), categories(described), "{given}: {got}");
        assert_eq!(rules(&got), rules(described), "{given}: {got}");
        assert_eq!(
            field(&t, "flags"),
            bulks(&["off", "sanitize-payload"]),
            "{given}"
        );
    }
}

#[test]
fn a_description_applied_again_gives_the_same_user() {
    let s = TestServer::start();
    let mut c = s.raw();
    setuser(
        &mut c,
        &[
            "u",
            "on",
            ">a",
            ">b",
            "<a",
            "~k1",
            "%W~w*",
            "&c1",
            "+@read",
            "+@write",
            "-@dangerous",
            "+lolwut",
            "-xinfo|help",
            "+debug|object",
            "(%R~t*",
            "+@read",
            "-keys)",
        ],
    );
    let first = lines(c.call(&["ACL", "LIST"]));
    let line = first
        .iter()
        .find(|l| l.starts_with("user u "))
        .unwrap()
        .clone();
    let args: Vec<&str> = line.split(' ').skip(2).collect();
    let mut cmd = vec!["ACL", "SETUSER", "copy", "reset"];
    cmd.extend(args.iter().copied());
    assert_eq!(c.call(&cmd), simple("OK"));
    let again = lines(c.call(&["ACL", "LIST"]));
    let copy = again.iter().find(|l| l.starts_with("user copy ")).unwrap();
    let strip = |l: &str| {
        l.split_once(' ')
            .unwrap()
            .1
            .split_once(' ')
            .unwrap()
            .1
            .to_string()
    };
    // ("reset" adds sanitize-payload.)
    assert_eq!(
        rules(&strip(copy).replace(" sanitize-payload", "")),
        rules(&strip(&line))
    );
}

#[test]
fn setuser_errors_are_worded_as_redis_and_change_nothing() {
    let s = TestServer::start();
    let mut c = s.raw();
    for (rule, message) in [
        ("-get|x", "Unknown command or category name in ACL"),
        ("-select|0", "Unknown command or category name in ACL"),
        (
            "+config|get|x",
            "Allowing first-arg of a subcommand is not supported",
        ),
        ("+config|foo", "Unknown command or category name in ACL"),
        ("+nosuch", "Unknown command or category name in ACL"),
        ("+@nosuch", "Unknown command or category name in ACL"),
        ("bogus", "Syntax error"),
        ("(bogus)", "Syntax error"),
        ("%X~foo", "Syntax error"),
        ("%~foo", "Syntax error"),
        ("%RR~foo", "Syntax error"),
        ("+get|", "Syntax error"),
        (
            "#abc",
            "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
        ),
        (
            "!abc",
            "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
        ),
        (
            "<nothere",
            "The password you are trying to remove from the user does not exist",
        ),
    ] {
        assert_eq!(
            c.call(&["ACL", "SETUSER", "u1", "on", rule]),
            error(&format!(
                "ERR Error in ACL SETUSER modifier '{rule}': {message}"
            )),
            "{rule}"
        );
    }
    // All or nothing: the failed calls created no user.
    assert_eq!(c.call(&["ACL", "GETUSER", "u1"]), Frame::NullBulk);
    assert_eq!(
        c.call(&["ACL", "SETUSER", "u1", "allkeys", "~foo"]),
        error("ERR Error in ACL SETUSER modifier '~foo': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
    );
    assert_eq!(
        c.call(&["ACL", "SETUSER", "u1", "allchannels", "&foo"]),
        error("ERR Error in ACL SETUSER modifier '&foo': Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
    );
    assert_eq!(
        c.call(&["ACL", "SETUSER", "u1", "(+get", "~x"]),
        error("ERR Unmatched parenthesis in acl selector starting at '(+get'.")
    );
    assert_eq!(
        c.call(&["ACL", "SETUSER", "a b", "on"]),
        error("ERR Usernames can't contain spaces or null characters")
    );
    setuser(&mut c, &["u2", "on", "+get"]);
    assert!(matches!(
        c.call(&["ACL", "SETUSER", "u2", "+set", "bogus"]),
        Frame::Error(_)
    ));
    assert_eq!(
        field(&getuser(&mut c, "u2"), "commands"),
        bulk("-@all +get")
    );
    // An empty pattern after %R~ is a pattern.
    setuser(&mut c, &["u2", "%R~"]);
    assert_eq!(field(&getuser(&mut c, "u2"), "keys"), bulk("%R~"));
}

#[test]
fn acl_subcommands_reply_as_redis() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&["ACL", "DELUSER", "default"]),
        error("ERR The 'default' user cannot be removed")
    );
    assert_eq!(c.call(&["ACL", "DELUSER", "nosuch"]), Frame::Integer(0));
    assert_eq!(c.call(&["ACL", "WHOAMI"]), bulk("default"));
    let pass = text(&c.call(&["ACL", "GENPASS"]));
    assert_eq!(pass.len(), 64);
    assert!(pass.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(text(&c.call(&["ACL", "GENPASS", "5"])).len(), 2);
    assert_eq!(text(&c.call(&["ACL", "GENPASS", "4096"])).len(), 1024);
    for bad in ["0", "5000", "-1"] {
        assert_eq!(
            c.call(&["ACL", "GENPASS", bad]),
            error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
        );
    }
    assert_eq!(
        c.call(&["ACL", "GENPASS", "abc"]),
        error("ERR value is not an integer or out of range")
    );
    let cats = lines(c.call(&["ACL", "CAT"]));
    assert_eq!(cats.len(), 21);
    assert_eq!(cats[0], "keyspace");
    assert_eq!(cats[20], "scripting");
    let hash: BTreeSet<String> = lines(c.call(&["ACL", "CAT", "HASH"])).into_iter().collect();
    assert!(hash.contains("hset") && hash.contains("hgetall") && !hash.contains("get"));
    let admin: BTreeSet<String> = lines(c.call(&["ACL", "CAT", "admin"]))
        .into_iter()
        .collect();
    assert!(admin.contains("config|set") && admin.contains("acl|setuser"));
    assert_eq!(
        c.call(&["ACL", "CAT", "nosuch"]),
        error("ERR Unknown category 'nosuch'")
    );
    let help = lines(c.call(&["ACL", "HELP"]));
    assert_eq!(
        help[0],
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    );
    assert_eq!(help.last().unwrap(), "    Prints this help.");
    assert_eq!(
        c.call(&["ACL", "FOO"]),
        error("ERR unknown subcommand 'FOO'. Try ACL HELP.")
    );
    assert_eq!(
        c.call(&["ACL"]),
        error("ERR wrong number of arguments for 'acl' command")
    );
    let no_file = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";
    assert_eq!(c.call(&["ACL", "SAVE"]), error(no_file));
    assert_eq!(c.call(&["ACL", "LOAD"]), error(no_file));
    assert_eq!(
        c.call(&["ACL", "LOG", "foo"]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(
        c.call(&["ACL", "LOG", "reset", "x"]),
        error("ERR unknown subcommand or wrong number of arguments for 'LOG'. Try ACL HELP.")
    );
}

#[test]
fn dryrun_says_what_a_user_may_do() {
    let s = TestServer::start();
    let mut c = s.raw();
    setuser(
        &mut c,
        &[
            "u3",
            "on",
            "nopass",
            "+get",
            "+publish",
            "+config|get",
            "~k*",
            "&c*",
        ],
    );
    for (cmd, reply) in [
        (
            &["get", "x"][..],
            bulk("This user has no permissions to access the 'x' key"),
        ),
        (&["get", "k1"][..], simple("OK")),
        (
            &["set", "k1", "v"][..],
            bulk("This user has no permissions to run the 'set' command"),
        ),
        (&["publish", "c1", "m"][..], simple("OK")),
        (
            &["publish", "d1", "m"][..],
            bulk("This user has no permissions to access the 'd1' channel"),
        ),
        (&["config", "get", "port"][..], simple("OK")),
        (
            &["config", "set", "port", "1"][..],
            bulk("This user has no permissions to run the 'config|set' command"),
        ),
        (
            &["get", "a", "b"][..],
            error("ERR wrong number of arguments for 'get' command"),
        ),
        (
            &["nosuch", "a"][..],
            error("ERR Command 'nosuch' not found"),
        ),
    ] {
        let mut args = vec!["ACL", "DRYRUN", "u3"];
        args.extend_from_slice(cmd);
        assert_eq!(c.call(&args), reply, "{cmd:?}");
    }
    assert_eq!(
        c.call(&["ACL", "DRYRUN", "nosuch", "get", "x"]),
        error("ERR User 'nosuch' not found")
    );
}

#[test]
fn auth_and_hello_log_in_as_users() {
    let s = TestServer::start();
    let mut admin = s.raw();
    setuser(&mut admin, &["u5", "on", ">pw", "allkeys", "+@all"]);
    setuser(&mut admin, &["off5", "off", ">pw", "allkeys", "+@all"]);
    setuser(&mut admin, &["free", "on", "nopass", "allkeys", "+@all"]);
    let mut c = s.raw();
    assert_eq!(c.call(&["AUTH", "u5", "wrong"]), error(WRONGPASS));
    assert_eq!(c.call(&["AUTH", "nosuch", "pw"]), error(WRONGPASS));
    assert_eq!(c.call(&["AUTH", "off5", "pw"]), error(WRONGPASS));
    assert_eq!(c.call(&["ACL", "WHOAMI"]), bulk("default"));
    assert_eq!(c.call(&["AUTH", "u5", "pw"]), simple("OK"));
    assert_eq!(c.call(&["ACL", "WHOAMI"]), bulk("u5"));
    let info = text(&c.call(&["CLIENT", "INFO"]));
    assert!(info.contains(" user=u5 "), "{info}");
    assert_eq!(c.call(&["AUTH", "free", "anything"]), simple("OK"));
    assert_eq!(c.call(&["ACL", "WHOAMI"]), bulk("free"));
    assert_eq!(
        c.call(&["AUTH", "x"]),
        error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
    );
    assert_eq!(c.call(&["AUTH", "a", "b", "c"]), error("ERR syntax error"));
    assert_eq!(
        c.call(&["HELLO", "3", "AUTH", "u5", "bad"]),
        error(WRONGPASS)
    );
    let hello = c.call(&["HELLO", "2", "AUTH", "u5", "pw"]);
    assert!(matches!(hello, Frame::Array(_)), "{}", fmt_frame(&hello));
    assert_eq!(c.call(&["ACL", "WHOAMI"]), bulk("u5"));
    // RESET logs back in as the default user.
    assert_eq!(c.call(&["RESET"]), simple("RESET"));
    assert_eq!(c.call(&["ACL", "WHOAMI"]), bulk("default"));
    assert_eq!(
        admin.call(&["CLIENT", "KILL", "USER", "nosuch"]),
        error("ERR No such user 'nosuch'")
    );
    let mut victim = login(&s, "u5");
    assert_eq!(
        admin.call(&["CLIENT", "KILL", "USER", "u5"]),
        Frame::Integer(1)
    );
    victim.expect_closed();
}

#[test]
fn the_default_user_password_is_requirepass() {
    let s = TestServer::start_with(&["--requirepass", "s3cret"]);
    let mut c = s.raw();
    assert_eq!(
        c.call(&["GET", "k"]),
        error("NOAUTH Authentication required.")
    );
    assert_eq!(c.call(&["AUTH", "default", "s3cret"]), simple("OK"));
    let default = getuser(&mut c, "default");
    assert_eq!(field(&default, "flags"), bulks(&["on"]));
    assert_eq!(
        field(&default, "passwords"),
        Frame::Array(vec![bulk(sha256_hex(b"s3cret"))])
    );
    // CONFIG SET requirepass replaces the password; "" means no password.
    assert_eq!(
        c.call(&["CONFIG", "SET", "requirepass", "other"]),
        simple("OK")
    );
    let mut d = s.raw();
    assert_eq!(d.call(&["AUTH", "s3cret"]), error(WRONGPASS));
    assert_eq!(d.call(&["AUTH", "other"]), simple("OK"));
    assert_eq!(c.call(&["CONFIG", "SET", "requirepass", ""]), simple("OK"));
    let mut e = s.raw();
    assert_eq!(e.call(&["PING"]), simple("PONG"));
    assert_eq!(
        field(&getuser(&mut e, "default"), "flags"),
        bulks(&["on", "nopass"])
    );
    // Taking the default user's nopass away makes new connections log in.
    setuser(&mut e, &["default", "resetpass", ">pw"]);
    let mut f = s.raw();
    assert_eq!(f.call(&["PING"]), error("NOAUTH Authentication required."));
    assert_eq!(f.call(&["AUTH", "pw"]), simple("OK"));
    // Existing connections stay logged in.
    assert_eq!(e.call(&["PING"]), simple("PONG"));
}

fn sha256_hex(data: &[u8]) -> String {
    let out = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(data)?;
            child.wait_with_output()
        })
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn commands_subcommands_and_first_args_are_checked() {
    let s = TestServer::start();
    let mut admin = s.raw();
    setuser(
        &mut admin,
        &[
            "u",
            "on",
            ">pw",
            "allkeys",
            "allchannels",
            "+get",
            "+set",
            "+client",
            "-client|kill",
            "+select|0",
            "+config|get",
        ],
    );
    let mut c = login(&s, "u");
    assert_eq!(c.call(&["SET", "k", "v"]), simple("OK"));
    assert_eq!(c.call(&["GET", "k"]), bulk("v"));
    assert_eq!(
        c.call(&["HGET", "k", "f"]),
        error("NOPERM this user has no permissions to run the 'hget' command")
    );
    assert_eq!(
        c.call(&["CLIENT", "KILL", "ID", "1"]),
        error("NOPERM this user has no permissions to run the 'client|kill' command")
    );
    assert!(matches!(c.call(&["CLIENT", "ID"]), Frame::Integer(_)));
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory", "0"]),
        error("NOPERM this user has no permissions to run the 'config|set' command")
    );
    assert_eq!(c.call(&["SELECT", "0"]), simple("OK"));
    assert_eq!(
        c.call(&["SELECT", "1"]),
        error("NOPERM this user has no permissions to run the 'select' command")
    );
    // The checks come after the arity check and the unknown-command check.
    assert_eq!(
        c.call(&["HGET", "k"]),
        error("ERR wrong number of arguments for 'hget' command")
    );
    // AUTH and HELLO need no permission.
    assert_eq!(c.call(&["AUTH", "u", "pw"]), simple("OK"));
    // Changes apply to the next command of logged-in clients.
    setuser(&mut admin, &["u", "-get"]);
    assert_eq!(
        c.call(&["GET", "k"]),
        error("NOPERM this user has no permissions to run the 'get' command")
    );
    setuser(&mut admin, &["u", "reset"]);
    assert_eq!(
        c.call(&["PING"]),
        error("NOPERM this user has no permissions to run the 'ping' command")
    );
}

#[test]
fn keys_are_checked_by_how_the_command_uses_them() {
    let s = TestServer::start();
    let mut admin = s.raw();
    setuser(
        &mut admin,
        &["u6", "on", ">pw", "%R~r*", "%W~w*", "~b*", "+@all"],
    );
    let mut c = login(&s, "u6");
    let nokey =
        error("NOPERM this user has no permissions to access one of the keys used as arguments");
    assert_eq!(c.call(&["GET", "r1"]), Frame::NullBulk);
    assert_eq!(c.call(&["GET", "w1"]), nokey);
    assert_eq!(c.call(&["SET", "w1", "v"]), simple("OK"));
    assert_eq!(c.call(&["SET", "r1", "v"]), nokey);
    assert_eq!(c.call(&["SET", "b1", "v"]), simple("OK"));
    assert_eq!(c.call(&["GET", "b1"]), bulk("v"));
    assert_eq!(c.call(&["COPY", "b1", "w2"]), Frame::Integer(1));
    assert_eq!(c.call(&["COPY", "w1", "w3"]), nokey);
    assert_eq!(c.call(&["LMOVE", "r1", "w1", "LEFT", "LEFT"]), nokey);
    // (No access flag at all: any pattern that matches will do.)
    assert_eq!(c.call(&["TYPE", "r1"]), simple("none"));
    assert_eq!(c.call(&["TYPE", "w1"]), simple("string"));
    assert_eq!(c.call(&["EXISTS", "r1", "w1"]), Frame::Integer(1));
    assert_eq!(c.call(&["DEL", "r1"]), nokey);
    assert_eq!(c.call(&["SORT", "r1", "STORE", "w9"]), Frame::Integer(0));
    assert_eq!(c.call(&["SORT", "r1", "STORE", "r2"]), nokey);
    assert_eq!(c.call(&["EVAL", "return 1", "1", "x1"]), nokey);
    assert_eq!(c.call(&["ZUNIONSTORE", "w1", "2", "r1", "w2"]), nokey);
}

#[test]
fn channels_are_checked_and_patterns_match_literally() {
    let s = TestServer::start();
    let mut admin = s.raw();
    setuser(
        &mut admin,
        &["u8", "on", ">pw", "+@all", "resetchannels", "&a*"],
    );
    let mut c = login(&s, "u8");
    let nochannel = error(
        "NOPERM this user has no permissions to access one of the channels used as arguments",
    );
    assert_eq!(c.call(&["PUBLISH", "abc", "m"]), Frame::Integer(0));
    assert_eq!(c.call(&["PUBLISH", "b", "m"]), nochannel);
    assert_eq!(c.call(&["SPUBLISH", "b", "m"]), nochannel);
    assert_eq!(c.call(&["SUBSCRIBE", "a1", "b1"]), nochannel);
    assert_eq!(c.call(&["PSUBSCRIBE", "a1*"]), nochannel);
    let f = c.call(&["PSUBSCRIBE", "a*"]);
    assert!(
        matches!(f, Frame::Array(_) | Frame::Push(_)),
        "{}",
        fmt_frame(&f)
    );
}

#[test]
fn selectors_add_permissions_and_the_most_relevant_refusal_wins() {
    let s = TestServer::start();
    let mut admin = s.raw();
    setuser(
        &mut admin,
        &[
            "sel", "on", ">pw", "+get", "~a*", "(+set", "~b*)", "(+@hash", "%R~c*)",
        ],
    );
    let mut c = login(&s, "sel");
    let nokey =
        error("NOPERM this user has no permissions to access one of the keys used as arguments");
    assert_eq!(c.call(&["GET", "a1"]), Frame::NullBulk);
    assert_eq!(c.call(&["SET", "b1", "v"]), simple("OK"));
    assert_eq!(c.call(&["SET", "a1", "v"]), nokey);
    assert_eq!(c.call(&["GET", "b1"]), nokey);
    assert_eq!(c.call(&["HGET", "c1", "f"]), Frame::NullBulk);
    assert_eq!(c.call(&["HSET", "c1", "f", "v"]), nokey);
    assert_eq!(
        c.call(&["LPUSH", "a1", "x"]),
        error("NOPERM this user has no permissions to run the 'lpush' command")
    );
    setuser(&mut admin, &["sel", "clearselectors"]);
    assert_eq!(
        c.call(&["SET", "b1", "v"]),
        error("NOPERM this user has no permissions to run the 'set' command")
    );
}

#[test]
fn transactions_are_checked_when_queued_and_again_at_exec() {
    let s = TestServer::start();
    let mut admin = s.raw();
    setuser(&mut admin, &["m1", "on", ">pw", "+@all", "~k*", "&*"]);
    let mut c = login(&s, "m1");
    assert_eq!(c.call(&["MULTI"]), simple("OK"));
    assert_eq!(
        c.call(&["GET", "x"]),
        error("NOPERM this user has no permissions to access one of the keys used as arguments")
    );
    assert_eq!(c.call(&["SET", "k1", "1"]), simple("QUEUED"));
    assert_eq!(
        c.call(&["EXEC"]),
        error("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(c.call(&["MULTI"]), simple("OK"));
    assert_eq!(c.call(&["GET", "k1"]), simple("QUEUED"));
    assert_eq!(c.call(&["PUBLISH", "x", "y"]), simple("QUEUED"));
    assert_eq!(c.call(&["SET", "k2", "v"]), simple("QUEUED"));
    assert_eq!(c.call(&["SET", "k1", "v"]), simple("QUEUED"));
    setuser(
        &mut admin,
        &["m1", "-get", "resetchannels", "resetkeys", "~k1"],
    );
    let changed = "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: ";
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Array(vec![
            error(&format!(
                "{changed}no permission to execute the command or subcommand"
            )),
            error(&format!(
                "{changed}no permission to access one of the channels used as arguments"
            )),
            error(&format!(
                "{changed}no permission to touch the specified keys"
            )),
            simple("OK"),
        ])
    );
}

#[test]
fn scripts_run_with_the_callers_permissions() {
    let s = TestServer::start();
    let mut admin = s.raw();
    setuser(
        &mut admin,
        &[
            "u5",
            "on",
            ">pw",
            "~k*",
            "&c*",
            "+get",
            "+set",
            "+eval",
            "+publish",
            "+fcall",
            "+function",
        ],
    );
    let mut c = login(&s, "u5");
    let script_error = |f: Frame| -> String {
        let t = text(&f);
        t.split(" script: ").next().unwrap().to_string()
    };
    assert_eq!(
        script_error(c.call(&["EVAL", "return redis.call('get','x')", "0"])),
        "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
    );
    assert_eq!(
        script_error(c.call(&["EVAL", "return redis.call('hget','k1','f')", "0"])),
        "ERR The user executing the script can't run this command or subcommand"
    );
    assert_eq!(
        script_error(c.call(&["EVAL", "return redis.call('publish','zz','x')", "0"])),
        "ERR The user executing the script can't publish to the channel mentioned in the command"
    );
    assert_eq!(
        c.call(&["EVAL", "return redis.pcall('get','x')", "0"]),
        error("ERR The user executing the script can't access at least one of the keys mentioned in the command arguments")
    );
    assert_eq!(
        c.call(&[
            "EVAL",
            "redis.call('set','k1','v') return redis.call('get','k1')",
            "0"
        ]),
        bulk("v")
    );
    // redis.acl_check_cmd asks without running (or logging).
    for (call, reply) in [
        ("'get','k1'", Frame::Integer(1)),
        ("'get','x'", Frame::NullBulk),
        ("'hget','k1','f'", Frame::NullBulk),
    ] {
        let script = format!("return redis.acl_check_cmd({call})");
        assert_eq!(c.call(&["EVAL", &script, "0"]), reply, "{call}");
    }
    assert!(
        text(&c.call(&["EVAL", "return redis.acl_check_cmd('nosuch')", "0"]))
            .starts_with("ERR Invalid command passed to redis.acl_check_cmd()")
    );
    // Functions too.
    let lib = "#!lua name=acllib\nredis.register_function('rd', function(keys) return redis.call('get', keys[1]) end)";
    assert_eq!(admin.call(&["FUNCTION", "LOAD", lib]), bulk("acllib"));
    assert_eq!(c.call(&["FCALL", "rd", "1", "k1"]), bulk("v"));
    assert_eq!(
        c.call(&["FCALL", "rd", "1", "x"]),
        error("NOPERM this user has no permissions to access one of the keys used as arguments")
    );
}

/// ACL LOG entries without the parts that differ from run to run (age, client-info), newest
/// first: (count, reason, context, object, username).
fn log_entries(c: &mut RawClient, count: &str) -> Vec<(i64, String, String, String, String)> {
    let Frame::Array(entries) = c.call(&["ACL", "LOG", count]) else {
        panic!("ACL LOG")
    };
    entries
        .into_iter()
        .map(|e| {
            let Frame::Array(fields) = e else {
                panic!("entry")
            };
            let names: Vec<String> = fields.iter().step_by(2).map(text).collect();
            assert_eq!(
                names,
                [
                    "count",
                    "reason",
                    "context",
                    "object",
                    "username",
                    "age-seconds",
                    "client-info"
                ]
            );
            let Frame::Integer(n) = fields[1] else {
                panic!("count")
            };
            let info = text(&fields[13]);
            assert!(info.starts_with("id="), "{info}");
            (
                n,
                text(&fields[3]),
                text(&fields[5]),
                text(&fields[7]),
                text(&fields[9]),
            )
        })
        .collect()
}

#[test]
fn the_acl_log_records_denials_as_redis_does() {
    let s = TestServer::start();
    let mut admin = s.raw();
    setuser(
        &mut admin,
        &[
            "u5", "on", ">pw", "~k*", "&c*", "+get", "+eval", "+publish", "+multi", "+exec",
        ],
    );
    assert_eq!(admin.call(&["ACL", "LOG", "RESET"]), simple("OK"));
    let mut a = s.raw();
    assert_eq!(a.call(&["AUTH", "u5", "wrong"]), error(WRONGPASS));
    assert_eq!(
        a.call(&["HELLO", "2", "AUTH", "nosuch", "x"]),
        error(WRONGPASS)
    );
    let mut c = login(&s, "u5");
    c.call(&["GET", "x"]);
    c.call(&["HGET", "k1", "f"]);
    c.call(&["PUBLISH", "d1", "x"]);
    c.call(&["EVAL", "return redis.call('get','y')", "0"]);
    c.call(&["EVAL", "return redis.pcall('get','y')", "0"]);
    c.call(&["MULTI"]);
    c.call(&["GET", "z"]);
    c.call(&["EXEC"]);
    let s5 = |v: &str| v.to_string();
    assert_eq!(
        log_entries(&mut admin, "20"),
        vec![
            (1, s5("key"), s5("multi"), s5("z"), s5("u5")),
            // A repeated denial counts up and moves to the front.
            (2, s5("key"), s5("lua"), s5("y"), s5("u5")),
            (1, s5("channel"), s5("toplevel"), s5("d1"), s5("u5")),
            (1, s5("command"), s5("toplevel"), s5("hget"), s5("u5")),
            (1, s5("key"), s5("toplevel"), s5("x"), s5("u5")),
            (1, s5("auth"), s5("toplevel"), s5("HELLO"), s5("nosuch")),
            (1, s5("auth"), s5("toplevel"), s5("AUTH"), s5("u5")),
        ]
    );
    assert_eq!(log_entries(&mut admin, "2").len(), 2);
    assert_eq!(log_entries(&mut admin, "0").len(), 0);
    assert_eq!(log_entries(&mut admin, "-1").len(), 0);
    // acllog-max-len trims it.
    assert_eq!(
        admin.call(&["CONFIG", "SET", "acllog-max-len", "3"]),
        simple("OK")
    );
    c.call(&["GET", "x2"]);
    assert_eq!(log_entries(&mut admin, "20").len(), 3);
    assert_eq!(admin.call(&["ACL", "LOG", "RESET"]), simple("OK"));
    assert_eq!(log_entries(&mut admin, "20").len(), 0);
}

#[test]
fn deleting_a_user_disconnects_its_clients_and_changing_it_does_not() {
    let s = TestServer::start();
    let mut admin = s.raw();
    setuser(&mut admin, &["k1u", "on", ">pw", "+@all", "~*"]);
    let mut c = login(&s, "k1u");
    let mut d = login(&s, "k1u");
    for change in [
        &["off"][..],
        &["resetpass"][..],
        &[">other"][..],
        &["nopass"][..],
    ] {
        let mut args = vec!["k1u"];
        args.extend_from_slice(change);
        setuser(&mut admin, &args);
        assert_eq!(c.call(&["PING"]), simple("PONG"), "{change:?}");
    }
    assert_eq!(
        admin.call(&["ACL", "DELUSER", "k1u", "nosuch"]),
        Frame::Integer(1)
    );
    c.expect_closed();
    d.expect_closed();
    assert_eq!(admin.call(&["PING"]), simple("PONG"));
}

#[test]
fn user_lines_in_the_configuration_define_users() {
    let dir = tempdir();
    let conf = dir.join("users.conf");
    std::fs::write(
        &conf,
        "user alice on >pw ~a* +@string\nuser default on >dpw ~* &* +@all\n",
    )
    .unwrap();
    let s = TestServer::start_with_config(&conf, &[]);
    let mut c = s.raw();
    assert_eq!(c.call(&["PING"]), error("NOAUTH Authentication required."));
    assert_eq!(c.call(&["AUTH", "dpw"]), simple("OK"));
    assert_eq!(c.call(&["AUTH", "alice", "pw"]), simple("OK"));
    assert_eq!(c.call(&["SET", "a1", "v"]), simple("OK"));
    assert_eq!(
        c.call(&["SET", "b1", "v"]),
        error("NOPERM this user has no permissions to access one of the keys used as arguments")
    );
    let bad = dir.join("bad.conf");
    std::fs::write(&bad, "user alice on bogus\n").unwrap();
    let out = refused_start::<&str>(bad.to_str(), &[]);
    assert!(
        out.contains("Error in user declaration 'alice': Syntax error"),
        "{out}"
    );
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tessera-acl-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_acl_file_is_loaded_saved_and_reloaded() {
    let dir = tempdir();
    let file = dir.join("users.acl");
    std::fs::write(
        &file,
        "user alice on >pw ~a* +@all\nuser default on nopass ~* &* +@all\n",
    )
    .unwrap();
    let s = TestServer::start_with(&["--aclfile", file.to_str().unwrap()]);
    let mut c = s.raw();
    assert_eq!(c.call(&["ACL", "USERS"]), bulks(&["alice", "default"]));
    let mut alice = login(&s, "alice");
    setuser(&mut c, &["bob", "on", ">pw", "+get", "~b*"]);
    assert_eq!(c.call(&["ACL", "SAVE"]), simple("OK"));
    let saved = std::fs::read_to_string(&file).unwrap();
    let saved: Vec<&str> = saved.lines().collect();
    assert_eq!(saved.len(), 3, "{saved:?}");
    assert!(saved[0].starts_with("user alice on #"), "{saved:?}");
    assert!(saved[1].starts_with("user bob on #"), "{saved:?}");
    assert_eq!(saved[2], "user default on nopass ~* &* +@all");
    // LOAD replaces every user; the replaced users' clients are disconnected.
    std::fs::write(&file, "user carol on >pw +@all ~*\n").unwrap();
    assert_eq!(c.call(&["ACL", "LOAD"]), simple("OK"));
    assert_eq!(c.call(&["ACL", "USERS"]), bulks(&["carol", "default"]));
    alice.expect_closed();
    assert_eq!(c.call(&["PING"]), simple("PONG"));
    // A file with errors changes nothing and says what is wrong.
    std::fs::write(&file, "user dave on bogus\nnotuser x\n").unwrap();
    let err = text(&c.call(&["ACL", "LOAD"]));
    assert!(err.starts_with("ERR "), "{err}");
    assert!(err.contains("users.acl:1: Syntax error. "), "{err}");
    assert!(
        err.contains("users.acl:2 should start with user keyword followed by the username. "),
        "{err}"
    );
    assert!(
        err.ends_with(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        ),
        "{err}"
    );
    std::fs::write(&file, "user e on\nuser e on\nuser h on +nosuch\n").unwrap();
    let err = text(&c.call(&["ACL", "LOAD"]));
    assert!(
        err.contains("WARNING: Duplicate user 'e' found on line 2. "),
        "{err}"
    );
    assert!(
        err.contains("users.acl:3: Error in applying operation '+nosuch': Unknown command or category name in ACL. "),
        "{err}"
    );
    assert_eq!(c.call(&["ACL", "USERS"]), bulks(&["carol", "default"]));

    let conf = dir.join("both.conf");
    std::fs::write(&conf, format!("aclfile {}\nuser x on\n", file.display())).unwrap();
    let out = refused_start::<&str>(conf.to_str(), &[]);
    assert!(out.contains("ACL file"), "{out}");
}

#[test]
fn protected_mode_lets_loopback_clients_in() {
    // Tests only reach the server over loopback: protected mode must not get in the way, with or
    // without a password.
    let s = TestServer::start_with(&["--protected-mode", "yes"]);
    let mut c = s.raw();
    assert_eq!(c.call(&["PING"]), simple("PONG"));
    assert!(wait_until(Duration::from_secs(5), || c.call(&["PING"])
        == simple("PONG")));
}

/// A client whose address is not 127.0.0.1 (here 127.0.0.2, still loopback to the kernel but not
/// local to Redis) gets the DENIED message and is closed while the default user has no
/// password; with protected mode off, or a password set, it gets in. Against both servers.
#[test]
fn protected_mode_denies_other_addresses_without_a_password() {
    use std::io::{Read, Write};
    fn first_reply(port: u16) -> String {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        let from: std::net::SocketAddr = "127.0.0.2:0".parse().expect("addr");
        sock.bind(&from.into()).expect("bind 127.0.0.2");
        let to: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        sock.connect(&to.into()).expect("connect");
        let mut s: std::net::TcpStream = sock.into();
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let _ = s.write_all(b"PING\r\n");
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
            if out.ends_with(b"\r\n") {
                break;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    for kind in [ServerKind::Tessera, ServerKind::Redis] {
        let s = TestServer::start_kind(kind, &["--protected-mode", "yes"]);
        let denied = first_reply(s.port());
        assert!(
            denied.starts_with("-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user."),
            "{kind:?}: {denied}"
        );
        let mut c = s.raw();
        assert_eq!(c.call(&["PING"]), simple("PONG"), "{kind:?}");
        assert_eq!(
            c.call(&["CONFIG", "SET", "requirepass", "pw"]),
            simple("OK")
        );
        assert!(
            first_reply(s.port()).starts_with("-NOAUTH"),
            "{kind:?}: a password lets the client in to authenticate"
        );
        assert_eq!(c.call(&["CONFIG", "SET", "requirepass", ""]), simple("OK"));
        assert!(first_reply(s.port()).starts_with("-DENIED"), "{kind:?}");
        assert_eq!(
            c.call(&["CONFIG", "SET", "protected-mode", "no"]),
            simple("OK")
        );
        assert_eq!(first_reply(s.port()), "+PONG\r\n", "{kind:?}");
    }
}

#[test]
fn config_rewrite_writes_the_users_as_user_lines() {
    let dir = tempdir();
    let conf = dir.join("rw.conf");
    std::fs::write(&conf, "user old on nopass\n").unwrap();
    let s = TestServer::start_with_config(&conf, &[]);
    let mut c = s.raw();
    setuser(&mut c, &["bob", "on", ">x", "~a*", "+get"]);
    assert_eq!(c.call(&["CONFIG", "REWRITE"]), simple("OK"));
    let text = std::fs::read_to_string(&conf).unwrap();
    let users: Vec<&str> = text.lines().filter(|l| l.starts_with("user ")).collect();
    assert_eq!(
        users,
        vec![
            format!(
                "user bob on #{} ~a* resetchannels -@all +get",
                sha256_hex(b"x")
            )
            .as_str(),
            "user default on nopass ~* &* +@all",
            "user old on nopass resetchannels -@all",
        ],
        "{text}"
    );
    // The first line is reused in place.
    assert!(text.starts_with("user bob "), "{text}");
}

#[test]
fn subscribers_lose_their_connection_when_their_channels_are_taken_away() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let subscribed = |s: &TestServer, cmd: &str, name: &str| {
        let mut c = login(s, "ps");
        assert!(matches!(c.call(&[cmd, name]), Frame::Array(_)));
        c
    };
    let reset = |admin: &mut RawClient| {
        setuser(
            admin,
            &[
                "ps",
                "reset",
                "on",
                ">pw",
                "+@all",
                "~*",
                "resetchannels",
                "&a*",
            ],
        );
    };
    // Kept: the same channels, more channels, or channels moved to a selector.
    for change in [
        &["resetchannels", "&a*"][..],
        &["allchannels"],
        &["-subscribe"],
        &["(&a* +@all)", "resetchannels"],
    ] {
        reset(&mut admin);
        let mut c = subscribed(&s, "SUBSCRIBE", "a1");
        let mut args = vec!["ps"];
        args.extend_from_slice(change);
        setuser(&mut admin, &args);
        assert!(matches!(c.call(&["PING"]), Frame::Array(_)), "{change:?}");
    }
    // Gone: a subscription the new channels do not allow.
    reset(&mut admin);
    let mut c = subscribed(&s, "SUBSCRIBE", "a1");
    let mut p = subscribed(&s, "PSUBSCRIBE", "a*");
    let mut other = login(&s, "ps");
    setuser(&mut admin, &["ps", "resetchannels", "&a1"]);
    assert!(matches!(c.call(&["PING"]), Frame::Array(_)));
    p.expect_closed();
    // (Not subscribed: stays.)
    assert_eq!(other.call(&["PING"]), simple("PONG"));
    setuser(&mut admin, &["ps", "resetchannels", "&b*"]);
    c.expect_closed();
}

#[test]
fn setuser_rules_are_redacted_in_the_slow_log() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        simple("OK")
    );
    setuser(&mut c, &["zz", "on", ">secretpw"]);
    let Frame::Array(entries) = c.call(&["SLOWLOG", "GET", "2"]) else {
        panic!("SLOWLOG GET")
    };
    let Frame::Array(entry) = &entries[0] else {
        panic!("entry")
    };
    assert_eq!(
        entry[3],
        bulks(&["ACL", "SETUSER", "(redacted)", "(redacted)", "(redacted)"])
    );
}

#[test]
fn config_set_of_a_secret_is_redacted_in_the_slow_log() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        simple("OK")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "masterauth", ""]), simple("OK"));
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory", "0", "masterauth", "pw"]),
        simple("OK")
    );
    let Frame::Array(entries) = c.call(&["SLOWLOG", "GET", "3"]) else {
        panic!("SLOWLOG GET")
    };
    let args = |i: usize| match &entries[i] {
        Frame::Array(entry) => entry[3].clone(),
        other => panic!("entry {}", fmt_frame(other)),
    };
    assert_eq!(
        args(0),
        bulks(&[
            "CONFIG",
            "SET",
            "maxmemory",
            "0",
            "masterauth",
            "(redacted)"
        ])
    );
    assert_eq!(
        args(1),
        bulks(&["CONFIG", "SET", "masterauth", "(redacted)"])
    );
}

#[test]
fn empty_and_spaced_selectors_and_acl_cat_arity() {
    let s = TestServer::start();
    let mut c = s.raw();
    setuser(
        &mut c,
        &["sel", "reset", "()", "(  ~a   +get  )", "(\"~b c)"],
    );
    let user = getuser(&mut c, "sel");
    let Frame::Array(selectors) = field(&user, "selectors") else {
        panic!("selectors")
    };
    assert_eq!(selectors.len(), 3);
    let describe = |f: &Frame| match f {
        Frame::Array(items) => items
            .chunks(2)
            .map(|p| format!("{}={}", text(&p[0]), text(&p[1])))
            .collect::<Vec<_>>()
            .join(" "),
        Frame::Map(items) => items
            .iter()
            .map(|(k, v)| format!("{}={}", text(k), text(v)))
            .collect::<Vec<_>>()
            .join(" "),
        other => panic!("selector {}", fmt_frame(other)),
    };
    assert_eq!(describe(&selectors[0]), "commands=-@all keys= channels=");
    assert_eq!(
        describe(&selectors[1]),
        "commands=-@all +get keys=~a channels="
    );
    // Unbalanced quotes inside leave the selector empty, as Redis's sdssplitargs does.
    assert_eq!(describe(&selectors[2]), "commands=-@all keys= channels=");
    for bad in [" () ", ")"] {
        assert_eq!(
            c.call(&["ACL", "SETUSER", "x", bad]),
            error(&format!(
                "ERR Error in ACL SETUSER modifier '{bad}': Syntax error"
            ))
        );
    }
    assert_eq!(
        c.call(&["ACL", "CAT", "nosuch"]),
        error("ERR Unknown category 'nosuch'")
    );
    assert_eq!(
        c.call(&["ACL", "CAT", "string", "hash"]),
        error("ERR unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP.")
    );
}

/// A client that has not authenticated and does not read its replies is closed once about
/// 17 KB of them wait (Redis's fix for CVE-2025-21605), instead of the server reading and
/// holding whatever it sends.
#[test]
fn an_unauthenticated_client_cannot_pile_up_replies() {
    let s = TestServer::start_with(&["--requirepass", "foobar"]);
    let mut c = s.raw();
    assert_eq!(
        c.call(&["SET", "x", "5"]),
        error("NOAUTH Authentication required.")
    );
    let mut batch = Vec::new();
    for _ in 0..1000 {
        common::encode_command(&["SET", "x", "5"], &mut batch);
    }
    let closed = (0..1000).any(|_| c.try_send_raw(&batch).is_err());
    assert!(closed, "the unauthenticated client was never closed");
    // An authenticated one that reads is not touched.
    let mut ok = s.raw();
    assert_eq!(ok.call(&["AUTH", "foobar"]), simple("OK"));
    let replies = ok.pipeline(&vec![vec!["SET", "x", "5"]; 5000]);
    assert!(replies.iter().all(|r| *r == simple("OK")));
}

/// Key permission selectors as the apt 7.0.15 server parses them: `%` needs R and/or W, and
/// `%RW` (or `%R`) without `~` is the empty pattern.
#[test]
fn key_permissions_without_a_pattern() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&["ACL", "SETUSER", "a", "%~"]),
        error("ERR Error in ACL SETUSER modifier '%~': Syntax error")
    );
    assert_eq!(
        c.call(&["ACL", "SETUSER", "b", "%X~k"]),
        error("ERR Error in ACL SETUSER modifier '%X~k': Syntax error")
    );
    assert_eq!(c.call(&["ACL", "SETUSER", "c", "%RW"]), simple("OK"));
    assert_eq!(c.call(&["ACL", "SETUSER", "d", "%R"]), simple("OK"));
    let list = c.call(&["ACL", "LIST"]);
    let list = text_lines(&list);
    assert!(
        list.contains(&"user c off ~ resetchannels -@all".to_string()),
        "{list:?}"
    );
    assert!(
        list.contains(&"user d off %R~ resetchannels -@all".to_string()),
        "{list:?}"
    );
}

fn text_lines(f: &Frame) -> Vec<String> {
    match f {
        Frame::Array(items) => items.iter().map(text).collect(),
        other => panic!("expected an array, got {}", fmt_frame(other)),
    }
}
