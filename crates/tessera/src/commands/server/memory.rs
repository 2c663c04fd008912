//! MEMORY and the memory accounting INFO shares with it (Redis's
//! `object.c`).

use std::sync::atomic::Ordering::Relaxed;

use crate::commands::args::{eq_ic, int};
use crate::commands::generic::help_reply;
use crate::commands::{CmdError, CmdResult, Ctx};

pub(super) fn memory_usage(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let mut i = 3;
    while i < args.len() {
        if eq_ic(args[i], "samples") && i + 1 < args.len() {
            let n = int(args[i + 1])?;
            if n < 0 {
                return Err(CmdError::Syntax);
            }
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let (dbi, now) = (ctx.client.db, ctx.now_ms);
    let size = {
        let mut locks = ctx.srv.keyspace.lock_key(key);
        let mut db = locks.db(dbi, now, crate::keyspace::Touch::None);
        db.get_write(key).map(|e| {
            e.value.heap_size() + key.len() + std::mem::size_of::<crate::keyspace::Entry>() + 24
        })
    };
    match size {
        Some(n) => ctx.out.int(n as i64),
        None => ctx.out.null(),
    }
    Ok(())
}

pub(super) fn memory_stats(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    enum Stat {
        Int(i64),
        /// Redis keeps these as single-precision floats.
        Ratio(f64),
        Db(crate::keyspace::DbSummary),
    }
    use Stat::{Db, Int, Ratio};
    let m = MemoryReport::gather(ctx);
    let mut stats: Vec<(String, Stat)> = [
        ("peak.allocated", Int(m.peak as i64)),
        ("total.allocated", Int(m.used as i64)),
        ("startup.allocated", Int(m.startup as i64)),
        ("replication.backlog", Int(0)),
        ("clients.slaves", Int(0)),
        ("clients.normal", Int(m.clients as i64)),
        ("cluster.links", Int(0)),
        ("aof.buffer", Int(0)),
        ("lua.caches", Int(m.scripts as i64)),
        ("functions.caches", Int(m.functions_code as i64)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (db, d) in m.dbs.iter().enumerate().filter(|(_, d)| d.keys > 0) {
        stats.push((format!("db.{db}"), Db(*d)));
    }
    let [alloc_frag, alloc_rss, rss_overhead, frag] = m.fragmentation();
    stats.extend(
        [
            ("overhead.total", Int(m.overhead() as i64)),
            ("keys.count", Int(m.keys as i64)),
            (
                "keys.bytes-per-key",
                Int(m.net().checked_div(m.keys).unwrap_or(0) as i64),
            ),
            ("dataset.bytes", Int(m.dataset() as i64)),
            ("dataset.percentage", Ratio(m.dataset_perc())),
            ("peak.percentage", Ratio(m.peak_perc())),
            ("allocator.allocated", Int(m.allocated as i64)),
            ("allocator.active", Int(m.active as i64)),
            ("allocator.resident", Int(m.resident as i64)),
            ("allocator-fragmentation.ratio", Ratio(alloc_frag.0)),
            ("allocator-fragmentation.bytes", Int(alloc_frag.1)),
            ("allocator-rss.ratio", Ratio(alloc_rss.0)),
            ("allocator-rss.bytes", Int(alloc_rss.1)),
            ("rss-overhead.ratio", Ratio(rss_overhead.0)),
            ("rss-overhead.bytes", Int(rss_overhead.1)),
            ("fragmentation", Ratio(frag.0)),
            ("fragmentation.bytes", Int(frag.1)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v)),
    );
    let out = &mut *ctx.out;
    out.map(stats.len());
    for (name, stat) in stats {
        out.bulk(name.as_bytes());
        match stat {
            Int(v) => out.int(v),
            Ratio(v) => {
                let mut text = Vec::new();
                crate::util::numbers::format_f64(v as f32 as f64, &mut text);
                out.double_text(&text);
            }
            Db(d) => {
                out.map(3);
                for (k, v) in [
                    ("overhead.hashtable.main", d.table_bytes),
                    ("overhead.hashtable.expires", d.expires_bytes),
                    ("overhead.hashtable.slot-to-keys", 0),
                ] {
                    out.bulk(k.as_bytes());
                    out.int(v as i64);
                }
            }
        }
    }
    Ok(())
}

/// `a / b`, or 1 when `b` is 0 (Redis's ratios over an empty allocator).
fn ratio(a: u64, b: u64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        1.0
    }
}

/// Where the memory goes, for INFO memory and MEMORY STATS.
pub(super) struct MemoryReport {
    pub(super) used: u64,
    pub(super) peak: u64,
    pub(super) startup: u64,
    pub(super) rss: u64,
    pub(super) allocated: u64,
    pub(super) active: u64,
    pub(super) resident: u64,
    /// Query and reply buffers of the connected clients.
    pub(super) clients: u64,
    /// Every worker's Lua state.
    pub(super) lua_vm: u64,
    /// Cached EVAL scripts.
    pub(super) scripts: u64,
    /// Function libraries' names and code.
    pub(super) functions_code: u64,
    pub(super) functions: usize,
    pub(super) libraries: usize,
    keys: u64,
    dbs: Vec<crate::keyspace::DbSummary>,
}

impl MemoryReport {
    pub(super) fn gather(ctx: &Ctx) -> MemoryReport {
        let srv = ctx.srv;
        let used = srv.used_memory_now();
        let (allocated, active, resident, _, _) = crate::server::memory::allocator_stats();
        let (functions, libraries, functions_code) = {
            let libs = srv.scripts.libraries.lock();
            let code: usize = libs
                .libs
                .values()
                .map(|l| l.name.len() + l.code.len())
                .sum();
            (libs.function_count(), libs.libs.len(), code as u64)
        };
        let clients = srv
            .clients
            .snapshot()
            .iter()
            .map(|c| c.total_memory() as u64)
            .sum();
        let dbs = srv.keyspace.db_summaries();
        MemoryReport {
            used,
            peak: srv.peak_memory.load(Relaxed).max(used),
            startup: srv.startup_memory.load(Relaxed).min(used),
            rss: crate::server::memory::rss_bytes(),
            allocated,
            active,
            resident,
            clients,
            lua_vm: crate::scripting::lua_memory() as u64,
            scripts: srv.scripts.memory() as u64,
            functions_code,
            functions,
            libraries,
            keys: dbs.iter().map(|d| d.keys as u64).sum(),
            dbs,
        }
    }

    /// What the server needs besides the data, as Redis counts it:
    /// start-up allocations, client buffers, Lua and its caches, and the
    /// keyspace's own tables.
    pub(super) fn overhead(&self) -> u64 {
        let tables: u64 = self
            .dbs
            .iter()
            .map(|d| d.table_bytes + d.expires_bytes)
            .sum();
        (self.startup + self.clients + self.lua_vm + self.scripts + self.functions_code + tables)
            .min(self.used)
    }

    pub(super) fn dataset(&self) -> u64 {
        self.used - self.overhead()
    }

    /// What the server allocated since start-up.
    fn net(&self) -> u64 {
        self.used.saturating_sub(self.startup)
    }

    pub(super) fn dataset_perc(&self) -> f64 {
        self.dataset() as f64 * 100.0 / self.net().max(1) as f64
    }

    /// (ratio, bytes) for the allocator's fragmentation (active against
    /// allocated), its RSS (resident against active), the process's RSS
    /// overhead (RSS against resident) and the overall fragmentation (RSS
    /// against used), in that order.
    pub(super) fn fragmentation(&self) -> [(f64, i64); 4] {
        let pair = |a: u64, b: u64| (ratio(a, b), a as i64 - b as i64);
        [
            pair(self.active, self.allocated),
            pair(self.resident, self.active),
            pair(self.rss, self.resident),
            pair(self.rss, self.used),
        ]
    }

    pub(super) fn peak_perc(&self) -> f64 {
        if self.peak > 0 {
            self.used as f64 * 100.0 / self.peak as f64
        } else {
            100.0
        }
    }
}

pub(super) fn memory_doctor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let used = ctx.srv.used_memory_now();
    let text = if used < 5 * 1024 * 1024 {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting."
    } else {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
    };
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// jemalloc's statistics report, as text.
pub(super) fn memory_malloc_stats(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let mut text = Vec::new();
    if tikv_jemalloc_ctl::stats_print::stats_print(&mut text, Default::default()).is_err() {
        text.clear();
    }
    ctx.out.verbatim(b"txt", &text);
    Ok(())
}

/// Returns every arena's dirty pages to the system at once (jemalloc's
/// background thread would within a second anyway).
pub(super) fn memory_purge(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    // Arena 4096 is jemalloc's MALLCTL_ARENAS_ALL: every arena.
    const PURGE_ALL: &[u8] = b"arena.4096.purge\0";
    // SAFETY: a NUL-terminated control name; "arena.<i>.purge" reads and
    // writes nothing, so every other pointer is null and the length 0.
    let rc = unsafe {
        tikv_jemalloc_sys::mallctl(
            PURGE_ALL.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return Err(CmdError::msg("ERR Error purging dirty pages"));
    }
    ctx.out.ok();
    Ok(())
}

pub(super) fn memory_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx,
        "MEMORY",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return the memory allocator's own statistics report.",
            "PURGE",
            "    Ask the memory allocator to hand unused pages back to the system.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value.",
        ],
    )
}
