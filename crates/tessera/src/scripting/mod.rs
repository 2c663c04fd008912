//! The Lua scripting engine behind EVAL, EVALSHA, FCALL and friends.
//!
//! Each worker thread keeps its own Lua 5.1 state ([`Vm`]), built the way
//! redis-server 7.0 builds its one: the base, table, string, math and debug
//! libraries plus cjson, cmsgpack, bit and struct ([`libs`]), the `redis`
//! table, a deterministic `math.random`, and read-only globals. Script
//! bodies live in one process-wide cache ([`Scripts`]) so EVALSHA works on
//! every thread; each thread compiles a body the first time it runs it.
//! SCRIPT FLUSH bumps a generation number that makes every thread start a
//! fresh state.
//!
//! Running a script ([`bridge`], with the server's side in
//! `server::script_host`): the script lock is taken
//! (scripts run one at a time, as in Redis, and the holder is the only party
//! allowed to wait for a shard while holding others), the shards of the
//! declared keys are held for the whole run (a key the script did not
//! declare is locked when first touched and kept to the end), so the script
//! is atomic for every client on every thread. `redis.call` hands commands
//! to the run's host, which runs them through the execution layer; their
//! replies are converted to Lua values, and the script's result back to
//! RESP.

pub mod bridge;
pub mod convert;
pub mod functions;
pub mod libs;
mod sandbox;

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use mlua::{ffi, Function, Lua, LuaOptions, MultiValue, RegistryKey, StdLib, Table, Value};
use parking_lot::Mutex;
use tessera_resp::encode::ReplyBuf;

/// Script flags (the `#!lua flags=...` shebang, and function flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// Declared with a shebang: flags apply, undeclared keys are refused
    /// in cluster mode only.
    pub shebang: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
    pub no_cluster: bool,
    pub allow_cross_slot_keys: bool,
}

impl ScriptFlags {
    /// Parses a flag list (`no-writes,allow-oom`); the unknown flag on error.
    pub fn parse_list(list: &str) -> Result<ScriptFlags, String> {
        let mut f = ScriptFlags {
            shebang: true,
            ..ScriptFlags::default()
        };
        for name in list.split(',').filter(|s| !s.is_empty()) {
            f.set(name)?;
        }
        Ok(f)
    }

    pub fn set(&mut self, name: &str) -> Result<(), String> {
        match name {
            "no-writes" => self.no_writes = true,
            "allow-oom" => self.allow_oom = true,
            "allow-stale" => self.allow_stale = true,
            "no-cluster" => self.no_cluster = true,
            "allow-cross-slot-keys" => self.allow_cross_slot_keys = true,
            other => return Err(other.to_string()),
        }
        Ok(())
    }

    pub fn names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.no_writes {
            v.push("no-writes");
        }
        if self.allow_oom {
            v.push("allow-oom");
        }
        if self.allow_stale {
            v.push("allow-stale");
        }
        if self.no_cluster {
            v.push("no-cluster");
        }
        if self.allow_cross_slot_keys {
            v.push("allow-cross-slot-keys");
        }
        v
    }
}

/// A cached EVAL script.
pub struct Script {
    pub sha: String,
    pub body: Arc<[u8]>,
    pub flags: ScriptFlags,
}

/// The function FUNCTION STATS reports: name, command line, start.
pub type RunningFunction = (String, Vec<Vec<u8>>, Instant);

/// The process-wide script cache and run state.
#[derive(Default)]
pub struct Scripts {
    cache: Mutex<HashMap<String, Arc<Script>, foldhash::fast::FixedState>>,
    /// Bumped by SCRIPT FLUSH / FUNCTION changes: threads rebuild their VM.
    pub generation: AtomicU64,
    /// Set by SCRIPT KILL / FUNCTION KILL for the running script.
    pub kill: Arc<AtomicBool>,
    /// The running script has written (SCRIPT KILL refuses then).
    pub wrote: AtomicBool,
    /// The clock of the running script (its start, Unix ms; 0: none runs).
    /// Active expiry judges keys by it, so that nothing alive when the
    /// script started vanishes under it, as no expiry cycle runs during a
    /// script in Redis.
    pub clock_ms: std::sync::atomic::AtomicI64,
    /// Whether the running script is a function (for BUSY texts).
    pub running_function: AtomicBool,
    /// FUNCTION libraries.
    pub libraries: Mutex<functions::Libraries>,
    /// What runs now, for FUNCTION STATS: name, command line, start.
    pub running_info: Mutex<Option<RunningFunction>>,
    /// The worker running a busy script (usize::MAX: none): the acceptor
    /// sends new connections elsewhere so SCRIPT KILL can get through.
    pub busy_worker: Arc<AtomicUsize>,
    /// `lua-enable-deprecated-api` (immutable): scripts keep setfenv,
    /// getfenv and newproxy.
    pub deprecated_api: bool,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call commands flagged
    /// noscript.
    pub deny_scripts_disabled: AtomicBool,
}

impl Scripts {
    pub fn new(deprecated_api: bool) -> Scripts {
        Scripts {
            busy_worker: Arc::new(AtomicUsize::new(usize::MAX)),
            deprecated_api,
            ..Scripts::default()
        }
    }

    /// Whether a script or function is running.
    pub fn running(&self) -> bool {
        self.clock_ms.load(Relaxed) != 0
    }

    pub fn get(&self, sha: &str) -> Option<Arc<Script>> {
        self.cache.lock().get(sha).cloned()
    }

    pub fn contains(&self, sha: &str) -> bool {
        self.cache.lock().contains_key(sha)
    }

    pub fn insert(&self, script: Script) -> Arc<Script> {
        let s = Arc::new(script);
        self.cache.lock().insert(s.sha.clone(), s.clone());
        s
    }

    pub fn flush(&self) {
        self.cache.lock().clear();
        self.generation.fetch_add(1, Relaxed);
    }

    pub fn count(&self) -> usize {
        self.cache.lock().len()
    }

    pub fn memory(&self) -> usize {
        self.cache.lock().values().map(|s| s.body.len() + 64).sum()
    }
}

pub fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

/// Splits a `#!<engine> flags=...` first line from a script body: the
/// flags and the byte offset of the code. `Err` carries Redis's error text.
pub fn parse_shebang(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags::default(), 0));
    }
    let Some(end) = shebang_end(body) else {
        return Err("ERR Invalid script shebang".into());
    };
    let parts = match crate::config::split_args(&body[..end]) {
        Some(parts) if !parts.is_empty() => parts,
        _ => return Err("ERR Invalid engine in script shebang".into()),
    };
    if parts[0] != b"#!lua" {
        return Err(format!(
            "ERR Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(&parts[0])
        ));
    }
    let mut flags = ScriptFlags {
        shebang: true,
        ..ScriptFlags::default()
    };
    for p in &parts[1..] {
        let Some(list) = p.strip_prefix(b"flags=") else {
            return Err(format!(
                "ERR Unknown lua shebang option: {}",
                String::from_utf8_lossy(p)
            ));
        };
        // (Split as sdssplitlen does: nothing for "", empty names kept.)
        if list.is_empty() {
            continue;
        }
        for name in list.split(|&c| c == b',') {
            let name = String::from_utf8_lossy(name);
            flags
                .set(&name)
                .map_err(|f| format!("ERR Unexpected flag in script shebang: {f}"))?;
        }
    }
    // The shebang line is kept as an (empty) line so line numbers match.
    Ok((flags, end))
}

/// Where the `#!` line of a script or library ends: its newline, looked
/// for as Redis looks in a C string (not past a NUL byte).
pub fn shebang_end(code: &[u8]) -> Option<usize> {
    let text = crate::util::c_str(code);
    memchr::memchr(b'\n', text)
}

/// Redis's PRNG for `math.random`: the lrand48 recurrence, reseeded with 0
/// before every script so scripts are deterministic.
#[derive(Clone, Copy)]
pub struct Rand48(u64);

impl Rand48 {
    const A: u64 = 0x5DEECE66D;
    const C: u64 = 0xB;
    const MASK: u64 = (1 << 48) - 1;

    pub fn seeded(seed: i32) -> Rand48 {
        Rand48((((seed as u32) as u64) << 16 | 0x330E) & Self::MASK)
    }

    pub fn next_value(&mut self) -> i32 {
        self.0 = (Self::A.wrapping_mul(self.0).wrapping_add(Self::C)) & Self::MASK;
        (self.0 >> 17) as i32
    }
}

/// `math.random`'s state: one sequence for the whole process, as Redis
/// 7.0 keeps one (it is not reseeded per script). It starts from drand48's
/// unseeded state, as Redis's does, so a fresh server's first script gets
/// the same numbers from both.
static RAND: Mutex<Rand48> = Mutex::new(Rand48(0x1234_ABCD_330E));

thread_local! {
    static VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
}

/// One thread's Lua state.
pub struct Vm {
    pub lua: Lua,
    generation: u64,
    /// Compiled script bodies by SHA.
    compiled: HashMap<String, RegistryKey, foldhash::fast::FixedState>,
    /// The protected call wrapper: runs a function under the error handler
    /// that adds the script line to errors (FUNCTION LOAD's library code).
    runner: Function,
    /// That error handler (run_with_args calls scripts with it directly).
    handler: RegistryKey,
    /// [`run_protected`] as a Lua function, made once: `lua_cpcall` would
    /// allocate a closure for it on every run.
    run_protected: RegistryKey,
    /// The real globals (scripts see a read-only proxy).
    pub globals: Table,
    /// The read-only proxy used as every script's environment.
    pub env: Table,
    pub redis: Table,
    /// The read-only view of `redis` scripts see.
    pub redis_ro: Table,
    /// What library functions see as `redis`: the same without the
    /// EVAL-only helpers (breakpoint, debug, replicate_commands), as in
    /// Redis 7.0.
    pub redis_fn_ro: Table,
    /// Libraries loaded into this state: library → function → callback.
    pub loaded_libraries: HashMap<String, HashMap<String, RegistryKey>>,
    /// The state's main thread, where scripts run (for the timeout hook).
    main_state: *mut ffi::lua_State,
    /// The prelude's chunk name as Lua holds it (for the timeout hook,
    /// which tells the prelude's functions by this pointer: an interned
    /// string no loaded chunk can share, see `own_name`).
    prelude_source: *const std::ffi::c_char,
    /// What the prelude returns (its helpers, out of the scripts' reach).
    pub internals: Table,
}

/// The Lua side of the environment: the error handler, read-only proxies
/// and the `redis.call`/`redis.pcall` wrappers over the raw Rust calls.
const PRELUDE: &str = r#"
local rawget, rawset, setmetatable, type, tostring, error, xpcall =
      rawget, rawset, setmetatable, type, tostring, error, xpcall
local getinfo = debug.getinfo
local orig_pcall, unpack, select = pcall, unpack, select
-- (String functions as they are now: scripts cannot reach these.)
local byte, sub, find, match = string.byte, string.sub, string.find, string.match
local setfenv = setfenv
-- The environment chunks loaded by scripts run in (set by seal).
local script_env

-- What the server needs from this chunk is returned at the end, not left
-- in globals scripts could reach.

-- redis.call raises its errors from Rust as marked strings; scripts see
-- them as the {err=...} tables Redis raises.
local error_value = function(err)
  if type(err) == 'userdata' or type(err) == 'string' then
    local s = tostring(err)
    local at = s:find('\1tessera:', 1, true)
    if at then
      local msg = s:sub(at + 9)
      local nl = msg:find('\n', 1, true)
      if nl then msg = msg:sub(1, nl - 1) end
      return {err = msg}
    end
  end
  return err
end

-- (pcall hands scripts the bare message, as Redis 7.0 does.)
-- (As Redis's pcall: an error table with a string (or number) `err` gives
-- its text.)
-- (Every result kept, nils too: pcall(error) gives false and nil.)
local function pack(...) return {n = select('#', ...), ...} end
pcall = function(f, ...)
  local r = pack(orig_pcall(f, ...))
  if not r[1] then
    local v = error_value(r[2])
    if type(v) == 'table' then
      local e = rawget(v, 'err')
      if type(e) == 'string' or type(e) == 'number' then r[2] = e end
    end
  end
  return unpack(r, 1, r.n)
end

-- Turns any error into an {err=...} table naming where it was raised, as
-- Redis's handler does: the raising function, or its caller when that is a
-- C function. This chunk's Lua wrappers stand where Redis has C functions
-- (or checks inside its Lua VM), so their frames are passed over too.
local function handler(err)
  local level = 2
  local info = getinfo(level, 'Sl')
  -- (A wrapper's own tail call leaves a "(tail call)" level behind it.)
  local function past_prelude()
    local passed = false
    while info and (info.source == '=prelude' or (passed and info.source == '=(tail call)')) do
      passed = true
      level = level + 1
      info = getinfo(level, 'Sl')
    end
  end
  past_prelude()
  if info and info.what == 'C' then
    level = level + 1
    info = getinfo(level, 'Sl')
    past_prelude()
  end
  -- A script that tail-called a wrapper has no frame left to name; Redis
  -- (whose wrapped functions are C) would name its line, which is lost.
  if info and info.what == 'C' then info = nil end
  err = error_value(err)
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if info and err.source == nil then
    err.source = info.source
    err.line = info.currentline
  end
  return err
end

local run = function(f)
  return xpcall(f, handler)
end

-- Read-only views of tables: reads go through, writes fail. The C
-- functions that bypass metamethods (rawset, rawget, next, pairs,
-- getmetatable, setmetatable, table.insert/remove/sort) are replaced by
-- guarded C functions from Rust (scripting/sandbox.rs) that read these
-- tables: real_of maps a view to its table, protected holds the real
-- tables that are read-only, metatable_view what getmetatable shows.
local real_of = setmetatable({}, {__mode = 'k'})
local metatable_view = setmetatable({}, {__mode = 'k'})
local protected = setmetatable({}, {__mode = 'k'})
local orig_getmetatable = getmetatable
local orig_pairs = pairs

local readonly

-- Makes the real globals (and the real redis table) unwritable from Lua.
local seal = function(globals, redis, env)
  script_env = env
  -- Strings find their methods through the read-only string library, and
  -- show scripts a read-only view of their metatable.
  local smt = orig_getmetatable('')
  smt.__index = rawget(globals, 'string')
  -- (getmetatable of a string shows this, found under the real one.)
  metatable_view[smt] = readonly(smt, false)
  protected[smt] = true
  protected[globals] = true
  protected[redis] = true
  for _, real in orig_pairs(real_of) do protected[real] = true end
  local mt = orig_getmetatable(globals)
  mt.__newindex = function() error('Attempt to modify a readonly table', 2) end
end

readonly = function(t, strict_globals)
  -- Reads go straight to the real table (no Lua call per access); for the
  -- globals, a lookup that finds nothing ends in the strict error below.
  local mt = {
    __index = t,
    __newindex = function() error('Attempt to modify a readonly table', 2) end,
    __metatable = false,
  }
  local strict_mt_view
  if strict_globals and orig_getmetatable(t) == nil then
    local strict = function(_, k)
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end
    setmetatable(t, {__index = strict})
    strict_mt_view = readonly({__index = strict}, false)
  end
  local proxy = setmetatable({}, mt)
  real_of[proxy] = t
  if strict_mt_view then metatable_view[proxy] = strict_mt_view end
  return proxy
end

-- (What getmetatable shows of the read-only views: nothing for the library
-- tables, a read-only {__index=...} for _G, as Redis 7.0 shows them.)

local wrap_calls = function(redis, raw_call, raising_call)
  redis.call = raising_call
  redis.pcall = raw_call
end

-- Redis's Lua parses every chunk as text, so bytecode (a known way out of
-- the sandbox) fails at its first byte. Lua 5.1 would load it: the loaders
-- refuse it here with the error the text parser gives, naming the chunk
-- as Lua's luaO_chunkid does.
local function chunkid(source)
  source = match(source, '^[^%z]*')
  local first = sub(source, 1, 1)
  if first == '=' then return sub(source, 2, 60) end
  if first == '@' then
    local name = sub(source, 2)
    if #name > 52 then return '...' .. sub(name, -52) end
    return name
  end
  local len = (find(source, '[\n\r]') or (#source + 1)) - 1
  if len > 43 then len = 43 end
  if len < #source then return '[string "' .. sub(source, 1, len) .. '..."]' end
  return '[string "' .. source .. '"]'
end
-- A chunk named as this one would be taken for it by the timeout hook
-- (which then could not stop it): such a name gets a space after it (a
-- chunk name reaches Lua as a C string, so nothing invisible would do).
local function own_name(name)
  if name == '=prelude' then return '=prelude ' end
  return name
end
local function refused(name)
  return nil, chunkid(name) .. ":1: unexpected symbol near 'char(27)'"
end
-- (Upvalues named as the globals, and no tail calls, so that argument
-- errors still name 'loadstring' and 'load'.)
local loadstring, load = loadstring, load
-- Loaded chunks run in the scripts' environment, not the real globals
-- (which only refuse new entries, not changes to existing ones).
local function confined(f, e)
  if f then setfenv(f, script_env) end
  return f, e
end
_G.loadstring = function(s, name)
  if type(s) == 'string' and byte(s, 1) == 27 then
    local n = (type(name) == 'string' or type(name) == 'number') and tostring(name) or s
    return refused(n)
  end
  local f, e = loadstring(s, own_name(name))
  return confined(f, e)
end
_G.load = function(reader, name)
  if type(reader) == 'function' then
    -- Only the first piece decides (an empty one ends the chunk). An error
    -- in the reader is load's error, as in Lua.
    local ok, piece = orig_pcall(reader)
    if not ok then
      -- (Redis's load reports a reader's text error as an error table.)
      if type(piece) == 'string' then piece = {err = 'ERR ' .. piece} end
      return nil, piece
    end
    if type(piece) == 'string' and byte(piece, 1) == 27 then
      local n = (type(name) == 'string' or type(name) == 'number') and tostring(name) or '=(load)'
      return refused(n)
    end
    local given = false
    local f, e = load(function()
      if given then return reader() end
      given = true
      return piece
    end, own_name(name))
    return confined(f, e)
  end
  local f, e = load(reader, own_name(name))
  return confined(f, e)
end

return {
  error_value = error_value,
  run = run,
  handler = handler,
  seal = seal,
  readonly = readonly,
  wrap_calls = wrap_calls,
  real_of = real_of,
  protected = protected,
  metatable_view = metatable_view,
}
"#;

/// Wraps every `redis.*` helper but call/pcall (which raise tables
/// themselves, and are the hot path) in [`helper_trampoline`].
fn raise_helper_errors_as_tables(lua: &Lua, internals: &Table, redis: &Table) -> mlua::Result<()> {
    let mut helpers = Vec::new();
    for pair in redis.pairs::<String, Value>() {
        let (name, value) = pair?;
        if let Value::Function(f) = value {
            if name != "call" && name != "pcall" {
                helpers.push((name, f));
            }
        }
    }
    for (name, f) in helpers {
        redis.raw_set(name, raising_tables(lua, internals, f)?)?;
    }
    Ok(())
}

/// `f` behind [`helper_trampoline`].
pub(crate) fn raising_tables(lua: &Lua, internals: &Table, f: Function) -> mlua::Result<Function> {
    let error_value: Function = internals.raw_get("error_value")?;
    // SAFETY: exec_raw leaves the two arguments on the stack; the closure
    // takes them as its upvalues and is the one value left.
    unsafe {
        lua.exec_raw((f, error_value), |state| {
            ffi::lua_pushcclosure(state, helper_trampoline, 2);
        })
    }
}

/// Calls the helper in upvalue 1 with this call's arguments and returns its
/// results. The helpers are Rust functions whose errors reach Lua as marked
/// strings or userdata; this raises them again as the `{err=...}` tables
/// Redis's helpers raise (converted by the prelude's error_value, upvalue
/// 2), so xpcall handlers and coroutine.resume see tables too. Being a C
/// function, it keeps the caller's frame where Redis's would be (a Lua
/// wrapper would be tail-called and lose it).
unsafe extern "C-unwind" fn helper_trampoline(state: *mut ffi::lua_State) -> std::ffi::c_int {
    // SAFETY: called by Lua as a C closure with the two upvalues above;
    // only the raw API is used and no Rust value with a destructor is alive
    // when lua_error (or a memory error in a push) unwinds out of here.
    unsafe {
        let n = ffi::lua_gettop(state);
        if ffi::lua_checkstack(state, 2) == 0 {
            ffi::lua_pushstring(state, c"stack overflow".as_ptr());
            ffi::lua_error(state);
        }
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_insert(state, 1);
        if ffi::lua_pcall(state, n, ffi::LUA_MULTRET, 0) == 0 {
            return ffi::lua_gettop(state);
        }
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(2));
        ffi::lua_insert(state, -2);
        ffi::lua_call(state, 1, 1);
        ffi::lua_error(state)
    }
}

impl Vm {
    fn new(generation: u64, deprecated_api: bool) -> mlua::Result<Vm> {
        // SAFETY (of `unsafe_new_with`): the debug library is loaded because
        // Redis exposes it to scripts; mlua calls that "unsafe" since debug
        // functions can break Lua invariants, not Rust memory safety of our
        // code: every value crossing into Rust is checked by mlua.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::default(),
            )
        };
        let globals = lua.globals();
        for name in ["loadfile", "dofile"] {
            globals.raw_set(name, Value::Nil)?;
        }
        libs::register(&lua)?;
        // Every run leaves garbage (its KEYS and ARGV tables, ~200 bytes),
        // and nothing but the incremental collector reclaims it: with a
        // 400% pause a state's heap climbed to four times its live set
        // (~60 KB) before each cycle, far past the <100 KB Redis keeps it at
        // by stepping its collector every 50 runs. Here the next cycle
        // starts at 130% and runs at 5x the allocation rate, keeping the
        // heap under ~1.45x its live set (86 KB over 10^5 short runs) for
        // 1.7% more instructions per EVALSHA than the 400% pause (valgrind,
        // `inproc evalsha-empty`); Redis's every-50-runs step cost 11.5%.
        lua.gc_inc(130, 500, 0);
        install_math_random(&lua)?;
        let internals: Table = lua.load(PRELUDE).set_name("=prelude").eval()?;
        sandbox::install(
            &lua,
            &globals,
            &internals.raw_get("real_of")?,
            &internals.raw_get("protected")?,
            &internals.raw_get("metatable_view")?,
        )?;
        let runner: Function = internals.raw_get("run")?;
        let handler = lua.create_registry_value(internals.raw_get::<Function>("handler")?)?;
        let redis = convert::build_redis_table(&lua)?;
        globals.raw_set("redis", redis.clone())?;
        bridge::install_calls(&lua, &internals, &redis)?;
        raise_helper_errors_as_tables(&lua, &internals, &redis)?;
        // Library tables are read-only to scripts, as in Redis 7.0.
        let readonly: Function = internals.raw_get("readonly")?;
        for name in [
            "string",
            "math",
            "table",
            "cjson",
            "cmsgpack",
            "bit",
            "struct",
            "debug",
            "coroutine",
            "os",
        ] {
            if let Ok(t @ Value::Table(_)) = globals.raw_get::<Value>(name) {
                let ro: Table = readonly.call((t, false))?;
                globals.raw_set(name, ro)?;
            }
        }
        let redis_ro: Table = readonly.call((redis.clone(), false))?;
        let redis_fn = lua.create_table()?;
        for pair in redis.pairs::<Value, Value>() {
            let (k, v) = pair?;
            let eval_only = matches!(&k, Value::String(s)
                if matches!(s.as_bytes().as_ref(), b"breakpoint" | b"debug" | b"replicate_commands"));
            if !eval_only {
                redis_fn.raw_set(k, v)?;
            }
        }
        let redis_fn_ro: Table = readonly.call((redis_fn.clone(), false))?;
        globals.raw_set("redis", redis_ro.clone())?;
        let env: Table = readonly.call((globals.clone(), true))?;
        // What Redis 7.0 does not offer scripts, and `_G` as the read-only
        // view; then no global can be added or changed from Lua, even by
        // code that reaches the real table (loadstring'd chunks, rawset).
        let deprecated: &[&str] = if deprecated_api {
            &[]
        } else {
            &["getfenv", "setfenv", "newproxy"]
        };
        for &name in deprecated.iter().chain(&["print", "debug"]) {
            globals.raw_set(name, Value::Nil)?;
        }
        globals.raw_set("_G", env.clone())?;
        let seal: Function = internals.raw_get("seal")?;
        seal.call::<()>((globals.clone(), redis.clone(), env.clone()))?;
        let mut main_state = std::ptr::null_mut();
        let mut prelude_source = std::ptr::null();
        // SAFETY: the closure copies the state pointer mlua runs it on (the
        // main thread: no coroutine is running) and asks lua_getinfo about
        // the prelude function on top of the stack (">S" pops it), writing
        // into a zeroed lua_Debug, a plain C struct.
        unsafe {
            lua.exec_raw::<()>((runner.clone(),), |state| {
                main_state = state;
                let mut ar: ffi::lua_Debug = std::mem::zeroed();
                if ffi::lua_getinfo(state, c">S".as_ptr(), &mut ar) != 0 {
                    prelude_source = ar.source;
                }
            })?
        };
        Ok(Vm {
            main_state,
            prelude_source,
            internals,
            generation,
            compiled: HashMap::default(),
            runner,
            handler,
            // SAFETY: `run_protected` follows the lua_CFunction contract
            // (see its own comment).
            run_protected: lua
                .create_registry_value(unsafe { lua.create_c_function(run_protected)? })?,
            globals,
            env,
            redis,
            redis_ro,
            redis_fn_ro,
            loaded_libraries: HashMap::new(),
            lua,
        })
    }

    /// Runs a script (`as_function`: false; it sees KEYS and ARGV as
    /// globals) or a library function (true; called with the keys and
    /// arguments tables), the function being the registry entry `f`, under
    /// the error handler, and writes its reply into `out`; a failure comes
    /// back as the script's error, a failure of the run itself (memory) as
    /// its text.
    ///
    /// Done on the raw Lua stack, as Redis does it: one protected call of a
    /// C function ([`run_protected`]) that builds KEYS and ARGV and calls
    /// the function with `lua_pcall` and the handler. Per-call mlua values
    /// (registry handles, its own protected-call wrapper, a Lua-side
    /// runner) cost more than the rest of a short script
    /// (docs/benchmarks.md, EVALSHA).
    pub fn run_with_args(
        &mut self,
        f: c_int,
        keys: &[&[u8]],
        argv: &[&[u8]],
        as_function: bool,
        out: &mut ReplyBuf,
    ) -> Result<Result<(), convert::ScriptError>, String> {
        let mut run = ProtectedRun {
            function: f,
            handler: self.handler.id(),
            keys,
            argv,
            as_function,
            prelude_source: self.prelude_source,
            out,
            outcome: Ok(()),
            panicked: false,
        };
        let state = self.main_state;
        // SAFETY: `main_state` is this VM's main thread, and no Lua code
        // runs on it now (scripts never start scripts), so its stack is
        // ours between the two gettop/settop calls. `run` outlives the
        // protected call that reads it through the light userdata; the
        // function and the pointer are pushed without allocating (so
        // without raising) after lua_checkstack made room.
        unsafe {
            let top = ffi::lua_gettop(state);
            let rc = if ffi::lua_checkstack(state, 2) == 0 {
                ffi::LUA_ERRMEM
            } else {
                ffi::lua_rawgeti(
                    state,
                    ffi::LUA_REGISTRYINDEX,
                    self.run_protected.id().into(),
                );
                ffi::lua_pushlightuserdata(state, (&mut run as *mut ProtectedRun).cast());
                ffi::lua_pcall(state, 1, 0, 0)
            };
            let failure = (rc != 0).then(|| {
                if ffi::lua_type(state, -1) == ffi::LUA_TSTRING {
                    String::from_utf8_lossy(convert::stack_bytes(state, -1)).into_owned()
                } else {
                    "Lua error".to_string()
                }
            });
            ffi::lua_settop(state, top);
            if run.panicked {
                // A panic may have crossed Lua's own frames: this state is
                // not trusted again (the next run builds a new one).
                self.generation = u64::MAX;
                return Err("ERR internal error running the script".to_string());
            }
            if let Some(text) = failure {
                return Err(format!("ERR {text}"));
            }
        }
        Ok(run.outcome)
    }

    /// Arms the timeout hook for the next run (see
    /// `bridge::timeout_hook`).
    pub fn arm_timeout_hook(&self) {
        // SAFETY: `main_state` is this VM's main thread, alive as long as
        // `self.lua`.
        unsafe { bridge::arm_timeout_hook(self.main_state, self.prelude_source) };
    }

    /// Compiles a script body into a function (cached by SHA); returns its
    /// registry entry, valid while this VM lives. A compile error is Lua's
    /// message, the script's bytes in it as they are.
    pub fn function(&mut self, sha: &str, body: &[u8], name: &str) -> Result<c_int, Vec<u8>> {
        if let Some(k) = self.compiled.get(sha) {
            return Ok(k.id());
        }
        if body.first() == Some(&0x1b) {
            // Redis parses bytecode as text (see the prelude's loaders).
            let shown = name.strip_prefix(['@', '=']).unwrap_or(name);
            return Err(format!("{shown}:1: unexpected symbol near 'char(27)'").into_bytes());
        }
        let f = load_text(&self.lua, body, name)?;
        let env = self.env.clone();
        f.set_environment(env)
            .map_err(|e| e.to_string().into_bytes())?;
        let k = self
            .lua
            .create_registry_value(f)
            .map_err(|e| e.to_string().into_bytes())?;
        let id = k.id();
        self.compiled.insert(sha.to_string(), k);
        Ok(id)
    }

    /// Runs `f` under the error handler: Ok(result) or Err(error table).
    pub fn run(&self, f: Function) -> mlua::Result<Result<Value, Table>> {
        let (ok, v): (bool, Value) = self.runner.call(f)?;
        if ok {
            Ok(Ok(v))
        } else {
            match v {
                Value::Table(t) => Ok(Err(t)),
                other => {
                    let t = self.lua.create_table()?;
                    t.raw_set(
                        "err",
                        format!("ERR {}", other.to_string().unwrap_or_default()),
                    )?;
                    Ok(Err(t))
                }
            }
        }
    }
}

/// Compiles `body` as a text chunk (bytecode is refused) named `name`. A syntax error is Lua's message as bytes: it quotes the
/// code, and mlua would decode it lossily, where Redis shows it as is.
pub(crate) fn load_text(lua: &Lua, body: &[u8], name: &str) -> Result<Function, Vec<u8>> {
    let name = std::ffi::CString::new(name).map_err(|e| e.to_string().into_bytes())?;
    let mut error = None;
    // SAFETY: exec_raw runs the closure on a valid state inside a protected
    // call; luaL_loadbuffer reads `body` and `name` (alive for the call)
    // and leaves one value: the function, or its error message, which is
    // copied and replaced by nil.
    let f: Option<Function> = unsafe {
        lua.exec_raw((), |state| {
            let rc = ffi::luaL_loadbufferx(
                state,
                body.as_ptr().cast(),
                body.len(),
                name.as_ptr(),
                c"t".as_ptr(),
            );
            if rc != 0 {
                error = Some(convert::stack_bytes(state, -1).to_vec());
                ffi::lua_pop(state, 1);
                ffi::lua_pushnil(state);
            }
        })
    }
    .map_err(|e| e.to_string().into_bytes())?;
    match (f, error) {
        (Some(f), _) => Ok(f),
        (None, e) => Err(e.unwrap_or_else(|| b"error loading the code".to_vec())),
    }
}

/// An argument error of a Lua library function implemented in Rust,
/// worded as Lua 5.1's luaL_argerror words it: prefixed with the calling
/// script's position, raised as Redis reports it ("ERR <where>: <msg>").
fn lib_arg_error(lua: &Lua, msg: &str) -> mlua::Error {
    let place = lua
        .inspect_stack(1)
        .and_then(|d| {
            let line = d.curr_line();
            let src = d.source().short_src.map(|s| s.into_owned());
            match (src, line) {
                (Some(src), line) if line > 0 => Some(format!("{src}:{line}: ")),
                _ => None,
            }
        })
        .unwrap_or_default();
    mlua::Error::runtime(format!("\u{1}tessera:ERR {place}{msg}"))
}

/// Lua 5.1's luaL_checkint: a number (or numeric string) truncated like a
/// C cast, or the "number expected, got <type>" error.
fn check_int(lua: &Lua, args: &MultiValue, i: usize, name: &str) -> mlua::Result<i32> {
    let v = match args.get(i - 1) {
        Some(Value::Integer(n)) => Some(*n as f64),
        Some(Value::Number(n)) => Some(*n),
        Some(Value::String(s)) => s.to_str().ok().and_then(|s| s.trim().parse::<f64>().ok()),
        _ => None,
    };
    match v {
        // (int)(lua_Integer)x as x86-64 does it: out of range or NaN gives
        // i64::MIN, whose low 32 bits are 0.
        Some(x) => {
            let wide = if x.is_nan()
                || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&x)
            {
                i64::MIN
            } else {
                x as i64
            };
            Ok(wide as i32)
        }
        None => {
            let got = match args.get(i - 1) {
                None => "no value",
                Some(v) => v.type_name(),
            };
            Err(lib_arg_error(
                lua,
                &format!("bad argument #{i} to '{name}' (number expected, got {got})"),
            ))
        }
    }
}

/// `math.random` / `math.randomseed` over [`Rand48`], as Redis replaces
/// them (Lua 5.1's logic and messages, Redis's generator).
fn install_math_random(lua: &Lua) -> mlua::Result<()> {
    const MAX: i64 = i32::MAX as i64;
    let math: Table = lua.globals().get("math")?;
    let random = lua.create_function(|lua, args: MultiValue| {
        // The number is drawn before the arguments are checked, as in Lua.
        let r = RAND.lock().next_value() as i64 % MAX;
        let r = r as f64 / MAX as f64;
        match args.len() {
            0 => Ok(r),
            1 => {
                let u = check_int(lua, &args, 1, "random")?;
                if u < 1 {
                    return Err(lib_arg_error(
                        lua,
                        "bad argument #1 to 'random' (interval is empty)",
                    ));
                }
                Ok((r * u as f64).floor() + 1.0)
            }
            2 => {
                let l = check_int(lua, &args, 1, "random")?;
                let u = check_int(lua, &args, 2, "random")?;
                if l > u {
                    return Err(lib_arg_error(
                        lua,
                        "bad argument #2 to 'random' (interval is empty)",
                    ));
                }
                Ok((r * (u as f64 - l as f64 + 1.0)).floor() + l as f64)
            }
            _ => Err(lib_arg_error(lua, "wrong number of arguments")),
        }
    })?;
    let randomseed = lua.create_function(|lua, args: MultiValue| {
        let seed = check_int(lua, &args, 1, "randomseed")?;
        *RAND.lock() = Rand48::seeded(seed);
        Ok(())
    })?;
    math.raw_set("random", random)?;
    math.raw_set("randomseed", randomseed)?;
    Ok(())
}

/// Runs `f` with this thread's VM, rebuilding it if the generation moved.
pub fn with_vm<R>(scripts: &Scripts, f: impl FnOnce(&mut Vm) -> R) -> Result<R, String> {
    let generation = scripts.generation.load(Relaxed);
    VM.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|vm| vm.generation != generation) {
            *slot = Some(
                Vm::new(generation, scripts.deprecated_api)
                    .map_err(|e| format!("ERR Lua init failed: {e}"))?,
            );
        }
        match slot.as_mut() {
            Some(vm) => {
                let r = f(vm);
                LUA_MEMORY.with(|m| m.store(vm.lua.used_memory(), Relaxed));
                Ok(r)
            }
            None => Err("ERR Lua init failed".to_string()),
        }
    })
}

/// Frees this thread's Lua state if SCRIPT FLUSH or a FUNCTION change made
/// it stale (the next script builds a new one anyway), so its memory goes
/// when Redis's would, not at this thread's next script.
pub fn drop_stale_vm(scripts: &Scripts) {
    let generation = scripts.generation.load(Relaxed);
    VM.with(|cell| {
        // (A script running on this thread holds it: nothing to do now.)
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return;
        };
        if slot.as_ref().is_some_and(|vm| vm.generation != generation) {
            *slot = None;
            LUA_MEMORY.with(|m| m.store(0, Relaxed));
        }
    });
}

/// Bytes used by every worker's Lua state (INFO used_memory_lua), each
/// as of its last script run.
pub fn lua_memory() -> usize {
    LUA_MEMORY_CELLS
        .lock()
        .map(|cells| cells.iter().map(|c| c.load(Relaxed)).sum())
        .unwrap_or(0)
}

/// One cell per thread that has a Lua state, for [`lua_memory`]; each is
/// written only by its own thread.
static LUA_MEMORY_CELLS: std::sync::Mutex<Vec<Arc<AtomicUsize>>> =
    std::sync::Mutex::new(Vec::new());

thread_local! {
    /// This thread's Lua memory at the end of its last run.
    static LUA_MEMORY: Arc<AtomicUsize> = {
        let cell = Arc::new(AtomicUsize::new(0));
        if let Ok(mut cells) = LUA_MEMORY_CELLS.lock() {
            cells.push(cell.clone());
        }
        cell
    };
}

/// Pushes a new table {items[1], items[2], ...}, grown one element at a
/// time from an empty table as Redis builds KEYS and ARGV: the array part
/// ends up sized as in Redis, which `#` of a table with holes, and the
/// order `pairs` visits it in, depend on.
///
/// # Safety
/// Valid state.
unsafe fn new_array(state: *mut ffi::lua_State, items: &[&[u8]]) {
    // SAFETY: caller contract; lua_checkstack makes room for the pushes and
    // the new table has no metatable.
    unsafe {
        ffi::lua_checkstack(state, 2);
        ffi::lua_createtable(state, 0, 0);
        for (i, item) in items.iter().enumerate() {
            ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
            ffi::lua_rawseti_(state, -2, c_int::try_from(i + 1).unwrap_or(c_int::MAX));
        }
    }
}

/// Sets the global `name` to the value at `value` with a raw set: the real
/// globals are sealed against writes from scripts, not from here.
///
/// # Safety
/// Valid state; `value` a valid index (relative indices count before the
/// key is pushed).
unsafe fn set_global(state: *mut ffi::lua_State, name: &[u8], value: c_int) {
    // SAFETY: caller contract.
    unsafe {
        ffi::lua_checkstack(state, 2);
        let value = if value < 0 {
            ffi::lua_gettop(state) + 1 + value
        } else {
            value
        };
        ffi::lua_pushlstring(state, name.as_ptr().cast(), name.len());
        ffi::lua_pushvalue(state, value);
        ffi::lua_rawset(state, ffi::LUA_GLOBALSINDEX);
    }
}

/// What [`Vm::run_with_args`] hands its protected call, and what it gets
/// back.
struct ProtectedRun<'a> {
    /// Registry entries of the function to run and of the error handler.
    function: c_int,
    handler: c_int,
    keys: &'a [&'a [u8]],
    argv: &'a [&'a [u8]],
    as_function: bool,
    prelude_source: *const std::ffi::c_char,
    out: &'a mut ReplyBuf,
    outcome: Result<(), convert::ScriptError>,
    panicked: bool,
}

/// The protected part of a run (see [`Vm::run_with_args`]): called by
/// `lua_pcall` with the [`ProtectedRun`] as a light userdata.
unsafe extern "C-unwind" fn run_protected(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: `run_with_args` passes the pointer it was given, to a
    // `ProtectedRun` alive for the whole call and used by nothing else
    // meanwhile.
    let run = unsafe { &mut *ffi::lua_touserdata(state, 1).cast::<ProtectedRun>() };
    // A panic must not unwind through Lua's C frames; Lua errors (memory)
    // longjmp past this frame, which holds nothing with a destructor.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: a valid state inside a protected call; only the raw API,
        // on a stack of [handler, function, KEYS, ARGV] built here.
        unsafe { run_on_stack(state, run) }
    }));
    if caught.is_err() {
        run.panicked = true;
    }
    0
}

/// # Safety
/// `state` is the main thread of a VM, inside the protected call of
/// [`Vm::run_with_args`].
unsafe fn run_on_stack(state: *mut ffi::lua_State, run: &mut ProtectedRun) {
    // SAFETY: caller contract. The globals are set with raw sets (no
    // metamethods).
    unsafe {
        ffi::lua_settop(state, 0);
        bridge::arm_timeout_hook(state, run.prelude_source);
        ffi::lua_checkstack(state, 8);
        ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, run.handler.into());
        ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, run.function.into());
        new_array(state, run.keys);
        new_array(state, run.argv);
        let nargs = if run.as_function {
            2
        } else {
            set_global(state, b"KEYS", 3);
            set_global(state, b"ARGV", 4);
            ffi::lua_settop(state, 2);
            0
        };
        // One result, as Redis takes; on an error, what the handler made
        // of it (a memory error skips the handler: its text).
        let rc = ffi::lua_pcall(state, nargs, 1, 1);
        if rc == 0 {
            // Converted with the value second on the stack, as Redis does
            // (its error handler, then the value): how deep a reply may
            // nest depends on the stack space left.
            ffi::lua_settop(state, 2);
            convert::write_reply(state, 2, run.out, 0);
        } else {
            run.outcome = Err(convert::script_error(state, ffi::lua_gettop(state)));
        }
        if !run.as_function {
            ffi::lua_pushnil(state);
            set_global(state, b"KEYS", -1);
            set_global(state, b"ARGV", -1);
        }
    }
}
