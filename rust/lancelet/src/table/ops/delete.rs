//! Deleting rows: `Delete` (101) transactions, as pylance 14 writes them.
//!
//! The predicate is evaluated by a scan that returns only `_rowaddr`. Each
//! fragment with matches gets one new deletion file holding *all* its
//! deleted offsets (old and new; see [`encode_deletions`]); a fragment left
//! without live rows is listed in `deleted_fragment_ids` instead. A delete
//! that matches nothing still commits (an empty Delete), as pylance does.
//!
//! Concurrent commits: see [`crate::table::conflict`]; the deleted row
//! addresses go with the commit so that a concurrent delete of other rows
//! of the same fragment is merged rather than re-run.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Array, UInt64Array};
use bytes::Bytes;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::ids::random_u64;
use crate::proto::table as pb;
use crate::table::commit::remove_files;
use crate::table::conflict::AffectedRows;
use crate::table::dataset::Dataset;
use crate::table::deletion::deletion_file_path;
use crate::table::deletion::encode_deletions;
use crate::table::hooks::step;
use crate::table::ops::retry::{run_with_retries, Prepared};
use crate::table::properties::{CommitProperties, Committed};
use crate::table::scan::{RowFilter, ScanOptions, Scanner};
use crate::table::transaction::new_transaction;

use pb::transaction::Operation;

/// Row addresses (`fragment << 32 | offset`) of the rows matching `filter`,
/// grouped by fragment.
pub(crate) fn matching_addresses(ds: &Arc<Dataset>, filter: Option<Arc<dyn RowFilter>>) -> Result<AffectedRows> {
    let opts = ScanOptions { columns: Some(Vec::new()), filter, with_row_address: true, ..Default::default() };
    let mut per_frag: AffectedRows = BTreeMap::new();
    for b in Scanner::new(ds.clone(), opts)?.collect()? {
        let col = b.column_by_name("_rowaddr").ok_or_else(|| Error::Internal { what: "scan returned no _rowaddr".into() })?;
        let addrs = col.as_any().downcast_ref::<UInt64Array>().ok_or_else(|| Error::Internal { what: "_rowaddr is not u64".into() })?;
        for a in addrs.values().iter() {
            per_frag.entry(a >> 32).or_default().insert(*a as u32);
        }
    }
    Ok(per_frag)
}

/// Fragments after marking `rows` deleted: (updated fragments with their
/// new deletion files, ids of fragments left without live rows, deletion
/// files written relative to the root). Deletion files record
/// `ds.version()` as their read version.
pub(crate) fn mark_deleted(ds: &Dataset, rows: &AffectedRows) -> Result<(Vec<pb::DataFragment>, Vec<u64>, Vec<String>)> {
    let mut written = Vec::new();
    match mark_deleted_into(ds, rows, &mut written) {
        Ok((updated, removed)) => Ok((updated, removed, written)),
        Err(e) => {
            // A failed run leaves none of its deletion files behind.
            remove_files(ds.root(), &written);
            Err(e)
        }
    }
}

fn mark_deleted_into(ds: &Dataset, rows: &AffectedRows, written: &mut Vec<String>) -> Result<(Vec<pb::DataFragment>, Vec<u64>)> {
    let mut updated = Vec::new();
    let mut removed = Vec::new();
    for (&fid, new) in rows {
        if new.is_empty() {
            continue;
        }
        let i = ds.fragment_index(fid).ok_or_else(|| Error::Internal { what: format!("row address in unknown fragment {fid}") })?;
        let mut all: RoaringBitmap = ds.deletions(i)?.unwrap_or_default();
        all |= new;
        if all.len() >= ds.physical_rows(i)? {
            removed.push(fid);
            continue;
        }
        let (kind, bytes) = encode_deletions(&all)?;
        let d = pb::DeletionFile { file_type: kind as i32, read_version: ds.version(), id: random_u64(), num_deleted_rows: all.len(), base_id: None };
        step(ds.root(), "deletion_file")?;
        let rel = deletion_file_path(fid, &d);
        ds.root().child(&rel)?.write_new(Bytes::from(bytes))?;
        written.push(rel);
        let mut f = ds.fragments()[i].clone();
        f.deletion_file = Some(d);
        updated.push(f);
    }
    Ok((updated, removed))
}

/// Delete the rows matching `filter` (`predicate` is its text, recorded in
/// the transaction). Returns the new version and the number of rows
/// deleted (by the run that committed).
pub fn delete_rows(ds: &Arc<Dataset>, filter: Arc<dyn RowFilter>, predicate: &str, props: &CommitProperties) -> Result<Committed<u64>> {
    run_with_retries(ds, props, |ds| {
        let rows = matching_addresses(ds, Some(filter.clone()))?;
        let total: u64 = rows.values().map(|b| b.len()).sum();
        let (updated, removed, written) = mark_deleted(ds, &rows)?;
        let txn = new_transaction(
            ds.version(),
            Operation::Delete(pb::transaction::Delete {
                updated_fragments: updated,
                deleted_fragment_ids: removed,
                predicate: predicate.to_string(),
            }),
        );
        Ok(Prepared { txn: Some(txn), affected: Some(rows), written, result: total })
    })
}

/// Delete the rows matching a SQL predicate.
pub fn delete(ds: &Arc<Dataset>, predicate: &str, props: &CommitProperties) -> Result<Committed<u64>> {
    let filter = crate::expr::parse_filter(predicate, ds.schema())?;
    delete_rows(ds, filter, predicate, props)
}
