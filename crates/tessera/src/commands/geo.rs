//! Geo commands: GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH(STORE) and the
//! deprecated GEORADIUS family. A geo set is a sorted set whose scores are
//! 52-bit geohashes ([`crate::util::geohash`]); these handlers parse their
//! arguments in Redis 7.0's order (the first error is Redis's), search the
//! set the way Redis does (the same cells, in the same order, the same
//! early stop for COUNT ANY, the same sorts), and print distances (`%.4f`)
//! and coordinates (`%.17Lf`, trimmed) byte for byte as Redis does.

use tessera_resp::encode::ReplyBuf;

use super::args::eq_ic;
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*, BeginSearch, FindKeys, InvalidKeyArgs};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler, KeySpecDef};
use crate::keyspace::events::Class;
use crate::keyspace::Entry;
use crate::types::zset::{AddFlags, AddOutcome, ScoreRange, ZSetValue};
use crate::types::Value;
use crate::util::geohash::{self, Shape, ShapeKind};
use crate::util::numbers::{format_f64_human, parse_f64};

/// A geo command: group `geo`, ACL category `@geo`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "geo", since, summary, handler).acl(acl::GEO)
}

const UNIT: a::Arg = a::oneof(
    "unit",
    &[
        a::pure("m", "M"),
        a::pure("km", "KM"),
        a::pure("ft", "FT"),
        a::pure("mi", "MI"),
    ],
);
const WITHCOORD: a::Arg = a::pure("withcoord", "WITHCOORD").optional();
const WITHDIST: a::Arg = a::pure("withdist", "WITHDIST").optional();
const WITHHASH: a::Arg = a::pure("withhash", "WITHHASH").optional();
const ORDER: a::Arg =
    a::oneof("order", &[a::pure("asc", "ASC"), a::pure("desc", "DESC")]).optional();
const COUNT_ANY: a::Arg = a::block(
    "count",
    &[
        a::integer("count").token("COUNT"),
        a::pure("any", "ANY").optional(),
    ],
)
.optional();
/// GEORADIUS and GEORADIUS_RO document ANY's version; the BYMEMBER forms do not.
const COUNT_ANY_SINCE: a::Arg = a::block(
    "count",
    &[
        a::integer("count").token("COUNT"),
        a::pure("any", "ANY").since("6.2.0").optional(),
    ],
)
.optional();
const FROM: a::Arg = a::oneof(
    "from",
    &[
        a::string("member").token("FROMMEMBER"),
        a::block(
            "longitude_latitude",
            &[a::double("longitude"), a::double("latitude")],
        )
        .token("FROMLONLAT"),
    ],
);
const BY: a::Arg = a::oneof(
    "by",
    &[
        a::block("circle", &[a::double("radius").token("BYRADIUS"), UNIT]),
        a::block(
            "box",
            &[a::double("width").token("BYBOX"), a::double("height"), UNIT],
        ),
    ],
);
const RADIUS_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.";
const SEARCH_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape";

/// GEORADIUS(BYMEMBER)'s key specs: the source, then STORE and STOREDIST
/// keys found by keyword from `startfrom`.
const fn radius_key_specs(startfrom: i32) -> [KeySpecDef; 3] {
    [
        ks(RO | ACCESS, 1, 0, 1),
        KeySpecDef::new(
            OW | UPDATE,
            BeginSearch::Keyword {
                keyword: "STORE",
                startfrom,
            },
            FindKeys::Range {
                lastkey: 0,
                keystep: 1,
                limit: 0,
            },
        ),
        KeySpecDef::new(
            OW | UPDATE,
            BeginSearch::Keyword {
                keyword: "STOREDIST",
                startfrom,
            },
            FindKeys::Range {
                lastkey: 0,
                keystep: 1,
                limit: 0,
            },
        ),
    ]
}
static GEORADIUS_KEYS: [KeySpecDef; 3] = radius_key_specs(6);
static GEORADIUSBYMEMBER_KEYS: [KeySpecDef; 3] = radius_key_specs(5);

pub static COMMANDS: &[CommandSpec] = &[
    cmd("geoadd", -5, WRITE | DENYOOM | REWRITES_EFFECTS, "3.2.0", "Adds members with longitude and latitude to a geospatial index; creates the key if needed.", geoadd)
        .complexity(
            "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        )
        .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
        .history(&[("6.2.0", "Added the `CH`, `NX` and `XX` options.")])
        .args(&[
            a::key("key", 0),
            a::oneof("condition", &[a::pure("nx", "NX"), a::pure("xx", "XX")])
                .since("6.2.0")
                .optional(),
            a::pure("change", "CH").since("6.2.0").optional(),
            a::block(
                "longitude_latitude_member",
                &[a::double("longitude"), a::double("latitude"), a::string("member")],
            )
            .multiple(),
        ]),
    cmd("geodist", -4, READONLY, "3.2.0", "Returns the distance between two members of a geospatial index.", geodist)
        .complexity("O(log(N))")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[
            a::key("key", 0),
            a::string("member1"),
            a::string("member2"),
            UNIT.optional(),
        ]),
    cmd("geohash", -2, READONLY, "3.2.0", "Returns members of a geospatial index as standard geohash strings.", geohash)
        .complexity(
            "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("member").multiple()]),
    cmd("geopos", -2, READONLY, "3.2.0", "Returns the longitude and latitude of members of a geospatial index.", geopos)
        .complexity("O(N) where N is the number of members requested.")
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("member").multiple()]),
    cmd("georadius", -6, WRITE | DENYOOM, "3.2.0", "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", georadius)
        .complexity(RADIUS_COMPLEXITY)
        .key_specs(&GEORADIUS_KEYS)
        .getkeys(georadius_keys)
        .deprecated("6.2.0", "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument")
        .history(&[
            ("6.2.0", "Added the `ANY` option for `COUNT`."),
            ("7.0.0", "Added support for uppercase unit names."),
        ])
        .args(&[
            a::key("key", 0),
            a::double("longitude"),
            a::double("latitude"),
            a::double("radius"),
            UNIT,
            WITHCOORD,
            WITHDIST,
            WITHHASH,
            COUNT_ANY_SINCE,
            ORDER,
            a::key("key", 1).token("STORE").optional(),
            a::key("key", 2).token("STOREDIST").optional(),
        ]),
    cmd("georadiusbymember", -5, WRITE | DENYOOM, "3.2.0", "Queries a geospatial index for members within a distance from a member, optionally stores the result.", georadiusbymember)
        .complexity(RADIUS_COMPLEXITY)
        .key_specs(&GEORADIUSBYMEMBER_KEYS)
        .getkeys(georadiusbymember_keys)
        .deprecated(
            "6.2.0",
            "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments",
        )
        .history(&[("7.0.0", "Added support for uppercase unit names.")])
        .args(&[
            a::key("key", 0),
            a::string("member"),
            a::double("radius"),
            UNIT,
            WITHCOORD,
            WITHDIST,
            WITHHASH,
            COUNT_ANY,
            ORDER,
            a::key("key", 1).token("STORE").optional(),
            a::key("key", 2).token("STOREDIST").optional(),
        ]),
    cmd("georadius_ro", -6, READONLY, "3.2.10", "Returns members of a geospatial index that are within a distance from a coordinate.", georadius_ro)
        .complexity(RADIUS_COMPLEXITY)
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .deprecated("6.2.0", "`GEOSEARCH` with the `BYRADIUS` argument")
        .history(&[("6.2.0", "Added the `ANY` option for `COUNT`.")])
        .args(&[
            a::key("key", 0),
            a::double("longitude"),
            a::double("latitude"),
            a::double("radius"),
            UNIT,
            WITHCOORD,
            WITHDIST,
            WITHHASH,
            COUNT_ANY_SINCE,
            ORDER,
        ]),
    cmd("georadiusbymember_ro", -5, READONLY, "3.2.10", "Returns members of a geospatial index that are within a distance from a member.", georadiusbymember_ro)
        .complexity(RADIUS_COMPLEXITY)
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .deprecated("6.2.0", "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments")
        .args(&[
            a::key("key", 0),
            a::string("member"),
            a::double("radius"),
            UNIT,
            WITHCOORD,
            WITHDIST,
            WITHHASH,
            COUNT_ANY,
            ORDER,
        ]),
    cmd("geosearch", -7, READONLY, "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle.", geosearch)
        .complexity(SEARCH_COMPLEXITY)
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .history(&[("7.0.0", "Added support for uppercase unit names.")])
        .args(&[
            a::key("key", 0),
            FROM,
            BY,
            ORDER,
            COUNT_ANY,
            WITHCOORD,
            WITHDIST,
            WITHHASH,
        ]),
    cmd("geosearchstore", -8, WRITE | DENYOOM, "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.", geosearchstore)
        .complexity(SEARCH_COMPLEXITY)
        .key_specs(&[ks(OW | UPDATE, 1, 0, 1), ks(RO | ACCESS, 2, 0, 1)])
        .history(&[("7.0.0", "Added support for uppercase unit names.")])
        .args(&[
            a::key("destination", 0),
            a::key("source", 1),
            FROM,
            BY,
            ORDER,
            COUNT_ANY,
            a::pure("storedist", "STOREDIST").optional(),
        ]),
];

// ---- key extraction --------------------------------------------------------------------------

/// Redis's key-spec extraction for GEORADIUS(BYMEMBER): the source, then the
/// argument after the first STORE and after the first STOREDIST searched
/// from `startfrom` (Redis's keyword search stops short of the last
/// argument, so a trailing keyword names no key).
fn radius_keys(args: &[&[u8]], startfrom: usize) -> Result<Vec<usize>, InvalidKeyArgs> {
    let mut keys = vec![1];
    let end = args.len().saturating_sub(1);
    for kw in ["store", "storedist"] {
        if let Some(i) = (startfrom..end).find(|&i| eq_ic(args[i], kw)) {
            keys.push(i + 1);
        }
    }
    Ok(keys)
}

fn georadius_keys(args: &[&[u8]]) -> Result<Vec<usize>, InvalidKeyArgs> {
    radius_keys(args, 6)
}

fn georadiusbymember_keys(args: &[&[u8]]) -> Result<Vec<usize>, InvalidKeyArgs> {
    radius_keys(args, 5)
}

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

/// A double argument; `msg` (already carrying `ERR`) replaces the usual
/// "value is not a valid float".
fn double(arg: &[u8], msg: Option<&'static str>) -> Result<f64, CmdError> {
    parse_f64(arg).ok_or_else(|| match msg {
        Some(m) => CmdError::msg(m),
        None => CmdError::NotFloat,
    })
}

/// A longitude/latitude pair, range-checked as GEOADD and FROMLONLAT check
/// it (the message prints both with C's `%f`).
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), CmdError> {
    let lon = double(lon, None)?;
    let lat = double(lat, None)?;
    if !geohash::valid_lon_lat(lon, lat) {
        return Err(CmdError::msg(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok((lon, lat))
}

/// Metres per unit.
fn unit(arg: &[u8]) -> Result<f64, CmdError> {
    if eq_ic(arg, "m") {
        Ok(1.0)
    } else if eq_ic(arg, "km") {
        Ok(1000.0)
    } else if eq_ic(arg, "ft") {
        Ok(0.3048)
    } else if eq_ic(arg, "mi") {
        Ok(1609.34)
    } else {
        Err(CmdError::msg(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        ))
    }
}

/// `<radius> <unit>`: (radius, metres per unit).
fn radius_unit(radius: &[u8], u: &[u8]) -> Result<(f64, f64), CmdError> {
    let r = double(radius, Some("ERR need numeric radius"))?;
    if r < 0.0 {
        return Err(CmdError::msg("ERR radius cannot be negative"));
    }
    Ok((r, unit(u)?))
}

/// `<width> <height> <unit>`: (width, height, metres per unit).
fn box_unit(width: &[u8], height: &[u8], u: &[u8]) -> Result<(f64, f64, f64), CmdError> {
    let w = double(width, Some("ERR need numeric width"))?;
    let h = double(height, Some("ERR need numeric height"))?;
    if h < 0.0 || w < 0.0 {
        return Err(CmdError::msg("ERR height or width cannot be negative"));
    }
    Ok((w, h, unit(u)?))
}

/// A distance as Redis replies it, always a bulk string (see
/// [`format_distance`]).
fn reply_distance(out: &mut ReplyBuf, d: f64) {
    out.bulk(format_distance(d).as_bytes());
}

/// Redis 7.0 prints distances in fixed point, not with `%.4f`: the value
/// times 10^4 is rounded to an integer the way C's `llrint` does (ties to
/// even, on the already rounded product; NaN and out-of-range values
/// become `i64::MIN`), then printed with four decimals. Near a tie the two
/// differ in the last digit: 44736467.060850002 ft prints as
/// 44736467.0608 where `%.4f` gives .0609.
fn format_distance(d: f64) -> String {
    let scaled = d * 10_000.0;
    // i64::MAX rounds up to 2^63 as a double: anything from there is out
    // of range, as is everything below -2^63.
    let fits = scaled > -9_223_372_036_854_775_808.0 && scaled < 9_223_372_036_854_775_808.0;
    let units = if fits {
        scaled.round_ties_even() as i64
    } else {
        i64::MIN
    };
    let sign = if units < 0 { "-" } else { "" };
    let magnitude = units.unsigned_abs();
    format!("{sign}{}.{:04}", magnitude / 10_000, magnitude % 10_000)
}

/// A coordinate as Redis's addReplyHumanLongDouble prints it: a bulk string
/// in RESP2, a double in RESP3.
fn reply_coord(out: &mut ReplyBuf, v: f64) {
    let mut b = Vec::with_capacity(24);
    format_f64_human(v, &mut b);
    out.double_text(&b);
}

/// The position of a member, if the set has it.
fn member_pos(z: &ZSetValue, member: &[u8]) -> Option<(f64, f64)> {
    z.score(member).map(geohash::decode_score)
}

// ---- GEOADD ----------------------------------------------------------------------------------

/// GEOADD key [NX|XX] [CH] lon lat member ...: ZADD with the positions
/// turned into scores (so it notifies `zadd`, as Redis does).
fn geoadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let (mut nx, mut xx, mut ch) = (false, false, false);
    let mut i = 2;
    while i < args.len() {
        if eq_ic(args[i], "nx") {
            nx = true;
        } else if eq_ic(args[i], "xx") {
            xx = true;
        } else if eq_ic(args[i], "ch") {
            ch = true;
        } else {
            break;
        }
        i += 1;
    }
    let triples = &args[i..];
    if !triples.len().is_multiple_of(3) || (nx && xx) {
        return Err(CmdError::Syntax);
    }
    let mut scores: Vec<f64> = Vec::with_capacity(triples.len() / 3);
    for t in triples.chunks_exact(3) {
        let (lon, lat) = lon_lat(t[0], t[1])?;
        let s = geohash::score_of(lon, lat).unwrap_or(0);
        scores.push(s as f64);
    }
    // Redis hands the rewritten arguments to ZADD, which refuses an empty
    // element list.
    if scores.is_empty() {
        return Err(CmdError::Syntax);
    }
    let f = AddFlags {
        nx,
        xx,
        ..AddFlags::default()
    };
    if ctx.propagating() {
        // As Redis, which runs GEOADD as the ZADD it rewrites it into.
        let mut v = super::argv(&[b"zadd".as_slice()]);
        v.extend(args[1..i].iter().map(|a| a.to_vec()));
        for (t, &score) in triples.chunks_exact(3).zip(&scores) {
            v.push(super::int_arg(score as i64));
            v.push(t[2].to_vec());
        }
        ctx.propagate_as(v);
    }
    let limits = ctx.limits();
    let (ka, out) = ctx.split();
    let (added, updated) = ka.with_key(key, |db| {
        let z = match db.get_write(key) {
            Some(Entry {
                value: Value::ZSet(z),
                ..
            }) => z,
            Some(_) => return Err(CmdError::WrongType),
            None => {
                if xx {
                    return Ok((0, 0));
                }
                let z = ZSetValue::for_first_member(&limits, triples[2].len());
                db.set(key, Value::ZSet(Box::new(z)));
                match db.get_write(key) {
                    Some(Entry {
                        value: Value::ZSet(z),
                        ..
                    }) => z,
                    _ => return Ok((0, 0)),
                }
            }
        };
        let (mut added, mut updated) = (0i64, 0i64);
        for (t, &score) in triples.chunks_exact(3).zip(&scores) {
            match z.add(t[2], score, f, &limits) {
                AddOutcome::Added(_) => added += 1,
                AddOutcome::Updated(_) => updated += 1,
                _ => {}
            }
        }
        if added + updated > 0 {
            db.changed(key, Class::ZSET, "zadd");
        }
        Ok((added, updated))
    })?;
    out.int(if ch { added + updated } else { added });
    if added > 0 {
        ctx.signal_ready(key);
    }
    Ok(())
}

// ---- GEODIST, GEOHASH, GEOPOS ----------------------------------------------------------------

fn geodist(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let to_meters = match args.len() {
        4 => 1.0,
        5 => unit(args[4])?,
        _ => return Err(CmdError::Syntax),
    };
    let key = args[1];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(z) = as_zset(db.get_read(key))? else {
            out.null();
            return Ok(());
        };
        match (member_pos(z, args[2]), member_pos(z, args[3])) {
            (Some(p1), Some(p2)) => {
                reply_distance(out, geohash::distance(p1.0, p1.1, p2.0, p2.1) / to_meters)
            }
            _ => out.null(),
        }
        Ok(())
    })
}

fn geohash(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let z = as_zset(db.get_read(key))?;
        out.array(args.len() - 2);
        for m in &args[2..] {
            match z.as_deref().and_then(|z| member_pos(z, m)) {
                Some((lon, lat)) => out.bulk(&geohash::geohash_string(lon, lat)),
                None => out.null(),
            }
        }
        Ok(())
    })
}

fn geopos(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let z = as_zset(db.get_read(key))?;
        out.array(args.len() - 2);
        for m in &args[2..] {
            match z.as_deref().and_then(|z| member_pos(z, m)) {
                Some((lon, lat)) => {
                    out.array(2);
                    reply_coord(out, lon);
                    reply_coord(out, lat);
                }
                None => out.null_array(),
            }
        }
        Ok(())
    })
}

// ---- searches --------------------------------------------------------------------------------

/// Which command of the search family is running (Redis's georadiusGeneric
/// flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS / GEORADIUS_RO: key lon lat radius unit.
    Coords { store_ok: bool },
    /// GEORADIUSBYMEMBER(_RO): key member radius unit.
    Member { store_ok: bool },
    /// GEOSEARCH / GEOSEARCHSTORE: FROM... BY... options.
    Search { store: bool },
}

fn georadius(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Form::Coords { store_ok: true })
}

fn georadius_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Form::Coords { store_ok: false })
}

fn georadiusbymember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Form::Member { store_ok: true })
}

fn georadiusbymember_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Form::Member { store_ok: false })
}

fn geosearch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Form::Search { store: false })
}

fn geosearchstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Form::Search { store: true })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// Everything the options of a search asked for.
struct Options<'a> {
    shape: Shape,
    store: Option<&'a [u8]>,
    storedist: bool,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    sort: Sort,
    any: bool,
    /// 0: no limit.
    count: usize,
}

/// One match: the member, its position, its distance from the centre in
/// metres, and its score.
struct Point<'z> {
    member: &'z [u8],
    lon: f64,
    lat: f64,
    dist: f64,
    score: f64,
}

/// Where the options start, and the keys a search may write: GEOSEARCHSTORE's
/// destination, or every argument after a STORE/STOREDIST word (the handler
/// decides later which one counts; locking one too many is harmless).
fn search_layout<'a>(args: &[&'a [u8]], form: Form) -> (usize, usize, Vec<&'a [u8]>) {
    match form {
        Form::Coords { store_ok } | Form::Member { store_ok } => {
            let base = if matches!(form, Form::Coords { .. }) {
                6
            } else {
                5
            };
            let mut dst = Vec::new();
            if store_ok {
                for i in base..args.len().saturating_sub(1) {
                    if eq_ic(args[i], "store") || eq_ic(args[i], "storedist") {
                        dst.push(args[i + 1]);
                    }
                }
            }
            (1, base, dst)
        }
        Form::Search { store: false } => (1, 2, Vec::new()),
        Form::Search { store: true } => (2, 3, vec![args[1]]),
    }
}

/// Redis's georadiusGeneric: GEORADIUS, GEORADIUSBYMEMBER, their _RO forms,
/// GEOSEARCH and GEOSEARCHSTORE.
fn search(ctx: &mut Ctx, args: &[&[u8]], form: Form) -> CmdResult {
    let (src_idx, base, dsts) = search_layout(args, form);
    let src = args[src_idx];
    let limits = ctx.limits();
    let (ka, out) = ctx.split();
    let lock = std::iter::once(src).chain(dsts.iter().copied());
    let stored = ka.with_keys(lock, |db| -> Result<Option<Vec<u8>>, CmdError> {
        let z = as_zset(db.get_read(src))?;
        let o = parse_options(args, form, base, z.as_deref())?;
        let Some(z) = z else {
            // No source: nothing to find, and a destination goes away.
            match o.store {
                Some(dst) => {
                    if db.remove_without_expiring(dst).is_some() {
                        db.changed(dst, Class::GENERIC, "del");
                    }
                    out.int(0);
                }
                None => out.array(0),
            }
            return Ok(None);
        };
        let mut points = find_points(z, &o);
        if points.is_empty() && o.store.is_none() {
            out.array(0);
            return Ok(None);
        }
        let total = points.len();
        let returned = if o.count == 0 {
            total
        } else {
            total.min(o.count)
        };
        let mut sort = o.sort;
        // COUNT without an order means the nearest ones (not with ANY).
        if o.count != 0 && sort == Sort::None && !o.any {
            sort = Sort::Asc;
        }
        if sort != Sort::None {
            let cmp = |a: &Point, b: &Point| -> i32 {
                let c = if a.dist > b.dist {
                    1
                } else if a.dist == b.dist {
                    0
                } else {
                    -1
                };
                if sort == Sort::Desc {
                    -c
                } else {
                    c
                }
            };
            if returned == total {
                merge_sort(&mut points, &cmp);
            } else {
                partial_qsort(&mut points, 0, returned - 1, &cmp);
            }
        }
        points.truncate(returned);
        for p in &mut points {
            p.dist /= o.shape.conversion;
        }
        let Some(dst) = o.store else {
            reply_points(out, &points, &o);
            return Ok(None);
        };
        let mut items: Vec<(&[u8], f64)> = points
            .iter()
            .map(|p| (p.member, if o.storedist { p.dist } else { p.score }))
            .collect();
        items.sort_by(|a, b| {
            a.1.partial_cmp(&b.1)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.0.cmp(b.0))
        });
        items.dedup_by(|a, b| a.0 == b.0);
        let n = points.len();
        if items.is_empty() {
            if db.remove_without_expiring(dst).is_some() {
                db.changed(dst, Class::GENERIC, "del");
            }
            out.int(0);
            return Ok(None);
        }
        let value = ZSetValue::from_sorted(&items, &limits);
        drop(points);
        db.set(dst, Value::ZSet(Box::new(value)));
        let event = if matches!(form, Form::Search { .. }) {
            "geosearchstore"
        } else {
            "georadiusstore"
        };
        db.changed(dst, Class::ZSET, event);
        out.int(n as i64);
        Ok(Some(dst.to_vec()))
    })?;
    if let Some(dst) = stored {
        ctx.signal_ready(&dst);
    }
    Ok(())
}

/// Parses a search's arguments in Redis's order: the fixed centre and
/// radius of the GEORADIUS forms, then the options loop, then the
/// cross-option checks. `z` is the source set (None when missing: a
/// FROMMEMBER member is then not looked up, nor is GEORADIUSBYMEMBER's
/// radius parsed).
fn parse_options<'a>(
    args: &[&'a [u8]],
    form: Form,
    base: usize,
    z: Option<&ZSetValue>,
) -> Result<Options<'a>, CmdError> {
    let not_found = || CmdError::msg("ERR could not decode requested zset member");
    let mut o = Options {
        shape: Shape {
            lon: 0.0,
            lat: 0.0,
            conversion: 0.0,
            kind: ShapeKind::Radius(0.0),
        },
        store: None,
        storedist: false,
        withdist: false,
        withhash: false,
        withcoord: false,
        sort: Sort::None,
        any: false,
        count: 0,
    };
    let store_ok = match form {
        Form::Coords { store_ok } => {
            let (lon, lat) = lon_lat(args[2], args[3])?;
            let (r, conv) = radius_unit(args[4], args[5])?;
            (o.shape.lon, o.shape.lat) = (lon, lat);
            o.shape.kind = ShapeKind::Radius(r);
            o.shape.conversion = conv;
            store_ok
        }
        Form::Member { store_ok } => {
            if let Some(z) = z {
                let (lon, lat) = member_pos(z, args[2]).ok_or_else(not_found)?;
                let (r, conv) = radius_unit(args[3], args[4])?;
                (o.shape.lon, o.shape.lat) = (lon, lat);
                o.shape.kind = ShapeKind::Radius(r);
                o.shape.conversion = conv;
            }
            store_ok
        }
        Form::Search { store } => {
            if store {
                o.store = Some(args[1]);
            }
            false
        }
    };
    let geosearch = matches!(form, Form::Search { .. });
    let search_store = matches!(form, Form::Search { store: true });
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let opts = &args[base.min(args.len())..];
    let remaining = opts.len();
    let mut i = 0;
    while i < remaining {
        let arg = opts[i];
        let left = remaining - i - 1;
        if eq_ic(arg, "withdist") {
            o.withdist = true;
        } else if eq_ic(arg, "withhash") {
            o.withhash = true;
        } else if eq_ic(arg, "withcoord") {
            o.withcoord = true;
        } else if eq_ic(arg, "any") {
            o.any = true;
        } else if eq_ic(arg, "asc") {
            o.sort = Sort::Asc;
        } else if eq_ic(arg, "desc") {
            o.sort = Sort::Desc;
        } else if eq_ic(arg, "count") && left >= 1 {
            let c = super::args::int(opts[i + 1])?;
            if c <= 0 {
                return Err(CmdError::msg("ERR COUNT must be > 0"));
            }
            o.count = usize::try_from(c).unwrap_or(usize::MAX);
            i += 1;
        } else if eq_ic(arg, "store") && left >= 1 && store_ok {
            o.store = Some(opts[i + 1]);
            o.storedist = false;
            i += 1;
        } else if eq_ic(arg, "storedist") && left >= 1 && store_ok {
            o.store = Some(opts[i + 1]);
            o.storedist = true;
            i += 1;
        } else if eq_ic(arg, "storedist") && search_store {
            o.storedist = true;
        } else if eq_ic(arg, "frommember") && left >= 1 && geosearch && !fromloc {
            if let Some(z) = z {
                (o.shape.lon, o.shape.lat) = member_pos(z, opts[i + 1]).ok_or_else(not_found)?;
            }
            frommember = true;
            i += 1;
        } else if eq_ic(arg, "fromlonlat") && left >= 2 && geosearch && !frommember {
            (o.shape.lon, o.shape.lat) = lon_lat(opts[i + 1], opts[i + 2])?;
            fromloc = true;
            i += 2;
        } else if eq_ic(arg, "byradius") && left >= 2 && geosearch && !bybox {
            let (r, conv) = radius_unit(opts[i + 1], opts[i + 2])?;
            o.shape.kind = ShapeKind::Radius(r);
            o.shape.conversion = conv;
            byradius = true;
            i += 2;
        } else if eq_ic(arg, "bybox") && left >= 3 && geosearch && !byradius {
            let (width, height, conv) = box_unit(opts[i + 1], opts[i + 2], opts[i + 3])?;
            o.shape.kind = ShapeKind::Box { width, height };
            o.shape.conversion = conv;
            bybox = true;
            i += 3;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if o.store.is_some() && (o.withdist || o.withhash || o.withcoord) {
        return Err(CmdError::msg(if search_store {
            "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        } else {
            "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        }));
    }
    if geosearch && !(frommember || fromloc) {
        return Err(CmdError::bytes(&[
            b"ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for ",
            super::args::c_bytes(args[0]),
        ]));
    }
    if geosearch && !(byradius || bybox) {
        return Err(CmdError::bytes(&[
            b"ERR exactly one of BYRADIUS and BYBOX can be specified for ",
            super::args::c_bytes(args[0]),
        ]));
    }
    if o.any && o.count == 0 {
        return Err(CmdError::msg(
            "ERR the ANY argument requires COUNT argument",
        ));
    }
    Ok(o)
}

/// The members inside the shape, cell by cell in Redis's order (each cell
/// in score order), stopping once `count` are found with ANY.
fn find_points<'z>(z: &'z ZSetValue, o: &Options) -> Vec<Point<'z>> {
    let limit = if o.any { o.count } else { 0 };
    let full = |found: &Vec<Point>| limit != 0 && found.len() >= limit;
    let cells = o.shape.cells();
    let mut found: Vec<Point> = Vec::new();
    // Redis skips a cell equal to the one scanned just before it, except
    // right after the centre's own cell.
    let mut last: Option<usize> = None;
    for (i, cell) in cells.iter().enumerate() {
        if cell.is_none() {
            continue;
        }
        if let Some(l) = last.filter(|&l| l != 0) {
            if cells[l] == *cell {
                continue;
            }
        }
        if full(&found) {
            break;
        }
        let (min, max) = cell.score_range();
        let range = ScoreRange {
            min: min as f64,
            max: max as f64,
            minex: false,
            maxex: true,
        };
        if let Some(start) = z.score_start(&range, false) {
            for (member, score) in z.iter_from(start, false) {
                if !range.lte_max(score) {
                    break;
                }
                let (lon, lat) = geohash::decode_score(score);
                if let Some(dist) = o.shape.contains(lon, lat) {
                    found.push(Point {
                        member,
                        lon,
                        lat,
                        dist,
                        score,
                    });
                }
                if full(&found) {
                    break;
                }
            }
        }
        last = Some(i);
    }
    found
}

/// The search reply: the members, or one array per member with the
/// distance, hash and coordinates asked for (in that order).
fn reply_points(out: &mut ReplyBuf, points: &[Point], o: &Options) {
    let extras = o.withdist as usize + o.withhash as usize + o.withcoord as usize;
    out.array(points.len());
    for p in points {
        if extras > 0 {
            out.array(extras + 1);
        }
        out.bulk(p.member);
        if o.withdist {
            reply_distance(out, p.dist);
        }
        if o.withhash {
            // C's (long long) of the score: truncation.
            out.int(p.score as i64);
        }
        if o.withcoord {
            out.array(2);
            reply_coord(out, p.lon);
            reply_coord(out, p.lat);
        }
    }
}

// ---- sorting as Redis sorts ------------------------------------------------------------------

/// glibc's qsort for arrays of this size: a top-down merge sort (stable;
/// the left run wins ties), so equal distances keep their scan order.
fn merge_sort<T>(v: &mut Vec<T>, cmp: &impl Fn(&T, &T) -> i32) {
    fn order(idx: &mut [usize], tmp: &mut Vec<usize>, cmp: &dyn Fn(usize, usize) -> i32) {
        let n = idx.len();
        if n <= 1 {
            return;
        }
        let n1 = n / 2;
        order(&mut idx[..n1], tmp, cmp);
        order(&mut idx[n1..], tmp, cmp);
        tmp.clear();
        let (mut a, mut b) = (0, n1);
        while a < n1 && b < n {
            if cmp(idx[a], idx[b]) <= 0 {
                tmp.push(idx[a]);
                a += 1;
            } else {
                tmp.push(idx[b]);
                b += 1;
            }
        }
        tmp.extend_from_slice(&idx[a..n1]);
        tmp.extend_from_slice(&idx[b..n]);
        idx.copy_from_slice(tmp);
    }
    let mut idx: Vec<usize> = (0..v.len()).collect();
    let mut tmp = Vec::with_capacity(v.len());
    order(&mut idx, &mut tmp, &|i, j| cmp(&v[i], &v[j]));
    permute(v, idx);
}

/// Reorders `v` so that its i-th element is the old `v[idx[i]]`.
fn permute<T>(v: &mut Vec<T>, idx: Vec<usize>) {
    let mut old: Vec<Option<T>> = v.drain(..).map(Some).collect();
    v.extend(idx.into_iter().filter_map(|i| old[i].take()));
}

/// Redis's pqsort: a Bentley–McIlroy quicksort that only recurses into the
/// parts overlapping ranks `lrange..=rrange`, so those ranks end up sorted
/// (ties in whatever order its partitioning leaves them, which is what
/// makes COUNT with equal distances reproducible only by the same steps).
/// Redis 7.0's version has no switch to insertion sort after a partition
/// that swapped nothing, and neither has this one.
fn partial_qsort<T>(v: &mut [T], lrange: usize, rrange: usize, cmp: &impl Fn(&T, &T) -> i32) {
    fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> i32) -> usize {
        if cmp(&v[a], &v[b]) < 0 {
            if cmp(&v[b], &v[c]) < 0 {
                b
            } else if cmp(&v[a], &v[c]) < 0 {
                c
            } else {
                a
            }
        } else if cmp(&v[b], &v[c]) > 0 {
            b
        } else if cmp(&v[a], &v[c]) < 0 {
            a
        } else {
            c
        }
    }
    fn insertion<T>(v: &mut [T], lo: usize, n: usize, cmp: &impl Fn(&T, &T) -> i32) {
        for m in lo + 1..lo + n {
            let mut l = m;
            while l > lo && cmp(&v[l - 1], &v[l]) > 0 {
                v.swap(l, l - 1);
                l -= 1;
            }
        }
    }
    fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
        for k in 0..n {
            v.swap(a + k, b + k);
        }
    }
    /// Whether the part `lo..lo+n` holds any rank of the wanted range.
    fn wanted(lo: usize, n: usize, l: usize, r: usize) -> bool {
        !((l < lo && r < lo) || (l >= lo + n && r >= lo + n))
    }
    fn sort<T>(
        v: &mut [T],
        mut lo: usize,
        mut n: usize,
        l: usize,
        r: usize,
        cmp: &impl Fn(&T, &T) -> i32,
    ) {
        loop {
            if n < 7 {
                insertion(v, lo, n, cmp);
                return;
            }
            let mut pm = lo + n / 2;
            if n > 7 {
                let mut pl = lo;
                let mut pn = lo + n - 1;
                if n > 40 {
                    let d = n / 8;
                    pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                    pm = med3(v, pm - d, pm, pm + d, cmp);
                    pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
                }
                pm = med3(v, pl, pm, pn, cmp);
            }
            v.swap(lo, pm);
            // Indexes may step one below `lo` (pc when the scan meets at
            // the front), so they are kept as signed.
            let (mut pa, mut pb) = (lo as isize + 1, lo as isize + 1);
            let (mut pc, mut pd) = ((lo + n - 1) as isize, (lo + n - 1) as isize);
            loop {
                while pb <= pc {
                    let c = cmp(&v[pb as usize], &v[lo]);
                    if c > 0 {
                        break;
                    }
                    if c == 0 {
                        v.swap(pa as usize, pb as usize);
                        pa += 1;
                    }
                    pb += 1;
                }
                while pb <= pc {
                    let c = cmp(&v[pc as usize], &v[lo]);
                    if c < 0 {
                        break;
                    }
                    if c == 0 {
                        v.swap(pc as usize, pd as usize);
                        pd -= 1;
                    }
                    pc -= 1;
                }
                if pb > pc {
                    break;
                }
                v.swap(pb as usize, pc as usize);
                pb += 1;
                pc -= 1;
            }
            let pn = (lo + n) as isize;
            let r1 = (pa - lo as isize).min(pb - pa);
            vecswap(v, lo, (pb - r1) as usize, r1 as usize);
            let r2 = (pd - pc).min(pn - pd - 1);
            vecswap(v, pb as usize, (pn - r2) as usize, r2 as usize);
            let left = (pb - pa) as usize;
            if left > 1 && wanted(lo, left, l, r) {
                sort(v, lo, left, l, r, cmp);
            }
            let right = (pd - pc) as usize;
            if right > 1 {
                lo = pn as usize - right;
                n = right;
                if wanted(lo, n, l, r) {
                    continue;
                }
            }
            return;
        }
    }
    let n = v.len();
    sort(v, 0, n, lrange, rrange, cmp);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_print_in_fixed_point_as_redis_does() {
        assert_eq!(format_distance(44_736_467.060_85), "44736467.0608");
        assert_eq!(format_distance(166_274.151_6), "166274.1516");
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(0.000_05), "0.0000");
        assert_eq!(format_distance(12.5), "12.5000");
        assert_eq!(format_distance(f64::NAN), "-922337203685477.5808");
        assert_eq!(format_distance(f64::INFINITY), "-922337203685477.5808");
    }

    fn asc(a: &(f64, u32), b: &(f64, u32)) -> i32 {
        if a.0 > b.0 {
            1
        } else if a.0 == b.0 {
            0
        } else {
            -1
        }
    }

    #[test]
    fn merge_sort_is_stable() {
        let mut v: Vec<(f64, u32)> = (0..100).map(|i| (((i * 7) % 10) as f64, i)).collect();
        merge_sort(&mut v, &asc);
        for w in v.windows(2) {
            assert!(w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1));
        }
    }

    #[test]
    fn partial_sort_sorts_the_wanted_ranks() {
        let mut seed = 12345u64;
        for n in [1usize, 2, 6, 7, 8, 40, 41, 100, 500] {
            for k in [1usize, 2, 5, 50] {
                if k > n {
                    continue;
                }
                let mut v: Vec<(f64, u32)> = (0..n as u32)
                    .map(|i| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        ((seed % 30) as f64, i)
                    })
                    .collect();
                let mut sorted: Vec<f64> = v.iter().map(|p| p.0).collect();
                sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
                partial_qsort(&mut v, 0, k - 1, &asc);
                let got: Vec<f64> = v[..k].iter().map(|p| p.0).collect();
                assert_eq!(got, sorted[..k], "n={n} k={k}");
            }
        }
    }
}
