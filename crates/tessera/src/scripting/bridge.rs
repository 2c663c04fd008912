//! The bridge between a running script and the server: `redis.call` and
//! `redis.pcall`, the timeout hook, and the run's scope.
//!
//! Scripting knows nothing of commands, clients or the keyspace's locks.
//! Each run is handed a [`Host`] (the execution layer's side of the run,
//! `server::script_host`): `redis.call` asks it to run a command, and the
//! timeout hook asks it, every [`HOOK_EVERY`] instructions, whether the
//! script must stop. This is the shape of Dragonfly's interpreter, which
//! calls back into a function its server installs.
//!
//! Everything a run needs to find from a C function or the hook (Lua gives
//! them nothing but the state) is in one [`Scope`] per thread, set by
//! [`RunGuard`] for the length of a run and restored when it drops.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, CStr};
use std::time::{Duration, Instant};

use mlua::ffi;
use smallvec::SmallVec;
use tessera_resp::encode::{Protocol, ReplyBuf};

use super::{convert, Scripts, Vm};
use crate::util::log;

/// What a script's run asks of the server.
pub trait Host {
    /// Runs a command the script called, writing its reply to `out` in
    /// `out.protocol`. Err: the command was refused before it ran, with
    /// Redis's error text, already counted in the error statistics by the
    /// host.
    fn call(&mut self, args: &[&[u8]], out: &mut ReplyBuf) -> Result<(), String>;
    /// Whether the script's user may run `argv` (`redis.acl_check_cmd`);
    /// None when it names no command (or no subcommand of a container).
    fn may_call(&self, argv: &[&[u8]]) -> Option<bool>;
    /// Called from the timeout hook while the script runs; true when it
    /// must stop (SCRIPT KILL).
    fn tick(&mut self) -> bool;
}

/// What one run of a script is given.
pub struct RunRequest<'a> {
    pub keys: &'a [&'a [u8]],
    pub argv: &'a [&'a [u8]],
    /// An FCALL target (called with KEYS and ARGV as arguments) rather
    /// than an EVAL body (which reads them as globals).
    pub is_function: bool,
    /// The script's clock: it sees time stopped at its start.
    pub now_ms: i64,
}

/// How a run ended.
pub struct RunOutcome {
    /// Ok(None): the reply is written. Ok(Some): the script raised an error
    /// (its text, where it was raised, whether it is counted). Err: the
    /// script could not run (its text).
    pub result: Result<Option<convert::ScriptError>, String>,
    /// A read-only command ran inside the script.
    pub read_keys: bool,
    /// Codes of the error replies in the script's reply that are not yet in
    /// the error statistics.
    pub uncounted_errors: Vec<String>,
}

/// The run on this thread, as the C functions and the hook find it.
struct Scope {
    /// The [`Run`] on the stack of [`run`], lifetimes erased; null when
    /// none runs, or while it is in use.
    run: Cell<*mut ()>,
    /// The command being run comes from the script (not from a client
    /// served while it is busy).
    in_script: Cell<bool>,
    /// The running script's clock.
    now_ms: Cell<Option<i64>>,
    /// The protocol of the client running the script (what it is sent
    /// directly, like pub/sub messages, is encoded in it).
    caller_protocol: Cell<Protocol>,
    /// The protocol `redis.call` replies are parsed in (redis.setresp).
    reply_resp: Cell<u8>,
    /// A read-only command ran inside the script.
    read_keys: Cell<bool>,
    /// An error reply already counted was written (see
    /// [`take_quiet_failure`]).
    quiet_failure: Cell<bool>,
    /// When the FUNCTION LOAD running on this thread must have finished.
    load_deadline: Cell<Option<Instant>>,
    /// The chunk name of the prelude of the state last armed here.
    prelude_source: Cell<*const c_char>,
}

/// The scope's buffers. Apart from [`Scope`], which has no destructor, so
/// that the flags every command reads (`in_script`, `quiet_failure`) cost
/// a plain thread-local load: a thread-local that owns heap memory is
/// checked for its destructor's registration on every access.
struct ScopeBuffers {
    /// See [`RunOutcome::uncounted_errors`].
    uncounted_errors: RefCell<Vec<String>>,
    /// A run's reply buffer between runs, so a run allocates none.
    spare_scratch: Cell<Vec<u8>>,
}

thread_local! {
    static SCOPE: Scope = const {
        Scope {
            run: Cell::new(std::ptr::null_mut()),
            in_script: Cell::new(false),
            now_ms: Cell::new(None),
            caller_protocol: Cell::new(Protocol::Resp2),
            reply_resp: Cell::new(2),
            read_keys: Cell::new(false),
            quiet_failure: Cell::new(false),
            load_deadline: Cell::new(None),
            prelude_source: Cell::new(std::ptr::null()),
        }
    };
    static BUFFERS: ScopeBuffers = const {
        ScopeBuffers {
            uncounted_errors: RefCell::new(Vec::new()),
            spare_scratch: Cell::new(Vec::new()),
        }
    };
}

/// State `redis.call` needs while a script runs.
struct Run<'h> {
    host: &'h mut dyn Host,
    /// The reply of the latest `redis.call` (or its error text), read by
    /// the Lua side after the call's Rust part has returned.
    scratch: ReplyBuf,
    /// Text of number arguments of the current `redis.call`.
    numbers: Vec<u8>,
    /// The last `redis.call` failed with an error already counted in the
    /// error statistics (a rejection, or the command's own error).
    error_counted: bool,
}

/// Publishes a run to the C functions and the hook (created once per Lua
/// state, so they cannot borrow it), and puts the scope back as it found
/// it when dropped.
struct RunGuard {
    saved: (*mut (), bool, Option<i64>, Protocol, u8, bool),
}

impl RunGuard {
    fn start(run: &mut Run, now_ms: i64, caller_protocol: Protocol) -> RunGuard {
        SCOPE.with(|s| RunGuard {
            saved: (
                s.run.replace(run as *mut Run as *mut ()),
                s.in_script.replace(true),
                s.now_ms.replace(Some(now_ms)),
                s.caller_protocol.replace(caller_protocol),
                s.reply_resp.replace(2),
                s.read_keys.replace(false),
            ),
        })
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let (run, in_script, now_ms, protocol, resp, read) = self.saved;
        SCOPE.with(|s| {
            s.run.set(run);
            s.in_script.set(in_script);
            s.now_ms.set(now_ms);
            s.caller_protocol.set(protocol);
            s.reply_resp.set(resp);
            s.read_keys.set(read);
        });
    }
}

/// Whether the command being run on this thread comes from a script.
pub fn in_script() -> bool {
    SCOPE.with(|s| s.in_script.get())
}

/// While alive, the commands run on this thread are not the script's
/// (clients served from its hook while it is busy).
pub struct OutsideScript(bool);

impl OutsideScript {
    pub fn enter() -> OutsideScript {
        OutsideScript(SCOPE.with(|s| s.in_script.replace(false)))
    }
}

impl Drop for OutsideScript {
    fn drop(&mut self) {
        SCOPE.with(|s| s.in_script.set(self.0));
    }
}

/// The clock of the script running on this thread, if one runs: clients
/// served from its hook while it is busy judge expiry in the shards it
/// holds by it, as the script does.
pub fn frozen_now_ms() -> Option<i64> {
    SCOPE.with(|s| s.now_ms.get())
}

/// The protocol of the client whose script runs on this thread.
pub fn caller_protocol() -> Protocol {
    SCOPE.with(|s| s.caller_protocol.get())
}

/// Notes that the running script read keys: for a tracking client, Redis
/// then remembers the keys the script declared (not those it read).
pub fn note_script_read() {
    SCOPE.with(|s| s.read_keys.set(true));
}

/// Whether a script's reply written since the last call held an error
/// reply already counted earlier (one a redis.call returned): its command
/// failed all the same.
pub fn take_quiet_failure() -> bool {
    SCOPE.with(|s| s.quiet_failure.replace(false))
}

/// The protocol `redis.call` replies are parsed in.
pub(super) fn reply_resp() -> u8 {
    SCOPE.with(|s| s.reply_resp.get())
}

/// redis.setresp.
pub(super) fn set_reply_resp(resp: u8) {
    SCOPE.with(|s| s.reply_resp.set(resp));
}

/// A script's reply holds an error reply: counted now by the caller unless
/// `counted` (see [`take_quiet_failure`]).
pub(super) fn note_reply_error(code: Option<&str>) {
    match code {
        None => SCOPE.with(|s| s.quiet_failure.set(true)),
        Some(code) => BUFFERS.with(|b| b.uncounted_errors.borrow_mut().push(code.to_string())),
    }
}

/// Runs `f` on the current run, if a script is running here.
fn with_run<R>(f: impl FnOnce(&mut Run) -> R) -> Option<R> {
    // Taken out while in use, so a nested use finds nothing instead of
    // aliasing it.
    let p = SCOPE.with(|s| s.run.replace(std::ptr::null_mut()));
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` was set by `RunGuard::start` from a `Run` that lives on
    // the stack of `run`, which drops the guard (clearing the pointer)
    // before the run goes away; the pointer is thread-local and taken out
    // above, so this is the only reference.
    let run = unsafe { &mut *(p as *mut Run<'static>) };
    let r = f(run);
    SCOPE.with(|s| s.run.set(p));
    Some(r)
}

/// `redis.acl_check_cmd`'s verdict for `argv`, None when no script runs.
pub(super) fn may_call(argv: &[&[u8]]) -> Option<Option<bool>> {
    with_run(|run| run.host.may_call(argv))
}

/// Runs a Lua function (an EVAL body or an FCALL target, found by
/// `get_fn`) with `host` serving its `redis.call`s, writing its reply to
/// `out`.
pub fn run(
    scripts: &Scripts,
    host: &mut dyn Host,
    request: RunRequest,
    out: &mut ReplyBuf,
    get_fn: impl FnOnce(&mut Vm) -> Result<c_int, String>,
) -> RunOutcome {
    let mut run = Run {
        host,
        scratch: ReplyBuf {
            buf: BUFFERS.with(|b| b.spare_scratch.take()),
            protocol: Protocol::Resp2,
        },
        numbers: Vec::new(),
        error_counted: false,
    };
    let (result, read_keys) = {
        let _guard = RunGuard::start(&mut run, request.now_ms, out.protocol);
        let result = super::with_vm(scripts, |vm| -> Result<_, String> {
            let f = get_fn(vm)?;
            let mark = out.buf.len();
            match vm.run_with_args(f, request.keys, request.argv, request.is_function, out) {
                Ok(Ok(())) => Ok(None),
                Ok(Err(e)) => Ok(Some(e)),
                Err(e) => {
                    // (A memory error can stop a reply half-written.)
                    out.buf.truncate(mark);
                    Err(e)
                }
            }
        });
        (result.and_then(|r| r), SCOPE.with(|s| s.read_keys.get()))
    };
    let mut scratch = std::mem::take(&mut run.scratch.buf);
    scratch.clear();
    if scratch.capacity() <= 64 * 1024 {
        BUFFERS.with(|b| b.spare_scratch.set(scratch));
    }
    RunOutcome {
        result,
        read_keys,
        uncounted_errors: BUFFERS.with(|b| std::mem::take(&mut *b.uncounted_errors.borrow_mut())),
    }
}

const NOT_RUNNING: &[u8] = b"ERR redis.call can only be used while a script runs";

/// Installs `redis.call`, `redis.pcall` and the timeout hook in a new Lua
/// state; they act on whichever script is running on this thread.
pub(super) fn install_calls(
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
const KILLED: &CStr = c"\x01tessera:ERR Script killed by user with SCRIPT KILL...";
/// What a library whose loading runs too long raises.
const LOAD_TIMED_OUT: &CStr = c"\x01tessera:ERR FUNCTION LOAD timeout";
/// How long a library's top-level code may run (Redis's limit).
pub const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// Bounds the library loading `f` runs to [`LOAD_TIMEOUT`].
pub fn with_load_deadline<R>(f: impl FnOnce() -> R) -> R {
    /// Clears the deadline however `f` ends (a stale one would stop every
    /// later script on this thread).
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            SCOPE.with(|s| s.load_deadline.set(None));
        }
    }
    SCOPE.with(|s| s.load_deadline.set(Some(Instant::now() + LOAD_TIMEOUT)));
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
pub(super) unsafe fn arm_timeout_hook(state: *mut ffi::lua_State, prelude_source: *const c_char) {
    SCOPE.with(|s| s.prelude_source.set(prelude_source));
    // SAFETY: the caller passes a live state; setting a hook is plain
    // assignment of its fields.
    unsafe { ffi::lua_sethook(state, Some(timeout_hook), ffi::LUA_MASKCOUNT, HOOK_EVERY) };
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
unsafe extern "C-unwind" fn timeout_hook(state: *mut ffi::lua_State, ar: *mut ffi::lua_Debug) {
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
            && std::ptr::eq((*ar).source, SCOPE.with(|s| s.prelude_source.get()))
        {
            return;
        }
        ffi::lua_pushstring(state, msg.as_ptr());
        ffi::lua_error(state);
    }
}

/// What the hook must raise, if anything: a load that ran out of time, or
/// a script its host stops.
fn hook_verdict() -> Option<&'static CStr> {
    if let Some(deadline) = SCOPE.with(|s| s.load_deadline.get()) {
        return (Instant::now() >= deadline).then_some(LOAD_TIMED_OUT);
    }
    with_run(|run| run.host.tick().then_some(KILLED)).flatten()
}

/// `redis.call`: raises the command's error.
unsafe extern "C-unwind" fn lua_redis_call(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua with a valid state (the C function contract).
    unsafe { redis_call(state, true) }
}

/// `redis.pcall`: returns the command's error as an `{err=...}` table.
unsafe extern "C-unwind" fn lua_redis_pcall(state: *mut ffi::lua_State) -> c_int {
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
/// [`run`] for the whole script. Phase two only reads that buffer through
/// a borrowed slice while it pushes values or raises.
///
/// # Safety
/// `state` must be the Lua state that called this C function.
unsafe fn redis_call(state: *mut ffi::lua_State, raise: bool) -> c_int {
    // Phase one.
    let outcome = with_run(|run| {
        // A panic must not unwind through Lua's C frames (Lua's own state
        // would be left half-unwound): it becomes the call's error.
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: `state` is valid (caller contract); `call_on_stack`
            // borrows stack values only while they stay on the stack.
            unsafe { call_on_stack(state, run) }
        }));
        let ok = ok.unwrap_or_else(|_| {
            log::warning("a command called from a script failed internally");
            run.fail("ERR internal error running the command from the script")
        });
        // A command's error reply was counted by the host.
        let counted = if ok { true } else { run.error_counted };
        let buf = &run.scratch.buf;
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
        ffi::lua_settop(state, 0);
        match error {
            // Raised as the {err=...} table Redis raises (the error handler
            // adds the script line; pcall hands scripts the text).
            Some(text) if raise => {
                convert::push_error_table(state, text, counted);
                ffi::lua_error(state)
            }
            Some(text) => convert::push_error_table(state, text, counted),
            None => convert::push_reply(state, bytes),
        }
    }
    1
}

impl Run<'_> {
    /// Leaves `text` as the call's error; false, for the caller's result.
    fn fail(&mut self, text: &str) -> bool {
        self.scratch.buf.clear();
        self.scratch.buf.extend_from_slice(text.as_bytes());
        self.error_counted = false;
        false
    }
}

/// Phase one of a `redis.call`: reads the arguments on the stack, has the
/// host run the command and leaves its reply in `run.scratch` (true), or
/// leaves an error text there (false). Calls no Lua function that can
/// raise.
///
/// # Safety
/// `state` must be a valid Lua state.
unsafe fn call_on_stack(state: *mut ffi::lua_State, run: &mut Run) -> bool {
    // SAFETY (all FFI calls below): `state` is valid; lua_gettop, lua_type,
    // lua_tonumber and lua_tolstring on a string value never raise or
    // allocate.
    let n = unsafe { ffi::lua_gettop(state) };
    if n <= 0 {
        // (An error of the Lua call itself, before any command is looked
        // at: counted only if the script replies with it.)
        return run.fail("ERR Please specify at least one argument for this redis lib call");
    }
    // Numbers are sent as C's %.17g prints them, as Redis 7.0 does (Lua's
    // own tostring would round to 14 digits).
    run.numbers.clear();
    let mut number_ends: SmallVec<[usize; 4]> = SmallVec::new();
    for i in 1..=n {
        match unsafe { ffi::lua_type(state, i) } {
            ffi::LUA_TSTRING => {}
            ffi::LUA_TNUMBER => {
                let v = unsafe { ffi::lua_tonumber(state, i) };
                crate::util::numbers::format_f64(v, &mut run.numbers);
                number_ends.push(run.numbers.len());
            }
            _ => {
                return run.fail("ERR Lua redis lib command arguments must be strings or integers")
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
            args.push(&run.numbers[number_at..end]);
            number_at = end;
            number_idx += 1;
        }
    }
    run.scratch.protocol = if reply_resp() == 3 {
        Protocol::Resp3
    } else {
        Protocol::Resp2
    };
    run.scratch.buf.clear();
    match run.host.call(&args, &mut run.scratch) {
        Ok(()) => true,
        Err(refusal) => {
            run.scratch.buf.clear();
            run.scratch.buf.extend_from_slice(refusal.as_bytes());
            run.error_counted = true;
            false
        }
    }
}
