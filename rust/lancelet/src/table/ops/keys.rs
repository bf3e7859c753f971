//! Join keys for merge_insert: the values of the `on` columns of one row as
//! a byte string, so that rows of the source and of the dataset can be
//! matched with one hash table whatever the key types.
//!
//! A key is the concatenation, column by column, of the value's bytes:
//! fixed-width values as their little-endian bytes (booleans one byte),
//! strings and binaries as a u32 length then the bytes. Both sides have the
//! same types (checked before), so equal keys mean equal values. A row with
//! a null key column has no key: SQL equality never matches a null.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use crate::error::{Error, Result};

/// FxHash: a fast multiplicative hash (keys are not adversarial).
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 56));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl FxHasher {
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(SEED);
    }
}

/// A hash map with [`FxHasher`].
pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Writes one column's value of a row into a key.
type Writer<'a> = Box<dyn Fn(usize, &mut Vec<u8>) + 'a>;

fn fixed_writer(a: &ArrayRef, width: usize) -> Writer<'_> {
    let data = a.to_data();
    let offset = data.offset();
    let bytes = data.buffers()[0].clone();
    Box::new(move |i, out| {
        let start = (offset + i) * width;
        out.extend_from_slice(&bytes.as_slice()[start..start + width]);
    })
}

fn writer(a: &ArrayRef) -> Result<Writer<'_>> {
    let t = a.data_type();
    if let Some(w) = t.primitive_width() {
        if !matches!(t, DataType::Boolean) {
            return Ok(fixed_writer(a, w));
        }
    }
    Ok(match t {
        DataType::Boolean => {
            let b = a.as_boolean().clone();
            Box::new(move |i, out| out.push(b.value(i) as u8))
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let s = arrow_cast::cast(a, &DataType::LargeUtf8).map_err(|e| Error::Internal { what: e.to_string() })?;
            let s = s.as_string::<i64>().clone();
            Box::new(move |i, out| {
                let v = s.value(i).as_bytes();
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                out.extend_from_slice(v);
            })
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
            let s = arrow_cast::cast(a, &DataType::LargeBinary).map_err(|e| Error::Internal { what: e.to_string() })?;
            let s = s.as_binary::<i64>().clone();
            Box::new(move |i, out| {
                let v = s.value(i);
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                out.extend_from_slice(v);
            })
        }
        other => return Err(Error::unsupported(format!("merge_insert cannot join on a column of type {other}"))),
    })
}

/// The keys of every row of some columns: one flat byte buffer and each
/// row's range in it (`None` for rows with a null key column).
pub(crate) struct Keys {
    bytes: Vec<u8>,
    ranges: Vec<Option<(u32, u32)>>,
}

impl Keys {
    /// Encode the rows of `cols` (all of the same length).
    pub(crate) fn new(cols: &[ArrayRef]) -> Result<Keys> {
        let n = cols.first().map(|c| c.len()).unwrap_or(0);
        let writers = cols.iter().map(writer).collect::<Result<Vec<_>>>()?;
        let nulls: Vec<_> = cols.iter().filter_map(|c| c.logical_nulls()).collect();
        let mut bytes = Vec::with_capacity(n * 8 * cols.len());
        let mut ranges = Vec::with_capacity(n);
        for i in 0..n {
            if nulls.iter().any(|nb| nb.is_null(i)) {
                ranges.push(None);
                continue;
            }
            let start = bytes.len();
            for w in &writers {
                w(i, &mut bytes);
            }
            let (s, e) = (u32::try_from(start), u32::try_from(bytes.len()));
            match (s, e) {
                (Ok(s), Ok(e)) => ranges.push(Some((s, e))),
                _ => return Err(Error::invalid_input("merge_insert keys of one batch exceed 4 GiB")),
            }
        }
        Ok(Keys { bytes, ranges })
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }

    /// The key of row `i` (`None` when a key column is null).
    pub(crate) fn get(&self, i: usize) -> Option<&[u8]> {
        self.ranges[i].map(|(s, e)| &self.bytes[s as usize..e as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn composite_keys_and_nulls() {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), Some(1), None, Some(1)]));
        let b: ArrayRef = Arc::new(StringArray::from(vec![Some("x"), Some("xy"), Some("x"), Some("x")]));
        let k = Keys::new(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(k.len(), 4);
        assert_eq!(k.get(0), k.get(3));
        assert_ne!(k.get(0), k.get(1));
        assert_eq!(k.get(2), None);
        // Sliced arrays read from their offset.
        let k2 = Keys::new(&[a.slice(1, 3), b.slice(1, 3)]).unwrap();
        assert_eq!(k2.get(2), k.get(0));
        let mut m: FxMap<&[u8], usize> = FxMap::default();
        m.insert(k.get(0).unwrap(), 0);
        assert_eq!(m.get(k.get(3).unwrap()), Some(&0));
    }
}
