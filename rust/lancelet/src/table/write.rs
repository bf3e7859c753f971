//! Writing datasets: create / append / overwrite from a stream of record
//! batches, restore an old version (deleting rows: [`crate::table::ops::delete`]).
//!
//! Data is streamed: batches go straight into a [`FileWriter`]; a new data
//! file (`data/{name}.lance`, name as in [`new_data_file_name`]) and a new
//! fragment start every `max_rows_per_file` rows. Nothing becomes visible
//! until [`commit`] writes the manifest, so a failure at any step — a bad
//! batch, a failed data/deletion/transaction file write — leaves the
//! dataset exactly as it was (already written files are orphaned).
//!
//! A `DataFile` lists the ids of the fields that own a column, in column
//! order: for 2.1/2.2 the leaves (and packed structs, fixed-size lists of
//! fixed-width values), for 2.0 every field in pre-order (struct and list
//! parents have their own columns).
//!
//! Deletions write one file per touched fragment holding *all* its deleted
//! offsets (old and new): `.arrow` (Arrow IPC file, one `row_id: uint32 not
//! null` column, ZSTD body compression) below 5000 rows, a portable roaring
//! `.bin` from 5000 on, as pylance 14. A fragment whose rows are all deleted
//! is dropped from the manifest instead.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::file::schema::{LanceField, LanceSchema};
use crate::file::structural::to_arrow::{is_packed_struct, owns_column};
use crate::file::version::PageFamily;
use crate::file::{FileVersion, FileWriter};
use crate::io::{Storage, StorageOptions};
use crate::proto::table as pb;
use crate::table::commit::{commit, CommitOptions};
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::hooks::step;
use crate::table::manifest::{list_versions, read_manifest};
use crate::table::properties::{CommitProperties, Committed};
use crate::table::transaction::{new_data_file_name, new_transaction, BuildOptions};
use crate::table::write_schema::write_schema;

use pb::transaction::Operation;

/// How `write_dataset` treats an existing dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Fail if the dataset exists.
    Create,
    /// Add fragments (creates the dataset when missing).
    Append,
    /// Replace the content (creates the dataset when missing).
    Overwrite,
}

impl WriteMode {
    /// Parse pylance's mode names.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "create" => Ok(WriteMode::Create),
            "append" => Ok(WriteMode::Append),
            "overwrite" => Ok(WriteMode::Overwrite),
            other => Err(Error::invalid_input(format!("unknown write mode {other:?} (expected create, append or overwrite)"))),
        }
    }
}

/// Options of [`write_dataset`].
#[derive(Clone)]
pub struct WriteParams {
    /// create / append / overwrite.
    pub mode: WriteMode,
    /// Rows per data file (and fragment).
    pub max_rows_per_file: u64,
    /// File version asked for (`None`: the dataset's, 2.2 for a new one);
    /// see [`write_file_version`].
    pub data_storage_version: Option<FileVersion>,
    /// Stable row ids for a new dataset.
    pub enable_stable_row_ids: bool,
    /// Object store configuration (see [`crate::io::s3`]).
    pub storage_options: StorageOptions,
    /// Input bytes (Arrow memory) gathered before a data file's writer
    /// encodes them in one parallel pass; 0: a pass per input batch. Worth
    /// it for an Arrow table's many small chunks, which are resident
    /// anyway; a stream's batches would be held this much longer.
    pub group_bytes: usize,
    /// Base paths to register with a new dataset: `(id, base)`, ids given
    /// when `None` (see [`crate::table::bases`]); refused for an existing one.
    pub initial_bases: Vec<(Option<u32>, pb::BasePath)>,
    /// Write the data files to this registered base (name or path) instead
    /// of the dataset's `data/`; the first is used when several are named.
    pub target_bases: Vec<String>,
}

impl Default for WriteParams {
    fn default() -> Self {
        WriteParams {
            mode: WriteMode::Create,
            max_rows_per_file: 1024 * 1024,
            data_storage_version: None,
            enable_stable_row_ids: false,
            storage_options: StorageOptions::new(),
            group_bytes: 0,
            initial_bases: Vec::new(),
            target_bases: Vec::new(),
        }
    }
}

/// Field ids owning a column, in column order, for files of `version`.
pub fn column_field_ids(schema: &LanceSchema, version: FileVersion) -> Vec<i32> {
    let structural = version.traits().map(|t| t.family == PageFamily::Structural).unwrap_or(true);
    fn walk(f: &LanceField, structural: bool, out: &mut Vec<i32>) {
        if structural {
            if owns_column(&f.arrow) {
                out.push(f.id);
                return;
            }
            f.children.iter().for_each(|c| walk(c, structural, out));
        } else {
            out.push(f.id);
            match f.arrow.data_type() {
                DataType::Struct(_) if is_packed_struct(&f.arrow) => {}
                DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_) => f.children.iter().for_each(|c| walk(c, structural, out)),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    schema.fields.iter().for_each(|f| walk(f, structural, &mut out));
    out
}

/// The file version named by a manifest's `data_format`.
pub(crate) fn dataset_file_version(m: &pb::Manifest) -> Result<FileVersion> {
    match &m.data_format {
        Some(d) if !d.version.is_empty() => FileVersion::parse(&d.version),
        _ => Ok(FileVersion::Legacy),
    }
}

/// The file version of a write's data files, as pylance 14 chooses it:
/// a new dataset gets the version asked for (2.2 by default); an overwrite
/// keeps the dataset's version unless another is asked for, and the new
/// manifest then names that version; an append writes files of the version
/// asked for (2.x versions may mix in one dataset; the manifest keeps its
/// version and gains the mixed-versions flag) and refuses to mix legacy
/// (v0.1) with 2.x. Legacy files cannot be written.
pub fn write_file_version(appending: bool, existing: Option<FileVersion>, requested: Option<FileVersion>) -> Result<FileVersion> {
    let version = match (existing, requested) {
        (None, r) => r.unwrap_or(FileVersion::V2_2),
        (Some(e), None) => e,
        (Some(e), Some(r)) if appending && (e == FileVersion::Legacy) != (r == FileVersion::Legacy) => {
            return Err(Error::invalid_input(format!(
                "cannot append data files of version {} to a dataset of version {}: legacy (0.1) and 2.x files cannot be mixed",
                r.as_str(),
                e.as_str()
            )))
        }
        (Some(_), Some(r)) => r,
    };
    if version == FileVersion::Legacy {
        return Err(Error::unsupported("writing v0.1 (legacy) data files is not supported; use 2.0, 2.1 or 2.2"));
    }
    Ok(version)
}

/// Writes batches into data files of at most `max_rows` rows.
struct FragmentSink<'a> {
    root: &'a Storage,
    /// Where the files go: `data/` of the root, or a base path's directory
    /// (then the files record its `base_id`).
    dir: Storage,
    base_id: Option<u32>,
    schema: LanceSchema,
    version: FileVersion,
    max_rows: u64,
    /// Put in front of every data file name (distributed writes tag their
    /// files with a job id so an aborted job's files can be found).
    name_prefix: &'a str,
    /// Row counts planned for the next fragments (compaction writes
    /// near-equal fragments); once used up, files hold `max_rows`.
    planned: VecDeque<u64>,
    /// Close a file once it holds this many bytes; the rest of its planned
    /// rows go on in the next file.
    max_bytes: Option<u64>,
    current: Option<(FileWriter, String)>,
    /// Input bytes gathered per encoding pass ([`WriteParams::group_bytes`]).
    group_bytes: usize,
    /// Batches (slices of the input) for the current file not written
    /// yet: they go to the writer together once `group_bytes` are held
    /// or the file is full (see [`FileWriter::write_batches`]).
    held: Vec<RecordBatch>,
    held_rows: u64,
    held_bytes: usize,
    /// The previous file, finishing (last pages, metadata, upload) on
    /// another thread while the next one is encoded.
    finishing: Option<Finishing>,
    done: Vec<pb::DataFragment>,
}

impl Drop for FragmentSink<'_> {
    /// A write abandoned (by an error): wait for the file still finishing
    /// and remove it and the files finished before, so the failed write
    /// leaves no data file. (A successful write takes `done` first.)
    fn drop(&mut self) {
        if let Some(f) = self.finishing.take() {
            if let Ok(Ok(_)) = f.handle.join() {
                let _ = f.storage.delete();
            }
        }
        remove_in(&self.dir, &self.done);
    }
}

/// Remove the fragments' data files from `dir` (where they were written),
/// best effort.
fn remove_in(dir: &Storage, fragments: &[pb::DataFragment]) {
    for f in fragments.iter().flat_map(|f| &f.files) {
        if let Ok(s) = dir.child(&f.path) {
            let _ = s.delete();
        }
    }
}

/// The paths (relative to the dataset root) of the fragments' data files.
pub(crate) fn data_file_paths(fragments: &[pb::DataFragment]) -> Vec<String> {
    fragments.iter().flat_map(|f| &f.files).map(|d| format!("data/{}", d.path)).collect()
}

/// A data file whose writer finishes in the background.
struct Finishing {
    name: String,
    rows: u64,
    storage: Storage,
    handle: std::thread::JoinHandle<Result<u64>>,
}

impl FragmentSink<'_> {
    fn push(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut off = 0usize;
        while off < batch.num_rows() {
            if self.current.is_none() {
                let name = format!("{}{}", self.name_prefix, new_data_file_name());
                let storage = self.dir.child(&name)?;
                self.current = Some((FileWriter::create_with_lance_schema(storage, self.schema.clone(), self.version)?, name));
            }
            let limit = self.planned.front().copied().unwrap_or(self.max_rows);
            let written = self.current.as_ref().expect("open writer").0.num_rows();
            let room = (limit - written - self.held_rows) as usize;
            let n = room.min(batch.num_rows() - off);
            let slice = batch.slice(off, n);
            self.held_bytes += slice.get_array_memory_size();
            self.held_rows += n as u64;
            self.held.push(slice);
            off += n;
            if written + self.held_rows >= limit {
                self.planned.pop_front();
                self.close()?;
            } else if self.held_bytes >= self.group_bytes || self.max_bytes.is_some() {
                // (A byte limit per file is checked after every batch, as
                // the writer's size is known only once a batch is written.)
                self.write_held()?;
                let (w, _) = self.current.as_ref().expect("open writer");
                let rows = w.num_rows();
                if self.max_bytes.is_some_and(|m| w.bytes_written() >= m) {
                    if let Some(p) = self.planned.front_mut() {
                        *p -= rows;
                    }
                    self.close()?;
                }
            }
        }
        Ok(())
    }

    /// Hand the held batches to the current file's writer.
    fn write_held(&mut self) -> Result<()> {
        let held = std::mem::take(&mut self.held);
        (self.held_rows, self.held_bytes) = (0, 0);
        if held.is_empty() {
            return Ok(());
        }
        match self.current.as_mut() {
            Some((w, _)) => w.write_batches(&held),
            None => {
                Err(Error::Internal { what: format!("{} input rows held with no data file open", held.iter().map(|b| b.num_rows()).sum::<usize>()) })
            }
        }
    }

    /// Close the current file: it finishes on another thread (at most one
    /// at a time), and is recorded once that is done.
    fn close(&mut self) -> Result<()> {
        self.write_held()?;
        let Some((w, name)) = self.current.take() else { return Ok(()) };
        step(self.root, "data_file")?;
        self.join_finishing()?;
        let storage = self.dir.child(&name)?;
        let rows = w.num_rows();
        let handle = std::thread::Builder::new()
            .name("lancelet-finish".into())
            .spawn(move || w.finish())
            .map_err(|e| Error::io(storage.display().to_string(), format!("cannot start a writer thread: {e}")).with_source(e))?;
        self.finishing = Some(Finishing { name, rows, storage, handle });
        Ok(())
    }

    /// Wait for the file finishing in the background and record it.
    fn join_finishing(&mut self) -> Result<()> {
        let Some(f) = self.finishing.take() else { return Ok(()) };
        let size = f.handle.join().map_err(|_| Error::Internal { what: format!("the writer thread of {} panicked", f.storage.display()) })??;
        let (name, rows) = (f.name, f.rows);
        let ids = column_field_ids(&self.schema, self.version);
        let (major, minor) = self.version.data_file_numbers();
        self.done.push(pb::DataFragment {
            id: 0,
            files: vec![pb::DataFile {
                path: name,
                column_indices: (0..ids.len() as i32).collect(),
                fields: ids,
                file_major_version: major,
                file_minor_version: minor,
                file_size_bytes: size,
                base_id: self.base_id,
            }],
            physical_rows: rows,
            ..Default::default()
        });
        Ok(())
    }
}

/// Where and how [`stage_fragments`] writes data files.
pub(crate) struct StageTarget<'a> {
    pub root: &'a Storage,
    pub schema: &'a LanceSchema,
    pub version: FileVersion,
    pub max_rows_per_file: u64,
    pub name_prefix: &'a str,
    /// See [`WriteParams::group_bytes`].
    pub group_bytes: usize,
    /// A base path to write to instead of the dataset's `data/`.
    pub place: Option<crate::table::bases::DataPlace>,
}

/// Write batches (conformed to the target schema) into new data files and
/// return their fragments, not yet committed (ids are given at commit).
pub(crate) fn stage_fragments(t: &StageTarget<'_>, batches: impl Iterator<Item = Result<RecordBatch>>) -> Result<Vec<pb::DataFragment>> {
    stage_fragments_sized(t, &[], None, batches)
}

/// [`stage_fragments`] into fragments of the planned row counts `sizes`
/// (then `max_rows_per_file`), each also cut once its file holds
/// `max_bytes` bytes. On error the files already written are removed.
pub(crate) fn stage_fragments_sized(
    t: &StageTarget<'_>,
    sizes: &[u64],
    max_bytes: Option<u64>,
    batches: impl Iterator<Item = Result<RecordBatch>>,
) -> Result<Vec<pb::DataFragment>> {
    if t.max_rows_per_file == 0 || sizes.contains(&0) {
        return Err(Error::invalid_input("max_rows_per_file must be positive"));
    }
    // Data files hold the dataset fields the input has, in its order (see
    // `write_schema`); decided by the first batch, kept for the rest.
    let mut arrow: Option<SchemaRef> = None;
    let (dir, base_id) = match &t.place {
        Some(p) => (p.dir.clone(), Some(p.base_id)),
        None => (t.root.child("data")?, None),
    };
    let mut sink = FragmentSink {
        root: t.root,
        dir: dir.clone(),
        base_id,
        schema: t.schema.clone(),
        version: t.version,
        max_rows: t.max_rows_per_file,
        name_prefix: t.name_prefix,
        planned: sizes.iter().copied().collect(),
        max_bytes,
        current: None,
        group_bytes: t.group_bytes,
        held: Vec::new(),
        held_rows: 0,
        held_bytes: 0,
        finishing: None,
        done: Vec::new(),
    };
    let run = || -> Result<()> {
        for b in batches {
            let b = b?;
            if b.num_rows() == 0 {
                continue;
            }
            let target = match &arrow {
                Some(a) => a.clone(),
                None => {
                    sink.schema = write_schema(t.schema, &b.schema())?;
                    let a: SchemaRef = Arc::new(sink.schema.to_arrow());
                    arrow = Some(a.clone());
                    a
                }
            };
            sink.push(&conform(&b, &target)?)?;
        }
        sink.close()?;
        sink.join_finishing()
    };
    match run() {
        Ok(()) => Ok(std::mem::take(&mut sink.done)),
        Err(e) => {
            // The file still finishing is removed when the sink drops.
            remove_in(&dir, &std::mem::take(&mut sink.done));
            Err(e)
        }
    }
}

/// Conform an input batch to `target` (the data files' schema, see
/// [`write_schema`]): same columns by name (in the target's order),
/// compatible types, no nulls in non-nullable fields. Errors name the field.
pub(crate) fn conform(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    let got = batch.schema();
    for g in got.fields() {
        if target.field_with_name(g.name()).is_err() {
            return Err(Error::invalid_input(format!(
                "field {:?} is not in the dataset schema (dataset fields: {})",
                g.name(),
                target.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let mut cols = Vec::with_capacity(target.fields().len());
    for f in target.fields() {
        let Ok(i) = got.index_of(f.name()) else {
            return Err(Error::invalid_input(format!("field {:?} of the dataset schema is missing from the data", f.name())));
        };
        let g = got.field(i);
        if !g.data_type().equals_datatype(f.data_type()) {
            return Err(Error::invalid_input(format!(
                "field {:?} has type {} in the data but {} in the dataset",
                f.name(),
                g.data_type(),
                f.data_type()
            )));
        }
        let col = batch.column(i).clone();
        if !f.is_nullable() && col.null_count() > 0 {
            return Err(Error::invalid_input(format!("field {:?} is not nullable in the dataset but the data has nulls", f.name())));
        }
        cols.push(col);
    }
    RecordBatch::try_new(target.clone(), cols)
        .map_err(|e| Error::invalid_input(format!("data does not match the dataset schema: {e}")).with_source(e))
}

/// The dataset root for a write; local paths with `..` are created and
/// canonicalized (object_store paths may not contain `..`).
pub(crate) fn open_root_with(uri: &str, options: &StorageOptions) -> Result<Storage> {
    if !uri.contains("://") {
        // object_store paths may not contain `..`
        let p = std::path::Path::new(uri);
        if p.components().any(|c| c == std::path::Component::ParentDir) {
            std::fs::create_dir_all(p).ok();
            if let Ok(canon) = p.canonicalize() {
                return Storage::open_with(&canon.to_string_lossy(), options);
            }
        }
    }
    Storage::open_with(uri, options)
}

/// What a write added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteMetrics {
    /// New fragments (one data file each).
    pub fragments_added: u64,
    /// Rows written.
    pub rows_written: u64,
}

impl WriteMetrics {
    /// The metrics of writing `fragments`.
    pub fn of(fragments: &[pb::DataFragment]) -> Self {
        WriteMetrics { fragments_added: fragments.len() as u64, rows_written: fragments.iter().map(|f| f.physical_rows).sum() }
    }
}

/// Write a stream of batches as a dataset (see [`WriteParams`]). Returns
/// the new version, opened.
pub fn write_dataset(
    uri: &str,
    schema: SchemaRef,
    batches: impl Iterator<Item = Result<RecordBatch>>,
    params: &WriteParams,
    props: &CommitProperties,
) -> Result<Committed<WriteMetrics>> {
    if params.max_rows_per_file == 0 {
        return Err(Error::invalid_input("max_rows_per_file must be positive"));
    }
    let root = open_root_with(uri, &params.storage_options)?;
    let latest = list_versions(&root)?.last().cloned();
    let existing = match (&latest, params.mode) {
        (Some(_), WriteMode::Create) => return Err(Error::already_exists(format!("dataset at {uri} (use mode=\"overwrite\" or \"append\")"))),
        (Some(l), WriteMode::Append) => Some(Dataset::open_in(root.fresh(), uri, Some(VersionRef::Number(l.version)))?),
        _ => None,
    };
    let read_version = latest.as_ref().map(|l| l.version).unwrap_or(0);
    let existing_version = match (&existing, &latest) {
        (Some(ds), _) => Some(dataset_file_version(ds.manifest())?),
        // an overwrite keeps the version of the dataset it replaces
        (None, Some(l)) => Some(dataset_file_version(&read_manifest(&root, &l.name)?.manifest)?),
        (None, None) => None,
    };
    let version = write_file_version(existing.is_some(), existing_version, params.data_storage_version)?;
    let lance_schema = match &existing {
        Some(ds) => ds.lance_schema().clone(),
        None => {
            if schema.fields().is_empty() {
                return Err(Error::invalid_input("cannot write a dataset with no columns"));
            }
            LanceSchema::from_arrow(&schema)?
        }
    };
    if existing.is_some() {
        // Check the stream's declared schema before writing anything.
        write_schema(&lance_schema, &schema)?;
    }
    if !params.initial_bases.is_empty() && latest.is_some() {
        return Err(Error::invalid_input(format!(
            "dataset at {uri} exists: initial_bases can only be registered when a dataset is created (use Dataset.add_bases)"
        )));
    }
    let known_bases = match &latest {
        Some(l) => match &existing {
            Some(ds) => ds.manifest().base_paths.clone(),
            None => read_manifest(&root, &l.name)?.manifest.base_paths,
        },
        None => Vec::new(),
    };
    let initial = crate::table::bases::register(&known_bases, &params.initial_bases)?;
    let place = match params.target_bases.first() {
        Some(t) => {
            let all: Vec<pb::BasePath> = known_bases.iter().chain(initial.iter()).cloned().collect();
            Some(crate::table::bases::place(&root, crate::table::bases::find(&all, t)?)?)
        }
        None => None,
    };
    let target_spec = StageTarget {
        root: &root,
        schema: &lance_schema,
        version,
        max_rows_per_file: params.max_rows_per_file,
        name_prefix: "",
        group_bytes: params.group_bytes,
        place: place.clone(),
    };
    let fragments = stage_fragments(&target_spec, batches)?;
    let metrics = WriteMetrics::of(&fragments);
    // Files in a base are not under the root: taken back here on failure.
    let owned_files = if place.is_some() { Vec::new() } else { data_file_paths(&fragments) };
    let placed = place.as_ref().map(|p| (p.dir.clone(), fragments.clone()));
    let op = match existing {
        Some(_) => Operation::Append(pb::transaction::Append { fragments }),
        None => Operation::Overwrite(pb::transaction::Overwrite {
            fragments,
            schema: lance_schema.to_pb()?,
            schema_metadata: lance_schema.metadata_pb(),
            initial_bases: initial,
            ..Default::default()
        }),
    };
    let txn = new_transaction(read_version, op);
    let opts = CommitOptions {
        build: BuildOptions { enable_stable_row_ids: params.enable_stable_row_ids, data_storage_version: version.as_str().to_string() },
        must_not_exist: params.mode == WriteMode::Create,
        owned_files,
        ..props.commit_options()
    };
    let v = match commit(&root, &txn, &opts) {
        Ok(v) => v,
        Err(e) => {
            // Only when the commit surely did not happen (the kernel's
            // own rule for the files it owns).
            if matches!(e, Error::AlreadyExists { .. } | Error::Conflict { .. } | Error::InvalidInput { .. } | Error::NotFound { .. }) {
                if let Some((dir, frags)) = &placed {
                    remove_in(dir, frags);
                }
            }
            return Err(e);
        }
    };
    Ok(Committed::new(Dataset::open_in(root.fresh(), uri, Some(VersionRef::Number(v)))?, metrics))
}

/// Append batches to an existing dataset (read at `ds`'s version).
pub fn insert(ds: &Dataset, batches: impl Iterator<Item = Result<RecordBatch>>, props: &CommitProperties) -> Result<Committed<WriteMetrics>> {
    let version = write_file_version(true, Some(dataset_file_version(ds.manifest())?), None)?;
    let target = StageTarget {
        root: ds.root(),
        schema: ds.lance_schema(),
        version,
        max_rows_per_file: 1024 * 1024,
        name_prefix: "",
        group_bytes: 0,
        place: None,
    };
    let fragments = stage_fragments(&target, batches)?;
    let metrics = WriteMetrics::of(&fragments);
    let owned_files = data_file_paths(&fragments);
    let txn = new_transaction(ds.version(), Operation::Append(pb::transaction::Append { fragments }));
    let v = commit(ds.root(), &txn, &CommitOptions { owned_files, ..props.commit_options() })?;
    Ok(Committed::new(ds.checkout(VersionRef::Number(v))?, metrics))
}

/// Write the deletion files that remove `per_frag` (physical row offsets
/// per fragment id, added to the fragments' existing deletions) and return
/// the Delete transaction committing them (read at `ds`'s version) with the
/// files written (to remove if the commit fails); a fragment left with no
/// rows is removed instead. On error the files written so far are removed.
/// (The namespace catalog's deletes; `Dataset.delete` is
/// [`crate::table::ops::delete`].)
pub fn deletion_transaction(
    ds: &Dataset,
    per_frag: std::collections::BTreeMap<u64, RoaringBitmap>,
    predicate: &str,
) -> Result<(pb::Transaction, Vec<String>)> {
    let (updated, removed, written) = crate::table::ops::delete::mark_deleted(ds, &per_frag)?;
    let txn = new_transaction(
        ds.version(),
        Operation::Delete(pb::transaction::Delete { updated_fragments: updated, deleted_fragment_ids: removed, predicate: predicate.to_string() }),
    );
    Ok((txn, written))
}

/// Make `ds`'s version the latest again (a new version with its content).
pub fn restore(ds: &Dataset, props: &CommitProperties) -> Result<Committed<()>> {
    let latest = ds.latest_version()?;
    let txn = new_transaction(latest, Operation::Restore(pb::transaction::Restore { version: ds.version() }));
    let v = commit(ds.root(), &txn, &props.commit_options())?;
    Ok(Committed::new(ds.checkout(VersionRef::Number(v))?, ()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::random_u64;
    use crate::table::scan::{ScanOptions, Scanner};
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{Field, Schema};

    fn batch(start: i64, n: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false), Field::new("s", DataType::Utf8, true)]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from_iter_values(start..start + n)),
                Arc::new(StringArray::from_iter((start..start + n).map(|i| (i % 3 != 0).then(|| format!("s{i}"))))),
            ],
        )
        .unwrap()
    }

    fn xs(ds: &Dataset) -> Vec<i64> {
        let s = Scanner::new(Arc::new(Dataset::open(ds.uri(), Some(VersionRef::Number(ds.version()))).unwrap()), ScanOptions::default()).unwrap();
        s.collect().unwrap().iter().flat_map(|b| b.column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec()).collect()
    }

    fn tmp(name: &str) -> String {
        let d = std::env::temp_dir().join(format!("lancelet-write-{name}-{}", random_u64()));
        d.to_string_lossy().into_owned()
    }

    /// Files with whole vector pages written from pool workers (as merge
    /// and alter_columns write fragments in parallel) finish: the writer
    /// never has a worker wait for the pool from outside it.
    #[test]
    fn vector_files_written_on_pool_workers_finish() {
        use arrow_array::{Array, FixedSizeListArray, Float32Array};
        use rayon::prelude::*;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let got = crate::process::install(|| {
                (0..8)
                    .into_par_iter()
                    .map(|i| -> Result<u64> {
                        let (dim, rows) = (256usize, 9000usize);
                        let values = Float32Array::from_iter_values((0..rows * dim).map(|x| x as f32));
                        let item = Arc::new(Field::new("item", arrow_schema::DataType::Float32, true));
                        let v = FixedSizeListArray::new(item, dim as i32, Arc::new(values), None);
                        let schema = Arc::new(Schema::new(vec![Field::new("v", v.data_type().clone(), false)]));
                        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(v)]).map_err(Error::internal_arrow)?;
                        let mut w = FileWriter::create(&format!("memory://pool{}/f{i}.lance", random_u64()), &schema, FileVersion::V2_1)?;
                        w.write(&b)?;
                        w.finish()
                    })
                    .collect::<Result<Vec<_>>>()
            });
            let _ = tx.send(got);
        });
        let sizes = rx.recv_timeout(std::time::Duration::from_secs(120)).expect("vector files written on pool workers hung").unwrap();
        assert!(sizes.iter().all(|&n| n > 9000 * 1024));
    }

    /// Gathering batches into larger units of work changes neither the
    /// rows nor how they are cut into fragments and pages.
    #[test]
    fn grouped_batches_write_the_same_fragments_and_pages() {
        let batches = || (0..23).map(|i| Ok(batch(i * 7, 7)));
        let mut written = Vec::new();
        for group_bytes in [0, 1 << 20] {
            let uri = tmp("group");
            let p = WriteParams { max_rows_per_file: 50, group_bytes, ..Default::default() };
            let ds = write_dataset(&uri, batch(0, 1).schema(), batches(), &p, &Default::default()).unwrap().dataset;
            assert_eq!(xs(&ds), (0..161).collect::<Vec<_>>());
            let rows: Vec<u64> = ds.fragments().iter().map(|f| f.physical_rows).collect();
            assert_eq!(rows, vec![50, 50, 50, 11]);
            let sizes: Vec<u64> = ds.fragments().iter().flat_map(|f| &f.files).map(|f| f.file_size_bytes).collect();
            written.push(sizes);
        }
        assert_eq!(written[0], written[1]);
    }

    #[test]
    fn create_append_delete_restore() {
        let uri = tmp("cadr");
        let b = batch(0, 25);
        let p = WriteParams { max_rows_per_file: 10, enable_stable_row_ids: true, ..Default::default() };
        let ds = write_dataset(&uri, b.schema(), vec![Ok(b)].into_iter(), &p, &Default::default()).unwrap().dataset;
        assert_eq!(ds.version(), 1);
        assert_eq!(ds.fragments().len(), 3);
        assert_eq!(xs(&ds), (0..25).collect::<Vec<_>>());
        assert_eq!(ds.manifest().next_row_id, 25);
        let b2 = batch(25, 5);
        let ds = insert(&ds, vec![Ok(b2)].into_iter(), &Default::default()).unwrap().dataset;
        assert_eq!(ds.version(), 2);
        assert_eq!(xs(&ds), (0..30).collect::<Vec<_>>());
        let ds = Arc::new(ds);
        let (ds3, n) = crate::table::ops::delete::delete(&ds, "x < 3 or x >= 20 and x < 25", &Default::default()).unwrap().into_parts();
        assert_eq!(n, 8);
        assert_eq!(ds3.version(), 3);
        let want: Vec<i64> = (3..20).chain(25..30).collect();
        assert_eq!(xs(&ds3), want);
        // fragment 2 (rows 20..25) is gone entirely
        assert_eq!(ds3.fragments().iter().map(|f| f.id).collect::<Vec<_>>(), vec![0, 1, 3]);
        assert_eq!(ds3.manifest().reader_feature_flags, 3);
        // schema mismatch names the field
        let bad = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false), Field::new("t", DataType::Utf8, true)])),
            vec![Arc::new(Int64Array::from(vec![1])), Arc::new(StringArray::from(vec!["a"]))],
        )
        .unwrap();
        let e = insert(&ds3, vec![Ok(bad)].into_iter(), &Default::default()).unwrap_err();
        assert!(matches!(e, Error::InvalidInput { .. }) && e.to_string().contains("\"t\""), "{e}");
        // restore version 1
        let v1 = ds3.checkout(VersionRef::Number(1)).unwrap();
        let ds4 = restore(&v1, &Default::default()).unwrap().dataset;
        assert_eq!(ds4.version(), 4);
        assert_eq!(xs(&ds4), (0..25).collect::<Vec<_>>());
        assert_eq!(ds4.manifest().max_fragment_id, Some(3));
        // create on an existing dataset
        let b = batch(0, 1);
        assert!(matches!(
            write_dataset(&uri, b.schema(), vec![Ok(b)].into_iter(), &WriteParams::default(), &Default::default()),
            Err(Error::AlreadyExists { .. })
        ));
        let _ = std::fs::remove_dir_all(&uri);
    }

    /// Every file under a local dataset directory (relative paths, sorted).
    fn files_under(uri: &str) -> Vec<String> {
        fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, root, out);
                } else {
                    out.push(p.strip_prefix(root).unwrap().display().to_string());
                }
            }
        }
        let root = std::path::Path::new(uri);
        let mut out = Vec::new();
        walk(root, root, &mut out);
        out.sort();
        out
    }

    #[test]
    fn failure_at_each_step_leaves_dataset_unchanged() {
        // (step, operation) pairs where the operation goes through that step.
        let ops = ["insert", "delete", "overwrite"];
        let hits = |step: &str, op: &str| match step {
            "data_file" => op != "delete",
            "deletion_file" => op == "delete",
            _ => true,
        };
        for fail_at in ["data_file", "deletion_file", "transaction_file", "manifest"] {
            for op in ops {
                if !hits(fail_at, op) {
                    continue;
                }
                let uri = tmp("fail");
                let b = batch(0, 20);
                let ds = write_dataset(
                    &uri,
                    b.schema(),
                    vec![Ok(b)].into_iter(),
                    &WriteParams { max_rows_per_file: 8, ..Default::default() },
                    &Default::default(),
                )
                .unwrap()
                .dataset;
                let before = files_under(&uri);
                let name = fail_at.to_string();
                let hook: crate::table::hooks::FailHook =
                    Arc::new(move |s: &str| if s == name { Err(Error::io("hook", format!("injected failure at {s}"))) } else { Ok(()) });
                let _hook = crate::table::hooks::install(&uri, hook);
                let r = match op {
                    "insert" => insert(&ds, vec![Ok(batch(20, 5))].into_iter(), &Default::default()).map(|_| ()),
                    "delete" => crate::table::ops::delete::delete(&Arc::new(ds), "x < 10", &Default::default()).map(|_| ()),
                    _ => {
                        let p = WriteParams { mode: WriteMode::Overwrite, ..Default::default() };
                        let b = batch(100, 3);
                        write_dataset(&uri, b.schema(), vec![Ok(b)].into_iter(), &p, &Default::default()).map(|_| ())
                    }
                };
                let e = r.unwrap_err();
                assert!(e.to_string().contains("injected"), "{fail_at} {op}: {e}");
                assert_eq!(files_under(&uri), before, "{fail_at} {op}: the failed write left files behind");
                let now = Dataset::open(&uri, None).unwrap();
                assert_eq!(now.version(), 1, "{fail_at} {op}");
                assert_eq!(xs(&now), (0..20).collect::<Vec<_>>());
                let _ = std::fs::remove_dir_all(&uri);
            }
        }
        // A bad batch mid-stream.
        let uri = tmp("badbatch");
        let b = batch(0, 3);
        write_dataset(&uri, b.schema(), vec![Ok(b)].into_iter(), &WriteParams::default(), &Default::default()).unwrap();
        let b = batch(3, 3);
        let before = files_under(&uri);
        let r = write_dataset(
            &uri,
            b.schema(),
            vec![Ok(b), Err(Error::invalid_input("bad batch"))].into_iter(),
            &WriteParams { mode: WriteMode::Append, max_rows_per_file: 2, ..Default::default() },
            &Default::default(),
        );
        assert!(r.is_err());
        assert_eq!(files_under(&uri), before, "the failed append left files behind");
        let now = Dataset::open(&uri, None).unwrap();
        assert_eq!((now.version(), xs(&now)), (1, vec![0, 1, 2]));
        let _ = std::fs::remove_dir_all(&uri);
    }

    #[test]
    fn file_version_rules_of_pylance() {
        use FileVersion::*;
        // new dataset
        assert_eq!(write_file_version(false, None, None).unwrap(), V2_2);
        assert_eq!(write_file_version(false, None, Some(V2_0)).unwrap(), V2_0);
        // overwrite keeps the dataset's version unless asked
        assert_eq!(write_file_version(false, Some(V2_0), None).unwrap(), V2_0);
        assert_eq!(write_file_version(false, Some(V2_0), Some(V2_2)).unwrap(), V2_2);
        assert_eq!(write_file_version(false, Some(Legacy), Some(V2_1)).unwrap(), V2_1);
        // append: the version asked for, 2.x versions mix, legacy does not
        assert_eq!(write_file_version(true, Some(V2_1), None).unwrap(), V2_1);
        assert_eq!(write_file_version(true, Some(V2_1), Some(V2_0)).unwrap(), V2_0);
        assert!(matches!(write_file_version(true, Some(Legacy), Some(V2_2)), Err(Error::InvalidInput { .. })));
        assert!(matches!(write_file_version(true, Some(V2_2), Some(Legacy)), Err(Error::InvalidInput { .. })));
        // legacy files are never written
        assert!(matches!(write_file_version(true, Some(Legacy), None), Err(Error::Unsupported { .. })));
        assert!(matches!(write_file_version(false, Some(Legacy), None), Err(Error::Unsupported { .. })));
    }

    #[test]
    fn overwrite_keeps_the_storage_version() {
        for (base, asked, want) in
            [(FileVersion::V2_0, None, "2.0"), (FileVersion::V2_1, None, "2.1"), (FileVersion::V2_0, Some(FileVersion::V2_2), "2.2")]
        {
            let uri = tmp("ow");
            let b = batch(0, 5);
            let p = WriteParams { data_storage_version: Some(base), ..Default::default() };
            write_dataset(&uri, b.schema(), vec![Ok(b.clone())].into_iter(), &p, &Default::default()).unwrap();
            let p = WriteParams { mode: WriteMode::Overwrite, data_storage_version: asked, ..Default::default() };
            let ds = write_dataset(&uri, b.schema(), vec![Ok(b)].into_iter(), &p, &Default::default()).unwrap().dataset;
            assert_eq!(ds.manifest().data_format.as_ref().unwrap().version, want);
            let f = &ds.fragments()[0].files[0];
            let want_v = FileVersion::parse(want).unwrap().data_file_numbers();
            assert_eq!((f.file_major_version, f.file_minor_version), want_v);
            assert_eq!(xs(&ds), (0..5).collect::<Vec<_>>());
            let _ = std::fs::remove_dir_all(&uri);
        }
    }

    #[test]
    fn concurrent_appends_in_memory() {
        let uri = format!("memory://conc{}/ds", random_u64());
        let b = batch(0, 1);
        write_dataset(&uri, b.schema(), vec![Ok(b)].into_iter(), &WriteParams::default(), &Default::default()).unwrap();
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let uri = uri.clone();
                std::thread::spawn(move || {
                    for k in 0..5 {
                        let ds = Dataset::open(&uri, None).unwrap();
                        insert(&ds, vec![Ok(batch(1000 * (t + 1) + k, 1))].into_iter(), &Default::default()).unwrap();
                    }
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        let ds = Dataset::open(&uri, None).unwrap();
        assert_eq!(ds.version(), 21);
        let mut got = xs(&ds);
        got.sort();
        let mut want: Vec<i64> = vec![0];
        for t in 0..4 {
            for k in 0..5 {
                want.push(1000 * (t + 1) + k);
            }
        }
        want.sort();
        assert_eq!(got, want);
        // every version present
        assert_eq!(list_versions(ds.root()).unwrap().iter().map(|l| l.version).collect::<Vec<_>>(), (1..=21).collect::<Vec<_>>());
    }
}
