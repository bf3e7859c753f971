//! Columns read as consecutive runs of arrays ("pieces").
//!
//! A read covers several pages of each column, and the pages of different
//! columns end at different rows. Concatenating each column's pages into
//! one array copied every value a second time, into freshly allocated
//! memory (a third of a full scan's memory traffic). A reader can instead
//! hand back each column as the arrays of its pages; output batches are
//! then slices of those arrays, and only a batch that straddles a page
//! boundary of some column copies that column's rows.

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;

use crate::error::{Error, Result};

/// The projected columns of a read, each as pieces whose lengths add up
/// to the same row count.
#[derive(Debug, Clone)]
pub struct ColumnPieces {
    columns: Vec<Vec<ArrayRef>>,
    num_rows: usize,
}

impl ColumnPieces {
    /// Columns of `num_rows` rows each; fails if a column's pieces add up
    /// to another count.
    pub fn new(columns: Vec<Vec<ArrayRef>>, num_rows: usize) -> Result<Self> {
        for (i, c) in columns.iter().enumerate() {
            let n: usize = c.iter().map(|a| a.len()).sum();
            if n != num_rows {
                return Err(Error::corrupt(format!("column {i} decoded {n} rows, expected {num_rows}")));
            }
        }
        Ok(ColumnPieces { columns, num_rows })
    }

    /// One piece per column.
    pub fn from_arrays(arrays: Vec<ArrayRef>, num_rows: usize) -> Result<Self> {
        Self::new(arrays.into_iter().map(|a| vec![a]).collect(), num_rows)
    }

    /// The pieces of column `i`.
    pub fn column(&self, i: usize) -> &[ArrayRef] {
        &self.columns[i]
    }

    /// Column `i` as one array (its pieces concatenated).
    pub fn concat_column(&self, i: usize) -> Result<ArrayRef> {
        concat(&self.columns[i])
    }

    /// Keep the first `n` columns and append `more` (one piece each).
    pub fn truncate_and_extend(mut self, n: usize, more: impl IntoIterator<Item = ArrayRef>) -> Result<Self> {
        self.columns.truncate(n);
        self.columns.extend(more.into_iter().map(|a| vec![a]));
        Self::new(self.columns, self.num_rows)
    }

    /// Every column as one array (its pieces concatenated), in a batch of
    /// `schema`.
    pub fn into_batch(self, schema: SchemaRef) -> Result<RecordBatch> {
        let arrays = self.columns.iter().map(|c| concat(c)).collect::<Result<Vec<_>>>()?;
        batch(schema, arrays, self.num_rows)
    }

    /// Rows `offset..offset + len` as a batch of `schema`: slices of the
    /// pieces, copied only where the rows span pieces.
    pub fn slice(&self, schema: SchemaRef, offset: usize, len: usize) -> Result<RecordBatch> {
        if offset + len > self.num_rows {
            return Err(Error::Internal { what: format!("rows {offset}..{} of {}", offset + len, self.num_rows) });
        }
        let arrays = self.columns.iter().map(|c| slice_pieces(c, offset, len)).collect::<Result<Vec<_>>>()?;
        batch(schema, arrays, len)
    }

    /// All rows as batches of `batch_size` rows (the last may be shorter).
    pub fn batches(&self, schema: SchemaRef, batch_size: usize) -> Result<Vec<RecordBatch>> {
        let size = batch_size.max(1);
        (0..self.num_rows).step_by(size).map(|s| self.slice(schema.clone(), s, size.min(self.num_rows - s))).collect()
    }
}

fn batch(schema: SchemaRef, arrays: Vec<ArrayRef>, num_rows: usize) -> Result<RecordBatch> {
    RecordBatch::try_new_with_options(schema, arrays, &RecordBatchOptions::new().with_row_count(Some(num_rows))).map_err(Error::corrupt_arrow)
}

fn concat(pieces: &[ArrayRef]) -> Result<ArrayRef> {
    match pieces {
        [one] => Ok(one.clone()),
        _ => {
            let refs: Vec<&dyn Array> = pieces.iter().map(|a| a.as_ref()).collect();
            arrow_select::concat::concat(&refs).map_err(Error::internal_arrow)
        }
    }
}

/// Rows `offset..offset + len` of the concatenation of `pieces`.
fn slice_pieces(pieces: &[ArrayRef], mut offset: usize, len: usize) -> Result<ArrayRef> {
    let mut parts = Vec::new();
    let mut left = len;
    for p in pieces {
        if left == 0 {
            break;
        }
        if offset >= p.len() {
            offset -= p.len();
            continue;
        }
        let n = left.min(p.len() - offset);
        parts.push(p.slice(offset, n));
        offset = 0;
        left -= n;
    }
    match parts.len() {
        0 => Ok(pieces.first().map_or_else(|| Err(Error::Internal { what: "a column with no pieces".into() }), |p| Ok(p.slice(0, 0)))?),
        _ => concat(&parts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    fn ints(v: std::ops::Range<i32>) -> ArrayRef {
        Arc::new(Int32Array::from_iter_values(v))
    }

    /// Batches cut from pieces equal the same cuts of the concatenated
    /// columns, whichever way the pieces fall.
    #[test]
    fn batches_match_concatenation() {
        let a = vec![ints(0..3), ints(3..10), ints(10..10), ints(10..17)];
        let b = vec![ints(100..117)];
        let strs: Vec<String> = (0..17).map(|i| "x".repeat(i)).collect();
        let s: Vec<ArrayRef> = vec![Arc::new(StringArray::from_iter_values(&strs[..5])), Arc::new(StringArray::from_iter_values(&strs[5..]))];
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int32, false),
            Field::new("b", DataType::Int32, false),
            Field::new("s", DataType::Utf8, false),
        ]));
        let p = ColumnPieces::new(vec![a, b, s], 17).unwrap();
        let whole = p.clone().into_batch(schema.clone()).unwrap();
        for size in [1, 2, 3, 4, 7, 17, 100] {
            let got = p.batches(schema.clone(), size).unwrap();
            let mut at = 0;
            for g in &got {
                assert_eq!(g, &whole.slice(at, g.num_rows()), "batch size {size} at {at}");
                at += g.num_rows();
            }
            assert_eq!(at, 17);
            assert!(got.iter().all(|g| g.num_rows() == size.min(17)) || got.last().unwrap().num_rows() < size);
        }
        assert_eq!(p.slice(schema.clone(), 17, 0).unwrap().num_rows(), 0);
        assert!(p.slice(schema, 10, 8).is_err());
    }

    #[test]
    fn pieces_must_add_up() {
        assert!(ColumnPieces::new(vec![vec![ints(0..3), ints(0..2)], vec![ints(0..4)]], 5).is_err());
    }
}
