//! The commands ACL rules speak of: every command and subcommand of the
//! command table by id, with its full name, ACL categories, parent and
//! subcommands. Built once from the table, so the rules, their
//! description and the checks agree with COMMAND INFO.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::commands::{self, acl as category};

pub struct Universe {
    /// Full name (`get`, `config|get`) by id.
    pub names: Vec<String>,
    /// ACL categories by id.
    pub categories: Vec<u32>,
    pub parent: Vec<Option<usize>>,
    /// Subcommand ids by id (empty for a plain command).
    pub subs: Vec<Vec<usize>>,
    /// Top-level command ids, in table order.
    pub tops: Vec<usize>,
    /// Lower-case full name → id.
    by_name: HashMap<String, usize>,
}

pub fn universe() -> &'static Universe {
    static U: OnceLock<Universe> = OnceLock::new();
    U.get_or_init(|| {
        let count = commands::command_count_with_subs();
        let mut u = Universe {
            names: Vec::with_capacity(count),
            categories: Vec::with_capacity(count),
            parent: vec![None; count],
            subs: vec![Vec::new(); count],
            tops: Vec::new(),
            by_name: HashMap::new(),
        };
        for id in 0..count {
            let (name, categories) =
                commands::by_id(id).map_or(("", 0), |(name, spec)| (name, spec.acl_categories()));
            u.names.push(name.to_string());
            u.categories.push(categories);
            u.by_name.insert(name.to_ascii_lowercase(), id);
        }
        for id in 0..count {
            match u.names[id].split_once('|') {
                Some((parent, _)) => {
                    if let Some(&p) = u.by_name.get(parent) {
                        u.parent[id] = Some(p);
                        u.subs[p].push(id);
                    }
                }
                None => u.tops.push(id),
            }
        }
        u
    })
}

impl Universe {
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// A command by name as ACL rules name it: `get`, or `config|get` for
    /// a subcommand of a container; case-insensitive. Nothing for more
    /// parts, or two parts where the first has no subcommands (Redis's
    /// strict lookup).
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        let mut parts = name.split('|');
        let first = parts.next()?;
        match (parts.next(), parts.next()) {
            (None, _) => self
                .by_name
                .get(first)
                .copied()
                .filter(|&id| self.parent[id].is_none()),
            (Some(_), None) => self.by_name.get(name.as_str()).copied(),
            _ => None,
        }
    }

    /// A category by name (case-insensitive): its bit.
    pub fn category(name: &[u8]) -> Option<u32> {
        category::NAMES
            .iter()
            .find(|(_, n)| name.eq_ignore_ascii_case(n.as_bytes()))
            .map(|(bit, _)| *bit)
    }
}
