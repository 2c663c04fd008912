//! Redis 7.0 functions: libraries loaded with FUNCTION LOAD, whose code
//! registers named functions with `redis.register_function`.
//!
//! The library registry is process-wide ([`Libraries`], in
//! [`super::Scripts`]); each thread's Lua state loads a library's code the
//! first time one of its functions is called there. Any change to the
//! registry bumps the script generation, so every thread starts over from a
//! fresh state that matches it.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use mlua::{Function, MultiValue, Table, Value};

use super::{ScriptFlags, Vm};

/// A registered function's public description.
#[derive(Clone, Debug)]
pub struct FunctionMeta {
    pub name: String,
    pub description: Option<String>,
    pub flags: ScriptFlags,
}

#[derive(Debug)]
pub struct Library {
    pub name: String,
    pub code: Arc<[u8]>,
    pub functions: Vec<FunctionMeta>,
}

/// Every loaded library, and which library each function belongs to.
#[derive(Default)]
pub struct Libraries {
    pub libs: BTreeMap<String, Arc<Library>>,
    /// Library of each function, by the function's lower-cased name:
    /// Redis 7.0 looks functions up (and finds clashes) ignoring case.
    pub functions: HashMap<String, String>,
}

impl Libraries {
    pub fn function(&self, name: &str) -> Option<(Arc<Library>, FunctionMeta)> {
        let lib = self
            .libs
            .get(self.functions.get(&name.to_ascii_lowercase())?)?;
        let meta = lib
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))?
            .clone();
        Some((lib.clone(), meta))
    }

    /// Adds a library (replacing one of the same name when `replace`).
    /// Fails, leaving everything as it was, on a name collision.
    pub fn add(&mut self, lib: Library, replace: bool) -> Result<(), String> {
        if self.libs.contains_key(&lib.name) && !replace {
            return Err(format!("ERR Library '{}' already exists", lib.name));
        }
        for f in &lib.functions {
            if let Some(owner) = self.functions.get(&f.name.to_ascii_lowercase()) {
                if *owner != lib.name {
                    return Err(format!("ERR Function {} already exists", f.name));
                }
            }
        }
        self.remove(&lib.name.clone());
        for f in &lib.functions {
            self.functions
                .insert(f.name.to_ascii_lowercase(), lib.name.clone());
        }
        self.libs.insert(lib.name.clone(), Arc::new(lib));
        Ok(())
    }

    pub fn remove(&mut self, name: &str) -> Option<Arc<Library>> {
        let lib = self.libs.remove(name)?;
        for f in &lib.functions {
            self.functions.remove(&f.name.to_ascii_lowercase());
        }
        Some(lib)
    }

    pub fn function_count(&self) -> usize {
        self.functions.len()
    }
}

/// Reads the `#!<engine> name=<lib>` first line, split as Redis splits it
/// (quotes allowed, any whitespace), with Redis's checks in its order:
/// the metadata, the name's characters, then the engine.
pub fn parse_metadata(code: &[u8]) -> Result<String, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let invalid = || "ERR Invalid library metadata".to_string();
    let end = super::shebang_end(code).ok_or_else(invalid)?;
    let parts = match crate::config::split_args(&code[..end]) {
        Some(parts) if !parts.is_empty() => parts,
        _ => return Err(invalid()),
    };
    let engine = String::from_utf8_lossy(parts[0].get(2..).unwrap_or_default()).into_owned();
    let mut name: Option<String> = None;
    for p in &parts[1..] {
        if p.len() >= 5 && p[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(String::from_utf8_lossy(&p[5..]).into_owned());
            continue;
        }
        return Err(format!(
            "ERR Invalid metadata value given: {}",
            String::from_utf8_lossy(p)
        ));
    }
    let Some(name) = name else {
        return Err("ERR Library name was not given".into());
    };
    if !valid_name(&name) {
        return Err(NAME_RULES.into());
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    Ok(name)
}

const NAME_RULES: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The library code with its shebang line blanked (line numbers kept).
fn body(code: &[u8]) -> &[u8] {
    let end = memchr::memchr(b'\n', code).unwrap_or(code.len());
    &code[end..]
}

/// The functions a library's load registers; None once its code has run, so
/// that a `redis.register_function` the library kept and calls later fails
/// as in Redis instead of registering nothing.
type Registered = Rc<RefCell<Option<Vec<(FunctionMeta, Function)>>>>;

/// A Redis-style error raised from Rust (see the prelude's error handler).
fn lua_err(msg: &str) -> mlua::Error {
    mlua::Error::runtime(format!("\u{1}tessera:{msg}"))
}

/// Runs a library's code in `vm`, collecting its functions. Errors carry
/// Redis's texts, the library's bytes in them as they are. `bounded`:
/// FUNCTION LOAD's run, limited to Redis's 500 ms (a library already
/// accepted, loaded again into another thread's state, is not).
pub fn load(
    vm: &mut Vm,
    name: &str,
    code: &[u8],
    bounded: bool,
) -> Result<(Library, Vec<Function>), Vec<u8>> {
    let err = |e: mlua::Error| format!("ERR {e}").into_bytes();
    let lua = vm.lua.clone();
    let registered: Registered = Rc::new(RefCell::new(Some(Vec::new())));
    let (env, inner) = load_env(vm, &registered).map_err(err)?;
    // (The body starts with the blanked shebang line: never bytecode.)
    let chunk = super::load_text(&lua, body(code), "@user_function")
        .map_err(|e| [b"ERR Error compiling function: ".as_slice(), &e].concat())?;
    chunk.set_environment(env).map_err(err)?;
    vm.arm_timeout_hook();
    let ran = if bounded {
        super::bridge::with_load_deadline(|| vm.run(chunk))
    } else {
        vm.run(chunk)
    };
    let regs = registered.borrow_mut().take().unwrap_or_default();
    match ran.map_err(err)? {
        Ok(_) => {}
        Err(t) => {
            let msg: Vec<u8> = match t.raw_get::<Value>("err") {
                Ok(Value::String(s)) => s.as_bytes().to_vec(),
                _ => b"ERR unknown error".to_vec(),
            };
            return Err([b"ERR Error registering functions: ".as_slice(), &msg].concat());
        }
    }
    // Once loaded, the library's functions see the whole redis API and
    // every global.
    let see_globals = || -> mlua::Result<()> {
        inner.raw_set("redis", vm.redis_fn_ro.clone())?;
        let mt = lua.create_table()?;
        mt.raw_set("__index", vm.globals.clone())?;
        inner.set_metatable(Some(mt));
        Ok(())
    };
    see_globals().map_err(err)?;
    if regs.is_empty() {
        return Err(b"ERR No functions registered".to_vec());
    }
    let (metas, funcs): (Vec<_>, Vec<_>) = regs.into_iter().unzip();
    Ok((
        Library {
            name: name.to_string(),
            code: code.into(),
            functions: metas,
        },
        funcs,
    ))
}

/// The environment library code runs in: read-only, and holding only a
/// `redis` table that offers what is allowed while loading.
fn load_env(vm: &Vm, registered: &Registered) -> mlua::Result<(Table, Table)> {
    let lua = &vm.lua;
    let redis = lua.create_table()?;
    let regs = registered.clone();
    let register = lua.create_function(move |_, args: MultiValue| {
        let outside_load =
            || lua_err("ERR redis.register_function can only be called on FUNCTION LOAD command");
        if regs.borrow().is_none() {
            return Err(outside_load());
        }
        // (Not borrowed while the arguments are read: that can run Lua.)
        let (meta, f) = register_args(args)?;
        let mut r = regs.borrow_mut();
        let Some(r) = r.as_mut() else {
            return Err(outside_load());
        };
        if r.iter().any(|(m, _)| m.name == meta.name) {
            return Err(lua_err("ERR Function already exists in the library"));
        }
        r.push((meta, f));
        Ok(())
    })?;
    redis.raw_set(
        "register_function",
        super::raising_tables(lua, &vm.internals, register)?,
    )?;
    for key in [
        "log",
        "LOG_DEBUG",
        "LOG_VERBOSE",
        "LOG_NOTICE",
        "LOG_WARNING",
        "REDIS_VERSION",
        "REDIS_VERSION_NUM",
    ] {
        redis.raw_set(key, vm.redis.raw_get::<Value>(key)?)?;
    }
    let readonly: Function = vm.internals.raw_get("readonly")?;
    let redis_ro: Table = readonly.call((redis, true))?;
    // While the library's top-level code runs, `redis` is its only global,
    // as in Redis 7.0; `load` adds the rest once it has run.
    let inner = lua.create_table()?;
    inner.raw_set("redis", redis_ro)?;
    let env: Table = readonly.call((inner.clone(), true))?;
    Ok((env, inner))
}

/// Parses `redis.register_function(name, fn)` or the named-arguments
/// table form.
/// A value Lua's `lua_isstring` accepts (a string or a number, which
/// Redis reads as its text).
fn lua_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.to_string_lossy()),
        Value::Integer(i) => Some(super::convert::lua_number_text(*i as f64)),
        Value::Number(n) => Some(super::convert::lua_number_text(*n)),
        _ => None,
    }
}

fn register_args(args: MultiValue) -> mlua::Result<(FunctionMeta, Function)> {
    let args: Vec<Value> = args.into_iter().collect();
    match args.as_slice() {
        [Value::Table(t)] => {
            let mut name = None;
            let mut callback = None;
            let mut description = None;
            let mut flags = ScriptFlags {
                shebang: true,
                ..ScriptFlags::default()
            };
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                // (Keys and flag names are matched ignoring case, and numbers
                // pass for strings, as in Redis.)
                let Some(key) = lua_text(&k) else {
                    return Err(lua_err("ERR named argument key given to redis.register_function is not a string"));
                };
                match key.to_ascii_lowercase().as_str() {
                    "function_name" => match lua_text(&v) {
                        Some(s) => name = Some(s),
                        None => return Err(lua_err("ERR function_name argument given to redis.register_function must be a string")),
                    },
                    "callback" => match v {
                        Value::Function(f) => callback = Some(f),
                        _ => return Err(lua_err("ERR callback argument given to redis.register_function must be a function")),
                    },
                    "description" => match lua_text(&v) {
                        Some(s) => description = Some(s),
                        None => return Err(lua_err("ERR description argument given to redis.register_function must be a string")),
                    },
                    "flags" => match v {
                        Value::Table(ft) => {
                            for f in ft.sequence_values::<Value>() {
                                match lua_text(&f?) {
                                    Some(s) => flags
                                        .set(&s.to_ascii_lowercase())
                                        .map_err(|_| lua_err("ERR unknown flag given"))?,
                                    None => return Err(lua_err("ERR unknown flag given")),
                                }
                            }
                        }
                        _ => return Err(lua_err("ERR flags argument to redis.register_function must be a table representing function flags")),
                    },
                    _ => return Err(lua_err("ERR unknown argument given to redis.register_function")),
                }
            }
            let Some(name) = name else {
                return Err(lua_err("ERR redis.register_function must get a function name argument"));
            };
            let Some(callback) = callback else {
                return Err(lua_err("ERR redis.register_function must get a callback argument"));
            };
            check_function_name(&name)?;
            Ok((
                FunctionMeta {
                    name,
                    description,
                    flags,
                },
                callback,
            ))
        }
        [_] => Err(lua_err("ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")),
        [n, f] => {
            let Some(name) = lua_text(n) else {
                return Err(lua_err("ERR first argument to redis.register_function must be a string"));
            };
            let Value::Function(f) = f else {
                return Err(lua_err("ERR second argument to redis.register_function must be a function"));
            };
            check_function_name(&name)?;
            Ok((
                FunctionMeta {
                    name,
                    description: None,
                    flags: ScriptFlags {
                        shebang: true,
                        ..ScriptFlags::default()
                    },
                },
                f.clone(),
            ))
        }
        _ => Err(lua_err("ERR wrong number of arguments to redis.register_function")),
    }
}

fn check_function_name(name: &str) -> mlua::Result<()> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(lua_err(NAME_RULES))
    }
}

/// The callback of `function` in this thread's state, loading its library
/// here first if needed.
/// Returns its registry entry, valid while this VM lives.
pub fn callback(vm: &mut Vm, lib: &Library, function: &str) -> Result<std::ffi::c_int, String> {
    if !vm.loaded_libraries.contains_key(&lib.name) {
        let (loaded, funcs) = load(vm, &lib.name, &lib.code, false)
            .map_err(|e| String::from_utf8_lossy(&e).into_owned())?;
        let mut map = HashMap::new();
        for (meta, f) in loaded.functions.iter().zip(funcs) {
            if let Ok(k) = vm.lua.create_registry_value(f) {
                map.insert(meta.name.clone(), k);
            }
        }
        vm.loaded_libraries.insert(lib.name.clone(), map);
    }
    vm.loaded_libraries
        .get(&lib.name)
        .and_then(|m| m.get(function))
        .map(|key| key.id())
        .ok_or_else(|| "ERR Function not found".to_string())
}

// FUNCTION DUMP / RESTORE payloads: RDB "function2" records (opcode 245 and
// the library code as an RDB string), then the RDB version (2 bytes, little
// endian) and a CRC64 (Jones, as Redis's) of everything before it; the RDB
// primitives are persistence's.

use crate::persistence::rdb::codec::{self, Reader, OPCODE_FUNCTION2, RDB_VERSION};

pub fn dump(libs: &Libraries) -> Vec<u8> {
    let mut out = Vec::new();
    for lib in libs.libs.values() {
        out.push(OPCODE_FUNCTION2);
        codec::write_blob(&mut out, &lib.code, true);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crate::util::crc64::crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The library codes in a FUNCTION DUMP payload.
pub fn parse_dump(payload: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    const BAD: &str = "ERR DUMP payload version or checksum are wrong";
    if !crate::persistence::rdb::verify_payload(payload) {
        return Err(BAD.into());
    }
    let mut r = Reader::new(&payload[..payload.len() - 10]);
    let mut codes = Vec::new();
    while !r.is_empty() {
        if r.u8().map_err(|_| BAD)? != OPCODE_FUNCTION2 {
            return Err("ERR given type is not a function".into());
        }
        let code = r
            .string()
            .map_err(|_| "ERR payload is not a valid function dump")?;
        codes.push(code);
    }
    Ok(codes)
}
