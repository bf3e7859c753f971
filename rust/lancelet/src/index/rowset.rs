//! Sets of 64-bit row ids (Lance's `RowIdTreeMap`), as index files store
//! them and index searches return them.
//!
//! A set is split by the high 32 bits of its values (the fragment id of a
//! row address, or the high half of a stable row id); each part is either
//! a Roaring bitmap of the low 32 bits or "every value" of that high key.
//!
//! Serialized (little endian), as Lance writes it in bitmap and label-list
//! index files:
//!
//! ```text
//! u32                 number of entries, then per entry in key order:
//!   u32               high 32 bits
//!   u32               byte length of the bitmap (0 = every low value)
//!   [u8; length]      portable Roaring bitmap of the low 32 bits
//! ```
//!
//! The Roaring bitmaps use the portable format of `roaring` (cookie 12346
//! without run containers, 12347 with them); Lance writes them without
//! calling `optimize`, so no run containers appear in the files it writes.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::error::{Error, Result};

/// The low halves of one high key.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Every low value (a whole fragment).
    Full,
    /// Exactly these low values.
    Some(RoaringBitmap),
}

/// A set of u64 row ids / row addresses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowSet {
    parts: BTreeMap<u32, Part>,
}

impl FromIterator<u64> for RowSet {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let mut s = RowSet::default();
        for v in iter {
            s.insert(v);
        }
        s
    }
}

impl RowSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The set of these values (any order, repeats allowed).
    pub fn from_ids(mut ids: Vec<u64>) -> RowSet {
        if !ids.windows(2).all(|w| w[0] < w[1]) {
            ids.sort_unstable();
            ids.dedup();
        }
        Self::from_sorted_unique(&ids)
    }

    /// The set of these values (any order, repeats allowed), copying them
    /// only when they are not strictly increasing.
    pub fn from_slice(ids: &[u64]) -> RowSet {
        if ids.windows(2).all(|w| w[0] < w[1]) {
            Self::from_sorted_unique(ids)
        } else {
            Self::from_ids(ids.to_vec())
        }
    }

    fn from_sorted_unique(ids: &[u64]) -> RowSet {
        let mut parts = BTreeMap::new();
        let mut i = 0;
        while i < ids.len() {
            let hi = (ids[i] >> 32) as u32;
            let n = ids[i..].partition_point(|&v| (v >> 32) as u32 == hi);
            let b = RoaringBitmap::from_sorted_iter(ids[i..i + n].iter().map(|&v| v as u32)).expect("sorted, unique");
            parts.insert(hi, Part::Some(b));
            i += n;
        }
        RowSet { parts }
    }

    /// Add one value.
    pub fn insert(&mut self, v: u64) {
        let (hi, lo) = ((v >> 32) as u32, v as u32);
        match self.parts.entry(hi).or_insert_with(|| Part::Some(RoaringBitmap::new())) {
            Part::Full => {}
            Part::Some(b) => {
                b.insert(lo);
            }
        }
    }

    /// Add a run of values sharing their high 32 bits.
    pub fn insert_bitmap(&mut self, hi: u32, lo: RoaringBitmap) {
        if lo.is_empty() {
            return;
        }
        match self.parts.entry(hi) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(Part::Some(lo));
            }
            std::collections::btree_map::Entry::Occupied(mut e) => {
                if let Part::Some(b) = e.get_mut() {
                    *b |= lo;
                }
            }
        }
    }

    /// Whether `v` is in the set.
    pub fn contains(&self, v: u64) -> bool {
        match self.parts.get(&((v >> 32) as u32)) {
            None => false,
            Some(Part::Full) => true,
            Some(Part::Some(b)) => b.contains(v as u32),
        }
    }

    /// True when nothing is in the set.
    pub fn is_empty(&self) -> bool {
        self.parts.values().all(|p| matches!(p, Part::Some(b) if b.is_empty()))
    }

    /// Number of values, `None` when a part is "every value" (unbounded).
    pub fn len(&self) -> Option<u64> {
        self.parts.values().try_fold(0u64, |acc, p| match p {
            Part::Full => None,
            Part::Some(b) => Some(acc + b.len()),
        })
    }

    /// The part of high key `hi` (for row addresses: fragment `hi`).
    pub fn part(&self, hi: u32) -> Option<&Part> {
        self.parts.get(&hi)
    }

    /// `(high key, part)` in key order.
    pub fn parts(&self) -> impl Iterator<Item = (u32, &Part)> {
        self.parts.iter().map(|(k, v)| (*k, v))
    }

    /// Every value in order (a `Full` part cannot be listed: error).
    pub fn values(&self) -> Result<Vec<u64>> {
        let mut out = Vec::with_capacity(self.len().unwrap_or(0) as usize);
        for (hi, p) in &self.parts {
            match p {
                Part::Full => return Err(Error::unsupported(format!("row set selects all of fragment {hi}; its rows cannot be listed"))),
                Part::Some(b) => out.extend(b.iter().map(|lo| ((*hi as u64) << 32) | lo as u64)),
            }
        }
        Ok(out)
    }

    /// The values in `start..end` (all sharing high bits `start >> 32`
    /// unless the range spans keys), in order; `Full` parts yield the range.
    pub fn values_in(&self, start: u64, end: u64, mut f: impl FnMut(u64)) {
        if start >= end {
            return;
        }
        let (hs, he) = ((start >> 32) as u32, ((end - 1) >> 32) as u32);
        for (&hi, p) in self.parts.range(hs..=he) {
            let base = (hi as u64) << 32;
            let lo_start = if hi == hs { start as u32 } else { 0 };
            let lo_end_incl = if hi == he { (end - 1) as u32 } else { u32::MAX };
            match p {
                Part::Full => (lo_start as u64..=lo_end_incl as u64).for_each(|lo| f(base | lo)),
                Part::Some(b) => b.range(lo_start..=lo_end_incl).for_each(|lo| f(base | lo as u64)),
            }
        }
    }

    /// `self ∪ other`.
    pub fn union_with(&mut self, other: &RowSet) {
        for (hi, p) in &other.parts {
            match (self.parts.get_mut(hi), p) {
                (None, _) => {
                    self.parts.insert(*hi, p.clone());
                }
                (Some(Part::Full), _) => {}
                (Some(slot), Part::Full) => *slot = Part::Full,
                (Some(Part::Some(a)), Part::Some(b)) => *a |= b,
            }
        }
    }

    /// `self ∩ other`.
    pub fn intersect_with(&mut self, other: &RowSet) {
        let mut out = BTreeMap::new();
        for (hi, p) in std::mem::take(&mut self.parts) {
            let Some(q) = other.parts.get(&hi) else { continue };
            let r = match (p, q) {
                (Part::Full, q) => q.clone(),
                (p, Part::Full) => p,
                (Part::Some(a), Part::Some(b)) => Part::Some(a & b),
            };
            if !matches!(&r, Part::Some(b) if b.is_empty()) {
                out.insert(hi, r);
            }
        }
        self.parts = out;
    }

    /// The union of many sets.
    pub fn union_all<'a>(sets: impl IntoIterator<Item = &'a RowSet>) -> RowSet {
        let mut out = RowSet::new();
        for s in sets {
            out.union_with(s);
        }
        out
    }

    /// Map every value through `f` (`None` drops it). `Full` parts are
    /// kept unless `f` says their key moves: then they are an error.
    pub fn map(&self, f: impl Fn(u64) -> Option<u64>, moves_key: impl Fn(u32) -> bool) -> Result<RowSet> {
        let mut out = RowSet::new();
        for (hi, p) in &self.parts {
            match p {
                Part::Full if moves_key(*hi) => {
                    return Err(Error::unsupported(format!("cannot remap a whole-fragment row selection of fragment {hi}")))
                }
                Part::Full => {
                    out.parts.insert(*hi, Part::Full);
                }
                Part::Some(b) => {
                    if !moves_key(*hi) {
                        out.insert_bitmap(*hi, b.clone());
                        continue;
                    }
                    for lo in b {
                        if let Some(v) = f(((*hi as u64) << 32) | lo as u64) {
                            out.insert(v);
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// Serialized size in bytes.
    pub fn serialized_size(&self) -> usize {
        4 + self.parts.values().map(|p| 8 + if let Part::Some(b) = p { b.serialized_size() } else { 0 }).sum::<usize>()
    }

    /// The serialized form (see the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.serialized_size());
        self.write_to(&mut out);
        out
    }

    /// Append the serialized form to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.serialized_size());
        out.extend_from_slice(&(self.parts.len() as u32).to_le_bytes());
        for (hi, p) in &self.parts {
            out.extend_from_slice(&hi.to_le_bytes());
            match p {
                Part::Full => out.extend_from_slice(&0u32.to_le_bytes()),
                Part::Some(b) => {
                    out.extend_from_slice(&(b.serialized_size() as u32).to_le_bytes());
                    b.serialize_into(&mut *out).expect("writing to a Vec cannot fail");
                }
            }
        }
    }

    /// Parse the serialized form; every byte must be used.
    pub fn from_bytes(bytes: &[u8]) -> Result<RowSet> {
        let bad = |what: String| Error::corrupt(format!("row id set: {what}"));
        let u32_at = |pos: usize| -> Result<u32> {
            bytes
                .get(pos..pos + 4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                .ok_or_else(|| bad(format!("truncated at byte {pos} of {}", bytes.len())))
        };
        let n = u32_at(0)? as usize;
        let mut pos = 4;
        let mut parts = BTreeMap::new();
        let mut last: Option<u32> = None;
        for i in 0..n {
            let hi = u32_at(pos)?;
            let len = u32_at(pos + 4)? as usize;
            pos += 8;
            if last.is_some_and(|l| l >= hi) {
                return Err(bad(format!("entry {i} (high bits {hi}) is out of order")));
            }
            last = Some(hi);
            let part = if len == 0 {
                Part::Full
            } else {
                let body = bytes.get(pos..pos + len).ok_or_else(|| bad(format!("entry {i} needs {len} bytes at {pos}, set has {}", bytes.len())))?;
                let b = RoaringBitmap::deserialize_from(body).map_err(|e| bad(format!("entry {i}: bad roaring bitmap: {e}")).with_source(e))?;
                if b.serialized_size() != len {
                    return Err(bad(format!("entry {i}: the bitmap takes {} of its {len} bytes", b.serialized_size())));
                }
                pos += len;
                Part::Some(b)
            };
            parts.insert(hi, part);
        }
        if pos != bytes.len() {
            return Err(bad(format!("{} trailing bytes after {n} entries", bytes.len() - pos)));
        }
        Ok(RowSet { parts })
    }
}

/// A fragment bitmap as Lance stores it in `IndexMetadata.fragment_bitmap`:
/// run-optimized, so runs of consecutive ids use run containers (cookie
/// 12347) when that is smaller.
pub fn fragment_bitmap_bytes(ids: impl IntoIterator<Item = u32>) -> Vec<u8> {
    let mut b: RoaringBitmap = ids.into_iter().collect();
    b.optimize();
    let mut out = Vec::with_capacity(b.serialized_size());
    b.serialize_into(&mut out).expect("vec");
    out
}

/// Parse a stored fragment bitmap (either cookie).
pub fn parse_fragment_bitmap(bytes: &[u8]) -> Result<RoaringBitmap> {
    RoaringBitmap::deserialize_from(bytes).map_err(|e| Error::corrupt(format!("index fragment bitmap: {e}")).with_source(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn serialized_layout() {
        let s: RowSet = [1u64, 2, (3 << 32) | 7].into_iter().collect();
        let b = s.to_bytes();
        assert_eq!(&b[..4], &2u32.to_le_bytes());
        assert_eq!(&b[4..8], &0u32.to_le_bytes());
        let first_len = u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
        assert_eq!(&b[12..14], &[0x3a, 0x30]); // cookie 12346
        assert_eq!(&b[12 + first_len..16 + first_len], &3u32.to_le_bytes());
        assert_eq!(RowSet::from_bytes(&b).unwrap(), s);
        assert_eq!(s.serialized_size(), b.len());
        // a whole fragment
        let mut full = RowSet::new();
        full.parts.insert(5, Part::Full);
        let fb = full.to_bytes();
        assert_eq!(fb, [1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]);
        let back = RowSet::from_bytes(&fb).unwrap();
        assert!(back.contains((5 << 32) | 123456));
        assert_eq!(back.len(), None);
    }

    #[test]
    fn corrupt_sets() {
        let s: RowSet = (0..100u64).collect();
        let b = s.to_bytes();
        for cut in [0, 3, 7, 11, b.len() - 1] {
            assert!(matches!(RowSet::from_bytes(&b[..cut]), Err(Error::Corrupt { .. })), "cut {cut}");
        }
        let mut extra = b.clone();
        extra.push(0);
        assert!(RowSet::from_bytes(&extra).is_err());
    }

    #[test]
    fn fragment_bitmaps_like_lance() {
        // {0,1,2}: an array container is not larger than a run, so no runs.
        assert_eq!(fragment_bitmap_bytes([0, 1, 2]), b":0\x00\x00\x01\x00\x00\x00\x00\x00\x02\x00\x10\x00\x00\x00\x00\x00\x01\x00\x02\x00");
        // {0..=4}: one run container (cookie 12347).
        assert_eq!(fragment_bitmap_bytes(0..5), b";0\x00\x00\x01\x00\x00\x04\x00\x01\x00\x00\x00\x04\x00");
        assert_eq!(parse_fragment_bitmap(&fragment_bitmap_bytes(0..30)).unwrap().len(), 30);
    }

    proptest! {
        #[test]
        fn set_algebra(a in proptest::collection::vec(0u64..(1 << 34), 0..200), b in proptest::collection::vec(0u64..(1 << 34), 0..200)) {
            let (sa, sb): (RowSet, RowSet) = (a.iter().copied().collect(), b.iter().copied().collect());
            let ha: std::collections::BTreeSet<u64> = a.iter().copied().collect();
            let hb: std::collections::BTreeSet<u64> = b.iter().copied().collect();
            let mut u = sa.clone();
            u.union_with(&sb);
            prop_assert_eq!(u.values().unwrap(), ha.union(&hb).copied().collect::<Vec<_>>());
            let mut i = sa.clone();
            i.intersect_with(&sb);
            prop_assert_eq!(i.values().unwrap(), ha.intersection(&hb).copied().collect::<Vec<_>>());
            prop_assert_eq!(RowSet::from_bytes(&sa.to_bytes()).unwrap(), sa.clone());
            let mut got = Vec::new();
            sa.values_in(1 << 32, 3 << 32, |v| got.push(v));
            prop_assert_eq!(got, ha.range((1u64 << 32)..(3u64 << 32)).copied().collect::<Vec<_>>());
        }
    }
}
