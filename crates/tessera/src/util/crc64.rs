//! CRC-64/Jones as Redis computes it (polynomial 0xad93d23594c935a9,
//! reflected, initial value 0, no final xor): the checksum at the end of an
//! RDB file and of a DUMP payload.
//!
//! Snapshots and DUMP/RESTORE (issue 20) checksum every byte they write or
//! read, so this runs eight bytes at a time ("slicing by 8") rather than
//! one table step per byte.

/// The polynomial, bit-reflected (the CRC is computed least significant
/// bit first).
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

/// `TABLES[k][b]`: the CRC of byte `b` followed by `k` zero bytes.
static TABLES: [[u64; 256]; 8] = build_tables();

const fn build_tables() -> [[u64; 256]; 8] {
    let mut tables = [[0u64; 256]; 8];
    let mut b = 0;
    while b < 256 {
        let mut crc = b as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        tables[0][b] = crc;
        b += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut b = 0;
        while b < 256 {
            let prev = tables[k - 1][b];
            tables[k][b] = (prev >> 8) ^ tables[0][(prev & 0xff) as usize];
            b += 1;
        }
        k += 1;
    }
    tables
}

/// Continues the CRC `crc` of what came before over `data` (start from 0):
/// a file's checksum can be computed while it is written in pieces.
#[inline]
pub fn crc64_update(mut crc: u64, data: &[u8]) -> u64 {
    let t = &TABLES;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(c);
        let x = crc ^ u64::from_le_bytes(word);
        crc = t[7][(x & 0xff) as usize]
            ^ t[6][((x >> 8) & 0xff) as usize]
            ^ t[5][((x >> 16) & 0xff) as usize]
            ^ t[4][((x >> 24) & 0xff) as usize]
            ^ t[3][((x >> 32) & 0xff) as usize]
            ^ t[2][((x >> 40) & 0xff) as usize]
            ^ t[1][((x >> 48) & 0xff) as usize]
            ^ t[0][(x >> 56) as usize];
    }
    for &b in chunks.remainder() {
        crc = t[0][((crc ^ b as u64) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// The CRC-64 of `data`, as Redis's `crc64(0, data, len)`.
pub fn crc64(data: &[u8]) -> u64 {
    crc64_update(0, data)
}

#[cfg(test)]
mod tests {
    use super::{crc64, crc64_update};

    #[test]
    fn matches_redis() {
        // Redis's own test vector (crc64.c).
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        // redis-server 7.0.15's DUMP of the string "hello": type, value,
        // RDB version 10, then this checksum little-endian.
        assert_eq!(
            crc64(b"\x00\x05hello\x0a\x00").to_le_bytes(),
            *b"cr\xdfve4 \n"
        );
    }

    #[test]
    fn matches_the_reference_checksum_in_any_pieces() {
        let reference = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);
        let mut data = Vec::new();
        for len in 0..200u32 {
            assert_eq!(crc64(&data), reference.checksum(&data), "length {len}");
            for cut in [0, 1, 7, 8, 9, data.len() / 2, data.len()] {
                let cut = cut.min(data.len());
                let (a, b) = data.split_at(cut);
                assert_eq!(crc64_update(crc64_update(0, a), b), crc64(&data));
            }
            data.push((len.wrapping_mul(2_654_435_761) >> 13) as u8);
        }
    }
}
