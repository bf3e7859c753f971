//! Building an IVF_FLAT / IVF_PQ / IVF_SQ index from a column's vectors and
//! row ids (docs/research/vector-index.md §4–§7): train (or take) the IVF
//! centroids on a sample, assign every vector, order the rows by partition
//! and row id, quantize, and write the two files ([`super::write`]).
//!
//! Cosine indices work on normalized vectors throughout (training,
//! assignment, stored FLAT vectors, PQ residuals, SQ codes); dot trains
//! unit centroids and assigns by the largest inner product, and its PQ
//! codes encode raw vectors rather than residuals. Sampling uses a seeded
//! RNG, so a build is reproducible.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray, Float16Array, Float32Array, Float64Array, UInt32Array};
use arrow_schema::{DataType, Field};
use half::f16;

use super::kmeans::{self, KMeansParams, Rng};
use super::pq_train;
use super::sq_train;
use super::tensor;
use super::write::{self, IndexFiles, Stored};
use super::{DistanceType, VectorIndexType};
use crate::error::{Error, Result};
use crate::file::FileVersion;
use crate::io::Storage;
use crate::proto::index::{Tensor, TensorDataType};

/// The vectors to index.
#[derive(Debug)]
pub struct Vectors<'a> {
    /// Dimension.
    pub dim: usize,
    /// Rows × dim values widened to f32.
    pub values: &'a [f32],
    /// The same values in the column's element type (flattened child
    /// array), stored as they are by FLAT indices.
    pub original: ArrayRef,
    /// Row id (address or stable id) of each row.
    pub row_ids: &'a [u64],
}

/// Build parameters (pylance's names).
#[derive(Debug, Clone)]
pub struct BuildParams {
    /// The index type (IVF_FLAT, IVF_PQ or IVF_SQ).
    pub index_type: VectorIndexType,
    /// Metric.
    pub metric: DistanceType,
    /// IVF partitions.
    pub num_partitions: usize,
    /// User centroids (stored as given).
    pub ivf_centroids: Option<Tensor>,
    /// User PQ codebook, sub-vector major (stored as given).
    pub pq_codebook: Option<Tensor>,
    /// PQ sub-vectors.
    pub num_sub_vectors: usize,
    /// PQ / SQ bits.
    pub num_bits: u32,
    /// Training rows per centroid (IVF), per codeword (PQ, SQ).
    pub sample_rate: usize,
    /// k-means rounds at most.
    pub max_iters: usize,
    /// RNG seed.
    pub seed: u64,
    /// SQ bounds to use instead of training them (an index's deltas keep
    /// its bounds).
    pub sq_bounds: Option<(f64, f64)>,
    /// A delta of a dot-product PQ index: pylance 14 encodes each raw
    /// sub-vector as the codeword of largest inner product (a build picks
    /// the nearest by L2).
    pub pq_delta_dot: bool,
}

/// The tensor type of a vector element type.
pub fn tensor_type(dt: &DataType) -> Result<TensorDataType> {
    Ok(match dt {
        DataType::Float16 => TensorDataType::Float16,
        DataType::Float32 => TensorDataType::Float32,
        DataType::Float64 => TensorDataType::Float64,
        DataType::UInt8 => TensorDataType::Uint8,
        other => return Err(Error::invalid_input(format!("vectors of {other} cannot be indexed"))),
    })
}

/// Values as a flat array of `dt`.
fn narrow(dt: &DataType, v: &[f32]) -> ArrayRef {
    match dt {
        DataType::Float16 => Arc::new(Float16Array::from(v.iter().map(|x| f16::from_f32(*x)).collect::<Vec<_>>())),
        DataType::Float64 => Arc::new(Float64Array::from(v.iter().map(|x| *x as f64).collect::<Vec<_>>())),
        _ => Arc::new(Float32Array::from(v.to_vec())),
    }
}

/// `values` rounded through the tensor type (what a reader will see).
fn rounded(kind: TensorDataType, shape: &[usize], values: Vec<f32>) -> Result<(Tensor, Vec<f32>)> {
    let t = tensor::encode(kind, shape, &values);
    let v = tensor::decode(&t)?.values;
    Ok((t, v))
}

/// Write the index of `v` into `dir`; returns the files and their sizes
/// (sorted by name).
pub fn build(dir: &Storage, version: FileVersion, v: &Vectors<'_>, p: &BuildParams) -> Result<Vec<(String, u64)>> {
    write::write(dir, version, &build_files(v, p)?)
}

/// What [`build`] writes: the trained (or given) model, the rows by
/// partition and their vectors or codes.
pub fn build_files(v: &Vectors<'_>, p: &BuildParams) -> Result<IndexFiles> {
    let dim = v.dim;
    let n = v.row_ids.len();
    if dim == 0 || v.values.len() != n * dim {
        return Err(Error::invalid_input(format!("{} values for {n} vectors of dimension {dim}", v.values.len())));
    }
    let elem = v.original.data_type().clone();
    let kind = tensor_type(&elem)?;
    let data: Cow<'_, [f32]> = if p.metric == DistanceType::Cosine {
        let mut d = v.values.to_vec();
        crate::process::install(|| {
            use rayon::prelude::*;
            d.par_chunks_exact_mut(dim).for_each(kmeans::normalize)
        });
        Cow::Owned(d)
    } else {
        Cow::Borrowed(v.values)
    };
    let train_metric = if p.metric == DistanceType::Dot { DistanceType::Dot } else { DistanceType::L2 };
    let mut rng = Rng::new(p.seed);

    // IVF centroids.
    let (centroid_tensor, centroids) = match &p.ivf_centroids {
        Some(t) => {
            let d = tensor::decode(t)?;
            if d.shape.len() != 2 || d.shape[1] != dim {
                return Err(Error::invalid_input(format!("ivf_centroids of shape {:?} for vectors of dimension {dim}", d.shape)));
            }
            (t.clone(), d.values)
        }
        None => {
            let sample = rng.sample(n, p.num_partitions.saturating_mul(p.sample_rate.max(1)));
            let rows = gather(&data, dim, &sample);
            let km =
                kmeans::train(&rows, dim, KMeansParams { k: p.num_partitions, max_iters: p.max_iters, metric: train_metric, seed: rng.next_u64() });
            rounded(kind, &[km.k, dim], km.centroids)?
        }
    };
    let nparts = centroids.len() / dim;
    let (parts, loss) = kmeans::assign(&data, dim, &centroids, train_metric);

    // Rows by partition, ascending row id within one.
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by_key(|&i| (parts[i as usize], v.row_ids[i as usize]));
    let mut lengths = vec![0u32; nparts];
    parts.iter().for_each(|&q| lengths[q as usize] += 1);
    let row_ids: Vec<u64> = order.iter().map(|&i| v.row_ids[i as usize]).collect();

    let storage = match p.index_type {
        VectorIndexType::IvfFlat => {
            let values = if p.metric == DistanceType::Cosine { narrow(&elem, &data) } else { v.original.clone() };
            let fsl = FixedSizeListArray::try_new(Arc::new(Field::new("item", elem.clone(), true)), dim as i32, values, None)
                .map_err(Error::internal_arrow)?;
            let taken = arrow_select::take::take(&fsl, &UInt32Array::from(order.clone()), None).map_err(Error::internal_arrow)?;
            let values = taken.as_any().downcast_ref::<FixedSizeListArray>().expect("a fixed-size list").values().clone();
            Stored::Flat { values, dim }
        }
        VectorIndexType::IvfPq => {
            let m = p.num_sub_vectors;
            if m == 0 || dim % m != 0 {
                return Err(Error::invalid_input(format!("dimension ({dim}) must be divisible by num_sub_vectors ({m})")));
            }
            if p.num_bits != 4 && p.num_bits != 8 {
                return Err(Error::invalid_input(format!("num_bits must be 4 or 8 for PQ, got {}", p.num_bits)));
            }
            if p.num_bits == 4 && m % 2 != 0 {
                return Err(Error::invalid_input(format!("num_sub_vectors ({m}) must be even for 4-bit PQ")));
            }
            let residual = p.metric != DistanceType::Dot;
            // Rows in file order, as residuals where the metric asks.
            let mut rows = gather(&data, dim, &order.iter().map(|&i| i as usize).collect::<Vec<_>>());
            if residual {
                crate::process::install(|| {
                    use rayon::prelude::*;
                    rows.par_chunks_exact_mut(dim).zip(order.par_iter()).for_each(|(x, &i)| {
                        let c = parts[i as usize] as usize;
                        x.iter_mut().zip(&centroids[c * dim..(c + 1) * dim]).for_each(|(a, b)| *a -= b);
                    })
                });
            }
            let k = 1usize << p.num_bits;
            let (codebook_tensor, codebook) = match &p.pq_codebook {
                Some(t) => {
                    let d = tensor::decode(t)?;
                    if d.values.len() != m * k * (dim / m) {
                        return Err(Error::invalid_input(format!(
                            "pq_codebook holds {} values, expected num_sub_vectors * 2^num_bits * dim/num_sub_vectors = {}",
                            d.values.len(),
                            m * k * (dim / m)
                        )));
                    }
                    let mut t = t.clone();
                    t.shape = vec![k as u32, dim as u32];
                    (t, d.values)
                }
                None => {
                    let sample = rng.sample(n, p.sample_rate.max(1).saturating_mul(k));
                    let train_rows = gather(&rows, dim, &sample);
                    let cb = pq_train::train(&train_rows, dim, m, p.num_bits, p.max_iters, rng.next_u64());
                    rounded(kind, &[k, dim], cb.values)?
                }
            };
            let cb = pq_train::Codebook { num_sub_vectors: m, num_bits: p.num_bits, dim, values: codebook };
            let codes = if p.pq_delta_dot && p.metric == DistanceType::Dot { encode_max_dot(&cb, &rows) } else { cb.encode(&rows) };
            let mut out = Vec::with_capacity(codes.len());
            let mut at = 0;
            for &l in &lengths {
                let l = l as usize;
                out.extend(pq_train::transpose_partition(&codes[at * m..(at + l) * m], m, p.num_bits));
                at += l;
            }
            Stored::Pq { codes: out, codebook: codebook_tensor, num_bits: p.num_bits, num_sub_vectors: m, dim }
        }
        VectorIndexType::IvfSq => {
            if !(1..=8).contains(&p.num_bits) {
                return Err(Error::invalid_input(format!("num_bits must be between 1 and 8 for SQ, got {}", p.num_bits)));
            }
            let bounds = match p.sq_bounds {
                Some(b) => b,
                None => {
                    let sample = rng.sample(n, p.sample_rate.max(1).saturating_mul(1 << p.num_bits));
                    let b = if sample.len() == n { sq_train::bounds(&data) } else { sq_train::bounds(&gather(&data, dim, &sample)) };
                    if elem == DataType::Float64 {
                        b
                    } else {
                        (b.0 as f32 as f64, b.1 as f32 as f64)
                    }
                }
            };
            let rows = gather(&data, dim, &order.iter().map(|&i| i as usize).collect::<Vec<_>>());
            Stored::Sq { codes: sq_train::encode(&rows, bounds, p.num_bits), bounds, num_bits: p.num_bits, dim }
        }
        other => return Err(Error::unsupported(format!("building {other} indices is not supported yet"))),
    };
    Ok(IndexFiles { index_type: p.index_type, metric: p.metric, centroids: centroid_tensor, loss, lengths, row_ids, storage })
}

/// PQ codes (one byte per sub-vector) choosing, per sub-vector, the
/// codeword of largest inner product (the first on ties).
fn encode_max_dot(cb: &pq_train::Codebook, rows: &[f32]) -> Vec<u8> {
    let (m, dim) = (cb.num_sub_vectors, cb.dim);
    let (k, sd) = (1usize << cb.num_bits, dim / m.max(1));
    let n = rows.len().checked_div(dim).unwrap_or(0);
    let mut out = vec![0u8; n * m];
    for i in 0..n {
        for j in 0..m {
            let x = &rows[i * dim + j * sd..i * dim + (j + 1) * sd];
            let mut best = (f32::NEG_INFINITY, 0usize);
            for c in 0..k {
                let w = &cb.values[(j * k + c) * sd..(j * k + c + 1) * sd];
                let d: f32 = x.iter().zip(w).map(|(a, b)| a * b).sum();
                if d > best.0 {
                    best = (d, c);
                }
            }
            out[i * m + j] = best.1 as u8;
        }
    }
    out
}

/// Rows `idx` of `data` (rows of `dim`), in that order.
fn gather(data: &[f32], dim: usize, idx: &[usize]) -> Vec<f32> {
    let mut out = Vec::with_capacity(idx.len() * dim);
    for &i in idx {
        out.extend_from_slice(&data[i * dim..(i + 1) * dim]);
    }
    out
}
