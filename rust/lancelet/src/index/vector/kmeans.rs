//! Lloyd k-means as pylance 14 trains IVF centroids and PQ codebooks
//! (docs/research/vector-index.md §7): `k` distinct sample rows as the
//! initial centroids (a seeded RNG: lancelet's builds are reproducible),
//! at most `max_iters` rounds, stop when the loss moved less than 1e-4 of
//! the previous loss, empty clusters refilled by splitting the largest.
//!
//! L2 trains on squared Euclidean distance; dot assigns by the largest
//! inner product and keeps its centroids at unit length. Cosine is L2 on
//! normalized vectors: the caller normalizes. Assignment runs on the
//! process pool ([`crate::process::install`]), rows in parallel.

use rayon::prelude::*;

use super::DistanceType;

/// A small seeded RNG (SplitMix64): sampling and initial centroids.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// `m` distinct indices of `0..n`, ascending (all of them when `m >= n`).
    pub fn sample(&mut self, n: usize, m: usize) -> Vec<usize> {
        if m >= n {
            return (0..n).collect();
        }
        // Floyd's algorithm.
        let mut chosen = std::collections::HashSet::with_capacity(m);
        for j in n - m..n {
            let t = self.below(j + 1);
            if !chosen.insert(t) {
                chosen.insert(j);
            }
        }
        let mut v: Vec<usize> = chosen.into_iter().collect();
        v.sort_unstable();
        v
    }
}

/// Squared L2 distance with eight accumulators (vectorizes).
#[inline]
pub fn l2(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, ra) = (a.chunks_exact(8), a.chunks_exact(8).remainder());
    let rb = b.chunks_exact(8).remainder();
    for (x, y) in ca.zip(b.chunks_exact(8)) {
        for ((a, p), q) in acc.iter_mut().zip(x).zip(y) {
            let d = p - q;
            *a += d * d;
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += (x - y) * (x - y);
    }
    s
}

/// Inner product with eight accumulators.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, ra) = (a.chunks_exact(8), a.chunks_exact(8).remainder());
    let rb = b.chunks_exact(8).remainder();
    for (x, y) in ca.zip(b.chunks_exact(8)) {
        for ((a, p), q) in acc.iter_mut().zip(x).zip(y) {
            *a += p * q;
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// Scale `v` to unit length (left as is when its norm is 0). The squared
/// norm is summed in element order, as pylance does (its normalized
/// vectors, and so SQ bounds and FLAT storage, match bit for bit).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// The nearest of `centroids` (rows of `dim`) to `x` and its distance as
/// the loss counts it: squared L2, or `-x·c` for dot.
#[inline]
pub fn nearest(x: &[f32], centroids: &[f32], dim: usize, metric: DistanceType) -> (u32, f32) {
    let mut best = (0u32, f32::INFINITY);
    for (c, row) in centroids.chunks_exact(dim).enumerate() {
        let d = match metric {
            DistanceType::Dot => -dot(x, row),
            _ => l2(x, row),
        };
        if d < best.1 {
            best = (c as u32, d);
        }
    }
    best
}

/// Assign every row of `data` to its nearest centroid: the partition of
/// each row and the summed distance (f64) — squared L2, or for dot
/// pylance's dot distance `1 - x·c`.
pub fn assign(data: &[f32], dim: usize, centroids: &[f32], metric: DistanceType) -> (Vec<u32>, f64) {
    if dim == 0 || centroids.is_empty() {
        return (vec![0; data.len().checked_div(dim).unwrap_or(0)], 0.0);
    }
    crate::process::install(|| {
        let pairs: Vec<(u32, f32)> = data.par_chunks_exact(dim).with_min_len(256).map(|x| nearest(x, centroids, dim, metric)).collect();
        let loss = match metric {
            DistanceType::Dot => pairs.iter().map(|p| (1.0 + p.1) as f64).sum(),
            _ => pairs.iter().map(|p| p.1 as f64).sum(),
        };
        (pairs.into_iter().map(|p| p.0).collect(), loss)
    })
}

/// Training parameters.
#[derive(Debug, Clone, Copy)]
pub struct KMeansParams {
    /// Clusters.
    pub k: usize,
    /// Rounds at most.
    pub max_iters: usize,
    /// L2 (also for cosine, on normalized data) or Dot.
    pub metric: DistanceType,
    /// RNG seed of the initial centroids.
    pub seed: u64,
}

/// A trained model.
#[derive(Debug, Clone)]
pub struct KMeans {
    /// `k` rows of `dim` values.
    pub centroids: Vec<f32>,
    /// Clusters (fewer than asked when there are fewer rows).
    pub k: usize,
    /// The last round's loss.
    pub loss: f64,
}

/// Train on `data` (rows of `dim`): `min(k, rows)` clusters.
pub fn train(data: &[f32], dim: usize, p: KMeansParams) -> KMeans {
    let n = data.len().checked_div(dim).unwrap_or(0);
    let k = p.k.min(n).max(1);
    if n == 0 {
        return KMeans { centroids: vec![0.0; dim], k: 1, loss: 0.0 };
    }
    let mut rng = Rng::new(p.seed);
    let mut centroids: Vec<f32> = Vec::with_capacity(k * dim);
    for i in rng.sample(n, k) {
        centroids.extend_from_slice(&data[i * dim..(i + 1) * dim]);
    }
    if p.metric == DistanceType::Dot {
        centroids.chunks_exact_mut(dim).for_each(normalize);
    }
    let mut last_loss = f64::MAX;
    let mut loss = 0.0;
    for _ in 0..p.max_iters.max(1) {
        let (parts, l) = assign(data, dim, &centroids, p.metric);
        loss = l;
        centroids = update(data, dim, k, &parts, &centroids);
        if p.metric == DistanceType::Dot {
            centroids.chunks_exact_mut(dim).for_each(normalize);
        }
        if (loss - last_loss).abs() < 1e-4 * last_loss.abs() {
            break;
        }
        last_loss = loss;
    }
    KMeans { centroids, k, loss }
}

/// New centroids: the means of the assigned rows; an empty cluster takes
/// a copy of the largest one's mean, nudged by ±1/1024 alternately per
/// dimension (and the largest one the opposite nudge).
fn update(data: &[f32], dim: usize, k: usize, parts: &[u32], old: &[f32]) -> Vec<f32> {
    let chunk = 4096;
    let (sums, counts) = crate::process::install(|| {
        data.par_chunks(chunk * dim)
            .zip(parts.par_chunks(chunk))
            .fold(
                || (vec![0f64; k * dim], vec![0usize; k]),
                |(mut s, mut c), (rows, ps)| {
                    for (x, &p) in rows.chunks_exact(dim).zip(ps) {
                        let p = p as usize;
                        c[p] += 1;
                        for (a, v) in s[p * dim..(p + 1) * dim].iter_mut().zip(x) {
                            *a += *v as f64;
                        }
                    }
                    (s, c)
                },
            )
            .reduce(
                || (vec![0f64; k * dim], vec![0usize; k]),
                |(mut s1, mut c1), (s2, c2)| {
                    s1.iter_mut().zip(s2).for_each(|(a, b)| *a += b);
                    c1.iter_mut().zip(c2).for_each(|(a, b)| *a += b);
                    (s1, c1)
                },
            )
    });
    let mut out = vec![0f32; k * dim];
    for c in 0..k {
        let row = &mut out[c * dim..(c + 1) * dim];
        if counts[c] == 0 {
            row.copy_from_slice(&old[c * dim..(c + 1) * dim]);
        } else {
            let n = counts[c] as f64;
            row.iter_mut().zip(&sums[c * dim..(c + 1) * dim]).for_each(|(o, s)| *o = (*s / n) as f32);
        }
    }
    let mut counts = counts;
    for c in 0..k {
        if counts[c] != 0 {
            continue;
        }
        let big = (0..k).max_by_key(|&i| counts[i]).unwrap_or(0);
        if counts[big] < 2 {
            break;
        }
        for d in 0..dim {
            let v = out[big * dim + d];
            let (a, b) = if d % 2 == 0 { (1.0 + 1.0 / 1024.0, 1.0 - 1.0 / 1024.0) } else { (1.0 - 1.0 / 1024.0, 1.0 + 1.0 / 1024.0) };
            out[c * dim + d] = v * a;
            out[big * dim + d] = v * b;
        }
        counts[c] = counts[big] / 2;
        counts[big] -= counts[c];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blobs(n_per: usize, centers: &[[f32; 2]], seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        let mut v = Vec::new();
        for c in centers {
            for _ in 0..n_per {
                for &x in c {
                    v.push(x + (rng.below(1000) as f32 / 1000.0 - 0.5) * 0.1);
                }
            }
        }
        v
    }

    #[test]
    fn finds_separated_clusters() {
        let centers = [[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0]];
        let data = blobs(100, &centers, 3);
        let m = train(&data, 2, KMeansParams { k: 4, max_iters: 50, metric: DistanceType::L2, seed: 7 });
        let (parts, loss) = assign(&data, 2, &m.centroids, DistanceType::L2);
        for b in 0..4 {
            let p = parts[b * 100];
            assert!(parts[b * 100..(b + 1) * 100].iter().all(|&q| q == p));
        }
        assert!(loss < 400.0 * 0.01);
    }

    #[test]
    fn more_clusters_than_rows_and_dot_units() {
        let data = vec![1.0, 0.0, 0.0, 2.0, 3.0, 3.0];
        let m = train(&data, 2, KMeansParams { k: 8, max_iters: 10, metric: DistanceType::L2, seed: 1 });
        assert_eq!(m.k, 3);
        let (_, loss) = assign(&data, 2, &m.centroids, DistanceType::L2);
        assert_eq!(loss, 0.0);
        let m = train(&blobs(50, &[[5.0, 0.0], [0.0, 5.0]], 2), 2, KMeansParams { k: 2, max_iters: 10, metric: DistanceType::Dot, seed: 1 });
        for c in m.centroids.chunks(2) {
            assert!((dot(c, c) - 1.0).abs() < 1e-5);
        }
    }

    #[test]
    fn sampling_is_distinct_and_seeded() {
        let a = Rng::new(5).sample(1000, 100);
        assert_eq!(a.len(), 100);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(a, Rng::new(5).sample(1000, 100));
        assert_eq!(Rng::new(5).sample(10, 20), (0..10).collect::<Vec<_>>());
    }
}
