//! The base and table functions that reach into tables directly, guarded
//! for the sandbox's read-only tables.
//!
//! Redis 7.0 marks the library tables and globals read-only inside its Lua
//! VM, so every write to them fails with "Attempt to modify a readonly
//! table": an assignment (with the script's position), and a write made by
//! a C function such as `rawset`, `setmetatable` or `table.insert` (without
//! one, as C code has no line). Tessera's Lua is stock 5.1, where scripts see
//! read-only views instead (see the prelude's `readonly`): empty proxies
//! whose `__newindex` refuses assignments. The C functions that bypass
//! metamethods would write into a proxy (or into a real table a loaded chunk
//! reached) unchecked, so they are replaced here by C functions that refuse a
//! read-only table, read through a view to its table (`rawget`, `next`,
//! `pairs`, `getmetatable`), and otherwise call the original C function in
//! their own frame. Being C functions called under the original names, their
//! argument errors name the function and the script's line exactly as
//! Redis's do, which a Lua wrapper (one more frame) could not.

use std::ffi::c_int;
use std::sync::OnceLock;

use mlua::ffi::{self, lua_CFunction, lua_State};
use mlua::{Lua, Table};

/// The original C functions, the same in every state (one Lua library).
struct Originals {
    rawset: lua_CFunction,
    rawget: lua_CFunction,
    next: lua_CFunction,
    getmetatable: lua_CFunction,
    setmetatable: lua_CFunction,
    insert: lua_CFunction,
    remove: lua_CFunction,
    sort: lua_CFunction,
}

static ORIGINALS: OnceLock<Originals> = OnceLock::new();

const READONLY: &std::ffi::CStr = c"Attempt to modify a readonly table";

/// Installs the guarded functions into `globals` and its `table` library
/// (before the library is hidden behind its view). `real_of` maps each view
/// to its table, `protected` holds the real tables that are read-only, and
/// `metatable_view` what `getmetatable` shows of a view (or, keyed by the
/// string metatable, of strings).
pub fn install(
    lua: &Lua,
    globals: &Table,
    real_of: &Table,
    protected: &Table,
    metatable_view: &Table,
) -> mlua::Result<()> {
    let table: Table = globals.raw_get("table")?;
    let mut installed = false;
    // SAFETY: exec_raw gives the closure a valid state with the five tables
    // at indexes 1-5; the closure uses the raw API within the stack space
    // Lua guarantees a C function (LUA_MINSTACK, 20 slots, more than the
    // few it pushes), reads the original functions only from the standard
    // libraries' own entries, and leaves nothing it returns.
    unsafe {
        lua.exec_raw::<()>(
            (globals, &table, real_of, protected, metatable_view),
            |state| {
                let (g, t, real, prot, mtv) = (1, 2, 3, 4, 5);
                let c_fn = |owner: c_int, name: &std::ffi::CStr| -> Option<lua_CFunction> {
                    ffi::lua_getfield(state, owner, name.as_ptr());
                    let f = ffi::lua_tocfunction(state, -1);
                    ffi::lua_pop(state, 1);
                    f
                };
                let found = || -> Option<Originals> {
                    Some(Originals {
                        rawset: c_fn(g, c"rawset")?,
                        rawget: c_fn(g, c"rawget")?,
                        next: c_fn(g, c"next")?,
                        getmetatable: c_fn(g, c"getmetatable")?,
                        setmetatable: c_fn(g, c"setmetatable")?,
                        insert: c_fn(t, c"insert")?,
                        remove: c_fn(t, c"remove")?,
                        sort: c_fn(t, c"sort")?,
                    })
                };
                if ORIGINALS.get().is_none() {
                    let Some(o) = found() else {
                        return;
                    };
                    let _ = ORIGINALS.set(o);
                }
                let set = |owner: c_int, name: &std::ffi::CStr, f: lua_CFunction, ups: &[c_int]| {
                    for &u in ups {
                        ffi::lua_pushvalue(state, u);
                    }
                    ffi::lua_pushcclosure(state, f, ups.len() as c_int);
                    ffi::lua_setfield(state, owner, name.as_ptr());
                };
                set(g, c"rawset", guarded_rawset, &[real, prot]);
                set(g, c"setmetatable", guarded_setmetatable, &[real, prot]);
                set(t, c"insert", guarded_insert, &[real, prot]);
                set(t, c"remove", guarded_remove, &[real, prot]);
                set(t, c"sort", guarded_sort, &[real, prot]);
                set(g, c"rawget", view_rawget, &[real]);
                set(g, c"unpack", bounded_unpack, &[real]);
                set(g, c"getmetatable", view_getmetatable, &[real, mtv]);
                set(g, c"next", view_next, &[real]);
                // pairs hands out a guarded next of its own: in Lua, the
                // generator is another closure than the global `next`.
                ffi::lua_pushvalue(state, real);
                ffi::lua_pushcclosure(state, view_next, 1);
                ffi::lua_pushcclosure(state, view_pairs, 1);
                ffi::lua_setfield(state, g, c"pairs".as_ptr());
                installed = true;
            },
        )?;
    }
    if !installed {
        return Err(mlua::Error::runtime(
            "the base and table libraries must be loaded before the sandbox",
        ));
    }
    Ok(())
}

fn originals() -> &'static Originals {
    ORIGINALS
        .get()
        .expect("the guarded functions are installed only after the originals are known")
}

/// Whether the value at `idx` is a read-only table: a view (upvalue 1 maps
/// it to its table) or a protected real table (upvalue 2).
///
/// # Safety
/// A C closure with those upvalues, `idx` a valid positive index.
unsafe fn is_readonly(state: *mut lua_State, idx: c_int) -> bool {
    // SAFETY: per the contract; each lookup pushes one value and pops it.
    unsafe {
        if ffi::lua_type(state, idx) != ffi::LUA_TTABLE {
            return false;
        }
        for up in [1, 2] {
            ffi::lua_pushvalue(state, idx);
            ffi::lua_rawget(state, ffi::lua_upvalueindex(up));
            let found = ffi::lua_isnil(state, -1) == 0;
            ffi::lua_pop(state, 1);
            if found {
                return true;
            }
        }
        false
    }
}

/// Replaces a view at `idx` by its table (upvalue 1 maps views to tables).
///
/// # Safety
/// A C closure with that upvalue, `idx` a valid positive index.
unsafe fn unwrap_view(state: *mut lua_State, idx: c_int) {
    // SAFETY: per the contract; leaves the stack as it was but for `idx`.
    unsafe {
        if ffi::lua_type(state, idx) != ffi::LUA_TTABLE {
            return;
        }
        ffi::lua_pushvalue(state, idx);
        ffi::lua_rawget(state, ffi::lua_upvalueindex(1));
        if ffi::lua_isnil(state, -1) != 0 {
            ffi::lua_pop(state, 1);
        } else {
            ffi::lua_replace(state, idx);
        }
    }
}

/// The length `#` of a table at `idx`, through a view to its table.
///
/// # Safety
/// As for [`unwrap_view`].
unsafe fn real_len(state: *mut lua_State, idx: c_int) -> usize {
    // SAFETY: per the contract; the copy pushed is popped.
    unsafe {
        ffi::lua_pushvalue(state, idx);
        let top = ffi::lua_gettop(state);
        unwrap_view(state, top);
        let n = ffi::lua_objlen(state, -1);
        ffi::lua_pop(state, 1);
        n
    }
}

/// Raises the read-only error as Lua's VM raises it from a C function:
/// the bare message, no position.
///
/// # Safety
/// A C function's state; unwinds (longjmp) out of the caller, so no Rust
/// value with a destructor may be alive in it.
unsafe fn refuse(state: *mut lua_State) -> c_int {
    // SAFETY: per the contract.
    unsafe {
        ffi::lua_pushstring(state, READONLY.as_ptr());
        ffi::lua_error(state)
    }
}

// The functions below are lua_CFunctions: Lua calls them with a valid state
// and the upvalues `install` gave them; they use only the raw API, and no
// Rust value with a destructor is alive when a Lua error unwinds out of
// them. Each makes the original's argument checks, in its order, before it
// refuses a read-only table.

/// `unpack` as Redis's Lua has it. Stock 5.1.5 counts a range as
/// `e - i + 1` in an int, which overflows for ranges near the int limits
/// (`unpack(t, 0, 2147483647)`); the overflow is undefined in C, the check
/// meant to catch it does not, and the pushes run past the stack (the
/// server aborts). The count is taken in unsigned arithmetic, as Redis
/// patched it, and the table is read through a view.
unsafe extern "C-unwind" fn bounded_unpack(state: *mut lua_State) -> c_int {
    // SAFETY: see above; the pushes are within what lua_checkstack granted.
    unsafe {
        ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
        unwrap_view(state, 1);
        // (luaL_optint and luaL_checkint: C casts to int.)
        let first = ffi::luaL_optinteger(state, 2, 1) as c_int;
        let last = if ffi::lua_isnoneornil(state, 3) != 0 {
            ffi::lua_objlen(state, 1) as c_int
        } else {
            ffi::luaL_checkinteger(state, 3) as c_int
        };
        if first > last {
            return 0;
        }
        let span = (last as u32).wrapping_sub(first as u32);
        if span >= i32::MAX as u32 || ffi::lua_checkstack(state, span as c_int + 1) == 0 {
            return ffi::luaL_error(state, c"too many results to unpack".as_ptr());
        }
        let mut at = first;
        ffi::lua_rawgeti_(state, 1, at);
        while at < last {
            at += 1;
            ffi::lua_rawgeti_(state, 1, at);
        }
        span as c_int + 1
    }
}

unsafe extern "C-unwind" fn guarded_rawset(state: *mut lua_State) -> c_int {
    // SAFETY: see above.
    unsafe {
        ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
        ffi::luaL_checkany(state, 2);
        ffi::luaL_checkany(state, 3);
        if is_readonly(state, 1) {
            return refuse(state);
        }
        (originals().rawset)(state)
    }
}

unsafe extern "C-unwind" fn guarded_setmetatable(state: *mut lua_State) -> c_int {
    // SAFETY: see above.
    unsafe {
        let t = ffi::lua_type(state, 2);
        ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
        ffi::luaL_argcheck(
            state,
            c_int::from(t == ffi::LUA_TNIL || t == ffi::LUA_TTABLE),
            2,
            c"nil or table expected".as_ptr(),
        );
        // (A view's metatable is protected; Redis's read-only tables have
        // none, so it is the read-only error that is raised.)
        if is_readonly(state, 1) {
            return refuse(state);
        }
        (originals().setmetatable)(state)
    }
}

unsafe extern "C-unwind" fn guarded_insert(state: *mut lua_State) -> c_int {
    // SAFETY: see above.
    unsafe {
        ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
        if is_readonly(state, 1) {
            // Every valid call writes.
            match ffi::lua_gettop(state) {
                2 => {}
                3 => {
                    ffi::luaL_checkinteger(state, 2);
                }
                _ => {
                    return ffi::luaL_error(
                        state,
                        c"wrong number of arguments to 'insert'".as_ptr(),
                    );
                }
            }
            return refuse(state);
        }
        (originals().insert)(state)
    }
}

unsafe extern "C-unwind" fn guarded_remove(state: *mut lua_State) -> c_int {
    // SAFETY: see above.
    unsafe {
        ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
        if is_readonly(state, 1) {
            // As Lua reads them (C ints): outside 1..=#t nothing is
            // removed, nothing written.
            let e = real_len(state, 1) as c_int;
            let pos = ffi::luaL_optinteger(state, 2, e as ffi::lua_Integer) as c_int;
            if !(1 <= pos && pos <= e) {
                return 0;
            }
            return refuse(state);
        }
        (originals().remove)(state)
    }
}

unsafe extern "C-unwind" fn guarded_sort(state: *mut lua_State) -> c_int {
    // SAFETY: see above.
    unsafe {
        ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
        if is_readonly(state, 1) {
            if ffi::lua_isnoneornil(state, 2) == 0 {
                ffi::luaL_checktype(state, 2, ffi::LUA_TFUNCTION);
            }
            // Fewer than two elements are left as they are. (No read-only
            // table has an array part: the library tables and globals are
            // hash tables and cannot be given one, so this never has to
            // tell an ordered pair, which Lua leaves, from one it swaps.)
            if real_len(state, 1) < 2 {
                return 0;
            }
            return refuse(state);
        }
        (originals().sort)(state)
    }
}

unsafe extern "C-unwind" fn view_rawget(state: *mut lua_State) -> c_int {
    // SAFETY: see above.
    unsafe {
        unwrap_view(state, 1);
        (originals().rawget)(state)
    }
}

unsafe extern "C-unwind" fn view_next(state: *mut lua_State) -> c_int {
    // SAFETY: see above.
    unsafe {
        unwrap_view(state, 1);
        (originals().next)(state)
    }
}

/// `pairs`: as Lua's, with the guarded `next` (upvalue 1) as the
/// generator, so a view is walked over its table without handing the table
/// itself to the script.
unsafe extern "C-unwind" fn view_pairs(state: *mut lua_State) -> c_int {
    // SAFETY: see above.
    unsafe {
        ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_pushvalue(state, 1);
        ffi::lua_pushnil(state);
        3
    }
}

/// `getmetatable`: what the view shows (upvalue 2) for a view (upvalue 1),
/// the string metatable's view for a string, else Lua's answer.
unsafe extern "C-unwind" fn view_getmetatable(state: *mut lua_State) -> c_int {
    // SAFETY: see above.
    unsafe {
        ffi::luaL_checkany(state, 1);
        match ffi::lua_type(state, 1) {
            ffi::LUA_TTABLE => {
                ffi::lua_pushvalue(state, 1);
                ffi::lua_rawget(state, ffi::lua_upvalueindex(1));
                let is_view = ffi::lua_isnil(state, -1) == 0;
                ffi::lua_pop(state, 1);
                if is_view {
                    ffi::lua_pushvalue(state, 1);
                    ffi::lua_rawget(state, ffi::lua_upvalueindex(2));
                    return 1;
                }
            }
            // (lua_getmetatable pushes the metatable when there is one.)
            ffi::LUA_TSTRING if ffi::lua_getmetatable(state, 1) != 0 => {
                ffi::lua_rawget(state, ffi::lua_upvalueindex(2));
                if ffi::lua_isnil(state, -1) == 0 {
                    return 1;
                }
                ffi::lua_pop(state, 1);
            }
            _ => {}
        }
        (originals().getmetatable)(state)
    }
}
