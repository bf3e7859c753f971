//! Python glue for writing TileDB arrays (`lancelet.tiledb.create_array`,
//! `write`, `delete`). The Python side turns schema objects into plain
//! dicts with values already as stored bytes; this module builds the
//! core's `ArraySchema` from them and hands Arrow streams over.

use arrow_array::{RecordBatch, RecordBatchReader};
use lancelet::io::StorageOptions;
use lancelet::tiledb::datatype::Datatype;
use lancelet::tiledb::filters::{Filter, FilterPipeline};
use lancelet::tiledb::schema::{ArraySchema, Attribute, Dimension, Layout, VAR_NUM};
use lancelet::tiledb::write;
use lancelet::Error;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::arrow_ffi::import_stream;
use crate::errors::{guard, to_py, IntoPy};

fn invalid(msg: String) -> PyErr {
    to_py(Error::invalid_input(msg))
}

fn get<'py, T>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T>
where
    T: for<'a> FromPyObject<'a, 'py>,
    for<'a> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
{
    match d.get_item(key)? {
        Some(v) => v.extract::<T>().map_err(|e| {
            let e: PyErr = e.into();
            invalid(format!("schema field {key}: {e}"))
        }),
        None => Err(invalid(format!("schema description lacks {key}"))),
    }
}

fn datatype_by_name(name: &str) -> PyResult<Datatype> {
    (0u8..=43)
        .filter_map(|c| Datatype::from_code(c).ok())
        .find(|t| t.name() == name)
        .ok_or_else(|| invalid(format!("unknown TileDB datatype {name}")))
}

fn filter_from_py(d: &Bound<'_, PyDict>) -> PyResult<Filter> {
    let name: String = get(d, "name")?;
    let level = || -> PyResult<i32> { Ok(d.get_item("level")?.map(|v| v.extract::<i32>()).transpose()?.unwrap_or(-1)) };
    // tiledb-py's -1 means TileDB's default window: 256 bytes for bit-width
    // reduction, 1024 for positive delta.
    let window = |default: u32| -> PyResult<u32> {
        let w: i64 = d.get_item("window")?.map(|v| v.extract::<i64>()).transpose()?.unwrap_or(-1);
        Ok(if w < 0 { default } else { w as u32 })
    };
    let reinterpret = || -> PyResult<Option<Datatype>> {
        match d.get_item("reinterp_dtype")? {
            Some(v) if !v.is_none() => Ok(Some(datatype_by_name(&v.extract::<String>()?)?)),
            _ => Ok(None),
        }
    };
    Ok(match name.as_str() {
        "GzipFilter" => Filter::Gzip { level: level()? },
        "ZstdFilter" => Filter::Zstd { level: level()? },
        "LZ4Filter" => Filter::Lz4 { level: level()? },
        "Bzip2Filter" => Filter::Bzip2 { level: level()? },
        "RleFilter" => Filter::Rle { level: level()? },
        "DictionaryFilter" => Filter::Dictionary { level: level()? },
        "DeltaFilter" => Filter::Delta { level: level()?, reinterpret: reinterpret()? },
        "DoubleDeltaFilter" => Filter::DoubleDelta { level: level()?, reinterpret: reinterpret()? },
        "BitWidthReductionFilter" => Filter::BitWidthReduction { window: window(256)? },
        "PositiveDeltaFilter" => Filter::PositiveDelta { window: window(1024)? },
        "ByteShuffleFilter" => Filter::ByteShuffle,
        "BitShuffleFilter" => Filter::BitShuffle,
        "ChecksumMD5Filter" => Filter::ChecksumMd5,
        "ChecksumSHA256Filter" => Filter::ChecksumSha256,
        "XORFilter" => Filter::Xor,
        "FloatScaleFilter" => Filter::FloatScale { factor: get(d, "factor")?, offset: get(d, "offset")?, bytewidth: get(d, "bytewidth")? },
        other => return Err(to_py(Error::unsupported(format!("filter {other}")))),
    })
}

fn pipeline_from_py(v: &Bound<'_, PyAny>) -> PyResult<FilterPipeline> {
    let list = v.cast::<PyList>().map_err(|_| invalid("filters must be a list".into()))?;
    let mut filters = Vec::new();
    for f in list.iter() {
        filters.push(filter_from_py(f.cast::<PyDict>().map_err(|_| invalid("a filter must be a dict".into()))?)?);
    }
    Ok(FilterPipeline { max_chunk_size: write::encode::MAX_CHUNK_SIZE, filters })
}

fn layout(name: &str) -> PyResult<Layout> {
    Ok(match name {
        "row-major" | "C" => Layout::RowMajor,
        "col-major" | "F" => Layout::ColMajor,
        "hilbert" | "H" => Layout::Hilbert,
        other => return Err(invalid(format!("unknown order {other:?} (row-major, col-major or hilbert)"))),
    })
}

fn opt_bytes(v: Option<Bound<'_, PyAny>>) -> PyResult<Option<Vec<u8>>> {
    match v {
        Some(b) if !b.is_none() => Ok(Some(b.cast::<PyBytes>().map_err(|_| invalid("expected bytes".into()))?.as_bytes().to_vec())),
        _ => Ok(None),
    }
}

fn schema_from_py(d: &Bound<'_, PyDict>) -> PyResult<ArraySchema> {
    let field = |k: &str| -> PyResult<Bound<'_, PyAny>> { d.get_item(k)?.ok_or_else(|| invalid(format!("schema description lacks {k}"))) };
    let mut dims = Vec::new();
    for x in field("dims")?.cast::<PyList>().map_err(|_| invalid("dims must be a list".into()))?.iter() {
        let x = x.cast::<PyDict>().map_err(|_| invalid("a dimension must be a dict".into()))?;
        let var: bool = get(x, "var")?;
        let domain = match x.get_item("domain")? {
            Some(t) if !t.is_none() => {
                let (lo, hi): (Vec<u8>, Vec<u8>) = t.extract()?;
                Some((lo, hi))
            }
            _ => None,
        };
        dims.push(Dimension {
            name: get(x, "name")?,
            datatype: datatype_by_name(&get::<String>(x, "dtype")?)?,
            cell_val_num: if var { VAR_NUM } else { 1 },
            filters: pipeline_from_py(&x.get_item("filters")?.ok_or_else(|| invalid("dimension lacks filters".into()))?)?,
            domain,
            tile_extent: opt_bytes(x.get_item("tile")?)?,
        });
    }
    let mut attrs = Vec::new();
    for x in field("attrs")?.cast::<PyList>().map_err(|_| invalid("attrs must be a list".into()))?.iter() {
        let x = x.cast::<PyDict>().map_err(|_| invalid("an attribute must be a dict".into()))?;
        let cvn: Option<u32> = get(x, "cell_val_num")?;
        attrs.push(Attribute {
            name: get(x, "name")?,
            datatype: datatype_by_name(&get::<String>(x, "dtype")?)?,
            cell_val_num: cvn.unwrap_or(VAR_NUM),
            filters: pipeline_from_py(&x.get_item("filters")?.ok_or_else(|| invalid("attribute lacks filters".into()))?)?,
            // None (empty): TileDB's default, filled in by `set_defaults`.
            fill: opt_bytes(x.get_item("fill")?)?.unwrap_or_default(),
            nullable: get(x, "nullable")?,
            fill_valid: false,
        });
    }
    Ok(ArraySchema {
        name: String::new(),
        version: write::encode::WRITE_VERSION,
        allows_duplicates: get(d, "allows_duplicates")?,
        sparse: get(d, "sparse")?,
        tile_order: layout(&get::<String>(d, "tile_order")?)?,
        cell_order: layout(&get::<String>(d, "cell_order")?)?,
        capacity: get(d, "capacity")?,
        coords_filters: pipeline_from_py(&field("coords_filters")?)?,
        offsets_filters: pipeline_from_py(&field("offsets_filters")?)?,
        validity_filters: pipeline_from_py(&field("validity_filters")?)?,
        dims,
        attrs,
    })
}

/// Create an array; returns the schema file name.
#[pyfunction]
#[pyo3(signature = (uri, schema, timestamp=None, storage_options=None))]
fn tiledb_create_array(
    py: Python<'_>,
    uri: String,
    schema: &Bound<'_, PyDict>,
    timestamp: Option<u64>,
    storage_options: Option<StorageOptions>,
) -> PyResult<String> {
    let s = schema_from_py(schema)?;
    let opts = storage_options.unwrap_or_default();
    py.detach(|| guard(|| write::create_array(&uri, &opts, &s, timestamp))).py_err()
}

/// The serialized schema (the generic tile's content) a description
/// gives, with TileDB's defaults filled in as `create_array` does.
#[pyfunction]
fn tiledb_schema_bytes<'py>(py: Python<'py>, schema: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyBytes>> {
    let mut s = schema_from_py(schema)?;
    s.set_defaults().py_err()?;
    Ok(PyBytes::new(py, &write::encode::serialize_schema(&s)))
}

/// Write one fragment; returns `{"name", "timestamp", "cell_num", "nonempty": [(lo, hi) bytes]}`.
#[pyfunction]
#[pyo3(signature = (uri, data, subarray=None, timestamp=None, storage_options=None))]
fn tiledb_write<'py>(
    py: Python<'py>,
    uri: String,
    data: &Bound<'py, PyAny>,
    subarray: Option<Vec<(i128, i128)>>,
    timestamp: Option<u64>,
    storage_options: Option<StorageOptions>,
) -> PyResult<Bound<'py, PyDict>> {
    let reader = import_stream(data)?;
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().map_err(|e| invalid(format!("bad Arrow stream: {e}")))?;
    let opts = storage_options.unwrap_or_default();
    let w = py.detach(|| guard(|| write::write_batches(&uri, &opts, &schema, &batches, subarray, timestamp))).py_err()?;
    let d = PyDict::new(py);
    d.set_item("name", &w.name)?;
    d.set_item("timestamp", w.timestamp)?;
    d.set_item("cell_num", w.cell_num)?;
    let ned: Vec<Bound<'py, PyTuple>> =
        w.nonempty.iter().map(|(lo, hi)| PyTuple::new(py, [PyBytes::new(py, lo), PyBytes::new(py, hi)])).collect::<PyResult<_>>()?;
    d.set_item("nonempty", ned)?;
    Ok(d)
}

/// Write a delete commit; returns its file name.
#[pyfunction]
#[pyo3(signature = (uri, filter, timestamp=None, storage_options=None))]
fn tiledb_delete(py: Python<'_>, uri: String, filter: String, timestamp: Option<u64>, storage_options: Option<StorageOptions>) -> PyResult<String> {
    let opts = storage_options.unwrap_or_default();
    py.detach(|| guard(|| write::delete(&uri, &opts, &filter, timestamp))).py_err()
}

/// Make the next write on this thread fail at a named point (tests).
#[pyfunction]
#[pyo3(signature = (point=None))]
fn _tiledb_fail_point(point: Option<String>) {
    write::set_fail_point(point.as_deref());
}

/// Register the TileDB writing functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tiledb_create_array, m)?)?;
    m.add_function(wrap_pyfunction!(tiledb_schema_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(tiledb_write, m)?)?;
    m.add_function(wrap_pyfunction!(tiledb_delete, m)?)?;
    m.add_function(wrap_pyfunction!(_tiledb_fail_point, m)?)?;
    Ok(())
}
