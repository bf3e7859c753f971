//! How a compaction's two transactions change a manifest, and which
//! concurrent commits they can be rebased over.
//!
//! * `ReserveFragments{num_fragments}` (operation 107) only raises
//!   `max_fragment_id` by `num_fragments`: the ids in between belong to the
//!   compaction that reserved them.
//! * `Rewrite{groups, rewritten_indices}` (104): every group's old
//!   fragments leave the fragment list (each must still be there,
//!   unchanged) and its new fragments, which carry reserved ids, go after
//!   the fragments that stay, group by group. What happens to the index
//!   section (remapped indices replaced, fragment bitmaps moved, a
//!   deferred remap's `__lance_frag_reuse`) is decided with every other
//!   operation's in `table/index_section.rs`.
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

use crate::error::{Error, Result};
use crate::proto::table as pb;

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
            Some(f) if f != *o => return Err(Error::Conflict { what: format!("fragment {} was changed by a concurrent commit", o.id) }),
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
        let covers = |ids: &[u32]| crate::index::rowset::fragment_bitmap_bytes(ids.iter().copied());
        assert!(check_compaction(&mine, &index(covers(&[1, 2])), 4).is_err());
        assert!(check_compaction(&mine, &index(covers(&[2, 3])), 4).is_ok());
        let reserve = new_transaction(3, Operation::ReserveFragments(pb::transaction::ReserveFragments { num_fragments: 1 }));
        assert!(check_compaction(&reserve, &op(Operation::Append(Default::default())), 4).is_ok());
        assert!(check_compaction(&reserve, &op(Operation::Overwrite(Default::default())), 4).is_err());
    }
}
