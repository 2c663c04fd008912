//! Property tests for the reply decoder: whatever `Frame::write_to` produces
//! decodes back to the same frame, prefixes of it are reported incomplete, and
//! arbitrary input never makes the decoder panic.

use proptest::prelude::*;
use tessera_resp::frame::{parse_frame, Frame};

fn line_text() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'),
        0..20,
    )
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..40)
}

fn double_text() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| f.to_string().into_bytes()),
        any::<i32>().prop_map(|i| i.to_string().into_bytes()),
        prop::sample::select(vec![&b"inf"[..], b"-inf", b"nan", b"1.5e-7", b"0"])
            .prop_map(|s| s.to_vec()),
    ]
}

fn big_number() -> impl Strategy<Value = Vec<u8>> {
    (any::<bool>(), "[0-9]{1,40}").prop_map(|(neg, digits)| {
        let mut out = if neg { b"-".to_vec() } else { Vec::new() };
        out.extend_from_slice(digits.as_bytes());
        out
    })
}

fn leaf() -> impl Strategy<Value = Frame> {
    prop_oneof![
        line_text().prop_map(Frame::Simple),
        line_text().prop_map(Frame::Error),
        any::<i64>().prop_map(Frame::Integer),
        bytes().prop_map(Frame::Bulk),
        Just(Frame::NullBulk),
        Just(Frame::NullArray),
        Just(Frame::Null),
        double_text().prop_map(Frame::Double),
        any::<bool>().prop_map(Frame::Boolean),
        big_number().prop_map(Frame::BigNumber),
        bytes().prop_map(Frame::BulkError),
        (any::<[u8; 3]>(), bytes()).prop_map(|(format, text)| Frame::Verbatim { format, text }),
    ]
}

fn frame() -> impl Strategy<Value = Frame> {
    leaf().prop_recursive(4, 64, 6, |inner| {
        let pairs = prop::collection::vec((inner.clone(), inner.clone()), 0..4);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Array),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Set),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Push),
            pairs.clone().prop_map(Frame::Map),
            (pairs, inner).prop_map(|(attrs, frame)| Frame::Attribute {
                attrs,
                frame: Box::new(frame),
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn write_then_parse_round_trips(f in frame(), trailer in bytes()) {
        let wire = f.to_bytes();
        let mut with_trailer = wire.clone();
        with_trailer.extend_from_slice(&trailer);
        prop_assert_eq!(parse_frame(&with_trailer), Ok(Some((f.clone(), wire.len()))));
        for end in 0..wire.len() {
            prop_assert_eq!(parse_frame(&wire[..end]), Ok(None), "prefix of {} bytes", end);
        }
    }

    #[test]
    fn arbitrary_input_never_panics(input in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(Some((f, used))) = parse_frame(&input) {
            prop_assert!(used <= input.len());
            // Whatever was accepted is canonical: it re-encodes to the bytes
            // it came from.
            prop_assert_eq!(f.to_bytes(), input[..used].to_vec());
        }
    }
}
