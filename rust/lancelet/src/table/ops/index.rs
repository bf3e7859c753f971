//! Index operations: create (or replace), drop and optimize scalar
//! indices, list and describe them. Each change is one `CreateIndex`
//! transaction (`new_indices` and/or `removed_indices`) through the commit
//! loop; the files of replaced or dropped indices stay for cleanup, as in
//! pylance.
//!
//! Building reads the column with its row ids through a scan of the
//! version (deleted rows left out), hands values and ids to the index
//! builder ([`crate::index::build`]), which writes `_indices/{uuid}/` as
//! Lance files of the dataset's data storage version, and records the
//! index as covering every fragment of that version. Nothing is visible
//! until the commit; a failed build or commit removes the new directory.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, UInt64Array};

use crate::error::{Error, Result};
use crate::file::FileVersion;
use crate::ids::new_uuid;
use crate::index::meta::{new_metadata, IndexInfo, INDICES_DIR};
use crate::index::{IndexKind, IndexParams, TrainingData};
use crate::proto::table as pb;
use crate::table::commit::commit;
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::ops::vector_optimize::{self, VectorOptimizeOptions};
use crate::table::ops::{report, Progress};
use crate::table::properties::{CommitProperties, Committed};
use crate::table::scan::{ScanOptions, Scanner, ROW_ADDR, ROW_ID};
use crate::table::transaction::new_transaction;
use crate::table::write::dataset_file_version;

use pb::transaction::Operation;

/// The file version of a dataset's index files: its data storage version
/// (legacy datasets get 2.0 files).
pub(crate) fn index_file_version(ds: &Dataset) -> Result<FileVersion> {
    Ok(match dataset_file_version(ds.manifest())? {
        FileVersion::Legacy => FileVersion::V2_0,
        v => v,
    })
}

/// The top-level field named `column`.
fn field<'a>(ds: &'a Dataset, column: &str) -> Result<&'a crate::file::schema::LanceField> {
    ds.lance_schema().fields.iter().find(|f| f.arrow.name() == column).ok_or_else(|| {
        let names: Vec<&str> = ds.lance_schema().fields.iter().map(|f| f.arrow.name().as_str()).collect();
        Error::invalid_input(format!("cannot index column {column:?}: dataset {} has no such column (columns: {})", ds.uri(), names.join(", ")))
    })
}

/// The column's values and the row ids/addresses the index will hold;
/// `progress` hears `("load_data", rows read, live rows)` per batch.
fn training_data(ds: &Arc<Dataset>, column: &str, kind: IndexKind, progress: &Option<Progress>) -> Result<TrainingData> {
    let by_id = kind.keyed_by_row_id(ds.has_stable_row_ids());
    let opts = ScanOptions {
        columns: Some(vec![column.to_string()]),
        with_row_id: by_id,
        with_row_address: !by_id,
        batch_size: Some(1 << 16),
        ..Default::default()
    };
    let total = (0..ds.fragments().len()).map(|i| ds.live_rows(i)).sum::<Result<u64>>()?;
    report(progress, "load_data", 0, total)?;
    let id_col = if by_id { ROW_ID } else { ROW_ADDR };
    let mut values: Vec<ArrayRef> = Vec::new();
    let mut ids: Vec<u64> = Vec::new();
    for b in Scanner::new(ds.clone(), opts)?.stream()? {
        let b = b?;
        values.push(b.column(0).clone());
        let c = b.column_by_name(id_col).ok_or_else(|| Error::Internal { what: format!("scan returned no {id_col}") })?;
        ids.extend_from_slice(c.as_primitive::<UInt64Type>().values());
        report(progress, "load_data", ids.len() as u64, total)?;
    }
    let values = if values.is_empty() {
        arrow_array::new_empty_array(field(ds, column)?.arrow.data_type())
    } else {
        let refs: Vec<&dyn Array> = values.iter().map(|a| a.as_ref()).collect();
        arrow_select::concat::concat(&refs).map_err(Error::internal_arrow)?
    };
    Ok(TrainingData { values, ids: UInt64Array::from(ids) })
}

/// Build index files for `column` over every fragment of `ds` into a new
/// uuid directory; returns the metadata (removing the directory on error,
/// an error `progress` returns included: its last report, `("build", 1,
/// 1)`, comes after the files are written).
fn build_segment(
    ds: &Arc<Dataset>,
    column: &str,
    kind: IndexKind,
    params: &IndexParams,
    name: &str,
    dataset_version: u64,
    progress: &Option<Progress>,
) -> Result<pb::IndexMetadata> {
    let f = field(ds, column)?;
    kind.check_type(column, f.arrow.data_type())?;
    let field_id = f.id;
    let uuid = new_uuid();
    let dir = ds.root().child(&format!("{INDICES_DIR}/{uuid}"))?;
    let result = (|| {
        let data = training_data(ds, column, kind, progress)?;
        report(progress, "build", 0, 1)?;
        let files = crate::index::build_with(kind, &dir, index_file_version(ds)?, &data, params)?;
        report(progress, "build", 1, 1)?;
        let frags = ds.fragments().iter().map(|f| u32::try_from(f.id).map_err(|_| Error::corrupt(format!("fragment id {} exceeds 32 bits", f.id))));
        let frags = frags.collect::<Result<Vec<u32>>>()?;
        let mut meta = new_metadata(&uuid, name, field_id, kind, dataset_version, frags, ds.has_stable_row_ids(), &files)?;
        if let Some(d) = meta.index_details.as_mut() {
            d.value = params.details(kind, f.arrow.data_type());
        }
        Ok(meta)
    })();
    if result.is_err() {
        remove_dir(&dir);
    }
    result
}

/// Best-effort removal of an index directory nobody references.
pub(crate) fn remove_dir(dir: &crate::io::Storage) {
    if let Ok(files) = dir.list() {
        for (name, _) in files {
            if let Ok(f) = dir.child(&name) {
                let _ = f.delete();
            }
        }
    }
}

/// Commit a `CreateIndex`; on failure remove the new indices' directories.
pub(crate) fn commit_index_change(
    ds: &Dataset,
    new: Vec<pb::IndexMetadata>,
    removed: Vec<pb::IndexMetadata>,
    props: &CommitProperties,
) -> Result<Dataset> {
    // Entries already in the manifest (segments kept as they are) keep their files.
    let known: Vec<pb::IndexMetadata> = ds.manifest_file().indices().map(|v| v.into_iter().map(|i| i.pb).collect()).unwrap_or_default();
    let dirs: Vec<String> = new
        .iter()
        .filter(|m| !known.iter().any(|k| k.uuid == m.uuid))
        .map(|m| crate::index::meta::uuid_string(&m.uuid.as_ref().map(|u| u.uuid.clone()).unwrap_or_default()))
        .collect();
    let txn = new_transaction(ds.version(), Operation::CreateIndex(pb::transaction::CreateIndex { new_indices: new, removed_indices: removed }));
    match commit(ds.root(), &txn, &props.commit_options()) {
        Ok(v) => ds.checkout(VersionRef::Number(v)),
        Err(e) => {
            for d in dirs {
                if let Ok(dir) = ds.root().child(&format!("{INDICES_DIR}/{d}")) {
                    remove_dir(&dir);
                }
            }
            Err(e)
        }
    }
}

/// The default index name of a column.
pub fn default_name(column: &str) -> String {
    format!("{column}_idx")
}

/// `Dataset.create_scalar_index(column, index_type, name, replace)` with
/// pylance's default parameters (see [`create_scalar_index_with`]).
pub fn create_scalar_index(
    ds: &Arc<Dataset>,
    column: &str,
    index_type: &str,
    name: Option<&str>,
    replace: bool,
    props: &CommitProperties,
) -> Result<Committed<()>> {
    create_scalar_index_with(ds, column, index_type, None, name, replace, props)
}

/// `Dataset.create_scalar_index(column, index_type, name, replace)` with
/// the type's parameters as a JSON object under pylance's names
/// (`{"rows_per_zone": 1024}`, see [`IndexParams::parse`]); the progress
/// callback hears `("load_data", rows, total)` and `("build", 0|1, 1)`,
/// all before the commit (an error it returns aborts the build).
pub fn create_scalar_index_with(
    ds: &Arc<Dataset>,
    column: &str,
    index_type: &str,
    params: Option<&str>,
    name: Option<&str>,
    replace: bool,
    props: &CommitProperties,
) -> Result<Committed<()>> {
    if super::inverted_index::is_inverted_spec(index_type) {
        // INVERTED/FTS: tokenizer options under pylance's names
        let spec = match params {
            Some(p) => format!("{index_type}:{p}"),
            None => index_type.to_string(),
        };
        return super::inverted_index::create_inverted_index(ds, column, &spec, name, replace, props);
    }
    let kind = IndexKind::parse(index_type)?;
    let params = IndexParams::parse(kind, params)?;
    let f = field(ds, column)?;
    kind.check_type(column, f.arrow.data_type())?;
    let name = name.map(str::to_string).unwrap_or_else(|| default_name(column));
    if name.is_empty() {
        return Err(Error::invalid_input("an index name may not be empty"));
    }
    if name.starts_with("__") {
        return Err(Error::invalid_input(format!("index names starting with \"__\" are reserved for system indices ({name:?})")));
    }
    let existing: Vec<IndexInfo> = ds.manifest_file().indices()?.into_iter().filter(|i| i.name() == name).collect();
    if !existing.is_empty() && !replace {
        return Err(Error::index_exists(format!("index {name:?} on dataset {} (pass replace=True to rebuild it, or choose another name)", ds.uri())));
    }
    let meta = build_segment(ds, column, kind, &params, &name, ds.version(), &props.progress)?;
    let dataset = commit_index_change(ds, vec![meta], existing.into_iter().map(|i| i.pb).collect(), props)?;
    Ok(Committed::new(dataset, ()))
}

/// `Dataset.drop_index(name)`: remove every segment named `name`.
pub fn drop_index(ds: &Dataset, name: &str, props: &CommitProperties) -> Result<Committed<()>> {
    let removed: Vec<pb::IndexMetadata> = ds.manifest_file().indices()?.into_iter().filter(|i| i.name() == name).map(|i| i.pb).collect();
    if removed.is_empty() {
        return Err(Error::not_found(format!("index {name:?} in dataset {} (version {})", ds.uri(), ds.version())));
    }
    Ok(Committed::new(commit_index_change(ds, Vec::new(), removed, props)?, ()))
}

/// `optimize.optimize_indices(index_names)`: every named (default: every)
/// scalar index that does not cover all fragments in one segment becomes
/// one new segment covering all of them, replacing the old ones. Returns
/// the new version, or `ds` reopened when nothing needed doing, with the
/// number of indices rebuilt.
pub fn optimize_indices(ds: &Arc<Dataset>, index_names: Option<&[String]>, props: &CommitProperties) -> Result<Committed<u64>> {
    optimize_indices_with(ds, index_names, &VectorOptimizeOptions::default(), props)
}

/// [`optimize_indices`] with the vector options (`num_indices_to_merge`,
/// `retrain`; see [`crate::table::ops::vector_optimize`]).
pub fn optimize_indices_with(
    ds: &Arc<Dataset>,
    index_names: Option<&[String]>,
    vector: &VectorOptimizeOptions,
    props: &CommitProperties,
) -> Result<Committed<u64>> {
    let infos = ds.manifest_file().indices()?;
    if let Some(names) = index_names {
        for n in names {
            if !infos.iter().any(|i| i.name() == n) {
                return Err(Error::not_found(format!("index {n:?} in dataset {} (version {})", ds.uri(), ds.version())));
            }
        }
    }
    let all: roaring::RoaringBitmap = ds.fragments().iter().map(|f| f.id as u32).collect();
    let mut seen = HashSet::new();
    let mut new = Vec::new();
    let mut removed = Vec::new();
    for info in &infos {
        if info.is_system() || !seen.insert(info.name().to_string()) {
            continue;
        }
        if index_names.is_some_and(|ns| !ns.iter().any(|n| n == info.name())) {
            continue;
        }
        let segments: Vec<&IndexInfo> = infos.iter().filter(|i| i.name() == info.name()).collect();
        if vector_optimize::is_vector(info) {
            match vector_optimize::optimize_vector_index(ds, &segments, vector, props) {
                Ok(Some((n, r))) => {
                    new.extend(n);
                    removed.extend(r);
                }
                Ok(None) => {}
                Err(e) => {
                    remove_new_dirs(ds, &new);
                    return Err(e);
                }
            }
            continue;
        }
        if info.type_url() == super::inverted_index::TYPE_URL {
            let column = info.pb.fields.first().and_then(|id| ds.lance_schema().fields.iter().find(|f| f.id == *id)).map(|f| f.arrow.name().clone());
            let Some(column) = column else { continue };
            match super::inverted_index::optimize_inverted(ds, &segments, &column, props) {
                Ok(Some(m)) => {
                    new.push(m);
                    removed.extend(segments.iter().map(|s| s.pb.clone()));
                }
                Ok(None) => {}
                Err(e) => {
                    remove_new_dirs(ds, &new);
                    return Err(e);
                }
            }
            continue;
        }
        let Some(kind) = info.kind else { continue };
        if segments.len() == 1 && (&all - &info.fragment_bitmap).is_empty() {
            continue;
        }
        let [field_id] = info.pb.fields[..] else { continue };
        let Some(f) = ds.lance_schema().fields.iter().find(|f| f.id == field_id) else { continue };
        let dataset_version = segments.iter().map(|s| s.pb.dataset_version).min().unwrap_or(ds.version());
        let column = f.arrow.name().clone();
        // ZONEMAP and BLOOMFILTER keep their zone sizes (read from the newest
        // segment's files).
        let params = match segments.last() {
            Some(s) if !kind.remappable() => IndexParams::of_index(kind, &ds.index_dir(&s.pb)?)?,
            _ => IndexParams::default(),
        };
        match build_segment(ds, &column, kind, &params, info.name(), dataset_version, &props.progress) {
            Ok(m) => new.push(m),
            Err(e) => {
                remove_new_dirs(ds, &new);
                return Err(e);
            }
        }
        removed.extend(segments.iter().map(|s| s.pb.clone()));
    }
    if new.is_empty() {
        return Ok(Committed::new(ds.checkout(VersionRef::Number(ds.version()))?, 0));
    }
    let rebuilt = new.iter().filter(|m| !infos.iter().any(|i| i.pb.uuid == m.uuid)).count() as u64;
    Ok(Committed::new(commit_index_change(ds, new, removed, props)?, rebuilt))
}

/// Remove the directories of index entries built but not committed
/// (entries already in the manifest are kept).
fn remove_new_dirs(ds: &Dataset, new: &[pb::IndexMetadata]) {
    let Ok(infos) = ds.manifest_file().indices() else { return };
    for m in new.iter().filter(|m| !infos.iter().any(|i| i.pb.uuid == m.uuid)) {
        let u = crate::index::meta::uuid_string(&m.uuid.as_ref().map(|u| u.uuid.clone()).unwrap_or_default());
        if let Ok(dir) = ds.root().child(&format!("{INDICES_DIR}/{u}")) {
            remove_dir(&dir);
        }
    }
}

/// One row of `list_indices()`.
#[derive(Debug, Clone)]
pub struct IndexListing {
    /// Index name.
    pub name: String,
    /// `BTree`, `Bitmap`, `LabelList`, `FragmentReuse`, ...
    pub type_name: String,
    /// Hyphenated uuid.
    pub uuid: String,
    /// Names of the indexed columns.
    pub fields: Vec<String>,
    /// Field ids.
    pub field_ids: Vec<i32>,
    /// `dataset_version` of the entry.
    pub version: u64,
    /// Fragments covered (after deferred remaps).
    pub fragment_ids: Vec<u32>,
    /// `base_id`.
    pub base_id: Option<u32>,
    /// The details' type URL.
    pub type_url: String,
    /// `index_version`.
    pub index_version: i32,
    /// `created_at` in ms.
    pub created_at: Option<u64>,
    /// Files and sizes.
    pub files: Vec<(String, u64)>,
    /// Rows covered: live rows of the covered fragments that exist.
    pub num_rows_indexed: u64,
}

/// Every index entry of `ds` (segments separately), in manifest order.
pub fn list_indices(ds: &Dataset) -> Result<Vec<IndexListing>> {
    let infos = ds.manifest_file().indices()?;
    let usable = crate::table::indexed::DatasetIndices::load(ds)?;
    let reuse = crate::index::frag_reuse::find(&infos.iter().map(|i| i.pb.clone()).collect::<Vec<_>>(), ds.root())?;
    let mut out = Vec::new();
    for info in infos {
        let coverage = match (usable.indices.iter().find(|u| u.info.uuid == info.uuid), &reuse) {
            (Some(u), _) => u.coverage.clone(),
            // Vector indices: their fragments after deferred remaps.
            (None, Some(r)) if vector_optimize::is_vector(&info) => r.remap_coverage(&info.fragment_bitmap, !ds.has_stable_row_ids()),
            _ => info.fragment_bitmap.clone(),
        };
        let fields = info
            .pb
            .fields
            .iter()
            .map(|id| {
                ds.lance_schema()
                    .fields
                    .iter()
                    .flat_map(|f| f.preorder())
                    .find(|f| f.id == *id)
                    .map(|f| f.arrow.name().clone())
                    .unwrap_or_else(|| format!("<field {id}>"))
            })
            .collect();
        let mut rows = 0u64;
        for (i, f) in ds.fragments().iter().enumerate() {
            if coverage.contains(f.id as u32) {
                rows += ds.live_rows(i)?;
            }
        }
        out.push(IndexListing {
            name: info.name().to_string(),
            type_name: match info.pb.index_details.as_ref() {
                Some(d) if d.type_url == crate::proto::type_url::VECTOR_INDEX_DETAILS => {
                    crate::table::ops::vector_index::vector_type_name(&d.value).map(str::to_string).unwrap_or_else(|| info.type_name())
                }
                _ => info.type_name(),
            },
            uuid: info.uuid.clone(),
            fields,
            field_ids: info.pb.fields.clone(),
            version: info.pb.dataset_version,
            fragment_ids: coverage.iter().collect(),
            base_id: info.pb.base_id,
            type_url: info.type_url().to_string(),
            index_version: info.pb.index_version.unwrap_or(0),
            created_at: info.pb.created_at,
            files: info.pb.files.iter().map(|f| (f.path.clone(), f.size_bytes)).collect(),
            num_rows_indexed: rows,
        });
    }
    Ok(out)
}
