//! How a compaction's two transactions change a manifest, and which
//! concurrent commits they can be rebased over.
//!
//! * `ReserveFragments{num_fragments}` (operation 107) only raises
//!   `max_fragment_id` by `num_fragments`: the ids in between belong to the
//!   compaction that reserved them.
//! * `Rewrite{groups, rewritten_indices}` (104): every group's old
//!   fragments leave the fragment list (each must still be there,
//!   unchanged) and its new fragments, which carry reserved ids, go after
//!   the fragments that stay, group by group. An index listed in
//!   `rewritten_indices` is replaced by its remapped version (new uuid,
//!   details, files) whose fragment bitmap moves from each group's old
//!   fragments to its new ones; any other index keeps its bitmap: the
//!   rewritten fragments are gone, the new ones are not indexed and are
//!   scanned. This is what pylance 14 does with the same transaction.
//!   Stable row ids change nothing here: pylance 14's scalar indices store
//!   row *addresses* even then (checked on its BTREE files), so an index
//!   is only valid for new fragments once it has been remapped.
//!
//! Conflicts follow the one table of `table/conflict.rs` (pylance 14's
//! rules): a Rewrite is rebased over Append, ReserveFragments, Project and
//! UpdateConfig, over a Delete, Update, DataReplacement or Rewrite that
//! touched none of its old fragments, and over a CreateIndex whose
//! fragment bitmap misses them; anything else (a Merge, Overwrite,
//! Restore, a change to a rewritten fragment, an index over one) refuses
//! the compaction (`CommitConflictError`; compaction never re-runs).
//! ReserveFragments is refused only by Overwrite and Restore.

use std::collections::HashSet;

use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::proto::table as pb;


/// The old fragment ids of a Rewrite.
pub fn rewritten_ids(r: &pb::transaction::Rewrite) -> HashSet<u64> {
    r.old_fragments.iter().chain(r.groups.iter().flat_map(|g| g.old_fragments.iter())).map(|f| f.id).collect()
}

/// Can a compaction transaction (`mine`: Rewrite or ReserveFragments) be
/// committed after `other`, committed concurrently as `other_version`?
/// (The conflict table's verdict; a re-run verdict is a refusal here.)
pub fn check_compaction(mine: &pb::Transaction, other: &pb::Transaction, other_version: u64) -> Result<()> {
    crate::table::conflict::Rebase::new(mine, None, None).check(other, other_version).map_err(|c| c.into_error())
}

/// The fragment id bound after reserving `n` ids (`prev_max`: the
/// manifest's max_fragment_id, `None` when no fragment ever existed).
pub fn reserve(prev_max: Option<u64>, n: u32) -> Option<u64> {
    match (prev_max, n) {
        (m, 0) => m,
        (Some(m), n) => Some(m + u64::from(n)),
        (None, n) => Some(u64::from(n) - 1),
    }
}

/// Apply a Rewrite to the fragment list of the manifest being built.
pub fn apply_rewrite(fragments: &mut Vec<pb::DataFragment>, r: &pb::transaction::Rewrite) -> Result<()> {
    let mut old: Vec<&pb::DataFragment> = r.old_fragments.iter().collect();
    old.extend(r.groups.iter().flat_map(|g| g.old_fragments.iter()));
    for o in &old {
        match fragments.iter().find(|f| f.id == o.id) {
            None => return Err(Error::Conflict { what: format!("fragment {} was removed by a concurrent commit", o.id) }),
            Some(f) if f != *o => {
                return Err(Error::Conflict { what: format!("fragment {} was changed by a concurrent commit", o.id) })
            }
            Some(_) => {}
        }
    }
    let gone: HashSet<u64> = old.iter().map(|f| f.id).collect();
    fragments.retain(|f| !gone.contains(&f.id));
    let new = r.new_fragments.iter().chain(r.groups.iter().flat_map(|g| g.new_fragments.iter()));
    for f in new {
        if fragments.iter().any(|x| x.id == f.id) {
            return Err(Error::invalid_input(format!("rewrite adds fragment {} but the dataset already has one with that id", f.id)));
        }
        fragments.push(f.clone());
    }
    Ok(())
}

fn bitmap(idx: &pb::IndexMetadata) -> Result<Option<RoaringBitmap>> {
    if idx.fragment_bitmap.is_empty() {
        return Ok(None);
    }
    RoaringBitmap::deserialize_from(&idx.fragment_bitmap[..])
        .map(Some)
        .map_err(|e| Error::corrupt(format!("fragment bitmap of index {:?}: {e}", idx.name)))
}

fn encode_bitmap(b: &RoaringBitmap) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(b.serialized_size());
    b.serialize_into(&mut out).map_err(|e| Error::Internal { what: format!("serializing a fragment bitmap: {e}") })?;
    Ok(out)
}

/// Move an index's coverage from each group's old fragments to its new
/// ones. A group partly covered means the plan mixed indexed and
/// unindexed fragments, which the planner never does.
fn move_coverage(b: &mut RoaringBitmap, groups: &[pb::transaction::RewriteGroup], name: &str) -> Result<()> {
    for g in groups {
        let covered = g.old_fragments.iter().filter(|f| b.contains(f.id as u32)).count();
        if covered == 0 {
            continue;
        }
        if covered != g.old_fragments.len() {
            return Err(Error::invalid_input(format!("a compaction group mixes fragments index {name:?} covers with others")));
        }
        for f in &g.old_fragments {
            b.remove(f.id as u32);
        }
        for f in &g.new_fragments {
            b.insert(f.id as u32);
        }
    }
    Ok(())
}

/// The index section after a Rewrite (see the module docs).
pub fn rewrite_indices(section: Option<pb::IndexSection>, r: &pb::transaction::Rewrite) -> Result<Option<pb::IndexSection>> {
    let Some(mut section) = section else {
        if !r.rewritten_indices.is_empty() {
            return Err(Error::Conflict { what: "the rewrite remaps indices the dataset no longer has".into() });
        }
        return Ok(None);
    };
    for rw in &r.rewritten_indices {
        let old = rw.old_id.as_ref().map(|u| u.uuid.as_slice());
        let idx = section.indices.iter_mut().find(|i| i.uuid.as_ref().map(|u| u.uuid.as_slice()) == old).ok_or_else(|| Error::Conflict {
            what: "the rewrite remaps an index that a concurrent commit replaced or removed".into(),
        })?;
        let mut b = bitmap(idx)?.ok_or_else(|| Error::invalid_input(format!("index {:?} has no fragment bitmap to remap", idx.name)))?;
        move_coverage(&mut b, &r.groups, &idx.name)?;
        idx.fragment_bitmap = encode_bitmap(&b)?;
        idx.uuid = rw.new_id.clone();
        idx.index_details = rw.new_index_details.clone();
        idx.index_version = Some(rw.new_index_version as i32);
        if !rw.new_index_files.is_empty() {
            idx.files = rw.new_index_files.clone();
        }
    }
    Ok(Some(section))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::transaction::new_transaction;
    use pb::transaction::Operation;

    fn frag(id: u64) -> pb::DataFragment {
        pb::DataFragment { id, physical_rows: 10, ..Default::default() }
    }

    fn rewrite(old: &[u64], new: &[u64]) -> pb::transaction::Rewrite {
        pb::transaction::Rewrite {
            groups: vec![pb::transaction::RewriteGroup {
                old_fragments: old.iter().map(|&i| frag(i)).collect(),
                new_fragments: new.iter().map(|&i| frag(i)).collect(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn fragments_after_rewrite() {
        let mut fr: Vec<_> = [0, 1, 2, 3].iter().map(|&i| frag(i)).collect();
        apply_rewrite(&mut fr, &rewrite(&[0, 1], &[5])).unwrap();
        assert_eq!(fr.iter().map(|f| f.id).collect::<Vec<_>>(), vec![2, 3, 5]);
        let mut changed = frag(2);
        changed.physical_rows = 11;
        let mut fr2 = vec![changed, frag(3)];
        assert!(matches!(apply_rewrite(&mut fr2, &rewrite(&[2], &[6])), Err(Error::Conflict { .. })));
        assert!(matches!(apply_rewrite(&mut fr, &rewrite(&[9], &[6])), Err(Error::Conflict { .. })));
        assert_eq!(reserve(Some(9), 3), Some(12));
        assert_eq!(reserve(None, 2), Some(1));
        assert_eq!(reserve(Some(4), 0), Some(4));
    }

    #[test]
    fn conflict_rules() {
        let mine = new_transaction(3, Operation::Rewrite(rewrite(&[0, 1], &[5])));
        let op = |o: Operation| new_transaction(3, o);
        let del = |ids: Vec<u64>| op(Operation::Delete(pb::transaction::Delete { deleted_fragment_ids: ids, ..Default::default() }));
        assert!(check_compaction(&mine, &op(Operation::Append(Default::default())), 4).is_ok());
        assert!(check_compaction(&mine, &op(Operation::Project(Default::default())), 4).is_ok());
        assert!(check_compaction(&mine, &del(vec![2]), 4).is_ok());
        let e = check_compaction(&mine, &del(vec![1]), 4).unwrap_err();
        assert!(matches!(e, Error::Conflict { .. }) && e.to_string().contains("Delete"), "{e}");
        // another compaction: refused only when it rewrote one of ours
        assert!(check_compaction(&mine, &op(Operation::Rewrite(rewrite(&[7], &[8]))), 4).is_ok());
        assert!(check_compaction(&mine, &op(Operation::Rewrite(rewrite(&[1], &[8]))), 4).is_err());
        assert!(check_compaction(&mine, &op(Operation::Merge(Default::default())), 4).is_err());
        // an index that does not say what it covers (or covers a rewritten fragment)
        let index = |bitmap: Vec<u8>| {
            let idx = pb::IndexMetadata { name: "i".into(), fragment_bitmap: bitmap, ..Default::default() };
            op(Operation::CreateIndex(pb::transaction::CreateIndex { new_indices: vec![idx], ..Default::default() }))
        };
        assert!(check_compaction(&mine, &index(Vec::new()), 4).is_err());
        let covers = |ids: &[u32]| encode_bitmap(&ids.iter().copied().collect::<RoaringBitmap>()).unwrap();
        assert!(check_compaction(&mine, &index(covers(&[1, 2])), 4).is_err());
        assert!(check_compaction(&mine, &index(covers(&[2, 3])), 4).is_ok());
        let reserve = new_transaction(3, Operation::ReserveFragments(pb::transaction::ReserveFragments { num_fragments: 1 }));
        assert!(check_compaction(&reserve, &op(Operation::Append(Default::default())), 4).is_ok());
        assert!(check_compaction(&reserve, &op(Operation::Overwrite(Default::default())), 4).is_err());
    }

    #[test]
    fn index_coverage_moves() {
        let b: RoaringBitmap = [0u32, 1, 2].into_iter().collect();
        let idx = pb::IndexMetadata { name: "x_idx".into(), fragment_bitmap: encode_bitmap(&b).unwrap(), ..Default::default() };
        let uuid = |b: u8| Some(pb::Uuid { uuid: vec![b; 16] });
        let idx = pb::IndexMetadata { uuid: uuid(1), ..idx };
        let section = pb::IndexSection { indices: vec![idx] };
        let after = |s: Option<pb::IndexSection>| bitmap(&s.unwrap().indices[0]).unwrap().unwrap().iter().collect::<Vec<_>>();
        // not remapped: the bitmap stays (the new fragments are unindexed)
        let r = rewrite(&[0, 1], &[5, 6]);
        assert_eq!(after(rewrite_indices(Some(section.clone()), &r).unwrap()), vec![0, 1, 2]);
        // remapped: replaced, coverage moves to the new fragments
        let remapped = pb::transaction::RewrittenIndex { old_id: uuid(1), new_id: uuid(2), ..Default::default() };
        let r = pb::transaction::Rewrite { rewritten_indices: vec![remapped.clone()], ..r };
        let out = rewrite_indices(Some(section.clone()), &r).unwrap();
        assert_eq!(out.as_ref().unwrap().indices[0].uuid, uuid(2));
        assert_eq!(after(out), vec![2, 5, 6]);
        let mixed = pb::transaction::Rewrite { rewritten_indices: vec![remapped], ..rewrite(&[2, 3], &[7]) };
        assert!(rewrite_indices(Some(section), &mixed).is_err());
    }
}
