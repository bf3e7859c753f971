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
//! An index implementation plugs in through
//! `CompactionOptions::index_remapper` (by default [`ScalarIndexRemapper`]): for
//! every index whose fragment bitmap covers rewritten fragments, the commit
//! asks the remapper for a rewritten copy (new uuid, files and details;
//! it goes into `Rewrite.rewritten_indices`, and the commit moves the
//! index's fragment bitmap from the old fragments to the new ones). An
//! index the remapper does not rewrite keeps its bitmap, so the new fragments count as unindexed
//! and readers scan them, as pylance 14 does for a rewrite without
//! remapped indices.

use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::ids::new_uuid;
use crate::index::frag_reuse::FragReuse;
use crate::index::meta::{uuid_bytes, INDICES_DIR};
use crate::index::remap::remap;
use crate::index::IndexKind;
use crate::proto::table as pb;
use crate::table::dataset::Dataset;
use crate::table::ops::index::index_file_version;
use pb::transaction::RewrittenIndex;

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
pub trait IndexRemapper: Send + Sync + std::fmt::Debug {
    /// A remapped copy of `index` (written next to it), or `None` to leave
    /// it as it is (its new fragments then read as unindexed).
    fn remap(&self, ds: &Dataset, index: &pb::IndexMetadata, map: &RowAddressMap) -> Result<Option<pb::transaction::RewrittenIndex>>;
}

/// A compaction's rewrite of one index: when `index` holds row addresses
/// (BTREE always; every kind on a dataset without stable row ids), its
/// files are rewritten under a new uuid next to it with every address
/// mapped by `moved` (`None`: not in a rewritten fragment, kept; `Some(None)`:
/// deleted, dropped; `Some(Some(a))`: now at `a`), and the entry for
/// `Rewrite.rewritten_indices` is returned. Indices holding stable row ids,
/// system indices and kinds lancelet does not know give `None` (their
/// files stay valid; the commit moves their fragment bitmaps). Vector
/// indices go to [`crate::table::ops::vector_optimize::remap_vector_index`].
pub fn remap_index(ds: &Dataset, index: &pb::IndexMetadata, moved: &dyn Fn(u64) -> Option<Option<u64>>) -> Result<Option<RewrittenIndex>> {
    if index.index_details.as_ref().is_some_and(|d| d.type_url == crate::proto::type_url::VECTOR_INDEX_DETAILS) {
        return crate::table::ops::vector_optimize::remap_vector_index(ds, index, moved);
    }
    if index.index_details.as_ref().is_some_and(|d| d.type_url == crate::table::ops::inverted_index::TYPE_URL) {
        return crate::table::ops::inverted_index::remap_inverted(ds, index, moved);
    }
    let Some(kind) = index.index_details.as_ref().and_then(|d| IndexKind::from_type_url(&d.type_url)) else {
        return Ok(None);
    };
    if kind.keyed_by_row_id(ds.has_stable_row_ids()) || !kind.remappable() {
        return Ok(None);
    }
    let old = index.uuid.as_ref().ok_or_else(|| Error::corrupt(format!("index {:?} has no uuid", index.name)))?;
    let src = ds.index_dir(index)?;
    let uuid = new_uuid();
    let dst = ds.root().child(&format!("{INDICES_DIR}/{uuid}"))?;
    let files = remap(kind, &src, &dst, index_file_version(ds)?, &|a| moved(a).unwrap_or(Some(a)))
        .map_err(|e| e.context(format_args!("remapping index {:?} after a compaction", index.name)))?;
    Ok(Some(RewrittenIndex {
        old_id: Some(old.clone()),
        new_id: Some(pb::Uuid { uuid: uuid_bytes(&uuid)? }),
        new_index_details: index.index_details.clone(),
        new_index_version: index.index_version.unwrap_or(0).max(0) as u32,
        new_index_files: files.into_iter().map(|(path, size_bytes)| pb::IndexFile { path, size_bytes }).collect(),
    }))
}

/// The compaction hook for lancelet's scalar indices: [`remap_index`]
/// with the compaction's address map (the default of
/// `CompactionOptions::index_remapper`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ScalarIndexRemapper;

impl IndexRemapper for ScalarIndexRemapper {
    fn remap(&self, ds: &Dataset, index: &pb::IndexMetadata, map: &RowAddressMap) -> Result<Option<RewrittenIndex>> {
        remap_index(ds, index, &|a| map.get(a))
    }
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
