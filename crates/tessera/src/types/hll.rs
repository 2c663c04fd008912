//! HyperLogLog sketches stored as plain string values, in exactly the
//! layout redis-server 7.0 uses, so that GET/SET/DUMP of an HLL carry the
//! same bytes between the two servers:
//!
//! * a 16-byte header: `HYLL`, the encoding (0 dense, 1 sparse), three
//!   unused bytes, and the cached cardinality as 8 little-endian bytes
//!   whose top bit marks the cache invalid;
//! * 16384 registers of 6 bits, the register index being the low 14 bits of
//!   the element's MurmurHash64A (seed 0xadc83b19) and the value the length
//!   of the run of zeros (plus one) in the remaining 50 bits;
//! * either packed densely (12288 bytes, register `i` at bit `6*i`, least
//!   significant bits first) or as a run-length "sparse" opcode stream:
//!   `00xxxxxx` ZERO (1..64 zero registers), `01xxxxxx yyyyyyyy` XZERO
//!   (1..16384 zero registers), `1vvvvvxx` VAL (1..4 registers of value
//!   1..32). A sparse sketch turns dense once a register exceeds 32 or the
//!   string would grow past `hll-sparse-max-bytes`.
//!
//! Updates follow Redis's algorithm step for step (the in-place split of a
//! run, the merge of adjacent equal runs over a window of five opcodes), so
//! the sparse bytes come out identical, and the cardinality uses the same
//! estimator (Ertl's improved raw estimator, "New cardinality estimation
//! algorithms for HyperLogLog sketches", 2017) evaluated in the same
//! floating-point order, so counts are identical too. No RESP here.

/// Header size.
pub const HDR: usize = 16;
/// log2 of the number of registers.
const P: u32 = 14;
/// Hash bits left after the register index.
const Q: usize = 64 - P as usize;
pub const REGISTERS: usize = 1 << P;
const BITS: usize = 6;
const REG_MAX: u8 = (1 << BITS) - 1;
/// Length of a dense sketch.
pub const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);
pub const DENSE: u8 = 0;
pub const SPARSE: u8 = 1;

const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const XZERO_MAX_LEN: usize = 16384;
/// 1 / (2 ln 2).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
const SEED: u64 = 0xadc8_3b19;

/// The sketch's bytes do not describe 16384 registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// MurmurHash64A, as Redis computes it on a little-endian machine.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().expect("chunk of 8"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element lands in and the value it proposes.
pub fn pattern(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The forced top bit bounds the count at Q + 1.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// A new, empty sparse sketch (XZERO opcodes covering every register).
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR + 2 * REGISTERS.div_ceil(XZERO_MAX_LEN));
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.resize(HDR, 0);
    let mut left = REGISTERS;
    while left > 0 {
        let n = left.min(XZERO_MAX_LEN);
        push_xzero(&mut v, n);
        left -= n;
    }
    v
}

/// Whether a string's bytes pass Redis's HLL check: long enough for the
/// header, the magic, a known encoding, and the exact length when dense.
pub fn is_hll(s: &[u8]) -> bool {
    s.len() >= HDR
        && &s[..4] == b"HYLL"
        && s[4] <= SPARSE
        && (s[4] != DENSE || s.len() == DENSE_SIZE)
}

pub fn encoding(s: &[u8]) -> u8 {
    s[4]
}

/// The cached cardinality, if the cache is valid.
pub fn cached_card(s: &[u8]) -> Option<u64> {
    if s[15] & 0x80 != 0 {
        return None;
    }
    Some(u64::from_le_bytes(s[8..16].try_into().expect("8 bytes")))
}

pub fn set_cached_card(s: &mut [u8], card: u64) {
    s[8..16].copy_from_slice(&card.to_le_bytes());
}

pub fn invalidate_cache(s: &mut [u8]) {
    s[15] |= 0x80;
}

// ---- opcodes -----------------------------------------------------------------------------------

#[inline]
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}
#[inline]
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}
#[inline]
fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}
#[inline]
fn zero_len(b: u8) -> usize {
    (b & 0x3f) as usize + 1
}
/// XZERO length from its two bytes (a missing second byte reads as 0, as
/// the terminator after the string does in Redis).
#[inline]
fn xzero_len(b0: u8, b1: u8) -> usize {
    ((((b0 & 0x3f) as usize) << 8) | b1 as usize) + 1
}
#[inline]
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}
#[inline]
fn val_len(b: u8) -> usize {
    (b & 0x3) as usize + 1
}
#[inline]
fn val_op(value: u8, len: usize) -> u8 {
    ((value - 1) << 2) | (len as u8 - 1) | 0x80
}
fn push_xzero(v: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    v.push((l >> 8) as u8 | 0x40);
    v.push((l & 0xff) as u8);
}
/// A ZERO or XZERO run of `len` registers, whichever Redis picks.
fn push_zeros(v: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        push_xzero(v, len);
    } else {
        v.push(len as u8 - 1);
    }
}

/// A byte of the sketch, 0 past its end. Only a truncated XZERO opcode at
/// the very end of a corrupted sketch reads past the end; Redis then reads
/// the byte after the string in its buffer, which is the terminator (0)
/// except right after such an opcode was split by PFADD/PFMERGE, when it is
/// the byte the split cut off. That leftover byte is not modelled here.
#[inline]
fn byte_at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

/// One decoded sparse opcode.
enum Op {
    Zero(usize),
    Val(u8, usize),
}

/// Walks the sparse opcodes after the header: (opcode, bytes it takes).
fn ops(s: &[u8]) -> impl Iterator<Item = (Op, usize)> + '_ {
    let mut p = HDR;
    std::iter::from_fn(move || {
        if p >= s.len() {
            return None;
        }
        let b = s[p];
        let r = if is_zero(b) {
            (Op::Zero(zero_len(b)), 1)
        } else if is_xzero(b) {
            (Op::Zero(xzero_len(b, byte_at(s, p + 1))), 2)
        } else {
            (Op::Val(val_value(b), val_len(b)), 1)
        };
        p += r.1;
        Some(r)
    })
}

// ---- dense registers ---------------------------------------------------------------------------

#[inline]
fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = regs[byte] as u16;
    let b1 = byte_at(regs, byte + 1) as u16;
    (((b0 >> fb) | (b1 << (8 - fb))) & REG_MAX as u16) as u8
}

#[inline]
fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = val as u16;
    regs[byte] &= !((REG_MAX as u16) << fb) as u8;
    regs[byte] |= (v << fb) as u8;
    if byte + 1 < regs.len() {
        regs[byte + 1] &= !((REG_MAX as u16) >> (8 - fb)) as u8;
        regs[byte + 1] |= (v >> (8 - fb)) as u8;
    }
}

/// Raises register `i` of a dense sketch to `count`; whether it changed.
fn dense_set(s: &mut [u8], i: usize, count: u8) -> bool {
    let regs = &mut s[HDR..];
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

/// The registers of a dense sketch.
pub fn dense_registers(s: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let regs = &s[HDR..];
    (0..REGISTERS).map(move |i| dense_get(regs, i))
}

// ---- updates -----------------------------------------------------------------------------------

/// Converts a sparse sketch to dense in place, keeping the header (cache
/// included). Nothing happens to a dense one; a sparse one that does not
/// cover exactly 16384 registers (or whose values run past the last one)
/// is left as it is and reported.
pub fn sparse_to_dense(s: &mut Vec<u8>) -> Result<(), Corrupt> {
    if s[4] == DENSE {
        return Ok(());
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR].copy_from_slice(&s[..HDR]);
    dense[4] = DENSE;
    let mut idx = 0usize;
    for (op, _) in ops(s) {
        match op {
            Op::Zero(n) => idx += n,
            Op::Val(v, n) => {
                if idx + n > REGISTERS {
                    return Err(Corrupt);
                }
                for _ in 0..n {
                    dense_put(&mut dense[HDR..], idx, v);
                    idx += 1;
                }
            }
        }
    }
    if idx != REGISTERS {
        return Err(Corrupt);
    }
    *s = dense;
    Ok(())
}

/// Raises register `index` to `count` if that is higher, in whichever
/// encoding the sketch has (a sparse one may turn dense). Whether the
/// register changed; `Corrupt` if the sparse opcodes do not reach it.
pub fn set_register(
    s: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: u64,
) -> Result<bool, Corrupt> {
    match s[4] {
        DENSE => Ok(dense_set(s, index, count)),
        SPARSE => sparse_set(s, index, count, sparse_max),
        _ => Err(Corrupt),
    }
}

/// Adds an element; whether a register changed.
pub fn add(s: &mut Vec<u8>, ele: &[u8], sparse_max: u64) -> Result<bool, Corrupt> {
    let (index, count) = pattern(ele);
    set_register(s, index, count, sparse_max)
}

fn promote(s: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    sparse_to_dense(s)?;
    let changed = dense_set(s, index, count);
    debug_assert!(changed, "a promotion always raises the register");
    Ok(changed)
}

/// Redis's hllSparseSet: find the opcode covering `index`; if the register
/// must grow, rewrite that opcode as up to three (zeros / value / zeros, or
/// value / new value / value), then merge equal neighbouring VAL runs in a
/// window of five opcodes starting at the previous one.
fn sparse_set(s: &mut Vec<u8>, index: usize, count: u8, sparse_max: u64) -> Result<bool, Corrupt> {
    if count > VAL_MAX_VALUE {
        return promote(s, index, count);
    }
    // Step 1: the opcode covering the register.
    let end = s.len();
    let mut p = HDR;
    let mut first = 0usize;
    let mut span = 0usize;
    let mut prev: Option<usize> = None;
    while p < end {
        let b = s[p];
        let oplen;
        if is_zero(b) {
            span = zero_len(b);
            oplen = 1;
        } else if is_val(b) {
            span = val_len(b);
            oplen = 1;
        } else {
            span = xzero_len(b, byte_at(s, p + 1));
            oplen = 2;
        }
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupt);
    }
    let b = s[p];
    let oldlen = if is_xzero(b) { 2 } else { 1 };
    let runlen = if is_zero(b) {
        zero_len(b)
    } else if is_xzero(b) {
        xzero_len(b, byte_at(s, p + 1))
    } else {
        val_len(b)
    };

    // Step 2: the trivial in-place cases, else the replacement sequence.
    let in_place = if is_val(b) {
        if val_value(b) >= count {
            return Ok(false);
        }
        runlen == 1
    } else {
        is_zero(b) && runlen == 1
    };
    if in_place {
        s[p] = val_op(count, 1);
    } else {
        let last = first + span - 1;
        let mut seq: Vec<u8> = Vec::with_capacity(5);
        if is_val(b) {
            let cur = val_value(b);
            if index != first {
                seq.push(val_op(cur, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(cur, last - index));
            }
        } else {
            if index != first {
                push_zeros(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                push_zeros(&mut seq, last - index);
            }
        }
        // Step 3: put the sequence in place of the opcode.
        let delta = seq.len() as i64 - oldlen as i64;
        if delta > 0 && s.len() as u64 + delta as u64 > sparse_max {
            return promote(s, index, count);
        }
        let next = p + oldlen;
        let newlen = (s.len() as i64 + delta) as usize;
        if next < end {
            s.splice(p..next, seq);
        } else {
            // The opcode was the last one (possibly a truncated XZERO).
            s.truncate(p);
            s.extend_from_slice(&seq);
            s.truncate(newlen);
        }
    }

    // Step 4: merge adjacent VAL runs of the same value.
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < s.len() && scan > 0 {
        scan -= 1;
        let b = s[p];
        if is_xzero(b) {
            p += 2;
            continue;
        }
        if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < s.len() && is_val(s[p + 1]) {
            let (v1, v2) = (val_value(b), val_value(s[p + 1]));
            let len = val_len(b) + val_len(s[p + 1]);
            if v1 == v2 && len <= VAL_MAX_LEN {
                s[p + 1] = val_op(v1, len);
                s.remove(p);
                continue;
            }
        }
        p += 1;
    }
    invalidate_cache(s);
    Ok(true)
}

// ---- counting ----------------------------------------------------------------------------------

/// Register histogram of a sketch (dense or sparse). For a sparse one,
/// `Corrupt` if the runs do not add up to 16384 registers.
fn histogram(s: &[u8], hist: &mut [u32; 64]) -> Result<(), Corrupt> {
    if s[4] == DENSE {
        for r in dense_registers(s) {
            hist[r as usize] += 1;
        }
        return Ok(());
    }
    let mut idx = 0usize;
    for (op, _) in ops(s) {
        match op {
            Op::Zero(n) => {
                idx += n;
                hist[0] += n as u32;
            }
            Op::Val(v, n) => {
                idx += n;
                hist[v as usize] += n as u32;
            }
        }
    }
    if idx != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let prev = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

/// The cardinality estimate from a register histogram.
fn estimate(hist: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - hist[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += hist[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(hist[0] as f64 / m);
    let e = (ALPHA_INF * m * m / z).round();
    e as u64
}

/// The cardinality of one sketch, ignoring the cache.
pub fn count(s: &[u8]) -> Result<u64, Corrupt> {
    let mut hist = [0u32; 64];
    histogram(s, &mut hist)?;
    Ok(estimate(&hist))
}

/// Registers as one byte each: the union that multi-key PFCOUNT and
/// PFMERGE build.
pub type Raw = [u8; REGISTERS];

/// Raises `max` to this sketch's registers.
pub fn merge_into(max: &mut Raw, s: &[u8]) -> Result<(), Corrupt> {
    if s[4] == DENSE {
        for (m, r) in max.iter_mut().zip(dense_registers(s)) {
            *m = (*m).max(r);
        }
        return Ok(());
    }
    let mut i = 0usize;
    for (op, _) in ops(s) {
        match op {
            Op::Zero(n) => i += n,
            Op::Val(v, n) => {
                if i + n > REGISTERS {
                    return Err(Corrupt);
                }
                for m in &mut max[i..i + n] {
                    *m = (*m).max(v);
                }
                i += n;
            }
        }
    }
    if i != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

/// The cardinality of a union built with [`merge_into`].
pub fn count_raw(max: &Raw) -> u64 {
    let mut hist = [0u32; 64];
    for &r in max.iter() {
        hist[r as usize & 63] += 1;
    }
    estimate(&hist)
}

/// PFDEBUG DECODE's text for a sparse sketch: `z:N`, `Z:N`, `v:V,N`.
pub fn decode_sparse(s: &[u8]) -> String {
    let mut out = Vec::new();
    let mut p = HDR;
    while p < s.len() {
        let b = s[p];
        if is_zero(b) {
            out.push(format!("z:{}", zero_len(b)));
            p += 1;
        } else if is_xzero(b) {
            out.push(format!("Z:{}", xzero_len(b, byte_at(s, p + 1))));
            p += 2;
        } else {
            out.push(format!("v:{},{}", val_value(b), val_len(b)));
            p += 1;
        }
    }
    out.join(" ")
}

/// PFSELFTEST: checks the register packing against a plain array, then
/// feeds a sparse sketch (turning dense past `sparse_max` as PFADD does)
/// and a dense one the same elements, checking at every power of ten that
/// the sparse one is still sparse while small, that both agree, and that
/// the error stays within six standard errors. The first failure's
/// message, if any.
pub fn self_test(sparse_max: u64) -> Result<(), String> {
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut dense = vec![0u8; DENSE_SIZE];
    let mut plain = vec![0u8; REGISTERS];
    for _ in 0..1000 {
        for (i, p) in plain.iter_mut().enumerate() {
            let v = (next() & REG_MAX as u64) as u8;
            *p = v;
            dense_put(&mut dense[HDR..], i, v);
        }
        for (i, &p) in plain.iter().enumerate() {
            let got = dense_get(&dense[HDR..], i);
            if got != p {
                return Err(format!("TESTFAILED Register error at {i}: {got} != {p}"));
            }
        }
    }
    let mut sparse = new_sparse();
    let mut dense = new_sparse();
    sparse_to_dense(&mut dense).map_err(|_| "TESTFAILED sparse to dense".to_string())?;
    let rel_err = 1.04 / (REGISTERS as f64).sqrt();
    let seed = next();
    let mut checkpoint = 1u64;
    for j in 1..=1_000_000u64 {
        let ele = (j ^ seed).to_ne_bytes();
        let corrupt = |_| "TESTFAILED corrupted sketch".to_string();
        add(&mut dense, &ele, sparse_max).map_err(corrupt)?;
        add(&mut sparse, &ele, sparse_max).map_err(corrupt)?;
        if j != checkpoint {
            continue;
        }
        if j < sparse_max / 2 && sparse[4] != SPARSE {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let d = count(&dense).map_err(corrupt)?;
        if count(&sparse).map_err(corrupt)? != d {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let maxerr = if j == 10 {
            1
        } else {
            (rel_err * 6.0 * j as f64).ceil() as u64
        };
        let abserr = d.abs_diff(j);
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{j} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn patterns_match_redis() {
        // Registers redis-server 7.0 sets for these elements (PFADD, then PFDEBUG DECODE).
        assert_eq!(pattern(b"a"), (12711, 2));
        assert_eq!(pattern(b"b"), (15780, 1));
        assert_eq!(pattern(b"c"), (8436, 1));
        assert_eq!(murmur64a(b"", 0), 0);
    }

    #[test]
    fn empty_sketch_layout() {
        let s = new_sparse();
        assert_eq!(
            s,
            b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"
        );
        assert!(is_hll(&s));
        assert_eq!(count(&s), Ok(0));
        assert_eq!(decode_sparse(&s), "Z:16384");
    }

    #[test]
    fn self_test_passes() {
        assert_eq!(self_test(3000), Ok(()));
    }

    proptest! {
        #[test]
        fn sparse_and_dense_agree(elements in proptest::collection::vec(any::<u32>(), 0..3000)) {
            let mut sparse = new_sparse();
            let mut dense = new_sparse();
            sparse_to_dense(&mut dense).unwrap();
            for e in &elements {
                let ele = e.to_string();
                let a = add(&mut sparse, ele.as_bytes(), 3000).unwrap();
                let b = add(&mut dense, ele.as_bytes(), 3000).unwrap();
                prop_assert_eq!(a, b);
            }
            let mut as_dense = sparse.clone();
            sparse_to_dense(&mut as_dense).unwrap();
            prop_assert_eq!(&as_dense[HDR..], &dense[HDR..]);
            prop_assert_eq!(count(&sparse), count(&dense));
            let mut raw = [0u8; REGISTERS];
            merge_into(&mut raw, &sparse).unwrap();
            prop_assert_eq!(count_raw(&raw), count(&dense).unwrap());
        }

        #[test]
        fn error_within_bounds(n in 1u64..20_000, seed in any::<u64>()) {
            let mut s = new_sparse();
            for j in 0..n {
                add(&mut s, &(seed.wrapping_add(j)).to_le_bytes(), 3000).unwrap();
            }
            let card = count(&s).unwrap() as f64;
            // 1.04/sqrt(16384) = 0.81% standard error; allow 5 of them, plus
            // a little slack for tiny sets.
            let bound = (0.0081 * 5.0 * n as f64).max(2.0);
            prop_assert!((card - n as f64).abs() <= bound, "n={} card={}", n, card);
        }
    }
}
