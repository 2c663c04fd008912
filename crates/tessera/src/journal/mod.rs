//! The journal: the threads' effects units merged back into one order and
//! fed to the stream's consumers.
//!
//! Threads close their effects into [`Unit`]s (see
//! [`crate::keyspace::effects`]) and publish them here in whatever order
//! they finish; the journal holds a unit back until every number before it
//! has arrived, then feeds the consumers unit by unit in number order,
//! which is an order a single-threaded replayer can apply. The consumers
//! (the AOF writer and the replication backlog later; today the capture
//! behind `DEBUG EFFECTS`) see plain commands: the SELECT before an op of
//! another database and the MULTI/EXEC around an atomic unit are added by
//! [`encode_unit`], per consumer, as Redis tracks the selected database
//! separately for the AOF and for its replicas.
//!
//! While nothing consumes the stream nothing is recorded (one relaxed load
//! per command), so the journal costs nothing then.

use std::collections::BTreeMap;

use parking_lot::Mutex;

use crate::keyspace::effects;
pub use crate::keyspace::effects::{target, Op, Unit};

/// A consumer of the stream (the AOF writer; the replication backlog
/// later): fed every unit with ops, in number order, under the journal's
/// lock, so it should only copy what it needs and return.
pub trait Consumer: Send + Sync {
    /// Takes one unit; false when the consumer is gone (a disconnected
    /// replica), which detaches it.
    fn feed(&self, unit: &Unit) -> bool;
}

struct State {
    /// The next number to feed; units below it are stale (recorded before
    /// the stream had consumers) and dropped.
    next: u64,
    /// Units that arrived ahead of a missing number.
    waiting: BTreeMap<u64, Unit>,
    capture: Option<Capture>,
    consumers: Vec<std::sync::Arc<dyn Consumer>>,
}

/// The merge point of the effects stream (one per server).
pub struct Journal {
    state: Mutex<State>,
}

impl Default for Journal {
    fn default() -> Self {
        Journal::new()
    }
}

impl Journal {
    pub fn new() -> Journal {
        Journal {
            state: Mutex::new(State {
                next: 1,
                waiting: BTreeMap::new(),
                capture: None,
                consumers: Vec::new(),
            }),
        }
    }

    /// Takes the units this thread closed and feeds what is now in order.
    /// `atomic`: see [`effects::take_units`]. Returns the highest number
    /// among them that carries ops (0: none): what a durable reply waits
    /// for.
    #[inline]
    pub fn publish_pending(&self, atomic: bool) -> u64 {
        // (Nothing is recorded while nothing consumes; what was recorded
        // before a consumer left is published later with numbers the
        // journal has passed, and dropped.)
        if !effects::enabled() || !effects::pending() {
            return 0;
        }
        self.publish(effects::take_units(atomic))
    }

    /// Takes the units this thread closed and drops their ops: the numbers
    /// are passed (the stream goes on in order), nothing is fed. For what
    /// is replayed from the AOF, which is there already.
    pub fn discard_pending(&self) {
        if !effects::pending() {
            return;
        }
        let mut units = effects::take_units(false);
        for unit in &mut units {
            unit.ops.clear();
        }
        self.publish(units);
    }

    fn publish(&self, units: Vec<Unit>) -> u64 {
        let mut st = self.state.lock();
        let mut last = 0;
        for unit in units {
            if !unit.ops.is_empty() {
                last = last.max(unit.seq);
            }
            if unit.seq >= st.next {
                st.waiting.insert(unit.seq, unit);
            }
        }
        loop {
            let next = st.next;
            let Some(unit) = st.waiting.remove(&next) else {
                break;
            };
            st.next += 1;
            if unit.ops.is_empty() {
                continue;
            }
            if let Some(c) = st.capture.as_mut() {
                c.feed(&unit);
            }
            let before = st.consumers.len();
            st.consumers.retain(|c| c.feed(&unit));
            if st.consumers.len() != before {
                self.update_enabled(&mut st);
            }
        }
        last
    }

    /// Attaches a consumer; it is fed every unit from the returned number
    /// on (a consumer tied to a snapshot learns where the snapshot splits
    /// the stream from `Keyspace::begin_snapshot`'s callback and drops the
    /// units before it).
    pub fn attach(&self, consumer: std::sync::Arc<dyn Consumer>) -> u64 {
        let mut st = self.state.lock();
        st.consumers.push(consumer);
        self.update_enabled(&mut st);
        st.next
    }

    /// Runs `f` under the journal's lock if every unit numbered below
    /// `seq` has been fed (so no unit from `seq` on can be fed while it
    /// runs): where a replica's stream starts, the snapshot's instant being
    /// `seq`. False, without running it, when some are still to come.
    pub fn if_fed_below(&self, seq: u64, f: impl FnOnce()) -> bool {
        let st = self.state.lock();
        if st.next < seq {
            return false;
        }
        f();
        true
    }

    /// Detaches a consumer (by identity).
    pub fn detach(&self, consumer: &std::sync::Arc<dyn Consumer>) {
        let mut st = self.state.lock();
        st.consumers
            .retain(|c| !std::sync::Arc::ptr_eq(c, consumer));
        self.update_enabled(&mut st);
    }

    /// Starts capturing the stream for `DEBUG EFFECTS` (a test consumer),
    /// as a replica would receive it. Restarting empties the capture.
    pub fn start_capture(&self, limit_bytes: usize) {
        let mut st = self.state.lock();
        st.capture = Some(Capture::new(limit_bytes));
        self.update_enabled(&mut st);
    }

    /// Stops capturing; what was captured is dropped.
    pub fn stop_capture(&self) {
        let mut st = self.state.lock();
        st.capture = None;
        self.update_enabled(&mut st);
    }

    /// What was captured since the last read (RESP bytes), and whether the
    /// capture overflowed its limit and lost some; None when not capturing.
    pub fn read_capture(&self) -> Option<(Vec<u8>, bool)> {
        let mut st = self.state.lock();
        let c = st.capture.as_mut()?;
        Some((
            std::mem::take(&mut c.bytes),
            std::mem::take(&mut c.overflowed),
        ))
    }

    fn update_enabled(&self, st: &mut State) {
        let want = st.capture.is_some() || !st.consumers.is_empty();
        if want == effects::enabled() {
            return;
        }
        let next = effects::set_enabled(want);
        // Everything drawn from now on will be published; anything older
        // is not waited for.
        st.next = next;
        st.waiting.clear();
    }
}

/// Writes `unit` as RESP commands for a consumer whose last op ran in
/// `selected` (None at the start of its stream), keeping `selected`
/// current: SELECT before an op of another database, MULTI/EXEC around an
/// atomic unit (the MULTI in the first op's database, as Redis emits it).
/// Only ops for `targets` are written.
pub fn encode_unit(unit: &Unit, targets: u8, selected: &mut Option<usize>, out: &mut Vec<u8>) {
    let ops: Vec<&Op> = unit
        .ops
        .iter()
        .filter(|op| op.targets & targets != 0)
        .collect();
    let Some(first) = ops.first() else {
        return;
    };
    let wrap = unit.atomic && ops.len() > 1;
    if wrap {
        select(first.db, selected, out);
        encode_command(&[b"MULTI"], out);
    }
    for op in &ops {
        select(op.db, selected, out);
        encode_command(&op.argv, out);
    }
    if wrap {
        encode_command(&[b"EXEC"], out);
    }
}

fn select(db: usize, selected: &mut Option<usize>, out: &mut Vec<u8>) {
    if *selected != Some(db) {
        let mut buf = itoa::Buffer::new();
        encode_command(&[b"SELECT".as_slice(), buf.format(db).as_bytes()], out);
        *selected = Some(db);
    }
}

/// A command as a RESP array of bulk strings.
pub fn encode_command<A: AsRef<[u8]>>(argv: &[A], out: &mut Vec<u8>) {
    let mut buf = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(buf.format(argv.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in argv {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(buf.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// The test consumer: the replication view of the stream, kept in memory
/// up to a limit (past it, new units are dropped and the loss reported).
struct Capture {
    bytes: Vec<u8>,
    selected: Option<usize>,
    limit: usize,
    overflowed: bool,
}

impl Capture {
    fn new(limit: usize) -> Capture {
        Capture {
            bytes: Vec::new(),
            selected: None,
            limit,
            overflowed: false,
        }
    }

    /// One unit, in number order (units without ops are never fed).
    fn feed(&mut self, unit: &Unit) {
        if self.bytes.len() >= self.limit {
            self.overflowed = true;
            return;
        }
        encode_unit(unit, target::REPL, &mut self.selected, &mut self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(db: usize, argv: &[&str]) -> Op {
        Op {
            db,
            argv: argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
            targets: target::ALL,
        }
    }

    #[test]
    fn encode_selects_and_wraps() {
        let unit = Unit {
            seq: 1,
            ops: vec![op(0, &["SET", "a", "1"]), op(2, &["DEL", "b"])],
            atomic: true,
        };
        let mut selected = None;
        let mut out = Vec::new();
        encode_unit(&unit, target::REPL, &mut selected, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n\
             *2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*2\r\n$3\r\nDEL\r\n$1\r\nb\r\n*1\r\n$4\r\nEXEC\r\n"
        );
        assert_eq!(selected, Some(2));
    }

    #[test]
    fn ops_for_other_targets_are_left_out() {
        let mut publish = op(0, &["PUBLISH", "c", "m"]);
        publish.targets = target::REPL;
        let unit = Unit {
            seq: 1,
            ops: vec![publish, op(0, &["SET", "a", "1"])],
            atomic: true,
        };
        let mut selected = Some(0);
        let mut out = Vec::new();
        encode_unit(&unit, target::AOF, &mut selected, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n"
        );
    }
}
