//! The V2 catalog: the `__manifest` Lance table below the namespace root.
//!
//! Schema (exactly pylance's):
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `object_id` | utf8, not null, field metadata `lance-schema:unenforced-primary-key:position = "0"` | id levels joined by `$` |
//! | `object_type` | utf8, not null | `"namespace"` or `"table"` (others are kept, never interpreted) |
//! | `location` | utf8 | table directory relative to the root |
//! | `metadata` | utf8 | JSON object of properties |
//! | `base_objects` | list<`object_id`: utf8> | reserved (views) |
//!
//! Extra columns written by other implementations are kept: rows lancelet
//! adds have nulls there, rows it rewrites keep their values. The table's
//! `table_metadata` map holds the root namespace's properties and two
//! feature-flag keys, [`READER_FLAGS_KEY`] and [`WRITER_FLAGS_KEY`]: no bit
//! is defined yet, so any set bit is one lancelet does not know and makes
//! it refuse to read (reader flags) or change (writer flags) the catalog.
//!
//! Every change is one commit made exactly on the version it was decided
//! on ([`commit`] with `exact_version`): appending rows is an Append,
//! removing rows a Delete (deletion files), replacing rows an Overwrite of
//! the whole table. The table is created by the first change (an Overwrite
//! as version 1). A commit that loses the race for its version returns
//! `Error::Conflict`; the caller re-reads and decides again. pylance's
//! own manifest indexes (`inline_optimization_enabled`) survive Appends
//! and Deletes (they cover the fragments they name) and are dropped by an
//! Overwrite, which pylance rebuilds on its next change.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::FileVersion;
use crate::io::Storage;
use crate::proto::table as pb;
use crate::table::commit::{commit as commit_txn, CommitOptions};
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::manifest::list_versions;
use crate::table::scan::{ScanOptions, Scanner};
use crate::table::transaction::{new_transaction, BuildOptions};
use crate::table::write::{data_file_paths, dataset_file_version, deletion_transaction, stage_fragments, StageTarget};

use pb::transaction::Operation;

/// Directory of the catalog table below the namespace root.
pub const MANIFEST_DIR: &str = "__manifest";
/// `table_metadata` key of the catalog's reader feature flags.
pub const READER_FLAGS_KEY: &str = "lance.namespace.manifest.reader_feature_flags";
/// `table_metadata` key of the catalog's writer feature flags.
pub const WRITER_FLAGS_KEY: &str = "lance.namespace.manifest.writer_feature_flags";
/// `object_type` of namespaces.
pub const NAMESPACE: &str = "namespace";
/// `object_type` of tables.
pub const TABLE: &str = "table";

const KNOWN: [&str; 4] = ["object_id", "object_type", "location", "metadata"];

/// The schema of a new catalog.
pub fn manifest_schema() -> Schema {
    let pk = HashMap::from([("lance-schema:unenforced-primary-key:position".to_string(), "0".to_string())]);
    Schema::new(vec![
        Field::new("object_id", DataType::Utf8, false).with_metadata(pk),
        Field::new("object_type", DataType::Utf8, false),
        Field::new("location", DataType::Utf8, true),
        Field::new("metadata", DataType::Utf8, true),
        Field::new("base_objects", DataType::List(Arc::new(Field::new("object_id", DataType::Utf8, true))), true),
    ])
}

/// One row of the catalog (its known columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Id levels joined by `$`.
    pub object_id: String,
    /// `namespace`, `table`, or a type lancelet does not know.
    pub object_type: String,
    /// Table directory relative to the root.
    pub location: Option<String>,
    /// Properties as a JSON object.
    pub metadata: Option<String>,
}

/// The catalog as of one version (version 0: no catalog yet).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The catalog version read (0 when `__manifest` does not exist).
    pub version: u64,
    /// Its rows.
    pub entries: Vec<Entry>,
    /// The catalog table's `table_metadata`.
    pub table_metadata: HashMap<String, String>,
    data: Option<Stored>,
}

#[derive(Debug, Clone)]
struct Stored {
    ds: Arc<Dataset>,
    /// All rows, all columns (unknown ones too).
    rows: RecordBatch,
    /// Row address of each row (for deletions).
    addrs: Vec<u64>,
}

impl Snapshot {
    /// The row with this object id and type.
    pub fn find(&self, object_id: &str, object_type: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.object_id == object_id && e.object_type == object_type)
    }

    /// Any row with this object id.
    pub fn find_any(&self, object_id: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.object_id == object_id)
    }

    /// The root namespace's properties: `table_metadata` without `lance.*` keys.
    pub fn root_properties(&self) -> BTreeMap<String, String> {
        self.table_metadata.iter().filter(|(k, _)| !k.starts_with("lance.")).map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The catalog's Arrow schema (a new catalog's when there is none yet).
    fn schema(&self) -> SchemaRef {
        match &self.data {
            Some(s) => s.rows.schema(),
            None => Arc::new(manifest_schema()),
        }
    }
}

fn flags(md: &HashMap<String, String>, key: &str, root: &Storage) -> Result<u64> {
    match md.get(key) {
        None => Ok(0),
        Some(v) => v
            .trim()
            .parse::<u64>()
            .map_err(|_| Error::unsupported_in(root.display().to_string(), format!("catalog table metadata {key} = {v:?} is not a number"))),
    }
}

/// Refuse a catalog with feature bits lancelet does not know (none are
/// defined yet) in `key`.
fn check_flags(snap: &Snapshot, key: &str, doing: &str, root: &Storage) -> Result<()> {
    let f = flags(&snap.table_metadata, key, root)?;
    if f != 0 {
        return Err(Error::unsupported_in(
            root.display().to_string(),
            format!("the namespace catalog needs feature flags {f} ({key}) to {doing}, which lancelet does not know"),
        ));
    }
    Ok(())
}

fn strings(rows: &RecordBatch, name: &str, root: &Storage) -> Result<Option<StringArray>> {
    let Some(col) = rows.column_by_name(name) else { return Ok(None) };
    let cast = arrow_cast::cast(col, &DataType::Utf8).map_err(|e| {
        Error::corrupt_in(root.display().to_string(), format!("catalog column {name} ({}) is not text: {e}", col.data_type())).with_source(e)
    })?;
    Ok(Some(cast.as_any().downcast_ref::<StringArray>().cloned().expect("cast to Utf8")))
}

/// Read the latest version of the catalog below `ns_root`.
pub fn read(ns_root: &Storage) -> Result<Snapshot> {
    let root = ns_root.child(MANIFEST_DIR)?;
    let Some(latest) = list_versions(&root)?.last().cloned() else { return Ok(Snapshot::default()) };
    let uri = root.display().to_string();
    let ds = Arc::new(Dataset::open_in(root.clone(), &uri, Some(VersionRef::Number(latest.version)))?);
    let table_metadata = ds.manifest().table_metadata.clone();
    let mut snap = Snapshot { version: ds.version(), table_metadata, ..Default::default() };
    check_flags(&snap, READER_FLAGS_KEY, "read it", &root)?;
    let opts = ScanOptions { with_row_address: true, ..Default::default() };
    let scanner = Scanner::new(ds.clone(), opts)?;
    let out_schema = scanner.schema().clone();
    let all = arrow_select::concat::concat_batches(&out_schema, &scanner.collect()?).map_err(Error::internal_arrow)?;
    let n = all.num_columns();
    let addrs = all.column(n - 1).as_any().downcast_ref::<UInt64Array>().map(|a| a.values().to_vec()).unwrap_or_default();
    let rows = all.project(&(0..n - 1).collect::<Vec<_>>()).map_err(Error::internal_arrow)?;
    let corrupt = |what: &str| Error::corrupt_in(uri.clone(), format!("not a namespace catalog: {what}"));
    let ids = strings(&rows, "object_id", &root)?.ok_or_else(|| corrupt("no object_id column"))?;
    let types = strings(&rows, "object_type", &root)?.ok_or_else(|| corrupt("no object_type column"))?;
    let locations = strings(&rows, "location", &root)?;
    let metadata = strings(&rows, "metadata", &root)?;
    let get = |a: &Option<StringArray>, i: usize| a.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i).to_string());
    for i in 0..rows.num_rows() {
        if ids.is_null(i) || types.is_null(i) {
            return Err(corrupt(&format!("row {i} has a null object_id or object_type")));
        }
        snap.entries.push(Entry {
            object_id: ids.value(i).to_string(),
            object_type: types.value(i).to_string(),
            location: get(&locations, i),
            metadata: get(&metadata, i),
        });
    }
    snap.data = Some(Stored { ds, rows, addrs });
    Ok(snap)
}

/// A row to add: a copy of an existing row (`base`, all columns) or a new
/// one (unknown columns null), with the known columns that are set here
/// replaced.
#[derive(Debug, Clone, Default)]
pub struct NewRow {
    /// Index of the row to copy.
    pub base: Option<usize>,
    /// New `object_id`.
    pub object_id: Option<String>,
    /// New `object_type`.
    pub object_type: Option<String>,
    /// New `location` (`Some(None)` clears it).
    pub location: Option<Option<String>>,
    /// New `metadata` (`Some(None)` clears it).
    pub metadata: Option<Option<String>>,
}

impl NewRow {
    /// A new namespace row.
    pub fn namespace(object_id: String, metadata: Option<String>) -> Self {
        NewRow { object_id: Some(object_id), object_type: Some(NAMESPACE.into()), location: Some(None), metadata: Some(metadata), base: None }
    }
    /// A new table row.
    pub fn table(object_id: String, location: String, metadata: Option<String>) -> Self {
        NewRow { object_id: Some(object_id), object_type: Some(TABLE.into()), location: Some(Some(location)), metadata: Some(metadata), base: None }
    }
}

/// The rows to add as a batch of the catalog's schema.
fn build_rows(snap: &Snapshot, add: &[NewRow]) -> Result<RecordBatch> {
    let schema = snap.schema();
    let base_idx = UInt32Array::from(add.iter().map(|r| r.base.map(|b| b as u32)).collect::<Vec<_>>());
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let old = snap.data.as_ref().and_then(|d| d.rows.column_by_name(field.name()));
        let copied = match old {
            Some(c) => Some(arrow_select::take::take(c.as_ref(), &base_idx, None).map_err(Error::internal_arrow)?),
            None => None,
        };
        let col: ArrayRef = match KNOWN.iter().position(|k| k == field.name()) {
            Some(k) => {
                let copied_text = copied.as_ref().map(|c| arrow_cast::cast(c, &DataType::Utf8)).transpose().map_err(Error::corrupt_arrow)?;
                let copied_text = copied_text.as_ref().and_then(|c| c.as_any().downcast_ref::<StringArray>());
                let values: Vec<Option<String>> = add
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let set = match k {
                            0 => r.object_id.clone().map(Some),
                            1 => r.object_type.clone().map(Some),
                            2 => r.location.clone(),
                            _ => r.metadata.clone(),
                        };
                        set.unwrap_or_else(|| copied_text.filter(|a| a.is_valid(i)).map(|a| a.value(i).to_string()))
                    })
                    .collect();
                let text: ArrayRef = Arc::new(StringArray::from(values));
                arrow_cast::cast(&text, field.data_type()).map_err(Error::corrupt_arrow)?
            }
            None => copied.unwrap_or_else(|| arrow_array::new_null_array(field.data_type(), add.len())),
        };
        if !field.is_nullable() && col.null_count() > 0 {
            return Err(Error::unsupported(format!(
                "the namespace catalog has a non-nullable column {:?} lancelet cannot fill for new rows",
                field.name()
            )));
        }
        cols.push(col);
    }
    RecordBatch::try_new(schema, cols).map_err(Error::internal_arrow)
}

/// Commit one change decided on `snap`: remove rows (indexes into
/// `snap.entries`) and add rows, as a single new version of the catalog.
/// Returns `Error::Conflict` when another writer committed first.
pub fn commit(ns_root: &Storage, snap: &Snapshot, remove: &[usize], add: &[NewRow]) -> Result<u64> {
    let root = ns_root.child(MANIFEST_DIR)?;
    check_flags(snap, WRITER_FLAGS_KEY, "change it", &root)?;
    let new_rows = build_rows(snap, add)?;
    let opts = CommitOptions { exact_version: true, ..Default::default() };
    let Some(stored) = &snap.data else {
        // The first change creates the catalog (version 1).
        if !remove.is_empty() {
            return Err(Error::Internal { what: "removing rows from a catalog that does not exist".into() });
        }
        let schema = LanceSchema::from_arrow(&snap.schema())?;
        let fragments = stage(&root, &schema, FileVersion::V2_2, new_rows)?;
        let owned_files = data_file_paths(&fragments);
        let op = Operation::Overwrite(pb::transaction::Overwrite {
            fragments,
            schema: schema.to_pb()?,
            schema_metadata: schema.metadata_pb(),
            ..Default::default()
        });
        let build = BuildOptions { enable_stable_row_ids: false, data_storage_version: FileVersion::V2_2.as_str().to_string() };
        return commit_txn(&root, &new_transaction(0, op), &CommitOptions { build, owned_files, ..opts });
    };
    let ds = &stored.ds;
    let file_version = dataset_file_version(ds.manifest())?;
    // An overwrite names the version of the files it wrote: the catalog's.
    let build = BuildOptions { enable_stable_row_ids: false, data_storage_version: file_version.as_str().to_string() };
    // The files staged for this change: a commit that loses removes them.
    let owned_files;
    let txn = if remove.is_empty() {
        if add.is_empty() {
            return Ok(snap.version);
        }
        let fragments = stage(&root, ds.lance_schema(), file_version, new_rows)?;
        owned_files = data_file_paths(&fragments);
        new_transaction(ds.version(), Operation::Append(pb::transaction::Append { fragments }))
    } else if add.is_empty() {
        let mut per_frag: BTreeMap<u64, RoaringBitmap> = BTreeMap::new();
        for &i in remove {
            let a = stored.addrs[i];
            per_frag.entry(a >> 32).or_default().insert(a as u32);
        }
        let ids: Vec<&str> = remove.iter().map(|&i| snap.entries[i].object_id.as_str()).collect();
        let (txn, written) = deletion_transaction(ds, per_frag, &format!("namespace catalog: remove {ids:?}"))?;
        owned_files = written;
        txn
    } else {
        let keep = BooleanArray::from((0..snap.entries.len()).map(|i| !remove.contains(&i)).collect::<Vec<_>>());
        let kept = arrow_select::filter::filter_record_batch(&stored.rows, &keep).map_err(Error::internal_arrow)?;
        let all = arrow_select::concat::concat_batches(&stored.rows.schema(), &[kept, new_rows]).map_err(Error::internal_arrow)?;
        let schema = ds.lance_schema();
        let fragments = stage(&root, schema, file_version, all)?;
        owned_files = data_file_paths(&fragments);
        new_transaction(
            ds.version(),
            Operation::Overwrite(pb::transaction::Overwrite {
                fragments,
                schema: schema.to_pb()?,
                schema_metadata: schema.metadata_pb(),
                ..Default::default()
            }),
        )
    };
    commit_txn(&root, &txn, &CommitOptions { build, owned_files, ..opts })
}

fn stage(root: &Storage, schema: &LanceSchema, version: FileVersion, rows: RecordBatch) -> Result<Vec<pb::DataFragment>> {
    let target = StageTarget { root, schema, version, max_rows_per_file: 1 << 20, name_prefix: "", group_bytes: 0, place: None };
    stage_fragments(&target, std::iter::once(Ok(rows)))
}
