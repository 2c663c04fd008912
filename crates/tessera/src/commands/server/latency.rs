//! LATENCY: the latency monitor's events and the per-command histograms
//! (Redis's `latency.c`).

use std::fmt::Write as _;

use crate::commands::args::lossy;
use crate::commands::generic::help_reply;
use crate::commands::{CmdError, CmdResult, Ctx};
use crate::server::state::unix_ms;

pub(super) fn latency_latest(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let lat = ctx.srv.latency.lock();
    let mut events: Vec<_> = lat.iter().collect();
    events.sort_by(|a, b| a.0.cmp(b.0));
    let out = &mut *ctx.out;
    out.array(events.len());
    for (name, s) in events {
        let (t, v) = s.samples.back().copied().unwrap_or((0, 0));
        out.array(4);
        out.bulk(name.as_bytes());
        out.int(t);
        out.int(v as i64);
        out.int(s.max_ms as i64);
    }
    Ok(())
}

pub(super) fn latency_history(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let lat = ctx.srv.latency.lock();
    let out = &mut *ctx.out;
    match lat.get(&lossy(args[2])) {
        Some(s) => {
            out.array(s.samples.len());
            for (t, v) in &s.samples {
                out.array(2);
                out.int(*t);
                out.int(*v as i64);
            }
        }
        None => out.array(0),
    }
    Ok(())
}

pub(super) fn latency_reset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut lat = ctx.srv.latency.lock();
    let n = if args.len() == 2 {
        let n = lat.len();
        lat.clear();
        n
    } else {
        args[2..]
            .iter()
            .filter(|a| lat.remove(&lossy(a)).is_some())
            .count()
    };
    drop(lat);
    ctx.out.int(n as i64);
    Ok(())
}

/// Per command (every one with samples, or those named, a container
/// naming its subcommands too): the number of samples and their cumulative
/// distribution over power-of-two microsecond buckets.
pub(super) fn latency_histogram(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let srv = ctx.srv;
    let mut ids: Vec<usize> = Vec::new();
    if args.len() == 2 {
        ids.extend(0..crate::commands::command_count_with_subs());
    } else {
        for name in &args[2..] {
            let found = match name.iter().position(|&b| b == b'|') {
                Some(bar) => crate::commands::lookup(&name[..bar])
                    .and_then(|(_, parent)| crate::commands::lookup_sub(parent, &name[bar + 1..])),
                None => crate::commands::lookup(name),
            };
            let Some((id, c)) = found else {
                continue;
            };
            ids.push(id);
            for sub in c.subcommands {
                if let Some((sid, _)) = crate::commands::lookup_sub(c, sub.name.as_bytes()) {
                    ids.push(sid);
                }
            }
        }
    }
    let mut rows = Vec::new();
    for id in ids {
        let hists: Vec<_> = srv
            .workers
            .iter()
            .map(|w| &w.commands[id].latency)
            .collect();
        let (calls, buckets) = crate::server::stats::LatencyHistogram::cumulative_log2_us(&hists);
        if calls == 0 {
            continue;
        }
        if let Some((name, _)) = crate::commands::by_id(id) {
            rows.push((name, calls, buckets));
        }
    }
    let out = &mut *ctx.out;
    out.map(rows.len());
    for (name, calls, buckets) in rows {
        out.bulk(name.as_bytes());
        out.map(2);
        out.bulk(b"calls");
        out.int(calls as i64);
        out.bulk(b"histogram_usec");
        out.map(buckets.len());
        for (us, count) in buckets {
            out.int(us as i64);
            out.int(count as i64);
        }
    }
    Ok(())
}

/// A readable summary of every latency event: how often, how bad, and
/// what usually causes it.
pub(super) fn latency_doctor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let threshold = ctx.srv.config.latency_monitor_threshold();
    let lat = ctx.srv.latency.lock();
    let mut events: Vec<_> = lat.iter().filter(|(_, s)| !s.samples.is_empty()).collect();
    events.sort_by(|a, b| a.0.cmp(b.0));
    let mut report = String::new();
    if events.is_empty() {
        if threshold == 0 {
            report.push_str(
                "Latency monitoring is off (latency-monitor-threshold is 0), so there is nothing \
                 to analyse. Turn it on with CONFIG SET latency-monitor-threshold <milliseconds>.\n",
            );
        } else {
            let _ = writeln!(
                report,
                "No event took {threshold} ms or more (latency-monitor-threshold) since the \
                 server started or the last LATENCY RESET."
            );
        }
    } else {
        let _ = writeln!(
            report,
            "{} kind(s) of latency event took {threshold} ms or more (latency-monitor-threshold):\n",
            events.len()
        );
        for (i, (name, s)) in events.iter().enumerate() {
            let n = s.samples.len() as f64;
            let avg = s.samples.iter().map(|x| x.1 as f64).sum::<f64>() / n;
            let spread = s
                .samples
                .iter()
                .map(|x| (x.1 as f64 - avg).abs())
                .sum::<f64>()
                / n;
            let first = s.samples.front().map_or(0, |x| x.0);
            let last = s.samples.back().map_or(0, |x| x.0);
            let _ = writeln!(
                report,
                "{}. {name}: {} sample(s) over {} s, average {avg:.0} ms (mean deviation \
                 {spread:.0} ms), worst {} ms.",
                i + 1,
                s.samples.len(),
                last - first,
                s.max_ms
            );
        }
        report.push_str("\nWhat usually helps:\n");
        for (name, _) in &events {
            let advice = match name.as_str() {
                "command" => {
                    "- command: look for slow commands in SLOWLOG GET; O(N) commands on \
                     big keys (KEYS, SMEMBERS, HGETALL, LRANGE 0 -1, ...) and long scripts \
                     are the usual cause. SCAN-family commands spread the work."
                }
                "fast-command" => {
                    "- fast-command: O(1) or O(log N) commands were slow, which points at \
                     the machine (swapping, CPU contention, a noisy neighbour) rather than \
                     the data."
                }
                _ => continue,
            };
            let _ = writeln!(report, "{advice}");
        }
    }
    drop(lat);
    ctx.out.verbatim(b"txt", report.as_bytes());
    Ok(())
}

/// A text chart of an event's samples, oldest on the left: one column per
/// sample, scaled between the lowest and highest, with each sample's age.
pub(super) fn latency_graph(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = lossy(args[2]);
    let lat = ctx.srv.latency.lock();
    let Some(series) = lat.get(&*name).filter(|s| !s.samples.is_empty()) else {
        return Err(CmdError::bytes(&[
            b"ERR No samples available for event '",
            crate::commands::args::c_bytes(args[2]),
            b"'",
        ]));
    };
    let samples: Vec<(i64, u64)> = series.samples.iter().copied().collect();
    let max_ms = series.max_ms;
    drop(lat);
    let high = samples.iter().map(|s| s.1).max().unwrap_or(0);
    let low = samples.iter().map(|s| s.1).min().unwrap_or(0);
    const ROWS: u64 = 4;
    let mut text = format!(
        "{name} - high {high} ms, low {low} ms (all time high {max_ms} ms)\n{}\n",
        "-".repeat(80)
    );
    // Height of each column, 1..=ROWS.
    let heights: Vec<u64> = samples
        .iter()
        .map(|s| {
            if high == low {
                ROWS
            } else {
                1 + (s.1 - low) * (ROWS - 1) / (high - low)
            }
        })
        .collect();
    for row in (1..=ROWS).rev() {
        let line: String = heights
            .iter()
            .map(|&h| if h >= row { '#' } else { ' ' })
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    // Ages, written downwards: "12s" under its column.
    let now = unix_ms() / 1000;
    let ages: Vec<String> = samples
        .iter()
        .map(|s| format!("{}s", (now - s.0).max(0)))
        .collect();
    let depth = ages.iter().map(String::len).max().unwrap_or(0);
    for i in 0..depth {
        let line: String = ages
            .iter()
            .map(|a| a.as_bytes().get(i).map_or(' ', |&b| b as char))
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

pub(super) fn latency_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx,
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a readable analysis of the recorded latency events.",
            "GRAPH <event>",
            "    Return a text chart of the <event> class's samples.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "HISTOGRAM [<command> ...]",
            "    Return the cumulative latency distribution of the named commands (all when none).",
        ],
    )
}
