//! Feeds the request parser arbitrary input in two chunks, the way a
//! connection delivers it across two reads, and checks that resuming gives
//! exactly what a fresh parser sees on the same bytes (and that nothing
//! panics). Requests are consumed and parsing continues, so pipelines and the
//! reuse of one parser across requests are exercised too.
//!
//! Input layout: byte 0 chooses authentication and limits, byte 1 where the
//! split falls, the rest is the client's bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_resp::request::{Limits, Request, RequestParser};

type Outcome = Result<Option<(Request, usize, Vec<Vec<u8>>)>, Vec<u8>>;

fn outcome(parser: &mut RequestParser, buf: &[u8], limits: &Limits, auth: bool) -> Outcome {
    match parser.parse(buf, limits, auth) {
        Err(e) => Err(e.0),
        Ok(None) => Ok(None),
        Ok(Some((kind, used))) => {
            assert!(used > 0 && used <= buf.len(), "consumed {used} of {}", buf.len());
            let args = match kind {
                Request::Multibulk => parser
                    .arg_ranges()
                    .iter()
                    .map(|&(s, e)| {
                        assert!(s <= e && e <= used);
                        buf[s..e].to_vec()
                    })
                    .collect(),
                Request::Inline => parser.inline_args().to_vec(),
                Request::Empty => Vec::new(),
            };
            Ok(Some((kind, used, args)))
        }
    }
}

fn one_shot(buf: &[u8], limits: &Limits, auth: bool) -> Outcome {
    outcome(&mut RequestParser::new(), buf, limits, auth)
}

fuzz_target!(|data: &[u8]| {
    let [flags, split, input @ ..] = data else {
        return;
    };
    let auth = flags & 1 != 0;
    let limits = if flags & 2 != 0 {
        Limits {
            proto_max_bulk_len: u64::from(flags >> 2),
        }
    } else {
        Limits::default()
    };
    let split = usize::from(*split) * input.len() / 255;

    let mut parser = RequestParser::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    for end in [split, input.len()] {
        buf.extend_from_slice(&input[fed..end]);
        fed = end;
        loop {
            let got = outcome(&mut parser, &buf, &limits, auth);
            assert_eq!(got, one_shot(&buf, &limits, auth), "resumed parse disagrees");
            match got {
                Ok(Some((_, used, _))) => {
                    buf.drain(..used);
                    if buf.is_empty() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
});
