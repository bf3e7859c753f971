//! Opening a vector index for search: reads `index.idx` and `auxiliary.idx`
//! of `_indices/{uuid}/` into a [`VectorIndex`].
//!
//! The type comes from the manifest entry's `VectorIndexDetails` (HNSW
//! params → IVF_HNSW_*, then pq / sq / rq / flat) and must agree with
//! `index.idx`'s `lance:index` metadata (`{"type", "distance_type"}`); the
//! metric from both likewise. What is read at open: the two files' tails,
//! the IVF message of each (centroids; partition row ranges, checked
//! against the files' row counts), the storage metadata and PQ codebook.
//! Partitions (and HNSW graphs) are read when first searched and kept.
//!
//! An entry without files and without fragments is the empty index
//! pylance commits when there were too few rows to train (§13 of
//! docs/research/vector-index.md): it opens as an index that finds
//! nothing. IVF_RQ indices are refused (`Unsupported`).
//!
//! Several segments of one index (deltas after `optimize_indices`, one
//! `IndexMetadata` each, same name): [`open_all`] opens them as one index
//! that searches each with the same query and merges.

use std::sync::Arc;

use prost::Message;

use super::hnsw::Graphs;
use super::ivf::{self, Centroids};
use super::layout;
use super::search::{EmptyIndex, IvfIndex, Segments};
use super::storage::{StorageKind, VectorStorage};
use super::{DistanceType, VectorIndex, VectorIndexType};
use crate::error::{Error, Result};
use crate::file::FileReader;
use crate::io::Storage;
use crate::proto::index::VectorIndexDetails;
use crate::proto::table as pb;
use crate::proto::type_url;

/// The type and metric a manifest entry's details describe.
pub fn describe(meta: &pb::IndexMetadata) -> Result<(VectorIndexType, DistanceType)> {
    let any = meta.index_details.as_ref().ok_or_else(|| Error::corrupt(format!("index {:?} has no details", meta.name)))?;
    if any.type_url != type_url::VECTOR_INDEX_DETAILS {
        return Err(Error::invalid_input(format!("index {:?} is not a vector index ({})", meta.name, any.type_url)));
    }
    let d = VectorIndexDetails::decode(any.value.as_slice())
        .map_err(|e| Error::corrupt(format!("VectorIndexDetails of index {:?} do not decode: {e}", meta.name)))?;
    let metric = DistanceType::from_pb(d.metric_type)?;
    let hnsw = d.hnsw.is_some();
    let t = match (hnsw, d.pq.is_some(), d.sq.is_some(), d.rq.is_some()) {
        (_, _, _, true) => VectorIndexType::IvfRq,
        (false, true, _, _) => VectorIndexType::IvfPq,
        (true, true, _, _) => VectorIndexType::IvfHnswPq,
        (false, _, true, _) => VectorIndexType::IvfSq,
        (true, _, true, _) => VectorIndexType::IvfHnswSq,
        (false, ..) => VectorIndexType::IvfFlat,
        (true, ..) => VectorIndexType::IvfHnswFlat,
    };
    Ok((t, metric))
}

fn file_size(meta: &pb::IndexMetadata, name: &str) -> Option<u64> {
    meta.files.iter().find(|f| f.path == name).map(|f| f.size_bytes)
}

/// Open the vector index described by `meta` whose files are in `dir`.
pub fn open(dir: &Storage, meta: &pb::IndexMetadata) -> Result<Arc<dyn VectorIndex>> {
    let (index_type, metric) = describe(meta)?;
    if index_type == VectorIndexType::IvfRq {
        return Err(Error::unsupported(format!("searching IVF_RQ indices (index {:?}) is not supported by lancelet", meta.name)));
    }
    let no_fragments =
        meta.fragment_bitmap.is_empty() || crate::index::rowset::parse_fragment_bitmap(&meta.fragment_bitmap).map(|b| b.is_empty()).unwrap_or(false);
    if meta.files.is_empty() && no_fragments {
        return Ok(Arc::new(EmptyIndex { index_type, metric }));
    }
    let index_reader = FileReader::open_storage_sized(dir.child(layout::INDEX_FILE)?, file_size(meta, layout::INDEX_FILE))?;
    let index_path = index_reader.path().to_string();
    let (centroids, graph_ranges) = read_model(&index_reader, index_type, metric).map_err(|e| e.in_file(&index_path))?;
    let aux_reader = FileReader::open_storage_sized(dir.child(layout::AUXILIARY_FILE)?, file_size(meta, layout::AUXILIARY_FILE))?;
    let aux_path = aux_reader.path().to_string();
    let storage = VectorStorage::open(aux_reader, metric, centroids.len()).map_err(|e| e.in_file(&aux_path))?;
    let expect_kind = match index_type {
        VectorIndexType::IvfFlat | VectorIndexType::IvfHnswFlat => matches!(storage.kind, StorageKind::Flat),
        VectorIndexType::IvfPq | VectorIndexType::IvfHnswPq => matches!(storage.kind, StorageKind::Pq(_)),
        _ => matches!(storage.kind, StorageKind::Sq(_)),
    };
    if !expect_kind {
        return Err(Error::corrupt_in(aux_path, format!("the storage of this {index_type} index is of another kind")));
    }
    if storage.dim != centroids.dim {
        return Err(Error::corrupt_in(aux_path, format!("vectors of dimension {}, centroids of {}", storage.dim, centroids.dim)));
    }
    let graphs = if index_type.has_hnsw() { Some(Graphs::open(index_reader, graph_ranges).map_err(|e| e.in_file(&index_path))?) } else { None };
    Ok(Arc::new(IvfIndex { index_type, metric, centroids, storage, graphs }))
}

/// Centroids and the partitions' graph rows of `index.idx`, checking its
/// `lance:index` metadata against the manifest's type and metric.
fn read_model(reader: &FileReader, index_type: VectorIndexType, metric: DistanceType) -> Result<(Centroids, Vec<std::ops::Range<u64>>)> {
    let md = reader.schema().metadata();
    if let Some(raw) = md.get(layout::INDEX_METADATA_KEY) {
        let v: serde_json::Value = serde_json::from_str(raw).map_err(|e| Error::corrupt(format!("lance:index is not JSON: {e}")))?;
        let t = v.get("type").and_then(|x| x.as_str()).unwrap_or("");
        if !t.eq_ignore_ascii_case(index_type.name()) {
            return Err(Error::corrupt(format!("index.idx says type {t:?}, the manifest {index_type}")));
        }
        let m = v.get("distance_type").and_then(|x| x.as_str()).unwrap_or("");
        if DistanceType::parse(m).ok() != Some(metric) {
            return Err(Error::corrupt(format!("index.idx says distance type {m:?}, the manifest {metric}")));
        }
    }
    let buffer: usize = match md.get(layout::IVF_METADATA_KEY) {
        Some(s) => s.parse().map_err(|_| Error::corrupt(format!("lance:ivf is {s:?}, not a buffer number")))?,
        None => layout::IVF_BUFFER as usize,
    };
    if buffer == 0 {
        return Err(Error::corrupt("lance:ivf names global buffer 0 (the schema)"));
    }
    let msg = ivf::decode(&reader.read_global_buffer(buffer)?)?;
    let centroids = Centroids::from_ivf(&msg)?;
    let ranges = ivf::partition_ranges(&msg, reader.num_rows(), Some(centroids.len()))?;
    Ok((centroids, ranges))
}

/// Open every segment of one index (`metas`: its `IndexMetadata` entries,
/// same name; `root` the dataset root) as one [`VectorIndex`]: a search
/// runs on each segment and the results are merged (best `k` by distance,
/// then row id; `partitions_searched` summed). One segment opens as
/// itself; empty segments find nothing.
pub fn open_all(root: &Storage, bases: &[pb::BasePath], metas: &[pb::IndexMetadata]) -> Result<Arc<dyn VectorIndex>> {
    let mut parts = Vec::with_capacity(metas.len());
    for m in metas {
        let dir = crate::index::meta::index_dir(root, bases, m)?;
        parts.push(open(&dir, m)?);
    }
    match parts.len() {
        0 => Err(Error::invalid_input("no index segments to open")),
        1 => Ok(parts.pop().expect("one")),
        _ => {
            let (t, m) = (parts[0].index_type(), parts[0].distance_type());
            if parts.iter().any(|p| p.index_type() != t || p.distance_type() != m) {
                return Err(Error::corrupt("segments of one vector index differ in type or metric"));
            }
            Ok(Arc::new(Segments { parts }))
        }
    }
}
