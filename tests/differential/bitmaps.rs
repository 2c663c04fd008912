//! The `bitmaps` family: SETBIT/GETBIT, BITCOUNT and BITPOS with every range form and unit,
//! BITOP over keys in different shards, BITFIELD/BITFIELD_RO with random widths, offsets
//! (`#N` included), values and overflow modes, all on few keys that also receive plain strings,
//! integers (read as their decimal text), APPENDs and values of other types (WRONGTYPE).
//! Offsets that would be valid stay small: a write at a huge valid offset would allocate up to
//! 512 MB on both servers; huge offsets appear only in reads and in invalid forms.

use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family {
    name: "bitmaps",
    gen,
};

const KEYS: &[&str] = &["b0", "b1", "b2", "b3", "b:4", "b{5}"];
/// Keys of other types (created by this generator).
const OTHER: &[&str] = &["b:list", "b:hash"];

fn key(rng: &mut StdRng) -> String {
    match rng.gen_range(0..100) {
        0..=5 => pick(rng, OTHER).to_string(),
        6..=9 => "b:none".to_string(),
        10..=14 => "b:int".to_string(),
        _ => pick(rng, KEYS).to_string(),
    }
}

/// A bit offset for a write: small, sometimes invalid.
fn write_offset(rng: &mut StdRng) -> String {
    match rng.gen_range(0..30) {
        0..=19 => rng.gen_range(0u64..64).to_string(),
        20..=25 => rng.gen_range(0u64..2000).to_string(),
        26 => rng.gen_range(0u64..20_000).to_string(),
        27 => pick(rng, &["-1", "-100", "-9223372036854775808"]).to_string(),
        28 => pick(
            rng,
            &[
                "4294967296",
                "9223372036854775807",
                "9223372036854775808",
                "99999999999",
            ],
        )
        .to_string(),
        _ => pick(rng, &["abc", "", "1.5", "+1", "01", " 1", "0x10", "#1"]).to_string(),
    }
}

/// A bit offset for a read: may be huge (nothing is allocated).
fn read_offset(rng: &mut StdRng) -> String {
    if chance(rng, 0.05) {
        return pick(rng, &["4294967295", "4294967294", "100000000"]).to_string();
    }
    write_offset(rng)
}

fn c_setbit(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let v = match rng.gen_range(0..20) {
        0 => pick(rng, &["2", "-1", "x", "", "01", "10"]).to_string(),
        n => (n % 2).to_string(),
    };
    cmd(rng, "SETBIT")
        .arg(key(rng))
        .arg(write_offset(rng))
        .arg(v)
        .exact()
}

fn c_getbit(rng: &mut StdRng, _: &Ctx) -> Cmd {
    cmd(rng, "GETBIT")
        .arg(key(rng))
        .arg(read_offset(rng))
        .exact()
}

/// A range index: mostly small, both signs, sometimes extreme or not a number.
fn index(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=13 => rng.gen_range(-40i64..=40).to_string(),
        14..=15 => rng.gen_range(-3000i64..=3000).to_string(),
        16 => pick(
            rng,
            &[
                "9223372036854775807",
                "-9223372036854775808",
                "4294967296",
                "-4294967297",
            ],
        )
        .to_string(),
        17 => pick(rng, &["abc", "", "1.5", "9223372036854775808"]).to_string(),
        _ => pick(rng, &["0", "-1"]).to_string(),
    }
}

fn unit(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..12) {
        0..=4 => mangle_case(rng, "BIT"),
        5..=9 => mangle_case(rng, "BYTE"),
        10 => pick(rng, &["BITS", "", "bit\x00x", "B"])
            .as_bytes()
            .to_vec(),
        _ => junk(rng),
    }
}

fn c_bitcount(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let mut b = cmd(rng, "BITCOUNT").arg(key(rng));
    match rng.gen_range(0..10) {
        0..=1 => {}
        2 => b = b.arg(index(rng)),
        3..=5 => b = b.arg(index(rng)).arg(index(rng)),
        6..=8 => b = b.arg(index(rng)).arg(index(rng)).arg(unit(rng)),
        _ => {
            b = b
                .arg(index(rng))
                .arg(index(rng))
                .arg(unit(rng))
                .arg(junk(rng))
        }
    }
    b.exact()
}

fn c_bitpos(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let bit = match rng.gen_range(0..20) {
        0 => pick(rng, &["2", "-1", "x", "", "01"]).to_string(),
        n => (n % 2).to_string(),
    };
    let mut b = cmd(rng, "BITPOS").arg(key(rng)).arg(bit);
    match rng.gen_range(0..12) {
        0..=1 => {}
        2..=3 => b = b.arg(index(rng)),
        4..=6 => b = b.arg(index(rng)).arg(index(rng)),
        7..=10 => b = b.arg(index(rng)).arg(index(rng)).arg(unit(rng)),
        _ => {
            b = b
                .arg(index(rng))
                .arg(index(rng))
                .arg(unit(rng))
                .arg(junk(rng))
        }
    }
    b.exact()
}

fn c_bitop(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let op = match rng.gen_range(0..20) {
        0..=4 => mangle_case(rng, "AND"),
        5..=9 => mangle_case(rng, "OR"),
        10..=13 => mangle_case(rng, "XOR"),
        14..=18 => mangle_case(rng, "NOT"),
        _ => pick(rng, &["NAND", "an", "", "and\x00x", "NOTT"])
            .as_bytes()
            .to_vec(),
    };
    let not = op.eq_ignore_ascii_case(b"not");
    let n = if not && chance(rng, 0.9) {
        1
    } else {
        rng.gen_range(1..5)
    };
    // The destination is mostly a bitmap key: one of another type is replaced.
    let dest = if chance(rng, 0.9) {
        pick(rng, KEYS).to_string()
    } else {
        key(rng)
    };
    let mut b = cmd(rng, "BITOP").arg(op).arg(dest);
    for _ in 0..n {
        b = b.arg(key(rng));
    }
    b.exact()
}

/// A BITFIELD type: mostly valid widths, sometimes invalid.
fn field_type(rng: &mut StdRng) -> String {
    match rng.gen_range(0..30) {
        0..=11 => format!("i{}", rng.gen_range(1..=64)),
        12..=23 => format!("u{}", rng.gen_range(1..=63)),
        24..=26 => pick(rng, &["i8", "u8", "i16", "u1", "i1", "i64", "u63", "i32"]).to_string(),
        _ => pick(
            rng,
            &[
                "u64", "i65", "i0", "u0", "I8", "x8", "i", "", "i08", "u-1", "8",
            ],
        )
        .to_string(),
    }
}

fn field_offset(rng: &mut StdRng, write: bool) -> String {
    match rng.gen_range(0..40) {
        0..=23 => rng.gen_range(0u64..64).to_string(),
        24..=29 => rng.gen_range(0u64..2000).to_string(),
        30..=33 => format!("#{}", rng.gen_range(0..20)),
        34 if !write => pick(rng, &["4294967295", "4294967000", "#536870911"]).to_string(),
        35 => pick(rng, &["#-1", "#x", "#", "##1", "#01"]).to_string(),
        36 => pick(rng, &["#9223372036854775807", "#4294967296"]).to_string(),
        _ => write_offset(rng),
    }
}

fn field_value(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=9 => rng.gen_range(-300i64..=300).to_string(),
        10..=12 => rng.gen_range(-100_000i64..=100_000).to_string(),
        13..=15 => int_arg(rng),
        16 => pick(
            rng,
            &[
                "9223372036854775807",
                "-9223372036854775808",
                "4294967295",
                "-2147483648",
            ],
        )
        .to_string(),
        _ => rng.gen_range(0i64..=1).to_string(),
    }
}

fn field_ops(rng: &mut StdRng, read_only: bool) -> Vec<Vec<u8>> {
    let mut args = Vec::new();
    for _ in 0..rng.gen_range(0..5) {
        let r = rng.gen_range(0..20);
        if r < 7 || (read_only && r < 18) {
            args.push(mangle_case(rng, "GET"));
            args.push(field_type(rng).into_bytes());
            args.push(field_offset(rng, false).into_bytes());
        } else if r < 16 {
            let op = *pick(rng, &["SET", "INCRBY"]);
            args.push(mangle_case(rng, op));
            args.push(field_type(rng).into_bytes());
            args.push(field_offset(rng, true).into_bytes());
            args.push(field_value(rng).into_bytes());
        } else if r < 19 {
            args.push(mangle_case(rng, "OVERFLOW"));
            let t = match rng.gen_range(0..10) {
                0..=2 => mangle_case(rng, "WRAP"),
                3..=5 => mangle_case(rng, "SAT"),
                6..=8 => mangle_case(rng, "FAIL"),
                _ => pick(rng, &["foo", "", "SATURATE"]).as_bytes().to_vec(),
            };
            args.push(t);
        } else {
            args.push(junk(rng));
        }
    }
    args
}

fn c_bitfield(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    let ops = field_ops(rng, false);
    cmd(rng, "BITFIELD").arg(k).args(ops).exact()
}

fn c_bitfield_ro(rng: &mut StdRng, _: &Ctx) -> Cmd {
    let k = key(rng);
    let ops = field_ops(rng, true);
    cmd(rng, "BITFIELD_RO").arg(k).args(ops).exact()
}

fn c_strings(rng: &mut StdRng, _: &Ctx) -> Cmd {
    // Keys of other types keep their type (for WRONGTYPE).
    let k = match rng.gen_range(0..10) {
        0 => "b:none".to_string(),
        1 => "b:int".to_string(),
        _ => pick(rng, KEYS).to_string(),
    };
    match rng.gen_range(0..10) {
        0..=2 => {
            let v = match rng.gen_range(0..4) {
                0 => rng.gen_range(-1000i64..100_000).to_string().into_bytes(),
                1 => random_string(rng, ALNUM, 0, 50),
                2 => random_string(rng, b"\x00\xff\x0f\xf0\x81", 0, 20),
                _ => pick(rng, &["", "foobar", "12", "-1", "9223372036854775807"])
                    .as_bytes()
                    .to_vec(),
            };
            cmd(rng, "SET").arg(k).arg(v).exact()
        }
        3 => {
            let v = rng.gen_range(-1000i64..1000).to_string();
            cmd(rng, "SET").arg("b:int").arg(v).exact()
        }
        4 => cmd(rng, "APPEND")
            .arg(k)
            .arg(random_string(rng, b"\x00\xffab", 0, 5))
            .exact(),
        5 => cmd(rng, "GET").arg(k).exact(),
        6 => cmd(rng, "STRLEN").arg(k).exact(),
        7 => cmd(rng, "OBJECT").arg("ENCODING").arg(k).fixed(),
        8 => cmd(rng, "DEL").arg(k).exact(),
        _ => cmd(rng, "INCR").arg("b:int").exact(),
    }
}

fn c_other_types(rng: &mut StdRng, _: &Ctx) -> Cmd {
    if chance(rng, 0.5) {
        cmd(rng, "RPUSH").arg("b:list").arg("x").exact()
    } else {
        cmd(rng, "HSET").arg("b:hash").arg("f").arg("v").exact()
    }
}

fn c_expire(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    let secs = rel_future(rng, ctx, Unit::Secs);
    cmd(rng, "EXPIRE").arg(key(rng)).arg(secs).fixed()
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (16, c_setbit),
            (8, c_getbit),
            (10, c_bitcount),
            (10, c_bitpos),
            (8, c_bitop),
            (14, c_bitfield),
            (5, c_bitfield_ro),
            (10, c_strings),
            (1, c_other_types),
            (1, c_expire),
        ],
    )
}
