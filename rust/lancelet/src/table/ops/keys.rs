//! Join keys for merge_insert: the values of the `on` columns of one row as
//! a byte string, so that rows of the source and of the dataset can be
//! matched with one hash table whatever the key types.
//!
//! The common case — one key column of fixed-width values of at most 8
//! bytes (integers, dates, timestamps, floats) — skips the byte strings:
//! each row's key is its value's bits as one `u64` ([`BatchKeys::Words`]),
//! hashed with one multiply. Equal bits mean equal keys exactly as equal
//! byte strings do, so both forms match the same rows.
//!
//! A byte-string key is the concatenation, column by column, of the value's bytes:
//! fixed-width values as their little-endian bytes (booleans one byte),
//! strings and binaries as a u32 length then the bytes. Both sides have the
//! same types (checked before), so equal keys mean equal values. A row with
//! a null key column has no key: SQL equality never matches a null.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;

use crate::error::{Error, Result};
use crate::hashing::SEED;

/// Hashes one `u64` key: a folded 128-bit multiply, so keys that differ
/// only in their high bits (multiples of a power of two) still spread over
/// the table's low bits.
#[derive(Default, Clone, Copy)]
pub(crate) struct WordHasher(u64);

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed with it; keep any other use correct.
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        let m = ((v ^ self.0) as u128) * (SEED as u128);
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map keyed by [`BatchKeys::Words`] values.
pub(crate) type WordMap<V> = HashMap<u64, V, BuildHasherDefault<WordHasher>>;

/// The join keys of the rows of one batch (see the module docs).
pub(crate) enum BatchKeys {
    /// One fixed-width key column: each row's value bits, and its nulls.
    Words { values: Vec<u64>, nulls: Option<NullBuffer> },
    /// Anything else: byte strings.
    Bytes(Keys),
}

/// The byte width of a single key column joined as words, if it is.
fn word_width(t: &DataType) -> Option<usize> {
    match t {
        DataType::Boolean | DataType::Null => None,
        t => t.primitive_width().filter(|w| matches!(w, 1 | 2 | 4 | 8)),
    }
}

/// Each value's bits of a fixed-width column of `width` bytes.
fn words(a: &ArrayRef, width: usize) -> Vec<u64> {
    let data = a.to_data();
    let (off, len) = (data.offset(), data.len());
    let b = &data.buffers()[0].as_slice()[off * width..(off + len) * width];
    match width {
        8 => b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(),
        4 => b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")) as u64).collect(),
        2 => b.chunks_exact(2).map(|c| u16::from_le_bytes(c.try_into().expect("2 bytes")) as u64).collect(),
        _ => b.iter().map(|&x| x as u64).collect(),
    }
}

impl BatchKeys {
    /// Encode the rows of `cols` (all of the same length).
    pub(crate) fn new(cols: &[ArrayRef]) -> Result<BatchKeys> {
        match cols {
            [a] if word_width(a.data_type()).is_some() => {
                let width = word_width(a.data_type()).expect("checked");
                Ok(BatchKeys::Words { values: words(a, width), nulls: a.logical_nulls() })
            }
            _ => Ok(BatchKeys::Bytes(Keys::new(cols)?)),
        }
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        match self {
            BatchKeys::Words { values, .. } => values.len(),
            BatchKeys::Bytes(k) => k.len(),
        }
    }
}

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
    use crate::hashing::FxMap;
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

    #[test]
    fn single_fixed_width_keys_are_words() {
        use arrow_array::{Float64Array, Int16Array, Int64Array};
        let a: ArrayRef = Arc::new(Int64Array::from(vec![Some(-1), None, Some(1 << 40), Some(7)]));
        let BatchKeys::Words { values, nulls } = BatchKeys::new(&[a.slice(1, 3)]).unwrap() else { panic!("int64 keys are words") };
        assert_eq!(values[1..], [1u64 << 40, 7]);
        assert!(nulls.unwrap().is_null(0));
        let h: ArrayRef = Arc::new(Int16Array::from(vec![-2i16, 3]));
        let BatchKeys::Words { values, nulls } = BatchKeys::new(&[h]).unwrap() else { panic!("int16 keys are words") };
        assert_eq!(values, [0xfffe, 3]);
        assert!(nulls.is_none());
        let f: ArrayRef = Arc::new(Float64Array::from(vec![1.5]));
        assert!(matches!(BatchKeys::new(std::slice::from_ref(&f)).unwrap(), BatchKeys::Words { .. }));
        // Several columns, strings and booleans stay byte strings.
        assert!(matches!(BatchKeys::new(&[f.clone(), f]).unwrap(), BatchKeys::Bytes(_)));
        let s: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
        assert!(matches!(BatchKeys::new(&[s]).unwrap(), BatchKeys::Bytes(_)));
        let b: ArrayRef = Arc::new(arrow_array::BooleanArray::from(vec![true]));
        assert!(matches!(BatchKeys::new(&[b]).unwrap(), BatchKeys::Bytes(_)));
        // Keys differing only in high bits spread over the table.
        let mut m: WordMap<u64> = WordMap::default();
        for i in 0..10_000u64 {
            m.insert(i << 32, i);
        }
        assert_eq!(m.get(&(1234 << 32)), Some(&1234));
    }
}
