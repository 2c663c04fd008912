//! Scripting: EVAL EVALSHA EVAL_RO EVALSHA_RO SCRIPT, the `redis` Lua API, reply conversions,
//! error texts, the sandbox, BUSY/SCRIPT KILL, and atomicity across worker threads. Expected
//! values are what redis-server 7.0 replies.

mod common;

use common::{bulk, error, simple, Frame, TestServer};

fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

/// The reply to a script that fails on its line 1: the error text, then the script's SHA1.
fn script_error(body: &str, text: &str) -> Frame {
    error(&format!(
        "{text} script: {}, on @user_script:1.",
        sha1_smol::Sha1::from(body).digest()
    ))
}

fn eval(c: &mut common::RawClient, script: &str, keys: &[&str], args: &[&str]) -> Frame {
    let n = keys.len().to_string();
    let mut v = vec!["EVAL", script, n.as_str()];
    v.extend_from_slice(keys);
    v.extend_from_slice(args);
    c.call(&v)
}

#[test]
fn conversions_lua_to_resp() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(eval(&mut c, "return 1", &[], &[]), int(1));
    assert_eq!(eval(&mut c, "return 3.99", &[], &[]), int(3));
    assert_eq!(eval(&mut c, "return 'x'", &[], &[]), bulk("x"));
    assert_eq!(eval(&mut c, "return nil", &[], &[]), Frame::NullBulk);
    assert_eq!(
        eval(&mut c, "return {true,false}", &[], &[]),
        Frame::Array(vec![int(1), Frame::NullBulk])
    );
    assert_eq!(
        eval(&mut c, "return {1,2,{3,'x'},nil,4}", &[], &[]),
        Frame::Array(vec![int(1), int(2), Frame::Array(vec![int(3), bulk("x")])])
    );
    assert_eq!(eval(&mut c, "return {ok='FINE'}", &[], &[]), simple("FINE"));
    // -0.0 keeps its sign (a double reply, a bulk string in RESP2).
    assert_eq!(
        eval(&mut c, "return {double=tonumber(ARGV[1])}", &[], &["-0"]),
        bulk("-0")
    );
    assert_eq!(
        eval(&mut c, "return redis.status_reply('S')", &[], &[]),
        simple("S")
    );
    assert_eq!(
        eval(&mut c, "return {err='bad thing'}", &[], &[]),
        error("bad thing")
    );
    assert_eq!(
        eval(&mut c, "return redis.error_reply('x y')", &[], &[]),
        error("x y")
    );
    assert_eq!(
        eval(
            &mut c,
            "return KEYS[1]..ARGV[1]..#KEYS..#ARGV",
            &["k"],
            &["a", "b"]
        ),
        bulk("ka12")
    );
    assert_eq!(
        eval(&mut c, "return redis.sha1hex('')", &[], &[]),
        bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")
    );
}

#[test]
fn conversions_resp_to_lua() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["RPUSH", "l", "a", "b"]);
    c.call(&["SET", "n", "5"]);
    assert_eq!(
        eval(&mut c, "return redis.call('lrange','l',0,-1)", &[], &[]),
        Frame::Array(vec![bulk("a"), bulk("b")])
    );
    assert_eq!(
        eval(&mut c, "return redis.call('incr','n') + 1", &[], &[]),
        int(7)
    );
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('get','missing') == false and 1 or 0",
            &[],
            &[]
        ),
        int(1)
    );
    assert_eq!(
        eval(&mut c, "return redis.call('ping')", &[], &[]),
        simple("PONG")
    );
    assert_eq!(
        eval(&mut c, "return type(redis.call('ping'))", &[], &[]),
        bulk("table")
    );
    assert_eq!(
        eval(
            &mut c,
            "redis.setresp(3); local m = redis.call('hgetall','nokey'); return type(m.map)",
            &[],
            &[]
        ),
        bulk("table")
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('incr','l')['err']", &[], &[]),
        bulk("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}

#[test]
fn resp3_return_types() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert!(matches!(c.call(&["HELLO", "3"]), Frame::Map(_)));
    assert_eq!(
        eval(&mut c, "return {double=3.5}", &[], &[]),
        Frame::Double(b"3.5".to_vec())
    );
    assert_eq!(
        eval(&mut c, "return {map={a=1}}", &[], &[]),
        Frame::Map(vec![(bulk("a"), int(1))])
    );
    // Booleans follow the script's protocol (redis.setresp), not the caller's.
    assert_eq!(eval(&mut c, "return true", &[], &[]), int(1));
    assert_eq!(
        eval(&mut c, "redis.setresp(3) return true", &[], &[]),
        Frame::Boolean(true)
    );
    assert_eq!(eval(&mut c, "return false", &[], &[]), Frame::Null);
    assert_eq!(eval(&mut c, "return nil", &[], &[]), Frame::Null);
}

#[test]
fn error_texts_carry_the_script_line() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["SET", "s", "x"]);
    assert_eq!(
        eval(&mut c, "return redis.call('foo')", &[], &[]),
        error("ERR Unknown Redis command called from script script: cc78c5a793d041f28ab0f6b117a82d1428ccfd13, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.call('incr','s')", &[], &[]),
        error("ERR value is not an integer or out of range script: c243b9f46db13ba8f69da41b45a77708832babed, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "error('boom')", &[], &[]),
        error("ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "error({err='MY custom'})", &[], &[]),
        error("MY custom script: 784d3ae9e6566ecb57138d89d618d989007a9bc6, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return 1 +", &[], &[]),
        error("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'")
    );
    assert_eq!(
        eval(&mut c, "return redis.call('subscribe','x')", &[], &[]),
        error("ERR This Redis command is not allowed from script script: 2f334966be3d5602175118691c9d198b0a695e53, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.call('set',{})", &[], &[]),
        error("ERR Lua redis lib command arguments must be strings or integers script: db89706d57456abe96578a34e7107d6748549bb5, on @user_script:1.")
    );
    assert_eq!(
        eval(
            &mut c,
            "local ok, e = pcall(redis.call, 'nosuch'); return e",
            &[],
            &[]
        ),
        bulk("ERR Unknown Redis command called from script")
    );
    assert_eq!(
        c.call(&["EVAL", "return 1", "-1"]),
        error("ERR Number of keys can't be negative")
    );
    assert_eq!(
        c.call(&["EVAL", "return 1", "2", "a"]),
        error("ERR Number of keys can't be greater than number of args")
    );
}

#[test]
fn sandbox_rejects_globals_and_library_writes() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        eval(&mut c, "a=1", &[], &[]),
        error("ERR user_script:1: Attempt to modify a readonly table script: 86eda770a6060824b090dd4df091e3bd4121279c, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return b", &[], &[]),
        error("ERR user_script:1: Script attempted to access nonexistent global variable 'b' script: 816510dfadab6b5fbade21d62972b3b4ab4b5cca, on @user_script:1.")
    );
    assert!(matches!(
        eval(&mut c, "string.foo = 1", &[], &[]),
        Frame::Error(_)
    ));
    assert!(matches!(
        eval(&mut c, "return loadfile('/etc/passwd')", &[], &[]),
        Frame::Error(_)
    ));
    assert!(matches!(
        eval(&mut c, "return io.open('/etc/passwd')", &[], &[]),
        Frame::Error(_)
    ));
    assert_eq!(eval(&mut c, "local x = 5 return x", &[], &[]), int(5));
    // What getmetatable shows of the protected tables: nothing for the libraries, a read-only
    // table with __index for the globals.
    assert_eq!(
        eval(
            &mut c,
            "local mt = getmetatable(_G) local keys = {} for k in pairs(mt) do keys[#keys+1] = k end \
             return {tostring(getmetatable(cjson)), tostring(getmetatable(redis)), type(getmetatable('')), keys[1], #keys}",
            &[],
            &[]
        ),
        Frame::Array(vec![bulk("nil"), bulk("nil"), bulk("table"), bulk("__index"), int(1)])
    );
    assert_eq!(
        eval(&mut c, "getmetatable(_G).__index = nil", &[], &[]),
        script_error(
            "getmetatable(_G).__index = nil",
            "ERR user_script:1: Attempt to modify a readonly table"
        )
    );
}

/// Writes made by C functions (table.insert/remove/sort, rawset, setmetatable) fail on every
/// read-only table with Redis's text, without a position (C code has no line), after the
/// function's own argument checks; their argument errors name the function and the script's
/// line as Redis's do; and nothing of a refused write is left for later scripts.
#[test]
fn c_functions_cannot_write_read_only_tables() {
    let s = TestServer::start();
    let mut c = s.raw();
    let refused = "ERR Attempt to modify a readonly table";
    for body in [
        "table.insert(string, 1)",
        "table.insert(cjson, 1, 'x')",
        "local f = table.insert; f(bit, 1)",
        "table.insert(_G, 1)",
        "table.insert(getmetatable(''), 1)",
        "table.insert(getmetatable(_G), 1)",
        "rawset(redis, 'x', 1)",
        "setmetatable(redis, {})",
        "setmetatable(_G, nil)",
        "setmetatable(getmetatable(_G), {})",
    ] {
        assert_eq!(
            eval(&mut c, body, &[], &[]),
            script_error(body, refused),
            "{body}"
        );
    }
    // An assignment has the script's position.
    assert_eq!(
        eval(&mut c, "cjson.encode = 1", &[], &[]),
        script_error(
            "cjson.encode = 1",
            "ERR user_script:1: Attempt to modify a readonly table"
        )
    );
    assert_eq!(
        eval(
            &mut c,
            "local ok, e = pcall(table.insert, redis, 1) return e",
            &[],
            &[]
        ),
        bulk("Attempt to modify a readonly table")
    );
    // Calls that would write nothing (an empty range) are not refused.
    assert_eq!(
        eval(&mut c, "return {table.remove(string, 1)}", &[], &[]),
        Frame::Array(vec![])
    );
    assert_eq!(
        eval(&mut c, "return table.sort(string)", &[], &[]),
        Frame::NullBulk
    );
    // Argument errors first, named and placed as Lua's own.
    for (body, text) in [
        (
            "table.insert(string)",
            "wrong number of arguments to 'insert'",
        ),
        (
            "table.insert(string, 'x', 1)",
            "bad argument #2 to 'insert' (number expected, got string)",
        ),
        (
            "table.remove(redis, 'x')",
            "bad argument #2 to 'remove' (number expected, got string)",
        ),
        (
            "table.sort(string, 1)",
            "bad argument #2 to 'sort' (function expected, got number)",
        ),
        (
            "setmetatable(redis, 1)",
            "bad argument #2 to 'setmetatable' (nil or table expected)",
        ),
        (
            "rawset(redis, 'x')",
            "bad argument #3 to 'rawset' (value expected)",
        ),
        (
            "rawset(1, 2, 3)",
            "bad argument #1 to 'rawset' (table expected, got number)",
        ),
        (
            "rawget(1)",
            "bad argument #1 to 'rawget' (table expected, got number)",
        ),
        (
            "next(1)",
            "bad argument #1 to 'next' (table expected, got number)",
        ),
        (
            "pairs(1)",
            "bad argument #1 to 'pairs' (table expected, got number)",
        ),
        (
            "getmetatable()",
            "bad argument #1 to 'getmetatable' (value expected)",
        ),
    ] {
        assert_eq!(
            eval(&mut c, body, &[], &[]),
            script_error(body, &format!("ERR user_script:1: {text}")),
            "{body}"
        );
    }
    // Nothing was added to the libraries, and the functions still work on
    // the script's own tables.
    assert_eq!(
        eval(
            &mut c,
            "return {#string, rawget(string, 1) == nil, rawget(cjson, 1) == nil, rawget(redis, 'x') == nil}",
            &[],
            &[]
        ),
        Frame::Array(vec![int(0), int(1), int(1), int(1)])
    );
    assert_eq!(
        eval(
            &mut c,
            "local t = {3, 1, 2} table.sort(t) table.insert(t, 4) table.insert(t, 1, 0) \
             return {table.remove(t), table.remove(t, 1), unpack(t)}",
            &[],
            &[]
        ),
        Frame::Array(vec![int(4), int(0), int(1), int(2), int(3)])
    );
    // As in Lua, pairs' generator is another function than the global next.
    assert_eq!(
        eval(
            &mut c,
            "local n = 0 for k in pairs(redis) do n = n + 1 end \
             return {n > 5, next(string) ~= nil, select(1, pairs({})) == next}",
            &[],
            &[]
        ),
        Frame::Array(vec![int(1), int(1), Frame::NullBulk])
    );
}

/// Redis's "EVAL does not leak in the Lua stack": ten thousand runs of a small script leave the
/// Lua heap under 100 KB (each run's KEYS/ARGV tables are garbage the collector must keep up
/// with).
#[test]
fn many_evals_keep_lua_memory_bounded() {
    let s = TestServer::start();
    let mut admin = s.raw();
    assert_eq!(admin.call(&["SET", "x", "0"]), simple("OK"));
    let mut c = s.raw();
    let mut batch = Vec::new();
    for _ in 0..1000 {
        common::encode_command(
            &["EVAL", "return redis.call(\"incr\",KEYS[1])", "1", "x"],
            &mut batch,
        );
    }
    for round in 0..10 {
        c.send_raw(&batch);
        for i in 0..1000 {
            assert_eq!(c.read_frame(), int(round * 1000 + i + 1));
        }
    }
    let Frame::Bulk(info) = admin.call(&["INFO", "memory"]) else {
        panic!("INFO is a bulk string")
    };
    let info = String::from_utf8_lossy(&info);
    let lua: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory_lua:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("INFO memory has used_memory_lua");
    assert!(lua < 100 * 1024, "used_memory_lua is {lua}");
    assert_eq!(admin.call(&["GET", "x"]), bulk("10000"));
}

/// A script's error texts keep its bytes as they are (no UTF-8 replacement), as Redis's `%s`
/// does. A returned error table is replied as "-" and its text, CR/LF trimmed from the end and
/// the rest as spaces; a raised one the same but untrimmed, before " script: ..."; both keep a
/// leading `-` of the text (two in the reply).
#[test]
fn script_errors_keep_the_scripts_bytes() {
    let s = TestServer::start();
    let mut c = s.raw();
    let run = |c: &mut common::RawClient, body: &[u8]| c.call(&[b"EVAL".as_slice(), body, b"0"]);
    let sha = |body: &[u8]| sha1_smol::Sha1::from(body).digest().to_string();
    let err = |b: &[u8]| Frame::Error(b.to_vec());
    for (body, want) in [
        (
            b"return {err='\xff\xfe x'}".as_slice(),
            b"\xff\xfe x".as_slice(),
        ),
        // (error_reply takes a first word as the code: here "\xff".)
        (b"return redis.error_reply('\xff x')", b"\xff x"),
        (b"return {err='-x'}", b"--x"),
        (b"return {err='\\nabc\\n'}", b"- abc"),
        (b"return {err='abc\\r\\n'}", b"-abc"),
        (b"return {err='\\r\\nabc'}", b"-  abc"),
        (b"return {err=''}", b"-"),
    ] {
        // (Frame::Error holds the text after the reply's '-'.)
        let want = want.strip_prefix(b"-").unwrap_or(want);
        assert_eq!(
            run(&mut c, body),
            err(want),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    for (body, text) in [
        (
            b"error('\xff\xfe x')".as_slice(),
            b"ERR user_script:1: \xff\xfe x".as_slice(),
        ),
        (b"error({err='\xff\xfe x'})", b"\xff\xfe x"),
        (b"error({err='-x'})", b"-x"),
        (b"error({err='x\\n'})", b"x "),
    ] {
        let mut want = text.to_vec();
        want.extend_from_slice(format!(" script: {}, on @user_script:1.", sha(body)).as_bytes());
        assert_eq!(
            run(&mut c, body),
            err(&want),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    assert_eq!(
        run(&mut c, b"return \xff"),
        err(b"ERR Error compiling script (new function): user_script:1: unexpected symbol near '\xff'")
    );
    assert_eq!(
        c.call(&[b"SCRIPT".as_slice(), b"LOAD", b"x \xfe"]),
        err(b"ERR Error compiling script (new function): user_script:1: '=' expected near '\xfe'")
    );
}

#[test]
fn math_random_starts_where_redis_starts() {
    // One sequence per process, never reseeded per script, starting from drand48's unseeded
    // state: a fresh server's first numbers are the same on both servers.
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        eval(
            &mut c,
            "return {tostring(math.random()), math.random(100)}",
            &[],
            &[]
        ),
        Frame::Array(vec![bulk("0.39646477363839"), int(85)])
    );
    assert_eq!(
        eval(&mut c, "return math.random(10, 20)", &[], &[]),
        int(13)
    );
    // math.randomseed restarts the sequence.
    assert_eq!(
        eval(&mut c, "math.randomseed(7) local a = math.random(1000) math.randomseed(7) return {a, math.random(1000)}", &[], &[]),
        Frame::Array(vec![int(267), int(267)])
    );
}

#[test]
fn script_errors_tables_and_isolation_as_redis() {
    let s = TestServer::start();
    let mut c = s.raw();
    let arr = |v: &[&str]| Frame::Array(v.iter().copied().map(bulk).collect());
    // INFO (with its memory section) can be called from a script.
    assert_eq!(
        eval(&mut c, "return type(redis.call('INFO'))", &[], &[]),
        bulk("string")
    );
    // redis.call raises an {err=...} table: coroutines and xpcall handlers see the table,
    // pcall the text (also for tables scripts raise themselves).
    let show = "return {tostring(ok), type(e), type(e) == 'table' and e.err or e}";
    assert_eq!(
        eval(
            &mut c,
            &format!("local ok, e = coroutine.resume(coroutine.create(function() redis.call('nosuch') end)) {show}"),
            &[],
            &[]
        ),
        arr(&["false", "table", "ERR Unknown Redis command called from script"])
    );
    assert_eq!(
        eval(
            &mut c,
            &format!("local ok, e = xpcall(function() redis.call('nosuch') end, function(x) return x end) {show}"),
            &[],
            &[]
        ),
        arr(&["false", "table", "ERR Unknown Redis command called from script"])
    );
    assert_eq!(
        eval(
            &mut c,
            &format!("local ok, e = pcall(redis.call, 'nosuch') {show}"),
            &[],
            &[]
        ),
        arr(&[
            "false",
            "string",
            "ERR Unknown Redis command called from script"
        ])
    );
    assert_eq!(
        eval(
            &mut c,
            &format!("local ok, e = pcall(function() error({{err='MY boom'}}) end) {show}"),
            &[],
            &[]
        ),
        arr(&["false", "string", "MY boom"])
    );
    // error_reply gives the error a code, as Redis does.
    assert_eq!(
        eval(&mut c, "return redis.error_reply('x')", &[], &[]),
        error("ERR x")
    );
    assert_eq!(
        eval(
            &mut c,
            "return redis.error_reply('-E1 two words')",
            &[],
            &[]
        ),
        error("E1 two words")
    );
    assert_eq!(eval(&mut c, "return {err='x'}", &[], &[]), error("x"));
    // The string metatable and its methods are read-only too.
    for body in [
        "getmetatable('').__index = {}",
        "getmetatable('').__index.rep = nil",
    ] {
        assert_eq!(
            eval(&mut c, body, &[], &[]),
            script_error(
                body,
                "ERR user_script:1: Attempt to modify a readonly table"
            )
        );
    }
    assert_eq!(
        eval(
            &mut c,
            "return {string.rep('a', 3), ('b'):rep(2)}",
            &[],
            &[]
        ),
        arr(&["aaa", "bb"])
    );
    // KEYS and ARGV are new for every run.
    assert_eq!(
        eval(&mut c, "ARGV[5] = 'x' KEYS.k = 1 return #ARGV", &[], &["a"]),
        int(1)
    );
    assert_eq!(
        eval(&mut c, "return {#ARGV, tostring(KEYS.k)}", &[], &["a"]),
        Frame::Array(vec![int(1), bulk("nil")])
    );
    // Numbers are sent as C's %.17g prints them, NaN's sign included.
    assert_eq!(
        eval(&mut c, "redis.call('SET', 'n', 0/0) redis.call('SET', 'f', 0.1) return {redis.call('GET', 'n'), redis.call('GET', 'f')}", &[], &[]),
        arr(&["-nan", "0.10000000000000001"])
    );
}

#[test]
fn scripts_over_maxmemory_may_finish_what_they_started() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "1"]), simple("OK"));
    // Refused only while the script has not written yet.
    assert_eq!(
        eval(
            &mut c,
            "redis.call('DEL', 'x') return redis.call('SET', 'k', 'v')",
            &[],
            &[]
        ),
        simple("OK")
    );
    assert_eq!(
        eval(&mut c, "return redis.call('SET', 'k', 'v')", &[], &[]),
        script_error(
            "return redis.call('SET', 'k', 'v')",
            "OOM command not allowed when used memory > 'maxmemory'."
        )
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('SET', 'k', 'v')", &[], &[]),
        error("OOM command not allowed when used memory > 'maxmemory'.")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "0"]), simple("OK"));
}

#[test]
fn evalsha_script_load_exists_flush() {
    let s = TestServer::start();
    let mut c = s.raw();
    let sha = "2f86ec2d8e5f6a5c7c5eb62d1b4b8a0b4c3e26f7";
    let loaded = c.call(&["SCRIPT", "LOAD", "return 'hi'"]);
    let Frame::Bulk(real) = loaded else {
        panic!("SCRIPT LOAD: {loaded:?}")
    };
    let real = String::from_utf8_lossy(&real).into_owned();
    assert_eq!(real.len(), 40);
    let _ = sha;
    assert_eq!(c.call(&["EVALSHA", &real, "0"]), bulk("hi"));
    assert_eq!(c.call(&["EVALSHA", &real.to_uppercase(), "0"]), bulk("hi"));
    assert_eq!(
        c.call(&["SCRIPT", "EXISTS", &real, "ffff"]),
        Frame::Array(vec![int(1), int(0)])
    );
    assert_eq!(c.call(&["SCRIPT", "FLUSH"]), simple("OK"));
    assert_eq!(
        c.call(&["EVALSHA", &real, "0"]),
        error("NOSCRIPT No matching script. Please use EVAL.")
    );
    assert_eq!(
        c.call(&["SCRIPT", "FLUSH", "foo"]),
        error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    );
    assert!(matches!(c.call(&["SCRIPT", "HELP"]), Frame::Array(v) if v.len() == 17));
    assert_eq!(
        c.call(&["SCRIPT", "KILL"]),
        error("NOTBUSY No scripts in execution right now.")
    );
}

#[test]
fn read_only_scripts_and_shebang_flags() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&["EVAL_RO", "return redis.call('set','x','1')", "0"]),
        error("ERR Write commands are not allowed from read-only scripts. script: 8b2ae6dd76cda7fc3e27f97431ae27d7b08a221d, on @user_script:1.")
    );
    c.call(&["SET", "x", "v"]);
    assert_eq!(
        c.call(&["EVAL_RO", "return redis.call('get','x')", "0"]),
        bulk("v")
    );
    assert_eq!(
        eval(&mut c, "#!lua flags=no-writes\nreturn redis.call('set','a','1')", &[], &[]),
        error("ERR Write commands are not allowed from read-only scripts. script: 71c6978aa8dbb43cfeb7536150d4b9326e6031a2, on @user_script:2.")
    );
    assert_eq!(
        eval(&mut c, "#!lua flags=bad\nreturn 1", &[], &[]),
        error("ERR Unexpected flag in script shebang: bad")
    );
    assert_eq!(eval(&mut c, "#!lua\nreturn 2", &[], &[]), int(2));
}

#[test]
fn libraries_are_available() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        eval(&mut c, "return cjson.encode({1,2,'x'})", &[], &[]),
        bulk("[1,2,\"x\"]")
    );
    assert_eq!(
        eval(&mut c, "return cjson.decode('[1,2]')[2]", &[], &[]),
        int(2)
    );
    assert_eq!(eval(&mut c, "return bit.band(12, 10)", &[], &[]), int(8));
    assert_eq!(
        eval(&mut c, "return #cmsgpack.pack({1,2,3})", &[], &[]),
        int(4)
    );
    assert_eq!(
        eval(&mut c, "return struct.pack('>I2', 258)", &[], &[]),
        bulk("\x01\x02")
    );
    assert_eq!(eval(&mut c, "return redis.LOG_WARNING", &[], &[]), int(3));
}

#[test]
fn busy_script_then_script_kill() {
    busy_script_then_script_kill_with(&["--threads", "2"]);
}

/// With one worker thread the script occupies it: a spare worker must take
/// the new connection that answers -BUSY and sends SCRIPT KILL.
#[test]
fn busy_script_then_script_kill_with_one_worker_thread() {
    busy_script_then_script_kill_with(&["--threads", "1"]);
}

fn busy_script_then_script_kill_with(tessera_args: &[&str]) {
    let s = if common::target_is_redis() {
        TestServer::start()
    } else {
        TestServer::start_with(tessera_args)
    };
    let mut admin = s.raw();
    admin.call(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    let mut runner = s.raw();
    // The script holds a key's shard: background work (active expiry) must
    // not wait for it, or the worker that should take SCRIPT KILL hangs.
    runner.send(&[
        "EVAL",
        "redis.call('get', KEYS[1]) local i = 0 while true do i = i + 1 end",
        "1",
        "busykey",
    ]);
    // A new connection (the acceptor steers it off the busy worker).
    std::thread::sleep(std::time::Duration::from_millis(400));
    let mut other = s.raw();
    let mut saw_busy = false;
    for _ in 0..100 {
        match other.call(&["GET", "x"]) {
            Frame::Error(e) if e.starts_with(b"BUSY") => {
                saw_busy = true;
                break;
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    assert!(saw_busy);
    assert_eq!(other.call(&["SCRIPT", "KILL"]), simple("OK"));
    match runner.read_frame() {
        Frame::Error(e) => assert!(e.starts_with(b"ERR Script killed by user with SCRIPT KILL...")),
        other => panic!("expected the script to be killed, got {other:?}"),
    }
    assert_eq!(runner.call(&["PING"]), simple("PONG"));
}

/// A server where every connection shares the thread that will run the
/// script (tessera: one worker thread), with a 100 ms busy threshold.
fn one_thread_server() -> TestServer {
    let s = if common::target_is_redis() {
        TestServer::start()
    } else {
        TestServer::start_with(&["--threads", "1"])
    };
    s.raw()
        .call(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    s
}

/// Sends commands until one is answered -BUSY (the script is past the
/// threshold); returns that error.
fn until_busy(c: &mut common::RawClient, cmd: &[&str]) -> Vec<u8> {
    for _ in 0..200 {
        match c.call(cmd) {
            Frame::Error(e) if e.starts_with(b"BUSY") => return e,
            _ => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    panic!("no -BUSY reply to {cmd:?}");
}

const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// Clients connected before the script, on the thread that runs it, are
/// answered as Redis answers every client then: -BUSY, transactions
/// flagged and aborted, WATCH and DISCARD served, SCRIPT KILL obeyed.
#[test]
fn busy_script_serves_clients_on_its_own_thread() {
    let s = one_thread_server();
    let mut queued = s.raw();
    let mut other = s.raw();
    let mut runner = s.raw();
    assert_eq!(queued.call(&["MULTI"]), simple("OK"));
    assert_eq!(queued.call(&["SET", "k", "v"]), simple("QUEUED"));
    runner.send(&[
        "EVAL",
        "redis.call('get', KEYS[1]) local i = 0 while true do i = i + 1 end",
        "1",
        "busykey",
    ]);
    assert_eq!(until_busy(&mut other, &["PING"]), BUSY_EVAL.as_bytes());
    assert_eq!(other.call(&["GET", "x"]), error(BUSY_EVAL));
    assert_eq!(
        queued.call(&["EXEC"]),
        error(&format!(
            "EXECABORT Transaction discarded because of: {BUSY_EVAL}"
        ))
    );
    assert_eq!(other.call(&["MULTI"]), simple("OK"));
    assert_eq!(other.call(&["INCR", "x"]), error(BUSY_EVAL));
    assert_eq!(other.call(&["DISCARD"]), simple("OK"));
    assert_eq!(other.call(&["WATCH", "w"]), simple("OK"));
    assert_eq!(other.call(&["UNWATCH"]), simple("OK"));
    // FUNCTION STATS may run during a busy function, not during EVAL.
    assert_eq!(other.call(&["FUNCTION", "STATS"]), error(BUSY_EVAL));
    // A pipeline is answered in order.
    other.send_many(&[&["PING"][..], &["SCRIPT", "KILL", "now"], &["ECHO", "e"]]);
    assert_eq!(other.read_frame(), error(BUSY_EVAL));
    assert_eq!(
        other.read_frame(),
        error("ERR wrong number of arguments for 'script|kill' command")
    );
    assert_eq!(other.read_frame(), error(BUSY_EVAL));
    assert_eq!(other.call(&["SCRIPT", "KILL"]), simple("OK"));
    match runner.read_frame() {
        Frame::Error(e) => assert!(e.starts_with(b"ERR Script killed by user with SCRIPT KILL...")),
        other => panic!("expected the script to be killed, got {other:?}"),
    }
    assert_eq!(queued.call(&["GET", "k"]), Frame::NullBulk);
    assert_eq!(other.call(&["PING"]), simple("PONG"));
    assert_eq!(runner.call(&["PING"]), simple("PONG"));
}

/// WATCH and UNWATCH of a key the busy script holds are answered, as
/// Redis answers them, and the watch then sees later writes.
#[test]
fn busy_script_lets_clients_watch_the_keys_it_holds() {
    let s = one_thread_server();
    let mut watcher = s.raw();
    let mut other = s.raw();
    let mut runner = s.raw();
    watcher.call(&["SET", "busykey", "before"]);
    runner.send(&[
        "EVAL",
        "redis.call('get', KEYS[1]) while true do end",
        "1",
        "busykey",
    ]);
    assert_eq!(until_busy(&mut other, &["PING"]), BUSY_EVAL.as_bytes());
    assert_eq!(
        watcher.call(&["WATCH", "busykey", "elsewhere"]),
        simple("OK")
    );
    assert_eq!(watcher.call(&["UNWATCH"]), simple("OK"));
    assert_eq!(watcher.call(&["WATCH", "busykey"]), simple("OK"));
    assert_eq!(other.call(&["SCRIPT", "KILL"]), simple("OK"));
    assert!(matches!(runner.read_frame(), Frame::Error(_)));
    assert_eq!(other.call(&["SET", "busykey", "after"]), simple("OK"));
    assert_eq!(watcher.call(&["MULTI"]), simple("OK"));
    assert_eq!(watcher.call(&["GET", "busykey"]), simple("QUEUED"));
    assert_eq!(watcher.call(&["EXEC"]), Frame::NullArray);
    // DISCARD during a busy script drops the watches too.
    assert_eq!(watcher.call(&["WATCH", "busykey"]), simple("OK"));
    runner.send(&[
        "EVAL",
        "redis.call('get', KEYS[1]) while true do end",
        "1",
        "busykey",
    ]);
    until_busy(&mut other, &["PING"]);
    assert_eq!(watcher.call(&["MULTI"]), simple("OK"));
    assert_eq!(watcher.call(&["DISCARD"]), simple("OK"));
    assert_eq!(other.call(&["SCRIPT", "KILL"]), simple("OK"));
    assert!(matches!(runner.read_frame(), Frame::Error(_)));
    assert_eq!(other.call(&["SET", "busykey", "again"]), simple("OK"));
    assert_eq!(watcher.call(&["MULTI"]), simple("OK"));
    assert_eq!(watcher.call(&["GET", "busykey"]), simple("QUEUED"));
    assert_eq!(
        watcher.call(&["EXEC"]),
        Frame::Array(vec![Frame::Bulk(b"again".to_vec())])
    );
}

/// A key that expired before the busy script started, watched from the
/// script's thread, counts as absent (its deletion does not fail EXEC).
#[test]
fn busy_script_watch_of_a_key_expired_before_it_started() {
    let s = if common::target_is_redis() {
        TestServer::start_with(&["--enable-debug-command", "yes"])
    } else {
        TestServer::start_with(&["--threads", "1", "--enable-debug-command", "yes"])
    };
    let mut watcher = s.raw();
    let mut other = s.raw();
    let mut runner = s.raw();
    other.call(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    assert_eq!(
        other.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
        simple("OK")
    );
    assert_eq!(
        other.call(&["SET", "{t}gone", "v", "PX", "1"]),
        simple("OK")
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    runner.send(&[
        "EVAL",
        "redis.call('get', KEYS[1]) while true do end",
        "1",
        "{t}held",
    ]);
    until_busy(&mut other, &["PING"]);
    assert_eq!(watcher.call(&["WATCH", "{t}gone"]), simple("OK"));
    assert_eq!(other.call(&["SCRIPT", "KILL"]), simple("OK"));
    assert!(matches!(runner.read_frame(), Frame::Error(_)));
    assert_eq!(watcher.call(&["MULTI"]), simple("OK"));
    assert_eq!(watcher.call(&["PING"]), simple("QUEUED"));
    assert_eq!(watcher.call(&["EXEC"]), Frame::Array(vec![simple("PONG")]));
    assert_eq!(
        other.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]),
        simple("OK")
    );
}

/// A script that wrote cannot be killed; SHUTDOWN NOSAVE from a client on
/// its thread stops the server.
#[test]
fn busy_script_that_wrote_stops_on_shutdown_nosave_from_its_thread() {
    let mut s = one_thread_server();
    let mut other = s.raw();
    let mut runner = s.raw();
    runner.send(&[
        "EVAL",
        "redis.call('set', KEYS[1], 'v') while true do end",
        "1",
        "busykey",
    ]);
    until_busy(&mut other, &["PING"]);
    assert_eq!(
        other.call(&["SCRIPT", "KILL"]),
        error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
    );
    other.send(&["SHUTDOWN", "NOSAVE"]);
    other.expect_closed();
    assert!(
        common::wait_until(std::time::Duration::from_secs(20), || !s.is_alive()),
        "server still running after SHUTDOWN NOSAVE"
    );
    s.stop();
}

#[test]
fn scripts_are_atomic_across_threads_even_with_undeclared_keys() {
    if common::target_is_redis() {
        return;
    }
    let s = TestServer::start_with(&["--threads", "4"]);
    let port = s.port();
    // Moves one unit between two counters on different shards; the second
    // key is not declared.
    let mover = "redis.call('decr', KEYS[1]); redis.call('incr', ARGV[1]); return 1";
    let mut handles = Vec::new();
    for t in 0..3 {
        handles.push(std::thread::spawn(move || {
            let mut c = common::RawClient::connect(port);
            for i in 0..300 {
                let (a, b) = if (t + i) % 2 == 0 {
                    ("x:1", "y:2")
                } else {
                    ("y:2", "x:1")
                };
                assert_eq!(c.call(&["EVAL", mover, "1", a, b]), Frame::Integer(1));
            }
        }));
    }
    // Plain MULTI readers on another thread must never see a half-done move,
    // and plain writers to the undeclared key keep working.
    let mut checker = s.raw();
    for _ in 0..200 {
        let v = checker.call(&["EVAL", "return (tonumber(redis.call('get','x:1')) or 0) + (tonumber(redis.call('get','y:2')) or 0)", "0"]);
        assert_eq!(v, Frame::Integer(0));
    }
    for h in handles {
        h.join().expect("script thread");
    }
    // Exact totals from concurrent script increments.
    let mut hs = Vec::new();
    for _ in 0..4 {
        hs.push(std::thread::spawn(move || {
            let mut c = common::RawClient::connect(port);
            for _ in 0..250 {
                c.call(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "total"]);
            }
        }));
    }
    for h in hs {
        h.join().expect("incr thread");
    }
    assert_eq!(checker.call(&["GET", "total"]), bulk("1000"));
}

#[test]
fn eval_inside_multi() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["MULTI"]);
    c.call(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "m"]);
    c.call(&["INCR", "m"]);
    assert_eq!(c.call(&["EXEC"]), Frame::Array(vec![int(1), int(2)]));
}

#[test]
fn evalsha_ro_and_script_debug() {
    let s = TestServer::start();
    let mut c = s.raw();
    let Frame::Bulk(sha) = c.call(&["SCRIPT", "LOAD", "return redis.call('get', KEYS[1])"]) else {
        panic!("SCRIPT LOAD")
    };
    let sha = String::from_utf8_lossy(&sha).into_owned();
    c.call(&["SET", "r", "1"]);
    assert_eq!(c.call(&["EVALSHA_RO", &sha, "1", "r"]), bulk("1"));
    let Frame::Bulk(wsha) = c.call(&["SCRIPT", "LOAD", "return redis.call('set', KEYS[1], 'x')"])
    else {
        panic!("SCRIPT LOAD")
    };
    let wsha = String::from_utf8_lossy(&wsha).into_owned();
    assert!(
        matches!(c.call(&["EVALSHA_RO", &wsha, "1", "r"]), Frame::Error(e) if e.starts_with(b"ERR Write commands are not allowed from read-only scripts."))
    );
    assert_eq!(c.call(&["SCRIPT", "DEBUG", "NO"]), simple("OK"));
}

#[test]
fn sandbox_cannot_be_changed_for_later_scripts() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        eval(&mut c, "redis.call = function() return 'hacked' end", &[], &[]),
        error("ERR user_script:1: Attempt to modify a readonly table script: bb3217e7fc626e1dfebbb42ae3dd4e3b494212e2, on @user_script:1.")
    );
    assert_eq!(
        eval(&mut c, "return redis.call('ping')", &[], &[]),
        simple("PONG")
    );
    assert_eq!(
        eval(&mut c, "rawset(_G,'leak',42)", &[], &[]),
        error("ERR Attempt to modify a readonly table script: 52a9538f876378456f7a4f2a6aa2bf6d8002ce7e, on @user_script:1.")
    );
    assert!(matches!(
        eval(&mut c, "return leak", &[], &[]),
        Frame::Error(_)
    ));
    for name in ["getfenv", "setfenv", "print", "debug", "newproxy"] {
        let script = format!("return {name}");
        assert!(
            matches!(eval(&mut c, &script, &[], &[]), Frame::Error(e) if String::from_utf8_lossy(&e).contains("nonexistent global variable")),
            "{name}"
        );
    }
    assert!(matches!(
        eval(&mut c, "cjson.encode = nil", &[], &[]),
        Frame::Error(_)
    ));
    assert_eq!(
        eval(&mut c, "return cjson.encode({1})", &[], &[]),
        bulk("[1]")
    );
    assert!(matches!(
        eval(
            &mut c,
            "local f = loadstring('x = 1') f() return x",
            &[],
            &[]
        ),
        Frame::Error(_)
    ));
    assert_eq!(
        eval(&mut c, "return rawget(_G, 'redis') ~= nil", &[], &[]),
        int(1)
    );
    assert_eq!(eval(&mut c, "return 1e19", &[], &[]), int(i64::MIN));
    assert_eq!(
        eval(&mut c, "return redis.setresp(4)", &[], &[]),
        error("ERR RESP version must be 2 or 3. script: 921c0a48021d97dfd5884aeea41875972c7804d9, on @user_script:1.")
    );
    assert_eq!(
        c.call(&["EVALSHA", "bad", "x"]),
        error("NOSCRIPT No matching script. Please use EVAL.")
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('ping')", &[], &[]),
        simple("PONG")
    );
}

/// Reads exactly `len` reply bytes.
fn read_bytes(c: &mut common::RawClient, len: usize) -> Vec<u8> {
    use std::io::Read;
    let mut buf = vec![0u8; len];
    let mut stream = c.stream();
    stream.read_exact(&mut buf).expect("reply bytes");
    buf
}

/// A reply nests as deep as Lua's stack allows, and the level where it runs
/// out answers errors where redis-server 7.0's does (7995 arrays; 2665 maps,
/// whose last key and value are both errors). Compared as raw bytes: the
/// test client's frame decoder is not built for 8000 levels.
#[test]
fn reply_nesting_stops_where_redis_stops() {
    let s = TestServer::start();
    let mut c = s.raw();
    let limit = "-ERR reached lua stack limit\r\n";

    let arrays =
        "local t = {} local cur = t for i = 1, 9000 do cur[1] = {} cur = cur[1] end return t";
    let expected = format!("{}{limit}", "*1\r\n".repeat(7995));
    c.send(&["EVAL", arrays, "0"]);
    assert_eq!(
        String::from_utf8(read_bytes(&mut c, expected.len())).expect("utf8"),
        expected
    );

    let maps = "local t = {} local cur = t for i = 1, 9000 do local n = {} cur['map'] = {a = n} cur = n end return t";
    let expected = format!("{}*2\r\n{limit}{limit}", "*2\r\n$1\r\na\r\n".repeat(2664));
    c.send(&["EVAL", maps, "0"]);
    assert_eq!(
        String::from_utf8(read_bytes(&mut c, expected.len())).expect("utf8"),
        expected
    );

    // Below the limit, a deep reply is whole, and the connection goes on.
    let deep =
        "local t = {} local cur = t for i = 1, 5000 do cur[1] = {} cur = cur[1] end return t";
    let expected = format!("{}*0\r\n", "*1\r\n".repeat(5000));
    c.send(&["EVAL", deep, "0"]);
    assert_eq!(
        String::from_utf8(read_bytes(&mut c, expected.len())).expect("utf8"),
        expected
    );
    assert_eq!(c.call(&["PING"]), simple("PONG"));
}

/// An error raised in a `loadstring` chunk names that chunk (its source is
/// its text), also when the script tail-calls it and so has no frame left;
/// errors of C functions name their caller.
#[test]
fn errors_name_the_chunk_that_raised_them() {
    let s = TestServer::start();
    let mut c = s.raw();
    let sha = |body: &str| sha1_smol::Sha1::from(body).digest().to_string();
    let cases = [
        (
            "local f = loadstring('error(\"boom\")') f()",
            "ERR [string \"error(\"boom\")\"]:1: boom script: {sha}, on error(\"boom\"):1.",
        ),
        (
            "local f = loadstring('error(\"boom\")') return f()",
            "ERR [string \"error(\"boom\")\"]:1: boom script: {sha}, on error(\"boom\"):1.",
        ),
        (
            "local f = loadstring('return redis.call(\"nosuch\")') return f()",
            "ERR Unknown Redis command called from script script: {sha}, on return redis.call(\"nosuch\"):1.",
        ),
        (
            "return error('x')",
            "ERR user_script:1: x script: {sha}, on @user_script:1.",
        ),
        (
            "rawset(redis, 'x', 1)",
            "ERR Attempt to modify a readonly table script: {sha}, on @user_script:1.",
        ),
    ];
    for (body, text) in cases {
        assert_eq!(
            eval(&mut c, body, &[], &[]),
            error(&text.replace("{sha}", &sha(body))),
            "{body}"
        );
    }
}

/// `redis.acl_check_cmd`: true for every existing command (Tessera's one
/// user may run them all), Redis's errors otherwise.
#[test]
fn acl_check_cmd_as_redis() {
    let s = TestServer::start();
    let mut c = s.raw();
    for body in [
        "return redis.acl_check_cmd('get')",
        "return redis.acl_check_cmd('GET', 'a', 'b', 'c')",
        "return redis.acl_check_cmd('config')",
        "return redis.acl_check_cmd('config', 'get')",
        "return redis.acl_check_cmd('get', 1.5)",
    ] {
        assert_eq!(eval(&mut c, body, &[], &[]), int(1), "{body}");
    }
    for (body, text) in [
        (
            "return redis.acl_check_cmd('nosuch')",
            "ERR Invalid command passed to redis.acl_check_cmd()",
        ),
        (
            "return redis.acl_check_cmd('config', 'nosuch')",
            "ERR Invalid command passed to redis.acl_check_cmd()",
        ),
        (
            "return redis.acl_check_cmd(1)",
            "ERR Invalid command passed to redis.acl_check_cmd()",
        ),
        (
            "return redis.acl_check_cmd('get', {})",
            "ERR Lua redis lib command arguments must be strings or integers",
        ),
        (
            "return redis.acl_check_cmd()",
            "ERR Please specify at least one argument for this redis lib call",
        ),
    ] {
        assert_eq!(eval(&mut c, body, &[], &[]), script_error(body, text));
    }
}

/// Errors of the `redis.*` helpers are `{err=...}` tables wherever a script
/// can see them (xpcall handlers, coroutine.resume), and a helper called in
/// tail position still names the script line.
#[test]
fn helper_errors_are_tables() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        eval(
            &mut c,
            "return {xpcall(function() redis.setresp(5) end, function(e) return e.err end)}",
            &[],
            &[]
        ),
        Frame::Array(vec![
            Frame::NullBulk,
            bulk("ERR RESP version must be 2 or 3.")
        ])
    );
    assert_eq!(
        eval(
            &mut c,
            "local co = coroutine.create(function() redis.sha1hex() end) \
             local ok, e = coroutine.resume(co) return {tostring(ok), type(e), e.err}",
            &[],
            &[]
        ),
        Frame::Array(vec![
            bulk("false"),
            bulk("table"),
            bulk("ERR wrong number of arguments")
        ])
    );
    assert_eq!(
        eval(
            &mut c,
            "return select('#', redis.log(redis.LOG_DEBUG, 'x'))",
            &[],
            &[]
        ),
        int(0)
    );
    let body = "return redis.sha1hex()";
    assert_eq!(
        eval(&mut c, body, &[], &[]),
        script_error(body, "ERR wrong number of arguments")
    );
}

/// SCRIPT KILL stops scripts that catch its error (pcall, xpcall) or loop inside a coroutine:
/// the script ends with the kill error, as in Redis, and the server serves again.
#[test]
fn script_kill_stops_scripts_that_catch_it_or_loop_in_coroutines() {
    let s = if common::target_is_redis() {
        TestServer::start()
    } else {
        TestServer::start_with(&["--threads", "2"])
    };
    s.raw()
        .call(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    for script in [
        "while true do pcall(function() while true do end end) end",
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
        "while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
        "local ok, e = pcall(function() while true do end end)\nreturn {ok, e}",
    ] {
        let mut runner = s.raw();
        runner.send(&["EVAL", script, "0"]);
        let mut other = s.raw();
        until_busy(&mut other, &["PING"]);
        assert_eq!(other.call(&["SCRIPT", "KILL"]), simple("OK"), "{script}");
        match runner.read_frame() {
            Frame::Error(e) => assert!(
                e.starts_with(b"ERR Script killed by user with SCRIPT KILL..."),
                "{script}: {}",
                String::from_utf8_lossy(&e)
            ),
            other => panic!("{script}: expected the kill error, got {other:?}"),
        }
        assert_eq!(other.call(&["PING"]), simple("PONG"));
    }
}

/// Lua cannot load bytecode (a way out of the sandbox): loadstring and load fail as Lua's text
/// parser fails on the first byte, and so does an EVAL of a binary chunk.
#[test]
fn bytecode_cannot_be_loaded() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&[
            "EVAL",
            "local f, e = loadstring(string.dump(function() return 7 end)) return {tostring(f), e}",
            "0"
        ]),
        Frame::Array(vec![
            bulk("nil"),
            bulk("[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'")
        ])
    );
    assert_eq!(
        c.call(&[
            "EVAL",
            "local f, e = loadstring('\\27abc\\ndef') return e",
            "0"
        ]),
        bulk("[string \"\x1babc...\"]:1: unexpected symbol near 'char(27)'")
    );
    assert_eq!(
        c.call(&[
            "EVAL",
            "local f, e = loadstring(string.dump(function() return 7 end), '=named') return e",
            "0"
        ]),
        bulk("named:1: unexpected symbol near 'char(27)'")
    );
    assert_eq!(
        c.call(&[
            "EVAL",
            "local s = string.dump(function() return 7 end) local done = false \
             local f, e = load(function() if done then return nil end done = true return s end) \
             return e",
            "0"
        ]),
        bulk("(load):1: unexpected symbol near 'char(27)'")
    );
    // Text chunks still load.
    assert_eq!(
        c.call(&["EVAL", "return loadstring('return 6 * 7')()", "0"]),
        Frame::Integer(42)
    );
    assert_eq!(
        c.call(&["EVAL", "\x1bLuaQ", "0"]),
        error("ERR Error compiling script (new function): user_script:1: unexpected symbol near 'char(27)'")
    );
}

/// The server's own Lua helpers are not reachable from scripts.
#[test]
fn internal_helpers_are_not_globals() {
    let s = TestServer::start();
    let mut c = s.raw();
    for name in [
        "__tessera_error_value",
        "__tessera_readonly",
        "__tessera_run",
        "__tessera_run_with",
        "__tessera_seal",
        "__tessera_wrap_calls",
    ] {
        let reply = c.call(&["EVAL", &format!("return type(rawget(_G, '{name}'))"), "0"]);
        assert_eq!(reply, bulk("nil"), "{name}");
    }
    assert_eq!(
        c.call(&["EVAL", "return ('abcd'):len()", "0"]),
        Frame::Integer(4)
    );
}

/// A script sees the clock stopped at its start: a key that expires while it runs is still
/// there for it, declared or not (no expiry cycle removes it meanwhile).
#[test]
fn keys_do_not_expire_while_a_script_runs() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["SET", "k", "v", "PX", "150"]);
    let script = "local t = redis.call('TIME') \
                  local start = t[1] * 1000000 + t[2] \
                  repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - start > 600000 \
                  return {redis.call('EXISTS', 'k'), redis.call('PTTL', 'k') >= 0}";
    assert_eq!(
        c.call(&["EVAL", script, "0"]),
        Frame::Array(vec![Frame::Integer(1), Frame::Integer(1)])
    );
    // Afterwards the key has expired.
    assert_eq!(c.call(&["EXISTS", "k"]), Frame::Integer(0));
}

/// The `#!` line is split as Redis splits it (any whitespace, quotes) and read as a C string.
#[test]
fn shebang_lines_are_split_as_redis_splits_them() {
    let s = TestServer::start();
    let mut c = s.raw();
    let cases: &[(&[u8], Frame)] = &[
        (b"#!lua\r\nreturn 1", Frame::Integer(1)),
        (b"#!lua\t\nreturn 1", Frame::Integer(1)),
        (b"#!lua \"flags=no-writes\"\nreturn 1", Frame::Integer(1)),
        (b"#!lua flags=\"no-writes\"\r\nreturn 1", Frame::Integer(1)),
        (b"#!lua flags=\nreturn 1", Frame::Integer(1)),
        (
            b"#!lua flags=no-writes,\nreturn 1",
            error("ERR Unexpected flag in script shebang: "),
        ),
        (
            b"#!lua flags=a,,b\nreturn 1",
            error("ERR Unexpected flag in script shebang: a"),
        ),
        (
            b"#!lua flags=no-writes",
            error("ERR Invalid script shebang"),
        ),
        (b"#!lua\0\nreturn 1", error("ERR Invalid script shebang")),
        (
            b"#! lua\nreturn 1",
            error("ERR Unexpected engine in script shebang: #!"),
        ),
        (
            b"#!lua \"unbalanced\nreturn 1",
            error("ERR Invalid engine in script shebang"),
        ),
        (
            b"#!lua foo=bar\nreturn 1",
            error("ERR Unknown lua shebang option: foo=bar"),
        ),
    ];
    for (body, expected) in cases {
        let reply = c.call(&[&b"EVAL"[..], body, b"0"]);
        assert_eq!(&reply, expected, "{}", String::from_utf8_lossy(body));
    }
    // Several flags= options add up.
    match c.call(&[
        &b"EVAL"[..],
        b"#!lua flags=no-writes flags=allow-oom\nreturn redis.call('set','x','y')",
        b"0",
    ]) {
        Frame::Error(e) => {
            assert!(e.starts_with(b"ERR Write commands are not allowed from read-only scripts."))
        }
        other => panic!("{other:?}"),
    }
}

/// The error statistics of scripts as Redis keeps them: a command's error counts once (where
/// it happens, not again when the script raises or returns it), error tables a script returns
/// count under their code (ERR when the first word is not within 32 bytes), commands refused
/// from a script count as rejected, and the script's own command fails only when its reply is
/// an error.
#[test]
fn script_errors_count_once_as_redis_counts_them() {
    let s = TestServer::start();
    let mut c = s.raw();
    let mut admin = s.raw();
    c.call(&["SET", "str", "x"]);
    let stats = |admin: &mut common::RawClient| -> Vec<String> {
        let Frame::Bulk(info) = admin.call(&["INFO", "all"]) else {
            panic!("INFO is a bulk string")
        };
        let mut lines: Vec<String> = String::from_utf8_lossy(&info)
            .lines()
            .filter(|l| {
                l.starts_with("errorstat_")
                    || l.starts_with("total_error_replies")
                    || (l.starts_with("cmdstat_")
                        && !(l.contains("rejected_calls=0") && l.contains("failed_calls=0")))
            })
            .map(|l| match l.split_once(":calls=") {
                // Only the counts that matter here.
                Some((name, rest)) => {
                    let tail = rest.split_once(",rejected_calls=").map_or("", |(_, t)| t);
                    format!("{name}:rejected_calls={tail}")
                }
                None => l.to_string(),
            })
            .collect();
        lines.sort();
        lines
    };
    let cases: &[(&str, &[&str])] = &[
        (
            "return {err='MYERR x'}",
            &[
                "cmdstat_eval:rejected_calls=0,failed_calls=1",
                "errorstat_MYERR:count=1",
                "total_error_replies:1",
            ],
        ),
        (
            "return {err='x'}",
            &[
                "cmdstat_eval:rejected_calls=0,failed_calls=1",
                "errorstat_ERR:count=1",
                "total_error_replies:1",
            ],
        ),
        (
            "return redis.call('incr','str')",
            &[
                "cmdstat_eval:rejected_calls=0,failed_calls=1",
                "cmdstat_incr:rejected_calls=0,failed_calls=1",
                "errorstat_ERR:count=1",
                "total_error_replies:1",
            ],
        ),
        (
            "return redis.pcall('incr','str')",
            &[
                "cmdstat_eval:rejected_calls=0,failed_calls=1",
                "cmdstat_incr:rejected_calls=0,failed_calls=1",
                "errorstat_ERR:count=1",
                "total_error_replies:1",
            ],
        ),
        (
            "local e = redis.pcall('incr','str') return 1",
            &[
                "cmdstat_incr:rejected_calls=0,failed_calls=1",
                "errorstat_ERR:count=1",
                "total_error_replies:1",
            ],
        ),
        (
            "return redis.pcall('get')",
            &[
                "cmdstat_eval:rejected_calls=0,failed_calls=1",
                "cmdstat_get:rejected_calls=1,failed_calls=0",
                "errorstat_ERR:count=1",
                "total_error_replies:1",
            ],
        ),
        (
            "error('boom')",
            &[
                "cmdstat_eval:rejected_calls=0,failed_calls=1",
                "errorstat_ERR:count=1",
                "total_error_replies:1",
            ],
        ),
        (
            "return {1, {err='NESTED z'}}",
            &[
                "cmdstat_eval:rejected_calls=0,failed_calls=1",
                "errorstat_NESTED:count=1",
                "total_error_replies:1",
            ],
        ),
    ];
    for (script, expected) in cases {
        admin.call(&["CONFIG", "RESETSTAT"]);
        c.call(&["EVAL", script, "0"]);
        assert_eq!(stats(&mut admin), *expected, "{script}");
    }
}

/// Library functions see `redis` without the EVAL-only helpers, and a short verbatim format is
/// padded with spaces, as in Redis 7.0.
#[test]
fn function_redis_table_and_verbatim_format() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=tc\nredis.register_function('tc', function() return {type(redis.breakpoint), type(redis.debug), type(redis.replicate_commands), type(redis.call)} end)",
    ]);
    assert_eq!(
        c.call(&["FCALL", "tc", "0"]),
        Frame::Array(vec![
            bulk("nil"),
            bulk("nil"),
            bulk("nil"),
            bulk("function")
        ])
    );
    assert_eq!(
        c.call(&[
            "EVAL",
            "return {type(redis.breakpoint), type(redis.replicate_commands)}",
            "0"
        ]),
        Frame::Array(vec![bulk("function"), bulk("function")])
    );
    assert!(matches!(c.call(&["HELLO", "3"]), Frame::Map(_)));
    c.send(&[
        "EVAL",
        "redis.setresp(3) return {verbatim_string={format='tx', string='x'}}",
        "0",
    ]);
    let mut raw = [0u8; 11];
    use std::io::Read;
    let mut stream = c.stream();
    stream.read_exact(&mut raw).expect("the verbatim reply");
    assert_eq!(&raw, b"=5\r\ntx :x\r\n");
}

/// What scripts can reach stays read-only: pairs over a library hands out the read-only view,
/// code a script loads runs in the scripts' environment (so it cannot change existing globals
/// either), and a chunk named like the server's own prelude can still be killed.
#[test]
fn loaded_code_and_library_tables_stay_read_only() {
    let s = if common::target_is_redis() {
        TestServer::start()
    } else {
        TestServer::start_with(&["--threads", "2"])
    };
    let mut c = s.raw();
    let readonly = |r: Frame| match r {
        Frame::Error(e) => assert!(
            String::from_utf8_lossy(&e).contains("Attempt to modify a readonly table"),
            "{}",
            String::from_utf8_lossy(&e)
        ),
        other => panic!("expected a readonly error, got {other:?}"),
    };
    readonly(c.call(&[
        "EVAL",
        "local _, S = pairs(string) S.byte = function() return 0 end return 1",
        "0",
    ]));
    readonly(c.call(&[
        "EVAL",
        "local _, m = pairs(getmetatable('')) m.__index = {} return 1",
        "0",
    ]));
    readonly(c.call(&["EVAL", "loadstring('pcall = nil')() return 1", "0"]));
    assert_eq!(
        c.call(&["EVAL", "return type(pcall)", "0"]),
        bulk("function")
    );
    assert_eq!(
        c.call(&["EVAL", "return ('abc'):len()", "0"]),
        Frame::Integer(3)
    );
    assert_eq!(
        c.call(&[
            "EVAL",
            "local f, e = load(function() error('rd') end) return {tostring(f), e}",
            "0"
        ]),
        Frame::Array(vec![bulk("nil"), error("ERR user_script:1: rd")])
    );

    s.raw()
        .call(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    let mut runner = s.raw();
    runner.send(&["EVAL", "loadstring('while true do end', '=prelude')()", "0"]);
    let mut other = s.raw();
    until_busy(&mut other, &["PING"]);
    assert_eq!(other.call(&["SCRIPT", "KILL"]), simple("OK"));
    assert!(matches!(runner.read_frame(), Frame::Error(e) if e.starts_with(b"ERR Script killed")));
}

/// A RESP3 map that redis.call hands a script is a Lua table grown key by
/// key, as Redis builds it, so iterating it (here, converting it back to a
/// reply) gives the same order as in Redis.
#[test]
fn resp3_maps_keep_redis_table_order() {
    let s = TestServer::start();
    let mut raw = s.raw();
    raw.call(&["HSET", "h", "a b", "65", "", "120", "v", "37", "f", "29"]);
    assert_eq!(
        raw.call(&[
            "EVAL",
            "redis.setresp(3) return redis.call('HGETALL', KEYS[1])",
            "1",
            "h",
        ]),
        Frame::Array(
            ["", "120", "f", "29", "a b", "65", "v", "37"]
                .iter()
                .map(bulk)
                .collect()
        )
    );
}

#[test]
fn every_run_gets_keys_and_argv_as_new_tables() {
    let s = TestServer::start();
    let mut c = s.raw();
    // A script may reshape its KEYS and ARGV; the next run must not see it.
    let reshape = "KEYS[5] = 'x'; ARGV.extra = 1; KEYS[1] = {}; \
                   setmetatable(KEYS, {__index = function() return 'meta' end}); \
                   setmetatable(ARGV, {__len = function() return 9 end}); return 'ok'";
    assert_eq!(
        eval(&mut c, reshape, &["a", "b", "c"], &["d", "e"]),
        bulk("ok")
    );
    let look = "return {#KEYS, #ARGV, KEYS[1], tostring(KEYS[2]), tostring(KEYS[5]), \
                tostring(ARGV.extra), tostring(getmetatable(KEYS)), tostring(getmetatable(ARGV))}";
    let fresh = |k: &str| {
        Frame::Array(vec![
            int(1),
            int(1),
            bulk(k),
            bulk("nil"),
            bulk("nil"),
            bulk("nil"),
            bulk("nil"),
            bulk("nil"),
        ])
    };
    assert_eq!(eval(&mut c, look, &["k"], &["v"]), fresh("k"));
    // Fewer keys than the run before: the old ones are gone.
    let many = "return #KEYS + #ARGV";
    assert_eq!(
        eval(&mut c, many, &["a", "b", "c", "d"], &["e", "f", "g"]),
        int(7)
    );
    assert_eq!(eval(&mut c, look, &["z"], &["y"]), fresh("z"));
    // An error halfway through leaves nothing behind either.
    let failing = "table.insert(KEYS, 'more'); ARGV[3] = 'x'; error('stop')";
    assert!(matches!(
        eval(&mut c, failing, &["a"], &["b"]),
        Frame::Error(_)
    ));
    assert_eq!(eval(&mut c, look, &["q"], &["r"]), fresh("q"));
    // After a run with big arguments (whose tables are let go).
    let big = "x".repeat(100_000);
    assert_eq!(
        eval(&mut c, "return #ARGV[1]", &["a"], &[&big]),
        int(100_000)
    );
    assert_eq!(eval(&mut c, look, &["w"], &["u"]), fresh("w"));
    // No keys at all, after a run with some.
    assert_eq!(
        eval(&mut c, "return {#KEYS, #ARGV}", &[], &[]),
        Frame::Array(vec![int(0), int(0)])
    );
}

#[test]
fn keys_and_argv_are_laid_out_as_redis_builds_them() {
    // `#` of a table with holes, and the order pairs() visits it in, depend
    // on how its array part grew: Redis appends one element at a time.
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        eval(&mut c, "ARGV[2] = nil return #ARGV", &[], &["a", "b", "c"]),
        int(1)
    );
    // Reshaped by one run, then the same again: the answers stay.
    assert_eq!(
        eval(&mut c, "ARGV.x = 1 return 0", &[], &["a", "b", "c"]),
        int(0)
    );
    assert_eq!(
        eval(&mut c, "ARGV[2] = nil return #ARGV", &[], &["a", "b", "c"]),
        int(1)
    );
    let order = "for j = 1, 3 do ARGV['s'..j] = 1 end for j = 1, 3 do ARGV['s'..j] = nil end \
                 ARGV[3] = 'x' ARGV[2] = 'x' return 1";
    assert_eq!(eval(&mut c, order, &[], &["a"]), int(1));
    assert_eq!(
        eval(
            &mut c,
            "local r = {} for k in pairs(ARGV) do r[#r + 1] = k end return r",
            &[],
            &["a", "b", "c"]
        ),
        Frame::Array(vec![int(1), int(2), int(3)])
    );
    // pcall keeps every result, nils included.
    assert_eq!(
        eval(&mut c, "return select('#', pcall(error))", &[], &[]),
        int(2)
    );
    assert_eq!(
        eval(
            &mut c,
            "return select('#', pcall(function() return 1, nil, nil end))",
            &[],
            &[]
        ),
        int(4)
    );
}

/// A script is judged before it runs by the flags it declares (a shebang, function flags), as
/// Redis's getCommandFlags: on a stale replica, over maxmemory, on a read-only replica and under
/// CLIENT PAUSE WRITE. A script without a shebang is judged as EVAL is.
#[test]
fn declared_flags_decide_what_a_stale_replica_or_a_pause_lets_run() {
    let dead = common::free_port().to_string();
    let s = TestServer::start_with(&[
        "--replicaof",
        "127.0.0.1",
        &dead,
        "--replica-serve-stale-data",
        "no",
    ]);
    let mut c = s.raw();
    let masterdown =
        error("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.");
    let stale_get = "#!lua flags=allow-stale,no-writes\nreturn redis.call('get','x')";
    assert_eq!(
        eval(&mut c, stale_get, &[], &[]),
        error(&format!(
            "ERR Can not execute the command on a stale replica script: {}, on @user_script:2.",
            sha1_smol::Sha1::from(stale_get).digest()
        ))
    );
    assert_eq!(
        eval(
            &mut c,
            "#!lua flags=allow-stale,no-writes\nreturn redis.pcall('get','x')",
            &[],
            &[]
        ),
        error("ERR Can not execute the command on a stale replica")
    );
    // ECHO may run on a stale replica, so a script may call it.
    assert_eq!(
        eval(
            &mut c,
            "#!lua flags=allow-stale,no-writes\nreturn redis.call('echo','e')",
            &[],
            &[]
        ),
        bulk("e")
    );
    assert_eq!(
        eval(&mut c, "#!lua flags=no-writes\nreturn 1", &[], &[]),
        masterdown
    );
    assert_eq!(eval(&mut c, "return 1", &[], &[]), masterdown);
    // A writing script on a read-only replica: READONLY, before the stale check.
    assert_eq!(
        eval(&mut c, "#!lua flags=allow-stale\nreturn 1", &[], &[]),
        error("READONLY You can't write against a read only replica.")
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "replica-read-only", "no"]),
        simple("OK")
    );
    assert_eq!(
        eval(&mut c, "#!lua flags=allow-stale\nreturn 2", &[], &[]),
        int(2)
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "replica-serve-stale-data", "yes"]),
        simple("OK")
    );
    let lib = "#!lua name=stalelib\n\
        redis.register_function('f', function() return 1 end)\n\
        redis.register_function{function_name='g', callback=function() return redis.call('get','x') end, flags={'allow-stale','no-writes'}}\n\
        redis.register_function{function_name='h', callback=function() return 2 end, flags={'allow-stale'}}\n\
        redis.register_function{function_name='i', callback=function() return 3 end, flags={'no-writes'}}";
    assert_eq!(c.call(&["FUNCTION", "LOAD", lib]), bulk("stalelib"));
    assert_eq!(
        c.call(&["CONFIG", "SET", "replica-serve-stale-data", "no"]),
        simple("OK")
    );
    assert_eq!(c.call(&["FCALL", "f", "0"]), masterdown);
    assert_eq!(
        c.call(&["FCALL", "g", "0"]),
        error("ERR Can not execute the command on a stale replica script: g, on @user_function:3.")
    );
    assert_eq!(c.call(&["FCALL", "h", "0"]), int(2));
    assert_eq!(
        c.call(&["FCALL_RO", "h", "0"]),
        error("ERR Can not execute a script with write flag using *_ro command.")
    );
    assert_eq!(c.call(&["FCALL_RO", "i", "0"]), masterdown);
    // Queued, a function is judged by its flags too: the transaction is doomed.
    assert_eq!(c.call(&["MULTI"]), simple("OK"));
    assert_eq!(c.call(&["FCALL", "f", "0"]), masterdown);
    assert_eq!(
        c.call(&["EXEC"]),
        error("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(c.call(&["MULTI"]), simple("OK"));
    assert_eq!(c.call(&["FCALL", "h", "0"]), simple("QUEUED"));
    assert_eq!(c.call(&["EXEC"]), Frame::Array(vec![int(2)]));

    // A script declared no-writes is not held by CLIENT PAUSE WRITE (it would never answer
    // here while the pause lasts); a script without a shebang is.
    assert_eq!(c.call(&["REPLICAOF", "NO", "ONE"]), simple("OK"));
    assert_eq!(
        c.call(&["CLIENT", "PAUSE", "600000", "WRITE"]),
        simple("OK")
    );
    assert_eq!(
        eval(&mut c, "#!lua flags=no-writes\nreturn 4", &[], &[]),
        int(4)
    );
    assert_eq!(c.call(&["FCALL", "i", "0"]), int(3));
    let mut other = s.raw();
    other.send(&["EVAL", "return 5", "0"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while common::dataset::info_field(&mut c, "clients", "blocked_clients") != "1" {
        assert!(std::time::Instant::now() < deadline, "EVAL was not held");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(c.call(&["CLIENT", "UNPAUSE"]), simple("OK"));
    assert_eq!(other.read_frame(), int(5));

    // Over maxmemory: a script that may write is refused before it runs, one declared
    // allow-oom or no-writes runs.
    assert_eq!(c.call(&["SET", "a", "b"]), simple("OK"));
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "1"]), simple("OK"));
    let oom = error("OOM command not allowed when used memory > 'maxmemory'.");
    assert_eq!(eval(&mut c, "#!lua\nreturn 1", &[], &[]), oom);
    assert_eq!(c.call(&["FCALL", "h", "0"]), oom);
    assert_eq!(
        eval(&mut c, "#!lua flags=allow-oom\nreturn 6", &[], &[]),
        int(6)
    );
    assert_eq!(
        eval(&mut c, "#!lua flags=no-writes\nreturn 7", &[], &[]),
        int(7)
    );
    assert_eq!(c.call(&["FCALL", "i", "0"]), int(3));
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "0"]), simple("OK"));
}

/// unpack over a range near the int limits is refused, as in Redis's Lua; stock Lua 5.1.5
/// overflows counting it and writes past the stack, which aborted the server.
#[test]
fn unpack_refuses_ranges_it_cannot_hold() {
    let s = TestServer::start();
    let mut c = s.raw();
    for range in [
        "-2, 2147483647",
        "0, 2147483647",
        "-2147483648, -2",
        "1, 9000",
    ] {
        let body = format!("return {{unpack({{1,2,3}}, {range})}}");
        assert_eq!(
            eval(&mut c, &body, &[], &[]),
            script_error(&body, "ERR user_script:1: too many results to unpack"),
            "{range}"
        );
    }
    assert_eq!(
        eval(&mut c, "return {unpack({1,2,3}, -1, -2)}", &[], &[]),
        Frame::Array(vec![])
    );
    assert_eq!(
        eval(&mut c, "return {unpack({1,2,3}, 1.5, 2.9)}", &[], &[]),
        Frame::Array(vec![int(1), int(2)])
    );
    assert_eq!(
        eval(&mut c, "return select('#', unpack({}, 1, 7990))", &[], &[]),
        int(7990)
    );
    assert_eq!(
        eval(&mut c, "return {unpack(KEYS)}", &["a", "b"], &[]),
        Frame::Array(vec![bulk("a"), bulk("b")])
    );
    let bad = "return {unpack({1,2,3}, 'a', 2)}";
    assert_eq!(
        eval(&mut c, bad, &[], &[]),
        script_error(
            bad,
            "ERR user_script:1: bad argument #2 to 'unpack' (number expected, got string)"
        )
    );
    assert_eq!(c.call(&["PING"]), simple("PONG"));
}

/// lua-enable-deprecated-api yes gives scripts back setfenv, getfenv and newproxy (hidden from
/// them by default since the CVE-2025-46818 fix); DEBUG SET-DISABLE-DENY-SCRIPTS lets scripts
/// call commands flagged noscript, though a script still may not make its caller a subscriber.
#[test]
fn deprecated_lua_api_and_noscript_commands_on_request() {
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let mut c = s.raw();
    let body = "local f = function() return 1 end\nsetfenv(f, {})\nreturn 0";
    assert_eq!(
        eval(&mut c, body, &[], &[]),
        error(&format!(
            "ERR user_script:2: Script attempted to access nonexistent global variable 'setfenv' script: {}, on @user_script:2.",
            sha1_smol::Sha1::from(body).digest()
        ))
    );
    let on = TestServer::start_with(&["--lua-enable-deprecated-api", "yes"]);
    let mut d = on.raw();
    assert_eq!(eval(&mut d, body, &[], &[]), int(0));
    assert_eq!(
        eval(
            &mut d,
            "getfenv(function() end)\nreturn type(newproxy())",
            &[],
            &[]
        ),
        bulk("userdata")
    );

    let client_list = "return type(redis.call('client', 'list'))";
    assert_eq!(
        eval(&mut c, client_list, &[], &[]),
        script_error(
            client_list,
            "ERR This Redis command is not allowed from script"
        )
    );
    assert_eq!(
        c.call(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"]),
        simple("OK")
    );
    assert_eq!(eval(&mut c, client_list, &[], &[]), bulk("string"));
    let subscribe = "return redis.call('subscribe', 'ch')";
    assert_eq!(
        eval(&mut c, subscribe, &[], &[]),
        script_error(
            subscribe,
            "ERR SUBSCRIBE isn't allowed for a DENY BLOCKING client"
        )
    );
    assert_eq!(
        c.call(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"]),
        simple("OK")
    );
    assert_eq!(
        eval(&mut c, client_list, &[], &[]),
        script_error(
            client_list,
            "ERR This Redis command is not allowed from script"
        )
    );
}
