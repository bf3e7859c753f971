//! `drop_columns` and `alter_columns`: renames, nullability and drops are a
//! `Project` (the schema only); casts are a `Merge` whose new files hold
//! the cast columns under new field ids (see the module docs of
//! [`super`]).
//!
//! Casts follow pylance 14's rule: within a kind only (integers ↔
//! integers, floats ↔ floats, temporal ↔ temporal, string ↔ large string,
//! binary ↔ large binary, decimal ↔ decimal, boolean, lists/large
//! lists/fixed-size lists by their items, dictionaries by their values),
//! and only when Arrow can cast the types. Values that do not fit the new
//! type (an overflowing downcast) fail the whole call.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_cast::{can_cast_types, cast_with_options, CastOptions};
use arrow_schema::{DataType, Field, Fields};

use super::columns::{commit_merge, write_columns, ColumnsPlan, Transform, WriteOptions, DEFAULT_BATCH_SIZE};
use super::{field_at, field_at_mut, find_path, max_field_id, preserves_nullability, sync_arrow, NewFields};
use crate::error::{Error, Result};
use crate::file::schema::{LanceField, LanceSchema};
use crate::proto::table as pb;
use crate::table::dataset::Dataset;
use crate::table::properties::{CommitProperties, Committed};
use crate::table::scan::{ScanOptions, Scanner};

use pb::transaction::Operation;

/// One change of `alter_columns`.
#[derive(Debug, Clone, Default)]
pub struct Alteration {
    /// The column: a top-level name or a dotted path ("a.b.c").
    pub path: String,
    /// Its new name (the last path component changes).
    pub name: Option<String>,
    /// Its new nullability.
    pub nullable: Option<bool>,
    /// The type to cast it to.
    pub data_type: Option<DataType>,
}

fn no_column(path: &str, ds: &Dataset) -> Error {
    Error::invalid_input(format!(
        "column {path:?} does not exist in the dataset (columns: {})",
        ds.lance_schema().fields.iter().map(|f| f.arrow.name().as_str()).collect::<Vec<_>>().join(", ")
    ))
}

/// Names used twice among siblings, as a dotted path.
fn duplicate_name(fields: &[LanceField], prefix: &str) -> Option<String> {
    let mut seen = HashSet::new();
    for f in fields {
        let path = if prefix.is_empty() { f.arrow.name().clone() } else { format!("{prefix}.{}", f.arrow.name()) };
        if !seen.insert(f.arrow.name().as_str()) {
            return Some(path);
        }
        if let Some(d) = duplicate_name(&f.children, &path) {
            return Some(d);
        }
    }
    None
}

/// Commit a `Project` of `ds` to `schema`.
fn commit_project(ds: &Dataset, schema: &LanceSchema, props: &CommitProperties) -> Result<Committed<()>> {
    let op = pb::transaction::Project { schema: schema.to_pb()?, preserves_nullability: preserves_nullability(ds.lance_schema(), schema) };
    Ok(Committed::new(super::columns::commit_or_clean(ds, Operation::Project(op), &[], props)?, ()))
}

/// Drop columns (top-level names or dotted paths to struct fields). A
/// struct left without fields goes too; dropping every column is refused.
pub fn drop_columns(ds: &Dataset, columns: &[String], props: &CommitProperties) -> Result<Committed<()>> {
    let mut doomed: HashSet<i32> = HashSet::new();
    for c in columns {
        let at = find_path(ds.lance_schema(), c).ok_or_else(|| no_column(c, ds))?;
        doomed.insert(field_at(ds.lance_schema(), &at).id);
    }
    fn keep(f: &LanceField, doomed: &HashSet<i32>) -> Option<LanceField> {
        if doomed.contains(&f.id) {
            return None;
        }
        if f.children.is_empty() || !matches!(f.arrow.data_type(), DataType::Struct(_)) {
            return Some(f.clone());
        }
        let kids: Vec<LanceField> = f.children.iter().filter_map(|c| keep(c, doomed)).collect();
        if kids.is_empty() {
            return None;
        }
        let mut out = LanceField { id: f.id, arrow: f.arrow.clone(), children: kids };
        sync_arrow(&mut out);
        Some(out)
    }
    let old = ds.lance_schema();
    let schema = LanceSchema { fields: old.fields.iter().filter_map(|f| keep(f, &doomed)).collect(), metadata: old.metadata.clone() };
    if schema.fields.is_empty() {
        return Err(Error::invalid_input("cannot drop every column of a dataset"));
    }
    commit_project(ds, &schema, props)
}

/// Whether pylance 14 allows casting a column of type `from` to `to`.
pub fn cast_allowed(from: &DataType, to: &DataType) -> bool {
    fn same_kind(from: &DataType, to: &DataType) -> bool {
        use DataType as D;
        match (from, to) {
            (D::Dictionary(_, v), _) => same_kind(v, to),
            (_, D::Dictionary(_, v)) => same_kind(from, v),
            (f, t) if f.is_integer() => t.is_integer(),
            (f, t) if f.is_floating() => t.is_floating(),
            (f, t) if f.is_temporal() => t.is_temporal(),
            (D::Boolean, t) => matches!(t, D::Boolean),
            (D::Utf8 | D::LargeUtf8, t) => matches!(t, D::Utf8 | D::LargeUtf8),
            (D::Binary | D::LargeBinary, t) => matches!(t, D::Binary | D::LargeBinary),
            (D::Decimal128(..) | D::Decimal256(..), t) => matches!(t, D::Decimal128(..) | D::Decimal256(..)),
            (D::List(f) | D::LargeList(f) | D::FixedSizeList(f, _), D::List(t) | D::LargeList(t) | D::FixedSizeList(t, _)) => {
                same_kind(f.data_type(), t.data_type())
            }
            _ => false,
        }
    }
    same_kind(from, to) && can_cast_types(from, to)
}

/// Whether the column at `path` holds a null where all its ancestors are
/// valid (the rows that would break a NOT NULL).
fn has_nulls(ds: &Arc<Dataset>, at: &[usize]) -> Result<bool> {
    let top = ds.lance_schema().fields[at[0]].arrow.name().clone();
    let scan = Scanner::new(ds.clone(), ScanOptions { columns: Some(vec![top]), ..Default::default() })?;
    for b in scan.stream()? {
        let b = b?;
        let mut arr: ArrayRef = b.column(0).clone();
        let mut field = &ds.lance_schema().fields[at[0]];
        let mut parent_valid: Option<arrow_buffer::NullBuffer> = None;
        for &i in &at[1..] {
            let s = arr.as_any().downcast_ref::<StructArray>().ok_or_else(|| Error::Internal { what: "path through a non-struct".into() })?;
            parent_valid = arrow_buffer::NullBuffer::union(parent_valid.as_ref(), s.nulls());
            arr = s.column(i).clone();
            field = &field.children[i];
        }
        let _ = field;
        let Some(nulls) = arr.logical_nulls() else { continue };
        let bad = (0..arr.len()).any(|r| nulls.is_null(r) && parent_valid.as_ref().is_none_or(|p| p.is_valid(r)));
        if bad {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A cast field with fresh ids for it and its children, keeping the name
/// and nullability it has after the other changes.
fn cast_field(f: &LanceField, to: &DataType, next: &mut i32) -> LanceField {
    let arrow = Field::new(f.arrow.name(), to.clone(), f.arrow.is_nullable()).with_metadata(f.arrow.metadata().clone());
    let mut out = super::unassigned_field(&arrow);
    let mut ids = Vec::new();
    super::assign_ids(&mut out, next, &mut ids);
    out
}

/// Change names, nullability and types of columns (see [`Alteration`]).
/// Without a cast this is a `Project`; with casts, a `Merge` writing the
/// cast columns (no cast may be combined with making a column
/// non-nullable, as in pylance).
pub fn alter_columns(ds: &Arc<Dataset>, alterations: &[Alteration], props: &CommitProperties) -> Result<Committed<()>> {
    let old = ds.lance_schema();
    let mut schema = old.clone();
    let mut next = max_field_id(ds.manifest()) + 1;
    // (old field, position chain) of each cast, and the new field's id.
    let mut casts: Vec<(LanceField, Vec<usize>, i32)> = Vec::new();
    let mut tightened = Vec::new();
    for a in alterations {
        if a.name.is_none() && a.nullable.is_none() && a.data_type.is_none() {
            return Err(Error::invalid_input(format!("alteration of {:?} changes nothing: give a name, nullable or data_type", a.path)));
        }
        let at = find_path(old, &a.path).ok_or_else(|| no_column(&a.path, ds))?;
        let src = field_at(old, &at).clone();
        if let Some(n) = &a.name {
            if n.is_empty() {
                return Err(Error::invalid_input(format!("cannot rename column {:?} to an empty name", a.path)));
            }
            if at.len() == 1 && n.contains('.') {
                return Err(Error::invalid_input(format!("cannot rename column {:?} to {n:?}: top-level names may not contain '.'", a.path)));
            }
        }
        if a.nullable == Some(false) && src.arrow.is_nullable() {
            if has_nulls(ds, &at)? {
                return Err(Error::invalid_input(format!("column {:?} contains nulls and cannot be made non-nullable", a.path)));
            }
            tightened.push(a.path.clone());
        }
        let dest = field_at_mut(&mut schema, &at);
        if let Some(n) = &a.name {
            dest.arrow = dest.arrow.clone().with_name(n);
        }
        if let Some(nullable) = a.nullable {
            dest.arrow = dest.arrow.clone().with_nullable(nullable);
        }
        if let Some(to) = &a.data_type {
            if !cast_allowed(src.arrow.data_type(), to) {
                return Err(Error::invalid_input(format!(
                    "cannot cast column {:?} from {} to {to} (casts stay within a kind: integers, floats, temporal types, strings, binaries, decimals, lists of castable items)",
                    a.path,
                    src.arrow.data_type()
                )));
            }
            *dest = cast_field(dest, to, &mut next);
            casts.push((src, at.clone(), dest.id));
        }
    }
    for f in &mut schema.fields {
        sync_arrow(f);
    }
    if let Some(d) = duplicate_name(&schema.fields, "") {
        return Err(Error::invalid_input(format!("the alterations would give two columns the name {d:?}")));
    }
    if casts.is_empty() {
        return commit_project(ds, &schema, props);
    }
    if !tightened.is_empty() {
        return Err(Error::invalid_input(format!(
            "cannot make {} non-nullable and cast columns in the same call: cast first, then change the nullability",
            tightened.join(", ")
        )));
    }
    cast_columns(ds, schema, casts, props)
}

/// Write the cast columns as new files and commit the `Merge`.
fn cast_columns(
    ds: &Arc<Dataset>,
    merged: LanceSchema,
    casts: Vec<(LanceField, Vec<usize>, i32)>,
    props: &CommitProperties,
) -> Result<Committed<()>> {
    let new_ids: Vec<i32> =
        casts.iter().flat_map(|(_, at, _)| field_at(&merged, at).preorder().into_iter().map(|f| f.id).collect::<Vec<_>>()).collect();
    let keep: HashSet<i32> = casts.iter().map(|(_, _, id)| *id).collect();
    let written = LanceSchema { fields: merged.fields.iter().filter_map(|f| super::restrict(f, &keep)).collect(), metadata: Default::default() };
    // The transform reads the top-level columns holding the cast fields.
    let old = ds.lance_schema();
    let mut tops: Vec<usize> = casts.iter().map(|(_, at, _)| at[0]).collect();
    tops.sort_unstable();
    tops.dedup();
    let read_fields: Vec<LanceField> = tops.iter().map(|&i| old.fields[i].clone()).collect();
    // new id -> old field (the source of the cast values)
    let sources: HashMap<i32, LanceField> = casts.iter().map(|(src, _, id)| (*id, src.clone())).collect();
    let output = Arc::new(written.to_arrow());
    let plan = ColumnsPlan {
        new: NewFields { merged, written: written.clone(), new_ids },
        output: output.clone(),
        read_fields: read_fields.clone(),
        with_row_id: false,
        with_row_address: false,
        batch_size: DEFAULT_BATCH_SIZE,
    };
    let f = |input: RecordBatch| -> Result<RecordBatch> {
        let mut cols = Vec::with_capacity(written.fields.len());
        for w in &written.fields {
            // A written top-level field is a cast column or an ancestor of
            // cast columns; its source is the read column of the same id.
            let (pos, src_top) = read_fields
                .iter()
                .enumerate()
                .find(|(_, r)| r.id == w.id || sources.get(&w.id).is_some_and(|s| s.id == r.id))
                .ok_or_else(|| Error::Internal { what: format!("no source column for cast field {:?}", w.arrow.name()) })?;
            cols.push(build_cast(input.column(pos).clone(), src_top, w, &sources)?);
        }
        RecordBatch::try_new(output.clone(), cols).map_err(Error::internal_arrow)
    };
    let files = write_columns(ds, &plan, Transform::Parallel(&f), &WriteOptions::default(), &props.progress)?;
    Ok(Committed::new(commit_merge(ds, &plan.new, files, props)?, ()))
}

/// The values of written field `w` from the old column `arr` (of dataset
/// field `src`): a cast field is cast; an ancestor struct is rebuilt with
/// only its written children.
fn build_cast(arr: ArrayRef, src: &LanceField, w: &LanceField, sources: &HashMap<i32, LanceField>) -> Result<ArrayRef> {
    if let Some(s) = sources.get(&w.id) {
        debug_assert_eq!(s.id, src.id);
        const STRICT: CastOptions<'static> = CastOptions { safe: false, format_options: arrow_cast::display::FormatOptions::new() };
        return cast_with_options(&arr, w.arrow.data_type(), &STRICT)
            .map_err(|e| Error::invalid_input(format!("cannot cast column {:?} to {}: {e}", src.arrow.name(), w.arrow.data_type())).with_source(e));
    }
    let s = arr.as_any().downcast_ref::<StructArray>().ok_or_else(|| Error::Internal { what: "cast ancestor is not a struct".into() })?;
    let mut kids = Vec::with_capacity(w.children.len());
    for wc in &w.children {
        let target = sources.get(&wc.id).map(|x| x.id).unwrap_or(wc.id);
        let i = src
            .children
            .iter()
            .position(|c| c.id == target)
            .ok_or_else(|| Error::Internal { what: format!("no source for struct field {:?}", wc.arrow.name()) })?;
        kids.push(build_cast(s.column(i).clone(), &src.children[i], wc, sources)?);
    }
    let fields: Fields = w.children.iter().map(|c| c.arrow.clone()).collect::<Vec<_>>().into();
    Ok(Arc::new(StructArray::try_new(fields, kids, s.nulls().cloned()).map_err(Error::internal_arrow)?))
}
