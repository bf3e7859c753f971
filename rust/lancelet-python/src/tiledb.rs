//! Python glue for TileDB arrays (`lancelet.tiledb`): opening, schema and
//! fragment descriptions as plain dicts (the Python module wraps them in
//! tiledb-py-like classes), and reads as Arrow streams.

use std::sync::Arc;

use lancelet::tiledb::cells::{cmp_values, output_schema};
use lancelet::tiledb::datatype::Datatype;
use lancelet::tiledb::filters::{Filter, FilterPipeline};
use lancelet::tiledb::schema::{float_value, int_value, VAR_NUM};
use lancelet::tiledb::{Order, ReadOptions, TileDbArray};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::arrow_ffi::{ArrowSchemaHolder, ArrowStream};
use crate::errors::{guard, IntoPy};

/// A TileDB array opened at a timestamp range.
#[pyclass(module = "lancelet._native", name = "TileDBArray", frozen)]
pub struct NativeTileDBArray {
    pub(crate) inner: Arc<TileDbArray>,
}

/// A stored value as a Python object (ints, floats, str for strings,
/// bytes for other byte types; datetimes as their integer count).
fn value_to_py<'py>(py: Python<'py>, t: Datatype, var: bool, b: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    if t.is_bytes() && (var || b.len() != 1 || matches!(t, Datatype::StringAscii | Datatype::StringUtf8)) {
        return Ok(match t {
            Datatype::StringAscii | Datatype::StringUtf8 => PyString::new(py, &String::from_utf8_lossy(b)).into_any(),
            _ => PyBytes::new(py, b).into_any(),
        });
    }
    let w = t.size();
    if b.len() > w && w > 0 && b.len() % w == 0 {
        let items: Vec<Bound<'py, PyAny>> = b.chunks_exact(w).map(|c| value_to_py(py, t, false, c)).collect::<PyResult<_>>()?;
        return Ok(PyList::new(py, items)?.into_any());
    }
    if t == Datatype::Bool {
        return Ok(pyo3::types::PyBool::new(py, b.first().is_some_and(|x| *x != 0)).to_owned().into_any());
    }
    if let Some(i) = int_value(t, b) {
        return Ok(i.into_pyobject(py)?.into_any());
    }
    if let Some(f) = float_value(t, b) {
        return Ok(f.into_pyobject(py)?.into_any());
    }
    Ok(PyBytes::new(py, b).into_any())
}

fn filter_to_py<'py>(py: Python<'py>, f: &Filter) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", f.name())?;
    match f {
        Filter::Gzip { level }
        | Filter::Zstd { level }
        | Filter::Lz4 { level }
        | Filter::Rle { level }
        | Filter::Bzip2 { level }
        | Filter::Dictionary { level } => d.set_item("level", level)?,
        Filter::Delta { level, reinterpret } | Filter::DoubleDelta { level, reinterpret } => {
            d.set_item("level", level)?;
            d.set_item("reinterp_dtype", reinterpret.map(|t| t.name()))?;
        }
        Filter::BitWidthReduction { window } | Filter::PositiveDelta { window } => d.set_item("window", window)?,
        Filter::FloatScale { factor, offset, bytewidth } => {
            d.set_item("factor", factor)?;
            d.set_item("offset", offset)?;
            d.set_item("bytewidth", bytewidth)?;
        }
        _ => {}
    }
    Ok(d)
}

fn pipeline_to_py<'py>(py: Python<'py>, p: &FilterPipeline) -> PyResult<Bound<'py, PyList>> {
    let items: Vec<_> = p.filters.iter().map(|f| filter_to_py(py, f)).collect::<PyResult<_>>()?;
    PyList::new(py, items)
}

/// A subarray bound from a Python int, float, str or bytes.
fn bound_from_py(v: &Bound<'_, PyAny>) -> PyResult<Bound2> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Bound2(lancelet::tiledb::Bound::Bytes(s.to_cow()?.as_bytes().to_vec())));
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(Bound2(lancelet::tiledb::Bound::Bytes(b.as_bytes().to_vec())));
    }
    if let Ok(i) = v.extract::<i128>() {
        return Ok(Bound2(lancelet::tiledb::Bound::Int(i)));
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(Bound2(lancelet::tiledb::Bound::Float(f)));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!("subarray bound {v} is not an int, float, str or bytes")))
}

/// Newtype so `Bound` (the core's) does not clash with PyO3's `Bound`.
struct Bound2(lancelet::tiledb::Bound);

fn mbr_to_py<'py>(py: Python<'py>, arr: &TileDbArray, mbr: &[(Vec<u8>, Vec<u8>)]) -> PyResult<Bound<'py, PyTuple>> {
    let items: Vec<Bound<'py, PyTuple>> = mbr
        .iter()
        .zip(&arr.schema.dims)
        .map(|((lo, hi), dim)| {
            let var = dim.cell_val_num == VAR_NUM;
            PyTuple::new(py, [value_to_py(py, dim.datatype, var, lo)?, value_to_py(py, dim.datatype, var, hi)?])
        })
        .collect::<PyResult<_>>()?;
    PyTuple::new(py, items)
}

#[pymethods]
impl NativeTileDBArray {
    #[new]
    #[pyo3(signature = (uri, start=0, end=u64::MAX, storage_options=None))]
    fn new(py: Python<'_>, uri: String, start: u64, end: u64, storage_options: Option<lancelet::io::StorageOptions>) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        let inner = py.detach(|| guard(|| TileDbArray::open(&uri, &options, (start, end)))).py_err()?;
        Ok(NativeTileDBArray { inner: Arc::new(inner) })
    }

    #[getter]
    fn uri(&self) -> String {
        self.inner.uri().to_string()
    }

    #[getter]
    fn timestamp_range(&self) -> (u64, u64) {
        self.inner.range
    }

    /// The schema as a dict of plain values.
    fn schema_info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = &self.inner.schema;
        let d = PyDict::new(py);
        d.set_item("name", &s.name)?;
        d.set_item("version", s.version)?;
        d.set_item("sparse", s.sparse)?;
        d.set_item("allows_duplicates", s.allows_duplicates)?;
        d.set_item("capacity", s.capacity)?;
        d.set_item("cell_order", s.cell_order.name())?;
        d.set_item("tile_order", s.tile_order.name())?;
        d.set_item("coords_filters", pipeline_to_py(py, &s.coords_filters)?)?;
        d.set_item("offsets_filters", pipeline_to_py(py, &s.offsets_filters)?)?;
        d.set_item("validity_filters", pipeline_to_py(py, &s.validity_filters)?)?;
        let dims = PyList::empty(py);
        for dim in &s.dims {
            let x = PyDict::new(py);
            x.set_item("name", &dim.name)?;
            x.set_item("dtype", dim.datatype.name())?;
            x.set_item("var", dim.is_var())?;
            match &dim.domain {
                Some((lo, hi)) => x.set_item("domain", (value_to_py(py, dim.datatype, false, lo)?, value_to_py(py, dim.datatype, false, hi)?))?,
                None => x.set_item("domain", py.None())?,
            }
            match &dim.tile_extent {
                Some(t) => x.set_item("tile", value_to_py(py, dim.datatype, false, t)?)?,
                None => x.set_item("tile", py.None())?,
            }
            x.set_item("filters", pipeline_to_py(py, &dim.filters)?)?;
            dims.append(x)?;
        }
        d.set_item("dims", dims)?;
        let attrs = PyList::empty(py);
        for a in &s.attrs {
            let x = PyDict::new(py);
            x.set_item("name", &a.name)?;
            x.set_item("dtype", a.datatype.name())?;
            x.set_item("var", a.is_var())?;
            x.set_item("cell_val_num", if a.is_var() { None } else { Some(a.cell_val_num) })?;
            x.set_item("nullable", a.nullable)?;
            x.set_item("fill", value_to_py(py, a.datatype, a.is_var(), &a.fill)?)?;
            x.set_item("filters", pipeline_to_py(py, &a.filters)?)?;
            attrs.append(x)?;
        }
        d.set_item("attrs", attrs)?;
        Ok(d)
    }

    /// The Arrow schema a read with these options returns.
    #[pyo3(signature = (attrs=None, dims=true))]
    fn arrow_schema(&self, attrs: Option<Vec<String>>, dims: bool) -> PyResult<ArrowSchemaHolder> {
        let opts = ReadOptions { attrs, dims, ..Default::default() };
        Ok(ArrowSchemaHolder { schema: output_schema(&self.inner.schema, &opts).py_err()? })
    }

    /// Visible fragments, oldest first, as dicts.
    fn fragments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let s = &self.inner.schema;
        for f in &self.inner.fragments {
            let d = PyDict::new(py);
            d.set_item("name", &f.name)?;
            d.set_item("timestamp_range", (f.t1, f.t2))?;
            d.set_item("version", f.version)?;
            d.set_item("sparse", !f.dense)?;
            let cells: u64 = if f.dense {
                let per_tile: u128 = s.dims.iter().map(|d| d.int_extent().unwrap_or(1) as u128).product();
                let tiles = f.tiles(0).map(|t| t.len() as u128).py_err()?;
                (per_tile * tiles) as u64
            } else if f.sparse_tile_num == 0 {
                0
            } else {
                (f.sparse_tile_num - 1) * s.capacity + f.last_tile_cell_num
            };
            d.set_item("cell_num", cells)?;
            match &f.nonempty {
                Some(m) => d.set_item("nonempty_domain", mbr_to_py(py, &self.inner, m)?)?,
                None => d.set_item("nonempty_domain", py.None())?,
            }
            d.set_item("has_timestamps", f.has_timestamps)?;
            d.set_item("has_delete_meta", f.has_delete_meta)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Union of the visible fragments' non-empty domains (None if empty).
    fn nonempty_domain<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let dims = &self.inner.schema.dims;
        let mut acc: Option<Vec<(Vec<u8>, Vec<u8>)>> = None;
        for f in &self.inner.fragments {
            let Some(m) = &f.nonempty else { continue };
            acc = Some(match acc {
                None => m.clone(),
                Some(a) => a
                    .into_iter()
                    .zip(m)
                    .zip(dims)
                    .map(|(((lo, hi), (flo, fhi)), dim)| {
                        let lo = if cmp_values(dim.datatype, flo, &lo).is_lt() { flo.clone() } else { lo };
                        let hi = if cmp_values(dim.datatype, fhi, &hi).is_gt() { fhi.clone() } else { hi };
                        (lo, hi)
                    })
                    .collect(),
            });
        }
        acc.map(|m| mbr_to_py(py, &self.inner, &m)).transpose()
    }

    /// Read into an Arrow stream (one batch).
    #[pyo3(signature = (subarray=None, attrs=None, dims=true, order=None, filter=None))]
    fn read(
        &self,
        py: Python<'_>,
        subarray: Option<Vec<Option<Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)>>>>,
        attrs: Option<Vec<String>>,
        dims: bool,
        order: Option<String>,
        filter: Option<String>,
    ) -> PyResult<ArrowStream> {
        let opts = ReadOptions { subarray: subarray_arg(subarray)?, attrs, dims, order: order_arg(order.as_deref())?, filter };
        let inner = self.inner.clone();
        let batch = py.detach(|| guard(|| inner.read(&opts))).py_err()?;
        Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
    }

    /// Stream a read in batches of at most `batch_size` rows.
    #[pyo3(signature = (subarray=None, attrs=None, dims=true, order=None, filter=None, batch_size=65536))]
    #[allow(clippy::too_many_arguments)]
    fn to_batches(
        &self,
        py: Python<'_>,
        subarray: Option<Vec<Option<Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)>>>>,
        attrs: Option<Vec<String>>,
        dims: bool,
        order: Option<String>,
        filter: Option<String>,
        batch_size: usize,
    ) -> PyResult<ArrowStream> {
        let opts = ReadOptions { subarray: subarray_arg(subarray)?, attrs, dims, order: order_arg(order.as_deref())?, filter };
        let inner = self.inner.clone();
        let stream = py.detach(|| guard(|| lancelet::tiledb::stream::BatchStream::new(inner, opts, batch_size))).py_err()?;
        let schema = stream.schema();
        Ok(ArrowStream::new(Box::new(TileDbReader { inner: stream, schema })))
    }

    /// Aggregates per attribute: `[(attr, [op, ...]), ...]` ->
    /// `{attr: {op: value}}`.
    /// With `counts`, returns `(values, {"fragments", "tiles_total",
    /// "tiles_read"})`: the tiles read rather than summarised.
    #[pyo3(signature = (requests, subarray=None, counts=false))]
    fn aggregate<'py>(
        &self,
        py: Python<'py>,
        requests: Vec<(String, Vec<String>)>,
        subarray: Option<Vec<Option<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>>>>,
        counts: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        use lancelet::tiledb::aggregate::AggOp;
        let sub = subarray_arg(subarray)?;
        let mut reqs = Vec::new();
        for (attr, ops) in requests {
            let ops = ops.iter().map(|o| AggOp::parse(o)).collect::<lancelet::Result<Vec<_>>>().py_err()?;
            reqs.push((attr, ops));
        }
        let inner = self.inner.clone();
        let (out, c) = py.detach(|| guard(|| inner.aggregate(&sub, &reqs))).py_err()?;
        let d = PyDict::new(py);
        for (attr, vals) in &out {
            let x = PyDict::new(py);
            for (op, v) in vals {
                let key = match op {
                    AggOp::Sum => "sum",
                    AggOp::Min => "min",
                    AggOp::Max => "max",
                    AggOp::Mean => "mean",
                    AggOp::Count => "count",
                    AggOp::NullCount => "null_count",
                };
                x.set_item(key, agg_to_py(py, v)?)?;
            }
            d.set_item(attr, x)?;
        }
        if counts {
            let cd = PyDict::new(py);
            cd.set_item("fragments", c.fragments)?;
            cd.set_item("tiles_total", c.tiles_total)?;
            cd.set_item("tiles_read", c.tiles_read)?;
            return Ok(PyTuple::new(py, [d.into_any(), cd.into_any()])?.into_any());
        }
        Ok(d.into_any())
    }

    /// Fragments, data tiles and tiles left after pruning for a read.
    #[pyo3(signature = (subarray=None, filter=None))]
    fn explain<'py>(
        &self,
        py: Python<'py>,
        subarray: Option<Vec<Option<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>>>>,
        filter: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let sub = subarray_arg(subarray)?;
        let inner = self.inner.clone();
        let c = py.detach(|| guard(|| inner.explain(&sub, filter.as_deref()))).py_err()?;
        let d = PyDict::new(py);
        d.set_item("fragments", c.fragments)?;
        d.set_item("tiles_total", c.tiles_total)?;
        d.set_item("tiles_read", c.tiles_read)?;
        Ok(d)
    }
}

/// A streamed read as an Arrow reader; errors and panics become errors.
struct TileDbReader {
    inner: lancelet::tiledb::stream::BatchStream,
    schema: arrow_schema::SchemaRef,
}

impl Iterator for TileDbReader {
    type Item = Result<arrow_array::RecordBatch, arrow_schema::ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        let inner = &mut self.inner;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.next())) {
            Ok(None) => None,
            Ok(Some(r)) => Some(r.map_err(crate::errors::stream_error)),
            Err(payload) => Some(Err(crate::errors::stream_error(crate::errors::caught_panic(payload)))),
        }
    }
}

impl arrow_array::RecordBatchReader for TileDbReader {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.schema.clone()
    }
}

fn agg_to_py<'py>(py: Python<'py>, v: &lancelet::tiledb::aggregate::AggValue) -> PyResult<Bound<'py, PyAny>> {
    use lancelet::tiledb::aggregate::AggValue;
    Ok(match v {
        AggValue::Int(i) => i.into_pyobject(py)?.into_any(),
        AggValue::Float(f) => f.into_pyobject(py)?.into_any(),
        AggValue::Null => py.None().into_bound(py),
        AggValue::Stored(t, b) => value_to_py(py, *t, t.is_bytes(), b)?,
    })
}

fn order_arg(order: Option<&str>) -> PyResult<Order> {
    Ok(match order {
        None | Some("U") => Order::Unordered,
        Some("C") => Order::RowMajor,
        Some("F") => Order::ColMajor,
        Some(o) => return Err(crate::errors::to_py(lancelet::Error::invalid_input(format!("order {o:?} (use 'C', 'F' or 'U')")))),
    })
}

#[allow(clippy::type_complexity)]
fn subarray_arg(subarray: Option<Vec<Option<Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)>>>>) -> PyResult<Vec<Option<lancelet::tiledb::DimRanges>>> {
    let mut sub = Vec::new();
    for dim in subarray.unwrap_or_default() {
        match dim {
            None => sub.push(None),
            Some(ranges) => {
                let mut rs = Vec::new();
                for (lo, hi) in ranges {
                    rs.push((bound_from_py(&lo)?.0, bound_from_py(&hi)?.0));
                }
                sub.push(Some(rs));
            }
        }
    }
    Ok(sub)
}

/// Register the TileDB classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeTileDBArray>()
}
