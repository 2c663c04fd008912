//! Server commands: INFO, CONFIG, COMMAND, TIME, LASTSAVE, SHUTDOWN,
//! SLOWLOG, LATENCY, MONITOR, MEMORY and DEBUG.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use tessera_resp::encode::ReplyBuf;

use super::args::{eq_ic, int, lossy};
use super::flags::*;
use super::generic::{container, help_reply};
use super::meta::{arg as a, docflags, ks, ksflags, ksflags::*, BeginSearch, FindKeys};
use super::{acl, all_commands, CmdError, CmdResult, CommandSpec, Ctx, Handler, KeySpecDef};
use crate::server::log;
use crate::server::state::{unix_ms, unix_us};
use crate::util::glob::glob_match;

/// A server command: group `server`, no ACL category beyond its flags'.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "server", since, summary, handler)
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "info",
        -1,
        LOADING | STALE | SENTINEL,
        "1.0.0",
        "Returns information and statistics about the server.",
        info,
    )
    .acl(acl::DANGEROUS)
    .tips(&["nondeterministic_output", "request_policy:all_shards", "response_policy:special"])
    .history(&[("7.0.0", "Added support for taking multiple section arguments.")])
    .args(&[a::string("section").optional().multiple()]),
    cmd("config", -2, 0, "2.0.0", "Container for commands that read and change the configuration.", container)
        .complexity("Depends on subcommand.")
        .subcommands(CONFIG_SUBS),
    cmd(
        "command",
        -1,
        LOADING | STALE | SENTINEL,
        "2.8.13",
        "Returns detailed information about all commands.",
        command,
    )
    .acl(acl::CONNECTION)
    .complexity("O(N) where N is the total number of Redis commands")
    .tips(&["nondeterministic_output_order"])
    .subcommands(COMMAND_SUBS),
    cmd("time", 1, LOADING | STALE | FAST, "2.6.0", "Returns the server time.", time)
        .tips(&["nondeterministic_output"]),
    cmd(
        "role",
        1,
        NOSCRIPT | LOADING | STALE | FAST,
        "2.8.12",
        "Returns the replication role of the server.",
        role,
    )
    .acl(acl::ADMIN | acl::DANGEROUS),
    cmd(
        "lastsave",
        1,
        LOADING | STALE | FAST,
        "1.0.0",
        "Returns the Unix timestamp of the last successful save to disk.",
        lastsave,
    )
    .acl(acl::ADMIN | acl::DANGEROUS)
    .tips(&["nondeterministic_output"]),
    cmd(
        "shutdown",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY | SENTINEL,
        "1.0.0",
        "Stops the server.",
        shutdown,
    )
    .complexity(
        "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
    )
    .history(&[("7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers.")])
    .args(&[
        a::oneof("nosave_save", &[a::pure("nosave", "NOSAVE"), a::pure("save", "SAVE")]).optional(),
        a::pure("now", "NOW").since("7.0.0").optional(),
        a::pure("force", "FORCE").since("7.0.0").optional(),
        a::pure("abort", "ABORT").since("7.0.0").optional(),
    ]),
    cmd("slowlog", -2, 0, "2.2.12", "Container for commands that read and reset the slow log.", container)
        .complexity("Depends on subcommand.")
        .subcommands(SLOWLOG_SUBS),
    cmd("latency", -2, 0, "2.8.13", "Container for commands that report and reset latency samples.", container)
        .complexity("Depends on subcommand.")
        .subcommands(LATENCY_SUBS),
    cmd(
        "monitor",
        1,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "1.0.0",
        "Listens for all requests received by the server in real time.",
        monitor,
    )
    .complexity(""),
    cmd("memory", -2, 0, "4.0.0", "Container for commands that report on memory use.", container)
        .complexity("Depends on subcommand.")
        .subcommands(MEMORY_SUBS),
    cmd(
        "debug",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE | PROTECTED | REWRITES_EFFECTS,
        "1.0.0",
        "Container for commands that help debug the server.",
        debug,
    )
    .complexity("Depends on subcommand.")
    .doc_flags(docflags::SYSCMD),
];

static CONFIG_SUBS: &[CommandSpec] = &[
    cmd(
        "get",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.0.0",
        "Returns the effective values of configuration parameters.",
        config_get,
    )
    .complexity("O(N) when N is the number of configuration parameters provided")
    .history(&[(
        "7.0.0",
        "Added the ability to pass multiple pattern parameters in one call",
    )])
    .args(&[a::block("parameter", &[a::string("parameter")]).multiple()]),
    cmd(
        "set",
        -4,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.0.0",
        "Sets configuration parameters in-flight.",
        config_set,
    )
    .complexity("O(N) when N is the number of configuration parameters provided")
    .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
    .history(&[(
        "7.0.0",
        "Added the ability to set multiple parameters in one call.",
    )])
    .args(&[a::block(
        "parameter_value",
        &[a::string("parameter"), a::string("value")],
    )
    .multiple()]),
    cmd(
        "resetstat",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.0.0",
        "Resets the server's statistics.",
        config_resetstat,
    ),
    cmd(
        "rewrite",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.8.0",
        "Persists the effective configuration to file.",
        config_rewrite,
    ),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "5.0.0",
        "Returns helpful text about the different subcommands.",
        config_help,
    ),
];

static COMMAND_SUBS: &[CommandSpec] = &[
    cmd(
        "count",
        2,
        LOADING | STALE,
        "2.8.13",
        "Returns a count of commands.",
        command_count,
    )
    .acl(acl::CONNECTION),
    cmd(
        "list",
        -2,
        LOADING | STALE,
        "7.0.0",
        "Returns a list of command names.",
        command_list,
    )
    .acl(acl::CONNECTION)
    .complexity("O(N) where N is the total number of Redis commands")
    .tips(&["nondeterministic_output_order"])
    .args(&[a::oneof(
        "filterby",
        &[
            a::string("module-name").token("MODULE"),
            a::string("category").token("ACLCAT"),
            a::pattern("pattern").token("PATTERN"),
        ],
    )
    .token("FILTERBY")
    .optional()]),
    cmd(
        "info",
        -2,
        LOADING | STALE,
        "2.8.13",
        "Returns information about one, multiple or all commands.",
        command_info,
    )
    .acl(acl::CONNECTION)
    .complexity("O(N) where N is the number of commands to look up")
    .tips(&["nondeterministic_output_order"])
    .history(&[(
        "7.0.0",
        "Allowed to be called with no argument to get info on all commands.",
    )])
    .args(&[a::string("command-name").optional().multiple()]),
    cmd(
        "docs",
        -2,
        LOADING | STALE,
        "7.0.0",
        "Returns documentary information about one, multiple or all commands.",
        command_docs,
    )
    .acl(acl::CONNECTION)
    .complexity("O(N) where N is the number of commands to look up")
    .tips(&["nondeterministic_output_order"])
    .args(&[a::string("command-name").optional().multiple()]),
    cmd(
        "getkeys",
        -4,
        LOADING | STALE,
        "2.8.13",
        "Extracts the key names from an arbitrary command.",
        command_getkeys,
    )
    .acl(acl::CONNECTION)
    .complexity("O(N) where N is the number of arguments to the command"),
    cmd(
        "getkeysandflags",
        -4,
        LOADING | STALE,
        "7.0.0",
        "Extracts the key names from an arbitrary command, each with how the command uses it.",
        command_getkeysandflags,
    )
    .acl(acl::CONNECTION)
    .complexity("O(N) where N is the number of arguments to the command"),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "5.0.0",
        "Returns helpful text about the different subcommands.",
        command_help,
    )
    .acl(acl::CONNECTION),
];

static SLOWLOG_SUBS: &[CommandSpec] = &[
    cmd(
        "get",
        -2,
        ADMIN | LOADING | STALE,
        "2.2.12",
        "Returns the slow log's entries.",
        slowlog_get,
    )
    .complexity("O(N) where N is the number of entries returned")
    .tips(&["request_policy:all_nodes", "nondeterministic_output"])
    .history(&[(
        "4.0.0",
        "Added client IP address, port and name to the reply.",
    )])
    .args(&[a::integer("count").optional()]),
    cmd(
        "len",
        2,
        ADMIN | LOADING | STALE,
        "2.2.12",
        "Returns the number of entries in the slow log.",
        slowlog_len,
    )
    .tips(&[
        "request_policy:all_nodes",
        "response_policy:agg_sum",
        "nondeterministic_output",
    ]),
    cmd(
        "reset",
        2,
        ADMIN | LOADING | STALE,
        "2.2.12",
        "Clears all entries from the slow log.",
        slowlog_reset,
    )
    .complexity("O(N) where N is the number of entries in the slowlog")
    .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "6.2.0",
        "Returns helpful text about the different subcommands.",
        slowlog_help,
    ),
];

static LATENCY_SUBS: &[CommandSpec] = &[
    cmd(
        "latest",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.8.13",
        "Returns the latest latency samples for all events.",
        latency_latest,
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_nodes",
        "response_policy:special",
    ]),
    cmd(
        "history",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.8.13",
        "Returns timestamp-latency samples for an event.",
        latency_history,
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_nodes",
        "response_policy:special",
    ])
    .args(&[a::string("event")]),
    cmd(
        "reset",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.8.13",
        "Resets the latency data for one or more events.",
        latency_reset,
    )
    .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
    .args(&[a::string("event").optional().multiple()]),
    cmd(
        "doctor",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.8.13",
        "Returns a readable analysis of the latency events recorded.",
        latency_doctor,
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_nodes",
        "response_policy:special",
    ]),
    cmd(
        "graph",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.8.13",
        "Returns a text chart of an event's latency samples.",
        latency_graph,
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_nodes",
        "response_policy:special",
    ])
    .args(&[a::string("event")]),
    cmd(
        "histogram",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "7.0.0",
        "Returns how command latencies are distributed, per command.",
        latency_histogram,
    )
    .complexity("O(N) where N is the number of commands with latency information being retrieved.")
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_nodes",
        "response_policy:special",
    ])
    .args(&[a::string("command").optional().multiple()]),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "2.8.13",
        "Returns helpful text about the different subcommands.",
        latency_help,
    ),
];

static MEMORY_SUBS: &[CommandSpec] = &[
    cmd(
        "usage",
        -3,
        READONLY,
        "4.0.0",
        "Estimates the memory usage of a key.",
        memory_usage,
    )
    .complexity("O(N) where N is the number of samples.")
    .key_specs(&[ks(RO, 2, 0, 1)])
    .args(&[
        a::key("key", 0),
        a::integer("count").token("SAMPLES").optional(),
    ]),
    cmd(
        "stats",
        2,
        0,
        "4.0.0",
        "Returns details about memory usage.",
        memory_stats,
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ]),
    cmd(
        "doctor",
        2,
        0,
        "4.0.0",
        "Outputs a memory problems report.",
        memory_doctor,
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ]),
    cmd(
        "malloc-stats",
        2,
        0,
        "4.0.0",
        "Reports the memory allocator's own statistics.",
        memory_malloc_stats,
    )
    .complexity("Depends on how much memory is allocated, could be slow")
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ]),
    cmd(
        "purge",
        2,
        0,
        "4.0.0",
        "Asks the memory allocator to hand unused pages back to the system.",
        memory_purge,
    )
    .complexity("Depends on how much memory is allocated, could be slow")
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "4.0.0",
        "Returns helpful text about the different subcommands.",
        memory_help,
    ),
];

// ---------------------------------------------------------------- INFO

fn info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut wanted: Vec<String> = args[1..]
        .iter()
        .map(|a| lossy(a).to_ascii_lowercase())
        .collect();
    if wanted.is_empty() {
        wanted.push("default".into());
    }
    let default_sections = [
        "server",
        "clients",
        "memory",
        "persistence",
        "stats",
        "replication",
        "cpu",
        "modules",
        "errorstats",
        "cluster",
        "keyspace",
    ];
    let all_sections = [
        "server",
        "clients",
        "memory",
        "persistence",
        "stats",
        "replication",
        "cpu",
        "modules",
        "commandstats",
        "errorstats",
        "latencystats",
        "cluster",
        "keyspace",
    ];
    let mut sections: Vec<&str> = Vec::new();
    for w in &wanted {
        match w.as_str() {
            "default" => sections.extend(default_sections),
            "all" | "everything" => sections.extend(all_sections),
            s => {
                if let Some(found) = all_sections.iter().find(|x| **x == s) {
                    sections.push(found);
                }
            }
        }
    }
    let mut text = String::new();
    for s in all_sections {
        if !sections.contains(&s) {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        info_section(ctx, s, &mut text);
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

fn info_section(ctx: &Ctx, section: &str, t: &mut String) {
    let srv = ctx.srv;
    let cfg = &srv.config;
    match section {
        "server" => {
            let uptime = srv.uptime_secs();
            let _ = write!(
                t,
                "# Server\r\nredis_version:{}\r\ntessera_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\nprocess_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nlru_clock:{}\r\nexecutable:{}\r\nconfig_file:{}\r\nio_threads_active:{}\r\n",
                crate::REDIS_COMPAT_VERSION,
                crate::TESSERA_VERSION,
                os_name(),
                std::process::id(),
                srv.run_id,
                srv.port.load(std::sync::atomic::Ordering::Relaxed),
                unix_us(),
                uptime,
                uptime / 86400,
                cfg.hz(),
                cfg.hz(),
                (unix_ms() / 1000) & 0xff_ffff,
                srv.executable,
                srv.config_file.clone().unwrap_or_default(),
                (srv.worker_threads > 1) as u8,
            );
        }
        "clients" => {
            // The biggest query buffer (allocated) and reply backlog among
            // the connected clients.
            let (max_in, max_out) = srv.clients.snapshot().iter().fold((0, 0), |(i, o), c| {
                (
                    i.max(c.qbuf.load(Relaxed) + c.qbuf_free.load(Relaxed)),
                    o.max(c.omem.load(Relaxed)),
                )
            });
            let _ = write!(
                t,
                "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:{max_in}\r\nclient_recent_max_output_buffer:{max_out}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:{}\r\n",
                srv.clients.connected(),
                cfg.maxclients(),
                srv.blocking.reported_blocked(),
                srv.tracking.tracking_clients(),
                srv.blocking.with_deadline.load(Relaxed),
            );
        }
        "memory" => {
            let m = MemoryReport::gather(ctx);
            let frag = m.fragmentation();
            let _ = write!(
                t,
                "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\nused_memory_rss:{}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{:.2}%\r\nused_memory_overhead:{}\r\nused_memory_startup:{}\r\nused_memory_dataset:{}\r\nused_memory_dataset_perc:{:.2}%\r\nallocator_allocated:{}\r\nallocator_active:{}\r\nallocator_resident:{}\r\ntotal_system_memory:{}\r\ntotal_system_memory_human:{}\r\nused_memory_lua:{}\r\nused_memory_vm_eval:{}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{}\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\nnumber_of_libraries:{}\r\nused_memory_vm_functions:0\r\nused_memory_vm_total:{}\r\nused_memory_vm_total_human:{}\r\nused_memory_functions:{}\r\nused_memory_scripts:{}\r\nused_memory_scripts_human:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nallocator_frag_ratio:{:.2}\r\nallocator_frag_bytes:{}\r\nallocator_rss_ratio:{:.2}\r\nallocator_rss_bytes:{}\r\nrss_overhead_ratio:{:.2}\r\nrss_overhead_bytes:{}\r\nmem_fragmentation_ratio:{:.2}\r\nmem_fragmentation_bytes:{}\r\nmem_not_counted_for_evict:0\r\nmem_replication_backlog:0\r\nmem_total_replication_buffers:0\r\nmem_clients_slaves:0\r\nmem_clients_normal:{}\r\nmem_cluster_links:0\r\nmem_aof_buffer:0\r\nmem_allocator:{}\r\nactive_defrag_running:0\r\nlazyfree_pending_objects:{}\r\nlazyfreed_objects:{}\r\n",
                m.used,
                human(m.used),
                m.rss,
                human(m.rss),
                m.peak,
                human(m.peak),
                m.peak_perc(),
                m.overhead(),
                m.startup,
                m.dataset(),
                m.dataset_perc(),
                m.allocated,
                m.active,
                m.resident,
                total_system_memory(),
                human(total_system_memory()),
                m.lua_vm,
                m.lua_vm,
                human(m.lua_vm),
                m.scripts,
                ctx.srv.scripts.count(),
                m.functions,
                m.libraries,
                m.lua_vm,
                human(m.lua_vm),
                m.functions_code,
                m.scripts + m.functions_code,
                human(m.scripts + m.functions_code),
                cfg.maxmemory(),
                human(cfg.maxmemory()),
                policy_name(ctx),
                frag[0].0,
                frag[0].1,
                frag[1].0,
                frag[1].1,
                frag[2].0,
                frag[2].1,
                frag[3].0,
                frag[3].1,
                m.clients,
                allocator_name(),
                crate::server::lazyfree::pending(),
                crate::server::lazyfree::freed(),
            );
        }
        "persistence" => {
            let _ = write!(
                t,
                "# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\nrdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:ok\r\nrdb_last_bgsave_time_sec:-1\r\nrdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:-1\r\naof_current_rewrite_time_sec:-1\r\naof_last_bgrewrite_status:ok\r\naof_rewrites:0\r\naof_rewrites_consecutive_failures:0\r\naof_last_write_status:ok\r\naof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
                srv.lastsave_s.load(Relaxed)
            );
        }
        "stats" => {
            let ks = srv.keyspace.stats();
            let (ops, in_kbps, out_kbps) = srv.instant.lock().rates();
            let total = |f: fn(&crate::server::stats::WorkerStats) -> u64| srv.stat_total(f);
            let _ = write!(
                t,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ntotal_net_repl_input_bytes:0\r\ntotal_net_repl_output_bytes:0\r\ninstantaneous_input_kbps:{:.2}\r\ninstantaneous_output_kbps:{:.2}\r\ninstantaneous_input_repl_kbps:0.00\r\ninstantaneous_output_repl_kbps:0.00\r\nrejected_connections:{}\r\nsync_full:0\r\nsync_partial_ok:0\r\nsync_partial_err:0\r\nexpired_keys:{}\r\nexpired_stale_perc:0.00\r\nexpired_time_cap_reached_count:0\r\nexpire_cycle_cpu_milliseconds:0\r\nevicted_keys:{}\r\nevicted_clients:0\r\ntotal_eviction_exceeded_time:0\r\ncurrent_eviction_exceeded_time:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nlatest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:0\r\nslave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\nunexpected_error_replies:0\r\ntotal_error_replies:{}\r\ndump_payload_sanitizations:0\r\ntotal_reads_processed:{}\r\ntotal_writes_processed:{}\r\nio_threaded_reads_processed:0\r\nio_threaded_writes_processed:0\r\nreply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n",
                total(|w| w.connections_received.get()),
                total(|w| w.commands_processed.get()),
                ops,
                total(|w| w.net_input_bytes.get()),
                total(|w| w.net_output_bytes.get()),
                in_kbps,
                out_kbps,
                total(|w| w.rejected_connections.get()),
                ks.expired_keys,
                total(|w| w.evicted_keys.get()),
                ks.keyspace_hits,
                ks.keyspace_misses,
                srv.pubsub.channel_count(),
                srv.pubsub.pattern_count(),
                srv.pubsub.active(crate::server::pubsub::Kind::Shard, None).len(),
                srv.tracking.tracked_keys(),
                srv.tracking.tracked_items(),
                srv.tracking.prefix_count(),
                error_totals(ctx).values().sum::<u64>(),
                total(|w| w.reads_processed.get()),
                total(|w| w.writes_processed.get()),
            );
        }
        "replication" => {
            let _ = write!(
                t,
                "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n",
                srv.run_id
            );
        }
        "cpu" => {
            let (us, sy) = cpu_times();
            // Redis's main thread runs every command; here the worker
            // threads do, so their sum stands in for it.
            let (mus, msy) = worker_cpu_times();
            let _ = write!(
                t,
                "# CPU\r\nused_cpu_sys:{sy:.6}\r\nused_cpu_user:{us:.6}\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\nused_cpu_sys_main_thread:{msy:.6}\r\nused_cpu_user_main_thread:{mus:.6}\r\n"
            );
        }
        "modules" => t.push_str("# Modules\r\n"),
        "cluster" => t.push_str("# Cluster\r\ncluster_enabled:0\r\n"),
        "errorstats" => {
            t.push_str("# Errorstats\r\n");
            let mut errs: Vec<_> = error_totals(ctx).into_iter().collect();
            errs.sort();
            for (code, n) in errs {
                let _ = write!(t, "errorstat_{code}:count={n}\r\n");
            }
        }
        "commandstats" => {
            t.push_str("# Commandstats\r\n");
            for id in 0..super::command_count_with_subs() {
                let calls: u64 = srv.workers.iter().map(|w| w.commands[id].calls.get()).sum();
                let rejected: u64 = srv
                    .workers
                    .iter()
                    .map(|w| w.commands[id].rejected.get())
                    .sum();
                let failed: u64 = srv
                    .workers
                    .iter()
                    .map(|w| w.commands[id].failed.get())
                    .sum();
                if calls == 0 && rejected == 0 && failed == 0 {
                    continue;
                }
                let usec: u64 = srv.workers.iter().map(|w| w.commands[id].usec.get()).sum();
                let Some((name, _)) = super::by_id(id) else {
                    continue;
                };
                let per = if calls > 0 {
                    usec as f64 / calls as f64
                } else {
                    0.0
                };
                let _ = write!(
                    t,
                    "cmdstat_{name}:calls={calls},usec={usec},usec_per_call={per:.2},rejected_calls={rejected},failed_calls={failed}\r\n"
                );
            }
        }
        "latencystats" => {
            t.push_str("# Latencystats\r\n");
            let pcts = cfg.latency_tracking_info_percentiles();
            // Nothing is listed while latency-tracking is off, as in Redis.
            let ids = if cfg.latency_tracking() {
                0..super::command_count_with_subs()
            } else {
                0..0
            };
            for id in ids {
                let hists: Vec<_> = srv
                    .workers
                    .iter()
                    .map(|w| &w.commands[id].latency)
                    .collect();
                let Some(values) =
                    crate::server::stats::LatencyHistogram::percentiles_us(&hists, &pcts)
                else {
                    continue;
                };
                let Some((name, _)) = super::by_id(id) else {
                    continue;
                };
                let parts: Vec<String> = pcts
                    .iter()
                    .zip(values)
                    .map(|(p, v)| format!("p{}={v:.3}", fmt_pct(*p)))
                    .collect();
                let _ = write!(t, "latency_percentiles_usec_{name}:{}\r\n", parts.join(","));
            }
        }
        "keyspace" => {
            t.push_str("# Keyspace\r\n");
            for (db, d) in srv.keyspace.db_summaries().into_iter().enumerate() {
                if d.keys > 0 {
                    let _ = write!(
                        t,
                        "db{db}:keys={},expires={},avg_ttl={}\r\n",
                        d.keys,
                        d.volatile,
                        // (Redis resets it when the database has no TTLs.)
                        if d.volatile > 0 {
                            srv.keyspace.avg_ttl(db)
                        } else {
                            0
                        }
                    );
                }
            }
        }
        _ => {}
    }
}

/// A percentile as Redis names it: 50, 99, 99.9.
fn fmt_pct(p: f64) -> String {
    let s = format!("{p}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn error_totals(ctx: &Ctx) -> std::collections::HashMap<String, u64> {
    let mut m = std::collections::HashMap::new();
    for w in &ctx.srv.workers {
        for (k, v) in w.errors.lock().iter() {
            *m.entry(k.clone()).or_insert(0) += v;
        }
    }
    m
}

fn policy_name(ctx: &Ctx) -> String {
    ctx.srv
        .config
        .get(&[b"maxmemory-policy".as_slice()])
        .into_iter()
        .next()
        .map(|(_, v)| lossy(&v))
        .unwrap_or_else(|| "noeviction".into())
}

fn human(n: u64) -> String {
    let f = n as f64;
    if f < 1024.0 {
        format!("{n}B")
    } else if f < 1024.0 * 1024.0 {
        format!("{:.2}K", f / 1024.0)
    } else if f < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", f / 1024.0 / 1024.0)
    } else {
        format!("{:.2}G", f / 1024.0 / 1024.0 / 1024.0)
    }
}

fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .and_then(|v| v.parse::<u64>().ok())
                })
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// (user, system) seconds of the worker threads, from /proc.
fn worker_cpu_times() -> (f64, f64) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return (0.0, 0.0);
    };
    // SAFETY: sysconf only reads its integer argument.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let (mut user, mut sys) = (0u64, 0u64);
    for task in tasks.flatten() {
        let path = task.path();
        let is_worker = std::fs::read_to_string(path.join("comm"))
            .is_ok_and(|c| c.starts_with("tessera-worker") || c.starts_with("tessera-spare"));
        if !is_worker {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        // Fields after the parenthesised name: state is the first; utime
        // and stime are the 12th and 13th.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        user += fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0);
        sys += fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    }
    (user as f64 / tick, sys as f64 / tick)
}

/// The kernel's name, release and machine, as Redis's INFO `os` shows them.
fn os_name() -> String {
    // SAFETY: uname fills the zeroed struct we own and nothing else.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to an owned utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    )
}

/// "jemalloc-<version>", as Redis names its allocator.
fn allocator_name() -> String {
    match tikv_jemalloc_ctl::version::read() {
        Ok(v) => format!("jemalloc-{}", v.split('-').next().unwrap_or(v)),
        Err(_) => "jemalloc".to_string(),
    }
}

fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass and nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to an owned rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

// ---------------------------------------------------------------- CONFIG

fn config_get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pairs = ctx.srv.config.get(&args[2..]);
    ctx.out.map(pairs.len());
    for (k, v) in pairs {
        ctx.out.bulk(k.as_bytes());
        ctx.out.bulk(&v);
    }
    Ok(())
}

fn config_set(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if !(args.len() - 2).is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    let pairs: Vec<(&[u8], &[u8])> = args[2..].chunks_exact(2).map(|c| (c[0], c[1])).collect();
    let local = ctx.client.info.addr.is_local();
    ctx.srv
        .config
        .set_for_client(
            &pairs,
            crate::config::SetContext {
                local_client: local,
                loading: false,
            },
        )
        .map_err(CmdError::Bytes)?;
    if pairs.iter().any(|(name, _)| eq_ic(name, "maxmemory")) {
        crate::server::evict::maxmemory_changed(ctx.srv, ctx.client);
        // Evictions propagate one by one, as the server's own deletions,
        // not as part of the CONFIG SET.
        ctx.srv.journal.publish_pending(false);
    }
    ctx.out.ok();
    Ok(())
}

fn config_resetstat(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    for w in &ctx.srv.workers {
        w.reset();
    }
    ctx.srv.acceptor.reset();
    ctx.srv.keyspace.reset_stats();
    ctx.srv.peak_memory.store(0, Relaxed);
    ctx.out.ok();
    Ok(())
}

fn config_rewrite(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.srv.config.rewrite().map_err(CmdError::msg)?;
    ctx.out.ok();
    Ok(())
}

fn config_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx,
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    )
}

// ---------------------------------------------------------------- COMMAND

fn command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Plain COMMAND (arity -1 lets it through without a subcommand).
    let _ = args;
    let cmds = all_commands();
    ctx.out.array(cmds.len());
    for c in cmds {
        command_entry(ctx, c, None);
    }
    Ok(())
}

/// The flags COMMAND INFO prints, in its order.
fn flag_names(c: &CommandSpec) -> Vec<&'static str> {
    let f = c.reported_flags();
    super::flags::NAMES
        .iter()
        .filter(|(b, _)| f & b != 0)
        .map(|(_, n)| *n)
        .collect()
}

fn acl_names(c: &CommandSpec) -> Vec<&'static str> {
    let cats = c.acl_categories();
    super::acl::NAMES
        .iter()
        .filter(|(f, _)| cats & f != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// One COMMAND INFO entry in Redis 7.0's ten-field shape: name, arity,
/// flags, first/last/step, ACL categories, tips, key specs, subcommands.
fn command_entry(ctx: &mut Ctx, c: &CommandSpec, parent: Option<&CommandSpec>) {
    let name = super::full_name(parent, c);
    let (first, last, step) = c.legacy_keys();
    let out = &mut *ctx.out;
    out.array(10);
    out.bulk(name.as_bytes());
    out.int(c.arity as i64);
    let flags = flag_names(c);
    out.set(flags.len());
    for f in flags {
        out.simple(f.as_bytes());
    }
    out.int(first as i64);
    out.int(last as i64);
    out.int(step as i64);
    let cats = acl_names(c);
    out.set(cats.len());
    for a in cats {
        out.simple(format!("@{a}").as_bytes());
    }
    out.set(c.tips.len());
    for t in c.tips {
        out.bulk(t.as_bytes());
    }
    out.set(c.key_specs.len());
    for k in c.key_specs {
        key_spec_entry(out, k);
    }
    if c.subcommands.is_empty() {
        out.set(0);
    } else {
        out.array(c.subcommands.len());
        for s in c.subcommands {
            command_entry(ctx, s, Some(c));
        }
    }
}

/// One key specification as COMMAND INFO shows it.
fn key_spec_entry(out: &mut ReplyBuf, k: &KeySpecDef) {
    out.map(3 + !k.notes.is_empty() as usize);
    if !k.notes.is_empty() {
        out.bulk(b"notes");
        out.bulk(k.notes.as_bytes());
    }
    out.bulk(b"flags");
    key_flag_names(out, k.flags);
    out.bulk(b"begin_search");
    out.map(2);
    out.bulk(b"type");
    match k.begin_search {
        BeginSearch::Index(i) => {
            out.bulk(b"index");
            out.bulk(b"spec");
            out.map(1);
            out.bulk(b"index");
            out.int(i as i64);
        }
        BeginSearch::Keyword { keyword, startfrom } => {
            out.bulk(b"keyword");
            out.bulk(b"spec");
            out.map(2);
            out.bulk(b"keyword");
            out.bulk(keyword.as_bytes());
            out.bulk(b"startfrom");
            out.int(startfrom as i64);
        }
        BeginSearch::Unknown => {
            out.bulk(b"unknown");
            out.bulk(b"spec");
            out.map(0);
        }
    }
    out.bulk(b"find_keys");
    out.map(2);
    out.bulk(b"type");
    match k.find_keys {
        FindKeys::Range {
            lastkey,
            keystep,
            limit,
        } => {
            out.bulk(b"range");
            out.bulk(b"spec");
            out.map(3);
            out.bulk(b"lastkey");
            out.int(lastkey as i64);
            out.bulk(b"keystep");
            out.int(keystep as i64);
            out.bulk(b"limit");
            out.int(limit as i64);
        }
        FindKeys::Keynum {
            keynumidx,
            firstkey,
            keystep,
        } => {
            out.bulk(b"keynum");
            out.bulk(b"spec");
            out.map(3);
            out.bulk(b"keynumidx");
            out.int(keynumidx as i64);
            out.bulk(b"firstkey");
            out.int(firstkey as i64);
            out.bulk(b"keystep");
            out.int(keystep as i64);
        }
        FindKeys::Unknown => {
            out.bulk(b"unknown");
            out.bulk(b"spec");
            out.map(0);
        }
    }
}

fn command_count(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(all_commands().len() as i64);
    Ok(())
}

fn command_list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut filter: Option<(String, &[u8])> = None;
    if args.len() == 5 && eq_ic(args[2], "filterby") {
        let kind = lossy(args[3]).to_ascii_lowercase();
        if !["module", "aclcat", "pattern"].contains(&kind.as_str()) {
            return Err(CmdError::Syntax);
        }
        filter = Some((kind, args[4]));
    } else if args.len() != 2 {
        return Err(CmdError::Syntax);
    }
    let mut names = Vec::new();
    for c in all_commands() {
        let mut entries = vec![(c.name.to_string(), *c)];
        for s in c.subcommands {
            entries.push((format!("{}|{}", c.name, s.name), s));
        }
        for (n, spec) in entries {
            let keep = match &filter {
                None => true,
                Some((k, v)) if k == "module" => {
                    let _ = v;
                    false
                }
                Some((k, v)) if k == "aclcat" => {
                    let cat = lossy(v).to_ascii_lowercase();
                    acl_names(spec).contains(&cat.as_str())
                }
                Some((_, v)) => glob_match(v, n.as_bytes(), true),
            };
            if keep {
                names.push(n);
            }
        }
    }
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
    Ok(())
}

fn command_info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() == 2 {
        return command(ctx, args);
    }
    ctx.out.array(args.len() - 2);
    for name in &args[2..] {
        match find_any(name) {
            Some((c, parent)) => command_entry(ctx, c, parent),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

/// Finds `get` or `config|get`.
fn find_any(name: &[u8]) -> Option<(&'static CommandSpec, Option<&'static CommandSpec>)> {
    let s = lossy(name);
    match s.split_once('|') {
        Some((p, sub)) => {
            let (_, parent) = super::lookup(p.as_bytes())?;
            let (_, c) = super::lookup_sub(parent, sub.as_bytes())?;
            Some((c, Some(parent)))
        }
        None => super::lookup(name).map(|(_, c)| (c, None)),
    }
}

/// One COMMAND DOCS entry: the name, then a map of the documentation
/// fields the command has (Redis omits the empty ones).
fn docs_entry(ctx: &mut Ctx, c: &CommandSpec, parent: Option<&CommandSpec>) {
    let out = &mut *ctx.out;
    out.bulk(super::full_name(parent, c).as_bytes());
    let deprecated = !c.deprecated_since.is_empty();
    let fields = 3
        + !c.complexity.is_empty() as usize
        + (c.doc_flags != 0) as usize
        + 2 * deprecated as usize
        + !c.history.is_empty() as usize
        + !c.args.is_empty() as usize
        + !c.subcommands.is_empty() as usize;
    out.map(fields);
    out.bulk(b"summary");
    out.bulk(c.summary.as_bytes());
    out.bulk(b"since");
    out.bulk(c.since.as_bytes());
    out.bulk(b"group");
    out.bulk(c.group.as_bytes());
    if !c.complexity.is_empty() {
        out.bulk(b"complexity");
        out.bulk(c.complexity.as_bytes());
    }
    if c.doc_flags != 0 {
        out.bulk(b"doc_flags");
        let names: Vec<&str> = docflags::NAMES
            .iter()
            .filter(|(b, _)| c.doc_flags & b != 0)
            .map(|(_, n)| *n)
            .collect();
        out.set(names.len());
        for n in names {
            out.simple(n.as_bytes());
        }
    }
    if deprecated {
        out.bulk(b"deprecated_since");
        out.bulk(c.deprecated_since.as_bytes());
        out.bulk(b"replaced_by");
        out.bulk(c.replaced_by.as_bytes());
    }
    if !c.history.is_empty() {
        out.bulk(b"history");
        out.set(c.history.len());
        for (version, change) in c.history {
            out.array(2);
            out.bulk(version.as_bytes());
            out.bulk(change.as_bytes());
        }
    }
    if !c.args.is_empty() {
        out.bulk(b"arguments");
        doc_args(out, c.args);
    }
    if !c.subcommands.is_empty() {
        out.bulk(b"subcommands");
        out.map(c.subcommands.len());
        for s in c.subcommands {
            docs_entry(ctx, s, Some(c));
        }
    }
}

/// A COMMAND DOCS argument list: one map per argument, nested for
/// `oneof` and `block`.
fn doc_args(out: &mut ReplyBuf, args: &[a::Arg]) {
    out.array(args.len());
    for arg in args {
        let key_spec = match arg.kind {
            a::ArgType::Key(i) | a::ArgType::PatternKey(i) => Some(i),
            _ => None,
        };
        let fields = 2
            + key_spec.is_some() as usize
            + !arg.token.is_empty() as usize
            + !arg.since.is_empty() as usize
            + !arg.deprecated_since.is_empty() as usize
            + (arg.flags != 0) as usize
            + !arg.args.is_empty() as usize;
        out.map(fields);
        out.bulk(b"name");
        out.bulk(arg.name.as_bytes());
        out.bulk(b"type");
        out.bulk(arg.kind.name().as_bytes());
        if let Some(i) = key_spec {
            out.bulk(b"key_spec_index");
            out.int(i as i64);
        }
        if !arg.token.is_empty() {
            out.bulk(b"token");
            out.bulk(arg.token.as_bytes());
        }
        if !arg.since.is_empty() {
            out.bulk(b"since");
            out.bulk(arg.since.as_bytes());
        }
        if !arg.deprecated_since.is_empty() {
            out.bulk(b"deprecated_since");
            out.bulk(arg.deprecated_since.as_bytes());
        }
        if arg.flags != 0 {
            out.bulk(b"flags");
            let names: Vec<&str> = a::FLAG_NAMES
                .iter()
                .filter(|(b, _)| arg.flags & b != 0)
                .map(|(_, n)| *n)
                .collect();
            out.set(names.len());
            for n in names {
                out.simple(n.as_bytes());
            }
        }
        if !arg.args.is_empty() {
            out.bulk(b"arguments");
            doc_args(out, arg.args);
        }
    }
}

fn command_docs(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut found: Vec<(&CommandSpec, Option<&CommandSpec>)> = Vec::new();
    if args.len() == 2 {
        found.extend(all_commands().iter().map(|c| (*c, None)));
    } else {
        for n in &args[2..] {
            if let Some(f) = find_any(n) {
                found.push(f);
            }
        }
    }
    ctx.out.map(found.len());
    for (c, p) in found {
        docs_entry(ctx, c, p);
    }
    Ok(())
}

fn command_getkeys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let target = &args[2..];
    let Some((_, idx)) = resolve_keys(ctx, target)? else {
        return Ok(());
    };
    ctx.out.array(idx.len());
    for i in idx {
        ctx.out.bulk(target[i]);
    }
    Ok(())
}

fn command_getkeysandflags(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let target = &args[2..];
    let Some((c, idx)) = resolve_keys(ctx, target)? else {
        return Ok(());
    };
    let flags = key_flags(c, target, &idx);
    ctx.out.array(idx.len());
    for (i, f) in idx.into_iter().zip(flags) {
        ctx.out.array(2);
        ctx.out.bulk(target[i]);
        key_flag_names(ctx.out, f);
    }
    Ok(())
}

/// Key-spec flags as COMMAND INFO and GETKEYSANDFLAGS show them: a set of
/// names.
fn key_flag_names(out: &mut ReplyBuf, flags: u16) {
    let names: Vec<&str> = ksflags::NAMES
        .iter()
        .filter(|(b, _)| flags & b != 0)
        .map(|(_, n)| *n)
        .collect();
    out.set(names.len());
    for n in names {
        out.simple(n.as_bytes());
    }
}

/// How `cmd` uses each of its keys at `positions`. Where a key spec's flags
/// depend on other arguments (SET's GET, BITFIELD's subcommands) or the
/// specs cannot find every key (SORT's STORE), the flags are worked out
/// from the arguments as Redis's key extraction does; otherwise they are
/// those of the first spec that finds the key (each spec is run once, so
/// a command with many keys stays linear).
fn key_flags(cmd: &CommandSpec, args: &[&[u8]], positions: &[usize]) -> Vec<u16> {
    if cmd.name == "set" || cmd.name == "bitfield" {
        return vec![one_key_variable_flags(cmd.name, args); positions.len()];
    }
    if cmd.name == "sort" {
        let flags = |p| if p == 1 { RO | ACCESS } else { OW | UPDATE };
        return positions.iter().map(|&p| flags(p)).collect();
    }
    let mut by_position = std::collections::HashMap::new();
    for spec in cmd.key_specs {
        for p in super::meta::key_positions(std::slice::from_ref(spec), args).unwrap_or_default() {
            by_position.entry(p).or_insert(spec.flags);
        }
    }
    let fallback = cmd.key_specs.first().map_or(0, |spec| spec.flags);
    positions
        .iter()
        .map(|p| by_position.get(p).copied().unwrap_or(fallback))
        .collect()
}

/// SET's and BITFIELD's key flags, which depend on their other arguments.
fn one_key_variable_flags(name: &str, args: &[&[u8]]) -> u16 {
    match name {
        "set" => {
            if args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) {
                RW | ACCESS | UPDATE
            } else {
                OW | UPDATE
            }
        }
        "bitfield" => {
            // Read-only when every operation is a GET (OVERFLOW aside);
            // anything else, a syntax error included, counts as a write.
            let mut i = 2;
            let mut read_only = true;
            while i < args.len() {
                let left = args.len() - i - 1;
                if eq_ic(args[i], "get") && left >= 2 {
                    i += 3;
                } else if eq_ic(args[i], "overflow") && left >= 1 {
                    i += 2;
                } else {
                    read_only = false;
                    break;
                }
            }
            if read_only {
                RO | ACCESS
            } else {
                RW | ACCESS | UPDATE
            }
        }
        _ => 0,
    }
}

/// The command named by `target` and the positions of its keys, with
/// COMMAND GETKEYS's errors; `None` when the reply (no keys) was written.
#[allow(clippy::type_complexity)]
fn resolve_keys(
    ctx: &mut Ctx,
    target: &[&[u8]],
) -> Result<Option<(&'static CommandSpec, Vec<usize>)>, CmdError> {
    let Some((_, mut c)) = super::lookup(target[0]) else {
        return Err(CmdError::msg("ERR Invalid command specified"));
    };
    if !c.subcommands.is_empty() {
        if let Some(sub) = target.get(1) {
            let Some((_, s)) = super::lookup_sub(c, sub) else {
                return Err(CmdError::msg("ERR Invalid command specified"));
            };
            c = s;
        }
    }
    if !c.arity_ok(target.len()) {
        return Err(CmdError::msg(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    // Redis answers from the key specs where they are complete. XREAD's
    // are (the STREAMS keyword, then half of what follows), though they
    // take what follows a stray "streams" or an odd count as keys: its
    // stricter key finder is for running the command, not for this.
    // (When the specs find nothing, Redis falls back to the finder.)
    let found = match super::meta::key_positions(c.key_specs, target) {
        Ok(idx) if matches!(c.name, "xread" | "xreadgroup") && !idx.is_empty() => Ok(idx),
        _ => c.key_indices(target),
    };
    let Ok(idx) = found else {
        return Err(CmdError::msg("ERR Invalid arguments specified for command"));
    };
    if idx.is_empty() {
        if c.has(NO_MANDATORY_KEYS) {
            ctx.out.array(0);
            return Ok(None);
        }
        return Err(CmdError::msg("ERR The command has no key arguments"));
    }
    Ok(Some((c, idx)))
}

fn command_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all commands.",
            "COUNT",
            "    Return the total number of commands in this server.",
            "LIST",
            "    Return a list of all commands in this server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple commands.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple commands.",
            "GETKEYS <full-command>",
            "    Return the keys from a full command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys from a full command, each with how the command uses it.",
        ],
    )
}

// ---------------------------------------------------------------- misc

fn time(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let us = unix_us();
    ctx.out.array(2);
    ctx.out.bulk_int(us / 1_000_000);
    ctx.out.bulk_int(us % 1_000_000);
    Ok(())
}

/// A server without replication is a master with no replicas at offset 0.
fn role(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.array(3);
    ctx.out.bulk(b"master");
    ctx.out.int(0);
    ctx.out.array(0);
    Ok(())
}

fn lastsave(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.srv.lastsave_s.load(Relaxed));
    Ok(())
}

fn shutdown(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (mut save, mut nosave, mut now, mut force, mut abort) = (false, false, false, false, false);
    for a in &args[1..] {
        if eq_ic(a, "nosave") {
            nosave = true;
        } else if eq_ic(a, "save") {
            save = true;
        } else if eq_ic(a, "now") {
            now = true;
        } else if eq_ic(a, "force") {
            force = true;
        } else if eq_ic(a, "abort") {
            abort = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    // As Redis: ABORT takes no other flag, and SAVE and NOSAVE exclude
    // each other.
    if (abort && (save || nosave || now || force)) || (save && nosave) {
        return Err(CmdError::Syntax);
    }
    if abort {
        return Err(CmdError::msg("ERR No shutdown in progress."));
    }

    if save {
        // Snapshots arrive with the persistence issue; refusing is honest.
        log::warning("SHUTDOWN SAVE requested but this build has no RDB persistence");
        return Err(CmdError::msg("ERR Errors trying to SHUTDOWN. Check logs."));
    }
    log::warning("User requested shutdown...");
    crate::server::shutdown_now(ctx.srv)
}

fn slowlog_get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let count = match args.get(2) {
        None => 10,
        Some(a) => {
            let n = int(a)
                .map_err(|_| CmdError::msg("ERR count should be greater than or equal to -1"))?;
            if n < -1 {
                return Err(CmdError::msg(
                    "ERR count should be greater than or equal to -1",
                ));
            }
            n
        }
    };
    if args.len() > 3 {
        return Err(CmdError::WrongArity("slowlog|get".into()));
    }
    let log = ctx.srv.slowlog.lock();
    let n = if count == -1 {
        log.entries.len()
    } else {
        (count as usize).min(log.entries.len())
    };
    let out = &mut *ctx.out;
    out.array(n);
    for e in log.entries.iter().take(n) {
        out.array(6);
        out.int(e.id as i64);
        out.int(e.time_s);
        out.int(e.duration_us as i64);
        out.array(e.args.len());
        for a in &e.args {
            out.bulk(a);
        }
        out.bulk(e.peer.as_bytes());
        out.bulk(e.name.as_bytes());
    }
    Ok(())
}

fn slowlog_len(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let n = ctx.srv.slowlog.lock().entries.len();
    ctx.out.int(n as i64);
    Ok(())
}

fn slowlog_reset(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.srv.slowlog.lock().entries.clear();
    ctx.out.ok();
    Ok(())
}

fn slowlog_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx,
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    )
}

fn latency_latest(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let lat = ctx.srv.latency.lock();
    let mut events: Vec<_> = lat.iter().collect();
    events.sort_by(|a, b| a.0.cmp(b.0));
    let out = &mut *ctx.out;
    out.array(events.len());
    for (name, s) in events {
        let (t, v) = s.samples.back().copied().unwrap_or((0, 0));
        out.array(4);
        out.bulk(name.as_bytes());
        out.int(t);
        out.int(v as i64);
        out.int(s.max_ms as i64);
    }
    Ok(())
}

fn latency_history(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let lat = ctx.srv.latency.lock();
    let out = &mut *ctx.out;
    match lat.get(&lossy(args[2])) {
        Some(s) => {
            out.array(s.samples.len());
            for (t, v) in &s.samples {
                out.array(2);
                out.int(*t);
                out.int(*v as i64);
            }
        }
        None => out.array(0),
    }
    Ok(())
}

fn latency_reset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut lat = ctx.srv.latency.lock();
    let n = if args.len() == 2 {
        let n = lat.len();
        lat.clear();
        n
    } else {
        args[2..]
            .iter()
            .filter(|a| lat.remove(&lossy(a)).is_some())
            .count()
    };
    drop(lat);
    ctx.out.int(n as i64);
    Ok(())
}

/// Per command (every one with samples, or those named, a container
/// naming its subcommands too): the number of samples and their cumulative
/// distribution over power-of-two microsecond buckets.
fn latency_histogram(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let srv = ctx.srv;
    let mut ids: Vec<usize> = Vec::new();
    if args.len() == 2 {
        ids.extend(0..super::command_count_with_subs());
    } else {
        for name in &args[2..] {
            let found = match name.iter().position(|&b| b == b'|') {
                Some(bar) => super::lookup(&name[..bar])
                    .and_then(|(_, parent)| super::lookup_sub(parent, &name[bar + 1..])),
                None => super::lookup(name),
            };
            let Some((id, c)) = found else {
                continue;
            };
            ids.push(id);
            for sub in c.subcommands {
                if let Some((sid, _)) = super::lookup_sub(c, sub.name.as_bytes()) {
                    ids.push(sid);
                }
            }
        }
    }
    let mut rows = Vec::new();
    for id in ids {
        let hists: Vec<_> = srv
            .workers
            .iter()
            .map(|w| &w.commands[id].latency)
            .collect();
        let (calls, buckets) = crate::server::stats::LatencyHistogram::cumulative_log2_us(&hists);
        if calls == 0 {
            continue;
        }
        if let Some((name, _)) = super::by_id(id) {
            rows.push((name, calls, buckets));
        }
    }
    let out = &mut *ctx.out;
    out.map(rows.len());
    for (name, calls, buckets) in rows {
        out.bulk(name.as_bytes());
        out.map(2);
        out.bulk(b"calls");
        out.int(calls as i64);
        out.bulk(b"histogram_usec");
        out.map(buckets.len());
        for (us, count) in buckets {
            out.int(us as i64);
            out.int(count as i64);
        }
    }
    Ok(())
}

/// A readable summary of every latency event: how often, how bad, and
/// what usually causes it.
fn latency_doctor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let threshold = ctx.srv.config.latency_monitor_threshold();
    let lat = ctx.srv.latency.lock();
    let mut events: Vec<_> = lat.iter().filter(|(_, s)| !s.samples.is_empty()).collect();
    events.sort_by(|a, b| a.0.cmp(b.0));
    let mut report = String::new();
    if events.is_empty() {
        if threshold == 0 {
            report.push_str(
                "Latency monitoring is off (latency-monitor-threshold is 0), so there is nothing \
                 to analyse. Turn it on with CONFIG SET latency-monitor-threshold <milliseconds>.\n",
            );
        } else {
            let _ = writeln!(
                report,
                "No event took {threshold} ms or more (latency-monitor-threshold) since the \
                 server started or the last LATENCY RESET."
            );
        }
    } else {
        let _ = writeln!(
            report,
            "{} kind(s) of latency event took {threshold} ms or more (latency-monitor-threshold):\n",
            events.len()
        );
        for (i, (name, s)) in events.iter().enumerate() {
            let n = s.samples.len() as f64;
            let avg = s.samples.iter().map(|x| x.1 as f64).sum::<f64>() / n;
            let spread = s
                .samples
                .iter()
                .map(|x| (x.1 as f64 - avg).abs())
                .sum::<f64>()
                / n;
            let first = s.samples.front().map_or(0, |x| x.0);
            let last = s.samples.back().map_or(0, |x| x.0);
            let _ = writeln!(
                report,
                "{}. {name}: {} sample(s) over {} s, average {avg:.0} ms (mean deviation \
                 {spread:.0} ms), worst {} ms.",
                i + 1,
                s.samples.len(),
                last - first,
                s.max_ms
            );
        }
        report.push_str("\nWhat usually helps:\n");
        for (name, _) in &events {
            let advice = match name.as_str() {
                "command" => {
                    "- command: look for slow commands in SLOWLOG GET; O(N) commands on \
                     big keys (KEYS, SMEMBERS, HGETALL, LRANGE 0 -1, ...) and long scripts \
                     are the usual cause. SCAN-family commands spread the work."
                }
                "fast-command" => {
                    "- fast-command: O(1) or O(log N) commands were slow, which points at \
                     the machine (swapping, CPU contention, a noisy neighbour) rather than \
                     the data."
                }
                _ => continue,
            };
            let _ = writeln!(report, "{advice}");
        }
    }
    drop(lat);
    ctx.out.verbatim(b"txt", report.as_bytes());
    Ok(())
}

/// A text chart of an event's samples, oldest on the left: one column per
/// sample, scaled between the lowest and highest, with each sample's age.
fn latency_graph(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = lossy(args[2]);
    let lat = ctx.srv.latency.lock();
    let Some(series) = lat.get(&*name).filter(|s| !s.samples.is_empty()) else {
        return Err(CmdError::bytes(&[
            b"ERR No samples available for event '",
            super::args::c_bytes(args[2]),
            b"'",
        ]));
    };
    let samples: Vec<(i64, u64)> = series.samples.iter().copied().collect();
    let max_ms = series.max_ms;
    drop(lat);
    let high = samples.iter().map(|s| s.1).max().unwrap_or(0);
    let low = samples.iter().map(|s| s.1).min().unwrap_or(0);
    const ROWS: u64 = 4;
    let mut text = format!(
        "{name} - high {high} ms, low {low} ms (all time high {max_ms} ms)\n{}\n",
        "-".repeat(80)
    );
    // Height of each column, 1..=ROWS.
    let heights: Vec<u64> = samples
        .iter()
        .map(|s| {
            if high == low {
                ROWS
            } else {
                1 + (s.1 - low) * (ROWS - 1) / (high - low)
            }
        })
        .collect();
    for row in (1..=ROWS).rev() {
        let line: String = heights
            .iter()
            .map(|&h| if h >= row { '#' } else { ' ' })
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    // Ages, written downwards: "12s" under its column.
    let now = unix_ms() / 1000;
    let ages: Vec<String> = samples
        .iter()
        .map(|s| format!("{}s", (now - s.0).max(0)))
        .collect();
    let depth = ages.iter().map(String::len).max().unwrap_or(0);
    for i in 0..depth {
        let line: String = ages
            .iter()
            .map(|a| a.as_bytes().get(i).map_or(' ', |&b| b as char))
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

fn latency_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx,
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a readable analysis of the recorded latency events.",
            "GRAPH <event>",
            "    Return a text chart of the <event> class's samples.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "HISTOGRAM [<command> ...]",
            "    Return the cumulative latency distribution of the named commands (all when none).",
        ],
    )
}

/// Registers the feed before replying, so every command run after the
/// client sees `+OK` reaches it.
/// A second MONITOR is ignored without a reply, as Redis ignores it.
fn monitor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    // As Redis: not from inside a transaction.
    if ctx.client.multi.in_exec {
        return Err(CmdError::msg(
            "ERR MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    if ctx.client.monitoring {
        return Ok(());
    }
    let mut mons = ctx.srv.monitors.lock();
    mons.push(crate::server::state::MonitorFeed {
        id: ctx.client.id,
        info: ctx.client.info.clone(),
    });
    ctx.srv.monitor_count.store(mons.len(), Relaxed);
    drop(mons);
    ctx.client.info.is_monitor.store(true, Relaxed);
    ctx.client.monitoring = true;
    ctx.out.ok();
    Ok(())
}

/// Ends MONITOR mode (RESET).
pub fn stop_monitoring(
    srv: &crate::server::state::ServerState,
    client: &mut crate::server::client::Client,
) {
    if !client.monitoring {
        return;
    }
    let mut mons = srv.monitors.lock();
    mons.retain(|m| m.id != client.id);
    srv.monitor_count.store(mons.len(), Relaxed);
    drop(mons);
    client.monitoring = false;
    client.info.is_monitor.store(false, Relaxed);
}

fn memory_usage(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let mut i = 3;
    while i < args.len() {
        if eq_ic(args[i], "samples") && i + 1 < args.len() {
            let n = int(args[i + 1])?;
            if n < 0 {
                return Err(CmdError::Syntax);
            }
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let (dbi, now) = (ctx.client.db, ctx.now_ms);
    let size = {
        let mut locks = ctx.srv.keyspace.lock_key(key);
        let mut db = locks.db(dbi, now, crate::keyspace::Touch::None);
        db.get_write(key).map(|e| {
            e.value.heap_size() + key.len() + std::mem::size_of::<crate::keyspace::Entry>() + 24
        })
    };
    match size {
        Some(n) => ctx.out.int(n as i64),
        None => ctx.out.null(),
    }
    Ok(())
}

fn memory_stats(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    enum Stat {
        Int(i64),
        /// Redis keeps these as single-precision floats.
        Ratio(f64),
        Db(crate::keyspace::DbSummary),
    }
    use Stat::{Db, Int, Ratio};
    let m = MemoryReport::gather(ctx);
    let mut stats: Vec<(String, Stat)> = [
        ("peak.allocated", Int(m.peak as i64)),
        ("total.allocated", Int(m.used as i64)),
        ("startup.allocated", Int(m.startup as i64)),
        ("replication.backlog", Int(0)),
        ("clients.slaves", Int(0)),
        ("clients.normal", Int(m.clients as i64)),
        ("cluster.links", Int(0)),
        ("aof.buffer", Int(0)),
        ("lua.caches", Int(m.scripts as i64)),
        ("functions.caches", Int(m.functions_code as i64)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (db, d) in m.dbs.iter().enumerate().filter(|(_, d)| d.keys > 0) {
        stats.push((format!("db.{db}"), Db(*d)));
    }
    let [alloc_frag, alloc_rss, rss_overhead, frag] = m.fragmentation();
    stats.extend(
        [
            ("overhead.total", Int(m.overhead() as i64)),
            ("keys.count", Int(m.keys as i64)),
            (
                "keys.bytes-per-key",
                Int(m.net().checked_div(m.keys).unwrap_or(0) as i64),
            ),
            ("dataset.bytes", Int(m.dataset() as i64)),
            ("dataset.percentage", Ratio(m.dataset_perc())),
            ("peak.percentage", Ratio(m.peak_perc())),
            ("allocator.allocated", Int(m.allocated as i64)),
            ("allocator.active", Int(m.active as i64)),
            ("allocator.resident", Int(m.resident as i64)),
            ("allocator-fragmentation.ratio", Ratio(alloc_frag.0)),
            ("allocator-fragmentation.bytes", Int(alloc_frag.1)),
            ("allocator-rss.ratio", Ratio(alloc_rss.0)),
            ("allocator-rss.bytes", Int(alloc_rss.1)),
            ("rss-overhead.ratio", Ratio(rss_overhead.0)),
            ("rss-overhead.bytes", Int(rss_overhead.1)),
            ("fragmentation", Ratio(frag.0)),
            ("fragmentation.bytes", Int(frag.1)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v)),
    );
    let out = &mut *ctx.out;
    out.map(stats.len());
    for (name, stat) in stats {
        out.bulk(name.as_bytes());
        match stat {
            Int(v) => out.int(v),
            Ratio(v) => {
                let mut text = Vec::new();
                crate::util::numbers::format_f64(v as f32 as f64, &mut text);
                out.double_text(&text);
            }
            Db(d) => {
                out.map(3);
                for (k, v) in [
                    ("overhead.hashtable.main", d.table_bytes),
                    ("overhead.hashtable.expires", d.expires_bytes),
                    ("overhead.hashtable.slot-to-keys", 0),
                ] {
                    out.bulk(k.as_bytes());
                    out.int(v as i64);
                }
            }
        }
    }
    Ok(())
}

/// `a / b`, or 1 when `b` is 0 (Redis's ratios over an empty allocator).
fn ratio(a: u64, b: u64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        1.0
    }
}

/// Where the memory goes, for INFO memory and MEMORY STATS.
struct MemoryReport {
    used: u64,
    peak: u64,
    startup: u64,
    rss: u64,
    allocated: u64,
    active: u64,
    resident: u64,
    /// Query and reply buffers of the connected clients.
    clients: u64,
    /// Every worker's Lua state.
    lua_vm: u64,
    /// Cached EVAL scripts.
    scripts: u64,
    /// Function libraries' names and code.
    functions_code: u64,
    functions: usize,
    libraries: usize,
    keys: u64,
    dbs: Vec<crate::keyspace::DbSummary>,
}

impl MemoryReport {
    fn gather(ctx: &Ctx) -> MemoryReport {
        let srv = ctx.srv;
        let used = srv.used_memory_now();
        let (allocated, active, resident, _, _) = crate::server::memory::allocator_stats();
        let (functions, libraries, functions_code) = {
            let libs = srv.scripts.libraries.lock();
            let code: usize = libs
                .libs
                .values()
                .map(|l| l.name.len() + l.code.len())
                .sum();
            (libs.function_count(), libs.libs.len(), code as u64)
        };
        let clients = srv
            .clients
            .snapshot()
            .iter()
            .map(|c| c.total_memory() as u64)
            .sum();
        let dbs = srv.keyspace.db_summaries();
        MemoryReport {
            used,
            peak: srv.peak_memory.load(Relaxed).max(used),
            startup: srv.startup_memory.load(Relaxed).min(used),
            rss: crate::server::memory::rss_bytes(),
            allocated,
            active,
            resident,
            clients,
            lua_vm: crate::scripting::lua_memory() as u64,
            scripts: srv.scripts.memory() as u64,
            functions_code,
            functions,
            libraries,
            keys: dbs.iter().map(|d| d.keys as u64).sum(),
            dbs,
        }
    }

    /// What the server needs besides the data, as Redis counts it:
    /// start-up allocations, client buffers, Lua and its caches, and the
    /// keyspace's own tables.
    fn overhead(&self) -> u64 {
        let tables: u64 = self
            .dbs
            .iter()
            .map(|d| d.table_bytes + d.expires_bytes)
            .sum();
        (self.startup + self.clients + self.lua_vm + self.scripts + self.functions_code + tables)
            .min(self.used)
    }

    fn dataset(&self) -> u64 {
        self.used - self.overhead()
    }

    /// What the server allocated since start-up.
    fn net(&self) -> u64 {
        self.used.saturating_sub(self.startup)
    }

    fn dataset_perc(&self) -> f64 {
        self.dataset() as f64 * 100.0 / self.net().max(1) as f64
    }

    /// (ratio, bytes) for the allocator's fragmentation (active against
    /// allocated), its RSS (resident against active), the process's RSS
    /// overhead (RSS against resident) and the overall fragmentation (RSS
    /// against used), in that order.
    fn fragmentation(&self) -> [(f64, i64); 4] {
        let pair = |a: u64, b: u64| (ratio(a, b), a as i64 - b as i64);
        [
            pair(self.active, self.allocated),
            pair(self.resident, self.active),
            pair(self.rss, self.resident),
            pair(self.rss, self.used),
        ]
    }

    fn peak_perc(&self) -> f64 {
        if self.peak > 0 {
            self.used as f64 * 100.0 / self.peak as f64
        } else {
            100.0
        }
    }
}

fn memory_doctor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let used = ctx.srv.used_memory_now();
    let text = if used < 5 * 1024 * 1024 {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting."
    } else {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
    };
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// jemalloc's statistics report, as text.
fn memory_malloc_stats(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let mut text = Vec::new();
    if tikv_jemalloc_ctl::stats_print::stats_print(&mut text, Default::default()).is_err() {
        text.clear();
    }
    ctx.out.verbatim(b"txt", &text);
    Ok(())
}

/// Returns every arena's dirty pages to the system at once (jemalloc's
/// background thread would within a second anyway).
fn memory_purge(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    // Arena 4096 is jemalloc's MALLCTL_ARENAS_ALL: every arena.
    const PURGE_ALL: &[u8] = b"arena.4096.purge\0";
    // SAFETY: a NUL-terminated control name; "arena.<i>.purge" reads and
    // writes nothing, so every other pointer is null and the length 0.
    let rc = unsafe {
        tikv_jemalloc_sys::mallctl(
            PURGE_ALL.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return Err(CmdError::msg("ERR Error purging dirty pages"));
    }
    ctx.out.ok();
    Ok(())
}

fn memory_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx,
        "MEMORY",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return the memory allocator's own statistics report.",
            "PURGE",
            "    Ask the memory allocator to hand unused pages back to the system.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value.",
        ],
    )
}

/// The number a C `strtod` reads at the start of `arg` (0 if none).
fn leading_float(arg: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(arg);
    let text = text.trim_start();
    // The longest prefix that parses; arguments are short, and only the
    // first 64 bytes can matter for a sleep.
    let limit = text.len().min(64);
    (1..=limit)
        .rev()
        .filter(|&n| text.is_char_boundary(n))
        .find_map(|n| text[..n].parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

/// The number a C `atoi` reads at the start of `arg` (0 if none): glibc's
/// `(int) strtol`, so it saturates at the i64 limits, then wraps to 32 bits.
fn leading_int(arg: &[u8]) -> i32 {
    let mut rest = arg.trim_ascii_start();
    let negative = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    let mut n: i64 = 0;
    for &c in rest.iter().take_while(|c| c.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    (if negative { -n } else { n }) as i32
}

/// DEBUG POPULATE count [prefix] [size]: `count` string keys
/// `<prefix>:<n>` (prefix `key`) holding `value:<n>`, cut or padded with
/// zero bytes to `size` when one is given; keys that exist are left alone.
/// As in Redis, these writes raise no keyspace events, though WATCH and
/// tracking see them. (Unlike Redis, a size over proto-max-bulk-len is
/// refused rather than allocated.)
fn debug_populate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let positive = |a: &[u8]| -> Result<u64, CmdError> {
        match int(a) {
            Ok(n) if n >= 0 => Ok(n as u64),
            _ => Err(CmdError::msg("ERR value is out of range, must be positive")),
        }
    };
    let count = positive(args[2])?;
    // As Redis: the keys it makes are not propagated.
    ctx.no_propagate();
    let prefix: &[u8] = args.get(3).copied().unwrap_or(b"key");
    let size = match args.get(4) {
        Some(a) => Some(positive(a)? as usize),
        None => None,
    };
    if let Some(size) = size {
        let limit = ctx.srv.config.proto_max_bulk_len();
        if size as u64 > limit {
            return Err(CmdError::msg("ERR value is out of range, must be positive"));
        }
    }
    // Redis formats the key as a C string into a 128-byte buffer: the
    // prefix ends at a NUL, and the key at 127 bytes.
    let prefix = crate::util::c_str(prefix);
    let mut key = Vec::with_capacity(prefix.len() + 21);
    for n in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        key.push(b':');
        key.extend_from_slice(n.to_string().as_bytes());
        key.truncate(127);
        let mut value = format!("value:{n}").into_bytes();
        if let Some(size) = size.filter(|&s| s > 0) {
            value.resize(size, 0);
        }
        ctx.with_key(&key, |db| {
            if !db.exists(&key) {
                db.set(
                    &key,
                    crate::types::Value::Str(crate::types::StrValue::from_bytes(&value)),
                );
                db.signal_modified(&key);
            }
        });
    }
    ctx.out.ok();
    Ok(())
}

/// DEBUG PROTOCOL: one sample reply of each RESP3 type (and its RESP2
/// downgrade), the values Redis sends, for client libraries to test against.
fn debug_protocol(ctx: &mut Ctx, kind: &[u8]) -> CmdResult {
    let out = &mut *ctx.out;
    let name = kind.to_ascii_lowercase();
    match name.as_slice() {
        b"string" => out.bulk(b"Hello World"),
        b"integer" => out.int(12345),
        b"double" => out.double_text(b"3.141"),
        b"bignum" => {
            const BIG: &[u8] = b"1234567999999999999999999999999999999";
            if out.resp3() {
                out.raw(b"(");
                out.raw(BIG);
                out.raw(b"\r\n");
            } else {
                out.bulk(BIG);
            }
        }
        b"null" => out.null(),
        b"array" | b"set" => {
            if name == b"set" {
                out.set(3);
            } else {
                out.array(3);
            }
            for i in 0..3 {
                out.int(i);
            }
        }
        b"map" => {
            out.map(3);
            for i in 0..3 {
                out.int(i);
                out.boolean(i == 1);
            }
        }
        b"attrib" => {
            // RESP2 has no attributes: only the reply they annotate is sent.
            if out.resp3() {
                out.raw(b"|1\r\n");
                out.bulk(b"key-popularity");
                out.array(2);
                out.bulk(b"key:123");
                out.int(90);
            }
            out.bulk(b"Some real reply following the attribute");
        }
        b"push" => {
            if !out.resp3() {
                return Err(CmdError::msg("ERR RESP2 is not supported by this command"));
            }
            out.push(2);
            out.bulk(b"server-cpu-usage");
            out.int(42);
            // As Redis: a normal reply follows, so a client that discards
            // push messages still gets an answer.
            out.bulk(b"Some real reply following the push reply");
        }
        b"verbatim" => out.verbatim(b"txt", b"This is a verbatim\nstring"),
        b"true" => out.boolean(true),
        b"false" => out.boolean(false),
        _ => {
            return Err(CmdError::msg(
                "ERR Wrong protocol type name. Please use one of the following: \
                 string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ))
        }
    }
    Ok(())
}

/// DEBUG EFFECTS: the test consumer of the effects stream.
fn debug_effects(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let journal = &ctx.srv.journal;
    match (args[0], args.get(1)) {
        (sub, limit) if eq_ic(sub, "start") => {
            let limit = match limit {
                Some(a) => match int(a) {
                    // (At most 1 GB: the capture is memory.)
                    Ok(n) if n > 0 => (n as usize).min(1 << 30),
                    _ => return Err(CmdError::msg("ERR value is out of range, must be positive")),
                },
                None => 64 << 20,
            };
            journal.start_capture(limit);
            ctx.out.ok();
        }
        (sub, None) if eq_ic(sub, "read") => match journal.read_capture() {
            Some((bytes, false)) => ctx.out.bulk(&bytes),
            Some((_, true)) => return Err(CmdError::msg("ERR effects capture overflowed")),
            None => return Err(CmdError::msg("ERR effects capture not started")),
        },
        (sub, None) if eq_ic(sub, "stop") => {
            journal.stop_capture();
            ctx.out.ok();
        }
        _ => return Err(CmdError::msg(
            "ERR unknown subcommand or wrong number of arguments for 'effects'. Try DEBUG HELP.",
        )),
    }
    Ok(())
}

fn debug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if eq_ic(sub, "sleep") && args.len() == 3 {
        // As Redis (strtod): the number the argument starts with, else 0.
        let secs = leading_float(args[2]);
        if secs > 0.0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
        }
        ctx.out.ok();
    } else if eq_ic(sub, "set-active-expire") && args.len() == 3 {
        // As Redis (atoi): the integer the argument starts with, else 0.
        ctx.srv
            .active_expire
            .store(leading_int(args[2]) != 0, Relaxed);
        ctx.out.ok();
    } else if eq_ic(sub, "populate") && (3..=5).contains(&args.len()) {
        return debug_populate(ctx, args);
    } else if eq_ic(sub, "object") && args.len() == 3 {
        let key = args[2];
        let (dbi, now) = (ctx.client.db, ctx.now_ms);
        let desc = {
            let mut locks = ctx.srv.keyspace.lock_key(key);
            let mut db = locks.db(dbi, now, crate::keyspace::Touch::None);
            db.get_write(key).map(|e| {
                let idle = ((now / 1000) as u32).wrapping_sub(e.access);
                format!(
                    "Value at:0x{:x} refcount:{} encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
                    e as *const _ as usize,
                    super::generic::reported_refcount(ctx.srv, &e.value),
                    e.value.encoding_name(),
                    e.value.heap_size().max(1),
                    e.access & 0xff_ffff,
                    idle
                )
            })
        };
        match desc {
            Some(d) => ctx.out.simple(d.as_bytes()),
            None => return Err(CmdError::NoSuchKey),
        }
    } else if eq_ic(sub, "protocol") && args.len() == 3 {
        return debug_protocol(ctx, args[2]);
    } else if eq_ic(sub, "effects") && (3..=4).contains(&args.len()) {
        return debug_effects(ctx, &args[2..]);
    } else if eq_ic(sub, "help") {
        return help_reply(
            ctx,
            "DEBUG",
            &[
                "OBJECT <key>",
                "    Show low level info about the key and associated value.",
                "POPULATE <count> [<prefix>] [<size>]",
                "    Create <count> string keys named key:<num>. If <prefix> is specified then",
                "    it is used instead of the 'key' prefix. These are not propagated to",
                "    replicas. Cluster slots are not respected so keys not belonging to the",
                "    current node can be created in cluster mode.",
                "PROTOCOL <type>",
                "    Reply with a test value of the specified type. <type> can be: string,",
                "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
                "    true, false.",
                "EFFECTS START [<limit-bytes>] | READ | STOP",
                "    Tessera: capture the effects stream (what replicas would be sent), read",
                "    and empty the capture (RESP bytes), or stop capturing.",
                "SET-ACTIVE-EXPIRE <0|1>",
                "    Setting it to 0 disables expiring keys in background when they are not accessed.",
                "SLEEP <seconds>",
                "    Stop the server for <seconds>. Decimals allowed.",
            ],
        );
    } else {
        return Err(super::subcommand_syntax_error(args));
    }
    Ok(())
}
