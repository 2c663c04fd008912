//! Server commands: INFO, CONFIG, COMMAND, TIME, LASTSAVE, SHUTDOWN,
//! SLOWLOG, LATENCY, MONITOR, MEMORY and DEBUG.
//!
//! This file holds their command table; the handlers live in one file per
//! family, along the seams of Redis's own source.

mod access;
mod config;
mod debug;
mod info;
mod introspection;
mod latency;
mod memory;
mod slowlog;

use super::flags::*;
use super::generic::container;
use super::meta::{arg as a, docflags, ks, ksflags::*};
use super::{acl, CommandSpec, Handler};
use access::{
    acl_cat, acl_deluser, acl_dryrun, acl_genpass, acl_getuser, acl_help, acl_list, acl_load,
    acl_log, acl_save, acl_setuser, acl_users, acl_whoami,
};
use config::{config_get, config_help, config_resetstat, config_rewrite, config_set};
use debug::debug;
use info::info;
use introspection::{
    command, command_count, command_docs, command_getkeys, command_getkeysandflags, command_help,
    command_info, command_list, lastsave, monitor, role, shutdown, time,
};
use latency::{
    latency_doctor, latency_graph, latency_help, latency_histogram, latency_history,
    latency_latest, latency_reset,
};
use memory::{
    memory_doctor, memory_help, memory_malloc_stats, memory_purge, memory_stats, memory_usage,
};
use slowlog::{slowlog_get, slowlog_help, slowlog_len, slowlog_reset};

pub use introspection::stop_monitoring;

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
    cmd("acl", -2, 0, "6.0.0", "A container for Access List Control commands ", container)
        .complexity("Depends on subcommand.")
        .subcommands(ACL_SUBS),
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

const ACL_ADMIN: u64 = ADMIN | NOSCRIPT | LOADING | STALE;

static ACL_SUBS: &[CommandSpec] = &[
    cmd("cat", -2, NOSCRIPT | LOADING | STALE, "6.0.0", "List the ACL categories or the commands inside a category", acl_cat)
        .complexity("O(1) since the categories and commands are a fixed set.")
        .args(&[a::string("categoryname").optional()]),
    cmd("deluser", -3, ACL_ADMIN, "6.0.0", "Remove the specified ACL users and the associated rules", acl_deluser)
        .complexity("O(1) amortized time considering the typical user.")
        .args(&[a::string("username").multiple()]),
    cmd("dryrun", -4, ACL_ADMIN, "7.0.0", "Returns whether the user can execute the given command without executing the command.", acl_dryrun)
        .complexity("O(1).")
        .args(&[a::string("username"), a::string("command"), a::string("arg").optional().multiple()]),
    cmd("genpass", -2, NOSCRIPT | LOADING | STALE, "6.0.0", "Generate a pseudorandom secure password to use for ACL users", acl_genpass)
        .args(&[a::integer("bits").optional()]),
    cmd("getuser", 3, ACL_ADMIN, "6.0.0", "Get the rules for a specific ACL user", acl_getuser)
        .complexity("O(N). Where N is the number of password, command and pattern rules that the user has.")
        .history(&[
            ("6.2.0", "Added Pub/Sub channel patterns."),
            ("7.0.0", "Added selectors and changed the format of key and channel patterns from a list to their rule representation."),
        ])
        .args(&[a::string("username")]),
    cmd("help", 2, LOADING | STALE, "6.0.0", "Show helpful text about the different subcommands", acl_help),
    cmd("list", 2, ACL_ADMIN, "6.0.0", "List the current ACL rules in ACL config file format", acl_list)
        .complexity("O(N). Where N is the number of configured users."),
    cmd("load", 2, ACL_ADMIN, "6.0.0", "Reload the ACLs from the configured ACL file", acl_load)
        .complexity("O(N). Where N is the number of configured users."),
    cmd("log", -2, ACL_ADMIN, "6.0.0", "List latest events denied because of ACLs in place", acl_log)
        .complexity("O(N) with N being the number of entries shown.")
        .args(&[a::oneof("operation", &[a::integer("count"), a::pure("reset", "RESET")]).optional()]),
    cmd("save", 2, ACL_ADMIN, "6.0.0", "Save the current ACL rules in the configured ACL file", acl_save)
        .complexity("O(N). Where N is the number of configured users."),
    cmd("setuser", -3, ACL_ADMIN, "6.0.0", "Modify or create the rules for a specific ACL user", acl_setuser)
        .complexity("O(N). Where N is the number of rules provided.")
        .history(&[
            ("6.2.0", "Added Pub/Sub channel patterns."),
            ("7.0.0", "Added selectors and key based permissions."),
        ])
        .args(&[a::string("username"), a::string("rule").optional().multiple()]),
    cmd("users", 2, ACL_ADMIN, "6.0.0", "List the username of all the configured ACL rules", acl_users)
        .complexity("O(N). Where N is the number of configured users."),
    cmd("whoami", 2, NOSCRIPT | LOADING | STALE, "6.0.0", "Return the name of the user associated to the current connection", acl_whoami),
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
