//! Functions: FUNCTION LOAD/DELETE/FLUSH/LIST/DUMP/RESTORE/STATS/KILL/HELP, FCALL, FCALL_RO and
//! `redis.register_function`. Expected values are what redis-server 7.0 replies.

mod common;

use common::{bulk, error, simple, Frame, TestServer};

const LIB1: &str = "#!lua name=lib1\nredis.register_function('f1', function(keys, args) return redis.call('set', keys[1], args[1]) end)\nredis.register_function{function_name='f2', callback=function(keys, args) return #keys end, flags={'no-writes'}, description='desc2'}";

fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

#[test]
fn load_call_and_list() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(c.call(&["FUNCTION", "LOAD", LIB1]), bulk("lib1"));
    assert_eq!(c.call(&["FCALL", "f1", "1", "k", "v"]), simple("OK"));
    assert_eq!(c.call(&["GET", "k"]), bulk("v"));
    assert_eq!(c.call(&["FCALL", "f2", "2", "a", "b"]), int(2));
    assert_eq!(c.call(&["FCALL_RO", "f2", "0"]), int(0));
    assert_eq!(
        c.call(&["FCALL_RO", "f1", "1", "k", "v"]),
        error("ERR Can not execute a script with write flag using *_ro command.")
    );
    assert_eq!(
        c.call(&["FCALL", "nof", "0"]),
        error("ERR Function not found")
    );
    assert_eq!(
        c.call(&["FCALL", "f1", "1"]),
        error("ERR Number of keys can't be greater than number of args")
    );
    let mut list = c.call(&["FUNCTION", "LIST"]);
    // Functions come in Redis's hash order: compare them sorted.
    if let Frame::Array(libs) = &mut list {
        for l in libs.iter_mut() {
            if let Frame::Array(fields) = l {
                if let Some(Frame::Array(fs)) = fields.get_mut(5) {
                    fs.sort_by_key(|f| format!("{f:?}"));
                }
            }
        }
    }
    let expected = Frame::Array(vec![Frame::Array(vec![
        bulk("library_name"),
        bulk("lib1"),
        bulk("engine"),
        bulk("LUA"),
        bulk("functions"),
        Frame::Array(vec![
            Frame::Array(vec![
                bulk("name"),
                bulk("f1"),
                bulk("description"),
                Frame::NullBulk,
                bulk("flags"),
                Frame::Array(vec![]),
            ]),
            Frame::Array(vec![
                bulk("name"),
                bulk("f2"),
                bulk("description"),
                bulk("desc2"),
                bulk("flags"),
                Frame::Array(vec![simple("no-writes")]),
            ]),
        ]),
    ])]);
    assert_eq!(list, expected);
    assert_eq!(
        c.call(&["FUNCTION", "LIST", "LIBRARYNAME"]),
        error("ERR library name argument was not given")
    );
    assert_eq!(
        c.call(&["FUNCTION", "LIST", "foo"]),
        error("ERR Unknown argument foo")
    );
    assert_eq!(
        c.call(&["FUNCTION", "LIST", "LIBRARYNAME", "zz*"]),
        Frame::Array(vec![])
    );
}

#[test]
fn load_errors() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["FUNCTION", "LOAD", LIB1]);
    let cases: &[(&str, &str)] = &[
        ("return 1", "ERR Missing library metadata"),
        ("#!lua name=lib1\nreturn 1", "ERR Library 'lib1' already exists"),
        ("#!lua name=lib2\nredis.register_function('f1', function() return 1 end)", "ERR Function f1 already exists"),
        ("#!lua name=lib3\nreturn 1", "ERR No functions registered"),
        ("#!lua name=lib4\nredis.register_function('bad-name', function() return 1 end)", "ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
        ("#!lua name=lib5\nredis.call('ping')", "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"),
        ("#!lua name=lib6 foo=bar\n", "ERR Invalid metadata value given: foo=bar"),
        ("#!lua\n", "ERR Library name was not given"),
        ("#!js name=x\n", "ERR Engine 'js' not found"),
        ("#!lua name=lib8\nlocal x = 1 +", "ERR Error compiling function: user_function:2: unexpected symbol near '<eof>'"),
        ("#!lua name=lib9\nredis.register_function{function_name='f9', callback=function() end, flags={'bad'}}", "ERR Error registering functions: ERR unknown flag given"),
        ("#!lua name=lib10\nredis.register_function('f10')", "ERR Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."),
    ];
    for (code, err) in cases {
        assert_eq!(c.call(&["FUNCTION", "LOAD", code]), error(err), "{code}");
    }
}

#[test]
fn runtime_errors_name_the_function() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=lib7\nredis.register_function('f7', function(keys, args) error('oops') end)",
    ]);
    assert_eq!(
        c.call(&["FCALL", "f7", "0"]),
        error("ERR user_function:2: oops script: f7, on @user_function:2.")
    );
}

#[test]
fn replace_delete_flush() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["FUNCTION", "LOAD", LIB1]);
    assert_eq!(
        c.call(&[
            "FUNCTION",
            "LOAD",
            "REPLACE",
            "#!lua name=lib1\nredis.register_function('g1', function() return 'new' end)"
        ]),
        bulk("lib1")
    );
    assert_eq!(c.call(&["FCALL", "g1", "0"]), bulk("new"));
    assert_eq!(
        c.call(&["FCALL", "f1", "1", "k", "v"]),
        error("ERR Function not found")
    );
    assert_eq!(
        c.call(&["FUNCTION", "DELETE", "nolib"]),
        error("ERR Library not found")
    );
    assert_eq!(c.call(&["FUNCTION", "DELETE", "lib1"]), simple("OK"));
    assert_eq!(
        c.call(&["FCALL", "g1", "0"]),
        error("ERR Function not found")
    );
    c.call(&["FUNCTION", "LOAD", LIB1]);
    assert_eq!(
        c.call(&["FUNCTION", "FLUSH", "bad"]),
        error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    );
    assert_eq!(c.call(&["FUNCTION", "FLUSH", "SYNC"]), simple("OK"));
    assert_eq!(c.call(&["FUNCTION", "LIST"]), Frame::Array(vec![]));
}

#[test]
fn dump_and_restore() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["FUNCTION", "LOAD", LIB1]);
    let Frame::Bulk(payload) = c.call(&["FUNCTION", "DUMP"]) else {
        panic!("FUNCTION DUMP did not return a bulk string")
    };
    assert_eq!(
        c.call(&[b"FUNCTION".as_slice(), b"RESTORE", &payload]),
        error("ERR Library lib1 already exists")
    );
    c.call(&["FUNCTION", "FLUSH"]);
    assert_eq!(
        c.call(&[b"FUNCTION".as_slice(), b"RESTORE", &payload]),
        simple("OK")
    );
    assert_eq!(c.call(&["FCALL", "f2", "1", "x"]), int(1));
    assert_eq!(
        c.call(&[b"FUNCTION".as_slice(), b"RESTORE", &payload, b"REPLACE"]),
        simple("OK")
    );
    assert_eq!(
        c.call(&["FUNCTION", "RESTORE", "garbage"]),
        error("ERR DUMP payload version or checksum are wrong")
    );
    assert_eq!(
        c.call(&[b"FUNCTION".as_slice(), b"RESTORE", &payload, b"BAD"]),
        error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    );
}

/// FUNCTION DUMP compresses a library's code with LZF exactly as redis-server
/// 7.0 does (the expected bytes were produced by redis-server), and restores
/// such a payload.
#[test]
fn dump_is_lzf_compressed_as_redis_does() {
    const CODE: &str = "#!lua name=lzfcheck\n\
        redis.register_function('lzf_a', function() return 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' end)\n\
        redis.register_function('lzf_b', function() return 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' end)";
    const REDIS_DUMP: &str = "f5c3405b40d91f23216c7561206e616d653d6c7a66636865636b0a72656469732e\
        7265676973740c65725f66756e6374696f6e28272021045f61272c20e000110a292072657475726e2027\
        61e01e00052720656e6429e015620062e039620164290a0053a311c3712661da";
    let expected: Vec<u8> = (0..REDIS_DUMP.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&REDIS_DUMP[i..i + 2], 16).unwrap())
        .collect();
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(c.call(&["FUNCTION", "LOAD", CODE]), bulk("lzfcheck"));
    assert_eq!(c.call(&["FUNCTION", "DUMP"]), Frame::Bulk(expected.clone()));
    c.call(&["FUNCTION", "FLUSH"]);
    assert_eq!(
        c.call(&[b"FUNCTION".as_slice(), b"RESTORE", &expected]),
        simple("OK")
    );
    assert_eq!(c.call(&["FCALL", "lzf_b", "0"]), bulk("a".repeat(40)));
}

/// Extra arguments after FUNCTION RESTORE and FUNCTION FLUSH get Redis's
/// subcommand error (before the policy is looked at); an unknown FUNCTION
/// LIST argument is echoed with CR and LF shown as spaces.
#[test]
fn subcommand_argument_errors() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&["FUNCTION", "restore", "x", "BAD", "extra"]),
        error(
            "ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP."
        )
    );
    assert_eq!(
        c.call(&["FUNCTION", "FLUSH", "SYNC", "extra"]),
        error(
            "ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try FUNCTION HELP."
        )
    );
    assert_eq!(
        c.call(&["FUNCTION", "FLUSH", "LATER"]),
        error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    );
    assert_eq!(
        c.call(&["FUNCTION", "LIST", "a\r\nb\r\n"]),
        error("ERR Unknown argument a  b  ")
    );
}

#[test]
fn stats_kill_and_help() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["FUNCTION", "LOAD", LIB1]);
    assert_eq!(
        c.call(&["FUNCTION", "STATS"]),
        Frame::Array(vec![
            bulk("running_script"),
            Frame::NullBulk,
            bulk("engines"),
            Frame::Array(vec![
                bulk("LUA"),
                Frame::Array(vec![
                    bulk("libraries_count"),
                    int(1),
                    bulk("functions_count"),
                    int(2)
                ]),
            ]),
        ])
    );
    assert_eq!(
        c.call(&["FUNCTION", "KILL"]),
        error("NOTBUSY No scripts in execution right now.")
    );
    assert!(matches!(c.call(&["FUNCTION", "HELP"]), Frame::Array(v) if v.len() == 40));
}

/// FUNCTION STATS and FUNCTION KILL from a client on the thread that runs
/// the busy function (tessera: one worker thread).
#[test]
fn busy_function_is_seen_and_killed_from_its_own_thread() {
    let s = if common::target_is_redis() {
        TestServer::start()
    } else {
        TestServer::start_with(&["--threads", "1"])
    };
    let mut other = s.raw();
    let mut runner = s.raw();
    other.call(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    assert_eq!(
        other.call(&[
            "FUNCTION",
            "LOAD",
            "#!lua name=spinlib\nredis.register_function('spin', function() while true do end end)"
        ]),
        bulk("spinlib")
    );
    runner.send(&["FCALL", "spin", "0"]);
    let busy =
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
    let mut answered = Frame::Null;
    for _ in 0..200 {
        answered = other.call(&["PING"]);
        if answered == error(busy) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(answered, error(busy));
    // SCRIPT KILL does not stop a function: the answer names what would.
    assert_eq!(other.call(&["SCRIPT", "KILL"]), error(busy));
    let Frame::Array(stats) = other.call(&["FUNCTION", "STATS"]) else {
        panic!("FUNCTION STATS")
    };
    let Frame::Array(running) = &stats[1] else {
        panic!("running_script: {:?}", stats[1])
    };
    assert_eq!(
        running[..4],
        [
            bulk("name"),
            bulk("spin"),
            bulk("command"),
            Frame::Array(vec![bulk("FCALL"), bulk("spin"), bulk("0")])
        ]
    );
    assert_eq!(running[4], bulk("duration_ms"));
    assert_eq!(other.call(&["FUNCTION", "KILL"]), simple("OK"));
    match runner.read_frame() {
        // Redis names SCRIPT KILL here too.
        Frame::Error(e) => assert_eq!(
            String::from_utf8_lossy(&e),
            "ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2."
        ),
        other => panic!("expected the function to be killed, got {other:?}"),
    }
    assert_eq!(other.call(&["PING"]), simple("PONG"));
}

/// A library's top-level code sees `redis` (register_function, log, the
/// LOG_ and REDIS_VERSION constants) and no other global; its functions,
/// when called, see every global and the whole redis API.
#[test]
fn load_time_environment_as_redis() {
    let s = TestServer::start();
    let mut c = s.raw();
    for global in ["pcall", "string", "tonumber", "cjson", "_VERSION"] {
        let lib = format!(
            "#!lua name=env\nlocal v = {global}\nredis.register_function('g', function() return 1 end)"
        );
        assert_eq!(
            c.call(&["FUNCTION", "LOAD", "REPLACE", lib.as_str()]),
            error(&format!(
                "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable '{global}'"
            )),
            "{global}"
        );
    }
    let lib = "#!lua name=env\nlocal v = redis.setresp(3)\nredis.register_function('g', function() return 1 end)";
    assert_eq!(
        c.call(&["FUNCTION", "LOAD", "REPLACE", lib]),
        error("ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'setresp'")
    );
    let lib = "#!lua name=env\nredis.log(redis.LOG_DEBUG, redis.REDIS_VERSION)\nredis.register_function('g', function(k, a) return {tonumber('5'), type(string), type(pcall), type(redis.call)} end)";
    assert_eq!(c.call(&["FUNCTION", "LOAD", "REPLACE", lib]), bulk("env"));
    assert_eq!(
        c.call(&["FCALL", "g", "0"]),
        Frame::Array(vec![
            int(5),
            bulk("table"),
            bulk("function"),
            bulk("function")
        ])
    );
}

/// A library whose top-level code runs too long is refused after Redis's 500 ms, and the server
/// goes on serving (and loading).
#[test]
fn load_that_runs_too_long_times_out() {
    let s = TestServer::start();
    let mut c = s.raw();
    for body in [
        "while true do end",
        "local i = 0\nrepeat i = i + 1 until false",
    ] {
        let code = format!("#!lua name=slow\n{body}");
        assert_eq!(
            c.call(&["FUNCTION", "LOAD", &code]),
            error("ERR Error registering functions: ERR FUNCTION LOAD timeout"),
            "{body}"
        );
    }
    assert_eq!(
        c.call(&[
            "FUNCTION",
            "LOAD",
            "#!lua name=quick\nredis.register_function('q', function() return 5 end)"
        ]),
        bulk("quick")
    );
    assert_eq!(c.call(&["FCALL", "q", "0"]), int(5));
}

/// Redis 7.0 looks functions up ignoring case (and so finds clashes that way); library names
/// are case-sensitive, and FUNCTION LIST LIBRARYNAME is a case-insensitive pattern.
#[test]
fn function_names_ignore_case() {
    let s = TestServer::start();
    let mut c = s.raw();
    let lib = |name: &str, f: &str| {
        format!("#!lua name={name}\nredis.register_function('{f}', function() return '{f}' end)")
    };
    assert_eq!(
        c.call(&["FUNCTION", "LOAD", &lib("lib1", "f1")]),
        bulk("lib1")
    );
    assert_eq!(c.call(&["FCALL", "F1", "0"]), bulk("f1"));
    assert_eq!(
        c.call(&["FCALL_RO", "F1", "0"]),
        error("ERR Can not execute a script with write flag using *_ro command.")
    );
    assert_eq!(
        c.call(&["FUNCTION", "LOAD", &lib("lib2", "F1")]),
        error("ERR Function F1 already exists")
    );
    assert_eq!(
        c.call(&["FUNCTION", "LOAD", &lib("LIB1", "g1")]),
        bulk("LIB1")
    );
    let Frame::Array(listed) = c.call(&["FUNCTION", "LIST", "LIBRARYNAME", "LiB1"]) else {
        panic!("FUNCTION LIST is an array")
    };
    assert_eq!(listed.len(), 2);
    assert_eq!(c.call(&["FUNCTION", "DELETE", "lib1"]), simple("OK"));
    assert_eq!(
        c.call(&["FCALL", "f1", "0"]),
        error("ERR Function not found")
    );
    assert_eq!(c.call(&["FCALL", "G1", "0"]), bulk("g1"));
}

/// A library's `#!` line is split as Redis splits it, with its checks in Redis's order.
#[test]
fn library_metadata_is_read_as_redis_reads_it() {
    let s = TestServer::start();
    let mut c = s.raw();
    let f = |name: &str| format!("\nredis.register_function('{name}', function() return 1 end)");
    let cases: Vec<(String, Frame)> = vec![
        (format!("#!lua name=x name=y{}", f("f1")), error("ERR Invalid metadata value, name argument was given multiple times")),
        (format!("#!lua name=crlf\r{}", f("f2")), bulk("crlf")),
        (format!("#!lua name='quoted'{}", f("f3")), bulk("quoted")),
        (format!("#!lua NAME=upper{}", f("f4")), bulk("upper")),
        ("#!lua name=nonewline".to_string(), error("ERR Invalid library metadata")),
        ("#! lua name=x\n".to_string(), error("ERR Invalid metadata value given: lua")),
        ("#!foo name=bad-name\n".to_string(), error("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")),
        ("#!foo\n".to_string(), error("ERR Library name was not given")),
        ("#!foo name=ok\n".to_string(), error("ERR Engine 'foo' not found")),
        ("#!lua name=\"unbalanced\n".to_string(), error("ERR Invalid library metadata")),
    ];
    for (code, expected) in cases {
        assert_eq!(c.call(&["FUNCTION", "LOAD", &code]), expected, "{code}");
    }
}

/// redis.register_function takes numbers where it wants strings and matches named arguments
/// and flags ignoring case, as Redis does.
#[test]
fn register_function_arguments_as_redis_reads_them() {
    let s = TestServer::start();
    let mut c = s.raw();
    let load = |c: &mut common::RawClient, code: &str| {
        c.call(&[
            "FUNCTION",
            "LOAD",
            "REPLACE",
            &format!("#!lua name=tl\n{code}"),
        ])
    };
    assert_eq!(
        load(
            &mut c,
            "redis.register_function(1, function() return 1 end)"
        ),
        bulk("tl")
    );
    assert_eq!(c.call(&["FCALL", "1", "0"]), int(1));
    assert_eq!(
        load(&mut c, "redis.register_function{function_name=2, callback=function() return 2 end, description=3}"),
        bulk("tl")
    );
    assert_eq!(c.call(&["FCALL", "2", "0"]), int(2));
    assert_eq!(
        load(&mut c, "redis.register_function{'f', function() end}"),
        error("ERR Error registering functions: ERR unknown argument given to redis.register_function")
    );
    assert_eq!(
        load(&mut c, "redis.register_function{FUNCTION_NAME='up', CALLBACK=function() return 3 end, FLAGS={'NO-WRITES'}}"),
        bulk("tl")
    );
    assert_eq!(c.call(&["FCALL_RO", "up", "0"]), int(3));
    assert_eq!(
        load(
            &mut c,
            "redis.register_function{function_name='fl', callback=function() end, flags={1}}"
        ),
        error("ERR Error registering functions: ERR unknown flag given")
    );
}

#[test]
fn keys_and_args_tables_are_laid_out_as_redis_builds_them() {
    let s = TestServer::start();
    let mut c = s.raw();
    let lib = "#!lua name=holes\n\
               redis.register_function('holes', function(keys, args) keys[2] = nil return #keys end)";
    assert_eq!(c.call(&["FUNCTION", "LOAD", lib]), bulk("holes"));
    assert_eq!(
        c.call(&["FCALL", "holes", "3", "a", "b", "c"]),
        Frame::Integer(1)
    );
}

#[test]
fn function_list_options_given_twice_are_unknown_arguments() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(c.call(&["FUNCTION", "LOAD", LIB1]), bulk("lib1"));
    // Redis takes each option once; a repeat is read as an unknown argument,
    // named as the client spelled it.
    assert_eq!(
        c.call(&[
            "FUNCTION",
            "LIST",
            "LIBRARYNAME",
            "lib1",
            "libraryName",
            "x"
        ]),
        error("ERR Unknown argument libraryName")
    );
    assert_eq!(
        c.call(&[
            "FUNCTION",
            "LIST",
            "libraryname",
            "a",
            "WITHCODE",
            "libraryname"
        ]),
        error("ERR Unknown argument libraryname")
    );
    assert_eq!(
        c.call(&["FUNCTION", "LIST", "withcode", "WithCode"]),
        error("ERR Unknown argument WithCode")
    );
    assert_eq!(
        c.call(&["FUNCTION", "LIST", "withcode", "libraryname"]),
        error("ERR library name argument was not given")
    );
}

#[test]
fn register_function_outside_function_load_is_refused() {
    let s = TestServer::start();
    let mut c = s.raw();
    // From EVAL, redis.register_function does not exist.
    assert_eq!(
        c.call(&["EVAL", "return type(redis.register_function)", "0"]),
        bulk("nil")
    );
    let eval = c.call(&["EVAL", "redis.register_function('f', function() end)", "0"]);
    assert_eq!(
        eval,
        error("ERR user_script:1: attempt to call field 'register_function' (a nil value) script: 1d73cc797a996fca9d479d113dbcec2fa4704b45, on @user_script:1.")
    );
    // A library that keeps it and calls it after its load gets Redis's
    // error, before its arguments are looked at.
    let lib = "#!lua name=keeper\nlocal rf = redis.register_function\n\
               redis.register_function('late', function() return rf('g', function() end) end)\n\
               redis.register_function('late_bare', function() return rf() end)\n\
               redis.register_function('late_caught', function() local ok, e = pcall(rf, 'g', function() end) return e end)";
    assert_eq!(c.call(&["FUNCTION", "LOAD", lib]), bulk("keeper"));
    assert_eq!(
        c.call(&["FCALL", "late", "0"]),
        error("ERR redis.register_function can only be called on FUNCTION LOAD command script: late, on @user_function:3.")
    );
    assert_eq!(
        c.call(&["FCALL", "late_bare", "0"]),
        error("ERR redis.register_function can only be called on FUNCTION LOAD command script: late_bare, on @user_function:4.")
    );
    assert_eq!(
        c.call(&["FCALL", "late_caught", "0"]),
        bulk("ERR redis.register_function can only be called on FUNCTION LOAD command")
    );
    // Nothing was registered by those calls.
    assert_eq!(
        c.call(&["FCALL", "g", "0"]),
        error("ERR Function not found")
    );
}

#[test]
fn library_errors_keep_the_librarys_bytes() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        c.call(&[b"FUNCTION".as_slice(), b"LOAD", b"#!lua name=l1\nx \xff"]),
        Frame::Error(
            b"ERR Error compiling function: user_function:2: '=' expected near '\xff'".to_vec()
        )
    );
    assert_eq!(
        c.call(&[b"FUNCTION".as_slice(), b"LOAD", b"\xff", b"x"]),
        Frame::Error(b"ERR Unknown option given: \xff".to_vec())
    );
    assert_eq!(
        c.call(&[b"FUNCTION".as_slice(), b"LIST", b"\xff"]),
        Frame::Error(b"ERR Unknown argument \xff".to_vec())
    );
}
