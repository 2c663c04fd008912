//! Replication commands (group `server`): REPLICAOF and SLAVEOF, REPLCONF,
//! PSYNC and SYNC. The protocol itself is `server::replication`'s.

use super::args::{eq_ic, int};
use super::flags::*;
use super::meta::{arg as a, docflags};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx};
use crate::server::replication::{self, master};

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: super::Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "server", since, summary, handler)
        .acl(acl::ADMIN | acl::DANGEROUS)
}

const REPLICAOF_ARGS: &[a::Arg] = &[a::oneof(
    "args",
    &[
        a::block("host-port", &[a::string("host"), a::integer("port")]),
        a::block("no-one", &[a::pure("no", "NO"), a::pure("one", "ONE")]),
    ],
)];

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "replicaof",
        3,
        ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING,
        "5.0.0",
        "Configures a server as replica of another, or promotes it to a master.",
        replicaof,
    )
    .args(REPLICAOF_ARGS),
    cmd(
        "slaveof",
        3,
        ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING,
        "1.0.0",
        "Sets a Redis server as a replica of another, or promotes it to being a master.",
        replicaof,
    )
    .deprecated("5.0.0", "`REPLICAOF`")
    .args(REPLICAOF_ARGS),
    cmd(
        "replconf",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        "3.0.0",
        "An internal command for configuring the replication stream.",
        replconf,
    )
    .doc_flags(docflags::SYSCMD),
    cmd(
        "psync",
        -3,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI,
        "2.8.0",
        "An internal command used in replication.",
        psync,
    )
    .complexity("")
    .args(&[a::string("replicationid"), a::integer("offset")]),
    cmd(
        "failover",
        -1,
        ADMIN | NOSCRIPT | STALE,
        "6.2.0",
        "Starts a coordinated failover from a server to one of its replicas.",
        failover,
    )
    .args(&[
        a::block(
            "target",
            &[
                a::string("host"),
                a::integer("port"),
                a::pure("force", "FORCE").optional(),
            ],
        )
        .token("TO")
        .optional(),
        a::pure("abort", "ABORT").optional(),
        a::integer("milliseconds").token("TIMEOUT").optional(),
    ]),
    cmd(
        "sync",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI,
        "1.0.0",
        "Synchronizes a replica the legacy way: a snapshot, then the write stream.",
        sync,
    )
    .complexity(""),
];

fn replicaof(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if eq_ic(args[1], "no") && eq_ic(args[2], "one") {
        replication::stop_following(ctx.srv);
        ctx.out.ok();
        return Ok(());
    }
    if ctx.client.syncing {
        return Err(CmdError::msg(
            "ERR Command is not valid when client is a replica.",
        ));
    }
    let port = int(args[2])
        .ok()
        .filter(|p| (0..=65535).contains(p))
        .ok_or_else(|| CmdError::msg("ERR Invalid master port"))?;
    let host = String::from_utf8_lossy(args[1]).into_owned();
    if !replication::follow(ctx.srv, &host, port as u16) {
        crate::util::log::notice(
            "REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.",
        );
        ctx.out.simple(b"OK Already connected to specified master");
        return Ok(());
    }
    crate::util::log::notice(&format!(
        "REPLICAOF {host}:{port} enabled (user request from 'id={} addr={}')",
        ctx.client.id, ctx.client.info.addr
    ));
    ctx.out.ok();
    Ok(())
}

fn replconf(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    // Options take effect one by one, as Redis's do: those before a bad
    // one stay set.
    let mut hello = ctx.client.replica_hello.clone().unwrap_or_default();
    let result = replconf_options(ctx, &mut hello, &args[1..]);
    ctx.client.replica_hello = Some(hello);
    match result? {
        ReplconfReply::Ok => ctx.out.ok(),
        ReplconfReply::Silent => {}
    }
    Ok(())
}

enum ReplconfReply {
    Ok,
    Silent,
}

fn replconf_options(
    ctx: &mut Ctx,
    hello: &mut master::ReplicaHello,
    pairs: &[&[u8]],
) -> Result<ReplconfReply, CmdError> {
    for pair in pairs.chunks(2) {
        let (opt, val) = (pair[0], pair[1]);
        if eq_ic(opt, "listening-port") {
            let port = int(val)?;
            hello.listening_port = u16::try_from(port).unwrap_or(0);
        } else if eq_ic(opt, "ip-address") {
            if val.len() >= 46 {
                return Err(CmdError::msg(format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    val.len()
                )));
            }
            hello.ip_address = Some(String::from_utf8_lossy(val).into_owned());
        } else if eq_ic(opt, "capa") {
            if eq_ic(val, "eof") {
                hello.capa_eof = true;
            } else if eq_ic(val, "psync2") {
                hello.capa_psync2 = true;
            }
        } else if eq_ic(opt, "ack") {
            // No reply, ever; only from a replica.
            if ctx.client.syncing {
                if let Ok(offset) = int(val) {
                    master::ack(ctx.srv, ctx.client, offset.max(0) as u64);
                }
            }
            return Ok(ReplconfReply::Silent);
        } else if eq_ic(opt, "getack") {
            // (A replica's link answers its master's GETACK itself.)
            return Ok(ReplconfReply::Silent);
        } else if eq_ic(opt, "rdb-only") {
            let v = int(val)
                .map_err(|_| CmdError::msg("ERR value is not an integer or out of range"))?;
            if !(0..=1).contains(&v) {
                return Err(CmdError::msg(
                    "ERR value is out of range, value must between 0 and 1",
                ));
            }
            hello.rdb_only = v == 1;
        } else if eq_ic(opt, "rdb-filter-only") {
            // Include filters, split as a config line is: everything not
            // named is left out ("" leaves out everything).
            let filters = tessera_resp::request::split_args(val)
                .ok_or_else(|| CmdError::msg("ERR Missing rdb-filter-only values"))?;
            hello.filter = master::RdbFilter {
                exclude_keys: true,
                exclude_functions: true,
            };
            for f in &filters {
                if eq_ic(f, "functions") {
                    hello.filter.exclude_functions = false;
                } else {
                    return Err(CmdError::msg(format!(
                        "ERR Unsupported rdb-filter-only option: {}",
                        String::from_utf8_lossy(f)
                    )));
                }
            }
        } else {
            return Err(CmdError::msg(format!(
                "ERR Unrecognized REPLCONF option: {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    Ok(ReplconfReply::Ok)
}

fn failover(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    use crate::server::replication::failover::{self, Request};
    let mut req = Request {
        to: None,
        force: false,
        abort: false,
        timeout_ms: None,
    };
    let mut i = 1;
    while i < args.len() {
        let a = args[i];
        let more = args.len() - i - 1;
        if eq_ic(a, "to") && req.to.is_none() && more >= 2 {
            let port = int(args[i + 2])?;
            req.to = Some((
                String::from_utf8_lossy(args[i + 1]).into_owned(),
                u16::try_from(port).unwrap_or(0),
            ));
            i += 3;
        } else if eq_ic(a, "force") && !req.force {
            req.force = true;
            i += 1;
        } else if eq_ic(a, "timeout") && more >= 1 && req.timeout_ms.is_none() {
            let ms = int(args[i + 1])?;
            if ms <= 0 {
                return Err(CmdError::msg("ERR FAILOVER timeout must be greater than 0"));
            }
            req.timeout_ms = Some(ms);
            i += 2;
        } else if eq_ic(a, "abort") && !req.abort {
            req.abort = true;
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    failover::start(ctx.srv, req).map_err(CmdError::msg)?;
    ctx.out.ok();
    Ok(())
}

fn psync(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        // PSYNC <replid> <offset> FAILOVER: our master hands over to us
        // (its FAILOVER) if it continues our own history.
        if !eq_ic(args[3], "failover") || args.len() > 4 {
            return Err(CmdError::Syntax);
        }
        let mine = ctx.srv.repl.stream.lock().replid.as_bytes() == args[1];
        if !mine {
            return Err(CmdError::msg(
                "ERR PSYNC FAILOVER replid must match my replid.",
            ));
        }
        replication::stop_following(ctx.srv);
        crate::util::log::notice(&format!(
            "MASTER MODE enabled (failover request from 'id={} addr={}')",
            ctx.client.id, ctx.client.info.addr
        ));
    }
    let pending = !ctx.out.is_empty();
    master::psync(ctx.srv, ctx.client, Some((args[1], args[2])), pending).map_err(CmdError::msg)
}

/// SYNC: no reply; the snapshot and then the stream follow on the
/// connection. A second SYNC is ignored.
fn sync(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let pending = !ctx.out.is_empty();
    master::psync(ctx.srv, ctx.client, None, pending).map_err(CmdError::msg)
}

/// REPLCONF GETACK in a master's stream: the replica's link answers it
/// with its offset before the command counts (as Redis's ACK leaves it
/// out).
pub fn is_getack(args: &[&[u8]]) -> bool {
    args.len() >= 2 && eq_ic(args[0], "replconf") && eq_ic(args[1], "getack")
}
