//! Scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT. The Lua engine
//! lives in [`crate::scripting`], what a run holds in
//! [`crate::server::script_host`]; this module parses the commands.

use std::sync::atomic::Ordering::Relaxed;

use super::args::{eq_ic, int};
use super::flags::*;
use super::meta::{arg as a, ksflags::*, BeginSearch, FindKeys, KeySpecDef};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::scripting::{self, parse_shebang, Script};
use crate::server::script_host;
use crate::server::state::ServerState;

/// A scripting command: group `scripting`, ACL `@scripting`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "scripting", since, summary, handler).acl(acl::SCRIPTING)
}

const EVAL_ARGS: &[a::Arg] = &[
    a::string("script"),
    a::integer("numkeys"),
    a::key("key", 0).optional().multiple(),
    a::string("arg").optional().multiple(),
];
const EVALSHA_ARGS: &[a::Arg] = &[
    a::string("sha1"),
    a::integer("numkeys"),
    a::key("key", 0).optional().multiple(),
    a::string("arg").optional().multiple(),
];
const KEYNUM: FindKeys = FindKeys::Keynum {
    keynumidx: 0,
    firstkey: 1,
    keystep: 1,
};

/// EVAL-style key extraction (numkeys at 2): like Redis's evalGetKeys, a
/// numkeys that is not a valid count yields no keys rather than an error.
pub fn numkeys_keys(args: &[&[u8]]) -> Result<Vec<usize>, super::meta::InvalidKeyArgs> {
    let n = args
        .get(2)
        .and_then(|a| crate::util::numbers::parse_i64(a))
        .unwrap_or(-1);
    if n < 1 || n as usize > args.len().saturating_sub(3) {
        return Ok(Vec::new());
    }
    Ok((3..3 + n as usize).collect())
}

pub static COMMANDS: &[CommandSpec] =
    &[
        cmd(
            "eval",
            -3,
            NOSCRIPT
                | STALE
                | SKIP_MONITOR
                | NO_MANDATORY_KEYS
                | MAY_REPLICATE
                | RUNS_SCRIPT
                | NO_AUTO_PROPAGATE,
            "2.6.0",
            "Executes a server-side Lua script.",
            eval,
        )
        .complexity("Depends on the script that is executed.")
        .getkeys(numkeys_keys)
        .key_specs(&[
            KeySpecDef::new(RW | ACCESS | UPDATE, BeginSearch::Index(2), KEYNUM).notes(
                "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
            ),
        ])
        .args(EVAL_ARGS),
        cmd(
            "evalsha",
            -3,
            NOSCRIPT
                | STALE
                | SKIP_MONITOR
                | NO_MANDATORY_KEYS
                | MAY_REPLICATE
                | RUNS_SCRIPT
                | NO_AUTO_PROPAGATE,
            "2.6.0",
            "Executes a server-side Lua script by SHA1 digest.",
            evalsha,
        )
        .complexity("Depends on the script that is executed.")
        .getkeys(numkeys_keys)
        .key_specs(&[KeySpecDef::new(
            RW | ACCESS | UPDATE,
            BeginSearch::Index(2),
            KEYNUM,
        )])
        .args(EVALSHA_ARGS),
        cmd(
            "eval_ro",
            -3,
            READONLY
                | NOSCRIPT
                | STALE
                | SKIP_MONITOR
                | NO_MANDATORY_KEYS
                | RUNS_SCRIPT
                | NO_AUTO_PROPAGATE,
            "7.0.0",
            "Executes a read-only server-side Lua script.",
            eval_ro,
        )
        .complexity("Depends on the script that is executed.")
        .getkeys(numkeys_keys)
        .key_specs(&[
            KeySpecDef::new(RO | ACCESS, BeginSearch::Index(2), KEYNUM).notes(
                "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
            ),
        ])
        .args(EVAL_ARGS),
        cmd(
            "evalsha_ro",
            -3,
            READONLY
                | NOSCRIPT
                | STALE
                | SKIP_MONITOR
                | NO_MANDATORY_KEYS
                | RUNS_SCRIPT
                | NO_AUTO_PROPAGATE,
            "7.0.0",
            "Executes a read-only server-side Lua script by SHA1 digest.",
            evalsha_ro,
        )
        .complexity("Depends on the script that is executed.")
        .getkeys(numkeys_keys)
        .key_specs(&[KeySpecDef::new(RO | ACCESS, BeginSearch::Index(2), KEYNUM)])
        .args(EVALSHA_ARGS),
        cmd(
            "script",
            -2,
            0,
            "2.6.0",
            "A container for Lua scripts management commands.",
            super::generic::container,
        )
        .acl(0)
        .complexity("Depends on subcommand.")
        .subcommands(SCRIPT_SUBS),
    ];

static SCRIPT_SUBS: &[CommandSpec] = &[
    cmd("load", 3, NOSCRIPT | STALE, "2.6.0", "Loads a server-side Lua script to the script cache.", script_load)
        .complexity("O(N) with N being the length in bytes of the script body.")
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .args(&[a::string("script")]),
    cmd("exists", -3, NOSCRIPT, "2.6.0", "Determines whether server-side Lua scripts exist in the script cache.", script_exists)
        .complexity(
            "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
        )
        .tips(&["request_policy:all_shards", "response_policy:agg_logical_and"])
        .args(&[a::string("sha1").multiple()]),
    cmd("flush", -2, NOSCRIPT, "2.6.0", "Removes all server-side Lua scripts from the script cache.", script_flush)
        .complexity("O(N) with N being the number of scripts in cache")
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .history(&[("6.2.0", "Added the `ASYNC` and `SYNC` flushing mode modifiers.")])
        .args(&[
            a::oneof("async", &[a::pure("async", "ASYNC"), a::pure("sync", "SYNC")])
                .since("6.2.0")
                .optional(),
        ]),
    cmd("kill", 2, NOSCRIPT | ALLOW_BUSY, "2.6.0", "Terminates a server-side Lua script during execution.", script_kill)
        .tips(&["request_policy:all_shards", "response_policy:one_succeeded"]),
    cmd("help", 2, LOADING | STALE, "5.0.0", "Returns helpful text about the different subcommands.", script_help),
    cmd("debug", 3, NOSCRIPT, "3.2.0", "Sets the debug mode of server-side Lua scripts.", script_debug)
        .args(&[a::oneof(
            "mode",
            &[a::pure("yes", "YES"), a::pure("sync", "SYNC"), a::pure("no", "NO")],
        )]),
];

/// Parses `numkeys` and splits keys from arguments.
/// Keys and arguments of an EVAL-style command.
type KeysAndArgs<'a> = (&'a [&'a [u8]], &'a [&'a [u8]]);

fn split_keys<'a>(args: &'a [&'a [u8]]) -> Result<KeysAndArgs<'a>, CmdError> {
    let n = int(args[2])?;
    if n < 0 {
        return Err(CmdError::msg("ERR Number of keys can't be negative"));
    }
    let rest = &args[3..];
    if n as usize > rest.len() {
        return Err(CmdError::msg(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    Ok(rest.split_at(n as usize))
}

/// The flags a script-running command is judged by before it runs (and
/// when it is queued), as Redis's getCommandFlags: a script or function
/// that declares flags (a shebang, or function flags) by what it declares,
/// a script without a shebang, one not found, or one whose shebang does
/// not parse by the command's own flags. Other commands: their own flags.
pub fn declared_command_flags(srv: &ServerState, spec: &CommandSpec, args: &[&[u8]]) -> u64 {
    if !spec.has(RUNS_SCRIPT) || args.len() < 2 {
        return spec.flags;
    }
    let declared = match spec.name {
        "eval" | "eval_ro" => match srv.scripts.get(&scripting::sha1_hex(args[1])) {
            Some(script) => Some(script.flags),
            None => parse_shebang(args[1]).ok().map(|(flags, _)| flags),
        },
        "evalsha" | "evalsha_ro" => {
            let sha = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
            srv.scripts.get(&sha).map(|script| script.flags)
        }
        _ => srv
            .scripts
            .libraries
            .lock()
            .function(&String::from_utf8_lossy(args[1]))
            .map(|(_, meta)| meta.flags),
    };
    match declared {
        Some(flags) if flags.shebang => {
            let mut cmd_flags = spec.flags & !(STALE | DENYOOM | WRITE | MAY_REPLICATE);
            // (no-writes implies allow-oom.)
            if !flags.allow_oom && !flags.no_writes {
                cmd_flags |= DENYOOM;
            }
            if !flags.no_writes {
                cmd_flags |= WRITE;
            }
            if flags.allow_stale {
                cmd_flags |= STALE;
            }
            cmd_flags
        }
        _ => spec.flags,
    }
}

/// Looks a body up in the cache or adds it; Err carries Redis's error.
fn cache_body(srv: &ServerState, body: &[u8]) -> Result<std::sync::Arc<Script>, CmdError> {
    let sha = scripting::sha1_hex(body);
    if let Some(s) = srv.scripts.get(&sha) {
        return Ok(s);
    }
    let (flags, _) = parse_shebang(body).map_err(CmdError::msg)?;
    // Compile once here so syntax errors are reported (and not cached).
    let code = code_of(body);
    scripting::with_vm(&srv.scripts, |vm| vm.function(&sha, code, "@user_script"))
        .map_err(CmdError::msg)?
        .map_err(|e| CmdError::bytes(&[b"ERR Error compiling script (new function): ", &e]))?;
    Ok(srv.scripts.insert(Script {
        sha,
        body: body.into(),
        flags,
    }))
}

/// The code of a body: a shebang line is blanked, keeping line numbers.
fn code_of(body: &[u8]) -> &[u8] {
    if body.starts_with(b"#!") {
        let end = memchr::memchr(b'\n', body).unwrap_or(body.len());
        &body[end..]
    } else {
        body
    }
}

fn eval(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    split_keys(args)?;
    let script = cache_body(ctx.srv, args[1])?;
    run(ctx, args, &script, false)
}

fn eval_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    split_keys(args)?;
    let script = cache_body(ctx.srv, args[1])?;
    run(ctx, args, &script, true)
}

fn by_sha(ctx: &Ctx, sha: &[u8]) -> Result<std::sync::Arc<Script>, CmdError> {
    let found = match std::str::from_utf8(sha) {
        Ok(s) if !s.bytes().any(|c| c.is_ascii_uppercase()) => ctx.srv.scripts.get(s),
        _ => ctx
            .srv
            .scripts
            .get(&String::from_utf8_lossy(sha).to_ascii_lowercase()),
    };
    found.ok_or(CmdError::NoScript)
}

fn evalsha(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Not even shaped like a SHA1: NOSCRIPT before anything else, as Redis.
    if args[1].len() != 40 {
        return Err(CmdError::NoScript);
    }
    split_keys(args)?;
    let script = by_sha(ctx, args[1])?;
    run(ctx, args, &script, false)
}

fn evalsha_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args[1].len() != 40 {
        return Err(CmdError::NoScript);
    }
    split_keys(args)?;
    let script = by_sha(ctx, args[1])?;
    run(ctx, args, &script, true)
}

fn run(ctx: &mut Ctx, args: &[&[u8]], script: &Script, ro_command: bool) -> CmdResult {
    let (keys, argv) = split_keys(args)?;
    let read_only = ro_command || script.flags.no_writes;
    let sha = script.sha.as_str();
    let code = code_of(&script.body);
    script_host::run_script(
        ctx,
        keys,
        argv,
        script_host::RunSpec {
            flags: script.flags,
            read_only,
            is_function: false,
            sha,
        },
        |vm| {
            // (The body compiled when it was cached: this cannot fail on
            // its text.)
            vm.function(sha, code, "@user_script").map_err(|e| {
                format!(
                    "ERR Error compiling script (new function): {}",
                    String::from_utf8_lossy(&e)
                )
            })
        },
    )
}

fn script_load(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let script = cache_body(ctx.srv, args[2])?;
    ctx.out.bulk(script.sha.as_bytes());
    Ok(())
}

fn script_exists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let shas = &args[2..];
    ctx.out.array(shas.len());
    for s in shas {
        let sha = String::from_utf8_lossy(s).to_ascii_lowercase();
        ctx.out.int(ctx.srv.scripts.contains(&sha) as i64);
    }
    Ok(())
}

fn script_flush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => {}
        3 if eq_ic(args[2], "async") || eq_ic(args[2], "sync") => {}
        _ => {
            return Err(CmdError::msg(
                "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
            ))
        }
    }
    ctx.srv.scripts.flush();
    ctx.out.ok();
    Ok(())
}

fn script_kill(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    kill_running(ctx, false)
}

/// SCRIPT KILL / FUNCTION KILL.
pub fn kill_running(ctx: &mut Ctx, function: bool) -> CmdResult {
    let s = &ctx.srv.scripts;
    if !s.running() {
        return Err(CmdError::msg("NOTBUSY No scripts in execution right now."));
    }
    if s.wrote.load(Relaxed) {
        return Err(CmdError::msg("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."));
    }
    // SCRIPT KILL does not stop a function, nor FUNCTION KILL a script: the
    // answer names the one that would.
    if s.running_function.load(Relaxed) != function {
        return Err(script_host::busy_error(ctx.srv));
    }
    s.kill.store(true, Relaxed);
    ctx.out.ok();
    Ok(())
}

fn script_debug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if eq_ic(args[2], "no") {
        ctx.out.ok();
        return Ok(());
    }
    if eq_ic(args[2], "yes") || eq_ic(args[2], "sync") {
        return Err(CmdError::msg(
            "ERR Tessera does not provide the Lua debugger (SCRIPT DEBUG YES|SYNC)",
        ));
    }
    Err(CmdError::msg("ERR Use SCRIPT DEBUG YES/SYNC/NO"))
}

fn script_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    const LINES: &[&str] = &[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ];
    super::generic::help_lines(ctx, LINES)
}
