//! Cluster commands in a standalone server: CLUSTER (every subcommand),
//! ASKING, READONLY and READWRITE. Tessera does not run in cluster mode
//! yet (see ../shared/ROADMAP.md), and a standalone redis-server answers
//! each of these, once its arity is right, with the error below. Clients
//! probe with them (CLUSTER INFO, CLUSTER SLOTS, READONLY) to tell a
//! cluster node from a standalone one, so the answer must be Redis's and
//! not "unknown command".

use super::flags::*;
use super::generic::container;
use super::meta::arg as a;
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};

/// A cluster command: group `cluster`, no ACL category beyond its flags'.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "cluster", since, summary, handler)
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "cluster",
        -2,
        0,
        "3.0.0",
        "Runs a Redis Cluster subcommand.",
        container,
    )
    .complexity("Depends on subcommand.")
    .subcommands(CLUSTER_SUBS),
    cmd(
        "asking",
        1,
        FAST,
        "3.0.0",
        "Marks the connection as asking, for a command on a slot being imported.",
        disabled,
    )
    .acl(acl::CONNECTION),
    cmd(
        "readonly",
        1,
        LOADING | STALE | FAST,
        "3.0.0",
        "Lets the connection read from a cluster replica.",
        disabled,
    )
    .acl(acl::CONNECTION),
    cmd(
        "readwrite",
        1,
        LOADING | STALE | FAST,
        "3.0.0",
        "Ends READONLY: reads go to masters again.",
        disabled,
    )
    .acl(acl::CONNECTION),
];

static CLUSTER_SUBS: &[CommandSpec] = &[
    cmd(
        "delslotsrange",
        -4,
        ADMIN | STALE | NO_ASYNC_LOADING,
        "7.0.0",
        "Makes ranges of hash slots unassigned on this node.",
        disabled,
    )
    .complexity(
        "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
    )
    .args(&[
        a::block("start-slot_end-slot", &[a::integer("start-slot"), a::integer("end-slot")])
            .multiple(),
    ]),
    cmd("keyslot", 3, STALE, "3.0.0", "Returns the hash slot of a key.", disabled)
        .complexity("O(N) where N is the number of bytes in the key")
        .args(&[a::string("key")]),
    cmd("help", 2, LOADING | STALE, "5.0.0", "Lists the CLUSTER subcommands.", disabled),
    cmd("meet", -4, ADMIN | STALE | NO_ASYNC_LOADING, "3.0.0", "Joins another node to the cluster.", disabled)
        .history(&[("4.0.0", "Added the optional `cluster_bus_port` argument.")])
        .args(&[
            a::string("ip"),
            a::integer("port"),
            a::integer("cluster_bus_port").since("4.0.0").optional(),
        ]),
    cmd("getkeysinslot", 4, STALE, "3.0.0", "Lists key names stored in a hash slot.", disabled)
        .complexity("O(log(N)) where N is the number of requested keys")
        .tips(&["nondeterministic_output"])
        .args(&[a::integer("slot"), a::integer("count")]),
    cmd("slaves", 3, ADMIN | STALE, "3.0.0", "Lists the replicas of a master node (old name of CLUSTER REPLICAS).", disabled)
        .tips(&["nondeterministic_output"])
        .deprecated("5.0.0", "`CLUSTER REPLICAS`")
        .args(&[a::string("node-id")]),
    cmd(
        "addslotsrange",
        -4,
        ADMIN | STALE | NO_ASYNC_LOADING,
        "7.0.0",
        "Assigns ranges of hash slots to this node.",
        disabled,
    )
    .complexity(
        "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
    )
    .args(&[
        a::block("start-slot_end-slot", &[a::integer("start-slot"), a::integer("end-slot")])
            .multiple(),
    ]),
    cmd(
        "set-config-epoch",
        3,
        ADMIN | STALE | NO_ASYNC_LOADING,
        "3.0.0",
        "Sets the configuration epoch of a new node.",
        disabled,
    )
    .args(&[a::integer("config-epoch")]),
    cmd("shards", 2, STALE, "7.0.0", "Describes the cluster's shards and the nodes in each.", disabled)
        .complexity("O(N) where N is the total number of cluster nodes")
        .tips(&["nondeterministic_output"]),
    cmd("flushslots", 2, ADMIN | STALE | NO_ASYNC_LOADING, "3.0.0", "Unassigns every hash slot of this node.", disabled)
        ,
    cmd("forget", 3, ADMIN | STALE | NO_ASYNC_LOADING, "3.0.0", "Removes a node from this node's table of nodes.", disabled)
        .args(&[a::string("node-id")]),
    cmd("reset", -2, ADMIN | NOSCRIPT | STALE, "3.0.0", "Resets this node's cluster state.", disabled)
        .complexity(
            "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
        )
        .args(&[
            a::oneof("hard_soft", &[a::pure("hard", "HARD"), a::pure("soft", "SOFT")]).optional(),
        ]),
    cmd("saveconfig", 2, ADMIN | STALE | NO_ASYNC_LOADING, "3.0.0", "Writes the cluster configuration to disk.", disabled)
        ,
    cmd("addslots", -3, ADMIN | STALE | NO_ASYNC_LOADING, "3.0.0", "Assigns hash slots to this node.", disabled)
        .complexity("O(N) where N is the total number of hash slot arguments")
        .args(&[a::integer("slot").multiple()]),
    cmd("failover", -2, ADMIN | STALE | NO_ASYNC_LOADING, "3.0.0", "Makes this replica take over from its master.", disabled)
        .args(&[
            a::oneof("options", &[a::pure("force", "FORCE"), a::pure("takeover", "TAKEOVER")])
                .optional(),
        ]),
    cmd("replicas", 3, ADMIN | STALE, "5.0.0", "Lists the replicas of a master node.", disabled)
        .tips(&["nondeterministic_output"])
        .args(&[a::string("node-id")]),
    cmd("links", 2, STALE, "7.0.0", "Describes this node's peer links.", disabled)
        .complexity("O(N) where N is the total number of Cluster nodes")
        .tips(&["nondeterministic_output"]),
    cmd("setslot", -4, ADMIN | STALE | NO_ASYNC_LOADING, "3.0.0", "Binds a hash slot to a node or marks it migrating or importing.", disabled)
        .args(&[
            a::integer("slot"),
            a::oneof(
                "subcommand",
                &[
                    a::string("node-id").token("IMPORTING"),
                    a::string("node-id").token("MIGRATING"),
                    a::string("node-id").token("NODE"),
                    a::pure("stable", "STABLE"),
                ],
            ),
        ]),
    cmd(
        "count-failure-reports",
        3,
        ADMIN | STALE,
        "3.0.0",
        "Counts the failure reports that name a node.",
        disabled,
    )
    .complexity("O(N) where N is the number of failure reports")
    .tips(&["nondeterministic_output"])
    .args(&[a::string("node-id")]),
    cmd("myid", 2, STALE, "3.0.0", "Returns this node's ID.", disabled),
    cmd("info", 2, STALE, "3.0.0", "Describes the cluster's state.", disabled)
        .tips(&["nondeterministic_output"]),
    cmd("bumpepoch", 2, ADMIN | STALE | NO_ASYNC_LOADING, "3.0.0", "Advances the cluster's configuration epoch.", disabled)
        .tips(&["nondeterministic_output"]),
    cmd("replicate", 3, ADMIN | STALE | NO_ASYNC_LOADING, "3.0.0", "Makes this node a replica of a master.", disabled)
        .args(&[a::string("node-id")]),
    cmd("nodes", 2, STALE, "3.0.0", "Returns the cluster configuration as this node sees it.", disabled)
        .complexity("O(N) where N is the total number of Cluster nodes")
        .tips(&["nondeterministic_output"]),
    cmd("delslots", -3, ADMIN | STALE | NO_ASYNC_LOADING, "3.0.0", "Makes hash slots unassigned on this node.", disabled)
        .complexity("O(N) where N is the total number of hash slot arguments")
        .args(&[a::integer("slot").multiple()]),
    cmd("countkeysinslot", 3, STALE, "3.0.0", "Counts the keys in a hash slot.", disabled)
        .args(&[a::integer("slot")]),
    cmd("slots", 2, STALE, "3.0.0", "Maps hash slots to nodes (superseded by CLUSTER SHARDS).", disabled)
        .complexity("O(N) where N is the total number of Cluster nodes")
        .tips(&["nondeterministic_output"])
        .deprecated("7.0.0", "`CLUSTER SHARDS`")
        .history(&[
            ("4.0.0", "Added node IDs."),
            ("7.0.0", "Added additional networking metadata field."),
        ]),
];

fn disabled(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    Err(CmdError::msg(
        "ERR This instance has cluster support disabled",
    ))
}
