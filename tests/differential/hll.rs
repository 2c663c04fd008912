//! The `hll` family: PFADD (few or many elements from a shared pool, so that registers repeat,
//! runs split and merge, and sketches turn dense), PFCOUNT on one key (cache reads and writes)
//! and many (unions), PFMERGE, PFDEBUG, under changing `hll-sparse-max-bytes`. Sketches are
//! compared byte for byte (GET here and in the final state check), and they are damaged on
//! purpose (SETRANGE/APPEND over a sketch, crafted headers) so that the corrupt and not-an-HLL
//! paths must also agree. Plain strings, integers and other types are mixed in for WRONGTYPE.

use super::common::{fmt_frame, Frame, RawClient};
use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family { name: "hll", gen };

const KEYS: &[&str] = &["h0", "h1", "h2", "h{3}", "h:4"];
/// Keys that hold something else than a sketch.
const OTHER: &[&str] = &["h:str", "h:int", "h:list"];

fn key(rng: &mut StdRng) -> String {
    match rng.gen_range(0..100) {
        0..=7 => pick(rng, OTHER).to_string(),
        8..=11 => "h:none".to_string(),
        _ => pick(rng, KEYS).to_string(),
    }
}

fn element(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..10) {
        0..=5 => format!("e{}", rng.gen_range(0..3000)).into_bytes(),
        6..=7 => rng.gen_range(0..200).to_string().into_bytes(),
        8 => random_string(rng, b"ab\x00\xff", 0, 9),
        _ => random_string(rng, ALNUM, 1, 40),
    }
}

fn c_pfadd(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let n = match rng.gen_range(0..20) {
        0..=1 => 0,
        2..=15 => rng.gen_range(1..6),
        16..=18 => rng.gen_range(20..120),
        _ => rng.gen_range(300..900),
    };
    let mut b = cmd(rng, "PFADD").arg(key(rng));
    for _ in 0..n {
        b = b.arg(element(rng));
    }
    b.exact()
}

fn c_pfcount(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let n = if chance(rng, 0.65) {
        1
    } else {
        rng.gen_range(2..5)
    };
    let mut b = cmd(rng, "PFCOUNT");
    for _ in 0..n {
        b = b.arg(key(rng));
    }
    b.exact()
}

fn c_pfmerge(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let mut b = cmd(rng, "PFMERGE").arg(key(rng));
    for _ in 0..rng.gen_range(0..4) {
        b = b.arg(key(rng));
    }
    b.exact()
}

fn c_pfdebug(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let sub = match rng.gen_range(0..20) {
        0..=5 => mangle_case(rng, "DECODE"),
        6..=10 => mangle_case(rng, "ENCODING"),
        11..=14 => mangle_case(rng, "TODENSE"),
        15..=16 => mangle_case(rng, "GETREG"),
        17 => b"getreg\x00x".to_vec(),
        _ => pick(rng, &["FOO", "", "dump", "\r\n"]).as_bytes().to_vec(),
    };
    cmd(rng, "PFDEBUG").arg(sub).arg(key(rng)).exact()
}

/// Damages a sketch: a random byte anywhere in the header or the first opcodes, trailing
/// garbage, or a crafted value (run through [`damage_checked`]).
fn c_corrupt(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = pick(rng, KEYS).to_string();
    match rng.gen_range(0..10) {
        0..=4 => {
            let off = match rng.gen_range(0..4) {
                0 => rng.gen_range(0..16),
                1 => rng.gen_range(16..40),
                2 => rng.gen_range(8..16),
                _ => 4,
            };
            let byte = match rng.gen_range(0..4) {
                0 => vec![rng.gen_range(0..=255u8)],
                1 => vec![pick(rng, &[0u8, 1, 2, 0x7f, 0x80, 0xff, 0x40, 0x3f, 0xfc]).to_owned()],
                2 => vec![rng.gen_range(0..=255u8), rng.gen_range(0..=255u8)],
                _ => vec![0x40, 0x00],
            };
            cmd(rng, "SETRANGE")
                .arg(k)
                .arg(off.to_string())
                .arg(byte)
                .cmp(Cmp::Custom(damage_checked))
        }
        5..=6 => {
            let tail = random_string(rng, b"\x00\x01\x3f\x40\x7f\x80\xff\xfc", 1, 3);
            cmd(rng, "APPEND")
                .arg(k)
                .arg(tail)
                .cmp(Cmp::Custom(damage_checked))
        }
        _ => {
            let mut v = b"HYLL".to_vec();
            v.push(*pick(rng, &[0u8, 1, 1, 1, 2]));
            v.extend_from_slice(&[0, 0, 0]);
            for _ in 0..8 {
                v.push(if chance(rng, 0.7) { 0 } else { rng.gen() });
            }
            let body: &[&[u8]] = &[
                b"\x7f\xff",
                b"\x7f\x00",
                b"\x40\x00",
                b"",
                b"\x7f\xfe\x80",
                b"\x7f\xfc\x83",
                b"\x7f\xff\x80",
                b"\x00\x7f\xfe",
                b"\x40",
                b"\x7f",
            ];
            let tail: &[u8] = pick::<&[u8]>(rng, body);
            v.extend_from_slice(tail);
            cmd(rng, "SET")
                .arg(k)
                .arg(v)
                .cmp(Cmp::Custom(damage_checked))
        }
    }
}

/// Whether the opcodes after a 16-byte header end with the first byte of an XZERO whose second
/// byte is missing.
fn ends_with_cut_xzero(v: &[u8]) -> bool {
    if v.len() < 16 {
        return false;
    }
    let mut p = 16;
    while p < v.len() {
        p += if v[p] & 0xc0 == 0x40 { 2 } else { 1 };
    }
    p > v.len()
}

/// Runs a command that writes bytes into a sketch on both servers, then, if the value now ends
/// with a cut-off XZERO opcode, completes it on both (APPEND of a zero byte). Reading such an
/// opcode reads the byte after the string: Redis reads its buffer, which is the terminator
/// except after PFADD split that very opcode (then it holds the byte the split cut off);
/// Tessera always reads 0 there. Only a corrupted sketch can end that way.
fn damage_checked(
    args: &[Vec<u8>],
    r: &mut RawClient,
    t: &mut RawClient,
) -> Result<(), (String, String)> {
    let (rr, tr) = (r.call(args), t.call(args));
    if rr != tr {
        return Err((fmt_frame(&rr), fmt_frame(&tr)));
    }
    let key = &args[1];
    if let Frame::Bulk(v) = r.call(&[&b"GET"[..], key]) {
        if ends_with_cut_xzero(&v) {
            let fix = [&b"APPEND"[..], key, b"\x00"];
            let (rr, tr) = (r.call(&fix), t.call(&fix));
            if rr != tr {
                return Err((fmt_frame(&rr), fmt_frame(&tr)));
            }
        }
    }
    Ok(())
}

fn c_strings(rng: &mut StdRng, _: &Ctx) -> Cmd {
    match rng.gen_range(0..10) {
        0..=4 => cmd(rng, "GET").arg(key(rng)).exact(),
        5 => cmd(rng, "SET")
            .arg("h:str")
            .arg(pick(rng, &["hello", "HYLL", "HYLLHYLLHYLLHYLLHYLL", ""]))
            .exact(),
        6 => cmd(rng, "SET")
            .arg("h:int")
            .arg(rng.gen_range(-100..100000).to_string())
            .exact(),
        7 => cmd(rng, "RPUSH").arg("h:list").arg("x").exact(),
        8 => cmd(rng, "OBJECT").arg("ENCODING").arg(key(rng)).fixed(),
        _ => cmd(rng, "DEL").arg(key(rng)).exact(),
    }
}

/// Drops a sketch, so that damaged ones do not pile up.
fn c_reset(rng: &mut StdRng, _: &Ctx) -> Cmd {
    cmd(rng, "DEL").arg(pick(rng, KEYS)).exact()
}

fn c_copy(rng: &mut StdRng, _: &Ctx) -> Cmd {
    cmd(rng, "COPY")
        .arg(pick(rng, KEYS))
        .arg(pick(rng, KEYS))
        .opt(rng, "REPLACE")
        .fixed()
}

fn c_config(rng: &mut StdRng, _: &Ctx) -> Cmd {
    // Mostly the default, so that sketches live long enough in sparse form.
    let v = *pick(
        rng,
        &[
            "0", "20", "40", "100", "500", "3000", "3000", "3000", "3000", "3000", "20000",
        ],
    );
    cmd(rng, "CONFIG")
        .arg("SET")
        .arg("hll-sparse-max-bytes")
        .arg(v)
        .fixed()
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (20, c_pfadd),
            (12, c_pfcount),
            (6, c_pfmerge),
            (6, c_pfdebug),
            (1, c_corrupt),
            (2, c_reset),
            (10, c_strings),
            (1, c_copy),
            (1, c_config),
        ],
    )
}
