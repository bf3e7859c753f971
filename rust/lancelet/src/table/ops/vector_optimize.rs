//! Maintenance of vector indices as pylance 14 does it
//! (docs/research/vector-index.md §12): `optimize_indices` deltas and
//! merges, `retrain`, and the compaction remap.
//!
//! * **Delta**: rows of fragments no segment covers are assigned to the
//!   index's partitions with its centroids and encoded with its quantizer
//!   (same PQ codebook, same SQ bounds) into a new segment (new uuid, same
//!   name) covering only those fragments; its `dataset_version` is the
//!   version it was built at and its IVF loss the new rows' loss.
//! * **Merge** (`num_indices_to_merge = N`): the N newest segments' rows and
//!   the new rows become one segment (per-partition rows summed, ascending
//!   row id within a partition), covering all their fragments, with the
//!   oldest merged segment's `dataset_version`; the IVF loss is the new
//!   rows' (0.0 without new rows), as pylance writes it. The older segments
//!   stay as they are (they go back into the commit, which replaces every
//!   entry of the name).
//! * Without new rows and nothing to merge (`num_indices_to_merge` unset or
//!   0) nothing happens — in particular after deletions only.
//! * **Retrain**: the index is built again from every live row with new
//!   centroids and quantizer, the default number of partitions for the
//!   live rows, replacing every segment (`dataset_version` = the current
//!   version).
//! * **Compaction** ([`remap_vector_index`]): a segment holding row
//!   addresses is rewritten under a new uuid with the addresses mapped
//!   (deleted rows dropped), centroids and loss kept. Segments keyed by
//!   stable row ids need no remap; HNSW segments are left alone (their
//!   graphs would have to be rebuilt; their moved rows are then searched
//!   flat).
//!
//! HNSW and RQ indices (which lancelet does not build) cannot be extended:
//! optimizing one that has work to do raises `Unsupported`. A failure
//! removes the new directory; nothing is committed.

use std::sync::Arc;

use arrow_schema::DataType;
use prost::Message;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::ids::new_uuid;
use crate::index::meta::{uuid_bytes, IndexInfo, INDICES_DIR};
use crate::index::rowset::fragment_bitmap_bytes;
use crate::index::vector::build::{self, BuildParams, Vectors};
use crate::index::vector::open::describe;
use crate::index::vector::segment::{self, Pick, Quantizer, Segment};
use crate::index::vector::VectorIndexType;
use crate::proto::index as ipb;
use crate::proto::table as pb;
use crate::table::dataset::Dataset;
use crate::table::ops::index::{index_file_version, remove_dir};
use crate::table::ops::vector_index::{load, VectorIndexOptions};
use crate::table::properties::CommitProperties;
use pb::transaction::RewrittenIndex;

/// The vector options of `optimize_indices` (pylance's names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VectorOptimizeOptions {
    /// Merge the new rows with the N newest segments (`None`/`0`: a new delta).
    pub num_indices_to_merge: Option<usize>,
    /// Build the index again with new centroids and quantizer.
    pub retrain: bool,
}

/// Whether an entry is a vector index.
pub fn is_vector(info: &IndexInfo) -> bool {
    info.type_url() == crate::proto::type_url::VECTOR_INDEX_DETAILS
}

fn index_dir(ds: &Dataset, m: &pb::IndexMetadata) -> Result<crate::io::Storage> {
    ds.index_dir(m)
}

/// Optimize the vector index whose entries are `segments` (manifest
/// order, one name). Returns the entries to commit under that name (the
/// kept older segments, then the new one) and the replaced entries, or
/// `None` when there is nothing to do.
pub fn optimize_vector_index(
    ds: &Arc<Dataset>,
    segments: &[&IndexInfo],
    opts: &VectorOptimizeOptions,
    props: &CommitProperties,
) -> Result<Option<(Vec<pb::IndexMetadata>, Vec<pb::IndexMetadata>)>> {
    let Some(last) = segments.last() else { return Ok(None) };
    let name = last.name().to_string();
    let reuse = crate::index::frag_reuse::find(&ds.manifest_file().indices()?.into_iter().map(|i| i.pb).collect::<Vec<_>>(), ds.root())?;
    let mut covered = RoaringBitmap::new();
    for s in segments {
        covered |= match &reuse {
            Some(r) => r.remap_coverage(&s.fragment_bitmap, !ds.has_stable_row_ids()),
            None => s.fragment_bitmap.clone(),
        };
    }
    let unindexed: Vec<u64> = ds.fragments().iter().map(|f| f.id).filter(|id| !covered.contains(*id as u32)).collect();
    let to_merge = if opts.retrain { segments.len() } else { opts.num_indices_to_merge.unwrap_or(0).min(segments.len()) };
    if unindexed.is_empty() && to_merge == 0 {
        return Ok(None);
    }
    let (t, metric) = describe(&last.pb)?;
    if t.has_hnsw() || t == VectorIndexType::IvfRq {
        return Err(Error::unsupported(format!(
            "optimizing {t} index {name:?}: lancelet cannot extend or merge {t} indices (it does not build their graphs or codes); rebuild it with pylance or replace it"
        )));
    }
    let [field_id] = last.pb.fields[..] else {
        return Err(Error::corrupt(format!("vector index {name:?} names {} fields", last.pb.fields.len())));
    };
    let field = ds
        .lance_schema()
        .fields
        .iter()
        .find(|f| f.id == field_id)
        .ok_or_else(|| Error::corrupt(format!("vector index {name:?} is on field {field_id}, which the dataset does not have")))?;
    let column = field.arrow.name().clone();
    let (elem, dim) = match field.arrow.data_type() {
        DataType::FixedSizeList(item, d) => (item.data_type().clone(), *d as usize),
        other => return Err(Error::corrupt(format!("vector index {name:?} is on column {column} of type {other}"))),
    };
    let details = last.pb.index_details.as_ref().map(|d| ipb::VectorIndexDetails::decode(d.value.as_slice())).transpose();
    let details = details.map_err(|e| Error::corrupt(format!("VectorIndexDetails of {name:?}: {e}")))?.unwrap_or_default();
    if opts.retrain {
        return retrain(ds, segments, &column, t, metric, &details, props).map(Some);
    }
    let empty = |s: &&IndexInfo| s.pb.files.is_empty();
    if segments.iter().any(empty) {
        return Err(Error::unsupported(format!(
            "optimizing vector index {name:?}: a segment of it is empty (too few rows to train when it was built); retrain it (retrain=True)"
        )));
    }

    let uuid = new_uuid();
    let dir = ds.root().child(&format!("{INDICES_DIR}/{uuid}"))?;
    let result = (|| {
        let model = segment::read(&index_dir(ds, &last.pb)?)?;
        let merged: Vec<&IndexInfo> = segments[segments.len() - to_merge..].to_vec();
        let mut sources: Vec<Segment> = Vec::new();
        for m in &merged {
            sources.push(if m.uuid == last.uuid { model.clone() } else { segment::read(&index_dir(ds, &m.pb)?)? });
        }
        // New rows: assigned and encoded with the index's model.
        let mut loss = 0.0;
        if !unindexed.is_empty() {
            let data = load(ds, &column, &elem, dim, Some(unindexed.as_slice()), props)?;
            if !data.ids.is_empty() {
                let (pq_codebook, num_sub_vectors, num_bits, sq_bounds) = match &model.quantizer {
                    Quantizer::Flat => (None, 0, 8, None),
                    Quantizer::Pq { codebook, num_bits, num_sub_vectors } => (Some(codebook.clone()), *num_sub_vectors, *num_bits, None),
                    Quantizer::Sq { bounds, num_bits } => (None, 0, *num_bits, Some(*bounds)),
                };
                let p = BuildParams {
                    index_type: t,
                    metric,
                    num_partitions: model.num_partitions(),
                    ivf_centroids: Some(model.centroids.clone()),
                    pq_codebook,
                    num_sub_vectors,
                    num_bits,
                    sample_rate: 256,
                    max_iters: 50,
                    seed: 0,
                    sq_bounds,
                    pq_delta_dot: true,
                };
                let v = Vectors { dim, values: &data.values, original: data.original.clone(), row_ids: &data.ids };
                let files = build::build_files(&v, &p)?;
                loss = files.loss;
                sources.push(segment::from_files(&files)?);
            }
        }
        // Rows of merged segments written before deferred compactions
        // move with them.
        let mut picks: Vec<Pick> = Vec::new();
        for (k, s) in sources.iter().enumerate() {
            for (i, &id) in s.row_ids.iter().enumerate() {
                let id = match (&reuse, ds.has_stable_row_ids()) {
                    (Some(r), false) => match r.remap(id) {
                        Some(a) => a,
                        None => continue,
                    },
                    _ => id,
                };
                picks.push((s.partitions[i], id, k, i));
            }
        }
        let refs: Vec<&Segment> = sources.iter().collect();
        let files = segment::write_picks(&dir, index_file_version(ds)?, &model, loss, picks, &refs)?;
        let mut bitmap: RoaringBitmap = unindexed.iter().map(|&id| id as u32).collect();
        for m in &merged {
            bitmap |= &m.fragment_bitmap;
        }
        let dataset_version = merged.iter().map(|m| m.pb.dataset_version).min().unwrap_or(ds.version());
        let meta = entry(&uuid, last, dataset_version, bitmap, &files)?;
        let kept: Vec<pb::IndexMetadata> = segments[..segments.len() - to_merge].iter().map(|s| s.pb.clone()).collect();
        let mut new = kept;
        new.push(meta);
        Ok((new, merged.iter().map(|m| m.pb.clone()).collect()))
    })();
    if result.is_err() {
        remove_dir(&dir);
    }
    result.map(Some)
}

/// A new entry like `like` (name, field, details, index version) for the
/// files in `uuid`.
fn entry(uuid: &str, like: &IndexInfo, dataset_version: u64, bitmap: RoaringBitmap, files: &[(String, u64)]) -> Result<pb::IndexMetadata> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Ok(pb::IndexMetadata {
        uuid: Some(pb::Uuid { uuid: uuid_bytes(uuid)? }),
        fields: like.pb.fields.clone(),
        name: like.name().to_string(),
        dataset_version,
        fragment_bitmap: fragment_bitmap_bytes(bitmap),
        index_details: like.pb.index_details.clone(),
        index_version: like.pb.index_version,
        created_at: Some(now.as_millis() as u64),
        base_id: None,
        files: files.iter().map(|(path, size)| pb::IndexFile { path: path.clone(), size_bytes: *size }).collect(),
    })
}

/// `retrain=True`: build the index again over every live row with the
/// default number of partitions and the recorded parameters.
fn retrain(
    ds: &Arc<Dataset>,
    segments: &[&IndexInfo],
    column: &str,
    t: VectorIndexType,
    metric: crate::index::vector::DistanceType,
    details: &ipb::VectorIndexDetails,
    props: &CommitProperties,
) -> Result<(Vec<pb::IndexMetadata>, Vec<pb::IndexMetadata>)> {
    let param = |k: &str, d: usize| details.build_params.iter().find(|p| p.key == k).and_then(|p| p.value.parse().ok()).unwrap_or(d);
    let mut o = VectorIndexOptions::new(column, t.name());
    o.metric = metric.as_str().to_string();
    o.name = Some(segments[0].name().to_string());
    o.replace = true;
    o.num_sub_vectors = details.pq.as_ref().map(|p| p.num_sub_vectors as usize);
    o.num_bits = details.pq.as_ref().map(|p| p.num_bits).or(details.sq.as_ref().map(|s| s.num_bits));
    o.sample_rate = param("lance.ivf.sample_rate", 256);
    o.max_iters = param("lance.ivf.max_iters", 50);
    let meta = crate::table::ops::vector_index::build_entry(ds, &o, props)?;
    Ok((vec![meta], segments.iter().map(|s| s.pb.clone()).collect()))
}

/// The compaction hook for vector indices (see the module docs): the
/// `Rewrite.rewritten_indices` entry of `index` with its row addresses
/// mapped by `moved` (`None`: not moved; `Some(None)`: deleted), or `None`
/// when the segment is left as it is.
pub fn remap_vector_index(ds: &Dataset, index: &pb::IndexMetadata, moved: &dyn Fn(u64) -> Option<Option<u64>>) -> Result<Option<RewrittenIndex>> {
    if ds.has_stable_row_ids() || index.files.is_empty() {
        return Ok(None);
    }
    let (t, _) = describe(index)?;
    if t.has_hnsw() || t == VectorIndexType::IvfRq {
        return Ok(None);
    }
    let old = index.uuid.as_ref().ok_or_else(|| Error::corrupt(format!("index {:?} has no uuid", index.name)))?;
    let src = index_dir(ds, index)?;
    let uuid = new_uuid();
    let dst = ds.root().child(&format!("{INDICES_DIR}/{uuid}"))?;
    let files = match segment::remap(&src, &dst, index_file_version(ds)?, &|a| moved(a).unwrap_or(Some(a))) {
        Ok(f) => f,
        Err(e) => {
            remove_dir(&dst);
            return Err(e.context(format_args!("remapping vector index {:?} after a compaction", index.name)));
        }
    };
    Ok(Some(RewrittenIndex {
        old_id: Some(old.clone()),
        new_id: Some(pb::Uuid { uuid: uuid_bytes(&uuid)? }),
        new_index_details: index.index_details.clone(),
        new_index_version: index.index_version.unwrap_or(0).max(0) as u32,
        new_index_files: files.into_iter().map(|(path, size_bytes)| pb::IndexFile { path, size_bytes }).collect(),
    }))
}
