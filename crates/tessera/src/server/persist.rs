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

/// Whether Redis would validate a payload's compact blobs deeply, which
/// is what INFO's `dump_payload_sanitizations` counts. Tessera decodes
/// every value into its own structures, so it always checks as deeply as
/// `yes` does; this only decides what is counted. `client` is the one
/// running RESTORE, `None` for a file or a full sync being loaded.
pub fn deep_sanitize(srv: &ServerState, client: Option<&crate::server::client::Client>) -> bool {
    match srv.config.sanitize_dump_payload().as_str() {
        "yes" => true,
        "clients" => client.is_some_and(|c| {
            !c.from_master && c.user.with_rules(|r| r.sanitize_payload) != Some(false)
        }),
        _ => false,
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

/// The snapshot job of this server's current settings.
pub fn save_job(srv: &ServerState) -> SaveJob {
    job(srv)
}

/// A save of the RDB file that records the replication stream's position
/// at its instant, as Redis's files do on a replica and on a master with
/// a backlog.
struct RdbSave {
    running: save::Running,
    /// A master's position, learnt once the stream reaches the instant.
    mark: Option<crate::server::replication::StreamMark>,
}

fn begin_rdb_save(srv: &ServerState) -> Result<RdbSave, String> {
    use crate::server::replication::{replica_position, StreamMark};
    let mut j = job(srv);
    if srv.repl.is_replica() {
        // The apply threads drained: the position is what the snapshot holds.
        let _quiet = srv.repl.quiesce();
        j.repl = replica_position(srv);
        let running = save::begin(j)?;
        return Ok(RdbSave {
            running,
            mark: None,
        });
    }
    let mark = StreamMark::for_master_snapshot(srv);
    let running = save::begin_at(j, &mut |seq| {
        if let Some(m) = &mark {
            m.fix(seq);
        }
    })?;
    Ok(RdbSave { running, mark })
}

impl RdbSave {
    fn started_ms(&self) -> i64 {
        self.running.started_ms()
    }

    /// Writes the file (on the thread that is to wait for it).
    fn write(self, srv: &ServerState) -> Result<save::SaveStats, String> {
        let mut running = self.running;
        if let Some(m) = &self.mark {
            running.record_position(m.position(srv));
        }
        running.write()
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
        as_commands: None,
        key_delay_us: srv.config.rdb_key_save_delay(),
        incremental_fsync: srv.config.rdb_save_incremental_fsync(),
        repl: None,
        include_keys: true,
        cancel: Arc::default(),
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
    let running = begin_rdb_save(srv).map_err(|e| format!("ERR {e}"))?;
    let result = running.write(srv);
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
    let running = match begin_rdb_save(srv) {
        Ok(r) => r,
        Err(e) => {
            st.bgsave_in_progress.store(false, Relaxed);
            return Err(format!("ERR {e}"));
        }
    };
    st.saves_started.fetch_add(1, Relaxed);
    st.background_jobs.fetch_add(1, Relaxed);
    st.bgsave_started_ms.store(running.started_ms(), Relaxed);
    *st.bgsave_cancel.lock() = Some(running.running.cancel_handle());
    log::notice(&format!(
        "Background saving started by pid {}",
        std::process::id()
    ));
    let status = srv.persistence.clone();
    let server = srv.me();
    let spawned = std::thread::Builder::new()
        .name("tessera-bgsave".into())
        .spawn(move || {
            save::Running::yield_to_workers();
            let started = Instant::now();
            let result = running.write(&server);
            status
                .last_bgsave_time_s
                .store(started.elapsed().as_secs() as i64, Relaxed);
            match &result {
                // Stopped on purpose: neither a save nor a failure (as
                // Redis's child killed with SIGUSR1).
                Err(e) if e == save::CANCELLED => {
                    log::warning("Background saving stopped before it ended")
                }
                Ok(_) => {
                    finish(&status, &result, dirty, true);
                    log::notice("Background saving terminated with success");
                }
                Err(_) => {
                    finish(&status, &result, dirty, true);
                    log::warning("Background saving error");
                }
            }
            *status.bgsave_cancel.lock() = None;
            status.bgsave_started_ms.store(0, Relaxed);
            status.bgsave_in_progress.store(false, Relaxed);
        });
    if let Err(e) = spawned {
        st.bgsave_in_progress.store(false, Relaxed);
        return Err(format!("ERR cannot start the background save: {e}"));
    }
    Ok(())
}

/// FLUSHALL with save rules, as Redis's: a background save still writing
/// the old data is stopped, then the (now empty) dataset is saved at once,
/// so a restart cannot bring back what was flushed. A failed save is
/// logged and counted as SAVE's failures are; the flush stands.
///
/// Inside EXEC or a script, whose shards this thread holds, the save runs
/// once they are released, before the reply.
pub fn save_after_flushall(srv: &ServerState) {
    if srv.config.save_params().is_empty() || srv.persistence.loading.load(Relaxed) {
        return;
    }
    let srv = srv.me();
    crate::keyspace::after_hold(Box::new(move || {
        if let Some(cancel) = srv.persistence.bgsave_cancel.lock().as_ref() {
            cancel.store(true, Relaxed);
        }
        wait_for_bgsave(&srv);
        let _ = save_now(&srv);
    }));
}

/// Waits for a running background save to end (SAVE after BGSAVE,
/// shutdown, DEBUG RELOAD).
pub fn wait_for_bgsave(srv: &ServerState) {
    while srv.persistence.bgsave_in_progress.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// MISCONF: the last background save failed, save rules exist and
/// stop-writes-on-bgsave-error is on; or the AOF cannot be written.
pub fn writes_denied(srv: &ServerState) -> Option<crate::commands::CmdError> {
    if !srv.persistence.last_bgsave_ok.load(Relaxed)
        && srv.config.stop_writes_on_bgsave_error()
        && !srv.config.save_params().is_empty()
    {
        return Some(crate::commands::CmdError::Misconf);
    }
    // (One load on every write; the lock only while the AOF is failing.)
    if srv.persistence.aof_write_failed.load(Relaxed) {
        let aof = srv.aof.lock().clone();
        if let Some(aof) = aof {
            return Some(crate::commands::CmdError::msg(format!(
                "MISCONF Errors writing to the AOF file: {}",
                aof.last_error.lock()
            )));
        }
    }
    None
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
        if st.loading() {
            continue;
        }
        if !st.bgsave_in_progress.load(Relaxed) && !st.aof_rewrite_in_progress.load(Relaxed) {
            let scheduled = st.aof_rewrite_scheduled.load(Relaxed);
            let growth = if scheduled {
                None
            } else {
                aof_rewrite_due(&srv)
            };
            if let Some(g) = growth {
                log::notice(&format!(
                    "Starting automatic rewriting of AOF on {g}% growth"
                ));
            }
            if scheduled || growth.is_some() {
                st.aof_rewrite_scheduled.store(false, Relaxed);
                let enable = st.aof_enable_scheduled.swap(false, Relaxed);
                if let Err(e) = bgrewriteaof(&srv, enable) {
                    log::warning(&e);
                }
            }
        }
        if st.bgsave_in_progress.load(Relaxed) || st.aof_rewrite_in_progress.load(Relaxed) {
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
    /// The `repl-*` aux fields, when the file has all three.
    pub position: Option<crate::server::replication::SavedPosition>,
}

/// Loads an RDB image into the (empty or not) keyspace, replacing keys it
/// meets again; restores the function libraries in it. `master_expiry`:
/// keys already past their TTL are dropped (a master loading its own
/// file), as Redis does.
pub fn load_image(srv: &ServerState, data: &[u8], merge: bool) -> Result<LoadReport, RdbError> {
    load_into(srv, data, &mut LoadTarget::Live { merge })
}

/// Where a load puts what it reads: the live keyspace, or tables of its
/// own while the live data keeps serving (a replica's async load).
enum LoadTarget {
    /// `merge`: a key met again replaces the one there.
    Live {
        merge: bool,
    },
    Staged(StagedData),
}

/// A data set loaded beside the live one, to take its place at once.
pub struct StagedData {
    /// Indexed by shard, then database.
    tables: Vec<Vec<crate::keyspace::table::Table>>,
    /// The function libraries' code, compiled when the data goes live.
    functions: Vec<Vec<u8>>,
}

/// Loads an RDB image into tables of its own, leaving the live data as it
/// is and serving: `repl-diskless-load swapdb` from the same history, as
/// Redis 7's async loading. [`swap_in`] then puts it in place.
pub fn load_image_aside(
    srv: &ServerState,
    data: &[u8],
) -> Result<(StagedData, LoadReport), RdbError> {
    use crate::keyspace::{table::Table, NUM_SHARDS};
    let dbs = srv.keyspace.num_dbs();
    let mut target = LoadTarget::Staged(StagedData {
        tables: (0..NUM_SHARDS)
            .map(|_| (0..dbs).map(Table::new).collect())
            .collect(),
        functions: Vec::new(),
    });
    let loaded = load_into(srv, data, &mut target);
    let LoadTarget::Staged(staged) = target else {
        unreachable!("the target stays what it was made");
    };
    match loaded {
        Ok(report) => Ok((staged, report)),
        Err(e) => {
            super::lazyfree::free_later(staged.tables);
            Err(e)
        }
    }
}

/// Replaces the live data and function libraries with `staged` in one
/// step under every shard's lock (no client sees a mix); the old data is
/// freed in the background. The libraries are compiled first: when one
/// does not load, nothing changes.
pub fn swap_in(srv: &ServerState, staged: StagedData) -> Result<(), String> {
    let mut libraries = match crate::commands::functions::build_libraries(srv, &staged.functions) {
        Ok(libraries) => libraries,
        Err(e) => {
            super::lazyfree::free_later(staged.tables);
            return Err(e);
        }
    };
    let now_ms = unix_ms();
    let mut old = Vec::new();
    {
        let mut all = srv.keyspace.lock_all();
        for (shard, tables) in all.shards_mut().zip(staged.tables) {
            for (table, new) in shard.dbs.iter_mut().zip(tables) {
                table.touch_watched_existing(Some(&new), now_ms);
                old.push(table.clear());
                table.restore(new);
            }
        }
        std::mem::swap(&mut *srv.scripts.libraries.lock(), &mut libraries);
        srv.scripts.generation.fetch_add(1, Relaxed);
    }
    super::lazyfree::free_later((old, libraries));
    Ok(())
}

fn load_into(
    srv: &ServerState,
    data: &[u8],
    target: &mut LoadTarget,
) -> Result<LoadReport, RdbError> {
    let limits = load_limits(srv);
    let now_ms = unix_ms();
    let key_delay = srv.config.key_load_delay();
    let touch_now_s = (now_ms / 1000) as u32;
    let fresh = super::dispatch::access_clock(srv, now_ms);
    let mut report = LoadReport {
        keys_loaded: 0,
        keys_expired: 0,
        empty_skipped: 0,
        position: None,
    };
    let (mut stream_db, mut replid, mut repl_offset) = (None, None, None);
    let mut functions = Vec::new();
    let total = data.len() as u64;
    let st = &srv.persistence;
    st.loading_total_bytes.store(total, Relaxed);
    // INFO shows these counts growing while the load runs, as Redis does.
    st.last_load_keys_loaded.store(0, Relaxed);
    st.last_load_keys_expired.store(0, Relaxed);
    let mut sink = |rec: Record| -> Result<(), RdbError> {
        match rec {
            Record::Key(k) => {
                // (A replica keeps them: its master's DEL will come.)
                if k.expire_ms > 0 && k.expire_ms < now_ms && !srv.repl.is_replica() {
                    report.keys_expired += 1;
                    st.last_load_keys_expired.fetch_add(1, Relaxed);
                    return Ok(());
                }
                let mut entry = Entry::new(k.value, fresh);
                if let (Some(idle), Touch::Lru(_)) = (k.idle_s, fresh) {
                    entry.access = touch_now_s.wrapping_sub(idle as u32);
                } else if let (Some(freq), Touch::Lfu { .. }) = (k.freq, fresh) {
                    let minutes = ((now_ms / 60_000) as u32) & 0xffff;
                    entry.access = (minutes << 8) | freq as u32;
                }
                let duplicate =
                    || RdbError::DuplicateKey(String::from_utf8_lossy(&k.key).into_owned(), k.db);
                let mut live_shard;
                let (table, merge) = match target {
                    LoadTarget::Live { merge } => {
                        live_shard = srv.keyspace.lock_shard(shard_of(&k.key));
                        (&mut live_shard.dbs[k.db], *merge)
                    }
                    LoadTarget::Staged(staged) => {
                        (&mut staged.tables[shard_of(&k.key)][k.db], false)
                    }
                };
                if table.peek(&k.key).is_some() && !merge {
                    return Err(duplicate());
                }
                table.insert_expiring(&k.key, entry, k.expire_ms);
                report.keys_loaded += 1;
                st.last_load_keys_loaded.fetch_add(1, Relaxed);
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
                } else if name == b"repl-stream-db" {
                    stream_db = crate::util::numbers::parse_i64(&value);
                } else if name == b"repl-id" {
                    replid = Some(String::from_utf8_lossy(&value).into_owned());
                } else if name == b"repl-offset" {
                    repl_offset = crate::util::numbers::parse_i64(&value);
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
    if deep_sanitize(srv, None) {
        srv.persistence
            .dump_payload_sanitizations
            .fetch_add(summary.packed_blobs, Relaxed);
    }
    match target {
        LoadTarget::Live { merge } => {
            for code in functions {
                crate::commands::functions::restore_library(srv, &code, *merge)
                    .map_err(RdbError::Function)?;
            }
        }
        LoadTarget::Staged(staged) => staged.functions = functions,
    }
    srv.persistence.loading_loaded_bytes.store(total, Relaxed);
    if let (Some(stream_db), Some(replid), Some(offset)) = (stream_db, replid, repl_offset) {
        report.position = Some(crate::server::replication::SavedPosition {
            stream_db,
            replid,
            offset,
        });
    }
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
            if let Some(position) = &report.position {
                if srv.repl.is_replica() {
                    crate::server::replication::restore_position(srv, position);
                } else {
                    crate::server::replication::continue_history_as_master(srv, position);
                }
            }
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
        empty_data(srv);
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

/// Empties every database and the function libraries, propagating
/// nothing (what a reload replaces).
pub fn empty_data(srv: &ServerState) {
    empty_data_then(srv, false);
}

/// [`empty_data`], with the old data freed on the lazyfree thread when
/// `lazy` (a replica's full sync under `replica-lazy-flush yes`), so the
/// load starts at once.
pub fn empty_data_then(srv: &ServerState, lazy: bool) {
    let mut old = Vec::new();
    {
        let mut all = srv.keyspace.lock_all();
        for shard in all.shards_mut() {
            for table in shard.dbs.iter_mut() {
                let cleared = table.clear();
                if lazy {
                    old.push(cleared);
                }
            }
        }
    }
    if !old.is_empty() {
        super::lazyfree::free_later(old);
    }
    srv.keyspace.replica_ttls.clear();
    *srv.scripts.libraries.lock() = Default::default();
    srv.scripts.generation.fetch_add(1, Relaxed);
}

/// The data and function libraries a `repl-diskless-load swapdb` sync set
/// aside while it loads, to be put back if the load fails.
pub struct SetAside {
    tables: Vec<Vec<crate::keyspace::table::Table>>,
    libraries: crate::scripting::functions::Libraries,
}

/// Empties the data as [`empty_data`] does, keeping what it held.
pub fn set_aside_data(srv: &ServerState) -> SetAside {
    srv.keyspace.replica_ttls.clear();
    let tables = {
        let mut all = srv.keyspace.lock_all();
        all.shards_mut()
            .map(|shard| shard.dbs.iter_mut().map(|t| t.clear()).collect())
            .collect()
    };
    let libraries = std::mem::take(&mut *srv.scripts.libraries.lock());
    srv.scripts.generation.fetch_add(1, Relaxed);
    SetAside { tables, libraries }
}

/// Replaces the data with what [`set_aside_data`] kept (the half-loaded
/// data is freed in the background).
pub fn restore_data(srv: &ServerState, kept: SetAside) {
    let mut partial = Vec::new();
    {
        let mut all = srv.keyspace.lock_all();
        for (shard, tables) in all.shards_mut().zip(kept.tables) {
            for (table, old) in shard.dbs.iter_mut().zip(tables) {
                partial.push(table.clear());
                table.restore(old);
            }
        }
    }
    super::lazyfree::free_later(partial);
    *srv.scripts.libraries.lock() = kept.libraries;
    srv.scripts.generation.fetch_add(1, Relaxed);
}

/// Whether every database is empty (and no function is loaded).
pub fn data_is_empty(srv: &ServerState) -> bool {
    let keys: usize = (0..srv.config.databases())
        .map(|db| srv.keyspace.dbsize(db))
        .sum();
    keys == 0 && srv.scripts.libraries.lock().libs.is_empty()
}

// ---------------------------------------------------------------- AOF

use crate::persistence::aof::{self, manifest::Manifest, reader, Aof, Fsync, Layout};

pub fn aof_layout(srv: &ServerState) -> Layout {
    Layout {
        dir: PathBuf::from(srv.config.dir()).join(srv.config.appenddirname()),
        basename: srv.config.appendfilename(),
    }
}

/// Runs AOF commands on a client of their own, without admission checks,
/// as Redis's fake AOF client does.
struct Replayer<'a> {
    srv: &'a ServerState,
    client: super::client::Client,
    out: tessera_resp::encode::ReplyBuf,
    commands: u64,
}

impl<'a> Replayer<'a> {
    fn new(srv: &'a ServerState) -> Replayer<'a> {
        use super::client::{Client, ClientInfo, PeerAddr};
        let id = srv.clients.next_id();
        let addr = PeerAddr::Unix(Arc::from("aof"));
        let info = Arc::new(ClientInfo::new(id, addr.clone(), addr, -1, unix_ms()));
        let mut client = Client::new(srv, id, info, srv.acceptor.clone());
        client.replaying = true;
        client.authenticated = true;
        Replayer {
            srv,
            client,
            out: tessera_resp::encode::ReplyBuf::new(tessera_resp::encode::Protocol::Resp2),
            commands: 0,
        }
    }

    fn run(&mut self, args: Vec<Vec<u8>>) -> Result<(), String> {
        let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        super::dispatch::execute_now(self.srv, &mut self.client, &mut self.out, &refs);
        self.out.buf.clear();
        self.commands += 1;
        Ok(())
    }
}

/// Loads one AOF file of commands (a base without preamble or an
/// incremental file). `last`: a torn end may be cut off (the last file
/// only, with aof-load-truncated).
fn replay_file(srv: &ServerState, path: &std::path::Path, last: bool) -> Result<u64, String> {
    let data = std::fs::read(path)
        .map_err(|e| format!("Can't open the append-only file {}: {e}", path.display()))?;
    let mut rp = Replayer::new(srv);
    let mark = |name: &[u8]| match crate::commands::lookup(name) {
        Some((_, spec)) if spec.has(crate::commands::flags::OPENS_MULTI) => reader::TxMark::Opens,
        Some((_, spec)) if spec.has(crate::commands::flags::RUNS_QUEUED) => reader::TxMark::Closes,
        _ => reader::TxMark::Neither,
    };
    let end = reader::read_commands(&data, &mark, &mut |args| rp.run(args))?;
    let name = path.display();
    match end {
        reader::End::Complete => {}
        reader::End::Torn {
            valid_len,
            open_multi,
        } => {
            if !last || !srv.config.aof_load_truncated() {
                return Err(format!(
                    "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
                ));
            }
            if open_multi {
                log::warning("Revert incomplete MULTI/EXEC transaction in AOF file");
            }
            log::warning(&format!(
                "!!! Warning: short read while loading the AOF file {name}!!!"
            ));
            log::warning(&format!(
                "!!! Truncating the AOF {name} at offset {valid_len} !!!"
            ));
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| format!("Error truncating the AOF file {name}: {e}"))?;
            f.set_len(valid_len as u64)
                .and_then(|_| f.sync_all())
                .map_err(|e| format!("Error truncating the AOF file {name}: {e}"))?;
            log::warning(&format!(
                "AOF {name} loaded anyway because aof-load-truncated is enabled"
            ));
        }
        reader::End::Corrupt { at } => {
            return Err(format!(
                "Bad file format reading the append only file {name} (at offset {at}): make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
            ));
        }
    }
    Ok(rp.commands)
}

/// Loads the AOF named by the manifest: its base (an RDB image or
/// commands), then each incremental file in order.
fn load_aof(srv: &ServerState, layout: &Layout, m: &Manifest) -> Result<(), String> {
    let started = Instant::now();
    if let Some(base) = &m.base {
        let path = layout.path(&base.name);
        let data = std::fs::read(&path)
            .map_err(|e| format!("Can't open the append-only file {}: {e}", base.name))?;
        if data.starts_with(b"REDIS") {
            log::notice("Reading RDB base file on AOF loading...");
            load_image(srv, &data, false).map_err(|e| {
                format!(
                    "Bad file format reading the append only file {}: {e}",
                    base.name
                )
            })?;
            log::notice("Reading the remaining AOF tail...");
        } else {
            replay_file(srv, &path, m.incrs.is_empty())?;
        }
        log::notice(&format!(
            "DB loaded from base file {}: {:.3} seconds",
            base.name,
            started.elapsed().as_secs_f64()
        ));
    }
    for (i, incr) in m.incrs.iter().enumerate() {
        let path = layout.path(&incr.name);
        if !path.exists() {
            continue;
        }
        replay_file(srv, &path, i + 1 == m.incrs.len())?;
        log::notice(&format!(
            "DB loaded from incr file {}: {:.3} seconds",
            incr.name,
            started.elapsed().as_secs_f64()
        ));
    }
    log::notice(&format!(
        "DB loaded from append only file: {:.3} seconds",
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// DEBUG LOADAOF: what the AOF writer holds reaches its files, the data is
/// emptied and the append-only directory loaded back (the caller holds
/// every shard). As in Redis, an AOF that is missing or does not load
/// ends the server; what was replayed is not propagated again.
pub fn debug_loadaof(srv: &ServerState) {
    let aof = srv.aof.lock().clone();
    if let Some(aof) = aof {
        aof.drain();
    }
    empty_data(srv);
    let layout = aof_layout(srv);
    let loaded = match layout.load_manifest() {
        Ok(Some(m)) if m.base.is_some() || !m.incrs.is_empty() => load_aof(srv, &layout, &m),
        Ok(_) => Err(format!(
            "DEBUG LOADAOF: no append only file in {}",
            layout.dir.display()
        )),
        Err(e) => Err(e),
    };
    if let Err(e) = loaded {
        log::warning(&e);
        log::warning("DEBUG LOADAOF failed to load the AOF. Exiting.");
        std::process::exit(1);
    }
    srv.persistence
        .dirty_at_last_save
        .store(crate::keyspace::effects::total_dirty(), Relaxed);
    log::warning("Append Only File loaded by DEBUG LOADAOF");
}

/// Writes a base file of the current data at `path`: an RDB image, or
/// commands when `aof-use-rdb-preamble` is off.
fn write_base(srv: &ServerState, path: PathBuf) -> Result<u64, String> {
    let mut j = base_job(srv);
    j.path = path.clone();
    save::begin(j)?.write()?;
    Ok(aof::file_size(&path))
}

/// A save that writes an AOF base, in the form `aof-use-rdb-preamble` says.
fn base_job(srv: &ServerState) -> SaveJob {
    let mut j = job(srv);
    j.aof_base = true;
    if !srv.config.aof_use_rdb_preamble() {
        j.as_commands = Some(srv.config.aof_timestamp_enabled());
    }
    j
}

/// Turns the AOF on at start-up: loads it (when a manifest exists) or
/// writes a first base of the data loaded so far, opens the incremental
/// file to append to, and attaches the writer to the stream.
pub fn open_aof_at_startup(srv: &ServerState) -> Result<(), String> {
    let layout = aof_layout(srv);
    std::fs::create_dir_all(&layout.dir).map_err(|e| {
        format!(
            "Can't create the append-only directory {}: {e}",
            layout.dir.display()
        )
    })?;
    let mut m = layout.load_manifest()?.unwrap_or_default();
    if m.base.is_some() || !m.incrs.is_empty() {
        load_aof(srv, &layout, &m)?;
    }
    // The stream is fed from here on: nothing may run in between (clients
    // get -LOADING until this is done).
    let aof = attach_aof_writer(srv);
    if m.base.is_none() && m.incrs.is_empty() {
        let base = m.new_base(&layout.basename, srv.config.aof_use_rdb_preamble());
        write_base(srv, layout.path(&base.name))?;
        log::notice(&format!(
            "Creating AOF base file {} on server start",
            base.name
        ));
    }
    let incr = match m.incrs.last() {
        Some(i) => i.clone(),
        None => {
            let i = m.new_incr(&layout.basename);
            log::notice(&format!(
                "Creating AOF incr file {} on server start",
                i.name
            ));
            i
        }
    };
    let file = layout
        .open_incr(&incr.name)
        .map_err(|e| format!("Can't open the append-only file {}: {e}", incr.name))?;
    m.persist(&layout.dir, &layout.basename)
        .map_err(|e| format!("Can't persist the AOF manifest: {e}"))?;
    aof.switch_at(0, file);
    aof.current_size
        .store(aof::file_size(&layout.path(&incr.name)), Relaxed);
    if let Some(b) = &m.base {
        aof.base_size
            .store(aof::file_size(&layout.path(&b.name)), Relaxed);
    }
    install_aof(srv, aof);
    Ok(())
}

/// A new AOF writer, with no file yet (a `switch_at` gives it one), fed by
/// the stream from now on.
fn attach_aof_writer(srv: &ServerState) -> Arc<Aof> {
    let aof = Aof::start(
        None,
        Fsync::from_name(&srv.config.appendfsync()),
        srv.config.aof_timestamp_enabled(),
        (0, 0),
        srv.persistence.aof_write_failed.clone(),
        fsync_paused(srv),
    );
    let consumer: Arc<dyn crate::journal::Consumer> = aof.clone();
    srv.journal.attach(consumer);
    aof
}

/// no-appendfsync-on-rewrite: no fsync while a BGSAVE or an AOF rewrite
/// runs (read at every write, so CONFIG SET takes effect at once).
fn fsync_paused(srv: &ServerState) -> aof::FsyncPaused {
    let config = srv.config.clone();
    let st = srv.persistence.clone();
    Box::new(move || {
        config.no_appendfsync_on_rewrite()
            && (st.bgsave_in_progress.load(Relaxed) || st.aof_rewrite_in_progress.load(Relaxed))
    })
}

fn install_aof(srv: &ServerState, aof: Arc<Aof>) {
    let always = aof.fsync_policy() == Fsync::Always;
    *srv.aof.lock() = Some(aof);
    srv.persistence.aof_waits.store(always, Relaxed);
    srv.persistence.aof_enabled.store(true, Relaxed);
}

/// BGREWRITEAOF (and switching the AOF on at run time): a new base from a
/// snapshot and a new incremental file that takes every unit from the
/// snapshot's instant on, written on a background thread; the manifest
/// names the new incremental file at once (so nothing written meanwhile
/// depends on the rewrite finishing) and the new base when it is done.
pub fn bgrewriteaof(srv: &ServerState, enable: bool) -> Result<(), String> {
    let st = &srv.persistence;
    if st
        .aof_rewrite_in_progress
        .compare_exchange(false, true, Relaxed, Relaxed)
        .is_err()
    {
        return Err("ERR Background append only file rewriting already in progress".into());
    }
    let fail = |e: String| {
        st.aof_rewrite_in_progress.store(false, Relaxed);
        e
    };
    let layout = aof_layout(srv);
    std::fs::create_dir_all(&layout.dir).map_err(|e| fail(format!("ERR {e}")))?;
    let mut m = layout.load_manifest().map_err(&fail)?.unwrap_or_default();
    // Attach first (when switching on), so every unit from the instant on
    // reaches the writer. With the AOF off and not being switched on, the
    // rewrite only writes a base (as Redis's BGREWRITEAOF then does).
    let existing = srv.aof.lock().clone();
    let aof = match existing {
        Some(a) => Some(a),
        None if enable => Some(attach_aof_writer(srv)),
        None => None,
    };
    let rdb_base = srv.config.aof_use_rdb_preamble();
    let base = m.clone().new_base(&layout.basename, rdb_base);
    let mut file = None;
    let mut incr_name = None;
    if aof.is_some() {
        let incr = m.new_incr(&layout.basename);
        file = Some(
            layout
                .open_incr(&incr.name)
                .map_err(|e| fail(format!("ERR {e}")))?,
        );
        m.persist(&layout.dir, &layout.basename)
            .map_err(|e| fail(format!("ERR {e}")))?;
        incr_name = Some(incr.name);
    }
    let mut j = base_job(srv);
    j.path = layout.path(&base.name);
    j.incremental_fsync = srv.config.aof_rewrite_incremental_fsync();
    // At the instant, under every shard lock: units from it on go to the
    // new incremental file.
    let running = save::begin_at(j, &mut |seq| {
        if let (Some(a), Some(f)) = (&aof, file.take()) {
            a.switch_at(seq, f);
        }
    })
    .map_err(|e| fail(format!("ERR {e}")))?;
    if let Some(a) = &aof {
        if srv.aof.lock().is_none() {
            install_aof(srv, a.clone());
        }
    }
    st.background_jobs.fetch_add(1, Relaxed);
    st.aof_rewrite_started_ms.store(unix_ms(), Relaxed);
    *st.aof_rewrite_cancel.lock() = Some(running.cancel_handle());
    log::notice(&format!(
        "Background append only file rewriting started by pid {}",
        std::process::id()
    ));
    let status = srv.persistence.clone();
    std::thread::Builder::new()
        .name("tessera-aofrw".into())
        .spawn(move || {
            save::Running::yield_to_workers();
            let started = Instant::now();
            let st = &status;
            let result = running.write().and_then(|stats| {
                let mut m = m;
                m.new_base(&layout.basename, rdb_base);
                if aof.is_some() {
                    m.retire_incrs_before_last();
                } else {
                    for mut f in m.incrs.drain(..) {
                        f.kind = aof::manifest::Kind::History;
                        m.history.push(f);
                    }
                }
                m.persist(&layout.dir, &layout.basename).map_err(|e| {
                    format!("Error trying to rename the temporary AOF manifest: {e}")
                })?;
                // History files are no longer named by anything durable.
                for h in std::mem::take(&mut m.history) {
                    let _ = std::fs::remove_file(layout.path(&h.name));
                }
                let _ = m.persist(&layout.dir, &layout.basename);
                Ok(stats)
            });
            st.aof_last_rewrite_time_s
                .store(started.elapsed().as_secs() as i64, Relaxed);
            match result {
                Ok(stats) => {
                    st.aof_last_rewrite_ok.store(true, Relaxed);
                    st.aof_last_cow_bytes.store(stats.cow_bytes, Relaxed);
                    st.aof_rewrites.fetch_add(1, Relaxed);
                    if let (Some(a), Some(name)) = (&aof, &incr_name) {
                        a.base_size.store(stats.bytes, Relaxed);
                        a.current_size
                            .store(aof::file_size(&layout.path(name)), Relaxed);
                    }
                    log::notice("Background AOF rewrite terminated with success");
                    log::notice("Background AOF rewrite finished successfully");
                }
                // (Stopped by CONFIG SET appendonly no, which said so: as
                // Redis's killed child, not a failure.)
                Err(e) if e == save::CANCELLED => {}
                Err(e) => {
                    st.aof_last_rewrite_ok.store(false, Relaxed);
                    log::warning(&format!("Background AOF rewrite failed: {e}"));
                }
            }
            *st.aof_rewrite_cancel.lock() = None;
            st.aof_rewrite_started_ms.store(0, Relaxed);
            st.aof_rewrite_in_progress.store(false, Relaxed);
        })
        .map_err(|e| fail(format!("ERR {e}")))?;
    Ok(())
}

/// CONFIG SET appendonly no: the writer is flushed and detached, and a
/// rewrite in progress is stopped (as Redis kills its child) and waited
/// for, as is a scheduled one dropped.
pub fn stop_aof(srv: &ServerState) {
    let Some(aof) = srv.aof.lock().take() else {
        return;
    };
    srv.persistence.aof_waits.store(false, Relaxed);
    srv.persistence.aof_enabled.store(false, Relaxed);
    let consumer: Arc<dyn crate::journal::Consumer> = aof.clone();
    srv.journal.detach(&consumer);
    aof.flush_and_stop();
    let st = &srv.persistence;
    st.aof_rewrite_scheduled.store(false, Relaxed);
    let cancel = st.aof_rewrite_cancel.lock().clone();
    if let Some(cancel) = cancel {
        log::notice(&format!(
            "Killing running AOF rewrite child: {}",
            std::process::id()
        ));
        cancel.store(true, Relaxed);
        // (The rewrite checks between keys; a bound in case a huge one
        // is being written.)
        let deadline = Instant::now() + Duration::from_secs(10);
        while st.aof_rewrite_in_progress.load(Relaxed) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Before exiting: everything the AOF holds reaches the disk.
pub fn flush_aof_for_shutdown(srv: &ServerState) {
    let aof = srv.aof.lock().clone();
    if let Some(aof) = aof {
        log::notice("Calling fsync() on the AOF file.");
        aof.flush_and_stop();
    }
}

/// The automatic rewrite (auto-aof-rewrite-percentage / -min-size): the
/// AOF's growth over its base in percent, when a rewrite is due.
pub fn aof_rewrite_due(srv: &ServerState) -> Option<u64> {
    let aof = srv.aof.lock().clone()?;
    let pct = srv.config.auto_aof_rewrite_percentage();
    let min = srv.config.auto_aof_rewrite_min_size().max(0) as u64;
    if pct <= 0 || srv.persistence.aof_rewrite_in_progress.load(Relaxed) {
        return None;
    }
    let current = aof.current_size.load(Relaxed) + aof.base_size.load(Relaxed);
    let base = aof.base_size.load(Relaxed).max(1);
    let growth = current.saturating_sub(base) * 100 / base;
    (current > min && growth >= pct as u64).then_some(growth)
}

/// CONFIG SET appendonly: on starts a rewrite that writes the first base
/// (as Redis's startAppendOnly), after the transaction when `in_exec`; off
/// stops the writer, or the start still scheduled.
pub fn appendonly_changed(srv: &ServerState, in_exec: bool) -> Result<(), String> {
    let st = &srv.persistence;
    let on = srv.config.appendonly();
    let running = srv.aof.lock().is_some();
    let starting = st.aof_enable_scheduled.load(Relaxed);
    if on && !running && !starting {
        if in_exec {
            st.aof_enable_scheduled.store(true, Relaxed);
            st.aof_rewrite_scheduled.store(true, Relaxed);
            log::warning("AOF was enabled during a transaction. An AOF background was scheduled to start when possible.");
            return Ok(());
        }
        bgrewriteaof(srv, true).map_err(|e| {
            log::warning(&format!("Redis needs to enable the AOF but can't trigger a background AOF rewrite operation: {e}"));
            "Unable to turn on AOF. Check server logs.".to_string()
        })?;
    } else if !on && running {
        stop_aof(srv);
    } else if !on && starting {
        st.aof_enable_scheduled.store(false, Relaxed);
        st.aof_rewrite_scheduled.store(false, Relaxed);
    }
    Ok(())
}

/// CONFIG SET appendfsync.
pub fn appendfsync_changed(srv: &ServerState) {
    let policy = Fsync::from_name(&srv.config.appendfsync());
    let aof = srv.aof.lock().clone();
    if let Some(aof) = aof {
        aof.set_fsync(policy);
        srv.persistence
            .aof_waits
            .store(policy == Fsync::Always, Relaxed);
    }
}
