//! Functions: FCALL, FCALL_RO and FUNCTION (LOAD DELETE FLUSH LIST DUMP
//! RESTORE STATS KILL HELP). Libraries live in
//! [`crate::scripting::functions`]; running a function shares the EVAL path
//! ([`crate::server::script_host::run_script`]).

use std::sync::atomic::Ordering::Relaxed;

use super::args::eq_ic;
use super::flags::*;
use super::meta::{arg as a, ksflags::*, BeginSearch, FindKeys, KeySpecDef};
use super::scripting::numkeys_keys;
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::scripting::functions::{self as lib, Libraries, Library};
use crate::server::script_host::{run_script, RunSpec};
use crate::util::glob::glob_match;

/// A functions command: group `scripting`, ACL `@scripting`.
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

const FCALL_ARGS: &[a::Arg] = &[
    a::string("function"),
    a::integer("numkeys"),
    a::key("key", 0).optional().multiple(),
    a::string("arg").optional().multiple(),
];
const KEYNUM: FindKeys = FindKeys::Keynum {
    keynumidx: 0,
    firstkey: 1,
    keystep: 1,
};

pub static COMMANDS: &[CommandSpec] =
    &[
        cmd(
            "fcall",
            -3,
            NOSCRIPT
                | STALE
                | SKIP_MONITOR
                | NO_MANDATORY_KEYS
                | MAY_REPLICATE
                | RUNS_SCRIPT
                | NO_AUTO_PROPAGATE,
            "7.0.0",
            "Invokes a function.",
            fcall,
        )
        .complexity("Depends on the function that is executed.")
        .getkeys(numkeys_keys)
        .key_specs(&[
            KeySpecDef::new(RW | ACCESS | UPDATE, BeginSearch::Index(2), KEYNUM).notes(
                "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
            ),
        ])
        .args(FCALL_ARGS),
        cmd(
            "fcall_ro",
            -3,
            READONLY
                | NOSCRIPT
                | STALE
                | SKIP_MONITOR
                | NO_MANDATORY_KEYS
                | RUNS_SCRIPT
                | NO_AUTO_PROPAGATE,
            "7.0.0",
            "Invokes a read-only function.",
            fcall_ro,
        )
        .complexity("Depends on the function that is executed.")
        .getkeys(numkeys_keys)
        .key_specs(&[
            KeySpecDef::new(RO | ACCESS, BeginSearch::Index(2), KEYNUM).notes(
                "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
            ),
        ])
        .args(FCALL_ARGS),
        cmd(
            "function",
            -2,
            0,
            "7.0.0",
            "A container for function commands.",
            super::generic::container,
        )
        .acl(0)
        .complexity("Depends on subcommand.")
        .subcommands(FUNCTION_SUBS),
    ];

static FUNCTION_SUBS: &[CommandSpec] = &[
    cmd(
        "load",
        -3,
        WRITE | DENYOOM | NOSCRIPT | REWRITES_EFFECTS,
        "7.0.0",
        "Creates a library.",
        function_load,
    )
    .complexity("O(1) (considering compilation time is redundant)")
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .args(&[
        a::pure("replace", "REPLACE").optional(),
        a::string("function-code"),
    ]),
    cmd(
        "delete",
        3,
        WRITE | NOSCRIPT | REWRITES_EFFECTS,
        "7.0.0",
        "Deletes a library and its functions.",
        function_delete,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .args(&[a::string("library-name")]),
    cmd(
        "flush",
        -2,
        WRITE | NOSCRIPT | REWRITES_EFFECTS,
        "7.0.0",
        "Deletes all libraries and functions.",
        function_flush,
    )
    .complexity("O(N) where N is the number of functions deleted")
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .args(&[a::oneof(
        "async",
        &[a::pure("async", "ASYNC"), a::pure("sync", "SYNC")],
    )
    .optional()]),
    cmd(
        "list",
        -2,
        NOSCRIPT,
        "7.0.0",
        "Returns information about all libraries.",
        function_list,
    )
    .complexity("O(N) where N is the number of functions")
    .tips(&["nondeterministic_output_order"])
    .args(&[
        a::string("library-name-pattern")
            .token("LIBRARYNAME")
            .optional(),
        a::pure("withcode", "WITHCODE").optional(),
    ]),
    cmd(
        "dump",
        2,
        NOSCRIPT,
        "7.0.0",
        "Dumps all libraries into a serialized binary payload.",
        function_dump,
    )
    .complexity("O(N) where N is the number of functions"),
    cmd(
        "restore",
        -3,
        WRITE | DENYOOM | NOSCRIPT | REWRITES_EFFECTS,
        "7.0.0",
        "Restores all libraries from a payload.",
        function_restore,
    )
    .complexity("O(N) where N is the number of functions on the payload")
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .args(&[
        a::string("serialized-value"),
        a::oneof(
            "policy",
            &[
                a::pure("flush", "FLUSH"),
                a::pure("append", "APPEND"),
                a::pure("replace", "REPLACE"),
            ],
        )
        .optional(),
    ]),
    cmd(
        "stats",
        2,
        NOSCRIPT | ALLOW_BUSY,
        "7.0.0",
        "Returns information about a function during execution.",
        function_stats,
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ]),
    cmd(
        "kill",
        2,
        NOSCRIPT | ALLOW_BUSY,
        "7.0.0",
        "Terminates a function during execution.",
        function_kill,
    )
    .tips(&["request_policy:all_shards", "response_policy:one_succeeded"]),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "7.0.0",
        "Returns helpful text about the different subcommands.",
        function_help,
    ),
];

fn fcall(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    call_function(ctx, args, false)
}

fn fcall_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    call_function(ctx, args, true)
}

fn call_function(ctx: &mut Ctx, args: &[&[u8]], ro_command: bool) -> CmdResult {
    let found = ctx
        .srv
        .scripts
        .libraries
        .lock()
        .function(&String::from_utf8_lossy(args[1]));
    let Some((library, meta)) = found else {
        return Err(CmdError::msg("ERR Function not found"));
    };
    // (Function names are case-insensitive: from here on, the one registered.)
    let name = meta.name.clone();
    let n =
        super::args::int(args[2]).map_err(|_| CmdError::msg("ERR Bad number of keys provided"))?;
    if n > (args.len() - 3) as i64 {
        return Err(CmdError::msg(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if n < 0 {
        return Err(CmdError::msg("ERR Number of keys can't be negative"));
    }
    let (keys, argv) = args[3..].split_at(n as usize);
    *ctx.srv.scripts.running_info.lock() = Some((
        name.clone(),
        args.iter().map(|a| a.to_vec()).collect(),
        std::time::Instant::now(),
    ));
    let result = run_script(
        ctx,
        keys,
        argv,
        RunSpec {
            flags: meta.flags,
            read_only: ro_command || meta.flags.no_writes,
            is_function: true,
            sha: &name,
        },
        |vm| lib::callback(vm, &library, &name),
    );
    *ctx.srv.scripts.running_info.lock() = None;
    result
}

/// Replaces the library registry through `f`; on success every thread's
/// Lua state is rebuilt to match.
fn change_libraries<R>(
    ctx: &mut Ctx,
    f: impl FnOnce(&mut Libraries) -> Result<R, String>,
) -> Result<R, CmdError> {
    let r = {
        let mut libs = ctx.srv.scripts.libraries.lock();
        f(&mut libs).map_err(CmdError::msg)?
    };
    ctx.srv.scripts.generation.fetch_add(1, Relaxed);
    // As Redis: a change of the libraries is propagated as the command.
    ctx.force_propagate(crate::keyspace::effects::target::ALL);
    Ok(r)
}

/// Loads and validates a library's code (in this thread's Lua state).
/// `bounded`: FUNCTION LOAD's 500 ms limit applies (not to RESTORE, as in
/// Redis).
fn compile_library(ctx: &Ctx, code: &[u8], bounded: bool) -> Result<Library, CmdError> {
    let name = lib::parse_metadata(code).map_err(CmdError::msg)?;
    let (library, _) =
        crate::scripting::with_vm(&ctx.srv.scripts, |vm| lib::load(vm, &name, code, bounded))
            .map_err(CmdError::msg)?
            .map_err(CmdError::Bytes)?;
    Ok(library)
}

fn function_load(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Options come before the code, which is always the last argument.
    let code = args[args.len() - 1];
    let mut replace = false;
    for opt in &args[2..args.len() - 1] {
        if eq_ic(opt, "replace") {
            replace = true;
        } else {
            return Err(CmdError::bytes(&[
                b"ERR Unknown option given: ",
                super::args::c_bytes(opt),
            ]));
        }
    }
    if let Ok(name) = lib::parse_metadata(code) {
        if !replace && ctx.srv.scripts.libraries.lock().libs.contains_key(&name) {
            return Err(CmdError::msg(format!(
                "ERR Library '{name}' already exists"
            )));
        }
    }
    let library = compile_library(ctx, code, true)?;
    let name = library.name.clone();
    change_libraries(ctx, |libs| libs.add(library, replace))?;
    ctx.out.bulk(name.as_bytes());
    Ok(())
}

fn function_delete(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = String::from_utf8_lossy(args[2]).into_owned();
    change_libraries(ctx, |libs| {
        libs.remove(&name)
            .map(|_| ())
            .ok_or_else(|| "ERR Library not found".to_string())
    })?;
    ctx.out.ok();
    Ok(())
}

/// Redis's reply to extra arguments after a FUNCTION subcommand that takes
/// optional ones: the subcommand named as typed (at most 128 bytes).
fn subcommand_syntax_error(args: &[&[u8]]) -> CmdError {
    super::subcommand_syntax_error(args)
}

fn function_flush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(subcommand_syntax_error(args));
    }
    match args.len() {
        2 => {}
        3 if eq_ic(args[2], "async") || eq_ic(args[2], "sync") => {}
        _ => {
            return Err(CmdError::msg(
                "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
            ))
        }
    }
    change_libraries(ctx, |libs| {
        *libs = Libraries::default();
        Ok(())
    })?;
    ctx.out.ok();
    Ok(())
}

fn function_list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut pattern: Option<&[u8]> = None;
    let mut with_code = false;
    let mut i = 2;
    while i < args.len() {
        // (As in Redis, an option given a second time is an unknown argument.)
        if !with_code && eq_ic(args[i], "withcode") {
            with_code = true;
        } else if pattern.is_none() && eq_ic(args[i], "libraryname") {
            let Some(p) = args.get(i + 1) else {
                return Err(CmdError::msg("ERR library name argument was not given"));
            };
            pattern = Some(p);
            i += 1;
        } else {
            // Redis builds this message as an sds error: CR and LF in the
            // argument become spaces, even at the end (no trimming).
            let shown: Vec<u8> = args[i]
                .iter()
                .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
                .collect();
            return Err(CmdError::bytes(&[
                b"ERR Unknown argument ",
                super::args::c_bytes(&shown),
            ]));
        }
        i += 1;
    }
    let libs: Vec<std::sync::Arc<Library>> = ctx
        .srv
        .scripts
        .libraries
        .lock()
        .libs
        .values()
        .filter(|l| pattern.is_none_or(|p| glob_match(p, l.name.as_bytes(), true)))
        .cloned()
        .collect();
    let out = &mut *ctx.out;
    out.array(libs.len());
    for l in &libs {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(l.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(l.functions.len());
        for f in &l.functions {
            out.map(3);
            out.bulk(b"name");
            out.bulk(f.name.as_bytes());
            out.bulk(b"description");
            match &f.description {
                Some(d) => out.bulk(d.as_bytes()),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names = f.flags.names();
            out.set(names.len());
            for n in names {
                out.simple(n.as_bytes());
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&l.code);
        }
    }
    Ok(())
}

fn function_dump(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let payload = lib::dump(&ctx.srv.scripts.libraries.lock());
    ctx.out.bulk(&payload);
    Ok(())
}

fn function_restore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    #[derive(PartialEq)]
    enum Policy {
        Flush,
        Append,
        Replace,
    }
    if args.len() > 4 {
        return Err(subcommand_syntax_error(args));
    }
    let policy =
        match args.get(3) {
            None => Policy::Append,
            Some(p) if eq_ic(p, "flush") => Policy::Flush,
            Some(p) if eq_ic(p, "append") => Policy::Append,
            Some(p) if eq_ic(p, "replace") => Policy::Replace,
            Some(_) => return Err(CmdError::msg(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
        };
    let codes = lib::parse_dump(args[2]).map_err(CmdError::msg)?;
    let mut loaded = Vec::new();
    for code in &codes {
        loaded.push(compile_library(ctx, code, false)?);
    }
    change_libraries(ctx, |libs| {
        let mut next = if policy == Policy::Flush {
            Libraries::default()
        } else {
            Libraries {
                libs: libs.libs.clone(),
                functions: libs.functions.clone(),
            }
        };
        for l in loaded {
            let name = l.name.clone();
            next.add(l, policy == Policy::Replace).map_err(|e| {
                // RESTORE words the collision without quotes.
                if e.starts_with("ERR Library '") {
                    format!("ERR Library {name} already exists")
                } else {
                    e
                }
            })?;
        }
        *libs = next;
        Ok(())
    })?;
    ctx.out.ok();
    Ok(())
}

fn function_stats(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    // Redis answers with the busy error while an EVAL script (not a
    // function) is past the busy threshold.
    if ctx.srv.keyspace.busy.load(Relaxed) && !ctx.srv.scripts.running_function.load(Relaxed) {
        return Err(crate::server::script_host::busy_error(ctx.srv));
    }
    let running = ctx.srv.scripts.running_info.lock().clone();
    let (nlibs, nfuncs) = {
        let libs = ctx.srv.scripts.libraries.lock();
        (libs.libs.len(), libs.function_count())
    };
    let out = &mut *ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    match running {
        Some((name, argv, started)) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(name.as_bytes());
            out.bulk(b"command");
            out.array(argv.len());
            for a in &argv {
                out.bulk(a);
            }
            out.bulk(b"duration_ms");
            out.int(started.elapsed().as_millis() as i64);
        }
        None => out.null(),
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(nlibs as i64);
    out.bulk(b"functions_count");
    out.int(nfuncs as i64);
    Ok(())
}

fn function_kill(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::scripting::kill_running(ctx, true)
}

fn function_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    const LINES: &[&str] = &[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ];
    super::generic::help_lines(ctx, LINES)
}

/// Compiles one library's code found in an RDB file.
fn compile_rdb_library(
    srv: &crate::server::state::ServerState,
    code: &[u8],
) -> Result<Library, String> {
    let name = lib::parse_metadata(code)?;
    let (library, _) =
        crate::scripting::with_vm(&srv.scripts, |vm| lib::load(vm, &name, code, false))?
            .map_err(|e| String::from_utf8_lossy(&e).into_owned())?;
    Ok(library)
}

/// A set of libraries compiled from their code (an RDB's, loaded aside
/// to replace the live set at once).
pub fn build_libraries(
    srv: &crate::server::state::ServerState,
    codes: &[Vec<u8>],
) -> Result<Libraries, String> {
    let mut libraries = Libraries::default();
    for code in codes {
        libraries.add(compile_rdb_library(srv, code)?, false)?;
    }
    Ok(libraries)
}

/// Loads one library's code found in an RDB file (start-up, DEBUG RELOAD):
/// a name already loaded is an error unless `replace`, as in Redis.
pub fn restore_library(
    srv: &crate::server::state::ServerState,
    code: &[u8],
    replace: bool,
) -> Result<(), String> {
    let library = compile_rdb_library(srv, code)?;
    srv.scripts.libraries.lock().add(library, replace)?;
    srv.scripts.generation.fetch_add(1, Relaxed);
    Ok(())
}
