//! Log lines in redis-server's format (`pid:M 30 Nov 2026 08:00:00.000 * msg`),
//! to stdout or the configured logfile, filtered by loglevel.

use std::io::Write;

use parking_lot::Mutex;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Level {
    Debug,
    Verbose,
    Notice,
    Warning,
}

static SINK: Mutex<Option<(Level, String)>> = Mutex::new(None);

/// Sets the minimum level and the file ("" for stdout).
pub fn configure(level: Level, logfile: &str) {
    *SINK.lock() = Some((level, logfile.to_string()));
}

/// The role letter of log lines: `S` while a replica, as redis-server.
static REPLICA: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn set_replica_role(on: bool) {
    REPLICA.store(on, std::sync::atomic::Ordering::Relaxed);
}

pub fn log(level: Level, msg: &str) {
    emit(level, || {
        let mark = match level {
            Level::Debug => '.',
            Level::Verbose => '-',
            Level::Notice => '*',
            Level::Warning => '#',
        };
        let role = if REPLICA.load(std::sync::atomic::Ordering::Relaxed) {
            'S'
        } else {
            'M'
        };
        format!(
            "{}:{role} {} {} {}\n",
            std::process::id(),
            timestamp(),
            mark,
            msg
        )
    })
}

/// Text written as it is, without the pid, time and level prefix (the
/// start-up banner), when `level` passes the loglevel.
pub fn raw(level: Level, text: &str) {
    emit(level, || text.to_string())
}

/// Whether lines go to stdout (no logfile configured).
pub fn to_stdout() -> bool {
    SINK.lock().as_ref().is_none_or(|(_, f)| f.is_empty())
}

/// Writes what `render` makes when `level` passes the loglevel, under one
/// lock, so lines from several threads never interleave.
fn emit(level: Level, render: impl FnOnce() -> String) {
    let sink = SINK.lock();
    let (min, file) = match &*sink {
        Some((l, f)) => (*l, f.as_str()),
        None => (Level::Notice, ""),
    };
    if level < min {
        return;
    }
    let line = render();
    if file.is_empty() {
        let _ = std::io::stdout().write_all(line.as_bytes());
    } else if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

pub fn verbose(msg: &str) {
    log(Level::Verbose, msg)
}

pub fn notice(msg: &str) {
    log(Level::Notice, msg)
}

pub fn warning(msg: &str) {
    log(Level::Warning, msg)
}

fn timestamp() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{:02} {} {} {:02}:{:02}:{:02}.{:03}",
        d,
        MONTHS[(m - 1) as usize],
        y,
        tod / 3600,
        tod % 3600 / 60,
        tod % 60,
        ms.rem_euclid(1000)
    )
}

/// Gregorian date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(20_423), (2025, 12, 1));
    }
}
