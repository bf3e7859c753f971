//! Stage one of a filtered scan: which rows of a read unit pass.
//!
//! A filtered scan runs in two stages per read unit (late materialization):
//!
//! 1. **Row selection** (this module): the filter's columns are read for
//!    the unit's rows, `_rowid`/`_rowaddr` are computed if the filter names
//!    them, the predicate is evaluated, and rows the file statistics prove
//!    to match are added. The result is a [`Selection`]: the passing rows as
//!    sorted physical ranges, plus the decoded filter columns and the mask,
//!    so output columns the filter already read are cut from them instead of
//!    being read a second time.
//! 2. **Payload fetch** (`scan.rs`): the other output columns are read for
//!    the passing rows only. The file reader fetches and decodes just the
//!    mini-block chunks, full-zip entries or pages holding them (whichever
//!    its cost model finds cheaper, see `crate::file::fetch`), so a unit with
//!    no passing row costs no payload I/O or decoding at all.
//!
//! Anything that narrows the rows before the filter columns are read (a
//! scalar index, statistics) belongs in front of stage one: it hands a
//! smaller set of ranges to [`select`], which reads the filter columns for
//! those rows only.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_schema::{Field, Schema};

use crate::error::{Error, Result};
use crate::table::fragment::FragmentReader;

/// The rows of a read unit a filter keeps.
#[derive(Debug)]
pub(crate) struct Selection {
    /// Passing physical rows, sorted and non-overlapping.
    pub rows: Vec<Range<u64>>,
    /// The filter's dataset columns, decoded for every row of the unit.
    pub columns: RecordBatch,
    /// Which rows of the unit pass (no nulls).
    pub mask: BooleanArray,
}

impl Selection {
    /// Rows that pass.
    pub fn num_rows(&self) -> u64 {
        self.rows.iter().map(|r| r.end - r.start).sum()
    }

    /// Filter column `i`, cut to the passing rows.
    pub fn passing(&self, i: usize) -> Result<ArrayRef> {
        let col = self.columns.column(i);
        if self.mask.true_count() == self.mask.len() {
            return Ok(col.clone());
        }
        arrow_select::filter::filter(col.as_ref(), &self.mask).map_err(Error::internal_arrow)
    }
}

/// What row selection needs besides the unit's rows.
pub(crate) struct SelectInput<'a> {
    pub filter: &'a dyn crate::table::scan::RowFilter,
    pub reader: &'a FragmentReader,
    /// Positions (in the reader's fields) of the filter's dataset columns.
    pub filter_fields: &'a [usize],
    /// `_rowid` and `_rowaddr` for the unit's rows, when the filter reads
    /// them (appended after the dataset columns, in this order).
    pub row_columns: Vec<(Field, ArrayRef)>,
    /// Physical rows statistics prove to match (kept without evaluating).
    pub sure: &'a [Range<u64>],
}

/// Stage one for the unit rows `ranges`: read the filter's columns,
/// evaluate, and collect the passing rows.
pub(crate) fn select(input: SelectInput<'_>, ranges: &[Range<u64>]) -> Result<Selection> {
    let schema = input.reader.schema_of(input.filter_fields);
    let columns = input.reader.read_columns(input.filter_fields, ranges)?.into_batch(schema)?;
    let n = columns.num_rows();
    let evaluated = if input.row_columns.is_empty() {
        input.filter.evaluate(&columns)?
    } else {
        let mut fields: Vec<Arc<Field>> = columns.schema().fields().iter().cloned().collect();
        let mut cols = columns.columns().to_vec();
        for (f, c) in &input.row_columns {
            fields.push(Arc::new(f.clone()));
            cols.push(c.clone());
        }
        let with_rows = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), cols, &RecordBatchOptions::new().with_row_count(Some(n)))
            .map_err(Error::internal_arrow)?;
        input.filter.evaluate(&with_rows)?
    };
    if evaluated.len() != n {
        return Err(Error::Internal { what: format!("filter returned {} values for {n} rows", evaluated.len()) });
    }
    let mut mask = if evaluated.null_count() > 0 { arrow_select::filter::prep_null_mask_filter(&evaluated) } else { evaluated };
    if !input.sure.is_empty() {
        let sure: BooleanArray = ranges.iter().flat_map(|r| r.clone()).map(|o| Some(in_ranges(input.sure, o))).collect();
        mask = arrow_arith::boolean::or(&mask, &sure).map_err(Error::internal_arrow)?;
    }
    let rows = passing_ranges(ranges, &mask);
    Ok(Selection { rows, columns, mask })
}

/// The rows of `ranges` whose mask bit is set, as sorted ranges.
fn passing_ranges(ranges: &[Range<u64>], mask: &BooleanArray) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    if mask.true_count() == 0 {
        return out;
    }
    // Positions of the unit's rows where each range starts.
    let mut starts = Vec::with_capacity(ranges.len());
    let mut at = 0u64;
    for r in ranges {
        starts.push(at);
        at += r.end - r.start;
    }
    // Set bits come in runs; map each run back to physical rows, splitting
    // where it crosses from one range into the next.
    for (s, e) in mask.values().set_slices() {
        let (mut s, e) = (s as u64, e as u64);
        while s < e {
            let ri = starts.partition_point(|&x| x <= s) - 1;
            let r = &ranges[ri];
            let off = s - starts[ri];
            let take = (e - s).min(r.end - r.start - off);
            let row = r.start + off;
            match out.last_mut() {
                Some(last) if last.end == row => last.end += take,
                _ => out.push(row..row + take),
            }
            s += take;
        }
    }
    out
}

/// Whether `x` lies in one of the sorted ranges.
fn in_ranges(ranges: &[Range<u64>], x: u64) -> bool {
    let i = ranges.partition_point(|r| r.end <= x);
    ranges.get(i).is_some_and(|r| r.start <= x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passing_rows_map_back_to_physical_ranges() {
        let ranges = vec![2..5, 10..12, 20..21];
        let mask = BooleanArray::from(vec![true, false, true, true, true, true]);
        assert_eq!(passing_ranges(&ranges, &mask), vec![2..3, 4..5, 10..12, 20..21]);
        let none = BooleanArray::from(vec![false; 6]);
        assert!(passing_ranges(&ranges, &none).is_empty());
        let all = BooleanArray::from(vec![true; 6]);
        assert_eq!(passing_ranges(&ranges, &all), ranges);
        // touching ranges merge
        assert_eq!(passing_ranges(&[0..2, 2..4], &BooleanArray::from(vec![true; 4])), vec![0..4]);
    }
}
