//! Command metadata that COMMAND INFO, COMMAND DOCS and COMMAND GETKEYS report
//! and that key extraction uses: key specifications, documentation argument
//! trees, and the flag vocabularies they print.
//!
//! Declarations are `const fn` builders, so a family's table stays one
//! `static` of [`CommandSpec`](super::CommandSpec)s:
//!
//! ```ignore
//! cmd("set", -3, WRITE | DENYOOM, "1.0.0", "Sets ...", set)
//!     .key_specs(&[ks(RW | ACCESS | UPDATE | VARIABLE_FLAGS, 1, 0, 1)])
//!     .args(&[a::key("key", 0), a::string("value"), a::pure("get", "GET").optional()])
//! ```

/// Key-specification flags, named (and ordered) as COMMAND INFO prints them.
pub mod ksflags {
    /// Read-only access to the key's value.
    pub const RO: u16 = 1 << 0;
    /// Read-write access.
    pub const RW: u16 = 1 << 1;
    /// Overwrite: the value is replaced without being read.
    pub const OW: u16 = 1 << 2;
    /// Removal of the key.
    pub const RM: u16 = 1 << 3;
    /// The user data is returned, copied or otherwise exposed.
    pub const ACCESS: u16 = 1 << 4;
    pub const UPDATE: u16 = 1 << 5;
    pub const INSERT: u16 = 1 << 6;
    pub const DELETE: u16 = 1 << 7;
    /// The argument is not really a key (it only decides the slot).
    pub const NOT_KEY: u16 = 1 << 8;
    /// The spec may miss keys (the command's own extraction is authoritative).
    pub const INCOMPLETE: u16 = 1 << 9;
    /// The flags depend on other arguments.
    pub const VARIABLE_FLAGS: u16 = 1 << 10;

    pub const NAMES: &[(u16, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// Where the search for a spec's first key starts.
#[derive(Clone, Copy, Debug)]
pub enum BeginSearch {
    /// At this argument index.
    Index(i32),
    /// After the first argument equal to `keyword` (case-insensitively),
    /// searching forward from `startfrom`, or backward from the end when it
    /// is negative.
    Keyword {
        keyword: &'static str,
        startfrom: i32,
    },
    Unknown,
}

/// Which arguments, from the start found by [`BeginSearch`], are keys.
#[derive(Clone, Copy, Debug)]
pub enum FindKeys {
    /// `lastkey` is relative to the start, or counts from the end of the
    /// arguments when negative; with a negative `lastkey`, a `limit` above 1
    /// keeps only that fraction of the remaining arguments.
    Range {
        lastkey: i32,
        keystep: i32,
        limit: i32,
    },
    /// The key count is the integer at `keynumidx` (relative to the start);
    /// keys begin at `firstkey` (relative to the start).
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        keystep: i32,
    },
    Unknown,
}

/// One key specification of a command.
#[derive(Clone, Copy, Debug)]
pub struct KeySpecDef {
    /// Free text COMMAND INFO shows as `notes`; empty when there is none.
    pub notes: &'static str,
    pub flags: u16,
    pub begin_search: BeginSearch,
    pub find_keys: FindKeys,
}

/// The common shape: keys from argument `index` to `index + lastkey` (or to
/// `lastkey` from the end when negative), every `keystep`.
pub const fn ks(flags: u16, index: i32, lastkey: i32, keystep: i32) -> KeySpecDef {
    KeySpecDef {
        notes: "",
        flags,
        begin_search: BeginSearch::Index(index),
        find_keys: FindKeys::Range {
            lastkey,
            keystep,
            limit: 0,
        },
    }
}

impl KeySpecDef {
    pub const fn new(flags: u16, begin_search: BeginSearch, find_keys: FindKeys) -> KeySpecDef {
        KeySpecDef {
            notes: "",
            flags,
            begin_search,
            find_keys,
        }
    }

    pub const fn notes(mut self, notes: &'static str) -> KeySpecDef {
        self.notes = notes;
        self
    }
}

/// Redis's legacy (first, last, step) triple, derived from the key specs the
/// way Redis derives it: the consecutive plain ranges merged into one, and
/// whether any keys escape that triple (the `movablekeys` flag).
pub fn legacy_range(specs: &[KeySpecDef]) -> (i32, i32, i32, bool) {
    if let [only] = specs {
        if let (
            BeginSearch::Index(pos),
            FindKeys::Range {
                lastkey, keystep, ..
            },
        ) = (only.begin_search, only.find_keys)
        {
            let last = if lastkey < 0 { lastkey } else { pos + lastkey };
            return (pos, last, keystep, only.flags & ksflags::INCOMPLETE != 0);
        }
    }
    let mut movable = false;
    let mut first = i32::MAX;
    // Compared as unsigned, so that a from-the-end (negative) bound wins.
    let mut last: i32 = 0;
    let mut prev_last = 0;
    for s in specs {
        let (
            BeginSearch::Index(pos),
            FindKeys::Range {
                lastkey, keystep, ..
            },
        ) = (s.begin_search, s.find_keys)
        else {
            movable = true;
            continue;
        };
        if keystep != 1 || (prev_last != 0 && prev_last != pos - 1) {
            movable = true;
            continue;
        }
        if s.flags & ksflags::INCOMPLETE != 0 {
            movable = true;
        }
        first = first.min(pos);
        let abs = if lastkey >= 0 { lastkey + pos } else { lastkey };
        if abs as u32 > last as u32 {
            last = abs;
        }
        prev_last = last;
    }
    if first == i32::MAX {
        return (0, 0, 0, !specs.is_empty() || movable);
    }
    (first, last, 1, movable)
}

/// Indices of the key arguments of `args` (the command name at 0) by the
/// key specs, in spec order. Arguments a spec points past the end of are
/// skipped.
pub fn key_positions(specs: &[KeySpecDef], args: &[&[u8]]) -> Result<Vec<usize>, InvalidKeyArgs> {
    let argc = args.len() as i64;
    let mut out = Vec::new();
    for s in specs {
        let start = match s.begin_search {
            BeginSearch::Index(i) => i as i64,
            BeginSearch::Keyword { keyword, startfrom } => {
                let kw = keyword.as_bytes();
                let found = if startfrom >= 0 {
                    (startfrom as i64..argc).find(|&i| args[i as usize].eq_ignore_ascii_case(kw))
                } else {
                    let from = argc + startfrom as i64;
                    (1..=from)
                        .rev()
                        .find(|&i| i < argc && args[i as usize].eq_ignore_ascii_case(kw))
                };
                match found {
                    Some(i) => i + 1,
                    None => continue,
                }
            }
            BeginSearch::Unknown => continue,
        };
        if start <= 0 {
            continue;
        }
        if start >= argc {
            return Err(InvalidKeyArgs);
        }
        let (first, last, step) = match s.find_keys {
            FindKeys::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let last = if lastkey >= 0 {
                    start + lastkey as i64
                } else if limit <= 1 {
                    argc + lastkey as i64
                } else {
                    start + (argc - start) / limit as i64 + lastkey as i64
                };
                (start, last, keystep.max(1) as i64)
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let at = start + keynumidx as i64;
                let Some(n) = args
                    .get(at as usize)
                    .and_then(|a| crate::util::numbers::parse_i64(a))
                    .filter(|n| *n >= 0)
                else {
                    return Err(InvalidKeyArgs);
                };
                let first = start + firstkey as i64;
                let step = keystep.max(1) as i64;
                (first, first + (n - 1) * step, step)
            }
            FindKeys::Unknown => continue,
        };
        // Out-of-range bounds mean the arguments do not fit the spec, as
        // Redis decides it (numkeys 0 included).
        if last >= argc || last < first || first >= argc {
            return Err(InvalidKeyArgs);
        }
        let mut i = first;
        while i <= last && i < argc {
            out.push(i as usize);
            i += step;
        }
    }
    Ok(out)
}

/// The arguments do not match the command's key specs (bad numkeys, keys
/// beyond the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidKeyArgs;

/// COMMAND DOCS `doc_flags`.
pub mod docflags {
    pub const DEPRECATED: u8 = 1 << 0;
    pub const SYSCMD: u8 = 1 << 1;

    pub const NAMES: &[(u8, &str)] = &[(DEPRECATED, "deprecated"), (SYSCMD, "syscmd")];
}

/// Documentation argument trees (COMMAND DOCS `arguments`).
pub mod arg {
    /// Flags of an argument, named as COMMAND DOCS prints them.
    pub const OPTIONAL: u8 = 1 << 0;
    pub const MULTIPLE: u8 = 1 << 1;
    pub const MULTIPLE_TOKEN: u8 = 1 << 2;

    pub const FLAG_NAMES: &[(u8, &str)] = &[
        (OPTIONAL, "optional"),
        (MULTIPLE, "multiple"),
        (MULTIPLE_TOKEN, "multiple_token"),
    ];

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ArgType {
        String,
        Integer,
        Double,
        /// A key; the index of the key spec that covers it.
        Key(u16),
        Pattern,
        /// A pattern that names keys (SORT BY/GET), covered by a key spec.
        PatternKey(u16),
        UnixTime,
        PureToken,
        Oneof,
        Block,
    }

    impl ArgType {
        pub fn name(self) -> &'static str {
            match self {
                ArgType::String => "string",
                ArgType::Integer => "integer",
                ArgType::Double => "double",
                ArgType::Key(_) => "key",
                ArgType::Pattern | ArgType::PatternKey(_) => "pattern",
                ArgType::UnixTime => "unix-time",
                ArgType::PureToken => "pure-token",
                ArgType::Oneof => "oneof",
                ArgType::Block => "block",
            }
        }
    }

    /// One argument of a command's documented syntax.
    #[derive(Clone, Copy, Debug)]
    pub struct Arg {
        pub name: &'static str,
        pub kind: ArgType,
        /// Empty when the argument has no token.
        pub token: &'static str,
        pub since: &'static str,
        pub deprecated_since: &'static str,
        pub flags: u8,
        /// The alternatives of a `oneof`, the parts of a `block`.
        pub args: &'static [Arg],
    }

    const fn new(name: &'static str, kind: ArgType, args: &'static [Arg]) -> Arg {
        Arg {
            name,
            kind,
            token: "",
            since: "",
            deprecated_since: "",
            flags: 0,
            args,
        }
    }

    pub const fn string(name: &'static str) -> Arg {
        new(name, ArgType::String, &[])
    }
    pub const fn integer(name: &'static str) -> Arg {
        new(name, ArgType::Integer, &[])
    }
    pub const fn double(name: &'static str) -> Arg {
        new(name, ArgType::Double, &[])
    }
    pub const fn pattern(name: &'static str) -> Arg {
        new(name, ArgType::Pattern, &[])
    }
    /// A pattern whose matches are keys covered by key spec `spec`.
    pub const fn pattern_key(name: &'static str, spec: u16) -> Arg {
        new(name, ArgType::PatternKey(spec), &[])
    }
    pub const fn unix_time(name: &'static str) -> Arg {
        new(name, ArgType::UnixTime, &[])
    }
    /// A key argument covered by key spec `spec`.
    pub const fn key(name: &'static str, spec: u16) -> Arg {
        new(name, ArgType::Key(spec), &[])
    }
    /// A bare keyword (`NX`, `GET`).
    pub const fn pure(name: &'static str, token: &'static str) -> Arg {
        new(name, ArgType::PureToken, &[]).token(token)
    }
    pub const fn oneof(name: &'static str, args: &'static [Arg]) -> Arg {
        new(name, ArgType::Oneof, args)
    }
    pub const fn block(name: &'static str, args: &'static [Arg]) -> Arg {
        new(name, ArgType::Block, args)
    }

    impl Arg {
        pub const fn token(mut self, token: &'static str) -> Arg {
            self.token = token;
            self
        }
        pub const fn since(mut self, since: &'static str) -> Arg {
            self.since = since;
            self
        }
        pub const fn deprecated(mut self, since: &'static str) -> Arg {
            self.deprecated_since = since;
            self
        }
        pub const fn optional(mut self) -> Arg {
            self.flags |= OPTIONAL;
            self
        }
        pub const fn multiple(mut self) -> Arg {
            self.flags |= MULTIPLE;
            self
        }
        pub const fn multiple_token(mut self) -> Arg {
            self.flags |= MULTIPLE_TOKEN;
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ksflags::*;
    use super::*;

    fn keys<'a>(specs: &[KeySpecDef], line: &'a str) -> Vec<&'a str> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        key_positions(specs, &args)
            .unwrap_or_default()
            .into_iter()
            .map(|i| line.split(' ').nth(i).unwrap())
            .collect()
    }

    const fn kw(flags: u16, keyword: &'static str, startfrom: i32, find: FindKeys) -> KeySpecDef {
        KeySpecDef::new(flags, BeginSearch::Keyword { keyword, startfrom }, find)
    }

    const fn keynum(flags: u16, index: i32) -> KeySpecDef {
        KeySpecDef::new(
            flags,
            BeginSearch::Index(index),
            FindKeys::Keynum {
                keynumidx: 0,
                firstkey: 1,
                keystep: 1,
            },
        )
    }

    const fn range(lastkey: i32, limit: i32) -> FindKeys {
        FindKeys::Range {
            lastkey,
            keystep: 1,
            limit,
        }
    }

    // Expected values are redis-server 7.0's COMMAND INFO / COMMAND GETKEYS for the commands
    // whose key specs these are.

    #[test]
    fn plain_ranges() {
        let mset = [ks(OW | UPDATE, 1, -1, 2)];
        assert_eq!(legacy_range(&mset), (1, -1, 2, false));
        assert_eq!(keys(&mset, "MSET a 1 b 2"), ["a", "b"]);
        let rename = [ks(RW | ACCESS | DELETE, 1, 0, 1), ks(OW | UPDATE, 2, 0, 1)];
        assert_eq!(legacy_range(&rename), (1, 2, 1, false));
        assert_eq!(keys(&rename, "RENAME a b"), ["a", "b"]);
        let usage = [ks(RO, 2, 0, 1)];
        assert_eq!(legacy_range(&usage), (2, 2, 1, false));
        assert_eq!(keys(&usage, "MEMORY USAGE k SAMPLES 5"), ["k"]);
        assert_eq!(legacy_range(&[]), (0, 0, 0, false));
    }

    #[test]
    fn keyword_and_keynum_specs() {
        // XREAD: the keys are the first half of what follows STREAMS.
        let xread = [kw(RO | ACCESS, "STREAMS", 1, range(-1, 2))];
        assert_eq!(legacy_range(&xread), (0, 0, 0, true));
        assert_eq!(keys(&xread, "XREAD COUNT 2 STREAMS a b 0 0"), ["a", "b"]);
        // ZUNIONSTORE: a destination, then numkeys keys.
        let zunionstore = [ks(OW | UPDATE, 1, 0, 1), keynum(RO | ACCESS, 2)];
        assert_eq!(legacy_range(&zunionstore), (1, 1, 1, true));
        assert_eq!(
            keys(&zunionstore, "ZUNIONSTORE d 2 a b WEIGHTS 1 2"),
            ["d", "a", "b"]
        );
        let lmpop = [keynum(RW | ACCESS | DELETE, 1)];
        assert_eq!(legacy_range(&lmpop), (0, 0, 0, true));
        assert_eq!(keys(&lmpop, "LMPOP 2 a b LEFT"), ["a", "b"]);
        // GEORADIUS: STORE searched from argument 6.
        let georadius = [
            ks(RO | ACCESS, 1, 0, 1),
            kw(OW | UPDATE, "STORE", 6, range(0, 0)),
            kw(OW | UPDATE, "STOREDIST", 6, range(0, 0)),
        ];
        assert_eq!(legacy_range(&georadius), (1, 1, 1, true));
        assert_eq!(keys(&georadius, "GEORADIUS k 0 0 1 km STORE d"), ["k", "d"]);
        assert_eq!(keys(&georadius, "GEORADIUS k 0 0 1 km"), ["k"]);
        // MIGRATE: KEYS searched backwards from the second-to-last argument.
        let migrate = [
            ks(RW | ACCESS | DELETE, 3, 0, 1),
            kw(RW | ACCESS | DELETE | INCOMPLETE, "KEYS", -2, range(-1, 0)),
        ];
        assert_eq!(legacy_range(&migrate), (3, 3, 1, true));
        assert_eq!(keys(&migrate, "MIGRATE host 1 k 0 5000"), ["k"]);
    }
}
