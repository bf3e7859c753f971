//! Grouping rows by value for BITMAP and LABEL_LIST builds.
//!
//! A bitmap index needs, per distinct value, the set of rows holding it,
//! with the distinct values in sorted order. Sorting every row (what a
//! BTREE needs) costs `n log n` comparisons through Arrow's dynamic
//! comparator; bitmap columns have few distinct values, so this module
//! hashes each value's bytes once (`O(n)`), sorts only the distinct values
//! and gathers each value's ids with one counting sort into a single
//! buffer (no allocation per value).
//!
//! Two values fall in one group exactly when their bytes are equal: for
//! floats that is IEEE total-order equality (`-0.0` and `0.0`, or NaNs
//! with different payloads, stay apart), the equality Arrow's sort and
//! partition kernels use, so the groups and their order are those of a
//! full sort.

use arrow_array::{Array, ArrayRef, UInt32Array};
use arrow_buffer::{BooleanBuffer, Buffer, ScalarBuffer};
use arrow_schema::{DataType, SortOptions};

use crate::error::{Error, Result};
use crate::hashing::FxMap;

const SORT: SortOptions = SortOptions { descending: false, nulls_first: true };

/// Byte view of one array's values.
enum KeyBytes {
    /// Fixed-width values (primitives, fixed-size binary) from `data`.
    Fixed {
        data: Buffer,
        width: usize,
    },
    Var32 {
        offsets: ScalarBuffer<i32>,
        data: Buffer,
    },
    Var64 {
        offsets: ScalarBuffer<i64>,
        data: Buffer,
    },
    Bool(BooleanBuffer),
}

impl KeyBytes {
    fn new(values: &dyn Array) -> Option<KeyBytes> {
        let d = values.to_data();
        let (off, len) = (d.offset(), d.len());
        Some(match d.data_type() {
            DataType::Boolean => KeyBytes::Bool(BooleanBuffer::new(d.buffers()[0].clone(), off, len)),
            DataType::Utf8 | DataType::Binary => {
                KeyBytes::Var32 { offsets: ScalarBuffer::new(d.buffers()[0].clone(), off, len + 1), data: d.buffers()[1].clone() }
            }
            DataType::LargeUtf8 | DataType::LargeBinary => {
                KeyBytes::Var64 { offsets: ScalarBuffer::new(d.buffers()[0].clone(), off, len + 1), data: d.buffers()[1].clone() }
            }
            DataType::FixedSizeBinary(w) => {
                let w = *w as usize;
                KeyBytes::Fixed { data: d.buffers()[0].slice_with_length(off * w, len * w), width: w }
            }
            dt if dt.is_primitive() => {
                let w = dt.primitive_width()?;
                KeyBytes::Fixed { data: d.buffers()[0].slice_with_length(off * w, len * w), width: w }
            }
            _ => return None,
        })
    }

    fn get(&self, i: usize) -> &[u8] {
        match self {
            KeyBytes::Fixed { data, width } => &data[i * width..(i + 1) * width],
            KeyBytes::Var32 { offsets, data } => &data[offsets[i] as usize..offsets[i + 1] as usize],
            KeyBytes::Var64 { offsets, data } => &data[offsets[i] as usize..offsets[i + 1] as usize],
            KeyBytes::Bool(b) => {
                if b.value(i) {
                    &[1]
                } else {
                    &[0]
                }
            }
        }
    }
}

/// Rows grouped by value: the distinct values in sorted order (nulls
/// first) and, for the `k`-th, its ids `ids[offsets[k]..offsets[k + 1]]`
/// in the order they were given.
pub(crate) struct Grouped {
    /// Distinct values, sorted (one null at most, first).
    pub keys: ArrayRef,
    /// `keys.len() + 1` bounds into `ids`.
    pub offsets: Vec<usize>,
    /// Every id, grouped by value.
    pub ids: Vec<u64>,
}

impl Grouped {
    /// Ids of the `k`-th key.
    pub fn ids_of(&self, k: usize) -> &[u64] {
        &self.ids[self.offsets[k]..self.offsets[k + 1]]
    }
}

/// Group `pairs` (position in `values`, id) by the value at the position:
/// by hashing when the type has a byte view (every type an index takes),
/// else by sorting.
pub(crate) fn group(values: &ArrayRef, pairs: impl Iterator<Item = (usize, u64)> + Clone) -> Result<Grouped> {
    if let Some(g) = group_by_value(values.as_ref(), pairs.clone())? {
        return Ok(g);
    }
    let (pos, ids): (Vec<u64>, Vec<u64>) = pairs.map(|(p, id)| (p as u64, id)).unzip();
    let taken = arrow_select::take::take(values.as_ref(), &arrow_array::UInt64Array::from(pos), None).map_err(Error::internal_arrow)?;
    let data = super::TrainingData { values: taken, ids: arrow_array::UInt64Array::from(ids) };
    let (sorted, ids) = super::btree::sorted(&data)?;
    let runs = if sorted.is_empty() {
        Vec::new()
    } else {
        arrow_ord::partition::partition(std::slice::from_ref(&sorted)).map_err(Error::internal_arrow)?.ranges()
    };
    let starts = UInt32Array::from_iter_values(runs.iter().map(|r| r.start as u32));
    let keys = arrow_select::take::take(sorted.as_ref(), &starts, None).map_err(Error::internal_arrow)?;
    let mut offsets = vec![0];
    offsets.extend(runs.iter().map(|r| r.end));
    Ok(Grouped { keys, offsets, ids: ids.values().to_vec() })
}

/// Group by hashing each value's bytes; `None` when the type has no byte
/// view.
fn group_by_value(values: &dyn Array, pairs: impl Iterator<Item = (usize, u64)>) -> Result<Option<Grouped>> {
    let Some(bytes) = KeyBytes::new(values) else { return Ok(None) };
    let mut index: FxMap<&[u8], u32> = FxMap::default();
    // First position of each group, in group-number order.
    let mut reps: Vec<u32> = Vec::new();
    let mut null_group: Option<u32> = None;
    // Usually one pair per value (bitmaps) or per element (label lists).
    let mut group_of: Vec<u32> = Vec::with_capacity(values.len());
    let mut ids: Vec<u64> = Vec::with_capacity(values.len());
    let to_u32 = |p: usize| u32::try_from(p).map_err(|_| Error::invalid_input(format!("cannot index more than {} values in one segment", u32::MAX)));
    for (pos, id) in pairs {
        let g = if values.is_null(pos) {
            *null_group.get_or_insert_with(|| {
                reps.push(pos as u32);
                (reps.len() - 1) as u32
            })
        } else {
            let next = reps.len() as u32;
            let g = *index.entry(bytes.get(pos)).or_insert(next);
            if g == next {
                reps.push(to_u32(pos)?);
            }
            g
        };
        group_of.push(g);
        ids.push(id);
    }
    // Sort only the distinct values.
    let reps = UInt32Array::from(reps);
    let distinct = arrow_select::take::take(values, &reps, None).map_err(Error::internal_arrow)?;
    let order = arrow_ord::sort::sort_to_indices(distinct.as_ref(), Some(SORT), None).map_err(Error::internal_arrow)?;
    let keys = arrow_select::take::take(distinct.as_ref(), &order, None).map_err(Error::internal_arrow)?;
    // rank[group] = sorted position; then a stable counting sort of the ids.
    let mut rank = vec![0u32; order.len()];
    for (k, &g) in order.values().iter().enumerate() {
        rank[g as usize] = k as u32;
    }
    let mut offsets = vec![0usize; order.len() + 1];
    for &g in &group_of {
        offsets[rank[g as usize] as usize + 1] += 1;
    }
    for k in 0..order.len() {
        offsets[k + 1] += offsets[k];
    }
    let mut next = offsets.clone();
    let mut out = vec![0u64; ids.len()];
    for (&g, &id) in group_of.iter().zip(&ids) {
        let k = rank[g as usize] as usize;
        out[next[k]] = id;
        next[k] += 1;
    }
    Ok(Some(Grouped { keys, offsets, ids: out }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BooleanArray, Float64Array, Int32Array, StringArray};
    use std::sync::Arc;

    fn grouped(values: ArrayRef) -> Grouped {
        let n = values.len();
        group_by_value(values.as_ref(), (0..n).map(|i| (i, 100 + i as u64))).unwrap().unwrap()
    }

    #[test]
    fn strings_sorted_nulls_first_ids_in_given_order() {
        let g = grouped(Arc::new(StringArray::from(vec![Some("b"), None, Some("a"), Some("b"), None, Some("a")])));
        assert_eq!(g.keys.as_ref(), &StringArray::from(vec![None, Some("a"), Some("b")]) as &dyn Array);
        assert_eq!(g.ids_of(0), &[101, 104]);
        assert_eq!(g.ids_of(1), &[102, 105]);
        assert_eq!(g.ids_of(2), &[100, 103]);
    }

    #[test]
    fn floats_by_total_order() {
        let g = grouped(Arc::new(Float64Array::from(vec![0.0, -0.0, f64::NAN, 1.0, 0.0, f64::NEG_INFINITY])));
        let k = g.keys.as_any().downcast_ref::<Float64Array>().unwrap();
        let bits: Vec<u64> = k.values().iter().map(|v| v.to_bits()).collect();
        let want: Vec<u64> = [f64::NEG_INFINITY, -0.0, 0.0, 1.0, f64::NAN].iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, want);
        assert_eq!(g.ids_of(2), &[100, 104]);
    }

    #[test]
    fn sliced_input_and_booleans() {
        let v = Int32Array::from(vec![9, 3, 1, 3, 9]).slice(1, 3);
        let g = grouped(Arc::new(v));
        assert_eq!(g.keys.as_ref(), &Int32Array::from(vec![1, 3]) as &dyn Array);
        assert_eq!(g.ids_of(1), &[100, 102]);
        let g = grouped(Arc::new(BooleanArray::from(vec![Some(true), Some(false), None, Some(true)]).slice(1, 3)));
        assert_eq!(g.keys.as_ref(), &BooleanArray::from(vec![None, Some(false), Some(true)]) as &dyn Array);
        assert_eq!(g.ids_of(2), &[102]);
    }

    /// The reference: a two-column lexicographic sort of (value, id).
    fn lexsorted(values: &ArrayRef, ids: &arrow_array::UInt64Array) -> (ArrayRef, Vec<u64>) {
        let idc: ArrayRef = Arc::new(ids.clone());
        let cols = [
            arrow_ord::sort::SortColumn { values: values.clone(), options: Some(SORT) },
            arrow_ord::sort::SortColumn { values: idc.clone(), options: Some(SORT) },
        ];
        let order = arrow_ord::sort::lexsort_to_indices(&cols, None).unwrap();
        let v = arrow_select::take::take(values.as_ref(), &order, None).unwrap();
        let i = arrow_select::take::take(idc.as_ref(), &order, None).unwrap();
        (v, i.as_any().downcast_ref::<arrow_array::UInt64Array>().unwrap().values().to_vec())
    }

    #[test]
    fn sort_and_grouping_equal_a_full_lexicographic_sort() {
        use rand::rngs::StdRng;
        use rand::{Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(11);
        for round in 0..40 {
            let n = rng.random_range(0..400);
            let card = rng.random_range(1..50);
            let floats = [0.0, -0.0, f64::NAN, -f64::NAN, 1.5, f64::INFINITY];
            let values: ArrayRef = match round % 3 {
                0 => Arc::new(Int32Array::from_iter((0..n).map(|_| rng.random_ratio(1, 8).then(|| rng.random_range(0..card))))),
                1 => Arc::new(StringArray::from_iter((0..n).map(|_| rng.random_ratio(1, 8).then(|| format!("v{}", rng.random_range(0..card)))))),
                _ => Arc::new(Float64Array::from_iter((0..n).map(|_| rng.random_ratio(1, 8).then(|| floats[rng.random_range(0..floats.len())])))),
            };
            // Ids in any order (as after a compaction), unique.
            let mut idv: Vec<u64> = (0..n as u64).map(|i| (i % 3) << 32 | i).collect();
            for i in (1..idv.len()).rev() {
                idv.swap(i, rng.random_range(0..=i));
            }
            let ids = arrow_array::UInt64Array::from(idv.clone());
            let (want_v, want_i) = lexsorted(&values, &ids);
            let (got_v, got_i) = crate::index::btree::sorted(&crate::index::TrainingData { values: values.clone(), ids: ids.clone() }).unwrap();
            assert_eq!(got_v.to_data(), want_v.to_data(), "round {round}");
            assert_eq!(got_i.values().to_vec(), want_i, "round {round}");

            let g = group(&values, (0..n).map(|i| (i, idv[i]))).unwrap();
            let runs = if n == 0 { vec![] } else { arrow_ord::partition::partition(std::slice::from_ref(&want_v)).unwrap().ranges() };
            assert_eq!(g.keys.len(), runs.len(), "round {round}");
            for (k, r) in runs.iter().enumerate() {
                assert_eq!(g.keys.slice(k, 1).to_data(), want_v.slice(r.start, 1).to_data(), "round {round} key {k}");
                let mut mine = g.ids_of(k).to_vec();
                mine.sort_unstable();
                assert_eq!(mine, want_i[r.clone()], "round {round} key {k}");
            }
        }
    }
}
