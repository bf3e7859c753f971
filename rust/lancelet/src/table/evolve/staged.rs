//! Distributed `add_columns`: a driver plans, workers each compute the new
//! columns of some fragments, the driver commits one `Merge`.
//!
//! The plan is plain data every worker re-derives the same way: the
//! dataset at `read_version`, the Arrow schema of the new columns and the
//! columns the function reads. New field ids come from that version's
//! manifest, so every worker assigns the same ids. A worker writes one new
//! data file per fragment (named `{job prefix}{usual name}`, like the
//! distributed write of [`crate::table::staged`]) and returns the fragment
//! with that file added, as `DataFragment` bytes. The commit checks that
//! every fragment of `read_version` comes back exactly once, unchanged but
//! for its one new file of the job, and commits a `Merge` read at
//! `read_version`: any commit in between (an append, a delete, ...) makes
//! it a conflict, as a local `add_columns` would be.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::SchemaRef;
use prost::Message;

use super::columns::{commit_merge, with_new_file, write_one, ColumnsPlan, SequentialFn, WriteOptions};
use crate::error::{Error, Result};
use crate::io::StorageOptions;
use crate::proto::table as pb;
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::properties::{CommitProperties, Committed};
use crate::table::write::column_field_ids;

/// What every task of a distributed `add_columns` shares.
#[derive(Debug, Clone)]
pub struct ColumnsJob {
    /// Dataset location.
    pub uri: String,
    /// The version the job computes columns for (and commits on top of).
    pub read_version: u64,
    /// The new columns, as the function returns them.
    pub output: SchemaRef,
    /// Columns the function reads (`None`: all), `_rowid`/`_rowaddr` allowed.
    pub read_columns: Option<Vec<String>>,
    /// Rows per function call (`None`: the default).
    pub batch_size: Option<usize>,
    /// Prefix of every data file the job writes.
    pub name_prefix: String,
    /// Object store settings.
    pub storage_options: StorageOptions,
}

impl ColumnsJob {
    /// The dataset at the job's version and the plan of the new columns.
    pub fn open(&self) -> Result<(Arc<Dataset>, ColumnsPlan)> {
        let ds = Arc::new(Dataset::open_with(&self.uri, Some(VersionRef::Number(self.read_version)), &self.storage_options)?);
        let plan = super::add::plan_function(&ds, &self.output, self.read_columns.as_deref(), self.batch_size)?;
        Ok((ds, plan))
    }

    /// Ids of the fragments a task must process (all of them).
    pub fn fragment_ids(&self) -> Result<Vec<u64>> {
        let (ds, _) = self.open()?;
        Ok(ds.fragments().iter().map(|f| f.id).collect())
    }

    /// Compute and write the new columns of one fragment; returns the
    /// fragment with its new file, encoded.
    pub fn write(&self, fragment_id: u64, f: SequentialFn<'_>) -> Result<Vec<u8>> {
        let (ds, plan) = self.open()?;
        let i = ds
            .fragment_index(fragment_id)
            .ok_or_else(|| Error::invalid_input(format!("fragment {fragment_id} is not in version {} of {}", self.read_version, self.uri)))?;
        let opts = WriteOptions { name_prefix: self.name_prefix.clone() };
        let file = write_one(&ds, i, &plan, &opts, &mut |b| f(b))?;
        Ok(with_new_file(&ds.fragments()[i], file).encode_to_vec())
    }

    /// Commit the staged fragments (any order) as one `Merge`.
    pub fn commit(&self, staged: &[Vec<u8>], props: &CommitProperties) -> Result<Committed<()>> {
        let (ds, plan) = self.open()?;
        let want_fields = column_field_ids(&plan.new.written, crate::table::write::dataset_file_version(ds.manifest())?);
        let mut by_id: HashMap<u64, pb::DataFile> = HashMap::new();
        for (k, bytes) in staged.iter().enumerate() {
            let f = pb::DataFragment::decode(bytes.as_slice())
                .map_err(|e| Error::invalid_input(format!("staged result #{k} is not a fragment: {e}")).with_source(e))?;
            let i = ds.fragment_index(f.id).ok_or_else(|| {
                Error::invalid_input(format!("staged result #{k} is for fragment {}, which version {} does not have", f.id, self.read_version))
            })?;
            let Some(file) = f.files.last().cloned() else {
                return Err(Error::invalid_input(format!("staged result #{k} (fragment {}) has no data files", f.id)));
            };
            let expected = with_new_file(&ds.fragments()[i], file.clone());
            if expected != f || !file.path.starts_with(&self.name_prefix) || file.fields != want_fields {
                return Err(Error::invalid_input(format!(
                    "staged result #{k} (fragment {}) was not written by this job for version {}",
                    f.id, self.read_version
                )));
            }
            if by_id.insert(f.id, file).is_some() {
                return Err(Error::invalid_input(format!("fragment {} was staged twice", f.id)));
            }
        }
        let mut files = Vec::with_capacity(ds.fragments().len());
        let mut missing = Vec::new();
        for f in ds.fragments() {
            match by_id.remove(&f.id) {
                Some(d) => files.push(d),
                None => missing.push(f.id.to_string()),
            }
        }
        if !missing.is_empty() {
            return Err(Error::invalid_input(format!("no staged result for fragment(s) {}", missing.join(", "))));
        }
        Ok(Committed::new(commit_merge(&ds, &plan.new, files, props)?, ()))
    }
}
