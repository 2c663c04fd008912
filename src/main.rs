//! `tessera-server`: parses redis-server style arguments and configuration,
//! then runs the server until SHUTDOWN.

use tikv_jemallocator::Jemalloc;

// jemalloc: low fragmentation for many small allocations, and the
// statistics that INFO's used_memory and maxmemory enforcement read.
#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;

/// jemalloc options: a background thread returns freed pages to the OS
/// within about a second (instead of ten), so RSS follows the data after
/// tables grow and their old buffers are freed.
#[allow(non_upper_case_globals)]
#[export_name = "malloc_conf"]
pub static malloc_conf: &[u8; 63] =
    b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:1000\0";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(first) = args.first() {
        match first.as_str() {
            "-v" | "--version" => {
                println!(
                    "Tessera server v={} (Redis {} compatible) bits=64",
                    tessera::TESSERA_VERSION,
                    tessera::REDIS_COMPAT_VERSION
                );
                return;
            }
            "-h" | "--help" => {
                println!(
                    "Usage: tessera-server [/path/to/redis.conf] [options] [-]\n       tessera-server - (read config from stdin)\n       tessera-server -v or --version\n       tessera-server -h or --help\n\nExamples:\n       tessera-server (run the server with default config)\n       tessera-server /etc/redis/6379.conf\n       tessera-server --port 7777 --threads 4\n       tessera-server /etc/myredis.conf --loglevel verbose --maxmemory 1gb"
                );
                return;
            }
            _ => {}
        }
    }
    let known = |name: &[u8]| tessera::commands::is_builtin_command(name);
    let config = match tessera::config::Config::from_args_with_commands(&args, &known) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("{msg}");
            std::process::exit(1);
        }
    };
    tessera::commands::set_renames(config.renamed_commands());
    if let Err(e) = std::env::set_current_dir(config.dir()) {
        eprintln!("Can't chdir to '{}': {}", config.dir(), e);
        std::process::exit(1);
    }
    config.set_apply_hook(Box::new(|cfg, name| {
        match name {
            "loglevel" | "logfile" => tessera::util::log::configure(log_level(cfg), &cfg.logfile()),
            "dir" => std::env::set_current_dir(cfg.dir()).map_err(|e| e.to_string())?,
            "notify-keyspace-events" => {
                tessera::keyspace::events::set_notify_flags(cfg.notify_keyspace_events().0)
            }
            "lazyfree-lazy-expire" | "lazyfree-lazy-eviction" => mirror_lazy_deletions(cfg),
            "requirepass" => tessera::acl::acl().set_default_password(cfg.requirepass().as_deref()),
            "acllog-max-len" => tessera::acl::acl()
                .log
                .lock()
                .trim(usize::try_from(cfg.acllog_max_len()).unwrap_or(usize::MAX)),
            "port" => tessera::server::relisten(cfg, tessera::server::ListenChange::Port)?,
            "bind" => tessera::server::relisten(cfg, tessera::server::ListenChange::Bind)?,
            "tls-port" => {
                tessera::server::tls::apply_config_change(cfg, name)?;
                tessera::server::relisten(cfg, tessera::server::ListenChange::TlsPort)?
            }
            tls if tls.starts_with("tls-") => tessera::server::tls::apply_config_change(cfg, tls)?,
            _ => {}
        }
        Ok(())
    }));
    let executable = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    tessera::util::log::configure(log_level(&config), &config.logfile());
    tessera::keyspace::events::set_notify_flags(config.notify_keyspace_events().0);
    mirror_lazy_deletions(&config);
    if let Err(e) = tessera::server::run(config, executable) {
        tessera::util::log::warning(&e);
        std::process::exit(1);
    }
}

/// The keyspace propagates expiries and evictions as UNLINK or DEL by
/// these directives (see `keyspace::effects`).
fn mirror_lazy_deletions(cfg: &tessera::config::Config) {
    tessera::keyspace::effects::set_lazy_deletions(
        cfg.lazyfree_lazy_expire(),
        cfg.lazyfree_lazy_eviction(),
    );
}

fn log_level(config: &tessera::config::Config) -> tessera::util::log::Level {
    use tessera::config::LogLevel;
    use tessera::util::log::Level;
    match config.loglevel() {
        LogLevel::Debug => Level::Debug,
        LogLevel::Verbose => Level::Verbose,
        LogLevel::Notice => Level::Notice,
        _ => Level::Warning,
    }
}
