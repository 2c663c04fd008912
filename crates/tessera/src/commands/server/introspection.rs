//! What the server says about itself and its commands: COMMAND and its
//! subcommands, TIME, ROLE, LASTSAVE, MONITOR, and SHUTDOWN with them
//! (Redis keeps these in `server.c`, `replication.c` and `rdb.c`).

use std::sync::atomic::Ordering::Relaxed;

use tessera_resp::encode::ReplyBuf;

use crate::commands::args::{eq_ic, lossy};
use crate::commands::flags::NO_MANDATORY_KEYS;
use crate::commands::generic::help_reply;
use crate::commands::meta::{arg as a, docflags, ksflags, BeginSearch, FindKeys};
use crate::commands::{all_commands, CmdError, CmdResult, CommandSpec, Ctx, KeySpecDef};
use crate::server::state::unix_us;
use crate::util::glob::glob_match;
use crate::util::log;

// ---------------------------------------------------------------- COMMAND

pub(super) fn command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
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
    crate::commands::flags::NAMES
        .iter()
        .filter(|(b, _)| f & b != 0)
        .map(|(_, n)| *n)
        .collect()
}

fn acl_names(c: &CommandSpec) -> Vec<&'static str> {
    let cats = c.acl_categories();
    crate::commands::acl::NAMES
        .iter()
        .filter(|(f, _)| cats & f != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// One COMMAND INFO entry in Redis 7.0's ten-field shape: name, arity,
/// flags, first/last/step, ACL categories, tips, key specs, subcommands.
fn command_entry(ctx: &mut Ctx, c: &CommandSpec, parent: Option<&CommandSpec>) {
    let name = crate::commands::full_name(parent, c);
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

pub(super) fn command_count(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(all_commands().len() as i64);
    Ok(())
}

pub(super) fn command_list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
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

pub(super) fn command_info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
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
            let (_, parent) = crate::commands::lookup(p.as_bytes())?;
            let (_, c) = crate::commands::lookup_sub(parent, sub.as_bytes())?;
            Some((c, Some(parent)))
        }
        None => crate::commands::lookup(name).map(|(_, c)| (c, None)),
    }
}

/// One COMMAND DOCS entry: the name, then a map of the documentation
/// fields the command has (Redis omits the empty ones).
fn docs_entry(ctx: &mut Ctx, c: &CommandSpec, parent: Option<&CommandSpec>) {
    let out = &mut *ctx.out;
    out.bulk(crate::commands::full_name(parent, c).as_bytes());
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
        // A pure token is shown even when empty (MIGRATE's `""`).
        let has_token = !arg.token.is_empty() || matches!(arg.kind, a::ArgType::PureToken);
        let fields = 2
            + key_spec.is_some() as usize
            + has_token as usize
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
        if has_token {
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

pub(super) fn command_docs(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
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

pub(super) fn command_getkeys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
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

pub(super) fn command_getkeysandflags(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let target = &args[2..];
    let Some((c, idx)) = resolve_keys(ctx, target)? else {
        return Ok(());
    };
    let uses = c.uses_at(target, &idx);
    ctx.out.array(uses.len());
    for key in uses {
        ctx.out.array(2);
        ctx.out.bulk(target[key.index]);
        key_flag_names(ctx.out, key.flags);
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

/// The command named by `target` and the positions of its keys, with
/// COMMAND GETKEYS's errors; `None` when the reply (no keys) was written.
#[allow(clippy::type_complexity)]
fn resolve_keys(
    ctx: &mut Ctx,
    target: &[&[u8]],
) -> Result<Option<(&'static CommandSpec, Vec<usize>)>, CmdError> {
    let Some((_, mut c)) = crate::commands::lookup(target[0]) else {
        return Err(CmdError::msg("ERR Invalid command specified"));
    };
    if !c.subcommands.is_empty() {
        if let Some(sub) = target.get(1) {
            let Some((_, s)) = crate::commands::lookup_sub(c, sub) else {
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
    let found = match crate::commands::meta::key_positions(c.key_specs, target) {
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

pub(super) fn command_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
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

pub(super) fn time(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let us = unix_us();
    ctx.out.array(2);
    ctx.out.bulk_int(us / 1_000_000);
    ctx.out.bulk_int(us % 1_000_000);
    Ok(())
}

/// ROLE: a master's offset and replicas, or a replica's master and link.
pub(super) fn role(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let repl = &ctx.srv.repl;
    let offset = repl.stream.lock().offset;
    if repl.is_replica() {
        let link = repl.link.lock();
        let (host, port, state) = match link.as_ref() {
            Some(l) => (l.host.clone(), l.port, l.state),
            None => (
                String::new(),
                0,
                crate::server::replication::LinkState::Connect,
            ),
        };
        drop(link);
        ctx.out.array(5);
        ctx.out.bulk(b"slave");
        ctx.out.bulk(host.as_bytes());
        ctx.out.int(i64::from(port));
        ctx.out.bulk(state.role_name().as_bytes());
        let shown = if state == crate::server::replication::LinkState::Connected {
            offset as i64
        } else {
            -1
        };
        ctx.out.int(shown);
        return Ok(());
    }
    let replicas = crate::server::replication::master::replicas(ctx.srv);
    ctx.out.array(3);
    ctx.out.bulk(b"master");
    ctx.out.int(offset as i64);
    let online: Vec<_> = replicas
        .iter()
        .filter(|r| r.2 == crate::server::replication::FeedState::Online)
        .collect();
    ctx.out.array(online.len());
    for (ip, port, _, acked, _) in online {
        ctx.out.array(3);
        ctx.out.bulk(ip.as_bytes());
        ctx.out.bulk(port.to_string().as_bytes());
        ctx.out.bulk(acked.to_string().as_bytes());
    }
    Ok(())
}

pub(super) fn lastsave(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.srv.persistence.lastsave_s.load(Relaxed));
    Ok(())
}

pub(super) fn shutdown(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
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
    use crate::server::shutdown;
    if abort {
        if !shutdown::abort(ctx.srv) {
            return Err(CmdError::msg("ERR No shutdown in progress."));
        }
        ctx.out.ok();
        return Ok(());
    }
    log::warning("User requested shutdown...");
    let flags = shutdown::ShutdownFlags {
        save,
        nosave,
        now,
        force,
    };
    shutdown::from_client(ctx.srv, ctx.client, flags)
        .map_err(|_| CmdError::msg("ERR Errors trying to SHUTDOWN. Check logs."))
}

// ---------------------------------------------------------------- MONITOR

/// Registers the feed before replying, so every command run after the
/// client sees `+OK` reaches it.
/// A second MONITOR is ignored without a reply, as Redis ignores it.
pub(super) fn monitor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
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
