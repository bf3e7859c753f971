//! Writing `index.idx` and `auxiliary.idx` exactly as pylance 14 lays them
//! out (docs/research/vector-index.md §4–§5).
//!
//! ```text
//! index.idx      __flat_marker: uint64 not null, zero rows
//!                global buffer 1 (file offset 0): Ivf {offsets = lengths = 0
//!                per partition, centroids_tensor, loss}
//!                metadata lance:index {"type","distance_type"}, lance:ivf "1",
//!                lance:flat ["", ...] (one per partition)
//! auxiliary.idx  _rowid: uint64, then flat | __pq_code | __sq_code, rows
//!                grouped by partition (ascending row id within one)
//!                global buffer 1: Ivf {offsets, lengths}; 2: PQ codebook
//!                metadata distance_type, lance:ivf "1", storage_metadata
//!                ["<storage JSON>"]
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, FixedSizeListArray, RecordBatch, UInt64Array, UInt8Array};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use prost::Message;

use super::layout::*;
use super::{DistanceType, VectorIndexType};
use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::{FileVersion, FileWriter};
use crate::io::Storage;
use crate::proto::index::{Ivf, Tensor};

/// Rows per written batch of `auxiliary.idx`.
const BATCH_ROWS: usize = 1 << 16;

/// What `auxiliary.idx` stores after `_rowid`.
#[derive(Debug, Clone)]
pub enum Stored {
    /// The vectors (`flat: fixed_size_list<elem>[dim] not null`), in row order.
    Flat {
        /// Flattened values of the column's element type.
        values: ArrayRef,
        /// Dimension.
        dim: usize,
    },
    /// PQ codes, already packed and transposed per partition.
    Pq {
        /// `__pq_code` bytes in file order.
        codes: Vec<u8>,
        /// The codebook tensor (global buffer 2).
        codebook: Tensor,
        /// Bits per code.
        num_bits: u32,
        /// Sub-vectors.
        num_sub_vectors: usize,
        /// Dimension.
        dim: usize,
    },
    /// SQ codes, row-major.
    Sq {
        /// `__sq_code` bytes.
        codes: Vec<u8>,
        /// `(start, end)`.
        bounds: (f64, f64),
        /// Bits per code.
        num_bits: u32,
        /// Dimension.
        dim: usize,
    },
}

/// Everything the two files hold.
#[derive(Debug, Clone)]
pub struct IndexFiles {
    /// The index type (names `lance:index`).
    pub index_type: VectorIndexType,
    /// Metric.
    pub metric: DistanceType,
    /// IVF centroids (stored as given).
    pub centroids: Tensor,
    /// Sum of the assigned distances.
    pub loss: f64,
    /// Rows per partition.
    pub lengths: Vec<u32>,
    /// Row ids in file order.
    pub row_ids: Vec<u64>,
    /// The stored vectors or codes.
    pub storage: Stored,
}

/// A float as serde_json prints it (shortest round-trip form).
fn json_f64(v: f64) -> String {
    serde_json::Value::from(v).to_string()
}

/// The storage's JSON metadata string.
fn storage_json(s: &Stored) -> String {
    match s {
        Stored::Flat { dim, .. } => format!("{{\"dim\":{dim}}}"),
        Stored::Pq { num_bits, num_sub_vectors, dim, .. } => format!(
            "{{\"codebook_position\":{PQ_CODEBOOK_BUFFER},\"nbits\":{num_bits},\"num_sub_vectors\":{num_sub_vectors},\"dimension\":{dim},\"codebook_tensor\":[],\"transposed\":true}}"
        ),
        Stored::Sq { bounds, num_bits, dim, .. } => format!(
            "{{\"dim\":{dim},\"num_bits\":{num_bits},\"bounds\":{{\"start\":{},\"end\":{}}}}}",
            json_f64(bounds.0),
            json_f64(bounds.1)
        ),
    }
}

/// Write both files into `dir`; returns `(name, size)` sorted by name.
pub fn write(dir: &Storage, version: FileVersion, f: &IndexFiles) -> Result<Vec<(String, u64)>> {
    let aux = write_auxiliary(dir, version, f)?;
    let idx = write_index(dir, version, f)?;
    Ok(vec![(AUXILIARY_FILE.to_string(), aux), (INDEX_FILE.to_string(), idx)])
}

fn write_index(dir: &Storage, version: FileVersion, f: &IndexFiles) -> Result<u64> {
    let n = f.lengths.len();
    let meta: HashMap<String, String> = [
        (INDEX_METADATA_KEY.to_string(), format!("{{\"type\":\"{}\",\"distance_type\":\"{}\"}}", f.index_type.name(), f.metric.as_str())),
        (IVF_METADATA_KEY.to_string(), IVF_BUFFER.to_string()),
        (FLAT_METADATA_KEY.to_string(), serde_json::to_string(&vec![""; n]).map_err(|e| Error::Internal { what: e.to_string() })?),
    ]
    .into_iter()
    .collect();
    let schema = Schema::new(vec![Field::new(FLAT_MARKER_COLUMN, DataType::UInt64, false)]).with_metadata(meta);
    let ivf = Ivf { offsets: vec![0; n], lengths: vec![0; n], centroids_tensor: Some(f.centroids.clone()), loss: Some(f.loss) };
    let mut w = FileWriter::create_with_lance_schema(dir.child(INDEX_FILE)?, LanceSchema::from_arrow(&schema)?, version)?;
    w.add_global_buffer(Bytes::from(ivf.encode_to_vec()))?;
    w.finish()
}

fn write_auxiliary(dir: &Storage, version: FileVersion, f: &IndexFiles) -> Result<u64> {
    let (col, codebook) = match &f.storage {
        Stored::Flat { values, dim } => (
            Field::new(FLAT_COLUMN, DataType::FixedSizeList(Arc::new(Field::new("item", values.data_type().clone(), true)), *dim as i32), false),
            None,
        ),
        Stored::Pq { codebook, num_bits, num_sub_vectors, .. } => {
            let width = if *num_bits == 4 { num_sub_vectors / 2 } else { *num_sub_vectors };
            (
                Field::new(PQ_CODE_COLUMN, DataType::FixedSizeList(Arc::new(Field::new("item", DataType::UInt8, true)), width as i32), true),
                Some(codebook),
            )
        }
        Stored::Sq { dim, .. } => {
            (Field::new(SQ_CODE_COLUMN, DataType::FixedSizeList(Arc::new(Field::new("item", DataType::UInt8, true)), *dim as i32), true), None)
        }
    };
    let storage_meta = serde_json::to_string(&vec![storage_json(&f.storage)]).map_err(|e| Error::Internal { what: e.to_string() })?;
    let meta: HashMap<String, String> = [
        (DISTANCE_TYPE_KEY.to_string(), f.metric.as_str().to_string()),
        (IVF_METADATA_KEY.to_string(), IVF_BUFFER.to_string()),
        (STORAGE_METADATA_KEY.to_string(), storage_meta),
    ]
    .into_iter()
    .collect();
    let schema = Arc::new(Schema::new(vec![Field::new(ROW_ID_COLUMN, DataType::UInt64, true), col.clone()]).with_metadata(meta));
    let mut offsets = Vec::with_capacity(f.lengths.len());
    let mut at = 0u64;
    for l in &f.lengths {
        offsets.push(at);
        at += *l as u64;
    }
    if at != f.row_ids.len() as u64 {
        return Err(Error::Internal { what: format!("partition lengths sum to {at}, {} rows", f.row_ids.len()) });
    }
    let ivf = Ivf { offsets, lengths: f.lengths.clone(), centroids_tensor: None, loss: None };
    let mut w = FileWriter::create_with_lance_schema(dir.child(AUXILIARY_FILE)?, LanceSchema::from_arrow(&schema)?, version)?;
    w.add_global_buffer(Bytes::from(ivf.encode_to_vec()))?;
    if let Some(cb) = codebook {
        w.add_global_buffer(Bytes::from(cb.encode_to_vec()))?;
    }
    let DataType::FixedSizeList(item, width) = col.data_type() else { unreachable!("built above") };
    let width = *width as usize;
    let n = f.row_ids.len();
    let mut start = 0;
    while start < n {
        let len = BATCH_ROWS.min(n - start);
        let ids: ArrayRef = Arc::new(UInt64Array::from(f.row_ids[start..start + len].to_vec()));
        let values: ArrayRef = match &f.storage {
            Stored::Flat { values, .. } => values.slice(start * width, len * width),
            Stored::Pq { codes, .. } | Stored::Sq { codes, .. } => Arc::new(UInt8Array::from(codes[start * width..(start + len) * width].to_vec())),
        };
        let fsl = FixedSizeListArray::try_new(item.clone(), width as i32, values, None).map_err(Error::internal_arrow)?;
        w.write(&RecordBatch::try_new(schema.clone(), vec![ids, Arc::new(fsl)]).map_err(Error::internal_arrow)?)?;
        start += len;
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_metadata_strings() {
        let sq = Stored::Sq { codes: vec![], bounds: (-4.3891143798828125, 5.007235050201416), num_bits: 8, dim: 32 };
        assert_eq!(storage_json(&sq), r#"{"dim":32,"num_bits":8,"bounds":{"start":-4.3891143798828125,"end":5.007235050201416}}"#);
        let pq = Stored::Pq { codes: vec![], codebook: Tensor::default(), num_bits: 8, num_sub_vectors: 4, dim: 32 };
        assert_eq!(
            storage_json(&pq),
            r#"{"codebook_position":2,"nbits":8,"num_sub_vectors":4,"dimension":32,"codebook_tensor":[],"transposed":true}"#
        );
        assert_eq!(
            serde_json::to_string(&vec![storage_json(&sq)]).unwrap(),
            r#"["{\"dim\":32,\"num_bits\":8,\"bounds\":{\"start\":-4.3891143798828125,\"end\":5.007235050201416}}"]"#
        );
    }
}
