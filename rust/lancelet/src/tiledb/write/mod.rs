//! Writing TileDB arrays (format version 22) that TileDB 2.30 /
//! tiledb-py 0.36 read as their own.
//!
//! - [`create_array`]: `__schema/__<t>_<t>_<uuid>` (the schema, a generic
//!   tile) and, on local disks, the empty `__commits/`, `__fragments/`,
//!   `__fragment_meta/`, `__labels/`, `__meta/` and
//!   `__schema/__enumerations/` folders tiledb-py makes.
//! - [`write_fragment`]: one fragment `__fragments/__<t>_<t>_<uuid>_22/`
//!   (data files, then `__fragment_metadata.tdb`), then the empty commit
//!   marker `__commits/__<t>_<t>_<uuid>_22.wrt` last: a write that fails
//!   before the marker leaves nothing readers see (and its files are
//!   removed).
//! - [`delete`]: `__commits/__<t>_<t>_<uuid>_22.del`, a generic tile holding
//!   the negated delete condition ([`condition`]).
//!
//! Modules: [`encode`] (filters forward, generic tiles, schema bytes),
//! [`codecs_enc`], [`cells`] (Arrow to cell bytes), [`plan`] (which cells
//! go to which tile), [`stats`] (tile metadata), [`fragment`] (data files
//! and the metadata file), [`condition`] (delete conditions).

pub mod cells;
pub mod codecs_enc;
pub mod condition;
pub mod encode;
pub mod fragment;
pub mod plan;
pub mod stats;

use std::hash::{BuildHasher, Hasher};

use arrow_array::RecordBatch;
use bytes::Bytes;

use super::fragment::TimestampedName;
use super::schema::{ArraySchema, Layout};
use crate::error::{Error, Result};
use crate::io::{Storage, StorageOptions};
use cells::{column_cells, Cells};
use encode::{generic_tile, serialize_schema, WRITE_VERSION};
use fragment::{coords_slot, empty_slot, metadata_file, write_column, ColumnIn, FragmentHeader, Mbr, SlotOut};

/// 32 random hex digits (TileDB's name uuids).
pub fn random_uuid() -> String {
    let mut s = String::new();
    for k in 0..2u64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(k);
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
        s.push_str(&format!("{:016x}", h.finish()));
    }
    s
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The local directory behind a URI (None for object stores and memory).
fn local_path(uri: &str) -> Option<std::path::PathBuf> {
    if let Some(rest) = uri.strip_prefix("file://") {
        return Some(rest.into());
    }
    (!uri.contains("://")).then(|| uri.into())
}

/// TileDB's check that every filter of a pipeline takes the datatype the
/// one before it hands on (`Filter::accepts_input_datatype`).
fn check_pipeline(p: &super::filters::FilterPipeline, input: super::datatype::Datatype, var: bool, field: &str) -> Result<()> {
    use super::datatype::Datatype as D;
    use super::filters::Filter as F;
    if var && matches!(input, D::StringAscii | D::StringUtf8) && p.filters.len() > 1 {
        for (name, is) in [("RleFilter", 0u8), ("DictionaryFilter", 1)] {
            let has = |f: &F| if is == 0 { matches!(f, F::Rle { .. }) } else { matches!(f, F::Dictionary { .. }) };
            if p.filters.iter().any(has) && !has(&p.filters[0]) {
                return Err(Error::invalid_input(format!("{field}: {name} must be the first filter when used on var-sized strings (as in TileDB)")));
            }
        }
    }
    let mut t = input;
    for f in &p.filters {
        let integral = t.is_integer() || t == D::Blob;
        let ok = match f {
            F::BitWidthReduction { .. } | F::PositiveDelta { .. } => integral,
            F::Delta { reinterpret, .. } | F::DoubleDelta { reinterpret, .. } => {
                let r = reinterpret.unwrap_or(t);
                !matches!(r, D::Float32 | D::Float64) && t.size() % r.size() == 0
            }
            F::FloatScale { bytewidth, .. } => matches!(t.size(), 4 | 8) && matches!(bytewidth, 1 | 2 | 4 | 8),
            F::Xor => matches!(t.size(), 1 | 2 | 4 | 8),
            _ => true,
        };
        if !ok {
            return Err(Error::invalid_input(format!("{field}: filter {} does not accept input type {}", f.name(), t.name())));
        }
        if let F::Delta { reinterpret: Some(r), .. } | F::DoubleDelta { reinterpret: Some(r), .. } = f {
            t = *r;
        }
        if let F::FloatScale { bytewidth, .. } = f {
            t = match bytewidth {
                1 => D::Int8,
                2 => D::Int16,
                4 => D::Int32,
                _ => D::Int64,
            };
        }
    }
    Ok(())
}

fn check_writable_schema(s: &ArraySchema) -> Result<()> {
    check_pipeline(&s.offsets_filters, super::datatype::Datatype::UInt64, false, "offsets filters")?;
    check_pipeline(&s.validity_filters, super::datatype::Datatype::UInt8, false, "validity filters")?;
    for (i, d) in s.dims.iter().enumerate() {
        check_pipeline(s.dim_filters(i), d.datatype, d.is_var(), &format!("dimension {}", d.name))?;
    }
    for a in &s.attrs {
        check_pipeline(&a.filters, a.datatype, a.is_var(), &format!("attribute {}", a.name))?;
    }
    for l in [s.cell_order, s.tile_order] {
        if l == Layout::Hilbert {
            return Err(Error::unsupported("writing arrays with Hilbert cell order"));
        }
    }
    if s.dims.is_empty() {
        return Err(Error::invalid_input("an array needs at least one dimension"));
    }
    if !s.sparse && s.attrs.is_empty() {
        return Err(Error::invalid_input("a dense array needs at least one attribute"));
    }
    let mut names = std::collections::HashSet::new();
    for n in s.dims.iter().map(|d| &d.name).chain(s.attrs.iter().map(|a| &a.name)) {
        if n.is_empty() || !names.insert(n.as_str()) {
            return Err(Error::invalid_input(format!("dimension and attribute names must be unique and non-empty ({n:?})")));
        }
    }
    for d in &s.dims {
        if !s.sparse && d.datatype != s.dims[0].datatype {
            return Err(Error::invalid_input(format!(
                "in dense arrays all dimensions must have the same datatype ({} is {}, {} is {})",
                s.dims[0].name,
                s.dims[0].datatype.name(),
                d.name,
                d.datatype.name()
            )));
        }
        if !s.sparse && d.int_domain().is_none() {
            return Err(Error::invalid_input(format!("dense arrays need integer or datetime dimensions; {} is {}", d.name, d.datatype.name())));
        }
        if let Some((lo, hi)) = &d.domain {
            if plan::cmp_coord(d.datatype, lo, hi).is_gt() {
                return Err(Error::invalid_input(format!("dimension {}: domain low bound above the high bound", d.name)));
            }
        } else if !d.is_var() {
            return Err(Error::invalid_input(format!("dimension {} needs a domain", d.name)));
        }
    }
    Ok(())
}

/// A fixed-size attribute's fill value is one cell, as TileDB requires
/// ("Input size is not the same as cell size").
fn check_fills(s: &ArraySchema) -> Result<()> {
    for a in &s.attrs {
        if !a.is_var() && a.fill.len() != a.cell_size() {
            return Err(Error::invalid_input(format!(
                "attribute {}: a fill value of {} bytes for cells of {} bytes",
                a.name,
                a.fill.len(),
                a.cell_size()
            )));
        }
    }
    Ok(())
}

/// Create an empty array at `uri` with `schema` (its `name` is replaced
/// by the timestamped file name), completed with TileDB's defaults
/// ([`ArraySchema::set_defaults`]: tile extents, fill values). Fails if
/// an array is already there.
pub fn create_array(uri: &str, options: &StorageOptions, schema: &ArraySchema, timestamp: Option<u64>) -> Result<String> {
    check_writable_schema(schema)?;
    let mut s = schema.clone();
    s.set_defaults()?;
    check_fills(&s)?;
    let root = crate::tiledb::open_array_root(uri, options)?;
    let schema_dir = root.child("__schema")?;
    if root.child("__schema")?.list().map(|l| !l.is_empty()).unwrap_or(false) {
        return Err(Error::already_exists(format!("TileDB array at {}", root.display())));
    }
    let t = timestamp.unwrap_or_else(now_ms);
    let name = format!("__{t}_{t}_{}", random_uuid());
    s.version = WRITE_VERSION;
    s.name = name.clone();
    if let Some(p) = local_path(uri) {
        for d in ["__commits", "__fragments", "__fragment_meta", "__labels", "__meta", "__schema/__enumerations"] {
            std::fs::create_dir_all(p.join(d)).map_err(|e| Error::io(p.join(d).display().to_string(), e.to_string()).with_source(e))?;
        }
    }
    schema_dir.child(&name)?.write_new(Bytes::from(generic_tile(&serialize_schema(&s))))?;
    Ok(name)
}

/// Load the newest schema of the array at `root`.
pub fn latest_schema(root: &Storage) -> Result<ArraySchema> {
    let dir = root.child("__schema")?;
    let mut found: Vec<(u64, String)> = Vec::new();
    for (file, _) in dir.list()? {
        if let Ok(ts) = TimestampedName::parse(&file) {
            found.push((ts.t1, file));
        }
    }
    found.sort();
    let Some((_, name)) = found.last() else {
        return Err(Error::not_found(format!("TileDB array at {} (no __schema)", root.display())));
    };
    let file = dir.child(name)?;
    ArraySchema::parse(&file.read_all()?, name).map_err(|e| e.in_file(file.display()))
}

/// What a write produced.
#[derive(Debug, Clone)]
pub struct WrittenFragment {
    pub name: String,
    pub timestamp: u64,
    pub dense: bool,
    /// Cells stored (dense: whole space tiles).
    pub cell_num: u64,
    pub nonempty: Mbr,
}

fn column<'b>(batch: &'b RecordBatch, name: &str) -> Result<&'b arrow_array::ArrayRef> {
    batch.column_by_name(name).ok_or_else(|| Error::invalid_input(format!("the write data has no column {name}")))
}

/// Write `batch` as one fragment. Dense arrays take every attribute and
/// `subarray` (inclusive integer ranges, default the whole domain) with
/// cells row-major over it; sparse arrays take every dimension and
/// attribute in any row order.
pub fn write_fragment(
    uri: &str,
    options: &StorageOptions,
    batch: &RecordBatch,
    subarray: Option<Vec<(i128, i128)>>,
    timestamp: Option<u64>,
) -> Result<WrittenFragment> {
    let t = timestamp.unwrap_or_else(now_ms);
    write_fragment_over(uri, options, std::slice::from_ref(batch), subarray, (t, t), None, None)
}

/// [`write_fragment`] named for the timestamp range `range` (`__t1_t2_`):
/// the fragment a consolidation of the fragments of that range writes.
/// `cell_timestamps` (sparse only, one per row): the cells are versions
/// with these timestamps, stored in `t.tdb` (coordinates may repeat).
///
/// The rows are `batches` in order (never concatenated). Memory: besides
/// the input, the dimensions' cell bytes (sparse: they order the cells)
/// and one attribute at a time — its cell bytes, then its encoded tiles,
/// written out before the next attribute is converted.
pub fn write_fragment_over(
    uri: &str,
    options: &StorageOptions,
    batches: &[RecordBatch],
    subarray: Option<Vec<(i128, i128)>>,
    range: (u64, u64),
    cell_timestamps: Option<&[u64]>,
    delete_meta: Option<&super::sparse::DeleteMeta>,
) -> Result<WrittenFragment> {
    let root = crate::tiledb::open_array_root(uri, options)?;
    let schema = latest_schema(&root)?;
    check_writable_schema(&schema)?;
    let expected: Vec<&str> = if schema.sparse {
        schema.dims.iter().map(|d| d.name.as_str()).chain(schema.attrs.iter().map(|a| a.name.as_str())).collect()
    } else {
        schema.attrs.iter().map(|a| a.name.as_str()).collect()
    };
    let fields: Vec<String> = batches.first().map(|b| b.schema().fields().iter().map(|f| f.name().clone()).collect()).unwrap_or_default();
    for f in &fields {
        if !expected.contains(&f.as_str()) {
            let why = if schema.dim_index(f).is_some() { " (dense writes place cells by the subarray)" } else { "" };
            return Err(Error::invalid_input(format!("the write data has column {f} that the array does not take{why}")));
        }
    }
    for name in &expected {
        if !fields.iter().any(|f| f == name) {
            return Err(Error::invalid_input(format!("the write data has no column {name}")));
        }
    }
    let n: usize = batches.iter().map(|b| b.num_rows()).sum();
    if let Some(ts) = cell_timestamps {
        if !schema.sparse || ts.len() != n {
            return Err(Error::Internal {
                what: format!("{} per-cell timestamps for {n} cells of a {} array", ts.len(), if schema.sparse { "sparse" } else { "dense" }),
            });
        }
    }
    if let Some(dm) = delete_meta {
        if cell_timestamps.is_none() || dm.dt.len() != n || dm.dci.len() != n {
            return Err(Error::Internal { what: "delete metadata needs per-cell timestamps and one entry per cell".into() });
        }
    }
    let nd = schema.dims.len();
    let (plan, leaves, nonempty, dim_cells, sparse_tiles, last_cells) = if schema.sparse {
        if subarray.is_some() {
            return Err(Error::invalid_input("sparse writes take coordinates from the dimension columns, not a subarray"));
        }
        let mut dims: Vec<Cells> = Vec::new();
        for d in &schema.dims {
            dims.push(batches_cells(batches, &d.name, d.datatype, d.cell_val_num, false)?);
        }
        if n == 0 {
            return Err(Error::invalid_input("the write data has no rows"));
        }
        let (plan, leaves, nonempty) = plan::sparse_plan(&schema, &dims, cell_timestamps)?;
        let tiles = plan.tiles.len() as u64;
        let last = plan.tiles.last().map_or(0, |t| t.len() as u64);
        (plan, leaves, nonempty, dims, tiles, last)
    } else {
        let mut sub = Vec::with_capacity(nd);
        for (d, dim) in schema.dims.iter().enumerate() {
            let (lo, hi) = dim.int_domain().ok_or_else(|| Error::invalid_input(format!("dimension {} is not integer", dim.name)))?;
            let r = match subarray.as_ref().map(|s| s.get(d).copied()) {
                None => (lo, hi),
                Some(Some(r)) => r,
                Some(None) => {
                    return Err(Error::invalid_input(format!("subarray has {} ranges for {nd} dimensions", subarray.as_ref().map_or(0, |s| s.len()))))
                }
            };
            if r.0 > r.1 || r.0 < lo || r.1 > hi {
                return Err(Error::invalid_input(format!(
                    "subarray range [{}, {}] of dimension {} is outside the domain [{lo}, {hi}]",
                    r.0, r.1, dim.name
                )));
            }
            sub.push(r);
        }
        if subarray.as_ref().is_some_and(|s| s.len() != nd) {
            return Err(Error::invalid_input(format!("subarray has {} ranges for {nd} dimensions", subarray.as_ref().map_or(0, |s| s.len()))));
        }
        let want: i128 = sub.iter().map(|(l, h)| h - l + 1).product();
        if want != n as i128 {
            return Err(Error::invalid_input(format!("the subarray holds {want} cells, the write data has {n} rows")));
        }
        let (plan, per_tile) = plan::dense_plan(&schema, &sub)?;
        let nonempty: Mbr = schema
            .dims
            .iter()
            .zip(&sub)
            .map(|(d, (lo, hi))| {
                let w = d.datatype.size();
                ((*lo as i64).to_le_bytes()[..w].to_vec(), (*hi as i64).to_le_bytes()[..w].to_vec())
            })
            .collect();
        (plan, Vec::new(), nonempty, Vec::new(), 0, per_tile)
    };
    let ntiles = plan.tiles.len();
    let (t1, t) = range;
    let name = format!("__{t1}_{t}_{}_{WRITE_VERSION}", random_uuid());
    let dir = root.child(&format!("__fragments/{name}"))?;
    let result = (|| -> Result<()> {
        let mut slots: Vec<SlotOut> = Vec::with_capacity(schema.attrs.len() + 2 + nd);
        for (i, a) in schema.attrs.iter().enumerate() {
            let cells = batches_cells(batches, &a.name, a.datatype, a.cell_val_num, a.nullable)?;
            let col = ColumnIn {
                name: &a.name,
                datatype: a.datatype,
                cell_val_num: a.cell_val_num,
                nullable: a.nullable,
                is_dim: false,
                filters: &a.filters,
                cells: &cells,
            };
            let mut slot = write_column(&schema, &col, &plan)?;
            drop(cells);
            put_files(&dir, &format!("a{i}"), &mut slot, a.is_var(), a.nullable)?;
            slots.push(slot);
        }
        slots.push(coords_slot(&schema, ntiles));
        for (d, dim) in schema.dims.iter().enumerate() {
            if schema.sparse {
                let col = ColumnIn {
                    name: &dim.name,
                    datatype: dim.datatype,
                    cell_val_num: dim.cell_val_num,
                    nullable: false,
                    is_dim: true,
                    filters: schema.dim_filters(d),
                    cells: &dim_cells[d],
                };
                let mut slot = write_column(&schema, &col, &plan)?;
                put_files(&dir, &format!("d{d}"), &mut slot, dim.is_var(), false)?;
                slots.push(slot);
            } else {
                slots.push(empty_slot(ntiles));
            }
        }
        // The per-cell timestamps, then the delete metadata: u64 columns
        // under the coordinates' filters, in TileDB's slot order.
        let mut extra: Vec<(&str, &[u64])> = Vec::new();
        if let Some(ts) = cell_timestamps {
            extra.push(("t", ts));
        }
        if let Some(dm) = delete_meta {
            extra.push(("dt", &dm.dt));
            extra.push(("dci", &dm.dci));
        }
        for (stem, values) in extra {
            let cells = Cells {
                len: n,
                cell_size: 8,
                fixed: values.iter().flat_map(|t| t.to_le_bytes()).collect(),
                offsets: Vec::new(),
                data: Vec::new(),
                validity: None,
            };
            let col = ColumnIn {
                name: stem,
                datatype: super::datatype::Datatype::UInt64,
                cell_val_num: 1,
                nullable: false,
                is_dim: false,
                filters: &schema.coords_filters,
                cells: &cells,
            };
            let mut slot = write_column(&schema, &col, &plan)?;
            put_files(&dir, stem, &mut slot, false, false)?;
            slots.push(slot);
        }
        let header = FragmentHeader {
            schema: &schema,
            dense: !schema.sparse,
            nonempty: &nonempty,
            leaves: &leaves,
            sparse_tile_num: sparse_tiles,
            last_tile_cell_num: last_cells,
            has_timestamps: cell_timestamps.is_some(),
            processed_conditions: delete_meta.map(|d| d.processed.as_slice()),
        };
        dir.child("__fragment_metadata.tdb")?.write_all(Bytes::from(metadata_file(&header, &slots)))?;
        fail_point("before_commit")?;
        root.child(&format!("__commits/{name}.wrt"))?.write_new(Bytes::new())?;
        Ok(())
    })();
    if let Err(e) = result {
        // Nothing is committed: remove what was written (best effort; an
        // uncommitted fragment is invisible to readers anyway).
        let _ = dir.delete_all();
        if let Some(p) = local_path(uri) {
            let _ = std::fs::remove_dir_all(p.join("__fragments").join(&name));
        }
        return Err(e);
    }
    let cell_num = if schema.sparse { n as u64 } else { last_cells * ntiles as u64 };
    Ok(WrittenFragment { name, timestamp: t, dense: !schema.sparse, cell_num, nonempty })
}

/// Delete the cells of the sparse array at `uri` matching the lancelet SQL
/// `filter` (as of `timestamp`, default now): writes the `.del` commit
/// holding the negated condition; returns its file name.
pub fn delete(uri: &str, options: &StorageOptions, filter: &str, timestamp: Option<u64>) -> Result<String> {
    let root = crate::tiledb::open_array_root(uri, options)?;
    let schema = latest_schema(&root)?;
    if !schema.sparse {
        return Err(Error::invalid_input("deletes apply to sparse arrays only (as in TileDB)"));
    }
    let cond = condition::delete_condition(&schema, filter)?;
    let t = timestamp.unwrap_or_else(now_ms);
    let name = format!("__{t}_{t}_{}_{WRITE_VERSION}.del", random_uuid());
    root.child(&format!("__commits/{name}"))?.write_new(Bytes::from(generic_tile(&cond)))?;
    Ok(name)
}

/// Move a slot's encoded files to storage (`<stem>.tdb`, `_var`,
/// `_validity`), keeping only their sizes for the metadata.
fn put_files(dir: &Storage, stem: &str, slot: &mut SlotOut, var: bool, nullable: bool) -> Result<()> {
    slot.sizes = Some([slot.file.len() as u64, slot.var_file.len() as u64, slot.validity_file.len() as u64]);
    dir.child(&format!("{stem}.tdb"))?.write_all(Bytes::from(std::mem::take(&mut slot.file)))?;
    if var {
        dir.child(&format!("{stem}_var.tdb"))?.write_all(Bytes::from(std::mem::take(&mut slot.var_file)))?;
    }
    if nullable {
        dir.child(&format!("{stem}_validity.tdb"))?.write_all(Bytes::from(std::mem::take(&mut slot.validity_file)))?;
    }
    Ok(())
}

/// One column's cell bytes over every batch, converted batch by batch
/// (errors name the row across batches).
fn batches_cells(batches: &[RecordBatch], name: &str, t: super::datatype::Datatype, cell_val_num: u32, nullable: bool) -> Result<Cells> {
    let mut out: Option<Cells> = None;
    let mut start = 0usize;
    for b in batches {
        let cells = column_cells(column(b, name)?, t, cell_val_num, nullable, name).map_err(|e| {
            if start > 0 {
                e.context(format!("rows from {start}"))
            } else {
                e
            }
        })?;
        start += b.num_rows();
        match &mut out {
            None => out = Some(cells),
            Some(o) => o.append(cells),
        }
    }
    match out {
        Some(c) => Ok(c),
        None => {
            let empty = arrow_array::new_empty_array(&super::cells::arrow_type(t, cell_val_num)?);
            column_cells(&empty, t, cell_val_num, nullable, name)
        }
    }
}

/// [`write_fragment`] over a stream's batches, in order (not concatenated).
pub fn write_batches(
    uri: &str,
    options: &StorageOptions,
    schema: &arrow_schema::SchemaRef,
    batches: &[RecordBatch],
    subarray: Option<Vec<(i128, i128)>>,
    timestamp: Option<u64>,
) -> Result<WrittenFragment> {
    for b in batches {
        if b.schema().fields() != schema.fields() {
            return Err(Error::invalid_input("write data: the stream's batches do not all have its schema"));
        }
    }
    if batches.is_empty() {
        let empty = RecordBatch::new_empty(schema.clone());
        return write_fragment(uri, options, &empty, subarray, timestamp);
    }
    let t = timestamp.unwrap_or_else(now_ms);
    write_fragment_over(uri, options, batches, subarray, (t, t), None, None)
}

thread_local! {
    static FAIL_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Make the next write on this thread fail at `point` (tests of the
/// failure path: "before_commit" fails after every data and metadata
/// file is written, before the commit marker).
pub fn set_fail_point(point: Option<&str>) {
    FAIL_AT.with(|f| *f.borrow_mut() = point.map(str::to_string));
}

fn fail_point(point: &str) -> Result<()> {
    FAIL_AT.with(|f| {
        if f.borrow().as_deref() == Some(point) {
            *f.borrow_mut() = None;
            return Err(Error::io(point.to_string(), "injected failure"));
        }
        Ok(())
    })
}
