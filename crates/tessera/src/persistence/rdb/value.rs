//! One value in RDB form, both ways: what follows a key's type byte in an
//! RDB file, and the body of a DUMP payload.
//!
//! Writing uses the types Redis 7.0 writes (listpacks for compact hashes
//! and sorted sets, quicklist 2 for lists, intsets, stream listpacks 2).
//! Reading accepts every type Redis 7.0 loads, including the ziplist and
//! zipmap forms of older files, and gives each value the encoding Redis
//! would give it under the current limits.

use std::sync::Arc;

use super::codec::*;
use super::packed::ListpackWriter;
use super::packed::{read_intset, read_listpack, read_ziplist, read_zipmap, write_intset, Item};
use super::{RdbError, RdbResult};
use crate::types::stream::{Group, NodeLimits, StreamId, StreamValue, ENTRIES_READ_INVALID};
use crate::types::{HashValue, Limits, ListValue, SetValue, StrValue, Value, ZSetValue};

/// How values are written.
#[derive(Clone, Copy, Debug)]
pub struct SaveOptions {
    /// `rdbcompression`: LZF for strings over 20 bytes.
    pub compress: bool,
    /// `list-max-listpack-size`: how lists are cut into quicklist nodes.
    pub list_max_listpack_size: i64,
}

impl Default for SaveOptions {
    fn default() -> Self {
        SaveOptions {
            compress: true,
            list_max_listpack_size: -2,
        }
    }
}

/// The encodings and node sizes loaded values get.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadLimits {
    pub types: Limits,
    pub stream: NodeLimits,
}

/// The RDB type byte a value is written with.
pub fn type_byte(v: &Value) -> u8 {
    match v {
        Value::Str(_) => TYPE_STRING,
        Value::List(_) => TYPE_LIST_QUICKLIST_2,
        Value::Set(s) if s.is_compact() => TYPE_SET_INTSET,
        Value::Set(_) => TYPE_SET,
        Value::ZSet(z) if z.is_pack() => TYPE_ZSET_LISTPACK,
        Value::ZSet(_) => TYPE_ZSET_2,
        Value::Hash(h) if h.is_compact() => TYPE_HASH_LISTPACK,
        Value::Hash(_) => TYPE_HASH,
        Value::Stream(_) => TYPE_STREAM_LISTPACKS_2,
    }
}

/// Writes the value's body (everything after the type byte).
pub fn write_value(out: &mut Vec<u8>, v: &Value, opts: &SaveOptions) {
    let compress = opts.compress;
    match v {
        Value::Str(StrValue::Int(n)) => write_int_string(out, *n),
        Value::Str(s) => {
            let mut scratch = itoa::Buffer::new();
            write_string(out, s.as_bytes(&mut scratch), compress);
        }
        Value::List(l) => write_list(out, l, opts),
        Value::Set(s) if s.is_compact() => {
            let mut members: Vec<i64> = s
                .iter()
                .filter_map(|m| match m {
                    crate::types::set::Member::Int(n) => Some(n),
                    crate::types::set::Member::Str(b) => crate::util::numbers::parse_i64(b),
                })
                .collect();
            members.sort_unstable();
            write_blob(out, &write_intset(&members), compress);
        }
        Value::Set(s) => {
            write_len(out, s.len() as u64);
            for m in s.iter() {
                m.with_bytes(|b| write_string(out, b, compress));
            }
        }
        Value::ZSet(z) if z.is_pack() => {
            let mut lp = ListpackWriter::new();
            let mut score_text = Vec::new();
            for (m, score) in z.iter() {
                lp.push(m);
                score_text.clear();
                crate::types::zset::format_pack_score(score, &mut score_text);
                lp.push(&score_text);
            }
            write_blob(out, &lp.finish(), compress);
        }
        Value::ZSet(z) => {
            write_len(out, z.len() as u64);
            // Highest score first, as Redis writes it (its loader then
            // always inserts at the head).
            for (m, score) in z.iter_from(z.len().saturating_sub(1), true) {
                write_string(out, m, compress);
                write_binary_double(out, score);
            }
        }
        Value::Hash(h) if h.is_compact() => {
            let mut lp = ListpackWriter::new();
            for (f, val) in h.iter() {
                lp.push(f);
                lp.push(val);
            }
            write_blob(out, &lp.finish(), compress);
        }
        Value::Hash(h) => {
            write_len(out, h.len() as u64);
            for (f, val) in h.iter() {
                write_string(out, f, compress);
                write_string(out, val, compress);
            }
        }
        Value::Stream(s) => write_stream(out, s, compress),
    }
}

/// The quicklist node budget Redis's `list-max-listpack-size` means:
/// negative values are byte sizes (-1 = 4 KiB ... -5 = 64 KiB), positive
/// ones entry counts.
fn node_budget(fill: i64) -> (usize, usize) {
    if fill >= 0 {
        (usize::MAX, fill.max(1) as usize)
    } else {
        let bytes = 4096usize << ((-fill).clamp(1, 5) - 1);
        (bytes, usize::MAX)
    }
}

fn write_list(out: &mut Vec<u8>, l: &ListValue, opts: &SaveOptions) {
    let (max_bytes, max_items) = node_budget(opts.list_max_listpack_size);
    let mut nodes: Vec<Vec<u8>> = Vec::new();
    let mut lp = ListpackWriter::new();
    for item in l.iter() {
        if !lp.is_empty() && (lp.len() >= max_items || lp.byte_len() + item.len() + 11 > max_bytes)
        {
            nodes.push(std::mem::replace(&mut lp, ListpackWriter::new()).finish());
        }
        lp.push(item);
    }
    if !lp.is_empty() {
        nodes.push(lp.finish());
    }
    write_len(out, nodes.len() as u64);
    for node in nodes {
        write_len(out, QUICKLIST_NODE_PACKED);
        write_blob(out, &node, opts.compress);
    }
}

const STREAM_ITEM_FLAG_DELETED: i64 = 1;
const STREAM_ITEM_FLAG_SAMEFIELDS: i64 = 2;
/// Entries per stream listpack written (Redis's stream-node-max-entries
/// default; any grouping loads).
const STREAM_NODE_ENTRIES: usize = 100;
const STREAM_NODE_BYTES: usize = 4096;

fn stream_id_key(id: StreamId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.ms.to_be_bytes());
    k[8..].copy_from_slice(&id.seq.to_be_bytes());
    k
}

fn write_stream(out: &mut Vec<u8>, s: &StreamValue, compress: bool) {
    // Gather entries into nodes: (master id, listpack).
    struct NodeBuilder {
        master: StreamId,
        fields: Vec<Vec<u8>>,
        body: ListpackWriter,
        count: usize,
    }
    fn finish(n: NodeBuilder) -> (StreamId, Vec<u8>) {
        let mut lp = ListpackWriter::new();
        lp.push_int(n.count as i64);
        lp.push_int(0);
        lp.push_int(n.fields.len() as i64);
        for f in &n.fields {
            lp.push(f);
        }
        lp.push_int(0);
        // The body was built apart, without its header: splice it in.
        let mut bytes = lp.finish();
        let body = n.body.finish();
        bytes.pop();
        bytes.extend_from_slice(&body[6..]);
        let total = bytes.len() as u32;
        bytes[0..4].copy_from_slice(&total.to_le_bytes());
        let elements = 4 + n.fields.len() as u64 + count_elements(&body);
        let declared = if elements < 65535 {
            elements as u16
        } else {
            65535
        };
        bytes[4..6].copy_from_slice(&declared.to_le_bytes());
        (n.master, bytes)
    }
    fn count_elements(lp: &[u8]) -> u64 {
        u16::from_le_bytes([lp[4], lp[5]]) as u64
    }

    let mut nodes: Vec<(StreamId, Vec<u8>)> = Vec::new();
    let mut cur: Option<NodeBuilder> = None;
    s.range(StreamId::MIN, StreamId::MAX, false, |e| {
        let pairs: Vec<(&[u8], &[u8])> = e.fields().collect();
        let full = cur.as_ref().is_some_and(|n| {
            n.count >= STREAM_NODE_ENTRIES || n.body.byte_len() >= STREAM_NODE_BYTES
        });
        if full {
            if let Some(n) = cur.take() {
                nodes.push(finish(n));
            }
        }
        let node = cur.get_or_insert_with(|| NodeBuilder {
            master: e.id,
            fields: pairs.iter().map(|(f, _)| f.to_vec()).collect(),
            body: ListpackWriter::new(),
            count: 0,
        });
        let same = node.fields.len() == pairs.len()
            && node
                .fields
                .iter()
                .zip(&pairs)
                .all(|(a, (b, _))| a[..] == **b);
        let body = &mut node.body;
        body.push_int(if same { STREAM_ITEM_FLAG_SAMEFIELDS } else { 0 });
        body.push_int(e.id.ms.wrapping_sub(node.master.ms) as i64);
        body.push_int(e.id.seq.wrapping_sub(node.master.seq) as i64);
        if same {
            for (_, v) in &pairs {
                body.push(v);
            }
        } else {
            body.push_int(pairs.len() as i64);
            for (f, v) in &pairs {
                body.push(f);
                body.push(v);
            }
        }
        let lp_count = if same {
            pairs.len() + 3
        } else {
            2 * pairs.len() + 4
        };
        body.push_int(lp_count as i64);
        node.count += 1;
        true
    });
    if let Some(n) = cur.take() {
        nodes.push(finish(n));
    }

    write_len(out, nodes.len() as u64);
    for (master, lp) in &nodes {
        write_blob(out, &stream_id_key(*master), false);
        write_blob(out, lp, compress);
    }
    write_len(out, s.len());
    write_len(out, s.last_id.ms);
    write_len(out, s.last_id.seq);
    write_len(out, s.first_id.ms);
    write_len(out, s.first_id.seq);
    write_len(out, s.max_deleted_id.ms);
    write_len(out, s.max_deleted_id.seq);
    write_len(out, s.entries_added);

    write_len(out, s.groups.len() as u64);
    for (name, g) in &s.groups {
        write_blob(out, name, compress);
        write_len(out, g.last_id.ms);
        write_len(out, g.last_id.seq);
        write_len(out, g.entries_read as u64);
        write_len(out, g.pel.len() as u64);
        for (id, nack) in g.pel.iter() {
            out.extend_from_slice(&stream_id_key(id));
            write_millis(out, nack.delivery_time);
            write_len(out, nack.delivery_count);
        }
        write_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            write_blob(out, cname, compress);
            write_millis(out, c.seen_time);
            let ids: Vec<StreamId> = c.pel.range(.., &g.pel, cname).collect();
            write_len(out, ids.len() as u64);
            for id in ids {
                out.extend_from_slice(&stream_id_key(id));
            }
        }
    }
}

// ---- reading ------------------------------------------------------------------------------

const DUPLICATE: RdbError = RdbError::Corrupt("duplicate element");

/// Reads a value of type `t`. `Ok(None)` is an empty value (Redis skips
/// such keys when loading and refuses them in RESTORE).
pub fn read_value(r: &mut Reader, t: u8, limits: &LoadLimits) -> RdbResult<Option<Value>> {
    let l = &limits.types;
    let value = match t {
        TYPE_STRING => match r.string_or_int()? {
            RdbString::Int(n) => Value::Str(StrValue::Int(n)),
            RdbString::Bytes(b) => Value::Str(StrValue::from_bytes(&b)),
        },
        TYPE_LIST => {
            let n = r.count(1)?;
            let mut list = ListValue::new();
            for _ in 0..n {
                list.push(crate::types::list::End::Tail, &r.string()?);
            }
            Value::List(list)
        }
        TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
            let nodes = r.count(1)?;
            let mut list = ListValue::new();
            for _ in 0..nodes {
                let container = if t == TYPE_LIST_QUICKLIST_2 {
                    r.len()?
                } else {
                    QUICKLIST_NODE_PACKED
                };
                let blob = r.string()?;
                match container {
                    QUICKLIST_NODE_PLAIN => list.push(crate::types::list::End::Tail, &blob),
                    QUICKLIST_NODE_PACKED => {
                        let items = if t == TYPE_LIST_QUICKLIST_2 {
                            r.note_packed_blob();
                            read_listpack(&blob)?
                        } else {
                            read_ziplist(&blob)?
                        };
                        for item in items {
                            list.push(crate::types::list::End::Tail, &item.into_bytes());
                        }
                    }
                    _ => return Err(RdbError::Corrupt("unknown quicklist node container")),
                }
            }
            Value::List(list)
        }
        TYPE_LIST_ZIPLIST => {
            let items = read_ziplist(&r.string()?)?;
            let mut list = ListValue::new();
            for item in items {
                list.push(crate::types::list::End::Tail, &item.into_bytes());
            }
            Value::List(list)
        }
        TYPE_SET => {
            let n = r.count(1)?;
            let mut set: Option<SetValue> = None;
            for _ in 0..n {
                let m = r.string()?;
                let s = set.get_or_insert_with(|| SetValue::new_for(&m));
                if !s.add(&m, l) {
                    return Err(DUPLICATE);
                }
            }
            match set {
                Some(s) => Value::Set(Box::new(s)),
                None => return Ok(None),
            }
        }
        TYPE_SET_INTSET => {
            r.note_packed_blob();
            let members = read_intset(&r.string()?)?;
            let mut s = SetValue::new_intset();
            let mut scratch = itoa::Buffer::new();
            for m in members {
                s.add(scratch.format(m).as_bytes(), l);
            }
            Value::Set(Box::new(s))
        }
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count(9)?;
            let mut items: Vec<(Vec<u8>, f64)> = Vec::with_capacity(n);
            for _ in 0..n {
                let m = r.string()?;
                let score = if t == TYPE_ZSET_2 {
                    r.binary_double()?
                } else {
                    r.text_double()?
                };
                if score.is_nan() {
                    return Err(RdbError::Corrupt("sorted set score is NaN"));
                }
                items.push((m, score));
            }
            zset_from(items, l)?
        }
        TYPE_ZSET_ZIPLIST | TYPE_ZSET_LISTPACK => {
            let blob = r.string()?;
            let items = if t == TYPE_ZSET_LISTPACK {
                r.note_packed_blob();
                read_listpack(&blob)?
            } else {
                read_ziplist(&blob)?
            };
            if items.len() % 2 != 0 {
                return Err(RdbError::Corrupt("sorted set listpack with odd length"));
            }
            let mut pairs = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(m), Some(s)) = (it.next(), it.next()) {
                let score = match s {
                    Item::Int(n) => n as f64,
                    Item::Bytes(b) => parse_score(&b)?,
                };
                pairs.push((m.into_bytes(), score));
            }
            zset_from(pairs, l)?
        }
        TYPE_HASH => {
            let n = r.count(2)?;
            let mut h = HashValue::new();
            for _ in 0..n {
                let f = r.string()?;
                let v = r.string()?;
                if !h.set(&f, &v, l) {
                    return Err(DUPLICATE);
                }
            }
            Value::Hash(Box::new(h))
        }
        TYPE_HASH_ZIPMAP => {
            let mut h = HashValue::new();
            for (f, v) in read_zipmap(&r.string()?)? {
                if !h.set(&f, &v, l) {
                    return Err(DUPLICATE);
                }
            }
            Value::Hash(Box::new(h))
        }
        TYPE_HASH_ZIPLIST | TYPE_HASH_LISTPACK => {
            let blob = r.string()?;
            let items = if t == TYPE_HASH_LISTPACK {
                r.note_packed_blob();
                read_listpack(&blob)?
            } else {
                read_ziplist(&blob)?
            };
            if items.len() % 2 != 0 {
                return Err(RdbError::Corrupt("hash listpack with odd length"));
            }
            let mut h = HashValue::new();
            let mut it = items.into_iter();
            while let (Some(f), Some(v)) = (it.next(), it.next()) {
                if !h.set(&f.into_bytes(), &v.into_bytes(), l) {
                    return Err(DUPLICATE);
                }
            }
            Value::Hash(Box::new(h))
        }
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 => {
            return read_stream(r, t == TYPE_STREAM_LISTPACKS_2, limits.stream)
                .map(|s| Some(Value::Stream(Box::new(s))))
        }
        TYPE_MODULE | TYPE_MODULE_2 => return Err(RdbError::Module),
        _ => return Err(RdbError::Corrupt("unknown value type")),
    };
    Ok((value.element_count() > 0 || matches!(value, Value::Str(_))).then_some(value))
}

fn parse_score(b: &[u8]) -> RdbResult<f64> {
    let s = std::str::from_utf8(b).map_err(|_| RdbError::Corrupt("invalid score"))?;
    let d = match s {
        "inf" | "+inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        _ => s
            .parse::<f64>()
            .map_err(|_| RdbError::Corrupt("invalid score"))?,
    };
    if d.is_nan() {
        return Err(RdbError::Corrupt("sorted set score is NaN"));
    }
    Ok(d)
}

fn zset_from(mut items: Vec<(Vec<u8>, f64)>, l: &Limits) -> RdbResult<Value> {
    if items.is_empty() {
        return Ok(Value::ZSet(Box::new(ZSetValue::for_first_member(l, 0))));
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    if items.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(DUPLICATE);
    }
    items.sort_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
    let refs: Vec<(&[u8], f64)> = items.iter().map(|(m, s)| (&m[..], *s)).collect();
    Ok(Value::ZSet(Box::new(ZSetValue::from_sorted(&refs, l))))
}

fn read_stream_id(r: &mut Reader) -> RdbResult<StreamId> {
    let raw = r.bytes(16)?;
    let mut ms = [0u8; 8];
    let mut seq = [0u8; 8];
    ms.copy_from_slice(&raw[..8]);
    seq.copy_from_slice(&raw[8..]);
    Ok(StreamId::new(
        u64::from_be_bytes(ms),
        u64::from_be_bytes(seq),
    ))
}

fn read_stream(r: &mut Reader, v2: bool, node_limits: NodeLimits) -> RdbResult<StreamValue> {
    const BAD: RdbError = RdbError::Corrupt("invalid stream");
    let mut s = StreamValue::new();
    let nodes = r.count(2)?;
    let mut last_loaded: Option<StreamId> = None;
    let mut live = 0u64;
    for _ in 0..nodes {
        let key = r.string()?;
        if key.len() != 16 {
            return Err(BAD);
        }
        let mut ms = [0u8; 8];
        let mut seq = [0u8; 8];
        ms.copy_from_slice(&key[..8]);
        seq.copy_from_slice(&key[8..]);
        let master = StreamId::new(u64::from_be_bytes(ms), u64::from_be_bytes(seq));
        r.note_packed_blob();
        let items = read_listpack(&r.string()?)?;
        if items.is_empty() {
            return Err(RdbError::Corrupt("empty listpack inside stream"));
        }
        let mut it = items.into_iter();
        let next_int = |it: &mut std::vec::IntoIter<Item>| -> RdbResult<i64> {
            it.next().and_then(|i| i.as_int()).ok_or(BAD)
        };
        let count = next_int(&mut it)?;
        let deleted = next_int(&mut it)?;
        let nfields = next_int(&mut it)?;
        if count < 0 || deleted < 0 || nfields < 0 || nfields as usize > it.len() {
            return Err(BAD);
        }
        let master_fields: Vec<Vec<u8>> = (0..nfields)
            .map(|_| it.next().map(Item::into_bytes).ok_or(BAD))
            .collect::<RdbResult<_>>()?;
        if next_int(&mut it)? != 0 {
            return Err(BAD);
        }
        let (mut seen_live, mut seen_deleted) = (0i64, 0i64);
        while it.len() > 0 {
            let flags = next_int(&mut it)?;
            let id = StreamId::new(
                master.ms.wrapping_add(next_int(&mut it)? as u64),
                master.seq.wrapping_add(next_int(&mut it)? as u64),
            );
            let mut pairs: Vec<Vec<u8>> = Vec::new();
            if flags & STREAM_ITEM_FLAG_SAMEFIELDS != 0 {
                for f in &master_fields {
                    pairs.push(f.clone());
                    pairs.push(it.next().ok_or(BAD)?.into_bytes());
                }
            } else {
                let n = next_int(&mut it)?;
                if n < 0 || (n as usize).saturating_mul(2) > it.len() {
                    return Err(BAD);
                }
                for _ in 0..n * 2 {
                    pairs.push(it.next().ok_or(BAD)?.into_bytes());
                }
            }
            let lp_count = next_int(&mut it)?;
            let expected = if flags & STREAM_ITEM_FLAG_SAMEFIELDS != 0 {
                pairs.len() / 2 + 3
            } else {
                pairs.len() + 4
            };
            if lp_count as usize != expected {
                return Err(BAD);
            }
            if last_loaded.is_some_and(|l| id <= l) || id < master {
                return Err(BAD);
            }
            last_loaded = Some(id);
            if flags & STREAM_ITEM_FLAG_DELETED != 0 {
                seen_deleted += 1;
                continue;
            }
            seen_live += 1;
            let refs: Vec<&[u8]> = pairs.iter().map(|p| &p[..]).collect();
            s.append(id, &refs, node_limits);
            live += 1;
        }
        if seen_live != count || seen_deleted != deleted {
            return Err(BAD);
        }
    }
    let length = r.len()?;
    let last_id = StreamId::new(r.len()?, r.len()?);
    if length != live || last_loaded.is_some_and(|l| l > last_id) {
        return Err(BAD);
    }
    s.last_id = last_id;
    if v2 {
        s.first_id = StreamId::new(r.len()?, r.len()?);
        s.max_deleted_id = StreamId::new(r.len()?, r.len()?);
        s.entries_added = r.len()?;
    } else {
        s.first_id = s.first_stored_id().unwrap_or_default();
        s.max_deleted_id = StreamId::MIN;
        s.entries_added = length;
    }

    let groups = r.count(3)?;
    for _ in 0..groups {
        let name = r.string()?;
        let last_id = StreamId::new(r.len()?, r.len()?);
        let entries_read = if v2 {
            r.len()? as i64
        } else {
            s.estimate_distance(last_id)
        };
        let mut group = Group::new(last_id, entries_read.max(ENTRIES_READ_INVALID));
        let pel_len = r.count(16 + 8 + 1)?;
        let mut nacks: Vec<(StreamId, i64, u64)> = Vec::with_capacity(pel_len);
        for _ in 0..pel_len {
            let id = read_stream_id(r)?;
            let time = r.millis()?;
            let count = r.len()?;
            nacks.push((id, time, count));
        }
        nacks.sort_by_key(|n| n.0);
        if nacks.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(DUPLICATE);
        }
        let consumers = r.count(1 + 8 + 1)?;
        let mut owned = 0usize;
        for _ in 0..consumers {
            let cname = r.string()?;
            let seen = r.millis()?;
            let (key, created) = group.consumer_or_create(&cname, seen);
            if !created {
                return Err(DUPLICATE);
            }
            let ids = r.count(16)?;
            for _ in 0..ids {
                let id = read_stream_id(r)?;
                let Ok(i) = nacks.binary_search_by_key(&id, |n| n.0) else {
                    return Err(RdbError::Corrupt("consumer entry not in the group's PEL"));
                };
                if group.pel.get(&id).is_some() {
                    return Err(DUPLICATE);
                }
                let (_, time, count) = nacks[i];
                group.assign(id, &Arc::clone(&key), time, count);
                owned += 1;
            }
        }
        if owned != nacks.len() {
            return Err(RdbError::Corrupt("group PEL entry without a consumer"));
        }
        if s.groups.insert(name.into_boxed_slice(), group).is_some() {
            return Err(DUPLICATE);
        }
    }
    Ok(s)
}
