//! Test data: the pylance 14.0.2 fixtures copied into the repository
//! (`tests/fixtures/pylance-14`, with the script that made them), so a
//! clone alone runs every test.

use std::path::PathBuf;

/// `tests/fixtures/pylance-14/{rel}`, canonical; panics when it is missing
/// (a test must fail, not skip, without its data).
pub fn pylance14(rel: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pylance-14").join(rel);
    p.canonicalize().unwrap_or_else(|e| panic!("test fixture {} is missing: {e}", p.display()))
}

/// The first `.lance` data file of fixture dataset `dataset`.
pub fn pylance14_data_file(dataset: &str) -> PathBuf {
    let dir = pylance14(&format!("{dataset}/data"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "lance"))
        .collect();
    files.sort();
    files.into_iter().next().unwrap_or_else(|| panic!("no .lance file under {}", dir.display()))
}

/// A seeded 64-bit linear congruential generator (Knuth's MMIX constants):
/// repeatable pseudo-random test data without a crate. Its low bits are weak,
/// so callers take high bits (`next() >> 33`).
pub struct Lcg(pub u64);

impl Lcg {
    /// The next state.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0
    }
}
