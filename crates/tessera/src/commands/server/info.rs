//! INFO: every section Redis 7.0 reports, as `server.c`'s
//! `genRedisInfoString` writes them.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use super::memory::MemoryReport;
use crate::commands::args::lossy;
use crate::commands::{CmdResult, Ctx};
use crate::server::state::{unix_ms, unix_us};

pub(super) fn info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut wanted: Vec<String> = args[1..]
        .iter()
        .map(|a| lossy(a).to_ascii_lowercase())
        .collect();
    if wanted.is_empty() {
        wanted.push("default".into());
    }
    let default_sections = [
        "server",
        "clients",
        "memory",
        "persistence",
        "stats",
        "replication",
        "cpu",
        "modules",
        "errorstats",
        "cluster",
        "keyspace",
    ];
    let all_sections = [
        "server",
        "clients",
        "memory",
        "persistence",
        "stats",
        "replication",
        "cpu",
        "modules",
        "commandstats",
        "errorstats",
        "latencystats",
        "cluster",
        "keyspace",
    ];
    let mut sections: Vec<&str> = Vec::new();
    for w in &wanted {
        match w.as_str() {
            "default" => sections.extend(default_sections),
            "all" | "everything" => sections.extend(all_sections),
            s => {
                if let Some(found) = all_sections.iter().find(|x| **x == s) {
                    sections.push(found);
                }
            }
        }
    }
    let mut text = String::new();
    for s in all_sections {
        if !sections.contains(&s) {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        info_section(ctx, s, &mut text);
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
    Ok(())
}

fn info_section(ctx: &Ctx, section: &str, t: &mut String) {
    match section {
        "server" => info_server(ctx, t),
        "clients" => info_clients(ctx, t),
        "memory" => info_memory(ctx, t),
        "persistence" => info_persistence(ctx, t),
        "stats" => info_stats(ctx, t),
        "replication" => info_replication(ctx, t),
        "cpu" => info_cpu(t),
        "modules" => info_modules(t),
        "cluster" => info_cluster(t),
        "errorstats" => info_errorstats(ctx, t),
        "commandstats" => info_commandstats(ctx, t),
        "latencystats" => info_latencystats(ctx, t),
        "keyspace" => info_keyspace(ctx, t),
        _ => {}
    }
}

/// The `server` section: versions, process and uptime.
fn info_server(ctx: &Ctx, t: &mut String) {
    let srv = ctx.srv;
    let cfg = &srv.config;
    let uptime = srv.uptime_secs();
    let _ = write!(
        t,
        "# Server\r\nredis_version:{}\r\ntessera_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\nprocess_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nlru_clock:{}\r\nexecutable:{}\r\nconfig_file:{}\r\nio_threads_active:{}\r\n",
        crate::REDIS_COMPAT_VERSION,
        crate::TESSERA_VERSION,
        os_name(),
        std::process::id(),
        srv.run_id,
        srv.port.load(std::sync::atomic::Ordering::Relaxed),
        unix_us(),
        uptime,
        uptime / 86400,
        cfg.hz(),
        cfg.hz(),
        (unix_ms() / 1000) & 0xff_ffff,
        srv.executable,
        srv.config_file.clone().unwrap_or_default(),
        (srv.worker_threads > 1) as u8,
    );
}

/// The `clients` section.
fn info_clients(ctx: &Ctx, t: &mut String) {
    let srv = ctx.srv;
    let cfg = &srv.config;
    // The biggest query buffer (allocated) and reply backlog among
    // the connected clients.
    let (max_in, max_out) = srv.clients.snapshot().iter().fold((0, 0), |(i, o), c| {
        (
            i.max(c.qbuf.load(Relaxed) + c.qbuf_free.load(Relaxed)),
            o.max(c.omem.load(Relaxed)),
        )
    });
    let _ = write!(
        t,
        "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:{max_in}\r\nclient_recent_max_output_buffer:{max_out}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:{}\r\n",
        srv.clients.connected(),
        cfg.maxclients(),
        srv.blocking.reported_blocked(),
        srv.tracking.tracking_clients(),
        srv.blocking.with_deadline.load(Relaxed),
    );
}

/// The `memory` section, from the same [`MemoryReport`] as MEMORY STATS.
fn info_memory(ctx: &Ctx, t: &mut String) {
    let cfg = &ctx.srv.config;
    let m = MemoryReport::gather(ctx);
    let frag = m.fragmentation();
    // The backlog, and what waits in the replicas' outboxes.
    let (backlog, replica_buffers) = {
        let st = ctx.srv.repl.stream.lock();
        let backlog = st.backlog.as_ref().map_or(0, |b| b.histlen());
        let buffers: usize = st
            .feeds
            .iter()
            .map(|f| f.info.omem.load(std::sync::atomic::Ordering::Relaxed))
            .sum();
        (backlog, buffers)
    };
    let _ = write!(
        t,
        "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\nused_memory_rss:{}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{:.2}%\r\nused_memory_overhead:{}\r\nused_memory_startup:{}\r\nused_memory_dataset:{}\r\nused_memory_dataset_perc:{:.2}%\r\nallocator_allocated:{}\r\nallocator_active:{}\r\nallocator_resident:{}\r\ntotal_system_memory:{}\r\ntotal_system_memory_human:{}\r\nused_memory_lua:{}\r\nused_memory_vm_eval:{}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{}\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\nnumber_of_libraries:{}\r\nused_memory_vm_functions:0\r\nused_memory_vm_total:{}\r\nused_memory_vm_total_human:{}\r\nused_memory_functions:{}\r\nused_memory_scripts:{}\r\nused_memory_scripts_human:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nallocator_frag_ratio:{:.2}\r\nallocator_frag_bytes:{}\r\nallocator_rss_ratio:{:.2}\r\nallocator_rss_bytes:{}\r\nrss_overhead_ratio:{:.2}\r\nrss_overhead_bytes:{}\r\nmem_fragmentation_ratio:{:.2}\r\nmem_fragmentation_bytes:{}\r\nmem_not_counted_for_evict:0\r\nmem_replication_backlog:{}\r\nmem_total_replication_buffers:{}\r\nmem_clients_slaves:{}\r\nmem_clients_normal:{}\r\nmem_cluster_links:0\r\nmem_aof_buffer:0\r\nmem_allocator:{}\r\nactive_defrag_running:0\r\nlazyfree_pending_objects:{}\r\nlazyfreed_objects:{}\r\n",
        m.used,
        human(m.used),
        m.rss,
        human(m.rss),
        m.peak,
        human(m.peak),
        m.peak_perc(),
        m.overhead(),
        m.startup,
        m.dataset(),
        m.dataset_perc(),
        m.allocated,
        m.active,
        m.resident,
        total_system_memory(),
        human(total_system_memory()),
        m.lua_vm,
        m.lua_vm,
        human(m.lua_vm),
        m.scripts,
        ctx.srv.scripts.count(),
        m.functions,
        m.libraries,
        m.lua_vm,
        human(m.lua_vm),
        m.functions_code,
        m.scripts + m.functions_code,
        human(m.scripts + m.functions_code),
        cfg.maxmemory(),
        human(cfg.maxmemory()),
        policy_name(ctx),
        frag[0].0,
        frag[0].1,
        frag[1].0,
        frag[1].1,
        frag[2].0,
        frag[2].1,
        frag[3].0,
        frag[3].1,
        backlog,
        backlog + replica_buffers,
        replica_buffers,
        m.clients,
        allocator_name(),
        crate::server::lazyfree::pending(),
        crate::server::lazyfree::freed(),
    );
}

/// The `persistence` section.
fn info_persistence(ctx: &Ctx, t: &mut String) {
    let srv = ctx.srv;
    let st = &srv.persistence;
    let now_ms = crate::server::state::unix_ms();
    let loading = st.loading();
    let async_loading = st.async_loading();
    let _ = write!(
        t,
        "# Persistence\r\nloading:{}\r\nasync_loading:{}\r\n",
        loading as u8, async_loading as u8
    );
    if loading || async_loading {
        let total = st.loading_total_bytes.load(Relaxed);
        let done = st.loading_loaded_bytes.load(Relaxed);
        let started = st.loading_started_s.load(Relaxed);
        let perc = if total > 0 {
            done as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        let elapsed = (now_ms / 1000 - started).max(0) as f64;
        let eta = if done > 0 {
            ((total - done.min(total)) as f64 * elapsed / done as f64) as i64
        } else {
            1
        };
        let _ = write!(
            t,
            "loading_start_time:{started}\r\nloading_total_bytes:{total}\r\nloading_rdb_used_mem:0\r\nloading_loaded_bytes:{done}\r\nloading_loaded_perc:{perc:.2}\r\nloading_eta_seconds:{eta}\r\n"
        );
    }
    let bg_started = st.bgsave_started_ms.load(Relaxed);
    let in_progress = st.bgsave_in_progress.load(Relaxed);
    let current_time = if in_progress && bg_started > 0 {
        (now_ms - bg_started) / 1000
    } else {
        -1
    };
    let _ = write!(
        t,
        "current_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nrdb_last_cow_size:{}\r\nrdb_last_load_keys_expired:{}\r\nrdb_last_load_keys_loaded:{}\r\n",
        crate::server::persist::changes_since_save(srv),
        in_progress as u8,
        st.lastsave_s.load(Relaxed),
        if st.last_bgsave_ok.load(Relaxed) { "ok" } else { "err" },
        st.last_bgsave_time_s.load(Relaxed),
        current_time,
        st.saves_started.load(Relaxed),
        st.last_cow_bytes.load(Relaxed),
        st.last_load_keys_expired.load(Relaxed),
        st.last_load_keys_loaded.load(Relaxed),
    );
    let aof = srv.aof.lock().clone();
    let rw_started = st.aof_rewrite_started_ms.load(Relaxed);
    let rw_in_progress = st.aof_rewrite_in_progress.load(Relaxed);
    let _ = write!(
        t,
        "aof_enabled:{}\r\naof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:{}\r\naof_last_rewrite_time_sec:{}\r\naof_current_rewrite_time_sec:{}\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\naof_rewrites_consecutive_failures:0\r\naof_last_write_status:{}\r\naof_last_cow_size:{}\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
        // (On from CONFIG SET, before its first rewrite has started.)
        (aof.is_some() || st.aof_enable_scheduled.load(Relaxed)) as u8,
        rw_in_progress as u8,
        st.aof_rewrite_scheduled.load(Relaxed) as u8,
        st.aof_last_rewrite_time_s.load(Relaxed),
        if rw_in_progress && rw_started > 0 { (now_ms - rw_started) / 1000 } else { -1 },
        if st.aof_last_rewrite_ok.load(Relaxed) { "ok" } else { "err" },
        st.aof_rewrites.load(Relaxed),
        if aof.as_ref().is_some_and(|a| a.write_failed.load(Relaxed)) { "err" } else { "ok" },
        st.aof_last_cow_bytes.load(Relaxed),
    );
    if let Some(a) = aof {
        let _ = write!(
            t,
            "aof_current_size:{}\r\naof_base_size:{}\r\naof_pending_rewrite:{}\r\naof_buffer_length:{}\r\naof_pending_bio_fsync:0\r\naof_delayed_fsync:{}\r\n",
            a.current_size.load(Relaxed) + a.base_size.load(Relaxed),
            a.base_size.load(Relaxed),
            st.aof_rewrite_scheduled.load(Relaxed) as u8,
            a.buffered(),
            a.delayed_fsyncs.load(Relaxed),
        );
    }
}

/// The `stats` section: the workers' counters summed, and the keyspace's.
fn info_stats(ctx: &Ctx, t: &mut String) {
    let srv = ctx.srv;
    let ks = srv.keyspace.stats();
    let rates = srv.instant.lock().rates();
    let total = |f: fn(&crate::server::stats::WorkerStats) -> u64| srv.stat_total(f);
    let _ = write!(
        t,
        "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ntotal_net_repl_input_bytes:{}\r\ntotal_net_repl_output_bytes:{}\r\ninstantaneous_input_kbps:{:.2}\r\ninstantaneous_output_kbps:{:.2}\r\ninstantaneous_input_repl_kbps:{:.2}\r\ninstantaneous_output_repl_kbps:{:.2}\r\nrejected_connections:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\nexpired_keys:{}\r\nexpired_stale_perc:0.00\r\nexpired_time_cap_reached_count:0\r\nexpire_cycle_cpu_milliseconds:0\r\nevicted_keys:{}\r\nevicted_clients:{}\r\ntotal_eviction_exceeded_time:0\r\ncurrent_eviction_exceeded_time:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nlatest_fork_usec:0\r\ntotal_forks:{}\r\nmigrate_cached_sockets:{}\r\nslave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\nunexpected_error_replies:0\r\ntotal_error_replies:{}\r\ndump_payload_sanitizations:{}\r\ntotal_reads_processed:{}\r\ntotal_writes_processed:{}\r\nio_threaded_reads_processed:0\r\nio_threaded_writes_processed:0\r\nreply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n",
        total(|w| w.connections_received.get()),
        total(|w| w.commands_processed.get()),
        rates.ops,
        total(|w| w.net_input_bytes.get()) + srv.repl.link_input_bytes.load(Relaxed),
        total(|w| w.net_output_bytes.get()) + srv.repl.link_output_bytes.load(Relaxed),
        srv.repl.net_repl_input_bytes.load(Relaxed),
        total(|w| w.net_repl_output_bytes.get()),
        rates.input_kbps,
        rates.output_kbps,
        rates.repl_input_kbps,
        rates.repl_output_kbps,
        total(|w| w.rejected_connections.get()),
        srv.repl.sync_full.load(Relaxed),
        srv.repl.sync_partial_ok.load(Relaxed),
        srv.repl.sync_partial_err.load(Relaxed),
        ks.expired_keys,
        total(|w| w.evicted_keys.get()),
        srv.client_eviction.evicted.load(std::sync::atomic::Ordering::Relaxed),
        ks.keyspace_hits,
        ks.keyspace_misses,
        srv.pubsub.channel_count(),
        srv.pubsub.pattern_count(),
        srv.pubsub.active(crate::server::pubsub::Kind::Shard, None).len(),
        srv.persistence.background_jobs.load(Relaxed),
        srv.migrate_sockets.cached(),
        srv.tracking.tracked_keys(),
        srv.tracking.tracked_items(),
        srv.tracking.prefix_count(),
        error_totals(ctx).values().sum::<u64>(),
        srv.persistence.dump_payload_sanitizations.load(Relaxed),
        total(|w| w.reads_processed.get()),
        total(|w| w.writes_processed.get()),
    );
}

/// The `replication` section, field by field as redis-server 7.0 writes it.
fn info_replication(ctx: &Ctx, t: &mut String) {
    use crate::server::replication::{master, LinkState};
    let srv = ctx.srv;
    let repl = &srv.repl;
    let now = crate::server::state::unix_ms();
    t.push_str("# Replication\r\n");
    if repl.is_replica() {
        let link = repl.link.lock();
        let offset = repl.stream.lock().offset;
        let (host, port, state, last_io, read_offset, down_since) = match link.as_ref() {
            Some(l) => (
                l.host.clone(),
                l.port,
                l.state,
                l.last_io_ms,
                l.read_offset,
                l.down_since_ms,
            ),
            None => (String::new(), 0, LinkState::Connect, 0, 0, 0),
        };
        let up = state == LinkState::Connected;
        let _ = write!(
            t,
            "role:slave\r\nmaster_host:{host}\r\nmaster_port:{port}\r\nmaster_link_status:{}\r\nmaster_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{}\r\nslave_repl_offset:{}\r\n",
            if up { "up" } else { "down" },
            if up && last_io > 0 { (now - last_io) / 1000 } else { -1 },
            u8::from(state == LinkState::Transfer),
            offset.max(read_offset),
            offset,
        );
        if let (LinkState::Transfer, Some(l)) = (state, link.as_ref()) {
            let total = l.transfer_size.max(0);
            let left = (l.transfer_size - l.transfer_read as i64).max(0);
            let perc = if l.transfer_size > 0 {
                l.transfer_read as f64 * 100.0 / l.transfer_size as f64
            } else {
                0.0
            };
            let _ = write!(
                t,
                "master_sync_total_bytes:{}\r\nmaster_sync_read_bytes:{}\r\nmaster_sync_left_bytes:{}\r\nmaster_sync_perc:{:.2}\r\nmaster_sync_last_io_seconds_ago:{}\r\n",
                if l.transfer_size < 0 { -1 } else { total },
                l.transfer_read,
                if l.transfer_size < 0 { -1 } else { left },
                perc,
                (now - l.transfer_last_io_ms.max(0)) / 1000
            );
        }
        if !up {
            let _ = write!(
                t,
                "master_link_down_since_seconds:{}\r\n",
                if down_since > 0 {
                    (now - down_since) / 1000
                } else {
                    -1
                }
            );
        }
        drop(link);
        let _ = write!(
            t,
            "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:{}\r\n",
            srv.config.replica_priority(),
            u8::from(srv.config.replica_read_only()),
            u8::from(srv.config.replica_announced()),
        );
    } else {
        t.push_str("role:master\r\n");
    }
    let replicas = master::replicas(srv);
    let _ = write!(t, "connected_slaves:{}\r\n", replicas.len());
    if !repl.is_replica()
        && srv.config.min_replicas_to_write() > 0
        && srv.config.min_replicas_max_lag() > 0
    {
        let _ = write!(t, "min_slaves_good_slaves:{}\r\n", repl.good_replicas());
    }
    for (i, (ip, port, state, offset, lag)) in replicas.iter().enumerate() {
        let _ = write!(
            t,
            "slave{i}:ip={ip},port={port},state={},offset={offset},lag={lag}\r\n",
            state.name()
        );
    }
    let failover = repl.failover.lock().phase.name();
    let st = repl.stream.lock();
    let (active, histlen) = match &st.backlog {
        Some(b) => (1, b.histlen()),
        None => (0, 0),
    };
    let _ = write!(
        t,
        "master_failover_state:{}\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{active}\r\nrepl_backlog_size:{}\r\nrepl_backlog_first_byte_offset:{}\r\nrepl_backlog_histlen:{histlen}\r\n",
        failover,
        st.replid,
        st.replid2,
        st.offset,
        st.second_offset,
        srv.config.repl_backlog_size(),
        st.backlog_first_byte(),
    );
}

/// The `cpu` section.
fn info_cpu(t: &mut String) {
    let (us, sy) = cpu_times();
    // Redis's main thread runs every command; here the worker
    // threads do, so their sum stands in for it.
    let (mus, msy) = worker_cpu_times();
    let _ = write!(
        t,
        "# CPU\r\nused_cpu_sys:{sy:.6}\r\nused_cpu_user:{us:.6}\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\nused_cpu_sys_main_thread:{msy:.6}\r\nused_cpu_user_main_thread:{mus:.6}\r\n"
    );
}

/// The `modules` section (there are none).
fn info_modules(t: &mut String) {
    t.push_str("# Modules\r\n");
}

/// The `cluster` section (cluster mode is off).
fn info_cluster(t: &mut String) {
    t.push_str("# Cluster\r\ncluster_enabled:0\r\n");
}

/// The `errorstats` section: one line per error code, sorted.
fn info_errorstats(ctx: &Ctx, t: &mut String) {
    t.push_str("# Errorstats\r\n");
    let mut errs: Vec<_> = error_totals(ctx).into_iter().collect();
    errs.sort();
    for (code, n) in errs {
        let _ = write!(t, "errorstat_{code}:count={n}\r\n");
    }
}

/// The `commandstats` section: every command and subcommand called, rejected or failed.
fn info_commandstats(ctx: &Ctx, t: &mut String) {
    let srv = ctx.srv;
    t.push_str("# Commandstats\r\n");
    for id in 0..crate::commands::command_count_with_subs() {
        let calls: u64 = srv.workers.iter().map(|w| w.commands[id].calls.get()).sum();
        let rejected: u64 = srv
            .workers
            .iter()
            .map(|w| w.commands[id].rejected.get())
            .sum();
        let failed: u64 = srv
            .workers
            .iter()
            .map(|w| w.commands[id].failed.get())
            .sum();
        if calls == 0 && rejected == 0 && failed == 0 {
            continue;
        }
        let usec: u64 = srv.workers.iter().map(|w| w.commands[id].usec.get()).sum();
        let Some((name, _)) = crate::commands::by_id(id) else {
            continue;
        };
        let per = if calls > 0 {
            usec as f64 / calls as f64
        } else {
            0.0
        };
        let _ = write!(
            t,
            "cmdstat_{name}:calls={calls},usec={usec},usec_per_call={per:.2},rejected_calls={rejected},failed_calls={failed}\r\n"
        );
    }
}

/// The `latencystats` section: each command's latency percentiles.
fn info_latencystats(ctx: &Ctx, t: &mut String) {
    let srv = ctx.srv;
    let cfg = &srv.config;
    t.push_str("# Latencystats\r\n");
    let pcts = cfg.latency_tracking_info_percentiles();
    // Nothing is listed while latency-tracking is off, as in Redis.
    let ids = if cfg.latency_tracking() {
        0..crate::commands::command_count_with_subs()
    } else {
        0..0
    };
    for id in ids {
        let hists: Vec<_> = srv
            .workers
            .iter()
            .map(|w| &w.commands[id].latency)
            .collect();
        let Some(values) = crate::server::stats::LatencyHistogram::percentiles_us(&hists, &pcts)
        else {
            continue;
        };
        let Some((name, _)) = crate::commands::by_id(id) else {
            continue;
        };
        let parts: Vec<String> = pcts
            .iter()
            .zip(values)
            .map(|(p, v)| format!("p{}={v:.3}", fmt_pct(*p)))
            .collect();
        let _ = write!(t, "latency_percentiles_usec_{name}:{}\r\n", parts.join(","));
    }
}

/// The `keyspace` section: each database that holds keys.
fn info_keyspace(ctx: &Ctx, t: &mut String) {
    let srv = ctx.srv;
    t.push_str("# Keyspace\r\n");
    for (db, d) in srv.keyspace.db_summaries().into_iter().enumerate() {
        if d.keys > 0 {
            let _ = write!(
                t,
                "db{db}:keys={},expires={},avg_ttl={}\r\n",
                d.keys,
                d.volatile,
                // (Redis resets it when the database has no TTLs.)
                if d.volatile > 0 {
                    srv.keyspace.avg_ttl(db)
                } else {
                    0
                }
            );
        }
    }
}

/// A percentile as Redis names it: 50, 99, 99.9.
fn fmt_pct(p: f64) -> String {
    let s = format!("{p}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn error_totals(ctx: &Ctx) -> std::collections::HashMap<String, u64> {
    let mut m = std::collections::HashMap::new();
    for w in &ctx.srv.workers {
        for (k, v) in w.errors.lock().iter() {
            *m.entry(k.clone()).or_insert(0) += v;
        }
    }
    m
}

fn policy_name(ctx: &Ctx) -> String {
    ctx.srv
        .config
        .get(&[b"maxmemory-policy".as_slice()])
        .into_iter()
        .next()
        .map(|(_, v)| lossy(&v))
        .unwrap_or_else(|| "noeviction".into())
}

fn human(n: u64) -> String {
    let f = n as f64;
    if f < 1024.0 {
        format!("{n}B")
    } else if f < 1024.0 * 1024.0 {
        format!("{:.2}K", f / 1024.0)
    } else if f < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", f / 1024.0 / 1024.0)
    } else {
        format!("{:.2}G", f / 1024.0 / 1024.0 / 1024.0)
    }
}

fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .and_then(|v| v.parse::<u64>().ok())
                })
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// (user, system) seconds of the worker threads, from /proc.
fn worker_cpu_times() -> (f64, f64) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return (0.0, 0.0);
    };
    // SAFETY: sysconf only reads its integer argument.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let (mut user, mut sys) = (0u64, 0u64);
    for task in tasks.flatten() {
        let path = task.path();
        let is_worker = std::fs::read_to_string(path.join("comm"))
            .is_ok_and(|c| c.starts_with("tessera-worker") || c.starts_with("tessera-spare"));
        if !is_worker {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        // Fields after the parenthesised name: state is the first; utime
        // and stime are the 12th and 13th.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        user += fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0);
        sys += fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    }
    (user as f64 / tick, sys as f64 / tick)
}

/// The kernel's name, release and machine, as Redis's INFO `os` shows them.
fn os_name() -> String {
    // SAFETY: uname fills the zeroed struct we own and nothing else.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to an owned utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    )
}

/// "jemalloc-<version>", as Redis names its allocator.
fn allocator_name() -> String {
    match tikv_jemalloc_ctl::version::read() {
        Ok(v) => format!("jemalloc-{}", v.split('-').next().unwrap_or(v)),
        Err(_) => "jemalloc".to_string(),
    }
}

fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass and nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to an owned rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}
