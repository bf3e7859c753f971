//! The index remapping hook of a compaction.
//!
//! pylance 14's indices store row *addresses* (`fragment_id << 32 |
//! offset`), with or without stable row ids, and a compaction changes
//! them. The commit
//! builds a [`RowAddressMap`] (old address → new address, or `None` for a
//! deleted row) from the old fragments' deletions and the new fragments'
//! row counts and ids: the rewrite keeps row order, so the k-th live row of
//! a group's old fragments is the k-th row of its new fragments.
//!
//! An index implementation plugs in with [`register_index_remapper`]: for
//! every index whose fragment bitmap covers rewritten fragments, the commit
//! asks the remapper for a rewritten copy (new uuid, files and details;
//! it goes into `Rewrite.rewritten_indices`, and the commit moves the
//! index's fragment bitmap from the old fragments to the new ones). An
//! index the remapper does not rewrite (or every index, when none is
//! registered) keeps its bitmap, so the new fragments count as unindexed
//! and readers scan them, as pylance 14 does for a rewrite without
//! remapped indices.

use std::sync::{Arc, RwLock};

use roaring::RoaringBitmap;

use crate::error::Result;
use crate::index::frag_reuse::FragReuse;
use crate::proto::table as pb;
use crate::table::dataset::Dataset;

/// Old row addresses of one rewrite group and where they went.
#[derive(Debug, Clone)]
struct GroupMap {
    /// `(fragment id, physical rows, deleted offsets)` of the old fragments, in order.
    old: Vec<(u64, u64, RoaringBitmap)>,
    /// `(fragment id, rows)` of the new fragments, in order.
    new: Vec<(u64, u64)>,
}

/// Where every row of the rewritten fragments went.
#[derive(Debug, Clone, Default)]
pub struct RowAddressMap {
    groups: Vec<GroupMap>,
    /// Earlier compactions whose remapping was deferred: an index's
    /// addresses go through them first (`__lance_frag_reuse`).
    deferred: Option<Arc<FragReuse>>,
}

impl RowAddressMap {
    /// Map addresses through the deferred remaps of `reuse` before this
    /// compaction's moves (an index written before those compactions still
    /// holds the addresses they replaced).
    pub fn after_deferred(mut self, reuse: Option<Arc<FragReuse>>) -> Self {
        self.deferred = reuse;
        self
    }

    /// Add a group: its old fragments (id, physical rows, deleted offsets)
    /// and its new fragments (id, rows).
    pub fn push_group(&mut self, old: Vec<(u64, u64, RoaringBitmap)>, new: Vec<(u64, u64)>) {
        self.groups.push(GroupMap { old, new });
    }

    /// Ids of the rewritten (old) fragments.
    pub fn old_fragment_ids(&self) -> Vec<u64> {
        self.groups.iter().flat_map(|g| g.old.iter().map(|o| o.0)).collect()
    }

    /// The new address of `old` (`Some(None)`: the row was deleted; `None`:
    /// the address did not move).
    pub fn get(&self, old: u64) -> Option<Option<u64>> {
        let Some(reuse) = &self.deferred else { return self.get_rewritten(old) };
        match reuse.remap(old) {
            None => Some(None),
            Some(a) => match self.get_rewritten(a) {
                Some(moved) => Some(moved),
                None => (a != old).then_some(Some(a)),
            },
        }
    }

    /// [`Self::get`] for this compaction's moves only.
    fn get_rewritten(&self, old: u64) -> Option<Option<u64>> {
        let (frag, offset) = (old >> 32, old & 0xffff_ffff);
        for g in &self.groups {
            let mut live_before = 0u64;
            for (id, rows, deleted) in &g.old {
                if *id == frag {
                    if offset >= *rows {
                        return None;
                    }
                    if deleted.contains(offset as u32) {
                        return Some(None);
                    }
                    let k = live_before + offset - deleted.rank(offset as u32);
                    return Some(locate(&g.new, k));
                }
                live_before += rows - deleted.len();
            }
        }
        None
    }

    /// Call `f(old address, new address)` for every row of the rewritten
    /// fragments, in order (this compaction's moves only).
    pub fn for_each(&self, mut f: impl FnMut(u64, Option<u64>)) {
        for g in &self.groups {
            let mut k = 0u64;
            for (id, rows, deleted) in &g.old {
                for offset in 0..*rows {
                    let old = (id << 32) | offset;
                    if deleted.contains(offset as u32) {
                        f(old, None);
                    } else {
                        f(old, locate(&g.new, k));
                        k += 1;
                    }
                }
            }
        }
    }
}

/// The address of the k-th row of the new fragments.
fn locate(new: &[(u64, u64)], mut k: u64) -> Option<u64> {
    for (id, rows) in new {
        if k < *rows {
            return Some((id << 32) | k);
        }
        k -= rows;
    }
    None
}

/// Rewrites an index for new row addresses (implemented by the index code).
pub trait IndexRemapper: Send + Sync {
    /// A remapped copy of `index` (written next to it), or `None` to leave
    /// it as it is (its new fragments then read as unindexed).
    fn remap(&self, ds: &Dataset, index: &pb::IndexMetadata, map: &RowAddressMap) -> Result<Option<pb::transaction::RewrittenIndex>>;
}

static REMAPPER: RwLock<Option<Arc<dyn IndexRemapper>>> = RwLock::new(None);

/// Install the remapper every compaction commit uses from now on.
pub fn register_index_remapper(remapper: Arc<dyn IndexRemapper>) {
    *REMAPPER.write().unwrap_or_else(|e| e.into_inner()) = Some(remapper);
}

/// The installed remapper, else lancelet's scalar index remapper
/// ([`crate::index::remap::ScalarIndexRemapper`]).
pub fn index_remapper() -> Option<Arc<dyn IndexRemapper>> {
    let installed = REMAPPER.read().unwrap_or_else(|e| e.into_inner()).clone();
    Some(installed.unwrap_or_else(|| Arc::new(crate::index::remap::ScalarIndexRemapper)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_follow_live_rows() {
        let mut m = RowAddressMap::default();
        let del: RoaringBitmap = [1u32, 3].into_iter().collect();
        // fragment 0: 4 rows (1, 3 deleted), fragment 1: 3 rows -> new 7 (3 rows), 8 (2 rows)
        m.push_group(vec![(0, 4, del), (1, 3, RoaringBitmap::new())], vec![(7, 3), (8, 2)]);
        assert_eq!(m.get(0), Some(Some(7 << 32)));
        assert_eq!(m.get(1), Some(None));
        assert_eq!(m.get(2), Some(Some((7 << 32) | 1)));
        assert_eq!(m.get(1 << 32), Some(Some((7 << 32) | 2)));
        assert_eq!(m.get((1 << 32) | 2), Some(Some((8 << 32) | 1)));
        assert_eq!(m.get(5 << 32), None);
        assert_eq!(m.get(4), None);
        let mut all = Vec::new();
        m.for_each(|o, n| all.push((o, n)));
        assert_eq!(all.len(), 7);
        assert!(all.iter().all(|(o, n)| m.get(*o) == Some(*n)));
        assert_eq!(m.old_fragment_ids(), vec![0, 1]);
    }

    #[test]
    fn deferred_moves_come_first() {
        use crate::index::frag_reuse::{FragReuse, Group};
        use roaring::RoaringTreemap;
        // a deferred compaction moved fragment 0 (4 rows, row 1 deleted) to 5
        let kept: RoaringTreemap = [0u64, 2, 3].into_iter().collect();
        let reuse = FragReuse { versions: vec![(3, vec![Group::new(vec![(0, 4, 1)], vec![(5, 3)], kept)])] };
        // this compaction rewrites 5 (row 0 now deleted) and 6 into 7
        let mut m = RowAddressMap::default();
        m.push_group(vec![(5, 3, [0u32].into_iter().collect()), (6, 2, RoaringBitmap::new())], vec![(7, 4)]);
        let m = m.after_deferred(Some(Arc::new(reuse)));
        assert_eq!(m.get(0), Some(None)); // -> 5:0, deleted since
        assert_eq!(m.get(1), Some(None)); // deleted before the deferred compaction
        assert_eq!(m.get(2), Some(Some(7 << 32))); // -> 5:1 -> 7:0
        assert_eq!(m.get(3), Some(Some((7 << 32) | 1)));
        assert_eq!(m.get(6 << 32), Some(Some((7 << 32) | 2)));
        assert_eq!(m.get(9 << 32), None); // never moved
    }
}
