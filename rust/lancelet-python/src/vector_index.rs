//! Python glue for building vector indices (`Dataset.create_index`); the
//! arguments arrive validated by `lancelet.indices.create_index`, tensors
//! as `(little-endian bytes, tensor data type, shape)`.

use lancelet::proto::index::Tensor;
use lancelet::table::ops::vector_index::{self as ops, VectorIndexOptions};
use pyo3::prelude::*;
use pyo3::wrap_pyfunction;

use crate::commit_args::{run_op, CommitArgs};
use crate::dataset::NativeDataset;
use crate::errors::{guard, IntoPy};

/// A tensor handed from numpy: bytes, `lance.index.pb.TensorDataType`
/// value (1 f16, 2 f32, 3 f64), shape.
type PyTensor = (Vec<u8>, i32, Vec<u32>);

fn tensor(t: Option<PyTensor>) -> Option<Tensor> {
    t.map(|(data, data_type, shape)| Tensor { data_type, shape, data })
}

/// Build an IVF_FLAT / IVF_PQ / IVF_SQ index and commit it.
#[pyfunction]
#[pyo3(signature = (ds, column, index_type, name, metric, replace, num_partitions, target_partition_size,
                    ivf_centroids, pq_codebook, num_sub_vectors, num_bits, sample_rate, max_iters, seed=None, commit=None))]
#[allow(clippy::too_many_arguments)]
fn dataset_create_vector_index(
    py: Python<'_>,
    ds: &NativeDataset,
    column: String,
    index_type: String,
    name: Option<String>,
    metric: String,
    replace: bool,
    num_partitions: Option<usize>,
    target_partition_size: Option<usize>,
    ivf_centroids: Option<PyTensor>,
    pq_codebook: Option<PyTensor>,
    num_sub_vectors: Option<usize>,
    num_bits: Option<u32>,
    sample_rate: usize,
    max_iters: usize,
    seed: Option<u64>,
    commit: Option<CommitArgs>,
) -> PyResult<NativeDataset> {
    let inner = ds.inner.clone();
    let mut o = VectorIndexOptions::new(&column, &index_type);
    o.name = name;
    o.metric = metric;
    o.replace = replace;
    o.num_partitions = num_partitions;
    o.target_partition_size = target_partition_size;
    o.ivf_centroids = tensor(ivf_centroids);
    o.pq_codebook = tensor(pq_codebook);
    o.num_sub_vectors = num_sub_vectors;
    o.num_bits = num_bits;
    o.sample_rate = sample_rate;
    o.max_iters = max_iters;
    o.seed = seed;
    run_op(py, commit, |props, _| ops::create_vector_index(&inner, &o, props)).map(|r| r.0)
}

/// `{uuid: details JSON}` for every vector index entry of `ds`: the
/// `details` dict of `describe_indices()`.
#[pyfunction]
fn dataset_vector_index_details(py: Python<'_>, ds: &NativeDataset) -> PyResult<Vec<(String, String)>> {
    let inner = ds.inner.clone();
    py.detach(move || guard(move || ops::vector_details(&inner))).py_err()
}

/// `(uuid, index type, metric, centroids, partition lengths, loss, storage
/// metadata JSON, created_at)` of every segment of the vector index `name`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn dataset_vector_index_stats(
    py: Python<'_>,
    ds: &NativeDataset,
    name: String,
) -> PyResult<Vec<(String, String, String, Vec<Vec<f32>>, Vec<u32>, Option<f64>, String, Option<u64>)>> {
    let inner = ds.inner.clone();
    let rows = py.detach(move || guard(move || ops::vector_stats(&inner, &name))).py_err()?;
    Ok(rows.into_iter().map(|s| (s.uuid, s.index_type, s.metric, s.centroids, s.lengths, s.loss, s.storage_metadata, s.created_at)).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dataset_create_vector_index, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_vector_index_details, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_vector_index_stats, m)?)?;
    Ok(())
}
