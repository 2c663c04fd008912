//! Round trips of every type and encoding through the RDB value codec,
//! and refusals of corrupted payloads.

use proptest::prelude::*;

use super::value::{LoadLimits, SaveOptions};
use super::*;
use crate::types::stream::{NodeLimits, StreamId, StreamValue};
use crate::types::zset::AddFlags;
use crate::types::{HashValue, Limits, ListValue, SetValue, StrValue, Value, ZSetValue};

/// A value's type, encoding and contents in a comparable form.
fn describe(v: &Value) -> (String, String, Vec<String>) {
    let mut items: Vec<String> = Vec::new();
    match v {
        Value::Str(s) => {
            let mut b = itoa::Buffer::new();
            items.push(format!("{:?}", s.as_bytes(&mut b)));
        }
        Value::List(l) => items.extend(l.iter().map(|i| format!("{i:?}"))),
        Value::Set(s) => {
            items.extend(s.iter().map(|m| format!("{:?}", m.to_vec())));
            items.sort();
        }
        Value::Hash(h) => {
            items.extend(h.iter().map(|(f, v)| format!("{f:?}={v:?}")));
            items.sort();
        }
        Value::ZSet(z) => items.extend(z.iter().map(|(m, s)| format!("{m:?}@{s}"))),
        Value::Stream(s) => {
            s.range(StreamId::MIN, StreamId::MAX, false, |e| {
                let f: Vec<_> = e.fields().map(|(a, b)| format!("{a:?}={b:?}")).collect();
                items.push(format!("{:?} {}", e.id, f.join(",")));
                true
            });
            items.push(format!(
                "last={:?} first={:?} maxdel={:?} added={}",
                s.last_id, s.first_id, s.max_deleted_id, s.entries_added
            ));
            for (name, g) in &s.groups {
                let pel: Vec<_> = g
                    .pel
                    .iter()
                    .map(|(id, n)| {
                        format!(
                            "{id:?}:{:?}:{}:{}",
                            n.consumer, n.delivery_time, n.delivery_count
                        )
                    })
                    .collect();
                let cons: Vec<_> = g
                    .consumers
                    .iter()
                    .map(|(c, st)| {
                        let ids: Vec<_> = st.pel.range(.., &g.pel, c).collect();
                        format!("{c:?}@{} {ids:?}", st.seen_time)
                    })
                    .collect();
                items.push(format!(
                    "group {name:?} {:?} {} {pel:?} {cons:?}",
                    g.last_id, g.entries_read
                ));
            }
        }
    }
    // A loaded string gets the encoding a fresh SET would give it (as in
    // Redis, where loading tries the integer and embstr forms again).
    let encoding = match v {
        Value::Str(s) => {
            let mut b = itoa::Buffer::new();
            StrValue::from_bytes(s.as_bytes(&mut b)).encoding_name()
        }
        _ => v.encoding_name(),
    };
    (v.type_name().into(), encoding.into(), items)
}

fn round_trip(v: &Value, compress: bool) -> Value {
    let opts = SaveOptions {
        compress,
        list_max_listpack_size: -2,
    };
    let payload = dump_payload(v, &opts);
    assert!(verify_payload(&payload));
    read_payload(&payload, &LoadLimits::default(), &mut 0)
        .expect("decodes")
        .expect("not empty")
}

fn element() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (-100_000i64..100_000).prop_map(|n| n.to_string().into_bytes()),
        any::<i64>().prop_map(|n| n.to_string().into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..12),
        proptest::collection::vec(b'a'..=b'c', 15..90),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let l = Limits::default();
    prop_oneof![
        element().prop_map(|b| Value::Str(StrValue::from_bytes(&b))),
        proptest::collection::vec(any::<u8>(), 0..3000).prop_map(|b| Value::Str(StrValue::raw(b))),
        proptest::collection::vec(element(), 1..400)
            .prop_map(|items| { Value::List(ListValue::from_items(items.iter().map(|i| &i[..]))) }),
        proptest::collection::vec(element(), 1..300).prop_map(move |items| {
            let mut s = SetValue::new_for(&items[0]);
            for i in &items {
                s.add(i, &l);
            }
            Value::Set(Box::new(s))
        }),
        proptest::collection::vec(
            (-1000i64..1000).prop_map(|n| n.to_string().into_bytes()),
            1..600
        )
        .prop_map(move |items| {
            let mut s = SetValue::new_intset();
            for i in &items {
                s.add(i, &l);
            }
            Value::Set(Box::new(s))
        }),
        proptest::collection::vec((element(), element()), 1..200).prop_map(move |pairs| {
            let mut h = HashValue::new();
            for (f, v) in &pairs {
                h.set(f, v, &l);
            }
            Value::Hash(Box::new(h))
        }),
        proptest::collection::vec((element(), -1e6f64..1e6), 1..250).prop_map(move |pairs| {
            let mut z = ZSetValue::for_first_member(&l, pairs[0].0.len());
            for (m, s) in &pairs {
                let s = if *s > 9e5 { s.round() } else { *s };
                z.add(m, s, AddFlags::default(), &l);
            }
            Value::ZSet(Box::new(z))
        }),
        (
            proptest::collection::vec(proptest::collection::vec(element(), 2..7), 1..250),
            0u8..4
        )
            .prop_map(|(entries, groups)| {
                let mut s = StreamValue::new();
                for (i, fields) in entries.iter().enumerate() {
                    let mut pairs: Vec<&[u8]> = fields.iter().map(|f| &f[..]).collect();
                    if pairs.len() % 2 == 1 {
                        pairs.pop();
                    }
                    let id = StreamId::new(1000 + (i as u64 / 3), i as u64 % 3);
                    s.append(id, &pairs, NodeLimits::default());
                }
                for g in 0..groups {
                    let mut group = crate::types::stream::Group::new(StreamId::new(1000, 1), 2);
                    let (c, _) = group.consumer_or_create(format!("c{g}").as_bytes(), 77);
                    group.assign(StreamId::new(1000, 0), &c, 123, 2);
                    group.assign(StreamId::new(1000, 1), &c, 124, 1);
                    group.consumer_or_create(b"idle", 5);
                    s.groups
                        .insert(format!("g{g}").into_bytes().into_boxed_slice(), group);
                }
                Value::Stream(Box::new(s))
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_type_and_encoding_round_trips(v in value(), compress in any::<bool>()) {
        let back = round_trip(&v, compress);
        prop_assert_eq!(describe(&back), describe(&v));
    }

    #[test]
    fn corrupted_payloads_never_panic(v in value(), flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4), cut in any::<prop::sample::Index>()) {
        let payload = dump_payload(&v, &SaveOptions::default());
        let body_len = payload.len() - 10;
        let mut bad = payload[..body_len].to_vec();
        for (i, bit) in &flips {
            let at = i.index(bad.len());
            bad[at] ^= 1 << bit;
        }
        let _ = value::read_value(&mut codec::Reader::new(&bad[1..]), bad[0], &LoadLimits::default());
        let cut = cut.index(body_len);
        let _ = value::read_value(&mut codec::Reader::new(&payload[1..cut.max(1)]), payload[0], &LoadLimits::default());
    }
}

#[test]
fn dump_of_hello_matches_redis() {
    // redis-server 7.0: SET k hello; DUMP k.
    let v = Value::Str(StrValue::from_bytes(b"hello"));
    let p = dump_payload(&v, &SaveOptions::default());
    assert_eq!(&p[..9], b"\x00\x05hello\x0a\x00");
    assert!(verify_payload(&p));
}

#[test]
fn stream_with_deleted_tail_keeps_its_metadata() {
    let mut s = StreamValue::new();
    for i in 1..=5u64 {
        s.append(StreamId::new(i, 0), &[b"f", b"v"], NodeLimits::default());
    }
    s.delete(StreamId::new(5, 0));
    s.delete(StreamId::new(2, 0));
    let v = Value::Stream(Box::new(s));
    assert_eq!(describe(&round_trip(&v, true)), describe(&v));
}
