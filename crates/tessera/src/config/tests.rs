//! Unit tests. Expected strings were checked against redis-server 7.0.15.

use super::parse::{c_strtoll, mem_to_u64, repr, split_args, strict_i64};
use super::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p =
            std::env::temp_dir().join(format!("tessera-config-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
    fn file(&self, name: &str, content: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, content).expect("write temp file");
        p
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn load(a: &[&str]) -> Result<Config, String> {
    Config::from_args(&args(a))
}

fn load_file(content: &str, extra: &[&str]) -> Result<Config, String> {
    let d = TempDir::new();
    let f = d.file("redis.conf", content);
    let mut a = vec![f.to_string_lossy().into_owned()];
    a.extend(extra.iter().map(|s| s.to_string()));
    Config::from_args(&a)
}

fn get1(c: &Config, name: &str) -> String {
    String::from_utf8(c.get_one(name).expect("known directive")).expect("utf8")
}

fn fatal_text(line: usize, text: &str, reason: &str) -> String {
    format!(
        "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line {line}\n>>> '{text}'\n{reason}"
    )
}

fn set(c: &Config, pairs: &[(&str, &str)]) -> Result<(), String> {
    let p: Vec<(&[u8], &[u8])> = pairs
        .iter()
        .map(|(a, b)| (a.as_bytes(), b.as_bytes()))
        .collect();
    c.set(&p)
}

fn strs(v: &[&[u8]]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.to_vec()).collect()
}

// ---------------------------------------------------------------------------
// Low-level parsing.

#[test]
fn split_args_quoting() {
    let ok = |line: &str, want: &[&[u8]]| {
        assert_eq!(split_args(line.as_bytes()), Some(strs(want)), "{line}")
    };
    ok("", &[]);
    ok("   \t ", &[]);
    ok("port 6379", &[b"port", b"6379"]);
    ok("  a   b\tc  ", &[b"a", b"b", b"c"]);
    ok(r#"x "a b" 'c d'"#, &[b"x", b"a b", b"c d"]);
    ok(r#"x """#, &[b"x", b""]);
    ok(
        r#"x "\x41\x4a\x4A" "\n\r\t\b\a\\\"\q""#,
        &[b"x", b"AJJ", b"\n\r\t\x08\x07\\\"q"],
    );
    ok(r#"x "\x4g""#, &[b"x", b"x4g"]);
    ok(r#"x 'it\'s' 'a\nb'"#, &[b"x", b"it's", b"a\\nb"]);
    ok(r#"ab"cd ef""#, &[b"abcd ef"]);
    for bad in [
        r#"ab"cd ef"gh"#,
        r#"x "abc"#,
        r#"x 'abc"#,
        r#"x "a"b"#,
        r#"x 'a'b"#,
        r#"x "abc\"#,
    ] {
        assert_eq!(split_args(bad.as_bytes()), None, "{bad}");
    }
}

#[test]
fn repr_round_trips() {
    let raw: &[u8] = b"a b\"c\\d\n\x01\xff";
    let q = repr(raw);
    assert_eq!(q, b"\"a b\\\"c\\\\d\\n\\x01\\xff\"".to_vec());
    assert_eq!(split_args(&q), Some(vec![raw.to_vec()]));
}

#[test]
fn numbers_and_units() {
    assert_eq!(strict_i64(b"0"), Some(0));
    assert_eq!(strict_i64(b"-12"), Some(-12));
    assert_eq!(strict_i64(b"9223372036854775807"), Some(i64::MAX));
    assert_eq!(strict_i64(b"-9223372036854775808"), Some(i64::MIN));
    for bad in [
        "",
        "-",
        "01",
        "-0",
        "+1",
        " 1",
        "1 ",
        "1x",
        "9223372036854775808",
    ] {
        assert_eq!(strict_i64(bad.as_bytes()), None, "{bad}");
    }
    assert_eq!(c_strtoll(b" -17", 10), (-17, false, true));
    assert_eq!(c_strtoll(b"", 10), (0, false, true));
    assert_eq!(c_strtoll(b"x", 10), (0, false, false));
    assert_eq!(c_strtoll(b"0755", 8), (0o755, false, true));
    let mem = |s: &str| mem_to_u64(s.as_bytes());
    assert_eq!(mem("100"), Some(100));
    assert_eq!(mem("1k"), Some(1000));
    assert_eq!(mem("1KB"), Some(1024));
    assert_eq!(mem("2m"), Some(2_000_000));
    assert_eq!(mem("2Mb"), Some(2 << 20));
    assert_eq!(mem("3g"), Some(3_000_000_000));
    assert_eq!(mem("3GB"), Some(3 << 30));
    assert_eq!(mem("5b"), Some(5));
    assert_eq!(mem(""), Some(0));
    assert_eq!(mem("99999999999999999999"), Some(u64::MAX));
    for bad in ["-1", "1x", "1 kb", "1.5mb", "1tb"] {
        assert_eq!(mem(bad), None, "{bad}");
    }
}

#[test]
fn keyspace_event_letters() {
    let show = |s: &str| KeyspaceEvents::parse(s.as_bytes()).map(|f| f.to_letters());
    assert_eq!(show("KEA").as_deref(), Some("AKE"));
    assert_eq!(show("Kn").as_deref(), Some("nK"));
    assert_eq!(show("dnt").as_deref(), Some("tdn"));
    assert_eq!(show("Kmn").as_deref(), Some("nKm"));
    assert_eq!(show("An").as_deref(), Some("A"));
    assert_eq!(show("g$lshzxetd").as_deref(), Some("A"));
    assert_eq!(show("").as_deref(), Some(""));
    assert_eq!(show("q"), None);
    let f = KeyspaceEvents::parse(b"Kx").unwrap_or_default();
    assert!(f.has(KeyspaceEvents::EXPIRED) && f.has(KeyspaceEvents::KEYSPACE) && !f.is_off());
}

// ---------------------------------------------------------------------------
// Start-up.

#[test]
fn defaults_match_redis() {
    let c = Config::new();
    for (name, want) in [
        ("port", "6379"),
        ("bind", "* -::*"),
        ("save", "3600 1 300 100 60 10000"),
        ("maxmemory", "0"),
        ("proto-max-bulk-len", "536870912"),
        ("client-query-buffer-limit", "1073741824"),
        (
            "client-output-buffer-limit",
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        ),
        ("oom-score-adj-values", "0 200 800"),
        ("latency-tracking-info-percentiles", "50 99 99.9"),
        ("proc-title-template", "{title} {listen-addr} {server-mode}"),
        ("unixsocketperm", "0"),
        ("notify-keyspace-events", ""),
        ("maxmemory-policy", "noeviction"),
        ("loglevel", "notice"),
        ("syslog-facility", "local0"),
        ("shutdown-on-sigint", "default"),
        ("hash-max-ziplist-entries", "512"),
        ("lua-time-limit", "5000"),
        ("active-defrag-ignore-bytes", "104857600"),
        ("io-threads", "0"),
        ("requirepass", ""),
        ("dbfilename", "dump.rdb"),
        ("rdb-key-save-delay", "0"),
    ] {
        assert_eq!(get1(&c, name), want, "{name}");
    }
    assert_eq!(c.threads(), 0);
    assert_eq!(c.maxmemory_policy(), MaxmemoryPolicy::NoEviction);
    assert_eq!(c.loglevel(), LogLevel::Notice);
    assert_eq!(c.requirepass(), None);
    assert_eq!(c.databases(), 16);
    assert_eq!(c.bind(), vec!["*".to_string(), "-::*".to_string()]);
    assert!(c.active_expire_enabled());
    assert_eq!(
        c.dir(),
        std::env::current_dir()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
}

#[test]
fn no_arguments_means_defaults_and_no_file() {
    let c = load(&[]).expect("defaults");
    assert_eq!(c.port(), 6379);
    assert!(c.config_file().is_none());
    assert_eq!(
        c.rewrite(),
        Err("ERR The server is running without a config file".to_string())
    );
}

#[test]
fn file_with_units_quotes_aliases() {
    let c = load_file(
        "# comment\n\n  port 7000  \r\nMAXMEMORY 1Gb\nrequirepass \"p a\\\"ss\"\nslaveof no one\n\
         hash-max-ziplist-entries 100\nlua-time-limit 123\nio-threads 4\nloglevel WARNING\n\
         maxmemory-policy allkeys-LRU\nnotify-keyspace-events Kgx\nunixsocketperm 0755\n\
         maxmemory-clients 7%\nhz 1000\nlist-max-ziplist-entries 5\n",
        &[],
    )
    .expect("valid file");
    assert_eq!(c.port(), 7000);
    assert_eq!(c.maxmemory(), 1 << 30);
    assert_eq!(get1(&c, "maxmemory"), "1073741824");
    assert_eq!(c.requirepass(), Some(b"p a\"ss".to_vec()));
    assert_eq!(c.hash_max_listpack_entries(), 100);
    assert_eq!(c.busy_reply_threshold(), 123);
    assert_eq!(c.threads(), 4);
    assert_eq!(get1(&c, "io-threads"), "4");
    assert_eq!(c.loglevel(), LogLevel::Warning);
    assert_eq!(c.maxmemory_policy(), MaxmemoryPolicy::AllkeysLru);
    assert_eq!(get1(&c, "notify-keyspace-events"), "gxK");
    assert!(c.notify_keyspace_events().has(KeyspaceEvents::EXPIRED));
    assert_eq!(get1(&c, "unixsocketperm"), "755");
    assert_eq!(c.unixsocketperm(), 0o755);
    assert_eq!(get1(&c, "maxmemory-clients"), "7%");
    assert_eq!(c.maxmemory_clients(), Err(7));
    assert_eq!(c.hz(), 500);
    assert_eq!(get1(&c, "hz"), "500");
}

#[test]
fn file_errors_match_redis_text() {
    let cases: &[(&str, usize, &str, &str)] = &[
        (
            "port 7500\n# c\n\n   maxmemory  abc  \n",
            4,
            "maxmemory  abc",
            "argument must be a memory value",
        ),
        (
            "port 7500\nfoo bar\n",
            2,
            "foo bar",
            "Bad directive or wrong number of arguments",
        ),
        (
            "port 7500 7600\n",
            1,
            "port 7500 7600",
            "wrong number of arguments",
        ),
        (
            "port \"7500\n",
            1,
            "port \"7500",
            "Unbalanced quotes in configuration line",
        ),
        (
            "port \"1\"x\n",
            1,
            "port \"1\"x",
            "Unbalanced quotes in configuration line",
        ),
        (
            "port 1\r\nhz x\r\n",
            2,
            "hz x",
            "argument couldn't be parsed into an integer",
        ),
        (
            "port 70000\n",
            1,
            "port 70000",
            "argument must be between 0 and 65535 inclusive",
        ),
        (
            "maxclients 0\n",
            1,
            "maxclients 0",
            "argument must be between 1 and 4294967295 inclusive",
        ),
        (
            "unixsocketperm 1000\n",
            1,
            "unixsocketperm 1000",
            "argument must be between 0 and 777 inclusive",
        ),
        (
            "unixsocketperm 800\n",
            1,
            "unixsocketperm 800",
            "argument couldn't be parsed as an octal number",
        ),
        (
            "maxmemory-clients 101%\n",
            1,
            "maxmemory-clients 101%",
            "percentage argument must be less or equal to 100",
        ),
        (
            "maxmemory-clients -5\n",
            1,
            "maxmemory-clients -5",
            "argument must be a memory or percent value",
        ),
        (
            "proto-max-bulk-len 1000\n",
            1,
            "proto-max-bulk-len 1000",
            "argument must be between 1048576 and 9223372036854775807 inclusive",
        ),
        (
            "daemonize maybe\n",
            1,
            "daemonize maybe",
            "argument must be 'yes' or 'no'",
        ),
        (
            "loglevel foo\n",
            1,
            "loglevel foo",
            "argument(s) must be one of the following: debug, verbose, notice, warning",
        ),
        ("save 900\n", 1, "save 900", "Invalid save parameters"),
        (
            "replicaof a\n",
            1,
            "replicaof a",
            "wrong number of arguments",
        ),
        (
            "replicaof a 99999\n",
            1,
            "replicaof a 99999",
            "Invalid master port",
        ),
        (
            "include\n",
            1,
            "include",
            "Bad directive or wrong number of arguments",
        ),
        (
            "list-max-ziplist-entries 5 6\n",
            1,
            "list-max-ziplist-entries 5 6",
            "Bad directive or wrong number of arguments",
        ),
        (
            "foo.bar\n",
            1,
            "foo.bar",
            "Module config specified without value",
        ),
        (
            "sentinel foo\n",
            1,
            "sentinel foo",
            "sentinel directive while not in sentinel mode",
        ),
        (
            "dir /nonexistent-tessera-dir\n",
            1,
            "dir /nonexistent-tessera-dir",
            "No such file or directory",
        ),
        (
            "dbfilename a/b\n",
            1,
            "dbfilename a/b",
            "dbfilename can't be a path, just a filename",
        ),
        (
            "appendfilename \"\"\n",
            1,
            "appendfilename \"\"",
            "appendfilename can't be empty",
        ),
        (
            "notify-keyspace-events q\n",
            1,
            "notify-keyspace-events q",
            "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
        ),
        (
            "client-output-buffer-limit master 1 2 3\n",
            1,
            "client-output-buffer-limit master 1 2 3",
            "Invalid client class specified in buffer limit configuration.",
        ),
        (
            "oom-score-adj-values 1 2 3000\n",
            1,
            "oom-score-adj-values 1 2 3000",
            "Invalid oom-score-adj-values, elements must be between -2000 and 2000.",
        ),
        (
            "shutdown-on-sigterm save nosave\n",
            1,
            "shutdown-on-sigterm save nosave",
            "shutdown options SAVE and NOSAVE can't be used simultaneously",
        ),
        (
            "cluster-announce-hostname a_b\n",
            1,
            "cluster-announce-hostname a_b",
            "Hostnames may only contain alphanumeric characters, hyphens or dots",
        ),
    ];
    for (content, line, text, reason) in cases {
        assert_eq!(
            load_file(content, &[]).err(),
            Some(fatal_text(*line, text, reason)),
            "{content}"
        );
    }
}

#[test]
fn unsupported_values_are_refused_at_startup() {
    for (content, reason) in [
        (
            "daemonize yes\n",
            "daemonize yes is not supported by Tessera yet",
        ),
        (
            "cluster-enabled yes\n",
            "cluster-enabled yes (cluster mode) is not supported by Tessera yet",
        ),
        ("loadmodule /x.so\n", "Modules are not supported by Tessera"),
    ] {
        let err = load_file(content, &[]).err().unwrap_or_default();
        assert!(err.ends_with(reason), "{content}: {err}");
        assert!(err.contains("at line 1\n"), "{content}: {err}");
    }
    // The harmless forms are accepted.
    let c = load_file(
        "daemonize no\nappendonly no\nreplicaof no one\nslaveof 127.0.0.1 6380\ntls-port 0\n",
        &[],
    )
    .expect("valid");
    assert!(!c.daemonize() && !c.appendonly());
}

#[test]
fn command_line_overrides_and_error_lines() {
    // Options follow the file's text after one extra newline.
    let c = load_file(
        "port 7000\nmaxmemory 5mb\n",
        &["--port", "7001", "--maxmemory-policy", "volatile-ttl"],
    )
    .expect("valid");
    assert_eq!(c.port(), 7001);
    assert_eq!(c.maxmemory(), 5 << 20);
    assert_eq!(c.maxmemory_policy(), MaxmemoryPolicy::VolatileTtl);

    let e = load_file("port 7500\n", &["--maxmemory", "abc"]).err();
    assert_eq!(
        e,
        Some(fatal_text(
            3,
            "maxmemory \"abc\"",
            "argument must be a memory value"
        ))
    );
    let e = load(&["--maxmemory", "1 2", "--port", "x"]).err();
    assert_eq!(
        e,
        Some(fatal_text(
            2,
            "maxmemory \"1 2\"",
            "argument must be a memory value"
        ))
    );
    let e = load(&["--port", "a\"b\\c"]).err();
    assert_eq!(
        e,
        Some(fatal_text(
            2,
            r#"port "a\"b\\c""#,
            "argument couldn't be parsed into an integer"
        ))
    );
    let e = load(&["--bogus"]).err();
    assert_eq!(
        e,
        Some(fatal_text(
            2,
            "bogus",
            "Bad directive or wrong number of arguments"
        ))
    );
    // `--save` followed by another option means `save ""`.
    let e = load(&["--save", "--port", "abc"]).err();
    assert_eq!(
        e,
        Some(fatal_text(
            3,
            "port \"abc\"",
            "argument couldn't be parsed into an integer"
        ))
    );
    let c = load(&["--save", "--port", "7002"]).expect("valid");
    assert_eq!(get1(&c, "save"), "");
    let c = load(&["--port", "7002", "--save"]).expect("valid");
    assert_eq!(get1(&c, "save"), "");
    // After a bare option name the next word is its value even with "--".
    let e = load(&["--requirepass", "--foo", "--port", "abc"]).err();
    assert_eq!(
        e,
        Some(fatal_text(
            3,
            "port \"abc\"",
            "argument couldn't be parsed into an integer"
        ))
    );
    let c = load(&["--requirepass", "--foo"]).expect("valid");
    assert_eq!(c.requirepass(), Some(b"--foo".to_vec()));
    // Name and value in one argument.
    let e = load(&["--port abc"]).err();
    assert_eq!(
        e,
        Some(fatal_text(
            2,
            "port abc",
            "argument couldn't be parsed into an integer"
        ))
    );
    let c = load(&["--port 7003", "--bind", "127.0.0.1", "::1"]).expect("valid");
    assert_eq!(c.port(), 7003);
    assert_eq!(c.bind(), vec!["127.0.0.1".to_string(), "::1".to_string()]);
    // Multi-argument values on the command line.
    let c = load(&["--save", "900", "1", "300", "10"]).expect("valid");
    assert_eq!(c.save_params(), vec![(900, 1), (300, 10)]);
}

#[test]
fn missing_file_and_logfile_errors() {
    let e = load(&["/nonexistent-tessera/redis.conf"]).err();
    assert_eq!(
        e.as_deref(),
        Some("Fatal error, can't open config file '/nonexistent-tessera/redis.conf': No such file or directory")
    );
    let e = load(&["--logfile", "/nonexistent-tessera/x.log"]).err();
    assert_eq!(
        e.as_deref(),
        Some("\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nCan't open the log file: No such file or directory")
    );
}

#[test]
fn save_lines_accumulate_and_reset() {
    let c = load_file("save 900 1\nsave 300 10\n", &[]).expect("valid");
    assert_eq!(get1(&c, "save"), "900 1 300 10");
    let c = load_file("save \"\"\nsave 60 5\n", &[]).expect("valid");
    assert_eq!(get1(&c, "save"), "60 5");
    let c = load_file("port 7000\n", &[]).expect("valid");
    assert_eq!(get1(&c, "save"), "3600 1 300 100 60 10000");
    let c = load_file("save 900 1\n", &["--save", "60", "5"]).expect("valid");
    assert_eq!(get1(&c, "save"), "900 1 60 5");
    // An empty save after the file's rules clears them, as in Redis.
    let c = load_file("save 900 1\n", &["--save", ""]).expect("valid");
    assert_eq!(get1(&c, "save"), "");
    let c = load_file("save 900 1\nsave \"\"\nsave 10 2\n", &[]).expect("valid");
    assert_eq!(get1(&c, "save"), "10 2");
}

#[test]
fn include_files_and_globs() {
    let d = TempDir::new();
    std::fs::create_dir_all(d.path().join("conf.d")).expect("mkdir");
    d.file("conf.d/b.conf", "maxmemory 2mb\n");
    d.file("conf.d/a.conf", "maxmemory 1mb\nhz 20\n");
    d.file("conf.d/.hidden.conf", "hz 99\n");
    d.file("inc.conf", "port 7100\nsave 10 20\n");
    let main = d.file(
        "main.conf",
        &format!(
            "save 900 1\ninclude {}\ninclude {}/conf.d/*.conf\ninclude {}/nothing-*.conf\n",
            d.path().join("inc.conf").display(),
            d.path().display(),
            d.path().display()
        ),
    );
    let c = Config::from_args(&[main.to_string_lossy().into_owned()]).expect("valid");
    assert_eq!(c.port(), 7100);
    assert_eq!(c.maxmemory(), 2 << 20);
    assert_eq!(c.hz(), 20);
    assert_eq!(get1(&c, "save"), "900 1 10 20");
    assert_eq!(c.config_file(), Some(main.as_path()));

    // Relative includes resolve against `dir`; errors name the included file's line.
    d.file("bad.conf", "port 1\nport x\n");
    let main = d.file(
        "main2.conf",
        &format!("dir {}\ninclude bad.conf\n", d.path().display()),
    );
    let e = Config::from_args(&[main.to_string_lossy().into_owned()]).err();
    assert_eq!(
        e,
        Some(fatal_text(
            2,
            "port x",
            "argument couldn't be parsed into an integer"
        ))
    );
    let main = d.file("main3.conf", "include /nonexistent-tessera/x.conf\n");
    let e = Config::from_args(&[main.to_string_lossy().into_owned()]).err();
    assert_eq!(
        e.as_deref(),
        Some("Fatal error, can't open config file '/nonexistent-tessera/x.conf': No such file or directory")
    );
}

#[test]
fn rename_command_is_collected() {
    let c = load_file(
        "rename-command FLUSHALL \"\"\nrename-command CONFIG cfg\n",
        &[],
    )
    .expect("valid");
    assert_eq!(
        c.renamed_commands(),
        &[
            (b"flushall".to_vec(), Vec::new()),
            (b"config".to_vec(), b"cfg".to_vec())
        ]
    );
    let d = TempDir::new();
    let f = d.file("r.conf", "rename-command NOPE x\n");
    let known = |name: &[u8]| name.eq_ignore_ascii_case(b"get");
    let e = Config::from_args_with_commands(&[f.to_string_lossy().into_owned()], &known).err();
    assert_eq!(
        e,
        Some(fatal_text(
            1,
            "rename-command NOPE x",
            "No such command in rename-command"
        ))
    );
    // Renames apply in order to the command names as they stand.
    let known = |name: &[u8]| {
        [&b"get"[..], b"set", b"del"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
    };
    let check = |text: &str| {
        let f = d.file("r2.conf", text);
        Config::from_args_with_commands(&[f.to_string_lossy().into_owned()], &known)
            .map(|c| c.renamed_commands().to_vec())
    };
    assert_eq!(
        check("rename-command GET SET\n").err(),
        Some(fatal_text(
            1,
            "rename-command GET SET",
            "Target command name already exists"
        ))
    );
    assert!(check("rename-command SET x\nrename-command GET SET\n").is_ok());
    assert!(check("rename-command SET x\nrename-command x y\nrename-command y \"\"\n").is_ok());
    assert_eq!(
        check("rename-command SET x\nrename-command SET y\n").err(),
        Some(fatal_text(
            2,
            "rename-command SET y",
            "No such command in rename-command"
        ))
    );
}

// ---------------------------------------------------------------------------
// CONFIG GET.

fn names(v: &[(String, Vec<u8>)]) -> Vec<&str> {
    v.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn get_star_lists_what_redis_lists() {
    let c = Config::new();
    let all = c.get(&[b"*"]);
    // As redis-server 7.0.15: 192 names (the worker count is `io-threads`).
    assert_eq!(all.len(), 192);
    let n = names(&all);
    for want in [
        "io-threads",
        "replicaof",
        "slaveof",
        "hash-max-ziplist-entries",
        "lua-time-limit",
        "dir",
    ] {
        assert!(n.contains(&want), "{want}");
    }
    for hidden in [
        "rdb-key-save-delay",
        "key-load-delay",
        "set-max-listpack-entries",
        "use-exit-on-panic",
        "threads",
    ] {
        assert!(!n.contains(&hidden), "{hidden}");
    }
    let unique: HashSet<&str> = n.iter().copied().collect();
    assert_eq!(unique.len(), n.len());
}

#[test]
fn get_patterns_names_and_duplicates() {
    let c = Config::new();
    // Exact names keep the client's spelling; duplicates are dropped without regard to case.
    let r = c.get(&[b"MAXMEMORY", b"maxmemory", b"maxmem*"]);
    let mut n = names(&r);
    assert_eq!(n[0], "MAXMEMORY");
    n.sort_unstable();
    assert_eq!(
        n,
        vec![
            "MAXMEMORY",
            "maxmemory-clients",
            "maxmemory-eviction-tenacity",
            "maxmemory-policy",
            "maxmemory-samples"
        ]
    );
    // Hidden ones need the exact name.
    assert_eq!(names(&c.get(&[b"rdb-key-*"])), Vec::<&str>::new());
    assert_eq!(
        names(&c.get(&[b"rdb-key-save-delay"])),
        vec!["rdb-key-save-delay"]
    );
    // Globs match aliases too, case-insensitively.
    let r = c.get(&[b"SLAVE-READ*", b"replica-read*"]);
    assert_eq!(
        r,
        vec![
            ("slave-read-only".to_string(), b"yes".to_vec()),
            ("replica-read-only".to_string(), b"yes".to_vec())
        ]
    );
    assert_eq!(names(&c.get(&[b"h[z]", b"H?"])), vec!["hz"]);
    assert!(c.get(&[b"nosuch", b"hz\\"]).is_empty());
}

// ---------------------------------------------------------------------------
// CONFIG SET.

fn set_err(name: &str, why: &str) -> String {
    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
}

#[test]
fn set_error_strings() {
    let c = Config::new();
    assert_eq!(
        set(&c, &[("maxmemory", "1mb"), ("maxmemory", "2mb")]),
        Err(set_err("maxmemory", "duplicate parameter"))
    );
    assert_eq!(
        set(&c, &[("maxmemory", "1mb"), ("MAXMEMORY", "2mb")]),
        Err(set_err("MAXMEMORY", "duplicate parameter"))
    );
    assert_eq!(
        set(&c, &[("daemonize", "no")]),
        Err(set_err("daemonize", "can't set immutable config"))
    );
    assert_eq!(
        set(&c, &[("foo", "bar")]),
        Err("ERR Unknown option or number of arguments for CONFIG SET - 'foo'".into())
    );
    assert_eq!(
        set(
            &c,
            &[("maxmemory", "1mb"), ("foo", "bar"), ("daemonize", "yes")]
        ),
        Err("ERR Unknown option or number of arguments for CONFIG SET - 'foo'".into())
    );
    assert_eq!(
        set(&c, &[("daemonize", "yes"), ("foo", "bar")]),
        Err(set_err("daemonize", "can't set immutable config"))
    );
    assert_eq!(
        set(&c, &[("MAXMEMORY", "abc")]),
        Err(set_err("maxmemory", "argument must be a memory value"))
    );
    assert_eq!(
        set(&c, &[("LUA-TIME-LIMIT", "abc")]),
        Err(set_err(
            "lua-time-limit",
            "argument couldn't be parsed into an integer"
        ))
    );
    assert_eq!(
        set(&c, &[("lua-time-limit", "-5")]),
        Err(set_err(
            "lua-time-limit",
            "argument must be between 0 and 9223372036854775807 inclusive"
        ))
    );
    assert_eq!(
        set(&c, &[("dir", "/tmp")]),
        Err(set_err("dir", "can't set protected config"))
    );
    assert_eq!(
        set(&c, &[("dbfilename", "x.rdb")]),
        Err(set_err("dbfilename", "can't set protected config"))
    );
    assert_eq!(
        set(&c, &[("appendfsync", "foo")]),
        Err(set_err(
            "appendfsync",
            "argument(s) must be one of the following: everysec, always, no"
        ))
    );
    assert_eq!(
        set(&c, &[("hz", "01")]),
        Err(set_err("hz", "argument couldn't be parsed into an integer"))
    );
    assert_eq!(
        set(&c, &[("maxclients", "-1")]),
        Err(set_err(
            "maxclients",
            "argument must be between 1 and 4294967295 inclusive"
        ))
    );
    assert_eq!(
        set(&c, &[("save", "3600  1")]),
        Err(set_err("save", "Invalid save parameters"))
    );
    assert_eq!(
        set(&c, &[("slaveof", "no one")]),
        Err(set_err("slaveof", "can't set immutable config"))
    );
    assert_eq!(
        set(&c, &[("io-threads", "2")]),
        Err(set_err("io-threads", "can't set immutable config"))
    );
    let p: &[(&[u8], &[u8])] = &[(b"appendonly", b"no")];
    assert_eq!(
        c.set_with(
            p,
            SetContext {
                local_client: false,
                loading: true
            }
        ),
        Err("LOADING Redis is loading the dataset in memory".into())
    );
}

#[test]
fn set_is_all_or_nothing() {
    let c = Config::new();
    assert_eq!(
        set(
            &c,
            &[
                ("maxmemory", "5"),
                ("slave-priority", "5"),
                ("hz", "abc"),
                ("maxmemory-policy", "bad")
            ]
        ),
        Err(set_err("hz", "argument couldn't be parsed into an integer"))
    );
    assert_eq!(c.maxmemory(), 0);
    assert_eq!(get1(&c, "replica-priority"), "100");
    assert_eq!(
        set(&c, &[("maxmemory", "5"), ("maxmemory-policy", "bad")]),
        Err(set_err(
            "maxmemory-policy",
            "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, \
             allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
        ))
    );
    assert_eq!(c.maxmemory(), 0);

    assert_eq!(
        set(
            &c,
            &[
                ("maxmemory", "1kb"),
                ("maxmemory-policy", "ALLKEYS-LFU"),
                ("hz", "0")
            ]
        ),
        Ok(())
    );
    assert_eq!(c.maxmemory(), 1024);
    assert_eq!(c.maxmemory_policy(), MaxmemoryPolicy::AllkeysLfu);
    assert_eq!(get1(&c, "hz"), "1");
    // A name and its alias are separate entries: accepted, the last one wins.
    assert_eq!(
        set(&c, &[("slave-priority", "5"), ("replica-priority", "6")]),
        Ok(())
    );
    assert_eq!(get1(&c, "slave-priority"), "6");
}

#[test]
fn set_special_values() {
    let c = Config::new();
    let ok = |pairs: &[(&str, &str)]| assert_eq!(set(&c, pairs), Ok(()), "{pairs:?}");
    ok(&[("save", "")]);
    assert_eq!(get1(&c, "save"), "");
    ok(&[("save", "10 4294967297")]);
    assert_eq!(get1(&c, "save"), "10 1");
    ok(&[("client-output-buffer-limit", "pubsub 1mb 2k 3")]);
    assert_eq!(
        get1(&c, "client-output-buffer-limit"),
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 2000 3"
    );
    ok(&[("client-output-buffer-limit", "REPLICA 1 2 3")]);
    assert_eq!(
        c.client_output_buffer_limit(ClientClass::Replica),
        ObufLimit {
            hard_bytes: 1,
            soft_bytes: 2,
            soft_seconds: 3
        }
    );
    assert_eq!(
        set(&c, &[("client-output-buffer-limit", "normal 1 2")]),
        Err(set_err(
            "client-output-buffer-limit",
            "Wrong number of arguments in buffer limit configuration."
        ))
    );
    assert_eq!(
        set(&c, &[("client-output-buffer-limit", "normal 1 2 -3")]),
        Err(set_err(
            "client-output-buffer-limit",
            "Error in hard, soft or soft_seconds setting in buffer limit configuration."
        ))
    );
    ok(&[("notify-keyspace-events", "KEA")]);
    assert_eq!(get1(&c, "notify-keyspace-events"), "AKE");
    ok(&[("oom-score-adj", "relative")]);
    assert_eq!(get1(&c, "oom-score-adj"), "yes");
    assert_eq!(
        set(&c, &[("oom-score-adj-values", "1 2")]),
        Err(set_err("oom-score-adj-values", "wrong number of arguments"))
    );
    ok(&[(
        "latency-tracking-info-percentiles",
        "0.000001 1e2 33.3333333",
    )]);
    assert_eq!(
        get1(&c, "latency-tracking-info-percentiles"),
        "0.000001 100 33.333333"
    );
    assert_eq!(
        set(&c, &[("latency-tracking-info-percentiles", "101")]),
        Err(set_err(
            "latency-tracking-info-percentiles",
            "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
        ))
    );
    // strtod's hex floats, as Redis reads them.
    ok(&[("latency-tracking-info-percentiles", "0x10 0x1p3")]);
    assert_eq!(get1(&c, "latency-tracking-info-percentiles"), "16 8");
    // The backlog's minimum size applies to CONFIG SET.
    ok(&[("repl-backlog-size", "1k")]);
    assert_eq!(get1(&c, "repl-backlog-size"), "16384");
    ok(&[("repl-backlog-size", "2mb")]);
    assert_eq!(get1(&c, "repl-backlog-size"), "2097152");
    // (Whether TLS can be configured is the server's hook to say.)
    ok(&[("tls-cluster", "no")]);
    ok(&[("bind", "127.0.0.1 ::1")]);
    assert_eq!(c.bind(), vec!["127.0.0.1".to_string(), "::1".to_string()]);
    ok(&[("bind", "")]);
    assert!(c.bind().is_empty());
    ok(&[("shutdown-on-sigint", "now NOSAVE force")]);
    assert_eq!(get1(&c, "shutdown-on-sigint"), "nosave now force");
    ok(&[("maxmemory-clients", "10%")]);
    assert_eq!(get1(&c, "maxmemory-clients"), "10%");
    ok(&[("maxmemory", "99999999999999999999")]);
    assert_eq!(get1(&c, "maxmemory"), "18446744073709551615");
    ok(&[("requirepass", "secret")]);
    assert_eq!(c.requirepass(), Some(b"secret".to_vec()));
    ok(&[("requirepass", "")]);
    assert_eq!(c.requirepass(), None);
    assert!(Config::is_sensitive(b"REQUIREPASS") && !Config::is_sensitive(b"port"));
    assert_eq!(
        set(&c, &[("proc-title-template", "{title}")]),
        Err(set_err(
            "proc-title-template",
            "template format is invalid or contains unknown variables"
        ))
    );
    ok(&[("proc-title-template", "x}y{{")]);
}

#[test]
fn protected_configs_follow_enable_protected_configs() {
    let d = TempDir::new();
    let c = load(&["--enable-protected-configs", "local"]).expect("valid");
    let target = d.path().to_string_lossy().into_owned();
    let p: &[(&[u8], &[u8])] = &[(b"dir", target.as_bytes())];
    assert_eq!(
        c.set_with(p, SetContext::default()),
        Err(set_err("dir", "can't set protected config"))
    );
    assert_eq!(
        c.set_with(
            p,
            SetContext {
                local_client: true,
                loading: false
            }
        ),
        Ok(())
    );
    let canon = std::fs::canonicalize(d.path())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    assert_eq!(c.dir(), canon);
    let c = load(&["--enable-protected-configs", "yes"]).expect("valid");
    assert_eq!(
        set(&c, &[("dir", "/nonexistent-tessera")]),
        Err(set_err("dir", "No such file or directory"))
    );
    assert_eq!(
        set(&c, &[("dbfilename", "a/b")]),
        Err(set_err(
            "dbfilename",
            "dbfilename can't be a path, just a filename"
        ))
    );
}

#[test]
fn apply_hook_sees_changes_and_can_veto() {
    let c = Config::new();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen2 = Arc::clone(&seen);
    c.set_apply_hook(Box::new(move |cfg: &Config, name: &str| {
        seen2.lock().push(name.to_string());
        if name == "port" && cfg.port() == 1 {
            return Err("Unable to listen on this port. Check server logs.".into());
        }
        Ok(())
    }));
    assert_eq!(
        set(
            &c,
            &[
                ("maxmemory", "10"),
                ("timeout", "0"),
                ("lua-time-limit", "7")
            ]
        ),
        Ok(())
    );
    assert_eq!(
        *seen.lock(),
        vec!["maxmemory".to_string(), "busy-reply-threshold".to_string()]
    );
    seen.lock().clear();
    assert_eq!(
        set(&c, &[("maxmemory", "20"), ("port", "1")]),
        Err(set_err(
            "port",
            "Unable to listen on this port. Check server logs."
        ))
    );
    assert_eq!(c.maxmemory(), 10);
    assert_eq!(c.port(), 6379);
    // maxmemory, port (refused), then maxmemory again after the rollback.
    assert_eq!(
        *seen.lock(),
        vec![
            "maxmemory".to_string(),
            "port".to_string(),
            "maxmemory".to_string()
        ]
    );
}

#[test]
fn config_is_shareable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Config>();
    let c = Arc::new(Config::new());
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let c = Arc::clone(&c);
            std::thread::spawn(move || {
                for i in 0..50 {
                    let v = (t * 1000 + i).to_string();
                    let _ = set(&c, &[("maxmemory", v.as_str())]);
                    let _ = c.maxmemory();
                    let _ = c.get(&[b"max*"]);
                }
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().is_ok());
    }
}

// ---------------------------------------------------------------------------
// CONFIG REWRITE.

const ORIGINAL: &str = "# top comment
port 7414
save 900 1
save 300 10


hash-max-ziplist-entries 100
slave-read-only no
rename-command FLUSHALL \"\"
loglevel \"warning\"
logfile \"\"
# mid comment
maxmemory 200
maxmemory 300
appendonly no
Port 7414
io-threads 1
bind 127.0.0.1
notify-keyspace-events \"\"
client-output-buffer-limit normal 0 0 0
unixsocketperm 0700
";

#[test]
fn rewrite_keeps_layout_like_redis() {
    let d = TempDir::new();
    let f = d.file("redis.conf", ORIGINAL);
    let dir = std::fs::canonicalize(d.path())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let c = Config::from_args(&[
        f.to_string_lossy().into_owned(),
        "--dir".into(),
        dir.clone(),
    ])
    .expect("valid");
    for (k, v) in [
        ("hash-max-listpack-entries", "300"),
        ("requirepass", "a b\"c"),
        ("tcp-keepalive", "200"),
        ("proto-max-bulk-len", "1gb"),
        ("maxmemory", "1536kb"),
        ("client-output-buffer-limit", "pubsub 1mb 2k 3"),
        ("latency-tracking-info-percentiles", "50.5 99"),
        ("maxmemory-clients", "5%"),
        ("notify-keyspace-events", "KEA"),
        ("loglevel", "notice"),
        ("save", "100 10"),
        ("list-max-ziplist-size", "5"),
    ] {
        assert_eq!(set(&c, &[(k, v)]), Ok(()), "{k}");
    }
    assert_eq!(c.rewrite(), Ok(()));
    let got = std::fs::read_to_string(&f).unwrap_or_default();
    let want = format!(
        "# top comment
port 7414
save 100 10

hash-max-listpack-entries 300
replica-read-only no
rename-command FLUSHALL \"\"
loglevel notice
logfile \"\"
# mid comment
maxmemory 1536kb

appendonly no

io-threads 1
bind 127.0.0.1
notify-keyspace-events \"AKE\"
client-output-buffer-limit normal 0 0 0
unixsocketperm 700

# Generated by CONFIG REWRITE
requirepass \"a b\\\"c\"
list-max-listpack-size 5
tcp-keepalive 200
proto-max-bulk-len 1gb
maxmemory-clients 5%
dir \"{dir}\"
client-output-buffer-limit pubsub 1mb 2000 3
latency-tracking-info-percentiles 50.5 99
"
    );
    assert_eq!(got, want);

    // Like redis-server, a second rewrite hands the old pubsub line to the
    // replica class (lines of one directive are reused in order) and appends
    // the pubsub one. With nothing left to append, the file's final newline
    // then shows up as one empty last line, after which it is stable.
    assert_eq!(c.rewrite(), Ok(()));
    let second = want.replace(
        "client-output-buffer-limit pubsub 1mb 2000 3\nlatency-tracking-info-percentiles 50.5 99\n",
        "client-output-buffer-limit replica 256mb 64mb 60\nlatency-tracking-info-percentiles 50.5 99\n\n\
         client-output-buffer-limit pubsub 1mb 2000 3\n",
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap_or_default(), second);
    let third = format!("{second}\n");
    for _ in 0..2 {
        assert_eq!(c.rewrite(), Ok(()));
        assert_eq!(std::fs::read_to_string(&f).unwrap_or_default(), third);
    }
    let again =
        Config::from_args(&[f.to_string_lossy().into_owned()]).expect("rewritten file loads");
    assert_eq!(again.get(&[b"*"]), c.get(&[b"*"]));
}

#[test]
fn rewrite_of_missing_or_unknown_lines() {
    let d = TempDir::new();
    let f = d.file("r.conf", "port 7000\n");
    let c = Config::from_args(&[f.to_string_lossy().into_owned()]).expect("valid");
    // Lines the server does not know (edited in later) are kept as comments.
    std::fs::write(&f, "port 7000\nbogus directive\nsave \"unbalanced\n").expect("write");
    assert_eq!(set(&c, &[("save", "")]), Ok(()));
    assert_eq!(c.rewrite(), Ok(()));
    let got = std::fs::read_to_string(&f).unwrap_or_default();
    assert!(got.starts_with("port 7000\n# ??? bogus directive\n# ??? save \"unbalanced\n\n# Generated by CONFIG REWRITE\n"), "{got}");
    assert!(got.contains("\nsave \"\"\n"), "{got}");
    // A file removed since start-up is written from scratch.
    std::fs::remove_file(&f).expect("remove");
    assert_eq!(c.rewrite(), Ok(()));
    let got = std::fs::read_to_string(&f).unwrap_or_default();
    assert!(
        got.starts_with("# Generated by CONFIG REWRITE\nport 7000\n"),
        "{got}"
    );
}

#[test]
fn threads_is_a_start_up_spelling_of_io_threads() {
    let c = load(&["--threads", "3"]).expect("--threads is accepted");
    assert_eq!(c.threads(), 3);
    assert_eq!(get1(&c, "io-threads"), "3");
    // CONFIG GET and SET know Redis's names only.
    assert!(c.get(&[b"threads"]).is_empty());
    assert!(c.get_one("threads").is_none());
    assert_eq!(
        set(&c, &[("threads", "2")]),
        Err("ERR Unknown option or number of arguments for CONFIG SET - 'threads'".to_string())
    );
    let c = load_file("threads 5\n", &[]).expect("a config file may say threads");
    assert_eq!(c.threads(), 5);
}

#[test]
fn one_quoted_value_of_a_many_valued_directive_is_split_at_spaces() {
    let c = load(&["--client-output-buffer-limit", "replica 0 0 0"]).expect("valid");
    assert!(get1(&c, "client-output-buffer-limit").contains("slave 0 0 0"));
    let c = load(&["--oom-score-adj-values", "0 200 800"]).expect("valid");
    assert_eq!(get1(&c, "oom-score-adj-values"), "0 200 800");
    let c = load_file("client-output-buffer-limit \"pubsub 1mb 2mb 3\"\n", &[]).expect("valid");
    assert!(get1(&c, "client-output-buffer-limit").contains("pubsub 1048576 2097152 3"));
    let c = load(&["--save", ""]).expect("valid");
    assert_eq!(get1(&c, "save"), "");
}
