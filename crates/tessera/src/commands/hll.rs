//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.
//!
//! A sketch is an ordinary string value in Redis's exact byte layout
//! (`types::hll`), so GET, SET, DUMP and friends see it as redis-server
//! would. Every command that may write a sketch first makes its value
//! `raw` (Redis's `dbUnshareStringValue`), PFCOUNT included, since it
//! stores the cardinality it computes in the header.

use super::args::c_str_prefix;
use super::flags::*;
use super::meta::{arg as a, docflags, ks, ksflags::*};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::events::Class;
use crate::keyspace::Entry;
use crate::types::hll::{self, Corrupt};
use crate::types::{StrValue, Value};

/// A HyperLogLog command: group `hyperloglog`, ACL category `@hyperloglog`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "hyperloglog", since, summary, handler)
        .acl(acl::HYPERLOGLOG)
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "pfadd",
        -2,
        WRITE | DENYOOM | FAST,
        "2.8.9",
        "Adds elements to a HyperLogLog key, creating the key if needed.",
        pfadd,
    )
    .complexity("O(1) to add every element.")
    .key_specs(&[ks(RW | INSERT, 1, 0, 1)])
    .args(&[a::key("key", 0), a::string("element").optional().multiple()]),
    cmd(
        "pfcount",
        -2,
        READONLY | MAY_REPLICATE,
        "2.8.9",
        "Returns the approximate cardinality of the union of one or more HyperLogLog keys.",
        pfcount,
    )
    .complexity(
        "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
    )
    .key_specs(&[ks(RW | ACCESS, 1, -1, 1).notes(
        "RW because it may change the internal representation of the key, and propagate to replicas",
    )])
    .args(&[a::key("key", 0).multiple()]),
    cmd(
        "pfmerge",
        -2,
        WRITE | DENYOOM,
        "2.8.9",
        "Merges HyperLogLog keys into a destination key.",
        pfmerge,
    )
    .complexity("O(N) to merge N HyperLogLogs, but with high constant times.")
    .key_specs(&[ks(RW | ACCESS | INSERT, 1, 0, 1), ks(RO | ACCESS, 2, -1, 1)])
    .args(&[a::key("destkey", 0), a::key("sourcekey", 1).multiple()]),
    cmd(
        "pfdebug",
        3,
        WRITE | DENYOOM | ADMIN,
        "2.8.9",
        "Internal command for inspecting and converting HyperLogLog values.",
        pfdebug,
    )
    .complexity("N/A")
    .key_specs(&[ks(RW | ACCESS, 2, 0, 1)])
    .doc_flags(docflags::SYSCMD)
    .args(&[a::string("subcommand"), a::key("key", 0)]),
    cmd(
        "pfselftest",
        1,
        ADMIN,
        "2.8.9",
        "Internal command that tests the HyperLogLog implementation.",
        pfselftest,
    )
    .complexity("N/A")
    .doc_flags(docflags::SYSCMD),
];

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

fn corrupt(_: Corrupt) -> CmdError {
    CmdError::msg(CORRUPT)
}

/// The value at a key if it is a valid sketch: WRONGTYPE for another type,
/// Redis's HLL-specific WRONGTYPE for a string that is not a sketch (an
/// integer-encoded string never is).
fn sketch(e: &mut Entry) -> Result<&mut StrValue, CmdError> {
    let Value::Str(s) = &mut e.value else {
        return Err(CmdError::WrongType);
    };
    let bytes: &[u8] = match s {
        StrValue::Int(_) => return Err(CmdError::msg(NOT_HLL)),
        StrValue::Bytes(b) => b,
        StrValue::Growable(v) => v,
    };
    if !hll::is_hll(bytes) {
        return Err(CmdError::msg(NOT_HLL));
    }
    Ok(s)
}

/// The bytes of a checked sketch (never an integer).
fn sketch_bytes(s: &StrValue) -> &[u8] {
    match s {
        StrValue::Bytes(b) => b,
        StrValue::Growable(v) => v,
        StrValue::Int(_) => unreachable!("checked by sketch()"),
    }
}

fn pfadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let elements = &args[2..];
    let sparse_max = ctx.srv.config.hll_sparse_max_bytes();
    let updated = ctx.with_key(key, |db| -> Result<bool, CmdError> {
        let updated = match db.get_write(key) {
            Some(e) => {
                let v = sketch(e)?.make_raw();
                let mut updated = false;
                for ele in elements {
                    updated |= hll::add(v, ele, sparse_max).map_err(corrupt)?;
                }
                if updated {
                    hll::invalidate_cache(v);
                }
                updated
            }
            None => {
                let mut v = hll::new_sparse();
                for ele in elements {
                    hll::add(&mut v, ele, sparse_max).map_err(corrupt)?;
                }
                // Creating the key is an update even with no elements.
                hll::invalidate_cache(&mut v);
                db.set(key, Value::Str(StrValue::raw(v)));
                true
            }
        };
        if updated {
            db.changed(key, Class::STRING, "pfadd");
        }
        Ok(updated)
    })?;
    ctx.out.int(updated as i64);
    Ok(())
}

fn pfcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    if keys.len() > 1 {
        // The union's cardinality; the keys are left as they are.
        let card = ctx.with_keys(keys.iter().copied(), |db| -> Result<u64, CmdError> {
            let mut max: Box<hll::Raw> = Box::new([0; hll::REGISTERS]);
            for k in keys {
                if let Some(e) = db.get_read(k) {
                    let s = sketch(e)?;
                    hll::merge_into(&mut max, sketch_bytes(s)).map_err(corrupt)?;
                }
            }
            Ok(hll::count_raw(&max))
        })?;
        ctx.out.int(card as i64);
        return Ok(());
    }
    let key = keys[0];
    let card = ctx.with_key(key, |db| -> Result<u64, CmdError> {
        let Some(e) = db.get_read(key) else {
            return Ok(0);
        };
        let v = sketch(e)?.make_raw();
        if let Some(card) = hll::cached_card(v) {
            return Ok(card);
        }
        let card = hll::count(v).map_err(corrupt)?;
        hll::set_cached_card(v, card);
        // The cache is part of the value: watchers and caches must know.
        db.signal_modified(key);
        Ok(card)
    })?;
    ctx.out.int(card as i64);
    Ok(())
}

fn pfmerge(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let dest = args[1];
    let sparse_max = ctx.srv.config.hll_sparse_max_bytes();
    ctx.with_keys(keys.iter().copied(), |db| -> CmdResult {
        // The union of every key, the destination included.
        let mut max: Box<hll::Raw> = Box::new([0; hll::REGISTERS]);
        let mut use_dense = false;
        for k in keys {
            if let Some(e) = db.get_read(k) {
                let bytes = sketch_bytes(sketch(e)?);
                use_dense |= hll::encoding(bytes) == hll::DENSE;
                hll::merge_into(&mut max, bytes).map_err(corrupt)?;
            }
        }
        let write = |v: &mut Vec<u8>| -> CmdResult {
            if use_dense {
                hll::sparse_to_dense(v).map_err(corrupt)?;
            }
            for (i, &r) in max.iter().enumerate() {
                if r != 0 {
                    // Cannot fail: the destination was checked above.
                    let _ = hll::set_register(v, i, r, sparse_max);
                }
            }
            hll::invalidate_cache(v);
            Ok(())
        };
        match db.get_write(dest) {
            Some(e) => {
                let Value::Str(s) = &mut e.value else {
                    unreachable!("the destination was checked as a source");
                };
                write(s.make_raw())?;
            }
            None => {
                let mut v = hll::new_sparse();
                write(&mut v)?;
                db.set(dest, Value::Str(StrValue::raw(v)));
            }
        }
        // Redis reports a merge as "pfadd", whether or not anything changed.
        db.changed(dest, Class::STRING, "pfadd");
        Ok(())
    })?;
    ctx.out.ok();
    Ok(())
}

fn pfdebug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (sub, key) = (args[1], args[2]);
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| -> CmdResult {
        let Some(e) = db.get_write(key) else {
            return Err(CmdError::msg("ERR The specified key does not exist"));
        };
        let v = sketch(e)?.make_raw();
        let word = |w: &str| c_str_prefix(sub, usize::MAX).eq_ignore_ascii_case(w);
        // As Redis: a conversion to dense changes the value, so the command
        // propagates (a replica converts too).
        let was_sparse = hll::encoding(v) == hll::SPARSE;
        let converts = word("getreg") || word("todense");
        if word("getreg") {
            hll::sparse_to_dense(v).map_err(corrupt)?;
            out.array(hll::REGISTERS);
            for r in hll::dense_registers(v) {
                out.int(r as i64);
            }
        } else if word("decode") {
            if hll::encoding(v) != hll::SPARSE {
                return Err(CmdError::msg("ERR HLL encoding is not sparse"));
            }
            out.bulk(hll::decode_sparse(v).as_bytes());
        } else if word("encoding") {
            out.simple(if hll::encoding(v) == hll::DENSE {
                b"dense"
            } else {
                b"sparse"
            });
        } else if word("todense") {
            hll::sparse_to_dense(v).map_err(corrupt)?;
            out.int(was_sparse as i64);
        } else {
            return Err(CmdError::bytes(&[
                b"ERR Unknown PFDEBUG subcommand '",
                super::args::c_bytes(sub),
                b"'",
            ]));
        }
        if converts && was_sparse {
            db.note_change();
        }
        Ok(())
    })
}

fn pfselftest(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    hll::self_test(ctx.srv.config.hll_sparse_max_bytes()).map_err(CmdError::msg)?;
    ctx.out.ok();
    Ok(())
}
