//! Server commands: INFO, CONFIG, COMMAND, TIME, LASTSAVE, SLOWLOG, LATENCY, MEMORY, MONITOR,
//! SHUTDOWN and DEBUG. Expected values are what redis-server 7.0 replies; where Tessera may
//! legitimately differ (help texts, exact memory numbers, command docs summaries) the tests check
//! the shape and the invariants instead.

mod common;

use common::{bulk, error, fmt_frame, simple, wait_until, Frame, RawClient, TestServer};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const DEBUG_REFUSED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

// ---------------------------------------------------------------- helpers

/// The text of a bulk or verbatim string reply.
fn text(f: Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8(b).expect("utf-8 reply"),
        Frame::Verbatim { text, .. } => String::from_utf8(text).expect("utf-8 reply"),
        other => panic!("expected a string reply, got {}", fmt_frame(&other)),
    }
}

fn int(f: &Frame) -> i64 {
    match f {
        Frame::Integer(i) => *i,
        other => panic!("expected an integer reply, got {}", fmt_frame(other)),
    }
}

fn array(f: Frame) -> Vec<Frame> {
    match f {
        Frame::Array(items) | Frame::Set(items) => items,
        other => panic!("expected an array reply, got {}", fmt_frame(&other)),
    }
}

fn string(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("expected a string, got {}", fmt_frame(other)),
    }
}

/// Name/value pairs of a RESP2 flat array or a RESP3 map.
fn pairs(f: Frame) -> Vec<(String, Frame)> {
    match f {
        Frame::Map(kv) => kv.into_iter().map(|(k, v)| (string(&k), v)).collect(),
        Frame::Array(items) => {
            assert_eq!(items.len() % 2, 0, "odd-length pair array");
            items
                .chunks(2)
                .map(|kv| (string(&kv[0]), kv[1].clone()))
                .collect()
        }
        other => panic!("expected a map or flat array, got {}", fmt_frame(&other)),
    }
}

/// A map (or flat array) of integer pairs.
fn pairs_int(f: Frame) -> Vec<(i64, i64)> {
    let items = match f {
        Frame::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        Frame::Array(a) => a,
        other => panic!("expected a map or flat array, got {}", fmt_frame(&other)),
    };
    items
        .chunks(2)
        .map(|kv| (int(&kv[0]), int(&kv[1])))
        .collect()
}

fn info(raw: &mut RawClient, sections: &[&str]) -> String {
    let mut args = vec!["INFO"];
    args.extend_from_slice(sections);
    text(raw.call(&args))
}

/// Section titles (`# Server` -> `Server`) of an INFO reply, in order.
fn section_titles(info: &str) -> Vec<String> {
    info.lines()
        .filter_map(|l| l.strip_prefix("# "))
        .map(|s| s.trim_end().to_string())
        .collect()
}

/// `name:value` fields of an INFO reply.
fn info_fields(info: &str) -> BTreeMap<String, String> {
    info.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim_end().to_string()))
        .collect()
}

fn info_field(raw: &mut RawClient, section: &str, name: &str) -> Option<String> {
    info_fields(&info(raw, &[section])).remove(name)
}

/// `a=1,b=2` -> {a: 1, b: 2}
fn kv_list(s: &str) -> BTreeMap<String, String> {
    s.split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn commandstat(raw: &mut RawClient, name: &str) -> Option<BTreeMap<String, String>> {
    info_field(raw, "commandstats", &format!("cmdstat_{name}")).map(|v| kv_list(&v))
}

fn config_get(raw: &mut RawClient, name: &str) -> String {
    let reply = pairs(raw.call(&["CONFIG", "GET", name]));
    assert_eq!(reply.len(), 1, "CONFIG GET {name}");
    string(&reply[0].1)
}

fn ok(raw: &mut RawClient, args: &[&str]) {
    assert_eq!(raw.call(args), simple("OK"), "{}", args.join(" "));
}

fn unix_now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A fresh directory for configuration files, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join("tessera-tests").join(format!(
            "{tag}-{}-{n}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------- INFO

const DEFAULT_SECTIONS: &[&str] = &[
    "Server",
    "Clients",
    "Memory",
    "Persistence",
    "Stats",
    "Replication",
    "CPU",
    "Modules",
    "Errorstats",
    "Cluster",
    "Keyspace",
];

const ALL_SECTIONS: &[&str] = &[
    "Server",
    "Clients",
    "Memory",
    "Persistence",
    "Stats",
    "Replication",
    "CPU",
    "Modules",
    "Commandstats",
    "Errorstats",
    "Latencystats",
    "Cluster",
    "Keyspace",
];

#[test]
fn info_default_sections_and_version() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let all = info(&mut raw, &[]);
    assert!(all.contains("\r\n"), "INFO lines end with CRLF");
    assert_eq!(section_titles(&all), DEFAULT_SECTIONS);
    assert_eq!(
        section_titles(&info(&mut raw, &["default"])),
        DEFAULT_SECTIONS
    );
    let fields = info_fields(&all);
    assert_eq!(
        fields.get("redis_version").map(String::as_str),
        Some("7.0.15")
    );
    assert_eq!(
        fields.get("redis_mode").map(String::as_str),
        Some("standalone")
    );
    assert_eq!(fields.get("tcp_port"), Some(&s.port().to_string()));
    assert_eq!(fields.get("role").map(String::as_str), Some("master"));
    if !s.is_redis() {
        assert!(fields.contains_key("tessera_version"), "{all}");
    }
    let uptime: i64 = fields["uptime_in_seconds"].parse().unwrap();
    assert!((0..3600).contains(&uptime));
    assert!(fields["connected_clients"].parse::<i64>().unwrap() >= 1);
    assert!(fields["used_memory"].parse::<i64>().unwrap() > 0);
}

#[test]
fn info_selects_sections() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(section_titles(&info(&mut raw, &["server"])), ["Server"]);
    assert_eq!(section_titles(&info(&mut raw, &["SERVER"])), ["Server"]);
    assert_eq!(
        section_titles(&info(&mut raw, &["server", "clients"])),
        ["Server", "Clients"]
    );
    assert_eq!(
        section_titles(&info(&mut raw, &["CommandStats"])),
        ["Commandstats"]
    );
    for all in ["all", "everything"] {
        let titles = section_titles(&info(&mut raw, &[all]));
        for t in ["Commandstats", "Errorstats", "Keyspace"] {
            assert!(titles.iter().any(|x| x == t), "INFO {all}: {titles:?}");
        }
    }
    // An unknown section is an empty reply, not an error.
    assert_eq!(info(&mut raw, &["nosuchsection"]), "");
    let memory = info_fields(&info(&mut raw, &["memory"]));
    assert_eq!(memory["maxmemory"], "0");
    assert_eq!(memory["maxmemory_policy"], "noeviction");
}

#[test]
fn info_all_has_every_section() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(section_titles(&info(&mut raw, &["all"])), ALL_SECTIONS);
    assert_eq!(
        section_titles(&info(&mut raw, &["everything"])),
        ALL_SECTIONS
    );
    // Per-command latency percentiles (latency-tracking is on by default).
    assert_eq!(raw.call(&["GET", "k"]), Frame::NullBulk);
    let lat = info_fields(&info(&mut raw, &["latencystats"]));
    let get = kv_list(
        lat.get("latency_percentiles_usec_get")
            .unwrap_or_else(|| panic!("no latency_percentiles_usec_get in {lat:?}")),
    );
    assert_eq!(
        get.keys().map(String::as_str).collect::<Vec<_>>(),
        ["p50", "p99", "p99.9"]
    );
}

/// The fixed-field sections list exactly redis-server 7.0's fields, in its
/// order (monitoring tools read them by name); Tessera adds only
/// tessera_version.
#[test]
fn info_sections_have_redis_7_0_fields_in_order() {
    let expected: &[(&str, &[&str])] = &[
        (
            "server",
            &[
                "redis_version",
                "redis_git_sha1",
                "redis_git_dirty",
                "redis_build_id",
                "redis_mode",
                "os",
                "arch_bits",
                "monotonic_clock",
                "multiplexing_api",
                "atomicvar_api",
                "gcc_version",
                "process_id",
                "process_supervised",
                "run_id",
                "tcp_port",
                "server_time_usec",
                "uptime_in_seconds",
                "uptime_in_days",
                "hz",
                "configured_hz",
                "lru_clock",
                "executable",
                "config_file",
                "io_threads_active",
            ],
        ),
        (
            "clients",
            &[
                "connected_clients",
                "cluster_connections",
                "maxclients",
                "client_recent_max_input_buffer",
                "client_recent_max_output_buffer",
                "blocked_clients",
                "tracking_clients",
                "clients_in_timeout_table",
            ],
        ),
        (
            "memory",
            &[
                "used_memory",
                "used_memory_human",
                "used_memory_rss",
                "used_memory_rss_human",
                "used_memory_peak",
                "used_memory_peak_human",
                "used_memory_peak_perc",
                "used_memory_overhead",
                "used_memory_startup",
                "used_memory_dataset",
                "used_memory_dataset_perc",
                "allocator_allocated",
                "allocator_active",
                "allocator_resident",
                "total_system_memory",
                "total_system_memory_human",
                "used_memory_lua",
                "used_memory_vm_eval",
                "used_memory_lua_human",
                "used_memory_scripts_eval",
                "number_of_cached_scripts",
                "number_of_functions",
                "number_of_libraries",
                "used_memory_vm_functions",
                "used_memory_vm_total",
                "used_memory_vm_total_human",
                "used_memory_functions",
                "used_memory_scripts",
                "used_memory_scripts_human",
                "maxmemory",
                "maxmemory_human",
                "maxmemory_policy",
                "allocator_frag_ratio",
                "allocator_frag_bytes",
                "allocator_rss_ratio",
                "allocator_rss_bytes",
                "rss_overhead_ratio",
                "rss_overhead_bytes",
                "mem_fragmentation_ratio",
                "mem_fragmentation_bytes",
                "mem_not_counted_for_evict",
                "mem_replication_backlog",
                "mem_total_replication_buffers",
                "mem_clients_slaves",
                "mem_clients_normal",
                "mem_cluster_links",
                "mem_aof_buffer",
                "mem_allocator",
                "active_defrag_running",
                "lazyfree_pending_objects",
                "lazyfreed_objects",
            ],
        ),
        (
            "persistence",
            &[
                "loading",
                "async_loading",
                "current_cow_peak",
                "current_cow_size",
                "current_cow_size_age",
                "current_fork_perc",
                "current_save_keys_processed",
                "current_save_keys_total",
                "rdb_changes_since_last_save",
                "rdb_bgsave_in_progress",
                "rdb_last_save_time",
                "rdb_last_bgsave_status",
                "rdb_last_bgsave_time_sec",
                "rdb_current_bgsave_time_sec",
                "rdb_saves",
                "rdb_last_cow_size",
                "rdb_last_load_keys_expired",
                "rdb_last_load_keys_loaded",
                "aof_enabled",
                "aof_rewrite_in_progress",
                "aof_rewrite_scheduled",
                "aof_last_rewrite_time_sec",
                "aof_current_rewrite_time_sec",
                "aof_last_bgrewrite_status",
                "aof_rewrites",
                "aof_rewrites_consecutive_failures",
                "aof_last_write_status",
                "aof_last_cow_size",
                "module_fork_in_progress",
                "module_fork_last_cow_size",
            ],
        ),
        (
            "stats",
            &[
                "total_connections_received",
                "total_commands_processed",
                "instantaneous_ops_per_sec",
                "total_net_input_bytes",
                "total_net_output_bytes",
                "total_net_repl_input_bytes",
                "total_net_repl_output_bytes",
                "instantaneous_input_kbps",
                "instantaneous_output_kbps",
                "instantaneous_input_repl_kbps",
                "instantaneous_output_repl_kbps",
                "rejected_connections",
                "sync_full",
                "sync_partial_ok",
                "sync_partial_err",
                "expired_keys",
                "expired_stale_perc",
                "expired_time_cap_reached_count",
                "expire_cycle_cpu_milliseconds",
                "evicted_keys",
                "evicted_clients",
                "total_eviction_exceeded_time",
                "current_eviction_exceeded_time",
                "keyspace_hits",
                "keyspace_misses",
                "pubsub_channels",
                "pubsub_patterns",
                "pubsubshard_channels",
                "latest_fork_usec",
                "total_forks",
                "migrate_cached_sockets",
                "slave_expires_tracked_keys",
                "active_defrag_hits",
                "active_defrag_misses",
                "active_defrag_key_hits",
                "active_defrag_key_misses",
                "total_active_defrag_time",
                "current_active_defrag_time",
                "tracking_total_keys",
                "tracking_total_items",
                "tracking_total_prefixes",
                "unexpected_error_replies",
                "total_error_replies",
                "dump_payload_sanitizations",
                "total_reads_processed",
                "total_writes_processed",
                "io_threaded_reads_processed",
                "io_threaded_writes_processed",
                "reply_buffer_shrinks",
                "reply_buffer_expands",
            ],
        ),
        (
            "replication",
            &[
                "role",
                "connected_slaves",
                "master_failover_state",
                "master_replid",
                "master_replid2",
                "master_repl_offset",
                "second_repl_offset",
                "repl_backlog_active",
                "repl_backlog_size",
                "repl_backlog_first_byte_offset",
                "repl_backlog_histlen",
            ],
        ),
        (
            "cpu",
            &[
                "used_cpu_sys",
                "used_cpu_user",
                "used_cpu_sys_children",
                "used_cpu_user_children",
                "used_cpu_sys_main_thread",
                "used_cpu_user_main_thread",
            ],
        ),
    ];
    let s = TestServer::start();
    let mut raw = s.raw();
    for (section, fields) in expected {
        let text = info(&mut raw, &[section]);
        let names: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|l| l.split_once(':').map(|(k, _)| k))
            .filter(|k| *k != "tessera_version")
            .collect();
        assert_eq!(&names, fields, "INFO {section}");
    }
    // Lua memory counts every worker's state, whichever one answers INFO.
    let mut scripter = s.raw();
    assert_eq!(scripter.call(&["EVAL", "return 1", "0"]), Frame::Integer(1));
    for _ in 0..4 {
        let mut other = s.raw();
        let lua: i64 = info_field(&mut other, "memory", "used_memory_lua")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        assert!(lua > 0, "used_memory_lua {lua}");
    }
}

#[test]
fn info_keyspace_reflects_writes() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(info(&mut raw, &["keyspace"]), "# Keyspace\r\n");
    ok(&mut raw, &["SET", "a", "1"]);
    ok(&mut raw, &["SET", "b", "2", "EX", "100"]);
    ok(&mut raw, &["SELECT", "2"]);
    ok(&mut raw, &["SET", "c", "3"]);
    let ks = info_fields(&info(&mut raw, &["keyspace"]));
    assert_eq!(ks.len(), 2, "{ks:?}");
    let db0 = kv_list(&ks["db0"]);
    assert_eq!(db0["keys"], "2");
    assert_eq!(db0["expires"], "1");
    let avg: i64 = db0["avg_ttl"].parse().unwrap();
    assert!((0..=100_000).contains(&avg), "avg_ttl {avg}");
    let db2 = kv_list(&ks["db2"]);
    assert_eq!(db2["keys"], "1");
    assert_eq!(db2["expires"], "0");
    assert_eq!(db2["avg_ttl"], "0");
    // Emptied databases disappear from the section.
    assert_eq!(raw.call(&["FLUSHDB"]), simple("OK"));
    let ks = info_fields(&info(&mut raw, &["keyspace"]));
    assert_eq!(ks.keys().collect::<Vec<_>>(), ["db0"]);
}

#[test]
fn info_commandstats_counts_calls_failures_and_rejections() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["CONFIG", "RESETSTAT"]);
    for _ in 0..3 {
        ok(&mut raw, &["SET", "k", "v"]);
    }
    assert_eq!(raw.call(&["GET", "k"]), bulk("v"));
    assert_eq!(raw.call(&["GET", "missing"]), Frame::NullBulk);
    // Ran and failed.
    assert_eq!(
        raw.call(&["INCR", "k"]),
        error("ERR value is not an integer or out of range")
    );
    let set = commandstat(&mut raw, "set").expect("cmdstat_set");
    assert_eq!(set["calls"], "3");
    assert_eq!(set["rejected_calls"], "0");
    assert_eq!(set["failed_calls"], "0");
    assert!(set["usec"].parse::<u64>().is_ok());
    assert!(set["usec_per_call"].parse::<f64>().is_ok());
    let get = commandstat(&mut raw, "get").expect("cmdstat_get");
    assert_eq!(get["calls"], "2");
    assert_eq!(get["failed_calls"], "0");
    let incr = commandstat(&mut raw, "incr").expect("cmdstat_incr");
    assert_eq!(incr["calls"], "1");
    assert_eq!(incr["failed_calls"], "1");
    assert_eq!(incr["rejected_calls"], "0");
    // Subcommands are counted under `parent|sub`.
    let reset = commandstat(&mut raw, "config|resetstat").expect("cmdstat_config|resetstat");
    assert_eq!(reset["calls"], "1");
    // Commands never called have no line.
    assert!(commandstat(&mut raw, "append").is_none());
}

#[test]
fn info_commandstats_counts_rejected_calls() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(raw.call(&["GET", "k"]), Frame::NullBulk);
    // Rejected before running (wrong arity): counted as rejected, not as a call.
    assert_eq!(
        raw.call(&["GET"]),
        error("ERR wrong number of arguments for 'get' command")
    );
    let get = commandstat(&mut raw, "get").expect("cmdstat_get");
    assert_eq!(get["calls"], "1");
    assert_eq!(get["rejected_calls"], "1");
    assert_eq!(get["failed_calls"], "0");
    // A command rejected without ever running still gets a line.
    assert_eq!(
        raw.call(&["DECR"]),
        error("ERR wrong number of arguments for 'decr' command")
    );
    let decr = commandstat(&mut raw, "decr").expect("cmdstat_decr");
    assert_eq!(decr["calls"], "0");
    assert_eq!(decr["rejected_calls"], "1");
    // Subcommands too.
    assert_eq!(
        raw.call(&["CONFIG", "GET"]),
        error("ERR wrong number of arguments for 'config|get' command")
    );
    let cg = commandstat(&mut raw, "config|get").expect("cmdstat_config|get");
    assert_eq!(cg["calls"], "0");
    assert_eq!(cg["rejected_calls"], "1");
}

#[test]
fn info_errorstats_counts_errors_by_prefix() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["CONFIG", "RESETSTAT"]);
    assert_eq!(info(&mut raw, &["errorstats"]), "# Errorstats\r\n");
    ok(&mut raw, &["SET", "k", "v"]);
    assert_eq!(
        raw.call(&["INCR", "k"]),
        error("ERR value is not an integer or out of range")
    );
    assert!(matches!(raw.call(&["NOSUCHCOMMAND"]), Frame::Error(_)));
    assert_eq!(
        raw.call(&["AUTH", "someone", "pw"]),
        error("WRONGPASS invalid username-password pair or user is disabled.")
    );
    let errs = info_fields(&info(&mut raw, &["errorstats"]));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(errs["errorstat_ERR"], "count=2");
    assert_eq!(errs["errorstat_WRONGPASS"], "count=1");
    assert_eq!(
        info_field(&mut raw, "stats", "total_error_replies").as_deref(),
        Some("3")
    );
    ok(&mut raw, &["CONFIG", "RESETSTAT"]);
    assert_eq!(info(&mut raw, &["errorstats"]), "# Errorstats\r\n");
    assert_eq!(
        info_field(&mut raw, "stats", "total_error_replies").as_deref(),
        Some("0")
    );
}

#[test]
fn info_stats_count_keyspace_hits_and_misses() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["SET", "k", "v"]);
    ok(&mut raw, &["CONFIG", "RESETSTAT"]);
    assert_eq!(raw.call(&["GET", "k"]), bulk("v"));
    assert_eq!(raw.call(&["GET", "k"]), bulk("v"));
    assert_eq!(raw.call(&["GET", "nope"]), Frame::NullBulk);
    let stats = info_fields(&info(&mut raw, &["stats"]));
    assert_eq!(stats["keyspace_hits"], "2");
    assert_eq!(stats["keyspace_misses"], "1");
    // CONFIG RESETSTAT and the three GETs (INFO itself is counted once it has replied).
    assert_eq!(stats["total_commands_processed"], "4");
}

// ---------------------------------------------------------------- CONFIG GET / SET

#[test]
fn config_get_matches_names_and_patterns() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["CONFIG", "GET", "maxmemory"]),
        Frame::Array(vec![bulk("maxmemory"), bulk("0")])
    );
    // The name is matched case-insensitively and echoed as given.
    assert_eq!(
        raw.call(&["CONFIG", "GET", "MAXMEMORY"]),
        Frame::Array(vec![bulk("MAXMEMORY"), bulk("0")])
    );
    let names = |reply: Frame| -> BTreeMap<String, String> {
        pairs(reply)
            .into_iter()
            .map(|(k, v)| (k, string(&v)))
            .collect()
    };
    let mm = names(raw.call(&["CONFIG", "GET", "maxmemory*"]));
    assert_eq!(
        mm.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "maxmemory",
            "maxmemory-clients",
            "maxmemory-eviction-tenacity",
            "maxmemory-policy",
            "maxmemory-samples"
        ]
    );
    assert_eq!(mm["maxmemory-policy"], "noeviction");
    assert_eq!(mm["maxmemory-samples"], "5");
    // Several patterns; a parameter matched twice is reported once; no match adds nothing.
    let several = pairs(raw.call(&["CONFIG", "GET", "maxmemory", "port", "nomatch*", "maxmem*"]));
    let keys: Vec<&str> = several.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(several.len(), 6, "{keys:?}");
    assert_eq!(keys.iter().collect::<BTreeSet<_>>().len(), 6, "{keys:?}");
    assert!(keys.contains(&"port"));
    let port = several.iter().find(|(k, _)| k == "port").unwrap();
    assert_eq!(string(&port.1), s.port().to_string());
    // Aliases match too.
    let ro = names(raw.call(&["CONFIG", "GET", "*-read-only"]));
    assert_eq!(
        ro.keys().map(String::as_str).collect::<Vec<_>>(),
        ["replica-read-only", "slave-read-only"]
    );
    assert_eq!(
        raw.call(&["CONFIG", "GET", "nomatch*"]),
        Frame::Array(vec![])
    );
    assert_eq!(
        raw.call(&["CONFIG", "GET"]),
        error("ERR wrong number of arguments for 'config|get' command")
    );
}

#[test]
fn config_get_star_lists_redis_names_only() {
    // The same names as redis-server's own CONFIG GET *: the worker count is
    // `io-threads`, with no second `threads` entry.
    let names = |s: &TestServer| -> BTreeSet<String> {
        pairs(s.raw().call(&["CONFIG", "GET", "*"]))
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    let s = TestServer::start_with(&["--io-threads", "2"]);
    let reference = TestServer::redis();
    let (ours, redis) = (names(&s), names(&reference));
    assert_eq!(
        ours.symmetric_difference(&redis).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "CONFIG GET * names differing from redis-server's"
    );
    let mut raw = s.raw();
    assert_eq!(config_get(&mut raw, "io-threads"), "2");
    assert_eq!(
        raw.call(&["CONFIG", "GET", "threads"]),
        Frame::Array(vec![])
    );
    assert_eq!(
        raw.call(&["CONFIG", "SET", "threads", "2"]),
        error("ERR Unknown option or number of arguments for CONFIG SET - 'threads'")
    );
    assert_eq!(
        raw.call(&["CONFIG", "SET", "io-threads", "2"]),
        error("ERR CONFIG SET failed (possibly related to argument 'io-threads') - can't set immutable config")
    );
    if !s.is_redis() {
        // Tessera's own spelling still works on the command line.
        let t = TestServer::start_with(&["--threads", "3"]);
        assert_eq!(config_get(&mut t.raw(), "io-threads"), "3");
    }
}

#[test]
fn config_get_is_a_map_in_resp3() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert!(matches!(raw.call(&["HELLO", "3"]), Frame::Map(_)));
    assert_eq!(
        raw.call(&["CONFIG", "GET", "maxmemory"]),
        Frame::Map(vec![(bulk("maxmemory"), bulk("0"))])
    );
    let reply = raw.call(&["CONFIG", "GET", "maxmemory-policy", "hz"]);
    let Frame::Map(kv) = reply else {
        panic!("expected a map, got {}", fmt_frame(&reply));
    };
    let kv: BTreeMap<String, String> = kv.iter().map(|(k, v)| (string(k), string(v))).collect();
    assert_eq!(kv.len(), 2);
    assert_eq!(kv["maxmemory-policy"], "noeviction");
    assert_eq!(kv["hz"], "10");
}

#[test]
fn config_set_parses_memory_units() {
    let s = TestServer::start();
    let mut raw = s.raw();
    for (given, bytes) in [
        ("10mb", "10485760"),
        ("1GB", "1073741824"),
        ("100kb", "102400"),
        ("1k", "1000"),
        ("2m", "2000000"),
        ("3g", "3000000000"),
        ("12345", "12345"),
        ("0", "0"),
    ] {
        ok(&mut raw, &["CONFIG", "SET", "maxmemory", given]);
        assert_eq!(
            config_get(&mut raw, "maxmemory"),
            bytes,
            "maxmemory {given}"
        );
    }
    ok(
        &mut raw,
        &["CONFIG", "SET", "MAXMEMORY-POLICY", "ALLKEYS-LRU"],
    );
    assert_eq!(config_get(&mut raw, "maxmemory-policy"), "allkeys-lru");
    ok(&mut raw, &["CONFIG", "SET", "maxmemory", "0"]);
}

#[test]
fn config_set_errors_are_exact() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["CONFIG", "SET", "maxmemory", "abc"]),
        error("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value")
    );
    assert_eq!(
        raw.call(&["CONFIG", "SET", "maxmemory", "-1"]),
        error("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value")
    );
    assert_eq!(
        raw.call(&["CONFIG", "SET", "maxmemory-policy", "bogus"]),
        error("ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction")
    );
    assert_eq!(
        raw.call(&["CONFIG", "SET", "no-such-parameter", "1"]),
        error("ERR Unknown option or number of arguments for CONFIG SET - 'no-such-parameter'")
    );
    assert_eq!(
        raw.call(&["CONFIG", "SET", "maxmemory", "1mb", "maxmemory", "2mb"]),
        error("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - duplicate parameter")
    );
    assert_eq!(
        raw.call(&["CONFIG", "SET", "enable-debug-command", "yes"]),
        error("ERR CONFIG SET failed (possibly related to argument 'enable-debug-command') - can't set immutable config")
    );
    assert_eq!(
        raw.call(&["CONFIG", "SET", "maxmemory"]),
        error("ERR wrong number of arguments for 'config|set' command")
    );
    // An odd number of arguments past the minimum is a syntax error.
    assert_eq!(
        raw.call(&["CONFIG", "SET", "maxmemory", "1mb", "port"]),
        error("ERR syntax error")
    );
    assert_eq!(config_get(&mut raw, "maxmemory"), "0");
}

#[test]
fn config_set_is_all_or_nothing() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["CONFIG", "SET", "maxmemory", "10mb"]);
    // The bad value comes second: the first is not applied either.
    assert_eq!(
        raw.call(&["CONFIG", "SET", "maxmemory", "5mb", "maxmemory-policy", "bogus"]),
        error("ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction")
    );
    assert_eq!(config_get(&mut raw, "maxmemory"), "10485760");
    assert_eq!(config_get(&mut raw, "maxmemory-policy"), "noeviction");
    // ... and the other way round.
    assert_eq!(
        raw.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru", "maxmemory", "abc"]),
        error("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value")
    );
    assert_eq!(config_get(&mut raw, "maxmemory-policy"), "noeviction");
    // An unknown parameter anywhere rejects the whole call.
    assert!(matches!(
        raw.call(&["CONFIG", "SET", "hz", "20", "no-such-parameter", "1"]),
        Frame::Error(_)
    ));
    assert_eq!(config_get(&mut raw, "hz"), "10");
    // All valid: all applied.
    ok(
        &mut raw,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            "1gb",
            "maxmemory-policy",
            "allkeys-lru",
            "hz",
            "20",
        ],
    );
    assert_eq!(config_get(&mut raw, "maxmemory"), "1073741824");
    assert_eq!(config_get(&mut raw, "maxmemory-policy"), "allkeys-lru");
    assert_eq!(config_get(&mut raw, "hz"), "20");
    // Values are clamped where Redis clamps them.
    ok(&mut raw, &["CONFIG", "SET", "hz", "600"]);
    assert_eq!(config_get(&mut raw, "hz"), "500");
    ok(&mut raw, &["CONFIG", "SET", "hz", "0"]);
    assert_eq!(config_get(&mut raw, "hz"), "1");
}

#[test]
fn config_set_maxmemory_shows_in_info() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(
        &mut raw,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            "100mb",
            "maxmemory-policy",
            "allkeys-lfu",
        ],
    );
    let mem = info_fields(&info(&mut raw, &["memory"]));
    assert_eq!(mem["maxmemory"], "104857600");
    assert_eq!(mem["maxmemory_human"], "100.00M");
    assert_eq!(mem["maxmemory_policy"], "allkeys-lfu");
}

#[test]
fn config_resetstat_clears_counters() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["SET", "k", "v"]);
    assert_eq!(raw.call(&["GET", "k"]), bulk("v"));
    assert_eq!(raw.call(&["GET", "nope"]), Frame::NullBulk);
    assert!(matches!(raw.call(&["INCR", "k"]), Frame::Error(_)));
    assert_eq!(raw.call(&["CONFIG", "RESETSTAT"]), simple("OK"));
    let stats = info_fields(&info(&mut raw, &["stats"]));
    assert_eq!(stats["keyspace_hits"], "0");
    assert_eq!(stats["keyspace_misses"], "0");
    assert_eq!(stats["total_error_replies"], "0");
    assert_eq!(stats["total_commands_processed"], "1");
    assert!(commandstat(&mut raw, "get").is_none());
    assert!(commandstat(&mut raw, "set").is_none());
    assert!(commandstat(&mut raw, "config|resetstat").is_some());
    // The data is untouched.
    assert_eq!(raw.call(&["GET", "k"]), bulk("v"));
    assert_eq!(
        raw.call(&["CONFIG", "RESETSTAT", "x"]),
        error("ERR wrong number of arguments for 'config|resetstat' command")
    );
}

#[test]
fn config_resetstat_keeps_the_slow_log() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    ok(&mut raw, &["SET", "k", "v"]);
    let before = int(&raw.call(&["SLOWLOG", "LEN"]));
    assert!(before >= 2);
    assert_eq!(raw.call(&["CONFIG", "RESETSTAT"]), simple("OK"));
    // The slow log is not a statistic: the entries stay, and the RESETSTAT joins them.
    assert_eq!(int(&raw.call(&["SLOWLOG", "LEN"])), before + 2);
}

#[test]
fn config_resetstat_keeps_latency_events() {
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let mut raw = s.raw();
    record_slow_command(&mut raw, "0.02");
    assert!(latency_event(&mut raw, "command").is_some());
    assert_eq!(raw.call(&["CONFIG", "RESETSTAT"]), simple("OK"));
    assert!(
        latency_event(&mut raw, "command").is_some(),
        "LATENCY LATEST lost the `command` event on CONFIG RESETSTAT"
    );
}

// ---------------------------------------------------------------- CONFIG REWRITE

#[test]
fn config_rewrite_without_config_file_is_an_error() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["CONFIG", "REWRITE"]),
        error("ERR The server is running without a config file")
    );
}

#[test]
fn config_rewrite_updates_the_config_file() {
    let dir = TempDir::new("rewrite");
    let conf = dir.0.join("test.conf");
    std::fs::write(
        &conf,
        "# a comment that must survive\nmaxmemory-policy allkeys-lru\nmaxmemory 1mb\n",
    )
    .unwrap();
    let dir_s = dir.0.display().to_string();
    let extra = ["--dir", dir_s.as_str()];
    {
        let s = TestServer::start_with_config(&conf, &extra);
        let mut raw = s.raw();
        assert_eq!(config_get(&mut raw, "maxmemory"), "1048576");
        assert_eq!(config_get(&mut raw, "maxmemory-policy"), "allkeys-lru");
        ok(&mut raw, &["CONFIG", "SET", "maxmemory", "5mb"]);
        ok(&mut raw, &["CONFIG", "SET", "maxmemory-samples", "7"]);
        assert_eq!(raw.call(&["CONFIG", "REWRITE"]), simple("OK"));
    }
    let text = std::fs::read_to_string(&conf).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "# a comment that must survive", "{text}");
    assert_eq!(lines[1], "maxmemory-policy allkeys-lru", "{text}");
    // The existing line is rewritten in place; the new parameter is appended.
    assert_eq!(lines[2], "maxmemory 5mb", "{text}");
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("maxmemory ")).count(),
        1,
        "{text}"
    );
    assert!(lines.contains(&"maxmemory-samples 7"), "{text}");
    // A server started from the rewritten file has the new values.
    let s = TestServer::start_with_config(&conf, &extra);
    let mut raw = s.raw();
    assert_eq!(config_get(&mut raw, "maxmemory"), "5242880");
    assert_eq!(config_get(&mut raw, "maxmemory-samples"), "7");
    assert_eq!(config_get(&mut raw, "maxmemory-policy"), "allkeys-lru");
}

#[test]
fn config_set_port_and_bind_listen_anew() {
    let s = TestServer::start();
    let mut raw = s.raw();
    // Connections made just before the change may still wait in the old
    // listener's backlog: they are served, not reset.
    let mut kept: Vec<RawClient> = (0..4).map(|_| s.raw()).collect();
    let port = common::free_port();
    ok(&mut raw, &["CONFIG", "SET", "port", &port.to_string()]);
    // New connections use the new port; existing ones stay.
    let mut moved = RawClient::connect(port);
    assert_eq!(moved.call(&["PING"]), simple("PONG"));
    for k in &mut kept {
        assert_eq!(k.call(&["PING"]), simple("PONG"));
    }
    assert!(std::net::TcpStream::connect(("127.0.0.1", s.port())).is_err());
    assert_eq!(
        info_field(&mut moved, "server", "tcp_port"),
        Some(port.to_string())
    );
    // A port another socket holds: refused, and nothing changes.
    let busy = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port().to_string();
    assert_eq!(
        moved.call(&["CONFIG", "SET", "port", &busy_port]),
        error("ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.")
    );
    assert_eq!(config_get(&mut moved, "port"), port.to_string());
    assert_eq!(RawClient::connect(port).call(&["PING"]), simple("PONG"));
    // Addresses that cannot be bound: refused, the old ones are listened on again.
    assert_eq!(
        moved.call(&["CONFIG", "SET", "bind", "192.0.2.1"]),
        error("ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.")
    );
    assert_eq!(RawClient::connect(port).call(&["PING"]), simple("PONG"));
    ok(&mut moved, &["CONFIG", "SET", "bind", "127.0.0.1"]);
    assert_eq!(config_get(&mut moved, "bind"), "127.0.0.1");
    assert_eq!(RawClient::connect(port).call(&["PING"]), simple("PONG"));
}

#[test]
fn rename_command_renames_and_removes_commands() {
    // Applied in order to the command names as they stand: SET's name is free again once
    // SET is renamed, so GET can take it.
    let s = TestServer::start_with(&[
        "--rename-command",
        "CONFIG",
        "",
        "--rename-command",
        "flushall",
        "nukeall",
        "--rename-command",
        "SET",
        "x",
        "--rename-command",
        "GET",
        "SET",
    ]);
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["CONFIG", "GET", "port"]),
        Frame::Error(
            "ERR unknown command 'CONFIG', with args beginning with: 'GET' 'port' ".into()
        )
    );
    assert_eq!(raw.call(&["x", "k", "v"]), simple("OK"));
    assert_eq!(raw.call(&["SET", "k"]), Frame::Bulk(b"v".to_vec()));
    // Errors and COMMAND INFO keep the command's own name.
    assert_eq!(
        raw.call(&["SET"]),
        Frame::Error("ERR wrong number of arguments for 'get' command".into())
    );
    let info = array(raw.call(&["COMMAND", "INFO", "nukeall", "flushall"]));
    assert_eq!(string(&array(info[0].clone())[0]), "flushall");
    assert_eq!(info[1], Frame::NullBulk);
    let list: Vec<String> = array(raw.call(&["COMMAND", "LIST"]))
        .iter()
        .map(string)
        .collect();
    assert!(list.contains(&"flushall".to_string()) && !list.contains(&"config".to_string()));
    assert_eq!(
        raw.call(&["EVAL", "return redis.pcall('GET', 'k')", "0"]),
        Frame::Error("ERR Unknown Redis command called from script".into())
    );
    assert_eq!(raw.call(&["nukeall"]), simple("OK"));
    assert_eq!(raw.call(&["EXISTS", "k"]), Frame::Integer(0));
    let stats = commandstat(&mut raw, "flushall").expect("flushall counted under its own name");
    assert_eq!(stats["calls"], "1");
}

#[test]
fn rename_command_errors_stop_start_up() {
    for (args, reason) in [
        (
            ["--rename-command", "NOSUCH", "x"],
            "No such command in rename-command",
        ),
        (
            ["--rename-command", "GET", "SET"],
            "Target command name already exists",
        ),
    ] {
        let out = std::process::Command::new(common::ServerKind::target().binary())
            .args(args)
            .output()
            .expect("run the server");
        assert!(!out.status.success());
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(text.contains(reason), "{text}");
    }
}

// ---------------------------------------------------------------- COMMAND

/// The fields of one COMMAND INFO entry that both servers must agree on, plus the rest.
#[derive(Debug)]
struct CommandEntry {
    name: String,
    arity: i64,
    flags: BTreeSet<String>,
    first: i64,
    last: i64,
    step: i64,
    acl: BTreeSet<String>,
}

fn command_entry(f: Frame) -> CommandEntry {
    let items = array(f);
    assert_eq!(items.len(), 10, "a COMMAND entry has 10 fields");
    let set = |f: &Frame| -> BTreeSet<String> {
        match f {
            Frame::Array(v) | Frame::Set(v) => v.iter().map(string).collect(),
            other => panic!("expected a list, got {}", fmt_frame(other)),
        }
    };
    CommandEntry {
        name: string(&items[0]),
        arity: int(&items[1]),
        flags: set(&items[2]),
        first: int(&items[3]),
        last: int(&items[4]),
        step: int(&items[5]),
        acl: set(&items[6]),
    }
}

#[test]
fn command_info_matches_redis_key_positions_and_arity() {
    let target = TestServer::start();
    let reference = TestServer::redis();
    let mut t = target.raw();
    let mut r = reference.raw();
    for name in [
        "get",
        "set",
        "mset",
        "config|get",
        "del",
        "expire",
        "ping",
        "command|info",
    ] {
        let te = array(t.call(&["COMMAND", "INFO", name]));
        let re = array(r.call(&["COMMAND", "INFO", name]));
        assert_eq!(te.len(), 1);
        assert_eq!(re.len(), 1);
        let te = command_entry(te.into_iter().next().unwrap());
        let re = command_entry(re.into_iter().next().unwrap());
        assert_eq!(te.name, re.name, "{name}: name");
        assert_eq!(te.arity, re.arity, "{name}: arity");
        assert_eq!(
            (te.first, te.last, te.step),
            (re.first, re.last, re.step),
            "{name}: first/last/step"
        );
        if te.flags != re.flags {
            eprintln!(
                "note: {name}: flags differ: {} {:?} vs redis {:?}",
                target.kind().name(),
                te.flags,
                re.flags
            );
        }
        if te.acl != re.acl {
            eprintln!(
                "note: {name}: ACL categories differ: {} {:?} vs redis {:?}",
                target.kind().name(),
                te.acl,
                re.acl
            );
        }
    }
}

#[test]
fn command_info_entry_shape() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let entries = array(raw.call(&["COMMAND", "INFO", "get", "MSET"]));
    assert_eq!(entries.len(), 2);
    let get = command_entry(entries[0].clone());
    assert_eq!(get.name, "get");
    assert_eq!(get.arity, 2);
    assert_eq!((get.first, get.last, get.step), (1, 1, 1));
    assert!(get.flags.contains("readonly") && get.flags.contains("fast"));
    assert!(get.acl.contains("@read") && get.acl.contains("@string"));
    let mset = command_entry(entries[1].clone());
    assert_eq!(mset.name, "mset");
    assert_eq!(mset.arity, -3);
    assert_eq!((mset.first, mset.last, mset.step), (1, -1, 2));
    assert!(mset.flags.contains("write") && mset.flags.contains("denyoom"));
    // Container commands list their subcommands as entries in the last field.
    let config = array(raw.call(&["COMMAND", "INFO", "config"]));
    let fields = array(config.into_iter().next().unwrap());
    let subs: BTreeSet<String> = array(fields[9].clone())
        .into_iter()
        .map(|e| command_entry(e).name)
        .collect();
    for sub in [
        "config|get",
        "config|set",
        "config|resetstat",
        "config|rewrite",
    ] {
        assert!(subs.contains(sub), "{subs:?}");
    }
}

#[test]
fn command_info_of_unknown_command_is_nil() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let entries = array(raw.call(&["COMMAND", "INFO", "get", "nosuchcommand"]));
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1], Frame::NullBulk, "unknown command -> nil bulk");
    assert!(matches!(raw.call(&["HELLO", "3"]), Frame::Map(_)));
    let entries = array(raw.call(&["COMMAND", "INFO", "nosuchcommand"]));
    assert_eq!(entries, [Frame::Null]);
}

#[test]
fn command_without_arguments_lists_every_command() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let count = int(&raw.call(&["COMMAND", "COUNT"]));
    let all = array(raw.call(&["COMMAND"]));
    assert_eq!(all.len() as i64, count);
    let names: BTreeSet<String> = all.into_iter().map(|e| command_entry(e).name).collect();
    assert_eq!(names.len() as i64, count, "names are unique");
    for n in ["get", "set", "config", "command", "info", "ping", "client"] {
        assert!(names.contains(n), "COMMAND lacks {n}");
    }
}

#[test]
fn command_lists_every_command_and_count_agrees() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let count = int(&raw.call(&["COMMAND", "COUNT"]));
    assert!(count > 30, "COMMAND COUNT {count}");
    // COMMAND INFO without names lists every command.
    let all = array(raw.call(&["COMMAND", "INFO"]));
    assert_eq!(all.len() as i64, count);
    let names: BTreeSet<String> = all.into_iter().map(|e| command_entry(e).name).collect();
    assert_eq!(names.len() as i64, count, "names are unique");
    for n in ["get", "set", "config", "command", "info", "ping", "client"] {
        assert!(names.contains(n), "COMMAND INFO lacks {n}");
    }
    assert_eq!(
        raw.call(&["COMMAND", "COUNT", "x"]),
        error("ERR wrong number of arguments for 'command|count' command")
    );
    assert_eq!(
        raw.call(&["COMMAND", "NOSUCH"]),
        error("ERR unknown subcommand 'NOSUCH'. Try COMMAND HELP.")
    );
}

#[test]
fn command_list_and_filters() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let count = int(&raw.call(&["COMMAND", "COUNT"]));
    let list: Vec<String> = array(raw.call(&["COMMAND", "LIST"]))
        .iter()
        .map(string)
        .collect();
    let set: BTreeSet<&str> = list.iter().map(String::as_str).collect();
    assert_eq!(set.len(), list.len(), "no duplicates");
    // Top-level commands plus subcommands.
    assert_eq!(
        list.iter().filter(|n| !n.contains('|')).count() as i64,
        count
    );
    assert!(set.contains("get") && set.contains("config|get") && set.contains("client|list"));

    let config: BTreeSet<String> =
        array(raw.call(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "config|*"]))
            .iter()
            .map(string)
            .collect();
    assert_eq!(
        config.iter().map(String::as_str).collect::<Vec<_>>(),
        [
            "config|get",
            "config|help",
            "config|resetstat",
            "config|rewrite",
            "config|set"
        ]
    );
    // The pattern is matched without regard to case.
    assert_eq!(
        raw.call(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "CONFIG"]),
        Frame::Array(vec![bulk("config")])
    );
    assert_eq!(
        raw.call(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "no-such-*"]),
        Frame::Array(vec![])
    );

    let conn: Vec<String> =
        array(raw.call(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "connection"]))
            .iter()
            .map(string)
            .collect();
    for n in [
        "ping",
        "echo",
        "hello",
        "select",
        "client|id",
        "command|count",
    ] {
        assert!(
            conn.iter().any(|c| c == n),
            "@connection lacks {n}: {conn:?}"
        );
    }
    assert!(!conn.iter().any(|c| c == "get"));
    // Every listed command is in the category.
    for n in &conn {
        let entry = array(raw.call(&["COMMAND", "INFO", n]));
        let e = command_entry(entry.into_iter().next().unwrap());
        assert!(e.acl.contains("@connection"), "{n}: {:?}", e.acl);
    }
    let keyspace: Vec<String> =
        array(raw.call(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "KEYSPACE"]))
            .iter()
            .map(string)
            .collect();
    assert!(keyspace.iter().any(|c| c == "del") && keyspace.iter().any(|c| c == "expire"));
    assert_eq!(
        raw.call(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuchcategory"]),
        Frame::Array(vec![])
    );
    for bad in [
        &["COMMAND", "LIST", "FILTERBY", "BOGUS", "x"][..],
        &["COMMAND", "LIST", "FILTERBY", "PATTERN"],
        &["COMMAND", "LIST", "foo"],
    ] {
        assert_eq!(raw.call(bad), error("ERR syntax error"), "{bad:?}");
    }
}

#[test]
fn command_docs_shape() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let docs = pairs(raw.call(&["COMMAND", "DOCS", "get", "config|get"]));
    let names: Vec<&str> = docs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["get", "config|get"]);
    for (name, doc) in docs {
        let fields: BTreeMap<String, Frame> = pairs(doc).into_iter().collect();
        let summary = string(&fields["summary"]);
        assert!(!summary.is_empty(), "{name}: empty summary");
        assert!(string(&fields["complexity"]).starts_with("O("), "{name}");
        let (group, since) = (string(&fields["group"]), string(&fields["since"]));
        match name.as_str() {
            "get" => assert_eq!((group.as_str(), since.as_str()), ("string", "1.0.0")),
            _ => assert_eq!((group.as_str(), since.as_str()), ("server", "2.0.0")),
        }
    }
    // Unknown names are left out; no names means every command.
    assert_eq!(
        raw.call(&["COMMAND", "DOCS", "nosuchcommand"]),
        Frame::Array(vec![])
    );
    let count = int(&raw.call(&["COMMAND", "COUNT"]));
    assert_eq!(pairs(raw.call(&["COMMAND", "DOCS"])).len() as i64, count);
    // RESP3: a map of maps.
    assert!(matches!(raw.call(&["HELLO", "3"]), Frame::Map(_)));
    let reply = raw.call(&["COMMAND", "DOCS", "set"]);
    let Frame::Map(m) = reply else {
        panic!("COMMAND DOCS in RESP3: {}", fmt_frame(&reply));
    };
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].0, bulk("set"));
    assert!(matches!(m[0].1, Frame::Map(_)), "{}", fmt_frame(&m[0].1));
}

#[test]
fn command_getkeys_extracts_keys() {
    let s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["COMMAND", "GETKEYS", "GET", "key"]),
        bulks_of(&["key"])
    );
    assert_eq!(
        raw.call(&["COMMAND", "GETKEYS", "set", "k", "v", "EX", "10"]),
        bulks_of(&["k"])
    );
    assert_eq!(
        raw.call(&["COMMAND", "GETKEYS", "mset", "a", "1", "b", "2"]),
        bulks_of(&["a", "b"])
    );
    assert_eq!(
        raw.call(&["COMMAND", "GETKEYS", "del", "a", "b", "c"]),
        bulks_of(&["a", "b", "c"])
    );
    assert_eq!(
        raw.call(&["COMMAND", "GETKEYS", "rename", "from", "to"]),
        bulks_of(&["from", "to"])
    );
    // Errors.
    assert_eq!(
        raw.call(&["COMMAND", "GETKEYS", "nosuchcommand", "a"]),
        error("ERR Invalid command specified")
    );
    assert_eq!(
        raw.call(&["COMMAND", "GETKEYS", "get", "a", "b"]),
        error("ERR Invalid number of arguments specified for command")
    );
    assert_eq!(
        raw.call(&["COMMAND", "GETKEYS", "mset", "a"]),
        error("ERR Invalid number of arguments specified for command")
    );
    assert_eq!(
        raw.call(&["COMMAND", "GETKEYS", "ping", "x"]),
        error("ERR The command has no key arguments")
    );
    assert_eq!(
        raw.call(&["COMMAND", "GETKEYS", "config", "get", "x"]),
        error("ERR The command has no key arguments")
    );
}

#[test]
fn command_getkeys_needs_a_command_and_an_argument() {
    let s = TestServer::start();
    let mut raw = s.raw();
    for args in [&["COMMAND", "GETKEYS"][..], &["COMMAND", "GETKEYS", "get"]] {
        assert_eq!(
            raw.call(args),
            error("ERR wrong number of arguments for 'command|getkeys' command"),
            "{args:?}"
        );
    }
}

fn bulks_of(items: &[&str]) -> Frame {
    Frame::Array(items.iter().map(bulk).collect())
}

// ---------------------------------------------------------------- TIME, LASTSAVE

#[test]
fn time_returns_seconds_and_microseconds() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let t = array(raw.call(&["TIME"]));
    assert_eq!(t.len(), 2);
    let secs: i64 = string(&t[0]).parse().unwrap();
    let micros: i64 = string(&t[1]).parse().unwrap();
    assert!((secs - unix_now_secs()).abs() <= 5, "TIME {secs}");
    assert!((0..1_000_000).contains(&micros));
    // Monotonic enough: a later call is not earlier.
    std::thread::sleep(Duration::from_millis(20));
    let t2 = array(raw.call(&["TIME"]));
    let later = (
        string(&t2[0]).parse::<i64>().unwrap(),
        string(&t2[1]).parse::<i64>().unwrap(),
    );
    assert!(later > (secs, micros));
    assert_eq!(
        raw.call(&["TIME", "x"]),
        error("ERR wrong number of arguments for 'time' command")
    );
}

#[test]
fn lastsave_is_a_recent_unix_time() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let t = int(&raw.call(&["LASTSAVE"]));
    let now = unix_now_secs();
    // Set at start-up (no save has happened yet).
    assert!(t <= now + 5 && t >= now - 600, "LASTSAVE {t}, now {now}");
    assert_eq!(
        raw.call(&["LASTSAVE", "x"]),
        error("ERR wrong number of arguments for 'lastsave' command")
    );
}

// ---------------------------------------------------------------- SLOWLOG

#[test]
fn slowlog_records_commands_over_the_threshold() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let mut other = s.raw();
    // The default threshold (10 ms) catches nothing here.
    ok(&mut raw, &["SLOWLOG", "RESET"]);
    ok(&mut raw, &["SET", "k", "v"]);
    assert_eq!(int(&raw.call(&["SLOWLOG", "LEN"])), 0);
    assert_eq!(raw.call(&["SLOWLOG", "GET"]), Frame::Array(vec![]));

    ok(&mut raw, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    ok(&mut raw, &["CLIENT", "SETNAME", "slowpoke"]);
    ok(&mut raw, &["SET", "k", "v"]);
    let entries = array(raw.call(&["SLOWLOG", "GET", "2"]));
    assert_eq!(entries.len(), 2);
    let newest = array(entries[0].clone());
    let older = array(entries[1].clone());
    assert_eq!(newest.len(), 6);
    assert!(int(&newest[0]) > int(&older[0]), "ids grow");
    let ts = int(&newest[1]);
    assert!((ts - unix_now_secs()).abs() <= 5);
    assert!(int(&newest[2]) >= 0);
    assert_eq!(newest[3], bulks_of(&["SET", "k", "v"]));
    assert_eq!(
        string(&newest[4]),
        raw.stream().local_addr().unwrap().to_string()
    );
    assert_eq!(newest[5], bulk("slowpoke"));
    assert_eq!(older[3], bulks_of(&["CLIENT", "SETNAME", "slowpoke"]));
    // Other clients' commands land in the same log, with their own address and (empty) name.
    ok(&mut other, &["SET", "from", "other"]);
    let entries = array(raw.call(&["SLOWLOG", "GET", "1"]));
    let e = array(entries[0].clone());
    assert_eq!(e[3], bulks_of(&["SET", "from", "other"]));
    assert_eq!(
        string(&e[4]),
        other.stream().local_addr().unwrap().to_string()
    );
    assert_eq!(e[5], bulk(""));

    // GET 0 is empty, GET -1 is everything.
    assert_eq!(raw.call(&["SLOWLOG", "GET", "0"]), Frame::Array(vec![]));
    let len = int(&raw.call(&["SLOWLOG", "LEN"]));
    assert!(array(raw.call(&["SLOWLOG", "GET", "-1"])).len() as i64 >= len);
    for bad in ["-2", "x"] {
        assert_eq!(
            raw.call(&["SLOWLOG", "GET", bad]),
            error("ERR count should be greater than or equal to -1")
        );
    }
    assert_eq!(
        raw.call(&["SLOWLOG", "LEN", "x"]),
        error("ERR wrong number of arguments for 'slowlog|len' command")
    );
    assert_eq!(
        raw.call(&["SLOWLOG", "RESET", "x"]),
        error("ERR wrong number of arguments for 'slowlog|reset' command")
    );

    // RESET empties it (and, being slow itself, is the only entry afterwards).
    ok(&mut raw, &["SLOWLOG", "RESET"]);
    let entries = array(raw.call(&["SLOWLOG", "GET"]));
    assert_eq!(entries.len(), 1);
    assert_eq!(
        array(entries[0].clone())[3],
        bulks_of(&["SLOWLOG", "RESET"])
    );
    assert_eq!(int(&raw.call(&["SLOWLOG", "LEN"])), 2);
}

#[test]
fn slowlog_truncates_long_arguments_and_caps_length() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    let mut mset: Vec<String> = vec!["MSET".into()];
    for i in 0..40 {
        mset.push(format!("k{i}"));
    }
    assert_eq!(raw.call(&mset), simple("OK"));
    let e = array(array(raw.call(&["SLOWLOG", "GET", "1"]))[0].clone());
    let args = array(e[3].clone());
    assert_eq!(args.len(), 32);
    assert_eq!(args[0], bulk("MSET"));
    assert_eq!(args[30], bulk("k29"));
    assert_eq!(args[31], bulk("... (10 more arguments)"));

    let big = "x".repeat(200);
    ok(&mut raw, &["SET", "big", &big]);
    let e = array(array(raw.call(&["SLOWLOG", "GET", "1"]))[0].clone());
    let args = array(e[3].clone());
    assert_eq!(
        args[2],
        bulk(format!("{}... (72 more bytes)", "x".repeat(128)))
    );

    ok(&mut raw, &["CONFIG", "SET", "slowlog-max-len", "3"]);
    for i in 0..10 {
        ok(&mut raw, &["SET", &format!("n{i}"), "v"]);
    }
    assert_eq!(int(&raw.call(&["SLOWLOG", "LEN"])), 3);
    // A negative threshold turns the log off.
    ok(
        &mut raw,
        &["CONFIG", "SET", "slowlog-log-slower-than", "-1"],
    );
    ok(&mut raw, &["SLOWLOG", "RESET"]);
    ok(&mut raw, &["SET", "x", "y"]);
    assert_eq!(int(&raw.call(&["SLOWLOG", "LEN"])), 0);
}

// ---------------------------------------------------------------- LATENCY

/// Runs DEBUG SLEEP `secs` with the latency monitor on (threshold 1 ms),
/// switching it off right after, so that nothing else a loaded machine
/// happens to make slow is recorded while the results are checked.
fn record_slow_command(raw: &mut RawClient, secs: &str) {
    ok(raw, &["CONFIG", "SET", "latency-monitor-threshold", "1"]);
    ok(raw, &["DEBUG", "SLEEP", secs]);
    ok(raw, &["CONFIG", "SET", "latency-monitor-threshold", "0"]);
}

/// The `[name, time, latest, max]` entry of `event` in LATENCY LATEST, if any.
fn latency_event(raw: &mut RawClient, event: &str) -> Option<Vec<Frame>> {
    array(raw.call(&["LATENCY", "LATEST"]))
        .into_iter()
        .map(array)
        .find(|e| e[0] == bulk(event))
}

#[test]
fn latency_monitor_records_slow_commands() {
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let mut raw = s.raw();
    assert_eq!(raw.call(&["LATENCY", "LATEST"]), Frame::Array(vec![]));
    // Off by default (threshold 0): a slow command leaves no trace.
    ok(&mut raw, &["DEBUG", "SLEEP", "0.05"]);
    assert_eq!(raw.call(&["LATENCY", "LATEST"]), Frame::Array(vec![]));
    assert_eq!(int(&raw.call(&["LATENCY", "RESET"])), 0);

    record_slow_command(&mut raw, "0.05");
    let ev = latency_event(&mut raw, "command").expect("a `command` latency event");
    assert_eq!(ev.len(), 4);
    let ts = int(&ev[1]);
    assert!((ts - unix_now_secs()).abs() <= 5);
    let (last, max) = (int(&ev[2]), int(&ev[3]));
    assert!(last >= 50, "latest latency {last} ms");
    assert!(max >= last);

    let history = array(raw.call(&["LATENCY", "HISTORY", "command"]));
    assert!(!history.is_empty());
    let h = array(history.last().unwrap().clone());
    assert_eq!(h.len(), 2);
    assert_eq!(int(&h[0]), ts);
    assert_eq!(int(&h[1]), last);
    assert_eq!(
        raw.call(&["LATENCY", "HISTORY", "nosuchevent"]),
        Frame::Array(vec![])
    );
    assert_eq!(
        raw.call(&["LATENCY", "HISTORY"]),
        error("ERR wrong number of arguments for 'latency|history' command")
    );

    // RESET with names resets only those that exist; without names, all.
    assert_eq!(int(&raw.call(&["LATENCY", "RESET", "nosuchevent"])), 0);
    assert!(latency_event(&mut raw, "command").is_some());
    assert_eq!(
        int(&raw.call(&["LATENCY", "RESET", "command", "nosuchevent"])),
        1
    );
    assert!(latency_event(&mut raw, "command").is_none());
    assert_eq!(
        raw.call(&["LATENCY", "HISTORY", "command"]),
        Frame::Array(vec![])
    );
    record_slow_command(&mut raw, "0.02");
    assert!(int(&raw.call(&["LATENCY", "RESET"])) >= 1);
    assert_eq!(raw.call(&["LATENCY", "LATEST"]), Frame::Array(vec![]));
}

/// The active expiry cycle files its duration under `expire-cycle`, as Redis's does: a cycle
/// that has many keys to delete runs until its time budget (a quarter of a 100 ms tick, in both
/// servers), far past a 1 ms threshold. Nothing here depends on speed beyond that.
#[test]
fn latency_monitor_records_slow_expire_cycles() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(
        &mut raw,
        &["CONFIG", "SET", "latency-monitor-threshold", "1"],
    );
    const KEYS: &str = "200000";
    // One script writes them all, so they share one expiry time.
    let written = raw.call(&[
        "EVAL",
        "for i = 1, tonumber(ARGV[1]) do redis.call('set', 'k' .. i, 'v', 'px', 1000) end return 1",
        "0",
        KEYS,
    ]);
    assert_eq!(written, Frame::Integer(1));
    // Only the cycle deletes them (nothing reads them).
    assert!(
        wait_until(Duration::from_secs(120), || int(&raw.call(&["DBSIZE"]))
            == 0),
        "the keys did not all expire"
    );
    let ev = latency_event(&mut raw, "expire-cycle").unwrap_or_else(|| {
        panic!(
            "no expire-cycle event in LATENCY LATEST: {}",
            fmt_frame(&raw.call(&["LATENCY", "LATEST"]))
        )
    });
    assert!(int(&ev[2]) >= 1 && int(&ev[3]) >= int(&ev[2]), "{ev:?}");
    let history = array(raw.call(&["LATENCY", "HISTORY", "expire-cycle"]));
    assert!(!history.is_empty());
    assert!(history
        .into_iter()
        .map(array)
        .all(|h| h.len() == 2 && int(&h[1]) >= 1));
    ok(
        &mut raw,
        &["CONFIG", "SET", "latency-monitor-threshold", "0"],
    );
}

/// LATENCY HISTOGRAM: per command, the sample count and a cumulative
/// distribution over Redis's bucket labels; unknown names are skipped, a
/// container names its subcommands, latency-tracking no stops the counts.
#[test]
fn latency_histogram_per_command() {
    let s = TestServer::start();
    let mut raw = s.raw();
    for i in 0..3 {
        ok(&mut raw, &["SET", &format!("k{i}"), "v"]);
    }
    assert!(matches!(
        raw.call(&["CONFIG", "GET", "maxmemory"]),
        Frame::Array(_) | Frame::Map(_)
    ));
    let labels = [
        1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908,
    ];
    let check = |reply: Frame, expect: &[(&str, i64)]| {
        let got: BTreeMap<String, Frame> = pairs(reply).into_iter().collect();
        assert_eq!(
            got.keys().cloned().collect::<BTreeSet<_>>(),
            expect
                .iter()
                .map(|e| e.0.to_string())
                .collect::<BTreeSet<_>>()
        );
        for (name, calls) in expect {
            let fields: BTreeMap<String, Frame> = pairs(got[*name].clone()).into_iter().collect();
            assert_eq!(int(&fields["calls"]), *calls, "{name}");
            let buckets = pairs_int(fields["histogram_usec"].clone());
            assert!(!buckets.is_empty());
            let mut last = 0;
            for (us, count) in &buckets {
                assert!(labels.contains(us) || *us > 16908, "bucket {us}");
                assert!(*count > last, "cumulative counts grow: {buckets:?}");
                last = *count;
            }
            assert_eq!(last, *calls, "{name}: {buckets:?}");
        }
    };
    check(
        raw.call(&["LATENCY", "HISTOGRAM", "set", "nosuch", "config|get"]),
        &[("set", 3), ("config|get", 1)],
    );
    check(
        raw.call(&["LATENCY", "HISTOGRAM", "SET", "config"]),
        &[("set", 3), ("config|get", 1)],
    );
    let all: BTreeMap<String, Frame> = pairs(raw.call(&["LATENCY", "HISTOGRAM"]))
        .into_iter()
        .collect();
    assert!(all.contains_key("set") && all.contains_key("config|get"));
    assert_eq!(
        raw.call(&["LATENCY", "HISTOGRAM", "nosuch"]),
        Frame::Array(vec![])
    );
    ok(&mut raw, &["CONFIG", "SET", "latency-tracking", "no"]);
    ok(&mut raw, &["SET", "k", "v"]);
    check(raw.call(&["LATENCY", "HISTOGRAM", "set"]), &[("set", 3)]);
    // INFO latencystats lists nothing while tracking is off.
    let stats = info(&mut raw, &["latencystats"]);
    assert!(info_fields(&stats).is_empty(), "{stats}");
    // RESP3: maps.
    let mut r3 = s.raw();
    assert!(matches!(r3.call(&["HELLO", "3"]), Frame::Map(_)));
    assert!(matches!(
        r3.call(&["LATENCY", "HISTOGRAM", "set"]),
        Frame::Map(_)
    ));
}

/// LATENCY GRAPH and DOCTOR: an event without samples is an error for
/// GRAPH; with samples both answer with text (Tessera's own wording).
#[test]
fn latency_graph_and_doctor() {
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["LATENCY", "GRAPH", "command"]),
        error("ERR No samples available for event 'command'")
    );
    assert!(!text(raw.call(&["LATENCY", "DOCTOR"])).is_empty());
    record_slow_command(&mut raw, "0.05");
    let graph = text(raw.call(&["LATENCY", "GRAPH", "command"]));
    assert!(graph.starts_with("command - high "), "{graph}");
    // The chart itself is drawn differently by each server.
    if !common::target_is_redis() {
        assert!(graph.contains('#'), "{graph}");
    }
    let doctor = text(raw.call(&["LATENCY", "DOCTOR"]));
    assert!(doctor.contains("command"), "{doctor}");
    assert_eq!(
        raw.call(&["LATENCY", "GRAPH"]),
        error("ERR wrong number of arguments for 'latency|graph' command")
    );
    assert_eq!(
        raw.call(&["LATENCY", "DOCTOR", "x"]),
        error("ERR wrong number of arguments for 'latency|doctor' command")
    );
}

// ---------------------------------------------------------------- MEMORY

#[test]
fn memory_usage_of_keys() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["SET", "small", "v"]);
    let big = "x".repeat(10_000);
    ok(&mut raw, &["SET", "big", &big]);
    let small = int(&raw.call(&["MEMORY", "USAGE", "small"]));
    assert!(small > 0 && small < 1000, "MEMORY USAGE small = {small}");
    let large = int(&raw.call(&["MEMORY", "USAGE", "big"]));
    assert!(
        (10_000..20_000).contains(&large),
        "MEMORY USAGE big = {large}"
    );
    assert_eq!(
        int(&raw.call(&["MEMORY", "USAGE", "small", "SAMPLES", "5"])),
        small
    );
    assert_eq!(
        int(&raw.call(&["MEMORY", "USAGE", "big", "samples", "0"])),
        large
    );
    assert_eq!(raw.call(&["MEMORY", "USAGE", "missing"]), Frame::NullBulk);
    for bad in [
        &["MEMORY", "USAGE", "small", "SAMPLES"][..],
        &["MEMORY", "USAGE", "small", "FOO", "1"],
    ] {
        assert_eq!(raw.call(bad), error("ERR syntax error"), "{bad:?}");
    }
    assert_eq!(
        raw.call(&["MEMORY", "USAGE"]),
        error("ERR wrong number of arguments for 'memory|usage' command")
    );
    assert_eq!(
        raw.call(&["MEMORY", "NOSUCH"]),
        error("ERR unknown subcommand 'NOSUCH'. Try MEMORY HELP.")
    );
}

/// MEMORY STATS names Redis 7.0's fields in its order, with one entry per
/// database that holds keys; MEMORY PURGE and MALLOC-STATS answer as
/// Redis's (jemalloc's own report).
#[test]
fn memory_stats_fields_purge_and_malloc_stats() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["SET", "a", "1"]);
    ok(&mut raw, &["SELECT", "3"]);
    ok(&mut raw, &["SET", "b", "1"]);
    let names: Vec<String> = pairs(raw.call(&["MEMORY", "STATS"]))
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let mut expected: Vec<&str> = vec![
        "peak.allocated",
        "total.allocated",
        "startup.allocated",
        "replication.backlog",
        "clients.slaves",
        "clients.normal",
        "cluster.links",
        "aof.buffer",
        "lua.caches",
        "functions.caches",
        "db.0",
        "db.3",
    ];
    expected.extend([
        "overhead.total",
        "keys.count",
        "keys.bytes-per-key",
        "dataset.bytes",
        "dataset.percentage",
        "peak.percentage",
        "allocator.allocated",
        "allocator.active",
        "allocator.resident",
        "allocator-fragmentation.ratio",
        "allocator-fragmentation.bytes",
        "allocator-rss.ratio",
        "allocator-rss.bytes",
        "rss-overhead.ratio",
        "rss-overhead.bytes",
        "fragmentation",
        "fragmentation.bytes",
    ]);
    assert_eq!(names, expected);
    assert_eq!(raw.call(&["MEMORY", "PURGE"]), simple("OK"));
    let report = text(raw.call(&["MEMORY", "MALLOC-STATS"]));
    assert!(
        report.starts_with("___ Begin jemalloc statistics ___"),
        "{}",
        &report[..report.len().min(200)]
    );
    assert_eq!(
        raw.call(&["MEMORY", "PURGE", "x"]),
        error("ERR wrong number of arguments for 'memory|purge' command")
    );
}

#[test]
fn memory_stats_and_doctor() {
    let s = TestServer::start();
    let mut raw = s.raw();
    for i in 0..3 {
        ok(&mut raw, &["SET", &format!("k{i}"), "v"]);
    }
    let stats: BTreeMap<String, Frame> =
        pairs(raw.call(&["MEMORY", "STATS"])).into_iter().collect();
    for f in [
        "peak.allocated",
        "total.allocated",
        "startup.allocated",
        "keys.count",
    ] {
        assert!(
            stats.contains_key(f),
            "MEMORY STATS lacks {f}: {:?}",
            stats.keys()
        );
    }
    assert!(int(&stats["total.allocated"]) > 0);
    assert!(int(&stats["peak.allocated"]) > 0);
    assert_eq!(int(&stats["keys.count"]), 3);
    // RESP3: a map.
    let mut r3 = s.raw();
    assert!(matches!(r3.call(&["HELLO", "3"]), Frame::Map(_)));
    assert!(matches!(r3.call(&["MEMORY", "STATS"]), Frame::Map(_)));

    let doctor = text(raw.call(&["MEMORY", "DOCTOR"]));
    assert!(doctor.starts_with("Hi Sam,"), "{doctor}");
    assert_eq!(
        raw.call(&["MEMORY", "DOCTOR", "x"]),
        error("ERR wrong number of arguments for 'memory|doctor' command")
    );
    assert_eq!(
        raw.call(&["MEMORY", "STATS", "x"]),
        error("ERR wrong number of arguments for 'memory|stats' command")
    );
}

// ---------------------------------------------------------------- MONITOR

/// Splits a MONITOR line `<ts> [<db> <addr>] "a" "b"` into (ts, db, addr, quoted args).
fn parse_monitor_line(f: Frame) -> (f64, i64, String, String) {
    let line = match f {
        Frame::Simple(s) => String::from_utf8(s).unwrap(),
        other => panic!("MONITOR sent {}", fmt_frame(&other)),
    };
    let (ts, rest) = line.split_once(" [").unwrap_or_else(|| panic!("{line}"));
    let (client, args) = rest.split_once("] ").unwrap_or_else(|| panic!("{line}"));
    let (db, addr) = client.split_once(' ').unwrap_or_else(|| panic!("{line}"));
    let (whole, frac) = ts.split_once('.').unwrap_or_else(|| panic!("{line}"));
    assert_eq!(frac.len(), 6, "{line}");
    assert!(whole.bytes().all(|b| b.is_ascii_digit()), "{line}");
    (
        ts.parse().unwrap(),
        db.parse().unwrap(),
        addr.to_string(),
        args.to_string(),
    )
}

/// A server, a client that has sent MONITOR, and an ordinary client.
fn monitor_setup() -> (TestServer, RawClient, RawClient) {
    let s = TestServer::start();
    let mut mon = s.raw();
    assert_eq!(mon.call(&["MONITOR"]), simple("OK"));
    let c = s.raw();
    (s, mon, c)
}

/// Asserts that no further MONITOR line arrives within a short while.
fn assert_no_more_lines(mon: &mut RawClient) {
    mon.set_timeout(Duration::from_millis(300));
    if let Ok(f) = mon.try_read_frame() {
        panic!("unexpected extra MONITOR output: {f:?}");
    }
}

#[test]
fn monitor_streams_other_clients_commands() {
    let (_s, mut mon, mut c) = monitor_setup();
    let addr = c.stream().local_addr().unwrap().to_string();
    ok(&mut c, &["set", "k", "v"]);
    let (ts, db, a, args) = parse_monitor_line(mon.read_frame());
    assert!((ts as i64 - unix_now_secs()).abs() <= 5);
    assert_eq!(
        (db, a.as_str(), args.as_str()),
        (0, addr.as_str(), "\"set\" \"k\" \"v\"")
    );
    assert_eq!(c.call(&["GET", "k"]), bulk("v"));
    let (_, _, _, args) = parse_monitor_line(mon.read_frame());
    assert_eq!(args, "\"GET\" \"k\"");
    // Arguments appear as sent, quoted and escaped.
    ok(&mut c, &["SET", "a \"quoted\"\nkey", "\x01\\"]);
    let (_, _, _, args) = parse_monitor_line(mon.read_frame());
    assert_eq!(args, r#""SET" "a \"quoted\"\nkey" "\x01\\""#);
    // A second monitor sees the same stream; the first keeps working.
    let mut mon2 = _s.raw();
    assert_eq!(mon2.call(&["MONITOR"]), simple("OK"));
    ok(&mut c, &["SET", "x", "1"]);
    let (_, _, _, a1) = parse_monitor_line(mon.read_frame());
    let (_, _, _, a2) = parse_monitor_line(mon2.read_frame());
    assert_eq!(a1, "\"SET\" \"x\" \"1\"");
    assert_eq!(a1, a2);
    assert_no_more_lines(&mut mon);
}

#[test]
fn monitor_shows_the_database_the_command_ran_in() {
    let (_s, mut mon, mut c) = monitor_setup();
    ok(&mut c, &["SELECT", "3"]);
    // SELECT is reported with the database it switched to.
    let (_, db, _, args) = parse_monitor_line(mon.read_frame());
    assert_eq!(args, "\"SELECT\" \"3\"");
    assert_eq!(db, 3, "database shown for SELECT 3");
    assert_eq!(c.call(&["GET", "k"]), Frame::NullBulk);
    let (_, db, _, args) = parse_monitor_line(mon.read_frame());
    assert_eq!((db, args.as_str()), (3, "\"GET\" \"k\""));
}

#[test]
fn monitor_shows_script_commands_as_lua() {
    let (_s, mut mon, mut c) = monitor_setup();
    let addr = c.stream().local_addr().unwrap().to_string();
    let script = "redis.call('SELECT', 2) return redis.call('SET', KEYS[1], 'v')";
    assert_eq!(c.call(&["EVAL", script, "1", "k"]), simple("OK"));
    // EVAL is shown before the commands it runs, which show "lua".
    let (_, db, from, args) = parse_monitor_line(mon.read_frame());
    assert_eq!((db, from.as_str()), (0, addr.as_str()));
    assert!(args.starts_with("\"EVAL\""), "{args}");
    let (_, db, from, args) = parse_monitor_line(mon.read_frame());
    assert_eq!(
        (db, from.as_str(), args.as_str()),
        (2, "lua", "\"SELECT\" \"2\"")
    );
    let (_, db, from, args) = parse_monitor_line(mon.read_frame());
    assert_eq!(
        (db, from.as_str(), args.as_str()),
        (2, "lua", "\"SET\" \"k\" \"v\"")
    );
    // Also when the script is never run.
    assert_eq!(
        c.call(&["EVALSHA", "0000000000000000000000000000000000000000", "0"]),
        error("NOSCRIPT No matching script. Please use EVAL.")
    );
    let (_, _, _, args) = parse_monitor_line(mon.read_frame());
    assert!(args.starts_with("\"EVALSHA\""), "{args}");
    assert_eq!(
        c.call(&["FCALL", "nosuch", "0"]),
        error("ERR Function not found")
    );
    let (_, _, _, args) = parse_monitor_line(mon.read_frame());
    assert_eq!(args, "\"FCALL\" \"nosuch\" \"0\"");
    assert_no_more_lines(&mut mon);
}

#[test]
fn monitor_skips_administrative_commands() {
    let (_s, mut mon, mut c) = monitor_setup();
    assert_eq!(
        c.call(&["CONFIG", "GET", "maxmemory"]),
        Frame::Array(vec![bulk("maxmemory"), bulk("0")])
    );
    assert_eq!(c.call(&["PING"]), simple("PONG"));
    let (_, _, _, args) = parse_monitor_line(mon.read_frame());
    assert_eq!(args, "\"PING\"", "CONFIG GET must not be shown to monitors");
}

#[test]
fn monitor_redacts_auth_arguments() {
    let (_s, mut mon, mut c) = monitor_setup();
    assert!(matches!(
        c.call(&["AUTH", "user", "secret"]),
        Frame::Error(_)
    ));
    let (_, _, _, args) = parse_monitor_line(mon.read_frame());
    assert_eq!(args, "\"AUTH\" \"(redacted)\" \"(redacted)\"");
}

// ---------------------------------------------------------------- SHUTDOWN

#[test]
fn shutdown_stops_the_server() {
    let mut s = TestServer::start();
    let mut raw = s.raw();
    assert_eq!(raw.call(&["SHUTDOWN", "bogus"]), error("ERR syntax error"));
    assert_eq!(
        raw.call(&["SHUTDOWN", "ABORT"]),
        error("ERR No shutdown in progress.")
    );
    assert!(s.is_alive());
    raw.send(&["SHUTDOWN", "NOSAVE"]);
    raw.expect_closed();
    assert!(
        wait_until(Duration::from_secs(20), || !s.is_alive()),
        "server process still running after SHUTDOWN"
    );
    s.stop();
}

#[test]
fn shutdown_without_arguments_exits_too() {
    let mut s = TestServer::start();
    let mut raw = s.raw();
    raw.send(&["shutdown"]);
    raw.expect_closed();
    assert!(
        wait_until(Duration::from_secs(20), || !s.is_alive()),
        "server process still running after SHUTDOWN"
    );
    s.stop();
}

// ---------------------------------------------------------------- DEBUG

#[test]
fn debug_is_refused_unless_enabled() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["SET", "k", "v"]);
    for args in [
        &["DEBUG", "SLEEP", "0"][..],
        &["DEBUG", "OBJECT", "k"],
        &["DEBUG", "SET-ACTIVE-EXPIRE", "0"],
        &["DEBUG", "HELP"],
    ] {
        assert_eq!(raw.call(args), error(DEBUG_REFUSED), "{args:?}");
    }
    assert_eq!(
        raw.call(&["DEBUG"]),
        error("ERR wrong number of arguments for 'debug' command")
    );
}

#[test]
fn debug_object_sleep_and_errors() {
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let mut raw = s.raw();
    ok(&mut raw, &["SET", "short", "hello"]);
    ok(&mut raw, &["SET", "num", "123456"]);
    ok(&mut raw, &["SET", "long", &"y".repeat(100)]);
    for (key, encoding) in [("short", "embstr"), ("num", "int"), ("long", "raw")] {
        let line = match raw.call(&["DEBUG", "OBJECT", key]) {
            Frame::Simple(s) => String::from_utf8(s).unwrap(),
            other => panic!("DEBUG OBJECT {key}: {}", fmt_frame(&other)),
        };
        assert!(line.starts_with("Value at:"), "{line}");
        let fields: BTreeMap<&str, &str> = line
            .split(' ')
            .filter_map(|kv| kv.split_once(':'))
            .collect();
        assert_eq!(fields.get("encoding"), Some(&encoding), "{line}");
        assert_eq!(fields.get("refcount"), Some(&"1"), "{line}");
        for f in ["serializedlength", "lru", "lru_seconds_idle"] {
            assert!(
                fields.get(f).is_some_and(|v| v.parse::<u64>().is_ok()),
                "{f} in {line}"
            );
        }
    }
    assert_eq!(
        raw.call(&["DEBUG", "OBJECT", "missing"]),
        error("ERR no such key")
    );

    ok(&mut raw, &["DEBUG", "SLEEP", "0"]);
    let t = Instant::now();
    ok(&mut raw, &["DEBUG", "SLEEP", "0.2"]);
    assert!(t.elapsed() >= Duration::from_millis(200));
    ok(&mut raw, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    ok(&mut raw, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    assert_eq!(
        raw.call(&["DEBUG", "SET-ACTIVE-EXPIRE"]),
        error("ERR unknown subcommand or wrong number of arguments for 'SET-ACTIVE-EXPIRE'. Try DEBUG HELP.")
    );
    assert_eq!(
        raw.call(&["DEBUG", "nosuch"]),
        error("ERR unknown subcommand or wrong number of arguments for 'nosuch'. Try DEBUG HELP.")
    );
    let help = array(raw.call(&["DEBUG", "HELP"]));
    assert!(help.len() > 3);
    assert!(string(&help[0]).starts_with("DEBUG <subcommand>"));
}

/// DEBUG PROTOCOL sends Redis's sample value of each type, byte for byte,
/// in RESP2 and RESP3 (push refused in RESP2, attributes dropped there).
#[test]
fn debug_protocol_samples_every_type() {
    use std::io::Read;
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let resp2: &[(&str, &[u8])] = &[
        ("string", b"$11\r\nHello World\r\n"),
        ("integer", b":12345\r\n"),
        ("double", b"$5\r\n3.141\r\n"),
        (
            "bignum",
            b"$37\r\n1234567999999999999999999999999999999\r\n",
        ),
        ("null", b"$-1\r\n"),
        ("array", b"*3\r\n:0\r\n:1\r\n:2\r\n"),
        ("set", b"*3\r\n:0\r\n:1\r\n:2\r\n"),
        ("map", b"*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n"),
        (
            "attrib",
            b"$39\r\nSome real reply following the attribute\r\n",
        ),
        ("push", b"-ERR RESP2 is not supported by this command\r\n"),
        ("verbatim", b"$25\r\nThis is a verbatim\nstring\r\n"),
        ("TRUE", b":1\r\n"),
        ("false", b":0\r\n"),
    ];
    let resp3: &[(&str, &[u8])] = &[
        ("string", b"$11\r\nHello World\r\n"),
        ("integer", b":12345\r\n"),
        ("double", b",3.141\r\n"),
        ("bignum", b"(1234567999999999999999999999999999999\r\n"),
        ("null", b"_\r\n"),
        ("array", b"*3\r\n:0\r\n:1\r\n:2\r\n"),
        ("set", b"~3\r\n:0\r\n:1\r\n:2\r\n"),
        ("map", b"%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n"),
        (
            "attrib",
            b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n$39\r\nSome real reply following the attribute\r\n",
        ),
        (
            "push",
            b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n$40\r\nSome real reply following the push reply\r\n",
        ),
        ("verbatim", b"=29\r\ntxt:This is a verbatim\nstring\r\n"),
        ("true", b"#t\r\n"),
        ("false", b"#f\r\n"),
    ];
    for (protocol, cases) in [("2", resp2), ("3", resp3)] {
        let mut raw = s.raw();
        let _ = raw.call(&["HELLO", protocol]);
        for (kind, want) in cases {
            raw.send(&["DEBUG", "PROTOCOL", kind]);
            let mut got = vec![0u8; want.len()];
            let mut stream = raw.stream();
            stream
                .read_exact(&mut got)
                .unwrap_or_else(|e| panic!("DEBUG PROTOCOL {kind}: {e}"));
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(want),
                "RESP{protocol} DEBUG PROTOCOL {kind}"
            );
        }
        assert_eq!(
            raw.call(&["DEBUG", "PROTOCOL", "bogus"]),
            error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
        );
        assert_eq!(
            raw.call(&["DEBUG", "PROTOCOL"]),
            error("ERR unknown subcommand or wrong number of arguments for 'PROTOCOL'. Try DEBUG HELP.")
        );
    }
}

/// A monitor keeps answering its own commands: PING (and sees it), commands
/// on keys are refused as for a replica, a second MONITOR is ignored, RESET
/// ends monitoring, QUIT closes (and other monitors see it).
#[test]
fn monitor_clients_still_run_commands() {
    let s = TestServer::start();
    let mut m = s.raw();
    let mut other = s.raw();
    assert_eq!(m.call(&["MONITOR"]), simple("OK"));
    assert_eq!(m.call(&["PING"]), simple("PONG"));
    let Frame::Simple(line) = m.read_frame() else {
        panic!("no MONITOR line for the monitor's own PING")
    };
    assert!(String::from_utf8_lossy(&line).ends_with("\"PING\""));
    assert_eq!(
        m.call(&["SET", "a", "1"]),
        error("ERR Replica can't interact with the keyspace")
    );
    m.send(&["MONITOR"]);
    assert_eq!(other.call(&["ECHO", "x"]), bulk("x"));
    let Frame::Simple(line) = m.read_frame() else {
        panic!("no MONITOR line for ECHO")
    };
    assert!(String::from_utf8_lossy(&line).ends_with("\"ECHO\" \"x\""));
    assert_eq!(m.call(&["RESET"]), simple("RESET"));
    assert_eq!(m.call(&["SET", "a", "1"]), simple("OK"));
    assert_eq!(m.call(&["MONITOR"]), simple("OK"));
    let mut watcher = s.raw();
    assert_eq!(watcher.call(&["MONITOR"]), simple("OK"));
    assert_eq!(m.call(&["QUIT"]), simple("OK"));
    m.expect_closed();
    let Frame::Simple(line) = watcher.read_frame() else {
        panic!("no MONITOR line")
    };
    assert!(String::from_utf8_lossy(&line).ends_with("\"QUIT\""));
}

/// SHUTDOWN refuses SAVE with NOSAVE and ABORT with any other flag as a
/// syntax error, before anything else (the server keeps running).
#[test]
fn shutdown_rejects_conflicting_flags() {
    let mut s = TestServer::start();
    let mut raw = s.raw();
    for flags in [
        &["SAVE", "NOSAVE"][..],
        &["NOSAVE", "SAVE"],
        &["ABORT", "NOW"],
        &["ABORT", "FORCE"],
        &["ABORT", "NOSAVE"],
        &["NOW", "ABORT"],
    ] {
        let mut args = vec!["SHUTDOWN"];
        args.extend_from_slice(flags);
        assert_eq!(raw.call(&args), error("ERR syntax error"), "{args:?}");
    }
    assert_eq!(
        raw.call(&["SHUTDOWN", "ABORT"]),
        error("ERR No shutdown in progress.")
    );
    assert_eq!(raw.call(&["PING"]), simple("PONG"));
    s.assert_healthy();
}

/// DEBUG POPULATE creates `prefix:n` keys holding `value:n` (cut or
/// zero-padded to a size), leaving existing keys alone; DEBUG SLEEP and
/// SET-ACTIVE-EXPIRE read their argument as C's strtod/atoi do; DEBUG
/// OBJECT reports shared integers' refcount as OBJECT REFCOUNT does.
#[test]
fn debug_populate_and_lenient_arguments() {
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let mut raw = s.raw();
    ok(&mut raw, &["SET", "key:1", "mine"]);
    ok(&mut raw, &["DEBUG", "POPULATE", "3"]);
    assert_eq!(raw.call(&["DBSIZE"]), Frame::Integer(3));
    assert_eq!(raw.call(&["GET", "key:0"]), bulk("value:0"));
    assert_eq!(raw.call(&["GET", "key:1"]), bulk("mine"));
    ok(&mut raw, &["DEBUG", "POPULATE", "2", "pre", "10"]);
    assert_eq!(raw.call(&["GET", "pre:1"]), bulk(b"value:1\0\0\0"));
    ok(&mut raw, &["DEBUG", "POPULATE", "2", "short", "3"]);
    assert_eq!(raw.call(&["GET", "short:1"]), bulk("val"));
    ok(&mut raw, &["DEBUG", "POPULATE", "1", "zero", "0"]);
    assert_eq!(raw.call(&["GET", "zero:0"]), bulk("value:0"));
    ok(&mut raw, &["DEBUG", "POPULATE", "0"]);
    // WATCH sees the keys it creates.
    let mut w = s.raw();
    ok(&mut w, &["WATCH", "w:0"]);
    ok(&mut raw, &["DEBUG", "POPULATE", "1", "w"]);
    let replies = w.pipeline(&[vec!["MULTI"], vec!["PING"], vec!["EXEC"]]);
    assert_eq!(replies[2], Frame::NullArray);
    for bad in [&["-1"][..], &["x"], &["1", "p", "x"], &["1", "p", "-1"]] {
        let mut args = vec!["DEBUG", "POPULATE"];
        args.extend_from_slice(bad);
        assert_eq!(
            raw.call(&args),
            error("ERR value is out of range, must be positive"),
            "{args:?}"
        );
    }
    assert_eq!(
        raw.call(&["DEBUG", "POPULATE", "1", "p", "1", "extra"]),
        error(
            "ERR unknown subcommand or wrong number of arguments for 'POPULATE'. Try DEBUG HELP."
        )
    );
    ok(&mut raw, &["DEBUG", "SLEEP", "x"]);
    ok(&mut raw, &["DEBUG", "SLEEP", "0.01s"]);
    ok(&mut raw, &["DEBUG", "SET-ACTIVE-EXPIRE", "x"]);
    ok(&mut raw, &["DEBUG", "SET-ACTIVE-EXPIRE", "2"]);
    ok(&mut raw, &["SET", "n", "1"]);
    let line = match raw.call(&["DEBUG", "OBJECT", "n"]) {
        Frame::Simple(s) => String::from_utf8(s).unwrap(),
        other => panic!("DEBUG OBJECT answered {}", fmt_frame(&other)),
    };
    assert!(line.contains(" refcount:2147483647 "), "{line}");
}

/// OBJECT's subcommands count a keyspace hit or miss, as Redis's lookups
/// for them do.
#[test]
fn object_counts_keyspace_hits_and_misses() {
    let s = TestServer::start();
    let mut raw = s.raw();
    ok(&mut raw, &["SET", "a", "1"]);
    ok(&mut raw, &["CONFIG", "RESETSTAT"]);
    assert_eq!(raw.call(&["OBJECT", "ENCODING", "nope"]), Frame::NullBulk);
    assert_eq!(raw.call(&["OBJECT", "ENCODING", "a"]), bulk("int"));
    assert_eq!(
        raw.call(&["OBJECT", "REFCOUNT", "a"]),
        Frame::Integer(2147483647)
    );
    assert_eq!(
        info_field(&mut raw, "stats", "keyspace_hits").as_deref(),
        Some("2")
    );
    assert_eq!(
        info_field(&mut raw, "stats", "keyspace_misses").as_deref(),
        Some("1")
    );
}

/// `always-show-logo yes` prints a start-up banner naming the port and the PID (tools that
/// start servers read the PID from Redis's logo this way); without it, Redis's one-line
/// "Running mode" notice.
#[test]
fn the_start_up_banner_names_the_pid_where_redis_shows_its_logo() {
    let s = TestServer::start_with(&["--always-show-logo", "yes"]);
    let log = s.log_tail(60);
    assert!(log.contains(&format!(" PID: {}", s.pid())), "{log}");
    assert!(log.contains(&format!("Port: {}", s.port())), "{log}");
    let s = TestServer::start();
    let log = s.log_tail(60);
    assert!(
        log.contains(&format!("Running mode=standalone, port={}.", s.port())),
        "{log}"
    );
}

/// DEBUG SLEEP stalls the whole server, as Redis's one thread does: other connections (on every
/// worker) get no reply until it ends. (Only a lower bound on time is asserted: a loaded
/// machine can only make the others wait longer. A PING that ran before the sleep began is
/// retried.)
#[test]
fn debug_sleep_stalls_every_connection() {
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let sleep = Duration::from_secs(2);
    let stalled_every_time = (0..3).any(|_| {
        let mut others: Vec<RawClient> = (0..4).map(|_| s.raw()).collect();
        for o in &mut others {
            assert_eq!(o.call(&["PING"]), simple("PONG"));
        }
        let mut sleeper = s.raw();
        let sent = Instant::now();
        sleeper.send(&["DEBUG", "SLEEP", "2"]);
        // (Each reply is timed as it arrives, by its own thread.)
        let waits: Vec<_> = others
            .into_iter()
            .map(|mut o| {
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(500));
                    assert_eq!(o.call(&["PING"]), simple("PONG"));
                    sent.elapsed()
                })
            })
            .collect();
        let all_waited = waits
            .into_iter()
            .map(|t| t.join().expect("PING thread"))
            .all(|waited| waited >= sleep);
        assert_eq!(sleeper.read_frame(), simple("OK"));
        all_waited
    });
    assert!(stalled_every_time, "a PING was answered during DEBUG SLEEP");
}
