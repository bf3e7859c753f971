//! The `__lance_frag_reuse` system index: compactions run with
//! `defer_index_remap=True` leave indices untouched and record here how
//! rows moved, so queries can map the old row addresses an index returns.
//!
//! Its `index_details` (`FragmentReuseIndexDetails`, protos/table.proto)
//! hold, inline (or in `_indices/{uuid}/{path}` when large), one `Version`
//! per such compaction, oldest first, each a list of groups:
//!
//! * `old_fragments` / `new_fragments`: digests (id, physical rows, deleted
//!   rows) of the fragments a rewrite group replaced and produced;
//! * `changed_row_addrs`: a portable `RoaringTreemap` (u64 LE bitmap count,
//!   then per bitmap u32 LE high bits + a portable Roaring bitmap) of the
//!   old addresses of the rows kept. The k-th of them (in order) became
//!   the k-th row of the new fragments (in order, offsets from 0); rows of
//!   the old fragments not listed were deleted.
//!
//! Coverage moves the same way: an index covering every old fragment of a
//! group covers its new fragments instead.

use prost::Message;
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::table as pb;

/// Name of the index.
pub const NAME: &str = "__lance_frag_reuse";
/// Type URL of its details.
pub const TYPE_URL: &str = "/lance.table.FragmentReuseIndexDetails";

use pb::fragment_reuse_index_details as frd;

/// One rewrite group, ready to map addresses.
#[derive(Debug, Clone)]
pub struct Group {
    /// `(id, physical rows, deleted rows)` of the replaced fragments.
    pub old: Vec<(u64, u64, u64)>,
    /// `(id, physical rows)` of the new fragments.
    pub new: Vec<(u64, u64)>,
    changed: RoaringTreemap,
}

impl Group {
    /// A group from its parts.
    pub fn new(old: Vec<(u64, u64, u64)>, new: Vec<(u64, u64)>, changed: RoaringTreemap) -> Self {
        Group { old, new, changed }
    }

    /// Whether the kept rows account for every live old row and fill the
    /// new fragments exactly (else the addresses cannot be mapped, as after
    /// a compaction of a dataset with stable row ids, which records none).
    pub fn maps_addresses(&self) -> bool {
        let live: u64 = self.old.iter().map(|(_, rows, del)| rows.saturating_sub(*del)).sum();
        let new: u64 = self.new.iter().map(|(_, rows)| rows).sum();
        self.changed.len() == live && live == new
    }

    fn holds(&self, frag: u64) -> bool {
        self.old.iter().any(|(id, _, _)| *id == frag)
    }

    /// New address of old address `a` of this group's fragments (`None`:
    /// deleted).
    fn map(&self, a: u64) -> Option<u64> {
        if !self.changed.contains(a) {
            return None;
        }
        let mut k = self.changed.rank(a) - 1;
        for (id, rows) in &self.new {
            if k < *rows {
                return Some((id << 32) | k);
            }
            k -= rows;
        }
        None
    }

    /// The serialized `changed_row_addrs`.
    pub fn changed_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.changed.serialized_size());
        self.changed.serialize_into(&mut out).expect("vec");
        out
    }

    fn to_pb(&self) -> frd::Group {
        frd::Group {
            changed_row_addrs: self.changed_bytes(),
            old_fragments: self
                .old
                .iter()
                .map(|&(id, physical_rows, num_deleted_rows)| frd::FragmentDigest { id, physical_rows, num_deleted_rows })
                .collect(),
            new_fragments: self.new.iter().map(|&(id, physical_rows)| frd::FragmentDigest { id, physical_rows, num_deleted_rows: 0 }).collect(),
        }
    }
}

/// Every recorded compaction, oldest first: `(dataset version, groups)`.
#[derive(Debug, Clone, Default)]
pub struct FragReuse {
    /// The versions in order.
    pub versions: Vec<(u64, Vec<Group>)>,
}

impl FragReuse {
    /// Decode the details (`dir` is the index's directory, for external
    /// content).
    pub fn from_details(details: &prost_types::Any, dir: &Storage) -> Result<Self> {
        let d = pb::FragmentReuseIndexDetails::decode(details.value.as_slice())
            .map_err(|e| Error::corrupt(format!("fragment reuse index details: {e}")).with_source(e))?;
        let inline = match d.content {
            Some(frd::Content::Inline(c)) => c,
            Some(frd::Content::External(f)) => {
                let s = dir.child(&f.path)?;
                let bytes = s.read_range(f.offset..f.offset + f.size)?;
                frd::InlineContent::decode(bytes)
                    .map_err(|e| Error::corrupt(format!("fragment reuse details in {}: {e}", s.display())).with_source(e))?
            }
            None => return Err(Error::corrupt("fragment reuse index details have no content")),
        };
        let mut versions = Vec::new();
        for v in inline.versions {
            let mut groups = Vec::new();
            for g in v.groups {
                let changed = RoaringTreemap::deserialize_from(g.changed_row_addrs.as_slice())
                    .map_err(|e| Error::corrupt(format!("fragment reuse changed_row_addrs: {e}")).with_source(e))?;
                groups.push(Group {
                    old: g.old_fragments.iter().map(|f| (f.id, f.physical_rows, f.num_deleted_rows)).collect(),
                    new: g.new_fragments.iter().map(|f| (f.id, f.physical_rows)).collect(),
                    changed,
                });
            }
            versions.push((v.dataset_version, groups));
        }
        versions.sort_by_key(|(v, _)| *v);
        Ok(FragReuse { versions })
    }

    /// The details with one more version appended.
    pub fn details_with(&self, version: u64, groups: Vec<Group>) -> prost_types::Any {
        let mut versions: Vec<frd::Version> =
            self.versions.iter().map(|(v, gs)| frd::Version { dataset_version: *v, groups: gs.iter().map(Group::to_pb).collect() }).collect();
        versions.push(frd::Version { dataset_version: version, groups: groups.iter().map(Group::to_pb).collect() });
        let d = pb::FragmentReuseIndexDetails { content: Some(frd::Content::Inline(frd::InlineContent { versions })) };
        prost_types::Any { type_url: TYPE_URL.to_string(), value: d.encode_to_vec() }
    }

    /// Whether fragment `frag` was compacted away by a recorded version.
    pub fn moves(&self, frag: u64) -> bool {
        self.versions.iter().any(|(_, gs)| gs.iter().any(|g| g.holds(frag)))
    }

    /// Where row address `a` is now (`None`: deleted by a compaction).
    pub fn remap(&self, a: u64) -> Option<u64> {
        let mut cur = a;
        for (_, groups) in &self.versions {
            let frag = cur >> 32;
            if let Some(g) = groups.iter().find(|g| g.holds(frag)) {
                cur = g.map(cur)?;
            }
        }
        Some(cur)
    }

    /// The fragments an index covering `bitmap` covers after the recorded
    /// compactions. `addresses`: the index holds row addresses, which move
    /// only with groups that can map them.
    pub fn remap_coverage(&self, bitmap: &RoaringBitmap, addresses: bool) -> RoaringBitmap {
        let mut out = bitmap.clone();
        for (_, groups) in &self.versions {
            for g in groups {
                let held = g.old.iter().filter(|(id, _, _)| out.contains(*id as u32)).count();
                if held == 0 {
                    continue;
                }
                for (id, _, _) in &g.old {
                    out.remove(*id as u32);
                }
                if held == g.old.len() && (!addresses || g.maps_addresses()) {
                    for (id, _) in &g.new {
                        out.insert(*id as u32);
                    }
                }
            }
        }
        out
    }
}

/// The reuse index among a manifest's index entries, decoded (`root`: the
/// dataset root, where details stored in a file live).
pub fn find(indices: &[pb::IndexMetadata], root: &Storage) -> Result<Option<FragReuse>> {
    let Some(entry) = indices.iter().find(|m| m.name == NAME) else { return Ok(None) };
    let details = entry.index_details.as_ref().ok_or_else(|| Error::corrupt("the fragment reuse index has no details"))?;
    let uuid = entry.uuid.as_ref().map(|u| super::meta::uuid_string(&u.uuid)).unwrap_or_default();
    Ok(Some(FragReuse::from_details(details, &root.child(&format!("{}/{uuid}", super::meta::INDICES_DIR))?)?))
}

/// The `__lance_frag_reuse` entry a compaction with `defer_index_remap`
/// commits: `previous` (the dataset's current entry, if any) with one more
/// version, `dataset_version`, recording `groups`; as pylance 14 writes it
/// (no fields, no files, the details inline, the bitmap naming the new
/// fragments).
pub fn deferred_entry(previous: Option<&pb::IndexMetadata>, dir: &Storage, dataset_version: u64, groups: Vec<Group>) -> Result<pb::IndexMetadata> {
    let (history, mut covered) = match previous {
        Some(p) => {
            let d = p.index_details.as_ref().ok_or_else(|| Error::corrupt("fragment reuse index without details"))?;
            let covered = if p.fragment_bitmap.is_empty() {
                RoaringBitmap::new()
            } else {
                RoaringBitmap::deserialize_from(p.fragment_bitmap.as_slice())
                    .map_err(|e| Error::corrupt(format!("fragment reuse index bitmap: {e}")).with_source(e))?
            };
            (FragReuse::from_details(d, dir)?, covered)
        }
        None => (FragReuse::default(), RoaringBitmap::new()),
    };
    for g in &groups {
        for (id, _, _) in &g.old {
            covered.remove(*id as u32);
        }
        for (id, _) in &g.new {
            covered.insert(*id as u32);
        }
    }
    let uuid = crate::ids::new_uuid();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Ok(pb::IndexMetadata {
        uuid: Some(pb::Uuid { uuid: super::meta::uuid_bytes(&uuid)? }),
        fields: Vec::new(),
        name: NAME.to_string(),
        dataset_version,
        fragment_bitmap: super::rowset::fragment_bitmap_bytes(covered.iter()),
        index_details: Some(history.details_with(dataset_version, groups)),
        index_version: Some(0),
        created_at: Some(now.as_millis() as u64),
        base_id: None,
        files: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_addresses_through_versions() {
        // fragments 0 (4 rows, row 1 deleted) and 1 (2 rows) -> fragment 5
        let changed: RoaringTreemap = [0u64, 2, 3, 1 << 32, (1 << 32) | 1].into_iter().collect();
        let g = Group::new(vec![(0, 4, 1), (1, 2, 0)], vec![(5, 5)], changed);
        assert!(g.maps_addresses());
        // then fragment 5 and 6 (3 rows) -> 7 (3 rows) + 8 (5 rows)
        let changed2: RoaringTreemap = (0..5u64).map(|o| (5 << 32) | o).chain((0..3).map(|o| (6 << 32) | o)).collect();
        let g2 = Group::new(vec![(5, 5, 0), (6, 3, 0)], vec![(7, 3), (8, 5)], changed2);
        let r = FragReuse { versions: vec![(3, vec![g]), (5, vec![g2])] };
        assert_eq!(r.remap(0), Some(7 << 32));
        assert_eq!(r.remap(1), None);
        assert_eq!(r.remap(3), Some((7 << 32) | 2));
        assert_eq!(r.remap((1 << 32) | 1), Some((8 << 32) | 1));
        assert_eq!(r.remap((6 << 32) | 2), Some((8 << 32) | 4));
        assert_eq!(r.remap(9 << 32), Some(9 << 32));
        let cov: RoaringBitmap = [0u32, 1, 6, 9].into_iter().collect();
        assert_eq!(r.remap_coverage(&cov, true).iter().collect::<Vec<_>>(), vec![7, 8, 9]);
        let part: RoaringBitmap = [0u32].into_iter().collect();
        assert!(r.remap_coverage(&part, true).is_empty());
        // round trip through the details
        let any = FragReuse::default().details_with(3, r.versions[0].1.clone());
        let dir = Storage::open("memory:///frag_reuse_test").unwrap();
        let back = FragReuse::from_details(&any, &dir).unwrap();
        assert_eq!(back.remap(3), Some((5 << 32) | 2));
    }

    #[test]
    fn empty_groups_do_not_map_addresses() {
        let g = Group::new(vec![(0, 4, 0)], vec![(2, 4)], RoaringTreemap::new());
        assert!(!g.maps_addresses());
        let r = FragReuse { versions: vec![(2, vec![g])] };
        let cov: RoaringBitmap = [0u32].into_iter().collect();
        assert!(r.remap_coverage(&cov, true).is_empty());
        assert_eq!(r.remap_coverage(&cov, false).iter().collect::<Vec<_>>(), vec![2]);
    }
}
