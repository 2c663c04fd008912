//! Bit-level operations on byte strings, as Redis's bitmap commands see
//! them: bit 0 is the most significant bit of byte 0, and every byte past
//! the end of the string reads as zero. No keyspace and no RESP here; the
//! commands in `commands/bitmap.rs` parse arguments and call these.

/// Reads bit `offset` (0 past the end).
#[inline]
pub fn get_bit(s: &[u8], offset: u64) -> bool {
    let byte = (offset >> 3) as usize;
    match s.get(byte) {
        Some(b) => b & (0x80 >> (offset & 7)) != 0,
        None => false,
    }
}

/// Writes bit `offset`, which must lie inside `v`; returns the old value.
#[inline]
pub fn set_bit(v: &mut [u8], offset: u64, on: bool) -> bool {
    let byte = (offset >> 3) as usize;
    let mask = 0x80u8 >> (offset & 7);
    let old = v[byte] & mask != 0;
    if on {
        v[byte] |= mask;
    } else {
        v[byte] &= !mask;
    }
    old
}

/// Clamps a `start..=end` range given in Redis's index convention
/// (negative counts from the end) to `0..len`, as BITCOUNT and BITPOS do:
/// negatives are added to `len` and floored at 0, `end` is capped at
/// `len - 1`. The result may be empty (`start > end`).
pub fn clamp_range(mut start: i64, mut end: i64, len: i64) -> (i64, i64) {
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    (start, end)
}

/// Number of set bits among bits `first..=last` (both inside `s`).
pub fn count_bits(s: &[u8], first: u64, last: u64) -> u64 {
    if first > last {
        return 0;
    }
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    // Masks keeping the bits of the edge bytes that lie inside the range.
    let head = 0xffu8 >> (first & 7);
    let tail = 0xffu8 << (7 - (last & 7));
    if fb == lb {
        return (s[fb] & head & tail).count_ones() as u64;
    }
    let middle = popcount(&s[fb + 1..lb]);
    middle + (s[fb] & head).count_ones() as u64 + (s[lb] & tail).count_ones() as u64
}

/// Number of set bits in `s`.
pub fn popcount(s: &[u8]) -> u64 {
    let mut chunks = s.chunks_exact(8);
    let mut n: u64 = 0;
    for c in &mut chunks {
        let w = u64::from_ne_bytes(c.try_into().expect("chunk of 8"));
        n += w.count_ones() as u64;
    }
    n + chunks
        .remainder()
        .iter()
        .map(|b| b.count_ones() as u64)
        .sum::<u64>()
}

/// Position of the first bit equal to `bit` among bits `first..=last`
/// (both inside `s`), if any.
pub fn find_bit(s: &[u8], bit: bool, first: u64, last: u64) -> Option<u64> {
    if first > last {
        return None;
    }
    // The byte that has no bit of the wanted value.
    let skip: u8 = if bit { 0x00 } else { 0xff };
    let mut pos = first;
    // Leading bits up to a byte boundary.
    while pos <= last && pos & 7 != 0 {
        if get_bit(s, pos) == bit {
            return Some(pos);
        }
        pos += 1;
    }
    if pos > last {
        return None;
    }
    // Whole bytes.
    let fb = (pos >> 3) as usize;
    let whole_end = ((last + 1) >> 3) as usize; // bytes fully inside the range
    if fb < whole_end {
        if let Some(i) = s[fb..whole_end].iter().position(|&b| b != skip) {
            let b = s[fb + i];
            let v = if bit { b } else { !b };
            return Some(((fb + i) as u64) * 8 + v.leading_zeros() as u64);
        }
        pos = whole_end as u64 * 8;
    }
    // Trailing bits.
    while pos <= last {
        if get_bit(s, pos) == bit {
            return Some(pos);
        }
        pos += 1;
    }
    None
}

/// Reads the unsigned big-endian field of `bits` bits (1..=64) at bit
/// `offset`; bits past the end of `s` read as zero.
pub fn get_unsigned(s: &[u8], offset: u64, bits: u32) -> u64 {
    let mut v: u64 = 0;
    for i in 0..bits as u64 {
        v = (v << 1) | get_bit(s, offset + i) as u64;
    }
    v
}

/// Reads the two's-complement field of `bits` bits (1..=64) at `offset`.
pub fn get_signed(s: &[u8], offset: u64, bits: u32) -> i64 {
    let u = get_unsigned(s, offset, bits);
    if bits == 64 {
        return u as i64;
    }
    // Sign-extend from the field's top bit.
    let shift = 64 - bits;
    ((u << shift) as i64) >> shift
}

/// Writes the low `bits` bits of `value` at bit `offset`; the field must lie
/// inside `v`.
pub fn set_field(v: &mut [u8], offset: u64, bits: u32, value: u64) {
    for i in 0..bits as u64 {
        let on = (value >> (bits as u64 - 1 - i)) & 1 != 0;
        set_bit(v, offset + i, on);
    }
}

/// BITFIELD's OVERFLOW behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// The result of `value + incr` in a signed field of `bits` bits: `Ok` when
/// it fits, `Err(replacement)` when it overflows, the replacement being
/// what WRAP or SAT store (FAIL stores nothing and ignores it).
///
/// This follows Redis's check to the letter, including its wrapping
/// arithmetic: for a value that already fits (INCRBY) it is exactly
/// "`value + incr` leaves the field's range", but a SET of a value far below
/// the range of a narrow field (below `max - i64::MAX`) counts as an
/// overflow *upwards*, so SAT stores the maximum there, as Redis does.
pub fn add_signed(value: i64, incr: i64, bits: u32, ow: Overflow) -> Result<i64, i64> {
    let max: i64 = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let limit = if value > max
        || (bits != 64 && incr > max_incr)
        || (value >= 0 && incr > 0 && incr > max_incr)
    {
        max
    } else if value < min
        || (bits != 64 && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        min
    } else {
        return Ok(value.wrapping_add(incr));
    };
    Err(match ow {
        Overflow::Sat => limit,
        _ => {
            // Two's-complement wrap into the field, sign-extended.
            let c = (value as u64).wrapping_add(incr as u64);
            if bits == 64 {
                c as i64
            } else {
                let shift = 64 - bits;
                ((c << shift) as i64) >> shift
            }
        }
    })
}

/// Like [`add_signed`] for an unsigned field of `bits` bits (1..=63).
/// `value` is taken as unsigned, so a negative SET value is a huge one and
/// overflows upwards, as in Redis.
pub fn add_unsigned(value: u64, incr: i64, bits: u32, ow: Overflow) -> Result<u64, u64> {
    let max: i128 = if bits == 64 {
        u64::MAX as i128
    } else {
        (1i128 << bits) - 1
    };
    let sum = value as i128 + incr as i128;
    let limit = if value as i128 > max || sum > max {
        max
    } else if sum < 0 {
        0
    } else {
        return Ok(sum as u64);
    };
    Err(match ow {
        Overflow::Sat => limit as u64,
        _ => {
            let c = value.wrapping_add(incr as u64);
            if bits == 64 {
                c
            } else {
                c & ((1u64 << bits) - 1)
            }
        }
    })
}

/// BITOP's operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// BITOP computed one source at a time, so the sources need not be held
/// (or copied) together: the result spans the longest source, shorter ones
/// count as padded with zero bytes.
pub struct BitOpAcc {
    op: BitOp,
    out: Vec<u8>,
    started: bool,
}

impl BitOpAcc {
    pub fn new(op: BitOp) -> BitOpAcc {
        BitOpAcc {
            op,
            out: Vec::new(),
            started: false,
        }
    }

    /// Folds in the next source (a missing key is an empty one).
    pub fn feed(&mut self, src: &[u8]) {
        let out = &mut self.out;
        if !self.started {
            self.started = true;
            out.extend_from_slice(src);
            if self.op == BitOp::Not {
                out.iter_mut().for_each(|b| *b = !*b);
            }
            return;
        }
        if out.len() < src.len() {
            // Earlier sources were zero there: AND stays zero, OR/XOR copy.
            out.resize(src.len(), 0);
        }
        match self.op {
            BitOp::And => {
                out.iter_mut().zip(src).for_each(|(o, b)| *o &= b);
                out[src.len()..].fill(0);
            }
            BitOp::Or => out.iter_mut().zip(src).for_each(|(o, b)| *o |= b),
            BitOp::Xor => out.iter_mut().zip(src).for_each(|(o, b)| *o ^= b),
            // NOT takes a single source; the command checks that.
            BitOp::Not => {}
        }
    }

    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// BITOP over sources held together (tests and small callers).
pub fn bitop(op: BitOp, srcs: &[&[u8]]) -> Vec<u8> {
    let mut acc = BitOpAcc::new(op);
    for s in srcs {
        acc.feed(s);
    }
    acc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The string as a vector of bits, the model the tests compare against.
    fn to_bits(s: &[u8]) -> Vec<bool> {
        (0..s.len() as u64 * 8).map(|i| get_bit(s, i)).collect()
    }

    fn bit_at(model: &[bool], i: u64) -> bool {
        model.get(i as usize).copied().unwrap_or(false)
    }

    #[test]
    fn bit_order_is_msb_first() {
        let mut v = vec![0u8; 2];
        assert!(!set_bit(&mut v, 0, true));
        set_bit(&mut v, 15, true);
        assert_eq!(v, [0x80, 0x01]);
        assert!(get_bit(&v, 0) && get_bit(&v, 15) && !get_bit(&v, 16));
        assert_eq!(get_unsigned(&v, 0, 4), 8);
        assert_eq!(get_signed(&v, 0, 4), -8);
        assert_eq!(get_signed(&[0xff; 8], 0, 64), -1);
    }

    #[test]
    fn overflow_rules() {
        assert_eq!(add_signed(127, 1, 8, Overflow::Wrap), Err(-128));
        assert_eq!(add_signed(127, 1, 8, Overflow::Sat), Err(127));
        assert_eq!(add_signed(-128, -1, 8, Overflow::Sat), Err(-128));
        assert_eq!(add_signed(i64::MAX, 1, 64, Overflow::Wrap), Err(i64::MIN));
        assert_eq!(add_signed(5, -3, 8, Overflow::Fail), Ok(2));
        assert_eq!(add_unsigned(255, 1, 8, Overflow::Wrap), Err(0));
        assert_eq!(add_unsigned(0, -1, 8, Overflow::Sat), Err(0));
        assert_eq!(add_unsigned(-1i64 as u64, 0, 8, Overflow::Sat), Err(255));
        // Redis's wrapping check: far below a narrow field's range is "too big".
        assert_eq!(
            add_signed(i64::MIN, 0, 35, Overflow::Sat),
            Err((1 << 34) - 1)
        );
        assert_eq!(
            add_signed(-(1 << 34) - 1, 0, 35, Overflow::Sat),
            Err(-(1 << 34))
        );
        assert_eq!(add_unsigned(-1i64 as u64, 0, 8, Overflow::Wrap), Err(255));
    }

    proptest! {
        #[test]
        fn set_and_get_bits_match_model(
            ops in proptest::collection::vec((0u64..200, any::<bool>()), 0..60)
        ) {
            let mut v: Vec<u8> = Vec::new();
            let mut model: Vec<bool> = Vec::new();
            for (off, on) in ops {
                let need = (off / 8 + 1) as usize;
                if v.len() < need {
                    v.resize(need, 0);
                }
                if model.len() < need * 8 {
                    model.resize(need * 8, false);
                }
                let old = set_bit(&mut v, off, on);
                prop_assert_eq!(old, model[off as usize]);
                model[off as usize] = on;
            }
            prop_assert_eq!(to_bits(&v), model.clone());
            for i in 0..model.len() as u64 + 16 {
                prop_assert_eq!(get_bit(&v, i), bit_at(&model, i));
            }
        }

        #[test]
        fn count_and_find_match_model(
            s in proptest::collection::vec(any::<u8>(), 1..40),
            a in 0u64..400,
            b in 0u64..400,
            bit in any::<bool>(),
        ) {
            let n = s.len() as u64 * 8;
            let (first, last) = (a % n, b % n);
            let model = to_bits(&s);
            let want = if first <= last {
                model[first as usize..=last as usize].iter().filter(|x| **x).count() as u64
            } else {
                0
            };
            prop_assert_eq!(count_bits(&s, first, last), want);
            let want_pos = (first..=last).find(|&i| model[i as usize] == bit);
            prop_assert_eq!(find_bit(&s, bit, first, last), want_pos);
            prop_assert_eq!(popcount(&s), model.iter().filter(|x| **x).count() as u64);
        }

        #[test]
        fn fields_match_model(
            s in proptest::collection::vec(any::<u8>(), 0..20),
            offset in 0u64..200,
            bits in 1u32..=64,
            value in any::<u64>(),
        ) {
            let model = to_bits(&s);
            let mut want: u64 = 0;
            for i in 0..bits as u64 {
                want = (want << 1) | bit_at(&model, offset + i) as u64;
            }
            prop_assert_eq!(get_unsigned(&s, offset, bits), want);
            let mut v = s.clone();
            let need = (offset + bits as u64).div_ceil(8) as usize;
            if v.len() < need {
                v.resize(need, 0);
            }
            set_field(&mut v, offset, bits, value);
            let mask = if bits == 64 { u64::MAX } else { (1 << bits) - 1 };
            prop_assert_eq!(get_unsigned(&v, offset, bits), value & mask);
            // Bits outside the field are untouched.
            for i in 0..v.len() as u64 * 8 {
                if i < offset || i >= offset + bits as u64 {
                    prop_assert_eq!(get_bit(&v, i), bit_at(&model, i));
                }
            }
        }

        #[test]
        fn overflow_matches_wide_arithmetic(
            value in any::<i64>(),
            incr in any::<i64>(),
            bits in 1u32..=64,
        ) {
            let max = if bits == 64 { i64::MAX as i128 } else { (1i128 << (bits - 1)) - 1 };
            let min = -max - 1;
            // Start from a value that fits, as INCRBY does.
            let value = if bits == 64 { value } else { (value as i128).rem_euclid(max - min + 1) as i64 + min as i64 };
            let sum = value as i128 + incr as i128;
            let fits = sum >= min && sum <= max;
            let wrapped = add_signed(value, incr, bits, Overflow::Wrap);
            prop_assert_eq!(wrapped.is_ok(), fits);
            let w = match wrapped { Ok(x) | Err(x) => x as i128 };
            prop_assert!(w >= min && w <= max);
            prop_assert_eq!((w - sum).rem_euclid(max - min + 1), 0);
            let sat = match add_signed(value, incr, bits, Overflow::Sat) { Ok(x) | Err(x) => x as i128 };
            prop_assert_eq!(sat, sum.clamp(min, max));
        }

        #[test]
        fn bitop_matches_model(
            srcs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 1..4),
            op in 0..4u8,
        ) {
            let op = [BitOp::And, BitOp::Or, BitOp::Xor, BitOp::Not][op as usize];
            let srcs: Vec<&[u8]> = if op == BitOp::Not { vec![&srcs[0]] } else { srcs.iter().map(|s| s.as_slice()).collect() };
            let out = bitop(op, &srcs);
            let n = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
            prop_assert_eq!(out.len(), n);
            for i in 0..n as u64 * 8 {
                let bits: Vec<bool> = srcs.iter().map(|s| get_bit(s, i)).collect();
                let want = match op {
                    BitOp::And => bits.iter().all(|b| *b),
                    BitOp::Or => bits.iter().any(|b| *b),
                    BitOp::Xor => bits.iter().filter(|b| **b).count() % 2 == 1,
                    BitOp::Not => !bits[0],
                };
                prop_assert_eq!(get_bit(&out, i), want);
            }
        }
    }
}
