//! An AOF base in command form (`aof-use-rdb-preamble no`): the commands
//! that rebuild the data, as redis-server 7.0's rewrite emits them. Strings
//! become SET; lists, sets, sorted sets and hashes RPUSH, SADD, ZADD and
//! HMSET of at most 64 items each; streams XADD per entry (or an XADD
//! MAXLEN 0 for an empty one), XSETID with the stream's counters, XGROUP
//! CREATE per group, and per consumer XCLAIM ... FORCE of its pending
//! entries (XGROUP CREATECONSUMER when it has none); a TTL is a PEXPIREAT
//! after the key's commands. The function libraries come first as
//! FUNCTION LOAD.

use std::borrow::Cow;

use crate::journal::encode_command;
use crate::keyspace::Entry;
use crate::types::stream::{StreamId, StreamValue};
use crate::types::string::StrValue;
use crate::types::Value;

/// Items per command (Redis's AOF_REWRITE_ITEMS_PER_CMD).
const ITEMS_PER_CMD: usize = 64;

pub fn write_select(out: &mut Vec<u8>, db: usize) {
    encode_command(
        &[
            b"SELECT".as_slice(),
            itoa::Buffer::new().format(db).as_bytes(),
        ],
        out,
    );
}

pub fn write_function(out: &mut Vec<u8>, code: &[u8]) {
    encode_command(&[b"FUNCTION".as_slice(), b"LOAD", code], out);
}

/// `verb key arg...` commands of at most 64 items of `width` arguments.
fn batched<'a>(
    out: &mut Vec<u8>,
    verb: &'a [u8],
    key: &'a [u8],
    width: usize,
    args: impl Iterator<Item = Cow<'a, [u8]>>,
) {
    let full = 2 + ITEMS_PER_CMD * width;
    let mut argv: Vec<Cow<[u8]>> = Vec::with_capacity(full);
    for arg in args {
        if argv.is_empty() {
            argv.push(Cow::Borrowed(verb));
            argv.push(Cow::Borrowed(key));
        }
        argv.push(arg);
        if argv.len() == full {
            encode_command(&argv, out);
            argv.clear();
        }
    }
    if !argv.is_empty() {
        encode_command(&argv, out);
    }
}

fn number(n: impl itoa::Integer) -> Vec<u8> {
    itoa::Buffer::new().format(n).as_bytes().to_vec()
}

fn id(id: StreamId) -> Vec<u8> {
    id.to_string().into_bytes()
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
            encode_command(&[b"SET".as_slice(), key, v], out);
        }
        Value::List(l) => batched(out, b"RPUSH", key, 1, l.iter().map(Cow::Borrowed)),
        Value::Set(s) => batched(
            out,
            b"SADD",
            key,
            1,
            s.iter().map(|m| Cow::Owned(m.with_bytes(|b| b.to_vec()))),
        ),
        Value::ZSet(z) => batched(
            out,
            b"ZADD",
            key,
            2,
            z.iter().flat_map(|(m, score)| {
                let mut text = Vec::new();
                crate::util::numbers::format_f64(score, &mut text);
                [Cow::Owned(text), Cow::Borrowed(m)]
            }),
        ),
        Value::Hash(h) => batched(
            out,
            b"HMSET",
            key,
            2,
            h.iter()
                .flat_map(|(f, v)| [Cow::Borrowed(f), Cow::Borrowed(v)]),
        ),
        Value::Stream(s) => write_stream(out, key, s),
    }
    if expire_ms > 0 {
        encode_command(&[b"PEXPIREAT".as_slice(), key, &number(expire_ms)], out);
    }
}

fn write_stream(out: &mut Vec<u8>, key: &[u8], s: &StreamValue) {
    if !s.is_empty() {
        s.range(StreamId::MIN, StreamId::MAX, false, |e| {
            let entry_id = id(e.id);
            let mut argv: Vec<&[u8]> = vec![b"XADD", key, &entry_id];
            for (f, v) in e.fields() {
                argv.push(f);
                argv.push(v);
            }
            encode_command(&argv, out);
            true
        });
    } else {
        // An empty stream: added and trimmed away at once.
        encode_command(
            &[b"XADD".as_slice(), key, b"MAXLEN", b"0", b"0-1", b"x", b"y"],
            out,
        );
    }
    encode_command(
        &[
            b"XSETID".as_slice(),
            key,
            &id(s.last_id),
            b"ENTRIESADDED",
            &number(s.entries_added),
            b"MAXDELETEDID",
            &id(s.max_deleted_id),
        ],
        out,
    );
    for (name, g) in &s.groups {
        encode_command(
            &[
                b"XGROUP".as_slice(),
                b"CREATE",
                key,
                name,
                &id(g.last_id),
                b"ENTRIESREAD",
                &number(g.entries_read),
            ],
            out,
        );
        for (cname, c) in &g.consumers {
            let ids: Vec<StreamId> = c.pel.range(.., &g.pel, cname).collect();
            if ids.is_empty() {
                encode_command(
                    &[b"XGROUP".as_slice(), b"CREATECONSUMER", key, name, cname],
                    out,
                );
                continue;
            }
            for pending in ids {
                let Some(nack) = g.pel.get(&pending) else {
                    continue;
                };
                encode_command(
                    &[
                        b"XCLAIM".as_slice(),
                        key,
                        name,
                        cname,
                        b"0",
                        &id(pending),
                        b"TIME",
                        &number(nack.delivery_time),
                        b"RETRYCOUNT",
                        &number(nack.delivery_count),
                        b"JUSTID",
                        b"FORCE",
                    ],
                    out,
                );
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
