//! `merge`: new columns from a table joined on a key (a left join: every
//! row of the dataset keeps its place; rows without a match get nulls).
//!
//! As pylance 14: the right side is held in memory as a hash table from
//! key to row; when a key repeats, its last row wins; a null key matches a
//! null key; the key columns must have the same type; every right column
//! but the key becomes a new column (its name must be new). A non-nullable
//! right column is refused when some dataset row has no match. The result
//! is one `Merge` like any `add_columns`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Schema, SchemaRef};

use super::columns::{commit_merge, write_columns, ColumnsPlan, Transform, WriteOptions, DEFAULT_BATCH_SIZE};
use super::{max_field_id, merge_new_fields};
use crate::error::{Error, Result};
use crate::table::dataset::Dataset;
use crate::table::properties::{CommitProperties, Committed};
use crate::table::write::dataset_file_version;

/// Left-join `right` (all its batches, schema `schema`) into `ds` on
/// `ds.left_on == right.right_on`, adding every other right column.
pub fn merge(
    ds: &Arc<Dataset>,
    schema: SchemaRef,
    right: Vec<RecordBatch>,
    left_on: &str,
    right_on: &str,
    props: &CommitProperties,
) -> Result<Committed<()>> {
    let lance = ds.lance_schema();
    let left = lance
        .fields
        .iter()
        .find(|f| f.arrow.name() == left_on)
        .ok_or_else(|| Error::invalid_input(format!("join column {left_on:?} does not exist in the dataset")))?
        .clone();
    let Ok(key_index) = schema.index_of(right_on) else {
        return Err(Error::invalid_input(format!("join column {right_on:?} does not exist in the data to merge")));
    };
    let right_key_type = schema.field(key_index).data_type();
    if !right_key_type.equals_datatype(left.arrow.data_type()) {
        return Err(Error::invalid_input(format!(
            "join columns differ in type: {left_on:?} is {} in the dataset, {right_on:?} is {right_key_type} in the data to merge",
            left.arrow.data_type()
        )));
    }
    let value_fields: Vec<_> = schema.fields().iter().enumerate().filter(|(i, _)| *i != key_index).map(|(_, f)| f.clone()).collect();
    if value_fields.is_empty() {
        return Err(Error::invalid_input(format!("the data to merge has no column besides the join column {right_on:?}")));
    }
    for f in &value_fields {
        if lance.fields.iter().any(|x| x.arrow.name() == f.name()) {
            return Err(Error::invalid_input(format!("column {:?} exists both in the dataset and in the data to merge", f.name())));
        }
    }
    let output: SchemaRef = Arc::new(Schema::new(value_fields.clone()).with_metadata(schema.metadata().clone()));
    let version = dataset_file_version(ds.manifest())?;
    let new = merge_new_fields(lance, &output, max_field_id(ds.manifest()), version)?;

    // The right side, as one batch, and its keys as byte strings.
    let right = arrow_select::concat::concat_batches(&schema, &right).map_err(Error::internal_arrow)?;
    let mut table: HashMap<Option<Box<[u8]>>, u32> = HashMap::with_capacity(right.num_rows());
    for (i, key) in key_bytes(right.column(key_index), right_on)?.into_iter().enumerate() {
        let i = u32::try_from(i).map_err(|_| Error::invalid_input("the data to merge has more than 4 billion rows"))?;
        table.insert(key, i);
    }
    let values: Vec<_> = (0..right.num_columns()).filter(|i| *i != key_index).map(|i| right.column(i).clone()).collect();

    let plan = ColumnsPlan {
        new,
        output: output.clone(),
        read_fields: vec![left],
        with_row_id: false,
        with_row_address: false,
        batch_size: DEFAULT_BATCH_SIZE,
    };
    let lookup = |input: RecordBatch| -> Result<RecordBatch> {
        let idx: UInt32Array = key_bytes(input.column(0), left_on)?.into_iter().map(|k| table.get(&k).copied()).collect();
        let cols = values
            .iter()
            .map(|v| arrow_select::take::take(v.as_ref(), &idx, None))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(Error::internal_arrow)?;
        RecordBatch::try_new_with_options(
            Arc::new(Schema::new(output.fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>())),
            cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(input.num_rows())),
        )
        .map_err(Error::internal_arrow)
    };
    let files = write_columns(ds, &plan, Transform::Parallel(&lookup), &WriteOptions::default(), &props.progress)?;
    Ok(Committed::new(commit_merge(ds, &plan.new, files, props)?, ()))
}

/// Each row's key as bytes (`None` for null): the value bytes of
/// fixed-width, boolean, string and binary columns.
fn key_bytes(a: &ArrayRef, name: &str) -> Result<Vec<Option<Box<[u8]>>>> {
    let n = a.len();
    let valid = |i: usize| a.is_valid(i);
    macro_rules! var {
        ($arr:expr) => {{
            let v = $arr;
            (0..n).map(|i| valid(i).then(|| Box::<[u8]>::from(AsRef::<[u8]>::as_ref(v.value(i))))).collect()
        }};
    }
    Ok(match a.data_type() {
        DataType::Utf8 => var!(a.as_string::<i32>()),
        DataType::LargeUtf8 => var!(a.as_string::<i64>()),
        DataType::Utf8View => var!(a.as_string_view()),
        DataType::Binary => var!(a.as_binary::<i32>()),
        DataType::LargeBinary => var!(a.as_binary::<i64>()),
        DataType::BinaryView => var!(a.as_binary_view()),
        DataType::FixedSizeBinary(_) => var!(a.as_fixed_size_binary()),
        DataType::Boolean => {
            let b = a.as_boolean();
            (0..n).map(|i| valid(i).then(|| Box::<[u8]>::from([b.value(i) as u8]))).collect()
        }
        dt if dt.is_primitive() => {
            let width = dt.primitive_width().expect("primitive");
            let data = a.to_data();
            let bytes = &data.buffers()[0].as_slice()[data.offset() * width..];
            (0..n).map(|i| valid(i).then(|| Box::<[u8]>::from(&bytes[i * width..(i + 1) * width]))).collect()
        }
        dt => {
            return Err(Error::invalid_input(format!(
                "cannot join on column {name:?} of type {dt} (keys must be numbers, strings, binaries, booleans or dates/times)"
            )))
        }
    })
}
