//! Whether a user may run a command with these arguments: the command (or
//! its first argument), the keys by how the command uses them (the key
//! specs' access flags), and the channels. A user passes if its root
//! permissions or any selector do.

use super::rules::{perm, Selector, UserRules};
use crate::commands::meta::{BeginSearch, FindKeys};
use crate::commands::{flags, CommandSpec, KeyUse};
use crate::util::glob::glob_match;

/// Why a command was refused, and at which argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    Command,
    /// The key at this argument index.
    Key(usize),
    /// The channel at this argument index.
    Channel(usize),
}

impl Denied {
    /// Redis's order of relevance when no selector lets the command
    /// through: a channel over a key over the command, then the later
    /// argument.
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }
}

/// The command being checked: its id (a subcommand's own), spec and
/// arguments (for a subcommand, the container's name first).
pub struct Request<'a> {
    pub id: usize,
    pub spec: &'a CommandSpec,
    pub args: &'a [&'a [u8]],
    pub is_subcommand: bool,
}

/// Checks `req` against the user's root permissions and selectors.
#[inline]
pub fn check(rules: &UserRules, req: &Request) -> Result<(), Denied> {
    if rules.unrestricted() {
        return Ok(());
    }
    let mut keys: Option<Vec<KeyUse>> = None;
    let mut worst = Denied::Command;
    for selector in std::iter::once(&rules.root).chain(rules.selectors.iter()) {
        match check_selector(selector, req, &mut keys) {
            Ok(()) => return Ok(()),
            Err(d) => {
                if d.rank() > worst.rank() {
                    worst = d;
                }
            }
        }
    }
    Err(worst)
}

fn check_selector(
    s: &Selector,
    req: &Request,
    keys: &mut Option<Vec<KeyUse>>,
) -> Result<(), Denied> {
    if !s.all_commands && !req.spec.has(flags::NO_AUTH) && !s.allowed.get(req.id) {
        let first_arg = req.args.get(if req.is_subcommand { 2 } else { 1 });
        let allowed_by_first_arg = match (first_arg, s.first_args.get(&req.id)) {
            (Some(arg), Some(allowed)) => allowed.iter().any(|a| a.eq_ignore_ascii_case(arg)),
            _ => false,
        };
        if !allowed_by_first_arg {
            return Err(Denied::Command);
        }
    }
    if !s.all_keys && has_keys(req.spec) {
        if let Some(checked) = check_fixed_keys(s, req) {
            checked?;
            return check_channels(s, req);
        }
        let uses = keys.get_or_insert_with(|| req.spec.key_uses(req.args).unwrap_or_default());
        for k in uses.iter() {
            let Some(key) = req.args.get(k.index) else {
                continue;
            };
            if !key_allowed(s, key, k) {
                return Err(Denied::Key(k.index));
            }
        }
    }
    check_channels(s, req)
}

/// The keys of the common shape (one key spec, a fixed run of keys from a
/// fixed index: GET, SET, HSET, ...) checked without collecting them
/// first; None for any other shape.
#[inline]
fn check_fixed_keys(s: &Selector, req: &Request) -> Option<Result<(), Denied>> {
    let spec = req.spec;
    let (None, None, [only]) = (spec.getkeys, spec.key_flags_of, spec.key_specs) else {
        return None;
    };
    let (
        BeginSearch::Index(start),
        FindKeys::Range {
            lastkey, keystep, ..
        },
    ) = (only.begin_search, only.find_keys)
    else {
        return None;
    };
    let (start, lastkey) = (usize::try_from(start).ok()?, usize::try_from(lastkey).ok()?);
    let last = start + lastkey;
    if start == 0 || last >= req.args.len() {
        // Arguments the spec does not fit: no keys, as Redis finds none.
        return Some(Ok(()));
    }
    let step = usize::try_from(keystep).unwrap_or(1).max(1);
    for index in (start..=last).step_by(step) {
        let k = KeyUse {
            index,
            flags: only.flags,
        };
        if !key_allowed(s, req.args[index], &k) {
            return Some(Err(Denied::Key(index)));
        }
    }
    Some(Ok(()))
}

fn check_channels(s: &Selector, req: &Request) -> Result<(), Denied> {
    if !s.all_channels {
        for (index, is_pattern) in req.spec.channel_args.positions(req.args) {
            let channel = req.args[index];
            let allowed = s.channels.iter().any(|p| {
                // A pattern subscription must be allowed as that very
                // pattern; a channel is matched against the patterns.
                if is_pattern {
                    p.as_slice() == channel
                } else {
                    glob_match(p, channel, false)
                }
            });
            if !allowed {
                return Err(Denied::Channel(index));
            }
        }
    }
    Ok(())
}

fn has_keys(spec: &CommandSpec) -> bool {
    spec.getkeys.is_some() || !spec.key_specs.is_empty()
}

fn key_allowed(s: &Selector, key: &[u8], k: &KeyUse) -> bool {
    let mut needed = 0;
    if k.reads() {
        needed |= perm::READ;
    }
    if k.writes() {
        needed |= perm::WRITE;
    }
    s.patterns
        .iter()
        .any(|p| p.perms & needed == needed && glob_match(&p.pattern, key, false))
}

fn all_selectors(r: &UserRules) -> Vec<&Selector> {
    std::iter::once(&r.root).chain(&r.selectors).collect()
}

/// Whether a new set of rules allows fewer channels than the old one: some
/// selector of the old rules allowed every channel and none of the new
/// does, or an old channel pattern is in none of the new selectors.
pub fn channels_narrowed(before: &UserRules, after: &UserRules) -> bool {
    let (old, new) = (all_selectors(before), all_selectors(after));
    if new.iter().any(|s| s.all_channels) {
        return false;
    }
    if old.iter().any(|s| s.all_channels) {
        return true;
    }
    old.iter()
        .flat_map(|s| s.channels.iter())
        .any(|c| !new.iter().any(|s| s.channels.contains(c)))
}

/// Whether a subscription (to a channel, or to a pattern) is allowed by any
/// of the rules' selectors.
pub fn subscription_allowed(rules: &UserRules, name: &[u8], is_pattern: bool) -> bool {
    std::iter::once(&rules.root)
        .chain(rules.selectors.iter())
        .any(|s| {
            s.all_channels
                || s.channels.iter().any(|p| {
                    if is_pattern {
                        p.as_slice() == name
                    } else {
                        glob_match(p, name, false)
                    }
                })
        })
}
