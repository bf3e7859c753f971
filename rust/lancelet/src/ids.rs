//! Random identifiers: 64-bit ids (deletion files, transaction names),
//! UUIDs (indices, transactions) and random bytes. A leaf module: it
//! imports nothing of the crate.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// 64 random bits (std's randomly keyed SipHash over time, pid and a counter;
/// good enough for file names and UUIDs, no extra dependency).
pub fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    h.write_u128(now.as_nanos());
    h.finish()
}

/// 16 random bytes.
pub fn random_bytes16() -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&random_u64().to_le_bytes());
    out[8..].copy_from_slice(&random_u64().to_le_bytes());
    out
}

/// A random (version 4) UUID in hyphenated form.
pub fn new_uuid() -> String {
    let mut b = random_bytes16();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}
