//! The code's shape, checked from its source and its command table: layers import in one
//! direction, behaviour is keyed on table flags rather than command names, and the internal flags
//! agree with Redis 7.0's command table where Redis has them.

use std::fs;
use std::path::{Path, PathBuf};

use tessera::commands::{all_commands, flags, CommandSpec};

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/tessera/src")
}

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("read source dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = fs::read_to_string(&path).expect("read source");
                out.push((path, text));
            }
        }
    }
    out
}

/// Lines of code (comments dropped) that match `bad`.
fn offending(files: &[(PathBuf, String)], bad: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if bad(code) {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

/// Outside `commands/`, no code compares a command's name: what a command is allowed or does is
/// a flag in the table, so renamed commands, subcommands and the checks of later layers (ACL,
/// cluster) see the same thing.
#[test]
fn no_command_name_comparisons_outside_commands() {
    let root = src_dir();
    let files: Vec<_> = sources(&root)
        .into_iter()
        .filter(|(p, _)| !p.starts_with(root.join("commands")))
        .collect();
    let bad = offending(&files, |code| {
        code.contains(".name == \"")
            || code.contains(".name != \"")
            || (code.contains("matches!(") && code.contains(".name,"))
            || code.contains("cmd.name.eq_ignore_ascii_case")
            || (code.contains("args[0].eq_ignore_ascii_case(b\"")
                || code.contains("name.eq_ignore_ascii_case(b\""))
                && !code.contains("known")
    });
    assert!(
        bad.is_empty(),
        "command names compared outside commands/ (use a table flag):\n{}",
        bad.join("\n")
    );
}

/// The lower layers know nothing of the ones above them: `persistence`, `keyspace`, `types`,
/// `util` and `journal` never reach into `server`, `commands` or `scripting`; `config` neither.
/// (Persistence is fed by the keyspace's snapshots and hands loaded keys back; when to save is
/// the server's business.)
#[test]
fn lower_layers_do_not_import_upper_ones() {
    let root = src_dir();
    for lower in [
        "persistence",
        "keyspace",
        "types",
        "util",
        "journal",
        "config",
    ] {
        let files = sources(&root.join(lower));
        let bad = offending(&files, |code| {
            ["crate::server", "crate::commands", "crate::scripting"]
                .iter()
                .any(|upper| code.contains(upper))
        });
        assert!(
            bad.is_empty(),
            "{lower}/ imports an upper layer:\n{}",
            bad.join("\n")
        );
    }
}

/// `scripting/` owns the Lua VM, the `redis.call` bridge and the timeout hook, and reaches the
/// server only through the `Host` each run is handed: it imports neither `commands` nor `server`.
#[test]
fn scripting_reaches_the_server_only_through_its_host() {
    let files = sources(&src_dir().join("scripting"));
    let bad = offending(&files, |code| {
        code.contains("crate::server") || code.contains("crate::commands")
    });
    assert!(
        bad.is_empty(),
        "scripting/ imports an upper layer:\n{}",
        bad.join("\n")
    );
}

/// A run's state is one scope (`scripting::bridge`'s `SCOPE` and its `BUFFERS`, set and restored by a guard), not
/// thread-locals spread over files: outside it, scripting keeps only its per-thread VM and the
/// VM's memory gauge.
#[test]
fn script_run_state_is_one_scope() {
    let mut found = Vec::new();
    for dir in ["scripting", "commands", "server"] {
        for (path, text) in sources(&src_dir().join(dir)) {
            let mut lines = text.lines().peekable();
            while let Some(line) = lines.next() {
                if !line.trim_start().starts_with("thread_local!") {
                    continue;
                }
                // The statics this block declares, up to its closing brace.
                let indent = &line[..line.len() - line.trim_start().len()];
                for inner in lines.by_ref() {
                    if inner
                        .strip_prefix(indent)
                        .is_some_and(|rest| rest.starts_with('}'))
                    {
                        break;
                    }
                    if let Some(rest) = inner
                        .trim_start()
                        .strip_prefix("static ")
                        .or_else(|| inner.trim_start().strip_prefix("pub static "))
                    {
                        let name = rest.split(':').next().unwrap_or("").trim().to_string();
                        let file = path
                            .file_name()
                            .and_then(|f| f.to_str())
                            .unwrap_or("")
                            .to_string();
                        found.push(format!("{dir}/{file}:{name}"));
                    }
                }
            }
        }
    }
    found.sort();
    let scripting: Vec<&String> = found
        .iter()
        .filter(|f| f.starts_with("scripting/"))
        .collect();
    assert_eq!(
        scripting,
        [
            "scripting/bridge.rs:BUFFERS",
            "scripting/bridge.rs:SCOPE",
            "scripting/mod.rs:LUA_MEMORY",
            "scripting/mod.rs:VM"
        ],
        "scripting state outside the run's scope"
    );
    let script_state: Vec<&String> = found
        .iter()
        .filter(|f| {
            f.starts_with("commands/scripting")
                || f.starts_with("commands/functions")
                || f.starts_with("server/script_host")
        })
        .collect();
    assert!(
        script_state.is_empty(),
        "script run state outside scripting/: {script_state:?}"
    );
}

fn every_spec() -> Vec<(String, &'static CommandSpec)> {
    let mut out = Vec::new();
    for c in all_commands() {
        out.push((c.name.to_string(), *c));
        for s in c.subcommands {
            out.push((format!("{}|{}", c.name, s.name), s));
        }
    }
    out
}

fn flagged(flag: u64) -> Vec<String> {
    let mut v: Vec<String> = every_spec()
        .into_iter()
        .filter(|(_, c)| c.has(flag))
        .map(|(n, _)| n)
        .collect();
    v.sort();
    v
}

/// The flags Redis 7.0 keeps internal (COMMAND INFO hides them), as its src/commands/*.json
/// declare them for the commands Tessera has: MAY_REPLICATE (scripts, PFCOUNT's cached
/// cardinality, PUBLISH to replicas) and PROTECTED.
#[test]
fn internal_flags_match_redis() {
    assert_eq!(
        flagged(flags::MAY_REPLICATE),
        ["eval", "evalsha", "fcall", "pfcount", "publish", "spublish"]
    );
    assert_eq!(flagged(flags::PROTECTED), ["debug"]);
}

/// The table hooks that stand for per-command behaviour sit on exactly their commands: only
/// PUBLISH and SPUBLISH wait for their receivers' commands in flight, and only SET, BITFIELD and
/// SORT work out their keys' flags from their arguments.
#[test]
fn table_hooks_sit_on_their_commands() {
    let with = |has: fn(&CommandSpec) -> bool| {
        let mut v: Vec<String> = every_spec()
            .into_iter()
            .filter(|(_, c)| has(c))
            .map(|(n, _)| n)
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        with(|c| c.waits_for_others.is_some()),
        ["publish", "spublish"]
    );
    assert_eq!(
        with(|c| c.key_flags_of.is_some()),
        ["bitfield", "set", "sort"]
    );
}

/// The flags that replace name tests sit on exactly the commands whose behaviour they name.
#[test]
fn behaviour_flags_sit_on_their_commands() {
    assert_eq!(
        flagged(flags::NOT_QUEUED),
        ["discard", "exec", "multi", "quit", "reset", "watch"]
    );
    assert_eq!(
        flagged(flags::LEAVES_MULTI),
        ["discard", "exec", "quit", "reset"]
    );
    assert_eq!(flagged(flags::RUNS_QUEUED), ["exec"]);
    assert_eq!(
        flagged(flags::SUBSCRIPTION),
        [
            "psubscribe",
            "punsubscribe",
            "ssubscribe",
            "subscribe",
            "sunsubscribe",
            "unsubscribe"
        ]
    );
    assert_eq!(
        flagged(flags::PUBSUB_CONTEXT),
        [
            "ping",
            "psubscribe",
            "punsubscribe",
            "quit",
            "reset",
            "ssubscribe",
            "subscribe",
            "sunsubscribe",
            "unsubscribe"
        ]
    );
    assert_eq!(
        flagged(flags::RUNS_SCRIPT),
        [
            "eval",
            "eval_ro",
            "evalsha",
            "evalsha_ro",
            "fcall",
            "fcall_ro"
        ]
    );
    // Commands that run others never propagate themselves.
    let mut no_auto = flagged(flags::RUNS_SCRIPT);
    no_auto.push("exec".into());
    no_auto.sort();
    assert_eq!(flagged(flags::NO_AUTO_PROPAGATE), no_auto);
    assert_eq!(flagged(flags::KEEPS_CACHING), ["client", "multi"]);
    assert_eq!(flagged(flags::ALWAYS_TOUCHES), ["touch"]);
    assert_eq!(
        flagged(flags::TOUCHES_ARBITRARY_KEYS),
        ["randomkey", "scan"]
    );
}

/// Every command that rewrites its propagation says so in the table (the handlers' side of this
/// is a debug assertion in dispatch, which every test run exercises).
#[test]
fn rewriting_commands_are_flagged() {
    let rewriting = flagged(flags::REWRITES_EFFECTS);
    for name in [
        "set",
        "setex",
        "psetex",
        "getset",
        "getdel",
        "getex",
        "incrbyfloat",
        "expire",
        "pexpire",
        "expireat",
        "pexpireat",
        "hincrbyfloat",
        "spop",
        "blpop",
        "brpop",
        "blmove",
        "brpoplpush",
        "lmpop",
        "blmpop",
        "bzpopmin",
        "bzpopmax",
        "zmpop",
        "bzmpop",
        "geoadd",
        "xadd",
        "xtrim",
        "xreadgroup",
        "xclaim",
        "xautoclaim",
        "publish",
        "spublish",
        "flushall",
        "flushdb",
        "swapdb",
        "function|load",
        "function|delete",
        "function|flush",
        "function|restore",
    ] {
        assert!(
            rewriting.iter().any(|n| n == name),
            "{name} lacks REWRITES_EFFECTS"
        );
    }
}
