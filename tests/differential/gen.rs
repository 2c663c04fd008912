//! Building blocks for the command generators: the command type with its compare mode, a
//! builder that randomises the case of names and options, shared pools (junk arguments,
//! integers, expiry times) and the generic mutations the runner applies to every family.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

pub type Args = Vec<Vec<u8>>;

/// How the replies of the reference and the target are compared.
#[derive(Clone, Debug)]
pub enum Cmp {
    /// Frames must be identical.
    Exact,
    /// The reply is an array whose order Redis leaves unspecified (KEYS, SMEMBERS): compared
    /// after sorting its elements. Anything else is compared exactly.
    Unordered,
    /// Integer replies that depend on the clock (TTL, PTTL, EXPIRETIME): negative values must be
    /// equal, non-negative ones within the tolerance. Anything else is compared exactly.
    Approx(i64),
    /// A full SCAN-like iteration, run on its own (not pipelined): the argument at `cursor_arg`
    /// is replaced by the cursor until it comes back as 0; everything returned is collected,
    /// split in groups of `group` elements (2 for HSCAN/ZSCAN pairs), deduplicated and sorted.
    /// An error on the first call is compared exactly.
    ScanAll { cursor_arg: usize, group: usize },
    /// RANDOMKEY-like: run on its own; nil on one side iff nil on the other, and a returned key
    /// must exist (checked with EXISTS on the same server right away).
    RandomKey,
    /// A reply with a random part (ZRANDMEMBER, SRANDMEMBER, ...): `check(reference, target)`
    /// decides, e.g. same shape and only members the reference could have returned.
    Check(fn(&super::common::Frame, &super::common::Frame) -> bool),
    /// A command with a random effect (SPOP, or a random read checked against the reference's
    /// state), run on its own: the function sends the command itself to one or both servers
    /// (reference first), plus whatever it needs to check the outcome and to keep the two in step
    /// (e.g. replaying on the reference the members SPOP removed on the target).
    /// `Err((reference, target))` describes a mismatch.
    Custom(CustomFn),
}

/// See [`Cmp::Custom`].
pub type CustomFn = fn(
    &[Vec<u8>],
    &mut super::common::RawClient,
    &mut super::common::RawClient,
) -> Result<(), (String, String)>;

impl Cmp {
    /// Whether the command must run on its own rather than inside a pipelined batch.
    pub fn is_sync(&self) -> bool {
        matches!(self, Cmp::ScanAll { .. } | Cmp::RandomKey | Cmp::Custom(_))
    }
}

/// One generated command with its compare mode.
#[derive(Clone, Debug)]
pub struct Cmd {
    pub args: Args,
    pub cmp: Cmp,
    /// Whether the runner may break this command with `mutate` (not when a junk argument could
    /// make the reply non-deterministic, e.g. a SCAN cursor turning into 0).
    pub mutable: bool,
}

/// What a generator may look at besides the RNG.
pub struct Ctx {
    /// Index of the command being generated in this run (0-based); strictly increasing.
    pub step: u64,
    /// `DIFF_COLLECTIONS=1`: generators may create list/set keys (LPUSH/SADD) to get WRONGTYPE.
    pub collections: bool,
    /// The connections speak RESP3.
    #[allow(dead_code)]
    pub resp3: bool,
}

/// A generator: one command (with its compare mode) per call.
pub type GenFn = fn(&mut StdRng, &Ctx) -> Cmd;

/// A command family: a name (used in test names and reports) and its generator.
pub struct Family {
    pub name: &'static str,
    pub gen: GenFn,
}

/// A [`Cmp::Check`] for HGETALL-like replies whose pair order Redis leaves unspecified: the same
/// frame type (RESP2 flat array, RESP3 map) holding the same (field, value) pairs in any order.
/// Anything else must be identical.
pub fn unordered_pairs(r: &super::common::Frame, t: &super::common::Frame) -> bool {
    use super::common::{fmt_frame, Frame};
    fn pairs(f: &Frame) -> Option<Vec<(String, String)>> {
        let mut v: Vec<(String, String)> = match f {
            Frame::Array(items) if items.len() % 2 == 0 => items
                .chunks(2)
                .map(|p| (fmt_frame(&p[0]), fmt_frame(&p[1])))
                .collect(),
            Frame::Map(entries) => entries
                .iter()
                .map(|(k, v)| (fmt_frame(k), fmt_frame(v)))
                .collect(),
            _ => return None,
        };
        v.sort();
        Some(v)
    }
    match (pairs(r), pairs(t)) {
        (Some(a), Some(b)) => std::mem::discriminant(r) == std::mem::discriminant(t) && a == b,
        _ => r == t,
    }
}

/// Command builder: `cmd(rng, "SET").arg(k).arg(v).exact()`.
pub struct B {
    pub args: Args,
}

/// Starts a command; the name gets a random case now and then (commands are case-insensitive).
pub fn cmd(rng: &mut StdRng, name: &str) -> B {
    B {
        args: vec![mangle_case(rng, name)],
    }
}

impl B {
    pub fn arg(mut self, a: impl AsRef<[u8]>) -> B {
        self.args.push(a.as_ref().to_vec());
        self
    }

    pub fn args<I, A>(mut self, items: I) -> B
    where
        I: IntoIterator<Item = A>,
        A: AsRef<[u8]>,
    {
        self.args
            .extend(items.into_iter().map(|a| a.as_ref().to_vec()));
        self
    }

    /// Adds an option keyword, randomly cased.
    pub fn opt(mut self, rng: &mut StdRng, name: &str) -> B {
        self.args.push(mangle_case(rng, name));
        self
    }

    pub fn exact(self) -> Cmd {
        Cmd {
            args: self.args,
            cmp: Cmp::Exact,
            mutable: true,
        }
    }

    pub fn cmp(self, cmp: Cmp) -> Cmd {
        Cmd {
            args: self.args,
            cmp,
            mutable: true,
        }
    }

    /// Compared exactly, never mutated.
    pub fn fixed(self) -> Cmd {
        Cmd {
            args: self.args,
            cmp: Cmp::Exact,
            mutable: false,
        }
    }
}

/// `name` as is (most of the time), lowercase, or in random mixed case.
pub fn mangle_case(rng: &mut StdRng, name: &str) -> Vec<u8> {
    match rng.gen_range(0..20) {
        0..=1 => name.to_ascii_lowercase().into_bytes(),
        2 => name
            .bytes()
            .map(|c| {
                if rng.gen_bool(0.5) {
                    c.to_ascii_lowercase()
                } else {
                    c.to_ascii_uppercase()
                }
            })
            .collect(),
        _ => name.as_bytes().to_vec(),
    }
}

pub fn chance(rng: &mut StdRng, p: f64) -> bool {
    rng.gen_bool(p)
}

pub fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    items.choose(rng).expect("pick from an empty pool")
}

/// Picks an entry by weight and calls it.
pub fn weighted(rng: &mut StdRng, ctx: &Ctx, table: &[(u32, GenFn)]) -> Cmd {
    let total: u32 = table.iter().map(|(w, _)| *w).sum();
    let mut r = rng.gen_range(0..total);
    for (w, f) in table {
        if r < *w {
            return f(rng, ctx);
        }
        r -= *w;
    }
    unreachable!()
}

/// Random bytes from an alphabet.
pub fn random_string(rng: &mut StdRng, alphabet: &[u8], min: usize, max: usize) -> Vec<u8> {
    let len = rng.gen_range(min..=max);
    (0..len).map(|_| *pick(rng, alphabet)).collect()
}

pub const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// Arguments that are wrong almost anywhere: bad numbers, stray keywords, odd bytes. None of them
/// is a small positive integer, so a mutated expiry never becomes a short, clock-dependent TTL.
pub const JUNK: &[&str] = &[
    "",
    "abc",
    "-1",
    "0",
    "1.5",
    "-0",
    "99999999999999999999",
    "9223372036854775808",
    "NX",
    "XX",
    "GT",
    "LT",
    "GET",
    "EX",
    "PX",
    "KEEPTTL",
    "PERSIST",
    "LEN",
    "IDX",
    "DB",
    "REPLACE",
    "COUNT",
    "MATCH",
    "TYPE",
    " ",
    "\x00",
    "\r\n",
    "*",
    "nan",
    "inf",
];

pub fn junk(rng: &mut StdRng) -> Vec<u8> {
    pick(rng, JUNK).as_bytes().to_vec()
}

/// Integer-ish arguments for INCRBY, GETRANGE indexes and the like: mostly valid, some out of
/// range or not integers at all.
pub fn int_arg(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0..=9 => rng.gen_range(-20i64..=20).to_string(),
        10..=12 => rng.gen_range(-100_000i64..=100_000).to_string(),
        13 => pick(
            rng,
            &[
                "9223372036854775807",
                "-9223372036854775808",
                "9223372036854775806",
                "-9223372036854775807",
            ],
        )
        .to_string(),
        14 => pick(
            rng,
            &[
                "4611686018427387904",
                "-4611686018427387904",
                "1000000000000",
            ],
        )
        .to_string(),
        15 => pick(
            rng,
            &[
                "9223372036854775808",
                "-9223372036854775809",
                "18446744073709551616",
                "99999999999999999999999",
            ],
        )
        .to_string(),
        16 => pick(
            rng,
            &[
                "abc", "", "1.5", "1e3", "0x10", " 1", "1 ", "+1", "--1", "-", "1a", "01", "-0",
                "00",
            ],
        )
        .to_string(),
        _ => rng.gen_range(-1000i64..=1000).to_string(),
    }
}

// ---- expiry times ----------------------------------------------------------------------------
//
// Relative times are huge and unique per step: `c * 1_000_000 + step` seconds (c in 1..=9), so a
// key never expires during a run and two relative expiries set at different steps always differ
// by at least a second, whichever server and however slow: GT/LT/NX/XX then decide the same way
// on both sides. Absolute future times are around 2096-2100, far above any relative one. Past
// and non-positive times delete the key (or are rejected) deterministically.

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Secs,
    Millis,
}

/// A relative expiry far in the future, unique to this step.
pub fn rel_future(rng: &mut StdRng, ctx: &Ctx, unit: Unit) -> String {
    let secs = rng.gen_range(1u64..=9) * 1_000_000 + ctx.step;
    match unit {
        Unit::Secs => secs.to_string(),
        Unit::Millis => (secs * 1000).to_string(),
    }
}

/// An absolute unix time far in the future (a small fixed set, so that equal times happen).
pub fn abs_future(rng: &mut StdRng, unit: Unit) -> String {
    let secs = 4_000_000_000u64 + rng.gen_range(0u64..=9) * 1_000_000;
    match unit {
        Unit::Secs => secs.to_string(),
        Unit::Millis => (secs * 1000 + *pick(rng, &[0u64, 0, 1, 499, 500, 999])).to_string(),
    }
}

/// A time that deletes the key (or that SET/SETEX reject): zero or negative, or for absolute
/// commands also a positive time in the past. Never a small positive relative time.
pub fn past_or_zero(rng: &mut StdRng, unit: Unit, absolute: bool) -> String {
    if !absolute {
        return pick(rng, &["0", "-0", "-1", "-100", "-9999999"]).to_string();
    }
    match unit {
        Unit::Secs => pick(
            rng,
            &["0", "-1", "-100", "1", "1000", "1600000000", "-9999999"],
        )
        .to_string(),
        Unit::Millis => pick(
            rng,
            &["0", "-1", "-100", "1", "1000", "1600000000000", "-9999999"],
        )
        .to_string(),
    }
}

/// Times that must be rejected (not integers, or overflowing once scaled or added to now).
pub fn bad_time(rng: &mut StdRng) -> String {
    pick(
        rng,
        &[
            "abc",
            "",
            "1.5",
            "1e5",
            "9999999999999999",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "9223372036854775",
            "-9223372036854775",
            "99999999999999999999",
        ],
    )
    .to_string()
}

/// An expiry argument for an option or command taking a relative (`absolute == false`) or
/// absolute time: mostly a valid future time, sometimes past/zero/negative, sometimes invalid.
pub fn expiry(rng: &mut StdRng, ctx: &Ctx, unit: Unit, absolute: bool) -> String {
    match rng.gen_range(0..100) {
        0..=74 => {
            if absolute {
                abs_future(rng, unit)
            } else {
                rel_future(rng, ctx, unit)
            }
        }
        75..=89 => past_or_zero(rng, unit, absolute),
        _ => bad_time(rng),
    }
}

// ---- generic chaos ---------------------------------------------------------------------------

/// Names that are not Redis 7.0 commands.
const UNKNOWN: &[&str] = &[
    "FOOBAR",
    "GETT",
    "SETX",
    "xyzzy",
    "GETALL",
    "EXPIRES",
    "KEYZ",
    "Hello-World",
    "SCANALL",
];

/// A command that does not exist, with a few arguments.
pub fn unknown_command(rng: &mut StdRng) -> Cmd {
    let mut b = B {
        args: vec![pick(rng, UNKNOWN).as_bytes().to_vec()],
    };
    for _ in 0..rng.gen_range(0..4) {
        let a = if chance(rng, 0.7) {
            random_string(rng, ALNUM, 0, 8)
        } else {
            junk(rng)
        };
        b = b.arg(a);
    }
    b.exact()
}

/// Breaks a well-formed command: drops trailing arguments (wrong arity or a dangling option),
/// appends a stray argument, or replaces an argument with junk. Only for pipelined compare modes.
pub fn mutate(rng: &mut StdRng, cmd: &mut Cmd) {
    if cmd.cmp.is_sync() || !cmd.mutable {
        return;
    }
    let n = cmd.args.len();
    match rng.gen_range(0..3) {
        0 if n > 1 => {
            let keep = rng.gen_range(1..n);
            cmd.args.truncate(keep);
        }
        1 => {
            for _ in 0..rng.gen_range(1..=2) {
                let j = junk(rng);
                cmd.args.push(j);
            }
        }
        _ if n > 1 => {
            let i = rng.gen_range(1..n);
            cmd.args[i] = junk(rng);
        }
        _ => cmd.args.push(junk(rng)),
    }
}

/// For families that keep extra connections per server (subscribers, trackers): a key naming
/// one side of one run, from the main connection's local and server ports (Linux may give
/// connections to the two servers the same local port, so that alone could mix them up).
pub fn side_key(main: &super::common::RawClient) -> (u16, u16) {
    let local = main.stream().local_addr().map(|a| a.port()).unwrap_or(0);
    let server = main.stream().peer_addr().map(|a| a.port()).unwrap_or(0);
    (local, server)
}

/// One server's part of a [`compare_sides`] step: what to compare, or why it could not run.
pub type SideRun = fn(&[Vec<u8>], &mut super::common::RawClient) -> Result<Vec<String>, String>;

/// A [`Cmp::Custom`] step that runs `run_side` on the reference, then on the target, and
/// compares what each returned.
pub fn compare_sides(
    args: &[Vec<u8>],
    reference: &mut super::common::RawClient,
    target: &mut super::common::RawClient,
    run_side: SideRun,
) -> Result<(), (String, String)> {
    let r = run_side(args, reference).unwrap_or_else(|e| panic!("reference redis-server: {e}"));
    let t = run_side(args, target).map_err(|e| (r.join("\n"), format!("<{e}>")))?;
    if r == t {
        Ok(())
    } else {
        Err((r.join("\n"), t.join("\n")))
    }
}

/// Sends PING and returns the frames that arrive before its reply: the messages queued for the
/// connection so far (a subscribed RESP2 connection answers `["pong", ""]`).
pub fn frames_before_pong(
    conn: &mut super::common::RawClient,
) -> Result<Vec<super::common::Frame>, String> {
    use super::common::Frame;
    conn.send(&["PING"]);
    let mut got = Vec::new();
    loop {
        let f = conn
            .try_read_frame()
            .map_err(|e| e.to_string())?
            .ok_or("closed")?;
        let pong = match &f {
            Frame::Simple(s) => s == b"PONG",
            Frame::Array(v) => v.first() == Some(&Frame::Bulk(b"pong".to_vec())),
            _ => false,
        };
        if pong {
            return Ok(got);
        }
        got.push(f);
    }
}
