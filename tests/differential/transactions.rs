//! The `transactions` family: MULTI/EXEC/DISCARD/WATCH/UNWATCH interleaved with writes and reads
//! on a few keys, queue-time errors (EXECABORT), run-time errors inside EXEC, WATCH triggered by
//! the connection's own writes, by expiry-free deletes and by FLUSHDB. The stream is stateless:
//! MULTI, EXEC and the rest come at random, so nesting errors and EXEC-without-MULTI are common.
//! Inside and outside MULTI: SELECT and SWAPDB (watched keys in the other database), EXPIRE and
//! PERSIST on watched keys, COPY across databases, unknown commands (EXECABORT), FLUSHALL and
//! RESET (which leaves MULTI, the watches and the selected database).

use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family {
    name: "transactions",
    gen,
};

const KEYS: &[&str] = &["tx:a", "tx:b", "{tx}:c", "{tx}:d", "tx:l", "tx:h"];

const COPY_OPTIONS: &[&[&str]] = &[&[], &["REPLACE"], &["DB", "1"], &["DB", "1", "REPLACE"]];

fn body(rng: &mut StdRng) -> Cmd {
    let k = pick(rng, KEYS);
    match rng.gen_range(0..22) {
        0 => cmd(rng, "SET")
            .arg(k)
            .arg(rng.gen_range(0..50).to_string())
            .exact(),
        1 => cmd(rng, "INCR").arg(k).exact(),
        2 => cmd(rng, "GET").arg(k).exact(),
        3 => cmd(rng, "LPUSH").arg(k).arg("x").exact(),
        4 => cmd(rng, "HSET").arg(k).arg("f").arg("1").exact(),
        5 => cmd(rng, "DEL").arg(k).arg(pick(rng, KEYS)).exact(),
        6 => cmd(rng, "MSET")
            .arg(k)
            .arg("1")
            .arg(pick(rng, KEYS))
            .arg("2")
            .exact(),
        7 => cmd(rng, "RENAME").arg(k).arg(pick(rng, KEYS)).exact(),
        // Blocks only briefly outside MULTI; inside, answers at once.
        8 => cmd(rng, "BLPOP").arg(k).arg("0.01").fixed(),
        9 => cmd(rng, "EXISTS").arg(k).exact(),
        10 => cmd(rng, "GET").exact(),
        12 => cmd(rng, "SELECT")
            .arg(pick(rng, &["0", "1", "0", "99", "x"]))
            .exact(),
        13 if chance(rng, 0.4) => cmd(rng, "SWAPDB").arg("0").arg("1").exact(),
        14 => cmd(rng, "EXPIRE")
            .arg(k)
            .arg(pick(rng, &["1000", "2000", "-1", "x"]))
            .exact(),
        15 => cmd(rng, "PERSIST").arg(k).exact(),
        16 => cmd(rng, "COPY")
            .arg(k)
            .arg(pick(rng, KEYS))
            .args(pick(rng, COPY_OPTIONS).iter())
            .exact(),
        17 => unknown_command(rng),
        18 => {
            let name = *pick(rng, &["APPEND", "SETNX", "GETSET"]);
            cmd(rng, name).arg(k).arg("7").exact()
        }
        19 if chance(rng, 0.1) => cmd(rng, "FLUSHALL").exact(),
        20 => cmd(rng, "LMOVE")
            .arg(k)
            .arg(pick(rng, KEYS))
            .arg("LEFT")
            .arg("RIGHT")
            .exact(),
        21 if chance(rng, 0.2) => cmd(rng, "RESET").exact(),
        _ => cmd(rng, "EVAL")
            .arg("return redis.call('INCRBY', KEYS[1], 2)")
            .arg("1")
            .arg(k)
            .exact(),
    }
}

fn control(rng: &mut StdRng) -> Cmd {
    match rng.gen_range(0..14) {
        0..=3 => cmd(rng, "MULTI").exact(),
        4..=6 => cmd(rng, "EXEC").exact(),
        7 => cmd(rng, "DISCARD").exact(),
        8..=10 => {
            let mut b = cmd(rng, "WATCH").arg(pick(rng, KEYS));
            if chance(rng, 0.3) {
                b = b.arg(pick(rng, KEYS));
            }
            b.exact()
        }
        11 => cmd(rng, "UNWATCH").exact(),
        12 if chance(rng, 0.2) => cmd(rng, "FLUSHDB").exact(),
        _ => cmd(rng, "PING").exact(),
    }
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(rng, ctx, &[(60, |r, _| body(r)), (40, |r, _| control(r))])
}
