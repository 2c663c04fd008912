//! The `acl` family: random users with random rules (ACL SETUSER with passwords, key patterns
//! with read/write permissions, channels, categories, commands, subcommands, first arguments,
//! selectors, and bad rules), the connection logging in and out as them (AUTH, HELLO AUTH,
//! RESET), then commands of every kind as those users: every NOPERM (and every reply) must match,
//! as must ACL DRYRUN, WHOAMI, USERS, GETUSER and LIST (their single-command rules compared as
//! sets: Redis lists them in its dictionary's hash order) and the ACL LOG's entries (without the
//! age and client-info, which differ by nature).

use super::common::{fmt_frame, Frame};
use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family { name: "acl", gen };

const USERS: &[&str] = &["u1", "u2", "u3"];
const KEYS: &[&str] = &["k:r1", "k:w1", "k:b1", "x", "other:1"];
const CHANNELS: &[&str] = &["ch1", "ch:2", "news", "x*"];

const RULES: &[&str] = &[
    "on",
    "on",
    "off",
    "nopass",
    ">pw",
    ">pw",
    "<pw",
    "resetpass",
    "~k:*",
    "%R~k:r*",
    "%W~k:w*",
    "%RW~k:b*",
    "~x",
    "allkeys",
    "resetkeys",
    "&ch*",
    "&news",
    "&x*",
    "allchannels",
    "resetchannels",
    "+@all",
    "-@all",
    "allcommands",
    "nocommands",
    "+@read",
    "+@write",
    "-@write",
    "+@string",
    "-@string",
    "+@hash",
    "+@list",
    "-@dangerous",
    "+@keyspace",
    "+@pubsub",
    "+@scripting",
    "+@connection",
    "+@admin",
    "+get",
    "+set",
    "-get",
    "+hset",
    "+lpush",
    "+publish",
    "+eval",
    "+acl",
    "+client|id",
    "+client",
    "-client|kill",
    "+config|get",
    "+select|0",
    "+object|encoding",
    "(+set ~x)",
    "(+@read %R~other:*)",
    "clearselectors",
    "reset",
    "sanitize-payload",
    "skip-sanitize-payload",
    // Refused ones.
    "bogus",
    "+nosuch",
    "-select|0",
    "+config|get|x",
    "%X~k",
    "#abc",
];

fn setuser(rng: &mut StdRng) -> Cmd {
    let user = *pick(rng, USERS);
    let mut b = cmd(rng, "ACL").arg("SETUSER").arg(user);
    for _ in 0..rng.gen_range(0..6) {
        let rule = *pick(rng, RULES);
        // A selector is one argument or spread over several, as clients send it.
        if rule.starts_with('(') && chance(rng, 0.5) {
            b = b.args(rule.split(' '));
        } else {
            b = b.arg(rule);
        }
    }
    b.fixed()
}

fn login(rng: &mut StdRng) -> Cmd {
    match rng.gen_range(0..6) {
        0 => cmd(rng, "AUTH")
            .arg(pick(rng, USERS))
            .arg(pick(rng, &["pw", "pw", "wrong"]))
            .fixed(),
        1 => cmd(rng, "AUTH").arg("default").arg("any").fixed(),
        // (HELLO's reply holds the client id.)
        2 => cmd(rng, "HELLO")
            .arg("2")
            .arg("AUTH")
            .arg(pick(rng, USERS))
            .arg(pick(rng, &["pw", "wrong"]))
            .cmp(Cmp::Check(same_rules)),
        3 => cmd(rng, "RESET").fixed(),
        4 => cmd(rng, "ACL").arg("WHOAMI").fixed(),
        _ => cmd(rng, "AUTH").arg("pw").fixed(),
    }
}

/// A command as the logged-in user.
fn data(rng: &mut StdRng) -> Cmd {
    let k = *pick(rng, KEYS);
    let k2 = *pick(rng, KEYS);
    match rng.gen_range(0..20) {
        0 => cmd(rng, "GET").arg(k).exact(),
        1 => cmd(rng, "SET").arg(k).arg("v").exact(),
        2 => cmd(rng, "HSET").arg(k).arg("f").arg("1").exact(),
        3 => cmd(rng, "LPUSH").arg(k).arg("e").exact(),
        4 => cmd(rng, "COPY").arg(k).arg(k2).arg("REPLACE").exact(),
        5 => cmd(rng, "LMOVE")
            .arg(k)
            .arg(k2)
            .arg("LEFT")
            .arg("RIGHT")
            .exact(),
        6 => cmd(rng, "DEL").arg(k).arg(k2).exact(),
        7 => cmd(rng, "EXISTS").arg(k).arg(k2).exact(),
        8 => cmd(rng, "TYPE").arg(k).exact(),
        9 => cmd(rng, "PUBLISH")
            .arg(pick(rng, CHANNELS))
            .arg("m")
            .exact(),
        10 => cmd(rng, "EVAL")
            .arg(pick(
                rng,
                &[
                    "return redis.call('GET', KEYS[1])",
                    "return redis.call('SET', KEYS[1], 'e')",
                    "return redis.pcall('HGET', KEYS[1], 'f')",
                    "return redis.call('PUBLISH', 'news', 'm')",
                ],
            ))
            .arg("1")
            .arg(k)
            .exact(),
        11 => cmd(rng, "CONFIG")
            .arg(pick(rng, &["GET", "SET"]))
            .arg("maxmemory-samples")
            .args((chance(rng, 0.5)).then_some("5"))
            // (Never mutated: CONFIG GET * replies in hash order.)
            .fixed(),
        12 => cmd(rng, "SELECT").arg(pick(rng, &["0", "1"])).exact(),
        13 => cmd(rng, "OBJECT").arg("ENCODING").arg(k).exact(),
        // (Not CLIENT ID: the ids differ between the servers.)
        14 => cmd(rng, "CLIENT").arg("GETNAME").exact(),
        15 => cmd(rng, "ACL")
            .arg("DRYRUN")
            .arg(pick(rng, USERS))
            .args(
                pick(
                    rng,
                    &[
                        &["GET", "k:r1"][..],
                        &["SET", "k:w1", "v"],
                        &["PUBLISH", "news", "m"],
                        &["CONFIG", "GET", "port"],
                        &["SELECT", "0"],
                        &["LMOVE", "k:r1", "k:w1", "LEFT", "LEFT"],
                    ],
                )
                .iter(),
            )
            .exact(),
        16 => cmd(rng, "ACL").arg("USERS").exact(),
        17 => cmd(rng, "ACL")
            .arg("GETUSER")
            .arg(pick(rng, USERS))
            .cmp(Cmp::Check(same_rules)),
        18 => cmd(rng, "ACL").arg("LIST").cmp(Cmp::Check(same_rules)),
        _ => cmd(rng, "ACL")
            .arg("LOG")
            .arg("5")
            .cmp(Cmp::Check(same_rules)),
    }
}

fn gen(rng: &mut StdRng, _ctx: &Ctx) -> Cmd {
    match rng.gen_range(0..10) {
        0..=2 => setuser(rng),
        3..=4 => login(rng),
        5 if chance(rng, 0.3) => {
            // (EXEC's replies may hold rule descriptions.)
            let name = *pick(rng, &["MULTI", "EXEC", "DISCARD"]);
            cmd(rng, name).cmp(Cmp::Check(same_rules))
        }
        _ => data(rng),
    }
}

/// Replies compared after normalising what legitimately differs: rule descriptions
/// (`-@all +@hash +get -hdel`, `user u1 on ...`) as sets of words, and the age and client-info of
/// ACL LOG entries; anything else exactly (also inside EXEC's reply).
fn same_rules(r: &Frame, t: &Frame) -> bool {
    fn varying(k: &Frame) -> bool {
        matches!(k, Frame::Bulk(k) if k == b"age-seconds" || k == b"client-info")
    }
    fn norm(f: &Frame) -> Frame {
        match f {
            Frame::Bulk(b)
                if b.starts_with(b"user ")
                    || b.starts_with(b"-@all")
                    || b.starts_with(b"+@all") =>
            {
                let mut w: Vec<&[u8]> = b.split(|&c| c == b' ').collect();
                w.sort();
                Frame::Bulk(w.join(&b' '))
            }
            // An ACL LOG entry (RESP2): drop the varying pairs.
            Frame::Array(items)
                if items.len() == 14 && items.first() == Some(&Frame::Bulk(b"count".to_vec())) =>
            {
                Frame::Array(
                    items
                        .chunks(2)
                        .filter(|p| !varying(&p[0]))
                        .flat_map(|p| p.iter().map(norm))
                        .collect(),
                )
            }
            // HELLO's reply: without the client id.
            Frame::Array(items) if items.first() == Some(&Frame::Bulk(b"server".to_vec())) => {
                Frame::Array(
                    items
                        .chunks(2)
                        .filter(|p| p[0] != Frame::Bulk(b"id".to_vec()))
                        .flat_map(|p| p.iter().map(norm))
                        .collect(),
                )
            }
            Frame::Array(items) => Frame::Array(items.iter().map(norm).collect()),
            Frame::Map(items) => Frame::Map(
                items
                    .iter()
                    .filter(|(k, _)| !varying(k))
                    .map(|(k, v)| (norm(k), norm(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let same = norm(r) == norm(t);
    if !same {
        eprintln!(
            "normalised: {} vs {}",
            fmt_frame(&norm(r)),
            fmt_frame(&norm(t))
        );
    }
    same
}
