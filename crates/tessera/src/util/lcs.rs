//! Longest common subsequence for the LCS command: the classic dynamic
//! programming table, walked back from the end the way Redis walks it, so
//! that the match ranges come out in the same order and shape.

pub struct LcsTable {
    cols: usize,
    cells: Vec<u32>,
}

/// One matching run: inclusive index ranges in the first and second string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchRange {
    pub a: (usize, usize),
    pub b: (usize, usize),
}

impl MatchRange {
    pub fn len(&self) -> usize {
        self.a.1 - self.a.0 + 1
    }

    pub fn is_empty(&self) -> bool {
        false
    }
}

impl LcsTable {
    pub fn build(a: &[u8], b: &[u8]) -> LcsTable {
        let cols = b.len() + 1;
        let mut cells = vec![0u32; (a.len() + 1) * cols];
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                cells[i * cols + j] = if a[i - 1] == b[j - 1] {
                    cells[(i - 1) * cols + j - 1] + 1
                } else {
                    cells[(i - 1) * cols + j].max(cells[i * cols + j - 1])
                };
            }
        }
        LcsTable { cols, cells }
    }

    #[inline]
    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.cols + j]
    }

    /// Length of the longest common subsequence.
    pub fn len(&self) -> usize {
        self.cells.last().copied().unwrap_or(0) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The subsequence itself and its contiguous match ranges, latest first.
    pub fn traceback(&self, a: &[u8], b: &[u8]) -> (Vec<u8>, Vec<MatchRange>) {
        let total = self.len();
        let mut text = vec![0u8; total];
        let mut left = total;
        let mut ranges = Vec::new();
        let (mut i, mut j) = (a.len(), b.len());
        let mut current: Option<MatchRange> = None;
        while i > 0 && j > 0 {
            let mut emit = false;
            if a[i - 1] == b[j - 1] {
                left -= 1;
                text[left] = a[i - 1];
                match &mut current {
                    None => {
                        current = Some(MatchRange {
                            a: (i - 1, i - 1),
                            b: (j - 1, j - 1),
                        })
                    }
                    Some(r) if r.a.0 == i && r.b.0 == j => {
                        r.a.0 -= 1;
                        r.b.0 -= 1;
                    }
                    Some(_) => emit = true,
                }
                if let Some(r) = &current {
                    if r.a.0 == 0 || r.b.0 == 0 {
                        emit = true;
                    }
                }
                i -= 1;
                j -= 1;
            } else {
                if self.at(i - 1, j) > self.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                if current.is_some() {
                    emit = true;
                }
            }
            if emit {
                if let Some(r) = current.take() {
                    ranges.push(r);
                }
            }
        }
        (text, ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_doc_example() {
        let (a, b) = (b"ohmytext".as_slice(), b"mynewtext".as_slice());
        let t = LcsTable::build(a, b);
        assert_eq!(t.len(), 6);
        let (text, ranges) = t.traceback(a, b);
        assert_eq!(text, b"mytext");
        assert_eq!(
            ranges,
            vec![
                MatchRange {
                    a: (4, 7),
                    b: (5, 8)
                },
                MatchRange {
                    a: (2, 3),
                    b: (0, 1)
                }
            ]
        );
    }
}
