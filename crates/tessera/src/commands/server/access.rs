//! ACL SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT, GENPASS, LOG,
//! DRYRUN, LOAD, SAVE and HELP (Redis's `acl.c`). The users, rules and
//! checks themselves live in `crate::acl`.

use std::sync::Arc;

use crate::acl::{self, describe, Denied, Request, User};
use crate::commands::args::{c_bytes, int};
use crate::commands::{self, acl as category, CmdError, CmdResult, Ctx};
use crate::util::numbers::format_f64;

pub(super) fn acl_setuser(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // The rules may hold passwords: the slow log shows them (and the name,
    // as Redis does) redacted.
    for i in 2..args.len().min(64) {
        ctx.client.redacted |= 1 << i;
    }
    let pubsub_all = ctx.srv.config.acl_pubsub_default_allchannels();
    let users = acl::acl();
    let before = users.get(args[2]).map(|u| u.rules());
    users
        .set_user(args[2], &args[3..], pubsub_all)
        .map_err(|e| CmdError::msg(format!("ERR {}", e.0)))?;
    if let (Some(before), Some(user)) = (before, users.get(args[2])) {
        let after = user.rules();
        if acl::check::channels_narrowed(&before, &after) {
            disconnect_disallowed_subscribers(ctx, &user, &after);
        }
    }
    ctx.out.ok();
    Ok(())
}

/// As Redis: when a user's channels shrink, its clients subscribed to
/// something the new rules do not allow are disconnected.
fn disconnect_disallowed_subscribers(ctx: &mut Ctx, user: &Arc<User>, rules: &acl::UserRules) {
    use crate::server::pubsub::Kind;
    for c in ctx.srv.clients.snapshot() {
        if !Arc::ptr_eq(&c.user.lock(), user) {
            continue;
        }
        let denied = ctx
            .srv
            .pubsub
            .subscriptions_of(c.id)
            .iter()
            .any(|(kind, name)| {
                !acl::check::subscription_allowed(rules, name, *kind == Kind::Pattern)
            });
        if denied {
            commands::connection::kill_client(ctx, &c);
        }
    }
}

pub(super) fn acl_getuser(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(user) = acl::acl().get(args[2]) else {
        ctx.out.null();
        return Ok(());
    };
    let rules = user.rules();
    let out = &mut *ctx.out;
    out.map(6);
    out.bulk(b"flags");
    let flags = describe::flags(&rules);
    out.set(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"passwords");
    out.array(rules.passwords.len());
    for p in &rules.passwords {
        out.bulk(p.as_bytes());
    }
    out.bulk(b"commands");
    out.bulk(describe::commands(&rules.root).as_bytes());
    out.bulk(b"keys");
    out.bulk(describe::keys(&rules.root).as_bytes());
    out.bulk(b"channels");
    out.bulk(describe::channels(&rules.root).as_bytes());
    out.bulk(b"selectors");
    out.array(rules.selectors.len());
    for s in &rules.selectors {
        out.map(3);
        out.bulk(b"commands");
        out.bulk(describe::commands(s).as_bytes());
        out.bulk(b"keys");
        out.bulk(describe::keys(s).as_bytes());
        out.bulk(b"channels");
        out.bulk(describe::channels(s).as_bytes());
    }
    Ok(())
}

pub(super) fn acl_deluser(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut deleted = 0;
    // As Redis: users named before `default` are deleted even though the
    // command then fails.
    for &name in &args[2..] {
        if name == b"default" {
            return Err(CmdError::msg("ERR The 'default' user cannot be removed"));
        }
        if let Some(user) = acl::acl().delete(name) {
            disconnect_clients_of(ctx, &[user]);
            deleted += 1;
        }
    }
    ctx.out.int(deleted);
    Ok(())
}

/// Closes the connections logged in as these users (deleted or replaced):
/// the calling client after its reply.
fn disconnect_clients_of(ctx: &mut Ctx, users: &[Arc<User>]) {
    for c in ctx.srv.clients.snapshot() {
        let of_user = {
            let u = c.user.lock();
            users.iter().any(|gone| Arc::ptr_eq(gone, &u))
        };
        if of_user {
            commands::connection::kill_client(ctx, &c);
        }
    }
}

pub(super) fn acl_list(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let lines = acl::acl().user_lines();
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.bulk(l.as_bytes());
    }
    Ok(())
}

pub(super) fn acl_users(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let users = acl::acl().users();
    ctx.out.array(users.len());
    for u in users {
        ctx.out.bulk(&u.name);
    }
    Ok(())
}

pub(super) fn acl_whoami(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let name = ctx.client.user.name.clone();
    ctx.out.bulk(&name);
    Ok(())
}

pub(super) fn acl_cat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(crate::commands::subcommand_syntax_error(args));
    }
    let Some(&name) = args.get(2) else {
        ctx.out.array(category::NAMES.len());
        for (_, n) in category::NAMES {
            ctx.out.bulk(n.as_bytes());
        }
        return Ok(());
    };
    let Some(bit) = acl::universe::Universe::category(name) else {
        return Err(CmdError::bytes(&[
            b"ERR Unknown category '",
            c_bytes(name),
            b"'",
        ]));
    };
    let u = acl::universe::universe();
    let names: Vec<&str> = u
        .tops
        .iter()
        .flat_map(|&top| std::iter::once(top).chain(u.subs[top].iter().copied()))
        .filter(|&id| u.categories[id] & bit != 0)
        .map(|id| u.names[id].as_str())
        .collect();
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
    Ok(())
}

pub(super) fn acl_genpass(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let bits = match args.get(2) {
        None => 256,
        Some(a) => int(a)?,
    };
    if !(1..=4096).contains(&bits) {
        return Err(CmdError::msg("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"));
    }
    let chars = (bits as usize).div_ceil(4);
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    rand::Rng::fill(&mut rand::thread_rng(), &mut bytes[..]);
    let mut hex = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        hex.push_str(&format!("{b:02x}"));
    }
    hex.truncate(chars);
    ctx.out.bulk(hex.as_bytes());
    Ok(())
}

pub(super) fn acl_log(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(commands::subcommand_syntax_error(args));
    }
    let count = match args.get(2) {
        Some(a) if a.eq_ignore_ascii_case(b"reset") => {
            acl::acl().log.lock().reset();
            ctx.out.ok();
            return Ok(());
        }
        Some(a) => int(a)?.max(0) as usize,
        None => 10,
    };
    let entries = acl::acl().log.lock().newest(count);
    let now = crate::server::state::unix_ms();
    let out = &mut *ctx.out;
    out.array(entries.len());
    for e in entries {
        out.map(7);
        out.bulk(b"count");
        out.int(e.count as i64);
        out.bulk(b"reason");
        out.bulk(e.reason.as_bytes());
        out.bulk(b"context");
        out.bulk(e.context.as_bytes());
        out.bulk(b"object");
        out.bulk(&e.object);
        out.bulk(b"username");
        out.bulk(&e.username);
        out.bulk(b"age-seconds");
        let mut age = Vec::new();
        format_f64((now - e.created_ms) as f64 / 1000.0, &mut age);
        out.double_text(&age);
        out.bulk(b"client-info");
        out.bulk(e.client_info.as_bytes());
    }
    Ok(())
}

pub(super) fn acl_dryrun(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(user) = acl::acl().get(args[2]) else {
        return Err(CmdError::bytes(&[
            b"ERR User '",
            c_bytes(args[2]),
            b"' not found",
        ]));
    };
    let cmd_args = &args[3..];
    let not_found = || CmdError::bytes(&[b"ERR Command '", c_bytes(cmd_args[0]), b"' not found"]);
    let (mut id, mut spec) = commands::lookup(cmd_args[0]).ok_or_else(not_found)?;
    let mut is_subcommand = false;
    if !spec.subcommands.is_empty() && cmd_args.len() >= 2 {
        let (sid, sub) = commands::lookup_sub(spec, cmd_args[1]).ok_or_else(not_found)?;
        (id, spec, is_subcommand) = (sid, sub, true);
    }
    if !spec.arity_ok(cmd_args.len()) {
        let name = commands::by_id(id).map_or(spec.name, |(n, _)| n);
        return Err(CmdError::WrongArity(name.to_string()));
    }
    let rules = user.rules();
    let req = Request {
        id,
        spec,
        args: cmd_args,
        is_subcommand,
    };
    match acl::check(&rules, &req) {
        Ok(()) => ctx.out.ok(),
        Err(Denied::Command) => {
            let name = commands::by_id(id).map_or(spec.name, |(n, _)| n);
            ctx.out.bulk(
                format!("This user has no permissions to run the '{name}' command").as_bytes(),
            );
        }
        Err(Denied::Key(i)) => ctx.out.bulk(
            &[
                b"This user has no permissions to access the '".as_slice(),
                cmd_args[i],
                b"' key",
            ]
            .concat(),
        ),
        Err(Denied::Channel(i)) => ctx.out.bulk(
            &[
                b"This user has no permissions to access the '".as_slice(),
                cmd_args[i],
                b"' channel",
            ]
            .concat(),
        ),
    }
    Ok(())
}

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

pub(super) fn acl_load(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let Some(path) = ctx.srv.config.aclfile() else {
        return Err(CmdError::msg(NO_ACL_FILE));
    };
    let pubsub_all = ctx.srv.config.acl_pubsub_default_allchannels();
    let users =
        acl::read_acl_file(&path, pubsub_all).map_err(|e| CmdError::msg(format!("ERR {e}")))?;
    let replaced = acl::acl().replace_all(users);
    disconnect_clients_of(ctx, &replaced);
    ctx.out.ok();
    Ok(())
}

pub(super) fn acl_save(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let Some(path) = ctx.srv.config.aclfile() else {
        return Err(CmdError::msg(NO_ACL_FILE));
    };
    if let Err(e) = acl::write_acl_file(&path) {
        crate::util::log::warning(&format!(
            "Opening ACL file for writing: {}",
            crate::config::strerror(&e)
        ));
        return Err(CmdError::msg("ERR There was an error trying to save the ACLs. Please check the server logs for more information"));
    }
    ctx.out.ok();
    Ok(())
}

pub(super) fn acl_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    const LINES: &[&str] = &[
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Prints this help.",
    ];
    ctx.out.array(LINES.len());
    for l in LINES {
        ctx.out.simple(l.as_bytes());
    }
    Ok(())
}
