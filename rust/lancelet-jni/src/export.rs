//! Record batches described for arrow-vector's `VectorLoader`, without
//! copying their buffers.
//!
//! arrow-c-data is not among the jars pyspark ships, so the C Data Interface
//! cannot be imported on the JVM. What arrow-vector does have is the IPC
//! loading path: a list of field nodes (length, null count) and buffers in
//! the IPC order (depth first; per field its validity, then offsets/values),
//! and `BufferAllocator.wrapForeignAllocation`, which makes an `ArrowBuf`
//! over memory it does not own. So a batch leaves as the addresses and
//! lengths of its own buffers, and the JVM wraps them in place.
//!
//! IPC buffers start at the array's first value, while Arrow arrays in Rust
//! may be slices (lancelet's batches are usually slices of decoded pages).
//! A slice is handed over by moving the start of its buffers: values and
//! offsets by the slice's offset (offsets stay absolute into the untouched
//! data buffer, which arrow-vector accepts), bitmaps by offset / 8 when
//! byte-aligned. Only an unaligned bitmap is copied.

use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_data::ArrayData;
use arrow_schema::DataType;
use lancelet::{Error, Result};

/// One batch as the JVM loads it, keeping alive everything it points at.
#[derive(Debug, Default)]
pub struct Exported {
    /// Rows in the batch.
    pub num_rows: usize,
    /// `(length, null_count)` of every field node, depth first.
    pub nodes: Vec<(i64, i64)>,
    /// `(address, length in bytes)` of every buffer, in IPC order.
    pub buffers: Vec<(i64, i64)>,
    /// The columns the addresses point into.
    columns: Vec<ArrayRef>,
    /// Bitmaps copied because their slice was not byte-aligned.
    owned: Vec<Buffer>,
}

impl Exported {
    /// Describe `columns` (all of `num_rows` rows, in Spark's layouts, see
    /// [`crate::spark_types::to_spark`]).
    pub fn new(columns: Vec<ArrayRef>, num_rows: usize) -> Result<Self> {
        let mut out = Exported { num_rows, ..Default::default() };
        for c in &columns {
            out.walk(&c.to_data())?;
        }
        out.columns = columns;
        Ok(out)
    }

    /// The description as one `long[]`: rows, node count, buffer count,
    /// then the nodes' pairs, then the buffers' pairs.
    pub fn to_longs(&self) -> Vec<i64> {
        let mut v = Vec::with_capacity(3 + 2 * (self.nodes.len() + self.buffers.len()));
        v.extend([self.num_rows as i64, self.nodes.len() as i64, self.buffers.len() as i64]);
        for (a, b) in self.nodes.iter().chain(&self.buffers) {
            v.extend([*a, *b]);
        }
        v
    }

    fn push(&mut self, bytes: &[u8]) {
        self.buffers.push((bytes.as_ptr() as i64, bytes.len() as i64));
    }

    fn empty(&mut self) {
        self.buffers.push((0, 0));
    }

    /// `len` bits of `buf` from bit `offset`.
    fn bits(&mut self, buf: &Buffer, offset: usize, len: usize) {
        if len == 0 {
            return self.empty();
        }
        if offset % 8 == 0 {
            self.push(&buf.as_slice()[offset / 8..offset / 8 + len.div_ceil(8)]);
        } else {
            let copy = buf.bit_slice(offset, len);
            self.push(copy.as_slice());
            self.owned.push(copy);
        }
    }

    fn validity(&mut self, d: &ArrayData) {
        match d.nulls() {
            // arrow-vector fills an all-valid bitmap itself when the null
            // count is zero.
            Some(n) if n.null_count() > 0 => self.bits(n.buffer(), n.offset(), n.len()),
            _ => self.empty(),
        }
    }

    fn fixed(&mut self, buf: &Buffer, offset: usize, len: usize, width: usize) -> Result<()> {
        let bytes = buf.as_slice();
        let (s, e) = (offset * width, (offset + len) * width);
        if e > bytes.len() {
            return Err(Error::internal(format!(
                "a buffer of {} bytes is too short for rows {offset}..{} of width {width}",
                bytes.len(),
                offset + len
            )));
        }
        self.push(&bytes[s..e]);
        Ok(())
    }

    fn walk(&mut self, d: &ArrayData) -> Result<()> {
        let (len, off) = (d.len(), d.offset());
        let nulls = if matches!(d.data_type(), DataType::Null) { len } else { d.null_count() };
        self.nodes.push((len as i64, nulls as i64));
        match d.data_type() {
            DataType::Null => {}
            DataType::Boolean => {
                self.validity(d);
                self.bits(&d.buffers()[0], off, len);
            }
            DataType::Utf8 | DataType::Binary => {
                self.validity(d);
                self.fixed(&d.buffers()[0], off, len + 1, 4)?;
                self.push(d.buffers()[1].as_slice());
            }
            DataType::LargeUtf8 | DataType::LargeBinary => {
                self.validity(d);
                self.fixed(&d.buffers()[0], off, len + 1, 8)?;
                self.push(d.buffers()[1].as_slice());
            }
            DataType::List(_) | DataType::Map(..) => {
                self.validity(d);
                self.fixed(&d.buffers()[0], off, len + 1, 4)?;
                // The offsets index the whole child array.
                self.walk(&d.child_data()[0])?;
            }
            DataType::Struct(_) => {
                self.validity(d);
                // A struct's children are already sliced to its rows.
                for c in d.child_data() {
                    self.walk(c)?;
                }
            }
            dt => match dt.primitive_width() {
                Some(w) => {
                    self.validity(d);
                    self.fixed(&d.buffers()[0], off, len, w)?;
                }
                None => return Err(Error::internal(format!("no JVM layout for Arrow type {dt}"))),
            },
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use arrow_array::{BooleanArray, Int64Array, ListArray, StringArray, StructArray};
    use arrow_schema::Field;

    fn read_i64(addr: i64, i: usize) -> i64 {
        // SAFETY: tests read inside buffers the Exported keeps alive.
        unsafe { *((addr as *const i64).add(i)) }
    }

    fn read_i32(addr: i64, i: usize) -> i32 {
        // SAFETY: as above.
        unsafe { (addr as *const i32).add(i).read_unaligned() }
    }

    fn byte(addr: i64, i: usize) -> u8 {
        // SAFETY: as above.
        unsafe { *((addr as *const u8).add(i)) }
    }

    #[test]
    fn sliced_primitives_move_their_start() {
        let a: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3), Some(4), None, Some(6), Some(7), Some(8), Some(9), Some(10)]));
        let e = Exported::new(vec![a.slice(8, 2)], 2).unwrap();
        assert_eq!(e.nodes, vec![(2, 0)]);
        assert_eq!(e.buffers[0], (0, 0));
        assert_eq!(read_i64(e.buffers[1].0, 0), 9);
        assert_eq!(e.buffers[1].1, 16);
        // an unaligned slice with nulls copies its bitmap
        let e = Exported::new(vec![a.slice(1, 4)], 4).unwrap();
        assert_eq!(e.nodes, vec![(4, 2)]);
        assert_eq!(byte(e.buffers[0].0, 0) & 0b1111, 0b0110);
        assert_eq!(read_i64(e.buffers[1].0, 1), 3);
        assert_eq!(e.to_longs()[..3], [4, 1, 2]);
    }

    #[test]
    fn strings_keep_absolute_offsets() {
        let a: ArrayRef = Arc::new(StringArray::from(vec!["a", "bb", "ccc", "dddd"]));
        let e = Exported::new(vec![a.slice(2, 2)], 2).unwrap();
        let (offs, data) = (e.buffers[1].0, e.buffers[2].0);
        let (s, t) = (read_i32(offs, 0) as usize, read_i32(offs, 1) as usize);
        let text: Vec<u8> = (s..t).map(|i| byte(data, i)).collect();
        assert_eq!(text, b"ccc");
        assert_eq!(e.buffers[1].1, 12);
    }

    #[test]
    fn nested_and_boolean_layouts() {
        let values = Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5]));
        let list: ArrayRef = Arc::new(ListArray::new(
            Arc::new(Field::new("element", DataType::Int64, true)),
            arrow_buffer::OffsetBuffer::new(vec![0, 2, 2, 5].into()),
            values,
            None,
        ));
        let flags: ArrayRef = Arc::new(BooleanArray::from(vec![true, false, true]));
        let st: ArrayRef = Arc::new(StructArray::from(vec![(Arc::new(Field::new("f", DataType::Boolean, true)), flags)]));
        let e = Exported::new(vec![list.slice(1, 2), st.slice(1, 2)], 2).unwrap();
        // list: node + validity + offsets, child node + validity + values;
        // struct: node + validity, child node + validity + bits
        assert_eq!(e.nodes, vec![(2, 0), (5, 0), (2, 0), (2, 0)]);
        assert_eq!(e.buffers.len(), 2 + 2 + 1 + 2);
        assert_eq!(read_i32(e.buffers[1].0, 0), 2);
        assert_eq!(read_i32(e.buffers[1].0, 2), 5);
        // sliced bit 1 of 0b101 onwards, copied: 0b10
        assert_eq!(byte(e.buffers[6].0, 0) & 0b11, 0b10);
    }
}
