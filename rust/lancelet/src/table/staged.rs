//! Distributed writes: many workers write data files for their share of the
//! rows ("staged" fragments), then one driver commits all of them in a
//! single transaction.
//!
//! A staged fragment is the table format's own `DataFragment` message
//! (protobuf, id 0: ids are given when the commit places it), so it can
//! travel between processes as bytes. Workers never touch `_versions/`:
//! until the driver commits, nothing a worker wrote is visible.
//!
//! The plan all workers share is small and plain: the dataset URI, the
//! mode, the version read at planning (`read_version`, 0 for a dataset that
//! does not exist yet), the Arrow schema of the data and the data storage
//! version. From it each worker derives the same Lance schema: for an
//! append, the schema of the dataset at `read_version` (same field ids);
//! otherwise the schema built from the Arrow schema, whose field ids are
//! assigned deterministically in pre-order.
//!
//! Every data file a job writes is named `{name_prefix}{usual name}`. Failed
//! tasks, aborted jobs and losing speculative attempts report nothing, so
//! their files are found by that prefix in `data/` and removed
//! ([`remove_staged_files`]); a commit keeps only the files it references.
//!
//! A task may still be writing when its job is aborted or committed (Spark
//! does not wait for cancelled or speculative attempts). So the driver first
//! marks the job closed (`_staging/{name_prefix}closed`, an empty object)
//! and only then lists and removes files; a task checks the mark after its
//! files are written and, if the job is closed, removes its own files. Every
//! file is thus either listed by the driver or removed by its writer.

use std::collections::HashSet;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use prost::Message;

use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::FileVersion;
use crate::io::{Storage, StorageOptions};
use crate::proto::table as pb;
use crate::table::commit::{commit, CommitOptions};
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::manifest::{list_versions, read_manifest};
use crate::table::properties::{CommitProperties, Committed};
use crate::table::transaction::{new_transaction, BuildOptions};
use crate::table::write::{dataset_file_version, open_root_with, stage_fragments, write_file_version, StageTarget, WriteMetrics, WriteMode};

use pb::transaction::Operation;

/// What every worker of one distributed write agrees on.
#[derive(Debug, Clone)]
pub struct StagePlan {
    /// Dataset location.
    pub uri: String,
    /// create / append / overwrite.
    pub mode: WriteMode,
    /// Latest version when the write was planned (0: no dataset yet).
    pub read_version: u64,
    /// File version asked for (`None`: the dataset's, 2.2 for a new one;
    /// see [`write_file_version`]).
    pub data_storage_version: Option<FileVersion>,
    /// Arrow schema of the data written.
    pub schema: SchemaRef,
    /// Object store settings (credentials, endpoint, …).
    pub storage_options: StorageOptions,
}

/// The latest version of the dataset at `uri`, 0 when there is none.
pub fn latest_version(uri: &str, options: &StorageOptions) -> Result<u64> {
    let root = open_root_with(uri, options)?;
    Ok(list_versions(&root)?.last().map(|l| l.version).unwrap_or(0))
}

impl StagePlan {
    /// True when the write adds to an existing dataset.
    fn appends(&self) -> bool {
        self.mode == WriteMode::Append && self.read_version > 0
    }

    /// The Lance schema and file version the data files get.
    fn target(&self) -> Result<(LanceSchema, FileVersion, Option<Dataset>)> {
        if self.appends() {
            let ds = Dataset::open_with(&self.uri, Some(VersionRef::Number(self.read_version)), &self.storage_options)?;
            let version = write_file_version(true, Some(dataset_file_version(ds.manifest())?), self.data_storage_version)?;
            return Ok((ds.lance_schema().clone(), version, Some(ds)));
        }
        if self.schema.fields().is_empty() {
            return Err(Error::invalid_input("cannot write a dataset with no columns"));
        }
        // an overwrite keeps the version of the dataset it replaces
        let existing = match self.read_version {
            0 => None,
            v => {
                let root = open_root_with(&self.uri, &self.storage_options)?;
                let loc = list_versions(&root)?
                    .into_iter()
                    .find(|l| l.version == v)
                    .ok_or_else(|| Error::not_found(format!("version {v} of dataset {} (the version the write was planned on)", self.uri)))?;
                Some(dataset_file_version(&read_manifest(&root, &loc.name)?.manifest)?)
            }
        };
        let version = write_file_version(false, existing, self.data_storage_version)?;
        Ok((LanceSchema::from_arrow(&self.schema)?, version, None))
    }

    /// Check the data's schema against the target before anything is written.
    pub fn check(&self) -> Result<()> {
        if self.mode == WriteMode::Create && self.read_version > 0 {
            return Err(Error::already_exists(format!("dataset at {} (use mode=\"overwrite\" or \"append\")", self.uri)));
        }
        let (schema, _, _) = self.target()?;
        crate::table::write_schema::write_schema(&schema, &self.schema)?;
        Ok(())
    }
}

/// Write `batches` as new data files (at most `max_rows_per_file` rows each)
/// and return their fragments, encoded, uncommitted.
pub fn write_fragments(
    plan: &StagePlan,
    batches: impl Iterator<Item = Result<RecordBatch>>,
    max_rows_per_file: u64,
    name_prefix: &str,
) -> Result<Vec<Vec<u8>>> {
    check_prefix(name_prefix)?;
    let (schema, version, _) = plan.target()?;
    let root = open_root_with(&plan.uri, &plan.storage_options)?;
    let t = StageTarget { root: &root, schema: &schema, version, max_rows_per_file, name_prefix, group_bytes: 0, place: None };
    Ok(stage_fragments(&t, batches)?.iter().map(|f| f.encode_to_vec()).collect())
}

fn check_prefix(p: &str) -> Result<()> {
    if p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        Ok(())
    } else {
        Err(Error::invalid_input(format!("data file name prefix {p:?} may only hold letters, digits, '-' and '_'")))
    }
}

/// Decode staged fragments and check they fit the plan's schema: every
/// field id a data file names is one of the schema's, none twice (appends
/// may leave out nullable columns, so a subset is fine).
fn decode(plan: &StagePlan, schema: &LanceSchema, staged: &[Vec<u8>]) -> Result<Vec<pb::DataFragment>> {
    let known: HashSet<i32> = schema.fields.iter().flat_map(|f| f.preorder()).map(|f| f.id).collect();
    staged
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let f = pb::DataFragment::decode(bytes.as_slice())
                .map_err(|e| Error::invalid_input(format!("staged fragment #{i} for {} is not a DataFragment: {e}", plan.uri)).with_source(e))?;
            for d in &f.files {
                let mut seen = HashSet::new();
                if let Some(bad) = d.fields.iter().find(|id| !known.contains(id) || !seen.insert(**id)) {
                    return Err(Error::invalid_input(format!(
                        "staged fragment #{i} ({}) was written for another schema (field id {bad} of {:?} is not in the dataset schema or repeats)",
                        d.path, d.fields
                    )));
                }
            }
            if f.files.is_empty() || f.physical_rows == 0 {
                return Err(Error::invalid_input(format!("staged fragment #{i} for {} has no rows", plan.uri)));
            }
            Ok(f)
        })
        .collect()
}

/// Commit staged fragments as one new version (an Append, or an Overwrite
/// that creates or replaces the dataset). Returns the new version.
pub fn commit_fragments(
    plan: &StagePlan,
    staged: &[Vec<u8>],
    enable_stable_row_ids: bool,
    props: &CommitProperties,
) -> Result<Committed<WriteMetrics>> {
    let (schema, version, _) = plan.target()?;
    let fragments = decode(plan, &schema, staged)?;
    let metrics = WriteMetrics::of(&fragments);
    let root = open_root_with(&plan.uri, &plan.storage_options)?;
    let op = if plan.appends() {
        Operation::Append(pb::transaction::Append { fragments })
    } else {
        Operation::Overwrite(pb::transaction::Overwrite {
            fragments,
            schema: schema.to_pb()?,
            schema_metadata: schema.metadata_pb(),
            ..Default::default()
        })
    };
    let txn = new_transaction(plan.read_version, op);
    let opts = CommitOptions {
        build: BuildOptions { enable_stable_row_ids, data_storage_version: version.as_str().to_string() },
        must_not_exist: plan.mode == WriteMode::Create,
        // the staged files belong to the job: `WritePlan.abort` removes them
        owned_files: Vec::new(),
        ..props.commit_options()
    };
    let v = commit(&root, &txn, &opts)?;
    Ok(Committed::new(Dataset::open_with(&plan.uri, Some(VersionRef::Number(v)), &plan.storage_options)?, metrics))
}

/// Directory (under the dataset root) of the closed-job marks.
pub const STAGING_DIR: &str = "_staging";

fn job_mark(uri: &str, options: &StorageOptions, name_prefix: &str) -> Result<Storage> {
    check_prefix(name_prefix)?;
    if name_prefix.is_empty() {
        return Err(Error::invalid_input("a distributed write needs a job prefix"));
    }
    open_root_with(uri, options)?.child(&format!("{STAGING_DIR}/{name_prefix}closed"))
}

/// Mark the job closed (committed or aborted): later task output is void.
pub fn close_job(uri: &str, options: &StorageOptions, name_prefix: &str) -> Result<()> {
    job_mark(uri, options, name_prefix)?.write_all(bytes::Bytes::new())
}

/// Whether [`close_job`] was called for this job.
pub fn job_closed(uri: &str, options: &StorageOptions, name_prefix: &str) -> Result<bool> {
    match job_mark(uri, options, name_prefix)?.size() {
        Ok(_) => Ok(true),
        Err(Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Delete these files of `data/` (missing ones are fine). Returns how many
/// were named.
pub fn remove_data_files(uri: &str, options: &StorageOptions, names: &[String]) -> Result<usize> {
    let data = open_root_with(uri, options)?.child("data")?;
    for name in names {
        if name.contains('/') {
            return Err(Error::invalid_input(format!("{name:?} is not a data file name")));
        }
        match data.child(name)?.delete() {
            Ok(()) | Err(Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(names.len())
}

/// The data file names that staged fragments reference.
pub fn staged_file_names(staged: &[Vec<u8>]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (i, bytes) in staged.iter().enumerate() {
        let f = pb::DataFragment::decode(bytes.as_slice())
            .map_err(|e| Error::invalid_input(format!("staged fragment #{i} is not a DataFragment: {e}")).with_source(e))?;
        out.extend(f.files.into_iter().map(|d| d.path));
    }
    Ok(out)
}

/// Delete the files in `data/` whose names start with `name_prefix`, except
/// those named in `keep`. Returns how many were deleted.
pub fn remove_staged_files(uri: &str, options: &StorageOptions, name_prefix: &str, keep: &[String]) -> Result<usize> {
    check_prefix(name_prefix)?;
    if name_prefix.is_empty() {
        return Err(Error::invalid_input("refusing to remove staged files without a job prefix"));
    }
    let keep: HashSet<&str> = keep.iter().map(|s| s.as_str()).collect();
    let data: Storage = open_root_with(uri, options)?.child("data")?;
    let mut n = 0;
    for (name, _) in data.list()? {
        if name.starts_with(name_prefix) && !keep.contains(name.as_str()) {
            match data.child(&name)?.delete() {
                Ok(()) | Err(Error::NotFound { .. }) => n += 1,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::random_u64;
    use crate::table::scan::{ScanOptions, Scanner};
    use arrow_array::{Array, Int64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    fn batch(start: i64, n: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(start..start + n))]).unwrap()
    }

    fn plan(uri: &str, mode: WriteMode) -> StagePlan {
        StagePlan {
            uri: uri.into(),
            mode,
            read_version: latest_version(uri, &StorageOptions::new()).unwrap(),
            data_storage_version: None,
            schema: batch(0, 0).schema(),
            storage_options: StorageOptions::new(),
        }
    }

    fn xs(uri: &str) -> Vec<i64> {
        let ds = Arc::new(Dataset::open(uri, None).unwrap());
        let mut v: Vec<i64> = Scanner::new(ds, ScanOptions::default())
            .unwrap()
            .collect()
            .unwrap()
            .iter()
            .flat_map(|b| b.column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn staged_write_commit_and_cleanup() {
        let uri = std::env::temp_dir().join(format!("lancelet-staged-{}", random_u64())).to_string_lossy().into_owned();
        let no = StorageOptions::new();
        // two "tasks" stage fragments for a new dataset, the driver commits
        let p = plan(&uri, WriteMode::Overwrite);
        assert_eq!(p.read_version, 0);
        let a = write_fragments(&p, vec![Ok(batch(0, 5))].into_iter(), 3, "job1-").unwrap();
        let b = write_fragments(&p, vec![Ok(batch(5, 2))].into_iter(), 3, "job1-").unwrap();
        assert_eq!((a.len(), b.len()), (2, 1));
        // a losing attempt's files: staged but never committed
        let lost = write_fragments(&p, vec![Ok(batch(100, 1))].into_iter(), 3, "job1-").unwrap();
        assert!(Dataset::open(&uri, None).is_err(), "nothing visible before commit");
        let all: Vec<Vec<u8>> = a.into_iter().chain(b).collect();
        let ds = commit_fragments(&p, &all, false, &Default::default()).unwrap().dataset;
        assert_eq!(ds.version(), 1);
        assert_eq!(xs(&uri), (0..7).collect::<Vec<_>>());
        let keep = staged_file_names(&all).unwrap();
        assert_eq!(remove_staged_files(&uri, &no, "job1-", &keep).unwrap(), staged_file_names(&lost).unwrap().len());
        assert_eq!(xs(&uri), (0..7).collect::<Vec<_>>());
        // append uses the dataset's schema; a fragment for another schema is refused
        let p2 = plan(&uri, WriteMode::Append);
        let c = write_fragments(&p2, vec![Ok(batch(7, 1))].into_iter(), 10, "job2-").unwrap();
        let mut bad = pb::DataFragment::decode(c[0].as_slice()).unwrap();
        bad.files[0].fields = vec![7];
        let e = commit_fragments(&p2, &[bad.encode_to_vec()], false, &Default::default()).unwrap_err();
        assert!(matches!(e, Error::InvalidInput { .. }), "{e}");
        assert!(commit_fragments(&p2, &[b"garbage".to_vec()], false, &Default::default()).is_err());
        commit_fragments(&p2, &c, false, &Default::default()).unwrap();
        assert_eq!(xs(&uri), (0..8).collect::<Vec<_>>());
        // create refuses an existing dataset before writing anything
        assert!(matches!(plan(&uri, WriteMode::Create).check(), Err(Error::AlreadyExists { .. })));
        assert!(remove_staged_files(&uri, &no, "", &[]).is_err());
        // closing a job: its mark is seen, a late task removes its own files
        assert!(!job_closed(&uri, &no, "job3-").unwrap());
        let late = write_fragments(&p2, vec![Ok(batch(50, 1))].into_iter(), 10, "job3-").unwrap();
        close_job(&uri, &no, "job3-").unwrap();
        assert!(job_closed(&uri, &no, "job3-").unwrap());
        let names = staged_file_names(&late).unwrap();
        assert_eq!(remove_data_files(&uri, &no, &names).unwrap(), 1);
        assert_eq!(remove_staged_files(&uri, &no, "job3-", &[]).unwrap(), 0);
        assert!(write_fragments(&p2, std::iter::empty(), 10, "../x").is_err());
        let _ = std::fs::remove_dir_all(&uri);
    }
}
