//! The runner: starts redis-server (reference) and the target side by side, feeds both the same
//! generated stream in pipelined batches, compares every reply and panics on the first mismatch
//! with everything needed to reproduce it.
//!
//! Environment:
//! * `DIFF_SEED=N` (decimal or 0x-hex): run only this seed. Default: a fixed seed, then a
//!   time-derived one (printed, and named in any failure).
//! * `DIFF_COMMANDS=N`: commands per seed (default 20000; keep it under 1,000,000, see
//!   `gen::rel_future`).
//! * `DIFF_RESP3=0`: skip the shorter RESP3 pass (default: a quarter of DIFF_COMMANDS).
//! * `DIFF_PROTOCOL=2|3`: run only that protocol, for the full DIFF_COMMANDS.
//! * `DIFF_COLLECTIONS=1`: generators may create list/set keys (WRONGTYPE paths).
//! * `DIFF_BATCH=N`: commands per pipelined batch (default 200).
//! * `DIFF_TRACE=1`: print every pipelined command and redis-server's reply.
//! * `DIFF_STATS=1`: print, per command name, how many were sent and how many got an error.
//! * `DIFF_EFFECTS=0`: do not compare the effects streams. By default, after every batch (and
//!   every command run on its own) what each server propagated to replicas is compared too
//!   (`common/effects.rs`), with active expiry off on both servers so that deletions happen at
//!   the same commands; not for the pubsub family, whose subscribers would hear the marks.
//! * `TESSERA_TEST_TARGET=redis`: the target is redis-server too (checks the harness itself).

use super::common::effects::{self, EffectsReader, EFFECTS_ARGS, REDIS_SYNC_ARGS};
use super::common::{fmt_command, fmt_frame, Frame, RawClient, TestServer};
use super::gen::{mutate, unknown_command, Cmd, Cmp, Ctx, Family};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, VecDeque};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

const DEFAULT_SEED: u64 = 0x7e55_e7a0_2024_0001;
const DEFAULT_COMMANDS: u64 = 20_000;
const DEFAULT_BATCH: usize = 200;
/// Commands kept for the failure report.
const HISTORY: usize = 40;
/// Share of commands replaced by an unknown command / mutated into a malformed one.
const P_UNKNOWN: f64 = 0.005;
const P_MUTATE: f64 = 0.03;

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => v.replace('_', "").parse(),
    };
    Some(parsed.unwrap_or_else(|e| panic!("{name}={v:?}: {e}")))
}

fn env_flag(name: &str) -> Option<bool> {
    std::env::var(name)
        .ok()
        .map(|v| !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false")))
}

/// The seeds of this run: `DIFF_SEED`, or the fixed default plus one derived from the clock.
pub fn seeds() -> Vec<u64> {
    if let Some(s) = env_u64("DIFF_SEED") {
        return vec![s];
    }
    let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let time_seed = (t.as_nanos() as u64) ^ ((std::process::id() as u64) << 32);
    vec![DEFAULT_SEED, time_seed]
}

/// Runs a family for every seed: in RESP2, then a shorter pass in RESP3 (`DIFF_PROTOCOL=2` or
/// `=3` runs only that protocol, for the full `DIFF_COMMANDS`).
pub fn run_family(family: &Family) {
    let n = env_u64("DIFF_COMMANDS").unwrap_or(DEFAULT_COMMANDS);
    let passes: Vec<(u64, bool)> = match env_u64("DIFF_PROTOCOL") {
        Some(2) => vec![(n, false)],
        Some(3) => vec![(n, true)],
        Some(p) => panic!("DIFF_PROTOCOL={p}: expected 2 or 3"),
        None if env_flag("DIFF_RESP3") == Some(false) => vec![(n, false)],
        None => vec![(n, false), ((n / 4).max(1), true)],
    };
    for seed in seeds() {
        for &(count, resp3) in &passes {
            run(family, seed, count, resp3);
        }
    }
}

struct Side {
    name: &'static str,
    server: TestServer,
    conn: RawClient,
}

struct Run<'a> {
    family: &'a Family,
    seed: u64,
    resp3: bool,
    /// Commands in this run; a step of `n` is the final state check.
    n: u64,
    reference: Side,
    target: Side,
    history: VecDeque<String>,
    /// Per command name (upper-cased): (commands, error replies), printed with DIFF_STATS=1.
    stats: BTreeMap<String, (u64, u64)>,
    /// DIFF_TRACE=1: print every pipelined command with the reference reply.
    trace: bool,
    /// The batch last sent (the failing command and whatever was pipelined behind it).
    in_flight: Vec<(u64, Cmd)>,
    /// The two servers' effects streams, when they are compared.
    effects: Option<[SideEffects; 2]>,
}

/// One server's effects stream and the connection its marks go through (never in MULTI or
/// subscribed, unlike the generated stream's).
struct SideEffects {
    reader: EffectsReader,
    marks: RawClient,
}

/// How far apart the two servers may put one propagated timestamp.
const EFFECTS_TOLERANCE_MS: i64 = 5_000;

/// One run: fresh servers, `n` generated commands, then a full comparison of the final state.
pub fn run(family: &Family, seed: u64, n: u64, resp3: bool) {
    // On by default now that the collection types exist; DIFF_COLLECTIONS=0 turns it off.
    let collections = env_flag("DIFF_COLLECTIONS").unwrap_or(true);
    let batch = env_u64("DIFF_BATCH").unwrap_or(DEFAULT_BATCH as u64).max(1) as usize;
    let started = Instant::now();
    eprintln!(
        "[diff] family={} seed={seed} (0x{seed:x}) commands={n} protocol={} collections={collections}",
        family.name,
        if resp3 { "RESP3" } else { "RESP2" }
    );

    let compare_effects = env_flag("DIFF_EFFECTS").unwrap_or(true) && family.name != "pubsub";
    let mut server_args: Vec<&str> = Vec::new();
    if compare_effects {
        server_args.extend_from_slice(EFFECTS_ARGS);
    }
    let mut redis_args = server_args.clone();
    if compare_effects {
        redis_args.extend_from_slice(REDIS_SYNC_ARGS);
    }
    let reference = TestServer::redis_with(&redis_args);
    let target = if compare_effects && super::common::target_is_redis() {
        TestServer::start_with(&redis_args)
    } else {
        TestServer::start_with(&server_args)
    };
    let effects = compare_effects.then(|| {
        [&reference, &target].map(|server| {
            let mut marks = server.raw();
            marks.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
            SideEffects {
                reader: EffectsReader::attach(server),
                marks,
            }
        })
    });
    let mut run = Run {
        family,
        seed,
        resp3,
        n,
        reference: Side {
            name: "redis",
            conn: reference.raw(),
            server: reference,
        },
        target: Side {
            name: target.kind().name(),
            conn: target.raw(),
            server: target,
        },
        history: VecDeque::new(),
        stats: BTreeMap::new(),
        trace: env_flag("DIFF_TRACE").unwrap_or(false),
        in_flight: Vec::new(),
        effects,
    };
    if resp3 {
        for side in [&mut run.reference, &mut run.target] {
            let reply = side.conn.call(&["HELLO", "3"]);
            assert!(
                matches!(reply, Frame::Map(_)),
                "HELLO 3 on {} answered {}",
                side.name,
                fmt_frame(&reply)
            );
        }
    }

    // The family name is mixed into the seed so that families do not share one stream.
    let mut rng = StdRng::seed_from_u64(seed ^ fnv1a(family.name.as_bytes()));
    let mut ctx = Ctx {
        step: 0,
        collections,
        resp3,
    };
    let mut pending: Vec<(u64, Cmd)> = Vec::with_capacity(batch);
    while ctx.step < n {
        let mut c = if rng.gen_bool(P_UNKNOWN) {
            unknown_command(&mut rng)
        } else {
            (family.gen)(&mut rng, &ctx)
        };
        if rng.gen_bool(P_MUTATE) {
            mutate(&mut rng, &mut c);
        }
        let step = ctx.step;
        ctx.step += 1;
        if c.cmp.is_sync() {
            run.exec_batch(&mut pending);
            run.compare_effects(step, true);
            run.exec_sync(step, &c);
            run.compare_effects(step, effects_comparable(&c));
        } else {
            pending.push((step, c));
            if pending.len() >= batch {
                run.exec_batch(&mut pending);
                run.compare_effects(step, true);
            }
        }
    }
    run.exec_batch(&mut pending);
    run.compare_effects(run.n, true);
    run.final_state_check();
    run.target.server.assert_healthy();
    if env_flag("DIFF_STATS").unwrap_or(false) {
        for (name, (count, errors)) in &run.stats {
            eprintln!("[diff]   {name:<14} {count:>7} commands {errors:>7} errors");
        }
    }
    eprintln!(
        "[diff] family={} seed={seed} passed in {:.1?}",
        family.name,
        started.elapsed()
    );
}

/// Whether a command's effects are the same on both servers by construction. Two steps replay
/// differently on the two sides: SPOP (the reference is made to remove what the target popped,
/// see `sets.rs`, with one SREM where the target propagates its own rewrite) and FUNCTION DUMP
/// (the target alone restores its own dump, see `functions.rs`).
fn effects_comparable(c: &Cmd) -> bool {
    let named = |i: usize, name: &[u8]| c.args.get(i).is_some_and(|a| a.eq_ignore_ascii_case(name));
    !(matches!(c.cmp, Cmp::Custom(_))
        && (named(0, b"SPOP") || (named(0, b"FUNCTION") && named(1, b"DUMP"))))
}

impl Run<'_> {
    /// Reads both effects streams up to a new mark and compares them (`compare`: otherwise just
    /// skips what each propagated).
    fn compare_effects(&mut self, step: u64, compare: bool) {
        let Some(sides) = self.effects.as_mut() else {
            return;
        };
        let streams = sides.each_mut().map(|side| {
            let mark = side.reader.mark(&mut side.marks);
            side.reader.until_mark(&mark)
        });
        if !compare {
            return;
        }
        if let Err(e) = effects::compare(&streams[0], &streams[1], EFFECTS_TOLERANCE_MS) {
            let args = self
                .in_flight
                .last()
                .map(|(_, c)| c.args.clone())
                .unwrap_or_default();
            self.fail(
                step,
                "different effects (propagated commands)",
                &args,
                &e,
                "(see above)",
            );
        }
    }

    fn remember(&mut self, step: u64, c: &Cmd) {
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history
            .push_back(format!("  #{step}: {}", fmt_command(&c.args)));
    }

    fn fail(&self, step: u64, what: &str, args: &[Vec<u8>], reference: &str, target: &str) -> ! {
        let history: Vec<&str> = self.history.iter().map(|s| s.as_str()).collect();
        // Replaying up to the end of the failing batch sends exactly the same bytes.
        let batch_end = self
            .in_flight
            .last()
            .map_or(step + 1, |(s, _)| s + 1)
            .max(step + 1);
        let behind: Vec<String> = self
            .in_flight
            .iter()
            .filter(|(s, _)| *s > step)
            .take(20)
            .map(|(s, c)| format!("  #{s}: {}", fmt_command(&c.args)))
            .collect();
        let behind = if behind.is_empty() {
            String::new()
        } else {
            format!(
                "pipelined behind it in the same write ({} commands, first 20):\n{}\n",
                self.in_flight.iter().filter(|(s, _)| *s > step).count(),
                behind.join("\n")
            )
        };
        panic!(
            "\n=== differential mismatch: {what} ===\n\
             family:   {family}\n\
             seed:     {seed} (0x{seed:x})\n\
             protocol: {proto}\n\
             step:     {step_desc}\n\
             command:  {cmd}\n\
             redis:    {reference}\n\
             {tname:<9} {target}\n\
             reproduce: {coll}DIFF_SEED={seed} DIFF_PROTOCOL={pnum} DIFF_COMMANDS={n} cargo test --test differential {family}\n\
             (add DIFF_TRACE=1 -- --nocapture to see every command and redis-server's reply)\n\
             last commands (oldest first):\n{history}\n{behind}",
            family = self.family.name,
            seed = self.seed,
            proto = if self.resp3 { "RESP3" } else { "RESP2" },
            cmd = fmt_command(args),
            tname = format!("{}:", self.target.name),
            n = batch_end.min(self.n),
            step_desc = if step >= self.n {
                format!("final state check, after all {} commands", self.n)
            } else {
                step.to_string()
            },
            pnum = if self.resp3 { 3 } else { 2 },
            coll = if env_flag("DIFF_COLLECTIONS") == Some(true) { "DIFF_COLLECTIONS=1 " } else { "" },
            history = history.join("\n"),
        )
    }

    /// Reads one reply from the target, turning a missing reply into a reported mismatch.
    fn target_reply(&mut self, step: u64, args: &[Vec<u8>], reference: &Frame) -> Frame {
        match self.target.conn.try_read_frame() {
            Ok(Some(f)) => f,
            Ok(None) => {
                let alive = self.target.server.is_alive();
                self.fail(
                    step,
                    "no reply from the target",
                    args,
                    &fmt_frame(reference),
                    &format!(
                        "<connection closed; process {}>",
                        if alive { "alive" } else { "DEAD" }
                    ),
                )
            }
            Err(e) => self.fail(
                step,
                "no reply from the target",
                args,
                &fmt_frame(reference),
                &format!("<{e}>"),
            ),
        }
    }

    fn reference_reply(&mut self) -> Frame {
        let in_flight = || {
            self.in_flight
                .iter()
                .map(|(step, c)| format!("#{step} {}", fmt_command(&c.args)))
                .collect::<Vec<_>>()
                .join("\n")
        };
        match self.reference.conn.try_read_frame() {
            Ok(Some(f)) => f,
            Ok(None) => panic!(
                "reference redis-server closed the connection (harness bug: a generated command must not do that); in flight:\n{}",
                in_flight()
            ),
            Err(e) => panic!("reference redis-server: {e}; in flight:\n{}", in_flight()),
        }
    }

    fn exec_batch(&mut self, pending: &mut Vec<(u64, Cmd)>) {
        if pending.is_empty() {
            return;
        }
        // Kept until the next batch so that a failure can show what else was in flight.
        self.in_flight = std::mem::take(pending);
        let cmds: Vec<&[Vec<u8>]> = self
            .in_flight
            .iter()
            .map(|(_, c)| c.args.as_slice())
            .collect();
        self.reference.conn.send_many(&cmds);
        if let Err(e) = self.target.conn.try_send_raw(&encode_all(&cmds)) {
            let (step, c) = &self.in_flight[0];
            self.fail(
                *step,
                "could not write to the target",
                &c.args,
                "-",
                &format!("<{e}>"),
            );
        }
        for i in 0..self.in_flight.len() {
            let (step, c) = self.in_flight[i].clone();
            self.remember(step, &c);
            let r = self.reference_reply();
            let name = String::from_utf8_lossy(&c.args[0]).to_ascii_uppercase();
            let e = self.stats.entry(name).or_default();
            e.0 += 1;
            e.1 += matches!(r, Frame::Error(_)) as u64;
            if self.trace {
                eprintln!(
                    "[trace] #{step} {} -> {}",
                    fmt_command(&c.args),
                    fmt_frame(&r)
                );
            }
            let t = self.target_reply(step, &c.args, &r);
            if !equal(&c.cmp, &r, &t) {
                self.fail(
                    step,
                    "different replies",
                    &c.args,
                    &fmt_frame(&r),
                    &fmt_frame(&t),
                );
            }
        }
    }

    fn exec_sync(&mut self, step: u64, c: &Cmd) {
        self.remember(step, c);
        self.stats
            .entry(String::from_utf8_lossy(&c.args[0]).to_ascii_uppercase())
            .or_default()
            .0 += 1;
        match c.cmp {
            Cmp::ScanAll { cursor_arg, group } => {
                let r = scan_all(&mut self.reference.conn, &c.args, cursor_arg, group);
                let t = scan_all(&mut self.target.conn, &c.args, cursor_arg, group);
                match (r, t) {
                    (Ok(r), Ok(t)) if r == t => {}
                    (Ok(r), Ok(t)) => self.fail(
                        step,
                        "different full-iteration results",
                        &c.args,
                        &fmt_frame(&r),
                        &fmt_frame(&t),
                    ),
                    (Err(e), _) => panic!(
                        "reference redis-server failed a full iteration of {}: {e}",
                        fmt_command(&c.args)
                    ),
                    (Ok(r), Err(e)) => self.fail(
                        step,
                        "full iteration failed on the target",
                        &c.args,
                        &fmt_frame(&r),
                        &e,
                    ),
                }
            }
            Cmp::RandomKey => {
                self.reference.conn.send(&c.args);
                if let Err(e) = self
                    .target
                    .conn
                    .try_send_raw(&encode_all(&[c.args.as_slice()]))
                {
                    self.fail(
                        step,
                        "could not write to the target",
                        &c.args,
                        "-",
                        &format!("<{e}>"),
                    );
                }
                let r = self.reference_reply();
                let t = self.target_reply(step, &c.args, &r);
                let ok = match (&r, &t) {
                    (Frame::Bulk(_), Frame::Bulk(_)) | (Frame::Null, Frame::Null) => true,
                    _ => r == t,
                };
                if !ok {
                    self.fail(
                        step,
                        "RANDOMKEY reply classes differ",
                        &c.args,
                        &fmt_frame(&r),
                        &fmt_frame(&t),
                    );
                }
                // A returned key must exist on the server that returned it.
                if let Frame::Bulk(k) = &r {
                    let exists = self.reference.conn.call(&[&b"EXISTS"[..], k]);
                    assert_eq!(
                        exists,
                        Frame::Integer(1),
                        "reference redis-server: RANDOMKEY returned a missing key"
                    );
                }
                if let Frame::Bulk(k) = &t {
                    let exists = self.target.conn.call(&[&b"EXISTS"[..], k]);
                    if exists != Frame::Integer(1) {
                        let msg = format!(
                            "{} but EXISTS of it says {}",
                            fmt_frame(&t),
                            fmt_frame(&exists)
                        );
                        self.fail(
                            step,
                            "RANDOMKEY returned a key that does not exist",
                            &c.args,
                            &fmt_frame(&r),
                            &msg,
                        );
                    }
                }
            }
            Cmp::Custom(run) => {
                if let Err((r, t)) = run(&c.args, &mut self.reference.conn, &mut self.target.conn) {
                    self.fail(step, "check failed", &c.args, &r, &t);
                }
            }
            _ => unreachable!("not a sync compare mode"),
        }
    }

    /// After the stream: every database must hold the same keys with the same types, values and
    /// TTL classes.
    fn final_state_check(&mut self) {
        let step = self.n; // reported as the final state check
                           // A stream may end inside MULTI: leave it (same reply on both sides).
        let _ = self.reference.conn.call(&["DISCARD"]);
        let _ = self.target.conn.call(&["DISCARD"]);
        // A stream may end logged in as a user that may not look at the data (the acl family):
        // the check runs as the default user, who has no password in these runs.
        let _ = self.reference.conn.call(&["AUTH", "default", "any"]);
        let _ = self.target.conn.call(&["AUTH", "default", "any"]);
        let check = |run: &mut Self, args: Vec<Vec<u8>>, cmp: Cmp| {
            let c = Cmd {
                args,
                cmp,
                mutable: false,
            };
            let mut batch = vec![(step, c)];
            run.exec_batch(&mut batch);
        };
        for db in 0..16 {
            check(
                self,
                vec![b"SELECT".to_vec(), db.to_string().into_bytes()],
                Cmp::Exact,
            );
            let keys = match self.reference.conn.call(&["KEYS", "*"]) {
                Frame::Array(k) => k,
                other => panic!("reference KEYS * answered {}", fmt_frame(&other)),
            };
            check(self, vec![b"KEYS".to_vec(), b"*".to_vec()], Cmp::Unordered);
            for k in keys {
                let Frame::Bulk(k) = k else { continue };
                check(self, vec![b"TYPE".to_vec(), k.clone()], Cmp::Exact);
                check(self, vec![b"PTTL".to_vec(), k.clone()], Cmp::Approx(60_000));
                let t = self.reference.conn.call(&[&b"TYPE"[..], &k]);
                if t == Frame::Simple(b"string".to_vec()) {
                    check(self, vec![b"GET".to_vec(), k.clone()], Cmp::Exact);
                    check(
                        self,
                        vec![b"OBJECT".to_vec(), b"ENCODING".to_vec(), k.clone()],
                        Cmp::Exact,
                    );
                }
                let whole = if t == Frame::Simple(b"set".to_vec()) {
                    Some((&b"SMEMBERS"[..], Cmp::Unordered))
                } else if t == Frame::Simple(b"hash".to_vec()) {
                    Some((&b"HGETALL"[..], Cmp::Check(super::gen::unordered_pairs)))
                } else {
                    None
                };
                if let Some((dump, cmp)) = whole {
                    check(self, vec![dump.to_vec(), k.clone()], cmp);
                    check(
                        self,
                        vec![b"OBJECT".to_vec(), b"ENCODING".to_vec(), k.clone()],
                        Cmp::Exact,
                    );
                }
                if t == Frame::Simple(b"list".to_vec()) {
                    let all = [&b"LRANGE"[..], &k, b"0", b"-1"];
                    check(self, all.iter().map(|a| a.to_vec()).collect(), Cmp::Exact);
                }
                if t == Frame::Simple(b"zset".to_vec()) {
                    let all = [&b"ZRANGE"[..], &k, b"0", b"-1", b"WITHSCORES"];
                    check(self, all.iter().map(|a| a.to_vec()).collect(), Cmp::Exact);
                    check(
                        self,
                        vec![b"OBJECT".to_vec(), b"ENCODING".to_vec(), k.clone()],
                        Cmp::Exact,
                    );
                }
            }
        }
    }
}

fn encode_all(cmds: &[&[Vec<u8>]]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in cmds {
        super::common::encode_command(c, &mut out);
    }
    out
}

/// Whether two replies match under a compare mode.
fn equal(cmp: &Cmp, r: &Frame, t: &Frame) -> bool {
    match cmp {
        Cmp::Exact | Cmp::ScanAll { .. } | Cmp::RandomKey | Cmp::Custom(_) => r == t,
        Cmp::Unordered => match (r, t) {
            (Frame::Array(a), Frame::Array(b)) | (Frame::Set(a), Frame::Set(b)) => {
                sorted(a) == sorted(b)
            }
            _ => r == t,
        },
        Cmp::Approx(tol) => match (r, t) {
            (Frame::Integer(a), Frame::Integer(b)) if *a >= 0 && *b >= 0 => (a - b).abs() <= *tol,
            _ => r == t,
        },
        Cmp::Check(check) => check(r, t),
    }
}

fn sorted(items: &[Frame]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(fmt_frame).collect();
    v.sort();
    v
}

/// Iterates a SCAN-like command to the end. `Ok` holds the error reply of the first call, or an
/// array of the sorted, deduplicated elements (grouped `group` at a time); `Err` describes a
/// reply that is not shaped like a SCAN reply or an iteration that does not end.
fn scan_all(
    conn: &mut RawClient,
    args: &[Vec<u8>],
    cursor_arg: usize,
    group: usize,
) -> Result<Frame, String> {
    let mut args = args.to_vec();
    let mut cursor = b"0".to_vec();
    let mut seen: Vec<Vec<Frame>> = Vec::new();
    for round in 0..1_000_000 {
        args[cursor_arg] = cursor.clone();
        let reply = conn.try_read_after_send(&args)?;
        let parts = match reply {
            Frame::Error(_) if round == 0 => return Ok(reply),
            Frame::Array(parts) if parts.len() == 2 => parts,
            other => {
                return Err(format!(
                    "round {round}: unexpected reply {}",
                    fmt_frame(&other)
                ))
            }
        };
        let (Frame::Bulk(next), Frame::Array(items)) = (&parts[0], &parts[1]) else {
            return Err(format!(
                "round {round}: malformed reply {}",
                fmt_frame(&Frame::Array(parts.clone()))
            ));
        };
        if items.len() % group != 0 {
            return Err(format!(
                "round {round}: {} elements, not a multiple of {group}",
                items.len()
            ));
        }
        seen.extend(items.chunks(group).map(|c| c.to_vec()));
        if next.as_slice() == b"0" {
            let mut keyed: Vec<(String, Vec<Frame>)> = seen
                .into_iter()
                .map(|g| (g.iter().map(fmt_frame).collect::<Vec<_>>().join("\u{0}"), g))
                .collect();
            keyed.sort_by(|a, b| a.0.cmp(&b.0));
            keyed.dedup_by(|a, b| a.0 == b.0);
            return Ok(Frame::Array(
                keyed.into_iter().flat_map(|(_, g)| g).collect(),
            ));
        }
        cursor = next.clone();
    }
    Err("iteration did not end after 1,000,000 calls".into())
}

trait TryCall {
    fn try_read_after_send(&mut self, args: &[Vec<u8>]) -> Result<Frame, String>;
}

impl TryCall for RawClient {
    fn try_read_after_send(&mut self, args: &[Vec<u8>]) -> Result<Frame, String> {
        let mut out = Vec::new();
        super::common::encode_command(args, &mut out);
        self.try_send_raw(&out).map_err(|e| format!("write: {e}"))?;
        match self.try_read_frame() {
            Ok(Some(f)) => Ok(f),
            Ok(None) => Err("connection closed".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

fn fnv1a(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in b {
        h ^= c as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
