//! Concurrent commits: what to do when another writer committed between a
//! transaction's `read_version` and its commit.
//!
//! The whole policy is one table, [`rule`]: for the operation being
//! committed (`mine`) and each operation committed meanwhile (`theirs`) it
//! answers
//!
//! * [`Rule::Rebase`]: commit on top of theirs (the manifest is rebuilt from
//!   the latest version, so fragment ids, row ids and versions are fresh);
//! * [`Rule::Retry`]: mine was computed from data theirs changed, so the
//!   operation must run again on the latest version. Operations that can
//!   (update, merge_insert, delete: see `table/ops/retry.rs`) re-run up to
//!   `conflict_retries` times; the others fail with `Error::Conflict`
//!   (`CommitConflictError`), as pylance's do;
//! * [`Rule::Refuse`]: theirs makes mine meaningless (an overwrite or a
//!   restore happened): `Error::Conflict`, no re-run;
//! * a rule that depends on which fragments both touch
//!   ([`Rule::RetryIfOverlap`], [`Rule::MergeDeletions`],
//!   [`Rule::RetryIfIndexed`], [`Rule::RefuseIfSameIndex`]).
//!
//! The table follows pylance 14 (Lance's `conflict_resolver.rs`), checked by
//! experiment: e.g. an update over a concurrent `add_columns` re-runs (the
//! rows it rewrote would lack the new column), a `drop_columns` over an
//! append rebases, an `add_columns` over anything that adds or rewrites
//! rows fails.
//!
//! [`Rebase`] applies the table to one transaction: [`Rebase::check`] per
//! concurrent commit, then [`Rebase::finish`], which for a Delete/Update
//! whose fragments only had their deletion files changed by theirs merges
//! the deletion vectors: when none of the rows mine removes was removed by
//! theirs, it writes new deletion files holding both (a fragment left with
//! no live row is removed instead), else it asks for a re-run. A rebased
//! Delete/Update records the version it was rebased on as its
//! `read_version`, as pylance does.

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::table as pb;
use crate::table::deletion::{decode_deletions, deletion_file_path};
use crate::table::fragment::resolve;
use crate::table::hooks::step;

use pb::transaction::Operation;

/// Rows an operation removes from existing fragments: fragment id → the
/// physical offsets (row addresses) it deletes or moves.
pub type AffectedRows = BTreeMap<u64, RoaringBitmap>;

/// The kind of a transaction's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Append,
    Delete,
    Overwrite,
    CreateIndex,
    Rewrite,
    Merge,
    Restore,
    ReserveFragments,
    Update,
    Project,
    UpdateConfig,
    DataReplacement,
    Clone,
    UpdateBases,
    /// No operation, or one this build does not know.
    Unknown,
}

impl Kind {
    /// The kind of an operation.
    pub fn of(op: Option<&Operation>) -> Kind {
        match op {
            Some(Operation::Append(_)) => Kind::Append,
            Some(Operation::Delete(_)) => Kind::Delete,
            Some(Operation::Overwrite(_)) => Kind::Overwrite,
            Some(Operation::CreateIndex(_)) => Kind::CreateIndex,
            Some(Operation::Rewrite(_)) => Kind::Rewrite,
            Some(Operation::Merge(_)) => Kind::Merge,
            Some(Operation::Restore(_)) => Kind::Restore,
            Some(Operation::ReserveFragments(_)) => Kind::ReserveFragments,
            Some(Operation::Update(_)) => Kind::Update,
            Some(Operation::Project(_)) => Kind::Project,
            Some(Operation::UpdateConfig(_)) => Kind::UpdateConfig,
            Some(Operation::DataReplacement(_)) => Kind::DataReplacement,
            Some(Operation::Clone(_)) => Kind::Clone,
            Some(Operation::UpdateBases(_)) => Kind::UpdateBases,
            None => Kind::Unknown,
        }
    }

    /// The operation's name, as in messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Append => "Append",
            Kind::Delete => "Delete",
            Kind::Overwrite => "Overwrite",
            Kind::CreateIndex => "CreateIndex",
            Kind::Rewrite => "Rewrite",
            Kind::Merge => "Merge",
            Kind::Restore => "Restore",
            Kind::ReserveFragments => "ReserveFragments",
            Kind::Update => "Update",
            Kind::Project => "Project",
            Kind::UpdateConfig => "UpdateConfig",
            Kind::DataReplacement => "DataReplacement",
            Kind::Clone => "Clone",
            Kind::UpdateBases => "UpdateBases",
            Kind::Unknown => "an unknown operation",
        }
    }
}

/// What to do about one concurrent commit (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Commit on top of it.
    Rebase,
    /// Run the operation again on the latest version.
    Retry,
    /// Fail with a commit conflict.
    Refuse,
    /// Retry when theirs modified or removed a fragment mine modifies, else rebase.
    RetryIfOverlap,
    /// Delete/Update over Delete/Update: rebase when they touch different
    /// fragments; on shared fragments whose data files theirs left alone,
    /// merge the deletion vectors (retry if a row was removed by both);
    /// otherwise retry.
    MergeDeletions,
    /// Rewrite vs CreateIndex: retry when the index covers a rewritten
    /// fragment (or does not say which it covers), else rebase.
    RetryIfIndexed,
    /// CreateIndex over CreateIndex: refuse when both create an index of the
    /// same name, else rebase (indices are told apart by UUID).
    RefuseIfSameIndex,
}

/// The conflict table: `mine` committed after `theirs` (committed since
/// mine's read version).
pub fn rule(mine: Kind, theirs: Kind) -> Rule {
    use Kind as K;
    use Rule::*;
    // An unknown operation committed meanwhile may have done anything.
    if theirs == K::Unknown {
        return if matches!(mine, K::Overwrite | K::Restore) { Rebase } else { Refuse };
    }
    match mine {
        // Replacing the table (or going back to an old version) wins over
        // anything committed meanwhile; so does a clone.
        K::Overwrite | K::Restore | K::Clone | K::UpdateConfig | K::UpdateBases => Rebase,
        K::Append | K::ReserveFragments => match theirs {
            K::Overwrite | K::Restore => Refuse,
            _ => Rebase,
        },
        K::Delete | K::Update => match theirs {
            K::Append | K::CreateIndex | K::ReserveFragments | K::Project | K::Clone | K::UpdateConfig | K::UpdateBases => Rebase,
            K::Delete | K::Update => MergeDeletions,
            K::Rewrite | K::DataReplacement => RetryIfOverlap,
            // Rows mine rewrote or whose deletion it recorded would miss the
            // new columns' files.
            K::Merge => Retry,
            K::Overwrite | K::Restore | K::Unknown => Refuse,
        },
        K::CreateIndex => match theirs {
            K::Append | K::Delete | K::Update | K::Merge | K::Project | K::ReserveFragments => Rebase,
            K::Clone | K::UpdateConfig | K::UpdateBases | K::DataReplacement => Rebase,
            K::Rewrite => RetryIfIndexed,
            K::CreateIndex => RefuseIfSameIndex,
            K::Overwrite | K::Restore | K::Unknown => Refuse,
        },
        K::Rewrite => match theirs {
            K::Append | K::ReserveFragments | K::Project | K::Clone | K::UpdateConfig | K::UpdateBases => Rebase,
            K::Delete | K::Update | K::Rewrite | K::DataReplacement => RetryIfOverlap,
            K::CreateIndex => RetryIfIndexed,
            K::Merge => Retry,
            K::Overwrite | K::Restore | K::Unknown => Refuse,
        },
        K::Merge => match theirs {
            K::CreateIndex | K::ReserveFragments | K::Clone | K::UpdateConfig | K::UpdateBases => Rebase,
            K::Append | K::Delete | K::Update | K::Rewrite | K::Merge | K::DataReplacement => Retry,
            K::Project | K::Overwrite | K::Restore | K::Unknown => Refuse,
        },
        K::Project => match theirs {
            K::Append | K::Delete | K::Update | K::Rewrite | K::CreateIndex | K::DataReplacement => Rebase,
            K::ReserveFragments | K::Clone | K::UpdateConfig | K::UpdateBases => Rebase,
            // The schema must be recomputed.
            K::Merge | K::Project => Retry,
            K::Overwrite | K::Restore | K::Unknown => Refuse,
        },
        K::DataReplacement => match theirs {
            K::Append | K::Delete | K::Update | K::Merge | K::Project | K::ReserveFragments => Rebase,
            K::Clone | K::UpdateConfig | K::UpdateBases => Rebase,
            K::Rewrite | K::DataReplacement => RetryIfOverlap,
            K::CreateIndex => Retry,
            K::Overwrite | K::Restore | K::Unknown => Refuse,
        },
        K::Unknown => Refuse,
    }
}

/// Why a commit cannot go ahead as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// The operation must run again on the latest version.
    Retry(String),
    /// The operation cannot be committed.
    Refuse(String),
}

impl Conflict {
    /// The error reported when no re-run happens.
    pub fn into_error(self) -> Error {
        match self {
            Conflict::Retry(what) | Conflict::Refuse(what) => Error::Conflict { what },
        }
    }
}

/// Fragment ids an operation modifies or removes (new fragments aside).
pub fn modified_fragments(op: Option<&Operation>) -> HashSet<u64> {
    match op {
        Some(Operation::Delete(d)) => d.updated_fragments.iter().map(|f| f.id).chain(d.deleted_fragment_ids.iter().copied()).collect(),
        Some(Operation::Update(u)) => u.updated_fragments.iter().map(|f| f.id).chain(u.removed_fragment_ids.iter().copied()).collect(),
        Some(Operation::Rewrite(r)) => r.old_fragments.iter().chain(r.groups.iter().flat_map(|g| g.old_fragments.iter())).map(|f| f.id).collect(),
        Some(Operation::DataReplacement(d)) => d.replacements.iter().map(|r| r.fragment_id).collect(),
        Some(Operation::Merge(m)) => m.fragments.iter().map(|f| f.id).collect(),
        _ => HashSet::new(),
    }
}

/// Fragment ids covered by the indices a CreateIndex adds; `None` when one
/// of them does not say.
fn indexed_fragments(op: Option<&Operation>) -> Option<HashSet<u64>> {
    let Some(Operation::CreateIndex(c)) = op else { return Some(HashSet::new()) };
    let mut out = HashSet::new();
    for idx in &c.new_indices {
        if idx.fragment_bitmap.is_empty() {
            return None;
        }
        let bm = RoaringBitmap::deserialize_from(&idx.fragment_bitmap[..]).ok()?;
        out.extend(bm.iter().map(u64::from));
    }
    Some(out)
}

fn new_index_names(op: Option<&Operation>) -> HashSet<&str> {
    match op {
        Some(Operation::CreateIndex(c)) => c.new_indices.iter().map(|i| i.name.as_str()).collect(),
        _ => HashSet::new(),
    }
}

/// (updated fragments, removed fragment ids) of a Delete/Update.
fn delete_parts(op: Option<&Operation>) -> (&[pb::DataFragment], &[u64]) {
    match op {
        Some(Operation::Delete(d)) => (&d.updated_fragments, &d.deleted_fragment_ids),
        Some(Operation::Update(u)) => (&u.updated_fragments, &u.removed_fragment_ids),
        _ => (&[], &[]),
    }
}

/// One transaction being rebased over the commits made since its read
/// version.
pub struct Rebase<'a> {
    txn: pb::Transaction,
    kind: Kind,
    modified: HashSet<u64>,
    /// Fragments mine modifies as they were at its read version, and
    /// whether a concurrent commit changed their deletion file.
    initial: HashMap<u64, (pb::DataFragment, bool)>,
    affected: Option<&'a AffectedRows>,
}

impl<'a> Rebase<'a> {
    /// Start rebasing `txn`. `read_manifest` is the manifest of its read
    /// version (needed only when commits happened since); `affected` the
    /// rows a Delete/Update removes (without them overlapping deletes
    /// re-run instead of merging).
    pub fn new(txn: &pb::Transaction, read_manifest: Option<&pb::Manifest>, affected: Option<&'a AffectedRows>) -> Self {
        let kind = Kind::of(txn.operation.as_ref());
        let modified = modified_fragments(txn.operation.as_ref());
        let initial = read_manifest
            .map(|m| m.fragments.iter().filter(|f| modified.contains(&f.id)).map(|f| (f.id, (f.clone(), false))).collect())
            .unwrap_or_default();
        // A Delete/Update that only removes whole fragments has nothing to
        // merge: any overlap means a re-run.
        let whole_fragments_only = delete_parts(txn.operation.as_ref()).0.is_empty();
        let affected = if whole_fragments_only { None } else { affected };
        Rebase { txn: txn.clone(), kind, modified, initial, affected }
    }

    fn message(&self, other: &pb::Transaction, other_version: u64, why: &str) -> String {
        format!(
            "this {} (read at version {}) conflicts with the {} committed concurrently as version {other_version}{why}",
            self.kind.name(),
            self.txn.read_version,
            Kind::of(other.operation.as_ref()).name(),
        )
    }

    fn retry(&self, other: &pb::Transaction, v: u64) -> Conflict {
        Conflict::Retry(self.message(other, v, "; re-read the dataset and retry"))
    }

    /// Check one commit made since the read version.
    pub fn check(&mut self, other: &pb::Transaction, other_version: u64) -> std::result::Result<(), Conflict> {
        let theirs = Kind::of(other.operation.as_ref());
        let op = other.operation.as_ref();
        match rule(self.kind, theirs) {
            Rule::Rebase => Ok(()),
            Rule::Retry => Err(self.retry(other, other_version)),
            Rule::Refuse => Err(Conflict::Refuse(self.message(other, other_version, ""))),
            Rule::RetryIfOverlap => {
                if modified_fragments(op).is_disjoint(&self.modified) {
                    Ok(())
                } else {
                    Err(self.retry(other, other_version))
                }
            }
            Rule::RetryIfIndexed => {
                let (indexed, rewritten) = match self.kind {
                    Kind::CreateIndex => (indexed_fragments(self.txn.operation.as_ref()), modified_fragments(op)),
                    _ => (indexed_fragments(op), self.modified.clone()),
                };
                match indexed {
                    Some(ids) if ids.is_disjoint(&rewritten) => Ok(()),
                    _ => Err(self.retry(other, other_version)),
                }
            }
            Rule::RefuseIfSameIndex => {
                let mine = new_index_names(self.txn.operation.as_ref());
                if new_index_names(op).is_disjoint(&mine) {
                    Ok(())
                } else {
                    Err(Conflict::Refuse(self.message(other, other_version, " (both create an index of the same name)")))
                }
            }
            Rule::MergeDeletions => self.check_deletions(other, other_version),
        }
    }

    fn check_deletions(&mut self, other: &pb::Transaction, v: u64) -> std::result::Result<(), Conflict> {
        let (updated, removed) = delete_parts(other.operation.as_ref());
        if !updated.iter().map(|f| f.id).chain(removed.iter().copied()).any(|id| self.modified.contains(&id)) {
            return Ok(());
        }
        if self.affected.is_none() {
            return Err(self.retry(other, v));
        }
        for u in updated {
            if let Some((initial, needs_merge)) = self.initial.get_mut(&u.id) {
                // Data files changed (not just the deletion file): no rebase.
                if initial.files != u.files {
                    return Err(self.retry(other, v));
                }
                *needs_merge |= initial.deletion_file != u.deletion_file;
            }
        }
        if removed.iter().any(|id| self.initial.contains_key(id)) {
            return Err(self.retry(other, v));
        }
        Ok(())
    }

    /// The transaction to commit on top of `latest` (version
    /// `latest.version`): deletion vectors merged where needed, and a
    /// Delete/Update's `read_version` moved to the latest version. Writes
    /// the merged deletion files (fail-hook step `"deletion_file"`).
    pub fn finish(mut self, root: &Storage, latest: &pb::Manifest) -> Result<std::result::Result<pb::Transaction, Conflict>> {
        if !matches!(self.kind, Kind::Delete | Kind::Update) {
            return Ok(Ok(self.txn));
        }
        let to_merge: Vec<u64> = self.initial.iter().filter(|(_, (_, m))| *m).map(|(id, _)| *id).collect();
        if !to_merge.is_empty() {
            let Some(affected) = self.affected else {
                return Err(Error::Internal { what: "a delete to rebase has no affected rows".into() });
            };
            let mut new_files: HashMap<u64, pb::DeletionFile> = HashMap::new();
            let mut now_empty: Vec<u64> = Vec::new();
            for id in to_merge {
                let Some(frag) = latest.fragments.iter().find(|f| f.id == id) else {
                    return Ok(Err(Conflict::Retry(format!("fragment {id} was removed by a concurrent commit; re-read the dataset and retry"))));
                };
                let existing = read_deletions(root, latest, frag)?;
                let mine = affected.get(&id).cloned().unwrap_or_default();
                let both = &existing & &mine;
                if !both.is_empty() {
                    let sample: Vec<u32> = both.iter().take(5).collect();
                    return Ok(Err(Conflict::Retry(format!(
                        "this {} and the commit of version {} both removed rows {sample:?} of fragment {id}; re-read the dataset and retry",
                        self.kind.name(),
                        latest.version
                    ))));
                }
                let merged = existing | mine;
                let physical = self.initial.get(&id).map(|(f, _)| f.physical_rows).unwrap_or(frag.physical_rows);
                if merged.len() >= physical && physical > 0 {
                    now_empty.push(id);
                    continue;
                }
                let (kind, bytes) = crate::table::deletion::encode_deletions(&merged)?;
                let d = pb::DeletionFile {
                    file_type: kind as i32,
                    read_version: latest.version,
                    id: crate::ids::random_u64(),
                    num_deleted_rows: merged.len(),
                    base_id: None,
                };
                step(root, "deletion_file")?;
                root.child(&deletion_file_path(id, &d))?.write_new(Bytes::from(bytes))?;
                new_files.insert(id, d);
            }
            let (updated, removed) = match self.txn.operation.as_mut() {
                Some(Operation::Delete(d)) => (&mut d.updated_fragments, &mut d.deleted_fragment_ids),
                Some(Operation::Update(u)) => (&mut u.updated_fragments, &mut u.removed_fragment_ids),
                _ => unreachable!("kind checked above"),
            };
            for f in updated.iter_mut() {
                if let Some(d) = new_files.remove(&f.id) {
                    f.deletion_file = Some(d);
                }
            }
            updated.retain(|f| !now_empty.contains(&f.id));
            for id in now_empty {
                if !removed.contains(&id) {
                    removed.push(id);
                }
            }
        }
        self.txn.read_version = latest.version;
        Ok(Ok(self.txn))
    }
}

/// The deleted offsets of fragment `frag` of manifest `m` (empty without a
/// deletion file).
pub fn read_deletions(root: &Storage, m: &pb::Manifest, frag: &pb::DataFragment) -> Result<RoaringBitmap> {
    let Some(d) = &frag.deletion_file else { return Ok(RoaringBitmap::new()) };
    let rel = deletion_file_path(frag.id, d);
    let rel = rel.strip_prefix("_deletions/").unwrap_or(&rel).to_string();
    let s = resolve(root, &m.base_paths, d.base_id, "_deletions", &rel)?;
    let display = s.display().to_string();
    let bytes = s.read_all()?;
    // Old manifests may lack `physical_rows`: then nothing bounds the offsets.
    let rows = if frag.physical_rows > 0 { frag.physical_rows } else { u64::MAX };
    decode_deletions(d.file_type, bytes, rows).map_err(|e| e.in_file(&display).context(format!("deletion file of fragment {}", frag.id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::transaction::new_transaction;

    const ALL: [Kind; 14] = [
        Kind::Append,
        Kind::Delete,
        Kind::Overwrite,
        Kind::CreateIndex,
        Kind::Rewrite,
        Kind::Merge,
        Kind::Restore,
        Kind::ReserveFragments,
        Kind::Update,
        Kind::Project,
        Kind::UpdateConfig,
        Kind::DataReplacement,
        Kind::Clone,
        Kind::UpdateBases,
    ];

    #[test]
    fn table_rows_of_the_issue() {
        use Kind as K;
        use Rule::*;
        for mine in [K::Update, K::Delete] {
            for t in [K::Append, K::Project, K::CreateIndex] {
                assert_eq!(rule(mine, t), Rebase, "{mine:?} over {t:?}");
            }
            assert_eq!(rule(mine, K::Merge), Retry);
            assert_eq!(rule(mine, K::Delete), MergeDeletions);
            assert_eq!(rule(mine, K::Update), MergeDeletions);
            assert_eq!(rule(mine, K::Rewrite), RetryIfOverlap);
            assert_eq!(rule(mine, K::Overwrite), Refuse);
        }
        for t in [K::Append, K::Delete, K::Update, K::Rewrite] {
            assert_eq!(rule(K::Project, t), Rebase);
        }
        for t in [K::Append, K::Delete, K::Update, K::Rewrite, K::Merge] {
            assert_eq!(rule(K::Merge, t), Retry, "Merge over {t:?}");
        }
        assert_eq!(rule(K::Merge, K::Project), Refuse);
        assert_eq!(rule(K::Rewrite, K::Append), Rebase);
        assert_eq!(rule(K::Rewrite, K::Project), Rebase);
        assert_eq!(rule(K::Rewrite, K::Delete), RetryIfOverlap);
        assert_eq!(rule(K::Rewrite, K::Merge), Retry);
        assert_eq!(rule(K::Rewrite, K::CreateIndex), RetryIfIndexed);
        for t in [K::Append, K::Delete, K::Update, K::Merge, K::Project] {
            assert_eq!(rule(K::CreateIndex, t), Rebase);
        }
        assert_eq!(rule(K::CreateIndex, K::Rewrite), RetryIfIndexed);
        for mine in ALL {
            assert_eq!(rule(mine, K::Unknown), if matches!(mine, K::Overwrite | K::Restore) { Rebase } else { Refuse });
            if !matches!(mine, K::Overwrite | K::Restore | K::Clone | K::UpdateConfig | K::UpdateBases) {
                assert_eq!(rule(mine, K::Overwrite), Refuse, "{mine:?} over Overwrite");
                assert_eq!(rule(mine, K::Restore), Refuse, "{mine:?} over Restore");
            }
        }
    }

    fn frag(id: u64, deletion: Option<u64>) -> pb::DataFragment {
        pb::DataFragment {
            id,
            physical_rows: 10,
            files: vec![pb::DataFile { path: format!("{id}.lance"), ..Default::default() }],
            deletion_file: deletion.map(|d| pb::DeletionFile { id: d, num_deleted_rows: 1, ..Default::default() }),
            ..Default::default()
        }
    }

    fn delete(updated: Vec<pb::DataFragment>, removed: Vec<u64>) -> pb::Transaction {
        new_transaction(
            1,
            Operation::Delete(pb::transaction::Delete { updated_fragments: updated, deleted_fragment_ids: removed, predicate: "x".into() }),
        )
    }

    #[test]
    fn overlapping_deletes() {
        let read = pb::Manifest { fragments: vec![frag(0, None), frag(1, None)], ..Default::default() };
        let mine = delete(vec![frag(0, Some(1))], vec![]);
        let mut affected = AffectedRows::new();
        affected.insert(0, [3u32].into_iter().collect());
        // Theirs touches fragment 1 only: rebase.
        let mut r = Rebase::new(&mine, Some(&read), Some(&affected));
        assert!(r.check(&delete(vec![frag(1, Some(2))], vec![]), 2).is_ok());
        // Theirs changed fragment 0's deletion file: merge later.
        let mut r = Rebase::new(&mine, Some(&read), Some(&affected));
        assert!(r.check(&delete(vec![frag(0, Some(2))], vec![]), 2).is_ok());
        assert!(r.initial[&0].1);
        // Without affected rows: re-run.
        let mut r = Rebase::new(&mine, Some(&read), None);
        assert!(matches!(r.check(&delete(vec![frag(0, Some(2))], vec![]), 2), Err(Conflict::Retry(_))));
        // Theirs removed fragment 0: re-run.
        let mut r = Rebase::new(&mine, Some(&read), Some(&affected));
        assert!(matches!(r.check(&delete(vec![], vec![0]), 2), Err(Conflict::Retry(_))));
        // Theirs rewrote fragment 0's data files: re-run.
        let mut moved = frag(0, Some(2));
        moved.files[0].path = "other.lance".into();
        let mut r = Rebase::new(&mine, Some(&read), Some(&affected));
        assert!(matches!(r.check(&delete(vec![moved], vec![]), 2), Err(Conflict::Retry(_))));
        // Overwrite: refuse.
        let ow = new_transaction(1, Operation::Overwrite(Default::default()));
        let mut r = Rebase::new(&mine, Some(&read), Some(&affected));
        assert!(matches!(r.check(&ow, 2), Err(Conflict::Refuse(_))));
    }

    #[test]
    fn rewrite_and_index() {
        let mut bm = RoaringBitmap::new();
        bm.insert(3);
        let mut bytes = Vec::new();
        bm.serialize_into(&mut bytes).unwrap();
        let idx = |bitmap: Vec<u8>, name: &str| {
            new_transaction(
                1,
                Operation::CreateIndex(pb::transaction::CreateIndex {
                    new_indices: vec![pb::IndexMetadata { name: name.into(), fragment_bitmap: bitmap, ..Default::default() }],
                    removed_indices: vec![],
                }),
            )
        };
        let rewrite = |ids: Vec<u64>| {
            new_transaction(
                1,
                Operation::Rewrite(pb::transaction::Rewrite {
                    groups: vec![pb::transaction::RewriteGroup {
                        old_fragments: ids.into_iter().map(|i| frag(i, None)).collect(),
                        new_fragments: vec![],
                    }],
                    ..Default::default()
                }),
            )
        };
        let mut r = Rebase::new(&rewrite(vec![1, 2]), None, None);
        assert!(r.check(&idx(bytes.clone(), "a"), 2).is_ok());
        let mut r = Rebase::new(&rewrite(vec![3]), None, None);
        assert!(r.check(&idx(bytes.clone(), "a"), 2).is_err());
        let mut r = Rebase::new(&rewrite(vec![1]), None, None);
        assert!(r.check(&idx(vec![], "a"), 2).is_err());
        let mut r = Rebase::new(&idx(bytes.clone(), "a"), None, None);
        assert!(r.check(&rewrite(vec![3]), 2).is_err());
        assert!(r.check(&rewrite(vec![4]), 2).is_ok());
        assert!(r.check(&idx(bytes.clone(), "b"), 2).is_ok());
        assert!(matches!(r.check(&idx(bytes, "a"), 2), Err(Conflict::Refuse(_))));
        // Rewrite over a Delete of a rewritten fragment: retry (= conflict for compaction).
        let mut r = Rebase::new(&rewrite(vec![1, 2]), None, None);
        assert!(r.check(&delete(vec![frag(3, Some(1))], vec![]), 2).is_ok());
        assert!(matches!(r.check(&delete(vec![frag(2, Some(1))], vec![]), 2), Err(Conflict::Retry(_))));
    }
}
