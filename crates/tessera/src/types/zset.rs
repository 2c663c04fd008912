//! Placeholder for the zset type; replaced by its full implementation.

#[derive(Debug, Clone, Default)]
pub struct ZSetValue {
    len: usize,
}

impl ZSetValue {
    pub fn encoding_name(&self) -> &'static str {
        "unimplemented"
    }
    pub fn heap_size(&self) -> usize {
        0
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
