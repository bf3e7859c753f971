//! The vector storage of an IVF index: `auxiliary.idx`, read a partition
//! at a time.
//!
//! ```text
//! auxiliary.idx (Lance file; rows grouped by partition, ascending _rowid within one)
//!   _rowid: uint64                                    row address or stable row id
//!   flat: fixed_size_list<f16|f32|f64|u8>[dim]        FLAT (cosine: normalized vectors)
//!   __pq_code: fixed_size_list<u8>[M] (8 bits) or [M/2] (4 bits)
//!                                                     PQ, transposed per partition
//!   __sq_code: fixed_size_list<u8>[dim]               SQ, row-major
//!   global buffer 1: IVF {offsets, lengths}           the partitions' rows (ivf.rs)
//!   global buffer 2: Tensor                           PQ codebook, [M][2^bits][dim/M]
//!   schema metadata: distance_type, lance:ivf = "1",
//!     storage_metadata = ["<json>"]   FLAT {"dim"}; PQ {"codebook_position",
//!       "nbits", "num_sub_vectors", "dimension", "transposed"};
//!       SQ {"dim", "num_bits", "bounds": {"start", "end"}}
//! ```
//!
//! "Transposed" PQ codes: for a partition of `l` rows the `l * C` code
//! bytes (C columns), read in row order, are C runs of `l` bytes, run `j`
//! holding column `j` of every row. With 4 bits, byte column `k` holds
//! sub-vector `2k` in its low nibble and `2k + 1` in its high nibble.
//! Loaded partitions keep the transposed layout (the scan reads one run
//! per sub-vector).

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type, UInt64Type, UInt8Type};
use arrow_array::{Array, FixedSizeListArray, RecordBatch};
use arrow_schema::DataType;
use prost::Message;

use super::layout;
use super::pq::PqModel;
use super::sq::SqModel;
use super::{ivf, DistanceType};
use crate::error::{Error, Result};
use crate::file::FileReader;
use crate::proto::index::Tensor;

/// What the storage holds per vector.
#[derive(Debug)]
pub enum StorageKind {
    /// Unquantized vectors.
    Flat,
    /// PQ codes and their codebook.
    Pq(PqModel),
    /// SQ codes and their bounds.
    Sq(SqModel),
}

/// One loaded partition.
#[derive(Debug, Default)]
pub struct Partition {
    /// Row id of each stored vector.
    pub row_ids: Vec<u64>,
    /// FLAT: `len * dim` values (f32; hamming: byte values).
    pub vectors: Vec<f32>,
    /// PQ: transposed code bytes; SQ: row-major codes.
    pub codes: Vec<u8>,
}

impl Partition {
    /// Stored vectors.
    pub fn len(&self) -> usize {
        self.row_ids.len()
    }

    /// True when the partition is empty.
    pub fn is_empty(&self) -> bool {
        self.row_ids.is_empty()
    }
}

/// An opened `auxiliary.idx`.
#[derive(Debug)]
pub struct VectorStorage {
    reader: FileReader,
    /// Vector dimension.
    pub dim: usize,
    /// Flat, PQ or SQ.
    pub kind: StorageKind,
    /// Row range of each partition.
    pub ranges: Vec<Range<u64>>,
    /// Projection: `_rowid`, then the vectors or codes.
    columns: [usize; 2],
    /// Loaded partitions.
    cache: Vec<OnceLock<Arc<Partition>>>,
}

fn storage_json(reader: &FileReader) -> Result<serde_json::Value> {
    let md = reader.schema().metadata();
    let raw = md.get(layout::STORAGE_METADATA_KEY).ok_or_else(|| Error::corrupt(format!("no {} metadata", layout::STORAGE_METADATA_KEY)))?;
    let list: Vec<String> =
        serde_json::from_str(raw).map_err(|e| Error::corrupt(format!("{} is not a JSON list of strings: {e}", layout::STORAGE_METADATA_KEY)))?;
    let first = list.first().ok_or_else(|| Error::corrupt(format!("{} is empty", layout::STORAGE_METADATA_KEY)))?;
    serde_json::from_str(first).map_err(|e| Error::corrupt(format!("storage metadata is not JSON: {e}")))
}

fn json_usize(v: &serde_json::Value, key: &str) -> Result<usize> {
    v.get(key).and_then(|x| x.as_u64()).map(|x| x as usize).ok_or_else(|| Error::corrupt(format!("storage metadata has no integer {key:?}")))
}

fn fsl_column<'a>(batch: &'a RecordBatch, i: usize, width: usize, what: &str) -> Result<&'a FixedSizeListArray> {
    let col = batch.column(i).as_fixed_size_list_opt().ok_or_else(|| Error::corrupt(format!("{what} is not a fixed-size list")))?;
    if col.value_length() as usize != width {
        return Err(Error::corrupt(format!("{what} holds lists of {} values, expected {width}", col.value_length())));
    }
    Ok(col)
}

impl VectorStorage {
    /// Open `auxiliary.idx` (its size, when the manifest records it, saves
    /// a request) for an index of `metric` with `nlist` partitions.
    pub fn open(reader: FileReader, metric: DistanceType, nlist: usize) -> Result<Self> {
        let schema = reader.schema().clone();
        let rowid = schema.index_of(layout::ROW_ID_COLUMN).map_err(|_| Error::corrupt("auxiliary.idx has no _rowid column"))?;
        if schema.field(rowid).data_type() != &DataType::UInt64 {
            return Err(Error::corrupt("auxiliary.idx _rowid is not uint64"));
        }
        let json = storage_json(&reader)?;
        let find = |name: &str| schema.index_of(name).ok();
        let (col, dim, kind) = if let Some(c) = find(layout::FLAT_COLUMN) {
            let DataType::FixedSizeList(item, n) = schema.field(c).data_type() else {
                return Err(Error::corrupt("flat column is not a fixed-size list"));
            };
            if !matches!(item.data_type(), DataType::Float16 | DataType::Float32 | DataType::Float64 | DataType::UInt8) {
                return Err(Error::unsupported(format!("flat vectors of type {}", item.data_type())));
            }
            (c, usize::try_from(*n).unwrap_or(0), StorageKind::Flat)
        } else if let Some(c) = find(layout::PQ_CODE_COLUMN) {
            let bytes = reader.read_global_buffer(layout::PQ_CODEBOOK_BUFFER as usize)?;
            let codebook = Tensor::decode(bytes.as_ref()).map_err(|e| Error::corrupt(format!("PQ codebook does not decode: {e}")))?;
            let nbits = json_usize(&json, "nbits")?;
            let m = json_usize(&json, "num_sub_vectors")?;
            let dim = json_usize(&json, "dimension")?;
            let transposed = json.get("transposed").and_then(|t| t.as_bool()).unwrap_or(false);
            let model = PqModel::new(&codebook, nbits, m, dim, transposed, metric)?;
            (c, dim, StorageKind::Pq(model))
        } else if let Some(c) = find(layout::SQ_CODE_COLUMN) {
            let dim = json_usize(&json, "dim")?;
            let bits = json_usize(&json, "num_bits")?;
            let b = json.get("bounds").ok_or_else(|| Error::corrupt("SQ storage metadata has no bounds"))?;
            let bound = |k: &str| b.get(k).and_then(|x| x.as_f64()).ok_or_else(|| Error::corrupt(format!("SQ bounds have no {k:?}")));
            (c, dim, StorageKind::Sq(SqModel::new(bits, bound("start")?, bound("end")?, metric)?))
        } else {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            return Err(Error::unsupported(format!("vector storage with columns {names:?}")));
        };
        if dim == 0 {
            return Err(Error::corrupt("vector storage of dimension 0"));
        }
        let ivf_bytes = reader.read_global_buffer(layout::IVF_BUFFER as usize)?;
        let ranges = ivf::partition_ranges(&ivf::decode(&ivf_bytes)?, reader.num_rows(), Some(nlist))?;
        let cache = (0..ranges.len()).map(|_| OnceLock::new()).collect();
        Ok(VectorStorage { reader, dim, kind, ranges, columns: [rowid, col], cache })
    }

    /// Rows stored in partition `p`.
    pub fn partition_len(&self, p: usize) -> usize {
        self.ranges.get(p).map(|r| (r.end - r.start) as usize).unwrap_or(0)
    }

    /// Partition `p`, read the first time it is asked for and then kept.
    pub fn partition(&self, p: usize) -> Result<Arc<Partition>> {
        let slot = self.cache.get(p).ok_or_else(|| Error::invalid_input(format!("no partition {p}")))?;
        if let Some(part) = slot.get() {
            return Ok(part.clone());
        }
        let part = Arc::new(self.load(p).map_err(|e| e.in_file(self.reader.path()))?);
        // Two threads may load the same partition; either copy will do.
        Ok(slot.get_or_init(|| part).clone())
    }

    fn load(&self, p: usize) -> Result<Partition> {
        let range = self.ranges[p].clone();
        let n = (range.end - range.start) as usize;
        if n == 0 {
            return Ok(Partition::default());
        }
        let batch = self.reader.read_range(&self.columns, range)?;
        let ids = batch.column(0).as_primitive_opt::<UInt64Type>().ok_or_else(|| Error::corrupt("_rowid is not uint64"))?;
        if ids.null_count() > 0 {
            return Err(Error::corrupt("null _rowid in vector storage"));
        }
        let row_ids = ids.values().to_vec();
        let mut part = Partition { row_ids, ..Default::default() };
        match &self.kind {
            StorageKind::Flat => {
                let col = fsl_column(&batch, 1, self.dim, "flat")?;
                part.vectors = flat_values(col, n * self.dim)?;
            }
            StorageKind::Pq(model) => {
                let col = fsl_column(&batch, 1, model.code_columns(), "__pq_code")?;
                part.codes = model.transpose_in(&u8_values(col, n * model.code_columns())?, n);
            }
            StorageKind::Sq(_) => {
                let col = fsl_column(&batch, 1, self.dim, "__sq_code")?;
                part.codes = u8_values(col, n * self.dim)?;
            }
        }
        Ok(part)
    }
}

/// The values of a fixed-size list column (`count` of them) as f32.
fn flat_values(col: &FixedSizeListArray, count: usize) -> Result<Vec<f32>> {
    let start = col.offset() * col.value_length() as usize;
    let values = col.values();
    if values.len() < start + count {
        return Err(Error::corrupt("vector column shorter than its rows"));
    }
    let v = values.slice(start, count);
    Ok(match v.data_type() {
        DataType::Float32 => v.as_primitive::<Float32Type>().values().to_vec(),
        DataType::Float16 => v.as_primitive::<Float16Type>().values().iter().map(|x| x.to_f32()).collect(),
        DataType::Float64 => v.as_primitive::<Float64Type>().values().iter().map(|&x| x as f32).collect(),
        DataType::UInt8 => v.as_primitive::<UInt8Type>().values().iter().map(|&x| f32::from(x)).collect(),
        t => return Err(Error::unsupported(format!("flat vectors of type {t}"))),
    })
}

/// The bytes of a `fixed_size_list<uint8>` column (`count` of them).
fn u8_values(col: &FixedSizeListArray, count: usize) -> Result<Vec<u8>> {
    let start = col.offset() * col.value_length() as usize;
    let values = col.values().as_primitive_opt::<UInt8Type>().ok_or_else(|| Error::corrupt("code column is not uint8"))?;
    values.values().get(start..start + count).map(|s| s.to_vec()).ok_or_else(|| Error::corrupt("code column shorter than its rows"))
}
