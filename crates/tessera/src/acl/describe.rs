//! A user's rules written back as rules: the `user` lines of ACL LIST,
//! ACL SAVE and CONFIG REWRITE, and the fields of ACL GETUSER. Applying
//! the description to a new user gives the same permissions.

use super::rules::{perm, CommandBits, Selector, UserRules};
use super::universe::{universe, Universe};
use crate::commands::acl as category;

/// The user's flags, as ACL GETUSER lists them.
pub fn flags(rules: &UserRules) -> Vec<&'static str> {
    let mut flags = vec![if rules.enabled { "on" } else { "off" }];
    if rules.nopass {
        flags.push("nopass");
    }
    match rules.sanitize_payload {
        Some(false) => flags.push("skip-sanitize-payload"),
        Some(true) => flags.push("sanitize-payload"),
        None => {}
    }
    flags
}

/// Everything after `user <name> ` in an ACL LIST line.
pub fn user_line_rules(rules: &UserRules) -> String {
    let mut parts: Vec<String> = flags(rules).into_iter().map(String::from).collect();
    parts.extend(rules.passwords.iter().map(|p| format!("#{p}")));
    parts.push(selector(&rules.root));
    parts.extend(rules.selectors.iter().map(|s| format!("({})", selector(s))));
    parts.retain(|p| !p.is_empty());
    parts.join(" ")
}

/// A selector: keys, channels, then commands.
pub fn selector(s: &Selector) -> String {
    let mut parts = Vec::new();
    let keys = keys(s);
    if !keys.is_empty() {
        parts.push(keys);
    }
    if s.all_channels {
        parts.push("&*".to_string());
    } else {
        parts.push("resetchannels".to_string());
        let channels = channels(s);
        if !channels.is_empty() {
            parts.push(channels);
        }
    }
    parts.push(commands(s));
    parts.join(" ")
}

/// The key patterns, as ACL GETUSER's `keys` shows them.
pub fn keys(s: &Selector) -> String {
    if s.all_keys {
        return "~*".to_string();
    }
    let mut out = Vec::new();
    for p in &s.patterns {
        let prefix = match p.perms {
            perm::READ => "%R~",
            perm::WRITE => "%W~",
            _ => "~",
        };
        out.push(format!("{prefix}{}", String::from_utf8_lossy(&p.pattern)));
    }
    out.join(" ")
}

/// The channel patterns, as ACL GETUSER's `channels` shows them.
pub fn channels(s: &Selector) -> String {
    if s.all_channels {
        return "&*".to_string();
    }
    s.channels
        .iter()
        .map(|c| format!("&{}", String::from_utf8_lossy(c)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command rules, found the way Redis 7.0 finds them: start from
/// `+@all` (if commands added later are allowed) or `-@all`, add (or take
/// away) the category that fits best while one fits better than not,
/// then the single commands that still differ, then the first arguments.
/// (Redis emits the single commands in its command dictionary's hash
/// order, which changes from run to run; this emits them in table order.)
pub fn commands(s: &Selector) -> String {
    let u = universe();
    let additive = !s.future_commands;
    let mut rules: Vec<String> = vec![if additive { "-@all" } else { "+@all" }.to_string()];
    let mut fake = if additive {
        CommandBits::none()
    } else {
        CommandBits::all()
    };
    // What the chosen categories have not covered yet.
    let mut remaining = s.allowed.clone();
    let mut applied = vec![false; category::NAMES.len()];
    loop {
        let mut best = None;
        let (mut min_diff, mut max_same) = (usize::MAX, 0);
        for (j, &(bit, _)) in category::NAMES.iter().enumerate() {
            if applied[j] {
                continue;
            }
            let (on, off) = remaining.count_category(u, bit);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                best = Some(j);
                min_diff = diff;
                max_same = same;
            }
        }
        let Some(j) = best else {
            break;
        };
        let (bit, name) = category::NAMES[j];
        fake.set_category(u, bit, additive);
        remaining.set_category(u, bit, !additive);
        rules.push(format!("{}@{name}", if additive { '+' } else { '-' }));
        applied[j] = true;
    }
    single_commands(u, s, &mut fake, &mut rules);
    for (&id, args) in &s.first_args {
        for arg in args {
            rules.push(format!("+{}|{}", u.names[id], String::from_utf8_lossy(arg)));
        }
    }
    rules.join(" ")
}

fn single_commands(u: &Universe, s: &Selector, fake: &mut CommandBits, rules: &mut Vec<String>) {
    for &top in &u.tops {
        let want = s.allowed.get(top);
        if want != fake.get(top) {
            rules.push(format!("{}{}", if want { '+' } else { '-' }, u.names[top]));
            fake.set_with_subs(u, top, want);
        }
        for &sub in &u.subs[top] {
            let want = s.allowed.get(sub);
            if want != fake.get(sub) {
                rules.push(format!("{}{}", if want { '+' } else { '-' }, u.names[sub]));
                fake.set(sub, want);
            }
        }
    }
}
