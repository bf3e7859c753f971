//! A bounds-checked little-endian reader over a byte slice. TileDB's
//! serialized structures (schemas, generic tiles, fragment footers, filter
//! metadata) are all little-endian fixed-width fields read front to back;
//! every read that would run past the end is a `Corrupt` error naming the
//! field, never a panic.

use crate::error::{Error, Result};

/// Reads fields front to back from a byte slice.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left to read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The unread rest of the buffer (not consumed).
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// The next `n` bytes; `field` names what is being read in the error.
    pub fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::corrupt(format!("truncated reading {field}: needs {n} bytes at offset {}, {} left", self.pos, self.remaining())));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// A length-prefixed size read as u64 that must fit what is left.
    pub fn take_len_u64(&mut self, field: &str) -> Result<&'a [u8]> {
        let n = self.u64(field)?;
        let n = usize::try_from(n).map_err(|_| Error::corrupt(format!("{field}: length {n} too large")))?;
        self.take(n, field)
    }

    /// A u32-length-prefixed byte string.
    pub fn take_len_u32(&mut self, field: &str) -> Result<&'a [u8]> {
        let n = self.u32(field)? as usize;
        self.take(n, field)
    }

    /// One byte.
    pub fn u8(&mut self, field: &str) -> Result<u8> {
        Ok(self.take(1, field)?[0])
    }

    /// Little-endian u32.
    pub fn u32(&mut self, field: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4, field)?.try_into().unwrap_or_default()))
    }

    /// Little-endian i32.
    pub fn i32(&mut self, field: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.take(4, field)?.try_into().unwrap_or_default()))
    }

    /// Little-endian u64.
    pub fn u64(&mut self, field: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8, field)?.try_into().unwrap_or_default()))
    }

    /// Little-endian f64.
    pub fn f64(&mut self, field: &str) -> Result<f64> {
        Ok(f64::from_le_bytes(self.take(8, field)?.try_into().unwrap_or_default()))
    }

    /// A u64 count that must be plausible given `elem` bytes per item left.
    pub fn count(&mut self, elem: usize, field: &str) -> Result<usize> {
        let n = self.u64(field)?;
        let fits = (n as u128) * (elem.max(1) as u128) <= self.remaining() as u128;
        if !fits {
            return Err(Error::corrupt(format!("{field}: count {n} does not fit in the {} bytes left", self.remaining())));
        }
        Ok(n as usize)
    }
}

/// Read a little-endian u64 at `i` (callers have checked bounds).
pub fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i * 8..i * 8 + 8]);
    u64::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_reports_truncation() {
        let b = [1u8, 0, 0, 0, 7];
        let mut c = Cursor::new(&b);
        assert_eq!(c.u32("a").unwrap(), 1);
        assert_eq!(c.u8("b").unwrap(), 7);
        let e = c.u64("the field").unwrap_err().to_string();
        assert!(e.contains("the field"), "{e}");
    }
}
