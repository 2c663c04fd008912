//! Sorted-set commands: ZADD and friends, ranges by rank, score and lex,
//! removals, pops (blocking too), random members, the set operations and
//! ZSCAN. Each handler parses and checks its arguments in Redis 7.0's
//! order (so the first error is the one Redis would give), operates on a
//! [`ZSetValue`] under the key's shard lock, and replies; scores are
//! printed as Redis prints them (`%.17g`, a double in RESP3).

use std::cell::RefCell;
use std::collections::HashMap;

use rand::Rng;
use tessera_resp::encode::ReplyBuf;

use super::args::{block_timeout, eq_ic, int};
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*, BeginSearch, FindKeys};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler, KeySpecDef};
use crate::keyspace::events::Class;
use crate::keyspace::{Db, Entry, Key};
use crate::types::zset::{
    format_pack_score, AddFlags, AddOutcome, LexBound, LexRange, ScoreRange, ZSetValue,
};
use crate::types::Value;
use crate::util::numbers::{format_f64, parse_f64, parse_f64_lenient};

/// A sorted-set command: group `sorted-set`, ACL category `@sortedset`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "sorted-set", since, summary, handler).acl(acl::SORTEDSET)
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("zadd", -4, WRITE | DENYOOM | FAST, "1.2.0", "Adds members to a sorted set, or updates their scores; creates the key if needed.", zadd)
        .complexity(
            "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        )
        .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
        .history(&[
            ("2.4.0", "Accepts multiple elements."),
            ("3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."),
            ("6.2.0", "Added the `GT` and `LT` options."),
        ])
        .args(&[
            a::key("key", 0),
            a::oneof("condition", &[a::pure("nx", "NX"), a::pure("xx", "XX")])
                .since("3.0.2")
                .optional(),
            a::oneof("comparison", &[a::pure("gt", "GT"), a::pure("lt", "LT")])
                .since("6.2.0")
                .optional(),
            a::pure("change", "CH").since("3.0.2").optional(),
            a::pure("increment", "INCR").since("3.0.2").optional(),
            a::block("score_member", &[a::double("score"), a::string("member")]).multiple(),
        ]),
    cmd("zincrby", 4, WRITE | DENYOOM | FAST, "1.2.0", "Increments the score of a member of a sorted set.", zincrby)
        .complexity("O(log(N)) where N is the number of elements in the sorted set.")
        .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::integer("increment"), a::string("member")]),
    cmd("zscore", 3, READONLY | FAST, "1.2.0", "Returns the score of a member of a sorted set.", zscore)
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("member")]),
    cmd("zmscore", -3, READONLY | FAST, "6.2.0", "Returns the scores of several members of a sorted set.", zmscore)
        .complexity("O(N) where N is the number of members being requested.")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("member").multiple()]),
    cmd("zcard", 2, READONLY | FAST, "1.2.0", "Returns the number of members of a sorted set.", zcard)
        .key_specs(&[ks(RO, 1, 0, 1)])
        .args(&[a::key("key", 0)]),
    cmd("zcount", 4, READONLY | FAST, "2.0.0", "Counts the members of a sorted set within a score range.", zcount)
        .complexity("O(log(N)) with N being the number of elements in the sorted set.")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::double("min"), a::double("max")]),
    cmd("zlexcount", 4, READONLY | FAST, "2.8.9", "Counts the members of a sorted set within a lexicographical range.", zlexcount)
        .complexity("O(log(N)) with N being the number of elements in the sorted set.")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("min"), a::string("max")]),
    cmd("zrank", 3, READONLY | FAST, "2.0.0", "Returns the position of a member in a sorted set, lowest score first.", zrank)
        .complexity("O(log(N))")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("member")]),
    cmd("zrevrank", 3, READONLY | FAST, "2.0.0", "Returns the position of a member in a sorted set, highest score first.", zrevrank)
        .complexity("O(log(N))")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("member")]),
    cmd("zrange", -4, READONLY, "1.2.0", "Returns members of a sorted set by rank, score or lexicographical range.", zrange)
        .complexity(
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .history(&[("6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options.")])
        .args(&[
            a::key("key", 0),
            a::string("start"),
            a::string("stop"),
            a::oneof("sortby", &[a::pure("byscore", "BYSCORE"), a::pure("bylex", "BYLEX")])
                .since("6.2.0")
                .optional(),
            a::pure("rev", "REV").since("6.2.0").optional(),
            a::block("offset_count", &[a::integer("offset"), a::integer("count")])
                .token("LIMIT")
                .since("6.2.0")
                .optional(),
            a::pure("withscores", "WITHSCORES").optional(),
        ]),
    cmd("zrangestore", -5, WRITE | DENYOOM, "6.2.0", "Stores a range of a sorted set's members in another key.", zrangestore)
        .complexity(
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
        )
        .key_specs(&[ks(OW | UPDATE, 1, 0, 1), ks(RO | ACCESS, 2, 0, 1)])
        .args(&[
            a::key("dst", 0),
            a::key("src", 1),
            a::string("min"),
            a::string("max"),
            a::oneof("sortby", &[a::pure("byscore", "BYSCORE"), a::pure("bylex", "BYLEX")])
                .optional(),
            a::pure("rev", "REV").optional(),
            a::block("offset_count", &[a::integer("offset"), a::integer("count")])
                .token("LIMIT")
                .optional(),
        ]),
    cmd("zrangebyscore", -4, READONLY, "1.0.5", "Returns members of a sorted set within a score range.", zrangebyscore)
        .complexity(
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .deprecated("6.2.0", "`ZRANGE` with the `BYSCORE` argument")
        .history(&[("2.0.0", "Added the `WITHSCORES` modifier.")])
        .args(&[
            a::key("key", 0),
            a::double("min"),
            a::double("max"),
            a::pure("withscores", "WITHSCORES").since("2.0.0").optional(),
            a::block("offset_count", &[a::integer("offset"), a::integer("count")])
                .token("LIMIT")
                .optional(),
        ]),
    cmd("zrevrangebyscore", -4, READONLY, "2.2.0", "Returns members of a sorted set within a score range, highest first.", zrevrangebyscore)
        .complexity(
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .deprecated("6.2.0", "`ZRANGE` with the `REV` and `BYSCORE` arguments")
        .history(&[("2.1.6", "`min` and `max` can be exclusive.")])
        .args(&[
            a::key("key", 0),
            a::double("max"),
            a::double("min"),
            a::pure("withscores", "WITHSCORES").optional(),
            a::block("offset_count", &[a::integer("offset"), a::integer("count")])
                .token("LIMIT")
                .optional(),
        ]),
    cmd("zrangebylex", -4, READONLY, "2.8.9", "Returns members of a sorted set within a lexicographical range.", zrangebylex)
        .complexity(
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .deprecated("6.2.0", "`ZRANGE` with the `BYLEX` argument")
        .args(&[
            a::key("key", 0),
            a::string("min"),
            a::string("max"),
            a::block("offset_count", &[a::integer("offset"), a::integer("count")])
                .token("LIMIT")
                .optional(),
        ]),
    cmd("zrevrangebylex", -4, READONLY, "2.8.9", "Returns members of a sorted set within a lexicographical range, in reverse.", zrevrangebylex)
        .complexity(
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .deprecated("6.2.0", "`ZRANGE` with the `REV` and `BYLEX` arguments")
        .args(&[
            a::key("key", 0),
            a::string("max"),
            a::string("min"),
            a::block("offset_count", &[a::integer("offset"), a::integer("count")])
                .token("LIMIT")
                .optional(),
        ]),
    cmd("zrevrange", -4, READONLY, "1.2.0", "Returns members of a sorted set by rank, highest score first.", zrevrange)
        .complexity(
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .deprecated("6.2.0", "`ZRANGE` with the `REV` argument")
        .args(&[
            a::key("key", 0),
            a::integer("start"),
            a::integer("stop"),
            a::pure("withscores", "WITHSCORES").optional(),
        ]),
    cmd("zrem", -3, WRITE | FAST, "1.2.0", "Removes members from a sorted set; deletes the key when none are left.", zrem)
        .complexity(
            "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
        )
        .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
        .history(&[("2.4.0", "Accepts multiple elements.")])
        .args(&[a::key("key", 0), a::string("member").multiple()]),
    cmd("zremrangebyrank", 4, WRITE, "2.0.0", "Removes the members of a sorted set within a range of ranks.", zremrangebyrank)
        .complexity(
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        )
        .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::integer("start"), a::integer("stop")]),
    cmd("zremrangebyscore", 4, WRITE, "1.2.0", "Removes the members of a sorted set within a score range.", zremrangebyscore)
        .complexity(
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        )
        .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::double("min"), a::double("max")]),
    cmd("zremrangebylex", 4, WRITE, "2.8.9", "Removes the members of a sorted set within a lexicographical range.", zremrangebylex)
        .complexity(
            "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        )
        .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("min"), a::string("max")]),
    cmd("zpopmin", -2, WRITE | FAST, "5.0.0", "Removes and returns the members with the lowest scores of a sorted set.", zpopmin)
        .complexity(
            "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
        )
        .key_specs(&[ks(RW | ACCESS | DELETE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::integer("count").optional()]),
    cmd("zpopmax", -2, WRITE | FAST, "5.0.0", "Removes and returns the members with the highest scores of a sorted set.", zpopmax)
        .complexity(
            "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
        )
        .key_specs(&[ks(RW | ACCESS | DELETE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::integer("count").optional()]),
    cmd("bzpopmin", -3, WRITE | NOSCRIPT | BLOCKING | FAST | REWRITES_EFFECTS, "5.0.0", "Pops the lowest-scored member of the first non-empty sorted set, blocking until one is available.", bzpopmin)
        .complexity("O(log(N)) with N being the number of elements in the sorted set.")
        .key_specs(&[ks(RW | ACCESS | DELETE, 1, -2, 1)])
        .history(&[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")])
        .args(&[a::key("key", 0).multiple(), a::double("timeout")]),
    cmd("bzpopmax", -3, WRITE | NOSCRIPT | BLOCKING | FAST | REWRITES_EFFECTS, "5.0.0", "Pops the highest-scored member of the first non-empty sorted set, blocking until one is available.", bzpopmax)
        .complexity("O(log(N)) with N being the number of elements in the sorted set.")
        .key_specs(&[ks(RW | ACCESS | DELETE, 1, -2, 1)])
        .history(&[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")])
        .args(&[a::key("key", 0).multiple(), a::double("timeout")]),
    cmd("zmpop", -4, WRITE | REWRITES_EFFECTS, "7.0.0", "Pops members with the lowest or highest scores from the first non-empty sorted set.", zmpop)
        .complexity(
            "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
        )
        .key_specs(&[
            KeySpecDef::new(
                RW | ACCESS | DELETE,
                BeginSearch::Index(1),
                FindKeys::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
            ),
        ])
        .args(&[
            a::integer("numkeys"),
            a::key("key", 0).multiple(),
            a::oneof("where", &[a::pure("min", "MIN"), a::pure("max", "MAX")]),
            a::integer("count").token("COUNT").optional(),
        ]),
    cmd("bzmpop", -5, WRITE | BLOCKING | REWRITES_EFFECTS, "7.0.0", "Pops members with the lowest or highest scores from the first non-empty sorted set, blocking until one is available.", bzmpop)
        .complexity(
            "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
        )
        .key_specs(&[
            KeySpecDef::new(
                RW | ACCESS | DELETE,
                BeginSearch::Index(2),
                FindKeys::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
            ),
        ])
        .args(&[
            a::double("timeout"),
            a::integer("numkeys"),
            a::key("key", 0).multiple(),
            a::oneof("where", &[a::pure("min", "MIN"), a::pure("max", "MAX")]),
            a::integer("count").token("COUNT").optional(),
        ]),
    cmd("zrandmember", -2, READONLY, "6.2.0", "Returns random members of a sorted set.", zrandmember)
        .complexity("O(N) where N is the number of elements returned")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .tips(&["nondeterministic_output"])
        .args(&[
            a::key("key", 0),
            a::block(
                "options",
                &[a::integer("count"), a::pure("withscores", "WITHSCORES").optional()],
            )
            .optional(),
        ]),
    cmd("zunion", -3, READONLY, "6.2.0", "Returns the union of sorted sets.", zunion)
        .complexity(
            "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        )
        .key_specs(&[
            KeySpecDef::new(
                RO | ACCESS,
                BeginSearch::Index(1),
                FindKeys::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
            ),
        ])
        .args(&[
            a::integer("numkeys"),
            a::key("key", 0).multiple(),
            a::integer("weight").token("WEIGHTS").optional().multiple(),
            a::oneof(
                "aggregate",
                &[a::pure("sum", "SUM"), a::pure("min", "MIN"), a::pure("max", "MAX")],
            )
            .token("AGGREGATE")
            .optional(),
            a::pure("withscores", "WITHSCORES").optional(),
        ]),
    cmd("zinter", -3, READONLY, "6.2.0", "Returns the intersection of sorted sets.", zinter)
        .complexity(
            "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
        )
        .key_specs(&[
            KeySpecDef::new(
                RO | ACCESS,
                BeginSearch::Index(1),
                FindKeys::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
            ),
        ])
        .args(&[
            a::integer("numkeys"),
            a::key("key", 0).multiple(),
            a::integer("weight").token("WEIGHTS").optional().multiple(),
            a::oneof(
                "aggregate",
                &[a::pure("sum", "SUM"), a::pure("min", "MIN"), a::pure("max", "MAX")],
            )
            .token("AGGREGATE")
            .optional(),
            a::pure("withscores", "WITHSCORES").optional(),
        ]),
    cmd("zdiff", -3, READONLY, "6.2.0", "Returns the difference between the first sorted set and the others.", zdiff)
        .complexity(
            "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
        )
        .key_specs(&[
            KeySpecDef::new(
                RO | ACCESS,
                BeginSearch::Index(1),
                FindKeys::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
            ),
        ])
        .args(&[
            a::integer("numkeys"),
            a::key("key", 0).multiple(),
            a::pure("withscores", "WITHSCORES").optional(),
        ]),
    cmd("zunionstore", -4, WRITE | DENYOOM, "2.0.0", "Stores the union of sorted sets in a key.", zunionstore)
        .complexity(
            "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        )
        .key_specs(&[
            ks(OW | UPDATE, 1, 0, 1),
            KeySpecDef::new(
                RO | ACCESS,
                BeginSearch::Index(2),
                FindKeys::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
            ),
        ])
        .args(&[
            a::key("destination", 0),
            a::integer("numkeys"),
            a::key("key", 1).multiple(),
            a::integer("weight").token("WEIGHTS").optional().multiple(),
            a::oneof(
                "aggregate",
                &[a::pure("sum", "SUM"), a::pure("min", "MIN"), a::pure("max", "MAX")],
            )
            .token("AGGREGATE")
            .optional(),
        ]),
    cmd("zinterstore", -4, WRITE | DENYOOM, "2.0.0", "Stores the intersection of sorted sets in a key.", zinterstore)
        .complexity(
            "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
        )
        .key_specs(&[
            ks(OW | UPDATE, 1, 0, 1),
            KeySpecDef::new(
                RO | ACCESS,
                BeginSearch::Index(2),
                FindKeys::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
            ),
        ])
        .args(&[
            a::key("destination", 0),
            a::integer("numkeys"),
            a::key("key", 1).multiple(),
            a::integer("weight").token("WEIGHTS").optional().multiple(),
            a::oneof(
                "aggregate",
                &[a::pure("sum", "SUM"), a::pure("min", "MIN"), a::pure("max", "MAX")],
            )
            .token("AGGREGATE")
            .optional(),
        ]),
    cmd("zdiffstore", -4, WRITE | DENYOOM, "6.2.0", "Stores the difference between the first sorted set and the others in a key.", zdiffstore)
        .complexity(
            "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
        )
        .key_specs(&[
            ks(OW | UPDATE, 1, 0, 1),
            KeySpecDef::new(
                RO | ACCESS,
                BeginSearch::Index(2),
                FindKeys::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
            ),
        ])
        .args(&[a::key("destination", 0), a::integer("numkeys"), a::key("key", 1).multiple()]),
    cmd("zintercard", -3, READONLY, "7.0.0", "Counts the members of the intersection of sorted sets.", zintercard)
        .complexity(
            "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
        )
        .key_specs(&[
            KeySpecDef::new(
                RO | ACCESS,
                BeginSearch::Index(1),
                FindKeys::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
            ),
        ])
        .args(&[
            a::integer("numkeys"),
            a::key("key", 0).multiple(),
            a::integer("limit").token("LIMIT").optional(),
        ]),
    cmd("zscan", -3, READONLY, "2.8.0", "Iterates over the members and scores of a sorted set.", zscan)
        .complexity(
            "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .tips(&["nondeterministic_output"])
        .args(&[
            a::key("key", 0),
            a::integer("cursor"),
            a::pattern("pattern").token("MATCH").optional(),
            a::integer("count").token("COUNT").optional(),
        ]),
];

// ---- shared helpers --------------------------------------------------------------------------

/// The sorted set held by an entry, WRONGTYPE if it holds something else.
fn as_zset(e: Option<&mut Entry>) -> Result<Option<&mut ZSetValue>, CmdError> {
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::ZSet(z),
            ..
        }) => Ok(Some(z)),
        Some(_) => Err(CmdError::WrongType),
    }
}

thread_local! {
    /// Where scores are formatted before they go into a reply (saves an
    /// allocation per reply).
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A score reply: `%.17g` as a bulk string in RESP2, a double in RESP3.
fn reply_score(out: &mut ReplyBuf, s: f64) {
    SCRATCH.with_borrow_mut(|b| {
        b.clear();
        format_f64(s, b);
        out.double_text(b);
    });
}

/// The array header for `n` members, with scores or not: a flat array in
/// RESP2, one [member, score] pair per member in RESP3.
fn elements_header(out: &mut ReplyBuf, n: usize, withscores: bool) {
    if withscores && !out.resp3() {
        out.array(n.saturating_mul(2));
    } else {
        out.array(n);
    }
}

fn element(out: &mut ReplyBuf, m: &[u8], s: f64, withscores: bool) {
    if withscores && out.resp3() {
        out.array(2);
    }
    out.bulk(m);
    if withscores {
        reply_score(out, s);
    }
}

fn reply_elements(out: &mut ReplyBuf, items: &[(&[u8], f64)], withscores: bool) {
    elements_header(out, items.len(), withscores);
    for &(m, s) in items {
        element(out, m, s, withscores);
    }
}

/// Redis's `zslParseRange`: `(` makes a bound exclusive; the rest is read
/// with bare `strtod` (so "" is 0 and "1e400" is inf), NaN refused.
fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, CmdError> {
    fn bound(b: &[u8]) -> Option<(f64, bool)> {
        match b.strip_prefix(b"(") {
            Some(rest) => parse_f64_lenient(rest).map(|v| (v, true)),
            None => parse_f64_lenient(b).map(|v| (v, false)),
        }
    }
    match (bound(min), bound(max)) {
        (Some((min, minex)), Some((max, maxex))) => Ok(ScoreRange {
            min,
            max,
            minex,
            maxex,
        }),
        _ => Err(CmdError::msg("ERR min or max is not a float")),
    }
}

/// Redis's `zslParseLexRange`: `-`, `+`, `[member` or `(member`. Redis
/// reads `+`/`-` as C strings, so anything after a NUL is ignored there.
fn parse_lex_range<'a>(min: &'a [u8], max: &'a [u8]) -> Result<LexRange<'a>, CmdError> {
    fn bound(b: &[u8]) -> Option<LexBound<'_>> {
        let alone = b.len() == 1 || b.get(1) == Some(&0);
        match b.first()? {
            b'+' if alone => Some(LexBound::PosInf),
            b'-' if alone => Some(LexBound::NegInf),
            b'(' => Some(LexBound::Excl(&b[1..])),
            b'[' => Some(LexBound::Incl(&b[1..])),
            _ => None,
        }
    }
    match (bound(min), bound(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(CmdError::msg("ERR min or max not valid string range item")),
    }
}

/// A `long` argument that must be ≥ 0, with one message for both failures
/// (Redis's getPositiveLongFromObjectOrReply with a message).
fn positive(arg: &[u8], msg: &'static str) -> Result<i64, CmdError> {
    match crate::util::numbers::parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(CmdError::msg(msg)),
    }
}

// ---- ZADD, ZINCRBY ---------------------------------------------------------------------------

fn zadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zadd_generic(ctx, args, false)
}

fn zincrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zadd_generic(ctx, args, true)
}

/// ZADD and ZINCRBY (which is ZADD with INCR): options, then every score
/// parsed before anything changes, then the additions.
fn zadd_generic(ctx: &mut Ctx, args: &[&[u8]], incr_cmd: bool) -> CmdResult {
    let key = args[1];
    let mut f = AddFlags {
        incr: incr_cmd,
        ..AddFlags::default()
    };
    let mut ch = false;
    let mut i = 2;
    while i < args.len() {
        let o = args[i];
        if eq_ic(o, "nx") {
            f.nx = true;
        } else if eq_ic(o, "xx") {
            f.xx = true;
        } else if eq_ic(o, "ch") {
            ch = true;
        } else if eq_ic(o, "incr") {
            f.incr = true;
        } else if eq_ic(o, "gt") {
            f.gt = true;
        } else if eq_ic(o, "lt") {
            f.lt = true;
        } else {
            break;
        }
        i += 1;
    }
    let pairs = &args[i..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    if f.nx && f.xx {
        return Err(CmdError::msg(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(CmdError::msg(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && pairs.len() > 2 {
        return Err(CmdError::msg(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let scores: smallvec::SmallVec<[f64; 8]> = pairs
        .iter()
        .step_by(2)
        .map(|s| parse_f64(s).ok_or(CmdError::NotFloat))
        .collect::<Result<_, _>>()?;
    let limits = ctx.limits();
    let (ka, out) = ctx.split();
    let (added, updated, processed, last) = ka.with_key(key, |db| {
        let z = match db.get_write(key) {
            Some(Entry {
                value: Value::ZSet(z),
                ..
            }) => z,
            Some(_) => return Err(CmdError::WrongType),
            None => {
                if f.xx {
                    return Ok((0, 0, 0, 0.0));
                }
                let z = ZSetValue::for_first_member(&limits, pairs[1].len());
                db.set(key, Value::ZSet(Box::new(z)));
                match db.get_write(key) {
                    Some(Entry {
                        value: Value::ZSet(z),
                        ..
                    }) => z,
                    _ => return Ok((0, 0, 0, 0.0)),
                }
            }
        };
        let (mut added, mut updated, mut processed, mut last) = (0i64, 0i64, 0i64, 0.0);
        for (p, &score) in pairs.chunks_exact(2).zip(&scores) {
            match z.add(p[1], score, f, &limits) {
                AddOutcome::Added(s) => {
                    added += 1;
                    processed += 1;
                    last = s;
                }
                AddOutcome::Updated(s) => {
                    updated += 1;
                    processed += 1;
                    last = s;
                }
                AddOutcome::Unchanged(s) => {
                    processed += 1;
                    last = s;
                }
                AddOutcome::Nop => {}
                AddOutcome::Nan => {
                    return Err(CmdError::msg("ERR resulting score is not a number (NaN)"))
                }
            }
        }
        if added + updated > 0 {
            db.changed(key, Class::ZSET, if f.incr { "zincr" } else { "zadd" });
        }
        Ok((added, updated, processed, last))
    })?;
    if f.incr {
        if processed > 0 {
            reply_score(out, last);
        } else {
            out.null();
        }
    } else {
        out.int(if ch { added + updated } else { added });
    }
    if added > 0 {
        ctx.signal_ready(key);
    }
    Ok(())
}

// ---- single-member reads ---------------------------------------------------------------------

fn zscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, member) = (args[1], args[2]);
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        match as_zset(db.get_read(key))?.and_then(|z| z.score(member)) {
            Some(s) => reply_score(out, s),
            None => out.null(),
        }
        Ok(())
    })
}

fn zmscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let members = &args[2..];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let z = as_zset(db.get_read(key))?;
        out.array(members.len());
        for m in members {
            match z.as_ref().and_then(|z| z.score(m)) {
                Some(s) => reply_score(out, s),
                None => out.null(),
            }
        }
        Ok(())
    })
}

fn zcard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let n = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        Ok(as_zset(db.get_read(key))?.map_or(0, |z| z.len()))
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

fn zcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let r = parse_score_range(args[2], args[3])?;
    let n = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        Ok(as_zset(db.get_read(key))?.map_or(0, |z| {
            let (lo, hi) = z.score_span(&r);
            hi - lo
        }))
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

fn zlexcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let r = parse_lex_range(args[2], args[3])?;
    let n = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        Ok(as_zset(db.get_read(key))?.map_or(0, |z| {
            let (lo, hi) = z.lex_span(&r);
            hi - lo
        }))
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

fn zrank(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    rank_generic(ctx, args, false)
}

fn zrevrank(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    rank_generic(ctx, args, true)
}

fn rank_generic(ctx: &mut Ctx, args: &[&[u8]], rev: bool) -> CmdResult {
    let (key, member) = (args[1], args[2]);
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let r = as_zset(db.get_read(key))?.and_then(|z| {
            z.rank(member)
                .map(|r| if rev { z.len() - 1 - r } else { r })
        });
        match r {
            Some(r) => out.int(r as i64),
            None => out.null(),
        }
        Ok(())
    })
}

// ---- ranges ----------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Auto,
    Rank,
    Score,
    Lex,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Auto,
    Fwd,
    Rev,
}

/// A parsed range of any kind.
enum Range<'a> {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange<'a>),
}

/// Rank range sanitised the way Redis does it (negative ranks count from
/// the end): `Some((start, end))` inclusive, None when empty.
fn rank_bounds(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    let llen = len as i64;
    let (mut s, mut e) = (start, end);
    if s < 0 {
        s = s.saturating_add(llen);
    }
    if e < 0 {
        e = e.saturating_add(llen);
    }
    if s < 0 {
        s = 0;
    }
    if s > e || s >= llen {
        return None;
    }
    if e >= llen {
        e = llen - 1;
    }
    Some((s as usize, e as usize))
}

/// The elements a range command returns, in reply order. For score and lex
/// ranges this is Redis's walk: start at the first element in range (the
/// last with `rev`), skip `offset` elements without looking at them, then
/// take elements while the far bound holds, at most `limit` of them
/// (negative: no limit). A negative offset skips everything, as in Redis.
fn collect_range<'z>(
    z: &'z ZSetValue,
    range: &Range,
    rev: bool,
    offset: i64,
    limit: i64,
) -> Vec<(&'z [u8], f64)> {
    let start = match range {
        Range::Rank(s, e) => {
            let Some((s, e)) = rank_bounds(z.len(), *s, *e) else {
                return Vec::new();
            };
            let from = if rev { z.len() - 1 - s } else { s };
            return z.iter_from(from, rev).take(e - s + 1).collect();
        }
        Range::Score(r) => z.score_start(r, rev),
        Range::Lex(r) => z.lex_start(r, rev),
    };
    let Some(start) = start else {
        return Vec::new();
    };
    if offset < 0 {
        return Vec::new();
    }
    let off = usize::try_from(offset).unwrap_or(usize::MAX);
    let from = if rev {
        match start.checked_sub(off) {
            Some(f) => f,
            None => return Vec::new(),
        }
    } else {
        match start.checked_add(off) {
            Some(f) if f < z.len() => f,
            _ => return Vec::new(),
        }
    };
    let take = if limit < 0 {
        usize::MAX
    } else {
        usize::try_from(limit).unwrap_or(usize::MAX)
    };
    let it = z.iter_from(from, rev).take(take);
    match range {
        Range::Score(r) => it
            .take_while(|&(_, s)| if rev { r.gte_min(s) } else { r.lte_max(s) })
            .collect(),
        Range::Lex(r) => it
            .take_while(|&(m, _)| if rev { r.gte_min(m) } else { r.lte_max(m) })
            .collect(),
        Range::Rank(..) => it.collect(),
    }
}

fn zrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, false, Kind::Auto, Dir::Auto)
}

fn zrangestore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 2, true, Kind::Auto, Dir::Auto)
}

fn zrangebyscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, false, Kind::Score, Dir::Fwd)
}

fn zrevrangebyscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, false, Kind::Score, Dir::Rev)
}

fn zrangebylex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, false, Kind::Lex, Dir::Fwd)
}

fn zrevrangebylex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, false, Kind::Lex, Dir::Rev)
}

fn zrevrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_generic(ctx, args, 1, false, Kind::Rank, Dir::Rev)
}

/// Every ZRANGE form (Redis's zrangeGenericCommand): `src` is the index of
/// the source key; the legacy commands come with their kind and direction
/// fixed, which makes BYSCORE/BYLEX/REV syntax errors for them.
fn zrange_generic(
    ctx: &mut Ctx,
    args: &[&[u8]],
    src: usize,
    store: bool,
    mut kind: Kind,
    mut dir: Dir,
) -> CmdResult {
    let key = args[src];
    let (mut minidx, mut maxidx) = (src + 1, src + 2);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut j = src + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        let o = args[j];
        if !store && eq_ic(o, "withscores") {
            withscores = true;
        } else if eq_ic(o, "limit") && left >= 2 {
            offset = int(args[j + 1])?;
            limit = int(args[j + 2])?;
            j += 2;
        } else if dir == Dir::Auto && eq_ic(o, "rev") {
            dir = Dir::Rev;
        } else if kind == Kind::Auto && eq_ic(o, "bylex") {
            kind = Kind::Lex;
        } else if kind == Kind::Auto && eq_ic(o, "byscore") {
            kind = Kind::Score;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if kind == Kind::Auto {
        kind = Kind::Rank;
    }
    let rev = dir == Dir::Rev;
    if limit != -1 && kind == Kind::Rank {
        return Err(CmdError::msg(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && kind == Kind::Lex {
        return Err(CmdError::msg(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    if rev && kind != Kind::Rank {
        // The range is given as max, min.
        std::mem::swap(&mut minidx, &mut maxidx);
    }
    let range = match kind {
        Kind::Score => Range::Score(parse_score_range(args[minidx], args[maxidx])?),
        Kind::Lex => Range::Lex(parse_lex_range(args[minidx], args[maxidx])?),
        _ => Range::Rank(int(args[minidx])?, int(args[maxidx])?),
    };
    if !store {
        let (ka, out) = ctx.split();
        return ka.with_key(key, |db| {
            match as_zset(db.get_read(key))? {
                None => out.array(0),
                Some(z) => {
                    let items = collect_range(z, &range, rev, offset, limit);
                    reply_elements(out, &items, withscores);
                }
            }
            Ok(())
        });
    }
    let dst = args[1];
    let limits = ctx.limits();
    let n = ctx.with_keys([dst, key], |db| -> Result<usize, CmdError> {
        let value = match as_zset(db.get_read(key))? {
            None => None,
            Some(z) => {
                let items = collect_range(z, &range, rev, offset, limit);
                let known_len = matches!(range, Range::Rank(..)).then_some(items.len());
                (!items.is_empty()).then(|| ZSetValue::from_adds(&items, known_len, &limits))
            }
        };
        Ok(store_result(db, dst, value, "zrangestore"))
    })?;
    ctx.out.int(n as i64);
    if n > 0 {
        ctx.signal_ready(dst);
    }
    Ok(())
}

/// Stores a command's result in `dst` (replacing whatever was there, TTL
/// included), or deletes `dst` when there is none. Returns its size.
/// Announces the store as `event`, or a deleted destination as "del".
fn store_result(db: &mut Db, dst: &[u8], value: Option<ZSetValue>, event: &'static str) -> usize {
    match value {
        Some(v) if !v.is_empty() => {
            let n = v.len();
            db.set(dst, Value::ZSet(Box::new(v)));
            db.changed(dst, Class::ZSET, event);
            n
        }
        _ => {
            if db.remove_without_expiring(dst).is_some() {
                db.changed(dst, Class::GENERIC, "del");
            }
            0
        }
    }
}

// ---- removal ---------------------------------------------------------------------------------

fn zrem(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let n = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        let Some(z) = as_zset(db.get_write(key))? else {
            return Ok(0);
        };
        let mut n = 0;
        let mut empty = false;
        for m in &args[2..] {
            n += z.remove(m) as i64;
            if z.is_empty() {
                empty = true;
                break;
            }
        }
        if n > 0 {
            db.changed(key, Class::ZSET, "zrem");
        }
        if empty {
            db.remove(key);
            db.notify(Class::GENERIC, "del", key);
        }
        Ok(n)
    })?;
    ctx.out.int(n);
    Ok(())
}

fn zremrangebyrank(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = Range::Rank(int(args[2])?, int(args[3])?);
    zremrange(ctx, args[1], range)
}

fn zremrangebyscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = Range::Score(parse_score_range(args[2], args[3])?);
    zremrange(ctx, args[1], range)
}

fn zremrangebylex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = Range::Lex(parse_lex_range(args[2], args[3])?);
    zremrange(ctx, args[1], range)
}

fn zremrange(ctx: &mut Ctx, key: &[u8], range: Range) -> CmdResult {
    let n = ctx.with_key(key, |db| -> Result<usize, CmdError> {
        let Some(z) = as_zset(db.get_write(key))? else {
            return Ok(0);
        };
        let (lo, hi) = match &range {
            Range::Rank(s, e) => match rank_bounds(z.len(), *s, *e) {
                Some((s, e)) => (s, e + 1),
                None => return Ok(0),
            },
            Range::Score(r) => z.score_span(r),
            Range::Lex(r) => z.lex_span(r),
        };
        let n = z.remove_ranks(lo, hi);
        let emptied = z.is_empty();
        if n > 0 {
            let event = match &range {
                Range::Rank(..) => "zremrangebyrank",
                Range::Score(_) => "zremrangebyscore",
                Range::Lex(_) => "zremrangebylex",
            };
            db.changed(key, Class::ZSET, event);
        }
        if emptied {
            db.remove(key);
            db.notify(Class::GENERIC, "del", key);
        }
        Ok(n)
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

// ---- pops ------------------------------------------------------------------------------------

/// Writes and removes the `n` lowest (or highest) elements; each one as a
/// [member, score] array when `nested`.
fn pop_elements(z: &mut ZSetValue, max: bool, n: usize, nested: bool, out: &mut ReplyBuf) {
    let len = z.len();
    let n = n.min(len);
    if n == 0 {
        return;
    }
    let it = if max {
        z.iter_from(len - 1, true)
    } else {
        z.iter_from(0, false)
    };
    for (m, s) in it.take(n) {
        if nested {
            out.array(2);
        }
        out.bulk(m);
        reply_score(out, s);
    }
    if max {
        z.remove_ranks(len - n, len);
    } else {
        z.remove_ranks(0, n);
    }
}

/// The event a pop from the low (or high) end reports.
fn pop_event(max: bool) -> &'static str {
    if max {
        "zpopmax"
    } else {
        "zpopmin"
    }
}

fn zpopmin(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zpop(ctx, args, false)
}

fn zpopmax(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zpop(ctx, args, true)
}

fn zpop(ctx: &mut Ctx, args: &[&[u8]], max: bool) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let key = args[1];
    let count = match args.get(2) {
        Some(c) => Some(positive(c, "ERR value is out of range, must be positive")?),
        None => None,
    };
    let (ka, out) = ctx.split();
    // With a count, RESP3 gets [member, score] pairs.
    let nested = out.resp3() && count.is_some();
    ka.with_key(key, |db| {
        let Some(z) = as_zset(db.get_write(key))? else {
            out.array(0);
            return Ok(());
        };
        let n = match count {
            Some(0) => {
                out.array(0);
                return Ok(());
            }
            Some(c) => usize::try_from(c).unwrap_or(usize::MAX).min(z.len()),
            None => 1,
        };
        out.array(if nested { n } else { n * 2 });
        pop_elements(z, max, n, nested, out);
        let emptied = z.is_empty();
        if n > 0 {
            db.changed(key, Class::ZSET, pop_event(max));
        }
        if emptied {
            db.remove(key);
            db.notify(Class::GENERIC, "del", key);
        }
        Ok(())
    })
}

fn bzpopmin(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    bzpop(ctx, args, false)
}

fn bzpopmax(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    bzpop(ctx, args, true)
}

/// Pops up to `count` elements from the first non-empty sorted set among
/// `keys` (a wrong-type key met first is an error), replying with the key
/// first: `[key, member, score]` for BZPOPMIN/MAX, `[key, [[m, s], ...]]`
/// for (B)ZMPOP. Returns whether anything was served, and propagates the
/// pop as Redis rewrites it: ZPOPMIN/ZPOPMAX of the key served, with the
/// number popped for (B)ZMPOP.
fn pop_first(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    max: bool,
    count: usize,
    nested: bool,
) -> Result<bool, CmdError> {
    // Re-run after a wake-up: only the key that became ready is served (a
    // wrong type or nothing there keeps the client blocked), as in Redis.
    let woken: Option<Vec<u8>> = match ctx.client.woken_by.as_deref() {
        Some(k) if keys.contains(&k) => Some(k.to_vec()),
        _ => None,
    };
    let order: Vec<&[u8]> = match &woken {
        Some(k) => vec![k.as_slice()],
        None => keys.to_vec(),
    };
    let (ka, out) = ctx.split();
    let r = ka.with_keys(keys.iter().copied(), |db| {
        for &k in &order {
            let Some(z) = as_zset(db.get_write(k))? else {
                continue;
            };
            if z.is_empty() {
                continue;
            }
            let n = count.min(z.len());
            if nested {
                out.array(2);
                out.bulk(k);
                out.array(n);
            } else {
                out.array(1 + 2 * n);
                out.bulk(k);
            }
            pop_elements(z, max, n, nested, out);
            let emptied = z.is_empty();
            db.changed(k, Class::ZSET, pop_event(max));
            if emptied {
                db.remove(k);
                db.notify(Class::GENERIC, "del", k);
            }
            return Ok(Some((k.to_vec(), n)));
        }
        Ok(None)
    });
    match r {
        Err(_) if woken.is_some() => {
            ctx.client.woken_wrong_type = true;
            Ok(false)
        }
        Ok(Some((key, n))) => {
            if ctx.propagating() {
                let name: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
                let mut v = super::argv(&[name, &key]);
                if nested {
                    v.push(super::int_arg(n as i64));
                }
                ctx.propagate_as(v);
            }
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(e) => Err(e),
    }
}

fn bzpop(ctx: &mut Ctx, args: &[&[u8]], max: bool) -> CmdResult {
    let last = args.len() - 1;
    let deadline = block_timeout(args[last], ctx.now_ms)?;
    let keys = &args[1..last];
    if !pop_first(ctx, keys, max, 1, false)? {
        ctx.block(keys, deadline, |out| out.null_array());
    }
    Ok(())
}

fn zmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zmpop_generic(ctx, args, 1, false)
}

fn bzmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zmpop_generic(ctx, args, 2, true)
}

/// ZMPOP numkeys key... MIN|MAX [COUNT n] and BZMPOP timeout numkeys ...:
/// numkeys, the direction and COUNT are checked before the timeout.
fn zmpop_generic(ctx: &mut Ctx, args: &[&[u8]], numkeys_idx: usize, block: bool) -> CmdResult {
    let numkeys = match crate::util::numbers::parse_i64(args[numkeys_idx]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(CmdError::msg("ERR numkeys should be greater than 0")),
    };
    let where_idx = match usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(numkeys_idx + 1))
    {
        Some(w) if w < args.len() => w,
        _ => return Err(CmdError::Syntax),
    };
    let max = if eq_ic(args[where_idx], "min") {
        false
    } else if eq_ic(args[where_idx], "max") {
        true
    } else {
        return Err(CmdError::Syntax);
    };
    let mut count: Option<i64> = None;
    let mut j = where_idx + 1;
    while j < args.len() {
        if count.is_none() && eq_ic(args[j], "count") && j + 1 < args.len() {
            j += 1;
            count = match crate::util::numbers::parse_i64(args[j]) {
                Some(n) if n >= 1 => Some(n),
                _ => return Err(CmdError::msg("ERR count should be greater than 0")),
            };
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let count = usize::try_from(count.unwrap_or(1)).unwrap_or(usize::MAX);
    let keys = &args[numkeys_idx + 1..where_idx];
    let deadline = if block {
        block_timeout(args[1], ctx.now_ms)?
    } else {
        None
    };
    if !pop_first(ctx, keys, max, count, true)? {
        if block {
            ctx.block(keys, deadline, |out| out.null_array());
        } else {
            ctx.out.null_array();
        }
    }
    Ok(())
}

// ---- random members --------------------------------------------------------------------------

fn zrandmember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    if args.len() >= 3 {
        let l = super::hash::random_count(args[2])?;
        if args.len() > 4 || (args.len() == 4 && !eq_ic(args[3], "withscores")) {
            return Err(CmdError::Syntax);
        }
        let withscores = args.len() == 4;
        if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
            return Err(CmdError::msg("ERR value is out of range"));
        }
        return zrandmember_count(ctx, key, l, withscores);
    }
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        match as_zset(db.get_read(key))? {
            Some(z) if !z.is_empty() => {
                let r = rand::thread_rng().gen_range(0..z.len());
                match z.get(r) {
                    Some((m, _)) => out.bulk(m),
                    None => out.null(),
                }
            }
            _ => out.null(),
        }
        Ok(())
    })
}

/// ZRANDMEMBER with a count: distinct members for a positive count (the
/// whole set, from the top, when it asks for at least that many), members
/// drawn independently for a negative one.
fn zrandmember_count(ctx: &mut Ctx, key: &[u8], l: i64, withscores: bool) -> CmdResult {
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(z) = as_zset(db.get_read(key))? else {
            out.array(0);
            return Ok(());
        };
        let size = z.len();
        let count = usize::try_from(l.unsigned_abs()).unwrap_or(usize::MAX);
        if count == 0 || size == 0 {
            out.array(0);
            return Ok(());
        }
        // Same bound as HRANDFIELD/SRANDMEMBER: a huge negative count must
        // not build a reply that exhausts memory.
        if l < 0 && count as u64 > super::hash::MAX_RANDOM_REPLY {
            return Err(super::hash::random_count_too_big());
        }
        let mut rng = rand::thread_rng();
        if l < 0 || count == 1 {
            elements_header(out, count, withscores);
            for _ in 0..count {
                if let Some((m, s)) = z.get(rng.gen_range(0..size)) {
                    element(out, m, s, withscores);
                }
            }
        } else if count >= size {
            // The whole set, in Redis's iteration order: highest first.
            elements_header(out, size, withscores);
            for (m, s) in z.iter_from(size - 1, true) {
                element(out, m, s, withscores);
            }
        } else {
            elements_header(out, count, withscores);
            for r in rand::seq::index::sample(&mut rng, size, count) {
                if let Some((m, s)) = z.get(r) {
                    element(out, m, s, withscores);
                }
            }
        }
        Ok(())
    })
}

// ---- ZSCAN -----------------------------------------------------------------------------------

fn zscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let cursor = super::args::parse_scan_cursor(args[2])?;
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(z) = as_zset(db.get_read(key))? else {
            out.array(2);
            out.bulk(b"0");
            out.array(0);
            return Ok(());
        };
        let mut count = 10usize;
        let mut pattern: Option<&[u8]> = None;
        let mut i = 3;
        while i < args.len() {
            let has_value = i + 1 < args.len();
            if eq_ic(args[i], "count") && has_value {
                let c = int(args[i + 1])?;
                if c < 1 {
                    return Err(CmdError::Syntax);
                }
                count = usize::try_from(c).unwrap_or(usize::MAX);
            } else if eq_ic(args[i], "match") && has_value {
                pattern = Some(args[i + 1]).filter(|p| *p != b"*");
            } else {
                return Err(CmdError::Syntax);
            }
            i += 2;
        }
        let mut found: Vec<(&[u8], f64)> = Vec::new();
        let next = z.scan(cursor, count, |m, s| {
            if pattern.is_none_or(|p| crate::util::glob::glob_match(p, m, false)) {
                found.push((m, s));
            }
        });
        out.array(2);
        out.bulk(itoa::Buffer::new().format(next).as_bytes());
        out.array(found.len() * 2);
        let pack = z.is_pack();
        SCRATCH.with_borrow_mut(|b| {
            for (m, s) in &found {
                out.bulk(m);
                b.clear();
                if pack {
                    format_pack_score(*s, b);
                } else {
                    format_f64(*s, b);
                }
                out.bulk(b);
            }
        });
        Ok(())
    })
}

// ---- union, intersection, difference ---------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Redis's zunionInterAggregate: inf + -inf is 0, and a NaN operand
    /// never wins MIN or MAX.
    #[inline]
    fn apply(self, target: &mut f64, v: f64) {
        match self {
            Aggregate::Sum => {
                *target += v;
                if target.is_nan() {
                    *target = 0.0;
                }
            }
            Aggregate::Min => {
                if v < *target {
                    *target = v;
                }
            }
            Aggregate::Max => {
                if v > *target {
                    *target = v;
                }
            }
        }
    }
}

/// An input of a set operation: a sorted set, a plain set (every member
/// scores 1) or a missing key (empty).
#[derive(Clone, Copy)]
enum Src<'a> {
    Missing,
    Z(&'a ZSetValue),
    S(&'a crate::types::SetValue),
}

impl Src<'_> {
    fn len(&self) -> usize {
        match self {
            Src::Missing => 0,
            Src::Z(z) => z.len(),
            Src::S(s) => s.len(),
        }
    }

    fn find(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::Missing => None,
            Src::Z(z) => z.score(m),
            Src::S(s) => set_contains(s, m).then_some(1.0),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Src::Missing => {}
            Src::Z(z) => z.iter().for_each(|(m, s)| f(m, s)),
            Src::S(s) => set_for_each(s, |m| f(m, 1.0)),
        }
    }
}

fn set_contains(s: &crate::types::SetValue, m: &[u8]) -> bool {
    s.contains(m)
}

fn set_for_each(s: &crate::types::SetValue, mut f: impl FnMut(&[u8])) {
    for m in s.iter() {
        m.with_bytes(&mut f);
    }
}

/// The options after the keys of a set operation.
struct SetOpOptions {
    weights: Vec<f64>,
    aggregate: Aggregate,
    withscores: bool,
    limit: usize,
}

/// Redis's option loop for ZUNION/ZINTER/ZDIFF(STORE)/ZINTERCARD: WEIGHTS
/// and AGGREGATE except for ZDIFF and ZINTERCARD, WITHSCORES for the
/// replying forms, LIMIT for ZINTERCARD.
fn parse_setop_options(
    opts: &[&[u8]],
    setnum: usize,
    op: SetOp,
    store: bool,
    card_only: bool,
) -> Result<SetOpOptions, CmdError> {
    let mut o = SetOpOptions {
        weights: vec![1.0; setnum],
        aggregate: Aggregate::Sum,
        withscores: false,
        limit: 0,
    };
    let mut j = 0;
    while j < opts.len() {
        let remaining = opts.len() - j;
        let a = opts[j];
        if op != SetOp::Diff && !card_only && remaining > setnum && eq_ic(a, "weights") {
            for (i, w) in opts[j + 1..=j + setnum].iter().enumerate() {
                o.weights[i] =
                    parse_f64(w).ok_or_else(|| CmdError::msg("ERR weight value is not a float"))?;
            }
            j += 1 + setnum;
        } else if op != SetOp::Diff && !card_only && remaining >= 2 && eq_ic(a, "aggregate") {
            let v = opts[j + 1];
            o.aggregate = if eq_ic(v, "sum") {
                Aggregate::Sum
            } else if eq_ic(v, "min") {
                Aggregate::Min
            } else if eq_ic(v, "max") {
                Aggregate::Max
            } else {
                return Err(CmdError::Syntax);
            };
            j += 2;
        } else if !store && !card_only && eq_ic(a, "withscores") {
            o.withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && eq_ic(a, "limit") {
            let l = positive(opts[j + 1], "ERR LIMIT can't be negative")?;
            o.limit = usize::try_from(l).unwrap_or(usize::MAX);
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(o)
}

/// The result of a set operation, sorted by (score, member), and its
/// cardinality (only counted, up to LIMIT, for ZINTERCARD).
fn compute_setop(
    srcs: &[(Src, f64)],
    op: SetOp,
    o: &SetOpOptions,
    card_only: bool,
) -> (Vec<(Key, f64)>, usize) {
    let mut out: Vec<(Key, f64)> = Vec::new();
    let mut card = 0usize;
    match op {
        SetOp::Inter => {
            // Smallest input first (a stable sort, like glibc's qsort here).
            let mut order: Vec<usize> = (0..srcs.len()).collect();
            order.sort_by_key(|&i| srcs[i].0.len());
            let (first, w0) = srcs[order[0]];
            if first.len() > 0 {
                let mut done = false;
                first.for_each(|m, s| {
                    if done {
                        return;
                    }
                    let mut score = w0 * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    for &j in &order[1..] {
                        let (src, w) = srcs[j];
                        match src.find(m) {
                            Some(v) => o.aggregate.apply(&mut score, v * w),
                            None => return,
                        }
                    }
                    card += 1;
                    if !card_only {
                        out.push((Key::from_slice(m), score));
                    } else if o.limit != 0 && card >= o.limit {
                        done = true;
                    }
                });
            }
        }
        SetOp::Union => {
            let mut order: Vec<usize> = (0..srcs.len()).collect();
            order.sort_by_key(|&i| srcs[i].0.len());
            let biggest = order.last().map_or(0, |&i| srcs[i].0.len());
            let mut acc: HashMap<Key, f64, foldhash::fast::RandomState> =
                HashMap::with_capacity_and_hasher(biggest, Default::default());
            for &i in &order {
                let (src, w) = srcs[i];
                src.for_each(|m, s| {
                    let mut score = w * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(m) {
                        Some(t) => o.aggregate.apply(t, score),
                        None => {
                            acc.insert(Key::from_slice(m), score);
                        }
                    }
                });
            }
            out = acc.into_iter().collect();
        }
        SetOp::Diff => {
            let (first, _) = srcs[0];
            first.for_each(|m, s| {
                if srcs[1..].iter().all(|(src, _)| src.find(m).is_none()) {
                    out.push((Key::from_slice(m), s));
                }
            });
        }
    }
    out.sort_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
    if !card_only {
        card = out.len();
    }
    (out, card)
}

fn zunion(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zsetop(ctx, args, "zunion", 1, SetOp::Union, false)
}

fn zinter(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zsetop(ctx, args, "zinter", 1, SetOp::Inter, false)
}

fn zdiff(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zsetop(ctx, args, "zdiff", 1, SetOp::Diff, false)
}

fn zunionstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zsetop(ctx, args, "zunionstore", 2, SetOp::Union, false)
}

fn zinterstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zsetop(ctx, args, "zinterstore", 2, SetOp::Inter, false)
}

fn zdiffstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zsetop(ctx, args, "zdiffstore", 2, SetOp::Diff, false)
}

fn zintercard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zsetop(ctx, args, "zintercard", 1, SetOp::Inter, true)
}

/// Redis's zunionInterDiffGenericCommand. The inputs are looked up (and
/// type-checked) before the options are parsed, as in Redis; a STORE form
/// has its destination at argument 1.
fn zsetop(
    ctx: &mut Ctx,
    args: &[&[u8]],
    name: &str,
    numkeys_idx: usize,
    op: SetOp,
    card_only: bool,
) -> CmdResult {
    let store = numkeys_idx == 2;
    let setnum = int(args[numkeys_idx])?;
    if setnum < 1 {
        return Err(CmdError::msg(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    let avail = args.len() - (numkeys_idx + 1);
    let setnum = match usize::try_from(setnum) {
        Ok(n) if n <= avail => n,
        _ => return Err(CmdError::Syntax),
    };
    let keys = &args[numkeys_idx + 1..numkeys_idx + 1 + setnum];
    let opts = &args[numkeys_idx + 1 + setnum..];
    let dst = store.then(|| args[1]);
    let limits = ctx.limits();
    let (ka, out) = ctx.split();
    let lock_keys = keys.iter().copied().chain(dst);
    let stored = ka.with_keys(lock_keys, |db| -> Result<usize, CmdError> {
        for &k in keys {
            match db.get_read(k) {
                None
                | Some(Entry {
                    value: Value::ZSet(_) | Value::Set(_),
                    ..
                }) => {}
                Some(_) => return Err(CmdError::WrongType),
            }
        }
        let o = parse_setop_options(opts, setnum, op, store, card_only)?;
        // Borrow the inputs by moving their values out for the duration
        // (a key given twice is taken once), so that all of them can be
        // read at once; they go back before anything is written.
        let mut taken: Vec<(&[u8], Value)> = Vec::new();
        let mut seen: HashMap<&[u8], Option<usize>, foldhash::fast::RandomState> =
            HashMap::default();
        let mut slot: Vec<Option<usize>> = Vec::with_capacity(setnum);
        for &k in keys {
            if let Some(&i) = seen.get(k) {
                slot.push(i);
                continue;
            }
            let i = db.get_write(k).map(|e| {
                let v = std::mem::replace(&mut e.value, Value::ZSet(Box::default()));
                taken.push((k, v));
                taken.len() - 1
            });
            seen.insert(k, i);
            slot.push(i);
        }
        let (result, card) = {
            let srcs: Vec<(Src, f64)> = slot
                .iter()
                .zip(&o.weights)
                .map(|(s, &w)| {
                    let src = match s.map(|i| &taken[i].1) {
                        Some(Value::ZSet(z)) => Src::Z(z),
                        Some(Value::Set(s)) => Src::S(s),
                        _ => Src::Missing,
                    };
                    (src, w)
                })
                .collect();
            compute_setop(&srcs, op, &o, card_only)
        };
        for (k, v) in taken {
            if let Some(e) = db.get_write(k) {
                e.value = v;
            }
        }
        if card_only {
            out.int(card as i64);
            return Ok(0);
        }
        let items: Vec<(&[u8], f64)> = result.iter().map(|(m, s)| (&m[..], *s)).collect();
        match dst {
            Some(dst) => {
                let value = (!items.is_empty()).then(|| ZSetValue::from_sorted(&items, &limits));
                let event = match op {
                    SetOp::Union => "zunionstore",
                    SetOp::Inter => "zinterstore",
                    SetOp::Diff => "zdiffstore",
                };
                let n = store_result(db, dst, value, event);
                out.int(n as i64);
                Ok(n)
            }
            None => {
                reply_elements(out, &items, o.withscores);
                Ok(0)
            }
        }
    })?;
    if let (Some(dst), true) = (dst, stored > 0) {
        ctx.signal_ready(dst);
    }
    Ok(())
}
