//! Transactions: what one commit changes and how it turns the previous
//! manifest into the next one (which concurrent commits it can be rebased
//! over is [`crate::table::conflict`]'s table).
//!
//! A commit is described by a `lance.table.Transaction` (protos/transaction.proto):
//! `read_version` (the version the writer started from), a random UUID and
//! one operation. lancelet writes these operations:
//!
//! | operation | made by | manifest built from |
//! |---|---|---|
//! | `Overwrite{fragments, schema, schema_metadata}` | create / overwrite | nothing (new schema; fragment ids restart at 0, as pylance) |
//! | `Append{fragments}` | append / insert | latest fragments + new ones (ids from `max_fragment_id + 1`) |
//! | `Delete{updated_fragments, deleted_fragment_ids, predicate}` | delete | latest fragments, updated ones replaced by id, deleted ones dropped |
//! | `Restore{version}` | restore | the restored version's schema, fragments, config |
//! | `Merge{fragments, schema, …}` | add_columns, merge, casts | its schema and complete fragment list (see [`crate::table::evolve`]) |
//! | `Project{schema}` | drop / rename / nullability | the latest fragments under its schema |
//! | `ReserveFragments{n}`, `Rewrite{groups, ...}` | compaction | see [`crate::table::apply_rewrite`] |
//! | `CreateIndex{new_indices, removed_indices}` | index create / replace / optimize / drop | latest manifest; only the index section changes |
//!
//! Fragments inside an Append/Overwrite transaction carry id 0 and no row
//! ids: both are assigned when the manifest is built, so that a rebased
//! commit gets fresh ids. With stable row ids each new fragment gets the
//! sequence `Range{next_row_id, next_row_id + rows}` and created/last-updated
//! version sequences of one run `Range{0, rows}` → the new version.
//!
//! Feature flags are recomputed on every commit (see [`feature_flags`]).

use std::collections::HashSet;

use prost::Message;

use crate::error::{Error, Result};
use crate::ids::{new_uuid, random_bytes16};
use crate::proto::table as pb;
use crate::table::features::{BASE_PATHS, DELETION_FILES, MIXED_DATA_FILE_VERSIONS, STABLE_ROW_IDS, TABLE_CONFIG};

use pb::transaction::Operation;

/// The `writer_version` lancelet stamps into manifests.
///
/// pylance consults `writer_version` only to decide whether to apply
/// workarounds for bugs of *older Lance releases* (it parses
/// `library == "lance"` plus a semver `version`). A library name it does not
/// know, or a version older than the format features we write, could make
/// it apply such workarounds to our files. We therefore claim the release
/// whose output we reproduce — `lance` 14.0.2 — exactly as it stamps itself,
/// without build metadata: a manifest lancelet writes is then the same size
/// as pylance's for the same table (issue 16 counts bytes on disk), and
/// nothing in the file claims a build pylance never made.
pub fn writer_version() -> pb::WriterVersion {
    pb::WriterVersion { library: "lance".into(), version: "14.0.2".into(), prerelease: None, build_metadata: None }
}

/// A data file name as pylance makes them: 3 random bytes as 24 `0`/`1`
/// characters, then 13 random bytes as 26 hex digits, then `.lance`.
pub fn new_data_file_name() -> String {
    let b = random_bytes16();
    let mut s = String::with_capacity(56);
    for byte in &b[..3] {
        s.push_str(&format!("{byte:08b}"));
    }
    for byte in &b[3..] {
        s.push_str(&format!("{byte:02x}"));
    }
    s.push_str(".lance");
    s
}

/// A new transaction.
pub fn new_transaction(read_version: u64, op: Operation) -> pb::Transaction {
    pb::Transaction { read_version, uuid: new_uuid(), operation: Some(op), ..Default::default() }
}

/// The name of a transaction's file under `_transactions/`.
pub fn transaction_file_name(t: &pb::Transaction) -> String {
    format!("{}-{}.txn", t.read_version, t.uuid)
}

/// Short name of an operation, for messages.
pub fn op_name(op: Option<&Operation>) -> &'static str {
    crate::table::conflict::Kind::of(op).name()
}

/// What a manifest needs besides the previous manifest and the transaction.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Turn stable row ids on (dataset creation only; an existing dataset
    /// keeps its setting).
    pub enable_stable_row_ids: bool,
    /// Data storage version an Overwrite (or a new dataset) records in the
    /// manifest (`"2.2"`, …): the version of the files it writes. Other
    /// operations keep the previous manifest's.
    pub data_storage_version: String,
}

/// Reader and writer feature flags of a manifest, recomputed from its content.
pub fn feature_flags(m: &pb::Manifest, stable: bool) -> (u64, u64) {
    let mut r = 0;
    if m.fragments.iter().any(|f| f.deletion_file.is_some()) {
        r |= DELETION_FILES;
    }
    if stable {
        r |= STABLE_ROW_IDS;
    }
    let versions: HashSet<(u32, u32)> = m.fragments.iter().flat_map(|f| &f.files).map(|d| (d.file_major_version, d.file_minor_version)).collect();
    if versions.len() > 1 {
        r |= MIXED_DATA_FILE_VERSIONS;
    }
    // Files under other roots (branches, clones): pylance 14 sets the flag
    // whenever bases are registered, used or not, for readers and writers.
    if !m.base_paths.is_empty() {
        r |= BASE_PATHS;
    }
    let mut w = r;
    if !m.config.is_empty() {
        w |= TABLE_CONFIG;
    }
    (r, w)
}

fn range_segment(start: u64, end: u64) -> pb::U64Segment {
    pb::U64Segment { segment: Some(pb::u64_segment::Segment::Range(pb::u64_segment::Range { start, end })) }
}

/// A one-run version sequence: every one of `rows` rows at `version`.
pub fn version_sequence(rows: u64, version: u64) -> Vec<u8> {
    pb::RowDatasetVersionSequence { runs: vec![pb::RowDatasetVersionRun { span: Some(range_segment(0, rows)), version }] }.encode_to_vec()
}

/// Give new fragments ids (and row ids / version sequences with stable row ids).
/// Ids and row ids continue counters read from the previous manifest, so
/// running out of them is a corrupt manifest, not an overflow.
fn place_new(frags: &[pb::DataFragment], next_id: &mut u64, next_row_id: Option<&mut u64>, version: u64) -> Result<Vec<pb::DataFragment>> {
    use pb::data_fragment::{CreatedAtVersionSequence as C, LastUpdatedAtVersionSequence as L, RowIdSequence as R};
    let mut out = Vec::with_capacity(frags.len());
    let mut rid = next_row_id;
    for f in frags {
        let mut f = f.clone();
        f.id = *next_id;
        *next_id =
            next_id.checked_add(1).ok_or_else(|| Error::corrupt("fragment ids exhausted (the latest manifest's max_fragment_id is 2^64 - 1)"))?;
        if let Some(n) = rid.as_deref_mut() {
            if f.row_id_sequence.is_none() {
                let end = n
                    .checked_add(f.physical_rows)
                    .ok_or_else(|| Error::corrupt(format!("row ids exhausted: next_row_id {n} + {} rows overflows", f.physical_rows)))?;
                let seq = pb::RowIdSequence { segments: vec![range_segment(*n, end)] };
                f.row_id_sequence = Some(R::InlineRowIds(seq.encode_to_vec()));
                *n = end;
                let vs = version_sequence(f.physical_rows, version);
                f.last_updated_at_version_sequence = Some(L::InlineLastUpdatedAtVersions(vs.clone()));
                f.created_at_version_sequence = Some(C::InlineCreatedAtVersions(vs));
            }
        }
        out.push(f);
    }
    Ok(out)
}

/// Replace fragments by id and drop removed ones (a Delete's or Update's
/// changes to existing fragments).
fn replace_and_remove(fragments: &mut Vec<pb::DataFragment>, updated: &[pb::DataFragment], removed: &[u64]) -> Result<()> {
    for u in updated {
        let Some(slot) = fragments.iter_mut().find(|f| f.id == u.id) else {
            return Err(Error::Conflict { what: format!("fragment {} was removed by a concurrent commit", u.id) });
        };
        *slot = u.clone();
    }
    for id in removed {
        if !fragments.iter().any(|f| f.id == *id) {
            return Err(Error::Conflict { what: format!("fragment {id} was removed by a concurrent commit") });
        }
    }
    let gone: HashSet<u64> = removed.iter().copied().collect();
    fragments.retain(|f| !gone.contains(&f.id));
    Ok(())
}

/// Build the manifest of `version` from the latest manifest (`prev`, `None`
/// for a new dataset) and the transaction. `restore_from` is the manifest of
/// the version a Restore goes back to; `root` (the dataset) is read only
/// for row metadata kept outside the manifest.
pub fn build_manifest(
    prev: Option<&pb::Manifest>,
    txn: &pb::Transaction,
    version: u64,
    opts: &BuildOptions,
    restore_from: Option<&pb::Manifest>,
    root: Option<&crate::io::Storage>,
) -> Result<pb::Manifest> {
    let stable = match prev {
        Some(p) => p.reader_feature_flags & STABLE_ROW_IDS != 0,
        None => opts.enable_stable_row_ids,
    };
    let mut next_row_id = prev.map(|p| p.next_row_id).unwrap_or(0);
    let prev_max = prev.and_then(|p| p.max_fragment_id.map(u64::from).or_else(|| p.fragments.iter().map(|f| f.id).max()));
    let mut m = pb::Manifest { version, writer_version: Some(writer_version()), ..Default::default() };
    if let Some(p) = prev {
        m.fields = p.fields.clone();
        m.schema_metadata = p.schema_metadata.clone();
        m.config = p.config.clone();
        m.table_metadata = p.table_metadata.clone();
        m.data_format = p.data_format.clone();
        m.base_paths = p.base_paths.clone();
        m.fragments = p.fragments.clone();
        // A branch's versions stay on it (see table/branches.rs).
        m.branch = p.branch.clone();
    }
    let need_prev = || prev.ok_or_else(|| Error::not_found(format!("a dataset to apply {} to", op_name(txn.operation.as_ref()))));
    let mut max_id = prev_max;
    match txn.operation.as_ref() {
        Some(Operation::Overwrite(o)) => {
            m.fields = o.schema.clone();
            m.schema_metadata = o.schema_metadata.clone();
            m.config.extend(o.config_upsert_values.clone());
            // The manifest names the version of the files the overwrite wrote
            // (pylance refuses files newer than the manifest's version).
            m.data_format = Some(pb::DataStorageFormat { file_format: "lance".into(), version: opts.data_storage_version.clone() });
            // Bases registered at creation (ids given by the writer); an
            // overwrite keeps the bases already registered.
            m.base_paths.extend(o.initial_bases.iter().cloned());
            let mut next = 0u64;
            m.fragments = place_new(&o.fragments, &mut next, stable.then_some(&mut next_row_id), version)?;
            max_id = m.fragments.iter().map(|f| f.id).max();
        }
        Some(Operation::Append(a)) => {
            need_prev()?;
            let mut next = match prev_max {
                Some(x) => x.checked_add(1).ok_or_else(|| Error::corrupt("fragment ids exhausted (max_fragment_id is 2^64 - 1)"))?,
                None => 0,
            };
            let new = place_new(&a.fragments, &mut next, stable.then_some(&mut next_row_id), version)?;
            m.fragments.extend(new);
            max_id = m.fragments.iter().map(|f| f.id).max().max(prev_max);
        }
        Some(Operation::Delete(d)) => {
            need_prev()?;
            replace_and_remove(&mut m.fragments, &d.updated_fragments, &d.deleted_fragment_ids)?;
        }
        Some(Operation::Update(u)) => {
            let p = need_prev()?;
            replace_and_remove(&mut m.fragments, &u.updated_fragments, &u.removed_fragment_ids)?;
            // Rewritten and inserted rows go to new fragments after the
            // existing ones.
            let mut next = prev_max.map(|x| x + 1).unwrap_or(0);
            let mut new = u.new_fragments.clone();
            for f in new.iter_mut() {
                f.id = next;
                next += 1;
            }
            if stable {
                let touched: HashSet<u64> = u.updated_fragments.iter().map(|f| f.id).chain(u.removed_fragment_ids.iter().copied()).collect();
                let sources: Vec<&pb::DataFragment> = p.fragments.iter().filter(|f| touched.contains(&f.id)).collect();
                crate::table::row_meta::place_moved_rows(&mut new, &sources, root, &mut next_row_id, version)?;
            }
            m.fragments.extend(new);
            max_id = m.fragments.iter().map(|f| f.id).max().max(prev_max);
        }
        Some(Operation::Merge(op)) => {
            need_prev()?;
            // The Merge's schema and complete fragment list replace the
            // previous ones.
            m.fields = op.schema.clone();
            m.schema_metadata = op.schema_metadata.clone();
            m.fragments = op.fragments.clone();
            max_id = m.fragments.iter().map(|f| f.id).max().max(prev_max);
        }
        Some(Operation::Project(op)) => {
            need_prev()?;
            // Only the schema changes (metadata stays).
            m.fields = op.schema.clone();
        }
        Some(Operation::ReserveFragments(r)) => {
            need_prev()?;
            max_id = crate::table::apply_rewrite::reserve(prev_max, r.num_fragments);
        }
        Some(Operation::Rewrite(r)) => {
            need_prev()?;
            crate::table::apply_rewrite::apply_rewrite(&mut m.fragments, r)?;
            max_id = prev_max.max(m.fragments.iter().map(|f| f.id).max());
        }
        Some(Operation::CreateIndex(_)) => {
            // Only the index section changes (see index_section.rs).
            need_prev()?;
        }
        Some(Operation::UpdateBases(u)) => {
            need_prev()?;
            crate::table::bases::apply_update(&mut m, &u.new_bases)?;
        }
        Some(Operation::Restore(r)) => {
            need_prev()?;
            let old = restore_from.ok_or_else(|| Error::not_found(format!("version {} to restore", r.version)))?;
            m.fields = old.fields.clone();
            m.schema_metadata = old.schema_metadata.clone();
            m.config = old.config.clone();
            m.table_metadata = old.table_metadata.clone();
            m.data_format = old.data_format.clone();
            m.base_paths = old.base_paths.clone();
            m.fragments = old.fragments.clone();
            next_row_id = next_row_id.max(old.next_row_id);
            max_id = prev_max.max(old.max_fragment_id.map(u64::from));
        }
        other => return Err(Error::unsupported(format!("lancelet cannot commit {} transactions", op_name(other)))),
    }
    m.max_fragment_id = match max_id {
        Some(x) => Some(u32::try_from(x).map_err(|_| Error::invalid_input(format!("fragment id {x} does not fit in 32 bits")))?),
        None => prev.and_then(|p| p.max_fragment_id),
    };
    if stable {
        m.next_row_id = next_row_id;
    }
    let (r, w) = feature_flags(&m, stable);
    m.reader_feature_flags = r;
    m.writer_feature_flags = w;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    m.timestamp = Some(prost_types::Timestamp { seconds: now.as_secs() as i64, nanos: now.subsec_nanos() as i32 });
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::random_u64;

    fn frag(rows: u64) -> pb::DataFragment {
        pb::DataFragment {
            physical_rows: rows,
            files: vec![pb::DataFile { path: "a.lance".into(), file_major_version: 2, file_minor_version: 2, ..Default::default() }],
            ..Default::default()
        }
    }

    #[test]
    fn writer_version_is_pylances_own_stamp() {
        // Every manifest of the pylance 14.0.2 fixtures carries the stamp lancelet writes.
        for ds in ["two_versions", "deletion_arrow", "stable_row_ids"] {
            let dir = crate::testdata::pylance14(&format!("{ds}/_versions"));
            let mut seen = 0;
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                if entry.path().extension().is_some_and(|x| x == "manifest") {
                    let bytes = bytes::Bytes::from(std::fs::read(entry.path()).unwrap());
                    let m = crate::table::manifest::decode_manifest(bytes).unwrap().manifest;
                    assert_eq!(m.writer_version, Some(writer_version()), "{}", entry.path().display());
                    seen += 1;
                }
            }
            assert!(seen > 0, "no manifest under {}", dir.display());
        }
    }

    #[test]
    fn names_and_uuids() {
        let n = new_data_file_name();
        assert_eq!(n.len(), 56);
        assert!(n[..24].bytes().all(|b| b == b'0' || b == b'1'));
        assert!(n[24..50].bytes().all(|b| b.is_ascii_hexdigit()));
        let u = new_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(new_uuid(), new_uuid());
        assert_ne!(random_u64(), random_u64());
    }

    #[test]
    fn build_create_append_delete() {
        let opts = BuildOptions { enable_stable_row_ids: true, data_storage_version: "2.2".into() };
        let t = new_transaction(0, Operation::Overwrite(pb::transaction::Overwrite { fragments: vec![frag(10), frag(5)], ..Default::default() }));
        let m1 = build_manifest(None, &t, 1, &opts, None, None).unwrap();
        assert_eq!(m1.fragments.iter().map(|f| f.id).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(m1.next_row_id, 15);
        assert_eq!(m1.max_fragment_id, Some(1));
        assert_eq!((m1.reader_feature_flags, m1.writer_feature_flags), (2, 2));
        let t = new_transaction(1, Operation::Append(pb::transaction::Append { fragments: vec![frag(3)] }));
        let m2 = build_manifest(Some(&m1), &t, 2, &BuildOptions::default(), None, None).unwrap();
        assert_eq!(m2.fragments[2].id, 2);
        assert_eq!(m2.next_row_id, 18);
        let seq = crate::table::rowids::RowIdSequence::decode(match &m2.fragments[2].row_id_sequence {
            Some(pb::data_fragment::RowIdSequence::InlineRowIds(b)) => b,
            _ => panic!(),
        })
        .unwrap();
        assert_eq!(seq.to_vec(), vec![15, 16, 17]);
        let mut upd = m2.fragments[0].clone();
        upd.deletion_file = Some(pb::DeletionFile { num_deleted_rows: 1, ..Default::default() });
        let del = new_transaction(
            2,
            Operation::Delete(pb::transaction::Delete { updated_fragments: vec![upd], deleted_fragment_ids: vec![1], predicate: "x".into() }),
        );
        let m3 = build_manifest(Some(&m2), &del, 3, &BuildOptions::default(), None, None).unwrap();
        assert_eq!(m3.fragments.len(), 2);
        assert_eq!(m3.reader_feature_flags, 3);
        assert_eq!(m3.max_fragment_id, Some(2));
    }
}
