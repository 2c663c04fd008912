//! Connection commands: PING, ECHO, QUIT, RESET, AUTH, SELECT, HELLO and
//! the CLIENT container.

use std::sync::atomic::Ordering::Relaxed;

use tessera_resp::encode::Protocol;

use super::args::{c_bytes, eq_ic, int, lossy};
use super::flags::*;
use super::generic::{container, help_reply};
use super::meta::arg as a;
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::server::client::{ClientInfo, ReplyMode};
use crate::server::state::unix_ms;

/// A connection command: group `connection`, ACL category `@connection`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "connection", since, summary, handler).acl(acl::CONNECTION)
}

const ENABLED: a::Arg = a::oneof("enabled", &[a::pure("on", "ON"), a::pure("off", "OFF")]);

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "wait",
        3,
        NOSCRIPT,
        "3.0.0",
        "Blocks until the writes of this connection reach the given number of replicas, or the timeout passes.",
        wait,
    )
    .group("generic")
    .tips(&["request_policy:all_shards", "response_policy:agg_min"])
    .args(&[a::integer("numreplicas"), a::integer("timeout")]),
    cmd("ping", -1, FAST | SENTINEL | PUBSUB_CONTEXT | PING_LIKE, "1.0.0", "Returns the server's liveliness response.", ping)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .args(&[a::string("message").optional()]),
    cmd("echo", 2, LOADING | STALE | FAST, "1.0.0", "Returns the given string.", echo)
        .args(&[a::string("message")]),
    cmd(
        "quit",
        -1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | NOT_QUEUED | LEAVES_MULTI | PUBSUB_CONTEXT,
        "1.0.0",
        "Closes the connection.",
        quit,
    ),
    cmd(
        "reset",
        1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | NOT_QUEUED | LEAVES_MULTI | PUBSUB_CONTEXT,
        "6.2.0",
        "Resets the connection.",
        reset,
    ),
    cmd(
        "auth",
        -2,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | SENTINEL,
        "1.0.0",
        "Authenticates the connection.",
        auth,
    )
    .complexity("O(N) where N is the number of passwords defined for the user")
    .history(&[("6.0.0", "Added ACL style (username and password).")])
    .args(&[a::string("username").since("6.0.0").optional(), a::string("password")]),
    cmd("select", 2, LOADING | STALE | FAST, "1.0.0", "Changes the selected database.", select)
        .args(&[a::integer("index")]),
    cmd(
        "hello",
        -1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | SENTINEL,
        "6.0.0",
        "Handshakes with the server, choosing the protocol version.",
        hello,
    )
    .history(&[
        (
            "6.2.0",
            "`protover` made optional; when called without arguments the command reports the current connection's context.",
        ),
    ])
    .args(&[
        a::block(
            "arguments",
            &[
                a::integer("protover"),
                a::block("username_password", &[a::string("username"), a::string("password")])
                    .token("AUTH")
                    .optional(),
                a::string("clientname").token("SETNAME").optional(),
            ],
        )
        .optional(),
    ]),
    cmd("client", -2, SENTINEL | KEEPS_CACHING, "2.4.0", "Container for commands that inspect and control connections.", container)
        .acl(0)
        .complexity("Depends on subcommand.")
        .subcommands(CLIENT_SUBS),
];

static CLIENT_SUBS: &[CommandSpec] = &[
    cmd(
        "id",
        2,
        NOSCRIPT | LOADING | STALE,
        "5.0.0",
        "Returns the unique client ID of the connection.",
        client_id,
    ),
    cmd(
        "setname",
        3,
        NOSCRIPT | LOADING | STALE,
        "2.6.9",
        "Sets the connection name.",
        client_setname,
    )
    .args(&[a::string("connection-name")]),
    cmd(
        "getname",
        2,
        NOSCRIPT | LOADING | STALE,
        "2.6.9",
        "Returns the name of the connection.",
        client_getname,
    ),
    cmd(
        "list",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.4.0",
        "Lists open connections.",
        client_list,
    )
    .complexity("O(N) where N is the number of client connections")
    .tips(&["nondeterministic_output"])
    .history(&[
        ("2.8.12", "Added unique client `id` field."),
        ("5.0.0", "Added optional `TYPE` filter."),
        ("6.0.0", "Added `user` field."),
        (
            "6.2.0",
            "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter.",
        ),
        ("7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."),
        ("7.0.3", "Added `ssub` field."),
    ])
    .args(&[
        a::oneof(
            "normal_master_replica_pubsub",
            &[
                a::pure("normal", "NORMAL"),
                a::pure("master", "MASTER"),
                a::pure("replica", "REPLICA"),
                a::pure("pubsub", "PUBSUB"),
            ],
        )
        .token("TYPE")
        .since("5.0.0")
        .optional(),
        a::block("id", &[a::integer("client-id").multiple()]).token("ID").since("6.2.0").optional(),
    ]),
    cmd(
        "info",
        2,
        NOSCRIPT | LOADING | STALE,
        "6.2.0",
        "Returns information about the connection.",
        client_info,
    )
    .tips(&["nondeterministic_output"]),
    cmd(
        "kill",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.4.0",
        "Terminates open connections.",
        client_kill,
    )
    .complexity("O(N) where N is the number of client connections")
    .history(&[
        ("2.8.12", "Added new filter format."),
        ("2.8.12", "`ID` option."),
        ("3.2.0", "Added `master` type in for `TYPE` option."),
        (
            "5.0.0",
            "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility.",
        ),
        ("6.2.0", "`LADDR` option."),
    ])
    .args(&[
        a::oneof(
            "filter",
            &[
                a::string("ip:port").deprecated("2.8.12"),
                a::oneof(
                    "new-format",
                    &[
                        a::integer("client-id").token("ID").since("2.8.12").optional(),
                        a::oneof(
                            "normal_master_slave_pubsub",
                            &[
                                a::pure("normal", "NORMAL"),
                                a::pure("master", "MASTER").since("3.2.0"),
                                a::pure("slave", "SLAVE"),
                                a::pure("replica", "REPLICA").since("5.0.0"),
                                a::pure("pubsub", "PUBSUB"),
                            ],
                        )
                        .token("TYPE")
                        .since("2.8.12")
                        .optional(),
                        a::string("username").token("USER").optional(),
                        a::string("ip:port").token("ADDR").optional(),
                        a::string("ip:port").token("LADDR").since("6.2.0").optional(),
                        a::string("yes/no").token("SKIPME").optional(),
                    ],
                )
                .multiple(),
            ],
        ),
    ]),
    cmd(
        "pause",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "2.9.50",
        "Suspends commands processing.",
        client_pause,
    )
    .history(&[("6.2.0", "`CLIENT PAUSE WRITE` mode added along with the `mode` option.")])
    .args(&[
        a::integer("timeout"),
        a::oneof("mode", &[a::pure("write", "WRITE"), a::pure("all", "ALL")])
            .since("6.2.0")
            .optional(),
    ]),
    cmd(
        "unpause",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "6.2.0",
        "Resumes processing commands from paused clients.",
        client_unpause,
    )
    .complexity("O(N) Where N is the number of paused clients"),
    cmd(
        "reply",
        3,
        NOSCRIPT | LOADING | STALE,
        "3.2.0",
        "Instructs the server whether to reply to commands.",
        client_reply,
    )
    .args(&[
        a::oneof(
            "on_off_skip",
            &[a::pure("on", "ON"), a::pure("off", "OFF"), a::pure("skip", "SKIP")],
        ),
    ]),
    cmd(
        "no-evict",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "7.0.0",
        "Sets the client eviction mode of the connection.",
        client_no_evict,
    )
    .args(&[ENABLED]),
    cmd(
        "no-touch",
        3,
        NOSCRIPT | LOADING | STALE,
        "7.2.0",
        "Sets whether the connection's commands update the access time and frequency of the keys they read.",
        client_no_touch,
    )
    .args(&[ENABLED]),
    cmd(
        "unblock",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "5.0.0",
        "Wakes a client blocked by a blocking command, with a timeout or an error reply.",
        client_unblock,
    )
    .complexity("O(log N) where N is the number of client connections")
    .args(&[
        a::integer("client-id"),
        a::oneof(
            "timeout_error",
            &[a::pure("timeout", "TIMEOUT"), a::pure("error", "ERROR")],
        )
        .optional(),
    ]),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "5.0.0",
        "Returns helpful text about the different subcommands.",
        client_help,
    ),
    cmd("tracking", -3, NOSCRIPT | LOADING | STALE, "6.0.0", "Controls server-assisted client-side caching for the connection.", client_tracking)
        .complexity("O(1). Some options may introduce additional complexity.")
        .args(&[
            a::oneof("status", &[a::pure("on", "ON"), a::pure("off", "OFF")]),
            a::integer("client-id").token("REDIRECT").optional(),
            a::string("prefix").token("PREFIX").optional().multiple().multiple_token(),
            a::pure("bcast", "BCAST").optional(),
            a::pure("optin", "OPTIN").optional(),
            a::pure("optout", "OPTOUT").optional(),
            a::pure("noloop", "NOLOOP").optional(),
        ]),
    cmd("caching", 3, NOSCRIPT | LOADING | STALE, "6.0.0", "Instructs the server whether to track the keys in the next request.", client_caching)
        .args(&[a::oneof("mode", &[a::pure("yes", "YES"), a::pure("no", "NO")])]),
    cmd("getredir", 2, NOSCRIPT | LOADING | STALE, "6.0.0", "Returns the client ID to which the connection's tracking notifications are redirected.", client_getredir),
    cmd("trackinginfo", 2, NOSCRIPT | LOADING | STALE, "6.2.0", "Returns information about server-assisted client-side caching for the connection.", client_trackinginfo),
];

/// Redis's client type "pubsub": a client with subscriptions.
fn is_pubsub_client(c: &crate::server::client::ClientInfo) -> bool {
    c.sub_counts.iter().any(|n| n.load(Relaxed) > 0)
}

/// Redis's client types, as CLIENT LIST TYPE and CLIENT KILL TYPE name
/// them (a monitor counts as normal).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClientType {
    Normal,
    PubSub,
    Replica,
    Master,
}

fn client_type(c: &crate::server::client::ClientInfo) -> ClientType {
    if c.is_replica.load(Relaxed) {
        ClientType::Replica
    } else if c.is_master.load(Relaxed) {
        ClientType::Master
    } else if is_pubsub_client(c) {
        ClientType::PubSub
    } else {
        ClientType::Normal
    }
}

fn parse_client_type(t: &[u8]) -> Result<ClientType, CmdError> {
    if eq_ic(t, "normal") {
        Ok(ClientType::Normal)
    } else if eq_ic(t, "pubsub") {
        Ok(ClientType::PubSub)
    } else if eq_ic(t, "replica") || eq_ic(t, "slave") {
        Ok(ClientType::Replica)
    } else if eq_ic(t, "master") {
        Ok(ClientType::Master)
    } else {
        Err(CmdError::bytes(&[
            b"ERR Unknown client type '",
            c_bytes(t),
            b"'",
        ]))
    }
}

fn client_tracking(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    use crate::server::tracking::{self, TrackingState};
    let on = if eq_ic(args[2], "on") {
        true
    } else if eq_ic(args[2], "off") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let mut want = TrackingState::default();
    let mut i = 3;
    while i < args.len() {
        let a = args[i];
        if eq_ic(a, "redirect") && i + 1 < args.len() {
            let id = super::args::int(args[i + 1])?;
            if id < 0 || ctx.srv.clients.get(id as u64).is_none() {
                return Err(CmdError::msg(
                    "ERR The client ID you want redirect to does not exist",
                ));
            }
            want.redirect = Some(id as u64);
            i += 1;
        } else if eq_ic(a, "bcast") {
            want.bcast = true;
        } else if eq_ic(a, "optin") {
            want.optin = true;
        } else if eq_ic(a, "optout") {
            want.optout = true;
        } else if eq_ic(a, "noloop") {
            want.noloop = true;
        } else if eq_ic(a, "prefix") && i + 1 < args.len() {
            want.prefixes.push(args[i + 1].to_vec());
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if !on {
        tracking::disable(ctx.srv, ctx.client);
        ctx.out.ok();
        return Ok(());
    }
    // The checks in Redis's order.
    let cur = ctx.client.tracking.clone();
    if !want.bcast && !want.prefixes.is_empty() {
        return Err(CmdError::msg(
            "ERR PREFIX option requires BCAST mode to be enabled",
        ));
    }
    if cur.on && cur.bcast != want.bcast {
        return Err(CmdError::msg("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if want.bcast && (want.optin || want.optout) {
        return Err(CmdError::msg(
            "ERR OPTIN and OPTOUT are not compatible with BCAST",
        ));
    }
    if want.optin && want.optout {
        return Err(CmdError::msg(
            "ERR You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if cur.on && ((want.optin && cur.optout) || (want.optout && cur.optin)) {
        return Err(CmdError::msg("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    // Prefixes must not overlap, among themselves or with earlier ones
    // (those are kept sorted, as Redis's radix tree walks them).
    let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    for (j, p) in want.prefixes.iter().enumerate() {
        for q in &cur.prefixes {
            if overlap(p, q) {
                return Err(CmdError::bytes(&[
                    b"ERR Prefix '",
                    c_bytes(p),
                    b"' overlaps with an existing prefix '",
                    c_bytes(q),
                    b"'. Prefixes for a single client must not overlap.",
                ]));
            }
        }
        for q in &want.prefixes[j + 1..] {
            if overlap(p, q) {
                return Err(CmdError::bytes(&[
                    b"ERR Prefix '",
                    c_bytes(p),
                    b"' overlaps with another provided prefix '",
                    c_bytes(q),
                    b"'. Prefixes for a single client must not overlap.",
                ]));
            }
        }
    }
    // As Redis: BCAST without PREFIX registers the empty prefix (every
    // key), which later prefixes then overlap.
    if want.bcast && want.prefixes.is_empty() {
        want.prefixes.push(Vec::new());
    }
    // Tracking on again keeps the prefixes registered so far; every other
    // option is what this call says (Redis's enableTracking resets them).
    if cur.on {
        want.prefixes.extend(cur.prefixes.iter().cloned());
    }
    want.prefixes.sort();
    want.prefixes.dedup();
    tracking::enable(ctx.srv, ctx.client, want);
    ctx.out.ok();
    Ok(())
}

fn client_caching(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let t = &ctx.client.tracking;
    if !t.on {
        return Err(CmdError::msg("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"));
    }
    if eq_ic(args[2], "yes") {
        if !t.optin {
            return Err(CmdError::msg(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
        ctx.client.tracking.caching = Some(true);
    } else if eq_ic(args[2], "no") {
        if !t.optout {
            return Err(CmdError::msg(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
        ctx.client.tracking.caching = Some(false);
    } else {
        return Err(CmdError::Syntax);
    }
    ctx.out.ok();
    Ok(())
}

fn client_getredir(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let t = &ctx.client.tracking;
    ctx.out.int(if t.on {
        t.redirect.map_or(0, |r| r as i64)
    } else {
        -1
    });
    Ok(())
}

fn client_trackinginfo(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let t = ctx.client.tracking.clone();
    let mut flags: Vec<&str> = Vec::new();
    if !t.on {
        flags.push("off");
    } else {
        flags.push("on");
        if t.bcast {
            flags.push("bcast");
        }
        if t.optin {
            flags.push("optin");
            if t.caching == Some(true) {
                flags.push("caching-yes");
            }
        }
        if t.optout {
            flags.push("optout");
            if t.caching == Some(false) {
                flags.push("caching-no");
            }
        }
        if t.noloop {
            flags.push("noloop");
        }
        if crate::server::tracking::redirect_broken(ctx.srv, ctx.client) {
            flags.push("broken_redirect");
        }
    }
    let out = &mut *ctx.out;
    out.map(3);
    out.bulk(b"flags");
    out.set(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"redirect");
    out.int(if t.on {
        t.redirect.map_or(0, |r| r as i64)
    } else {
        -1
    });
    out.bulk(b"prefixes");
    // In byte order, as Redis's radix tree of prefixes lists them.
    let mut prefixes: Vec<&Vec<u8>> = t.prefixes.iter().collect();
    prefixes.sort();
    out.array(prefixes.len());
    for p in prefixes {
        out.bulk(p);
    }
    Ok(())
}

/// WAIT on a server without replicas: no replica ever acknowledges, so the
/// answer is 0, at once when that is enough (or inside MULTI), otherwise
/// when the timeout passes (0: never, until CLIENT UNBLOCK).
fn wait(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    use crate::server::replication::master;
    let wanted = int(args[1])?;
    let ms =
        int(args[2]).map_err(|_| CmdError::msg("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::msg("ERR timeout is negative"));
    }
    if ctx.srv.repl.is_replica() {
        return Err(CmdError::msg(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        ));
    }
    // The offset of this client's last write (its effects unit encoded).
    let offset = match ctx.client.awaits_durable {
        0 => 0,
        unit => master::offset_after_unit(ctx.srv, unit),
    };
    let acked = ctx.srv.repl.acked(offset);
    if acked as i64 >= wanted || ctx.client.multi.in_exec {
        ctx.out.int(acked as i64);
        return Ok(());
    }
    let deadline =
        (ms > 0).then(|| std::time::Instant::now() + std::time::Duration::from_millis(ms as u64));
    ctx.client.wait_acks = Some((offset, wanted.max(0) as usize, deadline));
    Ok(())
}

fn ping(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if ctx.client.in_resp2_pubsub_mode(ctx.out.resp3()) {
        if args.len() > 2 {
            return Err(CmdError::WrongArity("ping".into()));
        }
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        ctx.out.bulk(args.get(1).copied().unwrap_or(b""));
        return Ok(());
    }
    match args.len() {
        1 => ctx.out.simple(b"PONG"),
        2 => ctx.out.bulk(args[1]),
        _ => return Err(CmdError::WrongArity("ping".into())),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.out.bulk(args[1]);
    Ok(())
}

fn quit(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn reset(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::server::stop_monitoring(ctx.srv, ctx.client);
    super::multi::discard_transaction(ctx.srv, ctx.client);
    super::pubsub::unsubscribe_all(ctx.srv, ctx.client);
    crate::server::tracking::disable(ctx.srv, ctx.client);
    let c = &mut *ctx.client;
    c.db = 0;
    c.info.db.store(0, Relaxed);
    c.reply_mode = ReplyMode::On;
    // (CLIENT NO-EVICT survives RESET in Redis 7.0.)
    c.no_touch = false;
    c.info.no_touch.store(false, Relaxed);
    *c.info.name.lock() = None;
    let acl = crate::acl::acl();
    c.user = acl.default_user().clone();
    *c.info.user.lock() = c.user.clone();
    c.authenticated = acl.starts_authenticated();
    c.info.authenticated.store(c.authenticated, Relaxed);
    ctx.out.protocol = Protocol::Resp2;
    ctx.out.simple(b"RESET");
    Ok(())
}

/// Logs the client in as `user` if the password is one of the user's and
/// the user is on; otherwise records the failure in the ACL LOG and
/// refuses (AUTH and HELLO ... AUTH).
fn log_in(ctx: &mut Ctx, command: &[u8], user: &[u8], pass: &[u8]) -> CmdResult {
    match crate::acl::acl().authenticate(user, pass) {
        Some(u) => {
            ctx.client.log_in(u);
            Ok(())
        }
        None => {
            let context = if ctx.client.multi.in_exec {
                "multi"
            } else {
                "toplevel"
            };
            crate::server::dispatch::log_acl_denial(
                ctx.srv,
                ctx.client,
                "auth",
                context,
                command.to_vec(),
                user.to_vec(),
            );
            Err(CmdError::msg(
                "WRONGPASS invalid username-password pair or user is disabled.",
            ))
        }
    }
}

fn auth(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Never show credentials in MONITOR or the slow log.
    ctx.client.redacted = !1u64 & ((1u64 << args.len().min(63)) - 1);
    let (user, pass): (&[u8], &[u8]) = match args.len() {
        2 => (b"default", args[1]),
        3 => (args[1], args[2]),
        _ => return Err(CmdError::Syntax),
    };
    if args.len() == 2 && crate::acl::acl().default_user().rules().nopass {
        return Err(CmdError::msg("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"));
    }
    log_in(ctx, args[0], user, pass)?;
    ctx.out.ok();
    Ok(())
}

fn select(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = super::generic::db_index(ctx, args[1])?;
    ctx.client.db = n;
    ctx.client.info.db.store(n, Relaxed);
    ctx.out.ok();
    Ok(())
}

fn hello(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut proto = None;
    let mut i = 1;
    if args.len() >= 2 {
        let v = int(args[1])
            .map_err(|_| CmdError::msg("ERR Protocol version is not an integer or out of range"))?;
        if !(2..=3).contains(&v) {
            return Err(CmdError::msg("NOPROTO unsupported protocol version"));
        }
        proto = Some(v);
        i = 2;
    }
    // Redis 7.0 acts on each option as it reads it: AUTH logs in (and stays
    // logged in whatever follows), SETNAME names the client, even before
    // the check that the client is authenticated.
    while i < args.len() {
        let more = args.len() - 1 - i;
        if eq_ic(args[i], "auth") && more >= 2 {
            if i + 2 < 64 {
                ctx.client.redacted |= (1 << (i + 1)) | (1 << (i + 2));
            }
            log_in(ctx, args[0], args[i + 1], args[i + 2])?;
            i += 3;
        } else if eq_ic(args[i], "setname") && more >= 1 {
            let n = args[i + 1];
            validate_name(n)?;
            *ctx.client.info.name.lock() = if n.is_empty() { None } else { Some(n.to_vec()) };
            i += 2;
        } else {
            return Err(CmdError::bytes(&[
                b"ERR Syntax error in HELLO option '",
                c_bytes(args[i]),
                b"'",
            ]));
        }
    }
    if !ctx.client.authenticated {
        return Err(CmdError::msg("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(v) = proto {
        ctx.out.protocol = if v == 3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        };
    }
    let out = &mut *ctx.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(crate::REDIS_COMPAT_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if out.resp3() { 3 } else { 2 });
    out.bulk(b"id");
    out.int(ctx.client.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(if ctx.srv.repl.is_replica() {
        b"replica".as_slice()
    } else {
        b"master"
    });
    out.bulk(b"modules");
    out.array(0);
    Ok(())
}

fn validate_name(n: &[u8]) -> CmdResult {
    if n.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(CmdError::msg(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    Ok(())
}

fn client_id(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.client.id as i64);
    Ok(())
}

fn client_setname(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = args[2];
    validate_name(n)?;
    *ctx.client.info.name.lock() = if n.is_empty() { None } else { Some(n.to_vec()) };
    ctx.out.ok();
    Ok(())
}

fn client_getname(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let name = ctx.client.info.name.lock().clone();
    match name {
        Some(n) => ctx.out.bulk(&n),
        None => ctx.out.null(),
    }
    Ok(())
}

fn client_list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now = unix_ms();
    let mut text = String::new();
    // As Redis: `TYPE t` only as the whole argument list, `ID id...` lists
    // those clients in the order given (repeats included; IDs of no client,
    // 0 and negatives among them, list nothing).
    if args.len() > 3 && eq_ic(args[2], "id") {
        let mut ids = Vec::with_capacity(args.len() - 3);
        for a in &args[3..] {
            ids.push(int(a).map_err(|_| CmdError::msg("ERR Invalid client ID"))?);
        }
        let clients: std::collections::HashMap<i64, std::sync::Arc<ClientInfo>> = ctx
            .srv
            .clients
            .snapshot()
            .into_iter()
            .map(|c| (c.id as i64, c))
            .collect();
        for id in ids {
            if let Some(c) = clients.get(&id) {
                text.push_str(&c.describe_with_pending(now, own_pending(ctx, c.id)));
                text.push('\n');
            }
        }
        ctx.out.verbatim(b"txt", text.as_bytes());
        return Ok(());
    }
    let wanted: Option<ClientType> = match args.len() {
        2 => None,
        4 if eq_ic(args[2], "type") => Some(parse_client_type(args[3])?),
        _ => return Err(CmdError::Syntax),
    };
    {
        for c in ctx.srv.clients.snapshot() {
            if wanted.is_some_and(|t| client_type(&c) != t) {
                continue;
            }
            text.push_str(&c.describe_with_pending(now, own_pending(ctx, c.id)));
            text.push('\n');
        }
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// The replies the calling client's batch has made so far (CLIENT LIST
/// `obl` of the caller itself; from a script, the script's caller has its
/// replies elsewhere, and 0 is shown).
fn own_pending(ctx: &Ctx, id: u64) -> usize {
    if id == ctx.client.id && !crate::scripting::bridge::in_script() {
        ctx.out.buf.len()
    } else {
        0
    }
}

fn client_info(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let own = own_pending(ctx, ctx.client.id);
    let mut line = ctx.client.info.describe_with_pending(unix_ms(), own);
    line.push('\n');
    ctx.out.verbatim(b"txt", line.as_bytes());
    Ok(())
}

/// Kills a client, gone at once for everybody else, as in Redis. A client
/// killing itself still gets this command's reply: its connection closes
/// after the reply is written, not before.
pub(crate) fn kill_client(ctx: &mut Ctx, c: &ClientInfo) {
    ctx.srv.clients.unregister(c.id);
    if c.id == ctx.client.id {
        ctx.client.close_after_reply = true;
    } else {
        c.kill();
    }
}

fn client_kill(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let clients = ctx.srv.clients.snapshot();
    let my_id = ctx.client.id;
    // Old form: CLIENT KILL addr:port.
    if args.len() == 3 {
        let addr = lossy(args[2]);
        let Some(c) = clients.iter().find(|c| c.addr.to_string() == addr) else {
            return Err(CmdError::msg("ERR No such client"));
        };
        kill_client(ctx, c);
        ctx.out.ok();
        return Ok(());
    }
    let mut id: Option<u64> = None;
    let mut addr: Option<String> = None;
    let mut laddr: Option<String> = None;
    let mut user: Option<Vec<u8>> = None;
    // As in CLIENT LIST: None any type, Some(None) no client can match.
    let mut wanted: Option<ClientType> = None;
    let mut skipme = true;
    let mut i = 2;
    while i < args.len() {
        if i + 1 >= args.len() {
            return Err(CmdError::Syntax);
        }
        let (opt, val) = (args[i], args[i + 1]);
        if eq_ic(opt, "id") {
            let n = int(val)
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| CmdError::msg("ERR client-id should be greater than 0"))?;
            id = Some(n as u64);
        } else if eq_ic(opt, "type") {
            wanted = Some(parse_client_type(val)?);
        } else if eq_ic(opt, "addr") {
            addr = Some(lossy(val));
        } else if eq_ic(opt, "laddr") {
            laddr = Some(lossy(val));
        } else if eq_ic(opt, "user") {
            user = Some(val.to_vec());
        } else if eq_ic(opt, "skipme") {
            if eq_ic(val, "yes") {
                skipme = true;
            } else if eq_ic(val, "no") {
                skipme = false;
            } else {
                return Err(CmdError::Syntax);
            }
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    let user = match &user {
        Some(name) => match crate::acl::acl().get(name) {
            Some(u) => Some(u),
            None => {
                return Err(CmdError::bytes(&[
                    b"ERR No such user '",
                    c_bytes(name),
                    b"'",
                ]));
            }
        },
        None => None,
    };
    let mut killed = 0;
    for c in &clients {
        if id.is_some_and(|i| i != c.id)
            || addr.as_ref().is_some_and(|a| *a != c.addr.to_string())
            || laddr.as_ref().is_some_and(|a| *a != c.laddr.to_string())
            || user
                .as_ref()
                .is_some_and(|u| !std::sync::Arc::ptr_eq(u, &c.user.lock()))
            || wanted.is_some_and(|t| client_type(c) != t)
            || (skipme && c.id == my_id)
        {
            continue;
        }
        kill_client(ctx, c);
        killed += 1;
    }
    ctx.out.int(killed);
    Ok(())
}

fn client_pause(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Redis looks at the mode before the timeout.
    let writes_only = match args.len() {
        3 => false,
        4 if eq_ic(args[3], "write") => true,
        4 if eq_ic(args[3], "all") => false,
        4 => return Err(CmdError::msg("ERR CLIENT PAUSE mode must be WRITE or ALL")),
        _ => return Err(super::subcommand_syntax_error(args)),
    };
    let ms =
        int(args[2]).map_err(|_| CmdError::msg("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::msg("ERR timeout is negative"));
    }
    // Redis adds the timeout to the clock without an overflow check: a
    // timeout too large to add ends in the past and pauses nothing.
    let until = ctx.now_ms.wrapping_add(ms);
    let pause = &ctx.srv.pause;
    // A pause that has run out is over, whatever its mode was.
    let cur = match pause.until_ms.load(Relaxed) {
        c if c > ctx.now_ms => c,
        _ => 0,
    };
    if cur == 0 {
        if until > ctx.now_ms {
            pause.writes_only.store(writes_only, Relaxed);
            pause.until_ms.store(until, Relaxed);
        }
    } else {
        // A second pause can only extend the pause or widen it to ALL.
        if !writes_only {
            pause.writes_only.store(false, Relaxed);
        }
        if until > cur {
            pause.until_ms.store(until, Relaxed);
        }
    }
    ctx.out.ok();
    Ok(())
}

fn client_unpause(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.srv.pause.until_ms.store(0, Relaxed);
    ctx.srv.pause.unpaused.notify_waiters();
    ctx.out.ok();
    Ok(())
}

fn client_reply(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let a = args[2];
    if eq_ic(a, "on") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.out.ok();
    } else if eq_ic(a, "off") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if eq_ic(a, "skip") {
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        return Err(CmdError::Syntax);
    }
    Ok(())
}

fn on_off(a: &[u8]) -> Result<bool, CmdError> {
    if eq_ic(a, "on") {
        Ok(true)
    } else if eq_ic(a, "off") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

fn client_no_evict(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let v = on_off(args[2])?;
    ctx.client.no_evict = v;
    ctx.client.info.no_evict.store(v, Relaxed);
    ctx.out.ok();
    Ok(())
}

fn client_no_touch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let v = on_off(args[2])?;
    ctx.client.no_touch = v;
    ctx.client.info.no_touch.store(v, Relaxed);
    ctx.out.ok();
    Ok(())
}

fn client_unblock(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 4 {
        return Err(super::subcommand_syntax_error(args));
    }
    let id = int(args[2])?;
    let error = match args.get(3) {
        None => false,
        Some(a) if eq_ic(a, "timeout") => false,
        Some(a) if eq_ic(a, "error") => true,
        Some(_) => {
            return Err(CmdError::msg(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    let done = id > 0 && ctx.srv.blocking.unblock(id as u64, error);
    ctx.out.int(done as i64);
    Ok(())
}

fn client_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx,
        "CLIENT",
        &[
            "CACHING (YES|NO)",
            "    With OPTIN/OPTOUT tracking: whether the next command's keys are tracked.",
            "GETREDIR",
            "    Return the ID tracking invalidations are redirected to (-1 without tracking).",
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are: ID, TYPE, USER, ADDR, LADDR, SKIPME.",
            "LIST [options ...]",
            "    Return information about client connections. Options: TYPE, ID.",
            "UNPAUSE",
            "    Stop the current client pause, resuming traffic.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Suspend all, or just write, clients for <timeout> milliseconds.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    End a blocking command of another client, as by a timeout or with an error.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "    Turn client-side caching invalidation messages on or off. Further options:",
            "    OPTIN, OPTOUT, NOLOOP.",
            "TRACKINGINFO",
            "    Return the tracking state of the current connection.",
            "NO-EVICT (ON|OFF)",
            "    Protect the current client connection from eviction.",
            "NO-TOUCH (ON|OFF)",
            "    Do not update the access time of keys touched by this connection.",
        ],
    )
}
