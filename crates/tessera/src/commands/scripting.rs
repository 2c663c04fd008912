//! Scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT. The Lua engine
//! lives in [`crate::scripting`]; this module parses the commands, takes the
//! locks that make a script atomic, and runs it.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use smallvec::SmallVec;
use tessera_resp::encode::{Protocol, ReplyBuf};

use super::args::{eq_ic, int};
use super::flags::*;
use super::meta::{arg as a, ksflags::*, BeginSearch, FindKeys, KeySpecDef};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::{shard_of, AbortableWaits};
use crate::scripting::convert::ScriptError;
use crate::scripting::{self, convert, parse_shebang, Script, ScriptFlags};
use crate::server::client::{Client, ReplyMode};
use crate::server::dispatch;
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

/// The error a command gets while a script runs past busy-reply-threshold.
pub fn busy_error(srv: &ServerState) -> CmdError {
    CmdError::Busy {
        function: srv.scripts.running_function.load(Relaxed),
    }
}

/// Whether a command runs scripts (and so must hold the script lock).
pub fn runs_scripts(spec: &CommandSpec) -> bool {
    spec.has(RUNS_SCRIPT)
}

/// Serialises scripts (and transactions containing them): the one party
/// allowed to wait for a shard while holding others. Waits give up with
/// BUSY while another script is busy.
pub fn lock_scripts(srv: &ServerState) -> parking_lot::MutexGuard<'_, ()> {
    srv.script_lock.lock()
}

fn lock_scripts_or_busy(srv: &ServerState) -> Result<parking_lot::MutexGuard<'_, ()>, CmdError> {
    loop {
        if let Some(g) = srv.script_lock.try_lock_for(Duration::from_millis(5)) {
            return Ok(g);
        }
        if srv.keyspace.busy.load(Relaxed) {
            return Err(busy_error(srv));
        }
    }
}

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
    if script.flags.shebang && !script.flags.no_writes && ro_command {
        return Err(CmdError::msg(
            "ERR Can not execute a script with write flag using *_ro command.",
        ));
    }
    let sha = script.sha.as_str();
    let code = code_of(&script.body);
    run_function(
        ctx,
        keys,
        argv,
        RunSpec {
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

/// What kind of script is run, and how.
pub struct RunSpec<'a> {
    pub flags: ScriptFlags,
    pub read_only: bool,
    pub is_function: bool,
    /// The script's SHA (or function name) for error texts.
    pub sha: &'a str,
}

/// State `redis.call` needs while a script runs.
struct CallState<'s, 'c> {
    srv: &'s ServerState,
    client: &'c mut Client,
    read_only: bool,
    allow_oom: bool,
    now_ms: i64,
    started: quanta::Instant,
    threshold_ms: u64,
    worker_index: usize,
    /// The reply of the latest `redis.call` (or its error text), read by
    /// the Lua side after the call's Rust part has returned.
    scratch: ReplyBuf,
    /// Text of number arguments of the current `redis.call`.
    numbers: Vec<u8>,
    /// Used memory was over maxmemory when the script started.
    oom_at_start: bool,
    /// The last `redis.call` failed with an error already counted in the
    /// error statistics (a rejection, or the command's own error).
    error_counted: bool,
}

thread_local! {
    /// `CallState::scratch`'s buffer between runs, so a run allocates none.
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

thread_local! {
    /// The script running on this thread: a [`CallState`] with its
    /// lifetimes erased, set by [`CurrentRun`] for the length of the run.
    static CURRENT: Cell<*mut ()> = const { Cell::new(std::ptr::null_mut()) };
}

/// Publishes a run's state to the `redis.call` functions and the timeout
/// hook (created once per Lua state, so they cannot borrow it) and takes it
/// back when dropped.
struct CurrentRun;

impl CurrentRun {
    fn start(state: &mut CallState) -> CurrentRun {
        CURRENT.with(|c| c.set(state as *mut CallState as *mut ()));
        IN_SCRIPT.with(|c| c.set(true));
        FROZEN_NOW_MS.with(|c| c.set(Some(state.now_ms)));
        CurrentRun
    }
}

impl Drop for CurrentRun {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(std::ptr::null_mut()));
        IN_SCRIPT.with(|c| c.set(false));
        FROZEN_NOW_MS.with(|c| c.set(None));
    }
}

thread_local! {
    /// Whether a script runs on this thread (its commands show as "lua" in
    /// MONITOR).
    static IN_SCRIPT: Cell<bool> = const { Cell::new(false) };
    /// The time the running script's keys expire by (its start: a script
    /// sees the clock stopped).
    static FROZEN_NOW_MS: Cell<Option<i64>> = const { Cell::new(None) };
    /// The protocol of the client running the script (what it is sent
    /// directly, like pub/sub messages, is encoded in it).
    static CALLER_PROTOCOL: Cell<Protocol> = const { Cell::new(Protocol::Resp2) };
}

thread_local! {
    /// A read-only command ran inside the running script.
    static SCRIPT_READ: Cell<bool> = const { Cell::new(false) };
}

/// Notes that the running script read keys: for a tracking client, Redis
/// then remembers the keys the script declared (not those it read).
pub fn note_script_read() {
    SCRIPT_READ.with(|r| r.set(true));
}

/// Whether the script that just ran replied with an error counted earlier
/// (one a redis.call returned): its command failed all the same.
pub fn take_quiet_failure() -> bool {
    convert::take_quiet_failure()
}

/// The protocol of the client whose script runs on this thread.
pub fn caller_protocol() -> Protocol {
    CALLER_PROTOCOL.with(|c| c.get())
}

/// The clock of the script running on this thread, if one runs: clients
/// served from its hook while it is busy judge expiry in the shards it
/// holds by it, as the script does.
pub fn frozen_now_ms() -> Option<i64> {
    FROZEN_NOW_MS.with(|c| c.get())
}

/// Whether the command being run on this thread comes from a script.
pub fn in_script() -> bool {
    IN_SCRIPT.with(|c| c.get())
}

/// Sets whether this thread runs a script's commands; returns the old value
/// (clients served during a busy script are not the script).
pub fn set_in_script(on: bool) -> bool {
    IN_SCRIPT.with(|c| c.replace(on))
}

/// Runs `f` on the current run's state, if a script is running here.
fn with_current<R>(f: impl FnOnce(&mut CallState) -> R) -> Option<R> {
    // Taken out while in use, so a nested use finds nothing instead of
    // aliasing it.
    let p = CURRENT.with(|c| c.replace(std::ptr::null_mut()));
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` was set by `CurrentRun::start` from a `CallState` that
    // lives on the stack of `run_function`, which drops the `CurrentRun`
    // (clearing the pointer) before that state goes away; the pointer is
    // thread-local and taken out above, so this is the only reference.
    let st = unsafe { &mut *(p as *mut CallState<'static, 'static>) };
    let r = f(st);
    CURRENT.with(|c| c.set(p));
    Some(r)
}

const NOT_RUNNING: &[u8] = b"ERR redis.call can only be used while a script runs";

/// Installs `redis.call`, `redis.pcall` and the timeout hook in a new Lua
/// state; they act on whichever script is running on this thread.
pub fn install_calls(
    lua: &mlua::Lua,
    internals: &mlua::Table,
    redis: &mlua::Table,
) -> mlua::Result<()> {
    // SAFETY (of `create_c_function`): both functions follow the Lua C API
    // contract (see `redis_call`): they read only their own arguments and
    // leave exactly the results they report on the stack.
    let (raw_call, raising_call) = unsafe {
        (
            lua.create_c_function(lua_redis_pcall)?,
            lua.create_c_function(lua_redis_call)?,
        )
    };
    let wrap: mlua::Function = internals.raw_get("wrap_calls")?;
    wrap.call::<()>((redis.clone(), raw_call, raising_call))?;
    Ok(())
}

/// Instructions between two looks at the clock and the kill flag.
const HOOK_EVERY: c_int = 100_000;
/// What a killed script raises (the prelude turns it into Redis's error).
const KILLED: &std::ffi::CStr = c"\x01tessera:ERR Script killed by user with SCRIPT KILL...";
/// What a library whose loading runs too long raises.
const LOAD_TIMED_OUT: &std::ffi::CStr = c"\x01tessera:ERR FUNCTION LOAD timeout";
/// How long a library's top-level code may run (Redis's limit).
pub const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

thread_local! {
    /// When the FUNCTION LOAD running on this thread must have finished.
    static LOAD_DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The chunk name of the prelude of the state last armed here.
    static PRELUDE_SOURCE: Cell<*const std::ffi::c_char> = const { Cell::new(std::ptr::null()) };
}

/// Bounds the library loading `f` runs to [`LOAD_TIMEOUT`].
pub fn with_load_deadline<R>(f: impl FnOnce() -> R) -> R {
    /// Clears the deadline however `f` ends (a stale one would stop every
    /// later script on this thread).
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            LOAD_DEADLINE.with(|d| d.set(None));
        }
    }
    LOAD_DEADLINE.with(|d| d.set(Some(Instant::now() + LOAD_TIMEOUT)));
    let _clear = Clear;
    f()
}

/// Installs the timeout hook on a Lua state, counting [`HOOK_EVERY`]
/// instructions. Called before each run, so a state left raising at every
/// instruction by a killed script starts afresh.
///
/// # Safety
/// `state` must be a live Lua state of this thread; `prelude_source` its
/// prelude's chunk name as `lua_getinfo` reports it.
pub unsafe fn arm_timeout_hook(
    state: *mut mlua::ffi::lua_State,
    prelude_source: *const std::ffi::c_char,
) {
    PRELUDE_SOURCE.with(|p| p.set(prelude_source));
    // SAFETY: the caller passes a live state; setting a hook is plain
    // assignment of its fields.
    unsafe {
        mlua::ffi::lua_sethook(
            state,
            Some(timeout_hook),
            mlua::ffi::LUA_MASKCOUNT,
            HOOK_EVERY,
        )
    };
}

/// The timeout hook. A plain C hook rather than mlua's, because coroutines
/// inherit their creator's hook and mlua's removes itself from every state
/// but the one it was set on: a loop inside a coroutine could never be
/// stopped. Once it has raised (SCRIPT KILL, or a library that loads too
/// long) it fires at every instruction of that state and raises again, as
/// Redis's line hook does, so a pcall that catches the error cannot keep
/// the script going: the error reaches the top.
///
/// It raises only in the script's own code: the prelude's wrappers (pcall,
/// loadstring, the runner FUNCTION LOAD uses) stand where Redis has C
/// functions, and an error raised there would escape the error handler.
unsafe extern "C-unwind" fn timeout_hook(
    state: *mut mlua::ffi::lua_State,
    ar: *mut mlua::ffi::lua_Debug,
) {
    use mlua::ffi;
    let Some(msg) = std::panic::catch_unwind(hook_verdict).unwrap_or(None) else {
        return;
    };
    // SAFETY: Lua calls the hook with a live state and its activation
    // record. No Rust value with a destructor is alive here when lua_error
    // unwinds out of the hook.
    unsafe {
        // (Only this state, as in Redis: a script whose coroutine caught
        // the error goes on until its own next look.)
        ffi::lua_sethook(state, Some(timeout_hook), ffi::LUA_MASKCOUNT, 1);
        // (By pointer: a chunk a script loads cannot share the prelude's
        // interned name, see the prelude's `own_name`.)
        if ffi::lua_getinfo(state, c"S".as_ptr(), ar) != 0
            && std::ptr::eq((*ar).source, PRELUDE_SOURCE.with(|p| p.get()))
        {
            return;
        }
        ffi::lua_pushstring(state, msg.as_ptr());
        ffi::lua_error(state);
    }
}

/// What the hook must raise, if anything: marks the script busy past the
/// threshold, serves this thread's parked clients while it is, and reports
/// a kill or a load that ran out of time.
fn hook_verdict() -> Option<&'static std::ffi::CStr> {
    if let Some(deadline) = LOAD_DEADLINE.with(|d| d.get()) {
        return (Instant::now() >= deadline).then_some(LOAD_TIMED_OUT);
    }
    with_current(|st| {
        let srv = st.srv;
        if st.threshold_ms > 0
            && st.started.elapsed() >= Duration::from_millis(st.threshold_ms)
            && !srv.keyspace.busy.load(Relaxed)
        {
            srv.keyspace.busy.store(true, Relaxed);
            srv.scripts.busy_worker.store(st.worker_index, Relaxed);
        }
        if srv.keyspace.busy.load(Relaxed) {
            // Redis serves other clients during a busy script; those
            // parked on this thread can only be served from here.
            crate::server::parked::pump(srv);
        }
        // (Redis names SCRIPT KILL for functions too.)
        srv.scripts.kill.load(Relaxed).then_some(KILLED)
    })
    .flatten()
}

/// Runs a Lua function (an EVAL body or an FCALL target) atomically with
/// `keys`/`argv` and writes its reply.
pub fn run_function(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    argv: &[&[u8]],
    spec: RunSpec,
    get_fn: impl FnOnce(&mut scripting::Vm) -> Result<std::ffi::c_int, String>,
) -> CmdResult {
    let srv = ctx.srv;
    if !spec.flags.allow_oom
        && !spec.read_only
        && spec.flags.shebang
        && srv.config.maxmemory() > 0
        && srv.used_memory() > srv.config.maxmemory()
    {
        return Err(CmdError::Oom);
    }
    // Scripts run one at a time; a transaction running this script already
    // holds the lock (and its shards).
    let in_exec = ctx.client.multi.in_exec;
    let _script_guard = if in_exec {
        None
    } else {
        Some(lock_scripts_or_busy(srv)?)
    };
    let _held = if in_exec {
        None
    } else {
        let shards: SmallVec<[usize; 4]> = keys.iter().map(|k| shard_of(k)).collect();
        let mut idxs = shards.clone();
        idxs.sort_unstable();
        idxs.dedup();
        let held = srv.keyspace.hold(&idxs);
        let declared = keys.iter().copied().zip(shards.iter().copied());
        srv.keyspace.prefetch_held(ctx.client.db, declared.take(8));
        Some(held)
    };
    // The script itself must wait for what it touches, never give up.
    let _not_abortable = AbortableWaits::new(false);

    let saved_db = ctx.client.db;
    let saved_mode = ctx.client.reply_mode;
    ctx.client.reply_mode = ReplyMode::On;
    ctx.client.multi.in_exec = true;
    srv.scripts.kill.store(false, Relaxed);
    srv.scripts.wrote.store(false, Relaxed);
    // (A clock of 0 would read as "none runs".)
    srv.scripts.clock_ms.store(ctx.now_ms.max(1), Relaxed);
    srv.scripts
        .running_function
        .store(spec.is_function, Relaxed);
    convert::SCRIPT_RESP.with(|r| r.set(2));

    let worker_index = srv
        .workers
        .iter()
        .position(|w| std::sync::Arc::ptr_eq(w, &ctx.client.worker))
        .unwrap_or(usize::MAX);
    let Ctx {
        client,
        out,
        now_ms,
        ..
    } = ctx;
    let mut state = CallState {
        srv,
        client,
        read_only: spec.read_only,
        allow_oom: spec.flags.allow_oom,
        now_ms: *now_ms,
        started: quanta::Instant::now(),
        threshold_ms: srv.config.busy_reply_threshold(),
        worker_index,
        scratch: ReplyBuf {
            buf: SCRATCH.with(|b| b.take()),
            protocol: Protocol::Resp2,
        },
        numbers: Vec::new(),
        oom_at_start: srv.config.maxmemory() > 0 && srv.used_memory() > srv.config.maxmemory(),
        error_counted: false,
    };
    let out: &mut ReplyBuf = out;
    CALLER_PROTOCOL.with(|c| c.set(out.protocol));
    SCRIPT_READ.with(|r| r.set(false));
    let result = {
        let _current = CurrentRun::start(&mut state);
        scripting::with_vm(&srv.scripts, |vm| -> Result<Option<ScriptError>, String> {
            let f = get_fn(vm)?;
            let mark = out.buf.len();
            match vm.run_with_args(f, keys, argv, spec.is_function, out) {
                Ok(Ok(())) => Ok(None),
                Ok(Err(e)) => Ok(Some(e)),
                Err(e) => {
                    // (A memory error can stop a reply half-written.)
                    out.buf.truncate(mark);
                    Err(e)
                }
            }
        })
    };
    // (Still holding the declared keys' shards: no write can slip between
    // the script's reads and this.)
    if SCRIPT_READ.with(|r| r.replace(false)) && state.client.tracking.on {
        crate::server::tracking::remember_keys(srv, state.client, keys);
    }
    let mut scratch = std::mem::take(&mut state.scratch.buf);
    scratch.clear();
    if scratch.capacity() <= 64 * 1024 {
        SCRATCH.with(|b| b.set(scratch));
    }
    ctx.client.db = saved_db;
    ctx.client.info.db.store(saved_db, Relaxed);
    ctx.client.reply_mode = saved_mode;
    ctx.client.multi.in_exec = in_exec;
    srv.scripts.clock_ms.store(0, Relaxed);
    srv.scripts.running_function.store(false, Relaxed);
    if srv.keyspace.busy.load(Relaxed) {
        srv.keyspace.busy.store(false, Relaxed);
        srv.scripts.busy_worker.store(usize::MAX, Relaxed);
    }
    srv.scripts.kill.store(false, Relaxed);

    // Error replies in what the script returned count now, as Redis counts
    // them when it writes them (those from redis.call already did).
    for code in convert::take_uncounted_errors() {
        ctx.client.worker.count_error(&code);
    }
    match result {
        Err(e) | Ok(Err(e)) => Err(CmdError::msg(e)),
        Ok(Ok(None)) => Ok(()),
        Ok(Ok(Some((msg, src, counted)))) => {
            // Redis's "-%s script: ..., on ...": the message's bytes as
            // the script gave them.
            let mut text = convert::error_text(&msg);
            if let Some((source, line)) = src {
                text.extend_from_slice(
                    format!(" script: {}, on {}:{}.", spec.sha, source, line).as_bytes(),
                );
            }
            Err(if counted {
                CmdError::Counted(text)
            } else {
                CmdError::Bytes(text)
            })
        }
    }
}

/// `redis.call`: raises the command's error.
unsafe extern "C-unwind" fn lua_redis_call(state: *mut mlua::ffi::lua_State) -> c_int {
    // SAFETY: called by Lua with a valid state (the C function contract).
    unsafe { redis_call(state, true) }
}

/// `redis.pcall`: returns the command's error as an `{err=...}` table.
unsafe extern "C-unwind" fn lua_redis_pcall(state: *mut mlua::ffi::lua_State) -> c_int {
    // SAFETY: as for `lua_redis_call`.
    unsafe { redis_call(state, false) }
}

/// One `redis.call` / `redis.pcall`, straight on the Lua stack: the
/// arguments are borrowed from the Lua strings (no copies, no mlua values)
/// and the reply is pushed from its RESP bytes. This path is the whole cost
/// of a script like the whitepaper's EVALSHA row, and going through mlua
/// values made it ~20% slower per call than redis-server's (see
/// docs/benchmarks.md).
///
/// The work is split in two so that a Lua error (a longjmp in the vendored
/// Lua 5.1) can never skip a Rust destructor: phase one runs the command
/// and calls no Lua function that can raise; it leaves the reply (or the
/// error text) in the run's scratch buffer, which lives on the stack of
/// `run_function` for the whole script. Phase two only reads that buffer
/// through a borrowed slice while it pushes values or raises.
///
/// # Safety
/// `state` must be the Lua state that called this C function.
unsafe fn redis_call(state: *mut mlua::ffi::lua_State, raise: bool) -> c_int {
    use mlua::ffi;
    // Phase one.
    let outcome = with_current(|st| {
        // A panic must not unwind through Lua's C frames (Lua's own state
        // would be left half-unwound): it becomes the call's error.
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: `state` is valid (caller contract); `call_on_stack`
            // borrows stack values only while they stay on the stack.
            unsafe { call_on_stack(state, st) }
        }));
        let ok = ok.unwrap_or_else(|_| {
            crate::server::log::warning("a command called from a script failed internally");
            st.scratch.buf.clear();
            st.scratch
                .buf
                .extend_from_slice(b"ERR internal error running the command from the script");
            st.error_counted = false;
            false
        });
        // A command's error reply was counted by the dispatcher.
        let counted = if ok { true } else { st.error_counted };
        let buf = &st.scratch.buf;
        (ok, buf.as_ptr(), buf.len(), counted)
    });
    let (ok, ptr, len, counted) = match outcome {
        Some(o) => o,
        None => (false, NOT_RUNNING.as_ptr(), NOT_RUNNING.len(), false),
    };
    // Phase two.
    // SAFETY: `ptr..ptr+len` is the scratch buffer of the running script
    // (or a static text); nothing writes to it until the next redis.call,
    // which cannot start before this function returns or raises.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    let error: Option<&[u8]> = if !ok {
        Some(bytes)
    } else {
        convert::reply_error_text(bytes)
    };
    // SAFETY: valid state; only borrowed data is live from here on.
    unsafe {
        match error {
            // Raised as the {err=...} table Redis raises (the error handler
            // adds the script line; pcall hands scripts the text).
            Some(text) if raise => {
                ffi::lua_settop(state, 0);
                convert::push_error_table(state, text, counted);
                ffi::lua_error(state)
            }
            Some(text) => {
                ffi::lua_settop(state, 0);
                convert::push_error_table(state, text, counted);
            }
            None => {
                ffi::lua_settop(state, 0);
                convert::push_reply(state, bytes);
            }
        }
    }
    1
}

/// Phase one of a `redis.call`: checks the arguments on the stack, runs the
/// command and leaves its reply in `st.scratch` (true), or leaves an error
/// text there (false). Calls no Lua function that can raise.
///
/// # Safety
/// `state` must be a valid Lua state.
unsafe fn call_on_stack(state: *mut mlua::ffi::lua_State, st: &mut CallState) -> bool {
    use mlua::ffi;
    /// An error of the Lua call itself, before any command is looked at
    /// (counted only if the script replies with it).
    fn fail(st: &mut CallState, msg: &str) -> bool {
        st.scratch.buf.clear();
        st.scratch.buf.extend_from_slice(msg.as_bytes());
        st.error_counted = false;
        false
    }
    /// A command refused from the script: counted at once in errorstats,
    /// and as a rejected call of the command when it is known, as Redis
    /// counts it.
    fn reject(
        scratch: &mut ReplyBuf,
        counted: &mut bool,
        worker: &crate::server::stats::WorkerStats,
        id: Option<usize>,
        msg: &str,
    ) -> bool {
        worker.count_error(dispatch::error_code(msg));
        worker.errors_since_last_look();
        if let Some(id) = id {
            worker.commands[id].rejected.add(1);
        }
        scratch.buf.clear();
        scratch.buf.extend_from_slice(msg.as_bytes());
        *counted = true;
        false
    }
    // SAFETY (all FFI calls below): `state` is valid; lua_gettop, lua_type,
    // lua_tonumber and lua_tolstring on a string value never raise or
    // allocate.
    let n = unsafe { ffi::lua_gettop(state) };
    if n <= 0 {
        return fail(
            st,
            "ERR Please specify at least one argument for this redis lib call",
        );
    }
    // Numbers are sent as C's %.17g prints them, as Redis 7.0 does (Lua's
    // own tostring would round to 14 digits).
    st.numbers.clear();
    let mut number_ends: SmallVec<[usize; 4]> = SmallVec::new();
    for i in 1..=n {
        match unsafe { ffi::lua_type(state, i) } {
            ffi::LUA_TSTRING => {}
            ffi::LUA_TNUMBER => {
                let v = unsafe { ffi::lua_tonumber(state, i) };
                crate::util::numbers::format_f64(v, &mut st.numbers);
                number_ends.push(st.numbers.len());
            }
            _ => {
                return fail(
                    st,
                    "ERR Lua redis lib command arguments must be strings or integers",
                )
            }
        }
    }
    let mut args: SmallVec<[&[u8]; 8]> = SmallVec::new();
    let (mut number_at, mut number_idx) = (0, 0);
    for i in 1..=n {
        if unsafe { ffi::lua_type(state, i) } == ffi::LUA_TSTRING {
            let mut len = 0usize;
            let p = unsafe { ffi::lua_tolstring(state, i, &mut len) };
            // SAFETY: a Lua string's bytes stay put while it is on the
            // stack, which it is until this redis.call returns.
            args.push(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) });
        } else {
            let end = number_ends[number_idx];
            args.push(&st.numbers[number_at..end]);
            number_at = end;
            number_idx += 1;
        }
    }
    let rules = dispatch::ScriptRules {
        read_only: st.read_only,
        allow_oom: st.allow_oom,
        oom_at_start: st.oom_at_start,
    };
    let caller = dispatch::Caller::Script(rules);
    let admitted = dispatch::resolve(&args, caller).and_then(|found| {
        dispatch::admit(st.srv, st.client, found.id, found.spec, caller, false)
            .map(|()| (found.id, found.spec))
            .map_err(|e| (Some(found.id), e))
    });
    let (id, spec) = match admitted {
        Ok(target) => target,
        // (The fields it needs, by name: the arguments borrow `numbers`.)
        Err((id, e)) => {
            return reject(
                &mut st.scratch,
                &mut st.error_counted,
                &st.client.worker,
                id,
                &e.to_string(),
            )
        }
    };
    if spec.has(WRITE) {
        st.srv.scripts.wrote.store(true, Relaxed);
    }
    st.scratch.protocol = if convert::SCRIPT_RESP.with(|r| r.get()) == 3 {
        Protocol::Resp3
    } else {
        Protocol::Resp2
    };
    st.scratch.buf.clear();
    dispatch::call(
        st.srv,
        st.client,
        &mut st.scratch,
        id,
        spec,
        &args,
        st.now_ms,
    );
    true
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
        return Err(busy_error(ctx.srv));
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
