//! The shared tail of `update` and `merge_insert`: rows were rewritten into
//! new fragments; the old rows are marked deleted and one `Update` (108,
//! `REWRITE_ROWS`) is prepared for the commit loop.
//!
//! With stable row ids the first rows of the new fragments are the moved
//! rows, in order; each new fragment lists their ids as its
//! `RowIdSequence` (rows after them, inserted by merge_insert, get fresh
//! ids when the manifest is built).

use crate::error::{Error, Result};
use crate::proto::table as pb;
use crate::table::commit::remove_files;
use crate::table::conflict::AffectedRows;
use crate::table::dataset::Dataset;
use crate::table::ops::delete::mark_deleted;
use crate::table::ops::retry::Prepared;
use crate::table::row_meta::encode_row_ids;
use crate::table::transaction::new_transaction;

use pb::transaction::Operation;

/// Rows an operation moved into new fragments.
pub(crate) struct MovedRows {
    /// The new fragments (data files written, not committed).
    pub new_fragments: Vec<pb::DataFragment>,
    /// Row ids of the moved rows, in the order they were written (stable
    /// row ids only; empty otherwise).
    pub moved_ids: Vec<u64>,
    /// Rows removed from existing fragments (moved or deleted).
    pub affected: AffectedRows,
    /// `Update.fields_for_preserving_frag_bitmap`.
    pub preserved_fields: Vec<u32>,
}

/// Mark `moved.affected` deleted and prepare the `Update`. `check` runs
/// first (e.g. a last progress report); if it or anything after fails, the
/// files written so far (new data files, deletion files) are removed.
pub(crate) fn prepare_update<T>(ds: &Dataset, moved: MovedRows, check: impl FnOnce() -> Result<()>, result: T) -> Result<Prepared<T>> {
    let MovedRows { mut new_fragments, moved_ids, affected, preserved_fields } = moved;
    let data_files: Vec<String> = new_fragments.iter().flat_map(|f| f.files.iter().map(|d| format!("data/{}", d.path))).collect();
    let marked = (|| {
        check()?;
        assign_moved_ids(&mut new_fragments, &moved_ids)?;
        mark_deleted(ds, &affected)
    })();
    let (updated_fragments, removed_fragment_ids, deletion_files) = match marked {
        Ok(m) => m,
        Err(e) => {
            remove_files(ds.root(), &data_files);
            return Err(e);
        }
    };
    let txn = new_transaction(
        ds.version(),
        Operation::Update(pb::transaction::Update {
            removed_fragment_ids,
            updated_fragments,
            new_fragments,
            fields_modified: vec![],
            fields_for_preserving_frag_bitmap: preserved_fields,
            update_mode: pb::transaction::UpdateMode::RewriteRows as i32,
        }),
    );
    let mut written = data_files;
    written.extend(deletion_files);
    Ok(Prepared { txn: Some(txn), affected: Some(affected), written, result })
}

/// Give the first rows of `fragments` the ids `ids` (in order).
fn assign_moved_ids(fragments: &mut [pb::DataFragment], ids: &[u64]) -> Result<()> {
    let rows: u64 = fragments.iter().map(|f| f.physical_rows).sum();
    if ids.len() as u64 > rows {
        return Err(Error::Internal { what: format!("{} moved row ids for {rows} rows written", ids.len()) });
    }
    let mut start = 0usize;
    for f in fragments.iter_mut() {
        let end = (start + f.physical_rows as usize).min(ids.len());
        if start < end {
            f.row_id_sequence = Some(pb::data_fragment::RowIdSequence::InlineRowIds(encode_row_ids(&ids[start..end])));
        }
        start += f.physical_rows as usize;
    }
    Ok(())
}
