//! Redis's RDB format (version 10, as redis-server 7.0 writes it): values
//! ([`value`]), the compact structures inside them ([`packed`]), the
//! primitives ([`codec`]) and whole files ([`file`]).

pub mod codec;
pub mod file;
pub mod packed;
pub mod value;

pub use value::{LoadLimits, SaveOptions};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RdbError {
    #[error("unexpected end of data")]
    Truncated,
    #[error("{0}")]
    Corrupt(&'static str),
    #[error("module values are not supported (no modules are loaded)")]
    Module,
    #[error("Can't handle RDB format version {0}")]
    Version(u32),
    #[error("Wrong signature trying to load DB from file")]
    Signature,
    #[error("Wrong RDB checksum expected: ({expected:#018x}) got: ({got:#018x})")]
    Checksum { expected: u64, got: u64 },
    #[error("Duplicate key '{0}' in DB {1}")]
    DuplicateKey(String, usize),
    #[error("DB index {0} is out of range")]
    DbIndex(u64),
    #[error("{0}")]
    Function(String),
}

pub type RdbResult<T> = Result<T, RdbError>;

/// The DUMP payload of a value: its RDB type and body, then the RDB
/// version (2 bytes, little endian) and a CRC64 of everything before it.
pub fn dump_payload(v: &crate::types::Value, opts: &SaveOptions) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    out.push(value::type_byte(v));
    value::write_value(&mut out, v, opts);
    out.extend_from_slice(&codec::RDB_VERSION.to_le_bytes());
    let crc = crate::util::crc64::crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Whether a DUMP payload's footer is one this server accepts: an RDB
/// version it reads and a matching checksum (Redis's verifyDumpPayload;
/// a zero checksum is accepted when `skip_zero_crc`).
pub fn verify_payload(p: &[u8]) -> bool {
    if p.len() < 10 {
        return false;
    }
    let footer = &p[p.len() - 10..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > codec::RDB_VERSION {
        return false;
    }
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    crate::util::crc64::crc64(&p[..p.len() - 8]) == u64::from_le_bytes(crc)
}

/// Decodes a verified DUMP payload's value (`Ok(None)`: an empty one).
/// `packed_blobs` counts the listpack and intset blobs it read, also when
/// it fails on a later one.
pub fn read_payload(
    p: &[u8],
    limits: &LoadLimits,
    packed_blobs: &mut u64,
) -> RdbResult<Option<crate::types::Value>> {
    let body = p.get(..p.len().saturating_sub(10)).unwrap_or(&[]);
    let mut r = codec::Reader::new(body);
    let t = r.u8()?;
    if !codec::is_value_type(t) {
        return Err(RdbError::Corrupt("unknown value type"));
    }
    let v = value::read_value(&mut r, t, limits);
    *packed_blobs = r.packed_blobs();
    let v = v?;
    if !r.is_empty() {
        return Err(RdbError::Corrupt("trailing bytes after the value"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests;
