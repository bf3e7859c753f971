//! How many IVF partitions a query probes: pylance 14's search-effort rule
//! (docs/research/vector-index.md §10, measured with `analyze_plan`).
//!
//! 1. `auto(k)`, the budget of the default effort 0.5, is a step function
//!    of `k` capped at the number of partitions.
//! 2. `search_effort = e` interpolates geometrically between
//!    `max(1, minimum_nprobes)` (e = 0), `auto(k)` (0.5) and all
//!    partitions (1), rounding up; `nprobes` / minimum / maximum are then
//!    ignored (pylance ignores `nprobes` when an effort is given).
//! 3. Otherwise the initial probes are `max(minimum_nprobes, auto(k))`,
//!    capped by `maximum_nprobes` (`nprobes = n` sets both: exactly n).
//! 4. Late expansion: while fewer than `k` candidates were found, one more
//!    partition (next by centroid distance) is searched, up to
//!    `maximum_nprobes` or all partitions.
//!
//! Measured on L2 indices; pylance 14 probes more for cosine and dot
//! indices in some cases (see the report of issue 31): not modelled.

use super::Probes;

/// The default budget for `k` results (effort 0.5), before the cap.
pub fn auto(k: usize) -> usize {
    match k {
        0..=1 => 5,
        2..=10 => 6,
        11..=100 => 11,
        101..=200 => 15,
        201..=500 => 22,
        501..=1000 => 29,
        _ => 98,
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

/// The plan for `k` results over `nlist` partitions.
pub fn plan(probes: &Probes, k: usize, nlist: usize) -> ProbePlan {
    if nlist == 0 {
        return ProbePlan { initial: 0, limit: 0 };
    }
    let a = auto(k).min(nlist);
    if let Some(e) = probes.search_effort {
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
        let n = n.clamp(1, nlist);
        return ProbePlan { initial: n, limit: nlist };
    }
    let limit = probes.maximum.filter(|&m| m > 0).unwrap_or(nlist).min(nlist);
    let initial = probes.minimum.unwrap_or(0).max(a).min(limit).max(1);
    ProbePlan { initial, limit: limit.max(initial) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(minimum: Option<usize>, maximum: Option<usize>, search_effort: Option<f32>) -> Probes {
        Probes { minimum, maximum, search_effort }
    }

    #[test]
    fn measured_points() {
        // §10 of the research notes: nlist 64.
        let none = p(None, None, None);
        assert_eq!(plan(&none, 10, 64), ProbePlan { initial: 6, limit: 64 });
        assert_eq!(plan(&none, 1, 64).initial, 5);
        assert_eq!(plan(&none, 100, 64).initial, 11);
        assert_eq!(plan(&none, 1000, 64).initial, 29);
        assert_eq!(plan(&none, 2000, 64).initial, 64);
        assert_eq!(plan(&none, 10, 4).initial, 4);
        assert_eq!(plan(&p(Some(3), Some(3), None), 10, 64), ProbePlan { initial: 3, limit: 3 });
        assert_eq!(plan(&p(Some(5), None, None), 10, 64).initial, 6);
        assert_eq!(plan(&p(None, Some(5), None), 10, 64), ProbePlan { initial: 5, limit: 5 });
        assert_eq!(plan(&p(Some(1), Some(2), None), 2000, 64).initial, 2);
        let k1: Vec<usize> = (1..=10).map(|i| plan(&p(None, None, Some(i as f32 / 10.0)), 1, 64).initial).collect();
        assert_eq!(k1, vec![2, 2, 3, 4, 5, 9, 14, 24, 39, 64]);
        let k1000: Vec<usize> = (1..=10).map(|i| plan(&p(None, None, Some(i as f32 / 10.0)), 1000, 64).initial).collect();
        assert_eq!(k1000, vec![2, 4, 8, 15, 29, 34, 40, 47, 55, 64]);
        assert_eq!(plan(&p(Some(3), Some(3), Some(0.5)), 10, 64).initial, 6);
        assert_eq!(plan(&none, 10, 0).initial, 0);
    }
}
