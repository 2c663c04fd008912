//! Counters kept per worker thread and summed when read (INFO, commandstats),
//! so the hot path never writes a cache line another thread writes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;

/// A counter written by exactly one thread: a plain load and store instead
/// of an atomic read-modify-write, readable from any thread.
#[derive(Default, Debug)]
pub struct OwnedCounter(AtomicU64);

impl OwnedCounter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }
    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
    pub fn reset(&self) {
        self.0.store(0, Relaxed);
    }
    #[inline]
    pub fn set(&self, v: u64) {
        self.0.store(v, Relaxed);
    }
}

#[derive(Default, Debug)]
pub struct CommandCounters {
    pub calls: OwnedCounter,
    pub usec: OwnedCounter,
    pub rejected: OwnedCounter,
    pub failed: OwnedCounter,
    pub latency: LatencyHistogram,
}

/// Sub-buckets per power of two: ~19% relative precision.
const SUB_BUCKETS: usize = 4;
/// Powers of two covered, in nanoseconds (2^44 ns ≈ 4.9 hours).
const EXPONENTS: usize = 44;

/// A log-linear histogram of command latencies for INFO latencystats,
/// written by one thread; percentiles are computed over all workers'
/// histograms when read.
#[derive(Debug)]
pub struct LatencyHistogram {
    buckets: Box<[OwnedCounter]>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            buckets: (0..EXPONENTS * SUB_BUCKETS)
                .map(|_| OwnedCounter::default())
                .collect(),
        }
    }
}

impl LatencyHistogram {
    #[inline]
    fn index(ns: u64) -> usize {
        let ns = ns.max(1);
        let exp = 63 - ns.leading_zeros() as usize;
        let sub = if exp >= 2 {
            ((ns >> (exp - 2)) & 3) as usize
        } else {
            0
        };
        (exp * SUB_BUCKETS + sub).min(EXPONENTS * SUB_BUCKETS - 1)
    }

    /// Upper bound of a bucket, in nanoseconds.
    fn bucket_value(i: usize) -> f64 {
        let exp = i / SUB_BUCKETS;
        let sub = (i % SUB_BUCKETS) as f64;
        let base = (1u64 << exp) as f64;
        base + base * (sub + 1.0) / SUB_BUCKETS as f64
    }

    #[inline]
    pub fn record(&self, ns: u64) {
        self.buckets[Self::index(ns)].add(1);
    }

    pub fn reset(&self) {
        for b in self.buckets.iter() {
            b.reset();
        }
    }

    /// LATENCY HISTOGRAM's view of several histograms: the number of
    /// samples, and the cumulative count at each power-of-two bucket from
    /// 1024 ns, labelled in microseconds as Redis labels them (1, 2, 4, 8,
    /// 16, 33, 66, ...: its buckets end 0.78% above each power of two),
    /// listed only where the count grows, up to the last sample.
    pub fn cumulative_log2_us(hists: &[&LatencyHistogram]) -> (u64, Vec<(u64, u64)>) {
        let n = EXPONENTS * SUB_BUCKETS;
        let counts: Vec<u64> = (0..n)
            .map(|i| hists.iter().map(|h| h.buckets[i].get()).sum())
            .collect();
        let total: u64 = counts.iter().sum();
        let mut out = Vec::new();
        let (mut cumulative, mut previous) = (0u64, 0u64);
        let mut next = 0;
        // Bucket k holds what took under 1024 * 2^k ns (the first one also
        // everything faster; Redis's end 0.78% later, finer than these
        // buckets can tell). Redis tracks up to 1 s: its last bucket, up to
        // 2^30 ns, takes everything slower too.
        for k in 0..=20 {
            if k < 20 {
                let end = (10 + k) * SUB_BUCKETS;
                cumulative += counts[next..end].iter().sum::<u64>();
                next = end;
            } else {
                cumulative = total;
            }
            if cumulative > previous {
                let label = if k < 20 {
                    ((1032u64 << k) - 1) / 1000
                } else {
                    ((1u64 << 30) - 1) / 1000
                };
                out.push((label, cumulative));
                previous = cumulative;
            }
            if cumulative == total {
                break;
            }
        }
        (total, out)
    }

    /// Percentiles (0..100) in microseconds over several histograms; None
    /// when nothing was recorded.
    pub fn percentiles_us(hists: &[&LatencyHistogram], pcts: &[f64]) -> Option<Vec<f64>> {
        let n = EXPONENTS * SUB_BUCKETS;
        let counts: Vec<u64> = (0..n)
            .map(|i| hists.iter().map(|h| h.buckets[i].get()).sum())
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        Some(
            pcts.iter()
                .map(|p| {
                    let rank = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
                    let mut seen = 0;
                    for (i, c) in counts.iter().enumerate() {
                        seen += c;
                        if seen >= rank {
                            return Self::bucket_value(i) / 1000.0;
                        }
                    }
                    Self::bucket_value(n - 1) / 1000.0
                })
                .collect(),
        )
    }
}

/// One worker's counters.
#[derive(Debug)]
pub struct WorkerStats {
    /// Indexed by command id (see `commands::command_id`).
    pub commands: Box<[CommandCounters]>,
    pub errors: Mutex<HashMap<String, u64>>,
    /// Error replies counted so far (never reset).
    pub error_replies: OwnedCounter,
    /// `error_replies` when the last command ended (or was refused): a
    /// command during which more were counted, and not by a command it ran
    /// itself (a script's), failed, as Redis's `prev_err_count` decides.
    pub errors_seen: OwnedCounter,
    pub net_input_bytes: OwnedCounter,
    pub net_output_bytes: OwnedCounter,
    /// The part of `net_output_bytes` written to replica connections (the
    /// snapshot and the stream): INFO's total_net_repl_output_bytes.
    pub net_repl_output_bytes: OwnedCounter,
    pub commands_processed: OwnedCounter,
    pub connections_received: OwnedCounter,
    pub rejected_connections: OwnedCounter,
    pub evicted_keys: OwnedCounter,
    /// Socket reads and reply writes (INFO total_reads/writes_processed).
    pub reads_processed: OwnedCounter,
    pub writes_processed: OwnedCounter,
}

impl WorkerStats {
    pub fn new(ncommands: usize) -> WorkerStats {
        WorkerStats {
            commands: (0..ncommands).map(|_| CommandCounters::default()).collect(),
            errors: Mutex::new(HashMap::new()),
            error_replies: OwnedCounter::default(),
            errors_seen: OwnedCounter::default(),
            net_input_bytes: OwnedCounter::default(),
            net_output_bytes: OwnedCounter::default(),
            net_repl_output_bytes: OwnedCounter::default(),
            commands_processed: OwnedCounter::default(),
            connections_received: OwnedCounter::default(),
            rejected_connections: OwnedCounter::default(),
            evicted_keys: OwnedCounter::default(),
            reads_processed: OwnedCounter::default(),
            writes_processed: OwnedCounter::default(),
        }
    }

    /// Counts bytes written to a client; those to replicas also count as
    /// replication output (a part of the total, as redis-server 7.0
    /// reports it).
    #[inline]
    pub fn count_output(&self, bytes: u64, to_replica: bool) {
        self.net_output_bytes.add(bytes);
        if to_replica {
            self.net_repl_output_bytes.add(bytes);
        }
    }

    pub fn count_error(&self, code: &str) {
        *self.errors.lock().entry(code.to_string()).or_insert(0) += 1;
        self.error_replies.add(1);
    }

    /// Whether error replies were counted since the last call of this
    /// (then it catches up).
    pub fn errors_since_last_look(&self) -> bool {
        let total = self.error_replies.get();
        let new = total != self.errors_seen.get();
        self.errors_seen.set(total);
        new
    }

    pub fn reset(&self) {
        for c in self.commands.iter() {
            c.calls.reset();
            c.usec.reset();
            c.rejected.reset();
            c.failed.reset();
            c.latency.reset();
        }
        self.errors.lock().clear();
        self.net_input_bytes.reset();
        self.net_output_bytes.reset();
        self.net_repl_output_bytes.reset();
        self.commands_processed.reset();
        self.connections_received.reset();
        self.rejected_connections.reset();
        self.evicted_keys.reset();
        self.reads_processed.reset();
        self.writes_processed.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::LatencyHistogram;

    #[test]
    fn histogram_buckets_read_as_redis_labels_them() {
        let h = LatencyHistogram::default();
        for ns in [10, 500, 1500, 3_000, 40_000] {
            h.record(ns);
        }
        let (calls, buckets) = LatencyHistogram::cumulative_log2_us(&[&h]);
        assert_eq!(calls, 5);
        assert_eq!(buckets, vec![(1, 2), (2, 3), (4, 4), (66, 5)]);
        // Past Redis's 1 s ceiling everything lands in its last bucket.
        h.record(3_000_000_000);
        h.record(700_000_000);
        let (calls, buckets) = LatencyHistogram::cumulative_log2_us(&[&h]);
        assert_eq!(calls, 7);
        assert_eq!(buckets.last(), Some(&(1_073_741, 7)));
        assert_eq!(buckets[buckets.len() - 2], (66, 5));
    }
}
