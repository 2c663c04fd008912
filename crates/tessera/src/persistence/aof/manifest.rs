//! Redis 7's multi-part AOF manifest: one line per file,
//! `file <name> seq <n> type <b|h|i>`, naming the base file (an RDB image
//! or commands), the incremental files appended after it in order, and the
//! history files a finished rewrite left for deletion.

use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Base,
    Incr,
    History,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub name: String,
    pub seq: u64,
    pub kind: Kind,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<FileInfo>,
    pub incrs: Vec<FileInfo>,
    pub history: Vec<FileInfo>,
    /// Highest base and incr sequence numbers used so far.
    pub base_seq: u64,
    pub incr_seq: u64,
}

/// Splits a line into words as Redis's sdssplitargs does for the
/// manifest: spaces separate, double quotes group (with `\\` escapes).
fn words(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        let mut w = String::new();
        if c == '"' {
            chars.next();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => w.push(chars.next()?),
                    ch => w.push(ch),
                }
            }
        } else {
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() {
                    break;
                }
                w.push(ch);
                chars.next();
            }
        }
        out.push(w);
    }
    Some(out)
}

impl Manifest {
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let bad = || "Invalid AOF manifest file format".to_string();
        let mut m = Manifest::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let w = words(line).ok_or_else(bad)?;
            if w.len() % 2 != 0 {
                return Err(bad());
            }
            let (mut name, mut seq, mut kind) = (None, None, None);
            for pair in w.chunks(2) {
                match pair[0].as_str() {
                    "file" => name = Some(pair[1].clone()),
                    "seq" => seq = pair[1].parse::<u64>().ok(),
                    "type" => {
                        kind = match pair[1].as_str() {
                            "b" => Some(Kind::Base),
                            "i" => Some(Kind::Incr),
                            "h" => Some(Kind::History),
                            _ => return Err(bad()),
                        }
                    }
                    // Unknown keys are skipped, as Redis skips them.
                    _ => {}
                }
            }
            let (Some(name), Some(seq), Some(kind)) = (name, seq, kind) else {
                return Err(bad());
            };
            if name.contains('/') {
                return Err(bad());
            }
            let info = FileInfo { name, seq, kind };
            match kind {
                Kind::Base => {
                    if m.base.is_some() {
                        return Err("Found duplicate base file information".into());
                    }
                    m.base_seq = seq;
                    m.base = Some(info);
                }
                Kind::Incr => {
                    if seq <= m.incr_seq {
                        return Err("Found a non-monotonic sequence number".into());
                    }
                    m.incr_seq = seq;
                    m.incrs.push(info);
                }
                Kind::History => m.history.push(info),
            }
        }
        Ok(m)
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, f: &FileInfo| {
            let t = match f.kind {
                Kind::Base => 'b',
                Kind::Incr => 'i',
                Kind::History => 'h',
            };
            let name = if f.name.contains(' ') || f.name.contains('"') {
                format!("\"{}\"", f.name.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                f.name.clone()
            };
            out.push_str(&format!("file {name} seq {} type {t}\n", f.seq));
        };
        if let Some(b) = &self.base {
            line(&mut out, b);
        }
        for h in &self.history {
            line(&mut out, h);
        }
        for i in &self.incrs {
            line(&mut out, i);
        }
        out
    }

    pub fn manifest_name(basename: &str) -> String {
        format!("{basename}.manifest")
    }

    /// A new base file (the old one, if any, becomes history).
    pub fn new_base(&mut self, basename: &str, rdb: bool) -> FileInfo {
        if let Some(mut old) = self.base.take() {
            old.kind = Kind::History;
            self.history.push(old);
        }
        self.base_seq += 1;
        let ext = if rdb { "rdb" } else { "aof" };
        let f = FileInfo {
            name: format!("{basename}.{}.base.{ext}", self.base_seq),
            seq: self.base_seq,
            kind: Kind::Base,
        };
        self.base = Some(f.clone());
        f
    }

    /// A new incremental file appended to the list.
    pub fn new_incr(&mut self, basename: &str) -> FileInfo {
        self.incr_seq += 1;
        let f = FileInfo {
            name: format!("{basename}.{}.incr.aof", self.incr_seq),
            seq: self.incr_seq,
            kind: Kind::Incr,
        };
        self.incrs.push(f.clone());
        f
    }

    /// Moves every incremental file but the last to history (after a
    /// rewrite, whose base covers them).
    pub fn retire_incrs_before_last(&mut self) {
        let keep = self.incrs.pop();
        for mut f in self.incrs.drain(..) {
            f.kind = Kind::History;
            self.history.push(f);
        }
        self.incrs.extend(keep);
    }

    /// Writes the manifest atomically: a temporary file, fsync, rename,
    /// fsync of the directory.
    pub fn persist(&self, dir: &Path, basename: &str) -> std::io::Result<()> {
        use std::io::Write;
        let name = Manifest::manifest_name(basename);
        let tmp = dir.join(format!("temp-{name}"));
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(self.render().as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, dir.join(&name))?;
        std::fs::File::open(dir)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_redis_writes() {
        let text = "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\nfile appendonly.aof.2.incr.aof seq 2 type i\n";
        let m = Manifest::parse(text).expect("valid");
        assert_eq!(
            m.base.as_ref().map(|b| b.name.as_str()),
            Some("appendonly.aof.1.base.rdb")
        );
        assert_eq!(m.incrs.len(), 2);
        assert_eq!(m.render(), text);
        assert!(Manifest::parse("file x seq 1 type q\n").is_err());
        assert!(Manifest::parse("file a seq 2 type i\nfile b seq 1 type i\n").is_err());
        assert!(Manifest::parse("garbage\n").is_err());
    }
}
