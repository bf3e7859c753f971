//! Distances as pylance defines `_distance` (docs/research/vector-index.md
//! §9): squared L2, `1 - cos`, `1 - dot`, and differing bits for uint8
//! vectors. All in f32, as pylance reports them.

use super::DistanceType;

/// Squared Euclidean distance.
pub fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Inner product.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Squared norm.
pub fn norm_sq(a: &[f32]) -> f32 {
    dot(a, a)
}

/// `1 - a·b / (|a| |b|)`.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    1.0 - dot(a, b) / (norm_sq(a).sqrt() * norm_sq(b).sqrt())
}

/// Differing bits.
pub fn hamming(a: &[u8], b: &[u8]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// The distance of `metric` between two float vectors (`Hamming` is only
/// defined on bytes: see [`hamming`]).
pub fn distance(metric: DistanceType, a: &[f32], b: &[f32]) -> f32 {
    match metric {
        DistanceType::L2 => l2_sq(a, b),
        DistanceType::Cosine => cosine(a, b),
        DistanceType::Dot => 1.0 - dot(a, b),
        DistanceType::Hamming => {
            // Hamming vectors are uint8; as floats each value is one byte.
            a.iter().zip(b).map(|(x, y)| ((*x as u8) ^ (*y as u8)).count_ones() as f32).sum()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions() {
        let a = [1.0, 2.0, 3.0];
        let b = [2.0, 0.0, 3.0];
        assert_eq!(l2_sq(&a, &b), 5.0);
        assert_eq!(distance(DistanceType::Dot, &a, &b), 1.0 - 11.0);
        let c = distance(DistanceType::Cosine, &a, &b);
        assert!((c - (1.0 - 11.0 / (14f32.sqrt() * 13f32.sqrt()))).abs() < 1e-6);
        assert_eq!(hamming(&[0b1010, 0xff], &[0b0110, 0x0f]), 2 + 4);
    }
}
