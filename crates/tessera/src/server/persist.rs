//! When and how the server saves and loads: SAVE, BGSAVE, the `save`
//! rules, saving at shutdown, loading at start-up, and the state INFO
//! persistence and the MISCONF check read. The formats and the snapshot
//! writer live in [`crate::persistence`]; this is the policy around them.

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::state::{unix_ms, ServerState};
use crate::config::MaxmemoryPolicy;
use crate::keyspace::{shard_of, Entry, Touch};
use crate::persistence::rdb::file::{self, Record};
use crate::persistence::rdb::{LoadLimits, RdbError, SaveOptions};
use crate::persistence::save::{self, AccessMode, SaveJob};
use crate::types::stream::NodeLimits;
use crate::util::log;

/// `dir`/`dbfilename`.
pub fn rdb_path(srv: &ServerState) -> PathBuf {
    PathBuf::from(srv.config.dir()).join(srv.config.dbfilename())
}

pub fn save_options(srv: &ServerState) -> SaveOptions {
    SaveOptions {
        compress: srv.config.rdbcompression(),
        list_max_listpack_size: srv.config.list_max_listpack_size(),
    }
}

pub fn load_limits(srv: &ServerState) -> LoadLimits {
    LoadLimits {
        types: crate::types::Limits::from_config(&srv.config),
        stream: NodeLimits {
            max_bytes: srv.config.stream_node_max_bytes() as usize,
            max_entries: srv.config.stream_node_max_entries() as usize,
        },
    }
}

fn access_mode(srv: &ServerState) -> AccessMode {
    match srv.config.maxmemory_policy() {
        MaxmemoryPolicy::AllkeysLru | MaxmemoryPolicy::VolatileLru => AccessMode::Lru,
        MaxmemoryPolicy::AllkeysLfu | MaxmemoryPolicy::VolatileLfu => AccessMode::Lfu {
            decay_minutes: srv.config.lfu_decay_time(),
        },
        _ => AccessMode::None,
    }
}

fn job(srv: &ServerState) -> SaveJob {
    let functions = srv
        .scripts
        .libraries
        .lock()
        .libs
        .values()
        .map(|l| l.code.to_vec())
        .collect();
    SaveJob {
        keyspace: srv.keyspace.clone(),
        path: rdb_path(srv),
        opts: save_options(srv),
        access: access_mode(srv),
        checksum: srv.config.rdbchecksum(),
        functions,
        used_memory: srv.used_memory(),
        aof_base: false,
        key_delay_us: srv.config.rdb_key_save_delay(),
        incremental_fsync: srv.config.rdb_save_incremental_fsync(),
    }
}

/// Changes since the last successful save (INFO's rdb_changes_since_last_save).
pub fn changes_since_save(srv: &ServerState) -> u64 {
    crate::keyspace::effects::total_dirty()
        .saturating_sub(srv.persistence.dirty_at_last_save.load(Relaxed))
}

/// Records a finished save in the status INFO reports.
fn finish(
    srv_status: &crate::persistence::Status,
    result: &Result<save::SaveStats, String>,
    dirty_at_start: u64,
    background: bool,
) {
    let st = srv_status;
    match result {
        Ok(stats) => {
            st.dirty_at_last_save.store(dirty_at_start, Relaxed);
            st.lastsave_s.store(unix_ms() / 1000, Relaxed);
            st.last_cow_bytes.store(stats.cow_bytes, Relaxed);
            if background {
                st.last_bgsave_ok.store(true, Relaxed);
            }
            log::notice("DB saved on disk");
        }
        Err(e) => {
            log::warning(e);
            st.last_failure_ms.store(unix_ms(), Relaxed);
            if background {
                st.last_bgsave_ok.store(false, Relaxed);
            }
        }
    }
}

/// SAVE: a snapshot written by the calling thread. Other clients keep
/// being served meanwhile (only this one waits).
pub fn save_now(srv: &ServerState) -> Result<(), String> {
    if srv.persistence.bgsave_in_progress.load(Relaxed) {
        return Err("ERR Background save already in progress".into());
    }
    let dirty = crate::keyspace::effects::total_dirty();
    let running = save::begin(job(srv)).map_err(|e| format!("ERR {e}"))?;
    srv.persistence.saves_started.fetch_add(1, Relaxed);
    let result = running.write();
    finish(&srv.persistence, &result, dirty, false);
    // A SAVE's outcome counts as the last background save's for MISCONF,
    // as in Redis (lastbgsave_status is set by rdbSave too).
    srv.persistence
        .last_bgsave_ok
        .store(result.is_ok(), Relaxed);
    result.map(|_| ()).map_err(|_| "ERR".to_string())
}

/// BGSAVE: fixes the instant now and writes on a background thread.
pub fn bgsave(srv: &ServerState) -> Result<(), String> {
    let st = &srv.persistence;
    if st
        .bgsave_in_progress
        .compare_exchange(false, true, Relaxed, Relaxed)
        .is_err()
    {
        return Err("ERR Background save already in progress".into());
    }
    let dirty = crate::keyspace::effects::total_dirty();
    let running = match save::begin(job(srv)) {
        Ok(r) => r,
        Err(e) => {
            st.bgsave_in_progress.store(false, Relaxed);
            return Err(format!("ERR {e}"));
        }
    };
    st.saves_started.fetch_add(1, Relaxed);
    st.background_jobs.fetch_add(1, Relaxed);
    st.bgsave_started_ms.store(running.started_ms(), Relaxed);
    st.dirty_at_save_start.store(dirty, Relaxed);
    log::notice(&format!(
        "Background saving started by pid {}",
        std::process::id()
    ));
    let status = srv.persistence.clone();
    let spawned = std::thread::Builder::new()
        .name("tessera-bgsave".into())
        .spawn(move || {
            let started = Instant::now();
            let result = running.write();
            status
                .last_bgsave_time_s
                .store(started.elapsed().as_secs() as i64, Relaxed);
            finish(&status, &result, dirty, true);
            if result.is_ok() {
                log::notice("Background saving terminated with success");
            } else {
                log::warning("Background saving error");
            }
            status.bgsave_started_ms.store(0, Relaxed);
            status.bgsave_in_progress.store(false, Relaxed);
        });
    if let Err(e) = spawned {
        st.bgsave_in_progress.store(false, Relaxed);
        return Err(format!("ERR cannot start the background save: {e}"));
    }
    Ok(())
}

/// Waits for a running background save to end (SAVE after BGSAVE,
/// shutdown, DEBUG RELOAD).
pub fn wait_for_bgsave(srv: &ServerState) {
    while srv.persistence.bgsave_in_progress.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// MISCONF: the last background save failed, save rules exist and
/// stop-writes-on-bgsave-error is on.
pub fn writes_denied(srv: &ServerState) -> bool {
    !srv.persistence.last_bgsave_ok.load(Relaxed)
        && srv.config.stop_writes_on_bgsave_error()
        && !srv.config.save_params().is_empty()
}

/// The save rules and BGSAVE SCHEDULE, checked ten times a second (as
/// serverCron): a rule (seconds, changes) fires when at least `changes`
/// changes happened and `seconds` passed since the last save; after a
/// failure, not again for five seconds.
pub async fn save_rules_cron(srv: Arc<ServerState>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let st = &srv.persistence;
        if st.loading() || st.bgsave_in_progress.load(Relaxed) {
            continue;
        }
        let now_ms = unix_ms();
        let mut reason = None;
        if st.bgsave_scheduled.swap(false, Relaxed) {
            reason = Some("scheduled".to_string());
        } else {
            let changes = changes_since_save(&srv);
            let since_s = now_ms / 1000 - st.lastsave_s.load(Relaxed);
            let retry_ok =
                st.last_bgsave_ok.load(Relaxed) || now_ms - st.last_failure_ms.load(Relaxed) > 5000;
            for (seconds, min_changes) in srv.config.save_params() {
                if changes >= min_changes && since_s >= seconds as i64 && retry_ok {
                    reason = Some(format!(
                        "{min_changes} changes in {seconds} seconds. Saving..."
                    ));
                    break;
                }
            }
        }
        if let Some(reason) = reason {
            if reason != "scheduled" {
                log::notice(&reason);
            }
            if let Err(e) = bgsave(&srv) {
                log::warning(&e);
            }
        }
    }
}

/// The final save of a shutdown: whether it should happen (`SAVE` forces
/// it, `NOSAVE` skips it, otherwise only when save rules exist), and its
/// outcome.
pub fn save_for_shutdown(srv: &ServerState, force_save: bool, nosave: bool) -> Result<(), String> {
    wait_for_bgsave(srv);
    if nosave || (!force_save && srv.config.save_params().is_empty()) {
        return Ok(());
    }
    log::notice("Saving the final RDB snapshot before exiting.");
    match save_now(srv) {
        Ok(()) => Ok(()),
        Err(e) => {
            log::warning("Error trying to save the DB, can't exit.");
            Err(e)
        }
    }
}

/// What a load read.
pub struct LoadReport {
    pub keys_loaded: u64,
    pub keys_expired: u64,
    pub empty_skipped: u64,
}

/// Loads an RDB image into the (empty or not) keyspace, replacing keys it
/// meets again; restores the function libraries in it. `master_expiry`:
/// keys already past their TTL are dropped (a master loading its own
/// file), as Redis does.
pub fn load_image(srv: &ServerState, data: &[u8], merge: bool) -> Result<LoadReport, RdbError> {
    let limits = load_limits(srv);
    let now_ms = unix_ms();
    let key_delay = srv.config.key_load_delay();
    let touch_now_s = (now_ms / 1000) as u32;
    let fresh = super::dispatch::access_clock(srv, now_ms);
    let mut report = LoadReport {
        keys_loaded: 0,
        keys_expired: 0,
        empty_skipped: 0,
    };
    let mut functions = Vec::new();
    let total = data.len() as u64;
    srv.persistence.loading_total_bytes.store(total, Relaxed);
    let mut sink = |rec: Record| -> Result<(), RdbError> {
        match rec {
            Record::Key(k) => {
                if k.expire_ms > 0 && k.expire_ms < now_ms {
                    report.keys_expired += 1;
                    return Ok(());
                }
                let mut entry = Entry::new(k.value, fresh);
                if let (Some(idle), Touch::Lru(_)) = (k.idle_s, fresh) {
                    entry.access = touch_now_s.wrapping_sub(idle as u32);
                } else if let (Some(freq), Touch::Lfu { .. }) = (k.freq, fresh) {
                    let minutes = ((now_ms / 60_000) as u32) & 0xffff;
                    entry.access = (minutes << 8) | freq as u32;
                }
                let mut shard = srv.keyspace.lock_shard(shard_of(&k.key));
                let table = &mut shard.dbs[k.db];
                if table.peek(&k.key).is_some() && !merge {
                    return Err(RdbError::DuplicateKey(
                        String::from_utf8_lossy(&k.key).into_owned(),
                        k.db,
                    ));
                }
                table.insert_expiring(&k.key, entry, k.expire_ms);
                report.keys_loaded += 1;
                if key_delay > 0 {
                    std::thread::sleep(Duration::from_micros(key_delay as u64));
                }
            }
            Record::EmptyKey => report.empty_skipped += 1,
            Record::Function(code) => functions.push(code),
            Record::Aux(name, value) => {
                if name == b"redis-ver" {
                    log::notice(&format!(
                        "Loading RDB produced by version {}",
                        String::from_utf8_lossy(&value)
                    ));
                } else if name == b"ctime" {
                    if let Some(ctime) = crate::util::numbers::parse_i64(&value) {
                        let age = (now_ms / 1000 - ctime).max(0);
                        log::notice(&format!("RDB age {age} seconds"));
                    }
                } else if name == b"used-mem" {
                    if let Some(used) = crate::util::numbers::parse_i64(&value) {
                        log::notice(&format!(
                            "RDB memory usage when created {:.2} Mb",
                            used as f64 / (1024.0 * 1024.0)
                        ));
                    }
                }
            }
            Record::ResizeDb { .. } => {}
        }
        Ok(())
    };
    let summary = file::load(
        data,
        &limits,
        srv.keyspace.num_dbs(),
        srv.config.rdbchecksum(),
        &mut sink,
    )?;
    if summary.checksum_skipped {
        log::warning("RDB file was saved with checksum disabled: no check performed.");
    }
    for code in functions {
        crate::commands::functions::restore_library(srv, &code, merge)
            .map_err(RdbError::Function)?;
    }
    srv.persistence.loading_loaded_bytes.store(total, Relaxed);
    srv.persistence
        .last_load_keys_loaded
        .store(report.keys_loaded, Relaxed);
    srv.persistence
        .last_load_keys_expired
        .store(report.keys_expired, Relaxed);
    Ok(report)
}

/// Loads `dir`/`dbfilename` at start-up when it exists. An unreadable or
/// corrupt file stops the server (the error is returned), as Redis exits
/// rather than start with part of the data.
pub fn load_at_startup(srv: &ServerState) -> Result<(), String> {
    let path = rdb_path(srv);
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("Fatal error loading the DB: {e}. Exiting.")),
    };
    let started = Instant::now();
    let st = &srv.persistence;
    st.loading.store(true, Relaxed);
    st.loading_started_s.store(unix_ms() / 1000, Relaxed);
    let result = load_image(srv, &data, false);
    st.loading.store(false, Relaxed);
    match result {
        Ok(report) => {
            log::notice(&format!(
                "Done loading RDB, keys loaded: {}, keys expired: {}.",
                report.keys_loaded, report.keys_expired
            ));
            if report.empty_skipped > 0 {
                log::notice(&format!(
                    "Done loading RDB, empty keys skipped: {}.",
                    report.empty_skipped
                ));
            }
            log::notice(&format!(
                "DB loaded from disk: {:.3} seconds",
                started.elapsed().as_secs_f64()
            ));
            // The loaded state is the saved state: nothing to save yet.
            st.dirty_at_last_save
                .store(crate::keyspace::effects::total_dirty(), Relaxed);
            Ok(())
        }
        Err(e) => Err(format!(
            "Internal error in RDB reading {}: {e}. Exiting.",
            path.display()
        )),
    }
}

/// DEBUG RELOAD: save (unless `save` is false), empty the data and the
/// function libraries (unless `flush` is false), and load the file back;
/// `merge` lets loaded keys and libraries replace existing ones.
pub fn debug_reload(srv: &ServerState, save: bool, flush: bool, merge: bool) -> Result<(), String> {
    if save {
        save_now(srv)?;
    }
    if flush {
        {
            let mut all = srv.keyspace.lock_all();
            for shard in all.shards_mut() {
                for table in shard.dbs.iter_mut() {
                    drop(table.clear());
                }
            }
        }
        *srv.scripts.libraries.lock() = Default::default();
        srv.scripts.generation.fetch_add(1, Relaxed);
    }
    let data = std::fs::read(rdb_path(srv)).map_err(|e| {
        log::warning(&format!("Failed loading the RDB file: {e}"));
        "ERR Error trying to load the RDB dump".to_string()
    })?;
    load_image(srv, &data, merge).map_err(|e| {
        log::warning(&format!("Error loading the RDB file: {e}"));
        "ERR Error trying to load the RDB dump".to_string()
    })?;
    log::notice("DB reloaded by DEBUG RELOAD");
    Ok(())
}
