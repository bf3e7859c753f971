//! The index section of the next manifest: how each operation carries,
//! changes or drops the previous version's index entries (as pylance 14).
//!
//! | operation | index entries |
//! |---|---|
//! | Overwrite | none |
//! | Restore | the restored version's |
//! | CreateIndex | `removed_indices` (by uuid) and entries named like a new one go, `new_indices` are added (those whose field no longer exists are left out) |
//! | Rewrite | with stable row ids every `fragment_bitmap` swaps a group's old fragments for its new ones; otherwise each `rewritten_indices` entry gets its new uuid, details, version and files plus the swapped bitmap, and the others keep theirs. A fragment reuse index passed along (deferred remap) replaces any previous one |
//! | Update | fields in `fields_modified` drop the updated fragments from indices on them; with stable row ids and rows rewritten, indices holding row ids (BITMAP, LABEL_LIST) on no field of `fields_for_preserving_frag_bitmap` that cover every fragment rows came from also cover the new fragments whose rows all moved there |
//! | Merge, Project | entries whose field left the schema go |
//! | others | unchanged |
//!
//! Before any of that, when the previous manifest has a
//! `__lance_frag_reuse` index (a deferred remap), every index's bitmap is
//! moved through it: pylance 14 does this at the first commit after a
//! deferred compaction (the compaction's own version keeps the old bitmaps).

use std::collections::HashSet;

use prost::Message;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::index::frag_reuse::{self, FragReuse};
use crate::index::rowset::{fragment_bitmap_bytes, parse_fragment_bitmap};
use crate::index::IndexKind;
use crate::proto::table as pb;
use crate::table::features::STABLE_ROW_IDS;

use pb::transaction::Operation;

fn bitmap(m: &pb::IndexMetadata) -> Result<RoaringBitmap> {
    if m.fragment_bitmap.is_empty() {
        return Ok(RoaringBitmap::new());
    }
    parse_fragment_bitmap(&m.fragment_bitmap)
}

fn set_bitmap(m: &mut pb::IndexMetadata, b: &RoaringBitmap) {
    m.fragment_bitmap = fragment_bitmap_bytes(b.iter());
}

/// Swap each group's old fragments for its new ones when the bitmap holds
/// all of them (a group half covered keeps only what is left).
fn swap_groups(b: &RoaringBitmap, groups: &[(Vec<u64>, Vec<u64>)]) -> RoaringBitmap {
    let mut out = b.clone();
    for (old, new) in groups {
        let held = old.iter().filter(|id| out.contains(**id as u32)).count();
        if held == 0 {
            continue;
        }
        for id in old {
            out.remove(*id as u32);
        }
        if held == old.len() {
            for id in new {
                out.insert(*id as u32);
            }
        }
    }
    out
}

fn field_ids(m: &pb::Manifest) -> HashSet<i32> {
    m.fields.iter().map(|f| f.id).collect()
}

fn is_system(m: &pb::IndexMetadata) -> bool {
    m.name == frag_reuse::NAME
}

/// A fragment of an Update's new ones holds only moved rows (each already
/// has its row id), so the indices may cover it.
fn all_rows_moved(f: &pb::DataFragment) -> bool {
    use pb::data_fragment::RowIdSequence as R;
    match &f.row_id_sequence {
        Some(R::InlineRowIds(b)) => crate::table::rowids::RowIdSequence::decode(b).is_ok_and(|s| s.len() == f.physical_rows),
        _ => false,
    }
}

/// The entries of the next manifest. `prev`: the latest manifest's
/// entries; `restored`: the entries of the version a Restore goes back to;
/// `next`: the manifest being built; `new_fragment_ids`: the ids of its
/// fragments the previous manifest did not have, in order (a Rewrite's
/// new fragments group by group, an Update's new ones); `frag_reuse`: the
/// reuse index a deferred-remap Rewrite adds; `prev_reuse`: the reuse
/// index of the previous manifest, decoded.
pub fn next_indices(
    txn: &pb::Transaction,
    prev: Option<&[pb::IndexMetadata]>,
    restored: Option<&[pb::IndexMetadata]>,
    next: &pb::Manifest,
    new_fragment_ids: &[u64],
    frag_reuse: Option<&pb::IndexMetadata>,
    prev_reuse: Option<&FragReuse>,
) -> Result<Vec<pb::IndexMetadata>> {
    let mut out: Vec<pb::IndexMetadata> = prev.map(<[_]>::to_vec).unwrap_or_default();
    let stable = next.reader_feature_flags & STABLE_ROW_IDS != 0;
    // The commit after a deferred remap moves every index's coverage
    // through the recorded compactions, as pylance 14 does (a group's old
    // fragments, when all covered, become its new ones); untouched bitmaps
    // keep their bytes.
    if let Some(reuse) = prev_reuse {
        for m in out.iter_mut().filter(|m| !is_system(m)) {
            let b = bitmap(m)?;
            let moved = reuse.remap_coverage(&b, false);
            if moved != b {
                set_bitmap(m, &moved);
            }
        }
    }
    match txn.operation.as_ref() {
        Some(Operation::Overwrite(_)) => out.clear(),
        Some(Operation::Restore(_)) => out = restored.map(<[_]>::to_vec).unwrap_or_default(),
        Some(Operation::CreateIndex(c)) => {
            let gone: HashSet<&[u8]> = c.removed_indices.iter().filter_map(|m| m.uuid.as_ref().map(|u| u.uuid.as_slice())).collect();
            let names: HashSet<&str> = c.new_indices.iter().map(|m| m.name.as_str()).collect();
            out.retain(|m| !names.contains(m.name.as_str()) && !m.uuid.as_ref().is_some_and(|u| gone.contains(u.uuid.as_slice())));
            let fields = field_ids(next);
            out.extend(c.new_indices.iter().filter(|m| m.fields.iter().all(|f| fields.contains(f))).cloned());
        }
        Some(Operation::Rewrite(r)) => {
            let mut groups: Vec<(Vec<u64>, Vec<u64>)> = Vec::new();
            let mut new_ids = new_fragment_ids.iter();
            for g in &r.groups {
                let old = g.old_fragments.iter().map(|f| f.id).collect();
                let new = g.new_fragments.iter().map(|_| new_ids.next().copied().unwrap_or(u64::MAX)).collect();
                groups.push((old, new));
            }
            if !r.old_fragments.is_empty() {
                let old = r.old_fragments.iter().map(|f| f.id).collect();
                let new = r.new_fragments.iter().map(|_| new_ids.next().copied().unwrap_or(u64::MAX)).collect();
                groups.push((old, new));
            }
            let deferred = frag_reuse.is_some();
            let mut rewritten = HashSet::new();
            for ri in &r.rewritten_indices {
                let (Some(old), Some(new)) = (&ri.old_id, &ri.new_id) else {
                    return Err(Error::invalid_input("a rewritten index without old or new id"));
                };
                if !rewritten.insert(old.uuid.clone()) {
                    return Err(Error::invalid_input("a compaction rewrote one index twice"));
                }
                let m = out
                    .iter_mut()
                    .find(|m| m.uuid.as_ref().is_some_and(|u| u.uuid == old.uuid))
                    .ok_or_else(|| Error::Conflict { what: "an index the compaction remapped was dropped or replaced concurrently".into() })?;
                let b = swap_groups(&bitmap(m)?, &groups);
                set_bitmap(m, &b);
                m.uuid = Some(new.clone());
                m.index_details = ri.new_index_details.clone().or(m.index_details.take());
                m.index_version = Some(ri.new_index_version as i32);
                m.files = ri.new_index_files.clone();
                // The rewritten files are this dataset's own, even when
                // the old ones were a parent branch's.
                m.base_id = None;
            }
            // Indices holding row ids stay valid; so do all with stable
            // row ids. (Deferred remaps keep the old fragments: queries map
            // them through the reuse index.)
            if !deferred {
                for m in out
                    .iter_mut()
                    .filter(|m| !is_system(m) && !m.uuid.as_ref().is_some_and(|u| r.rewritten_indices.iter().any(|ri| ri.new_id.as_ref() == Some(u))))
                {
                    let kind = m.index_details.as_ref().and_then(|d| IndexKind::from_type_url(&d.type_url));
                    // BTREE holds addresses even with stable row ids; index
                    // types lancelet does not know follow pylance (ids when
                    // the dataset has stable row ids).
                    let keeps_ids = match kind {
                        Some(k) => k.keyed_by_row_id(stable),
                        None => stable,
                    };
                    if keeps_ids {
                        let b = swap_groups(&bitmap(m)?, &groups);
                        set_bitmap(m, &b);
                    }
                }
            }
            if let Some(reuse) = frag_reuse {
                out.retain(|m| m.name != reuse.name);
                out.push(reuse.clone());
            }
        }
        Some(Operation::Update(u)) => {
            let modified: HashSet<i32> = u.fields_modified.iter().map(|f| *f as i32).collect();
            if !modified.is_empty() {
                for m in out.iter_mut().filter(|m| m.fields.iter().any(|f| modified.contains(f))) {
                    let mut b = bitmap(m)?;
                    for f in &u.updated_fragments {
                        b.remove(f.id as u32);
                    }
                    set_bitmap(m, &b);
                }
            }
            let rewrite_rows = u.update_mode == pb::transaction::UpdateMode::RewriteRows as i32;
            if stable && rewrite_rows {
                let moved: Vec<u64> = u.new_fragments.iter().zip(new_fragment_ids).filter(|(f, _)| all_rows_moved(f)).map(|(_, id)| *id).collect();
                let sources: Vec<u64> = u.removed_fragment_ids.iter().copied().chain(u.updated_fragments.iter().map(|f| f.id)).collect();
                let preserving: HashSet<i32> = u.fields_for_preserving_frag_bitmap.iter().map(|f| *f as i32).collect();
                for m in out.iter_mut().filter(|m| !is_system(m)) {
                    let kind = m.index_details.as_ref().and_then(|d| IndexKind::from_type_url(&d.type_url));
                    if !kind.is_some_and(|k| k.keyed_by_row_id(true)) || m.fields.iter().any(|f| preserving.contains(f)) {
                        continue;
                    }
                    let mut b = bitmap(m)?;
                    if !moved.is_empty() && sources.iter().all(|id| b.contains(*id as u32)) {
                        for id in &moved {
                            b.insert(*id as u32);
                        }
                        set_bitmap(m, &b);
                    }
                }
            }
        }
        Some(Operation::Merge(_)) | Some(Operation::Project(_)) => {
            let fields = field_ids(next);
            out.retain(|m| is_system(m) || m.fields.iter().all(|f| fields.contains(f)));
        }
        _ => {}
    }
    Ok(out)
}

/// The index section bytes for `indices` (`None` when there are none).
pub fn encode(indices: Vec<pb::IndexMetadata>) -> Option<Vec<u8>> {
    (!indices.is_empty()).then(|| pb::IndexSection { indices }.encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(name: &str, uuid: u8, field: i32, kind: IndexKind, frags: &[u32]) -> pb::IndexMetadata {
        pb::IndexMetadata {
            uuid: Some(pb::Uuid { uuid: vec![uuid; 16] }),
            fields: vec![field],
            name: name.into(),
            fragment_bitmap: fragment_bitmap_bytes(frags.iter().copied()),
            index_details: Some(prost_types::Any { type_url: kind.type_url().into(), value: vec![] }),
            ..Default::default()
        }
    }

    fn frags(m: &pb::IndexMetadata) -> Vec<u32> {
        bitmap(m).unwrap().iter().collect()
    }

    #[test]
    fn create_replace_drop() {
        let next = pb::Manifest { fields: vec![crate::proto::file::Field { id: 0, ..Default::default() }], ..Default::default() };
        let a = idx("a", 1, 0, IndexKind::BTree, &[0]);
        let a2 = idx("a", 2, 0, IndexKind::BTree, &[0, 1]);
        let txn = |new: Vec<pb::IndexMetadata>, removed: Vec<pb::IndexMetadata>| pb::Transaction {
            operation: Some(Operation::CreateIndex(pb::transaction::CreateIndex { new_indices: new, removed_indices: removed })),
            ..Default::default()
        };
        let out = next_indices(&txn(vec![a2.clone()], vec![a.clone()]), Some(std::slice::from_ref(&a)), None, &next, &[], None, None).unwrap();
        assert_eq!(out, vec![a2.clone()]);
        let out = next_indices(&txn(vec![], vec![a2.clone()]), Some(std::slice::from_ref(&a2)), None, &next, &[], None, None).unwrap();
        assert!(out.is_empty());
        // a new index on a field a concurrent Project dropped is left out
        let gone = idx("b", 3, 7, IndexKind::Bitmap, &[0]);
        let out = next_indices(&txn(vec![gone], vec![]), Some(std::slice::from_ref(&a)), None, &next, &[], None, None).unwrap();
        assert_eq!(out, vec![a]);
    }

    #[test]
    fn rewrite_swaps_fragments() {
        let next = pb::Manifest::default();
        let bt = idx("x", 1, 0, IndexKind::BTree, &[0, 1, 2]);
        let bm = idx("s", 2, 1, IndexKind::Bitmap, &[0, 1, 2]);
        let frag = |id| pb::DataFragment { id, ..Default::default() };
        let rewrite = pb::transaction::Rewrite {
            groups: vec![pb::transaction::RewriteGroup { old_fragments: vec![frag(0), frag(1)], new_fragments: vec![frag(0)] }],
            rewritten_indices: vec![pb::transaction::RewrittenIndex {
                old_id: Some(pb::Uuid { uuid: vec![1; 16] }),
                new_id: Some(pb::Uuid { uuid: vec![9; 16] }),
                new_index_details: bt.index_details.clone(),
                new_index_version: 0,
                new_index_files: vec![pb::IndexFile { path: "page_data.lance".into(), size_bytes: 5 }],
            }],
            ..Default::default()
        };
        let txn = pb::Transaction { operation: Some(Operation::Rewrite(rewrite)), ..Default::default() };
        let out = next_indices(&txn, Some(&[bt, bm]), None, &next, &[5], None, None).unwrap();
        assert_eq!(out[0].uuid.as_ref().unwrap().uuid, vec![9; 16]);
        assert_eq!(frags(&out[0]), vec![2, 5]);
        assert_eq!(out[0].files.len(), 1);
        // plain dataset: the bitmap index was not rewritten, so it keeps its fragments
        assert_eq!(frags(&out[1]), vec![0, 1, 2]);
    }

    #[test]
    fn the_commit_after_a_deferred_remap_moves_bitmaps() {
        use crate::index::frag_reuse::Group;
        let reuse = FragReuse {
            versions: vec![(4, vec![Group::new(vec![(0, 10, 0), (1, 10, 0)], vec![(5, 20)], (0..10u64).chain((1 << 32)..(1 << 32) + 10).collect())])],
        };
        let bt = idx("x", 1, 0, IndexKind::BTree, &[0, 1, 3]);
        let other = idx("y", 2, 1, IndexKind::Bitmap, &[3]);
        let append = pb::Transaction { operation: Some(Operation::Append(Default::default())), ..Default::default() };
        let out = next_indices(&append, Some(&[bt, other.clone()]), None, &pb::Manifest::default(), &[6], None, Some(&reuse)).unwrap();
        assert_eq!(frags(&out[0]), vec![3, 5]);
        assert_eq!(out[1].fragment_bitmap, other.fragment_bitmap, "an untouched bitmap keeps its bytes");
    }

    #[test]
    fn update_extends_row_id_indices() {
        let next = pb::Manifest { reader_feature_flags: STABLE_ROW_IDS, ..Default::default() };
        let bt = idx("x", 1, 0, IndexKind::BTree, &[0, 1, 2]);
        let bm = idx("s", 2, 1, IndexKind::Bitmap, &[0, 1, 2]);
        let ll = idx("l", 3, 2, IndexKind::LabelList, &[0, 1, 2]);
        let seq = crate::proto::table::RowIdSequence {
            segments: vec![pb::U64Segment { segment: Some(pb::u64_segment::Segment::Range(pb::u64_segment::Range { start: 0, end: 5 })) }],
        };
        let newf = pb::DataFragment {
            physical_rows: 5,
            row_id_sequence: Some(pb::data_fragment::RowIdSequence::InlineRowIds(seq.encode_to_vec())),
            ..Default::default()
        };
        let upd = pb::transaction::Update {
            updated_fragments: vec![pb::DataFragment { id: 0, ..Default::default() }],
            new_fragments: vec![newf],
            fields_for_preserving_frag_bitmap: vec![1],
            ..Default::default()
        };
        let txn = pb::Transaction { operation: Some(Operation::Update(upd)), ..Default::default() };
        let out = next_indices(&txn, Some(&[bt, bm, ll]), None, &next, &[3], None, None).unwrap();
        assert_eq!(frags(&out[0]), vec![0, 1, 2]); // BTREE holds addresses
        assert_eq!(frags(&out[1]), vec![0, 1, 2]); // its column changed
        assert_eq!(frags(&out[2]), vec![0, 1, 2, 3]);
    }
}
