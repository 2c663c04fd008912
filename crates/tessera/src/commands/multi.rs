//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Between MULTI and EXEC, dispatch queues commands instead of running them
//! ([`queue`]). EXEC locks the shards of every key its commands declare (or
//! all shards, when a command's keys cannot be known in advance) through a
//! [`HoldScope`](crate::keyspace::HoldScope), checks the WATCHed keys, and
//! runs the commands one after another through [`dispatch::call`]: no other
//! client on any thread can see or touch those shards in between.
//!
//! WATCH registers a flag in the table holding each watched key, so a write
//! and the flagging of its watchers happen under the same lock (see
//! `Db::signal_modified`).

use std::sync::atomic::Ordering::Relaxed;

use tessera_resp::encode::ReplyBuf;

use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::{shard_of, Key, NUM_SHARDS};
use crate::server::client::Client;
use crate::server::dispatch;
use crate::server::state::ServerState;

/// A transaction command: group `transactions`, ACL `@transaction`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "transactions", since, summary, handler)
        .acl(acl::TRANSACTION)
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "multi",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED | KEEPS_CACHING | OPENS_MULTI,
        "1.2.0",
        "Starts a transaction.",
        multi,
    ),
    cmd(
        "exec",
        1,
        NOSCRIPT
            | LOADING
            | STALE
            | SKIP_SLOWLOG
            | NOT_QUEUED
            | LEAVES_MULTI
            | RUNS_QUEUED
            | NO_AUTO_PROPAGATE,
        "1.2.0",
        "Executes all commands in a transaction.",
        exec,
    )
    .complexity("Depends on commands in the transaction"),
    cmd(
        "discard",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED | LEAVES_MULTI,
        "2.0.0",
        "Discards a transaction.",
        discard,
    )
    .complexity("O(N), when N is the number of queued commands"),
    cmd(
        "watch",
        -2,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED,
        "2.2.0",
        "Monitors changes to keys to determine the execution of a transaction.",
        watch,
    )
    .complexity("O(1) for every key.")
    .key_specs(&[ks(RO, 1, -1, 1)])
    .args(&[a::key("key", 0).multiple()]),
    cmd(
        "unwatch",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        "2.2.0",
        "Forgets about watched keys of a transaction.",
        unwatch,
    ),
];

/// Queues a command between MULTI and EXEC and replies `+QUEUED`.
pub fn queue(srv: &ServerState, client: &mut Client, out: &mut ReplyBuf, args: &[&[u8]]) {
    let Some((id, spec)) = super::lookup(args[0]).and_then(|(id, c)| {
        if c.subcommands.is_empty() || args.len() < 2 {
            Some((id, c))
        } else {
            super::lookup_sub(c, args[1])
        }
    }) else {
        return;
    };
    // A transaction already doomed (a queueing error, or a watched key
    // changed) keeps answering QUEUED but stores nothing more, as Redis
    // does (CLIENT LIST's multi= stops counting).
    if client.multi.dirty_queue || client.multi.watch_flag.load(Relaxed) {
        out.simple(b"QUEUED");
        return;
    }
    // (A script is judged by the flags it declares, as EXEC will be.)
    let flags = super::scripting::declared_command_flags(srv, spec, args);
    client.multi.queued_denyoom |= flags & super::flags::DENYOOM != 0;
    client.multi.queued_write |= flags & super::flags::WRITE != 0;
    client.multi.queued_denies_stale |= flags & super::flags::STALE == 0;
    client
        .multi
        .queued
        .push((id, args.iter().map(|a| a.to_vec()).collect()));
    client
        .info
        .multi_len
        .store(client.multi.queued.len() as i64, Relaxed);
    let pointer = std::mem::size_of::<usize>();
    let mem: usize = args.iter().map(|a| a.len() + pointer).sum();
    client.info.multi_mem.fetch_add(mem, Relaxed);
    out.simple(b"QUEUED");
}

fn multi(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.active {
        return Err(CmdError::msg("ERR MULTI calls can not be nested"));
    }
    ctx.client.multi.active = true;
    ctx.client.multi.dirty_queue = false;
    ctx.client.multi.queued_denyoom = false;
    ctx.client.multi.queued_write = false;
    ctx.client.multi.queued_denies_stale = false;
    ctx.client.info.multi_len.store(0, Relaxed);
    ctx.out.ok();
    Ok(())
}

/// Leaves MULTI state, forgetting queued commands and watched keys.
pub fn discard_transaction(srv: &ServerState, client: &mut Client) {
    client.multi.active = false;
    client.multi.dirty_queue = false;
    client.multi.queued_denyoom = false;
    client.multi.queued_write = false;
    client.multi.queued_denies_stale = false;
    client.multi.queued.clear();
    client.info.multi_len.store(-1, Relaxed);
    client.info.multi_mem.store(0, Relaxed);
    unwatch_all(srv, client);
}

fn discard(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if !ctx.client.multi.active {
        return Err(CmdError::msg("ERR DISCARD without MULTI"));
    }
    discard_transaction(ctx.srv, ctx.client);
    ctx.out.ok();
    Ok(())
}

fn watch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.active {
        return Err(CmdError::msg("ERR WATCH inside MULTI is not allowed"));
    }
    let db = ctx.client.db;
    for key in &args[1..] {
        if ctx
            .client
            .multi
            .watched
            .iter()
            .any(|(d, k)| *d == db && k.as_slice() == *key)
        {
            continue;
        }
        let flag = ctx.client.multi.watch_flag.clone();
        let (mut locks, from_script) = ctx.srv.keyspace.lock_key_beside_hold(key);
        // In a shard a busy script holds, expiry follows the script's
        // stopped clock: a key expired when it started is gone for it too,
        // one that expired since is not yet.
        let now = match crate::scripting::bridge::frozen_now_ms() {
            Some(frozen) if from_script => frozen.min(ctx.now_ms),
            _ => ctx.now_ms,
        };
        let table = &mut locks.shard_for(key).dbs[db];
        // A key already expired is watched as absent, and left where it
        // is (Redis 7.0 does not delete it here).
        let expired = table
            .peek(key)
            .is_some_and(|e| table.is_expired(key, e, now));
        table.watch(key, &flag, expired);
        drop(locks);
        ctx.client.multi.watched.push((db, Key::from_slice(key)));
        let watching = ctx.client.multi.watched.len();
        ctx.client.info.watched_keys.store(watching, Relaxed);
    }
    ctx.out.ok();
    Ok(())
}

fn unwatch(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    unwatch_all(ctx.srv, ctx.client);
    ctx.out.ok();
    Ok(())
}

/// Drops every WATCH of a client (EXEC, DISCARD, UNWATCH, RESET, disconnect).
///
/// Each key leaves the client's list only once its table has forgotten the
/// watch: a wait for a shard that a busy script on another thread holds
/// ends the command with -BUSY part-way, and the keys still listed are
/// unwatched by the next UNWATCH, EXEC, DISCARD or the disconnect.
pub fn unwatch_all(srv: &ServerState, client: &mut Client) {
    while let Some((db, key)) = client.multi.watched.last() {
        let (mut locks, _) = srv.keyspace.lock_key_beside_hold(key);
        locks.shard_for(key).dbs[*db].unwatch(key, &client.multi.watch_flag);
        drop(locks);
        client.multi.watched.pop();
        let watching = client.multi.watched.len();
        client.info.watched_keys.store(watching, Relaxed);
    }
    client.multi.watch_flag.store(false, Relaxed);
}

/// The shards EXEC must hold: every key of every queued command and every
/// watched key, or all shards when some command's keys are not known in
/// advance (KEYS, FLUSHDB, SORT ... BY, INFO...).
fn shards_needed(client: &Client) -> Vec<usize> {
    let mut idxs = Vec::new();
    for (id, argv) in &client.multi.queued {
        let Some((_, spec)) = super::by_id(*id) else {
            continue;
        };
        let args: Vec<&[u8]> = argv.iter().map(|a| a.as_slice()).collect();
        if needs_whole_keyspace(spec) {
            return (0..NUM_SHARDS).collect();
        }
        if let Ok(keys) = spec.key_indices(&args) {
            idxs.extend(
                keys.into_iter()
                    .filter_map(|i| args.get(i))
                    .map(|k| shard_of(k)),
            );
        }
    }
    idxs.extend(client.multi.watched.iter().map(|(_, k)| shard_of(k)));
    idxs.sort_unstable();
    idxs.dedup();
    idxs
}

/// Commands whose declared keys do not cover what they touch.
pub fn needs_whole_keyspace(spec: &CommandSpec) -> bool {
    let keyless_data = spec.key_specs.is_empty() && spec.has(WRITE | READONLY);
    keyless_data
        || spec.has(RUNS_SCRIPT)
        || matches!(
            spec.name,
            "sort" | "sort_ro" | "info" | "memory" | "debug" | "script" | "function" | "config"
        )
}

/// Whether a watched key changed or expired since WATCH.
fn watch_failed(srv: &ServerState, client: &Client, now_ms: i64) -> bool {
    if client.multi.watch_flag.load(Relaxed) {
        return true;
    }
    // A watched key that expired since (deleted or not) fails it, one that
    // was already expired when watched does not.
    client.multi.watched.iter().any(|(db, key)| {
        let mut locks = srv.keyspace.lock_key(key);
        let t = &locks.shard_for(key).dbs[*db];
        t.peek(key).is_some_and(|e| t.is_expired(key, e, now_ms))
            && !t.watched_as_expired(key, &client.multi.watch_flag)
    })
}

fn exec(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if !ctx.client.multi.active {
        return Err(CmdError::msg("ERR EXEC without MULTI"));
    }
    if ctx.client.multi.dirty_queue {
        discard_transaction(ctx.srv, ctx.client);
        return Err(CmdError::msg(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let srv = ctx.srv;
    let idxs = shards_needed(ctx.client);
    let queued = std::mem::take(&mut ctx.client.multi.queued);
    let takes_script_lock = queued
        .iter()
        .any(|(id, _)| super::by_id(*id).is_some_and(|(_, s)| s.has(RUNS_SCRIPT)));
    let _script = takes_script_lock.then(|| crate::server::script_host::lock_scripts(srv));
    // A busy script holding one of our shards makes the wait give up:
    // the transaction is then discarded with the reason, as Redis does.
    let scope =
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| srv.keyspace.hold(&idxs))) {
            Ok(scope) => scope,
            Err(payload) if payload.is::<crate::keyspace::BusyAbort>() => {
                discard_transaction(srv, ctx.client);
                let busy = crate::server::script_host::busy_error(srv).to_string();
                return Err(CmdError::msg(format!(
                    "EXECABORT Transaction discarded because of: {busy}"
                )));
            }
            Err(payload) => std::panic::resume_unwind(payload),
        };
    let now_ms = crate::server::state::unix_ms();
    if watch_failed(srv, ctx.client, now_ms) {
        drop(scope);
        discard_transaction(srv, ctx.client);
        ctx.out.null_array();
        return Ok(());
    }
    // As Redis: while its commands run the client still shows as in MULTI
    // (CLIENT INFO's `x` flag, `multi` and `multi-mem`) until EXEC ends.
    ctx.client.multi.active = false;
    ctx.client.multi.in_exec = true;
    ctx.out.array(queued.len());
    for (id, argv) in &queued {
        let Some((_, spec)) = super::by_id(*id) else {
            continue;
        };
        let args: Vec<&[u8]> = argv.iter().map(|a| a.as_slice()).collect();
        // The user's permissions may have changed since the command was
        // queued: they are checked again, as Redis does.
        if let Err(denied) = dispatch::acl_check(srv, ctx.client, *id, spec, &args, Some("multi")) {
            let reason = match denied {
                crate::acl::Denied::Command => "no permission to execute the command or subcommand",
                crate::acl::Denied::Key(_) => "no permission to touch the specified keys",
                crate::acl::Denied::Channel(_) => {
                    "no permission to access one of the channels used as arguments"
                }
            };
            ctx.client.worker.count_error("NOPERM");
            ctx.out.error(format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}").as_bytes());
            continue;
        }
        dispatch::call(srv, ctx.client, ctx.out, *id, spec, &args, now_ms);
    }
    ctx.client.multi.in_exec = false;
    ctx.client.info.multi_len.store(-1, Relaxed);
    ctx.client.info.multi_mem.store(0, Relaxed);
    drop(scope);
    unwatch_all(srv, ctx.client);
    Ok(())
}
