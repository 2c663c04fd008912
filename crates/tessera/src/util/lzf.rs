//! LZF, the compression Redis applies to RDB strings longer than 20 bytes
//! (RDB files, DUMP and FUNCTION DUMP payloads).
//!
//! The compressor makes the same choices as the liblzf build Redis ships
//! (16-bit hash of the next three bytes, "very fast" mode: after a match only
//! its last two positions are hashed, output limited to `out_limit` with the
//! same conservative checks), so that a payload compresses to the bytes
//! redis-server writes. One difference is deliberate: Redis leaves its hash
//! table uninitialised, so a stale slot can occasionally offer a (valid)
//! match a fresh table would not; ours always starts empty.

/// Hash table size (liblzf's HLOG).
const HASH_BITS: u32 = 16;
const HASH_SIZE: usize = 1 << HASH_BITS;
/// Longest back-reference distance, longest match and longest literal run.
const MAX_OFFSET: usize = 1 << 13;
const MAX_MATCH: usize = (1 << 8) + (1 << 3);
const MAX_LITERALS: usize = 1 << 5;

#[inline]
fn hash_slot(h: u32) -> usize {
    // liblzf's IDX(h) for VERY_FAST: ((h >> (3*8 - HLOG)) - h*5) masked.
    ((h >> (24 - HASH_BITS)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HASH_SIZE - 1)
}

/// How many bytes from `ip` repeat those from `reference` (which match in
/// their first three), measured as liblzf measures it: with more than 16
/// bytes allowed it first compares 16 more without looking at `max_len`, so
/// a match can end up to two bytes past it (still inside the input, which
/// holds `max_len + 2` bytes from `ip`), and the encoded stream depends on
/// that.
fn match_length(input: &[u8], reference: usize, ip: usize, max_len: usize) -> usize {
    let mut len = 2;
    if max_len > 16 {
        for _ in 0..16 {
            len += 1;
            if input[reference + len] != input[ip + len] {
                return len;
            }
        }
    }
    loop {
        len += 1;
        if len >= max_len || input[reference + len] != input[ip + len] {
            return len;
        }
    }
}

/// The hash table, kept per thread: a fresh 256 KiB table for every string
/// cost more than compressing a short one (an RDB of a million 64-byte
/// values took 70 s). Slots carry the number of the call that wrote them, so
/// a slot from an earlier call reads as empty without clearing the table,
/// and the output is exactly that of a fresh table.
struct HashTable {
    call: u32,
    slots: Vec<u64>,
}

thread_local! {
    static TABLE: std::cell::RefCell<HashTable> = const {
        std::cell::RefCell::new(HashTable { call: 0, slots: Vec::new() })
    };
}

/// Compresses `input` into at most `out_limit` bytes, or `None` when it does
/// not fit (Redis then stores the string as it is).
pub fn compress(input: &[u8], out_limit: usize) -> Option<Vec<u8>> {
    if input.is_empty() || out_limit == 0 {
        return None;
    }
    TABLE.with(|t| {
        let mut t = t.borrow_mut();
        if t.slots.is_empty() {
            t.slots = vec![0; HASH_SIZE];
        }
        t.call = t.call.wrapping_add(1);
        if t.call == 0 {
            t.slots.fill(0);
            t.call = 1;
        }
        let call = t.call;
        compress_with(input, out_limit, &mut t.slots, call)
    })
}

fn compress_with(input: &[u8], out_limit: usize, slots: &mut [u64], call: u32) -> Option<Vec<u8>> {
    let n = input.len();
    let stamp = u64::from(call) << 32;
    // Positions, 0 doubling as "empty": position 0 is never a match source
    // anyway (liblzf requires the reference to lie after the start).
    let get = |slots: &[u64], slot: usize| -> usize {
        let v = slots[slot];
        if v >> 32 == u64::from(call) {
            (v & 0xffff_ffff) as usize
        } else {
            0
        }
    };
    let mut out = vec![0u8; out_limit];
    // `lit_at` is where the current literal run's length byte goes; `op`
    // the next free byte.
    let mut op = 1usize;
    let mut lit = 0usize;
    let mut ip = 0usize;
    let pair = |p: usize| (u32::from(input[p]) << 8) | u32::from(input[p + 1]);
    let mut hval = if n >= 2 { pair(0) } else { 0 };

    while n >= 3 && ip < n - 2 {
        hval = (hval << 8) | u32::from(input[ip + 2]);
        let slot = hash_slot(hval);
        let reference = get(slots, slot);
        slots[slot] = stamp | ip as u64;
        // `reference` is a position (0 doubles as "empty", and position 0 is
        // excluded anyway); the distance check also rejects anything not
        // strictly before `ip`.
        let off = ip.wrapping_sub(reference).wrapping_sub(1);
        if off < MAX_OFFSET
            && reference > 0
            && input[reference + 2] == input[ip + 2]
            && input[reference] == input[ip]
            && input[reference + 1] == input[ip + 1]
        {
            let max_len = (n - ip - 2).min(MAX_MATCH);
            let back_one = usize::from(lit == 0);
            if op + 4 >= out_limit && op - back_one + 4 >= out_limit {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1);
            op -= back_one;

            let len = match_length(input, reference, ip, max_len) - 2;
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 2; // and start a new literal run
            lit = 0;
            ip += len + 1;
            if ip >= n - 2 {
                break;
            }
            // Hash the match's last two positions.
            ip -= 2;
            hval = pair(ip);
            for _ in 0..2 {
                hval = (hval << 8) | u32::from(input[ip + 2]);
                slots[hash_slot(hval)] = stamp | ip as u64;
                ip += 1;
            }
        } else {
            if op >= out_limit {
                return None;
            }
            push_literal(&mut out, &mut op, &mut lit, input[ip]);
            ip += 1;
        }
    }
    // At most three bytes remain.
    if op + 3 > out_limit {
        return None;
    }
    while ip < n {
        push_literal(&mut out, &mut op, &mut lit, input[ip]);
        ip += 1;
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1);
    op -= usize::from(lit == 0);
    out.truncate(op);
    Some(out)
}

/// Appends one literal byte to the current run, closing the run (its
/// length byte written before it) when it reaches the longest allowed and
/// opening the next.
#[inline]
fn push_literal(out: &mut [u8], op: &mut usize, lit: &mut usize, byte: u8) {
    *lit += 1;
    out[*op] = byte;
    *op += 1;
    if *lit == MAX_LITERALS {
        out[*op - *lit - 1] = (*lit - 1) as u8;
        *lit = 0;
        *op += 1;
    }
}

/// Decompresses `src` into exactly `out_len` bytes, or `None` if it is
/// malformed or expands to another length.
pub fn decompress(src: &[u8], out_len: usize) -> Option<Vec<u8>> {
    // The claimed length is the payload's word: reserve no more than the
    // input can expand to (a back-reference turns 2-3 bytes into at most
    // 264), so a tiny hostile payload cannot reserve hundreds of MB.
    let mut out: Vec<u8> = Vec::with_capacity(out_len.min(src.len().saturating_mul(132)));
    let mut i = 0;
    while i < src.len() {
        let ctrl = src[i] as usize;
        i += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            out.extend_from_slice(src.get(i..i + n)?);
            i += n;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *src.get(i)? as usize;
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + *src.get(i)? as usize + 1;
            i += 1;
            let start = out.len().checked_sub(back)?;
            for k in 0..len + 2 {
                let c = out[start + k];
                out.push(c);
            }
        }
        if out.len() > out_len {
            return None;
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn round_trip(data: &[u8]) {
        if let Some(c) = compress(data, data.len().saturating_sub(4)) {
            assert!(c.len() <= data.len() - 4);
            assert_eq!(decompress(&c, data.len()).as_deref(), Some(data));
        }
        if let Some(c) = compress(data, data.len() + data.len() / 16 + 8) {
            assert_eq!(decompress(&c, data.len()).as_deref(), Some(data));
        }
    }

    #[test]
    fn round_trips_random_and_repetitive_inputs() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..2000 {
            let len = rng.gen_range(0..3000);
            let alphabet = rng.gen_range(1..=255u8);
            let data: Vec<u8> = (0..len).map(|_| rng.gen_range(0..=alphabet)).collect();
            round_trip(&data);
        }
        round_trip(&vec![b'a'; 100_000]);
        round_trip(b"abcabcabcabcabcabcabcabcabcabcabcabc");
    }

    #[test]
    fn incompressible_input_does_not_fit_its_own_length_minus_four() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let data: Vec<u8> = (0..500).map(|_| rng.gen()).collect();
        assert_eq!(compress(&data, data.len() - 4), None);
    }

    #[test]
    fn known_encoding() {
        // 21 'a's: a one-byte literal run, then one back-reference of
        // distance 1 and length 19 (7 + 12), then the two last bytes.
        let c = compress(&[b'a'; 21], 17).unwrap_or_default();
        assert_eq!(decompress(&c, 21), Some(vec![b'a'; 21]));
    }
}
