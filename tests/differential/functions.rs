//! The `functions` family: FUNCTION LOAD (good libraries and each way a library can be
//! rejected), DELETE, FLUSH, LIST, STATS, DUMP/RESTORE with every policy, KILL, and FCALL /
//! FCALL_RO with good and bad key counts, missing functions and flag violations, mixed with plain
//! writes to the keys the functions touch.
//!
//! Several libraries can be loaded at once. Redis lists libraries and their functions in hash
//! order (random per process), so FUNCTION LIST is compared with every array sorted; FUNCTION
//! DUMP's payload lists them in that order too, so it is compared only when at most one library
//! is loaded (its bytes must then be identical) and its round trip is checked either way.

use super::common::{fmt_frame, Frame, RawClient};
use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family {
    name: "functions",
    gen,
};

const KEYS: &[&str] = &["fn:a", "fn:b", "{fn}:c", "fn:l"];

/// Libraries that load, keyed by the name their shebang gives.
const GOOD: &[&str] = &[
    "#!lua name=counters\n\
     redis.register_function('ct_incr', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)\n\
     redis.register_function{function_name='ct_get', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}",
    "#!lua name=counters\n\
     redis.register_function('ct_incr', function(keys, args) return redis.call('INCRBY', keys[1], tonumber(args[1]) * 2) end)",
    "#!lua name=lists\n\
     local function push(keys, args) return redis.call('RPUSH', keys[1], unpack(args)) end\n\
     redis.register_function('ls_push', push)\n\
     redis.register_function{function_name='ls_len', callback=function(keys) return redis.call('LLEN', keys[1]) end, flags={'no-writes', 'allow-stale'}}\n\
     redis.register_function{function_name='ls_fail', callback=function(keys) return redis.call('INCR', keys[1]) end, description='fails on a list'}",
    "#!lua name=misc\n\
     redis.register_function('mi_echo', function(keys, args) return {keys, args, redis.setresp and 1} end)\n\
     redis.register_function{function_name='mi_oom', callback=function() return 1 end, flags={'allow-oom', 'no-cluster'}}",
    "#!LUA name=shout\nredis.register_function('sh_ping', function() return redis.call('PING') end)",
];

/// Libraries Redis rejects, each for a different reason.
const BAD: &[&str] = &[
    "",
    "return 1",
    "#!lua\nredis.register_function('x1', function() return 1 end)",
    "#!lua name=\nredis.register_function('x1', function() return 1 end)",
    "#!lua name=bad-name!\nredis.register_function('x1', function() return 1 end)",
    "#!lua name=empty\nreturn 1",
    "#!lua name=dup\nredis.register_function('ct_incr', function() return 1 end)",
    "#!lua name=twice\nredis.register_function('tw', function() return 1 end)\nredis.register_function('tw', function() return 2 end)",
    "#!lua name=flags\nredis.register_function{function_name='fl', callback=function() return 1 end, flags={'nope'}}",
    "#!lua name=fname\nredis.register_function('bad name', function() return 1 end)",
    "#!lua name=nocb\nredis.register_function('nocb')",
    "#!lua name=callatload\nredis.call('SET', 'x', '1')",
    "#!lua name=syntax\nredis.register_function('sy', function() return 1 end",
    "#!lua name=rt\nerror('boom at load')",
    "#!lua name=misc engine=lua\nredis.register_function('mi2', function() return 1 end)",
    "#!lua name=unknownarg foo=bar\nredis.register_function('ua', function() return 1 end)",
    "#!python name=py\nprint(1)",
    "#!lua name=extra\nredis.register_function{function_name='ex', callback=function() return 1 end, bogus=1}",
    "#!lua name=global\nx = 1\nredis.register_function('gl', function() return 1 end)",
];

/// (function, number of keys it takes).
const FUNCTIONS: &[(&str, usize)] = &[
    ("ct_incr", 1),
    ("ct_get", 1),
    ("ls_push", 1),
    ("ls_len", 1),
    ("ls_fail", 1),
    ("mi_echo", 2),
    ("mi_oom", 0),
    ("sh_ping", 0),
    ("nosuch", 0),
];

fn load(rng: &mut StdRng) -> Cmd {
    let mut b = cmd(rng, "FUNCTION").opt(rng, "LOAD");
    if chance(rng, 0.4) {
        b = b.opt(rng, "REPLACE");
    }
    let body = if chance(rng, 0.65) {
        *pick(rng, GOOD)
    } else {
        *pick(rng, BAD)
    };
    b.arg(body).exact()
}

fn fcall(rng: &mut StdRng) -> Cmd {
    let (name, nkeys) = *pick(rng, FUNCTIONS);
    let ro = chance(rng, 0.3);
    let mut b = cmd(rng, if ro { "FCALL_RO" } else { "FCALL" }).arg(name);
    let numkeys = match rng.gen_range(0..12) {
        0 => "-1".to_string(),
        1 => "x".to_string(),
        2 => (nkeys + 5).to_string(),
        _ => nkeys.to_string(),
    };
    b = b.arg(&numkeys);
    for _ in 0..nkeys {
        b = b.arg(pick(rng, KEYS));
    }
    for _ in 0..rng.gen_range(0..3) {
        b = b.arg(pick(rng, &["1", "7", "-2", "v", "1.5"]));
    }
    b.exact()
}

fn admin(rng: &mut StdRng) -> Cmd {
    match rng.gen_range(0..9) {
        0 => cmd(rng, "FUNCTION")
            .opt(rng, "DELETE")
            .arg(pick(rng, &["counters", "lists", "misc", "shout", "nosuch"]))
            .exact(),
        1 if chance(rng, 0.3) => {
            let mut b = cmd(rng, "FUNCTION").opt(rng, "FLUSH");
            if chance(rng, 0.5) {
                let mode = *pick(rng, &["ASYNC", "SYNC", "LATER"]);
                b = b.opt(rng, mode);
            }
            b.exact()
        }
        2 => cmd(rng, "FUNCTION").opt(rng, "STATS").exact(),
        3 => cmd(rng, "FUNCTION").opt(rng, "KILL").exact(),
        4 => cmd(rng, "SCRIPT").opt(rng, "KILL").exact(),
        5 => cmd(rng, "FUNCTION")
            .opt(rng, "RESTORE")
            .arg(pick(rng, &["garbage", ""]))
            .exact(),
        6 => {
            let sub = *pick(rng, &["NOSUCH", "HELP"]);
            cmd(rng, "FUNCTION").opt(rng, sub).exact()
        }
        _ => {
            let mut b = cmd(rng, "FUNCTION").opt(rng, "LIST");
            if chance(rng, 0.4) {
                b = b
                    .opt(rng, "LIBRARYNAME")
                    .arg(pick(rng, &["c*", "*s*", "lists", "zz*", "[a-m]*"]));
            }
            if chance(rng, 0.4) {
                b = b.opt(rng, "WITHCODE");
            }
            b.cmp(Cmp::Check(same_when_sorted))
        }
    }
}

fn dump(rng: &mut StdRng) -> Cmd {
    let policy = *pick(rng, &["", "APPEND", "REPLACE", "FLUSH", "append", "BOGUS"]);
    cmd(rng, "FUNCTION")
        .arg("DUMP")
        .arg(policy)
        .cmp(Cmp::Custom(dump_and_restore))
}

fn plain(rng: &mut StdRng) -> Cmd {
    let k = pick(rng, KEYS);
    match rng.gen_range(0..5) {
        0 => cmd(rng, "SET")
            .arg(k)
            .arg(pick(rng, &["1", "10", "x"]))
            .exact(),
        1 => cmd(rng, "DEL").arg(k).exact(),
        2 => cmd(rng, "RPUSH").arg(k).arg("e").exact(),
        3 => cmd(rng, "GET").arg(k).exact(),
        _ => cmd(rng, "LRANGE").arg(k).arg("0").arg("-1").exact(),
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (20, |r, _| load(r)),
            (35, |r, _| fcall(r)),
            (20, |r, _| admin(r)),
            (5, |r, _| dump(r)),
            (20, |r, _| plain(r)),
        ],
    )
}

/// The frame with every array (recursively) sorted by its printed form, so that replies listing
/// hash-ordered things compare by content. Map replies keep their pairs but are sorted too.
fn canonical(f: &Frame) -> String {
    match f {
        Frame::Array(items) | Frame::Set(items) => {
            let mut parts: Vec<String> = items.iter().map(canonical).collect();
            parts.sort();
            format!("[{}]", parts.join(","))
        }
        Frame::Map(pairs) => {
            let mut parts: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}=>{}", canonical(k), canonical(v)))
                .collect();
            parts.sort();
            format!("{{{}}}", parts.join(","))
        }
        other => fmt_frame(other),
    }
}

fn same_when_sorted(r: &Frame, t: &Frame) -> bool {
    canonical(r) == canonical(t)
}

/// FUNCTION DUMP on both (identical bytes required when at most one library is loaded), then
/// FUNCTION RESTORE of the reference's payload on both with the generated policy: the replies
/// and the libraries listed afterwards must match.
fn dump_and_restore(
    args: &[Vec<u8>],
    reference: &mut RawClient,
    target: &mut RawClient,
) -> Result<(), (String, String)> {
    let policy = args.get(2).cloned().unwrap_or_default();
    let libraries = |c: &mut RawClient| match c.call(&["FUNCTION", "LIST"]) {
        Frame::Array(libs) => libs.len(),
        _ => usize::MAX,
    };
    let (rd, td) = (
        reference.call(&["FUNCTION", "DUMP"]),
        target.call(&["FUNCTION", "DUMP"]),
    );
    let loaded = libraries(reference);
    let comparable = loaded <= 1;
    if std::mem::discriminant(&rd) != std::mem::discriminant(&td) || (comparable && rd != td) {
        return Err((fmt_frame(&rd), fmt_frame(&td)));
    }
    let Frame::Bulk(payload) = rd else {
        return Ok(());
    };
    // The target's own payload must restore into the target (checked on the target only, with
    // REPLACE so that it cannot collide with what is loaded).
    if let Frame::Bulk(own) = &td {
        let back = target.call(&[b"FUNCTION".as_slice(), b"RESTORE", own, b"REPLACE"]);
        if back != Frame::Simple(b"OK".to_vec()) {
            return Err((
                "+OK".into(),
                format!("restoring its own dump: {}", fmt_frame(&back)),
            ));
        }
    }
    let mut restore: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", &payload];
    if !policy.is_empty() {
        restore.push(&policy);
    }
    let (rr, tr) = (reference.call(&restore), target.call(&restore));
    // Redis names the first clash in its hash order, so with several libraries any clash will do.
    let clash = |f: &Frame| matches!(f, Frame::Error(e) if e.ends_with(b" already exists"));
    if rr != tr && !(loaded > 1 && clash(&rr) && clash(&tr)) {
        return Err((fmt_frame(&rr), fmt_frame(&tr)));
    }
    let (rl, tl) = (
        reference.call(&["FUNCTION", "LIST", "WITHCODE"]),
        target.call(&["FUNCTION", "LIST", "WITHCODE"]),
    );
    if !same_when_sorted(&rl, &tl) {
        return Err((fmt_frame(&rl), fmt_frame(&tl)));
    }
    Ok(())
}
