//! How many IVF partitions a query probes: pylance 14's rule.
//!
//! Measured with `analyze_plan` (docs/research/vector-index.md §10 and
//! tests/fixtures/vector) and matching the "auto probe" policy of the Lance
//! sources of that time. Let `d` be the query's centroid distances sorted
//! ascending (squared L2; for cosine of the normalized query; `1 - q·c`
//! for dot) and `k` the rows asked for.
//!
//! 1. `nprobes = n` (minimum = maximum): exactly `n` ("fixed").
//! 2. The hamming metric ("legacy"): `count(d_i <= d_0 * f)` with `f` =
//!    0.6 (k = 1), 7 (k ≤ 10) or 81, raised to the minimum, capped by the
//!    maximum. `k` > 1000: 98 (measured on L2 indices).
//! 3. Otherwise ("adaptive", per metric and bucket of `k`: a margin `m`, a
//!    floor and a cap): `count(d_i - d_0 <= m * s)` with `s = d_0` (dot:
//!    `|1 - d_0|`), raised to the floor, capped by the cap, raised to the
//!    caller's minimum, capped by the maximum and the partitions. (The
//!    Lance sources of late 2025 use the legacy rule when a maximum is
//!    given; pylance 14 does not: `maximum_nprobes = 5, k = 10` probes 5.)
//! 4. `search_effort = e` (pylance ignores `nprobes` then) interpolates
//!    geometrically between `max(1, minimum)` (e = 0), the metric's floor
//!    (0.5) and all partitions (1), rounding up.
//! 5. Late expansion: while fewer than `min(k, allowed rows)` candidates
//!    were seen, the next partition is searched, up to the maximum or all.
//!
//! Not verified: whether pylance 14 keeps the adaptive rule for f16
//! columns and for every index type (checked: f32 IVF_FLAT, IVF_SQ; IVF_PQ
//! and IVF_HNSW fixtures were capped by their few partitions). When fewer
//! than `k` rows are allowed, the Lance sources return the unreached
//! allowed rows with an infinite distance; lancelet probes on instead.

use super::{DistanceType, Probes};

/// The bucket of `k` the profiles are indexed by.
fn bucket(k: usize) -> usize {
    match k {
        0..=1 => 0,
        2..=10 => 1,
        11..=100 => 2,
        101..=200 => 3,
        201..=500 => 4,
        _ => 5,
    }
}

/// `(margin, floor, cap)` of the adaptive rule.
fn profile(metric: DistanceType, k: usize) -> (f64, usize, usize) {
    let b = bucket(k);
    match metric {
        DistanceType::Cosine => ([0.235, 0.2875, 0.38, 0.415, 0.45, 0.47][b], [3, 8, 7, 18, 28, 34][b], [50, 77, 106, 156, 192, 248][b]),
        DistanceType::Dot => ([0.14, 0.055, 0.0625, 0.0675, 0.07, 0.0725][b], [56, 144, 200, 211, 244, 279][b], [112, 432, 768, 833, 971, 1092][b]),
        _ => ([0.2175, 0.265, 0.33, 0.375, 0.3725, 0.4175][b], [5, 6, 11, 15, 22, 29][b], [19, 24, 38, 56, 81, 93][b]),
    }
}

/// The default budget (effort 0.5) for `k` results of `metric`, before
/// the cap by the number of partitions (k > 1000: 98, as measured).
pub fn auto(metric: DistanceType, k: usize) -> usize {
    if k > 1000 {
        98
    } else {
        profile(metric, k).1
    }
}

/// The probe plan of one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbePlan {
    /// Partitions searched first.
    pub initial: usize,
    /// Partitions that may be searched when fewer than `k` candidates were
    /// found.
    pub limit: usize,
}

/// The plan for `k` results given the sorted centroid distances `dists`
/// (one per partition, nearest first).
pub fn plan(probes: &Probes, k: usize, metric: DistanceType, dists: &[f32]) -> ProbePlan {
    let nlist = dists.len();
    if nlist == 0 {
        return ProbePlan { initial: 0, limit: 0 };
    }
    if let Some(e) = probes.search_effort {
        let a = auto(metric, k).min(nlist);
        let e = f64::from(e.clamp(0.0, 1.0));
        let lo = probes.minimum.unwrap_or(1).clamp(1, nlist);
        let n = if e <= 0.0 {
            lo
        } else if e < 0.5 {
            (lo as f64 * (a as f64 / lo as f64).powf(e / 0.5)).ceil() as usize
        } else if e == 0.5 {
            a
        } else if e < 1.0 {
            (a as f64 * (nlist as f64 / a as f64).powf((e - 0.5) / 0.5)).ceil() as usize
        } else {
            nlist
        };
        return ProbePlan { initial: n.clamp(1, nlist), limit: nlist };
    }
    let minimum = probes.minimum.unwrap_or(1);
    let limit = probes.maximum.unwrap_or(nlist).min(nlist);
    if probes.maximum.is_some() && probes.maximum == probes.minimum {
        let n = minimum.min(nlist);
        return ProbePlan { initial: n, limit: n };
    }
    let nearest = f64::from(dists[0]);
    let within = |gap: f64| dists.partition_point(|&d| d.is_finite() && f64::from(d) - nearest <= gap);
    let selected = if metric == DistanceType::Hamming {
        let factor = match k {
            0..=1 => 0.6,
            2..=10 => 7.0,
            _ => 81.0,
        };
        dists.partition_point(|&d| f64::from(d) <= nearest * factor)
    } else if k > 1000 {
        auto(metric, k)
    } else if !nearest.is_finite() {
        nlist
    } else {
        let (margin, floor, cap) = profile(metric, k);
        let scale = if metric == DistanceType::Dot { (1.0 - nearest).abs() } else { nearest };
        within(margin * scale).max(floor).min(cap)
    };
    let initial = minimum.max(selected).min(limit).min(nlist);
    ProbePlan { initial, limit: limit.max(initial) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(minimum: Option<usize>, maximum: Option<usize>, search_effort: Option<f32>) -> Probes {
        Probes { minimum, maximum, search_effort }
    }

    /// Centroid distances that never widen the floor.
    fn far(n: usize) -> Vec<f32> {
        (0..n).map(|i| 1.0 + 10.0 * i as f32).collect()
    }

    #[test]
    fn measured_points() {
        // §10 of the research notes: nlist 64 of Gaussian data.
        let none = p(None, None, None);
        let d = far(64);
        let l2 = DistanceType::L2;
        assert_eq!(plan(&none, 10, l2, &d), ProbePlan { initial: 6, limit: 64 });
        assert_eq!(plan(&none, 1, l2, &d).initial, 5);
        assert_eq!(plan(&none, 100, l2, &d).initial, 11);
        assert_eq!(plan(&none, 1000, l2, &d).initial, 29);
        assert_eq!(plan(&none, 2000, l2, &d).initial, 64);
        assert_eq!(plan(&none, 10, l2, &far(4)).initial, 4);
        assert_eq!(plan(&p(Some(3), Some(3), None), 10, l2, &d), ProbePlan { initial: 3, limit: 3 });
        assert_eq!(plan(&p(Some(5), None, None), 10, l2, &d).initial, 6);
        assert_eq!(plan(&p(None, Some(5), None), 10, l2, &d), ProbePlan { initial: 5, limit: 5 });
        assert_eq!(plan(&p(Some(1), Some(2), None), 2000, l2, &d).initial, 2);
        let k1: Vec<usize> = (1..=10).map(|i| plan(&p(None, None, Some(i as f32 / 10.0)), 1, l2, &d).initial).collect();
        assert_eq!(k1, vec![2, 2, 3, 4, 5, 9, 14, 24, 39, 64]);
        let k1000: Vec<usize> = (1..=10).map(|i| plan(&p(None, None, Some(i as f32 / 10.0)), 1000, l2, &d).initial).collect();
        assert_eq!(k1000, vec![2, 4, 8, 15, 29, 34, 40, 47, 55, 64]);
        assert_eq!(plan(&p(Some(3), Some(3), Some(0.5)), 10, l2, &d).initial, 6);
        assert_eq!(plan(&none, 10, l2, &[]).initial, 0);
    }

    #[test]
    fn adaptive_margins() {
        // tests/fixtures/vector probe.py: a query far from every centroid
        // probes every partition within the margin of the nearest.
        let d = [913.6, 948.1, 952.3, 968.1, 990.5, 1086.6, 1092.1, 1144.9];
        assert_eq!(plan(&Probes::default(), 1, DistanceType::L2, &d).initial, 7);
        assert_eq!(plan(&Probes::default(), 10, DistanceType::L2, &d).initial, 8);
        let cos = far(8);
        assert_eq!(plan(&Probes::default(), 1, DistanceType::Cosine, &cos).initial, 3);
        assert_eq!(plan(&Probes::default(), 10, DistanceType::Cosine, &cos).initial, 8);
        assert_eq!(plan(&Probes::default(), 20, DistanceType::Cosine, &cos).initial, 7);
        assert_eq!(plan(&Probes::default(), 1, DistanceType::Dot, &cos).initial, 8);
        // A cap on large index: L2, k = 10, everything within the margin.
        assert_eq!(plan(&Probes::default(), 10, DistanceType::L2, &[1.0; 100]).initial, 24);
    }
}
