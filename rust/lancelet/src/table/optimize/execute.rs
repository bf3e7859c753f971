//! Running one compaction task: read the live rows of its fragments in
//! order and write them into new data files.
//!
//! The new fragments hold every field of the current schema (columns of
//! dropped fields are left behind, as are deleted rows) in one data file
//! each, written in the dataset's data storage version. They get ids only
//! at commit (see [`super::commit`]); with stable row ids they already
//! carry their rows' ids and version sequences ([`super::sequences`]).

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::proto::table as pb;
use crate::table::dataset::Dataset;
use crate::table::scan::{ScanOptions, Scanner};
use crate::table::write::{dataset_file_version, stage_fragments_sized, StageTarget};

use super::plan::{output_sizes, CompactionOptions, CompactionTask};
use super::sequences::{decode_row_ids, decode_versions, rechunk_fragments, OldRows};

use pb::data_fragment::{CreatedAtVersionSequence as Created, LastUpdatedAtVersionSequence as Updated, RowIdSequence as RowIds};

/// What a compaction changed, as pylance counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionMetrics {
    /// Fragments rewritten.
    pub fragments_removed: u64,
    /// Fragments written.
    pub fragments_added: u64,
    /// Data and deletion files of the rewritten fragments.
    pub files_removed: u64,
    /// Data files written.
    pub files_added: u64,
}

impl std::ops::AddAssign for CompactionMetrics {
    fn add_assign(&mut self, o: Self) {
        self.fragments_removed += o.fragments_removed;
        self.fragments_added += o.fragments_added;
        self.files_removed += o.files_removed;
        self.files_added += o.files_added;
    }
}

/// The outcome of one task, to be committed with the others.
#[derive(Debug, Clone, PartialEq)]
pub struct RewriteResult {
    /// The version the task read (its plan's).
    pub read_version: u64,
    /// The fragments replaced, as that version lists them.
    pub old_fragments: Vec<pb::DataFragment>,
    /// The fragments written (id 0 until the commit reserves ids).
    pub new_fragments: Vec<pb::DataFragment>,
    /// Counts for this task.
    pub metrics: CompactionMetrics,
}

fn files_of(frags: &[pb::DataFragment]) -> u64 {
    frags.iter().map(|f| f.files.len() as u64 + u64::from(f.deletion_file.is_some())).sum()
}

/// Bytes of an inline or external sequence.
fn sequence_bytes(ds: &Dataset, inline: Option<&Vec<u8>>, external: Option<&pb::ExternalFile>) -> Result<Option<Vec<u8>>> {
    match (inline, external) {
        (Some(b), _) => Ok(Some(b.clone())),
        (None, Some(ext)) => Ok(Some(ds.root().child(&ext.path)?.read_range(ext.offset..ext.offset + ext.size)?.to_vec())),
        _ => Ok(None),
    }
}

/// What the row id / version rechunking needs from old fragment `i`.
fn old_rows(ds: &Dataset, i: usize) -> Result<OldRows> {
    let f = &ds.fragments()[i];
    let seq = ds.row_id_sequence(i)?.ok_or_else(|| Error::corrupt(format!("fragment {} has no row ids", f.id)))?;
    let rows = seq.len();
    let created = match &f.created_at_version_sequence {
        Some(Created::InlineCreatedAtVersions(b)) => sequence_bytes(ds, Some(b), None)?,
        Some(Created::ExternalCreatedAtVersions(e)) => sequence_bytes(ds, None, Some(e))?,
        None => None,
    };
    let updated = match &f.last_updated_at_version_sequence {
        Some(Updated::InlineLastUpdatedAtVersions(b)) => sequence_bytes(ds, Some(b), None)?,
        Some(Updated::ExternalLastUpdatedAtVersions(e)) => sequence_bytes(ds, None, Some(e))?,
        None => None,
    };
    // As pylance: rows without a created-at version were created at
    // version 1; without a last-updated version, updated when created.
    let created = match created {
        Some(b) => decode_versions(&b)?,
        None if rows == 0 => Vec::new(),
        None => vec![((0..rows).collect(), 1)],
    };
    let updated = match updated {
        Some(b) => decode_versions(&b)?,
        None => created.clone(),
    };
    let deleted = ds.deletions(i)?.map(|d| d.iter().collect()).unwrap_or_default();
    Ok(OldRows { row_ids: decode_row_ids(&seq), created, updated, deleted })
}

/// Give the new fragments the row ids and version sequences of the rows
/// they hold (old fragments at `indices` of `ds`, in order).
fn attach_row_ids(ds: &Dataset, indices: &[usize], new_fragments: &mut [pb::DataFragment]) -> Result<()> {
    let old = indices.iter().map(|&i| old_rows(ds, i)).collect::<Result<Vec<_>>>()?;
    let rows: Vec<u64> = new_fragments.iter().map(|f| f.physical_rows).collect();
    for (f, (ids, created, updated)) in new_fragments.iter_mut().zip(rechunk_fragments(&old, &rows)?) {
        f.row_id_sequence = Some(RowIds::InlineRowIds(ids));
        f.created_at_version_sequence = Some(Created::InlineCreatedAtVersions(created));
        f.last_updated_at_version_sequence = Some(Updated::InlineLastUpdatedAtVersions(updated));
    }
    Ok(())
}

/// Run `task` on `ds` (which must be the version the task was planned on):
/// write the new data files and return the fragments they make. Data file
/// names start with `name_prefix` (distributed jobs tag their files).
pub fn execute_task(ds: &Arc<Dataset>, task: &CompactionTask, options: &CompactionOptions, name_prefix: &str) -> Result<RewriteResult> {
    let mut indices = Vec::with_capacity(task.fragments.len());
    for f in &task.fragments {
        let i = ds.fragment_index(f.id).filter(|&i| ds.fragments()[i] == *f).ok_or_else(|| {
            Error::invalid_input(format!(
                "compaction task fragment {} does not match version {} of {} (run the task on the version it was planned on)",
                f.id,
                ds.version(),
                ds.uri()
            ))
        })?;
        indices.push(i);
    }
    let live: u64 = indices.iter().map(|&i| ds.live_rows(i)).sum::<Result<u64>>()?;
    let sizes = output_sizes(live, options.target_rows_per_fragment);
    let version = dataset_file_version(ds.manifest())?;
    let scan = ScanOptions { fragments: Some(task.fragments.iter().map(|f| f.id).collect()), batch_size: options.batch_size, ..Default::default() };
    let stream = Scanner::new(ds.clone(), scan)?.stream()?;
    let target = StageTarget {
        root: ds.root(),
        schema: ds.lance_schema(),
        version,
        max_rows_per_file: options.target_rows_per_fragment,
        name_prefix,
        group_bytes: 0,
        place: None,
    };
    let mut new_fragments = stage_fragments_sized(&target, &sizes, options.max_bytes_per_file, stream)?;
    let remove_new = |frags: &[pb::DataFragment]| {
        for f in frags.iter().flat_map(|f| &f.files) {
            if let Ok(s) = ds.root().child(&format!("data/{}", f.path)) {
                let _ = s.delete();
            }
        }
    };
    let written: u64 = new_fragments.iter().map(|f| f.physical_rows).sum();
    if written != live {
        remove_new(&new_fragments);
        return Err(Error::corrupt(format!(
            "fragments {:?} of {} list {live} live rows but {written} were read",
            task.fragments.iter().map(|f| f.id).collect::<Vec<_>>(),
            ds.uri()
        )));
    }
    if ds.has_stable_row_ids() {
        if let Err(e) = attach_row_ids(ds, &indices, &mut new_fragments) {
            remove_new(&new_fragments);
            return Err(e);
        }
    }
    let metrics = CompactionMetrics {
        fragments_removed: task.fragments.len() as u64,
        fragments_added: new_fragments.len() as u64,
        files_removed: files_of(&task.fragments),
        files_added: files_of(&new_fragments),
    };
    Ok(RewriteResult { read_version: ds.version(), old_fragments: task.fragments.clone(), new_fragments, metrics })
}
