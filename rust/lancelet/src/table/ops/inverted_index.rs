//! `create_scalar_index(column, "INVERTED" | "FTS", **options)`: build a
//! full-text-search index in pylance 14's format v2 and commit it as one
//! `CreateIndex` (replacing an index of the same name).
//!
//! The column is read by a streaming scan (row addresses, or stable row ids
//! on datasets that have them; deleted rows left out) and handed batch by
//! batch to [`InvertedBuilder`], which writes partitions as its memory
//! budget fills: a column of any size is indexed in bounded memory. Nothing
//! is visible until the commit; a failed build or commit removes the new
//! directory.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_schema::DataType;

use crate::error::{Error, Result};
use crate::ids::new_uuid;
use crate::index::inverted::build::InvertedBuilder;
use crate::index::inverted::tokenizer::TokenizerParams;
use crate::index::inverted::write::details;
use crate::index::meta::{new_metadata, IndexInfo, INDICES_DIR};
use crate::index::IndexKind;
use crate::proto::table as pb;
use crate::table::dataset::Dataset;
use crate::table::ops::index::{commit_index_change, default_name, index_file_version, remove_dir};
use crate::table::ops::report;
use crate::table::properties::{CommitProperties, Committed};
use crate::table::scan::{ScanOptions, Scanner, ROW_ADDR, ROW_ID};

/// Type URL of an INVERTED index's `index_details`.
pub const TYPE_URL: &str = "/lance.table.InvertedIndexDetails";
/// `index_version` pylance 14 records for a format v2 INVERTED index.
pub const INDEX_VERSION: i32 = 2;

/// Whether an `index_type` argument names an INVERTED index (`INVERTED`,
/// `FTS`, optionally followed by `:{json options}`).
pub fn is_inverted_spec(spec: &str) -> bool {
    let name = spec.split_once(':').map_or(spec, |(n, _)| n).trim();
    name.eq_ignore_ascii_case("INVERTED") || name.eq_ignore_ascii_case("FTS")
}

/// The options of an `INVERTED:{json}` spec, and the partition memory
/// budget in bytes (`memory_limit`, MiB, when given).
fn parse_options(spec: &str) -> Result<(TokenizerParams, Option<usize>)> {
    let map = match spec.split_once(':') {
        None => serde_json::Map::new(),
        Some((_, json)) => match serde_json::from_str::<serde_json::Value>(json) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(v) => return Err(Error::invalid_input(format!("INVERTED index options must be an object, not {v}"))),
            Err(e) => return Err(Error::invalid_input(format!("INVERTED index options {json:?}: {e}"))),
        },
    };
    let budget = map.get("memory_limit").and_then(serde_json::Value::as_u64).map(|mib| (mib as usize).saturating_mul(1 << 20));
    Ok((TokenizerParams::from_options(&map)?, budget))
}

/// Whether a column of type `dt` can take an INVERTED index in lancelet.
fn check_type(column: &str, dt: &DataType) -> Result<()> {
    match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(()),
        other => Err(Error::invalid_input(format!("INVERTED index column {column} must be string or large string, but got {other}"))),
    }
}

/// Build the index files of `column` into a new `_indices/<uuid>/` and
/// return its manifest entry (the directory is removed on error).
pub(crate) fn build_inverted_segment(
    ds: &Arc<Dataset>,
    column: &str,
    params: &TokenizerParams,
    budget: Option<usize>,
    name: &str,
    props: &CommitProperties,
) -> Result<pb::IndexMetadata> {
    let field = ds
        .lance_schema()
        .fields
        .iter()
        .find(|f| f.arrow.name() == column)
        .ok_or_else(|| Error::invalid_input(format!("cannot index column {column:?}: dataset {} has no such column", ds.uri())))?;
    check_type(column, field.arrow.data_type())?;
    let field_id = field.id;
    let uuid = new_uuid();
    let dir = ds.root().child(&format!("{INDICES_DIR}/{uuid}"))?;
    let progress = &props.progress;
    let result = (|| {
        let by_id = ds.has_stable_row_ids();
        let opts = ScanOptions {
            columns: Some(vec![column.to_string()]),
            with_row_id: by_id,
            with_row_address: !by_id,
            batch_size: Some(1 << 14),
            ..Default::default()
        };
        let total = (0..ds.fragments().len()).map(|i| ds.live_rows(i)).sum::<Result<u64>>()?;
        report(progress, "load_data", 0, total)?;
        let mut builder = InvertedBuilder::new(params.clone(), dir.clone(), index_file_version(ds)?)?;
        if let Some(bytes) = budget {
            builder = builder.with_memory_budget(bytes);
        }
        let id_col = if by_id { ROW_ID } else { ROW_ADDR };
        let mut done = 0u64;
        for b in Scanner::new(ds.clone(), opts)?.stream()? {
            let b = b?;
            let ids = b.column_by_name(id_col).ok_or_else(|| Error::internal(format!("scan returned no {id_col}")))?;
            builder.add_batch(b.column(0), ids.as_primitive::<UInt64Type>().values())?;
            done += b.num_rows() as u64;
            report(progress, "load_data", done, total)?;
        }
        report(progress, "build", 0, 1)?;
        let files = builder.finish()?;
        report(progress, "build", 1, 1)?;
        let frags = ds
            .fragments()
            .iter()
            .map(|f| u32::try_from(f.id).map_err(|_| Error::corrupt(format!("fragment id {} exceeds 32 bits", f.id))))
            .collect::<Result<Vec<u32>>>()?;
        // new_metadata fills the common fields; the details and version are
        // INVERTED's own.
        let mut meta = new_metadata(&uuid, name, field_id, IndexKind::BTree, ds.version(), frags, ds.has_stable_row_ids(), &files)?;
        meta.index_details = Some(prost_types::Any { type_url: TYPE_URL.to_string(), value: details(params) });
        meta.index_version = Some(INDEX_VERSION);
        Ok(meta)
    })();
    if result.is_err() {
        remove_dir(&dir);
    }
    result
}

/// `create_scalar_index(column, "INVERTED"[:{options}], name, replace)`.
pub fn create_inverted_index(
    ds: &Arc<Dataset>,
    column: &str,
    spec: &str,
    name: Option<&str>,
    replace: bool,
    props: &CommitProperties,
) -> Result<Committed<()>> {
    let (params, budget) = parse_options(spec)?;
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
    let meta = build_inverted_segment(ds, column, &params, budget, &name, props)?;
    let dataset = commit_index_change(ds, vec![meta], existing.into_iter().map(|i| i.pb).collect(), props)?;
    Ok(Committed::new(dataset, ()))
}

/// The tokenizer parameters and partition ids an INVERTED index directory
/// records in its `metadata.lance`.
pub fn read_metadata(dir: &crate::io::Storage) -> Result<(TokenizerParams, Vec<u64>)> {
    let r = crate::file::FileReader::open_storage(dir.child("metadata.lance")?)?;
    let path = r.path().to_string();
    let meta = r.schema().metadata();
    let params = meta.get("params").ok_or_else(|| Error::corrupt_in(path.clone(), "INVERTED metadata has no params"))?;
    let params = TokenizerParams::from_json(params).map_err(|e| e.in_file(&path))?;
    let parts = meta.get("partitions").ok_or_else(|| Error::corrupt_in(path.clone(), "INVERTED metadata has no partitions"))?;
    let parts: Vec<u64> = serde_json::from_str(parts).map_err(|e| Error::corrupt_in(path.clone(), format!("INVERTED partitions {parts:?}: {e}")))?;
    Ok((params, parts))
}

/// `optimize_indices` for an INVERTED index of one segment, as pylance
/// merges: a new segment holding a copy of the old partitions' files and a
/// new partition built from the fragments the index does not cover yet
/// (several segments are rebuilt into one from all fragments). `None` when
/// the index covers every fragment already.
pub(crate) fn optimize_inverted(
    ds: &Arc<Dataset>,
    segments: &[&IndexInfo],
    column: &str,
    props: &CommitProperties,
) -> Result<Option<pb::IndexMetadata>> {
    let all: roaring::RoaringBitmap = ds.fragments().iter().map(|f| f.id as u32).collect();
    let newest = segments.last().ok_or_else(|| Error::internal("an index without segments"))?;
    let old_dir = ds.index_dir(&newest.pb)?;
    let (params, parts) = read_metadata(&old_dir)?;
    let name = newest.name().to_string();
    if segments.len() > 1 {
        return build_inverted_segment(ds, column, &params, None, &name, props).map(Some);
    }
    let missing = &all - &newest.fragment_bitmap;
    if missing.is_empty() {
        return Ok(None);
    }
    let field_id = newest.pb.fields.first().copied().ok_or_else(|| Error::corrupt("an INVERTED index entry without a field"))?;
    let uuid = new_uuid();
    let dir = ds.root().child(&format!("{INDICES_DIR}/{uuid}"))?;
    let result = (|| {
        let mut files = Vec::new();
        for f in &newest.pb.files {
            if f.path != "metadata.lance" {
                old_dir.child(&f.path)?.copy_to(&dir.child(&f.path)?)?;
                files.push((f.path.clone(), f.size_bytes));
            }
        }
        let by_id = ds.has_stable_row_ids();
        let opts = ScanOptions {
            columns: Some(vec![column.to_string()]),
            with_row_id: by_id,
            with_row_address: !by_id,
            batch_size: Some(1 << 14),
            fragments: Some(missing.iter().map(u64::from).collect()),
            ..Default::default()
        };
        let mut builder = InvertedBuilder::new(params.clone(), dir.clone(), index_file_version(ds)?)?.with_existing_partitions(&parts);
        let id_col = if by_id { ROW_ID } else { ROW_ADDR };
        for b in Scanner::new(ds.clone(), opts)?.stream()? {
            let b = b?;
            let ids = b.column_by_name(id_col).ok_or_else(|| Error::internal(format!("scan returned no {id_col}")))?;
            builder.add_batch(b.column(0), ids.as_primitive::<UInt64Type>().values())?;
        }
        files.extend(builder.finish()?);
        let mut meta =
            new_metadata(&uuid, &name, field_id, IndexKind::BTree, newest.pb.dataset_version, all.iter(), ds.has_stable_row_ids(), &files)?;
        meta.index_details = newest.pb.index_details.clone();
        meta.index_version = Some(INDEX_VERSION);
        Ok(meta)
    })();
    if result.is_err() {
        remove_dir(&dir);
    }
    result.map(Some)
}

/// A compaction's rewrite of an INVERTED index that holds row addresses:
/// the index is rebuilt under a new uuid from the compacted rows it
/// covered, each document under its new address (deleted rows dropped),
/// with the old index's parameters and a single partition sequence.
/// Documents come in new-address order: first the fragments the compaction
/// left alone, then the rewritten ones in order. `None` for an index keyed
/// by stable row ids (a compaction does not change them).
pub fn remap_inverted(
    ds: &Dataset,
    index: &pb::IndexMetadata,
    moved: &dyn Fn(u64) -> Option<Option<u64>>,
) -> Result<Option<pb::transaction::RewrittenIndex>> {
    if ds.has_stable_row_ids() {
        return Ok(None);
    }
    let old = index.uuid.as_ref().ok_or_else(|| Error::corrupt(format!("index {:?} has no uuid", index.name)))?;
    let old_dir = ds.index_dir(index)?;
    let (params, _) = read_metadata(&old_dir)?;
    let [field_id] = index.fields[..] else {
        return Err(Error::corrupt(format!("INVERTED index {:?} has {} fields", index.name, index.fields.len())));
    };
    let column = ds
        .lance_schema()
        .fields
        .iter()
        .find(|f| f.id == field_id)
        .map(|f| f.arrow.name().clone())
        .ok_or_else(|| Error::corrupt(format!("INVERTED index {:?} is on field {field_id}, which the schema lacks", index.name)))?;
    let covered = IndexInfo::from_pb(index)?.fragment_bitmap;
    let (mut kept, mut rewritten) = (Vec::new(), Vec::new());
    for f in ds.fragments() {
        if covered.contains(f.id as u32) {
            if moved(f.id << 32).is_some() {
                rewritten.push(f.id);
            } else {
                kept.push(f.id);
            }
        }
    }
    let ds = Arc::new(ds.checkout(crate::table::dataset::VersionRef::Number(ds.version()))?);
    let uuid = new_uuid();
    let dir = ds.root().child(&format!("{INDICES_DIR}/{uuid}"))?;
    let result = (|| {
        let mut builder = InvertedBuilder::new(params, dir.clone(), index_file_version(&ds)?)?;
        for frags in [kept, rewritten] {
            if frags.is_empty() {
                continue;
            }
            let opts = ScanOptions {
                columns: Some(vec![column.clone()]),
                with_row_address: true,
                batch_size: Some(1 << 14),
                fragments: Some(frags),
                ..Default::default()
            };
            for b in Scanner::new(ds.clone(), opts)?.stream()? {
                let b = b?;
                let addrs = b.column_by_name(ROW_ADDR).ok_or_else(|| Error::internal("scan returned no _rowaddr"))?;
                let addrs = addrs.as_primitive::<UInt64Type>().values();
                let mut keep = Vec::with_capacity(addrs.len());
                let mut ids = Vec::with_capacity(addrs.len());
                for (i, &a) in addrs.iter().enumerate() {
                    match moved(a) {
                        None => {
                            keep.push(i as u32);
                            ids.push(a);
                        }
                        Some(Some(n)) => {
                            keep.push(i as u32);
                            ids.push(n);
                        }
                        Some(None) => {}
                    }
                }
                let values =
                    arrow_select::take::take(b.column(0).as_ref(), &arrow_array::UInt32Array::from(keep), None).map_err(Error::internal_arrow)?;
                builder.add_batch(&values, &ids)?;
            }
        }
        builder.finish()
    })();
    let files = match result {
        Ok(f) => f,
        Err(e) => {
            remove_dir(&dir);
            return Err(e.context(format_args!("remapping index {:?} after a compaction", index.name)));
        }
    };
    Ok(Some(pb::transaction::RewrittenIndex {
        old_id: Some(old.clone()),
        new_id: Some(pb::Uuid { uuid: crate::index::meta::uuid_bytes(&uuid)? }),
        new_index_details: index.index_details.clone(),
        new_index_version: INDEX_VERSION as u32,
        new_index_files: files.into_iter().map(|(path, size_bytes)| pb::IndexFile { path, size_bytes }).collect(),
    }))
}
