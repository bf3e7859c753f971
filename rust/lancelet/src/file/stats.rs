//! Column statistics stored in data files, used to skip rows a filter
//! cannot match.
//!
//! Of the files pylance 14 writes, only legacy (v0.1) files carry
//! statistics: `Metadata.statistics` describes a second page table with one
//! row per batch (row group) and, per data field, a struct named by the
//! field id with `null_count`, `min_value` and `max_value` (strings may be
//! truncated, the maximum rounded up, so the bounds stay conservative).
//! 2.0/2.1/2.2 files have none (see docs/architecture.md, "Scanning").

use std::ops::Range;

use arrow_array::ArrayRef;

/// Statistics of one column over consecutive row groups of a file.
#[derive(Debug, Clone)]
pub struct GroupStats {
    /// Row range of each group (sorted, adjacent).
    pub ranges: Vec<Range<u64>>,
    /// Minimum per group (a null = unknown).
    pub min: ArrayRef,
    /// Maximum per group (a null = unknown).
    pub max: ArrayRef,
    /// Null values per group.
    pub null_count: Vec<u64>,
}

/// What statistics tell about a filter over a fragment's physical rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pruned {
    /// Rows that may match (the others cannot): the rows to read.
    pub maybe: Vec<Range<u64>>,
    /// Rows the statistics prove to match (a subset of `maybe`): kept
    /// whatever the decoded values say, as pylance's statistics-simplified
    /// predicates do.
    pub sure: Vec<Range<u64>>,
}

impl Pruned {
    /// Nothing known: every row may match, none surely.
    #[allow(clippy::single_range_in_vec_init)] // one range of rows, not a list of numbers
    pub fn unknown(rows: u64) -> Self {
        Pruned { maybe: vec![0..rows], sure: Vec::new() }
    }
}

/// Intersection of two sorted, non-overlapping range lists.
pub fn intersect(a: &[Range<u64>], b: &[Range<u64>]) -> Vec<Range<u64>> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let (s, e) = (a[i].start.max(b[j].start), a[i].end.min(b[j].end));
        if s < e {
            out.push(s..e);
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Union of two sorted, non-overlapping range lists (merged, sorted).
pub fn union(a: &[Range<u64>], b: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut all: Vec<Range<u64>> = a.iter().chain(b).filter(|r| r.start < r.end).cloned().collect();
    all.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(all.len());
    for r in all {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_algebra() {
        let a = vec![0..10, 20..30];
        let b = vec![5..25, 28..40];
        assert_eq!(intersect(&a, &b), vec![5..10, 20..25, 28..30]);
        assert_eq!(union(&a, &b), vec![0..40]);
        assert_eq!(union(&[0..2], &[3..4, 2..3]), vec![0..4]);
        assert_eq!(intersect(&a, &[]), Vec::<Range<u64>>::new());
    }
}
