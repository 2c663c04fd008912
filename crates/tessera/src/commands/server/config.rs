//! CONFIG GET, SET, RESETSTAT, REWRITE and HELP (Redis's `config.c`).

use std::sync::atomic::Ordering::Relaxed;

use crate::commands::args::eq_ic;
use crate::commands::generic::help_reply;
use crate::commands::{CmdError, CmdResult, Ctx};

pub(super) fn config_get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pairs = ctx.srv.config.get(&args[2..]);
    ctx.out.map(pairs.len());
    for (k, v) in pairs {
        ctx.out.bulk(k.as_bytes());
        ctx.out.bulk(&v);
    }
    Ok(())
}

pub(super) fn config_set(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if !(args.len() - 2).is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    let pairs: Vec<(&[u8], &[u8])> = args[2..].chunks_exact(2).map(|c| (c[0], c[1])).collect();
    // The values of secrets (requirepass, masterauth, ...) never reach the
    // slow log, as Redis redacts them, whether or not the SET succeeds.
    for (i, (name, _)) in pairs.iter().enumerate() {
        let value_arg = 3 + 2 * i;
        if value_arg < 64 && crate::config::Config::is_sensitive(name) {
            ctx.client.redacted |= 1 << value_arg;
        }
    }
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
    if pairs.iter().any(|(name, _)| eq_ic(name, "appendonly")) {
        let in_exec = ctx.client.multi.in_exec;
        crate::server::persist::appendonly_changed(ctx.srv, in_exec).map_err(|e| {
            CmdError::msg(format!(
                "ERR CONFIG SET failed (possibly related to argument 'appendonly') - {e}"
            ))
        })?;
    }
    if pairs.iter().any(|(name, _)| eq_ic(name, "appendfsync")) {
        crate::server::persist::appendfsync_changed(ctx.srv);
    }
    if pairs
        .iter()
        .any(|(name, _)| eq_ic(name, "repl-backlog-size"))
    {
        crate::server::replication::backlog_size_changed(
            &ctx.srv.repl,
            ctx.srv.config.repl_backlog_size() as usize,
        );
    }
    if pairs
        .iter()
        .any(|(name, _)| eq_ic(name, "repl-semi-sync-replicas"))
    {
        crate::server::replication::semi_sync_changed(ctx.srv);
    }
    if pairs.iter().any(|(name, _)| eq_ic(name, "maxmemory")) {
        crate::server::evict::maxmemory_changed(ctx.srv, ctx.client);
        // Evictions propagate one by one, as the server's own deletions,
        // not as part of the CONFIG SET.
        ctx.srv.journal.publish_pending(false);
    }
    ctx.out.ok();
    Ok(())
}

pub(super) fn config_resetstat(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    for w in &ctx.srv.workers {
        w.reset();
    }
    ctx.srv.acceptor.reset();
    ctx.srv
        .client_eviction
        .evicted
        .store(0, std::sync::atomic::Ordering::Relaxed);
    ctx.srv.keyspace.reset_stats();
    ctx.srv.peak_memory.store(0, Relaxed);
    // What Redis's resetServerStats clears beyond the per-thread counters.
    let repl = &ctx.srv.repl;
    for counter in [
        &repl.sync_full,
        &repl.sync_partial_ok,
        &repl.sync_partial_err,
        &repl.link_input_bytes,
        &repl.link_output_bytes,
        &repl.net_repl_input_bytes,
    ] {
        counter.store(0, Relaxed);
    }
    let st = &ctx.srv.persistence;
    for counter in [
        &st.saves_started,
        &st.background_jobs,
        &st.aof_rewrites,
        &st.dump_payload_sanitizations,
    ] {
        counter.store(0, Relaxed);
    }
    ctx.out.ok();
    Ok(())
}

pub(super) fn config_rewrite(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.srv.config.rewrite().map_err(CmdError::msg)?;
    ctx.out.ok();
    Ok(())
}

pub(super) fn config_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
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
