//! List commands: pushes and pops at both ends (with counts), positional
//! access and ranges, LREM/LINSERT/LPOS, the moves between lists, LMPOP,
//! and the blocking forms BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP.
//!
//! Blocking follows the server's model (see `server/blocking.rs`): a
//! blocking command that finds nothing to serve calls [`Ctx::block`] and
//! writes no reply; the connection re-runs the same command when one of its
//! keys is signalled. Every command that adds elements to a list signals
//! the key after releasing its lock, so a waiting client is woken — first
//! come, first served — wherever the push happened.

use super::args::{block_timeout, eq_ic, int, int_in};
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*, BeginSearch, FindKeys, KeySpecDef};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::events::Class;
use crate::keyspace::{Db, Entry};
use crate::types::list::{End, ListValue};
use crate::types::Value;
use tessera_resp::encode::ReplyBuf;

/// A list command: group `list`, ACL category `@list`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "list", since, summary, handler).acl(acl::LIST)
}

const PUSH_COMPLEXITY: &str = "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.";
const LEFT_RIGHT: &[a::Arg] = &[a::pure("left", "LEFT"), a::pure("right", "RIGHT")];
const POP_SPEC: KeySpecDef = ks(RW | ACCESS | DELETE, 1, 0, 1);
const PUSH_SPEC: KeySpecDef = ks(RW | INSERT, 2, 0, 1);
const MPOP_COMPLEXITY: &str =
    "O(N+M) where N is the number of provided keys and M is the number of elements returned.";
const TIMEOUT_AS_DOUBLE: &[(&str, &str)] = &[(
    "6.0.0",
    "`timeout` is interpreted as a double instead of an integer.",
)];

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "lpush",
        -3,
        WRITE | DENYOOM | FAST,
        "1.0.0",
        "Prepends one or more elements to a list, creating it if needed.",
        lpush,
    )
    .complexity(PUSH_COMPLEXITY)
    .key_specs(&[ks(RW | INSERT, 1, 0, 1)])
    .history(&[("2.4.0", "Accepts multiple `element` arguments.")])
    .args(&[a::key("key", 0), a::string("element").multiple()]),
    cmd(
        "rpush",
        -3,
        WRITE | DENYOOM | FAST,
        "1.0.0",
        "Appends one or more elements to a list, creating it if needed.",
        rpush,
    )
    .complexity(PUSH_COMPLEXITY)
    .key_specs(&[ks(RW | INSERT, 1, 0, 1)])
    .history(&[("2.4.0", "Accepts multiple `element` arguments.")])
    .args(&[a::key("key", 0), a::string("element").multiple()]),
    cmd(
        "lpushx",
        -3,
        WRITE | DENYOOM | FAST,
        "2.2.0",
        "Prepends elements to a list only if the list exists.",
        lpushx,
    )
    .complexity(PUSH_COMPLEXITY)
    .key_specs(&[ks(RW | INSERT, 1, 0, 1)])
    .history(&[("4.0.0", "Accepts multiple `element` arguments.")])
    .args(&[a::key("key", 0), a::string("element").multiple()]),
    cmd(
        "rpushx",
        -3,
        WRITE | DENYOOM | FAST,
        "2.2.0",
        "Appends elements to a list only if the list exists.",
        rpushx,
    )
    .complexity(PUSH_COMPLEXITY)
    .key_specs(&[ks(RW | INSERT, 1, 0, 1)])
    .history(&[("4.0.0", "Accepts multiple `element` arguments.")])
    .args(&[a::key("key", 0), a::string("element").multiple()]),
    cmd(
        "lpop",
        -2,
        WRITE | FAST,
        "1.0.0",
        "Removes and returns the first elements of a list; deletes the list when it empties.",
        lpop,
    )
    .complexity("O(N) where N is the number of elements returned")
    .key_specs(&[POP_SPEC])
    .history(&[("6.2.0", "Added the `count` argument.")])
    .args(&[
        a::key("key", 0),
        a::integer("count").since("6.2.0").optional(),
    ]),
    cmd(
        "rpop",
        -2,
        WRITE | FAST,
        "1.0.0",
        "Removes and returns the last elements of a list; deletes the list when it empties.",
        rpop,
    )
    .complexity("O(N) where N is the number of elements returned")
    .key_specs(&[POP_SPEC])
    .history(&[("6.2.0", "Added the `count` argument.")])
    .args(&[
        a::key("key", 0),
        a::integer("count").since("6.2.0").optional(),
    ]),
    cmd("llen", 2, READONLY | FAST, "1.0.0", "Returns the number of elements of a list.", llen)
        .key_specs(&[ks(RO, 1, 0, 1)])
        .args(&[a::key("key", 0)]),
    cmd("lindex", 3, READONLY, "1.0.0", "Returns the element at an index of a list.", lindex)
        .complexity(
            "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::integer("index")]),
    cmd("lset", 4, WRITE | DENYOOM, "1.0.0", "Replaces the element at an index of a list.", lset)
        .complexity(
            "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
        )
        .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::integer("index"), a::string("element")]),
    cmd("lrange", 4, READONLY, "1.0.0", "Returns a range of elements of a list.", lrange)
        .complexity(
            "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::integer("start"), a::integer("stop")]),
    cmd(
        "ltrim",
        4,
        WRITE | REWRITES_EFFECTS,
        "1.0.0",
        "Keeps only a range of a list's elements; deletes the list if nothing is left.",
        ltrim,
    )
    .complexity("O(N) where N is the number of elements to be removed by the operation.")
    .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
    .args(&[a::key("key", 0), a::integer("start"), a::integer("stop")]),
    cmd(
        "lrem",
        4,
        WRITE,
        "1.0.0",
        "Removes elements equal to a value from a list; deletes the list if it empties.",
        lrem,
    )
    .complexity("O(N+M) where N is the length of the list and M is the number of elements removed.")
    .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
    .args(&[a::key("key", 0), a::integer("count"), a::string("element")]),
    cmd(
        "linsert",
        5,
        WRITE | DENYOOM,
        "2.2.0",
        "Inserts an element before or after another element of a list.",
        linsert,
    )
    .complexity(
        "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
    )
    .key_specs(&[ks(RW | INSERT, 1, 0, 1)])
    .args(&[
        a::key("key", 0),
        a::oneof("where", &[a::pure("before", "BEFORE"), a::pure("after", "AFTER")]),
        a::string("pivot"),
        a::string("element"),
    ]),
    cmd("lpos", -3, READONLY, "6.0.6", "Returns the indexes of matching elements of a list.", lpos)
        .complexity(
            "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[
            a::key("key", 0),
            a::string("element"),
            a::integer("rank").token("RANK").optional(),
            a::integer("num-matches").token("COUNT").optional(),
            a::integer("len").token("MAXLEN").optional(),
        ]),
    cmd(
        "lmove",
        5,
        WRITE | DENYOOM,
        "6.2.0",
        "Pops an element from one end of a list and pushes it onto an end of another list.",
        lmove,
    )
    .key_specs(&[POP_SPEC, PUSH_SPEC])
    .args(&[
        a::key("source", 0),
        a::key("destination", 1),
        a::oneof("wherefrom", LEFT_RIGHT),
        a::oneof("whereto", LEFT_RIGHT),
    ]),
    cmd(
        "rpoplpush",
        3,
        WRITE | DENYOOM,
        "1.2.0",
        "Pops the last element of a list and pushes it onto the head of another list.",
        rpoplpush,
    )
    .key_specs(&[POP_SPEC, PUSH_SPEC])
    .deprecated("6.2.0", "`LMOVE` with the `RIGHT` and `LEFT` arguments")
    .args(&[a::key("source", 0), a::key("destination", 1)]),
    cmd(
        "lmpop",
        -4,
        WRITE | REWRITES_EFFECTS,
        "7.0.0",
        "Pops elements from the first non-empty list among several.",
        lmpop,
    )
    .complexity(MPOP_COMPLEXITY)
    .key_specs(&[KeySpecDef::new(
        RW | ACCESS | DELETE,
        BeginSearch::Index(1),
        FindKeys::Keynum {
            keynumidx: 0,
            firstkey: 1,
            keystep: 1,
        },
    )])
    .args(&[
        a::integer("numkeys"),
        a::key("key", 0).multiple(),
        a::oneof("where", LEFT_RIGHT),
        a::integer("count").token("COUNT").optional(),
    ]),
    cmd(
        "blpop",
        -3,
        WRITE | NOSCRIPT | BLOCKING | REWRITES_EFFECTS,
        "2.0.0",
        "Pops the first element of the first non-empty list, or blocks until one is available.",
        blpop,
    )
    .complexity("O(N) where N is the number of provided keys.")
    .key_specs(&[ks(RW | ACCESS | DELETE, 1, -2, 1)])
    .history(TIMEOUT_AS_DOUBLE)
    .args(&[a::key("key", 0).multiple(), a::double("timeout")]),
    cmd(
        "brpop",
        -3,
        WRITE | NOSCRIPT | BLOCKING | REWRITES_EFFECTS,
        "2.0.0",
        "Pops the last element of the first non-empty list, or blocks until one is available.",
        brpop,
    )
    .complexity("O(N) where N is the number of provided keys.")
    .key_specs(&[ks(RW | ACCESS | DELETE, 1, -2, 1)])
    .history(TIMEOUT_AS_DOUBLE)
    .args(&[a::key("key", 0).multiple(), a::double("timeout")]),
    cmd(
        "blmove",
        6,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING | REWRITES_EFFECTS,
        "6.2.0",
        "Moves an element from one list to another, blocking until the source has one.",
        blmove,
    )
    .key_specs(&[POP_SPEC, PUSH_SPEC])
    .args(&[
        a::key("source", 0),
        a::key("destination", 1),
        a::oneof("wherefrom", LEFT_RIGHT),
        a::oneof("whereto", LEFT_RIGHT),
        a::double("timeout"),
    ]),
    cmd(
        "brpoplpush",
        4,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING | REWRITES_EFFECTS,
        "2.2.0",
        "Pops the last element of a list onto the head of another, blocking until there is one.",
        brpoplpush,
    )
    .key_specs(&[POP_SPEC, PUSH_SPEC])
    .deprecated("6.2.0", "`BLMOVE` with the `RIGHT` and `LEFT` arguments")
    .history(TIMEOUT_AS_DOUBLE)
    .args(&[
        a::key("source", 0),
        a::key("destination", 1),
        a::double("timeout"),
    ]),
    cmd(
        "blmpop",
        -5,
        WRITE | BLOCKING | REWRITES_EFFECTS,
        "7.0.0",
        "Pops elements from the first non-empty list among several, or blocks until one has some.",
        blmpop,
    )
    .complexity(MPOP_COMPLEXITY)
    .key_specs(&[KeySpecDef::new(
        RW | ACCESS | DELETE,
        BeginSearch::Index(2),
        FindKeys::Keynum {
            keynumidx: 0,
            firstkey: 1,
            keystep: 1,
        },
    )])
    .args(&[
        a::double("timeout"),
        a::integer("numkeys"),
        a::key("key", 0).multiple(),
        a::oneof("where", LEFT_RIGHT),
        a::integer("count").token("COUNT").optional(),
    ]),
];

// ---- helpers ------------------------------------------------------------------------------

/// The list at a key, WRONGTYPE if it holds something else.
#[inline]
fn as_list(e: Option<&mut Entry>) -> Result<Option<&mut ListValue>, CmdError> {
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::List(l),
            ..
        }) => Ok(Some(l)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// `LEFT` / `RIGHT`, as Redis's getListPositionFromObjectOrReply reads it.
fn end_arg(arg: &[u8]) -> Result<End, CmdError> {
    if eq_ic(arg, "left") {
        Ok(End::Head)
    } else if eq_ic(arg, "right") {
        Ok(End::Tail)
    } else {
        Err(CmdError::Syntax)
    }
}

/// Whether the client may block: not inside EXEC or a script, where
/// nothing can arrive while it waits. Most blocking commands then answer
/// as if they had timed out (`Ctx::block` does that); BLMOVE and
/// BRPOPLPUSH answer as for an empty source, a null bulk, as Redis does.
fn can_block(ctx: &Ctx) -> bool {
    !ctx.client.multi.in_exec
}

/// Deletes `key` if the list it holds has become empty (Redis never keeps
/// an empty list), announcing the "del".
#[inline]
fn drop_if_empty(db: &mut Db, key: &[u8]) {
    if let Some(Entry {
        value: Value::List(l),
        ..
    }) = db.get_write(key)
    {
        if l.is_empty() {
            db.remove(key);
            // The caller has signalled the key for the pop.
            db.notify(Class::GENERIC, "del", key);
        }
    }
}

/// The event a push onto `end` reports.
fn push_event(end: End) -> &'static str {
    match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    }
}

/// The event a pop from `end` reports.
fn pop_event(end: End) -> &'static str {
    match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    }
}

/// Pushes `vals` onto the list at `key`, creating it if missing. Returns
/// the new length. The caller has checked that the key holds no other type.
fn push_all(db: &mut Db, key: &[u8], end: End, vals: &[&[u8]]) -> usize {
    if let Some(Entry {
        value: Value::List(l),
        ..
    }) = db.get_write(key)
    {
        for v in vals {
            l.push(end, v);
        }
        return l.len();
    }
    let mut l = ListValue::new();
    for v in vals {
        l.push(end, v);
    }
    let n = l.len();
    db.set(key, Value::List(l));
    n
}

// ---- pushes -------------------------------------------------------------------------------

fn push_generic(ctx: &mut Ctx, args: &[&[u8]], end: End, only_existing: bool) -> CmdResult {
    let key = args[1];
    let vals = &args[2..];
    let len = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        let n = match as_list(db.get_write(key))? {
            Some(l) => {
                for v in vals {
                    l.push(end, v);
                }
                l.len()
            }
            None if only_existing => return Ok(0),
            None => push_all(db, key, end, vals),
        };
        db.changed(key, Class::LIST, push_event(end));
        Ok(n)
    })?;
    ctx.out.int(len as i64);
    if len > 0 {
        ctx.signal_ready(key);
    }
    Ok(())
}

fn lpush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Head, false)
}

fn rpush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Tail, false)
}

fn lpushx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Head, true)
}

fn rpushx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Tail, true)
}

// ---- pops ---------------------------------------------------------------------------------

/// Pops up to `count` elements, replying them as an array.
fn pop_many(l: &mut ListValue, end: End, count: usize, out: &mut ReplyBuf) {
    let n = count.min(l.len());
    out.array(n);
    for _ in 0..n {
        l.pop_with(end, |v| out.bulk(v));
    }
}

fn pop_generic(ctx: &mut Ctx, args: &[&[u8]], end: End, name: &str) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::WrongArity(name.to_string()));
    }
    let count = match args.get(2) {
        Some(c) => Some(int_in(
            c,
            0,
            i64::MAX,
            "ERR value is out of range, must be positive",
        )? as usize),
        None => None,
    };
    let key = args[1];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(l) = as_list(db.get_write(key))? else {
            match count {
                Some(_) => out.null_array(),
                None => out.null(),
            }
            return Ok(());
        };
        match count {
            None => {
                l.pop_with(end, |v| out.bulk(v));
            }
            Some(0) => {
                out.array(0);
                return Ok(());
            }
            Some(n) => pop_many(l, end, n, out),
        }
        let emptied = l.is_empty();
        db.changed(key, Class::LIST, pop_event(end));
        if emptied {
            db.remove(key);
            db.notify(Class::GENERIC, "del", key);
        }
        Ok(())
    })
}

fn lpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pop_generic(ctx, args, End::Head, "lpop")
}

fn rpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pop_generic(ctx, args, End::Tail, "rpop")
}

// ---- reads and in-place edits -------------------------------------------------------------

fn llen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let n = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        Ok(as_list(db.get_read(key))?.map_or(0, |l| l.len()))
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

fn lindex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        // Redis looks the key up before it parses the index.
        let Some(l) = as_list(db.get_read(key))? else {
            out.null();
            return Ok(());
        };
        let i = int(args[2])?;
        let found = match l.index(i) {
            Some(i) => l.get_indexed(i),
            None => None,
        };
        match found {
            Some(v) => out.bulk(v),
            None => out.null(),
        }
        Ok(())
    })
}

fn lset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    ctx.with_key(key, |db| -> CmdResult {
        let l = as_list(db.get_write(key))?.ok_or(CmdError::NoSuchKey)?;
        let i = int(args[2])?;
        let i = l.index(i).ok_or(CmdError::IndexOutOfRange)?;
        l.set(i, args[3]);
        db.changed(key, Class::LIST, "lset");
        Ok(())
    })?;
    ctx.out.ok();
    Ok(())
}

/// Redis's LRANGE/LTRIM clamping: the first and last index, inclusive, or
/// None when the range is empty.
fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { start + len } else { start };
    let mut end = if end < 0 { end + len } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

fn lrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let start = int(args[2])?;
    let end = int(args[3])?;
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(l) = as_list(db.get_read(key))? else {
            out.array(0);
            return Ok(());
        };
        match clamp_range(start, end, l.len()) {
            None => out.array(0),
            Some((s, e)) => {
                let n = e - s + 1;
                out.array(n);
                for v in l.iter_from(s).take(n) {
                    out.bulk(v);
                }
            }
        }
        Ok(())
    })
}

fn ltrim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let start = int(args[2])?;
    let end = int(args[3])?;
    ctx.with_key(key, |db| -> Result<bool, CmdError> {
        let Some(l) = as_list(db.get_write(key))? else {
            return Ok(false);
        };
        let len = l.len();
        match clamp_range(start, end, len) {
            None => l.trim(len, 0),
            Some((s, e)) => l.trim(s, len - e - 1),
        }
        let emptied = l.is_empty();
        let trimmed = l.len() != len;
        db.changed(key, Class::LIST, "ltrim");
        if emptied {
            db.remove(key);
            db.notify(Class::GENERIC, "del", key);
        }
        Ok(trimmed)
    })
    .map(|trimmed| {
        // As Redis: WATCH sees even a trim that removed nothing, but only
        // a removal is propagated.
        if !trimmed {
            ctx.no_propagate();
        }
    })?;
    ctx.out.ok();
    Ok(())
}

fn lrem(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let count = int(args[2])?;
    let v = args[3];
    let removed = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        let Some(l) = as_list(db.get_write(key))? else {
            return Ok(0);
        };
        let from = if count < 0 { End::Tail } else { End::Head };
        let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        let n = l.remove_matching(v, limit, from);
        let emptied = l.is_empty();
        if n > 0 {
            db.changed(key, Class::LIST, "lrem");
        }
        if emptied {
            db.remove(key);
            db.notify(Class::GENERIC, "del", key);
        }
        Ok(n)
    })?;
    ctx.out.int(removed as i64);
    Ok(())
}

fn linsert(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let after = if eq_ic(args[2], "after") {
        true
    } else if eq_ic(args[2], "before") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let (pivot, v) = (args[3], args[4]);
    let n = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        let Some(l) = as_list(db.get_write(key))? else {
            return Ok(0);
        };
        match l.iter().position(|e| e == pivot) {
            None => Ok(-1),
            Some(i) => {
                l.insert(if after { i + 1 } else { i }, v);
                let n = l.len() as i64;
                db.changed(key, Class::LIST, "linsert");
                Ok(n)
            }
        }
    })?;
    ctx.out.int(n);
    Ok(())
}

/// LPOS's search state: Redis's loop, so that its corner cases (COUNT 0,
/// the most negative RANK) come out the same.
struct PosSearch<'a> {
    ele: &'a [u8],
    rank: i64,
    count: Option<i64>,
    maxlen: i64,
    forward: bool,
    llen: i64,
    matches: i64,
    found: Vec<i64>,
    first: Option<i64>,
}

impl PosSearch<'_> {
    /// Looks at the element `index` steps from where the scan started;
    /// false when the scan is over.
    fn step(&mut self, index: i64, e: &[u8]) -> bool {
        if self.maxlen != 0 && index >= self.maxlen {
            return false;
        }
        if e != self.ele {
            return true;
        }
        self.matches += 1;
        let at = if self.forward {
            index
        } else {
            self.llen - index - 1
        };
        if self.matches < self.rank {
            return true;
        }
        match self.count {
            Some(c) => {
                self.found.push(at);
                // Wrapping, as the C expression does for the most negative
                // RANK (which then never stops early).
                !(c != 0 && self.matches.wrapping_sub(self.rank).wrapping_add(1) >= c)
            }
            None => {
                self.first = Some(at);
                false
            }
        }
    }
}

fn lpos(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let mut rank: i64 = 1;
    let mut count: Option<i64> = None;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        if eq_ic(args[j], "rank") && more {
            j += 1;
            rank = int(args[j])?;
            if rank == 0 {
                return Err(CmdError::msg(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if eq_ic(args[j], "count") && more {
            j += 1;
            count = Some(int_in(args[j], 0, i64::MAX, "ERR COUNT can't be negative")?);
        } else if eq_ic(args[j], "maxlen") && more {
            j += 1;
            maxlen = int_in(args[j], 0, i64::MAX, "ERR MAXLEN can't be negative")?;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    // A negative rank searches from the tail. Like Redis (which negates a
    // C long), the most negative rank stays negative.
    let forward = rank > 0;
    if rank < 0 {
        rank = rank.wrapping_neg();
    }
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(l) = as_list(db.get_read(key))? else {
            match count {
                Some(_) => out.array(0),
                None => out.null(),
            }
            return Ok(());
        };
        let mut s = PosSearch {
            ele: args[2],
            rank,
            count,
            maxlen,
            forward,
            llen: l.len() as i64,
            matches: 0,
            found: Vec::new(),
            first: None,
        };
        if forward {
            for (i, e) in l.iter().enumerate() {
                if !s.step(i as i64, e) {
                    break;
                }
            }
        } else {
            for (i, e) in l.iter_rev().enumerate() {
                if !s.step(i as i64, e) {
                    break;
                }
            }
        }
        match count {
            Some(_) => {
                out.array(s.found.len());
                for i in s.found {
                    out.int(i);
                }
            }
            None => match s.first {
                Some(i) => out.int(i),
                None => out.null(),
            },
        }
        Ok(())
    })
}

// ---- moves --------------------------------------------------------------------------------

/// LMOVE's work under the locks of both keys, with Redis's order of checks
/// (source missing → nil, source type, destination type) before anything
/// changes. Replies the moved element; false if the source had none.
fn move_one(
    db: &mut Db,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
    out: &mut ReplyBuf,
) -> Result<bool, CmdError> {
    let Some(l) = as_list(db.get_write(src))? else {
        return Ok(false);
    };
    if src == dst {
        // A rotation within one list.
        if let Some(v) = l.pop(from) {
            out.bulk(&v);
            l.push(to, &v);
            db.changed(dst, Class::LIST, push_event(to));
            db.changed(src, Class::LIST, pop_event(from));
        }
        return Ok(true);
    }
    as_list(db.get_write(dst))?;
    let Some(v) = as_list(db.get_write(src))?.and_then(|l| l.pop(from)) else {
        return Ok(false);
    };
    // Redis's order: the push (and its events), then the pop's event and
    // the deletion of an emptied source.
    push_all(db, dst, to, &[&v]);
    db.changed(dst, Class::LIST, push_event(to));
    db.changed(src, Class::LIST, pop_event(from));
    drop_if_empty(db, src);
    out.bulk(&v);
    Ok(true)
}

fn lmove_generic(ctx: &mut Ctx, src: &[u8], dst: &[u8], from: End, to: End) -> CmdResult {
    let (ka, out) = ctx.split();
    let moved = ka.with_keys([src, dst], |db| move_one(db, src, dst, from, to, out))?;
    if moved {
        ctx.signal_ready(dst);
    } else {
        ctx.out.null();
    }
    Ok(())
}

fn lmove(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let from = end_arg(args[3])?;
    let to = end_arg(args[4])?;
    lmove_generic(ctx, args[1], args[2], from, to)
}

fn rpoplpush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    lmove_generic(ctx, args[1], args[2], End::Tail, End::Head)
}

fn blmove_generic(
    ctx: &mut Ctx,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
    deadline: Option<i64>,
    rewritten: impl FnOnce() -> Vec<Vec<u8>>,
) -> CmdResult {
    // Woken, a source that now holds another type keeps the client blocked
    // (Redis serves list waiters only from lists); a wrong-type destination
    // is still this client's error.
    if ctx.client.woken_by.is_some() {
        let src_is_other_type = ctx.with_key(src, |db| {
            db.get_write(src)
                .is_some_and(|e| !matches!(e.value, Value::List(_)))
        });
        if src_is_other_type {
            ctx.client.woken_wrong_type = true;
            ctx.block(&[src], deadline, |out| out.null_array());
            return Ok(());
        }
    }
    let (ka, out) = ctx.split();
    let moved = ka.with_keys([src, dst], |db| move_one(db, src, dst, from, to, out))?;
    if moved {
        if ctx.propagating() {
            ctx.propagate_as(rewritten());
        }
        ctx.signal_ready(dst);
    } else if can_block(ctx) {
        // Redis answers a timed-out BLMOVE with a null *array* (all
        // list blockers share that reply), though an immediate miss is a
        // null bulk.
        ctx.block(&[src], deadline, |out| out.null_array());
    } else {
        ctx.out.null();
    }
    Ok(())
}

fn blmove(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let from = end_arg(args[3])?;
    let to = end_arg(args[4])?;
    let deadline = block_timeout(args[5], ctx.now_ms)?;
    // As Redis: served, it propagates as the plain LMOVE.
    let plain = || super::argv(&[b"LMOVE", args[1], args[2], args[3], args[4]]);
    blmove_generic(ctx, args[1], args[2], from, to, deadline, plain)
}

fn brpoplpush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let deadline = block_timeout(args[3], ctx.now_ms)?;
    let plain = || super::argv(&[b"RPOPLPUSH", args[1], args[2]]);
    blmove_generic(ctx, args[1], args[2], End::Tail, End::Head, deadline, plain)
}

// ---- pops from several keys ---------------------------------------------------------------

/// Pops from the first non-empty list of `keys` (a key of another type
/// stops the scan with WRONGTYPE, as in Redis). `count` None: BLPOP's reply
/// `[key, element]`; Some(n): LMPOP's `[key, [elements...]]`. Returns
/// the index of the key popped from and how many elements it gave.
fn pop_first(
    db: &mut Db,
    keys: &[&[u8]],
    end: End,
    count: Option<usize>,
    out: &mut ReplyBuf,
) -> Result<Option<(usize, usize)>, CmdError> {
    for (i, &key) in keys.iter().enumerate() {
        let Some(l) = as_list(db.get_write(key))? else {
            continue;
        };
        if l.is_empty() {
            continue;
        }
        out.array(2);
        out.bulk(key);
        let popped = match count {
            None => {
                l.pop_with(end, |v| out.bulk(v));
                1
            }
            Some(n) => {
                let popped = n.min(l.len());
                pop_many(l, end, n, out);
                popped
            }
        };
        db.changed(key, Class::LIST, pop_event(end));
        drop_if_empty(db, key);
        return Ok(Some((i, popped)));
    }
    Ok(None)
}

/// How a pop from several keys (or a blocking pop) propagates, as Redis
/// rewrites it: the plain pop from the key served, with the count when one
/// was given (`LPOP key n`).
fn propagate_pop(ctx: &mut Ctx, key: &[u8], end: End, count: Option<usize>) {
    if !ctx.propagating() {
        return;
    }
    let name: &[u8] = match end {
        End::Head => b"LPOP",
        End::Tail => b"RPOP",
    };
    let mut v = super::argv(&[name, key]);
    if let Some(n) = count {
        v.push(super::int_arg(n as i64));
    }
    ctx.propagate_as(v);
}

/// The keys a (re-)run of a blocking pop may serve from: when woken, only
/// the key that became ready (Redis serves a woken client from that key,
/// whatever the others hold); otherwise all of them, in order.
fn serve_keys<'a>(ctx: &'a Ctx, keys: &'a [&'a [u8]]) -> Vec<&'a [u8]> {
    match ctx.client.woken_by.as_deref() {
        Some(k) if keys.contains(&k) => vec![k],
        _ => keys.to_vec(),
    }
}

/// Pops for a blocking command, from the woken key only when re-run: a
/// woken key of another type or with nothing left keeps the client
/// blocked instead of failing it.
/// Whether it popped; it propagates the pop as the plain command.
fn pop_for_blocked(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    end: End,
    count: Option<usize>,
) -> Result<bool, CmdError> {
    let order: Vec<Vec<u8>> = serve_keys(ctx, keys).iter().map(|k| k.to_vec()).collect();
    let woken = ctx.client.woken_by.is_some() && order.len() == 1;
    let order_refs: Vec<&[u8]> = order.iter().map(|k| k.as_slice()).collect();
    let (ka, out) = ctx.split();
    let r = ka.with_keys(keys.iter().copied(), |db| {
        pop_first(db, &order_refs, end, count, out)
    });
    match r {
        Err(_) if woken => {
            ctx.client.woken_wrong_type = true;
            Ok(false)
        }
        Ok(Some((i, popped))) => {
            propagate_pop(ctx, &order[i], end, count.map(|_| popped));
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(e) => Err(e),
    }
}

fn bpop_generic(ctx: &mut Ctx, args: &[&[u8]], end: End) -> CmdResult {
    let keys = &args[1..args.len() - 1];
    let deadline = block_timeout(args[args.len() - 1], ctx.now_ms)?;
    let served = pop_for_blocked(ctx, keys, end, None)?;
    if served {
        return Ok(());
    }
    if can_block(ctx) {
        ctx.block(keys, deadline, |out| out.null_array());
    } else {
        ctx.out.null_array();
    }
    Ok(())
}

fn blpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    bpop_generic(ctx, args, End::Head)
}

fn brpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    bpop_generic(ctx, args, End::Tail)
}

/// LMPOP/BLMPOP's arguments from `numkeys` (at `args[at]`) on: the keys,
/// the end and the count, checked in Redis's order.
type MpopArgs<'a> = (&'a [&'a [u8]], End, usize);

fn mpop_args<'a>(args: &'a [&'a [u8]], at: usize) -> Result<MpopArgs<'a>, CmdError> {
    let numkeys = int_in(
        args[at],
        1,
        i64::MAX,
        "ERR numkeys should be greater than 0",
    )? as u64;
    let first = at + 1;
    let where_at = (first as u64).saturating_add(numkeys);
    if where_at >= args.len() as u64 {
        return Err(CmdError::Syntax);
    }
    let where_at = where_at as usize;
    let end = end_arg(args[where_at])?;
    let mut count: Option<usize> = None;
    let mut j = where_at + 1;
    while j < args.len() {
        if count.is_none() && eq_ic(args[j], "count") && j + 1 < args.len() {
            j += 1;
            let n = int_in(args[j], 1, i64::MAX, "ERR count should be greater than 0")?;
            count = Some(n as usize);
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    Ok((&args[first..where_at], end, count.unwrap_or(1)))
}

fn lmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (keys, end, count) = mpop_args(args, 1)?;
    let (ka, out) = ctx.split();
    let served = ka.with_keys(keys.iter().copied(), |db| {
        pop_first(db, keys, end, Some(count), out)
    })?;
    match served {
        Some((i, popped)) => propagate_pop(ctx, keys[i], end, Some(popped)),
        None => ctx.out.null_array(),
    }
    Ok(())
}

fn blmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (keys, end, count) = mpop_args(args, 2)?;
    let deadline = block_timeout(args[1], ctx.now_ms)?;
    let served = pop_for_blocked(ctx, keys, end, Some(count))?;
    if served {
        return Ok(());
    }
    if can_block(ctx) {
        ctx.block(keys, deadline, |out| out.null_array());
    } else {
        ctx.out.null_array();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_clamping_follows_redis() {
        assert_eq!(clamp_range(0, -1, 3), Some((0, 2)));
        assert_eq!(clamp_range(-100, 100, 3), Some((0, 2)));
        assert_eq!(clamp_range(2, 1, 3), None);
        assert_eq!(clamp_range(3, 5, 3), None);
        assert_eq!(clamp_range(-1, -1, 3), Some((2, 2)));
        assert_eq!(clamp_range(i64::MIN, i64::MAX, 3), Some((0, 2)));
        assert_eq!(clamp_range(0, -4, 3), None);
    }
}
