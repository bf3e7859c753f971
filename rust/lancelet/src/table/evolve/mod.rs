//! Schema evolution: adding, dropping, renaming and casting columns, and
//! joining new columns in (`merge`), as pylance 14 writes them.
//!
//! Two transaction kinds carry all of it:
//!
//! * **`Merge` (105)**: the complete new fragment list and schema. Columns
//!   computed from the data (SQL expressions, UDFs, a reader of values, a
//!   join, a cast) give *every* fragment one more data file holding only
//!   the new fields: `fields` = their ids (2.1/2.2: the leaves; 2.0: every
//!   field in pre-order, struct parents included), `column_indices` 0..n-1,
//!   `physical_rows` rows — deleted positions included, filled with a copy
//!   of a neighbouring live value so non-nullable columns stay valid. An id
//!   the new file holds is replaced by the tombstone `-2` in the fragment's
//!   older files (2.0 lists struct parents, so a nested cast moves the
//!   parent). All-null columns (`pa.Field`s, `CAST(NULL AS t)`) are a
//!   `Merge` without new files: readers give fields no file holds as nulls.
//!   New field ids continue from the largest id the manifest uses (schema
//!   *and* data files, so dropped fields' ids are never reused), assigned in
//!   pre-order of the merged schema; a cast column gets a new id in place
//!   and its old id stays in the old files. Field 4 (`preserves_nullability`)
//!   is true unless a non-nullable field of the new schema was not
//!   non-nullable (by id) before.
//! * **`Project` (109)**: the new schema only (drop, rename, nullability);
//!   data files are untouched, so a dropped field's column stays in its
//!   files until compaction rewrites them. Field 2 as for `Merge`.
//!
//! Concurrency (as pylance): a `Project` rebases over Append, Delete,
//! Update, Rewrite, CreateIndex, ReserveFragments, UpdateConfig and
//! DataReplacement (they leave the schema alone) and conflicts with
//! Merge/Project (the schema changed) and Overwrite/Restore. A `Merge`
//! rebases only over CreateIndex, ReserveFragments and UpdateConfig: it
//! names every fragment, so any change to the fragment list conflicts.
//!
//! Modules: [`columns`] (the per-fragment writer and the driver every
//! form uses), [`add`] (`add_columns`: SQL, functions, streams, nulls), [`alter`] (drop / rename / nullability / cast), [`join`]
//! (`merge`), [`staged`] (distributed `add_columns`).

pub mod add;
pub mod alter;
pub mod columns;
pub mod join;
pub mod staged;

use std::collections::HashSet;

use arrow_schema::{DataType, Field, Fields, Schema};

use crate::error::{Error, Result};
use crate::file::schema::{LanceField, LanceSchema};
use crate::file::FileVersion;
use crate::proto::table as pb;

/// The largest field id a manifest uses, in its schema or in any data
/// file's field list (`-1` when none).
pub fn max_field_id(m: &pb::Manifest) -> i32 {
    let schema = m.fields.iter().map(|f| f.id).max().unwrap_or(-1);
    let files = m.fragments.iter().flat_map(|f| &f.files).flat_map(|d| d.fields.iter().copied()).max().unwrap_or(-1);
    schema.max(files)
}

/// Whether `new` keeps every non-nullable field non-nullable only where
/// the same field id already was (field 4 of Merge, 2 of Project).
pub fn preserves_nullability(old: &LanceSchema, new: &LanceSchema) -> bool {
    let was_required: HashSet<i32> = old.fields.iter().flat_map(|f| f.preorder()).filter(|f| !f.arrow.is_nullable()).map(|f| f.id).collect();
    new.fields.iter().flat_map(|f| f.preorder()).all(|f| f.arrow.is_nullable() || was_required.contains(&f.id))
}

/// Whether fields may be added to an existing struct (pylance: 2.2 on).
pub fn supports_sub_columns(version: FileVersion) -> bool {
    version.traits().is_some_and(|t| t.struct_fields_added)
}

/// The field at a dotted `path` ("a" or "a.b.c") as the chain of child
/// positions from the top level; `None` when there is no such field.
pub fn find_path(schema: &LanceSchema, path: &str) -> Option<Vec<usize>> {
    // A top-level name may itself contain dots: an exact match wins.
    if let Some(i) = schema.fields.iter().position(|f| f.arrow.name() == path) {
        return Some(vec![i]);
    }
    let mut out = Vec::new();
    let mut level: &[LanceField] = &schema.fields;
    for part in path.split('.') {
        let i = level.iter().position(|f| f.arrow.name() == part)?;
        out.push(i);
        level = &level[i].children;
    }
    Some(out)
}

/// The field at a position chain from [`find_path`].
pub fn field_at<'a>(schema: &'a LanceSchema, at: &[usize]) -> &'a LanceField {
    let mut f = &schema.fields[at[0]];
    for &i in &at[1..] {
        f = &f.children[i];
    }
    f
}

/// Mutable access to the field at a position chain.
pub(crate) fn field_at_mut<'a>(schema: &'a mut LanceSchema, at: &[usize]) -> &'a mut LanceField {
    let mut f = &mut schema.fields[at[0]];
    for &i in &at[1..] {
        f = &mut f.children[i];
    }
    f
}

/// Rebuild every field's Arrow form from its (possibly edited) children,
/// so `arrow` and `children` agree again after an edit.
pub(crate) fn sync_arrow(f: &mut LanceField) {
    f.children.iter_mut().for_each(sync_arrow);
    let kids: Vec<Field> = f.children.iter().map(|c| c.arrow.clone()).collect();
    let dt = match f.arrow.data_type() {
        DataType::Struct(_) => DataType::Struct(Fields::from(kids)),
        DataType::List(_) if kids.len() == 1 => DataType::List(kids[0].clone().into()),
        DataType::LargeList(_) if kids.len() == 1 => DataType::LargeList(kids[0].clone().into()),
        DataType::FixedSizeList(_, n) if kids.len() == 1 => DataType::FixedSizeList(kids[0].clone().into(), *n),
        DataType::Map(_, sorted) if kids.len() == 1 => DataType::Map(kids[0].clone().into(), *sorted),
        other => other.clone(),
    };
    let md = f.arrow.metadata().clone();
    f.arrow = Field::new(f.arrow.name(), dt, f.arrow.is_nullable()).with_metadata(md);
}

/// A schema gaining new fields: the dataset's schema with the new ones
/// merged in (ids assigned), and the schema of the data files that hold
/// them (new fields only, under their existing struct parents).
#[derive(Debug, Clone)]
pub struct NewFields {
    /// The dataset schema after the change.
    pub merged: LanceSchema,
    /// The schema of the new data files: each added top-level field, or an
    /// existing struct (its id kept) holding only its added children.
    pub written: LanceSchema,
    /// Ids of the added fields (every level).
    pub new_ids: Vec<i32>,
}

/// Structural (sub-tree) comparison for "already exists" checks.
fn same_type(a: &DataType, b: &DataType) -> bool {
    a.equals_datatype(b)
}

/// Merge `incoming` into `existing` (a struct): new children are appended
/// with id -1; existing struct children are merged recursively; anything
/// else with a taken name is refused.
fn merge_into(existing: &mut LanceField, incoming: &Field, path: &str, version: FileVersion) -> Result<()> {
    match (existing.arrow.data_type().clone(), incoming.data_type()) {
        (DataType::Struct(_), DataType::Struct(kids)) => {
            if !supports_sub_columns(version) {
                return Err(Error::invalid_input(format!(
                    "column {path:?} is a struct: adding fields to it needs file version 2.2 or later (this dataset uses {version})"
                )));
            }
            if crate::file::structural::to_arrow::is_packed_struct(&existing.arrow) {
                return Err(Error::invalid_input(format!("column {path:?} is a packed struct: fields cannot be added to it")));
            }
            for k in kids.iter() {
                let child_path = format!("{path}.{}", k.name());
                match existing.children.iter_mut().find(|c| c.arrow.name() == k.name()) {
                    Some(c) => merge_into(c, k, &child_path, version)?,
                    None => existing.children.push(unassigned_field(k)),
                }
            }
            Ok(())
        }
        (have, want) if same_type(&have, want) => Err(Error::invalid_input(format!("column {path:?} already exists in the dataset"))),
        (have, want) => {
            Err(Error::invalid_input(format!("column {path:?} already exists in the dataset with type {have} (the new column has type {want})")))
        }
    }
}

/// A Lance field tree with every id -1 (to be assigned by [`assign_ids`]).
pub(crate) fn unassigned_field(f: &Field) -> LanceField {
    let kids: Vec<&Field> = match f.data_type() {
        DataType::Struct(fs) => fs.iter().map(|x| x.as_ref()).collect(),
        DataType::List(x) | DataType::LargeList(x) | DataType::Map(x, _) => vec![x.as_ref()],
        DataType::FixedSizeList(x, _) if !crate::file::schema::fsl_is_leaf(x.data_type()) => vec![x.as_ref()],
        _ => vec![],
    };
    LanceField { id: -1, arrow: f.clone(), children: kids.into_iter().map(unassigned_field).collect() }
}

/// Give fields with id -1 (in pre-order) ids from `next` on.
pub(crate) fn assign_ids(f: &mut LanceField, next: &mut i32, new_ids: &mut Vec<i32>) {
    if f.id < 0 {
        f.id = *next;
        *next += 1;
        new_ids.push(f.id);
    }
    for c in &mut f.children {
        assign_ids(c, next, new_ids);
    }
}

/// The part of `f` made of the fields in `keep` and their ancestors.
pub(crate) fn restrict(f: &LanceField, keep: &HashSet<i32>) -> Option<LanceField> {
    if keep.contains(&f.id) {
        return Some(f.clone());
    }
    let kids: Vec<LanceField> = f.children.iter().filter_map(|c| restrict(c, keep)).collect();
    if kids.is_empty() {
        return None;
    }
    let mut out = LanceField { id: f.id, arrow: f.arrow.clone(), children: kids };
    sync_arrow(&mut out);
    Some(out)
}

/// Merge the Arrow fields of `new` into the dataset schema (`max_id`: the
/// manifest's largest used id). Names must be new; a struct of an existing
/// name adds its children to that struct (2.2). Top-level names may not
/// contain dots (a dotted name reads as a nested path).
pub fn merge_new_fields(schema: &LanceSchema, new: &Schema, max_id: i32, version: FileVersion) -> Result<NewFields> {
    let mut seen = HashSet::new();
    for f in new.fields() {
        if !seen.insert(f.name().as_str()) {
            return Err(Error::invalid_input(format!("the new columns name {:?} twice", f.name())));
        }
        if f.name().contains('.') {
            return Err(Error::invalid_input(format!(
                "new column name {:?} contains '.' (a struct field is added by giving the struct with its new fields)",
                f.name()
            )));
        }
        if f.name().is_empty() {
            return Err(Error::invalid_input("a new column has an empty name"));
        }
        crate::file::schema::logical_type(f.data_type())
            .map_err(|e| Error::invalid_input(format!("new column {:?}: {e}", f.name())).with_source(e))?;
    }
    let mut merged = schema.clone();
    for f in new.fields() {
        match merged.fields.iter_mut().find(|x| x.arrow.name() == f.name()) {
            Some(existing) => merge_into(existing, f, f.name(), version)?,
            None => merged.fields.push(unassigned_field(f)),
        }
    }
    let mut next = max_id + 1;
    let mut new_ids = Vec::new();
    for f in &mut merged.fields {
        assign_ids(f, &mut next, &mut new_ids);
        sync_arrow(f);
    }
    for (k, v) in new.metadata() {
        merged.metadata.insert(k.clone(), v.clone());
    }
    let keep: HashSet<i32> = new_ids.iter().copied().collect();
    // The files hold the new fields in the order the caller gave them.
    let written_fields =
        new.fields().iter().filter_map(|nf| merged.fields.iter().find(|m| m.arrow.name() == nf.name())).filter_map(|m| restrict(m, &keep)).collect();
    Ok(NewFields { merged, written: LanceSchema { fields: written_fields, metadata: Default::default() }, new_ids })
}

#[cfg(test)]
mod tests;
