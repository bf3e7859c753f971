//! `Dataset.create_index(column, "IVF_FLAT" | "IVF_PQ" | "IVF_SQ", ...)`:
//! read the column's live vectors with their row ids (row addresses, or
//! stable row ids on datasets that have them), leave out null vectors and
//! vectors holding NaN or infinities (as pylance does), build the two index
//! files in `_indices/{uuid}/` ([`crate::index::vector::build`]) and commit
//! one `CreateIndex` whose entry carries `VectorIndexDetails`
//! (docs/research/vector-index.md §3). A failed build or commit removes
//! the new directory; nothing else changes.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type, UInt64Type};
use arrow_array::{Array, ArrayRef, FixedSizeListArray};
use arrow_schema::DataType;
use prost::Message;

use crate::error::{Error, Result};
use crate::ids::new_uuid;
use crate::index::meta::{uuid_bytes, IndexInfo, INDICES_DIR};
use crate::index::rowset::fragment_bitmap_bytes;
use crate::index::vector::build::{self, BuildParams, Vectors};
use crate::index::vector::layout::INDEX_VERSION;
use crate::index::vector::{DistanceType, VectorIndexType};
use crate::proto::index as ipb;
use crate::proto::table as pb;
use crate::table::dataset::Dataset;
use crate::table::ops::index::{claim_index_name, commit_index_change, index_file_version, remove_dir};
use crate::table::ops::report;
use crate::table::properties::{CommitProperties, Committed};
use crate::table::scan::{ScanOptions, Scanner, ROW_ADDR, ROW_ID};

/// The arguments of `create_index` (pylance's names and defaults).
#[derive(Debug, Clone)]
pub struct VectorIndexOptions {
    /// The vector column.
    pub column: String,
    /// `IVF_FLAT`, `IVF_PQ`, `IVF_SQ` (case-insensitive).
    pub index_type: String,
    /// Index name (default `{column}_idx`).
    pub name: Option<String>,
    /// `l2` (default), `euclidean`, `cosine`, `dot`.
    pub metric: String,
    /// Replace an index of the same name.
    pub replace: bool,
    /// IVF partitions (default: live rows / target partition size, 1..=4096).
    pub num_partitions: Option<usize>,
    /// Rows per partition the default aims at (pylance's per-type default).
    pub target_partition_size: Option<usize>,
    /// User centroids, stored bit-exactly.
    pub ivf_centroids: Option<ipb::Tensor>,
    /// User PQ codebook (`[num_sub_vectors][2^num_bits][dim/num_sub_vectors]`).
    pub pq_codebook: Option<ipb::Tensor>,
    /// PQ sub-vectors.
    pub num_sub_vectors: Option<usize>,
    /// PQ (4 | 8) / SQ bits; default 8.
    pub num_bits: Option<u32>,
    /// Training rows per centroid; default 256.
    pub sample_rate: usize,
    /// k-means rounds at most; default 50.
    pub max_iters: usize,
    /// RNG seed of sampling and k-means (default a fixed one).
    pub seed: Option<u64>,
}

impl VectorIndexOptions {
    /// Options with pylance's defaults.
    pub fn new(column: &str, index_type: &str) -> Self {
        VectorIndexOptions {
            column: column.to_string(),
            index_type: index_type.to_string(),
            name: None,
            metric: "l2".to_string(),
            replace: false,
            num_partitions: None,
            target_partition_size: None,
            ivf_centroids: None,
            pq_codebook: None,
            num_sub_vectors: None,
            num_bits: None,
            sample_rate: 256,
            max_iters: 50,
            seed: None,
        }
    }
}

/// pylance 14's default rows per partition of a type (§2).
fn default_target(t: VectorIndexType) -> usize {
    match t {
        VectorIndexType::IvfFlat | VectorIndexType::IvfRq => 4096,
        VectorIndexType::IvfPq | VectorIndexType::IvfSq => 8192,
        _ => 1 << 20,
    }
}

/// The build-parameter map pylance records (`VectorIndexDetails` field 9).
fn build_params(t: VectorIndexType, sample_rate: usize, max_iters: usize) -> Vec<ipb::BuildParam> {
    let mut kv = vec![
        ("lance.ivf.sample_rate", sample_rate.to_string()),
        ("lance.ivf.max_iters", max_iters.to_string()),
        ("lance.ivf.shuffle_partition_batches", "10240".to_string()),
        ("lance.ivf.shuffle_partition_concurrency", "2".to_string()),
        ("lance.skip_transpose", "false".to_string()),
    ];
    match t {
        VectorIndexType::IvfPq | VectorIndexType::IvfHnswPq => kv.extend([
            ("lance.pq.sample_rate", sample_rate.to_string()),
            ("lance.pq.max_iters", max_iters.to_string()),
            ("lance.pq.kmeans_redos", "1".to_string()),
        ]),
        VectorIndexType::IvfSq | VectorIndexType::IvfHnswSq => kv.push(("lance.sq.sample_rate", sample_rate.to_string())),
        _ => {}
    }
    kv.into_iter().map(|(k, v)| ipb::BuildParam { key: k.to_string(), value: v }).collect()
}

/// The `VectorIndexDetails` of a new index.
pub fn details(
    t: VectorIndexType,
    metric: DistanceType,
    num_sub_vectors: usize,
    num_bits: u32,
    sample_rate: usize,
    max_iters: usize,
) -> ipb::VectorIndexDetails {
    ipb::VectorIndexDetails {
        metric_type: metric.to_pb() as i32,
        hnsw: None,
        pq: (t == VectorIndexType::IvfPq).then_some(ipb::PqIndexParams { num_bits, num_sub_vectors: num_sub_vectors as u32 }),
        sq: (t == VectorIndexType::IvfSq).then_some(ipb::SqIndexParams { num_bits }),
        rq: None,
        flat: (t == VectorIndexType::IvfFlat).then_some(ipb::FlatIndexParams {}),
        build_params: build_params(t, sample_rate, max_iters),
    }
}

/// The column's vectors as f32 rows, their row ids, and the original
/// element values (flattened), leaving out null and non-finite vectors.
pub(crate) struct Loaded {
    pub(crate) dim: usize,
    pub(crate) values: Vec<f32>,
    pub(crate) original: ArrayRef,
    pub(crate) ids: Vec<u64>,
}

/// The live vectors of `column` (of the fragments `only`, default all).
pub(crate) fn load(ds: &Arc<Dataset>, column: &str, elem: &DataType, dim: usize, only: Option<&[u64]>, props: &CommitProperties) -> Result<Loaded> {
    let by_id = ds.has_stable_row_ids();
    let opts = ScanOptions {
        columns: Some(vec![column.to_string()]),
        with_row_id: by_id,
        with_row_address: !by_id,
        batch_size: Some(1 << 16),
        fragments: only.map(<[u64]>::to_vec),
        ..Default::default()
    };
    let total = (0..ds.fragments().len())
        .filter(|&i| only.is_none_or(|o| o.contains(&ds.fragments()[i].id)))
        .map(|i| ds.live_rows(i))
        .sum::<Result<u64>>()?;
    report(&props.progress, "load_data", 0, total)?;
    let id_col = if by_id { ROW_ID } else { ROW_ADDR };
    let mut values: Vec<f32> = Vec::new();
    let mut keep_idx: Vec<ArrayRef> = Vec::new();
    let mut ids: Vec<u64> = Vec::new();
    let mut read = 0u64;
    for b in Scanner::new(ds.clone(), opts)?.stream()? {
        let b = b?;
        let col = b.column(0).as_fixed_size_list_opt().ok_or_else(|| Error::Internal { what: "scan returned no fixed-size list".into() })?;
        let rid = b.column_by_name(id_col).ok_or_else(|| Error::Internal { what: format!("scan returned no {id_col}") })?;
        let rid = rid.as_primitive::<UInt64Type>().values();
        let child = col.values().slice(col.offset() * dim, col.len() * dim);
        let f: Vec<f32> = match elem {
            DataType::Float16 => child.as_primitive::<Float16Type>().values().iter().map(|v| v.to_f32()).collect(),
            DataType::Float32 => child.as_primitive::<Float32Type>().values().to_vec(),
            DataType::Float64 => child.as_primitive::<Float64Type>().values().iter().map(|v| *v as f32).collect(),
            other => return Err(Error::unsupported(format!("building vector indices on {other} vectors"))),
        };
        let child_nulls = child.logical_nulls();
        let mut keep: Vec<u32> = Vec::with_capacity(col.len());
        for i in 0..col.len() {
            let row = &f[i * dim..(i + 1) * dim];
            let ok = col.is_valid(i)
                && row.iter().all(|v| v.is_finite())
                && child_nulls.as_ref().is_none_or(|n| (i * dim..(i + 1) * dim).all(|j| n.is_valid(j)));
            if ok {
                keep.push(i as u32);
                values.extend_from_slice(row);
                ids.push(rid[i]);
            }
        }
        let fsl = FixedSizeListArray::new(Arc::new(arrow_schema::Field::new("item", elem.clone(), true)), dim as i32, child, None);
        let taken = arrow_select::take::take(&fsl, &arrow_array::UInt32Array::from(keep), None).map_err(Error::internal_arrow)?;
        keep_idx.push(taken.as_fixed_size_list().values().clone());
        read += b.num_rows() as u64;
        report(&props.progress, "load_data", read, total)?;
    }
    let original = if keep_idx.is_empty() {
        arrow_array::new_empty_array(elem)
    } else {
        let refs: Vec<&dyn Array> = keep_idx.iter().map(|a| a.as_ref()).collect();
        arrow_select::concat::concat(&refs).map_err(Error::internal_arrow)?
    };
    Ok(Loaded { dim, values, original, ids })
}

/// Build a vector index and commit it; `ds` stays as it was on error.
pub fn create_vector_index(ds: &Arc<Dataset>, o: &VectorIndexOptions, props: &CommitProperties) -> Result<Committed<()>> {
    let (meta, existing) = build_checked(ds, o, props)?;
    let dataset = commit_index_change(ds, vec![meta], existing.into_iter().map(|i| i.pb).collect(), props)?;
    Ok(Committed::new(dataset, ()))
}

/// Build the index `o` describes into a new directory and return its
/// manifest entry, not committed (the directory is removed on error);
/// whether an index of that name exists is not checked.
pub(crate) fn build_entry(ds: &Arc<Dataset>, o: &VectorIndexOptions, props: &CommitProperties) -> Result<pb::IndexMetadata> {
    let mut o = o.clone();
    o.replace = true;
    build_checked(ds, &o, props).map(|r| r.0)
}

/// Check the options, build, and return the entry with the existing
/// entries of the name.
fn build_checked(ds: &Arc<Dataset>, o: &VectorIndexOptions, props: &CommitProperties) -> Result<(pb::IndexMetadata, Vec<IndexInfo>)> {
    let t = VectorIndexType::parse(&o.index_type)?;
    if !matches!(t, VectorIndexType::IvfFlat | VectorIndexType::IvfPq | VectorIndexType::IvfSq) {
        return Err(Error::unsupported(format!("building {} indices is not supported by lancelet yet (IVF_FLAT, IVF_PQ and IVF_SQ are)", t.name())));
    }
    let metric = DistanceType::parse(&o.metric)?;
    let field = ds
        .lance_schema()
        .fields
        .iter()
        .find(|f| f.arrow.name().eq_ignore_ascii_case(&o.column))
        .ok_or_else(|| Error::invalid_input(format!("{} not found in schema", o.column)))?;
    let column = field.arrow.name().clone();
    let (elem, dim) = match field.arrow.data_type() {
        DataType::FixedSizeList(item, d) => (item.data_type().clone(), *d as usize),
        other => {
            return Err(Error::invalid_input(format!(
                "Vector column {column} must be FixedSizeListArray 1-dimensional FixedShapeTensorArray, got {other}"
            )))
        }
    };
    match (&elem, metric) {
        (DataType::Float16 | DataType::Float32 | DataType::Float64, DistanceType::Hamming) | (DataType::UInt8, _) => {
            return Err(Error::unsupported(format!("building {} indices on {elem} vectors with metric {metric}", t.name())));
        }
        (DataType::Float16 | DataType::Float32 | DataType::Float64, _) => {}
        _ => return Err(Error::invalid_input(format!("Vector column {column} must have floating value type, got {elem}"))),
    }
    let num_bits = o.num_bits.unwrap_or(8);
    let num_sub_vectors = match t {
        VectorIndexType::IvfPq => {
            let m = o.num_sub_vectors.ok_or_else(|| Error::invalid_input("num_partitions and num_sub_vectors are required for IVF_PQ"))?;
            if m == 0 || dim % m != 0 {
                return Err(Error::invalid_input(format!("dimension ({dim}) must be divisible by num_sub_vectors ({m})")));
            }
            m
        }
        _ => 0,
    };
    if o.pq_codebook.is_some() && o.ivf_centroids.is_none() {
        return Err(Error::invalid_input("pq_codebook requires ivf_centroids"));
    }
    // pylance words a vector index's name clash differently
    let (name, existing) = claim_index_name(ds, &column, o.name.as_deref(), o.replace, |_, name| {
        format!("Index name '{name}' already exists, please specify a different name or use replace=True")
    })?;
    let live = (0..ds.fragments().len()).map(|i| ds.live_rows(i)).sum::<Result<u64>>()? as usize;
    let num_partitions = match (&o.ivf_centroids, o.num_partitions) {
        (Some(c), _) => c.shape.first().copied().unwrap_or(0) as usize,
        (None, Some(n)) => n,
        (None, None) => (live / o.target_partition_size.unwrap_or_else(|| default_target(t)).max(1)).clamp(1, 4096),
    };
    if num_partitions == 0 {
        return Err(Error::invalid_input("num_partitions must be at least 1"));
    }
    let field_id = field.id;
    let uuid = new_uuid();
    let dir = ds.root().child(&format!("{INDICES_DIR}/{uuid}"))?;
    let result = (|| {
        let data = load(ds, &column, &elem, dim, None, props)?;
        if data.ids.is_empty() {
            return Err(Error::invalid_input(format!("cannot train a vector index on column {column}: it holds no non-null vectors")));
        }
        report(&props.progress, "build", 0, 1)?;
        let params = BuildParams {
            index_type: t,
            metric,
            num_partitions,
            ivf_centroids: o.ivf_centroids.clone(),
            pq_codebook: o.pq_codebook.clone(),
            num_sub_vectors,
            num_bits,
            sample_rate: o.sample_rate,
            max_iters: o.max_iters,
            seed: o.seed.unwrap_or(0x5eed_1a4c_e1e7),
            sq_bounds: None,
            pq_delta_dot: false,
        };
        let v = Vectors { dim: data.dim, values: &data.values, original: data.original.clone(), row_ids: &data.ids };
        let files = build::build(&dir, index_file_version(ds)?, &v, &params)?;
        report(&props.progress, "build", 1, 1)?;
        let frags = ds.fragments().iter().map(|f| u32::try_from(f.id).map_err(|_| Error::corrupt(format!("fragment id {} exceeds 32 bits", f.id))));
        let frags = frags.collect::<Result<Vec<u32>>>()?;
        let det = details(t, metric, num_sub_vectors, num_bits, o.sample_rate, o.max_iters);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Ok(pb::IndexMetadata {
            uuid: Some(pb::Uuid { uuid: uuid_bytes(&uuid)? }),
            fields: vec![field_id],
            name: name.clone(),
            dataset_version: ds.version(),
            fragment_bitmap: fragment_bitmap_bytes(frags),
            index_details: Some(prost_types::Any { type_url: crate::proto::type_url::VECTOR_INDEX_DETAILS.to_string(), value: det.encode_to_vec() }),
            index_version: Some(INDEX_VERSION),
            created_at: Some(now.as_millis() as u64),
            base_id: None,
            files: files.iter().map(|(path, size)| pb::IndexFile { path: path.clone(), size_bytes: *size }).collect(),
        })
    })();
    match result {
        Ok(m) => Ok((m, existing)),
        Err(e) => {
            remove_dir(&dir);
            Err(e)
        }
    }
}

/// The index type a `VectorIndexDetails` describes (`IVF_PQ`, ...), as
/// `list_indices()` reports it.
pub fn vector_type_name(details: &[u8]) -> Option<&'static str> {
    let d = ipb::VectorIndexDetails::decode(details).ok()?;
    let t = match (d.hnsw.is_some(), d.pq.is_some(), d.sq.is_some(), d.rq.is_some(), d.flat.is_some()) {
        (true, true, _, _, _) => VectorIndexType::IvfHnswPq,
        (true, _, true, _, _) => VectorIndexType::IvfHnswSq,
        (true, _, _, _, _) => VectorIndexType::IvfHnswFlat,
        (_, true, _, _, _) => VectorIndexType::IvfPq,
        (_, _, true, _, _) => VectorIndexType::IvfSq,
        (_, _, _, true, _) => VectorIndexType::IvfRq,
        (_, _, _, _, true) => VectorIndexType::IvfFlat,
        _ => return None,
    };
    Some(t.name())
}

/// The `details` of `describe_indices()` for `VectorIndexDetails` bytes:
/// `metric_type` (upper case), `compression` (pq / sq / rq), `hnsw`, and
/// the build parameters as `runtime_hints`.
pub fn details_json(details: &[u8]) -> Option<serde_json::Value> {
    use serde_json::{json, Map, Value};
    let d = ipb::VectorIndexDetails::decode(details).ok()?;
    let metric = DistanceType::from_pb(d.metric_type).ok()?;
    let mut m = Map::new();
    m.insert("metric_type".into(), Value::from(metric.as_str().to_ascii_uppercase()));
    if let Some(h) = &d.hnsw {
        m.insert("hnsw".into(), json!({"max_connections": h.m, "construction_ef": h.ef_construction, "max_level": h.max_level}));
    }
    if let Some(p) = &d.pq {
        m.insert("compression".into(), json!({"type": "pq", "num_bits": p.num_bits, "num_sub_vectors": p.num_sub_vectors}));
    } else if let Some(s) = &d.sq {
        m.insert("compression".into(), json!({"type": "sq", "num_bits": s.num_bits}));
    } else if let Some(r) = &d.rq {
        m.insert("compression".into(), json!({"type": "rq", "num_bits": r.num_bits, "rotation_type": "fast"}));
    }
    let hints: Map<String, Value> = d.build_params.iter().map(|p| (p.key.clone(), Value::from(p.value.clone()))).collect();
    m.insert("runtime_hints".into(), Value::Object(hints));
    Some(Value::Object(m))
}

/// `(uuid, details JSON)` of every vector index entry of `ds`.
pub fn vector_details(ds: &Dataset) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for info in ds.manifest_file().indices()? {
        if let Some(d) = info.pb.index_details.as_ref().filter(|d| d.type_url == crate::proto::type_url::VECTOR_INDEX_DETAILS) {
            if let Some(j) = details_json(&d.value) {
                out.push((info.uuid.clone(), j.to_string()));
            }
        }
    }
    Ok(out)
}

/// What `index_statistics` reports of one vector index segment, read off
/// its files.
#[derive(Debug, Clone)]
pub struct SegmentStats {
    /// Hyphenated uuid.
    pub uuid: String,
    /// `lance:index`'s `type` (`IVF_PQ`, ...).
    pub index_type: String,
    /// `lance:index`'s `distance_type`.
    pub metric: String,
    /// The IVF centroids, one row per partition.
    pub centroids: Vec<Vec<f32>>,
    /// Rows per partition (`auxiliary.idx`).
    pub lengths: Vec<u32>,
    /// The IVF loss.
    pub loss: Option<f64>,
    /// The storage's JSON metadata string.
    pub storage_metadata: String,
    /// Creation time (ms).
    pub created_at: Option<u64>,
}

/// Statistics of every segment of the vector index `name` (empty when
/// there is no vector index of that name).
pub fn vector_stats(ds: &Dataset, name: &str) -> Result<Vec<SegmentStats>> {
    use crate::file::FileReader;
    use crate::index::vector::layout::{AUXILIARY_FILE, INDEX_FILE, INDEX_METADATA_KEY, STORAGE_METADATA_KEY};
    let mut out = Vec::new();
    for info in ds.manifest_file().indices()? {
        if info.name() != name || info.type_url() != crate::proto::type_url::VECTOR_INDEX_DETAILS || info.pb.files.is_empty() {
            continue;
        }
        let dir = ds.root().child(&format!("{INDICES_DIR}/{}", info.uuid))?;
        let index = FileReader::open_storage(dir.child(INDEX_FILE)?)?;
        let path = index.path().to_string();
        let meta = index.schema().metadata().get(INDEX_METADATA_KEY).cloned().unwrap_or_default();
        let meta: serde_json::Value =
            serde_json::from_str(&meta).map_err(|e| Error::corrupt_in(path.clone(), format!("{INDEX_METADATA_KEY}: {e}")))?;
        let ivf = ipb::Ivf::decode(index.read_global_buffer(1)?).map_err(|e| Error::corrupt_in(path.clone(), format!("IVF message: {e}")))?;
        let centroids = match &ivf.centroids_tensor {
            Some(t) => {
                let t = crate::index::vector::tensor::decode(t).map_err(|e| e.in_file(&path))?;
                let dim = t.shape.get(1).copied().unwrap_or(1).max(1);
                t.values.chunks(dim).map(<[f32]>::to_vec).collect()
            }
            None => Vec::new(),
        };
        let aux = FileReader::open_storage(dir.child(AUXILIARY_FILE)?)?;
        let aux_path = aux.path().to_string();
        let aux_ivf = ipb::Ivf::decode(aux.read_global_buffer(1)?).map_err(|e| Error::corrupt_in(aux_path.clone(), format!("IVF message: {e}")))?;
        let storage = aux.schema().metadata().get(STORAGE_METADATA_KEY).cloned().unwrap_or_else(|| "[]".into());
        let storage: Vec<String> = serde_json::from_str(&storage).map_err(|e| Error::corrupt_in(aux_path, format!("{STORAGE_METADATA_KEY}: {e}")))?;
        out.push(SegmentStats {
            uuid: info.uuid.clone(),
            index_type: meta.get("type").and_then(|v| v.as_str()).unwrap_or_default().to_string(),
            metric: meta.get("distance_type").and_then(|v| v.as_str()).unwrap_or_default().to_string(),
            centroids,
            lengths: aux_ivf.lengths,
            loss: ivf.loss,
            storage_metadata: storage.into_iter().next().unwrap_or_default(),
            created_at: info.pb.created_at,
        });
    }
    Ok(out)
}
