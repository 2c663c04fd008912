//! Start-up loading: redis-server's argv conventions, configuration files
//! (with `include` and glob patterns), standard input, and the FATAL error
//! text redis-server prints.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::parse::{repr, split_args, strerror, trim_set};
use super::table::{Special, Ty, MULTI_ARG, TABLE};
use super::{lookup_startup, lossy, Config, Value, REDIS_VERSION};

/// Nesting limit for `include` (Redis has none and would recurse forever).
const MAX_INCLUDE_DEPTH: usize = 32;

/// Formats the block redis-server prints before exiting with status 1.
pub(crate) fn fatal(at: Option<(usize, &[u8])>, reason: &str) -> String {
    let mut s = format!("\n*** FATAL CONFIG FILE ERROR (Redis {REDIS_VERSION}) ***\n");
    if let Some((n, line)) = at {
        s.push_str(&format!(
            "Reading the configuration file, at line {n}\n>>> '{}'\n",
            lossy(line)
        ));
    }
    s.push_str(reason);
    s
}

fn cant_open(path: &Path, e: &std::io::Error) -> String {
    format!(
        "Fatal error, can't open config file '{}': {}",
        path.display(),
        strerror(e)
    )
}

/// Problem with one directive.
enum DirErr {
    /// Reported with the line it came from.
    Line(String),
    /// Already complete text (an error inside an included file).
    Raw(String),
}

impl From<String> for DirErr {
    fn from(s: String) -> Self {
        DirErr::Line(s)
    }
}

impl From<&str> for DirErr {
    fn from(s: &str) -> Self {
        DirErr::Line(s.to_string())
    }
}

/// Predicate telling whether a command name exists, for `rename-command`.
pub type CommandExists<'a> = &'a dyn Fn(&[u8]) -> bool;

struct Loader<'a> {
    cfg: Config,
    /// The command names as redis-server's command dictionary would hold
    /// them after the `rename-command` lines so far (lowercase): original
    /// names renamed away, and names added by renames.
    renamed_away: Vec<Vec<u8>>,
    rename_targets: Vec<Vec<u8>>,
    /// The first `save` line replaces the defaults, later ones add to it.
    save_loaded: bool,
    /// Mirrors redis-server's "reading the config file" flag, which is
    /// cleared when any file (an included one too) has been read: `save`
    /// lines after an `include` then replace the list instead of adding to it.
    reading: bool,
    command_exists: Option<CommandExists<'a>>,
}

impl Config {
    /// Builds the configuration from argv after the program name, exactly
    /// like redis-server: an optional config file path first (when the first
    /// argument does not start with `-`), `-` to read configuration from
    /// standard input (first or last argument), then `--directive args...`
    /// groups appended after the file's lines.
    ///
    /// The error is the text redis-server would print (print it to stderr
    /// with `eprintln!` and exit with status 1).
    ///
    /// `rename-command` is accepted without checking the command exists;
    /// use [`Config::from_args_with_commands`] to check it.
    pub fn from_args(args: &[String]) -> Result<Config, String> {
        Self::load_args(args, None)
    }

    /// [`Config::from_args`], rejecting `rename-command` for unknown commands
    /// ("No such command in rename-command") as redis-server does.
    pub fn from_args_with_commands(
        args: &[String],
        command_exists: CommandExists<'_>,
    ) -> Result<Config, String> {
        Self::load_args(args, Some(command_exists))
    }

    fn load_args(
        args: &[String],
        command_exists: Option<CommandExists<'_>>,
    ) -> Result<Config, String> {
        let mut loader = Loader {
            cfg: Config::new(),
            save_loaded: false,
            reading: false,
            command_exists,
            renamed_away: Vec::new(),
            rename_targets: Vec::new(),
        };
        if args.is_empty() {
            return Ok(loader.cfg);
        }
        let (file, from_stdin, options) = argv_to_options(args);
        let file = match file {
            Some(f) => Some(std::path::absolute(&f).map_err(|e| cant_open(Path::new(&f), &e))?),
            None => None,
        };
        let mut text = Vec::new();
        if let Some(path) = &file {
            text = read_config_source(path)?;
        }
        if from_stdin {
            std::io::stdin().read_to_end(&mut text).map_err(|e| {
                format!(
                    "Fatal error, can't read config from stdin: {}",
                    strerror(&e)
                )
            })?;
        }
        text.push(b'\n');
        text.extend_from_slice(&options);
        loader.load_text(&text, 0)?;
        loader.finish()?;
        let mut cfg = loader.cfg;
        cfg.config_file = file;
        Ok(cfg)
    }
}

/// Splits argv into (config file, read stdin, option text). Option text has
/// one "directive args" line per `--directive` group, the arguments quoted
/// so that the configuration parser reads them back verbatim.
fn argv_to_options(args: &[String]) -> (Option<String>, bool, Vec<u8>) {
    let mut j = 0;
    let mut file = None;
    if let Some(first) = args.first() {
        if !first.starts_with('-') {
            file = Some(first.clone());
            j = 1;
        }
    }
    let mut options = Vec::new();
    let mut from_stdin = false;
    let mut handled_last = true;
    while j < args.len() {
        let a = args[j].as_bytes();
        let last = j + 1 == args.len();
        if a == b"-" && (j == 0 || last) {
            from_stdin = true;
        } else if handled_last && a.starts_with(b"--") {
            if !options.is_empty() {
                options.push(b'\n');
            }
            options.extend_from_slice(&a[2..]);
            options.push(b' ');
            if split_args(a).map(|v| v.len()) == Some(1) {
                // A bare option name: its value is in the next argument(s).
                handled_last = false;
                let next_is_option = args.get(j + 1).is_some_and(|n| n.starts_with("--"));
                if a.eq_ignore_ascii_case(b"--save") && (next_is_option || last) {
                    // `--save` with nothing after it means `save ""`.
                    options.extend_from_slice(b"\"\"");
                    handled_last = true;
                } else if a.eq_ignore_ascii_case(b"--sentinel") && next_is_option {
                    handled_last = true;
                }
            } else {
                // Name and value in one argument ("--port 6380").
                handled_last = true;
            }
        } else {
            options.extend_from_slice(&repr(a));
            options.push(b' ');
            handled_last = true;
        }
        j += 1;
    }
    (file, from_stdin, options)
}

fn has_glob_chars(p: &[u8]) -> bool {
    p.iter().any(|c| matches!(c, b'*' | b'?' | b'['))
}

/// Reads a configuration file, or every file a glob pattern matches (in
/// sorted order; no match reads nothing).
fn read_config_source(path: &Path) -> Result<Vec<u8>, String> {
    let raw = path.as_os_str().to_string_lossy();
    let files = if has_glob_chars(raw.as_bytes()) {
        fs_glob(path)
    } else {
        vec![path.to_path_buf()]
    };
    let mut text = Vec::new();
    for f in files {
        let mut data = std::fs::read(&f).map_err(|e| cant_open(&f, &e))?;
        text.append(&mut data);
    }
    Ok(text)
}

/// Filesystem glob with the crate's matcher, component by component. As
/// with glob(3), names starting with `.` only match a pattern that does.
fn fs_glob(pattern: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::new()];
    for comp in pattern.components() {
        let part = comp.as_os_str().to_string_lossy().into_owned();
        let mut next = Vec::new();
        for base in &found {
            if !has_glob_chars(part.as_bytes()) {
                next.push(base.join(comp.as_os_str()));
                continue;
            }
            let dir = if base.as_os_str().is_empty() {
                Path::new(".")
            } else {
                base.as_path()
            };
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.') || part.starts_with('.'))
                .filter(|n| crate::util::glob::glob_match(part.as_bytes(), n.as_bytes(), false))
                .collect();
            names.sort();
            next.extend(names.into_iter().map(|n| base.join(n)));
        }
        found = next;
    }
    found.retain(|p| p.exists());
    found
}

impl Loader<'_> {
    /// Applies configuration text; line numbers count from 1 within `text`.
    fn load_text(&mut self, text: &[u8], depth: usize) -> Result<(), String> {
        self.reading = true;
        if text.is_empty() {
            self.reading = false;
            return Ok(());
        }
        for (n, raw) in text.split(|&c| c == b'\n').enumerate() {
            let line = trim_set(raw, b" \t\r\n");
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            let Some(argv) = split_args(line) else {
                return Err(fatal(
                    Some((n + 1, line)),
                    "Unbalanced quotes in configuration line",
                ));
            };
            let Some((name, rest)) = argv.split_first() else {
                continue;
            };
            let name = name.to_ascii_lowercase();
            let args: Vec<&[u8]> = rest.iter().map(|a| a.as_slice()).collect();
            match self.directive(&name, &args, depth) {
                Ok(()) => {}
                Err(DirErr::Line(msg)) => return Err(fatal(Some((n + 1, line)), &msg)),
                Err(DirErr::Raw(msg)) => return Err(msg),
            }
        }
        self.reading = false;
        Ok(())
    }

    fn directive(&mut self, name: &[u8], args: &[&[u8]], depth: usize) -> Result<(), DirErr> {
        if let Some((i, _)) = lookup_startup(name) {
            let d = &TABLE[i];
            if !d.has(MULTI_ARG) && args.len() != 1 {
                return Err("wrong number of arguments".into());
            }
            // One quoted value of a many-valued directive is its values
            // separated by spaces, as CONFIG SET takes them (what a
            // command-line `--client-output-buffer-limit "replica 0 0 0"`
            // becomes).
            let split;
            let args = match args {
                [one] if d.has(MULTI_ARG) && !one.is_empty() => {
                    split = super::parse::split_spaces(one);
                    split.as_slice()
                }
                _ => args,
            };
            let base = self.cfg.special.read().dir.clone();
            let mut v = self.cfg.parse_value(i, args, &base)?;
            if d.ty == Ty::Special(Special::Save) {
                if let Value::Save(new) = &mut v {
                    // `save ""` clears every rule, even those read before.
                    if self.reading && self.save_loaded && !new.is_empty() {
                        let mut all = self.cfg.special.read().save.clone();
                        all.append(new);
                        *new = all;
                    }
                }
                if self.reading {
                    self.save_loaded = true;
                }
            }
            self.cfg.store(i, v);
            return Ok(());
        }
        // Directives Redis 7.0 still accepts and ignores.
        if args.len() == 1
            && matches!(
                name,
                b"list-max-ziplist-entries" | b"list-max-ziplist-value" | b"lua-replicate-commands"
            )
        {
            return Ok(());
        }
        match (name, args.len()) {
            (b"include", 1) => self.include(args[0], depth),
            (b"rename-command", 2) => self.rename_command(args[0], args[1]),
            (b"user", n) if n >= 1 => {
                self.cfg
                    .user_lines
                    .push(args.iter().map(|a| a.to_vec()).collect());
                Ok(())
            }
            (b"loadmodule", n) if n >= 1 => Err("Modules are not supported by Tessera".into()),
            (b"sentinel", 0) => Err("Sentinel mode is not supported by Tessera".into()),
            (b"sentinel", _) => Err("sentinel directive while not in sentinel mode".into()),
            _ if name.contains(&b'.') => {
                if args.len() != 1 {
                    Err("Module config specified without value".into())
                } else {
                    Err("Module configs are not supported by Tessera (no modules)".into())
                }
            }
            _ => Err("Bad directive or wrong number of arguments".into()),
        }
    }

    /// `rename-command <name> <new name>` ("" removes the command), checked
    /// the way redis-server applies it to its command dictionary: the name
    /// must be in it now (an original name not renamed away, or an earlier
    /// rename's target), and a new name must not be.
    fn rename_command(&mut self, name: &[u8], target: &[u8]) -> Result<(), DirErr> {
        let name = name.to_ascii_lowercase();
        let target = target.to_ascii_lowercase();
        if let Some(exists) = self.command_exists {
            let in_dict = |l: &Loader, n: &[u8]| {
                l.rename_targets.iter().any(|t| t == n)
                    || (exists(n) && !l.renamed_away.iter().any(|r| r == n))
            };
            if !in_dict(self, &name) {
                return Err("No such command in rename-command".into());
            }
            match self.rename_targets.iter().position(|t| *t == name) {
                Some(i) => {
                    self.rename_targets.swap_remove(i);
                }
                None => self.renamed_away.push(name.clone()),
            }
            if !target.is_empty() {
                if in_dict(self, &target) {
                    return Err("Target command name already exists".into());
                }
                self.rename_targets.push(target.clone());
            }
        } else if !target.is_empty()
            && self
                .cfg
                .renames
                .iter()
                .any(|(_, t)| t.eq_ignore_ascii_case(&target))
        {
            return Err("Target command name already exists".into());
        }
        self.cfg.renames.push((name, target));
        Ok(())
    }

    fn include(&mut self, path: &[u8], depth: usize) -> Result<(), DirErr> {
        if depth >= MAX_INCLUDE_DEPTH {
            return Err("include nesting is too deep".into());
        }
        // Relative to the working directory, which `dir` lines change as they go.
        let p = PathBuf::from(lossy(path));
        let full = if p.is_absolute() {
            p
        } else {
            PathBuf::from(self.cfg.special.read().dir.clone()).join(p)
        };
        let text = read_config_source(&full).map_err(DirErr::Raw)?;
        self.load_text(&text, depth + 1).map_err(DirErr::Raw)
    }

    /// Checks redis-server makes once everything is read.
    fn finish(&mut self) -> Result<(), String> {
        let logfile = self.cfg.logfile();
        if !logfile.is_empty() {
            let p = PathBuf::from(&logfile);
            let full = if p.is_absolute() {
                p
            } else {
                PathBuf::from(self.cfg.dir()).join(p)
            };
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&full)
                .map_err(|e| fatal(None, &format!("Can't open the log file: {}", strerror(&e))))?;
        }
        Ok(())
    }
}
