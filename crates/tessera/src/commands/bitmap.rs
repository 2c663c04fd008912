//! Bitmap and bitfield commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP,
//! BITFIELD, BITFIELD_RO.
//!
//! They work on ordinary string values (an integer-encoded string reads as
//! its decimal text). Writes leave the value `raw`, as Redis's
//! `dbUnshareStringValue` does, and notify only when a bit actually changed
//! or the string grew. The bit arithmetic lives in `util::bits`.

use super::args::int;
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::events::Class;
use crate::keyspace::Entry;
use crate::types::{StrValue, Value};
use crate::util::bits::{self, BitOp, BitOpAcc, Overflow};
use crate::util::numbers::parse_i64;

/// A bitmap command: group `bitmap`, ACL category `@bitmap`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "bitmap", since, summary, handler).acl(acl::BITMAP)
}

const INDEX_UNIT: a::Arg = a::oneof(
    "index_unit",
    &[a::pure("byte", "BYTE"), a::pure("bit", "BIT")],
)
.since("7.0.0")
.optional();
const GET_OP: a::Arg = a::block(
    "encoding_offset",
    &[a::string("encoding"), a::integer("offset")],
);

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "setbit",
        4,
        WRITE | DENYOOM,
        "2.2.0",
        "Sets or clears the bit at an offset of a key's string value, creating the key if needed.",
        setbit,
    )
    .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
    .args(&[a::key("key", 0), a::integer("offset"), a::integer("value")]),
    cmd(
        "getbit",
        3,
        READONLY | FAST,
        "2.2.0",
        "Returns the bit at an offset of a key's string value.",
        getbit,
    )
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
    .args(&[a::key("key", 0), a::integer("offset")]),
    cmd(
        "bitcount",
        -2,
        READONLY,
        "2.6.0",
        "Counts the set bits of a key's string value, optionally within a range.",
        bitcount,
    )
    .complexity("O(N)")
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
    .history(&[("7.0.0", "Added the `BYTE|BIT` option.")])
    .args(&[
        a::key("key", 0),
        a::block(
            "index",
            &[a::integer("start"), a::integer("end"), INDEX_UNIT],
        )
        .optional(),
    ]),
    cmd(
        "bitpos",
        -3,
        READONLY,
        "2.8.7",
        "Finds the first set or clear bit of a key's string value, optionally within a range.",
        bitpos,
    )
    .complexity("O(N)")
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
    .history(&[("7.0.0", "Added the `BYTE|BIT` option.")])
    .args(&[
        a::key("key", 0),
        a::integer("bit"),
        a::block(
            "index",
            &[
                a::integer("start"),
                a::block("end_index", &[a::integer("end"), INDEX_UNIT]).optional(),
            ],
        )
        .optional(),
    ]),
    cmd(
        "bitop",
        -4,
        WRITE | DENYOOM,
        "2.6.0",
        "Stores the bitwise AND, OR, XOR or NOT of string values in a key.",
        bitop,
    )
    .complexity("O(N)")
    .key_specs(&[ks(OW | UPDATE, 2, 0, 1), ks(RO | ACCESS, 3, -1, 1)])
    .args(&[
        a::string("operation"),
        a::key("destkey", 0),
        a::key("key", 1).multiple(),
    ]),
    cmd(
        "bitfield",
        -2,
        WRITE | DENYOOM,
        "3.2.0",
        "Reads, writes and increments integer fields of arbitrary width in a key's string value.",
        bitfield,
    )
    .complexity("O(1) for each subcommand specified")
    .key_specs(&[ks(RW | ACCESS | UPDATE | VARIABLE_FLAGS, 1, 0, 1)
        .notes("This command allows both access and modification of the key")])
    .key_flags_by(bitfield_key_flags)
    .args(&[
        a::key("key", 0),
        a::oneof(
            "operation",
            &[
                GET_OP.token("GET"),
                a::block(
                    "write",
                    &[
                        a::oneof(
                            "wrap_sat_fail",
                            &[
                                a::pure("wrap", "WRAP"),
                                a::pure("sat", "SAT"),
                                a::pure("fail", "FAIL"),
                            ],
                        )
                        .token("OVERFLOW")
                        .optional(),
                        a::oneof(
                            "write_operation",
                            &[
                                a::block(
                                    "encoding_offset_value",
                                    &[
                                        a::string("encoding"),
                                        a::integer("offset"),
                                        a::integer("value"),
                                    ],
                                )
                                .token("SET"),
                                a::block(
                                    "encoding_offset_increment",
                                    &[
                                        a::string("encoding"),
                                        a::integer("offset"),
                                        a::integer("increment"),
                                    ],
                                )
                                .token("INCRBY"),
                            ],
                        ),
                    ],
                ),
            ],
        )
        .optional()
        .multiple(),
    ]),
    cmd(
        "bitfield_ro",
        -2,
        READONLY | FAST,
        "6.0.0",
        "Reads integer fields of arbitrary width in a key's string value.",
        bitfield_ro,
    )
    .complexity("O(1) for each subcommand specified")
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
    .args(&[
        a::key("key", 0),
        GET_OP.token("GET").optional().multiple().multiple_token(),
    ]),
];

const OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";

/// Compares an argument to a keyword the way Redis's `strcasecmp` on the
/// argument's C string does (anything after a NUL is ignored).
fn is_word(arg: &[u8], word: &str) -> bool {
    crate::util::c_str(arg).eq_ignore_ascii_case(word.as_bytes())
}

/// A bit offset, as Redis reads it: a non-negative integer whose byte lies
/// below proto-max-bulk-len. With `field_bits` (BITFIELD) `#N` means N
/// fields of that width.
fn bit_offset(arg: &[u8], field_bits: Option<u32>, limit: u64) -> Result<u64, CmdError> {
    let err = || CmdError::msg(OFFSET_ERR);
    let (digits, mul) = match (arg.first(), field_bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], bits as i64),
        _ => (arg, 1),
    };
    let off = parse_i64(digits).ok_or_else(err)?.wrapping_mul(mul);
    if off < 0 || (off as u64 >> 3) >= limit {
        return Err(err());
    }
    Ok(off as u64)
}

/// The string at a key; WRONGTYPE if it holds something else.
fn as_str(e: Option<&mut Entry>) -> Result<Option<&mut StrValue>, CmdError> {
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::Str(s),
            ..
        }) => Ok(Some(s)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// Redis's lookupStringForBitCommand: the string at `key` made raw and
/// grown with zero bytes to hold bit `max_bit`, or a new one of that size.
/// Runs `f` on its bytes with whether the string was created or grew.
fn with_bits_for_write<R>(
    db: &mut crate::keyspace::Db,
    key: &[u8],
    max_bit: u64,
    f: impl FnOnce(&mut Vec<u8>, bool) -> R,
) -> Result<R, CmdError> {
    let need = (max_bit >> 3) as usize + 1;
    match as_str(db.get_write(key))? {
        Some(s) => {
            let v = s.make_raw();
            let grew = v.len() < need;
            if grew {
                v.resize(need, 0);
            }
            Ok(f(v, grew))
        }
        None => {
            db.set(key, Value::Str(StrValue::raw(vec![0u8; need])));
            let Some(Entry {
                value: Value::Str(s),
                ..
            }) = db.get_write(key)
            else {
                unreachable!("the string was just stored");
            };
            Ok(f(s.make_raw(), true))
        }
    }
}

fn setbit(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let off = bit_offset(args[2], None, ctx.srv.config.proto_max_bulk_len())?;
    let bad_bit = || CmdError::msg("ERR bit is not an integer or out of range");
    let on = parse_i64(args[3]).ok_or_else(bad_bit)?;
    if on & !1 != 0 {
        return Err(bad_bit());
    }
    let on = on == 1;
    let old = ctx.with_key(key, |db| -> Result<bool, CmdError> {
        let (old, dirty) = with_bits_for_write(db, key, off, |v, grew| {
            let old = bits::get_bit(v, off);
            if grew || old != on {
                bits::set_bit(v, off, on);
                (old, true)
            } else {
                (old, false)
            }
        })?;
        if dirty {
            db.changed(key, Class::STRING, "setbit");
        }
        Ok(old)
    })?;
    ctx.out.int(old as i64);
    Ok(())
}

fn getbit(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let off = bit_offset(args[2], None, ctx.srv.config.proto_max_bulk_len())?;
    let bit = ctx.with_key(key, |db| -> Result<bool, CmdError> {
        Ok(match as_str(db.get_read(key))? {
            Some(s) => bits::get_bit(s.as_bytes(&mut itoa::Buffer::new()), off),
            None => false,
        })
    })?;
    ctx.out.int(bit as i64);
    Ok(())
}

/// BYTE or BIT: whether the range is in bits.
fn index_unit(arg: &[u8]) -> Result<bool, CmdError> {
    if is_word(arg, "bit") {
        Ok(true)
    } else if is_word(arg, "byte") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

/// A range in the command's unit, clamped to the string (`len` bytes), as
/// an inclusive range of bits; None when empty.
fn bit_range(start: i64, end: i64, len: i64, in_bits: bool) -> Option<(u64, u64)> {
    let total = if in_bits { len * 8 } else { len };
    let (s, e) = bits::clamp_range(start, end, total);
    if s > e {
        return None;
    }
    Some(if in_bits {
        (s as u64, e as u64)
    } else {
        (s as u64 * 8, e as u64 * 8 + 7)
    })
}

fn bitcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    // A missing key counts 0 and a wrong type fails before the range is
    // even parsed, as in Redis.
    let n = ctx.with_key(key, |db| -> Result<u64, CmdError> {
        let Some(s) = as_str(db.get_read(key))? else {
            return Ok(0);
        };
        let mut scratch = itoa::Buffer::new();
        let bytes = s.as_bytes(&mut scratch);
        let len = bytes.len() as i64;
        let range = match args.len() {
            2 => bit_range(0, -1, len, false),
            4 | 5 => {
                let start = int(args[2])?;
                let end = int(args[3])?;
                if start < 0 && end < 0 && start > end {
                    return Ok(0);
                }
                let in_bits = args.len() == 5 && index_unit(args[4])?;
                bit_range(start, end, len, in_bits)
            }
            _ => return Err(CmdError::Syntax),
        };
        Ok(range.map_or(0, |(first, last)| bits::count_bits(bytes, first, last)))
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

fn bitpos(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let bit = int(args[2])?;
    if bit != 0 && bit != 1 {
        return Err(CmdError::msg("ERR The bit argument must be 1 or 0."));
    }
    let bit = bit == 1;
    let pos = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        // A missing key is an endless run of zeros.
        let Some(s) = as_str(db.get_read(key))? else {
            return Ok(if bit { -1 } else { 0 });
        };
        let mut scratch = itoa::Buffer::new();
        let bytes = s.as_bytes(&mut scratch);
        let len = bytes.len() as i64;
        let mut end_given = false;
        let range = match args.len() {
            3 => bit_range(0, -1, len, false),
            4..=6 => {
                let start = int(args[3])?;
                let in_bits = args.len() == 6 && index_unit(args[5])?;
                let end = if args.len() >= 5 {
                    end_given = true;
                    int(args[4])?
                } else {
                    len - 1
                };
                bit_range(start, end, len, in_bits)
            }
            _ => return Err(CmdError::Syntax),
        };
        let Some((first, last)) = range else {
            return Ok(-1);
        };
        Ok(match bits::find_bit(bytes, bit, first, last) {
            Some(p) => p as i64,
            // Looking for a 0 without an explicit end: the string goes on
            // with zeros right after the range.
            None if !bit && !end_given => last as i64 + 1,
            None => -1,
        })
    })?;
    ctx.out.int(pos);
    Ok(())
}

fn bitop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let op = if is_word(args[1], "and") {
        BitOp::And
    } else if is_word(args[1], "or") {
        BitOp::Or
    } else if is_word(args[1], "xor") {
        BitOp::Xor
    } else if is_word(args[1], "not") {
        BitOp::Not
    } else {
        return Err(CmdError::Syntax);
    };
    if op == BitOp::Not && args.len() != 4 {
        return Err(CmdError::msg(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let dest = args[2];
    let srcs = &args[3..];
    let (len, old) = ctx.with_keys(args[2..].iter().copied(), |db| {
        let mut acc = BitOpAcc::new(op);
        let mut scratch = itoa::Buffer::new();
        for k in srcs {
            match as_str(db.get_read(k))? {
                Some(s) => acc.feed(s.as_bytes(&mut scratch)),
                None => acc.feed(b""),
            }
        }
        let res = acc.finish();
        let len = res.len();
        let old = if res.is_empty() {
            let old = db.remove_without_expiring(dest);
            if old.is_some() {
                db.changed(dest, Class::GENERIC, "del");
            }
            old
        } else {
            let old = db.set(dest, Value::Str(StrValue::raw(res)));
            db.changed(dest, Class::STRING, "set");
            old
        };
        Ok::<_, CmdError>((len, old))
    })?;
    // The replaced value is freed after the locks are released.
    drop(old);
    ctx.out.int(len as i64);
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldOpKind {
    Get,
    Set,
    IncrBy,
}

/// One BITFIELD operation, parsed.
struct FieldOp {
    kind: FieldOpKind,
    signed: bool,
    bits: u32,
    offset: u64,
    value: i64,
    overflow: Overflow,
}

/// A field type, `i1`..`i64` or `u1`..`u63`: (signed, width).
fn field_type(arg: &[u8]) -> Result<(bool, u32), CmdError> {
    let err = || {
        CmdError::msg(
            "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
        )
    };
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(err()),
    };
    let n = parse_i64(crate::util::c_str(&arg[1..])).ok_or_else(err)?;
    let max = if signed { 64 } else { 63 };
    if n < 1 || n > max {
        return Err(err());
    }
    Ok((signed, n as u32))
}

/// Parses the operations after the key: the first error wins, as in Redis.
fn parse_field_ops(args: &[&[u8]], limit: u64) -> Result<Vec<FieldOp>, CmdError> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < args.len() {
        let rem = args.len() - j - 1;
        let sub = args[j];
        let kind = if is_word(sub, "get") && rem >= 2 {
            FieldOpKind::Get
        } else if is_word(sub, "set") && rem >= 3 {
            FieldOpKind::Set
        } else if is_word(sub, "incrby") && rem >= 3 {
            FieldOpKind::IncrBy
        } else if is_word(sub, "overflow") && rem >= 1 {
            let t = args[j + 1];
            overflow = if is_word(t, "wrap") {
                Overflow::Wrap
            } else if is_word(t, "sat") {
                Overflow::Sat
            } else if is_word(t, "fail") {
                Overflow::Fail
            } else {
                return Err(CmdError::msg("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(CmdError::Syntax);
        };
        let (signed, bits) = field_type(args[j + 1])?;
        let offset = bit_offset(args[j + 2], Some(bits), limit)?;
        let value = if kind == FieldOpKind::Get {
            0
        } else {
            int(args[j + 3])?
        };
        ops.push(FieldOp {
            kind,
            signed,
            bits,
            offset,
            value,
            overflow,
        });
        j += if kind == FieldOpKind::Get { 3 } else { 4 };
    }
    Ok(ops)
}

/// What one write operation replies and stores: the reply (None for a
/// FAIL overflow, which stores nothing), the new field bits, and whether
/// the field's value changes.
fn apply_write(v: &[u8], op: &FieldOp) -> (Option<i64>, u64, bool) {
    let incr = op.kind == FieldOpKind::IncrBy;
    let (reply, newbits, changed, overflowed) = if op.signed {
        let old = bits::get_signed(v, op.offset, op.bits);
        let res = if incr {
            bits::add_signed(old, op.value, op.bits, op.overflow)
        } else {
            bits::add_signed(op.value, 0, op.bits, op.overflow)
        };
        let (new, over) = match res {
            Ok(n) => (n, false),
            Err(n) => (n, true),
        };
        (if incr { new } else { old }, new as u64, old != new, over)
    } else {
        let old = bits::get_unsigned(v, op.offset, op.bits);
        let res = if incr {
            bits::add_unsigned(old, op.value, op.bits, op.overflow)
        } else {
            bits::add_unsigned(op.value as u64, 0, op.bits, op.overflow)
        };
        let (new, over) = match res {
            Ok(n) => (n, false),
            Err(n) => (n, true),
        };
        ((if incr { new } else { old }) as i64, new, old != new, over)
    };
    if overflowed && op.overflow == Overflow::Fail {
        return (None, 0, false);
    }
    (Some(reply), newbits, changed)
}

fn bitfield_generic(ctx: &mut Ctx, args: &[&[u8]], read_only_cmd: bool) -> CmdResult {
    let key = args[1];
    let ops = parse_field_ops(args, ctx.srv.config.proto_max_bulk_len())?;
    let max_write = ops
        .iter()
        .filter(|o| o.kind != FieldOpKind::Get)
        .map(|o| o.offset + o.bits as u64 - 1)
        .max();
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(max_bit) = max_write else {
            // Only reads: a missing key reads as zeros.
            let s = as_str(db.get_read(key))?;
            let mut scratch = itoa::Buffer::new();
            let v: &[u8] = match s {
                Some(s) => s.as_bytes(&mut scratch),
                None => b"",
            };
            out.array(ops.len());
            for op in &ops {
                out.int(read_field(v, op));
            }
            return Ok(());
        };
        if read_only_cmd {
            return Err(CmdError::msg(
                "ERR BITFIELD_RO only supports the GET subcommand",
            ));
        }
        let changes = with_bits_for_write(db, key, max_bit, |v, grew| {
            out.array(ops.len());
            let mut changes = 0;
            for op in &ops {
                if op.kind == FieldOpKind::Get {
                    out.int(read_field(v, op));
                    continue;
                }
                match apply_write(v, op) {
                    (Some(reply), newbits, changed) => {
                        out.int(reply);
                        bits::set_field(v, op.offset, op.bits, newbits);
                        if grew || changed {
                            changes += 1;
                        }
                    }
                    (None, ..) => out.null(),
                }
            }
            changes
        })?;
        if changes > 0 {
            db.changed(key, Class::STRING, "setbit");
        }
        Ok(())
    })
}

fn read_field(v: &[u8], op: &FieldOp) -> i64 {
    if op.signed {
        bits::get_signed(v, op.offset, op.bits)
    } else {
        bits::get_unsigned(v, op.offset, op.bits) as i64
    }
}

fn bitfield(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    bitfield_generic(ctx, args, false)
}

fn bitfield_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    bitfield_generic(ctx, args, true)
}

/// BITFIELD is read-only when every operation is a GET (OVERFLOW aside);
/// anything else, a syntax error included, counts as a write (Redis's
/// bitfieldGetKeys).
fn bitfield_key_flags(args: &[&[u8]], _index: usize) -> u16 {
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        if args[i].eq_ignore_ascii_case(b"get") && left >= 2 {
            i += 3;
        } else if args[i].eq_ignore_ascii_case(b"overflow") && left >= 1 {
            i += 2;
        } else {
            return RW | ACCESS | UPDATE;
        }
    }
    RO | ACCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_redis_rules() {
        let limit = 512 * 1024 * 1024;
        assert_eq!(bit_offset(b"7", None, limit).unwrap(), 7);
        assert!(bit_offset(b"-1", None, limit).is_err());
        assert!(bit_offset(b"#2", None, limit).is_err());
        assert_eq!(bit_offset(b"#2", Some(8), limit).unwrap(), 16);
        assert!(bit_offset(b"4294967296", None, limit).is_err());
        assert_eq!(bit_offset(b"4294967295", None, limit).unwrap(), 4294967295);
        assert_eq!(field_type(b"i64").unwrap(), (true, 64));
        assert!(field_type(b"u64").is_err());
        assert!(field_type(b"I8").is_err());
        assert_eq!(field_type(b"u8\0x").unwrap(), (false, 8));
    }
}
