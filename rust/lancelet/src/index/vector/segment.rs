//! One vector index segment's rows in memory, and writing rows picked from
//! segments as a new segment — what compaction remaps and
//! `optimize_indices` deltas and merges are made of.
//!
//! A segment is the two files of `_indices/{uuid}/` (layouts in
//! [`super::write`] and [`super::storage`]): the IVF model of `index.idx`
//! (centroids tensor and loss, kept as they are) and the rows of
//! `auxiliary.idx`, each with its row id, partition and payload — the
//! stored vector (FLAT, in the column's element type), or its code bytes
//! (SQ row-major; PQ untransposed here, one row of `C` code bytes per
//! vector, and transposed back per partition when written).
//!
//! A new segment is written from picks `(partition, row id, source
//! segment, source row)`: rows are grouped by partition and ascending row
//! id within one, as pylance orders them; the payloads are copied
//! unchanged, so codes and stored vectors are bit-identical to the
//! source's. Segments with HNSW graphs are not handled here (their graphs
//! would have to be rebuilt).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, FixedSizeListArray, UInt32Array};
use arrow_schema::Field;
use prost::Message;

use super::layout::*;
use super::write::{self, IndexFiles, Stored};
use super::{ivf, DistanceType, VectorIndexType};
use crate::error::{Error, Result};
use crate::file::{FileReader, FileVersion};
use crate::io::Storage;
use crate::proto::index::Tensor;

/// The quantizer of a segment (shared by all segments of one index).
#[derive(Debug, Clone, PartialEq)]
pub enum Quantizer {
    /// Vectors stored as they are.
    Flat,
    /// Product quantization.
    Pq {
        /// The codebook tensor (auxiliary.idx global buffer 2).
        codebook: Tensor,
        /// 4 or 8.
        num_bits: u32,
        /// Sub-vectors.
        num_sub_vectors: usize,
    },
    /// Scalar quantization.
    Sq {
        /// `(start, end)`.
        bounds: (f64, f64),
        /// Bits per code.
        num_bits: u32,
    },
}

/// A segment's model and rows.
#[derive(Debug, Clone)]
pub struct Segment {
    /// The index type (`lance:index`).
    pub index_type: VectorIndexType,
    /// Metric.
    pub metric: DistanceType,
    /// IVF centroids tensor, as stored.
    pub centroids: Tensor,
    /// IVF loss, as stored.
    pub loss: f64,
    /// Vector dimension.
    pub dim: usize,
    /// The quantizer.
    pub quantizer: Quantizer,
    /// Row id of each row, file order.
    pub row_ids: Vec<u64>,
    /// Partition of each row.
    pub partitions: Vec<u32>,
    /// Payload of each row (row-major; PQ untransposed).
    pub payload: FixedSizeListArray,
}

impl Segment {
    /// IVF partitions.
    pub fn num_partitions(&self) -> usize {
        self.centroids.shape.first().copied().unwrap_or(0) as usize
    }
}

/// Byte columns of a partition of `rows` rows: `width` runs of `rows`
/// bytes (file layout) to one row of `width` bytes per vector, or back.
fn transpose(bytes: &[u8], rows: usize, width: usize, to_file: bool) -> Vec<u8> {
    let mut out = vec![0u8; bytes.len()];
    for i in 0..rows {
        for j in 0..width {
            if to_file {
                out[j * rows + i] = bytes[i * width + j];
            } else {
                out[i * width + j] = bytes[j * rows + i];
            }
        }
    }
    out
}

fn json_of(raw: &str, what: &str) -> Result<serde_json::Value> {
    serde_json::from_str(raw).map_err(|e| Error::corrupt(format!("{what} is not JSON: {e}")))
}

fn json_num(v: &serde_json::Value, key: &str) -> Result<u64> {
    v.get(key).and_then(|x| x.as_u64()).ok_or_else(|| Error::corrupt(format!("storage metadata has no integer {key:?}")))
}

/// Read the segment whose files are in `dir`. HNSW and RQ segments are
/// `Unsupported`.
pub fn read(dir: &Storage) -> Result<Segment> {
    let index = FileReader::open_storage(dir.child(INDEX_FILE)?)?;
    let path = index.path().to_string();
    let (index_type, metric, centroids, loss) = (|| {
        let md = index.schema().metadata();
        let li = json_of(md.get(INDEX_METADATA_KEY).map(String::as_str).unwrap_or(""), INDEX_METADATA_KEY)?;
        let t = li.get("type").and_then(|v| v.as_str()).unwrap_or("");
        let t = VectorIndexType::parse(t).map_err(|_| Error::corrupt(format!("unknown index type {t:?} in {INDEX_METADATA_KEY}")))?;
        let m = DistanceType::parse(li.get("distance_type").and_then(|v| v.as_str()).unwrap_or(""))
            .map_err(|_| Error::corrupt(format!("no known distance_type in {INDEX_METADATA_KEY}")))?;
        if t.has_hnsw() || t == VectorIndexType::IvfRq {
            return Err(Error::unsupported(format!("rewriting {t} index segments (their graphs or codes would have to be rebuilt)")));
        }
        let msg = ivf::decode(&index.read_global_buffer(IVF_BUFFER as usize)?)?;
        let c = msg.centroids_tensor.clone().ok_or_else(|| Error::corrupt("IVF message without centroids"))?;
        Ok((t, m, c, msg.loss.unwrap_or(0.0)))
    })()
    .map_err(|e| e.in_file(&path))?;
    let aux = FileReader::open_storage(dir.child(AUXILIARY_FILE)?)?;
    let aux_path = aux.path().to_string();
    read_rows(&aux, index_type, metric, centroids, loss).map_err(|e| e.in_file(&aux_path))
}

fn read_rows(aux: &FileReader, index_type: VectorIndexType, metric: DistanceType, centroids: Tensor, loss: f64) -> Result<Segment> {
    let schema = aux.schema().clone();
    let md = schema.metadata();
    let list: Vec<String> = serde_json::from_str(md.get(STORAGE_METADATA_KEY).map(String::as_str).unwrap_or(""))
        .map_err(|e| Error::corrupt(format!("{STORAGE_METADATA_KEY} is not a JSON list of strings: {e}")))?;
    let sm = json_of(list.first().map(String::as_str).unwrap_or(""), "storage metadata")?;
    let (col, dim, quantizer) = if let Ok(c) = schema.index_of(FLAT_COLUMN) {
        (c, json_num(&sm, "dim")? as usize, Quantizer::Flat)
    } else if let Ok(c) = schema.index_of(PQ_CODE_COLUMN) {
        let codebook = Tensor::decode(aux.read_global_buffer(PQ_CODEBOOK_BUFFER as usize)?.as_ref())
            .map_err(|e| Error::corrupt(format!("PQ codebook does not decode: {e}")))?;
        let q = Quantizer::Pq { codebook, num_bits: json_num(&sm, "nbits")? as u32, num_sub_vectors: json_num(&sm, "num_sub_vectors")? as usize };
        (c, json_num(&sm, "dimension")? as usize, q)
    } else if let Ok(c) = schema.index_of(SQ_CODE_COLUMN) {
        let b = sm.get("bounds").ok_or_else(|| Error::corrupt("SQ storage metadata has no bounds"))?;
        let bound = |k: &str| b.get(k).and_then(|x| x.as_f64()).ok_or_else(|| Error::corrupt(format!("SQ bounds have no {k:?}")));
        (c, json_num(&sm, "dim")? as usize, Quantizer::Sq { bounds: (bound("start")?, bound("end")?), num_bits: json_num(&sm, "num_bits")? as u32 })
    } else {
        return Err(Error::unsupported("vector storage without flat, __pq_code or __sq_code"));
    };
    let rowid = schema.index_of(ROW_ID_COLUMN).map_err(|_| Error::corrupt("auxiliary.idx has no _rowid column"))?;
    let n = aux.num_rows();
    let nlist = centroids.shape.first().copied().unwrap_or(0) as usize;
    let ranges = ivf::partition_ranges(&ivf::decode(&aux.read_global_buffer(IVF_BUFFER as usize)?)?, n, Some(nlist))?;
    let batch = aux.read_range(&[rowid, col], 0..n)?;
    let ids = batch.column(0).as_primitive_opt::<UInt64Type>().ok_or_else(|| Error::corrupt("_rowid is not uint64"))?;
    if ids.null_count() > 0 {
        return Err(Error::corrupt("null _rowid in vector storage"));
    }
    let payload = batch.column(1).as_fixed_size_list_opt().ok_or_else(|| Error::corrupt("the vector column is not a fixed-size list"))?.clone();
    if batch.num_rows() as u64 != n || ids.len() as u64 != n {
        return Err(Error::corrupt(format!("read {} rows of a file of {n}", batch.num_rows())));
    }
    let width = match &quantizer {
        Quantizer::Pq { num_bits: 4, num_sub_vectors, .. } if num_sub_vectors % 2 == 0 => num_sub_vectors / 2,
        Quantizer::Pq { num_bits: 8, num_sub_vectors, .. } => *num_sub_vectors,
        Quantizer::Pq { num_bits, num_sub_vectors, .. } => {
            return Err(Error::corrupt(format!("PQ storage of {num_bits} bits and {num_sub_vectors} sub-vectors")))
        }
        _ => dim,
    };
    if width == 0 || payload.value_length() as usize != width || payload.values().len() < (payload.offset() + payload.len()) * width {
        return Err(Error::corrupt(format!("the vector column holds lists of {} values, expected {width}", payload.value_length())));
    }
    let mut partitions = vec![0u32; n as usize];
    for (p, r) in ranges.iter().enumerate() {
        partitions[r.start as usize..r.end as usize].fill(p as u32);
    }
    let payload = match &quantizer {
        Quantizer::Pq { .. } => {
            let width = payload.value_length() as usize;
            let bytes =
                payload.values().as_primitive_opt::<arrow_array::types::UInt8Type>().ok_or_else(|| Error::corrupt("__pq_code is not uint8"))?;
            let bytes = &bytes.values()[payload.offset() * width..(payload.offset() + payload.len()) * width];
            let mut rows = Vec::with_capacity(bytes.len());
            for r in &ranges {
                let (a, b) = (r.start as usize * width, r.end as usize * width);
                rows.extend(transpose(&bytes[a..b], (r.end - r.start) as usize, width, false));
            }
            u8_lists(rows, width)?
        }
        _ => payload,
    };
    Ok(Segment { index_type, metric, centroids, loss, dim, quantizer, row_ids: ids.values().to_vec(), partitions, payload })
}

fn u8_lists(bytes: Vec<u8>, width: usize) -> Result<FixedSizeListArray> {
    let item = Arc::new(Field::new("item", arrow_schema::DataType::UInt8, true));
    FixedSizeListArray::try_new(item, width as i32, Arc::new(arrow_array::UInt8Array::from(bytes)), None).map_err(Error::internal_arrow)
}

/// The rows of freshly built index files (a delta over new rows) as a
/// segment.
pub fn from_files(f: &IndexFiles) -> Result<Segment> {
    let mut partitions = Vec::with_capacity(f.row_ids.len());
    for (p, &l) in f.lengths.iter().enumerate() {
        partitions.extend(std::iter::repeat_n(p as u32, l as usize));
    }
    let (dim, quantizer, payload) = match &f.storage {
        Stored::Flat { values, dim } => {
            let item = Arc::new(Field::new("item", values.data_type().clone(), true));
            (*dim, Quantizer::Flat, FixedSizeListArray::try_new(item, *dim as i32, values.clone(), None).map_err(Error::internal_arrow)?)
        }
        Stored::Pq { codes, codebook, num_bits, num_sub_vectors, dim } => {
            let width = if *num_bits == 4 { num_sub_vectors / 2 } else { *num_sub_vectors };
            let mut rows = Vec::with_capacity(codes.len());
            let mut at = 0;
            for &l in &f.lengths {
                let l = l as usize;
                rows.extend(transpose(&codes[at * width..(at + l) * width], l, width, false));
                at += l;
            }
            (*dim, Quantizer::Pq { codebook: codebook.clone(), num_bits: *num_bits, num_sub_vectors: *num_sub_vectors }, u8_lists(rows, width)?)
        }
        Stored::Sq { codes, bounds, num_bits, dim } => (*dim, Quantizer::Sq { bounds: *bounds, num_bits: *num_bits }, u8_lists(codes.clone(), *dim)?),
    };
    Ok(Segment {
        index_type: f.index_type,
        metric: f.metric,
        centroids: f.centroids.clone(),
        loss: f.loss,
        dim,
        quantizer,
        row_ids: f.row_ids.clone(),
        partitions,
        payload,
    })
}

/// One row of a new segment: `(partition, row id, source segment, source row)`.
pub type Pick = (u32, u64, usize, usize);

/// Write a segment of `picks` (rows of `sources`) into `dir` with the
/// model of `model` and IVF `loss`; rows are ordered by partition, then
/// row id. Returns the files and their sizes, sorted by name.
pub fn write_picks(
    dir: &Storage,
    version: FileVersion,
    model: &Segment,
    loss: f64,
    mut picks: Vec<Pick>,
    sources: &[&Segment],
) -> Result<Vec<(String, u64)>> {
    for s in sources {
        if s.centroids != model.centroids || s.quantizer != model.quantizer || s.payload.value_length() != model.payload.value_length() {
            return Err(Error::invalid_input("segments of one vector index differ in their centroids or quantizer; retrain the index instead"));
        }
    }
    picks.sort_unstable_by_key(|p| (p.0, p.1));
    let nlist = model.num_partitions();
    let mut lengths = vec![0u32; nlist];
    for p in &picks {
        *lengths.get_mut(p.0 as usize).ok_or_else(|| Error::corrupt(format!("partition {} of {nlist}", p.0)))? += 1;
    }
    // All sources' payloads one after the other, then one take.
    let mut base = Vec::with_capacity(sources.len());
    let mut at = 0usize;
    for s in sources {
        base.push(at);
        at += s.payload.len();
    }
    let arrays: Vec<&dyn Array> = sources.iter().map(|s| &s.payload as &dyn Array).collect();
    let all: ArrayRef = match arrays.len() {
        0 => Arc::new(model.payload.slice(0, 0)),
        1 => Arc::new(sources[0].payload.clone()),
        _ => arrow_select::concat::concat(&arrays).map_err(Error::internal_arrow)?,
    };
    let idx = UInt32Array::from(picks.iter().map(|p| (base[p.2] + p.3) as u32).collect::<Vec<_>>());
    let taken = arrow_select::take::take(&all, &idx, None).map_err(Error::internal_arrow)?;
    let taken = taken.as_fixed_size_list();
    let width = taken.value_length() as usize;
    let values = taken.values().slice(taken.offset() * width, taken.len() * width);
    let storage = match &model.quantizer {
        Quantizer::Flat => Stored::Flat { values, dim: model.dim },
        Quantizer::Sq { bounds, num_bits } => Stored::Sq {
            codes: values.as_primitive::<arrow_array::types::UInt8Type>().values().to_vec(),
            bounds: *bounds,
            num_bits: *num_bits,
            dim: model.dim,
        },
        Quantizer::Pq { codebook, num_bits, num_sub_vectors } => {
            let rows = values.as_primitive::<arrow_array::types::UInt8Type>().values();
            let mut codes = Vec::with_capacity(rows.len());
            let mut at = 0;
            for &l in &lengths {
                let l = l as usize;
                codes.extend(transpose(&rows[at * width..(at + l) * width], l, width, true));
                at += l;
            }
            Stored::Pq { codes, codebook: codebook.clone(), num_bits: *num_bits, num_sub_vectors: *num_sub_vectors, dim: model.dim }
        }
    };
    let files = IndexFiles {
        index_type: model.index_type,
        metric: model.metric,
        centroids: model.centroids.clone(),
        loss,
        lengths,
        row_ids: picks.iter().map(|p| p.1).collect(),
        storage,
    };
    write::write(dir, version, &files)
}

/// Compaction remap: the segment in `src` rewritten into `dst` with every
/// row id mapped by `moved` (`None`: the row is gone, dropped). Centroids
/// and loss are kept; the rows stay in their partitions, ascending by
/// their new ids.
pub fn remap(src: &Storage, dst: &Storage, version: FileVersion, moved: &dyn Fn(u64) -> Option<u64>) -> Result<Vec<(String, u64)>> {
    let s = read(src)?;
    let picks: Vec<Pick> = s.row_ids.iter().enumerate().filter_map(|(i, &id)| moved(id).map(|n| (s.partitions[i], n, 0, i))).collect();
    write_picks(dst, version, &s, s.loss, picks, &[&s])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::vector::build::{self, BuildParams, Vectors};
    use crate::index::vector::kmeans::Rng;

    fn clustered(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        let centers: Vec<f32> = (0..4 * dim).map(|_| (rng.next_u64() % 2000) as f32 / 100.0 - 10.0).collect();
        (0..n)
            .flat_map(|i| (0..dim).map(move |j| (i, j)).collect::<Vec<_>>())
            .map(|(i, j)| centers[(i % 4) * dim + j] + ((i * 31 + j * 7) % 13) as f32 / 13.0)
            .collect()
    }

    fn built(t: VectorIndexType, metric: DistanceType, dir: &Storage) -> (Vec<u64>, Segment) {
        let (n, dim) = (600, 8);
        let values = clustered(n, dim, 7);
        let ids: Vec<u64> = (0..n as u64).map(|i| ((i / 200) << 32) | (i % 200)).collect();
        let original: ArrayRef = Arc::new(arrow_array::Float32Array::from(values.clone()));
        let v = Vectors { dim, values: &values, original, row_ids: &ids };
        let p = BuildParams {
            index_type: t,
            metric,
            num_partitions: 3,
            ivf_centroids: None,
            pq_codebook: None,
            num_sub_vectors: 4,
            num_bits: 8,
            sample_rate: 256,
            max_iters: 10,
            seed: 3,
            sq_bounds: None,
            pq_delta_dot: false,
        };
        build::build(dir, FileVersion::V2_1, &v, &p).unwrap();
        (ids, read(dir).unwrap())
    }

    #[test]
    fn remap_drops_moves_and_keeps_codes() {
        for t in [VectorIndexType::IvfFlat, VectorIndexType::IvfPq, VectorIndexType::IvfSq] {
            for metric in [DistanceType::L2, DistanceType::Cosine, DistanceType::Dot] {
                let root = Storage::open(&format!("memory://lancelet-vector-segment/{t}-{metric}")).unwrap();
                let (src, dst) = (root.child("a").unwrap(), root.child("b").unwrap());
                let (_, before) = built(t, metric, &src);
                // fragment 0 -> 9 (row 5 deleted), fragment 1 -> 4, fragment 2 stays
                let moved = |a: u64| match a >> 32 {
                    0 if a & 0xffff_ffff == 5 => None,
                    0 => Some((9 << 32) | ((a & 0xffff_ffff) - u64::from(a & 0xffff_ffff > 5))),
                    1 => Some((4 << 32) | (a & 0xffff_ffff)),
                    _ => Some(a),
                };
                let files = remap(&src, &dst, FileVersion::V2_1, &moved).unwrap();
                assert_eq!(files.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), vec![AUXILIARY_FILE, INDEX_FILE]);
                let after = read(&dst).unwrap();
                assert_eq!(after.row_ids.len(), before.row_ids.len() - 1);
                assert_eq!(
                    (after.centroids.clone(), after.loss, after.quantizer.clone()),
                    (before.centroids.clone(), before.loss, before.quantizer.clone())
                );
                // every surviving row keeps its partition and payload
                for (i, &id) in before.row_ids.iter().enumerate() {
                    let Some(new) = moved(id) else { continue };
                    let j = after.row_ids.iter().position(|&x| x == new).unwrap();
                    assert_eq!(after.partitions[j], before.partitions[i]);
                    assert_eq!(after.payload.value(j).to_data(), before.payload.value(i).to_data());
                }
                // ascending within partitions
                for w in 0..after.row_ids.len().saturating_sub(1) {
                    if after.partitions[w] == after.partitions[w + 1] {
                        assert!(after.row_ids[w] < after.row_ids[w + 1]);
                    }
                }
            }
        }
    }

    #[test]
    fn transpose_round_trips() {
        let rows: Vec<u8> = (0..12).collect();
        let f = transpose(&rows, 4, 3, true);
        assert_eq!(f, vec![0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]);
        assert_eq!(transpose(&f, 4, 3, false), rows);
    }
}
