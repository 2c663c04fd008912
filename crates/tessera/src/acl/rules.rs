//! A user's rules and the ACL SETUSER operators that change them, as
//! Redis 7.0 applies them: left to right, each on the user or on its root
//! selector, a parenthesised group as a new selector.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::universe::{universe, Universe};

/// Key pattern permissions (`%R~`, `%W~`, `~` for both).
pub mod perm {
    pub const READ: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const ALL: u8 = READ | WRITE;
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub perms: u8,
    pub pattern: Vec<u8>,
}

/// Why an operator was refused, worded as Redis words it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    Syntax,
    UnknownCommand,
    FirstArgOfSubcommand,
    KeyAfterAllKeys,
    ChannelAfterAllChannels,
    BadHash,
    NoSuchPassword,
}

impl RuleError {
    pub fn message(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::FirstArgOfSubcommand => "Allowing first-arg of a subcommand is not supported",
            RuleError::KeyAfterAllKeys => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAllChannels => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
        }
    }
}

/// A command bitmap over the ids of [`universe`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandBits(Vec<u64>);

impl CommandBits {
    pub fn none() -> CommandBits {
        CommandBits(vec![0; universe().len().div_ceil(64)])
    }
    pub fn all() -> CommandBits {
        CommandBits(vec![u64::MAX; universe().len().div_ceil(64)])
    }
    #[inline]
    pub fn get(&self, id: usize) -> bool {
        self.0
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }
    pub fn set(&mut self, id: usize, on: bool) {
        if let Some(w) = self.0.get_mut(id / 64) {
            if on {
                *w |= 1 << (id % 64);
            } else {
                *w &= !(1 << (id % 64));
            }
        }
    }

    /// `+cmd` / `-cmd` on a command: it and all its subcommands.
    pub fn set_with_subs(&mut self, u: &Universe, id: usize, on: bool) {
        self.set(id, on);
        for &sub in &u.subs[id] {
            self.set(sub, on);
        }
    }

    /// `+@category` / `-@category`: a command in the category with all its
    /// subcommands, and each subcommand in it.
    pub fn set_category(&mut self, u: &Universe, category: u32, on: bool) {
        for &top in &u.tops {
            if u.categories[top] & category != 0 {
                self.set_with_subs(u, top, on);
            }
            for &sub in &u.subs[top] {
                if u.categories[sub] & category != 0 {
                    self.set(sub, on);
                }
            }
        }
    }

    /// Commands of the category that are (on) and are not (off) set.
    pub fn count_category(&self, u: &Universe, category: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for &top in &u.tops {
            for id in std::iter::once(top).chain(u.subs[top].iter().copied()) {
                if u.categories[id] & category != 0 {
                    if self.get(id) {
                        on += 1;
                    } else {
                        off += 1;
                    }
                }
            }
        }
        (on, off)
    }
}

/// One set of permissions: the root one of a user, or a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    /// Every command bit is set (a fast path; any removal clears it).
    pub all_commands: bool,
    /// Set by `+@all` (and `allcommands`), cleared by `-@all`: commands
    /// added later would be allowed too. Decides how the rules are
    /// described.
    pub future_commands: bool,
    pub allowed: CommandBits,
    /// `+select|0`: first arguments allowed for a command whose bit is off.
    pub first_args: BTreeMap<usize, Vec<Vec<u8>>>,
    pub all_keys: bool,
    pub patterns: Vec<KeyPattern>,
    pub all_channels: bool,
    pub channels: Vec<Vec<u8>>,
}

impl Selector {
    /// A selector that allows nothing (but all channels when
    /// `acl-pubsub-default` is `allchannels`).
    pub fn empty(all_channels: bool) -> Selector {
        Selector {
            all_commands: false,
            future_commands: false,
            allowed: CommandBits::none(),
            first_args: BTreeMap::new(),
            all_keys: false,
            patterns: Vec::new(),
            all_channels,
            channels: Vec::new(),
        }
    }

    /// Allows everything: the default user's.
    pub fn everything() -> Selector {
        Selector {
            all_commands: true,
            future_commands: true,
            allowed: CommandBits::all(),
            first_args: BTreeMap::new(),
            all_keys: true,
            patterns: Vec::new(),
            all_channels: true,
            channels: Vec::new(),
        }
    }

    pub fn unrestricted(&self) -> bool {
        self.all_commands && self.all_keys && self.all_channels
    }

    fn set_command(&mut self, u: &Universe, id: usize, on: bool) {
        self.allowed.set_with_subs(u, id, on);
        self.first_args.remove(&id);
        if !on {
            self.all_commands = false;
        }
    }

    /// Applies one selector operator.
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let u = universe();
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if is("allkeys") || op == b"~*" {
            self.all_keys = true;
            self.patterns.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.patterns.clear();
        } else if is("allchannels") || op == b"&*" {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.all_commands = true;
            self.future_commands = true;
            self.allowed = CommandBits::all();
            self.first_args.clear();
        } else if is("nocommands") || is("-@all") {
            self.all_commands = false;
            self.future_commands = false;
            self.allowed = CommandBits::none();
            self.first_args.clear();
        } else if op.first() == Some(&b'~') || op.first() == Some(&b'%') {
            self.add_key_pattern(op)?;
        } else if op.first() == Some(&b'&') {
            if self.all_channels {
                return Err(RuleError::ChannelAfterAllChannels);
            }
            let channel = op[1..].to_vec();
            if channel == b"*" {
                self.all_channels = true;
                self.channels.clear();
            } else if !self.channels.contains(&channel) {
                self.channels.push(channel);
            }
        } else if op.len() > 1 && (op[0] == b'+' || op[0] == b'-') && op[1] == b'@' {
            let on = op[0] == b'+';
            let category = Universe::category(&op[2..]).ok_or(RuleError::UnknownCommand)?;
            for &top in &u.tops {
                if u.categories[top] & category != 0 {
                    self.set_command(u, top, on);
                }
                for &sub in &u.subs[top] {
                    if u.categories[sub] & category != 0 {
                        self.set_command(u, sub, on);
                    }
                }
            }
        } else if op.first() == Some(&b'+') && op.len() > 1 {
            self.allow_command(u, &op[1..])?;
        } else if op.first() == Some(&b'-') && op.len() > 1 {
            let id = u.lookup(&op[1..]).ok_or(RuleError::UnknownCommand)?;
            self.set_command(u, id, false);
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAllKeys);
        }
        let (perms, start) = if op[0] == b'%' {
            let mut perms = 0;
            let mut i = 1;
            loop {
                match op.get(i) {
                    Some(b'R' | b'r') if perms & perm::READ == 0 => perms |= perm::READ,
                    Some(b'W' | b'w') if perms & perm::WRITE == 0 => perms |= perm::WRITE,
                    Some(b'~') => {
                        i += 1;
                        break;
                    }
                    // (As Redis: `%RW` alone is the empty pattern.)
                    None => break,
                    _ => return Err(RuleError::Syntax),
                }
                i += 1;
            }
            if perms == 0 {
                return Err(RuleError::Syntax);
            }
            (perms, i)
        } else {
            (perm::ALL, 1)
        };
        let pattern = op[start..].to_vec();
        if perms == perm::ALL && pattern == b"*" {
            self.all_keys = true;
            self.patterns.clear();
            return Ok(());
        }
        match self.patterns.iter_mut().find(|p| p.pattern == pattern) {
            Some(existing) => existing.perms |= perms,
            None => self.patterns.push(KeyPattern { perms, pattern }),
        }
        Ok(())
    }

    /// `+name`: a command, a container's subcommand (`config|get`), or a
    /// first argument of a command without subcommands (`select|0`).
    fn allow_command(&mut self, u: &Universe, name: &[u8]) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
            let id = u.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.set_command(u, id, true);
            return Ok(());
        };
        let (base, arg) = (&name[..bar], &name[bar + 1..]);
        let id = u.lookup(base).ok_or(RuleError::UnknownCommand)?;
        if u.parent[id].is_some() {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !u.subs[id].is_empty() {
            let sub = u.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.set_command(u, sub, true);
        } else if self.allowed.get(id) {
            // Already allowed with any first argument: nothing to add.
        } else {
            crate::util::log::warning(&format!(
                "Deprecation warning: Allowing a first arg of an otherwise blocked command is a misuse of ACL and may get disabled in the future (offender: +{})",
                String::from_utf8_lossy(name)
            ));
            let args = self.first_args.entry(id).or_default();
            if !args.iter().any(|a| a.eq_ignore_ascii_case(arg)) {
                args.push(arg.to_vec());
            }
        }
        Ok(())
    }
}

/// Everything a user is: flags, passwords and permissions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserRules {
    pub enabled: bool,
    pub nopass: bool,
    /// `sanitize-payload` (Some(true)), `skip-sanitize-payload` (Some(false)).
    pub sanitize_payload: Option<bool>,
    /// SHA-256 of each password, in lower-case hex, in the order added.
    pub passwords: Vec<String>,
    pub root: Selector,
    pub selectors: Vec<Selector>,
}

impl UserRules {
    /// A user ACL SETUSER creates: off, no password, no permissions.
    pub fn new_user(pubsub_all_channels: bool) -> UserRules {
        UserRules {
            enabled: false,
            nopass: false,
            sanitize_payload: None,
            passwords: Vec::new(),
            root: Selector::empty(pubsub_all_channels),
            selectors: Vec::new(),
        }
    }

    /// The default user as the server starts: on, nopass, everything.
    pub fn default_user() -> UserRules {
        UserRules {
            enabled: true,
            nopass: true,
            sanitize_payload: None,
            passwords: Vec::new(),
            root: Selector::everything(),
            selectors: Vec::new(),
        }
    }

    /// Any command on any key and channel.
    pub fn unrestricted(&self) -> bool {
        self.root.unrestricted()
    }

    /// Applies one operator (a merged `(...)` selector counts as one).
    pub fn apply(&mut self, op: &[u8], pubsub_all_channels: bool) -> Result<(), RuleError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize_payload = Some(false);
        } else if is("sanitize-payload") {
            self.sanitize_payload = Some(true);
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if is("clearselectors") {
            self.selectors.clear();
        } else if is("reset") {
            self.nopass = false;
            self.passwords.clear();
            self.root.apply(b"resetkeys")?;
            self.root.apply(b"resetchannels")?;
            if pubsub_all_channels {
                self.root.apply(b"allchannels")?;
            }
            self.enabled = false;
            self.sanitize_payload = Some(true);
            self.selectors.clear();
            self.root.apply(b"-@all")?;
        } else if let Some(pass) = op.strip_prefix(b">") {
            self.add_password(hash_password(pass));
        } else if let Some(hash) = op.strip_prefix(b"#") {
            self.add_password(valid_hash(hash)?);
        } else if let Some(pass) = op.strip_prefix(b"<") {
            self.remove_password(&hash_password(pass))?;
        } else if let Some(hash) = op.strip_prefix(b"!") {
            self.remove_password(&valid_hash(hash)?)?;
        } else if op.len() >= 2 && op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut selector = Selector::empty(pubsub_all_channels);
            // Split as Redis splits it (sdssplitargs): runs of blanks, and
            // quotes; unbalanced quotes leave the selector empty, as there.
            let parts = crate::config::parse::split_args(&op[1..op.len() - 1]).unwrap_or_default();
            for part in &parts {
                selector.apply(part)?;
            }
            self.selectors.push(selector);
        } else {
            self.root.apply(op)?;
        }
        Ok(())
    }

    fn add_password(&mut self, hash: String) {
        if !self.passwords.contains(&hash) {
            self.passwords.push(hash);
        }
        self.nopass = false;
    }

    fn remove_password(&mut self, hash: &str) -> Result<(), RuleError> {
        let at = self
            .passwords
            .iter()
            .position(|p| p == hash)
            .ok_or(RuleError::NoSuchPassword)?;
        self.passwords.remove(at);
        Ok(())
    }

    /// Whether `password` is one of the user's (any password when nopass).
    pub fn password_matches(&self, password: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let hash = hash_password(password);
        // Compared without an early exit, so the time taken says nothing
        // of how much of a hash matched.
        let mut found = false;
        for p in &self.passwords {
            let same = p
                .bytes()
                .zip(hash.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
                && p.len() == hash.len();
            found |= same;
        }
        found
    }
}

/// The SHA-256 of a password in lower-case hex, as ACL GETUSER shows it.
pub fn hash_password(password: &[u8]) -> String {
    let digest = Sha256::digest(password);
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

fn valid_hash(hash: &[u8]) -> Result<String, RuleError> {
    if hash.len() != 64 || !hash.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(RuleError::BadHash);
    }
    Ok(String::from_utf8_lossy(hash).into_owned())
}

/// ACL SETUSER's argument merging: arguments from one starting with `(`
/// to one ending with `)` form one selector operator, joined by spaces.
/// An unclosed selector gives the index of its first argument.
pub fn merge_selector_args(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut merged = Vec::with_capacity(args.len());
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, &arg) in args.iter().enumerate() {
        if let Some((_, selector)) = open.as_mut() {
            selector.push(b' ');
            selector.extend_from_slice(arg);
            if arg.last() == Some(&b')') {
                if let Some((_, selector)) = open.take() {
                    merged.push(selector);
                }
            }
            continue;
        }
        if arg.first() == Some(&b'(') && arg.last() != Some(&b')') {
            open = Some((i, arg.to_vec()));
            continue;
        }
        merged.push(arg.to_vec());
    }
    match open {
        Some((start, _)) => Err(start),
        None => Ok(merged),
    }
}
