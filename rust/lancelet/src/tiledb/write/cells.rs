//! Turning the Arrow columns of a write into TileDB cell bytes.
//!
//! Each column is first cast (checked: a value that does not fit is an
//! error, never a null) to the Arrow type lancelet reads the column back
//! as (`cells::arrow_type`), then its buffers are taken apart into fixed
//! cells, or byte offsets plus values for var-sized cells, and one
//! validity byte per cell for nullable attributes.

use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType;

use super::super::cells::arrow_type;
use super::super::datatype::Datatype;
use super::super::schema::VAR_NUM;
use crate::error::{Error, Result};

/// The cells of one column, in the caller's row order.
#[derive(Debug, Clone, Default)]
pub struct Cells {
    pub len: usize,
    /// Bytes per cell (fixed-size columns).
    pub cell_size: usize,
    /// Fixed-size cells, `len × cell_size` bytes.
    pub fixed: Vec<u8>,
    /// Var-sized cells: `len + 1` byte offsets into `data` (empty if fixed).
    pub offsets: Vec<u64>,
    pub data: Vec<u8>,
    /// One byte per cell (0 = null) for nullable attributes.
    pub validity: Option<Vec<u8>>,
}

impl Cells {
    /// Var-sized column.
    pub fn is_var(&self) -> bool {
        !self.offsets.is_empty()
    }
    /// The bytes of cell `i`.
    pub fn value(&self, i: usize) -> &[u8] {
        if self.is_var() {
            &self.data[self.offsets[i] as usize..self.offsets[i + 1] as usize]
        } else {
            &self.fixed[i * self.cell_size..(i + 1) * self.cell_size]
        }
    }
    /// Whether cell `i` is valid.
    pub fn valid(&self, i: usize) -> bool {
        self.validity.as_ref().is_none_or(|v| v[i] != 0)
    }
    /// Append the cells of `other` (the same column's next rows).
    pub fn append(&mut self, other: Cells) {
        if self.is_var() || other.is_var() {
            let base = self.data.len() as u64;
            if self.offsets.is_empty() {
                self.offsets.push(0);
            }
            self.offsets.extend(other.offsets.iter().skip(1).map(|o| o + base));
            self.data.extend_from_slice(&other.data);
        } else {
            self.fixed.extend_from_slice(&other.fixed);
        }
        match (&mut self.validity, other.validity) {
            (Some(v), Some(o)) => v.extend_from_slice(&o),
            (v, _) => *v = None,
        }
        self.len += other.len;
    }
}

fn kind(dt: &DataType) -> u8 {
    match dt {
        DataType::Boolean => 0,
        d if d.is_numeric() => 0,
        DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 => 1,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => 2,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => 3,
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) | DataType::ListView(_) => 4,
        DataType::Null => 5,
        _ => 6,
    }
}

fn compatible(from: &DataType, to: &DataType) -> bool {
    let (a, b) = (kind(from), kind(to));
    a == b || a == 5 || (a == 0 && b == 1 && from.is_integer()) || (a == 2 && b == 3) || (a == 3 && b == 2)
}

/// Convert one input column for a TileDB column of type `t` with
/// `cell_val_num` values per cell. `field` names the column in errors.
pub fn column_cells(col: &ArrayRef, t: Datatype, cell_val_num: u32, nullable: bool, field: &str) -> Result<Cells> {
    let target = arrow_type(t, cell_val_num)?;
    if !compatible(col.data_type(), &target) {
        return Err(Error::invalid_input(format!("column {field}: {} data for a TileDB {} column", col.data_type(), t.name())));
    }
    let opts = CastOptions { safe: false, ..Default::default() };
    if let DataType::FixedSizeBinary(n) = target {
        if !matches!(col.data_type(), DataType::FixedSizeBinary(_)) {
            return pad_fixed_binary(col, n as usize, nullable, field);
        }
    }
    let arr = if col.data_type() == &target {
        col.clone()
    } else {
        cast_with_options(col, &target, &opts)
            .map_err(|e| Error::invalid_input(format!("column {field}: cannot convert {} to {}: {e}", col.data_type(), t.name())).with_source(e))?
    };
    let len = arr.len();
    if !nullable && arr.null_count() > 0 {
        return Err(Error::invalid_input(format!("column {field} has {} nulls but is not nullable", arr.null_count())));
    }
    let validity = nullable.then(|| (0..len).map(|i| arr.is_valid(i) as u8).collect::<Vec<u8>>());
    let data = arr.to_data();
    let width = t.size();
    let mut cells = Cells { len, cell_size: width * cell_val_num.max(1) as usize, validity, ..Default::default() };
    match &target {
        DataType::LargeUtf8 | DataType::LargeBinary => {
            let offs: &[i64] = &data.buffer::<i64>(0)[data.offset()..data.offset() + len + 1];
            let base = offs[0] as usize;
            let values = &data.buffers()[1].as_slice()[base..offs[len] as usize];
            if cell_val_num == VAR_NUM {
                cells.offsets = offs.iter().map(|o| (*o as usize - base) as u64).collect();
                cells.data = values.to_vec();
                if cells.offsets.is_empty() {
                    cells.offsets.push(0);
                }
            } else {
                // One byte per cell.
                for i in 0..len {
                    let n = offs[i + 1] - offs[i];
                    if n != 1 && arr.is_valid(i) {
                        return Err(Error::invalid_input(format!("column {field}: row {i} holds {n} bytes, the column takes 1")));
                    }
                    cells.fixed.push(if n >= 1 { values[offs[i] as usize - base] } else { 0 });
                }
            }
        }
        DataType::FixedSizeBinary(n) => {
            let n = *n as usize;
            cells.fixed = data.buffers()[0].as_slice()[data.offset() * n..(data.offset() + len) * n].to_vec();
        }
        DataType::LargeList(_) => {
            let offs: &[i64] = &data.buffer::<i64>(0)[data.offset()..data.offset() + len + 1];
            let child = &data.child_data()[0];
            if child.null_count() > 0 {
                return Err(Error::invalid_input(format!("column {field}: list values may not be null")));
            }
            let base = offs[0] as usize;
            cells.offsets = offs.iter().map(|o| ((*o as usize - base) * width) as u64).collect();
            cells.data = child_values(child, base, offs[len] as usize, width);
        }
        DataType::FixedSizeList(_, n) => {
            let n = *n as usize;
            let child = &data.child_data()[0];
            if child.null_count() > 0 {
                return Err(Error::invalid_input(format!("column {field}: list values may not be null")));
            }
            cells.fixed = child_values(child, data.offset() * n, (data.offset() + len) * n, width);
        }
        DataType::Boolean => {
            let b = arr.as_any().downcast_ref::<BooleanArray>().ok_or_else(|| Error::invalid_input(format!("column {field}: not booleans")))?;
            cells.fixed = (0..len).map(|i| b.value(i) as u8).collect();
        }
        _ => {
            cells.fixed = data.buffers()[0].as_slice()[data.offset() * width..(data.offset() + len) * width].to_vec();
        }
    }
    Ok(cells)
}

/// Values `from..to` of a list's primitive child as stored bytes (booleans
/// are bit-packed in Arrow, one byte each in TileDB).
fn child_values(child: &arrow_data::ArrayData, from: usize, to: usize, width: usize) -> Vec<u8> {
    if child.data_type() == &DataType::Boolean {
        let bits = arrow_buffer::BooleanBuffer::new(child.buffers()[0].clone(), child.offset(), child.len());
        return (from..to).map(|i| bits.value(i) as u8).collect();
    }
    let start = child.offset() * width;
    child.buffers()[0].as_slice()[start + from * width..start + to * width].to_vec()
}

/// Byte strings into fixed-size CHAR cells of `n` bytes: shorter values are
/// padded with zero bytes (numpy's `S<n>` strips them), longer ones are an
/// error.
fn pad_fixed_binary(col: &ArrayRef, n: usize, nullable: bool, field: &str) -> Result<Cells> {
    let arr = cast_with_options(col, &DataType::LargeBinary, &CastOptions { safe: false, ..Default::default() })
        .map_err(|e| Error::invalid_input(format!("column {field}: cannot convert {} to bytes: {e}", col.data_type())).with_source(e))?;
    let b = arr.as_any().downcast_ref::<arrow_array::LargeBinaryArray>().ok_or_else(|| Error::invalid_input(format!("column {field}: not bytes")))?;
    if !nullable && b.null_count() > 0 {
        return Err(Error::invalid_input(format!("column {field} has {} nulls but is not nullable", b.null_count())));
    }
    let mut fixed = Vec::with_capacity(b.len() * n);
    for i in 0..b.len() {
        let v = if b.is_valid(i) { b.value(i) } else { &[][..] };
        if v.len() > n {
            return Err(Error::invalid_input(format!("column {field}: row {i} holds {} bytes, the column takes {n}", v.len())));
        }
        fixed.extend_from_slice(v);
        fixed.extend(std::iter::repeat_n(0u8, n - v.len()));
    }
    let validity = nullable.then(|| (0..b.len()).map(|i| b.is_valid(i) as u8).collect());
    Ok(Cells { len: b.len(), cell_size: n, fixed, validity, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, LargeStringArray, StringArray};

    use super::*;

    #[test]
    fn appended_chunks_equal_one_conversion() {
        let all: Vec<Option<&str>> = vec![Some("a"), None, Some(""), Some("héllo"), Some("xy"), None, Some("z")];
        let whole: ArrayRef = Arc::new(StringArray::from(all.clone()));
        let want = column_cells(&whole, Datatype::StringUtf8, VAR_NUM, true, "s").unwrap();
        for cut in 0..=all.len() {
            let a: ArrayRef = Arc::new(LargeStringArray::from(all[..cut].to_vec()));
            let b: ArrayRef = Arc::new(StringArray::from(all[cut..].to_vec()));
            let mut got = column_cells(&a, Datatype::StringUtf8, VAR_NUM, true, "s").unwrap();
            got.append(column_cells(&b, Datatype::StringUtf8, VAR_NUM, true, "s").unwrap());
            assert_eq!((got.len, &got.offsets, &got.data, &got.validity), (want.len, &want.offsets, &want.data, &want.validity), "cut {cut}");
        }
        let ints: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![1, 2, 3]));
        let mut got = column_cells(&ints.slice(0, 1), Datatype::Int32, 1, false, "i").unwrap();
        got.append(column_cells(&ints.slice(1, 2), Datatype::Int32, 1, false, "i").unwrap());
        assert_eq!(got.fixed, column_cells(&ints, Datatype::Int32, 1, false, "i").unwrap().fixed);
    }
}
