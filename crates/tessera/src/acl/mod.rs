//! Access control: users, their rules, the check every command passes
//! (called from the one admission pipeline in `server::dispatch`, so a
//! client's command, a queued one at EXEC and a script's `redis.call` are
//! checked alike), and the ACL LOG.
//!
//! The users are process-wide, as the command table is: CONFIG SET
//! `requirepass` (which sets the default user's password) reaches them
//! from the configuration's hook, which knows no server state.

pub mod check;
pub mod describe;
pub mod log;
pub mod rules;
pub mod universe;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};

pub use check::{check, Denied, Request};
pub use rules::{RuleError, UserRules};

/// A user. Clients hold it while logged in as it; changes to its rules
/// apply to their next command.
pub struct User {
    pub name: Vec<u8>,
    rules: RwLock<Arc<UserRules>>,
    /// No user at all would pass this user's checks: its rules let
    /// everything through (a one-load fast path for the default user).
    unrestricted: AtomicBool,
    deleted: AtomicBool,
}

impl User {
    fn new(name: &[u8], rules: UserRules) -> Arc<User> {
        Arc::new(User {
            name: name.to_vec(),
            unrestricted: AtomicBool::new(rules.unrestricted()),
            rules: RwLock::new(Arc::new(rules)),
            deleted: AtomicBool::new(false),
        })
    }

    pub fn rules(&self) -> Arc<UserRules> {
        self.rules.read().clone()
    }

    /// Runs `f` on the current rules without taking a reference to them.
    #[inline]
    pub fn with_rules<R>(&self, f: impl FnOnce(&UserRules) -> R) -> R {
        f(&self.rules.read())
    }

    fn set_rules(&self, rules: UserRules) {
        self.unrestricted.store(rules.unrestricted(), Relaxed);
        *self.rules.write() = Arc::new(rules);
    }

    #[inline]
    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Relaxed)
    }

    pub fn is_deleted(&self) -> bool {
        self.deleted.load(Relaxed)
    }
}

/// An ACL SETUSER (or `user` line) that was refused: Redis's message,
/// without the `ERR `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetUserError(pub String, pub Option<&'static str>);

pub struct Acl {
    users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    default: Arc<User>,
    /// A new connection must log in: the default user has a password or
    /// is off.
    login_required: AtomicBool,
    pub log: Mutex<log::AclLog>,
}

/// The server's users.
pub fn acl() -> &'static Acl {
    static ACL: OnceLock<Acl> = OnceLock::new();
    ACL.get_or_init(|| {
        let default = User::new(b"default", UserRules::default_user());
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), default.clone());
        Acl {
            users: RwLock::new(users),
            default,
            login_required: AtomicBool::new(false),
            log: Mutex::new(log::AclLog::default()),
        }
    })
}

impl Acl {
    pub fn default_user(&self) -> &Arc<User> {
        &self.default
    }

    /// Whether a client that has not logged in must (Redis's authRequired).
    #[inline]
    pub fn login_required(&self) -> bool {
        self.login_required.load(Relaxed)
    }

    fn refresh_login_required(&self) {
        let rules = self.default.rules();
        self.login_required
            .store(!rules.nopass || !rules.enabled, Relaxed);
    }

    /// Whether a new connection (or a RESET one) starts logged in.
    pub fn starts_authenticated(&self) -> bool {
        !self.login_required()
    }

    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, by name.
    pub fn users(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// ACL SETUSER: creates the user if needed and applies the operators,
    /// all or none.
    pub fn set_user(
        &self,
        name: &[u8],
        ops: &[&[u8]],
        pubsub_all_channels: bool,
    ) -> Result<(), SetUserError> {
        if name.iter().any(|&c| c == b' ' || c == 0) {
            return Err(SetUserError(
                "Usernames can't contain spaces or null characters".into(),
                Some("Spaces not allowed in ACL usernames"),
            ));
        }
        let merged = rules::merge_selector_args(ops).map_err(|start| {
            SetUserError(
                format!(
                    "Unmatched parenthesis in acl selector starting at '{}'.",
                    String::from_utf8_lossy(ops[start])
                ),
                Some("Unmatched parenthesis in acl selector"),
            )
        })?;
        let mut users = self.users.write();
        let existing = users.get(name).cloned();
        let mut rules = match &existing {
            Some(u) => (*u.rules()).clone(),
            None => UserRules::new_user(pubsub_all_channels),
        };
        for op in &merged {
            rules.apply(op, pubsub_all_channels).map_err(|e| {
                SetUserError(
                    format!(
                        "Error in ACL SETUSER modifier '{}': {}",
                        String::from_utf8_lossy(op),
                        e.message()
                    ),
                    Some(e.message()),
                )
            })?;
        }
        match existing {
            Some(u) => u.set_rules(rules),
            None => {
                users.insert(name.to_vec(), User::new(name, rules));
            }
        }
        drop(users);
        self.refresh_login_required();
        Ok(())
    }

    /// ACL DELUSER of one user (never `default`): the user, if it existed.
    pub fn delete(&self, name: &[u8]) -> Option<Arc<User>> {
        let user = self.users.write().remove(name)?;
        user.deleted.store(true, Relaxed);
        Some(user)
    }

    /// The user `name` if it is on and `password` is one of its own.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        let user = self.get(name)?;
        let rules = user.rules();
        (rules.enabled && rules.password_matches(password)).then_some(user)
    }

    /// `requirepass`: the default user's only password, or nopass.
    pub fn set_default_password(&self, password: Option<&[u8]>) {
        let mut rules = (*self.default.rules()).clone();
        let _ = rules.apply(b"resetpass", false);
        match password {
            Some(p) => {
                let mut op = b">".to_vec();
                op.extend_from_slice(p);
                let _ = rules.apply(&op, false);
            }
            None => {
                let _ = rules.apply(b"nopass", false);
            }
        }
        self.default.set_rules(rules);
        self.refresh_login_required();
    }

    /// Replaces every user (ACL LOAD, start-up): the default user keeps its
    /// identity (its clients stay), taking the new rules if there are any.
    /// Returns the users replaced, whose clients must go.
    pub fn replace_all(&self, new_users: Vec<(Vec<u8>, UserRules)>) -> Vec<Arc<User>> {
        let mut users = self.users.write();
        let old: Vec<Arc<User>> = users
            .values()
            .filter(|u| !Arc::ptr_eq(u, &self.default))
            .cloned()
            .collect();
        users.clear();
        users.insert(b"default".to_vec(), self.default.clone());
        for (name, rules) in new_users {
            if name == b"default" {
                self.default.set_rules(rules);
            } else {
                users.insert(name.clone(), User::new(&name, rules));
            }
        }
        drop(users);
        for u in &old {
            u.deleted.store(true, Relaxed);
        }
        self.refresh_login_required();
        old
    }

    /// What follows `user ` in each ACL LIST line.
    pub fn user_line_bodies(&self) -> Vec<String> {
        self.users()
            .iter()
            .map(|u| {
                format!(
                    "{} {}",
                    String::from_utf8_lossy(&u.name),
                    describe::user_line_rules(&u.rules())
                )
            })
            .collect()
    }

    /// The ACL LIST / ACL SAVE lines, by user name.
    pub fn user_lines(&self) -> Vec<String> {
        self.user_line_bodies()
            .into_iter()
            .map(|body| format!("user {body}"))
            .collect()
    }
}

/// Reads an ACL file: every user in it, or all its errors (each as
/// `path:line: message. `), as ACL LOAD reports them.
pub fn read_acl_file(
    path: &str,
    pubsub_all_channels: bool,
) -> Result<Vec<(Vec<u8>, UserRules)>, String> {
    let content = std::fs::read(path).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{path}': {}",
            crate::config::strerror(&e)
        )
    })?;
    let mut users: Vec<(Vec<u8>, UserRules)> = Vec::new();
    let mut errors = String::new();
    for (n, raw) in content.split(|&c| c == b'\n').enumerate() {
        let lineno = n + 1;
        let line = trim(raw);
        if line.is_empty() {
            continue;
        }
        let Some(argv) = crate::config::split_args(line) else {
            errors.push_str(&format!("{path}:{lineno}: Syntax error. "));
            continue;
        };
        if argv.is_empty() {
            continue;
        }
        if argv[0] != b"user" || argv.len() < 2 {
            errors.push_str(&format!(
                "{path}:{lineno} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = &argv[1];
        if name.iter().any(|&c| c == b' ' || c == 0) {
            errors.push_str(&format!("{path}:{lineno}: Syntax error. "));
            continue;
        }
        if users.iter().any(|(u, _)| u == name) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{}' found on line {lineno}. ",
                String::from_utf8_lossy(name)
            ));
            continue;
        }
        let ops: Vec<&[u8]> = argv[2..].iter().map(|a| a.as_slice()).collect();
        let merged = match rules::merge_selector_args(&ops) {
            Ok(m) => m,
            Err(start) => {
                errors.push_str(&format!(
                    "{path}:{lineno}: Unmatched parenthesis in acl selector starting at '{}'. ",
                    String::from_utf8_lossy(ops[start])
                ));
                continue;
            }
        };
        let mut rules = UserRules::new_user(pubsub_all_channels);
        let mut failed = false;
        for op in &merged {
            if let Err(e) = rules.apply(op, pubsub_all_channels) {
                // (Redis names the operator only for command rules.)
                let op_part = match e {
                    RuleError::UnknownCommand | RuleError::FirstArgOfSubcommand => {
                        format!(
                            "Error in applying operation '{}': ",
                            String::from_utf8_lossy(op)
                        )
                    }
                    _ => String::new(),
                };
                errors.push_str(&format!("{path}:{lineno}: {op_part}{}. ", e.message()));
                failed = true;
                break;
            }
        }
        if !failed {
            users.push((name.clone(), rules));
        }
    }
    if !errors.is_empty() {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
        );
        return Err(errors);
    }
    if !users.iter().any(|(u, _)| u == b"default") {
        users.push((b"default".to_vec(), UserRules::default_user()));
    }
    Ok(users)
}

/// ACL SAVE: the ACL LIST lines, written to a temporary file renamed over
/// `path`.
pub fn write_acl_file(path: &str) -> std::io::Result<()> {
    let mut content = String::new();
    for line in acl().user_lines() {
        content.push_str(&line);
        content.push('\n');
    }
    let tmp = format!("{path}.tmp-{}", std::process::id());
    let result = (|| {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn trim(s: &[u8]) -> &[u8] {
    let is_space = |c: &u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let start = s.iter().position(|c| !is_space(c)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !is_space(c))
        .map_or(start, |e| e + 1);
    &s[start..end]
}

/// Sets up the users as the server starts: `requirepass`, then the
/// configuration's `user` lines, or the ACL file (not both).
pub fn load_at_startup(config: &crate::config::Config) -> Result<(), String> {
    let acl = acl();
    config.set_user_lines_hook(Box::new(|| crate::acl::acl().user_line_bodies()));
    let pubsub_all = config.acl_pubsub_default_allchannels();
    acl.set_default_password(config.requirepass().as_deref());
    let lines = config.user_lines();
    let aclfile = config.aclfile();
    if aclfile.is_some() && !lines.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    let mut seen: Vec<&[u8]> = Vec::new();
    for line in lines {
        let name = line[0].as_slice();
        if seen.contains(&name) {
            return Err(format!(
                "Duplicate user '{}' found",
                String::from_utf8_lossy(name)
            ));
        }
        seen.push(name);
        let mut ops: Vec<&[u8]> = Vec::with_capacity(line.len());
        if name == b"default" {
            ops.push(b"reset");
        }
        ops.extend(line[1..].iter().map(|a| a.as_slice()));
        acl.set_user(name, &ops, pubsub_all).map_err(|e| {
            format!(
                "Error in user declaration '{}': {}",
                String::from_utf8_lossy(name),
                e.1.unwrap_or(&e.0)
            )
        })?;
        if !acl.get(name).is_some_and(|u| u.rules().enabled) {
            crate::util::log::notice(&format!(
                "The user '{}' is disabled (there is no 'on' modifier in the user description). Make sure this is not a configuration error.",
                String::from_utf8_lossy(name)
            ));
        }
    }
    if let Some(path) = aclfile {
        let users = read_acl_file(&path, pubsub_all)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
        acl.replace_all(users);
    }
    Ok(())
}
