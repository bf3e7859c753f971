//! What per-row-group column statistics (min, max, null count) tell about
//! a planned filter: which rows may match, and which surely do.
//!
//! This mirrors how pylance uses legacy page statistics (its pushdown scan
//! simplifies the predicate per batch under min/max/null guarantees: a
//! batch whose predicate becomes `false` is skipped, one whose predicate
//! becomes `true` is returned without evaluating it). Handled: `AND`, `OR`,
//! `IS [NOT] NULL` and comparisons of a top-level column with a literal of
//! the column's type (`=`, `!=`, `<`, `<=`, `>`, `>=`; `BETWEEN` plans into
//! these) and `IN` lists of such literals (sorted values, a binary search
//! per group). Anything else, and unknown bounds, prove nothing.
//!
//! A group whose values are all null (null count = rows) matches no
//! comparison and surely matches `IS NULL`; a group without nulls surely
//! matches `IS NOT NULL`, and a comparison its bounds decide. Legacy files
//! store nulls of fixed-width values as zeroes, so "surely" can keep rows
//! whose decoded value disagrees (an all-null batch kept by `IS NULL`
//! reads as zeroes): that is pylance's result too.

use std::ops::Range;

use arrow_array::{Array, ArrayRef, BooleanArray, Scalar};
use arrow_ord::cmp;
use arrow_ord::ord::make_comparator;

use super::plan::{CmpOp, Expr, Kind};
use crate::file::stats::{intersect, union, GroupStats, Pruned};
use crate::float_order::positive_zeros;

/// What statistics prove about `e` over rows `0..rows`.
pub fn prune(e: &Expr, stats: &dyn Fn(&str) -> Option<GroupStats>, rows: u64) -> Pruned {
    let top_column = |x: &Expr| match &x.kind {
        Kind::Column { name, path } if path.is_empty() => Some(name.clone()),
        _ => None,
    };
    match &e.kind {
        Kind::And(terms) | Kind::Or(terms) => {
            let and = matches!(e.kind, Kind::And(_));
            let mut acc: Option<Pruned> = None;
            for t in terms {
                let p = prune(t, stats, rows);
                acc = Some(match acc {
                    None => p,
                    Some(a) if and => Pruned { maybe: intersect(&a.maybe, &p.maybe), sure: intersect(&a.sure, &p.sure) },
                    Some(a) => Pruned { maybe: union(&a.maybe, &p.maybe), sure: union(&a.sure, &p.sure) },
                });
            }
            acc.unwrap_or_else(|| Pruned::unknown(rows))
        }
        Kind::InList { expr, set } => match top_column(expr).and_then(|n| stats(&n)) {
            Some(st) => set.sorted_values().and_then(|v| in_set(&st, v)).unwrap_or_else(|| Pruned::unknown(rows)),
            None => Pruned::unknown(rows),
        },
        Kind::IsNull(x) | Kind::IsNotNull(x) => {
            let is_null = matches!(e.kind, Kind::IsNull(_));
            match top_column(x).and_then(|n| stats(&n)) {
                Some(st) => by_group(&st, |i, n| {
                    let (all_null, no_null) = (st.null_count[i] >= n, st.null_count[i] == 0);
                    if is_null {
                        (!no_null, all_null)
                    } else {
                        (!all_null, no_null)
                    }
                }),
                None => Pruned::unknown(rows),
            }
        }
        Kind::Cmp(op, a, b) => {
            let (name, value, op) = match (&a.kind, &b.kind) {
                (Kind::Column { name, path }, Kind::Literal(v)) if path.is_empty() => (name, v, *op),
                (Kind::Literal(v), Kind::Column { name, path }) if path.is_empty() => (name, v, flip(*op)),
                _ => return Pruned::unknown(rows),
            };
            stats(name).and_then(|st| compare(&st, value, op)).unwrap_or_else(|| Pruned::unknown(rows))
        }
        _ => Pruned::unknown(rows),
    }
}

/// `col IN set` per group: a group may match when some value of the set
/// lies within its bounds, and surely matches when all its values are one
/// value of the set (no nulls). `values` are sorted and distinct.
fn in_set(st: &GroupStats, values: &ArrayRef) -> Option<Pruned> {
    let t = values.data_type();
    let n = st.ranges.len();
    if st.min.data_type() != t || st.max.data_type() != t || st.min.len() != n || st.max.len() != n || st.null_count.len() != n {
        return None;
    }
    let opts = arrow_schema::SortOptions::default();
    // the set's values have positive zeros already (InSet)
    let (min, max) = (positive_zeros(&st.min), positive_zeros(&st.max));
    let vs_min = make_comparator(values.as_ref(), min.as_ref(), opts).ok()?;
    let vs_max = make_comparator(values.as_ref(), max.as_ref(), opts).ok()?;
    let count = values.len();
    Some(by_group(st, |g, rows| {
        let (all_null, no_null) = (st.null_count[g] >= rows, st.null_count[g] == 0);
        if all_null || count == 0 {
            return (false, false);
        }
        if st.min.is_null(g) || st.max.is_null(g) {
            return (true, false);
        }
        // first value >= min
        let i = partition_point(count, |i| vs_min(i, g).is_lt());
        let may = i < count && vs_max(i, g).is_le();
        let sure = may && no_null && vs_min(i, g).is_eq() && vs_max(i, g).is_eq();
        (may, sure)
    }))
}

/// The first index in `0..n` where `before` is false (`before` is true on
/// a prefix).
fn partition_point(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `lit op col` is `col flip(op) lit`.
fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::LtEq => CmpOp::GtEq,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::GtEq => CmpOp::LtEq,
        other => other,
    }
}

/// Collect the groups by `verdict(group, rows in group) -> (maybe, sure)`.
fn by_group(st: &GroupStats, verdict: impl Fn(usize, u64) -> (bool, bool)) -> Pruned {
    let (mut maybe, mut sure) = (Vec::new(), Vec::new());
    for (i, r) in st.ranges.iter().enumerate() {
        let (m, s) = verdict(i, r.end - r.start);
        if m || s {
            push(&mut maybe, r);
        }
        if s {
            push(&mut sure, r);
        }
    }
    Pruned { maybe, sure }
}

fn push(out: &mut Vec<Range<u64>>, r: &Range<u64>) {
    match out.last_mut() {
        Some(last) if last.end == r.start => last.end = r.end,
        _ => out.push(r.clone()),
    }
}

/// `col op value` per group; `None` when the statistics cannot tell.
fn compare(st: &GroupStats, value: &ArrayRef, op: CmpOp) -> Option<Pruned> {
    let t = value.data_type();
    if value.len() != 1 || value.is_null(0) || st.min.data_type() != t || st.max.data_type() != t {
        return None;
    }
    let n = st.ranges.len();
    if st.min.len() != n || st.max.len() != n || st.null_count.len() != n {
        return None;
    }
    // -0.0 = 0.0 (crate::float_order): a group whose min or max is -0.0
    // may hold a value equal to 0.0
    let v = Scalar::new(positive_zeros(value));
    let (min, max) = (&positive_zeros(&st.min), &positive_zeros(&st.max));
    let and = |a: BooleanArray, b: BooleanArray| arrow_arith::boolean::and(&a, &b).ok();
    let or = |a: BooleanArray, b: BooleanArray| arrow_arith::boolean::or(&a, &b).ok();
    // (may some value satisfy it, do all values satisfy it)
    let (may, all): (BooleanArray, BooleanArray) = match op {
        CmpOp::Eq => (and(cmp::lt_eq(min, &v).ok()?, cmp::gt_eq(max, &v).ok()?)?, and(cmp::eq(min, &v).ok()?, cmp::eq(max, &v).ok()?)?),
        CmpOp::NotEq => (
            arrow_arith::boolean::not(&and(cmp::eq(min, &v).ok()?, cmp::eq(max, &v).ok()?)?).ok()?,
            or(cmp::lt(max, &v).ok()?, cmp::gt(min, &v).ok()?)?,
        ),
        CmpOp::Lt => (cmp::lt(min, &v).ok()?, cmp::lt(max, &v).ok()?),
        CmpOp::LtEq => (cmp::lt_eq(min, &v).ok()?, cmp::lt_eq(max, &v).ok()?),
        CmpOp::Gt => (cmp::gt(max, &v).ok()?, cmp::gt(min, &v).ok()?),
        CmpOp::GtEq => (cmp::gt_eq(max, &v).ok()?, cmp::gt_eq(min, &v).ok()?),
        CmpOp::Distinct | CmpOp::NotDistinct => return None,
    };
    Some(by_group(st, |i, rows| {
        let (all_null, no_null) = (st.null_count[i] >= rows, st.null_count[i] == 0);
        if all_null {
            return (false, false);
        }
        // A null verdict (an unknown bound) proves nothing.
        let may_i = may.is_null(i) || may.value(i);
        let all_i = no_null && all.is_valid(i) && all.value(i);
        (may_i, all_i)
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::expr::SqlFilter;

    fn stats() -> GroupStats {
        GroupStats {
            ranges: vec![0..10, 10..20, 20..30, 30..40],
            min: Arc::new(Int64Array::from(vec![Some(0), Some(10), None, Some(30)])),
            max: Arc::new(Int64Array::from(vec![Some(9), Some(19), None, Some(39)])),
            null_count: vec![0, 0, 0, 10],
        }
    }

    fn pruned(sql: &str) -> Pruned {
        let schema = Schema::new(vec![Field::new("x", DataType::Int64, true), Field::new("s", DataType::Utf8, true)]);
        let f = SqlFilter::new(sql, &schema).unwrap();
        let lookup = |name: &str| (name == "x").then(stats);
        prune(f.expr(), &lookup, 40)
    }

    fn cands(sql: &str) -> Vec<Range<u64>> {
        pruned(sql).maybe
    }

    fn sure(sql: &str) -> Vec<Range<u64>> {
        pruned(sql).sure
    }

    #[test]
    fn prunes_by_bounds() {
        assert_eq!(cands("x < 5"), vec![0..10, 20..30]); // group 2 unknown, group 3 all null
        assert_eq!(cands("x >= 15"), vec![10..30]);
        assert_eq!(cands("15 <= x"), vec![10..30]);
        assert_eq!(cands("x = 12"), vec![10..30]);
        assert_eq!(cands("x BETWEEN 3 AND 12"), vec![0..30]);
        assert_eq!(cands("x IN (1, 35)"), vec![0..10, 20..30]);
        assert_eq!(cands("x > 100 OR s = 'a'"), vec![0..40]);
        assert_eq!(cands("x > 100 AND s = 'a'"), vec![20..30]);
        assert_eq!(cands("x + 1 > 100"), vec![0..40]);
        assert_eq!(cands("NOT x > 100"), vec![0..40]);
        assert_eq!(cands("x IS NULL"), vec![30..40]);
        assert_eq!(cands("x IS NOT NULL"), vec![0..30]);
    }

    #[test]
    fn proves_matches() {
        assert_eq!(sure("x < 15"), vec![0..10]);
        assert_eq!(sure("x >= 10"), vec![10..20]); // group 2 unknown, group 3 all null
        assert_eq!(sure("x != 25"), vec![0..20]);
        assert_eq!(sure("x IS NULL"), vec![30..40]);
        assert_eq!(sure("x IS NOT NULL"), vec![0..30]);
        assert_eq!(sure("x < 15 AND x > 2"), Vec::<Range<u64>>::new());
        assert_eq!(sure("x < 5 OR x IS NULL"), vec![30..40]);
        assert_eq!(sure("x < 15 AND s = 'a'"), Vec::<Range<u64>>::new());
        assert_eq!(sure("x < 15 OR s = 'a'"), vec![0..10]);
    }

    #[test]
    fn strings_and_floats() {
        let st = GroupStats {
            ranges: vec![0..5, 5..10],
            min: Arc::new(StringArray::from(vec!["a", "m"])),
            max: Arc::new(StringArray::from(vec!["l", "z"])),
            null_count: vec![0, 0],
        };
        let schema = Schema::new(vec![Field::new("s", DataType::Utf8, true), Field::new("f", DataType::Float64, true)]);
        let f = SqlFilter::new("s > 'p'", &schema).unwrap();
        assert_eq!(prune(f.expr(), &|_| Some(st.clone()), 10), Pruned { maybe: vec![5..10], sure: vec![] });
        let fs = GroupStats {
            min: Arc::new(arrow_array::Float64Array::from(vec![0.0, 1.0])),
            max: Arc::new(arrow_array::Float64Array::from(vec![0.5, 2.0])),
            ..st
        };
        let f = SqlFilter::new("f > 1.5", &schema).unwrap();
        assert_eq!(prune(f.expr(), &|_| Some(fs.clone()), 10), Pruned { maybe: vec![5..10], sure: vec![] });
        let f = SqlFilter::new("f < 5.0", &schema).unwrap();
        assert_eq!(prune(f.expr(), &|_| Some(fs.clone()), 10), Pruned { maybe: vec![0..10], sure: vec![0..10] });
    }
}
