//! A distributed `merge_insert`: tasks write, the driver commits once.
//!
//! The single-process [`super::merge_insert`] scans the dataset and matches
//! keys itself. Distributed, the matching is a join done elsewhere (Spark):
//! the dataset's key columns (with `_rowaddr`, and `_rowid` with stable
//! row ids) are joined with the source on the key columns, and every task
//! gets a slice of the joined rows ([`merge_task`]). A joined row is a
//! source row, a dataset row, or both (a match). The task decides each
//! row's fate with the same rules and helpers as the single-process merge
//! (condition over `source.x` / `target.x`, inserts with nulls for the
//! columns the source lacks, updates keeping the dataset's values of those
//! columns, deletes of unmatched dataset rows under the by-source filter),
//! writes the new rows as staged fragments (updated rows in their own
//! fragments, carrying their row ids when the dataset has stable row ids;
//! inserted rows in others) and returns them with the addresses of the
//! rows it updated or deleted.
//!
//! The addresses of the rows a task updated or deleted are then grouped by
//! fragment, and one task per touched fragment writes its new deletion
//! file ([`super::merge_deletions`]). [`commit_merge`] (the driver) commits
//! one `Update` (`REWRITE_ROWS`) of the staged fragments and deletion
//! files, exactly what the single-process merge commits, through the same
//! conflict table: it is rebased over concurrent appends and over deletes
//! of other rows (merging deletion vectors where both touched a fragment).
//! When a concurrent commit makes the job's reads stale the answer is
//! [`MergeCommit::Rerun`]: the caller runs the whole job again on the
//! latest version (the job's files are its to remove).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, BooleanArray, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use prost::Message;

use crate::error::{Error, Result};
use crate::proto::table as pb;
use crate::table::commit::{commit_or_rerun, Outcome};
use crate::table::conflict::AffectedRows;
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::deletion::deletion_file_path;
use crate::table::ops::merge_deletions::StagedDeletion;
use crate::table::ops::merge_insert::{
    all_field_ids, condition_batch, filter_u32, inserted_rows, plan, updated_rows, MergeInsertParams, MergeStats, WhenMatched,
    WhenNotMatchedBySource, OUT_BATCH,
};
use crate::table::ops::update::MAX_ROWS_PER_FILE;
use crate::table::properties::{CommitProperties, Committed};
use crate::table::row_meta::encode_row_ids;
use crate::table::scan::{RowFilter, ROW_ADDR, ROW_ID};
use crate::table::transaction::new_transaction;
use crate::table::write::{dataset_file_version, stage_fragments, StageTarget};
use pb::transaction::Operation;

/// Prefix of the dataset-side columns of a joined batch: `__t_{column}`,
/// `__t__rowaddr`, `__t__rowid`.
pub const TARGET_PREFIX: &str = "__t_";
/// The joined batch's column that is true where a source row is present.
pub const SOURCE_MARK: &str = "__s";

/// What a distributed merge task does beyond [`MergeInsertParams`].
#[derive(Clone, Default)]
pub struct MergeJob {
    /// The merge.
    pub params: MergeInsertParams,
    /// `when_matched_fail`: any match is an error (pylance's).
    pub fail_on_match: bool,
}

/// What one task wrote and decided.
#[derive(Debug, Default)]
pub struct MergeTaskOutput {
    /// Staged fragments of updated rows (encoded `DataFragment`s).
    pub updated_fragments: Vec<Vec<u8>>,
    /// Staged fragments of inserted rows.
    pub inserted_fragments: Vec<Vec<u8>>,
    /// Addresses of the dataset rows updated or deleted.
    pub affected: Vec<u64>,
    /// Rows counted by this task.
    pub stats: MergeStats,
}

/// The dataset columns the join must carry for the merge (keys first,
/// then the columns the conditions read), checking the job against the
/// dataset and the source schema as the single-process merge does (the
/// same errors, before anything is written).
pub fn merge_columns(ds: &Dataset, source: &Schema, job: &MergeJob) -> Result<Vec<String>> {
    let mut params = job.params.clone();
    // `when_matched_fail` alone is a check that changes nothing: allowed.
    params.insert_not_matched |= job.fail_on_match;
    Ok(plan(ds, source, &params)?.scan_columns)
}

/// Split a joined batch into the source rows (schema: every column not
/// prefixed), the dataset rows (`scan_columns` of the dataset schema, then
/// `_rowaddr`, `_rowid`) and the source-present mask.
fn split(ds: &Dataset, joined: &RecordBatch, scan_columns: &[String]) -> Result<(RecordBatch, RecordBatch, BooleanArray)> {
    let schema = joined.schema();
    let (mut sf, mut sc) = (Vec::new(), Vec::new());
    for (f, c) in schema.fields().iter().zip(joined.columns()) {
        if !f.name().starts_with(TARGET_PREFIX) && f.name() != SOURCE_MARK {
            sf.push(f.as_ref().clone());
            sc.push(c.clone());
        }
    }
    let source = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(sf)),
        sc,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(joined.num_rows())),
    )
    .map_err(|e| Error::invalid_input(format!("merge task: {e}")).with_source(e))?;
    let col = |name: &str| -> Result<&Arc<dyn Array>> {
        joined.column_by_name(name).ok_or_else(|| Error::invalid_input(format!("merge task: the joined rows have no column {name:?}")))
    };
    let (mut tf, mut tc) = (Vec::new(), Vec::new());
    for name in scan_columns {
        let f = ds.schema().field_with_name(name).map_err(|e| Error::Internal { what: e.to_string() })?;
        let c = col(&format!("{TARGET_PREFIX}{name}"))?;
        if !c.data_type().equals_datatype(f.data_type()) {
            return Err(Error::invalid_input(format!(
                "merge task: dataset column {name:?} arrived as {} instead of {}",
                c.data_type(),
                f.data_type()
            )));
        }
        tf.push(f.clone().with_nullable(true));
        tc.push(c.clone());
    }
    for name in [ROW_ADDR, ROW_ID] {
        if let Some(c) = joined.column_by_name(&format!("{TARGET_PREFIX}{name}")) {
            let c = arrow_cast::cast(c, &DataType::UInt64).map_err(Error::internal_arrow)?;
            tf.push(Field::new(name, DataType::UInt64, true));
            tc.push(c);
        }
    }
    let target = RecordBatch::try_new(Arc::new(Schema::new(tf)), tc).map_err(Error::internal_arrow)?;
    let mark = col(SOURCE_MARK)?.as_boolean_opt().ok_or_else(|| Error::invalid_input(format!("merge task: {SOURCE_MARK} is not boolean")))?;
    // null (no source row on this side of an outer join) is false
    let present = BooleanArray::from_iter(mark.iter().map(|v| Some(v == Some(true))));
    Ok((source, target, present))
}

/// The key values of dataset row `row` of `target`, as `a = 1 AND b = x`.
fn key_text(target: &RecordBatch, row: usize, on: &[String]) -> String {
    let opts = arrow_cast::display::FormatOptions::default();
    on.iter()
        .map(|k| {
            let v = target
                .column_by_name(k)
                .and_then(|c| arrow_cast::display::ArrayFormatter::try_new(c.as_ref(), &opts).ok().map(|f| f.value(row).to_string()))
                .unwrap_or_else(|| "?".into());
            format!("{k} = {v}")
        })
        .collect::<Vec<_>>()
        .join(" AND ")
}

fn ambiguous_error(keys: &str) -> Error {
    Error::invalid_input(format!(
        "Ambiguous merge inserts are prohibited: multiple source rows match the same target row on ({keys}). \
         Please ensure each target row is matched by at most one source row."
    ))
}

/// One task of a distributed merge: decide the fate of the rows of
/// `joined` (batches of `schema`; see the module docs for its columns) against `ds` (the
/// version the join read) and write the new rows as staged data files
/// named `{name_prefix}...`. A failed task leaves none of its files.
pub fn merge_task(ds: &Arc<Dataset>, job: &MergeJob, schema: SchemaRef, joined: &[RecordBatch], name_prefix: &str) -> Result<MergeTaskOutput> {
    let joined =
        &arrow_select::concat::concat_batches(&schema, joined).map_err(|e| Error::invalid_input(format!("merge task: {e}")).with_source(e))?;
    let mut out = MergeTaskOutput::default();
    if joined.num_rows() == 0 {
        return Ok(out);
    }
    let params = &job.params;
    let probe = {
        let s = joined.schema();
        Schema::new(s.fields().iter().filter(|f| !f.name().starts_with(TARGET_PREFIX) && f.name() != SOURCE_MARK).cloned().collect::<Vec<_>>())
    };
    let mut pl = {
        let mut p = params.clone();
        p.insert_not_matched |= job.fail_on_match;
        plan(ds, &probe, &p)?
    };
    let (source, target, present) = split(ds, joined, &pl.scan_columns)?;
    let addrs: UInt64Array = target
        .column_by_name(ROW_ADDR)
        .ok_or_else(|| Error::invalid_input("merge task: no __t__rowaddr column"))?
        .as_primitive::<UInt64Type>()
        .clone();
    let ids: Option<UInt64Array> = target.column_by_name(ROW_ID).map(|c| c.as_primitive::<UInt64Type>().clone());
    let stable = ds.has_stable_row_ids();
    if stable && ids.is_none() {
        return Err(Error::invalid_input("merge task: the dataset has stable row ids but the joined rows carry no __t__rowid"));
    }
    let n = joined.num_rows();
    let (mut matched, mut src_only, mut tgt_only) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        match (present.value(i), addrs.is_valid(i)) {
            (true, true) => matched.push(i as u32),
            (true, false) => src_only.push(i as u32),
            (false, true) => tgt_only.push(i as u32),
            (false, false) => {}
        }
    }
    if job.fail_on_match {
        if let Some(&r) = matched.first() {
            return Err(Error::invalid_input(format!(
                "Merge insert failed: found matching row with key values: {}",
                key_text(&target, r as usize, &params.on)
            )));
        }
    }
    // Matched pairs the action applies to (after the condition).
    let mut pairs = UInt32Array::from(matched);
    if let (Some(c), false) = (pl.condition.take(), pairs.is_empty()) {
        let eval = condition_batch(&c, &target, &pairs, &source, &pairs, ds.schema())?;
        let keep = c.filter.evaluate(&eval)?;
        pairs = filter_u32(&pairs, &keep)?;
    }
    let mut updates: Vec<(u64, u64, u32)> = Vec::new();
    match params.when_matched {
        WhenMatched::UpdateAll { .. } => {
            for &r in pairs.values() {
                let id = ids.as_ref().map(|ids| ids.value(r as usize)).unwrap_or(0);
                updates.push((addrs.value(r as usize), id, r));
            }
        }
        WhenMatched::Delete => out.affected.extend(pairs.values().iter().map(|&r| addrs.value(r as usize))),
        WhenMatched::DoNothing => {}
    }
    if !matches!(params.when_matched, WhenMatched::DoNothing) {
        // A dataset row met twice in this task: name its keys.
        let mut seen: Vec<(u64, u32)> = pairs.values().iter().map(|&r| (addrs.value(r as usize), r)).collect();
        seen.sort_unstable();
        if let Some(w) = seen.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(ambiguous_error(&key_text(&target, w[0].1 as usize, &params.on)));
        }
    }
    if let WhenNotMatchedBySource::Delete { .. } = params.when_not_matched_by_source {
        let rows = UInt32Array::from(tgt_only);
        let rows = match &pl.by_source {
            Some(f) if !rows.is_empty() => {
                let keep = f.evaluate(&target)?;
                let keep = arrow_select::take::take(&keep, &rows, None).map_err(Error::internal_arrow)?;
                filter_u32(&rows, keep.as_boolean())?
            }
            _ => rows,
        };
        out.affected.extend(rows.values().iter().map(|&r| addrs.value(r as usize)));
    }
    let deleted = out.affected.len() as u64;
    let inserts: Vec<u32> = if params.insert_not_matched { src_only } else { Vec::new() };

    let version = dataset_file_version(ds.manifest())?;
    let stage = StageTarget {
        root: ds.root(),
        schema: ds.lance_schema(),
        version,
        max_rows_per_file: MAX_ROWS_PER_FILE,
        name_prefix,
        group_bytes: 0,
        place: None,
    };
    let out_schema: SchemaRef = ds.schema().clone();
    let update_batches = updates.chunks(OUT_BATCH).map(|chunk| updated_rows(ds, &source, &out_schema, chunk));
    let mut updated = stage_fragments(&stage, update_batches)?;
    if stable {
        let moved: Vec<u64> = updates.iter().map(|u| u.1).collect();
        let mut start = 0usize;
        for f in updated.iter_mut() {
            let end = start + f.physical_rows as usize;
            f.row_id_sequence = Some(pb::data_fragment::RowIdSequence::InlineRowIds(encode_row_ids(&moved[start..end])));
            start = end;
        }
    }
    let insert_batches = inserts.chunks(OUT_BATCH).map(|chunk| inserted_rows(&source, &out_schema, chunk));
    let inserted = match stage_fragments(&stage, insert_batches) {
        Ok(f) => f,
        Err(e) => {
            let files: Vec<String> = updated.iter().flat_map(|f| f.files.iter().map(|d| format!("data/{}", d.path))).collect();
            crate::table::commit::remove_files(ds.root(), &files);
            return Err(e);
        }
    };
    out.affected.extend(updates.iter().map(|u| u.0));
    out.stats = MergeStats { inserted: inserts.len() as u64, updated: updates.len() as u64, deleted };
    out.updated_fragments = updated.iter().map(|f| f.encode_to_vec()).collect();
    out.inserted_fragments = inserted.iter().map(|f| f.encode_to_vec()).collect();
    Ok(out)
}

/// How [`commit_merge`] ended.
pub enum MergeCommit {
    /// Committed: the new version and the stats.
    Committed(Box<Committed<MergeStats>>),
    /// A concurrent commit changed rows the job read: run the job again on
    /// the latest version (the message says why). Nothing was committed
    /// and the deletion files written for this attempt were removed.
    Rerun(String),
}

fn decode(staged: &[Vec<u8>]) -> Result<Vec<pb::DataFragment>> {
    staged
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let f = pb::DataFragment::decode(b.as_slice())
                .map_err(|e| Error::invalid_input(format!("staged merge fragment #{i} is not a DataFragment: {e}")).with_source(e))?;
            if f.files.is_empty() || f.physical_rows == 0 {
                return Err(Error::invalid_input(format!("staged merge fragment #{i} has no rows")));
            }
            Ok(f)
        })
        .collect()
}

/// Commit a distributed merge of `ds` (the version its tasks read): the
/// tasks' updated fragments (their rows replace rows the staged deletions
/// remove), inserted fragments, and the deletion files tasks staged per
/// touched fragment ([`stage_deletion`](super::merge_deletions::stage_deletion)).
/// Commits one `Update` with `props`' transaction properties. Two staged
/// deletions of one fragment, or one written for another version, are
/// refused (nothing committed). When the commit was rebased over a
/// concurrent delete of the same fragments, the staged files it replaced
/// by merged ones are removed.
pub fn commit_merge(
    ds: &Arc<Dataset>,
    updated_fragments: &[Vec<u8>],
    inserted_fragments: &[Vec<u8>],
    deletions: &[StagedDeletion],
    stats: MergeStats,
    props: &CommitProperties,
) -> Result<MergeCommit> {
    let mut new_fragments = decode(updated_fragments)?;
    new_fragments.extend(decode(inserted_fragments)?);
    if ds.has_stable_row_ids() {
        if let Some(i) = new_fragments.iter().take(updated_fragments.len()).position(|f| f.row_id_sequence.is_none()) {
            return Err(Error::invalid_input(format!(
                "staged merge fragment #{i} of updated rows carries no row ids (the dataset has stable row ids)"
            )));
        }
    }
    let mut affected = AffectedRows::new();
    let (mut updated, mut removed, mut staged_files) = (Vec::new(), Vec::new(), Vec::new());
    for d in deletions {
        let fid = d.fragment_id;
        let i = ds.fragment_index(fid).ok_or_else(|| {
            Error::invalid_input(format!("merge commit: a staged deletion names fragment {fid}, which version {} does not have", ds.version()))
        })?;
        if affected.insert(fid, d.rows.clone()).is_some() {
            return Err(Error::invalid_input(format!("merge commit: fragment {fid} has two staged deletions")));
        }
        match &d.deletion_file {
            Some(f) if f.read_version != ds.version() => {
                return Err(Error::invalid_input(format!(
                    "merge commit: the staged deletion file of fragment {fid} was written for version {}, not {}",
                    f.read_version,
                    ds.version()
                )));
            }
            Some(f) => {
                let mut frag = ds.fragments()[i].clone();
                frag.deletion_file = Some(*f);
                updated.push(frag);
                staged_files.extend(d.path());
            }
            None => removed.push(fid),
        }
    }
    let mut written: Vec<String> = new_fragments.iter().flat_map(|f| f.files.iter().map(|d| format!("data/{}", d.path))).collect();
    written.extend(staged_files.iter().cloned());
    let txn = new_transaction(
        ds.version(),
        Operation::Update(pb::transaction::Update {
            removed_fragment_ids: removed,
            updated_fragments: updated,
            new_fragments,
            fields_modified: vec![],
            fields_for_preserving_frag_bitmap: all_field_ids(ds),
            update_mode: pb::transaction::UpdateMode::RewriteRows as i32,
        }),
    );
    let opts = crate::table::commit::CommitOptions { affected_rows: Some(Arc::new(affected)), owned_files: written, ..props.commit_options() };
    match commit_or_rerun(ds.root(), &txn, &opts)? {
        Outcome::Committed(v) => {
            let new = ds.checkout(VersionRef::Number(v))?;
            // A rebase over a concurrent delete of a touched fragment wrote a
            // merged deletion file in place of the task's.
            let kept: std::collections::HashSet<String> =
                new.fragments().iter().filter_map(|f| f.deletion_file.as_ref().map(|d| deletion_file_path(f.id, d))).collect();
            let stale: Vec<String> = staged_files.into_iter().filter(|p| !kept.contains(p)).collect();
            crate::table::commit::remove_files(ds.root(), &stale);
            Ok(MergeCommit::Committed(Box::new(Committed::new(new, stats))))
        }
        // the kernel removed the owned files (data and deletion files)
        Outcome::Rerun(why) => Ok(MergeCommit::Rerun(why)),
    }
}
