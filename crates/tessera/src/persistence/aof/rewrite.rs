//! An AOF base in command form (`aof-use-rdb-preamble no`): the commands
//! that rebuild the data, as redis-server 7.0's rewrite emits them. Strings
//! become SET; lists, sets, sorted sets and hashes RPUSH, SADD, ZADD and
//! HMSET of at most 64 items each; streams XADD per entry (or an XADD
//! MAXLEN 0 for an empty one), XSETID with the stream's counters, XGROUP
//! CREATE per group, and per consumer XCLAIM ... FORCE of its pending
//! entries (XGROUP CREATECONSUMER when it has none); a TTL is a PEXPIREAT
//! after the key's commands. The function libraries come first as
//! FUNCTION LOAD.

use crate::keyspace::Entry;
use crate::types::stream::{StreamId, StreamValue};
use crate::types::string::StrValue;
use crate::types::Value;

/// Items per command (Redis's AOF_REWRITE_ITEMS_PER_CMD).
const ITEMS_PER_CMD: usize = 64;

fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(b.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

fn count(out: &mut Vec<u8>, n: usize) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn int(out: &mut Vec<u8>, n: impl itoa::Integer) {
    bulk(out, itoa::Buffer::new().format(n).as_bytes());
}

fn id(out: &mut Vec<u8>, id: StreamId) {
    bulk(out, id.to_string().as_bytes());
}

fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    count(out, args.len());
    for a in args {
        bulk(out, a);
    }
}

pub fn write_select(out: &mut Vec<u8>, db: usize) {
    count(out, 2);
    bulk(out, b"SELECT");
    int(out, db);
}

pub fn write_function(out: &mut Vec<u8>, code: &[u8]) {
    command(out, &[b"FUNCTION", b"LOAD", code]);
}

/// Writes `items` as `verb key item...` commands of at most 64 items, each
/// item `width` arguments wide.
fn batched<'a>(
    out: &mut Vec<u8>,
    verb: &[u8],
    key: &[u8],
    total: usize,
    width: usize,
    items: impl Iterator<Item = Vec<&'a [u8]>>,
    mut scratch: impl FnMut(&mut Vec<u8>, &[&'a [u8]]),
) {
    let mut left = total;
    let mut in_cmd = 0;
    for item in items {
        if in_cmd == 0 {
            let n = left.min(ITEMS_PER_CMD);
            count(out, 2 + n * width);
            bulk(out, verb);
            bulk(out, key);
        }
        scratch(out, &item);
        in_cmd += 1;
        left = left.saturating_sub(1);
        if in_cmd == ITEMS_PER_CMD {
            in_cmd = 0;
        }
    }
}

/// The commands that rebuild `key`, then its PEXPIREAT (`expire_ms` > 0).
pub fn write_key(out: &mut Vec<u8>, key: &[u8], entry: &Entry, expire_ms: i64) {
    match &entry.value {
        Value::Str(s) => {
            let mut scratch = itoa::Buffer::new();
            let v = match s {
                StrValue::Int(n) => scratch.format(*n).as_bytes(),
                s => s.as_bytes(&mut scratch),
            };
            command(out, &[b"SET", key, v]);
        }
        Value::List(l) => {
            batched(
                out,
                b"RPUSH",
                key,
                l.len(),
                1,
                l.iter().map(|i| vec![i]),
                |o, it| bulk(o, it[0]),
            );
        }
        Value::Set(s) => {
            let members: Vec<Vec<u8>> = s.iter().map(|m| m.with_bytes(|b| b.to_vec())).collect();
            batched(
                out,
                b"SADD",
                key,
                members.len(),
                1,
                members.iter().map(|m| vec![&m[..]]),
                |o, it| bulk(o, it[0]),
            );
        }
        Value::ZSet(z) => {
            let mut left = z.len();
            let mut in_cmd = 0;
            let mut score_text = Vec::new();
            for (m, score) in z.iter() {
                if in_cmd == 0 {
                    count(out, 2 + left.min(ITEMS_PER_CMD) * 2);
                    bulk(out, b"ZADD");
                    bulk(out, key);
                }
                score_text.clear();
                crate::util::numbers::format_f64(score, &mut score_text);
                bulk(out, &score_text);
                bulk(out, m);
                in_cmd += 1;
                left -= 1;
                if in_cmd == ITEMS_PER_CMD {
                    in_cmd = 0;
                }
            }
        }
        Value::Hash(h) => {
            batched(
                out,
                b"HMSET",
                key,
                h.len(),
                2,
                h.iter().map(|(f, v)| vec![f, v]),
                |o, it| {
                    bulk(o, it[0]);
                    bulk(o, it[1]);
                },
            );
        }
        Value::Stream(s) => write_stream(out, key, s),
    }
    if expire_ms > 0 {
        count(out, 3);
        bulk(out, b"PEXPIREAT");
        bulk(out, key);
        int(out, expire_ms);
    }
}

fn write_stream(out: &mut Vec<u8>, key: &[u8], s: &StreamValue) {
    if !s.is_empty() {
        s.range(StreamId::MIN, StreamId::MAX, false, |e| {
            let pairs: Vec<(&[u8], &[u8])> = e.fields().collect();
            count(out, 3 + pairs.len() * 2);
            bulk(out, b"XADD");
            bulk(out, key);
            id(out, e.id);
            for (f, v) in pairs {
                bulk(out, f);
                bulk(out, v);
            }
            true
        });
    } else {
        // An empty stream: added and trimmed away at once.
        count(out, 7);
        bulk(out, b"XADD");
        bulk(out, key);
        bulk(out, b"MAXLEN");
        bulk(out, b"0");
        id(out, StreamId { ms: 0, seq: 1 });
        bulk(out, b"x");
        bulk(out, b"y");
    }
    count(out, 7);
    bulk(out, b"XSETID");
    bulk(out, key);
    id(out, s.last_id);
    bulk(out, b"ENTRIESADDED");
    int(out, s.entries_added);
    bulk(out, b"MAXDELETEDID");
    id(out, s.max_deleted_id);
    for (name, g) in &s.groups {
        count(out, 7);
        bulk(out, b"XGROUP");
        bulk(out, b"CREATE");
        bulk(out, key);
        bulk(out, name);
        id(out, g.last_id);
        bulk(out, b"ENTRIESREAD");
        int(out, g.entries_read);
        for (cname, c) in &g.consumers {
            let ids: Vec<StreamId> = c.pel.range(.., &g.pel, cname).collect();
            if ids.is_empty() {
                command(out, &[b"XGROUP", b"CREATECONSUMER", key, name, cname]);
                continue;
            }
            for pending in ids {
                let Some(nack) = g.pel.get(&pending) else {
                    continue;
                };
                count(out, 12);
                bulk(out, b"XCLAIM");
                bulk(out, key);
                bulk(out, name);
                bulk(out, cname);
                bulk(out, b"0");
                id(out, pending);
                bulk(out, b"TIME");
                int(out, nack.delivery_time);
                bulk(out, b"RETRYCOUNT");
                int(out, nack.delivery_count);
                bulk(out, b"JUSTID");
                bulk(out, b"FORCE");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Touch;
    use crate::persistence::aof::reader::{read_commands, End, TxMark};
    use crate::types::list::ListValue;

    fn commands(bytes: &[u8]) -> Vec<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let end = read_commands(bytes, &|_| TxMark::Neither, &mut |c| {
            out.push(c);
            Ok(())
        });
        assert!(matches!(end, Ok(End::Complete)));
        out
    }

    #[test]
    fn collections_go_out_64_items_a_command_then_the_ttl() {
        let mut l = ListValue::new();
        for i in 0..130 {
            l.push(crate::types::list::End::Tail, i.to_string().as_bytes());
        }
        let entry = Entry::new(Value::List(l), Touch::None);
        let mut out = Vec::new();
        write_key(&mut out, b"k", &entry, 1_700_000_000_000);
        let cmds = commands(&out);
        let shape: Vec<(Vec<u8>, usize)> = cmds.iter().map(|c| (c[0].clone(), c.len())).collect();
        assert_eq!(
            shape,
            vec![
                (b"RPUSH".to_vec(), 66),
                (b"RPUSH".to_vec(), 66),
                (b"RPUSH".to_vec(), 4),
                (b"PEXPIREAT".to_vec(), 3),
            ]
        );
        assert_eq!(cmds[2][3], b"129");
        assert_eq!(cmds[3][2], b"1700000000000");
    }
}
