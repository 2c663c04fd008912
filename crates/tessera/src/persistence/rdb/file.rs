//! Whole RDB files: the header and aux fields, function libraries, the
//! database selectors and key records, the EOF marker and the checksum;
//! and the loader that walks them back.

use super::codec::*;
use super::value::{read_value, type_byte, write_value, LoadLimits, SaveOptions};
use super::{RdbError, RdbResult};
use crate::keyspace::Entry;
use crate::types::Value;

/// What a saved key's access record says (Redis writes LRU idle time under
/// an LRU maxmemory policy, the LFU counter under an LFU one, else none).
#[derive(Clone, Copy, Debug)]
pub enum AccessRecord {
    None,
    LruIdle {
        now_s: u32,
    },
    LfuFreq {
        now_minutes: u32,
        decay_minutes: u32,
    },
}

pub enum AuxValue<'a> {
    Str(&'a [u8]),
    Int(i64),
}

pub fn write_header(out: &mut Vec<u8>, aux: &[(&str, AuxValue)]) {
    out.extend_from_slice(format!("REDIS{:04}", RDB_VERSION).as_bytes());
    for (name, value) in aux {
        out.push(OPCODE_AUX);
        write_string(out, name.as_bytes(), false);
        match value {
            AuxValue::Str(s) => write_string(out, s, false),
            AuxValue::Int(n) => write_int_string(out, *n),
        }
    }
}

pub fn write_function(out: &mut Vec<u8>, code: &[u8], compress: bool) {
    out.push(OPCODE_FUNCTION2);
    write_blob(out, code, compress);
}

pub fn write_select_db(out: &mut Vec<u8>, db: usize) {
    out.push(OPCODE_SELECTDB);
    write_len(out, db as u64);
}

pub fn write_resize_db(out: &mut Vec<u8>, keys: usize, volatile: usize) {
    out.push(OPCODE_RESIZEDB);
    write_len(out, keys as u64);
    write_len(out, volatile as u64);
}

/// One key record: its expiry (Unix ms, 0 for none), access record, type,
/// name and value.
pub fn write_key(
    out: &mut Vec<u8>,
    key: &[u8],
    entry: &Entry,
    expire_ms: i64,
    opts: &SaveOptions,
    access: AccessRecord,
) {
    if expire_ms > 0 {
        out.push(OPCODE_EXPIRETIME_MS);
        write_millis(out, expire_ms);
    }
    match access {
        AccessRecord::None => {}
        AccessRecord::LruIdle { now_s } => {
            out.push(OPCODE_IDLE);
            write_len(out, now_s.wrapping_sub(entry.access) as u64);
        }
        AccessRecord::LfuFreq {
            now_minutes,
            decay_minutes,
        } => {
            out.push(OPCODE_FREQ);
            out.push(crate::keyspace::table::lfu_decayed_counter(
                entry.access,
                now_minutes,
                decay_minutes,
            ) as u8);
        }
    }
    out.push(type_byte(&entry.value));
    write_string(out, key, opts.compress);
    write_value(out, &entry.value, opts);
}

/// The EOF opcode; the caller appends the checksum of everything written.
pub fn write_eof(out: &mut Vec<u8>) {
    out.push(OPCODE_EOF);
}

/// A key as the loader hands it over.
pub struct LoadedKey {
    pub db: usize,
    pub key: Vec<u8>,
    pub value: Value,
    /// Absolute Unix ms, 0 for none.
    pub expire_ms: i64,
    pub idle_s: Option<u64>,
    pub freq: Option<u8>,
}

/// What the loader meets, in file order.
pub enum Record {
    Aux(Vec<u8>, Vec<u8>),
    Function(Vec<u8>),
    ResizeDb {
        db: usize,
        keys: u64,
        volatile: u64,
    },
    Key(LoadedKey),
    /// A key whose value was empty (Redis skips those).
    EmptyKey,
}

pub struct LoadSummary {
    pub version: u32,
    /// The checksum was zero (saved with `rdbchecksum no`): not checked.
    pub checksum_skipped: bool,
    /// Listpack and intset blobs read (see `Reader::note_packed_blob`).
    pub packed_blobs: u64,
}

/// The RDB version of a file's header.
pub fn read_header(r: &mut Reader) -> RdbResult<u32> {
    let magic = r.bytes(9).map_err(|_| RdbError::Signature)?;
    if &magic[..5] != b"REDIS" || !magic[5..].iter().all(u8::is_ascii_digit) {
        return Err(RdbError::Signature);
    }
    let version: u32 = std::str::from_utf8(&magic[5..])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(RdbError::Signature)?;
    if !(1..=RDB_VERSION as u32).contains(&version) {
        return Err(RdbError::Version(version));
    }
    Ok(version)
}

/// Walks a whole RDB image, handing each record to `sink`. Checks the
/// checksum when `verify` and the file has one (RDB 5 and later).
pub fn load(
    data: &[u8],
    limits: &LoadLimits,
    ndbs: usize,
    verify: bool,
    sink: &mut dyn FnMut(Record) -> RdbResult<()>,
) -> RdbResult<LoadSummary> {
    let mut r = Reader::new(data);
    let version = read_header(&mut r)?;
    let mut db = 0usize;
    let mut expire_ms = 0i64;
    let mut idle_s = None;
    let mut freq = None;
    loop {
        let op = r.u8()?;
        match op {
            OPCODE_EXPIRETIME_MS => {
                expire_ms = r.millis()?;
                continue;
            }
            OPCODE_EXPIRETIME => {
                expire_ms = r.seconds()? as i64 * 1000;
                continue;
            }
            OPCODE_IDLE => {
                idle_s = Some(r.len()?);
                continue;
            }
            OPCODE_FREQ => {
                freq = Some(r.u8()?);
                continue;
            }
            OPCODE_SELECTDB => {
                let n = r.len()?;
                if n >= ndbs as u64 {
                    return Err(RdbError::DbIndex(n));
                }
                db = n as usize;
            }
            OPCODE_RESIZEDB => {
                let keys = r.len()?;
                let volatile = r.len()?;
                sink(Record::ResizeDb { db, keys, volatile })?;
            }
            OPCODE_AUX => {
                let name = r.string()?;
                let value = r.string()?;
                sink(Record::Aux(name, value))?;
            }
            OPCODE_MODULE_AUX => return Err(RdbError::Module),
            OPCODE_FUNCTION_PRE_GA => {
                return Err(RdbError::Function(
                    "Pre-release function format not supported.".into(),
                ))
            }
            OPCODE_FUNCTION2 => sink(Record::Function(r.string()?))?,
            OPCODE_EOF => break,
            t if is_value_type(t) => {
                let key = r.string()?;
                let value = read_value(&mut r, t, limits)?;
                match value {
                    Some(value) => sink(Record::Key(LoadedKey {
                        db,
                        key,
                        value,
                        expire_ms,
                        idle_s,
                        freq,
                    }))?,
                    None => sink(Record::EmptyKey)?,
                }
            }
            _ => return Err(RdbError::Corrupt("unknown RDB opcode")),
        }
        expire_ms = 0;
        idle_s = None;
        freq = None;
    }
    let mut checksum_skipped = false;
    if version >= 5 {
        let body_len = r.position();
        let stored = u64::from_le_bytes(r.bytes(8)?.try_into().map_err(|_| RdbError::Truncated)?);
        if stored == 0 {
            checksum_skipped = true;
        } else if verify {
            let got = crate::util::crc64::crc64(&data[..body_len]);
            if got != stored {
                return Err(RdbError::Checksum {
                    expected: stored,
                    got,
                });
            }
        }
    }
    Ok(LoadSummary {
        version,
        checksum_skipped,
        packed_blobs: r.packed_blobs(),
    })
}
