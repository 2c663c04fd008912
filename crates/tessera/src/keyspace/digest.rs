//! DEBUG DIGEST and DEBUG DIGEST-VALUE, computed exactly as redis-server
//! 7.0 computes them, so equal datasets on the two servers give equal
//! digests: SHA-1s combined by XOR where order does not matter (keys,
//! set members, hash fields, sorted-set elements) and chained ("mixed")
//! where it does (list elements, stream entries, the parts of one item).

use crate::types::stream::StreamId;
use crate::types::Value;

pub type Digest = [u8; 20];

fn sha1(data: &[u8]) -> Digest {
    sha1_smol::Sha1::from(data).digest().bytes()
}

/// XORs the SHA-1 of `data` into `d` (order-independent).
pub fn xor(d: &mut Digest, data: &[u8]) {
    for (a, b) in d.iter_mut().zip(sha1(data)) {
        *a ^= b;
    }
}

/// XORs `data`'s SHA-1 into `d`, then replaces `d` by its own SHA-1
/// (order-dependent).
pub fn mix(d: &mut Digest, data: &[u8]) {
    xor(d, data);
    *d = sha1(d);
}

/// Redis's object type numbers (OBJ_STRING ... OBJ_STREAM).
fn type_number(v: &Value) -> u32 {
    match v {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
    }
}

/// A value's digest as DEBUG DIGEST-VALUE reports it (and as the
/// dataset digest folds it in, after the key name).
pub fn value_digest(d: &mut Digest, v: &Value, has_ttl: bool) {
    mix(d, &type_number(v).to_be_bytes());
    match v {
        Value::Str(s) => {
            let mut b = itoa::Buffer::new();
            mix(d, s.as_bytes(&mut b));
        }
        Value::List(l) => {
            for item in l.iter() {
                mix(d, item);
            }
        }
        Value::Set(s) => {
            for m in s.iter() {
                m.with_bytes(|b| xor(d, b));
            }
        }
        Value::ZSet(z) => {
            // Scores as `%.17g` (Redis 7.0 prints them so in both encodings).
            let mut text = Vec::new();
            for (m, score) in z.iter() {
                let mut e = [0u8; 20];
                mix(&mut e, m);
                text.clear();
                crate::util::numbers::format_f64(score, &mut text);
                mix(&mut e, &text);
                xor(d, &e);
            }
        }
        Value::Hash(h) => {
            for (f, val) in h.iter() {
                let mut e = [0u8; 20];
                mix(&mut e, f);
                mix(&mut e, val);
                xor(d, &e);
            }
        }
        Value::Stream(s) => {
            s.range(StreamId::MIN, StreamId::MAX, false, |entry| {
                mix(d, format!("{}.{}", entry.id.ms, entry.id.seq).as_bytes());
                for (f, val) in entry.fields() {
                    mix(d, f);
                    mix(d, val);
                }
                true
            });
        }
    }
    if has_ttl {
        xor(d, b"!!expire!!");
    }
}

/// One key's contribution to the dataset digest.
pub fn key_digest(key: &[u8], v: &Value, has_ttl: bool) -> Digest {
    let mut d = [0u8; 20];
    mix(&mut d, key);
    value_digest(&mut d, v, has_ttl);
    d
}

pub fn hex(d: &Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}
